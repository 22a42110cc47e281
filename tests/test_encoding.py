"""hf_tagtok's Encoding changed in place (pad, truncate, set_sequence_id), merged, pickled and copied, against
stock's Encoding given the same calls in the test: every field, overflow to full depth, and the helpers."""
import copy
import itertools
import pickle

import pytest
import tokenizers

import hf_tagtok
from conformance import tokenizer_zoo
from conformance.tokenizer_mode import deep_diff

NAMES = [name for name in ("small_bert_processing", "small_trim_offsets", "small_wordpiece_prefix",
                           "small_added_strip", "llama3") if name in tokenizer_zoo.available()]
TEXTS = ["Hello world, how are you?", "", "é naïve café 東京 😀", "x <|special|> y", "don't stop 123 4567"]
PAIRS = [("Hello world", "a b c d e f"), ("", "x"), ("東京 😀", "")]

# Each program is a list of (method, args, kwargs), applied in turn to both encodings.
PROGRAMS = [
    [("pad", (12,), {})],
    [("pad", (3,), {})],
    [("pad", (15,), dict(direction="left", pad_id=7, pad_type_id=2, pad_token="<p>"))],
    [("truncate", (4,), {})],
    [("truncate", (5,), dict(stride=2))],
    [("truncate", (5, 1, "left"), {})],
    [("truncate", (0,), {})],
    [("truncate", (100,), {})],
    [("truncate", (6,), dict(stride=1)), ("pad", (8,), dict(direction="left"))],
    [("pad", (14,), dict(direction="left")), ("truncate", (5,), dict(stride=2, direction="left"))],
    [("truncate", (1,), {}), ("set_sequence_id", (1,), {}), ("pad", (5,), {})],  # truncate drops the ranges
]
# over a single text's own range only: see the overlapping test below
SINGLE_PROGRAMS = [[("set_sequence_id", (0,), {}), ("pad", (13,), dict(direction="left"))]]


@pytest.fixture(scope="module", params=NAMES)
def pair_of_tokenizers(request):
    stock = tokenizer_zoo.load(request.param)
    return stock, hf_tagtok.Tokenizer.from_hf(stock)


def _encodings(tokenizer, pairs=False):
    return tokenizer.encode_batch(PAIRS if pairs else TEXTS)


def _run(encoding, program):
    for method, args, kwargs in program:
        getattr(encoding, method)(*args, **kwargs)


CASES = [(program, pairs) for program in PROGRAMS for pairs in (False, True)] + [(p, False) for p in SINGLE_PROGRAMS]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_changed_in_place_like_stock(pair_of_tokenizers, case):
    stock, ours = pair_of_tokenizers
    program, pairs = CASES[case]
    for mine, theirs in zip(_encodings(ours, pairs), _encodings(stock, pairs)):
        assert not isinstance(mine, tokenizers.Encoding)
        _run(mine, program)
        _run(theirs, program)
        assert deep_diff(mine, theirs) is None


def test_overlapping_sequence_ids_answer_one_of_the_overlapping_ids(pair_of_tokenizers):
    """A second id over a range that already has one: stock keeps the ranges in a randomly seeded hash map,
    so which id token_to_sequence answers changes from process to process; ours names one of them."""
    stock, ours = pair_of_tokenizers
    for tokenizer in (stock, ours):
        encoding = tokenizer.encode(*PAIRS[0])
        encoding.set_sequence_id(5)
        assert encoding.token_to_sequence(1) in (0, 5)
        assert encoding.n_sequences == 3


def test_overflow_parts_are_copies_like_stock(pair_of_tokenizers):
    stock, ours = pair_of_tokenizers
    for tokenizer in (stock, ours):
        tokenizer.enable_truncation(4, stride=1)
    try:
        mine, theirs = ours.encode(TEXTS[0]), stock.encode(TEXTS[0])
    finally:
        for tokenizer in (stock, ours):
            tokenizer.no_truncation()
    for encoding in (mine, theirs):
        encoding.pad(9)  # pads its overflow too
        encoding.overflowing[0].pad(20)  # a copy: the encoding keeps its own
    assert deep_diff(mine, theirs) is None


@pytest.mark.parametrize("growing_offsets", (True, False))
def test_merge_like_stock(pair_of_tokenizers, growing_offsets):
    stock, ours = pair_of_tokenizers
    for tokenizer in (stock, ours):
        tokenizer.enable_truncation(9, stride=1)
    try:
        mine, theirs = _encodings(ours) + _encodings(ours, True), _encodings(stock) + _encodings(stock, True)
    finally:
        for tokenizer in (stock, ours):
            tokenizer.no_truncation()
    for picks in itertools.chain(itertools.combinations(range(len(mine)), 2), [(), (0,), (1, 5, 6)]):
        merged = hf_tagtok.Encoding.merge([mine[i] for i in picks], growing_offsets=growing_offsets)
        expected = tokenizers.Encoding.merge([theirs[i] for i in picks], growing_offsets=growing_offsets)
        assert deep_diff(merged, expected) is None, picks
    assert deep_diff(mine[0], theirs[0]) is None  # merging changed neither input


def test_pickle_and_copies_are_independent_like_stock(pair_of_tokenizers):
    stock, ours = pair_of_tokenizers
    for mine, theirs in zip(_encodings(ours, True), _encodings(stock, True)):
        for clone in (pickle.loads(pickle.dumps(mine)), copy.deepcopy(mine), copy.copy(mine)):
            assert deep_diff(clone, theirs) is None
            clone.pad(30)
        assert deep_diff(mine, theirs) is None
        changed = copy.copy(mine)
        changed.truncate(2)
        assert deep_diff(pickle.loads(pickle.dumps(changed)), changed) is None


def test_bad_arguments_raise_like_stock(pair_of_tokenizers):
    stock, ours = pair_of_tokenizers
    mine, theirs = ours.encode(TEXTS[0]), stock.encode(TEXTS[0])
    calls = [("pad", (-1,), {}), ("pad", ("4",), {}), ("pad", (4,), dict(direction="up")),
             ("pad", (4,), dict(pad_id=-3)), ("pad", (4,), dict(pad_id=1 << 32)), ("pad", (4,), dict(pad_token=3)),
             ("truncate", (-2,), {}), ("truncate", (3,), dict(direction="middle")), ("truncate", (3.5,), {}),
             ("set_sequence_id", (-1,), {})]
    for method, args, kwargs in calls:
        with pytest.raises(Exception) as expected:
            getattr(theirs, method)(*args, **kwargs)
        with pytest.raises(expected.type):
            getattr(mine, method)(*args, **kwargs)
    with pytest.raises(TypeError):
        tokenizers.Encoding.merge("ab")
    with pytest.raises(TypeError):
        hf_tagtok.Encoding.merge("ab")
    assert deep_diff(mine, theirs) is None  # a refused call changed nothing


def test_stride_not_below_max_length_is_a_clear_error(pair_of_tokenizers):
    """Stock panics here (PanicException, a BaseException that most handlers let through); ours raises
    ValueError with stock's message (docs/tokenizer.md)."""
    stock, ours = pair_of_tokenizers
    mine, theirs = ours.encode(TEXTS[0]), stock.encode(TEXTS[0])
    with pytest.raises(BaseException) as expected:  # noqa: B017
        theirs.truncate(3, stride=3)
    with pytest.raises(ValueError) as raised:
        mine.truncate(3, stride=3)
    assert str(raised.value) in str(expected.value)


def test_unknown_pad_option_is_ignored_with_stock_message(pair_of_tokenizers, capfd):
    stock, ours = pair_of_tokenizers
    mine, theirs = ours.encode(TEXTS[0]), stock.encode(TEXTS[0])
    theirs.pad(20, colour="red")
    expected = capfd.readouterr().out
    mine.pad(20, colour="red")
    assert capfd.readouterr().out == expected == "Ignored unknown kwarg option colour\n"
    assert deep_diff(mine, theirs) is None
