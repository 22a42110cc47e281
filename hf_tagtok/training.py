"""Deterministic byte-level BPE training: `train_bpe` and `hf-tagtok train`.

Text units are lines (with their line ending) of each input file, or the strings of an iterator,
exactly as stock `Tokenizer.train` reads them; special tokens are cut out first, then every unit is
pre-tokenized and each unique pre-token counted. The C merge loop then merges the pair with the
highest frequency-weighted count, ties going to the smaller left, then right, token bytes. No merge
crosses a special token, a pre-token, a line or a file, and the merge order depends only on the
multiset of pre-tokens, so the same corpus gives a byte-identical tokenizer.json at any thread count.

Layout: special tokens first (ids 0..k-1), then the 256 bytes in byte order, then learned tokens.
`layout="start_end_unk"` prepends start/end/unknown specials, giving ids 0-2, bytes 3-258, merges from 259.
"""
import argparse
import collections
import concurrent.futures
import functools
import json
import os
import re
import sys
from pathlib import Path

import tokenizers
from tokenizers import decoders, pre_tokenizers

from hf_tagtok.pre_tokenizers import RECOGNISED_PATTERNS, byte_chars, char_bytes
from hf_tagtok.tokenizer_identity import IDENTITY_FILE, identity, write_identity

CL100K_PATTERN = RECOGNISED_PATTERNS["cl100k"]  # exactly the text Llama-3's tokenizer.json ships
START_END_UNK_TOKENS = ("<|start|>", "<|end|>", "<|unk|>")
MIN_VOCAB_SIZE, MAX_VOCAB_SIZE = 259, 65_536
LAYOUTS = ("plain", "start_end_unk")
_BATCH_UNITS = 4096
_BATCH_CHARS = 1 << 20
_MERGES_PER_PROGRESS_TICK = 256


def default_pre_tokenizer():
    """cl100k-style split (as Llama-3 ships it), then ByteLevel rendering without a prefix space."""
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(CL100K_PATTERN), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


def train_bpe(files_or_iterator, vocab_size, *, special_tokens=(), layout="plain", pre_tokenizer=None,
              min_pair_freq=1, threads=None, progress=None, split_digits=False, length=None) -> tokenizers.Tokenizer:
    """Train a byte-level BPE tokenizer; returns a stock `tokenizers.Tokenizer` (save with `save`).

    files_or_iterator: a path, a list of paths, or an iterable of strings (or of lists of strings).
    pre_tokenizer: a stock pre-tokenizer; ByteLevel rendering is appended when it has none.
    threads: pre-token counting workers (the result does not depend on it).
    split_digits: end the pre-tokenizer with Digits(individual_digits=True), so every digit is a pre-token
    of its own: no piece holds two digits (or a digit and anything else), and `hf_tagtok.numerals`
    reads numbers back from their digit pieces. The saved tokenizer keeps that pre-tokenizer.
    length: how many text units the iterator yields, for the progress bar's total.
    """
    specials = _special_tokens(special_tokens, layout)
    _check_vocab_size(vocab_size, len(specials))
    if min_pair_freq < 1:
        raise ValueError(f"min_pair_freq must be >= 1, got {min_pair_freq}")
    pre_tokenizer = _with_byte_level(pre_tokenizer or default_pre_tokenizer())
    if split_digits:
        # after ByteLevel rendering too: the alphabet renders the ASCII digits as themselves
        pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizer, pre_tokenizers.Digits(individual_digits=True)])
    show = sys.stderr.isatty() if progress is None else progress
    counts = count_pretokens(_text_batches(files_or_iterator), pre_tokenizer, specials, threads, show, total=length)
    vocab, merges = _learn_merges(counts, vocab_size, len(specials), min_pair_freq, show)
    return _assemble(vocab, merges, specials, pre_tokenizer)


def save(tokenizer: tokenizers.Tokenizer, out_dir) -> Path:
    """Write tokenizer.json (stock's canonical bytes, so identity(file) == identity(tokenizer)), a
    tokenizer_config.json that `AutoTokenizer` understands and the identity beside them; returns the
    tokenizer.json path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "tokenizer.json"
    _write_atomic(path, tokenizer.to_str(pretty=True).encode("utf-8"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast"}
    added = sorted(tokenizer.get_added_tokens_decoder().items())
    names = [token.content for _, token in added if token.special]
    if tuple(names[:3]) == START_END_UNK_TOKENS:
        config.update(bos_token=names[0], eos_token=names[1], unk_token=names[2])
    _write_atomic(out / "tokenizer_config.json", (json.dumps(config, indent=2) + "\n").encode("utf-8"))
    write_identity(out)
    return path


# ---------------------------------------------------------------------- pre-token counting

def count_pretokens(batches, pre_tokenizer, special_tokens=(), threads=None, progress=False, use_engine=None,
                    total=None):
    """Occurrences of every pre-token (as bytes) over batches of text units, special tokens cut out
    first; a `_train.PieceCounts` (`.to_dict()` for inspection). pre_tokenizer is the whole stock
    pipeline, ending in ByteLevel rendering (see `_with_byte_level`). The engine twin of the pre-tokenizer
    does the splitting when it has one whose pieces are plain slices of the text (use_engine=None:
    whenever possible); stock's pre_tokenize_str otherwise. Both give the same counts."""
    from hf_tagtok._train import PieceCounts

    cut = _special_token_cutter(special_tokens)
    split = _engine_splitter(pre_tokenizer) if use_engine is not False else None
    if use_engine and split is None:
        raise ValueError(f"no engine twin with slice pieces for {pre_tokenizer}")

    def count(batch):
        parts = cut(batch)
        counts = PieceCounts()
        if split is not None:
            counts.add_offsets(parts, *split(parts))
        else:
            run = pre_tokenizer.pre_tokenize_str
            counts.add(bytelevel_bytes(piece) for part in parts for piece, _ in run(part))
        return counts, len(batch)

    totals = PieceCounts()
    bar = _progress_bar(progress, "counting pre-tokens", unit="units", total=total)
    workers = max(1, threads or os.cpu_count() or 1)
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        pending = collections.deque()
        for batch in batches:
            pending.append(pool.submit(count, batch))
            while len(pending) > 2 * workers or (pending and pending[0].done()):
                _absorb(totals, pending.popleft().result(), bar)
        while pending:
            _absorb(totals, pending.popleft().result(), bar)
    if bar is not None:
        bar.close()
    return totals


def _absorb(totals, result, bar):
    counts, n_units = result
    totals.merge(counts)
    if bar is not None:
        bar.update(n_units)


def _engine_splitter(pre_tokenizer):
    """The engine twin's batch splitter when its pieces are slices of the input (no Metaspace
    rewriting, no ByteLevel prefix space); None when there is no such twin."""
    try:
        from hf_tagtok import pre_tokenizers as twins

        config = json.loads(pre_tokenizer.__getstate__())
        steps = twins.engine_steps(config)
        if any(s["kind"] == "metaspace" or (s["kind"] == "bytelevel" and s.get("add_prefix_space")) for s in steps):
            return None
        twin = twins.PreTokenizer.from_hf(config)
        twin.pre_tokenize_offsets(["probe"])  # builds the native program (ImportError/ValueError if none)
    except (ImportError, ValueError, TypeError):
        return None
    return twin.pre_tokenize_offsets


@functools.cache
def _byte_of_char():
    return str.maketrans({char: chr(byte) for char, byte in char_bytes().items()})


def bytelevel_bytes(piece: str) -> bytes:
    """The bytes a ByteLevel-rendered piece stands for (UnicodeEncodeError if it is not one)."""
    return piece.translate(_byte_of_char()).encode("latin-1")


def _special_token_cutter(special_tokens):
    """batch of units -> the non-empty parts left once special tokens are cut out."""
    if not special_tokens:
        return lambda batch: [unit for unit in batch if unit]
    # longest first: at one position the longest special wins, as stock's added-token matcher does
    pattern = re.compile("|".join(re.escape(t) for t in sorted(special_tokens, key=len, reverse=True)))

    def cut(batch):
        if not pattern.search("".join(batch)):  # one C scan spares the per-unit split in the usual case
            return [unit for unit in batch if unit]
        return [part for unit in batch for part in pattern.split(unit) if part]

    return cut


def _text_batches(source):
    paths = _as_paths(source)
    if paths is not None:
        yield from _file_batches(paths)
        return
    batch = []
    for item in source:
        if isinstance(item, str):
            batch.append(item)
        elif isinstance(item, (list, tuple)) and all(isinstance(s, str) for s in item):
            batch.extend(item)
        else:
            raise TypeError(f"expected str or list of str from the iterator, got {type(item).__name__}")
        if len(batch) >= _BATCH_UNITS:
            yield batch
            batch = []
    if batch:
        yield batch


def _as_paths(source):
    """Files to read, or None for an iterable of texts: a single str/Path is a file; so is every item
    of a list whose first item is a Path or names an existing file."""
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    elif not isinstance(source, (list, tuple)) or not source:
        return None
    elif not (isinstance(source[0], os.PathLike) or (isinstance(source[0], str) and os.path.isfile(source[0]))):
        return None
    for path in source:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"training file not found: {path}")
    return list(source)


def _file_batches(paths):
    # Lines end at "\n" only (a lone "\r" stays inside its line), as stock's line reader splits them.
    for path in paths:
        with open(path, "rb") as f:
            while lines := f.readlines(_BATCH_CHARS):
                parts = b"".join(lines).decode("utf-8").split("\n")
                yield [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


# ---------------------------------------------------------------------- merges and assembly

def _learn_merges(counts, vocab_size, n_specials, min_pair_freq, progress):
    from hf_tagtok._train import MergeLoop

    loop = MergeLoop(*counts.arrays(), n_specials)
    bar = _progress_bar(progress, "merging", total=vocab_size - n_specials - 256, unit="merges")
    while True:
        done = loop.run(vocab_size, min_pair_freq, _MERGES_PER_PROGRESS_TICK)
        if bar is not None:
            bar.update(done)
        if done == 0:
            break
    if bar is not None:
        bar.close()
    vocab = [loop.token_bytes(i) for i in range(n_specials, loop.vocab_size)]
    return vocab, loop.merges()


def _render(token: bytes) -> str:
    chars = byte_chars()
    return "".join(chars[b] for b in token)


def _assemble(vocab_bytes, merges, specials, pre_tokenizer):
    names = list(specials) + [_render(t) for t in vocab_bytes]
    model = {
        "type": "BPE", "dropout": None,
        "unk_token": None,  # every byte is a token, so a byte-level model never needs one
        "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
        "byte_fallback": False, "ignore_merges": False,
        "vocab": {name: i for i, name in enumerate(names)},
        "merges": [[names[left], names[right]] for left, right, _ in merges],
    }
    config = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, s in enumerate(specials)],
        "normalizer": None,
        "pre_tokenizer": json.loads(pre_tokenizer.__getstate__()),
        "post_processor": None,
        "decoder": json.loads(decoders.ByteLevel().__getstate__()),
        "model": model,
    }
    return tokenizers.Tokenizer.from_str(json.dumps(config))


def _with_byte_level(pre_tokenizer):
    config = json.loads(pre_tokenizer.__getstate__())
    steps = config["pretokenizers"] if config["type"] == "Sequence" else [config]
    if any(step["type"] == "ByteLevel" for step in steps):
        return pre_tokenizer
    return pre_tokenizers.Sequence([pre_tokenizer, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


def _special_tokens(special_tokens, layout):
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    specials = (START_END_UNK_TOKENS if layout == "start_end_unk" else ()) + tuple(special_tokens)
    if len(set(specials)) != len(specials) or not all(isinstance(s, str) and s for s in specials):
        raise ValueError(f"special tokens must be distinct non-empty strings, got {list(specials)}")
    return specials


def _check_vocab_size(vocab_size, n_specials):
    low = max(MIN_VOCAB_SIZE, n_specials + 256)
    if not isinstance(vocab_size, int) or not low <= vocab_size <= MAX_VOCAB_SIZE:
        raise ValueError(f"vocab_size must be an int in [{low}, {MAX_VOCAB_SIZE}], got {vocab_size!r}")


def _progress_bar(enabled, desc, **kwargs):
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(desc=desc, **kwargs)


def _write_atomic(path: Path, data: bytes):
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


# ---------------------------------------------------------------------- CLI

def _pre_tokenizer_of(path):
    path = Path(path)
    try:
        pre_tokenizer = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json" if path.is_dir() else path)).pre_tokenizer
    except Exception as exc:  # stock raises a bare Exception for unreadable files
        raise ValueError(f"cannot load a tokenizer from {path}: {exc}") from None
    if pre_tokenizer is None:
        raise ValueError(f"{path} has no pre-tokenizer")
    return pre_tokenizer


def main(argv=None):
    from hf_tagtok import cli_support, documents

    parser = cli_support.parser("hf-tagtok train", "Train a deterministic byte-level BPE tokenizer.")
    parser.add_argument("files", nargs="+", help="documents: .txt (one per line), .jsonl (--text-field), .parquet")
    parser.add_argument("--vocab-size", type=int, required=True, help="vocabulary size, special tokens included")
    parser.add_argument("--out", required=True, help="output directory (tokenizer.json, tokenizer_config.json, "
                        "the identity)")
    parser.add_argument("--text-field", default="text", help="the text field of .jsonl records and parquet rows")
    parser.add_argument("--threads", type=cli_support.thread_count, default=None,
                        help="pre-token counting threads (the result does not depend on it; default: all CPUs)")
    parser.add_argument("--layout", choices=LAYOUTS, default="start_end_unk",
                        help="start_end_unk: <|start|>, <|end|>, <|unk|> at ids 0-2, then the bytes; plain: the bytes "
                        "first")
    parser.add_argument("--special-token", action="append", default=[], dest="special_tokens",
                        help="an extra special token (repeat for more)")
    parser.add_argument("--min-pair-freq", type=cli_support.positive_int, default=1,
                        help="stop when the best pair occurs fewer times")
    parser.add_argument("--split-digits", action="store_true",
                        help="every digit its own pre-token: no multi-digit piece (hf_tagtok.numerals reads numbers)")
    parser.add_argument("--pre-tokenizer-from", metavar="TOKENIZER",
                        help="use the pre-tokenizer of this tokenizer directory or tokenizer.json (default: cl100k-style)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing tokenizer in --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    cli_support.require("train", "blake3")
    try:
        import hf_tagtok._train  # noqa: F401
    except ImportError as error:
        raise cli_support.UserError(f"the _train extension is not built ({error}): "
                                    "python setup.py build_ext --inplace") from None
    paths = documents.check_paths(args.files)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise cli_support.UserError(f"--out {out} is a file; give a directory")
    for name in ("tokenizer.json", "tokenizer_config.json", IDENTITY_FILE):
        cli_support.writable_output(out / name, paths, args.force or name != "tokenizer.json")
    pre_tokenizer = _pre_tokenizer_of(args.pre_tokenizer_from) if args.pre_tokenizer_from else None
    progress = False if args.no_progress else None
    length = documents.count_documents(paths, args.text_field) if progress is None and sys.stderr.isatty() else None
    tokenizer = train_bpe(documents.iter_documents(paths, args.text_field), args.vocab_size,
                          special_tokens=args.special_tokens, layout=args.layout, pre_tokenizer=pre_tokenizer,
                          min_pair_freq=args.min_pair_freq, threads=args.threads, progress=progress,
                          split_digits=args.split_digits, length=length)
    path = save(tokenizer, out)
    print(f"{path}  vocab={tokenizer.get_vocab_size()}  identity={identity(path)}")
    return 0
