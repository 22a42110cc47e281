/* Truncation, pair layout and padding after the pipeline, as tokenizers' post_process does them:
 * truncate_encodings (utils/truncation.rs), Encoding::truncate / merge_with / pad (encoding.rs). */
#include "tp_assemble.h"

#include <stdlib.h>
#include <string.h>

#include "tp_block.h"

typedef struct {
    size_t start, end;
} span;

/* Per chunk: the windows of A and B, reused item after item. */
typedef struct {
    span *items;
    size_t n, cap;
} spans;

static int spans_push(spans *s, size_t start, size_t end) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        span *grown = realloc(s->items, cap * sizeof(span));
        if (!grown) return -1;
        s->items = grown;
        s->cap = cap;
    }
    s->items[s->n++] = (span){start, end};
    return 0;
}

#define KEEP_ALL SIZE_MAX

/* Encoding::truncate: the main window first, then the overflow windows. */
static int cut(spans *w, size_t len, size_t max_len, size_t stride, int left) {
    w->n = 0;
    if (max_len >= len) return spans_push(w, 0, len);
    if (max_len == 0) return spans_push(w, 0, 0) || spans_push(w, 0, len);
    if (stride >= max_len) return TP_STOCK_RAISES; /* stock's assertion */
    size_t step = max_len - stride;
    if (!left) {
        for (size_t start = 0;; start += step) {
            size_t stop = start + max_len < len ? start + max_len : len;
            if (spans_push(w, start, stop)) return -1;
            if (stop == len) return 0;
        }
    }
    for (size_t last = len - 1;; last -= step) {
        size_t stop = last + 1, start = stop > max_len ? stop - max_len : 0;
        if (spans_push(w, start, stop)) return -1;
        if (start == 0 || last < step) return 0;
    }
}

/* truncate_encodings: the length each sequence is cut to (KEEP_ALL: untouched), or TP_STOCK_RAISES. */
static int targets(const tp_assembly *a, size_t la, size_t lb, int is_pair, int add_special, size_t *ta,
                   size_t *tb) {
    *ta = *tb = KEEP_ALL;
    if (!a->truncate) return 0;
    size_t added = is_pair ? a->added_pair : a->added_single, max = a->max_length;
    if (add_special && added > 0) {
        if (max < added) return 0; /* stock's usize subtraction wraps: nothing is ever that long */
        max -= added;
    }
    if (max == 0) {
        *ta = *tb = 0;
        return 0;
    }
    size_t total = la + lb;
    if (total <= max) return 0;
    size_t excess = total - max;
    if (a->strategy == TP_LONGEST_FIRST) {
        if (!is_pair) {
            *ta = max;
            return 0;
        }
        size_t n1 = la < lb ? la : lb, n2;
        n2 = n1 > max ? n1 : (n1 > max - n1 ? n1 : max - n1);
        if (n1 + n2 > max) {
            n1 = max / 2;
            n2 = n1 + max % 2;
        }
        *ta = la > lb ? n2 : n1;
        *tb = la > lb ? n1 : n2;
        return 0;
    }
    if (a->strategy == TP_ONLY_SECOND && !is_pair) return TP_STOCK_RAISES; /* second sequence not provided */
    size_t target = a->strategy == TP_ONLY_FIRST ? la : lb;
    if (target <= excess) return TP_STOCK_RAISES; /* sequence too short */
    *(a->strategy == TP_ONLY_FIRST ? ta : tb) = target - excess;
    return 0;
}

/* Writes one sequence's part of an encoding: its post-processor tokens around window w of src. */
static int put_part(const tp_assembly *a, tp_columns *out, const tp_side *side, int main, const tp_columns *src,
                    span w, int64_t enc_start, int64_t *range) {
    size_t n = w.end - w.start;
    if (tp_columns_reserve(out, side->n_before + n + side->n_after)) return -1;
    for (int phase = 0; phase < 2; phase++) {
        const tp_special *tokens = phase ? side->after : side->before;
        size_t count = phase ? side->n_after : side->n_before;
        if (phase) {
            size_t first = out->n;
            uint32_t type = main ? side->main_type : side->window_type;
            memcpy(out->ids + first, src->ids + w.start, n * 4);
            memcpy(out->offsets + 2 * first, src->offsets + 2 * w.start, n * 8);
            memcpy(out->words + first, src->words + w.start, n * 4);
            memset(out->special + first, 0, n);
            for (size_t k = first; k < first + n; k++) out->type_ids[k] = type;
            out->n += n;
            if (a->p->trim_of) tp_trim_offsets(a->p, out, first, out->n, src, w.start);
            if (main ? side->main_range : side->window_range) {
                range[0] = (int64_t)first - enc_start;
                range[1] = (int64_t)out->n - enc_start;
            }
        }
        tp_put_specials(out, tokens, count);
    }
    return 0;
}

/* One chunk's encodings: their tokens in its workspace's output columns (records count rows there), then
 * where they go in the batch's output, once every chunk's size is known. */
typedef struct {
    tp_workspace *ws;
    tp_encoding *encodings;
    size_t n_encodings, cap;
    size_t at, index; /* the output row and record of its first encoding */
} chunk_out;

static int put_encoding(const tp_assembly *a, chunk_out *out, tp_columns *tokens, const tp_side *sides,
                        const tp_columns *seq, const spans *wa, const spans *wb, size_t ia, size_t ib, int is_pair,
                        int main) {
    if (out->n_encodings == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 64;
        tp_encoding *grown = realloc(out->encodings, cap * sizeof(tp_encoding));
        if (!grown) return -1;
        out->encodings = grown;
        out->cap = cap;
    }
    tp_encoding *e = &out->encodings[out->n_encodings++];
    *e = (tp_encoding){.start = (int64_t)tokens->n, .ranges = {-1, -1, -1, -1}, .main = main};
    if (put_part(a, tokens, &sides[0], ia == 0, &seq[0], wa->items[ia], e->start, &e->ranges[0])) return -1;
    e->split = (int64_t)tokens->n;
    if (is_pair && put_part(a, tokens, &sides[1], ib == 0, &seq[1], wb->items[ib], e->start, &e->ranges[2]))
        return -1;
    e->end = (int64_t)tokens->n;
    return 0;
}

typedef struct {
    const tp_assembly *a;
    const tp_padding *padding;
    const uint8_t *const *pieces;
    const size_t *piece_lens, *bounds;
    const uint32_t *const *given;
    const uint8_t *is_pair;
    const size_t *chunk_start;
    size_t n_chunks;
    chunk_out *chunks;
    int64_t *windows;
    int pretokenized, add_special, columnar;
    size_t target;    /* the padded length of every encoding (0: no padding) */
    tp_assembled *out;
} assemble_job;

/* Sequence `side` of item t: its pieces encoded one after another; pre-tokenized, each piece is a word
 * (word id = its index, offsets within it), as stock encodes a pre-tokenized sequence. */
static int encode_side(const assemble_job *job, tp_workspace *ws, size_t t, int side, tp_columns *c) {
    c->n = c->n_strips = 0;
    size_t from = job->bounds[2 * t + side], to = job->bounds[2 * t + side + 1];
    for (size_t k = from; k < to; k++) {
        size_t first = c->n;
        tp_workspace_give(ws, job->a->p, job->given ? job->given[k] : NULL);
        int code = tp_encode_sequence(job->a->p, ws, job->pieces[k], job->piece_lens[k], c);
        tp_workspace_give(ws, job->a->p, NULL);
        if (code) return code;
        if (job->pretokenized)
            for (size_t r = first; r < c->n; r++) c->words[r] = (int32_t)(k - from);
    }
    return 0;
}

static int assemble_item(const assemble_job *job, tp_workspace *ws, spans *wa, spans *wb, size_t t,
                         chunk_out *out) {
    const tp_assembly *a = job->a;
    tp_columns *seq = tp_workspace_sequences(ws), *tokens = tp_workspace_output(ws);
    int is_pair = job->is_pair[t], code;
    if ((code = encode_side(job, ws, t, 0, &seq[0])) || (code = encode_side(job, ws, t, 1, &seq[1]))) return code;
    size_t ta, tb;
    if ((code = targets(a, seq[0].n, seq[1].n, is_pair, job->add_special, &ta, &tb))) return code;
    if ((code = cut(wa, seq[0].n, ta, a->stride, a->truncate_left))) return code;
    if ((code = cut(wb, seq[1].n, tb, a->stride, a->truncate_left))) return code;
    const tp_side *sides = is_pair ? a->pair[job->add_special] : &a->single[job->add_special];
    size_t na = a->main_only ? 0 : wa->n - 1, nb = a->main_only ? 0 : wb->n - 1;
    job->windows[2 * t] = (int64_t)na;
    job->windows[2 * t + 1] = is_pair ? (int64_t)nb : -1;
    if (!is_pair) nb = 0;
    if (put_encoding(a, out, tokens, sides, seq, wa, wb, 0, 0, is_pair, 1)) return -1;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 0; j <= nb; j++)
            if (put_encoding(a, out, tokens, sides, seq, wa, wb, i, j, is_pair, 0)) return -1;
    for (size_t j = 1; j <= nb; j++)
        if (put_encoding(a, out, tokens, sides, seq, wa, wb, 0, j, is_pair, 0)) return -1;
    return 0;
}

static int assemble_chunk(void *arg, tp_workspace *ws, size_t chunk) {
    assemble_job *job = arg;
    tp_columns *tokens = tp_workspace_output(ws);
    if (tokens->n == 0 && tp_columns_keep(tokens, 1, 0, 1)) return -1;
    job->chunks[chunk].ws = ws;
    spans wa = {0}, wb = {0};
    int code = 0;
    for (size_t t = job->chunk_start[chunk]; t < job->chunk_start[chunk + 1] && !code; t++)
        code = assemble_item(job, ws, &wa, &wb, t, &job->chunks[chunk]);
    free(wa.items);
    free(wb.items);
    return code;
}

/* pad_encodings: Fixed(length) or the longest main encoding (overflow does not count), rounded up. */
static size_t padding_target(const chunk_out *chunks, size_t n_chunks, const tp_padding *padding) {
    if (!padding->enabled) return 0;
    size_t target = padding->fixed ? padding->length : 0;
    if (!padding->fixed)
        for (size_t c = 0; c < n_chunks; c++)
            for (size_t e = 0; e < chunks[c].n_encodings; e++) {
                const tp_encoding *enc = &chunks[c].encodings[e];
                size_t len = (size_t)(enc->end - enc->start);
                if (enc->main && len > target) target = len;
            }
    if (padding->multiple > 0 && target % padding->multiple) target += padding->multiple - target % padding->multiple;
    return target;
}

/* Between the rounds: where each chunk goes, and the output block (big-alignment columns first). */
static int alloc_output(void *arg) {
    assemble_job *job = arg;
    size_t target = job->target = padding_target(job->chunks, job->n_chunks, job->padding), rows = 0, index = 0;
    for (size_t c = 0; c < job->n_chunks; c++) {
        chunk_out *chunk = &job->chunks[c];
        chunk->at = rows;
        chunk->index = index;
        index += chunk->n_encodings;
        for (size_t e = 0; e < chunk->n_encodings; e++) {
            size_t len = (size_t)(chunk->encodings[e].end - chunk->encodings[e].start);
            rows += job->columnar && len < target ? target : len;
        }
    }
    size_t records = index * sizeof(tp_encoding), offsets = 8 * rows * (job->columnar ? 2 : 1);
    size_t size = records + offsets + 12 * rows + rows + (job->columnar ? rows : 0);
    uint8_t *block = tp_block_alloc(size + 1);
    if (!block) return -1;
    tp_assembled *out = job->out;
    *out = (tp_assembled){.tokens = {.block = block, .n = rows, .cap = rows}, .n_encodings = index, .size = size};
    out->encodings = (tp_encoding *)block;
    uint8_t *at = block + records;
    if (job->columnar) out->tokens.wide_offsets = (int64_t *)at;
    else out->tokens.offsets = (uint32_t *)at;
    at += offsets;
    out->tokens.ids = (uint32_t *)at;
    out->tokens.type_ids = out->tokens.ids + rows;
    out->tokens.words = (int32_t *)(out->tokens.type_ids + rows);
    out->tokens.special = (uint8_t *)(out->tokens.words + rows);
    out->attention = job->columnar ? out->tokens.special + rows : NULL;
    return 0;
}

/* Padding tokens of a columnar output. */
static void put_padding(const tp_padding *padding, tp_columns *out, uint8_t *attention, size_t at, size_t n) {
    for (size_t k = at; k < at + n; k++) {
        out->ids[k] = padding->id;
        out->type_ids[k] = padding->type_id;
        out->wide_offsets[2 * k] = out->wide_offsets[2 * k + 1] = 0;
        out->special[k] = 1;
        out->words[k] = -1;
        attention[k] = 0;
    }
}

/* The second round: a chunk's encodings into the output, their padding stored when it is columnar. */
static int gather_chunk(void *arg, tp_workspace *ws, size_t c) {
    (void)ws;
    const assemble_job *job = arg;
    const tp_padding *padding = job->padding;
    const chunk_out *chunk = &job->chunks[c];
    const tp_columns *src = tp_workspace_output(chunk->ws);
    tp_columns *out = &job->out->tokens;
    uint8_t *attention = job->out->attention;
    size_t at = chunk->at, target = job->target;
    for (size_t e = 0; e < chunk->n_encodings; e++) {
        tp_encoding enc = chunk->encodings[e];
        size_t len = (size_t)(enc.end - enc.start), pad = len < target ? target - len : 0;
        size_t lead = padding->left ? pad : 0;
        for (int r = 0; r < 4; r++)
            if (enc.ranges[r] >= 0) enc.ranges[r] += (int64_t)lead;
        enc.lead = enc.trail = 0;
        if (!job->columnar) { /* the padding is counted, not stored */
            enc.lead = (int64_t)lead;
            enc.trail = (int64_t)(pad - lead);
            pad = lead = 0;
        }
        size_t first = at + lead;
        if (lead) put_padding(padding, out, attention, at, lead);
        memcpy(out->ids + first, src->ids + enc.start, len * 4);
        memcpy(out->type_ids + first, src->type_ids + enc.start, len * 4);
        if (out->wide_offsets) tp_widen(out->wide_offsets + 2 * first, src->offsets + 2 * enc.start, 2 * len);
        else memcpy(out->offsets + 2 * first, src->offsets + 2 * enc.start, len * 8);
        memcpy(out->special + first, src->special + enc.start, len);
        memcpy(out->words + first, src->words + enc.start, len * 4);
        if (attention) memset(attention + first, 1, len);
        if (pad > lead) put_padding(padding, out, attention, first + len, pad - lead);
        enc.split = (int64_t)first + (enc.split - enc.start);
        enc.start = (int64_t)at;
        enc.end = (int64_t)(at + len + pad);
        job->out->encodings[chunk->index + e] = enc;
        at += len + pad;
    }
    return 0;
}

int tp_assemble_batch(const tp_assembly *a, const tp_padding *padding, tp_workspace **workspaces,
                      const uint8_t *const *pieces, const size_t *piece_lens, const size_t *bounds,
                      const uint32_t *const *given, const uint8_t *is_pair, size_t n, int pretokenized,
                      int add_special, int columnar, tp_assembled *out, int64_t *windows) {
    memset(out, 0, sizeof(*out));
    size_t *sizes = malloc((n ? n : 1) * sizeof(size_t));
    if (!sizes) return -1;
    for (size_t i = 0; i < n; i++) {
        sizes[i] = 0;
        for (size_t k = bounds[2 * i]; k < bounds[2 * i + 2]; k++) sizes[i] += piece_lens[k];
    }
    tp_plan plan;
    int code = tp_plan_chunks(sizes, n, &plan);
    free(sizes);
    if (code) return -1;
    chunk_out *chunks = calloc(plan.n_chunks, sizeof(chunk_out));
    if (!chunks) { free(plan.chunk_start); return -1; }
    assemble_job job = {a, padding, pieces, piece_lens, bounds, given, is_pair, plan.chunk_start, plan.n_chunks, chunks,
                        windows, pretokenized, add_special, columnar, 0, out};
    code = tp_run_chunks_twice(workspaces, &plan, assemble_chunk, alloc_output, gather_chunk, &job);
    tp_keep_output(workspaces);
    for (size_t c = 0; c < plan.n_chunks; c++) free(chunks[c].encodings);
    free(chunks);
    free(plan.chunk_start);
    if (code) {
        tp_block_free(out->tokens.block);
        memset(out, 0, sizeof(*out));
    }
    return code;
}
