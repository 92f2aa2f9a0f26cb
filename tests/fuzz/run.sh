#!/usr/bin/env bash
# Fuzz smoke run: replays every kept crasher (tests/fuzz/crashers/<target>/),
# then runs each libFuzzer target for SECONDS on a scratch copy of its seed
# corpus (tests/fuzz/corpus/<target>/), so the committed corpus stays small.
#   tests/fuzz/run.sh [SECONDS]          (default 30)
#   tests/fuzz/run.sh --total SECONDS    SECONDS split evenly over the targets
#                                        (at least 5 each): a fixed budget
#                                        however many targets there are
# Build the targets first: make fuzz (FUZZ_BUILD=DIR for another build
# directory; the same variable here). Every tests/fuzz/fuzz_*.c is a target:
# one whose binary is missing fails, and so does a run with no target at all.
# Each runs with -rss_limit_mb=2048 (RSS_LIMIT_MB=N for another cap).
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
if [[ $seconds == --total ]]; then
  n_targets=$(compgen -G 'tests/fuzz/fuzz_*.c' | wc -l)
  seconds=$(( ${2:?--total needs a number of seconds} / (n_targets > 0 ? n_targets : 1) ))
  ((seconds >= 5)) || seconds=5
fi
fuzz_build=${FUZZ_BUILD:-build/fuzz}
# Every target runs under this RSS cap (issue 23.5: a small input must not
# make a reader allocate gigabytes; libFuzzer reports going over as a crash).
rss_limit_mb=${RSS_LIMIT_MB:-2048}
failed=0
passed=0
for src in tests/fuzz/fuzz_*.c; do
  [[ -e "$src" ]] || continue
  target=${src#tests/fuzz/fuzz_}
  target=${target%.c}
  bin=$fuzz_build/fuzz_$target
  if [[ ! -x "$bin" ]]; then
    echo "fuzz: $target: $bin not built (make fuzz)"
    failed=$((failed + 1))
    continue
  fi
  crashers=tests/fuzz/crashers/$target
  if [[ -d "$crashers" ]] && compgen -G "$crashers/*" >/dev/null; then
    if "$bin" -runs=0 -rss_limit_mb="$rss_limit_mb" "$crashers"/* >"$fuzz_build/$target.replay.log" 2>&1; then
      echo "fuzz: $target: replayed $(ls "$crashers" | wc -l) kept crashers: ok"
    else
      echo "fuzz: $target: a kept crasher fails again ($fuzz_build/$target.replay.log)"
      failed=$((failed + 1))
      continue
    fi
  fi
  work=$(mktemp -d)
  [[ -d tests/fuzz/corpus/$target ]] && cp -r tests/fuzz/corpus/"$target"/. "$work"/
  log=$fuzz_build/$target.log
  if "$bin" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb="$rss_limit_mb" \
      -artifact_prefix="$fuzz_build/$target"- "$work" >"$log" 2>&1; then
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
    echo "fuzz: $target: ${execs:-?} executions in ${seconds}s, no crash"
    passed=$((passed + 1))
  else
    echo "fuzz: $target: CRASH — reproducer in $fuzz_build/$target-*; log $log"
    grep -E 'ERROR|SUMMARY' "$log" | head -n 5
    failed=$((failed + 1))
  fi
  rm -rf "$work"
done
if ((passed + failed == 0)); then
  echo "FAILED: no fuzz target (tests/fuzz/fuzz_*.c) ran"
  failed=1
fi
echo "$passed passed, $failed failed"
((failed == 0))
