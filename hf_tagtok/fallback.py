"""The warning raised when a tokenizer hf_tagtok hands back does not run fully natively.

Outputs stay identical (stock `tokenizers` encodes what the native pipeline does not cover); the warning
says which stages fall back and why, once per tokenizer returned. Silence it with
`warnings.simplefilter("ignore", hf_tagtok.FallbackWarning)`; `.acceleration` keeps the full report.
"""
import warnings


class FallbackWarning(UserWarning):
    """A tokenizer returned by hf_tagtok encodes (partly) on stock `tokenizers`; the message says why."""


# The reason a stage that is native on its own reports when another stage is not (hf_tagtok.tokenizer).
SHADOWED = "native here, but another stage is not, so stock runs everything"


def fallback_reasons(report):
    """'stage: reason; ...' for the stages that are not native of their own accord ('' when all are)."""
    return "; ".join(f"{stage}: {entry['reason']}" for stage, entry in report.items()
                     if not entry["native"] and entry["reason"] != SHADOWED)


def warn_fallback(what, report, stacklevel=2):
    """Warn (FallbackWarning) that `what` is not fully native, unless the report says it is."""
    if all(entry["native"] for entry in report.values()):
        return
    reasons = fallback_reasons(report) or "a stage is not native"
    warnings.warn(f"hf_tagtok: {what} does not run fully natively, stock tokenizers encodes what it does not "
                  f"cover ({reasons})",
                  FallbackWarning, stacklevel=stacklevel + 1)
