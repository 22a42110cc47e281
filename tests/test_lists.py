"""hf_tagtok._lists: per-text rows from flat columns equal rows sliced out of the same columns in Python.

Whole-pipeline equality with stock transformers is tests/test_fast.py; here the builder itself is
checked on random layouts (padding on both sides, values beyond the int cache, empty texts) and on
bad input.
"""
import gc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

_lists = pytest.importorskip("hf_tagtok._lists")

DTYPES = (np.uint8, np.uint32, np.int64)


def sliced_rows(values, lengths, widths, fill, left):
    rows, at = [], 0
    for length, width in zip(lengths, widths):
        row, padding = values[at:at + length], [fill] * (width - length)
        rows.append(padding + row if left else row + padding)
        at += length
    return rows


layouts = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=8)


@settings(max_examples=60, deadline=None)
@given(layouts, st.sampled_from(DTYPES), st.booleans(), st.data())
def test_int_rows_equal_python_slices(layout, dtype, left, data):
    lengths = [length for length, _ in layout]
    widths = [length + pad for length, pad in layout]
    high = int(np.iinfo(dtype).max) if dtype != np.int64 else 2 ** 40  # beyond the int cache too
    values = data.draw(st.lists(st.integers(0, high), min_size=sum(lengths), max_size=sum(lengths)))
    column = np.array(values, dtype=dtype)
    rows = _lists.int_rows(column, np.array(lengths, dtype=np.int64), np.array(widths), -1, left)
    assert rows == sliced_rows(values, lengths, widths, -1, left)
    assert all(type(value) is int for row in rows for value in row)


@settings(max_examples=60, deadline=None)
@given(layouts, st.booleans(), st.data())
def test_pair_rows_equal_python_slices(layout, left, data):
    lengths = [length for length, _ in layout]
    widths = [length + pad for length, pad in layout]
    pair = st.tuples(st.integers(0, 2 ** 33), st.integers(0, 2 ** 33))
    pairs = data.draw(st.lists(pair, min_size=sum(lengths), max_size=sum(lengths)))
    column = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    rows = _lists.pair_rows(column, lengths, widths, left)
    assert rows == sliced_rows(pairs, lengths, widths, (0, 0), left)
    assert all(type(pair) is tuple for row in rows for pair in row)


def test_rows_survive_a_collection_and_keep_gc_state():
    column = np.arange(20, dtype=np.int64).reshape(10, 2)
    assert gc.isenabled()
    rows = _lists.pair_rows(column, [4, 6], [4, 6])
    assert gc.isenabled()
    gc.collect()
    assert rows == [[(0, 1), (2, 3), (4, 5), (6, 7)], [(8, 9), (10, 11), (12, 13), (14, 15), (16, 17), (18, 19)]]


@pytest.mark.parametrize("call, error", [
    (lambda: _lists.int_rows(np.zeros(3, np.uint32), [1, 1], [1, 1], 0), ValueError),      # lengths do not sum
    (lambda: _lists.int_rows(np.zeros(2, np.uint32), [2], [1], 0), ValueError),            # width below length
    (lambda: _lists.int_rows(np.zeros(2, np.uint32), [1, 1], [1], 0), ValueError),         # shapes differ
    (lambda: _lists.int_rows(np.zeros(2, np.float32), [2], [2], 0), TypeError),            # unsupported dtype
    (lambda: _lists.int_rows(np.array([-1], np.int64), [1], [1], 0), ValueError),          # negative value
    (lambda: _lists.int_rows(np.zeros((2, 2), np.int64), [2], [2], 0), ValueError),        # not 1-D
    (lambda: _lists.pair_rows(np.zeros(4, np.int64), [2], [2]), ValueError),               # not (n, 2)
    (lambda: _lists.pair_rows(np.array([[0, -1]]), [1], [1]), ValueError),                 # negative value
])
def test_bad_layouts_raise(call, error):
    with pytest.raises(error):
        call()
