"""Stock's encodings read as columns from their pickled state, against the fields stock's own encodings report
(read one by one here), under the settings that shape them: pairs, truncation with overflow, padding,
pre-split words."""
import json

import numpy as np
import pytest

from conformance import tokenizer_zoo
from hf_tagtok import stock_columns

TEXTS = ["Hello wörld, \"quoted\" \\ back\\slash", "", "日本語のテキスト and more words to overflow here",
         "tab\there\nnew line 12345 678", "é" * 40]


def _expected(encodings, overflowing):
    parts = [part for e in encodings for part in ((e, *e.overflowing) if overflowing else (e,))]
    samples = [k for k, e in enumerate(encodings) for _ in range(1 + len(e.overflowing) if overflowing else 1)]
    return ([i for p in parts for i in p.ids], [i for p in parts for i in p.type_ids],
            [list(o) for p in parts for o in p.offsets], [i for p in parts for i in p.special_tokens_mask],
            [i for p in parts for i in p.attention_mask], [len(p.ids) for p in parts], samples)


def _as_lists(columns):
    return [None if column is None else column.tolist() for column in columns]


def _settings(tokenizer, setting):
    if setting in ("truncated", "both"):
        tokenizer.enable_truncation(16, stride=2)
    if setting in ("padded", "both"):
        tokenizer.enable_padding(pad_to_multiple_of=4, pad_id=0)


@pytest.mark.parametrize("member", ["small_bert_processing", "small_roberta_processing",
                                    "small_metaspace_byte_fallback"])
@pytest.mark.parametrize("setting", ["plain", "truncated", "padded", "both"])
@pytest.mark.parametrize("overflowing", [False, True])
def test_columns_are_stock_fields(member, setting, overflowing):
    tokenizer = tokenizer_zoo.load(member)
    _settings(tokenizer, setting)
    calls = [tokenizer.encode_batch(TEXTS), tokenizer.encode_batch(list(zip(TEXTS, reversed(TEXTS)))),
             tokenizer.encode_batch([text.split() for text in TEXTS], is_pretokenized=True)]
    for encodings in calls:
        columns = stock_columns.columns(encodings, overflowing)
        assert [c.dtype for c in columns] == [np.uint32, np.uint32, np.int64, np.uint8, np.uint8, np.int64, np.int64]
        assert _as_lists(columns) == list(_expected(encodings, overflowing))


class _OtherState:
    """A stock encoding whose pickled state has another shape (as another tokenizers version might write it)."""

    def __init__(self, encoding):
        self._encoding = encoding

    def __getattr__(self, name):
        return getattr(self._encoding, name)

    def __getstate__(self):
        state = json.loads(self._encoding.__getstate__())
        return json.dumps({"offsets": state.pop("offsets"), **state}).encode()


@pytest.mark.parametrize("overflowing", [False, True])
def test_a_state_of_another_shape_is_read_field_by_field(overflowing):
    tokenizer = tokenizer_zoo.load("small_bert_processing")
    _settings(tokenizer, "both")
    encodings = tokenizer.encode_batch(TEXTS)
    assert _as_lists(stock_columns.columns([_OtherState(e) for e in encodings], overflowing)) == \
        list(_expected(encodings, overflowing))


def test_without_offsets_the_fields_are_read():
    tokenizer = tokenizer_zoo.load("small_roberta_processing")
    encodings = tokenizer.encode_batch(TEXTS)
    ids, type_ids, offsets, special, attention, lengths, samples = stock_columns.columns(encodings, offsets=False,
                                                                                         padded=False)
    expected = _expected(encodings, False)
    assert offsets is None
    assert _as_lists((ids, type_ids, special, attention, lengths, samples)) == [expected[k] for k in (0, 1, 3, 4, 5, 6)]
