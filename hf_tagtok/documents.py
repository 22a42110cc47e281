"""One reader of text documents for every command (bench, conformance, train, prepare).

- `.txt`: one document per line. Lines are split on "\\n" only, so U+2028, U+0085 or a lone "\\r" inside a
  document stay part of it; a "\\r" before the "\\n" is kept too (it is the document's text). Empty
  lines are skipped.
- `.jsonl`: one JSON record per line, the document is the record's `text_field` (a string). Lines are
  split on "\\n" only, as JSON Lines specifies; blank lines are skipped.
- `.parquet`: one document per row of the `text_field` column (needs `pyarrow`).

Every path is checked (exists, is a file, has a known suffix) before any document is read; a
malformed record raises `DocumentError` naming the file and line (or row).
"""
import json
from pathlib import Path

SUFFIXES = (".txt", ".jsonl", ".parquet")


class DocumentError(ValueError):
    """An input that is not a readable document file."""


def iter_documents(paths, text_field="text", batch_size=4096):
    """The documents of `paths` (one path or a list of them), in order."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    for path in map(Path, paths):
        _check(path)
    for path in map(Path, paths):
        if path.suffix == ".jsonl":
            yield from _jsonl(path, text_field)
        elif path.suffix == ".parquet":
            yield from _parquet(path, text_field, batch_size)
        else:
            yield from _lines(path)


def read_documents(paths, text_field="text"):
    """All documents of `paths` as a list."""
    return list(iter_documents(paths, text_field))


def _check(path):
    if not path.exists():
        raise DocumentError(f"{path}: no such file")
    if path.is_dir():
        raise DocumentError(f"{path}: is a directory (give the document files)")
    if path.suffix not in SUFFIXES:
        raise DocumentError(f"{path}: unsupported input type {path.suffix!r} (use {', '.join(SUFFIXES)})")


def _split_lines(path):
    try:
        text = path.read_bytes().decode("utf-8")  # not read_text: its universal newlines would cut at "\r"
    except UnicodeDecodeError as error:
        raise DocumentError(f"{path}: not UTF-8 ({error.reason} at byte {error.start})") from None
    return text.split("\n")


def _lines(path):
    return (line for line in _split_lines(path) if line)


def _jsonl(path, text_field):
    documents = []
    for number, line in enumerate(_split_lines(path), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DocumentError(f"{path}:{number}: not JSON ({error.msg})") from None
        text = record.get(text_field) if isinstance(record, dict) else None
        if not isinstance(text, str):
            raise DocumentError(f"{path}:{number}: no string field {text_field!r}")
        documents.append(text)
    return documents


def _parquet(path, text_field, batch_size):
    try:
        import pyarrow.parquet as pq
    except ModuleNotFoundError:
        raise DocumentError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
    parquet = pq.ParquetFile(path)
    if text_field not in parquet.schema_arrow.names:
        raise DocumentError(f"{path}: no column {text_field!r}")
    row = 0
    for batch in parquet.iter_batches(batch_size=batch_size, columns=[text_field]):
        for text in batch.column(0).to_pylist():
            if not isinstance(text, str):
                raise DocumentError(f"{path}: row {row} has no string {text_field!r}")
            row += 1
            yield text
