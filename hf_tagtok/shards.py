"""A prepared corpus in shards, written in parallel (local processes or a Ray cluster), with a manifest.

The documents of the inputs (read as `hf_tagtok.documents` reads them, in order) are cut into `shards`
contiguous ranges of near-equal document counts; shard k is the prepared-corpus file (`hf_tagtok.corpus`
format) of range k, written atomically (temporary file, then rename). `manifest.json` names the
tokenizer's identity and, per shard, its file, document and token counts and the blake3 of the whole file.

Before any shard runs, one pass over the inputs (`hf_tagtok.documents.index_documents`: it counts
documents without parsing them) records where each block of the inputs starts, so a shard task seeks to
the block holding its first document instead of reading the inputs up to it.

A run is resumable: a shard file that already exists and verifies (digest, identity, document count) is
kept, not rewritten, so a run killed part-way, or a worker lost mid-shard, costs only the unfinished
shards. `open_manifest` verifies every shard against the manifest.
"""
import bisect
import builtins
import dataclasses
import functools
import itertools
import json
import os
from pathlib import Path

from hf_tagtok import corpus as corpus_format
from hf_tagtok.documents import START, Position, index_documents, iter_documents_at
from hf_tagtok.ray_data import use_reserved_cpus
from hf_tagtok.tokenizer_identity import _blake3, identity as tokenizer_identity

MANIFEST = "manifest.json"
FORMAT = "hf_tagtok-shards/1"
ENGINES = ("local", "ray")


@dataclasses.dataclass(frozen=True)
class ShardSpec:
    index: int
    path: str
    first: int          # first document (index into the inputs' documents)
    stop: int           # one past the last
    position: Position  # where reading starts: the block holding the first document
    inputs: tuple
    tokenizer: str
    identity: str
    text_field: str
    start_token: object
    batch_size: int


@dataclasses.dataclass(frozen=True)
class ShardedCorpus:
    manifest: Path
    shards: list            # PreparedCorpus per shard, in order
    n_documents: int
    n_tokens: int
    tokenizer_identity: str


def shard_name(index, shards):
    return f"shard-{index:05d}-of-{shards:05d}.ttc"


def prepare_shards(inputs, out_dir, tokenizer, *, shards, engine="local", text_field="text", start_token=None,
                   batch_size=1024, workers=None) -> ShardedCorpus:
    """Tokenize `inputs` into `shards` prepared-corpus files under `out_dir` plus its manifest, and return
    the result opened (every shard verified). engine: "local" (a process pool of `workers`) or "ray"
    (tasks on the cluster `ray.init()` reaches; a lost worker's shard is retried)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    if shards < 1:
        raise ValueError(f"shards must be >= 1, not {shards}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _remove_temporaries(out_dir)
    inputs = tuple(str(path) for path in ([inputs] if isinstance(inputs, (str, os.PathLike)) else inputs))
    identity = tokenizer_identity(tokenizer)
    _encoder(str(tokenizer), identity).start_id(start_token)  # an unusable start token fails here, once
    n_documents, positions = index_documents(inputs, text_field)
    firsts = [position.document for position in positions]

    def spec(k):
        first, stop = k * n_documents // shards, (k + 1) * n_documents // shards
        position = positions[bisect.bisect_right(firsts, first) - 1] if positions else START
        return ShardSpec(k, str(out_dir / shard_name(k, shards)), first, stop, position, inputs, str(tokenizer),
                         identity, text_field, start_token, batch_size)

    specs = [spec(k) for k in range(shards)]
    entries = _run_ray(specs) if engine == "ray" else _run_local(specs, workers)
    manifest = {"format": FORMAT, "tokenizer_identity": identity, "documents": n_documents,
                "tokens": sum(entry["tokens"] for entry in entries), "shards": entries}
    _write_atomically(out_dir / MANIFEST, json.dumps(manifest, indent=1).encode())
    return open_manifest(out_dir / MANIFEST, tokenizer=identity)


def prepare_shard(spec: ShardSpec) -> dict:
    """Write one shard (or keep it when a verified one is already there); its manifest entry."""
    path = Path(spec.path)
    expected_documents = spec.stop - spec.first
    if path.exists():
        try:
            kept = corpus_format.open(path, tokenizer=spec.identity)
        except corpus_format.CorpusError:
            kept = None
        if kept is not None and kept.n_documents == expected_documents:
            return _entry(path, kept)
    use_reserved_cpus()  # a Ray task's pool gets the CPUs Ray reserved for it
    encoder = _encoder(spec.tokenizer, spec.identity)
    writer = corpus_format.CorpusWriter(path, identity=spec.identity, vocab_size=encoder.vocab_size,
                                        start_id=encoder.start_id(spec.start_token))
    documents = itertools.islice(iter_documents_at(spec.inputs, spec.position, spec.first - spec.position.document,
                                                   spec.text_field), expected_documents)
    with writer:
        while batch := list(itertools.islice(documents, spec.batch_size)):
            ids, lengths, _ = encoder.texts(batch)
            writer.add_batch(ids, lengths)
        if writer.n_documents != expected_documents:
            raise RuntimeError(f"{path}: read {writer.n_documents} documents, expected {expected_documents} "
                               "(did the inputs change during the run?)")
    return _entry(path, corpus_format.open(path, tokenizer=spec.identity))


def open_manifest(path, *, tokenizer) -> ShardedCorpus:
    """Open every shard of a manifest, verifying each file's blake3 and counts against the manifest and
    each shard's own digest and tokenizer identity. Raises CorpusError on any mismatch."""
    path = Path(path)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise corpus_format.CorpusError(f"{path}: not a readable shard manifest ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise corpus_format.CorpusError(f"{path}: not a {FORMAT} manifest")
    opened = []
    for entry in manifest["shards"]:
        shard_path = path.parent / entry["file"]
        if not shard_path.exists():
            raise corpus_format.CorpusError(f"{path}: shard {entry['file']} is missing")
        if _file_blake3(shard_path) != entry["blake3"]:
            raise corpus_format.CorpusError(f"{path}: shard {entry['file']} differs from the manifest's blake3")
        shard = corpus_format.open(shard_path, tokenizer=tokenizer)
        if (shard.n_documents, shard.ids.size) != (entry["documents"], entry["tokens"]):
            raise corpus_format.CorpusError(f"{path}: shard {entry['file']} counts differ from the manifest")
        opened.append(shard)
    n_documents, n_tokens = sum(s.n_documents for s in opened), sum(s.ids.size for s in opened)
    if (n_documents, n_tokens) != (manifest["documents"], manifest["tokens"]):
        raise corpus_format.CorpusError(f"{path}: the shards' totals differ from the manifest's")
    return ShardedCorpus(path, opened, n_documents, n_tokens, manifest["tokenizer_identity"])


@functools.lru_cache(maxsize=2)
def _encoder(tokenizer, identity):
    """One loaded tokenizer per worker process, for all the shards it writes (keyed by identity too, so a
    changed file is loaded again)."""
    return corpus_format._Encoder(Path(tokenizer))


def _entry(path, shard):
    return {"file": path.name, "documents": shard.n_documents, "tokens": int(shard.ids.size),
            "blake3": _file_blake3(path)}


def _file_blake3(path):
    hasher = _blake3()
    with builtins.open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            hasher.update(chunk)
    return hasher.hexdigest()


def _remove_temporaries(out_dir):
    """Temporary files of writers killed in an earlier run (CorpusWriter names them .<name>.tmp-<pid>)."""
    for leftover in out_dir.glob(".shard-*.tmp-*"):
        leftover.unlink(missing_ok=True)


def _write_atomically(path, data):
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def _run_local(specs, workers):
    if workers == 1 or len(specs) == 1:
        return [prepare_shard(spec) for spec in specs]
    import concurrent.futures
    import multiprocessing
    if "fork" in multiprocessing.get_all_start_methods():
        # forked workers start with the driver's tokenizer loaded and past its first call, shared copy-on-write
        # (the native pool forgets its threads in a child); spawned ones would each load their own
        _encoder(specs[0].tokenizer, specs[0].identity).texts(["warm"])
        context = multiprocessing.get_context("fork")
    else:
        context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        return list(pool.map(prepare_shard, specs))


def _run_ray(specs):
    try:
        import ray
    except ModuleNotFoundError:
        raise ModuleNotFoundError("--engine ray needs ray: pip install -e '.[ray]'") from None
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    # max_retries: a task whose worker dies (killed, node lost) runs again; its shard is written atomically
    remote = ray.remote(max_retries=5)(prepare_shard)
    return ray.get([remote.remote(spec) for spec in specs])
