#!/usr/bin/env bash
# Stage `report` (tests/run.sh): tinylm report's pages checked number by
# number against their receipts (report_test.py), then opened in headless
# Chromium (chromium_test.mjs, screenshots in build/report/). Prints each
# runner's lines and one count line, their sum.
#
#   tests/report/run.sh TINYLM WORKDIR
set -uo pipefail
cd "$(dirname "$0")/../.."
tinylm=$1 work=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
count='^([0-9]+) passed, ([0-9]+) failed'
pass=0 fail=0 rc=0
# one RUNNER...: runs it, adds its count line (a runner without one failed).
one() {
  "$@" | tee "$log"
  local status=${PIPESTATUS[0]} line
  line=$(grep -E "$count" "$log" | tail -n 1)
  if [[ $line =~ $count ]]; then
    pass=$((pass + BASH_REMATCH[1])) fail=$((fail + BASH_REMATCH[2]))
  fi
  if ((status != 0)); then
    rc=1
    [[ -n $line ]] || fail=$((fail + 1))
  fi
}
one /usr/bin/python3 tests/report/report_test.py "$tinylm" "$work"
one node tests/report/chromium_test.mjs build/report "$work/report.html" "$work/report-failing.html"
echo "$pass passed, $fail failed"
exit $rc
