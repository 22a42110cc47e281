"""`TagTokenizerFast`: transformers' fast tokenizer, encoding through `hf_tagtok.Tokenizer`.

The stock backend (`tokenizers.Tokenizer`) stays authoritative: it serializes, decodes, renders chat
templates and encodes every call the native path does not cover (chat-template control tokens,
tokenizers with a stage that is not native). Texts, pre-split words and pairs of either, with any
truncation (and overflow) and padding, go native: the twin gets the backend's settings, and its columns are written
straight into the `BatchEncoding` (hf_tagtok._lists builds the per-text lists).

The native twin lives outside the instance `__dict__` (in `_TWINS`), so pickle, dill, deepcopy and
`datasets` fingerprinting see exactly the stock state and a copy rebuilds its own twin on first use.

transformers is imported only when a class here is first used: `import hf_tagtok` must stay cheap,
yet `AutoTokenizer` must know our class, so registration hooks the import of transformers' auto module.
"""
import collections.abc
import copy
import functools
import importlib.util
import inspect
import logging
import os
import weakref
from typing import NamedTuple, Optional

from hf_tagtok import arrow, fingerprint
from hf_tagtok._after_import import call_after_import
from hf_tagtok.fallback import fallback_reasons, warn_fallback

logger = logging.getLogger("hf_tagtok")

_AUTO_MODULE = "transformers.models.auto.tokenization_auto"
# save_pretrained drops a trailing "Fast" from the class name, so both spellings must resolve.
_SAVED_NAMES = ("TagTokenizerFast", "TagTokenizer")
# Methods a subclass may not override if our encode path is to stand in for it.
_ENCODE_PATH = ("__call__", "encode", "_encode_plus", "set_truncation_and_padding", "_convert_encoding")
_TWIN_PREFIX = "_Accelerated_"
_ARROW = "arrow"  # return_tensors value of encode_arrow: the batch as a pyarrow RecordBatch

# tokenizer instance -> (backend the twins were built from, {encode_special_tokens: (twin or None, fully native?, why no twin)})
_TWINS = weakref.WeakKeyDictionary()


# ---------------------------------------------------------------------- registration

def register_auto_classes():
    """Make `AutoTokenizer` resolve directories saved by `TagTokenizerFast` (now or once imported)."""
    call_after_import(_AUTO_MODULE, _register)


def _register(auto_module):
    cls = _tag_class()
    for name in _SAVED_NAMES:
        auto_module.REGISTERED_TOKENIZER_CLASSES[name] = cls


def __getattr__(name):
    # PEP 562: the classes are built (importing transformers) on first access, also by pickle.
    if name == "TagTokenizerFast":
        return _tag_class()
    if name.startswith(_TWIN_PREFIX):
        import transformers
        return _twin_class(getattr(transformers, name[len(_TWIN_PREFIX):]))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------- public helpers

def accelerate(tokenizer):
    """The accelerated twin of a loaded fast tokenizer: same state, a copied backend, native encoding.

    A twin that is not fully native (stock encodes what the native pipeline does not cover, with identical
    outputs) comes with one `hf_tagtok.FallbackWarning` saying why; `acceleration` has the full report."""
    twin = _twin_of(tokenizer)
    twin._announce(warn=True)
    return twin


def _twin_of(tokenizer):
    cls = _accelerated_class(type(tokenizer))
    twin = cls.__new__(cls)
    state = {key: value for key, value in tokenizer.__dict__.items() if key != "_tokenizer"}
    twin.__dict__.update(copy.deepcopy(state))
    twin.__dict__["_tokenizer"] = _copy_backend(tokenizer._tokenizer)
    return twin


def patch_transformers():
    """Make `AutoTokenizer.from_pretrained` return the accelerated twin whenever it can run natively."""
    _require_transformers()
    from transformers import AutoTokenizer
    original = AutoTokenizer.__dict__["from_pretrained"]
    if hasattr(original.__func__, "_hf_tagtok_original"):
        return

    def from_pretrained(cls, *args, **kwargs):
        tokenizer = original.__get__(None, cls)(*args, **kwargs)
        return _accelerated_or_stock(tokenizer)

    from_pretrained._hf_tagtok_original = original
    from_pretrained.__doc__ = original.__func__.__doc__
    AutoTokenizer.from_pretrained = classmethod(from_pretrained)


def unpatch_transformers():
    """Undo `patch_transformers` (a no-op when not patched)."""
    from transformers import AutoTokenizer
    patched = AutoTokenizer.__dict__["from_pretrained"]
    original = getattr(patched.__func__, "_hf_tagtok_original", None)
    if original is not None:
        AutoTokenizer.from_pretrained = original


def _accelerated_or_stock(tokenizer):
    """The twin when it runs fully natively; else the stock tokenizer, with one FallbackWarning (pointing at
    the caller of from_pretrained) and the twin's report as its `acceleration`."""
    from hf_tagtok.tokenizer import STAGES

    tag = _tag_class()
    if isinstance(tokenizer, tag):  # its own from_pretrained announced it
        return tokenizer
    try:
        twin = _twin_of(tokenizer)
    except (TypeError, ValueError) as error:
        report = {stage: {"native": False, "reason": f"not accelerated: {error}"} for stage in STAGES}
    else:
        if twin._twin(bool(twin.split_special_tokens))[1]:
            twin._announce()
            return twin
        report = twin.acceleration
    logger.info("hf_tagtok: keeping stock %s: %s", type(tokenizer).__name__, fallback_reasons(report))
    tokenizer.acceleration = report
    warn_fallback(f"the stock {type(tokenizer).__name__} returned by AutoTokenizer", report, stacklevel=3)
    return tokenizer


def _accelerated_class(cls):
    from transformers.tokenization_utils_tokenizers import TokenizersBackend
    tag = _tag_class()
    if issubclass(cls, tag):
        return cls
    if not issubclass(cls, TokenizersBackend):
        raise TypeError(f"hf_tagtok accelerates transformers fast tokenizers, not {cls.__name__}")
    if cls is TokenizersBackend:
        return tag
    return _twin_class(cls)


@functools.lru_cache(maxsize=None)
def _twin_class(base):
    """`TagTokenizerFast` mixed into a model-specific transformers class, keeping its other methods."""
    import transformers
    from transformers.tokenization_utils_tokenizers import TokenizersBackend
    if getattr(transformers, base.__name__, None) is not base:
        raise TypeError(f"{base.__name__} is not a transformers class; subclass TagTokenizerFast instead")
    for klass in base.__mro__[: base.__mro__.index(TokenizersBackend)]:
        overridden = [name for name in _ENCODE_PATH if name in vars(klass)]
        if overridden:
            raise ValueError(f"{klass.__name__} overrides {', '.join(overridden)}: its encoding stays stock")
    # __name__ stays the base's so save_pretrained writes a class plain transformers loads as stock.
    twin = type(base.__name__, (_tag_class(), base),
                {"__module__": __name__, "__qualname__": _TWIN_PREFIX + base.__name__})
    fingerprint.register(twin)
    return twin


def _copy_backend(backend):
    """An independent copy of a stock tokenizer; one holding Python components cannot be copied, so share it."""
    import tokenizers

    from hf_tagtok import models
    try:
        clone = tokenizers.Tokenizer.from_str(models.config_text(backend))
    except Exception:  # custom (Python) components refuse to serialize; sparse ids would cost memory per id
        return backend
    clone.encode_special_tokens = backend.encode_special_tokens
    return clone


class _Shared:
    """Hands the stock constructor our object where it would deep-copy (and fail on Python components)."""

    def __init__(self, backend):
        self.backend = backend

    def __deepcopy__(self, memo):
        return _copy_backend(self.backend)


# ---------------------------------------------------------------------- the tokenizer class

def _require_transformers():
    if importlib.util.find_spec("transformers") is None:
        raise ModuleNotFoundError("TagTokenizerFast needs transformers: pip install -e '.[hf]' in the hf_tagtok "
                                  "checkout", name="transformers")


@functools.lru_cache(maxsize=None)
def _tag_class():
    _require_transformers()
    import numpy as np
    from transformers.tokenization_utils_base import BatchEncoding, TensorType
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    from hf_tagtok import _lists
    from hf_tagtok.tokenizer import STAGES

    defaults = {name: parameter.default
                for name, parameter in inspect.signature(TokenizersBackend._encode_plus).parameters.items()
                if parameter.default is not inspect.Parameter.empty}

    class TagTokenizerFast(TokenizersBackend):
        """A `PreTrainedTokenizerFast` (transformers 5 `TokenizersBackend`) whose encoding runs natively.

        Outputs are identical to the stock class loaded from the same files; `acceleration` reports
        which stages run natively. Saved directories hold only stock files.
        """

        # Run the columnar path even when the twin falls back to stock internally (tests use this to
        # check the BatchEncoding assembly on every tokenizer, not only on fully native ones).
        _columns_without_native = False

        def __init__(self, *args, **kwargs):
            if kwargs.get("tokenizer_object") is not None:
                kwargs["tokenizer_object"] = _Shared(kwargs["tokenizer_object"])
            super().__init__(*args, **kwargs)

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
            """{stage: {"native": bool, "reason": str}} of the native twin, as `hf_tagtok.Tokenizer` reports it."""
            twin, _, reason = self._twin(bool(self.split_special_tokens))
            if twin is None:
                return {stage: {"native": False, "reason": reason} for stage in STAGES}
            return twin.acceleration

        def _announce(self, warn=False, stacklevel=3):
            """Log the native stages; with warn, a FallbackWarning when not all are (stacklevel: the frame
            it points at, counted from here)."""
            report = self.acceleration
            native = [stage for stage, entry in report.items() if entry["native"]]
            logger.info("hf_tagtok: %s native stages %d/%d (%s)", type(self).__name__, len(native),
                        len(report), ", ".join(native) or "none")
            if warn:
                warn_fallback(type(self).__name__, report, stacklevel=stacklevel)

        # -------------------------------------------------------------- keeping the twin in sync

        def _twin(self, split=False):
            """(twin or None, fully native?, why no twin) for the backend and an encode_special_tokens value."""
            entry = _TWINS.get(self)
            if entry is None or entry[0] is not self._tokenizer:
                entry = (self._tokenizer, {})
                _TWINS[self] = entry
            twins = entry[1]
            if split not in twins:  # one twin per value: switching a built twin re-plans it
                twins[split] = _build_twin(self, split)
            return twins[split]

        def _forget_twin(self):
            _TWINS.pop(self, None)

        def _add_tokens(self, new_tokens, special_tokens=False):
            self._forget_twin()
            return super()._add_tokens(new_tokens, special_tokens=special_tokens)

        def update_post_processor(self):
            self._forget_twin()
            return super().update_post_processor()

        # -------------------------------------------------------------- encoding

        def encode_arrow(self, text, text_pair=None, **options):
            """`self(text, text_pair, **options)` as a `pyarrow.RecordBatch` (one row per encoding; types
            in hf_tagtok.arrow), built from the native columns without a Python object per token."""
            return self(text, text_pair, return_tensors=_ARROW, **options)

        def _encode_plus(self, text, text_pair=None, **options):
            call = {**defaults, **options}
            twin = self._columnar_twin(call)
            read = _read_inputs(text, text_pair, call["is_split_into_words"]) if twin is not None else None
            if read is None:
                if call["return_tensors"] == _ARROW:
                    return arrow.from_lists(super()._encode_plus(text, text_pair, **{**options, "return_tensors": None}))
                return super()._encode_plus(text, text_pair, **options)
            inputs, batched, n_sequences = read
            self.set_truncation_and_padding(
                padding_strategy=call["padding_strategy"], truncation_strategy=call["truncation_strategy"],
                max_length=call["max_length"], stride=call["stride"],
                pad_to_multiple_of=call["pad_to_multiple_of"], padding_side=call["padding_side"])
            backend = self._tokenizer  # the twin wraps it: truncation, overflow and padding run natively
            settings = _Settings(backend.padding, backend.truncation, backend.encode_special_tokens)
            words, overflowing, add_special = (call["is_split_into_words"], call["return_overflowing_tokens"],
                                               call["add_special_tokens"])
            columns = twin.encode_batch_arrays(inputs, add_special_tokens=add_special, overflowing=overflowing,
                                               is_pretokenized=words)
            encodings = _LazyEncodings(backend, inputs, words, add_special, settings, overflowing,
                                       len(columns.lengths))
            return self._batch_encoding(columns, encodings, call, batched, n_sequences)

        def _columnar_twin(self, call):
            """The twin to encode with, or None when this call belongs to the stock path."""
            if call.get("sanitize_control_tokens"):
                return None
            split = self.split_special_tokens if call["split_special_tokens"] is None else call["split_special_tokens"]
            if self._tokenizer.encode_special_tokens != split:
                self._tokenizer.encode_special_tokens = split
            twin, native, _ = self._twin(bool(split))
            if twin is None:
                return None
            return twin if native or self._columns_without_native else None

        def _batch_encoding(self, columns, encodings, call, batched, n_sequences):
            lengths = columns.lengths
            padded = encodings.settings.padding is not None
            if len(lengths) == 1:  # one text: a plain int costs less than numpy's reductions
                shortest = longest = int(lengths[0])
            else:
                shortest, longest = (int(lengths.min()), int(lengths.max())) if len(lengths) else (0, 0)
            rectangular = shortest == longest > 0
            as_numpy = rectangular and call["return_tensors"] in ("np", TensorType.NUMPY)

            fields = _requested_fields(self, call)
            wanted = [(key, column) for key, column in (
                ("input_ids", columns.ids), ("token_type_ids", columns.type_ids),
                ("attention_mask", columns.attention_mask), ("special_tokens_mask", columns.special_tokens_mask),
                ("offset_mapping", columns.offsets)) if key in fields]
            if call["return_tensors"] == _ARROW:
                scalars = [("length", lengths)] if "length" in fields else []
                if call["return_overflowing_tokens"]:
                    scalars.append(("overflow_to_sample_mapping", columns.overflow_to_sample))
                self._warn_if_too_long(longest, call)
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

            self._warn_if_too_long(longest, call)
            tensor_type = None if as_numpy else call["return_tensors"]
            output = BatchEncoding(data, encodings, tensor_type=tensor_type, n_sequences=n_sequences)
            if not batched and call["return_tensors"] is None and not call["return_overflowing_tokens"]:
                output = BatchEncoding({key: value[0] if len(value) > 0 and isinstance(value[0], list) else value
                                        for key, value in output.items()}, output.encodings, n_sequences=n_sequences)
            return output

        def _warn_if_too_long(self, longest, call):
            if call["max_length"] is None and call["verbose"] and longest > self.model_max_length:
                self._eventual_warn_about_too_long_sequence(range(longest), None, True)

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

    TagTokenizerFast.__module__, TagTokenizerFast.__qualname__ = __name__, "TagTokenizerFast"
    fingerprint.register(TagTokenizerFast)
    return TagTokenizerFast


def _build_twin(tokenizer, split):
    """The native twin for one encode_special_tokens value. It wraps the backend itself (no second copy
    of the vocabulary to parse and hold), so it always sees the backend's current truncation and padding."""
    from hf_tagtok import models
    from hf_tagtok.tokenizer import Tokenizer
    backend = tokenizer._tokenizer
    try:
        text = models.config_text(backend)
    except Exception as error:  # e.g. Python components or sparse ids: the backend cannot be serialized
        return None, False, f"stock encodes: no native twin ({error})"
    fingerprint.remember(tokenizer, backend, text)
    current = backend.encode_special_tokens
    backend.encode_special_tokens = split  # the plan bakes it in; calls set the backend's value per call
    try:
        twin = Tokenizer(backend, text)
    finally:
        backend.encode_special_tokens = current
    return twin, _fully_native(twin), None


def _fully_native(twin):
    return all(entry["native"] for entry in twin.acceleration.values())


def _read_inputs(text, text_pair, words):
    """(encode_batch inputs, batched?, n_sequences) as transformers forms them from a call, or None when
    the call is not plainly valid (stock then runs it and raises its own exception)."""
    from hf_tagtok.tokenizer import _is_text, _is_words
    sequence = _is_words if words else _is_text
    batched = isinstance(text, (list, tuple)) and bool(text) and (not words or isinstance(text[0], (list, tuple)))
    if not batched:
        if not sequence(text) or not (text_pair is None or sequence(text_pair)):
            return None
        return ([(text, text_pair)] if text_pair else [text]), False, 2 if text_pair else 1
    if not all(sequence(item) for item in text):
        return None
    if text_pair is None:
        return list(text), True, 1
    if not (isinstance(text_pair, (list, tuple)) and len(text_pair) == len(text)
            and all(sequence(item) for item in text_pair)):
        return None
    return list(zip(text, text_pair)), True, 2


class _Settings(NamedTuple):
    """The backend settings an encode call ran under (dicts as `tokenizers.Tokenizer` reports them)."""
    padding: Optional[dict]
    truncation: Optional[dict]
    encode_special_tokens: bool

    def apply(self, tokenizer):
        """Give the stock `tokenizer` these settings."""
        if tokenizer.padding != self.padding:
            if self.padding is None:
                tokenizer.no_padding()
            else:
                tokenizer.enable_padding(**self.padding)
        if tokenizer.truncation != self.truncation:
            if self.truncation is None:
                tokenizer.no_truncation()
            else:
                tokenizer.enable_truncation(**self.truncation)
        if tokenizer.encode_special_tokens != self.encode_special_tokens:
            tokenizer.encode_special_tokens = self.encode_special_tokens


class _LazyEncodings(collections.abc.Sequence):
    """The stock `tokenizers.Encoding`s of a call, computed only when a BatchEncoding helper needs them.

    They come from the stock backend under the settings captured at call time (overflowing encodings
    flattened after their input's, as transformers lists them), so `tokens()`, `word_ids()`,
    `char_to_token()`... answer exactly as stock would.
    """

    def __init__(self, backend, inputs, is_pretokenized, add_special_tokens, settings, overflowing, count):
        self._backend, self._inputs, self._is_pretokenized = backend, inputs, is_pretokenized
        self._add_special_tokens, self.settings, self._overflowing, self._count = (add_special_tokens, settings,
                                                                                  overflowing, count)
        self._encodings = None

    def _materialize(self):
        if self._encodings is None:
            backend = self._backend
            saved = _Settings(backend.padding, backend.truncation, backend.encode_special_tokens)
            self.settings.apply(backend)
            try:
                encodings = backend.encode_batch(self._inputs, is_pretokenized=self._is_pretokenized,
                                                 add_special_tokens=self._add_special_tokens)
            finally:
                saved.apply(backend)
            if self._overflowing:
                encodings = [part for encoding in encodings for part in (encoding, *encoding.overflowing)]
            self._encodings = encodings
            self._backend = None
        return self._encodings

    def __len__(self):
        return self._count

    def __getitem__(self, index):
        return self._materialize()[index]

    def __reduce__(self):
        return list, (list(self._materialize()),)

    def __repr__(self):
        return repr(self._materialize())
