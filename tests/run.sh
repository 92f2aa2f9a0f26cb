#!/usr/bin/env bash
# `make test`: every stage docs/architecture.md §10 and the foundation issue ask for.
# Each stage is one or more checks; a stage that prints its own
# "N passed, N failed[, N skipped][, N declared deviations]" line
# contributes those counts, any other stage counts as one check judged by
# its exit status. A stage whose count line says it ran zero checks fails.
# Skips (that count, or else the runner's "skip:" lines) and declared
# deviations (cases where tinylm refuses on purpose what the oracle
# accepts) are neither passes nor failures: they are summed and printed on
# their own. The last line is the sum.
#
#   TL_FUZZ_SECONDS   libFuzzer smoke time per target (default: 480 s in all,
#                     split evenly over the targets)
#   TL_TOK_RANDOM_COUNT  random strings in the tokenizer differential (20000)
#   TL_TMPL_RANDOM_COUNT random conversations in the template differential (300)
#   TL_STAGES         space-separated subset of stage names to run
set -uo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
# The fuzz smoke's budget: 480 s in all (20 s for each of its 24 targets;
# make test-full gives each 120 s), unless a time per target is given.
FUZZ_ARGS=(--total 480)
[[ -n ${TL_FUZZ_SECONDS:-} ]] && FUZZ_ARGS=("$TL_FUZZ_SECONDS")
TOK_RANDOM_COUNT=${TL_TOK_RANDOM_COUNT:-20000}
TOK_SLM=build/tok/qwen3-tokenizer.slm
TMPL_RANDOM_COUNT=${TL_TMPL_RANDOM_COUNT:-300}
LOG_DIR=build/test-logs
mkdir -p "$LOG_DIR"
# The verified stamps (docs/architecture.md) the stages' opens write go
# to a cache of the tests' own, not the user's.
export XDG_CACHE_HOME=$PWD/build/test-work/cache

total_pass=0
total_fail=0
total_skip=0
total_dev=0
failed_stages=()

# run_stage NAME COMMAND...: runs, shows the output's tail, adds the counts.
run_stage() {
  local name=$1
  shift
  if [[ -n "${TL_STAGES:-}" && " $TL_STAGES " != *" $name "* ]]; then return; fi
  local log="$LOG_DIR/$name.log" start=$SECONDS rc
  printf '== %s\n' "$name"
  "$@" >"$log" 2>&1
  rc=$?
  local counts re='^([A-Za-z_-]+: )?([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?(, ([0-9]+) declared deviations?)?'
  local skips dev=0
  skips=$(grep -c '^skip:' "$log")
  counts=$(grep -E "$re" "$log" | tail -n 1)
  if [[ -n "$counts" ]]; then
    [[ $counts =~ $re ]]
    local p=${BASH_REMATCH[2]} f=${BASH_REMATCH[3]}
    [[ -n ${BASH_REMATCH[5]} ]] && skips=${BASH_REMATCH[5]}
    [[ -n ${BASH_REMATCH[7]} ]] && dev=${BASH_REMATCH[7]}
    # A runner that crashed after its count line still failed.
    if ((rc != 0 && f == 0)); then f=1; fi
    # A stage that checked nothing proved nothing.
    if ((p + f == 0)); then
      echo "FAILED: the stage ran zero checks" >>"$log"
      f=1
      ((rc == 0)) && rc=1
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
  elif ((rc == 0)); then
    total_pass=$((total_pass + 1))
  else
    total_fail=$((total_fail + 1))
  fi
  total_skip=$((total_skip + skips))
  total_dev=$((total_dev + dev))
  if ((rc != 0)); then
    failed_stages+=("$name")
    tail -n 40 "$log" | sed 's/^/   | /'
    printf '   %s FAILED (exit %d, %ds; full log: %s)\n' "$name" "$rc" $((SECONDS - start)) "$log"
  else
    grep -E '^(  FAIL|FAILED|note:|skip:|deviation:|fuzz:|wasm:|neon:|diff:)' "$log" | head -n 20 | sed 's/^/   | /'
    printf '   ok (%ds)%s%s\n' $((SECONDS - start)) "${counts:+: $counts}" \
      "$( ((skips)) && [[ $counts != *skipped* ]] && printf ', %d skipped' "$skips")"
  fi
}

build() { make --no-print-directory -j"$JOBS" "$@"; }

run_stage unicode-tables /usr/bin/python3 tools/gen_unicode_tables.py --check
run_stage py-format-vectors /usr/bin/python3 tools/oracle/py_format_vectors.py --check
run_stage quant-vectors /usr/bin/python3 tools/quant_ref.py --check
run_stage fast-vectors /usr/bin/python3 tools/fast_ref.py --check
run_stage sampler-vectors /usr/bin/python3 tools/oracle/sampler_selftest_vectors.py --check
run_stage docs-links /usr/bin/python3 tests/docs/links_test.py
# The layers include downward only: a header of a layer above does not
# compile in src/host, src/lib, src/tools (docs/architecture.md §2).
run_stage layers /usr/bin/python3 tests/layers/layers_test.py build/test-work/layers
run_stage build-gcc build CFG=gcc native tie-mutant lane-mutant
# Before the unit suites: promote_mechanical runs its tokenizer and
# template claims on the real tokenizer artifact.
run_stage tok-artifact build tok-slm
run_stage readme /usr/bin/python3 tests/docs/readme_test.py build/gcc/tinylm "$TOK_SLM"
run_stage build-clang build CFG=clang native
run_stage build-asan build CFG=asan native
run_stage build-tsan build CFG=tsan tsan-tests
run_stage build-wasm build wasm
run_stage build-web build web-modules web-page web-mutant web-pooltrap web-sampler-mutant
run_stage build-neon build neon
run_stage unit-gcc build/gcc/unit_tests
run_stage kernel-mutants tests/kernels/mutants.sh gcc build/gcc
run_stage unit-clang build/clang/unit_tests
run_stage unit-asan env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1 build/asan/unit_tests
# The threaded suites (pool, API, fast forward) under ThreadSanitizer: any
# report fails the stage.
run_stage unit-tsan env TSAN_OPTIONS=halt_on_error=1:exitcode=66 build/tsan/tsan_tests
run_stage unit-wasm node tests/wasm/run_unit.mjs build/wasm/unit_tests.wasm
run_stage unit-wasm-simd128 node tests/wasm/run_unit.mjs build/wasm/unit_tests_simd128.wasm
run_stage unit-neon tests/neon/qemu.sh unit
run_stage wasm-identity tests/wasm/identity.sh
run_stage web-loader node tests/web/loader_test.mjs build/gcc/tinylm build/web
# the WebGPU lane's glue in the modules, the device played by the CPU
run_stage web-gpu-glue node tests/web/gpu_glue_test.mjs build/web
run_stage web-chromium node tests/web/chromium_test.mjs build/gcc/tinylm build/web-test
# structured output in the page and the loader: native run --json-schema's bits, ajv's verdict
run_stage web-structured node tests/web/structured_test.mjs build/gcc/tinylm build/test-work/web-structured
run_stage web-observe node tests/web/observe_test.mjs build/gcc/tinylm build/test-work/web-observe \
  build/web build/web-mutant
# observe --compare --model: webgpu/1 records judged against fast/4's (W-5)
run_stage observe-within /usr/bin/python3 tests/web/observe_within_test.py build/gcc/tinylm \
  build/test-work/observe-within
# the WebGPU lane in headless Chromium on SwiftShader (and llvmpipe when installed)
run_stage web-webgpu node tests/web/webgpu_test.mjs build/gcc/tinylm build/test-work/web-webgpu
run_stage neon-identity tests/neon/qemu.sh identity build/gcc/transcript
run_stage cli tests/cli/cli_test.sh build/asan/tinylm
run_stage tok-goldens-current node tools/oracle/tok_golden.mjs --check
run_stage tok-unit-cases node tools/oracle/tok_unit_cases.mjs --check
run_stage tok-golden node tests/tok/check_golden.mjs build/gcc/tinylm "$TOK_SLM"
run_stage tok-golden-asan node tests/tok/check_golden.mjs build/asan/tinylm "$TOK_SLM"
run_stage tok-random node tools/oracle/tok_random.mjs build/gcc/tinylm "$TOK_SLM" \
  --count "$TOK_RANDOM_COUNT"
run_stage tmpl-cases /usr/bin/python3 tools/oracle/tmpl_cases.py --check
run_stage tmpl-goldens-current node tools/oracle/tmpl_golden.mjs --check
run_stage tmpl-golden node tests/tmpl/check_golden.mjs build/gcc/tinylm "$TOK_SLM"
run_stage tmpl-random /usr/bin/python3 tools/oracle/tmpl_random.py build/gcc/tinylm \
  "$TOK_SLM" --count "$TMPL_RANDOM_COUNT"
# The JSON-Schema-Test-Suite's instances through the token mask with the
# real tokenizer (tests/grammar/suite; ~10 s).
run_stage grammar-schema-suite node tests/grammar/schema_suite.mjs build/gcc/tinylm "$TOK_SLM"
# The regex reader against node's RegExp (u flag), whole match and
# JSON Schema's search, through the real tokenizer (~7 s).
run_stage grammar-regex-diff node tests/grammar/regex_diff.mjs build/gcc/tinylm "$TOK_SLM" \
  build/test-work/grammar-regex-diff
run_stage harness-self-test tests/harness/exit_status_test.sh build/gcc/tinylm "$TOK_SLM"
run_stage tiny-tokenizer-fixture /usr/bin/python3 tools/make_tiny_tokenizer.py --check
run_stage slm-inspector /usr/bin/python3 tools/slm_inspect_test.py
rm -rf build/test-work && mkdir -p build/test-work
run_stage cli-safety /usr/bin/python3 tests/cli/safety_test.py build/asan/tinylm \
  build/test-work/cli-safety
run_stage cli-progress /usr/bin/python3 tests/cli/progress_test.py build/asan/tinylm \
  build/test-work/cli-progress
run_stage demo-tools /usr/bin/python3 tools/demo/demo_test.py build/gcc/tinylm \
  build/test-work/demo-tools
run_stage demo-goldens tools/demo/check_goldens.sh build/gcc/tinylm build/test-work/demo-goldens
run_stage convert-bad /usr/bin/python3 tests/convert/bad_checkpoints.py build/asan/tinylm \
  build/test-work/convert-bad
run_stage slm-goldens-current tools/slm_goldens.sh --check
run_stage convert /usr/bin/python3 tests/convert/convert_test.py build/asan/tinylm \
  build/test-work/convert
# The packed layout's refusals and in-place checks on the release build too:
# an error path passing only under ASan's zeroed stack is not passing.
run_stage convert-gcc /usr/bin/python3 tests/convert/convert_test.py build/gcc/tinylm \
  build/test-work/convert-gcc
run_stage pull /usr/bin/python3 tests/pull/pull_test.py build/asan/tinylm build/test-work/pull
run_stage oracle-qwen3 /usr/bin/python3 tools/oracle/qwen3_ref_test.py --tinylm build/gcc/tinylm
run_stage forward-goldens-current /usr/bin/python3 tools/forward_goldens.py --check build/gcc/tinylm
run_stage forward /usr/bin/python3 tests/model/forward_test.py build/asan/tinylm \
  build/test-work/forward
run_stage gen-run /usr/bin/python3 tests/gen/run_test.py build/asan/tinylm build/test-work/gen-run
run_stage gen-run-gcc /usr/bin/python3 tests/gen/run_test.py build/gcc/tinylm \
  build/test-work/gen-run-gcc
# tinylm serve on ephemeral loopback ports, driven by npm's openai client.
run_stage serve node tests/serve/serve_test.mjs build/asan/tinylm build/test-work/serve
# Structured output through the server on the demo model, every reply
# validated by ajv (json_schema, tool calls, grammars, refusals; ~35 s). The
# gcc build: each masked token over Qwen3's 151,936-token vocabulary takes
# ~0.2 s under ASan (a 107-token tool call 23 s); the serve stage above runs
# constrained requests under ASan on the tiny model, and unit-asan the
# request, grammar and response code.
run_stage serve-structured node tests/serve/structured_test.mjs build/gcc/tinylm \
  build/test-work/serve-structured
# Clients written for other servers (llama-server's web UI, ollama, every
# field of the openai client), /v1/models/{id}, /props, the chat page at /
# (in Chromium too) and the access log, on the demo model (~25 s).
run_stage serve-compat node tests/serve/compat_test.mjs build/gcc/tinylm \
  build/test-work/serve-compat
# Several models in one server: chosen by "model", swapped under a
# --mem-budget that holds one, a model in use never unloaded (~18 s; the gcc
# build, as the demo model's vocabulary is slow under ASan; the registry's
# rules are in unit-asan).
run_stage serve-models node tests/serve/models_test.mjs build/gcc/tinylm \
  build/test-work/serve-models
# Three servers on the demo model behind Debian's haproxy, scraped by
# Debian's prometheus: drain (SIGTERM) alone and under load, a replica
# killed mid-stream, the same bytes from every replica (~20 s; docs/deploy.md).
run_stage serve-fleet node tests/serve/fleet_test.mjs build/gcc/tinylm build/test-work/serve-fleet
run_stage serve-reasoning node tests/serve/reasoning_test.mjs build/gcc/tinylm \
  build/test-work/serve-reasoning
# tinylm serve on a shared host (docs/server.md, Security): slowloris
# deadlines and caps, the prompt cache per key, Host/Content-Type without a
# key, half-close, the receipt directory, special text, impossible n.
run_stage serve-hardening node tests/serve/hardening_test.mjs build/gcc/tinylm \
  build/test-work/serve-hardening
# /v1/embeddings on a synthetic Qwen3-Embedding checkpoint beside the demo
# model: the NumPy oracle within docs/tolerance.md's embedding bound, the
# same bits alone, batched and reloaded, the refusals (~17 s).
run_stage serve-embeddings node tests/serve/embeddings_test.mjs build/gcc/tinylm \
  build/test-work/serve-embeddings
# seeds drawn fresh and sent back, penalties, repeat_last_n, logit_bias (openai client)
run_stage serve-sampling node tests/serve/sampling_test.mjs build/gcc/tinylm \
  build/test-work/serve-sampling
run_stage api-example /usr/bin/python3 tests/api/example_test.py build/asan/tinylm \
  build/asan/stream_reply build/test-work/api-example
# make install into a scratch prefix, then examples/ built against the
# installed copy with pkg-config alone (shared and static) and judged as
# api-example judges them.
run_stage install /usr/bin/python3 tests/install/install_test.py build/gcc/tinylm \
  build/test-work/install
run_stage receipt-forged /usr/bin/python3 tests/receipt/forged_test.py build/asan/tinylm \
  build/test-work/receipt-forged
# the same refusals on the release build, where a stack that ASan happened
# to leave zeroed is not zero (convert freed an uninitialised report there)
run_stage receipt-forged-gcc /usr/bin/python3 tests/receipt/forged_test.py build/gcc/tinylm \
  build/test-work/receipt-forged-gcc
run_stage forward-0.6b tests/model/forward_06b.sh build/gcc/tinylm build/test-work/forward-0.6b
# transformers' own goldens (tests/golden/transformers): checkpoints rebuilt
# and hash-checked, both lanes verified (1-2 min on 2 shared cores, mostly the 0.6B).
run_stage transformers-goldens /usr/bin/python3 tests/model/transformers_goldens.py \
  build/gcc/tinylm build/test-work/transformers-goldens
run_stage fast-lane /usr/bin/python3 tests/model/fast_test.py build/asan/tinylm build/test-work/fast-lane
# Structured output on the demo model: replies under a JSON Schema over
# seeds judged by ajv, and one constrained request on every kernel variant
# and thread count (~40 s).
run_stage structured-lanes /usr/bin/python3 tests/structured/lanes_test.py build/gcc/tinylm \
  build/test-work/structured-lanes
run_stage diff-hash tests/diff/hash_diff.sh build/gcc/tinylm
run_stage diff-cbor /usr/bin/python3 tests/diff/cbor_diff.py build/asan/cbor_tool
run_stage sampler-random /usr/bin/python3 tools/oracle/sampler_random.py build/asan/sampler_tool
# promote's stochastic statistics against SciPy (Debian's python3-scipy).
run_stage promote-stats /usr/bin/python3 tests/promote/stats_scipy.py build/gcc/stats_tool
# promote's receipts: an independent writer's, forged ones refused, status.
run_stage promote-receipts /usr/bin/python3 tests/receipt/promote_forged_test.py build/asan/tinylm \
  build/test-work/promote-receipts
# Verdicts judged again from the raw evidence: a real promotion of the
# demo model, forged three ways with every id recomputed (~1 min; the gcc
# build: under ASan the promotion's stochastic claim alone takes minutes,
# and the judges' code runs under ASan in unit-asan and promote-receipts).
run_stage promote-rejudge /usr/bin/python3 tests/receipt/promote_rejudge_test.py \
  build/gcc/tinylm build/test-work/promote-rejudge
# Signed promotions: keygen, promote --sign, promote show / report --trust
# with the right key, another key, a flipped byte in place and with ids
# recomputed, an edited or unsigned promotion (~6 s).
run_stage promote-sign /usr/bin/python3 tests/receipt/promote_sign_test.py build/gcc/tinylm \
  build/test-work/promote-sign
# The store's custody (links, owners, modes, index lines naming paths)
# and the build id (the executable's SHA-256), on a tiny model (~10 s).
run_stage promote-custody /usr/bin/python3 tests/receipt/promote_custody_test.py build/gcc/tinylm \
  build/test-work/promote-custody
# plan init + promote on the demo model (q8), both lanes, one planted
# defect per stop rule (~3.5 min on 2 cores: the oracles' inputs take half).
run_stage promote /usr/bin/python3 tests/promote/promote_test.py build/gcc/tinylm \
  build/gcc/tinylm-tie-mutant build/test-work/promote
# the mutation table: each planted lane or artifact defect refused by the
# default plan, naming its claim and rule; the clean lanes promoted.
run_stage promote-mutations /usr/bin/python3 tests/promote/mutation_test.py build/gcc/tinylm \
  build/gcc/tinylm-lane-mutant build/test-work/promote-mutations
# the stochastic claim's false-alarm rate and power measured end to end
# over seed bases (make test-full sets TL_PROMOTE_CALIBRATION_RUNS=20:
# ~40 min on 2 cores; docs/promotion-stats.md §Measured).
if [[ -n ${TL_PROMOTE_CALIBRATION_RUNS:-} ]]; then
  run_stage promote-calibration /usr/bin/python3 tests/promote/stochastic_calibration.py \
    build/gcc/tinylm build/gcc/tinylm-lane-mutant build/test-work/promote-calibration \
    "$TL_PROMOTE_CALIBRATION_RUNS"
fi
# tinylm report: pages of real promotions of the demo model checked number
# by number against their receipts, then in headless Chromium (~1 min).
run_stage report tests/report/run.sh build/gcc/tinylm build/test-work/report
run_stage fuzz-build build fuzz
run_stage fuzz-smoke tests/fuzz/run.sh "${FUZZ_ARGS[@]}"

if ((${#failed_stages[@]})); then
  echo "failed stages: ${failed_stages[*]}"
fi
((total_skip)) && echo "$total_skip checks skipped (see the skip: lines above)"
((total_dev)) && echo "$total_dev declared deviations held (tinylm refuses on purpose; docs/template.md)"
echo "$total_pass passed, $total_fail failed"
((total_fail == 0))
