"""Translate a stock tokenizer's config into the native pipeline, stage by stage.

`report` says for each stage whether the native pipeline covers it and why not; `plan` builds the
native pipeline when every stage is covered, else returns None (stock then runs the whole encode).
The native pipeline receives engine-neutral specs only (bytes, ids, flags): no tokenizer.json in C.
"""
import functools
import json

import numpy as np

from hf_tagtok import added_tokens, normalizers, processors
from hf_tagtok.errors import Unsupported, native_module
from hf_tagtok.pre_tokenizers import byte_chars, char_bytes

_PIPELINE_STAGES = ("added_tokens", "normalizer", "pre_tokenizer", "model", "post_processor")


# The table limits of ext/pipeline/tp_bpe.h (ids and ranks are packed into 64-bit words).
_NATIVE_MAX_TOKENS = (1 << 21) - 1
_NATIVE_MAX_MERGES = (1 << 22) - 1


def _pre_tokenizer_steps(config):
    try:
        from hf_tagtok import pre_tokenizers
        convert = pre_tokenizers.engine_steps
    except (ImportError, AttributeError) as error:
        raise Unsupported(f"no pre-tokenizer translation available yet ({error})")
    try:
        return convert(config)
    except ValueError as error:
        raise Unsupported(f"pre-tokenizer: {error}")


def _bpe_spec(model, byte_level):
    if model.get("type") != "BPE":
        raise Unsupported(f"model {model.get('type')} is not native yet")
    if model.get("dropout") not in (None, 0.0):
        raise Unsupported(f"BPE dropout={model.get('dropout')!r} is not native (it is random)")

    native = native_module()

    def as_bytes(text):  # byte level: the byte string a rendered token stands for; None if it has none
        return native.token_bytes({text: 0}, byte_level)[0]

    vocab = model["vocab"]
    dense, model_ids = _dense_ids(vocab)  # the native tables index `dense`; the pipeline emits model_ids[index]
    tokens = native.token_bytes(dense, byte_level)  # None: no byte string (byte level: unreachable from bytes)
    spec = {"tokens": tokens, "ignore_merges": bool(model.get("ignore_merges")), "char_level": not byte_level,
            "model_ids": model_ids}
    prefix, suffix = model.get("continuing_subword_prefix") or "", model.get("end_of_word_suffix") or ""
    spec["prefix"], spec["suffix"] = as_bytes(prefix), as_bytes(suffix)
    if spec["prefix"] is None or spec["suffix"] is None or max(len(spec["prefix"]), len(spec["suffix"])) > 64:
        raise Unsupported("BPE continuing_subword_prefix/end_of_word_suffix outside the byte alphabet or "
                          "longer than 64 bytes is not native")
    if model.get("byte_fallback") and (prefix or suffix):
        raise Unsupported("BPE byte_fallback with continuing_subword_prefix/end_of_word_suffix is not native "
                          "(stock's offsets for the fallback bytes then run past the word)")
    if byte_level:
        _check_byte_symbols(dense, tokens, (prefix, spec["prefix"]), (suffix, spec["suffix"]))
    unk = model.get("unk_token")
    if unk is not None and unk not in vocab:
        raise Unsupported(f"BPE unk_token {unk!r} is not in the vocabulary")
    spec["unk_id"] = None if unk is None else dense[unk]
    spec["fuse_unk"] = bool(model.get("fuse_unk"))
    spec["byte_tokens"] = None
    if model.get("byte_fallback"):  # a char some of whose byte tokens are missing is unknown instead
        spec["byte_tokens"] = [dense.get(f"<0x{byte:02X}>") for byte in range(256)]
    merges = _merge_ids(model.get("merges"), vocab, len(prefix.encode()))
    if model_ids is not None:  # every id of a merge is a vocabulary id, so it has an index
        merges = np.searchsorted(model_ids, merges).astype(np.uint32)
    if len(tokens) > _NATIVE_MAX_TOKENS or len(merges) > _NATIVE_MAX_MERGES:
        raise Unsupported(f"BPE with {len(tokens)} ids / {len(merges)} merges exceeds the native tables "
                          f"({_NATIVE_MAX_TOKENS} / {_NATIVE_MAX_MERGES})")
    spec["merges"] = merges
    return spec


def _check_ids(vocab):
    """An id two tokens share (stock names it by one of them at random) has no single byte string; the
    largest u32 is the native tables' no-token mark."""
    if len(set(vocab.values())) < len(vocab):
        raise Unsupported("two vocabulary tokens share an id; not native")
    if vocab and max(vocab.values()) >= 0xFFFFFFFF:
        raise Unsupported("vocabulary id 2**32 - 1 is not native (it marks no token in the native tables)")


def _dense_ids(vocab):
    """(vocab, None) when its ids are 0..n-1; else (the same tokens numbered 0..n-1 in id order, their ids as
    a sorted uint32 array). Native tables are then sized by the number of tokens, never by the largest id."""
    _check_ids(vocab)
    if not vocab or max(vocab.values()) == len(vocab) - 1:  # distinct ids >= 0: then exactly 0..n-1
        return vocab, None
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    return ({token: index for index, (token, _id) in enumerate(ordered)},
            np.fromiter((token_id for _token, token_id in ordered), dtype=np.uint32, count=len(ordered)))


def _last_merge_wins(merges):
    """Stock keeps a pair's last rank when the merges list it twice (it fills a map in order)."""
    keys = (merges[:, 0].astype(np.uint64) << np.uint64(32)) | merges[:, 1]
    # hash buckets first: sorting every key (np.unique) cost ~0.09 s on Llama-3's 280k merges
    buckets = ((keys * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(42)).astype(np.intp)
    shared = np.bincount(buckets, minlength=1 << 22)[buckets] > 1
    if not shared.any():
        return merges
    candidates = np.flatnonzero(shared)
    _, last_in_reversed = np.unique(keys[candidates][::-1], return_index=True)
    keep = np.ones(len(keys), dtype=bool)
    keep[candidates] = False
    keep[candidates[len(candidates) - 1 - last_in_reversed]] = True
    return merges[keep]


class _MergesText:
    """A BPE model's merges left as their JSON text inside the configuration's (json.loads spent ~0.14 s of
    Llama-3's ~0.18 s on them, a list and two str per merge); the native module reads the pairs there,
    once per prefix length (the vocabulary is always the same model's)."""

    def __init__(self, text, span):
        self.text, self.span = text, span
        self.ids_by_prefix_len = {}


def _load_config(text):
    """The configuration as json.loads gives it, but with model.merges as a _MergesText when the native
    module can read it (without that module the merges are never used: the model stage is not native)."""
    try:
        span = native_module().member_span(text, ("model", "merges"))
    except Unsupported:
        span = None
    if span is None:
        return json.loads(text)
    start, end = span
    config = json.loads(text[:start] + "[]" + text[end:])
    config["model"]["merges"] = _MergesText(text, span)
    return config


def _merge_ids(merges, vocab, prefix_len):
    """(k, 3) uint32 array of (left id, right id, merged id) of the merges whose three tokens are in the
    vocabulary, in order. Stock names the merged token left + right minus prefix_len bytes, whatever right
    starts with, and reads a str merge only with exactly one space."""
    native = native_module()
    if merges is None:
        return native.pair_ids_in(vocab, "[]", 0, 2, prefix_len)
    if prefix_len not in merges.ids_by_prefix_len:
        try:
            merges.ids_by_prefix_len[prefix_len] = _last_merge_wins(
                native.pair_ids_in(vocab, merges.text, *merges.span, prefix_len))
        except (TypeError, ValueError) as error:
            raise Unsupported(f"BPE merges: {error}")
    return merges.ids_by_prefix_len[prefix_len]


def _check_byte_symbols(vocab, tokens, prefix, suffix):
    # Byte level: stock finds a byte's initial symbol in each position (first/inner/last/only) by its
    # rendered name and the C path by its bytes, so the symbol's id must hold those bytes in `tokens` (a
    # name sharing its id with another may have lost it there). A missing symbol is fine: both handle
    # the byte as stock's merge_word handles an unknown char (byte_fallback, unk, or dropped).
    for byte, char in enumerate(byte_chars()):
        for before, before_bytes in {("", b""), prefix}:
            for after, after_bytes in {("", b""), suffix}:
                token_id = vocab.get(before + char + after)
                if token_id is not None and tokens[token_id] != before_bytes + bytes([byte]) + after_bytes:
                    raise Unsupported(f"byte-level BPE token {before + char + after!r} shares its id; not native")


def _model_emits(model):
    """content -> whether the model can output the vocabulary token `content` (generously: a BPE token
    only when no merge builds it, it is no initial symbol, unk or byte token, and ignore_merges is off)."""
    vocab = model.get("vocab")
    vocab = vocab if isinstance(vocab, dict) else {piece: index for index, (piece, _score) in enumerate(vocab or ())}
    if model.get("type") != "BPE" or model.get("ignore_merges"):
        return lambda content: content in vocab
    prefix, suffix = model.get("continuing_subword_prefix") or "", model.get("end_of_word_suffix") or ""
    try:
        names = {token_id: token for token, token_id in vocab.items()}
        built = {names[merged] for merged in _merge_ids(model.get("merges"), vocab, len(prefix.encode()))[:, 2]}
    except Unsupported:  # then the model stage is not native either, and nothing asks
        built = set()

    def emits(content):
        if content not in vocab:
            return False
        core = content[len(prefix):] if prefix and content.startswith(prefix) else content
        core = core[:-len(suffix)] if suffix and core.endswith(suffix) else core
        return (content in built or len(core) <= 1 or content == model.get("unk_token")
                or (content.startswith("<0x") and len(content) == 6))
    return emits


def _token_names(stock, added_tokens):
    """Token string by id: a list (None at unnamed ids) when the ids are dense enough, else a dict, so its
    size follows the number of tokens, not the largest id."""
    vocab = stock.get_vocab(with_added_tokens=True)
    ids = [*vocab.values(), *(token["id"] for token in added_tokens)]
    size = max(ids) + 1 if ids else 0
    names = {} if size > 2 * len(ids) + 1024 else [None] * size
    for token, token_id in vocab.items():
        names[token_id] = token
    for token in added_tokens:  # a normalized token is named by its normalized match, as stock does
        names[token["id"]] = token["pattern"]
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

    def __init__(self, pipeline, stock, added_tokens, post, piece_named_id=None, stock_raises_id=None):
        self.pipeline = pipeline
        # an id the model emits for a word stock raises on (a Unigram without unk_id): such a call runs on stock
        self.stock_raises_id = stock_raises_id
        self._stock, self._added_tokens = stock, added_tokens
        # added tokens whose token string is the matched text (with its spaces)
        self.strip_ids = frozenset(token["id"] for token in added_tokens if token["lstrip"] or token["rstrip"])
        self.post_names = post["names"]  # post-processor token strings (word column -2 - index)
        self.single = post["single"]  # single-sequence layout per add_special_tokens (hf_tagtok.processors)
        # a Unigram unk token is named by the (normalized, pre-tokenized) text of the piece it covers
        self.piece_named_id = piece_named_id
        self._piece_names = (None, None)  # ((batch, item, second), names) of the last sequence read

    def piece_name(self, batch, item, second, word, start, end, token_id):
        """Stock's token string for a piece-named token: read from stock's own encoding of that sequence
        (without truncation), which equals the native one token for token."""
        (last, names), key = self._piece_names, (item, second)
        if last is None or last[0] is not batch or last[1:] != key:
            sequence = batch.pairs[item] if second else batch.texts[item]
            untruncated = self._untruncated
            untruncated.encode_special_tokens = self._stock.encode_special_tokens  # not part of the JSON
            encoding = untruncated.encode(sequence, is_pretokenized=batch.pretokenized, add_special_tokens=False)
            names = {(w, s, e, i): token for w, (s, e), i, token
                     in zip(encoding.word_ids, encoding.offsets, encoding.ids, encoding.tokens)}
            self._piece_names = ((batch, *key), names)  # tokens are read encoding by encoding
        return names[(word, start, end, token_id)]

    @functools.cached_property
    def _untruncated(self):
        from tokenizers import Tokenizer

        copy = Tokenizer.from_str(self._stock.to_str())
        copy.no_truncation()
        copy.no_padding()
        return copy

    @functools.cached_property
    def token_names(self):
        """Token string per id. Built on first use (only `Encoding.tokens` needs it): reading the vocabulary
        costs ~0.1 s for 128k tokens, and a list that long costs the collector a rescan on the first encode."""
        return _token_names(self._stock, self._added_tokens)


def _vocab_spec(model, pre_tokenizer):
    """The native spec of a WordPiece or WordLevel model config; raises Unsupported for others."""
    model_kind = model.get("type")
    if model_kind not in ("WordPiece", "WordLevel"):
        raise Unsupported(f"model {model_kind} is not native yet")
    if any(f'"{kind}"' in json.dumps(pre_tokenizer) for kind in ("ByteLevel", "Metaspace")):
        raise Unsupported(f"{model_kind} after a ByteLevel/Metaspace pre-tokenizer is not native yet")
    vocab = model["vocab"]
    _check_ids(vocab)
    unk = model.get("unk_token")
    if unk not in vocab:
        raise Unsupported(f"{model_kind} unk token {unk!r} is not in the vocabulary (stock raises on unknown words)")
    prefix = (model.get("continuing_subword_prefix") or "").encode() if model_kind == "WordPiece" else b""
    if len(prefix) > 64:
        raise Unsupported("WordPiece continuing_subword_prefix longer than 64 bytes is not native")
    tokens = list(vocab)
    return {"type": model_kind, "tokens": [token.encode() for token in tokens], "ids": [vocab[t] for t in tokens],
            "prefix": prefix,
            "max_chars": model.get("max_input_chars_per_word", 100) if model_kind == "WordPiece" else 0,
            "unk_id": vocab[unk]}


def _unigram_spec(model, byte_level):
    """The native spec of a Unigram model config; raises Unsupported for what it does not cover."""
    vocab = model.get("vocab") or []
    unk_id = model.get("unk_id")  # None: encodings stock raises on go to stock (NativeEncoder.stock_raises_id)
    if not vocab or not (unk_id is None or 0 <= unk_id < len(vocab)):
        raise Unsupported("Unigram with an empty vocabulary or unk_id outside it is not native")
    if byte_level:
        raise Unsupported("Unigram after a ByteLevel pre-tokenizer is not native")
    if len(vocab) > _NATIVE_MAX_TOKENS:
        raise Unsupported(f"Unigram with {len(vocab)} pieces exceeds the native tables ({_NATIVE_MAX_TOKENS})")
    return {"type": "Unigram", "tokens": [piece.encode() for piece, _score in vocab],
            "scores": [float(score) for _piece, score in vocab], "unk_id": unk_id,
            "byte_fallback": bool(model.get("byte_fallback"))}


def _model_spec(model, byte_level, pre_tokenizer):
    if model.get("type") in ("WordPiece", "WordLevel"):
        return _vocab_spec(model, pre_tokenizer)
    if model.get("type") == "Unigram":
        return _unigram_spec(model, byte_level)
    return _bpe_spec(model, byte_level)


def _state(component):
    try:
        return None if component is None else component.__getstate__()
    except Exception:  # a Python (custom) component: while one is set, stock runs everything anyway
        return "custom"


def plan_key(stock):
    """What a plan depends on that is cheap to read (~5 µs a call for Llama-3): when it changes, the plan
    is stale. Components set on the stock object directly (`backend_tokenizer.post_processor = ...`,
    `model.dropout = ...`) change it. The model is read for its type, size and dropout only (its other
    settings cost ~0.4 µs each), and added tokens not at all: adding them through hf_tagtok or
    transformers replans."""
    return components_key(stock) + (stock.encode_special_tokens,)


def components_key(stock):
    """`plan_key` without encode_special_tokens, for a caller that plans once per value of it."""
    model = stock.model
    return (tuple(map(_state, (stock.normalizer, stock.pre_tokenizer, stock.post_processor))), type(model),
            getattr(model, "dropout", None), stock.get_vocab_size(with_added_tokens=False))


def _loaded_model(stock, model):
    """The model config, checked against what stock loaded: stock writes one token per id, so a
    vocabulary written by stock whose ids are shared has fewer tokens than stock holds."""
    vocab = model.get("vocab")
    if isinstance(vocab, dict) and stock.get_vocab_size(with_added_tokens=False) != len(vocab):
        raise Unsupported("two vocabulary tokens share an id; not native")
    if model.get("type") == "Unigram":
        # the scores as stock holds them: its JSON reader can land an ULP away from the correctly rounded
        # value Python reads, and a Viterbi tie then goes the other way; stock writes them back exactly
        return dict(model, vocab=json.loads(stock.model.__getstate__())["vocab"])
    return model


# Stock writes a vocabulary by walking every id up to the largest and listing the missing ones (4 bytes
# each): 2**31 - 1 costs it ~8 GB and ~30 s (or aborts the process), 10**8 ~400 MB.
_MAX_WRITTEN_HOLES = 1 << 22


def config_text(stock):
    """stock.to_str(), or Unsupported when stock would spend memory and time per missing vocabulary id
    writing it (ids far sparser than the vocabulary): planning then never asks stock for its JSON."""
    if type(stock.model).__name__ in ("BPE", "WordPiece", "WordLevel"):
        vocab = stock.get_vocab(with_added_tokens=False)
        holes = max(vocab.values()) + 1 - len(vocab) if vocab else 0
        if holes > _MAX_WRITTEN_HOLES:
            raise Unsupported(f"vocabulary ids are sparse ({len(vocab)} tokens, largest id {max(vocab.values())}): "
                              "stock's to_str() would allocate per missing id, so stock runs everything "
                              "(load from the file or JSON text to run natively)")
    return stock.to_str()


def analyse(stock, text=None):
    """(per-stage report, spec or None): the spec is complete only when every stage is native."""
    if text is None:
        try:
            text = config_text(stock)
        except Unsupported as error:
            return {name: {"native": False, "reason": str(error)} for name in _PIPELINE_STAGES}, None
        except Exception as error:  # Python (custom) components: stock cannot write them, nor can we read them
            reason = f"stock cannot serialize this tokenizer ({error}), so stock runs everything"
            return {name: {"native": False, "reason": reason} for name in _PIPELINE_STAGES}, None
    config = _load_config(text)
    report, spec = {}, {}

    def stage(name, build):
        try:
            spec[name] = build()
            absent = name in ("normalizer", "pre_tokenizer", "post_processor") and config.get(name) is None
            report[name] = {"native": True, "reason": "none configured" if absent else "native"}
        except Unsupported as error:
            report[name] = {"native": False, "reason": str(error)}

    stage("normalizer", lambda: normalizers.spec(config.get("normalizer")))
    model_emits = _model_emits(config["model"])
    def added_spec():
        loaded = added_tokens.loaded(stock)
        added_tokens.check_ids(loaded, config["model"])
        return added_tokens.spec(loaded, stock.normalizer, model_emits)

    stage("added_tokens", added_spec)
    stage("pre_tokenizer", lambda: _pre_tokenizer_steps(config.get("pre_tokenizer")))
    byte_level = '"ByteLevel"' in json.dumps(config.get("pre_tokenizer"))
    stage("model", lambda: _model_spec(_loaded_model(stock, config["model"]), byte_level, config.get("pre_tokenizer")))
    stage("post_processor", lambda: processors.spec(config.get("post_processor")))
    complete = all(report[name]["native"] for name in _PIPELINE_STAGES)
    spec["encode_special_tokens"] = bool(stock.encode_special_tokens)
    return report, (spec if complete else None)


def plan(stock, text=None):
    """(per-stage report, native encoder or None when some stage is not covered)."""
    report, spec = analyse(stock, text)
    if spec is None:
        return report, None
    try:
        native = native_module()
    except Unsupported as error:
        report["model"] = {"native": False, "reason": str(error)}
        return report, None
    trim = spec["post_processor"]["trim"]
    if trim is not None:
        ids, lead, trail = _space_counts(_token_names(stock, spec["added_tokens"]))
        spec["trim"] = dict(trim, lead=lead, trail=trail, ids=ids)
    spec["added"] = (stock.num_special_tokens_to_add(False), stock.num_special_tokens_to_add(True))
    from hf_tagtok.errors import UnsupportedShape  # the compiled engine's, once it is loaded
    try:
        pipeline = native.Pipeline(spec)
    except UnsupportedShape as error:
        report["pre_tokenizer"] = {"native": False, "reason": f"pre-tokenizer: {error}"}
        return report, None
    model = spec["model"]
    unigram = model.get("type") == "Unigram"
    piece_named_id = model["unk_id"] if unigram else None
    stock_raises_id = native.UNIGRAM_RAISES if unigram and model["unk_id"] is None else None
    return report, NativeEncoder(pipeline, stock, spec["added_tokens"], spec["post_processor"], piece_named_id,
                                 stock_raises_id)
