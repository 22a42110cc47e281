/* A set of byte values tested sixteen bytes at a time (SSSE3 pshufb): byte x is taken when
 * lo[x & 15] & hi[x >> 4]. Each high nibble's row of low nibbles is one of at most eight buckets; past
 * eight, the last bucket takes the union of the rest, so such a set is over-approximated and its users
 * confirm every hit exactly. Header-only: the scan inlines into each scanner's loop. */
#ifndef TT_NIBBLE_SET_H
#define TT_NIBBLE_SET_H

#include <stdint.h>
#include <string.h>

typedef struct {
    uint8_t lo[16], hi[16];
    int simd; /* the CPU has SSSE3 */
} tt_nibble_set;

static inline void tt_nibble_set_build(tt_nibble_set *set, const uint8_t member[256]) {
    uint16_t bucket_rows[8];
    int n_buckets = 0;
    memset(set, 0, sizeof(*set));
    for (int h = 0; h < 16; h++) {
        uint16_t row = 0;
        for (int l = 0; l < 16; l++) row |= (uint16_t)(member[h << 4 | l] ? 1u << l : 0);
        if (!row) continue;
        int k = 0;
        while (k < n_buckets && bucket_rows[k] != row) k++;
        if (k == n_buckets) {
            if (n_buckets < 8) bucket_rows[n_buckets++] = row;
            else bucket_rows[k = 7] |= row;
        }
        set->hi[h] |= (uint8_t)(1u << k);
    }
    for (int k = 0; k < n_buckets; k++)
        for (int l = 0; l < 16; l++)
            if (bucket_rows[k] >> l & 1) set->lo[l] |= (uint8_t)(1u << k);
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    set->simd = __builtin_cpu_supports("ssse3");
#endif
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
/* Bit i: bytes[i] may be in the set whose lo and hi rows are lo_tbl and hi_tbl (loaded once by the caller's
 * loop). */
__attribute__((target("ssse3"))) static inline uint32_t tt_nibble_bits16(__m128i lo_tbl, __m128i hi_tbl,
                                                                        const uint8_t *bytes) {
    const __m128i nibble = _mm_set1_epi8(0x0F);
    __m128i x = _mm_loadu_si128((const __m128i *)bytes);
    __m128i lo = _mm_shuffle_epi8(lo_tbl, _mm_and_si128(x, nibble));
    __m128i high = _mm_shuffle_epi8(hi_tbl, _mm_and_si128(_mm_srli_epi16(x, 4), nibble));
    return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(lo, high), _mm_setzero_si128())) ^ 0xFFFFu;
}

__attribute__((target("ssse3"))) static inline uint32_t tt_nibble_skip_ssse3(const tt_nibble_set *set,
                                                                            const uint8_t *bytes, uint32_t p,
                                                                            uint32_t end) {
    const __m128i lo_tbl = _mm_loadu_si128((const __m128i *)set->lo);
    const __m128i hi_tbl = _mm_loadu_si128((const __m128i *)set->hi);
    for (; p + 16 <= end; p += 16) {
        uint32_t bits = tt_nibble_bits16(lo_tbl, hi_tbl, bytes + p);
        if (bits) return p + (uint32_t)__builtin_ctz(bits);
    }
    return p;
}
#endif

/* From p on, past every whole sixteen-byte block that holds no byte of the set: the first byte of a block
 * that may be in it, else where fewer than sixteen bytes are left (the caller checks on from there). */
static inline uint32_t tt_nibble_skip(const tt_nibble_set *set, const uint8_t *bytes, uint32_t p, uint32_t end) {
#if defined(__x86_64__) || defined(__i386__)
    if (set->simd) return tt_nibble_skip_ssse3(set, bytes, p, end);
#endif
    (void)set; (void)bytes; (void)end;
    return p;
}

#endif
