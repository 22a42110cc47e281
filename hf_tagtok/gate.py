"""Encode natively the texts that a normalizer step only stock runs leaves as they are.

A Replace whose regex the compiler refuses (a subexpression call, `\\X`, `\\K`) keeps the
normalizer off the native pipeline. Where its regex finds no match it changes nothing, neither the text
nor the alignments, so the pipeline without such steps encodes a text none of them matches exactly as
stock encodes it. `ReplaceGate` finds those texts with stock's own regex: it runs each such Replace with
its content swapped for a sentinel on the text the steps before it make (stock runs those too), and a text
passes when that text holds no sentinel and comes back unchanged (any match, an empty one too, would have
put the sentinel in), step after step.

The check sees the whole text, while stock normalizes each stretch between the added tokens it splits on
before normalizing (the tokens with `normalized` false): a text holding such a token's content does not pass.

A text that fails costs stock's encode plus the check, so while most texts fail the gate checks only a few
texts a call (`ReplaceGate.mask`), and a text is first checked by its first PROBE chars, most texts that fail
failing there: a Replace that matches nearly every text costs about what stock costs. While most texts pass,
a text is checked whole at once (the probe would only add its chars to the check).
"""
import json
import re

import tokenizers

# What the gate's Replace writes for a match: three noncharacters a text is unlikely to hold (one that does
# goes to stock).
SENTINEL = "\ufdd0\U0010ffff\ufdd1"
# Texts a call checks while most texts fail the gate (see ReplaceGate.mask).
SAMPLE = 16
# Chars of a text checked before the whole text (see ReplaceGate.passes).
PROBE = 128


class ReplaceGate:
    """Tells the texts the refused Replace steps leave alone (see the module docstring)."""

    def __init__(self, segments, added_tokens):
        """segments: per refused Replace step, (the configs of the normalizer steps between the previous refused
        one and it, its config) (hf_tagtok.normalizers.gated); added_tokens: hf_tagtok.added_tokens.loaded."""
        self._segments = [(_stock_normalizer(before) if before else None,
                           tokenizers.normalizers.Replace(tokenizers.Regex(replace["pattern"]["Regex"]), SENTINEL))
                          for before, replace in segments]
        contents = sorted({token["content"] for token in added_tokens if not token["normalized"]},
                          key=len, reverse=True)
        self._split_tokens = re.compile("|".join(map(re.escape, contents))) if contents else None
        self._passed = self._checked = 0.0  # decaying counts of the checks (a race between threads only blurs them)

    def passes(self, text) -> bool:
        """Whether the pipeline without the refused Replace steps encodes `text` as stock does. While most texts
        checked lately failed, its first PROBE chars are checked first: where they fail, the text is taken as
        failing. A match there may not be one in the whole text (a lookaround or an anchor meets the cut), and
        then stock encodes a text the pipeline could have: failing only ever costs speed, every text stock
        encodes is exact."""
        if self._split_tokens is not None and self._split_tokens.search(text):
            return False
        probe = len(text) > PROBE and self._failing()
        return (not probe or self._unchanged(text[:PROBE])) and self._unchanged(text)

    def _failing(self) -> bool:
        return self._passed < self._checked / 2

    def _count(self, passed, checked):
        """Adds a call's checks to the decaying counts (recent calls weigh more: the rate follows the corpus)."""
        self._passed = self._passed / 2 + passed
        self._checked = self._checked / 2 + checked

    def _unchanged(self, text) -> bool:
        """Whether each refused Replace leaves `text` (as the steps before it make it) unchanged."""
        try:
            for before, marked in self._segments:  # each Replace leaves the text as it found it, or we stop
                if before is not None:
                    text = before.normalize_str(text)
                if SENTINEL in text or marked.normalize_str(text) != text:
                    return False
            return True
        except UnicodeEncodeError:  # a lone surrogate: stock's own call raises for it
            return False
        except BaseException as error:  # stock's Rust code panicked (an empty match can make it): stock decides
            if type(error).__name__ != "PanicException":
                raise
            return False

    def mask(self, texts) -> list:
        """Per text, whether it passes. While fewer than half of the texts checked lately passed, a call checks
        only its first SAMPLE texts and takes the others as failing: a check costs about a twentieth of what
        stock's encode costs for the text, which a text that fails pays on top."""
        checked = min(len(texts), SAMPLE) if self._failing() else len(texts)
        mask = [self.passes(text) for text in texts[:checked]]
        self._count(sum(mask), checked)
        return mask + [False] * (len(texts) - checked)

    def all_pass(self, texts) -> bool:
        """Whether every text passes, checked up to the first that fails."""
        for checked, text in enumerate(texts, 1):
            if not self.passes(text):
                self._count(checked - 1, checked)
                return False
        self._count(len(texts), len(texts))
        return True


def _stock_normalizer(configs):
    """Stock's normalizer for a list of step configs (stock builds normalizers from JSON only inside a tokenizer)."""
    config = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
              "normalizer": {"type": "Sequence", "normalizers": configs}, "pre_tokenizer": None,
              "post_processor": None, "decoder": None,
              "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}
    return tokenizers.Tokenizer.from_str(json.dumps(config)).normalizer
