"""Transcoding a str to UTF-8 (what the native pipeline does with every str that is not ASCII): each
kernel on this machine returns exactly Python's own `str.encode("utf-8")`, for every code point in each of
Python's three str layouts, at every length around the kernels' 16-unit steps, and refuses surrogates."""
import random

import pytest

from hf_tagtok import _engine

IMPLS = [name for name in _engine.impl_names() if _engine.impl_available(name)]
SCALARS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
# a char that forces each of Python's str layouts (1, 2 and 4 bytes a unit) on the text it joins
LAYOUT_MARKS = {"latin1": "\xe9", "ucs2": "\u0416", "ucs4": "\U0001F600"}


@pytest.mark.parametrize("impl", IMPLS)
def test_every_code_point(impl):
    for start in range(0, len(SCALARS), 4096):
        text = "".join(map(chr, SCALARS[start:start + 4096]))
        assert _engine.utf8_of(text, impl) == text.encode("utf-8")


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("layout", list(LAYOUT_MARKS))
def test_every_length_around_the_steps(impl, layout):
    rng = random.Random(layout)
    widest = {"latin1": 0x100, "ucs2": 0x10000, "ucs4": 0x110000}[layout]
    pool = [cp for cp in (0x41, 0x7F, 0x80, 0xFF, 0x100, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF)
            if cp < widest]
    for length in range(0, 70):
        for _ in range(8):
            text = LAYOUT_MARKS[layout] + "".join(chr(rng.choice(pool)) for _ in range(length))
            assert _engine.utf8_of(text, impl) == text.encode("utf-8"), (layout, length, text)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("layout", ["ucs2", "ucs4"])
def test_surrogates_are_refused_wherever_they_sit(impl, layout):
    for length in (1, 15, 16, 17, 40):
        for at in {0, length // 2, length - 1}:
            text = list(LAYOUT_MARKS[layout] + "a" * (length - 1))
            text[at] = "\udc80" if at % 2 else "\ud800"
            text = "".join(text)
            with pytest.raises(UnicodeEncodeError):
                text.encode("utf-8")
            with pytest.raises(ValueError, match="surrogate"):
                _engine.utf8_of(text, impl)
