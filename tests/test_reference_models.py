"""The pure-Python BPE, WordPiece and WordLevel (hf_tagtok/_reference_models.py) against stock's models, and
the native engine against them, on the zoo's members over a sample of the multi-script corpus.

Two levels:
- model: every distinct piece stock's normalizer and pre-tokenizer cut from the sample, tokenized by
  the reference and by `stock.model.tokenize` (ids, tokens, byte offsets);
- pipeline: hf_tagtok.Tokenizer's ids and word ids for a whole text equal the reference model run on stock's
  pieces, and stock's own encoding. Texts where an added token could match are left to the conformance
  harness: added-token splitting is not part of these references.
"""
import doctest
import json

import pytest

import hf_tagtok
from conformance import tokenizer_zoo
from hf_tagtok import _reference_models, sample_text

NAMES = ["llama3", "gpt2", "bert", *tokenizer_zoo.SMALL]
# ~47 documents of every script family, cut to 1,000 chars: members without a splitting pre-tokenizer make
# the whole text one word, and the reference merges by rescanning the word
SAMPLE = [text[:1000] for text in sample_text.multiscript_texts()[::9]]


@pytest.fixture(scope="module", params=[name for name in NAMES if name in tokenizer_zoo.available()])
def member(request):
    try:
        stock = tokenizer_zoo.load(request.param)
    except tokenizer_zoo.Unavailable as error:
        pytest.skip(str(error))
    stock.no_truncation()  # bert ships truncation and padding to 128: this file is about the model alone
    stock.no_padding()
    config = json.loads(stock.to_str())
    if config["model"]["type"] not in _reference_models.MODELS:
        pytest.skip(f"{config['model']['type']} has no pure-Python reference")
    return stock, config, _reference_models.from_config(config["model"])


def _pieces(stock, text):
    normalized = stock.normalizer.normalize_str(text) if stock.normalizer is not None else text
    if stock.pre_tokenizer is None:
        return [normalized] if normalized else []
    return [piece for piece, _ in stock.pre_tokenizer.pre_tokenize_str(normalized)]


def _added_token_may_match(stock, config, text):
    """Whether an added token's content, raw or normalized, occurs in the text, raw or normalized."""
    def normalize(string):
        return stock.normalizer.normalize_str(string) if stock.normalizer is not None else string

    contents = {form for token in config["added_tokens"] for form in (token["content"], normalize(token["content"]))}
    return any(content in form for content in contents for form in (text, normalize(text)))


def test_model_equals_stock_model(member):
    stock, _, reference = member
    words = {piece: None for text in SAMPLE for piece in _pieces(stock, text)}
    assert len(words) > 40
    for word in words:
        expected = [(token.id, token.value, token.offsets) for token in stock.model.tokenize(word)]
        assert reference.tokenize(word) == expected, word


def test_native_equals_reference_equals_stock(member):
    stock, config, reference = member
    native = hf_tagtok.Tokenizer.from_hf(stock)
    texts = [text for text in SAMPLE if not _added_token_may_match(stock, config, text)]
    assert len(texts) >= 5  # small_added_rstrip_overlap adds " ": few texts have no space
    for text in texts:
        ids, word_ids = [], []
        for index, piece in enumerate(_pieces(stock, text)):
            for id_, _, _ in reference.tokenize(piece):
                ids.append(id_)
                word_ids.append(index)
        expected = stock.encode(text, add_special_tokens=False)
        got = native.encode(text, add_special_tokens=False)
        assert ids == expected.ids, text[:80]
        assert word_ids == expected.word_ids, text[:80]
        assert (got.ids, got.word_ids) == (ids, word_ids), text[:80]


def test_docstring_example_runs():
    assert doctest.testmod(_reference_models).failed == 0


UNKNOWN_OPTIONS = {
    "unk": dict(unk_token="<unk>", fuse_unk=False),
    "fuse_unk": dict(unk_token="<unk>", fuse_unk=True),
    "byte_fallback_affixes": dict(byte_fallback=True, continuing_subword_prefix="##", end_of_word_suffix="</w>"),
    "byte_fallback_unk": dict(unk_token="<unk>", byte_fallback=True),
    "drop_unknown": dict(),
}


@pytest.mark.parametrize("options", UNKNOWN_OPTIONS.values(), ids=UNKNOWN_OPTIONS.keys())
def test_unknown_chars(options):
    """Runs of chars missing from the vocabulary, which no zoo member reaches with every option: unknown
    tokens fused or not, `<0xXX>` bytes of the affixed char, or the char dropped (offsets then shift)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    prefix, suffix = options.get("continuing_subword_prefix", ""), options.get("end_of_word_suffix", "")
    vocab = {"<unk>": 0}
    for byte in range(256):
        if byte not in (0xA9, 0xE2):  # so that '©' and '€' have no byte fallback: unknown tokens all the same
            vocab[f"<0x{byte:02X}>"] = len(vocab)
    for char in "abc":
        for symbol in (char, prefix + char, char + suffix, prefix + char + suffix):
            vocab.setdefault(symbol, len(vocab))
    vocab.setdefault("ab", len(vocab))
    stock = Tokenizer(models.BPE(vocab, [("a", prefix + "b")], **options))
    stock.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    reference = _reference_models.from_config(json.loads(stock.to_str())["model"])
    native = hf_tagtok.Tokenizer.from_hf(stock)
    for text in ["ab", "xyab", "axyzb", "abé€b", "ĀĀĀa b©", "é€©x", "a€"]:
        for word in text.split():
            expected = [(token.id, token.value, token.offsets) for token in stock.model.tokenize(word)]
            assert reference.tokenize(word) == expected, word
        expected = stock.encode(text)
        assert native.encode(text).ids == expected.ids, text
        assert [id_ for word in text.split() for id_, _, _ in reference.tokenize(word)] == expected.ids, text
