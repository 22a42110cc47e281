"""`hf-tagtok inspect DIR`: what a tokenizer's vocabulary is made of.

Reports the vocabulary size, identity, where the 256 single-byte tokens and the special tokens sit,
and how numbers tokenize: pure-digit pieces by digit count and pieces mixing digits with other
bytes (such as a space plus a digit). Digits are ASCII 0-9; byte-level pieces are read as the bytes
they stand for, other vocabularies as their literal text.
"""
import collections
import json
from pathlib import Path

import tokenizers

from hf_tagtok.tokenizer_identity import identity
from hf_tagtok.training import bytelevel_bytes

_DIGITS = b"0123456789"


def describe(path) -> dict:
    path = Path(path)
    json_path = path / "tokenizer.json" if path.is_dir() else path
    tokenizer = tokenizers.Tokenizer.from_file(str(json_path))
    config = json.loads(tokenizer.to_str())
    byte_level = _is_byte_level(config)
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    specials = sorted((t.content, i) for i, t in tokenizer.get_added_tokens_decoder().items() if t.special)
    pieces = {i: _piece_bytes(name, byte_level) for name, i in vocab.items()}
    return {
        "path": str(json_path),
        "identity": identity(json_path),
        "model": config["model"]["type"],
        "vocab_size": tokenizer.get_vocab_size(with_added_tokens=True),
        "byte_level": byte_level,
        "special_tokens": [{"content": c, "id": i} for c, i in sorted(specials, key=lambda s: s[1])],
        "byte_tokens": _byte_layout(pieces) if byte_level else None,
        "numbers": _number_pieces(pieces, {i for _, i in specials}),
    }


def _is_byte_level(config):
    def has(component):
        if not component:
            return False
        parts = component.get("pretokenizers") or component.get("decoders") or [component]
        return any(p.get("type") == "ByteLevel" for p in parts)

    return has(config.get("pre_tokenizer")) or has(config.get("decoder"))


def _piece_bytes(name, byte_level):
    if byte_level:
        try:
            return bytelevel_bytes(name)
        except UnicodeEncodeError:  # not a byte-level piece (e.g. an added token)
            pass
    return name.encode("utf-8")


def _byte_layout(pieces):
    single = {p[0]: i for i, p in pieces.items() if len(p) == 1}
    ids = sorted(single.values())
    in_byte_order = [single[b] for b in sorted(single)] == ids
    contiguous = bool(ids) and ids[-1] - ids[0] + 1 == len(ids)
    return {"count": len(single), "first_id": ids[0] if ids else None, "last_id": ids[-1] if ids else None,
            "contiguous": contiguous, "in_byte_order": in_byte_order, "missing": sorted(set(range(256)) - set(single))}


def _number_pieces(pieces, special_ids):
    pure = collections.Counter()
    mixed = 0
    for i, piece in pieces.items():
        if i in special_ids:
            continue
        digits = len(piece) - len(piece.translate(None, _DIGITS))
        if digits and digits == len(piece):
            pure[digits] += 1
        elif digits:
            mixed += 1
    return {"pure_digit_pieces_by_length": dict(sorted(pure.items())), "mixed_digit_pieces": mixed,
            "multi_digit_pieces": sum(n for length, n in pure.items() if length > 1)}


def format_report(info) -> str:
    lines = [f"tokenizer     {info['path']}",
             f"identity      {info['identity']}",
             f"model         {info['model']}{' (byte-level)' if info['byte_level'] else ''}",
             f"vocab size    {info['vocab_size']}"]
    specials = info["special_tokens"]
    lines.append(f"special       {len(specials)}: " + ", ".join(f"{s['id']}={s['content']}" for s in specials[:12])
                 + (" ..." if len(specials) > 12 else ""))
    layout = info["byte_tokens"]
    if layout is not None:
        where = (f"ids {layout['first_id']}-{layout['last_id']}" if layout["contiguous"] else "scattered ids")
        order = "in byte order" if layout["in_byte_order"] else "not in byte order"
        lines.append(f"byte tokens   {layout['count']}/256, {where}, {order}"
                     + (f", missing {len(layout['missing'])}" if layout["missing"] else ""))
    numbers = info["numbers"]
    pure = numbers["pure_digit_pieces_by_length"]
    lines.append("digit pieces  " + (", ".join(f"{n} of length {k}" for k, n in pure.items()) or "none")
                 + f"; multi-digit pieces {numbers['multi_digit_pieces']}; mixed digit pieces "
                 f"{numbers['mixed_digit_pieces']}")
    return "\n".join(lines)


def main(argv=None):
    from hf_tagtok import cli_support

    parser = cli_support.parser("hf-tagtok inspect", "Describe a tokenizer's vocabulary.")
    parser.add_argument("path", help="tokenizer directory or tokenizer.json (local)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    cli_support.require("inspect", "blake3")
    cli_support.tokenizer_location(args.path, "path")
    try:
        info = describe(args.path)
    except Exception as exc:  # stock raises a bare Exception for an unreadable tokenizer.json
        parser.exit(2, f"hf-tagtok inspect: error: {exc}\n")
    print(json.dumps(info, indent=2) if args.json else format_report(info))
    return 0
