"""`hf-tagtok conformance`: diff the accelerated tokenizer against stock transformers on a corpus.

    hf-tagtok conformance --tokenizer DIR_OR_TOKENIZER_JSON [--corpus FILE ...]

Every output key of `tok(...)`, every option of `OPTION_SETS`, text pairs and pre-split words, the
BatchEncoding helpers and decoding are compared with the stock tokenizer loaded from the same files;
a stock exception must be matched by the same exception class and message. Exit status 0 when
identical, 1 with the first differing input shown otherwise. Gate your CI on it.
"""
import pathlib
import sys

import numpy as np

# Every option the BatchEncoding depends on; pad/truncation lengths are small so they bite on real text.
OPTION_SETS = [
    {},
    {"return_offsets_mapping": True, "return_special_tokens_mask": True, "return_length": True,
     "return_token_type_ids": True, "return_attention_mask": True},
    {"add_special_tokens": False, "return_offsets_mapping": True},
    {"return_attention_mask": False, "return_token_type_ids": False},
    {"split_special_tokens": True, "return_special_tokens_mask": True},
    {"padding": True, "return_offsets_mapping": True, "return_special_tokens_mask": True, "return_length": True},
    {"padding": "longest", "padding_side": "left", "return_offsets_mapping": True, "return_token_type_ids": True},
    {"padding": "max_length", "max_length": 32},
    {"padding": "max_length", "max_length": 32, "padding_side": "left", "pad_to_multiple_of": 16},
    {"padding": True, "pad_to_multiple_of": 7, "return_special_tokens_mask": True},
    {"truncation": True, "max_length": 16, "return_offsets_mapping": True},
    {"truncation": "only_first", "max_length": 24, "stride": 4, "return_overflowing_tokens": True},
    {"truncation": "longest_first", "max_length": 16, "padding": "max_length", "return_tensors": "np"},
    {"return_tensors": "np", "return_offsets_mapping": True},
    {"padding": True, "return_tensors": "np", "return_offsets_mapping": True, "return_length": True},
    {"return_overflowing_tokens": True, "return_length": True},
]
BATCH = 64
PAIR_CHARS = 100
HELPER_STEP = 7  # helpers are checked on every 7th row of a batch (they cost a Python call per token)
_SHOWN = 160


class Difference(AssertionError):
    """The first place where the accelerated tokenizer does not answer like stock."""


def load_pair(path):
    """(stock, accelerated) tokenizers loaded from one directory or tokenizer.json."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    from hf_tagtok.fast import TagTokenizerFast, accelerate

    path = pathlib.Path(path)
    if path.is_file():
        stock = PreTrainedTokenizerFast(tokenizer_file=str(path))
    else:
        stock = AutoTokenizer.from_pretrained(path)
        if isinstance(stock, TagTokenizerFast):  # saved by hf_tagtok: stock is the plain fast tokenizer
            stock = PreTrainedTokenizerFast.from_pretrained(path)
    if stock.pad_token is None:  # padding options need one; set on both sides, never compared against nothing
        stock.pad_token = stock.convert_ids_to_tokens(0)
    return stock, accelerate(stock)


def read_corpus(files, text_field="text"):
    """Documents as `hf_tagtok.documents` reads them (.txt lines, .jsonl records, parquet rows); the
    built-in multi-script sample when no file is given."""
    if not files:
        from hf_tagtok.sample_text import multiscript_texts
        return multiscript_texts()
    from hf_tagtok.documents import read_documents
    return read_documents(files, text_field)


def input_cases(texts):
    """(label, positional args, keyword args) for batches, single texts, pairs and pre-split words."""
    for start in range(0, len(texts), BATCH):
        chunk = texts[start:start + BATCH]
        yield f"batch texts[{start}:{start + len(chunk)}]", (chunk,), {}
    # Pairs and pre-split words always run on the stock backend's own path; two batches show they are routed
    # right. They are cut short: stock truncation of pairs builds every overflow combination (tokenizers
    # 0.23.3 runs out of memory on a pair of 300-character byte-level documents with max_length=16).
    for start in range(0, min(len(texts), 2 * BATCH), BATCH):
        chunk = [text[:PAIR_CHARS] for text in texts[start:start + BATCH]]
        yield f"pairs texts[{start}:...][:{PAIR_CHARS}]", (chunk, chunk[::-1]), {}
        yield f"words texts[{start}:...][:{PAIR_CHARS}]", ([text.split() for text in chunk],), {"is_split_into_words": True}
    for index in range(min(len(texts), 8)):
        yield f"single texts[{index}]", (texts[index],), {}


def compare_call(stock, accelerated, args, kwargs):
    """Raise Difference unless both tokenizers give the same BatchEncoding (or the same exception)."""
    try:
        expected = stock(*args, **kwargs)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # tokenizers' PanicException is a BaseException
        try:
            accelerated(*args, **kwargs)
        except BaseException as ours:
            if not stock_may_raise(stock, args, kwargs, error, ours):
                raise Difference(f"stock raised {error!r}, hf_tagtok raised {ours!r}") from None
            return
        raise Difference(f"stock raised {error!r}, hf_tagtok returned normally") from None
    actual = accelerated(*args, **kwargs)
    if list(actual.keys()) != list(expected.keys()):
        raise Difference(f"keys {list(actual.keys())} != stock {list(expected.keys())}")
    for key in expected:
        _compare_value(key, expected[key], actual[key])
    if actual.n_sequences != expected.n_sequences:
        raise Difference(f"n_sequences {actual.n_sequences} != stock {expected.n_sequences}")
    if expected.encodings:
        _compare_helpers(expected, actual)


def stock_may_raise(stock, args, kwargs, first, ours, tries=200):
    """Whether stock raises `ours` (same class and message) for this call, given it raised `first`: with
    several refused items in a batch, stock's threads report whichever error they meet first (an item that
    panics after one that errors wins now and then), so another error is retried until `ours` comes up."""
    wanted = (type(ours), str(ours))
    if (type(first), str(first)) == wanted:
        return True
    for _ in range(tries):
        try:
            stock(*args, **kwargs)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:
            if (type(error), str(error)) == wanted:
                return True
    return False


def _compare_value(key, expected, actual):
    if isinstance(expected, np.ndarray):
        same = (isinstance(actual, np.ndarray) and actual.dtype == expected.dtype
                and actual.shape == expected.shape
                and (all(np.array_equal(a, e) for a, e in zip(actual, expected)) if expected.dtype == object
                     else np.array_equal(actual, expected)))
    else:
        same = actual == expected
    if not same:
        raise Difference(f"{key}: hf_tagtok {_short(actual)} != stock {_short(expected)}")


def _compare_helpers(expected, actual):
    for batch in range(0, len(expected.encodings), HELPER_STEP):
        for helper in ("tokens", "word_ids", "sequence_ids"):
            if getattr(actual, helper)(batch) != getattr(expected, helper)(batch):
                raise Difference(f"{helper}({batch}) differs")
        count = len(expected.tokens(batch))
        for token in range(0, count, max(1, count // 8)):
            for helper in ("token_to_chars", "token_to_sequence"):
                if getattr(actual, helper)(batch, token) != getattr(expected, helper)(batch, token):
                    raise Difference(f"{helper}({batch}, {token}) differs")
        for char in range(0, 64, 5):
            if actual.char_to_token(batch, char) != expected.char_to_token(batch, char):
                raise Difference(f"char_to_token({batch}, {char}) differs")


def _short(value):
    text = repr(value.tolist() if isinstance(value, np.ndarray) and value.dtype != object else value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def run(stock, accelerated, texts, out=sys.stdout, progress=None):
    """Compare everything; return the number of calls compared. Raises Difference with the failing input.
    progress: a tqdm-like bar, updated per call compared (its total: count_calls(texts))."""
    compared = 0
    for options in OPTION_SETS:
        for label, args, kwargs in input_cases(texts):
            if progress is not None:
                progress.update(1)
            call = {**kwargs, **options}
            try:
                compare_call(stock, accelerated, args, call)
            except Difference as difference:
                first = args[0][0] if isinstance(args[0], list) and args[0] else args[0]
                raise Difference(f"{difference}\n  input: {label}, options {call}\n"
                                 f"  first text of that input: {_short(first)}") from None
            compared += 1
    try:
        ids = stock(texts[:BATCH])["input_ids"]
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # stock cannot encode here (the calls above checked ours raises alike): nothing to decode
        return compared
    for skip in (False, True):
        if accelerated.batch_decode(ids, skip_special_tokens=skip) != stock.batch_decode(ids, skip_special_tokens=skip):
            raise Difference(f"batch_decode(skip_special_tokens={skip}) differs")
    return compared + 2


def count_calls(texts):
    """How many calls `run` compares for these texts (a progress bar's total)."""
    return len(OPTION_SETS) * sum(1 for _ in input_cases(texts))


def main(argv=None):
    from hf_tagtok import cli_support

    parser = cli_support.parser("hf-tagtok conformance", __doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", required=True, help="tokenizer directory or tokenizer.json (local)")
    parser.add_argument("--corpus", nargs="*", default=[],
                        help="documents: .txt (one per line), .jsonl (--text-field), .parquet (default: the "
                             "built-in multi-script sample)")
    parser.add_argument("--text-field", default="text", help="the text field of .jsonl records and parquet rows")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    cli_support.require("conformance", "transformers")
    location = cli_support.tokenizer_location(args.tokenizer)
    texts = read_corpus(args.corpus, args.text_field)
    if not texts:
        raise cli_support.UserError("the corpus holds no documents")

    try:
        stock, accelerated = load_pair(location)
    except Exception as error:  # stock raises a bare Exception for an unreadable tokenizer.json
        raise cli_support.UserError(f"cannot load {location}: {str(error).splitlines()[0]}") from None
    native = [stage for stage, entry in accelerated.acceleration.items() if entry["native"]]
    print(f"tokenizer: {args.tokenizer} ({type(stock).__name__}); native stages: {', '.join(native) or 'none'}")
    print(f"corpus: {len(texts)} documents, {sum(map(len, texts))} characters; {len(OPTION_SETS)} option sets",
          flush=True)
    # stock's Rust panic hook prints each panic it turns into an exception; both sides raising the same one
    # is a pass, so that text is held back (and shown if the run fails)
    with cli_support.quiet_stderr() as stderr:
        bar = None if args.no_progress else cli_support.progress_bar(
            stderr.isatty(), total=count_calls(texts), unit="calls", desc="comparing", file=stderr)
        try:
            compared = run(stock, accelerated, texts, progress=bar)
        except Difference as difference:
            print(f"DIFFERENT: {difference}")
            return 1
        finally:
            if bar is not None:
                bar.close()
    print(f"identical: {compared} calls compared against stock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
