"""hf_tagtok._lists: per-text rows from flat columns equal rows sliced out of the same columns in Python.

Whole-pipeline equality with stock transformers is tests/test_fast.py; here the builder itself is
checked on random layouts (values beyond the int and tuple caches, empty texts, several columns at
once) and on bad input.
"""
import gc
import json
import random
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

_lists = pytest.importorskip("hf_tagtok._lists")

DTYPES = (np.uint8, np.uint32, np.int64)


def sliced_rows(values, lengths):
    ends = np.cumsum(lengths, dtype=np.int64)
    return [values[end - length:end] for length, end in zip(lengths, ends.tolist())]


lengths_st = st.lists(st.integers(0, 6), max_size=8)


@settings(max_examples=60, deadline=None)
@given(lengths_st, st.sampled_from(DTYPES), st.data())
def test_int_rows_equal_python_slices(lengths, dtype, data):
    high = int(np.iinfo(dtype).max) if dtype != np.int64 else 2 ** 40  # beyond the int cache too
    values = data.draw(st.lists(st.integers(0, high), min_size=sum(lengths), max_size=sum(lengths)))
    rows = _lists.int_rows(np.array(values, dtype=dtype), np.array(lengths, dtype=np.int64))
    assert rows == sliced_rows(values, lengths)
    assert all(type(value) is int for row in rows for value in row)


@settings(max_examples=60, deadline=None)
@given(lengths_st, st.data())
def test_pair_rows_equal_python_slices(lengths, data):
    pair = st.tuples(st.integers(0, 2 ** 33), st.integers(0, 2 ** 33))
    pairs = data.draw(st.lists(pair, min_size=sum(lengths), max_size=sum(lengths)))
    rows = _lists.pair_rows(np.array(pairs, dtype=np.int64).reshape(-1, 2), lengths)
    assert rows == sliced_rows(pairs, lengths)
    assert all(type(pair) is tuple for row in rows for pair in row)


# Offset tuples with start < 8192 and end - start < 8 come from the cache; draw around both edges.
near_cache_edges = st.one_of(st.integers(0, 20), st.integers(8180, 8200), st.integers(0, 2 ** 33))


@settings(max_examples=100, deadline=None)
@given(lengths_st, st.data())
def test_pair_rows_inside_and_outside_the_tuple_cache_equal_python_slices(lengths, data):
    pair = st.tuples(near_cache_edges, st.integers(-3, 12)).map(lambda p: (p[0], max(0, p[0] + p[1])))
    pairs = data.draw(st.lists(pair, min_size=sum(lengths), max_size=sum(lengths)))
    for _ in range(2):  # the second call reads the tuples the first one cached
        rows = _lists.pair_rows(np.array(pairs, dtype=np.int64).reshape(-1, 2), lengths)
        assert rows == sliced_rows(pairs, lengths)
        assert all(type(pair) is tuple and all(type(v) is int for v in pair) for row in rows for pair in row)


@settings(max_examples=60, deadline=None)
@given(lengths_st, st.data())
def test_rows_of_several_columns_equal_python_slices(lengths, data):
    n = sum(lengths)
    ids = data.draw(st.lists(st.integers(0, 2 ** 32 - 1), min_size=n, max_size=n))
    mask = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    pairs = data.draw(st.lists(st.tuples(near_cache_edges, near_cache_edges), min_size=n, max_size=n))
    got = _lists.rows((np.array(ids, np.uint32), None, np.array(mask, np.uint8),
                       np.array(pairs, np.int64).reshape(-1, 2)), np.array(lengths, np.int64))
    assert got == (sliced_rows(ids, lengths), [[1] * length for length in lengths], sliced_rows(mask, lengths),
                   sliced_rows(pairs, lengths))


def test_rows_built_while_the_collector_runs_at_every_allocation():
    # rows() makes every (still empty) row list before filling any: collections then see empty rows
    column = np.arange(3000, dtype=np.uint32)
    lengths = [3] * 1000
    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        got = _lists.rows((column, None, np.repeat(column.astype(np.int64), 2).reshape(-1, 2)), lengths)
    finally:
        gc.set_threshold(*threshold)
    values = column.tolist()
    assert got == (sliced_rows(values, lengths), [[1] * 3] * 1000, sliced_rows([(v, v) for v in values], lengths))


def test_rows_grow_and_shrink_like_any_list():
    # rows receive their item arrays after being made empty (see rows_build in ext/_lists.pyx): list methods must not care
    ids, ones = _lists.rows((np.arange(6, dtype=np.uint32), None), [4, 2, 0])
    ids[0].append(9)
    ids[1] *= 3
    del ids[0][:2]
    ones[2].extend(range(100))
    ones[0].clear()
    assert ids == [[2, 3, 9], [4, 5, 4, 5, 4, 5], []] and ones == [[], [1, 1], list(range(100))]


def test_rows_are_left_to_reference_counting():
    # a row holds ints or int tuples alone (no cycle possible), so the collector never walks its items;
    # the list of rows stays tracked, and whatever a caller puts in a row stays alive while the row holds it
    ids, pairs = _lists.rows((np.arange(6, dtype=np.uint32), np.arange(12, dtype=np.int64).reshape(-1, 2)), [4, 2])
    assert gc.is_tracked(ids) and not any(gc.is_tracked(row) for row in ids + pairs)
    ids[0].append({"kept": True})
    gc.collect()
    assert ids[0][-1] == {"kept": True}


def _collections_during(call):
    """(call's result, the generations collected while it ran)."""
    seen = []

    def record(phase, info):
        if phase == "start":
            seen.append(info["generation"])
    gc.callbacks.append(record)
    try:
        return call(), seen
    finally:
        gc.callbacks.remove(record)


def test_a_call_making_many_rows_runs_the_due_collection_and_keeps_the_settings():
    # a call making at least half the young threshold of row lists collects once they are made, before they
    # are filled (CPython up to 3.11 collects in the allocation; later versions defer it to the eval loop)
    column = np.arange(1200, dtype=np.uint32)
    threshold = gc.get_threshold()
    gc.set_threshold(1000, threshold[1], threshold[2])
    try:
        rows, collected = _collections_during(lambda: _lists.rows((column, None), [2] * 600))
        assert gc.get_threshold() == (1000, threshold[1], threshold[2]) and gc.isenabled()
        if sys.version_info < (3, 12) and sys.implementation.name == "cpython":
            assert collected
        gc.collect()  # the young count starts at 0: 20 lists cannot reach the threshold on their own
        _, collected = _collections_during(lambda: _lists.rows((column[:20], None), [2] * 10))
        assert not collected  # a small call leaves the collector to its own schedule
    finally:
        gc.set_threshold(*threshold)
    assert rows == (sliced_rows(column.tolist(), [2] * 600), [[1, 1]] * 600)


@pytest.mark.parametrize("off", ["disabled", "threshold 0"])
def test_no_collection_when_the_collector_is_off(off):
    column = np.arange(3000, dtype=np.uint32)
    threshold = gc.get_threshold()
    if off == "disabled":
        gc.disable()
    else:
        gc.set_threshold(0)
    try:
        rows, collected = _collections_during(lambda: _lists.rows((column, None), [3] * 1000))
        assert not collected
        assert gc.isenabled() == (off != "disabled")
        assert gc.get_threshold()[0] == (threshold[0] if off == "disabled" else 0)
    finally:
        gc.enable()
        gc.set_threshold(*threshold)
    assert rows[0] == sliced_rows(column.tolist(), [3] * 1000)


def test_rows_of_ones_hold_one_reference_per_item():
    one = 1
    before = sys.getrefcount(one)
    rows = _lists.rows((None,), [5, 0, 7])[0]
    if sys.version_info < (3, 12):  # later versions make small ints immortal: their count does not move
        assert sys.getrefcount(one) == before + 12
    del rows
    assert sys.getrefcount(one) == before


def test_rows_survive_a_collection_and_keep_gc_state():
    column = np.arange(20, dtype=np.int64).reshape(10, 2)
    assert gc.isenabled()
    rows = _lists.pair_rows(column, [4, 6])
    assert gc.isenabled()
    gc.collect()
    assert rows == [[(0, 1), (2, 3), (4, 5), (6, 7)], [(8, 9), (10, 11), (12, 13), (14, 15), (16, 17), (18, 19)]]


@pytest.mark.parametrize("call, error", [
    (lambda: _lists.int_rows(np.zeros(3, np.uint32), [1, 1]), ValueError),         # lengths do not sum
    (lambda: _lists.int_rows(np.zeros(2, np.uint32), [3, -1]), ValueError),        # negative length
    (lambda: _lists.int_rows(np.zeros(2, np.uint32), [[1, 1]]), ValueError),       # lengths not 1-D
    (lambda: _lists.int_rows(np.zeros(2, np.float32), [2]), TypeError),            # unsupported dtype
    (lambda: _lists.int_rows(np.array([-1], np.int64), [1]), ValueError),          # negative value
    (lambda: _lists.int_rows(np.zeros((2, 2), np.int64), [2]), ValueError),        # not 1-D
    (lambda: _lists.pair_rows(np.zeros(4, np.int64), [2]), ValueError),            # not (n, 2)
    (lambda: _lists.pair_rows(np.array([[0, -1]]), [1]), ValueError),              # negative value
    (lambda: _lists.rows((np.zeros(2, np.uint32), np.zeros(3, np.uint8)), [2]), ValueError),  # sizes differ
    (lambda: _lists.rows((None,) * 9, [0]), ValueError),                            # too many columns
    (lambda: _lists.rows((np.zeros((2, 3), np.int64),), [2]), ValueError),          # not (n, 2)
])
def test_bad_layouts_raise(call, error):
    with pytest.raises(error):
        call()


def test_flat_ids_chains_rows_like_numpy():
    rows = [[1, 2, 3], [], [4294967295], list(range(1000))]
    ids, lengths = _lists.flat_ids(rows)
    assert ids.dtype == np.uint32 and lengths.dtype == np.int64
    assert ids.tolist() == [i for row in rows for i in row]
    assert lengths.tolist() == [len(row) for row in rows]
    assert _lists.flat_ids([])[0].tolist() == []
    for bad in ([[-1]], [[1 << 32]]):
        with pytest.raises(OverflowError):
            _lists.flat_ids(bad)
    with pytest.raises(TypeError):
        _lists.flat_ids([["1"]])


def test_flat_pairs_chains_offset_rows_like_numpy():
    rows = [[(0, 1), (1, 5)], [], [(7, 7)], [(i, i + 3) for i in range(1000)], [(0, (1 << 63) - 1)]]
    pairs = _lists.flat_pairs(rows)
    assert pairs.dtype == np.int64 and pairs.shape == (1004, 2)
    assert pairs.tolist() == np.array([p for row in rows for p in row], dtype=np.int64).tolist()
    assert _lists.flat_pairs([]).shape == (0, 2)
    with pytest.raises(ValueError):
        _lists.flat_pairs([[(1, 2, 3)]])
    with pytest.raises(TypeError):
        _lists.flat_pairs([[[1, 2]]])
    with pytest.raises(TypeError):
        _lists.flat_pairs([((1, 2),)])
    with pytest.raises(OverflowError):
        _lists.flat_pairs([[(0, 1 << 63)]])


def test_encoding_views_hold_each_inputs_rows():
    views = _lists.encoding_views(_lists.EncodingView, "batch", np.array([0, 3, 3]), np.array([3, 3, 7]))
    assert [(v._batch, v._index, v._item, v._start, v._end, v._own) for v in views] == [
        ("batch", 0, 0, 0, 3, None), ("batch", 1, 1, 3, 3, None), ("batch", 2, 2, 3, 7, None)]
    assert _lists.encoding_views(_lists.EncodingView, None, np.zeros(0, np.int64), np.zeros(0, np.int64)) == []
    with pytest.raises(TypeError):
        _lists.encoding_views(object, None, np.zeros(1, np.int64), np.zeros(1, np.int64))
    with pytest.raises(ValueError):
        _lists.encoding_views(_lists.EncodingView, None, np.zeros(2, np.int64), np.zeros(1, np.int64))


def _compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


_JSON_FIELDS = ((b"a", "ints"), (b"s", "strings"), (b"w", "ints_or_nulls"), (b"p", "pairs"), (b"kids", "nested"))


def _json_object(rng, depth=0):
    n = rng.randrange(6)
    strings = ["".join(rng.choice(['"', "\\", "x", "é", "\n", ']', '"p":[', "\u2028", "}", "{"])
                       for _ in range(rng.randrange(5))) for _ in range(n)]
    obj = {"a": [rng.choice([0, 7, 4294967295, rng.randrange(1 << 32)]) for _ in range(n)], "s": strings,
           "w": [rng.choice([None, 0, 12, 1 << 40]) for _ in range(n)],
           "p": [[rng.randrange(1 << 20), rng.choice([0, (1 << 63) - 1, rng.randrange(1 << 40)])] for _ in range(n)],
           "kids": [_json_object(rng, depth + 1) for _ in range(rng.randrange(3) if depth < 2 else 0)]}
    if depth:
        obj["rest"] = rng.choice([{"0": {"start": 0, "end": [1, "}"]}}, "x\\\"]", None, 1.5, []])
    else:
        obj["after"] = rng.choice([[1, 2], "ignored"])
    return obj


def _expected_json_columns(objects):
    ints, pairs, lengths, samples = [], [], [], []

    for sample, obj in enumerate(objects):
        for part in (obj, *obj["kids"]):  # the kids' own kids are passed over
            ints.extend(part["a"])
            pairs.extend(part["p"])
            lengths.append(len(part["a"]))
            samples.append(sample)
    return ints, pairs, lengths, samples


def test_flat_json_columns_read_like_the_json_module():
    rng = random.Random(5)
    for _ in range(200):
        objects = [_json_object(rng) for _ in range(rng.randrange(1, 6))]
        got = _lists.flat_json_columns([_compact(obj) for obj in objects], _JSON_FIELDS)
        ints, pairs, lengths, samples = _expected_json_columns(objects)
        assert got[0].dtype == np.uint32 and got[1].dtype == np.int64 and got[1].shape == (len(pairs), 2)
        assert got[0].tolist() == ints and got[1].tolist() == pairs
        assert got[2].tolist() == lengths and got[3].tolist() == samples
    assert [len(column) for column in _lists.flat_json_columns([], _JSON_FIELDS)] == [0, 0, 0, 0]


def test_flat_json_columns_without_nested_leave_the_rest_unread():
    document = _compact({"a": [1, 2], "s": ["x", "y"], "kids": "not read", "z": [-1]})
    ids, lengths, samples = _lists.flat_json_columns([document], ((b"a", "ints"), (b"s", "strings")))
    assert ids.tolist() == [1, 2] and lengths.tolist() == [2] and samples.tolist() == [0]


@pytest.mark.parametrize("document", [
    b'{"s":[],"a":[]}', b'{"a":[1],"s":[]}', b'{"a":[1],"s":["x","y"]}', b'{"a":[-1],"s":[""]}',
    b'{"a":[4294967296],"s":[""]}', b'{"a":[01],"s":[""]}', b'{"a":[1.5],"s":[""]}', b'{"a":[1] ,"s":[""]}',
    b'{"a":["1"],"s":[""]}', b'{"a":[1],"s":[1]}', b'{"a":[1],"s":["x]}', b'{"a":[1],"s":["x\\"]}', b'[1]', b'',
    b'{"a":[1],"s":["\x00"]}', b'{"a":[1,],"s":["x",""]}', b'{"a":[99999999999999999999],"s":[""]}',
])
def test_flat_json_columns_refuse_other_shapes(document):
    assert _lists.flat_json_columns([document], ((b"a", "ints"), (b"s", "strings"))) is None


def test_flat_json_columns_refuse_every_document_cut_before_its_last_field_ends():
    rng = random.Random(9)
    document = _compact(_json_object(rng) | {"kids": [_json_object(rng, 1), _json_object(rng, 1)]})
    whole = _lists.flat_json_columns([document], _JSON_FIELDS)
    read = document.index(b',"after":')
    for end in range(len(document) + 1):
        got = _lists.flat_json_columns([document[:end]], _JSON_FIELDS)
        if end < read:
            assert got is None, end
        else:
            assert all(np.array_equal(a, b) for a, b in zip(got, whole)), end


def test_flat_json_columns_read_bytes_into_uint8_and_refuse_what_does_not_fit():
    fields = ((b"f", "bytes"), (b"a", "ints"))
    flags, ints, lengths, samples = _lists.flat_json_columns([b'{"f":[0,1,255],"a":[7,8,9]}'], fields)
    assert flags.dtype == np.uint8 and flags.tolist() == [0, 1, 255] and ints.tolist() == [7, 8, 9]
    assert _lists.flat_json_columns([b'{"f":[256],"a":[1]}'], fields) is None


def test_flat_json_columns_check_their_fields():
    for fields in ((), ((b"", "ints"),), (("a", "ints"),), ((b"a", "floats"),), ((b"a", "ints"),) * 17):
        with pytest.raises(ValueError):
            _lists.flat_json_columns([b"{}"], fields)
    with pytest.raises(TypeError):
        _lists.flat_json_columns(["{}"], ((b"a", "ints"),))


def _json_shape(obj, inner=False):
    """Whether obj begins with the fields of _JSON_FIELDS, of their kinds and one length (the kids' own kids
    any value)."""
    if not isinstance(obj, dict) or list(obj)[:5] != ["a", "s", "w", "p", "kids"]:
        return False
    n = len(obj["a"]) if isinstance(obj["a"], list) else -1

    def ints(values, limit):
        return all(type(v) is int and 0 <= v <= limit for v in values)

    return (n >= 0 and all(isinstance(obj[k], list) and len(obj[k]) == n for k in "aswp")
            and ints(obj["a"], 2**32 - 1) and all(isinstance(v, str) for v in obj["s"])
            and ints([v for v in obj["w"] if v is not None], 2**64 - 1)
            and all(isinstance(p, list) and len(p) == 2 and ints(p, 2**63 - 1) for p in obj["p"])
            and (inner or (isinstance(obj["kids"], list) and all(_json_shape(kid, True) for kid in obj["kids"]))))


def test_flat_json_columns_read_mutated_documents_like_the_json_module():
    rng = random.Random(13)
    base = _compact(_json_object(rng) | {"kids": [_json_object(rng, 1), _json_object(rng, 1)]})
    agreed = 0
    for _ in range(4000):
        document = bytearray(base)
        for _ in range(rng.randrange(1, 3)):
            document[rng.randrange(len(document))] = rng.choice(b'0123456789[]{}",:\\nul ')
        document = bytes(document)
        got = _lists.flat_json_columns([document], _JSON_FIELDS)
        try:
            obj = json.loads(document)
        except ValueError:
            continue
        if _compact(obj) == document and _json_shape(obj):
            ints, pairs, lengths, samples = _expected_json_columns([obj])
            assert [column.tolist() for column in got] == [ints, pairs, lengths, samples]
            agreed += 1
    assert agreed > 100
