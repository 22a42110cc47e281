"""Sharded preparation reads each shard from its indexed position: the same documents, and the same shard
files, as reading every input from the start."""
import bisect
import json

import numpy as np
import pytest

from conformance import tokenizer_zoo
from hf_tagtok import corpus, documents, shards
from hf_tagtok.documents import DocumentError, index_documents, iter_documents_at, read_documents
from hf_tagtok.sample_text import multiscript_texts

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

START = "<|special|>"
# lines that are blank to str.strip() though not to bytes.strip(), separators kept inside documents, multibyte text
ODD = ["a\u2028b", "c\u0085d", "e\rf", "tab\there", "x\u000by", "\u00e9t\u00e9", "\u4e2d\u6587", "\U0001f600 emoji"]
BLANK_JSONL_LINES = ["", " ", "\u2028", "\x1c\x1f", "\u3000\t"]


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(documents, "BLOCK_BYTES", 37)  # many blocks, most cut inside a line


@pytest.fixture
def inputs(tmp_path):
    texts = [text[:300] for text in multiscript_texts()[:40]] + ODD
    txt = tmp_path / "a.txt"
    txt.write_bytes("\n".join(t.replace("\n", " ") for t in texts[:20]).encode() + b"\n\n\n" +
                    "\n".join(ODD).encode())  # no final newline
    jsonl = tmp_path / "b.jsonl"
    lines = []
    for n, text in enumerate(texts):
        lines.append(json.dumps({"text": text, "n": n}, ensure_ascii=False))
        lines.append(BLANK_JSONL_LINES[n % len(BLANK_JSONL_LINES)])
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    empty = tmp_path / "c.txt"
    empty.write_bytes(b"")
    parquet = tmp_path / "d.parquet"
    pq.write_table(pa.table({"text": texts[:25], "other": list(range(25))}), parquet, row_group_size=4)
    return [txt, empty, jsonl, parquet, jsonl]


def _from_index(paths, positions, document):
    firsts = [position.document for position in positions]
    position = positions[bisect.bisect_right(firsts, document) - 1]
    return list(iter_documents_at(paths, position, document - position.document))


@pytest.mark.parametrize("block_bytes", [37, 1 << 24])
def test_every_document_is_reached_from_the_index(inputs, monkeypatch, block_bytes):
    monkeypatch.setattr(documents, "BLOCK_BYTES", block_bytes)
    expected = read_documents(inputs)
    n_documents, positions = index_documents(inputs)
    assert n_documents == len(expected) == documents.count_documents(inputs)
    assert (max(position.offset for position in positions) > 1000) == (block_bytes == 37)  # mid-file starts
    for document in range(n_documents):
        assert _from_index(inputs, positions, document) == expected[document:], document


def test_errors_name_the_place_when_read_from_a_later_block(tmp_path, tiny_blocks):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": f"document {n}"}) + "\n" for n in range(30)) + "{broken\n",
                    encoding="utf-8")
    n_documents, positions = index_documents([path])
    assert n_documents == 31 and positions[-1].offset > 0
    with pytest.raises(DocumentError, match=r"docs.jsonl:31: not JSON"):
        _from_index([path], positions, 29)
    latin1 = tmp_path / "latin1.txt"
    content = b"".join(b"line %d\n" % n for n in range(30)) + b"caf\xe9\n"
    latin1.write_bytes(content)
    with pytest.raises(UnicodeDecodeError) as whole_file:
        content.decode("utf-8")
    reason, start = whole_file.value.reason, whole_file.value.start
    n_documents, positions = index_documents([latin1])  # counts lines, decodes nothing
    assert n_documents == 31
    with pytest.raises(DocumentError, match=f"not UTF-8 \\({reason} at byte {start}\\)"):
        _from_index([latin1], positions, 29)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok")
    tokenizer_zoo.load("small_added_flags").save(str(path / "tokenizer.json"))
    return path


def test_shards_equal_single_process_prepare(inputs, tokenizer_dir, tmp_path, tiny_blocks):
    sharded = shards.prepare_shards(inputs, tmp_path / "shards", tokenizer_dir, shards=7, workers=1,
                                    start_token=START)
    texts = read_documents(inputs)
    whole = corpus.prepare(inputs, tmp_path / "whole.ttc", tokenizer_dir, start_token=START)
    assert np.array_equal(np.concatenate([shard.ids for shard in sharded.shards]), whole.ids)
    for k, shard in enumerate(sharded.shards):
        # the reference shard: its documents, read from the start of the inputs, prepared in one process
        part = tmp_path / f"part-{k}.jsonl"
        part.write_text("".join(json.dumps({"text": text}, ensure_ascii=False) + "\n"
                                for text in texts[k * len(texts) // 7:(k + 1) * len(texts) // 7]), encoding="utf-8")
        reference = corpus.prepare([part], tmp_path / f"part-{k}.ttc", tokenizer_dir, start_token=START)
        assert shard.path.read_bytes() == reference.path.read_bytes(), k


def test_worker_processes_write_the_same_shards(inputs, tokenizer_dir, tmp_path):
    one = shards.prepare_shards(inputs, tmp_path / "one", tokenizer_dir, shards=5, workers=1, start_token=START)
    two = shards.prepare_shards(inputs, tmp_path / "two", tokenizer_dir, shards=5, workers=2, start_token=START)
    for ours, reference in zip(two.shards, one.shards, strict=True):
        assert ours.path.read_bytes() == reference.path.read_bytes()
