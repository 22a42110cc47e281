"""Native normalizers vs stock `tokenizers` normalizers: normalized text and every char's alignment.

Stock's alignment is read through a stock Tokenizer that makes each normalized char one token
(empty-pattern Split + WordLevel with only an unk token), so its offsets are the original char
range each normalized char maps to.
"""
import json

import pytest
from hypothesis import given, strategies as st
from tokenizers import Tokenizer, models, normalizers as N, pre_tokenizers

from hf_tagtok import normalizers
from hf_tagtok.models import Unsupported
from hf_tagtok.sample_text import multiscript_texts

_native = pytest.importorskip("hf_tagtok._native")

CONFIGS = {
    "bert_default": N.BertNormalizer(),
    "bert_lowercase_only": N.BertNormalizer(strip_accents=False),
    "bert_cased": N.BertNormalizer(lowercase=False),
    "bert_cased_strip": N.BertNormalizer(lowercase=False, strip_accents=True),
    "bert_raw": N.BertNormalizer(clean_text=False, handle_chinese_chars=False, lowercase=False),
    "nfd": N.NFD(),
    "nfkd": N.NFKD(),
    "lowercase": N.Lowercase(),
    "strip_accents": N.StripAccents(),
    "sequence": N.Sequence([N.NFKD(), N.StripAccents(), N.Lowercase()]),
}


def _config(normalizer):
    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizer
    return json.loads(tokenizer.to_str())["normalizer"]


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def pair(request):
    stock = CONFIGS[request.param]
    per_char = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    per_char.normalizer = stock
    per_char.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")
    return stock, per_char, _native.Normalizer(normalizers.spec(_config(stock)))


def _native_chars(native, text):
    """[(normalized char, (start, end) original char offsets)] from the native normalizer."""
    normalized, ranges = native.normalize(text)
    char_of_byte, pos = {}, 0
    for index, char in enumerate(text):
        char_of_byte[pos] = index
        pos += len(char.encode())
    char_of_byte[pos] = len(text)
    out, byte = [], 0
    for char in normalized:
        start, end = ranges[byte]
        out.append((char, (char_of_byte[start], char_of_byte[end])))
        byte += len(char.encode())
    return out


def _stock_chars(stock, per_char, text):
    normalized = stock.normalize_str(text)
    offsets = per_char.encode(text).offsets if normalized else []
    assert len(offsets) == len(normalized)
    return list(zip(normalized, offsets))


def _check(pair, text):
    stock, per_char, native = pair
    assert _native_chars(native, text) == _stock_chars(stock, per_char, text), repr(text)


def test_multiscript_corpus(pair):
    for text in multiscript_texts():
        _check(pair, text)


def test_every_code_point_in_context(pair):
    # Each code point between a letter and a combining mark, and twice in a row, so decomposition,
    # canonical reordering across neighbours, deletion and padding all meet context.
    code_points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    # Every code point for BERT's normalizer (the product path); a 1-in-11 sample for the others.
    chosen = code_points if pair[0] is CONFIGS["bert_default"] else code_points[::11]
    for i in range(0, len(chosen), 4096):
        _check(pair, "".join(f"a{c}\u0301{c}{c}\u0316" for c in chosen[i:i + 4096]))


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_fuzz_bert_default(text):
    stock = CONFIGS["bert_default"]
    per_char = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    per_char.normalizer = stock
    per_char.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")
    _check((stock, per_char, _native.Normalizer(normalizers.spec(_config(stock)))), text)


@pytest.mark.parametrize("normalizer", [N.NFC(), N.NFKC(), N.Strip(), N.Prepend("_"), N.Replace("a", "b"),
                                        N.Sequence([N.NFD(), N.NFC()])])
def test_not_native_yet_is_reported(normalizer):
    with pytest.raises(Unsupported):
        normalizers.spec(_config(normalizer))


def test_no_normalizer_is_none():
    assert normalizers.spec(None) is None
