"""The pure-Python assembly stage (hf_tagtok/_reference_assembly.py: truncation, post-processors, pairs,
padding) against stock, and hf_tagtok.Tokenizer against it, on zoo members covering every post-processor
kind (Template, Bert, Roberta, ByteLevel, Sequence, none).

The reference starts from stock's own model output for each text (the tokenizer with no post-processor,
truncation or padding, `add_special_tokens=False`), so this file tests assembly alone. Every field is
compared, overflowing windows to full depth; a configuration stock refuses must be refused by all three.
"""
import doctest
import itertools
import json

import pytest
import tokenizers

import hf_tagtok
from conformance import tokenizer_zoo
from hf_tagtok import _reference_assembly as reference
from hf_tagtok import sample_text

NAMES = ["llama3", "gpt2", "bert", "small_bytelevel", "small_added_strip", "small_split_bytelevel_template",
         "small_trim_offsets", "small_bert_processing", "small_roberta_processing", "small_metaspace_byte_fallback",
         "small_wordpiece_prefix", "small_wordlevel_punctuation_digits"]

TEXTS = ["Hello world, how are you?", "", "a", " leading and  double  spaces ", "don't stop 123 4567",
         "é naïve café 東京 😀", "x <|special|> y <s> z", "The quick brown fox jumps over the lazy dog again.",
         "   three spaces first"]
# pairs of short texts only: the overflowing windows of a pair are the product of both sides' windows
PAIRS = list(zip(TEXTS, TEXTS[3:] + TEXTS[:3]))
TEXTS += [text[:100] for text in sample_text.multiscript_texts()[5::140]]


# (room left after the post-processor's tokens, stride, strategy, direction): a max_length below the special
# tokens (stock does not truncate then), every strategy and direction, windows of no token at all, strides,
# and inputs stock refuses (stride not below a window, only_second without a pair, a sequence too short)
TRUNCATIONS = [None, (-1, 0, "LongestFirst", "Right"), (0, 0, "LongestFirst", "Right"),
               (8, 0, "LongestFirst", "Right"), (4, 2, "LongestFirst", "Left"), (11, 1, "LongestFirst", "Left"),
               (1, 0, "OnlyFirst", "Right"), (6, 2, "OnlyFirst", "Right"), (6, 0, "OnlyFirst", "Left"),
               (5, 1, "OnlySecond", "Right"), (9, 0, "OnlySecond", "Left")]
PADDINGS = [None,
            dict(strategy="BatchLongest", direction="Right", pad_to_multiple_of=8, pad_id=0, pad_type_id=0,
                 pad_token="[PAD]"),
            dict(strategy={"Fixed": 20}, direction="Left", pad_to_multiple_of=None, pad_id=3, pad_type_id=1,
                 pad_token="<p>")]


@pytest.fixture(scope="module", params=[name for name in NAMES if name in tokenizer_zoo.available()])
def member(request):
    try:
        stock = tokenizer_zoo.load(request.param)
    except tokenizer_zoo.Unavailable as error:
        pytest.skip(str(error))
    stock.no_truncation()
    stock.no_padding()
    post_processor = json.loads(stock.to_str())["post_processor"]
    model_only = tokenizers.Tokenizer.from_str(stock.to_str())
    model_only.post_processor = None
    return stock, hf_tagtok.Tokenizer.from_hf(stock), model_only, post_processor


def _model_output(model_only, text, type_id):
    encoding = model_only.encode(text, add_special_tokens=False)
    return reference.Encoding(encoding.ids, [type_id] * len(encoding), encoding.tokens, encoding.word_ids,
                              encoding.offsets, encoding.special_tokens_mask, encoding.attention_mask)


def _fields(encoding):
    return {name: list(getattr(encoding, name)) for name in reference.Encoding.COLUMNS + ("sequence_ids",)} | {
        "overflowing": [_fields(window) for window in encoding.overflowing]}


def _raises(call):
    try:
        call()
    except BaseException as error:  # stock's Rust panics (pyo3 PanicException) are not Exceptions
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return True
    return False


def _configure(tokenizer, truncation, padding):
    tokenizer.no_truncation()
    tokenizer.no_padding()
    if truncation is not None:
        tokenizer.enable_truncation(truncation["max_length"], stride=truncation["stride"],
                                    strategy={"LongestFirst": "longest_first", "OnlyFirst": "only_first",
                                              "OnlySecond": "only_second"}[truncation["strategy"]],
                                    direction=truncation["direction"].lower())
    if padding is not None:
        strategy = padding["strategy"]
        tokenizer.enable_padding(direction=padding["direction"].lower(), pad_id=padding["pad_id"],
                                 pad_type_id=padding["pad_type_id"], pad_token=padding["pad_token"],
                                 length=strategy["Fixed"] if isinstance(strategy, dict) else None,
                                 pad_to_multiple_of=padding["pad_to_multiple_of"])


@pytest.mark.parametrize("paired", [False, True], ids=["single", "pair"])
def test_assembly_native_equals_reference_equals_stock(member, paired):
    stock, native, model_only, post_processor = member
    inputs = PAIRS if paired else TEXTS
    if paired:
        items = [(_model_output(model_only, a, 0), _model_output(model_only, b, 1)) for a, b in PAIRS]
    else:
        items = [(_model_output(model_only, text, 0), None) for text in TEXTS]
    checked = refused = 0
    for spec, padding, add_special_tokens in itertools.product(TRUNCATIONS, PADDINGS, (True, False)):
        truncation = None
        if spec is not None:
            room, stride, strategy, direction = spec
            added = stock.num_special_tokens_to_add(paired) if add_special_tokens else 0
            truncation = dict(max_length=max(room + added, 0), stride=stride, strategy=strategy,
                              direction=direction)
        for tokenizer in (stock, native):
            _configure(tokenizer, truncation, padding)
        accepted_inputs, accepted_items = [], []
        for input_, item in zip(inputs, items):
            if _raises(lambda: reference.post_process(*item, add_special_tokens, post_processor, truncation, padding)):
                single = input_ if paired else (input_,)
                assert _raises(lambda: stock.encode(*single, add_special_tokens=add_special_tokens)), input_
                assert _raises(lambda: native.encode(*single, add_special_tokens=add_special_tokens)), input_
                refused += 1
            else:
                accepted_inputs.append(input_)
                accepted_items.append(item)
        expected = [_fields(e) for e in stock.encode_batch(accepted_inputs, add_special_tokens=add_special_tokens)]
        twin = [_fields(e) for e in reference.encode_batch(accepted_items, add_special_tokens, post_processor,
                                                            truncation, padding)]
        got = [_fields(e) for e in native.encode_batch(accepted_inputs, add_special_tokens=add_special_tokens)]
        context = (truncation, padding, add_special_tokens)
        for input_, want, mine, ours in zip(accepted_inputs, expected, twin, got):
            assert mine == want, (input_, context)
            assert ours == mine, (input_, context)
        checked += len(accepted_inputs)
    assert checked > 100
    if paired and stock.post_processor is not None:
        assert refused > 0  # the stride and only_second cases above reach stock's refusals


def test_docstring_example_runs():
    assert doctest.testmod(reference).failed == 0
