"""Random texts through zoo tokenizers, against stock: `python -m conformance.fuzz_tokenizers [--seconds S]
[--tokenizers a,b] [--seed N] [--transformers]`; exit status 1 on any difference. With --transformers, each
member gets random transformers calls instead (conformance.fuzz_transformers).

Each member gets S seconds of batches of 32 texts. The texts are joined from three pools: a few code points
of every atom and script class the tables know (`pretokenizers.class_representatives`), the member's added
tokens' contents, and strings of its vocabulary (the pieces its model meets whole). A text is 0 to 200 draws
long. Each batch goes through `tokenizer_mode.diff_tokenizer` four ways: single texts, pairs, truncation with
its overflow, and padded pairs. That also checks `encode` one text at a time, the columnar call and pre-split
words. The draws are seeded per member, so a run is reproducible up to its time budget.
"""
import argparse
import random
import sys
import time
import zlib

BATCH = 32
LENGTHS = (0, 1, 2, 5, 20, 60, 200)
VARIANTS = (("plain", False), ("plain", True), ("truncate", False), ("pad", True))


def pools(stock, rng):
    """(chars, added token contents, vocabulary strings) to join texts from."""
    from conformance.pretokenizers import class_representatives

    added = sorted(token.content for token in stock.get_added_tokens_decoder().values())
    vocab = sorted(stock.get_vocab(with_added_tokens=False))
    return class_representatives(per_class=3), added, rng.sample(vocab, min(500, len(vocab)))


def random_text(rng, chars, added, vocab):
    parts = []
    for _ in range(rng.choice(LENGTHS)):
        draw = rng.random()
        pool = added if draw < 0.02 and added else vocab if draw < 0.2 and vocab else chars
        parts.append(rng.choice(pool))
    return "".join(parts)


def fuzz(stock, ours, seconds, seed):
    """(batches run, [(variant, pairs, index, message, text)]): `ours` (an hf_tagtok.Tokenizer) against
    `stock` on random texts for `seconds`."""
    from conformance.tokenizer_mode import diff_tokenizer

    rng = random.Random(seed)
    chars, added, vocab = pools(stock, rng)
    found, batches, end = [], 0, time.monotonic() + seconds
    while time.monotonic() < end:
        texts = [random_text(rng, chars, added, vocab) for _ in range(BATCH)]
        for variant, pairs in VARIANTS:
            for index, message in diff_tokenizer(stock, texts, variant, pairs, ours):
                found.append((variant, pairs, index, message, texts[index] if index >= 0 else None))
        batches += 1
    return batches, found


def member_seed(name, seed):
    """A zoo member's own seed: members draw different texts under one --seed."""
    return seed ^ zlib.crc32(name.encode())


def fuzz_member(name, seconds, seed):
    """fuzz for one zoo member, seeded by its name too."""
    import hf_tagtok
    from conformance import tokenizer_zoo

    stock = tokenizer_zoo.load(name)
    return fuzz(stock, hf_tagtok.Tokenizer.from_hf(stock), seconds, member_seed(name, seed))


def main(argv=None):
    from conformance import fuzz_transformers, tokenizer_zoo

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=25.0, help="per member")
    parser.add_argument("--tokenizers", default=",".join(tokenizer_zoo.available()))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--transformers", action="store_true",
                        help="random TagTokenizerFast calls against stock transformers")
    args = parser.parse_args(argv)
    member, unit = ((fuzz_transformers.fuzz_member, "calls") if args.transformers
                    else (fuzz_member, f"batches of {BATCH} texts"))
    total = 0
    for name in args.tokenizers.split(","):
        try:
            runs, found = member(name, args.seconds, args.seed)
        except tokenizer_zoo.Unavailable as error:
            print(f"{name}: skipped ({error})")
            continue
        total += len(found)
        print(f"{name}: {runs} {unit}, {len(found)} differences", flush=True)
        for *where, message, text in found[:3]:
            print(f"    {' '.join(map(str, where))}: {message}; text {text!r}")
    print(f"total differences vs stock: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
