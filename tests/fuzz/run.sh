#!/usr/bin/env bash
# Fuzz smoke run: replays every kept crasher (tests/fuzz/crashers/<target>/),
# then runs each libFuzzer target for SECONDS on a scratch copy of its seed
# corpus (tests/fuzz/corpus/<target>/), so the committed corpus stays small.
#   tests/fuzz/run.sh [SECONDS]          (default 30)
# Build the targets first: make fuzz.
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
failed=0
passed=0
for bin in build/fuzz/fuzz_*; do
  [[ -x "$bin" ]] || continue
  target=${bin#build/fuzz/fuzz_}
  crashers=tests/fuzz/crashers/$target
  if [[ -d "$crashers" ]] && compgen -G "$crashers/*" >/dev/null; then
    if "$bin" -runs=0 "$crashers"/* >"build/fuzz/$target.replay.log" 2>&1; then
      echo "fuzz: $target: replayed $(ls "$crashers" | wc -l) kept crashers: ok"
    else
      echo "fuzz: $target: a kept crasher fails again (build/fuzz/$target.replay.log)"
      failed=$((failed + 1))
      continue
    fi
  fi
  work=$(mktemp -d)
  [[ -d tests/fuzz/corpus/$target ]] && cp -r tests/fuzz/corpus/"$target"/. "$work"/
  log=build/fuzz/$target.log
  if "$bin" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix=build/fuzz/"$target"- "$work" >"$log" 2>&1; then
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
    echo "fuzz: $target: ${execs:-?} executions in ${seconds}s, no crash"
    passed=$((passed + 1))
  else
    echo "fuzz: $target: CRASH — reproducer in build/fuzz/$target-*; log $log"
    grep -E 'ERROR|SUMMARY' "$log" | head -n 5
    failed=$((failed + 1))
  fi
  rm -rf "$work"
done
echo "$passed passed, $failed failed"
((failed == 0))
