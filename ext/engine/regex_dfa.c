/* A lazily built leftmost-first DFA for compiled regexes whose constructs need no backtracking.
 *
 * A DFA state is the priority-ordered list of threads waiting to read the next char; a thread is an
 * instruction, plus its repeat count for a possessive RUN. The transition on the class of the char at
 * the current position (or on end of text) first follows the epsilon moves in priority order, which
 * is where the next char decides one-char lookaheads (`(?!\S)`, `(?=[\p{L}])`), `$`, `\z` and whether a
 * possessive run must go on; reaching MATCH records a match *before* that char and drops every
 * lower-priority thread (onig's leftmost-first: a later, longer match can only come from a thread that
 * outranks it). Then each SET thread whose set holds the char moves on. This is the Pike-VM order,
 * which gives the backtracking VM's (and onig's) answer because no construct here looks behind or
 * captures; programs with other assertions or lookarounds run on the VM.
 *
 * Transitions are computed on first use and cached per thread of execution (in tt_rx_mem, keyed by
 * the program's serial), so the program itself stays immutable and shareable. When the cache reaches
 * its size bound it is emptied and rebuilt on demand, so memory stays bounded on any input.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "regex_internal.h"

#define DEAD 0u  /* the empty thread list: no match can be extended */
#define START 1u /* [pc 0] */
#define TRANS_BUDGET (8u << 20) /* bytes of transition table per program and thread */
#define MAX_KEYS (1u << 22)
#define THREADS_BUDGET MAX_KEYS /* thread-list entries of all states (one state's list always fits) */
#define MAX_DFAS_PER_MEM 32

struct tt_rx_dfa {
    uint64_t serial;
    uint32_t n_cols;                     /* classes, then end of text */
    int32_t *trans; uint32_t trans_rows; /* [state * n_cols + col]: next << 1 | matched, or -1 */
    int32_t *cuts;                       /* [state * n_cols + col]: the step of the cut loop (CUT_*), or -1 */
    uint32_t resets;                     /* times the cache was emptied (a state id from before names another) */
    int can_cut;                         /* the program suits the cut loop (cut_pieces): 1, 0, or -1 unknown */
    uint32_t n_states, max_states;
    uint32_t *state_start;               /* [state]: first thread; [n_states]: end */
    uint32_t *threads; size_t threads_cap;
    uint32_t *slots; uint32_t slot_mask; /* hash of thread lists: state + 1, 0 empty */
    uint32_t *seen, *emitted, gen;       /* per key, by generation */
    uint32_t *stack; size_t stack_cap;
    uint32_t *out; size_t out_cap;
};

/* ---------------------------------------------------------------- which programs run as a DFA */

static int32_t run_cap(const int32_t *in) { return in[3] < 0 ? in[2] : in[3]; } /* counts told apart */

/* Whether every instruction reachable from pc 0 (outside lookaround bodies) is one the DFA runs. */
static int dfa_runs(const tt_rx *rx) {
    uint8_t *seen = calloc(rx->n_code, 1);
    uint32_t *todo = malloc(rx->n_code * 2 * sizeof(uint32_t) + sizeof(uint32_t));
    int ok = seen && todo;
    size_t n = 0;
    if (ok) todo[n++] = 0;
    while (ok && n) {
        uint32_t pc = todo[--n];
        if (seen[pc]) continue;
        seen[pc] = 1;
        const int32_t *in = rx->code + 4 * pc;
        switch (in[0]) {
        case RX_MATCH: break;
        case RX_SET: todo[n++] = pc + 1; break;
        case RX_JMP: todo[n++] = (uint32_t)in[1]; break;
        case RX_SPLIT: todo[n++] = (uint32_t)in[1]; todo[n++] = (uint32_t)in[2]; break;
        case RX_RUN: ok = run_cap(in) <= 0xFFFF; todo[n++] = pc + 1; break;
        case RX_LOOK: { /* a one-char lookahead: the body is one set, then MATCH */
            uint32_t body = (uint32_t)in[1];
            ok = !(in[2] & RX_LOOK_BEHIND) && body + 1 < rx->n_code && rx->code[4 * body] == RX_SET &&
                 rx->code[4 * body + 4] == RX_MATCH;
            todo[n++] = pc + 1;
            break;
        }
        case RX_ASSERT: /* only those the next char decides; `$` carries the newline set in b */
            ok = in[1] == RX_TEXT_END || (in[1] == RX_LINE_END && in[2] >= 0 && (uint32_t)in[2] < rx->n_sets);
            todo[n++] = pc + 1;
            break;
        default: ok = 0;
        }
    }
    free(seen);
    free(todo);
    return ok;
}

/* byte_starts and second_starts from class_starts: a lead byte followed by a second byte starts a match
 * when some char of that code point range does (by 256-char block of the class table for 4-byte chars). */
static int lead_starts(tt_rx *rx) {
    uint32_t n_blocks = 0;
    for (uint32_t i = 0; i < 0x1100; i++)
        if (rx->stage1[i] >= n_blocks) n_blocks = rx->stage1[i] + 1u;
    uint8_t *block_starts = calloc(n_blocks, 1);
    if (!block_starts) return -1;
    for (uint32_t blk = 0; blk < n_blocks; blk++)
        for (uint32_t j = 0; j < 256 && !block_starts[blk]; j++) block_starts[blk] = rx->class_starts[rx->stage2[blk * 256 + j]];
    memset(rx->byte_starts, 0, sizeof rx->byte_starts);
    memcpy(rx->byte_starts, rx->ascii_starts, 128);
    for (uint32_t b = 0xC0; b < 256; b++) {
        uint64_t second = 0;
        for (uint32_t s = 0; s < 64; s++) {
            int starts = 0;
            if (b >= 0xC2 && b <= 0xDF) {
                starts = rx->class_starts[tt_rx_class(rx, (b & 0x1F) << 6 | s)];
            } else if (b >= 0xE0 && b <= 0xEF) {
                uint32_t first = (b & 0x0F) << 12 | s << 6;
                for (uint32_t cp = first; cp < first + 64 && !starts; cp++) starts = rx->class_starts[tt_rx_class(rx, cp)];
            } else if (b >= 0xF0 && b <= 0xF4) {
                uint32_t first = (b & 0x07) << 18 | s << 12;
                for (uint32_t cp = first; cp < first + 0x1000 && cp < 0x110000 && !starts; cp += 256)
                    starts = block_starts[rx->stage1[cp >> 8]];
            } else {
                starts = 1; /* never in valid UTF-8: decided by decoding, as without these tables */
            }
            second |= (uint64_t)starts << s;
        }
        rx->second_starts[b - 0xC0] = second;
        rx->byte_starts[b] = second != 0;
    }
    free(block_starts);
    tt_nibble_set_build(&rx->start_set, rx->byte_starts);
    return 0;
}

int tt_rx_dfa_prepare(tt_rx *rx, int backtrack_only) {
    for (uint32_t b = 0; b < 128; b++) rx->ascii_class[b] = (uint16_t)tt_rx_class(rx, b);
    if (backtrack_only || !dfa_runs(rx)) return 0;
    if (rx->first_set >= 0) {
        if (!(rx->class_starts = malloc(rx->n_classes))) return -1;
        for (uint32_t c = 0; c < rx->n_classes; c++) rx->class_starts[c] = (uint8_t)tt_rx_set_has(rx, (uint32_t)rx->first_set, c);
        for (uint32_t b = 0; b < 128; b++) rx->ascii_starts[b] = rx->class_starts[rx->ascii_class[b]];
        if (lead_starts(rx)) return -1;
    }
    uint64_t n_keys = 0;
    for (uint32_t pc = 0; pc < rx->n_code; pc++) {
        const int32_t *in = rx->code + 4 * pc;
        n_keys += in[0] == RX_RUN ? (uint64_t)run_cap(in) + 1 : 1;
    }
    if (n_keys > MAX_KEYS) return 0;
    rx->key_base = malloc((rx->n_code + 1) * sizeof(uint32_t));
    rx->key_pc = malloc(n_keys * sizeof(uint32_t));
    rx->key_count = malloc(n_keys * sizeof(uint16_t));
    if (!rx->key_base || !rx->key_pc || !rx->key_count) {
        free(rx->key_base); free(rx->key_pc); free(rx->key_count);
        rx->key_base = rx->key_pc = NULL;
        rx->key_count = NULL;
        return -1; /* class_starts is freed with rx */
    }
    uint32_t key = 0;
    for (uint32_t pc = 0; pc < rx->n_code; pc++) {
        const int32_t *in = rx->code + 4 * pc;
        uint32_t counts = in[0] == RX_RUN ? (uint32_t)run_cap(in) + 1 : 1;
        rx->key_base[pc] = key;
        for (uint32_t k = 0; k < counts; k++, key++) {
            rx->key_pc[key] = pc;
            rx->key_count[key] = (uint16_t)k;
        }
    }
    rx->key_base[rx->n_code] = key;
    rx->n_keys = key;
    return 0;
}

int tt_rx_uses_dfa(const tt_rx *rx) { return rx->key_base != NULL; }

/* ---------------------------------------------------------------- the state cache */

static void dfa_free(tt_rx_dfa *d) {
    if (!d) return;
    free(d->trans); free(d->cuts); free(d->state_start); free(d->threads); free(d->slots);
    free(d->seen); free(d->emitted); free(d->stack); free(d->out);
    free(d);
}

void tt_rx_dfa_free_all(tt_rx_mem *m) {
    for (size_t i = 0; i < m->n_dfas; i++) dfa_free(m->dfas[i]);
    free(m->dfas);
    m->dfas = NULL;
    m->n_dfas = 0;
}

static uint32_t hash_list(const uint32_t *keys, uint32_t n) {
    uint32_t h = 2166136261u ^ n;
    for (uint32_t i = 0; i < n; i++) h = (h ^ keys[i]) * 16777619u;
    return h ^ (h >> 15);
}

/* The state holding exactly `keys` (appended when new); UINT32_MAX when the cache is full or OOM. */
static uint32_t intern(tt_rx_dfa *d, const uint32_t *keys, uint32_t n) {
    uint32_t h = hash_list(keys, n);
    for (uint32_t i = h & d->slot_mask;; i = (i + 1) & d->slot_mask) {
        uint32_t s = d->slots[i];
        if (!s) {
            uint32_t id = d->n_states, at = d->state_start[id];
            if (id == d->max_states || (size_t)at + n > THREADS_BUDGET) return UINT32_MAX;
            if (grow_reserve(&d->threads, &d->threads_cap, (size_t)at + n + 1, sizeof(uint32_t))) return UINT32_MAX;
            if (n) memcpy(d->threads + at, keys, n * sizeof(uint32_t));
            if (id >= d->trans_rows) {
                uint32_t rows = d->trans_rows ? 2 * d->trans_rows : 16;
                if (rows > d->max_states) rows = d->max_states;
                int32_t *t = realloc(d->trans, (size_t)rows * d->n_cols * sizeof(int32_t));
                if (t) d->trans = t;
                int32_t *c = t ? realloc(d->cuts, (size_t)rows * d->n_cols * sizeof(int32_t)) : NULL;
                if (!c) return UINT32_MAX;
                d->cuts = c;
                memset(t + (size_t)d->trans_rows * d->n_cols, 0xFF,
                       (size_t)(rows - d->trans_rows) * d->n_cols * sizeof(int32_t));
                memset(c + (size_t)d->trans_rows * d->n_cols, 0xFF,
                       (size_t)(rows - d->trans_rows) * d->n_cols * sizeof(int32_t));
                d->trans_rows = rows;
            }
            d->state_start[id + 1] = at + n;
            d->n_states = id + 1;
            d->slots[i] = id + 1;
            return id;
        }
        uint32_t id = s - 1, at = d->state_start[id];
        if (d->state_start[id + 1] - at == n && !memcmp(d->threads + at, keys, n * sizeof(uint32_t))) return id;
    }
}

/* Forgets every state but DEAD and START. */
static int reset(tt_rx_dfa *d, const tt_rx *rx) {
    memset(d->slots, 0, ((size_t)d->slot_mask + 1) * sizeof(uint32_t));
    if (d->trans) memset(d->trans, 0xFF, (size_t)d->trans_rows * d->n_cols * sizeof(int32_t));
    if (d->cuts) memset(d->cuts, 0xFF, (size_t)d->trans_rows * d->n_cols * sizeof(int32_t));
    d->resets++;
    d->n_states = 0;
    d->state_start[0] = 0;
    uint32_t start = rx->key_base[0];
    return intern(d, NULL, 0) != DEAD || intern(d, &start, 1) != START ? -1 : 0;
}

static tt_rx_dfa *dfa_for(const tt_rx *rx, tt_rx_mem *m) {
    for (size_t i = 0; i < m->n_dfas; i++)
        if (m->dfas[i]->serial == rx->serial) return m->dfas[i];
    if (m->n_dfas == MAX_DFAS_PER_MEM) tt_rx_dfa_free_all(m); /* programs come and go: start over */
    tt_rx_dfa **list = realloc(m->dfas, (m->n_dfas + 1) * sizeof *list);
    if (!list) return NULL;
    m->dfas = list;
    tt_rx_dfa *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->serial = rx->serial;
    d->n_cols = rx->n_classes + 1;
    d->can_cut = -1;
    uint32_t by_budget = TRANS_BUDGET / (d->n_cols * (uint32_t)sizeof(int32_t)); /* row offsets fit 30 bits */
    d->max_states = by_budget < 64 ? 64 : by_budget > (1u << 16) ? (1u << 16) : by_budget;
    uint32_t slots = 1;
    while (slots < 2 * d->max_states) slots *= 2;
    d->slot_mask = slots - 1;
    d->slots = calloc(slots, sizeof(uint32_t));
    d->state_start = calloc((size_t)d->max_states + 1, sizeof(uint32_t));
    d->seen = calloc(rx->n_keys, sizeof(uint32_t));
    d->emitted = calloc(rx->n_keys, sizeof(uint32_t));
    if (!d->slots || !d->state_start || !d->seen || !d->emitted || reset(d, rx)) {
        dfa_free(d);
        return NULL;
    }
    m->dfas[m->n_dfas++] = d;
    return d;
}

/* ---------------------------------------------------------------- transitions */

static inline int emit(tt_rx_dfa *d, uint32_t key, uint32_t *n_out) {
    if (d->emitted[key] == d->gen) return 0;
    d->emitted[key] = d->gen;
    if (grow_reserve(&d->out, &d->out_cap, (size_t)*n_out + 1, sizeof(uint32_t))) return -1;
    d->out[(*n_out)++] = key;
    return 0;
}

static inline int push(tt_rx_dfa *d, uint32_t key, size_t *sp) {
    if (grow_reserve(&d->stack, &d->stack_cap, *sp + 1, sizeof(uint32_t))) return -1;
    d->stack[(*sp)++] = key;
    return 0;
}

/* The transition of state s on column col: next << 1 | matched, or -1 on OOM. */
__attribute__((noinline, cold)) static int32_t compute(tt_rx_dfa *d, const tt_rx *rx, uint32_t s, uint32_t col) {
    if (++d->gen == 0) {
        memset(d->seen, 0, rx->n_keys * sizeof(uint32_t));
        memset(d->emitted, 0, rx->n_keys * sizeof(uint32_t));
        d->gen = 1;
    }
    const int at_end = col == rx->n_classes;
    uint32_t n_out = 0, matched = 0;
    for (uint32_t i = d->state_start[s]; i < d->state_start[s + 1] && !matched; i++) {
        size_t sp = 0;
        if (push(d, d->threads[i], &sp)) return -1;
        while (sp) {
            uint32_t key = d->stack[--sp];
            if (d->seen[key] == d->gen) continue;
            d->seen[key] = d->gen;
            uint32_t pc = rx->key_pc[key], k = rx->key_count[key];
            const int32_t *in = rx->code + 4 * pc;
            int rc = 0;
            switch (in[0]) {
            case RX_MATCH: matched = 1; sp = 0; break; /* lower-priority threads are dropped */
            case RX_SET:
                if (!at_end && tt_rx_set_has(rx, (uint32_t)in[1], col)) rc = emit(d, rx->key_base[pc + 1], &n_out);
                break;
            case RX_RUN: {
                uint32_t cap = (uint32_t)run_cap(in);
                if (!at_end && tt_rx_set_has(rx, (uint32_t)in[1], col) && (in[3] < 0 || k < (uint32_t)in[3]))
                    rc = emit(d, rx->key_base[pc] + (k + 1 > cap ? cap : k + 1), &n_out);
                else if (k >= (uint32_t)in[2])
                    rc = push(d, rx->key_base[pc + 1], &sp);
                break;
            }
            case RX_SPLIT:
                rc = push(d, rx->key_base[in[2]], &sp) || push(d, rx->key_base[in[1]], &sp);
                break;
            case RX_JMP: rc = push(d, rx->key_base[in[1]], &sp); break;
            case RX_LOOK: {
                int holds = !at_end && tt_rx_set_has(rx, (uint32_t)rx->code[4 * in[1] + 1], col);
                if (holds != in[2]) rc = push(d, rx->key_base[pc + 1], &sp);
                break;
            }
            default: { /* RX_ASSERT: `\z` or `$` */
                int holds = at_end || (in[1] == RX_LINE_END && tt_rx_set_has(rx, (uint32_t)in[2], col));
                if (holds) rc = push(d, rx->key_base[pc + 1], &sp);
            }
            }
            if (rc) return -1;
        }
    }
    uint32_t next = n_out ? intern(d, d->out, n_out) : DEAD;
    int cleared = 0;
    if (next == UINT32_MAX) { /* full: start a fresh cache holding this state */
        if (reset(d, rx)) return -1;
        cleared = 1;
        next = intern(d, d->out, n_out);
        if (next == UINT32_MAX) return -1;
    }
    int32_t t = (int32_t)(next * d->n_cols << 1 | matched);
    if (!cleared) d->trans[(size_t)s * d->n_cols + col] = t; /* after a reset, s names another state */
    return t;
}

/* The column of the char at p and its byte length: decoded from UTF-8, or with byte_col every byte
 * is one char of column byte_col[byte]. */
static inline uint32_t col_at(const tt_rx *rx, const uint16_t *byte_col, const uint8_t *text, uint32_t p,
                              uint32_t *len) {
    uint8_t b = text[p];
    if (byte_col) {
        *len = 1;
        return byte_col[b];
    }
    if (b < 0x80) {
        *len = 1;
        return rx->ascii_class[b];
    }
    *len = utf8_char_len(b);
    return tt_rx_class(rx, utf8_decode(text + p, NULL));
}

int tt_rx_has_segments(const tt_rx *rx) { return rx->segment_of != NULL; }

uint32_t tt_rx_segment_end(const tt_rx *rx, const uint16_t *byte_col, const uint8_t *text, uint32_t p, uint32_t hi) {
    uint32_t len, kind = rx->segment_of[col_at(rx, byte_col, text, p, &len)];
    uint32_t chars = rx->segment_chars[kind], n = 1;
    for (p += len; p < hi && (!kind || !chars || n < chars); p += len, n++)
        if (rx->segment_of[col_at(rx, byte_col, text, p, &len)] != kind) break;
    return p;
}

/* End of the leftmost-first match starting at `start`: -1 none, -2 out of memory. A transition value
 * is the next state's row offset in `trans` (state * n_cols) shifted left once, or'ed with "matched".
 * With `stop` (per class), the text ends before the first char whose class it marks. */
static inline int64_t match_from(tt_rx_dfa *d, const tt_rx *rx, const uint16_t *byte_col, const uint8_t *text,
                                 uint32_t start, uint32_t hi, const uint8_t *stop) {
    const uint32_t n_cols = d->n_cols, at_end = n_cols - 1;
    uint32_t row = START * n_cols, p = start;
    int64_t last = -1;
    for (;;) {
        uint32_t col = at_end, len = 0;
        if (p < hi) {
            col = col_at(rx, byte_col, text, p, &len);
            if (stop && stop[col]) col = at_end;
        }
        int32_t t = d->trans[row + col];
        if (t < 0 && (t = compute(d, rx, row / n_cols, col)) < 0) return -2;
        if (t & 1) last = p;
        uint32_t next = (uint32_t)t >> 1;
        if (next == DEAD || col == at_end) return last;
        p += len;
        if (next == row) { /* a self-loop (a run of letters, digits, spaces): no state to carry */
            const int32_t *same = d->trans + row;
            while (p < hi) {
                uint32_t c = col_at(rx, byte_col, text, p, &len);
                if (same[c] != t || (stop && stop[c])) break;
                if (t & 1) last = p;
                p += len;
            }
        }
        row = next;
    }
}

/* Whether a match can start on the char at p, whose first byte is in byte_starts. */
static inline int starts_at(const tt_rx *rx, const uint8_t *text, uint32_t p, uint32_t hi) {
    uint8_t b = text[p];
    if (b < 0x80) return 1;
    if (p + 1 < hi && !(rx->second_starts[b - 0xC0] >> (text[p + 1] & 0x3F) & 1)) return 0; /* none of these chars */
    return rx->class_starts[tt_rx_class(rx, utf8_decode(text + p, NULL))];
}

#if defined(__x86_64__) || defined(__i386__)
/* From the char start p, sixteen bytes at a time: the first char on which a match can start, else where
 * fewer than sixteen bytes are left (possibly inside a char). Each block's candidate bytes are tested in
 * turn from its bit mask, so a text whose chars are mostly candidates costs no branch per char. */
__attribute__((target("ssse3"))) static uint32_t skip_blocks_ssse3(const tt_rx *rx, const uint8_t *text, uint32_t p,
                                                                 uint32_t hi) {
    const __m128i lo_tbl = _mm_loadu_si128((const __m128i *)rx->start_set.lo);
    const __m128i hi_tbl = _mm_loadu_si128((const __m128i *)rx->start_set.hi);
    for (; p + 16 <= hi; p += 16) {
        for (uint32_t bits = tt_nibble_bits16(lo_tbl, hi_tbl, text + p); bits; bits &= bits - 1) {
            uint32_t q = p + (uint32_t)__builtin_ctz(bits);
            if (rx->byte_starts[text[q]] && starts_at(rx, text, q, hi)) return q;
        }
    }
    return p;
}
#endif

/* The first char start >= p (or hi) on which a match can start. */
static inline uint32_t skip_to_start(const tt_rx *rx, const uint16_t *byte_col, const uint8_t *text, uint32_t p,
                                     uint32_t hi) {
    if (byte_col) {
        while (p < hi && !rx->class_starts[byte_col[text[p]]]) p++;
        return p;
    }
#if defined(__x86_64__) || defined(__i386__)
    if (rx->start_set.simd) p = skip_blocks_ssse3(rx, text, p, hi);
#endif
    while (p < hi) {
        uint8_t b = text[p];
        if (!rx->byte_starts[b]) { /* continuation bytes are stepped over too: never starts */
            p = tt_nibble_skip(&rx->start_set, text, p + 1, hi);
            continue;
        }
        if (b < 0x80) return p;
        if (p + 1 < hi && !(rx->second_starts[b - 0xC0] >> (text[p + 1] & 0x3F) & 1)) { /* none of these chars starts */
            p += utf8_char_len(b);
            continue;
        }
        if (rx->class_starts[tt_rx_class(rx, utf8_decode(text + p, NULL))]) return p;
        p += utf8_char_len(b);
    }
    return hi;
}

/* The first match at or after the char start `*start` (moved to where it starts): its end, -1 none, -2 out
 * of memory. With `stop` (match_from), no match is looked for past a char it marks, and on -1 *start is
 * moved to that char, or to hi. */
static inline int64_t next_match(tt_rx_dfa *d, const tt_rx *rx, const uint16_t *byte_col, const uint8_t *text,
                                 uint32_t *start, uint32_t hi, const uint8_t *stop) {
    uint32_t p = *start, len;
    for (;;) {
        if (rx->first_set >= 0 && !stop) {
            if ((p = skip_to_start(rx, byte_col, text, p, hi)) >= hi) return -1;
        }
        if (stop && p < hi && stop[col_at(rx, byte_col, text, p, &len)]) {
            *start = p;
            return -1;
        }
        int64_t end = match_from(d, rx, byte_col, text, p, hi, stop);
        if (end != -1 || p >= hi) {
            *start = p;
            return end;
        }
        p += byte_col ? 1 : utf8_char_len(text[p]);
    }
}

/* tt_rx_segments over [lo, hi) into out (or, with pieces, as Isolated pieces), each match found by the DFA. */
static inline size_t dfa_segments(const tt_rx *rx, tt_rx_dfa *d, const uint16_t *byte_col, const uint8_t *text,
                                  uint32_t lo, uint32_t hi, tt_seg *out, tt_piece *pieces) {
    tt_rx_segments it = tt_rx_segments_begin(out, lo);
    it.pieces = pieces;
    while (it.search <= hi) {
        uint32_t start = it.search;
        int64_t end = next_match(d, rx, byte_col, text, &start, hi, NULL);
        if (end == -2) return TT_RX_OOM;
        if (end < 0 || tt_rx_segments_take(&it, text, hi, start, (uint32_t)end, byte_col != NULL) < 0) break;
    }
    return tt_rx_segments_end(&it, hi);
}

/* ---------------------------------------------------------------- the cut loop
 *
 * Isolated pieces (or the matches alone) of a program that never matches empty and whose matches can start
 * on nearly every char, the text read once: a
 * match that ends where the DFA dies (the char that ends it cannot extend it) is the common case, and
 * there the next match starts on that same char, so one step (from `cuts`) both ends a piece and moves
 * from START on the char, without a branch. A match given back to an earlier char (`\s+(?!\S)` before a
 * word) ends at the last step that recorded one; a char no match starts on joins the gap before it; no
 * match from where the search stands goes to the general search (next_match). */

#define CUT 1           /* a step's bit: the match ends before this char, which starts the next search */
#define CUT_MATCHED 2   /* a step's bit: a match of the search ends before this char, which goes on */
#define CUT_SHIFT 2     /* a step's next state (row offset) above its bits */
#define CUT_MISSING (-1) /* not computed yet */
#define CUT_SLOW (-2)    /* the DFA dies here without a match ending before this char */
#define CUT_OOM (-3)
#define CUT_ENDED (-4)   /* a match of the search ends before this char, and none can start on it */
#define CUT_SEGMENT (-5) /* the char is in a segment set (tt_rx_spec.segments): the search's text ends before it */
#define CUT_GAP (-6)     /* from START: no match starts on this char */

/* The transition of row on col, computed when missing: -1 on OOM. */
static inline int32_t trans_at(tt_rx_dfa *d, const tt_rx *rx, uint32_t row, uint32_t col) {
    int32_t t = d->trans[row + col];
    return t >= 0 ? t : compute(d, rx, row / d->n_cols, col);
}

/* The cut step of row on col, the next state's row offset << CUT_SHIFT with CUT or CUT_MATCHED, or CUT_SLOW,
 * CUT_ENDED or CUT_SEGMENT (stored unless the cache was emptied meanwhile), or CUT_OOM. */
__attribute__((noinline, cold)) static int32_t fill_cut(tt_rx_dfa *d, const tt_rx *rx, uint32_t row, uint32_t col) {
    if (rx->segment_of && rx->segment_of[col]) return d->cuts[row + col] = CUT_SEGMENT;
    uint32_t resets = d->resets;
    int32_t t = trans_at(d, rx, row, col);
    if (t < 0) return CUT_OOM;
    uint32_t next = (uint32_t)t >> 1;
    int32_t step = (int32_t)(next << CUT_SHIFT | (t & 1 ? CUT_MATCHED : 0));
    if (next == DEAD) {
        int32_t t0 = t & 1 ? trans_at(d, rx, START * d->n_cols, col) : 0;
        if (t0 < 0) return CUT_OOM;
        if ((uint32_t)t0 >> 1 != DEAD) step = (int32_t)((uint32_t)t0 >> 1 << CUT_SHIFT | CUT);
        else step = t & 1 ? CUT_ENDED : row == START * d->n_cols ? CUT_GAP : CUT_SLOW;
    }
    if (d->resets == resets) d->cuts[row + col] = step;
    return step;
}

/* At most this many ASCII chars of a program the cut loop runs can be chars no match starts on: each is a
 * step out of the loop, where the general search skips a run of them sixteen bytes at a time. */
#define CUT_MAX_ASCII_GAPS 8

/* Whether the cut loop runs rx: matches start on all but a few ASCII chars (CLIP's pattern: all but
 * whitespace), and no transition from START records a match (one would be an empty match). -1 on OOM. */
static int cut_suits(tt_rx_dfa *d, const tt_rx *rx) {
    if (d->can_cut < 0) {
        int gaps = 0;
        for (uint32_t b = 0; rx->first_set >= 0 && b < 128; b++) gaps += !rx->ascii_starts[b];
        int ok = gaps <= CUT_MAX_ASCII_GAPS;
        for (uint32_t col = 0; ok && col < d->n_cols; col++) {
            int32_t t = trans_at(d, rx, START * d->n_cols, col);
            if (t < 0) return -1;
            ok = !(t & 1);
        }
        d->can_cut = ok;
    }
    return d->can_cut;
}

/* Where the cut loop's search from *search found no match: the next match from the char after it, found
 * by the general search and appended to out[n...] after the gap before it (when gaps are kept). With
 * segments the search stops at the next char of a segment set, where the gap then ends. Moves *search to
 * where the next search starts (hi, or that segment char, when no match is left); returns the new piece
 * count, or TT_RX_OOM. Kept out of the loop so the loop's values stay in registers. */
__attribute__((noinline)) static size_t search_again(tt_rx_dfa *d, const tt_rx *rx, const uint8_t *text,
                                                     uint32_t *search, uint32_t hi, tt_piece *out, size_t n,
                                                     int keep_gaps) {
    uint32_t start = *search + utf8_char_len(text[*search]);
    int64_t end = start < hi ? next_match(d, rx, NULL, text, &start, hi, rx->segment_of) : -1;
    if (end == -2) return TT_RX_OOM;
    if (end < 0 && !rx->segment_of) start = hi;
    if (keep_gaps) out[n++] = (tt_piece){*search, start, 0};
    if (end >= 0) out[n++] = (tt_piece){start, (uint32_t)end, 0};
    *search = end < 0 ? start : (uint32_t)end;
    return n;
}

/* The Isolated pieces of the segment starting at the char at *at, of a char in a segment set, found by the
 * general search and appended to out[n...]; moves *at past it. Returns the new piece count, or TT_RX_OOM. */
__attribute__((noinline)) static size_t segment_run(tt_rx_dfa *d, const tt_rx *rx, const uint8_t *text,
                                                    uint32_t *at, uint32_t hi, tt_piece *out, size_t n) {
    uint32_t end = tt_rx_segment_end(rx, NULL, text, *at, hi);
    size_t got = dfa_segments(rx, d, NULL, text, *at, end, NULL, out + n);
    *at = end;
    return got == TT_RX_OOM ? TT_RX_OOM : n + got;
}

/* The Isolated pieces of [lo, hi) by the cut loop (without keep_gaps, the matches alone: what Removed with
 * invert keeps), or TT_RX_OOM. With segments, the loop runs over the
 * stretches of chars in no segment set, each its own text: `end` is where the current one ends (hi until
 * a CUT_SEGMENT step meets a segment char), and each run of segment chars between them goes to
 * segment_run. Inlined with `segmented` and `keep_gaps` constant, so the loop without segments keeps hi for
 * its end. */
static inline __attribute__((always_inline)) size_t cut_loop(tt_rx_dfa *d, const tt_rx *rx, const uint8_t *text,
                                                             uint32_t lo, uint32_t hi, tt_piece *out,
                                                             const int segmented, const int keep_gaps) {
    const uint32_t start_row = START * d->n_cols;
    const int32_t *cuts = d->cuts;
    size_t n = 0;
    uint32_t search = lo, p = lo, row = start_row, end = hi;
    uint32_t last = lo; /* where the latest CUT_MATCHED or CUT_ENDED step stood: the search matched when past it */
    uint32_t gap_end = UINT32_MAX; /* where the last piece ends when it is a gap (no match started in it) */
    for (;;) {
        if (p < end) {
            uint32_t len, col = col_at(rx, NULL, text, p, &len);
            const int32_t *column = cuts + col;
            __asm__("" : "+r"(column)); /* the column's address first: only the row is on the chain of loads */
            int32_t step = column[row];
            if (__builtin_expect(step < 0, 0)) {
                if (step == CUT_MISSING && (step = fill_cut(d, rx, row, col)) == CUT_OOM) return TT_RX_OOM;
                cuts = d->cuts;
            }
            if (__builtin_expect(step >= 0, 1)) {
                uint32_t cut = (uint32_t)step & CUT;
                out[n] = (tt_piece){search, p, 0};
                n += cut;
                search = cut ? p : search;
                last = step & CUT_MATCHED ? p : last;
                row = (uint32_t)step >> CUT_SHIFT;
                p += len;
                continue;
            }
            if (segmented && step == CUT_SEGMENT) {
                end = p;
                continue;
            }
            if (step == CUT_GAP && p == search) { /* (a DFA may come back to START inside a match) */
                if (keep_gaps && gap_end == search) out[n - 1].end = p + len;
                else if (keep_gaps) out[n++] = (tt_piece){search, p + len, 0};
                gap_end = search = p += len;
                continue;
            }
            if (step == CUT_ENDED) last = p;
        } else {
            if (search == end) {
                if (!segmented || end == hi) return n;
                if ((n = segment_run(d, rx, text, &search, hi, out, n)) == TT_RX_OOM) return TT_RX_OOM;
                p = last = search;
                row = start_row;
                end = hi;
                cuts = d->cuts;
                continue;
            }
            int32_t t = trans_at(d, rx, row, d->n_cols - 1);
            if (t < 0) return TT_RX_OOM;
            if (t & 1) { /* a match ending at the text's end takes the rest */
                out[n++] = (tt_piece){search, end, 0};
                search = p = end;
                continue;
            }
        }
        if (last > search) { /* the search's match gave chars back */
            out[n++] = (tt_piece){search, last, 0};
            search = p = last;
            row = start_row;
            continue;
        }
        /* No match starts at search. When the DFA died on the char after it (a joiner between emoji, say), the
         * search goes on from that char, as the general search would, the gap before it one piece */
        if (p == search + utf8_char_len(text[search]) && p < end) {
            if (keep_gaps && gap_end == search) out[n - 1].end = p;
            else if (keep_gaps) out[n++] = (tt_piece){search, p, 0};
            gap_end = search = p;
            row = start_row;
            continue;
        }
        if (keep_gaps && gap_end == search) search = out[--n].start; /* the gap before goes on into this one */
        uint32_t next = search; /* a copy: the loop's own values never have their address taken */
        if ((n = search_again(d, rx, text, &next, end, out, n, keep_gaps)) == TT_RX_OOM) return TT_RX_OOM;
        search = p = next;
        row = start_row;
        cuts = d->cuts;
    }
}

/* cut_loop with segments, out of line: the loop without them keeps its function to itself. */
static __attribute__((noinline)) size_t cut_segmented(tt_rx_dfa *d, const tt_rx *rx, const uint8_t *text, uint32_t lo,
                                                      uint32_t hi, tt_piece *out) {
    return cut_loop(d, rx, text, lo, hi, out, 1, 1);
}

static size_t cut_pieces(tt_rx_dfa *d, const tt_rx *rx, const uint8_t *text, uint32_t lo, uint32_t hi,
                         tt_piece *out) {
    return rx->segment_of ? cut_segmented(d, rx, text, lo, hi, out) : cut_loop(d, rx, text, lo, hi, out, 0, 1);
}

int tt_rx_cuts(const tt_rx *rx, tt_rx_mem *m) {
    tt_rx_dfa *d = dfa_for(rx, m);
    return d ? cut_suits(d, rx) : -1;
}

size_t tt_fsm_compiled_matches(const tt_rx *rx, const tt_view *v, uint32_t lo, uint32_t hi, tt_rx_mem *m,
                               tt_piece *out) {
    tt_rx_dfa *d = dfa_for(rx, m);
    return d ? cut_loop(d, rx, v->text, lo, hi, out, 0, 0) : TT_RX_OOM;
}

size_t tt_rx_dfa_segments(const tt_rx *rx, tt_rx_mem *m, const uint8_t *text, uint32_t lo, uint32_t hi,
                          tt_seg *out) {
    tt_rx_dfa *d = dfa_for(rx, m);
    return d ? dfa_segments(rx, d, NULL, text, lo, hi, out, NULL) : TT_RX_OOM;
}

size_t tt_fsm_compiled_pieces(const tt_rx *rx, const tt_view *v, uint32_t lo, uint32_t hi, tt_rx_mem *m,
                              tt_piece *out) {
    tt_rx_dfa *d = dfa_for(rx, m);
    if (!d) return TT_RX_OOM;
    int cut = cut_suits(d, rx);
    if (cut < 0) return TT_RX_OOM;
    if (cut) return cut_pieces(d, rx, v->text, lo, hi, out);
    if (!rx->segment_of) return dfa_segments(rx, d, NULL, v->text, lo, hi, NULL, out);
    size_t n = 0;
    for (uint32_t p = lo; p < hi;) {
        uint32_t end = tt_rx_segment_end(rx, NULL, v->text, p, hi);
        size_t got = dfa_segments(rx, d, NULL, v->text, p, end, NULL, out + n);
        if (got == TT_RX_OOM) return TT_RX_OOM;
        n += got;
        p = end;
    }
    return n;
}

void tt_rx_byte_classes(const tt_rx *rx, const uint32_t char_of_byte[256], uint16_t byte_col[256]) {
    for (uint32_t b = 0; b < 256; b++) byte_col[b] = (uint16_t)tt_rx_class(rx, char_of_byte[b]);
}

void tt_rx_byte_starts(const tt_rx *rx, const uint16_t byte_col[256], uint8_t starts[256]) {
    for (uint32_t b = 0; b < 256; b++) starts[b] = rx->first_set < 0 || rx->class_starts[byte_col[b]];
}

size_t tt_fsm_compiled_bytes(const tt_rx *rx, tt_rx_mem *m, const uint8_t *text, uint32_t lo, uint32_t hi,
                             const uint16_t byte_col[256], tt_seg *out) {
    tt_rx_dfa *d = dfa_for(rx, m);
    return d ? dfa_segments(rx, d, byte_col, text, lo, hi, out, NULL) : TT_RX_OOM;
}
