"""Prepared corpora: token ids bound to the tokenizer that made them.

File layout (little-endian), a 64-byte header then the payload:

    0  magic b"TTC1"      4  version u16         6  id width in bits u16 (16 or 32)
    8  flags u32 (bit 0: response mask present)  12 start marker id u32
    16 token count u64    24 document count u64
    32 tokenizer identity: first 16 bytes of blake3(tokenizer.json)
    48 digest: blake3(payload + header[0:48]), 16 bytes
    64 ids (count x width), then the response mask (count x u8) when flagged

Every document is its start marker followed by its ids; the marker occurs nowhere else, so the
document count is checkable. The mask is 1 on tokens that are training targets (all text tokens of a
plain document, the assistant tokens of a dialogue), 0 on markers and prompts. Writes go to a
temporary file renamed into place, so a file at the final path is always complete.
"""
import argparse
import builtins
import dataclasses
import itertools
import os
import struct
import sys
from pathlib import Path

import numpy as np

from hf_tagtok.tokenizer_identity import _blake3, identity as tokenizer_identity

MAGIC = b"TTC1"
VERSION = 1
HEADER = struct.Struct("<4sHHIIQQ16s16s")
HEADER_SIZE = HEADER.size  # 64
FLAG_RESPONSE_MASK = 1
_HASHED_HEADER = 48
_CHUNK = 1 << 22
_START_TOKEN_CANDIDATES = ("<|start|>", "<|begin_of_text|>", "<s>", "<bos>", "<|endoftext|>")


class CorpusError(ValueError):
    """A prepared corpus that is malformed, tampered with, or made by another tokenizer."""


@dataclasses.dataclass(frozen=True, eq=False)
class PreparedCorpus:
    path: Path
    ids: np.ndarray              # np.memmap, uint16 or uint32
    response_mask: np.ndarray    # np.memmap uint8, or None
    n_documents: int
    start_id: int
    tokenizer_identity: str      # hex of the stored 16-byte identity prefix

    def document_starts(self) -> np.ndarray:
        return np.flatnonzero(self.ids == self.start_id)


# ---------------------------------------------------------------------- loading

def open(path, *, tokenizer) -> PreparedCorpus:  # noqa: A001 - mirrors builtins.open on purpose
    """Memory-map a prepared corpus after verifying its digest, counts and tokenizer identity.

    tokenizer: the tokenizer the corpus must have been made with (directory, tokenizer.json path,
    tokenizer object, or its identity hex). Raises CorpusError on any mismatch. A shard manifest
    (`hf_tagtok.shards`) opens every shard, verified, as a `ShardedCorpus`.
    """
    path = Path(path)
    if path.suffix == ".json":
        from hf_tagtok.shards import open_manifest
        return open_manifest(path, tokenizer=tokenizer)
    expected = tokenizer if _is_identity_hex(tokenizer) else tokenizer_identity(tokenizer)
    size = path.stat().st_size
    if size < HEADER_SIZE:
        raise CorpusError(f"{path}: {size} bytes is shorter than the {HEADER_SIZE}-byte header (truncated?)")
    with builtins.open(path, "rb") as f:
        header = f.read(HEADER_SIZE)
    magic, version, id_bits, flags, start_id, n_tokens, n_docs, ident, digest = HEADER.unpack(header)
    if magic != MAGIC:
        raise CorpusError(f"{path}: not a prepared corpus (magic {magic!r})")
    if version != VERSION or id_bits not in (16, 32) or flags & ~FLAG_RESPONSE_MASK:
        raise CorpusError(f"{path}: unsupported format (version {version}, {id_bits}-bit ids, flags {flags:#x})")
    has_mask = bool(flags & FLAG_RESPONSE_MASK)
    want_size = HEADER_SIZE + n_tokens * (id_bits // 8 + has_mask)
    if size != want_size:
        raise CorpusError(f"{path}: {size} bytes but the header's {n_tokens} tokens need {want_size} (truncated or padded)")
    if ident != bytes.fromhex(expected)[:16]:
        raise CorpusError(f"{path}: made by tokenizer {ident.hex()}..., not by {expected[:32]}...")
    if _file_digest(path, header) != digest:
        raise CorpusError(f"{path}: payload digest mismatch (file corrupted or modified)")
    dtype = np.dtype("<u2" if id_bits == 16 else "<u4")
    ids = np.memmap(path, dtype=dtype, mode="r", offset=HEADER_SIZE, shape=(n_tokens,)) if n_tokens else np.zeros(0, dtype)
    mask = None
    if has_mask:
        mask = np.memmap(path, dtype=np.uint8, mode="r", offset=HEADER_SIZE + n_tokens * dtype.itemsize,
                         shape=(n_tokens,)) if n_tokens else np.zeros(0, np.uint8)
    starts = int(np.count_nonzero(ids == start_id))
    if starts != n_docs or (n_tokens and ids[0] != start_id):
        raise CorpusError(f"{path}: header says {n_docs} documents but the ids hold {starts} start markers")
    return PreparedCorpus(path, ids, mask, n_docs, start_id, ident.hex())


def _is_identity_hex(value):
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _file_digest(path, header):
    hasher = _blake3()
    with builtins.open(path, "rb") as f:
        f.seek(HEADER_SIZE)
        while chunk := f.read(_CHUNK):
            hasher.update(chunk)
    hasher.update(header[:_HASHED_HEADER])
    return hasher.digest(length=16)


# ---------------------------------------------------------------------- writing

class CorpusWriter:
    """Streams documents into `path` atomically: use as a context manager, then add documents."""

    def __init__(self, path, *, identity: str, vocab_size: int, start_id: int):
        if not 0 <= start_id < vocab_size:
            raise ValueError(f"start marker id {start_id} is outside the vocabulary (size {vocab_size})")
        self.path = Path(path)
        self.identity = identity
        self.start_id = start_id
        self.dtype = np.dtype("<u2" if vocab_size <= 1 << 16 else "<u4")
        self.n_tokens = self.n_documents = 0
        self.has_dialogue = False

    def __enter__(self):
        remove_leftovers(self.path)
        tmp = f"{_temporary_prefix(self.path)}{os.getpid()}"
        self._ids_path = self.path.with_name(tmp)
        self._mask_path = self.path.with_name(tmp + "-mask")
        self._ids = builtins.open(self._ids_path, "wb")
        self._mask = builtins.open(self._mask_path, "wb")
        self._ids.write(bytes(HEADER_SIZE))
        self._hasher = _blake3()
        return self

    def add(self, ids, response_mask=None):
        """One document: its ids (a start marker is written first; a leading one is reused) and,
        optionally, its training targets (otherwise every token of the document is one)."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        self.add_batch(ids, [ids.size], response_mask)

    def add_batch(self, ids, lengths, response_mask=None):
        """Documents back to back: ids flat, lengths per document, response_mask flat or None."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        lengths = np.asarray(lengths, dtype=np.int64).ravel()
        if lengths.min(initial=0) < 0 or lengths.sum() != ids.size:
            raise ValueError("lengths must be >= 0 and add up to the number of ids")
        if ids.size and (ids.min() < 0 or ids.max() > np.iinfo(self.dtype).max):
            raise ValueError("token id outside the corpus id width")
        mask = np.ones(ids.size, np.uint8) if response_mask is None else np.asarray(response_mask, np.uint8).ravel()
        if mask.shape != ids.shape or mask.max(initial=0) > 1:
            raise ValueError("response_mask must be 0/1 with one entry per id")
        starts = np.cumsum(lengths) - lengths
        leading = np.zeros(lengths.size, bool)
        nonempty = lengths > 0
        leading[nonempty] = ids[starts[nonempty]] == self.start_id
        keep = np.ones(ids.size, bool)
        keep[starts[leading]] = False
        ids, mask, lengths = ids[keep], mask[keep], lengths - leading
        if np.any(ids == self.start_id):
            raise ValueError(f"a document contains the start marker id {self.start_id}; pick another start token")
        at = np.cumsum(lengths) - lengths
        data = np.insert(ids, at, self.start_id).astype(self.dtype).tobytes()
        self._ids.write(data)
        self._hasher.update(data)
        self._mask.write(np.insert(mask, at, 0).tobytes())
        self.has_dialogue |= response_mask is not None
        self.n_tokens += ids.size + lengths.size
        self.n_documents += lengths.size

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self._finish()
        finally:
            for f in (self._ids, self._mask):
                f.close()
            for p in (self._ids_path, self._mask_path):
                if p.exists():
                    p.unlink()
        return False

    def _finish(self):
        self._mask.close()
        if self.has_dialogue:
            with builtins.open(self._mask_path, "rb") as m:
                while chunk := m.read(_CHUNK):
                    self._ids.write(chunk)
                    self._hasher.update(chunk)
        flags = FLAG_RESPONSE_MASK if self.has_dialogue else 0
        head = HEADER.pack(MAGIC, VERSION, self.dtype.itemsize * 8, flags, self.start_id, self.n_tokens,
                           self.n_documents, bytes.fromhex(self.identity)[:16], bytes(16))
        self._hasher.update(head[:_HASHED_HEADER])
        head = head[:_HASHED_HEADER] + self._hasher.digest(length=16)
        self._ids.seek(0)
        self._ids.write(head)
        self._ids.flush()
        os.fsync(self._ids.fileno())
        self._ids.close()
        os.replace(self._ids_path, self.path)


def _temporary_prefix(path):
    return f".{Path(path).name}.tmp-"


def remove_leftovers(path):
    """Remove the temporary files an interrupted write of `path` left (their process is gone); returns them."""
    path = Path(path)
    removed = []
    prefix = _temporary_prefix(path)
    for candidate in path.parent.glob(f"{prefix}*") if path.parent.is_dir() else ():
        pid = candidate.name[len(prefix):].removesuffix("-mask")
        if pid.isdigit() and not _process_alive(int(pid)):
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed


def _process_alive(pid):
    if pid == os.getpid():
        return False  # ours, from an earlier write that was interrupted in this process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------------- preparing

def prepare(inputs, out, tokenizer, *, text_field="text", messages_field="messages", start_token=None,
            batch_size=1024, num_proc=None, progress=None) -> PreparedCorpus:
    """Tokenize inputs into a prepared corpus at `out` and return it opened (verified).

    inputs: paths read by `hf_tagtok.documents` (.txt = one document per line, .jsonl = one per record,
    .parquet = one per row),
    or a `datasets.Dataset` (tokenized with `datasets.map`, batched, `num_proc`). Records holding
    `messages_field` are dialogues, encoded with `DialogueProtocol` (ids plus response mask); the
    others use `text_field`. Text is encoded without the post-processor's special tokens and with
    special-token strings taken literally, so documents never contain a marker by accident.
    tokenizer: a tokenizer directory (or tokenizer.json path).
    progress: a tqdm-like bar updated by the number of documents written.
    """
    tokenizer = Path(tokenizer)
    encoder = _Encoder(tokenizer)
    start_id = encoder.start_id(start_token)
    writer = CorpusWriter(out, identity=tokenizer_identity(tokenizer), vocab_size=encoder.vocab_size,
                          start_id=start_id)
    with writer:
        if _is_dataset(inputs):
            documents = _dataset_documents(inputs, encoder, text_field, messages_field, batch_size, num_proc)
        else:
            documents = _file_documents(inputs, encoder, text_field, messages_field, batch_size)
        for ids, lengths, mask in documents:
            writer.add_batch(ids, lengths, mask)
            if progress is not None:
                progress.update(len(lengths))
    return open(out, tokenizer=tokenizer)


class _Encoder:
    """The fastest exact encoder for a tokenizer directory: hf_tagtok.Tokenizer (native where it
    covers the pipeline, stock otherwise). Picklable for datasets.map(num_proc=...)."""

    def __init__(self, tokenizer_path: Path):
        from hf_tagtok.tokenizer import Tokenizer

        self.path = tokenizer_path
        json_path = tokenizer_path / "tokenizer.json" if tokenizer_path.is_dir() else tokenizer_path
        self.tokenizer = Tokenizer.from_file(json_path)
        self.tokenizer.encode_special_tokens = True
        self.vocab_size = self.tokenizer.get_vocab_size(with_added_tokens=True)
        self._dialogue = None

    def start_id(self, start_token):
        names = (start_token,) if start_token else _START_TOKEN_CANDIDATES
        for name in names:
            token_id = self.tokenizer.token_to_id(name)
            if token_id is not None:
                return token_id
        raise ValueError(f"no start marker token: {start_token!r} is not in the vocabulary" if start_token else
                         f"the tokenizer has none of {list(_START_TOKEN_CANDIDATES)}; name one it has "
                         "(--start-token, or start_token= in Python)")

    def texts(self, texts):
        """(ids flat, lengths, None) for a batch of plain documents."""
        batch = self.tokenizer.encode_batch_arrays(list(texts), add_special_tokens=False, offsets=False)
        return batch.ids, batch.lengths, None

    def dialogue(self, messages):
        """(ids, [length], response mask) for one conversation."""
        if self._dialogue is None:
            from hf_tagtok.dialogue import DialogueProtocol

            self._dialogue = DialogueProtocol(self.path if self.path.is_dir() else self.path.parent)
        ids, mask = self._dialogue.encode(messages)
        return np.asarray(ids, np.int64), [len(ids)], np.asarray(mask, np.uint8)


def _file_documents(inputs, encoder, text_field, messages_field, batch_size):
    from hf_tagtok.documents import iter_records

    pending = []
    for item in iter_records(inputs, text_field, messages_field, batch_size):
        if isinstance(item, str):
            pending.append(item)
            if len(pending) >= batch_size:
                yield encoder.texts(pending)
                pending.clear()
            continue
        if pending:
            yield encoder.texts(pending)
            pending.clear()
        yield encoder.dialogue(item)
    if pending:
        yield encoder.texts(pending)


def _encode_records(records, encoder, text_field, messages_field, batch_size, source):
    pending = []

    def flush():
        if pending:
            yield encoder.texts(pending)
            pending.clear()

    for n, record in enumerate(records):
        if record.get(messages_field) is not None:
            yield from flush()
            yield encoder.dialogue(record[messages_field])
        elif isinstance(record.get(text_field), str):
            pending.append(record[text_field])
            if len(pending) >= batch_size:
                yield from flush()
        else:
            raise ValueError(f"{source}: record {n} has neither a string {text_field!r} nor {messages_field!r}")
    yield from flush()


def _is_dataset(value):
    return type(value).__module__.startswith("datasets.") and hasattr(value, "map")


def _dataset_documents(dataset, encoder, text_field, messages_field, batch_size, num_proc):
    def encode(batch):
        records = [dict(zip(batch, row)) for row in zip(*batch.values())]
        ids, masks = [], []
        for flat, lengths, mask in _encode_records(records, encoder, text_field, messages_field, len(records), "dataset"):
            for part, part_mask in zip(np.split(flat, np.cumsum(lengths)[:-1]),
                                       [None] * len(lengths) if mask is None else [mask]):
                ids.append(part.tolist())
                masks.append(None if part_mask is None else part_mask.tolist())
        return {"_ids": ids, "_mask": masks}

    mapped = dataset.map(encode, batched=True, batch_size=batch_size, num_proc=num_proc,
                         remove_columns=dataset.column_names, desc="hf-tagtok prepare")
    for batch in mapped.iter(batch_size=batch_size):
        lengths = [len(ids) for ids in batch["_ids"]]
        flat = np.fromiter(itertools.chain.from_iterable(batch["_ids"]), np.int64, sum(lengths))
        masks = batch["_mask"]
        mask = None if all(m is None for m in masks) else np.fromiter(
            itertools.chain.from_iterable([1] * n if m is None else m for n, m in zip(lengths, masks)), np.uint8, sum(lengths))
        yield flat, lengths, mask


# ---------------------------------------------------------------------- CLI

def main(argv=None):
    from hf_tagtok import cli_support, documents
    from hf_tagtok import shards as shards_module

    parser = cli_support.parser("hf-tagtok prepare",
                                "Tokenize text/JSONL/Parquet into a fingerprinted prepared corpus.")
    parser.add_argument("inputs", nargs="+", help="documents: .txt (one per line), .jsonl (one per record), "
                        ".parquet (one per row)")
    parser.add_argument("--tokenizer", required=True, help="tokenizer directory or tokenizer.json (local)")
    parser.add_argument("--out", required=True, help="output corpus file")
    parser.add_argument("--text-field", default="text", help="the text field of .jsonl records and parquet rows")
    parser.add_argument("--messages-field", default="messages",
                        help="records with this field are dialogues (ids plus a response mask)")
    parser.add_argument("--start-token", default=None,
                        help=f"document start marker (default: the first of {', '.join(_START_TOKEN_CANDIDATES)} "
                             "the tokenizer has)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--shards", type=cli_support.positive_int, default=None,
                        help="write N shards and a manifest.json into the --out directory (text documents only; "
                             "a rerun keeps the shards that verify); default: one file")
    parser.add_argument("--engine", choices=shards_module.ENGINES, default="local",
                        help="with --shards: local processes or Ray tasks (ray.init() picks the cluster)")
    parser.add_argument("--workers", type=cli_support.thread_count, default=None,
                        help="with --shards --engine local: worker processes (default: the machine's CPUs)")
    args = parser.parse_args(argv)
    cli_support.require("prepare", "blake3")
    tokenizer = cli_support.tokenizer_location(args.tokenizer)
    inputs = documents.check_paths(args.inputs)
    if args.shards is not None:
        return _prepare_shards_main(args, inputs, tokenizer)
    tokenizer_json = tokenizer / "tokenizer.json" if tokenizer.is_dir() else tokenizer
    out = cli_support.writable_output(args.out, [*inputs, tokenizer_json], args.force)
    for leftover in remove_leftovers(out):
        print(f"removed {leftover} (left by an interrupted run)", file=sys.stderr)
    bar = None if args.no_progress else cli_support.progress_bar(
        None, total=documents.count_documents(inputs, args.text_field), unit="docs", desc="preparing")
    try:
        corpus = prepare(inputs, out, tokenizer, text_field=args.text_field, messages_field=args.messages_field,
                         start_token=args.start_token, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    mask = "with response mask" if corpus.response_mask is not None else "no response mask"
    print(f"{corpus.path}: {corpus.ids.size} tokens, {corpus.n_documents} documents, "
          f"{corpus.ids.dtype.itemsize * 8}-bit ids, {mask}, tokenizer {corpus.tokenizer_identity}")
    return 0


def _prepare_shards_main(args, inputs, tokenizer):
    from hf_tagtok import cli_support, shards
    if args.engine == "ray":
        cli_support.require("prepare --engine ray", "ray")
    sharded = shards.prepare_shards(inputs, args.out, tokenizer, shards=args.shards, engine=args.engine,
                                           text_field=args.text_field, start_token=args.start_token,
                                           workers=args.workers)
    print(f"{sharded.manifest}: {len(sharded.shards)} shards, {sharded.n_tokens} tokens, "
          f"{sharded.n_documents} documents, tokenizer {sharded.tokenizer_identity}")
    return 0
