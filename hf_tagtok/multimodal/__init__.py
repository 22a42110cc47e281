"""LLaVA / Qwen2-VL multimodal processing (`MultimodalProcessor`), loaded on first use.

`import hf_tagtok` calls `register_auto_classes()`, which must not import transformers (seconds of import
time): it registers with `AutoProcessor` as soon as transformers' auto-processor module is imported.
"""
import importlib
import importlib.machinery
import sys

__all__ = ["MultimodalProcessor", "MultimodalProcessorConfig", "smart_resize", "register_auto_classes"]

_AUTO_MODULE = "transformers.models.auto.processing_auto"


def __getattr__(name):
    # PEP 562: the transformers-backed implementation loads on first access (also by pickle).
    if name in ("MultimodalProcessor", "MultimodalProcessorConfig", "smart_resize"):
        return getattr(importlib.import_module(f"{__name__}.processor"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_auto_classes():
    """Let `AutoProcessor.from_pretrained` load directories saved by `MultimodalProcessor`."""
    if _AUTO_MODULE in sys.modules:
        _register(sys.modules[_AUTO_MODULE])
    elif not any(isinstance(finder, _RegisterOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterOnImport())


def _register(processing_auto):
    importlib.import_module(f"{__name__}.processor").register_with(processing_auto)


class _RegisterOnImport:
    """A meta-path finder that registers right after transformers' auto-processor module executes."""

    def find_spec(self, name, path=None, target=None):
        if name != _AUTO_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _register(module)

        spec.loader.exec_module = exec_module
        return spec
