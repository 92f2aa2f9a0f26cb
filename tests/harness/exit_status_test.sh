#!/usr/bin/env bash
# The conformance harnesses count tinylm's exit status as a result (issue 16,
# item 1): each harness that runs the CLI is run twice on a few cases, once
# with a wrapper that runs tinylm and keeps its exit status (it must pass),
# once with a wrapper that runs tinylm and then exits 23, as a sanitizer
# does when it reports a leak at exit (it must fail, with the same correct
# output).
#   tests/harness/exit_status_test.sh TINYLM TOK.slm
set -uo pipefail
cd "$(dirname "$0")/../.."
if (($# != 2)); then
  echo "usage: tests/harness/exit_status_test.sh TINYLM TOK.slm" >&2
  exit 2
fi
real=$(realpath "$1")
slm=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#!/bin/sh\n"%s" "$@"\n' "$real" >"$work/same"
printf '#!/bin/sh\n"%s" "$@"\nexit 23\n' "$real" >"$work/exit23"
chmod +x "$work/same" "$work/exit23"

passed=0
failed=0
# check NAME PER COMMAND...: the harness passes with the plain wrapper and
# fails with the exit-23 one (COMMAND gets the wrapper in place of the word
# TINYLM). PER is "run" where one tinylm process answers every case (the run
# is the failure) or "case" where each case runs tinylm (every case fails).
check() {
  local name=$1 per=$2 wrapper rc bad=0 log
  shift 2
  for wrapper in same exit23; do
    log=$work/$name.$wrapper.log
    "${@/#TINYLM/$work/$wrapper}" >"$log" 2>&1
    rc=$?
    if [[ $wrapper == same && $rc -ne 0 ]]; then
      echo "  FAIL $name: fails with tinylm's own exit status (exit $rc)"
      bad=1
    elif [[ $wrapper == exit23 && $rc -ne 1 ]]; then
      echo "  FAIL $name: passes (exit $rc) although tinylm exited 23 after correct output"
      bad=1
    elif [[ $wrapper == exit23 && $per == case ]] && ! grep -qE '^0 passed, [1-9]' "$log"; then
      echo "  FAIL $name: some case passed although every tinylm run exited 23"
      bad=1
    fi
    if ((bad)); then
      tail -n 5 "$log" | sed 's/^/    | /'
      break
    fi
  done
  if ((bad)); then
    failed=$((failed + 1))
  else
    echo "ok   $name"
    passed=$((passed + 1))
  fi
}

check tok-golden run node tests/tok/check_golden.mjs TINYLM "$slm" --limit 40
check tok-random run node tools/oracle/tok_random.mjs TINYLM "$slm" --count 40
check tmpl-golden case node tests/tmpl/check_golden.mjs TINYLM "$slm"
check tmpl-random case /usr/bin/python3 tools/oracle/tmpl_random.py TINYLM "$slm" --count 40
echo "$passed passed, $failed failed"
((failed == 0))
