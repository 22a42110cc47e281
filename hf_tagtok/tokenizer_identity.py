"""A tokenizer's identity: the blake3 hash (hex) of its raw tokenizer.json bytes.

Two tokenizers with the same identity encode identically; anything prepared with one (corpora,
artifacts) is bound to it. For an in-memory tokenizer the bytes are the ones `save` would write
(stock's pretty JSON), so identity(tok) == identity(path) after `tok.save(path)`.
"""
import os
from pathlib import Path

IDENTITY_FILE = "tokenizer.json.blake3"


def identity(path_or_tokenizer) -> str:
    """blake3 hex of tokenizer.json: a file, a directory holding one, or a tokenizer object
    (`tokenizers.Tokenizer`, `hf_tagtok.Tokenizer`, or a transformers fast tokenizer)."""
    return _blake3(tokenizer_json_bytes(path_or_tokenizer)).hexdigest()


def write_identity(directory) -> Path:
    """Store the identity of `directory`/tokenizer.json beside it as `tokenizer.json.blake3`, in the
    b3sum checksum format (so `b3sum -c tokenizer.json.blake3` verifies it too)."""
    directory = Path(directory)
    path = directory / IDENTITY_FILE
    path.write_text(f"{identity(directory)}  tokenizer.json\n", encoding="utf-8")
    return path


def tokenizer_json_bytes(path_or_tokenizer) -> bytes:
    if isinstance(path_or_tokenizer, (str, os.PathLike)):
        path = Path(path_or_tokenizer)
        if path.is_dir():
            path = path / "tokenizer.json"
        if not path.is_file():
            raise FileNotFoundError(f"no tokenizer.json at {path}")
        return path.read_bytes()
    stock = getattr(path_or_tokenizer, "backend_tokenizer", path_or_tokenizer)  # transformers fast tokenizers
    if not hasattr(stock, "to_str"):
        raise TypeError(f"expected a path or a tokenizer with to_str(), got {type(path_or_tokenizer).__name__}")
    return stock.to_str(pretty=True).encode("utf-8")


def _blake3(data: bytes = b""):
    try:
        from blake3 import blake3
    except ImportError:
        raise ImportError("tokenizer identity needs the blake3 package: pip install -e '.[train]' in the hf_tagtok checkout") from None
    return blake3(data)


def main(argv=None):
    from hf_tagtok import cli_support

    parser = cli_support.parser("hf-tagtok identity", "Print the blake3 identity of a tokenizer.")
    parser.add_argument("paths", nargs="+", help="tokenizer directories or tokenizer.json files")
    args = parser.parse_args(argv)
    cli_support.require("identity", "blake3")
    for path in args.paths:
        try:
            print(f"{identity(path)}  {path}")
        except FileNotFoundError as exc:
            parser.exit(2, f"hf-tagtok identity: error: {exc}\n")
    return 0
