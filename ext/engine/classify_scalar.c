/* The portable reader: one char at a time through the committed two-level tables.
 *
 * It is the reference every SIMD kernel must match byte for byte, so it stays the plainest possible
 * reading of the tables: ASCII table, continuation tag, or decode + stage1/stage2.
 */
#include "classify_internal.h"

static inline uint8_t tag_at(const tt_classifier *c, const uint8_t *text, size_t i) {
    uint8_t b = text[i];
    if (b < 0x80) return c->ascii[b];
    if (b < 0xC0) return TT_TAG_CONT;
    return tt_lookup_cp(c, utf8_decode(text + i, NULL));
}

void tt_classify_scalar_range(const tt_classifier *c, const uint8_t *text, size_t from, size_t n,
                              uint8_t *tags, uint64_t *char_starts) {
    /* Bits below `from` in its word were written by the caller; everything from `from` on is ours. */
    uint64_t word = 0;
    if (char_starts && (from & 63)) word = char_starts[from >> 6] & ((UINT64_C(1) << (from & 63)) - 1);
    for (size_t i = from; i < n; i++) {
        uint8_t tag = tag_at(c, text, i);
        tags[i] = tag;
        word |= (uint64_t)(tag != TT_TAG_CONT) << (i & 63);
        if ((i & 63) == 63) {
            if (char_starts) char_starts[i >> 6] = word;
            word = 0;
        }
    }
    if (char_starts && (n & 63)) char_starts[n >> 6] = word;
}

void tt_classify_scalar(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                        uint64_t *char_starts) {
    tt_classify_scalar_range(c, text, 0, n, tags, char_starts);
}
