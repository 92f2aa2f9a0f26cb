#!/usr/bin/python3
"""The fast lane (docs/fast-profile.md) against the committed NumPy float64
goldens and the oracle on lossy artifacts' own weights, through
`tinylm verify --lane fast`, under the fast lane's preregistered profile
fast-f32-vs-f64/2:

  * every committed case passes at every capture point for each lossless
    artifact of its checkpoint, greedy continuations agreeing (or reported
    unstable by the margin rule);
  * q8 and q4 artifacts pass against qwen3_ref.py --slm goldens of their own
    weights (the activation-quantization term applies), 32 greedy steps;
  * the mutation switches are caught and localised on this lane too (on a
    lossless artifact: on q8/q4 the profile's allowance hides rms_eps);
  * bit identity across thread counts: verify --dump at -t 1, 2, 3 and 7
    writes the same bytes, and `run` at those counts gives the same tokens
    and receipt id (the ISA variants are compared with each other in the
    fast_forward unit suite, which can pick them);
  * the receipt's runtime node names the lane and its profile, and its id
    differs between the lanes; bench --json has the keys the issue lists;
    bench --batch steps several sequences together on both lanes;
  * F-10: the kernel variant and thread count are recorded outside the
    identity: runs at -t 1 and -t 3 and with each variant forced through
    TINYLM_KERNELS give one receipt id and record (and `receipt show`
    prints) their own isa and threads; a variant this build or CPU cannot
    run is unsupported_feature on run, chat, verify and bench;
  * verify --dump names the lane that produced it (tinylm-fast, fast/4 or
    tinylm-scalar, scalar-f32/1), and each dump reads back as a golden;
  * F-11: the memory plan counts the fast lane's KV cache at 2 bytes per
    element and the strict lane's at 4 (--preflight --json);
  * bad input: a weight that overflows inside a product is
    numerical_failure naming stage q, layer 0, position 0, index 3 (verify
    and run, both lanes); a model over --mem-budget is refused before the
    weights are copied (peak RSS as the strict lane's refusal, well under
    a run's); bad lane flags (-t 0, -t 257, -t 100000, --lane x) are usage
    errors on run, chat, verify and bench.

    fast_test.py TINYLM WORKDIR
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import cbor2

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))

import forward_specs as fs  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forward_test as ft  # noqa: E402  (its check, counters and verify)

ORACLE = ft.ORACLE
PROFILE = "fast-f32-vs-f64/2"
LOSSY = [("bf16", "q8", "tiny-ids"), ("bf16", "q4", "tiny-ids")]
STEPS = 32
MUTATIONS = {"rope_pairing": "q_rope", "no_q_norm": "q_norm", "gqa_map": "scores",
             "mask_off_by_one": "scores_masked", "rms_eps": "attn_norm"}

check = ft.expect  # forward_test's argument order: the condition first
# The x86-64 variants, fastest last (tl_native_kernels' order); any other
# name is refused like a variant the CPU lacks.
VARIANTS = ("scalar", "avx2", "avx-vnni", "avx512")
TINY_IDS = os.path.join(fs.GOLDEN_DIR, "tiny-ids.cbor")


def env_with(kernels):
    env = {k: v for k, v in os.environ.items() if k != "TINYLM_KERNELS"}
    if kernels is not None:
        env["TINYLM_KERNELS"] = kernels
    return env


def receipt_run(tinylm, model, path, flags, kernels=None):
    """run with a receipt; (exit, stderr, receipt id, show --json, show text)."""
    p = subprocess.run([tinylm, "run", model, "--prompt", "one two three", "-n", "6",
                        "--temperature", "0.9", "--seed", "5", "--receipt", path, "--force",
                        "--json", *flags], capture_output=True, text=True, env=env_with(kernels))
    if p.returncode != 0:
        return p.returncode, p.stderr, None, {}, ""
    q = subprocess.run([tinylm, "receipt", "show", path, "--json"], capture_output=True,
                       text=True)
    r = subprocess.run([tinylm, "receipt", "show", path], capture_output=True, text=True)
    try:
        shown = json.loads(q.stdout)
    except ValueError:
        shown = {}
    return p.returncode, p.stderr, json.loads(p.stdout).get("receipt_id"), shown, r.stdout


def execution(shown):
    """The receipt's execution record without `verify` (how the open checked
    the digests: "full" or "stamp", depending on the stamp cache), or None
    when `verify` is missing or another value."""
    ex = dict(shown.get("execution") or {})
    if ex.pop("verify", None) not in ("full", "stamp"):
        return None
    return ex


def exec_text(isa, threads, text):
    """Whether receipt show's text has the execution line with isa and threads."""
    return re.search(r'execution \(unverified, not part of the identity\): isa="%s" '
                     r'verify="(full|stamp)" threads=%d\n' % (isa, threads), text) is not None


def execution_outside_identity(tinylm, work, model):
    """F-10: one receipt id whatever the variant and thread count, each
    recorded outside the identity and shown as unverified."""
    runs = {}
    for name, kernels, flags in ([("t1", None, ["-t", "1"]), ("t3", None, ["-t", "3"])] +
                                 [(v, v, ["-t", "2"]) for v in VARIANTS]):
        runs[name] = receipt_run(tinylm, model, os.path.join(work, "f10-%s.cbor" % name),
                                 flags, kernels)
    t1, t3 = runs["t1"], runs["t3"]
    check(t1[0] == 0 and t3[0] == 0 and t1[2] == t3[2] and t1[3].get("root") == t1[2],
          "run -t 1 and -t 3: one receipt id, which receipt show verifies", t1[1] + t3[1])
    default = t1[3].get("execution", {}).get("isa")
    check(execution(t1[3]) == {"isa": default, "threads": 1} and
          execution(t3[3]) == {"isa": default, "threads": 3} and default in VARIANTS,
          "run -t 1 / -t 3: the receipt records threads 1 / 3 and the variant outside the "
          "identity", json.dumps([t1[3].get("execution"), t3[3].get("execution")]))
    check(t3[3].get("unverified") == ["timings_us.prefill", "timings_us.decode",
                                      "execution.isa", "execution.threads",
                                      "execution.verify"] and exec_text(default, 3, t3[4]),
          "receipt show marks isa, threads and verify unverified (--json and text)", t3[4])
    runnable = []
    for v in VARIANTS:
        rc, err, rid, shown, text = runs[v]
        if rc == 1 and err.startswith("error: unsupported_feature: TINYLM_KERNELS=%s: " % v):
            print("skip: TINYLM_KERNELS=%s: this CPU does not run it" % v)
            continue
        runnable.append(v)
        check(rc == 0 and rid == t1[2] and execution(shown) == {"isa": v, "threads": 2}
              and exec_text(v, 2, text),
              "TINYLM_KERNELS=%s -t 2: the same receipt id, isa %s and threads 2 recorded" % (v, v),
              err + json.dumps(shown.get("execution")))
    check(runnable[:1] == ["scalar"] and runnable[-1] == default,
          "the scalar twin can always be forced; the default is the fastest variant that "
          "runs (%s)" % default, json.dumps(runnable))
    rc, err, rid, shown, _ = receipt_run(tinylm, model, os.path.join(work, "f10-strict.cbor"),
                                         ["--lane", "scalar", "-t", "3"])
    check(rc == 0 and execution(shown) == {"isa": "scalar", "threads": 1} and
          rid != t1[2], "the strict lane records isa scalar, threads 1 (it computes on one), "
          "and another receipt id", err + json.dumps(shown.get("execution")))
    cmds = {"run": ["run", model, "--prompt", "x", "-n", "1"],
            "chat": ["chat", model],
            "verify": ["verify", model, "--golden", TINY_IDS, "--lane", "fast"],
            "bench": ["bench", model, "-p", "4", "-n", "2", "-r", "1"]}
    for name, args in cmds.items():
        p = subprocess.run([tinylm, *args], capture_output=True, text=True, input="",
                           env=env_with("neon-x"))
        check(p.returncode == 1 and p.stderr.startswith("error: unsupported_feature: ") and
              "TINYLM_KERNELS=neon-x: not a kernel variant this build and CPU run (scalar"
              in p.stderr,
              "%s with TINYLM_KERNELS=neon-x: unsupported_feature naming what runs" % name,
              "exit %d %s" % (p.returncode, p.stderr))


def dump_producers(tinylm, work, model):
    """verify --dump names its lane and profile; each dump is a golden the
    reader takes."""
    for lane, name, profile in (("fast", "tinylm-fast", "fast/4"),
                                ("scalar", "tinylm-scalar", "scalar-f32/1")):
        out = os.path.join(work, "producer-%s.cbor" % lane)
        rc, doc, err = ft.verify(tinylm, model, TINY_IDS, "--lane", lane, "--dump", out)
        try:
            with open(out, "rb") as f:
                producer = cbor2.load(f)["producer"]
        except (OSError, ValueError, KeyError, cbor2.CBORDecodeError):
            producer = {}
        check(rc == 0 and producer.get("name") == name and producer.get("profile") == profile,
              "verify --lane %s --dump: producer %s, profile %s" % (lane, name, profile),
              err + json.dumps(producer))
        rc, doc, err = ft.verify(tinylm, model, out, "--lane", lane)
        check(rc == 0 and doc.get("pass") is True and
              doc.get("reference", {}).get("producer") == name,
              "the %s lane's dump reads back as a golden (producer %s) and its own lane "
              "matches it" % (lane, name), err)


def poisoned_row(tinylm, work):
    """An f32 checkpoint whose layer-0 q_proj row 3 is all FLT_MAX: valid
    weights (finite), but the product overflows at position 0."""
    hf = os.path.join(work, "poison")
    fs.checkpoint(tinylm, "f32", hf)
    path = os.path.join(hf, "model.safetensors")
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        info = json.loads(f.read(n))["model.layers.0.self_attn.q_proj.weight"]
        cols = info["shape"][1]
        f.seek(8 + n + info["data_offsets"][0] + 3 * cols * 4)
        f.write(struct.pack("<f", 3.4028234663852886e38) * cols)
    model = os.path.join(work, "poison.slm")
    fs.run([tinylm, "convert", hf, "-o", model])
    return model


def numerical_failure_located(tinylm, work):
    model = poisoned_row(tinylm, work)
    where = "non-finite value at stage q, layer 0, position 0, index 3"
    for lane in ("fast", "scalar"):
        p = subprocess.run([tinylm, "verify", model, "--golden", TINY_IDS, "--lane", lane, "-t",
                            "3"], capture_output=True, text=True)
        check(p.returncode == 1 and p.stderr.startswith("error: numerical_failure: " + where),
              "verify --lane %s: an overflowing product is numerical_failure naming stage q, "
              "layer 0, position 0, index 3" % lane, "exit %d %s" % (p.returncode, p.stderr))
    for lane in ("fast", "scalar"):
        p = subprocess.run([tinylm, "run", model, "--prompt", "one two", "-n", "2", "--lane", lane,
                            "--json"], capture_output=True, text=True)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = {}
        check(p.returncode == 1 and doc.get("error") == "numerical_failure" and
              doc.get("detail") == "generation failed after 0 tokens: " + where,
              "run --lane %s: the overflow is numerical_failure naming stage q, layer 0, "
              "position 0, index 3" % lane, p.stdout + p.stderr)


def peak_rss_kb(args):
    """(exit status, stderr, peak RSS in KiB) of one run."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return p.returncode, err.read().decode(errors="replace"), usage.ru_maxrss


def budget_refused_before_copy(tinylm, work):
    """A 121 MB bf16 artifact (the tiny shape, hidden 384, the real
    vocabulary) over --mem-budget: on the fast lane the refusal comes before
    the weights are copied into memory."""
    hf = os.path.join(work, "wide")
    cfg = os.path.join(work, "wide.json")
    with open(cfg, "w") as f:
        json.dump({"hidden_size": 384}, f)
    fs.run([tinylm, "synth", "--config", cfg, "--seed", "3", "-o", hf])
    os.remove(os.path.join(hf, "generation_config.json"))  # its EOS list differs
    model = os.path.join(work, "wide.slm")
    fs.run([tinylm, "convert", hf, "-o", model])
    weights_kb = os.path.getsize(model) // 1024
    run = [tinylm, "run", model, "--prompt", "hi", "-n", "1"]
    # All three open on a verified stamp (docs/cli.md): hashing the file
    # would make its pages resident, a peak as high as the weights' copy.
    # A stamp is written for a file older than two seconds.
    time.sleep(2.5)
    peak_rss_kb(run + ["--mem-budget", "100"])
    fast = peak_rss_kb(run + ["--mem-budget", "100"])
    strict = peak_rss_kb(run + ["--mem-budget", "100", "--lane", "scalar"])
    full = peak_rss_kb(run)
    check(fast[0] == 1 and fast[1].startswith("error: out_of_memory: the plan needs") and
          "over --mem-budget 100.0 MB" in fast[1],
          "fast lane over --mem-budget: out_of_memory from the plan", fast[1])
    check(fast[2] <= strict[2] + weights_kb // 10 and full[2] >= fast[2] + weights_kb * 3 // 10,
          "the refusal allocates nothing: peak RSS %d KiB, the strict lane's refusal %d KiB, a "
          "run %d KiB (weights %d KiB)" % (fast[2], strict[2], full[2], weights_kb),
          full[1])


def kv_cache_plan(tinylm, model, hf):
    """F-11: the memory plan's KV cache is 2 x layers x context x kv_heads x
    head_dim times 4 bytes on the strict lane and 2 (binary16) on the fast
    lane, from the checkpoint's config."""
    with open(os.path.join(hf, "config.json")) as f:
        c = json.load(f)
    for ctx in (100, 4096):
        elems = 2 * c["num_hidden_layers"] * ctx * c["num_key_value_heads"] * c["head_dim"]
        for lane, size in (("fast", 2), ("scalar", 4)):
            p = subprocess.run([tinylm, "run", model, "--prompt", "hi", "-n", "1", "--preflight",
                                "--json", "--ctx", str(ctx), "--lane", lane],
                               capture_output=True, text=True)
            got = json.loads(p.stdout)["plan_bytes"]["kv_cache"] if p.returncode == 0 else None
            check(got == elems * size,
                  "%s lane, context %d: the plan's KV cache is %d bytes per element" % (lane, ctx, size),
                  "got %s (exit %d) %s" % (got, p.returncode, p.stderr.strip()))


def bench_depth_and_phases(tinylm, model):
    """bench -d N decodes after N prefilled tokens and says so; the load is
    reported phase by phase (the copy and packing within the allocation's
    time); a depth past the model's positions is refused as
    context_exceeded."""
    p = subprocess.run([tinylm, "bench", model, "-p", "0", "-n", "3", "-d", "6", "-r", "1",
                        "--json"], capture_output=True, text=True)
    try:
        b = json.loads(p.stdout)
    except ValueError:
        b = {}
    phases = ("open_seconds", "threads_seconds", "allocate_seconds")
    parts = ("copy_seconds", "pack_seconds")
    ok = p.returncode == 0 and b.get("decode_depth") == 6 and b.get("decode_tokens") == 3 and \
        all(isinstance(b.get(k), float) and b[k] >= 0 for k in
            phases + parts + ("load_seconds", "first_forward_seconds", "first_token_seconds"))
    check(ok and sum(b[k] for k in parts) <= b["allocate_seconds"] + 1e-6,
          "bench -d 6 -n 3: decode_depth 6, every phase of the load reported, the copy and "
          "the packing within the allocation's time", p.stdout + p.stderr)
    p = subprocess.run([tinylm, "bench", model, "-p", "0", "-n", "3", "-d", "1048576",
                        "-r", "1"], capture_output=True, text=True)
    check(p.returncode != 0 and p.stderr.startswith("error: context_exceeded"),
          "bench -d past max_position_embeddings: context_exceeded",
          "exit %d %s" % (p.returncode, p.stderr))


def bench_batch(tinylm, model):
    """bench --batch B steps B sequences together on both lanes and says
    so; 0 and 65 are usage errors naming --batch."""
    for lane in ("fast", "scalar"):
        p = subprocess.run([tinylm, "bench", model, "-p", "0", "-n", "3", "-d", "2", "-r", "1",
                            "--batch", "3", "--lane", lane, "--json"],
                           capture_output=True, text=True)
        try:
            b = json.loads(p.stdout)
        except ValueError:
            b = {}
        check(p.returncode == 0 and b.get("batch") == 3 and b.get("decode_tokens") == 3 and
              b.get("lane") == lane and b.get("decode_tokens_per_s", 0) > 0,
              "bench --batch 3 on the %s lane: batch 3, decode tokens/s of all of them" % lane,
              p.stdout + p.stderr)
    for v in ("0", "65"):
        p = subprocess.run([tinylm, "bench", model, "-p", "0", "-n", "2", "--batch", v],
                           capture_output=True, text=True)
        check(p.returncode == 2 and p.stderr.startswith("error: usage: ") and
              "--batch" in p.stderr, "bench --batch %s: usage error naming --batch" % v,
              "exit %d %s" % (p.returncode, p.stderr))


def bad_thread_counts(tinylm, model):
    cmds = {"run": ["run", model, "--prompt", "x"], "chat": ["chat", model],
            "verify": ["verify", model, "--golden", TINY_IDS],
            "bench": ["bench", model]}
    for name, args in cmds.items():
        for t in ("0", "100000"):
            p = subprocess.run([tinylm, *args, "-t", t], capture_output=True, text=True,
                               input="")
            check(p.returncode == 2 and p.stderr.startswith("error: usage: ") and
                  "-t" in p.stderr, "%s -t %s: usage error naming -t" % (name, t),
                  "exit %d %s" % (p.returncode, p.stderr))


def verify(tinylm, model, golden, *extra):
    return ft.verify(tinylm, model, golden, "--lane", "fast", *extra)


def judge(what, rc, doc, err, steps):
    worst = max((r["nrmse"] for r in doc.get("records", [])), default=None)
    if steps:
        gr = doc.get("greedy") or {}
        check(rc == 0 and (gr.get("agreed") == steps or gr.get("verdict") == "unstable"),
              "%s: greedy continuation of %d tokens agrees (or is reported unstable)"
              % (what, steps), "exit %d %s" % (rc, json.dumps(gr)))
    d = doc.get("first_divergence") or {}
    check(rc == 0 and doc.get("pass") is True and doc.get("profile") == PROFILE,
          "%s: every capture within %s (worst NRMSE %s)" % (what, doc.get("profile"), worst),
          err.strip() or "first divergence: stage %s, layer %s, position %s, index %s: "
          "reference %s, candidate %s, tolerance %s"
          % (d.get("stage"), d.get("layer"), d.get("position"), d.get("index"),
             d.get("reference"), d.get("candidate"), json.dumps(d.get("tolerance"))))


def main(tinylm, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    models = {}
    for name, (kind, _, _, _, steps) in sorted(fs.CASES.items()):
        golden = os.path.join(fs.GOLDEN_DIR, name + ".cbor")
        hf = os.path.join(work, kind)
        if kind not in models:
            fs.checkpoint(tinylm, kind, hf)
            models[kind] = {}
            for quant in ("source", "f32") + (("f16",) if kind == "bf16" else ()):
                out = os.path.join(work, "%s-%s.slm" % (kind, quant))
                fs.run([tinylm, "convert", hf, "-o", out, "--quant", quant])
                models[kind][quant] = out
        for quant, model in sorted(models[kind].items()):
            rc, doc, err = verify(tinylm, model, golden)
            judge("%s --quant %s, fast lane" % (name, quant), rc, doc, err, steps)
    for kind, quant, case in LOSSY:
        ids = fs.CASES[case][1]["ids"]
        hf = os.path.join(work, kind)
        model = os.path.join(work, "%s-%s.slm" % (kind, quant))
        golden = os.path.join(work, "%s-%s.golden.cbor" % (kind, quant))
        fs.run([tinylm, "convert", hf, "-o", model, "--quant", quant])
        p = subprocess.run(["/usr/bin/python3", ORACLE, hf, "--slm", model,
                            "--ids", " ".join(map(str, ids)), "--precision", "f64",
                            "--greedy", str(STEPS), "-o", golden],
                           capture_output=True, text=True)
        check(p.returncode == 0, "%s %s: qwen3_ref.py --slm writes a golden" % (kind, quant),
              p.stderr.strip())
        if p.returncode == 0:
            rc, doc, err = verify(tinylm, model, golden)
            judge("%s --quant %s (lossy), fast lane" % (kind, quant), rc, doc, err, STEPS)
        models[kind][quant] = model
    # On a lossless artifact, as in forward_test.py (on q8/q4 the profile's
    # activation-quantization allowance is too wide to see rms_eps).
    for mutation, stage in sorted(MUTATIONS.items()):
        rc, doc, err = verify(tinylm, models["bf16"]["source"],
                              os.path.join(fs.GOLDEN_DIR, "tiny-ids.cbor"), "--mutate", mutation)
        d = doc.get("first_divergence") or {}
        check(rc == 1 and d.get("stage") == stage and d.get("layer") == 0,
              "fast lane: mutation %s localised to %s, layer 0" % (mutation, stage),
              "got %s (exit %d) %s" % (json.dumps(d), rc, err.strip()))
    kv_cache_plan(tinylm, models["bf16"]["source"], os.path.join(work, "bf16"))
    # Thread counts: the same bytes.
    for quant in ("q8", "q4", "source"):
        model = models["bf16"][quant]
        dumps, runs = [], []
        for t in (1, 2, 3, 7, "2 --mmap"):
            if isinstance(t, int):
                out = os.path.join(work, "dump-%s-t%d.cbor" % (quant, t))
                rc, doc, err = verify(tinylm, model, os.path.join(fs.GOLDEN_DIR, "tiny-ids.cbor"),
                                      "-t", str(t), "--dump", out)
                with open(out, "rb") as f:
                    dumps.append(f.read())
            # --mmap: q8/q4 weights packed from the file mapping, float ones
            # read in place, instead of from the copy
            p = subprocess.run([tinylm, "run", model, "--prompt", "one two three",
                                "-n", "12", "--temperature", "0.9", "--seed", "5",
                                "--lane", "fast", "-t", *str(t).split(), "--json"],
                               capture_output=True, text=True)
            try:
                doc = json.loads(p.stdout)
                runs.append((doc["ids"], doc["receipt_id"]))
            except (ValueError, KeyError):
                runs.append(("failed", p.stderr))
        check(all(d == dumps[0] for d in dumps) and len(dumps[0]) > 0,
              "%s: verify --dump on the fast lane writes the same bytes at 1, 2, 3 and 7 "
              "threads" % quant)
        check(all(r == runs[0] for r in runs) and runs[0][0] != "failed",
              "%s: run on the fast lane gives the same tokens and receipt id at 1, 2, 3 "
              "and 7 threads and with --mmap" % quant, json.dumps(runs))
    # The receipt names the lane and its profile inside the identity (F-10).
    runtimes = {}
    for lane in ("fast", "scalar"):
        rec = os.path.join(work, "receipt-%s.cbor" % lane)
        p = subprocess.run([tinylm, "run", models["bf16"]["q8"], "--prompt", "one two", "-n", "3",
                            "--lane", lane, "--receipt", rec, "--force", "--json"],
                           capture_output=True, text=True)
        q = subprocess.run([tinylm, "receipt", "show", rec, "--json"], capture_output=True,
                           text=True)
        try:
            nodes = json.loads(q.stdout)["nodes"]
            runtimes[lane] = [n for n in nodes if n["type"] == "runtime"][0]
        except (ValueError, KeyError, IndexError):
            runtimes[lane] = {}
        check(p.returncode == 0 and q.returncode == 0, "run --lane %s writes a receipt that "
              "receipt show verifies" % lane, p.stderr + q.stderr)
    want = {"fast": ("fast", "fast/4"), "scalar": ("scalar", "scalar-f32/1")}
    for lane, (backend, profile) in want.items():
        meta = runtimes[lane].get("metadata", {})
        check(meta.get("backend") == backend and meta.get("numerical_profile") == profile,
              "run --lane %s: the receipt's runtime node names %s and %s" % (lane, backend, profile),
              json.dumps(meta))
    check(runtimes["fast"].get("id") not in (None, runtimes["scalar"].get("id")),
          "the runtime node's id differs between the lanes (the profile is in the identity)")
    # bench --json: the keys the issue lists, and sane values.
    p = subprocess.run([tinylm, "bench", models["bf16"]["q8"], "-p", "8", "-n", "4", "-r", "1",
                        "-t", "2", "--json"], capture_output=True, text=True)
    try:
        b = json.loads(p.stdout)
    except ValueError:
        b = {}
    keys = ("prefill_tokens_per_s", "decode_tokens_per_s", "threads", "lane", "isa",
            "weight_bytes_per_token", "bandwidth_bytes_per_s", "peak_rss_bytes")
    check(p.returncode == 0 and all(k in b for k in keys) and b.get("threads") == 2 and
          b.get("lane") == "fast" and b.get("profile") == "fast/4" and
          all(b[k] > 0 for k in keys if k not in ("lane", "isa")),
          "bench --json has %s" % ", ".join(keys), p.stdout + p.stderr)
    bench_depth_and_phases(tinylm, models["bf16"]["q8"])
    bench_batch(tinylm, models["bf16"]["q8"])
    execution_outside_identity(tinylm, work, models["bf16"]["q8"])
    dump_producers(tinylm, work, models["bf16"]["source"])
    numerical_failure_located(tinylm, work)
    budget_refused_before_copy(tinylm, work)
    bad_thread_counts(tinylm, models["bf16"]["q8"])
    for flags in (["-t", "0"], ["-t", "257"], ["--lane", "x"], ["--threads"]):
        p = subprocess.run([tinylm, "run", models["bf16"]["q8"], "--prompt", "x", *flags],
                           capture_output=True, text=True)
        check(p.returncode == 2 and p.stderr.startswith("error: usage:"),
              "run %s: usage error" % " ".join(flags), "exit %d %s" % (p.returncode, p.stderr))
    return ft.summary()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: fast_test.py TINYLM WORKDIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
