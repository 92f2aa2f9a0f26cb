#!/usr/bin/env bash
# `make bench` (model): the 0.6B-shape synthetic checkpoint (bf16, with the
# separate lm_head copy the published checkpoint has) converted to q8 —
# wall time and peak RSS (GNU time) — the resulting artifact opened plain
# (lazy) versus open + eager verification (bench/slm_open_bench.c), and the
# scalar forward pass (prefill and decode tokens/s, peak RSS;
# bench/forward_bench.c) on the lossless bf16 artifact and the q8 one.
#
#   TL_CONVERT_BENCH_QUANT   destination type (default q8)
#   TL_CONVERT_BENCH_DIR     scratch directory (default: a temp dir, removed)
#   TL_FORWARD_BENCH_TOKENS  "PROMPT DECODE" token counts (default "16 8")
set -euo pipefail
cd "$(dirname "$0")/.."
tinylm=build/gcc/tinylm
quant=${TL_CONVERT_BENCH_QUANT:-q8}
work=${TL_CONVERT_BENCH_DIR:-$(mktemp -d)}
[[ -n ${TL_CONVERT_BENCH_DIR:-} ]] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
rm -rf "$work/hf" "$work"/model*.slm "$work"/model*.slm.receipt.cbor

echo "== converter: qwen3-0.6b shape (synthetic, bf16, separate lm_head) -> $quant"
"$tinylm" synth --config qwen3-0.6b --seed 1 --separate-lm-head -o "$work/hf" >/dev/null
src_bytes=$(du -cb "$work"/hf/*.safetensors | tail -1 | cut -f1)
/usr/bin/time -f '%e %M' -o "$work/time.txt" \
  "$tinylm" convert "$work/hf" -o "$work/model.slm" --quant "$quant" \
  --profile qwen3-0.6b-publisher
read -r secs rss_kb <"$work/time.txt"
out_bytes=$(stat -c %s "$work/model.slm")
awk -v s="$secs" -v r="$rss_kb" -v i="$src_bytes" -v o="$out_bytes" 'BEGIN {
  printf "  source %.1f MB, artifact %.1f MB\n", i / 1e6, o / 1e6
  printf "  convert: %.2f s wall, %.1f MB/s of source, peak RSS %.1f MB\n", s, i / 1e6 / s, r / 1024
}'
echo "== open: $(basename "$work/model.slm") ($((out_bytes / 1000000)) MB)"
build/gcc/slm_open_bench "$work/model.slm" 3

echo "== scalar forward pass (strict lane), qwen3-0.6b shape"
"$tinylm" convert "$work/hf" -o "$work/model-bf16.slm" --profile qwen3-0.6b-publisher >/dev/null
for m in model-bf16 model; do
  echo "  -- $m.slm"
  # shellcheck disable=SC2086
  build/gcc/forward_bench "$work/$m.slm" ${TL_FORWARD_BENCH_TOKENS:-16 8}
done
