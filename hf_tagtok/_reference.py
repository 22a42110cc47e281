"""Pure-Python reference of the engine's pre-tokenizer programs (the C path is tested against it).

Readable rather than fast, like tiktoken's educational module: it classifies every char by looking it
up in the generated tables (`_engine.tables()`), then runs the same FSMs and the same executor as
ext/engine/fsm_*.c and program.c, working in char indices instead of bytes.

    >>> Program([{"kind": "split_regex", "regex": "cl100k", "behavior": "isolated"}]).pre_tokenize_str("Hi all")
    [('Hi', (0, 2)), (' all', (2, 6))]

Segments are (start, end, is_match) tilings of a piece, as tokenizers' `find_matches` produces them;
`apply_behavior` turns them into pieces exactly like `NormalizedString::split`.
"""
from functools import lru_cache

from hf_tagtok import _engine

BEHAVIORS = ("removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous")
TRANSFORMS = ("metaspace", "bytelevel")


@lru_cache(maxsize=None)
def _tables():
    tables = _engine.tables()
    bit = {name: 1 << i for i, name in enumerate(tables["prop_names"])}
    for alias in ("ONIG_S", "RS"):  # the generator names these only when they differ from WS
        bit.setdefault(alias, bit["WS"])
    tables["bit"] = bit
    tables["fold"] = dict(zip(tables["ci_fold_cp"], tables["ci_fold_letter"]))
    return tables


def props(char):
    t = _tables()
    cp = ord(char)
    return t["atom_props"][t["atom_stage2"][t["atom_stage1"][cp >> 8] * 256 + (cp & 0xFF)]]


def script(char):
    t = _tables()
    cp = ord(char)
    return t["script_stage2"][t["script_stage1"][cp >> 8] * 256 + (cp & 0xFF)]


def _has(char, *names):
    bit = _tables()["bit"]
    return any(props(char) & bit[name] for name in names)


# ------------------------------------------------------------------ segmenters (char patterns)

def class_segments(text, matches):
    """Each char satisfying `matches` is its own match; runs of other chars are one gap."""
    segments, gap = [], 0
    for i, char in enumerate(text):
        if matches(char):
            if gap < i:
                segments.append((gap, i, False))
            segments.append((i, i + 1, True))
            gap = i + 1
    if gap < len(text):
        segments.append((gap, len(text), False))
    return segments


def literal_segments(text, literal):
    """onig on an escaped literal: leftmost non-overlapping hits; the empty literal matches (zero-length)
    at every char boundary, which makes every char its own gap."""
    if not literal:
        segments = [(0, 0, True)]
        for i in range(len(text)):
            segments += [(i, i + 1, False), (i + 1, i + 1, True)]
        return segments
    segments, pos = [], 0
    while (hit := text.find(literal, pos)) >= 0:
        if hit > pos:
            segments.append((pos, hit, False))
        segments.append((hit, hit + len(literal), True))
        pos = hit + len(literal)
    if pos < len(text):
        segments.append((pos, len(text), False))
    return segments


def run_segments(text, kind_of):
    """Maximal runs of chars with equal kind_of(char); kind None is a gap, anything else a match."""
    segments, start = [], 0
    for i in range(1, len(text) + 1):
        if i == len(text) or kind_of(text[i]) != kind_of(text[start]):
            segments.append((start, i, kind_of(text[start]) is not None))
            start = i
    return segments


def whitespace_segments(text):
    """Rust-regex \\w+|[^\\w\\s]+ (the caller inverts and removes, so only the matches survive)."""
    return run_segments(text, lambda c: "word" if _has(c, "RW") else None if _has(c, "RS") else "other")


def scripts_segments(text):
    """UnicodeScripts: a boundary before each non-Any char whose script differs from the last non-Any one;
    what precedes the first boundary is a (removed) match: stock drops it (tokenizers PR #2382)."""
    any_script = _tables()["script_any"]
    bounds, last = [], None
    for i, char in enumerate(text):
        s = script(char)
        if s != any_script and s != last:
            bounds.append(i)
        if s != any_script:
            last = s
    if not bounds:
        return [(0, len(text), True)]
    head = [(0, bounds[0], True)] if bounds[0] else []
    return head + [(a, b, False) for a, b in zip(bounds, bounds[1:] + [len(text)])]


def fixed_length_segments(text, length):
    return [(i, min(i + length, len(text)), False) for i in range(0, len(text), length)]


# ------------------------------------------------------------------ the regex FSMs (onig semantics)

def _contraction(text, p, fold):
    """'s|'t|'re|'ve|'m|'ll|'d at p, case-insensitive (onig (?i:...) folds) when fold: end or None."""
    def letter(i):
        if i >= len(text):
            return ""
        char = text[i]
        if char.isascii():
            return char.lower() if fold else char
        return _tables()["fold"].get(ord(char), "") if fold else ""

    if p >= len(text) or text[p] != "'":
        return None
    first = letter(p + 1)
    if first in ("s", "t", "m", "d"):
        return p + 2
    if (first, letter(p + 2)) in (("r", "e"), ("v", "e"), ("l", "l")):
        return p + 3
    return None


def _run(text, p, *names):
    while p < len(text) and _has(text[p], *names):
        p += 1
    return p


def _is_other(char):  # [^\s\p{L}\p{N}]
    return not _has(char, "ONIG_S", "L", "N")


def _space(char):
    return _has(char, "ONIG_S")


def _newline(char):
    return _has(char, "CR", "LF")


def _run_other(text, p):
    while p < len(text) and _is_other(text[p]):
        p += 1
    return p


def _whitespace_tail(text, p):
    """\\s+(?!\\S)|\\s+ : a space run followed by a non-space gives its last char back."""
    q = p
    while q < len(text) and _space(text[q]):
        q += 1
    return q if q == len(text) or q - p == 1 else q - 1


def _space_then_newlines(text, p):
    """\\s*[\\r\\n]+ : backtracking ends the match after the last newline of the space run."""
    end, q = None, p
    while q < len(text) and _space(text[q]):
        q += 1
        if _newline(text[q - 1]):
            end = q
    return end


def _space_then_other(text, p):
    """ ?[^\\s\\p{L}\\p{N}]+ : the optional space is taken only if an "other" char follows."""
    s = p + 1 if text[p] == " " and p + 1 < len(text) and _is_other(text[p + 1]) else p
    return _run_other(text, s) if _is_other(text[s]) else None


def _gpt2_at(text, p):
    end = _contraction(text, p, fold=False)
    if end:
        return end
    s = p + 1 if text[p] == " " and p + 1 < len(text) and _has(text[p + 1], "L", "N") else p
    if _has(text[s], "L"):
        return _run(text, s, "L")
    if _has(text[s], "N"):
        return _run(text, s, "N")
    return _space_then_other(text, p) or _whitespace_tail(text, p)


def _cl100k_at(text, p, max_digits):
    end = _contraction(text, p, fold=True)
    if end:
        return end
    char = text[p]
    if _has(char, "L"):
        return _run(text, p, "L")
    if not _has(char, "CR", "LF", "N") and p + 1 < len(text) and _has(text[p + 1], "L"):
        return _run(text, p + 1, "L")
    if _has(char, "N"):
        q = p
        while q < len(text) and q - p < max_digits and _has(text[q], "N"):
            q += 1
        return q
    end = _space_then_other(text, p)
    if end is not None:
        end = _run(text, end, "CR", "LF")
        return end
    return _space_then_newlines(text, p) or (_whitespace_tail(text, p) if _space(char) else None)


_UPPERISH = ("LU", "LT", "LM", "LO", "M")
_LOWERISH = ("LL", "LM", "LO", "M")


def _upper_star_lower_plus(text, s):
    """[Lu Lt Lm Lo M]*[Ll Lm Lo M]+ with backtracking: if the upper run is not followed by a lower char,
    the star gives chars back until the run's last Lm/Lo/M can be the plus."""
    u = _run(text, s, *_UPPERISH)
    if u < len(text) and _has(text[u], *_LOWERISH):
        return _run(text, u, *_LOWERISH)
    shared = [k for k in range(s, u) if _has(text[k], *_LOWERISH)]
    return shared[-1] + 1 if shared else None


def _upper_plus_lower_star(text, s):
    if s >= len(text) or not _has(text[s], *_UPPERISH):
        return None
    return _run(text, _run(text, s, *_UPPERISH), *_LOWERISH)


def _o200k_at(text, p):
    char = text[p]
    prefix_ok = not _has(char, "CR", "LF", "L", "N")
    for letters in (_upper_star_lower_plus, _upper_plus_lower_star):
        for start in ((p + 1, p) if prefix_ok else (p,)):
            end = letters(text, start)
            if end:
                return _contraction(text, end, fold=True) or end
    return _cl100k_at_tail(text, p)


def _cl100k_at_tail(text, p):
    # o200k after its letter alternatives: \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    if _has(text[p], "N"):
        q = p
        while q < len(text) and q - p < 3 and _has(text[q], "N"):
            q += 1
        return q
    end = _space_then_other(text, p)
    if end is not None:
        return _run(text, end, "CR", "LF", "SLASH")
    return _space_then_newlines(text, p) or (_whitespace_tail(text, p) if _space(text[p]) else None)


_REGEX_AT = {
    "gpt2": _gpt2_at,
    "cl100k": lambda text, p: _cl100k_at(text, p, 3),
    "qwen2": lambda text, p: _cl100k_at(text, p, 1),
    "o200k": _o200k_at,
}


def regex_segments(text, kind):
    """onig find_iter: at each position the first alternative that matches wins; gaps are non-matches."""
    at = _REGEX_AT[kind]
    segments, gap, p = [], 0, 0
    while p < len(text):
        end = at(text, p)
        if end:
            if gap < p:
                segments.append((gap, p, False))
            segments.append((p, end, True))
            gap = p = end
        else:
            p += 1
    if gap < len(text):
        segments.append((gap, len(text), False))
    return segments


# ------------------------------------------------------------------ behaviors (NormalizedString::split)

def apply_behavior(segments, behavior, invert=False):
    """Pieces (start, end) of one split, empty ones dropped."""
    segments = [(a, b, m != invert) for a, b, m in segments]
    pieces, previous = [], False
    if behavior == "isolated":
        pieces = [[a, b] for a, b, _ in segments]
    elif behavior == "removed":
        pieces = [[a, b] for a, b, m in segments if not m]
    elif behavior in ("contiguous", "merged_with_previous"):
        for a, b, m in segments:
            glue = (m == previous) if behavior == "contiguous" else (m and not previous)
            if glue and pieces:
                pieces[-1][1] = b
            else:
                pieces.append([a, b])
            previous = m
    elif behavior == "merged_with_next":
        for a, b, m in reversed(segments):
            if m and not previous and pieces:
                pieces[-1][0] = a
            else:
                pieces.append([a, b])
            previous = m
        pieces.reverse()
    else:
        raise ValueError(f"unknown behavior {behavior!r}")
    return [(a, b) for a, b in pieces if b > a]


# ------------------------------------------------------------------ the executor

def _split_step(step, text):
    kind = step["kind"]
    if kind == "split_class":
        mask = sum(_tables()["bit"][name] for name in step["props"])
        return class_segments(text, lambda c: props(c) & mask), step["behavior"], step.get("invert", False)
    if kind in ("split_char", "split_literal"):
        literal = step["char"] if kind == "split_char" else step["literal"]
        return literal_segments(text, literal), step["behavior"], step.get("invert", False)
    if kind == "split_regex":
        return regex_segments(text, step["regex"]), step["behavior"], step.get("invert", False)
    if kind == "whitespace":
        return whitespace_segments(text), "removed", True
    if kind == "scripts":
        return scripts_segments(text), "removed", False
    if kind == "fixed_length":
        return fixed_length_segments(text, step.get("length", 5)), "removed", False
    raise ValueError(f"unknown step kind {kind!r}")


def _expand(steps):
    for step in steps:
        if step["kind"] == "bert":
            yield {"kind": "split_class", "props": ["WS"], "behavior": "removed"}
            yield {"kind": "split_class", "props": ["PUNC"], "behavior": "isolated"}
        else:
            yield step


class Program:
    """Same contract as `_engine.Program` (pre_tokenize_str, split_spans, pre_tokenize_offsets, render)."""

    def __init__(self, steps):
        self.steps = [dict(s) for s in steps]
        *splits, last = self.steps or [{"kind": "none"}]
        if any(s["kind"] in TRANSFORMS for s in splits):
            raise _engine.UnsupportedShape("a Metaspace/ByteLevel step must be the last step")
        self.final = last if last["kind"] in TRANSFORMS else None
        self.splits = list(_expand(splits if self.final else self.steps))
        self.render = self.final["kind"] if self.final else "none"

    def split_spans(self, text):
        """[(start, end, has_prefix)] in chars; a ByteLevel prefix-only piece has start == end."""
        text.encode("utf-8")  # lone surrogates raise UnicodeEncodeError, as in stock
        # Stock drops every empty split a pre-tokenizer returns; only the empty Sequence keeps "".
        pieces = [(0, len(text))] if text or not self.steps else []
        for step in self.splits:
            pieces = [(lo + a, lo + b) for lo, hi in pieces
                      for a, b in apply_behavior(*_split_step(step, text[lo:hi]))]
        if self.final is None:
            return [(a, b, False) for a, b in pieces]
        transform = _metaspace if self.render == "metaspace" else _bytelevel
        return [span for lo, hi in pieces for span in transform(self.final, text, lo, hi)]

    def pre_tokenize_str(self, text):
        out = []
        for start, end, prefix in self.split_spans(text):
            span = (start, start + 1) if prefix and end == start else (start, end)
            out.append((self._render(text[start:end], prefix), span))
        return out

    def pre_tokenize_offsets(self, texts):
        import numpy as np
        spans = [self.pre_tokenize_str(t) for t in texts]
        offsets = np.array([span for pieces in spans for _, span in pieces], dtype=np.int64).reshape(-1, 2)
        return offsets, np.array([len(p) for p in spans], dtype=np.int64)

    def _render(self, piece, prefix):
        if self.render == "metaspace":
            replacement = self.final.get("replacement", "\u2581")
            return (replacement if prefix else "") + piece.replace(" ", replacement)
        if self.render == "bytelevel":
            byte_map = _tables()["bytelevel_map"]
            return (chr(byte_map[0x20]) if prefix else "") + "".join(chr(byte_map[b]) for b in piece.encode())
        return piece


def _metaspace(step, text, lo, hi):
    """U+0020 and the replacement split (merged with next); the prepended replacement joins the first piece."""
    replacement = step.get("replacement", "\u2581")
    scheme = step.get("prepend_scheme", "always")
    piece = text[lo:hi]
    prefix = piece[0] not in (" ", replacement) and (scheme == "always" or (scheme == "first" and lo == 0))
    if step.get("split", True):
        spans = apply_behavior(class_segments(piece, lambda c: c in (" ", replacement)), "merged_with_next")
    else:
        spans = [(0, len(piece))]
    return [(lo + a, lo + b, prefix and i == 0) for i, (a, b) in enumerate(spans)]


def _bytelevel(step, text, lo, hi):
    """The prefix space is real text for the GPT-2 regex; a piece that is only that space is prefix-only."""
    piece = text[lo:hi]
    prefix = step.get("add_prefix_space", True) and piece[0] != " "
    if not step.get("use_regex", True):
        return [(lo, hi, prefix)]
    shifted = (" " + piece) if prefix else piece
    spans = apply_behavior(regex_segments(shifted, "gpt2"), "isolated")
    if not prefix:
        return [(lo + a, lo + b, False) for a, b in spans]
    return [(lo + max(a - 1, 0), lo + b - 1, a == 0) for a, b in spans]
