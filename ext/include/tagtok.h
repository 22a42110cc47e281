/* hf_tagtok engine: the public C interface of ext/engine.
 *
 *   UTF-8 bytes --classify--> tag[] (+ char-start bitplane) --FSM--> spans --program--> pieces
 *
 * Everything here is engine-neutral: no tokenizer.json, no Python. Unicode facts come only from the
 * generated tables (tables/tagtok_tables.h); this header only names the interfaces.
 */
#ifndef TAGTOK_H
#define TAGTOK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- classify */

/* Tag written at every UTF-8 continuation byte; transparent to every FSM. */
#define TT_TAG_CONT 0xFFu
#define TT_MAX_TEXT_BYTES 0xFFFFFFF0u /* pieces carry uint32 byte offsets */

typedef enum { TT_ALPHABET_ATOMS = 0, TT_ALPHABET_SCRIPTS = 1 } tt_alphabet;

typedef enum {
    TT_IMPL_AUTO = -1, /* best available on this CPU (default; HF_TAGTOK_IMPL env var overrides) */
    TT_IMPL_SCALAR = 0,
    TT_IMPL_SSE2 = 1,
    TT_IMPL_AVX2 = 2,
    TT_IMPL_NEON = 3,
    TT_IMPL_AVX512 = 4, /* AVX-512 BW + VBMI */
} tt_impl;

/* Classify `n` bytes of valid UTF-8. tags[i] is the tag of the char starting at byte i, or
 * TT_TAG_CONT for a continuation byte. If char_starts is non-NULL it receives ceil(n/64) words,
 * bit (i%64) of word i/64 set iff byte i starts a char. Thread-safe; never reads past text[n-1]. */
void tt_classify(tt_alphabet alphabet, const uint8_t *text, size_t n, uint8_t *tags,
                 uint64_t *char_starts);

/* Same, with an explicit implementation (for tests); returns 0 when `impl` is unavailable here. */
int tt_classify_with(tt_impl impl, tt_alphabet alphabet, const uint8_t *text, size_t n,
                     uint8_t *tags, uint64_t *char_starts);

int tt_impl_available(tt_impl impl);

/* UTF-8 of a text given as code units of 1, 2 or 4 bytes each (Python's str layouts) into out, which has
 * room for 4 bytes per unit. Returns the UTF-8 length, or -1 when a unit is a surrogate (it has no UTF-8
 * form). Thread-safe. */
long tt_utf8_from_units(const void *data, int unit, size_t len, uint8_t *out);
/* Same, with the transcode kernel of an explicit implementation (for tests); -2 when `impl` is
 * unavailable here. */
long tt_utf8_from_units_with(tt_impl impl, const void *data, int unit, size_t len, uint8_t *out);
tt_impl tt_impl_active(void);
const char *tt_impl_name(tt_impl impl);

/* ---------------------------------------------------------------- pre-tokenizer programs */

typedef enum {
    TT_BEHAVIOR_REMOVED = 0,
    TT_BEHAVIOR_ISOLATED = 1,
    TT_BEHAVIOR_MERGED_WITH_PREVIOUS = 2,
    TT_BEHAVIOR_MERGED_WITH_NEXT = 3,
    TT_BEHAVIOR_CONTIGUOUS = 4,
} tt_behavior;

typedef enum {
    TT_STEP_SPLIT_CLASS,   /* a char matches iff tt_atom_props[atom] & prop_mask */
    TT_STEP_SPLIT_CHAR,    /* a char matches iff it is code point `cp` */
    TT_STEP_SPLIT_LITERAL, /* leftmost non-overlapping occurrences of literal (len 0: every char) */
    TT_STEP_SPLIT_REGEX,   /* one of the recognised regex FSMs (tt_regex_kind) */
    TT_STEP_WHITESPACE,    /* \w+|[^\w\s]+ kept, whitespace removed */
    TT_STEP_BERT,          /* whitespace removed, punctuation isolated */
    TT_STEP_METASPACE,     /* U+0020 -> replacement, prepend scheme, optional split */
    TT_STEP_BYTELEVEL,     /* optional prefix space, optional GPT-2 regex split, byte rendering */
    TT_STEP_SCRIPTS,       /* UnicodeScripts */
    TT_STEP_FIXED_LENGTH,  /* chunks of `length` chars */
    TT_STEP_SPLIT_COMPILED, /* a compiled regex program (tt_rx_spec) */
    TT_STEP_SPLIT_GIVEN,   /* the matches given with the text (tt_program_run_given); one, before any transform */
} tt_step_kind;

typedef enum { TT_REGEX_GPT2, TT_REGEX_CL100K, TT_REGEX_QWEN2, TT_REGEX_O200K } tt_regex_kind;
typedef enum { TT_PREPEND_ALWAYS, TT_PREPEND_FIRST, TT_PREPEND_NEVER } tt_prepend_scheme;

#define TT_RX_MAX_SEGMENTS 8 /* segment sets a compiled regex can run within (tt_rx_spec.segments) */

/* A compiled regex: instructions of 4 int32 (op, a, b, c), a 2-level class map
 * (class = stage2[stage1[cp >> 8] * 256 + (cp & 0xFF)]) and one bitmap over classes per set.
 * Splits numbered below n_main_splits belong to the main program, the rest to sub-programs (the bodies of
 * lookarounds and atomic groups, n_subs of them). */
typedef struct {
    const int32_t *code; uint32_t n_code;
    const uint16_t *stage1;                 /* 0x1100 entries */
    const uint16_t *stage2; uint32_t n_stage2;
    const uint64_t *sets; uint32_t n_sets;  /* n_sets * ceil(n_classes / 64) words */
    uint32_t n_classes, n_main_splits, n_splits, n_subs;
    int first_set; /* every match starts with a char of this set (-1: unknown) */
    /* (set, chars) pairs, the sets pairwise disjoint: the program runs on each segment of the text, a chunk of
     * up to `chars` chars (0: all) of a run of one set's chars, or a stretch of chars in none; Isolated only */
    const uint32_t *segments; uint32_t n_segments; /* at most TT_RX_MAX_SEGMENTS */
    int backtrack_only; /* run on the backtracking VM even where the DFA could (for testing one against the other) */
} tt_rx_spec;

typedef struct {
    tt_step_kind kind;
    tt_behavior behavior; /* SPLIT_* */
    int invert;           /* SPLIT_* */
    uint32_t prop_mask;   /* SPLIT_CLASS */
    uint32_t cp;          /* SPLIT_CHAR delimiter; METASPACE replacement */
    const uint8_t *literal; size_t literal_len; /* SPLIT_LITERAL (copied by tt_program_new) */
    tt_regex_kind regex;  /* SPLIT_REGEX */
    tt_prepend_scheme prepend; int split; /* METASPACE */
    int add_prefix_space; int use_regex;  /* BYTELEVEL */
    uint32_t length;      /* FIXED_LENGTH */
    const tt_rx_spec *rx; /* SPLIT_COMPILED; BYTELEVEL with use_regex: its regex compiled, run as a DFA instead
                           * of the hand FSM (NULL: the FSM). Copied by tt_program_new. */
} tt_step;

/* A piece of the pre-tokenized input. [start, end) is a byte range of the input text (splits after
 * ByteLevel may start or end it inside a UTF-8 char). A piece whose
 * flags has TT_PIECE_PREFIX is preceded by the program's prefix char (Metaspace replacement, or the
 * ByteLevel space); a prefix-only piece has start == end and aligns to the char at `start`.
 * The piece's text is rendered by the program's final transform (none, Metaspace, ByteLevel). */
#define TT_PIECE_PREFIX 1u
typedef struct {
    uint32_t start, end, flags;
} tt_piece;

/* A stretch of text as tokenizers' find_matches lists it: a match (match 1, possibly empty) or the text
 * between two matches (match 0). */
typedef struct {
    uint32_t start, end;
    uint32_t match;
} tt_seg;

typedef enum { TT_RENDER_NONE = 0, TT_RENDER_METASPACE = 1, TT_RENDER_BYTELEVEL = 2 } tt_render;

typedef struct tt_program tt_program;  /* immutable once built; share freely across threads */
typedef struct tt_scratch tt_scratch;  /* per-thread working memory */

/* NULL on error, with a message in err. Fails (message says why) for shapes the native executor
 * does not run; callers then fall back to composing steps themselves. */
tt_program *tt_program_new(const tt_step *steps, size_t n_steps, char *err, size_t err_len);
void tt_program_free(tt_program *program);
tt_render tt_program_render(const tt_program *program, uint32_t *render_cp);
/* How many compiled-regex steps run as a DFA (the rest run on the backtracking VM). */
size_t tt_program_dfa_steps(const tt_program *program);

tt_scratch *tt_scratch_new(void);
void tt_scratch_free(tt_scratch *scratch);

/* A program gave up on a text: a regex with backreferences backtracked past its limit there (onig gives up on
 * such searches too, and stock then panics), so stock, not this engine, decides what the text gives. */
#define TT_GAVE_UP (-2)
/* Backtracks (and branches taken where captures rule out the memo) from one search start past which a regex
 * with backreferences gives up: a tenth of onig's default retry limit, so the engine gives up first and
 * stock decides every text onig might give up on. */
#define TT_RX_BACKTRACK_LIMIT 1000000

/* Run on valid UTF-8. Pieces live in `scratch` until its next use. Returns 0, -1 on OOM, or TT_GAVE_UP. */
int tt_program_run(const tt_program *program, tt_scratch *scratch, const uint8_t *text, size_t len,
                   const tt_piece **pieces, size_t *n_pieces);

/* tt_program_run for a program with a SPLIT_GIVEN step: its matches are the n_matches [start, end) byte
 * pairs at `matches` (none when NULL), in order, as tokenizers' find_matches finds them over the whole text
 * (empty ones too), each on char starts. Matches out of order or past the text, or one across an end of a
 * piece the steps before the SPLIT_GIVEN made, give TT_GAVE_UP: stock decides. A program without that step
 * ignores them. */
int tt_program_run_given(const tt_program *program, tt_scratch *scratch, const uint8_t *text, size_t len,
                         const uint32_t *matches, size_t n_matches, const tt_piece **pieces, size_t *n_pieces);
/* Whether the program has a SPLIT_GIVEN step. */
int tt_program_takes_matches(const tt_program *program);

/* For a program of one compiled-regex split step: the segments of its matches over the whole text, in
 * order, as tokenizers' find_matches lists them (an empty text has none). They live in `scratch` until its
 * next use. Returns 0, -1 on OOM or a program of another shape, or TT_GAVE_UP. */
int tt_program_matches(const tt_program *program, tt_scratch *scratch, const uint8_t *text, size_t len,
                       const tt_seg **segs, size_t *n_segs);

/* Char offsets (start, end) of each piece, 2 int64 per piece, in one pass over the text (pieces in
 * program order). A prefix-only piece (start == end, TT_PIECE_PREFIX) gets the span of the char at `start`, as stock
 * aligns an inserted char to the char it precedes. A piece that starts or ends inside a char (split after
 * ByteLevel) covers that whole char. */
void tt_char_offsets(const uint8_t *text, size_t len, const tt_piece *pieces, size_t n, int64_t *out);

/* The entry points that code outside the engine's extension module calls (the native pipeline, linked
 * into another module): that module reaches them through this table, which the engine's Python module
 * exports, so the engine's code and tables are linked into one module only. */
typedef struct {
    void (*classify)(tt_alphabet alphabet, const uint8_t *text, size_t n, uint8_t *tags, uint64_t *char_starts);
    tt_scratch *(*scratch_new)(void);
    void (*scratch_free)(tt_scratch *scratch);
    tt_program *(*program_new)(const tt_step *steps, size_t n_steps, char *err, size_t err_len);
    void (*program_free)(tt_program *program);
    int (*program_run)(const tt_program *program, tt_scratch *scratch, const uint8_t *text, size_t len,
                       const tt_piece **pieces, size_t *n_pieces);
    int (*program_matches)(const tt_program *program, tt_scratch *scratch, const uint8_t *text, size_t len,
                           const tt_seg **segs, size_t *n_segs);
    int (*program_run_given)(const tt_program *program, tt_scratch *scratch, const uint8_t *text, size_t len,
                             const uint32_t *matches, size_t n_matches, const tt_piece **pieces, size_t *n_pieces);
    int (*program_takes_matches)(const tt_program *program);
    const uint32_t *atom_props;    /* [atom]: its property bits (TT_PROP_*) */
    const uint32_t *bytelevel_map; /* [256]: the char ByteLevel renders each byte as */
    long (*utf8_from_units)(const void *data, int unit, size_t len, uint8_t *out);
} tt_engine_api;

const tt_engine_api *tt_engine(void);

#ifdef __cplusplus
}
#endif
#endif
