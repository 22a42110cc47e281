"""Tokenizer mode: diff every encoding field of hf_tagtok.Tokenizer against stock tokenizers.

`python -m conformance --mode tokenizer [--tokenizers a,b] [--limit N]` runs every zoo tokenizer on
the multi-script corpus, plain, with text pairs, with truncation (and its overflow) and padding, through
the columnar call and as pre-split words (`is_pretokenized=True`); it prints one line per (tokenizer,
variant) with the path that ran, and returns the number of differing encodings.
"""
import argparse

import numpy as np

FIELDS = ("ids", "type_ids", "tokens", "offsets", "attention_mask", "special_tokens_mask", "word_ids",
          "sequence_ids")

PAIR_CHARS = 120
TRUNCATED_PAIRS = 6
PRETOKENIZED = 20  # texts also encoded as pre-split words (is_pretokenized=True)
VARIANTS = {
    "plain": lambda tok: None,
    "truncate": lambda tok: tok.enable_truncation(24, stride=4),
    "truncate_left": lambda tok: tok.enable_truncation(17, strategy="only_first", direction="left"),
    "pad": lambda tok: tok.enable_padding(pad_id=0, pad_token="<pad>", pad_to_multiple_of=8),
    "pad_left_truncate": lambda tok: (tok.enable_padding(direction="left", length=40, pad_id=1),
                                      tok.enable_truncation(40)),
}


def encoding_diff(ours, stock, depth=0, max_depth=1):
    """The first field where two encodings differ (overflowing compared down to max_depth; None: all the
    way), else None."""
    for field in FIELDS:
        mine, theirs = getattr(ours, field), getattr(stock, field)
        if list(mine) != list(theirs):
            return f"{field}: {list(mine)[:12]} != {list(theirs)[:12]}"
    if ours.n_sequences != stock.n_sequences:
        return f"n_sequences {ours.n_sequences} != {stock.n_sequences}"
    if len(ours) != len(stock):
        return f"len {len(ours)} != {len(stock)}"
    if max_depth is not None and depth >= max_depth:  # stock nests overflow inside overflow (a tree that
        return None                                     # explodes for pairs): the harness checks one level
    if len(ours.overflowing) != len(stock.overflowing):
        return f"overflowing count {len(ours.overflowing)} != {len(stock.overflowing)}"
    for index, (mine, theirs) in enumerate(zip(ours.overflowing, stock.overflowing)):
        found = encoding_diff(mine, theirs, depth + 1, max_depth)
        if found:
            return f"overflowing[{index}].{found}"
    return None


def deep_diff(ours, stock):
    """Every field and n_sequences with overflow compared to full depth, then every helper on the top level
    (the tests' strictest comparison)."""
    return encoding_diff(ours, stock, max_depth=None) or helpers_diff(ours, stock)


def helpers_diff(ours, stock):
    """The first helper call (token_to_sequence, char_to_token, ...) over every index that answers differently."""
    words = [word for word in stock.word_ids if word is not None]
    ends = [end for _, end in stock.offsets]
    calls = [("token_to_sequence", (i,)) for i in range(len(stock) + 1)]
    calls += [(name, (i,)) for name in ("token_to_chars", "token_to_word") for i in range(len(stock))]
    calls += [(name, (word, sequence)) for name in ("word_to_tokens", "word_to_chars")
              for word in range(max(words, default=0) + 2) for sequence in (0, 1)]
    calls += [(name, (pos, sequence)) for name in ("char_to_token", "char_to_word")
              for pos in range(max(ends, default=0) + 1) for sequence in (0, 1)]
    for name, args in calls:
        mine, theirs = getattr(ours, name)(*args), getattr(stock, name)(*args)
        if mine != theirs:
            return f"{name}{args}: {mine} != {theirs}"
    return None


def columns_diff(arrays, stock_encodings):
    """Differences between a BatchArrays and the stock encodings of the same texts (first one only)."""
    lengths = [len(encoding.ids) for encoding in stock_encodings]
    if list(arrays.lengths) != lengths:
        return "lengths differ"
    flat = {
        "ids": [i for e in stock_encodings for i in e.ids],
        "type_ids": [i for e in stock_encodings for i in e.type_ids],
        "special_tokens_mask": [i for e in stock_encodings for i in e.special_tokens_mask],
        "attention_mask": [i for e in stock_encodings for i in e.attention_mask],
    }
    for field, expected in flat.items():
        if getattr(arrays, field).tolist() != expected:
            return f"{field} differs"
    expected_offsets = np.array([o for e in stock_encodings for o in e.offsets], dtype=np.int64).reshape(-1, 2)
    if not np.array_equal(arrays.offsets, expected_offsets):
        return "offsets differ"
    return None


def diff_tokenizer(stock, texts, variant="plain", pairs=False, ours=None):
    """List of (index, message) where hf_tagtok differs from `stock` under a settings variant.

    `stock` is configured in place (its truncation/padding are reset first); pass `ours` (an
    hf_tagtok.Tokenizer built from the same tokenizer) to reuse it, it is configured the same way.
    """
    import hf_tagtok

    reference = stock
    ours = ours if ours is not None else hf_tagtok.Tokenizer.from_hf(stock)
    for tokenizer in (reference, ours):
        tokenizer.no_truncation()
        tokenizer.no_padding()
        VARIANTS[variant](tokenizer)
    if pairs:  # stock's pair overflow grows with the product of both lengths: keep pairs short
        short = [text[:PAIR_CHARS] for text in texts]
        inputs = list(zip(short, short[1:] + short[:1]))
        if variant.startswith("truncate"):  # each stock pair overflow is a tree copied on every access
            inputs = inputs[:TRUNCATED_PAIRS]
    else:
        inputs = texts
    found, expected = _batch_diff(reference, ours, inputs)
    if expected is None:
        return found
    singles = [ours.encode(*item) if pairs else ours.encode(item) for item in inputs[:20]]
    expected_singles = [reference.encode(*item) if pairs else reference.encode(item) for item in inputs[:20]]
    found += [(index, "encode: " + message) for index, (mine, theirs) in enumerate(zip(singles, expected_singles))
              if (message := encoding_diff(mine, theirs))]
    if not pairs:
        message = columns_diff(ours.encode_batch_arrays(texts), expected)
        if message:
            found.append((-1, "encode_batch_arrays: " + message))
        words = [text.split() for text in texts[:PRETOKENIZED]]
        found += _batch_diff(reference, ours, words, "is_pretokenized: ", is_pretokenized=True)[0]
    return found


def _batch_diff(reference, ours, inputs, label="", **options):
    """([(index, message)], stock's encodings or None when stock raised) for encode_batch(inputs, **options)."""
    try:
        expected = reference.encode_batch(inputs, **options)
    except Exception as stock_error:  # stock refuses this input/setting: we must refuse it the same way
        try:
            ours.encode_batch(inputs, **options)
        except type(stock_error):
            return [], None
        return [(-1, f"{label}stock raised {type(stock_error).__name__}: {stock_error}; hf_tagtok did not")], None
    return [(index, label + message) for index, (mine, theirs) in enumerate(zip(ours.encode_batch(inputs, **options),
                                                                                 expected))
            if (message := encoding_diff(mine, theirs))], expected


def path_label(ours, sample):
    """"native" when ours encodes `sample` (a text or a pair) natively under its current settings, else
    "stock" (an encoding of stock's own class means stock ran; "stock, columnar replayed" when the columnar
    call replays it) with the report's reasons."""
    import tokenizers

    if not isinstance(ours.encode_batch([sample])[0], tokenizers.Encoding):
        return "native"
    path = "stock"
    if isinstance(sample, str) and ours._replayed_batch([sample], True, True) is not None:
        path = "stock, columnar replayed"
    reasons = [f"{stage}: {entry['reason']}" for stage, entry in ours.acceleration.items()
               if not entry["native"] and not entry["reason"].startswith("native here")]
    return f"{path}; " + ("; ".join(reasons) or "the report names no stage (input kind not native)")


def run(args) -> int:
    from conformance import tokenizer_zoo
    from hf_tagtok import sample_text

    parser = argparse.ArgumentParser(prog="python -m conformance --mode tokenizer")
    parser.add_argument("--tokenizers", default=",".join(tokenizer_zoo.available()))
    parser.add_argument("--limit", type=int, default=0, help="only the first N corpus documents")
    parser.add_argument("--quick", action="store_true", help="every 5th corpus document")
    options, _ = parser.parse_known_args(list(args))
    texts = sample_text.multiscript_texts()
    if options.quick:
        texts = texts[::5]
    if options.limit:
        texts = texts[:options.limit]
    total = 0
    for name in options.tokenizers.split(","):
        import hf_tagtok

        try:
            stock = tokenizer_zoo.load(name)
        except tokenizer_zoo.Unavailable as error:
            print(f"{name:32s} skipped: {error}")
            continue
        ours = hf_tagtok.Tokenizer.from_hf(stock)
        for variant in VARIANTS:
            for pairs in (False, True):
                found = diff_tokenizer(stock, texts, variant, pairs, ours)
                total += len(found)
                label = f"{name:32s} {variant:18s} {'pairs' if pairs else 'single':6s}"
                print(f"{label} {len(texts)} texts, {len(found)} differ"
                      + (f"  first: {found[0]}" if found else "") + f"  [{path_label(ours, ('a', 'b') if pairs else 'a')}]")
    return total
