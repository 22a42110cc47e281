# cython: language_level=3
"""hf_tagtok._lists: per-text Python rows built straight from flat token columns.

transformers' `BatchEncoding` holds a list of ints (or of (start, end) tuples) per text. Building
them here, in one pass with no intermediate numpy slices or Python loops, is most of what separates
the native columns from the finished `BatchEncoding`.

Ints and offset tuples are shared from process-wide caches filled on first use (both are immutable,
so sharing is invisible but to `is`), which turns most per-token allocations and frees into reference
count changes. Memory is bounded: ints below 131072 (a 1 MiB table, plus 32 bytes per int seen) and
(start, end) tuples with start < 8192 and end - start < 8 (a 512 KiB table, plus 56 bytes per tuple
seen, 3.5 MiB at most). Offset tuples hold only ints, so they are untracked by the cyclic GC at once,
exactly as CPython's own collector would untrack them later, instead of making it rescan them.
"""
from libc.stdint cimport int64_t, uint8_t, uint32_t

import numpy as np

cdef extern from *:
    """
    #include <Python.h>
    #include <stdint.h>

    /* Ints below this are kept once made: token ids of every common vocabulary and character
       offsets of texts up to 128k characters. Only values actually seen are made. */
    #define TT_INT_CACHE 131072
    static PyObject *tt_ints[TT_INT_CACHE];

    static PyObject *tt_int(uint64_t v) {  /* new reference */
        if (v < TT_INT_CACHE) {
            PyObject *o = tt_ints[v];
            if (o == NULL) {
                o = PyLong_FromUnsignedLongLong(v);
                if (o == NULL) return NULL;
                tt_ints[v] = o;
            }
            Py_INCREF(o);
            return o;
        }
        return PyLong_FromUnsignedLongLong(v);
    }

    /* Row r holds the next lengths[r] values of the flat column, in order. */
    #define TT_ROWS(NAME, T)                                                                         \
    static PyObject *NAME(const T *flat, const int64_t *lengths, Py_ssize_t n) {                     \
        PyObject *rows = PyList_New(n);                                                              \
        if (rows == NULL) return NULL;                                                               \
        const T *at = flat;                                                                          \
        for (Py_ssize_t r = 0; r < n; r++) {                                                         \
            PyObject *row = PyList_New(lengths[r]);                                                  \
            if (row == NULL) { Py_DECREF(rows); return NULL; }                                       \
            PyList_SET_ITEM(rows, r, row);                                                           \
            for (Py_ssize_t i = 0; i < lengths[r]; i++) {                                            \
                PyObject *v = tt_int((uint64_t)at[i]);                                               \
                if (v == NULL) { Py_DECREF(rows); return NULL; }                                     \
                PyList_SET_ITEM(row, i, v);                                                          \
            }                                                                                        \
            at += lengths[r];                                                                        \
        }                                                                                            \
        return rows;                                                                                 \
    }
    TT_ROWS(tt_rows_u8, uint8_t)
    TT_ROWS(tt_rows_u32, uint32_t)
    TT_ROWS(tt_rows_i64, int64_t)

    static PyObject *tt_new_pair(uint64_t start, uint64_t end) {  /* new reference */
        PyObject *a = tt_int(start), *b = a ? tt_int(end) : NULL;
        PyObject *t = b ? PyTuple_New(2) : NULL;
        if (t == NULL) { Py_XDECREF(a); Py_XDECREF(b); return NULL; }
        PyTuple_SET_ITEM(t, 0, a);
        PyTuple_SET_ITEM(t, 1, b);
        PyObject_GC_UnTrack(t);
        return t;
    }

    /* Offset tuples with start < TT_PAIR_STARTS and end - start < TT_PAIR_WIDTHS are kept once made
       (a tuple of ints is immutable, so sharing is invisible but to `is`): nearly every token of
       texts up to 8k characters, at most 65536 tuples (3.5 MiB) plus this 512 KiB table. */
    #define TT_PAIR_STARTS 8192
    #define TT_PAIR_WIDTHS 8
    static PyObject *tt_pairs[TT_PAIR_STARTS * TT_PAIR_WIDTHS];

    static PyObject *tt_pair(const int64_t *p) {  /* new reference */
        uint64_t start = (uint64_t)p[0], end = (uint64_t)p[1];
        if (start >= TT_PAIR_STARTS || end < start || end - start >= TT_PAIR_WIDTHS)
            return tt_new_pair(start, end);
        PyObject **slot = &tt_pairs[start * TT_PAIR_WIDTHS + (end - start)];
        if (*slot == NULL && (*slot = tt_new_pair(start, end)) == NULL) return NULL;
        Py_INCREF(*slot);
        return *slot;
    }

    /* Rows of (start, end) tuples from an (n_tokens, 2) column. */
    static PyObject *tt_pair_rows(const int64_t *pairs, const int64_t *lengths, Py_ssize_t n) {
        int gc_was_enabled = PyGC_Disable();  /* pure allocation: collecting midway finds nothing */
        PyObject *rows = PyList_New(n);
        const int64_t *at = pairs;
        for (Py_ssize_t r = 0; rows != NULL && r < n; r++) {
            PyObject *row = PyList_New(lengths[r]);
            if (row == NULL) { Py_CLEAR(rows); break; }
            PyList_SET_ITEM(rows, r, row);
            for (Py_ssize_t i = 0; i < lengths[r]; i++, at += 2) {
                PyObject *t = tt_pair(at);
                if (t == NULL) { Py_CLEAR(rows); break; }
                PyList_SET_ITEM(row, i, t);
            }
        }
        if (gc_was_enabled) PyGC_Enable();
        return rows;
    }
    """
    object tt_rows_u8(const uint8_t *flat, const int64_t *lengths, Py_ssize_t n)
    object tt_rows_u32(const uint32_t *flat, const int64_t *lengths, Py_ssize_t n)
    object tt_rows_i64(const int64_t *flat, const int64_t *lengths, Py_ssize_t n)
    object tt_pair_rows(const int64_t *pairs, const int64_t *lengths, Py_ssize_t n)


cdef _checked(lengths, Py_ssize_t n_items):
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if lengths.ndim != 1 or (lengths < 0).any() or int(lengths.sum()) != n_items:
        raise ValueError("lengths must be 1-D, >= 0 and sum to the column size")
    return lengths


def int_rows(flat, lengths):
    """[[int]] per text: the next lengths[r] values of the uint8, uint32 or non-negative int64 column."""
    flat = np.ascontiguousarray(flat)
    if flat.ndim != 1:
        raise ValueError("int_rows takes a 1-D column")
    cdef const int64_t[::1] lens = _checked(lengths, flat.shape[0])
    cdef Py_ssize_t n = lens.shape[0]
    cdef const int64_t *lp = &lens[0] if n else NULL
    cdef const uint8_t[::1] u8
    cdef const uint32_t[::1] u32
    cdef const int64_t[::1] i64
    if flat.dtype == np.uint8:
        u8 = flat
        return tt_rows_u8(&u8[0] if u8.shape[0] else NULL, lp, n)
    if flat.dtype == np.uint32:
        u32 = flat
        return tt_rows_u32(&u32[0] if u32.shape[0] else NULL, lp, n)
    if flat.dtype == np.int64:
        i64 = flat
        if i64.shape[0] and np.asarray(i64).min() < 0:
            raise ValueError("int_rows takes non-negative values")
        return tt_rows_i64(&i64[0] if i64.shape[0] else NULL, lp, n)
    raise TypeError(f"int_rows takes uint8, uint32 or int64 columns, not {flat.dtype}")


def pair_rows(pairs, lengths):
    """[[(start, end)]] per text: the next lengths[r] rows of an (n_tokens, 2) non-negative int64 column."""
    pairs = np.ascontiguousarray(pairs, dtype=np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError("pair_rows takes an (n, 2) column")
    if pairs.shape[0] and pairs.min() < 0:
        raise ValueError("pair_rows takes non-negative values")
    cdef const int64_t[::1] lens = _checked(lengths, pairs.shape[0])
    cdef const int64_t[:, ::1] p = pairs
    cdef Py_ssize_t n = lens.shape[0]
    return tt_pair_rows(&p[0, 0] if p.shape[0] else NULL, &lens[0] if n else NULL, n)
