/* AVX-512 kernel (BW + VBMI): 64 bytes per step, compiled per function and chosen at run time.
 *
 * VBMI's byte permutes look up 64 or 128 table entries in one instruction, so every lane is a single
 * table lookup and nothing is gathered or resolved one char at a time:
 *   ASCII      vpermi2b over the 128-entry ASCII table. An all-ASCII block stops here.
 *   cont       80-BF -> TT_TAG_CONT, char-start bit 0.
 *   lead       C0-FF -> byte_tag (one vpermb): a lead whose every char shares one tag is done here.
 *   2-byte / 3-byte-other / 4-byte
 *              the remaining leads, one code-point prefix (cp >> 6) per round: every char of the block
 *              sharing the prefix takes its tag from one vpermb over the 64 stage-table tags of that
 *              prefix, keyed by the char's last byte. Rounds continue until no lane is left (text in one
 *              script needs one to three per block; a block can need at most 32).
 */
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#include <string.h>

#include "classify_internal.h"

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vbmi")))
#define BLOCK 64
#define LOOKAHEAD 3 /* a lead at the last byte of a block reads 3 more bytes */

typedef struct {
    __m512i ascii_low, ascii_high; /* ascii[0..63], ascii[64..127] */
    __m512i lead;                  /* byte_tag[0xC0..0xFF] */
} avx512_tables;

static AVX512 void prepare(const tt_classifier *c, avx512_tables *t) {
    t->ascii_low = _mm512_loadu_si512(c->ascii);
    t->ascii_high = _mm512_loadu_si512(c->ascii + 64);
    t->lead = _mm512_loadu_si512(c->byte_tag + 0xC0);
}

/* Resolve the TT_TAG_LOOKUP lanes (bits of `need`) one code-point prefix at a time. A lane shares the
 * prefix of the first unresolved lane when its lead matches, plus its second byte for 3/4-byte chars
 * and its third for 4-byte chars; its last byte's low 6 bits index the prefix's 64 tags. */
static AVX512 inline __m512i prefix_lane(const tt_classifier *c, const uint8_t *p, __m512i x0, __m512i tags,
                                         uint64_t need) {
    __m512i x1 = _mm512_loadu_si512(p + 1);
    __m512i x2 = _mm512_loadu_si512(p + 2);
    __m512i x3 = _mm512_loadu_si512(p + 3);
    __mmask64 three = _mm512_cmpge_epu8_mask(x0, _mm512_set1_epi8((char)0xE0));
    __mmask64 four = _mm512_cmpge_epu8_mask(x0, _mm512_set1_epi8((char)0xF0));
    __m512i last = _mm512_mask_mov_epi8(_mm512_mask_mov_epi8(x1, three, x2), four, x3);
    do {
        const uint8_t *q = p + __builtin_ctzll(need);
        __mmask64 match = _mm512_cmpeq_epi8_mask(x0, _mm512_set1_epi8((char)q[0]));
        if (q[0] >= 0xE0) match &= _mm512_cmpeq_epi8_mask(x1, _mm512_set1_epi8((char)q[1]));
        if (q[0] >= 0xF0) match &= _mm512_cmpeq_epi8_mask(x2, _mm512_set1_epi8((char)q[2]));
        /* vpermb reads only the low 6 bits of each index: the last byte's payload */
        tags = _mm512_mask_permutexvar_epi8(tags, match, last, _mm512_loadu_si512(tt_prefix_table(c, q)));
        need &= ~(uint64_t)match;
    } while (need);
    return tags;
}

/* One block at p (p[0 .. BLOCK + LOOKAHEAD) readable); returns its char-start bits. */
static AVX512 inline uint64_t classify_block(const tt_classifier *c, const avx512_tables *t, const uint8_t *p,
                                             uint8_t *out) {
    __m512i x = _mm512_loadu_si512(p);
    __m512i tags = _mm512_permutex2var_epi8(t->ascii_low, x, t->ascii_high); /* index bits 0-6 */
    __mmask64 high = _mm512_movepi8_mask(x);
    if (!high) {
        _mm512_storeu_si512(out, tags);
        return ~UINT64_C(0);
    }
    __mmask64 is_lead = _mm512_cmpge_epu8_mask(x, _mm512_set1_epi8((char)0xC0));
    __mmask64 is_cont = high & ~is_lead;
    tags = _mm512_mask_permutexvar_epi8(tags, is_lead, x, t->lead); /* index bits 0-5: lead - 0xC0 */
    tags = _mm512_mask_mov_epi8(tags, is_cont, _mm512_set1_epi8((char)TT_TAG_CONT));
    uint64_t need = _mm512_cmpeq_epi8_mask(tags, _mm512_set1_epi8((char)TT_TAG_LOOKUP));
    if (need) tags = prefix_lane(c, p, x, tags, need);
    _mm512_storeu_si512(out, tags);
    return ~(uint64_t)is_cont;
}

AVX512 void tt_classify_avx512(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                               uint64_t *char_starts) {
    avx512_tables t;
    prepare(c, &t);
    size_t j = 0;
    for (; j + BLOCK + LOOKAHEAD <= n; j += BLOCK) {
        uint64_t bits = classify_block(c, &t, text + j, tags + j);
        if (char_starts) char_starts[j >> 6] = bits;
    }
    if (j == n) return;
    /* Tail (at most BLOCK + LOOKAHEAD - 1 bytes): run the same blocks over a zero-padded copy. */
    uint8_t in[3 * BLOCK] = {0}, out[2 * BLOCK];
    size_t rest = n - j;
    memcpy(in, text + j, rest);
    for (size_t k = 0; k < rest; k += BLOCK) {
        uint64_t bits = classify_block(c, &t, in + k, out + k);
        if (rest - k < BLOCK) bits &= (UINT64_C(1) << (rest - k)) - 1;
        if (char_starts) char_starts[(j + k) >> 6] = bits;
    }
    memcpy(tags + j, out, rest);
}
#endif
