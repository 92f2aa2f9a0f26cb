#!/usr/bin/env bash
# `make bench` (side by side): tinylm's fast lane beside llama.cpp on the
# same synthetic Qwen3-0.6B weights, run alternately in one run (the host
# is shared and noisy: only figures measured together compare). For each
# weight type (q8/Q8_0, q4/Q4_0, bf16/F16), thread count and ISA (native:
# tinylm's fastest kernels beside llama.cpp built with GGML_NATIVE; avx2:
# tinylm with TINYLM_KERNELS=avx2 beside llama.cpp built for AVX2 only,
# same commit), and for each size, llama-bench then tinylm bench:
#   prefill at each prompt length P      llama-bench -p P -n 0   / tinylm bench -p P -n 0
#   decode N tokens after D prefilled    llama-bench -p 0 -n N -d D / tinylm bench -p 0 -n N -d D
# (the D context tokens are prefilled untimed), decode also as tinylm's
# share of its read-bandwidth bound, and both peak RSS (GNU time for
# llama-bench). It prints first the date, the CPU, its logical CPUs and
# the flags the kernels choose by, both commits and both llama.cpp builds'
# ISA flags (bench/host.sh), and the read bandwidth tinylm measures over
# the weights; then one Markdown table per ISA (for docs/fast-profile.md,
# which keeps one per ISA and host); then tinylm's load
# phase by phase (`tinylm bench -p 0 -n 1 -r 1 --json`) and the time to
# first token of a fresh `tinylm run`. Needs a llama.cpp build
# (llama-bench, llama-quantize; recipe and pinned commit in
# docs/perf-anchor.md) and its GGUF writer; skipped with a
# message otherwise.
#
#   LLAMA_CPP_DIR     llama.cpp source with build/bin (default ../shared/llama.cpp);
#                     its commit is read from LLAMA_CPP_DIR/COMMIT, else git
#   LLAMA_CPP_AVX2_BUILD  its AVX2-only build (GGML_NATIVE=OFF, GGML_AVX512=OFF;
#                     docs/perf-anchor.md) with bin/llama-bench (default
#                     LLAMA_CPP_DIR/build-avx2); without it the AVX2 rows are
#                     skipped with a message
#   TL_SXS_ISAS       "native avx2" (default) or either alone
#   TL_SXS_TYPES      tinylm weight types (default "q8 q4 bf16")
#   HF_TO_GGUF        the converter (default ../shared/tools/hf_to_gguf.py)
#   TL_SXS_DIR        scratch directory, reused between runs (default: a temp
#                     dir, removed): hf/, m-{q8,q4,bf16}.slm, f32.gguf, m-*.gguf
#   TL_SXS_PROMPTS    prompt lengths of the prefill tests (default "512 4096";
#                     set and empty: no prefill tests)
#   TL_SXS_DEPTHS     contexts the decode tests start from (default "512 4096";
#                     set and empty: no decode tests)
#   TL_SXS_ARGS       "DECODE REPS THREADS" (default "64 3 1,2"); the older
#                     form "PROMPT DECODE REPS THREADS" still works: prefill
#                     at PROMPT, decode from an empty cache (depth 0) unless
#                     TL_SXS_PROMPTS / TL_SXS_DEPTHS say otherwise
#   TL_SXS_LONG_REPS  repetitions of a test whose prompt or depth is over
#                     1024 tokens: at most this many (default 1; these are slow)
#
# llama-bench warms up with a whole prefill of the test's length; over 8192
# tokens it runs with --no-warmup instead (the warm-up would double a
# test of many minutes; its cold start, the cache's first page faults, is
# well under 1% of such a prefill, and tinylm pays the same).
#
# Run time with the defaults on the 2-vCPU AMD EPYC kind: roughly 40-60
# minutes for both ISAs (an estimate, not yet timed: a 4096-token prefill
# takes 20-50 s at one thread on either side, llama-bench adds a warm-up
# prefill of the same length, and each decode test at depth 4096 prefills
# its context first, untimed: tinylm once per repetition, llama-bench
# once), plus about two minutes of conversions when TL_SXS_DIR is new. The
# 16k rows are a run of their own, e.g.
#   TL_SXS_PROMPTS=16384 TL_SXS_DEPTHS=16384 TL_SXS_TYPES=q8 TL_SXS_ARGS="64 1 1,2" bench/llama.sh
# (an estimate from the 512 and 4096 rows, attention growing with the
# position: a 16384-token prefill takes 10-20 minutes at one thread on
# either side, and the decode test prefills as much first, so three hours
# or more for one weight type at 1 and 2 threads and both ISAs, the AVX2
# rows the longer while tinylm's AVX2 prefill is the slower). A quick
# check of the script:
#   TL_SXS_PROMPTS="32 64" TL_SXS_DEPTHS="32 64" TL_SXS_ARGS="8 1 1" bench/llama.sh
# takes a few minutes with the models converted.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/host.sh
tinylm=build/gcc/tinylm
llama=${LLAMA_CPP_DIR:-../shared/llama.cpp}
avx2_build=${LLAMA_CPP_AVX2_BUILD:-$llama/build-avx2}
read -r -a isas <<<"${TL_SXS_ISAS:-native avx2}"
read -r -a types <<<"${TL_SXS_TYPES:-q8 q4 bf16}"
to_gguf=${HF_TO_GGUF:-../shared/tools/hf_to_gguf.py}
prompts=${TL_SXS_PROMPTS-512 4096}
depths=${TL_SXS_DEPTHS-512 4096}
read -r -a args <<<"${TL_SXS_ARGS:-64 3 1,2}"
if ((${#args[@]} == 4)); then
  prompts=${TL_SXS_PROMPTS-${args[0]}}
  depths=${TL_SXS_DEPTHS-0}
  args=("${args[@]:1}")
fi
if ((${#args[@]} != 3)); then
  echo "bench/llama.sh: TL_SXS_ARGS is \"DECODE REPS THREADS\" (e.g. \"64 3 1,2\"), not \"${TL_SXS_ARGS:-}\"" >&2
  exit 2
fi
decode=${args[0]} reps=${args[1]} threads=${args[2]//,/ }
long_reps=${TL_SXS_LONG_REPS:-1}
tests=()
read -r -a sizes <<<"$prompts"
for s in "${sizes[@]}"; do tests+=("pp:$s"); done
read -r -a sizes <<<"$depths"
for s in "${sizes[@]}"; do tests+=("tg:$s"); done
((${#tests[@]} > 0)) ||
  { echo "bench/llama.sh: TL_SXS_PROMPTS and TL_SXS_DEPTHS are both empty: nothing to measure" >&2; exit 2; }
for v in "${tests[@]#*:}" "$decode" "$reps" "$long_reps" $threads; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "bench/llama.sh: '$v' is not a number of tokens, repetitions or threads" >&2; exit 2; }
done
pairs=()
for ours in "${types[@]}"; do
  case $ours in
    q8) pairs+=("q8 Q8_0") ;;
    q4) pairs+=("q4 Q4_0") ;;
    bf16) pairs+=("bf16 F16") ;;
    *) echo "bench/llama.sh: TL_SXS_TYPES: '$ours' is not q8, q4 or bf16" >&2; exit 2 ;;
  esac
done
for isa in "${isas[@]}"; do
  [[ $isa == native || $isa == avx2 ]] ||
    { echo "bench/llama.sh: TL_SXS_ISAS: '$isa' is not native or avx2" >&2; exit 2; }
done
((${#pairs[@]} > 0 && ${#isas[@]} > 0)) ||
  { echo "bench/llama.sh: TL_SXS_TYPES and TL_SXS_ISAS name at least one each" >&2; exit 2; }
if [[ ! -x $llama/build/bin/llama-bench || ! -x $llama/build/bin/llama-quantize ]]; then
  echo "== side by side with llama.cpp: skipped (no llama-bench/llama-quantize under"
  echo "   $llama/build/bin; build it as docs/perf-anchor.md says, or set LLAMA_CPP_DIR)"
  exit 0
fi
if [[ ! -f $to_gguf ]]; then
  echo "== side by side with llama.cpp: skipped (no GGUF writer at $to_gguf; set HF_TO_GGUF)"
  exit 0
fi
if [[ ! -x $tinylm ]]; then
  echo "bench/llama.sh: no $tinylm (run make first)" >&2
  exit 1
fi
work=${TL_SXS_DIR:-$(mktemp -d)}
mkdir -p "$work"
res=$(mktemp "$work/results.XXXXXX")
phases=$(mktemp "$work/results.XXXXXX")
if [[ -n ${TL_SXS_DIR:-} ]]; then
  trap 'rm -f "$res" "$phases" "$work/llama-rss" "$work/llama-err"' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
gnu_time=()
[[ -x /usr/bin/time ]] && gnu_time=(/usr/bin/time -f '%M' -o "$work/llama-rss")

# repetitions for a test of SIZE tokens (prompt or depth)
reps_for() {
  if (($1 > 1024 && long_reps < reps)); then echo "$long_reps"; else echo "$reps"; fi
}

# The record of each test and the tables at the end.
report=$(
  cat <<'EOF'
import json, sys

def load(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]

def ratio(a, b):
    return "%.1f vs %.1f = %.2f×" % (a, b, a / b) if b else "%.1f vs –" % a

def key(r):
    return (r["ours"], r["theirs"], r["tinylm"]["isa"], r["isa"], r["t"])

def rows_in_order(recs):
    seen = []
    for r in recs:
        if key(r) not in seen:
            seen.append(key(r))
    return seen

def row(cells):
    return "| " + " | ".join(cells) + " |"

mode = sys.argv[1]
if mode == "test":  # one pair of runs: append its record, print a progress line
    res, isa, build, ours, theirs, t, kind, size, lrss, lj, tj = sys.argv[2:]
    l = [json.loads(x) for x in lj.splitlines() if x.strip().startswith("{")][-1]
    d = json.loads(tj)
    size = int(size)
    want = (size, 0, 0) if kind == "pp" else (0, d["decode_tokens"], size)
    got = (l["n_prompt"], l["n_gen"], l["n_depth"])
    if got != want:
        sys.exit("llama-bench measured (n_prompt, n_gen, n_depth) %s, not %s" % (got, want))
    ts = d["prefill_tokens_per_s" if kind == "pp" else "decode_tokens_per_s"]
    r = {"isa": isa, "build": build, "ours": ours, "theirs": theirs, "t": int(t),
         "kind": kind, "size": size,
         "tinylm_ts": ts, "llama_ts": l["avg_ts"],
         "llama_rss": int(lrss) * 1024 if lrss.strip().isdigit() else None, "tinylm": d}
    with open(res, "a") as f:
        f.write(json.dumps(r) + "\n")
    what = "pp%d" % size if kind == "pp" else "tg%d @ d%d" % (d["decode_tokens"], size)
    extra = ""
    if kind == "tg":
        extra = ", tinylm %.0f%% of %.1f GB/s" % (100 * d["decode_fraction_of_bound"],
                                                 d["bandwidth_bytes_per_s"] / 1e9)
    print("  %s / %s, %s / %s, %s thread%s, %s tokens/s: %s%s"
          % (ours, theirs, d["isa"], isa, t, "s" if int(t) > 1 else "", what,
             ratio(ts, l["avg_ts"]), extra), flush=True)
elif mode == "table":  # one ISA's: rows weight type x threads; columns each size
    recs = [r for r in load(sys.argv[2]) if r["isa"] == sys.argv[6]]
    prompts = [int(x) for x in sys.argv[3].split()]
    depths = [int(x) for x in sys.argv[4].split()]
    decode = int(sys.argv[5])
    if not recs:
        sys.exit(0)
    print("ISA %s: tinylm's %s kernels beside llama.cpp's build %s (%s)"
          % (sys.argv[6], ", ".join(sorted({r["tinylm"]["isa"] for r in recs})),
             recs[0]["build"], sys.argv[7]))
    print()
    head = ["tinylm / llama.cpp", "kernels: tinylm / llama.cpp", "threads"]
    head += ["prefill pp%d: tinylm vs llama" % p for p in prompts]
    for dd in depths:
        head += ["decode tg%d @ d%d: tinylm vs llama" % (decode, dd), "tinylm % of bound"]
    head += ["peak RSS tinylm / llama"]
    print(row(head))
    print(row(["---"] * len(head)))
    for k in rows_in_order(recs):
        mine = [r for r in recs if key(r) == k]
        get = lambda kind, size: next(r for r in mine if r["kind"] == kind and r["size"] == size)
        cells = ["%s / %s" % k[:2], "%s / %s" % k[2:4], str(k[4])]
        for p in prompts:
            r = get("pp", p)
            cells.append(ratio(r["tinylm_ts"], r["llama_ts"]))
        for dd in depths:
            r = get("tg", dd)
            cells.append(ratio(r["tinylm_ts"], r["llama_ts"]))
            cells.append("%.0f%% of %.1f GB/s" % (100 * r["tinylm"]["decode_fraction_of_bound"],
                                                  r["tinylm"]["bandwidth_bytes_per_s"] / 1e9))
        ours = max(r["tinylm"]["peak_rss_bytes"] for r in mine) / 1e6
        theirs = [r["llama_rss"] for r in mine if r["llama_rss"] is not None]
        cells.append("%.0f / %s MB" % (ours, "%.0f" % (max(theirs) / 1e6) if theirs else "–"))
        print(row(cells))
elif mode == "bandwidth":  # one line per thread count from the load runs
    recs = load(sys.argv[2])
    for t in sorted({r["t"] for r in recs}):
        mine = [r for r in recs if r["t"] == t]
        print("read bandwidth, %d thread%s: %s (tinylm bench, reading the weights in memory)"
              % (t, "s" if t > 1 else "",
                 ", ".join("%.1f GB/s (%s)" % (r["tinylm"]["bandwidth_bytes_per_s"] / 1e9, r["ours"])
                           for r in mine)))
elif mode == "phases":  # tinylm's load, phase by phase
    recs = load(sys.argv[2])
    print(row(["tinylm", "threads", "first token", "open + verify", "threads start",
               "weights + cache (copy; validate + pack)", "first 16-token forward pass"]))
    print(row(["---"] * 7))
    for r in recs:
        d = r["tinylm"]
        print(row([r["ours"], str(r["t"]), "%.2f s" % d["first_token_seconds"],
                   "%.2f s" % d["open_seconds"], "%.2f s" % d["threads_seconds"],
                   "%.2f s (%.2f; %.2f)" % (d["allocate_seconds"], d["copy_seconds"],
                                            d["pack_seconds"]),
                   "%.2f s" % d["first_forward_seconds"]]))
EOF
)

# each ISA's llama.cpp build; the AVX2 rows need a CPU with AVX2 and that build
declare -A build=([native]=$llama/build [avx2]=$avx2_build)
kept=()
for isa in "${isas[@]}"; do
  if [[ $isa == avx2 && ! " $(host_kernel_flags) " =~ " avx2 " ]]; then
    echo "== AVX2 rows: skipped (this CPU has no AVX2)"
  elif [[ $isa == avx2 && ! -x $avx2_build/bin/llama-bench ]]; then
    echo "== AVX2 rows: skipped (no llama-bench under $avx2_build/bin; build llama.cpp for"
    echo "   AVX2 only as docs/perf-anchor.md says, or set LLAMA_CPP_AVX2_BUILD)"
  else
    kept+=("$isa")
  fi
done
isas=("${kept[@]}")
((${#isas[@]} > 0)) || exit 0
echo "== side by side with llama.cpp: qwen3-0.6b shape (synthetic weights)"
host_header "$llama"
for isa in "${isas[@]}"; do
  echo "llama.cpp build for $isa: ${build[$isa]} ($(host_llama_build_flags "${build[$isa]}"))"
done
pp_list=${prompts:-none} tg_list=${depths:-none}
echo "prefill at ${pp_list// /, } tokens; decode $decode tokens after ${tg_list// /, };" \
  "repetitions: $reps (at most $long_reps over 1024 tokens); threads ${threads// /,};" \
  "llama-bench --no-mmap (-mmp 0); ISAs: ${isas[*]}"

[[ -d $work/hf ]] || "$tinylm" synth --config qwen3-0.6b --seed 1 -o "$work/hf" >/dev/null
[[ -f $work/f32.gguf ]] || PYTHONPATH="$llama/gguf-py" /usr/bin/python3 "$to_gguf" "$work/hf" "$work/f32.gguf" >/dev/null
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

# tinylm's load phase by phase, and the read bandwidth, per weight type and
# thread count (one decoded token: the cheapest run that measures both),
# with its fastest kernels
for p in "${pairs[@]}"; do
  read -r ours theirs <<<"$p"
  for t in $threads; do
    tj=$(env -u TINYLM_KERNELS "$tinylm" bench "$work/m-$ours.slm" -p 0 -n 1 -r 1 -t "$t" --json)
    /usr/bin/python3 -c 'import json, sys
print(json.dumps({"ours": sys.argv[1], "theirs": sys.argv[2], "t": int(sys.argv[3]),
                  "tinylm": json.loads(sys.argv[4])}))' "$ours" "$theirs" "$t" "$tj" >>"$phases"
  done
done
/usr/bin/python3 -c "$report" bandwidth "$phases"

for p in "${pairs[@]}"; do
  read -r ours theirs <<<"$p"
  for t in $threads; do
    for isa in "${isas[@]}"; do
      # tinylm's kernels: the fastest (native) or TINYLM_KERNELS=avx2
      kernels=(env -u TINYLM_KERNELS)
      [[ $isa == avx2 ]] && kernels=(env TINYLM_KERNELS=avx2)
      # alternate: llama.cpp, then tinylm, for each weight type, thread count, ISA and size
      for test in "${tests[@]}"; do
        kind=${test%%:*} size=${test#*:}
        r=$(reps_for "$size")
        if [[ $kind == pp ]]; then
          lsize=(-p "$size" -n 0) tsize=(-p "$size" -n 0)
          ((size > 8192)) && lsize+=(--no-warmup) # see the note at the top
        else
          lsize=(-p 0 -n "$decode" -d "$size") tsize=(-p 0 -n "$decode" -d "$size")
        fi
        rm -f "$work/llama-rss"
        lj=$("${gnu_time[@]}" "${build[$isa]}/bin/llama-bench" -m "$work/m-$theirs.gguf" "${lsize[@]}" \
             -t "$t" -r "$r" -mmp 0 -o jsonl 2>"$work/llama-err") || {
          # e.g. 132 (SIGILL): a -DGGML_NATIVE=ON build on a VM whose CPU flags
          # list AMX it cannot run; rebuild with GGML_NATIVE=OFF and the AVX-512 flags
          echo "llama-bench ($isa) failed on $theirs at $t threads, $kind $size (exit $?); see the note in this script:"
          tail -n 5 "$work/llama-err"
          exit 1
        }
        tj=$("${kernels[@]}" "$tinylm" bench "$work/m-$ours.slm" "${tsize[@]}" -r "$r" -t "$t" --json) || {
          echo "tinylm bench ($isa) failed on $ours at $t threads, $kind $size (exit $?)"
          exit 1
        }
        /usr/bin/python3 -c "$report" test "$res" "$isa" "${build[$isa]}" "$ours" "$theirs" "$t" \
          "$kind" "$size" "$(cat "$work/llama-rss" 2>/dev/null || true)" "$lj" "$tj"
      done
    done
  done
done
echo
echo "tokens/s (tinylm: median of the repetitions; llama-bench: their mean); tinylm's decode bound is its"
echo "weights' bytes per token over the read bandwidth tinylm measured in the same run;"
echo "peak RSS: the largest of the row's runs, in MB"
echo
for isa in "${isas[@]}"; do
  /usr/bin/python3 -c "$report" table "$res" "$prompts" "$depths" "$decode" "$isa" \
    "$(host_llama_build_flags "${build[$isa]}")"
  echo
done
echo "tinylm's load, phase by phase (tinylm bench -p 0 -n 1 -r 1: the time to its first token)"
echo
/usr/bin/python3 -c "$report" phases "$phases"
echo
# Time to first token: a fresh process opens (verifies) the artifact, loads
# the weights, prefills a short prompt and prints its first token: the time
# from the start to the first byte on stdout (the receipt's SHA-256 of the
# whole file is computed after the reply, so it is not in it).
for ours in "${types[@]}"; do
  ttft=$(/usr/bin/python3 -c 'import subprocess, sys, time
t = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
first = p.stdout.read(1)
print("%.2f s" % (time.monotonic() - t) if first else "no output")
p.stdout.read()
p.wait()' env -u TINYLM_KERNELS "$tinylm" run "$work/m-$ours.slm" --prompt "Hello" -n 8 --temperature 0)
  echo "time to first token ($ours, fresh process, short prompt): $ttft"
done
