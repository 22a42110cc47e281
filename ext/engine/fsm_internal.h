/* FSM consumers of the tag stream: shared types between the FSMs and the program executor.
 *
 * Every splitting FSM tiles [lo, hi) of the text with segments (start, end, is_match) exactly as
 * tokenizers' `Pattern::find_matches` does; ONE function (tt_apply_behavior) then turns segments
 * into pieces the way `NormalizedString::split` does. Keeping the two halves apart is what makes
 * "all five behaviors and invert" one piece of code instead of one per pre-tokenizer.
 */
#ifndef TAGTOK_FSM_INTERNAL_H
#define TAGTOK_FSM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "nibble_set.h"
#include "tagtok.h"
#include "tagtok_tables.h"
#include "utf8.h"

/* Property bit of the continuation tag in tt_view.props: runs step over continuation bytes one byte
 * at a time (they are transparent) instead of decoding char lengths. */
#define TT_CONT_BIT (1u << 31)
_Static_assert(TT_PROP_COUNT < 31, "property bits must leave room for TT_CONT_BIT");

/* What an FSM looks at: original bytes plus the per-byte tags of one classify pass. */
typedef struct {
    const uint8_t *text;
    const uint8_t *tags;    /* atom tags (TT_TAG_CONT on continuation bytes) */
    const uint8_t *stags;   /* script tags, only for TT_STEP_SCRIPTS */
    const uint32_t *props;  /* tag -> tt_atom_props, and TT_TAG_CONT -> TT_CONT_BIT (tt_fill_props) */
    const struct tt_run_ends *run_ends; /* for the hand FSMs' long runs (tt_letter_run), or NULL */
} tt_view;

void tt_fill_props(uint32_t props[256]);

/* Worst-case segment count an FSM can emit for a byte range of length n (one match and one gap per
 * char, plus zero-length matches of the empty literal): callers size their buffer with it once per
 * piece so the FSMs never check capacity. */
#define TT_MAX_SEGS(n) (2 * (size_t)(n) + 2)

/* Properties of the char starting at p (p must be a char start). */
static inline uint32_t tt_props_at(const tt_view *v, uint32_t p) { return v->props[v->tags[p]]; }

static inline uint32_t tt_next(const tt_view *v, uint32_t p) { return p + utf8_char_len(v->text[p]); }

/* First char start >= p (or hi) whose char has none of `mask`; p must be a char start. */
static inline uint32_t tt_run(const tt_view *v, uint32_t p, uint32_t hi, uint32_t mask) {
    mask |= TT_CONT_BIT;
    while (p < hi && (v->props[v->tags[p]] & mask)) p++;
    return p;
}

/* Where runs the hand FSMs take can end: the tags whose chars have none of a run's properties (a
 * continuation byte's tag belongs to its char). */
typedef struct tt_run_ends {
    tt_nibble_set letters;  /* \p{L} */
    tt_nibble_set upperish; /* [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] */
    tt_nibble_set lowerish; /* [\p{Ll}\p{Lm}\p{Lo}\p{M}] */
} tt_run_ends;

#define TT_UPPERISH (TT_PROP_LU | TT_PROP_LT | TT_PROP_LM | TT_PROP_LO | TT_PROP_M)
#define TT_LOWERISH (TT_PROP_LL | TT_PROP_LM | TT_PROP_LO | TT_PROP_M)

void tt_run_ends_build(tt_run_ends *ends, const uint32_t props[256]);

/* tt_run(v, p, hi, mask) for a mask of tt_run_ends (its set `ends`): long runs (a sentence of CJK)
 * skipped sixteen tags at a time. */
static inline uint32_t tt_long_run(const tt_view *v, const tt_nibble_set *ends, uint32_t p, uint32_t hi,
                                   uint32_t mask) {
    if (v->run_ends) p = tt_nibble_skip(ends, v->tags, p, hi);
    return tt_run(v, p, hi, mask);
}

static inline uint32_t tt_letter_run(const tt_view *v, uint32_t p, uint32_t hi) {
    return tt_long_run(v, v->run_ends ? &v->run_ends->letters : NULL, p, hi, TT_PROP_L);
}

/* First char start >= p (or hi) whose char has one of `mask` (the run of chars outside `mask`). */
static inline uint32_t tt_run_not(const tt_view *v, uint32_t p, uint32_t hi, uint32_t mask) {
    while (p < hi && !(v->props[v->tags[p]] & mask)) p++;
    return p;
}

/* A class split's member tags (props & mask), for skipping runs of other tags sixteen at a time. */
void tt_class_members(tt_nibble_set *members, const uint32_t props[256], uint32_t mask);

/* ---- segmenters: each returns the number of segments written to out ---- */
size_t tt_fsm_class(const tt_view *v, uint32_t lo, uint32_t hi, uint32_t mask, const tt_nibble_set *members,
                    tt_seg *out);
/* tt_fsm_class then tt_apply_behavior (Removed, Isolated or Contiguous; no invert) in one pass: the
 * runs between member chars as pieces, and each member char (Isolated) or run of them (Contiguous). */
size_t tt_fsm_class_pieces(const tt_view *v, uint32_t lo, uint32_t hi, uint32_t mask, const tt_nibble_set *members,
                           tt_behavior behavior, tt_piece *out);
/* BertPreTokenizer (whitespace removed, then punctuation isolated) in one pass: the runs between
 * whitespace and punctuation chars as pieces, and each punctuation char. members: the tags of either. */
size_t tt_fsm_bert_pieces(const tt_view *v, uint32_t lo, uint32_t hi, const tt_nibble_set *members, tt_piece *out);
size_t tt_fsm_bytes(const tt_view *v, uint32_t lo, uint32_t hi, const uint8_t *lit, size_t lit_len,
                    tt_seg *out); /* literal / single char (onig leftmost, non-overlapping) */
size_t tt_fsm_empty(const tt_view *v, uint32_t lo, uint32_t hi, tt_seg *out); /* onig '' */
size_t tt_fsm_regex(const tt_view *v, uint32_t lo, uint32_t hi, tt_regex_kind kind, tt_seg *out);
/* tt_fsm_regex then tt_apply_behavior (Isolated, no invert) in one pass: the matches and the gaps as pieces. */
size_t tt_fsm_regex_pieces(const tt_view *v, uint32_t lo, uint32_t hi, tt_regex_kind kind, tt_piece *out);
size_t tt_fsm_whitespace(const tt_view *v, uint32_t lo, uint32_t hi, tt_seg *out);
size_t tt_fsm_scripts(const tt_view *v, uint32_t lo, uint32_t hi, tt_seg *out);
size_t tt_fsm_fixed_length(const tt_view *v, uint32_t lo, uint32_t hi, uint32_t length, tt_seg *out);

/* Compiled regexes (regex_vm.c). tt_fsm_compiled returns TT_RX_OOM when out of memory, and TT_RX_LIMIT when a
 * program with backreferences backtracked more than TT_RX_BACKTRACK_LIMIT times from one search start. */
typedef struct tt_rx tt_rx;
typedef struct tt_rx_mem tt_rx_mem;
#define TT_RX_OOM ((size_t)-1)
#define TT_RX_LIMIT ((size_t)-2)
tt_rx *tt_rx_new(const tt_rx_spec *spec, char *err, size_t err_len);
void tt_rx_free(tt_rx *rx);
int tt_rx_uses_dfa(const tt_rx *rx);
/* Whether rx runs within segments (tt_rx_spec.segments), and where the segment at the char start p ends. */
int tt_rx_has_segments(const tt_rx *rx);
uint32_t tt_rx_segment_end(const tt_rx *rx, const uint16_t *byte_col, const uint8_t *text, uint32_t p, uint32_t hi);
tt_rx_mem *tt_rx_mem_new(void);
void tt_rx_mem_free(tt_rx_mem *mem);
size_t tt_fsm_compiled(const tt_rx *rx, const tt_view *v, uint32_t lo, uint32_t hi, tt_rx_mem *mem,
                       tt_seg *out);
/* tt_fsm_compiled then tt_apply_behavior (Isolated, no invert) in one pass, for a program run as a DFA. */
size_t tt_fsm_compiled_pieces(const tt_rx *rx, const tt_view *v, uint32_t lo, uint32_t hi, tt_rx_mem *mem,
                              tt_piece *out);
/* Whether a program run as a DFA, without segments, runs the cut loop (1, 0, or -1 out of memory); then
 * tt_fsm_compiled_matches is tt_fsm_compiled then tt_apply_behavior (Removed, invert) in one pass. */
int tt_rx_cuts(const tt_rx *rx, tt_rx_mem *mem);
size_t tt_fsm_compiled_matches(const tt_rx *rx, const tt_view *v, uint32_t lo, uint32_t hi, tt_rx_mem *mem,
                               tt_piece *out);

/* A compiled regex run as a DFA (tt_rx_uses_dfa) over bytes that each stand for one char, as the text
 * after ByteLevel does: byte_col (tt_rx_byte_classes) holds the class of each byte's char. */
void tt_rx_byte_classes(const tt_rx *rx, const uint32_t char_of_byte[256], uint16_t byte_col[256]);
/* Per byte (its char's class in byte_col): whether a match of a DFA program can start on it (every byte
 * when the program has no first set, or can match empty). */
void tt_rx_byte_starts(const tt_rx *rx, const uint16_t byte_col[256], uint8_t starts[256]);
size_t tt_fsm_compiled_bytes(const tt_rx *rx, tt_rx_mem *mem, const uint8_t *text, uint32_t lo, uint32_t hi,
                             const uint16_t byte_col[256], tt_seg *out);

/* NormalizedString::split: behavior (+ invert) over segments, appending non-empty pieces to out.
 * Returns the number of pieces appended. `segs` is modified (invert, merging). */
size_t tt_apply_behavior(tt_seg *segs, size_t n, tt_behavior behavior, int invert, tt_piece *out);

#endif
