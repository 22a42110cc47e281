"""The classify engine: every kernel on this machine emits exactly what the scalar reader emits, and the
scalar reader emits exactly what the committed tables say for every code point.

The expectation for a code point comes from the generated run tables (tt_*_run_start/run_tag), a second
encoding of the same data that no kernel reads; the kernels read the two-level stage tables.
"""
import os
import pathlib
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_tagtok import _engine
from hf_tagtok.sample_text import multiscript_texts

ALPHABETS = ("atoms", "scripts")
SIMD_IMPLS = [name for name in _engine.impl_names() if name != "scalar" and _engine.impl_available(name)]
CONT = 0xFF
ALL_SCALARS = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def expected_tags(text, alphabet):
    """Tag of every char of text, straight from the run tables."""
    tables = _engine.tables()
    prefix = "atom" if alphabet == "atoms" else "script"
    starts = np.asarray(tables[f"{prefix}_run_start"], dtype=np.int64)
    run_tags = np.frombuffer(tables[f"{prefix}_run_tag"], dtype=np.uint8)
    cps = np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(np.int64)
    return run_tags[np.searchsorted(starts, cps, side="right") - 1]


def start_bits(char_starts, n):
    words = np.frombuffer(char_starts, dtype="<u8")
    return np.unpackbits(words.view(np.uint8), bitorder="little")[:n].astype(bool)


def assert_matches_tables(text, alphabet, tags, char_starts):
    data = text.encode("utf-8")
    raw = np.frombuffer(data, dtype=np.uint8)
    tag_arr = np.frombuffer(tags, dtype=np.uint8)
    assert len(char_starts) == 8 * ((len(data) + 63) // 64)
    is_start = start_bits(char_starts, len(data))
    np.testing.assert_array_equal(is_start, (raw & 0xC0) != 0x80)
    # bits past the end of the text are zero
    assert not np.unpackbits(np.frombuffer(char_starts, dtype=np.uint8), bitorder="little")[len(data):].any()
    assert (tag_arr[~is_start] == CONT).all()
    got = tag_arr[is_start]
    want = expected_tags(text, alphabet)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{alphabet}: U+{ord(text[bad[0]]):04X} tagged {got[bad[0]]}, tables say {want[bad[0]]}"


def assert_all_impls_agree(text, alphabet):
    data = text.encode("utf-8")
    reference = _engine.classify(data, alphabet, "scalar")
    assert_matches_tables(text, alphabet, *reference)
    for impl in SIMD_IMPLS:
        got = _engine.classify(data, alphabet, impl)
        assert got == reference, f"{impl} differs from scalar on {alphabet} for {text[:40]!r}..."
    assert _engine.classify(data, alphabet) == reference


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_scalar_reader_matches_tables_for_every_scalar_value(alphabet):
    data = ALL_SCALARS.encode("utf-8")
    assert_matches_tables(ALL_SCALARS, alphabet, *_engine.classify(data, alphabet, "scalar"))


@pytest.mark.parametrize("alphabet", ALPHABETS)
@pytest.mark.parametrize("impl", SIMD_IMPLS)
def test_every_scalar_value_at_every_alignment(alphabet, impl):
    # Shifting the whole sweep by 0..63 ASCII bytes puts every code point at every offset of a 64-byte
    # word (and so of every 16/32-byte block), next to multibyte neighbours.
    data = ALL_SCALARS.encode("utf-8")
    tags, starts = _engine.classify(data, alphabet, "scalar")
    is_start = start_bits(starts, len(data))
    for shift in range(64):
        pad = "x" * shift
        got_tags, got_starts = _engine.classify(pad.encode() + data, alphabet, impl)
        pad_tags, _ = _engine.classify(pad.encode(), alphabet, "scalar")
        assert got_tags == pad_tags + tags, f"{impl} tags differ with {shift} leading ASCII bytes"
        got_is_start = start_bits(got_starts, shift + len(data))
        assert got_is_start[:shift].all()
        np.testing.assert_array_equal(got_is_start[shift:], is_start)


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_every_scalar_value_between_ascii(alphabet):
    assert_all_impls_agree("a".join(ALL_SCALARS), alphabet)


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_every_scalar_value_among_unrelated_neighbours(alphabet):
    # Sorted sweeps put runs of related code points in each block; shuffled, a block holds chars of
    # many different prefixes, which drives the kernels' fallback paths (AVX2's gather).
    chars = list(ALL_SCALARS)
    random.Random(5).shuffle(chars)
    assert_all_impls_agree("".join(chars), alphabet)


def random_runs(rng, length_budget):
    """Alternating ASCII and multibyte runs of random lengths, crossing block boundaries at random."""
    planes = [(0x80, 0x800), (0x800, 0x10000), (0x3000, 0xA000), (0xAC00, 0xD7A4), (0x10000, 0x110000)]
    parts, size = [], 0
    while size < length_budget:
        ascii_run = "".join(chr(rng.randrange(128)) for _ in range(rng.randrange(71)))
        lo, hi = rng.choice(planes)
        multi = [rng.randrange(lo, hi) for _ in range(rng.randrange(41))]
        multi_run = "".join(chr(cp) for cp in multi if not 0xD800 <= cp <= 0xDFFF)
        parts += [ascii_run, multi_run]
        size += len(ascii_run) + 3 * len(multi_run)
    return "".join(parts)


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_mixed_runs_across_block_boundaries(alphabet):
    rng = random.Random(20261130)
    for _ in range(20):
        assert_all_impls_agree(random_runs(rng, 20_000), alphabet)


def text_of_exact_size(rng, n, pool):
    """Random text whose UTF-8 encoding is exactly n bytes."""
    chars, size = [], 0
    while size < n:
        char = rng.choice(pool)
        width = len(char.encode())
        if size + width > n:
            char, width = chr(rng.randrange(128)), 1
        chars.append(char)
        size += width
    return "".join(chars)


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_tails_of_every_length(alphabet):
    rng = random.Random(7)
    pools = [
        [chr(cp) for cp in range(128)],
        ["é", "ж", "中", "ไ", "😀", "a", " ", "\u200d"],
        [chr(cp) for cp in (0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF, 0xE000, 0xD7FF)],
    ]
    for n in range(131):
        for pool in pools:
            for _ in range(3):
                assert_all_impls_agree(text_of_exact_size(rng, n, pool), alphabet)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), alphabet=st.sampled_from(ALPHABETS), shift=st.integers(0, 70))
def test_fuzz_impls_agree(text, alphabet, shift):
    assert_all_impls_agree(" " * shift + text, alphabet)


def test_committed_ascii_table_matches_stage_tables():
    tables = _engine.tables()
    stage1, stage2 = tables["atom_stage1"], tables["atom_stage2"]
    from_stages = bytes(stage2[stage1[0] * 256 + b] for b in range(128))
    assert tables["atom_ascii"] == from_stages
    np.testing.assert_array_equal(np.frombuffer(tables["atom_ascii"], np.uint8), expected_tags(
        "".join(map(chr, range(128))), "atoms"))


def test_tables_shape():
    tables = _engine.tables()
    assert len(tables["atom_props"]) == len(tables["atom_names"]) < CONT
    assert len(tables["script_names"]) < CONT
    assert 0 <= tables["script_any"] < len(tables["script_names"])
    assert len(tables["bytelevel_map"]) == 256
    assert len(tables["ci_fold_cp"]) == len(tables["ci_fold_letter"])
    for prefix in ("atom", "script"):
        assert len(tables[f"{prefix}_stage1"]) == 0x1100
        assert len(tables[f"{prefix}_stage2"]) % 256 == 0
        assert tables[f"{prefix}_run_start"][0] == 0


def test_empty_input():
    for impl in ["scalar", *SIMD_IMPLS]:
        assert _engine.classify(b"", "atoms", impl) == (b"", b"")


def test_accepts_bytes_like():
    data = "añ中😀".encode()
    want = _engine.classify(data)
    assert _engine.classify(bytearray(data)) == want
    assert _engine.classify(memoryview(data)) == want


@pytest.mark.parametrize(
    "data, error",
    [
        ("text", TypeError),
        (12, TypeError),
        (b"\xff", UnicodeDecodeError),
        (b"ab\xe4\xb8", UnicodeDecodeError),  # truncated char at the end
        (b"\xed\xa0\x80", UnicodeDecodeError),  # surrogate
        (b"\xc0\xaf", UnicodeDecodeError),  # overlong
    ],
)
def test_bad_input_raises(data, error):
    with pytest.raises(error):
        _engine.classify(data)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="alphabet"):
        _engine.classify(b"a", "letters")
    with pytest.raises(ValueError, match="unknown classify implementation"):
        _engine.classify(b"a", "atoms", "avx1024")
    unavailable = [name for name in _engine.impl_names() if not _engine.impl_available(name)]
    for name in unavailable:
        with pytest.raises(RuntimeError, match="not available"):
            _engine.classify(b"a", "atoms", name)


def test_impl_reporting():
    assert _engine.impl_available("scalar")
    assert _engine.impl_active() in _engine.impl_names()
    assert _engine.impl_available(_engine.impl_active())
    assert not _engine.impl_available("no-such-impl")


def run_with_impl(value):
    env = {**os.environ, "HF_TAGTOK_IMPL": value}
    code = "from hf_tagtok import _engine; print(_engine.impl_active())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_env_var_forces_impl():
    result = run_with_impl("scalar")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "scalar"


@pytest.mark.parametrize("value", ["bogus", *[n for n in _engine.impl_names() if not _engine.impl_available(n)]])
def test_env_var_naming_unavailable_impl_is_a_clear_error(value):
    result = run_with_impl(value)
    assert result.returncode != 0
    assert "RuntimeError" in result.stderr and f"HF_TAGTOK_IMPL={value!r}" in result.stderr


CROSS_CHECK_C = r"""
/* Every kernel available on this CPU vs the scalar reader, over argv[1] shifted by 0..argv[2]-1 bytes
 * and cut to every length below 200. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tagtok.h"

static long compare(const unsigned char *text, size_t len, unsigned char *t0, unsigned char *t1,
                    uint64_t *s0, uint64_t *s1) {
    long bad = 0;
    for (int alphabet = 0; alphabet < 2; alphabet++) {
        tt_classify_with(TT_IMPL_SCALAR, alphabet, text, len, t0, s0);
        for (int impl = TT_IMPL_SSE2; impl <= TT_IMPL_AVX512; impl++) {
            if (!tt_impl_available(impl)) continue;
            tt_classify_with(impl, alphabet, text, len, t1, s1);
            if (memcmp(t0, t1, len) || memcmp(s0, s1, 8 * ((len + 63) / 64))) {
                printf("%s differs: alphabet %d, %zu bytes\n", tt_impl_name(impl), alphabet, len);
                bad++;
            }
            memset(t1, 0, len);
            tt_classify_with(impl, alphabet, text, len, t1, NULL); /* no bitplane wanted */
            if (memcmp(t0, t1, len)) {
                printf("%s differs without char_starts: alphabet %d\n", tt_impl_name(impl), alphabet);
                bad++;
            }
        }
    }
    return bad;
}

int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    int shifts = atoi(argv[2]);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n + 64), *t0 = malloc(n + 64), *t1 = malloc(n + 64);
    uint64_t *s0 = calloc(n / 64 + 3, 8), *s1 = calloc(n / 64 + 3, 8);
    memset(buf, 'x', 64);
    if (fread(buf + 64, 1, n, f) != (size_t)n) return 2;
    long bad = 0;
    for (int shift = 0; shift < shifts; shift++) bad += compare(buf + 64 - shift, n + shift, t0, t1, s0, s1);
    for (size_t len = 0; len < 200 && len <= (size_t)n; len++)
        if ((buf[64 + len] & 0xC0) != 0x80) bad += compare(buf + 64, len, t0, t1, s0, s1);
    printf("active %s, %ld differences\n", tt_impl_name(tt_impl_active()), bad);
    return bad != 0;
}
"""


def run_c_cross_check(tmp_path, compiler, runner, expect_active, env=None):
    """Build CROSS_CHECK_C against the engine's C files alone and run it on two corpora."""
    root = pathlib.Path(__file__).resolve().parent.parent
    (tmp_path / "check.c").write_text(CROSS_CHECK_C)
    sources = sorted(str(p) for p in (root / "ext" / "engine").glob("classify_*.c"))
    sources += sorted(str(p) for p in (root / "tables").glob("*.c"))
    includes = [f"-I{root / d}" for d in ("ext/include", "ext", "tables")]
    binary = tmp_path / "check"
    subprocess.run([compiler, "-O2", "-std=gnu11", "-static", "-pthread", *includes, str(tmp_path / "check.c"),
                    *sources, "-o", str(binary)], check=True, timeout=300)
    chars = list(ALL_SCALARS[::3])
    random.Random(11).shuffle(chars)
    inputs = [("multiscript", "\n".join(multiscript_texts()), "64"), ("scalars", "".join(chars), "4")]
    for name, text, shifts in inputs:
        path = tmp_path / f"{name}.txt"
        path.write_bytes(text.encode("utf-8"))
        result = subprocess.run([*runner, str(binary), str(path), shifts], capture_output=True, text=True,
                                timeout=600, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.startswith(f"active {expect_active}, 0 differences"), result.stdout


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_c_entry_points_match_scalar(tmp_path):
    # The C interface directly, as the FSM and pipeline call it (also with char_starts = NULL).
    run_c_cross_check(tmp_path, "gcc", [], _engine.impl_active())


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")),
                    reason="needs aarch64-linux-gnu-gcc and qemu-aarch64 to run the NEON kernel here")
def test_neon_kernel_matches_scalar_under_qemu(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "HF_TAGTOK_IMPL"}
    run_c_cross_check(tmp_path, "aarch64-linux-gnu-gcc", ["qemu-aarch64"], "neon", env)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses mprotect through ctypes")
@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_never_reads_past_the_last_byte(alphabet):
    # Texts end exactly where an inaccessible page begins: any read past text[n-1] faults.
    import ctypes
    import mmap

    page = mmap.PAGESIZE
    region = mmap.mmap(-1, 2 * page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    address = ctypes.addressof(ctypes.c_char.from_buffer(region))
    prot_none = 0
    assert libc.mprotect(address + page, page, prot_none) == 0
    rng = random.Random(3)
    pool = ["a", " ", "é", "ж", "中", "ไ", "😀", "\U0010FFFF"]
    for n in range(131):
        for _ in range(4):
            data = text_of_exact_size(rng, n, pool).encode()
            region[page - n:page] = data
            view = memoryview(region)[page - n:page]
            want = _engine.classify(data, alphabet, "scalar")
            for impl in ["scalar", *SIMD_IMPLS]:
                assert _engine.classify(view, alphabet, impl) == want
            view.release()


def test_concurrent_calls_agree():
    # classify releases the GIL; the derived tables are shared read-only after the first call.
    from concurrent.futures import ThreadPoolExecutor

    data = "\n".join(multiscript_texts()).encode()
    want = {alphabet: _engine.classify(data, alphabet, "scalar") for alphabet in ALPHABETS}
    jobs = [(alphabet, impl) for alphabet in ALPHABETS for impl in [None, "scalar", *SIMD_IMPLS]] * 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda job: (job[0], _engine.classify(data, *job)), jobs))
    for alphabet, got in results:
        assert got == want[alphabet]
