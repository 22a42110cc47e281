"""LLaVA / Qwen2-VL multimodal processing (`MultimodalProcessor`), loaded on first use.

`import hf_tagtok` calls `register_auto_classes()`, which must not import transformers (seconds of import
time): it registers with `AutoProcessor` as soon as transformers' auto-processor module is imported.
"""
import importlib

from hf_tagtok._after_import import call_after_import

__all__ = ["MultimodalProcessor", "MultimodalProcessorConfig", "smart_resize", "register_auto_classes"]

_AUTO_MODULE = "transformers.models.auto.processing_auto"


def __getattr__(name):
    # PEP 562: the transformers-backed implementation loads on first access (also by pickle).
    if name in ("MultimodalProcessor", "MultimodalProcessorConfig", "smart_resize"):
        return getattr(importlib.import_module(f"{__name__}.processor"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_auto_classes():
    """Let `AutoProcessor.from_pretrained` load directories saved by `MultimodalProcessor`."""
    call_after_import(_AUTO_MODULE, _register)


def _register(processing_auto):
    importlib.import_module(f"{__name__}.processor").register_with(processing_auto)
