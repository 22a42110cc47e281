"""hf_tagtok.Tokenizer against stock tokenizers.Tokenizer, computed in the test, field by field."""
import copy
import os
import pickle
import threading
import unicodedata

import pytest
import tokenizers

import hf_tagtok
from conformance import tokenizer_mode, tokenizer_zoo
from hf_tagtok import sample_text

EDGE_CASES = [
    "", " ", "  ", "\n", "\r\n", "a", "Hello world", "Hello  world!  ", "don't I'LL we've", "\u00a0nbsp\u00a0",
    "e\u0301 combining", "👩‍👩‍👧 🇫🇷 👍🏽", "١٢٣ ٤٥ 123456789", "\t tabs\t\t", "<|special|>", "x<|special|>y",
    " <|lstrip|> a <|rstrip|> b ", "word words sword word", "normal norm", "<|special|>x <|special|>",
    "<|endoftext|>hi<|endoftext|>", "<|begin_of_text|>Hi<|eot_id|>", "\ue000 private \U0010fffd",
    "a \u00a0\u3000<mask>\u2028 b", "<mask><mask>  <mask>", "x<|rstrip|> \t\n y<|rstrip|>", " <both>  <both>x <both> ",
    "norm  norm\u3000norm", "<|special|> <mask> <|rstrip|>\u00a0<both>", "<s>[INST] Hi</s>x", "a<s>b </s> c",
]
REAL_TEXTS = sample_text.multiscript_texts()[::7] + EDGE_CASES
SMALL_TEXTS = sample_text.multiscript_texts()[::23] + EDGE_CASES
NAMES = tokenizer_zoo.available()


@pytest.fixture(scope="module", params=NAMES)
def zoo(request):
    """(name, stock, ours): built once per tokenizer; diff_tokenizer resets their settings per variant."""
    try:
        stock = tokenizer_zoo.load(request.param)
    except tokenizer_zoo.Unavailable as error:
        pytest.skip(str(error))
    return request.param, stock, hf_tagtok.Tokenizer.from_hf(stock)


def _texts(name):
    return REAL_TEXTS if name in tokenizer_zoo.REAL else SMALL_TEXTS


@pytest.mark.parametrize("variant", list(tokenizer_mode.VARIANTS))
def test_every_field_matches_stock(zoo, variant):
    name, stock, ours = zoo
    if name in tokenizer_zoo.REAL and variant not in ("plain", "truncate", "pad"):
        pytest.skip("real vocabularies: the small tokenizers cover the other variants (CI time)")
    assert tokenizer_mode.diff_tokenizer(stock, _texts(name), variant, ours=ours) == []


@pytest.mark.parametrize("variant", ["plain", "truncate", "pad_left_truncate"])
def test_pairs_match_stock(zoo, variant):
    name, stock, ours = zoo
    if variant != "plain" and name != "small_split_bytelevel_template":
        pytest.skip("one tokenizer here; tests/test_tokenizer_pairs.py covers the rest (CI time)")
    assert tokenizer_mode.diff_tokenizer(stock, _texts(name)[:40], variant, pairs=True, ours=ours) == []


def test_add_special_tokens_false_and_encode_special_tokens(zoo):
    name, reference, ours = zoo
    texts = _texts(name)[-len(EDGE_CASES):]
    for tokenizer in (reference, ours):
        tokenizer.no_truncation()
        tokenizer.no_padding()
    for flag in (True, False):
        ours.encode_special_tokens = flag
        reference.encode_special_tokens = flag
        for add in (True, False):
            expected = reference.encode_batch(texts, add_special_tokens=add)
            got = ours.encode_batch(texts, add_special_tokens=add)
            assert [tokenizer_mode.encoding_diff(g, e) for g, e in zip(got, expected)] == [None] * len(texts)
            assert tokenizer_mode.columns_diff(ours.encode_batch_arrays(texts, add_special_tokens=add), expected) is None


def test_acceleration_reports_every_stage(zoo):
    _, _, ours = zoo
    report = ours.acceleration
    assert set(report) == {"added_tokens", "normalizer", "pre_tokenizer", "model", "post_processor",
                           "truncation", "padding", "pairs"}
    for entry in report.values():
        assert isinstance(entry["native"], bool) and entry["reason"]


def test_native_path_runs_unless_the_zoo_says_why_not(zoo):
    # A native encoding is not stock's Encoding class: this proves which path ran, not just what the report says.
    name, reference, ours = zoo
    for tokenizer in (reference, ours):
        tokenizer.no_truncation()
        tokenizer.no_padding()
    ran_native = not isinstance(ours.encode_batch(["Hello world"])[0], tokenizers.Encoding)
    if name in tokenizer_zoo.ON_STOCK:
        reasons = " ".join(entry["reason"] for entry in ours.acceleration.values())
        assert ran_native or tokenizer_zoo.ON_STOCK[name] in reasons
    else:
        assert ran_native, ours.acceleration


def test_pickle_and_deepcopy_keep_settings():
    stock = tokenizer_zoo.load("small_added_flags")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    ours.enable_truncation(8, stride=2)
    ours.encode_special_tokens = True
    for clone in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours)):
        assert clone.truncation == ours.truncation
        assert clone.encode_special_tokens
        assert tokenizer_mode.encoding_diff(clone.encode(EDGE_CASES[16]), ours.encode(EDGE_CASES[16])) is None
    clone.no_truncation()
    assert ours.truncation is not None


def test_tokens_added_one_call_at_a_time_encode_like_stock():
    reference = tokenizer_zoo.load("small_bytelevel")
    ours = hf_tagtok.Tokenizer.from_hf(reference)
    texts = ["x <a1> y<s2>z", "<a1><a1> <s2>", *SMALL_TEXTS[:5]]
    assert tokenizer_mode.encoding_diff(ours.encode(texts[0]), reference.encode(texts[0])) is None
    for name in ("<a1>", "<a2>"):
        assert ours.add_tokens([name]) == reference.add_tokens([name])
    assert ours.add_special_tokens(["<s2>"]) == reference.add_special_tokens(["<s2>"])
    assert all(entry["native"] for entry in ours.acceleration.values())
    for text, expected in zip(texts, reference.encode_batch(texts)):
        assert tokenizer_mode.encoding_diff(ours.encode(text), expected) is None
    ours.encode_special_tokens = reference.encode_special_tokens = True
    for text, expected in zip(texts, reference.encode_batch(texts)):
        assert tokenizer_mode.encoding_diff(ours.encode(text), expected) is None


@pytest.mark.parametrize("firsts", ["<", "<｜", "<｜[{", "<｜[{#"])
def test_added_tokens_with_few_first_bytes_found_at_every_offset_like_stock(firsts):
    # one to five distinct first bytes ('｜' starts with the same byte as '，'); each token lands at every
    # offset of a sixteen-byte block and past the last whole block
    reference = tokenizer_zoo.load("small_bytelevel")
    ours = hf_tagtok.Tokenizer.from_hf(reference)
    names = [f"{c}tok{c}" for c in firsts]
    assert ours.add_tokens(names) == reference.add_tokens(names)
    texts = [("x" * pad + name + " a，b" * reps) for name in names for pad in range(19) for reps in (0, 1, 5)]
    texts += ["，".join(names) * 3, "<tok" + "，" * 20 + names[-1], "a" * 40 + names[0]]
    for text, expected in zip(texts, reference.encode_batch(texts)):
        assert tokenizer_mode.encoding_diff(ours.encode(text), expected) is None, text


def test_from_hf_copies_settings_then_shares_nothing():
    stock = tokenizer_zoo.load("small_added_flags")
    stock.encode_special_tokens = True
    stock.enable_truncation(7)
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert ours.encode_special_tokens and ours.truncation == stock.truncation
    ours.enable_padding(length=50)
    ours.no_truncation()
    assert stock.padding is None and stock.truncation is not None


def test_bad_input_raises_like_stock():
    stock = tokenizer_zoo.load("small_bytelevel")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    for bad in ("\ud800", 12, None):
        with pytest.raises(Exception) as expected:
            stock.encode_batch([bad])
        with pytest.raises(expected.type):
            ours.encode_batch([bad])
        with pytest.raises(Exception):
            ours.encode_batch_arrays([bad])
    for text in ("a single text", b"bytes"):  # stock's encode_batch refuses both; no batch of one-char texts
        with pytest.raises(TypeError):
            stock.encode_batch(text)
        with pytest.raises(TypeError, match="not a single"):
            ours.encode_batch_arrays(text)
    with pytest.raises(TypeError):
        hf_tagtok.Tokenizer.from_hf("not a tokenizer")


def _pool_sized_batch():
    # large enough (> 64 KB) that the native pipeline spreads it over the thread pool
    return SMALL_TEXTS * (1 + 100_000 // sum(len(text.encode()) for text in SMALL_TEXTS))


def test_threads_share_one_tokenizer():
    stock = tokenizer_zoo.load("small_split_bytelevel_template")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    texts = _pool_sized_batch()
    expected = [e.ids for e in stock.encode_batch(texts)]
    results = [None] * 4

    def work(slot):
        results[slot] = [[e.ids for e in ours.encode_batch(texts)], ours.encode_batch_arrays(texts).ids.tolist()]

    threads = [threading.Thread(target=work, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    flat = [i for ids in expected for i in ids]
    assert all(result == [expected, flat] for result in results)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_child_forked_after_encoding_encodes():
    stock = tokenizer_zoo.load("small_split_bytelevel_template")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    texts = _pool_sized_batch()
    expected = [e.ids for e in stock.encode_batch(texts)]
    assert [e.ids for e in ours.encode_batch(texts)] == expected  # the pool's threads exist before fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        ok = [e.ids for e in ours.encode_batch(texts)] == expected
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    import select
    ready, _, _ = select.select([read], [], [], 60)
    verdict = os.read(read, 1) if ready else b"hang"
    os.waitpid(pid, 0)
    assert verdict == b"1"


def test_word_cache_overflow_and_long_words_match_stock():
    # More distinct words than the BPE word cache holds (it empties itself when full), words
    # near and past its longest cacheable length, then the same words again (hits after the flush).
    name = "llama3" if "llama3" in NAMES else "small_bytelevel"
    stock = tokenizer_zoo.load(name)
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    words = [f"w{index:x}q{index * 7919 % 100003:x}" for index in range(40_000)]
    long_words = ["".join(chr(0x61 + (i * j) % 26) for i in range(length)) for j, length in
                  enumerate([1000, 4095, 4096, 4097, 9000], start=3)]
    texts = [" ".join(words[start:start + 400]) for start in range(0, len(words), 400)] + long_words
    texts += texts[:20]
    for mine, theirs in zip(ours.encode_batch(texts), stock.encode_batch(texts)):
        assert mine.ids == theirs.ids
        assert mine.offsets == theirs.offsets


@pytest.mark.parametrize("name", sorted({"llama3" if "llama3" in NAMES else "small_bytelevel", "small_bytelevel"}))
def test_word_repeated_before_it_is_cached_matches_stock(name):
    # A word the model has not seen may come several times among the pieces it encodes together; it is
    # merged once and every occurrence reads those tokens. A fresh tokenizer per text, so nothing is cached.
    stock = tokenizer_zoo.load(name)
    texts = ["zqxv zqxv zqxv", "Überwältigt überwältigt Überwältigt!", "ابتسامة ابتسامة, ابتسامة",
             " ".join(["kwyjibo", "flurbl", "kwyjibo"] * 30), "中文字符中文字符 中文字符中文字符 中文字符中文字符"]
    for text in texts:
        ours = hf_tagtok.Tokenizer.from_hf(stock)
        assert tokenizer_mode.encoding_diff(ours.encode(text), stock.encode(text)) is None, text


def test_word_cache_keeps_stock_ids_while_it_grows_past_its_first_size():
    # 300,000 distinct words in one call: the model's shared word cache starts at 262,144 slots and takes
    # half of them in a round, so the pool threads keep the rest in their own caches; between rounds it
    # takes those in and doubles. The second pass reads every word back from it.
    import random

    stock = tokenizer_zoo.load("small_bytelevel")
    ours = hf_tagtok.Tokenizer(stock)
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyzéßжλ中"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 12))) for _ in range(300_000)]
    texts = [" ".join(words[i:i + 500]) for i in range(0, len(words), 500)]
    expected = [e.ids for e in stock.encode_batch(texts)]
    for _ in range(2):
        assert [e.ids for e in ours.encode_batch(texts)] == expected


@pytest.mark.parametrize("name", ["small_bytelevel_prefix", "small_metaspace_byte_fallback", "small_wordpiece_prefix",
                                  "small_normalized_added_lowercase", "t5_style", "mistral_v1",
                                  "small_bytelevel_no_regex_nfkc", "small_strip_replace_sequence"])
def test_columnar_calls_from_the_word_cache_match_stock(name):
    # The second call finds every word in the model's word cache and writes its tokens straight from there
    # (ids alone for prefixed pieces; offsets too for the text's own bytes, for rendered Metaspace words
    # through the render's origins, and for normalized bytes through the normalizer's alignment: the
    # decomposed texts change under NFC/NFKC).
    stock = tokenizer_zoo.load(name)
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    texts = sample_text.multiscript_texts()[:40] + ["Hello hello HELLO", "", " a  b ", "ab" * 40]
    texts += [unicodedata.normalize("NFD", text) for text in texts[:20]] + ["Cafe\u0301 cafe\u0301 ﬁne ﬁne ①"]
    expected = stock.encode_batch(texts)
    ids = [i for e in expected for i in e.ids]
    offsets = [o for e in expected for o in e.offsets]
    for _ in range(2):
        assert ours.encode_batch_arrays(texts, offsets=False).ids.tolist() == ids
        arrays = ours.encode_batch_arrays(texts)
        assert arrays.ids.tolist() == ids
        assert [tuple(o) for o in arrays.offsets.tolist()] == offsets


@pytest.mark.parametrize("name", ["mistral_v1", "mistral_v3_legacy", "gemma_style"])
def test_whole_text_sentencepiece_words_cut_into_pieces_match_stock(name):
    # With no pre-tokenizer each text is one word, which the pipeline cuts before each ▁ into pieces that keep
    # the word's number: texts of more pieces than a group of 64 holds, pieces too long to cut (a CJK run, a
    # run of 5,000 bytes past the cache's longest word), runs of ▁, an empty text; each call twice (the second
    # from the word cache).
    stock = tokenizer_zoo.load(name)
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    many = " ".join(f"w{k}, x" for k in range(150))
    texts = [many, "中文字符的句子没有空格" * 8 + " after it", "  two  spaces   three", "x" * 5000 + " tail " + many,
             "", " ", sample_text.multiscript_texts()[3], "a" + "▁" * 40 + "b c"]
    expected = stock.encode_batch(texts)
    for _ in range(2):
        got = ours.encode_batch(texts)
        for field in ("ids", "offsets", "word_ids"):
            assert [getattr(e, field) for e in got] == [getattr(e, field) for e in expected], field
        arrays = ours.encode_batch_arrays(texts)
        assert arrays.ids.tolist() == [i for e in expected for i in e.ids]
        assert [tuple(o) for o in arrays.offsets.tolist()] == [o for e in expected for o in e.offsets]
        assert ours.encode_batch_arrays(texts, offsets=False).ids.tolist() == arrays.ids.tolist()


def test_kept_results_stay_whole_while_later_calls_reuse_given_back_output():
    # A call's output block (megabytes here) is kept for later calls once every array over it is gone: the
    # results still held must read stock's values after calls that reuse the blocks dropped results gave back,
    # columnar arrays and Encoding views alike, batches of different sizes taking turns.
    stock = tokenizer_zoo.load("small_bytelevel")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    texts = sample_text.multiscript_texts()
    batches = [texts[::2], texts[1::3], texts]
    expected = [stock.encode_batch(batch) for batch in batches]
    held = []
    for turn in range(9):
        k = turn % 3
        columns, encodings = ours.encode_batch_arrays(batches[k]), ours.encode_batch(batches[k])
        if turn % 2:
            held.append((k, columns, encodings))
    assert len(held) == 4
    for k, columns, encodings in held:
        assert columns.ids.tolist() == [i for e in expected[k] for i in e.ids]
        # all 0 here: a zeroed mapping of their own, as writable and contiguous as the other columns
        assert columns.type_ids.tolist() == [i for e in expected[k] for i in e.type_ids]
        assert columns.type_ids.flags["WRITEABLE"] and columns.type_ids.flags["C_CONTIGUOUS"]
        assert columns.offsets.tolist() == [list(pair) for e in expected[k] for pair in e.offsets]
        assert [(e.ids, e.offsets) for e in encodings] == [(e.ids, e.offsets) for e in expected[k]]


def test_encoding_views_are_freed_with_their_last_reference_and_never_walked_by_the_collector():
    # Views are untracked by the cyclic GC (they can be in no cycle): dropping the last view must free its
    # batch's columns at once, with no collection, also after an encoding took fields of its own.
    import gc
    import weakref

    stock = tokenizer_zoo.load("small_bytelevel")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    texts = sample_text.multiscript_texts()[:20]
    expected = stock.encode_batch(texts)
    encodings = ours.encode_batch(texts)
    assert not any(gc.is_tracked(e) for e in encodings)
    ids_column = weakref.ref(encodings[0]._batch.columns.ids)
    encodings[1].pad(len(encodings[1]) + 3)  # fields of its own
    encodings[2].truncate(2)
    assert [e.ids for e in encodings[3:]] == [e.ids for e in expected[3:]]
    gc.disable()
    try:
        del encodings
        assert ids_column() is None
    finally:
        gc.enable()

@pytest.mark.parametrize("single", ["<s>:2 $A:1 </s>:3", "$A:0 </s>:0", "<s>:0 $A:0"])
def test_encoding_views_take_type_ids_and_special_flags_from_the_layout(single):
    # The views' type ids and special flags are written from the post-processor's layout around each text's
    # tokens (all-0 type ids are a zeroed array of their own); word ids come from the encode itself.
    stock = tokenizer_zoo.load("small_bytelevel")
    special = [("<s>", stock.token_to_id("<s>") or 0), ("</s>", stock.token_to_id("</s>") or 1)]
    stock.post_processor = tokenizers.processors.TemplateProcessing(single=single, special_tokens=special)
    ours = hf_tagtok.Tokenizer(tokenizers.Tokenizer.from_str(stock.to_str()))
    texts = sample_text.multiscript_texts()[:30] + ["", " ", "a b  c"]
    for add in (True, False):
        expected = stock.encode_batch(texts, add_special_tokens=add)
        got = ours.encode_batch(texts, add_special_tokens=add)
        for field in ("ids", "type_ids", "special_tokens_mask", "word_ids", "offsets", "attention_mask"):
            assert [getattr(e, field) for e in got] == [getattr(e, field) for e in expected], (field, add)


def test_char_offsets_at_every_block_position_match_stock():
    # Char offsets come from a count of the chars before each byte, built 16 bytes at a time: multi-byte
    # chars at every position of a block (a shift of 0-63 ASCII bytes before them), tokens that start or end
    # inside a char (byte-level BPE keeps a rare char as several byte tokens), in one call and columnar.
    stock = tokenizer_zoo.load("small_bytelevel")
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    mixed = "é中𝔘 ж€👍🏽a ßx中文\u0301 ab"
    texts = ["a" * shift + mixed * 9 for shift in range(64)] + [mixed * 40 + " " + "b" * shift for shift in range(0, 64, 7)]
    expected = stock.encode_batch(texts)
    assert [e.offsets for e in ours.encode_batch(texts)] == [e.offsets for e in expected]
    columns = ours.encode_batch_arrays(texts)
    assert columns.offsets.tolist() == [list(pair) for e in expected for pair in e.offsets]


@pytest.mark.parametrize("name", ["small_prepend_replace_no_pretokenizer", "qwen2"])
def test_normalized_offsets_of_chars_across_every_block_position_match_stock(name):
    # A normalizer's byte alignment is built 16 bytes a step: chars of 2-4 bytes cut by every block edge
    # (0-47 ASCII bytes before them), in runs longer than a block between the spaces a Replace swaps and in
    # text NFC leaves alone or recomposes, in one call and columnar.
    stock = tokenizer_zoo.load(name)
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    run = "é中𝔘ж€👍🏽aßx中文e\u0301"
    texts = ["a" * shift + run * 5 + " " + run * 3 + " b" for shift in range(48)]
    texts += [" ".join(["ж" * k + "中" * (k % 3) for k in range(1, 40)]), "x" * 15 + "👍" * 9, "中" * 17]
    expected = stock.encode_batch(texts)
    assert [e.offsets for e in ours.encode_batch(texts)] == [e.offsets for e in expected]
    columns = ours.encode_batch_arrays(texts)
    assert columns.offsets.tolist() == [list(pair) for e in expected for pair in e.offsets]


@pytest.mark.parametrize("direction", ["right", "left"])
def test_padded_overflow_views_and_columns_match_stock(direction):
    # Encoding views keep their padding counted, not stored, and uint32 offsets; the columnar call stores
    # both as its public dtypes say. Every encoding, overflow included, against stock's.
    import numpy as np

    stock = tokenizer_zoo.load("small_bytelevel")
    stock.enable_truncation(16, stride=3, direction=direction)
    stock.enable_padding(direction=direction, pad_id=1, pad_type_id=2, pad_token="<pad>", length=20)
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    texts = ["é中 ab " * n for n in (0, 1, 5, 13)] + [("pair a " * 4, "ж b " * 9)]
    expected = [part for e in stock.encode_batch(texts) for part in (e, *e.overflowing)]
    views = [part for e in ours.encode_batch(texts) for part in (e, *e.overflowing)]
    fields = ("ids", "type_ids", "tokens", "offsets", "attention_mask", "special_tokens_mask", "word_ids",
              "sequence_ids")
    assert [[getattr(e, f) for f in fields] + [len(e)] for e in views] == \
        [[getattr(e, f) for f in fields] + [len(e)] for e in expected]
    columns = ours.encode_batch_arrays(texts, overflowing=True)
    assert columns.offsets.dtype == np.int64 and columns.ids.dtype == np.uint32
    assert columns.offsets.tolist() == [list(pair) for e in expected for pair in e.offsets]
    assert columns.attention_mask.tolist() == [m for e in expected for m in e.attention_mask]


def test_fallen_back_columnar_call_matches_stock_with_and_without_offsets():
    import numpy as np

    vocab = [("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -0.5), ("▁", -1.5), ("▁a", -0.7)]
    stock = tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, unk_id=0))
    # a subexpression call is outside the regex compiler's grammar: the pre-tokenizer, so the call, stays on stock
    stock.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.Split(tokenizers.Regex(r"\g<1>(b)"), "isolated"), tokenizers.pre_tokenizers.Metaspace()])
    stock.add_special_tokens(["<s>", "</s>"])
    stock.post_processor = tokenizers.processors.TemplateProcessing(
        single="<s>:2 $A:1 </s>:3", special_tokens=[("<s>", stock.token_to_id("<s>")), ("</s>", stock.token_to_id("</s>"))])
    ours = hf_tagtok.Tokenizer(tokenizers.Tokenizer.from_str(stock.to_str()))
    assert not ours.acceleration["pre_tokenizer"]["native"]
    assert ours._plain_layout() is not None  # without offsets, only stock's ids are read
    texts = ["ab a b", "ba abb xyz", "", "a" * 50, "a <s> b </s>"]
    for offsets, add in ((True, True), (False, True), (False, False)):
        expected = stock.encode_batch(texts, add_special_tokens=add)
        arrays = ours.encode_batch_arrays(texts, offsets=offsets, add_special_tokens=add)
        assert np.array_equal(arrays.ids, [i for e in expected for i in e.ids])
        assert np.array_equal(arrays.type_ids, [i for e in expected for i in e.type_ids])
        assert np.array_equal(arrays.special_tokens_mask, [i for e in expected for i in e.special_tokens_mask])
        assert np.array_equal(arrays.attention_mask, [i for e in expected for i in e.attention_mask])
        assert np.array_equal(arrays.lengths, [len(e.ids) for e in expected])
        if offsets:
            assert np.array_equal(arrays.offsets, np.array([o for e in expected for o in e.offsets]).reshape(-1, 2))
        else:
            assert arrays.offsets is None


def test_fallen_back_columnar_call_reads_padding_masks_from_stock():
    import numpy as np

    vocab = [("<unk>", 0.0), ("<pad>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -0.5), ("▁", -1.5)]
    stock = tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, unk_id=0))
    stock.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace()
    stock.enable_padding(pad_id=1, pad_token="<pad>")
    ours = hf_tagtok.Tokenizer(tokenizers.Tokenizer.from_str(stock.to_str()))
    texts = ["ab a b", "b", ""]
    expected = stock.encode_batch(texts)
    arrays = ours.encode_batch_arrays(texts, offsets=False)
    assert 0 in arrays.attention_mask  # the shorter texts are padded
    assert np.array_equal(arrays.attention_mask, [i for e in expected for i in e.attention_mask])
    assert np.array_equal(arrays.ids, [i for e in expected for i in e.ids])


@pytest.mark.parametrize("post", ["roberta", "byte_level"])
def test_stripping_added_tokens_trim_their_match_like_stock(post):
    # trim_offsets reads a stripping token's string, which is the text it matched (its stripped whitespace
    # included), so the trim differs from match to match; windows of a truncated sequence trim on their own
    from tokenizers import AddedToken, processors

    post = (processors.RobertaProcessing(("</s>", 1), ("<s>", 0), trim_offsets=True, add_prefix_space=True)
            if post == "roberta" else processors.ByteLevel(trim_offsets=True, add_prefix_space=False))
    stock = tokenizer_zoo._small_byte_bpe(tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=True), post)
    stock.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False),
                              AddedToken("<r>", rstrip=True, normalized=False),
                              AddedToken("\u0120x", lstrip=True, normalized=False)])
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert ours._native is not None
    texts = ["Hello <mask> world", "Hello\u00a0\u00a0<mask>", "a \u3000<mask>b", " <mask>", "<mask>", "x  <r>  y",
             " <r> ", "  <r>  <mask> <r>", "ab <mask> <mask>", "a \u0120x\u0120x \u0120x", " \u0120x"]
    for max_length in (None, 5, 6, 8):
        for tokenizer in (stock, ours):
            if max_length:
                tokenizer.enable_truncation(max_length, stride=1)
        assert tokenizer_mode.diff_tokenizer(stock, texts, ours=ours) == []
        assert tokenizer_mode.columns_diff(ours.encode_batch_arrays(texts), stock.encode_batch(texts)) is None
