"""Native normalizers vs stock `tokenizers` normalizers: normalized text and every char's alignment.

Stock's alignment is read as tests/normalizer_alignment.py reads it: through a stock Tokenizer that makes
each normalized char one token, so its offsets are the original char range each normalized char maps to.
"""
import json
import unicodedata

import pytest
from hypothesis import given, strategies as st
from tokenizers import Regex, Tokenizer, models, normalizers as N

from hf_tagtok import normalizers
from hf_tagtok.models import Unsupported
from hf_tagtok.sample_text import multiscript_texts
from normalizer_alignment import check, stock_and_native

_native = pytest.importorskip("hf_tagtok._native")

CONFIGS = {
    "bert_default": N.BertNormalizer(),
    "bert_lowercase_only": N.BertNormalizer(strip_accents=False),
    "bert_cased": N.BertNormalizer(lowercase=False),
    "bert_cased_strip": N.BertNormalizer(lowercase=False, strip_accents=True),
    "bert_raw": N.BertNormalizer(clean_text=False, handle_chinese_chars=False, lowercase=False),
    "nfd": N.NFD(),
    "nfkd": N.NFKD(),
    "nfc": N.NFC(),
    "nfkc": N.NFKC(),
    "lowercase": N.Lowercase(),
    "strip_accents": N.StripAccents(),
    "sequence": N.Sequence([N.NFKD(), N.StripAccents(), N.Lowercase()]),
    "strip": N.Strip(),
    "strip_left": N.Strip(left=True, right=False),
    "prepend": N.Prepend("▁"),
    "replace_char": N.Replace(" ", "▁"),
    "replace_delete": N.Replace("́", ""),
    "llama2": N.Sequence([N.Prepend("▁"), N.Replace(" ", "▁")]),
    "prefix_swapped": N.Sequence([N.Prepend("é "), N.Prepend(" "), N.Replace(" ", "▁")]),  # the prefix's spaces too
    "replace_byte_wide": N.Replace("a", "東"),
    "whole_string_steps": N.Sequence([N.NFKC(), N.Strip(left=False), N.Replace("a ", "é ▁"), N.Lowercase(),
                                      N.Prepend("▁ "), N.Replace("  ", ""), N.Strip(right=False),
                                      N.StripAccents()]),
    "prepend_composes": N.Sequence([N.Prepend("x"), N.Prepend("e"), N.NFC(), N.Replace("é", "E")]),
    "nmt": N.Nmt(),
    "byte_level": N.ByteLevel(),
    "nmt_nfkc_byte_level": N.Sequence([N.Nmt(), N.NFKC(), N.Replace(Regex(" {2,}"), " "), N.ByteLevel()]),
    "replace_run_spaces": N.Sequence([N.Replace("’", "'"), N.Replace(Regex(" {2,}"), " ")]),
    "replace_run_grow": N.Sequence([N.Replace(Regex("a+"), "XY"), N.NFKC(), N.Replace(Regex("\\.{3,}"), "")]),
    "replace_regex_lookahead": N.Replace(Regex("q(?=zz)|\\s+(?!\\S)"), "Q"),
    "replace_regex_empty_matches": N.Replace(Regex("x*"), "<>"),
    "replace_regex_whitespace": N.Replace(Regex("\\s+"), " "),
    "replace_regex_marks": N.Sequence([N.NFD(), N.Replace(Regex("\\p{Mn}+"), ""), N.Lowercase()]),
    # CLIP's: the regex between two per-char steps (each part on its own fast path, alignments composed)
    "nfc_whitespace_lowercase": N.Sequence([N.NFC(), N.Replace(Regex("\\s+"), " "), N.Lowercase()]),
    # leading regexes: a text neither matches in goes through the steps after them alone (their fast paths)
    "replace_regex_then_nfkc_lowercase": N.Sequence([N.Replace(Regex("\\s{2,}"), " "), N.Replace(Regex("q(?=u)"), "k"),
                                                     N.NFKC(), N.Lowercase()]),
    "replace_regex_after_prepend": N.Sequence([N.Prepend("▁"), N.Replace(Regex("^|(?=\\p{Lu})"), "é")]),
}


def _config(normalizer):
    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizer
    return json.loads(tokenizer.to_str())["normalizer"]


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def pair(request):
    return stock_and_native(CONFIGS[request.param])


def test_multiscript_corpus(pair):
    for text in multiscript_texts():
        check(pair, text)


def test_every_code_point_in_context(pair):
    # Each code point after a letter and before a combining mark and itself, so decomposition,
    # canonical reordering across neighbours, deletion and padding all meet context. Normalized
    # text: every code point for every config; alignments: every code point for BERT's normalizer
    # (the product path), 1 in 11 for the others.
    stock, _, native = pair
    code_points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    texts = ["".join(f"a{c}\u0301{c}" for c in code_points[i:i + 4096]) for i in range(0, len(code_points), 4096)]
    for text in texts:
        assert native.normalize(text)[0] == stock.normalize_str(text)
    sample = code_points if stock is CONFIGS["bert_default"] else code_points[::11]
    for i in range(0, len(sample), 4096):
        check(pair, "".join(f"a{c}\u0301{c}" for c in sample[i:i + 4096]))


# Letters, precomposed and decomposing chars, marks of several classes, deleted and padded chars, a
# supplementary char: where the fast path hands stretches to the general path.
MARKED = st.text(alphabet=st.sampled_from(["a", "\u00e9", " ", "\u0301", "\u0316", "\u0334", "\x00", "\u4e2d",
                                           "\U0001F600", "\u0958", "\u094d", "\u0130", "\u1e09", "\uac00",
                                           "\u0345", "\u0f73", "\U0001D15E", "\u1100", "\u1161", "\u11a8",
                                           "\u0b47", "\u0b3e", "\u212b"]), max_size=30)


@given(text=MARKED)
def test_fuzz_marks_in_context(pair, text):
    check(pair, text)


def _composition_alphabet():
    # Marks of every combining class, chars that decompose (canonically), the chars that follow a starter
    # in their decompositions (a composition's second chars, starters among them), conjoining jamo and
    # plain letters: where a char's composition reaches back to a starter in an earlier char.
    marks = [chr(c) for c in range(0x300, 0x30000) if unicodedata.combining(chr(c))]
    decomposing = [chr(c) for c in range(0xA0, 0x30000)
                   if unicodedata.decomposition(chr(c)) and not unicodedata.decomposition(chr(c)).startswith("<")]
    seconds = sorted({d for c in decomposing for d in unicodedata.normalize("NFD", c)[1:]})
    jamo = [chr(c) for c in (0x1100, 0x1112, 0x1161, 0x1175, 0x11A8, 0x11C2, 0xAC00, 0xAC01, 0xD7A3)]
    return sorted(set(marks[::5] + decomposing[::7] + seconds + jamo + list("aeoAZ ")))


COMPOSITION_ALPHABET = _composition_alphabet()


@pytest.mark.parametrize("config", ["nfc", "nfkc", "whole_string_steps"])
@given(text=st.text(alphabet=st.sampled_from(COMPOSITION_ALPHABET), max_size=16))
def test_fuzz_composition_across_chars(config, text):
    check(stock_and_native(CONFIGS[config]), text)


# Long ASCII runs (upper and lower case, control chars) around chars that change the text's shape: the
# runs are translated block by block, before and after the first such char.
ASCII_RUNS = st.lists(st.one_of(st.text(alphabet=st.sampled_from(list("aAzZ@[`{ .\t\n\r\x00\x7f")), min_size=12, max_size=40),
                                st.sampled_from(["\u00e9", "\u4e2d", "\u00c4", "\u0130", "e\u0301"])), max_size=6).map("".join)


@pytest.mark.parametrize("config", ["lowercase", "bert_default", "bert_lowercase_only", "sequence", "nfc"])
@given(text=ASCII_RUNS)
def test_fuzz_ascii_runs(config, text):
    check(stock_and_native(CONFIGS[config]), text)


# Whitespace runs and single spaces, chars a step before or after a regex changes (composed, decomposed,
# lowercased to more chars, same-length NFKC outputs of other char boundaries) and the regexes' own chars:
# where the parts around a Replace regex hand their alignments on.
REGEX_PARTS = st.text(alphabet=st.sampled_from([" ", "\t", "\n", "\u00a0", "\u2000", "\u3000", "a", "A", "e",
                                                "\u0301", "\u00c9", "\u0130", "\u2026", "\ufb00", "\u03a3", "x",
                                                "q", "u", "z", ".", "\u1e9e", "\u4e2d"]), max_size=24)


@pytest.mark.parametrize("config", ["nfc_whitespace_lowercase", "replace_run_grow", "replace_regex_marks",
                                    "replace_regex_then_nfkc_lowercase", "replace_regex_after_prepend",
                                    "replace_regex_empty_matches", "nmt_nfkc_byte_level", "replace_regex_lookahead"])
@given(text=REGEX_PARTS)
def test_fuzz_parts_around_a_regex(config, text):
    check(stock_and_native(CONFIGS[config]), text)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_fuzz_bert_default(text):
    check(stock_and_native(CONFIGS["bert_default"]), text)


@pytest.mark.parametrize(("normalizer", "construct"), [
    (N.Replace(Regex("(?<=a++)b"), "b"), "lookbehind whose alternative holds a lookaround, an atomic group, a possessive"),
    (N.Sequence([N.NFC(), N.Replace(Regex("(a)(?=\\1)"), "")]), "backreference \\\\1 inside a lookaround"),
    (N.Replace(Regex(r"a\g<1>(b)"), ""), "subexpression call"),
])
def test_regex_the_compiler_cannot_express_is_reported(normalizer, construct):
    with pytest.raises(Unsupported, match=construct):
        normalizers.spec(_config(normalizer))


def test_no_normalizer_is_none():
    assert normalizers.spec(None) is None


def test_strip_removes_exactly_rust_whitespace():
    # Strip's whitespace is Rust char::is_whitespace: every BMP code point (all White_Space chars are
    # there) and a sample of the others at both ends, text only
    native = _native.Normalizer(normalizers.spec(_config(N.Strip())))
    code_points = [c for c in range(0x10000) if not 0xD800 <= c < 0xE000] + list(range(0x10000, 0x110000, 97))
    texts = [f"{chr(c)}x{chr(c)}" for c in code_points]
    assert [t for t in texts if native.normalize(t)[0] != N.Strip().normalize_str(t)] == []
