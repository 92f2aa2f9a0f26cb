#!/usr/bin/env bash
# The wasm32 core must give byte-identical results to the native core on the
# same inputs (docs/architecture.md §2, §6): compares the native transcript whole with
# the MVP module's (fast-lane records through the scalar twins) and the
# SIMD128 module's (fast-lane records through the SIMD128 kernels).
#   tests/wasm/identity.sh [NATIVE_TRANSCRIPT [WASM_BUILD_DIR]]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
native=${1:-build/gcc/transcript}
wasm_dir=${2:-build/wasm}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$native" >"$work/native" 2>"$work/native.count" || { cat "$work/native.count"; exit 1; }
records=$(cat "$work/native.count")
passed=0 failed=0
for module in "$wasm_dir/transcript.wasm" "$wasm_dir/transcript_simd128.wasm"; do
  if node tests/wasm/transcript.mjs "$module" >"$work/wasm" 2>"$work/wasm.count" &&
    cmp -s "$work/native" "$work/wasm" && [[ $records == $(cat "$work/wasm.count") ]]; then
    echo "wasm: transcript of $records results ($(stat -c %s "$work/native") bytes) identical, native ($("$native" --describe)) vs $module"
    passed=$((passed + 1))
  else
    cat "$work/wasm.count"
    echo "wasm: transcripts differ, native ($(stat -c %s "$work/native") bytes) vs $module ($(stat -c %s "$work/wasm") bytes)"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
