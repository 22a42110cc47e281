/* Unigram model (SentencePiece's): the best segmentation of a word by the sum of its pieces' scores
 * (f64, Viterbi over char boundaries), as stock computes it: candidates are compared with a strict >,
 * so among equal scores the one found first wins (earlier start, then shorter piece, then unk); a char
 * with no one-char piece also gets the unk candidate at min score - 10. Consecutive unk pieces fuse
 * into one piece, which is then looked up as a whole: a vocabulary piece, else its <0xXX> byte tokens
 * (byte_fallback, all of them present, each over the whole piece), else unk.
 *
 * Thread-safety: immutable after tp_unigram_new; scratch per thread (it holds the word cache). */
#ifndef TP_UNIGRAM_H
#define TP_UNIGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "tp_words.h"

typedef struct tp_unigram tp_unigram;
typedef struct tp_unigram_scratch tp_unigram_scratch;
typedef struct tp_word_caches tp_word_caches;
typedef struct tp_word_cache tp_word_cache;

/* Piece i of the vocabulary is tokens[i] (lens[i] bytes, valid UTF-8) with score scores[i]; a piece
 * listed twice is found as its last id (with that id's score). unk_id <= n; unk_id == n: there is no
 * unk piece, and a word where stock's Viterbi would take the unk candidate (stock raises there) comes
 * out as the one token TP_UNIGRAM_RAISES. NULL on OOM or bad unk_id. */
#define TP_UNIGRAM_RAISES 0xFFFFFFFEu

tp_unigram *tp_unigram_new(const uint8_t *const *tokens, const uint32_t *lens, const double *scores, uint32_t n,
                           uint32_t unk_id, int byte_fallback);
void tp_unigram_free(tp_unigram *model);

tp_unigram_scratch *tp_unigram_scratch_new(void);
tp_word_caches *tp_unigram_scratch_caches(tp_unigram_scratch *s); /* as tp_bpe_scratch_caches */
tp_word_cache *tp_unigram_shared_cache(const tp_unigram *model);     /* as tp_bpe_shared_cache */
void tp_unigram_scratch_free(tp_unigram_scratch *s);

/* Encode n words (valid UTF-8) together, laid out as tp_bpe_encode_words lays them out. 0, or -1 on OOM. */
int tp_unigram_encode_words(const tp_unigram *model, tp_unigram_scratch *s, const uint8_t *const *words,
                            const size_t *lens, const uint64_t *hashes, size_t n, tp_words *out);

#endif
