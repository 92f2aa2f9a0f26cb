#!/usr/bin/env bash
# `make bench` (tokenizer): tinylm's encoder beside Hugging Face `tokenizers`
# (the Node binding @anush008/tokenizers) on the same seeded ≥ 10 MB
# mixed-script text, in one run: tokens/s and MB/s for both, HF single- and
# multi-threaded, and a check that tinylm's ids for the whole text equal the
# oracle's (tools/oracle/tok_bench.mjs explains each figure).
#
#   TL_TOK_BENCH_MB      input size in MB (default 12)
#   TL_TOK_BENCH_ARGS    extra arguments for tok_bench.mjs (e.g. --no-whole)
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory tok-slm >/dev/null
# shellcheck disable=SC2086
node tools/oracle/tok_bench.mjs build/gcc/tinylm build/tok/qwen3-tokenizer.slm \
  --mb "${TL_TOK_BENCH_MB:-12}" ${TL_TOK_BENCH_ARGS:-}
