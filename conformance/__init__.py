"""Byte-exactness harness: diff hf_tagtok against stock `tokenizers` (and `regex`). Run `python -m conformance`."""
