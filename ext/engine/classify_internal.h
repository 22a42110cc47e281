/* Shared shape of the classify kernels (scalar, SSE2, AVX2, AVX-512, NEON).
 *
 * Every implementation reads the same derived tables, built once at init from the committed generated
 * tables (tables/tagtok_tables.h); none of them knows anything about Unicode itself.
 */
#ifndef TAGTOK_CLASSIFY_INTERNAL_H
#define TAGTOK_CLASSIFY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tagtok.h"
#include "utf8.h"

/* byte_tag[] value of a lead byte whose code points do not all share one tag: look the char up. */
#define TT_TAG_LOOKUP 0xFEu

/* The ASCII lane as a sorted threshold list: tag(x) = base + sum over i of (x >= start[i]) * delta[i]
 * (mod 256). This is the branchless range-search form of ascii[]. */
#define TT_ASCII_MAX_RUNS 128

typedef struct {
    const uint16_t *stage1;            /* committed: cp >> 8 -> block */
    const uint8_t *stage2;             /* committed: block * 256 + (cp & 0xFF) -> tag */
    uint8_t ascii[128];                /* tag of each ASCII byte */
    uint8_t byte_tag[256];             /* ASCII tag, TT_TAG_CONT, a lead's shared tag, or TT_TAG_LOOKUP */
    uint8_t *bmp;                      /* flat tag of every cp < 0x10000, +4 bytes so 32-bit gathers stay inside */
    uint32_t *block_offset;            /* stage1[b] * 256, as 32-bit words for gathers */
    uint8_t *stage2_padded;            /* stage2 + 4 zero bytes, for 32-bit gathers */
    uint8_t ascii_base;
    int ascii_runs;                    /* thresholds in ascii_start/ascii_delta */
    uint8_t ascii_start[TT_ASCII_MAX_RUNS];
    uint8_t ascii_delta[TT_ASCII_MAX_RUNS];
} tt_classifier;

/* Char-start bits of the block at byte j (a multiple of the block size, <= 64) into the bitplane. */
static inline void tt_store_block_starts(uint64_t *char_starts, size_t j, uint64_t bits) {
    if (j & 63)
        char_starts[j >> 6] |= bits << (j & 63);
    else
        char_starts[j >> 6] = bits;
}

typedef void (*tt_classify_fn)(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                               uint64_t *char_starts);

/* NULL when the derived tables could not be built (out of memory): callers then use scalar. */
const tt_classifier *tt_classifier_get(tt_alphabet alphabet);

/* Tag of one code point from the committed two-level tables. */
static inline uint8_t tt_lookup_cp(const tt_classifier *c, uint32_t cp) {
    return c->stage2[(size_t)c->stage1[cp >> 8] * 256u + (cp & 0xFFu)];
}

/* The 64 tags of the chars sharing the code-point prefix (cp >> 6) of the char whose lead is at q: a
 * contiguous slice of the flat BMP table, or of one stage2 block above the BMP. */
static inline const uint8_t *tt_prefix_table(const tt_classifier *c, const uint8_t *q) {
    uint32_t cp = utf8_decode(q, NULL);
    if (cp < 0x10000) return c->bmp + (cp & ~0x3Fu);
    return c->stage2 + c->block_offset[cp >> 8] + (cp & 0xC0u);
}

/* Classify text[from, n) one char at a time; `from` must be a multiple of 64 or the bitplane word
 * holding it must already hold the bits below `from`. Shared tail of the SIMD kernels. */
void tt_classify_scalar_range(const tt_classifier *c, const uint8_t *text, size_t from, size_t n,
                              uint8_t *tags, uint64_t *char_starts);

void tt_classify_scalar(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                        uint64_t *char_starts);
#if defined(__x86_64__) || defined(_M_X64)
void tt_classify_sse2(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                      uint64_t *char_starts);
void tt_classify_avx2(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                      uint64_t *char_starts);
void tt_classify_avx512(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                        uint64_t *char_starts);
#endif
#if defined(__aarch64__)
void tt_classify_neon(const tt_classifier *c, const uint8_t *text, size_t n, uint8_t *tags,
                      uint64_t *char_starts);
#endif

/* Which HF_TAGTOK_IMPL value (if any) could not be honoured; NULL when none. For the Python binding. */
const char *tt_impl_env_error(void);

#endif
