"""Derive hf_tagtok's classification tables by probing the installed reference libraries.

Run from the repository root:  python tables/generate.py
Writes tables/tagtok_tables.h and tables/tagtok_tables.c. Dev-only: nothing here is imported at runtime.

Every predicate is measured by feeding all 1,112,064 Unicode scalar values through a stock
`tokenizers` pre-tokenizer and reading back which characters were removed, isolated or merged. No
Unicode database decides anything; `crosscheck.py` compares the probed sets with UCD versions only
to report which Unicode version each predicate turned out to be.
"""
import datetime
import functools
import json
import os
import platform
import sys

import numpy as np
import regex
import tokenizers
from tokenizers import Regex
from tokenizers import pre_tokenizers as pt

HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND = "python tables/generate.py"
SURROGATES = range(0xD800, 0xE000)
CP_LIMIT = 0x110000
UNASSIGNED_PROBE = 0x0378  # unassigned in every Unicode version; surrogates copy its classes

# Order fixes bit numbers. Aliases (predicates proven equal to an earlier one) share that bit.
PROP_ORDER = ["WS", "ONIG_S", "RS", "RW", "PUNC", "NUMERIC", "L", "N", "LU", "LL", "LT", "LM", "LO", "M",
              "SPACE", "CR", "LF", "APOS", "SLASH"]
ONIG_CLASSES = {"ONIG_S": r"\s", "L": r"\p{L}", "N": r"\p{N}", "LU": r"\p{Lu}", "LL": r"\p{Ll}",
                "LT": r"\p{Lt}", "LM": r"\p{Lm}", "LO": r"\p{Lo}", "M": r"\p{M}"}
LITERALS = {"SPACE": " ", "CR": "\r", "LF": "\n", "APOS": "'", "SLASH": "/"}
CONTRACTION_RE = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"


def scalar_values():
    cps = np.arange(CP_LIMIT, dtype=np.int64)
    return cps[(cps < SURROGATES.start) | (cps >= SURROGATES.stop)]


def text_of(cps):
    return np.asarray(cps, dtype="<u4").tobytes().decode("utf-32-le")


def fill_template(template, cps):
    """Concatenate `template` once per cp with "{}" replaced by that cp (built as UTF-32)."""
    codes = np.array([ord(c) for c in template.replace("{}", "\0")], dtype=np.int64)
    blocks = np.tile(codes, (len(cps), 1))
    blocks[:, template.index("{}")] = cps
    return text_of(blocks.ravel())


def coverage(pieces, n):
    """How many pieces cover each char position, and where length-1 pieces start."""
    offsets = np.array([o for _, o in pieces], dtype=np.int64).reshape(-1, 2)
    delta = np.zeros(n + 1, dtype=np.int64)
    np.add.at(delta, offsets[:, 0], 1)
    np.add.at(delta, offsets[:, 1], -1)
    covered = np.cumsum(delta[:-1]) > 0
    single = np.zeros(n, dtype=bool)
    ones = offsets[offsets[:, 1] - offsets[:, 0] == 1]
    single[ones[:, 0]] = True
    return covered, single


def removed_by(pretok, cps):
    """Chars a removing pre-tokenizer drops, probed on the concatenation of all `cps`."""
    covered, _ = coverage(pretok.pre_tokenize_str(text_of(cps)), len(cps))
    return ~covered


def interleaved(pretok, cps, neutral):
    """Probe each cp between two `neutral` chars: (removed, isolated) masks over `cps`."""
    text = fill_template(neutral + "{}", cps) + neutral
    covered, single = coverage(pretok.pre_tokenize_str(text), len(text))
    pos = 2 * np.arange(len(cps)) + 1
    return ~covered[pos], single[pos]


def probe_props(cps):
    """Each predicate as a boolean mask over `cps`, plus the list of measured aliases."""
    masks = {"WS": removed_by(pt.WhitespaceSplit(), cps)}
    for name, cls in ONIG_CLASSES.items():
        masks[name] = removed_by(pt.Split(Regex(cls), "removed"), cps)
    masks["RS"], isolated = interleaved(pt.Whitespace(), cps, "a")
    masks["RW"] = ~masks["RS"] & ~isolated
    masks["PUNC"] = removed_by(pt.Punctuation("removed"), cps)
    _, masks["NUMERIC"] = interleaved(pt.Digits(individual_digits=True), cps, "a")
    for name, ch in LITERALS.items():
        masks[name] = cps == ord(ch)
    check_consistency(masks, cps)
    return masks


def check_consistency(masks, cps):
    """Other stock entry points that share a predicate must agree with the probe."""
    bert_removed, bert_isolated = interleaved(pt.BertPreTokenizer(), cps, "a")
    assert np.array_equal(bert_removed, masks["WS"]), "Bert whitespace != WhitespaceSplit"
    assert np.array_equal(bert_isolated, masks["PUNC"]), "Bert punctuation != Punctuation"
    _, grouped = interleaved(pt.Digits(individual_digits=False), cps, "a")
    assert np.array_equal(grouped, masks["NUMERIC"]), "Digits(False) and Digits(True) disagree"


def bit_layout(masks):
    """Map each predicate to a bit; a predicate equal to an earlier one becomes its alias."""
    bits, aliases = {}, {}
    for name in PROP_ORDER:
        equal = next((b for b in bits if np.array_equal(masks[b], masks[name])), None)
        if equal is None:
            bits[name] = len(bits)
        else:
            aliases[name] = equal
    return bits, aliases


def full_range(values_by_scalar, cps, fill):
    """Spread per-scalar values over 0..0x10FFFF; surrogates get `fill`."""
    out = np.full(CP_LIMIT, fill, dtype=np.int64)
    out[cps] = values_by_scalar
    return out


def atom_table(masks, bits, cps):
    props = np.zeros(len(cps), dtype=np.int64)
    for name, bit in bits.items():
        props |= masks[name].astype(np.int64) << bit
    per_cp = full_range(props, cps, fill=props[np.searchsorted(cps, UNASSIGNED_PROBE)])
    return number_by_first_appearance(per_cp)


def number_by_first_appearance(values):
    """Replace values by ids 0.. ordered by first code point; returns (ids, distinct values)."""
    distinct, first = np.unique(values, return_index=True)
    order = np.argsort(first)
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[order] = np.arange(len(distinct))
    return rank[np.searchsorted(distinct, values)], distinct[order]


# ---- scripts ----------------------------------------------------------------------------------

def boundaries(pieces):
    return {start for _, (start, _) in pieces}


def probe_script_classes(cps):
    """Class id per scalar (equal id <=> UnicodeScripts never splits them) and the Any mask."""
    scripts = pt.UnicodeScripts()
    _, apart_from_latin = interleaved(scripts, cps, "a")
    _, apart_from_cyrillic = interleaved(scripts, cps, "\u0436")
    is_any = ~apart_from_latin & ~apart_from_cyrillic
    known = cps[~is_any]
    starts = sorted(boundaries(scripts.pre_tokenize_str(text_of(known))))
    class_of_run, reps = [], []
    for start in starts:
        class_of_run.append(same_class_as(scripts, chr(known[start]), reps))
    classes = np.full(len(cps), -1, dtype=np.int64)
    run_ids = np.searchsorted(np.array(starts), np.arange(len(known)), side="right") - 1
    classes[~is_any] = np.array(class_of_run)[run_ids]
    classes[is_any] = len(reps)
    return classes, reps


def same_class_as(scripts, ch, reps):
    """Index of the representative UnicodeScripts keeps together with `ch`; appends a new one."""
    if reps:
        text = "".join(ch + r for r in reps)
        cuts = boundaries(scripts.pre_tokenize_str(text))
        joined = [j for j in range(len(reps)) if 2 * j + 1 not in cuts]
        assert len(joined) <= 1, f"U+{ord(ch):04X} joins several script classes"
        if joined:
            return joined[0]
    reps.append(ch)
    return len(reps) - 1


def script_table(cps):
    classes, reps = probe_script_classes(cps)
    any_class = len(reps)
    per_cp = full_range(classes, cps, fill=any_class)
    ids, order = number_by_first_appearance(per_cp)
    names = [script_name(reps[c]) if c != any_class else "Any" for c in order.tolist()]
    return ids, uniquify(names), order.tolist().index(any_class)


@functools.lru_cache(maxsize=None)
def script_patterns():
    """(ISO 15924 code, compiled \\p{Script=...}) for every script the `regex` module knows."""
    import regex._regex_core as core
    codes = {}
    for name, value in core.PROPERTIES["SCRIPT"][1].items():
        if len(name) == 4:
            codes.setdefault(value, []).append(name)
    return [(min(c, key=lambda n: (n.startswith("Q"), n)).title(), regex.compile(rf"\p{{Script={min(c)}}}"))
            for _, c in sorted(codes.items())]


def script_name(ch):
    """Cosmetic: the ISO 15924 code the `regex` module gives a representative char (e.g. Latn)."""
    found = [code for code, pattern in script_patterns() if pattern.match(ch)]
    return found[0] if found else f"U{ord(ch):04X}"


def uniquify(names):
    seen = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    return out


# ---- ByteLevel and case folds -----------------------------------------------------------------

def bytelevel_map(cps):
    """byte -> code point, read from stock ByteLevel's rendering of every scalar's UTF-8 bytes."""
    text = text_of(cps)
    (rendered, _), = pt.ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str(text)
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    shown = np.frombuffer(rendered.encode("utf-32-le"), dtype="<u4")
    assert len(raw) == len(shown)
    table = np.zeros(256, dtype=np.int64)
    table[raw] = shown
    assert np.array_equal(table[raw], shown), "a byte renders as two different chars"
    mapping = {b: int(table[b]) for b in np.unique(raw).tolist()}
    # C0, C1 and F5..FF never occur in valid UTF-8: give them the unused alphabet chars in order.
    rest = sorted(set(map(ord, pt.ByteLevel.alphabet())) - set(mapping.values()))
    unseen = [b for b in range(256) if b not in mapping]
    assert len(rest) == len(unseen)
    mapping.update(zip(unseen, rest))
    return [mapping[b] for b in range(256)], unseen


# Each context leaves the probed char one position among the contraction alternatives; every
# alternative starts with the apostrophe, so matches never run from one block into the next.
FOLD_CONTEXTS = [("'{}", "stmd"), ("'{}e", "rv"), ("'{}l", "l"), ("'r{}", "e")]


def case_folds(cps):
    """Non-ASCII cps that onig's (?i:...) contraction alternatives read as s t r e v m l d."""
    wide = cps[cps >= 0x80]
    contraction = pt.Split(Regex(CONTRACTION_RE), "removed")
    found = {}
    for context, letters in FOLD_CONTEXTS:
        width = len(context) - 1
        covered, _ = coverage(contraction.pre_tokenize_str(fill_template(context, wide)), width * len(wide))
        gone = ~covered.reshape(len(wide), width).any(axis=1)
        for c in wide[gone].tolist():
            letter = which_letter(context, chr(c), letters)
            assert found.setdefault(c, letter) == letter
    stand_in, _ = coverage(contraction.pre_tokenize_str(fill_template("{}s", wide)), 2 * len(wide))
    assert stand_in.all(), "a non-ASCII char case-folds to the apostrophe"
    return sorted(found.items())


def which_letter(context, ch, letters):
    hits = []
    for letter in letters:
        alternative = context.replace("{}", letter)
        probe = pt.Split(Regex(f"(?i:{alternative})"), "removed")
        if probe.pre_tokenize_str(context.format(ch)) == []:
            hits.append(letter)
    assert len(hits) == 1, f"U+{ord(ch):04X} folds to {hits}"
    return hits[0]


# ---- C output ---------------------------------------------------------------------------------

def two_level(per_cp):
    """stage1[cp >> 8] -> block, stage2[block * 256 + (cp & 0xFF)] -> value, blocks deduplicated."""
    blocks, stage1 = {}, []
    for hi in range(CP_LIMIT >> 8):
        block = tuple(per_cp[hi << 8:(hi + 1) << 8].tolist())
        stage1.append(blocks.setdefault(block, len(blocks)))
    stage2 = [v for block in blocks for v in block]
    return stage1, stage2


def runs(per_cp):
    change = np.flatnonzero(np.diff(per_cp)) + 1
    starts = np.concatenate([[0], change])
    return starts.tolist(), per_cp[starts].tolist()


def c_array(decl, values, per_line=32, fmt=str):
    lines = [",".join(fmt(v) for v in values[i:i + per_line]) for i in range(0, len(values), per_line)]
    return f"{decl} = {{\n" + ",\n".join(lines) + "\n};\n"


def c_strings(decl, names):
    return c_array(decl, names, per_line=8, fmt=lambda s: f'"{s}"')


def atom_name(props, bits):
    return "|".join(n for n, b in bits.items() if props >> b & 1) or "NONE"


def generate():
    """Probe everything; return (header text, source text, summary dict)."""
    cps = scalar_values()
    masks = probe_props(cps)
    bits, aliases = bit_layout(masks)
    atom_ids, atom_props = atom_table(masks, bits, cps)
    script_ids, script_names, script_any = script_table(cps)
    byte_map, unseen_bytes = bytelevel_map(cps)
    folds = case_folds(cps)
    assert len(atom_props) < 0xFF and len(script_names) < 0xFF
    counts = {name: int(masks[name].sum()) for name in PROP_ORDER}
    summary = dict(bits=bits, aliases=aliases, counts=counts, atoms=len(atom_props),
                   scripts=len(script_names), script_any=script_any, folds=folds,
                   unseen_bytes=unseen_bytes, script_known=int(np.sum(script_ids[cps] != script_any)))
    header = render_header(bits, aliases, atom_props, atom_ids, script_names, script_any, script_ids,
                           folds, summary)
    source = render_source(bits, atom_props, atom_ids, script_names, script_ids, byte_map, folds)
    return header, source, summary


def render_header(bits, aliases, atom_props, atom_ids, script_names, script_any, script_ids, folds, summary):
    out = [provenance(summary), "#ifndef TAGTOK_TABLES_H\n#define TAGTOK_TABLES_H\n\n#include <stdint.h>\n\n"]
    for name, bit in bits.items():
        out.append(f"#define TT_PROP_{name} (1u << {bit})\n")
    for name, equal in aliases.items():
        out.append(f"#define TT_PROP_{name} TT_PROP_{equal} /* probed equal */\n")
    out.append(f"#define TT_PROP_COUNT {len(bits)}\n")
    out.append("extern const char *const tt_prop_names[TT_PROP_COUNT];\n\n")
    out.append(f"#define TT_ATOM_COUNT {len(atom_props)}\n")
    for atom, props in enumerate(atom_props.tolist()):
        out.append(f"/* atom {atom:3d}: {atom_name(props, bits)} */\n")
    out.append("extern const uint32_t tt_atom_props[TT_ATOM_COUNT];\n"
               "extern const char *const tt_atom_names[TT_ATOM_COUNT];\n"
               "extern const uint8_t tt_atom_ascii[128];\n"
               "extern const uint16_t tt_atom_stage1[0x1100];\n"
               "extern const uint8_t tt_atom_stage2[];\n")
    out.append(f"#define TT_ATOM_RUN_COUNT {len(runs(atom_ids)[0])}\n")
    out.append("extern const uint32_t tt_atom_run_start[TT_ATOM_RUN_COUNT];\n"
               "extern const uint8_t tt_atom_run_tag[TT_ATOM_RUN_COUNT];\n\n")
    out.append(f"#define TT_SCRIPT_COUNT {len(script_names)}\n#define TT_SCRIPT_ANY {script_any}\n")
    out.append("extern const char *const tt_script_names[TT_SCRIPT_COUNT];\n"
               "extern const uint16_t tt_script_stage1[0x1100];\n"
               "extern const uint8_t tt_script_stage2[];\n")
    out.append(f"#define TT_SCRIPT_RUN_COUNT {len(runs(script_ids)[0])}\n")
    out.append("extern const uint32_t tt_script_run_start[TT_SCRIPT_RUN_COUNT];\n"
               "extern const uint8_t tt_script_run_tag[TT_SCRIPT_RUN_COUNT];\n\n")
    out.append("extern const uint32_t tt_bytelevel_map[256];\n\n")
    out.append(f"#define TT_CI_FOLD_COUNT {len(folds)}\n"
               "extern const uint32_t tt_ci_fold_cp[TT_CI_FOLD_COUNT];\n"
               "extern const char tt_ci_fold_letter[TT_CI_FOLD_COUNT];\n\n#endif\n")
    return "".join(out)


def provenance(summary):
    lines = [
        "Generated by tables/generate.py -- do not edit. Regenerate with:",
        f"    {COMMAND}",
        f"date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"tokenizers {tokenizers.__version__}, regex {regex.__version__}, "
        f"Python {platform.python_version()}",
        "Every predicate was probed on all 1,112,064 scalar values through stock tokenizers;",
        "counts (scalars matching), then the UCD set each equals exactly, as measured by",
        "python tables/crosscheck.py (unicodedata2 UCD 8.0.0/9.0.0/15.1.0/16.0.0/17.0.0 + regex):",
    ]
    versions = measured_versions()
    for name in PROP_ORDER:
        alias = summary["aliases"].get(name)
        note = f" (== {alias})" if alias else ""
        lines.append(f"  {name:8s} {summary['counts'][name]:7d}{note}  {versions.get(name, '')}")
    lines += [
        f"atoms: {summary['atoms']} distinct property tuples (ids by first code point)",
        f"scripts: {summary['scripts']} UnicodeScripts classes after fixed_script, "
        f"{summary['script_known']} scalars not Any {versions.get('SCRIPTS', '')}",
        "ByteLevel: bytes " + " ".join(f"{b:02X}" for b in summary["unseen_bytes"])
        + " never occur in UTF-8; they take the unused ByteLevel.alphabet() chars in order",
        "case folds: " + ", ".join(f"U+{cp:04X}->{ch}" for cp, ch in summary["folds"]),
    ]
    return "/*\n" + "\n".join(" * " + line for line in lines) + "\n */\n"


def measured_versions():
    """name -> note on the Unicode version the predicate equals, from crosscheck.py's last run."""
    path = os.path.join(HERE, "unicode_versions.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    return {name: f"= {entry['definition']} of {' / '.join(entry['equals']) or 'no tested version'}"
            for name, entry in report.items()}


def render_source(bits, atom_props, atom_ids, script_names, script_ids, byte_map, folds):
    a1, a2 = two_level(atom_ids)
    s1, s2 = two_level(script_ids)
    ar, at = runs(atom_ids)
    sr, st = runs(script_ids)
    hexa = lambda v: f"0x{v:X}"  # noqa: E731
    return "".join([
        "/* Generated by tables/generate.py -- do not edit. Provenance: tagtok_tables.h */\n",
        '#include "tagtok_tables.h"\n\n',
        c_strings("const char *const tt_prop_names[TT_PROP_COUNT]", list(bits)),
        c_array("const uint32_t tt_atom_props[TT_ATOM_COUNT]", atom_props.tolist(), fmt=hexa),
        c_strings("const char *const tt_atom_names[TT_ATOM_COUNT]",
                  [atom_name(p, bits) for p in atom_props.tolist()]),
        c_array("const uint8_t tt_atom_ascii[128]", atom_ids[:128].tolist()),
        c_array("const uint16_t tt_atom_stage1[0x1100]", a1),
        c_array("const uint8_t tt_atom_stage2[]", a2, per_line=64),
        c_array("const uint32_t tt_atom_run_start[TT_ATOM_RUN_COUNT]", ar, per_line=16, fmt=hexa),
        c_array("const uint8_t tt_atom_run_tag[TT_ATOM_RUN_COUNT]", at),
        c_strings("const char *const tt_script_names[TT_SCRIPT_COUNT]", script_names),
        c_array("const uint16_t tt_script_stage1[0x1100]", s1),
        c_array("const uint8_t tt_script_stage2[]", s2, per_line=64),
        c_array("const uint32_t tt_script_run_start[TT_SCRIPT_RUN_COUNT]", sr, per_line=16, fmt=hexa),
        c_array("const uint8_t tt_script_run_tag[TT_SCRIPT_RUN_COUNT]", st),
        c_array("const uint32_t tt_bytelevel_map[256]", byte_map, per_line=16, fmt=hexa),
        c_array("const uint32_t tt_ci_fold_cp[TT_CI_FOLD_COUNT]", [cp for cp, _ in folds], fmt=hexa),
        c_array("const char tt_ci_fold_letter[TT_CI_FOLD_COUNT]", [ch for _, ch in folds],
                fmt=lambda ch: f"'{ch}'"),
    ])


def main():
    header, source, summary = generate()
    for name, text in (("tagtok_tables.h", header), ("tagtok_tables.c", source)):
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"atoms={summary['atoms']} scripts={summary['scripts']} bits={len(summary['bits'])} "
          f"aliases={summary['aliases']} folds={summary['folds']}", file=sys.stderr)


if __name__ == "__main__":
    main()
