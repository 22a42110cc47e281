/* Added-token splitting: leftmost-longest matching of literal byte strings, as HF's AddedVocabulary.
 *
 * Stock splits in two passes: tokens with normalized=false on the raw text (pass 0), then tokens with
 * normalized=true (their contents given here already normalized) on each gap of the first pass after
 * normalization (pass 1); the caller runs the passes. Each call's text is HF's "sentence":
 * lstrip/rstrip widen a match over whitespace (the engine's WS class, = Rust char::is_whitespace) within
 * it; a single_word match counts only when the chars around it (in it) are not word chars (the
 * engine's RW class, = Rust regex \w). */
#ifndef TP_ADDED_H
#define TP_ADDED_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_added tp_added;

typedef struct {
    uint32_t start, end; /* byte range */
    uint32_t id;         /* TP_ADDED_TEXT for a stretch of ordinary text */
    uint32_t strips;     /* a token with lstrip or rstrip: its token string is the text it matched */
} tp_segment;

#define TP_ADDED_TEXT UINT32_MAX

/* pass: 0 for normalized=false tokens, 1 for normalized=true. skip: a match of this token is left as
 * text (special tokens when encode_special_tokens is on). NULL on OOM. */
tp_added *tp_added_new(const uint8_t *const *contents, const uint32_t *lens, const uint32_t *ids,
                       const uint8_t *pass, const uint8_t *skip, const uint8_t *lstrip, const uint8_t *rstrip,
                       const uint8_t *single_word, size_t n);
void tp_added_free(tp_added *added);

/* Split text with one pass's tokens (added may be NULL: no added tokens) into segments (tokens and text stretches, in order, no empty text
 * stretch; a token segment may overlap the previous token's rstrip, as in stock). *segments is realloc'ed as needed (capacity in *cap). Returns the count, or -1 on OOM. */
long tp_added_split(const tp_added *added, int pass, const uint8_t *text, size_t len, tp_segment **segments,
                    size_t *cap);

/* HF's ByteLevel trim_offsets counts, at each end of a token string, the chars that are the byte-level
 * space 'Ġ' or whitespace: those of text[0, len) (a stripping token's match). -1 on OOM. */
int tp_added_space_runs(const uint8_t *text, size_t len, uint32_t *lead, uint32_t *trail);

#endif
