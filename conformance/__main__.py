"""`python -m conformance [--mode pretok|tokenizer|all] [--quick]`: exit status 1 on any difference vs stock.

`pretok` is conformance/pretokenizers.py; `tokenizer` is conformance/tokenizer_mode.py (the native pipeline
engineer's module, run only when it exists; contract: `run(argv) -> int` differences, printing its report;
it receives the raw argv list and parses its own flags, e.g. `--tokenizers llama3 --limit 20`).
"""
import argparse
import importlib
import importlib.util
import sys

from conformance import pretokenizers

MODES = {"pretok": "conformance.pretokenizers", "tokenizer": "conformance.tokenizer_mode"}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=[*MODES, "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="sampled sweeps and fewer fuzz examples (dev loop)")
    pretokenizers.add_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    args, _ = parser.parse_known_args(argv)
    modes = list(MODES) if args.mode == "all" else [args.mode]
    differences = 0
    for mode in modes:
        if importlib.util.find_spec(MODES[mode]) is None:
            if args.mode != "all":
                parser.error(f"mode {mode!r} is not available ({MODES[mode]} does not exist yet)")
            print(f"[{mode}] skipped: {MODES[mode]} does not exist")
            continue
        print(f"== conformance --mode {mode}")
        # pretok takes the parsed namespace; tokenizer_mode parses its own flags from the raw argv list
        differences += importlib.import_module(MODES[mode]).run(args if mode == "pretok" else argv)
    print(f"total differences vs stock: {differences}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
