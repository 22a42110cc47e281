/* Output blocks: every column of a call's result in one allocation, which the caller's arrays share and
 * give back with tp_block_free when the last of them goes.
 *
 * A given-back block is kept for a later call's block instead of going back to the C library, which returns
 * a block of more than its mmap threshold (a few MB) to the kernel: a caller that drops each result, or
 * keeps a pass's results and then drops them, would otherwise take a page fault for every 4 KiB of the next
 * blocks (about a microsecond each here, a third of a warm pass on a tokenizer that makes many tokens).
 * Sizes are rounded up to eighths of their power of two, so a block kept from an earlier batch fits the
 * next batches of about its size.
 *
 * Thread-safe; fork-safe (the child keeps the kept blocks; a lock held at the fork is reset). */
#ifndef TP_BLOCK_H
#define TP_BLOCK_H

#include <stddef.h>

/* At least `bytes` (aligned as malloc aligns), or NULL. */
void *tp_block_alloc(size_t bytes);
/* A block from tp_block_alloc, or NULL. */
void tp_block_free(void *block);

/* `bytes` of zeros that nothing here writes: from 64 KiB on a mapping of its own, whose pages the
 * kernel provides when first read (no memset, no first touch by the call), else from calloc; or NULL. A
 * column that is all zero (type ids of single texts) costs the call nothing then. */
void *tp_zero_alloc(size_t bytes);
/* A block from tp_zero_alloc, or NULL. */
void tp_zero_free(void *block);

#endif
