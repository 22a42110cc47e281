/* The compiled-regex executor: a backtracking VM over character classes with onig's semantics.
 *
 * The program (built by the caller from a pattern) is a list of 4-word instructions; a code point's
 * class comes from a 2-level table and each set is a bitmap over classes, so this file knows nothing
 * about Unicode. Priority is leftmost-first: SPLIT tries its first target, then its second.
 *
 * A lookbehind whose alternative has a fixed length starts its body with BACK, which steps that many chars
 * back; the body then ends where the lookbehind stands. One of varying length runs its body reversed and
 * backward from where it stands (each SET takes the char before the position): any match is a start from
 * which the alternative reaches the lookbehind, which is all a lookbehind asks (onig's answer too).
 *
 * Lookarounds and atomic groups are sub-programs after the main one, each run to its first match in
 * priority order: a lookaround then goes on where it stands, an atomic group from that match's end, never
 * trying the body's other matches (onig's `(?>..)`; a possessive quantifier is one around its repeat).
 *
 * Linear time: a SPLIT entered twice at the same position is a failure the second time (no
 * captures, so the rest of the match depends only on (pc, pos)). The memo survives from one search
 * start to the next within a piece, except at the end of a found match, whose column is cleared
 * because the success path passed through it. A sub-program's first match is a function of the position
 * alone, cached per (sub-program, position); inside one run of its body a generation-stamped memo plays
 * the same role.
 *
 * A program with backreferences (SAVE and REF in its main part, never in a sub-program) keeps
 * captures: SAVE records a group's bound (undone on backtracking), REF matches the bytes the group last
 * took, and fails while the group has taken none. A SPLIT from which a REF can be reached runs without
 * the memo, as onig does; backtracking is bounded per search start (TT_RX_BACKTRACK_LIMIT).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "regex_internal.h"


static void *dup(const void *src, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (p && bytes) memcpy(p, src, bytes);
    return p;
}

void tt_rx_free(tt_rx *rx) {
    if (!rx) return;
    free(rx->code); free(rx->stage1); free(rx->stage2); free(rx->sets);
    free(rx->key_base); free(rx->key_pc); free(rx->key_count); free(rx->class_starts); free(rx->segment_of);
    free(rx->reaches_ref);
    free(rx);
}

static tt_rx *reject(tt_rx *rx, char *err, size_t err_len, const char *msg) {
    if (err && err_len) snprintf(err, err_len, "compiled regex: %s", msg);
    tt_rx_free(rx);
    return NULL;
}

/* rx->segment_of and segment_chars from the spec's segments; what is wrong with them, or NULL. */
static const char *segments_of(tt_rx *rx, const tt_rx_spec *s) {
    if (!s->n_segments) return NULL;
    if (s->n_segments > TT_RX_MAX_SEGMENTS) return "too many segment sets";
    if (!(rx->segment_of = calloc(rx->n_classes, 1))) return "out of memory";
    for (uint32_t k = 0; k < s->n_segments; k++) {
        uint32_t set = s->segments[2 * k];
        if (set >= rx->n_sets) return "segment set out of range";
        rx->segment_chars[k + 1] = s->segments[2 * k + 1];
        for (uint32_t c = 0; c < rx->n_classes; c++) {
            if (!tt_rx_set_has(rx, set, c)) continue;
            if (rx->segment_of[c]) return "segment sets overlap";
            rx->segment_of[c] = (uint8_t)(k + 1);
        }
    }
    return NULL;
}

/* rx->reaches_ref: a pc reaches a REF when one of the instructions it can go on to does (a LOOK or ATOMIC
 * goes on past its body, which holds none), to a fixed point over the program's loops. -1 on OOM. */
static int find_ref_reach(tt_rx *rx) {
    if (!(rx->reaches_ref = calloc(rx->n_code, 1))) return -1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t pc = rx->n_code; pc-- > 0;) {
            const int32_t *in = rx->code + 4 * pc;
            uint8_t *r = rx->reaches_ref;
            int reach = in[0] == RX_REF ||
                        (in[0] == RX_SPLIT ? r[in[1]] || r[in[2]]
                         : in[0] == RX_JMP ? r[in[1]]
                         : in[0] != RX_MATCH && r[pc + 1]);
            if (reach && !r[pc]) r[pc] = 1, changed = 1;
        }
    }
    return 0;
}

/* Copies and validates the spec so a malformed program is an error here, never a crash or a hang. */
tt_rx *tt_rx_new(const tt_rx_spec *s, char *err, size_t err_len) {
    tt_rx *rx = calloc(1, sizeof *rx);
    if (!rx) return reject(rx, err, err_len, "out of memory");
    if (!s->n_code || !s->n_classes || s->n_classes > 0x10000 || s->n_stage2 % 256 || !s->n_stage2 ||
        s->n_main_splits > s->n_splits)
        return reject(rx, err, err_len, "bad sizes");
    rx->n_code = s->n_code;
    rx->words = (s->n_classes + 63) / 64;
    rx->n_main_splits = s->n_main_splits;
    rx->n_splits = s->n_splits;
    rx->n_subs = s->n_subs;
    rx->first_set = s->first_set;
    rx->n_classes = s->n_classes;
    rx->n_sets = s->n_sets;
    static uint64_t serials;
    rx->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
    if (s->first_set < -1 || (s->first_set >= 0 && (uint32_t)s->first_set >= s->n_sets))
        return reject(rx, err, err_len, "first_set out of range");
    rx->code = dup(s->code, 4 * sizeof(int32_t) * s->n_code);
    rx->stage1 = dup(s->stage1, 0x1100 * sizeof(uint16_t));
    rx->stage2 = dup(s->stage2, s->n_stage2 * sizeof(uint16_t));
    rx->sets = dup(s->sets, (size_t)s->n_sets * rx->words * sizeof(uint64_t));
    if (!rx->code || !rx->stage1 || !rx->stage2 || !rx->sets) return reject(rx, err, err_len, "out of memory");
    for (uint32_t i = 0; i < 0x1100; i++)
        if ((uint32_t)rx->stage1[i] * 256 >= s->n_stage2) return reject(rx, err, err_len, "stage1 out of range");
    for (uint32_t i = 0; i < s->n_stage2; i++)
        if (rx->stage2[i] >= s->n_classes) return reject(rx, err, err_len, "class id out of range");
    for (uint32_t pc = 0; pc < rx->n_code; pc++) {
        const int32_t *in = rx->code + 4 * pc;
        int32_t op = in[0], a = in[1], b = in[2], c = in[3];
        int ok;
        switch (op) {
        case RX_MATCH: ok = 1; break;
        case RX_SET: ok = a >= 0 && (uint32_t)a < s->n_sets && pc + 1 < rx->n_code; break;
        case RX_SPLIT:
            ok = a >= 0 && (uint32_t)a < rx->n_code && b >= 0 && (uint32_t)b < rx->n_code && c >= 0 &&
                 (uint32_t)c < s->n_splits;
            break;
        case RX_JMP: ok = a >= 0 && (uint32_t)a < rx->n_code; break;
        case RX_RUN: /* possessive set repeat: at least b, at most c (c < 0: unbounded) */
            ok = a >= 0 && (uint32_t)a < s->n_sets && b >= 0 && (c < 0 || c >= b) && pc + 1 < rx->n_code;
            break;
        case RX_LOOK: case RX_ATOMIC: /* a sub-program after it: recursion depth is bounded by the code size */
            ok = (uint32_t)a > pc && (uint32_t)a < rx->n_code && b >= 0 &&
                 b <= (op == RX_LOOK ? (RX_LOOK_NEGATE | RX_LOOK_BEHIND) : 0) && c >= 0 &&
                 (uint32_t)c < s->n_subs && pc + 1 < rx->n_code;
            break;
        case RX_BACK: ok = a >= 0 && pc + 1 < rx->n_code; break; /* a lookbehind body's start: a chars back */
        case RX_SAVE: /* slot a := pos (2g: group g's start, 2g + 1: its end) */
            ok = a >= 0 && a < 2 * RX_MAX_GROUPS && pc + 1 < rx->n_code;
            if (ok && (uint32_t)a + 2 - (a & 1) > rx->n_slots) rx->n_slots = (uint32_t)a + 2 - (a & 1);
            break;
        case RX_REF: ok = a >= 0 && a < RX_MAX_GROUPS && pc + 1 < rx->n_code; break; /* group a's text again */
        case RX_ASSERT:
            ok = a >= 0 && a < RX_ASSERT_COUNT && pc + 1 < rx->n_code &&
                 ((a != RX_WORD_B && a != RX_NOT_WORD_B) || (b >= 0 && (uint32_t)b < s->n_sets));
            break;
        default: ok = 0;
        }
        if (!ok) return reject(rx, err, err_len, "malformed instruction");
    }
    /* BACK starts a lookbehind's body and only that: elsewhere it could end a match before its start. */
    for (uint32_t pc = 0; pc < rx->n_code; pc++) {
        if (rx->code[4 * pc] != RX_BACK) continue;
        int starts_body = 0;
        for (uint32_t look = 0; look < rx->n_code && !starts_body; look++)
            starts_body = rx->code[4 * look] == RX_LOOK && (uint32_t)rx->code[4 * look + 1] == pc;
        if (!starts_body) return reject(rx, err, err_len, "BACK outside a lookbehind's start");
    }
    /* A cycle of JMPs alone would never consume input nor meet a memoised SPLIT. */
    for (uint32_t pc = 0; pc < rx->n_code; pc++) {
        uint32_t p = pc, hops = 0;
        while (rx->code[4 * p] == RX_JMP && hops++ <= rx->n_code) p = (uint32_t)rx->code[4 * p + 1];
        if (hops > rx->n_code) return reject(rx, err, err_len, "jump cycle");
    }
    for (uint32_t pc = 0; pc < rx->n_code; pc++)
        if (rx->code[4 * pc] == RX_REF && 2 * (uint32_t)rx->code[4 * pc + 1] + 1 >= rx->n_slots)
            return reject(rx, err, err_len, "REF to a group no SAVE bounds");
    if (rx->n_slots && find_ref_reach(rx)) return reject(rx, err, err_len, "out of memory");
    const char *why = segments_of(rx, s);
    if (why) return reject(rx, err, err_len, why);
    if (tt_rx_dfa_prepare(rx, s->backtrack_only)) return reject(rx, err, err_len, "out of memory");
    return rx;
}

tt_rx_mem *tt_rx_mem_new(void) { return calloc(1, sizeof(tt_rx_mem)); }

void tt_rx_mem_free(tt_rx_mem *m) {
    if (!m) return;
    free(m->memo); free(m->stamps); free(m->subs); free(m->stack); free(m->caps);
    tt_rx_dfa_free_all(m);
    free(m);
}

typedef struct {
    const tt_rx *rx;
    tt_rx_mem *m;
    const uint8_t *text;
    uint32_t lo, hi;
    int oom;
    uint64_t back_steps; /* chars stepped backward in this piece: each lookbehind of varying length may walk
                          * back to the piece's start, so a piece past BACK_BUDGET goes to stock */
} ctx;

/* Backward steps a piece of `width` bytes may take before it is handed to stock (TT_RX_LIMIT). */
#define BACK_BUDGET(width) (TT_RX_BACKTRACK_LIMIT + 64 * (uint64_t)(width))

static inline int in_set(const tt_rx *rx, uint32_t set, uint32_t cp) {
    return tt_rx_set_has(rx, set, tt_rx_class(rx, cp));
}

static inline uint32_t prev_start(const uint8_t *text, uint32_t lo, uint32_t p) {
    do p--; while (p > lo && (text[p] & 0xC0) == 0x80);
    return p;
}

static int assertion(const ctx *x, int32_t kind, int32_t word_set, uint32_t pos) {
    const uint8_t *t = x->text;
    switch (kind) {
    case RX_LINE_BEGIN: return pos == x->lo || (pos < x->hi && t[pos - 1] == '\n'); /* onig: not at the end */
    case RX_LINE_END: return pos == x->hi || t[pos] == '\n';
    case RX_TEXT_BEGIN: return pos == x->lo;
    case RX_TEXT_END: return pos == x->hi;
    case RX_TEXT_END_NL: return pos == x->hi || (pos + 1 == x->hi && t[pos] == '\n');
    default: {
        int before = pos > x->lo
                     && in_set(x->rx, (uint32_t)word_set, utf8_decode(t + prev_start(t, x->lo, pos), NULL));
        int after = pos < x->hi && in_set(x->rx, (uint32_t)word_set, utf8_decode(t + pos, NULL));
        return (before != after) == (kind == RX_WORD_B);
    }
    }
}

static inline int push(ctx *x, uint32_t pc, uint32_t pos) {
    tt_rx_mem *m = x->m;
    if (grow_reserve(&m->stack, &m->stack_cap, m->sp + 2, sizeof(uint32_t))) return x->oom = 1, -1;
    m->stack[m->sp++] = pc;
    m->stack[m->sp++] = pos;
    return 0;
}

static int64_t sub_match(ctx *x, uint32_t id, uint32_t sub, uint32_t pos, int backward);

#define RX_RESTORE 0x80000000u /* a stack entry that puts a capture slot back when popped */
#define RX_UNSET UINT32_MAX

/* Whether split k was entered at pos before (then it fails now), marking it entered: in the main program's
 * memo, or a sub-program's generation stamps. */
static inline int entered_before(const ctx *x, uint32_t k, uint32_t pos, uint32_t gen) {
    const tt_rx *rx = x->rx;
    tt_rx_mem *m = x->m;
    if (k < rx->n_main_splits) {
        size_t bit = (size_t)(pos - x->lo) * rx->n_main_splits + k;
        if (m->memo[bit >> 6] >> (bit & 63) & 1) return 1;
        m->memo[bit >> 6] |= 1ull << (bit & 63);
        return 0;
    }
    uint32_t *stamp = &m->stamps[(size_t)(pos - x->lo) * (rx->n_splits - rx->n_main_splits) + (k - rx->n_main_splits)];
    if (*stamp == gen) return 1;
    *stamp = gen;
    return 0;
}

/* Runs from (pc, pos) to the first MATCH in priority order: the match end, -1 (none, or OOM with x->oom), or
 * -2 past the step limit or the backward budget. With `captures` (the main program of one with
 * backreferences, from pc 0) it keeps the capture slots, and a SPLIT from which a REF can be reached goes
 * without the memo, counted against TT_RX_BACKTRACK_LIMIT with every backtrack; without, SAVE is passed over
 * and REF fails (the compiler keeps both out of sub-programs). `backward` (a reversed lookbehind body): each
 * SET takes the char before the position, and the match "end" is where the body started. Specialised by the
 * constant flags. */
static inline __attribute__((always_inline)) int64_t walk(ctx *x, uint32_t pc0, uint32_t pos0, uint32_t gen,
                                                          const int captures, const int backward) {
    const tt_rx *rx = x->rx;
    tt_rx_mem *m = x->m;
    uint32_t *caps = m->caps, steps = 0;
    const size_t base = m->sp;
    if (captures)
        for (uint32_t k = 0; k < rx->n_slots; k++) caps[k] = RX_UNSET;
    if (push(x, pc0, pos0)) return -1;
    while (m->sp > base) {
        uint32_t pos = m->stack[--m->sp];
        uint32_t pc = m->stack[--m->sp];
        if (captures) {
            if (pc & RX_RESTORE) {
                caps[pc & ~RX_RESTORE] = pos;
                continue;
            }
            if (++steps > TT_RX_BACKTRACK_LIMIT) return -2;
        }
        for (;;) {
            const int32_t *in = rx->code + 4 * pc;
            if (in[0] == RX_SET && backward) {
                if (pos <= x->lo) break;
                if (++x->back_steps > BACK_BUDGET(x->hi - x->lo)) return -2;
                uint32_t before = prev_start(x->text, x->lo, pos);
                if (!in_set(rx, (uint32_t)in[1], utf8_decode(x->text + before, NULL))) break;
                pos = before;
                pc++;
            } else if (in[0] == RX_SET) {
                if (pos >= x->hi || !in_set(rx, (uint32_t)in[1], utf8_decode(x->text + pos, NULL))) break;
                pos = pos + utf8_char_len(x->text[pos]);
                pc++;
            } else if (in[0] == RX_SPLIT) {
                if (!captures || (!rx->reaches_ref[pc] && (uint32_t)in[3] < rx->n_main_splits)) {
                    if (entered_before(x, (uint32_t)in[3], pos, gen)) break;
                } else if (++steps > TT_RX_BACKTRACK_LIMIT) {
                    return -2;
                }
                if (push(x, (uint32_t)in[2], pos)) return -1;
                pc = (uint32_t)in[1];
            } else if (in[0] == RX_RUN) {
                uint32_t got = 0, limit = in[3] < 0 ? UINT32_MAX : (uint32_t)in[3];
                while (got < limit && pos < x->hi && in_set(rx, (uint32_t)in[1], utf8_decode(x->text + pos, NULL))) {
                    pos += utf8_char_len(x->text[pos]);
                    got++;
                }
                if (got < (uint32_t)in[2]) break;
                pc++;
            } else if (in[0] == RX_JMP) {
                pc = (uint32_t)in[1];
            } else if (in[0] == RX_MATCH) {
                m->sp = base;
                return pos;
            } else if (in[0] == RX_BACK) { /* the body then matches forward, to where the lookbehind stands */
                uint32_t back = (uint32_t)in[1];
                for (; back && pos > x->lo; back--) pos = prev_start(x->text, x->lo, pos);
                if (back) break;
                pc++;
            } else if (in[0] == RX_LOOK || in[0] == RX_ATOMIC) {
                int64_t end = sub_match(x, (uint32_t)in[3], (uint32_t)in[1], pos, in[2] & RX_LOOK_BEHIND);
                if (x->oom) return -1;
                if (end == -2) return -2;
                if ((end >= 0) == (in[2] & RX_LOOK_NEGATE)) break;
                if (in[0] == RX_ATOMIC) pos = (uint32_t)end;
                pc++;
            } else if (in[0] == RX_ASSERT) {
                if (!assertion(x, in[1], in[2], pos)) break;
                pc++;
            } else if (in[0] == RX_SAVE) {
                if (captures) {
                    if (push(x, (uint32_t)in[1] | RX_RESTORE, caps[in[1]])) return -1;
                    caps[in[1]] = pos;
                }
                pc++;
            } else { /* RX_REF: the bytes the group last took, again; none while it took none */
                if (!captures) break;
                uint32_t from = caps[2 * in[1]], to = caps[2 * in[1] + 1];
                if (from == RX_UNSET || to == RX_UNSET || to < from || to - from > x->hi - pos ||
                    memcmp(x->text + pos, x->text + from, to - from))
                    break;
                pos += to - from;
                pc++;
            }
        }
    }
    return -1;
}

static int64_t run(ctx *x, uint32_t pc0, uint32_t pos0, uint32_t gen) { return walk(x, pc0, pos0, gen, 0, 0); }

static int64_t run_backward(ctx *x, uint32_t pc0, uint32_t pos0, uint32_t gen) {
    return walk(x, pc0, pos0, gen, 0, 1);
}

static int64_t run_captures(ctx *x, uint32_t pos0) { return walk(x, 0, pos0, 0, 1, 0); }

/* The end of sub-program `id`'s first match from pos (its body at pc `sub`, run backward when `backward`), -1
 * when none (or OOM, x->oom), -2 past the backward budget. */
static int64_t sub_match(ctx *x, uint32_t id, uint32_t sub, uint32_t pos, int backward) {
    tt_rx_mem *m = x->m;
    uint32_t *cached = &m->subs[(size_t)(pos - x->lo) * x->rx->n_subs + id];
    if (*cached) return *cached == 1 ? -1 : (int64_t)(*cached - 2 + x->lo);
    if (++m->gen == 0) { /* wrapped: forget every stamp */
        memset(m->stamps, 0, m->stamps_cap * sizeof(uint32_t));
        m->gen = 1;
    }
    int64_t end = backward ? run_backward(x, sub, pos, m->gen) : run(x, sub, pos, m->gen);
    if (x->oom) return -1;
    if (end == -2) return -2; /* not cached: the piece goes to stock */
    *cached = end >= 0 ? (uint32_t)(end - x->lo) + 2 : 1;
    return end;
}

/* Clears the VM's per-piece memo for [lo, hi]. */
static int vm_prepare(const tt_rx *rx, tt_rx_mem *m, uint32_t lo, uint32_t hi) {
    size_t width = (size_t)hi - lo + 1;
    size_t memo_words = (width * rx->n_main_splits + 63) / 64;
    size_t n_stamps = width * (rx->n_splits - rx->n_main_splits);
    if (grow_reserve(&m->memo, &m->memo_cap, memo_words ? memo_words : 1, sizeof(uint64_t)) ||
        grow_reserve(&m->subs, &m->subs_cap, width * rx->n_subs + 1, sizeof(uint32_t)))
        return -1;
    if (n_stamps > m->stamps_cap) {
        if (grow_reserve(&m->stamps, &m->stamps_cap, n_stamps, sizeof(uint32_t))) return -1;
        memset(m->stamps, 0, m->stamps_cap * sizeof(uint32_t));
        m->gen = 0;
    } else if (n_stamps) {
        memset(m->stamps, 0, n_stamps * sizeof(uint32_t));
        m->gen = 0;
    }
    if (grow_reserve(&m->caps, &m->caps_cap, rx->n_slots + 1, sizeof(uint32_t))) return -1;
    memset(m->memo, 0, memo_words * sizeof(uint64_t));
    memset(m->subs, 0, width * rx->n_subs * sizeof(uint32_t));
    m->sp = 0;
    return 0;
}

/* tt_rx_segments over [lo, hi), each match found by the DFA when the program has one, else by the VM. */
size_t tt_fsm_compiled(const tt_rx *rx, const tt_view *v, uint32_t lo, uint32_t hi, tt_rx_mem *m,
                       tt_seg *out) {
    if (rx->key_base) return tt_rx_dfa_segments(rx, m, v->text, lo, hi, out);
    if (vm_prepare(rx, m, lo, hi)) return TT_RX_OOM;
    ctx x = {rx, m, v->text, lo, hi, 0, 0};
    tt_rx_segments it = tt_rx_segments_begin(out, lo);
    while (it.search <= hi) {
        int64_t end = -1;
        uint32_t start = it.search;
        for (;;) {
            if (rx->first_set >= 0) { /* no match can start on a char outside first_set */
                while (start < hi && !in_set(rx, (uint32_t)rx->first_set, utf8_decode(v->text + start, NULL)))
                    start += utf8_char_len(v->text[start]);
                if (start >= hi) break;
            }
            end = rx->n_slots ? run_captures(&x, start) : run(&x, 0, start, 0);
            if (x.oom) return TT_RX_OOM;
            if (end == -2) return TT_RX_LIMIT;
            if (end >= 0 || start >= hi) break;
            start = start + utf8_char_len(v->text[start]);
        }
        if (end < 0) break;
        int took = tt_rx_segments_take(&it, v->text, hi, start, (uint32_t)end, 0);
        if (took < 0) break;
        if (took && rx->n_main_splits) { /* the success path passed through this column */
            size_t first = (size_t)(end - lo) * rx->n_main_splits;
            for (size_t b = first; b < first + rx->n_main_splits; b++) m->memo[b >> 6] &= ~(1ull << (b & 63));
        }
    }
    return tt_rx_segments_end(&it, hi);
}
