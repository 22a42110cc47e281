"""Load time: `python -m conformance.bench_load [--tokenizer PATH] [--rounds N]`.

What a new worker pays before its first batch (a Ray actor, a shard worker, a fresh `AutoTokenizer`): each
round starts one fresh interpreter per contender, alternating, that imports numpy (as every pipeline
process already has), then times importing the tokenizer package, `Tokenizer.from_file` and a first
one-text call; ours also times the CPU of the stock `tokenizers.Tokenizer.from_file` it makes inside its
own load, so ours' CPU less that is what ours adds: importing hf_tagtok, planning the native pipeline, the
first call. Wall and CPU seconds (the process's,
all threads), median and best over the rounds, both from this one run.
"""
import argparse
import json
import statistics
import subprocess
import sys

from hf_tagtok.sample_text import default_tokenizer_json

_RUN = """
import json, sys, time
import numpy
path, contender = sys.argv[1:3]
wall, cpu = time.perf_counter(), time.process_time()
if contender == "stock":
    import tokenizers
    tokenizers.Tokenizer.from_file(path).encode_batch(["a first call"])
    inner = None
else:
    import tokenizers
    stock_load = tokenizers.Tokenizer.from_file
    inner = []
    def timed(*args):  # stock loads on the calling thread: its CPU time there is the load's
        start = time.thread_time()
        loaded = stock_load(*args)
        inner.append(time.thread_time() - start)
        return loaded
    tokenizers.Tokenizer.from_file = timed
    from hf_tagtok.tokenizer import Tokenizer
    Tokenizer.from_file(path).encode_batch_arrays(["a first call"], offsets=False)
    inner = sum(inner)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu, inner]))
"""


def one_load(path, contender):
    """(wall s, CPU s, CPU s of stock's from_file inside ours or None) of a fresh process's load and first
    call."""
    finished = subprocess.run([sys.executable, "-c", _RUN, str(path), contender], capture_output=True, text=True,
                              check=True)
    return json.loads(finished.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m conformance.bench_load", description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default=str(default_tokenizer_json()), help="tokenizer.json (default: Llama-3)")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    runs = {"stock": [], "ours": []}
    for _ in range(args.rounds):
        for contender, rows in runs.items():
            rows.append(one_load(args.tokenizer, contender))
    print(f"{args.tokenizer}: import + from_file + first call, fresh process each, {args.rounds} rounds")
    for contender, rows in runs.items():
        walls, cpus = [row[0] for row in rows], [row[1] for row in rows]
        print(f"  {contender:<5} wall median {statistics.median(walls):.3f} s (best {min(walls):.3f}), "
              f"CPU median {statistics.median(cpus):.3f} s (best {min(cpus):.3f})")
    added = [cpu - inner for _wall, cpu, inner in runs["ours"]]
    print(f"  ours' CPU - the CPU of stock's from_file inside it: median {statistics.median(added):.3f} s "
          f"(best {min(added):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
