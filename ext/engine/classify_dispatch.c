/* Classify entry points: derive the per-alphabet tables once, pick the best kernel for this CPU.
 *
 * simdjson-style: every kernel has the same signature and reads the same tt_classifier; the choice is
 * made once at init (CPU detection, or HF_TAGTOK_IMPL=scalar|sse2|avx2|neon|avx512 to force one).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "classify_internal.h"
#include "tagtok_tables.h"

_Static_assert(TT_ATOM_COUNT < TT_TAG_LOOKUP && TT_SCRIPT_COUNT < TT_TAG_LOOKUP,
               "tag ids must leave 0xFE (lookup) and 0xFF (continuation) free");

static const char *const IMPL_NAMES[] = {"scalar", "sse2", "avx2", "neon", "avx512"};
#define IMPL_COUNT 5

static tt_classifier classifiers[2];
static uint8_t bmp_tables[2][0x10000 + 4];
static uint32_t block_offsets[2][0x1100];
static int simd_tables_ready;
static tt_impl active_impl = TT_IMPL_SCALAR;
static const char *env_error;
static char env_error_buf[96];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* A lead byte's code points: [lo, hi]. Only code points valid UTF-8 can encode with that lead. */
static void lead_range(unsigned lead, uint32_t *lo, uint32_t *hi) {
    if (lead < 0xE0) {
        *lo = (lead & 0x1Fu) << 6, *hi = *lo + 0x3F;
    } else if (lead < 0xF0) {
        *lo = (lead & 0x0Fu) << 12, *hi = *lo + 0xFFF;
        if (lead == 0xE0) *lo = 0x800;
        if (lead == 0xED) *hi = 0xD7FF; /* surrogates are not encodable */
    } else {
        *lo = (lead & 0x07u) << 18, *hi = *lo + 0x3FFFF;
        if (lead == 0xF0) *lo = 0x10000;
        if (lead == 0xF4) *hi = 0x10FFFF;
    }
}

/* The tag every char with this lead byte has, or TT_TAG_LOOKUP when they differ. */
static uint8_t lead_tag(const tt_classifier *c, unsigned lead) {
    uint32_t lo, hi;
    lead_range(lead, &lo, &hi);
    uint8_t tag = tt_lookup_cp(c, lo);
    for (uint32_t cp = lo; cp <= hi; cp++)
        if (tt_lookup_cp(c, cp) != tag) return TT_TAG_LOOKUP;
    return tag;
}

static int build_classifier(tt_classifier *c, const uint16_t *stage1, const uint8_t *stage2, int index) {
    memset(c, 0, sizeof *c);
    c->stage1 = stage1;
    c->stage2 = stage2;
    for (uint32_t b = 0; b < 128; b++) c->ascii[b] = tt_lookup_cp(c, b);

    for (unsigned b = 0; b < 256; b++)
        c->byte_tag[b] = b < 0x80 ? c->ascii[b] : b < 0xC0 ? TT_TAG_CONT : TT_TAG_LOOKUP;
    for (unsigned lead = 0xC2; lead <= 0xF4; lead++) c->byte_tag[lead] = lead_tag(c, lead);

    c->ascii_base = c->ascii[0];
    for (unsigned b = 1; b < 128; b++) {
        if (c->ascii[b] == c->ascii[b - 1]) continue;
        c->ascii_start[c->ascii_runs] = (uint8_t)b;
        c->ascii_delta[c->ascii_runs] = (uint8_t)(c->ascii[b] - c->ascii[b - 1]);
        c->ascii_runs++;
    }

    c->bmp = bmp_tables[index];
    for (uint32_t cp = 0; cp < 0x10000; cp++) c->bmp[cp] = tt_lookup_cp(c, cp);
    c->block_offset = block_offsets[index];
    uint32_t blocks = 0;
    for (uint32_t b = 0; b < 0x1100; b++) {
        c->block_offset[b] = (uint32_t)stage1[b] * 256u;
        if (stage1[b] + 1u > blocks) blocks = stage1[b] + 1u;
    }
    c->stage2_padded = calloc((size_t)blocks * 256u + 4u, 1);
    if (!c->stage2_padded) return 0;
    memcpy(c->stage2_padded, stage2, (size_t)blocks * 256u);
    return 1;
}

static int available_here(tt_impl impl) {
    switch (impl) {
    case TT_IMPL_SCALAR: return 1;
#if defined(__x86_64__) || defined(_M_X64)
    case TT_IMPL_SSE2: return 1;
    case TT_IMPL_AVX2: __builtin_cpu_init(); return __builtin_cpu_supports("avx2") && simd_tables_ready;
    case TT_IMPL_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi") && simd_tables_ready;
#endif
#if defined(__aarch64__)
    case TT_IMPL_NEON: return 1;
#endif
    default: return 0;
    }
}

static void init(void) {
    simd_tables_ready = build_classifier(&classifiers[TT_ALPHABET_ATOMS], tt_atom_stage1, tt_atom_stage2, 0) &
                        build_classifier(&classifiers[TT_ALPHABET_SCRIPTS], tt_script_stage1, tt_script_stage2, 1);
    for (int impl = IMPL_COUNT - 1; impl >= 0; impl--) {
        if (available_here((tt_impl)impl)) {
            active_impl = (tt_impl)impl;
            break;
        }
    }
    const char *forced = getenv("HF_TAGTOK_IMPL");
    if (!forced || !*forced) return;
    for (int impl = 0; impl < IMPL_COUNT; impl++) {
        if (strcmp(forced, IMPL_NAMES[impl]) != 0) continue;
        if (available_here((tt_impl)impl)) {
            active_impl = (tt_impl)impl;
            return;
        }
    }
    /* Keep running on the best kernel (C callers cannot fail), but let Python report it. */
    strncpy(env_error_buf, forced, sizeof env_error_buf - 1);
    env_error = env_error_buf;
}

static void ensure_init(void) { pthread_once(&init_once, init); }

const tt_classifier *tt_classifier_get(tt_alphabet alphabet) {
    ensure_init();
    return &classifiers[alphabet == TT_ALPHABET_SCRIPTS];
}

int tt_impl_available(tt_impl impl) {
    ensure_init();
    return available_here(impl);
}

const char *tt_impl_env_error(void) {
    ensure_init();
    return env_error;
}

static tt_classify_fn kernel(tt_impl impl) {
    switch (impl) {
#if defined(__x86_64__) || defined(_M_X64)
    case TT_IMPL_SSE2: return tt_classify_sse2;
    case TT_IMPL_AVX2: return tt_classify_avx2;
    case TT_IMPL_AVX512: return tt_classify_avx512;
#endif
#if defined(__aarch64__)
    case TT_IMPL_NEON: return tt_classify_neon;
#endif
    default: return tt_classify_scalar;
    }
}

void tt_classify(tt_alphabet alphabet, const uint8_t *text, size_t n, uint8_t *tags, uint64_t *char_starts) {
    const tt_classifier *c = tt_classifier_get(alphabet);
    kernel(active_impl)(c, text, n, tags, char_starts);
}

int tt_classify_with(tt_impl impl, tt_alphabet alphabet, const uint8_t *text, size_t n, uint8_t *tags,
                     uint64_t *char_starts) {
    const tt_classifier *c = tt_classifier_get(alphabet);
    if (impl == TT_IMPL_AUTO) impl = active_impl;
    if (!tt_impl_available(impl)) return 0;
    kernel(impl)(c, text, n, tags, char_starts);
    return 1;
}

tt_impl tt_impl_active(void) {
    ensure_init();
    return active_impl;
}

const char *tt_impl_name(tt_impl impl) {
    if (impl == TT_IMPL_AUTO) return "auto";
    return impl >= 0 && impl < IMPL_COUNT ? IMPL_NAMES[impl] : "unknown";
}
