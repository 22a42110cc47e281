/* Counting pre-tokens: a byte-string -> occurrences table fed from texts and their piece offsets.
 *
 * Pieces arrive as char offsets into UTF-8 texts (the engine's batch output); each piece's bytes are
 * counted. Tables from several threads merge by addition, so the result is independent of how the
 * texts were spread over threads.
 */
#ifndef TT_PIECE_COUNT_H
#define TT_PIECE_COUNT_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_counts tt_counts;

tt_counts *tt_counts_new(void);
void tt_counts_free(tt_counts *c);

/* Adds `times` to the count of one byte string. 0, or -1 on OOM. */
int tt_counts_add(tt_counts *c, const uint8_t *s, size_t len, int64_t times);

/* Counts every piece [char_offsets[2i], char_offsets[2i+1]) of one valid UTF-8 text. 0, or -1 on OOM
 * or an offset beyond the text. */
int tt_counts_add_pieces(tt_counts *c, const uint8_t *text, size_t len, const int64_t *char_offsets,
                         size_t n_pieces);

/* dst += src. 0, or -1 on OOM. */
int tt_counts_merge(tt_counts *dst, const tt_counts *src);

/* Entries in insertion order: bytes are contiguous (entry i = bytes[offsets[i] .. offsets[i+1])). */
size_t tt_counts_size(const tt_counts *c);
size_t tt_counts_total_bytes(const tt_counts *c);
void tt_counts_export(const tt_counts *c, uint8_t *bytes, int64_t *offsets, int64_t *counts);

#endif
