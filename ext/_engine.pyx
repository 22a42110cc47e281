# cython: language_level=3
"""hf_tagtok._engine: the tag-classify engine and the pre-tokenizer program executor.

Classify and the committed tables (`classify`, `tables`, the implementations); programs (`Program`,
`PROPS`, `UnsupportedShape`). Steps arrive as HF-free dicts (the contract in tagtok.h); everything
HF-specific (tokenizer.json, class names) lives in hf_tagtok.pre_tokenizers. The engine's C code is
linked into this module only: the native pipeline (`_native`) cimports `Program` and `_utf8` and calls
the engine's C functions through `engine_api()` (tagtok.h, tt_engine_api).
"""
cimport tagtok as tt
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy
from cpython.unicode cimport PyUnicode_DecodeLatin1

import copy as _copy

import numpy as _np


cdef extern from "regex_sets.h":
    enum: TT_RX_SET_COUNT
    enum: TT_RX_ALIAS_COUNT
    enum: TT_RX_FOLD_COUNT
    enum: TT_RX_MULTI_FOLD_COUNT
    const char *const tt_rx_set_names[]
    const uint32_t tt_rx_set_offsets[]
    const uint32_t tt_rx_ranges[]
    const char *const tt_rx_alias_names[]
    const char *const tt_rx_alias_targets[]
    const char tt_rx_fold_chars[]
    const uint32_t tt_rx_fold_offsets[]
    const uint32_t tt_rx_fold_cps[]
    const char *const tt_rx_multi_folds[]


def regex_tables():
    """The probed onig sets for the regex compiler: {"sets": {name: ((lo, hi), ...)}, "aliases": {name: name},
    "folds": {ascii char: (cp, ...)}, "multi_folds": (ascii string, ...)} (tables/regex_sets.h)."""
    cdef Py_ssize_t i, k
    sets = {}
    for i in range(TT_RX_SET_COUNT):
        sets[tt_rx_set_names[i].decode()] = tuple(
            (tt_rx_ranges[2 * k], tt_rx_ranges[2 * k + 1]) for k in range(tt_rx_set_offsets[i], tt_rx_set_offsets[i + 1]))
    aliases = {tt_rx_alias_names[i].decode(): tt_rx_alias_targets[i].decode() for i in range(TT_RX_ALIAS_COUNT)}
    folds = {chr(tt_rx_fold_chars[i]): tuple(tt_rx_fold_cps[k] for k in range(tt_rx_fold_offsets[i], tt_rx_fold_offsets[i + 1]))
             for i in range(TT_RX_FOLD_COUNT)}
    multi = tuple(tt_rx_multi_folds[i].decode() for i in range(TT_RX_MULTI_FOLD_COUNT))
    return {"sets": sets, "aliases": aliases, "folds": folds, "multi_folds": multi}


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL



class UnsupportedShape(ValueError):
    """The steps are valid but the native executor cannot run them as one program."""


class RegexGaveUp(RuntimeError):
    """A regex with backreferences backtracked past the engine's limit on a text (onig gives up on such
    searches too, and stock then panics): stock, not the engine, decides what that text gives."""


cdef object _run_failure(int rc):
    if rc == tt.TT_GAVE_UP:
        return RegexGaveUp(f"a regex backtracked more than {tt.TT_RX_BACKTRACK_LIMIT} times from one position")
    return MemoryError("out of memory while pre-tokenizing")


PROPS = {_cls_prop_names[i].decode(): 1 << i for i in range(_CLS_PROP_COUNT)}

_BEHAVIORS = {
    "removed": tt.TT_BEHAVIOR_REMOVED,
    "isolated": tt.TT_BEHAVIOR_ISOLATED,
    "merged_with_previous": tt.TT_BEHAVIOR_MERGED_WITH_PREVIOUS,
    "merged_with_next": tt.TT_BEHAVIOR_MERGED_WITH_NEXT,
    "contiguous": tt.TT_BEHAVIOR_CONTIGUOUS,
}
_REGEXES = {"gpt2": tt.TT_REGEX_GPT2, "cl100k": tt.TT_REGEX_CL100K, "qwen2": tt.TT_REGEX_QWEN2,
            "o200k": tt.TT_REGEX_O200K}
_PREPEND = {"always": tt.TT_PREPEND_ALWAYS, "first": tt.TT_PREPEND_FIRST, "never": tt.TT_PREPEND_NEVER}
_KINDS = {
    "split_class": tt.TT_STEP_SPLIT_CLASS, "split_char": tt.TT_STEP_SPLIT_CHAR,
    "split_literal": tt.TT_STEP_SPLIT_LITERAL, "split_regex": tt.TT_STEP_SPLIT_REGEX,
    "whitespace": tt.TT_STEP_WHITESPACE, "bert": tt.TT_STEP_BERT, "metaspace": tt.TT_STEP_METASPACE,
    "bytelevel": tt.TT_STEP_BYTELEVEL, "scripts": tt.TT_STEP_SCRIPTS, "fixed_length": tt.TT_STEP_FIXED_LENGTH,
    "split_compiled": tt.TT_STEP_SPLIT_COMPILED, "split_given": tt.TT_STEP_SPLIT_GIVEN,
}
_RENDER_NAMES = {tt.TT_RENDER_NONE: "none", tt.TT_RENDER_METASPACE: "metaspace", tt.TT_RENDER_BYTELEVEL: "bytelevel"}
# ByteLevel renders each UTF-8 byte as one char: decode as Latin-1 (byte b -> U+00bb), then translate.
_BYTELEVEL_TRANSLATION = {b: _cls_bytelevel_map[b] for b in range(256)}


def _choice(step, key, table, default=None):
    value = step.get(key, default)
    if value not in table:
        raise ValueError(f"step {step.get('kind')!r}: {key} must be one of {sorted(table)}, not {value!r}")
    return table[value]


def _one_char(step, key, default=None):
    value = step.get(key, default)
    if not isinstance(value, str) or len(value) != 1:
        raise ValueError(f"step {step.get('kind')!r}: {key} must be a string of length 1, not {value!r}")
    value.encode("utf-8")  # lone surrogates raise UnicodeEncodeError like stock
    return ord(value)


def _flag(step, key, default):
    value = step.get(key, default)
    if not isinstance(value, bool):
        raise TypeError(f"step {step.get('kind')!r}: {key} must be a bool, not {value!r}")
    return int(value)


cdef int _fill_step(tt.tt_step *out, dict step, list keep_alive) except -1:
    kind = _choice(step, "kind", _KINDS)
    out.kind = kind
    if kind in (tt.TT_STEP_SPLIT_CLASS, tt.TT_STEP_SPLIT_CHAR, tt.TT_STEP_SPLIT_LITERAL, tt.TT_STEP_SPLIT_REGEX,
                tt.TT_STEP_SPLIT_COMPILED, tt.TT_STEP_SPLIT_GIVEN):
        out.behavior = _choice(step, "behavior", _BEHAVIORS)
        out.invert = _flag(step, "invert", False)
    if kind == tt.TT_STEP_SPLIT_CLASS:
        props = step.get("props")
        if isinstance(props, str) or not props or any(p not in PROPS for p in props):
            raise ValueError(f"step 'split_class': props must be a non-empty list of {sorted(PROPS)}, not {props!r}")
        out.prop_mask = 0
        for p in props:
            out.prop_mask |= PROPS[p]
    elif kind == tt.TT_STEP_SPLIT_CHAR:
        out.cp = _one_char(step, "char")
    elif kind == tt.TT_STEP_SPLIT_LITERAL:
        literal = step.get("literal")
        if not isinstance(literal, str):
            raise TypeError(f"step 'split_literal': literal must be a str, not {literal!r}")
        raw = literal.encode("utf-8")
        keep_alive.append(raw)
        out.literal = <const uint8_t *><const char *>raw
        out.literal_len = len(raw)
    elif kind == tt.TT_STEP_SPLIT_REGEX:
        out.regex = _choice(step, "regex", _REGEXES)
    elif kind == tt.TT_STEP_SPLIT_COMPILED:
        _fill_compiled(out, step, keep_alive)
    elif kind == tt.TT_STEP_METASPACE:
        out.cp = _one_char(step, "replacement", "\u2581")
        out.prepend = _choice(step, "prepend_scheme", _PREPEND, "always")
        out.split = _flag(step, "split", True)
    elif kind == tt.TT_STEP_BYTELEVEL:
        out.add_prefix_space = _flag(step, "add_prefix_space", True)
        out.use_regex = _flag(step, "use_regex", True)
        if step.get("regex") is not None:  # its regex compiled (hf_tagtok.regex_compiler): run as a DFA
            _fill_compiled(out, step["regex"], keep_alive)
    elif kind == tt.TT_STEP_FIXED_LENGTH:
        length = step.get("length", 5)
        if not isinstance(length, int) or isinstance(length, bool) or not 0 < length < 2 ** 32:
            raise ValueError(f"step 'fixed_length': length must be an integer in [1, 2**32), not {length!r}")
        out.length = length
    return 0


cdef const tt.tt_engine_api *engine_api() noexcept:
    return tt.tt_engine()


_COMPILED_BUFFERS = {"code": 16, "stage1": 2, "stage2": 2, "sets": 8}
MAX_SEGMENT_SETS = tt.TT_RX_MAX_SEGMENTS  # class-run sets a compiled step can run within (its `segments`)


cdef int _fill_compiled(tt.tt_step *out, dict step, list keep_alive) except -1:
    # The compiled regex's arrays (hf_tagtok.regex_compiler), validated again by tt_program_new.
    for key, unit in _COMPILED_BUFFERS.items():
        value = step.get(key)
        if not isinstance(value, bytes) or len(value) % unit or not (value or key == "sets"):
            raise ValueError(f"step 'split_compiled': {key} must be bytes in units of {unit}"
                             + ("" if key == "sets" else ", not empty"))
    counts = {}
    for key in ("n_classes", "n_main_splits", "n_splits", "n_subs"):
        value = step.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2 ** 32:
            raise ValueError(f"step 'split_compiled': {key} must be an integer in [0, 2**32), not {value!r}")
        counts[key] = value
    if len(step["stage1"]) != 2 * 0x1100:
        raise ValueError("step 'split_compiled': stage1 must hold 0x1100 uint16")
    words = (counts["n_classes"] + 63) // 64
    if not words or len(step["sets"]) % (8 * words):
        raise ValueError("step 'split_compiled': sets must hold whole bitmaps over n_classes")
    cdef tt.tt_rx_spec *spec = <tt.tt_rx_spec *>malloc(sizeof(tt.tt_rx_spec))
    if spec == NULL:
        raise MemoryError()
    keep_alive.append(_SpecOwner.wrap(spec))
    keep_alive.extend(step[key] for key in _COMPILED_BUFFERS)
    spec.code = <const int *><const char *>step["code"]
    spec.n_code = len(step["code"]) // 16
    spec.stage1 = <const unsigned short *><const char *>step["stage1"]
    spec.stage2 = <const unsigned short *><const char *>step["stage2"]
    spec.n_stage2 = len(step["stage2"]) // 2
    spec.sets = <const uint64_t *><const char *>step["sets"]
    spec.n_sets = len(step["sets"]) // (8 * words)
    spec.n_classes = counts["n_classes"]
    spec.n_main_splits = counts["n_main_splits"]
    spec.n_splits = counts["n_splits"]
    spec.n_subs = counts["n_subs"]
    first_set = step.get("first_set", -1)
    if not isinstance(first_set, int) or isinstance(first_set, bool) or not -1 <= first_set < 2 ** 31:
        raise ValueError(f"step 'split_compiled': first_set must be -1 or a set index, not {first_set!r}")
    spec.first_set = first_set
    segments = step.get("segments", b"")
    if not isinstance(segments, bytes) or len(segments) % 8:
        raise ValueError("step 'split_compiled': segments must be bytes of (set, chars) uint32 pairs")
    keep_alive.append(segments)
    spec.segments = <const uint32_t *><const char *>segments
    spec.n_segments = len(segments) // 8
    backtrack_only = step.get("backtrack_only", False)
    if not isinstance(backtrack_only, bool):
        raise ValueError(f"step 'split_compiled': backtrack_only must be a bool, not {backtrack_only!r}")
    spec.backtrack_only = backtrack_only
    out.rx = spec
    return 0


cdef class _SpecOwner:
    cdef void *ptr

    @staticmethod
    cdef _SpecOwner wrap(void *ptr):
        cdef _SpecOwner owner = _SpecOwner.__new__(_SpecOwner)
        owner.ptr = ptr
        return owner

    def __dealloc__(self):
        free(self.ptr)


cdef const uint8_t *_utf8(object text, Py_ssize_t *size) except NULL:
    if not isinstance(text, str):
        raise TypeError(f"expected str, not {type(text).__name__}")
    cdef const uint8_t *data = <const uint8_t *>PyUnicode_AsUTF8AndSize(text, size)
    if <size_t>size[0] > tt.TT_MAX_TEXT_BYTES:
        raise ValueError(f"text of {size[0]} UTF-8 bytes exceeds the engine's limit of {tt.TT_MAX_TEXT_BYTES} bytes")
    return data


cdef class Program:
    """An immutable pre-tokenizer program: splitting steps, at most one transform, and after a ByteLevel
    transform further splitting steps on its byte-level chars.

    Thread-safe and picklable (by its steps). Working memory: one cached scratch for the common
    single-threaded case (claimed under the GIL), a fresh one for any concurrent call.
    """
    # attributes: hf_tagtok/_engine.pxd (the native pipeline reads _prog and _prefix)

    def __cinit__(self, steps):
        if isinstance(steps, (str, bytes, dict)) or not hasattr(steps, "__iter__"):
            raise TypeError(f"steps must be a list of step dicts, not {type(steps).__name__}")
        steps = tuple(_copy.deepcopy(dict(s)) if isinstance(s, dict) else s for s in steps)
        for s in steps:
            if not isinstance(s, dict):
                raise TypeError(f"every step must be a dict, not {type(s).__name__}")
        cdef tt.tt_step *c_steps = <tt.tt_step *>malloc((len(steps) or 1) * sizeof(tt.tt_step))
        cdef char err[256]
        cdef uint32_t render_cp = 0
        keep_alive = []
        if c_steps == NULL:
            raise MemoryError()
        try:
            for i, s in enumerate(steps):
                memset_step(&c_steps[i])
                _fill_step(&c_steps[i], s, keep_alive)
            err[0] = 0
            self._prog = tt.tt_program_new(c_steps, len(steps), err, sizeof(err))
        finally:
            free(c_steps)
        if self._prog == NULL:
            raise UnsupportedShape(err.decode("utf-8", "replace") or "unsupported program")
        self._steps = steps
        self.render = _RENDER_NAMES[tt.tt_program_render(self._prog, &render_cp)]
        self.dfa_steps = tt.tt_program_dfa_steps(self._prog)
        self._prefix = chr(render_cp) if render_cp else ""

    def __dealloc__(self):
        tt.tt_program_free(self._prog)
        tt.tt_scratch_free(self._cached)

    cdef tt.tt_scratch *_claim_scratch(self) except NULL:
        cdef tt.tt_scratch *scratch
        if not self._cached_busy:
            if self._cached == NULL:
                self._cached = tt.tt_scratch_new()
            if self._cached != NULL:
                self._cached_busy = True
                return self._cached
        scratch = tt.tt_scratch_new()
        if scratch == NULL:
            raise MemoryError()
        return scratch

    cdef void _release_scratch(self, tt.tt_scratch *scratch) noexcept:
        if scratch == self._cached:
            self._cached_busy = False
        else:
            tt.tt_scratch_free(scratch)

    @property
    def steps(self):
        return _copy.deepcopy(list(self._steps))

    def __reduce__(self):
        return (Program, (self.steps,))

    def __repr__(self):
        return f"Program({self.steps!r})"

    cdef _run(self, object text, bint spans):
        # One text through the program: pieces as (char_start, char_end, flags, byte_start, byte_end).
        cdef Py_ssize_t size
        cdef const uint8_t *data = _utf8(text, &size)
        cdef tt.tt_scratch *scratch = self._claim_scratch()
        cdef const tt.tt_piece *pieces
        cdef size_t n = 0, i
        cdef int rc
        cdef int64_t *offsets = NULL
        try:
            with nogil:
                rc = tt.tt_program_run(self._prog, scratch, data, size, &pieces, &n)
                if rc == 0 and n:
                    offsets = <int64_t *>malloc(2 * n * sizeof(int64_t))
                    if offsets != NULL:
                        tt.tt_char_offsets(data, size, pieces, n, offsets)
            if rc != 0:
                raise _run_failure(rc)
            if n and offsets == NULL:
                raise MemoryError("out of memory while pre-tokenizing")
            if spans:
                return [(offsets[2 * i], offsets[2 * i] if pieces[i].start == pieces[i].end else offsets[2 * i + 1],
                         bool(pieces[i].flags & tt.TT_PIECE_PREFIX)) for i in range(n)]
            return self._render_pieces(text, data, pieces, offsets, n)
        finally:
            free(offsets)
            self._release_scratch(scratch)

    cdef list _render_pieces(self, str text, const uint8_t *data, const tt.tt_piece *pieces,
                             const int64_t *offsets, size_t n):
        cdef size_t i
        cdef Py_ssize_t start, end
        cdef str prefix = self._prefix
        cdef list out = [None] * n
        if self.render == "none":
            for i in range(n):
                start, end = offsets[2 * i], offsets[2 * i + 1]
                out[i] = (text[start:end], (start, end))
            return out
        for i in range(n):
            start, end = offsets[2 * i], offsets[2 * i + 1]
            head = prefix if pieces[i].flags & tt.TT_PIECE_PREFIX else ""
            if self.render == "bytelevel":
                body = PyUnicode_DecodeLatin1(<const char *>data + pieces[i].start,
                                              pieces[i].end - pieces[i].start, NULL).translate(_BYTELEVEL_TRANSLATION)
            else:
                body = text[start:end].replace(" ", prefix)
            out[i] = (head + body, (start, end))
        return out

    def pre_tokenize_str(self, text):
        """Exactly stock `pre_tokenize_str`: [(piece text, (char_start, char_end)), ...]."""
        return self._run(text, False)

    def split_spans(self, text):
        """[(char_start, char_end, has_prefix), ...]: the original chars each piece covers, and whether the
        rendered piece starts with the program's prefix char. A prefix-only piece (ByteLevel's added
        space before e.g. a tab) has char_start == char_end (stock reports it with the next char's span)."""
        return self._run(text, True)

    def pre_tokenize_offsets(self, texts):
        """Char offsets of every piece of every text: (offsets int64 (n_pieces, 2), counts int64 (n_texts,)).

        No Python object per piece; the C work runs with the GIL released."""
        texts = list(texts)  # holds every str (and its cached UTF-8) alive while the GIL is released
        cdef Py_ssize_t n_texts = len(texts), i, size
        cdef const uint8_t **ptrs = <const uint8_t **>malloc((n_texts or 1) * sizeof(uint8_t *))
        cdef size_t *sizes = <size_t *>malloc((n_texts or 1) * sizeof(size_t))
        counts = _np.zeros(n_texts, dtype=_np.int64)
        cdef int64_t[::1] count_view = counts
        cdef _Int64Buffer out = _Int64Buffer()
        cdef size_t total = 0, total_bytes = 0
        cdef int failed = 0
        cdef tt.tt_scratch *scratch = NULL
        try:
            if ptrs == NULL or sizes == NULL:
                raise MemoryError()
            for i in range(n_texts):
                ptrs[i] = _utf8(texts[i], &size)
                sizes[i] = size
                total_bytes += size
            scratch = self._claim_scratch()
            with nogil:
                out.data = _offsets_batch(self._prog, scratch, ptrs, sizes, n_texts,
                                          &count_view[0] if n_texts else NULL, total_bytes, &total, &failed)
            if failed:
                raise _run_failure(failed)
            if total == 0:
                return _np.empty((0, 2), dtype=_np.int64), counts
            out.length = 2 * total
            return _np.frombuffer(out, dtype=_np.int64).reshape(total, 2), counts
        finally:
            if scratch != NULL:
                self._release_scratch(scratch)
            free(ptrs)
            free(sizes)


cdef class _Int64Buffer:
    # Hands a malloc'ed int64 array to numpy without copying (numpy keeps this owner alive).
    cdef int64_t *data
    cdef Py_ssize_t length
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __getbuffer__(self, Py_buffer *view, int flags):
        self.shape[0] = self.length
        self.strides[0] = sizeof(int64_t)
        view.buf = self.data
        view.obj = self
        view.len = self.length * sizeof(int64_t)
        view.readonly = 0
        view.itemsize = sizeof(int64_t)
        view.format = "q"
        view.ndim = 1
        view.shape = self.shape
        view.strides = self.strides
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer *view):
        pass

    def __dealloc__(self):
        free(self.data)


cdef inline void memset_step(tt.tt_step *s) noexcept:
    s.kind = tt.TT_STEP_SPLIT_CLASS
    s.behavior = tt.TT_BEHAVIOR_REMOVED
    s.invert = 0
    s.prop_mask = 0
    s.cp = 0
    s.literal = NULL
    s.literal_len = 0
    s.regex = tt.TT_REGEX_GPT2
    s.prepend = tt.TT_PREPEND_ALWAYS
    s.split = 1
    s.add_prefix_space = 0
    s.use_regex = 0
    s.length = 0
    s.rx = NULL


cdef int64_t *_offsets_batch(const tt.tt_program *prog, tt.tt_scratch *scratch, const uint8_t **ptrs,
                             const size_t *sizes, Py_ssize_t n_texts, int64_t *counts, size_t total_bytes,
                             size_t *total, int *failed) noexcept nogil:
    # Appends each text's char offsets to one buffer, sized for ~1 piece per 4 bytes, doubled as needed.
    cdef const tt.tt_piece *pieces
    cdef size_t n, cap = total_bytes // 4 + 16, used = 0, new_cap
    cdef int64_t *buf = <int64_t *>malloc(cap * 2 * sizeof(int64_t))
    cdef int64_t *grown
    cdef Py_ssize_t i
    cdef int rc
    if buf == NULL:
        failed[0] = 1
        return NULL
    for i in range(n_texts):
        rc = tt.tt_program_run(prog, scratch, ptrs[i], sizes[i], &pieces, &n)
        if rc != 0:
            failed[0] = rc
            break
        if used + n > cap:
            new_cap = cap * 2
            while new_cap < used + n:
                new_cap *= 2
            grown = <int64_t *>realloc(buf, new_cap * 2 * sizeof(int64_t))
            if grown == NULL:
                failed[0] = 1
                break
            buf = grown
            cap = new_cap
        tt.tt_char_offsets(ptrs[i], sizes[i], pieces, n, buf + 2 * used)
        counts[i] = n
        used += n
    total[0] = used
    if used and not failed[0]:
        grown = <int64_t *>realloc(buf, used * 2 * sizeof(int64_t))  # give the unused tail back
        if grown != NULL:
            buf = grown
    return buf


# ---------------------------------------------------------------- classify and tables

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec


cdef extern from "tagtok.h":
    void _cls_classify "tt_classify"(int alphabet, const uint8_t *text, size_t n, uint8_t *tags,
                                     uint64_t *char_starts) nogil
    int _cls_classify_with "tt_classify_with"(int impl, int alphabet, const uint8_t *text, size_t n,
                                              uint8_t *tags, uint64_t *char_starts) nogil
    int _cls_impl_available "tt_impl_available"(int impl)
    long _cls_utf8_from_units_with "tt_utf8_from_units_with"(int impl, const void *data, int unit, size_t len,
                                                             uint8_t *out) nogil
    int _cls_impl_active "tt_impl_active"()
    const char *_cls_impl_name "tt_impl_name"(int impl)

cdef extern from "engine/classify_internal.h":
    const char *_cls_impl_env_error "tt_impl_env_error"()

cdef extern from "tagtok_tables.h":
    int _CLS_PROP_COUNT "TT_PROP_COUNT"
    const char *const _cls_prop_names "tt_prop_names"[]
    int _CLS_ATOM_COUNT "TT_ATOM_COUNT"
    const uint32_t _cls_atom_props "tt_atom_props"[]
    const char *const _cls_atom_names "tt_atom_names"[]
    const uint8_t _cls_atom_ascii "tt_atom_ascii"[128]
    const uint16_t _cls_atom_stage1 "tt_atom_stage1"[0x1100]
    const uint8_t _cls_atom_stage2 "tt_atom_stage2"[]
    int _CLS_ATOM_RUN_COUNT "TT_ATOM_RUN_COUNT"
    const uint32_t _cls_atom_run_start "tt_atom_run_start"[]
    const uint8_t _cls_atom_run_tag "tt_atom_run_tag"[]
    int _CLS_SCRIPT_COUNT "TT_SCRIPT_COUNT"
    int _CLS_SCRIPT_ANY "TT_SCRIPT_ANY"
    const char *const _cls_script_names "tt_script_names"[]
    const uint16_t _cls_script_stage1 "tt_script_stage1"[0x1100]
    const uint8_t _cls_script_stage2 "tt_script_stage2"[]
    int _CLS_SCRIPT_RUN_COUNT "TT_SCRIPT_RUN_COUNT"
    const uint32_t _cls_script_run_start "tt_script_run_start"[]
    const uint8_t _cls_script_run_tag "tt_script_run_tag"[]
    const uint32_t _cls_bytelevel_map "tt_bytelevel_map"[256]
    int _CLS_CI_FOLD_COUNT "TT_CI_FOLD_COUNT"
    const uint32_t _cls_ci_fold_cp "tt_ci_fold_cp"[]
    const char _cls_ci_fold_letter "tt_ci_fold_letter"[]

_CLS_IMPL_IDS = {"scalar": 0, "sse2": 1, "avx2": 2, "neon": 3, "avx512": 4}
_CLS_ALPHABETS = {"atoms": 0, "scripts": 1}


def _cls_check_env():
    # HF_TAGTOK_IMPL applies to every C caller, which cannot fail; refuse to import rather than run
    # silently on a kernel the user did not ask for.
    cdef const char *bad = _cls_impl_env_error()
    if bad != NULL:
        available = [name for name in impl_names() if impl_available(name)]
        raise RuntimeError(f"HF_TAGTOK_IMPL={bad.decode()!r} is not available on this machine; "
                           f"choose one of {available} or unset it")


def impl_names():
    """Every classify implementation hf_tagtok knows, available here or not."""
    return list(_CLS_IMPL_IDS)


def impl_available(name):
    """Whether the named implementation can run on this CPU and build."""
    return name in _CLS_IMPL_IDS and bool(_cls_impl_available(_CLS_IMPL_IDS[name]))


def impl_active():
    """The implementation tt_classify uses (best available, or forced by HF_TAGTOK_IMPL)."""
    return _cls_impl_name(_cls_impl_active()).decode()


def classify(data, alphabet="atoms", impl=None):
    """Tag every byte of UTF-8 `data`: returns (tags, char_starts).

    tags[i] is the tag of the char starting at byte i, or 0xFF at a continuation byte; char_starts
    holds ceil(len/64) little-endian uint64 words, bit i%64 of word i//64 set iff byte i starts a char.
    """
    cdef const uint8_t[::1] view = _cls_utf8_view(data)
    if alphabet not in _CLS_ALPHABETS:
        raise ValueError(f"alphabet must be 'atoms' or 'scripts', not {alphabet!r}")
    cdef int alpha = _CLS_ALPHABETS[alphabet]
    cdef int impl_id = -1
    if impl is not None:
        if impl not in _CLS_IMPL_IDS:
            raise ValueError(f"unknown classify implementation {impl!r}; known: {impl_names()}")
        if not impl_available(impl):
            raise RuntimeError(f"classify implementation {impl!r} is not available on this machine")
        impl_id = _CLS_IMPL_IDS[impl]
    cdef size_t n = view.shape[0]
    tags = PyBytes_FromStringAndSize(NULL, n)
    starts = PyBytes_FromStringAndSize(NULL, 8 * ((n + 63) // 64))
    cdef uint8_t *tag_ptr = <uint8_t *>PyBytes_AS_STRING(tags)
    cdef uint64_t *start_ptr = <uint64_t *>PyBytes_AS_STRING(starts)
    cdef const uint8_t *text = &view[0] if n else <const uint8_t *>b""
    with nogil:
        if impl_id < 0:
            _cls_classify(alpha, text, n, tag_ptr, start_ptr)
        else:
            _cls_classify_with(impl_id, alpha, text, n, tag_ptr, start_ptr)
    return tags, starts


def utf8_of(str text, impl=None):
    """`text` as UTF-8 by the named implementation's transcode kernel (the one the native pipeline runs on
    a str that is not ASCII); ValueError when it holds a surrogate."""
    impl = impl or impl_active()
    if not impl_available(impl):
        raise RuntimeError(f"implementation {impl!r} is not available on this machine")
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef int unit = PyUnicode_KIND(text)
    out = PyBytes_FromStringAndSize(NULL, 4 * n)
    cdef long written = _cls_utf8_from_units_with(_CLS_IMPL_IDS[impl], PyUnicode_DATA(text), unit, <size_t>n,
                                                  <uint8_t *>PyBytes_AS_STRING(out))
    if written < 0:
        raise ValueError("text holds a surrogate code point, which has no UTF-8 form")
    return out[:written]


def _time_classify(data, alphabet="atoms", impl=None, int repeats=5):
    """Best wall time (s) of one classify pass over `data`, outside Python: for the benchmark."""
    tags, starts = classify(data, alphabet, impl)  # validates every argument once
    cdef const uint8_t[::1] view = _cls_utf8_view(data)
    cdef size_t n = view.shape[0]
    if n == 0:
        return 0.0
    cdef int alpha = _CLS_ALPHABETS[alphabet]
    cdef int impl_id = -1 if impl is None else _CLS_IMPL_IDS[impl]
    cdef uint8_t *tag_ptr = <uint8_t *>PyBytes_AS_STRING(tags)
    cdef uint64_t *start_ptr = <uint64_t *>PyBytes_AS_STRING(starts)
    cdef timespec t0, t1
    cdef double best = 1e300
    for _ in range(repeats):
        with nogil:
            clock_gettime(CLOCK_MONOTONIC, &t0)
            if impl_id < 0:
                _cls_classify(alpha, &view[0], n, tag_ptr, start_ptr)
            else:
                _cls_classify_with(impl_id, alpha, &view[0], n, tag_ptr, start_ptr)
            clock_gettime(CLOCK_MONOTONIC, &t1)
        best = min(best, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9)
    return best


cdef _cls_utf8_view(data):
    # The kernels trust their input to be valid UTF-8 (they read a lead's continuation bytes blindly),
    # so anything else is rejected here with the error str would raise.
    if isinstance(data, str):
        raise TypeError("classify() takes UTF-8 bytes, not str; use text.encode('utf-8')")
    try:
        raw = memoryview(data).cast("B")
    except TypeError:
        raise TypeError(f"classify() takes a bytes-like object, not {type(data).__name__}") from None
    bytes(raw).decode("utf-8")
    return raw


_cls_tables_cache = None


def tables():
    """The committed generated tables as Python data (for the pure-Python reference)."""
    global _cls_tables_cache
    if _cls_tables_cache is None:
        _cls_tables_cache = _cls_build_tables()
    return dict(_cls_tables_cache)


cdef _cls_stage2(const uint16_t *stage1, const uint8_t *stage2):
    cdef int blocks = 0
    for b in range(0x1100):
        blocks = max(blocks, stage1[b] + 1)
    return stage2[:blocks * 256]


cdef _cls_build_tables():
    return {
        "prop_names": [_cls_prop_names[i].decode() for i in range(_CLS_PROP_COUNT)],
        "atom_props": tuple(_cls_atom_props[i] for i in range(_CLS_ATOM_COUNT)),
        "atom_names": [_cls_atom_names[i].decode() for i in range(_CLS_ATOM_COUNT)],
        "atom_ascii": _cls_atom_ascii[:128],
        "atom_stage1": tuple(_cls_atom_stage1[i] for i in range(0x1100)),
        "atom_stage2": _cls_stage2(_cls_atom_stage1, _cls_atom_stage2),
        "atom_run_start": tuple(_cls_atom_run_start[i] for i in range(_CLS_ATOM_RUN_COUNT)),
        "atom_run_tag": _cls_atom_run_tag[:_CLS_ATOM_RUN_COUNT],
        "script_names": [_cls_script_names[i].decode() for i in range(_CLS_SCRIPT_COUNT)],
        "script_any": _CLS_SCRIPT_ANY,
        "script_stage1": tuple(_cls_script_stage1[i] for i in range(0x1100)),
        "script_stage2": _cls_stage2(_cls_script_stage1, _cls_script_stage2),
        "script_run_start": tuple(_cls_script_run_start[i] for i in range(_CLS_SCRIPT_RUN_COUNT)),
        "script_run_tag": _cls_script_run_tag[:_CLS_SCRIPT_RUN_COUNT],
        "bytelevel_map": tuple(_cls_bytelevel_map[i] for i in range(256)),
        "ci_fold_cp": tuple(_cls_ci_fold_cp[i] for i in range(_CLS_CI_FOLD_COUNT)),
        "ci_fold_letter": _cls_ci_fold_letter[:_CLS_CI_FOLD_COUNT].decode("ascii"),
    }


_cls_check_env()
