"""Pure-Python reference of the native assembly stage (ext/pipeline/tp_assemble.c): truncation, post-processor
templates, pairs and padding, with stock's `Encoding` semantics.

Readable rather than fast, like tiktoken's educational module. Its input is what the model stage gives for
each text (ids, tokens, word ids, offsets; no post-processor tokens), its configuration the tokenizer.json
objects stock reads ("post_processor", "truncation", "padding"). Stock's order (tokenizer/mod.rs
`post_process`) is:

1. truncate the sequence(s) to `max_length`, less the tokens the post-processor adds when
   `add_special_tokens` (utils/truncation.rs); what is cut becomes overflowing windows (`stride` tokens
   shared between neighbours);
2. post-process: number the sequences, lay them out with the processor's special tokens (Template, Bert,
   Roberta, ByteLevel offset trimming, Sequence of those) and merge the parts into one encoding; every
   overflowing window is laid out the same way (`Encoding.merge_with`);
3. pad (utils/padding.rs) to a fixed length or, in a batch, to the longest encoding, rounded up to a
   multiple; overflowing windows too.

    >>> a = Encoding.of_tokens([5, 6, 7], ["a", "b", "c"], [0, 1, 2], [(0, 1), (1, 2), (2, 3)])
    >>> bert = {"type": "BertProcessing", "cls": ["[CLS]", 1], "sep": ["[SEP]", 2]}
    >>> post_process(a, None, True, bert, {"max_length": 4, "stride": 0, "strategy": "LongestFirst",
    ...                                    "direction": "Right"}, None).ids
    [1, 5, 6, 2]

tests/test_reference_assembly.py checks this against stock and the native engine against this.
"""
from dataclasses import dataclass, field

from hf_tagtok import _reference

BYTE_LEVEL_SPACE = "\u0120"  # 'Ġ', ByteLevel's rendering of the space byte


@dataclass
class Encoding:
    """Stock's Encoding: one row per token, the overflowing windows, and the token range of each sequence
    (sequence id -> (start, stop); empty means one sequence covering every token)."""
    ids: list = field(default_factory=list)
    type_ids: list = field(default_factory=list)
    tokens: list = field(default_factory=list)
    word_ids: list = field(default_factory=list)
    offsets: list = field(default_factory=list)
    special_tokens_mask: list = field(default_factory=list)
    attention_mask: list = field(default_factory=list)
    overflowing: list = field(default_factory=list)
    sequence_ranges: dict = field(default_factory=dict)

    COLUMNS = ("ids", "type_ids", "tokens", "word_ids", "offsets", "special_tokens_mask", "attention_mask")

    @classmethod
    def of_tokens(cls, ids, tokens, word_ids, offsets, type_id=0):
        """A model's output for one sequence, as stock's `encode_single_sequence` makes it."""
        n = len(ids)
        return cls(list(ids), [type_id] * n, list(tokens), list(word_ids), list(offsets), [0] * n, [1] * n)

    @classmethod
    def special(cls, ids, tokens, type_id):
        """Post-processor tokens: no word, no offsets, special."""
        n = len(ids)
        return cls(list(ids), [type_id] * n, list(tokens), [None] * n, [(0, 0)] * n, [1] * n, [1] * n)

    def __len__(self):
        return len(self.ids)

    def copy(self):
        return Encoding(*(list(getattr(self, column)) for column in self.COLUMNS),
                        [window.copy() for window in self.overflowing], dict(self.sequence_ranges))

    def window(self, start, stop):
        """Tokens [start, stop) as a new encoding, without overflow or sequence ranges."""
        return Encoding(*(getattr(self, column)[start:stop] for column in self.COLUMNS))

    def set_sequence_id(self, sequence_id):
        self.sequence_ranges[sequence_id] = (0, len(self))

    @property
    def sequence_ids(self):
        """The sequence each token belongs to (None for tokens outside every range)."""
        if not self.sequence_ranges:
            return [0] * len(self)
        ids = [None] * len(self)
        for sequence_id in range(len(self.sequence_ranges)):
            start, stop = self.sequence_ranges.get(sequence_id, (0, len(self)))
            ids[start:stop] = [sequence_id] * (stop - start)
        return ids

    def truncate(self, max_length, stride=0, direction="Right"):
        """Keep one window of `max_length` tokens; the rest become overflowing windows, each overlapping the
        previous by `stride` tokens. Windows are cut from the start ("Right") or from the end ("Left")."""
        n = len(self)
        if max_length >= n:
            return
        if max_length == 0:
            whole = self.copy()
            self.__init__()
            self.overflowing.append(whole)
            return
        if stride >= max_length:
            raise ValueError(f"`stride` must be strictly less than `max_len={max_length}` (note that `max_len` may "
                             "be shorter than the max length of the original model, as it subtracts the number of "
                             "special characters")
        step = max_length - stride
        windows = []
        if direction == "Right":
            for start in range(0, n, step):
                stop = min(start + max_length, n)
                windows.append((start, stop))
                if stop == n:
                    break
        else:
            for last in range(n - 1, -1, -step):
                start = max(last + 1 - max_length, 0)
                windows.append((start, last + 1))
                if start == 0:
                    break
        first = self.window(*windows[0])
        first.overflowing = [self.window(start, stop) for start, stop in windows[1:]]
        self.__dict__.update(first.__dict__)  # sequence ranges are lost, as in stock

    def merge_with(self, pair):
        """Append `pair` (offsets unchanged: post-processing merges with growing_offsets=false). Overflowing
        windows combine: each of ours with `pair` and with each of its windows, then ourself with each of its
        windows."""
        overflowing = []
        for mine in self.overflowing:
            for other in [pair] + pair.overflowing:
                merged = mine.copy()
                merged.merge_with(other.copy())
                overflowing.append(merged)
        for other in pair.overflowing:
            merged = self.copy()
            merged.merge_with(other.copy())
            overflowing.append(merged)

        shift = len(self)
        for sequence_id, (start, stop) in pair.sequence_ranges.items():
            self.sequence_ranges[sequence_id] = (shift + start, shift + stop)
        for column in self.COLUMNS:
            getattr(self, column).extend(getattr(pair, column))
        self.overflowing = overflowing

    def pad(self, length, pad_id, pad_type_id, pad_token, direction):
        for window in self.overflowing:
            window.pad(length, pad_id, pad_type_id, pad_token, direction)
        missing = length - len(self)
        if missing <= 0:
            return
        padding = {"ids": pad_id, "type_ids": pad_type_id, "tokens": pad_token, "word_ids": None,
                   "offsets": (0, 0), "special_tokens_mask": 1, "attention_mask": 0}
        for column, value in padding.items():
            if direction == "Left":
                setattr(self, column, [value] * missing + getattr(self, column))
            else:
                getattr(self, column).extend([value] * missing)
        if direction == "Left":
            self.sequence_ranges = {k: (start + missing, stop + missing)
                                    for k, (start, stop) in self.sequence_ranges.items()}


def merge(encodings):
    merged = Encoding()
    for encoding in encodings:
        merged.merge_with(encoding)
    return merged


# ------------------------------------------------------------------ truncation

def truncate_encodings(encoding, pair, truncation):
    """Cut the sequence(s) so that together they hold at most max_length tokens (in place)."""
    max_length, stride, direction = truncation["max_length"], truncation["stride"], truncation["direction"]
    if max_length == 0:
        for target in (encoding, pair):
            if target is not None:
                target.truncate(0, stride, direction)
        return
    total = len(encoding) + (len(pair) if pair is not None else 0)
    if total <= max_length:
        return
    to_remove = total - max_length
    strategy = truncation["strategy"]
    if strategy == "LongestFirst":
        if pair is None:
            encoding.truncate(max_length, stride, direction)
            return
        # the shorter keeps its length when the longer can absorb the cut, else both get half
        short, long_ = sorted((len(encoding), len(pair)))
        long_ = short if short > max_length else max(short, max_length - short)
        if short + long_ > max_length:
            short, long_ = max_length // 2, max_length // 2 + max_length % 2
        first, second = (long_, short) if len(encoding) > len(pair) else (short, long_)
        encoding.truncate(first, stride, direction)
        pair.truncate(second, stride, direction)
        return
    target = encoding if strategy == "OnlyFirst" else pair
    if target is None:
        raise ValueError("Truncation error: Second sequence not provided")
    if len(target) <= to_remove:
        raise ValueError("Truncation error: Sequence to truncate too short to respect the provided max_length")
    target.truncate(len(target) - to_remove, stride, direction)


# ------------------------------------------------------------------ post-processors

def _trim_offsets(encoding, add_prefix_space):
    """ByteLevel's trim_offsets: offsets leave out the spaces a token starts or ends with ('Ġ' or Rust
    whitespace), except the one prefix space ByteLevel itself added to the first token."""
    def is_space(char):
        return char == BYTE_LEVEL_SPACE or _reference._has(char, "WS")

    for i, token in enumerate(encoding.tokens):
        leading = 0
        while leading < len(token) and is_space(token[leading]):
            leading += 1
        trailing = 0
        while trailing < len(token) and is_space(token[len(token) - 1 - trailing]):
            trailing += 1
        start, end = encoding.offsets[i]
        if leading:
            if (i == 0 or start == 0) and add_prefix_space and leading == 1:
                leading = 0
            start = min(start + leading, end)
        if trailing and end >= trailing:
            end = max(end - trailing, start)
        encoding.offsets[i] = (start, end)


class ByteLevel:
    def __init__(self, config):
        self.trim_offsets = config.get("trim_offsets", True)
        self.add_prefix_space = config.get("add_prefix_space", True)

    def added_tokens(self, is_pair):
        return 0

    def process_encodings(self, encodings, add_special_tokens):
        if self.trim_offsets:
            for encoding in encodings:
                for part in [encoding] + encoding.overflowing:
                    _trim_offsets(part, self.add_prefix_space)
        for sequence_id, encoding in enumerate(encodings):
            encoding.set_sequence_id(sequence_id)
        return encodings


class TemplateProcessing:
    """Lays the sequences out as the template says: `$A`/`$B` with a type id, special tokens with theirs.
    The main encoding's type ids follow the template; its overflowing windows keep the sequence's index."""

    def __init__(self, config):
        self.single, self.pair = config["single"], config["pair"]
        self.special_tokens = config["special_tokens"]

    def added_tokens(self, is_pair):
        template = self.pair if is_pair else self.single
        return sum(len(self.special_tokens[piece["SpecialToken"]["id"]]["ids"])
                   for piece in template if "SpecialToken" in piece)

    def process_encodings(self, encodings, add_special_tokens):
        parts = []
        for piece in self.pair if len(encodings) == 2 else self.single:
            if "Sequence" in piece:
                index = 0 if piece["Sequence"]["id"] == "A" else 1
                encoding = encodings[index]
                encoding.type_ids = [piece["Sequence"]["type_id"]] * len(encoding)
                encoding.set_sequence_id(index)
                parts.append(encoding.copy())
            elif add_special_tokens:
                token = self.special_tokens[piece["SpecialToken"]["id"]]
                parts.append(Encoding.special(token["ids"], token["tokens"], piece["SpecialToken"]["type_id"]))
        return parts


class BertProcessing:
    """[CLS] A [SEP] and B [SEP]: the sequence's tokens keep their type ids, the [SEP] closing B is type 1.
    Overflowing windows are wrapped alike; each sequence range leaves the special tokens out."""

    def __init__(self, config):
        (self.sep_token, self.sep_id), (self.cls_token, self.cls_id) = config["sep"], config["cls"]

    def added_tokens(self, is_pair):
        return 3 if is_pair else 2

    def layout(self, index):
        """(tokens before the sequence as (id, token) pairs, type id of the closing separator)."""
        return ([(self.cls_id, self.cls_token)], 0) if index == 0 else ([], 1)

    def body_type_ids(self, part):
        return part.type_ids

    def wrap(self, part, index):
        before, after_type_id = self.layout(index)
        body = part.window(0, len(part))
        body.type_ids = self.body_type_ids(part)
        wrapped = merge([Encoding.special([id_ for id_, _ in before], [token for _, token in before], 0), body,
                         Encoding.special([self.sep_id], [self.sep_token], after_type_id)])
        wrapped.sequence_ranges = {index: (len(before), len(wrapped) - 1)}
        return wrapped

    def process_encodings(self, encodings, add_special_tokens):
        if not add_special_tokens:
            return encodings
        wrapped = []
        for index, encoding in enumerate(encodings):
            main = self.wrap(encoding, index)
            main.overflowing = [self.wrap(window, index) for window in encoding.overflowing]
            wrapped.append(main)
        return wrapped


class RobertaProcessing(BertProcessing):
    """<s> A </s> and </s> B </s>, every type id 0; ByteLevel offset trimming first when trim_offsets."""

    def __init__(self, config):
        super().__init__(config)
        self.trim_offsets = config.get("trim_offsets", True)
        self.add_prefix_space = config.get("add_prefix_space", True)

    def added_tokens(self, is_pair):
        return 4 if is_pair else 2

    def layout(self, index):
        return ([(self.cls_id, self.cls_token)] if index == 0 else [(self.sep_id, self.sep_token)]), 0

    def body_type_ids(self, part):
        return [0] * len(part)

    def process_encodings(self, encodings, add_special_tokens):
        if self.trim_offsets:
            for encoding in encodings:
                for part in [encoding] + encoding.overflowing:
                    _trim_offsets(part, self.add_prefix_space)
        for encoding in encodings:
            encoding.type_ids = [0] * len(encoding)
        return super().process_encodings(encodings, add_special_tokens)


class Sequence:
    def __init__(self, config):
        self.processors = [from_config(child) for child in config["processors"]]

    def added_tokens(self, is_pair):
        return sum(processor.added_tokens(is_pair) for processor in self.processors)

    def process_encodings(self, encodings, add_special_tokens):
        for processor in self.processors:
            encodings = processor.process_encodings(encodings, add_special_tokens)
        return encodings


PROCESSORS = {"ByteLevel": ByteLevel, "TemplateProcessing": TemplateProcessing, "BertProcessing": BertProcessing,
              "RobertaProcessing": RobertaProcessing, "Sequence": Sequence}


def from_config(config):
    """The reference post-processor for a tokenizer.json "post_processor" object (None: none)."""
    if config is None:
        return None
    if config["type"] not in PROCESSORS:
        raise ValueError(f"no reference post-processor for {config['type']}")
    return PROCESSORS[config["type"]](config)


def process(processor, encoding, pair, add_special_tokens):
    """A processor's `process`: number the sequences (their windows too), type each by its index, lay them
    out, merge. Without a processor, a pair is numbered and merged as it is."""
    encodings = [encoding] if pair is None else [encoding, pair]
    if processor is None:
        if pair is None:
            return encoding
        for index, part in enumerate(encodings):
            part.set_sequence_id(index)
        return merge(encodings)
    for index, part in enumerate(encodings):
        part.set_sequence_id(index)
        for window in part.overflowing:
            window.set_sequence_id(index)
        part.type_ids = [index] * len(part)
    return merge(processor.process_encodings(encodings, add_special_tokens))


# ------------------------------------------------------------------ padding and the whole stage

def pad_encodings(encodings, padding):
    if not encodings:
        return
    strategy = padding["strategy"]
    length = strategy["Fixed"] if isinstance(strategy, dict) else max(len(encoding) for encoding in encodings)
    multiple = padding.get("pad_to_multiple_of")
    if multiple and length % multiple:
        length += multiple - length % multiple
    for encoding in encodings:
        encoding.pad(length, padding["pad_id"], padding["pad_type_id"], padding["pad_token"], padding["direction"])


def post_process(encoding, pair, add_special_tokens, post_processor, truncation, padding):
    """Stock's `Tokenizer.post_process` on one item; the arguments are tokenizer.json objects."""
    processor = from_config(post_processor)
    encoding = encoding.copy()
    pair = pair.copy() if pair is not None else None
    if truncation is not None:
        added = processor.added_tokens(pair is not None) if processor is not None and add_special_tokens else 0
        # stock subtracts unsigned: below the special tokens max_length wraps around to a huge length, no cut
        if added <= truncation["max_length"]:
            truncate_encodings(encoding, pair, dict(truncation, max_length=truncation["max_length"] - added))
    final = process(processor, encoding, pair, add_special_tokens)
    if padding is not None:
        pad_encodings([final], padding)
    return final


def encode_batch(items, add_special_tokens, post_processor, truncation, padding):
    """Stock's `encode_batch` after the model: each (encoding, pair or None) item post-processed (which pads
    it alone), then the batch padded together."""
    encodings = [post_process(encoding, pair, add_special_tokens, post_processor, truncation, padding)
                 for encoding, pair in items]
    if padding is not None:
        pad_encodings(encodings, padding)
    return encodings
