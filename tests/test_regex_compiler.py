"""The Split-regex compiler against stock tokenizers (Oniguruma): real family patterns, every code
point, the hand-written FSMs, and a seeded fuzz of random patterns drawn from the grammar."""
import itertools
import os
import random
import re
import struct
import sys
from pathlib import Path

import pytest
from tokenizers import Regex
from tokenizers import pre_tokenizers as hf

from hf_tagtok import _engine
from hf_tagtok import pre_tokenizers as twins
from hf_tagtok import regex_compiler

sys.path.insert(0, str(Path(__file__).parent / "data"))
from split_patterns import FAMILY_PATTERNS, UNSUPPORTED  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BEHAVIORS = ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]

POOL = list("aAbB zZ'sStTreRElLdDmMkK\t\n\r\xa0\u3000\u2028\x85-_.,!?\"()[]/|$^~`+<=>1234567890½²٣Ⅷ") + [
    "ſ", "\u212a", "ß", "ẞ", "ﬆ", "İ", "é", "e\u0301", "ǅ", "ʰ", "日本", "語", "ｱｰｲ", "ーー", "한국어", "Привет",
    "Γειά", "مرحبا", "हिन्दी", "ดี", "😀", "👨‍👩‍👧", "❤️", "\u200b", "\ufeff", "\u0378", "\U00011DE0",
    "\U0001F130", "Ⓐ", "▁", "  ", "   ", "\r\n", "'ll", "'VE", "'s", "\x00", "\U000E0001", "。", "，", "…", "µ",
    "ぁ", "ア", "龥", "가", "\U00020000", "123", "4567",
]


def _corpus_lines(count):
    lines = (ROOT / "hf_tagtok" / "data" / "multiscript.txt").read_text(encoding="utf-8").splitlines()
    step = max(1, len(lines) // count)
    return lines[::step][:count]


def _random_strings(seed, count):
    rng = random.Random(seed)
    return ["".join(rng.choice(POOL) for _ in range(rng.randint(1, 24))) for _ in range(count)]


CORPUS = _corpus_lines(150) + ["\n".join(_corpus_lines(40))]
TEXTS = CORPUS + _random_strings(1, 200) + ["", " ", "a", "  \n\n  x ", "1234567", "x  ", "\n", "'S'll"]


def _pairs(pattern, behavior="isolated", invert=False):
    return twins.Split(Regex(pattern), behavior, invert), hf.Split(Regex(pattern), behavior, invert)


def _assert_same(ours, stock, texts, label):
    """Asserts equal output; returns how many texts stock itself could not split (onig's retry limit:
    stock panics where a pattern backtracks catastrophically, the linear-time VM answers)."""
    stock_failed = 0
    for text in texts:
        try:
            want = stock.pre_tokenize_str(text)
        except BaseException as error:  # pyo3_runtime.PanicException derives from BaseException
            if "retry-limit-in-match" not in str(error):
                raise
            stock_failed += 1
            continue
        assert ours.pre_tokenize_str(text) == want, f"{label}: {text!r}"
    return stock_failed


FAMILY_CASES = [(family, k, p) for family, patterns in FAMILY_PATTERNS.items() for k, p in enumerate(patterns)]


@pytest.mark.parametrize("pattern", [r"[٠-٩]+", r"\p{N}{1,3}", r"[一-龥]+|\d", r"[ي-٩]"])
def test_match_starts_found_at_every_offset_among_chars_sharing_their_lead_byte(pattern):
    # the start scan tests sixteen bytes at a time: a start at every offset of a block, after chars whose
    # first (and second) bytes are those of a start but which start no match (Arabic letters before Arabic
    # digits, Devanagari letters before Devanagari digits, CJK punctuation before ideographs, emoji)
    ours, stock = _pairs(pattern)
    fillers = ["ب", "ي", "ह", "ि", "、", "😀", "a"]
    starts = ["٣", "٣٤", "६", "中文", "7", "٩"]
    texts = [filler * count + " " * pad + start + filler * 20
             for filler in fillers for start in starts for count in (1, 9) for pad in range(17)]
    _assert_same(ours, stock, texts, pattern)


@pytest.mark.parametrize("family,index,pattern", FAMILY_CASES, ids=[f"{f}-{k}" for f, k, _ in FAMILY_CASES])
def test_family_patterns_equal_stock(family, index, pattern):
    try:
        regex_compiler.compile_pattern(pattern)
    except regex_compiler.UnsupportedRegex as why:
        expected = UNSUPPORTED.get(family, ())
        assert expected and any(word in str(why) for word in expected), f"{family}: {why}"
        with pytest.raises(twins.UnsupportedPattern, match="cannot be compiled"):
            twins.Split(Regex(pattern), "isolated")
        return
    ours, stock = _pairs(pattern)
    _assert_same(ours, stock, TEXTS, family)
    behavior = BEHAVIORS[index % len(BEHAVIORS)]
    ours, stock = _pairs(pattern, behavior, invert=index % 2 == 1)
    _assert_same(ours, stock, TEXTS[::3], f"{family} {behavior}")


def _scalar_chunks(step=1, size=4096):
    scalars = "".join(chr(cp) for cp in itertools.chain(range(0, 0xD800, step), range(0xE000, 0x110000, step)))
    return [scalars[k:k + size] for k in range(0, len(scalars), size)]


SWEEP_PATTERNS = sorted({p for patterns in FAMILY_PATTERNS.values() for p in patterns
                         if p.startswith(("\\p{N}{1,3}", "[一", "[!\\\"", "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}", " ?[^(",
                                          "[\\p{P}\\$", "[\\p{Han}]"))})


@pytest.mark.parametrize("pattern", SWEEP_PATTERNS)
def test_every_code_point_in_contexts(pattern):
    """Every scalar value alone in sequence, and between the chars the patterns look at."""
    ours, stock = _pairs(pattern)
    chunks = _scalar_chunks(size=8192)
    texts = chunks + ["a" + "a".join(c) + "a" for c in _scalar_chunks(step=3, size=2048)]
    texts += [" " + " ".join(c) for c in _scalar_chunks(step=5, size=2048)]
    texts += ["'" + "'".join(c) for c in _scalar_chunks(step=7, size=2048)]
    _assert_same(ours, stock, texts, pattern)


LOOKBEHIND_PATTERNS = [r"(?<=[0-9])[a-z]+|" + FAMILY_PATTERNS["cl100k"][0], r"(?<![\p{L}\p{N}])'\p{L}+|\S",
                       r"(?<=\p{Han}|ab|[\s]{2})\p{L}|(?<!\s)\s+", r"\p{L}+(?<=[^aeiou]{3})",
                       r"(?<=^|\s)\p{L}+|(?<!\b)\d|(?<=\Aa)\S|(?<=a$)\s|(?<=\Bx).|\S"]


@pytest.mark.parametrize("pattern", LOOKBEHIND_PATTERNS)
@pytest.mark.parametrize("behavior", BEHAVIORS)
def test_lookbehind_with_fixed_length_alternatives(pattern, behavior):
    """A lookbehind looks back from where it stands, up to the start of the split being cut (never before it),
    at each alternative's own length; every scalar value as the char looked at."""
    ours, stock = _pairs(pattern, behavior)
    texts = TEXTS + ["a" + "a".join(c) + "a" for c in _scalar_chunks(step=11, size=2048)]
    _assert_same(ours, stock, texts, f"{pattern!r} {behavior}")
    sequence = [twins.WhitespaceSplit(), twins.Split(Regex(pattern), behavior)]  # pieces of a split: no looking before
    stock_sequence = hf.Sequence([hf.WhitespaceSplit(), hf.Split(Regex(pattern), behavior)])
    _assert_same(twins.Sequence(sequence), stock_sequence, TEXTS, f"after WhitespaceSplit {pattern!r}")


def _compiled_program(pattern, backtrack_only=False, behavior="isolated", invert=False):
    compiled = regex_compiler.compile_pattern(pattern)
    return _engine.Program([{"kind": "split_compiled", **compiled.step_fields, "behavior": behavior,
                             "invert": invert, "backtrack_only": backtrack_only}])


# Family patterns whose lookaheads look further than one char: they run on the backtracking VM.
NEEDS_VM = {r"\d{1,3}(?=(?:\d{3})*\b)", r"(?=(\d{3})+(?!\d))"}


@pytest.mark.parametrize("family,index,pattern", FAMILY_CASES, ids=[f"{f}-{k}" for f, k, _ in FAMILY_CASES])
def test_family_patterns_run_as_dfa(family, index, pattern):
    """Every compilable family pattern but those named in NEEDS_VM runs as a DFA, equal to the VM."""
    try:
        dfa = _compiled_program(pattern)
    except twins.UnsupportedPattern:
        return
    except regex_compiler.UnsupportedRegex:
        return
    assert dfa.dfa_steps == (0 if pattern in NEEDS_VM else 1), pattern
    vm = _compiled_program(pattern, backtrack_only=True)
    assert vm.dfa_steps == 0
    for text in TEXTS:
        assert dfa.pre_tokenize_str(text) == vm.pre_tokenize_str(text), (pattern, text)


@pytest.mark.parametrize("backtrack_only", [False, True], ids=["dfa", "vm"])
@pytest.mark.parametrize("kind", sorted(twins.RECOGNISED_PATTERNS))
def test_compiled_equals_hand_fsm(kind, backtrack_only):
    """One mechanism tested against the other: the compiled program of each hand-written FSM's pattern,
    as a DFA and on the backtracking VM."""
    hand = _engine.Program([{"kind": "split_regex", "regex": kind, "behavior": "isolated", "invert": False}])
    ours = _compiled_program(twins.RECOGNISED_PATTERNS[kind], backtrack_only)
    assert ours.dfa_steps == (0 if backtrack_only else 1)
    texts = TEXTS + _scalar_chunks(size=8192) + ["a" + "a".join(c) for c in _scalar_chunks(step=3, size=2048)]
    texts += [" " + " ".join(c) for c in _scalar_chunks(step=5, size=2048)]
    texts += ["'" + "'".join(c) for c in _scalar_chunks(step=11, size=2048)]
    for text in texts:
        assert ours.pre_tokenize_str(text) == hand.pre_tokenize_str(text), text[:80]


def test_sequence_and_native_pipeline_use_the_compiled_step():
    pattern = FAMILY_PATTERNS["deepseek-v3"]
    seq = twins.Sequence([twins.Split(Regex(p), "isolated") for p in pattern] + [twins.ByteLevel(False, True, False)])
    stock = hf.Sequence([hf.Split(Regex(p), "isolated") for p in pattern] + [hf.ByteLevel(False, True, False)])
    # the digit and CJK splits (disjoint runs) and the last regex, run within their segments, are one step
    assert [s["kind"] for s in seq._steps()] == ["split_compiled", "bytelevel"]
    assert "segments" in seq._steps()[0]
    _assert_same(seq, stock, TEXTS, "deepseek-v3 sequence")


@pytest.mark.parametrize("pattern,construct", [
    (r"(a)\12", "backreference or octal escape \\1 at offset 3"),
    (r"(a)[\1]", "octal escape \\1 at offset 4"),
    (r"\1(a)", "backreference \\1 to a group not closed before it at offset 0"),
    (r"(a\1)", "backreference \\1 to a group not closed before it at offset 2"),
    (r"(a)(?=\1)", "backreference \\1 inside a lookaround at offset 6"),
    (r"(?=(a))\1", "backreference \\1 to a group inside a lookaround at offset 7"),
    (r"(?i)(a)\1", "case-insensitive backreference \\1 at offset 7"),
    (r"(a)++\1", "backreference \\1 to a group inside an atomic group or possessive quantifier at offset 5"),
    (r"(?>(a))\1", "backreference \\1 to a group inside an atomic group or possessive quantifier at offset 7"),
    (r"(a)(?>\1)", "backreference \\1 inside an atomic group at offset 6"),
    (r"(a)(?:b\1)*+", "possessive quantifier over a backreference at offset 3"),
    (r"(?<=a++)b", "lookbehind whose alternative holds a lookaround, an atomic group, a possessive repeat"),
    (r"(?<=(?>a|ab)c*)d", "lookbehind whose alternative holds a lookaround, an atomic group"),
    (r"(?<=\bx?)a", "word boundary in a lookbehind alternative of varying length at offset 0"),
    (r"(?<!\B[é ]?)", "word boundary in a lookbehind alternative of varying length at offset 0"),
    (r"\g<1>(a)", "subexpression call \\g<1> of a group not closed before it at offset 0"),
    (r"(a\g<1>?b)", "subexpression call \\g<1> of a group not closed before it at offset 2"),
    (r"(a)\g<-1>", "relative subexpression call at offset 3"),
    (r"(a)\g<1>\1", "subexpression call of a group a backreference reads (\\1) at offset 3"),
    (r"((a)b)\g<1>\2", "subexpression call of a group a backreference reads (\\2) at offset 6"),
    (r"(a)(?=\g<1>)", "subexpression call \\g<1> inside a lookaround at offset 6"),
    (r"(?=(a))\g<1>", "subexpression call \\g<1> of a group inside a lookaround at offset 7"),
    (r"(?<x>a)|(?<x>b)\k<x>", "backreference \\k<..> to a name no group or several groups have before it"),
    (r"\((?:[^()]|\g<0>)*\)", "subexpression call of the whole pattern at offset 11"),
    (r"(?:a*)*", "quantifier over an expression that can match empty at offset 0"),
    (r"(?i:[^a-z])", "case-insensitive negated character class"),
    (r"(?i:ss)", "onig matches 'ss' against one char"),
    (r"[[:alpha:]]", "POSIX bracket"),
    (r"x\p{Alpha}", "unknown property \\p{Alpha} at offset 1"),
])
def test_unsupported_constructs_are_named(pattern, construct):
    with pytest.raises(twins.UnsupportedPattern) as err:
        twins.Split(Regex(pattern), "isolated")
    assert construct in str(err.value)
    slow = twins.Split(Regex(pattern), "isolated", allow_slow_regex=True)  # still runs, via stock
    assert slow.pre_tokenize_str("aab ss x") == hf.Split(Regex(pattern), "isolated").pre_tokenize_str("aab ss x")


@pytest.mark.parametrize("pattern,construct", [
    (r"(?<x>a)\g<1>", "numbered subexpression call in a pattern of named groups at offset 7"),
    (r"(?<x>a)|(?<x>b)\g<x>", "subexpression call \\g<..> of a name no group or several groups have before it"),
])
def test_calls_onig_refuses_are_refused(pattern, construct):
    with pytest.raises(Exception, match="Oniguruma error"):
        Regex(pattern)
    with pytest.raises(regex_compiler.UnsupportedRegex, match=re.escape(construct)):
        regex_compiler.compile_pattern(pattern)


# onig's atomic groups and possessive repeats: the body's first match is kept and never given back.
ATOMIC_PATTERNS = [
    r"(?>a|ab)c", r"(?>a+)a", r"(?>\p{L}+|\d)\p{L}", r"(?:ab|a)++b", r"(?:\s\S)*+\S", r"x(?>ab|a)*b",
    r"(?<=(?>\p{Lu}))\p{Ll}+", r"(?>\w+(?=\s))|\s+", r"((?>a|ab))\1?c", r"(?>[a-z]+(?i:'s|'t)?)+?!",
    r" ?(?>\p{L}+|\p{N}{1,3})(?>(?!\s)[^\p{L}\p{N}])*+",
]


@pytest.mark.parametrize("pattern", ATOMIC_PATTERNS)
@pytest.mark.parametrize("behavior", BEHAVIORS)
def test_atomic_groups_and_possessive_repeats(pattern, behavior):
    texts = TEXTS + ["aab abc abbc aaa abababab b", "xabab xaab x ab", "Don't stop's!", "a\tb c\n"]
    ours, stock = _pairs(pattern, behavior)
    assert not _assert_same(ours, stock, texts, pattern)


# onig's subexpression calls of a group closed before them: a copy of the group's body, backtracked into
# (`(a|ab)\g<1>c` matches "aabc"), with the options where the group stands, under any quantifier.
CALL_PATTERNS = [
    r"(a|ab)\g<1>c", r"(\p{Ll})\g<1>", r"(\w)\g<1>+?", r"(?<d>\d)\g<d>{2}", r"(?i:(a))\g<1>", r"(a)(?i)\g<1>b",
    r"((a)b|c)\g<1>*\g<2>", r"(?>(a|ab))\g<1>c", r"(\s)(?:x\g<1>)+", r"(q)\g'1'z|\p{L}+", r"(?<x>\p{Lu})\g'x'(?=\p{Ll})",
    r"([^\s\p{L}])\g<1>\p{L}*|\s+(?!\S)|\S", r"(?i)(s)\g<1>|(k)\g<2>",
]


@pytest.mark.parametrize("pattern", CALL_PATTERNS)
@pytest.mark.parametrize("behavior", BEHAVIORS)
def test_subexpression_calls(pattern, behavior):
    texts = TEXTS + ["aabc abc aababc aaa ac", "aa aA Aa AA xy Ab", "111 22 1234", "x x  x\tx x", "!!a .,b ?",
                     "ß ss SS ſs Kk \u212ak"]
    ours, stock = _pairs(pattern, behavior)
    assert not _assert_same(ours, stock, texts, pattern)


def test_called_groups_in_a_replace_normalizer():
    """Normalized text and every char's alignment against stock's Replace."""
    from normalizer_alignment import check, stock_and_native
    from tokenizers import normalizers

    for pattern in (r"(\p{Lu})\g<1>\p{Lu}", r"(a|ab)\g<1>c", r"(\s)\g<1>+"):
        triple = stock_and_native(normalizers.Replace(Regex(pattern), "\u01c1"))
        for text in TEXTS + ["ABC abc AAbc aabc", "x  y   z"]:
            check(triple, text)


# may_match_empty (which picks how hf_tagtok.gate finds a refused regex's matches), against stock: stock's Replace
# puts its content in at every match, an empty one too, where stock's Split keeps only the non-empty ones.
EMPTY_PROBE_TEXTS = TEXTS + ["qqz qz qqzz", "aab abab aaa", "AB ABC aBcd Abc", "x1 xx1 11xy", "ab aabb aaabbb",
                             "aabc abc"]


def _stock_matches(pattern, text):
    """(how many matches stock's Replace finds in text, how many non-empty ones stock's Split keeps)."""
    from tokenizers import normalizers

    marker = "\ufdd0"
    found = normalizers.Replace(Regex(pattern), marker).normalize_str(text).count(marker)
    return found, len(hf.Split(Regex(pattern), "removed", invert=True).pre_tokenize_str(text))


@pytest.mark.parametrize("pattern", [r"\g<1>(\p{Ll})", r"\g<1>(q)z", r"(?<=B)\g<1>(\p{L})", r"(\g<2>)(x?)y",
                                     r"\X", r"\X\X?", r"\g<1>(a|\p{Ll}\p{Ll})", r"(?<n>a\g<n>?b)", r"\g<1>(a)?",
                                     *CALL_PATTERNS])
def test_a_pattern_read_as_never_matching_empty_matches_no_empty_stretch_in_stock(pattern):
    assert not regex_compiler.may_match_empty(pattern)
    counts = [_stock_matches(pattern, text) for text in EMPTY_PROBE_TEXTS]
    assert sum(found for found, _ in counts) > 0
    assert [found for found, _ in counts] == [kept for _, kept in counts]


@pytest.mark.parametrize("pattern", [r"\g<1>(q)|z*", r"(\g<2>)(x?)", r"(a\g<1>?b|)", r"(\w)\g<1>|\s*", r"a\K"])
def test_a_pattern_stock_matches_empty_may_match_empty(pattern):
    counts = [_stock_matches(pattern, text) for text in EMPTY_PROBE_TEXTS]
    assert any(found > kept for found, kept in counts)
    assert regex_compiler.may_match_empty(pattern)


def test_a_shape_the_parse_does_not_read_may_match_empty():
    # \K moves the match's start (`a\K` above), a named call before its group and a backreference are not read
    for pattern in (r"a\Kb", r"\g<n>(?<n>x)", r"(a)\1\g<2>(b)"):
        Regex(pattern)  # onig accepts each
        assert regex_compiler.may_match_empty(pattern)


@pytest.mark.parametrize("pattern,dfa", [(r"(?>\d)\dx", 1), (r"(?>\p{L}+)\d", 1), (r"(?>a(?=b))b", 1),
                                         (r"(?>\p{L}+?)\d", 0), (r"(?>a|ab)c", 0), (r"(?:ab)++", 0)])
def test_atomic_groups_that_match_one_way_run_as_dfa(pattern, dfa):
    """An atomic group over what matches one way at most, or over a greedy repeat of one set, is that node or
    a run: the DFA takes it; the others run on the VM, and both equal stock."""
    ours = _compiled_program(pattern)
    assert ours.dfa_steps == dfa
    assert not _assert_same(ours, hf.Split(Regex(pattern), "isolated"), TEXTS + ["11x 1x 22 a1 ab abc"], pattern)


def test_malformed_compiled_steps_are_rejected():
    compiled = regex_compiler.compile_pattern(r"\p{L}+")
    good = {"kind": "split_compiled", **compiled.step_fields, "behavior": "isolated"}
    _engine.Program([good])
    bad_jump = bytearray(good["code"])
    bad_jump[4:8] = (10 ** 6).to_bytes(4, "little", signed=True)
    stray_back = struct.pack("<4i", regex_compiler.OP_BACK, 1, 0, 0) + good["code"][16:]  # in the main program
    unbound_ref = struct.pack("<4i", regex_compiler.OP_REF, 1, 0, 0) + good["code"]  # no SAVE bounds group 1
    far_save = struct.pack("<4i", regex_compiler.OP_SAVE, 10 ** 6, 0, 0) + good["code"]
    atomic_behind = struct.pack("<4i", regex_compiler.OP_ATOMIC, 0, 0, 0) + good["code"]  # its body before it
    for change in ({"code": b""}, {"code": bytes(bad_jump)}, {"code": stray_back}, {"stage1": b"\0\0"},
                   {"code": unbound_ref}, {"code": far_save}, {"code": atomic_behind, "n_subs": 1},
                   {"n_classes": 0}, {"sets": good["sets"][:-8] or b"x"}, {"n_subs": -1}):
        with pytest.raises((ValueError, _engine.UnsupportedShape)):
            _engine.Program([{**good, **change}])
    runs = tuple(regex_compiler.compile_pattern(p) for p in (r"\p{N}", "[一-龥]+"))
    within = {**good, **regex_compiler.compile_within_runs(r"\p{L}+", runs).step_fields}
    _engine.Program([within])
    one_set = within["segments"][:4]
    for change, why in (({"segments": one_set * 2 + struct.pack("<I", 10 ** 6)}, "segments must be bytes"),
                        ({"segments": one_set + b"\0\0\0\0" + one_set + b"\0\0\0\0"}, "segment sets overlap"),
                        ({"segments": struct.pack("<2I", 10 ** 6, 0)}, "segment set out of range"),
                        ({"behavior": "removed"}, "within segments splits Isolated")):
        with pytest.raises((ValueError, _engine.UnsupportedShape), match=why):
            _engine.Program([{**within, **change}])


# The search for a match start skips bytes that start nothing sixteen at a time and rejects a multi-byte char
# by its first two bytes: narrow first sets (ASCII or not, every UTF-8 length, more distinct byte groups
# than the scan's eight buckets) over long texts, where the fast scan runs.
START_SCAN_PATTERNS = [
    r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+", "[\U00010000-\U0001ffff]+", "[é-ř]+",
    "\u2581|\u00a0|\u3000", r"[\p{Lu}\p{N}]\p{Ll}*", r"[\x01\x13\x25\x37\x49\x5a\x6d\x7e\u00c1\u0100\u0800]",
    "\U0010fffd|\U00020000|\uffff|\u07ff|\u0080",
]


@pytest.mark.parametrize("pattern", START_SCAN_PATTERNS)
def test_match_start_scan_on_long_texts(pattern):
    rng = random.Random(pattern)
    texts = ["".join(rng.choice(POOL) for _ in range(rng.randint(100, 400))) for _ in range(40)]
    texts += ["".join(chr(cp) for cp in range(lo, lo + 300) if not 0xD800 <= cp < 0xE000)
              for lo in (0x20, 0x7F0, 0xFF00, 0x1FF00, 0x10FED3)]
    texts += ["a" * k + "1" + "b" * 40 + "\u4e00" for k in range(40)]
    ours, stock = _pairs(pattern)
    assert _compiled_program(pattern).dfa_steps == 1
    _assert_same(ours, stock, texts + CORPUS, f"start scan {pattern!r}")


# ---------------------------------------------------------------- fuzz

FUZZ_LITERALS = list("ab ' 1-.,\n") + ["é", "日", "ſ", "\u212a", "😀"]
FUZZ_ESCAPES = [r"\s", r"\S", r"\d", r"\D", r"\w", r"\W", r"\h", r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{N}",
                r"\p{Nd}", r"\p{P}", r"\p{S}", r"\p{M}", r"\P{L}", r"\p{Han}", r"\p{Hiragana}", r"\p{Latin}",
                r"\p{^N}", r"\r", r"\n", r"\t", r"\x41", r"\x{65E5}", r"\u00e9", r"\.", r"\-", "."]
FUZZ_CLASS_ITEMS = ["a-z", "A-Z", "0-9", "'", " ", r"\s", r"\p{L}", r"\p{N}", r"\p{P}", r"\r\n", "一-龥", "。-〿",
                    "!-/", r"\p{Lu}\p{Lt}", r"\d", "é"]


def _fuzz_class(rng, depth):
    items = rng.sample(FUZZ_CLASS_ITEMS, rng.randint(1, 3))
    if depth < 2 and rng.random() < 0.2:
        items.append(_fuzz_class(rng, depth + 1))
    body = "".join(items)
    if rng.random() < 0.1:
        body += "&&" + _fuzz_class(rng, depth + 1)
    return "[" + ("^" if rng.random() < 0.35 else "") + body + "]"


def _fuzz_atom(rng, depth):
    r = rng.random()
    if r < 0.25:
        return rng.choice(FUZZ_LITERALS).replace(".", r"\.")
    if r < 0.5:
        return rng.choice(FUZZ_ESCAPES)
    if r < 0.7:
        return _fuzz_class(rng, 0)
    if depth < 2 and r < 0.85:
        return rng.choice(["(?:", "(?:", "(?>"]) + _fuzz_alt(rng, depth + 1) + ")"
    if depth < 2 and r < 0.9:
        return "(?" + rng.choice("=!") + _fuzz_alt(rng, depth + 1) + ")"
    if depth < 2 and r < 0.93:
        return _fuzz_lookbehind(rng)
    if r < 0.96:
        return "(?i:" + "|".join(rng.choice(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "x", "K"]) for _ in range(2)) + ")"
    return rng.choice(["^", "$", r"\b", r"\A", r"\z"])


def _fuzz_lookbehind(rng):
    """Alternatives of one-char atoms, of a fixed length each or varying (`?`, `+`, `*`, `{1,3}`: run reversed)."""
    branches = []
    for _ in range(rng.randint(1, 3)):
        atoms = [rng.choice([rng.choice(FUZZ_LITERALS).replace(".", r"\."), rng.choice(FUZZ_ESCAPES),
                             _fuzz_class(rng, 0)]) for _ in range(rng.randint(1, 2))]
        branches.append("".join(atom + rng.choice(["", "", "", "{2}", "?", "+", "*", "{1,3}"]) for atom in atoms))
        if rng.random() < 0.2:  # an anchor, checked where the alternative starts or ends
            anchor = rng.choice(["^", "$", r"\b", r"\B", r"\A"])
            branches[-1] = anchor + branches[-1] if rng.random() < 0.5 else branches[-1] + anchor
    return "(?" + rng.choice(["<=", "<!"]) + "|".join(branches) + ")"


def _fuzz_quant(rng):
    return rng.choice(["", "", "", "*", "+", "?", "*?", "+?", "??", "{1,3}", "{2}", "{0,2}", "{2,}", "{1,3}?", "*+",
                       "++", "?+"])


def _is_assertion(atom):  # onig rejects a quantified assertion or lookaround (and an option is not quantified)
    return atom in ("^", "$", r"\b", r"\A", r"\z", "(?i)", "(?-i)") or atom.startswith(("(?=", "(?!", "(?<=", "(?<!"))


def _fuzz_alt(rng, depth=0):
    branches = []
    for _ in range(rng.randint(1, 3)):
        atoms = [_fuzz_atom(rng, depth) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.08:  # an option over the rest of the group
            atoms.insert(rng.randint(0, len(atoms)), rng.choice(["(?i)", "(?-i)"]))
        branches.append("".join(a if _is_assertion(a) else a + _fuzz_quant(rng) for a in atoms))
    return "|".join(branches)


def fuzz_patterns(seed, count):
    rng = random.Random(seed)
    return [_fuzz_alt(rng) for _ in range(count)]


def _fuzz_texts(seed, count):
    rng = random.Random(seed)
    reps = POOL + [chr(cp) for cp in (0x1F600, 0x10FFFD, 0xE000, 0x2028, 0x0300, 0x0660, 0x3400, 0xAC00, 0x16A0)]
    return ["".join(rng.choice(reps) for _ in range(rng.randint(0, 16))) for _ in range(count)]


def run_fuzz(seed, n_patterns, n_texts):
    """(compiled patterns, rejected by the compiler, rejected by stock); asserts 0 differences, for the
    twin (the DFA where the program allows it) and for the backtracking VM."""
    rng = random.Random(seed)
    compiled = rejected = invalid = 0
    for pattern in fuzz_patterns(seed, n_patterns):
        try:
            stock = hf.Split(Regex(pattern), "isolated")
        except Exception:
            invalid += 1
            continue
        try:
            regex_compiler.compile_pattern(pattern)
        except regex_compiler.UnsupportedRegex:
            rejected += 1
            continue
        compiled += 1
        behavior, invert = rng.choice(BEHAVIORS), rng.random() < 0.3
        ours, stock = _pairs(pattern, behavior, invert)
        texts = _fuzz_texts(rng.random(), n_texts)
        stock_failed = _assert_same(ours, stock, texts, f"fuzz {pattern!r} {behavior} {invert}")
        # the twin runs the DFA where the program allows it; the backtracking VM answers the same
        _assert_same(_compiled_program(pattern, True, behavior, invert), stock, texts, f"fuzz VM {pattern!r}")
        if stock_failed:
            print(f"stock hit onig's retry limit on {stock_failed} texts of {pattern!r}")
    return compiled, rejected, invalid


class _BackrefPattern:
    """A random pattern with capture groups and backreferences to groups closed before them, over a small
    alphabet so that groups repeat in the texts (_backref_texts); in one pattern of four the groups are named
    (`(?<gN>..)`, read by `\\k<gN>`). With `calls`, some reads of a closed group are calls of it instead
    (`\\g<N>`, `\\g<gN>`)."""

    ATOMS = ["a", "b", "a", "b", "1", " ", "é", r"\w", r"\s", r"\d", r"\p{L}", "[ab]", "[^a ]", "."]
    QUANTIFIERS = ["", "", "", "*", "+", "?", "*?", "+?", "??", "{1,3}", "{2}", "{2,}?", "++", "*+"]

    def __init__(self, rng, calls=False):
        self.rng = rng
        self.opened = 0
        self.closed = []
        self.named = rng.random() < 0.25
        self.calls = calls

    def alt(self, depth=0):
        return "|".join(self.branch(depth) for _ in range(self.rng.randint(1, 2 if depth else 3)))

    def branch(self, depth):
        return "".join(self.atom(depth) + self.rng.choice(self.QUANTIFIERS) for _ in range(self.rng.randint(1, 3)))

    def atom(self, depth):
        r = self.rng.random()
        if self.closed and r < 0.3:
            number = self.rng.choice(self.closed)
            if self.calls and r < 0.22:  # a call of the group (refused when a backreference reads it)
                return f"\\g<g{number}>" if self.named else f"\\g<{number}>"
            return f"\\k<g{number}>" if self.named else f"\\{number}"
        if depth < 2 and r < 0.55 and self.opened < 9:
            self.opened += 1
            number = self.opened
            body = (f"(?<g{number}>" if self.named else "(") + self.alt(depth + 1) + ")"
            self.closed.append(number)
            return body
        if depth < 2 and r < 0.6:
            return "(?:" + self.alt(depth + 1) + ")"
        return self.rng.choice(self.ATOMS)


def _backref_texts(rng, count):
    pieces = ["a", "b", "aa", "ab", "ba", "bb", " ", "1", "11", "é", "éé", "日", "x", "\n"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(count)]


@pytest.mark.parametrize("calls,seed,scale", [(False, 29, 3), (True, 31, 2)], ids=["backreferences", "calls"])
def test_fuzz_captures_equal_stock(calls, seed, scale):
    """Random patterns with backreferences, and with calls of groups closed before them (refused when a
    backreference reads the group): the capture-keeping VM and the copies calls compile to against Oniguruma,
    every behavior."""
    rng = random.Random(seed)
    compiled, n_patterns = 0, int(os.environ.get("HF_TAGTOK_REGEX_FUZZ", "120")) * scale
    for _ in range(n_patterns):
        pattern = _BackrefPattern(rng, calls).alt()
        try:
            stock = hf.Split(Regex(pattern), "isolated")
            stock.pre_tokenize_str("ab")
        except BaseException as error:  # onig refuses the pattern, or panics on its retry limit
            if not isinstance(error, Exception) and "retry-limit-in-match" not in str(error):
                raise
            continue
        try:
            regex_compiler.compile_pattern(pattern)
        except regex_compiler.UnsupportedRegex:
            continue
        compiled += 1
        behavior, invert = rng.choice(BEHAVIORS), rng.random() < 0.3
        ours, stock = _pairs(pattern, behavior, invert)
        _assert_same(ours, stock, _backref_texts(rng, 40) + _fuzz_texts(rng.random(), 10),
                     f"capture fuzz {pattern!r} {behavior} {invert}")
    print(f"{compiled} of {n_patterns} patterns compiled")
    assert compiled >= n_patterns // 4


@pytest.mark.parametrize("pattern", [r"([a-z])\1+", r"(\w+) \1\b", r"((a)|b)+\2", r"(a?)\1b", r"(?:(a)|b)\1",
                                     r"(?<w>\w)\k<w>+", r"(\s)(?'x'[a-z])\k'x'"])
def test_backreferences_on_every_code_point(pattern):
    ours, stock = _pairs(pattern)
    assert _compiled_program(pattern).dfa_steps == 0  # a backreference needs the VM
    texts = [chunk + chunk[:40] for chunk in _scalar_chunks(step=7, size=512)] + ["aa bb  ab ab", "a" * 300]
    _assert_same(ours, stock, texts + CORPUS, f"backreference {pattern!r}")


def test_backtracking_past_the_limit_hands_the_text_to_stock():
    pattern = r"(a)(?:\1|a)+(?:\1|a)+b"  # exponential backtracking on a run of a's without a b
    ours, stock = _pairs(pattern)
    text = "c" + "a" * 40
    program = _compiled_program(pattern)
    with pytest.raises(_engine.RegexGaveUp):
        program.pre_tokenize_str(text)
    try:
        expected = stock.pre_tokenize_str(text)
    except BaseException as error:  # onig gives up too: stock panics
        with pytest.raises(type(error)):
            ours.pre_tokenize_str(text)
    else:
        assert ours.pre_tokenize_str(text) == expected
    assert ours.pre_tokenize_str("caab") == stock.pre_tokenize_str("caab")


def test_a_lookbehind_walking_back_past_its_budget_hands_the_text_to_stock():
    # each x looks back over every x before it for the space: quadratic in the run's length, as in onig
    pattern = r"(?<=\s\S*)x"
    ours, stock = _pairs(pattern)
    long_run, short_run = " " + "x" * 5000, " " + "x" * 300
    with pytest.raises(_engine.RegexGaveUp):
        _compiled_program(pattern).pre_tokenize_str(long_run)
    assert ours.pre_tokenize_str(long_run) == stock.pre_tokenize_str(long_run)
    assert _compiled_program(pattern).pre_tokenize_str(short_run) == stock.pre_tokenize_str(short_run)


def test_fuzz_dfa_equals_backtracking_vm():
    """Random patterns from the grammar: the DFA and the memo VM agree on every text (the stock fuzz
    above checks each against Oniguruma; this one is cheap enough to run many more patterns)."""
    rng = random.Random(11)
    as_dfa = 0
    for pattern in fuzz_patterns(11, int(os.environ.get("HF_TAGTOK_REGEX_FUZZ", "120")) * 3):
        try:
            dfa = _compiled_program(pattern)
        except regex_compiler.UnsupportedRegex:
            continue
        as_dfa += dfa.dfa_steps
        vm = _compiled_program(pattern, backtrack_only=True)
        for text in _fuzz_texts(rng.random(), 40):
            assert dfa.pre_tokenize_str(text) == vm.pre_tokenize_str(text), (pattern, text)
    assert as_dfa >= 100


@pytest.mark.parametrize("pattern", [r"[ab]*a[ab]{17}", r"[ab]*b[ab]{16}(?!a)"])
def test_dfa_state_cache_refills_when_full(pattern):
    """A greedy run then a counted tail: while the match runs on, the DFA state remembers which of the
    last 17 chars could end the run, so a long random text visits more distinct states (~2**17) than
    the cache holds (65,536): the cache empties and refills mid-match and the matches stay stock's."""
    rng = random.Random(5)
    texts = ["".join(rng.choice("ab") for _ in range(150_000)) for _ in range(2)]
    ours, stock = _pairs(pattern)
    assert _compiled_program(pattern).dfa_steps == 1
    _assert_same(ours, stock, texts, pattern)


# The fourth: a char that begins no match (`\z` first) right after a match that ended a char after the
# previous one. The last: a group that can match empty before the set every match needs ('.' begins none).
CUT_LOOP_PATTERNS = [FAMILY_PATTERNS["deepseek-v3"][2], FAMILY_PATTERNS["tekken"][0], r"\s+(?!\S)|\s+|[^\s\d]+",
                     r"\z\d|[^\s\d]*?\s", r"(?:a?b?)[^.]+"]
CUT_LOOP_PARTS = ["word", "Word", "  ", " ", "\n", "\r\n", "123", "!!", "'s", "日本", "é", "😀", "\t", ".A", "7b", "\u200d",
                  "\u200d\u200dx", "\x00"]


@pytest.mark.parametrize("pattern", CUT_LOOP_PATTERNS)
def test_isolated_cuts_at_every_kind_of_match_end(pattern):
    r"""A program that never matches empty and can start on any char writes its Isolated pieces in one pass,
    cutting where the DFA dies; the other match ends (a match that gives back chars, as `\s+(?!\S)` before
    a word; no match where the search stands; the end of the piece, after a match or inside a gap) go back
    to the general search. Every join of three parts, against stock."""
    ours, stock = _pairs(pattern)
    texts = ["".join(parts) for parts in itertools.product(CUT_LOOP_PARTS, repeat=3)]
    _assert_same(ours, stock, texts, pattern)


# Isolated class-run splits followed by an Isolated regex split run as one step: the regex within the
# segments the runs leave. The runs: chunks of up to three chars, whole runs, one char each, a lazy repeat
# (one char), a possessive run; the regexes: ones the cut loop runs (ending each stretch where a segment
# char stands) and ones it does not (a first set, an empty match), on the DFA and on the backtracking VM.
SEGMENT_RUNS = [[r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"], [r"\d"], [r"\p{N}+?", "[ぁ-ゖ]++"]]
SEGMENT_REGEXES = CUT_LOOP_PATTERNS[:3] + [r"\p{L}+|\d", r"a*", r"(?<=\d)\s|\S+"]
SEGMENT_PARTS = ["word", "ひら", "  ", " ", "\n", "123", "12345", "٣٤", "日本", "カナ", "\u309b", "゠", "7b", "a1", "\u200d😀", "!!", "é"]


@pytest.mark.parametrize("runs", SEGMENT_RUNS, ids=["digits-cjk", "digit", "lazy-possessive"])
@pytest.mark.parametrize("pattern", SEGMENT_REGEXES)
def test_class_run_splits_then_a_regex_run_as_one_step(runs, pattern):
    items = [twins.Split(Regex(run), "isolated") for run in runs] + [twins.Split(Regex(pattern), "isolated")]
    stock = hf.Sequence([hf.Split(Regex(run), "isolated") for run in runs] + [hf.Split(Regex(pattern), "isolated")])
    steps = twins.Sequence(items)._steps()
    assert len(steps) == 1 and "segments" in steps[0]
    texts = ["".join(parts) for parts in itertools.product(SEGMENT_PARTS, repeat=3)] + TEXTS
    _assert_same(twins.Sequence(items), stock, texts, pattern)
    vm = _engine.Program([{**steps[0], "backtrack_only": True}])
    assert vm.dfa_steps == 0
    for text in texts[::7]:
        assert vm.pre_tokenize_str(text) == stock.pre_tokenize_str(text), text
    after_bytes = [twins.ByteLevel(False, use_regex=False)] + items
    stock_after = hf.Sequence([hf.ByteLevel(False, use_regex=False)] + _stock_items(runs, pattern))
    _assert_same(twins.Sequence(after_bytes), stock_after, texts[::7], pattern + " after ByteLevel")


def _stock_items(runs, pattern):
    return [hf.Split(Regex(run), "isolated") for run in runs] + [hf.Split(Regex(pattern), "isolated")]


def test_isolated_cuts_while_the_state_cache_refills():
    """The one-pass Isolated cut over a text whose match visits more DFA states than the cache holds: the
    cache empties and refills under the pass and the pieces stay stock's."""
    pattern = r"[ab]*a[ab]{17}|[\s\S]"
    rng = random.Random(6)
    texts = ["".join(rng.choice("ab") for _ in range(150_000)) + tail for tail in ("", "a" + "b" * 20)]
    ours, stock = _pairs(pattern)
    _assert_same(ours, stock, texts, pattern)


def test_fuzz_random_patterns_equal_stock():
    """HF_TAGTOK_REGEX_FUZZ=<patterns> runs a longer fuzz (the default keeps CI time modest)."""
    n_patterns = int(os.environ.get("HF_TAGTOK_REGEX_FUZZ", "120"))
    compiled, rejected, invalid = run_fuzz(0, n_patterns, 25)
    assert compiled >= n_patterns // 2, (compiled, rejected, invalid)


RUN_POOL = [r"\p{N}{1,3}", r"\d+", "[一-龥]+", "[ぁ-ゖ]", r"\p{Lu}+?", "[,.]{1,2}", r"\s++", "[😀-🙏]+", r"\p{P}"]


def test_fuzz_class_run_splits_then_random_patterns_equal_stock():
    """Random patterns of the grammar after one or two class-run splits with disjoint sets, run as one step
    within their segments (a pattern that is a class run too joins the runs instead), on the DFA and on the
    backtracking VM, against stock's Sequence."""
    rng = random.Random(11)
    within = 0
    for pattern in fuzz_patterns(11, int(os.environ.get("HF_TAGTOK_REGEX_FUZZ", "120")) // 2):
        runs = rng.sample(RUN_POOL, rng.randint(1, 2))
        if not regex_compiler.disjoint_class_runs([regex_compiler.compile_pattern(run) for run in runs]):
            runs = runs[:1]
        try:
            stock = hf.Sequence([hf.Split(Regex(run), "isolated") for run in runs] + [hf.Split(Regex(pattern), "isolated")])
            ours = twins.Sequence([twins.Split(Regex(run), "isolated") for run in runs]
                                  + [twins.Split(Regex(pattern), "isolated")])
        except Exception:  # stock rejects the pattern, or the compiler cannot express it
            continue
        steps = ours._steps()
        within += "segments" in steps[-1]
        texts = _fuzz_texts(rng.random(), 25) + ["12345 東京タワー, 😀😀 AbC", "\u200d7\u200d一"]
        _assert_same(ours, stock, texts, f"fuzz {runs} {pattern!r}")
        vm = _engine.Program([{**step, "backtrack_only": True} for step in steps])
        _assert_same(vm, stock, texts, f"fuzz VM {runs} {pattern!r}")
    assert within >= 20, within


def test_fuzz_random_patterns_as_replace_normalizers_equal_stock():
    """The same grammar's patterns in a Replace normalizer: normalized text and every char's alignment
    (each match's content, including an empty match's insertion) against stock."""
    from normalizer_alignment import check, stock_and_native
    from tokenizers import normalizers

    from hf_tagtok.errors import Unsupported

    rng = random.Random(5)
    compiled = 0
    for pattern in fuzz_patterns(5, int(os.environ.get("HF_TAGTOK_REGEX_FUZZ", "120")) // 2) + EDGE_PATTERNS:
        try:
            stock = normalizers.Replace(Regex(pattern), rng.choice(["", "_", "\u2581\u00e9", "xyz"]))
        except Exception:  # onig refuses the pattern
            continue
        try:
            triple = stock_and_native(stock)
        except Unsupported:  # the compiler refuses it
            continue
        compiled += 1
        for text in _fuzz_texts(rng.random(), 25):
            try:
                check(triple, text)
            except BaseException as error:  # stock's own retry limit, as in _assert_same
                if "retry-limit-in-match" not in str(error):
                    raise
    assert compiled >= 40


EDGE_PATTERNS = ["", "a|", "(?:)", "x*", "a*?", "(?=a)", "(?!a)", r"\b", "^", "$", r"\z", r"\Z", "a??", r"\B",
                 "(?:a|)", ".?", r"\s*", "a{0}", "(?i)A", "(?i:a)b", "a(?i)b|c", "[^a]*", r"\A.", r".\z",
                 "(?i:[a-c])+", "a{2,}?", r"\p{L}++", r"\s?+a", "a{,2}", "x{", "\n?^", "^$", "$\n?", r"\n?\Z",
                 "(?<=a)b", "(?<!a)", "(?<=ab|é)a", "(?<![^a])a", "a(?<=[ab]a)", "(?<=)"]


def test_onig_word_boundary_at_the_start_in_a_lookbehind_of_varying_length():
    """Why such a lookbehind is refused: at the text's start onig takes `\\b` there as false and `\\B` as true,
    whatever the first char (fixed-length alternatives, which the compiler runs, are read as elsewhere)."""
    assert hf.Split(Regex(r"(?<=\bx?)a"), "isolated").pre_tokenize_str("ab") == [("ab", (0, 2))]
    assert hf.Split(Regex(r"(?<=\Bx?)a"), "isolated").pre_tokenize_str("ab") == [("a", (0, 1)), ("b", (1, 2))]
    for pattern in (r"(?<=\b)a", r"(?<=\ba)b", r"(?<=\b|x)a"):
        assert not _assert_same(*_pairs(pattern), ["ab", "xab", " ab", "+a"], pattern)


# onig reads `(?i)` and `(?-i)` inside a group as the option over the rest of that group, its later
# alternatives included: `a(?i)b|c` is `a(?i:b|c)`, which takes "aC" and not "c".
ISOLATED_OPTION_PATTERNS = [r"a(?i)b|c", r"(?i)s|k", r"x(?i)s|k|y", r"(?:a(?i)b|c)d", r"(?i:a(?-i)b|c)",
                            r"(?i)a|(?-i)b|c", r"a(?i)", r"(?=a(?i)b|c)\w", r"(?i)x|(k)\g<1>"]


@pytest.mark.parametrize("pattern", ISOLATED_OPTION_PATTERNS)
def test_an_isolated_option_takes_the_rest_of_its_group(pattern):
    texts = ["c", "C", "ac", "aC", "aB", "ab AB", "k K s S", "xk xK xs", "cd Cd acd aCd abd aBd", "kk kK Kk",
             "bB Cc yY", "AbC aBc"]
    for behavior in ("removed", "isolated"):
        _assert_same(*_pairs(pattern, behavior), texts, f"{pattern!r} {behavior}")


@pytest.mark.parametrize("pattern", EDGE_PATTERNS)
def test_empty_matches_anchors_and_quantifier_forms(pattern):
    texts = ["", "a", "ab", "ba a", " \n\n x", "ééa", "😀a😀", "aaa bbb", "A\nb", "x{1}", "aaaa", "a\n", "\n", "a\r\n"]
    for behavior in BEHAVIORS:
        for invert in (False, True):
            ours, stock = _pairs(pattern, behavior, invert)
            _assert_same(ours, stock, texts, f"{pattern!r} {behavior} {invert}")


def test_every_property_and_alias_equals_stock_on_sampled_scalars():
    """Each baked set (tables/regex_sets.c) and alias, compiled alone, against stock on every 89th scalar
    plus 2,000 random ones (the generator probes all scalars; this guards the bake and the lookup)."""
    tables = _engine.regex_tables()
    rng = random.Random(7)
    cps = sorted(set(range(0, 0x110000, 89)) | {rng.randrange(0x110000) for _ in range(2000)})
    text = "".join(chr(cp) for cp in cps if not 0xD800 <= cp < 0xE000)
    names = [n for n in tables["sets"] if n not in ("\\s", "\\d", "\\w", "\\h", ".")]
    names += sorted(tables["aliases"])[::5]
    for name in names:
        ours, stock = _pairs(rf"\p{{{name}}}", "removed")
        assert ours.pre_tokenize_str(text) == stock.pre_tokenize_str(text), name
    for escape in (r"\s", r"\d", r"\w", r"\h", ".", r"\S", r"\D", r"\W", r"\H"):
        ours, stock = _pairs(escape, "removed")
        assert ours.pre_tokenize_str(text) == stock.pre_tokenize_str(text), escape
