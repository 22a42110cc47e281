/* Shared between the compiled-regex executors: the backtracking VM (regex_vm.c) and the lazily built
 * leftmost-first DFA (regex_dfa.c) that runs the programs whose constructs need no backtracking. */
#ifndef TAGTOK_REGEX_INTERNAL_H
#define TAGTOK_REGEX_INTERNAL_H

#include "fsm_internal.h"

enum { RX_MATCH, RX_SET, RX_SPLIT, RX_JMP, RX_LOOK, RX_ASSERT, RX_RUN, RX_BACK, RX_SAVE, RX_REF, RX_ATOMIC,
       RX_OP_COUNT };
#define RX_MAX_GROUPS 10 /* groups a backreference can name: \1 to \9 */
/* LOOK's flags (its b): negative, and a body that runs backward from where the lookbehind stands (each SET
 * takes the char before the position), matching when it reaches any start */
#define RX_LOOK_NEGATE 1
#define RX_LOOK_BEHIND 2
enum { RX_LINE_BEGIN, RX_LINE_END, RX_TEXT_BEGIN, RX_TEXT_END, RX_TEXT_END_NL, RX_WORD_B, RX_NOT_WORD_B,
       RX_ASSERT_COUNT };

typedef struct tt_rx_dfa tt_rx_dfa;

struct tt_rx {
    int32_t *code; /* op, a, b, c */
    uint32_t n_code;
    uint16_t *stage1, *stage2;
    uint64_t *sets;
    uint32_t words; /* uint64 words per set bitmap */
    uint32_t n_classes, n_sets;
    uint32_t n_main_splits, n_splits, n_subs;
    uint32_t n_slots; /* capture slots (2 per group a backreference reads); nonzero: the main program's
                       * SPLITs from which a REF can be reached run without the memo (what follows them
                       * depends on the captures, not on (pc, pos) alone) */
    uint8_t *reaches_ref; /* per pc (with n_slots): whether a REF can be reached from it */
    int first_set;
    uint64_t serial; /* identifies this program to per-thread DFA caches (never reused) */
    /* DFA threads: (pc, repeat count) pairs numbered densely; NULL when the program needs the VM */
    uint32_t *key_base; /* per pc: its first thread key (a RUN owns one key per count it tells apart) */
    uint32_t *key_pc;   /* per key: its pc */
    uint16_t *key_count;
    uint32_t n_keys;
    uint16_t ascii_class[128];
    uint8_t ascii_starts[128]; /* first_set: whether a match can start on this ASCII char */
    uint8_t byte_starts[256];  /* first_set: whether a match can start on a char beginning with this byte
                                * (ascii_starts; for a lead byte, on some char it leads; 0 on continuations) */
    uint64_t second_starts[64]; /* first_set, per lead byte 0xC0..0xFF: bit (second byte & 63) when a char
                                 * starting with those two bytes may start a match */
    tt_nibble_set start_set;   /* byte_starts, sixteen bytes at a time */
    uint8_t *class_starts;     /* first_set per class (NULL without first_set) */
    uint8_t *segment_of;       /* per class: 0 outside the spec's segment sets, else 1 + its set's index in
                                * them (NULL without segments) */
    uint32_t segment_chars[TT_RX_MAX_SEGMENTS + 1]; /* by segment_of: chars per chunk of a run (0: the run) */
};

struct tt_rx_mem {
    uint64_t *memo; size_t memo_cap;    /* main-program SPLIT visits, (pos - lo) * n_main_splits + k */
    uint32_t *stamps; size_t stamps_cap; /* sub-program SPLIT visits, by generation */
    uint32_t *subs; size_t subs_cap;    /* a sub-program's first match from a position, (pos - lo) * n_subs + id:
                                         * 0 unknown, 1 none, else its end - lo + 2 */
    uint32_t *stack; size_t stack_cap;  /* (pc, pos) pairs; with captures, (pc or slot | RX_RESTORE, pos or old) */
    uint32_t *caps; size_t caps_cap;    /* capture slots: start and end byte of each group, RX_UNSET when none */
    size_t sp;
    uint32_t gen;
    tt_rx_dfa **dfas; size_t n_dfas;    /* one lazily built DFA per program this memory has run */
};

static inline uint32_t tt_rx_class(const tt_rx *rx, uint32_t cp) {
    return rx->stage2[(uint32_t)rx->stage1[cp >> 8] * 256 + (cp & 0xFF)];
}

static inline int tt_rx_set_has(const tt_rx *rx, uint32_t set, uint32_t cls) {
    return (int)(rx->sets[(size_t)set * rx->words + (cls >> 6)] >> (cls & 63)) & 1;
}

/* Decides whether `rx` can run as a DFA and, if so, numbers its threads (rx->key_*). -1 on OOM. */
int tt_rx_dfa_prepare(tt_rx *rx, int backtrack_only);
/* tt_fsm_compiled for a program tt_rx_dfa_prepare accepted (TT_RX_OOM when out of memory). */
size_t tt_rx_dfa_segments(const tt_rx *rx, tt_rx_mem *m, const uint8_t *text, uint32_t lo, uint32_t hi,
                          tt_seg *out);
void tt_rx_dfa_free_all(tt_rx_mem *m);

/* onig's find_iter over [lo, hi) as tokenizers' find_matches turns it into segments, one match at a time
 * (shared by the VM and the DFA, which differ only in how they find a match). */
typedef struct {
    tt_seg *out;
    tt_piece *pieces; /* instead of out: what Isolated (no invert) makes of the segments, the non-empty ones */
    size_t n;
    uint32_t prev, search, last_end;
    int have_last;
} tt_rx_segments;

static inline tt_rx_segments tt_rx_segments_begin(tt_seg *out, uint32_t lo) {
    return (tt_rx_segments){out, NULL, 0, lo, lo, 0, 0};
}

static inline void tt_rx_segments_push(tt_rx_segments *it, uint32_t start, uint32_t end, uint32_t match) {
    if (!it->pieces) it->out[it->n++] = (tt_seg){start, end, match};
    else if (end > start) it->pieces[it->n++] = (tt_piece){start, end, 0};
}

/* A match [start, end) found searching from it->search (byte_chars: every byte is one char). An empty match right where the previous one ended
 * is skipped by moving the search one char on (0; -1 when the search is at hi already); any other becomes a
 * segment after the unmatched gap before it (1). */
static inline int tt_rx_segments_take(tt_rx_segments *it, const uint8_t *text, uint32_t hi, uint32_t start,
                                      uint32_t end, int byte_chars) {
    if (end == start && it->have_last && it->last_end == end) {
        if (it->search >= hi) return -1;
        it->search += byte_chars ? 1 : utf8_char_len(text[it->search]);
        return 0;
    }
    if (it->prev != start) tt_rx_segments_push(it, it->prev, start, 0);
    tt_rx_segments_push(it, start, end, 1);
    it->prev = it->last_end = it->search = end;
    it->have_last = 1;
    return 1;
}

/* The segment (or piece) count, with the unmatched tail up to hi. */
static inline size_t tt_rx_segments_end(tt_rx_segments *it, uint32_t hi) {
    if (it->prev != hi) tt_rx_segments_push(it, it->prev, hi, 0);
    return it->n;
}

#endif
