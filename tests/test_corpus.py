"""Prepared corpora: prepare -> open round-trips ids exactly; every tampering case is refused."""
import json
import os

import numpy as np
import pytest
import tokenizers

from hf_tagtok import corpus, training
from hf_tagtok.sample_text import ascii_texts, multiscript_texts

pytest.importorskip("blake3")

DOCS = ascii_texts()[:6] + multiscript_texts()[:6] + ["", "literal special <|start|> and <|end|> text"]


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("tok")
    lines = "".join(ascii_texts()[:20]).splitlines(keepends=True)
    training.save(training.train_bpe(lines, 800, layout="start_end_unk", progress=False), out)
    return out


@pytest.fixture(scope="module")
def other_tok_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("other")
    training.save(training.train_bpe(["something else entirely\n"] * 5, 300, layout="start_end_unk", progress=False), out)
    return out


def stock_documents(tok_dir, texts):
    """What the corpus must hold: per document the start id, then stock's ids (specials literal)."""
    stock = tokenizers.Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    stock.encode_special_tokens = True
    start = stock.token_to_id("<|start|>")
    return [[start] + stock.encode(t, add_special_tokens=False).ids for t in texts]


@pytest.fixture()
def prepared(tmp_path, tok_dir):
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in DOCS), encoding="utf-8")
    out = tmp_path / "docs.ttc"
    corpus.prepare([src], out, tok_dir)
    return out


def test_round_trip_jsonl_equals_stock(prepared, tok_dir):
    c = corpus.open(prepared, tokenizer=tok_dir)
    assert isinstance(c.ids, np.memmap) and c.ids.dtype == np.uint16
    expected = stock_documents(tok_dir, DOCS)
    assert c.ids.tolist() == [i for doc in expected for i in doc]
    assert c.n_documents == len(DOCS) and c.response_mask is None
    assert c.document_starts().tolist() == np.cumsum([0] + [len(d) for d in expected[:-1]]).tolist()


def test_txt_and_parquet_inputs(tmp_path, tok_dir):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    # .txt: one document per line, split on "\n" only (U+2028 and a lone "\r" stay inside), empty lines skipped
    lines = ["first line\r", "", "second \u2028 line", "third\u0085line"]
    (tmp_path / "a.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    pq.write_table(pa.table({"body": DOCS[1:5]}), tmp_path / "b.parquet")
    c = corpus.prepare([tmp_path / "a.txt", tmp_path / "b.parquet"], tmp_path / "o.ttc", tok_dir, text_field="body")
    expected = [line for line in lines if line] + DOCS[1:5]
    assert c.ids.tolist() == [i for doc in stock_documents(tok_dir, expected) for i in doc]


def test_datasets_map_with_num_proc(tmp_path, tok_dir):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": DOCS})
    c = corpus.prepare(ds, tmp_path / "d.ttc", tok_dir, num_proc=2, batch_size=4)
    assert c.ids.tolist() == [i for doc in stock_documents(tok_dir, DOCS) for i in doc]


def test_dialogue_records_carry_a_response_mask(tmp_path, tok_dir):
    transformers = pytest.importorskip("transformers")
    conv = [{"role": "user", "content": "What is two plus two?"}, {"role": "assistant", "content": "It is four."}]
    src = tmp_path / "chat.jsonl"
    src.write_text(json.dumps({"text": DOCS[0]}) + "\n" + json.dumps({"messages": conv}) + "\n", encoding="utf-8")
    c = corpus.prepare([src], tmp_path / "chat.ttc", tok_dir)
    hf = transformers.AutoTokenizer.from_pretrained(str(tok_dir))
    from hf_tagtok.dialogue import DialogueProtocol

    chat_ids = hf.apply_chat_template(conv, chat_template=DialogueProtocol(hf).chat_template, tokenize=True,
                                      return_dict=False)
    text_doc = stock_documents(tok_dir, DOCS[:1])[0]
    assert c.ids.tolist() == text_doc + list(chat_ids)  # the template's leading start token is the marker
    mask = c.response_mask.tolist()
    assert mask[:len(text_doc)] == [0] + [1] * (len(text_doc) - 1)
    masked = [i for i, m in zip(c.ids[len(text_doc):].tolist(), mask[len(text_doc):]) if m]
    assert hf.decode(masked) == "It is four.<|end|>\n"


def test_32_bit_ids_for_large_vocabularies(tmp_path, tok_dir):
    config = json.loads((tok_dir / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = config["model"]["vocab"]
    vocab.update({f"<unused{i}>": i for i in range(len(vocab), 70_000)})  # never produced by merges
    big = tmp_path / "big"
    big.mkdir()
    (big / "tokenizer.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "x.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in DOCS[:3]), encoding="utf-8")
    c = corpus.prepare([tmp_path / "x.jsonl"], tmp_path / "l.ttc", big)
    assert c.ids.dtype == np.uint32
    assert c.ids.tolist() == [i for doc in stock_documents(big, DOCS[:3]) for i in doc]


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("offset", [corpus.HEADER_SIZE, corpus.HEADER_SIZE + 7, -1])
def test_flipped_payload_byte_is_refused(prepared, tok_dir, offset):
    _flip(prepared, offset if offset >= 0 else prepared.stat().st_size - 1)
    with pytest.raises(corpus.CorpusError, match="digest"):
        corpus.open(prepared, tokenizer=tok_dir)


@pytest.mark.parametrize("field_offset", [12, 24])  # start id, document count: both are hashed
def test_edited_header_field_is_refused(prepared, tok_dir, field_offset):
    _flip(prepared, field_offset)
    with pytest.raises(corpus.CorpusError):
        corpus.open(prepared, tokenizer=tok_dir)


def test_wrong_tokenizer_is_refused(prepared, other_tok_dir, tok_dir):
    with pytest.raises(corpus.CorpusError, match="made by tokenizer"):
        corpus.open(prepared, tokenizer=other_tok_dir)
    from hf_tagtok.tokenizer_identity import identity

    assert corpus.open(prepared, tokenizer=identity(tok_dir)).n_documents == len(DOCS)


@pytest.mark.parametrize("keep", [0, 10, corpus.HEADER_SIZE, -2])
def test_truncated_file_is_refused(prepared, tok_dir, keep):
    data = prepared.read_bytes()
    prepared.write_bytes(data[:keep] if keep >= 0 else data[:keep])
    with pytest.raises(corpus.CorpusError, match="truncated"):
        corpus.open(prepared, tokenizer=tok_dir)


def test_changed_token_count_is_refused(prepared, tok_dir):
    _flip(prepared, 16)
    with pytest.raises(corpus.CorpusError, match="truncated or padded"):
        corpus.open(prepared, tokenizer=tok_dir)


def test_not_a_corpus(tmp_path, tok_dir):
    (tmp_path / "junk").write_bytes(b"x" * 100)
    with pytest.raises(corpus.CorpusError, match="magic"):
        corpus.open(tmp_path / "junk", tokenizer=tok_dir)


def test_interrupted_write_leaves_no_file(tmp_path, tok_dir):
    out = tmp_path / "never.ttc"
    with pytest.raises(RuntimeError):
        with corpus.CorpusWriter(out, identity="00" * 32, vocab_size=300, start_id=0) as writer:
            writer.add([5, 6, 7])
            raise RuntimeError("killed")
    assert os.listdir(tmp_path) == []


def test_bad_documents_raise_value_error(tmp_path):
    with corpus.CorpusWriter(tmp_path / "c.ttc", identity="00" * 32, vocab_size=300, start_id=0) as writer:
        with pytest.raises(ValueError, match="start marker"):
            writer.add([5, 0, 7])
        with pytest.raises(ValueError, match="id width"):
            writer.add([70_000])
        with pytest.raises(ValueError, match="response_mask"):
            writer.add([5, 6], [1])


def test_add_batch_matches_single_adds(tmp_path):
    docs = [[5, 6], [], [0, 7, 8], [9]]  # an empty document, and one opening with the marker
    for name, add in (("one", lambda w: [w.add(d) for d in docs]),
                      ("batch", lambda w: w.add_batch([i for d in docs for i in d], [len(d) for d in docs]))):
        with corpus.CorpusWriter(tmp_path / name, identity="00" * 32, vocab_size=300, start_id=0) as writer:
            add(writer)
    c = corpus.open(tmp_path / "batch", tokenizer="00" * 32)
    assert (tmp_path / "one").read_bytes() == (tmp_path / "batch").read_bytes()
    assert c.ids.tolist() == [0, 5, 6, 0, 0, 7, 8, 0, 9] and c.n_documents == 4
    with corpus.CorpusWriter(tmp_path / "bad", identity="00" * 32, vocab_size=300, start_id=0) as writer:
        with pytest.raises(ValueError, match="lengths"):
            writer.add_batch([1, 2, 3], [1, 1])


def test_bad_inputs_raise_value_error(tmp_path, tok_dir):
    (tmp_path / "x.csv").write_text("a,b", encoding="utf-8")
    with pytest.raises(ValueError, match="unsupported input"):
        corpus.prepare([tmp_path / "x.csv"], tmp_path / "o.ttc", tok_dir)
    (tmp_path / "x.jsonl").write_text('{"other": 1}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="neither"):
        corpus.prepare([tmp_path / "x.jsonl"], tmp_path / "o.ttc", tok_dir)
    (tmp_path / "y.jsonl").write_text('{"text": "a"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        corpus.prepare([tmp_path / "y.jsonl"], tmp_path / "o.ttc", tok_dir, start_token="<nope>")
    assert not (tmp_path / "o.ttc").exists()


def test_cli_prepare(tmp_path, tok_dir, capsys):
    (tmp_path / "a.txt").write_text(DOCS[7], encoding="utf-8")
    assert corpus.main(["--tokenizer", str(tok_dir), "--out", str(tmp_path / "a.ttc"), str(tmp_path / "a.txt")]) == 0
    assert "1 documents" in capsys.readouterr().out
    assert corpus.open(tmp_path / "a.ttc", tokenizer=tok_dir).ids.tolist() == stock_documents(tok_dir, DOCS[7:8])[0]
