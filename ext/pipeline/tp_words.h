/* What a model call returns for a group of words (BPE and WordPiece alike). */
#ifndef TP_WORDS_H
#define TP_WORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"

/* Word j is ids[first[j] .. first[j] + count[j]), token k covering bytes [starts[k], ends[k]) of its word
 * (words with the same bytes may share one range). Valid until the next call on the same scratch. */
typedef struct {
    const uint32_t *ids, *starts, *ends;
    const uint32_t *first, *count;
} tp_words;

/* The arrays behind a tp_words, kept in a model's per-thread scratch and grown as calls need. */
typedef struct {
    uint32_t *ids, *starts, *ends; /* word j's tokens from first[j] */
    size_t cap;
    uint32_t *first, *count;
    uint64_t *hash; /* per word, for the word cache */
    size_t words_cap;
} tp_words_buffer;

/* Room for `tokens` tokens over `words` words; -1 when out of memory. */
static inline int tp_words_reserve(tp_words_buffer *b, size_t tokens, size_t words) {
    if (tokens > b->cap) {
        size_t cap = grow_capacity(b->cap, tokens);
        if (grow_to(&b->ids, cap, 4) || grow_to(&b->starts, cap, 4) || grow_to(&b->ends, cap, 4)) return -1;
        b->cap = cap;
    }
    if (words > b->words_cap) {
        size_t cap = grow_capacity(b->words_cap, words);
        if (grow_to(&b->first, cap, 4) || grow_to(&b->count, cap, 4) || grow_to(&b->hash, cap, 8)) return -1;
        b->words_cap = cap;
    }
    return 0;
}

static inline void tp_words_buffer_free(tp_words_buffer *b) {
    free(b->ids); free(b->starts); free(b->ends);
    free(b->first); free(b->count); free(b->hash);
}

static inline tp_words tp_words_of(const tp_words_buffer *b) {
    return (tp_words){b->ids, b->starts, b->ends, b->first, b->count};
}

#endif
