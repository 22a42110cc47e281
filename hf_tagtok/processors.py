"""Translate a post-processor config into the native layout spec, single sequences and pairs.

Stock `PostProcessor::process` first gives each sequence i (0 = A, 1 = B) type id i and records its
token range, on the main encoding and its overflow windows alike; each processor then wraps the
sequences. The `ProcessorSpec` says, per `add_special_tokens` (index 0 = off, 1 = on) and per sequence,
what the result is (a `Side`, tp_side of ext/pipeline/tp_assemble.h), and whether byte-level offsets are
trimmed (`Trim`).
"""
from dataclasses import dataclass

from hf_tagtok.errors import Unsupported


@dataclass(frozen=True)
class Side:
    """One sequence of an encoding as the post-processor lays it out (tp_side)."""
    before: tuple  # post-processor tokens before the sequence: (id, type_id, name), name indexes `names`
    after: tuple  # and after it
    main_type: int  # type id of the sequence's tokens in the main encoding
    window_type: int  # and in its overflow windows
    main_range: bool  # whether the main encoding records the sequence's token range
    window_range: bool  # whether an overflow window does


@dataclass(frozen=True)
class Trim:
    """Byte-level offset trimming as HF's process_offsets."""
    add_prefix_space: bool


@dataclass(frozen=True)
class ProcessorSpec:
    trim: Trim  # None: offsets are not trimmed
    names: list  # post-processor token strings
    single: tuple  # (Side without special tokens, Side with them)
    pair: tuple  # ((Side A, Side B) without special tokens, (Side A, Side B) with them)


def _side(index, ranged=True):
    return {"before": [], "after": [], "main_type": index, "window_type": index,
            "main_range": ranged, "window_range": ranged}


def _processed():
    """What `PostProcessor::process` leaves before the processor's own step: [add_special][sequence]."""
    return {"single": [_side(0), _side(0)], "pair": [[_side(0), _side(1)], [_side(0), _side(1)]]}


def _unprocessed():
    # No post-processor: single encodings record no range; pairs record both main ranges, no window's.
    single = _side(0, ranged=False)
    pair = [dict(_side(index), window_range=False) for index in (0, 1)]
    return {"single": [single, dict(single)], "pair": [pair, [dict(side) for side in pair]]}


class _Names:
    def __init__(self):
        self.names = []

    def token(self, token_id, type_id, name):
        self.names.append(name)
        return token_id, type_id, len(self.names) - 1


def _template(config, names, layout):
    specials = config["special_tokens"]
    for key, sides in (("single", [layout["single"][1]]), ("pair", layout["pair"][1])):
        seen, slot = [], sides[0]["before"]
        for item in config[key]:
            if "Sequence" in item:
                index = 0 if item["Sequence"]["id"] == "A" else 1
                if index != len(seen) or index >= len(sides):
                    raise Unsupported(f"template {key} {config[key]} is not '$A' / '$A ... $B' (each once)")
                seen.append(index)
                sides[index]["main_type"] = item["Sequence"]["type_id"]
                slot = sides[index]["after"]
                continue
            name = item["SpecialToken"]["id"]
            if name not in specials:  # stock loads it and raises when it encodes with special tokens
                raise Unsupported(f"template {key} names special token {name!r}, which special_tokens lacks")
            entry = specials[name]
            type_id = item["SpecialToken"]["type_id"]
            slot.extend(names.token(token_id, type_id, token) for token_id, token in zip(entry["ids"], entry["tokens"]))
        if len(seen) != len(sides):
            raise Unsupported(f"template {key} {config[key]} lacks a sequence")
    # without special tokens the template still sets each main encoding's type id
    layout["single"][0]["main_type"] = layout["single"][1]["main_type"]
    for index in (0, 1):
        layout["pair"][0][index]["main_type"] = layout["pair"][1][index]["main_type"]


def _bert(config, names, layout):
    (cls, cls_id), (sep, sep_id) = config["cls"], config["sep"]
    for side in (layout["single"][1], layout["pair"][1][0]):
        side["before"] = [names.token(cls_id, 0, cls)]
        side["after"] = [names.token(sep_id, 0, sep)]
    layout["pair"][1][1]["after"] = [names.token(sep_id, 1, sep)]


def _roberta(config, names, layout):
    (cls, cls_id), (sep, sep_id) = config["cls"], config["sep"]
    for side in (layout["single"][1], layout["pair"][1][0]):
        side["before"] = [names.token(cls_id, 0, cls)]
        side["after"] = [names.token(sep_id, 0, sep)]
    layout["pair"][1][1].update(before=[names.token(sep_id, 0, sep)], after=[names.token(sep_id, 0, sep)],
                                window_type=0)
    for sides in (layout["single"], *layout["pair"]):  # every main encoding's tokens become type 0
        for side in sides:
            side["main_type"] = 0


_ADDING = {"TemplateProcessing": _template, "BertProcessing": _bert, "RobertaProcessing": _roberta}


def _trim(config):
    # None when off.
    return Trim(bool(config.get("add_prefix_space", True))) if config.get("trim_offsets") else None


def _typed(side):
    return Side(tuple(side["before"]), tuple(side["after"]), side["main_type"], side["window_type"],
                side["main_range"], side["window_range"])


def _spec(layout, trim, names):
    return ProcessorSpec(trim, names, tuple(map(_typed, layout["single"])),
                         tuple(tuple(map(_typed, sides)) for sides in layout["pair"]))


def spec(config):
    """The ProcessorSpec of a post-processor config (see the module docstring).

    Raises Unsupported for anything the native pipeline does not cover."""
    if config is None:
        return _spec(_unprocessed(), None, [])
    children = config["processors"] if config["type"] == "Sequence" else [config]
    layout, names, trim, adding = _processed(), _Names(), None, None
    for child in children:
        kind = child["type"]
        if kind not in _ADDING and kind != "ByteLevel":
            raise Unsupported(f"post-processor {kind} is not native yet")
        if adding is not None:  # stock would then renumber the added tokens' pieces as sequences
            raise Unsupported(f"Sequence with {kind} after {adding}")
        if kind in ("ByteLevel", "RobertaProcessing") and _trim(child) is not None:
            if trim is not None:
                raise Unsupported("Sequence trimming offsets twice")
            trim = _trim(child)
        if kind in _ADDING:
            _ADDING[kind](child, names, layout)
            adding = kind
    return _spec(layout, trim, names.names)
