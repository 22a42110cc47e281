"""hf_tagtok: byte-exact, fast Hugging Face tokenization.

Public names resolve lazily so `import hf_tagtok` stays cheap and optional dependencies
(transformers, blake3, PIL) are only imported by the feature that needs them.
"""
import importlib
import importlib.util

__version__ = "0.1.0"

_LAZY = {
    "pre_tokenizers": ("hf_tagtok.pre_tokenizers", None),
    "Tokenizer": ("hf_tagtok.tokenizer", "Tokenizer"),
    "Encoding": ("hf_tagtok.encoding", "Encoding"),
    "TagTokenizerFast": ("hf_tagtok.fast", "TagTokenizerFast"),
    "accelerate": ("hf_tagtok.fast", "accelerate"),
    "FallbackWarning": ("hf_tagtok.fallback", "FallbackWarning"),
    "patch_transformers": ("hf_tagtok.fast", "patch_transformers"),
    "unpatch_transformers": ("hf_tagtok.fast", "unpatch_transformers"),
    "MultimodalProcessor": ("hf_tagtok.multimodal", "MultimodalProcessor"),
    "train_bpe": ("hf_tagtok.training", "train_bpe"),
    "identity": ("hf_tagtok.tokenizer_identity", "identity"),
    "corpus": ("hf_tagtok.corpus", None),
    "DialogueProtocol": ("hf_tagtok.dialogue", "DialogueProtocol"),
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'hf_tagtok' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    return module if attribute is None else getattr(module, attribute)


def _register_auto_classes():
    # AutoTokenizer/AutoProcessor must resolve directories we saved as soon as hf_tagtok is imported.
    if importlib.util.find_spec("transformers") is None:
        return
    for module_name in ("hf_tagtok.fast", "hf_tagtok.multimodal"):
        if importlib.util.find_spec(module_name) is not None:
            importlib.import_module(module_name).register_auto_classes()


_register_auto_classes()
