"""Byte-level BPE, native vs stock, on merge lists that stress the merge order: tokens made by more than
one merge, merges ranked before the merges that make their parts, repeated merges, tokens their own bytes
never make, runs of one byte; and on vocabularies stock's trainer builds (several sizes, with and without
ignore_merges). Every id and offset must equal stock's on random multi-script words."""
import json
import random

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

import hf_tagtok

pytest.importorskip("hf_tagtok._native")

WORD_CHARS = list("abcd") + ["é", "東", "😀"]
TRAIN_CHARS = list("abcdefgh  ") + ["é", "ß", "東", "京", "😀", "ж", "щ", "\n", "1", "7"]


def _byte_level_config(vocab, merges, ignore_merges=False):
    """The configuration's text, merges as written (from_hf would pass stock's own list, repeats resolved)."""
    stock = Tokenizer(models.BPE(vocab, [], ignore_merges=ignore_merges))
    stock.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    stock.decoder = decoders.ByteLevel()
    config = json.loads(stock.to_str())
    config["model"]["merges"] = [list(merge) for merge in merges]
    return json.dumps(config)


def _base_vocab():
    return {char: index for index, char in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}


def _rendered(text):
    return "".join(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str(text)[0][0])


def _random_words(rng, count, chars, longest=24):
    return ["".join(rng.choice(chars) for _ in range(rng.randint(1, longest))) for _ in range(count)]


def _assert_like_stock(config, words):
    stock, ours = Tokenizer.from_str(config), hf_tagtok.Tokenizer.from_str(config)
    assert ours.acceleration["model"]["native"], ours.acceleration["model"]
    for got, expected in zip(ours.encode_batch(words), stock.encode_batch(words)):
        assert (got.ids, got.offsets) == (expected.ids, expected.offsets), (expected.tokens, got.tokens)
    arrays = ours.encode_batch_arrays(words)
    expected = [i for encoding in stock.encode_batch(words) for i in encoding.ids]
    assert arrays.ids.tolist() == expected


def _random_merges(rng, n_merges, out_of_order, repeats):
    """Merges of random pairs of the tokens made so far (so some token is made by several merges), each put
    at a random earlier rank with probability out_of_order, an earlier merge repeated with probability
    repeats."""
    vocab = _base_vocab()
    tokens = [_rendered(char) for char in WORD_CHARS]
    tokens = sorted({char for token in tokens for char in token})
    merges = []
    while len(merges) < n_merges:
        if merges and rng.random() < repeats:
            merges.insert(rng.randrange(len(merges) + 1), rng.choice(merges))
            continue
        left, right = rng.choice(tokens), rng.choice(tokens)
        if len(left) + len(right) > 12:
            continue
        at = rng.randrange(len(merges) + 1) if rng.random() < out_of_order else len(merges)
        merges.insert(at, (left, right))
        if left + right not in vocab:
            vocab[left + right] = len(vocab)
            tokens.append(left + right)
    return vocab, merges


@pytest.mark.parametrize("seed", range(24))
@pytest.mark.parametrize("out_of_order,repeats", [(0.0, 0.0), (0.3, 0.0), (0.3, 0.1), (1.0, 0.05)])
def test_random_merge_lists_like_stock(seed, out_of_order, repeats):
    rng = random.Random(seed * 7919 + int(out_of_order * 10) + int(repeats * 100))
    vocab, merges = _random_merges(rng, rng.choice([20, 60, 200]), out_of_order, repeats)
    config = _byte_level_config(vocab, merges, ignore_merges=seed % 3 == 0)
    _assert_like_stock(config, _random_words(rng, 300, WORD_CHARS))


def _hand_made(merges):
    vocab = _base_vocab()
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    return vocab


HAND_MADE = {
    # "abc" from two merges, ranked apart, and a token on top of each
    "two_merges": [("a", "b"), ("b", "c"), ("ab", "c"), ("c", "d"), ("a", "bc"), ("abc", "d")],
    # a merge ranked before the merges that make its parts
    "out_of_order": [("abc", "d"), ("a", "b"), ("ab", "c"), ("c", "d"), ("b", "cd"), ("a", "bcd")],
    # a repeated pair keeps one rank (stock: its last), which decides "bcd" and "abcd"
    "repeated": [("b", "c"), ("c", "d"), ("b", "c"), ("a", "b"), ("ab", "cd"), ("c", "d"), ("a", "bc")],
    # "abd" is never made from its own bytes: "bd" merges first and "a"+"bd" is no merge
    "never_made": [("b", "d"), ("a", "b"), ("ab", "d"), ("d", "a"), ("abd", "a")],
    # runs of one byte: leftmost first among equal ranks, and merges of every split of "aaaa"
    "runs": [("a", "a"), ("aa", "a"), ("a", "aa"), ("aa", "aa"), ("aaa", "a"), ("a", "aaa"), ("aaaa", "aaaa"),
             ("aaa", "aa"), ("b", "a"), ("ba", "a")],
    "runs_reversed": [("aa", "aa"), ("a", "aa"), ("aa", "a"), ("a", "a"), ("b", "aa"), ("ba", "a"), ("b", "a")],
}


@pytest.mark.parametrize("name", sorted(HAND_MADE))
@pytest.mark.parametrize("ignore_merges", [False, True])
def test_hand_made_merge_lists_like_stock(name, ignore_merges):
    merges = HAND_MADE[name]
    config = _byte_level_config(_hand_made(merges), merges, ignore_merges)
    rng = random.Random(name)
    words = _random_words(rng, 400, list("abcd"), longest=16) + _random_words(rng, 100, list("aab"), longest=40)
    words += ["a" * n for n in range(1, 70)] + ["b" + "a" * n for n in range(1, 20)]
    _assert_like_stock(config, words)


def _training_text(rng):
    return ["".join(rng.choice(TRAIN_CHARS) for _ in range(rng.randint(20, 200))) for _ in range(400)]


@pytest.mark.parametrize("vocab_size", [300, 600, 1500])
@pytest.mark.parametrize("ignore_merges", [False, True])
def test_trained_byte_level_like_stock(vocab_size, ignore_merges):
    rng = random.Random(vocab_size)
    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    trained.train_from_iterator(_training_text(rng), trainer)
    config = json.loads(trained.to_str())
    config["model"]["ignore_merges"] = ignore_merges
    texts = _training_text(random.Random(vocab_size + 1))[:100]
    texts += [" ".join(_random_words(rng, 20, TRAIN_CHARS[:-2], longest=30)) for _ in range(100)]
    _assert_like_stock(json.dumps(config), texts)
