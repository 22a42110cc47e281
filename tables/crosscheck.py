"""Measure which Unicode version each probed predicate equals. Documentation only: tables never use it.

Run from the repository root:  python tables/crosscheck.py
Writes tables/unicode_versions.json, which generate.py quotes in the provenance header.

General categories per Unicode version come from the UCD tables compiled into the `unicodedata2`
source distributions (unicodedata_db.h, read as text; nothing is built). The sdists are fetched once
into build/ucd/ with pip. Properties unicodedata lacks (White_Space, Alphabetic, Join_Control, Script)
come from the `regex` module (its own, newer UCD), restricted to the code points assigned in the
version under test.
"""
import json
import os
import re
import subprocess
import sys
import tarfile

import numpy as np
import regex

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402

ROOT = os.path.dirname(generate.HERE)
CACHE = os.path.join(ROOT, "build", "ucd")
OUTPUT = os.path.join(generate.HERE, "unicode_versions.json")
VERSIONS = ["8.0.0", "9.0.0", "15.1.0", "16.0.0", "17.0.0"]
ASCII_PUNCT = np.array([ord(c) for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"])


def ucd_header(version):
    tarball = os.path.join(CACHE, f"unicodedata2-{version}.tar.gz")
    if not os.path.exists(tarball):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "-d", CACHE, f"unicodedata2=={version}"], check=True)
    with tarfile.open(tarball) as tar:
        return tar.extractfile(f"unicodedata2-{version}/unicodedata2/unicodedata_db.h").read().decode()


def c_numbers(source, name):
    body = re.search(rf"\b{name}\[\] = {{(.*?)}};", source, re.S).group(1)
    return np.array([int(v) for v in re.findall(r"\d+", body)])


def general_categories(version):
    """Two-letter general category of every code point 0..0x10FFFF in that Unicode version."""
    source = ucd_header(version)
    assert f'UNIDATA_VERSION "{version}"' in source
    records = re.search(r"_PyUnicode_Database_Records\[\] = {(.*?)};", source, re.S).group(1)
    category_of_record = np.array([int(v) for v in re.findall(r"{(\d+),", records)])
    names = re.findall(r'"(\w*)"', re.search(r"_PyUnicode_CategoryNames\[\] = {(.*?)};", source, re.S).group(1))
    shift = int(re.search(r"#define SHIFT (\d+)", source).group(1))
    index1, index2 = c_numbers(source, "index1"), c_numbers(source, "index2")
    cps = np.arange(generate.CP_LIMIT)
    record = index2[(index1[cps >> shift] << shift) + (cps & ((1 << shift) - 1))]
    return np.array(names)[category_of_record[record]]


def regex_set(pattern):
    """Code points the `regex` module puts in `pattern` (its own UCD)."""
    text = generate.text_of(generate.scalar_values())
    found = np.zeros(generate.CP_LIMIT, dtype=bool)
    found[[ord(m) for m in regex.findall(pattern, text)]] = True
    return found


def candidates(gc):
    """For one Unicode version, the UCD definition each probed predicate is expected to equal."""
    cat = lambda *prefixes: np.isin(np.char.str_len(gc), 2) & np.any(  # noqa: E731
        [np.char.startswith(gc, p) for p in prefixes], axis=0)
    assigned = ~np.isin(gc, ["Cn"])
    punct = cat("P")
    punct[ASCII_PUNCT] = True
    word = regex_set(r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]") & assigned
    return {
        "PUNC": ("ASCII punctuation | P*", punct), "NUMERIC": ("Nd|Nl|No", cat("Nd", "Nl", "No")),
        "L": ("L*", cat("L")), "N": ("N*", cat("N")), "M": ("M*", cat("M")),
        "LU": ("Lu", cat("Lu")), "LL": ("Ll", cat("Ll")), "LT": ("Lt", cat("Lt")),
        "LM": ("Lm", cat("Lm")), "LO": ("Lo", cat("Lo")),
        "RW": ("Alphabetic|M|Nd|Pc|Join_Control (regex) & assigned", word),
        "SCRIPTS": ("assigned, not private use, minus U+0020 (non-Any script)",
                    assigned & ~np.isin(gc, ["Co", "Cs"]) & (np.arange(len(gc)) != 0x20)),
    }


def main():
    cps = generate.scalar_values()
    probed = {name: generate.full_range(mask, cps, False) for name, mask in generate.probe_props(cps).items()}
    classes, reps = generate.probe_script_classes(cps)
    probed["SCRIPTS"] = generate.full_range(classes != len(reps), cps, False)
    report = {}
    white = regex_set(r"\p{White_Space}")
    for name in ("WS", "ONIG_S", "RS"):
        report[name] = {"count": int(probed[name].sum()), "definition": "White_Space (regex module)",
                        "equals": [f"regex {regex.__version__}"] if np.array_equal(probed[name], white) else [],
                        "differences": {}}
    for version in VERSIONS:
        for name, (definition, expected) in candidates(general_categories(version)).items():
            entry = report.setdefault(name, {"count": int(probed[name].sum()), "definition": definition,
                                             "equals": [], "differences": {}})
            diff = probed[name] != expected
            entry["differences"][version] = {"probe_only": int((diff & probed[name]).sum()),
                                             "ucd_only": int((diff & expected).sum())}
            if not diff.any():
                entry["equals"].append(version)
    report["SCRIPTS"]["partition_vs_regex"] = script_partition_check(classes, reps, cps)
    with open(OUTPUT, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    for name, entry in report.items():
        print(f"{name:8s} {entry['count']:7d} equals {entry['equals'] or 'none'}", file=sys.stderr)


def script_partition_check(classes, reps, cps):
    """How many non-Any scalars the regex module (newer UCD) puts in another script than their class."""
    text = generate.text_of(cps)
    names = np.full(generate.CP_LIMIT, "", dtype=object)
    for code, pattern in generate.script_patterns():
        names[[ord(m) for m in pattern.findall(text)]] = code
    names = names[cps]
    names[np.isin(names, ["Hira", "Kana"]) | (cps == 0x30FC)] = "Hani"
    known = classes != len(reps)
    moved = 0
    for c in np.unique(classes[known]):
        _, counts = np.unique(names[classes == c].astype(str), return_counts=True)
        moved += int(counts.sum() - counts.max())
    return {"non_any": int(known.sum()), "in_other_script_per_regex": moved}


if __name__ == "__main__":
    main()
