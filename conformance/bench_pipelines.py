"""Data-pipeline benchmarks: hf_tagtok against stock in the pipelines people tokenize corpora with.

`python -m conformance.bench_pipelines [--tokenizer PATH] [--repeat N] [--rows datasets,ray,datatrove]`

Each row runs the same pipeline twice per round, once with stock's tokenizer and once with
hf_tagtok's, alternating, on the built-in multi-script corpus repeated `--repeat` times, and reports
the best time of each and their ratio (stock / ours). Outputs are checked equal before timing.
- datasets: `Dataset.map(batched=True)`, stock `PreTrainedTokenizerFast.__call__` returning lists
  against `hf_tagtok.arrow.map_function` returning Arrow (cache off, in memory).
- ray: `ray.data.Dataset.map_batches` over pyarrow batches on a local cluster (`ray.init(num_cpus=2)`),
  an actor pool of 2 with stock `tokenizers.Tokenizer.encode_batch` against `hf_tagtok.ray_data.TokenizeBatches`,
  timed to a materialized result: the whole pipeline, Ray's own scheduling and actor start-up included
  (the same pipeline without a tokenizer is timed too, for what Ray itself costs).
- datatrove: datatrove's `DocumentTokenizer` step against `hf_tagtok.datatrove_step.TagDocumentTokenizer`
  (tokenize, write, shuffle), tokenizers loaded before timing.
"""
import argparse
import tempfile
import time

from hf_tagtok.sample_text import default_tokenizer_json, multiscript_texts


def _best(run, rounds):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_datasets(path, texts, rounds):
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


def bench_ray(path, texts, rounds):
    import ray

    from hf_tagtok.ray_data import TokenizeBatches

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        dataset = ray.data.from_items([{"text": text} for text in texts]).materialize()

        def mapped(cls):
            return dataset.map_batches(cls, fn_constructor_args=(path,), batch_format="pyarrow", batch_size=512,
                                       concurrency=2)

        def ids(cls):
            return sorted(map(tuple, (row["input_ids"] for row in mapped(cls).select_columns(["input_ids"]).take_all())))

        assert ids(_StockBatches) == ids(TokenizeBatches)
        print(f"  ray without a tokenizer: {_best(lambda: mapped(_Unchanged).materialize(), rounds):.3f} s")
        return (_best(lambda: mapped(_StockBatches).materialize(), rounds),
                _best(lambda: mapped(TokenizeBatches).materialize(), rounds))
    finally:
        ray.shutdown()


def bench_datatrove(path, texts, rounds):
    from datatrove.data import Document
    from datatrove.pipeline.tokens.tokenizer import DocumentTokenizer

    from hf_tagtok.datatrove_step import TagDocumentTokenizer

    def run(cls):
        step = cls(tempfile.mkdtemp(), path, seed=1)
        step.tokenizer.encode_batch(["warm"])  # load (and plan) before timing
        start = time.perf_counter()
        step.run((Document(text=text, id=str(n)) for n, text in enumerate(texts)), rank=0, world_size=1)
        return time.perf_counter() - start

    return min(run(DocumentTokenizer) for _ in range(rounds)), min(run(TagDocumentTokenizer) for _ in range(rounds))


ROWS = {"datasets": bench_datasets, "ray": bench_ray, "datatrove": bench_datatrove}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m conformance.bench_pipelines", description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default=str(default_tokenizer_json()), help="tokenizer.json (default: Llama-3)")
    parser.add_argument("--repeat", type=int, default=16, help="copies of the built-in corpus (default 16)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", default=",".join(ROWS))
    args = parser.parse_args(argv)
    texts = multiscript_texts() * args.repeat
    print(f"{len(texts)} documents, {sum(len(t.encode()) for t in texts) / 1e6:.1f} MB, best of {args.rounds}")
    print(f"{'pipeline':<10} {'stock s':>8} {'ours s':>8} {'ratio':>7}")
    for name in args.rows.split(","):
        stock, ours = ROWS[name](args.tokenizer, texts, args.rounds)
        print(f"{name:<10} {stock:8.3f} {ours:8.3f} {stock / ours:6.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
