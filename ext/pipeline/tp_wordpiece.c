/* WordPiece / WordLevel over an open-addressing hash of the vocabulary's byte strings. */
#include "tp_wordpiece.h"

#include <stdlib.h>
#include <string.h>

#include "tp_hash.h"

typedef struct {
    uint64_t hash;
    const uint8_t *bytes; /* into the arena */
    uint32_t len, id;
} slot;

struct tp_wordpiece {
    slot *slots;
    size_t mask;
    uint8_t *arena;
    uint8_t prefix[64];
    size_t prefix_len, max_chars, max_len;
    uint32_t unk_id;
    int whole_words;
};

struct tp_wordpiece_scratch {
    uint32_t *ids, *starts, *ends;
    size_t cap;
    uint8_t *key;
    size_t key_cap;
};

static const slot *find(const tp_wordpiece *wp, const uint8_t *bytes, size_t len) {
    uint64_t h = tp_hash_bytes(bytes, len);
    for (size_t i = h & wp->mask;; i = (i + 1) & wp->mask) {
        const slot *s = &wp->slots[i];
        if (!s->bytes) return NULL;
        if (s->hash == h && s->len == len && memcmp(s->bytes, bytes, len) == 0) return s;
    }
}

tp_wordpiece *tp_wordpiece_new(const uint8_t *const *tokens, const uint32_t *lens, const uint32_t *ids, size_t n,
                               const uint8_t *prefix, size_t prefix_len, size_t max_chars, uint32_t unk_id,
                               int whole_words) {
    tp_wordpiece *wp = calloc(1, sizeof(*wp));
    if (!wp || prefix_len > sizeof(wp->prefix)) { free(wp); return NULL; }
    size_t size = 16, total = 0;
    while (size < 2 * n) size *= 2;
    for (size_t i = 0; i < n; i++) total += lens[i];
    wp->slots = calloc(size, sizeof(slot));
    wp->arena = malloc(total + 1);
    if (!wp->slots || !wp->arena) { tp_wordpiece_free(wp); return NULL; }
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
        if (lens[i] > wp->max_len) wp->max_len = lens[i];
    }
    memcpy(wp->prefix, prefix, prefix_len);
    wp->prefix_len = prefix_len;
    wp->max_chars = max_chars;
    wp->unk_id = unk_id;
    wp->whole_words = whole_words;
    return wp;
}

void tp_wordpiece_free(tp_wordpiece *wp) {
    if (!wp) return;
    free(wp->slots);
    free(wp->arena);
    free(wp);
}

tp_wordpiece_scratch *tp_wordpiece_scratch_new(void) {
    return calloc(1, sizeof(tp_wordpiece_scratch));
}

void tp_wordpiece_scratch_free(tp_wordpiece_scratch *s) {
    if (!s) return;
    free(s->ids); free(s->starts); free(s->ends); free(s->key);
    free(s);
}

static int reserve(tp_wordpiece_scratch *s, size_t tokens, size_t key) {
    if (tokens > s->cap) {
        size_t cap = tokens * 2;
        void *p;
        if (!(p = realloc(s->ids, cap * 4))) return -1;
        s->ids = p;
        if (!(p = realloc(s->starts, cap * 4))) return -1;
        s->starts = p;
        if (!(p = realloc(s->ends, cap * 4))) return -1;
        s->ends = p;
        s->cap = cap;
    }
    if (key > s->key_cap) {
        uint8_t *p = realloc(s->key, key * 2);
        if (!p) return -1;
        s->key = p; s->key_cap = key * 2;
    }
    return 0;
}

static size_t count_chars(const uint8_t *word, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += (word[i] & 0xC0) != 0x80;
    return n;
}

/* Longest vocabulary entry (prefixed unless at the word start) starting at `start`; its end or 0. */
static size_t longest(const tp_wordpiece *wp, tp_wordpiece_scratch *s, const uint8_t *word, size_t len,
                      size_t start, uint32_t *id) {
    size_t prefix = start ? wp->prefix_len : 0;
    size_t end = len;
    if (end - start + prefix > wp->max_len) {   /* nothing longer than max_len can match */
        if (wp->max_len < prefix) return 0;
        end = start + wp->max_len - prefix;
        while (end > start && end < len && (word[end] & 0xC0) == 0x80) end--;
    }
    memcpy(s->key, wp->prefix, prefix);
    memcpy(s->key + prefix, word + start, end - start);
    while (end > start) {
        const slot *hit = find(wp, s->key, prefix + end - start);
        if (hit) { *id = hit->id; return end; }
        do end--; while (end > start && (word[end] & 0xC0) == 0x80);
    }
    return 0;
}

int tp_wordpiece_encode(const tp_wordpiece *wp, tp_wordpiece_scratch *s, const uint8_t *word, size_t len,
                        const uint32_t **ids, const uint32_t **starts, const uint32_t **ends, size_t *n_out) {
    if (reserve(s, len + 1, len + wp->prefix_len + 1)) return -1;
    size_t n = 0;
    int bad = 0;
    if (wp->whole_words) {
        const slot *hit = len ? find(wp, word, len) : NULL;
        if (hit) { s->ids[0] = hit->id; s->starts[0] = 0; s->ends[0] = (uint32_t)len; n = 1; }
        else bad = 1;
    } else if (count_chars(word, len) > wp->max_chars) {
        bad = 1;
    } else {
        for (size_t start = 0; start < len;) {
            uint32_t id;
            size_t end = longest(wp, s, word, len, start, &id);
            if (!end) { bad = 1; break; }
            s->ids[n] = id; s->starts[n] = (uint32_t)start; s->ends[n] = (uint32_t)end;
            n++;
            start = end;
        }
    }
    if (bad) { s->ids[0] = wp->unk_id; s->starts[0] = 0; s->ends[0] = (uint32_t)len; n = 1; }
    *ids = s->ids; *starts = s->starts; *ends = s->ends; *n_out = n;
    return 0;
}
