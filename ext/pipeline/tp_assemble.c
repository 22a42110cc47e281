/* Truncation, pair layout and padding after the pipeline, as tokenizers' post_process does them:
 * truncate_encodings (utils/truncation.rs), Encoding::truncate / merge_with / pad (encoding.rs). */
#include "tp_assemble.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t start, end;
} span;

typedef struct {
    span *items;
    size_t n, cap;
} spans;

/* Per chunk: the raw tokens of A and B and their windows, reused item after item. */
typedef struct {
    tp_columns a, b;
    spans wa, wb;
} scratch;

static void scratch_free(scratch *s) {
    tp_columns_free(&s->a);
    tp_columns_free(&s->b);
    free(s->wa.items);
    free(s->wb.items);
}

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
            if (a->p->trim_lead) tp_trim_offsets(a->p, out, first, out->n);
            if (main ? side->main_range : side->window_range) {
                range[0] = (int64_t)first - enc_start;
                range[1] = (int64_t)out->n - enc_start;
            }
        }
        tp_put_specials(out, tokens, count);
    }
    return 0;
}

static int put_encoding(const tp_assembly *a, tp_assembled *out, const tp_side *sides, const scratch *s,
                        size_t ia, size_t ib, int is_pair, int main) {
    if (out->n_encodings == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 64;
        tp_encoding *grown = realloc(out->encodings, cap * sizeof(tp_encoding));
        if (!grown) return -1;
        out->encodings = grown;
        out->cap = cap;
    }
    tp_encoding *e = &out->encodings[out->n_encodings++];
    *e = (tp_encoding){.start = (int64_t)out->tokens.n, .ranges = {-1, -1, -1, -1}, .main = main};
    if (put_part(a, &out->tokens, &sides[0], ia == 0, &s->a, s->wa.items[ia], e->start, &e->ranges[0])) return -1;
    e->split = (int64_t)out->tokens.n;
    if (is_pair &&
        put_part(a, &out->tokens, &sides[1], ib == 0, &s->b, s->wb.items[ib], e->start, &e->ranges[2])) return -1;
    e->end = (int64_t)out->tokens.n;
    return 0;
}

typedef struct {
    const tp_assembly *a;
    const uint8_t *const *pieces;
    const size_t *piece_lens, *bounds;
    const uint8_t *is_pair;
    const size_t *chunk_start;
    tp_assembled *chunks;
    int64_t *windows;
    int pretokenized, add_special;
} assemble_job;

/* Sequence `side` of item t: its pieces encoded one after another; pre-tokenized, each piece is a word
 * (word id = its index, offsets within it), as stock encodes a pre-tokenized sequence. */
static int encode_side(const assemble_job *job, tp_workspace *ws, size_t t, int side, tp_columns *c) {
    c->n = 0;
    size_t from = job->bounds[2 * t + side], to = job->bounds[2 * t + side + 1];
    for (size_t k = from; k < to; k++) {
        size_t first = c->n;
        if (tp_encode_sequence(job->a->p, ws, job->pieces[k], job->piece_lens[k], c)) return -1;
        if (job->pretokenized)
            for (size_t r = first; r < c->n; r++) c->words[r] = (int32_t)(k - from);
    }
    return 0;
}

static int assemble_item(const assemble_job *job, tp_workspace *ws, scratch *s, size_t t, tp_assembled *out) {
    const tp_assembly *a = job->a;
    int is_pair = job->is_pair[t], code;
    if (encode_side(job, ws, t, 0, &s->a) || encode_side(job, ws, t, 1, &s->b)) return -1;
    size_t ta, tb;
    if ((code = targets(a, s->a.n, s->b.n, is_pair, job->add_special, &ta, &tb))) return code;
    if ((code = cut(&s->wa, s->a.n, ta, a->stride, a->truncate_left))) return code;
    if ((code = cut(&s->wb, s->b.n, tb, a->stride, a->truncate_left))) return code;
    const tp_side *sides = is_pair ? a->pair[job->add_special] : &a->single[job->add_special];
    size_t na = a->main_only ? 0 : s->wa.n - 1, nb = a->main_only ? 0 : s->wb.n - 1;
    job->windows[2 * t] = (int64_t)na;
    job->windows[2 * t + 1] = is_pair ? (int64_t)nb : -1;
    if (!is_pair) nb = 0;
    if (put_encoding(a, out, sides, s, 0, 0, is_pair, 1)) return -1;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 0; j <= nb; j++)
            if (put_encoding(a, out, sides, s, i, j, is_pair, 0)) return -1;
    for (size_t j = 1; j <= nb; j++)
        if (put_encoding(a, out, sides, s, 0, j, is_pair, 0)) return -1;
    return 0;
}

static int assemble_chunk(void *arg, tp_workspace *ws, size_t chunk) {
    assemble_job *job = arg;
    scratch s;
    memset(&s, 0, sizeof(s));
    int code = 0;
    for (size_t t = job->chunk_start[chunk]; t < job->chunk_start[chunk + 1] && !code; t++)
        code = assemble_item(job, ws, &s, t, &job->chunks[chunk]);
    scratch_free(&s);
    return code;
}

void tp_assembled_free(tp_assembled *chunks, size_t n) {
    for (size_t i = 0; chunks && i < n; i++) {
        tp_columns_free(&chunks[i].tokens);
        free(chunks[i].encodings);
    }
    free(chunks);
}

int tp_assemble_batch(const tp_assembly *a, tp_workspace **workspaces, const uint8_t *const *pieces,
                      const size_t *piece_lens, const size_t *bounds, const uint8_t *is_pair, size_t n,
                      int pretokenized, int add_special, tp_assembled **out, size_t *n_out, int64_t *windows) {
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
    tp_assembled *chunks = calloc(plan.n_chunks, sizeof(tp_assembled));
    if (!chunks) { free(plan.chunk_start); return -1; }
    assemble_job job = {a, pieces, piece_lens, bounds, is_pair, plan.chunk_start, chunks, windows, pretokenized,
                        add_special};
    code = tp_run_chunks(workspaces, &plan, assemble_chunk, &job);
    free(plan.chunk_start);
    if (code) {
        tp_assembled_free(chunks, plan.n_chunks);
        return code;
    }
    *out = chunks;
    *n_out = plan.n_chunks;
    return 0;
}

/* pad_encodings: Fixed(length) or the longest main encoding (overflow does not count), rounded up. */
size_t tp_padding_target(const tp_assembled *chunks, size_t n_chunks, const tp_padding *padding) {
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

void tp_assembled_sizes(const tp_assembled *chunks, size_t n_chunks, size_t target, size_t *rows,
                        size_t *n_encodings) {
    *rows = *n_encodings = 0;
    for (size_t c = 0; c < n_chunks; c++) {
        *n_encodings += chunks[c].n_encodings;
        for (size_t e = 0; e < chunks[c].n_encodings; e++) {
            size_t len = (size_t)(chunks[c].encodings[e].end - chunks[c].encodings[e].start);
            *rows += len > target ? len : target;
        }
    }
}

static void put_padding(const tp_padding *padding, tp_columns *out, uint8_t *attention, size_t at, size_t n) {
    for (size_t k = at; k < at + n; k++) {
        out->ids[k] = padding->id;
        out->type_ids[k] = padding->type_id;
        if (out->wide_offsets) out->wide_offsets[2 * k] = out->wide_offsets[2 * k + 1] = 0;
        else out->offsets[2 * k] = out->offsets[2 * k + 1] = 0;
        out->special[k] = 1;
        out->words[k] = -1;
        attention[k] = 0;
    }
}

void tp_assembled_gather(const tp_assembled *chunks, size_t n_chunks, const tp_padding *padding, size_t target,
                         tp_columns *out, uint8_t *attention, tp_encoding *encodings) {
    size_t at = 0, index = 0;
    for (size_t c = 0; c < n_chunks; c++) {
        const tp_columns *src = &chunks[c].tokens;
        for (size_t e = 0; e < chunks[c].n_encodings; e++) {
            tp_encoding enc = chunks[c].encodings[e];
            size_t len = (size_t)(enc.end - enc.start), pad = len < target ? target - len : 0;
            size_t lead = padding->left ? pad : 0, first = at + lead;
            if (lead) put_padding(padding, out, attention, at, lead);
            memcpy(out->ids + first, src->ids + enc.start, len * 4);
            memcpy(out->type_ids + first, src->type_ids + enc.start, len * 4);
            if (out->wide_offsets) tp_widen(out->wide_offsets + 2 * first, src->offsets + 2 * enc.start, 2 * len);
            else memcpy(out->offsets + 2 * first, src->offsets + 2 * enc.start, len * 8);
            memcpy(out->special + first, src->special + enc.start, len);
            memcpy(out->words + first, src->words + enc.start, len * 4);
            memset(attention + first, 1, len);
            if (pad > lead) put_padding(padding, out, attention, first + len, pad - lead);
            for (int r = 0; r < 4; r++)
                if (enc.ranges[r] >= 0) enc.ranges[r] += (int64_t)lead;
            enc.split = (int64_t)first + (enc.split - enc.start);
            enc.start = (int64_t)at;
            enc.end = (int64_t)(at + len + pad);
            encodings[index++] = enc;
            at += len + pad;
        }
    }
}
