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
  * `promote status` on a store `tinylm promote` made of a synthetic tiny
    model (artifact, eos, replay, a 2-seed, one-token stochastic claim), against
    its plan edited here (case ids re-derived as docs/promotion.md defines
    them): under that plan every receipt is current; a tolerance change,
    a case added, another design, a claim removed, another artifact
    (--artifact), another build (this writer's store) each invalidate
    exactly the receipts that evaluated the changed input, naming it with
    its old and new value; a damaged receipt is refused (exit 1).

The store written here holds real observations in the formats the judges
read (an artifact line, tokenizer lines, multiturn entries), because
`promote show` judges every comparison again from them and its plan.

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
from tiny_plan import tiny_plan  # noqa: E402

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


def canon(o):
    """jansson's compact, key-sorted JSON (tl_plan_canonical; ASCII here)."""
    return json.dumps(o, separators=(",", ":"), sort_keys=True).encode()


def content_id(c):
    """docs/promotion.md: SHA-256 of the case as compact JSON, keys sorted."""
    return sha(json.dumps(c, separators=(",", ":"), sort_keys=True,
                          ensure_ascii=False).encode())


# The cases, each with the raw output this writer observes for it, in the
# formats the judges read (docs/promotion.md §What each claim stores): the
# artifact's check found nothing; the tokenizer's case 2 is given other
# ids than it expects (its name, a user's text, is quoted by the first
# divergence); every next turn of multiturn is equal with the prefix
# reused. Stochastic is registered and, after a mechanical failure, not run.
def tok_case(i):
    name = "case %d" % i + (" " + SECRET if i == 2 else "")
    return {"name": name, "text": "ab", "ids": [97, 98], "offsets": [[0, 1], [1, 2]],
            "decode_raw_hex": "6162", "decode_visible_hex": "6162"}


def case_body(i):
    if i == 0:
        return {"check": "verify"}
    if i <= 3:
        return tok_case(i)
    if i <= 6:
        return {"messages": [{"role": "user", "content": "turn %d" % i}], "next_user": "more",
                "max_new": 2, "enable_thinking": False}
    return {"messages": [{"role": "user", "content": "prompt %d" % i}], "enable_thinking": False}


def raw_output(i):
    """Case i's entry of its claim's observation."""
    cid = content_id(case_body(i)).hex()
    if i == 0:
        return {"case": cid, "problem": None}
    if i <= 3:
        return {"case": cid, "ids": [97, 99] if i == 2 else [97, 98],
                "offsets": [[0, 1], [1, 2]], "decode_raw_hex": "6162",
                "decode_visible_hex": "6162"}
    turn = {"ids": [5, 6], "raw": "0506", "logits_sha256": sha(b"logits %d" % i).hex()}
    return {"case": cid, "reused": dict(turn, reused_tokens=4), "recomputed": turn}


DESIGN = {"seeds": {"base": 1, "count": 4, "derivation": "seed_i = base + i"},
          "max_new": 8}
CLAIMS = [("artifact", "artifact", "mechanical", None, [0]),
          ("tokenizer", "tokenizer", "mechanical", None, [1, 2, 3]),
          ("multiturn", "multiturn", "multiturn", None, [4, 5, 6]),
          ("stochastic", "stochastic", "stochastic", None, [7, 8], DESIGN)]


def plan_bytes(claims=CLAIMS, artifact=ARTIFACT):
    """A tinylm.plan/1 document registering the claims of build()."""
    return json.dumps({
        "format": "tinylm.plan/1",
        "artifact": {"id": artifact.hex(), "path": "model.slm",
                     "acquisition_receipt": None},
        "lane": "scalar",
        "claims": [{"name": n, "kind": k, "level": lv, "oracle": "oracle of " + n + " " + SECRET,
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


INVARIANT = {"artifact": "verify", "tokenizer": "ids_offsets_decodes",
             "multiturn": "reuse_equals_recompute"}


def case(i, ok=True):
    """A case as the evidence node lists it: a line judge's output is the
    SHA-256 of its line, multiturn's of its entry."""
    kind = "artifact" if i == 0 else "tokenizer" if i <= 3 else "multiturn"
    return {"id": content_id(case_body(i)), "invariant": INVARIANT[kind], "pass": ok,
            "output": sha(canon(raw_output(i)))}


def build(where):
    """A store with the plan, three claims' observations and comparisons
    (tokenizer failed), and the promotion over them (stochastic not run)."""
    shutil.rmtree(where, ignore_errors=True)
    s = Store(where)
    s.put(plan_bytes())
    lines = {"artifact": [0], "tokenizer": [1, 2, 3]}
    obs = {c: s.put(b"".join(canon(raw_output(i)) + b"\n" for i in ix))
           for c, ix in lines.items()}
    obs["multiturn"] = s.put(canon({"cases": [raw_output(i) for i in (4, 5, 6)]}))
    cmps = {
        "artifact": comparison("artifact", "artifact", "mechanical", "pass",
                               [case(0)], obs["artifact"], summary_text="1 of 1 cases passed"),
        "tokenizer": comparison("tokenizer", "tokenizer", "mechanical", "fail",
                                [case(1), case(2, False), case(3)], obs["tokenizer"],
                                rule="mechanical_mismatch",
                                divergence="tokenizer case case 2 " + SECRET +
                                ": ids differ at token 1 (expected 2 tokens, got 2)",
                                summary_text="2 of 3 cases passed"),
        "multiturn": comparison("multiturn", "multiturn", "multiturn", "pass",
                                [case(4), case(5), case(6)], obs["multiturn"])}
    for doc in cmps.values():
        s.put_receipt(doc)
    run_record = s.put(b'{"attempts": "as the run recorded them"}')
    entries = [{"claim": c, "receipt_id": d["root"],
                "verdict": d["nodes"][5]["metadata"]["verdict"],
                "stop_rule": d["nodes"][5]["metadata"]["stop_rule"]}
               for c, d in cmps.items()]
    promo = promotion([c[0] for c in CLAIMS], entries, run_record)
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
          out.get("decision") == "not_promoted" and out.get("failing") == ["tokenizer", "stochastic"] and
          claims.get("tokenizer", {}).get("verdict") == "fail" and
          claims["tokenizer"].get("stop_rule") == "mechanical_mismatch" and
          claims.get("multiturn", {}).get("verdict") == "pass" and
          claims.get("stochastic") == {"claim": "stochastic", "verdict": "not_run"} and
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
          SECRET in claims["tokenizer"].get("first_divergence", "") and
          claims["tokenizer"].get("summary") == "2 of 3 cases passed",
          json.dumps(claims["tokenizer"]))
    t = tinylm("promote", "show", path)
    text = t.stdout.decode()
    check("text: the decision, each claim, the first divergence",
          t.returncode == 0 and "decision not_promoted" in text and
          "tokenizer    fail  stop rule mechanical_mismatch" in text and
          "first divergence: \"tokenizer case case 2 " + SECRET in text and
          case(2)["id"].hex() in text, text + t.stderr.decode())
    # --public: ids, hashes, invariants, verdicts; no free text.
    pp, pub = show_json(path, "--public")
    tp = tinylm("promote", "show", path, "--public")
    both = pp.stdout.decode() + tp.stdout.decode()
    check("--public never shows the summary, the first divergence or the oracle",
          pp.returncode == 0 and tp.returncode == 0 and SECRET not in both and
          "2 of 3 cases passed" not in both and
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
    p, out = show_json(s.receipt_path(cmps["multiturn"]["root"]))
    check("promote show verifies a comparison receipt and its observations",
          p.returncode == 0 and out is not None and out["claims"][0]["claim"] == "multiturn",
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
    f["nodes"][4]["metadata"].update(failing=["stochastic"], stop_rules=[])
    rehash(f)
    p, out = receipt_show(f, "forged-promotion")
    check("a promotion that says tokenizer passed, ids recomputed, verifies alone",
          p.returncode == 0, repr(out))
    forged_path = s.put_receipt(f)
    expect_refused("promote show against the comparison", [forged_path], "conflict",
                   "forged_evidence", "tokenizer")
    os.remove(forged_path)
    # The raw observation made to pass (case 2's ids the expected ones)
    # under a receipt that still says fail, every id recomputed: judged
    # again from its observation, the claim passes; the receipt lies.
    good2 = dict(raw_output(2), ids=[97, 98])
    new_obs = s.put(b"".join(canon(x) + b"\n" for x in (raw_output(1), good2, raw_output(3))))
    d = copy.deepcopy(tok)
    d["nodes"][4]["metadata"]["observations"] = [new_obs]
    d["nodes"][4]["metadata"]["cases"][1]["output"] = sha(canon(good2))
    rehash(d)
    s.put_receipt(d)
    f = copy.deepcopy(promo)
    f["nodes"][3]["metadata"]["receipts"][1]["receipt_id"] = d["root"]
    rehash(f)
    forged_path = s.put_receipt(f)
    expect_refused("an observation that passes under a receipt that says fail", [forged_path],
                   "conflict", "forged_evidence", "tokenizer")
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
    obj = os.path.join(s.path, "objects", obs["multiturn"].hex())
    os.rename(obj, obj + ".away")
    expect_refused("a missing observation", [path], "not_found", "missing_raw_output",
                   "multiturn")
    with open(obj, "wb") as fh:
        fh.write(b"other bytes")
    expect_refused("a damaged observation", [path], "hash_mismatch",
                   "missing_raw_output", "multiturn")
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


def tiny_promotion():
    """A plan of the synthetic tiny model (artifact, eos, replay and a
    2-seed, one-token stochastic claim) and the store tinylm promote made of it."""
    made = tiny_plan(tinylm, WORK, ("artifact", "eos", "replay", "stochastic"), seeds=2)
    if made is None:
        return None
    doc = made[1]
    store = os.path.join(WORK, "status-store")
    plan = write_plan(doc)
    p = subprocess.run([TINYLM, "promote", plan, "--store", store, "--json"],
                       capture_output=True, timeout=600)
    # promoted or not (the stochastic verdict is not what this tests)
    if not check("promote on the tiny model writes a store", p.returncode in (0, 1),
                 p.stderr[-2000:]):
        return None
    return doc, store


def write_plan(doc):
    path = os.path.join(WORK, "plan.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def edited(doc, kind, **fields):
    """The plan with kind's claim's fields replaced (cases: re-identified)."""
    d = copy.deepcopy(doc)
    for c in d["claims"]:
        if c["kind"] == kind:
            c.update(fields)
            c["cases"] = [{"id": content_id(x["case"]).hex(), "case": x["case"]}
                          for x in c["cases"]]
    return d


def test_status():
    empty = os.path.join(WORK, "empty-store")
    Store(empty)
    p, out = status("--store", empty)
    if not check("status of an empty store: a listing, exit 0",
                 p.returncode == 0 and out is not None and out["receipts"] == [],
                 (p.stdout + p.stderr).decode(errors="replace")):
        return
    made = tiny_promotion()
    if made is None:
        return
    doc, store = made
    plan = write_plan(doc)
    with open(plan, "rb") as f:
        plan_id = sha(f.read()).hex()
    p, out = status("--store", store, "--plan", plan)
    ok = p.returncode == 0 and out is not None
    check("against the plan they were made under, every receipt is current",
          ok and out["current"] == 5 and out["invalidated"] == 0 and out["refused"] == 0 and
          out["plan_id"] == plan_id and out["artifact_id"] == doc["artifact"]["id"],
          (p.stdout + p.stderr).decode(errors="replace")[:3000])
    # A tolerance policy change: the replay comparison and the promotion.
    plan = write_plan(edited(doc, "replay", tolerance="scalar-f32-vs-f64/1"))
    p, out = status("--store", store, "--plan", plan)
    r = by_claim(out or {})
    fw = r.get("replay", {}).get("invalidated_by", [{}])
    check("a tolerance change invalidates the replay comparison (was, now) and the "
          "promotion (plan, comparison); the others stay current with a note",
          p.returncode == 0 and ancestors(r.get("replay", {})) == ["tolerance"] and
          fw[0].get("was") == "replay-f32/1" and fw[0].get("now") == "scalar-f32-vs-f64/1" and
          ancestors(r.get("promotion", {})) == ["plan", "comparison"] and
          r.get("eos", {}).get("status") == "current" and
          "note" in r.get("eos", {}), json.dumps(out)[:3000])
    t = tinylm("promote", "status", "--store", store, "--plan", plan)
    check("text: the changed ancestor named with its values",
          t.returncode == 0 and
          'invalidated: tolerance (was "replay-f32/1", now "scalar-f32-vs-f64/1")'
          in t.stdout.decode(),
          t.stdout.decode() + t.stderr.decode())
    # None named: promote resolves it to the profile the claim is judged by
    # (replay-f32/1 for the replay; the lane's for forward and greedy).
    plan = write_plan(edited(doc, "replay", tolerance=None))
    p, out = status("--store", store, "--plan", plan)
    check("no profile named: resolved as promote resolves it, the replay comparison current",
          by_claim(out or {}).get("replay", {}).get("status") == "current",
          json.dumps(out)[:3000])
    # Another case set.
    eos = next(c for c in doc["claims"] if c["kind"] == "eos")
    plan = write_plan(edited(doc, "eos", cases=eos["cases"] + [
        {"case": dict(eos["cases"][0]["case"], end_of_turn=0)}]))
    p, out = status("--store", store, "--plan", plan)
    r = by_claim(out or {})
    check("a case added invalidates that claim's comparison (cases)",
          ancestors(r.get("eos", {})) == ["cases"] and
          r.get("artifact", {}).get("status") == "current", json.dumps(out)[:3000])
    # Another stochastic design (registered before anything ran).
    st = next(c for c in doc["claims"] if c["kind"] == "stochastic")
    plan = write_plan(edited(doc, "stochastic", design=dict(st["design"], max_new=16)))
    p, out = status("--store", store, "--plan", plan)
    r = by_claim(out or {})
    check("another stochastic design invalidates the stochastic comparison (design)",
          ancestors(r.get("stochastic", {})) == ["design"] and
          r["stochastic"]["invalidated_by"][0]["was"] !=
          r["stochastic"]["invalidated_by"][0]["now"],
          json.dumps(out)[:3000])
    # A claim removed.
    d = copy.deepcopy(doc)
    d["claims"] = [c for c in d["claims"] if c["kind"] != "replay"]
    plan = write_plan(d)
    p, out = status("--store", store, "--plan", plan)
    check("a claim no longer in the plan (claim)",
          ancestors(by_claim(out or {}).get("replay", {})) == ["claim"],
          json.dumps(out)[:3000])
    # Another artifact, given as a file.
    other = os.path.join(WORK, "other.slm")
    with open(other, "wb") as f:
        f.write(b"another artifact's bytes")
    p, out = status("--store", store, "--artifact", other)
    check("--artifact: another artifact invalidates every receipt (artifact; now its "
          "SHA-256)", p.returncode == 0 and out is not None and
          all(ancestors(x)[:1] == ["artifact"] for x in out["receipts"]) and
          out["artifact_id"] == sha(b"another artifact's bytes").hex(),
          json.dumps(out)[:3000])
    # Without a plan: the build alone; receipts of another build (this
    # file's writer names its own).
    build(os.path.join(WORK, "store"))
    p, out = status("--store", os.path.join(WORK, "store"))
    check("receipts of another build are invalidated (build)",
          p.returncode == 0 and out is not None and out["receipts"] and
          all(ancestors(x)[0] == "build" for x in out["receipts"]), json.dumps(out)[:3000])
    # A damaged receipt: refused, exit 1, the others still listed.
    eos_id = r["eos"]["id"]
    art_id = r["artifact"]["id"]
    target = os.path.join(store, "receipts", eos_id + ".cbor")
    os.chmod(target, 0o600)
    with open(os.path.join(store, "receipts", art_id + ".cbor"), "rb") as f:
        other_bytes = f.read()
    with open(target, "wb") as f:
        f.write(other_bytes)
    p, out = status("--store", store)
    refused = [x for x in (out or {}).get("receipts", []) if x["status"] == "refused"]
    check("a receipt whose bytes are not its name: refused (exit 1), the rest listed",
          p.returncode == 1 and len(refused) == 1 and refused[0]["id"] == eos_id and
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
