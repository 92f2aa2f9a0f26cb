#!/usr/bin/python3
"""The fast lane (docs/fast-profile.md) against the committed NumPy float64
goldens and the oracle on lossy artifacts' own weights, through
`tinylm verify --lane fast`, under the fast lane's preregistered profile
fast-f32-vs-f64/1:

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
  * bad lane flags (-t 0, -t 257, --lane x) are usage errors.

    fast_test.py TINYLM WORKDIR
"""

import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))

import forward_specs as fs  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forward_test as ft  # noqa: E402  (its check, counters and verify)

ORACLE = ft.ORACLE
PROFILE = "fast-f32-vs-f64/1"
LOSSY = [("bf16", "q8", "tiny-ids"), ("bf16", "q4", "tiny-ids")]
STEPS = 32
MUTATIONS = {"rope_pairing": "q_rope", "no_q_norm": "q_norm", "gqa_map": "scores",
             "mask_off_by_one": "scores_masked", "rms_eps": "attn_norm"}

check = ft.check


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
    # Thread counts: the same bytes.
    for quant in ("q8", "q4", "source"):
        model = models["bf16"][quant]
        dumps, runs = [], []
        for t in (1, 2, 3, 7):
            out = os.path.join(work, "dump-%s-t%d.cbor" % (quant, t))
            rc, doc, err = verify(tinylm, model, os.path.join(fs.GOLDEN_DIR, "tiny-ids.cbor"),
                                  "-t", str(t), "--dump", out)
            with open(out, "rb") as f:
                dumps.append(f.read())
            p = subprocess.run([tinylm, "run", model, "--prompt", "one two three",
                                "-n", "12", "--temperature", "0.9", "--seed", "5",
                                "--lane", "fast", "-t", str(t), "--json"],
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
              "and 7 threads" % quant, json.dumps(runs))
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
    want = {"fast": ("fast", "fast/1"), "scalar": ("scalar", "scalar-f32/1")}
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
          b.get("lane") == "fast" and b.get("profile") == "fast/1" and
          all(b[k] > 0 for k in keys if k not in ("lane", "isa")),
          "bench --json has %s" % ", ".join(keys), p.stdout + p.stderr)
    for flags in (["-t", "0"], ["-t", "257"], ["--lane", "x"], ["--threads"]):
        p = subprocess.run([tinylm, "run", models["bf16"]["q8"], "--prompt", "x", *flags],
                           capture_output=True, text=True)
        check(p.returncode == 2 and p.stderr.startswith("error: usage:"),
              "run %s: usage error" % " ".join(flags), "exit %d %s" % (p.returncode, p.stderr))
    print("%d passed, %d failed" % (ft.passed, ft.failed))
    return 1 if ft.failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: fast_test.py TINYLM WORKDIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
