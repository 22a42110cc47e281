# cython: language_level=3
"""hf_tagtok._lists: Python objects and token columns converted into each other in C: per-text rows built
straight from flat token columns, the views `encode_batch` returns, lists of ints chained into columns, and
the int arrays of compact JSON objects read into columns (`flat_json_columns`, ext/lists/json_columns.c).

transformers' `BatchEncoding` holds a list of ints (or of (start, end) tuples) per text. Building
them here, in one pass with no intermediate numpy slices or Python loops, is most of what separates
the native columns from the finished `BatchEncoding`.

Ints and offset tuples are shared from process-wide caches filled on first use (both are immutable,
so sharing is invisible but to `is`), which turns most per-token allocations and frees into reference
count changes. Memory is bounded: ints below 131072 (a 1 MiB table, plus 32 bytes per int seen) and
(start, end) tuples with start < 8192 and end - start < 8 (a 512 KiB table, plus 56 bytes per tuple
seen, 3.5 MiB at most). Offset tuples hold only ints, so they are untracked by the cyclic GC at once,
exactly as CPython's own collector would untrack them later, instead of making it rescan them.

`rows` builds every field of a call at once, making all the (empty) row lists before filling any,
so the young-generation collection those allocations trigger does not walk the items, and a call that
makes such a collection due runs it before filling (see rows_collect_now and rows_build). Filled rows
(ints alone) are untracked, so the older generations' collections never walk them either: a caller that
keeps every output of a stream would otherwise pay a visit per token at each of them.
"""
from libc.stdint cimport int64_t, uint8_t, uint32_t

import numpy as np

cdef extern from *:
    """
    #include <Python.h>
    #include <stdint.h>

    /* Ints below this are kept once made: token ids of every common vocabulary and character
       offsets of texts up to 128k characters. Only values actually seen are made. */
    #define ROWS_INT_CACHE 131072
    static PyObject *rows_ints[ROWS_INT_CACHE];

    static PyObject *rows_int(uint64_t v) {  /* new reference */
        if (v < ROWS_INT_CACHE) {
            PyObject *o = rows_ints[v];
            if (o == NULL) {
                o = PyLong_FromUnsignedLongLong(v);
                if (o == NULL) return NULL;
                rows_ints[v] = o;
            }
            Py_INCREF(o);
            return o;
        }
        return PyLong_FromUnsignedLongLong(v);
    }

    static PyObject *rows_new_pair(uint64_t start, uint64_t end) {  /* new reference */
        PyObject *a = rows_int(start), *b = a ? rows_int(end) : NULL;
        PyObject *t = b ? PyTuple_New(2) : NULL;
        if (t == NULL) { Py_XDECREF(a); Py_XDECREF(b); return NULL; }
        PyTuple_SET_ITEM(t, 0, a);
        PyTuple_SET_ITEM(t, 1, b);
        PyObject_GC_UnTrack(t);
        return t;
    }

    /* Offset tuples with start < ROWS_PAIR_STARTS and end - start < ROWS_PAIR_WIDTHS are kept once made
       (a tuple of ints is immutable, so sharing is invisible but to `is`): nearly every token of
       texts up to 8k characters, at most 65536 tuples (3.5 MiB) plus this 512 KiB table. */
    #define ROWS_PAIR_STARTS 8192
    #define ROWS_PAIR_WIDTHS 8
    static PyObject *rows_pairs[ROWS_PAIR_STARTS * ROWS_PAIR_WIDTHS];

    static PyObject *rows_pair(const int64_t *p) {  /* new reference */
        uint64_t start = (uint64_t)p[0], end = (uint64_t)p[1];
        if (start >= ROWS_PAIR_STARTS || end < start || end - start >= ROWS_PAIR_WIDTHS)
            return rows_new_pair(start, end);
        PyObject **slot = &rows_pairs[start * ROWS_PAIR_WIDTHS + (end - start)];
        if (*slot == NULL && (*slot = rows_new_pair(start, end)) == NULL) return NULL;
        Py_INCREF(*slot);
        return *slot;
    }

    /* What a column's rows hold: 1 everywhere (no data), ints of a flat column, or offset tuples. */
    enum { ROWS_ONES, ROWS_U8, ROWS_U32, ROWS_I64, ROWS_PAIRS };

    /* Row lists are made before anything is filled (see rows_build). Where CPython's list layout may be
       relied on (as Cython does for its list fast paths), a row is made empty and receives its item
       array when filled, so a collection meanwhile has nothing to scan; elsewhere it is made at its
       length with NULL items (which a collection still scans, ~0.5 ms per 250k items). */
    #if defined(PYPY_VERSION) || defined(Py_LIMITED_API) || defined(Py_GIL_DISABLED)
    #define ROWS_EMPTY_ROWS 0
    #else
    #define ROWS_EMPTY_ROWS 1
    #endif

    static PyObject *rows_new_row(Py_ssize_t length) {
        return PyList_New(ROWS_EMPTY_ROWS ? 0 : length);
    }

    /* Where the row's `length` items go; NULL with an exception set when out of memory. */
    static PyObject **rows_row_items(PyObject *row, Py_ssize_t length) {
    #if ROWS_EMPTY_ROWS
        PyObject **items = length ? PyMem_New(PyObject *, length) : NULL;
        if (length && items == NULL) { PyErr_NoMemory(); return NULL; }
        ((PyListObject *)row)->ob_item = items;  /* list_dealloc frees it with PyMem_Free */
        ((PyListObject *)row)->allocated = length;
        return items;
    #else
        (void)length;
        return PySequence_Fast_ITEMS(row);
    #endif
    }

    /* The row now holds its first `filled` items (all of them unless filling failed). */
    static void rows_row_filled(PyObject *row, Py_ssize_t filled) {
    #if ROWS_EMPTY_ROWS
        Py_SET_SIZE(row, filled);
    #else
        (void)row; (void)filled;  /* made at full length; unfilled items stay NULL */
    #endif
    }

    /* Fill rows (row r takes lengths[r] items) with the column's next values in order; ITEM(k) is the
       new reference for flat position k. 0, or -1 with an exception set. */
    #define ROWS_FILL(NAME, T, ITEM)                                                                   \
    static int NAME(PyObject *rows, const void *data, const int64_t *lengths, Py_ssize_t n) {        \
        const T *column = (const T *)data;                                                           \
        Py_ssize_t k = 0;                                                                            \
        (void)column;                                                                                \
        for (Py_ssize_t r = 0; r < n; r++) {                                                         \
            PyObject *row = PyList_GET_ITEM(rows, r);                                                \
            PyObject **items = rows_row_items(row, lengths[r]);                                        \
            if (items == NULL && lengths[r]) return -1;                                              \
            for (Py_ssize_t i = 0; i < lengths[r]; i++, k++) {                                       \
                PyObject *v = ITEM(k);                                                               \
                if (v == NULL) { rows_row_filled(row, i); return -1; }                                 \
                items[i] = v;                                                                        \
            }                                                                                        \
            rows_row_filled(row, lengths[r]);                                                          \
        }                                                                                            \
        return 0;                                                                                    \
    }
    #define ROWS_INT_AT(k) rows_int((uint64_t)column[k])
    #define ROWS_PAIR_AT(k) rows_pair(column + 2 * (k))
    ROWS_FILL(rows_fill_u8, uint8_t, ROWS_INT_AT)
    ROWS_FILL(rows_fill_u32, uint32_t, ROWS_INT_AT)
    ROWS_FILL(rows_fill_i64, int64_t, ROWS_INT_AT)
    ROWS_FILL(rows_fill_pairs, int64_t, ROWS_PAIR_AT)

    /* Take `count` references to `o` at once: a reference count raised once per item is a chain of
       dependent loads and stores on one object. Debug and free-threaded builds count references
       themselves, so they take them one by one. */
    static void rows_incref_n(PyObject *o, Py_ssize_t count) {
    #if defined(Py_REF_DEBUG) || defined(Py_GIL_DISABLED) || defined(PYPY_VERSION) || defined(Py_LIMITED_API)
        for (Py_ssize_t i = 0; i < count; i++) Py_INCREF(o);
    #else
        Py_SET_REFCNT(o, Py_REFCNT(o) + count);  /* leaves an immortal object (3.12+) as it is */
    #endif
    }

    /* Rows of 1s: every item is the same int. */
    static int rows_fill_ones(PyObject *rows, const void *data, const int64_t *lengths, Py_ssize_t n) {
        (void)data;
        PyObject *one = rows_int(1);
        if (one == NULL) return -1;
        for (Py_ssize_t r = 0; r < n; r++) {
            PyObject *row = PyList_GET_ITEM(rows, r);
            PyObject **items = rows_row_items(row, lengths[r]);
            if (items == NULL && lengths[r]) { Py_DECREF(one); return -1; }
            for (Py_ssize_t i = 0; i < lengths[r]; i++) items[i] = one;
            rows_incref_n(one, lengths[r]);
            rows_row_filled(row, lengths[r]);
        }
        Py_DECREF(one);
        return 0;
    }

    /* Up to 3.11 CPython collects synchronously, in the allocation that takes the young generation's count
       past threshold 0; later versions defer the collection to the interpreter loop, after the rows are
       filled. */
    #if PY_VERSION_HEX < 0x030C0000 && !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
    #define ROWS_EARLY_COLLECTION 1
    #else
    #define ROWS_EARLY_COLLECTION 0
    #endif

    /* A call that made `made` tracked lists (at least half the young threshold) makes a collection due
       now or soon, and that collection would walk every item of the rows it finds filled. So it runs now,
       while they are still empty, as the collector itself runs one: threshold 0 lowered to 1 for one
       allocation, so CPython picks the generation by its own rules (the older generations' counts and the
       long-lived ratio). 0, or -1 with an exception set. */
    static int rows_collect_now(Py_ssize_t made) {
        static PyObject *get_threshold, *set_threshold;  /* gc's, fetched once */
        if (!ROWS_EARLY_COLLECTION || !PyGC_IsEnabled()) return 0;
        if (set_threshold == NULL) {
            PyObject *gc = PyImport_ImportModule("gc");
            if (gc == NULL) return -1;
            get_threshold = PyObject_GetAttrString(gc, "get_threshold");
            set_threshold = get_threshold ? PyObject_GetAttrString(gc, "set_threshold") : NULL;
            Py_DECREF(gc);
            if (set_threshold == NULL) { Py_CLEAR(get_threshold); return -1; }
        }
        PyObject *thresholds = PyObject_CallNoArgs(get_threshold);
        if (thresholds == NULL) return -1;
        if (!PyTuple_Check(thresholds) || PyTuple_GET_SIZE(thresholds) != 3) { Py_DECREF(thresholds); return 0; }
        PyObject *young = PyTuple_GET_ITEM(thresholds, 0), *t1 = PyTuple_GET_ITEM(thresholds, 1),
                 *t2 = PyTuple_GET_ITEM(thresholds, 2);
        long threshold = PyLong_AsLong(young);
        int status = 0;
        if (threshold == -1 && PyErr_Occurred()) status = -1;
        else if (threshold > 0 && made >= threshold / 2) {
            PyObject *one = PyLong_FromLong(1);
            PyObject *set = one ? PyObject_CallFunctionObjArgs(set_threshold, one, t1, t2, NULL) : NULL;
            Py_XDECREF(one);
            if (set == NULL) status = -1;
            else {
                Py_DECREF(set);
                PyObject *probe = PySet_New(NULL);  /* the allocation the collection runs in (sets have no free list) */
                Py_XDECREF(probe);
                PyObject *restored = PyObject_CallFunctionObjArgs(set_threshold, young, t1, t2, NULL);
                if (probe == NULL || restored == NULL) status = -1;
                Py_XDECREF(restored);
            }
        }
        Py_DECREF(thresholds);
        return status;
    }

    /* A filled row holds ints (or untracked tuples of ints) alone, so it can be in no reference cycle: it
       is untracked, as CPython untracks such tuples itself, and no collection walks its items again (kept
       outputs otherwise cost every older-generation collection a visit per token). A row a caller later
       makes part of a cycle is then not collected. */
    static void rows_untrack(PyObject *row) {
    #if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
        if (PyObject_GC_IsTracked(row)) PyObject_GC_UnTrack(row);
    #else
        (void)row;
    #endif
    }

    /* A tuple holding, per column, a list of n rows. Every row list is made before any is filled:
       the young-generation collections these allocations trigger then find the rows empty, where
       filling first would have them walk every item made so far (~1 ms per 150k items, and finding
       nothing to free: all of it is referenced from here). Filling makes no tracked object (ints are
       not containers, offset tuples are untracked at once), so the collector stays off meanwhile. */
    static PyObject *rows_build(const int *kinds, const void *const *data, Py_ssize_t n_columns,
                             const int64_t *lengths, Py_ssize_t n) {
        static int (*const fill[])(PyObject *, const void *, const int64_t *, Py_ssize_t) = {
            [ROWS_ONES] = rows_fill_ones, [ROWS_U8] = rows_fill_u8, [ROWS_U32] = rows_fill_u32,
            [ROWS_I64] = rows_fill_i64, [ROWS_PAIRS] = rows_fill_pairs};
        PyObject *out = PyTuple_New(n_columns);
        if (out == NULL) return NULL;
        for (Py_ssize_t c = 0; c < n_columns; c++) {
            PyObject *rows = PyList_New(n);
            if (rows == NULL) { Py_DECREF(out); return NULL; }
            PyTuple_SET_ITEM(out, c, rows);
            for (Py_ssize_t r = 0; r < n; r++) {
                PyObject *row = rows_new_row(lengths[r]);
                if (row == NULL) { Py_DECREF(out); return NULL; }
                PyList_SET_ITEM(rows, r, row);
            }
        }
        if (rows_collect_now(n * n_columns) < 0) { Py_DECREF(out); return NULL; }
        int gc_was_enabled = PyGC_Disable(), failed = 0;
        for (Py_ssize_t c = 0; c < n_columns && !failed; c++)
            failed = fill[kinds[c]](PyTuple_GET_ITEM(out, c), data[c], lengths, n) < 0;
        if (gc_was_enabled) PyGC_Enable();
        if (failed) { Py_DECREF(out); return NULL; }  /* unfilled items are NULL: lists free them */
        for (Py_ssize_t c = 0; c < n_columns; c++)
            for (Py_ssize_t r = 0; r < n; r++) rows_untrack(PyList_GET_ITEM(PyTuple_GET_ITEM(out, c), r));
        return out;
    }
    """
    enum:
        ROWS_ONES
        ROWS_U8
        ROWS_U32
        ROWS_I64
        ROWS_PAIRS
    object rows_build(const int *kinds, const void *const *data, Py_ssize_t n_columns, const int64_t *lengths,
                   Py_ssize_t n)

cdef enum:
    MAX_COLUMNS = 8  # columns one rows() call takes (transformers asks for at most five)


cdef _checked(lengths):
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if lengths.ndim != 1:
        raise ValueError("lengths must be 1-D and >= 0")
    return lengths


cdef Py_ssize_t _total(const int64_t[::1] lens) except -1:
    # Their sum, in C: numpy's reductions cost microseconds a call, which a one-text call notices.
    cdef Py_ssize_t i, total = 0
    for i in range(lens.shape[0]):
        if lens[i] < 0:
            raise ValueError("lengths must be 1-D and >= 0")
        total += lens[i]
    return total


cdef int _kind(column) except -1:
    if column.ndim == 2:
        if column.shape[1] != 2 or column.dtype != np.int64:
            raise ValueError("offset columns must be (n, 2) int64")
        if column.shape[0] and column.min() < 0:
            raise ValueError("offset columns take non-negative values")
        return ROWS_PAIRS
    if column.ndim != 1:
        raise ValueError("int columns must be 1-D")
    if column.dtype == np.uint8:
        return ROWS_U8
    if column.dtype == np.uint32:
        return ROWS_U32
    if column.dtype == np.int64:
        if column.shape[0] and column.min() < 0:
            raise ValueError("int columns take non-negative values")
        return ROWS_I64
    raise TypeError(f"int columns must be uint8, uint32 or int64, not {column.dtype}")


def rows(columns, lengths):
    """A tuple with, per column, [[...]] per text: row r holds the column's next lengths[r] values.

    A column is a 1-D uint8, uint32 or non-negative int64 array (rows of ints), an (n_tokens, 2)
    non-negative int64 array (rows of (start, end) tuples), or None (rows of 1s, e.g. an attention
    mask without padding). Building every column in one call keeps the collector from walking them.
    """
    columns = list(columns)
    if len(columns) > MAX_COLUMNS:
        raise ValueError(f"rows takes at most {MAX_COLUMNS} columns")
    cdef const int64_t[::1] lens = _checked(lengths)
    cdef Py_ssize_t n = lens.shape[0], c
    n_items = _total(lens)
    cdef int kinds[MAX_COLUMNS]
    cdef const void *data[MAX_COLUMNS]
    cdef const uint8_t[::1] raw
    held = []  # keeps each column's contiguous copy alive while its pointer is used
    for c, column in enumerate(columns):
        kinds[c], data[c] = ROWS_ONES, NULL
        if column is None:
            continue
        column = np.ascontiguousarray(column)
        kinds[c] = _kind(column)
        if column.shape[0] != n_items:
            raise ValueError("lengths must sum to every column's size")
        if n_items:
            raw = column.reshape(-1).view(np.uint8)
            data[c] = &raw[0]
        held.append(column)
    return rows_build(kinds, data, len(columns), &lens[0] if n else NULL, n)


def int_rows(flat, lengths):
    """[[int]] per text: the next lengths[r] values of the uint8, uint32 or non-negative int64 column."""
    flat = np.asarray(flat)
    if flat.ndim != 1:
        raise ValueError("int_rows takes a 1-D column")
    return rows((flat,), lengths)[0]


def pair_rows(pairs, lengths):
    """[[(start, end)]] per text: the next lengths[r] rows of an (n_tokens, 2) non-negative int64 column."""
    pairs = np.ascontiguousarray(pairs, dtype=np.int64)
    if pairs.ndim != 2:
        raise ValueError("pair_rows takes an (n, 2) column")
    return rows((pairs,), lengths)[0]


def flat_ids(list rows):
    """(ids uint32, lengths int64): lists of token ids (stock's `Encoding.ids`, one per text) chained into one
    column, read in C (no Python step per id)."""
    cdef Py_ssize_t n = len(rows), i, k, at = 0, total = 0
    cdef list row
    lengths = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] lens = lengths
    for i in range(n):
        row = rows[i]
        lens[i] = len(row)
        total += lens[i]
    ids = np.empty(total, dtype=np.uint32)
    cdef uint32_t[::1] out = ids
    for i in range(n):
        row = rows[i]
        for k in range(lens[i]):
            out[at + k] = row[k]
        at += lens[i]
    return ids, lengths


def flat_pairs(list rows):
    """int64 (n, 2): lists of (start, end) tuples (stock's `Encoding.offsets`, one per encoding) chained into
    one column, read in C (no Python step per pair)."""
    cdef Py_ssize_t n = len(rows), i, k, at = 0, total = 0
    cdef list row
    cdef tuple pair
    for i in range(n):
        total += len(<list?>rows[i])
    pairs = np.empty((total, 2), dtype=np.int64)
    cdef int64_t[:, ::1] out = pairs
    for i in range(n):
        row = rows[i]
        for k in range(len(row)):
            pair = row[k]
            if len(pair) != 2:
                raise ValueError(f"an offset pair has {len(pair)} items")
            out[at + k, 0] = pair[0]
            out[at + k, 1] = pair[1]
        at += len(row)
    return pairs


cdef class EncodingView:
    """Where an `Encoding` finds its tokens: its batch and rows, or (`_own`) fields of its own. Made in C:
    `encode_batch` makes one per input, and as Python objects with slots they cost twice as much."""
    cdef public object _batch, _own
    cdef public Py_ssize_t _index, _item, _start, _end

    def __init__(self, batch, Py_ssize_t index, Py_ssize_t item, Py_ssize_t start, Py_ssize_t end):
        self._batch, self._index, self._item, self._start, self._end = batch, index, item, start, end
        self._own = None


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object op)


def encoding_views(type cls, batch, const int64_t[:] starts, const int64_t[:] ends):
    """One `cls` (an EncodingView type) per input of `batch`, input i encoded in its rows [starts[i], ends[i]).

    A view refers only to its batch, which refers to no view, and to fields of its own that hold none, so it
    can be in no reference cycle: it is untracked, and no collection walks it (a caller keeping every output
    of a stream holds thousands of views a call)."""
    if not issubclass(cls, EncodingView):
        raise TypeError(f"{cls.__name__} is not an EncodingView")
    if starts.shape[0] != ends.shape[0]:
        raise ValueError("starts and ends differ in length")
    cdef Py_ssize_t i, n = starts.shape[0]
    cdef list views = [None] * n
    cdef EncodingView view
    for i in range(n):
        view = EncodingView.__new__(cls)
        view._batch, view._own = batch, None
        view._index = view._item = i
        view._start, view._end = starts[i], ends[i]
        PyObject_GC_UnTrack(view)
        views[i] = view
    return views


cdef extern from "lists/json_columns.h":
    enum:
        JSON_INTS, JSON_BYTES, JSON_PAIRS, JSON_STRINGS, JSON_INTS_OR_NULLS, JSON_NESTED
    ctypedef struct json_field:
        const char *key
        size_t key_size
        int kind
        void *column
    ctypedef struct json_columns:
        const json_field *fields
        int n_fields
        size_t rows, row_room
        int64_t *lengths
        int64_t *samples
        size_t objects, object_room
    int json_columns_read(json_columns *out, const char *document, size_t size, int64_t sample) nogil

cdef enum:
    MAX_JSON_FIELDS = 16

_JSON_ITEM_BYTES = {"ints": 2, "bytes": 2, "pairs": 6, "strings": 3, "ints_or_nulls": 2, "nested": 0}
_JSON_KINDS = {"ints": JSON_INTS, "bytes": JSON_BYTES, "pairs": JSON_PAIRS, "strings": JSON_STRINGS,
               "ints_or_nulls": JSON_INTS_OR_NULLS, "nested": JSON_NESTED}
# the column each kind that is read fills: (dtype, shape after the row count)
_JSON_COLUMNS = {"ints": (np.uint32, ()), "bytes": (np.uint8, ()), "pairs": (np.int64, (2,))}


cdef void *_address(column) except NULL:
    """The first byte of a C-contiguous numpy array of one of flat_json_columns' dtypes."""
    cdef const uint8_t[::1] data = column.reshape(-1).view(np.uint8)
    return <void *>&data[0]


def flat_json_columns(list documents, tuple fields):
    """Columns of the int arrays of JSON objects (bytes, one per document, written compactly) that begin with
    `fields`: (key, kind) pairs in order, kind "ints" (a uint32 column), "bytes" (a uint8 column), "pairs" (an
    int64 (n, 2) column of [a, b] items), "strings" or "ints_or_nulls" (arrays passed over), or "nested" (an
    array of objects that begin with the same fields, their rows after their parent's; in those, it is passed
    over). Each object's arrays have one length. Returns (a column per "ints", "bytes" or "pairs" field, in
    order, then lengths and samples, int64 per object: its rows and its document's index), or None when a
    document is not such an object. The documents are read without the GIL."""
    if not 0 < len(fields) <= MAX_JSON_FIELDS:
        raise ValueError(f"1 to {MAX_JSON_FIELDS} fields")
    for key, kind in fields:
        if not isinstance(key, bytes) or not key or kind not in _JSON_KINDS:
            raise ValueError(f"a field is (non-empty bytes, one of {sorted(_JSON_KINDS)}), not {(key, kind)!r}")
    cdef Py_ssize_t i, n = len(documents), total = 0
    for i in range(n):
        total += len(<bytes?>documents[i])
    cdef json_field spec[MAX_JSON_FIELDS]
    cdef json_columns out
    # an item takes 2 bytes at least ("0,"), 3 as a string, 6 as a pair, and an object 8 ({"k":[]})
    out.row_room = total // max(1, sum(_JSON_ITEM_BYTES[kind] for _, kind in fields)) + 1
    out.object_room = total // 8 + 1
    columns = [np.empty((out.row_room, *_JSON_COLUMNS[kind][1]), dtype=_JSON_COLUMNS[kind][0])
               for _, kind in fields if kind in _JSON_COLUMNS]
    cdef Py_ssize_t k = 0
    for i, (key, kind) in enumerate(fields):
        spec[i].key, spec[i].key_size = <const char *>key, len(key)
        spec[i].kind, spec[i].column = _JSON_KINDS[kind], NULL
        if kind in _JSON_COLUMNS:
            spec[i].column = _address(columns[k])
            k += 1
    lengths = np.empty(out.object_room, dtype=np.int64)
    samples = np.empty(out.object_room, dtype=np.int64)
    out.fields, out.n_fields = spec, len(fields)
    out.lengths, out.samples = <int64_t *>_address(lengths), <int64_t *>_address(samples)
    out.rows = out.objects = 0
    # the list keeps every document alive while its bytes are read without the GIL
    texts = np.empty(n, dtype=np.uintp)
    sizes = np.empty(n, dtype=np.uintp)
    cdef size_t[::1] text_at = texts, size_of = sizes
    cdef bytes document
    for i in range(n):
        document = documents[i]
        text_at[i], size_of[i] = <size_t><const char *>document, len(document)
    cdef bint read = True
    with nogil:
        for i in range(n):
            if not json_columns_read(&out, <const char *>text_at[i], size_of[i], i):
                read = False
                break
    if not read:
        return None
    return (*[column[:out.rows].copy() for column in columns], lengths[:out.objects].copy(),
            samples[:out.objects].copy())
