"""Stock's encodings read as flat columns.

Reading a field of a stock `Encoding` builds a Python list (and a tuple per token for its offsets), so the fields
of a call's encodings cost a third of stock's own call. An encoding's pickled state (`Encoding.__getstate__`:
serde's compact JSON of its fields in the order stock declares them) is written by one Rust call, and its int
arrays are read out of it in C (`_lists.flat_json_columns`): together about 60% of what the lists cost
(docs/performance.md, Fallbacks). A state in another shape (another tokenizers version) is read field by field
instead. Without offsets, the lists of the other fields cost less than the state.
"""
import numpy as np

from hf_tagtok._lists import flat_ids, flat_json_columns, flat_pairs

# stock's Encoding fields as its state writes them, up to the last one read
_STATE = ((b"ids", "ints"), (b"type_ids", "ints"), (b"tokens", "strings"), (b"words", "ints_or_nulls"),
          (b"offsets", "pairs"), (b"special_tokens_mask", "bytes"), (b"attention_mask", "bytes"))
_STATE_WITH_OVERFLOW = (*_STATE, (b"overflowing", "nested"))


def columns(encodings, overflowing=False, offsets=True, padded=True):
    """(ids uint32, type ids uint32, offsets int64 (n, 2) or None without `offsets`, special flags uint8,
    attention mask uint8, lengths int64, samples int64) of stock's encodings chained, each followed by its
    overflowing ones when `overflowing` (samples: the encoding each came from). Unless `padded`, every
    attention mask is all ones (stock zeroes it on padding only), so it is not read field by field."""
    if offsets:
        read = flat_json_columns([encoding.__getstate__() for encoding in encodings],
                                 _STATE_WITH_OVERFLOW if overflowing else _STATE)
        if read is not None:
            return read
    return _from_fields(encodings, overflowing, offsets, padded)


def _from_fields(encodings, overflowing, offsets, padded):
    if overflowing:
        samples = [sample for sample, e in enumerate(encodings) for _ in range(1 + len(e.overflowing))]
        encodings = [part for e in encodings for part in (e, *e.overflowing)]
    else:
        samples = range(len(encodings))
    ids, lengths = flat_ids([e.ids for e in encodings])

    def flat(field, dtype):
        return flat_ids([getattr(e, field) for e in encodings])[0].astype(dtype, copy=False)

    pairs = flat_pairs([e.offsets for e in encodings]) if offsets else None
    attention = flat("attention_mask", np.uint8) if padded else np.ones(len(ids), dtype=np.uint8)
    return (ids, flat("type_ids", np.uint32), pairs, flat("special_tokens_mask", np.uint8), attention, lengths,
            np.fromiter(samples, dtype=np.int64, count=len(lengths)))
