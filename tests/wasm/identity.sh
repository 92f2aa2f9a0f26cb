#!/usr/bin/env bash
# The wasm32 core must give byte-identical results to the native core on the
# same inputs (DESIGN.md §2, §6): compares the two transcripts whole.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build/gcc/transcript >"$work/native" 2>"$work/native.count" || { cat "$work/native.count"; exit 1; }
node tests/wasm/transcript.mjs build/wasm/transcript.wasm >"$work/wasm" 2>"$work/wasm.count" || { cat "$work/wasm.count"; exit 1; }
records=$(cat "$work/native.count")
if cmp "$work/native" "$work/wasm" && [[ $records == $(cat "$work/wasm.count") ]]; then
  echo "wasm: transcript of $records results ($(stat -c %s "$work/native") bytes) identical, native vs wasm32"
  echo "1 passed, 0 failed"
else
  echo "wasm: transcripts differ (native $(stat -c %s "$work/native") bytes, wasm $(stat -c %s "$work/wasm") bytes)"
  echo "0 passed, 1 failed"
  exit 1
fi
