"""Byte-exact twins of `tokenizers.pre_tokenizers`, run by the tag-classify engine.

Every class mirrors the stock class of the same name: constructor arguments, defaults, validation errors
and `pre_tokenize_str` output are those of `tokenizers` 0.23.3. Each object translates its configuration
into engine-neutral steps (see `hf_tagtok._engine.Program`); this module is the only place that knows
Hugging Face names, JSON layouts and regex pattern texts.

    >>> from hf_tagtok import pre_tokenizers as pt
    >>> pt.Whitespace().pre_tokenize_str("Hello, world!")
    [('Hello', (0, 5)), (',', (5, 6)), ('world', (7, 12)), ('!', (12, 13))]

`pre_tokenize_offsets(texts)` is the batch API (numpy char offsets, GIL released); `to_hf()` wraps the
object with `tokenizers.pre_tokenizers.PreTokenizer.custom` so it runs inside any stock `Tokenizer`.
"""
import functools
import json
import operator
from dataclasses import dataclass

import numpy as np
from tokenizers import PreTokenizedString, Regex
from tokenizers import normalizers as _hf_normalizers
from tokenizers import pre_tokenizers as _hf

from . import regex_compiler
from .errors import Unsupported

__all__ = [
    "PreTokenizer", "Whitespace", "WhitespaceSplit", "BertPreTokenizer", "Punctuation", "Digits",
    "Metaspace", "CharDelimiterSplit", "Split", "ByteLevel", "UnicodeScripts", "FixedLength", "Sequence",
    "from_hf", "engine_steps", "UnsupportedPattern", "UnsupportedPreTokenizer", "RECOGNISED_PATTERNS",
    "byte_chars", "char_bytes",
]

BEHAVIORS = ("removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous")
_BEHAVIOR_JSON = dict(zip(BEHAVIORS, ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")))
_BEHAVIOR_FROM_JSON = {value: key for key, value in _BEHAVIOR_JSON.items()}
PREPEND_SCHEMES = ("first", "never", "always")
_U32_MAX = 0xFFFFFFFF
_U64_MAX = 0xFFFFFFFFFFFFFFFF

# The exact pattern texts real tokenizers ship (whitespace-sensitive). Only these run as FSMs; any other
# text is a different regex as far as we can prove, so it raises UnsupportedPattern.
RECOGNISED_PATTERNS = {
    # tokenizers' ByteLevel(use_regex=True) and OpenAI GPT-2
    "gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    # Llama-3 tokenizer.json and transformers' TikTokenConverter default (cl100k_base)
    "cl100k": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    # transformers' Qwen2 tokenizer/converter (single \p{N})
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    # transformers' _GPT4O_SPLIT == tiktoken o200k_base
    "o200k": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}
_PATTERN_KINDS = {text: kind for kind, text in RECOGNISED_PATTERNS.items()}
_TRANSFORMS = ("metaspace", "bytelevel")


class UnsupportedPattern(ValueError):
    """A `Split` regex the compiler cannot express (the message names the construct); pass
    allow_slow_regex=True to run it via stock."""


class UnsupportedPreTokenizer(ValueError):
    """A stock pre-tokenizer (or JSON dict) with no hf_tagtok twin."""


# ---------------------------------------------------------------- argument validation (stock messages)

def _require(value, kind, name):
    if not isinstance(value, kind):
        what = "'None'" if value is None else f"'{type(value).__name__}' object"  # pyo3's wording
        raise TypeError(f"{what} is not an instance of '{name}'")
    return value


def _text(value):
    return _require(value, str, "str")


def _behavior(value):
    if _require(value, str, "str") not in BEHAVIORS:
        raise ValueError("Wrong value for SplitDelimiterBehavior, expected one of: `" + ", ".join(BEHAVIORS) + "`")
    return value


def _one_char(value):
    if len(_require(value, str, "str")) != 1:
        raise ValueError("expected a string of length 1")
    return value


def _engine():
    from hf_tagtok import _engine  # imported lazily: constructing and serializing never needs the extension

    return _engine


# ---------------------------------------------------------------- execution

class _Stage:
    """One native program plus what `pre_tokenize` needs to rebuild its pieces as NormalizedStrings."""

    def __init__(self, steps):
        engine = _engine()
        self.program = engine.Program(steps)
        final = steps[-1]
        self.prefix = {"metaspace": final.get("replacement"), "bytelevel": " "}.get(final["kind"])
        # Metaspace "first" looks at the split's offset in the ORIGINAL string, which a NormalizedString
        # handed to pre_tokenize does not carry: run a "never" twin on splits that do not start at 0.
        first = final["kind"] == "metaspace" and final["prepend_scheme"] == "first"
        self.inner = engine.Program([*steps[:-1], {**final, "prepend_scheme": "never"}]) if first else None

    def apply(self, pretok):
        starts = None
        if self.inner is not None:
            starts = [offsets[0] for _, offsets, _ in pretok.get_splits(offset_referential="original", offset_type="char")]
        pretok.split(lambda index, ns: self._slice(ns, self.program if starts is None or starts[index] == 0 else self.inner))

    def _slice(self, ns, program):
        pieces, text = [], ns.normalized
        for start, end, has_prefix in program.split_spans(text):
            if has_prefix and start == end:  # prefix-only piece: it takes the alignment of the char it precedes
                piece = ns[start : start + 1]
                piece.prepend(self.prefix)
                piece = piece[0:1]
            else:
                # the whole split is kept as is: also covers "" (slicing an empty NormalizedString gives None)
                piece = ns if (start, end) == (0, len(text)) else ns[start:end]
                if program.render == "metaspace":
                    piece.replace(" ", self.prefix)
                if has_prefix:
                    piece.prepend(self.prefix)
            if program.render == "bytelevel":
                _render_bytes(piece)
            pieces.append(piece)
        return pieces


def _render_bytes(piece):
    """ByteLevel-render a NormalizedString in place, every byte char aligned to the char it came from.

    NormalizedString offers only 1:1 `map` and `replace`; rendered chars can themselves be chars that need
    rendering, so each distinct char first maps to a marker code point absent from the piece, and each
    marker is then replaced by the rendering (no replacement output is ever a marker)."""
    text = piece.normalized
    present = set(text)
    todo = sorted(char for char in present if _byte_render(char) != char)
    if not todo:
        return
    free = (chr(cp) for cp in range(0x10FFFF, 0x143, -1) if not 0xD800 <= cp < 0xE000 and chr(cp) not in present)
    markers = dict(zip(todo, free))
    if len(markers) < len(todo):
        raise ValueError("piece uses too many distinct code points to be byte-rendered in place")
    piece.map(lambda char: markers.get(char, char))
    for char, marker in markers.items():
        piece.replace(marker, _byte_render(char))


@functools.lru_cache(maxsize=1 << 14)
def _byte_render(char):
    alphabet = byte_chars()
    return "".join(alphabet[byte] for byte in char.encode("utf-8"))


@functools.cache
def byte_chars():
    """The char each byte renders as at byte level, indexed by byte: the generated table (tables/)."""
    return tuple(ByteLevel.alphabet())


@functools.cache
def char_bytes():
    """The inverse of `byte_chars`: rendered char -> byte."""
    return {char: byte for byte, char in enumerate(byte_chars())}


def _plan(steps):
    """Stages that together run `steps` with HF Sequence semantics: one native program when the executor
    accepts the whole shape, else runs of splitting steps each closed by a transform, else single steps;
    stock objects (the opt-in slow regex) are stages of their own."""
    if not steps:  # the identity: leave splits untouched (splitting "" would drop it; stock keeps it)
        return []
    engine = _engine()
    # Splits after ByteLevel can cut inside a char, which a NormalizedString slice by chars cannot
    # express: such a program runs whole only where its pieces are read as offsets (_whole_program).
    if all(step["kind"] != "stock" for step in steps) and not _splits_after_transform(steps):
        try:
            return [_Stage(steps)]
        except engine.UnsupportedShape:
            pass
    stages, run = [], []

    def add(run_steps):
        try:
            stages.append(_Stage(run_steps))
        except engine.UnsupportedShape:
            stages.extend(_Stage([step]) for step in run_steps)

    def flush():
        if run:
            # Metaspace "first" compares ORIGINAL offsets with 0; after an earlier stage prepended a char,
            # several pieces of one split can start at original 0, which one program cannot see.
            if len(run) > 1 and run[-1]["kind"] == "metaspace" and run[-1]["prepend_scheme"] == "first":
                add(run[:-1])
                add(run[-1:])
            else:
                add(list(run))
            run.clear()

    for step in steps:
        if step["kind"] == "stock":
            flush()
            stages.append(step["stock"])
        else:
            run.append(step)
            if step["kind"] in _TRANSFORMS:
                flush()
    flush()
    return stages


def _splits_after_transform(steps):
    kinds = [step["kind"] for step in steps]
    return any(kind in _TRANSFORMS for kind in kinds[:-1])


def _whole_program(steps):
    """One native program running all of `steps`, or None (a stock step, or a shape the engine refuses)."""
    if not steps or any(step["kind"] == "stock" for step in steps):
        return None
    try:
        return _engine().Program(steps)
    except _engine().UnsupportedShape:
        return None


def _run_stages(stages, pretok):
    for stage in stages:
        if isinstance(stage, _Stage):
            stage.apply(pretok)
        else:
            stage.pre_tokenize(pretok)


# ---------------------------------------------------------------- the base class

class PreTokenizer:
    """Base of every twin. Subclasses define `_steps`, `to_json_dict`, `stock` and `_from_json`."""

    _stages = None
    _program = False  # not yet planned

    def pre_tokenize_str(self, text):
        """Split `text` exactly like the stock object: a list of (piece, (start_char, end_char))."""
        _text(text)
        program = self._whole()
        if program is not None:
            try:
                return program.pre_tokenize_str(text)
            except _engine().RegexGaveUp:  # stock decides what such a text gives (or panics, as onig gives up)
                return self.stock().pre_tokenize_str(text)
        stages = self._plan()
        pretok = PreTokenizedString(text)
        _run_stages(stages, pretok)
        return [(piece, offsets) for piece, offsets, _ in pretok.get_splits(offset_referential="original", offset_type="char")]

    def pre_tokenize_offsets(self, texts):
        """Batch API: (offsets int64 (n_pieces, 2), counts int64 (n_texts,)) of char offsets, no per-piece objects."""
        if isinstance(texts, str):  # iterating a str would silently pre-tokenize each char as a text
            raise TypeError("pre_tokenize_offsets expects a list of str, not a str")
        texts = texts if isinstance(texts, list) else list(texts)  # read once: a generator is not read again
        program, split = self._whole(), self.pre_tokenize_str
        if program is not None:
            try:
                return program.pre_tokenize_offsets(texts)
            except _engine().RegexGaveUp:  # stock decides the batch, as pre_tokenize_str decides such a text
                split = self.stock().pre_tokenize_str
        results = [split(text) for text in texts]
        counts = np.fromiter((len(pieces) for pieces in results), dtype=np.int64, count=len(results))
        offsets = np.array([span for pieces in results for _, span in pieces], dtype=np.int64).reshape(-1, 2)
        return offsets, counts

    def pre_tokenize(self, pretok):
        """Split a stock `PreTokenizedString` in place (what `PreTokenizer.custom(self)` calls)."""
        _run_stages(self._plan(), pretok)

    def to_hf(self):
        """This object wrapped as a stock component (usable in a stock Tokenizer or Sequence; not serializable)."""
        return _hf.PreTokenizer.custom(self)

    def stock(self):
        """The equivalent stock `tokenizers` pre-tokenizer."""
        return self._stock()

    @classmethod
    def from_hf(cls, obj, *, allow_slow_regex=False):
        """The twin of a stock pre-tokenizer or of its JSON dict (`tokenizer.json`'s "pre_tokenizer")."""
        if isinstance(obj, _hf.PreTokenizer):
            obj = json.loads(obj.__getstate__())
        if not isinstance(obj, dict):
            raise TypeError(f"from_hf expects a tokenizers PreTokenizer or its JSON dict, got {type(obj).__name__}")
        twin = _from_json(obj, allow_slow_regex)
        if not isinstance(twin, cls):
            raise TypeError(f"{cls.__name__}.from_hf got a {type(twin).__name__} configuration")
        return twin

    def _plan(self):
        if self._stages is None:
            self._stages = _plan(self._steps())
        return self._stages

    def _whole(self):
        if self._program is False:
            self._program = _whole_program(self._steps())
        return self._program

    def _options(self):
        return {}

    def __reduce__(self):
        return (_restore, (self.to_json_dict(), self._options()))

    def __eq__(self, other):
        return type(self) is type(other) and (self.to_json_dict(), self._options()) == (other.to_json_dict(), other._options())

    def __hash__(self):
        return hash(json.dumps(self.to_json_dict(), sort_keys=True))

    def __repr__(self):
        fields = {key: value for key, value in self.to_json_dict().items() if key != "type"}
        return f"{type(self).__name__}({', '.join(f'{key}={value!r}' for key, value in fields.items())})"


def _restore(config, options):
    return _from_json(config, options.get("allow_slow_regex", False))


# ---------------------------------------------------------------- the twins

class _Plain(PreTokenizer):
    """Pre-tokenizers without arguments: one fixed step list and a bare {"type": name} config."""

    _STEPS = ()

    def _steps(self):
        return [dict(step) for step in self._STEPS]

    def to_json_dict(self):
        return {"type": type(self).__name__}

    def _stock(self):
        return getattr(_hf, type(self).__name__)()

    @classmethod
    def _from_json(cls, config, allow_slow_regex):
        return cls()


class Whitespace(_Plain):
    """`\\w+|[^\\w\\s]+` with the Rust-regex classes (ZWJ and Other_Alphabetic symbols are word chars)."""

    _STEPS = ({"kind": "whitespace"},)


class WhitespaceSplit(_Plain):
    """Split on the 25 White_Space chars, which are removed."""

    _STEPS = ({"kind": "split_class", "props": ["WS"], "behavior": "removed", "invert": False},)


class BertPreTokenizer(_Plain):
    """Whitespace removed, then Unicode-8.0 punctuation (plus ASCII punctuation) isolated."""

    _STEPS = ({"kind": "bert"},)


class UnicodeScripts(_Plain):
    """Split where the (Unicode 9.0, kana-as-Han) script changes; drops leading Any chars like stock."""

    _STEPS = ({"kind": "scripts"},)


class Punctuation(PreTokenizer):
    def __init__(self, behavior="isolated"):
        self._behavior = _behavior(behavior)

    behavior = property(lambda self: self._behavior)

    def _steps(self):
        return [{"kind": "split_class", "props": ["PUNC"], "behavior": self._behavior, "invert": False}]

    def to_json_dict(self):
        return {"type": "Punctuation", "behavior": _BEHAVIOR_JSON[self._behavior]}

    def _stock(self):
        return _hf.Punctuation(self._behavior)

    @classmethod
    def _from_json(cls, config, allow_slow_regex):
        return cls(_json_behavior(config.get("behavior", "Isolated")))


class Digits(PreTokenizer):
    def __init__(self, individual_digits=False):
        self._individual_digits = _require(individual_digits, bool, "bool")

    individual_digits = property(lambda self: self._individual_digits)

    def _steps(self):
        behavior = "isolated" if self._individual_digits else "contiguous"
        return [{"kind": "split_class", "props": ["NUMERIC"], "behavior": behavior, "invert": False}]

    def to_json_dict(self):
        return {"type": "Digits", "individual_digits": self._individual_digits}

    def _stock(self):
        return _hf.Digits(self._individual_digits)

    @classmethod
    def _from_json(cls, config, allow_slow_regex):
        return cls(config.get("individual_digits", False))


class Metaspace(PreTokenizer):
    def __init__(self, replacement="\u2581", prepend_scheme="always", split=True):
        self._replacement = _one_char(replacement)
        if _require(prepend_scheme, str, "str") not in PREPEND_SCHEMES:
            raise ValueError(f"{prepend_scheme} is an unknown variant, should be one of {list(PREPEND_SCHEMES)}")
        self._prepend_scheme = prepend_scheme
        self._split = _require(split, bool, "bool")

    replacement = property(lambda self: self._replacement)
    prepend_scheme = property(lambda self: self._prepend_scheme)
    split = property(lambda self: self._split)

    def _steps(self):
        return [{"kind": "metaspace", "replacement": self._replacement, "prepend_scheme": self._prepend_scheme, "split": self._split}]

    def to_json_dict(self):
        return {"type": "Metaspace", "replacement": self._replacement, "prepend_scheme": self._prepend_scheme, "split": self._split}

    def _stock(self):
        return _hf.Metaspace(self._replacement, self._prepend_scheme, self._split)

    @classmethod
    def _from_json(cls, config, allow_slow_regex):
        scheme = config.get("prepend_scheme")
        legacy = config.get("add_prefix_space")
        if scheme is None:  # legacy JSON: add_prefix_space true means "always"; false needs an explicit scheme
            if legacy is False:
                raise ValueError("add_prefix_space does not match declared prepend_scheme")
            scheme = "always"
        elif legacy is not None and legacy != (scheme != "never"):
            raise ValueError("add_prefix_space does not match declared prepend_scheme")
        return cls(config.get("replacement", "\u2581"), scheme, config.get("split", True))


class CharDelimiterSplit(PreTokenizer):
    def __init__(self, delimiter):
        self._delimiter = _one_char(delimiter)

    delimiter = property(lambda self: self._delimiter)

    def _steps(self):
        return [{"kind": "split_char", "char": self._delimiter, "behavior": "removed", "invert": False}]

    def to_json_dict(self):
        return {"type": "CharDelimiterSplit", "delimiter": self._delimiter}

    def _stock(self):
        return _hf.CharDelimiterSplit(self._delimiter)

    @classmethod
    def _from_json(cls, config, allow_slow_regex):
        return cls(config["delimiter"])


class Split(PreTokenizer):
    """Split on a literal string or a `tokenizers.Regex`.

    A regex whose text is exactly one of RECOGNISED_PATTERNS runs as its hand-written FSM, except under the
    Isolated behavior (not inverted), where its compiled DFA cuts the pieces in one pass; any other
    regex is compiled (hf_tagtok.regex_compiler) into a program the engine's regex VM runs with onig's
    semantics. A regex the compiler cannot express raises UnsupportedPattern naming the construct,
    unless `allow_slow_regex=True`, which runs it through stock `tokenizers` (Oniguruma) itself.
    """

    def __init__(self, pattern, behavior, invert=False, *, allow_slow_regex=False):
        if isinstance(pattern, Regex):
            stock = _hf.Split(pattern, "isolated")  # the only public way to read a Regex's text back
            self._pattern_type, self._pattern = "Regex", json.loads(stock.__getstate__())["pattern"]["Regex"]
        elif isinstance(pattern, str):
            self._pattern_type, self._pattern = "String", pattern
        else:
            raise TypeError("failed to extract enum PyPattern ('str | tokenizers.Regex'): "
                            f"'{type(pattern).__name__}' object is neither a 'str' nor a 'tokenizers.Regex'")
        self._behavior = _behavior(behavior)
        self._invert = _require(invert, bool, "bool")
        self._allow_slow_regex = _require(allow_slow_regex, bool, "bool")
        self._regex_kind = _PATTERN_KINDS.get(self._pattern) if self._pattern_type == "Regex" else None
        self._compiled = None
        if self._pattern_type == "Regex" and self._regex_kind is None:
            try:
                self._compiled = regex_compiler.compile_pattern(self._pattern)
            except regex_compiler.UnsupportedRegex as why:
                if not allow_slow_regex:
                    raise UnsupportedPattern(
                        f"Split pattern Regex({self._pattern!r}) cannot be compiled: {why}; "
                        "pass allow_slow_regex=True to run it through stock tokenizers") from None

    behavior = property(lambda self: self._behavior)
    invert = property(lambda self: self._invert)
    pattern = property(lambda self: Regex(self._pattern) if self._pattern_type == "Regex" else self._pattern)
    regex_kind = property(lambda self: self._regex_kind, doc="gpt2/cl100k/qwen2/o200k, or None")

    def _steps(self):
        common = {"behavior": self._behavior, "invert": self._invert}
        if self._pattern_type == "String":
            if len(self._pattern) == 1:
                return [{"kind": "split_char", "char": self._pattern, **common}]
            return [{"kind": "split_literal", "literal": self._pattern, **common}]
        if self._regex_kind is not None and (self._behavior != "isolated" or self._invert):
            return [{"kind": "split_regex", "regex": self._regex_kind, **common}]
        if self._regex_kind is not None:  # the DFA's one-pass Isolated cut is faster than the FSM and its classify pass
            return [{"kind": "split_compiled", **regex_compiler.compile_pattern(self._pattern).step_fields, **common}]
        if self._compiled is not None:
            return [{"kind": "split_compiled", **self._compiled.step_fields, **common}]
        return [{"kind": "stock", "stock": self._stock()}]

    def _isolated_class_run(self):
        """This split's compiled pattern when it isolates runs of one char set (see Sequence._steps), else None."""
        if self._compiled is None or self._behavior != "isolated" or self._invert:
            return None
        return self._compiled if self._compiled.class_run is not None else None

    def to_json_dict(self):
        return {"type": "Split", "pattern": {self._pattern_type: self._pattern},
                "behavior": _BEHAVIOR_JSON[self._behavior], "invert": self._invert}

    def _stock(self):
        return _hf.Split(self.pattern, self._behavior, self._invert)

    def _options(self):
        return {"allow_slow_regex": self._allow_slow_regex}

    @classmethod
    def _from_json(cls, config, allow_slow_regex):
        (pattern_type, text), = config["pattern"].items()
        if pattern_type not in ("String", "Regex"):
            raise UnsupportedPreTokenizer(f"Split pattern type {pattern_type!r} is not supported")
        pattern = Regex(text) if pattern_type == "Regex" else text
        if "invert" not in config:
            raise ValueError("Split JSON needs 'invert' (stock: missing field `invert`)")
        return cls(pattern, _json_behavior(config["behavior"]), config["invert"], allow_slow_regex=allow_slow_regex)


class ByteLevel(PreTokenizer):
    """Optional prefix space, optional GPT-2 regex split, then every UTF-8 byte rendered as one char.

    `trim_offsets` only matters to the post-processor; it is kept for the config round-trip.
    """

    def __init__(self, add_prefix_space=True, trim_offsets=True, use_regex=True):
        self._add_prefix_space = _require(add_prefix_space, bool, "bool")
        self._trim_offsets = _require(trim_offsets, bool, "bool")
        self._use_regex = _require(use_regex, bool, "bool")

    add_prefix_space = property(lambda self: self._add_prefix_space)
    trim_offsets = property(lambda self: self._trim_offsets)
    use_regex = property(lambda self: self._use_regex)

    @staticmethod
    def alphabet():
        """The 256 chars bytes render as, ordered by byte value (stock returns them in hash order)."""
        return [chr(cp) for cp in _engine().tables()["bytelevel_map"]]

    def _steps(self):
        step = {"kind": "bytelevel", "add_prefix_space": self._add_prefix_space, "use_regex": self._use_regex}
        if self._use_regex:  # the GPT-2 regex compiled: the DFA's one-pass cut (see Split._steps)
            step["regex"] = regex_compiler.compile_pattern(RECOGNISED_PATTERNS["gpt2"]).step_fields
        return [step]

    def to_json_dict(self):
        return {"type": "ByteLevel", "add_prefix_space": self._add_prefix_space,
                "trim_offsets": self._trim_offsets, "use_regex": self._use_regex}

    def _stock(self):
        return _hf.ByteLevel(self._add_prefix_space, self._trim_offsets, self._use_regex)

    @classmethod
    def _from_json(cls, config, allow_slow_regex):
        return cls(config.get("add_prefix_space", True), config.get("trim_offsets", True), config.get("use_regex", True))


class FixedLength(PreTokenizer):
    """Chunks of `length` Unicode scalars. `FixedLength(0)` raises ValueError (stock panics with a
    BaseException there)."""

    def __init__(self, length=5):
        length = operator.index(length)
        if length < 0:
            raise OverflowError("can't convert negative int to unsigned")
        if length > _U64_MAX:
            raise OverflowError("int too big to convert")
        if length == 0:
            raise ValueError("FixedLength length must be positive (stock tokenizers panics: chunk size must be non-zero)")
        self._length = length

    length = property(lambda self: self._length)

    def _steps(self):
        # a chunk longer than any string the engine accepts is the whole string
        return [{"kind": "fixed_length", "length": min(self._length, _U32_MAX)}]

    def to_json_dict(self):
        return {"type": "FixedLength", "length": self._length}

    def _stock(self):
        return _hf.FixedLength(self._length)

    @classmethod
    def _from_json(cls, config, allow_slow_regex):
        return cls(config.get("length", 5))


def _within_runs(runs, item):
    """One compiled step for Isolated class-run splits (`runs`, see Sequence._steps) followed by the Isolated
    regex Split `item`: its pattern run on each segment they leave, in one pass over the text (the DFA's cut
    loop meets each segment's end as a char of one of the runs' sets); None when that does not apply."""
    if (not 0 < len(runs) <= _engine().MAX_SEGMENT_SETS or any(run.run_chunk is None for run in runs)
            or not isinstance(item, Split) or item._pattern_type != "Regex" or item._behavior != "isolated"
            or item._invert):
        return None
    try:
        compiled = regex_compiler.compile_within_runs(item._pattern, tuple(runs))
    except regex_compiler.UnsupportedRegex:
        return None
    return {"kind": "split_compiled", **compiled.step_fields, "behavior": "isolated", "invert": False}


class Sequence(PreTokenizer):
    def __init__(self, pretokenizers):
        for item in _require(pretokenizers, list, "list"):
            _require(item, PreTokenizer, "PreTokenizer")
        self._pretokenizers = tuple(pretokenizers)

    def __getitem__(self, index):
        return self._pretokenizers[index]

    def __len__(self):
        return len(self._pretokenizers)

    def __repr__(self):
        return f"Sequence([{', '.join(map(repr, self._pretokenizers))}])"

    def _steps(self):
        # Consecutive Isolated splits by runs of pairwise disjoint char sets (DeepSeek-V3's digits, then its
        # CJK runs) cut the text as one Isolated split by their alternation: one pass instead of one per split.
        # Followed by an Isolated regex Split, they and it are one step: that regex run within their segments.
        steps, run = [], []  # run: the current such splits, as (item, its CompiledRegex)

        def flush():
            fused = None
            if len(run) > 1:
                try:
                    fused = regex_compiler.compile_alternatives(tuple(compiled.pattern for _, compiled in run))
                except regex_compiler.UnsupportedRegex:  # e.g. too big together: each runs on its own
                    pass
            if fused is not None:
                steps.append({"kind": "split_compiled", **fused.step_fields, "behavior": "isolated", "invert": False})
            else:
                steps.extend(step for item, _ in run for step in item._steps())
            run.clear()

        for item in self._pretokenizers:
            compiled = item._isolated_class_run() if isinstance(item, Split) else None
            if compiled is None:
                within = _within_runs([c for _, c in run], item)
                if within is not None:
                    steps.append(within)
                    run.clear()
                    continue
                flush()
                steps.extend(item._steps())
                continue
            if not regex_compiler.disjoint_class_runs((*(c for _, c in run), compiled)):
                flush()
            run.append((item, compiled))
        flush()
        return steps

    def to_json_dict(self):
        return {"type": "Sequence", "pretokenizers": [item.to_json_dict() for item in self._pretokenizers]}

    def _stock(self):
        return _hf.Sequence([item.stock() for item in self._pretokenizers])

    def _options(self):
        return {"allow_slow_regex": any(item._options().get("allow_slow_regex") for item in self._pretokenizers)}

    @classmethod
    def _from_json(cls, config, allow_slow_regex):
        return cls([_from_json(item, allow_slow_regex) for item in config["pretokenizers"]])


# ---------------------------------------------------------------- JSON dispatch

_CLASSES = {cls.__name__: cls for cls in (
    Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation, Digits, Metaspace, CharDelimiterSplit,
    Split, ByteLevel, UnicodeScripts, FixedLength, Sequence)}


def _json_behavior(value):
    if value not in _BEHAVIOR_FROM_JSON:
        raise ValueError(f"unknown behavior {value!r}, expected one of {list(_BEHAVIOR_FROM_JSON)}")
    return _BEHAVIOR_FROM_JSON[value]


def _from_json(config, allow_slow_regex=False):
    kind = config.get("type")
    if kind not in _CLASSES:
        raise UnsupportedPreTokenizer(f"pre-tokenizer type {kind!r} has no hf_tagtok twin (supported: {', '.join(_CLASSES)})")
    try:
        return _CLASSES[kind]._from_json(config, allow_slow_regex)
    except KeyError as missing:
        raise UnsupportedPreTokenizer(f"{kind} config is missing field {missing}") from None


from_hf = PreTokenizer.from_hf


def engine_steps(config):
    """The engine program steps of a pre-tokenizer JSON dict (None: no pre-tokenizer, no steps).

    For the native pipeline, which builds its own programs: raises UnsupportedPattern /
    UnsupportedPreTokenizer (ValueErrors naming the part) where no native steps exist."""
    if config is None:
        return []
    steps = _from_json(config)._steps()
    _engine().Program(steps)  # one program or none: e.g. a Metaspace before further splits raises UnsupportedShape
    return steps


def keeps_every_byte(config):
    """Whether a pre-tokenizer JSON dict only cuts its text: its pieces, in order, are the text (no piece
    removed, nothing prepended, every byte its own). Byte-level rendering counts as keeping bytes."""
    kind = config.get("type")
    if kind == "Sequence":
        return all(map(keeps_every_byte, config["pretokenizers"]))
    if kind in ("Split", "Punctuation"):
        return config.get("behavior") != "Removed"
    if kind == "ByteLevel":
        return not config.get("add_prefix_space")
    return kind in ("Digits", "UnicodeScripts", "FixedLength")


@dataclass(frozen=True)
class PreTokenizerSpec:
    """The native pipeline's pre-tokenizer: one engine program (hf_tagtok._engine.Program)."""
    steps: list  # engine program steps, as engine_steps returns them ([]: no pre-tokenizer)


def spec(config):
    """The PreTokenizerSpec of a pre-tokenizer JSON dict (None: no pre-tokenizer); raises Unsupported."""
    try:
        return PreTokenizerSpec(engine_steps(config))
    except ValueError as error:
        raise Unsupported(f"pre-tokenizer: {error}")


def gated(config):
    """(PreTokenizerSpec in which a refused Split splits at the matches given with each text, that Split's config)
    when the pre-tokenizer is, or holds, one Split whose regex the compiler refuses and the rest is native;
    raises Unsupported otherwise. For hf_tagtok.gate, which finds its matches per text with stock's regex. A
    Split after other steps takes them only when its regex looks at no context (the engine then checks that
    no match crosses a piece the steps before it cut)."""
    items = config.get("pretokenizers", []) if config is not None and config.get("type") == "Sequence" else [config]
    try:
        at, split = next(((k, split) for k, split in enumerate(map(_refused_split, items)) if split), (0, None))
        if split is None:
            raise Unsupported("pre-tokenizer: no Split with a regex the compiler refuses")
        if at and not regex_compiler.looks_at_no_context(split._pattern):
            raise Unsupported("pre-tokenizer: a refused Split after other steps whose regex looks at the text "
                              "around its matches (anchors, boundaries, lookarounds, atomic groups)")
        if _matches_empty_at_end(split._pattern):
            raise Unsupported("pre-tokenizer: a refused Split whose regex matches empty (it cuts at every char, and "
                              "finding those matches with stock costs more than stock's own pass)")
        given = {"kind": "split_given", "behavior": split.behavior, "invert": split.invert}
        steps = [*engine_steps({"type": "Sequence", "pretokenizers": items[:at]}), given,
                 *engine_steps({"type": "Sequence", "pretokenizers": items[at + 1:]})]
        _engine().Program(steps)
    except ValueError as error:
        raise Unsupported(f"pre-tokenizer: {error}")
    return PreTokenizerSpec(steps), items[at]


def _matches_empty_at_end(pattern):
    """Whether stock's regex matches empty at the end of a text, after a char: the probe wraps the pattern so that
    only such a match counts (the lookbehind keeps a match of that char from hiding the empty one after it). A
    pattern the wrapping breaks (a `(?x)` comment running to its end) may. (Whether any match can be empty, from the
    pattern's shape: regex_compiler.may_match_empty, which picks how hf_tagtok.gate finds the matches.)"""
    try:
        probe = _hf_normalizers.Replace(Regex(f"(?<=\ufdd0)(?:{pattern})\\z"), "\ufdd1")
    except Exception:  # stock's regex error
        return True
    return probe.normalize_str("\ufdd0") != "\ufdd0"


def _refused_split(config):
    """The Split a pre-tokenizer JSON dict is when the compiler refuses its regex, else None."""
    if not config or config.get("type") != "Split":
        return None
    split = _from_json(config, allow_slow_regex=True)
    refused = split._pattern_type == "Regex" and not split._regex_kind and not split._compiled
    return split if refused else None
