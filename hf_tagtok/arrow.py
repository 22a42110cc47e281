"""Arrow output: a batch's columns as a `pyarrow.RecordBatch`, with no Python object per token.

Types are the ones `datasets` gives the same fields when a map function returns Python lists (its
`OptimizedTypedSequence`): `input_ids` list<int32>, `attention_mask` / `token_type_ids` /
`special_tokens_mask` list<int8>; `offset_mapping` list<list<int64>> (a pair per token), `length` int64,
`overflow_to_sample_mapping` int64. So a `datasets.map` whose function returns this batch stores the
same table, and skips datasets' walk over every id.

`map_function(tokenizer, column="text", **call_options)` is that function for a `TagTokenizerFast`.
"""
import numpy as np

# field -> element type of its list column (datasets' optimized types)
_LIST_TYPES = {"input_ids": "int32", "token_type_ids": "int8", "attention_mask": "int8",
               "special_tokens_mask": "int8"}


def _pyarrow():
    try:
        import pyarrow
    except ModuleNotFoundError:
        raise ModuleNotFoundError("Arrow output needs pyarrow: pip install pyarrow") from None
    return pyarrow


def _list_offsets(lengths):
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def record_batch(fields, lengths, scalars=()):
    """A RecordBatch of list columns: `fields` is [(name, flat column)], token i of row k at
    lengths[:k].sum() + i; `scalars` is [(name, one value per row)]."""
    pa = _pyarrow()
    offsets = pa.array(_list_offsets(lengths))
    arrays, names = [], []
    for name, column in fields:
        if name == "offset_mapping":  # each token's (start, end) as a two-element list
            values = pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * len(column) + 1, 2, dtype=np.int32)),
                                              pa.array(np.ascontiguousarray(column, np.int64).ravel()))
        else:
            values = pa.array(np.asarray(column).astype(_LIST_TYPES.get(name, "int64"), copy=False))
        arrays.append(pa.ListArray.from_arrays(offsets, values))
        names.append(name)
    for name, column in scalars:
        arrays.append(pa.array(np.asarray(column, dtype=np.int64)))
        names.append(name)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def from_lists(data):
    """A RecordBatch of a stock `BatchEncoding`'s Python lists, typed as `record_batch` types them."""
    pa = _pyarrow()
    arrays = []
    for name, rows in data.items():
        if name == "offset_mapping":
            kind = pa.list_(pa.list_(pa.int64()))
            rows = [[list(pair) for pair in row] for row in rows]
        elif name in _LIST_TYPES:
            kind = pa.list_(getattr(pa, _LIST_TYPES[name])())
        else:
            kind = pa.int64()
        arrays.append(pa.array(rows, type=kind))
    return pa.RecordBatch.from_arrays(arrays, names=list(data))


class map_function:  # noqa: N801 - used as a function: datasets.map(map_function(tok), batched=True)
    """`dataset.map(map_function(tokenizer), batched=True)`: tokenizes `batch[column]` with the tokenizer's
    own call and `call_options`, and returns a `pyarrow.Table`.

    datasets writes a returned table as it is (it does not merge it with the batch as it merges a returned
    dict), so the batch's own columns are carried over here: all of them, as a dict-returning function
    keeps them, or only `keep_columns`. Tokenized columns replace input columns of the same name. The
    batch may come as Python lists (datasets' default format) or as a table (`dataset.with_format("arrow")`).
    """

    def __init__(self, tokenizer, column="text", keep_columns=None, **call_options):
        if not hasattr(tokenizer, "encode_arrow"):
            raise TypeError(f"map_function needs a TagTokenizerFast, not {type(tokenizer).__name__} "
                            "(hf_tagtok.accelerate(tokenizer) makes one)")
        self.tokenizer, self.column, self.call_options = tokenizer, column, call_options
        self.keep_columns = None if keep_columns is None else list(keep_columns)

    def __call__(self, batch):
        pa = _pyarrow()
        texts = batch[self.column]
        if isinstance(texts, (pa.Array, pa.ChunkedArray)):
            texts = texts.to_pylist()
        tokenized = self.tokenizer.encode_arrow(texts, **self.call_options)
        names = batch.column_names if isinstance(batch, pa.Table) else list(batch)
        kept = [name for name in names if (self.keep_columns is None or name in self.keep_columns)
                and name not in tokenized.schema.names]
        columns = [batch[name] if isinstance(batch, pa.Table) else pa.array(batch[name]) for name in kept]
        return pa.Table.from_arrays([*columns, *tokenized.columns], names=[*kept, *tokenized.schema.names])
