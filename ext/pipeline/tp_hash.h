/* Fast non-cryptographic hashing shared by the pipeline's tables. */
#ifndef TP_HASH_H
#define TP_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t tp_mix64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static inline uint64_t tp_hash_bytes(const uint8_t *data, size_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ len;
    while (len >= 8) {
        uint64_t chunk;
        memcpy(&chunk, data, 8);
        h = tp_mix64(h ^ chunk);
        data += 8; len -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, data, len);
    return tp_mix64(h ^ tail ^ ((uint64_t)len << 56));
}

/* memcmp(a, b, len) == 0, inlined: the words compared here are mostly a few bytes long. */
static inline int tp_same_bytes(const uint8_t *a, const uint8_t *b, size_t len) {
    for (; len >= 8; a += 8, b += 8, len -= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8); memcpy(&y, b, 8);
        if (x != y) return 0;
    }
    for (; len; a++, b++, len--)
        if (*a != *b) return 0;
    return 1;
}

#endif
