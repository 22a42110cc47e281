"""The native Precompiled normalizer (SentencePiece charsmap) vs stock `tokenizers.normalizers.Precompiled`:
normalized text and every normalized char's original range, on random multi-script text.

Charsmaps come from the `sentencepiece` trainer (its nmt_nfkc and nfkc_cf rules, and a rule table with
multi-char keys, deletions and expansions), as SentencePiece models carry them. Stock's alignment is
read as tests/normalizer_alignment.py reads it: a stock Tokenizer that makes each normalized char one token.
"""
import io
import random

import pytest
from tokenizers import Regex, normalizers as N

from hf_tagtok import normalizers
from hf_tagtok.models import Unsupported
from hf_tagtok.sample_text import multiscript_texts
from normalizer_alignment import check, stock_and_native

_native = pytest.importorskip("hf_tagtok._native")
sentencepiece = pytest.importorskip("sentencepiece")
sentencepiece_model_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")

# rule table: source code points -> target code points (hex); a multi-char key that shares its first
# char with a one-char key, a deletion, expansions, a key ending in a combining mark, keys that start with
# a combining mark and with a spacing mark (chars a cluster rule always joins to the char before) and with
# an emoji (which starts a cluster after a ZWJ unless an emoji came before it)
RULES = {"61": "62", "61 301": "41 42 43", "1E": "", "7F": "", "2460": "28 31 29", "FF76": "30AB", "FF76 FF9E": "30AC",
         "D55C": "1112 1161 11AB", "1F600": "3A 29", "65 301": "E9", "200B": "", "3000": "20", "308 301": "2A",
         "93F": "940", "A9 301": "2A"}

# pools the random texts draw from: combining marks, Hangul jamo and syllables, full-width and
# half-width forms, control chars, emoji ZWJ sequences and modifiers, regional indicators, CR/LF,
# Indic conjuncts, prepended concatenation marks, chars newer than stock's Unicode
POOLS = ["abc xyz ", "e\u0301\u0308\u0323a", "\u1100\u1161\u11a8\uac00\uac01\ud55c", "\r\n\r\n\t\x00\x1e\x7f\x85",
         "\U0001F600\u200d\U0001F469\U0001F467\U0001F3FB\u2764\ufe0f", "\U0001F1E6\U0001F1E7\U0001F1E8",
         "\uff76\uff9e\uff21\uff10\u3000\uff61", "\u0915\u094d\u0937\u093f\u200c\u200d\u0924", "\u0600\u0601\u06dda",
         "\u00e9\u00c5\u2126\u212b\ufb01\u2460\u2163", "\u0e01\u0e33\u0e48", "\u200b\ufeff\u00ad\u2028",
         "\u01c4\u01c5\u1e9e", "\u05c8\u0b53\u1ade", "\u0628\u0650\u0633\u0652\u0645\u0650",
         "x\u0308\u0301\u093f\u0915"]


def _charsmap(tmp_path_factory, rule=None, rules=None):
    options = {}
    if rules is not None:
        path = tmp_path_factory.mktemp("rules") / "rules.tsv"
        path.write_text("".join(f"{source}\t{target}\n" for source, target in rules.items()))
        options["normalization_rule_tsv"] = str(path)
    else:
        options["normalization_rule_name"] = rule
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(["probe text for a charsmap"] * 20),
                                             model_writer=model, model_type="char", vocab_size=16,
                                             hard_vocab_limit=False, minloglevel=2, num_threads=1,
                                             add_dummy_prefix=False, remove_extra_whitespaces=False, **options)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    return proto.normalizer_spec.precompiled_charsmap


@pytest.fixture(scope="module", params=["nmt_nfkc", "nfkc_cf", "rules"])
def pair(request, tmp_path_factory):
    charsmap = (_charsmap(tmp_path_factory, rules=RULES) if request.param == "rules"
                else _charsmap(tmp_path_factory, rule=request.param))
    return stock_and_native(N.Precompiled(charsmap))


def test_random_multiscript(pair):
    rng = random.Random(25)
    for _ in range(3000):
        text = "".join(rng.choice(rng.choice(POOLS)) for _ in range(rng.randint(0, 14)))
        check(pair, text)


def test_random_code_points(pair):
    rng = random.Random(26)
    for _ in range(1000):
        text = "".join(chr(rng.choice([rng.randrange(0x80), rng.randrange(0x3000), rng.randrange(0x30000, 0x110000),
                                       rng.randrange(0x110000)]))
                       for _ in range(rng.randint(1, 10)))
        check(pair, text.encode("utf-8", "replace").decode("utf-8", "replace").replace("?", "\u0301"))


@pytest.mark.parametrize("text", ["", "\x7f", "\x7fg", "\x1e\x1eg", "g\x1e", "a\x7f\u0301b", "\r\n", "\uff76\uff9e",
                                  "\uff76\u0301", "a\u0301\u0301", "\u0915\u094d\u0915\u0301", "\U0001F1E6\U0001F1E7\u0301",
                                  "x\u200bx", "\u200b\u200bx\u200b", "\u0600a\u0301", "\u0600\u0600a\u0301b",
                                  "x\u0301\u0308y\u0301", "\u0915\u094d\u0937\u093f\u0301", "\u0e01\u0e33\u0e48a\u0301", "\u2460\x1e", "x\u2460\u0301\x1e",
                                  "x\u200d\u00a9\u0301", "\U0001F600\u200d\u00a9\u0301", "x\u0308\u0301\u093f"])
def test_edges(pair, text):
    check(pair, text)


def test_corpus(pair):
    for text in multiscript_texts():
        check(pair, text)


def test_in_a_sequence(tmp_path_factory):
    """Precompiled after other steps (no fast path), after a leading Prepend (its prefix goes through the
    clusters too) and before other steps."""
    charsmap = _charsmap(tmp_path_factory, rule="nmt_nfkc")
    for stock in (N.Sequence([N.Lowercase(), N.Precompiled(charsmap), N.Replace(" ", "\u2581")]),
                  N.Sequence([N.Prepend("\u2581"), N.Precompiled(charsmap), N.NFD()]),
                  N.Sequence([N.Prepend("\u2581"), N.Precompiled(charsmap), N.Lowercase()]),
                  N.Sequence([N.Precompiled(charsmap), N.Replace(Regex(" {2,}"), " ")])):
        triple = stock_and_native(stock)
        rng = random.Random(27)
        for _ in range(1000):
            check(triple, "".join(rng.choice(rng.choice(POOLS)) for _ in range(rng.randint(0, 12))))


def test_unparsable_charsmap_is_unsupported():
    with pytest.raises(Unsupported, match="Precompiled"):
        normalizers.spec({"type": "Precompiled", "precompiled_charsmap": "AAAA"})  # a trie of 0 units
    with pytest.raises(Unsupported, match="Precompiled"):
        normalizers.spec({"type": "Precompiled", "precompiled_charsmap": "not base64!"})
