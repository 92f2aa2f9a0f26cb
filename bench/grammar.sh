#!/usr/bin/env bash
# `make bench` (grammars): tinylm's token mask beside llama.cpp's grammar
# sampler, on the same schemas, the same vocabulary (Qwen3's) and the same
# token positions, in one run, one thread each.
#
# The corpus: bench/grammar/schemas/*.json (JSON Schema), each with a valid
# *.instance.json beside it, and bench/grammar/gbnf/*.gbnf with *.instance.txt.
# Each schema lists its required properties before its optional ones and
# each instance keeps that order: tinylm keeps a schema's order, llama.cpp's
# converter puts the required properties first, so only such schemas have
# one instance both accept.
# tinylm: `tinylm bench --grammar ... --tokenizer build/tok/qwen3-tokenizer.slm
# --json` (compile time; mask time per token cold, on a fresh matcher, and
# warm, after a reset that keeps its caches; accept time). llama.cpp: its
# json_schema_to_grammar.py turns each schema into GBNF (run with
# /usr/bin/python3), and bench/grammar/llama_grammar_bench.c, linked with its
# libllama, times llama_sampler_init_grammar, then llama_sampler_apply on the
# whole vocabulary and llama_sampler_accept of the instance's tokens: the
# ids tinylm's tokenizer gave, at the same positions. It prints one table:
# per grammar and over the corpus, mean/p50/p99/worst mask time of each and
# the ratio of the means.
#
# Needs llama.cpp built at the pinned commit (docs/perf-anchor.md; the
# library libllama is built with llama-bench) and its GGUF writer for a
# vocabulary-only model; without them only tinylm's figures are printed,
# with a message.
#
#   LLAMA_CPP_DIR      llama.cpp source with build/bin (default ../shared/llama.cpp)
#   HF_TO_GGUF         the GGUF writer (default ../shared/tools/hf_to_gguf.py)
#   TL_GRAMMAR_DIR     scratch directory, reused (default build/bench/grammar)
#   TL_GRAMMAR_REPS    compile repetitions (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
tinylm=build/gcc/tinylm
tok=build/tok/qwen3-tokenizer.slm
llama=${LLAMA_CPP_DIR:-../shared/llama.cpp}
to_gguf=${HF_TO_GGUF:-../shared/tools/hf_to_gguf.py}
work=${TL_GRAMMAR_DIR:-build/bench/grammar}
reps=${TL_GRAMMAR_REPS:-20}
[[ $reps =~ ^[0-9]+$ ]] || { echo "bench/grammar.sh: TL_GRAMMAR_REPS='$reps' is not a number" >&2; exit 2; }
for f in "$tinylm" "$tok"; do
  [[ -f $f ]] || { echo "bench/grammar.sh: no $f (make native tok-slm first)" >&2; exit 1; }
done
mkdir -p "$work/gbnf"
files=()
for f in bench/grammar/schemas/*.json bench/grammar/gbnf/*.gbnf; do
  [[ $f == *.instance.json || ! -e $f ]] || files+=("$f")
done

echo "== grammars: tinylm's token mask beside llama.cpp's grammar sampler"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "CPU: $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n1), one thread"
# tinylm exits 1 when a grammar was refused: that is reported in the table
"$tinylm" bench --grammar "${files[@]}" --tokenizer "$tok" -r "$reps" --json >"$work/tinylm.json" ||
  [[ $? == 1 && -s $work/tinylm.json ]]

llama_out=
if [[ ! -f $llama/include/llama.h ]] || ! compgen -G "$llama/build/bin/libllama.so*" >/dev/null; then
  echo "llama.cpp: skipped (no libllama under $llama/build/bin; build it as docs/perf-anchor.md says, or set LLAMA_CPP_DIR)"
elif [[ ! -f $to_gguf && ! -f $work/vocab.gguf ]]; then
  echo "llama.cpp: skipped (no GGUF writer at $to_gguf; set HF_TO_GGUF)"
else
  if [[ -f $llama/COMMIT ]]; then commit=$(head -n1 "$llama/COMMIT"); else commit=$(git -C "$llama" describe --always 2>/dev/null || echo unknown); fi
  echo "llama.cpp: $commit ($llama)"
  lib=$(cd "$llama/build/bin" && pwd)
  driver=$work/llama_grammar_bench
  if [[ ! -x $driver || bench/grammar/llama_grammar_bench.c -nt $driver ]]; then
    cc -std=c11 -O2 -Wall -Wextra -Werror bench/grammar/llama_grammar_bench.c -I"$llama/include" \
      -I"$llama/ggml/include" -L"$lib" -lllama -Wl,-rpath,"$lib" -lm -o "$driver"
  fi
  # a vocabulary for llama.cpp: the tiny synthetic checkpoint carries the real Qwen3 tokenizer
  if [[ ! -f $work/vocab.gguf ]]; then
    rm -rf "$work/hf"
    "$tinylm" synth --config tiny --seed 1 -o "$work/hf" >/dev/null
    PYTHONPATH="$llama/gguf-py" /usr/bin/python3 "$to_gguf" "$work/hf" "$work/vocab.gguf" >/dev/null
  fi
  # each grammar as llama.cpp reads it, and the jobs: name, GBNF, the ids tinylm walked
  /usr/bin/python3 - "$work" "$llama" >"$work/jobs.tsv" <<'EOF'
import json, os, subprocess, sys
work, llama = sys.argv[1:]
for g in json.load(open(os.path.join(work, "tinylm.json")))["grammars"]:
    if "ids" not in g:
        continue
    name = os.path.basename(g["file"])
    if g["file"].endswith(".json"):
        gbnf = os.path.join(work, "gbnf", name[:-5] + ".gbnf")
        with open(gbnf, "w") as out:
            r = subprocess.run(["/usr/bin/python3", os.path.join(llama, "examples", "json_schema_to_grammar.py"),
                                g["file"]], stdout=out, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print("llama.cpp's json_schema_to_grammar.py refused %s: %s" % (g["file"], r.stderr.strip().splitlines()[-1]),
                  file=sys.stderr)
            continue
    else:
        gbnf = g["file"]
    print("%s\t%s\t%s" % (name, gbnf, " ".join(str(i) for i in g["ids"])))
EOF
  "$driver" "$work/vocab.gguf" "$reps" <"$work/jobs.tsv" >"$work/llama.jsonl"
  llama_out=$work/llama.jsonl
fi

/usr/bin/python3 - "$work/tinylm.json" "$llama_out" <<'EOF'
import json, os, sys
t = json.load(open(sys.argv[1]))
llama = {}
if sys.argv[2]:
    for line in open(sys.argv[2]):
        r = json.loads(line)
        llama[r["name"]] = r

def stats(v):
    v = sorted(v)
    n = len(v)
    if n == 0:
        return None
    return {"mean_us": sum(v) / n, "p50_us": v[(n + 1) // 2 - 1], "p99_us": v[(99 * n + 99) // 100 - 1],
            "worst_us": v[-1], "n": n}

def fmt(s):
    return "%.1f / %.1f / %.1f / %.1f" % (s["mean_us"], s["p50_us"], s["p99_us"], s["worst_us"]) if s else "–"

def ratio(a, b):
    return "%.0f×" % (a["mean_us"] / b["mean_us"]) if a and b and b["mean_us"] > 0 else "–"

def row(cells):
    print("| " + " | ".join(cells) + " |")

print("vocabulary: %d tokens (tinylm), %s (llama.cpp); times in microseconds: mean / p50 / p99 / worst"
      % (t["vocab_tokens"], next(iter(llama.values()))["vocab"] if llama else "–"))
print()
head = ["grammar", "tokens", "tinylm compile (median)", "tinylm mask, cold", "tinylm mask, warm",
        "llama.cpp init", "llama.cpp mask", "llama.cpp / tinylm (cold)", "llama.cpp / tinylm (warm)"]
row(head)
row(["---"] * len(head))
pooled = []
for g in t["grammars"]:
    name = os.path.basename(g["file"])
    if "error" in g:
        row([name, "–", "%s: %s" % (g["error"], g["detail"])] + ["–"] * 6)
        continue
    if "mask_cold" not in g:
        row([name, "–", "%.0f" % g["compile_median_us"], "(no instance)"] + ["–"] * 5)
        continue
    l = llama.get(name)
    lm = lc = None
    note = ""
    if l is not None and "error" in l:
        note = "llama.cpp: " + l["error"]
    elif l is not None:
        lm = stats(l["mask_us"])
        lc = stats(l["compile_us"])
        if l["rejected_at"] >= 0:
            note = "llama.cpp masked the instance's token %d" % l["rejected_at"]
        else:
            pooled += l["mask_us"]
    row([name, str(g["tokens"]), "%.0f" % g["compile_median_us"], fmt(g["mask_cold"]), fmt(g["mask_warm"]),
         "%.0f" % lc["p50_us"] if lc else "–", note or fmt(lm), ratio(lm, g["mask_cold"]), ratio(lm, g["mask_warm"])])
lp = stats(pooled)
row(["**all**", str(t["mask_cold"]["n"]), "%.0f" % t["compile_median_us"]["p50_us"], fmt(t["mask_cold"]),
     fmt(t["mask_warm"]), "–", fmt(lp), ratio(lp, t["mask_cold"]), ratio(lp, t["mask_warm"])])
print()
print("tinylm accept per token: %s; compile (median per grammar) over the corpus: %s; %d of %d grammars ok"
      % (fmt(t["accept"]), fmt(t["compile_median_us"]), t["grammars_ok"], len(t["grammars"])))
EOF

# Constrained decode beside unconstrained on the 0.6B shape (q8, fast lane,
# synthetic weights: their text is junk, the grammar keeps it valid): the
# same prompt and seed at temperature 1, decode tokens/s from `run --json`'s
# timings, median of TL_GRAMMAR_DECODE_REPS runs. The model is made once
# in the scratch directory (TL_GRAMMAR_DECODE_MODEL: another artifact).
decode_model=${TL_GRAMMAR_DECODE_MODEL:-$work/qwen3-0.6b-q8.slm}
decode_reps=${TL_GRAMMAR_DECODE_REPS:-3}
[[ $decode_reps =~ ^[1-9][0-9]*$ ]] || { echo "bench/grammar.sh: TL_GRAMMAR_DECODE_REPS='$decode_reps' is not a count" >&2; exit 2; }
if [[ ! -f $decode_model ]]; then
  rm -rf "$work/hf-0.6b"
  "$tinylm" synth --config qwen3-0.6b --seed 1 -o "$work/hf-0.6b" >/dev/null
  "$tinylm" convert "$work/hf-0.6b" -o "$decode_model" --quant q8 >/dev/null
  rm -rf "$work/hf-0.6b"
fi
echo
echo "== constrained decode: $(basename "$decode_model"), fast lane, $(nproc) threads, 64 tokens, median of $decode_reps"
echo "| constraint | decode tokens/s | vs unconstrained | tokens |"
echo "| --- | --- | --- | --- |"
base=
for c in none json-object bench/grammar/schemas/person.json bench/grammar/schemas/tool_call.json; do
  case $c in
  none) args=() ;;
  json-object) args=(--json-object) ;;
  *) args=(--json-schema "$c") ;;
  esac
  rates=() n=0
  for ((r = 0; r < decode_reps; r++)); do
    "$tinylm" run "$decode_model" --prompt "Describe a person as JSON." --no-think -n 64 \
      --temperature 1 --seed 7 "${args[@]}" --json >"$work/decode.json"
    read -r rate n < <(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["timings"]["decode_tokens_per_s"], len(d["ids"]))' "$work/decode.json")
    rates+=("$rate")
  done
  median=$(printf '%s\n' "${rates[@]}" | sort -g | sed -n "$(((decode_reps + 1) / 2))p")
  [[ -n $base ]] || base=$median
  awk -v c="$(basename "$c")" -v m="$median" -v b="$base" -v n="$n" \
    'BEGIN { printf "| %s | %.2f | %.1f%% | %d |\n", c, m, 100 * m / b, n }'
done
