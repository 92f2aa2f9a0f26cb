#!/usr/bin/python3
"""`tinylm pull`, `tinylm drift` and the converter's binding of an
acquisition receipt, against the local hub fixture (hub_fixture.py: the
Hub's endpoints, headers, redirects to a second host, tree pagination, and
one injected fault at a time). Started and stopped here, on 127.0.0.1
ephemeral ports, with a bounded lifetime.

The expectations come from the fixture (its tree: Git blob ids and LFS
SHA-256 computed with hashlib), from cbor2 (the receipt's node ids are
recomputed here from the docs/receipts.md formula) and from `tinylm
convert` itself (a pull's conflict record equals convert's on the same
files).

    pull_test.py TINYLM WORKDIR
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import unicodedata
import urllib.request

import cbor2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import check, summary  # noqa: E402
from hub_fixture import HOSTILE_NAME  # noqa: E402  (the fixture's own name)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REPO = "tinylm-test/qwen3-tiny"
TOKEN = "hf_fixture_secret_token_42"



def run(args, env=None, timeout=120):
    e = dict(os.environ)
    e.pop("HF_TOKEN", None)
    e.pop("HF_ENDPOINT", None)
    e.update(env or {})
    p = subprocess.run([TINYLM] + args, capture_output=True, timeout=timeout, env=e)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def get(path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (HUB, path), timeout=10) as r:
        return json.loads(r.read())


def fault(name):
    return get("/_fixture/fault/" + name)


def hub_log():
    return get("/_fixture/log")


def tree(commit):
    """The fixture's tree at commit, every page (the oracle)."""
    out, cursor = [], 0
    while True:
        page = get("/api/models/%s/tree/%s?recursive=true&cursor=%d" % (REPO, commit, cursor))
        out += page
        if len(page) < 4:
            return {e["path"]: e for e in out}
        cursor += 4


def blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def dir_digest(d):
    h = hashlib.sha256()
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            h.update(name.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def node_id(node):
    pre = b"tinylm-node-v1" + cbor2.dumps(node["type"]) + cbor2.dumps(node["metadata"], canonical=True)
    pre += cbor2.dumps(len(node["children"])) + b"".join(node["children"])
    return hashlib.sha256(pre).digest()


def read_receipt(path):
    with open(path, "rb") as f:
        raw = f.read()
    doc = cbor2.loads(raw)
    return raw, doc, {n["type"]: n for n in doc["nodes"]}


def pull(out, *extra, env=None):
    rc, so, se = run(["pull", REPO, "-o", out, "--endpoint", "http://127.0.0.1:%d" % HUB,
                      "--json"] + list(extra), env=env)
    try:
        j = json.loads(so.strip().splitlines()[-1]) if so.strip() else {}
    except ValueError:
        j = {}
    return rc, j, se


def good_path(work, commit):
    out = os.path.join(work, "good")
    rc, j, se = pull(out, env={"HF_TOKEN": TOKEN})
    check("good: exit 0", rc == 0, se)
    check("good: commit is the fixture's", j.get("commit") == commit, j)
    check("good: no drift", j.get("drifted") is False and j.get("final_commit") == commit, j)
    check("good: license", j.get("license") == "apache-2.0", j)
    check("good: no staging left", not os.path.exists(out + ".partial"))
    log = hub_log()
    t = tree(commit)
    check("good: every tree file, nothing else",
          sorted(os.listdir(out)) == sorted(list(t) + ["acquisition.receipt.cbor"]), os.listdir(out))
    for path, e in t.items():
        with open(os.path.join(out, path), "rb") as f:
            data = f.read()
        if "lfs" in e:
            ok = hashlib.sha256(data).hexdigest() == e["lfs"]["oid"]
        else:
            ok = blob_id(data) == e["oid"]
        check("good: %s matches the tree" % path, ok and len(data) == e["size"])
    raw, doc, nodes = read_receipt(os.path.join(out, "acquisition.receipt.cbor"))
    check("good: receipt format", doc.get("format") == "tinylm.acquisition/1", doc.get("format"))
    ids = {}
    for n in doc["nodes"]:
        ok = node_id(n) == n["id"] and all(k in ids.values() for k in n["children"])
        check("good: node %s recomputes (docs/receipts.md)" % n["type"], ok)
        ids[n["type"]] = n["id"]
    check("good: root is the acquisition node", doc["root"] == ids.get("acquisition"))
    check("good: receipt id printed", j.get("receipt_id") == doc["root"].hex())
    src = nodes["source"]["metadata"]
    check("good: source node", src == {"endpoint": "http://127.0.0.1:%d" % HUB, "repo_id": REPO,
                                       "requested_revision": "main", "resolved_commit": commit}, src)
    files = {f["path"]: f for f in nodes["files"]["metadata"]["files"]}
    check("good: receipt lists the tree", sorted(files) == sorted(t))
    check("good: receipt hashes", all(
        files[p]["size"] == e["size"] and files[p]["git_oid"] == e["oid"] and
        files[p]["lfs_oid"] == (e["lfs"]["oid"] if "lfs" in e else None) for p, e in t.items()))
    pol = nodes["policy"]["metadata"]
    check("good: license decision", pol["license"]["id"] == "apache-2.0" and
          pol["license"]["decision"] == "declared" and pol["license"]["license_file_sha256"] is not None, pol)
    check("good: limits recorded", pol["limits"]["max_files"] == 64, pol["limits"])
    check("good: drift node", nodes["drift"]["metadata"] == {"moved": False, "re_resolved_commit": commit})
    check("good: timings outside the nodes", set(doc["timings_us"]) == {"download", "total", "bytes_fetched"})
    check("good: the token is not recorded", TOKEN.encode() not in raw)
    hub_auth = [r["auth"] for r in log if r["server"] == "hub"]
    cdn_auth = [r["auth"] for r in log if r["server"] == "cdn"]
    check("token: every hub request carries it", hub_auth and all(a == "Bearer " + TOKEN for a in hub_auth), hub_auth)
    check("token: the CDN (another host) never sees it", cdn_auth and all(a is None for a in cdn_auth), cdn_auth)
    check("token: not printed", TOKEN not in se and TOKEN not in json.dumps(j))
    pages = [r for r in log if "/tree/" in r["path"]]
    check("tree: every page fetched", len(t) > 4 and len(pages) == (len(t) + 3) // 4, len(pages))
    return out, doc


def endpoint_env_and_progress(work, commit):
    out = os.path.join(work, "env")
    rc, so, se = run(["pull", REPO, "-o", out, "--json", "--progress"],
                     env={"HF_ENDPOINT": "http://127.0.0.1:%d/" % HUB})
    j = json.loads(so) if rc == 0 else {}
    check("HF_ENDPOINT: honoured", rc == 0 and j.get("commit") == commit, se)
    check("--progress: bytes of the large file on stderr",
          "model.safetensors" in se and "/%d" % tree(commit)["model.safetensors"]["size"] in se, se[-300:])


def revisions(work, commit):
    for rev in ("v1", commit[:7], commit):
        out = os.path.join(work, "rev-" + rev[:8])
        rc, j, se = pull(out, "--revision", rev)
        check("revision %s: resolves to the commit" % rev, rc == 0 and j.get("commit") == commit, se)
        _, _, nodes = read_receipt(os.path.join(out, "acquisition.receipt.cbor"))
        check("revision %s: recorded as requested" % rev,
              nodes["source"]["metadata"]["requested_revision"] == rev)


def convert_binding(work, out, doc, commit):
    slm = os.path.join(work, "good.slm")
    rc, so, se = run(["convert", out, "-o", slm])
    check("convert: pulled directory converts", rc == 0, se)
    rc, so, se = run(["inspect", slm, "--json"])
    acq = json.loads(so).get("acquisition") if rc == 0 else None
    check("inspect: names the commit and the receipt", acq is not None and
          acq.get("resolved_commit") == commit and acq.get("repo_id") == REPO and
          acq.get("receipt_id") == doc["root"].hex(), acq)
    p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools/slm_inspect.py"), slm, "--json"],
                       capture_output=True, text=True)
    check("inspect: equals the independent Python reader",
          p.returncode == 0 and json.loads(p.stdout).get("acquisition") == acq and
          json.loads(p.stdout) == json.loads(run(["inspect", slm, "--json", "--verify"])[1]), p.stderr)
    rc, so, se = run(["inspect", slm])
    check("inspect: human output shows the source", "%s@%s" % (REPO, commit) in so, so[-400:])
    # A file changed after the pull: convert refuses, writes nothing.
    bad = os.path.join(work, "tampered")
    shutil.copytree(out, bad)
    with open(os.path.join(bad, "config.json"), "r+b") as f:
        data = f.read()
        f.seek(0)
        f.write(data + b" ")
    rc, so, se = run(["convert", bad, "-o", bad + ".slm"])
    check("convert: a changed file against the receipt", rc == 1 and "hash_mismatch" in se and
          "config.json" in se and not os.path.exists(bad + ".slm"), se)
    # A receipt whose bytes were altered no longer verifies.
    rpath = os.path.join(bad, "acquisition.receipt.cbor")
    shutil.copy(os.path.join(out, "config.json"), os.path.join(bad, "config.json"))
    with open(rpath, "rb") as f:
        raw = f.read()
    i = raw.index(b"qwen3-tiny")
    with open(rpath, "wb") as f:
        f.write(raw[:i] + b"qwen3-tinx" + raw[i + 10:])
    rc, so, se = run(["convert", bad, "-o", bad + ".slm"])
    check("convert: an altered receipt", rc == 1 and "hash_mismatch" in se, se)
    rc, so, se = run(["receipt", "show", rpath])
    check("receipt show: an altered receipt", rc == 1 and "hash_mismatch" in se and "source" in se, se)
    rc, so, se = run(["receipt", "show", os.path.join(out, "acquisition.receipt.cbor"), "--json"])
    shown = json.loads(so) if rc == 0 else {}
    check("receipt show: verifies and prints", shown.get("verified") is True and
          shown.get("root") == doc["root"].hex() and len(shown.get("nodes", [])) == 6, se)
    rc, so, se = run(["receipt", "show", os.path.join(out, "acquisition.receipt.cbor")])
    check("receipt show: text", rc == 0 and "every node id verified" in so and "resolved_commit" in so, se)


# fault, extra args, expected error code, text the message must hold,
# whether any file was requested before the refusal
FAULT_CASES = [
    ("commit_header", [], "conflict", "X-Repo-Commit", True),
    ("etag_changed", [], "conflict", "ETag", True),
    ("linked_size", [], "conflict", "X-Linked-Size", True),
    ("changed_content", [], "hash_mismatch", "'config.json': Git blob id", True),
    ("wrong_lfs_hash", [], "hash_mismatch", "'model.safetensors': SHA-256", True),
    ("short_body", [], "hash_mismatch", "'config.json': 704 bytes received", True),
    ("long_body", [], "bounds", "longer than the 714 bytes declared (fetching 'config.json'", True),
    ("redirect_loop", [], "io", "more than 5 redirects", True),
    ("lfs_pointer", [], "invalid_model", "'model.safetensors': the server sent a Git LFS pointer", True),
    ("py_file", [], "invalid_model", "'modeling_qwen3.py' is refused: executable code", False),
    ("pickle", [], "invalid_model", "'pytorch_model.bin' is refused: a checkpoint format", False),
    ("symlink", [], "invalid_model", "'weights.safetensors' is a symlink", False),
    ("submodule", [], "invalid_model", "'vendor' is a submodule", False),
    ("traversal", [], "invalid_model", "'../config.json': a path with an empty, '.' or '..'", False),
    ("absolute", [], "invalid_model", "'/etc/passwd': an absolute path", False),
    ("pct_path", [], "invalid_model", "'%2e%2e/config.json': a percent-encoded path", False),
    ("nested", [], "invalid_model", "'sub/dir/config.json': nesting too deep", False),
    ("huge_size", [], "bounds", "'model.safetensors' declares 35184372088832 bytes", False),
    ("none", ["--max-files", "3"], "bounds", "more than 3 entries", False),
    ("none", ["--max-file-bytes", "1000000"], "bounds", "'model.safetensors' declares 19598624 bytes", False),
    ("none", ["--max-total-bytes", "1000"], "bounds", "more than 1000 bytes", False),
    ("slow", ["--timeout", "1"], "io", "Timeout", True),
    ("http_401", [], "io", "HTTP 401", False),
    ("http_404", [], "io", "HTTP 404", False),
    # what to do about them (issue 28 item 4): HF_TOKEN is unset here
    ("http_401", [], "io", "a private or gated repository: set HF_TOKEN", False),
    ("http_404", [], "io", "a private repository also answers 404 without HF_TOKEN", False),
    ("http_429", [], "io", "HTTP 429", False),
    ("http_500", [], "io", "HTTP 500", False),
    ("non_json", [], "io", "the answer is not JSON", False),
    ("no_license", [], "invalid_model", "declares no license", True),
    ("drop", [], "io", "model.safetensors", True),
]


def faults(work):
    for i, (name, extra, code, text, fetched) in enumerate(FAULT_CASES):
        fault(name)
        out = os.path.join(work, "fault-%02d-%s" % (i, name))
        rc, j, se = pull(out, *extra)
        label = "fault %s %s" % (name, " ".join(extra))
        err = j
        check(label + ": exit 1", rc == 1, "rc=%d %s" % (rc, se))
        check(label + ": error " + code, err.get("error") == code, se)
        check(label + ": message names it", text in err.get("detail", ""), err.get("detail"))
        check(label + ": no directory", not os.path.exists(out))
        transient = name in ("drop", "slow", "http_429", "http_500")
        resumable = transient and fetched  # the staging directory existed
        check(label + ": staging kept only when resumable",
              os.path.exists(out + ".partial") == resumable, os.path.exists(out + ".partial"))
        check(label + ": resumable flag", err.get("resumable") == resumable, err.get("resumable"))
        check(label + ": transient flag", err.get("transient") == transient, err.get("transient"))
        resolves = [r for r in hub_log() if "/resolve/" in r["path"]]
        check(label + ": nothing fetched before a tree refusal", bool(resolves) == fetched, len(resolves))
        if code == "conflict":
            c = err.get("conflict", {})
            check(label + ": conflict record", c.get("conflict") == "source_changed" and
                  len(c.get("sources", [])) == 2, c)


def conflict_stop(work, source):
    fault("conflict")
    out = os.path.join(work, "conflict")
    rc, j, se = pull(out)
    check("conflict: stops", rc == 1 and j.get("error") == "conflict" and not os.path.exists(out)
          and not os.path.exists(out + ".partial"), se)
    rc, so, se = run(["convert", source, "-o", os.path.join(work, "x.slm"), "--json"])
    want = json.loads(so).get("conflict") if so.strip() else None
    got = j.get("conflict")

    def by_name(rec):  # the files sit in DIR.partial for pull, in SOURCE for convert
        for s in (rec or {}).get("sources", []):
            s["file"] = os.path.basename(s["file"])
        return rec
    check("conflict: the same record as convert's", want is not None and by_name(got) == by_name(want),
          (got, want))
    # --profile reaches the converter's checks.
    rc, j, se = pull(out, "--profile", "no-such-profile")
    check("profile: handed to the converter's checks", rc == 1 and j.get("error") == "invalid_argument"
          and "unknown profile 'no-such-profile'" in j.get("detail", "") and not os.path.exists(out), se)


def license_accept(work):
    fault("no_license")
    out = os.path.join(work, "nolicense")
    rc, j, se = pull(out, "--accept-missing-license")
    check("no license accepted: exit 0", rc == 0 and j.get("license") is None, se)
    if rc == 0:
        _, doc, nodes = read_receipt(os.path.join(out, "acquisition.receipt.cbor"))
        lic = nodes["policy"]["metadata"]["license"]
        check("no license accepted: recorded", lic["decision"] == "accepted-missing" and lic["id"] is None, lic)
        check("no license accepted: invocation recorded",
              nodes["acquisition"]["metadata"]["invocation"]["accept_missing_license"] is True)


def existing_dir(work):
    fault("none")
    out = os.path.join(work, "existing")
    os.makedirs(out)
    with open(os.path.join(out, "mine.txt"), "w") as f:
        f.write("keep me")
    before = dir_digest(out)
    rc, j, se = pull(out)
    check("existing DIR: refused", rc == 1 and j.get("error") == "invalid_argument", se)
    check("existing DIR: unchanged, nothing requested", dir_digest(out) == before and not hub_log())
    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    rc, j, se = pull(empty)
    check("empty DIR: filled", rc == 0 and os.path.exists(os.path.join(empty, "config.json")), se)


def foreign_staging(work):
    fault("none")
    out = os.path.join(work, "foreign")
    os.makedirs(out + ".partial")
    with open(os.path.join(out + ".partial", "notes.txt"), "w") as f:
        f.write("the user's own file")
    rc, j, se = pull(out)
    check("foreign DIR.partial: refused", rc == 1 and j.get("error") == "invalid_argument" and
          "not made by tinylm pull" in j.get("detail", ""), se)
    check("foreign DIR.partial: untouched, nothing requested",
          os.listdir(out + ".partial") == ["notes.txt"] and not hub_log() and not os.path.exists(out))
    link = os.path.join(work, "linked")
    os.symlink(out + ".partial", link + ".partial")
    rc, j, se = pull(link)
    check("symlinked DIR.partial: refused", rc == 1 and j.get("error") == "invalid_argument", se)
    check("symlinked DIR.partial: target untouched", os.listdir(out + ".partial") == ["notes.txt"])


def bad_names(work):
    fault("none")
    for repo in ("../x", "a/b/c", "%2e%2e/x", "/abs", "a/..", "a//b", "", "a b/c"):
        rc, so, se = run(["pull", repo, "-o", os.path.join(work, "bad"), "--endpoint",
                          "http://127.0.0.1:%d" % HUB, "--json"])
        j = json.loads(so) if so.strip() else {}
        check("repo id %r refused" % repo, rc != 0 and j.get("error") in ("invalid_argument", "usage"), so + se)
    for rev in ("../main", "%2e%2e", "/main", "a/../b", "ma in"):
        rc, j, se = pull(os.path.join(work, "bad"), "--revision", rev)
        check("revision %r refused" % rev, rc == 1 and j.get("error") == "invalid_argument", se)
    for ep in ("http://user:secret@127.0.0.1:%d" % HUB, "http://127.0.0.1:%d/?x=1" % HUB,
               "ftp://127.0.0.1:%d" % HUB, "127.0.0.1:%d" % HUB):
        rc, so, se = run(["pull", REPO, "-o", os.path.join(work, "bad"), "--endpoint", ep, "--json"])
        j = json.loads(so) if so.strip() else {}
        check("endpoint %r refused" % ep, rc == 1 and j.get("error") == "invalid_argument", so + se)
    check("bad names: nothing requested", not hub_log())
    rc, j, se = pull(os.path.join(work, "bad"), "--max-files", "12x")
    check("strict numbers: --max-files 12x", rc == 2, se)


def branch_moved(work, commit, moved_to):
    fault("branch_moved")
    out = os.path.join(work, "moved-during")
    rc, j, se = pull(out)
    check("moved during the pull: succeeds", rc == 0, se)
    check("moved during the pull: drift reported", j.get("drifted") is True and j.get("commit") == commit
          and j.get("final_commit") == moved_to, j)
    if rc == 0:
        _, _, nodes = read_receipt(os.path.join(out, "acquisition.receipt.cbor"))
        check("moved during the pull: drift recorded", nodes["drift"]["metadata"] ==
              {"moved": True, "re_resolved_commit": moved_to})
        with open(os.path.join(out, "README.md"), "rb") as f:
            readme = f.read()
        check("moved during the pull: files are the first commit's",
              blob_id(readme) == tree(commit)["README.md"]["oid"])


def drift(work, out, doc, commit, moved_to):
    before = dir_digest(out)
    fault("none")
    obs = os.path.join(work, "drift-none.cbor")
    rc, so, se = run(["drift", out, "-o", obs, "--json", "--endpoint", "http://127.0.0.1:%d" % HUB])
    j = json.loads(so) if rc == 0 else {}
    check("drift (none): exit 0, not moved", rc == 0 and j.get("moved") is False and j.get("now") == commit, se)
    fault("moved")
    obs = os.path.join(work, "drift-moved.cbor")
    rc, so, se = run(["drift", out, "-o", obs, "--json", "--endpoint", "http://127.0.0.1:%d" % HUB])
    j = json.loads(so) if rc == 0 else {}
    check("drift: moved", rc == 0 and j.get("moved") is True and j.get("now") == moved_to, se)
    check("drift: names the changed file", j.get("changed") == ["README.md"] and j.get("added") == []
          and j.get("removed") == [], j)
    check("drift: DIR untouched", dir_digest(out) == before)
    if rc == 0:
        _, d, nodes = read_receipt(obs)
        check("drift: observation receipt", d["format"] == "tinylm.drift/1" and
              nodes["observation"]["metadata"]["moved"] is True and
              nodes["drift"]["metadata"]["acquisition_receipt_id"] == doc["root"].hex())
        acq_source = next(n for n in doc["nodes"] if n["type"] == "source")
        check("drift: the same source node", nodes["source"]["id"] == acq_source["id"])
        check("drift: node ids recompute", all(node_id(n) == n["id"] for n in d["nodes"]))
        rc, so, se = run(["receipt", "show", obs, "--json"])
        check("drift: receipt show verifies it", rc == 0 and json.loads(so).get("verified") is True, se)
    # A file the allowlist would refuse is observed, not refused.
    fault("moved_added")
    rc, so, se = run(["drift", out, "-o", os.path.join(work, "drift-added.cbor"), "--json", "--endpoint", "http://127.0.0.1:%d" % HUB])
    j = json.loads(so) if rc == 0 else {}
    check("drift: added and removed files", rc == 0 and j.get("moved") is True and
          j.get("added") == ["modeling_qwen3.py"] and j.get("removed") == ["LICENSE"] and
          j.get("changed") == [], (so, se))


def update(work, commit, moved_to):
    """pull --update (issue 28 item 4): DIR holding an earlier pull is
    brought to the revision's new commit in one swap, fetching only what
    changed; refused, untouched and without a request, when DIR is not a
    pull of that repository or holds anything its receipt does not name."""
    fault("none")
    out = os.path.join(work, "update")
    rc, j, se = pull(out)
    check("update: the first pull", rc == 0 and j.get("commit") == commit, se)
    first_receipt = read_receipt(os.path.join(out, "acquisition.receipt.cbor"))[1]
    before = dir_digest(out)
    rc, j, se = pull(out)
    check("update: without --update an existing DIR is refused, naming --update",
          rc == 1 and j.get("error") == "invalid_argument" and "--update" in j.get("detail", ""), se)
    fault("none")
    rc, j, se = pull(out, "--update")
    check("update: same commit: up to date, exit 0", rc == 0 and j.get("up_to_date") is True
          and j.get("commit") == commit, (j, se))
    check("update: up to date: DIR unchanged, only the revision asked",
          dir_digest(out) == before and [e["path"].split("?")[0] for e in hub_log()]
          == ["/api/models/%s/revision/main" % REPO], hub_log())
    fault("moved")
    rc, j, se = pull(out, "--update")
    t = tree(moved_to)
    check("update: moved: exit 0, the new commit, the old one named",
          rc == 0 and j.get("commit") == moved_to and j.get("previous_commit") == commit
          and j.get("up_to_date") is False and j.get("revision") == "main", (j, se))
    check("update: only the changed file is fetched, the rest kept from DIR",
          j.get("reused") == len(t) - 1 and
          [e["path"] for e in hub_log() if "/resolve/" in e["path"]] ==
          ["/%s/resolve/%s/README.md" % (REPO, moved_to)], (j, hub_log()))
    check("update: DIR holds the new tree and its receipt, no staging or old copy left",
          sorted(os.listdir(out)) == sorted(list(t) + ["acquisition.receipt.cbor"]) and
          not os.path.exists(out + ".partial") and
          not [n for n in os.listdir(work) if n.startswith("update.previous")], os.listdir(work))
    with open(os.path.join(out, "README.md"), "rb") as f:
        check("update: README.md is the new commit's", blob_id(f.read()) == t["README.md"]["oid"])
    _, doc, nodes = read_receipt(os.path.join(out, "acquisition.receipt.cbor"))
    check("update: the new receipt names the new commit and verifies",
          nodes["source"]["metadata"]["resolved_commit"] == moved_to and
          doc["root"] != first_receipt["root"] and all(node_id(n) == n["id"] for n in doc["nodes"]))
    # Refusals: nothing changed, nothing requested.
    stray = os.path.join(out, "notes.txt")
    with open(stray, "w") as f:
        f.write("the user's own file")
    before = dir_digest(out)
    fault("none")
    rc, j, se = pull(out, "--update")
    check("update: a file the receipt does not name: refused, named, untouched, no request",
          rc == 1 and j.get("error") == "invalid_argument" and "notes.txt" in j.get("detail", "")
          and dir_digest(out) == before and not hub_log(), (j, se))
    os.remove(stray)
    plain = os.path.join(work, "update-plain")
    os.makedirs(plain)
    with open(os.path.join(plain, "config.json"), "w") as f:
        f.write("{}")
    rc, j, se = pull(plain, "--update")
    check("update: a directory pull did not write: not_found, no request",
          rc == 1 and j.get("error") == "not_found" and not hub_log(), (j, se))
    rc, so, se = run(["pull", "other/repo", "-o", out, "--update", "--endpoint",
                      "http://127.0.0.1:%d" % HUB, "--json"])
    j = json.loads(so) if so.strip() else {}
    check("update: a pull of another repository: refused, no request",
          rc == 1 and j.get("error") == "invalid_argument" and REPO in j.get("detail", "")
          and not hub_log(), (so, se))
    fresh = os.path.join(work, "update-fresh")
    rc, j, se = pull(fresh, "--update")
    check("update: DIR absent: a plain pull", rc == 0 and j.get("previous_commit") is None
          and os.path.exists(os.path.join(fresh, "acquisition.receipt.cbor")), (j, se))


def resume(work, commit):
    fault("drop")
    out = os.path.join(work, "resume")
    rc, j, se = pull(out)
    part = os.path.join(out + ".partial", "model.safetensors.part")
    size = os.path.getsize(part) if os.path.exists(part) else 0
    check("resume: the drop kept a partial file", rc == 1 and j.get("resumable") is True and size > 0, se)
    fault("none")
    rc, j, se = pull(out)
    ranges = [r["range"] for r in hub_log() if r["server"] == "cdn" and r["path"].startswith("/cdn/")]
    check("resume: rerun succeeds", rc == 0 and j.get("commit") == commit, se)
    check("resume: asked for the rest only", "bytes=%d-" % size in ranges, ranges)
    check("resume: fetched less than the whole", 0 < j.get("bytes_fetched", 0) < j.get("bytes", 0), j)
    check("resume: verified small files were kept", j.get("reused", 0) >= 1, j)
    check("resume: no staging left", not os.path.exists(out + ".partial"))
    with open(os.path.join(out, "model.safetensors"), "rb") as f:
        ok = hashlib.sha256(f.read()).hexdigest() == tree(commit)["model.safetensors"]["lfs"]["oid"]
    check("resume: the resumed file is right", ok)
    # A kept prefix that was corrupted is caught, and fetched again whole.
    fault("drop")
    out2 = os.path.join(work, "resume-corrupt")
    pull(out2)
    part = os.path.join(out2 + ".partial", "model.safetensors.part")
    if os.path.exists(part):
        with open(part, "r+b") as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0xFF]))
    fault("none")
    rc, j, se = pull(out2)
    ranges = [r["range"] for r in hub_log() if r["server"] == "cdn" and r["path"].startswith("/cdn/")]
    check("resume corrupt prefix: succeeds after a fresh fetch", rc == 0 and None in ranges and
          any(r is not None for r in ranges), (se, ranges))
    with open(os.path.join(out2, "model.safetensors"), "rb") as f:
        ok = hashlib.sha256(f.read()).hexdigest() == tree(commit)["model.safetensors"]["lfs"]["oid"]
    check("resume corrupt prefix: the file is right", ok)


# --- DIR.partial is this user's own, or it is not touched ------------------


def staging_listing(d):
    """The names and bytes in d; None when d is gone."""
    if not os.path.isdir(d):
        return None
    out = []
    for n in sorted(os.listdir(d)):
        with open(os.path.join(d, n), "rb") as f:
            out.append((n, f.read()))
    return out


def reseal(doc):
    """Recomputes every node id, children first, and the root (what a
    forger does after editing a receipt) and returns the file's bytes."""
    ids = {}
    for n in doc["nodes"]:
        n["children"] = [ids.get(c, c) for c in n["children"]]
        new = node_id(n)
        ids[n["id"]] = new
        if doc["root"] == n["id"]:
            doc["root"] = new
        n["id"] = new
    return cbor2.dumps(doc, canonical=True)


def handed_dir(work, out, name, change):
    """A copy of the pulled directory out whose receipt was edited by
    change(doc, nodes) and resealed: a directory someone hands over."""
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(out, d)
    _, doc, nodes = read_receipt(os.path.join(d, "acquisition.receipt.cbor"))
    change(doc, nodes)
    with open(os.path.join(d, "acquisition.receipt.cbor"), "wb") as f:
        f.write(reseal(doc))
    return d


def drift_endpoint(work, out, source):
    """Issue 23.2: drift asks the endpoint the caller names (--endpoint,
    else $HF_ENDPOINT, else the default), never the one written in DIR's
    receipt, which is only compared: a second hub named by a handed-over
    receipt receives no request (and so never sees $HF_TOKEN)."""
    fault("none")
    mine = "http://127.0.0.1:%d" % HUB
    other = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "hub_fixture.py"), source,
                              "--lifetime", "300"], stdout=subprocess.PIPE, text=True)
    try:
        theirs = "http://127.0.0.1:%d" % int(other.stdout.readline().split()[1])

        def their_log():
            with urllib.request.urlopen(theirs + "/_fixture/log", timeout=10) as r:
                return json.loads(r.read())

        def point_at_theirs(doc, nodes):
            nodes["source"]["metadata"]["endpoint"] = theirs
            nodes["acquisition"]["metadata"]["invocation"]["endpoint"] = theirs
        handed = handed_dir(work, out, "handed", point_at_theirs)
        rc, so, se = run(["receipt", "show", os.path.join(handed, "acquisition.receipt.cbor")])
        check("drift endpoint: the handed receipt verifies (ids recomputed)", rc == 0, se)
        seen = len(hub_log())
        for how, args, env in (("$HF_ENDPOINT", [], {"HF_ENDPOINT": mine}),
                               ("--endpoint", ["--endpoint", mine], {})):
            rc, so, se = run(["drift", handed, "-o", os.path.join(work, "handed-drift.cbor"),
                              "--json"] + args, env=dict(env, HF_TOKEN=TOKEN))
            j = json.loads(so) if so.strip() else {}
            check("drift endpoint (%s): the receipt's hub receives no request" % how,
                  their_log() == [], their_log())
            check("drift endpoint (%s): refused, naming both endpoints, nothing sent" % how,
                  rc == 1 and j.get("error") == "invalid_argument" and theirs in se and
                  mine in se and "nothing was sent" in se and
                  not os.path.exists(os.path.join(work, "handed-drift.cbor")), (rc, se))
        check("drift endpoint: the caller's hub is not asked either (refused first)",
              len(hub_log()) == seen, hub_log()[seen:])
        # Named by the caller, the receipt's endpoint is asked.
        rc, so, se = run(["drift", handed, "-o", os.path.join(work, "handed-drift.cbor"),
                          "--json", "--endpoint", theirs])
        check("drift endpoint: --endpoint naming the receipt's hub asks it",
              rc == 0 and len(their_log()) > 0 and all(r["auth"] is None for r in their_log()),
              (rc, se, their_log()))
        # The environment alone is enough when it names the receipt's hub.
        rc, so, se = run(["drift", out, "-o", os.path.join(work, "env-drift.cbor"), "--json"],
                         env={"HF_ENDPOINT": mine + "/", "HF_TOKEN": TOKEN})
        asked = hub_log()[seen:]
        check("drift endpoint: $HF_ENDPOINT naming the receipt's hub is used, with the token",
              rc == 0 and len(asked) > 0 and all(r["auth"] == "Bearer " + TOKEN for r in asked),
              (rc, se, asked))
    finally:
        other.terminate()
        other.wait(timeout=10)


def drift_schema(work, out):
    """Issue 23.6: a receipt's file entry without "path" (ids recomputed)
    crashed drift (a NULL path compared) when the revision had moved; it is
    refused as invalid_argument before any request."""
    fault("moved")
    bad = handed_dir(work, out, "no-path", lambda doc, nodes:
                     nodes["files"]["metadata"]["files"][0].pop("path"))
    rc, so, se = run(["drift", bad, "-o", os.path.join(work, "no-path-drift.cbor"), "--json",
                      "--endpoint", "http://127.0.0.1:%d" % HUB])
    j = json.loads(so) if so.strip() else {}
    check("drift: a file entry without path is invalid_argument, no request",
          rc == 1 and j.get("error") == "invalid_argument" and "missing field 'path'" in se and
          hub_log() == [], (rc, se))
    fault("none")


def huge_json(work):
    """Issue 23.5: 63 MB of [{},{},...] as the tree drove pull to 4.8 GB.
    Every Hub JSON answer is bounded by what it can justify: the tree page
    by the entries the tree may still hold (--max-files), the model info by
    16 MiB and 2^18 values; pull refuses with bounds, its peak RSS (of a
    child of its own, resource.getrusage) far below the answer's cost."""
    for name, needle in (("huge_tree", "bounds"), ("huge_info", "JSON values")):
        fault(name)
        out = os.path.join(work, name)
        probe = ("import resource, subprocess, sys\n"
                 "p = subprocess.Popen(sys.argv[1:], stderr=subprocess.PIPE)\n"
                 "try:\n"
                 "    err = p.communicate(timeout=120)[1]\n"
                 "except subprocess.TimeoutExpired:\n"
                 "    p.kill()\n"
                 "    err = p.communicate()[1] + b'(killed after 120 s)'\n"
                 "sys.stdout.write('%d %d\\n' % (p.returncode, "
                 "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
                 "sys.stdout.write(err.decode(errors='replace'))\n")
        e = dict(os.environ)
        e.pop("HF_TOKEN", None)
        e.pop("HF_ENDPOINT", None)
        p = subprocess.run(["/usr/bin/python3", "-c", probe, TINYLM, "pull", REPO, "-o", out,
                            "--endpoint", "http://127.0.0.1:%d" % HUB, "--timeout", "100"],
                           capture_output=True, text=True, timeout=180, env=e)
        first, _, err = p.stdout.partition("\n")
        rc, rss_kb = (int(x) for x in first.split())
        check("%s: refused (bounds), no directory" % name,
              rc == 1 and "error: bounds: " in err and needle in err and
              not os.path.exists(out), (rc, err))
        print("  %s: pull's peak RSS %d MB" % (name, rss_kb // 1024))
        # ASan's own baseline is ~100 MB; the old binary's peak was 4.8 GB.
        check("%s: peak RSS under 400 MB (%d MB)" % (name, rss_kb // 1024), rss_kb < 400 * 1024)
    fault("none")


def guarded(fn, *args):
    """Runs one group of checks; an exception (what a broken binary can
    leave behind) counts as a failure instead of ending the run."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        check("%s: ran to the end" % fn.__name__, False, repr(e))


def hostile_staging(work):
    """A DIR.partial someone else could have made is refused before any
    request, even when it carries the mark, and nothing in it changes."""
    fault("none")
    cases = []
    # Writable by group and others: anyone could have put files in it.
    out = os.path.join(work, "open-staging")
    os.makedirs(out + ".partial")
    for name, data in ((".tinylm-pull", b""), ("notes.txt", b"the user's own file")):
        with open(os.path.join(out + ".partial", name), "wb") as f:
            f.write(data)
    os.chmod(out + ".partial", 0o777)
    cases.append(("group/other-writable", out, out + ".partial", "group or others may write"))
    # A symbolic link to a victim's directory that even carries the mark.
    victim = os.path.join(work, "victim-pre")
    os.makedirs(victim)
    for name, data in ((".tinylm-pull", b""), ("sentinel.txt", b"the victim's file")):
        with open(os.path.join(victim, name), "wb") as f:
            f.write(data)
    out = os.path.join(work, "link-staging")
    os.symlink(victim, out + ".partial")
    cases.append(("symlink to a marked directory", out, victim, "symbolic link"))
    # Another user's (made as that user would: the directory and the mark
    # theirs, mode 0755). Only root can make one to test with.
    if os.geteuid() == 0:
        out = os.path.join(work, "other-user-staging")
        os.makedirs(out + ".partial")
        with open(os.path.join(out + ".partial", ".tinylm-pull"), "wb") as f:
            f.write(b"")
        with open(os.path.join(out + ".partial", "notes.txt"), "wb") as f:
            f.write(b"the other user's file")
        for p in (out + ".partial", os.path.join(out + ".partial", ".tinylm-pull"),
                  os.path.join(out + ".partial", "notes.txt")):
            os.chown(p, 65534, 65534)
        os.chmod(out + ".partial", 0o755)
        cases.append(("another user's", out, out + ".partial", "belongs to uid 65534"))
    else:
        print("  note: not root; the other-user DIR.partial case is skipped")
    for label, out, inside, why in cases:
        fault("none")  # clears the request log
        before = staging_listing(inside)
        rc, j, se = pull(out)
        check("staging %s: refused" % label, rc == 1 and j.get("error") == "invalid_argument"
              and why in j.get("detail", ""), (rc, j, se))
        check("staging %s: untouched, nothing requested" % label,
              staging_listing(inside) == before and not hub_log(), staging_listing(inside))
        check("staging %s: no DIR" % label, not os.path.lexists(out))


def swapped_staging(work):
    """DIR.partial swapped for a symbolic link to a victim's directory
    while pull waits on the network: no write and no removal reaches the
    victim, and DIR is not made from the link."""
    fault("hold")
    out = os.path.join(work, "swapped")
    victim = os.path.join(work, "victim-swap")
    os.makedirs(victim)
    with open(os.path.join(victim, "sentinel.txt"), "wb") as f:
        f.write(b"the victim's file")
    before = staging_listing(victim)
    p = subprocess.Popen([TINYLM, "pull", REPO, "-o", out, "--endpoint", "http://127.0.0.1:%d" % HUB,
                          "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    held = False
    end = time.time() + 60
    while time.time() < end and p.poll() is None and not held:
        held = any(r["path"].endswith("/config.json") for r in hub_log())
        time.sleep(0.05)
    check("swap: pull is waiting on config.json", held and os.path.isdir(out + ".partial"))
    os.rename(out + ".partial", out + ".moved")
    os.symlink(victim, out + ".partial")
    get("/_fixture/release")
    try:
        so, se = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
    j = json.loads(so) if so.strip() else {}
    check("swap: refused", p.returncode == 1 and j.get("error") == "io" and
          "was moved or replaced during the pull" in j.get("detail", ""), (p.returncode, so, se))
    check("swap: the victim's directory untouched", staging_listing(victim) == before,
          staging_listing(victim))
    check("swap: no DIR", not os.path.lexists(out))
    check("swap: the link is left as it was", os.path.islink(out + ".partial") and
          os.readlink(out + ".partial") == victim)
    check("swap: pull's own files removed from its own directory",
          staging_listing(out + ".moved") == [], staging_listing(out + ".moved"))


# --- Every request ends; the server's text is made safe --------------------


def run_raw(args, timeout):
    """(rc, stdout bytes, stderr bytes, seconds); rc None when it had to be
    killed at the timeout."""
    e = dict(os.environ)
    e.pop("HF_TOKEN", None)
    e.pop("HF_ENDPOINT", None)
    t0 = time.time()
    p = subprocess.Popen([TINYLM] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
    try:
        so, se = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
        return None, so, se, time.time() - t0
    return p.returncode, so, se, time.time() - t0


def deadlines(work):
    """An answer that never ends (a slow or an endless error body, a JSON
    body that trickles) is cut within --timeout, as a transient io error."""
    for name, text in (("slow_error", "Timeout"), ("endless_error", "HTTP 500"),
                       ("slow_json", "Timeout")):
        fault(name)
        out = os.path.join(work, "deadline-" + name)
        rc, so, se, secs = run_raw(["pull", REPO, "-o", out, "--endpoint", "http://127.0.0.1:%d" % HUB,
                                    "--timeout", "2", "--json"], timeout=40)
        try:
            j = json.loads(so)
        except ValueError:
            j = {}
        check("deadline %s: ends" % name, rc is not None and secs < 20, "rc=%s after %.1f s" % (rc, secs))
        check("deadline %s: transient io" % name, rc == 1 and j.get("error") == "io" and
              j.get("transient") is True and text in j.get("detail", ""), (rc, so, se[-300:]))
        check("deadline %s: no directory" % name, not os.path.exists(out) and
              not os.path.exists(out + ".partial"))


def terminal_safe(b):
    """Valid UTF-8 without control or format characters (but newlines)."""
    try:
        t = b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ch == "\n" or unicodedata.category(ch) not in ("Cc", "Cf") for ch in t)


def hostile_text(work, out_good):
    """X-Error-Message and tree names carrying escape sequences, C1 and
    bidi controls and bytes that are not UTF-8: escaped on the terminal,
    valid JSON under --json."""
    for name, code, text in (("hostile_error", "io", "gone"), ("hostile_name", "invalid_model", "evil")):
        fault(name)
        out = os.path.join(work, "text-" + name)
        for mode in ("--json", "--progress"):
            rc, so, se, _ = run_raw(["pull", REPO, "-o", out, "--endpoint", "http://127.0.0.1:%d" % HUB,
                                     mode], timeout=60)
            label = "%s %s" % (name, mode)
            check(label + ": stderr escaped", terminal_safe(se) and text in se.decode("utf-8", "replace")
                  and "\\x1b" in se.decode("utf-8", "replace"), se)
            check(label + ": stdout escaped", terminal_safe(so), so)
            if mode == "--json":
                try:
                    j = json.loads(so)
                except ValueError:
                    j = {}
                check(label + ": valid JSON", j.get("error") == code and text in j.get("detail", "")
                      and "\\x1b" in j.get("detail", ""), so)
                check(label + ": no control characters in the detail",
                      terminal_safe(j.get("detail", "").encode()), j)
            check(label + ": exit 1, no directory", rc == 1 and not os.path.exists(out), rc)
    # drift lists the names it observes as they are: escaped on the
    # terminal, exact (JSON-escaped) under --json.
    fault("moved_hostile")
    for mode in ("--json", None):
        obs = os.path.join(work, "drift-hostile%s.cbor" % (mode or ""))
        rc, so, se, _ = run_raw(["drift", out_good, "-o", obs, "--endpoint", "http://127.0.0.1:%d" % HUB]
                                + ([mode] if mode else []), timeout=60)
        check("drift hostile name %s: exit 0, escaped" % mode, rc == 0 and terminal_safe(so)
              and terminal_safe(se) and b"evil" in so, (rc, so, se))
        if mode:
            try:
                j = json.loads(so)
            except ValueError:
                j = {}
            check("drift hostile name --json: the exact name", j.get("added") == [HOSTILE_NAME], j)


# --- The transport's safety rules, each shown to matter --------------------


def https_downgrade(work, https_port, cert):
    """From an https endpoint, a redirect to plain http is refused (the
    fixture's LFS redirects go to the http CDN); TLS is verified."""
    fault("none")
    out = os.path.join(work, "https")
    endpoint = "https://127.0.0.1:%d" % https_port
    rc, so, se = run(["pull", REPO, "-o", out, "--endpoint", endpoint, "--json"])
    j = json.loads(so) if so.strip() else {}
    check("https: an unknown CA is refused", rc == 1 and j.get("error") == "io" and
          not hub_log(), (rc, so, se))
    rc, so, se = run(["pull", REPO, "-o", out, "--endpoint", endpoint, "--json"],
                     env={"CURL_CA_BUNDLE": cert})
    j = json.loads(so) if so.strip() else {}
    log = hub_log()
    check("https: the small files came over https",
          any(r["scheme"] == "https" and r["path"].endswith("/config.json") for r in log), log)
    check("https: the redirect to http is refused", rc == 1 and j.get("error") == "io" and
          "refusing a redirect from https to 'http://l...'" in j.get("detail", ""), (rc, so, se))
    check("https: the http CDN was never asked", not [r for r in log if r["server"] == "cdn"], log)
    check("https: no directory", not os.path.exists(out) and not os.path.exists(out + ".partial"))


def resume_whole_file(work, commit):
    """A server that answers a resume with 200 and the whole file: the bytes
    already held are dropped from the answer, in one request."""
    fault("drop")
    out = os.path.join(work, "resume-200")
    rc, j, se = pull(out)
    part = os.path.join(out + ".partial", "model.safetensors.part")
    size = os.path.getsize(part) if os.path.exists(part) else 0
    check("resume 200: the drop kept a partial file", rc == 1 and size > 0, se)
    fault("ignore_range")
    rc, j, se = pull(out)
    asked = [r for r in hub_log() if r["server"] == "cdn" and r["path"].startswith("/cdn/" +
             tree(commit)["model.safetensors"]["lfs"]["oid"])]
    check("resume 200: succeeds", rc == 0 and j.get("commit") == commit, (rc, j, se))
    check("resume 200: one request, a resume", [r["range"] for r in asked] == ["bytes=%d-" % size],
          asked)
    ok = False
    if rc == 0:
        with open(os.path.join(out, "model.safetensors"), "rb") as f:
            ok = hashlib.sha256(f.read()).hexdigest() == tree(commit)["model.safetensors"]["lfs"]["oid"]
    check("resume 200: the file is right", ok)


def main():
    global TINYLM, HUB
    TINYLM = os.path.abspath(sys.argv[1])
    work = os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    source = os.path.join(work, "synth")
    # --publisher-eos: the fixture's "conflict" fault serves synth's files
    # unchanged, the published EOS disagreement (the good path fixes it).
    rc, so, se = run(["synth", "--config", "tiny", "--seed", "7", "--publisher-eos", "--tokenizer-dir",
                      os.path.join(ROOT, "tests/fixtures/tiny-tokenizer"), "-o", source])
    if rc != 0:
        print("synth failed: " + se)
        return 1
    # A certificate for the fixture's https hub (trusted by pull only
    # through CURL_CA_BUNDLE).
    cert, key = os.path.join(work, "hub-cert.pem"), os.path.join(work, "hub-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    fx = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "hub_fixture.py"), source,
                           "--lifetime", "900", "--tls", cert, key], stdout=subprocess.PIPE, text=True)
    try:
        line = fx.stdout.readline().split()
        HUB = int(line[1])
        https_port = int(line[5])
        info = fault("none")
        commit, moved_to = info["commit"], info["moved_to"]
        out, doc = good_path(work, commit)
        revisions(work, commit)
        endpoint_env_and_progress(work, commit)
        convert_binding(work, out, doc, commit)
        existing_dir(work)
        foreign_staging(work)
        bad_names(work)
        faults(work)
        conflict_stop(work, source)
        license_accept(work)
        branch_moved(work, commit, moved_to)
        drift(work, out, doc, commit, moved_to)
        guarded(update, work, commit, moved_to)
        resume(work, commit)
        guarded(hostile_staging, work)
        guarded(swapped_staging, work)
        guarded(deadlines, work)
        guarded(hostile_text, work, out)
        guarded(https_downgrade, work, https_port, cert)
        guarded(resume_whole_file, work, commit)
        guarded(drift_endpoint, work, out, source)
        guarded(drift_schema, work, out)
        guarded(huge_json, work)
    finally:
        fx.terminate()
        fx.wait(timeout=10)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
