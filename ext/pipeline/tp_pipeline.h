/* The native encode pipeline for single sequences (tp_assemble adds pairs, truncation and padding),
 * as stock's encode orders it:
 *   added-token split (normalized=false tokens, raw text) -> per gap: normalizer -> added-token split
 *   (normalized=true tokens, normalized text) -> per stretch: pre-tokenizer program -> model
 *   -> post-processor
 * over a batch of UTF-8 texts, spread over the process thread pool, into flat columns. Offsets map
 * back through the normalizer's byte alignment. */
#ifndef TP_PIPELINE_H
#define TP_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "tagtok.h"
#include "tp_added.h"
#include "tp_bpe.h"
#include "tp_normalize.h"
#include "tp_unigram.h"
#include "tp_wordpiece.h"

/* A post-processor token; written with word -2 - name (name: its token string's index in the caller's
 * table of post-processor token strings). */
typedef struct {
    uint32_t id, type_id;
    int32_t name;
} tp_special;

typedef struct {
    /* must render bytelevel or none (bytes go to the model unchanged); NULL: stretches are replayed */
    const tt_program *program;
    const tt_program *program_later; /* for stretches not at the text's start (Metaspace prepend_scheme
                                      * "first" there is "never"); NULL: program */
    const tp_bpe *bpe;
    const tp_added *added;     /* NULL: no added tokens */
    const tp_special *before, *after; /* post-processor tokens around the sequence */
    size_t n_before, n_after;
    uint32_t type_id;          /* type id of the sequence's own tokens */
    /* The model's tables index its tokens densely; model_ids[index] is the vocabulary id it emits (NULL:
     * index and id are the same), so sparse ids cost nothing per missing id. */
    const uint32_t *model_ids;
    /* ByteLevel offset trimming (trim_offsets): per named token, how many leading (low byte) and trailing
     * (high byte) chars of its string are spaces (trim_len entries, one load a token); NULL when off.
     * trim_ids NULL: entry k is id k; else the entries' ids, ascending. */
    const uint16_t *trim_of;
    const uint32_t *trim_ids;
    size_t trim_len;
    int trim_add_prefix_space;
    /* Metaspace rendering: every space of a piece, and its prefix, become these bytes (n_replacement
     * > 0 only when the program renders Metaspace). */
    uint8_t replacement[4];
    size_t n_replacement;
    const tp_normalizer *normalizer; /* NULL: none */
    const tp_wordpiece *wordpiece;   /* non-NULL: the model instead of bpe */
    const tp_unigram *unigram;       /* non-NULL: the model instead of bpe */
    /* Replay (program NULL): each text comes with its own tokens as stock encoded them (tp_text.replay);
     * vocabulary id k spells replay_bytes[replay_starts[k], replay_starts[k + 1]) (empty: no spelling),
     * for k < n_replay_ids. */
    const uint8_t *replay_bytes;
    const uint32_t *replay_starts;
    size_t n_replay_ids;
} tp_pipeline;

/* A stripping added token's own trim: HF's trim_offsets reads its token string, the text it matched
 * (tp_added_space_runs), so its counts vary from match to match. */
typedef struct {
    size_t row;            /* its row in the columns */
    uint32_t lead, trail;
} tp_strip_trim;

/* Output columns; token k of the batch. words[k] < 0 for tokens that are no word: -2 - name for
 * post-processor tokens (see tp_special), -1 for padding (tp_assemble). */
typedef struct {
    uint32_t *ids, *type_ids;
    uint32_t *offsets;  /* 2 per token: char offsets into its text (at most TT_MAX_TEXT_BYTES bytes) */
    int64_t *wide_offsets; /* output columns only (tp_encode_batch, tp_assemble_batch): offsets widened to
                            * int64, instead of offsets, for a caller whose arrays hand them out as int64 */
    uint8_t *special;
    int32_t *words;
    size_t n, cap;
    int no_offsets;     /* set before the first reserve: offsets stay NULL and are never computed */
    int layout;         /* likewise: type ids and special flags stay NULL (the caller knows them from the
                         * post-processor's layout) */
    int no_words;       /* likewise: word indices stay NULL */
    uint8_t *block;     /* non-NULL: every column lives in this one allocation (tp_encode_batch's output) */
    tp_strip_trim *strips; /* while offsets are trimmed: the trims of its stripping added tokens, by row */
    size_t n_strips, strips_cap;
} tp_columns;

void tp_columns_free(tp_columns *columns);
int tp_columns_reserve(tp_columns *columns, size_t extra); /* room for `extra` more tokens; -1 on OOM */
/* Switch no_offsets, layout and no_words (see tp_columns) from here on; -1 on OOM. */
int tp_columns_keep(tp_columns *columns, int offsets, int layout, int words);
/* Appends post-processor tokens (special, no word, offsets (0, 0)); room must be reserved. */
void tp_put_specials(tp_columns *columns, const tp_special *specials, size_t n);

/* Per-slot working memory of one pipeline (slot as in tp_pool); created lazily, freed with it. pooled: a
 * pool slot's, which shares the models' word caches with the other slots of the run. */
typedef struct tp_workspace tp_workspace;
tp_workspace *tp_workspace_new(int pooled);
void tp_workspace_free(tp_workspace *ws);
/* The workspace's output columns: a batch's tokens from this slot's chunks (run rounds reset n to 0), kept
 * between calls (no page faults for the next batch) unless a batch made them larger than tp_keep_output
 * allows. */
tp_columns *tp_workspace_output(tp_workspace *ws);
/* Two columns of one item's sequences (tp_assemble), kept like the output's. */
tp_columns *tp_workspace_sequences(tp_workspace *ws);
/* After a batch: frees what each workspace's columns grew beyond what is worth keeping. */
void tp_keep_output(tp_workspace **workspaces);

/* A text as the caller holds it: UTF-8 bytes (unit 0: len bytes), or len code points of `unit` (1, 2 or 4)
 * bytes each, transcoded to UTF-8 on the worker thread. */
typedef struct {
    const void *data;
    size_t len;
    int unit;
    const uint32_t *replay; /* replayed pipelines only: the text's own tokens (no post-processor ones) */
    size_t n_replay;
    const uint32_t *given;  /* the matches given with the text: per REPLACE_GIVEN step of the normalizer (tp_norm_give),
                             * then for the program's SPLIT_GIVEN step, a count and [start, end) char pairs of the
                             * normalized text (tp_given_steps blocks in all) */
} tp_text;

/* How many blocks of given matches a text of this pipeline holds (tp_text.given). */
size_t tp_given_steps(const tp_pipeline *p);
/* The matches given with the text the workspace encodes next (tp_text.given's layout; NULL: none), until the
 * next call. */
void tp_workspace_give(tp_workspace *ws, const tp_pipeline *p, const uint32_t *given);

#define TP_TEXT_SURROGATE 2 /* a text holds a surrogate code point: it has no UTF-8 form */
#define TP_REPLAY_MISMATCH 3 /* a replayed text's tokens do not spell its stretches, or miss its added tokens */
#define TP_STOCK_DECIDES 4 /* a regex gave up on a text (TT_GAVE_UP), or the matches given with it do not fit it:
                           * stock, not the pipeline, encodes the call */

enum { TP_OFFSETS_NONE, TP_OFFSETS_NARROW, TP_OFFSETS_WIDE }; /* which offsets column an output gets */

/* Encode n texts into out, its columns in one output block of their size (tp_block.h; free with
 * tp_columns_free): offsets (TP_OFFSETS_*: none, out->offsets or out->wide_offsets), word indices only when
 * `words` (else NULL), type ids NULL when the post-processor's layout makes every one 0. lengths[i] receives
 * the token count of text i. workspaces: tp_pool_threads() entries (NULL entries are created on demand). Safe to call from
 * several threads at once. Returns 0, -1 on OOM, TP_TEXT_SURROGATE, TP_REPLAY_MISMATCH or TP_STOCK_DECIDES (then
 * lengths[i] is -1 for each text stock must encode, and no output is made). */
int tp_encode_batch(const tp_pipeline *p, tp_workspace **workspaces, const tp_text *texts, size_t n, int add_special,
                    int offsets, int words, tp_columns *out, int64_t *lengths);

/* to[k] = from[k] for k < n: narrow offsets into an int64 column. */
void tp_widen(int64_t *to, const uint32_t *from, size_t n);

/* One text's own tokens (no post-processor tokens, no offset trimming), appended to c. -1 on OOM. Not for
 * replayed pipelines (their tokens come with the texts of tp_encode_batch). */
int tp_encode_sequence(const tp_pipeline *p, tp_workspace *ws, const uint8_t *text, size_t len, tp_columns *c);
/* ByteLevel trim_offsets over tokens [first, end) of c, token `first` counting as the sequence start; they
 * are rows [src_first, src_first + end - first) of src (maybe c itself), whose strips they take. */
void tp_trim_offsets(const tp_pipeline *p, tp_columns *c, size_t first, size_t end, const tp_columns *src,
                     size_t src_first);

/* The batch driver: items cut into chunks of consecutive items (by byte size), chunks claimed by the pool
 * threads; work(job, ws, chunk) handles items [chunk_start[chunk], chunk_start[chunk + 1]) and returns
 * 0 or a nonzero code (the first one stops the batch and is what tp_run_chunks returns). */
typedef struct {
    size_t *chunk_start; /* n_chunks + 1 item indices; free() it */
    size_t n_chunks;
    int threads;
} tp_plan;
typedef int (*tp_chunk_work)(void *job, tp_workspace *ws, size_t chunk);
int tp_plan_chunks(const size_t *sizes, size_t n, tp_plan *plan);
int tp_run_chunks(tp_workspace **workspaces, const tp_plan *plan, tp_chunk_work work, void *job);
/* tp_run_chunks(work), then between(job) once (its nonzero code stops the batch), then finish(job, ws, chunk)
 * for every chunk on the same threads, each slot's workspace unchanged since the first round. */
int tp_run_chunks_twice(tp_workspace **workspaces, const tp_plan *plan, tp_chunk_work work, int (*between)(void *job),
                        tp_chunk_work finish, void *job);

#endif
