"""The `hf-tagtok` command: each subcommand lives in the module that owns its concern."""
import argparse
import importlib
import sys

# subcommand -> (module, one-line help); the module's `main(argv)` parses the rest.
COMMANDS = {
    "demo": ("hf_tagtok.demo", "accelerate a real tokenizer, check it is exact, print the speed-up"),
    "bench": ("hf_tagtok.bench", "benchmark hf_tagtok against stock tokenizers/transformers in one run"),
    "conformance": ("hf_tagtok.verify", "diff an accelerated tokenizer against stock on a corpus"),
    "train": ("hf_tagtok.training", "train a deterministic byte-level BPE tokenizer"),
    "prepare": ("hf_tagtok.corpus", "tokenize text/JSONL/Parquet into a fingerprinted prepared corpus"),
    "identity": ("hf_tagtok.tokenizer_identity", "print the blake3 identity of a tokenizer"),
    "inspect": ("hf_tagtok.inspect_vocab", "describe a tokenizer's vocabulary layout and number handling"),
}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        parser = argparse.ArgumentParser(prog="hf-tagtok")
        sub = parser.add_subparsers(dest="command", required=True)
        for name, (_, help_text) in COMMANDS.items():
            sub.add_parser(name, help=help_text, add_help=False)
        parser.parse_args(argv)  # prints usage / errors and exits
        return 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return module.main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
