#!/usr/bin/env bash
# `make demo`: the main job on the bundled default model, from a fresh
# clone. The default model is a synthetic checkpoint with the exact
# Qwen3-0.6B architecture and the real Qwen3 tokenizer and chat template,
# but RANDOM weights (real weights cannot be downloaded here): the pipeline
# is real, the words are noise.
set -euo pipefail
cd "$(dirname "$0")/.."
tinylm=build/gcc/tinylm
demo=build/demo
mkdir -p "$demo"

if [[ ! -f $demo/qwen3-0.6b-synthetic.slm ]]; then
  echo "== 1. a synthetic Qwen3-0.6B checkpoint (random weights, real tokenizer)"
  rm -rf "$demo/hf"
  "$tinylm" synth --config qwen3-0.6b --seed 1 --separate-lm-head -o "$demo/hf"
  echo "== 2. convert it to one verified .slm artifact (bf16, lossless)"
  "$tinylm" convert "$demo/hf" -o "$demo/qwen3-0.6b-synthetic.slm" \
    --profile qwen3-0.6b-publisher
  rm -rf "$demo/hf"
else
  echo "== 1-2. reusing $demo/qwen3-0.6b-synthetic.slm"
fi

cat >"$demo/conversation.json" <<'JSON'
{"messages": [{"role": "user", "content": "Hello! What can you do?"}],
 "add_generation_prompt": true, "enable_thinking": false}
JSON
echo "== 3. one chat turn (seed 42; the weights are random, so the reply is noise)"
echo "   prompt: $(cat "$demo/conversation.json" | tr -s ' \n' ' ')"
echo "   reply:"
"$tinylm" run "$demo/qwen3-0.6b-synthetic.slm" --messages "$demo/conversation.json" \
  -n 16 --seed 42 --temperature 0.7 --top-k 20 --top-p 0.8 \
  --receipt "$demo/receipt.cbor" --force # the previous demo's receipt
echo "== 4. the receipt: every input, the sampler and seed, the output, hashed"
"$tinylm" receipt show "$demo/receipt.cbor" | cut -c1-160
cat <<EOF_NOTE

The receipt is $demo/receipt.cbor: rerunning the same command gives the same
receipt id. To run a real model instead, download a Qwen3 checkpoint
directory (config.json, generation_config.json, tokenizer.json,
tokenizer_config.json, model.safetensors) and:
  $tinylm convert Qwen3-0.6B -o qwen3-0.6b.slm --profile qwen3-0.6b-publisher
  $tinylm chat qwen3-0.6b.slm
EOF_NOTE
