"""Translate a model config (tokenizer.json dict) into the native model spec: BPE (ext/pipeline/tp_bpe.c),
WordPiece/WordLevel (tp_wordpiece.c) or Unigram (tp_unigram.c).

`spec` returns a `BpeSpec`, `VocabSpec` or `UnigramSpec` (engine-neutral: bytes, ids, flags; no
tokenizer.json in C), or raises `Unsupported` naming the part the native pipeline does not cover.
"""
import functools
import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import tokenizers

from hf_tagtok.errors import Unsupported, native_module
from hf_tagtok.pre_tokenizers import byte_chars


# The table limits of ext/pipeline/tp_bpe.h (ids and ranks are packed into 64-bit words).
_NATIVE_MAX_TOKENS = (1 << 21) - 1
_NATIVE_MAX_MERGES = (1 << 22) - 1


@dataclass(frozen=True)
class BpeSpec:
    """What tp_bpe_new builds (ext/pipeline/tp_bpe.h). Token k of the native tables is `tokens[k]`."""
    kind: ClassVar[str] = "BPE"
    tokens: list  # bytes per dense index; None: no byte string (byte level: unreachable from bytes)
    merges: np.ndarray  # (k, 3) uint32 (left, right, merged) dense indices, in rank order
    model_ids: np.ndarray  # sorted uint32 vocabulary id per dense index, or None when the ids are 0..n-1
    ignore_merges: bool
    char_level: bool  # words are chars, not byte-level bytes
    prefix: bytes  # continuing_subword_prefix
    suffix: bytes  # end_of_word_suffix
    unk_id: int  # dense index of the unk token, or None
    fuse_unk: bool
    byte_tokens: list  # byte_fallback: dense index of <0xXX> per byte (None: missing), else None


@dataclass(frozen=True)
class Spellings:
    """The bytes each vocabulary id spells (tp_pipeline's replay_*): id k spells blob[starts[k]:starts[k + 1]],
    empty for ids with no byte string."""
    blob: bytes
    starts: np.ndarray  # uint32, largest id + 2 entries


def spellings(bpe: BpeSpec) -> Spellings:
    ids = range(len(bpe.tokens)) if bpe.model_ids is None else bpe.model_ids.tolist()
    by_id = dict(zip(ids, bpe.tokens))
    spelled = [by_id.get(token_id) or b"" for token_id in range(max(by_id, default=-1) + 1)]
    starts = np.zeros(len(spelled) + 1, dtype=np.uint64)
    np.cumsum([len(token) for token in spelled], out=starts[1:])
    if starts[-1] >= 1 << 32:
        raise Unsupported("the vocabulary spells more than 4 GiB")
    return Spellings(b"".join(spelled), starts.astype(np.uint32))


@dataclass(frozen=True)
class VocabSpec:
    """What tp_wordpiece_new builds (ext/pipeline/tp_wordpiece.h): WordPiece, or WordLevel (whole words only)."""
    kind: str  # "WordPiece" or "WordLevel"
    tokens: list  # bytes per entry
    ids: list  # vocabulary id per entry
    prefix: bytes  # continuing_subword_prefix (WordPiece), b"" for WordLevel
    max_chars: int  # max_input_chars_per_word (WordPiece), 0 for WordLevel
    unk_id: int


@dataclass(frozen=True)
class UnigramSpec:
    """What tp_unigram_new builds (ext/pipeline/tp_unigram.h). Piece k has id k."""
    kind: ClassVar[str] = "Unigram"
    tokens: list  # bytes per piece
    scores: list  # float per piece
    unk_id: int  # None: no unk piece (encodings stock raises on then run on stock)
    byte_fallback: bool


def _bpe_spec(model, byte_level):
    """The native spec of a BPE model config; raises Unsupported for what it does not cover."""
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
    return BpeSpec(**spec)


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


class _MergesText:
    """A BPE model's merges left as their JSON text inside the configuration's (json.loads spends most of a
    big configuration's time on them, a list and two str per merge); the native module reads the pairs there,
    once per prefix length (the vocabulary is always the same model's). `names`: the vocabulary as the native
    module read it (`vocab_names`), whose table resolves the pairs, or None."""

    def __init__(self, text, span, names=None):
        self.text, self.span, self.names = text, span, names
        self.ids_by_prefix_len = {}


def load_config(text):
    """The configuration as json.loads gives it, but with model.merges as a _MergesText when the native
    module can read it (without that module the merges are never used: the model stage is not native), and
    model.vocab, when it is an object of names and ids, read by the native module in one pass that also
    builds the table the merges are resolved against."""
    try:
        native = native_module()
    except Unsupported:
        return json.loads(text)
    spans = native.member_spans(text, ("model",), ("vocab", "merges"))
    names = native.vocab_names(text, *spans["vocab"]) if "vocab" in spans else None
    cuts = [(spans["merges"], "[]")] if "merges" in spans else []
    if names is not None:
        cuts = sorted([*cuts, (spans["vocab"], "{}")])
    if not cuts:
        return json.loads(text)
    pieces, at = [], 0
    for (start, end), placeholder in cuts:
        pieces += [text[at:start], placeholder]
        at = end
    config = json.loads("".join(pieces) + text[at:])
    if names is not None:
        config["model"]["vocab"] = names.vocab
    if "merges" in spans:
        config["model"]["merges"] = _MergesText(text, spans["merges"], names)
    return config


def _merge_ids(merges, vocab, prefix_len):
    """(k, 3) uint32 array of (left id, right id, merged id) of the merges whose three tokens are in the
    vocabulary, in order. Stock names the merged token left + right minus prefix_len bytes, whatever right
    starts with, and reads a str merge only with exactly one space."""
    native = native_module()
    if merges is None:
        return native.pair_ids_in(vocab, "[]", 0, 2, prefix_len)
    if prefix_len not in merges.ids_by_prefix_len:
        names = merges.names if merges.names is not None and merges.names.vocab is vocab else vocab
        try:
            # stock fills its merge map in order: a pair listed twice keeps its last rank
            merges.ids_by_prefix_len[prefix_len] = native.pair_ids_in(names, merges.text, *merges.span, prefix_len,
                                                                      last_wins=True)
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


def model_emits(model):
    """content -> whether the model can output the vocabulary token `content` (generously: a BPE token
    only when no merge builds it, it is no initial symbol, unk or byte token, and ignore_merges is off)."""
    vocab = model.get("vocab")
    vocab = vocab if isinstance(vocab, dict) else {piece: index for index, (piece, _score) in enumerate(vocab or ())}
    if model.get("type") != "BPE" or model.get("ignore_merges"):
        return lambda content: content in vocab
    prefix, suffix = model.get("continuing_subword_prefix") or "", model.get("end_of_word_suffix") or ""
    # the set of tokens some merge builds, made on first need (most added tokens are not in the vocabulary)
    merged = functools.cache(lambda: _merged_tokens(model, vocab, prefix))

    def emits(content):
        if content not in vocab:
            return False
        core = content[len(prefix):] if prefix and content.startswith(prefix) else content
        core = core[:-len(suffix)] if suffix and core.endswith(suffix) else core
        if len(core) <= 1 or content == model.get("unk_token") or (content.startswith("<0x") and len(content) == 6):
            return True
        return content in merged()
    return emits


def _merged_tokens(model, vocab, prefix):
    try:
        names = {token_id: token for token, token_id in vocab.items()}
        return {names[merged] for merged in _merge_ids(model.get("merges"), vocab, len(prefix.encode()))[:, 2]}
    except Unsupported:  # then the model stage is not native either, and nothing asks
        return set()


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
    return VocabSpec(kind=model_kind, tokens=[token.encode() for token in tokens], ids=[vocab[t] for t in tokens],
                     prefix=prefix,
                     max_chars=model.get("max_input_chars_per_word", 100) if model_kind == "WordPiece" else 0,
                     unk_id=vocab[unk])


def _unigram_spec(model, byte_level):
    """The native spec of a Unigram model config; raises Unsupported for what it does not cover."""
    vocab = model.get("vocab") or []
    unk_id = model.get("unk_id")  # None: encodings stock raises on go to stock (planner.NativeEncoder.stock_raises_id)
    if not vocab or not (unk_id is None or 0 <= unk_id < len(vocab)):
        raise Unsupported("Unigram with an empty vocabulary or unk_id outside it is not native")
    if byte_level:
        raise Unsupported("Unigram after a ByteLevel pre-tokenizer is not native")
    if len(vocab) > _NATIVE_MAX_TOKENS:
        raise Unsupported(f"Unigram with {len(vocab)} pieces exceeds the native tables ({_NATIVE_MAX_TOKENS})")
    return UnigramSpec(tokens=[piece.encode() for piece, _score in vocab],
                       scores=[float(score) for _piece, score in vocab], unk_id=unk_id,
                       byte_fallback=bool(model.get("byte_fallback")))


def spec(model, byte_level, pre_tokenizer):
    """The native spec of a model config (after `loaded`); raises Unsupported for what it does not cover."""
    if model.get("type") in ("WordPiece", "WordLevel"):
        return _vocab_spec(model, pre_tokenizer)
    if model.get("type") == "Unigram":
        return _unigram_spec(model, byte_level)
    return _bpe_spec(model, byte_level)


def stock_copy(stock, text):
    """A stock tokenizer read from `text`, stock's own JSON of `stock`, that encodes as `stock` does. Stock's JSON
    reader can land a Unigram score an ULP away from the value it wrote (docs/architecture.md, "Where the
    references disagree"), and a Viterbi tie then goes the other way: such a model is copied with the scores
    stock holds."""
    copy = tokenizers.Tokenizer.from_str(text)
    if type(stock.model).__name__ == "Unigram" and copy.model.__getstate__() != stock.model.__getstate__():
        state = json.loads(stock.model.__getstate__())
        copy.model = tokenizers.models.Unigram([(piece, score) for piece, score in state["vocab"]],
                                               state.get("unk_id"), state.get("byte_fallback", False))
    return copy


def loaded(stock, model):
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
