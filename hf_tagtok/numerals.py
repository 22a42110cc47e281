"""The numeral codec: numbers read back from digit pieces.

A numeral is a maximal run of consecutive pieces made only of ASCII digits (special tokens excluded),
read left to right into one value: pieces "8", "4" give 84 and pieces "4", "8" give 48. Pieces are read
as the bytes they stand for (byte-level vocabularies) or as their text. The codec works on any
vocabulary; on one trained with `train_bpe(..., split_digits=True)` (`hf-tagtok train --split-digits`)
every digit is its own piece, so `encode(value)` is exactly what the tokenizer produces for the digits
of `value`, and `hf-tagtok inspect` reports no multi-digit piece.
"""
import json
from pathlib import Path
from typing import NamedTuple

import tokenizers

_DIGITS = b"0123456789"


class Numeral(NamedTuple):
    start: int  # index of its first piece in the ids
    end: int    # one past its last piece
    text: str   # the digits as written ("007")
    value: int  # their value (7)


class NumeralCodec:
    """Numbers to digit pieces and back for one tokenizer (a tokenizers.Tokenizer, hf_tagtok.Tokenizer,
    tokenizer directory or tokenizer.json path)."""

    def __init__(self, tokenizer):
        from hf_tagtok.inspect_vocab import _is_byte_level, _piece_bytes

        if isinstance(tokenizer, (str, Path)):
            path = Path(tokenizer)
            tokenizer = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json" if path.is_dir() else path))
        stock = getattr(tokenizer, "stock", tokenizer)
        byte_level = _is_byte_level(json.loads(stock.to_str()))
        special = {token_id for token_id, token in stock.get_added_tokens_decoder().items() if token.special}
        self.digits = {}  # id -> its digits, for every pure-digit piece
        for name, token_id in stock.get_vocab(with_added_tokens=True).items():
            piece = _piece_bytes(name, byte_level)
            if token_id not in special and piece and not piece.translate(None, _DIGITS):
                self.digits[token_id] = piece.decode("ascii")
        self.single = {}  # digit -> the id of its single-digit piece (the lowest, should two pieces read alike)
        for token_id, digits in sorted(self.digits.items()):
            if len(digits) == 1:
                self.single.setdefault(digits, token_id)

    def numerals(self, ids) -> list:
        """Every numeral in `ids`, in order."""
        found, start = [], None
        for index, token_id in enumerate([*ids, None]):
            if token_id is not None and token_id in self.digits:
                if start is None:
                    start = index
                continue
            if start is not None:
                text = "".join(self.digits[i] for i in ids[start:index])
                found.append(Numeral(start, index, text, int(text)))
                start = None
        return found

    def decode(self, ids) -> int:
        """The value of `ids`, which must all be digit pieces."""
        ids = list(ids)
        if not ids or any(token_id not in self.digits for token_id in ids):
            raise ValueError(f"not a run of digit pieces: {ids}")
        return int("".join(self.digits[token_id] for token_id in ids))

    def encode(self, value: int) -> list:
        """The single-digit pieces of a non-negative integer's decimal digits, left to right."""
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"value must be a non-negative int, got {value!r}")
        missing = sorted(set(str(value)) - set(self.single))
        if missing:
            raise ValueError(f"the vocabulary has no single-digit piece for {', '.join(missing)}")
        return [self.single[digit] for digit in str(value)]
