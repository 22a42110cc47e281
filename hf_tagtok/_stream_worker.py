"""One contender of `hf-tagtok bench --stream`, run as a script in a fresh process.

It imports only the standard library and the contender's own package (tiktoken's encoding is built by
hf_tagtok.bench), so it also runs under another interpreter (`--peer-python`, e.g. a venv holding a
tokenizers release that cannot share this one).

    python _stream_worker.py CONTENDER TOKENIZER_JSON CORPUS_JSON BATCH_SIZE [fresh]

With `fresh` the warm pass encodes equal texts in new str objects, as a stream's are: an engine that reads a
str through PyO3 (stock, fastokens) leaves its UTF-8 cached in the str, and a second pass over the same
objects reads it back instead of encoding the text again.

prints one JSON line: load seconds, stream and warm pass seconds (and the stream pass's CPU seconds over
all its threads), tokens, and one hash per document of
its ids (int tuples hash the same in every CPython process) for the exactness check.
"""
import json
import sys
import time


def _tiktoken(path):
    # runs in this package's own interpreter: the encoding (byte alphabet from the generated tables) is bench's
    from hf_tagtok.bench import _tiktoken_encoding
    encoding = _tiktoken_encoding(path, plain=False)
    return lambda batch: encoding.encode_ordinary_batch(batch, num_threads=_threads()), lambda out: out


def _threads():
    import os
    return int(os.environ.get("HF_TAGTOK_THREADS") or os.cpu_count() or 1)


def _flat_to_lists(ids, bounds):
    return [ids[bounds[i]:bounds[i + 1]].tolist() for i in range(len(bounds) - 1)]


def _arrays_to_lists(result):
    import numpy as np
    bounds = np.concatenate(([0], np.cumsum(result.lengths)))
    return _flat_to_lists(result.ids, bounds)


def _load(contender, path):
    """(call(batch) -> output, ids(output) -> list of id lists) for this contender."""
    import os
    folder = os.path.dirname(path)
    if contender in ("stock", "tokenizers1"):
        import tokenizers
        tok = tokenizers.Tokenizer.from_file(path)
        return tok.encode_batch, lambda out: [e.ids for e in out]
    if contender == "hf_tagtok":
        import hf_tagtok
        tok = hf_tagtok.Tokenizer.from_file(path)
        return tok.encode_batch, lambda out: [e.ids for e in out]
    if contender in ("hf_tagtok_arrays", "hf_tagtok_arrays_ids"):
        import hf_tagtok
        tok = hf_tagtok.Tokenizer.from_file(path)
        offsets = contender == "hf_tagtok_arrays"
        return lambda batch: tok.encode_batch_arrays(batch, offsets=offsets), _arrays_to_lists
    if contender == "fastokens":
        import numpy as np
        import fastokens
        tok = fastokens.Tokenizer.from_file(path)

        def ids(out):
            return _flat_to_lists(np.frombuffer(out[0], np.uint32), np.frombuffer(out[1], np.uint64))
        return tok.encode_batch_flat, ids
    if contender == "gigatoken":
        import gigatoken
        tok = gigatoken.Tokenizer(path)
        return tok.encode_batch, lambda out: [[int(i) for i in row] for row in out.to_list()]
    if contender == "tiktoken":
        return _tiktoken(path)
    if contender in ("transformers", "TagTokenizerFast", "fastokens_transformers"):
        if contender == "fastokens_transformers":  # fastokens' transformers path: stock's class on its backend
            import fastokens
            fastokens.patch_transformers()
        if contender == "TagTokenizerFast":
            from hf_tagtok.fast import TagTokenizerFast as cls
        else:
            from transformers import PreTrainedTokenizerFast as cls
        # a tokenizer.json loads with its folder's configuration; any other file alone (TagTokenizerFast's
        # from_pretrained takes the file itself and, as from a folder, builds its native tokenizer while loading)
        if os.path.basename(path) == "tokenizer.json":
            tok = cls.from_pretrained(folder)
        else:
            tok = cls.from_pretrained(path) if contender == "TagTokenizerFast" else cls(tokenizer_file=path)
        return tok, lambda out: out["input_ids"]
    raise SystemExit(f"unknown contender {contender!r}")


def _pass(call, batches):
    """(wall seconds, CPU seconds of every thread of the process, outputs) of one pass."""
    outputs = []
    start, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        outputs.append(call(batch))
    return time.perf_counter() - start, time.process_time() - cpu, outputs


def main(argv):
    contender, path, corpus, batch_size = argv[0], argv[1], argv[2], int(argv[3])
    fresh = argv[4:] == ["fresh"]
    with open(corpus, encoding="utf-8") as handle:
        texts = json.load(handle)
    batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
    warm_batches = [[text.encode().decode() for text in batch] for batch in batches] if fresh else batches
    start = time.perf_counter()
    call, ids_of = _load(contender, path)
    load_s = time.perf_counter() - start
    stream_s, stream_cpu_s, outputs = _pass(call, batches)
    del outputs
    warm_s, _, outputs = _pass(call, warm_batches)
    documents = [ids for out in outputs for ids in ids_of(out)]
    print(json.dumps({"contender": contender, "load_s": load_s, "stream_s": stream_s, "stream_cpu_s": stream_cpu_s,
                      "warm_s": warm_s, "tokens": sum(map(len, documents)),
                      "hashes": [hash(tuple(ids)) for ids in documents]}))


if __name__ == "__main__":
    main(sys.argv[1:])
