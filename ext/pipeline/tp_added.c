/* A byte trie in one open-addressing table keyed by (node, byte): compact for tens of thousands of
 * added tokens, and a first-byte bitmap lets the scan skip text that cannot start a token. */
#include "tp_added.h"
#include "tp_engine.h"

#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tagtok.h"
#include "tagtok_tables.h"
#include "tp_hash.h"

#define NONE UINT32_MAX
#define FEW_FIRSTS 4 /* up to this many distinct first bytes, the scan compares sixteen bytes at a time */

typedef struct {
    uint64_t *keys; uint32_t *child; uint64_t mask; /* (node << 8 | byte) -> child node */
    uint32_t *terminal;                              /* node -> token index or NONE */
    uint32_t n_nodes;
    uint8_t first[256];   /* bytes a token starts with */
    int n_first;          /* how many; with one, memchr finds the candidates */
    uint8_t firsts[FEW_FIRSTS]; /* the first n_first of them */
    int empty;
} trie;

struct tp_added {
    trie passes[2];
    uint32_t *ids;
    uint8_t *skip, *lstrip, *rstrip, *single_word;
    int needs_tags; /* some token strips whitespace or is single_word */
};

/* Per-call view of the text: its char tags, when some token strips whitespace or is single_word. */
typedef struct {
    const uint8_t *text;
    uint8_t *tags;
} view;

static int is_space_at(const view *v, size_t b) {
    uint8_t tag = v->tags[b];
    return tag != TT_TAG_CONT && (tp_engine->atom_props[tag] & TT_PROP_WS);
}

/* The char starting at b (or, for ends_word, ending just before b) is a word char. */
static int starts_word(const view *v, size_t b) {
    return (tp_engine->atom_props[v->tags[b]] & TT_PROP_RW) != 0;
}

static int ends_word(const view *v, size_t b) {
    while (v->tags[b - 1] == TT_TAG_CONT) b--;
    return starts_word(v, b - 1);
}

/* Start of the run of whitespace chars ending at `at`, not before `floor`. */
static size_t spaces_before(const view *v, size_t floor, size_t at) {
    while (at > floor) {
        size_t prev = at - 1;
        while (prev > floor && v->tags[prev] == TT_TAG_CONT) prev--;
        if (!is_space_at(v, prev)) break;
        at = prev;
    }
    return at;
}

/* End of the run of whitespace chars starting at `at`, not past `limit`. */
static size_t spaces_after(const view *v, size_t at, size_t limit) {
    while (at < limit && is_space_at(v, at)) {
        at++;
        while (at < limit && v->tags[at] == TT_TAG_CONT) at++;
    }
    return at;
}

static uint32_t trie_child(const trie *t, uint32_t node, uint8_t byte) {
    uint64_t key = ((uint64_t)node << 8) | byte;
    for (uint64_t slot = tp_mix64(key) & t->mask;; slot = (slot + 1) & t->mask) {
        if (t->child[slot] == NONE) return NONE;
        if (t->keys[slot] == key) return t->child[slot];
    }
}

static int trie_build(trie *t, const uint8_t *const *contents, const uint32_t *lens, const uint8_t *pass,
                      size_t n, int which) {
    size_t total = 1;
    for (size_t i = 0; i < n; i++) if (pass[i] == which) total += lens[i];
    uint64_t size = 16;
    while (size < 2 * total) size <<= 1;
    t->keys = malloc(size * 8); t->child = malloc(size * 4); t->terminal = malloc(total * 4);
    if (!t->keys || !t->child || !t->terminal) return -1;
    memset(t->child, 0xFF, size * 4);
    memset(t->terminal, 0xFF, total * 4);
    t->mask = size - 1;
    t->n_nodes = 1;
    t->empty = 1;
    for (size_t i = 0; i < n; i++) {
        if (pass[i] != which || lens[i] == 0) continue;
        t->empty = 0;
        uint8_t b0 = contents[i][0];
        if (!t->first[b0]) {
            if (t->n_first < FEW_FIRSTS) t->firsts[t->n_first] = b0;
            t->first[b0] = 1;
            t->n_first++;
        }
        uint32_t node = 0;
        for (uint32_t k = 0; k < lens[i]; k++) {
            uint32_t next = trie_child(t, node, contents[i][k]);
            if (next == NONE) {
                uint64_t key = ((uint64_t)node << 8) | contents[i][k];
                uint64_t slot = tp_mix64(key) & t->mask;
                while (t->child[slot] != NONE) slot = (slot + 1) & t->mask;
                t->keys[slot] = key;
                t->child[slot] = next = t->n_nodes++;
            }
            node = next;
        }
        if (t->terminal[node] == NONE) t->terminal[node] = (uint32_t)i;
    }
    return 0;
}

tp_added *tp_added_new(const uint8_t *const *contents, const uint32_t *lens, const uint32_t *ids,
                       const uint8_t *pass, const uint8_t *skip, const uint8_t *lstrip, const uint8_t *rstrip,
                       const uint8_t *single_word, size_t n) {
    tp_added *added = calloc(1, sizeof(*added));
    if (!added) return NULL;
    added->ids = malloc((n ? n : 1) * 4);
    added->skip = malloc(n ? n : 1);
    added->lstrip = malloc(n ? n : 1);
    added->rstrip = malloc(n ? n : 1);
    added->single_word = malloc(n ? n : 1);
    if (!added->ids || !added->skip || !added->lstrip || !added->rstrip || !added->single_word) goto fail;
    memcpy(added->ids, ids, n * 4);
    memcpy(added->skip, skip, n);
    memcpy(added->lstrip, lstrip, n);
    memcpy(added->rstrip, rstrip, n);
    memcpy(added->single_word, single_word, n);
    for (size_t i = 0; i < n; i++) added->needs_tags |= lstrip[i] | rstrip[i] | single_word[i];
    for (int which = 0; which < 2; which++)
        if (trie_build(&added->passes[which], contents, lens, pass, n, which)) goto fail;
    return added;
fail:
    tp_added_free(added);
    return NULL;
}

void tp_added_free(tp_added *added) {
    if (!added) return;
    for (int i = 0; i < 2; i++) {
        free(added->passes[i].keys); free(added->passes[i].child); free(added->passes[i].terminal);
    }
    free(added->ids); free(added->skip); free(added->lstrip); free(added->rstrip); free(added->single_word);
    free(added);
}

/* The first position from `at` where a token may start (`end` when none). */
static size_t next_candidate(const trie *t, const uint8_t *text, size_t at, size_t end) {
    if (t->n_first == 1) {
        const uint8_t *hit = at < end ? memchr(text + at, t->firsts[0], end - at) : NULL;
        return hit ? (size_t)(hit - text) : end;
    }
#if defined(__SSE2__)
    if (t->n_first <= FEW_FIRSTS) { /* unused lanes repeat the first byte */
        __m128i want[FEW_FIRSTS];
        for (int k = 0; k < FEW_FIRSTS; k++) want[k] = _mm_set1_epi8((char)t->firsts[k < t->n_first ? k : 0]);
        for (; at + 16 <= end; at += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(text + at));
            __m128i hit = _mm_cmpeq_epi8(x, want[0]);
            for (int k = 1; k < FEW_FIRSTS; k++) hit = _mm_or_si128(hit, _mm_cmpeq_epi8(x, want[k]));
            uint32_t bits = (uint32_t)_mm_movemask_epi8(hit);
            if (bits) return at + (size_t)__builtin_ctz(bits);
        }
    }
#endif
    while (at < end && !t->first[text[at]]) at++;
    return at;
}

/* Longest token starting at `at`, as (token index, length); index NONE when none. */
static uint32_t longest_at(const trie *t, const uint8_t *text, size_t len, size_t at, size_t *match_len) {
    uint32_t node = 0, found = NONE;
    for (size_t k = at; k < len; k++) {
        node = trie_child(t, node, text[k]);
        if (node == NONE) break;
        if (t->terminal[node] != NONE) { found = t->terminal[node]; *match_len = k + 1 - at; }
    }
    return found;
}

static int push(tp_segment **segments, size_t *cap, size_t n, uint32_t start, uint32_t end, uint32_t id,
                uint32_t strips) {
    if (n == *cap) {
        size_t grown = *cap ? *cap * 2 : 64;
        tp_segment *bigger = realloc(*segments, grown * sizeof(tp_segment));
        if (!bigger) return -1;
        *segments = bigger; *cap = grown;
    }
    (*segments)[n] = (tp_segment){start, end, id, strips};
    return 0;
}

/* Split [start, end) with one pass's trie, appending to the segment list: HF's find_matches, where
 * the stretch is the whole "sentence" (lstrip never reaches before it, rstrip never past it). A
 * discarded match (skipped special, single_word inside a word) still consumes its text. A token that
 * starts with whitespace can match inside the previous token's rstrip: its segment then overlaps that
 * one, as stock's splits do. */
static long split_range(const tp_added *added, const trie *t, const view *v, size_t start, size_t end,
                        tp_segment **segments, size_t *cap, long n) {
    const uint8_t *text = v->text;
    size_t gap = start;
    for (size_t at = next_candidate(t, text, start, end); at < end; at = next_candidate(t, text, at, end)) {
        size_t match_len = 0;
        uint32_t token = longest_at(t, text, end, at, &match_len);
        if (token == NONE) { at++; continue; }
        size_t next = at + match_len; /* matching resumes after the match itself, as aho-corasick's */
        if (added->skip[token]) { at = next; continue; }
        if (added->single_word[token]
            && ((at > start && ends_word(v, at)) || (next < end && starts_word(v, next)))) { at = next; continue; }
        size_t from = at, to = next;
        if (added->lstrip[token]) {
            from = spaces_before(v, start, at);
            if (from < gap) from = gap;
        }
        if (added->rstrip[token]) to = spaces_after(v, to, end);
        if (gap < from && push(segments, cap, n++, (uint32_t)gap, (uint32_t)from, TP_ADDED_TEXT, 0)) return -1;
        uint32_t strips = added->lstrip[token] || added->rstrip[token];
        if (push(segments, cap, n++, (uint32_t)from, (uint32_t)to, added->ids[token], strips)) return -1;
        gap = to;
        at = next; /* as stock: a match may start inside the previous rstrip (the splits then overlap) */
    }
    if (gap < end && push(segments, cap, n++, (uint32_t)gap, (uint32_t)end, TP_ADDED_TEXT, 0)) return -1;
    return n;
}

long tp_added_split(const tp_added *added, int pass, const uint8_t *text, size_t len, tp_segment **segments,
                    size_t *cap) {
    if (!added || added->passes[pass].empty) {
        if (len == 0) return 0;
        return push(segments, cap, 0, 0, (uint32_t)len, TP_ADDED_TEXT, 0) ? -1 : 1;
    }
    view v = {text, NULL};
    if (added->needs_tags) {
        v.tags = malloc(len ? len : 1);
        if (!v.tags) return -1;
        tp_engine->classify(TT_ALPHABET_ATOMS, text, len, v.tags, NULL);
    }
    long n = split_range(added, &added->passes[pass], &v, 0, len, segments, cap, 0);
    free(v.tags);
    return n;
}

/* The byte-level alphabet renders the space byte as U+0120 'Ġ' (hf_tagtok.pre_tokenizers.byte_chars). */
static int is_trimmed_space(const view *v, size_t b, size_t len) {
    return is_space_at(v, b) || (b + 1 < len && v->text[b] == 0xC4 && v->text[b + 1] == 0xA0);
}

int tp_added_space_runs(const uint8_t *text, size_t len, uint32_t *lead, uint32_t *trail) {
    view v = {text, malloc(len ? len : 1)};
    if (!v.tags) return -1;
    tp_engine->classify(TT_ALPHABET_ATOMS, text, len, v.tags, NULL);
    uint32_t leading = 0, trailing = 0;
    int in_lead = 1;
    for (size_t b = 0; b < len; b++) {
        if (v.tags[b] == TT_TAG_CONT) continue;
        if (is_trimmed_space(&v, b, len)) {
            trailing++;
            leading += in_lead;
        } else {
            trailing = 0;
            in_lead = 0;
        }
    }
    free(v.tags);
    *lead = leading;
    *trail = trailing;
    return 0;
}
