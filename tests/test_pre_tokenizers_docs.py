"""The docs stay true: pre_tokenizers.md examples run, architecture.md alphabets equal the tables."""
import pathlib
import re

from conformance import docs_alphabets

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


def test_usage_examples_run():
    text = (DOCS / "pre_tokenizers.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 4
    namespace = {}
    for block in blocks:
        exec(compile(block, "docs/pre_tokenizers.md", "exec"), namespace)  # each block asserts against stock


def test_architecture_alphabets_match_the_generated_tables():
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    block = text.split(docs_alphabets.BEGIN)[1].split(docs_alphabets.END)[0]
    assert block.strip() == docs_alphabets.render().strip()
