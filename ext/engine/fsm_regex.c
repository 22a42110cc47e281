/* The regex pre-tokenizers real tokenizers ship, as hand-derived matchers with Oniguruma semantics:
 * alternatives are tried in order at each position, the first that matches wins, and quantifiers are
 * greedy with backtracking. Each `*_at` returns the end of the match starting at p, or p when no
 * alternative matches (none of these patterns can match the empty string).
 *
 *   gpt2   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   cl100k (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
 *          | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   qwen2  cl100k with \p{N} for \p{N}{1,3}
 *   o200k  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|...)?
 *          |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|...)?
 *          |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 */
#include "fsm_internal.h"

#define S_ TT_PROP_ONIG_S
#define L_ TT_PROP_L
#define N_ TT_PROP_N
#define NEWLINE (TT_PROP_CR | TT_PROP_LF)
#define UPPERISH TT_UPPERISH
#define LOWERISH TT_LOWERISH

/* The letter at q (ASCII, or under (?i) also a non-ASCII char onig folds onto one), or 0. */
static char letter_at(const tt_view *v, uint32_t q, uint32_t hi, int fold, uint32_t *next) {
    if (q >= hi) return 0;
    uint8_t b = v->text[q];
    if (b < 0x80) {
        *next = q + 1;
        return (char)(fold ? (b | 0x20) : b); /* |0x20 only ever equates a letter with its capital */
    }
    if (!fold) return 0;
    uint32_t cp = utf8_decode(v->text + q, NULL);
    for (size_t i = 0; i < TT_CI_FOLD_COUNT; i++) {
        if (tt_ci_fold_cp[i] == cp) {
            *next = tt_next(v, q);
            return tt_ci_fold_letter[i];
        }
    }
    return 0;
}

/* 's|'t|'re|'ve|'m|'ll|'d at p (case-insensitive when fold): end, or 0. */
static uint32_t contraction(const tt_view *v, uint32_t p, uint32_t hi, int fold) {
    uint32_t q, r;
    if (p >= hi || v->text[p] != '\'') return 0;
    switch (letter_at(v, p + 1, hi, fold, &q)) {
    case 's': case 't': case 'm': case 'd':
        return q;
    case 'r': case 'v':
        return letter_at(v, q, hi, fold, &r) == 'e' ? r : 0;
    case 'l':
        return letter_at(v, q, hi, fold, &r) == 'l' ? r : 0;
    default:
        return 0;
    }
}

/* \s+(?!\S)|\s+ at a whitespace char: a run followed by a non-space gives back its last char. */
static uint32_t whitespace_tail(const tt_view *v, uint32_t p, uint32_t hi) {
    uint32_t last = p, q = p;
    while (q < hi && (tt_props_at(v, q) & S_)) {
        last = q;
        q = tt_next(v, q);
    }
    return (q == hi || last == p) ? q : last;
}

/* \s*[\r\n]+: backtracking leaves the match ending after the last newline of the space run. */
static uint32_t space_then_newlines(const tt_view *v, uint32_t p, uint32_t hi) {
    uint32_t q = p, end = 0;
    while (q < hi && (tt_props_at(v, q) & S_)) {
        uint32_t props = tt_props_at(v, q);
        q = tt_next(v, q);
        if (props & NEWLINE) end = q;
    }
    return end;
}

/* " ?X+" where X is [^\s\p{L}\p{N}]: the optional space is taken only if X follows it. */
static uint32_t space_then_other(const tt_view *v, uint32_t p, uint32_t hi) {
    uint32_t s = p;
    if (v->text[p] == ' ' && p + 1 < hi && !(tt_props_at(v, p + 1) & (S_ | L_ | N_))) s = p + 1;
    if (tt_props_at(v, s) & (S_ | L_ | N_)) return p;
    return tt_run_not(v, s, hi, S_ | L_ | N_);
}

static uint32_t numbers_up_to(const tt_view *v, uint32_t p, uint32_t hi, int max) {
    uint32_t q = p;
    for (int k = 0; k < max && q < hi && (tt_props_at(v, q) & N_); k++) q = tt_next(v, q);
    return q;
}

static inline uint32_t gpt2_at(const tt_view *v, uint32_t p, uint32_t hi) {
    uint32_t e = v->text[p] == '\'' ? contraction(v, p, hi, 0) : 0;
    if (e) return e;
    uint32_t s = p;
    if (v->text[p] == ' ' && p + 1 < hi && (tt_props_at(v, p + 1) & (L_ | N_))) s = p + 1;
    uint32_t props = tt_props_at(v, s);
    if (props & L_) return tt_letter_run(v, s, hi);
    if (props & N_) return tt_run(v, s, hi, N_);
    e = space_then_other(v, p, hi);
    if (e > p) return e;
    return whitespace_tail(v, p, hi);
}

/* cl100k and qwen2 differ only in how many digits one match takes. */
static inline uint32_t cl100k_at(const tt_view *v, uint32_t p, uint32_t hi, int max_digits, uint32_t trail) {
    uint32_t e = v->text[p] == '\'' ? contraction(v, p, hi, 1) : 0;
    if (e) return e;
    uint32_t props = tt_props_at(v, p);
    if (props & L_) return tt_letter_run(v, p, hi);
    if (!(props & (NEWLINE | N_))) { /* [^\r\n\p{L}\p{N}]\p{L}+ */
        uint32_t q = tt_next(v, p);
        if (q < hi && (tt_props_at(v, q) & L_)) return tt_letter_run(v, q, hi);
    }
    if (props & N_) return numbers_up_to(v, p, hi, max_digits);
    e = space_then_other(v, p, hi);
    if (e > p) return tt_run(v, e, hi, trail);
    e = space_then_newlines(v, p, hi);
    if (e) return e;
    return (props & S_) ? whitespace_tail(v, p, hi) : p;
}

static inline uint32_t upper_run(const tt_view *v, uint32_t p, uint32_t hi) {
    return tt_long_run(v, v->run_ends ? &v->run_ends->upperish : NULL, p, hi, UPPERISH);
}

static inline uint32_t lower_run(const tt_view *v, uint32_t p, uint32_t hi) {
    return tt_long_run(v, v->run_ends ? &v->run_ends->lowerish : NULL, p, hi, LOWERISH);
}

/* [Lu Lt Lm Lo M]*[Ll Lm Lo M]+ from s: if the upper run is not followed by a lower char, the star
 * gives back chars until the last Lm/Lo/M of the run can serve as the one-char plus. */
static uint32_t upper_star_lower_plus(const tt_view *v, uint32_t s, uint32_t hi) {
    uint32_t u = upper_run(v, s, hi);
    if (u < hi && (tt_props_at(v, u) & LOWERISH)) return lower_run(v, u, hi);
    while (u > s) {
        uint32_t k = u - 1;
        while (v->tags[k] == TT_TAG_CONT) k--;
        if (tt_props_at(v, k) & LOWERISH) return u;
        u = k;
    }
    return 0;
}

/* [Lu Lt Lm Lo M]+[Ll Lm Lo M]* from s */
static uint32_t upper_plus_lower_star(const tt_view *v, uint32_t s, uint32_t hi) {
    if (s >= hi || !(tt_props_at(v, s) & UPPERISH)) return 0;
    return lower_run(v, upper_run(v, s, hi), hi);
}

static uint32_t with_contraction(const tt_view *v, uint32_t e, uint32_t hi) {
    uint32_t c = e < hi && v->text[e] == '\'' ? contraction(v, e, hi, 1) : 0;
    return c ? c : e;
}

static inline uint32_t o200k_at(const tt_view *v, uint32_t p, uint32_t hi) {
    uint32_t props = tt_props_at(v, p), e;
    int prefix_ok = !(props & (NEWLINE | L_ | N_));
    uint32_t q = tt_next(v, p);
    /* both letter alternatives need a cased-or-shared letter/mark right after the optional prefix */
    int letter_at_q = prefix_ok && q < hi && (tt_props_at(v, q) & (UPPERISH | LOWERISH));
    if (letter_at_q || (props & (UPPERISH | LOWERISH))) {
        if (letter_at_q && (e = upper_star_lower_plus(v, q, hi))) return with_contraction(v, e, hi);
        if ((e = upper_star_lower_plus(v, p, hi))) return with_contraction(v, e, hi);
        if (letter_at_q && (e = upper_plus_lower_star(v, q, hi))) return with_contraction(v, e, hi);
        if ((e = upper_plus_lower_star(v, p, hi))) return with_contraction(v, e, hi);
    }
    if (props & N_) return numbers_up_to(v, p, hi, 3);
    e = space_then_other(v, p, hi);
    if (e > p) return tt_run(v, e, hi, NEWLINE | TT_PROP_SLASH);
    e = space_then_newlines(v, p, hi);
    if (e) return e;
    return (props & S_) ? whitespace_tail(v, p, hi) : p;
}

static inline __attribute__((always_inline)) uint32_t match_at(tt_regex_kind kind, const tt_view *v,
                                                               uint32_t p, uint32_t hi) {
    switch (kind) {
    case TT_REGEX_GPT2: return gpt2_at(v, p, hi);
    case TT_REGEX_CL100K: return cl100k_at(v, p, hi, 3, NEWLINE);
    case TT_REGEX_QWEN2: return cl100k_at(v, p, hi, 1, NEWLINE);
    case TT_REGEX_O200K: return o200k_at(v, p, hi);
    }
    return p;
}

/* onig find_iter: matches, with the gaps between them as non-match segments (into segs), or straight as
 * the pieces the Isolated behavior makes of them (into pieces; neither is ever empty). Always inlined with
 * a constant kind and one constant NULL output, so each pattern gets its own loop with the matcher inlined. */
static inline __attribute__((always_inline)) size_t regex_loop(const tt_view *v, uint32_t lo, uint32_t hi,
                                                               tt_regex_kind kind, tt_seg *segs, tt_piece *pieces) {
    size_t n = 0;
    uint32_t gap = lo, p = lo;
    while (p < hi) {
        uint32_t e = match_at(kind, v, p, hi);
        if (e > p) {
            if (segs) {
                if (gap < p) segs[n++] = (tt_seg){gap, p, 0};
                segs[n++] = (tt_seg){p, e, 1};
            } else {
                if (gap < p) pieces[n++] = (tt_piece){gap, p, 0};
                pieces[n++] = (tt_piece){p, e, 0};
            }
            gap = p = e;
        } else {
            p = tt_next(v, p);
        }
    }
    if (gap < hi) {
        if (segs) segs[n++] = (tt_seg){gap, hi, 0};
        else pieces[n++] = (tt_piece){gap, hi, 0};
    }
    return n;
}

size_t tt_fsm_regex(const tt_view *v, uint32_t lo, uint32_t hi, tt_regex_kind kind, tt_seg *out) {
    switch (kind) {
    case TT_REGEX_GPT2: return regex_loop(v, lo, hi, TT_REGEX_GPT2, out, NULL);
    case TT_REGEX_CL100K: return regex_loop(v, lo, hi, TT_REGEX_CL100K, out, NULL);
    case TT_REGEX_QWEN2: return regex_loop(v, lo, hi, TT_REGEX_QWEN2, out, NULL);
    case TT_REGEX_O200K: return regex_loop(v, lo, hi, TT_REGEX_O200K, out, NULL);
    }
    return 0;
}

size_t tt_fsm_regex_pieces(const tt_view *v, uint32_t lo, uint32_t hi, tt_regex_kind kind, tt_piece *out) {
    switch (kind) {
    case TT_REGEX_GPT2: return regex_loop(v, lo, hi, TT_REGEX_GPT2, NULL, out);
    case TT_REGEX_CL100K: return regex_loop(v, lo, hi, TT_REGEX_CL100K, NULL, out);
    case TT_REGEX_QWEN2: return regex_loop(v, lo, hi, TT_REGEX_QWEN2, NULL, out);
    case TT_REGEX_O200K: return regex_loop(v, lo, hi, TT_REGEX_O200K, NULL, out);
    }
    return 0;
}
