"""The `hf-tagtok` command: each subcommand lives in the module that owns its concern.

A user error (bad argument, missing or unreadable input, an output that exists, a missing extra) is one
line on stderr and exit status 2, never a traceback."""
import argparse
import importlib
import sys

# subcommand -> (module, one-line help); the module's `main(argv)` parses the rest.
COMMANDS = {
    "demo": ("hf_tagtok.demo", "accelerate a real tokenizer, check it is exact, print the speed-up"),
    "bench": ("hf_tagtok.bench", "benchmark hf_tagtok against stock tokenizers/transformers in one run"),
    "conformance": ("hf_tagtok.conformance_cli", "diff an accelerated tokenizer against stock on a corpus"),
    "train": ("hf_tagtok.training", "train a deterministic byte-level BPE tokenizer"),
    "prepare": ("hf_tagtok.corpus", "tokenize text/JSONL/Parquet into a fingerprinted prepared corpus"),
    "identity": ("hf_tagtok.tokenizer_identity", "print the blake3 identity of a tokenizer"),
    "inspect": ("hf_tagtok.inspect_vocab", "describe a tokenizer's vocabulary layout and number handling"),
}


def _user_errors():
    from hf_tagtok.cli_support import UserError
    from hf_tagtok.documents import DocumentError

    # ValueError covers CorpusError and DocumentError; OSError covers a missing or unreadable file
    return (UserError, DocumentError, ValueError, OSError)


def main(argv=None):
    from hf_tagtok import __version__

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        parser = argparse.ArgumentParser(prog="hf-tagtok", description=__doc__.split("\n\n")[0])
        parser.add_argument("--version", action="version", version=f"hf-tagtok {__version__}")
        sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
        for name, (_, help_text) in COMMANDS.items():
            sub.add_parser(name, help=help_text, add_help=False)
        parser.parse_args(argv)  # prints usage, help, the version or the error, and exits
        return 2
    name = argv[0]
    try:
        module = importlib.import_module(COMMANDS[name][0])
        return module.main(argv[1:]) or 0
    except _user_errors() as error:
        message = str(error) or type(error).__name__
        print(f"hf-tagtok {name}: error: {message.splitlines()[0] if message else message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hf-tagtok {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
