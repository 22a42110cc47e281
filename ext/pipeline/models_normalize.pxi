# Bindings of the native normalizers (tp_normalize.h), WordPiece/WordLevel (tp_wordpiece.h) and Unigram
# (tp_unigram.h).
#
# Included by ext/_native.pyx. Specs are the engine-neutral dicts hf_tagtok.normalizers (normalizer)
# and hf_tagtok.models (model) build:
#   normalizer: {"steps": [step name, or (name, *arguments) for "replace" (pattern, content),
#   "prepend" (text), "strip" (left, right), "replace_run" (char, shortest run, content), "byte_level"
#   (the 256 chars bytes become) and "precompiled" (the decoded SentencePiece charsmap, bytes)]}     model: {"type": "WordPiece"|"WordLevel", "tokens": [bytes],
#   "ids": [int], "prefix": bytes, "max_chars": int, "unk_id": int}
#   or {"type": "Unigram", "tokens": [bytes], "scores": [float], "unk_id": int or None, "byte_fallback": bool}
from libc.stdint cimport uint8_t, uint32_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy


cdef extern from "pipeline/tp_normalize.h" nogil:
    ctypedef struct tp_normalizer:
        pass
    ctypedef struct tp_norm_scratch:
        pass
    enum:
        TP_NORM_CLEAN_TEXT, TP_NORM_CHINESE, TP_NORM_NFD, TP_NORM_NFKD, TP_NORM_BERT_STRIP
        TP_NORM_STRIP_ACCENTS, TP_NORM_LOWERCASE, TP_NORM_NFC, TP_NORM_NFKC, TP_NORM_REPLACE, TP_NORM_PREPEND
        TP_NORM_STRIP, TP_NORM_REPLACE_RUN, TP_NORM_NMT, TP_NORM_BYTE_LEVEL, TP_NORM_PRECOMPILED
    ctypedef struct tp_norm_step:
        uint8_t kind, left, right
        const uint8_t *text
        size_t text_len
        const uint8_t *content
        size_t content_len
        size_t min_run
    tp_normalizer *tp_normalizer_new(const tp_norm_step *steps, size_t n)
    void tp_normalizer_free(tp_normalizer *nz)
    int tp_precompiled_valid(const uint8_t *charsmap, size_t len)
    tp_norm_scratch *tp_norm_scratch_new()
    void tp_norm_scratch_free(tp_norm_scratch *s)
    int tp_normalize(const tp_normalizer *nz, tp_norm_scratch *s, const uint8_t *text, size_t len,
                     const uint8_t **out, const uint32_t **from_, const uint32_t **to, size_t *out_len)

cdef extern from "pipeline/tp_wordpiece.h" nogil:
    ctypedef struct tp_wordpiece:
        pass
    ctypedef struct tp_wordpiece_scratch:
        pass
    tp_wordpiece *tp_wordpiece_new(const uint8_t *const *tokens, const uint32_t *lens, const uint32_t *ids,
                                   size_t n, const uint8_t *prefix, size_t prefix_len, size_t max_chars,
                                   uint32_t unk_id, int whole_words)
    void tp_wordpiece_free(tp_wordpiece *wp)
    tp_wordpiece_scratch *tp_wordpiece_scratch_new(int pooled)
    void tp_wordpiece_scratch_free(tp_wordpiece_scratch *s)
    ctypedef struct tp_words:
        const uint32_t *ids
        const uint32_t *starts
        const uint32_t *ends
        const uint32_t *first
        const uint32_t *count
    int tp_wordpiece_encode_words(const tp_wordpiece *wp, tp_wordpiece_scratch *s, const uint8_t *const *words,
                                  const size_t *lens, size_t n, tp_words *out)

cdef extern from "pipeline/tp_unigram.h" nogil:
    ctypedef struct tp_unigram:
        pass
    ctypedef struct tp_unigram_scratch:
        pass
    tp_unigram *tp_unigram_new(const uint8_t *const *tokens, const uint32_t *lens, const double *scores, uint32_t n,
                               uint32_t unk_id, int byte_fallback)
    void tp_unigram_free(tp_unigram *model)
    tp_unigram_scratch *tp_unigram_scratch_new(int pooled)
    void tp_unigram_scratch_free(tp_unigram_scratch *s)
    int tp_unigram_encode_words(const tp_unigram *model, tp_unigram_scratch *s, const uint8_t *const *words,
                                const size_t *lens, size_t n, tp_words *out)


NORMALIZER_STEPS = {"clean_text": TP_NORM_CLEAN_TEXT, "chinese": TP_NORM_CHINESE, "nfd": TP_NORM_NFD,
                    "nfkd": TP_NORM_NFKD, "bert_strip": TP_NORM_BERT_STRIP,
                    "strip_accents": TP_NORM_STRIP_ACCENTS, "lowercase": TP_NORM_LOWERCASE,
                    "nfc": TP_NORM_NFC, "nfkc": TP_NORM_NFKC, "replace": TP_NORM_REPLACE,
                    "prepend": TP_NORM_PREPEND, "strip": TP_NORM_STRIP, "replace_run": TP_NORM_REPLACE_RUN,
                    "nmt": TP_NORM_NMT, "byte_level": TP_NORM_BYTE_LEVEL, "precompiled": TP_NORM_PRECOMPILED}


def precompiled_valid(bytes charsmap):
    """Whether the native normalizer takes this SentencePiece charsmap (tp_precompiled_valid)."""
    return tp_precompiled_valid(<const uint8_t *><const char *>charsmap, len(charsmap)) == 1


cdef tp_normalizer *_build_normalizer(dict spec) except NULL:
    steps = [(item,) if isinstance(item, str) else tuple(item) for item in spec["steps"]]
    cdef size_t n = len(steps), k
    cdef tp_norm_step *c_steps = <tp_norm_step *>calloc(n or 1, sizeof(tp_norm_step))
    cdef tp_normalizer *nz = NULL
    strings = []  # keeps the UTF-8 arguments alive until the normalizer has copied them
    if c_steps == NULL:
        raise MemoryError()
    try:
        for k in range(n):
            name, arguments = steps[k][0], steps[k][1:]
            c_steps[k].kind = NORMALIZER_STEPS[name]
            if name == "strip":
                c_steps[k].left, c_steps[k].right = arguments
            elif name == "replace_run":
                text, content = arguments[0].encode(), arguments[2].encode()
                strings += [text, content]
                c_steps[k].text, c_steps[k].text_len = <const uint8_t *><const char *>text, len(text)
                c_steps[k].content, c_steps[k].content_len = <const uint8_t *><const char *>content, len(content)
                c_steps[k].min_run = arguments[1]
            elif name == "precompiled":
                content = bytes(arguments[0])
                if not precompiled_valid(content):
                    raise ValueError("Precompiled charsmap that stock could not use")
                strings.append(content)
                c_steps[k].content, c_steps[k].content_len = <const uint8_t *><const char *>content, len(content)
            elif name == "byte_level":
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


cdef tp_wordpiece *_build_wordpiece(dict model) except NULL:
    tokens, token_ids = model["tokens"], model["ids"]
    cdef size_t n = len(tokens), i
    cdef const uint8_t **ptrs = <const uint8_t **>malloc((n or 1) * sizeof(uint8_t *))
    cdef uint32_t *lens = <uint32_t *>malloc((n or 1) * sizeof(uint32_t))
    cdef uint32_t *ids = <uint32_t *>malloc((n or 1) * sizeof(uint32_t))
    cdef tp_wordpiece *wp = NULL
    prefix = model["prefix"]
    try:
        if ptrs == NULL or lens == NULL or ids == NULL:
            raise MemoryError()
        for i in range(n):
            ptrs[i] = <const uint8_t *><const char *>tokens[i]
            lens[i] = len(tokens[i])
            ids[i] = token_ids[i]
        wp = tp_wordpiece_new(ptrs, lens, ids, n, <const uint8_t *><const char *>prefix, len(prefix),
                              model["max_chars"], model["unk_id"], model["type"] == "WordLevel")
    finally:
        free(ptrs); free(lens); free(ids)
    if wp == NULL:
        raise MemoryError()
    return wp


UNIGRAM_RAISES = 0xFFFFFFFE  # TP_UNIGRAM_RAISES


cdef tp_unigram *_build_unigram(dict model) except NULL:
    tokens, scores = model["tokens"], model["scores"]
    cdef size_t n = len(tokens), i
    unk_id = n if model["unk_id"] is None else model["unk_id"]  # n: no unk piece (see tp_unigram.h)
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
        model_ = tp_unigram_new(ptrs, lens, c_scores, n, unk_id, model["byte_fallback"])
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

    def __cinit__(self, dict spec):
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
        rc = tp_normalize(self._nz, self._scratch, <const uint8_t *><const char *>data, len(data),
                          &out, &from_, &to, &n)
        if rc < 0:
            raise MemoryError()
        starts, ends = np.empty(n, dtype=np.uint32), np.empty(n, dtype=np.uint32)
        cdef uint32_t[::1] starts_view = starts, ends_view = ends
        if n:
            memcpy(&starts_view[0], from_, n * 4)
            memcpy(&ends_view[0], to, n * 4)
        return (<const char *>out)[:n].decode("utf-8"), starts, ends


cdef class WordPiece:
    """A native WordPiece/WordLevel model alone (for tests): encode(word str) -> [(id, start, end)] byte ranges."""
    cdef tp_wordpiece *_wp
    cdef tp_wordpiece_scratch *_scratch

    def __cinit__(self, dict model):
        self._wp = _build_wordpiece(model)
        self._scratch = tp_wordpiece_scratch_new(0)
        if self._scratch == NULL:
            raise MemoryError()

    def __dealloc__(self):
        tp_wordpiece_free(self._wp)
        tp_wordpiece_scratch_free(self._scratch)

    def encode(self, str word):
        data = word.encode("utf-8")
        cdef const uint8_t *bytes_ = <const uint8_t *><const char *>data
        cdef size_t length = len(data), i
        cdef tp_words out
        if tp_wordpiece_encode_words(self._wp, self._scratch, &bytes_, &length, 1, &out):
            raise MemoryError()
        return [(out.ids[i], out.starts[i], out.ends[i]) for i in range(out.count[0])]


cdef class Unigram:
    """A native Unigram model alone (for tests): encode(word str) -> [(id, start, end)] byte ranges."""
    cdef tp_unigram *_model
    cdef tp_unigram_scratch *_scratch

    def __cinit__(self, dict model):
        self._model = _build_unigram(model)
        self._scratch = tp_unigram_scratch_new(0)
        if self._scratch == NULL:
            raise MemoryError()

    def __dealloc__(self):
        tp_unigram_free(self._model)
        tp_unigram_scratch_free(self._scratch)

    def encode(self, str word):
        data = word.encode("utf-8")
        cdef const uint8_t *bytes_ = <const uint8_t *><const char *>data
        cdef size_t length = len(data), i
        cdef tp_words out
        if tp_unigram_encode_words(self._model, self._scratch, &bytes_, &length, 1, &out):
            raise MemoryError()
        return [(out.ids[i], out.starts[i], out.ends[i]) for i in range(out.count[0])]
