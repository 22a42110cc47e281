"""Vocabularies whose ids have holes (gaps, 10**8, 2**31 - 1): native, sized by the number of tokens, and
equal to stock in ids, tokens and offsets. Every expectation is stock's own output for the same JSON."""
import json
import os
import subprocess
import sys

import pytest
import tokenizers

import hf_tagtok
from hf_tagtok.pre_tokenizers import byte_chars

TEXTS = ["abc bc ab", "c ab c", "zz abc", "", "a b c abcabc", "ab  cab\tba", "[X] ab [X]c"]
PAIRS = [("ab c", "bc a"), ("", "abc")]
HUGE = [2**31 - 1, 10**8]


def config(model, pre_tokenizer=None, post_processor=None, added=()):
    return json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": list(added),
                       "normalizer": None, "pre_tokenizer": pre_tokenizer or {"type": "Whitespace"},
                       "post_processor": post_processor, "decoder": None, "model": model})


def bpe(vocab, merges, **options):
    return {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab, "merges": merges, **options}


def added(content, token_id):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def template(cls_id, sep_id):
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls_id], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [sep_id], "tokens": ["[SEP]"]}}}


def spread(tokens, large):
    """tokens -> ids with holes: none below len(tokens) + 5 (stock numbers new added tokens from the
    vocabulary's size: the first five stay clear of the vocabulary), two skipped between tokens, and the
    last token at `large`."""
    vocab = {token: len(tokens) + 5 + 3 * index for index, token in enumerate(tokens)}
    vocab[tokens[-1]] = large
    return vocab


def assert_same(ours, stock, texts=TEXTS):
    for text in texts:
        mine, theirs = ours.encode(text), stock.encode(text)
        assert (mine.ids, mine.tokens, mine.offsets, mine.type_ids) == \
            (theirs.ids, theirs.tokens, theirs.offsets, theirs.type_ids), text
    for first, second in PAIRS:
        mine, theirs = ours.encode(first, second), stock.encode(first, second)
        assert (mine.ids, mine.tokens, mine.offsets) == (theirs.ids, theirs.tokens, theirs.offsets)
    mine, theirs = ours.encode_batch(texts), stock.encode_batch(texts)
    assert [(e.ids, e.tokens, e.offsets) for e in mine] == [(e.ids, e.tokens, e.offsets) for e in theirs]
    arrays = ours.encode_batch_arrays(texts)
    assert arrays.ids.tolist() == [i for e in theirs for i in e.ids]


def load(text):
    stock, ours = tokenizers.Tokenizer.from_str(text), hf_tagtok.Tokenizer.from_str(text)
    assert all(stage["native"] for stage in ours.acceleration.values()), ours.acceleration
    return stock, ours


CHAR_TOKENS = ["a", "b", "c", "z", "ab", "bc", "abc", "[UNK]", "##b", "##c", "##bc"]


@pytest.mark.parametrize("large", [*HUGE, None])
def test_bpe_with_sparse_ids(large):
    vocab = spread(["[UNK]", "a", "b", "c", "ab", "bc", "abc"], large or 40)
    model = bpe(vocab, ["a b", "b c", "ab c"], unk_token="[UNK]")
    stock, ours = load(config(model, post_processor=template(vocab["ab"], 2**31 - 2),
                              added=[added("[X]", 12), added("[CLS]", 9), added("[SEP]", 10)]))
    assert_same(ours, stock)


def test_added_token_numbered_onto_a_vocabulary_id_falls_back():
    vocab = {"a": 0, "b": 4, "c": 2, "ab": 3}  # four tokens: stock gives a new added token id 4, as "b" has
    text = config(bpe(vocab, ["a b"]), added=[added("[X]", 9)])
    stock, ours = tokenizers.Tokenizer.from_str(text), hf_tagtok.Tokenizer.from_str(text)
    assert stock.token_to_id("[X]") == 4
    assert not ours.acceleration["added_tokens"]["native"]
    assert "'b'" in ours.acceleration["added_tokens"]["reason"]
    assert_same(ours, stock)


@pytest.mark.parametrize("large", [*HUGE, None])
def test_bpe_byte_fallback_and_fused_unk_with_sparse_ids(large):
    tokens = ["<unk>", *(f"<0x{byte:02X}>" for byte in range(256)), "a", "b", "ab"]
    vocab = spread(tokens, large or 900)
    for options in ({"byte_fallback": True}, {"fuse_unk": True}):
        stock, ours = load(config(bpe(vocab, ["a b"], unk_token="<unk>", **options)))
        assert_same(ours, stock, [*TEXTS, "aé b€ zz"])


@pytest.mark.parametrize("large", [*HUGE, None])
def test_byte_level_bpe_with_trimmed_offsets_and_sparse_ids(large):
    alphabet = byte_chars()
    merges = ["Ġ a", "Ġa b", "b c"]
    vocab = spread([*alphabet, "Ġa", "Ġab", "bc"], large or 2000)
    byte_level = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    stock, ours = load(config(bpe(vocab, merges), pre_tokenizer=byte_level, post_processor=byte_level,
                              added=[added("[X]", 5)]))
    assert_same(ours, stock, [*TEXTS, " ab  bc é", "ab\n\n bc "])


@pytest.mark.parametrize("kind", ["WordPiece", "WordLevel"])
@pytest.mark.parametrize("large", [*HUGE, None])
def test_vocabulary_models_with_sparse_ids(kind, large):
    vocab = spread(CHAR_TOKENS, large or 77)
    model = {"type": kind, "vocab": vocab, "unk_token": "[UNK]"}
    if kind == "WordPiece":
        model.update(continuing_subword_prefix="##", max_input_chars_per_word=100)
    stock, ours = load(config(model, post_processor=template(2**31 - 1, 10**8 + 7),
                              added=[added("[CLS]", 0), added("[SEP]", 0)]))
    assert_same(ours, stock)


@pytest.mark.parametrize("token_id", [*HUGE, 7])
def test_unigram_added_tokens_take_the_ids_stock_gives(token_id):
    # a Unigram vocabulary is a list (its ids are dense); only added tokens could name far ids
    pieces = [["<unk>", 0.0], ["a", -1.0], ["b", -1.5], ["c", -2.0], ["ab", -1.2], ["bc", -2.5], ["z", -3.0]]
    model = {"type": "Unigram", "unk_id": 0, "vocab": pieces, "byte_fallback": False}
    stock, ours = load(config(model, added=[added("[X]", token_id), added("ab", token_id + 1)]))
    assert_same(ours, stock)


CHILD = """
import json, sys
import tokenizers
import hf_tagtok
vocab = {"a": 0, "b": 1, "c": 2, "ab": int(sys.argv[1])}
text = json.dumps({"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": {"type": "Whitespace"},
                   "post_processor": None, "decoder": None, "truncation": None, "padding": None,
                   "model": {"type": "BPE", "vocab": vocab, "merges": ["a b"]}})
open(sys.argv[2], "w").write(text)
stock = tokenizers.Tokenizer.from_str(text)
loaded = [hf_tagtok.Tokenizer.from_str(text), hf_tagtok.Tokenizer.from_file(sys.argv[2]),
          hf_tagtok.Tokenizer.from_hf(stock)]
for ours in loaded:
    print(json.dumps([ours.encode("ab c").ids, ours.encode("ab c").tokens, ours.acceleration["model"]]))
print(json.dumps([stock.encode("ab c").ids, stock.encode("ab c").tokens]))
# this process's own peak (ru_maxrss would also count the forking parent's: it survives the exec)
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak RSS from /proc")
@pytest.mark.parametrize("largest", HUGE)
def test_sparse_ids_never_make_anything_allocate_per_id(largest, tmp_path):
    # a child process: an allocation per id (stock's own to_str() at 2**31 - 1: ~8 GB) would abort it
    result = subprocess.run([sys.executable, "-c", CHILD, str(largest), str(tmp_path / "t.json")],
                            capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    *loaded, expected, usage = result.stdout.splitlines()
    from_str, from_file, from_hf = (json.loads(line) for line in loaded)
    for ids, tokens, report in (from_str, from_file, from_hf):
        assert [ids, tokens] == json.loads(expected)
    assert from_str[2]["native"] and from_file[2]["native"]
    # stock cannot write this vocabulary cheaply, and from_hf has nothing else to read the merges from
    assert not from_hf[2]["native"] and "sparse" in from_hf[2]["reason"]
    assert int(usage) < 400 * 1024  # peak RSS in KiB: 4 bytes per id would be 400 MB at 10**8


def test_transformers_loads_a_sparse_vocabulary_without_writing_it(tmp_path):
    pytest.importorskip("transformers")
    from hf_tagtok.fast import TagTokenizerFast

    vocab = spread(["[UNK]", "a", "b", "c", "ab", "bc", "abc"], 10**8)
    text = config(bpe(vocab, ["a b", "b c", "ab c"], unk_token="[UNK]"))
    (tmp_path / "tokenizer.json").write_text(text)
    stock = tokenizers.Tokenizer.from_str(text)
    loaded = TagTokenizerFast.from_pretrained(str(tmp_path))  # planned from the file it loaded
    assert all(entry["native"] for entry in loaded.acceleration.values())
    given = TagTokenizerFast(tokenizer_object=stock)  # only stock's to_str() could tell its merges
    assert not given.acceleration["model"]["native"] and "sparse" in given.acceleration["model"]["reason"]
    for fast in (loaded, given):
        for sample in TEXTS:
            assert fast(sample)["input_ids"] == stock.encode(sample).ids


def test_a_python_component_is_reported_before_the_vocabulary_is_read():
    # the sparse check reads the whole vocabulary; a Python component makes stock unable to write the tokenizer
    # anyway, and its own error for that is the reason given
    class KeepWhole:
        def pre_tokenize(self, pretokenized):
            pretokenized.split(lambda _, normalized: [normalized])

    stock = tokenizers.Tokenizer.from_str(config(bpe(spread(["a", "b", "ab"], 10**8), ["a b"])))
    stock.pre_tokenizer = tokenizers.pre_tokenizers.PreTokenizer.custom(KeepWhole())
    with pytest.raises(Exception) as refused:
        stock.to_str()
    with pytest.warns(hf_tagtok.FallbackWarning):
        ours = hf_tagtok.Tokenizer.from_hf(stock)
    reason = ours.acceleration["pre_tokenizer"]["reason"]
    assert str(refused.value) in reason and "sparse" not in reason
    assert [e.ids for e in ours.encode_batch(["ab a", "ba"])] == [e.ids for e in stock.encode_batch(["ab a", "ba"])]
