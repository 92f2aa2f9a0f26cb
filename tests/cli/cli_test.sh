#!/usr/bin/env bash
# The command line's shared conventions (DESIGN.md §3, §11): exit codes,
# `error: <code>: <detail>` on stderr, {"error": ...} with --json, and
# sha256sum-compatible hash output.
#   tests/cli/cli_test.sh path/to/tinylm
set -uo pipefail
tinylm=${1:?usage: cli_test.sh path/to/tinylm}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# expect NAME WANT_EXIT STDOUT_REGEX STDERR_REGEX -- COMMAND...
expect() {
  local name=$1 want_rc=$2 out_re=$3 err_re=$4
  shift 5
  local out err rc
  out=$("$@" 2>"$work/stderr")
  rc=$?
  err=$(cat "$work/stderr")
  if [[ $rc -eq $want_rc && "$out" =~ $out_re && "$err" =~ $err_re ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "  FAIL $name: exit $rc (want $want_rc)"
    echo "    stdout: ${out:0:300}"
    echo "    stderr: ${err:0:300}"
  fi
}

printf abc >"$work/abc"
: >"$work/empty"
expect "version" 0 '^tinylm [0-9]+\.[0-9]+\.[0-9]+$' '^$' -- "$tinylm" version
expect "no command is a usage error" 2 '^$' 'usage: tinylm COMMAND' -- "$tinylm"
expect "unknown command" 2 '^$' "error: usage: unknown command 'frobnicate'" -- "$tinylm" frobnicate
expect "sha256 of abc (FIPS 180-2 example)" 0 \
  "^ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  $work/abc\$" '^$' \
  -- "$tinylm" hash "$work/abc"
expect "sha256 of an empty file" 0 '^e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  ' '^$' \
  -- "$tinylm" hash "$work/empty"
expect "blake3 of an empty file (BLAKE3 test vector, length 0)" 0 \
  '^af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262  ' '^$' \
  -- "$tinylm" hash --algo blake3 "$work/empty"
expect "missing file is io naming the path" 1 '^$' \
  "^error: io: $work/nope: cannot open: No such file or directory\$" \
  -- "$tinylm" hash "$work/nope"
expect "a directory is refused" 1 '^$' "error: io: $work: is a directory" \
  -- "$tinylm" hash "$work"
expect "one bad file does not hide the others" 1 "^ba7816bf.*  $work/abc\$" 'error: io' \
  -- "$tinylm" hash "$work/nope" "$work/abc"
expect "--json error object" 1 '^\{"error": ?"io", ?"detail": ?".*nope: cannot open' 'error: io' \
  -- "$tinylm" hash --json "$work/nope"
expect "--json digests" 0 '^\{"algorithm": ?"sha256", ?"files": ?\[\{"path": ?".*abc", ?"digest": ?"ba7816bf' '^$' \
  -- "$tinylm" hash --json "$work/abc"
expect "unknown algorithm" 2 '^$' "error: usage: unknown --algo 'md5'" -- "$tinylm" hash --algo md5 "$work/abc"
expect "--length needs blake3" 2 '^$' 'error: usage: --length applies to --algo blake3 only' \
  -- "$tinylm" hash --length 64 "$work/abc"
expect "--length must be a positive number" 2 '^$' "error: usage: --length must be 1..65536, got '-5'" \
  -- "$tinylm" hash --algo blake3 --length -5 "$work/abc"
expect "--length with junk" 2 '^$' "got '12x'" -- "$tinylm" hash --algo blake3 --length 12x "$work/abc"
expect "no file" 2 '^$' 'error: usage: no FILE given' -- "$tinylm" hash --algo sha256
expect "unknown option" 2 '^$' "error: usage: unknown option '--fast'" -- "$tinylm" hash --fast "$work/abc"
expect "stdin" 0 '^ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -$' '^$' \
  -- bash -c "printf abc | '$tinylm' hash -"

echo "$passed passed, $failed failed"
((failed == 0))
