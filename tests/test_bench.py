"""`hf-tagtok bench` runs end to end on a small tokenizer and reports what it measured (never timings as pass/fail)."""
import json
import subprocess
import sys

import pytest
import tokenizers

from conformance import tokenizer_zoo
from hf_tagtok import bench, bench_stream, sample_text


def test_bench_reports_every_contender_on_the_same_tokens(tmp_path, capsys):
    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sample_text.multiscript_texts()[:40]), encoding="utf-8")
    out = tmp_path / "bench.json"
    assert bench.main(["--first-call", "--tokenizer", str(path), "--corpus", str(corpus), "--repeats", "1", "--cold-loads", "1",
                       "--no-transformers", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    rows = {row["name"]: row for row in report["rows"]}
    assert {"stock encode_batch", "hf_tagtok encode_batch", "hf_tagtok encode_batch_arrays"} <= set(rows)
    stock_tokens = rows["stock encode_batch"]["tokens"]
    assert stock_tokens > 0
    for row in rows.values():
        assert row["tokens"] == stock_tokens  # every contender encoded the same corpus to as many tokens
        assert row["ratio"] > 0 and row["cold_ratio"] > 0 and row["peak_mb"] >= 0
    assert report["latency"]["ratio"] > 0
    printed = capsys.readouterr().out
    assert "stock encode_batch" in printed and "single encode(str) latency" in printed


def test_a_peer_is_timed_only_when_it_gives_stock_ids(tmp_path, monkeypatch, capsys):
    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    texts = sample_text.multiscript_texts()[:20]
    stock_twin = lambda path, plain: tokenizers.Tokenizer.from_file(str(path))  # noqa: E731
    off_by_one = lambda texts: lambda tok: [[i + 1 for i in e.ids] for e in tok.encode_batch(texts)]  # noqa: E731
    monkeypatch.setattr(bench, "_PEERS", {
        "same": ("same encode_batch", stock_twin, lambda texts: lambda tok: tok.encode_batch(texts), True),
        "shifted": ("shifted encode_batch", stock_twin, off_by_one, True),
        "broken": ("broken encode_batch", lambda path, plain: 1 / 0, off_by_one, True),
    })
    assert bench._peers(path, texts, plain=False) == ["same"]
    printed = capsys.readouterr().out
    assert "(shifted not timed: its ids differ from stock's)" in printed
    assert "(broken not timed: division by zero)" in printed


def test_tiktoken_gets_as_many_threads_as_our_pool():
    from hf_tagtok import _native
    seen = []

    class Encoding:  # records what the bench asks of tiktoken's batch call
        def encode_ordinary_batch(self, texts, num_threads):
            seen.append(num_threads)
            return [[0] for _ in texts]

    _, _, call, _ = bench._PEERS["tiktoken"]
    call(["a", "b"])(Encoding())
    assert seen == [_native.pool_threads()]


def test_first_call_anatomy_runs_and_reports_every_row(tmp_path, capsys):
    from conformance import bench_first_call
    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    bench_first_call.main(["--tokenizer", str(path), "--rounds", "1", "--idle", "0"])
    printed = capsys.readouterr().out
    for row in ("stock first call after load", "first call after load", "warm", "warm after idle",
                "first call, busy cores"):
        assert f"\n{row} " in printed


def test_stream_table_checks_every_contender_against_stock(tmp_path, capsys):
    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": text}) for text in sample_text.multiscript_texts()[:60]),
                      encoding="utf-8")
    out = tmp_path / "stream.json"
    assert bench.main(["--tokenizer", str(path), "--corpus", str(corpus), "--batch-size", "16", "--threads", "1",
                       "--only", "hf_tagtok", "hf_tagtok_arrays", "hf_tagtok_arrays_ids", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["documents"] == 60 and report["batch_size"] == 16
    rows = {row["name"]: row for row in report["stream"]}
    assert {"stock tokenizers encode_batch", "hf_tagtok encode_batch", "hf_tagtok encode_batch_arrays",
            "hf_tagtok encode_batch_arrays offsets=False"} <= set(rows)
    stock_tokens = rows["stock tokenizers encode_batch"]["tokens"]
    for name, row in rows.items():
        if row["against"] == "stock":
            assert row["exact"] and row["differ"] == 0, name  # ids equal stock's, document by document
            assert row["tokens"] == stock_tokens
        assert row["stream_ratio"] > 0 and row["warm_ratio"] > 0
        assert row["cores"] > 0  # the worker reports the stream pass's CPU time
    assert "hf_tagtok encode_batch_arrays offsets=False" in capsys.readouterr().out


def test_stream_fresh_warm_pass_is_checked_against_stock(tmp_path, monkeypatch):
    """--fresh-warm hands the worker "fresh" (its warm pass encodes equal texts in new str objects), and the ids
    of that pass are still stock's."""
    path = tmp_path / "tokenizer.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": text}) for text in sample_text.multiscript_texts()[:40]),
                      encoding="utf-8")
    commands = []
    real_run = subprocess.run

    def recording_run(command, **options):
        commands.append(command)
        return real_run(command, **options)

    monkeypatch.setattr(bench_stream.subprocess, "run", recording_run)
    out = tmp_path / "stream.json"
    assert bench.main(["--tokenizer", str(path), "--corpus", str(corpus), "--batch-size", "8", "--threads", "1",
                       "--only", "hf_tagtok_arrays_ids", "--fresh-warm", "--json", str(out)]) == 0
    workers = [command for command in commands if str(command[1]).endswith("_stream_worker.py")]
    assert workers and all(command[-1] == "fresh" for command in workers)
    report = json.loads(out.read_text())
    assert report["fresh_warm"] is True
    assert all(row["exact"] for row in report["stream"])


def test_stream_exact_column_counts_differing_documents(monkeypatch):
    def fake_run(contender, tokenizer, corpus_file, batch_size, threads, python, fresh_warm=False):
        hashes = [1, 2, 3, 4]
        if contender == "hf_tagtok":
            hashes = [1, 9, 3, 9]
        return {"contender": contender, "load_s": 0.1, "stream_s": 1.0, "warm_s": 0.5, "tokens": 4, "hashes": hashes}

    monkeypatch.setattr(bench_stream, "_run", fake_run)
    rows = {row["name"]: row for row in bench_stream.stream("unused.json", ["a", "b", "c", "d"], only=["hf_tagtok"])}
    assert rows["hf_tagtok encode_batch"]["differ"] == 2 and not rows["hf_tagtok encode_batch"]["exact"]
    assert rows["stock tokenizers encode_batch"]["exact"]


def test_generated_stream_corpus_is_deterministic_and_sized():
    first = bench_stream.generate_corpus(0.3, seed=1)
    assert first == bench_stream.generate_corpus(0.3, seed=1)
    assert first != bench_stream.generate_corpus(0.3, seed=2)
    assert sum(len(text.encode("utf-8")) for text in first) >= 300_000
    everything = "".join(first)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in everything)  # CJK
    assert any("\u0400" <= ch <= "\u04ff" for ch in everything)  # Cyrillic
    assert any("\u0600" <= ch <= "\u06ff" for ch in everything)  # Arabic


def test_columnar_call_without_offsets_gives_the_same_ids():
    import numpy as np

    import hf_tagtok
    stock = tokenizer_zoo.load("small_bytelevel")
    ours = hf_tagtok.Tokenizer(stock)
    texts = sample_text.multiscript_texts()[:50]
    full, bare = ours.encode_batch_arrays(texts), ours.encode_batch_arrays(texts, offsets=False)
    assert bare.offsets is None
    expected = [e.ids for e in stock.encode_batch(texts)]
    assert np.array_equal(bare.ids, np.concatenate(expected).astype(np.uint32))
    assert np.array_equal(bare.lengths, [len(ids) for ids in expected])
    assert np.array_equal(full.ids, bare.ids) and full.offsets.shape == (len(full.ids), 2)


def test_stream_transformers_rows_load_a_tokenizer_file_of_any_name(tmp_path):
    """A file not named tokenizer.json loads by itself for both transformers rows, with the native tokenizer
    built while loading (as from a folder), and gives stock transformers' ids."""
    from hf_tagtok import _stream_worker
    from hf_tagtok.tag_tokenizer_fast import _NATIVE

    path = tmp_path / "small.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    texts = sample_text.multiscript_texts()[:20]
    stock, stock_ids = _stream_worker._load("transformers", str(path))
    ours, our_ids = _stream_worker._load("TagTokenizerFast", str(path))
    assert ours in _NATIVE  # built before the first call, so the stream pass does not time the build
    assert our_ids(ours(texts)) == stock_ids(stock(texts))
    assert stock_ids(stock(texts)) == [e.ids for e in tokenizers.Tokenizer.from_file(str(path)).encode_batch(texts)]


def test_stream_fastokens_transformers_row_runs_transformers_on_fastokens(tmp_path):
    """fastokens' transformers path (its patch_transformers, then stock's class) in a worker process of its
    own, since the patch swaps the backend for the whole process: its ids are stock transformers'."""
    pytest.importorskip("fastokens")
    pytest.importorskip("transformers")
    path = tmp_path / "small.json"
    tokenizer_zoo.load("small_bytelevel").save(str(path))
    texts = sample_text.multiscript_texts()[:20]
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(texts), encoding="utf-8")
    patched = bench_stream._run("fastokens_transformers", path, corpus, 8, 1, sys.executable)
    stock = bench_stream._run("transformers", path, corpus, 8, 1, sys.executable)
    assert patched["hashes"] == stock["hashes"] and patched["tokens"] == stock["tokens"] > 0


def test_stream_table_without_transformers_rows(monkeypatch):
    ran = []

    def fake_run(contender, tokenizer, corpus_file, batch_size, threads, python, fresh_warm=False):
        ran.append(contender)
        return {"contender": contender, "load_s": 0.1, "stream_s": 1.0, "warm_s": 0.5, "tokens": 1, "hashes": [1]}

    monkeypatch.setattr(bench_stream, "_run", fake_run)
    monkeypatch.setattr(bench_stream, "_importable", lambda modules, python: True)
    names = {row["name"] for row in bench_stream.stream("unused.json", ["a"], transformers=False)}
    assert "stock tokenizers encode_batch" in names and not {"transformers", "TagTokenizerFast"} & set(ran)
    names = {row["name"] for row in bench_stream.stream("unused.json", ["a"])}
    assert {"stock transformers tok(texts)", "TagTokenizerFast tok(texts)", "fastokens patch_transformers tok(texts)"} <= names
    ran.clear()
    bench_stream.stream("unused.json", ["a"], only=["fastokens_transformers"])
    assert set(ran) == {"stock", "transformers", "fastokens_transformers"}


def test_threads_reach_every_pool_of_a_stream_worker(monkeypatch):
    # fastokens sizes its BPE pool from FASTOKENS_BPE_THREADS (else every core): without it, `--threads 1`
    # would time fastokens on all cores against the others on one
    seen = {}

    def fake_subprocess_run(command, capture_output, text, env):
        seen.update(env)
        return subprocess.CompletedProcess(command, 0, stdout='{"contender": "fastokens"}', stderr="")

    monkeypatch.setattr(bench_stream.subprocess, "run", fake_subprocess_run)
    bench_stream._run("fastokens", "tokenizer.json", "corpus.json", 256, 1, sys.executable)
    assert {name: seen.get(name) for name in ("HF_TAGTOK_THREADS", "RAYON_NUM_THREADS", "FASTOKENS_BPE_THREADS")} == \
        dict.fromkeys(("HF_TAGTOK_THREADS", "RAYON_NUM_THREADS", "FASTOKENS_BPE_THREADS"), "1")
