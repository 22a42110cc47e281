/* Portable transcode kernel: ASCII runs 8 code units at a time, other chars one by one. */
#include <string.h>

#include "transcode_internal.h"
#include "utf8.h"

static inline __attribute__((always_inline)) uint32_t unit_at(const void *data, int unit, size_t i) {
    return unit == 1 ? ((const uint8_t *)data)[i] : unit == 2 ? ((const uint16_t *)data)[i] : ((const uint32_t *)data)[i];
}

/* The ASCII code units from i on, 8 at a time, copied as bytes; returns where the copied run ends. */
static inline __attribute__((always_inline)) size_t copy_ascii_run(const void *data, int unit, size_t len, size_t i,
                                                                  uint8_t *out) {
    if (unit == 1) {
        const uint8_t *u = data;
        for (uint64_t w; i + 8 <= len && (memcpy(&w, u + i, 8), !(w & 0x8080808080808080ULL)); i += 8, out += 8)
            memcpy(out, &w, 8);
    } else if (unit == 2) {
        const uint16_t *u = data;
        for (uint64_t a, b; i + 8 <= len; i += 8, out += 8) {
            memcpy(&a, u + i, 8); memcpy(&b, u + i + 4, 8);
            if ((a | b) & 0xFF80FF80FF80FF80ULL) break;
            for (int k = 0; k < 8; k++) out[k] = (uint8_t)u[i + k];
        }
    } else {
        const uint32_t *u = data;
        for (uint64_t a, b, c, d; i + 8 <= len; i += 8, out += 8) {
            memcpy(&a, u + i, 8); memcpy(&b, u + i + 2, 8); memcpy(&c, u + i + 4, 8); memcpy(&d, u + i + 6, 8);
            if ((a | b | c | d) & 0xFFFFFF80FFFFFF80ULL) break;
            for (int k = 0; k < 8; k++) out[k] = (uint8_t)u[i + k];
        }
    }
    return i;
}

static inline __attribute__((always_inline)) long utf8_of(const void *data, int unit, size_t len, uint8_t *out) {
    uint8_t *o = out;
    for (size_t i = 0; i < len;) {
        size_t run = copy_ascii_run(data, unit, len, i, o);
        o += run - i;
        i = run;
        while (i < len) { /* char by char up to the next ASCII one: runs of other scripts stay here */
            uint32_t c = unit_at(data, unit, i++);
            if (c < 0x80) { *o++ = (uint8_t)c; break; }
            if (c - 0xD800u < 0x800u) return -1;
            o += utf8_encode(c, o);
        }
    }
    return (long)(o - out);
}

long tt_utf8_from_units_scalar(const void *data, int unit, size_t len, uint8_t *out) {
    return unit == 1 ? utf8_of(data, 1, len, out) : unit == 2 ? utf8_of(data, 2, len, out) : utf8_of(data, 4, len, out);
}
