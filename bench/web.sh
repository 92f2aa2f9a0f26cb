#!/usr/bin/env bash
# `make bench`: the browser lanes beside native (bench/web.mjs) on the
# Qwen3-0.6B-shape q8 artifact (synthesized and converted here, or
# TL_WEB_BENCH_MODEL), through the site `make web` built.
set -euo pipefail
cd "$(dirname "$0")/.."
tinylm=build/gcc/tinylm
model=${TL_WEB_BENCH_MODEL:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -z $model ]]; then
  "$tinylm" synth --config qwen3-0.6b --seed 1 -o "$work/hf" >/dev/null
  "$tinylm" convert "$work/hf" -o "$work/m-q8.slm" --quant q8 --profile qwen3-0.6b-publisher >/dev/null
  model=$work/m-q8.slm
fi
node bench/web.mjs "$tinylm" build/web "$model" ${TL_WEB_BENCH_ARGS:-48 16 2}
