#!/usr/bin/python3
"""Verdicts judged again from the raw evidence (docs/promotion-receipts.md
§Judged again on every reading): a real promotion of the demo model (q8,
lane fast) whose stochastic claim fails on a design with no tolerated
effect, then forgeries with every node id recomputed (forged_test.py's
rehash), each a receipt graph that the receipt check alone accepts:

  (a) the stochastic failure flipped to pass in its comparison receipt
      and the promotion (promoted);
  (b) the greedy claim's tolerance verdict flipped (a case and the claim
      to fail with tolerance_breach);
  (c) one tokenizer case's pass bit and the claim's verdict flipped;

each refused by `promote show`, `report` and `promote status` with
forged_evidence naming the claim; the unforged promotion verifies.

    promote_rejudge_test.py TINYLM WORKDIR
"""

import json
import os
import shutil
import subprocess
import sys

import cbor2

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
sys.path.insert(0, HERE)
from checks import check, summary  # noqa: E402
from forged_test import enc, rehash  # noqa: E402


def tinylm(*args, timeout=600):
    return subprocess.run([TINYLM, *args], capture_output=True, timeout=timeout)


def load(path):
    with open(path, "rb") as f:
        return cbor2.loads(f.read())


def node(doc, t):
    return next(n for n in doc["nodes"] if n["type"] == t)


def put(store, doc):
    """Writes a forged receipt under its (recomputed) root id."""
    rehash(doc)
    path = os.path.join(store, "receipts", doc["root"].hex() + ".cbor")
    with open(path, "wb") as f:
        f.write(enc(doc))
    return path


def forge(store, promo_path, claim, edit_cmp, edit_promo):
    """A copy of the store with claim's comparison edited (edit_cmp on its
    comparison root and evidence metadata) and a promotion naming it."""
    promo = load(promo_path)
    entry = next(e for e in node(promo, "comparisons")["metadata"]["receipts"]
                 if e["claim"] == claim)
    cmp = load(os.path.join(store, "receipts", entry["receipt_id"].hex() + ".cbor"))
    edit_cmp(node(cmp, "comparison")["metadata"], node(cmp, "evidence")["metadata"])
    put(store, cmp)
    root = node(cmp, "comparison")["metadata"]
    entry["receipt_id"] = cmp["root"]
    entry["verdict"] = root["verdict"]
    entry["stop_rule"] = root["stop_rule"]
    edit_promo(node(promo, "promotion")["metadata"])
    return put(store, promo)


def refused_everywhere(name, store, promo_path, claim):
    r = tinylm("promote", "show", promo_path, "--json")
    out = json.loads(r.stdout or b"{}")
    check(f"{name}: promote show refuses it (exit 1)", r.returncode == 1, r.stderr[-300:])
    check(f"{name}: promote show names forged_evidence and the claim",
          out.get("rule") == "forged_evidence" and out.get("claim") == claim, out)
    r = tinylm("report", promo_path, "-o", os.path.join(WORK, name + ".html"), "--force")
    err = r.stderr.decode()
    check(f"{name}: report refuses it (exit 1, nothing written)",
          r.returncode == 1 and not os.path.exists(os.path.join(WORK, name + ".html")), err)
    check(f"{name}: report says forged_evidence and the claim",
          "forged_evidence" in err and f"claim '{claim}'" in err, err)
    r = tinylm("promote", "status", "--store", store, "--json")
    listing = json.loads(r.stdout or b"{}")
    refused = [e for e in listing.get("receipts", []) if e.get("status") == "refused"]
    check(f"{name}: promote status refuses the forged comparison (exit 1)",
          r.returncode == 1 and any("forged_evidence" in e.get("detail", "") and
                                    f"claim '{claim}'" in e.get("detail", "")
                                    for e in refused), refused)


def main():
    global TINYLM, WORK
    TINYLM, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    demo = subprocess.run([os.path.join(ROOT, "scripts", "demo_model.sh"), TINYLM,
                           os.path.join(WORK, "demo")], capture_output=True, check=True)
    slm = demo.stdout.decode().strip().splitlines()[-1]
    plan_path = os.path.join(WORK, "plan.json")
    r = tinylm("plan", "init", slm, "-o", plan_path, "--no-benchmark")
    check("plan init", r.returncode == 0, r.stderr)
    with open(plan_path) as f:
        plan = json.load(f)
    # A small plan: two mechanical claims, greedy, and a stochastic design
    # that tolerates no distance at all between the lanes (so it fails on
    # their tiny real differences: stochastic_difference).
    plan["claims"] = [c for c in plan["claims"]
                      if c["kind"] in ("artifact", "tokenizer", "greedy", "stochastic")]
    for c in plan["claims"]:
        if c["kind"] == "stochastic":
            c["design"]["distributions"]["min_tvd"] = "0"
    with open(plan_path, "w") as f:
        json.dump(plan, f, indent=1, sort_keys=True)
    store = os.path.join(WORK, "store")
    r = tinylm("promote", plan_path, "--store", store, "--json")
    out = json.loads(r.stdout or b"{}")
    verdicts = {c["claim"]: c["verdict"] for c in out.get("claims", [])}
    check("the stochastic claim alone fails",
          r.returncode == 1 and verdicts == {"artifact": "pass", "tokenizer": "pass",
                                             "greedy": "pass", "stochastic": "fail"},
          verdicts)
    promo = out["path"]
    r = tinylm("promote", "show", promo)
    check("the real promotion verifies (judged again, the same verdicts)",
          r.returncode == 0, r.stderr[-400:])

    def copy(name):
        dst = os.path.join(WORK, name)
        shutil.copytree(store, dst)
        return dst, os.path.join(dst, "receipts", os.path.basename(promo))

    def to_pass(root, ev):
        root.update(verdict="pass", stop_rule=None, first_divergence=None)
        for c in ev["cases"]:
            c["pass"] = True

    def promoted(p):
        p.update(decision="promoted", failing=[], stop_rules=[])

    s, p = copy("a-stochastic")
    refused_everywhere("(a) stochastic flipped to pass", s,
                       forge(s, p, "stochastic", to_pass, promoted), "stochastic")

    def fail_first(rule, text):
        def edit(root, ev):
            root.update(verdict="fail", stop_rule=rule, first_divergence=text)
            ev["cases"][0]["pass"] = False
        return edit

    def not_promoted(claim, rule):
        def edit(p):
            p["failing"] = [claim, "stochastic"]
            p["stop_rules"] = [{"rule": rule, "claim": claim},
                               {"rule": "stochastic_difference", "claim": "stochastic"}]
        return edit

    s, p = copy("b-greedy")
    refused_everywhere("(b) greedy tolerance verdict flipped", s,
                       forge(s, p, "greedy", fail_first("tolerance_breach", "forged"),
                             not_promoted("greedy", "tolerance_breach")), "greedy")
    s, p = copy("c-tokenizer")
    refused_everywhere("(c) a tokenizer case flipped", s,
                       forge(s, p, "tokenizer", fail_first("mechanical_mismatch", "forged"),
                             not_promoted("tokenizer", "mechanical_mismatch")), "tokenizer")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
