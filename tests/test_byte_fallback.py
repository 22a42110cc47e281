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
