/* What a model call returns for a group of words (BPE and WordPiece alike). */
#ifndef TP_WORDS_H
#define TP_WORDS_H

#include <stdint.h>

/* Word j is ids[first[j] .. first[j] + count[j]), token k covering bytes [starts[k], ends[k]) of its word
 * (words with the same bytes may share one range). Valid until the next call on the same scratch. */
typedef struct {
    const uint32_t *ids, *starts, *ends;
    const uint32_t *first, *count;
} tp_words;

#endif
