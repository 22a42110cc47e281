/* Normalizer steps over a char array (code point + original byte range), mirroring stock's
 * NormalizedString::transform: an output char that replaces an input char takes that char's range;
 * an inserted char (change +1) takes the range of the input char just before the insertion point,
 * or [0, 0) at the very start. Every step is per char except the canonical reordering inside NFD/NFKD,
 * which moves the replace/insert marks along with the chars (as stock's crate does), and the
 * whole-string steps: Strip, Prepend, a Replace pattern longer than one char and a Replace regex (compiled,
 * or given: its matches come with the text). */
#include "tp_normalize.h"
#include "tp_engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "normalization_tables.h"
#include "tp_hash.h"
#include "tagtok.h"
#include "tagtok_tables.h"
#include "utf8.h"

/* The fast path: the whole pipeline's output for each char of planes 0-2 alone (the BMP, emoji, the CJK
 * extensions: nearly all text), valid in context unless a char is not LOCAL (its own alignment is not
 * simply itself) or canonical reordering could reach across chars: one char's decomposition ends with a
 * non-starter (TRAIL) and the next one's starts with one (LEAD), TRANSPARENT chars (deleted before
 * decomposition) in between not counting, or, under composition, a char's decomposition may compose with
 * the last starter before it: its starters-first part holds a char that is the second of some composition
 * (SECOND, also LEAD) and that starter, the last of the composed output of a STARTER char, is the first of
 * some composition (OPEN). A SAME_LENGTH char is LOCAL and its output as long as its UTF-8:
 * a text of such chars keeps every byte where it was, so its alignment needs no arrays.
 * Under a Precompiled pipeline (which has no decomposing step, so no char has the composition flags) a
 * CLOSED char is one whose bytes no charsmap key starts with or is a prefix of: a cluster that begins
 * with it has no key and goes char by char, each char as the table has it. */
#define TABLE_CHARS 0x30000
enum {
    CHAR_LOCAL = 1, CHAR_LEAD = 2, CHAR_TRAIL = 4, CHAR_TRANSPARENT = 8, CHAR_SAME_LENGTH = 16, CHAR_SECOND = 32,
    CHAR_STARTER = 64, CHAR_OPEN = 128, CHAR_CLOSED = CHAR_SECOND,
    /* Under a Precompiled pipeline, in the composition flags' place: a SAME_LENGTH char whose output is its
     * own bytes (SELF), a char whose grapheme value is 0 (CLUSTER_OTHER: only a Prepend joins it to the
     * char before), so neither its output nor its grapheme class need a lookup. */
    CHAR_SELF = CHAR_STARTER, CHAR_CLUSTER_OTHER = CHAR_OPEN
};

typedef struct {
    int decompositions, lead, second, trail, starter, open, transparent;
    int removed; /* Precompiled maps the char to nothing */
    uint32_t first_rank, last_rank;
} char_info;

typedef struct {
    uint8_t kind, left, right;
    uint32_t *text, *content; /* code points (see tp_norm_step) */
    size_t text_n, content_n;
    uint8_t *content_utf8;    /* REPLACE_REGEX: the content's UTF-8 (replace_bytes) */
    size_t content_len;
    tt_program *program;      /* REPLACE_REGEX: one compiled-regex split step, run for its matches */
    uint32_t *trie;           /* PRECOMPILED: the double-array trie units, then the replacement blob */
    size_t trie_n, blob_len, longest;
    uint8_t *blob;
} step;

/* Leading Prepend steps only put a prefix before the text (all of it aligned to the text's first
 * char), so they are done once per call and the rest, steps[lead..n), keeps the per-char fast path. */
struct tp_normalizer {
    step *steps;
    size_t n, lead, *expand; /* expand[k]: longest output of one char under step k */
    int graphemes;           /* the fast path of a pipeline that starts with Precompiled (see normalize_by_clusters) */
    uint8_t *prefix;         /* UTF-8 of the leading Prepend steps' combined prefix */
    size_t prefix_len;
    /* the steps after the leading Prepends are one Replace of an ASCII byte by one char (SentencePiece
     * conversions: " " -> "\u2581"): that byte, found with memchr, and its replacement (normalize_swapping);
     * swap_len 0 otherwise */
    uint8_t swap_byte, swap[4];
    size_t swap_len;
    uint32_t *per_char; /* NULL: no fast path; else per char below TABLE_CHARS: pool offset << 8 | output length */
    uint8_t *char_flags;
    uint8_t *pool;
    /* bit c: char c is SAME_LENGTH, its output is its own bytes and it is neither LEAD, SECOND nor TRANSPARENT
     * (under graphemes: its grapheme value is 0, so no cluster rule joins it to a char of value 0 before it), so in
     * a same-shape text it never needs context nor changes a byte: one bit tested instead of its flags, its table
     * entry and its pool bytes (see normalize_same_shape) */
    uint64_t *unchanged;
    uint8_t *edge_ranks; /* per char: the ranks of its decomposition's first and last chars (see reorders) */
    /* ASCII chars the table maps to one ASCII char (ascii_to) alone, needing no context (under graphemes
     * also: no cluster rule joins one to another of them); runs of them are translated through
     * (copy_plain_run) */
    uint8_t ascii_plain[128], ascii_to[128];
    int ascii_all_self; /* every ASCII char is plain and maps to itself: runs are bytes below 0x80, copied */
    /* every printable ASCII char (0x20-0x7E) is plain / is plain and maps to itself: runs of them are
     * found 16 bytes at a time */
    int printable_plain, printable_self;
    /* every printable ASCII char is plain and maps as ASCII lowercasing maps it (A-Z to a-z, the others to
     * themselves): runs are translated 16 bytes at a time, the control chars among them through ascii_to */
    int printable_lowercase;
    /* A Replace regex splits the steps into parts that run one after another, each on its own fast paths,
     * their alignments composed (then_normalize): steps[0] is one (regex_first), held alone, the steps after
     * it are after_regex (NULL: none); or the steps before a later one are before_regex and the rest
     * from_regex, and this normalizer holds no step itself (regex_cut). */
    int regex_first;
    tp_normalizer *after_regex, *before_regex, *from_regex;
    /* REPLACE_GIVEN steps: how many, and the steps without them (NULL: none left), which a text none of their
     * regexes matches in goes through with its fast paths */
    size_t n_given;
    tp_normalizer *without_given;
    uint64_t joins[256 * 256 / 64];    /* under graphemes: may_join(a, b) at bit a << 8 | b */
    uint64_t attaches[256 * 256 / 64]; /* under graphemes: must_join(a, b) at bit a << 8 | b */
};

typedef struct {
    uint32_t *cp, *start, *end;
    size_t n, cap;
} chars;

struct tp_norm_scratch {
    chars a, b;
    int32_t *change; /* decompose() working arrays, b.cap entries */
    uint32_t *rank;
    size_t work_cap;
    uint8_t *out;
    uint32_t *from, *to;
    size_t out_cap;
    uint8_t *joined; /* prefix + text */
    size_t joined_cap;
    int shifted; /* the last general run began with chars Precompiled removed uncounted (see emit_replacement) */
    int gave_up;        /* a Replace regex gave up on the text (TT_GAVE_UP): see tp_norm_gave_up */
    uint8_t *rx_text;   /* REPLACE_REGEX: the chars' UTF-8, and per byte starting a char, that char's index */
    uint32_t *rx_char;
    size_t rx_cap;
    tt_scratch *engine; /* REPLACE_REGEX: the engine's working memory, made on first use */
    const uint32_t *given, *given_next; /* REPLACE_GIVEN: the text's matches (tp_norm_give), the next step's */
    int given_fresh;    /* given not yet used by a tp_normalize */
    int inserted_first; /* a Replace put its content before the first char (see tp_norm_inserted_first) */
    struct tp_norm_scratch *stage; /* the next part's of a normalizer run in parts (then_normalize) */
};

static int in_set(const tt_norm_set *set, uint32_t c) {
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c > set->ranges[2 * mid + 1]) lo = mid + 1;
        else hi = mid;
    }
    return lo < set->n && c >= set->ranges[2 * lo];
}

/* Which chars below TABLE_CHARS each decomposition, lowercase and rank table names, and which are the second
 * of some composition, a bit a char, with the count of named chars before each word of bits: a table's entry
 * for such a char is found without a search (its index is the count of the chars named before it). Built
 * once from the tables (tp_normalizer_new). */
enum { NAMED_NFD, NAMED_NFKD, NAMED_LOWERCASE, NAMED_CCC_RANK, NAMED_SECOND, N_NAMED };
static uint64_t named[N_NAMED][TABLE_CHARS / 64];
static uint32_t named_before[N_NAMED][TABLE_CHARS / 64];
static pthread_once_t named_once = PTHREAD_ONCE_INIT;

static void name_char(int table, uint32_t c) {
    if (c < TABLE_CHARS) named[table][c >> 6] |= 1ull << (c & 63);
}

static void build_named(void) {
    const tt_norm_map *maps[] = {&tt_norm_nfd, &tt_norm_nfkd, &tt_norm_lowercase, &tt_norm_ccc_rank};
    for (int table = 0; table < NAMED_SECOND; table++)
        for (uint32_t i = 0; i < maps[table]->n; i++) name_char(table, maps[table]->cps[i]);
    for (uint32_t i = 0; i < tt_norm_compose_second.n; i++)
        for (uint32_t c = tt_norm_compose_second.ranges[2 * i]; c <= tt_norm_compose_second.ranges[2 * i + 1]; c++)
            name_char(NAMED_SECOND, c);
    for (int table = 0; table < N_NAMED; table++)
        for (uint32_t w = 1; w < TABLE_CHARS / 64; w++)
            named_before[table][w] = named_before[table][w - 1] + (uint32_t)__builtin_popcountll(named[table][w - 1]);
}

static int is_named(int table, uint32_t c) {
    return c >= TABLE_CHARS || (named[table][c >> 6] >> (c & 63) & 1);
}

static int named_table(const tt_norm_map *map) {
    return map == &tt_norm_nfd ? NAMED_NFD : map == &tt_norm_nfkd ? NAMED_NFKD
         : map == &tt_norm_lowercase ? NAMED_LOWERCASE : map == &tt_norm_ccc_rank ? NAMED_CCC_RANK : -1;
}

/* Output of c under map (length in *n), or NULL when c maps to itself. */
static const uint32_t *lookup(const tt_norm_map *map, uint32_t c, size_t *n) {
    int table = named_table(map);
    size_t lo;
    if (table >= 0 && c < TABLE_CHARS) {
        uint64_t word = named[table][c >> 6], bit = 1ull << (c & 63);
        if (!(word & bit)) return NULL;
        lo = named_before[table][c >> 6] + (size_t)__builtin_popcountll(word & (bit - 1));
    } else {
        size_t hi = map->n;
        lo = 0;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (map->cps[mid] < c) lo = mid + 1;
            else hi = mid;
        }
        if (lo == map->n || map->cps[lo] != c) return NULL;
    }
    *n = map->offsets[lo + 1] - map->offsets[lo];
    return map->out + map->offsets[lo];
}

static int chars_reserve(chars *c, size_t need) {
    if (need <= c->cap) return 0;
    size_t cap = c->cap ? c->cap : 256;
    while (cap < need) cap *= 2;
    void *p;
    if (!(p = realloc(c->cp, cap * 4))) return -1;
    c->cp = p;
    if (!(p = realloc(c->start, cap * 4))) return -1;
    c->start = p;
    if (!(p = realloc(c->end, cap * 4))) return -1;
    c->end = p;
    c->cap = cap;
    return 0;
}

static void push(chars *c, uint32_t cp, uint32_t start, uint32_t end) {
    c->cp[c->n] = cp; c->start[c->n] = start; c->end[c->n] = end;
    c->n++;
}

/* in's chars [from, to), as they are. */
static void push_all(chars *c, const chars *in, size_t from, size_t to) {
    memcpy(c->cp + c->n, in->cp + from, (to - from) * 4);
    memcpy(c->start + c->n, in->start + from, (to - from) * 4);
    memcpy(c->end + c->n, in->end + from, (to - from) * 4);
    c->n += to - from;
}

static const tt_norm_map *step_map(uint8_t kind) {
    return kind == TP_NORM_NFD || kind == TP_NORM_NFC ? &tt_norm_nfd : kind == TP_NORM_NFKD || kind == TP_NORM_NFKC ? &tt_norm_nfkd
         : kind == TP_NORM_LOWERCASE ? &tt_norm_lowercase : NULL;
}

static const tt_norm_set *step_removes(uint8_t kind) {
    return kind == TP_NORM_CLEAN_TEXT ? &tt_norm_clean_remove : kind == TP_NORM_BERT_STRIP ? &tt_norm_bert_strip
         : kind == TP_NORM_STRIP_ACCENTS ? &tt_norm_strip_accents : kind == TP_NORM_NMT ? &tt_norm_nmt_remove : NULL;
}

/* Rust char::is_whitespace: the engine's WS property of the char's atom. */
static int is_whitespace(uint32_t c) {
    uint8_t bytes[4], tags[4];
    size_t n = utf8_encode(c, bytes);
    tp_engine->classify(TT_ALPHABET_ATOMS, bytes, n, tags, NULL);
    return (tp_engine->atom_props[tags[0]] & TT_PROP_WS) != 0;
}

/* Longest output of one char under a step: chinese pads with 2 spaces; maps by their longest entry;
 * a Replace match by its content (Prepend's text comes on top, see normalize_chars). */
static size_t expansion(const step *st) {
    uint8_t kind = st->kind;
    const tt_norm_map *map = step_map(kind);
    size_t most = kind == TP_NORM_PRECOMPILED ? (st->longest > 1 ? st->longest : 1)
                : kind == TP_NORM_BYTE_LEVEL ? 4 : kind == TP_NORM_CHINESE ? 3
                : kind == TP_NORM_REPLACE_REGEX || kind == TP_NORM_REPLACE_GIVEN
                  ? st->content_n + 1 /* an empty match before the char */
                : kind == TP_NORM_REPLACE && st->content_n > 1 ? st->content_n : 1;
    for (uint32_t i = 0; map && i < map->n; i++)
        if (map->offsets[i + 1] - map->offsets[i] > most) most = map->offsets[i + 1] - map->offsets[i];
    return most;
}

static uint32_t ccc_rank(uint32_t c) {
    size_t n;
    const uint32_t *rank = lookup(&tt_norm_ccc_rank, c, &n);
    return rank ? *rank : 0;
}

/* Whether a decomposed char may compose with a starter before it: a char of its leading non-starters or its
 * first starter is the second of some composition (later chars meet that starter first). */
static int composes_backwards(const chars *decomposed) {
    for (size_t i = 0; i < decomposed->n; i++) {
        if (in_set(&tt_norm_compose_second, decomposed->cp[i])) return 1;
        if (!ccc_rank(decomposed->cp[i])) return 0;
    }
    return 0;
}

static int composes_forwards(uint32_t first) {
    uint64_t key = (uint64_t)first << 21;
    size_t lo = 0, hi = tt_norm_compose.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tt_norm_compose.keys[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < tt_norm_compose.n && tt_norm_compose.keys[lo] >> 21 == first;
}

static uint32_t composite(uint32_t first, uint32_t second) {
    uint64_t key = (uint64_t)first << 21 | second;
    size_t lo = 0, hi = tt_norm_compose.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tt_norm_compose.keys[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < tt_norm_compose.n && tt_norm_compose.keys[lo] == key ? tt_norm_compose.composed[lo] : 0;
}

/* Canonical composition in place (the standard algorithm; ranks order like combining classes). A
 * composed pair keeps one change: starter's + second's - 1 (the second's slot is absorbed). */
static void compose(chars *out, int32_t *change, const uint32_t *rank) {
    size_t o = 0;
    long starter = -1;
    uint32_t last = 0; /* rank of the last char kept since the starter; 0: none */
    for (size_t i = 0; i < out->n; i++) {
        uint32_t c = out->cp[i], r = rank[i], made;
        if (starter >= 0 && (last == 0 ? 1 : last < r) && is_named(NAMED_SECOND, c)
            && (made = composite(out->cp[starter], c))) {
            out->cp[starter] = made;
            change[starter] += change[i] - 1;
            continue;
        }
        out->cp[o] = c; change[o] = change[i];
        if (r == 0) { starter = (long)o; last = 0; }
        else if (starter >= 0) last = r;
        o++;
    }
    out->n = o;
}


/* Stock's transform rule: a char with change c <= 0 takes the next unconsumed input char's range and
 * consumes 1 - c of them, an inserted one (c > 0) takes the last consumed range ([0, 0) if none).
 * The first `consumed` input chars count as consumed already. */
static void align_changes(const chars *in, chars *out, const int32_t *change, size_t consumed) {
    for (size_t j = 0; j < out->n; j++) {
        if (change[j] <= 0) {
            size_t at = consumed < in->n ? consumed : in->n - 1;
            out->start[j] = in->start[at];
            out->end[j] = in->end[at];
            consumed += (size_t)(1 - change[j]);
        } else {
            out->start[j] = consumed ? in->start[consumed - 1] : 0;
            out->end[j] = consumed ? in->end[consumed - 1] : 0;
        }
    }
}

/* NFD/NFKD (and the decomposition half of NFC/NFKC) as stock's crate does it: each char becomes its
 * decomposition, the first char marked as replacing it (change 0) and the rest as inserted (+1);
 * runs of non-starters are stably sorted by combining class together with those marks; composition
 * merges marks. Then stock's transform rule gives the alignments: a char with change c <= 0 takes
 * the next unconsumed input char's range and consumes 1 - c of them, an inserted one takes the last
 * consumed range ([0, 0) if none). */
static void decompose(const tt_norm_map *map, int composing, const chars *in, chars *out, int32_t *change,
                      uint32_t *rank) {
    for (size_t i = 0; i < in->n; i++) {
        size_t n = 1;
        uint32_t c = in->cp[i];
        const uint32_t *mapped = lookup(map, c, &n);
        if (!mapped) mapped = &c, n = 1;
        for (size_t k = 0; k < n; k++) {
            size_t j = out->n;
            push(out, mapped[k], 0, 0);
            change[j] = k > 0;
            rank[j] = ccc_rank(mapped[k]);
            for (; j > 0 && rank[j] && rank[j - 1] > rank[j]; j--) { /* insertion sort within the run */
                uint32_t cp = out->cp[j]; out->cp[j] = out->cp[j - 1]; out->cp[j - 1] = cp;
                int32_t ch = change[j]; change[j] = change[j - 1]; change[j - 1] = ch;
                uint32_t r = rank[j]; rank[j] = rank[j - 1]; rank[j - 1] = r;
            }
        }
    }
    if (composing) compose(out, change, rank);
    align_changes(in, out, change, 0);
}

/* Strip: drop whitespace chars at the ends; the others keep their ranges. */
static void strip(const step *st, const chars *in, chars *out) {
    size_t lo = 0, hi = in->n;
    while (st->left && lo < hi && is_whitespace(in->cp[lo])) lo++;
    while (st->right && hi > lo && is_whitespace(in->cp[hi - 1])) hi--;
    for (size_t i = lo; i < hi; i++) push(out, in->cp[i], in->start[i], in->end[i]);
}

/* Replace: leftmost non-overlapping matches; every content char takes the range of the match's last
 * char (stock inserts them after removing the match). */
static void replace(const step *st, const chars *in, chars *out) {
    size_t m = st->text_n;
    for (size_t i = 0; i < in->n;) {
        if (i + m <= in->n && memcmp(in->cp + i, st->text, m * 4) == 0) {
            for (size_t k = 0; k < st->content_n; k++) push(out, st->content[k], in->start[i + m - 1], in->end[i + m - 1]);
            i += m;
        } else {
            push(out, in->cp[i], in->start[i], in->end[i]);
            i++;
        }
    }
}

/* Room for need bytes of UTF-8 in s->rx_text and their char numbers in s->rx_char. */
static int rx_reserve(tp_norm_scratch *s, size_t need) {
    if (need <= s->rx_cap) return 0;
    void *p;
    if (!(p = realloc(s->rx_text, need))) return -1;
    s->rx_text = p;
    if (!(p = realloc(s->rx_char, need * 4))) return -1;
    s->rx_char = p;
    s->rx_cap = need;
    return 0;
}

/* The chars' UTF-8 in s->rx_text (length in *len) and, at each byte that starts a char and at the end,
 * that char's index. */
static int chars_utf8(const chars *in, tp_norm_scratch *s, size_t *len) {
    if (rx_reserve(s, 4 * in->n + 1)) return -1;
    size_t b = 0;
    for (size_t i = 0; i < in->n; i++) {
        s->rx_char[b] = (uint32_t)i;
        b += utf8_encode(in->cp[i], s->rx_text + b);
    }
    s->rx_char[b] = (uint32_t)in->n;
    *len = b;
    return 0;
}

/* A Replace regex's matches (the engine's, as tokenizers' find_matches lists them over the chars' UTF-8,
 * whose char starts rx_char numbers) replaced: each gives way to the content, which takes the range of the
 * char before the match's end: its last char, or for an empty match the char before it, or [0, 0) at the
 * very start (stock aligns an insertion so). */
static size_t replace_match(const step *st, const chars *in, chars *out, tp_norm_scratch *s, size_t done,
                            size_t first, size_t end) {
    s->inserted_first |= end == 0 && st->content_n;
    push_all(out, in, done, first);
    uint32_t from = end ? in->start[end - 1] : 0, to = end ? in->end[end - 1] : 0;
    for (size_t c = 0; c < st->content_n; c++) push(out, st->content[c], from, to);
    return end;
}

static void replace_matches(const step *st, const chars *in, chars *out, tp_norm_scratch *s, const tt_seg *segs,
                            size_t n_segs) {
    size_t done = 0;
    for (size_t k = 0; k < n_segs; k++)
        if (segs[k].match)
            done = replace_match(st, in, out, s, done, s->rx_char[segs[k].start], s->rx_char[segs[k].end]);
    push_all(out, in, done, in->n);
}

/* A REPLACE_GIVEN step: its matches are the next ones given with the text (char indices of in). Matches that
 * do not fit the chars (out of order, past the end) give up: stock decides. */
static int replace_given(const step *st, const chars *in, chars *out, tp_norm_scratch *s) {
    const uint32_t *at = s->given_next;
    size_t n = at ? *at++ : 0, done = 0;
    for (size_t k = 0; k < n; k++) {
        size_t first = at[2 * k], end = at[2 * k + 1];
        if (first < done || end < first || end > in->n) {
            s->gave_up = 1;
            return -1;
        }
        done = replace_match(st, in, out, s, done, first, end);
    }
    push_all(out, in, done, in->n);
    if (at) s->given_next = at + 2 * n;
    return 0;
}

/* The engine's program_matches, noting a regex that gave up on the text (tp_norm_gave_up). 0, or -1. */
static int find_matches(tp_norm_scratch *s, const tt_program *program, const uint8_t *text, size_t len,
                        const tt_seg **segs, size_t *n_segs) {
    int rc = tp_engine->program_matches(program, s->engine, text, len, segs, n_segs);
    s->gave_up = rc == TT_GAVE_UP;
    return rc ? -1 : 0;
}

static int replace_regex(const step *st, const chars *in, chars *out, tp_norm_scratch *s) {
    size_t len, n_segs;
    const tt_seg *segs;
    if (chars_utf8(in, s, &len) || (!s->engine && !(s->engine = tp_engine->scratch_new()))
        || find_matches(s, st->program, s->rx_text, len, &segs, &n_segs))
        return -1;
    replace_matches(st, in, out, s, segs, n_segs);
    return 0;
}

static int precompiled(const step *st, const chars *in, chars *out, int32_t *change, int mid_text);

/* One step from in to out (sized in normalize_chars). Every other step keeps each char's own range:
 * deletions drop it, replacements and chinese padding reuse it; Prepend's chars take the first char's. */
static int apply(const step *st, const chars *in, chars *out, tp_norm_scratch *sc, int mid_text) {
    out->n = 0;
    uint8_t kind = st->kind;
    if (kind == TP_NORM_REPLACE_REGEX) return replace_regex(st, in, out, sc);
    if (kind == TP_NORM_REPLACE_GIVEN) return replace_given(st, in, out, sc);
    if (kind == TP_NORM_PRECOMPILED) { sc->shifted |= precompiled(st, in, out, sc->change, mid_text); return 0; }
    if (kind == TP_NORM_STRIP) { strip(st, in, out); return 0; }
    if (kind == TP_NORM_REPLACE) { replace(st, in, out); return 0; }
    if (kind == TP_NORM_PREPEND) {
        for (size_t k = 0; in->n && k < st->text_n; k++) push(out, st->text[k], in->start[0], in->end[0]);
        for (size_t i = 0; i < in->n; i++) push(out, in->cp[i], in->start[i], in->end[i]);
        return 0;
    }
    const tt_norm_map *map = step_map(kind);
    const tt_norm_set *removes = step_removes(kind);
    if (map && kind != TP_NORM_LOWERCASE) {
        decompose(map, kind == TP_NORM_NFC || kind == TP_NORM_NFKC, in, out, sc->change, sc->rank);
        return 0;
    }
    for (size_t i = 0; i < in->n; i++) {
        uint32_t c = in->cp[i], s = in->start[i], e = in->end[i];
        if (removes) {
            const tt_norm_set *spaces = kind == TP_NORM_CLEAN_TEXT ? &tt_norm_clean_space
                                      : kind == TP_NORM_NMT ? &tt_norm_nmt_space : NULL;
            if (!in_set(removes, c)) push(out, spaces && in_set(spaces, c) ? ' ' : c, s, e);
        } else if (kind == TP_NORM_BYTE_LEVEL) { /* every byte's char keeps the char's range (stock: the
                                                 * first replaces it, the others are inserted after it) */
            uint8_t bytes[4];
            size_t n = utf8_encode(c, bytes);
            for (size_t k = 0; k < n; k++) push(out, st->content[bytes[k]], s, e);
        } else if (kind == TP_NORM_CHINESE) {
            int pad = in_set(&tt_norm_chinese, c);
            if (pad) push(out, ' ', s, e);
            push(out, c, s, e);
            if (pad) push(out, ' ', s, e);
        } else {
            size_t n = 1;
            const uint32_t *mapped = lookup(map, c, &n);
            if (!mapped) mapped = &c, n = 1;
            for (size_t k = 0; k < n; k++) push(out, mapped[k], s, e);
        }
    }
    return 0;
}

/* ---- Precompiled: SentencePiece's charsmap as stock's spm_precompiled reads it. The trie is a Darts
 * double array over UTF-8 bytes; a lookup returns the first (shortest) key that is a prefix of the
 * chunk, stopping at a NUL byte; its value is an offset into the blob, whose replacement ends at the
 * next NUL. Stock walks extended grapheme clusters: a cluster shorter than 6 bytes is looked up whole
 * (the replacement then stands for the whole cluster even when the key covered only its start), any
 * other cluster, or one with no key, char by char. */

static size_t unit_offset(uint32_t unit) { return (size_t)(unit >> 10) << ((unit & (1u << 9)) >> 6); }
static int unit_has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
static uint32_t unit_label(uint32_t unit) { return unit & 0x800000FFu; }

/* Offset into the blob of the replacement for chunk, or -1: no key is a prefix of it. */
static long trie_first(const uint32_t *trie, size_t n, const uint8_t *chunk, size_t len) {
    size_t pos = unit_offset(trie[0]);
    for (size_t i = 0; i < len && chunk[i]; i++) {
        pos ^= chunk[i];
        if (pos >= n || unit_label(trie[pos]) != chunk[i]) return -1;
        uint32_t unit = trie[pos];
        pos ^= unit_offset(unit);
        if (unit_has_leaf(unit)) return pos < n ? (long)(trie[pos] & 0x7FFFFFFFu) : -1;
    }
    return -1;
}

/* Whether no key starts with bytes[0, n) (one char's) nor is a prefix of them (a lookup stops at NUL). */
static int trie_closed(const step *st, const uint8_t *bytes, size_t n) {
    size_t pos = unit_offset(st->trie[0]);
    for (size_t i = 0; i < n; i++) {
        if (!bytes[i]) return 1;
        pos ^= bytes[i];
        if (pos >= st->trie_n || unit_label(st->trie[pos]) != bytes[i]) return 1;
        uint32_t unit = st->trie[pos];
        pos ^= unit_offset(unit);
        if (unit_has_leaf(unit)) return 0;
    }
    return 0;
}

static uint8_t grapheme_of(uint32_t c) {
    return c < 0x110000 ? tt_grapheme.blocks[(size_t)tt_grapheme.stage1[c >> 8] << 8 | (c & 255)] : 0;
}

/* grapheme_of(c) for a char with table flags `flags` (see CHAR_CLUSTER_OTHER). */
static inline uint8_t grapheme_flagged(uint32_t c, uint8_t flags) {
    return flags & CHAR_CLUSTER_OTHER ? 0 : grapheme_of(c);
}

static int breaks_line(uint8_t kind) { return kind == TT_GRAPHEME_CR || kind == TT_GRAPHEME_LF || kind == TT_GRAPHEME_CONTROL; }

/* Whether UAX #29 can join b to a preceding a (the rules with their state ignored): where it cannot,
 * a cluster boundary lies between them whatever came before. */
static int may_join(uint8_t a, uint8_t b) {
    uint8_t ka = a & 15, kb = b & 15;
    if (ka == TT_GRAPHEME_CR && kb == TT_GRAPHEME_LF) return 1;
    if (breaks_line(ka) || breaks_line(kb)) return 0;
    if (ka == TT_GRAPHEME_L && (kb == TT_GRAPHEME_L || kb == TT_GRAPHEME_V || kb == TT_GRAPHEME_LV || kb == TT_GRAPHEME_LVT)) return 1;
    if ((ka == TT_GRAPHEME_LV || ka == TT_GRAPHEME_V) && (kb == TT_GRAPHEME_V || kb == TT_GRAPHEME_T)) return 1;
    if ((ka == TT_GRAPHEME_LVT || ka == TT_GRAPHEME_T) && kb == TT_GRAPHEME_T) return 1;
    if (kb == TT_GRAPHEME_EXTEND || kb == TT_GRAPHEME_ZWJ || kb == TT_GRAPHEME_SPACING_MARK || ka == TT_GRAPHEME_PREPEND) return 1;
    if (b >> TT_GRAPHEME_INCB_SHIFT == 1 && a >> TT_GRAPHEME_INCB_SHIFT >= 2) return 1;
    if (ka == TT_GRAPHEME_ZWJ && (b & TT_GRAPHEME_EXT_PICT)) return 1;
    return ka == TT_GRAPHEME_REGIONAL && kb == TT_GRAPHEME_REGIONAL;
}

/* Whether UAX #29 joins b to a preceding a whatever came before (may_join's rules that carry no state: GB3,
 * GB6-8, GB9, GB9a, GB9b, where grapheme_end's state never breaks): then b cannot start a cluster. */
static int must_join(uint8_t a, uint8_t b) {
    uint8_t ka = a & 15, kb = b & 15;
    if (!may_join(a, b) || (ka == TT_GRAPHEME_REGIONAL && kb == TT_GRAPHEME_REGIONAL)
        || (ka == TT_GRAPHEME_ZWJ && (b & TT_GRAPHEME_EXT_PICT)))
        return 0;
    if (kb == TT_GRAPHEME_EXTEND || kb == TT_GRAPHEME_ZWJ || kb == TT_GRAPHEME_SPACING_MARK || ka == TT_GRAPHEME_PREPEND) return 1;
    if (b >> TT_GRAPHEME_INCB_SHIFT == 1) return 0; /* GB9c's state may break before it */
    return (ka == TT_GRAPHEME_CR && kb == TT_GRAPHEME_LF) || (ka >= TT_GRAPHEME_L && kb >= TT_GRAPHEME_L);
}

/* End of the extended grapheme cluster that starts at cp[i] (UAX #29 with GB9c, GB11 and GB12/13 state). */
static size_t grapheme_end(const uint32_t *cp, size_t n, size_t i) {
    uint8_t prev = grapheme_of(cp[i]);
    int emoji = prev & TT_GRAPHEME_EXT_PICT ? 1 : 0, conjunct = prev >> TT_GRAPHEME_INCB_SHIFT == 1,
        regionals = (prev & 15) == TT_GRAPHEME_REGIONAL;
    for (i++; i < n; i++) {
        uint8_t g = grapheme_of(cp[i]), kind = g & 15, incb = g >> TT_GRAPHEME_INCB_SHIFT;
        if (!may_join(prev, g)) break;
        if (incb == 1 && (prev & 15) != TT_GRAPHEME_PREPEND && conjunct != 2 && kind != TT_GRAPHEME_EXTEND
            && kind != TT_GRAPHEME_ZWJ && kind != TT_GRAPHEME_SPACING_MARK)
            break;
        if ((prev & 15) == TT_GRAPHEME_ZWJ && (g & TT_GRAPHEME_EXT_PICT) && emoji != 2) break;
        if ((prev & 15) == TT_GRAPHEME_REGIONAL && kind == TT_GRAPHEME_REGIONAL && regionals % 2 == 0) break;
        conjunct = incb == 1 ? 1 : incb == 2 && conjunct ? 2 : incb == 3 ? conjunct : 0;
        emoji = g & TT_GRAPHEME_EXT_PICT ? 1 : kind == TT_GRAPHEME_EXTEND && emoji == 1 ? 1
              : kind == TT_GRAPHEME_ZWJ && emoji == 1 ? 2 : 0;
        regionals = kind == TT_GRAPHEME_REGIONAL ? regionals + 1 : 0;
        prev = g;
    }
    return i;
}

/* Stock's replace(): the replacement's chars replace old chars (change 0); extra ones are inserted
 * (+1 on the last ones); fewer ones fold the difference into the last char emitted so far, which may
 * be an earlier part's. With none emitted yet the removed chars are not counted at all, as in stock,
 * unless the run starts mid-text (*skip: input chars the alignment pass must pass over first). */
static int emit_replacement(const step *st, long at, size_t old, chars *out, int32_t *change, size_t *skip) {
    const uint8_t *p = st->blob + at, *end = st->blob + st->blob_len;
    size_t added = 0;
    while (p < end && *p) {
        size_t n;
        uint32_t c = utf8_decode(p, &n);
        change[out->n] = 0;
        push(out, c, 0, 0);
        p += n;
        added++;
    }
    if (added > old) for (size_t k = 0; k < added - old; k++) change[out->n - 1 - k] = 1;
    else if (added < old && out->n) change[out->n - 1] -= (int32_t)(old - added);
    else if (added < old && skip) *skip += old - added;
    else if (added < old) return 1;
    return 0;
}

/* Per cluster as stock's Precompiled does it, then stock's transform rule for the alignments.
 * mid_text: the chars start after text this call does not see (see emit_replacement). Returns 1 when
 * removed chars went uncounted: every later char then takes the range of the char before it, to the
 * end of the text. */
static int precompiled(const step *st, const chars *in, chars *out, int32_t *change, int mid_text) {
    size_t skip = 0;
    int shifted = 0;
    uint8_t buf[8];
    for (size_t i = 0; i < in->n;) {
        size_t end = grapheme_end(in->cp, in->n, i), len = 0;
        for (size_t k = i; k < end && len < 6; k++) len += utf8_encode(in->cp[k], buf);
        if (len < 6) {
            for (size_t k = i, b = 0; k < end; k++) b += utf8_encode(in->cp[k], buf + b);
            long at = trie_first(st->trie, st->trie_n, buf, len);
            if (at >= 0) {
                shifted |= emit_replacement(st, at, end - i, out, change, mid_text ? &skip : NULL);
                i = end;
                continue;
            }
        }
        for (; i < end; i++) {
            long at = trie_first(st->trie, st->trie_n, buf, utf8_encode(in->cp[i], buf));
            if (at >= 0) shifted |= emit_replacement(st, at, 1, out, change, mid_text ? &skip : NULL);
            else { change[out->n] = 0; push(out, in->cp[i], 0, 0); }
        }
    }
    align_changes(in, out, change, skip);
    return shifted;
}

static int work_reserve(tp_norm_scratch *s, size_t need) {
    if (need <= s->work_cap) return 0;
    void *p;
    if (!(p = realloc(s->change, need * 4))) return -1;
    s->change = p;
    if (!(p = realloc(s->rank, need * 4))) return -1;
    s->rank = p;
    s->work_cap = need;
    return 0;
}

static int out_reserve(tp_norm_scratch *s, size_t need) {
    if (need <= s->out_cap) return 0;
    size_t cap = s->out_cap ? s->out_cap : 1024;
    while (cap < need) cap *= 2;
    void *p;
    if (!(p = realloc(s->out, cap))) return -1;
    s->out = p;
    if (!(p = realloc(s->from, cap * 4))) return -1;
    s->from = p;
    if (!(p = realloc(s->to, cap * 4))) return -1;
    s->to = p;
    s->out_cap = cap;
    return 0;
}

/* Room for step k's output of n chars. */
static size_t step_room(const tp_normalizer *nz, size_t k, size_t n) {
    const step *st = &nz->steps[k];
    return n * nz->expand[k] + (st->kind == TP_NORM_PREPEND || st->kind == TP_NORM_REPLACE_REGEX
                                || st->kind == TP_NORM_REPLACE_GIVEN ? st->text_n + st->content_n : 0) + 1;
}

/* The general path over text[0, len), which sits at byte `base` of the caller's text: output goes to
 * s->out from byte `at` on, *out_len is where it ends. info (for a single char, when building the fast
 * path): what its decomposition does. */
static int normalize_chars(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                           size_t base, size_t at, size_t *out_len, char_info *info) {
    chars *in = &s->a, *next = &s->b;
    if (chars_reserve(in, len + 1)) return -1;
    in->n = 0;
    for (size_t pos = 0; pos < len;) {
        size_t n;
        uint32_t c = utf8_decode(text + pos, &n);
        push(in, c, (uint32_t)pos, (uint32_t)(pos + n));
        pos += n;
    }
    for (size_t k = nz->lead; k < nz->n; k++) {
        const step *st = &nz->steps[k];
        if (chars_reserve(next, step_room(nz, k, in->n)) || work_reserve(s, next->cap)) return -1;
        uint8_t kind = st->kind;
        int composing = kind == TP_NORM_NFC || kind == TP_NORM_NFKC;
        if (info && (composing || kind == TP_NORM_NFD || kind == TP_NORM_NFKD)) {
            /* what the char brings to this step: decomposed, does it start or end with a non-starter
             * (reordering with its neighbours), and may it compose with a starter before it */
            chars *decomposed = next;
            step half = {.kind = kind == TP_NORM_NFC ? TP_NORM_NFD : kind == TP_NORM_NFKC ? TP_NORM_NFKD : kind};
            apply(&half, in, decomposed, s, 0);
            info->decompositions++;
            info->transparent = in->n == 0;
            info->second = composing && composes_backwards(decomposed);
            info->lead = info->second || (decomposed->n && ccc_rank(decomposed->cp[0]));
            info->trail = decomposed->n && ccc_rank(decomposed->cp[decomposed->n - 1]);
            info->first_rank = decomposed->n ? ccc_rank(decomposed->cp[0]) : 0;
            info->last_rank = decomposed->n ? ccc_rank(decomposed->cp[decomposed->n - 1]) : 0;
        }
        if (apply(st, in, next, s, base > 0)) return -1;
        if (info && kind == TP_NORM_PRECOMPILED) info->removed = next->n == 0;
        for (size_t i = next->n; info && composing && i-- > 0;)
            if (!ccc_rank(next->cp[i])) {
                info->starter = 1;
                info->open = composes_forwards(next->cp[i]);
                break;
            }
        chars *t = in; in = next; next = t;
    }
    if (out_reserve(s, at + in->n * 4 + 1)) return -1;
    size_t o = at;
    for (size_t i = 0; i < in->n; i++) {
        size_t n = utf8_encode(in->cp[i], s->out + o);
        for (size_t b = 0; b < n; b++) { s->from[o + b] = (uint32_t)(base + in->start[i]); s->to[o + b] = (uint32_t)(base + in->end[i]); }
        o += n;
    }
    *out_len = o;
    return 0;
}

/* The char at pos (its UTF-8 length in *n) and its table flags: none past the table. */
static uint8_t flags_at(const tp_normalizer *nz, const uint8_t *text, size_t pos, uint32_t *c, size_t *n) {
    *c = text[pos];
    *n = 1;
    if (*c >= 0x80) *c = utf8_decode(text + pos, n);
    return *c < TABLE_CHARS ? nz->char_flags[*c] : 0;
}

/* A char where a general-path stretch may start or end: nothing reorders across the boundary before
 * it and its output depends on it alone. Chars past the table are never safe. */
static int is_safe(const tp_normalizer *nz, const uint8_t *text, size_t pos, size_t *n) {
    uint32_t c;
    return (flags_at(nz, text, pos, &c, n) & (CHAR_LOCAL | CHAR_LEAD | CHAR_TRANSPARENT)) == CHAR_LOCAL;
}

/* The per-char table's output for char c (input bytes [pos, pos + n)) at *o, each byte aligned to the char. */
static int put_table_output(const tp_normalizer *nz, tp_norm_scratch *s, uint32_t c, size_t pos, size_t n, size_t *o) {
    size_t m = nz->per_char[c] & 0xFF;
    const uint8_t *src = nz->pool + (nz->per_char[c] >> 8);
    if (*o + m > s->out_cap && out_reserve(s, *o + m)) return -1;
    for (size_t k = 0; k < m; k++) {
        s->out[*o + k] = src[k];
        s->from[*o + k] = (uint32_t)pos;
        s->to[*o + k] = (uint32_t)(pos + n);
    }
    *o += m;
    return 0;
}

/* The first byte of text[pos, end) outside printable ASCII (0x20-0x7E), or end. */
static inline size_t printable_end(const uint8_t *text, size_t pos, size_t end) {
#if defined(__SSE2__)
    const __m128i below = _mm_set1_epi8(0x20), above = _mm_set1_epi8(0x7E);
    for (; pos + 16 <= end; pos += 16) { /* as signed bytes, 0x80-0xFF are below 0x20 */
        __m128i x = _mm_loadu_si128((const __m128i *)(text + pos));
        uint32_t outside = (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmplt_epi8(x, below), _mm_cmpgt_epi8(x, above)));
        if (outside) return pos + (size_t)__builtin_ctz(outside);
    }
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    for (uint64_t word; pos + 8 <= end; pos += 8) {
        memcpy(&word, text + pos, 8);
        /* per byte below 0x80 (no carry out of it): + 0x60 sets the high bit from 0x20 on, + 1 at 0x7F;
         * a carry out of a byte from 0x80 on only reaches later bytes, past the first outside one */
        uint64_t outside = (word | ~(word + 0x60 * ones) | (word + ones)) & high;
        if (outside) return pos + (size_t)__builtin_ctzll(outside) / 8;
    }
#endif
    while (pos < end && text[pos] >= 0x20 && text[pos] < 0x7F) pos++;
    return pos;
}

/* The first non-ASCII byte of text[pos, len), or len: 32 bytes at a time. */
static inline size_t ascii_end(const uint8_t *text, size_t pos, size_t len) {
#if defined(__SSE2__)
    for (; pos + 32 <= len; pos += 32) {
        __m128i lo = _mm_loadu_si128((const __m128i *)(text + pos)), hi = _mm_loadu_si128((const __m128i *)(text + pos + 16));
        uint32_t high = (uint32_t)_mm_movemask_epi8(lo) | (uint32_t)_mm_movemask_epi8(hi) << 16;
        if (high) return pos + (size_t)__builtin_ctz(high);
    }
#endif
    return utf8_ascii_end(text, pos, len);
}

/* The end of the run of plain ASCII chars that starts at pos (a plain one). */
static size_t plain_run_end(const tp_normalizer *nz, const uint8_t *text, size_t len, size_t pos) {
    if (nz->ascii_all_self) return ascii_end(text, pos + 1, len);
    size_t end = pos + 1;
    for (;;) {
        if (nz->printable_plain) end = printable_end(text, end, len);
        if (end >= len || text[end] >= 0x80 || !nz->ascii_plain[text[end]]) return end;
        end++;
    }
}

/* The end of the run of chars in text[pos, end) (plain ASCII) that map to themselves. */
static size_t self_run_end(const tp_normalizer *nz, const uint8_t *text, size_t pos, size_t end) {
    for (;;) {
        if (nz->printable_self) pos = printable_end(text, pos, end);
        if (pos >= end || nz->ascii_to[text[pos]] != text[pos]) return pos;
        pos++;
    }
}

#if defined(__SSE2__)
/* 16 plain ASCII chars translated under printable_lowercase into *out; returns a bit per char that changed. */
static inline uint32_t lowercase16(const tp_normalizer *nz, const uint8_t *text, uint8_t *out) {
    __m128i x = _mm_loadu_si128((const __m128i *)text);
    __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('A' - 1)), _mm_cmplt_epi8(x, _mm_set1_epi8('Z' + 1)));
    __m128i control = _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8(0x20)), _mm_cmpeq_epi8(x, _mm_set1_epi8(0x7F)));
    _mm_storeu_si128((__m128i *)out, _mm_add_epi8(x, _mm_and_si128(upper, _mm_set1_epi8(0x20))));
    uint32_t changed = (uint32_t)_mm_movemask_epi8(upper);
    for (uint32_t rest = (uint32_t)_mm_movemask_epi8(control); rest; rest &= rest - 1) {
        uint32_t i = (uint32_t)__builtin_ctz(rest);
        out[i] = nz->ascii_to[text[i]];
        changed |= (uint32_t)(out[i] != text[i]) << i;
    }
    return changed;
}
#endif

/* The run of plain ASCII chars from pos (at least text[pos]) translated to *o, each byte aligned to
 * itself; returns where it ends. */
static size_t copy_plain_run(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                             size_t pos, size_t *o) {
    size_t end = plain_run_end(nz, text, len, pos);
    size_t m = end - pos, at = *o;
    if (at + m > s->out_cap && out_reserve(s, at + m)) return 0;
    uint8_t *out = s->out + at; /* a byte store could alias s: the pointer is held here */
    size_t k = pos;
#if defined(__SSE2__)
    if (nz->printable_lowercase && end - pos >= 16) { /* the last 16 overlap the blocks before: same bytes */
        for (; k + 16 <= end; k += 16) lowercase16(nz, text + k, out + (k - pos));
        lowercase16(nz, text + end - 16, out + (end - 16 - pos));
        k = end;
    }
#endif
    while (k < end) {
        size_t self_end = nz->ascii_all_self ? end : self_run_end(nz, text, k, end);
        memcpy(out + (k - pos), text + k, self_end - k);
        for (k = self_end; k < end && nz->ascii_to[text[k]] != text[k]; k++) out[k - pos] = nz->ascii_to[text[k]];
    }
    uint32_t *from = s->from + at, *to = s->to + at;
    for (size_t k = 0; k < m; k++) {
        from[k] = (uint32_t)(pos + k);
        to[k] = (uint32_t)(pos + k + 1);
    }
    *o = at + m;
    return end;
}

static inline int joins(const tp_normalizer *nz, uint8_t a, uint8_t b) {
    uint32_t bit = (uint32_t)a << 8 | b;
    return (int)(nz->joins[bit >> 6] >> (bit & 63)) & 1;
}

static inline int attaches(const tp_normalizer *nz, uint8_t a, uint8_t b) {
    uint32_t bit = (uint32_t)a << 8 | b;
    return (int)(nz->attaches[bit >> 6] >> (bit & 63)) & 1;
}

/* What the chars so far leave for the next one: a decomposition ending with a non-starter (reordering; the
 * char whose decomposition it is), a last starter that may take a second (composition). */
typedef struct {
    int previous_trail, open;
    uint32_t trail_char;
} context;

/* Whether canonical ordering moves c's leading non-starter before the trailing one of the char before:
 * a run of non-starters sorted within each char stays as it is when it is sorted where they meet. */
static inline int reorders(const tp_normalizer *nz, const context *at, uint32_t c) {
    uint8_t first = nz->edge_ranks[2 * (size_t)c];
    return first && first < nz->edge_ranks[2 * (size_t)at->trail_char + 1];
}

static inline int needs_context(const tp_normalizer *nz, const context *at, uint32_t c, uint8_t flags) {
    return !(flags & CHAR_LOCAL) || ((flags & CHAR_SECOND) && at->open)
        || ((flags & CHAR_LEAD) && at->previous_trail && reorders(nz, at, c));
}

static inline void after(context *at, uint32_t c, uint8_t flags) {
    if (flags & CHAR_TRANSPARENT) return;
    at->previous_trail = flags & CHAR_TRAIL;
    at->trail_char = c;
    if (flags & CHAR_STARTER) at->open = flags & CHAR_OPEN;
}

/* Where the table path takes over from normalize_same_shape, which leaves text[0, pos) in s->out and the
 * alignment: the table path's own state there (normalize_by_table: the last safe char and the context;
 * normalize_by_clusters: pos is a cluster boundary). */
typedef struct {
    size_t pos, safe_pos;
    context at;
} table_start;

static inline int is_unchanged(const tp_normalizer *nz, uint32_t c) {
    return c < TABLE_CHARS && (nz->unchanged[c >> 6] >> (c & 63) & 1);
}

/* Whether text[pos] starts an unchanged non-ASCII char (then *c is it and *n its length). */
static inline int unchanged_at(const tp_normalizer *nz, const uint8_t *text, size_t len, size_t pos, uint32_t *c,
                               size_t *n) {
    return pos < len && text[pos] >= 0x80 && is_unchanged(nz, *c = utf8_decode(text + pos, n));
}

/* The run of unchanged non-ASCII chars from pos (c, n bytes: an unchanged one) copied to *o, each byte aligned
 * to its char; returns where it ends (0 on OOM), *last: the last char. */
static size_t copy_unchanged_run(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                                 size_t pos, uint32_t c, size_t n, size_t *o, uint32_t *last) {
    if (*o + (len - pos) > s->out_cap && out_reserve(s, *o + (len - pos))) return 0;
    uint8_t *out = s->out + *o; /* held here: a byte store could alias s */
    uint32_t *from = s->from + *o, *to = s->to + *o;
    size_t end = pos;
    do {
        *last = c;
        for (size_t b = 0; b < n; b++) {
            out[end - pos + b] = text[end + b];
            from[end - pos + b] = (uint32_t)end;
            to[end - pos + b] = (uint32_t)(end + n);
        }
        end += n;
    } while (unchanged_at(nz, text, len, end, &c, &n));
    *o += end - pos;
    return end;
}

/* Table lookups char by char; where a char needs context, the general path redoes the stretch from
 * the last safe char up to the next one. */
static int normalize_by_table(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                              const table_start *start, size_t *out_len) {
    size_t o = start->pos, safe_pos = start->safe_pos, safe_o = start->safe_pos, n;
    context at = start->at;
    for (size_t pos = start->pos; pos < len;) {
        uint32_t c;
        if (text[pos] < 0x80 && nz->ascii_plain[text[pos]]) { /* every char of the run is safe */
            size_t end = copy_plain_run(nz, s, text, len, pos, &o);
            if (!end) return -1;
            safe_pos = end - 1;
            safe_o = o - 1;
            after(&at, text[end - 1], nz->char_flags[text[end - 1]]);
            pos = end;
            continue;
        }
        if (unchanged_at(nz, text, len, pos, &c, &n)) {
            /* as a plain run: every char is safe, the last one leaves the context */
            size_t run_o = o, end = copy_unchanged_run(nz, s, text, len, pos, c, n, &o, &c);
            if (!end) return -1;
            safe_pos = end - utf8_encoded_len(c);
            safe_o = run_o + (safe_pos - pos);
            after(&at, c, nz->char_flags[c]);
            pos = end;
            continue;
        }
        uint8_t flags = flags_at(nz, text, pos, &c, &n);
        if (needs_context(nz, &at, c, flags)) {
            size_t end = pos + n, step;
            while (end < len && !is_safe(nz, text, end, &step)) end += step;
            if (normalize_chars(nz, s, text + safe_pos, end - safe_pos, safe_pos, safe_o, &o, NULL)) return -1;
            pos = safe_pos = end;
            safe_o = o;
            at = (context){0, 1}; /* the char at `end` is safe: it leads with a starter that takes no second */
            continue;
        }
        if ((flags & (CHAR_LEAD | CHAR_TRANSPARENT)) == 0) { safe_pos = pos; safe_o = o; }
        after(&at, c, flags);
        if (put_table_output(nz, s, c, pos, n, &o)) return -1;
        pos += n;
    }
    *out_len = o;
    return 0;
}

/* The fast path of a pipeline that starts with Precompiled, from `start` (a cluster boundary before the
 * first char that needs more than the table; s->out and the alignment hold the text before it): a char's
 * table output holds where no
 * cluster rule can join it to the char before (may_join), or where every char since the last such
 * boundary (the chain) that may start the true cluster (all but those joined without state, must_join) is
 * CLOSED: no key begins the cluster, so it goes char by char; elsewhere the general path
 * redoes the stretch from the chain's start up to the next boundary, so every stretch starts and ends on
 * a cluster boundary. */
static int normalize_by_clusters(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                                 const table_start *from, size_t *out_len) {
    size_t start = from->pos;
    size_t o = start, safe_pos = start, safe_o = start, n;
    uint8_t previous = 0;
    int chain_closed = 0;
    for (size_t pos = start; pos < len;) {
        uint32_t c;
        if (text[pos] < 0x80 && nz->ascii_plain[text[pos]] && (pos == start || !joins(nz, previous, grapheme_of(text[pos])))) {
            size_t end = copy_plain_run(nz, s, text, len, pos, &o);
            if (!end) return -1;
            safe_pos = end - 1;
            safe_o = o - 1;
            previous = grapheme_of(text[end - 1]);
            chain_closed = nz->char_flags[text[end - 1]] & CHAR_CLOSED;
            pos = end;
            continue;
        }
        if (unchanged_at(nz, text, len, pos, &c, &n)
            && (pos == start || !joins(nz, previous, 0))) { /* every char of the run starts a cluster */
            size_t run_o = o, end = copy_unchanged_run(nz, s, text, len, pos, c, n, &o, &c);
            if (!end) return -1;
            safe_pos = end - utf8_encoded_len(c);
            safe_o = run_o + (safe_pos - pos);
            previous = 0;
            chain_closed = nz->char_flags[c] & CHAR_CLOSED;
            pos = end;
            continue;
        }
        uint8_t flags = flags_at(nz, text, pos, &c, &n), g = grapheme_flagged(c, flags);
        int joined = pos > start && joins(nz, previous, g);
        if (!(flags & CHAR_LOCAL) || (joined && !(chain_closed && ((flags & CHAR_CLOSED) || attaches(nz, previous, g))))) {
            size_t end = pos + n, step;
            uint8_t last = g;
            while (end < len) {
                uint32_t d;
                uint8_t f = flags_at(nz, text, end, &d, &step), h = grapheme_flagged(d, f);
                if ((f & CHAR_LOCAL) && !joins(nz, last, h)) break;
                last = h;
                end += step;
            }
            s->shifted = 0;
            if (normalize_chars(nz, s, text + safe_pos, end - safe_pos, safe_pos, safe_o, &o, NULL)) return -1;
            if (s->shifted) return normalize_chars(nz, s, text, len, 0, 0, out_len, NULL);
            pos = safe_pos = end;
            safe_o = o;
            previous = last;
            chain_closed = 0;
            continue;
        }
        if (!joined) {
            safe_pos = pos;
            safe_o = o;
            chain_closed = flags & CHAR_CLOSED;
        }
        previous = g;
        if (put_table_output(nz, s, c, pos, n, &o)) return -1;
        pos += n;
    }
    *out_len = o;
    return 0;
}

/* The text copied whole into s->out when the first char that changes is at pos (*changed > len until
 * then); later chars then write only what they change. -1 on OOM. */
static int start_changes(tp_norm_scratch *s, const uint8_t *text, size_t len, size_t pos, size_t *changed) {
    if (*changed <= len) return 0;
    if (out_reserve(s, len)) return -1;
    memcpy(s->out, text, len);
    *changed = pos;
    return 0;
}

/* text[pos, end) (plain ASCII) translated in place of itself: the chars that map to another one are
 * written into s->out (see start_changes). -1 on OOM. */
static int translate_run(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len, size_t pos,
                         size_t end, size_t *changed) {
#if defined(__SSE2__)
    if (nz->printable_lowercase && end - pos >= 16) { /* the last 16 overlap the blocks before: same bytes */
        uint8_t block[16];
        for (size_t k = pos;; k += 16) {
            if (k + 16 > end) k = end - 16;
            if (lowercase16(nz, text + k, block)) {
                if (start_changes(s, text, len, k, changed)) return -1;
                memcpy(s->out + k, block, 16);
            }
            if (k + 16 == end) return 0;
        }
    }
#endif
    for (size_t k = pos; k < end; k++) {
        if ((k = self_run_end(nz, text, k, end)) == end) break;
        if (start_changes(s, text, len, k, changed)) return -1;
        s->out[k] = nz->ascii_to[text[k]];
    }
    return 0;
}

#if defined(__SSE2__)
/* 0xFF on each continuation byte of 16 (0x80-0xBF: the signed bytes below -64). */
static __m128i continuations(__m128i bytes) { return _mm_cmplt_epi8(bytes, _mm_set1_epi8(-64)); }

/* The continuation mask of text[at, at + 16), the bytes from end on taken as ASCII. */
static __m128i continuations_up_to(const uint8_t *text, size_t at, size_t end) {
    if (at + 16 <= end) return continuations(_mm_loadu_si128((const __m128i *)(text + at)));
    uint8_t tail[16] = {0};
    if (at < end) memcpy(tail, text + at, end - at);
    return continuations(_mm_loadu_si128((const __m128i *)tail));
}

/* from/to of the 16 bytes at b: each byte's char starts where the continuation bytes ending at it began
 * (up to 3, counted from its own and the two before) and ends after those that follow it (up to 3). */
static void char_alignment_16(size_t b, __m128i before, __m128i here, __m128i after, uint32_t *from, uint32_t *to) {
    __m128i c1 = _mm_or_si128(_mm_slli_si128(here, 1), _mm_srli_si128(before, 15));
    __m128i c2 = _mm_or_si128(_mm_slli_si128(here, 2), _mm_srli_si128(before, 14));
    __m128i d1 = _mm_or_si128(_mm_srli_si128(here, 1), _mm_slli_si128(after, 15));
    __m128i d2 = _mm_or_si128(_mm_srli_si128(here, 2), _mm_slli_si128(after, 14));
    __m128i d3 = _mm_or_si128(_mm_srli_si128(here, 3), _mm_slli_si128(after, 13));
    __m128i back_run = _mm_and_si128(here, c1), ahead_run = _mm_and_si128(d1, d2), zero = _mm_setzero_si128();
    /* masks are -1 per counted byte: subtracting them counts */
    __m128i back = _mm_sub_epi8(_mm_sub_epi8(_mm_sub_epi8(zero, here), back_run), _mm_and_si128(back_run, c2));
    __m128i ahead = _mm_sub_epi8(_mm_sub_epi8(_mm_sub_epi8(zero, d1), ahead_run), _mm_and_si128(ahead_run, d3));
    __m128i back16[2] = {_mm_unpacklo_epi8(back, zero), _mm_unpackhi_epi8(back, zero)};
    __m128i ahead16[2] = {_mm_unpacklo_epi8(ahead, zero), _mm_unpackhi_epi8(ahead, zero)};
    __m128i at = _mm_add_epi32(_mm_set1_epi32((int)b), _mm_setr_epi32(0, 1, 2, 3)), one = _mm_set1_epi32(1);
    for (int k = 0; k < 4; k++) {
        __m128i back32 = k & 1 ? _mm_unpackhi_epi16(back16[k >> 1], zero) : _mm_unpacklo_epi16(back16[k >> 1], zero);
        __m128i ahead32 = k & 1 ? _mm_unpackhi_epi16(ahead16[k >> 1], zero) : _mm_unpacklo_epi16(ahead16[k >> 1], zero);
        _mm_storeu_si128((__m128i *)(from + 4 * k), _mm_sub_epi32(at, back32));
        _mm_storeu_si128((__m128i *)(to + 4 * k), _mm_add_epi32(_mm_add_epi32(at, one), ahead32));
        at = _mm_add_epi32(at, _mm_set1_epi32(4));
    }
}
#endif

/* tp_char_alignment of text[pos, end) (whole chars), written to from[0..] and to[0..]. With `overrun` (the
 * end of the text's bytes, past end; 0: none) a last step shorter than 16 bytes writes 16 entries, the ones
 * past end garbage for the caller to write over, which must have room for them: the byte at end, where a
 * char starts, ends every count before it. */
static void char_alignment_of(const uint8_t *text, size_t pos, size_t end, size_t overrun, uint32_t *from,
                              uint32_t *to) {
    /* byte by byte without a branch on the char's length (mixed scripts mispredict it) */
    static const uint8_t lead_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
    from -= pos;
    to -= pos;
    size_t b = pos;
#if defined(__SSE2__)
    /* 16 bytes a step: the bytes before pos and from end on belong to no char here (pos and end are char
     * boundaries, so no count reaches them) */
    __m128i before = _mm_setzero_si128(), here = continuations_up_to(text, b, overrun && b + 16 <= overrun ? b + 16 : end);
    for (; b + 16 <= end; b += 16) {
        __m128i after = continuations_up_to(text, b + 16, end);
        char_alignment_16(b, before, here, after, from + b, to + b);
        before = here;
        here = after;
    }
    if (overrun && b < end) {
        char_alignment_16(b, before, here, _mm_setzero_si128(), from + b, to + b);
        return;
    }
#endif
    /* of the char holding byte b: a continuation byte's is that of the byte before it */
    uint32_t start = b > pos ? from[b - 1] : (uint32_t)b, stop = b > pos ? to[b - 1] : (uint32_t)b;
    for (; b < end; b++) {
        uint32_t n = lead_len[text[b] >> 4], lead = 0u - (n != 0); /* all ones on a char's first byte */
        start = (start & ~lead) | ((uint32_t)b & lead);
        stop = (stop & ~lead) | ((uint32_t)(b + n) & lead);
        from[b] = start;
        to[b] = stop;
    }
}

void tp_char_alignment(const uint8_t *text, size_t len, uint32_t *from, uint32_t *to) {
    char_alignment_of(text, 0, len, 0, from, to);
}

/* text[pos, end) to o, which has 16 bytes of room past it: most runs between swapped bytes (words between
 * spaces) are one 16-byte copy, the bytes after the run written over next. */
static void copy_run(uint8_t *o, const uint8_t *text, size_t pos, size_t end, size_t len) {
#if defined(__SSE2__)
    if (end - pos <= 16 && pos + 16 <= len) {
        _mm_storeu_si128((__m128i *)o, _mm_loadu_si128((const __m128i *)(text + pos)));
        return;
    }
#endif
    memcpy(o, text + pos, end - pos);
}

/* The next swapped byte from text[pos] on, or NULL: the 16 bytes at pos looked at first (most runs are
 * shorter than that). */
static const uint8_t *next_swap(const tp_normalizer *nz, const uint8_t *text, size_t pos, size_t len) {
#if defined(__SSE2__)
    if (pos + 16 <= len) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)(text + pos));
        unsigned found = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8((char)nz->swap_byte)));
        if (found) return text + pos + __builtin_ctz(found);
        pos += 16;
    }
#endif
    return pos < len ? memchr(text + pos, nz->swap_byte, len - pos) : NULL;
}

/* A pipeline of swap_byte -> swap (after a prefix): the runs between the byte's occurrences are copied
 * whole, each occurrence becomes the swap char (all its bytes aligned to the byte), and the prefix (when
 * the text is not empty) aligns to the text's first char, as normalize_prefixed aligns it. */
static int normalize_swapping(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                              int align, const uint8_t **out, const uint32_t **from, const uint32_t **to,
                              size_t *out_len) {
    const uint8_t *next = memchr(text, nz->swap_byte, len);
    size_t p = len ? nz->prefix_len : 0;
    if (!next && !p) { /* unchanged */
        *out = text;
        return 0;
    }
    size_t cap = (p + len) * nz->swap_len + 16; /* every byte swapped, at worst; a run's alignment overruns */
    if (cap > s->out_cap && out_reserve(s, cap)) return -1;
    uint8_t *o = s->out;
    uint32_t *f = s->from, *t = s->to, first = len ? (uint32_t)utf8_char_len(text[0]) : 0;
    for (size_t b = 0; b < p; b++) { /* the prefix may hold the swapped byte too */
        size_t n = nz->prefix[b] == nz->swap_byte ? nz->swap_len : 1;
        memcpy(o, nz->prefix[b] == nz->swap_byte ? nz->swap : nz->prefix + b, n);
        for (size_t k = 0; align && k < n; k++) { f[k] = 0; t[k] = first; }
        o += n; f += n; t += n;
    }
    for (size_t pos = 0;;) {
        size_t end = next ? (size_t)(next - text) : len;
        copy_run(o, text, pos, end, len);
        if (align) char_alignment_of(text, pos, end, len, f, t);
        o += end - pos; f += end - pos; t += end - pos;
        if (!next) break;
        memcpy(o, nz->swap, nz->swap_len);
        for (size_t k = 0; align && k < nz->swap_len; k++) { f[k] = (uint32_t)end; t[k] = (uint32_t)end + 1; }
        o += nz->swap_len; f += nz->swap_len; t += nz->swap_len;
        pos = end + 1;
        next = next_swap(nz, text, pos, len);
    }
    *out = s->out;
    *out_len = (size_t)(o - s->out);
    if (align) { *from = s->from; *to = s->to; }
    return 0;
}

/* text[0, start) (same-shape chars) into s->out unless it is there already (`changed` <= start), each
 * byte aligned to its char. -1 on OOM. */
static int same_shape_prefix(tp_norm_scratch *s, const uint8_t *text, size_t start, size_t changed) {
    if (start == 0) return 0;
    if (out_reserve(s, start)) return -1;
    if (changed > start) memcpy(s->out, text, start);
    tp_char_alignment(text, start, s->from, s->to);
    return 0;
}

/* A text whose every char takes its table output (as normalize_by_table / normalize_by_clusters would
 * take it in context) of its own length: then normalized byte b comes from the char holding original byte
 * b, the alignment of an untouched text, and none is written. *out is the text itself while no char
 * changes. Returns 1 when the whole text is such, else 0 with *resume: where the table path takes over
 * (the first char that is not; under graphemes, the cluster boundary before it); -1 on OOM. */
static int normalize_same_shape(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                                const uint8_t **out, table_start *resume) {
    size_t changed = len + 1; /* where the output first differs from the text: not yet */
    size_t chain_start = 0;   /* under graphemes, as in normalize_by_clusters */
    size_t safe_pos = 0;      /* otherwise, as in normalize_by_table */
    context at = {0, 0};
    uint8_t previous = 0;
    int chain_closed = 0;
    for (size_t pos = 0; pos < len;) {
        if (text[pos] < 0x80 && nz->ascii_plain[text[pos]]
            && !(nz->graphemes && pos > 0 && joins(nz, previous, grapheme_of(text[pos])))) {
            size_t end = plain_run_end(nz, text, len, pos);
            if (!nz->ascii_all_self && translate_run(nz, s, text, len, pos, end, &changed)) return -1;
            if (nz->graphemes) {
                previous = grapheme_of(text[end - 1]);
                chain_closed = nz->char_flags[text[end - 1]] & CHAR_CLOSED;
                chain_start = end - 1;
            } else {
                safe_pos = end - 1;
                after(&at, text[end - 1], nz->char_flags[text[end - 1]]);
            }
            pos = end;
            continue;
        }
        uint32_t c;
        size_t n;
        if (unchanged_at(nz, text, len, pos, &c, &n) && !(nz->graphemes && pos > 0 && joins(nz, previous, 0))) {
            /* a run of unchanged chars: what it leaves for the next char comes from its last one, looked up once */
            size_t last_pos;
            uint32_t last;
            do {
                last_pos = pos;
                last = c;
                pos += n;
            } while (unchanged_at(nz, text, len, pos, &c, &n));
            if (nz->graphemes) {
                previous = 0;
                chain_start = last_pos;
                chain_closed = nz->char_flags[last] & CHAR_CLOSED;
            } else {
                safe_pos = last_pos;
                after(&at, last, nz->char_flags[last]);
            }
            continue;
        }
        uint8_t flags = flags_at(nz, text, pos, &c, &n);
        uint8_t g = 0;
        if (nz->graphemes) {
            g = grapheme_flagged(c, flags);
            int joined = pos > 0 && joins(nz, previous, g);
            if (!(flags & CHAR_SAME_LENGTH)
                || (joined && !(chain_closed && ((flags & CHAR_CLOSED) || attaches(nz, previous, g))))) {
                /* from a chain start before the char: a char Precompiled removes folds into the one before */
                if (same_shape_prefix(s, text, chain_start, changed)) return -1;
                *resume = (table_start){chain_start, chain_start, {0, 0}};
                return 0;
            }
            if (!joined) {
                chain_start = pos;
                chain_closed = flags & CHAR_CLOSED;
            }
        } else if (!(flags & CHAR_SAME_LENGTH) || needs_context(nz, &at, c, flags)) {
            if (same_shape_prefix(s, text, pos, changed)) return -1;
            *resume = (table_start){pos, safe_pos, at};
            return 0;
        } else if ((flags & (CHAR_LEAD | CHAR_TRANSPARENT)) == 0) {
            safe_pos = pos;
        }
        if (!(nz->graphemes && (flags & CHAR_SELF))) { /* a SELF char's bytes are in s->out already */
            const uint8_t *mapped = nz->pool + (nz->per_char[c] >> 8);
            if (changed > len && !tp_same_bytes(mapped, text + pos, n) && start_changes(s, text, len, pos, &changed))
                return -1;
            if (changed <= len) memcpy(s->out + pos, mapped, n);
        }
        if (nz->graphemes) previous = g;
        else after(&at, c, flags);
        pos += n;
    }
    *out = changed <= len ? s->out : text;
    return 1;
}

static int normalize_by_table_or_clusters(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text,
                                          size_t len, const table_start *start, size_t *out_len) {
    return nz->graphemes ? normalize_by_clusters(nz, s, text, len, start, out_len)
                         : normalize_by_table(nz, s, text, len, start, out_len);
}

/* The leading prefix goes in front of the text; its chars then align to the text's first char. */
static int normalize_prefixed(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                              size_t *out_len) {
    size_t p = nz->prefix_len, first;
    if (p + len > s->joined_cap) {
        uint8_t *grown = realloc(s->joined, 2 * (p + len));
        if (!grown) return -1;
        s->joined = grown; s->joined_cap = 2 * (p + len);
    }
    memcpy(s->joined, nz->prefix, p);
    memcpy(s->joined + p, text, len);
    utf8_decode(text, &first);
    int rc = nz->per_char ? normalize_by_table_or_clusters(nz, s, s->joined, p + len, &(table_start){0, 0, {0, 0}}, out_len)
                          : normalize_chars(nz, s, s->joined, p + len, 0, 0, out_len, NULL);
    for (size_t b = 0; rc == 0 && b < *out_len; b++) {
        s->from[b] = s->from[b] < p ? 0 : s->from[b] - (uint32_t)p;
        s->to[b] = s->to[b] == 0 ? 0 : s->to[b] <= p ? (uint32_t)first : s->to[b] - (uint32_t)p; /* [0, 0): inserted first */
    }
    return rc;
}

int tp_norm_gave_up(tp_norm_scratch *s) {
    int gave_up = s->gave_up;
    s->gave_up = 0;
    return gave_up;
}

void tp_norm_give(tp_norm_scratch *s, const uint32_t *given) {
    s->given = s->given_next = given;
    s->given_fresh = 1;
}

/* Whether the given matches hold none for any of the n_given steps. */
static int none_given(const uint32_t *given, size_t n_given) {
    for (size_t k = 0; k < n_given; given += 1 + 2 * (size_t)*given, k++)
        if (*given) return 0;
    return 1;
}

static int normalize_text(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len, int align,
                          const uint8_t **out, const uint32_t **from, const uint32_t **to, size_t *out_len);

int tp_norm_inserted_first(const tp_norm_scratch *s) { return s->inserted_first; }

/* The scratch of the part after the first (see then_normalize), its flags cleared. NULL on OOM. */
static tp_norm_scratch *stage_scratch(tp_norm_scratch *s) {
    if (!s->stage && !(s->stage = tp_norm_scratch_new())) return NULL;
    s->stage->inserted_first = s->stage->gave_up = 0;
    return s->stage;
}

/* The alignment of a text normalized in two parts, text -> mid (mid_from, mid_to) -> *out (*from, *to), each
 * NULL where that part left every byte in place, as one normalizer running both parts' steps makes it:
 * stock copies each output char's alignment from one char of the step's input, so an output byte takes the
 * alignment of the mid byte its range starts at, and [0, 0) (inserted before the first char) stays so. The
 * second part's arrays are its scratch's and are written over. -1 on OOM. */
static int compose_alignments(tp_norm_scratch *s, const uint8_t *text, size_t len, const uint8_t *mid,
                              const uint32_t *mid_from, const uint32_t *mid_to, const uint32_t **from,
                              const uint32_t **to, size_t out_len) {
    if (!*from) { /* the second part's bytes sit in the mid chars that hold them: the first part's alignment */
        *from = mid_from;
        *to = mid_to;
        return 0;
    }
    if (!mid_from) {
        if (mid == text) return 0; /* the first part changed nothing: mid's chars are the text's */
        if (out_reserve(s, len)) return -1; /* mid is s->out, of len bytes: not moved */
        tp_char_alignment(text, len, s->from, s->to);
        mid_from = s->from;
        mid_to = s->to;
    }
    uint32_t *f = (uint32_t *)*from, *t = (uint32_t *)*to;
    for (size_t b = 0; b < out_len; b++) {
        if (!t[b]) continue;
        uint32_t at = f[b];
        f[b] = mid_from[at];
        t[b] = mid_to[at];
    }
    return 0;
}

/* The steps of `rest` over what the steps before them made of the text (*out, *from, *to, *out_len), on
 * the stage scratch (the first part's arrays stay as they are), as the whole's output and alignment. */
static int then_normalize(const tp_normalizer *rest, tp_norm_scratch *s, const uint8_t *text, size_t len,
                          int align, const uint8_t **out, const uint32_t **from, const uint32_t **to,
                          size_t *out_len) {
    tp_norm_scratch *next = stage_scratch(s);
    if (!next) return -1;
    const uint8_t *mid = *out;
    const uint32_t *mid_from = *from, *mid_to = *to;
    int rc = normalize_text(rest, next, mid, *out_len, align, out, from, to, out_len);
    s->inserted_first |= next->inserted_first;
    s->gave_up = next->gave_up;
    if (rc) return -1;
    if (align) return compose_alignments(s, text, len, mid, mid_from, mid_to, from, to, *out_len);
    *from = *to = NULL;
    return 0;
}

/* Whether a match leaves the text as it was: the content is one char, the match's own bytes, which then
 * takes its own alignment. */
static int match_keeps_text(const step *st, const uint8_t *text, const tt_seg *seg) {
    return st->content_n == 1 && seg->end - seg->start == st->content_len
        && tp_same_bytes(text + seg->start, st->content_utf8, st->content_len);
}

/* A Replace regex's matches (segs over text, which some match changes) replaced byte by byte into s->out,
 * as replace_match replaces them: the content takes the range of the char that ends where the match does
 * (for an empty match, the char before it), or [0, 0) at the very start; every other byte keeps its char's.
 * -1 on OOM. */
static int replace_bytes(const step *st, tp_norm_scratch *s, const uint8_t *text, size_t len, const tt_seg *segs,
                         size_t n_segs, int align, size_t *out_len) {
    size_t need = len + 1;
    for (size_t k = 0; k < n_segs; k++) need += segs[k].match ? st->content_len : 0;
    if (out_reserve(s, need)) return -1;
    uint8_t *o = s->out;
    uint32_t *f = s->from, *t = s->to;
    size_t pos = 0;
    for (size_t k = 0; k <= n_segs; k++) {
        if (k < n_segs && !segs[k].match) continue;
        size_t start = k < n_segs ? segs[k].start : len;
        memcpy(o, text + pos, start - pos);
        if (align) char_alignment_of(text, pos, start, 0, f, t);
        o += start - pos; f += start - pos; t += start - pos;
        if (k == n_segs) break;
        size_t end = segs[k].end, char_start = end;
        while (char_start && utf8_is_continuation(text[--char_start])) {}
        s->inserted_first |= end == 0 && st->content_len;
        memcpy(o, st->content_utf8, st->content_len);
        for (size_t b = 0; align && b < st->content_len; b++) { f[b] = (uint32_t)char_start; t[b] = (uint32_t)end; }
        o += st->content_len; f += st->content_len; t += st->content_len;
        pos = end;
    }
    *out_len = (size_t)(o - s->out);
    return 0;
}

/* steps[0] a Replace regex: its matches replaced, then the steps after it (then_normalize); a text it leaves as
 * it was goes through those steps alone. */
static int normalize_from_regex(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                                int align, const uint8_t **out, const uint32_t **from, const uint32_t **to,
                                size_t *out_len) {
    const step *st = &nz->steps[0];
    const tt_seg *segs;
    size_t n_segs, changes = 0;
    if ((!s->engine && !(s->engine = tp_engine->scratch_new())) || find_matches(s, st->program, text, len, &segs, &n_segs))
        return -1;
    for (size_t k = 0; k < n_segs; k++) changes += segs[k].match && !match_keeps_text(st, text, &segs[k]);
    if (!changes) return nz->after_regex ? normalize_text(nz->after_regex, s, text, len, align, out, from, to, out_len) : 0;
    if (replace_bytes(st, s, text, len, segs, n_segs, align, out_len)) return -1;
    *out = s->out;
    if (align) { *from = s->from; *to = s->to; }
    return nz->after_regex ? then_normalize(nz->after_regex, s, text, len, align, out, from, to, out_len) : 0;
}

int tp_normalize(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len, int align,
                 const uint8_t **out, const uint32_t **from, const uint32_t **to, size_t *out_len) {
    s->inserted_first = 0;
    if (nz->n_given) {
        if (s->given && !s->given_fresh) { /* a second stretch of the text the matches were given for */
            s->gave_up = 1;
            return -1;
        }
        s->given_fresh = 0;
        s->given_next = s->given;
        if (!s->given || none_given(s->given, nz->n_given)) {
            if (nz->without_given)
                return normalize_text(nz->without_given, s, text, len, align, out, from, to, out_len);
            *from = *to = NULL;
            *out_len = len;
            *out = text;
            return 0;
        }
    }
    return normalize_text(nz, s, text, len, align, out, from, to, out_len);
}

static int normalize_text(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len, int align,
                          const uint8_t **out, const uint32_t **from, const uint32_t **to, size_t *out_len) {
    *from = *to = NULL;
    *out_len = len;
    *out = text;
    if (nz->before_regex) {
        if (normalize_text(nz->before_regex, s, text, len, align, out, from, to, out_len)) return -1;
        return then_normalize(nz->from_regex, s, text, len, align, out, from, to, out_len);
    }
    if (nz->regex_first) return normalize_from_regex(nz, s, text, len, align, out, from, to, out_len);
    if (nz->swap_len) return normalize_swapping(nz, s, text, len, align, out, from, to, out_len);
    table_start resume = {0, 0, {0, 0}};
    int same = nz->per_char && !nz->prefix_len ? normalize_same_shape(nz, s, text, len, out, &resume) : 0;
    if (same) return same < 0 ? -1 : 0;
    int rc = nz->prefix_len && len ? normalize_prefixed(nz, s, text, len, out_len)
           : nz->per_char ? normalize_by_table_or_clusters(nz, s, text, len, &resume, out_len)
                          : normalize_chars(nz, s, text, len, 0, 0, out_len, NULL);
    *out = s->out; *from = s->from; *to = s->to;
    return rc;
}

/* ascii_plain, ascii_to and joins from the per-char table. A plain char under graphemes may follow any
 * plain char (the run copy checks only its first char against the char before it). */
static void build_ascii_plain(tp_normalizer *nz) {
    for (uint32_t a = 0; a < 256; a++)
        for (uint32_t b = 0; b < 256; b++) {
            if (may_join((uint8_t)a, (uint8_t)b)) nz->joins[(a << 8 | b) >> 6] |= 1ull << ((a << 8 | b) & 63);
            if (must_join((uint8_t)a, (uint8_t)b)) nz->attaches[(a << 8 | b) >> 6] |= 1ull << ((a << 8 | b) & 63);
        }
    nz->ascii_all_self = !nz->graphemes;
    for (uint32_t c = 0; c < 128; c++) {
        nz->ascii_to[c] = nz->pool[nz->per_char[c] >> 8];
        nz->ascii_plain[c] = (nz->per_char[c] & 0xFF) == 1 && nz->ascii_to[c] < 0x80
                             && (nz->char_flags[c] & (CHAR_LOCAL | CHAR_LEAD | CHAR_TRANSPARENT)) == CHAR_LOCAL;
        nz->ascii_all_self &= nz->ascii_plain[c] && nz->ascii_to[c] == c;
    }
    if (nz->graphemes) {
        uint8_t plain[128];
        memcpy(plain, nz->ascii_plain, sizeof plain);
        for (uint32_t b = 0; b < 128; b++)
            for (uint32_t a = 0; a < 128 && nz->ascii_plain[b]; a++)
                if (plain[a] && joins(nz, grapheme_of(a), grapheme_of(b))) nz->ascii_plain[b] = 0;
    }
    nz->printable_plain = nz->printable_self = 1;
    nz->printable_lowercase = 1;
    for (uint32_t c = 0x20; c < 0x7F; c++) {
        nz->printable_plain &= nz->ascii_plain[c];
        nz->printable_self &= nz->ascii_plain[c] && nz->ascii_to[c] == c;
        nz->printable_lowercase &= nz->ascii_plain[c] && nz->ascii_to[c] == (c >= 'A' && c <= 'Z' ? c + 0x20 : c);
    }
}

/* Run the pipeline on every char below TABLE_CHARS alone. No fast path when two steps decompose (reordering
 * could then happen twice, which the flags do not describe), a step works on the whole string, or a
 * Precompiled step is not the first (its clusters would be over other steps' output) or comes with a
 * decomposing step. */
static int build_char_table(tp_normalizer *nz) {
    int decomposes = 0;
    for (size_t k = nz->lead; k < nz->n; k++) {
        const step *st = &nz->steps[k];
        if (st->kind == TP_NORM_STRIP || st->kind == TP_NORM_PREPEND || st->kind == TP_NORM_REPLACE_REGEX
            || st->kind == TP_NORM_REPLACE_GIVEN || (st->kind == TP_NORM_REPLACE && st->text_n > 1)
            || (st->kind == TP_NORM_PRECOMPILED && k > nz->lead))
            return 0;
        decomposes |= step_map(st->kind) != NULL && st->kind != TP_NORM_LOWERCASE;
        nz->graphemes |= st->kind == TP_NORM_PRECOMPILED;
    }
    if (nz->graphemes && decomposes) {
        nz->graphemes = 0;
        return 0;
    }
    tp_norm_scratch *s = tp_norm_scratch_new();
    size_t pool_len = 0, pool_cap = 4 * TABLE_CHARS;
    nz->per_char = malloc(TABLE_CHARS * sizeof(uint32_t));
    nz->char_flags = calloc(TABLE_CHARS, 1);
    nz->unchanged = calloc(TABLE_CHARS / 64, sizeof(uint64_t));
    nz->edge_ranks = calloc(TABLE_CHARS, 2);
    nz->pool = malloc(pool_cap);
    if (!s || !nz->per_char || !nz->char_flags || !nz->unchanged || !nz->edge_ranks || !nz->pool) { tp_norm_scratch_free(s); return -1; }
    for (uint32_t c = 0; c < TABLE_CHARS; c++) {
        uint8_t bytes[4];
        size_t n = utf8_encode(c, bytes), out_len;
        char_info info = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        nz->per_char[c] = 0;
        if (c >= 0xD800 && c < 0xE000) continue; /* not in valid UTF-8: never looked up */
        if (normalize_chars(nz, s, bytes, n, 0, 0, &out_len, &info)) { tp_norm_scratch_free(s); return -1; }
        if (info.decompositions > 1) {
            free(nz->per_char); free(nz->char_flags); free(nz->unchanged); free(nz->edge_ranks); free(nz->pool);
            nz->per_char = NULL; nz->char_flags = NULL; nz->unchanged = NULL; nz->edge_ranks = NULL; nz->pool = NULL;
            break;
        }
        int local = out_len < 256 && !info.removed;
        for (size_t b = 0; b < out_len; b++) local &= s->from[b] == 0 && s->to[b] == n;
        if (pool_len + out_len > pool_cap) {
            uint8_t *grown = realloc(nz->pool, pool_cap *= 2);
            if (!grown) { tp_norm_scratch_free(s); return -1; }
            nz->pool = grown;
        }
        memcpy(nz->pool + pool_len, s->out, out_len);
        nz->per_char[c] = (uint32_t)(pool_len << 8 | (local ? out_len : 0));
        nz->char_flags[c] = (local ? CHAR_LOCAL : 0) | (local && out_len == n ? CHAR_SAME_LENGTH : 0)
                         | (info.lead ? CHAR_LEAD : 0) | (info.second ? CHAR_SECOND : 0) | (info.trail ? CHAR_TRAIL : 0)
                         | (info.starter ? CHAR_STARTER : 0) | (info.open ? CHAR_OPEN : 0)
                         | (info.transparent ? CHAR_TRANSPARENT : 0)
                         | (nz->graphemes && trie_closed(&nz->steps[nz->lead], bytes, n) ? CHAR_CLOSED : 0);
        if (info.first_rank | info.last_rank) { /* zero (calloc) elsewhere: without a decomposing step, untouched */
            nz->edge_ranks[2 * c] = (uint8_t)info.first_rank;
            nz->edge_ranks[2 * c + 1] = (uint8_t)info.last_rank;
        }
        int self = local && out_len == n && !memcmp(s->out, bytes, n); /* its output is its own bytes */
        if (self && !(info.lead || info.second || info.transparent)
            && !(nz->graphemes && grapheme_of(c)))
            nz->unchanged[c >> 6] |= 1ull << (c & 63);
        if (nz->graphemes) /* no composing step: the composition flags are free (see CHAR_SELF) */
            nz->char_flags[c] = (nz->char_flags[c] & ~(CHAR_SELF | CHAR_CLUSTER_OTHER))
                              | (self ? CHAR_SELF : 0)
                              | (grapheme_of(c) == 0 ? CHAR_CLUSTER_OTHER : 0);
        pool_len += out_len;
    }
    tp_norm_scratch_free(s);
    if (nz->per_char) build_ascii_plain(nz);
    return 0;
}

/* UTF-8 (valid) to a new code point array; *n receives its length. */
static uint32_t *code_points(const uint8_t *text, size_t len, size_t *n) {
    uint32_t *cps = malloc((len ? len : 1) * 4);
    *n = 0;
    for (size_t pos = 0, k; cps && pos < len; pos += k) cps[(*n)++] = utf8_decode(text + pos, &k);
    return cps;
}

/* Every trie path a lookup can take from node pos (lookups stop at the first leaf; chunks are at most
 * 5 bytes): 0 when a step on a byte of UTF-8 text or a leaf leaves the trie or a value is not a char
 * boundary of the blob, where stock would panic. *longest: the most chars of any replacement reached. */
static int trie_check(const step *st, size_t pos, int depth, size_t *longest) {
    for (uint32_t c = 1; depth < 5 && c < 256; c++) {
        size_t child = pos ^ c;
        if (child >= st->trie_n) {
            if (c < 0xC0 || (c >= 0xC2 && c <= 0xF4)) return 0; /* a byte UTF-8 text can hold: stock would panic */
            continue;
        }
        if (unit_label(st->trie[child]) != c) continue;
        uint32_t unit = st->trie[child];
        size_t next = child ^ unit_offset(unit);
        if (!unit_has_leaf(unit)) {
            if (!trie_check(st, next, depth + 1, longest)) return 0;
            continue;
        }
        if (next >= st->trie_n) return 0;
        size_t at = st->trie[next] & 0x7FFFFFFFu, chars = 0;
        if (at > st->blob_len || (at < st->blob_len && (st->blob[at] & 0xC0) == 0x80)) return 0;
        for (size_t b = at; b < st->blob_len && st->blob[b]; b++) chars += (st->blob[b] & 0xC0) != 0x80;
        if (chars > *longest) *longest = chars;
    }
    return 1;
}

/* Parse a charsmap into st (trie units, blob padded with NULs so decoding never reads past it). */
static int load_charsmap(step *st, const uint8_t *map, size_t len) {
    if (len < 4) return -1;
    size_t size = (size_t)map[0] | (size_t)map[1] << 8 | (size_t)map[2] << 16 | (size_t)map[3] << 24;
    st->trie_n = size / 4;
    if (st->trie_n == 0 || st->trie_n > (len - 4) / 4) return -1;
    st->blob_len = len - 4 - 4 * st->trie_n;
    st->trie = malloc(st->trie_n * 4);
    st->blob = calloc(st->blob_len + 4, 1);
    if (!st->trie || !st->blob) return -1;
    for (size_t i = 0; i < st->trie_n; i++) {
        const uint8_t *u = map + 4 + 4 * i;
        st->trie[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    memcpy(st->blob, map + 4 + 4 * st->trie_n, st->blob_len);
    return trie_check(st, unit_offset(st->trie[0]), 0, &st->longest) ? 0 : -1;
}

int tp_precompiled_valid(const uint8_t *charsmap, size_t len) {
    step st;
    memset(&st, 0, sizeof(st));
    int ok = load_charsmap(&st, charsmap, len) == 0;
    free(st.trie);
    free(st.blob);
    return ok;
}

/* A program of the one split step whose matches a Replace regex replaces; NULL when the engine refuses it. */
static tt_program *regex_program(const tt_rx_spec *rx) {
    tt_step split = {.kind = TT_STEP_SPLIT_COMPILED, .behavior = TT_BEHAVIOR_REMOVED, .rx = rx};
    return rx ? tp_engine->program_new(&split, 1, NULL, 0) : NULL;
}

/* The combined prefix of the leading Prepend steps: each later one goes in front of the earlier ones. */
static int build_prefix(tp_normalizer *nz, const tp_norm_step *steps) {
    size_t total = 0;
    for (nz->lead = 0; nz->lead < nz->n && steps[nz->lead].kind == TP_NORM_PREPEND; nz->lead++) total += steps[nz->lead].text_len;
    nz->prefix = malloc(total ? total : 1);
    if (!nz->prefix) return -1;
    for (size_t k = nz->lead; k-- > 0;) {
        memcpy(nz->prefix + nz->prefix_len, steps[k].text, steps[k].text_len);
        nz->prefix_len += steps[k].text_len;
    }
    return 0;
}

/* Where a Replace regex cuts the steps into parts (see regex_first): the first one's index, or n when none
 * does (no Replace regex, or REPLACE_GIVEN steps, whose matches are given for the whole pipeline's input: the
 * general path runs them all). */
static size_t regex_cut(const tp_norm_step *steps, size_t n) {
    size_t cut = n;
    for (size_t k = n; k-- > 0;) {
        if (steps[k].kind == TP_NORM_REPLACE_GIVEN) return n;
        if (steps[k].kind == TP_NORM_REPLACE_REGEX) cut = k;
    }
    return cut;
}

/* n_given, and without_given when there are REPLACE_GIVEN steps. */
static int build_without_given(tp_normalizer *nz, const tp_norm_step *steps) {
    for (size_t k = 0; k < nz->n; k++) nz->n_given += steps[k].kind == TP_NORM_REPLACE_GIVEN;
    if (!nz->n_given || nz->n_given == nz->n) return 0;
    tp_norm_step *kept = malloc((nz->n - nz->n_given) * sizeof(tp_norm_step));
    if (!kept) return -1;
    size_t m = 0;
    for (size_t k = 0; k < nz->n; k++)
        if (steps[k].kind != TP_NORM_REPLACE_GIVEN) kept[m++] = steps[k];
    nz->without_given = tp_normalizer_new(kept, m);
    free(kept);
    return nz->without_given ? 0 : -1;
}

/* nz's steps from steps[0, n): 0, or -1 on OOM or a step tp_normalizer_new refuses. */
static int build_steps(tp_normalizer *nz, const tp_norm_step *steps, size_t n) {
    nz->steps = calloc(n ? n : 1, sizeof(step));
    nz->expand = malloc((n ? n : 1) * sizeof(size_t));
    if (!nz->steps || !nz->expand) return -1;
    nz->n = n;
    for (size_t k = 0; k < n; k++) {
        step *st = &nz->steps[k];
        if (steps[k].kind >= TP_NORM_N_KINDS || (steps[k].kind == TP_NORM_REPLACE && steps[k].text_len == 0))
            return -1;
        *st = (step){.kind = steps[k].kind, .left = steps[k].left, .right = steps[k].right};
        if (st->kind == TP_NORM_PRECOMPILED) {
            st->text = code_points(NULL, 0, &st->text_n);
            st->content = code_points(NULL, 0, &st->content_n);
            if (!st->text || !st->content || load_charsmap(st, steps[k].content, steps[k].content_len)) return -1;
            nz->expand[k] = expansion(st);
            continue;
        }
        st->text = code_points(steps[k].text, steps[k].text_len, &st->text_n);
        st->content = code_points(steps[k].content, steps[k].content_len, &st->content_n);
        if (!st->text || !st->content || (st->kind == TP_NORM_BYTE_LEVEL && st->content_n != 256)) return -1;
        if (st->kind == TP_NORM_REPLACE_REGEX) {
            st->content_len = steps[k].content_len;
            if (!(st->content_utf8 = malloc(st->content_len ? st->content_len : 1))) return -1;
            memcpy(st->content_utf8, steps[k].content, st->content_len);
            if (!(st->program = regex_program(steps[k].rx))) return -1;
        }
        nz->expand[k] = expansion(st);
    }
    return 0;
}

tp_normalizer *tp_normalizer_new(const tp_norm_step *steps, size_t n) {
    pthread_once(&named_once, build_named);
    tp_normalizer *nz = calloc(1, sizeof(*nz));
    if (!nz) return NULL;
    size_t cut = regex_cut(steps, n);
    if (cut > 0 && cut < n) { /* the two parts alone: this normalizer runs no step of its own */
        nz->before_regex = tp_normalizer_new(steps, cut);
        nz->from_regex = tp_normalizer_new(steps + cut, n - cut);
        if (nz->before_regex && nz->from_regex) return nz;
        tp_normalizer_free(nz);
        return NULL;
    }
    if (cut == 0 && n) { /* the regex alone; the steps after it are the next part */
        nz->regex_first = 1;
        if (!build_steps(nz, steps, 1) && (n == 1 || (nz->after_regex = tp_normalizer_new(steps + 1, n - 1)))) return nz;
        tp_normalizer_free(nz);
        return NULL;
    }
    if (build_steps(nz, steps, n) || build_without_given(nz, steps) || build_prefix(nz, steps)) {
        tp_normalizer_free(nz);
        return NULL;
    }
    if (nz->lead + 1 == n) {
        const tp_norm_step *swap = &steps[nz->lead];
        if (swap->kind == TP_NORM_REPLACE && swap->text_len == 1 && swap->text[0] < 0x80
            && nz->steps[nz->lead].content_n == 1 && swap->content_len <= sizeof nz->swap) {
            nz->swap_byte = swap->text[0];
            memcpy(nz->swap, swap->content, swap->content_len);
            nz->swap_len = swap->content_len;
            return nz; /* normalize_swapping needs no per-char table */
        }
    }
    if (build_char_table(nz)) { tp_normalizer_free(nz); return NULL; }
    return nz;
}

size_t tp_normalizer_given_steps(const tp_normalizer *nz) { return nz->n_given; }

void tp_normalizer_free(tp_normalizer *nz) {
    if (!nz) return;
    for (size_t k = 0; nz->steps && k < nz->n; k++) {
        free(nz->steps[k].text); free(nz->steps[k].content); free(nz->steps[k].content_utf8);
        free(nz->steps[k].trie); free(nz->steps[k].blob);
        if (nz->steps[k].program) tp_engine->program_free(nz->steps[k].program);
    }
    tp_normalizer_free(nz->after_regex);
    tp_normalizer_free(nz->before_regex);
    tp_normalizer_free(nz->from_regex);
    tp_normalizer_free(nz->without_given);
    free(nz->prefix);
    free(nz->steps);
    free(nz->expand);
    free(nz->per_char); free(nz->char_flags); free(nz->unchanged); free(nz->edge_ranks); free(nz->pool);
    free(nz);
}

tp_norm_scratch *tp_norm_scratch_new(void) {
    return calloc(1, sizeof(tp_norm_scratch));
}

void tp_norm_scratch_free(tp_norm_scratch *s) {
    if (!s) return;
    free(s->a.cp); free(s->a.start); free(s->a.end);
    free(s->b.cp); free(s->b.start); free(s->b.end);
    free(s->out); free(s->from); free(s->to);
    free(s->change); free(s->rank);
    free(s->joined);
    free(s->rx_text); free(s->rx_char);
    if (s->engine) tp_engine->scratch_free(s->engine);
    tp_norm_scratch_free(s->stage);
    free(s);
}
