#!/usr/bin/env bash
# `make bench` (converter): the 0.6B-shape synthetic checkpoint (bf16, with
# the separate lm_head copy the published checkpoint has) converted to q8 —
# wall time and peak RSS (GNU time) — and the resulting artifact opened
# plain (lazy) versus open + eager verification (bench/slm_open_bench.c).
#
#   TL_CONVERT_BENCH_QUANT   destination type (default q8)
#   TL_CONVERT_BENCH_DIR     scratch directory (default: a temp dir, removed)
set -euo pipefail
cd "$(dirname "$0")/.."
tinylm=build/gcc/tinylm
quant=${TL_CONVERT_BENCH_QUANT:-q8}
work=${TL_CONVERT_BENCH_DIR:-$(mktemp -d)}
[[ -n ${TL_CONVERT_BENCH_DIR:-} ]] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
rm -rf "$work/hf" "$work/model.slm" "$work/model.slm.receipt.cbor"

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
