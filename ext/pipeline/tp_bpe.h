/* Byte-pair-encoding model over raw bytes (byte-level vocabularies are mapped back to bytes in Python).
 *
 * Thread-safety: a tp_bpe's tables are immutable after tp_bpe_new; every call that needs memory takes a
 * tp_bpe_scratch, one per thread. Its word cache is shared by the scratches marked pooled, which must only
 * be used by the threads of one pool run at a time (tp_pool's busy lock), and settled between rounds. */
#ifndef TP_BPE_H
#define TP_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_words.h"

typedef struct tp_bpe tp_bpe;
typedef struct tp_bpe_scratch tp_bpe_scratch;
typedef struct tp_word_caches tp_word_caches;
typedef struct tp_word_cache tp_word_cache;

typedef struct {
    uint32_t left, right, merged; /* token ids; rank = index in the merge list */
} tp_merge;

typedef struct {
    int ignore_merges;  /* a word found whole in the vocab is one token (HF ignore_merges) */
    int char_level;     /* initial symbols are the word's UTF-8 chars looked up in the vocab (else its bytes) */
    int byte_fallback;  /* an unknown char (byte level: a byte's rendered char) becomes its <0xXX> tokens
                         * (byte_tokens) when all exist */
    const uint32_t *byte_tokens; /* 256 ids, for byte_fallback; UINT32_MAX: no such token */
    uint32_t unk_id;    /* id for unknown chars, UINT32_MAX: unknown chars are dropped (as HF) */
    int fuse_unk;       /* consecutive unknown chars give one unk token */
    /* HF continuing_subword_prefix / end_of_word_suffix: a word's initial symbol for a char (a byte at
     * byte level) is prefix + char when it is not the first, char + suffix when it is the last. */
    const uint8_t *prefix, *suffix;
    size_t prefix_len, suffix_len; /* each at most TP_BPE_AFFIX_MAX */
} tp_bpe_options;

#define TP_BPE_AFFIX_MAX 64
/* Table limits (two ids pack into one 42-bit pair; a rank and an id into one 64-bit merge step). */
#define TP_BPE_MAX_TOKENS ((1u << 21) - 1)
#define TP_BPE_MAX_MERGES ((1u << 22) - 1)

/* tokens[i] (len lens[i]) is the byte string of id i; lens[i] == UINT32_MAX marks an id with no
 * byte string. Returns NULL on OOM, beyond the table limits, on a prefix/suffix longer than
 * TP_BPE_AFFIX_MAX. At byte level a byte whose initial symbol (with its prefix/suffix) has no token is
 * handled as HF's merge_word handles its rendered char (byte_fallback, unk, or dropped). */
tp_bpe *tp_bpe_new(const uint8_t *const *tokens, const uint32_t *lens, uint32_t n_tokens,
                   const tp_merge *merges, uint32_t n_merges, const tp_bpe_options *options);
void tp_bpe_free(tp_bpe *bpe);

tp_bpe_scratch *tp_bpe_scratch_new(void);
/* The word caches the scratch reads (tp_word_cache.h): the pipeline marks a pool slot's scratch pooled and
 * settles it between the pool's rounds. */
tp_word_caches *tp_bpe_scratch_caches(tp_bpe_scratch *scratch);
void tp_bpe_scratch_free(tp_bpe_scratch *scratch);
/* The model's word cache that pool threads share (tp_caches_begin). */
tp_word_cache *tp_bpe_shared_cache(const tp_bpe *bpe);
/* The pieces the model cuts a word into before merging them as words of their own (a char-level vocabulary
 * that marks word starts, as SentencePiece's ▁, in which no merge joins across a cut: see choose_cut), in
 * order, at most tp_bpe_cut_bound(bpe, len) of them; 1 (the word itself) when it is not cut. Merging the
 * pieces one by one gives the word's tokens. */
size_t tp_bpe_cut(const tp_bpe *bpe, const uint8_t *word, size_t len, const uint8_t **pieces, size_t *lens);
size_t tp_bpe_cut_bound(const tp_bpe *bpe, size_t len);
int tp_bpe_cuts(const tp_bpe *bpe); /* whether any word is cut */
/* The longest word worth looking for in the word cache among words given to the model whole (rendered or
 * prefixed ones): a word the model cuts is cached as its pieces. */
size_t tp_bpe_longest_cached(const tp_bpe *bpe);

/* Encode n words (rendered pieces) together, so their table lookups overlap in memory. hashes: the
 * words' tp_hash_bytes when the caller has them, else NULL. Returns 0, or -1 on OOM. */
int tp_bpe_encode_words(const tp_bpe *bpe, tp_bpe_scratch *scratch, const uint8_t *const *words,
                        const size_t *lens, const uint64_t *hashes, size_t n, tp_words *out);

#endif
