"""Ray Data: tokenize a `ray.data.Dataset` with `map_batches`, one tokenizer per actor.

    dataset.map_batches(TokenizeBatches, fn_constructor_kwargs={"tokenizer": "dir/tokenizer.json"},
                        batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=2))

Each actor loads the tokenizer once (`hf_tagtok.Tokenizer`, native where it covers the pipeline) and,
given `identity`, refuses to start on a tokenizer whose blake3 identity differs (a stale copy on a node).
An actor spreads a batch over as many threads as the CPUs Ray reserved for it (`num_cpus`, 1 by default),
so actors that share a node do not oversubscribe it (HF_TAGTOK_THREADS in the actor's environment wins).
A batch keeps its columns and gains `input_ids` (list<int32>, as `hf_tagtok.arrow` types it) and
`num_tokens`; batches come as pyarrow tables or as dicts of numpy arrays (`batch_format="numpy"`, where
`input_ids` is an object array of int32 arrays).
"""
import os
import sys
from pathlib import Path

import numpy as np

from hf_tagtok import arrow


class TokenizeBatches:
    def __init__(self, tokenizer, column="text", identity=None, add_special_tokens=True):
        from hf_tagtok.tokenizer import Tokenizer
        from hf_tagtok.tokenizer_identity import identity as tokenizer_identity

        if identity is not None and tokenizer_identity(tokenizer) != identity:
            raise ValueError(f"{tokenizer}: identity {tokenizer_identity(tokenizer)} is not the expected {identity}")
        use_reserved_cpus()
        path = Path(tokenizer)
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json" if path.is_dir() else path))
        self.column, self.add_special_tokens = column, add_special_tokens

    def __call__(self, batch):
        import pyarrow as pa

        texts = batch[self.column]
        texts = texts.to_pylist() if isinstance(texts, (pa.Array, pa.ChunkedArray)) else list(texts)
        columns = self.tokenizer.encode_batch_arrays(texts, add_special_tokens=self.add_special_tokens, offsets=False)
        if isinstance(batch, pa.Table):
            tokenized = arrow.record_batch([("input_ids", columns.ids)], columns.lengths,
                                           [("num_tokens", columns.lengths)])
            for name, values in zip(tokenized.schema.names, tokenized.columns):
                batch = batch.append_column(name, values)
            return batch
        ids = columns.ids.astype(np.int32)
        rows = np.empty(len(texts), dtype=object)
        rows[:] = np.split(ids, np.cumsum(columns.lengths)[:-1]) if len(texts) else []
        return {**batch, "input_ids": rows, "num_tokens": columns.lengths.astype(np.int64)}


def use_reserved_cpus():
    """In a Ray task or actor, size the native pool to the CPUs Ray reserved for it (at least 1), unless
    HF_TAGTOK_THREADS is set: the pool reads it when it first runs, so call this before encoding."""
    ray = sys.modules.get("ray")  # a Ray worker has imported it; importing it here would cost a second
    if ray is None or os.environ.get("HF_TAGTOK_THREADS") or not ray.is_initialized():
        return
    context = ray.get_runtime_context()
    if context.worker.mode == ray.WORKER_MODE:
        os.environ["HF_TAGTOK_THREADS"] = str(max(1, int(context.get_assigned_resources().get("CPU", 1))))
