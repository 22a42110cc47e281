"""Arrow output (hf_tagtok.arrow): the same table as stock's lists, and datasets.map through it."""
import os
import pathlib
import subprocess
import sys

import pytest
from transformers import PreTrainedTokenizerFast

import hf_tagtok
from conformance import tokenizer_zoo
from hf_tagtok import arrow
from hf_tagtok.sample_text import multiscript_texts

pa = pytest.importorskip("pyarrow")
datasets = pytest.importorskip("datasets")
ROOT = pathlib.Path(__file__).resolve().parent.parent
TEXTS = [text[:300] for text in multiscript_texts()[::12]] + ["", " ", "a"]

CALLS = [
    {},
    {"return_offsets_mapping": True, "return_special_tokens_mask": True, "return_length": True},
    {"truncation": True, "max_length": 9, "stride": 2, "return_overflowing_tokens": True},
    {"padding": "longest", "pad_to_multiple_of": 8, "return_token_type_ids": True},
    {"add_special_tokens": False, "return_attention_mask": False},
]


@pytest.fixture(scope="module", params=["small_split_bytelevel_template", "small_bert_processing"])
def pair(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tokenizer_zoo.load(request.param).save(str(path))
    stock = PreTrainedTokenizerFast(tokenizer_file=str(path))
    if stock.pad_token is None:
        stock.pad_token = stock.convert_ids_to_tokens(0)
    ours = hf_tagtok.TagTokenizerFast(tokenizer_file=str(path), pad_token=stock.pad_token)
    return stock, ours


@pytest.mark.parametrize("call", CALLS, ids=lambda call: ",".join(call) or "plain")
def test_record_batch_equals_stock_lists(pair, call):
    stock, ours = pair
    expected = stock(TEXTS, **call).data
    batch = ours.encode_arrow(TEXTS, **call)
    assert batch.schema.names == list(expected)
    for name in expected:
        rows = batch.column(name).to_pylist()
        want = [[list(pair) for pair in row] for row in expected[name]] if name == "offset_mapping" else expected[name]
        assert rows == want, name
    assert batch.equals(arrow.from_lists(expected))


def test_pairs_and_words_equal_stock(pair):
    stock, ours = pair
    pairs = TEXTS[1:] + TEXTS[:1]
    assert ours.encode_arrow(TEXTS, pairs, truncation=True, max_length=12).equals(
        arrow.from_lists(stock(TEXTS, pairs, truncation=True, max_length=12).data))
    words = [text.split() or ["x"] for text in TEXTS]
    assert ours.encode_arrow(words, is_split_into_words=True).equals(
        arrow.from_lists(stock(words, is_split_into_words=True).data))


def test_stock_path_gives_the_same_table(pair, monkeypatch):
    stock, ours = pair
    from hf_tagtok.tag_tokenizer_fast import NativeState
    fallen_back = NativeState(None, False, "stock encodes")  # as for a fallen-back tokenizer
    monkeypatch.setattr(type(ours), "_native_state", lambda self, split=False: fallen_back)
    assert ours.encode_arrow(TEXTS, return_offsets_mapping=True).equals(
        arrow.from_lists(stock(TEXTS, return_offsets_mapping=True).data))


@pytest.mark.parametrize("arrow_format", [False, True])
def test_datasets_map_stores_the_stock_table(pair, arrow_format):
    stock, ours = pair
    dataset = datasets.Dataset.from_dict({"text": TEXTS, "n": list(range(len(TEXTS)))})
    expected = dataset.map(lambda batch: stock(batch["text"]), batched=True, batch_size=8,
                           load_from_cache_file=False, keep_in_memory=True)
    source = dataset.with_format("arrow") if arrow_format else dataset
    mapped = source.map(arrow.map_function(ours), batched=True, batch_size=8, load_from_cache_file=False,
                        keep_in_memory=True).with_format(None)
    assert mapped.features == expected.features
    assert mapped.data.table.equals(expected.data.table)

    kept = dataset.map(arrow.map_function(ours, keep_columns=["n"]), batched=True, load_from_cache_file=False,
                       keep_in_memory=True)
    removed = dataset.map(lambda batch: stock(batch["text"]), batched=True, remove_columns=["text"],
                          load_from_cache_file=False, keep_in_memory=True)
    assert kept.data.table.equals(removed.data.table)


def test_map_function_refuses_a_stock_tokenizer(pair):
    stock, _ = pair
    with pytest.raises(TypeError, match="needs a TagTokenizerFast"):
        arrow.map_function(stock)


SCRIPT = """
import sys, datasets, hf_tagtok
from hf_tagtok import arrow
tok = hf_tagtok.TagTokenizerFast.from_pretrained(sys.argv[1])
mapped = datasets.load_from_disk(sys.argv[2]).map(arrow.map_function(tok, return_length=True), batched=True)
print(mapped._fingerprint, mapped.cache_files[0]["filename"])
"""


def test_map_function_fingerprint_is_stable_across_processes(pair, tmp_path):
    _, ours = pair
    ours.save_pretrained(str(tmp_path / "tok"))
    corpus = tmp_path / "corpus"
    datasets.Dataset.from_dict({"text": TEXTS}).save_to_disk(str(corpus))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def run():
        command = [sys.executable, "-c", SCRIPT, str(tmp_path / "tok"), str(corpus)]
        return subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout.split()[-2:]

    first, second = run(), run()
    assert first == second
