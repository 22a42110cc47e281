"""One reader of text documents for every command (bench, conformance, train, prepare).

- `.txt`: one document per line. Lines are split on "\\n" only, so U+2028, U+0085 or a lone "\\r" inside a
  document stay part of it; a "\\r" before the "\\n" is kept too (it is the document's text). Empty
  lines are skipped.
- `.jsonl`: one JSON record per line, the document is the record's `text_field` (a string). Lines are
  split on "\\n" only, as JSON Lines specifies; blank lines are skipped.
- `.parquet`: one document per row of the `text_field` column (needs `pyarrow`).

Every path is checked (exists, is a file, has a known suffix) before any document is read; a
malformed record raises `DocumentError` naming the file and line (or row). Text files are read in blocks
of whole lines, so memory stays bounded whatever the file size. `index_documents` finds, in one pass
that parses no record, a `Position` per block (per row group in parquet) from which `iter_documents_at`
reads the same documents as `iter_documents` does from that point: how a shard of a corpus starts
reading at its first document without reading what comes before.
"""
import dataclasses
import json
from pathlib import Path

SUFFIXES = (".txt", ".jsonl", ".parquet")
BLOCK_BYTES = 1 << 24  # text is read (and indexed) in blocks of whole lines of about this many bytes


class DocumentError(ValueError):
    """An input that is not a readable document file."""


@dataclasses.dataclass(frozen=True)
class Position:
    """A place in a list of document files where reading can start: a block of whole lines of a text file,
    or a row group of a parquet file."""
    document: int   # how many documents of the paths come before this place
    path: int       # index into the paths
    offset: int     # byte offset of the block's first line, or the row group's index
    line: int       # how many lines (rows) of the file come before this place


START = Position(0, 0, 0, 0)


def iter_documents(paths, text_field="text", batch_size=4096):
    """The documents of `paths` (one path or a list of them), in order."""
    return iter_records(paths, text_field, None, batch_size)


def iter_records(paths, text_field="text", messages_field=None, batch_size=4096):
    """As iter_documents, but a .jsonl record or parquet row whose `messages_field` is set (not null) is a
    dialogue: its messages (a list) come in place of a text."""
    return _records(check_paths(paths), START, 0, text_field, messages_field, batch_size)


def iter_documents_at(paths, position, skip=0, text_field="text", batch_size=4096):
    """The documents of `paths` from `position` (one of `index_documents(paths)`'s) on, after skipping
    `skip` of them (counted, not parsed): those of iter_documents from document position.document + skip."""
    return _records(check_paths(paths), position, skip, text_field, None, batch_size)


def index_documents(paths, text_field="text"):
    """(document count, positions in order, one per text block or parquet row group) of `paths`, from one
    pass that counts lines but neither decodes nor parses them (of a parquet file it reads the metadata
    and checks the column); a reader reports bad UTF-8 or a bad record where it meets it. The document at
    index d is read from the last position p with p.document <= d, skipping d - p.document documents."""
    paths = check_paths(paths)
    positions, total = [], 0
    for index, path in enumerate(paths):
        if path.suffix == ".parquet":
            parquet = _parquet_file(path)
            if text_field not in parquet.schema_arrow.names:
                raise DocumentError(f"{path}: no column {text_field!r}")
            row = 0
            for group in range(parquet.metadata.num_row_groups):
                positions.append(Position(total, index, group, row))
                rows = parquet.metadata.row_group(group).num_rows
                total, row = total + rows, row + rows
            continue
        before = 0
        for offset, data in _byte_blocks(path):
            lines = _split(data, b"\n")
            positions.append(Position(total, index, offset, before))
            total, before = total + _count_documents_in(path, lines), before + len(lines)
    return total, positions


def count_documents(paths, text_field="text"):
    """How many documents iter_documents yields (for a progress bar's total): counted without parsing."""
    total = 0
    for path in check_paths(paths):
        if path.suffix == ".parquet":
            total += _parquet_file(path).metadata.num_rows
        else:
            total += sum(_count_documents_in(path, _split(data, b"\n")) for _, data in _byte_blocks(path))
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


def _records(paths, position, skip, text_field, messages_field, batch_size):
    for index in range(position.path, len(paths)):
        path = paths[index]
        offset, before = (position.offset, position.line) if index == position.path else (0, 0)
        if path.suffix == ".parquet":
            skip = yield from _parquet(path, text_field, messages_field, batch_size, offset, before, skip)
        elif path.suffix == ".jsonl":
            skip = yield from _jsonl(path, text_field, messages_field, offset, before, skip)
        else:
            skip = yield from _lines(path, offset, skip)


def _byte_blocks(path, offset=0):
    """(byte offset, data) for consecutive blocks of whole lines of `path` from `offset` (a line start) on;
    the last block may end without "\\n"."""
    with open(path, "rb") as file:  # bytes, not text mode: its universal newlines would cut at "\r"
        file.seek(offset)
        pending = []  # what was read after the last "\n" so far
        while True:
            read = file.read(BLOCK_BYTES)
            cut = read.rfind(b"\n") + 1 if read else len(read)  # at the end, the rest is the last line
            if read and not cut:
                pending.append(read)
                continue
            data = b"".join([*pending, read[:cut]])
            pending = [read[cut:]]
            if data:
                yield offset, data
                offset += len(data)
            if not read:
                return


def _split(data, newline):
    lines = data.split(newline)
    if lines[-1] == newline[:0]:
        lines.pop()  # the empty piece after a block's last newline is no line
    return lines


def _line_blocks(path, offset=0, before=0):
    """(lines before the block, its lines) for consecutive blocks of whole lines of `path` from `offset`
    (a line start, `before` lines into the file) on, split on "\\n" only and decoded as UTF-8."""
    for block_offset, data in _byte_blocks(path, offset):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DocumentError(f"{path}: not UTF-8 ({error.reason} at byte {block_offset + error.start})") from None
        lines = _split(text, "\n")
        yield before, lines
        before += len(lines)


def _count_documents_in(path, lines):
    """How many documents the reader finds in these lines (bytes, not decoded)."""
    if path.suffix == ".jsonl":
        return sum(1 for line in lines if _is_record(line))
    return len(lines) - lines.count(b"")


def _is_record(line):
    """Whether a .jsonl line is not blank, as the reader's str.strip() sees it."""
    stripped = line.strip()  # ASCII whitespace, all of which str.strip() strips too
    if not stripped:
        return False
    if 0x21 <= stripped[0] <= 0x7E:
        return True
    return bool(line.decode("utf-8", "replace").strip())  # \x1c-\x1f, U+0085, U+2028...; the reader reports bad UTF-8


def _lines(path, offset, skip):
    for _, lines in _line_blocks(path, offset):
        for text in lines:
            if text:
                if skip:
                    skip -= 1
                else:
                    yield text
    return skip


def _jsonl(path, text_field, messages_field, offset, before, skip):
    for block_before, lines in _line_blocks(path, offset, before):
        for number, text in enumerate(lines, block_before + 1):
            if not text.strip():
                continue
            if skip:
                skip -= 1
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as error:
                raise DocumentError(f"{path}:{number}: not JSON ({error.msg})") from None
            yield _pick(record, text_field, messages_field, f"{path}:{number}")
    return skip


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


def _parquet_file(path):
    try:
        import pyarrow.parquet as pq
    except ModuleNotFoundError:
        raise DocumentError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
    return pq.ParquetFile(path)


def _parquet(path, text_field, messages_field, batch_size, group, row, skip):
    parquet = _parquet_file(path)
    names = parquet.schema_arrow.names
    columns = [name for name in (text_field, messages_field) if name is not None and name in names]
    if text_field not in names and (messages_field is None or messages_field not in names):
        raise DocumentError(f"{path}: no column {text_field!r}")
    groups = range(group, parquet.metadata.num_row_groups)
    for batch in parquet.iter_batches(batch_size=batch_size, row_groups=groups, columns=columns):
        if skip:
            skipped = min(skip, batch.num_rows)
            batch, skip, row = batch.slice(skipped), skip - skipped, row + skipped
        for record in batch.to_pylist():
            yield _pick(record, text_field, messages_field, f"{path}: row {row}")
            row += 1
    return skip
