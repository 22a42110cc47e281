/* The vocabulary is a byte trie (tp_trie.h), so a common-prefix search from each char boundary is one walk. */
#include "tp_unigram.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "tp_hash.h"
#include "tp_trie.h"
#include "tp_word_cache.h"
#include "utf8.h"

#define NO_TOKEN TP_TRIE_NO_TOKEN
#define UNK_PENALTY 10.0

struct tp_unigram {
    tp_trie trie;  /* per node: the id of the piece ending there */
    double *score; /* per id */
    uint32_t unk_id;
    double unk_score;
    int byte_fallback;
    uint32_t byte_tokens[256]; /* id of <0xXX>, or NO_TOKEN */
    tp_word_cache *words;      /* the pool threads' shared word cache */
};

/* Viterbi state per byte position of a word (only char boundaries are used). */
typedef struct {
    double score;
    int32_t start; /* -1: not reached yet */
    uint32_t id;
} best_node;

struct tp_unigram_scratch {
    tp_words_buffer words; /* room for each word's length in bytes + 1 tokens */
    best_node *best;
    uint32_t *path_start, *path_end, *path_id; /* the best path, back to front */
    size_t best_cap;
    tp_word_caches caches;
};

/* The id of the piece exactly word[0, len), or NO_TOKEN. */
static uint32_t lookup(const tp_unigram *m, const uint8_t *word, size_t len) {
    uint32_t node = 0;
    for (size_t b = 0; b < len && (b == 0 || node); b++) node = tp_trie_child(&m->trie, node, word[b]);
    return len && node ? tp_trie_token(&m->trie, node) : NO_TOKEN;
}

tp_unigram *tp_unigram_new(const uint8_t *const *tokens, const uint32_t *lens, const double *scores, uint32_t n,
                           uint32_t unk_id, int byte_fallback) {
    if (unk_id > n) return NULL;
    tp_unigram *m = calloc(1, sizeof(*m));
    if (!m) return NULL;
    if (!(m->words = tp_word_cache_new())) { free(m); return NULL; }
    size_t total = 0;
    double min_score = scores[0];
    for (uint32_t i = 0; i < n; i++) {
        total += lens[i];
        if (scores[i] < min_score) min_score = scores[i];
    }
    if (total + 1 >= UINT32_MAX || tp_trie_init(&m->trie, total + 1, 1)) { tp_unigram_free(m); return NULL; }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t node = tp_trie_insert(&m->trie, 0, tokens[i], lens[i]);
        if (node) m->trie.token_of[node] = i; /* the empty piece is never matched */
    }
    if (tp_trie_finish(&m->trie) || !(m->score = malloc(((size_t)n ? n : 1) * sizeof(double)))) {
        tp_unigram_free(m);
        return NULL;
    }
    memcpy(m->score, scores, (size_t)n * sizeof(double));
    m->unk_id = unk_id == n ? TP_UNIGRAM_RAISES : unk_id;
    m->unk_score = min_score - UNK_PENALTY;
    m->byte_fallback = byte_fallback;
    for (int byte = 0; byte < 256; byte++) {
        static const char hex[] = "0123456789ABCDEF";
        uint8_t name[6] = {'<', '0', 'x', (uint8_t)hex[byte >> 4], (uint8_t)hex[byte & 15], '>'};
        m->byte_tokens[byte] = lookup(m, name, 6);
    }
    return m;
}

void tp_unigram_free(tp_unigram *m) {
    if (!m) return;
    tp_trie_free(&m->trie);
    free(m->score);
    tp_word_cache_free(m->words);
    free(m);
}

tp_unigram_scratch *tp_unigram_scratch_new(void) {
    return calloc(1, sizeof(tp_unigram_scratch));
}

tp_word_caches *tp_unigram_scratch_caches(tp_unigram_scratch *s) { return &s->caches; }

tp_word_cache *tp_unigram_shared_cache(const tp_unigram *model) { return model->words; }

void tp_unigram_scratch_free(tp_unigram_scratch *s) {
    if (!s) return;
    tp_words_buffer_free(&s->words);
    free(s->best); free(s->path_start); free(s->path_end); free(s->path_id);
    tp_word_cache_release(&s->caches.own);
    free(s);
}

static int reserve(tp_unigram_scratch *s, size_t tokens, size_t words, size_t longest) {
    if (tp_words_reserve(&s->words, tokens, words)) return -1;
    if (longest + 1 > s->best_cap) {
        size_t cap = grow_capacity(s->best_cap, longest + 1);
        if (grow_to(&s->best, cap, sizeof(best_node)) || grow_to(&s->path_start, cap, 4) ||
            grow_to(&s->path_end, cap, 4) || grow_to(&s->path_id, cap, 4)) return -1;
        s->best_cap = cap;
    }
    return 0;
}

static void consider(best_node *target, double score, size_t start, uint32_t id) {
    if (target->start < 0 || score > target->score) {
        target->score = score;
        target->start = (int32_t)start;
        target->id = id;
    }
}

/* The best path's pieces, back to front, into s->path_*; returns their count, or 0 when the model has
 * no unk piece and the unk candidate would be taken (where stock raises). */
static size_t viterbi(const tp_unigram *m, tp_unigram_scratch *s, const uint8_t *word, size_t len) {
    best_node *best = s->best;
    for (size_t b = 0; b <= len; b++) best[b] = (best_node){0.0, -1, 0};
    for (size_t start = 0; start < len;) {
        double here = best[start].score;
        size_t char_len = utf8_char_len(word[start]);
        int single = 0;
        uint32_t node = 0;
        for (size_t b = start; b < len; b++) {
            node = tp_trie_child(&m->trie, node, word[b]);
            if (!node) break;
            uint32_t id = tp_trie_token(&m->trie, node);
            if (id == NO_TOKEN) continue;
            consider(&best[b + 1], m->score[id] + here, start, id);
            single |= b + 1 - start == char_len;
        }
        if (!single) {
            best_node *target = &best[start + char_len];
            if (m->unk_id == TP_UNIGRAM_RAISES && (target->start < 0 || m->unk_score + here > target->score)) return 0;
            consider(target, m->unk_score + here, start, m->unk_id);
        }
        start += char_len;
    }
    size_t n = 0;
    for (size_t end = len; end > 0; end = (size_t)best[end].start, n++) {
        s->path_start[n] = (uint32_t)best[end].start;
        s->path_end[n] = (uint32_t)end;
        s->path_id[n] = best[end].id;
    }
    return n;
}

/* Stock's tokens of a word (room for len + 1); returns their count. */
static size_t split_word(const tp_unigram *m, tp_unigram_scratch *s, const uint8_t *word, size_t len, uint32_t *ids,
                         uint32_t *starts, uint32_t *ends) {
    size_t n_path = viterbi(m, s, word, len), n = 0;
    if (n_path == 0 && len) {
        ids[0] = TP_UNIGRAM_RAISES; starts[0] = 0; ends[0] = (uint32_t)len;
        return 1;
    }
    for (size_t k = n_path; k > 0;) {
        k--;
        uint32_t start = s->path_start[k], end = s->path_end[k], id = s->path_id[k];
        if (id == m->unk_id) { /* fuse the run of unk pieces and look the run up whole */
            while (k > 0 && s->path_id[k - 1] == m->unk_id) end = s->path_end[--k];
            id = lookup(m, word + start, end - start);
            if (id == NO_TOKEN && m->byte_fallback) {
                size_t b = start;
                while (b < end && m->byte_tokens[word[b]] != NO_TOKEN) b++;
                if (b == end) {
                    for (b = start; b < end; b++, n++) {
                        ids[n] = m->byte_tokens[word[b]]; starts[n] = start; ends[n] = end;
                    }
                    continue;
                }
            }
            if (id == NO_TOKEN) id = m->unk_id;
        }
        ids[n] = id; starts[n] = start; ends[n] = end;
        n++;
    }
    return n;
}

static size_t encode_word(const tp_unigram *m, tp_unigram_scratch *s, size_t j, const uint8_t *word, size_t len) {
    size_t first = s->words.first[j];
    uint32_t *ids = s->words.ids + first, *starts = s->words.starts + first, *ends = s->words.ends + first;
    if (len > TP_CACHE_WORD) return split_word(m, s, word, len, ids, starts, ends);
    const tp_word_cache *cache;
    const tp_cache_slot *slot = tp_caches_find(&s->caches, &cache, word, len, s->words.hash[j]);
    if (slot) {
        tp_word_cache_load(cache, slot, ids, starts, ends);
        return slot->n;
    }
    size_t n = split_word(m, s, word, len, ids, starts, ends);
    tp_caches_remember(&s->caches, word, len, s->words.hash[j], ids, starts, ends, n);
    return n;
}

int tp_unigram_encode_words(const tp_unigram *m, tp_unigram_scratch *s, const uint8_t *const *words,
                            const size_t *lens, const uint64_t *hashes, size_t n, tp_words *out) {
    size_t tokens = 0, longest = 0;
    for (size_t j = 0; j < n; j++) {
        tokens += lens[j] + 1;
        if (lens[j] > longest) longest = lens[j];
    }
    if (reserve(s, tokens, n, longest)) return -1;
    if (tp_caches_begin(&s->caches, m->words)) return -1;
    const tp_word_cache *first = tp_caches_first(&s->caches);
    for (size_t j = 0, at = 0; j < n; at += lens[j] + 1, j++) {
        s->words.first[j] = (uint32_t)at;
        s->words.hash[j] = hashes ? hashes[j] : tp_hash_bytes(words[j], lens[j]);
        __builtin_prefetch(tp_word_cache_home(first, s->words.hash[j]));
    }
    /* A second round for the arena entries the home slots point to (tokens, then a long word's bytes),
     * so a hit's two dependent misses overlap across the words too. */
    for (size_t j = 0; j < n; j++) {
        const tp_cache_slot *home = tp_word_cache_home(first, s->words.hash[j]);
        uint64_t meta = __atomic_load_n(&home->meta, __ATOMIC_RELAXED);
        if (meta == TP_CACHE_EMPTY || meta == TP_CACHE_BUSY || (meta >> 32 & TP_CACHE_INLINE)) continue;
        const uint8_t *entry = first->arena + (uint32_t)meta;
        __builtin_prefetch(entry);
        __builtin_prefetch(entry + tp_cache_entry_size(lens[j], (size_t)(meta >> 48)) - 1);
    }
    for (size_t j = 0; j < n; j++) s->words.count[j] = (uint32_t)encode_word(m, s, j, words[j], lens[j]);
    *out = tp_words_of(&s->words);
    return 0;
}
