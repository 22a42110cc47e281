/* A byte trie in one open-addressing table of edges (parent node, byte) -> child, shared by WordPiece
 * (longest match from a position) and Unigram (every vocabulary prefix from each char boundary): either
 * search is one walk, not one hash per candidate end.
 *
 * Node 0 is a root and never a child, so child 0 means "no edge"; a trie may keep more roots (WordPiece's
 * continuation root) below `roots`. The key (parent << 8 | byte) + 1 is 64 bits wide, so the node count is
 * not bounded by the key; the table is built for the worst case (every byte a node), then shrunk to the
 * edges it has, so more of a walk stays in cache. */
#ifndef TP_TRIE_H
#define TP_TRIE_H

#include <stdint.h>
#include <stdlib.h>

#include "tp_hash.h"

#define TP_TRIE_NO_TOKEN UINT32_MAX

typedef struct {
    uint64_t key; /* parent node << 8 | byte, + 1 (0 = empty) */
    uint32_t child;
} tp_trie_edge;

typedef struct {
    tp_trie_edge *edges;
    size_t edge_mask;
    uint32_t *token_of; /* per node: the id ending there, or TP_TRIE_NO_TOKEN */
    uint32_t n_nodes;
} tp_trie;

static inline size_t tp_trie_table_size(size_t edges) {
    size_t size = 16;
    while (size < 2 * edges) size *= 2;
    return size;
}

/* Room for max_nodes nodes (the first `roots` of them roots); -1 on OOM (tp_trie_free cleans up). */
static inline int tp_trie_init(tp_trie *t, size_t max_nodes, uint32_t roots) {
    size_t size = tp_trie_table_size(max_nodes);
    t->edges = calloc(size, sizeof(tp_trie_edge));
    t->token_of = malloc(max_nodes * sizeof(uint32_t));
    if (!t->edges || !t->token_of) return -1;
    t->edge_mask = size - 1;
    for (uint32_t r = 0; r < roots; r++) t->token_of[r] = TP_TRIE_NO_TOKEN;
    t->n_nodes = roots;
    return 0;
}

static inline uint32_t tp_trie_child(const tp_trie *t, uint32_t node, uint8_t byte) {
    uint64_t key = (((uint64_t)node << 8) | byte) + 1;
    for (size_t i = tp_mix64(key) & t->edge_mask;; i = (i + 1) & t->edge_mask) {
        if (t->edges[i].key == key) return t->edges[i].child;
        if (!t->edges[i].key) return 0;
    }
}

/* The node bytes[0, len) leads to from `node`, made as needed. */
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

/* Once every entry is in: the tables sized for the nodes made; -1 on OOM (the trie stays usable). */
static inline int tp_trie_shrink(tp_trie *t) {
    uint32_t *token_of = realloc(t->token_of, (size_t)t->n_nodes * sizeof(uint32_t));
    if (token_of) t->token_of = token_of;
    size_t old_size = t->edge_mask + 1, size = tp_trie_table_size(t->n_nodes);
    tp_trie_edge *edges = calloc(size, sizeof(tp_trie_edge)), *old = t->edges;
    if (!edges) return -1;
    for (size_t k = 0; k < old_size; k++) {
        if (!old[k].key) continue;
        size_t i = tp_mix64(old[k].key) & (size - 1);
        while (edges[i].key) i = (i + 1) & (size - 1);
        edges[i] = old[k];
    }
    free(old);
    t->edges = edges;
    t->edge_mask = size - 1;
    return 0;
}

static inline void tp_trie_free(tp_trie *t) {
    free(t->edges);
    free(t->token_of);
    t->edges = NULL;
    t->token_of = NULL;
}

#endif
