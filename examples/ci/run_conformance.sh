#!/usr/bin/env bash
# The same gate for any CI system (or locally): conformance on every tokenizer directory given.
#   examples/ci/run_conformance.sh TOKENIZER_DIR [TOKENIZER_DIR ...] [-- CORPUS_FILE ...]
set -euo pipefail
tokenizers=(); corpus=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; corpus=("$@"); break; fi
  tokenizers+=("$1"); shift
done
for dir in "${tokenizers[@]}"; do
  if [ ${#corpus[@]} -gt 0 ]; then
    hf-tagtok conformance --tokenizer "$dir" --corpus "${corpus[@]}"
  else
    hf-tagtok conformance --tokenizer "$dir"
  fi
done
