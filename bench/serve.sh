#!/usr/bin/env bash
# `make bench` (side by side, not a timed test): the same weights under
# `tinylm serve --parallel 4` and `llama-server -np 4`, one after the other
# in one run (the host is shared and noisy: only figures measured together
# compare). Against each server, 1, 2, 4 and 8 concurrent streaming clients
# (bench/serve_client.mjs: /v1/completions, greedy, EOS banned so every
# reply is exactly TOKENS long, a fixed prompt per client that shares no
# prefix with any other request): aggregate decode tokens/s, time to first
# token p50/p95, errors (failed requests, replies of another length), and
# each server's peak RSS (VmHWM, touched pages) over the whole run,
# printed as one Markdown table; then `tinylm bench` decode at one stream,
# the single-stream reference of the issue's goal, and with --batch 4 (four
# sequences per forward pass, no server: what serve at 4 clients could
# reach), beside the rows tinylm serve's decode steps held on average, the
# mean time of a step, and the shares of the decode span its decode steps
# and (at most: those before the span count too) its prefill chunks took
# (from /metrics); the rest of the span ran between passes: sampling,
# hand-offs between threads, the gather, the HTTP threads. The
# header (as bench/llama.sh's, bench/host.sh): the date, the CPU and its
# kernel flags, both commits, and the read bandwidth tinylm measures over
# the weights at the servers' thread count.
# Needs llama-server (llama.cpp built as docs/perf-anchor.md
# says, with -DLLAMA_BUILD_SERVER=ON); skipped with a message otherwise.
#
#   LLAMA_CPP_DIR   llama.cpp with build/bin (default ../shared/llama.cpp)
#   TL_SXS_DIR      where bench/llama.sh keeps its synthetic Qwen3-0.6B
#                   weights (default ../sxs): m-q8.slm and m-Q8_0.gguf
#   TL_SERVE_SLM, TL_SERVE_GGUF  the two files instead
#   TL_SERVE_CLIENTS  concurrency levels (default "1 2 4 8")
#   TL_SERVE_TOKENS   tokens per reply (default 64)
#   TL_SERVE_WORDS    prompt words per client (default 48, ~60 tokens)
#   TL_SERVE_THREADS  threads of both servers (default: the CPUs online)
#
# A quick check of the script: TL_SERVE_CLIENTS="1 2" TL_SERVE_TOKENS=8 bench/serve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/host.sh
tinylm=build/gcc/tinylm
llama=${LLAMA_CPP_DIR:-../shared/llama.cpp}
sxs=${TL_SXS_DIR:-../sxs}
slm=${TL_SERVE_SLM:-$sxs/m-q8.slm}
gguf=${TL_SERVE_GGUF:-$sxs/m-Q8_0.gguf}
levels=${TL_SERVE_CLIENTS:-1 2 4 8}
tokens=${TL_SERVE_TOKENS:-64}
words=${TL_SERVE_WORDS:-48}
threads=${TL_SERVE_THREADS:-$(nproc)}
parallel=4
ctx=2048
for v in $levels "$tokens" "$words" "$threads"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bench/serve.sh: '$v' is not a positive number" >&2; exit 2; }
done
if [[ ! -x $llama/build/bin/llama-server ]]; then
  echo "== tinylm serve beside llama-server: skipped (no llama-server under $llama/build/bin;"
  echo "   build it as docs/perf-anchor.md says with -DLLAMA_BUILD_SERVER=ON, or set LLAMA_CPP_DIR)"
  exit 0
fi
if [[ ! -f $slm || ! -f $gguf ]]; then
  echo "== tinylm serve beside llama-server: skipped (no $slm or $gguf; TL_SXS_DIR=DIR bench/llama.sh"
  echo "   writes both into DIR, or set TL_SERVE_SLM and TL_SERVE_GGUF)"
  exit 0
fi
if [[ ! -x $tinylm ]]; then
  echo "bench/serve.sh: no $tinylm (run make first)" >&2
  exit 1
fi
eos=$("$tinylm" inspect "$slm" --json | /usr/bin/python3 -c \
  'import json, sys; print(",".join(map(str, json.load(sys.stdin)["config"]["eos_token_ids"])))')
work=$(mktemp -d)
pid=
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# decode_steps URL: tinylm serve's decode steps, the rows they held, the
# seconds they took and those of the prefill chunks so far (its /metrics;
# "0 0 0 0" from a server without them).
decode_steps() {
  curl -s "$1/metrics" | awk '/^tinylm_decode_batches_total / {b = $2}
    /^tinylm_decode_batched_tokens_total / {t = $2}
    /^tinylm_decode_step_seconds_total / {s = $2}
    /^tinylm_prefill_chunk_seconds_total / {p = $2} END {print b + 0, t + 0, s + 0, p + 0}'
}

# bench_server NAME COMMAND...: starts it, waits for /health 200, warms it
# up, runs every level, records VmHWM; one JSON line per level in $work/NAME.
bench_server() {
  local name=$1 port=$2
  shift 2
  "$@" >"$work/$name.log" 2>&1 &
  pid=$!
  local url=http://127.0.0.1:$port t=0
  until [[ $(curl -s -o /dev/null -w '%{http_code}' "$url/health" || true) == 200 ]]; do
    if ! kill -0 "$pid" 2>/dev/null || ((t++ > 1200)); then
      echo "bench/serve.sh: $name did not come up:" >&2
      tail -n 20 "$work/$name.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  node bench/serve_client.mjs "$url" 1 8 8 warmup "$eos" >/dev/null
  for c in $levels; do
    local before
    before=$(decode_steps "$url")
    node bench/serve_client.mjs "$url" "$c" "$tokens" "$words" "$c" "$eos" >>"$work/$name"
    echo "$before $(decode_steps "$url")" >>"$work/$name.steps"
  done
  awk '/VmHWM/ {print $2}' "/proc/$pid/status" >"$work/$name.hwm"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
}

echo "== tinylm serve beside llama-server"
host_header "$llama"
echo "llama.cpp build: $llama/build ($(host_llama_build_flags "$llama/build"))"
"$tinylm" bench "$slm" -p 0 -n 1 -r 1 -t "$threads" --json | /usr/bin/python3 -c 'import json, sys
print("read bandwidth, %s threads: %.1f GB/s (tinylm bench, reading the weights in memory)"
      % (sys.argv[1], json.load(sys.stdin)["bandwidth_bytes_per_s"] / 1e9))' "$threads"
echo "$slm / $gguf; $parallel slots x $ctx tokens, $threads threads; $tokens tokens per reply (EOS banned), greedy"
port=$(free_port)
bench_server tinylm "$port" "$tinylm" serve "$slm" --port "$port" --parallel "$parallel" --ctx "$ctx" -t "$threads"
port=$(free_port)
bench_server llama "$port" "$llama/build/bin/llama-server" -m "$gguf" --host 127.0.0.1 --port "$port" \
  -np "$parallel" -c $((parallel * ctx)) -t "$threads" --no-mmap --no-webui
single=$("$tinylm" bench "$slm" -p 0 -n "$tokens" -r 3 -t "$threads" --json)
batched=$("$tinylm" bench "$slm" -p 0 -n "$tokens" -r 3 -t "$threads" --batch "$parallel" --json)

/usr/bin/python3 - "$work" "$single" "$batched" "$parallel" <<'EOF'
import json, sys
work, single, batched, parallel = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
def load(name):
    with open(f"{work}/{name}") as f:
        return [json.loads(x) for x in f if x.strip()]
ours, theirs = load("tinylm"), load("llama")
hwm = {n: int(open(f"{work}/{n}.hwm").read() or 0) for n in ("tinylm", "llama")}
f = lambda x: "–" if x is None else "%.1f" % x
print()
print("| clients | decode t/s tinylm | llama-server | ratio | TTFT p50 ms tinylm | llama-server | TTFT p95 ms tinylm | llama-server | errors |")
print("|---|---|---|---|---|---|---|---|---|")
for a, b in zip(ours, theirs):
    r = a["decode_tps"] / b["decode_tps"] if a["decode_tps"] and b["decode_tps"] else None
    errs = len(a["errors"]) + len(b["errors"])
    for name, x in (("tinylm", a), ("llama-server", b)):
        for e in x["errors"][:3]:
            print(f"   {name}, {x['clients']} clients: {e}", file=sys.stderr)
    print(f"| {a['clients']} | {f(a['decode_tps'])} | {f(b['decode_tps'])} | {'–' if r is None else '%.2f×' % r} | "
          f"{f(a['ttft_ms']['p50'])} | {f(b['ttft_ms']['p50'])} | {f(a['ttft_ms']['p95'])} | {f(b['ttft_ms']['p95'])} | {errs} |")
print(f"| peak RSS | {hwm['tinylm'] / 1024:.0f} MiB | {hwm['llama'] / 1024:.0f} MiB | | | | | | |")
print()
print("tinylm bench, one stream, no server: %.1f decode t/s (the issue's goal: serve at 1 client within 5%% of it)"
      % single["decode_tokens_per_s"])
print("tinylm bench --batch %s, no server: %.1f decode t/s (%.2f× one stream: the bound of serve at %s clients)"
      % (parallel, batched["decode_tokens_per_s"], batched["decode_tokens_per_s"] / single["decode_tokens_per_s"],
         parallel))
steps = [list(map(float, x.split())) for x in open(f"{work}/tinylm.steps") if x.strip()]
def step_line(a, s):
    b0, t0, s0, p0, b1, t1, s1, p1 = s
    if b1 <= b0:
        return "%d clients –" % a["clients"]
    # the span: the earliest first token to the last reply's end (the
    # prefill chunks of later clients fall in it too)
    span = (a["tokens"] - a["clients"]) / a["decode_tps"] if a["decode_tps"] else 0
    shares = (", steps %.0f%% and prefill chunks at most %.0f%% of the decode span"
              % (100 * (s1 - s0) / span, 100 * (p1 - p0) / span)) if span > 0 else ""
    return "%d clients: %.2f rows, %.1f ms a step%s" % (a["clients"], (t1 - t0) / (b1 - b0),
                                                        1e3 * (s1 - s0) / (b1 - b0), shares)
print("tinylm serve's decode steps: " + "; ".join(step_line(a, s) for a, s in zip(ours, steps)))
EOF
