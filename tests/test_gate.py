"""The gated pipeline: a normalizer whose missing steps are Replaces the regex compiler refuses. Stock's regex finds
their matches per text and the native pipeline does the rest; texts whose matches cannot be told so go to stock.
Every call must equal stock's. A refused first Split: tests/test_gate_split.py."""
import numpy as np
import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import Regex, normalizers, pre_tokenizers

import hf_tagtok
from conformance import tokenizer_mode, tokenizer_zoo
from gated_checks import assert_assembled_like_stock, assert_like_stock, ours as _ours, replaced, stock_spans
from hf_tagtok import gate, sample_text
from hf_tagtok.errors import StockDecides

EDGE_TEXTS = ["", " ", "no capitals run here", "fine on its own", "THREE capitals: see", "ＡＢＣ fullwidth",
              "E\u0301E\u0301E\u0301 NFC first",
              "<|special|>XYZ after a token", "XYZ<|special|> before it", "<|lstrip|> a <|rstrip|> b norm NORM word",
              f"holds the sentinel {gate.SENTINEL} here", "\U0001F600\U0001F600 \u4e2d\u4e2d"]
TEXTS = sample_text.multiscript_texts()[::20] + EDGE_TEXTS


def _gated_copy(normalizer):
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    stock.normalizer = normalizer
    return stock, _ours(stock)


def _assert_like_stock(ours, stock, texts):
    assert_like_stock(ours, stock, texts, texts[-len(EDGE_TEXTS):])


def test_gated_zoo_member_encodes_like_stock_natively_with_stocks_matches():
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    ours = _ours(stock)
    assert ours._gated is not None and ours._native is None
    assert [segment.tokens_are_matches for segment in ours._gated.gate._segments] == [True]  # no match is empty
    _assert_like_stock(ours, stock, TEXTS)
    kinds = [isinstance(encoding, tokenizers.Encoding) for encoding in ours.encode_batch(EDGE_TEXTS)]
    # stock's encodings exactly where a split token is in the text: every other text is native, those stock's own
    # Replace changes too, and the one holding the sentinel (the tokens show the matches here)
    held = [any(token in text for token in ("<|special|>", "<|lstrip|>", "<|rstrip|>", "word"))
            for text in EDGE_TEXTS]
    assert kinds == held
    nfc = normalizers.NFC()
    changed = [normalizers.Replace(Regex(tokenizer_zoo.GATED_REPLACE_PATTERN), "ǁ").normalize_str(nfc.normalize_str(text))
               != nfc.normalize_str(text) for text in EDGE_TEXTS]
    assert sum(c and not h for c, h in zip(changed, held)) >= 3


def _mask(ours, texts):
    return ours._gated.gate.given(texts)[0]


def test_a_text_holding_a_token_stock_splits_on_before_normalizing_goes_to_stock():
    # ^ anchors at each stretch stock normalizes on its own: the whole text has no match, its second stretch has
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"^\g<1>(x)"), "Y"))
    texts = ["ab<|special|>xx", "xx ab", "ab xx"]
    assert _mask(ours, texts) == [False, True, True]
    _assert_like_stock(ours, stock, texts)


def test_matches_given_for_one_stretch_do_not_serve_a_second():
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    ours = _ours(stock)
    pipeline = ours._gated.encoder.pipeline
    text = "ABC<|special|>DEF"  # two stretches stock normalizes one by one
    given = (np.array([1, 0, 3], dtype=np.uint32), np.array([0], dtype=np.int64))
    with pytest.raises(StockDecides):
        pipeline.encode([text], given=given)
    assert pipeline.encode(["ABC def"], given=given) is not None


def test_matches_that_do_not_fit_the_text_let_stock_decide():
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    pipeline = _ours(stock)._gated.encoder.pipeline
    for pairs in ([0, 9], [2, 1], [0, 2, 1, 3]):  # past the end, backwards, overlapping
        given = (np.array([len(pairs) // 2, *pairs], dtype=np.uint32), np.array([0], dtype=np.int64))
        with pytest.raises(StockDecides):
            pipeline.encode(["ABCD"], given=given)
    for data in ([2, 0, 1], [], [5]):  # counts running past the data
        with pytest.raises(ValueError):
            pipeline.encode(["ABCD"], given=(np.array(data, dtype=np.uint32), np.array([0], dtype=np.int64)))


SENTINEL_MATCHED = normalizers.Replace(Regex(r"\g<1>?(\x{FDD0})\x{FDD0}*\x{10FFFF}\x{FDD1}"), "Z")


def test_a_text_holding_the_sentinel_goes_to_stock_where_the_sentinel_shows_the_matches(monkeypatch):
    # the match is the sentinel itself: the check's Replace gives the text back unchanged
    monkeypatch.setattr(gate.regex_compiler, "may_match_empty", lambda pattern: True)
    stock, ours = _gated_copy(SENTINEL_MATCHED)
    texts = [f"a{gate.SENTINEL}b", "ab"]
    assert _mask(ours, texts) == [False, True]
    _assert_like_stock(ours, stock, texts)


def test_a_text_holding_the_sentinel_runs_natively_where_the_tokens_are_the_matches():
    stock, ours = _gated_copy(SENTINEL_MATCHED)
    texts = [f"a{gate.SENTINEL}b", "ab"]
    assert _mask(ours, texts) == [True, True]
    assert ours._gated.gate.matches(texts)[0][0] == 1
    _assert_like_stock(ours, stock, texts)


def test_empty_matches_are_matches():
    # an empty match puts the content in where it is (stock panics on the zoo member's normalized added token
    # under this normalizer: a tokenizer without any)
    stock = tokenizer_zoo._small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False),
                                          normalizer=normalizers.Replace(Regex(r"\g<1>(q)|z*"), "-"))
    ours = _ours(stock)
    assert [segment.tokens_are_matches for segment in ours._gated.gate._segments] == [False]  # the sentinel shows them
    texts = ["abc", "", "qq", "zz", "aqqb", "éz"]
    assert _mask(ours, texts) == [True] * len(texts)
    # [start, end) chars of each match, as stock's Replace puts its content: "-a-b-c-", "", "-", "-", "-a-b-"
    found = ours._gated.gate.matches(texts)
    stock_replace = normalizers.Replace(Regex(r"\g<1>(q)|z*"), "-")
    assert [replaced(text, flat[1:], "-") for text, flat in zip(texts, found)] == \
        [stock_replace.normalize_str(text) for text in texts]
    assert any(flat[1 + 2 * k] == flat[2 + 2 * k] for flat in found for k in range(flat[0]))  # empty ones too
    _assert_like_stock(ours, stock, texts)


def test_matches_in_the_text_the_steps_before_make():
    # Prepend and NFKC before the refused Replace change where its matches are; the Lowercase after sees its output
    stock, ours = _gated_copy(normalizers.Sequence([
        normalizers.Prepend("\u2581"), normalizers.NFKC(), normalizers.Replace(Regex(r"\g<1>(\p{Lu})"), "Ǳ"),
        normalizers.Lowercase()]))
    texts = ["ＡＢ cd", "é́ÉÉ x", "AB", "ab", "x ÀÀÀ ﬁ ＡＢＣＤ", ""]
    assert _mask(ours, texts) == [True] * len(texts)
    _assert_like_stock(ours, stock, texts)


def test_truncation_padding_and_pairs_run_natively_with_each_sequences_matches():
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    ours = _ours(stock)
    clean, dirty = "one two six nine ten", "THREE capitals: see"
    for tokenizer in (stock, ours):
        tokenizer.enable_truncation(9, stride=1)
        tokenizer.enable_padding(length=12)
    for batch in ([clean, clean], [clean, dirty], [(clean, clean)], [(clean, dirty)]):
        expected = stock.encode_batch(batch)
        mine = ours.encode_batch(batch)
        assert [tokenizer_mode.encoding_diff(m, e) for m, e in zip(mine, expected)] == [None] * len(batch)
        if not isinstance(batch[0], tuple):
            assert tokenizer_mode.columns_diff(ours.encode_batch_arrays(batch), expected) is None
        assert not isinstance(mine[0], tokenizers.Encoding)
    held = [(clean, "<|special|> THREE")]  # a text the gate sends to stock: the whole call goes to stock
    expected = stock.encode_batch(held)
    assert [tokenizer_mode.encoding_diff(m, e) for m, e in zip(ours.encode_batch(held), expected)] == [None]
    assert isinstance(ours.encode_batch(held)[0], tokenizers.Encoding)


def test_a_lone_surrogate_raises_what_stock_raises():
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    ours = _ours(stock)
    with pytest.raises(Exception) as expected:
        stock.encode_batch(["ok", "bad \udc80"])
    with pytest.raises(type(expected.value)):
        ours.encode_batch(["ok", "bad \udc80"])
    with pytest.raises(type(expected.value)):
        ours.encode_batch_arrays(["ok", "bad \udc80"])


def test_refused_steps_are_checked_one_after_the_other():
    # the second Replace sees what the Lowercase between them makes
    stock, ours = _gated_copy(normalizers.Sequence([normalizers.Replace(Regex(r"\g<1>(a)"), "c"), normalizers.Lowercase(),
                                                     normalizers.Replace(Regex(r"\g<1>(c)"), "d")]))
    texts = ["aa b", "Cc b", "ab cd", "a C c"]
    # per step: the count, then [start, end) chars of that step's input ("aa b", then "c b" for the first text)
    found = ours._gated.gate.matches(texts)
    first = normalizers.Sequence([normalizers.Replace(Regex(r"\g<1>(a)"), "c"), normalizers.Lowercase()])
    assert found == [stock_spans(r"\g<1>(a)", text) + stock_spans(r"\g<1>(c)", first.normalize_str(text))
                     for text in texts]
    assert found[0][0] and found[1][0] == 0 and found[1][1]  # one matches the first step, one only the second
    _assert_like_stock(ours, stock, texts)


def test_report_names_the_step_and_the_gate():
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"\g<1>(a)"), "b"))
    report = ours.acceleration
    assert not report["normalizer"]["native"] and "subexpression call" in report["normalizer"]["reason"]
    assert "stock's regex finds such a Replace's matches" in report["normalizer"]["reason"]
    assert report["model"]["native"] and report["pre_tokenizer"]["native"]
    with pytest.warns(hf_tagtok.FallbackWarning, match="subexpression call"):
        hf_tagtok.Tokenizer.from_str(stock.to_str())


def test_no_gate_when_another_stage_is_not_native():
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"\g<1>(a)"), "b"))
    # a refused Split after another step, whose regex looks past its matches (a boundary: found per piece, the
    # matches differ from those over the text), that drops bytes: not replayed either
    stock.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(),
                                                   pre_tokenizers.Split(Regex(r"\b\g<1>(b)"), "removed")])
    ours = _ours(stock)
    assert ours._gated is None and ours._native is None
    assert not ours.acceleration["model"]["native"]
    _assert_like_stock(ours, stock, ["aa cc", "ab cbb", ""])


def test_a_text_stock_raises_for_goes_to_stock_alone():
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"\g<1>(a)"), "c"))
    texts = ["aa", "bad \udc80", "b"]
    assert _mask(ours, texts) == [True, False, True]


def test_tag_tokenizer_fast_runs_natively_with_stocks_matches(tmp_path):
    from transformers import PreTrainedTokenizerFast

    from hf_tagtok.conformance_cli import OPTION_SETS, compare_call

    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_subcall_replace_gated").save(str(path))
    stock = PreTrainedTokenizerFast(tokenizer_file=str(path), pad_token="<s>")
    tag = hf_tagtok.TagTokenizerFast(tokenizer_file=str(path), pad_token="<s>")
    clean = ["no capitals run here", "fine on its own", "one two six nine ten"]
    for batch in (clean, clean + ["THREE capitals: see"]):
        for options in OPTION_SETS:
            compare_call(stock, tag, (batch,), options)
            compare_call(stock, tag, (batch, batch[::-1]), options)
        assert not isinstance(tag(batch).encodings[0], tokenizers.Encoding)  # native: no stock Encoding
        # a call without offsets encodes again, with the same matches, when an encoding is read
        lean, expected = tag(batch).encodings, stock(batch).encodings
        assert [e.offsets for e in lean] == [e.offsets for e in expected]
        assert [e.ids for e in lean] == [e.ids for e in expected]
        with_truncation = tag(batch, truncation=True, max_length=4).encodings[0]
        assert not isinstance(with_truncation, tokenizers.Encoding)


def test_patched_auto_tokenizer_returns_a_gated_tokenizer_accelerated_with_a_warning(tmp_path):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    from hf_tagtok.conformance_cli import compare_call

    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_subcall_replace_gated").save(str(path))
    PreTrainedTokenizerFast(tokenizer_file=str(path), pad_token="<s>").save_pretrained(tmp_path / "saved")
    hf_tagtok.patch_transformers()
    try:
        with pytest.warns(hf_tagtok.FallbackWarning, match="subexpression call") as caught:
            patched = AutoTokenizer.from_pretrained(tmp_path / "saved")
    finally:
        hf_tagtok.unpatch_transformers()
    assert isinstance(patched, hf_tagtok.TagTokenizerFast)
    assert [w.filename for w in caught] == [__file__]
    assert "stock's regex finds such a Replace's matches" in patched.acceleration["normalizer"]["reason"]
    compare_call(AutoTokenizer.from_pretrained(tmp_path / "saved"), patched, (EDGE_TEXTS,), {})


def test_matches_are_the_same_whether_counted_first_or_not(monkeypatch):
    # counting first is for the sentinel's tokenizer (a Split keeping the matches costs the same either way)
    monkeypatch.setattr(gate.regex_compiler, "may_match_empty", lambda pattern: True)
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    the_gate = _ours(stock)._gated.gate
    assert [segment.tokens_are_matches for segment in the_gate._segments] == [False]
    texts = TEXTS + ["ABCDEF", "xABCy", "é́ABC"]
    the_gate._matching = 0.0  # few texts lately held a match: stock's call without offsets picks those that do
    counted = the_gate.matches(texts)
    the_gate._matching = 1.0  # most did: every text goes to the call with offsets
    assert the_gate.matches(texts) == counted
    assert sum(1 for flat in counted if flat is not None and flat != [0]) >= 3


@pytest.mark.parametrize("count_first", [False, True])  # the sentinel's tokenizer counting first or not
def test_matches_are_the_same_read_from_either_marking_tokenizer(monkeypatch, count_first):
    # no match of the zoo member's regex is empty: stock's Split keeping the matches gives them as its tokens, and
    # a Replace of them with the sentinel shows the same ones
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    texts = [text for text in TEXTS if gate.SENTINEL not in text] + ["ABCDEF", "xABCy", "é́ABC"]

    def segments_and_matches():
        the_gate = _ours(stock)._gated.gate
        the_gate._matching = 0.0 if count_first else 1.0
        return [segment.tokens_are_matches for segment in the_gate._segments], the_gate.matches(texts)

    by_tokens = segments_and_matches()
    monkeypatch.setattr(gate.regex_compiler, "may_match_empty", lambda pattern: True)
    by_sentinels = segments_and_matches()
    assert (by_tokens[0], by_sentinels[0]) == ([True], [False])
    assert by_tokens[1] == by_sentinels[1]
    assert sum(1 for flat in by_tokens[1] if flat is not None and flat != [0]) >= 3


GATE_FRAGMENTS = ["A", "B", "C", "ABC", "abc", "q", "qq", "z", "zz", " ", "  ", "\n", "é", "E\u0301", "Ｂ", "ǁ", "ß",
                  "<|special|>", "word", "\u4e2d", "\U0001F600", ".", "1"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(GATE_FRAGMENTS), max_size=10).map("".join), min_size=1, max_size=6),
       pattern=st.sampled_from([r"\g<1>(\p{Lu})\p{Lu}", r"\g<1>(q)|z*", r"(?<=B)\g<1>(\p{L})", r"\X\g<0>?"]))
def test_fuzzed_texts_under_refused_replaces_match_stock(texts, pattern):
    # a tokenizer without normalized added tokens: stock panics normalizing those under an empty-matching Replace
    normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(pattern), "ǁ"),
                                       normalizers.Lowercase()])
    stock = tokenizer_zoo._small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False), normalizer=normalizer)
    stock.add_special_tokens(["<|special|>"])
    ours = _ours(stock)
    assert ours._gated is not None
    try:
        expected = stock.encode_batch(texts)
    except BaseException as error:  # stock's own exception (a panic on an empty match): ours raises it too
        with pytest.raises(type(error)):
            ours.encode_batch(texts)
        return
    mine = ours.encode_batch(texts)
    assert [tokenizer_mode.encoding_diff(m, e) for m, e in zip(mine, expected)] == [None] * len(texts)
    assert tokenizer_mode.columns_diff(ours.encode_batch_arrays(texts), expected) is None
    assert_assembled_like_stock(ours, stock, texts)
