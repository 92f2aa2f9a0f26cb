#!/usr/bin/env bash
# The scalar lane (and the fast lane) on the full Qwen3-0.6B shape (synthetic bf16 weights,
# separate lm_head copy as published) against the NumPy float64 oracle,
# generated here (the 0.6B goldens are too large to commit): every capture
# point of every layer at three positions and the logits, for a 16-token
# prompt; with TL_FORWARD_GREEDY=N (make test-full: 32) also a greedy
# continuation of N tokens; with TL_FORWARD_06B_Q8=1 (make test-full) also
# the q8 artifact against the oracle on its dequantized weights.
#   forward_06b.sh TINYLM WORKDIR
set -euo pipefail
tinylm=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
"$tinylm" synth --config qwen3-0.6b --seed 3 --separate-lm-head --publisher-eos -o "$work/hf" >/dev/null
"$tinylm" convert "$work/hf" -o "$work/model.slm" --profile qwen3-0.6b-publisher >/dev/null
ids="151644 872 198 9707 11 1879 0 3555 374 279 6722 315 9625 30 151645 198"
/usr/bin/python3 tools/oracle/qwen3_ref.py "$work/hf" --ids "$ids" --precision f64 \
  --positions 0,7,15 --weights "synth qwen3-0.6b seed 3 bf16" \
  --greedy "${TL_FORWARD_GREEDY:-0}" -o "$work/golden.cbor"
"$tinylm" verify "$work/model.slm" --golden "$work/golden.cbor" | tee "$work/verify.txt"
# The fast lane on the same golden, under its own profile (docs/fast-profile.md).
"$tinylm" verify "$work/model.slm" --golden "$work/golden.cbor" --lane fast | tee "$work/verify-fast.txt"
if [[ -n ${TL_FORWARD_06B_Q8:-} ]]; then
  # q8: the oracle on the artifact's own dequantized weights (its pure-Python
  # BLAKE3 would take minutes on 674 MB; tinylm verified every digest).
  "$tinylm" convert "$work/hf" -o "$work/model-q8.slm" --quant q8 \
    --profile qwen3-0.6b-publisher >/dev/null
  /usr/bin/python3 tools/oracle/qwen3_ref.py "$work/hf" --slm "$work/model-q8.slm" \
    --no-slm-digests --ids "$ids" --precision f64 --positions 0,7,15 \
    -o "$work/golden-q8.cbor"
  "$tinylm" verify "$work/model-q8.slm" --golden "$work/golden-q8.cbor" | tee "$work/verify-q8.txt"
  "$tinylm" verify "$work/model-q8.slm" --golden "$work/golden-q8.cbor" --lane fast |
    tee "$work/verify-q8-fast.txt"
fi
rm -rf "$work/hf"
