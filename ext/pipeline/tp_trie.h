/* A byte trie, shared by WordPiece (longest match from a position) and Unigram (every vocabulary prefix
 * from each char boundary): either search is one walk, not one hash per candidate end.
 *
 * Built in an open-addressing table of edges (parent node, byte) -> child, then laid out as a double
 * array (tp_trie_finish): node p's child on byte b is unit base(p) + b when that unit's check is p. A
 * step is then one load near the previous one instead of a hash and a probe, and siblings (placed
 * breadth first) share cache lines, which is what a walk's cost is made of.
 *
 * Node 0 is a root and never a child, so child 0 means "no edge"; a trie may keep more roots (WordPiece's
 * continuation root) below `roots`, which keep their numbers in the double array. */
#ifndef TP_TRIE_H
#define TP_TRIE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_hash.h"

#define TP_TRIE_NO_TOKEN UINT32_MAX
#define TP_TRIE_FREE UINT32_MAX /* check of a unit no edge leads to */

typedef struct {
    uint64_t key; /* parent node << 8 | byte, + 1 (0 = empty) */
    uint32_t child;
} tp_trie_edge;

typedef struct {
    uint32_t base;  /* children at base + byte */
    uint32_t check; /* the parent of the node here, or TP_TRIE_FREE */
    uint32_t token; /* the id ending here, or TP_TRIE_NO_TOKEN */
} tp_trie_unit;

typedef struct {
    tp_trie_unit *units; /* the double array (after tp_trie_finish): every base + 255 is inside */
    /* while building: */
    tp_trie_edge *edges;
    size_t edge_mask;
    uint32_t *token_of; /* per node: the id ending there, or TP_TRIE_NO_TOKEN */
    uint32_t n_nodes, roots;
} tp_trie;

static inline size_t tp_trie_table_size(size_t edges) {
    size_t size = 16;
    while (size < 2 * edges) size *= 2;
    return size;
}

/* Room for max_nodes nodes (the first `roots` of them roots); -1 on OOM (tp_trie_free cleans up). */
static inline int tp_trie_init(tp_trie *t, size_t max_nodes, uint32_t roots) {
    memset(t, 0, sizeof(*t));
    size_t size = tp_trie_table_size(max_nodes);
    t->edges = calloc(size, sizeof(tp_trie_edge));
    t->token_of = malloc(max_nodes * sizeof(uint32_t));
    if (!t->edges || !t->token_of) return -1;
    t->edge_mask = size - 1;
    for (uint32_t r = 0; r < roots; r++) t->token_of[r] = TP_TRIE_NO_TOKEN;
    t->n_nodes = t->roots = roots;
    return 0;
}

/* While building: the child of `node` on `byte`, or 0. */
static inline uint32_t tp_trie_edge_child(const tp_trie *t, uint32_t node, uint8_t byte) {
    uint64_t key = (((uint64_t)node << 8) | byte) + 1;
    for (size_t i = tp_mix64(key) & t->edge_mask;; i = (i + 1) & t->edge_mask) {
        if (t->edges[i].key == key) return t->edges[i].child;
        if (!t->edges[i].key) return 0;
    }
}

/* While building: the node bytes[0, len) leads to from `node`, made as needed. */
static inline uint32_t tp_trie_insert(tp_trie *t, uint32_t node, const uint8_t *bytes, size_t len) {
    for (size_t b = 0; b < len; b++) {
        uint64_t key = (((uint64_t)node << 8) | bytes[b]) + 1;
        size_t i = tp_mix64(key) & t->edge_mask;
        while (t->edges[i].key && t->edges[i].key != key) i = (i + 1) & t->edge_mask;
        if (!t->edges[i].key) {
            t->edges[i].key = key;
            t->edges[i].child = t->n_nodes;
            t->token_of[t->n_nodes++] = TP_TRIE_NO_TOKEN;
        }
        node = t->edges[i].child;
    }
    return node;
}

/* units grown (entries past the old end free) to hold index `need`; -1 on OOM. */
static inline int tp_trie_units_reserve(tp_trie_unit **units, size_t *cap, size_t need) {
    if (need < *cap) return 0;
    size_t grown = *cap ? *cap : 1024;
    while (grown <= need) grown *= 2;
    tp_trie_unit *more = realloc(*units, grown * sizeof(tp_trie_unit));
    if (!more) return -1;
    for (size_t k = *cap; k < grown; k++) more[k] = (tp_trie_unit){0, TP_TRIE_FREE, TP_TRIE_NO_TOKEN};
    *units = more;
    *cap = grown;
    return 0;
}

/* Once every entry is in: the double array, the build tables freed; -1 on OOM (tp_trie_free cleans up).
 * Each node's children go at the first base where all their units are free, searched from the first
 * free unit on, which is moved past stretches that are almost full (as Darts does) so the search
 * stays short on large vocabularies. */
static inline int tp_trie_finish(tp_trie *t) {
    const uint32_t n = t->n_nodes;
    uint32_t *first = calloc((size_t)n + 1, sizeof(uint32_t)); /* children of node v: kids[first[v], first[v+1]) */
    uint64_t *kids = malloc(((size_t)n ? n : 1) * sizeof(uint64_t)); /* byte << 32 | child */
    uint32_t *place = malloc(((size_t)n ? n : 1) * sizeof(uint32_t)); /* per node: its unit */
    uint32_t *queue = malloc(((size_t)n ? n : 1) * sizeof(uint32_t));
    tp_trie_unit *units = NULL;
    size_t cap = 0;
    int rc = -1;
    if (!first || !kids || !place || !queue) goto done;
    for (size_t i = 0; i <= t->edge_mask; i++)
        if (t->edges[i].key) first[((t->edges[i].key - 1) >> 8) + 1]++;
    for (uint32_t v = 1; v <= n; v++) first[v] += first[v - 1];
    for (size_t i = 0; i <= t->edge_mask; i++) { /* first[v] moves to v's end, which is v + 1's start */
        if (!t->edges[i].key) continue;
        uint64_t parent = (t->edges[i].key - 1) >> 8, byte = (t->edges[i].key - 1) & 0xFF;
        kids[first[parent]++] = byte << 32 | t->edges[i].child;
    }
    for (uint32_t v = n; v > 0; v--) first[v] = first[v - 1];
    first[0] = 0;
    for (uint32_t v = 0; v < n; v++) /* each list by byte (a few entries: insertion sort) */
        for (uint32_t a = first[v] + 1; a < first[v + 1]; a++) {
            uint64_t x = kids[a];
            uint32_t b = a;
            for (; b > first[v] && kids[b - 1] > x; b--) kids[b] = kids[b - 1];
            kids[b] = x;
        }
    if (tp_trie_units_reserve(&units, &cap, (size_t)t->roots + 256)) goto done;
    size_t head = 0, tail = 0, next_check = t->roots, top = (size_t)t->roots + 256;
    for (uint32_t r = 0; r < t->roots; r++) {
        units[r] = (tp_trie_unit){0, TP_TRIE_FREE - 1, t->token_of[r]}; /* taken, and no node's child */
        place[r] = r;
        queue[tail++] = r;
    }
    while (head < tail) {
        uint32_t v = queue[head++], lo = first[v], hi = first[v + 1];
        if (lo == hi) continue;
        size_t c0 = (size_t)(kids[lo] >> 32), pos = (next_check > c0 + 1 ? next_check : c0 + 1) - 1, busy = 0;
        int first_free = 1;
        size_t base;
        for (;;) {
            pos++;
            if (tp_trie_units_reserve(&units, &cap, pos + 256)) goto done;
            if (units[pos].check != TP_TRIE_FREE) { busy++; continue; }
            if (first_free) { next_check = pos; first_free = 0; }
            base = pos - c0;
            uint32_t k = lo + 1;
            while (k < hi && units[base + (kids[k] >> 32)].check == TP_TRIE_FREE) k++;
            if (k == hi) break;
        }
        if (busy * 20 >= (pos - next_check + 1) * 19) next_check = pos; /* 95% full: search past it */
        units[place[v]].base = (uint32_t)base;
        for (uint32_t k = lo; k < hi; k++) {
            uint32_t child = (uint32_t)kids[k], at = (uint32_t)(base + (kids[k] >> 32));
            units[at] = (tp_trie_unit){0, place[v], t->token_of[child]};
            place[child] = at;
            queue[tail++] = child;
            if (at + 256 > top) top = at + 256;
        }
    }
    if (top >= UINT32_MAX - 256) goto done;
    tp_trie_unit *fit = realloc(units, top * sizeof(tp_trie_unit));
    t->units = fit ? fit : units;
    units = NULL;
    free(t->edges); free(t->token_of);
    t->edges = NULL; t->token_of = NULL;
    rc = 0;
done:
    free(units); free(first); free(kids); free(place); free(queue);
    return rc;
}

/* The child of `node` on `byte`, or 0 (after tp_trie_finish). */
static inline uint32_t tp_trie_child(const tp_trie *t, uint32_t node, uint8_t byte) {
    uint32_t at = t->units[node].base + byte;
    return t->units[at].check == node ? at : 0;
}

/* The id ending at `node`, or TP_TRIE_NO_TOKEN (after tp_trie_finish). */
static inline uint32_t tp_trie_token(const tp_trie *t, uint32_t node) { return t->units[node].token; }

static inline void tp_trie_free(tp_trie *t) {
    free(t->units);
    free(t->edges);
    free(t->token_of);
    memset(t, 0, sizeof(*t));
}

#endif
