/* Vocabulary-lookup models: WordPiece (greedy longest match, continuation prefix) and WordLevel
 * (whole word or unk), which is WordPiece that never splits a word. Bytes in, ids and byte
 * ranges of the word out, with stock's rules: a word longer than max_chars chars, or with a part
 * no vocabulary entry covers, becomes a single unk token over the whole word.
 *
 * Thread-safety: immutable after tp_wordpiece_new; scratch per thread. */
#ifndef TP_WORDPIECE_H
#define TP_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_words.h"

typedef struct tp_wordpiece tp_wordpiece;
typedef struct tp_wordpiece_scratch tp_wordpiece_scratch;
typedef struct tp_word_caches tp_word_caches;
typedef struct tp_word_cache tp_word_cache;

/* tokens[i] (lens[i] bytes) has id ids[i]. prefix: continuation prefix (WordPiece "##").
 * whole_words: WordLevel (max_chars unused). unk_id must be a vocabulary id.
 * NULL on OOM. */
tp_wordpiece *tp_wordpiece_new(const uint8_t *const *tokens, const uint32_t *lens, const uint32_t *ids, size_t n,
                               const uint8_t *prefix, size_t prefix_len, size_t max_chars, uint32_t unk_id,
                               int whole_words);
void tp_wordpiece_free(tp_wordpiece *wp);

tp_wordpiece_scratch *tp_wordpiece_scratch_new(void);
tp_word_caches *tp_wordpiece_scratch_caches(tp_wordpiece_scratch *s); /* as tp_bpe_scratch_caches */
tp_word_cache *tp_wordpiece_shared_cache(const tp_wordpiece *wp);     /* as tp_bpe_shared_cache; NULL: none */
void tp_wordpiece_scratch_free(tp_wordpiece_scratch *s);

/* Encode n words together (their word-cache probes overlap in memory), laid out as tp_bpe_encode_words
 * lays them out. Returns 0, or -1 on OOM. */
int tp_wordpiece_encode_words(const tp_wordpiece *wp, tp_wordpiece_scratch *s, const uint8_t *const *words,
                              const size_t *lens, const uint64_t *hashes, size_t n, tp_words *out);

#endif
