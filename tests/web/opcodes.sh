#!/bin/sh
# The opcode inventory of the wasm32 API modules (docs/web.md):
#   tinylm-scalar.wasm   validates as MVP alone: no v128, atomics, bulk
#                        memory, sign extension or saturating truncation;
#   tinylm-simd.wasm     validates without threads (no atomics) and has
#                        v128 instructions;
#   tinylm-threads.wasm  has both v128 and atomic instructions, a shared
#                        memory, and validates with threads on.
# usage: tests/web/opcodes.sh SCALAR.wasm SIMD.wasm THREADS.wasm
set -u
if ! command -v wasm-validate >/dev/null || ! command -v wasm-objdump >/dev/null; then
  echo "web: wabt not installed, opcode check skipped"
  exit 0
fi
[ $# -eq 3 ] || { echo "usage: $0 SCALAR SIMD THREADS" >&2; exit 2; }
fail=0
no() { echo "web: FAIL $1"; fail=1; }
OFF="--disable-bulk-memory --disable-sign-extension --disable-saturating-float-to-int \
--disable-multi-value --disable-reference-types"
count() { wasm-objdump -d "$1" | grep -cE "$2"; }
V128='(v128|[if](8x16|16x8|32x4|64x2))\.'
ATOMIC='atomic\.'
# shellcheck disable=SC2086
wasm-validate --disable-simd $OFF --disable-mutable-globals "$1" ||
  no "$1: not MVP-only (v128, atomics, bulk memory, sign extension or sat-trunc)"
[ "$(count "$1" "$V128")" -eq 0 ] || no "$1: has v128 instructions"
# shellcheck disable=SC2086
wasm-validate $OFF --disable-mutable-globals "$2" || no "$2: uses more than MVP + SIMD128"
[ "$(count "$2" "$V128")" -gt 0 ] || no "$2: has no v128 instructions"
[ "$(count "$2" "$ATOMIC")" -eq 0 ] || no "$2: has atomic instructions"
wasm-validate --enable-threads "$3" || no "$3: does not validate with threads"
[ "$(count "$3" "$V128")" -gt 0 ] || no "$3: has no v128 instructions"
[ "$(count "$3" "$ATOMIC")" -gt 0 ] || no "$3: has no atomic instructions"
wasm-objdump -x -j Import "$3" | grep -q 'memory.*shared' || no "$3: memory not shared"
[ $fail -eq 0 ] && echo "web: opcode inventory passed (scalar MVP only; simd + SIMD128, no atomics; threads SIMD128 + atomics, shared memory)"
exit $fail
