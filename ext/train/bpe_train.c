#include "bpe_train.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "pipeline/tp_hash.h"

typedef struct {
    uint32_t left, right;
    int64_t count;
    int64_t count_before_step; /* valid when step_seen == current step */
    int64_t step_seen;
    uint32_t *words; /* may hold stale or repeated entries; deduplicated per step by word stamps */
    uint32_t n_words, cap_words;
} pair_t;

typedef struct {
    int64_t count;
    uint32_t pair;
} heap_entry;

struct bpe_trainer {
    uint32_t byte_base;
    /* words: symbols[sym_start[w] .. sym_start[w] + sym_len[w]) */
    uint32_t *symbols;
    int64_t *sym_start;
    uint32_t *sym_len;
    int64_t *word_count;
    int64_t *word_stamp;
    size_t n_words;
    /* tokens (ids >= byte_base): bytes in an arena */
    uint8_t *arena;
    size_t arena_len, arena_cap;
    size_t *tok_off;
    uint32_t *tok_len;
    uint32_t n_tokens, cap_tokens; /* ids 0 .. n_tokens-1, of which < byte_base are not stored */
    uint32_t *tok_table;           /* open addressing: id+1, 0 = empty */
    size_t tok_table_cap;
    /* pairs */
    pair_t *pairs;
    uint32_t n_pairs, cap_pairs;
    uint32_t *pair_table; /* open addressing: index+1, 0 = empty */
    size_t pair_table_cap;
    /* lazy max-heap */
    heap_entry *heap;
    size_t heap_len, heap_cap;
    /* merges */
    uint32_t *merges; /* triples */
    size_t n_merges, cap_merges;
    uint32_t *touched;
    size_t n_touched, cap_touched;
    uint32_t *fresh; /* positions of the symbols merged in the current word */
    size_t cap_fresh;
    int64_t step;
};

static int grow32(void **buf, uint32_t *cap, size_t need, size_t elem) {
    size_t c = *cap;
    if (grow_reserve(buf, &c, need, elem)) return -1;
    *cap = (uint32_t)c;
    return 0;
}

/* An empty open-addressing table (0 = empty slot) of twice *cap slots, initial when there was none. */
static int table_renew(uint32_t **table, size_t *cap, size_t initial) {
    size_t bigger = *cap ? *cap * 2 : initial;
    uint32_t *t = calloc(bigger, sizeof *t);
    if (!t) return -1;
    free(*table);
    *table = t;
    *cap = bigger;
    return 0;
}

/* ------------------------------------------------------------------ tokens */

static const uint8_t *tok_bytes(const bpe_trainer *b, uint32_t id, size_t *len) {
    *len = b->tok_len[id];
    return b->arena + b->tok_off[id];
}

static void tok_table_insert(bpe_trainer *b, uint32_t id);

static int tok_table_rehash(bpe_trainer *b) {
    if (table_renew(&b->tok_table, &b->tok_table_cap, 1024)) return -1;
    for (uint32_t id = b->byte_base; id < b->n_tokens; id++) tok_table_insert(b, id);
    return 0;
}

static void tok_table_insert(bpe_trainer *b, uint32_t id) {
    size_t len;
    const uint8_t *s = tok_bytes(b, id, &len);
    size_t mask = b->tok_table_cap - 1, i = tp_hash_bytes(s, len) & mask;
    while (b->tok_table[i]) i = (i + 1) & mask;
    b->tok_table[i] = id + 1;
}

static int64_t tok_find(const bpe_trainer *b, const uint8_t *s, size_t len) {
    size_t mask = b->tok_table_cap - 1, i = tp_hash_bytes(s, len) & mask;
    for (; b->tok_table[i]; i = (i + 1) & mask) {
        uint32_t id = b->tok_table[i] - 1;
        size_t l2;
        const uint8_t *s2 = tok_bytes(b, id, &l2);
        if (l2 == len && memcmp(s, s2, len) == 0) return id;
    }
    return -1;
}

/* Appends a token whose bytes are already at the end of the arena (arena_len - len). */
static int64_t tok_add_tail(bpe_trainer *b, size_t len) {
    if (b->n_tokens == b->cap_tokens) {
        uint32_t cap = b->cap_tokens * 2;
        size_t *off = realloc(b->tok_off, cap * sizeof(size_t));
        if (off) b->tok_off = off;
        uint32_t *lens = realloc(b->tok_len, cap * sizeof(uint32_t));
        if (lens) b->tok_len = lens;
        if (!off || !lens) return -1;
        b->cap_tokens = cap;
    }
    uint32_t id = b->n_tokens++;
    b->tok_off[id] = b->arena_len - len;
    b->tok_len[id] = (uint32_t)len;
    if ((size_t)(b->n_tokens - b->byte_base) * 2 > b->tok_table_cap) return tok_table_rehash(b) ? -1 : (int64_t)id;
    tok_table_insert(b, id);
    return id;
}

/* The id of left+right: an existing token with those bytes, or a new one. */
static int64_t tok_concat(bpe_trainer *b, uint32_t left, uint32_t right) {
    size_t ll = b->tok_len[left], lr = b->tok_len[right];
    if (grow_reserve(&b->arena, &b->arena_cap, b->arena_len + ll + lr, 1)) return -1;
    memcpy(b->arena + b->arena_len, b->arena + b->tok_off[left], ll);
    memcpy(b->arena + b->arena_len + ll, b->arena + b->tok_off[right], lr);
    int64_t found = tok_find(b, b->arena + b->arena_len, ll + lr);
    if (found >= 0) return found;
    b->arena_len += ll + lr;
    return tok_add_tail(b, ll + lr);
}

/* ------------------------------------------------------------------ pairs */

static uint64_t pair_key(uint32_t l, uint32_t r) { return ((uint64_t)l << 32) | r; }

static void pair_table_place(bpe_trainer *b, uint32_t idx) {
    size_t mask = b->pair_table_cap - 1;
    size_t i = tp_mix64(pair_key(b->pairs[idx].left, b->pairs[idx].right)) & mask;
    while (b->pair_table[i]) i = (i + 1) & mask;
    b->pair_table[i] = idx + 1;
}

static int pair_table_rehash(bpe_trainer *b) {
    if (table_renew(&b->pair_table, &b->pair_table_cap, 4096)) return -1;
    for (uint32_t i = 0; i < b->n_pairs; i++) pair_table_place(b, i);
    return 0;
}

/* Index of pair (l, r), created with count 0 when absent; -1 on OOM. */
static int64_t pair_get(bpe_trainer *b, uint32_t l, uint32_t r) {
    size_t mask = b->pair_table_cap - 1, i = tp_mix64(pair_key(l, r)) & mask;
    for (; b->pair_table[i]; i = (i + 1) & mask) {
        pair_t *p = &b->pairs[b->pair_table[i] - 1];
        if (p->left == l && p->right == r) return b->pair_table[i] - 1;
    }
    if (grow32((void **)&b->pairs, &b->cap_pairs, b->n_pairs + 1, sizeof(pair_t))) return -1;
    uint32_t idx = b->n_pairs++;
    memset(&b->pairs[idx], 0, sizeof(pair_t));
    b->pairs[idx].left = l;
    b->pairs[idx].right = r;
    b->pairs[idx].step_seen = -1;
    if ((size_t)b->n_pairs * 2 > b->pair_table_cap) {
        if (pair_table_rehash(b)) return -1;
    } else {
        b->pair_table[i] = idx + 1;
    }
    return idx;
}

static int pair_add_word(pair_t *p, uint32_t word) {
    if (p->n_words && p->words[p->n_words - 1] == word) return 0;
    if (grow32((void **)&p->words, &p->cap_words, p->n_words + 1, sizeof(uint32_t))) return -1;
    p->words[p->n_words++] = word;
    return 0;
}

/* Records the pair's count before its first change in this step, so increases can be pushed. */
static int pair_touch(bpe_trainer *b, uint32_t idx) {
    pair_t *p = &b->pairs[idx];
    if (p->step_seen == b->step) return 0;
    p->step_seen = b->step;
    p->count_before_step = p->count;
    if (grow_reserve(&b->touched, &b->cap_touched, b->n_touched + 1, sizeof(uint32_t))) return -1;
    b->touched[b->n_touched++] = idx;
    return 0;
}

/* ------------------------------------------------------------------ heap */

static int bytes_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb) {
    int c = memcmp(a, b, la < lb ? la : lb);
    if (c) return c;
    return (la > lb) - (la < lb);
}

/* 1 when x must be merged before y: higher count, then smaller left bytes, then smaller right. */
static int heap_before(const bpe_trainer *b, const heap_entry *x, const heap_entry *y) {
    if (x->count != y->count) return x->count > y->count;
    const pair_t *px = &b->pairs[x->pair], *py = &b->pairs[y->pair];
    size_t l1, l2;
    const uint8_t *s1 = tok_bytes(b, px->left, &l1), *s2 = tok_bytes(b, py->left, &l2);
    int c = bytes_cmp(s1, l1, s2, l2);
    if (c) return c < 0;
    s1 = tok_bytes(b, px->right, &l1);
    s2 = tok_bytes(b, py->right, &l2);
    return bytes_cmp(s1, l1, s2, l2) < 0;
}

static int heap_push(bpe_trainer *b, int64_t count, uint32_t pair) {
    if (grow_reserve(&b->heap, &b->heap_cap, b->heap_len + 1, sizeof(heap_entry))) return -1;
    size_t i = b->heap_len++;
    heap_entry e = {count, pair};
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_before(b, &e, &b->heap[parent])) break;
        b->heap[i] = b->heap[parent];
        i = parent;
    }
    b->heap[i] = e;
    return 0;
}

static heap_entry heap_pop(bpe_trainer *b) {
    heap_entry top = b->heap[0], last = b->heap[--b->heap_len];
    size_t i = 0, n = b->heap_len;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_before(b, &b->heap[c + 1], &b->heap[c])) c++;
        if (!heap_before(b, &b->heap[c], &last)) break;
        b->heap[i] = b->heap[c];
        i = c;
    }
    if (n) b->heap[i] = last;
    return top;
}

/* ------------------------------------------------------------------ build */

void bpe_trainer_free(bpe_trainer *b) {
    if (!b) return;
    for (uint32_t i = 0; i < b->n_pairs; i++) free(b->pairs[i].words);
    free(b->symbols); free(b->sym_start); free(b->sym_len); free(b->word_count); free(b->word_stamp);
    free(b->arena); free(b->tok_off); free(b->tok_len); free(b->tok_table);
    free(b->pairs); free(b->pair_table); free(b->heap); free(b->merges); free(b->touched); free(b->fresh);
    free(b);
}

static int add_word_pairs(bpe_trainer *b, uint32_t w) {
    const uint32_t *s = b->symbols + b->sym_start[w];
    for (uint32_t i = 0; i + 1 < b->sym_len[w]; i++) {
        int64_t idx = pair_get(b, s[i], s[i + 1]);
        if (idx < 0 || pair_add_word(&b->pairs[idx], w)) return -1;
        b->pairs[idx].count += b->word_count[w];
    }
    return 0;
}

bpe_trainer *bpe_trainer_new(const uint8_t *word_bytes, const int64_t *word_offsets, const int64_t *word_counts,
                   size_t n_words, uint32_t byte_base) {
    bpe_trainer *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->byte_base = byte_base;
    b->n_words = n_words;
    size_t n_sym = (size_t)word_offsets[n_words];
    b->symbols = malloc((n_sym ? n_sym : 1) * sizeof(uint32_t));
    b->sym_start = malloc((n_words + 1) * sizeof(int64_t));
    b->sym_len = malloc((n_words + 1) * sizeof(uint32_t));
    b->word_count = malloc((n_words + 1) * sizeof(int64_t));
    b->word_stamp = malloc((n_words + 1) * sizeof(int64_t));
    b->tok_len = calloc(byte_base + 256, sizeof(uint32_t));
    b->tok_off = calloc(byte_base + 256, sizeof(size_t));
    b->arena = malloc(256);
    if (!b->symbols || !b->sym_start || !b->sym_len || !b->word_count || !b->word_stamp ||
        !b->tok_len || !b->tok_off || !b->arena)
        goto fail;
    b->cap_tokens = byte_base + 256;
    b->arena_cap = 256;
    b->n_tokens = byte_base;
    for (int v = 0; v < 256; v++) {
        b->arena[b->arena_len++] = (uint8_t)v;
        if (tok_add_tail(b, 1) < 0) goto fail;
    }
    if (pair_table_rehash(b)) goto fail;
    for (size_t w = 0; w < n_words; w++) {
        b->sym_start[w] = word_offsets[w];
        b->sym_len[w] = (uint32_t)(word_offsets[w + 1] - word_offsets[w]);
        b->word_count[w] = word_counts[w];
        b->word_stamp[w] = -1;
        for (int64_t i = word_offsets[w]; i < word_offsets[w + 1]; i++) b->symbols[i] = byte_base + word_bytes[i];
        if (add_word_pairs(b, (uint32_t)w)) goto fail;
    }
    for (uint32_t i = 0; i < b->n_pairs; i++)
        if (b->pairs[i].count > 0 && heap_push(b, b->pairs[i].count, i)) goto fail;
    return b;
fail:
    bpe_trainer_free(b);
    return NULL;
}

/* ------------------------------------------------------------------ merge loop */

static int pair_change(bpe_trainer *b, uint32_t l, uint32_t r, int64_t delta, int64_t word) {
    int64_t idx = pair_get(b, l, r);
    if (idx < 0 || pair_touch(b, (uint32_t)idx)) return -1;
    b->pairs[idx].count += delta;
    return word >= 0 ? pair_add_word(&b->pairs[idx], (uint32_t)word) : 0;
}

/* Rewrites word w with every non-overlapping (left, right) -> merged, left to right. Only pairs next
 * to a merge change: the old ones around each match lose the word's weight, the new ones around
 * each merged symbol gain it (and index the word, since they hold the new symbol). */
static int merge_word(bpe_trainer *b, uint32_t w, uint32_t left, uint32_t right, uint32_t merged) {
    uint32_t *s = b->symbols + b->sym_start[w];
    uint32_t n = b->sym_len[w];
    int64_t weight = b->word_count[w];
    int64_t last = -1; /* start of the last pair already counted */
    uint32_t out = 0, k = 0, found = 0;
    while (k < n) {
        if (k + 1 < n && s[k] == left && s[k + 1] == right) {
            for (int64_t p = (int64_t)k - 1; p <= (int64_t)k + 1; p++) {
                if (p <= last || p < 0 || p + 1 >= n) continue;
                if (pair_change(b, s[p], s[p + 1], -weight, -1)) return -1;
                last = p;
            }
            found = 1;
            k += 2;
        } else {
            k++;
        }
    }
    if (!found) return 0; /* stale index entry: the word no longer holds the pair */
    if (grow_reserve(&b->fresh, &b->cap_fresh, n, sizeof(uint32_t))) return -1;
    size_t n_fresh = 0;
    for (k = 0; k < n; out++) {
        if (k + 1 < n && s[k] == left && s[k + 1] == right) {
            b->fresh[n_fresh++] = out; /* `merged` may already occur in the word: track the new ones */
            s[out] = merged;
            k += 2;
        } else {
            s[out] = s[k++];
        }
    }
    b->sym_len[w] = n = out;
    last = -1;
    for (size_t f = 0; f < n_fresh; f++) {
        uint32_t j = b->fresh[f];
        for (int64_t p = (int64_t)j - 1; p <= (int64_t)j; p++) {
            if (p <= last || p < 0 || p + 1 >= n) continue;
            if (pair_change(b, s[p], s[p + 1], weight, w)) return -1;
            last = p;
        }
    }
    return 0;
}

/* Pops the best pair whose heap entry is current; -1 when none reaches min_pair_freq. */
static int64_t pop_best(bpe_trainer *b, int64_t min_pair_freq, int *oom) {
    while (b->heap_len) {
        heap_entry e = heap_pop(b);
        int64_t actual = b->pairs[e.pair].count;
        if (actual == e.count) return e.count >= min_pair_freq && e.count > 0 ? (int64_t)e.pair : -1;
        /* lower now: re-queue; higher: a fresher entry was pushed when it grew */
        if (actual < e.count && actual > 0 && heap_push(b, actual, e.pair)) {
            *oom = 1;
            return -1;
        }
    }
    return -1;
}

static int merge_step(bpe_trainer *b, uint32_t pair_idx) {
    uint32_t left = b->pairs[pair_idx].left, right = b->pairs[pair_idx].right;
    int64_t merged = tok_concat(b, left, right);
    if (merged < 0) return -1;
    if (grow_reserve(&b->merges, &b->cap_merges, 3 * (b->n_merges + 1), sizeof(uint32_t))) return -1;
    uint32_t *m = b->merges + 3 * b->n_merges++;
    m[0] = left, m[1] = right, m[2] = (uint32_t)merged;

    b->step++;
    b->n_touched = 0;
    /* the pair's word list cannot grow during its own step (new pairs hold the longer merged token) */
    pair_t *p = &b->pairs[pair_idx];
    uint32_t *words = p->words, n_words = p->n_words;
    for (uint32_t k = 0; k < n_words; k++) {
        uint32_t w = words[k];
        if (b->word_stamp[w] == b->step) continue;
        b->word_stamp[w] = b->step;
        if (merge_word(b, w, left, right, (uint32_t)merged)) return -1;
    }
    p = &b->pairs[pair_idx];
    free(p->words);
    p->words = NULL;
    p->n_words = p->cap_words = 0;
    for (size_t k = 0; k < b->n_touched; k++) {
        pair_t *t = &b->pairs[b->touched[k]];
        if (t->count > t->count_before_step && heap_push(b, t->count, b->touched[k])) return -1;
    }
    return 0;
}

int64_t bpe_trainer_run(bpe_trainer *b, uint32_t vocab_size, int64_t min_pair_freq, int64_t max_steps) {
    int64_t done = 0;
    while (done < max_steps && b->n_tokens < vocab_size) {
        int oom = 0;
        int64_t best = pop_best(b, min_pair_freq, &oom);
        if (oom) return -1;
        if (best < 0) break;
        if (merge_step(b, (uint32_t)best)) return -1;
        done++;
    }
    return done;
}

size_t bpe_trainer_n_merges(const bpe_trainer *b) { return b->n_merges; }

void bpe_trainer_merge(const bpe_trainer *b, size_t i, uint32_t *left, uint32_t *right, uint32_t *result) {
    *left = b->merges[3 * i];
    *right = b->merges[3 * i + 1];
    *result = b->merges[3 * i + 2];
}

uint32_t bpe_trainer_vocab_size(const bpe_trainer *b) { return b->n_tokens; }

const uint8_t *bpe_trainer_token(const bpe_trainer *b, uint32_t id, size_t *len) { return tok_bytes(b, id, len); }
