"""`datasets` fingerprints of our tokenizers without re-serializing their vocabulary on every `map`.

`Dataset.map` hashes the mapped function, and so pickles the tokenizer it closes over; the stock
backend's pickle state is its whole tokenizer.json (a tenth of a second or more for a vocabulary of 100k
tokens), which outweighs the tokenization itself on small datasets. For our classes, datasets' hashing pickler
gets the very bytes its own tokenizer reducer writes (so the fingerprint is unchanged, across runs
and versions of us), with the backend's state taken from a cache.

The cache entry is reused only while the backend is the same object and everything cheap to read
still matches: components, added tokens, model type, model settings, vocabulary size and a sample of
token names. Real pickling, copying and multiprocessing never see this: only the hashing pickler
(`datasets.utils._dill.Pickler`) dispatches here.
"""
import copyreg
import sys
import weakref

from hf_tagtok import planner
from hf_tagtok._after_import import call_after_import

_DATASETS_PICKLER = "datasets.utils._dill"
_CLASSES = set()
# tokenizer -> (backend, signature, backend pickle state with truncation and padding off)
_STATES = weakref.WeakKeyDictionary()
_PROBES = 64  # token names read for the signature, spread over the vocabulary


def register(cls):
    """Hash instances of `cls` (a TokenizersBackend subclass of ours) through the state cache."""
    _CLASSES.add(cls)
    call_after_import(_DATASETS_PICKLER, _install)


def remember(tokenizer, backend, json_text):
    """Seed the cache with the backend's tokenizer.json text, read anyway to build the native tokenizer.

    Only when datasets is loaded (the cache holds the whole text) and the text is the state datasets
    hashes (truncation and padding off)."""
    if _DATASETS_PICKLER in sys.modules and backend.truncation is None and backend.padding is None:
        _STATES[tokenizer] = (backend, _signature(backend), json_text.encode())


def _install(module):
    if not hasattr(module, "_save_transformersPreTrainedTokenizerBase"):
        return  # a datasets version we do not mirror: its own reducer runs, only slower
    for cls in _CLASSES:
        module.Pickler.dispatch[cls] = _save_for_hashing


class _CachedBackend:
    """Pickles exactly as the backend would (same reduce tuple), with the state bytes from the cache."""

    def __init__(self, backend, state):
        self._reduced = (copyreg.__newobj__, (type(backend), *backend.__getnewargs__()), state, None, None)
        self._backend_class = type(backend)

    @property
    def __class__(self):  # pickle checks that __newobj__'s class is the object's class
        return self._backend_class

    def __reduce_ex__(self, protocol):
        return self._reduced


def _save_for_hashing(pickler, obj):
    # Mirrors datasets' _save_transformersPreTrainedTokenizerBase, whose backend state is hashed with
    # truncation and padding off (transformers sets them on every call).
    from datasets.utils._dill import log

    state = obj.__dict__.copy()
    for key in ("cache", "deprecation_warnings"):
        if key in state and isinstance(state[key], dict):
            state[key] = {}
    backend = state.get("_tokenizer")
    if backend is not None:
        try:
            state["_tokenizer"] = _CachedBackend(backend, _backend_state(obj, backend))
        except Exception:  # e.g. Python components, which refuse to serialize: datasets decides what then
            from datasets.utils._dill import _save_transformersPreTrainedTokenizerBase
            return _save_transformersPreTrainedTokenizerBase(pickler, obj)
    log(pickler, f"Tok: {obj}")
    pickler.save_reduce(type(obj), (), state=state, obj=obj)
    log(pickler, "# Tok")


def _backend_state(tokenizer, backend):
    signature = _signature(backend)
    cached = _STATES.get(tokenizer)
    if cached is not None and cached[0] is backend and cached[1] == signature:
        return cached[2]
    truncation, padding = backend.truncation, backend.padding
    backend.no_truncation()
    backend.no_padding()
    try:
        state = backend.__getstate__()
    finally:
        if truncation is not None:
            backend.enable_truncation(**truncation)
        if padding is not None:
            backend.enable_padding(**padding)
    _STATES[tokenizer] = (backend, signature, state)
    return state


def _signature(backend):
    """Everything in the backend's state that is cheap to read (all of it but most token names and merges)."""
    decoder = None if backend.decoder is None else backend.decoder.__getstate__()
    added_tokens = backend.get_added_tokens_decoder()
    added = tuple((token_id, repr(token)) for token_id, token in sorted(added_tokens.items()))
    size = backend.get_vocab_size(with_added_tokens=False)
    key = planner.plan_key(backend, planner.next_added_id(backend, added_tokens))
    return key, decoder, added, planner.model_probes(backend.model, size, _PROBES)
