"""Pre-tokenizer throughput, hf_tagtok next to stock in one run: `python -m conformance.bench_pretokenizers`.

`--families`: the Split-regex families of the tokenizer zoo, each run as the hand-written FSM (where it has
one), as the compiled regex's DFA and on the compiled regex's backtracking VM, next to stock.

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


def family_programs(name):
    """(stock pre-tokenizer, {way: engine Program}) for a REGEX_FAMILIES member: `hand` runs recognised
    patterns on their hand-written FSMs (only where the family has one), `dfa` and `vm` run every Split
    regex compiled (a recognised text wrapped in `(?:...)` so the compiler takes it) as the DFA and on the
    backtracking VM."""
    import json

    from conformance import tokenizer_zoo
    from hf_tagtok import _engine, regex_compiler

    config = json.loads(tokenizer_zoo.load(name).to_str())["pre_tokenizer"]
    twin = pt.from_hf(config)
    steps = twin._steps()

    def compiled(backtrack_only):
        out = []
        for step in steps:
            if step["kind"] == "split_regex":
                fields = regex_compiler.compile_pattern(f"(?:{PATTERNS[step['regex']]})").step_fields
                step = {"kind": "split_compiled", **fields, "behavior": step["behavior"], "invert": step["invert"]}
            if step["kind"] == "split_compiled":
                step = {**step, "backtrack_only": backtrack_only}
            out.append(step)
        return _engine.Program(out)

    if not any(step["kind"] in ("split_regex", "split_compiled") for step in steps):
        return twin.stock(), {}
    programs = {"dfa": compiled(False), "vm": compiled(True)}
    if any(step["kind"] == "split_regex" for step in steps):
        programs["hand"] = _engine.Program(steps)
    return twin.stock(), programs


FAMILY_WAYS = ("hand", "dfa", "vm", "stock")


def family_table(repeats, clock):
    """One run: MB/s of each way per family on the multi-script corpus, and ratios against stock."""
    from conformance import tokenizer_zoo

    texts = multiscript_texts()
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    print(f"{'family':<14}{'hand FSM':>10}{'DFA':>10}{'VM':>10}{'stock':>10}{'hand/stock':>12}{'DFA/stock':>11}"
          f"{'VM/stock':>10}{'hand/DFA':>10}   (MB/s of the multi-script corpus, {clock} time)")
    for name in tokenizer_zoo.REGEX_FAMILIES:
        stock, programs = family_programs(name)
        if not programs:
            print(f"{name:<14}no Split regex (its ByteLevel runs the compiled GPT-2 regex)")
            continue
        for way, program in programs.items():  # each way's output equals stock's before it is timed
            assert [p.tolist() for p in program.pre_tokenize_offsets(texts)[0][:2000]] == \
                [list(span) for text in texts for _, span in stock.pre_tokenize_str(text)][:2000], (name, way)
        rates = {way: megabytes / best_seconds(lambda p=program: p.pre_tokenize_offsets(texts), repeats, CLOCKS[clock])
                 for way, program in programs.items()}
        rates["stock"] = megabytes / best_seconds(lambda: [stock.pre_tokenize_str(t) for t in texts], repeats,
                                                  CLOCKS[clock])
        ratio = lambda a, b: rates[a] / rates[b] if a in rates and b in rates else None  # noqa: E731
        print(f"{name:<14}" + "".join(_cell(rates.get(way), 10) for way in FAMILY_WAYS)
              + _cell(ratio("hand", "stock"), 12, "x") + _cell(ratio("dfa", "stock"), 11, "x")
              + _cell(ratio("vm", "stock"), 10, "x") + _cell(ratio("hand", "dfa"), 10, "x"), flush=True)


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
    parser.add_argument("--families", action="store_true",
                        help="the regex families of the tokenizer zoo: hand FSM vs compiled DFA vs compiled VM vs stock")
    args = parser.parse_args(argv)
    if args.families:
        family_table(args.repeats, args.clock)
        return
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
