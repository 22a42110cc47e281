/* SSE2 kernel (the x86-64 baseline): 16 bytes per step.
 *
 * SSE2 has neither pshufb nor gathers, so:
 *   ASCII      the branchless range-search kernel: tag = base + sum of (x >= start_i) & delta_i, three
 *              ops per threshold of the ASCII table. An all-ASCII block stops here.
 *   cont       80-BF -> TT_TAG_CONT and the char-start bits, 16 at a time.
 *   leads      one at a time: byte_tag (a lead all of whose chars share a tag, e.g. CJK ideographs), else
 *              the flat BMP table, else the two-level stage tables.
 * Measured (conformance/bench_classify.py, shared noisy machine): on ASCII text the range kernel runs
 * 1.1-1.8 GB/s with the atoms table (19 thresholds) and 2.3-3.7 GB/s with the scripts table (6),
 * against 0.5-0.9 GB/s for the scalar reader, so there is no per-byte ASCII path here.
 */
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>

#include "classify_internal.h"

#define BLOCK 16

typedef struct {
    __m128i start[TT_ASCII_MAX_RUNS], delta[TT_ASCII_MAX_RUNS], base;
    int runs;
} range_table;

static void prepare(const tt_classifier *c, range_table *r) {
    r->runs = c->ascii_runs;
    r->base = _mm_set1_epi8((char)c->ascii_base);
    for (int i = 0; i < r->runs; i++) {
        r->start[i] = _mm_set1_epi8((char)(c->ascii_start[i] - 1));
        r->delta[i] = _mm_set1_epi8((char)c->ascii_delta[i]);
    }
}

/* Bytes >= 0x80 are negative as int8, clear no threshold and come out as garbage the caller replaces. */
static inline __m128i range_lookup(const range_table *r, __m128i x) {
    __m128i tags = r->base;
    for (int i = 0; i < r->runs; i++)
        tags = _mm_add_epi8(tags, _mm_and_si128(_mm_cmpgt_epi8(x, r->start[i]), r->delta[i]));
    return tags;
}

static inline uint8_t lead_tag(const tt_classifier *c, const uint8_t *p) {
    uint8_t tag = c->byte_tag[*p];
    if (tag != TT_TAG_LOOKUP) return tag;
    uint32_t cp = utf8_decode(p, NULL);
    return cp < 0x10000 ? c->bmp[cp] : tt_lookup_cp(c, cp);
}

/* Classify text[j, j + 16) (all readable); returns its char-start bits. */
static inline uint32_t classify_block(const tt_classifier *c, const range_table *r, const uint8_t *p,
                                      uint8_t *out) {
    __m128i x = _mm_loadu_si128((const __m128i *)p);
    uint32_t high = (uint32_t)_mm_movemask_epi8(x);
    __m128i tags = range_lookup(r, x);
    if (!high) {
        _mm_storeu_si128((__m128i *)out, tags);
        return 0xFFFFu;
    }
    __m128i is_cont = _mm_cmplt_epi8(x, _mm_set1_epi8((char)0xC0)); /* signed: 80-BF only */
    tags = _mm_or_si128(tags, is_cont);
    _mm_storeu_si128((__m128i *)out, tags);
    uint32_t cont = (uint32_t)_mm_movemask_epi8(is_cont);
    for (uint32_t leads = high & ~cont; leads; leads &= leads - 1) {
        int i = __builtin_ctz(leads);
        out[i] = lead_tag(c, p + i); /* valid UTF-8: the lead's continuation bytes are inside text */
    }
    return ~cont & 0xFFFFu;
}

void tt_classify_sse2(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                      uint64_t *char_starts) {
    range_table r;
    prepare(c, &r);
    size_t j = 0;
    for (; j + BLOCK <= n; j += BLOCK) {
        uint64_t bits = classify_block(c, &r, text + j, tags + j);
        if (char_starts) tt_store_block_starts(char_starts, j, bits);
    }
    tt_classify_scalar_range(c, text, j, n, tags, char_starts);
}
#endif
