"""The committed tables must equal what the installed references answer for every code point.

The generator re-probes stock `tokenizers` in memory (about 30 s of CPU) and its output must match
the committed files byte for byte, apart from the generation date and the interpreter that ran it.
The remaining tests read the committed C data back and check it against stock behaviour with
independent small models, so a flaw in the probing method itself would also show up.
"""
import importlib.util
import os
import random
import re

import numpy as np
import pytest
from tokenizers import Regex
from tokenizers import pre_tokenizers as pt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = os.path.join(ROOT, "tables")
CP_LIMIT = 0x110000


def load_generator():
    spec = importlib.util.spec_from_file_location("tagtok_tables_generate", os.path.join(TABLES, "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read(name):
    with open(os.path.join(TABLES, name), encoding="utf-8") as f:
        return f.read()


def without_run(text):
    """The header's lines but for what changes between runs on the same references: the date and the
    Python version (its provenance line names the interpreter; the data compared must not depend on it)."""
    return [re.sub(r", Python \S+$", "", line) for line in text.splitlines() if not line.startswith(" * date:")]


@pytest.fixture(scope="module")
def regenerated():
    header, source, _ = load_generator().generate()
    return header, source


def test_committed_source_equals_fresh_probe(regenerated):
    assert read("tagtok_tables.c") == regenerated[1], "tables are stale: run python tables/generate.py"


def test_committed_header_equals_fresh_probe(regenerated):
    assert without_run(read("tagtok_tables.h")) == without_run(regenerated[0])


# ---- reading the committed C data back ----------------------------------------------------------

def c_array(source, name):
    body = re.search(rf"\b{name}\[[^\]]*\] = {{\n(.*?)\n}};", source, re.S).group(1)
    if body.startswith('"') or body.startswith("'"):
        return re.findall(r"[\"']([^\"']*)[\"']", body)
    return [int(v, 0) for v in body.replace("\n", "").split(",")]


def c_define(header, name):
    return int(re.search(rf"#define {name} (\d+)", header).group(1))


@pytest.fixture(scope="module")
def committed():
    return read("tagtok_tables.h"), read("tagtok_tables.c")


def per_cp(source, prefix):
    """Expand both committed encodings of one alphabet and require that they agree."""
    stage1 = np.array(c_array(source, f"{prefix}_stage1"))
    stage2 = np.array(c_array(source, f"{prefix}_stage2"))
    cps = np.arange(CP_LIMIT)
    by_stage = stage2[stage1[cps >> 8] * 256 + (cps & 0xFF)]
    starts = np.array(c_array(source, f"{prefix}_run_start"))
    tags = np.array(c_array(source, f"{prefix}_run_tag"))
    assert starts[0] == 0 and np.all(np.diff(starts) > 0)
    by_run = tags[np.searchsorted(starts, cps, side="right") - 1]
    assert np.array_equal(by_stage, by_run)
    return by_stage


def test_atom_lookups_agree_and_props_are_distinct(committed):
    header, source = committed
    atoms = per_cp(source, "tt_atom")
    assert np.array_equal(atoms[:128], c_array(source, "tt_atom_ascii"))
    props = c_array(source, "tt_atom_props")
    assert len(props) == len(set(props)) == c_define(header, "TT_ATOM_COUNT") < 0xFF
    assert atoms.max() == len(props) - 1
    assert np.all(atoms[0xD800:0xE000] == atoms[0x0378]), "surrogates must look unassigned"


def prop_mask(header, source, name):
    """Per-code-point boolean for one TT_PROP_* predicate, read from the committed tables."""
    names = c_array(source, "tt_prop_names")
    alias = re.search(rf"#define TT_PROP_{name} TT_PROP_(\w+)", header)
    bit = names.index(alias.group(1) if alias else name)
    props = np.array(c_array(source, "tt_atom_props"))
    return (props[per_cp(source, "tt_atom")] >> bit & 1).astype(bool)


def random_texts(seed, count=300, length=40):
    """Random strings over every scalar plus a dense pool of tricky ASCII/space/punctuation chars."""
    rng = random.Random(seed)
    pool = " \t\n\r'/-_.,!?aZ09\u00a0\u3000\u200d\u0301\u00bd\u00b2"
    def one():
        chars = []
        for _ in range(rng.randrange(1, length)):
            if rng.random() < 0.4:
                chars.append(rng.choice(pool))
            else:
                cp = rng.randrange(rng.choice((0x800, 0x10000, 0x30000, CP_LIMIT)))
                chars.append(chr(cp if not 0xD800 <= cp < 0xE000 else 0x41))
        return "".join(chars)
    return [one() for _ in range(count)]


def split_chars(text, is_match, behavior):
    """HF's char-predicate split for the behaviors the probes rely on (pattern.rs semantics)."""
    pieces, start = [], 0
    for i, ch in enumerate(text):
        if is_match(ch):
            if start < i:
                pieces.append((text[start:i], (start, i)))
            if behavior == "isolated":
                pieces.append((ch, (i, i + 1)))
            start = i + 1
    if start < len(text):
        pieces.append((text[start:], (start, len(text))))
    return pieces


@pytest.mark.parametrize("prop, stock, behavior", [
    ("WS", pt.WhitespaceSplit(), "removed"),
    ("PUNC", pt.Punctuation("isolated"), "isolated"),
    ("NUMERIC", pt.Digits(individual_digits=True), "isolated"),
    ("L", pt.Split(Regex(r"\p{L}"), "isolated"), "isolated"),
    ("M", pt.Split(Regex(r"\p{M}"), "removed"), "removed"),
    ("LU", pt.Split(Regex(r"\p{Lu}"), "isolated"), "isolated"),
    ("ONIG_S", pt.Split(Regex(r"\s"), "removed"), "removed"),
])
def test_char_predicates_reproduce_stock_splits(committed, prop, stock, behavior):
    mask = prop_mask(*committed, prop)
    for text in random_texts(seed=prop):
        expected = stock.pre_tokenize_str(text)
        assert split_chars(text, lambda ch: mask[ord(ch)], behavior) == expected, repr(text)


def test_rust_regex_word_classes_reproduce_whitespace_pretokenizer(committed):
    word, space = prop_mask(*committed, "RW"), prop_mask(*committed, "RS")
    kind = lambda ch: "w" if word[ord(ch)] else "s" if space[ord(ch)] else "o"  # noqa: E731
    for text in random_texts(seed="whitespace"):
        pieces, start = [], 0
        for i in range(1, len(text) + 1):
            if i == len(text) or kind(text[i]) != kind(text[start]):
                if kind(text[start]) != "s":
                    pieces.append((text[start:i], (start, i)))
                start = i
        assert pieces == pt.Whitespace().pre_tokenize_str(text), repr(text)


def test_script_table_reproduces_unicode_scripts(committed):
    header, source = committed
    scripts = per_cp(source, "tt_script")
    any_id = c_define(header, "TT_SCRIPT_ANY")
    assert np.all(scripts[0xD800:0xE000] == any_id)
    stock = pt.UnicodeScripts()
    texts = random_texts(seed="scripts", count=2000)
    texts += ["\u3042\u30a2\u30fc\u4e2d", "  ab", "a\U0001f600 b", "x\U0001f970y", "\uff71\uff70\uff72"]
    for text in texts:
        cuts, last = [], None
        for i, ch in enumerate(text):
            script = scripts[ord(ch)]
            if script != any_id:
                if script != last:
                    cuts.append(i)
                last = script
        bounds = cuts + [len(text)]
        expected = [(text[a:b], (a, b)) for a, b in zip(bounds, bounds[1:])]
        assert expected == stock.pre_tokenize_str(text), repr(text)


def test_bytelevel_map_renders_like_stock(committed):
    byte_map = c_array(committed[1], "tt_bytelevel_map")
    assert sorted(map(chr, byte_map)) == sorted(pt.ByteLevel.alphabet())
    # The 13 bytes that never occur in UTF-8 cannot be probed; transformers' GPT-2 map covers them.
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    assert byte_map == [ord(ch) for _, ch in sorted(bytes_to_unicode().items())]
    stock = pt.ByteLevel(add_prefix_space=False, use_regex=False)
    for text in random_texts(seed="bytes"):
        rendered = "".join(chr(byte_map[b]) for b in text.encode("utf-8"))
        assert [(rendered, (0, len(text)))] == stock.pre_tokenize_str(text)


def test_case_folds_are_what_onig_contractions_accept(committed):
    source = committed[1]
    folds = dict(zip(c_array(source, "tt_ci_fold_cp"), c_array(source, "tt_ci_fold_letter")))
    contraction = pt.Split(Regex(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"), "removed")
    for cp, letter in folds.items():
        word = {"r": "{}e", "v": "{}e", "e": "r{}", "l": "{}l"}.get(letter, "{}").format(chr(cp))
        assert contraction.pre_tokenize_str("'" + word) == []
    assert ord("\u017f") in folds, "long s folds to s in onig (hf_pretokenizer_semantics.md §4)"
