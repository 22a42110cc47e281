/* Shared shape of the transcode kernels (scalar, AVX-512): Python's str layouts (code units of 1, 2 or 4
 * bytes) to UTF-8. Every kernel returns the same bytes, or -1 at a surrogate (it has no UTF-8 form). */
#ifndef TAGTOK_TRANSCODE_INTERNAL_H
#define TAGTOK_TRANSCODE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

typedef long (*tt_transcode_fn)(const void *data, int unit, size_t len, uint8_t *out);

long tt_utf8_from_units_scalar(const void *data, int unit, size_t len, uint8_t *out);
#if defined(__x86_64__) || defined(_M_X64)
long tt_utf8_from_units_avx512(const void *data, int unit, size_t len, uint8_t *out);
#endif

#endif
