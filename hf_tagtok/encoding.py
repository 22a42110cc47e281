"""`Encoding`: one encoding with the attributes and methods of `tokenizers.Encoding`.

A native batch's encodings are views on its flat columns, so building one costs no list per field. Changing
one in place (`pad`, `truncate`, `set_sequence_id`) or making one (`Encoding.merge`, unpickling) gives it
its own fields, laid out as stock's `Encoding` struct (tokenizers/src/tokenizer/encoding.rs), whose
operations `_Fields` follows step by step.
"""
from typing import Any, NamedTuple

from hf_tagtok._lists import EncodingView

NAMELESS = -(1 << 31)  # word column: a text token with no word id and no token string (encode_batch_fast)

# The columns of a native batch's encoding records (int64, a row per encoding): the fields of tp_encoding
# (ext/pipeline/tp_assemble.h) in order, up to its ranges.
RECORD_START, RECORD_END = 0, 1  # the encoding's rows [start, end) of the batch's columns
RECORD_BOUNDS = slice(RECORD_START, RECORD_END + 1)
RECORD_SPLIT = 2  # the first row of its second sequence's part (end for a single sequence)
RECORD_RANGES = slice(3, 7)  # token ranges it records for sequences 0 and 1, relative to start (-1: none)
RECORD_COLUMNS = 7
RECORD_PADDING = slice(8, 10)  # of the native records (tp_encoding) only: padding tokens around its rows, not stored


class Columns(NamedTuple):
    """A native batch's token columns: one row per token of its encodings, encoding after encoding."""
    ids: Any        # uint32
    type_ids: Any   # uint32
    offsets: Any    # uint32 or int64 (n, 2) char offsets, or None when not computed
    special: Any    # uint8 special-token mask
    words: Any      # int32 word index (< 0: none, see NAMELESS), or None when not computed


def _unsigned(value):
    if value < 0:  # stock's index arguments are Rust usize
        raise OverflowError("can't convert negative int to unsigned")
    return value


def _int(value, bits=64):
    """A Rust unsigned integer argument, checked as PyO3 extracts it."""
    if not isinstance(value, int):
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer")
    if value >= 1 << bits:
        raise OverflowError("out of range integral type conversion attempted")
    return _unsigned(value)


def _string(value):
    if not isinstance(value, str):
        raise TypeError(f"'{type(value).__name__}' object cannot be converted to 'PyString'")
    return value


def _direction(value, error):
    if _string(value) not in ("left", "right"):
        raise ValueError(error)
    return value


class _Fields:
    """An encoding's own fields: token columns as lists (offsets last: merging shifts them, the others are
    appended as they are), sequence ranges {id: (start, end)}, and the overflowing parts as `_Fields`."""

    def __init__(self, ids, type_ids, tokens, words, special, attention, offsets, ranges, overflowing):
        self.ids, self.type_ids, self.tokens, self.words = ids, type_ids, tokens, words
        self.special, self.attention, self.offsets = special, attention, offsets
        self.ranges, self.overflowing = ranges, overflowing

    @classmethod
    def empty(cls):
        return cls([], [], [], [], [], [], [], {}, [])

    def _columns(self):
        return self.ids, self.type_ids, self.tokens, self.words, self.special, self.attention, self.offsets

    def copy(self):
        return _Fields(*(list(column) for column in self._columns()), dict(self.ranges),
                       [part.copy() for part in self.overflowing])

    def part(self, start, stop):
        return _Fields(*(column[start:stop] for column in self._columns()), {}, [])

    def pad(self, length, pad_id, pad_type_id, pad_token, direction):
        for part in self.overflowing:
            part.pad(length, pad_id, pad_type_id, pad_token, direction)
        count = length - len(self.ids)
        if count <= 0:
            return
        pads = ([pad_id] * count, [pad_type_id] * count, [pad_token] * count, [None] * count, [1] * count,
                [0] * count, [(0, 0)] * count)
        if direction == "left":
            for column, pad in zip(self._columns(), pads):
                column[:0] = pad
            self.ranges = {sequence: (start + count, end + count) for sequence, (start, end) in self.ranges.items()}
        else:
            for column, pad in zip(self._columns(), pads):
                column.extend(pad)

    def truncate(self, max_length, stride, direction):
        """Returns the truncated fields (stock replaces the whole struct)."""
        length = len(self.ids)
        if max_length >= length:
            return self
        if max_length == 0:
            emptied = _Fields.empty()
            emptied.overflowing.append(self)
            return emptied
        if stride >= max_length:  # stock panics here
            raise ValueError(f"`stride` must be strictly less than `max_len={max_length}` (note that `max_len` "
                             "may be shorter than the max length of the original model, as it subtracts the "
                             "number of special characters")
        step = max_length - stride
        if direction == "right":
            starts = range(0, length, step)
            windows = [(start, min(start + max_length, length)) for start in starts]
            windows = windows[:next(i for i, (_, stop) in enumerate(windows) if stop == length) + 1]
        else:
            stops = [stop + 1 for stop in range(length - 1, -1, -step)]
            windows = [(max(stop - max_length, 0), stop) for stop in stops]
            windows = windows[:next(i for i, (start, _) in enumerate(windows) if start == 0) + 1]
        first = self.part(*windows[0])
        first.overflowing = [self.part(*window) for window in windows[1:]]
        return first

    def merge_with(self, pair, growing_offsets):
        overflowing = []
        for mine in self.overflowing:
            overflowing.append(mine.copy().merge_with(pair.copy(), growing_offsets))
            overflowing += [mine.copy().merge_with(theirs.copy(), growing_offsets) for theirs in pair.overflowing]
        overflowing += [self.copy().merge_with(theirs.copy(), growing_offsets) for theirs in pair.overflowing]
        length = len(self.ids)
        self.ranges.update({sequence: (start + length, end + length) for sequence, (start, end) in pair.ranges.items()})
        shift = self.offsets[-1][1] if growing_offsets and self.offsets else 0
        self.offsets.extend((start + shift, end + shift) for start, end in pair.offsets)
        for column, added in zip(self._columns()[:-1], pair._columns()[:-1]):
            column.extend(added)
        self.overflowing = overflowing
        return self


class Encoding(EncodingView):
    """One encoding with the attributes and methods of `tokenizers.Encoding`, pairs and overflow included:
    a view on a native batch's columns until it is changed, then its own `_Fields`.
    `Encoding(batch, index, item, start, end)`: encoding `index` of `batch`, for input `item`, in its rows
    [start, end)."""

    __slots__ = ()

    @classmethod
    def _of(cls, fields):
        encoding = cls(None, 0, 0, 0, 0)
        encoding._own = fields
        return encoding

    def _fields(self):
        """A snapshot of every field, overflow included, that shares nothing with this encoding."""
        if self._own is not None:
            return self._own.copy()
        return _Fields(self.ids, self.type_ids, self.tokens, self.word_ids, self.special_tokens_mask,
                       self.attention_mask, self.offsets, self._ranges(), [part._fields() for part in self.overflowing])

    def _owned(self):
        if self._own is None:
            self._own = self._fields()
            self._batch = None
        return self._own

    def __reduce__(self):
        return Encoding._of, (self._fields(),)

    def _padding(self):
        """(before, after): the padding tokens around this view's rows that its batch does not store."""
        padding = self._batch.padding
        return (0, 0) if padding is None else padding[0][self._index].tolist()

    def _column(self, name):
        values = getattr(self._batch.columns, name)[self._start:self._end].tolist()
        before, after = self._padding()
        if before or after:
            fill = getattr(self._batch.padding[1], name)
            return [fill] * before + values + [fill] * after
        return values

    def _ranges(self):
        """{sequence id: (start, end)} as stock's sequence_ranges."""
        if self._own is not None:
            return dict(self._own.ranges)
        r = self._batch.records[self._index, RECORD_RANGES].tolist()
        return {sequence: (r[2 * sequence], r[2 * sequence + 1]) for sequence in (0, 1) if r[2 * sequence] >= 0}

    def _range(self, sequence_index):
        return self._ranges().get(sequence_index, (0, len(self)))

    def __len__(self):
        return len(self._own.ids) if self._own is not None else self._end - self._start + sum(self._padding())

    def __repr__(self):
        return f"Encoding(num_tokens={len(self)}, attributes=[ids, type_ids, tokens, offsets, attention_mask, " \
               "special_tokens_mask, overflowing])"

    @property
    def ids(self):
        return list(self._own.ids) if self._own is not None else self._column("ids")

    @property
    def type_ids(self):
        return list(self._own.type_ids) if self._own is not None else self._column("type_ids")

    @property
    def offsets(self):
        return list(self._own.offsets) if self._own is not None else list(map(tuple, self._column("offsets")))

    @property
    def special_tokens_mask(self):
        return list(self._own.special) if self._own is not None else self._column("special")

    @property
    def attention_mask(self):
        if self._own is not None:
            return list(self._own.attention)
        if self._batch.attention is None:
            before, after = self._padding()
            return [0] * before + [1] * (self._end - self._start) + [0] * after
        return self._batch.attention[self._start:self._end].tolist()

    @property
    def word_ids(self):
        if self._own is not None:
            return list(self._own.words)
        return [None if word < 0 else word for word in self._column("words")]

    @property
    def words(self):
        return self.word_ids

    @property
    def n_sequences(self):
        return len(self._ranges()) or 1

    @property
    def sequence_ids(self):
        sequences = [None] * len(self)
        for sequence in range(self.n_sequences):
            start, end = self._range(sequence)
            sequences[start:end] = [sequence] * (end - start)
        return sequences

    @property
    def tokens(self):
        if self._own is not None:
            return list(self._own.tokens)
        batch = self._batch
        native = batch.native
        names, post_names = native.token_names, native.post_names
        split = int(batch.records[self._index, RECORD_SPLIT]) - self._start + self._padding()[0]
        tokens = []
        for index, (token_id, word, (start, end)) in enumerate(zip(self._column("ids"), self._column("words"),
                                                                    self._column("offsets"))):
            if word == NAMELESS:
                tokens.append("")
            elif word <= -2:
                tokens.append(post_names[-2 - word])
            elif word == -1:
                tokens.append(batch.pad_token)
            elif token_id in native.strip_ids or token_id == native.piece_named_id:
                # a stripping added token's string is the text it matched, a Unigram unk token's its piece's
                tokens.append(native.piece_name(batch, self._item, index >= split, word, start, end, token_id))
            else:
                tokens.append(names[token_id])
        return tokens

    @property
    def overflowing(self):
        if self._own is not None:  # stock hands out copies: changing one leaves this encoding as it is
            return [Encoding._of(part.copy()) for part in self._own.overflowing]
        batch = self._batch
        return [Encoding(batch, index, self._item, *batch.records[index, RECORD_BOUNDS].tolist())
                for index in batch.overflow_of(self._index, self._item)]

    def set_sequence_id(self, sequence_id):
        self._owned().ranges[_int(sequence_id)] = (0, len(self))

    def pad(self, length, **kwargs):
        settings = {"pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]", "direction": "right"}
        length = _int(length)
        for key, value in kwargs.items():  # checked in the order given, as stock does
            if key == "direction":
                settings[key] = _direction(value, f"Unknown `direction`: `{value}`. Use one of `left` or `right`")
            elif key in ("pad_id", "pad_type_id"):
                settings[key] = _int(value, 32)
            elif key == "pad_token":
                settings[key] = _string(value)
            else:
                print(f"Ignored unknown kwarg option {key}")  # stock prints this too
        self._owned().pad(length, **settings)

    def truncate(self, max_length, stride=0, direction="right"):
        max_length, stride = _int(max_length), _int(stride)
        direction = _direction(direction, f"Invalid truncation direction value : {direction}")
        self._own = self._owned().truncate(max_length, stride, direction)

    @staticmethod
    def merge(encodings, growing_offsets=True):
        if isinstance(encodings, str):
            raise TypeError("argument 'encodings': Can't extract `str` to `Vec`")
        encodings = list(encodings)
        if not all(isinstance(encoding, Encoding) for encoding in encodings):
            raise TypeError("argument 'encodings': expected hf_tagtok Encoding objects")
        if not isinstance(growing_offsets, bool):
            raise TypeError(f"argument 'growing_offsets': '{type(growing_offsets).__name__}' object cannot be "
                            "converted to 'PyBool'")
        merged = _Fields.empty()
        for encoding in encodings:
            merged.merge_with(encoding._fields(), growing_offsets)
        return Encoding._of(merged)

    def token_to_sequence(self, token_index):
        if _unsigned(token_index) > len(self):
            return None
        ranges = self._ranges()
        if not ranges:
            return 0
        return next((sequence for sequence, (start, end) in ranges.items() if start <= token_index < end), None)

    def token_to_chars(self, token_index):
        if self.token_to_sequence(token_index) is None or token_index >= len(self):
            return None
        return self.offsets[token_index]

    def token_to_word(self, token_index):
        if self.token_to_sequence(token_index) is None or token_index >= len(self):
            return None
        return self.word_ids[token_index]

    def word_to_tokens(self, word_index, sequence_index=0):
        _unsigned(word_index)
        start, end = self._range(_unsigned(sequence_index))
        found = []
        for index, word in enumerate(self.word_ids[start:end]):
            if word is not None and word > word_index:  # stock stops at the first later word
                break
            if word == word_index:
                found.append(index)
        return (start + found[0], start + found[-1] + 1) if found else None

    def word_to_chars(self, word_index, sequence_index=0):
        span = self.word_to_tokens(word_index, sequence_index)
        if span is None or span[1] == 0:
            return None
        offsets = self.offsets
        return offsets[span[0]][0], offsets[span[1] - 1][1]

    def char_to_token(self, char_pos, sequence_index=0):
        _unsigned(char_pos)
        start, end = self._range(_unsigned(sequence_index))
        for index, (token_start, token_end) in enumerate(self.offsets[start:end]):
            if token_start <= char_pos < token_end:
                return start + index
        return None

    def char_to_word(self, char_pos, sequence_index=0):
        token = self.char_to_token(char_pos, sequence_index)
        return None if token is None else self.token_to_word(token)
