"""The conformance harness, full code-point sweep included: zero differences against stock tokenizers."""
import argparse

import regex
from tokenizers import Regex, normalizers
from tokenizers import pre_tokenizers as hf

import hf_tagtok
from conformance import __main__ as cli
from conformance import fuzz_tokenizers, fuzz_transformers, tokenizer_zoo
from conformance import pretokenizers as harness
from hf_tagtok import pre_tokenizers as pt


def test_pretok_mode_has_zero_differences_vs_stock(capsys):
    args = argparse.Namespace(quick=False, config="", no_sweep=False, fuzz=200)
    differences = harness.run(args)
    report = capsys.readouterr().out
    assert "configurations" in report
    assert differences == 0, report


def test_harness_reports_a_real_difference():
    # Digits(True) checked against stock Digits(False): the harness must count and describe the diff.
    tally = harness.Tally("wrong on purpose")
    config = harness.Config("wrong on purpose", pt.Digits(True))
    harness.check_texts(tally, config, hf.Digits(False), "probe", ["a12b", "x", "345"])
    assert tally.differences == 3  # two texts + the batch comparison
    assert "a12b" in tally.first and "piece #1" in tally.first


def test_regex_disagreements_are_counted_separately():
    tally = harness.Tally("split")
    text = "l\U0003d666W\u1e9e"  # a Unicode-18 letter: `regex` sees a letter, stock (Unicode 16) does not
    config = harness.Config("split", pt.Split(Regex(pt.RECOGNISED_PATTERNS["cl100k"]), "isolated"))

    harness.check_texts(tally, config, config.ours.stock(), "probe", [text], regex.compile(pt.RECOGNISED_PATTERNS["cl100k"]))
    assert tally.differences == 0
    assert tally.regex_disagreements == 1
    assert tally.regex_newer_unicode == 1  # attributed to the Unicode-version gap


def test_cli_exit_status_and_mode_selection(capsys):
    assert cli.main(["--mode", "pretok", "--config", "Digits(True)", "--no-sweep", "--fuzz", "5"]) == 0
    assert "Digits(True)" in capsys.readouterr().out


def test_tokenizer_fuzz_finds_no_difference_on_small_members():
    for name in ("small_bytelevel", "small_normalized_added_bert", "small_metaspace_byte_fallback"):
        batches, found = fuzz_tokenizers.fuzz_member(name, seconds=0.5, seed=0)
        assert batches >= 1 and found == [], (name, found[:3])


def test_transformers_fuzz_finds_no_difference_on_small_members():
    for name in ("small_bert_processing", "small_added_flags", "small_metaspace_byte_fallback"):
        calls, found = fuzz_transformers.fuzz_member(name, seconds=0.5, seed=0)
        assert calls >= 1 and found == [], (name, found[:3])


def test_transformers_fuzz_reports_a_real_difference():
    # stock lowercases, ours was loaded from the file without the normalizer: the fuzz must say where
    lowered, plain = tokenizer_zoo.load("small_bytelevel"), tokenizer_zoo.load("small_bytelevel")
    lowered.normalizer = normalizers.Lowercase()
    stock, _ = fuzz_transformers.transformers_pair(lowered)
    _, ours = fuzz_transformers.transformers_pair(plain)
    _, found = fuzz_transformers.fuzz(stock, ours, seconds=0.3, seed=0)
    assert any(message.startswith("input_ids") for _, message, _ in found)


def test_tokenizer_fuzz_reports_a_real_difference():
    # stock lowercases, ours was built without the normalizer: the fuzz must say where
    ours = hf_tagtok.Tokenizer.from_hf(tokenizer_zoo.load("small_bytelevel"))
    stock = tokenizer_zoo.load("small_bytelevel")
    stock.normalizer = normalizers.Lowercase()
    _, found = fuzz_tokenizers.fuzz(stock, ours, seconds=0.2, seed=0)
    assert found and any(text and text != text.lower() for *_, text in found)
