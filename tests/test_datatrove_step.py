"""TagDocumentTokenizer writes the same files and stats as datatrove's own DocumentTokenizer."""
import pytest

from conformance import tokenizer_zoo
from hf_tagtok.sample_text import multiscript_texts

datatrove = pytest.importorskip("datatrove")
from datatrove.data import Document  # noqa: E402
from datatrove.pipeline.tokens.tokenizer import DocumentTokenizer  # noqa: E402

from hf_tagtok.datatrove_step import TagDocumentTokenizer  # noqa: E402

TEXTS = multiscript_texts()[::3] + ["", "x"]


def _documents():
    return (Document(text=text, id=str(n)) for n, text in enumerate(TEXTS))


def _run(step_class, tokenizer_file, out, **options):
    step = step_class(str(out), str(tokenizer_file), seed=7, batch_size=50, **options)
    step.run(_documents(), rank=0, world_size=1)
    return step.stats.to_dict(), {path.name: path.read_bytes() for path in sorted(out.iterdir())}


@pytest.mark.parametrize("member, options", [
    ("llama3", {"eos_token": "<|end_of_text|>"}),
    ("small_split_bytelevel_template", {}),
    ("small_split_bytelevel_template", {"shuffle_documents": False}),
    ("small_split_bytelevel_template", {"shuffle_chunk_size": 64, "max_tokens_per_file": 500}),
    ("small_split_bytelevel_template", {"max_tokens_per_file": 300}),
    ("small_split_bytelevel_template", {"max_tokens_per_file": 1}),  # a file per document, and an empty last one
    ("small_split_bytelevel_template", {"shuffle_chunk_size": 16, "max_tokens_per_file": 1}),
])
def test_same_files_as_datatrove(member, options, tmp_path):
    if member not in tokenizer_zoo.available():
        pytest.skip(f"{member} is not installed")
    tokenizer_file = tmp_path / "tokenizer.json"
    tokenizer_zoo.load(member).save(str(tokenizer_file))
    stock_stats, stock_files = _run(DocumentTokenizer, tokenizer_file, tmp_path / "stock", **options)
    ours_stats, ours_files = _run(TagDocumentTokenizer, tokenizer_file, tmp_path / "ours", **options)
    assert stock_files and list(ours_files) == list(stock_files)
    for name in stock_files:
        assert ours_files[name] == stock_files[name], name
    assert ours_stats["stats"]["tokens"] == stock_stats["stats"]["tokens"]
