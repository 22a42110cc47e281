/* BPE over raw bytes: vocab and merge tables are open-addressing hashes built once. Encoded words go to
 * the model's word cache, which the pool threads of a call share (tp_word_cache.h); everything else a
 * call changes is in its thread's scratch. */
#include "tp_bpe.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "tp_engine.h"
#include "tp_hash.h"
#include "tp_huge.h"
#include "tp_word_cache.h"
#include "utf8.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define NO_ID UINT32_MAX

typedef struct {
    uint64_t head;    /* tp_word_key of the token's bytes */
    uint32_t id;      /* NO_ID: empty slot */
    uint32_t len;
} vocab_slot;

/* A merge step packs a merge's rank (high half: steps order as ranks do) and the id it makes; NO_STEP: the
 * pair does not merge. A pair packs two ids (TP_BPE_MAX_TOKENS). The table and the pair cache hold both, so
 * applying a merge needs no second table: on a cold pass nearly every new line is a trip to memory. */
typedef uint64_t merge_step;
#define NO_STEP UINT64_MAX
#define ID_BITS 21

static merge_step step_of(uint32_t rank, uint32_t merged) { return (uint64_t)rank << 32 | merged; }
static uint32_t step_merged(merge_step step) { return (uint32_t)step; }

typedef struct {
    uint64_t pair; /* EMPTY_PAIR: unused */
    merge_step step;
} merge_slot;
#define EMPTY_PAIR UINT64_MAX

struct tp_bpe {
    uint8_t *bytes;      /* all token byte strings, concatenated */
    uint64_t *offset;    /* id -> start in bytes; offset[id+1]-offset[id] = length */
    uint8_t *has_bytes;  /* id -> 0 when the id has no byte string */
    uint32_t n_tokens;
    vocab_slot *vocab_slots; uint64_t vocab_mask;   /* bytes -> id, one cache line per probe */
    merge_slot *merges; uint64_t merge_mask; /* (left, right) -> step */
    uint64_t *pair_filter; unsigned pair_filter_shift; /* see may_merge */
    uint8_t *sides; /* char level: id -> IS_LEFT | IS_RIGHT, the id is the left (right) of some merge (see
                     * can_pair); else NULL */
    uint32_t byte_id[4][256]; /* [symbol_kind(first, last)][byte]: the byte's initial symbol */
    tp_bpe_options opt;
    int byte_gaps; /* byte level: some byte has no initial symbol in some position (see gap_symbols) */
    uint32_t byte_tokens[256];
    uint8_t prefix[TP_BPE_AFFIX_MAX], suffix[TP_BPE_AFFIX_MAX];
    uint8_t cut[4]; size_t cut_len; /* the char long words are cut before (see choose_cut); 0: never cut */
    uint32_t cut_four, cut_mask; /* the cut char's bytes as a little-endian word, and the mask of its bytes */
    uint32_t *bmp_id; /* char level without affixes: a BMP char's initial symbol (NO_ID: none), else NULL */
    uint32_t (*astral_id)[2]; uint32_t astral_mask; /* with bmp_id: (code point, id) of the vocab's one-char tokens
                                                     * beyond the BMP, open addressing; code point 0: empty */
    tp_word_cache *words; /* the pool threads' shared word cache */
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

typedef struct {
    merge_step step;
    uint32_t pos;
    uint32_t left, right; /* the pair's ids when pushed: still there means still valid */
} heap_entry;

/* A word that needs merging: its symbols sit at [base, base + n) of the scratch arrays. */
typedef struct {
    uint32_t word, base, n;
} merging;

struct tp_bpe_scratch {
    /* Symbols of every word of one call: word j starts at first[j] and has room for its length in
     * bytes (no word has more symbols than bytes). */
    uint32_t *ids, *starts, *ends;
    size_t cap;
    merge_slot *pairs; /* PAIR_CACHE recent lookups */
    uint32_t *first, *count, *missed;
    uint32_t *twin_of; /* a missed word: the earlier word of the call it repeats (itself if none); NO_ID: cached */
    uint64_t *hash;
    merging *todo;
    size_t words_cap;
    uint32_t *next, *prev; /* merge_long's list and heap, for the longest word of the call */
    heap_entry *heap;
    size_t long_cap;
    uint32_t *twins; size_t twins_cap; /* todo index by word hash, to find a word merged earlier in the call */
    /* Cut words: the call's pieces (a word not cut is one piece), and each word's tokens by first/count. */
    const uint8_t **pieces; size_t *piece_lens; uint32_t *piece_shifts; uint32_t *word_pieces; size_t pieces_cap;
    uint32_t *word_first, *word_count; size_t cut_words_cap;
    tp_word_caches caches;
};

static uint64_t merge_hash(uint64_t key) { return tp_mix64(key); }

/* With the length, most vocab probes are settled by one compare of the word's first 8 bytes (tp_word_key). */
static uint32_t vocab_find(const tp_bpe *bpe, const uint8_t *word, size_t len, uint64_t hash) {
    uint64_t head = tp_word_key(word, len);
    for (uint64_t i = hash & bpe->vocab_mask;; i = (i + 1) & bpe->vocab_mask) {
        const vocab_slot *slot = &bpe->vocab_slots[i];
        if (slot->id == NO_ID) return NO_ID;
        if (slot->len == len && slot->head == head &&
            (len <= 8 || tp_same_bytes(bpe->bytes + bpe->offset[slot->id] + 8, word + 8, len - 8))) return slot->id;
    }
}

static uint64_t pair_of(uint32_t left, uint32_t right) { return (uint64_t)left << ID_BITS | right; }

/* Most pairs a word's merging asks about have no merge (about two lookups in three on a cold pass); one
 * bit per hashed pair, a few per merge, answers most of those from a table small enough for L2 instead
 * of the merge table. A set bit only means "look in the table". */
static uint64_t pair_filter_bit(const tp_bpe *bpe, uint64_t pair) {
    return (pair * 0x9E3779B97F4A7C15ULL) >> bpe->pair_filter_shift;
}

static int may_merge(const tp_bpe *bpe, uint64_t pair) {
    uint64_t bit = pair_filter_bit(bpe, pair);
    return (int)(bpe->pair_filter[bit >> 6] >> (bit & 63) & 1);
}

#define IS_LEFT 1
#define IS_RIGHT 2

/* Whether some merge has left on its left and right on its right. In SentencePiece vocabularies many chars
 * (CJK, Thai...) appear in no merge at all: every pair next to one is settled here, from a byte per id (two
 * byte loads: fewer instructions than two bit tests), without the pair cache. Byte-level vocabularies have
 * no such table: nearly every byte symbol is in some merge, and the test cost their passes more than it
 * saved. */
static int can_pair(const tp_bpe *bpe, uint32_t left, uint32_t right) {
    return !bpe->sides || (bpe->sides[left] & bpe->sides[right] >> 1 & IS_LEFT);
}

/* The step of the merge of pair (pair_of) whose merge_hash is given, or NO_STEP; the pair may merge. */
static merge_step merge_find(const tp_bpe *bpe, uint64_t pair, uint64_t hash) {
    for (uint64_t slot = hash & bpe->merge_mask;; slot = (slot + 1) & bpe->merge_mask) {
        const merge_slot *m = &bpe->merges[slot];
        if (m->pair == pair) return m->step;
        if (m->pair == EMPTY_PAIR) return NO_STEP;
    }
}

#define PAIR_CACHE_BITS 14
#define PAIR_CACHE (1u << PAIR_CACHE_BITS) /* per thread: recent pair lookups (256 KiB: stays in L2) */

/* The pair cache's slot for a pair: one multiply (a hit then costs no merge_hash), by another constant than
 * the filter's, so the pairs the filter lets through spread over every slot. */
static merge_slot *pair_seen(const tp_bpe_scratch *s, uint64_t pair) {
    return &s->pairs[(pair * 0xD6E8FEB86659FD93ULL) >> (64 - PAIR_CACHE_BITS)];
}

/* merge_find through the thread's pair cache: text repeats pairs far more often than words. The sides per
 * id and the filter (both small enough for L1 on 32k-token vocabularies) answer most pairs that do not merge
 * before the pair cache is read. Inlined where it is asked: the call was a fifth of its instructions. */
static inline __attribute__((always_inline)) merge_step pair_step(const tp_bpe *bpe, const tp_bpe_scratch *s,
                                                                  uint32_t left, uint32_t right) {
    uint64_t pair = pair_of(left, right);
    if (!can_pair(bpe, left, right) || !may_merge(bpe, pair)) return NO_STEP;
    merge_slot *seen = pair_seen(s, pair);
    if (seen->pair != pair) *seen = (merge_slot){pair, merge_find(bpe, pair, merge_hash(pair))};
    return seen->step;
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
    bpe->vocab_mask = size - 1; /* before the table: tp_bpe_free gives its size back */
    bpe->vocab_slots = tp_huge_alloc(sizeof(vocab_slot) * size);
    if (!bpe->bytes || !bpe->offset || !bpe->has_bytes || !bpe->vocab_slots) return -1;
    memset(bpe->vocab_slots, 0xFF, sizeof(vocab_slot) * size);
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
        bpe->vocab_slots[slot] = (vocab_slot){tp_word_key(word, len), i, (uint32_t)len};
    }
    return 0;
}

static int build_merges(tp_bpe *bpe, const tp_merge *merges, uint32_t n) {
    uint64_t size = 16;
    while (size < (uint64_t)n + n / 2) size <<= 1;
    bpe->merge_mask = size - 1; /* before the table: tp_bpe_free gives its size back */
    bpe->merges = tp_huge_alloc(sizeof(merge_slot) * size);
    if (!bpe->merges) return -1;
    memset(bpe->merges, 0xFF, sizeof(merge_slot) * size);
    for (uint32_t rank = 0; rank < n; rank++) {
        uint64_t pair = pair_of(merges[rank].left, merges[rank].right);
        uint64_t slot = merge_hash(pair) & bpe->merge_mask;
        while (bpe->merges[slot].pair != EMPTY_PAIR && bpe->merges[slot].pair != pair)
            slot = (slot + 1) & bpe->merge_mask;
        if (bpe->merges[slot].pair == EMPTY_PAIR) /* pairs come once: the config reader keeps stock's (last) rank */
            bpe->merges[slot] = (merge_slot){pair, step_of(rank, merges[rank].merged)};
    }
    unsigned log2_bits = 12;
    while ((1ULL << log2_bits) < 4 * (uint64_t)n) log2_bits++; /* 4-8 bits a merge: 12-22% false "maybe" */
    bpe->pair_filter = calloc((1ULL << log2_bits) / 64, sizeof(uint64_t));
    if (!bpe->pair_filter) return -1;
    bpe->pair_filter_shift = 64 - log2_bits;
    for (uint32_t rank = 0; rank < n; rank++) {
        uint64_t bit = pair_filter_bit(bpe, pair_of(merges[rank].left, merges[rank].right));
        bpe->pair_filter[bit >> 6] |= 1ULL << (bit & 63);
    }
    return 0;
}

/* sides (see can_pair), for char-level vocabularies. */
static int build_merge_sides(tp_bpe *bpe, const tp_merge *merges, uint32_t n) {
    if (!bpe->opt.char_level) return 0;
    /* every id a symbol can hold: the vocab's, the merges' (the config reader keeps them inside it), unk */
    uint64_t ids = bpe->n_tokens;
    for (uint32_t rank = 0; rank < n; rank++) {
        if (merges[rank].left >= ids) ids = (uint64_t)merges[rank].left + 1;
        if (merges[rank].right >= ids) ids = (uint64_t)merges[rank].right + 1;
        if (merges[rank].merged >= ids) ids = (uint64_t)merges[rank].merged + 1;
    }
    if (bpe->opt.unk_id != NO_ID && bpe->opt.unk_id >= ids) ids = (uint64_t)bpe->opt.unk_id + 1;
    for (int b = 0; b < 256; b++)
        if (bpe->byte_tokens[b] != NO_ID && bpe->byte_tokens[b] >= ids) ids = (uint64_t)bpe->byte_tokens[b] + 1;
    if (!(bpe->sides = calloc(ids, 1))) return -1;
    for (uint32_t rank = 0; rank < n; rank++) {
        uint32_t left = merges[rank].left, right = merges[rank].right;
        bpe->sides[left] |= IS_LEFT;
        bpe->sides[right] |= IS_RIGHT;
    }
    return 0;
}

/* Whether token id's bytes end (at_end) or start with the cut char (valid UTF-8: the bytes decide). */
static int token_has_cut(const tp_bpe *bpe, uint32_t id, int at_end) {
    if (id >= bpe->n_tokens || !bpe->has_bytes[id]) return 0;
    const uint8_t *bytes = bpe->bytes + bpe->offset[id];
    size_t len = bpe->offset[id + 1] - bpe->offset[id];
    return len >= bpe->cut_len && tp_same_bytes(at_end ? bytes + len - bpe->cut_len : bytes, bpe->cut, bpe->cut_len);
}

/* The char that starts the most tokens (SentencePiece's word-start mark), in cut/cut_len. */
static int most_common_first_char(tp_bpe *bpe) {
    enum { SLOTS = 4096 };
    uint64_t *keys = calloc(SLOTS, sizeof(uint64_t));
    uint32_t *counts = calloc(SLOTS, sizeof(uint32_t)), best = 0;
    if (!keys || !counts) { free(keys); free(counts); return -1; }
    for (uint32_t id = 0; id < bpe->n_tokens; id++) {
        size_t len = bpe->offset[id + 1] - bpe->offset[id];
        if (!bpe->has_bytes[id] || len == 0) continue;
        const uint8_t *bytes = bpe->bytes + bpe->offset[id];
        uint64_t n = utf8_char_len(bytes[0]) <= len ? utf8_char_len(bytes[0]) : len, key = n << 32;
        memcpy(&key, bytes, n); /* little-endian low bytes; the length above them */
        for (uint64_t slot = tp_mix64(key) & (SLOTS - 1), probes = 0; probes < SLOTS; slot = (slot + 1) & (SLOTS - 1), probes++) {
            if (keys[slot] && keys[slot] != key) continue;
            keys[slot] = key;
            if (++counts[slot] > best) { best = counts[slot]; bpe->cut_len = n; memcpy(bpe->cut, bytes, n); }
            break;
        }
    }
    free(keys); free(counts);
    return 0;
}

/* A new word's chars are looked up one by one: for the BMP a direct table answers without hashing. */
static int build_bmp_ids(tp_bpe *bpe) {
    if (!bpe->opt.char_level || bpe->opt.prefix_len || bpe->opt.suffix_len) return 0;
    if (!(bpe->bmp_id = malloc(0x10000 * sizeof(uint32_t)))) return -1;
    memset(bpe->bmp_id, 0xFF, 0x10000 * sizeof(uint32_t));
    for (uint32_t id = 0; id < bpe->n_tokens; id++) {
        size_t len = bpe->offset[id + 1] - bpe->offset[id], char_len;
        if (!bpe->has_bytes[id] || len == 0 || len > 3) continue;
        uint32_t cp = utf8_decode(bpe->bytes + bpe->offset[id], &char_len);
        if (char_len == len && bpe->bmp_id[cp] == NO_ID) bpe->bmp_id[cp] = id; /* duplicate bytes: first id wins */
    }
    /* Chars beyond the BMP (emoji...) are few in a vocab: a table of their own keeps their lookups (and those
     * of the many unknown ones) off the vocab's. */
    uint32_t n_astral = 0, size = 16;
    for (uint32_t id = 0; id < bpe->n_tokens; id++)
        n_astral += bpe->has_bytes[id] && bpe->offset[id + 1] - bpe->offset[id] == 4 && bpe->bytes[bpe->offset[id]] >= 0xF0;
    while (size < 2 * n_astral) size <<= 1;
    if (!(bpe->astral_id = calloc(size, sizeof(*bpe->astral_id)))) return -1;
    bpe->astral_mask = size - 1;
    for (uint32_t id = 0; id < bpe->n_tokens; id++) {
        if (!bpe->has_bytes[id] || bpe->offset[id + 1] - bpe->offset[id] != 4 || bpe->bytes[bpe->offset[id]] < 0xF0) continue;
        uint32_t cp = utf8_decode(bpe->bytes + bpe->offset[id], NULL), at = (uint32_t)tp_mix64(cp) & bpe->astral_mask;
        while (bpe->astral_id[at][0] && bpe->astral_id[at][0] != cp) at = (at + 1) & bpe->astral_mask;
        if (!bpe->astral_id[at][0]) { bpe->astral_id[at][0] = cp; bpe->astral_id[at][1] = id; } /* first id wins */
    }
    return 0;
}

/* The id of the one-char token of a 4-byte char, or NO_ID. */
static uint32_t astral_find(const tp_bpe *bpe, const uint8_t *ch) {
    uint32_t cp = utf8_decode(ch, NULL);
    for (uint32_t at = (uint32_t)tp_mix64(cp) & bpe->astral_mask;; at = (at + 1) & bpe->astral_mask) {
        if (bpe->astral_id[at][0] == cp) return bpe->astral_id[at][1];
        if (!bpe->astral_id[at][0]) return NO_ID;
    }
}

/* Char-level vocabularies that mark word starts (SentencePiece's ▁) often see a whole text as one word,
 * which is slow to merge and too long to cache. Such a word is cut before each cut char whose previous
 * char is another: no merge joins across there when every merge whose right token starts with the cut
 * char has a left token ending with it (an unk or byte token covers other text than its string, so
 * neither may end with it) and no char is dropped (which would make its neighbours adjacent). Each side
 * then merges exactly as it does within the word, and is a word the cache may know. Not with
 * ignore_merges (the whole word's vocab lookup) or affixes (they mark word ends). */
static int choose_cut(tp_bpe *bpe, const tp_merge *merges, uint32_t n_merges) {
    if (!bpe->opt.char_level || bpe->opt.ignore_merges || bpe->opt.prefix_len || bpe->opt.suffix_len) return 0;
    if (most_common_first_char(bpe)) return -1;
    int safe = bpe->cut_len && vocab_find(bpe, bpe->cut, bpe->cut_len, tp_hash_bytes(bpe->cut, bpe->cut_len)) != NO_ID;
    for (uint32_t rank = 0; safe && rank < n_merges; rank++)
        safe = !token_has_cut(bpe, merges[rank].right, 0) || token_has_cut(bpe, merges[rank].left, 1);
    int all_bytes = bpe->opt.byte_fallback;
    for (int byte = 0; all_bytes && byte < 256; byte++) all_bytes = bpe->byte_tokens[byte] != NO_ID;
    safe = safe && (bpe->opt.unk_id != NO_ID || all_bytes); /* no char is dropped: its neighbours never meet */
    if (safe && bpe->opt.unk_id != NO_ID) safe = !token_has_cut(bpe, bpe->opt.unk_id, 1);
    for (int byte = 0; safe && bpe->opt.byte_fallback && byte < 256; byte++)
        safe = !token_has_cut(bpe, bpe->byte_tokens[byte], 1);
    if (!safe) bpe->cut_len = 0;
    bpe->cut_mask = bpe->cut_len >= 4 ? UINT32_MAX : (1u << (8 * bpe->cut_len)) - 1;
    memcpy(&bpe->cut_four, bpe->cut, 4);
    bpe->cut_four &= bpe->cut_mask;
    return 0;
}

tp_bpe *tp_bpe_new(const uint8_t *const *tokens, const uint32_t *lens, uint32_t n_tokens,
                   const tp_merge *merges, uint32_t n_merges, const tp_bpe_options *options) {
    if (n_tokens > TP_BPE_MAX_TOKENS || n_merges > TP_BPE_MAX_MERGES) return NULL;
    tp_bpe *bpe = calloc(1, sizeof(*bpe));
    if (!bpe) return NULL;
    bpe->n_tokens = n_tokens;
    bpe->opt = *options;
    if (options->byte_fallback) memcpy(bpe->byte_tokens, options->byte_tokens, sizeof(bpe->byte_tokens));
    bpe->opt.byte_tokens = bpe->byte_tokens;
    if (options->prefix_len > TP_BPE_AFFIX_MAX || options->suffix_len > TP_BPE_AFFIX_MAX) goto fail;
    if (options->prefix_len) memcpy(bpe->prefix, options->prefix, options->prefix_len);
    if (options->suffix_len) memcpy(bpe->suffix, options->suffix, options->suffix_len);
    bpe->opt.prefix = bpe->prefix; bpe->opt.suffix = bpe->suffix;
    if (build_vocab(bpe, tokens, lens, n_tokens) || build_merges(bpe, merges, n_merges) ||
        build_merge_sides(bpe, merges, n_merges) || choose_cut(bpe, merges, n_merges) || build_bmp_ids(bpe)) goto fail;
    if (!(bpe->words = tp_word_cache_new())) goto fail;
    if (options->char_level) return bpe;
    for (unsigned kind = 0; kind < 4; kind++)
        for (int byte = 0; byte < 256; byte++) {
            uint8_t one = (uint8_t)byte, buf[2 * TP_BPE_AFFIX_MAX + 4];
            size_t len = affixed(bpe, kind, &one, 1, buf);
            bpe->byte_id[kind][byte] = vocab_find(bpe, buf, len, tp_hash_bytes(buf, len));
            bpe->byte_gaps |= bpe->byte_id[kind][byte] == NO_ID;
        }
    return bpe;
fail:
    tp_bpe_free(bpe);
    return NULL;
}

void tp_bpe_free(tp_bpe *bpe) {
    if (!bpe) return;
    free(bpe->bytes); free(bpe->offset); free(bpe->has_bytes);
    tp_huge_free(bpe->vocab_slots, (bpe->vocab_mask + 1) * sizeof(vocab_slot));
    tp_huge_free(bpe->merges, (bpe->merge_mask + 1) * sizeof(merge_slot));
    free(bpe->pair_filter); free(bpe->sides); free(bpe->bmp_id);
    free(bpe->astral_id);
    tp_word_cache_free(bpe->words);
    free(bpe);
}

/* The caches are made at the first call: a workspace of a WordPiece pipeline never needs them. */
tp_bpe_scratch *tp_bpe_scratch_new(void) {
    return calloc(1, sizeof(tp_bpe_scratch));
}

tp_word_cache *tp_bpe_shared_cache(const tp_bpe *bpe) { return bpe->words; }

tp_word_caches *tp_bpe_scratch_caches(tp_bpe_scratch *s) { return &s->caches; }

static int make_pair_cache(tp_bpe_scratch *s) {
    if (!(s->pairs = malloc(PAIR_CACHE * sizeof(merge_slot)))) return -1;
    memset(s->pairs, 0xFF, PAIR_CACHE * sizeof(merge_slot)); /* all ones: no pair of valid ids */
    return 0;
}

void tp_bpe_scratch_free(tp_bpe_scratch *s) {
    if (!s) return;
    free(s->ids); free(s->starts); free(s->ends);
    free(s->first); free(s->count); free(s->missed); free(s->twin_of); free(s->hash); free(s->todo);
    free(s->next); free(s->prev); free(s->heap); free(s->twins);
    free(s->pieces); free(s->piece_lens); free(s->piece_shifts); free(s->word_pieces); free(s->word_first); free(s->word_count);
    tp_word_cache_release(&s->caches.own); free(s->pairs);
    free(s);
}

static int reserve(tp_bpe_scratch *s, size_t symbols, size_t words, size_t longest) {
    if (symbols > s->cap) {
        size_t cap = grow_capacity(s->cap, symbols);
        if (grow_to(&s->ids, cap, 4) || grow_to(&s->starts, cap, 4) || grow_to(&s->ends, cap, 4)) return -1;
        s->cap = cap;
    }
    if (words > s->words_cap) {
        size_t cap = grow_capacity(s->words_cap, words);
        if (grow_to(&s->first, cap, 4) || grow_to(&s->count, cap, 4) || grow_to(&s->missed, cap, 4) ||
            grow_to(&s->twin_of, cap, 4) || grow_to(&s->hash, cap, 8) || grow_to(&s->todo, cap, sizeof(merging)))
            return -1;
        s->words_cap = cap;
    }
    if (longest > s->long_cap) {
        size_t cap = grow_capacity(s->long_cap, longest);
        if (grow_to(&s->next, cap, 4) || grow_to(&s->prev, cap, 4) || grow_to(&s->heap, cap * 3, sizeof(heap_entry)))
            return -1;
        s->long_cap = cap;
    }
    return 0;
}

static int heap_less(heap_entry a, heap_entry b) { return a.step < b.step || (a.step == b.step && a.pos < b.pos); }

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
#define SHORT_WORD 32   /* words of more symbols merge with a heap, shorter ones by scanning */

/* Long words: symbols as a linked list over positions and a (rank, position) min-heap, as HF does;
 * a popped entry is stale unless the same pair of ids is still at its position. Returns the symbol count. */
static size_t merge_long(const tp_bpe *bpe, tp_bpe_scratch *s, size_t base, size_t n) {
    uint32_t *ids = s->ids + base, *starts = s->starts + base, *ends = s->ends + base;
    uint32_t *next = s->next, *prev = s->prev;
    merge_step step;
    heap_entry *heap = s->heap;
    size_t heap_n = 0;
    for (size_t i = 0; i < n; i++) { next[i] = (uint32_t)i + 1; prev[i] = (uint32_t)i - 1; } /* prev[0]: NONE_POS */
    next[n - 1] = NONE_POS;
    for (size_t i = 0; i + 1 < n; i++) {
        if ((step = pair_step(bpe, s, ids[i], ids[i + 1])) != NO_STEP)
            heap_push(heap, &heap_n, (heap_entry){step, (uint32_t)i, ids[i], ids[i + 1]});
    }
    while (heap_n) {
        heap_entry top = heap_pop(heap, &heap_n);
        uint32_t pos = top.pos, right = next[pos];
        if (right == NONE_POS || ids[pos] != top.left || ids[right] != top.right) continue;
        ids[pos] = step_merged(top.step);
        ends[pos] = ends[right];
        ids[right] = NONE_POS;
        next[pos] = next[right];
        if (next[right] != NONE_POS) prev[next[right]] = pos;
        if (prev[pos] != NONE_POS && (step = pair_step(bpe, s, ids[prev[pos]], ids[pos])) != NO_STEP)
            heap_push(heap, &heap_n, (heap_entry){step, prev[pos], ids[prev[pos]], ids[pos]});
        if (next[pos] != NONE_POS && (step = pair_step(bpe, s, ids[pos], ids[next[pos]])) != NO_STEP)
            heap_push(heap, &heap_n, (heap_entry){step, pos, ids[pos], ids[next[pos]]});
    }
    size_t out = 0;
    for (uint32_t i = 0; i != NONE_POS; i = next[i]) {
        ids[out] = ids[i]; starts[out] = starts[i]; ends[out] = ends[i];
        out++;
    }
    return out;
}

/* A short word's pairs for the scan for the next merge: the rank of each as an int32 with its top bit
 * flipped, so that signed compares (all SSE2 has) order keys as ranks; NO_KEY: a hole or a pair that does
 * not merge. */
typedef int32_t rank_key;
#define NO_KEY INT32_MAX

static rank_key key_of(merge_step step) { return (rank_key)((uint32_t)(step >> 32) ^ 0x80000000u); }

#if defined(__SSE2__)
static __m128i least_of(__m128i a, __m128i b) {
    __m128i a_greater = _mm_cmpgt_epi32(a, b);
    return _mm_or_si128(_mm_and_si128(a_greater, b), _mm_andnot_si128(a_greater, a));
}
#endif

/* The first position of the smallest of keys[0, n): four keys a step (keys holds SHORT_WORD, NO_KEY past
 * n). A scalar scan's compare mispredicts about as often as it finds a new least. */
static size_t first_least(const rank_key *keys, size_t n) {
#if defined(__SSE2__)
    const __m128i *lanes = (const __m128i *)keys;
    size_t n_lanes = (n + 3) / 4;
    __m128i least = _mm_load_si128(lanes);
    for (size_t v = 1; v < n_lanes; v++) least = least_of(least, _mm_load_si128(lanes + v));
    least = least_of(least, _mm_shuffle_epi32(least, _MM_SHUFFLE(1, 0, 3, 2)));
    least = least_of(least, _mm_shuffle_epi32(least, _MM_SHUFFLE(2, 3, 0, 1)));
    for (size_t v = 0;; v++) {
        int at = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_load_si128(lanes + v), least)));
        if (at) return 4 * v + (size_t)__builtin_ctz((unsigned)at);
    }
#else
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (keys[i] < keys[best]) best = i;
    return best;
#endif
}

/* A short word merges in place, in the heap's order (leftmost lowest-rank pair first): the symbol a merge
 * absorbs becomes a hole (id NO_ID, key NO_KEY) that the scans pass over, so a merge moves nothing, and the
 * word is compacted once at the end. keys[i] and made[i]: the pair of live symbol i and the next live one.
 * Returns the symbol count. */
static size_t merge_in_place(const tp_bpe *bpe, tp_bpe_scratch *s, const merging *w) {
    uint32_t *ids = s->ids + w->base, *starts = s->starts + w->base, *ends = s->ends + w->base;
    size_t n = w->n;
    if (n < 2) return n;
    _Alignas(16) rank_key keys[SHORT_WORD];
    uint32_t made[SHORT_WORD];
    merge_step step;
    for (size_t i = 0; i < (n + 2) / 4 * 4; i++) { /* the n - 1 pairs, NO_KEY to the end of their last lane */
        step = i + 1 < n ? pair_step(bpe, s, ids[i], ids[i + 1]) : NO_STEP;
        keys[i] = key_of(step); made[i] = step_merged(step);
    }
    for (;;) {
        size_t best = first_least(keys, n - 1);
        if (keys[best] == NO_KEY) break;
        size_t right = best + 1, after, left = best;
        while (ids[right] == NO_ID) right++;
        ids[best] = made[best];
        ends[best] = ends[right];
        ids[right] = NO_ID;
        keys[right] = NO_KEY;
        for (after = right + 1; after < n && ids[after] == NO_ID; after++) {}
        step = after < n ? pair_step(bpe, s, ids[best], ids[after]) : NO_STEP;
        keys[best] = key_of(step); made[best] = step_merged(step);
        if (best > 0) { /* symbol 0 is never absorbed: a live one lies to the left */
            while (ids[--left] == NO_ID) {}
            step = pair_step(bpe, s, ids[left], ids[best]);
            keys[left] = key_of(step); made[left] = step_merged(step);
        }
    }
    size_t live = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] != NO_ID) { ids[live] = ids[i]; starts[live] = starts[i]; ends[live] = ends[i]; live++; }
    return live;
}

/* Short words, one after another: nearly every pair a word asks about is settled by the filters or the
 * pair cache (of the 1.6M initial pairs of Mistral v1's stream pass, 27k reach the merge table), so
 * requesting table lines ahead gains nothing. */
static void merge_short(const tp_bpe *bpe, tp_bpe_scratch *s, const merging *words, size_t n_words) {
    for (size_t k = 0; k < n_words; k++) s->count[words[k].word] = (uint32_t)merge_in_place(bpe, s, &words[k]);
}

/* A word's initial symbols as they are added, at s->ids + base (and starts, ends). */
typedef struct {
    uint32_t *ids, *starts, *ends;
    size_t n;
    uint32_t end; /* where the last symbol ends */
} symbols;

static symbols symbols_at(tp_bpe_scratch *s, size_t base) {
    return (symbols){s->ids + base, s->starts + base, s->ends + base, 0, 0};
}

/* HF's Word::add: a symbol's range starts where the previous one ended (so ranges shift left past
 * unknown chars that are dropped, exactly as stock's offsets do). */
static void add_symbol(symbols *out, uint32_t id, size_t byte_len) {
    out->ids[out->n] = id; out->starts[out->n] = out->end;
    out->end += (uint32_t)byte_len;
    out->ends[out->n++] = out->end;
}

static int has_byte_tokens(const tp_bpe *bpe, const uint8_t *bytes, size_t n) {
    for (size_t b = 0; b < n; b++)
        if (bpe->byte_tokens[bytes[b]] == NO_ID) return 0;
    return 1;
}

/* HF's char-level word start (merge_word): known chars (with their prefix/suffix), <0xXX> byte tokens
 * of the char when all of them exist (never with affixes: the Python layer sends that to stock), or a
 * (fused) unk per unknown char. The pending unk is flushed before the next known char only (not before
 * byte tokens), exactly as HF orders it. */
static size_t char_symbols(const tp_bpe *bpe, tp_bpe_scratch *s, size_t base, const uint8_t *word, size_t len) {
    symbols out = symbols_at(s, base);
    const uint32_t *bmp_id = bpe->bmp_id;
    size_t unk_len = 0;
    int pending = 0;
    for (size_t i = 0; i < len;) {
        uint32_t ascii_id;
        if (bmp_id && word[i] < 0x80 && !pending && (ascii_id = bmp_id[word[i]]) != NO_ID) { /* most chars */
            add_symbol(&out, ascii_id, 1);
            i++;
            continue;
        }
        size_t end = i + utf8_char_len(word[i]);
        if (end > len) end = len;
        uint8_t buf[2 * TP_BPE_AFFIX_MAX + 4];
        const uint8_t *key = word + i; /* the char with its affixes: the char alone where the BMP table is */
        size_t key_len = end - i;
        if (!bpe->bmp_id) { key_len = affixed(bpe, symbol_kind(i, end, len), word + i, end - i, buf); key = buf; }
        uint32_t id = !bpe->bmp_id || key_len != utf8_char_len(key[0]) ? vocab_find(bpe, key, key_len, tp_hash_bytes(key, key_len))
                    : key_len <= 3 ? bpe->bmp_id[utf8_decode(key, NULL)] : astral_find(bpe, key);
        if (id != NO_ID) {
            if (pending) { add_symbol(&out, bpe->opt.unk_id, unk_len); pending = 0; }
            add_symbol(&out, id, end - i);
        } else if (bpe->opt.byte_fallback && has_byte_tokens(bpe, key, key_len)) {
            for (size_t b = 0; b < key_len; b++) add_symbol(&out, bpe->byte_tokens[key[b]], 1);
        } else if (bpe->opt.unk_id != NO_ID) {
            if (pending && bpe->opt.fuse_unk) {
                unk_len += end - i;
            } else {
                if (pending) add_symbol(&out, bpe->opt.unk_id, unk_len);
                pending = 1; unk_len = end - i;
            }
        }
        i = end;
    }
    if (pending) add_symbol(&out, bpe->opt.unk_id, unk_len);
    return out.n;
}

/* Byte level with gaps: HF's merge_word runs over the byte-rendered word, so a byte without its initial
 * symbol becomes the <0xXX> tokens of its rendered char's UTF-8 when all exist, else a (fused) unk, else
 * nothing, and symbol ranges are sums of rendered lengths (shifting left past dropped chars). Those
 * rendered ranges are then mapped to word bytes: a rendered offset falls in the rendered char of exactly
 * one byte, which is what stock's alignments map it to. */
static size_t gap_symbols(const tp_bpe *bpe, tp_bpe_scratch *s, size_t base, const uint8_t *word, size_t len) {
    symbols out = symbols_at(s, base);
    size_t unk_len = 0;
    int pending = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t cp = tp_engine->bytelevel_map[word[i]]; /* below 0x800: one or two UTF-8 bytes */
        uint8_t utf8[2] = {(uint8_t)cp, 0};
        size_t rendered = 1;
        if (cp >= 0x80) {
            utf8[0] = (uint8_t)(0xC0 | (cp >> 6));
            utf8[1] = (uint8_t)(0x80 | (cp & 0x3F));
            rendered = 2;
        }
        uint32_t id = bpe->byte_id[symbol_kind(i, i + 1, len)][word[i]];
        if (id != NO_ID) {
            if (pending) { add_symbol(&out, bpe->opt.unk_id, unk_len); pending = 0; }
            add_symbol(&out, id, rendered);
        } else if (bpe->opt.byte_fallback && has_byte_tokens(bpe, utf8, rendered)) {
            for (size_t b = 0; b < rendered; b++) add_symbol(&out, bpe->byte_tokens[utf8[b]], 1);
        } else if (bpe->opt.unk_id != NO_ID) {
            if (pending && bpe->opt.fuse_unk) {
                unk_len += rendered;
            } else {
                if (pending) add_symbol(&out, bpe->opt.unk_id, unk_len);
                pending = 1; unk_len = rendered;
            }
        }
    }
    if (pending) add_symbol(&out, bpe->opt.unk_id, unk_len);
    /* rendered offsets -> word bytes: starts and ends both only grow, so two walks over the word */
    size_t at_start = 0, r_start = 0, at_end = 0, r_end = 0, n = out.n;
    for (size_t k = base; k < base + n; k++) {
        uint32_t rs = s->starts[k], re = s->ends[k];
        while (at_start < len && r_start + (tp_engine->bytelevel_map[word[at_start]] < 0x80 ? 1 : 2) <= rs)
            r_start += tp_engine->bytelevel_map[word[at_start++]] < 0x80 ? 1 : 2;
        while (at_end < len && r_end + (tp_engine->bytelevel_map[word[at_end]] < 0x80 ? 1 : 2) < re)
            r_end += tp_engine->bytelevel_map[word[at_end++]] < 0x80 ? 1 : 2;
        s->starts[k] = (uint32_t)at_start;
        s->ends[k] = (uint32_t)at_end + 1;
    }
    return n;
}

static size_t byte_symbols(const tp_bpe *bpe, tp_bpe_scratch *s, size_t base, const uint8_t *word, size_t len) {
    if (bpe->byte_gaps) return gap_symbols(bpe, s, base, word, len);
    for (size_t i = 0; i < len; i++) {
        s->ids[base + i] = bpe->byte_id[symbol_kind(i, i + 1, len)][word[i]];
        s->starts[base + i] = (uint32_t)i;
        s->ends[base + i] = (uint32_t)i + 1;
    }
    return len;
}

/* The word's tokens from the word caches (they also remember words found whole in the vocab), their ranges
 * moved by shift; 0 on a miss. */
static inline __attribute__((always_inline)) int from_cache(tp_bpe_scratch *s, size_t j, const uint8_t *word, size_t len,
                                                          uint32_t shift) {
    if (len > TP_CACHE_WORD) return 0;
    const tp_word_cache *cache;
    const tp_cache_slot *slot = tp_caches_find(&s->caches, &cache, word, len, s->hash[j]);
    if (!slot) return 0;
    size_t base = s->first[j];
    tp_word_cache_load_at(cache, slot, s->ids + base, s->starts + base, s->ends + base, shift);
    s->count[j] = slot->n;
    return 1;
}


/* ignore_merges: a word found whole in the vocab is that one token. */
static int from_vocab(const tp_bpe *bpe, tp_bpe_scratch *s, size_t j, const uint8_t *word, size_t len) {
    uint32_t whole = bpe->opt.ignore_merges ? vocab_find(bpe, word, len, s->hash[j]) : NO_ID;
    if (whole == NO_ID) return 0;
    size_t base = s->first[j];
    s->ids[base] = whole; s->starts[base] = 0; s->ends[base] = (uint32_t)len;
    s->count[j] = 1;
    return 1;
}

/* A word not cached yet may come twice in one call (a few in a hundred of a cold pass's merged words; more
 * among the pieces of cut words): the repeat's tokens are the first one's (its range too, unless the repeat
 * keeps its own room to be copied into), so the word is merged once. The call's merged words are found by
 * hash in s->twins (mask + 1 slots of todo indexes). Otherwise *slot is where word j goes once it is merged. */
static int is_twin(tp_bpe_scratch *s, size_t j, const uint8_t *const *words, const size_t *lens, uint64_t mask,
                   int own_room, uint64_t *slot) {
    for (*slot = (s->hash[j] >> 24) & mask; s->twins[*slot] != NO_ID; *slot = (*slot + 1) & mask) {
        size_t i = s->todo[s->twins[*slot]].word;
        if (s->hash[i] == s->hash[j] && lens[i] == lens[j] && tp_same_bytes(words[i], words[j], lens[j])) {
            s->twin_of[j] = (uint32_t)i;
            if (!own_room) s->first[j] = s->first[i];
            return 1;
        }
    }
    return 0;
}

/* The twins table for n missed words, emptied; its mask, or UINT64_MAX on OOM. */
static uint64_t clear_twins(tp_bpe_scratch *s, size_t n) {
    size_t size = 16;
    while (size < 2 * n) size <<= 1;
    if (size > s->twins_cap) {
        if (grow_to(&s->twins, size, 4)) return UINT64_MAX;
        s->twins_cap = size;
    }
    memset(s->twins, 0xFF, size * 4);
    return size - 1;
}

/* Encode n words into s: word j's tokens at s->first[j], s->count[j]. Words found in the cache are packed
 * one after another. Without shifts, a repeat of a word merged in the call has that word's range. With
 * shifts (the pieces of cut words), words found in the cache have their ranges moved by shifts[j] and
 * twin_of NO_ID, the merged ones have their own ranges, and a repeat (twin_of the word it repeats) keeps its
 * own room at first[j], which holds as many symbols as its bytes, for its tokens to be copied into. */
static int encode_words(const tp_bpe *bpe, tp_bpe_scratch *s, const uint8_t *const *words, const size_t *lens,
                        const uint64_t *hashes, size_t n, const uint32_t *shifts) {
    /* room per word: one symbol per byte, two where a byte-level gap byte falls back to <0xXX> tokens */
    const size_t per_byte = bpe->byte_gaps && bpe->opt.byte_fallback ? 2 : 1;
    size_t symbols = 0, longest = 0;
    for (size_t j = 0; j < n; j++) {
        symbols += per_byte * lens[j] + 1;
        if (lens[j] > longest) longest = lens[j];
    }
    if (reserve(s, symbols, n, per_byte * longest + 1) || (!s->pairs && make_pair_cache(s))) return -1;
    if (tp_caches_begin(&s->caches, bpe->words)) return -1;
    /* Lookups go in rounds, each round's table lines requested before any is read. */
    for (size_t j = 0; j < n; j++) {
        s->hash[j] = hashes ? hashes[j] : tp_hash_bytes(words[j], lens[j]);
        __builtin_prefetch(tp_word_cache_home(tp_caches_first(&s->caches), s->hash[j]));
    }
    size_t n_missed = 0, n_todo = 0, n_short = 0;
    /* Cut pieces' hits are packed (join_pieces then moves nothing); other words keep rooms by their length,
     * so no word's place waits on the token count loaded for the word before it. */
    for (size_t j = 0, at = 0; j < n; j++) {
        s->first[j] = (uint32_t)at;
        if (!shifts) {
            at += per_byte * lens[j] + 1;
            if (from_cache(s, j, words[j], lens[j], 0)) continue;
        } else if (from_cache(s, j, words[j], lens[j], shifts[j])) {
            s->twin_of[j] = NO_ID;
            at += s->count[j];
            continue;
        } else {
            at += per_byte * lens[j] + 1;
        }
        s->missed[n_missed++] = (uint32_t)j;
        if (bpe->opt.ignore_merges) __builtin_prefetch(&bpe->vocab_slots[s->hash[j] & bpe->vocab_mask]);
    }
    uint64_t twins_mask = n_missed ? clear_twins(s, n_missed) : 0, slot;
    if (twins_mask == UINT64_MAX) return -1;
    for (size_t k = 0; k < n_missed; k++) {
        size_t j = s->missed[k], base = s->first[j];
        s->twin_of[j] = (uint32_t)j;
        if (from_vocab(bpe, s, j, words[j], lens[j]) || is_twin(s, j, words, lens, twins_mask, shifts != NULL, &slot)) continue;
        size_t n_symbols = bpe->opt.char_level ? char_symbols(bpe, s, base, words[j], lens[j])
                                               : byte_symbols(bpe, s, base, words[j], lens[j]);
        s->twins[slot] = (uint32_t)n_todo;
        s->todo[n_todo++] = (merging){(uint32_t)j, (uint32_t)base, (uint32_t)n_symbols};
    }
    for (size_t k = 0; k < n_todo; k++) /* short words first, in place */
        if (s->todo[k].n <= SHORT_WORD) {
            merging short_word = s->todo[k];
            s->todo[k] = s->todo[n_short];
            s->todo[n_short++] = short_word;
        }
    merge_short(bpe, s, s->todo, n_short);
    for (size_t k = n_short; k < n_todo; k++)
        s->count[s->todo[k].word] = (uint32_t)merge_long(bpe, s, s->todo[k].base, s->todo[k].n);
    for (size_t k = 0; k < n_missed; k++) {
        size_t j = s->missed[k], base = s->first[j];
        if (s->twin_of[j] != j) {
            s->count[j] = s->count[s->twin_of[j]];
        } else if (lens[j] <= TP_CACHE_WORD) {
            tp_caches_remember(&s->caches, words[j], lens[j], s->hash[j], s->ids + base, s->starts + base,
                               s->ends + base, s->count[j]);
        }
    }
    return 0;
}

#define CUT_MIN 32 /* shorter words are merged and cached whole */

size_t tp_bpe_longest_cached(const tp_bpe *bpe) { return bpe->cut_len ? CUT_MIN - 1 : TP_CACHE_WORD; }

/* Whether the cut char starts at word[at] (at + 4 <= len: one load, the char's bytes masked out of it). */
static int cut_starts(const tp_bpe *bpe, const uint8_t *word, size_t at) {
    uint32_t four;
    memcpy(&four, word + at, 4);
    return (four & bpe->cut_mask) == bpe->cut_four;
}

/* A cut char starts at word[at] and the char before it is another. */
static int is_cut_at(const tp_bpe *bpe, const uint8_t *word, size_t len, size_t at) {
    size_t n = bpe->cut_len;
    if (at + 4 <= len) return cut_starts(bpe, word, at) && !(at >= n && cut_starts(bpe, word, at - n));
    return at + n <= len && tp_same_bytes(word + at, bpe->cut, n) && !(at >= n && tp_same_bytes(word + at - n, bpe->cut, n));
}

/* Word cut into pieces before each cut char (choose_cut) not preceded by one; returns the piece count. The
 * cut char's bytes are matched 16 positions at a time, and whether one follows another is read from the
 * same bits: in SentencePiece text its first byte also leads other chars (E2 leads ▁ and most punctuation),
 * which a memchr for that byte stops at. */
static size_t cut_word(const tp_bpe *bpe, const uint8_t *word, size_t len, const uint8_t **pieces, size_t *lens) {
    size_t n = 0, start = 0, at = 1;
#if defined(__SSE2__)
    size_t cut_len = bpe->cut_len;
    __m128i cut_bytes[4];
    for (size_t k = 0; k < cut_len; k++) cut_bytes[k] = _mm_set1_epi8((char)bpe->cut[k]);
    uint64_t before = 0; /* the cut chars starting in the 16 positions before at */
    for (at = 0; at + 16 + cut_len - 1 <= len; at += 16) {
        uint64_t found = 0xFFFF;
        for (size_t k = 0; k < cut_len; k++) {
            __m128i bytes = _mm_loadu_si128((const __m128i *)(word + at + k));
            found &= (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, cut_bytes[k]));
        }
        uint64_t preceded = (found << 16 | before) << cut_len >> 16; /* bit i: a cut char starts at i - cut_len */
        uint64_t cuts = found & ~preceded & (at ? ~0ULL : ~1ULL); /* never at 0 */
        for (; cuts; cuts &= cuts - 1) {
            size_t cut = at + (size_t)__builtin_ctzll(cuts);
            pieces[n] = word + start; lens[n++] = cut - start;
            start = cut;
        }
        before = found;
    }
    if (at == 0) at = 1;
#endif
    for (const uint8_t *p = word + at; p < word + len && (p = memchr(p, bpe->cut[0], len - (size_t)(p - word))); p++)
        if (is_cut_at(bpe, word, len, (size_t)(p - word))) {
            pieces[n] = word + start; lens[n++] = (size_t)(p - word) - start;
            start = (size_t)(p - word);
        }
    pieces[n] = word + start; lens[n++] = len - start;
    return n;
}

int tp_bpe_cuts(const tp_bpe *bpe) { return bpe->cut_len != 0; }

size_t tp_bpe_cut_bound(const tp_bpe *bpe, size_t len) {
    return bpe->cut_len && len >= CUT_MIN ? len / bpe->cut_len + 1 : 1;
}

size_t tp_bpe_cut(const tp_bpe *bpe, const uint8_t *word, size_t len, const uint8_t **pieces, size_t *lens) {
    if (tp_bpe_cut_bound(bpe, len) > 1) return cut_word(bpe, word, len, pieces, lens);
    pieces[0] = word;
    lens[0] = len;
    return 1;
}

static int reserve_pieces(tp_bpe_scratch *s, size_t pieces, size_t words) {
    if (pieces > s->pieces_cap) {
        size_t cap = grow_capacity(s->pieces_cap, pieces);
        if (grow_to(&s->pieces, cap, sizeof(*s->pieces)) || grow_to(&s->piece_lens, cap, sizeof(size_t)) ||
            grow_to(&s->piece_shifts, cap, 4)) return -1;
        s->pieces_cap = cap;
    }
    if (words > s->cut_words_cap) {
        size_t cap = grow_capacity(s->cut_words_cap, words);
        if (grow_to(&s->word_pieces, cap, 4) || grow_to(&s->word_first, cap, 4) || grow_to(&s->word_count, cap, 4))
            return -1;
        s->cut_words_cap = cap;
    }
    return 0;
}

/* A cut word's tokens, in place: each piece's tokens moved down to follow the previous piece's (a piece's
 * tokens never outnumber the room it was given), their ranges moved into the word (where HF's Word::add
 * places a symbol: no char of a cut word is dropped, so each piece's symbols end where its bytes do). A piece
 * found in the cache is there already when no piece before it was merged; a repeat's tokens are copied from
 * the piece it repeats, which has been placed before (first and twin_of say where, and in whose ranges). */
static uint32_t join_pieces(tp_bpe_scratch *s, size_t first_piece, size_t n_pieces, const uint32_t *shifts) {
    size_t start = s->first[first_piece], at = start;
    for (size_t k = first_piece; k < first_piece + n_pieces; k++) {
        size_t from = s->twin_of[k] == NO_ID || s->twin_of[k] == k ? k : s->twin_of[k];
        uint32_t shift = shifts[k] - (s->twin_of[from] == NO_ID ? shifts[from] : 0); /* modulo 2^32 */
        size_t src = s->first[from], count = s->count[k];
        if (src != at || shift)
            for (size_t t = 0; t < count; t++) {
                s->ids[at + t] = s->ids[src + t];
                s->starts[at + t] = s->starts[src + t] + shift;
                s->ends[at + t] = s->ends[src + t] + shift;
            }
        s->first[k] = (uint32_t)at;
        s->twin_of[k] = NO_ID; /* its tokens are now at first[k], in the word's ranges */
        at += count;
    }
    return (uint32_t)(at - start);
}

/* Words of CUT_MIN bytes or more are cut (choose_cut) and their pieces encoded as words; each cut word's
 * tokens are then joined where its pieces' were. A cut word is not cached whole: its pieces are, and a text
 * seen before is rarely worth the cache's room. */
static int encode_cut_words(const tp_bpe *bpe, tp_bpe_scratch *s, const uint8_t *const *words, const size_t *lens,
                            size_t n, tp_words *out) {
    size_t bound = 0;
    for (size_t j = 0; j < n; j++) bound += tp_bpe_cut_bound(bpe, lens[j]);
    if (reserve_pieces(s, bound, n)) return -1;
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        size_t got = tp_bpe_cut(bpe, words[j], lens[j], s->pieces + m, s->piece_lens + m);
        for (size_t k = m; k < m + got; k++) s->piece_shifts[k] = (uint32_t)(s->pieces[k] - words[j]);
        s->word_pieces[j] = (uint32_t)got;
        m += got;
    }
    if (encode_words(bpe, s, s->pieces, s->piece_lens, NULL, m, s->piece_shifts)) return -1;
    for (size_t j = 0, k = 0; j < n; k += s->word_pieces[j], j++) {
        s->word_first[j] = s->first[k];
        s->word_count[j] = join_pieces(s, k, s->word_pieces[j], s->piece_shifts);
    }
    *out = (tp_words){s->ids, s->starts, s->ends, s->word_first, s->word_count};
    return 0;
}

int tp_bpe_encode_words(const tp_bpe *bpe, tp_bpe_scratch *s, const uint8_t *const *words, const size_t *lens,
                        const uint64_t *hashes, size_t n, tp_words *out) {
    for (size_t j = 0; bpe->cut_len && j < n; j++)
        if (lens[j] >= CUT_MIN) return encode_cut_words(bpe, s, words, lens, n, out);
    if (encode_words(bpe, s, words, lens, hashes, n, NULL)) return -1;
    *out = (tp_words){s->ids, s->starts, s->ends, s->first, s->count};
    return 0;
}
