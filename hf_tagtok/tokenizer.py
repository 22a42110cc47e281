"""`hf_tagtok.Tokenizer`: the stock `tokenizers.Tokenizer` encode API, run natively where we can.

Every tokenizer keeps the stock object it was built from. `hf_tagtok.planner.plan` decides once, from
the tokenizer's JSON, whether the whole pipeline runs natively (again at the next encode after added
tokens or encode_special_tokens change it); when it does not (or an input is of
a kind read only by stock, e.g. a numpy array of words), encoding runs on the stock object, so outputs
are identical either way. Text pairs, pre-tokenized input, truncation (with overflow) and padding run
natively (ext/pipeline/tp_assemble.c); inputs stock refuses under these settings are handed to stock so
it raises its own exception. `acceleration` reports per stage what runs natively and why not.
"""
import copy
import itertools
from typing import NamedTuple

import numpy as np
import tokenizers

from hf_tagtok import models, planner, stock_columns
from hf_tagtok._lists import encoding_views, flat_ids
from hf_tagtok.encoding import (NAMELESS, RECORD_BOUNDS, RECORD_COLUMNS, RECORD_END, RECORD_RANGES, RECORD_SPLIT,
                                RECORD_START, Columns, Encoding)
from hf_tagtok.errors import StockDecides
from hf_tagtok.fallback import SHADOWED, warn_fallback

STAGES = ("added_tokens", "normalizer", "pre_tokenizer", "model", "post_processor", "truncation", "padding",
          "pairs")


class BatchArrays(NamedTuple):
    """A batch as flat columns: token i of encoding k is at lengths[:k].sum() + i.

    Without overflow there is one encoding per input. With `overflowing=True` each input's encoding is
    followed by its overflowing encodings (stock's `Encoding.overflowing`, top level, in order), and
    overflow_to_sample[k] names the input encoding k came from (transformers' overflow_to_sample_mapping).
    """
    ids: np.ndarray                  # uint32 (n_tokens,)
    type_ids: np.ndarray             # uint32 (n_tokens,)
    offsets: np.ndarray              # int64 (n_tokens, 2), char offsets into each text like stock; None if not asked
    special_tokens_mask: np.ndarray  # uint8 (n_tokens,)
    attention_mask: np.ndarray       # uint8 (n_tokens,): 0 on padding
    lengths: np.ndarray              # int64 (n_encodings,)
    overflow_to_sample: np.ndarray   # int64 (n_encodings,)


def _stock_component(name):
    def get(self):  # the component is live (its attributes can be set), so the stock object is now shared
        return getattr(self.stock, name)

    def set(self, value):
        setattr(self._stock, name, value)
        self._replan()
    return property(get, set, doc=f"The stock tokenizer's {name}; setting it replans the native pipeline.")


async def _in_thread(function, *args):
    import asyncio  # here: only async callers need it, and importing it is a sizeable part of a cold load

    return await asyncio.to_thread(function, *args)


class Tokenizer:
    """Encode like `tokenizers.Tokenizer`; build with from_file / from_str / from_hf."""

    def __init__(self, stock: tokenizers.Tokenizer, _config_text=None, _private=False):
        if not isinstance(stock, tokenizers.Tokenizer):
            raise TypeError(f"expected a tokenizers.Tokenizer, got {type(stock).__name__}")
        self._stock = stock
        self._plan = planner.plan(stock, _config_text)
        # A key while the stock object is shared: someone else may change its components, so every call
        # compares it (~5 µs). None while private: it changes only through our methods, which replan.
        self._plan_key = None if _private else self._current_key()

    def _stock_is_cheaper(self, sequences):
        """Whether stock encodes these sequences of a shared tokenizer for less than the check that its stock object
        is unchanged costs (planner.stock_is_cheaper)."""
        return self._plan_key is not None and planner.stock_is_cheaper(self._plan_key[1], sequences)

    def _current_key(self):
        """(planner.next_added_id, planner.plan_key) of the stock tokenizer as it is now."""
        next_added = planner.next_added_id(self._stock)
        return next_added, planner.plan_key(self._stock, next_added)

    def _replan(self):
        # A plan reads the whole configuration back (a large vocabulary's JSON): after a change to the stock
        # tokenizer the next encode makes it, so adding tokens one call at a time pays it once.
        self._plan = None

    def _planned(self) -> planner.Plan:
        """The plan for the stock tokenizer as it is now; a component changed on a shared stock object is
        seen here (planner.plan_key)."""
        if self._plan_key is not None:
            next_added, key = self._plan_key
            if planner.plan_key(self._stock, next_added) != key:
                self._plan, self._plan_key = None, self._current_key()
        if self._plan is None:
            self._plan = planner.plan(self._stock)
        return self._plan

    @property
    def _report(self):
        return self._planned().report

    @property
    def _native(self):
        return self._planned().native

    @property
    def _replay(self):
        return self._planned().replay

    @property
    def _gated(self):
        return self._planned().gated

    def _checked(self):
        """self, after a FallbackWarning (pointing at the caller's caller) when it is not fully native."""
        warn_fallback(f"hf_tagtok.Tokenizer({type(self._stock.model).__name__})", self.acceleration, stacklevel=3)
        return self

    @classmethod
    def from_file(cls, path) -> "Tokenizer":
        stock = tokenizers.Tokenizer.from_file(str(path))
        # planned from the file's text: stock's to_str() allocates per id up to the largest (2**31: ~8 GB);
        # decoded whole, as stock reads it (a text-mode read decodes and translates newlines chunk by chunk)
        with open(path, "rb") as file:
            return cls(stock, file.read().decode("utf-8"), _private=True)._checked()

    @classmethod
    def from_str(cls, text: str) -> "Tokenizer":
        return cls(tokenizers.Tokenizer.from_str(text), text, _private=True)._checked()

    @classmethod
    def from_buffer(cls, buffer) -> "Tokenizer":
        stock = tokenizers.Tokenizer.from_buffer(buffer)
        return cls(stock, bytes(buffer).decode("utf-8"), _private=True)._checked()

    @classmethod
    def from_pretrained(cls, identifier, revision="main", token=None) -> "Tokenizer":
        stock = tokenizers.Tokenizer.from_pretrained(identifier, revision=revision, token=token)
        return cls(stock, _private=True)._checked()

    @classmethod
    def from_hf(cls, stock: tokenizers.Tokenizer) -> "Tokenizer":
        """A tokenizer equal to `stock` (settings included) that no longer shares state with it."""
        if not isinstance(stock, tokenizers.Tokenizer):
            raise TypeError(f"expected a tokenizers.Tokenizer, got {type(stock).__name__}")
        try:
            text = planner.config_text(stock)
            clone = models.stock_copy(stock, text)
        except Exception:  # stock cannot write (sparse ids) or read back (tokens sharing an id) it: share `stock`
            return cls(stock)._checked()
        clone.encode_special_tokens = stock.encode_special_tokens  # not part of the JSON
        return cls(clone, text, _private=True)._checked()

    # ------------------------------------------------------------------ encoding

    def encode(self, sequence, pair=None, is_pretokenized=False, add_special_tokens=True):
        kind = _is_words if is_pretokenized else _is_text
        if (_flags(is_pretokenized, add_special_tokens) and kind(sequence) and (pair is None or kind(pair))
                and not self._stock_is_cheaper((sequence, pair))):
            batch = self._native_batch([sequence], [pair], add_special_tokens, is_pretokenized)
            if batch is not None:
                return batch.encodings()[0]
        return self._stock.encode(sequence, pair, is_pretokenized=is_pretokenized,
                                  add_special_tokens=add_special_tokens)

    def encode_batch(self, input, is_pretokenized=False, add_special_tokens=True):
        split = _split_batch(input, is_pretokenized, add_special_tokens)
        if split is not None and not self._stock_is_cheaper(itertools.chain(*split)):
            gated = self._gate_given(split, is_pretokenized)
            if gated is not None:
                return self._gated_encodings(split[0], *gated, add_special_tokens)
            batch = self._native_batch(*split, add_special_tokens, is_pretokenized)
            if batch is not None:
                return batch.encodings()
        return self._stock.encode_batch(input, is_pretokenized=is_pretokenized,
                                        add_special_tokens=add_special_tokens)

    def encode_batch_fast(self, input, is_pretokenized=False, add_special_tokens=True):
        """`encode_batch` as stock's fast variant leaves it: offsets (0, 0), no word ids, and empty strings for
        the tokens of the text itself. Pairs go to stock: its fast path gives the second text type id 0 before
        post-processing, which only some post-processors overwrite."""
        split = _split_batch(input, is_pretokenized, add_special_tokens)
        if split is not None and all(pair is None for pair in split[1]) and not self._stock_is_cheaper(split[0]):
            batch = self._native_batch(*split, add_special_tokens, is_pretokenized)
            if batch is not None:
                return batch.without_offsets().encodings()
        return self._stock.encode_batch_fast(input, is_pretokenized=is_pretokenized,
                                             add_special_tokens=add_special_tokens)

    def encode_batch_arrays(self, inputs, add_special_tokens=True, overflowing=False,
                            is_pretokenized=False, offsets=True) -> BatchArrays:
        """Encode inputs as `encode_batch` reads them (str or (str, str) pairs; lists of words, or pairs of
        them, when `is_pretokenized`) into flat columns, no Python object per token, with the current
        truncation and padding. Overflow is dropped unless `overflowing` (see BatchArrays). With
        `offsets=False` the offsets column is None (not computed when the native pipeline runs)."""
        if isinstance(inputs, (str, bytes)):  # a text would be read as a batch of one-char texts
            raise TypeError(f"encode_batch_arrays takes a sequence of inputs, not a single {type(inputs).__name__} "
                            "(wrap it in a list)")
        inputs = list(inputs)
        split = _split_batch(inputs, is_pretokenized, add_special_tokens)
        if split is not None and self._stock_is_cheaper(itertools.chain(*split)):
            return self._stock_arrays(inputs, add_special_tokens, overflowing, is_pretokenized, offsets, False)
        gated = None if split is None else self._gate_given(split, is_pretokenized)
        if gated is not None:
            return self._gated_arrays(split[0], *gated, add_special_tokens, offsets)
        batch = None if split is None else self._native_batch(*split, add_special_tokens, is_pretokenized,
                                                                 overflowing, offsets, words=False, columnar=True)
        single_texts = split is not None and not is_pretokenized and split[1].count(None) == len(inputs)
        if batch is None and single_texts:
            batch = self._replayed_batch(split[0], add_special_tokens, offsets)
        if batch is not None:
            arrays = batch.arrays(overflowing)
            return arrays if offsets else arrays._replace(offsets=None)
        return self._stock_arrays(inputs, add_special_tokens, overflowing, is_pretokenized, offsets, single_texts)

    def _stock_arrays(self, inputs, add_special_tokens, overflowing, is_pretokenized, offsets, single_texts):
        """encode_batch_arrays from stock's encodings (or the exception stock raises for the inputs)."""
        if not offsets and single_texts and self._plain_layout() is not None:
            return self._ids_in_layout(inputs, add_special_tokens)
        # stock encodes this input, or raises exactly what it raises for it; without offsets, single texts go
        # to its fast call (the same encodings without offsets and word ids)
        if offsets or overflowing or is_pretokenized or not all(map(_is_text, inputs)):
            encode = self._stock.encode_batch
        else:
            encode = self._stock.encode_batch_fast
        encodings = encode(inputs, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens)
        return _columns(encodings, overflowing, offsets, padded=self._stock.padding is not None)

    def _replayed_batch(self, texts, add_special_tokens, offsets):
        """The columnar `_Batch` of single texts from stock's token ids (its fast call, which costs less than
        the encodings the columns would be read from) and the replaying pipeline, or None: stock must run."""
        replay = self._replay
        if replay is None or not self._stock_plain():
            return None
        encodings = self._stock.encode_batch_fast(texts, add_special_tokens=False)
        return _Batch.plain(replay, texts, add_special_tokens, offsets, words=False, columnar=True,
                            replay=flat_ids([encoding.ids for encoding in encodings]))

    def _gate_given(self, split, is_pretokenized):
        """(per text whether the gated pipeline encodes it, the matches given with those texts) (planner.Gated,
        hf_tagtok.gate) for a call of single texts with truncation and padding off; None for any other call, or
        when the plan is not gated."""
        gated = self._gated
        if gated is None or is_pretokenized or split[1].count(None) != len(split[1]) or not self._stock_plain():
            return None
        return gated.gate.given(split[0])

    @staticmethod
    def _gated_call(gated, texts, pairs):
        """(the gated pipeline's encoder, the matches given with the call's sequences, each text then its pair
        as `native_batch` reads them) when the gate finds every sequence's matches, else None (also when not
        gated)."""
        if gated is None:
            return None
        mask, given = gated.gate.given(_sequences(texts, pairs))
        return (gated.encoder, given) if all(mask) else None

    def _gated_batch(self, texts, mask, given, add_special_tokens, **kinds):
        """(the native batch of the texts the gate passed and the pipeline takes, per text whether it is in it); the
        batch is None when the native pipeline cannot take the call (see native_batch)."""
        passed = [k for k, passes in enumerate(mask) if passes]
        try:
            return self._gated_native(texts, passed, given, add_special_tokens, kinds, each_text=True), mask
        except StockDecides as decided:
            mask = list(mask)
            for k in decided.texts:
                mask[passed[k]] = False
            given = (given[0], np.delete(given[1], decided.texts))
            passed = [k for k, passes in enumerate(mask) if passes]
            return self._gated_native(texts, passed, given, add_special_tokens, kinds, each_text=False), mask

    def _gated_native(self, texts, passed, given, add_special_tokens, kinds, each_text):
        """The gated pipeline's native batch of texts[k] for k in `passed`, or None (see native_batch)."""
        if not passed:
            return None
        return native_batch(self._gated.encoder, [texts[k] for k in passed], [None] * len(passed), add_special_tokens,
                            False, None, None, given=given, each_text=each_text, **kinds)

    def _gated_encodings(self, texts, mask, given, add_special_tokens):
        batch, mask = self._gated_batch(texts, mask, given, add_special_tokens)
        if batch is None:
            return self._stock.encode_batch(texts, add_special_tokens=add_special_tokens)
        native = batch.encodings()
        if all(mask):
            return native
        rest = [text for text, passes in zip(texts, mask) if not passes]
        native, stock = iter(native), iter(self._stock.encode_batch(rest, add_special_tokens=add_special_tokens))
        return [next(native) if passes else next(stock) for passes in mask]

    def _gated_arrays(self, texts, mask, given, add_special_tokens, offsets):
        batch, mask = self._gated_batch(texts, mask, given, add_special_tokens, overflowing=False, offsets=offsets,
                                        words=False, columnar=True)
        if batch is None:
            return self._stock_arrays(texts, add_special_tokens, False, False, offsets, True)
        arrays = batch.arrays(False)
        arrays = arrays if offsets else arrays._replace(offsets=None)
        if all(mask):
            return arrays
        rest = [text for text, passes in zip(texts, mask) if not passes]
        return _interleaved(mask, arrays, self._stock_arrays(rest, add_special_tokens, False, False, offsets, True))

    def _stock_plain(self):
        """Whether stock's truncation and padding are both off (each text one encoding, as encoded)."""
        return self._stock.truncation is None and self._stock.padding is None

    def _plain_layout(self):
        """A single text's post-processor layouts when they alone place its special tokens (a native
        post-processor, no truncation or padding), else None."""
        return self._planned().layout if self._stock_plain() else None

    def _ids_in_layout(self, texts, add_special_tokens) -> BatchArrays:
        """The columnar call without offsets from stock's ids alone (its fast call): type ids and special flags
        follow from the layout (post-processor tokens around each text's own, whose flags stock leaves 0)."""
        side = self._plain_layout()[bool(add_special_tokens)]
        encodings = self._stock.encode_batch_fast(texts, add_special_tokens=add_special_tokens)
        ids, lengths = flat_ids([encoding.ids for encoding in encodings])
        type_ids = np.full(len(ids), side.main_type, dtype=np.uint32)
        special = np.zeros(len(ids), dtype=np.uint8)
        starts = np.cumsum(lengths) - lengths
        for at, tokens in ((starts, side.before), (starts + lengths - len(side.after), side.after)):
            for k, (_, type_id, _) in enumerate(tokens):
                type_ids[at + k], special[at + k] = type_id, 1
        return BatchArrays(ids, type_ids, None, special, np.ones(len(ids), dtype=np.uint8), lengths,
                           np.arange(len(texts), dtype=np.int64))

    def _native_batch(self, texts, pairs, add_special_tokens, pretokenized=False, overflowing=True, offsets=True,
                      words=True, settings=None, columnar=False):
        """The native `_Batch` for these inputs (texts, or lists of words when pretokenized) under
        `settings` (truncation, padding) as the stock tokenizer reports them (default: its current ones), or
        None: stock must run. See `native_batch`."""
        plan = self._planned()
        truncation, padding = (self._stock.truncation, self._stock.padding) if settings is None else settings
        native, given = plan.native, None
        if native is None:
            gated = None if pretokenized else self._gated_call(plan.gated, texts, pairs)
            if gated is None:
                return None
            native, given = gated
        return native_batch(native, texts, pairs, add_special_tokens, pretokenized, truncation, padding, overflowing,
                            offsets, words, columnar, given)

    async def async_encode(self, sequence, pair=None, is_pretokenized=False, add_special_tokens=True):
        """Stock's own: its offsets are byte offsets, unlike every other encode call's (docs/architecture.md)."""
        return await self._stock.async_encode(sequence, pair, is_pretokenized, add_special_tokens)

    async def async_encode_batch(self, input, is_pretokenized=False, add_special_tokens=True):
        return await _in_thread(self.encode_batch, input, is_pretokenized, add_special_tokens)

    async def async_encode_batch_fast(self, input, is_pretokenized=False, add_special_tokens=True):
        return await _in_thread(self.encode_batch_fast, input, is_pretokenized, add_special_tokens)

    async def async_decode_batch(self, sequences, skip_special_tokens=True):
        return await _in_thread(self.decode_batch, sequences, skip_special_tokens)

    def post_process(self, encoding, pair=None, add_special_tokens=True):
        """Stock's, on stock `tokenizers.Encoding` objects."""
        return self._stock.post_process(encoding, pair, add_special_tokens)

    # ------------------------------------------------------------------ components (the stock tokenizer's)

    model = _stock_component("model")
    normalizer = _stock_component("normalizer")
    pre_tokenizer = _stock_component("pre_tokenizer")
    post_processor = _stock_component("post_processor")

    @property
    def decoder(self):
        return self._stock.decoder

    @decoder.setter
    def decoder(self, value):  # decoding always runs on stock: nothing to replan
        self._stock.decoder = value

    def train(self, files, trainer=None):
        self._stock.train(files, trainer)
        self._trained()

    def train_from_iterator(self, iterator, trainer=None, length=None):
        self._stock.train_from_iterator(iterator, trainer, length)
        self._trained()

    def _trained(self):
        # stock's BPE trainer keeps the model's word cache: the calls that run on stock would go on giving the
        # old tokens of the words encoded before, where a fresh load does not (models without one lack the call)
        model = self._stock.model
        if hasattr(model, "_clear_cache"):
            model._clear_cache()
        self._replan()

    def get_added_tokens_decoder(self):
        return self._stock.get_added_tokens_decoder()

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
        self._replan()

    def add_tokens(self, tokens):
        added = self._stock.add_tokens(tokens)
        self._replan()
        return added

    def add_special_tokens(self, tokens):
        added = self._stock.add_special_tokens(tokens)
        self._replan()
        return added

    # ------------------------------------------------------------------ report

    @property
    def acceleration(self) -> dict:
        """{stage: {"native": bool, "reason": str}} for the current settings."""
        report = copy.deepcopy(self._report)
        for stage, setting in (("truncation", self._stock.truncation), ("padding", self._stock.padding)):
            report[stage] = {"native": True, "reason": "disabled" if setting is None else "native"}
        report["pairs"] = {"native": True, "reason": "native (pre-tokenized inputs too)"}
        if self._native is None and self._gated is None:
            for stage in STAGES:
                if report[stage]["native"] and report[stage]["reason"] != "disabled":
                    report[stage] = {"native": False, "reason": SHADOWED}
        return report

    # ------------------------------------------------------------------ stock pass-throughs

    @property
    def stock(self) -> tokenizers.Tokenizer:
        """The stock tokenizer inside (shares settings with this one; components changed on it are seen)."""
        if self._plan_key is None:
            self._plan_key = self._current_key()
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
        self.__init__(stock, state["json"], _private=True)

    def __deepcopy__(self, memo):
        clone = copy.copy(self)
        clone.__setstate__(self.__getstate__())
        return clone

    def __repr__(self):
        native = [stage for stage, entry in self.acceleration.items() if entry["native"]]
        model = type(self._stock.model).__name__
        return f"hf_tagtok.Tokenizer({model}, native stages: {', '.join(native) or 'none'})"


def _columns(encodings, overflowing=False, offsets=True, padded=True) -> BatchArrays:
    """Stock's encodings as columns (stock_columns.columns)."""
    return BatchArrays(*stock_columns.columns(encodings, overflowing, offsets, padded))


def _interleaved(mask, first, second) -> BatchArrays:
    """Two batches' columns (one encoding per text, no overflow) in text order: text k is the next of `first`'s
    when mask[k], else the next of `second`'s."""
    mask = np.asarray(mask, dtype=bool)
    lengths, starts = np.empty(len(mask), dtype=np.int64), np.empty(len(mask), dtype=np.int64)
    lengths[mask], lengths[~mask] = first.lengths, second.lengths
    starts[mask] = np.cumsum(first.lengths) - first.lengths
    starts[~mask] = np.cumsum(second.lengths) - second.lengths + len(first.ids)
    take = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))

    def column(a, b):
        return None if a is None else np.concatenate([a, b])[take]

    return BatchArrays(*(column(a, b) for a, b in zip(first[:5], second[:5])), lengths,
                       np.arange(len(mask), dtype=np.int64))


def native_batch(native, texts, pairs, add_special_tokens, pretokenized, truncation, padding, overflowing=True,
                 offsets=True, words=True, columnar=False, given=None, each_text=False):
    """The `_Batch` of a native encoder (`planner.NativeEncoder`) for these inputs under truncation and padding
    (dicts as `tokenizers.Tokenizer` reports them, or None), or None: stock must run. Without `overflowing` it
    holds the main encodings only; without `offsets` or `words` a plain batch computes none (that column is
    None: for `encode_batch_arrays` only). A `columnar` batch is for `arrays` (int64 offsets, padding stored);
    else it is for `Encoding` views, which keep fewer bytes: uint32 offsets, and padding only counted. `given`: the
    sequences' matches of a gated pipeline's refused steps (hf_tagtok.gate.MatchGate.given over `_sequences`). With
    `each_text`, a call of single texts raises StockDecides naming the texts stock must encode instead."""
    raises = native.stock_raises_id
    try:
        if _plain(truncation, padding, pairs, pretokenized):
            batch = _Batch.plain(native, texts, add_special_tokens, offsets, words, columnar, given=given,
                                 each_text=each_text)
        else:  # overflow kept when a token may show that stock raises: truncation must not hide it
            batch = _Batch.assembled(native, texts, pairs, pretokenized, add_special_tokens, truncation, padding,
                                     overflowing or raises is not None, columnar, given)
    except UnicodeEncodeError:
        return None  # lone surrogates: stock raises its own exception class
    if raises is not None and batch is not None and (batch.columns.ids == raises).any():
        return None  # stock raises for this call (a Unigram without unk_id meets a char it cannot cover)
    return batch


def _sequences(texts, pairs):
    """A call's texts, each followed by its pair when it has one (the order `_Batch.assembled` encodes them)."""
    if pairs.count(None) == len(pairs):
        return texts
    return [sequence for text, pair in zip(texts, pairs) for sequence in (text, pair) if sequence is not None]


def _plain(truncation, padding, pairs, pretokenized):
    """Whether a call is of single texts without truncation or padding (`_Batch.plain`)."""
    return truncation is None and padding is None and not pretokenized and pairs.count(None) == len(pairs)


_STR = {str}


def _all_str(items):
    """Whether every item is an exact `str`, in one pass without a Python call per item."""
    return set(map(type, items)) == _STR


def _is_text(item):
    return isinstance(item, str)


def _is_words(item):
    return isinstance(item, (list, tuple)) and all(isinstance(word, str) for word in item)


def _flags(*flags):
    """Whether every flag is a bool: stock refuses anything else (1, None, "yes") with a TypeError."""
    return all(type(flag) is bool for flag in flags)


def _split_batch(inputs, is_pretokenized, add_special_tokens):
    """_split_inputs for a batch stock accepts: a list or tuple (stock refuses a str, a dict, a generator)
    and bool flags; None otherwise, so stock raises its own exception."""
    if not isinstance(inputs, (list, tuple)) or not _flags(is_pretokenized, add_special_tokens):
        return None
    return _split_inputs(inputs, _is_words if is_pretokenized else _is_text)


def _split_inputs(inputs, kind):
    """(sequences, pairs) as stock reads an encode_batch input: a sequence of `kind` (text, or words when
    pre-tokenized) or a pair of them (tuple or list), pairs[i] None for a single one; None for anything
    else (stock then raises its own exception)."""
    if kind is _is_text and _all_str(inputs):
        return list(inputs), [None] * len(inputs)
    sequences, pairs = [], []
    for item in inputs:
        if kind(item):
            sequences.append(item)
            pairs.append(None)
        elif isinstance(item, (tuple, list)) and len(item) == 2 and kind(item[0]) and kind(item[1]):
            sequences.append(item[0])
            pairs.append(item[1])
        else:
            return None
    return sequences, pairs


class _Batch:
    """The columns of one native encode call, shared by the `Encoding` views into it.

    records[k]: encoding k's rows, the first row of its second sequence's part and the token ranges it
    records (columns RECORD_* of hf_tagtok.encoding).
    firsts[item] is the index of an input's main encoding, its overflowing ones follow;
    windows[item] = (overflow windows of text A, of text B or -1).
    padding: None, or (counts, fill) when the columns leave the padding out: counts[k] = padding tokens before
    and after encoding k's rows, fill = a padding token's value in each column (a `Columns`).
    """

    __slots__ = ("native", "columns", "attention", "_records", "lengths", "add_special_tokens", "firsts", "windows",
                 "padding", "texts", "pairs", "pretokenized", "pad_token", "given")

    @classmethod
    def plain(cls, native, texts, add_special_tokens, offsets=True, words=True, columnar=False, replay=None,
              given=None, each_text=False):
        """The batch of single texts with no truncation or padding; None when a replaying pipeline's `replay`
        (per text, stock's token ids) does not spell the texts, or stock must encode some text (see
        `_native.Pipeline.encode`), which with `each_text` raises StockDecides naming them instead."""
        try:
            columns = native.pipeline.encode(texts, add_special_tokens, offsets, words, columnar, replay, given)
        except StockDecides:
            if each_text:
                raise
            return None
        if columns is None:
            return None
        ids, type_ids, offsets, special, words, lengths = columns
        return cls(native, Columns(ids, type_ids, offsets, special, words), None, None, None, None, None,
                   texts, [None] * len(texts), False, None, lengths, add_special_tokens, given)

    @property
    def records(self):
        """Encoding records (see the class docs); a plain batch builds them when an `Encoding` first asks
        (a columnar call reads its lengths alone)."""
        if self._records is None:
            self._records = self._plain_records()
        return self._records

    def _plain_records(self):
        lengths = self.lengths
        side = self.native.single[bool(self.add_special_tokens)]
        before, after = len(side.before), len(side.after)
        if len(lengths) == 1:  # a single `encode`: plain ints cost less than seven tiny numpy operations
            n = int(lengths[0])
            main = (before, n - after) if side.main_range else (-1, -1)
            return np.array([[0, n, n, *main, -1, -1]], dtype=np.int64)
        ends = np.cumsum(lengths)
        records = np.full((len(lengths), RECORD_COLUMNS), -1, dtype=np.int64)
        records[:, RECORD_START], records[:, RECORD_END], records[:, RECORD_SPLIT] = ends - lengths, ends, ends
        if side.main_range:
            sequence_0 = records[:, RECORD_RANGES][:, :2]  # the first of the two [start, end) ranges
            sequence_0[:, 0], sequence_0[:, 1] = before, lengths - after
        return records

    @classmethod
    def assembled(cls, native, texts, pairs, pretokenized, add_special_tokens, truncation, padding, overflowing=True,
                  columnar=False, given=None):
        if truncation is not None:
            truncation = (truncation["max_length"], truncation["stride"], truncation["strategy"],
                          truncation["direction"] == "left")
        pad_token = pad_fill = None
        if padding is not None:
            pad_token = padding["pad_token"]
            pad_fill = Columns(padding["pad_id"], padding["pad_type_id"], [0, 0], 1, -1)
            padding = (padding["length"], padding["pad_to_multiple_of"] or 0, padding["direction"] == "left",
                       padding["pad_id"], padding["pad_type_id"])
        pieces, bounds = [], [0]
        add = pieces.extend if pretokenized else pieces.append
        for text, pair in zip(texts, pairs):
            add(text)
            bounds.append(len(pieces))
            if pair is not None:
                add(pair)
            bounds.append(len(pieces))
        result = native.pipeline.assemble(pieces, bounds, bytes(pair is not None for pair in pairs), pretokenized,
                                          add_special_tokens, truncation, padding, not overflowing, columnar, given)
        if result is None:
            return None
        *columns, attention, records, padded, windows = result
        firsts = np.zeros(len(texts), dtype=np.int64)
        n1, n2 = windows[:, 0], np.maximum(windows[:, 1], 0)
        np.cumsum((1 + n1 * (1 + n2) + n2)[:-1], out=firsts[1:])
        padding = None if padded is None or pad_fill is None else (padded, pad_fill)
        return cls(native, Columns(*columns), attention, records, firsts, windows, padding, texts, pairs, pretokenized,
                   pad_token, given=given)

    def __init__(self, native, columns, attention, records, firsts, windows, padding, texts, pairs, pretokenized,
                 pad_token, lengths=None, add_special_tokens=None, given=None):
        self.native, self.columns, self.attention, self._records = native, columns, attention, records
        self.lengths, self.add_special_tokens = lengths, add_special_tokens  # a plain batch's (records built later)
        self.given = given  # the matches given with the texts (native_batch), to encode them again alike
        self.firsts, self.windows, self.padding, self.texts, self.pairs = firsts, windows, padding, texts, pairs
        self.pretokenized, self.pad_token = pretokenized, pad_token

    def source(self, item, second, word):
        """The text a token's offsets index: its sequence's text, or its word when pre-tokenized."""
        sequence = self.pairs[item] if second else self.texts[item]
        return sequence[word] if self.pretokenized else sequence

    def without_offsets(self):
        """This batch as stock's fast encode makes it (see Tokenizer.encode_batch_fast)."""
        columns = self.columns
        self.columns = columns._replace(offsets=np.zeros_like(columns.offsets),
                                        words=np.where(columns.words >= 0, NAMELESS, columns.words))
        return self

    def encodings(self):
        """The main encoding of every input."""
        if self.firsts is None:  # a plain batch: one encoding per input, each input's rows after the last one's
            ends = np.cumsum(self.lengths)
            return encoding_views(Encoding, self, ends - self.lengths, ends)
        bounds = self.records[:, RECORD_BOUNDS].tolist()
        return [Encoding(self, index, item, *bounds[index]) for item, index in enumerate(self.firsts.tolist())]

    def overflow_of(self, index, item):
        """Encoding indices stock lists in `overflowing` of encoding `index` (of input `item`)."""
        if self.windows is None:
            return []
        first = int(self.firsts[item])
        n1, n2 = (int(v) for v in self.windows[item])
        if index == first:
            return list(range(first + 1, first + 1 + n1 * (1 + max(n2, 0)) + max(n2, 0)))
        if n2 < 0:
            return []
        position = index - first - 1  # see tp_assemble.h for this order
        block = 1 + n2
        if position < n1 * block:
            i, r = divmod(position, block)
            return [first + 1 + i * block + 1 + j for j in range(n2)] if r == 0 else []
        j = position - n1 * block
        return [first + 1 + i * block + 1 + j for i in range(n1)]

    def arrays(self, overflowing):
        """The flat columns of a columnar batch."""
        ids, type_ids, offsets, special, _words = self.columns
        attention = self.attention if self.attention is not None else np.ones(len(ids), dtype=np.uint8)
        if self.firsts is None:  # a plain batch: one encoding per input
            return BatchArrays(ids, type_ids, offsets, special, attention, self.lengths,
                               np.arange(len(self.lengths), dtype=np.int64))
        starts, ends = self.records[:, RECORD_START], self.records[:, RECORD_END]
        samples = np.repeat(np.arange(len(self.firsts), dtype=np.int64), np.diff(np.append(self.firsts, len(starts))))
        if not overflowing and len(starts) != len(self.texts):
            main = np.zeros(len(starts), dtype=bool)
            main[self.firsts] = True
            keep = np.repeat(main, ends - starts)
            ids, type_ids, offsets, special, attention = (column[keep] for column in
                                                          (ids, type_ids, offsets, special, attention))
            starts, ends, samples = starts[main], ends[main], samples[main]
        return BatchArrays(ids, type_ids, offsets, special, attention, ends - starts, samples)
