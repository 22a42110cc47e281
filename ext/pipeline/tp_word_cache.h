/* A cache of encoded words: word bytes -> the model's tokens (ids and byte ranges in the word).
 * Text repeats words far more often than a model's lookups are cheap. A model keeps one cache that all
 * pool threads of a call read and add to at once (a word one thread encoded is never encoded again by
 * another), and each thread keeps one of its own for when the shared one has no room left in a round.
 * Between rounds (no thread encoding) the shared cache takes in the threads' words and doubles as it
 * fills, so a stream's working set (hundreds of thousands of distinct words in a few megabytes of
 * mixed-script text) stays cached from one call to the next; only past TP_CACHE_SLOTS_MAX /
 * TP_CACHE_ARENA_MAX is it emptied and refilled.
 *
 * Concurrency: a slot goes EMPTY -> BUSY (claimed by one compare-and-swap) -> filled (its key written,
 * then its meta released); a filled slot and its arena entry never change until the cache is grown or
 * emptied, which happens only while no thread uses it. A reader passes BUSY slots over: at worst it
 * encodes a word that is being cached at that moment. A writer waits for a BUSY slot on its way, but not
 * forever: in a process forked while a slot was being filled, that slot stays BUSY (the word may then be
 * cached twice, which is harmless).
 *
 * Header-only: the find and load run once per piece and must inline into the model's loop. */
#ifndef TP_WORD_CACHE_H
#define TP_WORD_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tp_cpu_relax.h"
#include "tp_hash.h"
#include "tp_huge.h"

#define TP_CACHE_WORD 4096            /* longer words are not cached (ranges are stored as uint16) */
#define TP_CACHE_SLOTS_OWN (1u << 16)  /* index slots at first of a thread's own cache, ... */
#define TP_CACHE_SLOTS_SHARED (1u << 18) /* ... of a model's shared one (a stream's first calls meet tens of
                                          * thousands of new words: growing from less is serial work between
                                          * rounds); doubled when half are used, up to ... */
#define TP_CACHE_SLOTS_MAX (1u << 21)  /* ... this many (32 MB), then the cache is emptied ... */
#define TP_CACHE_ARENA_MAX (64u << 20) /* ... as it is when the entries would outgrow this many bytes */

/* A cached word: a short word (at most TP_CACHE_KEY_BYTES) is its key, and when it is one token (the
 * common case: a hit then reads the slot alone) that token's id is the slot's `at` (TP_CACHE_INLINE set in
 * len). Otherwise the word lives in the arena at `at`: ids (uint32 x n), starts and ends (uint16 x n),
 * then (long words only) the word's bytes. `meta` is at, len and n as one word, for the atomic steps. */
typedef union {
    struct {
        uint64_t key;  /* tp_word_key of a short word, tp_hash_bytes of a long one */
        uint32_t at;
        uint16_t len, n;
    };
    struct {
        uint64_t key_word;
        uint64_t meta;
    };
} tp_cache_slot;

#define TP_CACHE_EMPTY UINT64_MAX        /* meta of an unused slot */
#define TP_CACHE_BUSY (UINT64_MAX - 1)   /* meta of a slot being filled */
#define TP_CACHE_KEY_BYTES 8
#define TP_CACHE_INLINE 0x8000u
#define TP_CACHE_SPINS 4096 /* waits for a slot being filled (a few stores) before passing it over */

typedef struct tp_word_cache {
    tp_cache_slot *slots;
    size_t mask;       /* slots - 1 */
    uint8_t *arena;    /* TP_CACHE_ARENA_MAX bytes reserved (committed as used): entries never move */
    /* Every lookup reads the fields above; the counters below change as threads add words. A cache line
     * apart, one thread's additions do not take the line the other threads look words up by. */
    char apart[64];
    size_t used;       /* slots filled or claimed, or reserved by a tp_cache_credit (atomic while shared) */
    size_t arena_len;  /* atomic while shared */
    uint64_t epoch;    /* how many times it was emptied: a credit of an earlier epoch is void */
} tp_word_cache;

/* What one thread reserved of a shared cache ahead of its words: slots it may still claim and arena bytes
 * [arena_next, arena_end) it may still fill. The threads then meet at the cache's counters once every
 * TP_CREDIT_SLOTS words or TP_CREDIT_ARENA bytes instead of at every word (each meeting moves the counters'
 * cache line from one core to the other). */
typedef struct tp_cache_credit {
    size_t slots;
    size_t arena_next, arena_end;
    const struct tp_word_cache *of;
    uint64_t epoch;
} tp_cache_credit;

#define TP_CREDIT_SLOTS 32
#define TP_CREDIT_ARENA 4096

static inline uint64_t tp_cache_meta(uint32_t at, size_t len, size_t n) {
    return (uint64_t)at | (uint64_t)len << 32 | (uint64_t)n << 48;
}

static inline void tp_word_cache_clear(tp_word_cache *cache) {
    memset(cache->slots, 0xFF, (cache->mask + 1) * sizeof(tp_cache_slot));
    cache->used = 0;
    cache->arena_len = 0;
    cache->epoch++;
}

/* 0, or -1 on OOM. */
static inline int tp_word_cache_init(tp_word_cache *cache, size_t slots) {
    memset(cache, 0, sizeof(*cache));
    void *arena = mmap(NULL, TP_CACHE_ARENA_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
    if (arena == MAP_FAILED) return -1;
    tp_ask_huge(arena, TP_CACHE_ARENA_MAX);
    cache->arena = arena;
    cache->slots = tp_huge_alloc(slots * sizeof(tp_cache_slot));
    if (!cache->slots) { munmap(arena, TP_CACHE_ARENA_MAX); cache->arena = NULL; return -1; }
    cache->mask = slots - 1;
    tp_word_cache_clear(cache);
    return 0;
}

static inline void tp_word_cache_release(tp_word_cache *cache) {
    tp_huge_free(cache->slots, (cache->mask + 1) * sizeof(tp_cache_slot));
    if (cache->arena) munmap(cache->arena, TP_CACHE_ARENA_MAX);
    memset(cache, 0, sizeof(*cache));
}

static inline size_t tp_cache_len(const tp_cache_slot *slot) { return slot->len & ~TP_CACHE_INLINE; }

static inline uint64_t tp_cache_slot_hash(const tp_cache_slot *slot) {
    size_t len = tp_cache_len(slot);
    return len <= TP_CACHE_KEY_BYTES ? tp_hash_key(slot->key, len) : slot->key;
}

/* Bytes of the arena entry of a non-inline slot. */
static inline size_t tp_cache_entry_size(size_t len, size_t n) {
    return (n * 8 + (len > TP_CACHE_KEY_BYTES ? len : 0) + 7) & ~(size_t)7;
}

/* Twice the slots, every entry kept. Only while no thread uses the cache. 0, or -1 on OOM (unchanged). */
static inline int tp_word_cache_grow(tp_word_cache *cache) {
    size_t mask = cache->mask * 2 + 1;
    tp_cache_slot *slots = tp_huge_alloc((mask + 1) * sizeof(tp_cache_slot));
    if (!slots) return -1;
    memset(slots, 0xFF, (mask + 1) * sizeof(tp_cache_slot));
    for (size_t i = 0; i <= cache->mask; i++) {
        const tp_cache_slot *slot = &cache->slots[i];
        if (slot->meta == TP_CACHE_EMPTY) continue;
        size_t k = tp_cache_slot_hash(slot) & mask;
        while (slots[k].meta != TP_CACHE_EMPTY) k = (k + 1) & mask;
        slots[k] = *slot;
    }
    tp_huge_free(cache->slots, (cache->mask + 1) * sizeof(tp_cache_slot));
    cache->slots = slots;
    cache->mask = mask;
    return 0;
}

/* The slot a word of this hash is looked for first (to prefetch it). */
static inline const tp_cache_slot *tp_word_cache_home(const tp_word_cache *cache, uint64_t hash) {
    return &cache->slots[hash & cache->mask];
}

/* Whether a filled slot (its meta read) holds the word of this key (see tp_cache_slot). */
static inline int tp_cache_holds(const tp_word_cache *cache, const tp_cache_slot *slot, uint64_t meta, uint64_t key,
                                 const uint8_t *word, size_t len) {
    if ((size_t)(meta >> 32 & 0x7FFF) != len || __atomic_load_n(&slot->key, __ATOMIC_RELAXED) != key) return 0;
    return len <= TP_CACHE_KEY_BYTES ||
           tp_same_bytes(cache->arena + (uint32_t)meta + (size_t)(meta >> 48) * 8, word, len);
}

/* The slot holding the word, or NULL. */
static inline const tp_cache_slot *tp_word_cache_find(const tp_word_cache *cache, const uint8_t *word, size_t len,
                                                      uint64_t hash) {
    uint64_t key = len <= TP_CACHE_KEY_BYTES ? tp_word_key(word, len) : hash;
    for (size_t i = hash & cache->mask;; i = (i + 1) & cache->mask) {
        const tp_cache_slot *slot = &cache->slots[i];
        uint64_t meta = __atomic_load_n(&slot->meta, __ATOMIC_ACQUIRE);
        if (meta == TP_CACHE_EMPTY) return NULL;
        if (meta != TP_CACHE_BUSY && tp_cache_holds(cache, slot, meta, key, word, len)) return slot;
    }
}

/* Copy a found slot's n tokens out, their ranges moved by shift (the word's place in a longer one). */
static inline void tp_word_cache_load_at(const tp_word_cache *cache, const tp_cache_slot *slot, uint32_t *ids,
                                         uint32_t *starts, uint32_t *ends, uint32_t shift) {
    if (slot->len & TP_CACHE_INLINE) {
        ids[0] = slot->at; starts[0] = shift; ends[0] = shift + (slot->len & ~TP_CACHE_INLINE);
        return;
    }
    const uint8_t *entry = cache->arena + slot->at;
    const uint16_t *from = (const uint16_t *)(entry + (size_t)slot->n * 4), *to = from + slot->n;
    const uint32_t *cached = (const uint32_t *)entry;
    for (size_t k = 0; k < slot->n; k++) { /* a few tokens: a loop beats a memcpy call */
        ids[k] = cached[k]; starts[k] = shift + from[k]; ends[k] = shift + to[k];
    }
}

/* Copy a found slot's n tokens out. */
static inline void tp_word_cache_load(const tp_word_cache *cache, const tp_cache_slot *slot, uint32_t *ids,
                                      uint32_t *starts, uint32_t *ends) {
    tp_word_cache_load_at(cache, slot, ids, starts, ends, 0);
}

/* The credit, emptied unless it is of this cache in its current epoch. */
static inline tp_cache_credit *tp_credit_current(const tp_word_cache *cache, tp_cache_credit *credit) {
    if (credit->of != cache || credit->epoch != cache->epoch) *credit = (tp_cache_credit){0, 0, 0, cache, cache->epoch};
    return credit;
}

/* Whether a slot may be claimed: one of the credit's (topped up from the cache while under room), or
 * without a credit, whether fewer than room are used. */
static inline int tp_cache_slot_allowed(tp_word_cache *cache, tp_cache_credit *credit, size_t room) {
    if (!credit) return __atomic_load_n(&cache->used, __ATOMIC_RELAXED) < room;
    if (!credit->slots) {
        if (__atomic_fetch_add(&cache->used, TP_CREDIT_SLOTS, __ATOMIC_RELAXED) >= room) {
            __atomic_fetch_sub(&cache->used, TP_CREDIT_SLOTS, __ATOMIC_RELAXED);
            return 0;
        }
        credit->slots = TP_CREDIT_SLOTS;
    }
    return 1;
}

/* Put meta (and key) into the word's slot unless the word is there already. Returns 0 when no slot was
 * free (a shared cache past its round's share). credit: the calling thread's (tp_cache_credit), or NULL to
 * count each slot at the cache. */
static inline int tp_cache_place(tp_word_cache *cache, uint64_t key, uint64_t hash, const uint8_t *word, size_t len,
                                 uint64_t meta, size_t room, tp_cache_credit *credit) {
    for (size_t i = hash & cache->mask;; i = (i + 1) & cache->mask) {
        tp_cache_slot *slot = &cache->slots[i];
        uint64_t seen = __atomic_load_n(&slot->meta, __ATOMIC_ACQUIRE);
        for (int spins = 0; seen == TP_CACHE_BUSY && spins < TP_CACHE_SPINS; spins++) {
            tp_cpu_relax(); /* another thread is writing this slot's key */
            seen = __atomic_load_n(&slot->meta, __ATOMIC_ACQUIRE);
        }
        if (seen == TP_CACHE_BUSY) continue; /* never finished (its thread forked away): pass it over */
        if (seen == TP_CACHE_EMPTY) {
            if (!tp_cache_slot_allowed(cache, credit, room)) return 0;
            if (!__atomic_compare_exchange_n(&slot->meta, &seen, TP_CACHE_BUSY, 0, __ATOMIC_ACQUIRE,
                                             __ATOMIC_ACQUIRE)) {
                i = (i - 1) & cache->mask; /* taken meanwhile: look at this slot again */
                continue;
            }
            if (credit) credit->slots--;
            else __atomic_fetch_add(&cache->used, 1, __ATOMIC_RELAXED);
            __atomic_store_n(&slot->key, key, __ATOMIC_RELAXED);
            __atomic_store_n(&slot->meta, meta, __ATOMIC_RELEASE);
            return 1;
        }
        if (tp_cache_holds(cache, slot, seen, key, word, len)) return 1;
    }
}

/* An arena entry of `size` bytes (from the credit's bytes when given), or NULL when the arena is full. From a
 * credit, an entry of at most 64 bytes starts on the next cache line rather than cross one: a hit then misses
 * on one line (its ids and a long word's bytes together), for a tenth more arena (Llama-3's stream). */
static inline uint8_t *tp_cache_entry(tp_word_cache *cache, size_t size, uint32_t *at, tp_cache_credit *credit) {
    size_t start;
    size_t pad = credit && size <= 64 && (credit->arena_next & 63) + size > 64 ? 64 - (credit->arena_next & 63) : 0;
    if (credit && credit->arena_next + pad + size <= credit->arena_end) {
        start = credit->arena_next + pad;
    } else {
        size_t take = credit && size < TP_CREDIT_ARENA ? TP_CREDIT_ARENA : size;
        start = __atomic_fetch_add(&cache->arena_len, take, __ATOMIC_RELAXED);
        if (start + take > TP_CACHE_ARENA_MAX) return NULL;
        if (credit) credit->arena_end = start + take;
    }
    if (credit) credit->arena_next = start + size;
    *at = (uint32_t)start;
    return cache->arena + start;
}

/* Add a word (len <= TP_CACHE_WORD) while other threads may read and add: 1 when cached (or already
 * there), 0 when the cache has no room this round (half its slots, or its arena, are used). credit: the
 * calling thread's for a shared cache (see tp_cache_place). */
static inline int tp_word_cache_offer(tp_word_cache *cache, const uint8_t *word, size_t len, uint64_t hash,
                                      const uint32_t *ids, const uint32_t *starts, const uint32_t *ends, size_t n,
                                      tp_cache_credit *credit) {
    size_t room = (cache->mask + 1) / 2;
    if (credit) credit = tp_credit_current(cache, credit);
    if (!(credit && credit->slots) && __atomic_load_n(&cache->used, __ATOMIC_RELAXED) >= room) return 0;
    int is_short = len <= TP_CACHE_KEY_BYTES;
    uint64_t key = is_short ? tp_word_key(word, len) : hash;
    if (is_short && n == 1 && starts[0] == 0 && ends[0] == len)
        return tp_cache_place(cache, key, hash, word, len, tp_cache_meta(ids[0], len | TP_CACHE_INLINE, 1), room,
                              credit);
    uint32_t at;
    uint8_t *entry = tp_cache_entry(cache, tp_cache_entry_size(len, n), &at, credit);
    if (!entry) return 0;
    uint16_t *from = (uint16_t *)(entry + n * 4), *to = from + n;
    memcpy(entry, ids, n * 4);
    for (size_t k = 0; k < n; k++) { from[k] = (uint16_t)starts[k]; to[k] = (uint16_t)ends[k]; }
    if (!is_short) memcpy(entry + n * 8, word, len);
    return tp_cache_place(cache, key, hash, word, len, tp_cache_meta(at, len, n), room, credit);
}

/* Make room for the next words: twice the slots once half are used, emptied past the limits. Only while
 * no thread uses the cache. */
static inline void tp_word_cache_settle(tp_word_cache *cache) {
    if (cache->used >= (cache->mask + 1) / 2 &&
        (cache->mask + 1 >= TP_CACHE_SLOTS_MAX || tp_word_cache_grow(cache)))
        tp_word_cache_clear(cache);
    if (cache->arena_len > TP_CACHE_ARENA_MAX / 4 * 3) tp_word_cache_clear(cache);
}

/* Remember a word (len <= TP_CACHE_WORD) in a cache only this thread uses. Best effort: on OOM it is not
 * cached. */
static inline void tp_word_cache_store(tp_word_cache *cache, const uint8_t *word, size_t len, uint64_t hash,
                                       const uint32_t *ids, const uint32_t *starts, const uint32_t *ends, size_t n) {
    tp_word_cache_settle(cache);
    tp_word_cache_offer(cache, word, len, hash, ids, starts, ends, n, NULL);
}

/* Move every word of `from` into `into` (no thread using either), and empty `from`. */
static inline void tp_word_cache_absorb(tp_word_cache *into, tp_word_cache *from) {
    if (!from->used) return;
    for (size_t i = 0; i <= from->mask; i++) {
        const tp_cache_slot *slot = &from->slots[i];
        if (slot->meta == TP_CACHE_EMPTY) continue;
        tp_word_cache_settle(into);
        size_t len = tp_cache_len(slot);
        const uint8_t *word = NULL;
        uint64_t meta = slot->meta;
        if (!(slot->len & TP_CACHE_INLINE)) {
            size_t size = tp_cache_entry_size(len, slot->n);
            uint32_t at;
            uint8_t *entry = tp_cache_entry(into, size, &at, NULL);
            if (!entry) continue;
            memcpy(entry, from->arena + slot->at, size);
            if (len > TP_CACHE_KEY_BYTES) word = entry + (size_t)slot->n * 8;
            meta = tp_cache_meta(at, len, slot->n);
        }
        tp_cache_place(into, slot->key, tp_cache_slot_hash(slot), word, len, meta, (into->mask + 1) / 2, NULL);
    }
    tp_word_cache_clear(from);
}

static inline tp_word_cache *tp_word_cache_new(void) {
    tp_word_cache *cache = malloc(sizeof(*cache));
    if (cache && tp_word_cache_init(cache, TP_CACHE_SLOTS_SHARED)) { free(cache); return NULL; }
    return cache;
}

static inline void tp_word_cache_free(tp_word_cache *cache) {
    if (cache) tp_word_cache_release(cache);
    free(cache);
}

/* The word caches one scratch of a model reads: the model's shared one (a pooled scratch only) and its own. */
typedef struct tp_word_caches {
    int pooled;            /* a pool thread's scratch (see tp_workspace_new) */
    tp_word_cache *shared; /* the model's, while a pooled scratch encodes for it */
    tp_word_cache own;     /* every word of an unpooled scratch; those the shared one had no room for */
    tp_cache_credit credit; /* of the shared one */
} tp_word_caches;

/* Before a call's words for a model whose shared cache is model_cache. 0, or -1 on OOM. */
static inline int tp_caches_begin(tp_word_caches *c, tp_word_cache *model_cache) {
    c->shared = c->pooled ? model_cache : NULL;
    return !c->shared && !c->own.slots ? tp_word_cache_init(&c->own, TP_CACHE_SLOTS_OWN) : 0;
}

/* The cache a word is looked for (and kept) first. */
static inline const tp_word_cache *tp_caches_first(const tp_word_caches *c) { return c->shared ? c->shared : &c->own; }

/* The slot holding the word (in *in), or NULL. */
static inline const tp_cache_slot *tp_caches_find(const tp_word_caches *c, const tp_word_cache **in,
                                                  const uint8_t *word, size_t len, uint64_t hash) {
    *in = tp_caches_first(c);
    const tp_cache_slot *slot = tp_word_cache_find(*in, word, len, hash);
    if (!slot && c->shared && c->own.used) slot = tp_word_cache_find(*in = &c->own, word, len, hash);
    return slot;
}

/* Remember a word (len <= TP_CACHE_WORD). Best effort: on OOM it is not cached. */
static inline void tp_caches_remember(tp_word_caches *c, const uint8_t *word, size_t len, uint64_t hash,
                                      const uint32_t *ids, const uint32_t *starts, const uint32_t *ends, size_t n) {
    if (c->shared && tp_word_cache_offer(c->shared, word, len, hash, ids, starts, ends, n, &c->credit)) return;
    if (c->own.slots || !tp_word_cache_init(&c->own, TP_CACHE_SLOTS_OWN))
        tp_word_cache_store(&c->own, word, len, hash, ids, starts, ends, n);
}

/* Between pool rounds (no thread encoding): the scratch's own words go to the shared cache, which makes
 * room for the next round. */
static inline void tp_caches_settle(tp_word_caches *c) {
    if (!c->shared) return;
    tp_cache_credit *credit = tp_credit_current(c->shared, &c->credit);
    c->shared->used -= credit->slots; /* unclaimed: counted again only when claimed */
    credit->slots = 0;
    if (c->own.used) tp_word_cache_absorb(c->shared, &c->own);
    tp_word_cache_settle(c->shared);
}

#endif
