"""The gated pipeline: a normalizer whose one missing step is a Replace the regex compiler refuses. Texts that
Replace leaves alone are encoded natively without it, the others by stock; every call must equal stock's."""
import warnings

import numpy as np
import pytest
import tokenizers
from tokenizers import Regex, normalizers, pre_tokenizers

import hf_tagtok
from conformance import tokenizer_mode, tokenizer_zoo
from hf_tagtok import gate, sample_text

EDGE_TEXTS = ["", " ", "no capitals run here", "fine on its own", "THREE capitals: see", "ＡＢＣ fullwidth",
              "E\u0301E\u0301E\u0301 NFC first",
              "<|special|>XYZ after a token", "XYZ<|special|> before it", "<|lstrip|> a <|rstrip|> b norm NORM word",
              f"holds the sentinel {gate.SENTINEL} here", "\U0001F600\U0001F600 \u4e2d\u4e2d"]
TEXTS = sample_text.multiscript_texts()[::20] + EDGE_TEXTS


def _ours(stock):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hf_tagtok.FallbackWarning)
        return hf_tagtok.Tokenizer.from_str(stock.to_str())


def _gated_copy(normalizer):
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    stock.normalizer = normalizer
    return stock, _ours(stock)


def _assert_like_stock(ours, stock, texts):
    for add_special_tokens in (True, False):
        expected = stock.encode_batch(texts, add_special_tokens=add_special_tokens)
        mine = ours.encode_batch(texts, add_special_tokens=add_special_tokens)
        assert [tokenizer_mode.encoding_diff(m, e) for m, e in zip(mine, expected)] == [None] * len(texts)
        arrays = ours.encode_batch_arrays(texts, add_special_tokens=add_special_tokens)
        assert tokenizer_mode.columns_diff(arrays, expected) is None
        lean = ours.encode_batch_arrays(texts, add_special_tokens=add_special_tokens, offsets=False)
        assert lean.offsets is None and np.array_equal(lean.ids, arrays.ids)
        assert np.array_equal(lean.lengths, arrays.lengths) and np.array_equal(lean.type_ids, arrays.type_ids)
        fast = ours.encode_batch_fast(texts, add_special_tokens=add_special_tokens)
        expected_fast = stock.encode_batch_fast(texts, add_special_tokens=add_special_tokens)
        assert [e.ids for e in fast] == [e.ids for e in expected_fast]
    for text in texts[-len(EDGE_TEXTS):]:
        assert tokenizer_mode.encoding_diff(ours.encode(text), stock.encode(text)) is None


def test_gated_zoo_member_encodes_like_stock_natively_where_the_replace_does_not_match():
    stock = tokenizer_zoo.load("small_subcall_replace_gated")
    ours = _ours(stock)
    assert ours._gated is not None and ours._native is None
    _assert_like_stock(ours, stock, TEXTS)
    kinds = [isinstance(encoding, tokenizers.Encoding) for encoding in ours.encode_batch(EDGE_TEXTS)]
    # stock's encodings exactly where stock's own Replace changes the NFC text, or a split token or the sentinel
    # is in it
    changed = [normalizers.Replace(Regex(tokenizer_zoo.GATED_REPLACE_PATTERN), "ǁ").normalize_str(normalizers.NFC().normalize_str(text))
               != normalizers.NFC().normalize_str(text) for text in EDGE_TEXTS]
    held = [any(token in text for token in ("<|special|>", "<|lstrip|>", "<|rstrip|>", "word", gate.SENTINEL))
            for text in EDGE_TEXTS]
    assert kinds == [c or h for c, h in zip(changed, held)]
    assert kinds.count(False) >= 3 and kinds.count(True) >= 3


def test_a_match_in_a_stretch_between_added_tokens_goes_to_stock():
    # ^ anchors at each stretch stock normalizes on its own: the whole text has no match, its second stretch has
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"^(x)\g<1>"), "Y"))
    texts = ["ab<|special|>xx", "xx ab", "ab xx"]
    assert ours._gated.gate.mask(texts) == [False, False, True]
    _assert_like_stock(ours, stock, texts)


def test_a_text_holding_the_sentinel_that_the_regex_matches_goes_to_stock():
    # the match is the sentinel itself: the gate's Replace gives the text back unchanged
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"(\x{FDD0})\g<1>?\x{FDD0}*\x{10FFFF}\x{FDD1}"), "Z"))
    texts = [f"a{gate.SENTINEL}b", "ab"]
    assert ours._gated.gate.mask(texts) == [False, True]
    _assert_like_stock(ours, stock, texts)


def test_empty_matches_are_matches():
    # (stock panics on the zoo member's normalized added token under this normalizer: a tokenizer without any)
    stock = tokenizer_zoo._small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False),
                                          normalizer=normalizers.Replace(Regex(r"(q)\g<1>|z*"), "-"))
    ours = _ours(stock)
    texts = ["abc", "", "qq", "zz"]
    assert ours._gated.gate.mask(texts) == [False, True, False, False]
    _assert_like_stock(ours, stock, texts)


def test_truncation_padding_and_pairs_run_native_only_when_every_text_passes():
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
        native = not isinstance(mine[0], tokenizers.Encoding)
        assert native == (dirty not in str(batch))


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
    stock, ours = _gated_copy(normalizers.Sequence([normalizers.Replace(Regex(r"(a)\g<1>"), "c"), normalizers.Lowercase(),
                                                     normalizers.Replace(Regex(r"(c)\g<1>"), "d")]))
    texts = ["aa b", "Cc b", "ab cd", "a C c"]
    assert ours._gated.gate.mask(texts) == [False, False, True, True]
    _assert_like_stock(ours, stock, texts)


def test_report_names_the_step_and_the_gate():
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"(a)\g<1>"), "b"))
    report = ours.acceleration
    assert not report["normalizer"]["native"] and "subexpression call" in report["normalizer"]["reason"]
    assert "encoded natively without that step" in report["normalizer"]["reason"]
    assert report["model"]["native"] and report["pre_tokenizer"]["native"]
    with pytest.warns(hf_tagtok.FallbackWarning, match="subexpression call"):
        hf_tagtok.Tokenizer.from_str(stock.to_str())


def test_no_gate_when_another_stage_is_not_native():
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"(a)\g<1>"), "b"))
    stock.pre_tokenizer = pre_tokenizers.Split(Regex(r"(b)\g<1>"), "removed")  # drops bytes: not replayed either
    ours = _ours(stock)
    assert ours._gated is None and ours._native is None
    assert not ours.acceleration["model"]["native"]
    _assert_like_stock(ours, stock, ["aa cc", "ab cbb", ""])


def test_while_most_texts_fail_a_call_checks_only_a_sample():
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"(a)\g<1>"), "b"))
    mask = ours._gated.gate.mask
    failing, passing = ["aa x"] * 100, ["ab x"] * 100
    assert mask(failing) == [False] * 100
    assert mask(passing) == [True] * gate.SAMPLE + [False] * (100 - gate.SAMPLE)
    for _ in range(3):  # the passing samples bring the recent rate back over half
        mask(passing)
    assert mask(passing) == [True] * 100
    _assert_like_stock(ours, stock, failing[:30] + passing[:30])



def test_while_most_texts_fail_a_text_is_checked_by_its_start_first_and_whole_after():
    # While most texts fail, a text's first PROBE chars are checked before the whole text: a match past them
    # still sends the text to stock, and so does a match that only the cut makes (a lookahead meeting the cut),
    # which costs speed alone. While most pass, the text is checked whole at once.
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"(a)\g<1>(?!b)"), "c"))
    the_gate = ours._gated.gate
    filler = "x " * gate.PROBE
    late, made_by_the_cut, clean = filler + "aa x", "x" * (gate.PROBE - 2) + "aab", filler + "aab"
    assert [the_gate.passes(text) for text in (late, made_by_the_cut, clean)] == [False, True, True]
    the_gate.mask(["aa"] * 8)
    assert [the_gate.passes(text) for text in (late, made_by_the_cut, clean)] == [False, False, True]
    _assert_like_stock(ours, stock, [late, made_by_the_cut, clean, "aa", "aab"])


def test_a_tag_tokenizer_fast_call_stops_at_its_first_failing_text_and_counts_it():
    stock, ours = _gated_copy(normalizers.Replace(Regex(r"(a)\g<1>"), "c"))
    the_gate = ours._gated.gate
    assert not the_gate.all_pass(["aa"] + ["x"] * 3)
    assert (the_gate._passed, the_gate._checked) == (0, 1)
    assert the_gate.all_pass(["x", "ab"]) and (the_gate._passed, the_gate._checked) == (2, 2.5)


def test_tag_tokenizer_fast_runs_natively_when_every_text_of_a_call_passes(tmp_path):
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
        native = not isinstance(tag(batch).encodings[0], tokenizers.Encoding)
        assert native == (batch == clean)


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
    assert "encoded natively without that step" in patched.acceleration["normalizer"]["reason"]
    compare_call(AutoTokenizer.from_pretrained(tmp_path / "saved"), patched, (EDGE_TEXTS,), {})
