"""Ray Data map_batches and sharded preparation on a local Ray cluster (2 CPUs), against stock ids."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tokenizers

from conformance import tokenizer_zoo
from hf_tagtok import corpus, shards
from hf_tagtok.ray_data import TokenizeBatches
from hf_tagtok.sample_text import multiscript_texts
from hf_tagtok.tokenizer_identity import identity

ray = pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parent.parent
TEXTS = [text[:500] for text in multiscript_texts()] + ["", "x"]
START = "<|special|>"  # the document start marker (a special token of the member)


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}})
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok")
    tokenizer_zoo.load("small_added_flags").save(str(path / "tokenizer.json"))
    return path


@pytest.fixture(scope="module")
def stock(tokenizer_dir):
    return tokenizers.Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": text}, ensure_ascii=False) + "\n" for text in TEXTS * 4),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("batch_format", ["pyarrow", "numpy"])
def test_map_batches_gives_stock_ids(cluster, tokenizer_dir, stock, batch_format):
    dataset = ray.data.from_items([{"n": n, "text": text} for n, text in enumerate(TEXTS)])
    mapped = dataset.map_batches(TokenizeBatches, batch_format=batch_format, batch_size=64,
                                 compute=ray.data.ActorPoolStrategy(size=2),
                                 fn_constructor_kwargs={"tokenizer": str(tokenizer_dir),
                                                        "identity": identity(tokenizer_dir)})
    rows = sorted(mapped.take_all(), key=lambda row: row["n"])
    expected = [encoding.ids for encoding in stock.encode_batch(TEXTS)]
    assert [list(map(int, row["input_ids"])) for row in rows] == expected
    assert [int(row["num_tokens"]) for row in rows] == [len(ids) for ids in expected]
    assert [row["text"] for row in rows] == TEXTS


def test_a_different_tokenizer_is_refused(tokenizer_dir):
    with pytest.raises(ValueError, match="is not the expected"):
        TokenizeBatches(tokenizer_dir, identity="0" * 64)


def _expected_ids(stock, texts, start_id):
    return np.concatenate([[start_id, *encoding.ids] for encoding in stock.encode_batch(texts, add_special_tokens=False)])


def test_ray_shards_equal_local_shards_and_stock(cluster, tokenizer_dir, stock, jsonl, tmp_path):
    on_ray = shards.prepare_shards([jsonl], tmp_path / "ray", tokenizer_dir, shards=4, engine="ray", start_token=START)
    local = shards.prepare_shards([jsonl], tmp_path / "local", tokenizer_dir, shards=4, engine="local", workers=1,
                                  start_token=START)
    for ray_shard, local_shard in zip(on_ray.shards, local.shards):
        assert ray_shard.path.read_bytes() == local_shard.path.read_bytes()
    start_id = on_ray.shards[0].start_id
    assert np.array_equal(np.concatenate([s.ids for s in on_ray.shards]), _expected_ids(stock, TEXTS * 4, start_id))
    assert on_ray.n_documents == len(TEXTS) * 4


def test_resume_rewrites_only_missing_shards(tokenizer_dir, jsonl, tmp_path):
    first = shards.prepare_shards([jsonl], tmp_path, tokenizer_dir, shards=3, workers=1, start_token=START)
    kept = first.shards[0].path
    kept_stat = kept.stat().st_mtime_ns
    first.shards[1].path.unlink()
    (tmp_path / f".{first.shards[2].path.name}.tmp-999").write_bytes(b"left by a killed writer")
    second = shards.prepare_shards([jsonl], tmp_path, tokenizer_dir, shards=3, workers=1, start_token=START)
    assert kept.stat().st_mtime_ns == kept_stat
    assert (tmp_path / shards.MANIFEST).read_bytes() and not list(tmp_path.glob(".*.tmp-*"))
    assert second.n_tokens == first.n_tokens


def test_open_manifest_catches_a_changed_shard(tokenizer_dir, jsonl, tmp_path):
    prepared = shards.prepare_shards([jsonl], tmp_path, tokenizer_dir, shards=2, workers=1, start_token=START)
    path = prepared.shards[1].path
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(corpus.CorpusError, match="blake3"):
        shards.open_manifest(tmp_path / shards.MANIFEST, tokenizer=tokenizer_dir)


RUN = """
import sys, ray
from hf_tagtok import shards
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
result = shards.prepare_shards([sys.argv[1]], sys.argv[2], sys.argv[3], shards=6, engine="ray", start_token="<|special|>")
print("DONE", result.n_documents, result.n_tokens)
"""


def test_a_killed_worker_does_not_stop_the_run(tokenizer_dir, jsonl, tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_text(jsonl.read_text(encoding="utf-8") * 40, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.Popen([sys.executable, "-c", RUN, str(big), str(tmp_path / "out"), str(tokenizer_dir)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and run.poll() is None and time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-f", "ray::prepare_shard"], capture_output=True, text=True).stdout.split()
        if found:
            killed = int(found[0])
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.02)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-2000:]
    assert killed is not None, "no shard task was seen running"
    assert "DONE" in out
    single = shards.prepare_shards([big], tmp_path / "single", tokenizer_dir, shards=6, workers=1, start_token=START)
    reread = corpus.open(tmp_path / "out" / shards.MANIFEST, tokenizer=tokenizer_dir)
    for ours, reference in zip(reread.shards, single.shards):
        assert ours.path.read_bytes() == reference.path.read_bytes()


def test_prepare_command_writes_shards(tokenizer_dir, jsonl, tmp_path, capsys):
    from hf_tagtok import cli
    out = tmp_path / "out"
    assert cli.main(["prepare", str(jsonl), "--tokenizer", str(tokenizer_dir), "--out", str(out), "--shards", "3",
                     "--workers", "1", "--start-token", START]) == 0
    assert "3 shards" in capsys.readouterr().out
    reference = shards.prepare_shards([jsonl], tmp_path / "api", tokenizer_dir, shards=3, workers=1, start_token=START)
    for ours, expected in zip(corpus.open(out / shards.MANIFEST, tokenizer=tokenizer_dir).shards, reference.shards):
        assert ours.path.read_bytes() == expected.path.read_bytes()
