"""A fallen-back tokenizer with a Python component: `python -m conformance.bench_python_component [--tokenizer
PATH] [--rounds N]`.

Stock cannot write a tokenizer holding a Python component, so it is built here: the tokenizer's pre-tokenizer
becomes `PreTokenizer.custom` of a split that keeps each text whole, then ByteLevel (the default tokenizer is
Llama-3's, a byte-level BPE). Each round runs every call in a fresh interpreter, one after the other, over the
stream corpus of `hf-tagtok bench` in batches of 256: a stream pass then a warm pass, each call's outputs kept
for the pass. Ratios are stock `encode_batch`'s time in the same round over the call's, medians over rounds;
the last column sets the call against what a caller of stock pays for the columns the columnar call gives:
stock's `encode_batch` with every encoding's ids, type ids, offsets, special tokens mask and attention mask
read.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile

from hf_tagtok.bench_stream import generate_corpus
from hf_tagtok.sample_text import default_tokenizer_json

CALLS = ("stock encode_batch", "stock encode_batch, fields read", "encode_batch", "encode_batch_arrays",
         "encode_batch_arrays offsets=False")

_RUN = """
import json, sys, time
import tokenizers
from tokenizers import pre_tokenizers
import hf_tagtok

path, corpus, call = sys.argv[1:4]

class Whole:
    def pre_tokenize(self, pretokenized):
        pretokenized.split(lambda _, normalized: [normalized])

def with_python_component(tokenizer):
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.PreTokenizer.custom(Whole()),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    return tokenizer

texts = json.load(open(corpus, encoding="utf-8"))
batches = [texts[i:i + 256] for i in range(0, len(texts), 256)]
def read_fields(encodings):
    return [(e.ids, e.type_ids, e.offsets, e.special_tokens_mask, e.attention_mask) for e in encodings]

if call.startswith("stock"):
    stock = with_python_component(tokenizers.Tokenizer.from_file(path))
    run = stock.encode_batch if call == "stock encode_batch" else lambda batch: read_fields(stock.encode_batch(batch))
else:
    ours = with_python_component(hf_tagtok.Tokenizer.from_file(path))
    run = {"encode_batch": ours.encode_batch, "encode_batch_arrays": ours.encode_batch_arrays,
           "encode_batch_arrays offsets=False": lambda batch: ours.encode_batch_arrays(batch, offsets=False)}[call]
seconds = []
for _ in range(2):
    start = time.perf_counter()
    kept = [run(batch) for batch in batches]
    seconds.append(time.perf_counter() - start)
    del kept
print(json.dumps(seconds))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default=None, help="a byte-level BPE tokenizer.json (default: Llama-3's)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    path = args.tokenizer or default_tokenizer_json()
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as corpus:
        json.dump(generate_corpus(), corpus)
        corpus.flush()
        ratios = {call: ([], [], [], []) for call in CALLS}
        for _ in range(args.rounds):
            times = {call: json.loads(subprocess.run([sys.executable, "-c", _RUN, path, corpus.name, call],
                                                     check=True, capture_output=True, text=True).stdout)
                     for call in CALLS}
            for call in CALLS:
                for k in (0, 1):
                    ratios[call][k].append(times[CALLS[0]][k] / times[call][k])
                    ratios[call][2 + k].append(times[CALLS[1]][k] / times[call][k])
    print(f"tokenizer {path}, Python pre-tokenizer; stream / warm ratio vs stock encode_batch, then vs stock "
          f"encode_batch with the fields read; median of {args.rounds} round(s)")
    for call in CALLS:
        stream, warm, fields_stream, fields_warm = (statistics.median(r) for r in ratios[call])
        print(f"{call:<40} {stream:5.2f}x {warm:5.2f}x   {fields_stream:5.2f}x {fields_warm:5.2f}x")


if __name__ == "__main__":
    main()
