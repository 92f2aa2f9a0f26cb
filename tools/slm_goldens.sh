#!/usr/bin/env bash
# Golden .slm artifacts (tests/golden/slm/tiny-{f32,q8,q4}.slm): a tiny
# synthetic Qwen3 checkpoint (tinylm synth, tests/golden/slm/tiny.json,
# seed 7, bf16, separate lm_head, the 346-token fixture tokenizer) converted
# by tinylm convert.
#
#   tools/slm_goldens.sh           regenerate the committed files
#   tools/slm_goldens.sh --check   regenerate into a temporary directory and
#                                  compare byte for byte with the committed
#                                  files (exit 1 on a difference)
#
# TINYLM (default build/gcc/tinylm) is the binary used; build it first
# (make native). The receipts are not kept: they carry the build id.
set -euo pipefail
cd "$(dirname "$0")/.."

tinylm=${TINYLM:-build/gcc/tinylm}
golden=tests/golden/slm
quants=(f32 q8 q4)
max_bytes=262144 # each golden must stay small (the fuzz seed, slow Python BLAKE3)

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *) echo "usage: tools/slm_goldens.sh [--check]" >&2; exit 2 ;;
esac
if [[ ! -x $tinylm ]]; then
  echo "slm_goldens: $tinylm not found; build it first (make native)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$tinylm" synth --config "$golden/tiny.json" --seed 7 -o "$work/hf" \
  --dtype bf16 --separate-lm-head --tokenizer-dir tests/fixtures/tiny-tokenizer \
  >/dev/null
# The synthetic generation_config.json declares eos [<|im_end|>,
# <|endoftext|>] against config.json's <|im_end|>: the published
# disagreement. The qwen3-0.6b-publisher profile resolves it only for the
# real token ids (151645/151643), not for the fixture's (322/320), so the
# conversion would stop with eos_disagreement. generation_config.json is
# optional for tinylm convert: without it the sources agree on EOS 322.
rm "$work/hf/generation_config.json"

mkdir "$work/out"
for q in "${quants[@]}"; do
  "$tinylm" convert "$work/hf" -o "$work/out/tiny-$q.slm" --quant "$q" \
    --profile qwen3-0.6b-publisher --receipt "$work/out/tiny-$q.receipt.cbor" \
    >/dev/null
  size=$(stat -c %s "$work/out/tiny-$q.slm")
  if ((size > max_bytes)); then
    echo "slm_goldens: tiny-$q.slm is $size bytes (limit $max_bytes)" >&2
    exit 1
  fi
done

if ((check)); then
  status=0
  for q in "${quants[@]}"; do
    if [[ ! -f $golden/tiny-$q.slm ]]; then
      echo "slm_goldens: $golden/tiny-$q.slm is missing" >&2
      status=1
    elif ! cmp "$work/out/tiny-$q.slm" "$golden/tiny-$q.slm"; then
      status=1
    fi
  done
  if ((status)); then
    echo "golden out of date or converter not deterministic; regenerate with make slm-goldens after review" >&2
    exit 1
  fi
  echo "slm goldens: ${quants[*]} current"
else
  for q in "${quants[@]}"; do
    cp "$work/out/tiny-$q.slm" "$golden/tiny-$q.slm"
    echo "wrote $golden/tiny-$q.slm ($(stat -c %s "$golden/tiny-$q.slm") bytes)"
  done
fi
