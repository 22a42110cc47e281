"""`hf-tagtok bench --stream`: each engine in a fresh process, one pass over a multi-megabyte corpus in
batches (as a data pipeline feeds it), then a second, warm pass over the same batches.

A round runs every contender once, one process after the other; a contender's ratio is stock
`tokenizers` `encode_batch`'s time in the same round over its time (TagTokenizerFast is compared with
stock transformers' `tok(texts)` instead). With several rounds the median ratio is reported. Every
contender's ids are compared with stock's, document by document, before its row is believed: the
`exact` column says how many documents differ. Peers run when importable; `--peer-python` runs
tokenizers 1.x from another interpreter (it cannot share a venv with transformers).
"""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_WORKER = Path(__file__).resolve().parent / "_stream_worker.py"

# (name in the table, worker contender, what its ratio is taken against)
CONTENDERS = [
    ("stock tokenizers encode_batch", "stock", "stock"),
    ("hf_tagtok encode_batch", "hf_tagtok", "stock"),
    ("hf_tagtok encode_batch_arrays", "hf_tagtok_arrays", "stock"),
    ("hf_tagtok encode_batch_arrays offsets=False", "hf_tagtok_arrays_ids", "stock"),
    ("fastokens encode_batch_flat", "fastokens", "stock"),
    ("gigatoken encode_batch", "gigatoken", "stock"),
    ("tiktoken encode_ordinary_batch", "tiktoken", "stock"),
    ("tokenizers 1.x encode_batch", "tokenizers1", "stock"),
    ("stock transformers tok(texts)", "transformers", "transformers"),
    ("TagTokenizerFast tok(texts)", "TagTokenizerFast", "transformers"),
    ("fastokens patch_transformers tok(texts)", "fastokens_transformers", "transformers"),
]
# the modules a contender's worker imports
_MODULES = {"fastokens": ("fastokens",), "gigatoken": ("gigatoken",), "tiktoken": ("tiktoken",),
            "transformers": ("transformers",), "TagTokenizerFast": ("transformers",),
            "fastokens_transformers": ("fastokens", "transformers")}


def generate_corpus(megabytes=6.0, seed=0):
    """A deterministic multi-script corpus of about `megabytes` MB in documents of ~1 KB: paragraphs of the
    built-in multi-script and ASCII samples mixed by a seeded shuffle, with a tail of words never seen
    before (spliced from two words), numbers and identifiers, as a real stream has."""
    from hf_tagtok import sample_text
    paragraphs = [line for text in sample_text.multiscript_texts() + sample_text.ascii_texts()
                  for line in text.split("\n") if line.strip()]
    rng = random.Random(seed)
    words = [word for line in paragraphs for word in line.split() if word.isalpha()]
    target = int(megabytes * 1e6)
    documents, size = [], 0
    while size < target:
        parts = []
        for _ in range(rng.randint(4, 20)):
            line = rng.choice(paragraphs)
            if rng.random() < 0.3:  # the tail: words the tokenizer has not met yet
                tokens = line.split(" ")
                for _ in range(rng.randint(1, 4)):
                    a, b = rng.choice(words), rng.choice(words)
                    new = a[: rng.randint(1, len(a))] + b[rng.randint(0, len(b) - 1):]
                    where = rng.randint(0, len(tokens))
                    kinds = (new, new.capitalize(), str(rng.randint(0, 10**7)), f"{new}_{rng.randint(0, 999)}")
                    tokens.insert(where, rng.choice(kinds))
                line = " ".join(tokens)
            parts.append(line)
        document = "\n".join(parts)
        documents.append(document)
        size += len(document.encode("utf-8"))
    return documents


def _importable(modules, python):
    probe = subprocess.run([python, "-c", "import " + ", ".join(modules)], capture_output=True)
    return probe.returncode == 0


# The pools each read one of these once, at their first use: ours, stock's and tokenizers 1.x's (rayon), and
# fastokens' (its BPE workers; without it fastokens runs on every core).
THREAD_VARIABLES = ("HF_TAGTOK_THREADS", "RAYON_NUM_THREADS", "FASTOKENS_BPE_THREADS")


def _run(contender, tokenizer, corpus_file, batch_size, threads, python, fresh_warm=False):
    env = dict(os.environ)
    if threads:
        env.update(dict.fromkeys(THREAD_VARIABLES, str(threads)))
    # No contender does linear algebra, but importing numpy (hf_tagtok, fastokens' worker) starts OpenBLAS's
    # threads, which spin ~0.1 s before they sleep: on a tokenizer that loads fast, through the stream pass,
    # on a core the pass would use.
    env["OPENBLAS_NUM_THREADS"] = "1"
    # the worker runs as a script: make this checkout's hf_tagtok importable in it as it is here
    env["PYTHONPATH"] = os.pathsep.join([str(_WORKER.parent.parent)] + [p for p in [env.get("PYTHONPATH")] if p])
    command = [python, str(_WORKER), contender, str(tokenizer), str(corpus_file), str(batch_size)]
    done = subprocess.run(command + ["fresh"] * fresh_warm, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit code {done.returncode}"
        raise RuntimeError(f"{contender}: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def stream(tokenizer, texts, batch_size=256, threads=None, rounds=1, peer_python=None, only=None, log=print,
           transformers=True, fresh_warm=False):
    """Rows {name, exact, differ, tokens, stream_s, warm_s, stream_mb_s, stream_ratio, warm_ratio, cores}: cores is
    the stream pass's CPU time over its wall time (how many cores it kept busy; a contender that ignores
    `threads` shows it), None when a run did not report it. `transformers` False leaves out the transformers rows;
    `fresh_warm` gives the warm pass equal texts in new str objects (hf_tagtok/_stream_worker.py)."""
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    here = sys.executable
    plan = []
    for name, contender, base in CONTENDERS:
        wanted = set(only or ()) | {"stock"}
        if wanted & {"TagTokenizerFast", "fastokens_transformers"}:
            wanted.add("transformers")
        if only and contender not in wanted or not transformers and base == "transformers":
            continue
        python = here
        if contender == "tokenizers1":
            if not peer_python:
                continue
            python = peer_python
        elif contender in _MODULES and not _importable(_MODULES[contender], here):
            continue
        plan.append((name, contender, base, python))
    with tempfile.TemporaryDirectory() as folder:
        corpus_file = Path(folder) / "corpus.json"
        corpus_file.write_text(json.dumps(texts), encoding="utf-8")
        results = {name: [] for name, *_ in plan}
        failed = {}
        for _ in range(rounds):
            for name, contender, base, python in plan:
                if name in failed:
                    continue
                try:
                    results[name].append(_run(contender, tokenizer, corpus_file, batch_size, threads, python,
                                              fresh_warm))
                except RuntimeError as error:
                    failed[name] = str(error)
                    log(f"({name} not timed: {error})")
    by_contender = {contender: results[name] for name, contender, *_ in plan if name not in failed}
    rows = []
    for name, contender, base, _ in plan:
        if name in failed:
            continue
        runs, bases = by_contender[contender], by_contender[base]
        reference = bases[0]["hashes"]
        hashes = runs[0]["hashes"]
        differ = sum(a != b for a, b in zip(hashes, reference)) + abs(len(hashes) - len(reference))
        rows.append({
            "name": name, "against": base, "exact": differ == 0, "differ": differ, "tokens": runs[0]["tokens"],
            "stream_s": min(run["stream_s"] for run in runs), "warm_s": min(run["warm_s"] for run in runs),
            "stream_mb_s": megabytes / min(run["stream_s"] for run in runs),
            "stream_ratio": statistics.median(b["stream_s"] / r["stream_s"] for b, r in zip(bases, runs)),
            "warm_ratio": statistics.median(b["warm_s"] / r["warm_s"] for b, r in zip(bases, runs)),
            "cores": statistics.median(r["stream_cpu_s"] / r["stream_s"] for r in runs)
            if all("stream_cpu_s" in r for r in runs) else None,
        })
    return rows


def print_table(rows, header, log=print):
    log(header)
    log(f"{'':46s}{'exact':>10s}{'stream s':>10s}{'MB/s':>8s}{'stream':>8s}{'warm':>8s}{'cores':>7s}")
    for row in rows:
        exact = "yes" if row["exact"] else f"no ({row['differ']})"
        cores = "-" if row.get("cores") is None else f"{row['cores']:.1f}"
        log(f"{row['name']:46s}{exact:>10s}{row['stream_s']:10.3f}{row['stream_mb_s']:8.1f}"
            f"{row['stream_ratio']:7.1f}x{row['warm_ratio']:7.1f}x{cores:>7s}")
