"""The exceptions planning raises: `Unsupported` (a stage the native pipeline does not cover) and the
engine's `UnsupportedShape` (a pre-tokenizer program it cannot build); `native_module()`, the compiled
pipeline or Unsupported; `StockDecides`, which the compiled pipeline raises for texts stock must encode.

Every stage module raises these; none imports another stage module for them, so the planner
(`hf_tagtok.planner`) imports the stages without a cycle.
"""


class Unsupported(Exception):
    """A stage the native pipeline does not cover; the message says why."""


class StockDecides(Exception):
    """Stock, not the native pipeline, must encode some texts of a call: `texts`, their indices in it."""

    def __init__(self, texts):
        super().__init__(f"stock encodes {len(texts)} of the call's texts")
        self.texts = texts


def native_module():
    """The compiled pipeline module (hf_tagtok._native), or Unsupported naming why it cannot be imported."""
    try:
        from hf_tagtok import _native
    except ImportError as error:
        raise Unsupported(f"the _native extension is not built ({error})")
    return _native


def __getattr__(name):
    # The engine's class, defined in the compiled _engine module: imported only when asked for, so this
    # module loads without the extensions built.
    if name == "UnsupportedShape":
        from hf_tagtok._engine import UnsupportedShape
        return UnsupportedShape
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
