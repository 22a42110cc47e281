"""The key a short word is cached and looked up by: its bytes as a little-endian integer, whether they are read
with one 8-byte load in the middle of a page or byte by byte where that load would cross into the next page."""
import random

import pytest

from hf_tagtok import _native


@pytest.mark.parametrize("length", range(9))
def test_a_short_word_key_is_its_bytes_wherever_the_word_lies(length):
    rng = random.Random(length)
    words = {bytes([0] * length), bytes([255] * length)}
    words |= {bytes(rng.randrange(256) for _ in range(length)) for _ in range(200)}
    for word in words:
        mid_page, at_page_end = _native.word_keys(word)
        assert mid_page == at_page_end == int.from_bytes(word, "little")


def test_a_word_longer_than_a_key_is_refused():
    with pytest.raises(ValueError, match="at most 8 bytes"):
        _native.word_keys(b"123456789")
