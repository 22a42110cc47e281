/* Added-token splitting: leftmost-longest matching of literal byte strings, as HF's AddedVocabulary.
 *
 * Stock splits in two passes: tokens with normalized=false on the raw text, then tokens with
 * normalized=true on the gaps (after normalization, which is identity where this runs natively).
 * lstrip/rstrip widen a match over whitespace (the engine's WS class, = Rust char::is_whitespace);
 * single_word is not handled here (the Python layer sends such tokenizers to stock). */
#ifndef TP_ADDED_H
#define TP_ADDED_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_added tp_added;

typedef struct {
    uint32_t start, end; /* byte range */
    uint32_t id;         /* TP_ADDED_TEXT for a stretch of ordinary text */
} tp_segment;

#define TP_ADDED_TEXT UINT32_MAX

/* pass: 0 for normalized=false tokens, 1 for normalized=true. skip: a match of this token is left as
 * text (special tokens when encode_special_tokens is on). NULL on OOM. */
tp_added *tp_added_new(const uint8_t *const *contents, const uint32_t *lens, const uint32_t *ids,
                       const uint8_t *pass, const uint8_t *skip, const uint8_t *lstrip, const uint8_t *rstrip,
                       size_t n);
void tp_added_free(tp_added *added);

/* Split text into segments (tokens and text stretches, in order, no empty text stretch).
 * *segments is realloc'ed as needed (capacity in *cap). Returns the count, or -1 on OOM. */
long tp_added_split(const tp_added *added, const uint8_t *text, size_t len, tp_segment **segments, size_t *cap);

#endif
