/* AVX2 kernel: 32 bytes per step, compiled for avx2 per function and chosen at run time.
 *
 * Lanes per 32-byte block:
 *   ASCII      nibble-shuffle of the 128-entry ASCII table (8 vpshufb, XOR-chained, see shuffle_lookup).
 *              An all-ASCII block stops here: the multibyte lanes are skipped entirely.
 *   cont       80-BF -> TT_TAG_CONT, char-start bit 0.
 *   lead       C0-FF -> byte_tag (4 vpshufb): a lead whose every char shares one tag is done here (CJK
 *              ideograph and Hangul leads, for instance; derived at init from the tables, not assumed).
 *   4-byte     the 4-byte chars sharing the first one's code-point prefix (cp >> 6): one 64-entry
 *              shuffle of its stage2 slice (prefix_lane).
 *   the rest   every lane decoded at once in 16-bit lanes (cp for 2/3-byte chars, cp >> 6 and its low
 *              bits when 4-byte chars remain), then one table load per lane left (resolve_leads).
 * Why this shape (measured with conformance/bench_classify.py): the ASCII lane's nibble shuffle beats a
 * branchless range search over the atoms table's thresholds and ties on the scripts table, so AVX2 always
 * shuffles (the range kernel lives in the SSE2 kernel, which has no pshufb). For the other leads, up to
 * four prefix shuffles followed by 8-lane gathers ran 1.1-1.5 GB/s on CJK and mixed text (a block of
 * mixed text needs many prefixes, and gathers are slow on this AMD core); decoded lanes with one load
 * each run 1.6-1.8 GB/s there, and keeping one prefix shuffle for 4-byte chars holds emoji text at ~2.
 */
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#include <string.h>

#include "classify_internal.h"

#define AVX2 __attribute__((target("avx2")))
#define BLOCK 32
#define LOOKAHEAD 3 /* a lead at the last byte of a block reads 3 more bytes */

typedef struct {
    __m256i ascii[8];  /* XOR-chained 16-entry slices of the ASCII table */
    __m256i lead[4];   /* same for byte_tag[0xC0..0xFF] */
} avx2_tables;

static AVX2 inline void chain_slices(__m256i *out, const uint8_t *table, int slices) {
    __m128i prev = _mm_setzero_si128();
    for (int k = 0; k < slices; k++) {
        __m128i slice = _mm_loadu_si128((const __m128i *)(table + 16 * k));
        out[k] = _mm256_broadcastsi128_si256(_mm_xor_si128(slice, prev));
        prev = slice;
    }
}

static AVX2 void prepare(const tt_classifier *c, avx2_tables *t) {
    chain_slices(t->ascii, c->ascii, 8);
    chain_slices(t->lead, c->byte_tag + 0xC0, 4);
}

/* table[x] for x < 16 * slices. Slice k is read with index x - 16k: vpshufb zeroes it once that index
 * wraps negative (bit 7 set), so slices 0..x>>4 contribute and their XOR chain telescopes to the
 * wanted slice. */
static AVX2 inline __m256i shuffle_lookup(const __m256i *slices, int count, __m256i x) {
    __m256i r = _mm256_shuffle_epi8(slices[0], x);
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (int k = 1; k < count; k++) {
        x = _mm256_sub_epi8(x, sixteen);
        r = _mm256_xor_si256(r, _mm256_shuffle_epi8(slices[k], x));
    }
    return r;
}

/* Sixteen lanes from q, widened to 16 bits. */
static AVX2 inline __m256i widen16(const uint8_t *q) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)q));
}

/* Replace the TT_TAG_LOOKUP bytes of out[0..15] (bits of `need`) by their tags: every lane decoded at
 * once in 16-bit lanes, then one table load per lane to resolve (the flat BMP table for 2/3-byte chars;
 * stage1 + stage2 from cp >> 6, which fits 16 bits, when 4-byte chars are among them). */
static AVX2 inline void resolve_leads(const tt_classifier *c, const uint8_t *q, uint32_t need, int any_four,
                                      uint8_t *out) {
    const __m256i low6 = _mm256_set1_epi16(0x3F);
    __m256i b0 = widen16(q), b1 = _mm256_and_si256(widen16(q + 1), low6), b2 = widen16(q + 2);
    __m256i three = _mm256_cmpgt_epi16(b0, _mm256_set1_epi16(0xDF));
    __m256i top3 = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b0, _mm256_set1_epi16(0x0F)), 6), b1);
    __m256i top = _mm256_blendv_epi8(_mm256_and_si256(b0, _mm256_set1_epi16(0x1F)), top3, three); /* cp >> 6 */
    __m256i last = _mm256_blendv_epi8(b1, _mm256_and_si256(b2, low6), three);
    if (!any_four) {
        uint16_t cps[16];
        _mm256_storeu_si256((__m256i *)cps, _mm256_or_si256(_mm256_slli_epi16(top, 6), last));
        for (; need; need &= need - 1) {
            int i = __builtin_ctz(need);
            out[i] = c->bmp[cps[i]];
        }
        return;
    }
    __m256i four = _mm256_cmpgt_epi16(b0, _mm256_set1_epi16(0xEF));
    b2 = _mm256_and_si256(b2, low6);
    __m256i top4 = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b0, _mm256_set1_epi16(0x07)), 12),
                                   _mm256_or_si256(_mm256_slli_epi16(b1, 6), b2));
    top = _mm256_blendv_epi8(top, top4, four);
    last = _mm256_blendv_epi8(last, _mm256_and_si256(widen16(q + 3), low6), four);
    uint16_t prefix[16], lows[16];
    _mm256_storeu_si256((__m256i *)prefix, top);
    _mm256_storeu_si256((__m256i *)lows, last);
    for (; need; need &= need - 1) {
        int i = __builtin_ctz(need);
        out[i] = c->stage2[c->block_offset[prefix[i] >> 2] + ((prefix[i] & 3u) << 6) + lows[i]];
    }
}

/* Resolve every 4-byte lane of `need` sharing the code-point prefix of the 4-byte char led at `seed`
 * (same lead and middle two bytes): one 64-entry shuffle keyed by the last byte. 4-byte chars (emoji,
 * mostly) cluster in a few prefixes, and the decoded-lane path pays two dependent loads for each. */
static AVX2 inline __m256i prefix_lane(const tt_classifier *c, const uint8_t *p, __m256i x0, __m256i tags,
                                       int seed, uint32_t *need) {
    const uint8_t *q = p + seed;
    __m256i match = _mm256_and_si256(
        _mm256_cmpeq_epi8(x0, _mm256_set1_epi8((char)q[0])),
        _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + 1)), _mm256_set1_epi8((char)q[1])),
                         _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + 2)), _mm256_set1_epi8((char)q[2]))));
    __m256i last = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(p + 3)), _mm256_set1_epi8(0x3F));
    __m256i slices[4];
    chain_slices(slices, tt_prefix_table(c, q), 4);
    *need &= ~(uint32_t)_mm256_movemask_epi8(match);
    return _mm256_blendv_epi8(tags, shuffle_lookup(slices, 4, last), match);
}

/* One block at p (p[0 .. BLOCK + LOOKAHEAD) readable); returns its char-start bits. */
static AVX2 inline uint32_t classify_block(const tt_classifier *c, const avx2_tables *t, const uint8_t *p,
                                           uint8_t *out) {
    __m256i x = _mm256_loadu_si256((const __m256i *)p);
    if (!_mm256_movemask_epi8(x)) {
        _mm256_storeu_si256((__m256i *)out, shuffle_lookup(t->ascii, 8, x));
        return 0xFFFFFFFFu;
    }
    __m256i is_cont = _mm256_cmpgt_epi8(_mm256_set1_epi8((char)0xC0), x); /* signed: 80-BF only */
    __m256i is_lead = _mm256_andnot_si256(is_cont, _mm256_cmpgt_epi8(_mm256_setzero_si256(), x));
    __m256i lead = shuffle_lookup(t->lead, 4, _mm256_sub_epi8(x, _mm256_set1_epi8((char)0xC0)));
    __m256i tags = _mm256_or_si256(_mm256_blendv_epi8(shuffle_lookup(t->ascii, 8, x), lead, is_lead), is_cont);
    uint32_t need = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(tags, _mm256_set1_epi8((char)TT_TAG_LOOKUP)));
    uint32_t four = 0;
    if (need) { /* signed: F0-FF only */
        four = (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(x, _mm256_set1_epi8((char)0xEF))) & need;
        if (four) {
            tags = prefix_lane(c, p, x, tags, __builtin_ctz(four), &need);
            four &= need;
        }
    }
    _mm256_storeu_si256((__m256i *)out, tags);
    if (need & 0xFFFFu) resolve_leads(c, p, need & 0xFFFFu, (four & 0xFFFFu) != 0, out);
    if (need >> 16) resolve_leads(c, p + 16, need >> 16, (four >> 16) != 0, out + 16);
    return ~(uint32_t)_mm256_movemask_epi8(is_cont);
}

static inline void put_starts(uint64_t *char_starts, size_t at, uint32_t bits) {
    if (!char_starts) return;
    if (at & 32)
        char_starts[at >> 6] |= (uint64_t)bits << 32;
    else
        char_starts[at >> 6] = bits;
}

AVX2 void tt_classify_avx2(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                           uint64_t *char_starts) {
    avx2_tables t;
    prepare(c, &t);
    size_t j = 0;
    for (; j + BLOCK + LOOKAHEAD <= n; j += BLOCK) put_starts(char_starts, j, classify_block(c, &t, text + j, tags + j));
    if (j == n) return;
    /* Tail (at most BLOCK + LOOKAHEAD - 1 bytes): run the same blocks over a zero-padded copy. */
    uint8_t in[3 * BLOCK] = {0}, out[2 * BLOCK];
    size_t rest = n - j;
    memcpy(in, text + j, rest);
    for (size_t k = 0; k < rest; k += BLOCK) {
        uint32_t bits = classify_block(c, &t, in + k, out + k);
        if (rest - k < BLOCK) bits &= (UINT32_C(1) << (rest - k)) - 1;
        put_starts(char_starts, j + k, bits);
    }
    memcpy(tags + j, out, rest);
}
#endif
