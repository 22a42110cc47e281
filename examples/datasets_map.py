"""Tokenize a corpus with `datasets.map(batched=True, num_proc=2)` through TagTokenizerFast.

    python examples/datasets_map.py [--tokenizer DIR_OR_JSON] [--cache DIR]

Run it twice with the same --cache: the fingerprint is the same, so the second run reuses the cache.
"""
import argparse
import pathlib
import tempfile

import datasets

import hf_tagtok
from hf_tagtok.sample_text import default_tokenizer_json, multiscript_texts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", help="tokenizer directory or tokenizer.json (default: Llama-3)")
    parser.add_argument("--cache", help="where the corpus and the map cache live (default: a new temp dir)")
    args = parser.parse_args()
    cache = pathlib.Path(args.cache or tempfile.mkdtemp())
    tok = hf_tagtok.TagTokenizerFast.from_pretrained(args.tokenizer or str(default_tokenizer_json()))

    corpus = cache / "corpus"
    if not corpus.exists():
        datasets.Dataset.from_dict({"text": multiscript_texts()}).save_to_disk(str(corpus))
    dataset = datasets.load_from_disk(str(corpus))

    def tokenize(batch):
        return tok(batch["text"], return_offsets_mapping=True)

    tokenized = dataset.map(tokenize, batched=True, num_proc=2, remove_columns=["text"])
    print("rows:", len(tokenized), "tokens:", sum(map(len, tokenized["input_ids"])))
    print("fingerprint:", tokenized._fingerprint, "cache:", tokenized.cache_files[0]["filename"])


if __name__ == "__main__":
    main()
