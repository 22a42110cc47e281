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
    return iter_records(paths, text_field, None, batch_size)


def iter_records(paths, text_field="text", messages_field=None, batch_size=4096):
    """As iter_documents, but a .jsonl record or parquet row whose `messages_field` is set (not null) is a
    dialogue: its messages (a list) come in place of a text."""
    paths = check_paths(paths)
    for path in paths:
        if path.suffix == ".jsonl":
            yield from _jsonl(path, text_field, messages_field)
        elif path.suffix == ".parquet":
            yield from _parquet(path, text_field, messages_field, batch_size)
        else:
            yield from _lines(path)


def count_documents(paths, text_field="text"):
    """How many documents iter_documents yields (for a progress bar's total): counted without parsing."""
    total = 0
    for path in check_paths(paths):
        if path.suffix == ".parquet":
            try:
                import pyarrow.parquet as pq
            except ModuleNotFoundError:
                raise DocumentError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
            total += pq.ParquetFile(path).metadata.num_rows
        elif path.suffix == ".jsonl":
            total += sum(1 for line in _split_lines(path) if line.strip())
        else:
            total += sum(1 for line in _split_lines(path) if line)
    return total


def check_paths(paths):
    """`paths` (one or a list) as Paths, each checked to be a readable document file (DocumentError)."""
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(path) for path in paths]
    for path in paths:
        _check(path)
    return paths


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


def _jsonl(path, text_field, messages_field=None):
    documents = []
    for number, line in enumerate(_split_lines(path), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DocumentError(f"{path}:{number}: not JSON ({error.msg})") from None
        documents.append(_pick(record, text_field, messages_field, f"{path}:{number}"))
    return documents


def _pick(record, text_field, messages_field, where):
    if messages_field is not None and isinstance(record, dict) and record.get(messages_field) is not None:
        messages = record[messages_field]
        if not isinstance(messages, list):
            raise DocumentError(f"{where}: {messages_field!r} is not a list of messages")
        return messages
    text = record.get(text_field) if isinstance(record, dict) else None
    if not isinstance(text, str):
        if messages_field is not None:
            raise DocumentError(f"{where}: has neither a string {text_field!r} nor {messages_field!r}")
        raise DocumentError(f"{where}: no string field {text_field!r}")
    return text


def _parquet(path, text_field, messages_field, batch_size):
    try:
        import pyarrow.parquet as pq
    except ModuleNotFoundError:
        raise DocumentError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
    parquet = pq.ParquetFile(path)
    names = parquet.schema_arrow.names
    columns = [name for name in (text_field, messages_field) if name is not None and name in names]
    if text_field not in names and (messages_field is None or messages_field not in names):
        raise DocumentError(f"{path}: no column {text_field!r}")
    row = 0
    for batch in parquet.iter_batches(batch_size=batch_size, columns=columns):
        for record in batch.to_pylist():
            yield _pick(record, text_field, messages_field, f"{path}: row {row}")
            row += 1
