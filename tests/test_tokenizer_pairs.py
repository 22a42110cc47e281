"""Text pairs, pre-tokenized input, truncation (every strategy, direction, stride, with overflow) and
padding: hf_tagtok.Tokenizer against stock tokenizers.Tokenizer, computed in the test, every field and
helper, overflow to full depth, and proof that the native path ran (a native encoding is not stock's
Encoding class)."""
import itertools

import numpy as np
import pytest
import tokenizers

import hf_tagtok
from conformance import tokenizer_mode, tokenizer_zoo

SMALL = ["small_bytelevel", "small_split_bytelevel_template", "small_trim_offsets", "small_bert_processing",
         "small_roberta_processing", "small_added_strip", "small_wordpiece_prefix", "small_metaspace_byte_fallback"]
REAL = ["llama3", "gpt2", "bert"]
NAMES = [name for name in SMALL + REAL if name in tokenizer_zoo.available()]

TEXTS = ["Hello world, how are you?", "", "a", " leading and  double  spaces ", "don't stop 123 4567",
         "é naïve café 東京 😀", "x <|special|> y", "The quick brown fox jumps over the lazy dog again and again."]
PAIRS = list(zip(TEXTS, TEXTS[3:] + TEXTS[:3]))

TRUNCATIONS = [None] + [dict(max_length=length, stride=stride, strategy=strategy, direction=direction)
                        for length, stride, strategy, direction in itertools.product(
                            (5, 14), (0, 2), ("longest_first", "only_first", "only_second"), ("right", "left"))]
PADDINGS = [None, {}, dict(direction="left", length=24, pad_id=3, pad_type_id=1, pad_token="<p>"),
            dict(pad_to_multiple_of=8), dict(direction="left", length=9, pad_to_multiple_of=5), dict(length=0)]
CASES = list(itertools.product(range(len(TRUNCATIONS)), (True, False), (False, True)))


@pytest.fixture(scope="module", params=NAMES)
def zoo(request):
    try:
        stock = tokenizer_zoo.load(request.param)
    except tokenizer_zoo.Unavailable as error:
        pytest.skip(str(error))
    return request.param, stock, hf_tagtok.Tokenizer.from_hf(stock)


def _configure(tokenizers_, truncation, padding):
    for tokenizer in tokenizers_:
        tokenizer.no_truncation()
        tokenizer.no_padding()
        if truncation is not None:
            tokenizer.enable_truncation(**truncation)
        if padding is not None:
            tokenizer.enable_padding(**padding)


def _arrays_diff(arrays, encodings, overflowing):
    expected = [part for e in encodings for part in ((e, *e.overflowing) if overflowing else (e,))]
    samples = [sample for sample, e in enumerate(encodings) for _ in range(1 + len(e.overflowing) if overflowing else 1)]
    if arrays.overflow_to_sample.tolist() != samples:
        return "overflow_to_sample"
    found = tokenizer_mode.columns_diff(arrays, expected)
    if found:
        return found
    if arrays.attention_mask.tolist() != [m for e in expected for m in e.attention_mask]:
        return "attention_mask"
    return None


@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_stock(zoo, case):
    name, stock, ours = zoo
    truncation_index, add_special, pairs = CASES[case]
    if name in REAL and case % 4:
        pytest.skip("real vocabularies: every 4th case (CI time); the small tokenizers take every case")
    truncation, padding = TRUNCATIONS[truncation_index], PADDINGS[case % len(PADDINGS)]
    _configure((stock, ours), truncation, padding)
    inputs = PAIRS if pairs else TEXTS
    try:
        expected = stock.encode_batch(inputs, add_special_tokens=add_special)
    except BaseException as stock_error:  # noqa: B036 - stock panics (BaseException) on some strides
        with pytest.raises(type(stock_error)):
            ours.encode_batch(inputs, add_special_tokens=add_special)
        return
    got = ours.encode_batch(inputs, add_special_tokens=add_special)
    assert not isinstance(got[0], tokenizers.Encoding), "stock ran, not the native path"
    assert [tokenizer_mode.deep_diff(g, e) for g, e in zip(got, expected)] == [None] * len(inputs)
    for item in inputs[:3]:  # a single encode pads to its own length
        args = item if pairs else (item,)
        assert tokenizer_mode.deep_diff(ours.encode(*args, add_special_tokens=add_special),
                          stock.encode(*args, add_special_tokens=add_special)) is None
    for overflowing in (False, True):
        arrays = ours.encode_batch_arrays(inputs, add_special_tokens=add_special, overflowing=overflowing)
        assert _arrays_diff(arrays, expected, overflowing) is None


WORDS = [text.split(" ") for text in TEXTS] + [[], [""], ["a", "", " b "]]


@pytest.mark.parametrize("truncation_index", [0, 1, 4, 8, 11])
def test_pretokenized_matches_stock(zoo, truncation_index):
    # stock encodes each word on its own: word id = its index, offsets within the word
    _, stock, ours = zoo
    _configure((stock, ours), TRUNCATIONS[truncation_index], PADDINGS[truncation_index % len(PADDINGS)])
    for inputs in (WORDS, list(zip(WORDS, WORDS[3:] + WORDS[:3]))):
        for add_special in (True, False):
            try:
                expected = stock.encode_batch(inputs, is_pretokenized=True, add_special_tokens=add_special)
            except BaseException as stock_error:  # noqa: B036
                with pytest.raises(type(stock_error)):
                    ours.encode_batch(inputs, is_pretokenized=True, add_special_tokens=add_special)
                continue
            got = ours.encode_batch(inputs, is_pretokenized=True, add_special_tokens=add_special)
            assert not isinstance(got[0], tokenizers.Encoding), "stock ran, not the native path"
            assert [tokenizer_mode.deep_diff(g, e) for g, e in zip(got, expected)] == [None] * len(inputs)
            arrays = ours.encode_batch_arrays(inputs, add_special_tokens=add_special, overflowing=True,
                                              is_pretokenized=True)
            assert _arrays_diff(arrays, expected, overflowing=True) is None
            args = inputs[0] if isinstance(inputs[0], tuple) else (inputs[0],)
            assert tokenizer_mode.deep_diff(ours.encode(*args, is_pretokenized=True, add_special_tokens=add_special),
                              stock.encode(*args, is_pretokenized=True, add_special_tokens=add_special)) is None


def test_mixed_singles_and_pairs_in_one_batch(zoo):
    _, stock, ours = zoo
    _configure((stock, ours), dict(max_length=13, stride=2), {})
    inputs = [TEXTS[0], list(PAIRS[3]), PAIRS[7], TEXTS[7]]
    got, expected = ours.encode_batch(inputs), stock.encode_batch(inputs)
    assert not isinstance(got[0], tokenizers.Encoding)
    assert [tokenizer_mode.deep_diff(g, e) for g, e in zip(got, expected)] == [None] * len(inputs)


@pytest.mark.parametrize("name", [name for name in ("small_split_bytelevel_template", "small_bert_processing",
                                                    "small_roberta_processing") if name in NAMES])
def test_truncation_errors_and_edges_match_stock(name):
    stock = tokenizer_zoo.load(name)
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    added = stock.num_special_tokens_to_add(True)
    settings = [
        dict(max_length=3, strategy="only_second"),             # single text: second sequence not provided
        dict(max_length=added + 1, strategy="only_first"),      # sequence too short
        dict(max_length=added + 3, stride=2),                   # pairs: stride >= each half (stock panics)
        dict(max_length=added),                                 # nothing left for the sequences
        dict(max_length=max(added - 1, 0)),                     # shorter than the added tokens
    ]
    for truncation in settings:
        for inputs in (TEXTS, PAIRS):
            try:
                _configure((stock,), truncation, None)
            except Exception as stock_error:
                with pytest.raises(type(stock_error)):
                    _configure((ours,), truncation, None)
                continue
            _configure((ours,), truncation, None)
            try:
                expected = stock.encode_batch(inputs)
            except BaseException as stock_error:  # noqa: B036
                with pytest.raises(type(stock_error)):
                    ours.encode_batch(inputs)
                with pytest.raises(type(stock_error)):
                    ours.encode(*inputs[0]) if inputs is PAIRS else ours.encode(inputs[0])
                continue
            got = ours.encode_batch(inputs)
            assert [tokenizer_mode.deep_diff(g, e) for g, e in zip(got, expected)] == [None] * len(inputs)


def test_invalid_settings_raise_like_stock():
    stock = tokenizer_zoo.load("small_bert_processing")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    for kwargs in (dict(max_length=4, stride=3), dict(max_length=5, strategy="nope"), dict(max_length=5, direction="up")):
        with pytest.raises(Exception) as expected:
            stock.enable_truncation(**kwargs)
        with pytest.raises(expected.type):
            ours.enable_truncation(**kwargs)
    with pytest.raises(Exception) as expected:
        stock.enable_padding(direction="middle")
    with pytest.raises(expected.type):
        ours.enable_padding(direction="middle")
    ours.enable_truncation(7, stride=1, strategy="only_first", direction="left")
    ours.enable_padding(length=12, pad_to_multiple_of=4, pad_token="<p>")
    stock.enable_truncation(7, stride=1, strategy="only_first", direction="left")
    stock.enable_padding(length=12, pad_to_multiple_of=4, pad_token="<p>")
    assert (ours.truncation, ours.padding) == (stock.truncation, stock.padding)
    report = ours.acceleration
    assert all(report[stage]["native"] for stage in ("truncation", "padding", "pairs"))


def test_pool_sized_pair_batch_matches_stock():
    # > 64 KB of text: the assembly runs in several pool workers, padding after they join
    stock = tokenizer_zoo.load("small_split_bytelevel_template")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    _configure((stock, ours), dict(max_length=40, stride=5), dict(pad_to_multiple_of=16))
    inputs = PAIRS * (1 + 70_000 // sum(len(a) + len(b) for a, b in PAIRS))
    got, expected = ours.encode_batch(inputs), stock.encode_batch(inputs)
    assert [g.ids for g in got] == [e.ids for e in expected]
    assert [[o.ids for o in g.overflowing] for g in got] == [[o.ids for o in e.overflowing] for e in expected]
    arrays = ours.encode_batch_arrays(inputs)
    assert np.array_equal(arrays.ids, np.array([i for e in expected for i in e.ids], dtype=np.uint32))
