"""`datasets.Dataset.map(batched=True)` through TagTokenizerFast: same rows as stock, stable fingerprint."""
import os
import pathlib
import subprocess
import sys

import pytest
from transformers import PreTrainedTokenizerFast

import hf_tagtok
from conformance import tokenizer_zoo
from hf_tagtok.sample_text import multiscript_texts

datasets = pytest.importorskip("datasets")
ROOT = pathlib.Path(__file__).resolve().parent.parent
TEXTS = [text[:400] for text in multiscript_texts()[::10]]


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tokenizer_zoo.load("small_split_bytelevel_template").save(str(path))
    return path


@pytest.mark.parametrize("num_proc", [1, 2])
def test_map_matches_stock(tokenizer_file, num_proc, monkeypatch):
    monkeypatch.setattr(hf_tagtok.TagTokenizerFast, "_columns_without_native", True)
    dataset = datasets.Dataset.from_dict({"text": TEXTS})
    rows = {}
    for name, cls in (("stock", PreTrainedTokenizerFast), ("tagtok", hf_tagtok.TagTokenizerFast)):
        tok = cls(tokenizer_file=str(tokenizer_file))
        mapped = dataset.map(lambda batch: tok(batch["text"], return_offsets_mapping=True), batched=True,
                             batch_size=16, num_proc=num_proc, load_from_cache_file=False, keep_in_memory=True)
        rows[name] = mapped.to_dict()
    assert rows["tagtok"] == rows["stock"]


SCRIPT = """
import sys, datasets, hf_tagtok
tok = hf_tagtok.TagTokenizerFast.from_pretrained(sys.argv[1])
dataset = datasets.load_from_disk(sys.argv[2])
def tokenize(batch):
    with open(sys.argv[3], "a") as calls:
        calls.write("call\\n")
    return tok(batch["text"])
mapped = dataset.map(tokenize, batched=True)
print(mapped._fingerprint, mapped.cache_files[0]["filename"])
"""


def test_fingerprint_stable_across_runs(tokenizer_file, tmp_path):
    corpus = tmp_path / "corpus"
    datasets.Dataset.from_dict({"text": TEXTS}).save_to_disk(str(corpus))
    calls = tmp_path / "calls.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def run():
        command = [sys.executable, "-c", SCRIPT, str(tokenizer_file), str(corpus), str(calls)]
        output = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout.split()[-2:]
        return output, len(calls.read_text().splitlines())

    (first, first_calls), (second, second_calls) = run(), run()
    assert first_calls >= 1
    assert second == first  # same fingerprint, same cache file
    assert second_calls == first_calls  # the second run reused the cache: tokenize never ran


def datasets_own_hash(tokenizer):
    """The fingerprint datasets computes with its own tokenizer reducer (ours taken out for the call)."""
    from datasets.fingerprint import Hasher
    from datasets.utils import _dill

    ours = _dill.Pickler.dispatch.pop(type(tokenizer))
    try:
        return Hasher.hash(tokenizer)
    finally:
        _dill.Pickler.dispatch[type(tokenizer)] = ours


def test_fingerprint_equals_datasets_own_and_follows_changes(tokenizer_file):
    from datasets.fingerprint import Hasher
    from tokenizers import normalizers

    tok = hf_tagtok.TagTokenizerFast.from_pretrained(str(tokenizer_file))
    seen = []
    changes = [
        lambda: None,
        lambda: tok(TEXTS, truncation=True, max_length=8),  # backend settings: hashed as off, like datasets does
        lambda: tok.add_tokens(["zzqq_new"]),
        lambda: setattr(tok.backend_tokenizer.model, "dropout", 0.5),
        lambda: setattr(tok.backend_tokenizer, "normalizer", normalizers.Lowercase()),
        lambda: setattr(tok.backend_tokenizer.model, "unk_token", "zzqq_new"),
    ]
    for change in changes:
        change()
        truncation = tok.backend_tokenizer.truncation
        fingerprint = Hasher.hash(tok)
        assert fingerprint == Hasher.hash(tok) == datasets_own_hash(tok)
        assert tok.backend_tokenizer.truncation == truncation
        seen.append(fingerprint)
    assert seen[1] == seen[0]
    assert len(set(seen[1:])) == len(seen) - 1  # every real change moves the fingerprint
