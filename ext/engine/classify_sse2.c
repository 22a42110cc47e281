/* SSE2 kernel (the x86-64 baseline): 16 bytes per step.
 *
 * SSE2 has neither pshufb nor gathers, so:
 *   ASCII      the branchless range-search kernel: tag = base + sum of (x >= start_i) & delta_i, two or
 *              three ops per threshold of the ASCII table. An all-ASCII block stops here. A block with at
 *              most two ASCII bytes and no 4-byte char reads them with its leads instead (below).
 *   cont       80-BF -> TT_TAG_CONT and the char-start bits, 16 at a time.
 *   leads      every lane decoded at once in 16-bit lanes (the char's code point for 2/3-byte chars; for
 *              a block holding 4-byte chars, cp >> 6 and its low 6 bits), then one table load per lead
 *              (the flat BMP table, or stage1 + stage2): the gather SSE2 lacks, with no branch per char.
 * Measured (conformance/bench_classify.py, shared noisy machine): on ASCII text the range kernel runs
 * 1.1-1.8 GB/s with the atoms table (19 thresholds) and 2.3-3.7 GB/s with the scripts table (6),
 * against 0.5-0.9 GB/s for the scalar reader, so there is no per-byte ASCII path here. Resolving leads
 * one at a time through byte_tag and a branchy decode ran 0.4-0.8 GB/s on CJK/Brahmic/emoji text; the
 * decoded-lane form removes the mispredicted branches. Skipping the range search in blocks with at most
 * two ASCII bytes raised Brahmic (atoms) 1.07 -> 1.40 GB/s and lowered Latin 1.29 -> 1.10 in alternating
 * runs (docs/performance.md has the current figures).
 */
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#include <string.h>

#include "classify_internal.h"

#define BLOCK 16
#define LOOKAHEAD 3 /* a lead at the last byte of a block reads 3 more bytes */

/* The thresholds in three groups (the sum is order-free): delta 1 (subtract the all-ones compare mask),
 * delta -1 (add it), then the rest (add mask & delta): two ops per threshold instead of three where the
 * table allows. */
typedef struct {
    __m128i start[TT_ASCII_MAX_RUNS], delta[TT_ASCII_MAX_RUNS], base;
    int ones, minus_ones, runs; /* start[0, ones): +1, [ones, minus_ones): -1, [minus_ones, runs): delta */
} range_table;

static void prepare(const tt_classifier *c, range_table *r) {
    int at = 0;
    r->base = _mm_set1_epi8((char)c->ascii_base);
    for (int group = 0; group < 3; group++) {
        for (int i = 0; i < c->ascii_runs; i++) {
            uint8_t delta = c->ascii_delta[i];
            if ((group == 0) != (delta == 1) || (group == 1) != (delta == 0xFF)) continue;
            r->start[at] = _mm_set1_epi8((char)(c->ascii_start[i] - 1));
            r->delta[at++] = _mm_set1_epi8((char)delta);
        }
        if (group == 0) r->ones = at;
        if (group == 1) r->minus_ones = at;
    }
    r->runs = at;
}

/* Bytes >= 0x80 are negative as int8, clear no threshold and come out as garbage the caller replaces. */
static inline __m128i range_lookup(const range_table *r, __m128i x) {
    __m128i tags = r->base;
    int i = 0;
    for (; i < r->ones; i++) tags = _mm_sub_epi8(tags, _mm_cmpgt_epi8(x, r->start[i]));
    for (; i < r->minus_ones; i++) tags = _mm_add_epi8(tags, _mm_cmpgt_epi8(x, r->start[i]));
    for (; i < r->runs; i++) tags = _mm_add_epi8(tags, _mm_and_si128(_mm_cmpgt_epi8(x, r->start[i]), r->delta[i]));
    return tags;
}

static inline __m128i select16(__m128i mask, __m128i if_clear, __m128i if_set) {
    return _mm_or_si128(_mm_and_si128(mask, if_set), _mm_andnot_si128(mask, if_clear));
}

/* Eight lanes of a block, widened to 16 bits: b0 the lane's byte, b1..b3 the bytes after it. */
typedef struct {
    __m128i b0, b1, b2, b3;
} lanes16;

static inline lanes16 widen(const __m128i x[4], int high) {
    const __m128i zero = _mm_setzero_si128();
    lanes16 l;
    l.b0 = high ? _mm_unpackhi_epi8(x[0], zero) : _mm_unpacklo_epi8(x[0], zero);
    l.b1 = high ? _mm_unpackhi_epi8(x[1], zero) : _mm_unpacklo_epi8(x[1], zero);
    l.b2 = high ? _mm_unpackhi_epi8(x[2], zero) : _mm_unpacklo_epi8(x[2], zero);
    l.b3 = high ? _mm_unpackhi_epi8(x[3], zero) : _mm_unpacklo_epi8(x[3], zero);
    return l;
}

/* Code point of a 2- or 3-byte char led by each lane (garbage in other lanes). */
static inline __m128i bmp_points(lanes16 l) {
    const __m128i low6 = _mm_set1_epi16(0x3F);
    __m128i three = _mm_cmpgt_epi16(l.b0, _mm_set1_epi16(0xDF));
    __m128i top3 = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(l.b0, _mm_set1_epi16(0x0F)), 6),
                                _mm_and_si128(l.b1, low6));
    __m128i top = select16(three, _mm_and_si128(l.b0, _mm_set1_epi16(0x1F)), top3); /* cp >> 6 */
    __m128i last = _mm_and_si128(select16(three, l.b1, l.b2), low6);
    __m128i ascii = _mm_cmplt_epi16(l.b0, _mm_set1_epi16(0x80));
    return select16(ascii, _mm_or_si128(_mm_slli_epi16(top, 6), last), l.b0);
}

/* cp >> 6 of a 2-, 3- or 4-byte char led by each lane (at most 0x43FF: fits 16 bits), and cp & 0x3F. */
static inline void any_points(lanes16 l, __m128i *prefix, __m128i *last) {
    const __m128i low6 = _mm_set1_epi16(0x3F);
    __m128i three = _mm_cmpgt_epi16(l.b0, _mm_set1_epi16(0xDF));
    __m128i four = _mm_cmpgt_epi16(l.b0, _mm_set1_epi16(0xEF));
    __m128i b1 = _mm_and_si128(l.b1, low6), b2 = _mm_and_si128(l.b2, low6);
    __m128i top3 = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(l.b0, _mm_set1_epi16(0x0F)), 6), b1);
    __m128i top4 = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(l.b0, _mm_set1_epi16(0x07)), 12),
                                _mm_or_si128(_mm_slli_epi16(b1, 6), b2));
    *prefix = select16(four, select16(three, _mm_and_si128(l.b0, _mm_set1_epi16(0x1F)), top3), top4);
    *last = _mm_and_si128(select16(four, select16(three, l.b1, l.b2), l.b3), low6);
}

/* One block at p (p[0 .. BLOCK + LOOKAHEAD) readable); returns its char-start bits. */
static inline uint32_t classify_block(const tt_classifier *c, const range_table *r, const uint8_t *p,
                                      uint8_t *out) {
    __m128i x[4];
    x[0] = _mm_loadu_si128((const __m128i *)p);
    uint32_t high = (uint32_t)_mm_movemask_epi8(x[0]);
    if (!high) {
        _mm_storeu_si128((__m128i *)out, range_lookup(r, x[0]));
        return 0xFFFFu;
    }
    __m128i is_cont = _mm_cmplt_epi8(x[0], _mm_set1_epi8((char)0xC0)); /* signed: 80-BF only */
    uint32_t cont = (uint32_t)_mm_movemask_epi8(is_cont);
    uint32_t leads = high & ~cont;
    uint32_t ascii = ~high & 0xFFFFu, fewer = ascii & (ascii - 1);
    /* signed: F0-FF only */
    uint32_t four = (uint32_t)_mm_movemask_epi8(_mm_cmpgt_epi8(x[0], _mm_set1_epi8((char)0xEF))) & leads;
    if (!four && !(fewer & (fewer - 1))) {
        /* at most two ASCII bytes (text in a script that separates words by spaces): they take their tags
         * from the BMP table in the leads' loop instead of a range search over the whole block */
        _mm_storeu_si128((__m128i *)out, is_cont);
        leads |= ascii;
    } else {
        __m128i tags = ascii ? range_lookup(r, x[0]) : _mm_setzero_si128();
        _mm_storeu_si128((__m128i *)out, _mm_or_si128(tags, is_cont));
    }
    if (!leads) return ~cont & 0xFFFFu;
    for (int k = 1; k < 4; k++) x[k] = _mm_loadu_si128((const __m128i *)(p + k));
    if (!four) {
        uint16_t cps[BLOCK];
        _mm_storeu_si128((__m128i *)cps, bmp_points(widen(x, 0)));
        _mm_storeu_si128((__m128i *)(cps + 8), bmp_points(widen(x, 1)));
        for (; leads; leads &= leads - 1) {
            int i = __builtin_ctz(leads);
            out[i] = c->bmp[cps[i]];
        }
    } else {
        uint16_t prefix[BLOCK], last[BLOCK];
        __m128i pre, low;
        any_points(widen(x, 0), &pre, &low);
        _mm_storeu_si128((__m128i *)prefix, pre);
        _mm_storeu_si128((__m128i *)last, low);
        any_points(widen(x, 1), &pre, &low);
        _mm_storeu_si128((__m128i *)(prefix + 8), pre);
        _mm_storeu_si128((__m128i *)(last + 8), low);
        for (; leads; leads &= leads - 1) {
            int i = __builtin_ctz(leads);
            out[i] = c->stage2[c->block_offset[prefix[i] >> 2] + ((prefix[i] & 3u) << 6) + last[i]];
        }
    }
    return ~cont & 0xFFFFu;
}

void tt_classify_sse2(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                      uint64_t *char_starts) {
    range_table r;
    prepare(c, &r);
    size_t j = 0;
    for (; j + BLOCK + LOOKAHEAD <= n; j += BLOCK) {
        uint64_t bits = classify_block(c, &r, text + j, tags + j);
        if (char_starts) tt_store_block_starts(char_starts, j, bits);
    }
    if (j == n) return;
    /* Tail (at most BLOCK + LOOKAHEAD - 1 bytes): run the same blocks over a zero-padded copy. */
    uint8_t in[3 * BLOCK] = {0}, out[2 * BLOCK];
    size_t rest = n - j;
    memcpy(in, text + j, rest);
    for (size_t k = 0; k < rest; k += BLOCK) {
        uint64_t bits = classify_block(c, &r, in + k, out + k);
        if (rest - k < BLOCK) bits &= (UINT64_C(1) << (rest - k)) - 1;
        if (char_starts) tt_store_block_starts(char_starts, j + k, bits);
    }
    memcpy(tags + j, out, rest);
}
#endif
