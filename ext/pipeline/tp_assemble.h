/* The post stage after the pipeline: truncation (with overflow windows), the single/pair layout of the
 * post-processor, and padding, for batches of single texts and text pairs.
 *
 * Each batch item is one text or a pair of texts (each maybe pre-tokenized into words). Inside the pool
 * workers, each text is encoded (tp_encode_sequence), cut into windows by truncation, wrapped in its
 * post-processor tokens, and the item's encodings are written out: the main encoding, then its
 * overflowing ones in the order of `tokenizers`' Encoding::merge_with. For a pair with A windows a0 (main), a1..an and B windows b0,
 * b1..bm that order is: for i in 1..n: (ai + b0), (ai + bj for j in 1..m); then (a0 + bj for j in 1..m).
 * (Stock also nests (ai + bj) inside (ai + b0) and (a0 + bj); callers rebuild that from n and m.)
 * Padding needs the batch's longest main encoding, so it is applied in a second round of the workers,
 * which copy their chunks into the batch's output once every chunk's size is known. */
#ifndef TP_ASSEMBLE_H
#define TP_ASSEMBLE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_pipeline.h"

/* How the post-processor wraps one sequence (A or B) of an encoding. */
typedef struct {
    const tp_special *before, *after;
    size_t n_before, n_after;
    uint32_t main_type, window_type;  /* type id of the sequence's own tokens: main encoding / overflow windows */
    uint8_t main_range, window_range; /* 1: the encoding records where the sequence's tokens are */
} tp_side;

enum { TP_LONGEST_FIRST, TP_ONLY_FIRST, TP_ONLY_SECOND };

typedef struct {
    const tp_pipeline *p;  /* encodes each text; its trim tables trim each window */
    tp_side single[2];     /* [add_special] */
    tp_side pair[2][2];    /* [add_special][0: A, 1: B] */
    size_t added_single, added_pair; /* tokens the post-processor adds, taken off max_length */
    int truncate;          /* 0: no truncation */
    size_t max_length, stride;
    int strategy, truncate_left;
    int main_only;         /* 1: no overflow encodings are written (the caller drops them); windows reads 0 */
} tp_assembly;

typedef struct {
    int enabled, fixed;
    size_t length;         /* fixed: pad to this; else to the batch's longest main encoding */
    size_t multiple;       /* 0: none */
    int left;
    uint32_t id, type_id;
} tp_padding;

/* One encoding: rows [start, end) of its chunk (of the final arrays after gathering); the B part starts
 * at row split (end for a single text). ranges: sequence 0 [r0, r1), sequence 1 [r2, r3), relative to
 * the start of the padded encoding, -1 when the encoding does not record that sequence. main: first
 * encoding of its item. lead, trail: padding tokens before and after its rows that the output does not
 * store (see tp_assemble_batch's columnar). */
typedef struct {
    int64_t start, end, split;
    int64_t ranges[4];
    int64_t main, lead, trail;
} tp_encoding;

/* A batch's gathered output, every column in one output block (tokens.block, from tp_block_alloc, which the
 * caller gives back with tp_block_free or adopts; `size` bytes): the token columns (offsets in
 * tokens.wide_offsets or tokens.offsets), attention (0 on padding; NULL when the padding is not stored) and one
 * record per encoding, rows counting from the start of the columns. */
typedef struct {
    tp_columns tokens;
    uint8_t *attention;
    tp_encoding *encodings;
    size_t n_encodings, size;
} tp_assembled;

#define TP_STOCK_RAISES 1 /* an item stock refuses (truncation error or its stride assertion) */

/* Encode n items into *out, padded. Item i's text A is pieces [bounds[2i], bounds[2i+1]), its text B
 * pieces [bounds[2i+1], bounds[2i+2]) (is_pair[i] 0: a single text, B empty). given: per piece the matches
 * given with it (tp_text.given; NULL: none), or NULL for none at all. A text is one piece, or,
 * pretokenized, one piece per word (word ids = piece index, offsets within the piece, as stock).
 * windows[2i], windows[2i+1]: how many overflow windows truncation cut from A and from B (-1 for B of a
 * single text). columnar: the output is for flat arrays, offsets in out->tokens.wide_offsets and the
 * padding stored; else (for views on each encoding) offsets in out->tokens.offsets and only the tokens
 * stored, each record counting the padding around them. Returns 0, -1 on OOM, TP_STOCK_RAISES or
 * TP_STOCK_DECIDES (then *out holds nothing). */
int tp_assemble_batch(const tp_assembly *a, const tp_padding *padding, tp_workspace **workspaces,
                      const uint8_t *const *pieces, const size_t *piece_lens, const size_t *bounds,
                      const uint32_t *const *given, const uint8_t *is_pair, size_t n, int pretokenized,
                      int add_special, int columnar, tp_assembled *out, int64_t *windows);

#endif
