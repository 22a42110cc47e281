# cython: language_level=3
"""hf_tagtok._engine: the tag-classify engine and the pre-tokenizer program executor.

Classify and tables: see classify.pxi. Programs (`Program`, `PROPS`, `UnsupportedShape`): see pretok.pxi.
"""
include "classify.pxi"
include "pretok.pxi"
