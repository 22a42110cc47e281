"""The native Unigram model vs stock `tokenizers.models.Unigram`: ids and offsets of every token.

Vocabularies come from stock's own unit tests (tie-breaking, unk fusing, byte fallback) and from a fuzz
over a small alphabet (multi-byte chars, combining marks) with tied scores, duplicated pieces, unk ids
anywhere in the vocabulary and byte tokens present or not.
"""
import json
import random

import pytest
from hypothesis import given, settings, strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

import hf_tagtok
from hf_tagtok.models import Unsupported, _unigram_spec

_native = pytest.importorskip("hf_tagtok._native")


def _diff(vocab, unk_id, byte_fallback, words):
    stock = Tokenizer(models.Unigram(vocab, unk_id, byte_fallback))
    native = _native.WordModel(_unigram_spec({"vocab": vocab, "unk_id": unk_id, "byte_fallback": byte_fallback}, False))
    for word in words:
        encoding = stock.encode(word)
        expected = list(zip(encoding.ids, encoding.offsets))
        data = word.encode()
        chars = lambda at: len(data[:at].decode())  # native offsets are bytes of the word
        got = [(token_id, (chars(start), chars(end))) for token_id, start, end in native.encode(word)]
        if got != expected:
            return word, got, expected
    return None


STOCK_TIES = [("<unk>", 0.0), ("ab", 0.0), ("cd", -0.1), ("abc", -0.2), ("a", -0.3), ("b", -0.4), ("c", -0.5),
              ("ABC", -0.5), ("abcdabcd", 20.0), ("q", 20.5), ("r", 20.5), ("qr", -0.5)]
STOCK_BYTES = [("<unk>", 0.0), ("<0xE2>", -0.01), ("<0x85>", -0.02), ("<0xE2>", -0.03), ("<0x90>", -0.04),
               ("<0x91>", -0.05), ("<0x9B>", -0.06), ("Hello", -0.1), ("how", -0.2), ("are", -0.3), (" ", -0.4)]


def test_stock_unit_examples():
    words = ["abc", "AB", "abcd", "abcc", "xabcabaabcdd", "xyz東京", "ABC", "abABCcd", "ababcdabcdcd", "abqrcd",
             "<unk>x<unk>", ""]
    assert _diff(STOCK_TIES, 0, False, words) is None
    assert _diff(STOCK_BYTES, 0, True, ["Hello⅐how are⅑⅑", " unknown‰", "⅐", "⅑x"]) is None
    assert _diff(STOCK_BYTES, 0, False, ["Hello⅐how are⅑⅑"]) is None


ALPHABET = "abcé東ñ\u0301 😀"


def test_fuzz_small_alphabet():
    rng = random.Random(5)
    for _ in range(300):
        pieces = sorted({"".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4))) for _ in range(30)})
        vocab = [("<unk>", 0.0)] + [(p, rng.choice([-1.0, -2.0, -0.5, -3.25, rng.randint(-20, 0) / 4])) for p in pieces]
        if rng.random() < 0.3:
            vocab += [(f"<0x{byte:02X}>", -5.0) for byte in range(256) if rng.random() < 0.97]
        if rng.random() < 0.2:
            vocab.append((pieces[0], -0.1))  # a duplicate piece: stock finds its last id
        words = ["".join(rng.choice(ALPHABET + "xyz") for _ in range(rng.randint(0, 12))) for _ in range(40)]
        assert _diff(vocab, rng.randrange(len(vocab)), rng.random() < 0.5, words) is None


WIDE_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789.,-éñüßжщыαβγ東京語日本あいうアイ😀🙂\u0301 "


def test_dense_vocabulary():
    """Thousands of pieces whose trie nodes have dozens of children on bytes of every UTF-8 kind, so
    the trie's layout has to fit many sibling sets around each other."""
    rng = random.Random(11)
    pieces = {a + b for a in WIDE_ALPHABET for b in WIDE_ALPHABET}
    pieces |= {"".join(rng.choice(WIDE_ALPHABET) for _ in range(rng.randint(3, 7))) for _ in range(3000)}
    vocab = [("<unk>", 0.0)] + [(p, -rng.randint(1, 400) / 16) for p in sorted(pieces)]
    words = ["".join(rng.choice(WIDE_ALPHABET + "xyzQ") for _ in range(rng.randint(0, 24))) for _ in range(400)]
    assert _diff(vocab, 0, False, words) is None


def _metaspace_unigram():
    vocab = [("<unk>", 0.0), ("▁", -1.0), ("▁a", -1.5), ("a", -2.0), ("b", -2.5), ("ab", -2.0), ("▁ab", -3.0),
             ("é", -4.0), ("<0xE2>", -6.0)]
    stock = Tokenizer(models.Unigram(vocab, 0, False))
    stock.pre_tokenizer = pre_tokenizers.Metaspace()
    return stock


@settings(deadline=None, max_examples=200)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab é∰\u0301x😀 ")), max_size=20), min_size=1, max_size=4))
def test_pipeline_names_unk_pieces_by_their_text(texts):
    stock = _metaspace_unigram()
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert ours.acceleration["model"]["native"]
    for got, expected in zip(ours.encode_batch(texts), stock.encode_batch(texts)):
        assert (got.ids, got.offsets, got.tokens) == (expected.ids, expected.offsets, expected.tokens)


def _stock_outcome(call):
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - stock raises a plain Exception for a missing unk_id
        return type(error), str(error)


WITHOUT_UNK = [("a", -1.0), ("b", -2.0), ("ab", -2.5), ("c", -9.0), ("é", -1.0), ("x́", -0.5),
               ("<0x64>", -1.0)]


@pytest.mark.parametrize("byte_fallback", [False, True])
def test_without_unk_id_native_and_raising_as_stock(byte_fallback):
    """Native where every char is covered; where stock raises (it meets a char it cannot cover, even off
    the best path) that call runs on stock and raises what stock raises, in every encode entry point."""
    stock = Tokenizer(models.Unigram(WITHOUT_UNK, None, byte_fallback))
    stock.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    ours = hf_tagtok.Tokenizer.from_str(stock.to_str())
    assert ours.acceleration["model"]["native"]
    rng = random.Random(28)
    texts = ["".join(rng.choice("ab céx́d") for _ in range(rng.randint(0, 8))) for _ in range(300)]
    for text in texts:
        expected = _stock_outcome(lambda: (lambda e: (e.ids, e.offsets, e.tokens))(stock.encode(text)))
        got = _stock_outcome(lambda: (lambda e: (e.ids, e.offsets, e.tokens))(ours.encode(text)))
        assert got == expected, repr(text)
    for start in range(0, 300, 30):
        batch = texts[start:start + 30]
        expected = _stock_outcome(lambda: [e.ids for e in stock.encode_batch(batch)])
        assert _stock_outcome(lambda: [e.ids for e in ours.encode_batch(batch)]) == expected
        arrays = _stock_outcome(lambda: ours.encode_batch_arrays(batch))
        if isinstance(expected, tuple):
            assert arrays == expected
        else:
            assert arrays.ids.tolist() == [i for ids in expected for i in ids]
    stock.enable_truncation(1)
    ours.enable_truncation(1)
    for text in ("a ab", "a d", "d a", "a x"):  # the word stock raises on is cut by truncation
        assert _stock_outcome(lambda: ours.encode(text).ids) == _stock_outcome(lambda: stock.encode(text).ids)


def test_unk_id_outside_the_vocabulary_is_reported():
    with pytest.raises(Unsupported, match="unk_id"):
        _unigram_spec({"vocab": [("a", -1.0)], "unk_id": 1}, False)


def test_scores_as_stock_reads_them():
    """Stock's JSON reader can put a score an ULP away from Python's reading of the same text; the native
    model must use stock's (here a tie between two segmentations of a run of 'a' goes the other way)."""
    text = json.dumps({"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None,
                       "post_processor": None, "decoder": None, "truncation": None, "padding": None,
                       "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": False, "vocab": [
                           ["<unk>", 0.0], ["a", -5.463981628417969], ["aaaaaaaaaaaaaaaa", -8.222298622131348],
                           ["aaaaaaaaaaaaaa", -10.601493835449219], ["ور", -7.4619622230529785]]}})
    stock = Tokenizer.from_str(text)
    ours = hf_tagtok.Tokenizer.from_str(text)
    assert ours.acceleration["model"]["native"]
    for n in range(1, 400):
        assert ours.encode("a" * n).ids == stock.encode("a" * n).ids, n
