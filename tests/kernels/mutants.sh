#!/usr/bin/env bash
# The fast lane's mutation proof (docs/fast-profile.md, Tests): each fault
# of src/core/kernels/mutant.h, compiled into a unit-test binary of its own
# (`make mutants`: the scalar twins, the partition and, on x86-64, the
# AVX-512 kernels rebuilt with -DTL_KERN_MUTANT=n), must fail the test named
# for it, and that test must pass on the unmutated build.
#
#   mutants.sh CFG BUILD_DIR     e.g. mutants.sh gcc build/gcc
set -uo pipefail
cd "$(dirname "$0")/../.."
if (($# != 2)); then
  echo "usage: $0 CFG BUILD_DIR" >&2
  exit 2
fi
cfg=$1 build=$2
make --no-print-directory -j"${JOBS:-2}" CFG="$cfg" BUILD="$build" "$build/unit_tests" mutants \
  >/dev/null || { echo "FAILED: cannot build the mutants"; exit 1; }

pass=0 fail=0
# expect WHAT pass|fail BINARY TEST: the one test TEST, run alone, passes,
# or fails as itself (not a crash, not another test).
expect() {
  local what=$1 want=$2 bin=$3 test=$4 out ok=false
  out=$("$bin" "$test" 2>&1)
  if [[ $want == pass ]]; then
    [[ $out == *"1 passed, 0 failed"* ]] && ok=true
  else
    [[ $out == *"FAILED $test"* && $out == *"0 passed, 1 failed"* ]] && ok=true
  fi
  if $ok; then
    pass=$((pass + 1))
    echo "ok   $what: $test $([[ $want == pass ]] && echo passes || echo fails)"
  else
    fail=$((fail + 1))
    echo "FAIL $what: $test should ${want}"
    printf '%s\n' "$out" | tail -n 5 | sed 's/^/     | /'
  fi
}

# faults 20 and up are in the AVX2 and AVX-VNNI variants: built only on
# x86-64, checked where the CPU runs AVX2 (22: the AVX-VNNI variant or its
# EVEX twin, which kernels_dispatch runs on any CPU with AVX512-VNNI);
# faults 40 and up in the AVX-512 variant, checked where the CPU runs it
x86=false avx512=false
[[ -x $build/mutant20/unit_tests ]] && grep -qw avx2 /proc/cpuinfo && x86=true
[[ -x $build/mutant40/unit_tests ]] && grep -qw avx512_vnni /proc/cpuinfo && avx512=true
unmutated=(kernels.dot_golden fast_forward.every_variant_and_thread_count)
$x86 && unmutated+=(kernels_dispatch.ragged_tiles kernels_dispatch.quantizers
  kernels_dispatch.extreme_tiles kernels_dispatch.tiles)
$avx512 && unmutated+=(kernels_dispatch.golden_all_variants)
for t in "${unmutated[@]}"; do
  expect "unmutated" pass "$build/unit_tests" "$t"
done
expect "mutant 1 (a float row's tail dropped)" fail "$build/mutant1/unit_tests" \
  kernels.dot_golden
expect "mutant 2 (a row skipped at each thread boundary)" fail "$build/mutant2/unit_tests" \
  fast_forward.every_variant_and_thread_count
expect "mutant 3 (the previous block's scale)" fail "$build/mutant3/unit_tests" \
  kernels.dot_golden
if $x86; then
  expect "mutant 20 (an AVX2 tile: the previous token's scales)" fail \
    "$build/mutant20/unit_tests" kernels_dispatch.ragged_tiles
  expect "mutant 21 (the AVX2 quantizer truncates)" fail "$build/mutant21/unit_tests" \
    kernels_dispatch.quantizers
  expect "mutant 22 (the AVX-VNNI tiles without the bias)" fail "$build/mutant22/unit_tests" \
    kernels_dispatch.ragged_tiles
  expect "mutant 23 (the AVX2 q8 tile: high nibbles scaled before their i16 sum)" fail \
    "$build/mutant23/unit_tests" kernels_dispatch.extreme_tiles
  expect "mutant 24 (the AVX2 float tiles drop the tail)" fail "$build/mutant24/unit_tests" \
    kernels_dispatch.tiles
else
  echo "skip mutants 20-24: no AVX2 here"
fi
if $avx512; then
  expect "mutant 40 (AVX-512 bf16: element 1 widened into lane 0)" fail \
    "$build/mutant40/unit_tests" kernels_dispatch.golden_all_variants
  expect "mutant 41 (AVX-512 float tile: a block's last token reads the one before)" fail \
    "$build/mutant41/unit_tests" kernels_dispatch.tiles
  expect "mutant 42 (AVX-512 float tiles: the four-row reduction mixes rows 0 and 1)" fail \
    "$build/mutant42/unit_tests" kernels_dispatch.tiles
fi
echo "$pass passed, $fail failed"
((fail == 0))
