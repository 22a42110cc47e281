/* WordLevel looks whole words up in an open-addressing hash of the vocabulary's byte strings.
 * WordPiece walks a byte trie instead: the longest vocabulary prefix of the rest of the word is one
 * walk, not one hash per candidate end as in stock's loop (same result: vocabulary strings are
 * whole UTF-8 chars, so every trie match ends on a char boundary). Continuation tokens ("##ab") are
 * also stored without their prefix under a second root. */
#include "tp_wordpiece.h"

#include <stdlib.h>
#include <string.h>

#include "tp_hash.h"
#include "tp_trie.h"
#include "tp_word_cache.h"
#include "utf8.h"

typedef struct {
    uint64_t hash;
    const uint8_t *bytes; /* into the arena */
    uint32_t len, id;
} slot;

struct tp_wordpiece {
    slot *slots;
    size_t mask;
    tp_trie trie; /* WordPiece; roots: 0 at a word's start, 1 after it (the prefix stripped) */
    uint8_t *arena;
    uint8_t prefix[64];
    size_t prefix_len, max_chars;
    uint32_t unk_id;
    int whole_words;
    tp_word_cache *words; /* WordPiece: the pool threads' shared word cache */
};

struct tp_wordpiece_scratch {
    tp_words_buffer words; /* room for each word's length in bytes + 1 tokens */
    tp_word_caches caches; /* WordPiece words (WordLevel's one lookup is as cheap as a cache's) */
};

static const slot *find(const tp_wordpiece *wp, const uint8_t *bytes, size_t len) {
    uint64_t h = tp_hash_bytes(bytes, len);
    for (size_t i = h & wp->mask;; i = (i + 1) & wp->mask) {
        const slot *s = &wp->slots[i];
        if (!s->bytes) return NULL;
        if (s->hash == h && s->len == len && memcmp(s->bytes, bytes, len) == 0) return s;
    }
}

static int build_trie(tp_wordpiece *wp, const uint8_t *const *tokens, const uint32_t *lens, const uint32_t *ids,
                      size_t n, size_t total_bytes) {
    size_t max_nodes = 2 + 2 * total_bytes;
    if (max_nodes >= UINT32_MAX || tp_trie_init(&wp->trie, max_nodes, 2)) return -1;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] == 0) continue;
        wp->trie.token_of[tp_trie_insert(&wp->trie, 0, tokens[i], lens[i])] = ids[i];
        if (lens[i] > wp->prefix_len && memcmp(tokens[i], wp->prefix, wp->prefix_len) == 0) {
            uint32_t node = tp_trie_insert(&wp->trie, 1, tokens[i] + wp->prefix_len, lens[i] - wp->prefix_len);
            wp->trie.token_of[node] = ids[i];
        }
    }
    return tp_trie_finish(&wp->trie);
}

static int build_hash(tp_wordpiece *wp, const uint8_t *const *tokens, const uint32_t *lens, const uint32_t *ids,
                      size_t n, size_t total_bytes) {
    size_t size = 16;
    while (size < 2 * n) size *= 2;
    wp->slots = calloc(size, sizeof(slot));
    wp->arena = malloc(total_bytes + 1);
    if (!wp->slots || !wp->arena) return -1;
    wp->mask = size - 1;
    uint8_t *at = wp->arena;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] == 0) continue; /* stock never looks up an empty string */
        memcpy(at, tokens[i], lens[i]);
        uint64_t h = tp_hash_bytes(at, lens[i]);
        size_t k = h & wp->mask;
        while (wp->slots[k].bytes && !(wp->slots[k].len == lens[i] && memcmp(wp->slots[k].bytes, at, lens[i]) == 0))
            k = (k + 1) & wp->mask;
        wp->slots[k] = (slot){h, at, lens[i], ids[i]};
        at += lens[i];
    }
    return 0;
}

tp_wordpiece *tp_wordpiece_new(const uint8_t *const *tokens, const uint32_t *lens, const uint32_t *ids, size_t n,
                               const uint8_t *prefix, size_t prefix_len, size_t max_chars, uint32_t unk_id,
                               int whole_words) {
    tp_wordpiece *wp = calloc(1, sizeof(*wp));
    if (!wp || prefix_len > sizeof(wp->prefix)) { free(wp); return NULL; }
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += lens[i];
    memcpy(wp->prefix, prefix, prefix_len);
    wp->prefix_len = prefix_len;
    if (whole_words ? build_hash(wp, tokens, lens, ids, n, total) : build_trie(wp, tokens, lens, ids, n, total)) {
        tp_wordpiece_free(wp);
        return NULL;
    }
    wp->max_chars = max_chars;
    wp->unk_id = unk_id;
    wp->whole_words = whole_words;
    if (!whole_words && !(wp->words = tp_word_cache_new())) {
        tp_wordpiece_free(wp);
        return NULL;
    }
    return wp;
}

void tp_wordpiece_free(tp_wordpiece *wp) {
    if (!wp) return;
    free(wp->slots);
    free(wp->arena);
    tp_trie_free(&wp->trie);
    tp_word_cache_free(wp->words);
    free(wp);
}

tp_wordpiece_scratch *tp_wordpiece_scratch_new(void) {
    return calloc(1, sizeof(tp_wordpiece_scratch));
}

tp_word_caches *tp_wordpiece_scratch_caches(tp_wordpiece_scratch *s) { return &s->caches; }

tp_word_cache *tp_wordpiece_shared_cache(const tp_wordpiece *wp) { return wp->whole_words ? NULL : wp->words; }

void tp_wordpiece_scratch_free(tp_wordpiece_scratch *s) {
    if (!s) return;
    tp_words_buffer_free(&s->words);
    tp_word_cache_release(&s->caches.own);
    free(s);
}

/* End of the longest vocabulary entry (prefixed unless at the word start) starting at `start`, or 0. */
static size_t longest(const tp_wordpiece *wp, const uint8_t *word, size_t len, size_t start, uint32_t *id) {
    uint32_t node = start ? 1 : 0;
    size_t best = 0;
    for (size_t b = start; b < len; b++) {
        node = tp_trie_child(&wp->trie, node, word[b]);
        if (!node) break;
        uint32_t token = tp_trie_token(&wp->trie, node);
        if (token != TP_TRIE_NO_TOKEN) { best = b + 1; *id = token; }
    }
    return best;
}

/* Stock's split of a word into ids/starts/ends (room for len + 1 tokens); returns the token count. */
static size_t split_word(const tp_wordpiece *wp, const uint8_t *word, size_t len, uint32_t *ids, uint32_t *starts,
                         uint32_t *ends) {
    size_t n = 0;
    if (wp->whole_words) {
        const slot *hit = len ? find(wp, word, len) : NULL;
        if (!hit) goto unknown;
        ids[0] = hit->id; starts[0] = 0; ends[0] = (uint32_t)len;
        return 1;
    }
    if (utf8_count_chars(word, len) > wp->max_chars) goto unknown;
    for (size_t start = 0; start < len;) {
        uint32_t id;
        size_t end = longest(wp, word, len, start, &id);
        if (!end) goto unknown;
        ids[n] = id; starts[n] = (uint32_t)start; ends[n] = (uint32_t)end;
        n++;
        start = end;
    }
    return n;
unknown:
    ids[0] = wp->unk_id; starts[0] = 0; ends[0] = (uint32_t)len;
    return 1;
}

/* WordPiece words come from the thread's word cache when it has them (WordLevel's single lookup is as
 * cheap as the cache's). */
static size_t encode_word(const tp_wordpiece *wp, tp_wordpiece_scratch *s, size_t j, const uint8_t *word, size_t len) {
    size_t first = s->words.first[j];
    uint32_t *ids = s->words.ids + first, *starts = s->words.starts + first, *ends = s->words.ends + first;
    if (wp->whole_words || len > TP_CACHE_WORD) return split_word(wp, word, len, ids, starts, ends);
    const tp_word_cache *cache;
    const tp_cache_slot *slot = tp_caches_find(&s->caches, &cache, word, len, s->words.hash[j]);
    if (slot) {
        tp_word_cache_load(cache, slot, ids, starts, ends);
        return slot->n;
    }
    size_t n = split_word(wp, word, len, ids, starts, ends);
    tp_caches_remember(&s->caches, word, len, s->words.hash[j], ids, starts, ends, n);
    return n;
}

int tp_wordpiece_encode_words(const tp_wordpiece *wp, tp_wordpiece_scratch *s, const uint8_t *const *words,
                              const size_t *lens, const uint64_t *hashes, size_t n, tp_words *out) {
    size_t tokens = 0;
    for (size_t j = 0; j < n; j++) tokens += lens[j] + 1;
    if (tp_words_reserve(&s->words, tokens, n)) return -1;
    if (!wp->whole_words && tp_caches_begin(&s->caches, wp->words)) return -1;
    for (size_t j = 0, at = 0; j < n; at += lens[j] + 1, j++) {
        s->words.first[j] = (uint32_t)at;
        if (wp->whole_words) continue;
        s->words.hash[j] = hashes ? hashes[j] : tp_hash_bytes(words[j], lens[j]);
        __builtin_prefetch(tp_word_cache_home(tp_caches_first(&s->caches), s->words.hash[j]));
    }
    for (size_t j = 0; j < n; j++) s->words.count[j] = (uint32_t)encode_word(wp, s, j, words[j], lens[j]);
    *out = tp_words_of(&s->words);
    return 0;
}
