/* Deterministic byte-level BPE merge loop.
 *
 * Input: unique pre-tokens (byte strings) with their corpus frequencies. Symbols are token ids; the
 * 256 single bytes are ids byte_base .. byte_base+255. Each step merges the pair with the highest
 * frequency-weighted count (every adjacent occurrence counts), ties going to the smaller left token
 * bytes, then the smaller right token bytes (memcmp order, a prefix sorts first). Only words that
 * contain the merged pair are recounted (pair-to-word index); the heap is lazy (stale entries are
 * fixed when they surface). Nothing here depends on thread count or hash layout, so the merge
 * sequence is a pure function of the input multiset.
 */
#ifndef TT_BPE_TRAIN_H
#define TT_BPE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_bpe tt_bpe;

/* Copies the words. word_offsets has n_words+1 entries into word_bytes. NULL on OOM. */
tt_bpe *tt_bpe_new(const uint8_t *word_bytes, const int64_t *word_offsets, const int64_t *word_counts,
                   size_t n_words, uint32_t byte_base);
void tt_bpe_free(tt_bpe *bpe);

/* Runs merges until the vocabulary (byte_base + 256 + new tokens) reaches vocab_size, the best pair
 * count drops below min_pair_freq, or max_steps merges were done in this call.
 * Returns merges done in this call (0 = finished), or -1 on OOM. */
int64_t tt_bpe_run(tt_bpe *bpe, uint32_t vocab_size, int64_t min_pair_freq, int64_t max_steps);

/* Merges recorded so far: merge i joined left[i], right[i] into result[i] (an existing id when the
 * concatenation already was a token). */
size_t tt_bpe_n_merges(const tt_bpe *bpe);
void tt_bpe_merge(const tt_bpe *bpe, size_t i, uint32_t *left, uint32_t *right, uint32_t *result);

/* Token count (byte_base + 256 + learned) and the bytes of token `id` (id >= byte_base). */
uint32_t tt_bpe_vocab_size(const tt_bpe *bpe);
const uint8_t *tt_bpe_token(const tt_bpe *bpe, uint32_t id, size_t *len);

#endif
