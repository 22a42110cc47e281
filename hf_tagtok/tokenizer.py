"""`hf_tagtok.Tokenizer`: the stock `tokenizers.Tokenizer` encode API, run natively where we can.

Every tokenizer keeps the stock object it was built from. `hf_tagtok.models.plan` decides once, from
the tokenizer's JSON, whether the whole pipeline has a native twin; when it does not (or a setting
such as truncation leaves the covered ground), encoding runs on the stock object, so outputs are
identical either way. `acceleration` reports per stage what runs natively and why not.
"""
import copy
import json
from typing import NamedTuple

import numpy as np
import tokenizers

from hf_tagtok import models

STAGES = ("added_tokens", "normalizer", "pre_tokenizer", "model", "post_processor", "truncation", "padding")


class BatchArrays(NamedTuple):
    """A batch as flat columns: token i of text t is at lengths[:t].sum() + i."""
    ids: np.ndarray                  # uint32 (n_tokens,)
    type_ids: np.ndarray             # uint32 (n_tokens,)
    offsets: np.ndarray              # int64 (n_tokens, 2), char offsets into each text like stock
    special_tokens_mask: np.ndarray  # uint8 (n_tokens,)
    attention_mask: np.ndarray       # uint8 (n_tokens,)
    lengths: np.ndarray              # int64 (n_texts,)


class Tokenizer:
    """Encode like `tokenizers.Tokenizer`; build with from_file / from_str / from_hf."""

    def __init__(self, stock: tokenizers.Tokenizer, _config_text=None):
        if not isinstance(stock, tokenizers.Tokenizer):
            raise TypeError(f"expected a tokenizers.Tokenizer, got {type(stock).__name__}")
        self._stock = stock
        self._report, self._native = models.plan(stock, _config_text)

    @classmethod
    def from_file(cls, path) -> "Tokenizer":
        return cls(tokenizers.Tokenizer.from_file(str(path)))

    @classmethod
    def from_str(cls, text: str) -> "Tokenizer":
        return cls(tokenizers.Tokenizer.from_str(text), text)

    @classmethod
    def from_hf(cls, stock: tokenizers.Tokenizer) -> "Tokenizer":
        """A tokenizer equal to `stock` (settings included) that no longer shares state with it."""
        if not isinstance(stock, tokenizers.Tokenizer):
            raise TypeError(f"expected a tokenizers.Tokenizer, got {type(stock).__name__}")
        text = stock.to_str()
        clone = tokenizers.Tokenizer.from_str(text)
        clone.encode_special_tokens = stock.encode_special_tokens  # not part of the JSON
        return cls(clone, text)

    # ------------------------------------------------------------------ encoding

    def encode(self, sequence, pair=None, is_pretokenized=False, add_special_tokens=True):
        native = self._native_for(is_pretokenized)
        if native is not None and pair is None and _encodable([sequence]):
            try:
                return _encodings(native, [sequence], add_special_tokens)[0]
            except UnicodeEncodeError:
                pass  # lone surrogates: stock below raises its own exception class
        return self._stock.encode(sequence, pair, is_pretokenized=is_pretokenized,
                                  add_special_tokens=add_special_tokens)

    def encode_batch(self, input, is_pretokenized=False, add_special_tokens=True):
        native = self._native_for(is_pretokenized)
        if native is not None and _encodable(input):
            try:
                return _encodings(native, list(input), add_special_tokens)
            except UnicodeEncodeError:
                pass  # lone surrogates: stock below raises its own exception class
        return self._stock.encode_batch(input, is_pretokenized=is_pretokenized,
                                        add_special_tokens=add_special_tokens)

    def encode_batch_arrays(self, texts, add_special_tokens=True) -> BatchArrays:
        """Encode raw strings into flat columns (no Python object per token); overflow is dropped."""
        texts = list(texts)
        if not _encodable(texts):  # let stock raise exactly what it raises for this input
            self._stock.encode_batch(texts, add_special_tokens=add_special_tokens)
            raise TypeError("encode_batch_arrays takes a list of str")
        native = self._native_for(False)
        if native is not None:
            try:
                ids, type_ids, offsets, special, _words, lengths = native.encode(texts, add_special_tokens)
            except UnicodeEncodeError:  # lone surrogates: raise what stock raises
                self._stock.encode_batch(texts, add_special_tokens=add_special_tokens)
                raise
            return BatchArrays(ids, type_ids, offsets, special, np.ones(len(ids), dtype=np.uint8), lengths)
        return _columns(self._stock.encode_batch(texts, add_special_tokens=add_special_tokens))

    def _native_for(self, is_pretokenized):
        if is_pretokenized or self._native is None:
            return None
        if self._stock.truncation is not None or self._stock.padding is not None:
            return None
        return self._native

    # ------------------------------------------------------------------ settings

    def enable_truncation(self, max_length, stride=0, strategy="longest_first", direction="right"):
        self._stock.enable_truncation(max_length, stride=stride, strategy=strategy, direction=direction)

    def no_truncation(self):
        self._stock.no_truncation()

    @property
    def truncation(self):
        return self._stock.truncation

    def enable_padding(self, direction="right", pad_id=0, pad_type_id=0, pad_token="[PAD]",
                       length=None, pad_to_multiple_of=None):
        self._stock.enable_padding(direction=direction, pad_id=pad_id, pad_type_id=pad_type_id,
                                   pad_token=pad_token, length=length, pad_to_multiple_of=pad_to_multiple_of)

    def no_padding(self):
        self._stock.no_padding()

    @property
    def padding(self):
        return self._stock.padding

    @property
    def encode_special_tokens(self):
        return self._stock.encode_special_tokens

    @encode_special_tokens.setter
    def encode_special_tokens(self, value):
        self._stock.encode_special_tokens = value
        self._report, self._native = models.plan(self._stock)

    def add_tokens(self, tokens):
        added = self._stock.add_tokens(tokens)
        self._report, self._native = models.plan(self._stock)
        return added

    def add_special_tokens(self, tokens):
        added = self._stock.add_special_tokens(tokens)
        self._report, self._native = models.plan(self._stock)
        return added

    # ------------------------------------------------------------------ report

    @property
    def acceleration(self) -> dict:
        """{stage: {"native": bool, "reason": str}} for the current settings."""
        report = copy.deepcopy(self._report)
        for stage, setting in (("truncation", self._stock.truncation), ("padding", self._stock.padding)):
            if setting is None:
                report[stage] = {"native": True, "reason": "disabled"}
            else:
                report[stage] = {"native": False, "reason": "enabled: the whole encode runs on stock tokenizers"}
        if self._native is None or self._stock.truncation is not None or self._stock.padding is not None:
            for stage in STAGES:
                if report[stage]["native"] and report[stage]["reason"] != "disabled":
                    report[stage] = {"native": False,
                                     "reason": "native here, but another stage is not, so stock runs everything"}
        return report

    # ------------------------------------------------------------------ stock pass-throughs

    @property
    def stock(self) -> tokenizers.Tokenizer:
        """The stock tokenizer inside (shares settings with this one)."""
        return self._stock

    def decode(self, ids, skip_special_tokens=True):
        return self._stock.decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, sequences, skip_special_tokens=True):
        return self._stock.decode_batch(sequences, skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token):
        return self._stock.token_to_id(token)

    def id_to_token(self, id):
        return self._stock.id_to_token(id)

    def get_vocab(self, with_added_tokens=True):
        return self._stock.get_vocab(with_added_tokens=with_added_tokens)

    def get_vocab_size(self, with_added_tokens=True):
        return self._stock.get_vocab_size(with_added_tokens=with_added_tokens)

    def num_special_tokens_to_add(self, is_pair):
        return self._stock.num_special_tokens_to_add(is_pair)

    def to_str(self, pretty=False):
        return self._stock.to_str(pretty)

    def save(self, path, pretty=True):
        self._stock.save(str(path), pretty)

    # ------------------------------------------------------------------ copying

    def __getstate__(self):
        return {"json": self._stock.to_str(), "encode_special_tokens": self._stock.encode_special_tokens}

    def __setstate__(self, state):
        stock = tokenizers.Tokenizer.from_str(state["json"])
        stock.encode_special_tokens = state["encode_special_tokens"]
        self.__init__(stock, state["json"])

    def __deepcopy__(self, memo):
        clone = copy.copy(self)
        clone.__setstate__(self.__getstate__())
        return clone

    def __repr__(self):
        native = [stage for stage, entry in self.acceleration.items() if entry["native"]]
        model = json.loads(self._stock.to_str())["model"]["type"]
        return f"hf_tagtok.Tokenizer({model}, native stages: {', '.join(native) or 'none'})"


def _columns(encodings) -> BatchArrays:
    lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))

    def flat(field, dtype):
        return np.fromiter((v for e in encodings for v in getattr(e, field)), dtype=dtype, count=int(lengths.sum()))

    offsets = np.array([o for e in encodings for o in e.offsets], dtype=np.int64).reshape(-1, 2)
    return BatchArrays(flat("ids", np.uint32), flat("type_ids", np.uint32), offsets,
                       flat("special_tokens_mask", np.uint8), flat("attention_mask", np.uint8), lengths)


def _encodable(texts):
    """True when every item is a str; anything else goes to stock, which raises its own exception."""
    return all(isinstance(text, str) for text in texts)


def _encodings(native, texts, add_special_tokens):
    ids, type_ids, offsets, special, words, lengths = native.encode(texts, add_special_tokens)
    ends = np.cumsum(lengths).tolist()
    columns = (ids, type_ids, offsets, special, words)  # lists are made per field on access, like stock
    starts = [0] + ends[:-1]
    return [Encoding(native, columns, start, end, text) for start, end, text in zip(starts, ends, texts)]


class Encoding:
    """One native encoding with the attributes and methods of `tokenizers.Encoding` (single sequence)."""

    __slots__ = ("_native", "_columns", "_start", "_end", "_text")

    def __init__(self, native, columns, start, end, text):
        self._native, self._columns, self._start, self._end, self._text = native, columns, start, end, text

    def _column(self, index):
        return self._columns[index][self._start:self._end].tolist()

    def __len__(self):
        return self._end - self._start

    def __repr__(self):
        return f"Encoding(num_tokens={len(self)}, attributes=[ids, type_ids, tokens, offsets, attention_mask, " \
               "special_tokens_mask, overflowing])"

    @property
    def ids(self):
        return self._column(0)

    @property
    def type_ids(self):
        return self._column(1)

    @property
    def offsets(self):
        return list(map(tuple, self._column(2)))

    @property
    def special_tokens_mask(self):
        return self._column(3)

    @property
    def attention_mask(self):
        return [1] * len(self)

    @property
    def word_ids(self):
        return [None if word < 0 else word for word in self._column(4)]

    @property
    def words(self):
        return self.word_ids

    @property
    def sequence_ids(self):
        return [None if word < 0 and special else 0 for word, special in zip(self._column(4), self._column(3))]

    @property
    def tokens(self):
        names, before, after = self._native.token_names, self._native.before, self._native.after
        ids, special = self._column(0), self._column(3)
        leading = sum(1 for _ in _takewhile_true(special))
        tokens = [names[token_id] for token_id in ids]
        if self._native.strip_ids:  # a stripping added token's string is the text it matched, spaces included
            for index, (token_id, (start, end)) in enumerate(zip(ids, self._column(2))):
                if token_id in self._native.strip_ids and not special[index]:
                    tokens[index] = self._text[start:end]
        for index in range(len(tokens)):
            if special[index]:
                tokens[index] = before[index] if index < leading and index < len(before) else \
                    after[index - (len(tokens) - len(after))]
        return tokens

    @property
    def overflowing(self):
        return []

    @property
    def n_sequences(self):
        return 1

    def token_to_sequence(self, token_index):
        return self.sequence_ids[token_index]

    def token_to_chars(self, token_index):
        if self.sequence_ids[token_index] is None:
            return None
        return self.offsets[token_index]

    def token_to_word(self, token_index):
        return self.word_ids[token_index]

    def word_to_tokens(self, word_index, sequence_index=0):
        positions = [i for i, word in enumerate(self.word_ids) if word == word_index]
        return (positions[0], positions[-1] + 1) if positions and sequence_index == 0 else None

    def word_to_chars(self, word_index, sequence_index=0):
        span = self.word_to_tokens(word_index, sequence_index)
        if span is None:
            return None
        offsets = self.offsets
        return offsets[span[0]][0], offsets[span[1] - 1][1]

    def char_to_token(self, char_pos, sequence_index=0):
        if sequence_index != 0:
            return None
        for index, ((start, end), sequence) in enumerate(zip(self.offsets, self.sequence_ids)):
            if sequence is not None and start <= char_pos < end:
                return index
        return None

    def char_to_word(self, char_pos, sequence_index=0):
        token = self.char_to_token(char_pos, sequence_index)
        return None if token is None else self.word_ids[token]


def _takewhile_true(flags):
    for flag in flags:
        if not flag:
            return
        yield flag
