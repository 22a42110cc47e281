/* A per-thread cache of encoded words: word bytes -> the model's tokens (ids and byte ranges in the word).
 * Text repeats words far more often than a model's lookups are cheap, so each model keeps one in its
 * scratch (no locks). The index doubles as it fills, so a stream's working set (hundreds of thousands of
 * distinct words in a few megabytes of mixed-script text) stays cached from one call to the next; only
 * past TP_CACHE_SLOTS_MAX / TP_CACHE_ARENA_MAX is it emptied and refilled.
 *
 * Header-only: the find and load run once per piece and must inline into the model's loop. */
#ifndef TP_WORD_CACHE_H
#define TP_WORD_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_alloc.h"
#include "tp_hash.h"

#define TP_CACHE_WORD 4096            /* longer words are not cached (ranges are stored as uint16) */
#define TP_CACHE_SLOTS_MIN (1u << 16)  /* index slots at first; doubled when half are used, up to ... */
#define TP_CACHE_SLOTS_MAX (1u << 21)  /* ... this many (32 MB), then the cache is emptied ... */
#define TP_CACHE_ARENA_MAX (256u << 20) /* ... as it is when the entries would outgrow this many bytes */

/* A cached word: a short word (at most TP_CACHE_KEY_BYTES) is its key, and when it is one token (the
 * common case: a hit then reads the slot alone) that token's id is the slot's `at` (TP_CACHE_INLINE set in
 * len). Otherwise the word lives in the arena at `at`: ids (uint32 x n), starts and ends (uint16 x n),
 * then (long words only) the word's bytes. */
typedef struct {
    uint64_t key;      /* tp_word_key of a short word, tp_hash_bytes of a long one */
    uint32_t at;       /* TP_CACHE_EMPTY: unused */
    uint16_t len, n;
} tp_cache_slot;

#define TP_CACHE_EMPTY UINT32_MAX
#define TP_CACHE_KEY_BYTES 8
#define TP_CACHE_INLINE 0x8000u

typedef struct {
    tp_cache_slot *slots;
    size_t mask;       /* slots - 1 */
    size_t used;
    uint8_t *arena;
    size_t arena_len, arena_cap;
} tp_word_cache;

static inline void tp_word_cache_clear(tp_word_cache *cache) {
    memset(cache->slots, 0xFF, (cache->mask + 1) * sizeof(tp_cache_slot));
    cache->used = 0;
    cache->arena_len = 0;
}

/* 0, or -1 on OOM. */
static inline int tp_word_cache_init(tp_word_cache *cache) {
    memset(cache, 0, sizeof(*cache));
    cache->slots = tp_alloc_table(TP_CACHE_SLOTS_MIN * sizeof(tp_cache_slot));
    if (!cache->slots) return -1;
    cache->mask = TP_CACHE_SLOTS_MIN - 1;
    tp_word_cache_clear(cache);
    return 0;
}

/* Twice the slots, every entry kept (the arena does not move). 0, or -1 on OOM (the cache is unchanged). */
static inline int tp_word_cache_grow(tp_word_cache *cache) {
    size_t mask = cache->mask * 2 + 1;
    tp_cache_slot *slots = tp_alloc_table((mask + 1) * sizeof(tp_cache_slot));
    if (!slots) return -1;
    memset(slots, 0xFF, (mask + 1) * sizeof(tp_cache_slot));
    for (size_t i = 0; i <= cache->mask; i++) {
        const tp_cache_slot *slot = &cache->slots[i];
        if (slot->at == TP_CACHE_EMPTY) continue;
        size_t len = slot->len & ~TP_CACHE_INLINE;
        size_t k = (len <= TP_CACHE_KEY_BYTES ? tp_hash_key(slot->key, len) : slot->key) & mask;
        while (slots[k].at != TP_CACHE_EMPTY) k = (k + 1) & mask;
        slots[k] = *slot;
    }
    free(cache->slots);
    cache->slots = slots;
    cache->mask = mask;
    return 0;
}

static inline void tp_word_cache_release(tp_word_cache *cache) {
    free(cache->slots);
    free(cache->arena);
    memset(cache, 0, sizeof(*cache));
}

/* The slot a word of this hash is looked for first (to prefetch it). */
static inline const tp_cache_slot *tp_word_cache_home(const tp_word_cache *cache, uint64_t hash) {
    return &cache->slots[hash & cache->mask];
}

/* The slot holding word, or the empty slot where it would go. */
static inline tp_cache_slot *tp_word_cache_find(const tp_word_cache *cache, const uint8_t *word, size_t len,
                                                uint64_t hash) {
    int is_short = len <= TP_CACHE_KEY_BYTES;
    uint64_t key = is_short ? tp_word_key(word, len) : hash;
    for (size_t i = hash & cache->mask;; i = (i + 1) & cache->mask) {
        tp_cache_slot *slot = &cache->slots[i];
        if (slot->at == TP_CACHE_EMPTY) return slot;
        if (slot->key == key && (slot->len & ~TP_CACHE_INLINE) == len &&
            (is_short || tp_same_bytes(cache->arena + slot->at + (size_t)slot->n * 8, word, len))) return slot;
    }
}

/* Copy a found slot's n tokens out. */
static inline void tp_word_cache_load(const tp_word_cache *cache, const tp_cache_slot *slot, uint32_t *ids,
                                      uint32_t *starts, uint32_t *ends) {
    if (slot->len & TP_CACHE_INLINE) {
        ids[0] = slot->at; starts[0] = 0; ends[0] = slot->len & ~TP_CACHE_INLINE;
        return;
    }
    const uint8_t *entry = cache->arena + slot->at;
    const uint16_t *from = (const uint16_t *)(entry + (size_t)slot->n * 4), *to = from + slot->n;
    const uint32_t *cached = (const uint32_t *)entry;
    for (size_t k = 0; k < slot->n; k++) { /* a few tokens: a loop beats a memcpy call */
        ids[k] = cached[k]; starts[k] = from[k]; ends[k] = to[k];
    }
}

/* Remember a word (len <= TP_CACHE_WORD) that is not cached yet. Best effort: on OOM it is not cached. */
static inline void tp_word_cache_store(tp_word_cache *cache, const uint8_t *word, size_t len, uint64_t hash,
                                       const uint32_t *ids, const uint32_t *starts, const uint32_t *ends, size_t n) {
    size_t size = (n * 8 + len + 7) & ~(size_t)7;
    if (cache->used >= (cache->mask + 1) / 2 &&
        (cache->mask + 1 >= TP_CACHE_SLOTS_MAX || tp_word_cache_grow(cache)))
        tp_word_cache_clear(cache);
    if (cache->arena_len + size > TP_CACHE_ARENA_MAX) tp_word_cache_clear(cache);
    if (cache->arena_len + size > cache->arena_cap) {
        size_t cap = cache->arena_cap ? cache->arena_cap * 2 : 256 * 1024;
        while (cap < cache->arena_len + size) cap *= 2;
        uint8_t *arena = tp_realloc_table(cache->arena, cache->arena_len, cap);
        if (!arena) return;
        cache->arena = arena;
        cache->arena_cap = cap;
    }
    tp_cache_slot *slot = tp_word_cache_find(cache, word, len, hash);
    int is_short = len <= TP_CACHE_KEY_BYTES;
    uint64_t key = is_short ? tp_word_key(word, len) : hash;
    if (is_short && n == 1 && starts[0] == 0 && ends[0] == len && ids[0] != TP_CACHE_EMPTY) {
        *slot = (tp_cache_slot){key, ids[0], (uint16_t)(len | TP_CACHE_INLINE), 1};
        cache->used++;
        return;
    }
    uint8_t *entry = cache->arena + cache->arena_len;
    uint16_t *from = (uint16_t *)(entry + n * 4), *to = from + n;
    memcpy(entry, ids, n * 4);
    for (size_t k = 0; k < n; k++) { from[k] = (uint16_t)starts[k]; to[k] = (uint16_t)ends[k]; }
    if (!is_short) memcpy(entry + n * 8, word, len);
    *slot = (tp_cache_slot){key, (uint32_t)cache->arena_len, (uint16_t)len, (uint16_t)n};
    cache->arena_len += size;
    cache->used++;
}

#endif
