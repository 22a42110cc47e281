"""Backreferences in a Split or Replace regex run natively (the regex VM keeps captures for them); a text on
which such a regex backtracks past the engine's limit is left to stock, which gives its own answer or, as onig
gives up too, its own panic. Expectations come from stock."""
import warnings

import numpy as np
import pytest
from tokenizers import Regex, normalizers, pre_tokenizers

import hf_tagtok
from conformance import tokenizer_mode, tokenizer_zoo
from hf_tagtok import sample_text

# exponential backtracking on a run of a's with no b after it
RUNAWAY = r"(a)(?:\1|a)+(?:\1|a)+b"
TEXTS = sample_text.multiscript_texts()[::25] + ["", "aa bb", "caab x", "llama  llama", "1122 é\u0301é\u0301"]


def _ours(stock):
    with warnings.catch_warnings():
        warnings.simplefilter("error", hf_tagtok.FallbackWarning)  # native: no fallback to report
        return hf_tagtok.Tokenizer.from_str(stock.to_str())


def _assert_like_stock(ours, stock, texts):
    expected = stock.encode_batch(texts)
    assert [tokenizer_mode.encoding_diff(m, e) for m, e in zip(ours.encode_batch(texts), expected)] == \
        [None] * len(texts)
    assert tokenizer_mode.columns_diff(ours.encode_batch_arrays(texts), expected) is None
    lean = ours.encode_batch_arrays(texts, offsets=False)
    assert np.array_equal(lean.ids, np.concatenate([e.ids for e in expected]).astype(np.uint32))


@pytest.mark.parametrize("member", ["small_backref_split", "small_backref_replace"])
def test_zoo_members_with_backreferences_are_native_and_equal_stock(member):
    stock = tokenizer_zoo.load(member)
    ours = _ours(stock)
    assert all(stage["native"] for stage in ours.acceleration.values())
    _assert_like_stock(ours, stock, TEXTS)


def _runaway_split():
    return tokenizer_zoo._small_byte_bpe(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(RUNAWAY), "isolated"), pre_tokenizers.ByteLevel(add_prefix_space=False)]))


def _runaway_replace():
    return tokenizer_zoo._small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False),
                                         normalizer=normalizers.Replace(Regex(RUNAWAY), "-"))


def _stock_outcome(call):
    try:
        return call(), None
    except BaseException as error:  # pyo3_runtime.PanicException derives from BaseException
        return None, error


@pytest.mark.parametrize("build", [_runaway_split, _runaway_replace])
def test_a_text_past_the_backtracking_limit_is_left_to_stock(build):
    stock = build()
    ours = _ours(stock)
    runaway = "c" + "a" * 40
    _assert_like_stock(ours, stock, ["caab", "aab bb", ""])
    for texts in (["ok", runaway], [runaway]):
        for call in (lambda t: t.encode_batch(texts), lambda t: [t.encode(texts[-1])],
                     lambda t: t.encode_batch([(text, "bb") for text in texts])):
            expected, error = _stock_outcome(lambda: call(stock))
            if error is not None:
                with pytest.raises(type(error)):
                    call(ours)
            else:
                assert [tokenizer_mode.encoding_diff(m, e) for m, e in zip(call(ours), expected)] == \
                    [None] * len(expected)
        expected, error = _stock_outcome(lambda: stock.encode_batch(texts))
        if error is not None:
            with pytest.raises(type(error)):
                ours.encode_batch_arrays(texts)
        else:
            assert tokenizer_mode.columns_diff(ours.encode_batch_arrays(texts), expected) is None


def test_tag_tokenizer_fast_leaves_a_runaway_text_to_stock(tmp_path):
    from transformers import PreTrainedTokenizerFast

    from hf_tagtok.conformance_cli import compare_call

    path = tmp_path / "tokenizer.json"
    _runaway_split().save(str(path))
    stock = PreTrainedTokenizerFast(tokenizer_file=str(path))
    tag = hf_tagtok.TagTokenizerFast(tokenizer_file=str(path))
    assert tag.acceleration["pre_tokenizer"]["native"]
    compare_call(stock, tag, (["caab", "aab bb"],), {"return_offsets_mapping": True})
    runaway = ["ok", "c" + "a" * 40]
    _, error = _stock_outcome(lambda: stock(runaway))
    assert error is not None  # onig gives up on this text: stock panics
    with pytest.raises(type(error)):
        tag(runaway)


def test_a_run_longer_than_the_limit_splits_like_stock():
    from hf_tagtok import _engine, regex_compiler
    from hf_tagtok import pre_tokenizers as twins

    # `([a-z])\1+` takes a memo-less branch per repeat: past the limit the twin asks stock, which splits it
    pattern = tokenizer_zoo.BACKREF_PATTERN
    text = "a" * 1_100_000 + " yy"
    program = _engine.Program([{"kind": "split_compiled", **regex_compiler.compile_pattern(pattern).step_fields,
                                "behavior": "isolated"}])
    with pytest.raises(_engine.RegexGaveUp):
        program.pre_tokenize_str(text)
    ours, stock = twins.Split(Regex(pattern), "isolated"), pre_tokenizers.Split(Regex(pattern), "isolated")
    assert ours.pre_tokenize_str(text) == stock.pre_tokenize_str(text)
    batch = ["bb cc", text, "ok"]
    offsets, counts = ours.pre_tokenize_offsets(iter(batch))  # a generator: read once, the batch goes to stock
    expected = [stock.pre_tokenize_str(t) for t in batch]
    assert counts.tolist() == [len(pieces) for pieces in expected]
    assert offsets.tolist() == [list(span) for pieces in expected for _, span in pieces]
