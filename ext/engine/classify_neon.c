/* NEON kernel (aarch64): 16 bytes per step, the same lanes as the AVX2 kernel.
 *
 *   ASCII      two 64-entry table lookups (vqtbl4q + vqtbx4q). An all-ASCII block stops here.
 *   cont       80-BF -> TT_TAG_CONT, char-start bit 0.
 *   lead       C0-FF -> byte_tag (one vqtbl4q): leads whose chars all share a tag are done here.
 *   2-byte / 3-byte-other / 4-byte
 *              by code-point prefix (cp >> 6): one vqtbl4q over the 64 stage-table tags of that prefix
 *              resolves every char of the block sharing it. NEON has no gather, and a 64-entry lookup is
 *              a single instruction, so every prefix takes this path.
 */
#if defined(__aarch64__)
#include <arm_neon.h>

#include "classify_internal.h"

#define BLOCK 16
#define LOOKAHEAD 3

static inline uint8x16x4_t table64(const uint8_t *table) { return vld1q_u8_x4(table); }

/* One bit per byte lane (bit i = lane i's top bit), the NEON stand-in for movemask. */
static inline uint32_t lane_bits(uint8x16_t mask) {
    static const uint8_t weights[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t m = vandq_u8(mask, vld1q_u8(weights));
    return (uint32_t)vaddv_u8(vget_low_u8(m)) | (uint32_t)vaddv_u8(vget_high_u8(m)) << 8;
}

static uint8x16_t prefix_lane(const tt_classifier *c, const uint8_t *p, uint8x16_t x0, uint8x16_t tags,
                              uint32_t need) {
    uint8x16_t x1 = vld1q_u8(p + 1), x2 = vld1q_u8(p + 2), x3 = vld1q_u8(p + 3);
    uint8x16_t three = vcgeq_u8(x0, vdupq_n_u8(0xE0)), four = vcgeq_u8(x0, vdupq_n_u8(0xF0));
    uint8x16_t last = vbslq_u8(four, x3, vbslq_u8(three, x2, x1));
    last = vandq_u8(last, vdupq_n_u8(0x3F));
    while (need) {
        const uint8_t *q = p + __builtin_ctz(need);
        uint8x16_t match = vceqq_u8(x0, vdupq_n_u8(q[0]));
        if (q[0] >= 0xE0) match = vandq_u8(match, vceqq_u8(x1, vdupq_n_u8(q[1])));
        if (q[0] >= 0xF0) match = vandq_u8(match, vceqq_u8(x2, vdupq_n_u8(q[2])));
        tags = vbslq_u8(match, vqtbl4q_u8(table64(tt_prefix_table(c, q)), last), tags);
        need &= ~lane_bits(match);
    }
    return tags;
}

/* One block at p (p[0 .. BLOCK + LOOKAHEAD) readable); returns its char-start bits. */
static inline uint32_t classify_block(const tt_classifier *c, uint8x16x4_t ascii_lo, uint8x16x4_t ascii_hi,
                                      uint8x16x4_t lead_table, const uint8_t *p, uint8_t *out) {
    uint8x16_t x = vld1q_u8(p);
    uint8x16_t ascii = vqtbx4q_u8(vqtbl4q_u8(ascii_lo, x), ascii_hi, vsubq_u8(x, vdupq_n_u8(64)));
    if (vmaxvq_u8(x) < 0x80) {
        vst1q_u8(out, ascii);
        return 0xFFFFu;
    }
    uint8x16_t is_cont = vceqq_u8(vandq_u8(x, vdupq_n_u8(0xC0)), vdupq_n_u8(0x80));
    uint8x16_t is_lead = vcgeq_u8(x, vdupq_n_u8(0xC0));
    uint8x16_t lead = vqtbl4q_u8(lead_table, vsubq_u8(x, vdupq_n_u8(0xC0)));
    uint8x16_t tags = vorrq_u8(vbslq_u8(is_lead, lead, ascii), is_cont);
    uint32_t need = lane_bits(vceqq_u8(tags, vdupq_n_u8(TT_TAG_LOOKUP)));
    if (need) tags = prefix_lane(c, p, x, tags, need);
    vst1q_u8(out, tags);
    return ~lane_bits(is_cont) & 0xFFFFu;
}

void tt_classify_neon(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                      uint64_t *char_starts) {
    uint8x16x4_t ascii_lo = table64(c->ascii), ascii_hi = table64(c->ascii + 64);
    uint8x16x4_t lead_table = table64(c->byte_tag + 0xC0);
    size_t j = 0;
    for (; j + BLOCK + LOOKAHEAD <= n; j += BLOCK) {
        uint64_t bits = classify_block(c, ascii_lo, ascii_hi, lead_table, text + j, tags + j);
        if (char_starts) tt_store_block_starts(char_starts, j, bits);
    }
    tt_classify_scalar_range(c, text, j, n, tags, char_starts);
}
#endif
