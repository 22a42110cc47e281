"""Char-level BPE on whole texts as one word (SentencePiece conversions: Metaspace without split, or no
pre-tokenizer after a Replace normalizer), native vs stock. Such words are encoded in pieces cut before the
word-start mark when no merge joins across it; every id and offset must equal stock's, with runs of the
mark, unknown chars (byte fallback, unk, fused unk, dropped) and vocabularies with a merge that does join
across the mark (then nothing may be cut)."""
import json
import random

import pytest
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

import hf_tagtok

pytest.importorskip("hf_tagtok._native")

MARK = "\u2581"
TRAIN_CHARS = list("abcdeé東") + [" ", " ", "  "]
TEXT_CHARS = TRAIN_CHARS + ["   ", "ж", "😀", "\n", MARK, "x"]  # ж, 😀, \n, x: not in the vocabulary


def _texts(rng, count, longest=300):
    return ["".join(rng.choice(TEXT_CHARS) for _ in range(rng.randint(1, longest))) for _ in range(count)]


def _trained_config(seed, vocab_size):
    """A SentencePiece-like vocabulary: trained on words that start with a run of the mark (so no merge joins
    a char to a following mark), then run on whole texts."""
    rng = random.Random(seed)
    corpus = ["".join(rng.choice(TRAIN_CHARS) for _ in range(rng.randint(5, 80))) for _ in range(400)]
    stock = Tokenizer(models.BPE(unk_token="<unk>"))
    stock.normalizer = normalizers.Replace(" ", MARK)
    stock.pre_tokenizer = pre_tokenizers.Split(Regex(f"{MARK}*[^{MARK}]+|{MARK}+"), "isolated")
    stock.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<unk>"],
                                                          show_progress=False))
    stock.normalizer = None
    stock.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first", split=False)
    return json.loads(stock.to_str())


def _with_unknowns(config, how):
    model = config["model"]
    if how == "byte_fallback":
        for byte in range(256):
            model["vocab"].setdefault(f"<0x{byte:02X}>", len(model["vocab"]))
        model["byte_fallback"] = True
    elif how == "fused_unk":
        model["fuse_unk"] = True
    elif how == "dropped":
        model["unk_token"] = None
    return config


def _with_crossing_merge(config):
    """A merge of a token ending in a char with one starting with the mark, ranked first."""
    model = config["model"]
    left = next(token for token in model["vocab"] if len(token) == 1 and token not in (MARK, "<unk>"))
    right = next(token for token in model["vocab"] if token.startswith(MARK) and len(token) == 2)
    model["vocab"][left + right] = len(model["vocab"])
    model["merges"].insert(0, [left, right])
    return config, left + right


def _assert_like_stock(config, texts):
    text = json.dumps(config)
    stock, ours = Tokenizer.from_str(text), hf_tagtok.Tokenizer.from_str(text)
    assert all(stage["native"] for stage in ours.acceleration.values()), ours.acceleration
    expected = stock.encode_batch(texts)
    for got, want in zip(ours.encode_batch(texts), expected):
        assert (got.ids, got.offsets) == (want.ids, want.offsets), (want.tokens, got.tokens)
    ids = [i for encoding in expected for i in encoding.ids]
    arrays = ours.encode_batch_arrays(texts)
    assert arrays.ids.tolist() == ids
    assert arrays.offsets.tolist() == [list(pair) for encoding in expected for pair in encoding.offsets]
    assert ours.encode_batch_arrays(texts, offsets=False).ids.tolist() == ids
    return expected


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("unknowns", ["unk", "fused_unk", "byte_fallback", "dropped"])
def test_whole_text_words_like_stock(seed, unknowns):
    config = _with_unknowns(_trained_config(seed, vocab_size=[60, 150, 400][seed % 3]), unknowns)
    expected = _assert_like_stock(config, _texts(random.Random(seed), 200))
    assert any(token.startswith(MARK + MARK) for encoding in expected for token in encoding.tokens), \
        "the vocabulary should join runs of the mark"


def test_whole_text_without_pre_tokenizer_like_stock():
    config = _trained_config(11, vocab_size=200)
    config["pre_tokenizer"] = None
    config["normalizer"] = json.loads(normalizers.Sequence([normalizers.Prepend(MARK),
                                                            normalizers.Replace(" ", MARK)]).__getstate__())
    _assert_like_stock(config, _texts(random.Random(11), 200))


@pytest.mark.parametrize("seed", range(4))
def test_merge_across_the_mark_like_stock(seed):
    config, crossing = _with_crossing_merge(_trained_config(seed, vocab_size=150))
    expected = _assert_like_stock(config, _texts(random.Random(seed + 100), 200, longest=400))
    assert any(crossing in encoding.tokens for encoding in expected), "the crossing merge should apply"


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("scheme", ["first", "always"])
def test_rendered_words_of_every_length_like_stock(split, scheme):
    # Metaspace renders each space as the mark a run of plain bytes at a time (16 at once where SSE2 is):
    # words of 0-40 chars, 1-3 byte chars, runs of spaces around them, texts ending on either.
    config = _with_unknowns(_trained_config(5, vocab_size=300), "byte_fallback")
    config["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace(prepend_scheme=scheme, split=split).__getstate__())
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdeé東ж") for _ in range(length)) for length in range(41)]
    texts = [" " * rng.randint(0, 2) + (" " * rng.randint(1, 3)).join(rng.sample(words, 6)) + " " * rng.randint(0, 2)
             for _ in range(120)] + words
    _assert_like_stock(config, texts)


@pytest.mark.parametrize("scheme", ["first", "always"])
def test_swapping_normalizer_around_added_tokens_like_stock(scheme):
    # A one-byte Replace normalizer (found by memchr, no table) before Metaspace, with added tokens between
    # the stretches it normalizes: Metaspace "first" prepends only to the stretch at the text's start, which
    # the columnar call without offsets must still tell apart.
    config = _with_unknowns(_trained_config(3, vocab_size=200), "byte_fallback")
    config["normalizer"] = json.loads(normalizers.Sequence([normalizers.Prepend("x"),
                                                            normalizers.Replace("e", "東")]).__getstate__())
    config["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace(prepend_scheme=scheme).__getstate__())
    stock = Tokenizer.from_str(json.dumps(config))
    stock.add_special_tokens(["<sep>"])
    stock.add_tokens(["<mid>"])
    rng = random.Random(9)
    texts = [rng.choice(["", " ", "<sep>", "<mid> "]).join(_texts(rng, 3, longest=30)) for _ in range(150)]
    _assert_like_stock(json.loads(stock.to_str()), texts + ["<sep>", "<sep>ab", " <sep> e", "e", ""])


@pytest.mark.parametrize("unknowns", ["unk", "fused_unk", "byte_fallback", "dropped"])
def test_chars_in_no_merge_and_cached_pieces_like_stock(unknowns):
    """Chars with a token of their own that no merge has on either side (as SentencePiece leaves most CJK
    chars; one beyond the BMP), alone, in long runs and at the edges of words and unknown chars; then the same texts again, when
    every piece of a long word comes from the cache: ids and offsets equal stock's in both calls."""
    config = _with_unknowns(_trained_config(3, vocab_size=150), unknowns)
    vocab = config["model"]["vocab"]
    unmerged = ["中", "文", "ж", "𝄞"]  # 𝄞: beyond the BMP
    for char in unmerged:
        vocab.setdefault(char, len(vocab))
    merged_chars = {char for merge in config["model"]["merges"] for side in merge for char in side}
    assert not merged_chars & set(unmerged)
    rng = random.Random(7)
    chars = TEXT_CHARS + unmerged + ["中文" * 20, " 中", "中 ", "ж😀ж", "𝄞😀𝄞"]
    texts = ["".join(rng.choice(chars) for _ in range(rng.randint(1, 120))) for _ in range(300)]
    text = json.dumps(config)
    stock, ours = Tokenizer.from_str(text), hf_tagtok.Tokenizer.from_str(text)
    expected = stock.encode_batch(texts)
    for _ in range(2):
        for got, want in zip(ours.encode_batch(texts), expected):
            assert (got.ids, got.offsets) == (want.ids, want.offsets), (want.tokens, got.tokens)
    assert any(char in encoding.tokens for encoding in expected for char in unmerged)
