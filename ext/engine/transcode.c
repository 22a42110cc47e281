/* Transcode entry points: the kernel follows the active classify implementation (tt_impl_active), so
 * HF_TAGTOK_IMPL forces both; an implementation without a transcode kernel of its own uses the scalar one. */
#include <pthread.h>

#include "tagtok.h"
#include "transcode_internal.h"

static int vbmi2_here(void) {
#if defined(__x86_64__) || defined(_M_X64)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi2");
#else
    return 0;
#endif
}

static tt_transcode_fn kernel(tt_impl impl) {
#if defined(__x86_64__) || defined(_M_X64)
    if (impl == TT_IMPL_AVX512 && vbmi2_here()) return tt_utf8_from_units_avx512;
#endif
    (void)impl;
    return tt_utf8_from_units_scalar;
}

static tt_transcode_fn active_kernel;
static pthread_once_t choose_once = PTHREAD_ONCE_INIT;

static void choose(void) { active_kernel = kernel(tt_impl_active()); }

long tt_utf8_from_units(const void *data, int unit, size_t len, uint8_t *out) {
    pthread_once(&choose_once, choose);
    return active_kernel(data, unit, len, out);
}

long tt_utf8_from_units_with(tt_impl impl, const void *data, int unit, size_t len, uint8_t *out) {
    if (!tt_impl_available(impl)) return -2;
    return kernel(impl)(data, unit, len, out);
}
