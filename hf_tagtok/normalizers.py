"""Translate a normalizer config (tokenizer.json dict) into the native normalizer spec.

A normalizer becomes a `NormalizerSpec`: steps the C normalizer (ext/pipeline/tp_normalize.c) runs in
order, each with stock's alignment rules: names for the per-char ones, ("replace", pattern, content),
("prepend", text), ("strip", left, right), ("replace_regex", compiled pattern's step fields, content),
("byte_level", the 256 chars bytes become), ("precompiled", the decoded SentencePiece charsmap) and
("replace_given", content) (a Replace regex whose matches stock's regex finds per text: hf_tagtok.gate) for the
others. Configs with no exact native twin raise
`Unsupported` naming the part, so the tokenizer reports it and runs stock instead.
"""
import base64
import binascii
from dataclasses import dataclass

from hf_tagtok import regex_compiler
from hf_tagtok.errors import Unsupported, native_module


@dataclass(frozen=True)
class NormalizerSpec:
    """What tp_normalizer_new builds (ext/pipeline/tp_normalize.h)."""
    steps: list  # step names and (name, *arguments) tuples, run in order (see the module docstring)

_SIMPLE = {"NFD": ["nfd"], "NFKD": ["nfkd"], "NFC": ["nfc"], "NFKC": ["nfkc"], "Lowercase": ["lowercase"], "StripAccents": ["strip_accents"]}


def _bert_steps(config):
    lowercase = config.get("lowercase", True)
    strip = config.get("strip_accents")
    strip = lowercase if strip is None else strip  # stock: strip_accents follows lowercase when unset
    return ((["clean_text"] if config.get("clean_text", True) else [])
            + (["chinese"] if config.get("handle_chinese_chars", True) else [])
            + (["nfd", "bert_strip"] if strip else [])
            + (["lowercase"] if lowercase else []))


def _steps(config):
    kind = config.get("type")
    if kind in _SIMPLE:
        return list(_SIMPLE[kind])
    if kind == "BertNormalizer":
        return _bert_steps(config)
    if kind == "Sequence":
        return [step for part in _leaves(config) for step in _steps(part)]
    if kind == "Replace":
        return [_replace_step(config)]
    if kind == "Prepend":
        return [("prepend", config["prepend"])] if config["prepend"] else []
    if kind == "Nmt":
        return ["nmt"]
    if kind == "ByteLevel":
        from hf_tagtok.pre_tokenizers import byte_chars

        return [("byte_level", "".join(byte_chars()))]
    if kind == "Precompiled":
        return [_precompiled_step(config)]
    if kind == "Strip":
        return [("strip", bool(config["strip_left"]), bool(config["strip_right"]))]
    raise Unsupported(f"normalizer {kind} is not native yet")


def _leaves(config):
    """A normalizer config's steps, nested Sequences flattened (stock runs them in this order)."""
    if config.get("type") == "Sequence":
        return [leaf for part in config["normalizers"] for leaf in _leaves(part)]
    return [config]


class _RefusedRegex(Unsupported):
    """A Replace step whose regex the compiler refuses (hf_tagtok.gate can run the other steps without it)."""


def gated(config):
    """(NormalizerSpec with a "replace_given" step for each Replace whose regex the compiler refuses (None: no
    normalizer), [(configs of the steps since the previous refused one, the refused Replace's config), ...], the
    configs of the steps after the last refused one) when those are the only steps this spec does not cover
    (there may be none); raises Unsupported otherwise. For hf_tagtok.gate, which finds their matches per text
    with stock's regex."""
    if config is None:
        return None, [], []
    steps, segments, since = [], [], []
    for leaf in _leaves(config):
        try:
            steps += _steps(leaf)
            since.append(leaf)
        except _RefusedRegex:
            steps.append(("replace_given", leaf["content"]))
            segments.append((since, leaf))
            since = []
    return NormalizerSpec(steps), segments, since


def _replace_step(config):
    pattern = config["pattern"]
    if "String" not in pattern:
        try:
            compiled = regex_compiler.compile_pattern(pattern["Regex"])
        except regex_compiler.UnsupportedRegex as why:
            raise _RefusedRegex(f"Replace pattern Regex({pattern['Regex']!r}) cannot be compiled: {why}; "
                              "not native") from None
        return ("replace_regex", compiled.step_fields, config["content"])
    if not pattern["String"]:
        raise Unsupported("Replace with an empty pattern is not native")
    return ("replace", pattern["String"], config["content"])


def _precompiled_step(config):
    """The charsmap decoded once here; the C side parses its trie once when the normalizer is built."""
    try:
        charsmap = base64.b64decode(config["precompiled_charsmap"], validate=True)
        blob = charsmap[4 + int.from_bytes(charsmap[:4], "little") // 4 * 4:]
        blob.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, TypeError, ValueError) as error:
        raise Unsupported(f"Precompiled charsmap stock cannot parse ({error}); not native") from None
    if not native_module().precompiled_valid(charsmap):
        raise Unsupported("Precompiled charsmap that stock cannot load or would panic on (a trie shorter than its size "
                          "field, a lookup leaving the trie, a replacement off a char boundary); not native")
    return ("precompiled", charsmap)


def spec(config):
    """None when there is no normalizer, else its NormalizerSpec; raises Unsupported."""
    if config is None:
        return None
    return NormalizerSpec(_steps(config))

