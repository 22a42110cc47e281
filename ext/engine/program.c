/* The program executor: HF `Sequence` semantics over splitting steps, then at most one transform, then
 * (after ByteLevel only) splitting steps over the byte-level rendering.
 *
 * The input is classified once when a step reads tags (atoms, plus scripts if a step needs them); every
 * step re-splits each current piece on its own, so a piece boundary is a string boundary for every
 * FSM. All working memory lives in tt_scratch and only grows (amortised doubling), never per piece.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm_internal.h"
#include "grow.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct tt_byte_step tt_byte_step;

struct tt_program {
    tt_step *steps; /* splitting steps (Bert already expanded into its two splits) */
    size_t n_before; /* steps[0, n_before) run before the final transform; the rest after ByteLevel, on
                      * the byte-rendered text */
    tt_rx **rx;     /* per step: the compiled regex of a SPLIT_COMPILED step, else NULL */
    tt_nibble_set *class_members; /* per step: a SPLIT_CLASS step's member tags */
    size_t n_steps;
    tt_step final;  /* kind METASPACE / BYTELEVEL, or has_final == 0 */
    tt_rx *final_rx; /* BYTELEVEL's regex as a DFA, or NULL (the hand FSM, or no regex) */
    int has_final;
    int needs_scripts;
    int needs_atoms; /* some step reads atom tags (compiled regexes, literals, chunks and Metaspace do not) */
    int takes_matches; /* a SPLIT_GIVEN step (before any transform) splits at the matches given with the text */
    uint8_t repl[4]; /* Metaspace replacement, UTF-8 */
    uint32_t repl_len;
    uint32_t props[256]; /* tt_view.props */
    tt_run_ends run_ends; /* tt_view.run_ends */
    tt_byte_step *byte_steps; /* per step after ByteLevel, when all can run on the original bytes (see
                               * run_after_bytelevel); else NULL */
};

/* A splitting step after ByteLevel run on the original bytes, each standing for its byte-level char. */
struct tt_byte_step {
    uint8_t member[256]; /* SPLIT_CLASS: whether the byte's char has one of the step's properties */
    uint16_t col[256];   /* SPLIT_COMPILED: the class of the byte's char in the step's regex */
    uint8_t starts[256]; /* whether a match can start on the byte: a piece with none is kept as it is */
    int skips;           /* some byte starts nothing, and the step keeps a piece without a match */
    tt_nibble_set start_set; /* starts, sixteen bytes at a time */
};

/* The first p (or end) whose byte starts a match. */
static uint32_t next_start(const tt_byte_step *bs, const uint8_t *text, uint32_t p, uint32_t end) {
    while ((p = tt_nibble_skip(&bs->start_set, text, p, end)) < end && !bs->starts[text[p]]) p++;
    return p;
}

struct tt_scratch {
    uint8_t *tags, *stags;
    size_t tags_cap, stags_cap;
    tt_seg *segs;
    size_t segs_cap;
    tt_piece *cur, *next;
    size_t cur_cap, next_cap;
    uint8_t *vbuf; /* one piece behind ByteLevel's prefix space: bytes, then their tags */
    size_t v_cap;
    uint8_t *rtext, *rtags, *rstags; /* after ByteLevel: the pieces rendered back to back */
    size_t rtext_cap, rtags_cap, rstags_cap;
    uint32_t *rfrom; size_t rfrom_cap; /* per rendered byte: the original byte it renders (prefix: the piece start) */
    uint8_t *rprefix; size_t rprefix_cap; /* per rendered byte: 1 on ByteLevel's prefix space */
    tt_rx_mem *rx_mem; /* compiled-regex working memory, created on first use */
    const uint32_t *given; size_t n_given; /* SPLIT_GIVEN: the run's matches (tt_program_run_given) */
};

#define GROW(buf, cap, need) grow_reserve(&(buf), &(cap), (need), sizeof(*(buf)))

static int fail(char *err, size_t err_len, const char *msg) {
    if (err && err_len) snprintf(err, err_len, "%s", msg);
    return -1;
}

static int is_transform(tt_step_kind kind) { return kind == TT_STEP_METASPACE || kind == TT_STEP_BYTELEVEL; }

static int check_step(const tt_step *s, char *err, size_t err_len) {
    if ((unsigned)s->kind > TT_STEP_SPLIT_GIVEN) return fail(err, err_len, "unknown step kind");
    /* the SPLIT_* kinds carry a behavior */
    int splits_by_pattern = s->kind <= TT_STEP_SPLIT_REGEX || s->kind >= TT_STEP_SPLIT_COMPILED;
    if (s->kind == TT_STEP_SPLIT_COMPILED && !s->rx) return fail(err, err_len, "compiled step without a program");
    if (s->kind == TT_STEP_BYTELEVEL && s->rx && !s->use_regex)
        return fail(err, err_len, "a ByteLevel regex program without use_regex");
    if (s->rx && s->rx->n_segments &&
        !(s->kind == TT_STEP_SPLIT_COMPILED && s->behavior == TT_BEHAVIOR_ISOLATED && !s->invert))
        return fail(err, err_len, "a regex run within segments splits Isolated, not inverted");
    if (splits_by_pattern && (unsigned)s->behavior > TT_BEHAVIOR_CONTIGUOUS)
        return fail(err, err_len, "unknown split behavior");
    if (s->kind == TT_STEP_SPLIT_REGEX && (unsigned)s->regex > TT_REGEX_O200K)
        return fail(err, err_len, "unknown regex kind");
    if (s->kind == TT_STEP_METASPACE && (unsigned)s->prepend > TT_PREPEND_NEVER)
        return fail(err, err_len, "unknown prepend scheme");
    if (s->kind == TT_STEP_FIXED_LENGTH && s->length == 0) return fail(err, err_len, "chunk size must be non-zero");
    if ((s->kind == TT_STEP_SPLIT_CHAR || s->kind == TT_STEP_METASPACE) &&
        (s->cp > 0x10FFFF || (s->cp >= 0xD800 && s->cp < 0xE000)))
        return fail(err, err_len, "code point is not a Unicode scalar value");
    return 0;
}

static int add_step(tt_program *prog, tt_step step, char *err, size_t err_len) {
    if (step.kind == TT_STEP_SPLIT_COMPILED) {
        if (!(prog->rx[prog->n_steps] = tt_rx_new(step.rx, err, err_len))) return -1;
        step.rx = NULL;
    }
    if (step.kind == TT_STEP_SPLIT_LITERAL && step.literal_len) {
        uint8_t *copy = malloc(step.literal_len);
        if (!copy) return -1;
        memcpy(copy, step.literal, step.literal_len);
        step.literal = copy;
    } else if (step.kind == TT_STEP_SPLIT_CHAR) { /* a one-char literal: same segments, one code path */
        uint8_t *copy = malloc(4);
        if (!copy) return -1;
        step.literal_len = utf8_encode(step.cp, copy);
        step.literal = copy;
    } else {
        step.literal = NULL;
    }
    prog->steps[prog->n_steps++] = step;
    return 0;
}

/* The byte steps when every step after ByteLevel is a class split or a regex run as a DFA (the ones
 * measured to matter); otherwise those steps run on the rendered text. */
static int build_byte_steps(tt_program *prog) {
    if (!prog->has_final || prog->final.kind != TT_STEP_BYTELEVEL || prog->n_before == prog->n_steps) return 0;
    for (size_t i = prog->n_before; i < prog->n_steps; i++) {
        tt_step_kind kind = prog->steps[i].kind;
        if (!(kind == TT_STEP_SPLIT_CLASS || (kind == TT_STEP_SPLIT_COMPILED && tt_rx_uses_dfa(prog->rx[i])))) return 0;
    }
    if (!(prog->byte_steps = calloc(prog->n_steps - prog->n_before, sizeof(tt_byte_step)))) return -1;
    uint8_t tag_of_byte[256];
    for (uint32_t b = 0; b < 256; b++) {
        uint8_t utf8[4], tags[4];
        uint32_t len = utf8_encode(tt_bytelevel_map[b], utf8);
        tt_classify(TT_ALPHABET_ATOMS, utf8, len, tags, NULL);
        tag_of_byte[b] = tags[0];
    }
    for (size_t i = prog->n_before; i < prog->n_steps; i++) {
        tt_byte_step *bs = &prog->byte_steps[i - prog->n_before];
        if (prog->rx[i]) {
            tt_rx_byte_classes(prog->rx[i], tt_bytelevel_map, bs->col);
            tt_rx_byte_starts(prog->rx[i], bs->col, bs->starts);
        } else {
            for (uint32_t b = 0; b < 256; b++)
                bs->member[b] = bs->starts[b] = (prog->props[tag_of_byte[b]] & prog->steps[i].prop_mask) != 0;
        }
        bs->skips = !prog->steps[i].invert && memchr(bs->starts, 0, 256) != NULL;
        tt_nibble_set_build(&bs->start_set, bs->starts);
    }
    return 0;
}

/* ByteLevel's regex, compiled; it must run as a DFA (its pieces come from the one-pass cut). */
static int final_regex(tt_program *prog, const tt_rx_spec *spec, char *err, size_t err_len) {
    if (!(prog->final_rx = tt_rx_new(spec, err, err_len))) return -1;
    return tt_rx_uses_dfa(prog->final_rx) ? 0 : fail(err, err_len, "a ByteLevel regex must run as a DFA");
}

tt_program *tt_program_new(const tt_step *steps, size_t n_steps, char *err, size_t err_len) {
    int after_transform = 0, given = 0;
    for (size_t i = 0; i < n_steps; i++) {
        if (check_step(&steps[i], err, err_len)) return NULL;
        if (steps[i].kind == TT_STEP_SPLIT_GIVEN && (given++ || after_transform)) {
            /* its matches are found over the text as it came, once */
            fail(err, err_len, "a split by given matches must be the only one and come before any transform");
            return NULL;
        }
        if (is_transform(steps[i].kind) && (after_transform || (steps[i].kind == TT_STEP_METASPACE && i + 1 != n_steps))) {
            fail(err, err_len, after_transform ? "a second transform after ByteLevel is not run in one native program"
                                               : "a Metaspace step must be the last step of a native program");
            return NULL;
        }
        after_transform |= is_transform(steps[i].kind); /* ByteLevel: a Metaspace is last */
    }
    tt_program *prog = calloc(1, sizeof *prog);
    if (!prog || !(prog->steps = calloc(2 * n_steps + 1, sizeof(tt_step))) ||
        !(prog->rx = calloc(2 * n_steps + 1, sizeof(tt_rx *))) ||
        !(prog->class_members = calloc(2 * n_steps + 1, sizeof(tt_nibble_set)))) {
        if (prog) {
            free(prog->steps);
            free(prog->rx);
        }
        free(prog);
        fail(err, err_len, "out of memory");
        return NULL;
    }
    tt_fill_props(prog->props);
    tt_run_ends_build(&prog->run_ends, prog->props);
    for (size_t i = 0; i < n_steps; i++) {
        tt_step s = steps[i];
        int rc = 0;
        prog->needs_atoms |= !(s.kind == TT_STEP_SPLIT_COMPILED || s.kind == TT_STEP_SPLIT_GIVEN || s.kind == TT_STEP_SPLIT_CHAR ||
                               s.kind == TT_STEP_SPLIT_LITERAL || s.kind == TT_STEP_FIXED_LENGTH ||
                               s.kind == TT_STEP_METASPACE || (s.kind == TT_STEP_BYTELEVEL && (!s.use_regex || s.rx)));
        if (is_transform(s.kind)) {
            if (s.kind == TT_STEP_BYTELEVEL && s.rx) rc = final_regex(prog, s.rx, err, err_len);
            s.rx = NULL;
            prog->final = s;
            prog->has_final = 1;
            prog->n_before = prog->n_steps;
            if (s.kind == TT_STEP_METASPACE) prog->repl_len = utf8_encode(s.cp, prog->repl);
        } else if (s.kind == TT_STEP_BERT) { /* one pass over the chars: see tt_fsm_bert_pieces */
            tt_step bert = {.kind = TT_STEP_BERT, .prop_mask = TT_PROP_WS | TT_PROP_PUNC};
            rc = add_step(prog, bert, err, err_len);
        } else {
            prog->needs_scripts |= s.kind == TT_STEP_SCRIPTS;
            if (err && err_len) err[0] = 0;
            rc = add_step(prog, s, err, err_len);
        }
        if (!prog->has_final) prog->n_before = prog->n_steps;
        if (rc) {
            tt_program_free(prog);
            if (err && err_len && !err[0]) fail(err, err_len, "out of memory");
            return NULL;
        }
    }
    for (size_t i = 0; i < prog->n_steps; i++) {
        if (prog->steps[i].kind == TT_STEP_SPLIT_CLASS || prog->steps[i].kind == TT_STEP_BERT)
            tt_class_members(&prog->class_members[i], prog->props, prog->steps[i].prop_mask);
        prog->takes_matches |= prog->steps[i].kind == TT_STEP_SPLIT_GIVEN;
    }
    if (build_byte_steps(prog)) {
        tt_program_free(prog);
        fail(err, err_len, "out of memory");
        return NULL;
    }
    return prog;
}

void tt_program_free(tt_program *prog) {
    if (!prog) return;
    tt_rx_free(prog->final_rx);
    free(prog->byte_steps);
    for (size_t i = 0; i < prog->n_steps; i++) {
        free((void *)prog->steps[i].literal);
        tt_rx_free(prog->rx[i]);
    }
    free(prog->rx);
    free(prog->class_members);
    free(prog->steps);
    free(prog);
}

tt_render tt_program_render(const tt_program *prog, uint32_t *render_cp) {
    if (!prog->has_final) return TT_RENDER_NONE;
    if (prog->final.kind == TT_STEP_METASPACE) {
        if (render_cp) *render_cp = prog->final.cp;
        return TT_RENDER_METASPACE;
    }
    if (render_cp) *render_cp = tt_bytelevel_map[' '];
    return TT_RENDER_BYTELEVEL;
}

size_t tt_program_dfa_steps(const tt_program *prog) {
    size_t n = 0;
    for (size_t i = 0; i < prog->n_steps; i++) n += prog->rx[i] && tt_rx_uses_dfa(prog->rx[i]);
    return n + (prog->final_rx != NULL);
}

tt_scratch *tt_scratch_new(void) { return calloc(1, sizeof(tt_scratch)); }

void tt_scratch_free(tt_scratch *s) {
    if (!s) return;
    free(s->tags); free(s->stags); free(s->segs); free(s->cur); free(s->next);
    free(s->vbuf);
    free(s->rtext); free(s->rtags); free(s->rstags); free(s->rfrom); free(s->rprefix);
    tt_rx_mem_free(s->rx_mem);
    free(s);
}

/* The given matches (over the whole text) that lie in piece [lo, hi): *first and the count; -1 when one
 * crosses an end of the piece. Steps before SPLIT_GIVEN only cut the text, so when no match crosses a piece,
 * a regex that looks at no context (pre_tokenizers.gated) finds the same matches in each piece alone; an
 * empty match on a piece's end cuts nothing, so which piece lists it does not matter. */
static int given_in_piece(const tt_scratch *sc, uint32_t lo, uint32_t hi, size_t *first, size_t *count) {
    size_t a = 0, b = sc->n_given; /* the first match starting at lo or later */
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (sc->given[2 * mid] < lo) a = mid + 1;
        else b = mid;
    }
    if (a && sc->given[2 * a - 1] > lo) return -1;
    size_t k = a;
    for (; k < sc->n_given && sc->given[2 * k] < hi; k++)
        if (sc->given[2 * k + 1] > hi) return -1;
    *first = a;
    *count = k - a;
    return 0;
}

/* Piece [lo, hi) as find_matches lists it by its `count` given matches from `first`. */
static size_t given_segments(const tt_scratch *sc, uint32_t lo, uint32_t hi, size_t first, size_t count,
                             tt_seg *segs) {
    size_t n = 0;
    uint32_t prev = lo;
    for (size_t k = first; k < first + count; k++) {
        uint32_t start = sc->given[2 * k], end = sc->given[2 * k + 1];
        if (prev != start) segs[n++] = (tt_seg){prev, start, 0};
        segs[n++] = (tt_seg){start, end, 1};
        prev = end;
    }
    if (prev != hi) segs[n++] = (tt_seg){prev, hi, 0};
    return n;
}

static size_t split_segments(const tt_program *prog, size_t step, const tt_view *v, uint32_t lo, uint32_t hi,
                             tt_scratch *sc, tt_seg *segs) {
    const tt_step *s = &prog->steps[step];
    const tt_rx *rx = prog->rx[step];
    switch (s->kind) {
    case TT_STEP_SPLIT_COMPILED:
        if (!sc->rx_mem && !(sc->rx_mem = tt_rx_mem_new())) return TT_RX_OOM;
        return tt_fsm_compiled(rx, v, lo, hi, sc->rx_mem, segs);
    case TT_STEP_SPLIT_CLASS: return tt_fsm_class(v, lo, hi, s->prop_mask, &prog->class_members[step], segs);
    case TT_STEP_SPLIT_CHAR:
    case TT_STEP_SPLIT_LITERAL:
        return s->literal_len ? tt_fsm_bytes(v, lo, hi, s->literal, s->literal_len, segs)
                              : tt_fsm_empty(v, lo, hi, segs);
    case TT_STEP_SPLIT_REGEX: return tt_fsm_regex(v, lo, hi, s->regex, segs);
    case TT_STEP_WHITESPACE: return tt_fsm_whitespace(v, lo, hi, segs);
    case TT_STEP_SCRIPTS: return tt_fsm_scripts(v, lo, hi, segs);
    case TT_STEP_FIXED_LENGTH: return tt_fsm_fixed_length(v, lo, hi, s->length, segs);
    default: return 0;
    }
}

/* The behavior each step kind applies to its segments (the split_* kinds carry their own). */
static void step_behavior(const tt_step *s, tt_behavior *behavior, int *invert) {
    switch (s->kind) {
    case TT_STEP_WHITESPACE: *behavior = TT_BEHAVIOR_REMOVED; *invert = 1; return;
    case TT_STEP_SCRIPTS:
    case TT_STEP_FIXED_LENGTH: *behavior = TT_BEHAVIOR_REMOVED; *invert = 0; return;
    default: *behavior = s->behavior; *invert = s->invert; return;
    }
}

/* Class split over bytes that each stand for one char: every member byte is its own match. */
static size_t byte_class_segments(const uint8_t member[256], const uint8_t *text, uint32_t lo, uint32_t hi,
                                  tt_seg *out) {
    size_t n = 0;
    for (uint32_t p = lo; p < hi;) {
        uint32_t g = p;
        while (g < hi && !member[text[g]]) g++;
        if (g > p) out[n++] = (tt_seg){p, g, 0};
        if (g < hi) out[n++] = (tt_seg){g, g + 1, 1}, g++;
        p = g;
    }
    return n;
}

static void swap_pieces(tt_scratch *sc) {
    tt_piece *p = sc->cur; sc->cur = sc->next; sc->next = p;
    size_t c = sc->cur_cap; sc->cur_cap = sc->next_cap; sc->next_cap = c;
}

/* The current pieces cut where the segments of rx (tt_rx_has_segments) end, for the paths that run its
 * program on each piece as it comes (Isolated: a piece's pieces are those of its segments, in order). */
static int cut_at_segments(const tt_rx *rx, const tt_byte_step *bs, const tt_view *v, tt_scratch *sc, size_t *n) {
    size_t out = 0;
    for (size_t i = 0; i < *n; i++) {
        uint32_t lo = sc->cur[i].start, hi = sc->cur[i].end;
        if (GROW(sc->next, sc->next_cap, out + (hi - lo))) return -1;
        for (uint32_t p = lo; p < hi; p = sc->next[out++].end)
            sc->next[out] = (tt_piece){p, tt_rx_segment_end(rx, bs ? bs->col : NULL, v->text, p, hi),
                                       p == lo ? sc->cur[i].flags : 0};
    }
    swap_pieces(sc);
    *n = out;
    return 0;
}

/* One splitting step over every current piece; with bs, over the original bytes as byte-level chars. */
static int run_split(const tt_program *prog, size_t step, const tt_byte_step *bs, const tt_view *v, tt_scratch *sc,
                     size_t *n) {
    const tt_step *s = &prog->steps[step];
    const tt_rx *rx = prog->rx[step];
    tt_behavior behavior;
    int invert;
    step_behavior(s, &behavior, &invert);
    /* steps whose FSM writes the pieces itself (no segments, no behaviour pass) */
    int class_pieces = !bs && s->kind == TT_STEP_SPLIT_CLASS && !invert &&
                       (behavior == TT_BEHAVIOR_REMOVED || behavior == TT_BEHAVIOR_ISOLATED ||
                        behavior == TT_BEHAVIOR_CONTIGUOUS);
    int regex_pieces = !bs && s->kind == TT_STEP_SPLIT_REGEX && !invert && behavior == TT_BEHAVIOR_ISOLATED;
    int compiled_pieces = !bs && rx && tt_rx_uses_dfa(rx) && !invert && behavior == TT_BEHAVIOR_ISOLATED;
    int compiled_matches = !bs && rx && tt_rx_uses_dfa(rx) && !tt_rx_has_segments(rx) && invert &&
                           behavior == TT_BEHAVIOR_REMOVED;
    if ((compiled_pieces || compiled_matches) && !sc->rx_mem && !(sc->rx_mem = tt_rx_mem_new())) return -1;
    if (compiled_matches && (compiled_matches = tt_rx_cuts(rx, sc->rx_mem)) < 0) return -1;
    if (rx && tt_rx_has_segments(rx) && !compiled_pieces && cut_at_segments(rx, bs, v, sc, n)) return -1;
    size_t out = 0;
    /* with bs->skips: start_at is the first byte that starts a match at or after the piece it was
     * looked for from (once `scanned`); pieces are in text order, so one scan over the text serves them all */
    uint32_t start_at = 0, end = *n ? sc->cur[*n - 1].end : 0;
    int scanned = 0;
    for (size_t i = 0; i < *n; i++) {
        uint32_t lo = sc->cur[i].start, hi = sc->cur[i].end;
        if (bs && bs->skips) {
            if (start_at < lo || !scanned) start_at = next_start(bs, v->text, lo, end), scanned = 1;
            if (start_at >= hi) { /* this piece and every one wholly before start_at go through as they are */
                size_t j = i + 1;
                while (j < *n && sc->cur[j].end <= start_at) j++;
                if (GROW(sc->next, sc->next_cap, out + (j - i))) return -1;
                memcpy(sc->next + out, sc->cur + i, (j - i) * sizeof(tt_piece));
                out += j - i;
                i = j - 1;
                continue;
            }
        }
        size_t first = 0, count = 0;
        if (s->kind == TT_STEP_SPLIT_GIVEN && given_in_piece(sc, lo, hi, &first, &count)) return TT_GAVE_UP;
        size_t bound = s->kind == TT_STEP_SPLIT_GIVEN ? 2 * count + 1 : TT_MAX_SEGS(hi - lo);
        if (GROW(sc->segs, sc->segs_cap, bound) || GROW(sc->next, sc->next_cap, out + bound)) return -1;
        if (s->kind == TT_STEP_BERT) {
            out += tt_fsm_bert_pieces(v, lo, hi, &prog->class_members[step], sc->next + out);
            continue;
        }
        if (class_pieces) {
            out += tt_fsm_class_pieces(v, lo, hi, s->prop_mask, &prog->class_members[step], behavior, sc->next + out);
            continue;
        }
        if (regex_pieces) {
            out += tt_fsm_regex_pieces(v, lo, hi, s->regex, sc->next + out);
            continue;
        }
        if (compiled_pieces || compiled_matches) {
            size_t got = compiled_pieces ? tt_fsm_compiled_pieces(rx, v, lo, hi, sc->rx_mem, sc->next + out)
                                         : tt_fsm_compiled_matches(rx, v, lo, hi, sc->rx_mem, sc->next + out);
            if (got == TT_RX_OOM) return -1;
            out += got;
            continue;
        }
        size_t n_segs;
        if (s->kind == TT_STEP_SPLIT_GIVEN) {
            n_segs = given_segments(sc, lo, hi, first, count, sc->segs);
        } else if (!bs) {
            n_segs = split_segments(prog, step, v, lo, hi, sc, sc->segs);
        } else if (rx) {
            if (!sc->rx_mem && !(sc->rx_mem = tt_rx_mem_new())) return -1;
            n_segs = tt_fsm_compiled_bytes(rx, sc->rx_mem, v->text, lo, hi, bs->col, sc->segs);
        } else {
            n_segs = byte_class_segments(bs->member, v->text, lo, hi, sc->segs);
        }
        if (n_segs == TT_RX_OOM) return -1;
        if (n_segs == TT_RX_LIMIT) return TT_GAVE_UP;
        if (n_segs == 1 && sc->segs[0].match == (uint32_t)invert) { /* nothing matched: every behavior keeps it */
            if (hi > lo) sc->next[out++] = (tt_piece){lo, hi, 0};
        } else {
            out += tt_apply_behavior(sc->segs, n_segs, behavior, invert, sc->next + out);
        }
    }
    swap_pieces(sc);
    *n = out;
    return 0;
}

/* Whether text[p, hi) starts with lit, whose first byte the caller matched; *end receives where it ends. */
static inline int same_bytes(const uint8_t *text, uint32_t p, uint32_t hi, const uint8_t *lit, uint32_t len,
                             uint32_t *end) {
    if (p + len > hi) return 0;
    for (uint32_t k = 1; k < len; k++)
        if (text[p + k] != lit[k]) return 0;
    *end = p + len;
    return 1;
}

/* The first p in [p, hi) whose byte is a space or r0, else hi; sixteen bytes at a time while they lie
 * inside the text's len bytes. */
static inline uint32_t next_space_or(const uint8_t *text, size_t len, uint32_t p, uint32_t hi, uint8_t r0) {
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(' '), first = _mm_set1_epi8((char)r0);
    for (; p < hi && (size_t)p + 16 <= len; p += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(text + p));
        uint32_t hits = (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, space), _mm_cmpeq_epi8(x, first)));
        if (hits) {
            p += (uint32_t)__builtin_ctz(hits);
            return p < hi ? p : hi;
        }
    }
#endif
    while (p < hi && text[p] != ' ' && text[p] != r0) p++;
    return p < hi ? p : hi;
}

/* Metaspace: U+0020 and the replacement itself are the delimiters (merged with next); the prepended
 * replacement glues onto the first piece, which by construction does not start with a delimiter. */
static int run_metaspace(const tt_program *prog, const tt_view *v, size_t len, tt_scratch *sc, size_t *n) {
    const tt_step *m = &prog->final;
    size_t out = 0;
    for (size_t i = 0; i < *n; i++) {
        uint32_t lo = sc->cur[i].start, hi = sc->cur[i].end;
        uint32_t after;
        int starts = v->text[lo] == ' ' ||
                     (v->text[lo] == prog->repl[0] && same_bytes(v->text, lo, hi, prog->repl, prog->repl_len, &after));
        int prefix = !starts && (m->prepend == TT_PREPEND_ALWAYS || (m->prepend == TT_PREPEND_FIRST && lo == 0));
        size_t bound = TT_MAX_SEGS(hi - lo);
        if (GROW(sc->segs, sc->segs_cap, bound) || GROW(sc->next, sc->next_cap, out + bound)) return -1;
        size_t first = out;
        if (m->split) {
            /* a space or the replacement's UTF-8 found at a byte is a whole char there (the text is UTF-8) */
            size_t k = 0;
            uint32_t gap = lo;
            const uint8_t *text = v->text, r0 = prog->repl[0];
            for (uint32_t p = lo; (p = next_space_or(text, len, p, hi, r0)) < hi;) {
                uint32_t q = p + 1;
                if (text[p] == ' ' || same_bytes(text, p, hi, prog->repl, prog->repl_len, &q)) {
                    if (gap < p) sc->segs[k++] = (tt_seg){gap, p, 0};
                    sc->segs[k++] = (tt_seg){p, q, 1};
                    gap = q;
                }
                p = q;
            }
            if (gap == lo) { /* no delimiter */
                if (hi > lo) sc->next[out++] = (tt_piece){lo, hi, 0};
            } else {
                if (gap < hi) sc->segs[k++] = (tt_seg){gap, hi, 0};
                out += tt_apply_behavior(sc->segs, k, TT_BEHAVIOR_MERGED_WITH_NEXT, 0, sc->next + out);
            }
        } else {
            sc->next[out++] = (tt_piece){lo, hi, 0};
        }
        if (prefix) sc->next[first].flags |= TT_PIECE_PREFIX;
    }
    swap_pieces(sc);
    *n = out;
    return 0;
}

/* ByteLevel's regex split of [lo, hi) into Isolated pieces: the compiled DFA's, or the hand FSM's. */
static size_t gpt2_pieces(const tt_program *prog, const tt_view *v, uint32_t lo, uint32_t hi, tt_scratch *sc,
                          tt_piece *out) {
    return prog->final_rx ? tt_fsm_compiled_pieces(prog->final_rx, v, lo, hi, sc->rx_mem, out)
                          : tt_fsm_regex_pieces(v, lo, hi, TT_REGEX_GPT2, out);
}

/* ByteLevel: the prefix space is real text for the GPT-2 regex, so the piece is copied behind a
 * space; a match that is only that space becomes a prefix-only piece (start == end). */
static int run_bytelevel(const tt_program *prog, const tt_view *v, tt_scratch *sc, size_t *n) {
    const tt_step *b = &prog->final;
    if (!b->use_regex) { /* the pieces stay, each marked where the prefix space goes */
        for (size_t i = 0; i < *n; i++)
            sc->cur[i].flags = b->add_prefix_space && v->text[sc->cur[i].start] != ' ' ? TT_PIECE_PREFIX : 0;
        return 0;
    }
    size_t out = 0;
    if (prog->final_rx && !sc->rx_mem && !(sc->rx_mem = tt_rx_mem_new())) return -1;
    for (size_t i = 0; i < *n; i++) {
        uint32_t lo = sc->cur[i].start, hi = sc->cur[i].end;
        int prefix = b->add_prefix_space && v->text[lo] != ' ';
        size_t bound = TT_MAX_SEGS(hi - lo + 1);
        if (GROW(sc->segs, sc->segs_cap, bound) || GROW(sc->next, sc->next_cap, out + bound)) return -1;
        if (!prefix) {
            size_t got = gpt2_pieces(prog, v, lo, hi, sc, sc->next + out);
            if (got == TT_RX_OOM) return -1;
            out += got;
            continue;
        }
        uint32_t len = hi - lo + 1;
        if (GROW(sc->vbuf, sc->v_cap, 2 * (size_t)len)) return -1;
        uint8_t *vtext = sc->vbuf, *vtags = sc->vbuf + len;
        vtext[0] = ' ';
        memcpy(vtext + 1, v->text + lo, len - 1);
        if (!prog->final_rx) { /* the FSM reads the tags the program classified */
            vtags[0] = tt_atom_ascii[' '];
            memcpy(vtags + 1, v->tags + lo, len - 1);
        }
        tt_view pv = {vtext, vtags, NULL, v->props, v->run_ends};
        size_t got = gpt2_pieces(prog, &pv, 0, len, sc, sc->next + out);
        if (got == TT_RX_OOM) return -1;
        for (size_t j = 0; j < got; j++) {
            tt_piece *pc = &sc->next[out + j];
            pc->flags = pc->start == 0 ? TT_PIECE_PREFIX : 0;
            pc->start = pc->start ? lo + pc->start - 1 : lo;
            pc->end = lo + pc->end - 1;
        }
        out += got;
    }
    swap_pieces(sc);
    *n = out;
    return 0;
}

/* Splitting steps after ByteLevel see its output: every byte of a piece as its byte-level char, behind
 * the prefix space when the piece has one. The pieces are rendered back to back (each step re-splits
 * each piece on its own, so what lies between them does not matter), split there, and mapped back: a
 * rendered char stands for one original byte, so a piece can start or end inside a UTF-8 char, as in
 * stock; a piece of only the prefix space becomes a prefix-only piece. */
static int run_after_bytelevel(const tt_program *prog, const uint8_t *text, tt_scratch *sc, size_t *n) {
    if (prog->byte_steps) { /* without a prefix space, the pieces' bytes are the text the steps read */
        size_t i = 0;
        while (i < *n && !(sc->cur[i].flags & TT_PIECE_PREFIX)) i++;
        if (i == *n) {
            tt_view bv = {text, NULL, NULL, prog->props};
            for (size_t k = prog->n_before; k < prog->n_steps; k++)
                if (run_split(prog, k, &prog->byte_steps[k - prog->n_before], &bv, sc, n)) return -1;
            return 0;
        }
    }
    size_t rlen = 0;
    for (size_t i = 0; i < *n; i++) {
        rlen += (sc->cur[i].flags & TT_PIECE_PREFIX) ? 2 : 0;
        for (uint32_t b = sc->cur[i].start; b < sc->cur[i].end; b++) rlen += tt_bytelevel_map[text[b]] < 0x80 ? 1 : 2;
    }
    if (rlen > UINT32_MAX - 2 || GROW(sc->rtext, sc->rtext_cap, rlen) || GROW(sc->rfrom, sc->rfrom_cap, rlen) ||
        GROW(sc->rprefix, sc->rprefix_cap, rlen) || GROW(sc->rtags, sc->rtags_cap, rlen))
        return -1;
    uint32_t r = 0;
    for (size_t i = 0; i < *n; i++) {
        tt_piece *pc = &sc->cur[i];
        uint32_t start = r;
        if (pc->flags & TT_PIECE_PREFIX) {
            uint32_t len = utf8_encode(tt_bytelevel_map[' '], sc->rtext + r);
            for (uint32_t k = 0; k < len; k++, r++) sc->rfrom[r] = pc->start, sc->rprefix[r] = 1;
        }
        for (uint32_t b = pc->start; b < pc->end; b++) {
            uint32_t len = utf8_encode(tt_bytelevel_map[text[b]], sc->rtext + r);
            for (uint32_t k = 0; k < len; k++, r++) sc->rfrom[r] = b, sc->rprefix[r] = 0;
        }
        *pc = (tt_piece){start, r, 0};
    }
    if (prog->needs_atoms) tt_classify(TT_ALPHABET_ATOMS, sc->rtext, rlen, sc->rtags, NULL);
    if (prog->needs_scripts) {
        if (GROW(sc->rstags, sc->rstags_cap, rlen)) return -1;
        tt_classify(TT_ALPHABET_SCRIPTS, sc->rtext, rlen, sc->rstags, NULL);
    }
    tt_view rv = {sc->rtext, sc->rtags, sc->rstags, prog->props, &prog->run_ends};
    for (size_t i = prog->n_before; i < prog->n_steps; i++)
        if (run_split(prog, i, NULL, &rv, sc, n)) return -1;
    for (size_t i = 0; i < *n; i++) {
        tt_piece *pc = &sc->cur[i];
        uint32_t last = pc->end - 1;
        while (last > pc->start && (sc->rtext[last] & 0xC0) == 0x80) last--;
        uint32_t flags = sc->rprefix[pc->start] ? TT_PIECE_PREFIX : 0;
        uint32_t start = sc->rfrom[pc->start];
        uint32_t end = sc->rprefix[last] ? start : sc->rfrom[last] + 1; /* only the prefix: prefix-only piece */
        *pc = (tt_piece){start, end, flags};
    }
    return 0;
}

int tt_program_takes_matches(const tt_program *prog) { return prog->takes_matches; }

/* Whether matches are in order, apart (an empty one may touch the one before, not repeat it) and inside the
 * text, each on char starts. */
static int matches_fit(const uint8_t *text, size_t len, const uint32_t *matches, size_t n) {
    uint64_t prev_end = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t start = matches[2 * k], end = matches[2 * k + 1];
        if (start < prev_end || end < start || end > len || (k && start == end && start == matches[2 * k - 2]))
            return 0;
        if ((start < len && utf8_is_continuation(text[start])) || (end < len && utf8_is_continuation(text[end])))
            return 0;
        prev_end = end;
    }
    return 1;
}

int tt_program_run_given(const tt_program *prog, tt_scratch *sc, const uint8_t *text, size_t len,
                         const uint32_t *matches, size_t n_matches, const tt_piece **pieces, size_t *n_pieces) {
    if (!tt_program_takes_matches(prog)) return tt_program_run(prog, sc, text, len, pieces, n_pieces);
    *pieces = NULL;
    *n_pieces = 0;
    if (!matches) n_matches = 0;
    if (!matches_fit(text, len, matches, n_matches) || (len == 0 && n_matches)) return TT_GAVE_UP;
    sc->given = matches;
    sc->n_given = n_matches;
    int rc = tt_program_run(prog, sc, text, len, pieces, n_pieces);
    sc->given = NULL;
    sc->n_given = 0;
    return rc;
}

int tt_program_run(const tt_program *prog, tt_scratch *sc, const uint8_t *text, size_t len,
                   const tt_piece **pieces, size_t *n_pieces) {
    size_t n = 0;
    *pieces = NULL;
    *n_pieces = 0;
    if (len > UINT32_MAX - 2) return -1;
    if (GROW(sc->tags, sc->tags_cap, len ? len : 1) || GROW(sc->cur, sc->cur_cap, 1)) return -1;
    if (len == 0) { /* every pre-tokenizer drops the empty split; only the empty Sequence keeps it */
        sc->cur[0] = (tt_piece){0, 0, 0};
        *pieces = sc->cur;
        *n_pieces = prog->n_steps == 0 && !prog->has_final;
        return 0;
    }
    if (prog->needs_atoms) tt_classify(TT_ALPHABET_ATOMS, text, len, sc->tags, NULL);
    if (prog->needs_scripts) {
        if (GROW(sc->stags, sc->stags_cap, len)) return -1;
        tt_classify(TT_ALPHABET_SCRIPTS, text, len, sc->stags, NULL);
    }
    tt_view v = {text, sc->tags, sc->stags, prog->props, &prog->run_ends};
    sc->cur[0] = (tt_piece){0, (uint32_t)len, 0};
    n = 1;
    for (size_t i = 0; i < prog->n_before; i++) {
        int rc = run_split(prog, i, NULL, &v, sc, &n);
        if (rc) return rc;
    }
    if (prog->has_final) {
        int rc = prog->final.kind == TT_STEP_METASPACE ? run_metaspace(prog, &v, len, sc, &n)
                                                       : run_bytelevel(prog, &v, sc, &n);
        if (rc) return -1;
    }
    if (prog->n_before < prog->n_steps && n && run_after_bytelevel(prog, text, sc, &n)) return -1;
    *pieces = sc->cur;
    *n_pieces = n;
    return 0;
}

int tt_program_matches(const tt_program *prog, tt_scratch *sc, const uint8_t *text, size_t len,
                       const tt_seg **segs, size_t *n_segs) {
    *segs = NULL;
    *n_segs = 0;
    if (prog->n_steps != 1 || prog->has_final || !prog->rx[0] || tt_rx_has_segments(prog->rx[0]) || len > UINT32_MAX - 2)
        return -1;
    if (len == 0) return 0; /* tokenizers' find_matches looks for nothing in an empty string */
    if (GROW(sc->segs, sc->segs_cap, TT_MAX_SEGS(len))) return -1;
    if (!sc->rx_mem && !(sc->rx_mem = tt_rx_mem_new())) return -1;
    tt_view v = {text, NULL, NULL, prog->props, NULL};
    size_t n = tt_fsm_compiled(prog->rx[0], &v, 0, (uint32_t)len, sc->rx_mem, sc->segs);
    if (n == TT_RX_OOM) return -1;
    if (n == TT_RX_LIMIT) return TT_GAVE_UP;
    *segs = sc->segs;
    *n_segs = n;
    return 0;
}

/* Chars in text[a, b): whole words, then one masked word when it can be read without overrunning the
 * text (pieces are short, so avoiding a per-byte loop avoids a branch miss per piece). */
static inline int64_t count_chars(const uint8_t *text, size_t len, size_t a, size_t b) {
    int64_t n = (int64_t)(b - a);
    for (; a + 8 <= b; a += 8) n -= (int64_t)utf8_continuations8(text + a, 8);
    if (a == b) return n;
    if (a + 8 <= len) return n - (int64_t)utf8_continuations8(text + a, b - a);
    return n - (int64_t)(b - a - utf8_count_chars(text + a, b - a));
}

void tt_char_offsets(const uint8_t *text, size_t len, const tt_piece *pieces, size_t n, int64_t *out) {
    if (utf8_ascii_end(text, 0, len) == len) { /* chars are bytes */
        for (size_t i = 0; i < n; i++) {
            int prefix_only = pieces[i].start == pieces[i].end && (pieces[i].flags & TT_PIECE_PREFIX);
            out[2 * i] = pieces[i].start;
            out[2 * i + 1] = prefix_only ? pieces[i].start + 1 : pieces[i].end;
        }
        return;
    }
    size_t byte = 0;
    int64_t chars = 0;
    for (size_t i = 0; i < n; i++) {
        chars += count_chars(text, len, byte, pieces[i].start);
        /* a piece split after ByteLevel can start inside a char: it starts at that char, as in stock */
        out[2 * i] = chars - (pieces[i].start < len && (text[pieces[i].start] & 0xC0) == 0x80);
        if (pieces[i].start == pieces[i].end && (pieces[i].flags & TT_PIECE_PREFIX)) { /* aligned to the next char */
            out[2 * i + 1] = chars + 1;
            byte = pieces[i].start;
            continue;
        }
        chars += count_chars(text, len, pieces[i].start, pieces[i].end);
        out[2 * i + 1] = chars;
        byte = pieces[i].end;
    }
}
