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

/* The len < 8 bytes at data as one word, their bytes in order from the lowest, zero above: distinct byte
 * strings of one length give distinct words. One 8-byte load, masked, where it stays in the 4 KiB block of
 * the string's first byte (no page is smaller; the bytes past the string are read but not used: no branch on
 * the length); else the bytes alone. An empty string has no byte to read: data may be the end of a page before an unmapped one. */
static inline uint64_t tp_short_word(const uint8_t *data, size_t len) {
    uint64_t word = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (len && ((uintptr_t)data & 4095) <= 4096 - 8) {
        memcpy(&word, data, 8);
        return word & ((1ull << (8 * len)) - 1);
    }
#endif
    for (size_t k = 0; k < len; k++) word |= (uint64_t)data[k] << (8 * k);
    return word;
}

/* A word of len <= 8 bytes as one uint64: distinct words of one length give distinct keys. */
static inline uint64_t tp_word_key(const uint8_t *data, size_t len) {
    uint64_t key;
    if (len < 8) return tp_short_word(data, len);
    memcpy(&key, data, 8);
    return key;
}

/* The two halves of a * b folded into one word: one multiply instruction mixes every bit of both. */
static inline uint64_t tp_fold_multiply(uint64_t a, uint64_t b) {
#if defined(__SIZEOF_INT128__)
    __uint128_t product = (__uint128_t)a * b;
    return (uint64_t)product ^ (uint64_t)(product >> 64);
#else
    return tp_mix64(a ^ tp_mix64(b));
#endif
}

#define TP_HASH_A 0xa0761d6478bd642fULL
#define TP_HASH_B 0xe7037ed1a0b428dbULL
#define TP_HASH_C 0x8ebc6af09c88c6e3ULL

/* tp_hash_bytes of a word of len <= 8 bytes, from its key. */
static inline uint64_t tp_hash_key(uint64_t key, size_t len) {
    return tp_fold_multiply(key ^ TP_HASH_A, (uint64_t)len ^ TP_HASH_B);
}

/* 16 bytes per multiply; the last (overlapping) 16, or a word's 9-16 bytes as its first and last 8. */
static inline uint64_t tp_hash_bytes(const uint8_t *data, size_t len) {
    if (len <= 8) return tp_hash_key(tp_word_key(data, len), len);
    uint64_t h = TP_HASH_C ^ len, a, b;
    size_t at = 0;
    for (; len - at > 16; at += 16) {
        memcpy(&a, data + at, 8); memcpy(&b, data + at + 8, 8);
        h = tp_fold_multiply(a ^ TP_HASH_A, b ^ h);
    }
    memcpy(&a, data + (at ? len - 16 : 0), 8); memcpy(&b, data + len - 8, 8);
    h = tp_fold_multiply(a ^ TP_HASH_A, b ^ h);
    return tp_fold_multiply(h ^ TP_HASH_B, (uint64_t)len ^ TP_HASH_C);
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
