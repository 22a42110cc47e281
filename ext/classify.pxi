# Python view of the classify engine and of the committed generated tables.
#
# Included by ext/_engine.pyx. C names are bound under private aliases so the including module can
# declare tagtok.h itself without clashing.
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec


cdef extern from "tagtok.h":
    void _cls_classify "tt_classify"(int alphabet, const uint8_t *text, size_t n, uint8_t *tags,
                                     uint64_t *char_starts) nogil
    int _cls_classify_with "tt_classify_with"(int impl, int alphabet, const uint8_t *text, size_t n,
                                              uint8_t *tags, uint64_t *char_starts) nogil
    int _cls_impl_available "tt_impl_available"(int impl)
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
