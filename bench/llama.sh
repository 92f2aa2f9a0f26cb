#!/usr/bin/env bash
# `make bench` (side by side): tinylm's fast lane beside llama.cpp on the
# same synthetic Qwen3-0.6B weights, run alternately in one run (the host
# is shared and noisy: only figures measured together compare): prefill
# and decode tokens/s, decode as a fraction of the read-bandwidth bound,
# both peak RSS (GNU time for llama-bench), then tinylm's time to first
# token. Needs a
# llama.cpp build (llama-bench, llama-quantize; recipe and pinned commit in
# ../shared/notes/perf-anchor.md) and its GGUF writer; skipped with a
# message otherwise.
#
#   LLAMA_CPP_DIR   llama.cpp checkout with build/bin (default ../shared/llama.cpp)
#   HF_TO_GGUF      the converter (default ../shared/tools/hf_to_gguf.py)
#   TL_SXS_DIR      scratch directory (default: a temp dir, removed)
#   TL_SXS_ARGS     "PROMPT DECODE REPS THREADS" (default "512 64 3 1,2")
set -euo pipefail
cd "$(dirname "$0")/.."
tinylm=build/gcc/tinylm
llama=${LLAMA_CPP_DIR:-../shared/llama.cpp}
to_gguf=${HF_TO_GGUF:-../shared/tools/hf_to_gguf.py}
read -r prompt decode reps threads <<<"${TL_SXS_ARGS:-512 64 3 1,2}"
if [[ ! -x $llama/build/bin/llama-bench || ! -x $llama/build/bin/llama-quantize ]]; then
  echo "== side by side with llama.cpp: skipped (no llama-bench/llama-quantize under"
  echo "   $llama/build/bin; build it as ../shared/notes/perf-anchor.md says, or set LLAMA_CPP_DIR)"
  exit 0
fi
if [[ ! -f $to_gguf ]]; then
  echo "== side by side with llama.cpp: skipped (no GGUF writer at $to_gguf; set HF_TO_GGUF)"
  exit 0
fi
work=${TL_SXS_DIR:-$(mktemp -d)}
[[ -n ${TL_SXS_DIR:-} ]] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"

echo "== side by side with llama.cpp ($(git -C "$llama" describe --always 2>/dev/null || echo "$llama")): qwen3-0.6b shape, pp$prompt / tg$decode, $reps repetitions"
[[ -d $work/hf ]] || "$tinylm" synth --config qwen3-0.6b --seed 1 -o "$work/hf" >/dev/null
[[ -f $work/f32.gguf ]] || PYTHONPATH="$llama/gguf-py" /usr/bin/python3 "$to_gguf" "$work/hf" "$work/f32.gguf" >/dev/null
pairs=("q8 Q8_0" "q4 Q4_0" "bf16 F16")
for p in "${pairs[@]}"; do
  read -r ours theirs <<<"$p"
  [[ -f $work/m-$ours.slm ]] || "$tinylm" convert "$work/hf" -o "$work/m-$ours.slm" --quant "$ours" \
    --profile qwen3-0.6b-publisher >/dev/null
  if [[ ! -f $work/m-$theirs.gguf ]]; then
    extra=()
    [[ $theirs == Q4_0 ]] && extra=(--pure)
    "$llama/build/bin/llama-quantize" "${extra[@]}" "$work/f32.gguf" "$work/m-$theirs.gguf" "$theirs" >/dev/null 2>&1
  fi
done

rows=()
for p in "${pairs[@]}"; do
  read -r ours theirs <<<"$p"
  for t in ${threads//,/ }; do
    # alternate: llama.cpp, then tinylm, for each weight type and thread count
    lj=$(/usr/bin/time -f '%M' -o "$work/llama-rss" "$llama/build/bin/llama-bench" \
         -m "$work/m-$theirs.gguf" -p "$prompt" -n "$decode" \
         -t "$t" -r "$reps" -mmp 0 -o json 2>/dev/null) || {
      # e.g. 132 (SIGILL): a -DGGML_NATIVE=ON build on a VM whose CPU flags
      # list AMX it cannot run; rebuild with GGML_NATIVE=OFF and the AVX-512 flags
      echo "llama-bench failed on $theirs at $t threads (exit $?); see the note in this script"
      exit 1
    }
    tj=$("$tinylm" bench "$work/m-$ours.slm" -p "$prompt" -n "$decode" -r "$reps" -t "$t" --json)
    rows+=("$(/usr/bin/python3 - "$ours" "$theirs" "$t" "$lj" "$tj" "$(cat "$work/llama-rss")" <<'EOF'
import json, sys
ours, theirs, t, lj, tj, lrss = sys.argv[1:]
l = json.loads(lj)
pp = next(r["avg_ts"] for r in l if r["n_prompt"] > 0 and r["n_gen"] == 0)
tg = next(r["avg_ts"] for r in l if r["n_gen"] > 0 and r["n_prompt"] == 0)
d = json.loads(tj)
print("%-5s %-5s %2s | %8.1f %8.1f %5.2fx | %7.1f %7.1f %5.2fx | %3.0f%% of bound, %4.1f GB/s | %5.0f %5.0f MB"
      % (ours, theirs, t, d["prefill_tokens_per_s"], pp, d["prefill_tokens_per_s"] / pp,
         d["decode_tokens_per_s"], tg, d["decode_tokens_per_s"] / tg,
         100 * d["decode_fraction_of_bound"], d["bandwidth_bytes_per_s"] / 1e9,
         d["peak_rss_bytes"] / 1e6, int(lrss) * 1024 / 1e6))
EOF
)")
  done
done
echo "tinylm llama.cpp t | prefill tinylm llama  ratio | decode tinylm llama  ratio | tinylm decode              | peak RSS tinylm llama"
printf '%s\n' "${rows[@]}"
# Time to first token: a fresh process opens (verifies) the artifact, loads
# the weights, prefills a short prompt and prints its first token: the time
# from the start to the first byte on stdout (the receipt's SHA-256 of the
# whole file is computed after the reply, so it is not in it).
for ours in q8 q4 bf16; do
  ttft=$(/usr/bin/python3 -c 'import subprocess, sys, time
t = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
first = p.stdout.read(1)
print("%.2f s" % (time.monotonic() - t) if first else "no output")
p.stdout.read()
p.wait()' "$tinylm" run "$work/m-$ours.slm" --prompt "Hello" -n 8 --temperature 0)
  echo "time to first token ($ours, fresh process, short prompt): $ttft"
done
