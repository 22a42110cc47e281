"""Build the C/Cython extensions with the system compiler.

Each extension is one concern (engine, native pipeline, trainer, Python rows, configuration reading) so a broken file in one
never blocks building the others. HF_TAGTOK_BUILD_ONLY=_engine,_native restricts the build during development.
"""
import glob
import os
import platform

from Cython.Build import cythonize
from setuptools import Extension, setup

# The engine (classify, FSMs, programs, their tables) is linked into _engine only; the pipeline reaches it
# through the table _engine exports (ext/include/tagtok.h, tt_engine_api).
PIPELINE_TABLES = ["tables/normalization_tables.c"]
ENGINE_C = sorted(set(glob.glob("tables/*.c")) - set(PIPELINE_TABLES)) + sorted(glob.glob("ext/engine/*.c"))
EXTENSIONS = {
    "_engine": ["ext/_engine.pyx", *ENGINE_C],
    "_native": ["ext/_native.pyx", *PIPELINE_TABLES, *sorted(glob.glob("ext/pipeline/*.c"))],
    "_train": ["ext/_train.pyx", *sorted(glob.glob("ext/train/*.c"))],
    "_lists": ["ext/_lists.pyx", *sorted(glob.glob("ext/lists/*.c"))],
    "_config": ["ext/_config.pyx"],
}

# An extension is rebuilt when a header changes too (every C file may include any of them).
HEADERS = sorted(glob.glob("ext/**/*.h", recursive=True) + glob.glob("tables/*.h"))

only = {name for name in os.environ.get("HF_TAGTOK_BUILD_ONLY", "").split(",") if name}
cflags = ["-O3", "-std=gnu11", "-fvisibility=hidden", "-pthread", "-Wall", "-Wno-unused-function"]
if platform.machine().lower() in ("x86_64", "amd64"):
    cflags.append("-msse2")

extensions = [
    Extension(
        f"hf_tagtok.{name}",
        sources,
        include_dirs=["ext/include", "ext", "tables"],
        depends=HEADERS,
        extra_compile_args=cflags,
        extra_link_args=["-pthread"],
    )
    for name, sources in EXTENSIONS.items()
    if os.path.exists(sources[0]) and (not only or name in only)
]


def own_pxd_changed(extension):
    """cythonize looks for a module's own .pxd beside its .pyx; ours sit in hf_tagtok/, where the modules that
    cimport them find them, so a .pxd newer than its module's generated C is checked here."""
    name = extension.name.split(".")[-1]
    pxd, generated = f"hf_tagtok/{name}.pxd", f"ext/{name}.c"
    return os.path.exists(pxd) and os.path.exists(generated) and os.path.getmtime(pxd) > os.path.getmtime(generated)


setup(ext_modules=[module for extension in extensions
                   for module in cythonize([extension], force=own_pxd_changed(extension), language_level=3,
                                           include_path=["ext", "."],
                                           compiler_directives={"boundscheck": False, "wraparound": False})])
