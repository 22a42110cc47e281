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
#ifndef HF_TAGTOK_BPE_TRAIN_H
#define HF_TAGTOK_BPE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct bpe_trainer bpe_trainer;

/* Copies the words. word_offsets has n_words+1 entries into word_bytes. NULL on OOM. */
bpe_trainer *bpe_trainer_new(const uint8_t *word_bytes, const int64_t *word_offsets, const int64_t *word_counts,
                   size_t n_words, uint32_t byte_base);
void bpe_trainer_free(bpe_trainer *bpe);

/* Runs merges until the vocabulary (byte_base + 256 + new tokens) reaches vocab_size, the best pair
 * count drops below min_pair_freq, or max_steps merges were done in this call.
 * Returns merges done in this call (0 = finished), or -1 on OOM. */
int64_t bpe_trainer_run(bpe_trainer *bpe, uint32_t vocab_size, int64_t min_pair_freq, int64_t max_steps);

/* Merges recorded so far: merge i joined left[i], right[i] into result[i] (an existing id when the
 * concatenation already was a token). */
size_t bpe_trainer_n_merges(const bpe_trainer *bpe);
void bpe_trainer_merge(const bpe_trainer *bpe, size_t i, uint32_t *left, uint32_t *right, uint32_t *result);

/* Token count (byte_base + 256 + learned) and the bytes of token `id` (id >= byte_base). */
uint32_t bpe_trainer_vocab_size(const bpe_trainer *bpe);
const uint8_t *bpe_trainer_token(const bpe_trainer *bpe, uint32_t id, size_t *len);

#endif
