"""Reading a BPE model's merges straight from the configuration's JSON text, against json.loads and stock.

`hf_tagtok._native.member_span` finds the merges without building them and `pair_ids_in` resolves them
to ids where they lie; the expectations here come from the json module and from stock tokenizers."""
import json

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import hf_tagtok
from hf_tagtok import sample_text

native = pytest.importorskip("hf_tagtok._native")

PATH = ("model", "merges")


def _reference_ids(vocab, merges, strip=0):
    """The merges' (left, right, joined) ids from json.loads' lists, the way stock names the joined token
    (stock's JSON parser refuses lone surrogates; here they count as 3 bytes, as in UTF-8's own range)."""
    rows = []
    for merge in merges:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        joined = left + right.encode("utf-8", "surrogatepass")[strip:].decode("utf-8", "surrogatepass")
        if left in vocab and right in vocab and joined in vocab:
            rows.append([vocab[left], vocab[right], vocab[joined]])
    return rows


def _ids_from_text(vocab, text, strip=0):
    return native.pair_ids_in(vocab, text, *native.member_span(text, PATH), strip).tolist()


def _config(merges, vocab, **extra):
    return {"version": "1.0", **extra, "model": {"type": "BPE", "vocab": vocab, "merges": merges}}


NAMES = ["a", "b", "ab", 'q"', "\\", 'q"\\', "é", "😀", "\n", "😀\n", "[", "]", "[]", "{", "}{", ",", ":", "\ud83d",
         "\ud83d\ud83d", "\u2028", "\x00", "/", "a/"]
VOCAB = {name: index for index, name in enumerate(NAMES)}
MERGES = [["a", "b"], ['q"', "\\"], ["😀", "\n"], ["[", "]"], ["}", "{"], ["\ud83d", "\ud83d"], ["a", "/"],
          ["x", "y"], ["a", "zz"]]


# The ways a tokenizer.json is written: compact, raw UTF-8, indented, and odd separators.
EVERY_DUMP = pytest.mark.parametrize("dump", [
    lambda config: json.dumps(config),
    lambda config: json.dumps(config, ensure_ascii=False),
    lambda config: json.dumps(config, indent=2),
    lambda config: json.dumps(config, indent="\t", ensure_ascii=False, separators=(" ,\r\n", " :  ")),
], ids=["compact", "raw", "indented", "odd-spacing"])


@EVERY_DUMP
def test_merges_are_found_and_read_as_json_loads_reads_them(dump):
    text = dump(_config(MERGES, VOCAB, decoy={"model": {"merges": [["b", "a"]]}, "merges": [["a", "a"]]}))
    start, end = native.member_span(text, PATH)
    assert json.loads(text[start:end]) == json.loads(text)["model"]["merges"]
    spliced = json.loads(text[:start] + "[]" + text[end:])
    assert spliced == {**json.loads(text), "model": {**json.loads(text)["model"], "merges": []}}
    assert _ids_from_text(VOCAB, text) == _reference_ids(VOCAB, MERGES)


def test_legacy_string_merges_need_exactly_one_space():
    text = json.dumps(_config(["a b", "😀 \n", "\ud83d \ud83d"], VOCAB))
    assert _ids_from_text(VOCAB, text) == _reference_ids(VOCAB, ["a b", "😀 \n", "\ud83d \ud83d"])
    for bad in (["ab"], ["a  b"], ["a b c"], [["a"]], [["a", "b", "c"]], [1], {"a": "b"}):
        with pytest.raises(ValueError):
            _ids_from_text(VOCAB, json.dumps(_config(bad, VOCAB)))


def test_the_last_member_of_a_name_wins_as_in_json_loads():
    first, last = json.dumps([["b", "a"]]), json.dumps([["a", "b"]])
    text = f'{{"model": {{"merges": {first}, "type": "BPE", "merges": {last}}}}}'
    assert _ids_from_text({"a": 0, "b": 1, "ab": 2, "ba": 3}, text) == [[0, 1, 2]]
    text = f'{{"model": {{"merges": {first}}}, "model": {{"type": "BPE"}}}}'
    assert native.member_span(text, PATH) is None
    assert native.member_span(json.dumps({"model": []}), PATH) is None


def test_strip_drops_the_prefix_bytes_of_the_right_name():
    vocab = {"a": 0, "##b": 1, "ab": 2, "##é": 3, "aé": 4}
    merges = [["a", "##b"], ["a", "##é"]]
    assert _ids_from_text(vocab, json.dumps(_config(merges, vocab)), strip=2) == _reference_ids(vocab, merges, 2)


@pytest.mark.parametrize("text", ['{"model": {"merges": [["a", "b"]', '{"model": {"merges": [["a\\', '{"model" 1}',
                                  '{"model": {"merges": [["a", "b"] ["a", "b"]]}}'])
def test_malformed_text_raises_value_error(text):
    with pytest.raises(ValueError):
        span = native.member_span(text, PATH)
        native.pair_ids_in(VOCAB, text, *(span or (0, len(text))))


_names = st.text(st.characters(codec=None, exclude_categories=()), min_size=1, max_size=4)


@settings(max_examples=300)
@given(st.lists(st.tuples(_names, _names), min_size=1, max_size=12), st.booleans(), st.sampled_from([None, 1]))
def test_fuzzed_names_read_as_json_loads_reads_them(pairs, ascii_only, indent):
    vocab = {}
    for left, right in pairs:
        for name in (left, right, left + right):
            vocab.setdefault(name, len(vocab))
    merges = [list(pair) for pair in pairs]
    text = json.dumps(_config(merges, vocab), ensure_ascii=ascii_only, indent=indent)
    assert _ids_from_text(vocab, text) == _reference_ids(vocab, merges)


def test_a_pretty_legacy_config_loads_and_encodes_like_stock():
    stock = tokenizers.Tokenizer.from_file(str(sample_text.default_tokenizer_json()))
    config = json.loads(stock.to_str())
    config["model"]["merges"] = [" ".join(pair) for pair in config["model"]["merges"]]
    text = json.dumps(config, indent=2, ensure_ascii=True)
    ours, reference = hf_tagtok.Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    assert ours.acceleration["model"]["native"]
    texts = sample_text.multiscript_texts()[::11]
    assert [e.ids for e in ours.encode_batch(texts)] == [e.ids for e in reference.encode_batch(texts)]


def _rendered_bytes(name, byte_of_char):
    """A byte-level name's bytes by stock's alphabet, or None when a char lies outside it."""
    return bytes(byte_of_char[char] for char in name) if all(char in byte_of_char for char in name) else None


def test_token_bytes_of_a_real_byte_level_vocabulary_follow_stocks_alphabet():
    from conformance.stock_alphabet import stock_byte_of_char

    vocab = json.loads(tokenizers.Tokenizer.from_file(str(sample_text.default_tokenizer_json())).to_str())["model"]["vocab"]
    expected = [None] * (max(vocab.values()) + 1)
    for name, token_id in vocab.items():
        expected[token_id] = _rendered_bytes(name, stock_byte_of_char())
    assert native.token_bytes(vocab, True) == expected


@settings(max_examples=300)
@given(st.dictionaries(_names, st.integers(0, 40), max_size=12), st.booleans())
def test_fuzzed_names_give_utf8_or_alphabet_bytes(vocab, byte_level):
    from conformance.stock_alphabet import stock_byte_of_char

    def reference(name):
        if byte_level:
            return _rendered_bytes(name, stock_byte_of_char())
        try:
            return name.encode()
        except UnicodeEncodeError:  # a lone surrogate
            return None

    expected = [None] * (max(vocab.values(), default=-1) + 1)
    for name, token_id in vocab.items():  # a later name with the same id wins, as in the dict's order
        expected[token_id] = reference(name)
    assert native.token_bytes(vocab, byte_level) == expected


def _vocab_span(text):
    return native.member_spans(text, ("model",), ("vocab", "merges"))["vocab"]


@EVERY_DUMP
def test_vocab_is_read_as_json_loads_reads_it_and_resolves_the_merges(dump):
    text = dump(_config(MERGES, VOCAB))
    spans = native.member_spans(text, ("model",), ("vocab", "merges"))
    assert spans["merges"] == native.member_span(text, PATH)
    names = native.vocab_names(text, *spans["vocab"])
    assert list(names.vocab.items()) == list(json.loads(text)["model"]["vocab"].items())
    assert native.pair_ids_in(names, text, *spans["merges"]).tolist() == _reference_ids(VOCAB, MERGES)


@pytest.mark.parametrize("vocab", ['{"a": 1, "a": 2}', '{"a": 1.0}', '{"a": 1e2}', '{"a": -1}', '{"a": 01}',
                                   '{"a": "1"}', '{"a": 1,}', '{"a": 4294967295}', '{"a": 99999999999}',
                                   '{"a\x01": 1}', '{"a\\x": 1}', '{"a": [1]}', '[["a", 1.0]]', '{"a": 1} 2'])
def test_a_vocab_the_fast_reader_does_not_take_is_left_to_json_loads(vocab):
    text = '{"model": {"vocab": ' + vocab + "}}"
    start = text.index(vocab)
    assert native.vocab_names(text, start, start + len(vocab)) is None


@settings(max_examples=300)
@given(st.dictionaries(_names, st.integers(0, 2**32 - 2), max_size=12), st.booleans(), st.sampled_from([None, 1]))
def test_fuzzed_vocab_reads_as_json_loads_reads_it(vocab, ascii_only, indent):
    text = json.dumps(_config([], vocab), ensure_ascii=ascii_only, indent=indent)
    names = native.vocab_names(text, *_vocab_span(text))
    assert list(names.vocab.items()) == list(vocab.items())
    merges = [[left, right] for left in list(vocab)[:3] for right in list(vocab)[:3]]
    text = json.dumps(_config(merges, vocab), ensure_ascii=ascii_only, indent=indent)
    names = native.vocab_names(text, *_vocab_span(text))
    assert (native.pair_ids_in(names, text, *native.member_span(text, PATH)).tolist()
            == native.pair_ids_in(vocab, text, *native.member_span(text, PATH)).tolist())


@pytest.mark.parametrize("vocab", [VOCAB, {"a": 0, "b": 0.5}])
def test_load_config_equals_json_loads(vocab):
    from hf_tagtok import models

    text = json.dumps(_config(MERGES, vocab, decoy={"model": {"vocab": {"x": 1}}}), indent=1)
    config, reference = models.load_config(text), json.loads(text)
    merges = config["model"]["merges"]
    assert json.loads(merges.text[slice(*merges.span)]) == reference["model"]["merges"]
    config["model"]["merges"] = reference["model"]["merges"]
    assert json.dumps(config) == json.dumps(reference)


@settings(max_examples=200)
@given(st.lists(st.sampled_from([["a", "b"], ["b", "a"], ["a", "a"], ["ab", "a"], ["a", "ba"], ["x", "a"]]),
                max_size=30))
def test_last_wins_keeps_the_last_row_of_a_repeated_pair_as_stocks_merge_map_does(merges):
    vocab = {"a": 0, "b": 1, "ab": 2, "ba": 3, "aa": 4, "aba": 5}
    rows = _reference_ids(vocab, merges)
    last = {}
    for rank, row in enumerate(rows):  # stock: map (left, right) -> (rank, merged), filled in order
        last[row[0], row[1]] = rank
    expected = [row for rank, row in enumerate(rows) if last[row[0], row[1]] == rank]
    text = json.dumps(_config(merges, vocab))
    assert native.pair_ids_in(vocab, text, *native.member_span(text, PATH), last_wins=True).tolist() == expected
