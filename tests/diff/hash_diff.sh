#!/usr/bin/env bash
# Differential test of `tinylm hash` against Debian's sha256sum and b3sum on
# the same files: lengths at and around SHA-256 blocks (64), BLAKE3 blocks
# (64) and chunks (1024), powers-of-two chunk counts, and seeded random
# lengths up to 8 MiB; BLAKE3 also with extendable output lengths.
#   tests/diff/hash_diff.sh path/to/tinylm
set -uo pipefail
cd "$(dirname "$0")/../.."
tinylm=${1:?usage: hash_diff.sh path/to/tinylm}
for tool in sha256sum b3sum; do
  command -v "$tool" >/dev/null || { echo "diff: $tool missing (run scripts/setup.sh)"; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One seeded pool; every case is a prefix of it.
pool_len=$((8 << 20))
python3 - "$work/pool" "$pool_len" <<'PY'
import random, sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, 'wb') as f:
    f.write(random.Random(20261202).randbytes(n))
PY

lengths=()
for k in $(seq 0 20); do lengths+=($((k * 64 - 1)) $((k * 64)) $((k * 64 + 1))); done
lengths+=(55 56 57 119 120 121)
for k in 1 2 3 4 5 7 8 9 15 16 17 31 32 33 63 64 65 100 127 128 129 255 256 1023 1024 1025; do
  lengths+=($((k * 1024 - 1)) $((k * 1024)) $((k * 1024 + 1)))
done
lengths+=($((1 << 20)) $((4 << 20)) $(((4 << 20) + 1)) $pool_len)
mapfile -t random_lengths < <(python3 -c '
import random
r = random.Random(7)
print("\n".join(str(r.randrange(1, 8 << 20)) for _ in range(12)))')
lengths+=("${random_lengths[@]}")

files=()
for len in "${lengths[@]}"; do
  ((len < 0)) && continue
  f=$work/len_$len
  [[ -e "$f" ]] && continue
  head -c "$len" "$work/pool" >"$f"
  files+=("$f")
done

passed=0
failed=0
# compare LABEL REFERENCE_CMD... -- OURS_CMD...
compare() {
  local label=$1 ref ours
  shift
  local split
  for ((split = 1; split <= $#; split++)); do [[ ${!split} == -- ]] && break; done
  ref=$("${@:1:split-1}" "${files[@]}")
  ours=$("${@:split+1}" "${files[@]}")
  local rc=$? n bad
  n=$(wc -l <<<"$ref")
  bad=$(diff <(echo "$ref") <(echo "$ours") | grep -c '^>' || true)
  # An exit other than 0 is a failure even after the right output.
  if ((rc != 0)); then
    echo "diff: $label: tinylm exited $rc"
    failed=$((failed + 1))
  elif [[ "$ref" == "$ours" ]]; then
    echo "diff: $label: $n files identical"
    passed=$((passed + n))
  else
    echo "diff: $label: $bad of $n files differ"
    diff <(echo "$ref") <(echo "$ours") | head -n 10
    passed=$((passed + n - bad))
    failed=$((failed + (bad > 0 ? bad : 1)))
  fi
}

compare "sha256 vs sha256sum" sha256sum -- "$tinylm" hash --algo sha256
compare "blake3 vs b3sum" b3sum -- "$tinylm" hash --algo blake3
for len in 1 31 33 64 131 1000; do
  compare "blake3 --length $len vs b3sum" b3sum --length "$len" -- "$tinylm" hash --algo blake3 --length "$len"
done
# Standard input goes through the streamed-read path instead of mmap.
for len in 0 1000 1048577; do
  want=$(head -c "$len" "$work/pool" | sha256sum | cut -d' ' -f1)
  got=$(head -c "$len" "$work/pool" | "$tinylm" hash - | cut -d' ' -f1)
  rc=$?
  if [[ "$want" == "$got" ]] && ((rc == 0)); then passed=$((passed + 1)); else
    echo "diff: stdin length $len: $got (exit $rc) != $want"; failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed"
((failed == 0))
