"""Stock's regex finds the matches of the steps whose regex the compiler refuses; the pipeline does the rest.

A Replace whose regex the compiler refuses (a subexpression call, `\\X`, `\\K`) keeps its place in the native
normalizer as a "replace_given" step: it replaces matches it is given with the text, exactly where stock's regex
finds them. A Split so refused becomes a "split_given" engine step: it splits the normalized text at the matches
given with it (after other steps, each piece at those inside it: hf_tagtok.pre_tokenizers.gated). `MatchGate` finds
them for a batch of texts at once, each text as the steps before the refused one make it (stock's own steps), with
a stock tokenizer built for the purpose, whose `encode_batch` runs on stock's thread pool. Stock's Replace and Split
find their matches alike (`find_matches` over the text), so either step's matches are those of a Split of its regex
over its input, or of a Replace of it there:
- when no match of the regex can be empty (`regex_compiler.may_match_empty`), that tokenizer's pre-tokenizer is a
  Split of the regex that keeps the matches alone (`removed`, inverted), a token a match, at the match's offsets;
- otherwise (a Split drops an empty piece), its normalizer is a Replace of the regex with a sentinel for content
  and its pre-tokenizer isolates the sentinels, so its tokens are the stretches between matches and one sentinel
  per match, an empty match too. Stock aligns a match's sentinel to the match's last char (an empty match's to the
  char before it, or to nothing at the start), so a match ends where its sentinel's offsets end and starts where
  the token before it ends. This costs more: Replace rewrites the text, and there are more tokens to read.
With several refused steps, stock's Replace makes each one's output for the next.

A text goes to stock instead when it holds the sentinel where a step's matches are shown by it, when stock raises
for it, or when it holds an added token's content that stock splits on before normalizing (the tokens with
`normalized` false), since stock normalizes each stretch between them on its own while the matches are found over
the whole text; under a refused Split, also when its normalized text holds a normalized added token's content
(stock pre-tokenizes each stretch between added tokens on its own).

Every call of texts that are not pre-tokenized (single or pairs, with truncation and padding or without) takes
the matches of each text and pair (`given`); pre-tokenized input goes to stock.
"""
import json
import re

import numpy as np
import tokenizers

from hf_tagtok import regex_compiler, stock_columns
from hf_tagtok._lists import flat_ids

# What the matches are replaced with to be found: three noncharacters a text is unlikely to hold (one that does
# goes to stock).
SENTINEL = "\ufdd0\U0010ffff\ufdd1"
_SENTINEL_ID = 1  # its token in the tokenizer that shows the matches (_Segment.marked)


class MatchGate:
    """Finds the matches of the refused steps in each text (see the module docstring)."""

    def __init__(self, segments, added_tokens, split=None):
        """segments: per refused Replace step, (the configs of the normalizer steps between the previous refused
        one and it, its config) (hf_tagtok.normalizers.gated); split: None, or (the configs of the normalizer
        steps after the last refused Replace, the refused Split's config) (hf_tagtok.pre_tokenizers.gated);
        added_tokens: hf_tagtok.added_tokens.AddedTokenSpec per added token."""
        self._segments = [_Segment(before, replace["pattern"]["Regex"], replace["content"])
                          for before, replace in segments]
        if split is not None:
            self._segments.append(_Segment(split[0], split[1]["pattern"]["Regex"], None))
        self._split_tokens = _any_of(token.pattern for token in added_tokens if not token.normalized)
        self._normalized_tokens = _any_of(token.pattern for token in added_tokens if token.normalized)
        self._matching = 0.0  # the share of texts lately holding a match (see _step_matches' count_first)

    def matches(self, texts):
        """Per text, None when it goes to stock, else per refused step in order its match count then [start, end)
        char pairs over that step's input, one flat list (tp_norm_give's layout)."""
        return [None if steps is None else np.concatenate(steps).tolist() for steps in self._find(texts)]

    def given(self, texts):
        """(mask, given): per text whether the pipeline encodes it, and for those texts the `given` argument of
        `hf_tagtok._native.Pipeline.encode` (data u32, starts i64: -1 for a text no refused regex matches in)."""
        mask, parts, starts, size = [], [], [], 0
        for steps in self._find(texts):
            mask.append(steps is not None)
            if steps is None:
                continue
            if not any(step[0] for step in steps):
                starts.append(-1)
                continue
            starts.append(size)
            parts += steps
            size += sum(len(step) for step in steps)
        data = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
        return mask, (data, np.array(starts, dtype=np.int64))

    def _find(self, texts):
        """Per text, None when it goes to stock, else per refused step its matches (_step_matches)."""
        found = [None if self._split_tokens is not None and self._split_tokens.search(text) else []
                 for text in texts]
        inputs = list(texts)
        for k, segment in enumerate(self._segments):
            live = [i for i, steps in enumerate(found) if steps is not None]
            if segment.before is not None:
                _take(inputs, found, live, _each(segment.before.normalize_str, [inputs[i] for i in live]))
            splits = segment.replace is None and self._normalized_tokens is not None
            for i in live:
                if found[i] is not None and (not segment.tokens_are_matches and SENTINEL in inputs[i] or
                                             splits and self._normalized_tokens.search(inputs[i])):
                    found[i] = None
            live = [i for i in live if found[i] is not None]
            matching = 0
            count_first = not segment.tokens_are_matches and self._matching < 0.5
            for i, step in zip(live, _step_matches(segment, [inputs[i] for i in live], count_first)):
                if step is None:
                    found[i] = None
                else:
                    found[i].append(step)
                    matching += bool(step[0])
            if live:  # decaying: the last calls weigh most
                self._matching = (self._matching + matching / len(live)) / 2
            if k + 1 < len(self._segments):
                changed = [i for i in live if found[i] is not None and found[i][-1][0]]
                _take(inputs, found, changed, _each(segment.replace.normalize_str, [inputs[i] for i in changed]))
        return found


_NO_MATCH = np.zeros(1, dtype=np.uint32)


def _any_of(contents):
    """A regex finding any of the strings (longest first), or None when there are none."""
    contents = sorted(set(contents), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, contents))) if contents else None


def _step_matches(segment, inputs, count_first):
    """Per input, None where stock refuses it, else its matches as a uint32 array [count, start, end, ...] in
    chars, read off the encoding of `segment.marked` (_Segment.matches). With `count_first` (sentinels only: its
    call without offsets costs a fraction of the one with them while few texts match, where a Split keeping the
    matches makes no token and costs what it does either way), that call picks the texts that hold a match."""
    out = [None] * len(inputs)
    candidates = range(len(inputs))
    if count_first:
        counted = _batch(segment.marked.encode_batch_fast, inputs)
        counts = _sentinels(*flat_ids([encoding.ids for encoding in counted if encoding is not None]))[0]
        candidates = []
        for j, encoding in enumerate(counted):
            if encoding is not None:
                count = next(counts)
                out[j] = _NO_MATCH if not count else None
                candidates += [j] if count else []
    encodings = _batch(segment.marked.encode_batch, [inputs[j] for j in candidates])
    kept = [(j, encoding) for j, encoding in zip(candidates, encodings) if encoding is not None]
    ids, _, offsets, _, _, lengths, _ = stock_columns.columns([encoding for _, encoding in kept])
    counts, spans = segment.matches(ids, offsets, lengths)
    at = 0
    for (j, _), count in zip(kept, counts):
        out[j] = np.concatenate(([count], spans[at:at + count].ravel())).astype(np.uint32) if count else _NO_MATCH
        at += count
    return out


def _sentinels(ids, lengths):
    """(an iterator over how many sentinel tokens each encoding of a sentinel-marking tokenizer holds, which of
    their tokens, in one flat mask, are sentinels) from their ids chained and each one's token count."""
    sentinel = ids == _SENTINEL_ID
    seen = np.concatenate(([0], np.cumsum(sentinel)))
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    return iter((seen[bounds[1:]] - seen[bounds[:-1]]).tolist()), sentinel


def _take(inputs, found, indices, outputs):
    """inputs[i] = each output; a text without one (stock refused it) goes to stock."""
    for i, output in zip(indices, outputs):
        if output is None:
            found[i] = None
        else:
            inputs[i] = output


def _stock_refusal(error):
    """Whether stock refused a text (it raises for it, or its Rust code panicked) rather than our code failing."""
    return isinstance(error, Exception) or type(error).__name__ == "PanicException"


def _batch(call, items):
    """call(items), or where stock refuses the batch, [call([item])[0] or None per item]."""
    try:
        return call(items) if items else []
    except BaseException as error:
        if not _stock_refusal(error):
            raise
    return [_each(lambda item: call([item])[0], [item])[0] for item in items]


def _each(call, items):
    """[call(item), or None where stock refuses the item]."""
    out = []
    for item in items:
        try:
            out.append(call(item))
        except BaseException as error:
            if not _stock_refusal(error):
                raise
            out.append(None)
    return out


class _Segment:
    """Stock's objects for one refused step: the steps before it (None: none), the tokenizer whose tokens show
    its matches (`marked`: a token a match, or a sentinel a match; see the module docstring), and the step
    itself when it is a Replace (None: the refused Split, the last)."""

    def __init__(self, before, regex, content):
        pattern = tokenizers.Regex(regex)
        self.before = _stock_normalizer(before) if before else None
        self.tokens_are_matches = not regex_compiler.may_match_empty(regex)
        if self.tokens_are_matches:
            self.marked = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
            self.marked.pre_tokenizer = tokenizers.pre_tokenizers.Split(pattern, "removed", invert=True)
        else:
            self.marked = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, SENTINEL: _SENTINEL_ID},
                                                                           unk_token="[UNK]"))
            self.marked.normalizer = tokenizers.normalizers.Replace(pattern, SENTINEL)
            self.marked.pre_tokenizer = tokenizers.pre_tokenizers.Split(SENTINEL, "isolated")
        self.replace = None if content is None else tokenizers.normalizers.Replace(pattern, content)

    def matches(self, ids, offsets, lengths):
        """(an iterator over how many matches each of `marked`'s encodings shows, their [start, end) char pairs in
        order as a (k, 2) uint32 array) from the columns of those encodings chained (lengths: each one's tokens)."""
        if self.tokens_are_matches:
            return iter(lengths.tolist()), offsets.astype(np.uint32).reshape(-1, 2)
        counts, sentinel = _sentinels(ids, lengths)
        ends = offsets[:, 1]
        before = np.empty_like(ends)
        before[1:] = ends[:-1]
        before[(np.cumsum(lengths) - lengths)[lengths > 0]] = 0  # each text's first token (an empty text has none)
        return counts, np.stack((before[sentinel], ends[sentinel]), axis=1).astype(np.uint32)


def _stock_normalizer(configs):
    """Stock's normalizer for a list of step configs (stock builds normalizers from JSON only inside a tokenizer)."""
    config = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
              "normalizer": {"type": "Sequence", "normalizers": configs}, "pre_tokenizer": None,
              "post_processor": None, "decoder": None,
              "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}
    return tokenizers.Tokenizer.from_str(json.dumps(config)).normalizer
