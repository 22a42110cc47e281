# cython: language_level=3
"""hf_tagtok._native: the native encode pipeline (ext/pipeline/*.c) behind hf_tagtok.Tokenizer.

`Pipeline(spec)` takes the engine-neutral `hf_tagtok.planner.PipelineSpec` (one frozen dataclass per
stage, read here by attribute: steps, byte vocabulary, merges, added tokens, post-processor layout) and
encodes batches of str with the GIL released:
`encode` for single texts with no truncation or padding, `assemble` for the rest (pairs, truncation
with overflow, padding; ext/pipeline/tp_assemble.h).
The pre-tokenizer program is the engine's `Program` (cimported from hf_tagtok._engine); the pipeline's C code
calls the engine through the table `engine_api()` returns, so the engine is linked into _engine only.
The configuration readers hf_tagtok.models uses while it builds the model spec (`member_spans`,
`vocab_names`, `pair_ids_in`, `token_bytes`) are hf_tagtok._config's, reached from here too.
"""
cimport tagtok as tt
from hf_tagtok._engine cimport Program, _fill_compiled, _utf8, engine_api

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset
from posix.mman cimport MAP_ANONYMOUS, MAP_FAILED, MAP_PRIVATE, PROT_NONE, PROT_READ, PROT_WRITE, mmap, mprotect, munmap
from posix.unistd cimport _SC_PAGESIZE, sysconf
from cython.view cimport array as cvarray
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND

import numpy as np

from hf_tagtok._engine import RegexGaveUp
from hf_tagtok.errors import StockDecides

from hf_tagtok._config import member_span, member_spans, pair_ids_in, token_bytes, vocab_names  # noqa: F401  (the model spec's readers)
from hf_tagtok.encoding import RECORD_COLUMNS, RECORD_PADDING


cdef extern from "pipeline/tp_engine.h" nogil:
    void tp_engine_bind(const tt.tt_engine_api *api)

tp_engine_bind(engine_api())


cdef extern from "pipeline/tp_normalize.h" nogil:
    ctypedef struct tp_normalizer:
        pass
    ctypedef struct tp_norm_scratch:
        pass
    enum:
        TP_NORM_CLEAN_TEXT, TP_NORM_CHINESE, TP_NORM_NFD, TP_NORM_NFKD, TP_NORM_BERT_STRIP
        TP_NORM_STRIP_ACCENTS, TP_NORM_LOWERCASE, TP_NORM_NFC, TP_NORM_NFKC, TP_NORM_REPLACE, TP_NORM_PREPEND
        TP_NORM_STRIP, TP_NORM_REPLACE_REGEX, TP_NORM_NMT, TP_NORM_BYTE_LEVEL, TP_NORM_PRECOMPILED
        TP_NORM_REPLACE_GIVEN
    ctypedef struct tp_norm_step:
        uint8_t kind, left, right
        const uint8_t *text
        size_t text_len
        const uint8_t *content
        size_t content_len
        const tt.tt_rx_spec *rx
    tp_normalizer *tp_normalizer_new(const tp_norm_step *steps, size_t n)
    void tp_normalizer_free(tp_normalizer *nz)
    int tp_precompiled_valid(const uint8_t *charsmap, size_t len)
    tp_norm_scratch *tp_norm_scratch_new()
    void tp_norm_scratch_free(tp_norm_scratch *s)
    void tp_char_alignment(const uint8_t *text, size_t len, uint32_t *from_, uint32_t *to)
    int tp_normalize(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len, int align,
                     const uint8_t **out, const uint32_t **from_, const uint32_t **to, size_t *out_len)
    int tp_norm_gave_up(tp_norm_scratch *s)

cdef extern from "pipeline/tp_wordpiece.h" nogil:
    ctypedef struct tp_wordpiece:
        pass
    ctypedef struct tp_wordpiece_scratch:
        pass
    tp_wordpiece *tp_wordpiece_new(const uint8_t *const *tokens, const uint32_t *lens, const uint32_t *ids,
                                   size_t n, const uint8_t *prefix, size_t prefix_len, size_t max_chars,
                                   uint32_t unk_id, int whole_words)
    void tp_wordpiece_free(tp_wordpiece *wp)
    tp_wordpiece_scratch *tp_wordpiece_scratch_new()
    void tp_wordpiece_scratch_free(tp_wordpiece_scratch *s)
    ctypedef struct tp_words:
        const uint32_t *ids
        const uint32_t *starts
        const uint32_t *ends
        const uint32_t *first
        const uint32_t *count
    int tp_wordpiece_encode_words(const tp_wordpiece *wp, tp_wordpiece_scratch *s, const uint8_t *const *words,
                                  const size_t *lens, const uint64_t *hashes, size_t n, tp_words *out)

cdef extern from "pipeline/tp_unigram.h" nogil:
    ctypedef struct tp_unigram:
        pass
    ctypedef struct tp_unigram_scratch:
        pass
    tp_unigram *tp_unigram_new(const uint8_t *const *tokens, const uint32_t *lens, const double *scores, uint32_t n,
                               uint32_t unk_id, int byte_fallback)
    void tp_unigram_free(tp_unigram *model)
    tp_unigram_scratch *tp_unigram_scratch_new()
    void tp_unigram_scratch_free(tp_unigram_scratch *s)
    int tp_unigram_encode_words(const tp_unigram *model, tp_unigram_scratch *s, const uint8_t *const *words,
                                const size_t *lens, const uint64_t *hashes, size_t n, tp_words *out)


cdef extern from "pipeline/tp_bpe.h" nogil:
    ctypedef struct tp_bpe:
        pass
    ctypedef struct tp_merge:
        uint32_t left, right, merged
    ctypedef struct tp_bpe_options:
        int ignore_merges
        int char_level
        int byte_fallback
        const uint32_t *byte_tokens
        uint32_t unk_id
        int fuse_unk
        const uint8_t *prefix
        const uint8_t *suffix
        size_t prefix_len, suffix_len
    tp_bpe *tp_bpe_new(const uint8_t *const *tokens, const uint32_t *lens, uint32_t n_tokens,
                       const tp_merge *merges, uint32_t n_merges, const tp_bpe_options *options)
    void tp_bpe_free(tp_bpe *bpe)

cdef extern from "pipeline/tp_added.h" nogil:
    ctypedef struct tp_added:
        pass
    tp_added *tp_added_new(const uint8_t *const *contents, const uint32_t *lens, const uint32_t *ids,
                           const uint8_t *pass_, const uint8_t *skip, const uint8_t *lstrip,
                           const uint8_t *rstrip, const uint8_t *single_word, size_t n)
    void tp_added_free(tp_added *added)

cdef extern from "pipeline/tp_hash.h" nogil:
    uint64_t tp_word_key(const uint8_t *data, size_t len)

cdef extern from "pipeline/tp_pool.h" nogil:
    int tp_pool_threads()

cdef extern from "pipeline/tp_block.h" nogil:
    void tp_block_free(void *block)
    void *tp_zero_alloc(size_t bytes)
    void tp_zero_free(void *block)

cdef extern from "pipeline/tp_pipeline.h" nogil:
    ctypedef struct tp_special:
        uint32_t id, type_id
        int32_t name
    ctypedef struct tp_pipeline:
        const tt.tt_program *program
        const tt.tt_program *program_later
        const tp_bpe *bpe
        const tp_added *added
        const tp_special *before
        const tp_special *after
        size_t n_before, n_after
        uint32_t type_id
        const uint32_t *model_ids
        const uint16_t *trim_of
        const uint32_t *trim_ids
        size_t trim_len
        int trim_add_prefix_space
        uint8_t replacement[4]
        size_t n_replacement
        const tp_normalizer *normalizer
        const tp_wordpiece *wordpiece
        const tp_unigram *unigram
        const uint8_t *replay_bytes
        const uint32_t *replay_starts
        size_t n_replay_ids
    ctypedef struct tp_columns:
        uint32_t *ids
        uint32_t *type_ids
        uint32_t *offsets
        int64_t *wide_offsets
        uint8_t *special
        int32_t *words
        size_t n, cap
        int no_offsets
        uint8_t *block
    ctypedef struct tp_workspace:
        pass
    void tp_columns_free(tp_columns *columns)
    void tp_workspace_free(tp_workspace *ws)
    ctypedef struct tp_text:
        const void *data
        size_t len
        int unit
        const uint32_t *replay
        size_t n_replay
        const uint32_t *given
    enum: TP_TEXT_SURROGATE, TP_REPLAY_MISMATCH, TP_STOCK_DECIDES
    size_t tp_given_steps(const tp_pipeline *p)
    enum: TP_OFFSETS_NONE, TP_OFFSETS_NARROW, TP_OFFSETS_WIDE
    int tp_encode_batch(const tp_pipeline *p, tp_workspace **workspaces, const tp_text *texts, size_t n,
                        int add_special, int offsets, int words, tp_columns *out, int64_t *lengths)

cdef extern from "pipeline/tp_assemble.h" nogil:
    ctypedef struct tp_side:
        const tp_special *before
        const tp_special *after
        size_t n_before, n_after
        uint32_t main_type, window_type
        uint8_t main_range, window_range
    ctypedef struct tp_assembly:
        const tp_pipeline *p
        tp_side single[2]
        tp_side pair[2][2]
        size_t added_single, added_pair
        int truncate
        size_t max_length, stride
        int strategy, truncate_left
        int main_only
    ctypedef struct tp_padding:
        int enabled, fixed
        size_t length, multiple
        int left
        uint32_t id, type_id
    ctypedef struct tp_encoding:
        int64_t start, end, split
        int64_t ranges[4]
        int64_t main, lead, trail
    ctypedef struct tp_assembled:
        tp_columns tokens
        uint8_t *attention
        tp_encoding *encodings
        size_t n_encodings, size
    int TP_STOCK_RAISES
    int tp_assemble_batch(const tp_assembly *a, const tp_padding *padding, tp_workspace **workspaces,
                          const uint8_t *const *pieces, const size_t *piece_lens, const size_t *bounds,
                          const uint32_t *const *given, const uint8_t *is_pair, size_t n, int pretokenized,
                          int add_special, int columnar, tp_assembled *out, int64_t *windows)


NORMALIZER_STEPS = {"clean_text": TP_NORM_CLEAN_TEXT, "chinese": TP_NORM_CHINESE, "nfd": TP_NORM_NFD,
                    "nfkd": TP_NORM_NFKD, "bert_strip": TP_NORM_BERT_STRIP,
                    "strip_accents": TP_NORM_STRIP_ACCENTS, "lowercase": TP_NORM_LOWERCASE,
                    "nfc": TP_NORM_NFC, "nfkc": TP_NORM_NFKC, "replace": TP_NORM_REPLACE,
                    "prepend": TP_NORM_PREPEND, "strip": TP_NORM_STRIP, "replace_regex": TP_NORM_REPLACE_REGEX,
                    "nmt": TP_NORM_NMT, "byte_level": TP_NORM_BYTE_LEVEL, "precompiled": TP_NORM_PRECOMPILED,
                    "replace_given": TP_NORM_REPLACE_GIVEN}


def precompiled_valid(bytes charsmap):
    """Whether the native normalizer takes this SentencePiece charsmap (tp_precompiled_valid)."""
    return tp_precompiled_valid(<const uint8_t *><const char *>charsmap, len(charsmap)) == 1


cdef tp_normalizer *_build_normalizer(spec) except NULL:
    """spec: hf_tagtok.normalizers.NormalizerSpec."""
    steps = [(item,) if isinstance(item, str) else tuple(item) for item in spec.steps]
    cdef size_t n = len(steps), k
    cdef tp_norm_step *c_steps = <tp_norm_step *>calloc(n or 1, sizeof(tp_norm_step))
    cdef tp_normalizer *nz = NULL
    cdef tt.tt_step split
    strings = []  # keeps the arguments alive until the normalizer has copied them
    if c_steps == NULL:
        raise MemoryError()
    try:
        for k in range(n):
            name, arguments = steps[k][0], steps[k][1:]
            c_steps[k].kind = NORMALIZER_STEPS[name]
            if name == "strip":
                c_steps[k].left, c_steps[k].right = arguments
            elif name == "replace_regex":
                _fill_compiled(&split, arguments[0], strings)
                content = arguments[1].encode()
                strings.append(content)
                c_steps[k].rx = split.rx
                c_steps[k].content, c_steps[k].content_len = <const uint8_t *><const char *>content, len(content)
            elif name == "precompiled":
                content = bytes(arguments[0])
                if not precompiled_valid(content):
                    raise ValueError("Precompiled charsmap that stock could not use")
                strings.append(content)
                c_steps[k].content, c_steps[k].content_len = <const uint8_t *><const char *>content, len(content)
            elif name in ("byte_level", "replace_given"):
                content = arguments[0].encode()
                strings.append(content)
                c_steps[k].content, c_steps[k].content_len = <const uint8_t *><const char *>content, len(content)
            elif name in ("replace", "prepend"):
                text = arguments[0].encode()
                content = arguments[1].encode() if name == "replace" else b""
                if name == "replace" and not text:
                    raise ValueError("Replace with an empty pattern")
                strings += [text, content]
                c_steps[k].text, c_steps[k].text_len = <const uint8_t *><const char *>text, len(text)
                c_steps[k].content, c_steps[k].content_len = <const uint8_t *><const char *>content, len(content)
        nz = tp_normalizer_new(c_steps, n)
    finally:
        free(c_steps)
    if nz == NULL:
        raise MemoryError()
    return nz


cdef tp_wordpiece *_build_wordpiece(model) except NULL:
    """model: hf_tagtok.models.VocabSpec."""
    tokens, token_ids = model.tokens, model.ids
    cdef size_t n = len(tokens), i
    cdef const uint8_t **ptrs = <const uint8_t **>malloc((n or 1) * sizeof(uint8_t *))
    cdef uint32_t *lens = <uint32_t *>malloc((n or 1) * sizeof(uint32_t))
    cdef uint32_t *ids = <uint32_t *>malloc((n or 1) * sizeof(uint32_t))
    cdef tp_wordpiece *wp = NULL
    prefix = model.prefix
    try:
        if ptrs == NULL or lens == NULL or ids == NULL:
            raise MemoryError()
        for i in range(n):
            ptrs[i] = <const uint8_t *><const char *>tokens[i]
            lens[i] = len(tokens[i])
            ids[i] = token_ids[i]
        wp = tp_wordpiece_new(ptrs, lens, ids, n, <const uint8_t *><const char *>prefix, len(prefix),
                              model.max_chars, model.unk_id, model.kind == "WordLevel")
    finally:
        free(ptrs); free(lens); free(ids)
    if wp == NULL:
        raise MemoryError()
    return wp


UNIGRAM_RAISES = 0xFFFFFFFE  # TP_UNIGRAM_RAISES


cdef tp_unigram *_build_unigram(model) except NULL:
    """model: hf_tagtok.models.UnigramSpec."""
    tokens, scores = model.tokens, model.scores
    cdef size_t n = len(tokens), i
    unk_id = n if model.unk_id is None else model.unk_id  # n: no unk piece (see tp_unigram.h)
    if n == 0 or not 0 <= unk_id <= n:
        raise ValueError("Unigram needs a non-empty vocabulary holding unk_id")
    cdef const uint8_t **ptrs = <const uint8_t **>malloc(n * sizeof(uint8_t *))
    cdef uint32_t *lens = <uint32_t *>malloc(n * sizeof(uint32_t))
    cdef double *c_scores = <double *>malloc(n * sizeof(double))
    cdef tp_unigram *model_ = NULL
    try:
        if ptrs == NULL or lens == NULL or c_scores == NULL:
            raise MemoryError()
        for i in range(n):
            ptrs[i] = <const uint8_t *><const char *>tokens[i]
            lens[i] = len(tokens[i])
            c_scores[i] = scores[i]
        model_ = tp_unigram_new(ptrs, lens, c_scores, n, unk_id, model.byte_fallback)
    finally:
        free(ptrs); free(lens); free(c_scores)
    if model_ == NULL:
        raise MemoryError()
    return model_


cdef class Normalizer:
    """A native normalizer alone (for tests): normalize(str) -> (normalized str, starts, ends): uint32
    arrays, the original byte range of each normalized byte."""
    cdef tp_normalizer *_nz
    cdef tp_norm_scratch *_scratch

    def __cinit__(self, spec):
        self._nz = _build_normalizer(spec)
        self._scratch = tp_norm_scratch_new()
        if self._scratch == NULL:
            raise MemoryError()

    def __dealloc__(self):
        tp_normalizer_free(self._nz)
        tp_norm_scratch_free(self._scratch)

    def normalize(self, str text):
        data = text.encode("utf-8", "surrogatepass")
        cdef const uint8_t *out
        cdef const uint32_t *from_
        cdef const uint32_t *to
        cdef size_t n, i
        rc = tp_normalize(self._nz, self._scratch, <const uint8_t *><const char *>data, len(data), 1,
                          &out, &from_, &to, &n)
        if rc < 0:
            if tp_norm_gave_up(self._scratch):
                raise RegexGaveUp("a Replace regex backtracked past the engine's limit on this text")
            raise MemoryError()
        starts, ends = np.empty(n, dtype=np.uint32), np.empty(n, dtype=np.uint32)
        cdef uint32_t[::1] starts_view = starts, ends_view = ends
        if from_ == NULL and n:  # every byte stayed in place: each aligns to the original char holding it
            tp_char_alignment(<const uint8_t *><const char *>data, n, &starts_view[0], &ends_view[0])
        elif n:
            memcpy(&starts_view[0], from_, n * 4)
            memcpy(&ends_view[0], to, n * 4)
        return (<const char *>out)[:n].decode("utf-8"), starts, ends


cdef class WordModel:
    """A native WordPiece/WordLevel or Unigram model alone (for tests), from its hf_tagtok.models spec:
    encode(word str) -> [(id, start, end)] byte ranges."""
    cdef tp_wordpiece *_wordpiece
    cdef tp_wordpiece_scratch *_wordpiece_scratch
    cdef tp_unigram *_unigram
    cdef tp_unigram_scratch *_unigram_scratch

    def __cinit__(self, model):
        if model.kind == "Unigram":
            self._unigram = _build_unigram(model)
            self._unigram_scratch = tp_unigram_scratch_new()
            if self._unigram_scratch == NULL:
                raise MemoryError()
        else:
            self._wordpiece = _build_wordpiece(model)
            self._wordpiece_scratch = tp_wordpiece_scratch_new()
            if self._wordpiece_scratch == NULL:
                raise MemoryError()

    def __dealloc__(self):
        tp_wordpiece_free(self._wordpiece)
        tp_wordpiece_scratch_free(self._wordpiece_scratch)
        tp_unigram_free(self._unigram)
        tp_unigram_scratch_free(self._unigram_scratch)

    def encode(self, str word):
        data = word.encode("utf-8")
        cdef const uint8_t *bytes_ = <const uint8_t *><const char *>data
        cdef size_t length = len(data), i
        cdef tp_words out
        cdef int rc
        if self._unigram != NULL:
            rc = tp_unigram_encode_words(self._unigram, self._unigram_scratch, &bytes_, &length, NULL, 1, &out)
        else:
            rc = tp_wordpiece_encode_words(self._wordpiece, self._wordpiece_scratch, &bytes_, &length, NULL, 1, &out)
        if rc:
            raise MemoryError()
        return [(out.ids[i], out.starts[i], out.ends[i]) for i in range(out.count[0])]


def word_keys(bytes word):
    """(mid-page, at a page's end): the cache key of a word of at most 8 bytes read both ways, the second with
    the word's last byte the last readable one (no page mapped after it)."""
    cdef size_t n = len(word), page = <size_t>sysconf(_SC_PAGESIZE)
    if n > 8:
        raise ValueError("a word key is of at most 8 bytes")
    cdef uint8_t *pages = <uint8_t *>mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    if pages == <uint8_t *>MAP_FAILED:
        raise MemoryError()
    cdef uint8_t *at_end = pages + page - n
    memcpy(pages + 100, <const char *>word, n)
    memcpy(at_end, <const char *>word, n)
    if mprotect(pages + page, page, PROT_NONE):
        munmap(pages, 2 * page)
        raise OSError("the guard page could not be made unreadable")
    keys = (tp_word_key(pages + 100, n), tp_word_key(at_end, n))
    munmap(pages, 2 * page)
    return keys


def pool_threads():
    """Threads a batch is spread over (HF_TAGTOK_THREADS, else the CPUs this process may use)."""
    return tp_pool_threads()


cdef tp_special *_specials(list items) except NULL:
    cdef tp_special *out = <tp_special *>calloc(len(items) or 1, sizeof(tp_special))
    if out == NULL:
        raise MemoryError()
    for i, (token_id, type_id, name) in enumerate(items):
        out[i].id = token_id
        out[i].type_id = type_id
        out[i].name = name
    return out


cdef int _side(tp_side *side, spec) except -1:
    """spec: hf_tagtok.processors.Side."""
    side.before = _specials(list(spec.before))
    side.n_before = len(spec.before)
    side.after = _specials(list(spec.after))
    side.n_after = len(spec.after)
    side.main_type, side.window_type = spec.main_type, spec.window_type
    side.main_range, side.window_range = spec.main_range, spec.window_range
    return 0


cdef void _side_free(tp_side *side):
    free(<void *>side.before)
    free(<void *>side.after)


STRATEGIES = {"longest_first": 0, "only_first": 1, "only_second": 2}  # tp_assemble.h's enum


cdef class Pipeline:
    """One tokenizer's native pipeline; immutable, shareable across threads (per-slot scratch)."""
    cdef tp_pipeline _p
    cdef tp_assembly _assembly
    cdef tp_bpe *_bpe
    cdef tp_normalizer *_normalizer
    cdef tp_wordpiece *_wordpiece
    cdef tp_unigram *_unigram
    cdef tp_added *_added
    cdef tp_workspace **_workspaces
    cdef int _n_workspaces
    cdef Program _program, _program_later
    cdef bytes _trim_of, _trim_ids, _model_ids, _replay_bytes, _replay_starts

    def __cinit__(self, spec):
        """spec: hf_tagtok.planner.PipelineSpec."""
        if spec.pre_tokenizer is None:
            self._replay_from(spec.spellings)
        else:
            self._build_program(spec.pre_tokenizer.steps)
        model = spec.model
        if model.kind in ("WordPiece", "WordLevel"):
            self._wordpiece = _build_wordpiece(model)
        elif model.kind == "Unigram":
            self._unigram = _build_unigram(model)
        else:
            self._build_bpe(model)
            if model.model_ids is not None:
                self._model_ids = model.model_ids.astype(np.uint32).tobytes()
                self._p.model_ids = <const uint32_t *><const char *>self._model_ids
        if spec.normalizer is not None and spec.normalizer.steps:  # no steps: text unchanged
            self._normalizer = _build_normalizer(spec.normalizer)
        self._p.normalizer = self._normalizer
        self._p.wordpiece = self._wordpiece
        self._p.unigram = self._unigram
        self._build_added(list(spec.added_tokens), spec.encode_special_tokens)
        post = spec.post_processor
        self._p.bpe = self._bpe
        self._p.added = self._added
        for add_special in range(2):
            _side(&self._assembly.single[add_special], post.single[add_special])
            for sequence in range(2):
                _side(&self._assembly.pair[add_special][sequence], post.pair[add_special][sequence])
        # the plain path: a single text with special tokens (its type id is the same without them)
        self._p.before, self._p.n_before = self._assembly.single[1].before, self._assembly.single[1].n_before
        self._p.after, self._p.n_after = self._assembly.single[1].after, self._assembly.single[1].n_after
        self._p.type_id = self._assembly.single[1].main_type
        self._assembly.p = &self._p
        self._assembly.added_single, self._assembly.added_pair = spec.added
        trim = spec.trim
        if trim is not None:
            lead, trail = np.frombuffer(trim.lead, dtype=np.uint8), np.frombuffer(trim.trail, dtype=np.uint8)
            self._trim_of = (lead.astype(np.uint16) | trail.astype(np.uint16) << 8).tobytes()
            self._p.trim_of = <const uint16_t *><const char *>self._trim_of
            self._p.trim_len = len(lead)
            if trim.ids is not None:
                self._trim_ids = trim.ids.astype(np.uint32).tobytes()
                self._p.trim_ids = <const uint32_t *><const char *>self._trim_ids
            self._p.trim_add_prefix_space = trim.add_prefix_space
        self._n_workspaces = tp_pool_threads()
        self._workspaces = <tp_workspace **>calloc(self._n_workspaces, sizeof(tp_workspace *))
        if self._workspaces == NULL:
            raise MemoryError()

    cdef _build_program(self, list steps):
        self._program = Program(steps)
        self._p.program = self._program._prog
        steps = list(steps)
        final = steps.pop() if steps else {}  # (no negative indexing: wraparound is off)
        if final.get("kind") == "metaspace" and final.get("prepend_scheme") == "first":
            # stock prepends only on the split at original offset 0
            self._program_later = Program([*steps, {**final, "prepend_scheme": "never"}])
            self._p.program_later = self._program_later._prog
        if self._program.render == "metaspace":
            replacement = self._program._prefix.encode("utf-8")
            memcpy(self._p.replacement, <const char *>replacement, len(replacement))
            self._p.n_replacement = len(replacement)

    cdef _replay_from(self, spellings):
        """No program: each text's tokens come with it (`encode`'s replay). spellings: planner.Spellings."""
        self._replay_bytes = spellings.blob
        self._replay_starts = spellings.starts.astype(np.uint32).tobytes()
        self._p.replay_bytes = <const uint8_t *><const char *>self._replay_bytes
        self._p.replay_starts = <const uint32_t *><const char *>self._replay_starts
        self._p.n_replay_ids = len(spellings.starts) - 1

    cdef _build_bpe(self, model):
        """model: hf_tagtok.models.BpeSpec."""
        tokens = model.tokens
        cdef const uint32_t[:, ::1] merges = model.merges
        cdef size_t n = len(tokens), m = merges.shape[0], i
        cdef const uint8_t **ptrs = <const uint8_t **>malloc((n or 1) * sizeof(uint8_t *))
        cdef uint32_t *lens = <uint32_t *>malloc((n or 1) * sizeof(uint32_t))
        cdef tp_merge *c_merges = <tp_merge *>malloc((m or 1) * sizeof(tp_merge))
        cdef tp_bpe_options options
        cdef uint32_t byte_tokens[256]
        prefix, suffix = model.prefix, model.suffix
        try:
            if ptrs == NULL or lens == NULL or c_merges == NULL:
                raise MemoryError()
            for i in range(n):
                token = tokens[i]
                if token is None:
                    ptrs[i] = NULL
                    lens[i] = 0xFFFFFFFF
                else:
                    ptrs[i] = <const uint8_t *><const char *>token
                    lens[i] = len(token)
            for i in range(m):
                c_merges[i].left, c_merges[i].right, c_merges[i].merged = merges[i, 0], merges[i, 1], merges[i, 2]
            memset(&options, 0, sizeof(options))
            options.ignore_merges = model.ignore_merges
            options.char_level = model.char_level
            options.byte_fallback = model.byte_tokens is not None
            options.unk_id = 0xFFFFFFFF if model.unk_id is None else model.unk_id
            options.fuse_unk = model.fuse_unk
            options.prefix, options.prefix_len = <const uint8_t *><const char *>prefix, len(prefix)
            options.suffix, options.suffix_len = <const uint8_t *><const char *>suffix, len(suffix)
            if options.byte_fallback:
                for i in range(256):
                    byte_tokens[i] = 0xFFFFFFFF if model.byte_tokens[i] is None else model.byte_tokens[i]
                options.byte_tokens = byte_tokens
            self._bpe = tp_bpe_new(ptrs, lens, n, c_merges, m, &options)
        finally:
            free(ptrs); free(lens); free(c_merges)
        if self._bpe == NULL:
            raise ValueError("BPE affix too long, vocabulary beyond the native table limits, or out of memory")

    cdef _build_added(self, list added, bint encode_special_tokens):
        """added: hf_tagtok.added_tokens.AddedTokenSpec per token."""
        cdef size_t n = len(added), i
        if n == 0:
            return
        cdef const uint8_t **ptrs = <const uint8_t **>malloc(n * sizeof(uint8_t *))
        cdef uint32_t *lens = <uint32_t *>malloc(n * sizeof(uint32_t))
        cdef uint32_t *ids = <uint32_t *>malloc(n * sizeof(uint32_t))
        cdef uint8_t *passes = <uint8_t *>malloc(n)
        cdef uint8_t *skip = <uint8_t *>malloc(n)
        cdef uint8_t *lstrip = <uint8_t *>malloc(n)
        cdef uint8_t *rstrip = <uint8_t *>malloc(n)
        cdef uint8_t *single_word = <uint8_t *>malloc(n)
        try:
            if (ptrs == NULL or lens == NULL or ids == NULL or passes == NULL or skip == NULL or lstrip == NULL
                    or rstrip == NULL or single_word == NULL):
                raise MemoryError()
            for i in range(n):
                token = added[i]
                ptrs[i] = <const uint8_t *><const char *>token.content
                lens[i] = len(token.content)
                ids[i] = token.id
                passes[i] = 1 if token.normalized else 0
                skip[i] = 1 if (encode_special_tokens and token.special) else 0
                lstrip[i] = token.lstrip
                rstrip[i] = token.rstrip
                single_word[i] = token.single_word
            self._added = tp_added_new(ptrs, lens, ids, passes, skip, lstrip, rstrip, single_word, n)
        finally:
            free(ptrs); free(lens); free(ids); free(passes); free(skip); free(lstrip); free(rstrip); free(single_word)
        if self._added == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef int i
        if self._workspaces != NULL:
            for i in range(self._n_workspaces):
                tp_workspace_free(self._workspaces[i])
            free(self._workspaces)
        tp_bpe_free(self._bpe)
        tp_normalizer_free(self._normalizer)
        tp_wordpiece_free(self._wordpiece)
        tp_unigram_free(self._unigram)
        tp_added_free(self._added)
        for add_special in range(2):
            _side_free(&self._assembly.single[add_special])
            for sequence in range(2):
                _side_free(&self._assembly.pair[add_special][sequence])

    def encode(self, list texts, bint add_special_tokens=True, bint offsets=True, bint words=True,
               bint columnar=False, replay=None, given=None):
        """(ids u32, type_ids u32, offsets (n,2) or None when not `offsets`, special u8, words i32 or None
        when not `words`, lengths i64) for texts. Offsets are u32 (char offsets fit: texts are under 4 GiB),
        i64 when `columnar` (for flat arrays).

        A pipeline without a pre-tokenizer (a replaying one) needs `replay`: (ids u32, lengths i64), each text's own token ids as stock
        encodes it without special tokens, one after another (hf_tagtok._lists.flat_ids). It returns None when
        those tokens do not spell the texts: stock must run.

        A pipeline with "replace_given" normalizer steps or a "split_given" pre-tokenizer step (hf_tagtok.gate)
        takes `given`: (data u32, starts i64), text i's matches of those steps at data[starts[i]:] as
        tp_text.given reads them, or none when starts[i] is -1 (none of their regexes matches in it).

        It raises StockDecides naming the texts stock must encode: a regex gave up on them (TT_GAVE_UP), or the
        matches given with them do not fit them."""
        cdef size_t n = len(texts), i
        cdef tp_text *c_texts = <tp_text *>calloc(n or 1, sizeof(tp_text))
        cdef const uint32_t **c_given = NULL
        cdef tp_columns out
        cdef int rc
        cdef const char *end
        cdef size_t rows
        cdef int offsets_kind = (TP_OFFSETS_WIDE if columnar else TP_OFFSETS_NARROW) if offsets else TP_OFFSETS_NONE
        lengths = np.zeros(n, dtype=np.int64)
        cdef int64_t[::1] lengths_view = lengths
        if c_texts == NULL:
            raise MemoryError()
        if (replay is None) != (self._p.program != NULL):
            raise ValueError("a replayed pipeline takes its texts' tokens, any other none")
        try:
            for i in range(n):
                _text_units(texts[i], &c_texts[i])
            if replay is not None:
                _replay_into(replay[0], replay[1], c_texts, n)
            if given is not None:
                c_given = _given_pointers(given[0], given[1], tp_given_steps(&self._p), n)
                for i in range(n):
                    c_texts[i].given = c_given[i]
            with nogil:
                rc = tp_encode_batch(&self._p, self._workspaces, c_texts, n, add_special_tokens, offsets_kind, words,
                                     &out, &lengths_view[0] if n else NULL)
        finally:
            free(c_texts)
            free(c_given)
        if rc == TP_TEXT_SURROGATE:
            raise UnicodeEncodeError("utf-8", "", 0, 1, "surrogates not allowed")
        if rc == TP_STOCK_DECIDES and (lengths < 0).any():
            raise StockDecides(np.flatnonzero(lengths < 0))
        if rc == TP_REPLAY_MISMATCH or rc == TP_STOCK_DECIDES:
            return None
        if rc:
            raise MemoryError()
        rows = out.n
        end = <const char *>out.special + rows
        block = _adopt(out.block, end - <const char *>out.block)
        type_ids = (_column(block, out.type_ids, out.block, rows, np.uint32) if out.type_ids != NULL else
                    _zeros_u32(rows))  # all 0, left out of the block
        return (_column(block, out.ids, out.block, rows, np.uint32), type_ids,
                (_column(block, out.wide_offsets, out.block, 2 * rows, np.int64) if columnar else
                 _column(block, out.offsets, out.block, 2 * rows, np.uint32)).reshape(rows, 2) if offsets else None,
                _column(block, out.special, out.block, rows, np.uint8),
                _column(block, out.words, out.block, rows, np.int32) if words else None, lengths)

    def assemble(self, list pieces, list bounds, bytes is_pair, bint pretokenized, bint add_special_tokens,
                 truncation, padding, bint main_only=False, bint columnar=False, given=None):
        """Encode items (text A = pieces[bounds[2i]:bounds[2i+1]], text B = pieces[bounds[2i+1]:bounds[2i+2]],
        is_pair[i] 0: single; one piece per text, or one per word when pretokenized) with truncation and
        padding; main_only: write no overflow encodings (a pair's overflow grows as the product of its two
        texts' windows).

        truncation: None or (max_length, stride, strategy name, left); padding: None or (length or None
        for the batch's longest, multiple or 0, left, pad_id, pad_type_id). Returns None when stock raises for this input
        (or a regex gave up on it: stock decides), else
        (ids, type_ids, offsets, special, words, attention, encoding records (n, RECORD_COLUMNS): the columns
        hf_tagtok.encoding.RECORD_* name, padding (n, 2), windows (n_items, 2)). `columnar` (for flat arrays):
        offsets i64 and the padding stored, padding None. Else (for `Encoding` views) offsets u32 and only
        the tokens stored: attention None (all 1), padding[k] = tokens of padding before and after
        encoding k's rows. `given`: each piece's matches, as `encode` takes each text's.
        """
        cdef size_t n = len(is_pair), n_pieces = len(pieces), i, rows
        cdef const uint8_t **ptrs = <const uint8_t **>calloc(n_pieces or 1, sizeof(uint8_t *))
        cdef size_t *lens = <size_t *>calloc(n_pieces or 1, sizeof(size_t))
        cdef size_t *c_bounds = <size_t *>calloc(2 * n + 1, sizeof(size_t))
        cdef const uint8_t *pair_flags = <const uint8_t *>is_pair
        cdef const uint32_t **c_given = NULL
        cdef Py_ssize_t size
        cdef tp_assembly assembly = self._assembly
        cdef tp_padding pad
        cdef tp_assembled out
        cdef const void *start
        cdef int rc
        memset(&pad, 0, sizeof(pad))
        assembly.main_only = main_only
        if truncation is not None:
            assembly.truncate = 1
            assembly.max_length, assembly.stride = truncation[0], truncation[1]
            assembly.strategy, assembly.truncate_left = STRATEGIES[truncation[2]], truncation[3]
        if padding is not None:
            pad.enabled = 1
            length, pad.multiple, pad.left, pad.id, pad.type_id = padding
            pad.fixed, pad.length = length is not None, length or 0
        windows = np.zeros((n, 2), dtype=np.int64)
        cdef int64_t[:, ::1] windows_view = windows
        try:
            if ptrs == NULL or lens == NULL or c_bounds == NULL:
                raise MemoryError()
            for i in range(n_pieces):
                ptrs[i] = _utf8(pieces[i], &size)
                lens[i] = size
            for i in range(2 * n + 1):
                c_bounds[i] = bounds[i]
            if given is not None:
                c_given = _given_pointers(given[0], given[1], tp_given_steps(&self._p), n_pieces)
            with nogil:
                rc = tp_assemble_batch(&assembly, &pad, self._workspaces, ptrs, lens, c_bounds, c_given, pair_flags,
                                       n, pretokenized, add_special_tokens, columnar, &out,
                                       &windows_view[0, 0] if n else NULL)
        finally:
            free(ptrs); free(lens); free(c_bounds); free(c_given)
        if rc == TP_STOCK_RAISES or rc == TP_STOCK_DECIDES:
            return None
        if rc:
            raise MemoryError()
        rows = out.tokens.n
        block = _adopt(out.tokens.block, out.size)
        start = out.tokens.block
        offsets = (_column(block, out.tokens.wide_offsets, start, 2 * rows, np.int64) if columnar else
                   _column(block, out.tokens.offsets, start, 2 * rows, np.uint32)).reshape(rows, 2)
        records = _column(block, out.encodings, start, out.n_encodings * (sizeof(tp_encoding) // sizeof(int64_t)),
                          np.int64).reshape(out.n_encodings, sizeof(tp_encoding) // sizeof(int64_t))
        return (_column(block, out.tokens.ids, start, rows, np.uint32),
                _column(block, out.tokens.type_ids, start, rows, np.uint32), offsets,
                _column(block, out.tokens.special, start, rows, np.uint8),
                _column(block, out.tokens.words, start, rows, np.int32),
                _column(block, out.attention, start, rows, np.uint8) if columnar else None,
                records[:, :RECORD_COLUMNS], None if columnar else records[:, RECORD_PADDING], windows)


ctypedef void (*_release)(void *) noexcept nogil


cdef object _owned(void *data, size_t size, _release release):
    # A numpy byte array over size bytes at data (size > 0), handed to release when the last view goes.
    cdef cvarray owner = cvarray(shape=(size,), itemsize=1, format="B", allocate_buffer=False)
    owner.data = <char *>data
    owner.callback_free_data = release
    return np.asarray(owner)


cdef object _adopt(void *data, size_t size):
    # A numpy byte array over an output block, given back with it: the output is written once, never copied.
    if size == 0:
        tp_block_free(data)
        return np.empty(0, dtype=np.uint8)
    return _owned(data, size, tp_block_free)


cdef object _zeros_u32(size_t n):
    # n uint32 zeros whose pages no one writes (tp_zero_alloc): numpy's zeros may take reused heap memory,
    # which calloc then clears.
    cdef size_t size = 4 * n if n else 1
    cdef void *data = tp_zero_alloc(size)
    if data == NULL:
        raise MemoryError()
    return np.frombuffer(_owned(data, size, tp_zero_free), np.uint32, n, 0)


cdef object _column(object block, const void *column, const void *start, size_t n, dtype):
    # The n items of a column inside block (all views share the block, freed when the last one goes); one
    # numpy call, as a one-text call notices each.
    return np.frombuffer(block, _DTYPES[dtype], n, <const char *>column - <const char *>start)


_DTYPES = {kind: np.dtype(kind) for kind in (np.uint8, np.uint32, np.int32, np.int64)}


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object text)


cdef int _replay_into(const uint32_t[::1] ids, const int64_t[::1] lengths, tp_text *texts, size_t n) except -1:
    """Points each text's replay at its run of ids (the caller keeps ids alive through the call)."""
    cdef size_t i, at = 0
    if <size_t>lengths.shape[0] != n:
        raise ValueError("one token count per text")
    for i in range(n):
        texts[i].replay, texts[i].n_replay = &ids[at] if lengths[i] else NULL, <size_t>lengths[i]
        at += <size_t>lengths[i]
    if at != <size_t>ids.shape[0]:
        raise ValueError("the token counts must add up to the ids")
    return 0


cdef const uint32_t **_given_pointers(const uint32_t[::1] data, const int64_t[::1] starts, size_t n_steps,
                                      size_t n) except NULL:
    """Per text a pointer to its given matches in data (NULL: none; the caller keeps data alive through the call
    and frees the array), once each text's n_steps counts and their pairs are found inside it."""
    cdef size_t i, k, at, size = data.shape[0]
    if <size_t>starts.shape[0] != n or n_steps == 0:
        raise ValueError("one start per text, for a pipeline with replace_given or split_given steps")
    cdef const uint32_t **out = <const uint32_t **>calloc(n or 1, sizeof(uint32_t *))
    if out == NULL:
        raise MemoryError()
    for i in range(n):
        if starts[i] < 0:
            continue
        at = <size_t>starts[i]
        for k in range(n_steps):
            if at >= size or data[at] > (size - at - 1) // 2:
                free(out)
                raise ValueError("a text's matches run past the data")
            at += 1 + 2 * <size_t>data[at]
        out[i] = &data[starts[i]]
    return out


cdef int _text_units(object text, tp_text *out) except -1:
    # The str's own code units (transcoded on the worker threads); _utf8 for what it must check or encode.
    cdef Py_ssize_t size
    if isinstance(text, str) and PyUnicode_GET_LENGTH(text) * 4 <= tt.TT_MAX_TEXT_BYTES:
        out.data, out.len = PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)
        out.unit = 0 if PyUnicode_IS_ASCII(text) else PyUnicode_KIND(text)
        return 0
    out.data, out.unit = _utf8(text, &size), 0
    out.len = size
    return 0
