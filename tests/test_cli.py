"""`hf-tagtok` as a user meets it: one line and exit 2 for every user error, the documented flows with
defaults, outputs never overwritten by accident, no stock panic text in a passing conformance run."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest
import tokenizers

import hf_tagtok
from hf_tagtok import cli, corpus, documents

pytest.importorskip("blake3")

LINES = ["hello world 123", "the quick brown fox", "jumps over 4567 lazy dogs", "hello again, world"] * 30


def run(capfd, *argv):
    code = cli.main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def assert_user_error(code, err, *words):
    assert code == 2
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("hf-tagtok ")
    for word in words:
        assert word in err


@pytest.fixture()
def corpus_txt(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def test_version(capfd):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0 and capfd.readouterr().out.strip() == f"hf-tagtok {hf_tagtok.__version__}"


def test_train_then_prepare_with_defaults(tmp_path, corpus_txt, capfd):
    assert run(capfd, "train", "--vocab-size", "300", "--out", str(tmp_path / "tok"), str(corpus_txt))[0] == 0
    code, out, err = run(capfd, "prepare", "--tokenizer", str(tmp_path / "tok"), "--out", str(tmp_path / "c.ttc"),
                         str(corpus_txt))
    assert code == 0, err
    prepared = corpus.open(tmp_path / "c.ttc", tokenizer=tmp_path / "tok")
    assert prepared.n_documents == len(LINES)  # .txt: one document per line
    stock = tokenizers.Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json"))
    stock.encode_special_tokens = True
    start = prepared.start_id
    assert prepared.ids.tolist() == [i for line in LINES for i in [start] + stock.encode(line, add_special_tokens=False).ids]


@pytest.mark.parametrize("bad", ["missing.txt", "DIR", "x.csv"])
def test_train_refuses_inputs_that_are_not_document_files(tmp_path, capfd, bad):
    (tmp_path / "x.csv").write_text("a,b\n", encoding="utf-8")
    path = tmp_path if bad == "DIR" else tmp_path / bad
    code, _, err = run(capfd, "train", "--vocab-size", "300", "--out", str(tmp_path / "tok"), str(path))
    assert_user_error(code, err, str(path))
    assert not (tmp_path / "tok").exists()


@pytest.mark.parametrize("threads", ["0", "-2", "x"])
def test_threads_are_validated(tmp_path, corpus_txt, capfd, threads):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["train", "--vocab-size", "300", "--out", str(tmp_path / "tok"), "--threads", threads,
                  str(corpus_txt)])
    assert exit_.value.code == 2
    err = capfd.readouterr().err
    assert "--threads: must be a positive integer" in err and "Traceback" not in err


def test_outputs_are_not_overwritten_without_force(tmp_path, corpus_txt, capfd):
    tok = tmp_path / "tok"
    assert run(capfd, "train", "--vocab-size", "300", "--out", str(tok), str(corpus_txt))[0] == 0
    before = (tok / "tokenizer.json").read_bytes()
    assert_user_error(*run(capfd, "train", "--vocab-size", "310", "--out", str(tok), str(corpus_txt))[::2], "--force")
    assert (tok / "tokenizer.json").read_bytes() == before
    assert run(capfd, "train", "--vocab-size", "310", "--out", str(tok), "--force", str(corpus_txt))[0] == 0

    out = tmp_path / "c.ttc"
    assert run(capfd, "prepare", "--tokenizer", str(tok), "--out", str(out), str(corpus_txt))[0] == 0
    assert_user_error(*run(capfd, "prepare", "--tokenizer", str(tok), "--out", str(out), str(corpus_txt))[::2],
                      "--force")
    assert run(capfd, "prepare", "--tokenizer", str(tok), "--out", str(out), "--force", str(corpus_txt))[0] == 0
    # an input is never an output, --force or not
    text = corpus_txt.read_bytes()
    assert_user_error(*run(capfd, "prepare", "--tokenizer", str(tok), "--out", str(corpus_txt), "--force",
                           str(corpus_txt))[::2], "also an input")
    assert corpus_txt.read_bytes() == text


def test_prepare_removes_what_a_killed_run_left(tmp_path, corpus_txt, capfd):
    assert run(capfd, "train", "--vocab-size", "300", "--out", str(tmp_path / "tok"), str(corpus_txt))[0] == 0
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no process has now
    leftovers = [tmp_path / f".c.ttc.tmp-{dead.pid}", tmp_path / f".c.ttc.tmp-{dead.pid}-mask"]
    for path in leftovers:
        path.write_bytes(b"partial")
    code, _, err = run(capfd, "prepare", "--tokenizer", str(tmp_path / "tok"), "--out", str(tmp_path / "c.ttc"),
                       str(corpus_txt))
    assert code == 0 and not any(path.exists() for path in leftovers)
    assert all(path.name in err for path in leftovers)


def test_missing_tokenizer_directory_is_one_line_without_a_hub_lookup(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for argv in (["conformance", "--tokenizer", "no/such/dir"],
                 ["prepare", "--tokenizer", "no/such/dir", "--out", str(tmp_path / "o.ttc"), __file__],
                 ["inspect", "no/such/dir"], ["demo", "--tokenizer", "no/such/dir"],
                 ["bench", "--tokenizer", "no/such/dir", "--no-transformers"]):
        code, _, err = run(capfd, *argv)
        assert_user_error(code, err, "no/such/dir")


def test_missing_extra_is_named_before_any_work(tmp_path, corpus_txt, capfd, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("blake3", "transformers") else real(name, *a))
    code, _, err = run(capfd, "train", "--vocab-size", "300", "--out", str(tmp_path / "tok"), str(corpus_txt))
    assert_user_error(code, err, "needs blake3", "pip install -e '.[train]'")
    assert not (tmp_path / "tok").exists()
    code, _, err = run(capfd, "conformance", "--tokenizer", str(tmp_path))
    assert_user_error(code, err, "needs transformers", "pip install -e '.[hf]'")


def test_conformance_reads_jsonl_with_line_separators_inside(tmp_path, capfd):
    pytest.importorskip("transformers")
    from conformance import tokenizer_zoo

    tokenizer_zoo.load("small_split_bytelevel_template").save(str(tmp_path / "tokenizer.json"))
    path = tmp_path / "docs.jsonl"
    texts = ["a\u2028b c", "x\u0085y z", "plain text 12", "tab\there\r"]
    path.write_text("".join(json.dumps({"body": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
    assert documents.read_documents(path, "body") == texts
    code, out, err = run(capfd, "conformance", "--tokenizer", str(tmp_path), "--corpus", str(path),
                         "--text-field", "body")
    assert code == 0, err
    assert "corpus: 4 documents" in out and "identical" in out


def test_passing_conformance_run_prints_no_stock_panic(tmp_path, capfd):
    pytest.importorskip("transformers")
    # a template naming a special token it does not define: stock panics at every encode, so does ours
    config = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"}, "decoder": None,
        "post_processor": {"type": "TemplateProcessing", "special_tokens": {},
                           "single": [{"SpecialToken": {"id": "[X]", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}]},
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1, "b": 2}, "unk_token": "[UNK]"}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(config), encoding="utf-8")
    corpus_path = tmp_path / "c.txt"
    corpus_path.write_text("a b\nb a a\n", encoding="utf-8")
    code, out, err = run(capfd, "conformance", "--tokenizer", str(tmp_path), "--corpus", str(corpus_path))
    assert code == 0 and "identical" in out
    assert "panicked" not in err and "RUST_BACKTRACE" not in err


def test_every_option_has_help(capfd):
    for command in cli.COMMANDS:
        if command in ("bench",):  # owned elsewhere; its options carry help already
            continue
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        text = capfd.readouterr().out
        options = [line for line in text.splitlines() if line.startswith("  -")]
        assert options, command
        # an option line without help text ends at the option itself, with nothing on the next line either
        lines = text.splitlines()
        for index, line in enumerate(lines):
            if line.startswith("  --") and len(line.split("  ")) < 3:
                following = lines[index + 1] if index + 1 < len(lines) else ""
                assert following.startswith(" " * 10), f"{command}: {line.strip()} has no help"


def test_prepare_progress_counts_every_document(tmp_path, corpus_txt, capfd):
    assert run(capfd, "train", "--vocab-size", "300", "--out", str(tmp_path / "tok"), str(corpus_txt))[0] == 0

    class Bar:
        n = 0

        def update(self, k):
            self.n += k

    bar = Bar()
    prepared = corpus.prepare([corpus_txt], tmp_path / "c.ttc", tmp_path / "tok", progress=bar)
    assert bar.n == prepared.n_documents == documents.count_documents([corpus_txt]) == len(LINES)


def test_transformers_missing_names_the_extra(monkeypatch):
    from hf_tagtok import fast

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match=r"pip install -e '\.\[hf\]'"):
        fast._require_transformers()
    with pytest.raises(ModuleNotFoundError, match=r"pip install -e '\.\[hf\]'"):
        fast.patch_transformers()


def test_bench_reads_documents_like_every_command(tmp_path):
    from hf_tagtok import bench

    path = tmp_path / "docs.jsonl"
    texts = ["a\u2028b", "plain", "x\u0085y"]
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
    assert bench._load_texts([str(path)]) == texts  # the texts, not the raw JSON lines
