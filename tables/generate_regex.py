"""Derive the code point sets the Split-regex compiler needs, by probing stock tokenizers' Oniguruma.

Run from the repository root:  python tables/generate_regex.py
Writes tables/regex_sets.h and tables/regex_sets.c. Dev-only: nothing here is imported at runtime.

Every set is read back from stock `Split(Regex(probe + "+"), "removed")` over the concatenation of
all 1,112,064 scalar values: the chars no piece covers are the members. Names tried come from the
`regex` module's General_Category and Script value names; a name stock rejects is left out, so the
table holds exactly the properties onig accepts, each with the members onig gives it.
"""
import datetime
import os
import platform
import sys

import numpy as np
import regex
import regex._regex_core as regex_core
import tokenizers
from tokenizers import Regex
from tokenizers import pre_tokenizers as pt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate import coverage, scalar_values, text_of  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND = "python tables/generate_regex.py"
# Escapes and the dot, under the names the compiler looks them up by.
ESCAPES = {"\\s": r"\s", "\\d": r"\d", "\\w": r"\w", "\\h": r"\h", ".": r"."}


def loose(name):
    """Onig's loose property-name matching: case, spaces, hyphens and underscores are ignored."""
    return "".join(ch for ch in name.upper() if ch not in " -_")


def candidate_names():
    """Groups of names the `regex` module says are aliases (one General_Category or Script value)."""
    groups = [["ANY"], ["ASSIGNED"]]
    for prop in ("GENERALCATEGORY", "SCRIPT"):
        by_value = {}
        for name, value in regex_core.PROPERTIES[prop][1].items():
            by_value.setdefault(value, []).append(name)
        groups += [sorted(names, key=lambda n: (-len(n), n)) for _, names in sorted(by_value.items())]
    return groups


def accepted(name):
    try:
        Regex(rf"\p{{{name}}}")
        return True
    except Exception:
        return False


def members(pattern, text, cps):
    try:
        probe = pt.Split(Regex(f"(?:{pattern})+"), "removed")
    except Exception:
        return None
    try:
        pieces = probe.pre_tokenize_str(text)
    except Exception:
        return None
    if not pieces:
        return cps
    covered, _ = coverage(pieces, len(cps))
    return cps[~covered]


def ranges_of(cps):
    if len(cps) == 0:
        return []
    breaks = np.flatnonzero(np.diff(cps) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks - 1, [len(cps) - 1]])
    return list(zip(cps[starts].tolist(), cps[ends].tolist()))


def case_fold_sets(text, cps):
    """ASCII char -> every scalar onig's (?i:c) matches alone (its one-char case-fold class).

    One probe over all scalars finds what (?i:[\x20-\x7E]) takes; each char is then probed on those."""
    candidates = members(r"(?i:[\x20-\x7E])", text, cps)
    cand_text = text_of(candidates)
    out = {}
    for c in range(0x20, 0x7F):
        got = members(f"(?i:{regex.escape(chr(c), special_only=False)})", cand_text, candidates)
        assert got is not None and c in got.tolist(), chr(c)
        if len(got) > 1:
            out[chr(c)] = got
    return out


def multi_char_folds(cps):
    """ASCII strings of 2+ letters that onig's (?i:...) matches against ONE scalar (ß for "ss" ...).

    Candidates are the scalars Python's casefold() expands to ASCII letters; each is kept only when
    stock confirms that (?i:<string>) matches that scalar alone."""
    found = set()
    for cp in cps.tolist():
        folded = chr(cp).casefold()
        if len(folded) > 1 and folded.isascii() and folded.isalpha():
            probe = pt.Split(Regex(f"(?i:{folded})"), "removed")
            if probe.pre_tokenize_str(chr(cp)) == []:
                found.add(folded)
    # what the long s and the Kelvin sign fold to combine with these too: close over the fold sets
    return sorted(found)


def generate():
    cps = scalar_values()
    text = text_of(cps)
    unassigned = members(r"\p{Cn}", text, cps)
    # Every set but the unassigned-inclusive ones is probed on the assigned scalars plus every 16th
    # unassigned one; a set that takes any sampled unassigned scalar is re-probed on all scalars.
    sample = np.union1d(np.setdiff1d(cps, unassigned), unassigned[::16])
    sample_text = text_of(sample)
    check = np.random.default_rng(0).choice(cps, 4096, replace=False)
    check = np.sort(check)
    check_text = text_of(check)
    sets, aliases, by_members = {}, {}, {}
    for group in candidate_names():
        names = [n for n in group if accepted(n)]
        if not names:
            continue
        got = members(rf"\p{{{names[0]}}}", sample_text, sample)
        if np.isin(got, unassigned).any():
            got = members(rf"\p{{{names[0]}}}", text, cps)
        rs = tuple(ranges_of(got))
        key = loose(names[0])
        canonical = by_members.setdefault(rs, key)
        if canonical == key:
            sets[key] = rs
        else:
            aliases[key] = canonical
        # the other names of the group must be the same set to onig (checked on a random sample)
        expect = check[np.isin(check, got)]
        for other in names[1:]:
            assert np.array_equal(members(rf"\p{{{other}}}", check_text, check), expect), other
            aliases[loose(other)] = canonical
    for name, pattern in ESCAPES.items():
        sets[name] = tuple(ranges_of(members(pattern, text, cps)))
    folds = case_fold_sets(text, cps)
    multi = multi_char_folds(cps)
    return sets, aliases, folds, multi


def c_array(decl, values, per_line=16, fmt=str):
    lines = [",".join(fmt(v) for v in values[i:i + per_line]) for i in range(0, len(values), per_line)]
    return f"{decl} = {{\n" + ",\n".join(lines) + "\n};\n"


def render(sets, aliases, folds, multi):
    names = list(sets)
    offsets, flat = [0], []
    for name in names:
        for lo, hi in sets[name]:
            flat += [lo, hi]
        offsets.append(len(flat) // 2)
    alias_names = sorted(aliases)
    fold_chars = sorted(folds)
    fold_offsets, fold_flat = [0], []
    for ch in fold_chars:
        fold_flat += folds[ch].tolist()
        fold_offsets.append(len(fold_flat))
    hexa = lambda v: f"0x{v:X}"  # noqa: E731
    quote = lambda s: '"' + s.replace("\\", "\\\\") + '"'  # noqa: E731
    prov = "\n".join(" * " + line for line in [
        "Generated by tables/generate_regex.py -- do not edit. Regenerate with:",
        f"    {COMMAND}",
        f"date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"tokenizers {tokenizers.__version__}, regex {regex.__version__}, Python {platform.python_version()}",
        "Each set: the scalars stock Split(Regex('(?:<probe>)+'), 'removed') drops from the",
        "concatenation of the assigned scalars and every 16th unassigned one (all 1,112,064 scalars",
        "when a sampled unassigned one is a member; escapes and the dot always on all scalars).",
        "Names: loose onig names (upper case, no ' -_'); an alias (a name the regex module gives the",
        "same value) must equal its set on 4,096 random scalars. Probed names: regex's",
        "General_Category and Script values, Any, Assigned; names stock rejects are left out.",
        f"{len(names)} sets ({len(names) - len(ESCAPES)} properties + escapes {' '.join(ESCAPES)}), "
        f"{len(alias_names)} aliases, {len(flat) // 2} ranges",
        "case folds: ASCII chars whose (?i:c) matches more than c: "
        + " ".join(f"{ch}:{len(folds[ch])}" for ch in fold_chars),
        "multi-char folds (ASCII strings (?i:..) matches as one scalar): " + " ".join(multi),
    ]) + "\n"
    header = (f"/*\n{prov} */\n#ifndef TAGTOK_REGEX_SETS_H\n#define TAGTOK_REGEX_SETS_H\n\n#include <stdint.h>\n\n"
              f"#define TT_RX_SET_COUNT {len(names)}\n#define TT_RX_ALIAS_COUNT {len(alias_names)}\n"
              f"#define TT_RX_FOLD_COUNT {len(fold_chars)}\n#define TT_RX_MULTI_FOLD_COUNT {len(multi)}\n\n"
              "extern const char *const tt_rx_set_names[TT_RX_SET_COUNT];\n"
              "extern const uint32_t tt_rx_set_offsets[TT_RX_SET_COUNT + 1]; /* into tt_rx_ranges, in ranges */\n"
              "extern const uint32_t tt_rx_ranges[]; /* lo, hi (inclusive) pairs */\n"
              "extern const char *const tt_rx_alias_names[TT_RX_ALIAS_COUNT];\n"
              "extern const char *const tt_rx_alias_targets[TT_RX_ALIAS_COUNT];\n"
              "extern const char tt_rx_fold_chars[TT_RX_FOLD_COUNT];\n"
              "extern const uint32_t tt_rx_fold_offsets[TT_RX_FOLD_COUNT + 1];\n"
              "extern const uint32_t tt_rx_fold_cps[];\n"
              "extern const char *const tt_rx_multi_folds[TT_RX_MULTI_FOLD_COUNT];\n\n#endif\n")
    source = "".join([
        "/* Generated by tables/generate_regex.py -- do not edit. Provenance: regex_sets.h */\n",
        '#include "regex_sets.h"\n\n',
        c_array("const char *const tt_rx_set_names[TT_RX_SET_COUNT]", names, 8, quote),
        c_array("const uint32_t tt_rx_set_offsets[TT_RX_SET_COUNT + 1]", offsets),
        c_array("const uint32_t tt_rx_ranges[]", flat, fmt=hexa),
        c_array("const char *const tt_rx_alias_names[TT_RX_ALIAS_COUNT]", alias_names, 8, quote),
        c_array("const char *const tt_rx_alias_targets[TT_RX_ALIAS_COUNT]", [aliases[a] for a in alias_names], 8, quote),
        c_array("const char tt_rx_fold_chars[TT_RX_FOLD_COUNT]", fold_chars, 16, lambda c: f"'{c}'"),
        c_array("const uint32_t tt_rx_fold_offsets[TT_RX_FOLD_COUNT + 1]", fold_offsets),
        c_array("const uint32_t tt_rx_fold_cps[]", fold_flat, fmt=hexa),
        c_array("const char *const tt_rx_multi_folds[TT_RX_MULTI_FOLD_COUNT]", multi, 8, quote),
    ])
    return header, source


def main():
    sets, aliases, folds, multi = generate()
    header, source = render(sets, aliases, folds, multi)
    for name, text in (("regex_sets.h", header), ("regex_sets.c", source)):
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"sets={len(sets)} aliases={len(aliases)} folds={sorted(folds)} multi={multi}", file=sys.stderr)


if __name__ == "__main__":
    main()
