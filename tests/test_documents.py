"""The one document reader: .txt lines, .jsonl records, parquet rows, and its errors."""
import json

import pytest

from hf_tagtok.documents import DocumentError, read_documents

SEPARATORS_INSIDE = ["a\u2028b", "c\u0085d", "e\rf", "tab\there", "x\u000by"]


def test_txt_is_one_document_per_newline_only(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(SEPARATORS_INSIDE) + "\n\n", encoding="utf-8")
    assert read_documents(path) == SEPARATORS_INSIDE


def test_jsonl_reads_the_text_field_and_keeps_line_separators_inside(tmp_path):
    path = tmp_path / "docs.jsonl"
    records = [{"text": text, "id": n} for n, text in enumerate(SEPARATORS_INSIDE)]
    # ensure_ascii=False writes U+2028/U+0085 raw, which str.splitlines would cut
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    assert read_documents(path) == SEPARATORS_INSIDE
    assert read_documents([path, path], text_field="text") == SEPARATORS_INSIDE * 2


def test_parquet_reads_the_column(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"content": SEPARATORS_INSIDE}), path)
    assert read_documents(path, text_field="content") == SEPARATORS_INSIDE
    with pytest.raises(DocumentError, match="no column 'text'"):
        read_documents(path)


@pytest.mark.parametrize("name, content, message", [
    ("missing.txt", None, "no such file"),
    ("docs.csv", "a,b\n", "unsupported input type '.csv'"),
    ("bad.jsonl", '{"text": "ok"}\n{"other": 1}\n', r"bad.jsonl:2: no string field 'text'"),
    ("broken.jsonl", '{"text": \n', r"broken.jsonl:1: not JSON"),
    ("latin1.txt", b"caf\xe9\n", "not UTF-8"),
])
def test_bad_inputs_name_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(DocumentError, match=message):
        read_documents(path)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(DocumentError, match="is a directory"):
        read_documents(tmp_path)
