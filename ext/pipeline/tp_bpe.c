/* BPE over raw bytes: vocab and merge tables are open-addressing hashes built once; each thread's
 * scratch carries its own word cache, so encoding shares nothing mutable. */
#include "tp_bpe.h"

#include <stdlib.h>
#include <string.h>

#include "tp_hash.h"

#define NO_ID UINT32_MAX
#define CACHE_WORD 4096            /* longer words are not cached (ranges are stored as uint16) */
#define CACHE_SLOTS (1u << 16)     /* index slots; the cache is emptied when half are used ... */
#define CACHE_ARENA_MAX (16u << 20) /* ... or when the entries would outgrow this many bytes */

typedef struct {
    uint64_t head;    /* word_head of the token's bytes */
    uint32_t id;      /* NO_ID: empty slot */
    uint32_t len;
} vocab_slot;

typedef struct {
    uint64_t key;     /* left << 32 | right */
    uint32_t rank;    /* NO_ID: empty slot */
    uint32_t merged;
} merge_slot;

struct tp_bpe {
    uint8_t *bytes;      /* all token byte strings, concatenated */
    uint64_t *offset;    /* id -> start in bytes; offset[id+1]-offset[id] = length */
    uint8_t *has_bytes;  /* id -> 0 when the id has no byte string */
    uint32_t n_tokens;
    vocab_slot *vocab_slots; uint64_t vocab_mask;   /* bytes -> id, one cache line per probe */
    merge_slot *merges; uint64_t merge_mask; /* (left, right) -> (rank, merged), one cache line per probe */
    uint32_t byte_id[4][256]; /* [symbol_kind(first, last)][byte]: the byte's initial symbol */
    tp_bpe_options opt;
    uint32_t byte_tokens[256];
    uint8_t prefix[TP_BPE_AFFIX_MAX], suffix[TP_BPE_AFFIX_MAX];
};

/* Which affixes a word's symbol at position i of n carries: bit 1 prefix (not first), bit 0 suffix (last). */
static unsigned symbol_kind(size_t i, size_t end, size_t len) { return (i > 0) << 1 | (end == len); }

/* The initial symbol's bytes: [prefix] bytes [suffix] per kind; returns its length (buf holds
 * 2 * TP_BPE_AFFIX_MAX + 4 bytes). */
static size_t affixed(const tp_bpe *bpe, unsigned kind, const uint8_t *bytes, size_t len, uint8_t *buf) {
    size_t n = 0;
    if (kind & 2) { memcpy(buf, bpe->prefix, bpe->opt.prefix_len); n = bpe->opt.prefix_len; }
    memcpy(buf + n, bytes, len); n += len;
    if (kind & 1) { memcpy(buf + n, bpe->suffix, bpe->opt.suffix_len); n += bpe->opt.suffix_len; }
    return n;
}

/* A cached word lives in the arena at `at`: ids (uint32 x n), starts and ends (uint16 x n), then the
 * word's bytes. Emptying the whole cache when full keeps it simple; hit rates on real text stay high. */
typedef struct {
    uint64_t hash;
    uint32_t at;       /* EMPTY_SLOT: unused */
    uint16_t len, n;
} cache_slot;

#define EMPTY_SLOT UINT32_MAX

typedef struct {
    cache_slot *slots;
    size_t used;
    uint8_t *arena;
    size_t arena_len, arena_cap;
} word_cache;

typedef struct {
    uint32_t rank, pos;
} heap_entry;

struct tp_bpe_scratch {
    uint32_t *ids, *starts, *ends, *ranks, *next, *prev;
    heap_entry *heap;
    size_t cap;
    word_cache cache;
};

static uint64_t merge_hash(uint64_t key) { return tp_mix64(key); }

/* A word's first (up to) 8 bytes, zero padded: most vocab probes are settled by this one compare. */
static uint64_t word_head(const uint8_t *word, size_t len) {
    uint64_t head = 0;
    memcpy(&head, word, len < 8 ? len : 8);
    return head;
}

static uint32_t vocab_find(const tp_bpe *bpe, const uint8_t *word, size_t len, uint64_t hash) {
    uint64_t head = word_head(word, len);
    for (uint64_t i = hash & bpe->vocab_mask;; i = (i + 1) & bpe->vocab_mask) {
        const vocab_slot *slot = &bpe->vocab_slots[i];
        if (slot->id == NO_ID) return NO_ID;
        if (slot->len == len && slot->head == head &&
            (len <= 8 || tp_same_bytes(bpe->bytes + bpe->offset[slot->id] + 8, word + 8, len - 8))) return slot->id;
    }
}

static int merge_find(const tp_bpe *bpe, uint32_t left, uint32_t right, uint32_t *rank, uint32_t *merged) {
    uint64_t key = ((uint64_t)left << 32) | right;
    for (uint64_t slot = merge_hash(key) & bpe->merge_mask;; slot = (slot + 1) & bpe->merge_mask) {
        const merge_slot *m = &bpe->merges[slot];
        if (m->key == key && m->rank != NO_ID) {
            *rank = m->rank;
            *merged = m->merged;
            return 1;
        }
        if (m->rank == NO_ID) return 0;
    }
}

static uint64_t table_size(uint64_t n) {
    uint64_t size = 16;
    while (size < 2 * n) size <<= 1;
    return size;
}

static int build_vocab(tp_bpe *bpe, const uint8_t *const *tokens, const uint32_t *lens, uint32_t n) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) total += lens[i] == NO_ID ? 0 : lens[i];
    bpe->bytes = malloc(total ? total : 1);
    bpe->offset = malloc(sizeof(uint64_t) * ((size_t)n + 1));
    bpe->has_bytes = calloc(n ? n : 1, 1);
    uint64_t size = table_size(n);
    bpe->vocab_slots = malloc(sizeof(vocab_slot) * size);
    if (!bpe->bytes || !bpe->offset || !bpe->has_bytes || !bpe->vocab_slots) return -1;
    memset(bpe->vocab_slots, 0xFF, sizeof(vocab_slot) * size);
    bpe->vocab_mask = size - 1;
    uint64_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        bpe->offset[i] = at;
        if (lens[i] == NO_ID) continue;
        memcpy(bpe->bytes + at, tokens[i], lens[i]);
        at += lens[i];
        bpe->has_bytes[i] = 1;
    }
    bpe->offset[n] = at;
    for (uint32_t i = 0; i < n; i++) {
        if (!bpe->has_bytes[i]) continue;
        const uint8_t *word = bpe->bytes + bpe->offset[i];
        size_t len = bpe->offset[i + 1] - bpe->offset[i];
        uint64_t hash = tp_hash_bytes(word, len);
        if (vocab_find(bpe, word, len, hash) != NO_ID) continue; /* duplicate bytes: first id wins */
        uint64_t slot = hash & bpe->vocab_mask;
        while (bpe->vocab_slots[slot].id != NO_ID) slot = (slot + 1) & bpe->vocab_mask;
        bpe->vocab_slots[slot] = (vocab_slot){word_head(word, len), i, (uint32_t)len};
    }
    return 0;
}

static int build_merges(tp_bpe *bpe, const tp_merge *merges, uint32_t n) {
    uint64_t size = table_size(n);
    bpe->merges = malloc(sizeof(merge_slot) * size);
    if (!bpe->merges) return -1;
    memset(bpe->merges, 0xFF, sizeof(merge_slot) * size);
    bpe->merge_mask = size - 1;
    for (uint32_t rank = 0; rank < n; rank++) {
        uint64_t key = ((uint64_t)merges[rank].left << 32) | merges[rank].right;
        uint64_t slot = merge_hash(key) & bpe->merge_mask;
        while (bpe->merges[slot].rank != NO_ID && bpe->merges[slot].key != key) slot = (slot + 1) & bpe->merge_mask;
        if (bpe->merges[slot].rank != NO_ID) continue; /* a repeated pair keeps its first (lowest) rank */
        bpe->merges[slot] = (merge_slot){key, rank, merges[rank].merged};
    }
    return 0;
}

tp_bpe *tp_bpe_new(const uint8_t *const *tokens, const uint32_t *lens, uint32_t n_tokens,
                   const tp_merge *merges, uint32_t n_merges, const tp_bpe_options *options) {
    tp_bpe *bpe = calloc(1, sizeof(*bpe));
    if (!bpe) return NULL;
    bpe->n_tokens = n_tokens;
    bpe->opt = *options;
    if (options->prefix_len > TP_BPE_AFFIX_MAX || options->suffix_len > TP_BPE_AFFIX_MAX) goto fail;
    if (options->prefix_len) memcpy(bpe->prefix, options->prefix, options->prefix_len);
    if (options->suffix_len) memcpy(bpe->suffix, options->suffix, options->suffix_len);
    bpe->opt.prefix = bpe->prefix; bpe->opt.suffix = bpe->suffix;
    if (options->byte_fallback) memcpy(bpe->byte_tokens, options->byte_tokens, sizeof(bpe->byte_tokens));
    bpe->opt.byte_tokens = bpe->byte_tokens;
    if (build_vocab(bpe, tokens, lens, n_tokens) || build_merges(bpe, merges, n_merges)) goto fail;
    if (options->char_level) return bpe;
    for (unsigned kind = 0; kind < 4; kind++)
        for (int byte = 0; byte < 256; byte++) {
            uint8_t one = (uint8_t)byte, buf[2 * TP_BPE_AFFIX_MAX + 4];
            size_t len = affixed(bpe, kind, &one, 1, buf);
            bpe->byte_id[kind][byte] = vocab_find(bpe, buf, len, tp_hash_bytes(buf, len));
            if (bpe->byte_id[kind][byte] == NO_ID) goto fail;
        }
    return bpe;
fail:
    tp_bpe_free(bpe);
    return NULL;
}

void tp_bpe_free(tp_bpe *bpe) {
    if (!bpe) return;
    free(bpe->bytes); free(bpe->offset); free(bpe->has_bytes); free(bpe->vocab_slots);
    free(bpe->merges);
    free(bpe);
}

tp_bpe_scratch *tp_bpe_scratch_new(void) {
    tp_bpe_scratch *scratch = calloc(1, sizeof(*scratch));
    if (!scratch) return NULL;
    scratch->cache.slots = malloc(CACHE_SLOTS * sizeof(cache_slot));
    if (!scratch->cache.slots) { free(scratch); return NULL; }
    memset(scratch->cache.slots, 0xFF, CACHE_SLOTS * sizeof(cache_slot));
    return scratch;
}

void tp_bpe_scratch_free(tp_bpe_scratch *scratch) {
    if (!scratch) return;
    free(scratch->ids); free(scratch->starts); free(scratch->ends); free(scratch->ranks);
    free(scratch->next); free(scratch->prev); free(scratch->heap);
    free(scratch->cache.slots); free(scratch->cache.arena);
    free(scratch);
}

static int reserve(tp_bpe_scratch *s, size_t n) {
    if (n <= s->cap) return 0;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < n) cap *= 2;
    uint32_t *ids = realloc(s->ids, cap * 4); if (!ids) return -1; s->ids = ids;
    uint32_t *starts = realloc(s->starts, cap * 4); if (!starts) return -1; s->starts = starts;
    uint32_t *ends = realloc(s->ends, cap * 4); if (!ends) return -1; s->ends = ends;
    uint32_t *ranks = realloc(s->ranks, cap * 4); if (!ranks) return -1; s->ranks = ranks;
    uint32_t *next = realloc(s->next, cap * 4); if (!next) return -1; s->next = next;
    uint32_t *prev = realloc(s->prev, cap * 4); if (!prev) return -1; s->prev = prev;
    heap_entry *heap = realloc(s->heap, cap * 3 * sizeof(heap_entry)); if (!heap) return -1; s->heap = heap;
    s->cap = cap;
    return 0;
}

static uint32_t pair_rank(const tp_bpe *bpe, const uint32_t *ids, size_t i, uint32_t *merged) {
    uint32_t rank;
    return merge_find(bpe, ids[i], ids[i + 1], &rank, merged) ? rank : NO_ID;
}

static int heap_less(heap_entry a, heap_entry b) { return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos); }

static void heap_push(heap_entry *heap, size_t *n, heap_entry e) {
    size_t i = (*n)++;
    while (i > 0 && heap_less(e, heap[(i - 1) / 2])) { heap[i] = heap[(i - 1) / 2]; i = (i - 1) / 2; }
    heap[i] = e;
}

static heap_entry heap_pop(heap_entry *heap, size_t *n) {
    heap_entry top = heap[0], last = heap[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= *n) break;
        if (child + 1 < *n && heap_less(heap[child + 1], heap[child])) child++;
        if (!heap_less(heap[child], last)) break;
        heap[i] = heap[child];
        i = child;
    }
    if (*n) heap[i] = last;
    return top;
}

#define NONE_POS UINT32_MAX

/* Long words: symbols as a linked list over byte positions and a (rank, position) min-heap, as HF
 * does; a popped entry is stale unless its pair still has the recorded rank. */
static size_t merge_long(const tp_bpe *bpe, tp_bpe_scratch *s, size_t n) {
    uint32_t *ids = s->ids, *ends = s->ends, *next = s->next, *prev = s->prev, merged, rank;
    heap_entry *heap = s->heap;
    size_t heap_n = 0;
    for (size_t i = 0; i < n; i++) { next[i] = i + 1 < n ? (uint32_t)i + 1 : NONE_POS; prev[i] = i ? (uint32_t)i - 1 : NONE_POS; }
    for (size_t i = 0; i + 1 < n; i++)
        if (merge_find(bpe, ids[i], ids[i + 1], &rank, &merged)) heap_push(heap, &heap_n, (heap_entry){rank, (uint32_t)i});
    while (heap_n) {
        heap_entry top = heap_pop(heap, &heap_n);
        uint32_t pos = top.pos, right = next[pos];
        if (ids[pos] == NONE_POS || right == NONE_POS) continue;
        if (!merge_find(bpe, ids[pos], ids[right], &rank, &merged) || rank != top.rank) continue;
        ids[pos] = merged;
        ends[pos] = ends[right];
        ids[right] = NONE_POS;
        next[pos] = next[right];
        if (next[right] != NONE_POS) prev[next[right]] = pos;
        if (prev[pos] != NONE_POS && merge_find(bpe, ids[prev[pos]], ids[pos], &rank, &merged))
            heap_push(heap, &heap_n, (heap_entry){rank, prev[pos]});
        if (next[pos] != NONE_POS && merge_find(bpe, ids[pos], ids[next[pos]], &rank, &merged))
            heap_push(heap, &heap_n, (heap_entry){rank, pos});
    }
    size_t out = 0;
    for (uint32_t i = 0; i != NONE_POS; i = next[i]) {
        s->ids[out] = ids[i]; s->starts[out] = s->starts[i]; s->ends[out] = ends[i];
        out++;
    }
    return out;
}

/* Short words: leftmost lowest-rank merge first by scanning, the same order as the heap. */
static size_t merge_all(const tp_bpe *bpe, tp_bpe_scratch *s, size_t n) {
    uint32_t *ids = s->ids, *ends = s->ends, *ranks = s->ranks, *starts = s->starts, *merged = s->prev;
    for (size_t i = 0; i + 1 < n; i++) ranks[i] = pair_rank(bpe, ids, i, &merged[i]);
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (ranks[i] < ranks[best]) best = i;
        if (ranks[best] == NO_ID) break;
        ids[best] = merged[best];
        ends[best] = ends[best + 1];
        size_t tail = n - best - 2;
        memmove(ids + best + 1, ids + best + 2, tail * 4);
        memmove(starts + best + 1, starts + best + 2, tail * 4);
        memmove(ends + best + 1, ends + best + 2, tail * 4);
        memmove(ranks + best + 1, ranks + best + 2, (tail ? tail - 1 : 0) * 4);
        memmove(merged + best + 1, merged + best + 2, (tail ? tail - 1 : 0) * 4);
        n--;
        if (best > 0) ranks[best - 1] = pair_rank(bpe, ids, best - 1, &merged[best - 1]);
        if (best + 1 < n) ranks[best] = pair_rank(bpe, ids, best, &merged[best]);
    }
    return n;
}

static size_t utf8_char_len(uint8_t lead) {
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/* HF's Word::add: a symbol's range starts where the previous one ended (so ranges shift left past
 * unknown chars that are dropped, exactly as stock's offsets do). */
static void add_symbol(tp_bpe_scratch *s, size_t *n, uint32_t id, size_t byte_len) {
    uint32_t start = *n ? s->ends[*n - 1] : 0;
    s->ids[*n] = id; s->starts[*n] = start; s->ends[*n] = start + (uint32_t)byte_len;
    (*n)++;
}

/* HF's char-level word start (merge_word): known chars (with their prefix/suffix), <0xXX> byte tokens
 * of the char (never with affixes: the Python layer sends that to stock), or a (fused) unk per unknown
 * char. The pending unk is flushed before the next known char only, exactly as HF orders it. */
static size_t char_symbols(const tp_bpe *bpe, tp_bpe_scratch *s, const uint8_t *word, size_t len) {
    size_t n = 0, unk_len = 0;
    int pending = 0;
    for (size_t i = 0; i < len;) {
        size_t end = i + utf8_char_len(word[i]);
        if (end > len) end = len;
        uint8_t buf[2 * TP_BPE_AFFIX_MAX + 4];
        size_t key_len = affixed(bpe, symbol_kind(i, end, len), word + i, end - i, buf);
        uint32_t id = vocab_find(bpe, buf, key_len, tp_hash_bytes(buf, key_len));
        if (id != NO_ID) {
            if (pending) { add_symbol(s, &n, bpe->opt.unk_id, unk_len); pending = 0; }
            add_symbol(s, &n, id, end - i);
        } else if (bpe->opt.byte_fallback) {
            for (size_t b = 0; b < key_len; b++) add_symbol(s, &n, bpe->byte_tokens[buf[b]], 1);
        } else if (bpe->opt.unk_id != NO_ID) {
            if (pending && bpe->opt.fuse_unk) {
                unk_len += end - i;
            } else {
                if (pending) add_symbol(s, &n, bpe->opt.unk_id, unk_len);
                pending = 1; unk_len = end - i;
            }
        }
        i = end;
    }
    if (pending) add_symbol(s, &n, bpe->opt.unk_id, unk_len);
    return n;
}

static size_t cache_entry_bytes(size_t len, size_t n) { return (n * 8 + len + 7) & ~(size_t)7; }

/* The slot holding word, or the empty slot where it would go. */
static cache_slot *cache_find(const word_cache *cache, const uint8_t *word, size_t len, uint64_t hash) {
    for (size_t i = hash & (CACHE_SLOTS - 1);; i = (i + 1) & (CACHE_SLOTS - 1)) {
        cache_slot *slot = &cache->slots[i];
        if (slot->at == EMPTY_SLOT) return slot;
        if (slot->hash == hash && slot->len == len &&
            tp_same_bytes(cache->arena + slot->at + (size_t)slot->n * 8, word, len)) return slot;
    }
}

static void cache_load(const word_cache *cache, const cache_slot *slot, tp_bpe_scratch *s) {
    const uint8_t *entry = cache->arena + slot->at;
    const uint16_t *starts = (const uint16_t *)(entry + (size_t)slot->n * 4), *ends = starts + slot->n;
    memcpy(s->ids, entry, (size_t)slot->n * 4);
    for (size_t k = 0; k < slot->n; k++) { s->starts[k] = starts[k]; s->ends[k] = ends[k]; }
}

static void cache_clear(word_cache *cache) {
    memset(cache->slots, 0xFF, CACHE_SLOTS * sizeof(cache_slot));
    cache->used = 0;
    cache->arena_len = 0;
}

/* Best effort: on OOM the word is simply not cached. */
static void cache_store(word_cache *cache, const uint8_t *word, size_t len, uint64_t hash,
                        const tp_bpe_scratch *s, size_t n) {
    size_t size = cache_entry_bytes(len, n);
    if (cache->used >= CACHE_SLOTS / 2 || cache->arena_len + size > CACHE_ARENA_MAX) cache_clear(cache);
    if (cache->arena_len + size > cache->arena_cap) {
        size_t cap = cache->arena_cap ? cache->arena_cap * 2 : 256 * 1024;
        while (cap < cache->arena_len + size) cap *= 2;
        uint8_t *arena = realloc(cache->arena, cap);
        if (!arena) return;
        cache->arena = arena;
        cache->arena_cap = cap;
    }
    cache_slot *slot = cache_find(cache, word, len, hash);
    uint8_t *entry = cache->arena + cache->arena_len;
    uint16_t *starts = (uint16_t *)(entry + n * 4), *ends = starts + n;
    memcpy(entry, s->ids, n * 4);
    for (size_t k = 0; k < n; k++) { starts[k] = (uint16_t)s->starts[k]; ends[k] = (uint16_t)s->ends[k]; }
    memcpy(entry + n * 8, word, len);
    *slot = (cache_slot){hash, (uint32_t)cache->arena_len, (uint16_t)len, (uint16_t)n};
    cache->arena_len += size;
    cache->used++;
}

int tp_bpe_encode(const tp_bpe *bpe, tp_bpe_scratch *s, const uint8_t *word, size_t len,
                  const uint32_t **ids, const uint32_t **starts, const uint32_t **ends, size_t *n_out) {
    if (reserve(s, len + 1)) return -1;
    *ids = s->ids; *starts = s->starts; *ends = s->ends;
    uint64_t hash = tp_hash_bytes(word, len);
    uint32_t whole = bpe->opt.ignore_merges ? vocab_find(bpe, word, len, hash) : NO_ID;
    if (whole != NO_ID) {
        s->ids[0] = whole; s->starts[0] = 0; s->ends[0] = (uint32_t)len;
        *n_out = 1;
        return 0;
    }
    int cacheable = len <= CACHE_WORD;
    if (cacheable) {
        const cache_slot *slot = cache_find(&s->cache, word, len, hash);
        if (slot->at != EMPTY_SLOT) {
            cache_load(&s->cache, slot, s);
            *n_out = slot->n;
            return 0;
        }
    }
    size_t n;
    if (bpe->opt.char_level) {
        n = char_symbols(bpe, s, word, len);
        n = n > 32 ? merge_long(bpe, s, n) : merge_all(bpe, s, n);
    } else {
        for (size_t i = 0; i < len; i++) {
            s->ids[i] = bpe->byte_id[symbol_kind(i, i + 1, len)][word[i]];
            s->starts[i] = (uint32_t)i;
            s->ends[i] = (uint32_t)i + 1;
        }
        n = len > 32 ? merge_long(bpe, s, len) : merge_all(bpe, s, len);
    }
    if (cacheable) cache_store(&s->cache, word, len, hash, s, n);
    *n_out = n;
    return 0;
}
