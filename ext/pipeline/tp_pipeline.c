/* Batch driver: texts are cut into chunks, threads claim chunks with an atomic counter, each chunk
 * writes its own columns; the caller copies the chunks, in order, into its final arrays. */
#include "tp_pipeline.h"
#include "tp_engine.h"

#include <stdatomic.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "tp_block.h"
#include "tp_pool.h"
#include "tp_word_cache.h"
#include "utf8.h"

#define GROUP_PIECES 64 /* pieces whose words go to the model together (their lookups overlap) */
/* A flag of the pieces cut_long_words makes, besides the engine's (TT_PIECE_*): the piece goes on with the
 * previous piece's word (its tokens take that word's number). */
#define PIECE_SAME_WORD (1u << 31)

/* A piece as its model word: the word is the text itself, or rendered (prefix space, Metaspace) at
 * `rendered` in the workspace's render buffer. */
typedef struct {
    size_t start, end, prefix, prefix_end, rendered;
} piece_word;

struct tp_workspace {
    tt_scratch *pre;
    tp_bpe_scratch *bpe;
    tp_norm_scratch *norm;
    tp_wordpiece_scratch *wordpiece;
    tp_unigram_scratch *unigram;
    tp_segment *segments, *inner; /* added-token passes 0 and 1 */
    size_t segments_cap, inner_cap;
    piece_word group[GROUP_PIECES];
    int plain;                         /* the group's words are all the text's own bytes (plain_group) */
    uint64_t hash[GROUP_PIECES];       /* the group's words' hashes (put_cached_words) */
    const uint8_t *words[GROUP_PIECES];
    size_t word_lens[GROUP_PIECES];
    uint8_t *render;                   /* rendered words of a group */
    uint32_t *render_from;             /* Metaspace: the original byte each rendered byte stands for */
    size_t render_cap;
    tp_columns out;                    /* a batch's tokens from this thread's chunks */
    tp_columns sequences[2];           /* tp_assemble: the item's sequences A and B */
    uint8_t *utf8;                     /* a text transcoded from code units */
    size_t utf8_cap;
    const uint32_t *replay;            /* replayed pipelines: the text's own tokens ... */
    size_t n_replay, replay_first;     /* ... and where the text's first token went in the columns */
    uint32_t *chars_before;            /* char offsets: the chars starting before each byte of a text */
    size_t chars_cap;
    tt_piece *cuts;                    /* cut_long_words' pieces ... */
    const uint8_t **cut_words;         /* ... and the model's cut of one piece */
    size_t *cut_lens;
    size_t cuts_cap, cut_words_cap;
    const uint32_t *matches;           /* the program's SPLIT_GIVEN matches given with the text (given_matches) */
    uint32_t *match_bytes;             /* ... as byte pairs of its text */
    size_t match_bytes_cap;
};

tp_workspace *tp_workspace_new(int pooled) {
    tp_workspace *ws = calloc(1, sizeof(*ws));
    if (!ws) return NULL;
    ws->pre = tp_engine->scratch_new();
    ws->bpe = tp_bpe_scratch_new();
    ws->norm = tp_norm_scratch_new();
    ws->wordpiece = tp_wordpiece_scratch_new();
    ws->unigram = tp_unigram_scratch_new();
    if (!ws->pre || !ws->bpe || !ws->norm || !ws->wordpiece || !ws->unigram) { tp_workspace_free(ws); return NULL; }
    tp_bpe_scratch_caches(ws->bpe)->pooled = pooled;
    tp_wordpiece_scratch_caches(ws->wordpiece)->pooled = pooled;
    tp_unigram_scratch_caches(ws->unigram)->pooled = pooled;
    return ws;
}

void tp_workspace_free(tp_workspace *ws) {
    if (!ws) return;
    tp_engine->scratch_free(ws->pre);
    tp_bpe_scratch_free(ws->bpe);
    tp_norm_scratch_free(ws->norm);
    tp_wordpiece_scratch_free(ws->wordpiece);
    tp_unigram_scratch_free(ws->unigram);
    free(ws->segments);
    free(ws->inner);
    free(ws->render);
    free(ws->render_from);
    tp_columns_free(&ws->out);
    tp_columns_free(&ws->sequences[0]);
    tp_columns_free(&ws->sequences[1]);
    free(ws->utf8);
    free(ws->chars_before);
    free(ws->cuts);
    free(ws->cut_words);
    free(ws->match_bytes);
    free(ws->cut_lens);
    free(ws);
}

tp_columns *tp_workspace_output(tp_workspace *ws) { return &ws->out; }

tp_columns *tp_workspace_sequences(tp_workspace *ws) { return ws->sequences; }

void tp_columns_free(tp_columns *c) {
    if (c->block) tp_block_free(c->block);
    else { free(c->ids); free(c->type_ids); free(c->offsets); free(c->wide_offsets); free(c->special); free(c->words); }
    free(c->strips);
    memset(c, 0, sizeof(*c));
}

/* Grow *column to cap elements of size bytes when kept, else drop it; columns are NULL or of capacity cap. */
static int grow_column(void *column, int kept, size_t cap, size_t size) {
    if (kept) return grow_to(column, cap, size);
    free(*(void **)column);
    *(void **)column = NULL;
    return 0;
}

int tp_columns_reserve(tp_columns *c, size_t extra) {
    if (c->n + extra <= c->cap) return 0;
    size_t cap = c->cap ? c->cap : 256;
    while (cap < c->n + extra) cap *= 2;
    if (grow_to(&c->ids, cap, 4) || grow_column(&c->offsets, !c->no_offsets, cap, 8) ||
        grow_column(&c->type_ids, !c->layout, cap, 4) || grow_column(&c->special, !c->layout, cap, 1) ||
        grow_column(&c->words, !c->no_words, cap, 4)) return -1;
    c->cap = cap;
    return 0;
}

int tp_columns_keep(tp_columns *c, int offsets, int layout, int words) {
    c->no_offsets = !offsets;
    c->layout = layout;
    c->no_words = !words;
    if (!c->cap) return 0;
    if (offsets && !c->offsets && !(c->offsets = malloc(c->cap * 8))) return -1;
    if (!layout && !c->type_ids && !(c->type_ids = malloc(c->cap * 4))) return -1;
    if (!layout && !c->special && !(c->special = malloc(c->cap))) return -1;
    if (words && !c->words && !(c->words = malloc(c->cap * 4))) return -1;
    return 0;
}

/* A sequence's tokens take byte offsets into the original text as they are emitted; tp_encode_sequence
 * turns them into char offsets at the end (to_char_offsets). */
typedef struct {
    int32_t word;
} text_state;

/* Append one sequence token covering original bytes [start, end). */
static inline __attribute__((always_inline)) void put_token(const tp_pipeline *p, tp_columns *c, text_state *st,
                                                            uint32_t id, size_t start, size_t end) {
    size_t k = c->n++;
    c->ids[k] = id;
    if (!c->no_words) c->words[k] = st->word;
    if (!c->layout) {
        c->type_ids[k] = p->type_id;
        c->special[k] = 0;
    }
    if (c->no_offsets) return;
    c->offsets[2 * k] = (uint32_t)start;
    c->offsets[2 * k + 1] = (uint32_t)end;
}

void tp_put_specials(tp_columns *c, const tp_special *specials, size_t n) {
    for (size_t i = 0; i < n; i++) {
        size_t k = c->n++;
        c->ids[k] = specials[i].id;
        if (!c->no_words) c->words[k] = -2 - specials[i].name;
        if (!c->layout) {
            c->type_ids[k] = specials[i].type_id;
            c->special[k] = 1;
        }
        if (!c->no_offsets) c->offsets[2 * k] = c->offsets[2 * k + 1] = 0;
    }
}

/* Normalized byte b of a text stretch came from original bytes [shift + from[b], shift + to[b]), or
 * from the char holding original byte shift + b when from is NULL. */
typedef struct {
    const uint32_t *from, *to;
    size_t shift;
} alignment;

static inline size_t original_start(const alignment *al, size_t s) {
    return al->shift + (al->from ? al->from[s] : s);
}

/* n tokens' offsets (2 a token) in normalized bytes made the original ranges, in place: stock maps a
 * normalized range to the span of its bytes' alignments (an empty one to where its first byte starts). */
static void align_rows(const alignment *al, uint32_t *offsets, size_t n) {
    for (size_t k = 0; k < n; k++) {
        size_t s = offsets[2 * k], e = offsets[2 * k + 1];
        size_t orig_s = original_start(al, s);
        offsets[2 * k] = (uint32_t)orig_s;
        offsets[2 * k + 1] = (uint32_t)(e > s ? al->shift + (al->from ? al->to[e - 1] : e) : orig_s);
    }
}

static int reserve_render(tp_workspace *ws, size_t need) {
    if (need <= ws->render_cap) return 0;
    size_t cap = ws->render_cap ? ws->render_cap : 4096;
    while (cap < need) cap *= 2;
    uint8_t *render = realloc(ws->render, cap);
    if (render) ws->render = render;
    uint32_t *from = realloc(ws->render_from, cap * 4);
    if (from) ws->render_from = from;
    if (!render || !from) return -1;
    ws->render_cap = cap;
    return 0;
}

/* Columns that keep ids alone: no offsets or word numbers are needed. */
static inline int ids_only(const tp_columns *c) { return c->layout && c->no_words && c->no_offsets; }

#define RENDER_SLACK 16 /* bytes (and range entries) a copy may write past a rendered word */

/* Copies text[b, end) up to its first space to render (and, with ranges, each byte's own offset to from);
 * returns how many bytes it copied. 16 bytes a step where SSE2 is, writing up to RENDER_SLACK past them. */
static inline __attribute__((always_inline)) size_t copy_to_space(const uint8_t *text, size_t b, size_t end,
                                                                  uint8_t *render, uint32_t *from, int ranges) {
    size_t n = 0;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(' '), step = _mm_set1_epi32(4), lanes = _mm_setr_epi32(0, 1, 2, 3);
    for (; b + n + 16 <= end; n += 16) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)(text + b + n));
        _mm_storeu_si128((__m128i *)(render + n), bytes);
        if (ranges) {
            __m128i at = _mm_add_epi32(_mm_set1_epi32((int)(b + n)), lanes);
            for (int q = 0; q < 4; q++, at = _mm_add_epi32(at, step)) _mm_storeu_si128((__m128i *)(from + n + 4 * q), at);
        }
        unsigned spaces = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, space));
        if (spaces) return n + (size_t)__builtin_ctz(spaces);
    }
#endif
    for (; b + n < end && text[b + n] != ' '; n++) {
        render[n] = text[b + n];
        if (ranges) from[n] = (uint32_t)(b + n);
    }
    return n;
}

/* Metaspace: the piece with each space (and the prefix) replaced, written at `at`, and with `ranges` the
 * original byte each rendered byte stands for (a rendered space its space, the prefix the char it
 * precedes). Always inlined with a constant `ranges`; the buffers are locals, so the byte stores cannot
 * make the compiler reload them. Returns the rendered length. */
static inline __attribute__((always_inline)) size_t render_metaspace(const tp_pipeline *p, tp_workspace *ws,
                                                                     size_t at, const uint8_t *text,
                                                                     const piece_word *pw, int ranges) {
    const uint8_t *replacement = p->replacement;
    const size_t r = p->n_replacement;
    uint8_t *render = ws->render + at;
    uint32_t *from = ws->render_from + at;
    size_t k = 0;
    if (pw->prefix)
        for (; k < r; k++) {
            render[k] = replacement[k];
            if (ranges) from[k] = (uint32_t)pw->start;
        }
    for (size_t b = pw->start;;) {
        size_t run = copy_to_space(text, b, pw->end, render + k, from + k, ranges);
        k += run;
        b += run;
        if (b == pw->end) return k;
        for (size_t j = 0; j < r; j++) { /* the space at b; a few bytes: no memcpy call */
            render[k + j] = replacement[j];
            if (ranges) from[k + j] = (uint32_t)b;
        }
        k += r;
        b++;
    }
}

/* The words of a group of pieces that are the text's own bytes (no Metaspace, no prefix space: the common
 * case, with a loop of its own); 0 when some piece takes a prefix and must be rendered. */
static inline int plain_group(tp_workspace *ws, const uint8_t *text, size_t base, const tt_piece *pieces, size_t n,
                              int ranges) {
    unsigned prefixed = 0;
    for (size_t j = 0; j < n; j++) {
        size_t start = base + pieces[j].start, end = base + pieces[j].end;
        ws->words[j] = text + start;
        ws->word_lens[j] = end - start;
        prefixed |= pieces[j].flags & TT_PIECE_PREFIX;
        if (ranges) {
            ws->group[j].start = start;
            ws->group[j].end = end;
            ws->group[j].prefix = 0;
        }
    }
    return !prefixed;
}

/* The model words of a group of pieces. text[base, limit) is the stretch the pieces index (normalized
 * bytes when a normalizer ran). */
static int render_group(const tp_pipeline *p, tp_workspace *ws, const uint8_t *text, size_t base, size_t limit,
                        const tt_piece *pieces, size_t n, int ranges) {
    ws->plain = !p->n_replacement && plain_group(ws, text, base, pieces, n, ranges);
    if (ws->plain) return 0;
    size_t per_byte = p->n_replacement ? p->n_replacement : 1, need = RENDER_SLACK, at = 0;
    for (size_t j = 0; j < n; j++) need += (pieces[j].end - pieces[j].start + 1) * per_byte;
    if (reserve_render(ws, need)) return -1;
    for (size_t j = 0; j < n; j++) {
        piece_word *pw = &ws->group[j];
        pw->start = base + pieces[j].start;
        pw->end = base + pieces[j].end;
        pw->prefix = (pieces[j].flags & TT_PIECE_PREFIX) ? 1 : 0;
        /* the prefix char aligns to the char it precedes (also when the piece is only the prefix) */
        pw->prefix_end = pw->start + (pw->start < limit ? utf8_char_len(text[pw->start]) : 0);
        pw->rendered = at;
        size_t len = pw->end - pw->start + pw->prefix;
        if (p->n_replacement) {
            len = ranges ? render_metaspace(p, ws, at, text, pw, 1) : render_metaspace(p, ws, at, text, pw, 0);
        } else if (pw->prefix) {
            ws->render[at] = ' ';
            memcpy(ws->render + at + 1, text + pw->start, pw->end - pw->start);
        }
        ws->word_lens[j] = len;
        ws->words[j] = (p->n_replacement || pw->prefix) ? NULL : text + pw->start;
        if (!ws->words[j]) at += len;
    }
    for (size_t j = 0; j < n; j++) /* the buffer is final now */
        if (!ws->words[j]) ws->words[j] = ws->render + ws->group[j].rendered;
    return 0;
}

/* Type ids, special flags and word numbers of the word's tokens put from row `first` on (columns that keep
 * them). */
static inline __attribute__((always_inline)) void put_word_numbers(const tp_pipeline *p, tp_columns *c,
                                                                   size_t first, int32_t word) {
    if (!c->no_words)
        for (size_t k = first; k < c->n; k++) c->words[k] = word;
    if (c->layout) return;
    for (size_t k = first; k < c->n; k++) {
        c->type_ids[k] = p->type_id;
        c->special[k] = 0;
    }
}

/* emit_word's tokens of a word that is the text's bytes from `start` on. The output columns are
 * restrict locals: stores to them cannot change what is read next. */
static inline __attribute__((always_inline)) void put_plain_word(const tp_pipeline *p, tp_columns *c, int32_t word,
                                                                 size_t start, const uint32_t *restrict ids,
                                                                 const uint32_t *restrict from,
                                                                 const uint32_t *restrict to, size_t n) {
    const size_t at = c->n;
    const uint32_t *model_ids = p->model_ids;
    uint32_t *restrict out_ids = c->ids + at, *restrict offsets = c->offsets + 2 * at;
    if (c->no_offsets) {
        for (size_t k = 0; k < n; k++) out_ids[k] = model_ids ? model_ids[ids[k]] : ids[k];
    } else {
        for (size_t k = 0; k < n; k++) { /* one loop for both columns: a few tokens, never a memcpy call */
            out_ids[k] = model_ids ? model_ids[ids[k]] : ids[k];
            offsets[2 * k] = (uint32_t)(start + from[k]);
            offsets[2 * k + 1] = (uint32_t)(start + to[k]);
        }
    }
    c->n = at + n;
    put_word_numbers(p, c, at, word);
}

/* The text's bytes [*s, *e) of a Metaspace-rendered word's byte range [from, to), through render_from (the
 * text byte each rendered byte stands for): a prefix ends where the char it precedes does. */
static inline void rendered_range(const piece_word *pw, const uint32_t *render_from, size_t n_replacement,
                                  size_t from, size_t to, size_t *s, size_t *e) {
    *s = render_from[from];
    *e = pw->prefix && to <= n_replacement ? pw->prefix_end : render_from[to - 1] + 1;
}

/* The word's tokens (byte ranges [from, to) of the model word) into the columns (room reserved), with
 * the piece's offsets in its stretch's bytes; metaspace: the words were rendered (p->n_replacement). The piece
 * and the tables are read into locals once: the columns' byte stores could alias them. */
static inline __attribute__((always_inline)) void emit_word(const tp_pipeline *p, const tp_workspace *ws, tp_columns *c,
                                                            text_state *st, const piece_word *piece, size_t word_len,
                                                            const uint32_t *ids, const uint32_t *from,
                                                            const uint32_t *to, size_t n, int metaspace) {
    if (metaspace && word_len == 0) return; /* an empty Metaspace piece is no word */
    const piece_word pw = *piece;
    const uint32_t *model_ids = p->model_ids, *render_from = metaspace ? ws->render_from + pw.rendered : NULL;
    const size_t n_replacement = p->n_replacement;
    if (!metaspace && !pw.prefix) { /* most words: their stretch's own bytes, a loop per column */
        put_plain_word(p, c, st->word++, pw.start, ids, from, to, n);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        size_t s, e;
        if (metaspace) {
            rendered_range(&pw, render_from, n_replacement, from[k], to[k], &s, &e);
        } else {
            s = from[k] < pw.prefix ? pw.start : pw.start + from[k] - pw.prefix;
            e = to[k] <= pw.prefix ? pw.prefix_end : pw.start + to[k] - pw.prefix;
        }
        put_token(p, c, st, model_ids ? model_ids[ids[k]] : ids[k], s, e);
    }
    st->word++;
}

/* The group's ids alone (columns that keep nothing else), in one reserve and one pass; emit_word's
 * tokens. */
static int put_ids(const tp_pipeline *p, const tp_workspace *ws, tp_columns *c, const tp_words *out, size_t n) {
    size_t total = 0;
    for (size_t j = 0; j < n; j++) total += out->count[j];
    if (tp_columns_reserve(c, total)) return -1;
    uint32_t *to = c->ids + c->n;
    for (size_t j = 0; j < n; j++) {
        if (p->n_replacement && ws->word_lens[j] == 0) continue; /* as emit_word */
        const uint32_t *from = out->ids + out->first[j];
        if (p->model_ids)
            for (size_t k = 0; k < out->count[j]; k++) *to++ = p->model_ids[from[k]];
        else
            for (size_t k = 0; k < out->count[j]; k++) *to++ = from[k];
    }
    c->n = (size_t)(to - c->ids);
    return 0;
}

/* The group's words (room reserved). Always inlined with a constant metaspace where it is known, so the
 * commonest case gets a loop of its own. The word count and the columns are locals for the
 * group: the column stores cannot alias them, so their pointers, flags and count stay in registers. */
static inline __attribute__((always_inline)) void emit_words(const tp_pipeline *p, const tp_workspace *ws,
                                                             tp_columns *c, text_state *st, const tp_words *out,
                                                             size_t n, int metaspace) {
    text_state at = *st;
    tp_columns local = *c;
    for (size_t j = 0; j < n; j++) {
        size_t first = out->first[j];
        emit_word(p, ws, &local, &at, &ws->group[j], ws->word_lens[j], out->ids + first, out->starts + first,
                  out->ends + first, out->count[j], metaspace);
    }
    c->n = local.n;
    *st = at;
}

/* One cached word's tokens (room reserved) straight from its slot, into put_plain_word's columns; `start`:
 * where the word starts in its stretch's bytes. */
static inline __attribute__((always_inline)) void put_cached_word(const tp_pipeline *p, tp_columns *c, int32_t word,
                                                                  size_t start, const tp_word_cache *cache,
                                                                  const tp_cache_slot *slot) {
    const size_t at = c->n;
    const uint32_t *model_ids = p->model_ids;
    if (slot->len & TP_CACHE_INLINE) {
        c->ids[at] = model_ids ? model_ids[slot->at] : slot->at;
        if (!c->no_offsets) {
            c->offsets[2 * at] = (uint32_t)start;
            c->offsets[2 * at + 1] = (uint32_t)(start + (slot->len & ~TP_CACHE_INLINE));
        }
        c->n = at + 1;
    } else {
        const uint8_t *entry = cache->arena + slot->at;
        const size_t n = slot->n;
        const uint32_t *ids = (const uint32_t *)entry;
        const uint16_t *from = (const uint16_t *)(entry + n * 4), *to = from + n;
        uint32_t *restrict out_ids = c->ids + at, *restrict offsets = c->offsets + 2 * at;
        for (size_t k = 0; k < n; k++) {
            out_ids[k] = model_ids ? model_ids[ids[k]] : ids[k];
            if (!c->no_offsets) {
                offsets[2 * k] = (uint32_t)(start + from[k]);
                offsets[2 * k + 1] = (uint32_t)(start + to[k]);
            }
        }
        c->n = at + n;
    }
    put_word_numbers(p, c, at, word);
}

/* The group's Metaspace-rendered word j's tokens (room reserved) straight from its cache slot: the cached
 * ranges are rendered bytes, placed in the stretch as emit_word places them (rendered_range). */
static void put_cached_rendered_word(const tp_pipeline *p, const tp_workspace *ws, tp_columns *c, int32_t word,
                                     size_t j, const tp_word_cache *cache, const tp_cache_slot *slot) {
    const piece_word pw = ws->group[j];
    const uint32_t *render_from = ws->render_from + pw.rendered, *model_ids = p->model_ids;
    const uint32_t one_id = slot->at;
    const uint16_t one_from = 0, one_to = (uint16_t)tp_cache_len(slot);
    const uint32_t *ids = &one_id; /* a one-token word is held in its slot */
    const uint16_t *from = &one_from, *to = &one_to;
    size_t n = 1;
    if (!(slot->len & TP_CACHE_INLINE)) {
        const uint8_t *entry = cache->arena + slot->at;
        n = slot->n;
        ids = (const uint32_t *)entry;
        from = (const uint16_t *)(entry + n * 4);
        to = from + n;
    }
    const size_t at = c->n;
    for (size_t k = 0; k < n; k++) {
        uint32_t id = ids[k];
        size_t s, e;
        rendered_range(&pw, render_from, p->n_replacement, from[k], to[k], &s, &e);
        c->ids[at + k] = model_ids ? model_ids[id] : id;
        if (c->no_offsets) continue;
        c->offsets[2 * (at + k)] = (uint32_t)s;
        c->offsets[2 * (at + k) + 1] = (uint32_t)e;
    }
    c->n = at + n;
    put_word_numbers(p, c, at, word);
}

/* put_cached_words' loop: the leading words of the m looked for that the cache holds (`rendered`:
 * Metaspace-rendered words with offsets); how many. */
static inline __attribute__((always_inline)) size_t put_cached_run(const tp_pipeline *p, const tp_workspace *ws,
                                                                   tp_word_caches *caches, tp_columns *c,
                                                                   text_state *st, size_t m, int rendered) {
    tp_columns local = *c; /* column stores cannot alias the pointers and count held here */
    text_state at = *st;
    size_t j = 0;
    for (; j < m && (ws->word_lens[j] || !p->n_replacement); j++) {
        const tp_word_cache *cache;
        const tp_cache_slot *slot = tp_caches_find(caches, &cache, ws->words[j], ws->word_lens[j], ws->hash[j]);
        if (!slot) break;
        if (rendered) put_cached_rendered_word(p, ws, &local, at.word++, j, cache, slot);
        else put_cached_word(p, &local, at.word++, local.no_offsets ? 0 : ws->group[j].start, cache, slot);
    }
    c->n = local.n;
    *st = at;
    return j;
}

/* put_cached_run for Metaspace-rendered words with offsets, kept out of line: the common loop stays as small
 * as without it. */
static __attribute__((noinline)) size_t put_cached_rendered(const tp_pipeline *p, const tp_workspace *ws,
                                                            tp_word_caches *caches, tp_columns *c, text_state *st,
                                                            size_t m) {
    return put_cached_run(p, ws, caches, c, st, m, 1);
}

static tp_word_caches *model_caches(const tp_pipeline *p, tp_workspace *ws) {
    return p->wordpiece ? tp_wordpiece_scratch_caches(ws->wordpiece)
         : p->unigram   ? tp_unigram_scratch_caches(ws->unigram)
                        : tp_bpe_scratch_caches(ws->bpe);
}

/* The group's leading words that the model's word cache holds, emitted straight from it: no copy into the
 * model's scratch and out again, and no per-word bookkeeping. The ids alone come so from any words; with
 * offsets, from words that are their stretch's own bytes or Metaspace-rendered ones (not those given a prefix
 * space). A word too long to be looked for, or an empty Metaspace word (no word: emit_word), ends the run. Returns how
 * many; *hashes: the group's hashes, or NULL when not every word was hashed (then the model encodes the
 * rest; else encode_rest takes it). */
static size_t put_cached_words(const tp_pipeline *p, tp_workspace *ws, tp_columns *c, text_state *st, size_t n,
                               const uint64_t **hashes) {
    *hashes = NULL;
    tp_word_caches *caches = model_caches(p, ws);
    tp_word_cache *shared = p->wordpiece ? tp_wordpiece_shared_cache(p->wordpiece)
                          : p->unigram   ? tp_unigram_shared_cache(p->unigram)
                                         : tp_bpe_shared_cache(p->bpe);
    const int rendered = !ids_only(c) && !ws->plain;
    if (!shared || (rendered && !p->n_replacement)) return 0;
    /* the words before the first too long to be looked for: their room (at most two tokens a byte, under
     * byte fallback), and every index line requested before any is read */
    size_t m = 0, bytes = 0, longest = p->bpe && !ws->plain ? tp_bpe_longest_cached(p->bpe) : TP_CACHE_WORD;
    for (; m < n && ws->word_lens[m] <= longest; m++) bytes += ws->word_lens[m];
    if (!m || tp_caches_begin(caches, shared) || tp_columns_reserve(c, 2 * bytes + m)) return 0;
    uint64_t *hash = ws->hash;
    for (size_t j = 0; j < m; j++) {
        hash[j] = tp_hash_bytes(ws->words[j], ws->word_lens[j]);
        __builtin_prefetch(tp_word_cache_home(tp_caches_first(caches), hash[j]));
    }
    if (m == n) *hashes = hash;
    if (rendered) return put_cached_rendered(p, ws, caches, c, st, m);
    return put_cached_run(p, ws, caches, c, st, m, 0);
}

static int model_encode(const tp_pipeline *p, tp_workspace *ws, const uint8_t *const *words, const size_t *lens,
                        const uint64_t *hashes, size_t n, tp_words *out) {
    return p->wordpiece ? tp_wordpiece_encode_words(p->wordpiece, ws->wordpiece, words, lens, hashes, n, out)
         : p->unigram   ? tp_unigram_encode_words(p->unigram, ws->unigram, words, lens, hashes, n, out)
                        : tp_bpe_encode_words(p->bpe, ws->bpe, words, lens, hashes, n, out);
}

/* The group's words from `done` on (the first of them not cached) once put_cached_words looked for every word
 * in the shared cache: the words it lacks go to the model in one call, then every word is written in order,
 * a cached one straight from its slot as put_cached_run writes it (a shared slot stays put while threads
 * encode). In a stream's first pass a third of the groups hold a new word, and most words after it are
 * cached. Out of line: the warm path (every word cached) stays as small as without it. */
static __attribute__((noinline)) int encode_rest(const tp_pipeline *p, tp_workspace *ws, tp_columns *c,
                                                text_state *st, size_t done, size_t n) {
    const tp_word_cache *shared = model_caches(p, ws)->shared;
    const tp_cache_slot *slots[GROUP_PIECES];
    const uint8_t *words[GROUP_PIECES];
    size_t lens[GROUP_PIECES], n_new = 0, room = 0;
    uint64_t hashes[GROUP_PIECES];
    const int metaspace = p->n_replacement != 0;
    for (size_t j = done; j < n; j++) {
        slots[j] = j > done && (ws->word_lens[j] || !metaspace)
                 ? tp_word_cache_find(shared, ws->words[j], ws->word_lens[j], ws->hash[j]) : NULL;
        if (slots[j]) {
            room += 2 * ws->word_lens[j] + 1; /* put_cached_words' bound */
            continue;
        }
        words[n_new] = ws->words[j];
        lens[n_new] = ws->word_lens[j];
        hashes[n_new++] = ws->hash[j];
    }
    tp_words out;
    if (model_encode(p, ws, words, lens, hashes, n_new, &out)) return -1;
    for (size_t k = 0; k < n_new; k++) room += out.count[k];
    if (tp_columns_reserve(c, room)) return -1;
    tp_columns local = *c;
    text_state at = *st;
    for (size_t j = done, k = 0; j < n; j++) {
        if (slots[j]) {
            if (metaspace && !ids_only(&local))
                put_cached_rendered_word(p, ws, &local, at.word++, j, shared, slots[j]);
            else
                put_cached_word(p, &local, at.word++, local.no_offsets ? 0 : ws->group[j].start, shared, slots[j]);
            continue;
        }
        const uint32_t *ids = out.ids + out.first[k];
        size_t count = out.count[k++];
        if (!ids_only(&local)) {
            emit_word(p, ws, &local, &at, &ws->group[j], ws->word_lens[j], ids, out.starts + (ids - out.ids),
                      out.ends + (ids - out.ids), count, metaspace);
        } else if (ws->word_lens[j] || !metaspace) { /* as put_ids */
            for (size_t t = 0; t < count; t++) local.ids[local.n++] = p->model_ids ? p->model_ids[ids[t]] : ids[t];
        }
    }
    c->n = local.n;
    *st = at;
    return 0;
}

static int encode_group(const tp_pipeline *p, tp_workspace *ws, tp_columns *c, text_state *st, size_t n) {
    const uint64_t *hashes;
    size_t done = put_cached_words(p, ws, c, st, n, &hashes);
    if (done == n) return 0;
    if (hashes && model_caches(p, ws)->shared) return encode_rest(p, ws, c, st, done, n);
    if (done) { /* the model takes the rest from the first word not cached */
        n -= done;
        if (hashes) hashes += done;
        memmove(ws->words, ws->words + done, n * sizeof(ws->words[0]));
        memmove(ws->word_lens, ws->word_lens + done, n * sizeof(ws->word_lens[0]));
        memmove(ws->group, ws->group + done, n * sizeof(ws->group[0]));
    }
    tp_words out;
    if (model_encode(p, ws, ws->words, ws->word_lens, hashes, n, &out)) return -1;
    if (ids_only(c)) return put_ids(p, ws, c, &out, n); /* no word numbers either */
    size_t total = 0;
    for (size_t j = 0; j < n; j++) total += out.count[j];
    if (tp_columns_reserve(c, total)) return -1;
    if (!p->n_replacement) emit_words(p, ws, c, st, &out, n, 0); /* the stretch's own pieces */
    else emit_words(p, ws, c, st, &out, n, 1);
    return 0;
}

/* A BPE model that cuts long words before merging them (SentencePiece's whole-text words: tp_bpe_cut) has
 * them cut here instead, each piece a word that keeps its word's number (PIECE_SAME_WORD): the pieces its
 * word cache holds are then written straight from the cache, as pre-tokenized words are, not gathered
 * through the model's scratch. Only pieces that are the text's own bytes (no prefix, no Metaspace
 * rendering: a rendered word cut here would be rendered twice, then piece by piece, which costs more than the
 * model's own cut). The pieces to encode: `pieces` itself when none is cut, else ws->cuts
 * (*n_pieces updated); NULL on OOM. */
static const tt_piece *cut_long_words(const tp_pipeline *p, tp_workspace *ws, const uint8_t *text,
                                      const tt_piece *pieces, size_t *n_pieces) {
    if (!p->bpe || p->n_replacement || !tp_bpe_cuts(p->bpe)) return pieces;
    size_t n = *n_pieces, bound = 0, longest = 1;
    for (size_t j = 0; j < n; j++) {
        size_t b = pieces[j].flags & TT_PIECE_PREFIX ? 1 : tp_bpe_cut_bound(p->bpe, pieces[j].end - pieces[j].start);
        bound += b;
        if (b > longest) longest = b;
    }
    if (longest == 1) return pieces;
    if (grow_reserve(&ws->cuts, &ws->cuts_cap, bound, sizeof(tt_piece))) return NULL;
    if (longest > ws->cut_words_cap) {
        size_t cap = grow_capacity(ws->cut_words_cap, longest);
        if (grow_to(&ws->cut_words, cap, sizeof(ws->cut_words[0])) || grow_to(&ws->cut_lens, cap, sizeof(size_t)))
            return NULL;
        ws->cut_words_cap = cap;
    }
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        const uint8_t *word = text + pieces[j].start;
        size_t got = pieces[j].flags & TT_PIECE_PREFIX ? 1
                   : tp_bpe_cut(p->bpe, word, pieces[j].end - pieces[j].start, ws->cut_words, ws->cut_lens);
        if (got == 1) {
            ws->cuts[m++] = pieces[j];
            continue;
        }
        for (size_t k = 0; k < got; k++) {
            uint32_t start = pieces[j].start + (uint32_t)(ws->cut_words[k] - word);
            ws->cuts[m++] = (tt_piece){start, start + (uint32_t)ws->cut_lens[k], k ? PIECE_SAME_WORD : pieces[j].flags};
        }
    }
    *n_pieces = m;
    return ws->cuts;
}

/* A group of cut pieces was numbered a word a piece (from `first_word` on, in rows [first_row, c->n)): each
 * piece that goes on with the word before (PIECE_SAME_WORD) takes that word's number, and the words after it
 * one less. Done after the group, so the loops that write words stay as they are without cuts. */
static void renumber_cut_words(tp_columns *c, text_state *st, const tt_piece *pieces, size_t n, size_t first_row,
                               int32_t first_word) {
    int32_t merged[GROUP_PIECES], so_far = 0; /* merged[j]: pieces up to j that go on with the one before */
    for (size_t j = 0; j < n; j++) merged[j] = so_far += (pieces[j].flags & PIECE_SAME_WORD) != 0;
    if (!so_far) return;
    if (!c->no_words)
        for (size_t k = first_row; k < c->n; k++) c->words[k] -= merged[c->words[k] - first_word];
    st->word -= so_far;
}

static int encode_pieces(const tp_pipeline *p, tp_workspace *ws, tp_columns *c, text_state *st, const uint8_t *text,
                         size_t base, size_t limit, const tt_piece *pieces, size_t n_pieces) {
    const tt_piece *cut = cut_long_words(p, ws, text + base, pieces, &n_pieces);
    if (!cut) return -1;
    for (size_t g = 0; g < n_pieces; g += GROUP_PIECES) {
        size_t n = n_pieces - g < GROUP_PIECES ? n_pieces - g : GROUP_PIECES, first_row = c->n;
        int32_t first_word = st->word;
        if (render_group(p, ws, text, base, limit, cut + g, n, !ids_only(c)) || encode_group(p, ws, c, st, n))
            return -1;
        if (cut != pieces) renumber_cut_words(c, st, cut + g, n, first_row, first_word);
    }
    return 0;
}

/* The trim entry of `id`, or trim_len when it has none (no name: nothing to trim). */
static size_t trim_entry(const tp_pipeline *p, uint32_t id) {
    if (!p->trim_ids) return id < p->trim_len ? id : p->trim_len;
    size_t lo = 0, hi = p->trim_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->trim_ids[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < p->trim_len && p->trim_ids[lo] == id ? lo : p->trim_len;
}

/* One token's trim by `lead` leading and `trail` trailing spaces; the prefix-space exception keeps one
 * leading space on a text's first token (`first`) or on one at 0. Bitwise, not short-circuit: a token with
 * one leading space is too common a case to branch on. */
static inline void trim_token(uint32_t *o, uint32_t lead, uint32_t trail, uint32_t add_prefix_space, uint32_t first) {
    uint32_t s = o[0], e = o[1];
    uint32_t keeps_space = add_prefix_space & (lead == 1) & (first | (s == 0));
    lead &= keeps_space - 1;
    uint32_t start = e - s > lead ? s + lead : e, end = e >= trail ? e - trail : e;
    o[0] = start;
    o[1] = end > start ? end : start;
}

#define TRIM_BLOCK 64

/* trim_token over tokens [0, n) whose trim entries are their ids, a block at a time: the block's entries
 * read by id first, then a loop of plain 32-bit arithmetic over its offsets that the compiler vectorizes
 * (the text's first token, whose exception differs, is done again from its own offsets after it). A token
 * without an entry trims nothing. */
static void trim_by_id(const uint16_t *restrict trim_of, size_t n_ids, int add_prefix_space,
                       const uint32_t *restrict ids, uint32_t *restrict offsets, size_t n) {
    uint16_t both[TRIM_BLOCK];
    uint32_t first[2] = {n ? offsets[0] : 0, n ? offsets[1] : 0};
    for (size_t at = 0; at < n; at += TRIM_BLOCK) {
        const size_t m = n - at < TRIM_BLOCK ? n - at : TRIM_BLOCK;
        for (size_t k = 0; k < m; k++) both[k] = ids[at + k] < n_ids ? trim_of[ids[at + k]] : 0;
        for (size_t k = 0; k < m; k++)
            trim_token(offsets + 2 * (at + k), both[k] & 0xFFu, (uint32_t)both[k] >> 8, (uint32_t)add_prefix_space, 0);
    }
    if (n) {
        offsets[0] = first[0];
        offsets[1] = first[1];
        uint32_t entry = ids[0] < n_ids ? trim_of[ids[0]] : 0;
        trim_token(offsets, entry & 0xFFu, entry >> 8, (uint32_t)add_prefix_space, 1);
    }
}

void tp_trim_offsets(const tp_pipeline *p, tp_columns *c, size_t first, size_t end, const tp_columns *src,
                     size_t src_first) {
    if (!p->trim_ids) {
        trim_by_id(p->trim_of, p->trim_len, p->trim_add_prefix_space, c->ids + first, c->offsets + 2 * first,
                   end - first);
    } else {
        for (size_t k = first; k < end; k++) { /* stripping tokens have no entry */
            size_t entry = trim_entry(p, c->ids[k]);
            if (entry != p->trim_len)
                trim_token(&c->offsets[2 * k], p->trim_of[entry] & 0xFFu, (uint32_t)p->trim_of[entry] >> 8,
                           (uint32_t)p->trim_add_prefix_space, k == first);
        }
    }
    for (size_t i = 0; i < src->n_strips; i++) {
        const tp_strip_trim *s = &src->strips[i];
        if (s->row < src_first || s->row - src_first >= end - first) continue;
        size_t k = first + (s->row - src_first);
        trim_token(&c->offsets[2 * k], s->lead, s->trail, (uint32_t)p->trim_add_prefix_space, k == first);
    }
}

/* Records the trim of the stripping added token just put, which matched text[0, len), when offsets are
 * trimmed. */
static int note_strip(const tp_pipeline *p, tp_columns *c, const uint8_t *text, size_t len) {
    if (!p->trim_of || c->no_offsets) return 0;
    if (c->n_strips == c->strips_cap) {
        size_t cap = grow_capacity(c->strips_cap, c->n_strips + 1);
        if (grow_to(&c->strips, cap, sizeof(tp_strip_trim))) return -1;
        c->strips_cap = cap;
    }
    tp_strip_trim *s = &c->strips[c->n_strips++];
    s->row = c->n - 1;
    return tp_added_space_runs(text, len, &s->lead, &s->trail);
}

/* A replayed stretch: the text's next tokens must spell bytes[s, e) one after another. Each token's bytes
 * are then its offsets, as stock's pre-tokenizer (which keeps every byte, in order) and model made them. */
static int replay_stretch(const tp_pipeline *p, tp_workspace *ws, tp_columns *c, text_state *st,
                          const uint8_t *bytes, size_t s, size_t e) {
    size_t k = c->n - ws->replay_first; /* every token so far, added ones too, was replayed in order */
    while (s < e) {
        if (k >= ws->n_replay) return TP_REPLAY_MISMATCH;
        uint32_t id = ws->replay[k++];
        if (id >= p->n_replay_ids) return TP_REPLAY_MISMATCH;
        size_t from = p->replay_starts[id], len = p->replay_starts[id + 1] - from;
        if (len == 0 || len > e - s || memcmp(p->replay_bytes + from, bytes + s, len)) return TP_REPLAY_MISMATCH;
        if (tp_columns_reserve(c, 1)) return -1;
        put_token(p, c, st, id, s, s + len);
        s += len;
    }
    st->word++;
    return 0;
}

static int takes_matches(const tp_pipeline *p) {
    return p->program && tp_engine->program_takes_matches(p->program);
}

size_t tp_given_steps(const tp_pipeline *p) {
    return (p->normalizer ? tp_normalizer_given_steps(p->normalizer) : 0) + (size_t)takes_matches(p);
}

/* The matches given for the program's SPLIT_GIVEN step: tp_text.given's block after the normalizer's. */
static const uint32_t *given_matches(const tp_pipeline *p, const uint32_t *given) {
    if (!given || !takes_matches(p)) return NULL;
    size_t steps = p->normalizer ? tp_normalizer_given_steps(p->normalizer) : 0;
    for (size_t k = 0; k < steps; k++) given += 1 + 2 * (size_t)*given;
    return given;
}

void tp_workspace_give(tp_workspace *ws, const tp_pipeline *p, const uint32_t *given) {
    tp_norm_give(ws->norm, given);
    ws->matches = given_matches(p, given);
}

/* ws->matches (a count, then [start, end) char pairs of text[0, len)) as byte pairs in ws->match_bytes; 0,
 * -1 on OOM, or TP_STOCK_DECIDES when they are out of order or run past the text. */
static int match_bytes(tp_workspace *ws, const uint8_t *text, size_t len, size_t *n_matches) {
    size_t n = *n_matches = ws->matches ? ws->matches[0] : 0;
    if (n && grow_reserve(&ws->match_bytes, &ws->match_bytes_cap, 2 * n, sizeof(uint32_t))) return -1;
    size_t byte = 0, chars = 0;
    for (size_t k = 0; k < 2 * n; k++) {
        size_t target = ws->matches[1 + k];
        if (target < chars) return TP_STOCK_DECIDES;
        for (; chars < target && byte < len; chars++) byte += utf8_char_len(text[byte]);
        if (chars != target) return TP_STOCK_DECIDES;
        ws->match_bytes[k] = (uint32_t)byte;
    }
    return 0;
}

/* Pre-tokenize and encode bytes[s, e) (of the text, or of a normalized gap), its tokens' offsets in those
 * bytes; at_start: it begins at original offset 0 (Metaspace "first" prepends only there). A program that
 * takes matches runs on the whole text (tp_encode_sequence and encode_gap see to it), whose matches came
 * with it. */
static int encode_stretch(const tp_pipeline *p, tp_workspace *ws, tp_columns *c, text_state *st,
                          const uint8_t *bytes, size_t s, size_t e, int at_start) {
    if (!p->program) return replay_stretch(p, ws, c, st, bytes, s, e);
    const tt_piece *pieces;
    size_t n_pieces, n_matches = 0;
    if (ws->matches) {
        int code = match_bytes(ws, bytes + s, e - s, &n_matches);
        if (code) return code;
    }
    const tt_program *program = at_start || !p->program_later ? p->program : p->program_later;
    int rc = tp_engine->program_run_given(program, ws->pre, bytes + s, e - s, n_matches ? ws->match_bytes : NULL,
                                          n_matches, &pieces, &n_pieces);
    if (rc) return rc == TT_GAVE_UP ? TP_STOCK_DECIDES : -1;
    return encode_pieces(p, ws, c, st, bytes, s, e, pieces, n_pieces);
}

/* A gap between normalized=false added tokens: normalized (HF normalizes each gap on its own), split
 * by the normalized=true added tokens, the rest encoded stretch by stretch. The tokens of a normalized gap
 * take offsets in its normalized bytes, all mapped to the text's at the end in one pass (align_rows): the
 * alignment's lookups then go in order, none waiting on a cached word's entry to be read. */
static int encode_gap(const tp_pipeline *p, tp_workspace *ws, tp_columns *c, text_state *st, const uint8_t *text,
                      tp_segment gap) {
    const uint8_t *bytes = text;
    size_t shift = gap.start, len = gap.end - gap.start;
    alignment al = {NULL, NULL, gap.start};
    const alignment *aligned = NULL;
    if (p->normalizer) {
        /* ids alone need no alignment, unless a stretch must know whether it starts the text */
        int align = !ids_only(c) || p->program_later;
        if (tp_normalize(p->normalizer, ws->norm, text + gap.start, len, align, &bytes, &al.from, &al.to, &len))
            return tp_norm_gave_up(ws->norm) ? TP_STOCK_DECIDES : -1;
        /* text inserted before the first char (a Replace's empty match there) aligns to nothing: stock's
         * pre-tokenizers then repeat it or panic (ByteLevel's transform), which only stock reproduces */
        if (tp_norm_inserted_first(ws->norm)) return TP_STOCK_DECIDES;
        if (bytes == text + gap.start) bytes = text; /* unchanged: the text's own path */
        else shift = 0, aligned = &al;
    }
    long n = tp_added_split(p->added, 1, bytes + shift, len, &ws->inner, &ws->inner_cap);
    if (n < 0) return -1;
    if (n > 1 && takes_matches(p)) return TP_STOCK_DECIDES; /* matches are found over the whole text */
    const size_t first_row = c->n;
    for (long i = 0; i < n; i++) {
        size_t s = shift + ws->inner[i].start, e = shift + ws->inner[i].end;
        if (ws->inner[i].id != TP_ADDED_TEXT) {
            if (tp_columns_reserve(c, 1)) return -1;
            put_token(p, c, st, ws->inner[i].id, s, e);
            st->word++;
            if (ws->inner[i].strips && note_strip(p, c, bytes + s, e - s)) return -1;
        } else {
            size_t original = aligned ? original_start(aligned, s) : s;
            int code = encode_stretch(p, ws, c, st, bytes, s, e, original == 0);
            if (code) return code;
        }
    }
    if (aligned && !c->no_offsets) align_rows(aligned, c->offsets + 2 * first_row, c->n - first_row);
    return 0;
}

/* chars[b] = the count of chars starting before byte b of text[0, len), for b in [0, blocks * 16) where
 * blocks = len / 16 + 1 (entries past len count the zero padding as chars). 16 bytes a step where SSE2 is:
 * a char starts at every byte that is not a continuation byte, and the counts are the block's prefix sum. */
static uint32_t count_chars_before(const uint8_t *text, size_t len, uint32_t *chars) {
    uint32_t before = 0;
    size_t at = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128(), below_starts = _mm_set1_epi8(-65);
    for (; at <= len; at += 16) {
        uint8_t padded[16];
        const uint8_t *block = text + at;
        if (len - at < 16) {
            memset(padded, 0, sizeof(padded));
            memcpy(padded, block, len - at);
            block = padded;
        }
        /* as signed bytes, continuation bytes 0x80-0xBF are those below -64 */
        __m128i x = _mm_loadu_si128((const __m128i *)block);
        __m128i sum = _mm_sub_epi8(zero, _mm_cmpgt_epi8(x, below_starts)); /* 1 where a char starts */
        sum = _mm_add_epi8(sum, _mm_slli_si128(sum, 1));
        sum = _mm_add_epi8(sum, _mm_slli_si128(sum, 2));
        sum = _mm_add_epi8(sum, _mm_slli_si128(sum, 4));
        sum = _mm_add_epi8(sum, _mm_slli_si128(sum, 8)); /* starts in [at, at + i] */
        __m128i excl = _mm_slli_si128(sum, 1), base = _mm_set1_epi32((int)before);
        __m128i low = _mm_unpacklo_epi8(excl, zero), high = _mm_unpackhi_epi8(excl, zero);
        _mm_storeu_si128((__m128i *)(chars + at), _mm_add_epi32(base, _mm_unpacklo_epi16(low, zero)));
        _mm_storeu_si128((__m128i *)(chars + at + 4), _mm_add_epi32(base, _mm_unpackhi_epi16(low, zero)));
        _mm_storeu_si128((__m128i *)(chars + at + 8), _mm_add_epi32(base, _mm_unpacklo_epi16(high, zero)));
        _mm_storeu_si128((__m128i *)(chars + at + 12), _mm_add_epi32(base, _mm_unpackhi_epi16(high, zero)));
        before += (uint32_t)_mm_extract_epi16(sum, 7) >> 8;
    }
#endif
    for (; at < (len / 16 + 1) * 16; at++) {
        chars[at] = before;
        before += at >= len || !utf8_is_continuation(text[at]);
    }
    return chars[len];
}

/* Byte offsets -> char offsets. A token's end is the count of chars starting before it; its start the
 * index of the char holding its first byte, one less than the chars starting up to it (a token starting
 * or ending inside a char, after a ByteLevel split, covers the whole char). Tokens may come in any order. */
static int to_char_offsets(tp_workspace *ws, const uint8_t *text, size_t len, uint32_t *offsets, size_t n) {
    size_t entries = (len / 16 + 1) * 16 + 1;
    if (entries > ws->chars_cap) {
        size_t cap = grow_capacity(ws->chars_cap, entries);
        if (grow_to(&ws->chars_before, cap, 4)) return -1;
        ws->chars_cap = cap;
    }
    uint32_t *chars = ws->chars_before;
    if (count_chars_before(text, len, chars) == len) return 0; /* ASCII: chars are bytes */
    chars[len + 1] = chars[len] + 1; /* a token starting at len starts the char after the last */
    for (size_t k = 0; k < n; k++) {
        uint32_t s = offsets[2 * k], e = offsets[2 * k + 1];
        offsets[2 * k] = chars[s + 1] - 1;
        offsets[2 * k + 1] = chars[e];
    }
    return 0;
}

/* A replayed text's tokens are exactly those replayed: as many, and its added tokens where stock put them. */
static int replayed_whole(const tp_workspace *ws, const tp_columns *c) {
    size_t n = c->n - ws->replay_first;
    return n == ws->n_replay && !memcmp(c->ids + ws->replay_first, ws->replay, n * sizeof(uint32_t));
}

int tp_encode_sequence(const tp_pipeline *p, tp_workspace *ws, const uint8_t *text, size_t len, tp_columns *c) {
    text_state st = {0};
    size_t first = ws->replay_first = c->n;
    long n_segments = tp_added_split(p->added, 0, text, len, &ws->segments, &ws->segments_cap);
    if (n_segments < 0) return -1;
    if (n_segments > 1 && takes_matches(p)) return TP_STOCK_DECIDES; /* matches are found over the whole text */
    for (long i = 0; i < n_segments; i++) {
        tp_segment seg = ws->segments[i];
        if (seg.id != TP_ADDED_TEXT) {
            if (tp_columns_reserve(c, 1)) return -1;
            put_token(p, c, &st, seg.id, seg.start, seg.end);
            st.word++;
            if (seg.strips && note_strip(p, c, text + seg.start, seg.end - seg.start)) return -1;
        } else {
            int code = encode_gap(p, ws, c, &st, text, seg);
            if (code) return code;
        }
    }
    if (!p->program && !replayed_whole(ws, c)) return TP_REPLAY_MISMATCH;
    return c->no_offsets ? 0 : to_char_offsets(ws, text, len, c->offsets + 2 * first, c->n - first);
}

static int encode_text(const tp_pipeline *p, tp_workspace *ws, const uint8_t *text, size_t len,
                       int add_special, tp_columns *c) {
    if (add_special) {
        if (tp_columns_reserve(c, p->n_before)) return -1;
        tp_put_specials(c, p->before, p->n_before);
    }
    size_t first = c->n;
    c->n_strips = 0;
    int code = tp_encode_sequence(p, ws, text, len, c);
    if (code) return code;
    if (p->trim_of && !c->no_offsets) tp_trim_offsets(p, c, first, c->n, c, first);
    if (add_special) {
        if (tp_columns_reserve(c, p->n_after)) return -1;
        tp_put_specials(c, p->after, p->n_after);
    }
    return 0;
}

typedef struct {
    tp_workspace **workspaces;
    tp_workspace *private_ws;              /* the slot -1 caller's (the pool was busy), for both rounds */
    const tp_plan *plan;
    tp_chunk_work work, finish;
    int (*between)(void *job);
    void *job;
    int n_ranges;                          /* one run of consecutive chunks per thread */
    atomic_size_t next[TP_POOL_MAX];       /* next unclaimed chunk of each range */
    size_t range_end[TP_POOL_MAX];
    atomic_int failed;                     /* first nonzero code a chunk returned */
    int second_round;
    int ran_private;                       /* the pool was busy: the pooled workspaces belong to its run */
} batch;

/* A thread works through its own range first (the threads rarely claim from one counter at once), then
 * helps with the others'. Returns n_chunks when nothing is left. */
static size_t claim_chunk(batch *b, int slot) {
    int own = slot > 0 ? slot : 0;
    for (int k = 0; k < b->n_ranges; k++) {
        int range = (own + k) % b->n_ranges;
        if (atomic_load(&b->next[range]) >= b->range_end[range]) continue;
        size_t chunk = atomic_fetch_add(&b->next[range], 1);
        if (chunk < b->range_end[range]) return chunk;
    }
    return b->plan->n_chunks;
}

static void fail(batch *b, int code) {
    int none = 0;
    atomic_compare_exchange_strong(&b->failed, &none, code);
}

static tp_workspace *slot_workspace(batch *b, int slot) {
    if (slot < 0) b->ran_private = 1;
    tp_workspace **ws = slot >= 0 ? &b->workspaces[slot] : &b->private_ws;
    if (!*ws) *ws = tp_workspace_new(slot >= 0);
    return *ws;
}

static void run_chunks(void *arg, int slot) {
    batch *b = arg;
    tp_workspace *ws = slot_workspace(b, slot);
    if (!ws) { fail(b, -1); return; }
    tp_chunk_work work = b->second_round ? b->finish : b->work;
    if (!b->second_round) ws->out.n = 0;
    for (;;) {
        size_t chunk = claim_chunk(b, slot);
        if (chunk >= b->plan->n_chunks || atomic_load(&b->failed)) break;
        int code = work(b->job, ws, chunk);
        if (code) { fail(b, code); break; }
    }
}

static void claim_from_start(batch *b) {
    for (int r = 0; r < b->n_ranges; r++) {
        atomic_store(&b->next[r], b->plan->n_chunks * (size_t)r / (size_t)b->n_ranges);
        b->range_end[r] = b->plan->n_chunks * (size_t)(r + 1) / (size_t)b->n_ranges;
    }
}

/* After a round of pool threads (none encoding): the words each model kept to a thread go to its shared
 * cache, which grows or empties to have room for the next round. */
static void settle(tp_workspace *ws) {
    tp_caches_settle(tp_bpe_scratch_caches(ws->bpe));
    tp_caches_settle(tp_wordpiece_scratch_caches(ws->wordpiece));
    tp_caches_settle(tp_unigram_scratch_caches(ws->unigram));
}

/* After the first round, still holding the pool: the pool threads' shared caches take in what they learnt. */
static void between_rounds(void *arg) {
    batch *b = arg;
    if (!b->ran_private)
        for (int slot = 0; slot < tp_pool_threads(); slot++)
            if (b->workspaces[slot]) settle(b->workspaces[slot]);
    if (b->between && !atomic_load(&b->failed)) {
        int code = b->between(b->job);
        if (code) fail(b, code);
    }
    claim_from_start(b);
    b->second_round = 1;
}

#define CHUNK_BYTES (8 * 1024)
#define PARALLEL_BYTES (64 * 1024)

int tp_plan_chunks(const size_t *sizes, size_t n, tp_plan *plan) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += sizes[i];
    int threads = total >= PARALLEL_BYTES ? tp_pool_threads() : 1;
    size_t target = total / ((size_t)threads * 32) + 1;
    if (target < CHUNK_BYTES && threads > 1) target = CHUNK_BYTES;
    if (threads == 1) target = total + 1;
    size_t *chunk_start = malloc((n + 2) * sizeof(size_t));
    if (!chunk_start) return -1;
    size_t n_chunks = 0, acc = 0;
    chunk_start[0] = 0;
    for (size_t i = 0; i < n; i++) {
        acc += sizes[i] + 1;
        if (acc >= target) { chunk_start[++n_chunks] = i + 1; acc = 0; }
    }
    if (chunk_start[n_chunks] != n || n_chunks == 0) chunk_start[++n_chunks] = n;
    *plan = (tp_plan){.chunk_start = chunk_start, .n_chunks = n_chunks,
                      .threads = threads < (int)n_chunks ? threads : (int)n_chunks};
    return 0;
}

int tp_run_chunks_twice(tp_workspace **workspaces, const tp_plan *plan, tp_chunk_work work, int (*between)(void *job),
                        tp_chunk_work finish, void *job) {
    batch *b = calloc(1, sizeof(batch));
    if (!b) return -1;
    *b = (batch){.workspaces = workspaces, .plan = plan, .work = work, .between = between, .finish = finish,
                 .job = job, .n_ranges = plan->threads};
    claim_from_start(b);
    atomic_init(&b->failed, 0);
    tp_pool_run_twice(run_chunks, between_rounds, finish ? run_chunks : NULL, b, plan->threads);
    int failed = atomic_load(&b->failed);
    tp_workspace_free(b->private_ws);
    free(b);
    return failed;
}

int tp_run_chunks(tp_workspace **workspaces, const tp_plan *plan, tp_chunk_work work, void *job) {
    return tp_run_chunks_twice(workspaces, plan, work, NULL, NULL, job);
}

/* The text's UTF-8 bytes: its own, or transcoded into the workspace. -1 on OOM, TP_TEXT_SURROGATE. */
static int text_bytes(tp_workspace *ws, const tp_text *t, const uint8_t **bytes, size_t *len) {
    if (t->unit == 0) {
        *bytes = t->data;
        *len = t->len;
        return 0;
    }
    if (grow_reserve(&ws->utf8, &ws->utf8_cap, t->len * 4 + 1, 1)) return -1;
    long n = tp_engine->utf8_from_units(t->data, t->unit, t->len, ws->utf8);
    if (n < 0) return TP_TEXT_SURROGATE;
    *bytes = ws->utf8;
    *len = (size_t)n;
    return 0;
}

typedef struct {
    const tp_pipeline *p;
    const tp_text *texts;
    const size_t *chunk_start;
    tp_workspace **chunk_ws;  /* the workspace whose columns hold chunk k's tokens ... */
    size_t *chunk_first;      /* ... from this token on (n_chunks + 1 entries: the output position after) */
    size_t *chunk_n;
    size_t n_chunks;
    int64_t *lengths;
    int add_special, offsets, words;
    tp_columns *out;
} plain_job;

static int encode_chunk(void *arg, tp_workspace *ws, size_t chunk) {
    plain_job *job = arg;
    tp_columns *c = &ws->out;
    if (c->n == 0 && tp_columns_keep(c, job->offsets, 1, job->words)) return -1;
    job->chunk_ws[chunk] = ws;
    job->chunk_first[chunk] = c->n;
    for (size_t t = job->chunk_start[chunk]; t < job->chunk_start[chunk + 1]; t++) {
        const uint8_t *bytes;
        size_t len, before = c->n;
        int code = text_bytes(ws, &job->texts[t], &bytes, &len);
        if (code) return code;
        /* one token per byte plus the special tokens bounds every text but a rare normalizer expansion
         * (then the columns grow as needed), so they are not regrown midway */
        if (tp_columns_reserve(c, len + job->p->n_before + job->p->n_after)) return -1;
        ws->replay = job->texts[t].replay;
        ws->n_replay = job->texts[t].n_replay;
        tp_workspace_give(ws, job->p, job->texts[t].given);
        code = encode_text(job->p, ws, bytes, len, job->add_special, c);
        tp_workspace_give(ws, job->p, NULL); /* no other text takes them */
        if (code == TP_STOCK_DECIDES) { /* the others go on: the caller may encode this one with stock */
            c->n = before;
            job->lengths[t] = -1;
            continue;
        }
        if (code) return code;
        job->lengths[t] = (int64_t)(c->n - before);
    }
    job->chunk_n[chunk] = c->n - job->chunk_first[chunk];
    return 0;
}

/* Whether every token of a call's texts has type id 0 (the layout's, with or without special tokens). */
static int layout_types_zero(const tp_pipeline *p, int add_special) {
    int zero = p->type_id == 0;
    for (size_t k = 0; add_special && k < p->n_before; k++) zero &= p->before[k].type_id == 0;
    for (size_t k = 0; add_special && k < p->n_after; k++) zero &= p->after[k].type_id == 0;
    return zero;
}

/* The output's columns in one block (big-alignment columns first), which the caller's arrays share: one
 * allocation and one give-back per batch. A call whose type ids are all 0 leaves them out (type_ids
 * NULL): the caller's zeroed array costs no writes, and no first touch of its pages until read. */
static int alloc_output(void *arg) {
    plain_job *job = arg;
    tp_columns *out = job->out;
    for (size_t t = 0; t < job->chunk_start[job->n_chunks]; t++)
        if (job->lengths[t] < 0) return TP_STOCK_DECIDES;
    size_t n = 0;
    for (size_t k = 0; k < job->n_chunks; k++) n += job->chunk_n[k];
    size_t offsets = job->offsets == TP_OFFSETS_WIDE ? 16 * n : job->offsets ? 8 * n : 0;
    size_t words = job->words ? 4 * n : 0;
    const int zero_types = layout_types_zero(job->p, job->add_special);
    size_t types = zero_types ? 0 : 4 * n;
    uint8_t *block = tp_block_alloc(offsets + 4 * n + types + words + n + 1);
    if (!block) return -1;
    *out = (tp_columns){.block = block, .n = n, .cap = n, .no_offsets = !job->offsets};
    if (job->offsets == TP_OFFSETS_WIDE) out->wide_offsets = (int64_t *)block;
    else if (job->offsets) out->offsets = (uint32_t *)block;
    uint8_t *at = block + offsets;
    out->ids = (uint32_t *)at;
    at += 4 * n;
    out->type_ids = zero_types ? NULL : (uint32_t *)at;
    at += types;
    out->words = job->words ? (int32_t *)at : NULL;
    out->special = at + words;
    return 0;
}

/* Type ids and special flags of a chunk's texts, from their layout: the post-processor tokens around
 * each text's own tokens. */
static void put_layout(const plain_job *job, size_t chunk, size_t at) {
    const tp_pipeline *p = job->p;
    uint32_t *types = job->out->type_ids ? job->out->type_ids + at : NULL;
    uint8_t *special = job->out->special + at;
    for (size_t t = job->chunk_start[chunk]; t < job->chunk_start[chunk + 1]; t++) {
        size_t n = (size_t)job->lengths[t], before = job->add_special ? p->n_before : 0;
        size_t after = job->add_special ? p->n_after : 0, body = n - before - after;
        memset(special, 1, before);
        memset(special + before, 0, body);
        memset(special + before + body, 1, after);
        special += n;
        if (!types) continue; /* all 0, left out (alloc_output) */
        for (size_t k = 0; k < before; k++) *types++ = p->before[k].type_id;
        for (size_t k = 0; k < body; k++) types[k] = p->type_id;
        types += body;
        for (size_t k = 0; k < after; k++) *types++ = p->after[k].type_id;
    }
}

static int copy_chunk(void *arg, tp_workspace *ws, size_t chunk) {
    (void)ws;
    plain_job *job = arg;
    size_t at = 0, n = job->chunk_n[chunk], from = job->chunk_first[chunk];
    for (size_t k = 0; k < chunk; k++) at += job->chunk_n[k];
    const tp_columns *c = &job->chunk_ws[chunk]->out;
    tp_columns *out = job->out;
    memcpy(out->ids + at, c->ids + from, n * 4);
    if (out->offsets) memcpy(out->offsets + 2 * at, c->offsets + 2 * from, n * 8);
    if (out->wide_offsets) tp_widen(out->wide_offsets + 2 * at, c->offsets + 2 * from, 2 * n);
    if (out->words) memcpy(out->words + at, c->words + from, n * 4);
    put_layout(job, chunk, at);
    return 0;
}

void tp_widen(int64_t *to, const uint32_t *from, size_t n) {
    for (size_t k = 0; k < n; k++) to[k] = from[k];
}

/* A batch's tokens stay in the workspaces between calls (no page faults for the next one) unless they
 * took more than this. */
#define KEEP_TOKENS ((size_t)1 << 22)

void tp_keep_output(tp_workspace **workspaces) {
    for (int slot = 0; slot < tp_pool_threads(); slot++) {
        tp_workspace *ws = workspaces[slot];
        if (!ws) continue;
        if (ws->out.cap > KEEP_TOKENS) tp_columns_free(&ws->out);
        for (int k = 0; k < 2; k++)
            if (ws->sequences[k].cap > KEEP_TOKENS) tp_columns_free(&ws->sequences[k]);
    }
}

int tp_encode_batch(const tp_pipeline *p, tp_workspace **workspaces, const tp_text *texts, size_t n, int add_special,
                    int offsets, int words, tp_columns *out, int64_t *lengths) {
    memset(out, 0, sizeof(*out));
    size_t *sizes = malloc((n ? n : 1) * sizeof(size_t));
    if (!sizes) return -1;
    for (size_t i = 0; i < n; i++) sizes[i] = texts[i].len * (texts[i].unit ? texts[i].unit : 1);
    tp_plan plan;
    int failed = tp_plan_chunks(sizes, n, &plan);
    free(sizes);
    if (failed) return -1;
    size_t k = plan.n_chunks;
    plain_job job = {p, texts, plan.chunk_start, calloc(k, sizeof(tp_workspace *)), calloc(k, sizeof(size_t)),
                     calloc(k, sizeof(size_t)), k, lengths, add_special, offsets, words, out};
    failed = !job.chunk_ws || !job.chunk_first || !job.chunk_n;
    if (!failed) failed = tp_run_chunks_twice(workspaces, &plan, encode_chunk, alloc_output, copy_chunk, &job);
    tp_keep_output(workspaces);
    free(plan.chunk_start); free(job.chunk_ws); free(job.chunk_first); free(job.chunk_n);
    if (failed) tp_columns_free(out);
    return failed;
}
