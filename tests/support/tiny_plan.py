"""A plan of the synthetic tiny model, for the promote tests that need a
real store in seconds (custody, receipts, signatures)."""

import json
import os

from checks import check


def tiny_plan(tinylm, work, kinds, seeds=None):
    """synth --config tiny (seed 1) into WORK/hf, convert to WORK/tiny.slm,
    plan init --no-benchmark, then the plan cut to the claims of `kinds`
    (a stochastic one with `seeds` seeds when given) in WORK/plan.json:
    (its path, its document), or None when a step failed (a check says
    which). tinylm(*args) runs the binary under test."""
    hf, slm = os.path.join(work, "hf"), os.path.join(work, "tiny.slm")
    full, plan = os.path.join(work, "full.plan.json"), os.path.join(work, "plan.json")
    for args in (("synth", "--config", "tiny", "--seed", "1", "-o", hf),
                 ("convert", hf, "-o", slm),
                 ("plan", "init", slm, "-o", full, "--no-benchmark")):
        p = tinylm(*args)
        if not check(f"tinylm {args[0]} {args[1]}", p.returncode == 0,
                     (p.stdout + p.stderr).decode(errors="replace")[-2000:]):
            return None
    with open(full) as f:
        doc = json.load(f)
    doc["claims"] = [c for c in doc["claims"] if c["kind"] in kinds]
    for c in doc["claims"]:
        if c["kind"] == "stochastic" and seeds is not None:
            # fewer seeds, one configuration and one token: these tests
            # need the claim's receipts, not its power (the synthetic
            # model's near-uniform draws make every replayed step cost)
            c["design"]["seeds"]["count"] = seeds
            c["design"]["configurations"] = c["design"]["configurations"][:1]
            c["design"]["max_new"] = 1
            c["design"]["distributions"]["trajectories"] = 1
    with open(plan, "w") as f:
        json.dump(doc, f, indent=1)
    return plan, doc
