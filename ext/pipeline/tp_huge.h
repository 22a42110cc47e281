/* Tables read at random over megabytes (the word cache's index and arena, a BPE model's vocab and merges):
 * huge pages where the kernel gives them to those who ask, so a lookup seldom misses the TLB as well. */
#ifndef TP_HUGE_H
#define TP_HUGE_H

#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>

#define TP_HUGE_MIN ((size_t)2 << 20) /* a smaller table takes no huge page */

/* Asks for huge pages over a mapping of `bytes` at `at` (its start, from mmap), before it is first written. */
static inline void tp_ask_huge(void *at, size_t bytes) {
#ifdef MADV_HUGEPAGE
    madvise(at, bytes, MADV_HUGEPAGE);
#else
    (void)at; (void)bytes;
#endif
}

/* A table of `bytes` on cache-line boundaries, or NULL: a mapping of its own with huge pages asked for from
 * TP_HUGE_MIN on, else from the heap; tp_huge_free takes the same count back. */
static inline void *tp_huge_alloc(size_t bytes) {
    if (bytes < TP_HUGE_MIN) return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    void *at = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) return NULL;
    tp_ask_huge(at, bytes);
    return at;
}

static inline void tp_huge_free(void *at, size_t bytes) {
    if (bytes < TP_HUGE_MIN) free(at);
    else if (at) munmap(at, bytes);
}

#endif
