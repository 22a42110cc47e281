"""Stock's regex finds the matches of the normalizer steps the compiler refuses; the pipeline does the rest.

A Replace whose regex the compiler refuses (a subexpression call, `\\X`, `\\K`) keeps its place in the
native normalizer as a "replace_given" step: it replaces matches it is given with the text, exactly where
stock's regex finds them. `ReplaceGate` finds them, per text, with stock's own objects: on the text as the
steps before the refused one make it (stock runs those too), the Replace with its content swapped for a
sentinel tells whether the regex matches at all (any match, an empty one too, puts the sentinel in), and
where it does, stock's `Split(regex, "removed", invert=True)` lists the matches, in chars of that text. A
text the regex finds no match in passes without any (the pipeline then runs its normalizer without those
steps, fast paths and all). With several refused steps, stock's Replace makes each one's output for the next.

A text goes to stock instead when its matches cannot be told this way: the split lists no empty match, so a
text where the sentinel count and the split's disagree; a text holding the sentinel; and a text holding an
added token's content that stock splits on before normalizing (the tokens with `normalized` false), since
stock normalizes each stretch between them on its own while the matches are found over the whole text.

Calls the pipeline takes with given matches are those of single texts without truncation or padding
(`given`); any other call runs natively only when no text or pair holds a match (`all_pass`).
"""
import itertools
import json
import re

import numpy as np
import tokenizers

# What the check's Replace writes for a match: three noncharacters a text is unlikely to hold (one that does
# goes to stock).
SENTINEL = "\ufdd0\U0010ffff\ufdd1"


class ReplaceGate:
    """Finds the matches of the refused Replace steps in each text (see the module docstring)."""

    def __init__(self, segments, added_tokens):
        """segments: per refused Replace step, (the configs of the normalizer steps between the previous refused
        one and it, its config) (hf_tagtok.normalizers.gated); added_tokens: hf_tagtok.added_tokens.loaded."""
        self._segments = [_Segment(before, replace) for before, replace in segments]
        contents = sorted({token["content"] for token in added_tokens if not token["normalized"]},
                          key=len, reverse=True)
        self._split_tokens = re.compile("|".join(map(re.escape, contents))) if contents else None

    def matches(self, text):
        """Per refused step in order, its match count then [start, end) char pairs over that step's input, one
        flat list (tp_norm_give's layout); None when the text goes to stock."""
        if self._split_tokens is not None and self._split_tokens.search(text):
            return None
        flat = []
        try:
            for k, segment in enumerate(self._segments):
                if segment.before is not None:
                    text = segment.before.normalize_str(text)
                if SENTINEL in text:
                    return None
                marked = segment.marked.normalize_str(text)
                if marked == text:
                    flat.append(0)
                    continue
                pieces = segment.split.pre_tokenize_str(text)
                if marked.count(SENTINEL) != len(pieces):  # an empty match, which the split does not list
                    return None
                flat.append(len(pieces))
                flat.extend(itertools.chain.from_iterable(span for _, span in pieces))
                if k + 1 < len(self._segments):
                    text = segment.replace.normalize_str(text)
        except UnicodeEncodeError:  # a lone surrogate: stock's own call raises for it
            return None
        except BaseException as error:  # stock's Rust code panicked (an empty match can make it): stock decides
            if type(error).__name__ != "PanicException":
                raise
            return None
        return flat

    def passes(self, text) -> bool:
        """Whether no refused step's regex matches in `text` (the pipeline then encodes it without given matches)."""
        flat = self.matches(text)
        return flat is not None and len(flat) == len(self._segments)

    def all_pass(self, texts) -> bool:
        """Whether every text passes, checked up to the first that does not."""
        return all(map(self.passes, texts))

    def given(self, texts):
        """(mask, given): per text whether the pipeline encodes it, and for those texts the `given` argument of
        `hf_tagtok._native.Pipeline.encode` (data u32, starts i64: -1 for a text no refused regex matches in)."""
        mask, data, starts = [], [], []
        steps = len(self._segments)
        for text in texts:
            flat = self.matches(text)
            mask.append(flat is not None)
            if flat is None:
                continue
            if len(flat) == steps:  # no match in any step
                starts.append(-1)
            else:
                starts.append(len(data))
                data += flat
        return mask, (np.array(data, dtype=np.uint32), np.array(starts, dtype=np.int64))


class _Segment:
    """Stock's objects for one refused Replace: the steps before it (None: none), the Replace with the sentinel
    for content, the split that lists its matches, and the Replace itself."""

    def __init__(self, before, replace):
        pattern = tokenizers.Regex(replace["pattern"]["Regex"])
        self.before = _stock_normalizer(before) if before else None
        self.marked = tokenizers.normalizers.Replace(pattern, SENTINEL)
        self.split = tokenizers.pre_tokenizers.Split(pattern, "removed", invert=True)
        self.replace = tokenizers.normalizers.Replace(pattern, replace["content"])


def _stock_normalizer(configs):
    """Stock's normalizer for a list of step configs (stock builds normalizers from JSON only inside a tokenizer)."""
    config = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
              "normalizer": {"type": "Sequence", "normalizers": configs}, "pre_tokenizer": None,
              "post_processor": None, "decoder": None,
              "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}
    return tokenizers.Tokenizer.from_str(json.dumps(config)).normalizer
