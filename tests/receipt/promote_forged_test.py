#!/usr/bin/python3
"""Comparison and promotion receipts (docs/promotion.md, docs/promotion-
receipts.md), written here by an independent writer (this file's own
deterministic CBOR and node ids, forged_test.py's) into an evidence store
laid out as the spec says, then read by the CLI:

  * `receipt show` verifies each with the root computed here (two
    writers, one id);
  * `promote show` verifies the promotion and the evidence it names in
    the store (found from the receipt's own directory or --store) and
    prints the decision, each claim's verdict, stop rule, first
    divergence, summary and cases; `--public` never prints the summary,
    the first divergence or the oracle (a planted secret stays out) but
    every case id, invariant, pass/fail and output hash;
  * a changed value with the ids left alone is hash_mismatch, for every
    metadata field of both formats;
  * forgeries with every id recomputed: a promotion that says promoted
    over a failed claim is invalid_argument naming the decision; a
    comparison passed off as a pass is a valid receipt with another root,
    and `promote show` refuses it (forged_evidence naming the claim) in
    place of the original, as it refuses a promotion that names a
    verdict its comparison does not say;
  * a missing or damaged observation, or run record, is
    missing_raw_output naming the claim; a missing comparison receipt is
    forged_evidence.

    promote_forged_test.py TINYLM WORKDIR
"""

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
sys.path.insert(0, HERE)
from checks import check, summary  # noqa: E402
from forged_test import enc, node_id, rehash  # noqa: E402

SECRET = "SECRET-CASE-TEXT: the user's own prompt"


def tinylm(*args):
    return subprocess.run([TINYLM, *args], capture_output=True, timeout=120)


def sha(b):
    return hashlib.sha256(b).digest()


def graph(fmt, nodes):
    """nodes: [(type, metadata)], the last the root with all others as
    children (both formats)."""
    out = []
    for i, (t, meta) in enumerate(nodes):
        kids = [n["id"] for n in out] if i == len(nodes) - 1 else []
        n = {"type": t, "metadata": meta, "children": kids}
        n["id"] = node_id(n)
        out.append(n)
    return {"format": fmt, "root": out[-1]["id"], "nodes": out}


ARTIFACT = sha(b"an artifact")
PLAN = sha(b"a plan")
RUNTIME = {"name": "tinylm", "version": "0.1.0", "build_id": "py-writer",
           "backend": "scalar", "numerical_profile": "scalar-f32/1"}


def comparison(claim, kind, level, verdict, cases, observation, tolerance=None,
               rule=None, divergence=None, summary_text="3 of 3 cases"):
    return graph("tinylm.comparison/1", [
        ("artifact", {"artifact_id": ARTIFACT}),
        ("runtime", dict(RUNTIME)),
        ("plan", {"plan_id": PLAN, "claim": claim, "kind": kind, "level": level,
                  "oracle": "oracle of " + claim + " " + SECRET}),
        ("policy", {"tolerance": tolerance, "design_sha256": None}),
        ("evidence", {"cases": cases, "observations": [observation]}),
        ("comparison", {"verdict": verdict, "stop_rule": rule,
                        "first_divergence": divergence, "summary": summary_text,
                        "attempt": 1})])


def promotion(claims, entries, run_record):
    failing = [c for c in claims
               if not any(e["claim"] == c and e["verdict"] == "pass" for e in entries)]
    return graph("tinylm.promotion/1", [
        ("artifact", {"artifact_id": ARTIFACT}),
        ("runtime", dict(RUNTIME)),
        ("plan", {"plan_id": PLAN, "lane": "scalar", "claims": claims}),
        ("comparisons", {"receipts": entries}),
        ("promotion", {"decision": "not_promoted" if failing else "promoted",
                       "failing": failing,
                       "stop_rules": [{"rule": e["stop_rule"], "claim": e["claim"]}
                                      for e in entries if e["stop_rule"]],
                       "run_record": run_record})])


class Store:
    def __init__(self, path):
        self.path = path
        for sub in ("objects", "receipts"):
            os.makedirs(os.path.join(path, sub), exist_ok=True)

    def put(self, data):
        name = sha(data)
        with open(os.path.join(self.path, "objects", name.hex()), "wb") as f:
            f.write(data)
        return name

    def receipt_path(self, root):
        return os.path.join(self.path, "receipts", root.hex() + ".cbor")

    def put_receipt(self, doc, data=None):
        with open(self.receipt_path(doc["root"]), "wb") as f:
            f.write(enc(doc) if data is None else data)
        return self.receipt_path(doc["root"])


def case(i, ok=True):
    return {"id": sha(b"case %d" % i), "invariant": "ids", "pass": ok,
            "output": sha(b"output %d" % i)}


def build(where):
    """A store with three claims (one failed) and the promotion over them."""
    shutil.rmtree(where, ignore_errors=True)
    s = Store(where)
    obs = {c: s.put(("raw outputs of " + c).encode()) for c in ("artifact", "tokenizer",
                                                                "forward")}
    cmps = {
        "artifact": comparison("artifact", "artifact", "mechanical", "pass",
                               [case(0)], obs["artifact"], summary_text="1 of 1 cases"),
        "tokenizer": comparison("tokenizer", "tokenizer", "mechanical", "fail",
                                [case(1), case(2, False), case(3)], obs["tokenizer"],
                                rule="mechanical_mismatch",
                                divergence="case 2: " + SECRET,
                                summary_text="2 of 3 cases " + SECRET),
        "forward": comparison("forward", "forward", "numerical", "pass",
                              [case(4), case(5), case(6)], obs["forward"],
                              tolerance="scalar-f32/1")}
    for doc in cmps.values():
        s.put_receipt(doc)
    run_record = s.put(b'{"attempts": "as the run recorded them"}')
    entries = [{"claim": c, "receipt_id": d["root"],
                "verdict": d["nodes"][5]["metadata"]["verdict"],
                "stop_rule": d["nodes"][5]["metadata"]["stop_rule"]}
               for c, d in cmps.items()]
    promo = promotion(list(cmps), entries, run_record)
    path = s.put_receipt(promo)
    return s, cmps, promo, path, obs, run_record


def show_json(*args):
    p = tinylm("promote", "show", *args, "--json")
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        return p, None


def expect_refused(name, args, code, rule, claim):
    p, out = show_json(*args)
    t = tinylm("promote", "show", *args)
    err = t.stderr.decode(errors="replace")
    ok = (p.returncode == 1 and isinstance(out, dict) and out.get("error") == code and
          out.get("rule") == rule and out.get("claim") == claim)
    ok_text = (t.returncode == 1 and t.stdout == b"" and
               err.startswith(f"error: {code}: {rule}: claim '{claim}'"))
    check(f"{name}: {code} / {rule} naming {claim!r}", ok and ok_text,
          (p.stdout + p.stderr).decode(errors="replace") + " | " + err)


def test_independent_writer():
    s, cmps, promo, path, _, _ = build(os.path.join(WORK, "store"))
    for name, doc in list(cmps.items()) + [("promotion", promo)]:
        p = tinylm("receipt", "show", s.receipt_path(doc["root"]), "--json")
        try:
            out = json.loads(p.stdout)
        except ValueError:
            out = {}
        check(f"receipt show verifies the {name} receipt written here, with its root",
              p.returncode == 0 and out.get("verified") is True and
              out.get("root") == doc["root"].hex(), p.stderr.decode(errors="replace"))
    t = tinylm("receipt", "show", path)
    text = t.stdout.decode()
    check("receipt show's text names the promotion and its decision",
          t.returncode == 0 and text.startswith("promotion receipt " + promo["root"].hex())
          and "decision=\"not_promoted\"" in text, text + t.stderr.decode())


def test_show():
    s, cmps, promo, path, obs, _ = build(os.path.join(WORK, "store"))
    p, out = show_json(path)
    ok = p.returncode == 0 and isinstance(out, dict)
    check("promote show verifies the promotion and its evidence (store found from the "
          "receipt's directory)", ok, (p.stdout + p.stderr).decode(errors="replace"))
    if not ok:
        return
    claims = {c["claim"]: c for c in out.get("claims", [])}
    check("the view: decision, failing, each claim's verdict and stop rule",
          out.get("decision") == "not_promoted" and out.get("failing") == ["tokenizer"] and
          claims.get("tokenizer", {}).get("verdict") == "fail" and
          claims["tokenizer"].get("stop_rule") == "mechanical_mismatch" and
          claims.get("forward", {}).get("tolerance") == "scalar-f32/1" and
          claims.get("artifact", {}).get("receipt_id") == cmps["artifact"]["root"].hex(),
          json.dumps(out)[:2000])
    check("the view: cases with ids, invariants, verdicts, output hashes; observations",
          [c["id"] for c in claims["tokenizer"]["cases"]] ==
          [case(i)["id"].hex() for i in (1, 2, 3)] and
          claims["tokenizer"]["cases"][1]["pass"] is False and
          claims["tokenizer"]["cases"][1]["output"] == case(2)["output"].hex() and
          claims["tokenizer"]["observations"] == [obs["tokenizer"].hex()],
          json.dumps(claims.get("tokenizer"))[:2000])
    check("the full view shows the first divergence and the summary",
          claims["tokenizer"].get("first_divergence") == "case 2: " + SECRET and
          SECRET in claims["tokenizer"].get("summary", ""), json.dumps(claims["tokenizer"]))
    t = tinylm("promote", "show", path)
    text = t.stdout.decode()
    check("text: the decision, each claim, the first divergence",
          t.returncode == 0 and "decision not_promoted" in text and
          "tokenizer    fail  stop rule mechanical_mismatch" in text and
          "first divergence: \"case 2: " + SECRET in text and
          case(2)["id"].hex() in text, text + t.stderr.decode())
    # --public: ids, hashes, invariants, verdicts; no free text.
    pp, pub = show_json(path, "--public")
    tp = tinylm("promote", "show", path, "--public")
    both = pp.stdout.decode() + tp.stdout.decode()
    check("--public never shows the summary, the first divergence or the oracle",
          pp.returncode == 0 and tp.returncode == 0 and SECRET not in both and
          "first divergence" not in tp.stdout.decode() and
          all(k not in c for c in (pub or {}).get("claims", [{}])
              for k in ("summary", "first_divergence", "oracle")), both[:3000])
    check("--public shows every case id, invariant, pass/fail and output hash",
          pub is not None and pub.get("public") is True and
          all(case(i)["id"].hex() in both and case(i)["output"].hex() in both
              for i in range(7)) and
          [c["pass"] for c in pub["claims"][1]["cases"]] == [True, False, True], both[:3000])
    # Elsewhere than STORE/receipts/: --store is needed.
    other = os.path.join(WORK, "elsewhere.cbor")
    shutil.copy(path, other)
    p = tinylm("promote", "show", other)
    check("a receipt outside a store's receipts/ needs --store (usage, 2)",
          p.returncode == 2 and b"--store" in p.stderr, p.stderr.decode(errors="replace"))
    p = tinylm("promote", "show", other, "--store", s.path)
    check("... and verifies with it", p.returncode == 0, p.stderr.decode(errors="replace"))
    # A comparison receipt alone.
    p, out = show_json(s.receipt_path(cmps["forward"]["root"]))
    check("promote show verifies a comparison receipt and its observations",
          p.returncode == 0 and out is not None and out["claims"][0]["claim"] == "forward",
          (p.stdout + p.stderr).decode(errors="replace"))


def leaves(meta, prefix=()):
    for k, v in meta.items():
        if isinstance(v, dict):
            yield from leaves(v, prefix + (k,))
        else:
            yield prefix + (k,)


def changed(v, key):
    if v is None:  # of its type: a digest or a text
        return sha(b"x") if key.endswith("sha256") else "x"
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, bytes):
        return bytes([v[0] ^ 1]) + v[1:]
    if isinstance(v, str):
        return v + "x"
    if isinstance(v, list):
        return v[:-1] if v else ["x"]
    raise TypeError(type(v))


def receipt_show(doc, name):
    path = os.path.join(WORK, name + ".cbor")
    with open(path, "wb") as f:
        f.write(enc(doc))
    p = tinylm("receipt", "show", path, "--json")
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        return p, {}


def test_unhashed_changes():
    _, cmps, promo, _, _, _ = build(os.path.join(WORK, "store"))
    for fmt, doc in (("comparison", cmps["tokenizer"]), ("promotion", promo)):
        bad = []
        for i, n in enumerate(doc["nodes"]):
            for path in leaves(n["metadata"]):
                d = copy.deepcopy(doc)
                m = d["nodes"][i]["metadata"]
                for k in path[:-1]:
                    m = m[k]
                m[path[-1]] = changed(m[path[-1]], path[-1])
                p, out = receipt_show(d, "unhashed")
                if not (p.returncode == 1 and out.get("error") == "hash_mismatch" and
                        f"nodes[{i}] ({n['type']})" in out.get("detail", "")):
                    bad.append((n["type"], path, out))
        check(f"every {fmt} metadata value changed with the ids left alone is "
              "hash_mismatch naming the node", not bad, repr(bad[:3]))


def test_forgeries():
    s, cmps, promo, path, obs, run_record = build(os.path.join(WORK, "store"))
    tok = cmps["tokenizer"]
    # The verdict changed, the ids left alone, in the store under its name.
    d = copy.deepcopy(tok)
    d["nodes"][5]["metadata"]["verdict"] = "pass"
    p, out = receipt_show(d, "forged-verdict")
    check("a comparison's verdict changed, ids left alone: hash_mismatch",
          p.returncode == 1 and out.get("error") == "hash_mismatch", repr(out))
    s.put_receipt(tok, enc(d))
    expect_refused("that comparison in the store", [path], "hash_mismatch",
                   "forged_evidence", "tokenizer")
    # Passed off whole with every id recomputed: a valid receipt with
    # another root, refused against the promotion that names the original.
    d = copy.deepcopy(tok)
    m = d["nodes"][5]["metadata"]
    m.update(verdict="pass", stop_rule=None, first_divergence=None)
    for c in d["nodes"][4]["metadata"]["cases"]:
        c["pass"] = True
    rehash(d)
    p, out = receipt_show(d, "forged-rehashed")
    check("a comparison passed off as a pass, ids recomputed: verifies, another root",
          p.returncode == 0 and out.get("root") == d["root"].hex() != tok["root"].hex(),
          repr(out))
    s.put_receipt(tok, enc(d))
    expect_refused("it in place of the original", [path], "hash_mismatch",
                   "forged_evidence", "tokenizer")
    s.put_receipt(tok)
    # A promotion that names a verdict its comparison does not say (ids
    # recomputed: the promotion itself is consistent).
    f = copy.deepcopy(promo)
    f["nodes"][3]["metadata"]["receipts"][1].update(verdict="pass", stop_rule=None)
    f["nodes"][4]["metadata"].update(decision="promoted", failing=[], stop_rules=[])
    rehash(f)
    p, out = receipt_show(f, "forged-promotion")
    check("a promotion that says tokenizer passed, ids recomputed, verifies alone",
          p.returncode == 0, repr(out))
    forged_path = s.put_receipt(f)
    expect_refused("promote show against the comparison", [forged_path], "conflict",
                   "forged_evidence", "tokenizer")
    os.remove(forged_path)
    # Promoted over a failed claim (ids recomputed): refused by the check.
    f = copy.deepcopy(promo)
    f["nodes"][4]["metadata"]["decision"] = "promoted"
    rehash(f)
    p, out = receipt_show(f, "forged-decision")
    check("promoted over a failed claim, ids recomputed: invalid_argument naming the "
          "decision", p.returncode == 1 and out.get("error") == "invalid_argument" and
          "promotion).metadata.decision" in out.get("detail", ""), repr(out))
    f = copy.deepcopy(promo)
    f["nodes"][4]["metadata"]["stop_rules"] = []
    rehash(f)
    p, out = receipt_show(f, "forged-rules")
    check("a stop rule dropped, ids recomputed: invalid_argument naming stop_rules",
          p.returncode == 1 and out.get("error") == "invalid_argument" and
          "stop_rules" in out.get("detail", ""), repr(out))
    # Missing and damaged evidence.
    obj = os.path.join(s.path, "objects", obs["forward"].hex())
    os.rename(obj, obj + ".away")
    expect_refused("a missing observation", [path], "not_found", "missing_raw_output",
                   "forward")
    with open(obj, "wb") as fh:
        fh.write(b"other bytes")
    expect_refused("a damaged observation", [path], "hash_mismatch",
                   "missing_raw_output", "forward")
    os.rename(obj + ".away", obj)
    rr = os.path.join(s.path, "objects", run_record.hex())
    os.remove(rr)
    expect_refused("a missing run record", [path], "not_found", "missing_raw_output",
                   "(run record)")
    s.put(b'{"attempts": "as the run recorded them"}')
    os.remove(s.receipt_path(cmps["artifact"]["root"]))
    expect_refused("a missing comparison receipt", [path], "not_found", "forged_evidence",
                   "artifact")
    s.put_receipt(cmps["artifact"])
    p, _ = show_json(path)
    check("restored, the store verifies again", p.returncode == 0,
          p.stderr.decode(errors="replace"))


def main():
    global TINYLM, WORK
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    TINYLM = os.path.abspath(sys.argv[1])
    WORK = os.path.abspath(sys.argv[2])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for test in (test_independent_writer, test_show, test_unhashed_changes,
                 test_forgeries):
        try:
            test()
        except Exception as e:  # a crash in one test is one failure
            check(f"{test.__name__} raised", False, repr(e))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
