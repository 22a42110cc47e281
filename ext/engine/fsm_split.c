/* Segmenters for the non-regex pre-tokenizers, and the one behavior function they all share.
 * Semantics mirror tokenizers' pattern.rs (find_matches) and normalizer.rs (split). */
#define _GNU_SOURCE
#include <string.h>

#include "fsm_internal.h"

void tt_fill_props(uint32_t props[256]) {
    for (unsigned tag = 0; tag < 256; tag++) props[tag] = tag < TT_ATOM_COUNT ? tt_atom_props[tag] : 0;
    props[TT_TAG_CONT] = TT_CONT_BIT;
}

static inline size_t emit(tt_seg *out, size_t n, uint32_t start, uint32_t end, uint32_t match) {
    out[n].start = start;
    out[n].end = end;
    out[n].match = match;
    return n + 1;
}

/* The tags whose props have one of `mask` (has) or none of it (!has). */
static void tags_with(tt_nibble_set *set, const uint32_t props[256], uint32_t mask, int has) {
    uint8_t member[256];
    for (unsigned tag = 0; tag < 256; tag++) member[tag] = ((props[tag] & mask) != 0) == has;
    tt_nibble_set_build(set, member);
}

void tt_run_ends_build(tt_run_ends *ends, const uint32_t props[256]) {
    tags_with(&ends->letters, props, TT_PROP_L | TT_CONT_BIT, 0);
    tags_with(&ends->upperish, props, TT_UPPERISH | TT_CONT_BIT, 0);
    tags_with(&ends->lowerish, props, TT_LOWERISH | TT_CONT_BIT, 0);
}

void tt_class_members(tt_nibble_set *members, const uint32_t props[256], uint32_t mask) {
    tags_with(members, props, mask, 1);
}

/* tt_run_not, whole blocks of non-member tags skipped sixteen at a time. */
static uint32_t run_not_member(const tt_view *v, const tt_nibble_set *members, uint32_t p, uint32_t hi,
                               uint32_t mask) {
    return tt_run_not(v, members ? tt_nibble_skip(members, v->tags, p, hi) : p, hi, mask);
}

/* Char-predicate pattern: every matching char is its own match; non-matching runs are one gap. */
size_t tt_fsm_class(const tt_view *v, uint32_t lo, uint32_t hi, uint32_t mask, const tt_nibble_set *members,
                    tt_seg *out) {
    size_t n = 0;
    uint32_t p = lo;
    while (p < hi) {
        uint32_t gap_end = run_not_member(v, members, p, hi, mask);
        if (gap_end > p) n = emit(out, n, p, gap_end, 0);
        p = gap_end;
        if (p < hi) {
            uint32_t q = tt_next(v, p);
            n = emit(out, n, p, q, 1);
            p = q;
        }
    }
    return n;
}

#if defined(__x86_64__) || defined(__i386__)
/* One bit per byte of tags[0, 64): set where the byte may be in the set (see tt_nibble_set). */
__attribute__((target("ssse3"))) static inline uint64_t nibble_bits64(const tt_nibble_set *set, const uint8_t *tags) {
    const __m128i lo_tbl = _mm_loadu_si128((const __m128i *)set->lo);
    const __m128i hi_tbl = _mm_loadu_si128((const __m128i *)set->hi);
    uint64_t bits = 0;
    for (int k = 0; k < 4; k++) bits |= (uint64_t)tt_nibble_bits16(lo_tbl, hi_tbl, tags + 16 * k) << (16 * k);
    return bits;
}

/* tt_fsm_class_pieces for Removed: the member chars among 64 tags at a time as a bit mask, each piece
 * (the run between two of them) written from consecutive set bits, so a short piece costs no per-byte
 * scan. */
static size_t class_removed_pieces(const tt_view *v, uint32_t lo, uint32_t hi, uint32_t mask,
                                   const tt_nibble_set *members, tt_piece *out) {
    size_t n = 0;
    uint32_t gap = lo, at = lo; /* the current piece starts at gap; tags before `at` are looked at */
    for (; at + 64 <= hi; at += 64) {
        for (uint64_t bits = nibble_bits64(members, v->tags + at); bits; bits &= bits - 1) {
            uint32_t q = at + (uint32_t)__builtin_ctzll(bits);
            if (q < gap || !(v->props[v->tags[q]] & mask)) continue; /* inside a removed char, or not a member */
            if (q > gap) out[n++] = (tt_piece){gap, q, 0};
            gap = tt_next(v, q);
        }
        if (gap > at + 64) at = gap - 64; /* a member char ran past the block */
    }
    for (uint32_t p = at > gap ? at : gap; p < hi;) {
        uint32_t q = tt_run_not(v, p, hi, mask);
        if (q >= hi) break;
        if (q > gap) out[n++] = (tt_piece){gap, q, 0};
        p = gap = tt_next(v, q);
    }
    if (hi > gap) out[n++] = (tt_piece){gap, hi, 0};
    return n;
}
#endif

size_t tt_fsm_class_pieces(const tt_view *v, uint32_t lo, uint32_t hi, uint32_t mask, const tt_nibble_set *members,
                           tt_behavior behavior, tt_piece *out) {
#if defined(__x86_64__) || defined(__i386__)
    if (behavior == TT_BEHAVIOR_REMOVED && members && members->simd && hi - lo >= 64)
        return class_removed_pieces(v, lo, hi, mask, members, out);
#endif
    size_t n = 0;
    for (uint32_t p = lo; p < hi;) {
        uint32_t gap_end = run_not_member(v, members, p, hi, mask);
        if (gap_end > p) out[n++] = (tt_piece){p, gap_end, 0};
        if (gap_end >= hi) break;
        p = behavior == TT_BEHAVIOR_CONTIGUOUS ? tt_run(v, gap_end, hi, mask) : tt_next(v, gap_end);
        if (behavior != TT_BEHAVIOR_REMOVED) out[n++] = (tt_piece){gap_end, p, 0};
    }
    return n;
}

/* BertPreTokenizer's boundary at member byte q (its props): the word before it, then the char itself
 * unless it is whitespace. A char that is both whitespace and punctuation would be removed by the first
 * split: whitespace is looked at first. Returns where the next word starts. */
static inline uint32_t bert_boundary(const tt_view *v, uint32_t start, uint32_t q, uint32_t props, tt_piece *out,
                                     size_t *n) {
    uint32_t next = tt_next(v, q);
    if (q > start) out[(*n)++] = (tt_piece){start, q, 0};
    if (!(props & TT_PROP_WS)) out[(*n)++] = (tt_piece){q, next, 0};
    return next;
}

/* Byte by byte from p (continuation bytes are never members). */
static size_t bert_pieces_scalar(const tt_view *v, uint32_t start, uint32_t p, uint32_t hi, tt_piece *out, size_t n) {
    for (uint32_t q = p > start ? p : start; q < hi;) {
        uint32_t props = v->props[v->tags[q]];
        if (props & (TT_PROP_WS | TT_PROP_PUNC)) q = start = bert_boundary(v, start, q, props, out, &n);
        else q++;
    }
    if (hi > start) out[n++] = (tt_piece){start, hi, 0};
    return n;
}

#if defined(__x86_64__) || defined(__i386__)
/* Sixteen tags at a time: the member bytes of a block as a bit mask (the nibble set may take a few more
 * tags; their props rule them out), each one a boundary. No work per byte of the words in between. */
__attribute__((target("ssse3"))) static size_t bert_pieces_ssse3(const tt_view *v, uint32_t lo, uint32_t hi,
                                                                 const tt_nibble_set *members, tt_piece *out) {
    const __m128i lo_tbl = _mm_loadu_si128((const __m128i *)members->lo);
    const __m128i hi_tbl = _mm_loadu_si128((const __m128i *)members->hi);
    size_t n = 0;
    uint32_t start = lo, p = lo;
    for (; p + 16 <= hi; p += 16) {
        uint32_t bits = tt_nibble_bits16(lo_tbl, hi_tbl, v->tags + p);
        while (bits) {
            uint32_t q = p + (uint32_t)__builtin_ctz(bits), props = v->props[v->tags[q]];
            bits &= bits - 1;
            if (props & (TT_PROP_WS | TT_PROP_PUNC)) start = bert_boundary(v, start, q, props, out, &n);
        }
    }
    return bert_pieces_scalar(v, start, p, hi, out, n);
}
#endif

size_t tt_fsm_bert_pieces(const tt_view *v, uint32_t lo, uint32_t hi, const tt_nibble_set *members, tt_piece *out) {
#if defined(__x86_64__) || defined(__i386__)
    if (members->simd) return bert_pieces_ssse3(v, lo, hi, members, out);
#endif
    (void)members;
    return bert_pieces_scalar(v, lo, lo, hi, out, 0);
}

/* Leftmost non-overlapping occurrences of a non-empty UTF-8 literal. A byte match of valid UTF-8 in
 * valid UTF-8 always starts on a char boundary (the literal starts with a lead byte). */
size_t tt_fsm_bytes(const tt_view *v, uint32_t lo, uint32_t hi, const uint8_t *lit, size_t lit_len,
                    tt_seg *out) {
    size_t n = 0;
    uint32_t p = lo;
    while (p < hi) {
        const uint8_t *hit = memmem(v->text + p, hi - p, lit, lit_len);
        if (!hit) break;
        uint32_t m = (uint32_t)(hit - v->text);
        if (m > p) n = emit(out, n, p, m, 0);
        n = emit(out, n, m, m + (uint32_t)lit_len, 1);
        p = m + (uint32_t)lit_len;
    }
    if (p < hi) n = emit(out, n, p, hi, 0);
    return n;
}

/* onig's empty pattern: a zero-length match at every char boundary (the FindMatches guard skips
 * only the repeat at the same position), so every char becomes its own gap. */
size_t tt_fsm_empty(const tt_view *v, uint32_t lo, uint32_t hi, tt_seg *out) {
    size_t n = emit(out, 0, lo, lo, 1);
    for (uint32_t p = lo; p < hi;) {
        uint32_t q = tt_next(v, p);
        n = emit(out, n, p, q, 0);
        n = emit(out, n, q, q, 1);
        p = q;
    }
    return n;
}

/* Rust-regex `\w+|[^\w\s]+` matches; whitespace runs are the gaps (the caller inverts + removes). */
size_t tt_fsm_whitespace(const tt_view *v, uint32_t lo, uint32_t hi, tt_seg *out) {
    size_t n = 0;
    uint32_t p = lo;
    while (p < hi) {
        uint32_t props = tt_props_at(v, p), q;
        if (props & TT_PROP_RW) {
            n = emit(out, n, p, q = tt_run(v, p, hi, TT_PROP_RW), 1);
        } else if (props & TT_PROP_RS) {
            n = emit(out, n, p, q = tt_run(v, p, hi, TT_PROP_RS), 0);
        } else {
            n = emit(out, n, p, q = tt_run_not(v, p, hi, TT_PROP_RW | TT_PROP_RS), 1);
        }
        p = q;
    }
    return n;
}

/* UnicodeScripts: a boundary before every non-Any char whose script differs from the last non-Any
 * script. Text before the first boundary is dropped (stock quirk, PR #2382): it is emitted as a
 * match and the executor runs this step with Removed; the runs are adjacent gaps. */
size_t tt_fsm_scripts(const tt_view *v, uint32_t lo, uint32_t hi, tt_seg *out) {
    size_t n = 0;
    uint32_t last = UINT32_MAX, run_start = UINT32_MAX;
    for (uint32_t p = lo; p < hi; p = tt_next(v, p)) {
        uint32_t script = v->stags[p];
        if (script == TT_SCRIPT_ANY || script == last) continue;
        if (run_start == UINT32_MAX) {
            if (p > lo) n = emit(out, n, lo, p, 1);
        } else {
            n = emit(out, n, run_start, p, 0);
        }
        run_start = p;
        last = script;
    }
    return run_start == UINT32_MAX ? emit(out, n, lo, hi, 1) : emit(out, n, run_start, hi, 0);
}

size_t tt_fsm_fixed_length(const tt_view *v, uint32_t lo, uint32_t hi, uint32_t length, tt_seg *out) {
    size_t n = 0;
    uint32_t p = lo;
    while (p < hi) {
        uint32_t q = p;
        for (uint32_t k = 0; k < length && q < hi; k++) q = tt_next(v, q);
        n = emit(out, n, p, q, 0);
        p = q;
    }
    return n;
}

static void reverse(tt_piece *pieces, size_t n) {
    for (size_t i = 0, j = n ? n - 1 : 0; i < j; i++, j--) {
        tt_piece t = pieces[i];
        pieces[i] = pieces[j];
        pieces[j] = t;
    }
}

static inline size_t push(tt_piece *out, size_t k, const tt_seg *s) {
    out[k].start = s->start;
    out[k].end = s->end;
    out[k].flags = 0;
    return k + 1;
}

size_t tt_apply_behavior(tt_seg *segs, size_t n, tt_behavior behavior, int invert, tt_piece *out) {
    size_t k = 0;
    uint32_t previous_match = 0;
    if (invert)
        for (size_t i = 0; i < n; i++) segs[i].match ^= 1;
    switch (behavior) {
    case TT_BEHAVIOR_ISOLATED:
        for (size_t i = 0; i < n; i++) k = push(out, k, &segs[i]);
        break;
    case TT_BEHAVIOR_REMOVED:
        for (size_t i = 0; i < n; i++)
            if (!segs[i].match) k = push(out, k, &segs[i]);
        break;
    case TT_BEHAVIOR_CONTIGUOUS:
        for (size_t i = 0; i < n; i++) {
            if (segs[i].match == previous_match && k) out[k - 1].end = segs[i].end;
            else k = push(out, k, &segs[i]);
            previous_match = segs[i].match;
        }
        break;
    case TT_BEHAVIOR_MERGED_WITH_PREVIOUS:
        for (size_t i = 0; i < n; i++) {
            if (segs[i].match && !previous_match && k) out[k - 1].end = segs[i].end;
            else k = push(out, k, &segs[i]);
            previous_match = segs[i].match;
        }
        break;
    case TT_BEHAVIOR_MERGED_WITH_NEXT:
        for (size_t i = n; i-- > 0;) {
            if (segs[i].match && !previous_match && k) out[k - 1].start = segs[i].start;
            else k = push(out, k, &segs[i]);
            previous_match = segs[i].match;
        }
        reverse(out, k);
        break;
    }
    size_t kept = 0; /* PreTokenizedString drops every empty piece */
    for (size_t i = 0; i < k; i++)
        if (out[i].end > out[i].start) out[kept++] = out[i];
    return kept;
}
