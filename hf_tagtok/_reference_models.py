"""Pure-Python references of the native models (ext/pipeline/tp_bpe.c, tp_wordpiece.c): BPE, WordPiece and
WordLevel.

Readable rather than fast, like tiktoken's educational module, and built from the same configuration
stock reads (`json.loads(tokenizer.to_str())["model"]`). `tokenize(word)` answers what stock's
`tokenizer.model.tokenize(word)` answers: (id, token, (start, end)) per token, offsets in UTF-8 bytes of
the word.

    >>> bpe = BPE({"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]})
    >>> bpe.tokenize("abb")
    [(2, 'ab', (0, 2)), (1, 'b', (2, 3))]

tests/test_reference_models.py checks these against stock and the native engine against these.
"""


def _utf8_len(char):
    return len(char.encode("utf-8"))


class BPE:
    """Byte-pair encoding as tokenizers' `BPE` (models/bpe/model.rs, word.rs).

    A word starts as one symbol per char (with `continuing_subword_prefix` on every char but the first and
    `end_of_word_suffix` on the last); a char missing from the vocabulary becomes one `<0xXX>` symbol per
    UTF-8 byte (`byte_fallback`), else the unknown token (runs of them fused into one with `fuse_unk`),
    else it is dropped. Then, while some adjacent pair has a merge, the pair with the lowest rank is merged,
    the leftmost one when several share that rank. Stock does this with a priority queue; merging in that
    order is the whole rule, so a scan per merge gives the same tokens.
    """

    def __init__(self, config):
        if config.get("dropout") not in (None, 0, 0.0):
            raise ValueError("BPE dropout is random: a reference cannot reproduce it")
        self.vocab = config["vocab"]
        self.id_to_token = {id_: token for token, id_ in self.vocab.items()}
        self.unk_token = config.get("unk_token")
        self.prefix = config.get("continuing_subword_prefix") or ""
        self.suffix = config.get("end_of_word_suffix") or ""
        self.fuse_unk = bool(config.get("fuse_unk"))
        self.byte_fallback = bool(config.get("byte_fallback"))
        self.ignore_merges = bool(config.get("ignore_merges"))
        # (left id, right id) -> (rank, merged id); a pair listed twice keeps its last rank, as stock's map
        self.merges = {}
        for rank, merge in enumerate(config["merges"]):
            left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
            merged = left + right[len(self.prefix):]
            self.merges[(self.vocab[left], self.vocab[right])] = (rank, self.vocab[merged])

    def initial_symbols(self, word):
        """[id, byte length] per symbol, before any merge."""
        symbols, unk = [], None  # unk: the pending [id, byte length] of an unknown run
        for i, char in enumerate(word):
            piece = (self.prefix if i > 0 else "") + char + (self.suffix if i == len(word) - 1 else "")
            if piece in self.vocab:
                if unk is not None:
                    symbols.append(unk)
                    unk = None
                symbols.append([self.vocab[piece], _utf8_len(char)])
                continue
            if self.byte_fallback:
                names = [f"<0x{byte:02X}>" for byte in piece.encode("utf-8")]
                if all(name in self.vocab for name in names):
                    # one symbol per byte of the piece, affixes included, each one byte long (as stock)
                    symbols += [[self.vocab[name], 1] for name in names]
                    continue
            if self.unk_token is not None:
                if self.unk_token not in self.vocab:
                    raise ValueError(f"unk_token {self.unk_token!r} is not in the vocabulary")
                if unk is not None and self.fuse_unk:
                    unk[1] += _utf8_len(char)
                else:
                    if unk is not None:
                        symbols.append(unk)
                    unk = [self.vocab[self.unk_token], _utf8_len(char)]
        if unk is not None:
            symbols.append(unk)
        return symbols

    def merge(self, symbols):
        """Merge the lowest-ranked adjacent pair (leftmost on ties) until no pair has a merge."""
        while True:
            best = None  # (rank, position, merged id)
            for position in range(len(symbols) - 1):
                found = self.merges.get((symbols[position][0], symbols[position + 1][0]))
                if found is not None and (best is None or found[0] < best[0]):
                    best = (found[0], position, found[1])
            if best is None:
                return symbols
            _, position, merged = best
            left, right = symbols[position], symbols[position + 1]
            symbols[position:position + 2] = [[merged, left[1] + right[1]]]

    def tokenize(self, word):
        if not word:
            return []
        if self.ignore_merges and word in self.vocab:
            return [(self.vocab[word], word, (0, len(word.encode("utf-8"))))]
        tokens, start = [], 0
        for id_, length in self.merge(self.initial_symbols(word)):
            tokens.append((id_, self.id_to_token[id_], (start, start + length)))
            start += length
        return tokens


class WordPiece:
    """WordPiece as tokenizers' `WordPiece` (models/wordpiece/mod.rs): greedy longest match first.

    From the start of the word, take the longest prefix in the vocabulary (with `continuing_subword_prefix`
    when it does not start the word), and go on after it. A word longer than `max_input_chars_per_word`
    chars, or with a position where not even one char matches, is a single unknown token.
    """

    def __init__(self, config):
        self.vocab = config["vocab"]
        self.unk_token = config["unk_token"]
        self.prefix = config.get("continuing_subword_prefix", "##")
        self.max_chars = config.get("max_input_chars_per_word", 100)

    def _unknown(self, word):
        if self.unk_token not in self.vocab:
            raise ValueError(f"unk_token {self.unk_token!r} is not in the vocabulary")
        return [(self.vocab[self.unk_token], self.unk_token, (0, len(word.encode("utf-8"))))]

    def tokenize(self, word):
        if len(word) > self.max_chars:
            return self._unknown(word)
        tokens, start, byte_start = [], 0, 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = (self.prefix if start > 0 else "") + word[start:end]
                if piece in self.vocab:
                    byte_end = byte_start + len(word[start:end].encode("utf-8"))
                    tokens.append((self.vocab[piece], piece, (byte_start, byte_end)))
                    start, byte_start = end, byte_end
                    break
            else:
                return self._unknown(word)
        return tokens


class WordLevel:
    """WordLevel as tokenizers' `WordLevel` (models/wordlevel/mod.rs): the whole word, or the unknown token."""

    def __init__(self, config):
        self.vocab = config["vocab"]
        self.unk_token = config["unk_token"]

    def tokenize(self, word):
        span = (0, len(word.encode("utf-8")))
        if word in self.vocab:
            return [(self.vocab[word], word, span)]
        if self.unk_token not in self.vocab:
            raise ValueError(f"unk_token {self.unk_token!r} is not in the vocabulary")
        return [(self.vocab[self.unk_token], self.unk_token, span)]


MODELS = {"BPE": BPE, "WordPiece": WordPiece, "WordLevel": WordLevel}


def from_config(config):
    """The reference model for a tokenizer.json "model" object (BPE, WordPiece or WordLevel)."""
    if config["type"] not in MODELS:
        raise ValueError(f"no reference model for {config['type']}")
    return MODELS[config["type"]](config)
