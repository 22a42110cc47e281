#include "piece_count.h"

#include <stdlib.h>
#include <string.h>

struct piece_counts {
    uint8_t *arena; /* entry bytes, back to back */
    size_t arena_len, arena_cap;
    int64_t *start; /* n + 1 entries */
    int64_t *count;
    size_t n, cap;
    uint64_t *hashes;
    uint32_t *table; /* open addressing: entry index + 1, 0 = empty */
    size_t table_cap;
};

static uint64_t hash_bytes(const uint8_t *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL ^ (n * 0x9e3779b97f4a7c15ULL);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

piece_counts *piece_counts_new(void) {
    piece_counts *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cap = 1024;
    c->table_cap = 4096;
    c->arena_cap = 1 << 16;
    c->start = malloc((c->cap + 1) * sizeof(int64_t));
    c->count = malloc(c->cap * sizeof(int64_t));
    c->hashes = malloc(c->cap * sizeof(uint64_t));
    c->table = calloc(c->table_cap, sizeof(uint32_t));
    c->arena = malloc(c->arena_cap);
    if (!c->start || !c->count || !c->hashes || !c->table || !c->arena) {
        piece_counts_free(c);
        return NULL;
    }
    c->start[0] = 0;
    return c;
}

void piece_counts_free(piece_counts *c) {
    if (!c) return;
    free(c->arena); free(c->start); free(c->count); free(c->hashes); free(c->table);
    free(c);
}

static int rehash(piece_counts *c) {
    size_t cap = c->table_cap * 2;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (size_t e = 0; e < c->n; e++) {
        size_t i = c->hashes[e] & (cap - 1);
        while (t[i]) i = (i + 1) & (cap - 1);
        t[i] = (uint32_t)(e + 1);
    }
    free(c->table);
    c->table = t;
    c->table_cap = cap;
    return 0;
}

static int reserve(piece_counts *c, size_t len) {
    if (c->n == c->cap) {
        size_t cap = c->cap * 2;
        int64_t *start = realloc(c->start, (cap + 1) * sizeof(int64_t));
        if (start) c->start = start;
        int64_t *count = realloc(c->count, cap * sizeof(int64_t));
        if (count) c->count = count;
        uint64_t *hashes = realloc(c->hashes, cap * sizeof(uint64_t));
        if (hashes) c->hashes = hashes;
        if (!start || !count || !hashes) return -1;
        c->cap = cap;
    }
    if (c->arena_len + len > c->arena_cap) {
        size_t cap = c->arena_cap * 2;
        while (cap < c->arena_len + len) cap *= 2;
        uint8_t *a = realloc(c->arena, cap);
        if (!a) return -1;
        c->arena = a;
        c->arena_cap = cap;
    }
    return 0;
}

static int add_hashed(piece_counts *c, const uint8_t *s, size_t len, uint64_t h, int64_t times) {
    size_t mask = c->table_cap - 1, i = h & mask;
    for (; c->table[i]; i = (i + 1) & mask) {
        size_t e = c->table[i] - 1;
        if (c->hashes[e] == h && (size_t)(c->start[e + 1] - c->start[e]) == len &&
            memcmp(c->arena + c->start[e], s, len) == 0) {
            c->count[e] += times;
            return 0;
        }
    }
    if (c->n >= UINT32_MAX - 1 || reserve(c, len)) return -1;
    memcpy(c->arena + c->arena_len, s, len);
    c->arena_len += len;
    size_t e = c->n++;
    c->start[e + 1] = (int64_t)c->arena_len;
    c->count[e] = times;
    c->hashes[e] = h;
    c->table[i] = (uint32_t)(e + 1);
    return c->n * 2 > c->table_cap ? rehash(c) : 0;
}

int piece_counts_add(piece_counts *c, const uint8_t *s, size_t len, int64_t times) {
    return add_hashed(c, s, len, hash_bytes(s, len), times);
}

/* Byte index of char `target`, walking forward from (*byte, *chr). */
static int seek_char(const uint8_t *text, size_t len, size_t *byte, int64_t *chr, int64_t target) {
    if (target < *chr) *byte = 0, *chr = 0;
    while (*chr < target) {
        if (*byte >= len) return -1;
        (*byte)++;
        while (*byte < len && (text[*byte] & 0xC0) == 0x80) (*byte)++;
        (*chr)++;
    }
    return 0;
}

int piece_counts_add_pieces(piece_counts *c, const uint8_t *text, size_t len, const int64_t *char_offsets,
                         size_t n_pieces) {
    size_t byte = 0;
    int64_t chr = 0;
    for (size_t p = 0; p < n_pieces; p++) {
        if (seek_char(text, len, &byte, &chr, char_offsets[2 * p])) return -1;
        size_t begin = byte;
        if (seek_char(text, len, &byte, &chr, char_offsets[2 * p + 1])) return -1;
        if (byte > begin && piece_counts_add(c, text + begin, byte - begin, 1)) return -1;
    }
    return 0;
}

int piece_counts_merge(piece_counts *dst, const piece_counts *src) {
    for (size_t e = 0; e < src->n; e++) {
        const uint8_t *s = src->arena + src->start[e];
        size_t len = (size_t)(src->start[e + 1] - src->start[e]);
        if (add_hashed(dst, s, len, src->hashes[e], src->count[e])) return -1;
    }
    return 0;
}

size_t piece_counts_size(const piece_counts *c) { return c->n; }

size_t piece_counts_total_bytes(const piece_counts *c) { return c->arena_len; }

void piece_counts_export(const piece_counts *c, uint8_t *bytes, int64_t *offsets, int64_t *counts) {
    memcpy(bytes, c->arena, c->arena_len);
    memcpy(offsets, c->start, (c->n + 1) * sizeof(int64_t));
    memcpy(counts, c->count, c->n * sizeof(int64_t));
}
