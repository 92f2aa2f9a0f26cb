#!/usr/bin/env bash
# `make bench` (kernels): the native kernel micro-benchmark
# (bench/kernel_bench.c), then the same shapes through the wasm SIMD128
# kernels under node (bench/wasm_kernel_bench.mjs), with SIMD128 beside
# AVX2 and their ratio per weight type. Both per second of CPU time, one
# thread; the cold figures share the memory bus with whatever else runs.
#   bench/kernels.sh [KERNEL_BENCH [KERNEL_BENCH_WASM]]   (TL_BENCH_COLD_MB: 256)
set -euo pipefail
cd "$(dirname "$0")/.."
native=${1:-build/gcc/kernel_bench}
module=${2:-build/wasm/kernel_bench_simd128.wasm}
cold_mb=${TL_BENCH_COLD_MB:-256}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$native" "$cold_mb" | tee "$out"
echo
node bench/wasm_kernel_bench.mjs "$module" "$cold_mb" "$out"
