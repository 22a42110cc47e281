/* AVX-512 transcode kernel (F, BW, VL, VBMI2): 16 code units per step, widened to 32-bit lanes.
 *
 * Each lane's char is encoded into its lane as 1-4 UTF-8 bytes in output order (the lane's length picks
 * one of four encodings by mask), and VBMI2's byte compress packs the kept bytes of all 16 lanes together,
 * so a step of mixed scripts costs the same as a step of one. A step of ASCII alone is narrowed to bytes. */
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "transcode_internal.h"

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi2,popcnt")))
#define STEP 16

static AVX512 inline __m512i load_units(const void *data, int unit, size_t i, __mmask16 lanes) {
    if (unit == 1) return _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(lanes, (const uint8_t *)data + i));
    if (unit == 2) return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes, (const uint16_t *)data + i));
    return _mm512_maskz_loadu_epi32(lanes, (const uint32_t *)data + i);
}

static AVX512 inline __m512i or3(__m512i a, __m512i b, __m512i c) { return _mm512_ternarylogic_epi32(a, b, c, 0xFE); }

/* The UTF-8 bytes of each lane's char (low byte first); *keep: bit 4k+b set when byte b of lane k is one
 * of the char's bytes (lanes outside `lanes` keep none). */
static AVX512 inline __m512i encode_lanes(__m512i cp, __mmask16 lanes, __mmask64 *keep) {
    const __m512i low6 = _mm512_set1_epi32(0x3F), cont = _mm512_set1_epi32(0x80), one = _mm512_set1_epi32(1);
    __mmask16 two = _mm512_cmpge_epu32_mask(cp, _mm512_set1_epi32(0x80));
    __mmask16 three = _mm512_cmpge_epu32_mask(cp, _mm512_set1_epi32(0x800));
    __mmask16 four = _mm512_cmpge_epu32_mask(cp, _mm512_set1_epi32(0x10000));
    __m512i b0 = _mm512_or_si512(_mm512_and_si512(cp, low6), cont);                          /* last byte */
    __m512i b1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(cp, 6), low6), cont);   /* one before */
    __m512i b2 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(cp, 12), low6), cont);  /* two before */
    __m512i enc2 = _mm512_or_si512(_mm512_or_si512(_mm512_srli_epi32(cp, 6), _mm512_set1_epi32(0xC0)),
                                   _mm512_slli_epi32(b0, 8));
    __m512i enc3 = or3(_mm512_or_si512(_mm512_srli_epi32(cp, 12), _mm512_set1_epi32(0xE0)), _mm512_slli_epi32(b1, 8),
                       _mm512_slli_epi32(b0, 16));
    __m512i enc4 = or3(_mm512_or_si512(_mm512_srli_epi32(cp, 18), _mm512_set1_epi32(0xF0)), _mm512_slli_epi32(b2, 8),
                       _mm512_or_si512(_mm512_slli_epi32(b1, 16), _mm512_slli_epi32(b0, 24)));
    __m512i bytes = _mm512_mask_mov_epi32(cp, two, enc2);
    bytes = _mm512_mask_mov_epi32(bytes, three, enc3);
    bytes = _mm512_mask_mov_epi32(bytes, four, enc4);
    __m512i n = _mm512_maskz_mov_epi32(lanes, one);
    n = _mm512_mask_add_epi32(n, two, n, one);
    n = _mm512_mask_add_epi32(n, three, n, one);
    n = _mm512_mask_add_epi32(n, four, n, one);
    /* every byte of a lane holds the lane's length; byte b is kept when b < length */
    __m512i spread = _mm512_mullo_epi32(n, _mm512_set1_epi32(0x01010101));
    *keep = _mm512_cmplt_epu8_mask(_mm512_set1_epi32(0x03020100), spread);
    return bytes;
}

static AVX512 inline int has_surrogate(__m512i cp) {
    return _mm512_cmplt_epu32_mask(_mm512_sub_epi32(cp, _mm512_set1_epi32(0xD800)), _mm512_set1_epi32(0x800)) != 0;
}

static AVX512 inline __attribute__((always_inline)) long utf8_of(const void *data, int unit, size_t len, uint8_t *out) {
    uint8_t *o = out;
    size_t i = 0;
    __mmask64 keep;
    /* a full step writes 64 bytes at o <= 4 * i, inside the 4 * len the caller reserved */
    for (; i + STEP <= len; i += STEP) {
        __m512i cp = load_units(data, unit, i, 0xFFFF);
        if (!_mm512_cmpge_epu32_mask(cp, _mm512_set1_epi32(0x80))) {
            _mm_storeu_si128((__m128i *)o, _mm512_cvtepi32_epi8(cp));
            o += STEP;
            continue;
        }
        if (has_surrogate(cp)) return -1;
        __m512i bytes = encode_lanes(cp, 0xFFFF, &keep);
        _mm512_storeu_si512(o, _mm512_maskz_compress_epi8(keep, bytes));
        o += _mm_popcnt_u64(keep);
    }
    if (i < len) {
        __mmask16 lanes = (__mmask16)((1u << (len - i)) - 1);
        __m512i cp = load_units(data, unit, i, lanes);
        if (has_surrogate(cp)) return -1;
        __m512i bytes = encode_lanes(cp, lanes, &keep);
        uint64_t n = _mm_popcnt_u64(keep);
        _mm512_mask_storeu_epi8(o, n == 64 ? ~0ULL : (1ULL << n) - 1, _mm512_maskz_compress_epi8(keep, bytes));
        o += n;
    }
    return (long)(o - out);
}

AVX512 long tt_utf8_from_units_avx512(const void *data, int unit, size_t len, uint8_t *out) {
    return unit == 1 ? utf8_of(data, 1, len, out) : unit == 2 ? utf8_of(data, 2, len, out) : utf8_of(data, 4, len, out);
}
#endif
