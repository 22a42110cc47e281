"""Data-pipeline benchmarks: hf_tagtok against stock in the pipelines people tokenize corpora with.

`python -m conformance.bench_pipelines [--tokenizer PATH] [--repeat N] [--rows datasets,ray,datatrove,scaling]`

Each row runs the same pipeline twice per round, once with stock's tokenizer and once with
hf_tagtok's, alternating, on the built-in multi-script corpus repeated `--repeat` times, and reports
the best time of each and their ratio (stock / ours). Outputs are checked equal before timing.
`--corpus stdlib` takes instead the running interpreter's standard library sources, cut into documents of
whole lines (about 4 KB each), `--repeat` times: a corpus of tens of MB that does not repeat itself, so
neither tokenizer's word cache sees the same documents again (the repeated built-in corpus flatters
caches: after its first copy every word is a hit).
- datasets: `Dataset.map(batched=True)`, stock `PreTrainedTokenizerFast.__call__` returning lists
  against `hf_tagtok.arrow.map_function` returning Arrow (cache off, in memory).
- ray: `ray.data.Dataset.map_batches` over pyarrow batches on a local cluster (`ray.init(num_cpus=2)`),
  an actor pool of 2 with stock `tokenizers.Tokenizer.encode_batch` against `hf_tagtok.ray_data.TokenizeBatches`,
  timed to a materialized result: the whole pipeline, Ray's own scheduling and actor start-up included
  (the same pipeline without a tokenizer is timed too, for what Ray itself costs, and each actor records
  its constructor's time and the time spent in its calls, apart from Ray's). `--ray-batch-size` (512),
  `--ray-blocks` (the dataset's blocks; Ray's choice by default).
- datatrove: datatrove's `DocumentTokenizer` step against `hf_tagtok.datatrove_step.TagDocumentTokenizer`
  (tokenize, write, shuffle), tokenizers loaded before timing.
- scaling (not run by default): hf_tagtok only, `shards.prepare_shards` into 8 shards on 1 and 2 workers
  of the local and Ray engines (see bench_scaling).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hf_tagtok.sample_text import default_tokenizer_json, multiscript_texts


def stdlib_texts(document_chars=4096):
    """The standard library's .py files (sorted, UTF-8 ones), each cut into documents of whole lines of
    at most `document_chars` characters (a longer line is a document of its own)."""
    import sysconfig
    root = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.relative_to(root).parts:
            continue
        try:
            lines = path.read_bytes().decode("utf-8").splitlines(keepends=True)
        except UnicodeDecodeError:
            continue
        document = ""
        for line in lines:
            if document and len(document) + len(line) > document_chars:
                texts.append(document)
                document = ""
            document += line
        if document.strip():
            texts.append(document)
    return texts


def _best(run, rounds):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_datasets(path, texts, rounds, batch_size):
    import datasets
    import transformers

    import hf_tagtok
    from hf_tagtok import arrow

    stock = transformers.PreTrainedTokenizerFast(tokenizer_file=path)
    ours = hf_tagtok.TagTokenizerFast(tokenizer_file=path)
    dataset = datasets.Dataset.from_dict({"text": texts})
    options = {"batched": True, "load_from_cache_file": False, "keep_in_memory": True}
    stock_run = lambda: dataset.map(lambda batch: stock(batch["text"]), **options)  # noqa: E731
    ours_run = lambda: dataset.map(arrow.map_function(ours), **options)  # noqa: E731
    assert stock_run().data.table.equals(ours_run().data.table)
    return _best(stock_run, rounds), _best(ours_run, rounds)


class _Unchanged:
    """The same pipeline with no tokenizer: what Ray's own scheduling and data movement cost."""

    def __init__(self, path):
        pass

    def __call__(self, batch):
        return batch


class _StockBatches:
    def __init__(self, path):
        import tokenizers
        self.tokenizer = tokenizers.Tokenizer.from_file(path)

    def __call__(self, batch):
        import pyarrow as pa
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(batch["text"].to_pylist())]
        return batch.append_column("input_ids", pa.array(ids, pa.list_(pa.int32())))


class _Timed:
    """An actor running `batches` (a class above, or TokenizeBatches) that records in `directory` the time
    its constructor took and the time spent in its calls: the actor's own work, apart from Ray's."""

    def __init__(self, batches, directory, *args):
        start = time.perf_counter()
        self.batches = batches(*args)
        self.load, self.busy = time.perf_counter() - start, 0.0
        self.record = Path(directory) / f"{os.getpid()}-{id(self)}.json"

    def __call__(self, batch):
        start = time.perf_counter()
        result = self.batches(batch)
        self.busy += time.perf_counter() - start
        self.record.write_text(json.dumps([self.load, self.busy]))
        return result


def bench_ray(path, texts, rounds, batch_size, blocks=None):
    import ray

    from hf_tagtok.ray_data import TokenizeBatches

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        rows = [{"n": n, "text": text} for n, text in enumerate(texts)]
        dataset = ray.data.from_items(rows, override_num_blocks=blocks).materialize()

        def mapped(batches, directory):
            return dataset.map_batches(_Timed, fn_constructor_args=(batches, directory, path), batch_format="pyarrow",
                                       batch_size=batch_size,
                                       compute=ray.data.ActorPoolStrategy(size=2))

        def ids(batches):
            import pyarrow as pa
            tables = ray.get(mapped(batches, tempfile.mkdtemp()).select_columns(["n", "input_ids"]).to_arrow_refs())
            return pa.concat_tables(tables).sort_by("n").column("input_ids").combine_chunks()

        def run(batches):
            """(wall s, the actors' load s and call s, summed over actors)"""
            directory = tempfile.mkdtemp()
            start = time.perf_counter()
            mapped(batches, directory).materialize()
            wall = time.perf_counter() - start
            records = [json.loads(record.read_text()) for record in Path(directory).iterdir()]
            return wall, sum(load for load, _ in records), sum(busy for _, busy in records)

        assert ids(_StockBatches).equals(ids(TokenizeBatches))
        variants = {"no tokenizer": _Unchanged, "stock": _StockBatches, "hf_tagtok": TokenizeBatches}
        best = {name: (float("inf"),) for name in variants}
        for _ in range(rounds):
            for name, batches in variants.items():
                best[name] = min(best[name], run(batches))
        print(f"  ray: {dataset.num_blocks()} blocks, batches of {batch_size}")
        for name, (wall, load, busy) in best.items():
            print(f"  ray {name:<12}: {wall:.3f} s wall; in the 2 actors: {load:.3f} s loading, {busy:.3f} s in calls")
        print(f"  ray bound: stock / no tokenizer = {best['stock'][0] / best['no tokenizer'][0]:.1f}x "
              "(the ratio with a tokenizer that took no time)")
        return best["stock"][0], best["hf_tagtok"][0]
    finally:
        ray.shutdown()


def bench_datatrove(path, texts, rounds, batch_size):
    from datatrove.data import Document
    from datatrove.pipeline.tokens.tokenizer import DocumentTokenizer

    from hf_tagtok.datatrove_step import TagDocumentTokenizer

    def run(cls):
        """(wall s, CPU s of this process's threads)"""
        step = cls(tempfile.mkdtemp(), path, seed=1)
        step.tokenizer.encode_batch(["warm"])  # load (and plan) before timing
        start, start_cpu = time.perf_counter(), time.process_time()
        step.run((Document(text=text, id=str(n)) for n, text in enumerate(texts)), rank=0, world_size=1)
        return time.perf_counter() - start, time.process_time() - start_cpu

    stock, ours = (float("inf"),) * 2, (float("inf"),) * 2
    for _ in range(rounds):
        stock, ours = min(stock, run(DocumentTokenizer)), min(ours, run(TagDocumentTokenizer))
    print(f"  datatrove CPU s (all threads): stock {stock[1]:.3f}, hf_tagtok {ours[1]:.3f}, {stock[1] / ours[1]:.1f}x")
    return stock[0], ours[0]


_SCALING_RUN = """
import json, os, sys, time
from hf_tagtok import shards
corpus, out, tokenizer, engine, workers = sys.argv[1:6]
if engine == "ray":
    import ray
    ray.init(num_cpus=int(workers), include_dashboard=False, log_to_driver=False)
start = time.perf_counter()
result = shards.prepare_shards([corpus], out, tokenizer, shards=8, engine=engine, workers=int(workers))
print(json.dumps([time.perf_counter() - start, result.n_tokens]))
"""


def bench_scaling(path, texts, rounds, batch_size):
    """`shards.prepare_shards` of the corpus (as one .jsonl) into 8 shards, on 1 and 2 workers of each
    engine, each run in a fresh process with one pool thread per worker; every run's shards must be the
    same files. Prints the times and tokens/s (no stock side: returns None)."""
    directory = Path(tempfile.mkdtemp())
    corpus = directory / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": text}, ensure_ascii=False) + "\n" for text in texts),
                      encoding="utf-8")
    environment = {**os.environ, "HF_TAGTOK_THREADS": "1"}
    digests, times = set(), {}
    for _ in range(rounds):
        for engine in ("local", "ray"):
            for workers in (1, 2):
                out = directory / f"{engine}-{workers}"
                shutil.rmtree(out, ignore_errors=True)
                finished = subprocess.run([sys.executable, "-c", _SCALING_RUN, str(corpus), str(out), path, engine,
                                           str(workers)], env=environment, capture_output=True, text=True, check=True)
                seconds, tokens = json.loads(finished.stdout.strip().splitlines()[-1])
                manifest = json.loads((out / "manifest.json").read_text())
                digests.add(tuple(entry["blake3"] for entry in manifest["shards"]))
                times[engine, workers] = min(times.get((engine, workers), float("inf")), seconds)
    assert len(digests) == 1, "the shards differ between runs"
    for (engine, workers), seconds in times.items():
        print(f"  prepare --shards 8 --engine {engine:<5} {workers} worker(s): {seconds:.3f} s, "
              f"{tokens / seconds / 1e6:.2f}M tokens/s")


ROWS = {"datasets": bench_datasets, "ray": bench_ray, "datatrove": bench_datatrove, "scaling": bench_scaling}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m conformance.bench_pipelines", description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default=str(default_tokenizer_json()), help="tokenizer.json (default: Llama-3)")
    parser.add_argument("--corpus", choices=("multiscript", "stdlib"), default="multiscript")
    parser.add_argument("--repeat", type=int, default=16, help="copies of the corpus (default 16)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", default="datasets,ray,datatrove", help=f"of {','.join(ROWS)}")
    parser.add_argument("--ray-batch-size", type=int, default=512)
    parser.add_argument("--ray-blocks", type=int, default=None,
                        help="blocks of the Ray dataset (default: Ray's choice, 200 for these corpora)")
    args = parser.parse_args(argv)
    texts = (multiscript_texts() if args.corpus == "multiscript" else stdlib_texts()) * args.repeat
    megabytes = sum(len(text.encode()) for text in texts) / 1e6
    print(f"{args.corpus} x {args.repeat}: {len(texts)} documents, {megabytes:.1f} MB, best of {args.rounds}")
    print(f"{'pipeline':<10} {'stock s':>8} {'ours s':>8} {'ratio':>7}")
    for name in args.rows.split(","):
        extra = {"blocks": args.ray_blocks} if name == "ray" else {}
        times = ROWS[name](args.tokenizer, texts, args.rounds, args.ray_batch_size, **extra)
        if times is not None:
            stock, ours = times
            print(f"{name:<10} {stock:8.3f} {ours:8.3f} {stock / ours:6.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
