"""Classify-pass throughput per implementation, next to a plain copy of the same bytes, in one run.

    python -m conformance.bench_classify [--mib 1] [--repeats 7] [--corpus NAME ...]

Prints GB/s (input bytes per second, best of `repeats`) for every implementation available here, for
both alphabets, on the ASCII corpus, on the whole multi-script corpus, and on the multi-script documents
written mostly (over 80% of their non-ASCII chars) in one family: Latin beyond ASCII, CJK (Han, kana,
Hangul), Brahmic (Devanagari, Thai and the other Indic/Southeast-Asian scripts), emoji; each row also
gives its ratio to the copy and to the scalar reader.
Inputs well beyond L2 (--mib 4 here) slow the multibyte lanes (scalar reader included) down ~2x while the
ASCII lane keeps its speed; most likely the streaming text evicts the stage tables only the multibyte
lanes read (this VM exposes no cache counters to confirm it).
"""
import argparse
import collections
import time
import unicodedata

import numpy as np

from hf_tagtok import _engine
from hf_tagtok.sample_text import ascii_texts, multiscript_texts

BRAHMIC = ("DEVANAGARI", "BENGALI", "GURMUKHI", "GUJARATI", "ORIYA", "TAMIL", "TELUGU", "KANNADA", "MALAYALAM",
           "SINHALA", "THAI", "LAO", "TIBETAN", "MYANMAR", "KHMER")


def family(char):
    """The family a non-ASCII char counts toward when the multi-script documents are split by family."""
    if char < "\u0250":
        return "latin"
    if char >= "\U0001F000":
        return "emoji"
    name = unicodedata.name(char, "")
    if name.startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL")):
        return "cjk"
    if name.startswith(BRAHMIC):
        return "brahmic"
    return "other"


def corpora():
    """name -> documents: ascii, each single-family slice of the multi-script corpus, then all of it."""
    by_family = collections.defaultdict(list)
    for doc in multiscript_texts():
        counts = collections.Counter(family(ch) for ch in doc if ch >= "\x80")
        if counts:
            name, count = counts.most_common(1)[0]
            if count > 0.8 * sum(counts.values()):
                by_family[name].append(doc)
    return {"ascii": ascii_texts(), **{name: by_family[name] for name in ("latin", "cjk", "brahmic", "emoji")},
            "multiscript": multiscript_texts()}


def corpus_bytes(texts, size):
    """The corpus repeated up to about `size` bytes, cut at a char boundary."""
    one = "\n".join(texts).encode("utf-8")
    data = one * (size // len(one) + 1)
    cut = size
    while data[cut] & 0xC0 == 0x80:
        cut += 1
    return data[:cut]


def copy_seconds(data, repeats):
    src = np.frombuffer(data, dtype=np.uint8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(max(repeats, 20)):  # the cheapest row is the noisiest
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=1, help="corpus size per run (MiB)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--corpus", nargs="+", help="only these corpora (default: all)")
    args = parser.parse_args(argv)
    size = int(args.mib * 2**20)
    impls = [name for name in _engine.impl_names() if _engine.impl_available(name)]
    texts_by_name = corpora()
    unknown = set(args.corpus or ()) - set(texts_by_name)
    if unknown:
        parser.error(f"unknown corpus {sorted(unknown)}; known: {list(texts_by_name)}")
    print(f"classify throughput, GB/s (best of {args.repeats}, {args.mib:g} MiB each; "
          f"default impl here: {_engine.impl_active()})")
    print(f"{'corpus':<12} {'alphabet':<9} {'impl':<7} {'GB/s':>8} {'x copy':>8} {'x scalar':>9}")
    for corpus, texts in texts_by_name.items():
        if args.corpus and corpus not in args.corpus:
            continue
        data = corpus_bytes(texts, size)
        copy = copy_seconds(data, args.repeats)
        print(f"{corpus:<12} {'-':<9} {'copy':<7} {len(data) / copy / 1e9:8.2f} {1:8.2f} {'':>9}")
        for alphabet in ("atoms", "scripts"):
            scalar = _engine._time_classify(data, alphabet, "scalar", args.repeats)
            for impl in impls:
                seconds = scalar if impl == "scalar" else _engine._time_classify(data, alphabet, impl, args.repeats)
                print(f"{corpus:<12} {alphabet:<9} {impl:<7} {len(data) / seconds / 1e9:8.2f} "
                      f"{copy / seconds:8.2f} {scalar / seconds:9.2f}")


if __name__ == "__main__":
    main()
