"""Random transformers calls, `TagTokenizerFast` against stock `PreTrainedTokenizerFast` on the same file:
`python -m conformance.fuzz_tokenizers --transformers` runs it over the zoo.

Each call draws every option `hf-tagtok conformance` checks (padding and truncation strategies, max_length,
stride, overflow, pad_to_multiple_of, padding side, the return_* flags, add_special_tokens,
split_special_tokens, numpy tensors), each either given a random value or left out, and one input shape: a
text, a batch, a pair, a batch of pairs, pre-split words alone or in pairs, or a batch with `text_target`,
their texts joined from `fuzz_tokenizers.pools`. The calls go one after another to the same two tokenizers,
so whatever a call leaves on stock's backend (transformers writes truncation, padding and
encode_special_tokens there) meets the next call. `conformance_cli.compare_call` checks every output key, the
BatchEncoding helpers, and that a call stock refuses raises an exception stock raises for it.
"""
import pathlib
import random
import tempfile
import time

from conformance.fuzz_tokenizers import member_seed, pools, random_text

# the value of each option when drawn; an option is left out of a call as often as not
OPTIONS = {
    "padding": (False, True, "longest", "max_length", "do_not_pad"),
    "truncation": (False, True, "only_first", "only_second", "longest_first", "do_not_truncate"),
    "max_length": (None, 1, 2, 3, 5, 8, 13, 24, 40, 64),
    "stride": (0, 1, 2, 4, 7),
    "return_overflowing_tokens": (True, False),
    "pad_to_multiple_of": (None, 1, 3, 8, 16),
    "padding_side": ("left", "right"),
    "return_offsets_mapping": (True, False),
    "return_special_tokens_mask": (True, False),
    "return_length": (True, False),
    "return_token_type_ids": (True, False),
    "return_attention_mask": (True, False),
    "add_special_tokens": (True, False),
    "split_special_tokens": (True, False),
    "return_tensors": (None, "np"),
}
BATCH_SIZES = (1, 2, 5, 16)
# stock's truncation of a pair builds every combination of both sides' windows: short pairs keep that small
PAIR_CHARS = 100


def random_options(rng):
    return {name: rng.choice(values) for name, values in OPTIONS.items() if rng.random() < 0.5}


def random_input(rng, text):
    """(positional args, keyword args) of one input shape; text() draws a text."""
    texts = [text() for _ in range(rng.choice(BATCH_SIZES))]
    firsts = [t[:PAIR_CHARS] for t in texts]
    pairs = [text()[:PAIR_CHARS] for _ in texts]
    return rng.choice((
        lambda: ((texts[0],), {}),
        lambda: ((texts,), {}),
        lambda: ((firsts, pairs), {}),
        lambda: ((firsts[0], pairs[0]), {}),
        lambda: (([t.split() for t in texts],), {"is_split_into_words": True}),
        lambda: (([t.split() for t in firsts], [t.split() for t in pairs]), {"is_split_into_words": True}),
        lambda: ((texts,), {"text_target": pairs}),
    ))()


def fuzz(stock, ours, seconds, seed):
    """(calls made, [(call description, message, first text)]): `ours` against `stock` (transformers
    tokenizers) on random calls for `seconds`, texts drawn from stock's backend."""
    from hf_tagtok.conformance_cli import Difference, compare_call

    rng = random.Random(seed)
    draw_pools = pools(stock.backend_tokenizer, rng)
    found, calls, end = [], 0, time.monotonic() + seconds
    while time.monotonic() < end:
        args, kwargs = random_input(rng, lambda: random_text(rng, *draw_pools))
        options = {**kwargs, **random_options(rng)}
        try:
            compare_call(stock, ours, args, options)
        except Difference as difference:
            first = args[0][0] if isinstance(args[0], list) and args[0] else args[0]
            found.append((f"{len(args)} argument(s), options {options}", str(difference), first))
        calls += 1
    return calls, found


def transformers_pair(stock_tokenizer):
    """(stock PreTrainedTokenizerFast, TagTokenizerFast) loaded from one saved file of a tokenizers.Tokenizer."""
    from hf_tagtok.conformance_cli import load_pair

    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "tokenizer.json"
        stock_tokenizer.save(str(path))
        return load_pair(path)


def fuzz_member(name, seconds, seed):
    """fuzz for one zoo member, seeded by its name too."""
    from conformance import tokenizer_zoo

    stock, ours = transformers_pair(tokenizer_zoo.load(name))
    return fuzz(stock, ours, seconds, member_seed(name, seed))
