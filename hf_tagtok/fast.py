"""transformers integration: `TagTokenizerFast`, `accelerate`, `patch_transformers`, AutoTokenizer registration.

The class itself lives in `hf_tagtok.tag_tokenizer_fast`, which imports transformers; this module loads
it on first use, so `import hf_tagtok` stays cheap, yet `AutoTokenizer` knows our class: registration
hooks the import of transformers' auto module.
"""
import copy
import importlib
import importlib.util
import logging

from hf_tagtok._after_import import call_after_import
from hf_tagtok.fallback import fallback_reasons, warn_fallback

logger = logging.getLogger("hf_tagtok")

_AUTO_MODULE = "transformers.models.auto.tokenization_auto"
_CLASS_MODULE = "hf_tagtok.tag_tokenizer_fast"
# save_pretrained drops a trailing "Fast" from the class name, so both spellings must resolve.
_SAVED_NAMES = ("TagTokenizerFast", "TagTokenizer")


def _require_transformers():
    if importlib.util.find_spec("transformers") is None:
        raise ModuleNotFoundError("TagTokenizerFast needs transformers: pip install -e '.[hf]' in the hf_tagtok "
                                  "checkout", name="transformers")


def _class_module():
    _require_transformers()
    return importlib.import_module(_CLASS_MODULE)


def __getattr__(name):
    # PEP 562: the class module (and transformers) is imported on first access, also by pickle.
    if name == "TagTokenizerFast" or name.startswith("_Accelerated_"):
        return getattr(_class_module(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_auto_classes():
    """Make `AutoTokenizer` resolve directories saved by `TagTokenizerFast` (now or once imported)."""
    call_after_import(_AUTO_MODULE, _register)


def _register(auto_module):
    cls = _class_module().TagTokenizerFast
    for name in _SAVED_NAMES:
        auto_module.REGISTERED_TOKENIZER_CLASSES[name] = cls


def accelerate(tokenizer):
    """The accelerated copy of a loaded fast tokenizer: same state, a copied backend, native encoding.

    One that is not fully native (stock encodes what the native pipeline does not cover, with identical
    outputs) comes with one `hf_tagtok.FallbackWarning` saying why; `acceleration` has the full report."""
    accelerated = _accelerated_copy(tokenizer)
    accelerated._announce(warn=True)
    return accelerated


def _accelerated_copy(tokenizer):
    module = _class_module()
    accelerated = _accelerated_instance(tokenizer)
    state = {key: value for key, value in tokenizer.__dict__.items() if key != "_tokenizer"}
    accelerated.__dict__.update(copy.deepcopy(state))
    accelerated.__dict__["_tokenizer"] = module.copy_backend(tokenizer._tokenizer)
    return accelerated


def _accelerated_in_place_of(tokenizer):
    """The accelerated tokenizer holding `tokenizer`'s own state and backend, for a tokenizer no one else holds
    (AutoTokenizer's, which patch_transformers replaces): nothing is copied, so what its class's __init__ set
    on the backend object stays (CLIP's wrapped `decode`), and a model class that keeps its vocabulary and merges
    in `init_kwargs` is not deep-copied (1.7 s for Qwen2's)."""
    accelerated = _accelerated_instance(tokenizer)
    accelerated.__dict__.update(tokenizer.__dict__)
    return accelerated


def _accelerated_instance(tokenizer):
    cls = _class_module().accelerated_class(type(tokenizer))
    return cls.__new__(cls)


def patch_transformers():
    """Make `AutoTokenizer.from_pretrained` return the tokenizer it loaded as its accelerated class whenever that
    runs natively: fully, or gated (a normalizer's refused Replace steps: hf_tagtok.gate; with a FallbackWarning)."""
    _class_module()
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
    """The accelerated tokenizer in place of `tokenizer` when it runs natively (fully, or gated); else the stock
    tokenizer, with one FallbackWarning (pointing at the caller of from_pretrained) and the accelerated one's report
    as its `acceleration`."""
    from hf_tagtok.tokenizer import STAGES

    if isinstance(tokenizer, _class_module().TagTokenizerFast):  # its own from_pretrained announced it
        return tokenizer
    try:
        accelerated = _accelerated_in_place_of(tokenizer)
    except (TypeError, ValueError) as error:
        report = {stage: {"native": False, "reason": f"not accelerated: {error}"} for stage in STAGES}
    else:
        state = accelerated._native_state(bool(accelerated.split_special_tokens))
        if state.encodes:  # a gated one (hf_tagtok.gate) warns that stock encodes the texts its gate fails
            accelerated._announce(warn=not state.fully_native, stacklevel=4)
            return accelerated
        report = accelerated.acceleration
    logger.info("hf_tagtok: keeping stock %s: %s", type(tokenizer).__name__, fallback_reasons(report))
    tokenizer.acceleration = report
    warn_fallback(f"the stock {type(tokenizer).__name__} returned by AutoTokenizer", report, stacklevel=3)
    return tokenizer
