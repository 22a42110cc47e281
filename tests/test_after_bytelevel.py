"""Splits after ByteLevel (Falcon's Punctuation, ByteLevel, Digits, Split) run in one native program:
they see byte-level chars, so a piece can start or end inside a UTF-8 char. Compared with stock."""
import itertools

import pytest
from tokenizers import Regex
from tokenizers import pre_tokenizers as hf

from hf_tagtok import pre_tokenizers as pt
from hf_tagtok.sample_text import multiscript_texts


def _falcon(module):
    return module.Sequence([module.Punctuation("contiguous"), module.ByteLevel(False, True, True),
                            module.Digits(False), module.Split(Regex("[0-9][0-9][0-9]"), "isolated")])


SHAPES = {
    "falcon": _falcon,
    # Digits sees the byte chars '²' '³' '¹' '¼' '½' '¾' (bytes B2 B3 B9 BC-BE, inside many UTF-8 chars)
    "prefix+digits": lambda m: m.Sequence([m.ByteLevel(True, True, True), m.Digits(True)]),
    "prefix+split regex": lambda m: m.Sequence([m.ByteLevel(True, True, False),
                                                 m.Split(Regex("\u0120|[^\u0120]{2}"), "isolated")]),
    "prefix removed": lambda m: m.Sequence([m.ByteLevel(True, True, True), m.Split("\u0120", "removed")]),
    "whitespace+scripts": lambda m: m.Sequence([m.ByteLevel(False, True, False), m.Whitespace(), m.UnicodeScripts()]),
    # no prefix space and only class splits and DFA regexes: these steps read the original bytes directly
    "class splits": lambda m: m.Sequence([m.ByteLevel(False, True, False), m.Digits(True),
                                          m.Punctuation("merged_with_previous")]),
    "regex with empty matches": lambda m: m.Sequence([m.ByteLevel(False, True, True),
                                                      m.Split(Regex("[\u00b2-\u00ff]*"), "isolated")]),
    "regex on a char's bytes": lambda m: m.Sequence([m.ByteLevel(False, True, False),
                                                     m.Split(Regex("[0-9]{2}|\u00c3\u00a9|\u0120"), "removed", True),
                                                     m.Split(Regex("\\p{L}+"), "merged_with_next")]),
}

TEXTS = multiscript_texts()[::4] + [
    "", " ", "x\u00b2y", "\u00bd 123 4567 \u00b2\u00b3\u00b9", "\u0432\u0433 12", "\t\u3000a", "\U0001F600 1",
    "caf\u00e9 1234567", "\u00a0\u00b2", "'s 999 ,,, !!", "\u0120\u0120 x",
]
SCALARS = "".join(chr(cp) for cp in itertools.chain(range(0x20, 0x800), range(0x3000, 0x3100, 3)))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_splits_after_bytelevel_equal_stock(name):
    ours, stock = SHAPES[name](pt), SHAPES[name](hf)
    assert ours._whole() is not None, "expected one native program"
    texts = TEXTS + [SCALARS[k:k + 97] for k in range(0, len(SCALARS), 97)]
    for text in texts:
        assert ours.pre_tokenize_str(text) == stock.pre_tokenize_str(text), text
    offsets, counts = ours.pre_tokenize_offsets(texts)
    expected = [list(span) for text in texts for _, span in stock.pre_tokenize_str(text)]
    assert offsets.tolist() == expected
    assert counts.tolist() == [len(stock.pre_tokenize_str(text)) for text in texts]


def test_inside_a_stock_sequence_via_to_hf():
    """to_hf() slices NormalizedStrings by char, so it composes the stages instead: same output."""
    ours, stock = _falcon(pt), _falcon(hf)
    wrapped = hf.Sequence([ours.to_hf()])
    for text in TEXTS:
        assert wrapped.pre_tokenize_str(text) == stock.pre_tokenize_str(text), text
