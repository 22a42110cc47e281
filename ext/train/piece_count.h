/* Counting pre-tokens: a byte-string -> occurrences table fed from texts and their piece offsets.
 *
 * Pieces arrive as char offsets into UTF-8 texts (the engine's batch output); each piece's bytes are
 * counted. Tables from several threads merge by addition, so the result is independent of how the
 * texts were spread over threads.
 */
#ifndef HF_TAGTOK_PIECE_COUNT_H
#define HF_TAGTOK_PIECE_COUNT_H

#include <stddef.h>
#include <stdint.h>

typedef struct piece_counts piece_counts;

piece_counts *piece_counts_new(void);
void piece_counts_free(piece_counts *c);

/* Adds `times` to the count of one byte string. 0, or -1 on OOM. */
int piece_counts_add(piece_counts *c, const uint8_t *s, size_t len, int64_t times);

/* Counts every piece [char_offsets[2i], char_offsets[2i+1]) of one valid UTF-8 text. 0, or -1 on OOM
 * or an offset beyond the text. */
int piece_counts_add_pieces(piece_counts *c, const uint8_t *text, size_t len, const int64_t *char_offsets,
                         size_t n_pieces);

/* dst += src. 0, or -1 on OOM. */
int piece_counts_merge(piece_counts *dst, const piece_counts *src);

/* Entries in insertion order: bytes are contiguous (entry i = bytes[offsets[i] .. offsets[i+1])). */
size_t piece_counts_size(const piece_counts *c);
size_t piece_counts_total_bytes(const piece_counts *c);
void piece_counts_export(const piece_counts *c, uint8_t *bytes, int64_t *offsets, int64_t *counts);

#endif
