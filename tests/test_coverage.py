"""Native coverage of added-token flags, whole-string normalizers and BPE affixes, against stock.

single_word (with lstrip/rstrip), normalized=True added tokens under Lowercase / NFKC / BertNormalizer,
Strip / Prepend / Replace in Sequences with the per-char normalizers, and BPE continuing_subword_prefix /
end_of_word_suffix at char and byte level: each small zoo tokenizer must run the native pipeline for
every stage, and every field must equal stock's, on the corpus, edge cases and fuzzed texts built
from the added-token strings, affixes, whitespace runs, combining marks and several scripts.
"""
import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import AddedToken, Regex, models, normalizers, pre_tokenizers

import hf_tagtok
from conformance import tokenizer_mode, tokenizer_zoo
from hf_tagtok import sample_text

pytest.importorskip("hf_tagtok._native")

NAMES = ["small_single_word_bytelevel", "small_normalized_added_lowercase", "small_normalized_added_nfkc_metaspace",
         "small_normalized_added_bert", "small_prepend_replace_no_pretokenizer", "small_strip_replace_sequence",
         "small_regex_replace_sequence", "small_bpe_prefix_suffix_unk", "small_bpe_suffix_bytelevel",
         "small_bpe_prefix_bytelevel", "small_added_rstrip_overlap"]
PIPELINE_STAGES = ("added_tokens", "normalizer", "pre_tokenizer", "model", "post_processor")

FRAGMENTS = ["word", "<sw>", "<l>", "<r>", "<lr>", "in", "HeLLo", "hello", "ＮＯＲＭ", "norm", "Ofﬁce", "office",
             "<raw>", "<RawStrip>", "é", "e\u0301", "[MASK]", "``", "the", "##", "</w>", "\u2581", "<r>", " x", " z",
             "  y", " ", "  ", "\t",
             "\n", "\u3000", "\u00a0", "a", "x", "Z", "_", "1", "日本", "Привет", "مرحبا", "\u0301", "\u200d", "😀",
             ".", ",", "'"]
TEXTS = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)
EDGE_CASES = ["", " ", "  lead and trail  ", "word words sword word <sw>x <sw> <l> x<l>  <r>  y <lr>\t<lr>",
              "in inside in, (in) in_ in\u0301", "HeLLo hello HELLO ＮＯＲＭ norm Office Ofﬁce OFFICE é É e\u0301",
              "<raw> <RawStrip>  x  <RawStrip>", " [MASK]  [MASK]x", "``quoted'' text  ", "the them the, thé",
              "a<r>  xb", "q<r> z z b", "<r>     x", "é<r>\u3000 é   y"]


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    stock = tokenizer_zoo.load(request.param)
    return stock, hf_tagtok.Tokenizer.from_hf(stock)


def test_every_stage_runs_natively(pair):
    _, ours = pair
    report = ours.acceleration
    assert {stage: report[stage]["native"] for stage in PIPELINE_STAGES} == dict.fromkeys(PIPELINE_STAGES, True)


def test_corpus_and_edge_cases_match_stock(pair):
    stock, ours = pair
    texts = sample_text.multiscript_texts()[::9] + EDGE_CASES
    assert tokenizer_mode.diff_tokenizer(stock, texts, "plain", ours=ours) == []
    for add in (True, False):
        expected = stock.encode_batch(EDGE_CASES, add_special_tokens=add)
        got = ours.encode_batch(EDGE_CASES, add_special_tokens=add)
        assert [tokenizer_mode.encoding_diff(g, e) for g, e in zip(got, expected)] == [None] * len(EDGE_CASES)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXTS, min_size=1, max_size=6))
def test_fuzzed_texts_match_stock(pair, texts):
    stock, ours = pair
    assert tokenizer_mode.diff_tokenizer(stock, texts, "plain", ours=ours) == []


def _char_bpe(**options):
    vocab = {"<unk>": 0, "a": 1, "##a": 2, "b": 3, "##b": 4, " ": 5}
    vocab.update({f"<0x{byte:02X}>": 6 + byte for byte in range(256)})
    tokenizer = tokenizers.Tokenizer(models.BPE(vocab, [], **options))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


def _stays_on_stock():
    """(tokenizer, stage, reason fragment) for configurations that must report why they are not native."""
    regex = _char_bpe()
    regex.normalizer = normalizers.Sequence([normalizers.Lowercase(), normalizers.Replace(Regex(r"(?<=a)\g<1>(a)[bc]"), "b")])
    stripping = _char_bpe()
    stripping.normalizer = normalizers.Lowercase()
    stripping.add_tokens([AddedToken("AB", normalized=True, lstrip=True)])
    overlapping = _char_bpe()  # " b" could strip back past its own end inside the rstrip (stock panics there)
    overlapping.add_tokens([AddedToken("<r>", normalized=False, rstrip=True),
                            AddedToken(" b", normalized=False, lstrip=True)])
    vocab = dict(_char_bpe().get_vocab(with_added_tokens=False), B=300)  # "B": a model token that lowercases
    relabelled = tokenizers.Tokenizer(models.BPE(vocab, []))
    relabelled.pre_tokenizer, relabelled.normalizer = pre_tokenizers.Whitespace(), normalizers.Lowercase()
    relabelled.add_tokens([AddedToken("B", normalized=True)])
    twins = _char_bpe()  # stock's pick between the two depends on hash order, which differs between copies
    twins.normalizer = normalizers.Lowercase()
    twins.add_tokens([AddedToken("BA", normalized=True), AddedToken("ba", normalized=True)])
    emitted = _char_bpe()  # a stripping token is named by its match, but the model also outputs "a"
    emitted.add_tokens([AddedToken("a", normalized=False, rstrip=True)])
    merged = tokenizers.Tokenizer(models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))  # a merge outputs "ab"
    merged.pre_tokenizer = pre_tokenizers.Whitespace()
    merged.add_tokens([AddedToken("ab", normalized=False, rstrip=True)])
    return [(_char_bpe(continuing_subword_prefix="##", byte_fallback=True), "model", "byte_fallback"),
            (_char_bpe(dropout=0.5), "model", "dropout"),
            (regex, "normalizer", "subexpression call"),
            (stripping, "added_tokens", "lstrip/rstrip"),
            (overlapping, "added_tokens", "starts with whitespace"),
            (relabelled, "added_tokens", "model can also output it"),
            (emitted, "added_tokens", "model can also output it"),
            (merged, "added_tokens", "model can also output it"),
            (twins, "added_tokens", "normalize to the same text")]


def test_normalized_tokens_next_to_raw_ones_match_stock():
    # "##a" is a model token matched as itself; "A" gets its own id and is named "a"
    stock = _char_bpe()
    stock.normalizer = normalizers.Lowercase()
    stock.add_tokens([AddedToken("##a", normalized=True), AddedToken("B", normalized=False),
                      AddedToken("A", normalized=True)])
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert ours.acceleration["added_tokens"]["native"]
    texts = ["##A ##a B b A a", "AB BA", "x##Ay"]
    assert tokenizer_mode.diff_tokenizer(stock, texts, "plain", ours=ours) == []


@pytest.mark.parametrize("index", range(9))
def test_uncovered_shapes_report_why_and_still_match(index):
    stock, stage, reason = _stays_on_stock()[index]
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    entry = ours.acceleration[stage]
    assert entry["native"] is False and reason in entry["reason"]
    if reason in ("dropout", "normalize to the same text"):
        return  # stock's own output varies (randomness, hash order): nothing fixed to compare
    texts = ["ab ba aab", "aé b", " <r> b<r>  b", "AB ab  AB", "B b ##a", "", "a  a b"]
    assert tokenizer_mode.diff_tokenizer(stock, texts, "plain", ours=ours) == []


def test_normalized_token_is_named_by_its_normalized_match():
    stock = tokenizer_zoo.load("small_normalized_added_bert")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    text = "An ＮＯＲＭ and HELLO, OFﬁCE"
    expected = stock.encode(text)
    assert ours.encode(text).tokens == expected.tokens
    assert {"ｎｏｒｍ", "hello", "ofﬁce"} <= set(expected.tokens)  # matched after the normalizer folded the case


@pytest.mark.parametrize("pattern", [r"z*", r"^", r"(?=a)", r"\b"])
@pytest.mark.parametrize("pre_tokenizer", [pre_tokenizers.ByteLevel(add_prefix_space=False),
                                           pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
                                           pre_tokenizers.Whitespace()])
def test_a_replace_that_inserts_before_the_first_char_matches_stock(pattern, pre_tokenizer):
    """An empty match at the start puts the content before the first char, aligned to nothing: stock's
    pre-tokenizers then repeat it (ByteLevel) or panic; the pipeline lets stock encode such a text."""
    import numpy as np

    stock = tokenizer_zoo._small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False),
                                          normalizer=normalizers.Replace(Regex(pattern), "-"))
    stock.pre_tokenizer = pre_tokenizer
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert ours.acceleration["normalizer"]["native"]
    for text in ["abc", "zab", "", "ab cd", "b a"]:
        try:
            expected = stock.encode_batch([text])
        except BaseException as error:  # stock's own panic: ours raises the same
            with pytest.raises(type(error)):
                ours.encode_batch([text])
            continue
        assert tokenizer_mode.encoding_diff(ours.encode_batch([text])[0], expected[0]) is None
        lean = ours.encode_batch_arrays([text], offsets=False)
        assert np.array_equal(lean.ids, np.array(expected[0].ids, dtype=np.uint32))
