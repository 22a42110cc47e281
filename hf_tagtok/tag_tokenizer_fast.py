"""`TagTokenizerFast`: transformers' fast tokenizer, encoding through the native pipeline.

Importing this module imports transformers; `hf_tagtok.fast` (registration, `accelerate`,
`patch_transformers`) loads it on first use, so `import hf_tagtok` stays cheap.

The stock backend (`tokenizers.Tokenizer`) stays authoritative: it serializes, decodes, renders chat
templates and encodes every call the native path does not cover (chat-template control tokens,
tokenizers with a stage that is not native). Texts, pre-split words and pairs of either, with any
truncation (and overflow) and padding, go native: the call's truncation, padding and
`encode_special_tokens` are handed to the native call as arguments (the backend is not written), its
columns are written straight into the `BatchEncoding` (hf_tagtok._lists builds the per-text lists; one
plain text's lists come from its columns directly), and `.encodings` are `hf_tagtok.Encoding` views on the
same columns.

The native tokenizer of an instance lives outside the instance `__dict__` (in `_NATIVE`), so pickle,
dill, deepcopy and `datasets` fingerprinting see exactly the stock state, and a copy builds its own on
first use.
"""
import collections.abc
import functools
import inspect
import itertools
import logging
import os
import weakref
from typing import NamedTuple, Optional

import numpy as np
import transformers
from transformers.tokenization_utils_base import BatchEncoding, PaddingStrategy, TensorType, TruncationStrategy
from transformers.tokenization_utils_tokenizers import TokenizersBackend

from hf_tagtok import _lists, arrow, fingerprint, planner
from hf_tagtok.fallback import warn_fallback
from hf_tagtok.encoding import RECORD_BOUNDS, Encoding
from hf_tagtok.tokenizer import STAGES, Tokenizer, native_batch
from hf_tagtok.tokenizer import _all_str, _columns, _is_text, _is_words

logger = logging.getLogger("hf_tagtok")

ACCELERATED_PREFIX = "_Accelerated_"
# Methods a subclass may not override if our encode path is to stand in for it.
_ENCODE_PATH = ("__call__", "encode", "_encode_plus", "set_truncation_and_padding", "_convert_encoding")
_ARROW = "arrow"  # return_tensors value of encode_arrow: the batch as a pyarrow RecordBatch
_DEFAULTS = {name: parameter.default
             for name, parameter in inspect.signature(TokenizersBackend._encode_plus).parameters.items()
             if parameter.default is not inspect.Parameter.empty}


class NativeState(NamedTuple):
    """The native tokenizer built for one `encode_special_tokens` value of a backend."""
    tokenizer: Optional[Tokenizer]  # None: the backend cannot be serialized, stock encodes
    fully_native: bool
    reason: Optional[str]  # why there is no native tokenizer

    @property
    def encodes(self):
        """Whether a call may run natively: the tokenizer is fully native, or gated (hf_tagtok.gate: a call
        whose texts the gate all passes runs natively)."""
        return self.fully_native or (self.tokenizer is not None and self.tokenizer._gated is not None)


class _Built(NamedTuple):
    backend: object  # the stock tokenizers.Tokenizer the states were built from
    next_added: int  # planner.next_added_id of that backend when they were built
    key: tuple  # planner.components_key of that backend (with next_added) when they were built
    states: dict  # encode_special_tokens value -> NativeState


# tokenizer instance -> _Built
_NATIVE = weakref.WeakKeyDictionary()


class TagTokenizerFast(TokenizersBackend):
    """A `PreTrainedTokenizerFast` (transformers 5 `TokenizersBackend`) whose encoding runs natively.

    Outputs are identical to the stock class loaded from the same files; `acceleration` reports
    which stages run natively. Saved directories hold only stock files.
    """

    # Run the columnar path even when the native tokenizer falls back to stock (tests use this to check
    # the BatchEncoding assembly on every tokenizer, not only on fully native ones).
    _columns_without_native = False

    def __init__(self, *args, **kwargs):
        if kwargs.get("tokenizer_object") is not None:
            kwargs["tokenizer_object"] = _Shared(kwargs["tokenizer_object"])
        path = kwargs.get("tokenizer_file") if kwargs.get("tokenizer_object") is None else None
        super().__init__(*args, **kwargs)
        if path is not None and _loads_backend_as_stock(type(self)):
            _remember_file(self._tokenizer, path)

    @classmethod
    def convert_to_native_format(cls, **kwargs):
        # Load files exactly as the stock TokenizersBackend does: transformers would otherwise treat
        # our __init__ as a model-specific rebuild and construct a bare model from vocab/merges.
        return TokenizersBackend.convert_to_native_format.__func__(TokenizersBackend, **kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        path = str(pretrained_model_name_or_path)
        if path.endswith(".json") and not kwargs:
            tokenizer = cls(*args, tokenizer_file=path)
        else:
            tokenizer = super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        tokenizer._announce(warn=True)
        return tokenizer

    def save_pretrained(self, save_directory, *args, **kwargs):
        """Stock files, plus the tokenizer's identity (blake3 of tokenizer.json) beside them."""
        from hf_tagtok.tokenizer_identity import write_identity

        saved = super().save_pretrained(save_directory, *args, **kwargs)
        if os.path.isfile(os.path.join(save_directory, "tokenizer.json")):
            saved = (*saved, str(write_identity(save_directory)))
        return saved

    @property
    def acceleration(self):
        """{stage: {"native": bool, "reason": str}} of the native tokenizer, as `hf_tagtok.Tokenizer` reports it."""
        state = self._native_state(bool(self.split_special_tokens))
        if state.tokenizer is None:
            return {stage: {"native": False, "reason": state.reason} for stage in STAGES}
        return state.tokenizer.acceleration

    def _announce(self, warn=False, stacklevel=3):
        """Log the native stages; with warn, a FallbackWarning when not all are (stacklevel: the frame
        it points at, counted from here)."""
        report = self.acceleration
        native = [stage for stage, entry in report.items() if entry["native"]]
        logger.info("hf_tagtok: %s native stages %d/%d (%s)", type(self).__name__, len(native),
                    len(report), ", ".join(native) or "none")
        if warn:
            warn_fallback(type(self).__name__, report, stacklevel=stacklevel)

    # ------------------------------------------------------------------ the native tokenizer

    def _native_state(self, split=False):
        """The NativeState for the backend as it is now and an encode_special_tokens value.

        The one staleness check: the backend object and its components key (planner.components_key, a few
        µs; a Precompiled normalizer's charsmap makes it ~230 µs, so a light call goes to stock instead:
        _stock_is_cheaper) must be those the states were built from. The key sees a token new to the backend
        added on it directly, not one it knew given other options, so the methods that add tokens forget the
        states."""
        backend = self._tokenizer
        built = _NATIVE.get(self)
        if (built is None or built.backend is not backend
                or built.key != planner.components_key(backend, built.next_added)):
            next_added = planner.next_added_id(backend)
            built = _Built(backend, next_added, planner.components_key(backend, next_added), {})
            _NATIVE[self] = built
        state = built.states.get(split)
        if state is None:  # one native tokenizer per value: the plan bakes it in
            state = built.states[split] = _build_native(self, backend, split)
        return state

    def _stock_is_cheaper(self, read):
        """Whether stock encodes a call (`_read_inputs`) for less than `_native_state`'s check costs
        (planner.stock_is_cheaper)."""
        built = _NATIVE.get(self)
        return (built is not None and built.backend is self._tokenizer
                and planner.stock_is_cheaper(built.key, itertools.chain(read[1], read[2])))

    def _forget_native(self):
        _NATIVE.pop(self, None)

    def _add_tokens(self, new_tokens, special_tokens=False):
        self._forget_native()
        return super()._add_tokens(new_tokens, special_tokens=special_tokens)

    def update_post_processor(self):
        self._forget_native()
        return super().update_post_processor()

    # ------------------------------------------------------------------ encoding

    def encode_arrow(self, text, text_pair=None, **options):
        """`self(text, text_pair, **options)` as a `pyarrow.RecordBatch` (one row per encoding; types
        in hf_tagtok.arrow), built from the native columns without a Python object per token."""
        return self(text, text_pair, return_tensors=_ARROW, **options)

    def _encode_plus(self, text, text_pair=None, **options):
        call = {**_DEFAULTS, **options}
        split = self.split_special_tokens if call["split_special_tokens"] is None else call["split_special_tokens"]
        read = None if call.get("sanitize_control_tokens") else _read_inputs(text, text_pair,
                                                                             call["is_split_into_words"])
        native = None if read is None or self._stock_is_cheaper(read) else self._native_state(bool(split))
        if native is None or not (native.encodes or self._columns_without_native):
            return self._stock_encode_plus(text, text_pair, call, options)
        inputs, texts, pairs, batched, n_sequences = read
        truncation, padding = self._settings(call)
        if not (_valid_truncation(truncation, self._tokenizer) and _valid_padding(padding)):
            native = _STOCK_SETTINGS  # stock's enable_truncation / enable_padding raise their own exception
        words, overflowing, add_special = (call["is_split_into_words"], call["return_overflowing_tokens"],
                                           call["add_special_tokens"])
        batch = None
        if native.encodes:
            # offsets and word ids only when returned: .encodings re-encode with them if ever read
            batch = native.tokenizer._native_batch(texts, pairs, add_special, words, overflowing,
                                                   call["return_offsets_mapping"], False,
                                                   settings=(truncation, padding), columnar=True)
        if batch is None and not native.fully_native and not self._columns_without_native:
            return self._stock_encode_plus(text, text_pair, call, options)  # a gated call some text fails
        if batch is None:  # stock encodes this call (or raises its own exception for it)
            columns, encodings = self._stock_columns(call, inputs, split, overflowing)
            return self._batch_encoding(columns, encodings, call, batched, n_sequences, padding is not None)
        one = not (batched or overflowing) and batch.firsts is None and call["return_tensors"] is None
        columns = batch.columns if one else batch.arrays(overflowing)
        encodings = _NativeEncodings(batch, batch.native, texts, pairs, add_special, words,
                                     truncation, padding, overflowing, 1 if one else len(columns.lengths))
        if one:
            return self._one_encoding(columns, encodings, call, n_sequences)
        return self._batch_encoding(columns, encodings, call, batched, n_sequences, padding is not None)

    def _stock_encode_plus(self, text, text_pair, call, options):
        """The call as the stock backend makes it (transformers' own path)."""
        if call["return_tensors"] == _ARROW:
            return arrow.from_lists(super()._encode_plus(text, text_pair, **{**options, "return_tensors": None}))
        return super()._encode_plus(text, text_pair, **options)

    def _settings(self, call):
        """(truncation, padding) of a call as `set_truncation_and_padding` writes them on the backend
        (dicts as `tokenizers.Tokenizer` reports them, None when off), computed without the backend."""
        truncation = padding = None
        strategy = TruncationStrategy(call["truncation_strategy"])
        if strategy != TruncationStrategy.DO_NOT_TRUNCATE:
            truncation = {"max_length": call["max_length"], "stride": call["stride"], "strategy": strategy.value,
                          "direction": self.truncation_side}
        padding_strategy = PaddingStrategy(call["padding_strategy"])
        if padding_strategy != PaddingStrategy.DO_NOT_PAD:
            side = call["padding_side"]
            padding = {"length": call["max_length"] if padding_strategy == PaddingStrategy.MAX_LENGTH else None,
                       "pad_to_multiple_of": call["pad_to_multiple_of"], "pad_id": self.pad_token_id,
                       "pad_token": self.pad_token, "pad_type_id": self.pad_token_type_id,
                       "direction": side if side is not None else self.padding_side}
        return truncation, padding

    def _stock_columns(self, call, inputs, split, overflowing):
        """(columns, encodings) of this call encoded by the stock backend under the call's settings."""
        self.set_truncation_and_padding(
            padding_strategy=call["padding_strategy"], truncation_strategy=call["truncation_strategy"],
            max_length=call["max_length"], stride=call["stride"],
            pad_to_multiple_of=call["pad_to_multiple_of"], padding_side=call["padding_side"])
        backend = self._tokenizer
        if backend.encode_special_tokens != split:
            backend.encode_special_tokens = split
        encodings = backend.encode_batch(inputs, is_pretokenized=call["is_split_into_words"],
                                         add_special_tokens=call["add_special_tokens"])
        columns = _columns(encodings, overflowing, call["return_offsets_mapping"], padded=backend.padding is not None)
        if overflowing:
            encodings = [part for encoding in encodings for part in (encoding, *encoding.overflowing)]
        return columns, encodings

    def _batch_encoding(self, columns, encodings, call, batched, n_sequences, padded):
        lengths = columns.lengths
        if len(lengths) == 1:  # one text: a plain int costs less than numpy's reductions
            shortest = longest = int(lengths[0])
        else:
            shortest, longest = (int(lengths.min()), int(lengths.max())) if len(lengths) else (0, 0)
        rectangular = shortest == longest > 0
        as_numpy = rectangular and call["return_tensors"] in ("np", TensorType.NUMPY)

        fields = _requested_fields(self, call)
        wanted = _wanted(fields, columns.ids, columns.type_ids, columns.attention_mask, columns.special_tokens_mask,
                         columns.offsets)
        self._warn_if_too_long(longest, call)
        if call["return_tensors"] == _ARROW:
            scalars = [("length", lengths)] if "length" in fields else []
            if call["return_overflowing_tokens"]:
                scalars.append(("overflow_to_sample_mapping", columns.overflow_to_sample))
            return arrow.record_batch(wanted, lengths, scalars)
        if as_numpy:
            data = {key: column.astype(np.int64).reshape(len(lengths), -1, *column.shape[1:])
                    for key, column in wanted}
        else:  # every field in one call (see _lists.rows); None: no padding, so all attended
            sources = [None if key == "attention_mask" and not padded else column for key, column in wanted]
            data = dict(zip([key for key, _ in wanted], _lists.rows(sources, lengths)))
        if "length" in fields:
            data["length"] = lengths.copy() if as_numpy else lengths.tolist()
        if call["return_overflowing_tokens"]:
            mapping = columns.overflow_to_sample
            data["overflow_to_sample_mapping"] = mapping.copy() if as_numpy else mapping.tolist()
        if not batched and call["return_tensors"] is None and not call["return_overflowing_tokens"]:
            # one input: transformers drops the batch dimension of its per-token lists
            data = {key: value[0] if len(value) > 0 and isinstance(value[0], list) else value
                    for key, value in data.items()}
        tensor_type = None if as_numpy else call["return_tensors"]
        return BatchEncoding(data, encodings, tensor_type=tensor_type, n_sequences=n_sequences)

    def _one_encoding(self, columns, encodings, call, n_sequences):
        """_batch_encoding of one plain text (no pair, truncation, padding or tensors), read straight from
        the batch's columns: a short text's call costs less than the batched path's arrays and rows."""
        n = len(columns.ids)
        fields = _requested_fields(self, call)
        self._warn_if_too_long(n, call)
        data = {}
        for key, column in _wanted(fields, columns.ids, columns.type_ids, None, columns.special, columns.offsets):
            if column is None:
                data[key] = [1] * n  # the attention mask: no padding, all attended
            elif key == "offset_mapping":
                data[key] = list(map(tuple, column.tolist()))
            else:
                data[key] = column.tolist()
        if "length" in fields:
            data["length"] = [n]
        return BatchEncoding(data, encodings, tensor_type=None, n_sequences=n_sequences)

    def _warn_if_too_long(self, longest, call):
        if call["max_length"] is None and call["verbose"] and longest > self.model_max_length:
            self._eventual_warn_about_too_long_sequence(range(longest), None, True)


_STOCK_SETTINGS = NativeState(None, False, "settings stock refuses")


def _is_count(value):
    return type(value) is int and value >= 0


def _valid_truncation(truncation, backend):
    """Whether the backend takes these settings as they are (else stock raises its own exception). Its
    `enable_truncation` refuses a stride above the length left after the post-processor's tokens
    for one sequence (whether or not the call adds them); that length is unsigned, so a max_length below
    those tokens wraps around and passes."""
    if truncation is None:
        return True
    max_length, stride = truncation["max_length"], truncation["stride"]
    if not (_is_count(max_length) and _is_count(stride) and truncation["direction"] in ("left", "right")):
        return False
    room = max_length - backend.num_special_tokens_to_add(False)
    return room < 0 or room >= stride


def _valid_padding(padding):
    return padding is None or (padding["direction"] in ("left", "right") and isinstance(padding["pad_token"], str)
                               and all(value is None or _is_count(value)
                                       for value in (padding["length"], padding["pad_to_multiple_of"]))
                               and _is_count(padding["pad_id"]) and _is_count(padding["pad_type_id"]))


def _wanted(fields, ids, type_ids, attention, special, offsets):
    """[(BatchEncoding key, column)] of the requested fields, in transformers' key order."""
    return [(key, column) for key, column in (
        ("input_ids", ids), ("token_type_ids", type_ids), ("attention_mask", attention),
        ("special_tokens_mask", special), ("offset_mapping", offsets)) if key in fields]


def _requested_fields(tokenizer, call):
    fields = {"input_ids"}
    for key, flag in (("token_type_ids", "return_token_type_ids"), ("attention_mask", "return_attention_mask")):
        wanted = call[flag]
        if wanted is None:
            wanted = key in tokenizer.model_input_names
        if wanted:
            fields.add(key)
    for key, flag in (("special_tokens_mask", "return_special_tokens_mask"),
                      ("offset_mapping", "return_offsets_mapping"), ("length", "return_length")):
        if call[flag]:
            fields.add(key)
    return fields


class _Source(NamedTuple):
    """The configuration text a backend was made from: the tokenizer.json file stock loaded it from (path, with
    the file's (size, mtime_ns) then), or the text a copy was read from (text)."""
    path: Optional[str]
    stat: Optional[tuple]
    text: Optional[str]
    model_key: tuple  # planner.model_key(backend, _SOURCE_PROBES) when the backend was made


# backend -> _Source
_SOURCES = weakref.WeakKeyDictionary()
_SOURCE_PROBES = 64


@functools.lru_cache(maxsize=None)
def _loads_backend_as_stock(cls):
    """Whether cls's backend is, once made, the tokenizer.json file as stock loaded it (TokenizersBackend loads a
    given `tokenizer_file` and sets only components, added tokens, truncation and padding): no class of its
    ancestry but ours runs an __init__ of its own that could change the model."""
    ancestry = cls.__mro__[: cls.__mro__.index(TokenizersBackend)]
    return all(klass is TagTokenizerFast or "__init__" not in vars(klass) for klass in ancestry)


def _file_stat(path):
    status = os.stat(path)
    return status.st_size, status.st_mtime_ns


def _remember_file(backend, path):
    if os.path.isfile(path):
        _SOURCES[backend] = _Source(path, _file_stat(path), None, planner.model_key(backend, _SOURCE_PROBES))


def _remember_text(backend, text):
    _SOURCES[backend] = _Source(None, None, text, planner.model_key(backend, _SOURCE_PROBES))


def _config_text(backend):
    """(the configuration text to plan from, whether it is the backend's own to_str())."""
    text = _text_from_source(backend)
    return (text, False) if text is not None else (planner.config_text(backend), True)


def _text_from_source(backend):
    """The configuration read from the text the backend was made from, while that file and the backend's model
    look as they did then; else None. A copy's text is held until this first reads it."""
    source = _SOURCES.get(backend)
    if source is None:
        return None
    if source.text is not None:
        del _SOURCES[backend]
        text = source.text
    else:
        try:
            if _file_stat(source.path) != source.stat:
                return None
            with open(source.path, "rb") as file:
                text = file.read().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    if planner.model_key(backend, _SOURCE_PROBES) != source.model_key:
        return None
    try:
        return planner.config_as_loaded(backend, text)
    except ValueError:  # a text the configuration reader cannot walk: stock writes its own
        return None


def _build_native(tokenizer, backend, split):
    """The NativeState for one encode_special_tokens value. The native tokenizer wraps the backend itself
    (no second copy of the vocabulary to parse and hold); every call hands it its settings."""
    try:
        text, written_by_stock = _config_text(backend)
    except Exception as error:  # e.g. Python components: the backend cannot be serialized
        return NativeState(None, False, f"stock encodes: no native tokenizer ({error})")
    if written_by_stock:
        fingerprint.remember(tokenizer, backend, text)
    current = backend.encode_special_tokens
    backend.encode_special_tokens = split  # the plan bakes it in
    try:
        native = Tokenizer(backend, text, _private=True)
    finally:
        backend.encode_special_tokens = current
    return NativeState(native, native._native is not None, None)


def _read_inputs(text, text_pair, words):
    """(encode_batch inputs, first sequences, second sequences (None where single), batched?, n_sequences)
    as transformers forms them from a call, or None when the call is not plainly valid (stock then runs it
    and raises its own exception)."""
    sequence = _is_words if words else _is_text
    batched = isinstance(text, (list, tuple)) and bool(text) and (not words or isinstance(text[0], (list, tuple)))
    if not batched:
        if not sequence(text) or not (text_pair is None or sequence(text_pair)):
            return None
        if text_pair:
            return [(text, text_pair)], [text], [text_pair], False, 2
        return [text], [text], [None], False, 1
    if not _all_sequences(sequence, text, words):
        return None
    texts = list(text)
    if text_pair is None:
        return texts, texts, [None] * len(texts), True, 1
    if not (isinstance(text_pair, (list, tuple)) and len(text_pair) == len(text)
            and _all_sequences(sequence, text_pair, words)):
        return None
    return list(zip(text, text_pair)), texts, list(text_pair), True, 2


def _all_sequences(sequence, items, words):
    """all(map(sequence, items)); for texts, a list of exact `str` is recognised without a call per item."""
    return (not words and _all_str(items)) or all(map(sequence, items))


class _NativeEncodings(collections.abc.Sequence):
    """The `Encoding`s of a native call, in transformers' order (each input's, then its overflow when
    asked), as views on the batch's columns.

    A call that does not return overflow encodes none (`main_only`), but stock's encodings still list
    theirs in `overflowing`; a plain call computes no offsets or word ids unless it returns them: such a
    batch is encoded again natively, with everything, the first time an encoding is read."""

    def __init__(self, batch, encoder, texts, pairs, add_special_tokens, pretokenized, truncation, padding,
                 overflowing, count):
        self._batch, self._count = batch, count
        self._again = None
        lean = batch.columns.offsets is None or batch.columns.words is None
        if lean or (truncation is not None and not overflowing):
            self._again = (encoder, texts, pairs, add_special_tokens, pretokenized, truncation, padding, batch.given)
        self._encodings = None

    def _materialize(self):
        if self._encodings is None:
            batch = self._batch
            if self._again is not None:
                encoder, texts, pairs, add_special, pretokenized, truncation, padding, given = self._again
                batch = native_batch(encoder, texts, pairs, add_special, pretokenized, truncation, padding,
                                     overflowing=True, given=given)
                firsts = range(len(batch.records)) if batch.firsts is None else batch.firsts.tolist()
                items = range(len(firsts))
            else:
                firsts = range(len(batch.records))
                items = _items(batch)
            bounds = batch.records[:, RECORD_BOUNDS].tolist()
            self._encodings = [Encoding(batch, index, item, *bounds[index]) for index, item in zip(firsts, items)]
            self._batch = self._again = None
        return self._encodings

    def __len__(self):
        return self._count

    def __getitem__(self, index):
        return self._materialize()[index]

    def __reduce__(self):
        return list, (list(self._materialize()),)

    def __repr__(self):
        return repr(self._materialize())


def _items(batch):
    """The input each encoding of a batch belongs to."""
    n = len(batch.records)
    if batch.firsts is None:
        return range(n)
    return np.repeat(np.arange(len(batch.firsts)), np.diff(np.append(batch.firsts, n))).tolist()


# ---------------------------------------------------------------------- accelerated model classes

def accelerated_class(base):
    """`TagTokenizerFast` mixed into a model-specific transformers class, keeping its other methods."""
    if issubclass(base, TagTokenizerFast):
        return base
    if not issubclass(base, TokenizersBackend):
        raise TypeError(f"hf_tagtok accelerates transformers fast tokenizers, not {base.__name__}")
    if base is TokenizersBackend:
        return TagTokenizerFast
    return _mixed_class(base)


_MIXED = {}


def _mixed_class(base):
    cls = _MIXED.get(base)
    if cls is not None:
        return cls
    if getattr(transformers, base.__name__, None) is not base:
        raise TypeError(f"{base.__name__} is not a transformers class; subclass TagTokenizerFast instead")
    for klass in base.__mro__[: base.__mro__.index(TokenizersBackend)]:
        overridden = [name for name in _ENCODE_PATH if name in vars(klass)]
        if overridden:
            raise ValueError(f"{klass.__name__} overrides {', '.join(overridden)}: its encoding stays stock")
    # __name__ stays the base's so save_pretrained writes a class plain transformers loads as stock.
    cls = type(base.__name__, (TagTokenizerFast, base),
               {"__module__": __name__, "__qualname__": ACCELERATED_PREFIX + base.__name__})
    fingerprint.register(cls)
    _MIXED[base] = cls
    return cls


def __getattr__(name):
    # PEP 562: pickle finds an accelerated model class by its qualified name.
    if name.startswith(ACCELERATED_PREFIX):
        return _mixed_class(getattr(transformers, name[len(ACCELERATED_PREFIX):]))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def copy_backend(backend):
    """An independent copy of a stock tokenizer; one holding Python components cannot be copied, so share it."""
    import tokenizers
    try:
        text = planner.config_text(backend)
        clone = tokenizers.Tokenizer.from_str(text)
    except Exception:  # custom (Python) components refuse to serialize
        return backend
    clone.encode_special_tokens = backend.encode_special_tokens
    _remember_text(clone, text)  # its native tokenizer is planned from it: stock need not write it again
    return clone


class _Shared:
    """Hands the stock constructor our object where it would deep-copy (and fail on Python components)."""

    def __init__(self, backend):
        self.backend = backend

    def __deepcopy__(self, memo):
        return copy_backend(self.backend)


fingerprint.register(TagTokenizerFast)
