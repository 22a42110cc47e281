"""Plan the native pipeline of a stock tokenizer, stage by stage.

`analyse` asks each stage module (normalizers, added_tokens, pre_tokenizers, models, processors: one per C
stage of ext/pipeline/) for its spec and says for each stage whether the native pipeline covers it and why
not; `plan` builds the native pipeline (`hf_tagtok._native.Pipeline` over a `PipelineSpec`) when every stage
is covered, else returns None (stock then runs the whole encode). When only the pre-tokenizer is not
covered, but it keeps every byte in order, `plan` also builds a replaying pipeline: it runs every other
stage natively on the byte-level BPE tokens stock's fast call gives per text, for the columnar call (offsets
and post-processing from our side, at the cost of stock's ids). When only the normalizer and the
pre-tokenizer are not, for want of Replace steps and a Split whose regex the compiler refuses, it builds the
pipeline with those steps taking their matches from stock's regex, per text (`Gated`, hf_tagtok.gate), in
preference to replaying; a Split after other steps only when its matches, found over the whole text, cross
none of the pieces those steps cut in the built-in sample (each text where one does costs the gate and stock).
`plan_key` tells when a plan is stale; `NativeEncoder` is a built pipeline plus what encodings need to name
their tokens.
"""
import functools
import json
import operator
import types
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from hf_tagtok import added_tokens, models, normalizers, pre_tokenizers, processors
from hf_tagtok.errors import StockDecides, Unsupported, native_module
from hf_tagtok.gate import MatchGate
from hf_tagtok.pre_tokenizers import byte_chars, char_bytes
from hf_tagtok.sample_text import multiscript_texts

_PIPELINE_STAGES = ("added_tokens", "normalizer", "pre_tokenizer", "model", "post_processor")


@dataclass(frozen=True)
class TrimSpec:
    """Byte-level offset trimming (tp_pipeline's trim_* fields): per named token, how many leading and
    trailing chars HF's trim_offsets counts as spaces."""
    add_prefix_space: bool
    lead: bytes  # per entry
    trail: bytes
    ids: np.ndarray  # sorted uint32 id of each entry, or None: entry k is id k


@dataclass(frozen=True)
class PipelineSpec:
    """Everything `hf_tagtok._native.Pipeline` builds a pipeline from, one spec per stage."""
    normalizer: normalizers.NormalizerSpec  # None: no normalizer
    added_tokens: list  # added_tokens.AddedTokenSpec per added token
    pre_tokenizer: pre_tokenizers.PreTokenizerSpec
    model: object  # models.BpeSpec, models.VocabSpec or models.UnigramSpec
    post_processor: processors.ProcessorSpec
    encode_special_tokens: bool  # special added tokens are not matched
    trim: TrimSpec  # None: offsets are not trimmed
    added: tuple  # tokens the post-processor adds to a single sequence and to a pair
    spellings: models.Spellings = None  # a replaying pipeline's (pre_tokenizer None): what each token spells


def _token_names(stock, added_tokens):
    """Token string by id: a list (None at unnamed ids) when the ids are dense enough, else a dict, so its
    size follows the number of tokens, not the largest id."""
    vocab = stock.get_vocab(with_added_tokens=True)
    ids = [*vocab.values(), *(token.id for token in added_tokens)]
    size = max(ids) + 1 if ids else 0
    names = {} if size > 2 * len(ids) + 1024 else [None] * size
    for token, token_id in vocab.items():
        names[token_id] = token
    for token in added_tokens:  # a normalized token is named by its normalized match, as stock does
        names[token.id] = token.pattern
    return names


def _space_counts(token_names):
    """(ids or None, lead, trail): per named token, the leading and trailing chars that HF's trim_offsets
    counts as spaces (Ġ or whitespace); ids (sorted uint32) name the entries when token_names is a dict,
    else entry k is id k.

    Whitespace is what stock's WhitespaceSplit removes (Rust char::is_whitespace), probed per token; the
    byte-level alphabet itself holds no whitespace char, so pure-alphabet tokens only count 'Ġ'."""
    from tokenizers.pre_tokenizers import WhitespaceSplit

    splitter, space, alphabet = WhitespaceSplit(), byte_chars()[ord(" ")], char_bytes()
    ids = None
    if isinstance(token_names, dict):
        ids = np.array(sorted(token_names), dtype=np.uint32)
        token_names = [token_names[token_id] for token_id in ids.tolist()]
    lead, trail = bytearray(len(token_names)), bytearray(len(token_names))
    for entry, token in enumerate(token_names):
        if not token:
            continue
        if all(char in alphabet for char in token):
            spaces = [char == space for char in token]
        else:
            inside = {i for piece, (start, end) in splitter.pre_tokenize_str(token) for i in range(start, end)}
            spaces = [char == space or i not in inside for i, char in enumerate(token)]
        lead[entry] = min(255, next((i for i, s in enumerate(spaces) if not s), len(spaces)))
        trail[entry] = min(255, next((i for i, s in enumerate(reversed(spaces)) if not s), len(spaces)))
    return ids, bytes(lead), bytes(trail)


class NativeEncoder:
    """A built pipeline plus what encodings need to name their tokens and place their sequences."""

    def __init__(self, pipeline, stock, added_tokens, post, encode_special_tokens, piece_named_id=None,
                 stock_raises_id=None):
        self.pipeline = pipeline
        # the value the pipeline was built for: the stock object's own may have changed since
        self.encode_special_tokens = encode_special_tokens
        # an id the model emits for a word stock raises on (a Unigram without unk_id): such a call runs on stock
        self.stock_raises_id = stock_raises_id
        self._stock, self._added_tokens = stock, added_tokens
        # added tokens whose token string is the matched text (with its spaces)
        self.strip_ids = frozenset(token.id for token in added_tokens if token.lstrip or token.rstrip)
        self.post_names = post.names  # post-processor token strings (word column -2 - index)
        self.single = post.single  # single-sequence Side per add_special_tokens (hf_tagtok.processors)
        # a Unigram unk token is named by the (normalized, pre-tokenized) text of the piece it covers
        self.piece_named_id = piece_named_id
        self._piece_names = (None, None)  # ((batch, item, second), names) of the last sequence read

    def piece_name(self, batch, item, second, word, start, end, token_id):
        """Stock's token string for a piece-named or stripping token: read from stock's own encoding of that
        sequence (without truncation), which equals the native one token for token but for the offsets of a
        window's first token, which keep the one space trim_offsets leaves at a sequence's start."""
        (last, names), key = self._piece_names, (item, second)
        if last is None or last[0] is not batch or last[1:] != key:
            sequence = batch.pairs[item] if second else batch.texts[item]
            untruncated = self._untruncated
            untruncated.encode_special_tokens = self.encode_special_tokens  # not part of the JSON
            encoding = untruncated.encode(sequence, is_pretokenized=batch.pretokenized, add_special_tokens=False)
            names = {(w, s, e, i): token for w, (s, e), i, token
                     in zip(encoding.word_ids, encoding.offsets, encoding.ids, encoding.tokens)}
            self._piece_names = ((batch, *key), names)  # tokens are read encoding by encoding
        key = (word, start, end, token_id)
        return names[key] if key in names else names[(word, min(start + 1, end), end, token_id)]

    @functools.cached_property
    def _untruncated(self):
        copy = models.stock_copy(self._stock, self._stock.to_str())
        copy.no_truncation()
        copy.no_padding()
        return copy

    @functools.cached_property
    def token_names(self):
        """Token string per id. Built on first use (only `Encoding.tokens` needs it): reading the vocabulary
        costs ~0.1 s for 128k tokens, and a list that long costs the collector a rescan on the first encode."""
        return _token_names(self._stock, self._added_tokens)


def _state(component):
    try:
        return None if component is None else component.__getstate__()
    except Exception:  # a Python (custom) component: while one is set, stock runs everything anyway
        return "custom"


def plan_key(stock, next_added):
    """What a plan depends on that is cheap to read (a few microseconds a call): when it changes, the plan
    is stale. Components set on the stock object directly (`backend_tokenizer.post_processor = ...`,
    `model.ignore_merges = ...`, a model put in the place of another or trained in place) change it. The model
    is read for its type, settings, size and a few token names (`model_probes`); the added tokens by the name
    of `next_added` (`next_added_id` when the plan was made), which a token new to the stock object takes
    when it is added there directly. Added tokens it already knew (a token of the model's vocabulary, one
    given other options) are seen when added through hf_tagtok or transformers, which replan."""
    return components_key(stock, next_added) + (stock.encode_special_tokens,)


def components_key(stock, next_added):
    """`plan_key` without encode_special_tokens, for a caller that plans once per value of it."""
    return (tuple(map(_state, (stock.normalizer, stock.pre_tokenizer, stock.post_processor))),
            *model_key(stock, _KEY_PROBES), stock.id_to_token(next_added))


# A key holds each component's state as stock writes it: a few hundred bytes, but a Precompiled normalizer's holds
# its whole charsmap (~320 KB on the T5 and XLM-R files: ~230 µs a key, ~0.7 ns a state byte). There the native
# call saves ~0.43 µs a char of one text against transformers' stock call, about half that a char of a batch
# (stock's encode_batch runs on two threads), and ~4 µs a sequence of a batch, as much as 16 of its chars. A call
# weighing (weighs_chars) less than one char per 256 state bytes goes to stock: set for batches, that bar also
# sends single texts of ~600-1,250 chars there, which the native call would take up to ~1.9x faster.
_KEY_BYTES_PER_CHAR = 256
_CHARS_A_SEQUENCE = 16


def fewest_chars_worth_a_key(key):
    """The fewest chars a call must weigh (weighs_chars) for the native path, which reads a key again first
    (plan_key, components_key), to cost less than stock's; 0 when the key's states are small."""
    return sum(len(state) for state in key[0] if isinstance(state, bytes)) // _KEY_BYTES_PER_CHAR


def weighs_chars(sequences, count):
    """Whether stock's work on the sequences (texts, lists of words, or None) weighs `count` chars: their chars,
    and _CHARS_A_SEQUENCE for each. Reads only as far as it must."""
    total = 0
    for sequence in sequences:
        if total >= count:
            return True
        if sequence is not None:
            total += _CHARS_A_SEQUENCE + (len(sequence) if isinstance(sequence, str) else sum(map(len, sequence)))
    return total >= count


def stock_is_cheaper(key, sequences):
    """Whether stock encodes a call of these sequences for less than reading `key` again costs (weighs_chars
    below fewest_chars_worth_a_key)."""
    return not weighs_chars(sequences, fewest_chars_worth_a_key(key))


def next_added_id(stock, added=None):
    """The id stock gives the next token added to it that it does not know yet: one past its largest added
    token's, or its model's size when that is larger. `added`: its get_added_tokens_decoder(), when read already."""
    added = stock.get_added_tokens_decoder() if added is None else added
    return max(max(added, default=-1) + 1, stock.get_vocab_size(with_added_tokens=False))


def model_key(stock, probes):
    """The stock model's type, settings and vocabulary size, and the names of `probes` ids spread over it."""
    model = stock.model
    size = stock.get_vocab_size(with_added_tokens=False)
    return type(model), model_settings(model), size, model_probes(model, size, probes)


# Token names a plan key reads: a model of the same type, settings and size put in the place of the planned
# one (or trained in place) almost always names some of them otherwise; each costs ~0.2 µs.
_KEY_PROBES = 4


@functools.lru_cache(maxsize=None)
def _settings_getter(model_type):
    names = sorted(name for name, attribute in vars(model_type).items()
                   if isinstance(attribute, types.GetSetDescriptorType))
    return operator.attrgetter(*names) if names else lambda _model: ()


def model_settings(model):
    """The value of every setting the stock model's Python class exposes (dropout, unk_token, ...), in name
    order."""
    return _settings_getter(type(model))(model)


@functools.lru_cache(maxsize=64)
def _probe_ids(size, count):
    step = max(1, size // count)
    return (*range(0, size - 1, step), size - 1) if size else ()


def model_probes(model, size, count):
    """The names of `count` ids spread over a vocabulary of `size` tokens, the last id among them."""
    return tuple(map(model.id_to_token, _probe_ids(size, count)))


# Stock writes a vocabulary by walking every id up to the largest and listing the missing ones (4 bytes
# each): 2**31 - 1 costs it ~8 GB and ~30 s (or aborts the process), 10**8 ~400 MB.
_MAX_WRITTEN_HOLES = 1 << 22


def config_text(stock):
    """stock.to_str(), or Unsupported when stock would spend memory and time per missing vocabulary id
    writing it (ids far sparser than the vocabulary): planning then never asks stock for its JSON. A Python
    component raises stock's own exception before the vocabulary is read (70 ms for Llama-3's)."""
    for component in (stock.normalizer, stock.pre_tokenizer, stock.post_processor, stock.decoder):
        if component is not None:
            component.__getstate__()
    if type(stock.model).__name__ in ("BPE", "WordPiece", "WordLevel"):
        vocab = stock.get_vocab(with_added_tokens=False)
        holes = max(vocab.values()) + 1 - len(vocab) if vocab else 0
        if holes > _MAX_WRITTEN_HOLES:
            raise Unsupported(f"vocabulary ids are sparse ({len(vocab)} tokens, largest id {max(vocab.values())}): "
                              "stock's to_str() would allocate per missing id, so stock runs everything "
                              "(load from the file or JSON text to run natively)")
    return stock.to_str()


# The members of tokenizer.json that whoever loaded a stock tokenizer may have set since (transformers sets the
# post-processor, and a pre-tokenizer for some checkpoints): the rest of the text is the model's and the settings
# a plan does not read (added tokens, truncation and padding are read from stock itself).
_COMPONENTS = ("normalizer", "pre_tokenizer", "post_processor", "decoder")


def config_as_loaded(stock, loaded_text):
    """The text config_text(stock) would give as far as a plan reads it, from the tokenizer.json text stock's model
    was loaded from (the caller vouches for that) and stock's components as they are now: stock does not write
    its vocabulary (0.17 s of a Llama-3 load), nor is any checked for holes. None when the text lacks one of the
    components' members."""
    spans = native_module().member_spans(loaded_text, (), _COMPONENTS)
    if len(spans) < len(_COMPONENTS):
        return None
    pieces, at = [], 0
    for name in sorted(spans, key=spans.get):
        start, end = spans[name]
        component = getattr(stock, name)
        pieces += [loaded_text[at:start], "null" if component is None else component.__getstate__().decode()]
        at = end
    return "".join(pieces) + loaded_text[at:]


def analyse(stock, text=None):
    """(per-stage report, {stage name: its spec, for the native stages; "encode_special_tokens": bool},
    the tokenizer's JSON dict) (spec and config None when it cannot be read)."""
    if text is None:
        try:
            text = config_text(stock)
        except Unsupported as error:
            return {name: {"native": False, "reason": str(error)} for name in _PIPELINE_STAGES}, None, None
        except Exception as error:  # Python (custom) components: stock cannot write them, nor can we read them
            reason = f"stock cannot serialize this tokenizer ({error}), so stock runs everything"
            return {name: {"native": False, "reason": reason} for name in _PIPELINE_STAGES}, None, None
    config = models.load_config(text)
    report, spec = {}, {}

    def stage(name, build):
        try:
            spec[name] = build()
            absent = name in ("normalizer", "pre_tokenizer", "post_processor") and config.get(name) is None
            report[name] = {"native": True, "reason": "none configured" if absent else "native"}
        except Unsupported as error:
            report[name] = {"native": False, "reason": str(error)}

    stage("normalizer", lambda: normalizers.spec(config.get("normalizer")))
    model_emits = models.model_emits(config["model"])
    def added_spec():
        loaded = added_tokens.loaded(stock)
        added_tokens.check_ids(loaded, config["model"])
        return added_tokens.spec(loaded, stock.normalizer, model_emits)

    stage("added_tokens", added_spec)
    stage("pre_tokenizer", lambda: pre_tokenizers.spec(config.get("pre_tokenizer")))
    byte_level = '"ByteLevel"' in json.dumps(config.get("pre_tokenizer"))
    stage("model", lambda: models.spec(models.loaded(stock, config["model"]), byte_level, config.get("pre_tokenizer")))
    stage("post_processor", lambda: processors.spec(config.get("post_processor")))
    spec["encode_special_tokens"] = bool(stock.encode_special_tokens)
    return report, spec, config


class Gated(NamedTuple):
    """The encoder of the pipeline whose refused steps take their matches from `gate`, per text."""
    encoder: "NativeEncoder"
    gate: MatchGate


class Plan(NamedTuple):
    report: dict  # per stage: {"native": bool, "reason": str}
    native: "NativeEncoder"  # None when some stage is not covered
    replay: "NativeEncoder"  # the replaying encoder when only a byte-keeping pre-tokenizer is not, else None
    layout: tuple  # a single text's post-processor Sides (processors.ProcessorSpec.single) when it is native
    gated: Gated = None  # when only refused Replace and Split regexes are not (hf_tagtok.gate)


def plan(stock, text=None) -> Plan:
    report, spec, config = analyse(stock, text)
    missing = [] if spec is None else [name for name in _PIPELINE_STAGES if not report[name]["native"]]
    layout = spec["post_processor"].single if spec is not None and "post_processor" in spec else None
    if config is None:
        layout = _layout_alone(stock)
    replay = missing == ["pre_tokenizer"] and _replayable(spec["model"], config.get("pre_tokenizer"))
    gateable = bool(missing) and set(missing) <= {"normalizer", "pre_tokenizer"}
    if spec is None or missing and not (replay or gateable):
        return Plan(report, None, None, layout)
    try:
        native = native_module()
    except Unsupported as error:
        report["model"] = {"native": False, "reason": str(error)}
        return Plan(report, None, None, layout)
    gated = _gated(native, stock, spec, config, report) if gateable else None
    if gated is not None:
        return Plan(report, None, None, layout, gated)
    if replay:
        spec = {**spec, "pre_tokenizer": None, "spellings": models.spellings(spec["model"])}
        report["pre_tokenizer"]["reason"] += ("; encode_batch_arrays takes stock's token ids (its fast call) and "
                                              "runs the other stages natively")
        return Plan(report, None, _encoder(native, stock, spec), layout)
    if missing:
        return Plan(report, None, None, layout)
    from hf_tagtok.errors import UnsupportedShape  # the compiled engine's, once it is loaded
    try:
        return Plan(report, _encoder(native, stock, spec), None, layout)
    except UnsupportedShape as error:
        report["pre_tokenizer"] = {"native": False, "reason": f"pre-tokenizer: {error}"}
        return Plan(report, None, None, layout)


def _layout_alone(stock):
    """A single text's post-processor layouts read from stock's post-processor alone, when stock cannot write the
    whole tokenizer (a Python component elsewhere): the columnar call then reads only ids from stock's encodings.
    None when the post-processor is not native, or is a Python component itself."""
    state = _state(stock.post_processor)
    if state == "custom":
        return None
    try:
        return processors.spec(None if state is None else json.loads(state)).single
    except Unsupported:
        return None


def _gated(native, stock, spec, config, report):
    """The Gated encoder when the normalizer misses only Replace steps and the pre-tokenizer only a Split whose
    regex the compiler refuses (see pre_tokenizers.gated), else None."""
    from hf_tagtok.errors import UnsupportedShape

    try:
        normalizer, segments, tail = normalizers.gated(config.get("normalizer"))
        if "pre_tokenizer" in spec:
            pre_tokenizer, split = spec["pre_tokenizer"], None
        else:
            pre_tokenizer, split = pre_tokenizers.gated(config.get("pre_tokenizer"))
        encoder = _encoder(native, stock, {**spec, "normalizer": normalizer, "pre_tokenizer": pre_tokenizer})
    except Unsupported:
        return None
    except UnsupportedShape as error:
        report["pre_tokenizer"] = {"native": False, "reason": f"pre-tokenizer: {error}"}
        return None
    if segments:
        report["normalizer"]["reason"] += ("; stock's regex finds such a Replace's matches in each text and the "
                                           "native normalizer replaces them")
    gated = Gated(encoder, MatchGate(segments, spec["added_tokens"], None if split is None else (tail, split)))
    if split is not None and pre_tokenizer.steps[0]["kind"] != "split_given":
        crossed = _crossed_share(gated)
        if crossed:
            report["pre_tokenizer"]["reason"] += (f"; the Split's matches cross the pieces the steps before it cut in "
                                                  f"{crossed:.1%} of the sample texts, which stock must encode")
            return None
    if split is not None:
        report["pre_tokenizer"]["reason"] += ("; stock's regex finds the Split's matches in each normalized text "
                                              "and the native pre-tokenizer splits there")
    return gated


def _crossed_share(gated):
    """The share of the built-in multi-script sample's texts the gate passes that the gated pipeline hands back
    to stock (a match crossing a piece, hf_tagtok.pre_tokenizers.gated). A Split after other steps is gated only
    when it is none: such a text costs the gate, the pipeline and stock, and a call of pairs, truncation or
    padding (`TagTokenizerFast`'s too) goes to stock whole when one of its texts does."""
    texts = multiscript_texts()
    mask, given = gated.gate.given(texts)
    passed = [text for text, passes in zip(texts, mask) if passes]
    if not passed:
        return 0.0
    try:
        gated.encoder.pipeline.encode(passed, offsets=False, words=False, given=given)
    except StockDecides as decided:
        return len(decided.texts) / len(passed)
    return 0.0


def _replayable(model, pre_tokenizer):
    """Whether stock's token ids spell the text stretch by stretch: byte-level BPE tokens (no unk, byte
    fallback or affixes) after a pre-tokenizer that keeps every byte in order."""
    return (model.kind == "BPE" and not model.char_level and model.unk_id is None and model.byte_tokens is None
            and not model.prefix and not model.suffix and pre_tokenizers.keeps_every_byte(pre_tokenizer))


def _encoder(native, stock, spec):
    """The NativeEncoder of a complete spec dict (the pipeline's pre-tokenizer may raise UnsupportedShape)."""
    trim = spec["post_processor"].trim
    if trim is not None:
        names = _token_names(stock, spec["added_tokens"])
        for token in spec["added_tokens"]:  # a stripping token's string is its match: the pipeline counts those
            if token.lstrip or token.rstrip:
                names[token.id] = None
        ids, lead, trail = _space_counts(names)
        trim = TrimSpec(trim.add_prefix_space, lead, trail, ids)
    added = (stock.num_special_tokens_to_add(False), stock.num_special_tokens_to_add(True))
    spec = PipelineSpec(**spec, trim=trim, added=added)
    pipeline = native.Pipeline(spec)
    model = spec.model
    unigram = model.kind == "Unigram"
    piece_named_id = model.unk_id if unigram else None
    stock_raises_id = native.UNIGRAM_RAISES if unigram and model.unk_id is None else None
    return NativeEncoder(pipeline, stock, spec.added_tokens, spec.post_processor, spec.encode_special_tokens,
                         piece_named_id, stock_raises_id)
