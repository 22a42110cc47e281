"""BPE byte_fallback with only some <0xXX> tokens, native vs stock: a char whose bytes all have tokens
becomes them; one with a missing byte token is unknown (a fused or single unk, or dropped without an
unk token), and a pending unk is flushed only before the next known char, not before byte tokens."""
import random

import pytest
from hypothesis import given, settings, strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

import hf_tagtok

pytest.importorskip("hf_tagtok._native")

CHARS = list("abc ") + ["é", "ß", "東", "😀", "\u0301", "ñ"]


def _stock(seed, unk, fuse_unk):
    rng = random.Random(seed)
    vocab = {"<unk>": 0, "a": 1, "b": 2, "c": 3, "▁": 4, "ab": 5, "é": 6}
    for byte in range(256):
        if rng.random() < 0.6:
            vocab[f"<0x{byte:02X}>"] = len(vocab)
    merges = [("a", "b")]
    model = models.BPE(vocab, merges, unk_token="<unk>" if unk else None, fuse_unk=fuse_unk, byte_fallback=True)
    stock = Tokenizer(model)
    stock.pre_tokenizer = pre_tokenizers.Metaspace()
    return stock


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("unk,fuse_unk", [(True, True), (True, False), (False, False)])
@settings(deadline=None, max_examples=60)
@given(texts=st.lists(st.text(alphabet=st.sampled_from(CHARS), max_size=16), min_size=1, max_size=4))
def test_partial_byte_tokens_like_stock(seed, unk, fuse_unk, texts):
    stock = _stock(seed, unk, fuse_unk)
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert ours.acceleration["model"]["native"], ours.acceleration["model"]
    for got, expected in zip(ours.encode_batch(texts), stock.encode_batch(texts)):
        assert (got.ids, got.offsets, got.tokens) == (expected.ids, expected.offsets, expected.tokens)


# Byte level: the model word is the byte-rendered piece, so a byte whose rendered char is not in the
# vocabulary is what stock's merge_word handles (<0xXX> tokens of the rendered char's UTF-8, unk, or
# dropped with later offsets shifted in rendered bytes).
BYTE_LEVEL_CHARS = list("abz \n") + ["é", "ß", "東", "😀", "\u0301", "ñ", "Ġ", "\t"]


def _stock_byte_level(seed, byte_fallback, unk, fuse_unk, add_prefix_space):
    rng = random.Random(seed)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {"<unk>": 0} if unk else {}
    for char in sorted(alphabet):
        if rng.random() < 0.8:  # a fifth of the byte chars are missing
            vocab[char] = len(vocab)
    if byte_fallback:
        for byte in range(256):
            if rng.random() < 0.7:
                vocab[f"<0x{byte:02X}>"] = len(vocab)
    merges = [(a, b) for a, b in (("a", "b"), ("Ġ", "a"), ("b", "z")) if a in vocab and b in vocab and a + b not in vocab]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    model = models.BPE(vocab, merges, unk_token="<unk>" if unk else None, fuse_unk=fuse_unk,
                       byte_fallback=byte_fallback)
    stock = Tokenizer(model)
    stock.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=True)
    return stock


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("byte_fallback,unk,fuse_unk", [(True, True, False), (True, False, False), (False, True, True),
                                                        (False, True, False), (False, False, False)])
@pytest.mark.parametrize("add_prefix_space", [False, True])
@settings(deadline=None, max_examples=40)
@given(texts=st.lists(st.text(alphabet=st.sampled_from(BYTE_LEVEL_CHARS), max_size=16), min_size=1, max_size=4))
def test_byte_level_gaps_like_stock(seed, byte_fallback, unk, fuse_unk, add_prefix_space, texts):
    stock = _stock_byte_level(seed, byte_fallback, unk, fuse_unk, add_prefix_space)
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert ours.acceleration["model"]["native"], ours.acceleration["model"]
    for got, expected in zip(ours.encode_batch(texts), stock.encode_batch(texts)):
        assert (got.ids, got.offsets, got.tokens) == (expected.ids, expected.offsets, expected.tokens)
