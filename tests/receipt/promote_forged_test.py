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
    forged_evidence;
  * `promote status` against a plan written here (its case ids content
    ids as docs/promotion.md defines them): receipts of this build under
    that plan are current; a tolerance change, a case added, a claim
    removed, another artifact (--artifact), another build each invalidate
    exactly the receipts that evaluated the changed input, naming it with
    its old and new value; a damaged receipt is refused (exit 1).

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
from forged_test import enc, leaf_paths, node_id, rehash  # noqa: E402

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
# A build is named by its executable's SHA-256 (docs/promotion.md).
RUNTIME = {"name": "tinylm", "version": "0.1.0",
           "build_id": "sha256:" + hashlib.sha256(b"py-writer").hexdigest(),
           "backend": "scalar", "numerical_profile": "scalar-f32/1"}


def case_body(i):
    return {"text": "case %d" % i}


def content_id(c):
    """docs/promotion.md: SHA-256 of the case as compact JSON, keys sorted."""
    return sha(json.dumps(c, separators=(",", ":"), sort_keys=True,
                          ensure_ascii=False).encode())


DESIGN = {"seeds": {"base": 1, "count": 4, "derivation": "seed_i = base + i"},
          "max_new": 8}
CLAIMS = [("artifact", "artifact", "mechanical", None, [0]),
          ("tokenizer", "tokenizer", "mechanical", None, [1, 2, 3]),
          ("forward", "forward", "numerical", "scalar-f32-vs-f64/1", [4, 5, 6]),
          ("stochastic", "stochastic", "stochastic", None, [7, 8], DESIGN)]


def plan_bytes(claims=CLAIMS, artifact=ARTIFACT):
    """A tinylm.plan/1 document registering the claims of build()."""
    return json.dumps({
        "format": "tinylm.plan/1",
        "artifact": {"id": artifact.hex(), "path": "model.slm",
                     "acquisition_receipt": None},
        "lane": "scalar",
        "claims": [{"name": n, "kind": k, "level": lv, "oracle": "oracle of " + n,
                    "tolerance": tol, "design": design[0] if design else None,
                    "cases": [{"id": content_id(case_body(i)).hex(), "case": case_body(i)}
                              for i in cases]}
                   for n, k, lv, tol, cases, *design in claims]}, indent=1).encode()


PLAN = sha(plan_bytes())


def comparison(claim, kind, level, verdict, cases, observation, tolerance=None,
               rule=None, divergence=None, summary_text="3 of 3 cases", design=None):
    return graph("tinylm.comparison/1", [
        ("artifact", {"artifact_id": ARTIFACT}),
        ("runtime", dict(RUNTIME)),
        ("plan", {"plan_id": PLAN, "claim": claim, "kind": kind, "level": level,
                  "oracle": "oracle of " + claim + " " + SECRET}),
        ("policy", {"tolerance": tolerance,
                    "design_sha256": content_id(design) if design else None}),
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
            os.makedirs(os.path.join(path, sub), mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)  # the store is its owner's alone (custody)

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
    return {"id": content_id(case_body(i)), "invariant": "ids", "pass": ok,
            "output": sha(b"output %d" % i)}


def build(where):
    """A store with four claims (one failed) and the promotion over them."""
    shutil.rmtree(where, ignore_errors=True)
    s = Store(where)
    obs = {c: s.put(("raw outputs of " + c).encode()) for c in ("artifact", "tokenizer",
                                                                "forward", "stochastic")}
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
                              tolerance="scalar-f32-vs-f64/1"),
        "stochastic": comparison("stochastic", "stochastic", "stochastic", "pass",
                                 [case(7), case(8, False)], obs["stochastic"],
                                 design=DESIGN, summary_text="no difference of concern")}
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
          claims.get("forward", {}).get("tolerance") == "scalar-f32-vs-f64/1" and
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
              for i in range(9)) and
          [c["pass"] for c in pub["claims"][1]["cases"]] == [True, False, True], both[:3000])
    # Elsewhere than STORE/receipts/: --store is needed.
    other = os.path.join(WORK, "elsewhere.cbor")
    shutil.copy(path, other)
    p = tinylm("promote", "show", other)
    check("a receipt outside a store's receipts/ needs --store (usage, 2)",
          p.returncode == 2 and b"--store" in p.stderr, p.stderr.decode(errors="replace"))
    p = tinylm("promote", "show", other, "--store", s.path)
    check("... and verifies with it", p.returncode == 0, p.stderr.decode(errors="replace"))
    # A claim that did not run (stochastic, after a mechanical failure):
    # no comparison names it, and it is not a pass.
    names = promo["nodes"][2]["metadata"]["claims"]
    entries = [e for e in promo["nodes"][3]["metadata"]["receipts"]
               if e["claim"] != "stochastic"]
    partial = promotion(names, entries, promo["nodes"][4]["metadata"]["run_record"])
    p, out = show_json(s.put_receipt(partial))
    check("a claim that did not run is shown as not_run and failing",
          p.returncode == 0 and out is not None and
          out["claims"][3] == {"claim": "stochastic", "verdict": "not_run"} and
          out["failing"] == ["tokenizer", "stochastic"],
          (p.stdout + p.stderr).decode(errors="replace")[:2000])
    os.remove(s.receipt_path(partial["root"]))
    # A comparison receipt alone.
    p, out = show_json(s.receipt_path(cmps["forward"]["root"]))
    check("promote show verifies a comparison receipt and its observations",
          p.returncode == 0 and out is not None and out["claims"][0]["claim"] == "forward",
          (p.stdout + p.stderr).decode(errors="replace"))


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
            for path in leaf_paths(n["metadata"]):
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


def status(*args):
    p = tinylm("promote", "status", *args, "--json")
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        return p, None


def by_claim(out):
    return {(r.get("claim") or r.get("kind") or r["id"]): r for r in out.get("receipts", [])}


def ancestors(r):
    return [w["ancestor"] for w in r.get("invalidated_by", [])]


def test_status():
    global RUNTIME
    empty = os.path.join(WORK, "empty-store")
    Store(empty)
    p, out = status("--store", empty)
    if not check("status of an empty store: a listing, exit 0",
                 p.returncode == 0 and out is not None and out["receipts"] == [],
                 (p.stdout + p.stderr).decode(errors="replace")):
        return
    # Receipts of this very build.
    saved = RUNTIME
    RUNTIME = dict(RUNTIME, build_id=out["build_id"])
    try:
        s, cmps, promo, path, _, _ = build(os.path.join(WORK, "status-store"))
    finally:
        RUNTIME = saved
    plan = os.path.join(WORK, "plan.json")
    with open(plan, "wb") as f:
        f.write(plan_bytes())
    p, out = status("--store", s.path, "--plan", plan)
    ok = p.returncode == 0 and out is not None
    check("against the plan they were made under, every receipt is current",
          ok and out["current"] == 5 and out["invalidated"] == 0 and
          out["plan_id"] == PLAN.hex() and out["artifact_id"] == ARTIFACT.hex(),
          (p.stdout + p.stderr).decode(errors="replace"))
    # A tolerance policy change: the forward comparison and the promotion.
    claims = [c if c[0] != "forward" else c[:3] + ("fast-f32-vs-f64/2",) + c[4:]
              for c in CLAIMS]
    with open(plan, "wb") as f:
        f.write(plan_bytes(claims))
    p, out = status("--store", s.path, "--plan", plan)
    r = by_claim(out or {})
    fw = r.get("forward", {}).get("invalidated_by", [{}])
    check("a tolerance change invalidates the forward comparison (was, now) and the "
          "promotion (plan, comparison); the others stay current with a note",
          p.returncode == 0 and ancestors(r.get("forward", {})) == ["tolerance"] and
          fw[0].get("was") == "scalar-f32-vs-f64/1" and fw[0].get("now") == "fast-f32-vs-f64/2" and
          ancestors(r.get("promotion", {})) == ["plan", "comparison"] and
          r.get("tokenizer", {}).get("status") == "current" and
          "note" in r.get("tokenizer", {}), json.dumps(out)[:3000])
    t = tinylm("promote", "status", "--store", s.path, "--plan", plan)
    check("text: the changed ancestor named with its values",
          t.returncode == 0 and
          'invalidated: tolerance (was "scalar-f32-vs-f64/1", now "fast-f32-vs-f64/2")'
          in t.stdout.decode(),
          t.stdout.decode() + t.stderr.decode())
    # No tolerance named: a numerical claim's is the lane's default, as
    # promote resolves it (the scalar lane's scalar-f32-vs-f64/1).
    claims = [c if c[0] != "forward" else c[:3] + (None,) + c[4:] for c in CLAIMS]
    with open(plan, "wb") as f:
        f.write(plan_bytes(claims))
    p, out = status("--store", s.path, "--plan", plan)
    check("no tolerance named: the lane's default, the forward comparison current",
          by_claim(out or {}).get("forward", {}).get("status") == "current",
          json.dumps(out)[:3000])
    # Another case set.
    claims = [c if c[0] != "tokenizer" else c[:4] + ([1, 2, 3, 7],) for c in CLAIMS]
    with open(plan, "wb") as f:
        f.write(plan_bytes(claims))
    p, out = status("--store", s.path, "--plan", plan)
    r = by_claim(out or {})
    check("a case added invalidates that claim's comparison (cases)",
          ancestors(r.get("tokenizer", {})) == ["cases"] and
          r.get("artifact", {}).get("status") == "current", json.dumps(out)[:3000])
    # Another stochastic design (registered before anything ran).
    claims = [c if c[0] != "stochastic" else c[:5] + (dict(DESIGN, max_new=16),)
              for c in CLAIMS]
    with open(plan, "wb") as f:
        f.write(plan_bytes(claims))
    p, out = status("--store", s.path, "--plan", plan)
    r = by_claim(out or {})
    check("another stochastic design invalidates the stochastic comparison (design)",
          ancestors(r.get("stochastic", {})) == ["design"] and
          r["stochastic"]["invalidated_by"][0]["was"] == content_id(DESIGN).hex(),
          json.dumps(out)[:3000])
    # A claim removed.
    with open(plan, "wb") as f:
        f.write(plan_bytes(CLAIMS[:2] + CLAIMS[3:]))
    p, out = status("--store", s.path, "--plan", plan)
    check("a claim no longer in the plan (claim)",
          ancestors(by_claim(out or {}).get("forward", {})) == ["claim"],
          json.dumps(out)[:3000])
    # Another artifact, given as a file.
    other = os.path.join(WORK, "other.slm")
    with open(other, "wb") as f:
        f.write(b"another artifact's bytes")
    p, out = status("--store", s.path, "--artifact", other)
    check("--artifact: another artifact invalidates every receipt (artifact; now its "
          "SHA-256)", p.returncode == 0 and out is not None and
          all(ancestors(x)[:1] == ["artifact"] for x in out["receipts"]) and
          out["artifact_id"] == sha(b"another artifact's bytes").hex(),
          json.dumps(out)[:3000])
    # Without a plan: the build alone; receipts of another build.
    p, out = status("--store", os.path.join(WORK, "store"))
    check("receipts of another build are invalidated (build)",
          p.returncode == 0 and out is not None and out["receipts"] and
          all(ancestors(x)[0] == "build" for x in out["receipts"]), json.dumps(out)[:3000])
    # A damaged receipt: refused, exit 1, the others still listed.
    with open(s.receipt_path(cmps["tokenizer"]["root"]), "wb") as f:
        f.write(enc(cmps["artifact"]))
    p, out = status("--store", s.path)
    r = by_claim(out or {})
    refused = [x for x in (out or {}).get("receipts", []) if x["status"] == "refused"]
    check("a receipt whose bytes are not its name: refused (exit 1), the rest listed",
          p.returncode == 1 and len(refused) == 1 and
          refused[0]["id"] == cmps["tokenizer"]["root"].hex() and
          len(out["receipts"]) == 5, json.dumps(out)[:3000])
    p = tinylm("promote", "status")
    check("status without --store: usage (2)", p.returncode == 2,
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
                 test_forgeries, test_status):
        try:
            test()
        except Exception as e:  # a crash in one test is one failure
            check(f"{test.__name__} raised", False, repr(e))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
