"""A refused Split after other pre-tokenizer steps: stock runs it on each piece those steps cut, but when its regex
looks at no context (hf_tagtok.regex_compiler.looks_at_no_context) and no match found over the whole text crosses
a piece, the pieces hold the same matches. The gate finds them over the text, the engine checks the crossing, and a
text where one crosses goes to stock alone. Every call must equal stock's (every behavior, `TagTokenizerFast` and a
Llama-3 copy: tests/test_gate_split.py, at both positions)."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import Regex, pre_tokenizers

from gated_checks import (assert_assembled_like_stock, assert_like_stock, byte_bpe_after, native_kinds, ours,
                          stock_spans)
from hf_tagtok import sample_text
from hf_tagtok.regex_compiler import looks_at_no_context

TWO_LOWER = r"\g<1>(\p{Ll})"  # two lowercase letters (a call of the group before it stands: refused)
RARE_LOWER = "\ua757"  # a lowercase letter the built-in sample does not hold
BEHAVIORS = ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]
EDGE_TEXTS = ["", " ", "aa", "book keeper's committee 1984", "A b C d 1 2", "ＡＡ ａａ fullwidth", "E\u0301e\u0301",
              "<|special|>ee after a token", "ee norm NORM", "\U0001F600\U0001F600 \u4e2d\u4e2d ss ß", "aa!!bb..cc"]
TEXTS = sample_text.multiscript_texts()[::20] + EDGE_TEXTS
# Patterns the scanner finds free of context, and patterns it refuses, each with a text and a cut where stock's
# matches in the two stretches alone differ from those over the text although none of those crosses the cut.
CONTEXT_FREE = [TWO_LOWER, r"\g<1>(q)z", r"\g<1>(\w)", r"\g<1>?(a|ab)(c|bcd)", r"(?i:x)\g<0>?y", r"(?<n>\d)\k<n>",
                r"[^\s]{3}", r"\g<1>+?(\p{L})"]
CONTEXT = [(r"\b\g<1>(b)", "abb", 1), (r"(?<=a)\g<1>(b)", "abb", 1), (r"^\g<1>(b)", "abb", 1),
           (r"\g<1>(b)$", "bba", 2), (r"\g<1>(b)(?=a)", "bba", 2), (r"(?>abc|a)b", "abc", 2),
           (r"(?:abc|a)?+b", "abc", 2)]


def _split_after(steps, split):
    """A byte-level BPE whose pre-tokenizer is `steps`, then `split`, then ByteLevel (gated_checks.byte_bpe_after)."""
    return byte_bpe_after(pre_tokenizers.Sequence([*steps, split]))


def _pairs(flat):
    return list(zip(flat[1::2], flat[2::2]))


def _matches_in_stretches(pattern, text, cut):
    """(stock's matches over the text, over its two stretches at `cut` alone (in text positions))."""
    whole = _pairs(stock_spans(pattern, text))
    parts = _pairs(stock_spans(pattern, text[:cut])) + [(s + cut, e + cut) for s, e in
                                                         _pairs(stock_spans(pattern, text[cut:]))]
    return whole, parts


@settings(max_examples=200, deadline=None)
@given(pattern=st.sampled_from(CONTEXT_FREE), text=st.text(alphabet="abcdqxyzXY 12\u00e9\u4e2d", max_size=14),
       cut=st.integers(0, 14))
def test_a_context_free_pattern_finds_the_same_matches_in_a_stretch_alone(pattern, text, cut):
    assert looks_at_no_context(pattern)
    cut = min(cut, len(text))
    whole, parts = _matches_in_stretches(pattern, text, cut)
    if all(end <= cut or start >= cut for start, end in whole):
        assert parts == whole


@pytest.mark.parametrize("pattern, text, cut", CONTEXT)
def test_a_pattern_that_looks_at_context_is_refused(pattern, text, cut):
    whole, parts = _matches_in_stretches(pattern, text, cut)
    assert all(end <= cut or start >= cut for start, end in whole) and parts != whole  # stock shows the difference
    assert not looks_at_no_context(pattern)


def test_a_text_whose_match_crosses_a_piece_goes_to_stock_alone():
    stock = _split_after([pre_tokenizers.Split(RARE_LOWER, "isolated")],
                         pre_tokenizers.Split(Regex(TWO_LOWER), "removed"))
    mine = ours(stock)
    assert mine._gated is not None
    texts = [f"a{RARE_LOWER}b cc", "dd ee", RARE_LOWER * 2, f"x{RARE_LOWER}", f"{RARE_LOWER} q"]
    cuts = [{at + k for at, char in enumerate(text) if char == RARE_LOWER for k in (0, 1)} for text in texts]
    crossing = [any(start < cut < end for start, end in _pairs(stock_spans(TWO_LOWER, text)) for cut in text_cuts)
                for text, text_cuts in zip(texts, cuts)]
    assert crossing == [True, False, True, True, False]
    assert native_kinds(mine, texts) == [not crosses for crosses in crossing]
    assert_like_stock(mine, stock, texts, texts)
    assert_assembled_like_stock(mine, stock, texts)


def test_a_split_whose_matches_cross_the_sample_pieces_is_not_gated():
    stock = _split_after([pre_tokenizers.Digits(individual_digits=True)],
                         pre_tokenizers.Split(Regex(r"\g<1>(\d)"), "removed"))
    mine = ours(stock)
    assert mine._gated is None
    assert "cross the pieces" in mine.acceleration["pre_tokenizer"]["reason"]
    assert_like_stock(mine, stock, EDGE_TEXTS)


@pytest.mark.parametrize("pattern", [r"\b\g<1>(b)", r"\g<1>(q)|z*"])
def test_a_split_looking_at_context_or_matching_empty_is_not_gated(pattern):
    stock = _split_after([pre_tokenizers.Digits()], pre_tokenizers.Split(Regex(pattern), "isolated"))
    mine = ours(stock)
    assert mine._gated is None
    assert_like_stock(mine, stock, ["abb bb", "qq zz", "", "b1bb"])


def test_a_split_that_cannot_match_empty_gives_no_empty_match():
    # the nullable probe's premise, seen through stock's own matches (the gate lists empty ones too)
    for pattern in (TWO_LOWER, r"\g<1>(q)z", r"\g<1>+?(\p{L})"):
        stock = _split_after([pre_tokenizers.Digits()], pre_tokenizers.Split(Regex(pattern), "isolated"))
        found = ours(stock)._gated.gate.matches(EDGE_TEXTS + ["qqz qqzqqz"])
        assert any(flat and flat[0] for flat in found)
        assert all(flat[1 + 2 * k] < flat[2 + 2 * k] for flat in found if flat for k in range(flat[0]))


FRAGMENTS = ["a", "aa", "B", "bb", "q", "qq", "z", "zz", " ", "  ", "\n", "é", "e\u0301", "ＡＡ", "ß", "ǅ",
             RARE_LOWER, "<|special|>", "norm", "\u4e2d", "\U0001F600", ".", "11", "2"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(FRAGMENTS), max_size=10).map("".join), min_size=1, max_size=6),
       pattern=st.sampled_from([TWO_LOWER, r"\g<1>(q)", r"\g<1>+?(\p{L})", r"\g<1>(a|\p{Ll}\p{Ll})"]),
       before=st.sampled_from([[pre_tokenizers.Digits()], [pre_tokenizers.Split(RARE_LOWER, "removed")],
                               [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]]),
       behavior=st.sampled_from(BEHAVIORS), invert=st.booleans())
def test_fuzzed_texts_under_a_refused_later_split_match_stock(texts, pattern, before, behavior, invert):
    stock = _split_after(before, pre_tokenizers.Split(Regex(pattern), behavior, invert=invert))
    mine = ours(stock)
    assert mine._gated is not None
    assert_like_stock(mine, stock, texts)
    assert_assembled_like_stock(mine, stock, texts)
