/* UTF-8 helpers shared by the engine, the pipeline and the trainer.
 *
 * Inputs are valid UTF-8 (Python str encodes to it; the engine never sees other bytes), so nothing
 * here validates: a lead byte says the length, continuation bytes are 10xxxxxx.
 */
#ifndef HF_TAGTOK_UTF8_H
#define HF_TAGTOK_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t utf8_char_len(uint8_t lead) {
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

static inline int utf8_is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

/* The code point starting at p; its length in bytes goes to *len unless len is NULL. */
static inline uint32_t utf8_decode(const uint8_t *p, size_t *len) {
    uint32_t b = p[0];
    if (b < 0x80) {
        if (len) *len = 1;
        return b;
    }
    if (b < 0xE0) {
        if (len) *len = 2;
        return ((b & 0x1F) << 6) | (p[1] & 0x3Fu);
    }
    if (b < 0xF0) {
        if (len) *len = 3;
        return ((b & 0x0F) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    }
    if (len) *len = 4;
    return ((b & 0x07) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
}

/* The length in bytes of cp's UTF-8. */
static inline uint32_t utf8_encoded_len(uint32_t cp) {
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* Writes cp's bytes to out (room for 4); returns their count. */
static inline uint32_t utf8_encode(uint32_t cp, uint8_t *out) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Continuation bytes among p[0, n), n <= 8, reading 8 bytes at p (all 8 must be readable): one word
 * and a popcount by multiplication, no per-byte branch. */
static inline size_t utf8_continuations8(const uint8_t *p, size_t n) {
    uint64_t bytes;
    memcpy(&bytes, p, 8);
    uint64_t high = (bytes & ~(bytes << 1) & 0x8080808080808080ULL) >> 7; /* one bit per continuation byte */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    if (n < 8) high >>= 8 * (8 - n);
#else
    if (n < 8) high &= (1ULL << (8 * n)) - 1;
#endif
    return (size_t)((high * 0x0101010101010101ULL) >> 56);
}

/* The first non-ASCII byte of p[at, len), or len: eight bytes at a time. */
static inline size_t utf8_ascii_end(const uint8_t *p, size_t at, size_t len) {
    for (uint64_t word; at + 8 <= len; at += 8) {
        memcpy(&word, p + at, 8);
        if (word & 0x8080808080808080ULL) break;
    }
    while (at < len && p[at] < 0x80) at++;
    return at;
}

/* Chars in p[0, len). */
static inline size_t utf8_count_chars(const uint8_t *p, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += !utf8_is_continuation(p[i]);
    return n;
}

#endif
