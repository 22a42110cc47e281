"""Render the atom and script alphabets, as generated into the tables, for docs/architecture.md.

`python -m conformance.docs_alphabets` rewrites the block between the markers in the doc;
tests/test_pre_tokenizers_docs.py fails when the committed doc and the tables disagree.
"""
import pathlib
import unicodedata

from hf_tagtok import _engine

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
BEGIN, END = "<!-- alphabets:begin (python -m conformance.docs_alphabets) -->", "<!-- alphabets:end -->"


def _run_sizes(starts, tags):
    """Scalar count and first scalar value of every tag, from the run-length table."""
    sizes, first = {}, {}
    bounds = list(starts) + [0x110000]
    for start, end, tag in zip(bounds, bounds[1:], tags):
        surrogates = max(0, min(end, 0xE000) - max(start, 0xD800))
        sizes[tag] = sizes.get(tag, 0) + (end - start) - surrogates
        if not 0xD800 <= start < 0xE000:
            first.setdefault(tag, start)
    return sizes, first


def render():
    tables = _engine.tables()
    atom_sizes, atom_first = _run_sizes(tables["atom_run_start"], tables["atom_run_tag"])
    lines = [f"Properties (bit order): {', '.join(tables['prop_names'])}.", "",
             f"Atoms ({len(tables['atom_names'])}): one per distinct property tuple.", "",
             "| atom | properties | scalars | first scalar |", "|---:|---|---:|---|"]
    for atom, name in enumerate(tables["atom_names"]):
        cp = atom_first.get(atom)
        label = f"U+{cp:04X} {unicodedata.name(chr(cp), '')}".rstrip() if cp is not None else "-"
        lines.append(f"| {atom} | {name} | {atom_sizes.get(atom, 0):,} | {label} |")
    script_sizes, _ = _run_sizes(tables["script_run_start"], tables["script_run_tag"])
    names = tables["script_names"]
    lines += ["", f"Scripts ({len(names)}; `Any` = tag {tables['script_any']}, kana already folded into Hani by "
              "`fixed_script`): " + ", ".join(f"{name} ({script_sizes.get(tag, 0):,})" for tag, name in enumerate(names)) + "."]
    return "\n".join(lines)


def main():
    text = DOC.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    DOC.write_text(f"{head}{BEGIN}\n{render()}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    main()
