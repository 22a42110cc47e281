"""Checks shared by the gated pipeline's tests (tests/test_gate.py, tests/test_gate_split.py): every call a user
makes equals stock's."""
import warnings

import numpy as np
import pytest
import tokenizers
from tokenizers import AddedToken, Regex, normalizers, pre_tokenizers, processors

import hf_tagtok
from conformance import tokenizer_mode, tokenizer_zoo

NORMALIZER = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])


def byte_bpe_after(split, normalizer=NORMALIZER):
    """A byte-level BPE whose pre-tokenizer is `split` then ByteLevel, with added tokens of both kinds."""
    post = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
                                         special_tokens=[("<s>", 0), ("</s>", 1)])
    added = [AddedToken("<|special|>", special=True, normalized=False), AddedToken("norm", normalized=True)]
    pre = pre_tokenizers.Sequence([split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    return tokenizer_zoo._small_byte_bpe(pre, post, added=added, normalizer=normalizer)


def native_kinds(mine, texts):
    """Per text whether our encode_batch gave our own encoding (not stock's)."""
    return [not isinstance(encoding, tokenizers.Encoding) for encoding in mine.encode_batch(texts)]


def ours(stock):
    """Our tokenizer of stock's configuration, its fallback warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hf_tagtok.FallbackWarning)
        return hf_tagtok.Tokenizer.from_str(stock.to_str())


def assert_like_stock(mine, stock, texts, singles=()):
    """encode_batch, the columnar call with and without offsets and encode_batch_fast over texts, with and without
    special tokens, and encode of each of singles, equal stock's."""
    for add_special_tokens in (True, False):
        expected = stock.encode_batch(texts, add_special_tokens=add_special_tokens)
        encoded = mine.encode_batch(texts, add_special_tokens=add_special_tokens)
        assert [tokenizer_mode.encoding_diff(m, e) for m, e in zip(encoded, expected)] == [None] * len(texts)
        arrays = mine.encode_batch_arrays(texts, add_special_tokens=add_special_tokens)
        assert tokenizer_mode.columns_diff(arrays, expected) is None
        lean = mine.encode_batch_arrays(texts, add_special_tokens=add_special_tokens, offsets=False)
        assert lean.offsets is None and np.array_equal(lean.ids, arrays.ids)
        assert np.array_equal(lean.lengths, arrays.lengths) and np.array_equal(lean.type_ids, arrays.type_ids)
        fast = mine.encode_batch_fast(texts, add_special_tokens=add_special_tokens)
        expected_fast = stock.encode_batch_fast(texts, add_special_tokens=add_special_tokens)
        assert [e.ids for e in fast] == [e.ids for e in expected_fast]
    for text in singles:
        assert tokenizer_mode.encoding_diff(mine.encode(text), stock.encode(text)) is None


def assert_assembled_like_stock(mine, stock, texts):
    """With truncation and padding on both tokenizers: encode_batch of the texts, and of them paired with
    themselves reversed, equals stock's (or raises what stock raises)."""
    for tokenizer in (stock, mine):
        tokenizer.enable_truncation(12, stride=2)
        tokenizer.enable_padding(length=16)
    for batch in (texts, list(zip(texts, texts[::-1]))):
        try:
            expected = stock.encode_batch(batch)
        except BaseException as error:  # stock's own exception (a panic): ours raises it too
            with pytest.raises(type(error)):
                mine.encode_batch(batch)
            continue
        encoded = mine.encode_batch(batch)
        assert [tokenizer_mode.encoding_diff(m, e) for m, e in zip(encoded, expected)] == [None] * len(batch)


def stock_spans(pattern, text):
    """The non-empty matches of a regex in text as stock's inverted Split lists them: count, then char pairs."""
    pieces = pre_tokenizers.Split(Regex(pattern), "removed", invert=True).pre_tokenize_str(text)
    return [len(pieces), *(offset for _, span in pieces for offset in span)]


def replaced(text, pairs, content):
    """text with content in place of each [start, end) char range of the flat pairs (to compare with stock's
    Replace, which shows empty matches too)."""
    out, done = [], 0
    for start, end in zip(pairs[::2], pairs[1::2]):
        out += [text[done:start], content]
        done = end
    return "".join(out) + text[done:]
