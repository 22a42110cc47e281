/* Normalizers with HF alignments: normalized UTF-8 plus, for every normalized byte, the original
 * byte range of the char it came from (what stock's NormalizedString keeps), so token offsets can
 * be mapped back. Each step rewrites a char array the way stock's `transform` does; the tables are
 * probed from stock (tables/normalization_tables.c).
 *
 * Thread-safety: a tp_normalizer is immutable; each thread passes its own tp_norm_scratch. */
#ifndef TP_NORMALIZE_H
#define TP_NORMALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "tagtok.h"

enum {
    TP_NORM_CLEAN_TEXT,    /* BertNormalizer clean_text */
    TP_NORM_CHINESE,       /* BertNormalizer handle_chinese_chars */
    TP_NORM_NFD,
    TP_NORM_NFKD,
    TP_NORM_BERT_STRIP,    /* BertNormalizer strip_accents, after NFD: drop Mn */
    TP_NORM_STRIP_ACCENTS, /* StripAccents: drop combining marks */
    TP_NORM_LOWERCASE,
    TP_NORM_NFC,
    TP_NORM_NFKC,
    TP_NORM_REPLACE,       /* Replace(String pattern, content) */
    TP_NORM_PREPEND,       /* Prepend(text): before the first char of a non-empty string */
    TP_NORM_STRIP,         /* Strip(left, right): Rust char::is_whitespace chars at the ends */
    TP_NORM_REPLACE_REGEX, /* Replace(Regex pattern, content): the pattern compiled (rx) */
    TP_NORM_NMT,           /* Nmt: drop some control chars, turn some others into ' ' */
    TP_NORM_BYTE_LEVEL,    /* ByteLevel: each UTF-8 byte of a char becomes content[byte] (256 chars) */
    TP_NORM_PRECOMPILED,   /* Precompiled: content is the SentencePiece charsmap (trie + replacements) */
    TP_NORM_REPLACE_GIVEN, /* Replace(Regex, content) whose matches come with each text (tp_norm_give) */
    TP_NORM_N_KINDS
};

typedef struct {
    uint8_t kind;
    uint8_t left, right;                        /* TP_NORM_STRIP */
    const uint8_t *text;                        /* PREPEND: the text; REPLACE: the pattern (non-empty) */
    size_t text_len;
    const uint8_t *content;                     /* REPLACE, REPLACE_REGEX, REPLACE_GIVEN: the replacement;
                                                 * PRECOMPILED: the decoded charsmap */
    size_t content_len;
    const tt_rx_spec *rx;                       /* REPLACE_REGEX: the compiled pattern (copied) */
} tp_norm_step;

typedef struct tp_normalizer tp_normalizer;
typedef struct tp_norm_scratch tp_norm_scratch;

/* steps: n steps applied in order (their strings are copied). NULL on OOM, an unknown kind, an
 * empty Replace pattern, a REPLACE_REGEX whose pattern the engine refuses, a BYTE_LEVEL whose
 * content is not 256 chars or a PRECOMPILED charsmap stock could not use whole (see
 * tp_precompiled_valid). */
tp_normalizer *tp_normalizer_new(const tp_norm_step *steps, size_t n);
/* How many REPLACE_GIVEN steps it has (the counts a text's given matches hold: tp_norm_give). */
size_t tp_normalizer_given_steps(const tp_normalizer *nz);
void tp_normalizer_free(tp_normalizer *nz);

/* 1 when a SentencePiece charsmap parses as stock parses it (u32 trie size in bytes, the trie, the
 * replacement blob; its UTF-8 validity is the caller's check) and every lookup of up to 5 bytes of
 * UTF-8 stays inside the trie and reaches values at char boundaries of the blob (where stock would
 * panic), else 0. */
int tp_precompiled_valid(const uint8_t *charsmap, size_t len);

tp_norm_scratch *tp_norm_scratch_new(void);
void tp_norm_scratch_free(tp_norm_scratch *s);

/* Normalize text[0, len) (valid UTF-8). Writes *out_len bytes to *out and, per output byte,
 * [from[b], to[b]) in text. Arrays live until the next call on s. *from and *to are NULL when every
 * byte stayed where it was (*out_len == len; byte b came from the char holding text[b]), and *out is
 * then text itself when nothing changed. With `align` 0 the caller needs no alignment, and *from and
 * *to may be NULL whatever changed.
 * Returns 0, or -1 on OOM or when a Replace regex gave up on the text (then tp_norm_gave_up says so). */
int tp_normalize(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len, int align,
                 const uint8_t **out, const uint32_t **from, const uint32_t **to, size_t *out_len);
/* The matches of the REPLACE_GIVEN steps in the next text normalized on s: per such step in order, a count n
 * then n pairs [start, end) of char indices into that step's input (ascending, not overlapping), as stock's
 * regex finds them; the caller keeps them alive until then. NULL: none of those regexes matches in the text
 * (the caller checked), so the steps leave it as it is. The matches are for one whole text: a second
 * tp_normalize before the next tp_norm_give gives up (tp_norm_gave_up). */
void tp_norm_give(tp_norm_scratch *s, const uint32_t *given);
/* Whether the last failed tp_normalize on s failed because a Replace regex gave up (TT_GAVE_UP), or because the
 * matches given did not fit the text; clears it. */
int tp_norm_gave_up(tp_norm_scratch *s);

/* Whether the last tp_normalize on s put a Replace's content before the text's first char (an empty match
 * there: that content aligns to nothing). */
int tp_norm_inserted_first(const tp_norm_scratch *s);
/* The alignment of a text whose bytes stayed where they were (what tp_normalize leaves as NULL): each
 * byte of text[0, len) aligns to [from[b], to[b]), the char holding it. */
void tp_char_alignment(const uint8_t *text, size_t len, uint32_t *from, uint32_t *to);

#endif
