"""Generate tables/normalization_tables.{h,c}: the per-code-point behaviour of stock normalizers.

Every entry is probed from the installed `tokenizers` normalizers, one code point at a time (no
Unicode data is typed here): stock uses unicode-normalization-alignments 0.1.12, older than the
Unicode of Python's unicodedata, so only stock itself is the reference.

Tables (all over every code point except surrogates):
  maps  nfd, nfkd, lowercase: code points whose output differs from themselves -> output code points
  sets  (as sorted inclusive ranges)
        clean_remove   BertNormalizer(clean_text) deletes it
        clean_space    BertNormalizer(clean_text) turns it into ' '
        chinese        BertNormalizer(handle_chinese_chars) pads it with spaces
        bert_strip     BertNormalizer(strip_accents) deletes it once NFD-stable
        strip_accents  StripAccents deletes it
        nmt_remove     Nmt deletes it
        nmt_space      Nmt turns it into ' '
  ranks ccc_rank       NFD-stable code points canonical ordering moves (combining class != 0) -> a
                       rank with the same order as their combining classes (1 = lowest)
  pairs compose         (first, second) -> primary composite, as stock's NFC composes them
  sets  compose_second  code points that are the second of some pair
Run: python tables/generate_normalization.py   (rewrites both files; deterministic)
"""
import functools
import pathlib

from tokenizers import normalizers as N

HERE = pathlib.Path(__file__).parent
CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
# A starter-free probe pair: a low-class and a high-class combining mark (classes 1 and 230 as
# stock's NFD orders them; checked below, not assumed).
LOW_MARK, HIGH_MARK = "\u0334", "\u0301"


def _probe(normalizer):
    normalize = normalizer.normalize_str
    return {c: normalize(chr(c)) for c in CODE_POINTS}


def _map(normalizer):
    return {c: out for c, out in _probe(normalizer).items() if out != chr(c)}


def _ranges(members):
    ranges = []
    for c in sorted(members):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return ranges


def _bert(**flags):
    options = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    options.update(flags)
    return N.BertNormalizer(**options)


def _sets(nfd):
    clean = _probe(_bert(clean_text=True))
    clean_remove = {c for c, out in clean.items() if out == ""}
    clean_space = {c for c, out in clean.items() if out == " " and c != 0x20}
    odd = {c for c, out in clean.items() if out not in ("", " ", chr(c))}
    assert not odd, f"clean_text does more than delete or space: {sorted(odd)[:5]}"
    chinese = {c for c, out in _probe(_bert(handle_chinese_chars=True)).items() if out == f" {chr(c)} "}
    stable = [c for c in CODE_POINTS if c not in nfd]
    bert = _bert(strip_accents=True)
    bert_strip = {c for c in stable if bert.normalize_str(chr(c)) == ""}
    strip = N.StripAccents()
    strip_accents = {c for c in CODE_POINTS if strip.normalize_str(chr(c)) == ""}
    nmt = _probe(N.Nmt())
    nmt_remove = {c for c, out in nmt.items() if out == ""}
    nmt_space = {c for c, out in nmt.items() if out == " " and c != 0x20}
    odd = {c for c, out in nmt.items() if out not in ("", " ", chr(c))}
    assert not odd, f"Nmt does more than delete or space: {sorted(odd)[:5]}"
    return {"clean_remove": clean_remove, "clean_space": clean_space, "chinese": chinese,
            "bert_strip": bert_strip, "strip_accents": strip_accents, "nmt_remove": nmt_remove,
            "nmt_space": nmt_space}


def _ccc_ranks(nfd):
    """{code point: rank} for NFD-stable non-starters, ranked by how stock's NFD orders pairs."""
    probe = N.NFD().normalize_str
    assert probe(HIGH_MARK + LOW_MARK) == LOW_MARK + HIGH_MARK, "probe marks do not reorder"
    movable = [c for c in CODE_POINTS if c not in nfd
               and (probe(chr(c) + LOW_MARK) != chr(c) + LOW_MARK or probe(HIGH_MARK + chr(c)) != HIGH_MARK + chr(c))]

    def order(a, b):  # a sorts after b when NFD swaps "a b"
        return 1 if probe(chr(a) + chr(b)) == chr(b) + chr(a) else -1 if probe(chr(b) + chr(a)) == chr(a) + chr(b) else 0

    ranked = sorted(movable, key=functools.cmp_to_key(order))
    ranks, rank = {}, 0
    for i, c in enumerate(ranked):
        rank += i == 0 or order(ranked[i - 1], c) != 0
        ranks[c] = chr(rank)
    return ranks


def _compositions(nfd):
    """{(first, second): composite}: for each composite stock's NFC keeps, the pair it is built from."""
    nfc = N.NFC().normalize_str
    pairs = {}
    for composite, decomposed in nfd.items():
        if len(decomposed) < 2 or nfc(decomposed) != chr(composite):
            continue  # a singleton or an excluded composite: NFC never produces it
        for j in range(len(decomposed) - 1, 0, -1):  # the mark composed last (reordering may move it)
            first = nfc(decomposed[:j] + decomposed[j + 1:])
            if len(first) == 1 and nfc(first + decomposed[j]) == chr(composite):
                pairs[(ord(first), ord(decomposed[j]))] = composite
                break
        else:
            raise AssertionError(f"no composition pair for U+{composite:04X}")
    return pairs


def _c_pairs(name, pairs):
    keys = sorted(pairs)
    return (f"static const uint64_t {name}_keys[] = {{{_join(f'{a << 21 | b}ULL' for a, b in keys)}}};\n"
            f"static const uint32_t {name}_composed[] = {{{_join(pairs[k] for k in keys)}}};\n"
            f"const tt_norm_pairs tt_norm_{name} = {{{len(keys)}, {name}_keys, {name}_composed}};\n")


def _c_map(name, mapping):
    cps = sorted(mapping)
    offsets, out = [0], []
    for c in cps:
        out.extend(ord(ch) for ch in mapping[c])
        offsets.append(len(out))
    return (f"static const uint32_t {name}_cps[] = {{{_join(cps)}}};\n"
            f"static const uint32_t {name}_offsets[] = {{{_join(offsets)}}};\n"
            f"static const uint32_t {name}_out[] = {{{_join(out or [0])}}};\n"
            f"const tt_norm_map tt_norm_{name} = {{{len(cps)}, {name}_cps, {name}_offsets, {name}_out}};\n")


def _c_set(name, members):
    ranges = _ranges(members)
    flat = [v for r in ranges for v in r] or [0]
    return (f"static const uint32_t {name}_ranges[] = {{{_join(flat)}}};\n"
            f"const tt_norm_set tt_norm_{name} = {{{len(ranges)}, {name}_ranges}};\n")


def _join(values):
    items = [str(v) for v in values]
    return ",\n".join(",".join(items[i:i + 16]) for i in range(0, len(items), 16))


HEADER = """/* Generated by tables/generate_normalization.py from the installed tokenizers; do not edit. */
#ifndef TT_NORMALIZATION_TABLES_H
#define TT_NORMALIZATION_TABLES_H

#include <stdint.h>

typedef struct {
    uint32_t n;
    const uint32_t *cps;     /* sorted code points that map to something else */
    const uint32_t *offsets; /* n + 1: out[offsets[i] .. offsets[i+1]) is the output of cps[i] */
    const uint32_t *out;
} tt_norm_map;

typedef struct {
    uint32_t n;
    const uint32_t *ranges;  /* n sorted inclusive [first, last] pairs */
} tt_norm_set;

typedef struct {
    uint32_t n;
    const uint64_t *keys;    /* sorted first << 21 | second */
    const uint32_t *composed;
} tt_norm_pairs;

extern const tt_norm_pairs tt_norm_compose;

/* tt_norm_ccc_rank maps a code point to one value: its rank (absent: a starter, rank 0). */
extern const tt_norm_map tt_norm_nfd, tt_norm_nfkd, tt_norm_lowercase, tt_norm_ccc_rank;
extern const tt_norm_set tt_norm_clean_remove, tt_norm_clean_space, tt_norm_chinese, tt_norm_bert_strip,
    tt_norm_strip_accents, tt_norm_nmt_remove, tt_norm_nmt_space, tt_norm_compose_second;

#endif
"""


def main():
    nfd = _map(N.NFD())
    maps = {"nfd": nfd, "nfkd": _map(N.NFKD()), "lowercase": _map(N.Lowercase()), "ccc_rank": _ccc_ranks(nfd)}
    sets = _sets(nfd)
    pairs = _compositions(nfd)
    sets["compose_second"] = {second for _, second in pairs}
    body = ["/* Generated by tables/generate_normalization.py from the installed tokenizers; do not edit. */\n",
            '#include "normalization_tables.h"\n\n']
    body += [_c_map(name, mapping) for name, mapping in maps.items()]
    body += [_c_set(name, members) for name, members in sets.items()]
    body.append(_c_pairs("compose", pairs))
    (HERE / "normalization_tables.h").write_text(HEADER)
    (HERE / "normalization_tables.c").write_text("".join(body))


if __name__ == "__main__":
    main()
