/* AVX2 kernel: 32 bytes per step, compiled for avx2 per function and chosen at run time.
 *
 * Lanes per 32-byte block:
 *   ASCII      nibble-shuffle of the 128-entry ASCII table (8 vpshufb, XOR-chained, see shuffle_lookup).
 *              An all-ASCII block stops here: the multibyte lanes are skipped entirely.
 *   cont       80-BF -> TT_TAG_CONT, char-start bit 0.
 *   lead       C0-FF -> byte_tag (4 vpshufb): a lead whose every char shares one tag is done here (CJK
 *              ideograph and Hangul leads, for instance; derived at init from the tables, not assumed).
 *   2-byte / 3-byte-other / 4-byte
 *              the remaining leads, by code-point prefix (cp >> 6): all chars of the block sharing a
 *              prefix take their tags from one 64-entry shuffle of the stage tables (prefix_lane); lanes
 *              left after PREFIX_ROUNDS prefixes are decoded 8 at a time and gathered (gather_leads).
 * Why this shape (measured with conformance/bench_classify.py): the ASCII lane's nibble shuffle beats a
 * branchless range search over the atoms table's thresholds and ties on the scripts table, so AVX2 always
 * shuffles (the range kernel lives in the SSE2 kernel, which has no pshufb); for non-ASCII chars the
 * prefix lane beats gathers alone, and a range search over the thousands of runs above ASCII does not
 * compete.
 */
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#include <string.h>

#include "classify_internal.h"

#define AVX2 __attribute__((target("avx2")))
#define BLOCK 32
#define LOOKAHEAD 3 /* a lead at the last byte of a block reads 3 more bytes */
#define PREFIX_ROUNDS 4

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

static AVX2 inline __m256i widen8(const uint8_t *p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

/* Code points of the chars whose leads sit at q[0..7] (lanes outside `lanes` become 0). */
static AVX2 inline __m256i decode8(const uint8_t *q, __m256i lanes) {
    const __m256i low6 = _mm256_set1_epi32(0x3F);
    __m256i b0 = widen8(q);
    __m256i b1 = _mm256_and_si256(widen8(q + 1), low6);
    __m256i b2 = _mm256_and_si256(widen8(q + 2), low6);
    __m256i b3 = _mm256_and_si256(widen8(q + 3), low6);
    __m256i cp2 = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(b0, _mm256_set1_epi32(0x1F)), 6), b1);
    __m256i cp3 = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(b0, _mm256_set1_epi32(0x0F)), 12),
                                  _mm256_or_si256(_mm256_slli_epi32(b1, 6), b2));
    __m256i cp4 = _mm256_or_si256(
        _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(b0, _mm256_set1_epi32(0x07)), 18),
                        _mm256_slli_epi32(b1, 12)),
        _mm256_or_si256(_mm256_slli_epi32(b2, 6), b3));
    __m256i cp = _mm256_blendv_epi8(cp2, cp3, _mm256_cmpgt_epi32(b0, _mm256_set1_epi32(0xDF)));
    cp = _mm256_blendv_epi8(cp, cp4, _mm256_cmpgt_epi32(b0, _mm256_set1_epi32(0xEF)));
    return _mm256_and_si256(cp, lanes);
}

/* Replace the TT_TAG_LOOKUP bytes of out[0..31] (bits of `need`) by a stage-table gather. */
static AVX2 void gather_leads(const tt_classifier *c, const uint8_t *p, uint32_t need, uint8_t *out) {
    const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i low8 = _mm256_set1_epi32(0xFF);
    /* byte 0 of each dword, then the two 128-bit halves' first dwords side by side */
    const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8,
                                          12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i join = _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1);
    for (int g = 0; g < BLOCK / 8; g++) {
        uint32_t m = (need >> (8 * g)) & 0xFF;
        if (!m) continue;
        const uint8_t *q = p + 8 * g;
        __m256i lanes = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)m), bits), bits);
        __m256i cp = decode8(q, lanes);
        __m256i found;
        if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(cp, _mm256_set1_epi32(0xFFFF)))) {
            __m256i block = _mm256_i32gather_epi32((const int *)c->block_offset, _mm256_srli_epi32(cp, 8), 4);
            __m256i index = _mm256_add_epi32(block, _mm256_and_si256(cp, low8));
            found = _mm256_i32gather_epi32((const int *)c->stage2_padded, index, 1);
        } else {
            found = _mm256_i32gather_epi32((const int *)c->bmp, cp, 1);
        }
        /* found: only byte 0 of each dword is meaningful, and only byte 0 is kept by `pick` */
        __m256i merged = _mm256_blendv_epi8(widen8(out + 8 * g), found, lanes);
        merged = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(merged, pick), join);
        _mm_storel_epi64((__m128i *)(out + 8 * g), _mm256_castsi256_si128(merged));
    }
}

/* Resolve TT_TAG_LOOKUP lanes one code-point prefix at a time: every lane whose char shares the prefix
 * (same lead, and same middle bytes for 3/4-byte chars) takes its tag from a 64-entry shuffle keyed by
 * the char's last byte. Text in one script needs one or two prefixes per block; after
 * PREFIX_ROUNDS the remaining lanes go to the gather. */
static AVX2 inline __m256i prefix_lane(const tt_classifier *c, const uint8_t *p, __m256i x0, __m256i tags,
                                       uint32_t *need) {
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(p + 1));
    __m256i x2 = _mm256_loadu_si256((const __m256i *)(p + 2));
    __m256i x3 = _mm256_loadu_si256((const __m256i *)(p + 3));
    /* signed compares; only lead lanes are ever selected below */
    __m256i three = _mm256_cmpgt_epi8(x0, _mm256_set1_epi8((char)0xDF));
    __m256i four = _mm256_cmpgt_epi8(x0, _mm256_set1_epi8((char)0xEF));
    __m256i last = _mm256_blendv_epi8(_mm256_blendv_epi8(x1, x2, three), x3, four);
    last = _mm256_and_si256(last, _mm256_set1_epi8(0x3F));
    for (int round = 0; *need && round < PREFIX_ROUNDS; round++) {
        const uint8_t *q = p + __builtin_ctz(*need);
        __m256i match = _mm256_cmpeq_epi8(x0, _mm256_set1_epi8((char)q[0]));
        if (q[0] >= 0xE0) match = _mm256_and_si256(match, _mm256_cmpeq_epi8(x1, _mm256_set1_epi8((char)q[1])));
        if (q[0] >= 0xF0) match = _mm256_and_si256(match, _mm256_cmpeq_epi8(x2, _mm256_set1_epi8((char)q[2])));
        __m256i slices[4];
        chain_slices(slices, tt_prefix_table(c, q), 4);
        tags = _mm256_blendv_epi8(tags, shuffle_lookup(slices, 4, last), match);
        *need &= ~(uint32_t)_mm256_movemask_epi8(match);
    }
    return tags;
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
    if (need) tags = prefix_lane(c, p, x, tags, &need);
    _mm256_storeu_si256((__m256i *)out, tags);
    if (need) gather_leads(c, p, need, out);
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
