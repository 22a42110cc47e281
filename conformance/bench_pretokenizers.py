"""Pre-tokenizer throughput, hf_tagtok next to stock in one run: `python -m conformance.bench_pretokenizers`.

For each pre-tokenizer, on the multi-script corpus and on ASCII-only text, prints MB/s (UTF-8 input bytes
per second, best of --repeats runs and of as many as fit in 0.5 s; CPU time of this process by default, since CI machines are shared, or wall
time with --clock wall) of: our batch API `pre_tokenize_offsets`, our `pre_tokenize_str` per text,
stock `pre_tokenize_str` per text and, where the split is a regex, `regex.findall` per text; then the ratios
batch/stock, str/stock and batch/regex. Timings are only compared within this one run.
"""
import argparse
import time

import regex
from tokenizers import Regex

from hf_tagtok import pre_tokenizers as pt
from hf_tagtok.sample_text import ascii_texts, multiscript_texts

PATTERNS = pt.RECOGNISED_PATTERNS
WHITESPACE_REGEX = r"\w+|[^\w\s]+"  # what stock's Whitespace runs (Rust regex classes)
# DeepSeek-V3's Split sequence (its tokenizer.json), run by the regex compiler.
DEEPSEEK_V3 = [r"\p{N}{1,3}", r"[一-龥぀-ゟ゠-ヿ]+",
               r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
               r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]


def pre_tokenizers():
    """(name, twin, regex text or None) for every benchmarked configuration."""
    llama3 = pt.Sequence([pt.Split(Regex(PATTERNS["cl100k"]), "isolated"), pt.ByteLevel(False, True, False)])
    deepseek = pt.Sequence([pt.Split(Regex(p), "isolated") for p in DEEPSEEK_V3] + [pt.ByteLevel(False, True, False)])
    wrapped = "(?:" + PATTERNS["cl100k"] + ")"  # same language; not the recognised text, so it runs compiled
    return [
        ("Split(cl100k) compiled", pt.Split(Regex(wrapped), "isolated"), PATTERNS["cl100k"]),
        ("Split(o200k) compiled", pt.Split(Regex("(?:" + PATTERNS["o200k"] + ")"), "isolated"), PATTERNS["o200k"]),
        ("DeepSeek-V3 Seq compiled", deepseek, None),
        ("Split(cl100k)", pt.Split(Regex(PATTERNS["cl100k"]), "isolated"), PATTERNS["cl100k"]),
        ("Split(gpt2)", pt.Split(Regex(PATTERNS["gpt2"]), "isolated"), PATTERNS["gpt2"]),
        ("Split(qwen2)", pt.Split(Regex(PATTERNS["qwen2"]), "isolated"), PATTERNS["qwen2"]),
        ("Split(o200k)", pt.Split(Regex(PATTERNS["o200k"]), "isolated"), PATTERNS["o200k"]),
        ("Llama-3 Split+ByteLevel", llama3, PATTERNS["cl100k"]),
        ("ByteLevel", pt.ByteLevel(), PATTERNS["gpt2"]),
        ("Whitespace", pt.Whitespace(), WHITESPACE_REGEX),
        ("WhitespaceSplit", pt.WhitespaceSplit(), None),
        ("BertPreTokenizer", pt.BertPreTokenizer(), None),
        ("Punctuation", pt.Punctuation(), None),
        ("Digits", pt.Digits(), None),
        ("Metaspace", pt.Metaspace(), None),
        ("CharDelimiterSplit", pt.CharDelimiterSplit(" "), None),
        ("Split(' ')", pt.Split(" ", "removed"), None),
        ("UnicodeScripts", pt.UnicodeScripts(), None),
        ("FixedLength", pt.FixedLength(), None),
    ]


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def best_seconds(call, repeats, clock, min_total=0.5):
    """Best of at least `repeats` runs, and of as many more as fit in `min_total` seconds (fast calls take
    only milliseconds, so one scheduler hiccup would otherwise decide their ratio)."""
    best, total, runs = float("inf"), 0.0, 0
    while runs < repeats or (total < min_total and runs < 200):
        started = clock()
        call()
        elapsed = clock() - started
        best, total, runs = min(best, elapsed), total + elapsed, runs + 1
    return best


def measure(twin, regex_text, texts, repeats, clock=time.process_time):
    """MB/s of each way of pre-tokenizing `texts` (None where not applicable)."""
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    stock = twin.stock()
    compiled = regex.compile(regex_text) if regex_text else None
    timings = {
        "batch": best_seconds(lambda: twin.pre_tokenize_offsets(texts), repeats, clock),
        "str": best_seconds(lambda: [twin.pre_tokenize_str(text) for text in texts], repeats, clock),
        "stock": best_seconds(lambda: [stock.pre_tokenize_str(text) for text in texts], repeats, clock),
        "regex": best_seconds(lambda: [compiled.findall(text) for text in texts], repeats, clock) if compiled else None,
    }
    return {key: (megabytes / seconds if seconds else None) for key, seconds in timings.items()}


def _cell(value, width=9, suffix=""):
    return f"{value:>{width - len(suffix)}.1f}{suffix}" if value is not None else " " * (width - 1) + "-"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clock", choices=CLOCKS, default="cpu")
    parser.add_argument("--only", default="", help="only pre-tokenizers whose name contains this text")
    args = parser.parse_args(argv)
    corpora = {"multi-script": multiscript_texts(), "ascii": ascii_texts()}
    print(f"{'pre-tokenizer':<26}{'corpus':<14}{'batch':>9}{'str':>9}{'stock':>9}{'regex':>9}"
          f"{'batch/stock':>13}{'str/stock':>11}{'batch/regex':>13}   (MB/s, {args.clock} time, best of >= {args.repeats} runs)")
    for name, twin, regex_text in pre_tokenizers():
        if args.only not in name:
            continue
        for corpus_name, texts in corpora.items():
            rates = measure(twin, regex_text, texts, args.repeats, CLOCKS[args.clock])
            ratio = lambda a, b: rates[a] / rates[b] if rates[a] and rates[b] else None  # noqa: E731
            print(f"{name:<26}{corpus_name:<14}{_cell(rates['batch'])}{_cell(rates['str'])}{_cell(rates['stock'])}"
                  f"{_cell(rates['regex'])}{_cell(ratio('batch', 'stock'), 13, 'x')}{_cell(ratio('str', 'stock'), 11, 'x')}"
                  f"{_cell(ratio('batch', 'regex'), 13, 'x')}", flush=True)


if __name__ == "__main__":
    main()
