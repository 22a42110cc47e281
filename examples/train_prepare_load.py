"""Train a tokenizer on your own text, prepare a fingerprinted corpus with it, load it back.

    python examples/train_prepare_load.py [WORKDIR]

Uses the bundled examples/data/corpus.txt (prose and code) and examples/data/chat.jsonl (dialogues
plus one plain document). The same three steps from the shell:

    hf-tagtok train --vocab-size 1024 --layout start_end_unk --out WORKDIR/tok examples/data/corpus.txt
    hf-tagtok prepare --tokenizer WORKDIR/tok --out WORKDIR/chat.ttc examples/data/chat.jsonl
    hf-tagtok inspect WORKDIR/tok
"""
import sys
import tempfile
from pathlib import Path

import hf_tagtok
from hf_tagtok import corpus, training
from hf_tagtok.tokenizer_identity import identity
from hf_tagtok.inspect_vocab import describe, format_report

DATA = Path(__file__).resolve().parent / "data"


def main(workdir: Path):
    # 1. Train: same text in, byte-identical tokenizer.json out (ids 0-2 start/end/unknown, 3-258 bytes).
    tokenizer = hf_tagtok.train_bpe([DATA / "corpus.txt"], 1024, layout="start_end_unk", progress=False)
    tok_dir = workdir / "tok"
    training.save(tokenizer, tok_dir)
    print(format_report(describe(tok_dir)), end="\n\n")

    # 2. Prepare: dialogues get a response mask (assistant tokens), every document a start marker,
    #    and the file records the tokenizer identity and a digest of its contents.
    prepared = corpus.prepare([DATA / "chat.jsonl"], workdir / "chat.ttc", tok_dir)
    print(f"prepared {prepared.n_documents} documents, {prepared.ids.size} tokens "
          f"({prepared.ids.dtype}), tokenizer {identity(tok_dir)[:16]}...")

    # 3. Load: open() verifies digest, counts and identity before handing out a memmap.
    loaded = corpus.open(workdir / "chat.ttc", tokenizer=tok_dir)
    starts = list(loaded.document_starts()) + [loaded.ids.size]
    first = loaded.ids[starts[0]:starts[1]].tolist()
    reply = [t for t, m in zip(first, loaded.response_mask[starts[0]:starts[1]]) if m]
    print("first document:", repr(tokenizer.decode(first, skip_special_tokens=False)))
    print("its training targets:", repr(tokenizer.decode(reply, skip_special_tokens=False)))

    # A corpus made by one tokenizer is refused under another.
    other = training.train_bpe(["a different tokenizer\n"], 300, layout="start_end_unk", progress=False)
    training.save(other, workdir / "other")
    try:
        corpus.open(workdir / "chat.ttc", tokenizer=workdir / "other")
    except corpus.CorpusError as exc:
        print("refused:", exc)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
