"""A native normalizer against its stock twin: the normalized text and, for every normalized char, the
original char range it comes from. Stock's alignment is read through a stock Tokenizer that makes each
normalized char one token (empty-pattern Split + WordLevel with only an unk token), so its offsets are
those ranges."""
import json

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers

from hf_tagtok import normalizers


def stock_and_native(stock):
    """(stock normalizer, its one-token-per-char tokenizer, the native normalizer of the same config)."""
    from hf_tagtok import _native  # the tests that use this skip when it is not built
    per_char = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    per_char.normalizer = stock
    per_char.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")
    config = json.loads(per_char.to_str())["normalizer"]
    return stock, per_char, _native.Normalizer(normalizers.spec(config))


def _native_chars(native, text):
    """(normalized text, (n, 2) original char offsets of each normalized char) from the native normalizer."""
    normalized, starts, ends = native.normalize(text)
    raw = np.frombuffer(text.encode(), np.uint8)
    chars_before = np.concatenate([[0], np.cumsum((raw & 0xC0) != 0x80)])  # byte position -> char index
    first_bytes = (np.frombuffer(normalized.encode(), np.uint8) & 0xC0) != 0x80
    # stock aligns every byte of a normalized char as the char (a token may end on any of them)
    char_of_byte = np.cumsum(first_bytes) - 1
    assert (starts == starts[first_bytes][char_of_byte]).all() and (ends == ends[first_bytes][char_of_byte]).all()
    return normalized, np.stack([chars_before[starts[first_bytes]], chars_before[ends[first_bytes]]], axis=1)


def _stock_chars(stock, per_char, text):
    normalized = stock.normalize_str(text)
    offsets = per_char.encode(text).offsets if normalized else []
    return normalized, np.array(offsets, dtype=np.int64).reshape(-1, 2)


def check(triple, text):
    """Assert the native normalizer of stock_and_native(...) gives stock's text and alignment on text."""
    stock, per_char, native = triple
    (got_text, got), (want_text, want) = _native_chars(native, text), _stock_chars(stock, per_char, text)
    assert got_text == want_text, repr(text)
    assert got.tolist() == want.tolist(), repr(text)
