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

/* The len < 8 bytes at data as one word, read by at most two loads inside them (a variable-length copy
 * costs a call): distinct byte strings of one length give distinct words. */
static inline uint64_t tp_short_word(const uint8_t *data, size_t len) {
    if (len >= 4) {
        uint32_t low, high;
        memcpy(&low, data, 4); memcpy(&high, data + len - 4, 4);
        return (uint64_t)high << 32 | low;
    }
    if (len == 0) return 0;
    return (uint64_t)data[0] << 16 | (uint64_t)data[len >> 1] << 8 | data[len - 1];
}

/* A word of len <= 8 bytes as one uint64: distinct words of one length give distinct keys. */
static inline uint64_t tp_word_key(const uint8_t *data, size_t len) {
    uint64_t key;
    if (len < 8) return tp_short_word(data, len);
    memcpy(&key, data, 8);
    return key;
}

/* tp_hash_bytes of a word of len <= 8 bytes, from its key. */
static inline uint64_t tp_hash_key(uint64_t key, size_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ len;
    if (len == 8) return tp_mix64(tp_mix64(h ^ key) ^ (8ULL << 56));
    return tp_mix64(h ^ key ^ ((uint64_t)len << 56));
}

static inline uint64_t tp_hash_bytes(const uint8_t *data, size_t len) {
    if (len <= 8) return tp_hash_key(tp_word_key(data, len), len);
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ len;
    size_t rest = len;
    for (; rest >= 8; data += 8, rest -= 8) {
        uint64_t chunk;
        memcpy(&chunk, data, 8);
        h = tp_mix64(h ^ chunk);
    }
    return tp_mix64(h ^ tp_short_word(data, rest) ^ ((uint64_t)len << 56));
}

/* memcmp(a, b, len) == 0, inlined: the words compared here are mostly a few bytes long. */
static inline int tp_same_bytes(const uint8_t *a, const uint8_t *b, size_t len) {
    uint64_t x, y;
    if (len < 8) return tp_short_word(a, len) == tp_short_word(b, len);
    for (size_t at = 0; at + 8 <= len; at += 8) {
        memcpy(&x, a + at, 8); memcpy(&y, b + at, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + len - 8, 8); memcpy(&y, b + len - 8, 8); /* the last (overlapping) 8 */
    return x == y;
}

#endif
