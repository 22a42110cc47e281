"""The rest of stock `tokenizers.Tokenizer`'s surface on hf_tagtok.Tokenizer: encode_batch_fast, the async
calls, components set in place (the native pipeline is rebuilt), training, from_buffer and post_process;
every result compared with stock's for the same calls."""
import asyncio

import pytest
import tokenizers
from tokenizers import models, normalizers, pre_tokenizers, processors, trainers

import hf_tagtok
from hf_tagtok import planner
from hf_tagtok.sample_text import multiscript_texts
from conformance import tokenizer_zoo
from conformance.tokenizer_mode import columns_diff, deep_diff

NAMES = [name for name in ("small_bert_processing", "small_trim_offsets", "small_wordpiece_prefix",
                           "small_added_strip", "small_metaspace_byte_fallback", "llama3")
         if name in tokenizer_zoo.available()]
TEXTS = ["Hello world, how are you?", "", "é naïve café 東京 😀", "x <|special|> y", " <|lstrip|> a <|rstrip|> b "]
WORDS = [text.split(" ") for text in TEXTS]


@pytest.fixture(params=NAMES)
def pair_of_tokenizers(request):
    stock = tokenizer_zoo.load(request.param)
    return stock, hf_tagtok.Tokenizer.from_hf(stock)


def _diffs(mine, theirs):
    return [deep_diff(m, t) for m, t in zip(mine, theirs, strict=True)]


@pytest.mark.parametrize("settings", ("plain", "truncate_pad"))
@pytest.mark.parametrize("add_special_tokens", (True, False))
def test_encode_batch_fast_like_stock(pair_of_tokenizers, settings, add_special_tokens):
    stock, ours = pair_of_tokenizers
    if settings == "truncate_pad":
        for tokenizer in (stock, ours):
            tokenizer.enable_truncation(8)
            tokenizer.enable_padding(direction="left", pad_token="<p>", pad_id=1)
    for inputs, pretokenized in ((TEXTS, False), (WORDS, True)):
        mine = ours.encode_batch_fast(inputs, is_pretokenized=pretokenized, add_special_tokens=add_special_tokens)
        theirs = stock.encode_batch_fast(inputs, is_pretokenized=pretokenized, add_special_tokens=add_special_tokens)
        assert not isinstance(mine[0], tokenizers.Encoding), "stock ran, not the native path"
        assert _diffs(mine, theirs) == [None] * len(inputs)
    pairs = list(zip(TEXTS, reversed(TEXTS)))
    assert _diffs(ours.encode_batch_fast(pairs), stock.encode_batch_fast(pairs)) == [None] * len(pairs)


def test_async_calls_like_stock(pair_of_tokenizers):
    stock, ours = pair_of_tokenizers

    async def both(name, *args):
        return await getattr(ours, name)(*args), await getattr(stock, name)(*args)

    async def run():
        mine, theirs = await both("async_encode", TEXTS[0], TEXTS[2])
        assert deep_diff(mine, theirs) is None
        for name in ("async_encode_batch", "async_encode_batch_fast"):
            mine, theirs = await both(name, TEXTS)
            assert _diffs(mine, theirs) == [None] * len(TEXTS)
        ids = [encoding.ids for encoding in theirs]
        mine, theirs = await both("async_decode_batch", ids)
        assert mine == theirs

    asyncio.run(run())


def test_components_set_in_place_replan_like_stock(pair_of_tokenizers):
    stock, ours = pair_of_tokenizers
    for name, value in (("normalizer", normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])),
                        ("pre_tokenizer", pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                                   pre_tokenizers.ByteLevel()]))):
        for tokenizer in (stock, ours):
            setattr(tokenizer, name, value)
        assert str(getattr(ours, name)) == str(getattr(stock, name))
        assert _diffs(ours.encode_batch(TEXTS), stock.encode_batch(TEXTS)) == [None] * len(TEXTS)


def test_python_component_falls_back_and_says_why():
    stock = tokenizer_zoo.load("small_bert_processing")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert not isinstance(ours.encode(TEXTS[0]), tokenizers.Encoding)

    class SplitOnSpace:
        def pre_tokenize(self, pretokenized):
            pretokenized.split(lambda _, normalized: normalized.split(" ", "removed"))

    for tokenizer in (stock, ours):
        tokenizer.pre_tokenizer = pre_tokenizers.PreTokenizer.custom(SplitOnSpace())
    report = ours.acceleration
    assert not report["pre_tokenizer"]["native"]
    assert "cannot serialize" in report["pre_tokenizer"]["reason"]
    assert _diffs(ours.encode_batch(TEXTS), stock.encode_batch(TEXTS)) == [None] * len(TEXTS)
    # the columnar call reads stock's ids (and offsets when asked) and lays out the native post-processor's tokens
    assert ours._planned().layout is not None
    for add_special_tokens in (True, False):
        expected = stock.encode_batch(TEXTS, add_special_tokens=add_special_tokens)
        arrays = ours.encode_batch_arrays(TEXTS, add_special_tokens=add_special_tokens)
        assert columns_diff(arrays, expected) is None
        lean = ours.encode_batch_arrays(TEXTS, add_special_tokens=add_special_tokens, offsets=False)
        assert columns_diff(lean._replace(offsets=arrays.offsets), expected) is None and lean.offsets is None
    wrapped = hf_tagtok.Tokenizer(stock)  # built on such a tokenizer: the same fallback, no exception
    assert not wrapped.acceleration["model"]["native"]
    assert _diffs(wrapped.encode_batch(TEXTS), stock.encode_batch(TEXTS)) == [None] * len(TEXTS)


def test_python_component_rewriting_text_into_itself_keeps_stocks_offsets():
    """A Python component's pieces cannot be told from their text: rewriting "ab" into "ab" keeps every piece's
    text and id but moves offsets, so the fallback must read stock's offsets, never rebuild them from pieces."""
    class SplitOnSpace:
        def pre_tokenize(self, pretokenized):
            pretokenized.split(lambda _, normalized: normalized.split(" ", "removed"))

    class RewriteThenSplit:
        def pre_tokenize(self, pretokenized):
            def rewrite(_, normalized):
                normalized.replace("ab", "ab")
                return normalized.split(" ", "removed")
            pretokenized.split(rewrite)

    texts = ["grab a cab", "abab ab", "x", ""]
    split, rewritten = tokenizer_zoo.load("small_bert_processing"), tokenizer_zoo.load("small_bert_processing")
    split.pre_tokenizer = pre_tokenizers.PreTokenizer.custom(SplitOnSpace())
    rewritten.pre_tokenizer = pre_tokenizers.PreTokenizer.custom(RewriteThenSplit())
    plain, moved = split.encode_batch(texts), rewritten.encode_batch(texts)
    assert [e.ids for e in plain] == [e.ids for e in moved]
    assert [e.offsets for e in plain[:2]] != [e.offsets for e in moved[:2]]
    ours = hf_tagtok.Tokenizer.from_hf(tokenizer_zoo.load("small_bert_processing"))
    ours.pre_tokenizer = pre_tokenizers.PreTokenizer.custom(RewriteThenSplit())
    assert _diffs(ours.encode_batch(texts), moved) == [None] * len(texts)
    assert columns_diff(ours.encode_batch_arrays(texts), moved) is None


def test_stripping_token_names_stay_those_of_encode_time():
    """A stripping added token's string is read from stock when first asked for; switching
    encode_special_tokens in between must not change what an encoding made before says."""
    stock = tokenizer_zoo.load("small_added_flags")
    ours = hf_tagtok.Tokenizer.from_str(stock.to_str())
    texts = ["ab<|rstrip|>  cd", "x <|lstrip|>y", "<|rstrip|>"]
    for flag in (False, True):
        stock.encode_special_tokens = ours.encode_special_tokens = flag
        expected, encoded = stock.encode_batch(texts), ours.encode_batch(texts)
        stock.encode_special_tokens = ours.encode_special_tokens = not flag
        assert [e.tokens for e in encoded] == [e.tokens for e in expected]
        assert _diffs(encoded, expected) == [None] * len(texts)


def test_trained_in_place_encodes_like_its_stock_twin():
    corpus = ["low lower lowest", "newer wider newest", "the lowest newer"] * 20

    def untrained():
        tokenizer = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
        tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
        return tokenizer

    ours, stock = hf_tagtok.Tokenizer(untrained()), untrained()
    for tokenizer in (ours, stock):
        tokenizer.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=40, special_tokens=["[UNK]"]))
    assert ours.get_vocab() == stock.get_vocab()
    mine, theirs = ours.encode_batch(corpus[:3] + ["unseen lowly"]), stock.encode_batch(corpus[:3] + ["unseen lowly"])
    assert not isinstance(mine[0], tokenizers.Encoding)
    assert _diffs(mine, theirs) == [None] * 4


def test_from_buffer_post_process_and_added_tokens_decoder_like_stock(pair_of_tokenizers):
    stock, ours = pair_of_tokenizers
    loaded = hf_tagtok.Tokenizer.from_buffer(stock.to_str().encode("utf-8"))
    assert _diffs(loaded.encode_batch(TEXTS), stock.encode_batch(TEXTS)) == [None] * len(TEXTS)
    assert {i: str(t) for i, t in ours.get_added_tokens_decoder().items()} == \
        {i: str(t) for i, t in stock.get_added_tokens_decoder().items()}
    raw = stock.encode(TEXTS[0], add_special_tokens=False)
    assert deep_diff(ours.post_process(raw), stock.post_process(raw)) is None


def test_components_changed_on_the_stock_object_are_seen(pair_of_tokenizers):
    stock, ours = pair_of_tokenizers
    template = processors.TemplateProcessing(single="[X] $A [X]", pair="$A [X] $B:1", special_tokens=[("[X]", 1)])
    for tokenizer in (stock, ours.stock):
        tokenizer.post_processor = template
        tokenizer.normalizer = normalizers.Lowercase()
    native = all(entry["native"] for entry in ours.acceleration.values())  # one stripping token is not
    assert native == (not isinstance(ours.encode(TEXTS[0]), tokenizers.Encoding))  # the report says what ran
    assert _diffs(ours.encode_batch(TEXTS), stock.encode_batch(TEXTS)) == [None] * len(TEXTS)
    pairs = list(zip(TEXTS, reversed(TEXTS)))
    assert _diffs(ours.encode_batch(pairs), stock.encode_batch(pairs)) == [None] * len(pairs)
    ours.stock.encode_special_tokens = stock.encode_special_tokens = True
    assert _diffs(ours.encode_batch(TEXTS), stock.encode_batch(TEXTS)) == [None] * len(TEXTS)


def test_a_shared_call_lighter_than_the_staleness_check_goes_to_stock(monkeypatch):
    """Sharing its stock object, the tokenizer checks at every call that it is unchanged (planner.plan_key), which
    reads a Precompiled normalizer's whole charsmap: stock encodes a call that weighs less (planner.weighs_chars,
    planner.fewest_chars_worth_a_key), unchecked; a heavier one is checked and sees a normalizer set on it."""
    try:
        stock = tokenizer_zoo.load("t5_style")
    except tokenizer_zoo.Unavailable as error:
        pytest.skip(str(error))
    ours = hf_tagtok.Tokenizer(stock)
    long_texts = [" ".join(multiscript_texts()[:20])] * 2
    fewest = planner.fewest_chars_worth_a_key(planner.plan_key(stock, planner.next_added_id(stock)))
    assert fewest > 0 and planner.weighs_chars(long_texts, fewest)
    checks = []
    plan_key = planner.plan_key
    monkeypatch.setattr(planner, "plan_key", lambda *args: checks.append(args) or plan_key(*args))
    short = [long_texts[0][:fewest // 4], long_texts[0][fewest // 4:fewest // 2]]
    assert not planner.weighs_chars(short, fewest)

    def assert_calls_like_stock(texts):
        assert deep_diff(ours.encode(texts[0], texts[1]), stock.encode(texts[0], texts[1])) is None
        assert _diffs(ours.encode_batch(texts), stock.encode_batch(texts)) == [None] * len(texts)
        assert _diffs(ours.encode_batch_fast(texts), stock.encode_batch_fast(texts)) == [None] * len(texts)
        arrays, lean = ours.encode_batch_arrays(texts), ours.encode_batch_arrays(texts, offsets=False)
        assert columns_diff(arrays, stock.encode_batch(texts)) is None
        assert columns_diff(lean._replace(offsets=arrays.offsets), stock.encode_batch(texts)) is None
        assert lean.offsets is None

    assert_calls_like_stock(short)
    assert not checks
    assert_calls_like_stock(long_texts)
    assert checks
    stock.normalizer = normalizers.Sequence([stock.normalizer, normalizers.Lowercase()])
    assert_calls_like_stock([text.upper() for text in long_texts])


def test_tokens_added_on_the_stock_object_are_seen(pair_of_tokenizers):
    stock, ours = pair_of_tokenizers
    texts = [text + " qzqzq <zq9>" for text in TEXTS]
    assert _diffs(ours.encode_batch(texts), stock.encode_batch(texts)) == [None] * len(texts)
    shared = ours.stock
    ours.encode(texts[0])  # planned before the tokens are added
    for tokenizer in (stock, shared):
        tokenizer.add_tokens(["qzqzq"])
    assert _diffs(ours.encode_batch(texts), stock.encode_batch(texts)) == [None] * len(texts)
    for tokenizer in (stock, shared):
        tokenizer.add_special_tokens(["<zq9>"])
    assert deep_diff(ours.encode(texts[0]), stock.encode(texts[0])) is None
    assert _diffs(ours.encode_batch(texts), stock.encode_batch(texts)) == [None] * len(texts)


def test_bpe_dropout_set_on_the_model_falls_back_to_stock():
    stock = tokenizer_zoo.load("small_bert_processing")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    ours.stock.model.dropout = 0.5
    assert not ours.acceleration["model"]["native"]
    assert "dropout" in ours.acceleration["model"]["reason"]
    assert isinstance(ours.encode(TEXTS[0]), tokenizers.Encoding)  # stock's own (random) merges ran
    ours.stock.model.dropout = None
    assert not isinstance(ours.encode(TEXTS[0]), tokenizers.Encoding)


def _letters_bpe(merged, extra=(), **settings):
    """A BPE over the letters a-h plus each merge's two halves joined and the `extra` tokens, whitespace-split."""
    vocab = {char: index for index, char in enumerate("abcdefgh")}
    for token in [left + right for left, right in merged] + list(extra):
        vocab[token] = len(vocab)
    tokenizer = tokenizers.Tokenizer(models.BPE(vocab, list(merged), **settings))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


def _change_model(tokenizer, change):
    if change == "model of the same size":
        tokenizer.model = _letters_bpe([("b", "c"), ("d", "e")]).model
    elif change == "trained in place":
        trainer = trainers.BpeTrainer(vocab_size=tokenizer.get_vocab_size(), show_progress=False)
        tokenizer.train_from_iterator(["hg hg hg fe fe hgf", "a b c d e f g h"], trainer=trainer)
    elif change == "ignore_merges":
        tokenizer.model.ignore_merges = False
    else:
        tokenizer.model.unk_token = "a"


@pytest.mark.parametrize("change", ["model of the same size", "trained in place", "ignore_merges", "unk_token"])
def test_a_model_changed_on_the_stock_object_is_seen(change):
    """A model of the same type and vocabulary size put in the place of the planned one, one trained in place
    to the same size, and settings set on the model. Expected: a stock object given the same change before
    any encode (stock's trainer keeps the model's word cache, so a stock object that encoded before its
    training goes on giving the old tokens for the words it cached)."""
    def build():
        if change == "ignore_merges":  # "abc" is a token that no merge makes
            return _letters_bpe([("a", "b")], extra=["abc"], ignore_merges=True)
        return _letters_bpe([("a", "b"), ("c", "d")])

    texts = ["abcde", "ab cd de", "bcd hgf", "abc", "a b c d e f g h", "xyz"]
    ours = hf_tagtok.Tokenizer.from_hf(build())
    assert ours.acceleration["model"]["native"]
    assert _diffs(ours.encode_batch(texts), build().encode_batch(texts)) == [None] * len(texts)
    expected = build()
    for tokenizer in (expected, ours.stock):
        _change_model(tokenizer, change)
    assert ours.stock.get_vocab_size() == build().get_vocab_size()
    theirs = expected.encode_batch(texts)
    assert [e.ids for e in theirs] != [e.ids for e in build().encode_batch(texts)]  # the change matters here
    mine = ours.encode_batch(texts)
    assert not isinstance(mine[0], tokenizers.Encoding), "stock ran, not the native path"
    assert _diffs(mine, theirs) == [None] * len(texts)


def test_stock_keeps_its_word_cache_through_training_in_place():
    """The stock behaviour docs/architecture.md reports: a word encoded before training keeps its old tokens."""
    used, fresh = _letters_bpe([("a", "b"), ("c", "d")]), _letters_bpe([("a", "b"), ("c", "d")])
    used.encode("abcde")
    for tokenizer in (used, fresh):
        _change_model(tokenizer, "trained in place")
    assert used.encode("abcde").ids != fresh.encode("abcde").ids
    assert used.encode("abcdf").ids == fresh.encode("abcdf").ids


def test_calls_on_stock_after_training_in_place_answer_as_a_fresh_load():
    pairs = [("abcde", "ab cd"), ("hgf", "abc")]
    ours = hf_tagtok.Tokenizer.from_hf(_letters_bpe([("a", "b"), ("c", "d")]))
    ours.encode_batch_fast(pairs)  # pairs run on stock (docs/architecture.md), whose word cache keeps them
    ours.train_from_iterator(["hg hg hg fe fe hgf", "a b c d e f g h"],
                             trainers.BpeTrainer(vocab_size=ours.get_vocab_size(), show_progress=False))
    fresh = tokenizers.Tokenizer.from_str(ours.to_str())
    assert _diffs(ours.encode_batch_fast(pairs), fresh.encode_batch_fast(pairs)) == [None] * len(pairs)
    assert _diffs(ours.encode_batch(pairs), fresh.encode_batch(pairs)) == [None] * len(pairs)


# A score stock's JSON reader lands an ULP away from (it reads back -7.519638061523437): held exactly, "aa"
# ties with "a" "a"; read back, one of them wins.
_DRIFTING_SCORE = -7.5196380615234375


def _unigram_with_a_tie():
    vocab = [("<unk>", 0.0), ("a", _DRIFTING_SCORE), ("aa", 2 * _DRIFTING_SCORE)]
    tokenizer = tokenizers.Tokenizer(models.Unigram(vocab, 0, False))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tokenizer


def test_stock_moves_unigram_scores_through_its_own_json():
    """The stock behaviour docs/architecture.md reports: a copy read back from stock's JSON breaks the tie."""
    stock = _unigram_with_a_tie()
    assert stock.encode("aaaa").tokens != tokenizers.Tokenizer.from_str(stock.to_str()).encode("aaaa").tokens


def test_from_hf_keeps_unigram_scores_as_stock_holds_them():
    stock = _unigram_with_a_tie()
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    texts = ["aaaa", "a aa aaa aaaaa", "b aab"]
    assert _diffs(ours.encode_batch(texts), stock.encode_batch(texts)) == [None] * len(texts)
    assert columns_diff(ours.encode_batch_arrays(texts), stock.encode_batch(texts)) is None
    assert ours.encode(texts[0]).tokens == stock.encode(texts[0]).tokens


def test_component_attribute_set_in_place_is_seen():
    stock = tokenizer_zoo.load("small_bytelevel_prefix")
    ours = hf_tagtok.Tokenizer.from_hf(stock)  # a private stock object: no per-call check until one is shared
    for tokenizer in (stock, ours):
        tokenizer.pre_tokenizer.add_prefix_space = False
    assert _diffs(ours.encode_batch(TEXTS), stock.encode_batch(TEXTS)) == [None] * len(TEXTS)
