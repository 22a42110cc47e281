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
  table grapheme              every code point's extended grapheme cluster class (GRAPHEME_CLASSES) and
                        flags (Extended_Pictographic, Indic_Conjunct_Break), two-stage table
Grapheme classes come from the `regex` module's \\X (stock's Precompiled segments with the
unicode-segmentation crate, which no Python package exposes): each code point's class is what \\X
does with it next to a few anchor chars. Then stock itself checks them where it can show a cluster:
its Precompiled normalizer, given a probe charsmap that maps every code point c to c + U+E000 (built
by `sentencepiece` from a rule table), drops the non-first chars of every cluster shorter than 6 bytes;
every code point is probed after "a", before "a" and before U+0301, and the count of disagreements is
written into the generated file (stock wins where they differ; see _check_graphemes).
Run: python tables/generate_normalization.py   (rewrites both files; deterministic)
"""
import collections
import functools
import io
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


# Extended grapheme cluster classes, in the order of tt_grapheme_class (normalization_tables.h).
GRAPHEME_CLASSES = ("OTHER", "CR", "LF", "CONTROL", "EXTEND", "ZWJ", "REGIONAL", "PREPEND", "SPACING_MARK",
                    "L", "V", "T", "LV", "LVT")
GRAPHEME_EXT_PICT, GRAPHEME_INCB_SHIFT = 16, 5  # flag bit; Indic_Conjunct_Break in bits 5-6
INCB = {"Consonant": 1, "Linker": 2, "Extend": 3}
# Anchors: a letter, a combining mark, ZWJ, Hangul L/V/T jamo, an emoji, a regional indicator, a
# Devanagari consonant and virama (their own classes are checked below, not assumed).
A, MARK, ZWJ, JAMO_L, JAMO_V, JAMO_T = "a", "\u0301", "\u200d", "\u1100", "\u1161", "\u11a8"
EMOJI, REGIONAL, KA, VIRAMA = "\U0001F600", "\U0001F1E6", "\u0915", "\u094d"


def _grapheme_value(x):
    import regex

    one = functools.partial(regex.fullmatch, r"\X")
    attaches = one(A + x) is not None
    joined = lambda s: one(s) is not None  # noqa: E731
    if joined(x + "\n") and x != "\n":
        kind = "CR"
    elif joined("\r" + x):
        kind = "LF"
    elif not joined(x + MARK):
        kind = "CONTROL"
    elif attaches:
        kind = "ZWJ" if joined(EMOJI + x + EMOJI) else "EXTEND" if joined(EMOJI + x + ZWJ + EMOJI) else "SPACING_MARK"
    elif joined(x + A):
        kind = "PREPEND"
    elif joined(REGIONAL + x):
        kind = "REGIONAL"
    elif joined(x + JAMO_V):
        kind = "L" if not joined(x + JAMO_T) else "V" if joined(JAMO_V + x) else "LV"
    elif joined(x + JAMO_T):
        kind = "LVT" if joined(JAMO_L + x) else "T"
    else:
        kind = "OTHER"
    value = GRAPHEME_CLASSES.index(kind)
    if not attaches and kind not in ("CR", "LF", "CONTROL") and joined(EMOJI + ZWJ + x):
        value |= GRAPHEME_EXT_PICT
    if not attaches and kind not in ("CR", "LF", "CONTROL") and joined(KA + VIRAMA + x):
        value |= INCB["Consonant"] << GRAPHEME_INCB_SHIFT
    elif attaches and joined(KA + x + KA):
        value |= INCB["Linker"] << GRAPHEME_INCB_SHIFT
    elif attaches and joined(KA + VIRAMA + x + KA):
        value |= INCB["Extend"] << GRAPHEME_INCB_SHIFT
    return value


def _graphemes():
    """{code point: class | flags} for every code point; surrogates are OTHER (never in valid UTF-8)."""
    values = {c: _grapheme_value(chr(c)) for c in CODE_POINTS}
    expected = {A: "OTHER", MARK: "EXTEND", ZWJ: "ZWJ", JAMO_L: "L", JAMO_V: "V", JAMO_T: "T", REGIONAL: "REGIONAL",
                "\r": "CR", "\n": "LF", "\x00": "CONTROL", "\uac00": "LV", "\uac01": "LVT"}
    for char, kind in expected.items():
        assert values[ord(char)] & 15 == GRAPHEME_CLASSES.index(kind), f"anchor U+{ord(char):04X} is not {kind}"
    assert values[ord(EMOJI)] & GRAPHEME_EXT_PICT and values[ord(KA)] >> GRAPHEME_INCB_SHIFT == INCB["Consonant"]
    assert values[ord(VIRAMA)] >> GRAPHEME_INCB_SHIFT == INCB["Linker"]
    return values


def _segment(text, values):
    """Cluster lengths (in chars) of text by the UAX #29 rules over `values`; the C twin is in
    ext/pipeline/tp_normalize.c (next_grapheme)."""
    lengths, emoji, incb, regionals = [], 0, 0, 0
    previous = None
    for ch in text:
        v = values.get(ord(ch), 0)
        k, p = GRAPHEME_CLASSES[v & 15], None if previous is None else GRAPHEME_CLASSES[previous & 15]
        if p is None:
            join = False
        elif p == "CR" and k == "LF":
            join = True
        elif p in ("CR", "LF", "CONTROL") or k in ("CR", "LF", "CONTROL"):
            join = False
        elif (p == "L" and k in ("L", "V", "LV", "LVT")) or (p in ("LV", "V") and k in ("V", "T")) \
                or (p in ("LVT", "T") and k == "T"):
            join = True
        elif k in ("EXTEND", "ZWJ", "SPACING_MARK") or p == "PREPEND":
            join = True
        elif v >> GRAPHEME_INCB_SHIFT == INCB["Consonant"] and incb == 2:
            join = True
        elif p == "ZWJ" and v & GRAPHEME_EXT_PICT and emoji == 2:
            join = True
        else:
            join = p == "REGIONAL" and k == "REGIONAL" and regionals % 2 == 1
        if join:
            lengths[-1] += 1
        else:
            lengths.append(1)
        b = v >> GRAPHEME_INCB_SHIFT
        incb = 1 if b == INCB["Consonant"] else 2 if b == INCB["Linker"] and incb else incb if b == INCB["Extend"] else 0
        emoji = 1 if v & GRAPHEME_EXT_PICT else emoji if k == "EXTEND" and emoji == 1 else 2 if k == "ZWJ" and emoji == 1 else 0
        regionals = regionals + 1 if k == "REGIONAL" else 0
        previous = v
    return lengths


PROBE_MARK = "\ue000"


def _probe_precompiled():
    """Stock's Precompiled with a charsmap mapping every code point c to c + PROBE_MARK (PROBE_MARK to
    itself twice): a cluster shorter than 6 bytes comes out as its first char + PROBE_MARK."""
    import sentencepiece
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers import normalizers as N

    rules = HERE.parent / "build" / "grapheme_probe.tsv"
    rules.parent.mkdir(exist_ok=True)
    rules.write_text("".join(f"{c:X}\t{c:X} {ord(PROBE_MARK):X}\n" for c in CODE_POINTS if c))
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(["probe text"] * 20), model_writer=model,
                                             model_type="char", vocab_size=12, normalization_rule_tsv=str(rules),
                                             minloglevel=2, hard_vocab_limit=False, add_dummy_prefix=False,
                                             remove_extra_whitespaces=False)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    return N.Precompiled(proto.normalizer_spec.precompiled_charsmap).normalize_str


def _probe_expected(text, values):
    out = []
    at = 0
    for n in _segment(text, values):
        cluster = text[at:at + n]
        at += n
        chars = [cluster[0]] if len(cluster.encode()) < 6 else cluster
        out += [c + PROBE_MARK for c in chars]
    return "".join(out)


def _check_graphemes(values):
    """Probe stock on every code point after "a", before "a" and before U+0301 (each a cluster stock
    can show); where it disagrees, take the class whose clusters match stock among the candidates."""
    normalize = _probe_precompiled()
    probes = lambda x: (A + x, x + A, x + MARK)  # noqa: E731

    def agrees(c, value):
        classes = collections.ChainMap({c: value}, values)
        return all(normalize(p) == _probe_expected(p, classes) for p in probes(chr(c)))

    disagree = [c for c in CODE_POINTS if c not in (0, ord(PROBE_MARK)) and not agrees(c, values[c])]
    for c in disagree:
        values[c] = next(v for v in range(len(GRAPHEME_CLASSES)) if agrees(c, v))
    return disagree


def _c_graphemes(values):
    """Two-stage table: stage1[c >> 8] is a block index, blocks[block << 8 | (c & 255)] the value."""
    blocks, index, stage1 = [], {}, []
    for hi in range(0x110000 >> 8):
        block = tuple(values.get(hi << 8 | lo, 0) for lo in range(256))
        if block not in index:
            index[block] = len(blocks)
            blocks.append(block)
        stage1.append(index[block])
    return (f"static const uint16_t grapheme_stage1[] = {{{_join(stage1)}}};\n"
            f"static const uint8_t grapheme_blocks[] = {{{_join(v for b in blocks for v in b)}}};\n"
            "const tt_grapheme_table tt_grapheme = {grapheme_stage1, grapheme_blocks};\n")


def _regex_version():
    import regex

    return regex.__version__


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

/* Extended grapheme cluster classes (low 4 bits of a tt_grapheme value) */
enum {
    TT_GRAPHEME_OTHER, TT_GRAPHEME_CR, TT_GRAPHEME_LF, TT_GRAPHEME_CONTROL, TT_GRAPHEME_EXTEND, TT_GRAPHEME_ZWJ,
    TT_GRAPHEME_REGIONAL, TT_GRAPHEME_PREPEND, TT_GRAPHEME_SPACING_MARK, TT_GRAPHEME_L, TT_GRAPHEME_V,
    TT_GRAPHEME_T, TT_GRAPHEME_LV, TT_GRAPHEME_LVT
};
#define TT_GRAPHEME_EXT_PICT 16  /* Extended_Pictographic */
#define TT_GRAPHEME_INCB_SHIFT 5 /* Indic_Conjunct_Break: 1 Consonant, 2 Linker, 3 Extend */

typedef struct {
    const uint16_t *stage1; /* code point >> 8 -> block */
    const uint8_t *blocks;  /* block << 8 | (code point & 255) -> class | flags */
} tt_grapheme_table;

extern const tt_grapheme_table tt_grapheme;

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
    graphemes = _graphemes()
    disagree = _check_graphemes(graphemes)
    body.append(f"/* grapheme: from regex {_regex_version()} \\X; stock's Precompiled probed on every code point "
                f"(after 'a', before 'a', before U+0301) disagrees on {len(disagree)}, classed as stock shows them"
                + (f": {', '.join(f'U+{c:04X}' for c in disagree[:20])}" if disagree else "") + " */\n")
    body.append(_c_graphemes(graphemes))
    (HERE / "normalization_tables.h").write_text(HEADER)
    (HERE / "normalization_tables.c").write_text("".join(body))


if __name__ == "__main__":
    main()
