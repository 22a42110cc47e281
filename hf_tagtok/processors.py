"""Translate a post-processor config into the native single-sequence spec.

The native spec for one sequence is: special tokens before it, its type id, special tokens after it
(each special token as (id, type_id, token)). Pairs always run on stock (the report says so).
"""
from hf_tagtok.models import Unsupported


def _template(config):
    specials = config["special_tokens"]
    before, after, sequence_type = [], [], None
    for item in config["single"]:
        if "Sequence" in item:
            if sequence_type is not None or item["Sequence"]["id"] != "A":
                raise Unsupported("template with a sequence other than one $A")
            sequence_type = item["Sequence"]["type_id"]
            continue
        entry = specials[item["SpecialToken"]["id"]]
        type_id = item["SpecialToken"]["type_id"]
        (after if sequence_type is not None else before).extend(
            (token_id, type_id, token) for token_id, token in zip(entry["ids"], entry["tokens"]))
    if sequence_type is None:
        raise Unsupported("template without $A")
    return {"before": before, "after": after, "type_id": sequence_type, "trim": None}


def _trim(config):
    # Byte-level offset trimming as HF's process_offsets; None when off.
    return {"add_prefix_space": bool(config.get("add_prefix_space", True))} if config.get("trim_offsets") else None


def spec(config):
    """{"before": [(id, type_id, token)], "after": [...], "type_id": int, "trim": None | {...}}.

    Raises Unsupported for anything the native pipeline does not cover."""
    if config is None:
        return {"before": [], "after": [], "type_id": 0, "trim": None}
    kind = config["type"]
    if kind == "TemplateProcessing":
        return _template(config)
    if kind == "BertProcessing":
        (cls, cls_id), (sep, sep_id) = config["cls"], config["sep"]
        return {"before": [(cls_id, 0, cls)], "after": [(sep_id, 0, sep)], "type_id": 0, "trim": None}
    if kind == "RobertaProcessing":
        (cls, cls_id), (sep, sep_id) = config["cls"], config["sep"]
        return {"before": [(cls_id, 0, cls)], "after": [(sep_id, 0, sep)], "type_id": 0, "trim": _trim(config)}
    if kind == "ByteLevel":
        return {"before": [], "after": [], "type_id": 0, "trim": _trim(config)}
    if kind == "Sequence":
        combined = {"before": [], "after": [], "type_id": 0, "trim": None}
        for child in config["processors"]:
            part = spec(child)
            if part["trim"] is not None:
                if combined["trim"] is not None or combined["before"] or combined["after"]:
                    raise Unsupported("Sequence trimming offsets twice or after adding tokens")
                combined["trim"] = part["trim"]
            if part["before"] or part["after"] or part["type_id"]:
                if combined["before"] or combined["after"]:
                    raise Unsupported("Sequence with two token-adding processors")
                combined.update(before=part["before"], after=part["after"], type_id=part["type_id"])
        return combined
    raise Unsupported(f"post-processor {kind} is not native yet")
