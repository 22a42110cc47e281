"""Translate a tokenizer's added tokens into the native added-token spec (ext/pipeline/tp_added.c).

Per token: the string matched, its id and flags, as stock's AddedVocabulary matches them.
"""
from dataclasses import dataclass

from hf_tagtok.errors import Unsupported


@dataclass(frozen=True)
class AddedTokenSpec:
    """One token of tp_added_new's table (ext/pipeline/tp_added.h)."""
    content: bytes  # UTF-8 of the matched string
    pattern: str  # the matched string: the content, or a normalized token's content as the normalizer outputs it
    id: int
    single_word: bool
    lstrip: bool
    rstrip: bool
    normalized: bool  # matched on normalized text
    special: bool  # skipped when encode_special_tokens is on


def loaded(stock):
    """The added tokens as stock loaded them: a token the vocabulary has takes the vocabulary's id, whatever
    id the JSON gave it."""
    return [{"content": token.content, "id": token_id, "single_word": token.single_word, "lstrip": token.lstrip,
             "rstrip": token.rstrip, "normalized": token.normalized, "special": token.special}
            for token_id, token in sorted(stock.get_added_tokens_decoder().items())]


def spec(added_tokens, normalizer, model_emits):
    """Per added token its AddedTokenSpec: the string matched (pattern: stock matches a normalized=true
    token's content as the normalizer outputs it, on normalized text, and names the token by that match),
    id, flags. model_emits(content): whether the model can also output that token (it would then need
    another name)."""
    spec = []
    for token in added_tokens:
        content = pattern = token["content"]
        if token["normalized"] and normalizer is not None:
            pattern = normalizer.normalize_str(content)
            if not pattern:
                raise Unsupported(f"added token {content!r} normalizes to nothing; not native")
            if token["lstrip"] or token["rstrip"]:
                raise Unsupported(f"added token {content!r}: lstrip/rstrip on a normalized token under a normalizer "
                                  "is not native (its token string is the normalized text it stripped)")
        renamed = pattern != content or token["lstrip"] or token["rstrip"]  # named by the text it matched
        if renamed and model_emits(content):
            raise Unsupported(f"added token {content!r} is named by the text it matches but the model can also "
                              "output it; not native (the two would need different token strings)")
        spec.append(AddedTokenSpec(content=pattern.encode(), pattern=pattern, id=token["id"],
                                   single_word=token["single_word"], lstrip=token["lstrip"],
                                   rstrip=token["rstrip"], normalized=token["normalized"], special=token["special"]))
    patterns = [token.pattern for token in spec if token.normalized]
    if len(set(patterns)) < len(patterns):
        # stock keeps both in its matcher and which one wins depends on hash order (differs between copies)
        raise Unsupported("two normalized added tokens normalize to the same text; not native")
    if any(token.rstrip for token in spec) and any(t.lstrip and _starts_with_space(t.pattern) for t in spec):
        # a match inside the previous rstrip then strips back to that rstrip's end, which can pass its own
        # end (stock panics there); the native splitter reproduces the overlapping splits of the other cases
        raise Unsupported("rstrip together with an lstrip added token that starts with whitespace is not native")
    return spec


def check_ids(added_tokens, model):
    """Stock numbers a new added token from the vocabulary's size, so under a vocabulary with holes it can
    take an id a vocabulary token has: one id, two token strings, which the native encodings cannot name."""
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab or max(vocab.values()) == len(vocab) - 1:
        return
    ids = {token["id"] for token in added_tokens}
    for content, token_id in vocab.items():
        if token_id in ids:
            token = next(token for token in added_tokens if token["id"] == token_id)
            if token["content"] != content:
                raise Unsupported(f"added token {token['content']!r} has id {token_id}, as vocabulary token "
                                  f"{content!r} has (stock numbers added tokens from the vocabulary size); not native")


def _starts_with_space(content):
    # Rust char::is_whitespace, probed through stock's WhitespaceSplit (it drops exactly those chars)
    from tokenizers.pre_tokenizers import WhitespaceSplit

    pieces = WhitespaceSplit().pre_tokenize_str(content)
    return bool(content) and (not pieces or pieces[0][1][0] > 0)
