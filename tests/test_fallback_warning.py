"""A tokenizer hf_tagtok hands back that is not fully native says so once, with a filterable category.

The not-native configuration is a WordLevel model behind a regex Replace the regex compiler cannot express
(a subexpression call); the native one is the same model without it. Outputs are compared with stock each time.
"""
import warnings

import pytest
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

import hf_tagtok
from hf_tagtok import FallbackWarning

transformers = pytest.importorskip("transformers")
pytest.importorskip("hf_tagtok._native")

TEXTS = ["a b", "abc cab", "x"]


def _stock(native):
    tokenizer = Tokenizer(models.WordLevel({"a": 0, "b": 1, "x": 2, "[UNK]": 3}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if not native:
        tokenizer.normalizer = normalizers.Replace(Regex(r"\g<1>(a)b"), "x")
    return tokenizer


def _fast(native):
    return transformers.PreTrainedTokenizerFast(tokenizer_object=_stock(native), unk_token="[UNK]")


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [warning for warning in caught if issubclass(warning.category, FallbackWarning)]


def test_category_is_a_user_warning_exported_at_top_level():
    assert issubclass(FallbackWarning, UserWarning) and "FallbackWarning" in hf_tagtok.__all__


@pytest.mark.parametrize("build", [
    lambda stock: hf_tagtok.Tokenizer.from_str(stock.to_str()),
    lambda stock: hf_tagtok.Tokenizer.from_hf(stock),
])
def test_tokenizer_warns_once_with_the_reason(build):
    stock = _stock(native=False)
    tokenizer, caught = _caught(lambda: build(stock))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "normalizer" in message and "'\\\\g<1>(a)b'" in message
    assert caught[0].filename == __file__  # points at the caller
    assert tokenizer.acceleration["normalizer"]["native"] is False
    assert [e.ids for e in tokenizer.encode_batch(TEXTS)] == [e.ids for e in stock.encode_batch(TEXTS)]


def test_native_tokenizer_does_not_warn():
    stock = _stock(native=True)
    tokenizer, caught = _caught(lambda: hf_tagtok.Tokenizer.from_str(stock.to_str()))
    assert caught == [] and all(entry["native"] for entry in tokenizer.acceleration.values())


def test_accelerate_warns_once_and_keeps_acceleration():
    stock = _fast(native=False)
    twin, caught = _caught(lambda: hf_tagtok.accelerate(stock))
    assert len(caught) == 1 and "'\\\\g<1>(a)b'" in str(caught[0].message) and caught[0].filename == __file__
    assert twin.acceleration["normalizer"]["native"] is False
    assert twin(TEXTS)["input_ids"] == stock(TEXTS)["input_ids"]
    _, caught = _caught(lambda: hf_tagtok.accelerate(_fast(native=True)))
    assert caught == []


def test_patched_auto_tokenizer_warns_and_reports(tmp_path):
    _fast(native=False).save_pretrained(tmp_path / "fallback")
    _fast(native=True).save_pretrained(tmp_path / "native")
    hf_tagtok.patch_transformers()
    try:
        loaded, caught = _caught(lambda: transformers.AutoTokenizer.from_pretrained(tmp_path / "fallback"))
        native, caught_native = _caught(lambda: transformers.AutoTokenizer.from_pretrained(tmp_path / "native"))
    finally:
        hf_tagtok.unpatch_transformers()
    assert len(caught) == 1 and "'\\\\g<1>(a)b'" in str(caught[0].message) and caught[0].filename == __file__
    assert loaded.acceleration["normalizer"]["native"] is False
    assert caught_native == [] and all(entry["native"] for entry in native.acceleration.values())
    stock = transformers.AutoTokenizer.from_pretrained(tmp_path / "fallback")
    assert loaded(TEXTS)["input_ids"] == stock(TEXTS)["input_ids"]


def test_the_category_can_be_ignored():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", FallbackWarning)
        hf_tagtok.Tokenizer.from_str(_stock(native=False).to_str())
        hf_tagtok.accelerate(_fast(native=False))
    assert [w for w in caught if issubclass(w.category, FallbackWarning)] == []
