#!/usr/bin/env bash
# `make bench` (hashes): SHA-256 and BLAKE3 throughput, native and wasm32,
# beside sha256sum and b3sum on the same 256 MiB input in the same run.
# MB/s = 10^6 bytes per second; the input is served from the page cache.
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${TL_BENCH_MIB:-256}
input=build/bench/hash_input.bin
mkdir -p build/bench
if [[ ! -f $input || $(stat -c %s "$input") -ne $((size_mib << 20)) ]]; then
  head -c $((size_mib << 20)) /dev/urandom >"$input"
fi
cat "$input" >/dev/null # warm the page cache

# peer LABEL COMMAND...: best of 3 wall times of a whole command.
peer() {
  python3 - "$input" "$@" <<'PY'
import os, subprocess, sys, time
path, label, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
best = min(
    (lambda t0: (subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL),
                 time.perf_counter() - t0)[1])(time.perf_counter())
    for _ in range(3))
size = os.path.getsize(path)
print(f"{label:<28} {size / best / 1e6:10.1f} MB/s  ({best:.3f} s, best of 3, whole process)")
PY
}

echo "input: $input ($size_mib MiB), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
build/gcc/hash_bench "$input" 3
node bench/wasm_hash_bench.mjs build/wasm/tinylm_core.wasm "$input" 3
peer "sha256sum (coreutils)" sha256sum "$input"
peer "b3sum --num-threads 1" b3sum --num-threads 1 "$input"
peer "b3sum (all threads)" b3sum "$input"
