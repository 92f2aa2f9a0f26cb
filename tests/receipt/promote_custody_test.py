#!/usr/bin/python3
"""The evidence store's custody and the promotion's build id
(docs/promotion-receipts.md §Custody, docs/promotion.md §The run record):

  * a real store, made by `tinylm promote` on a synthetic tiny model with
    a short plan (the artifact claim and a 2-seed, one-token stochastic comparison);
    its run record's `started` precedes the claims (it is at least their
    time before `finished`), and its build id is `sha256:` and the SHA-256
    of the binary that ran, the git description beside it;
  * two binaries that differ by one byte name two builds, and
    `promote status` says the other one's receipts are invalidated (build);
  * copies of that store made unsafe — the store a symbolic link (also
    given as DIR/), objects/ or receipts/ a link to a copy of itself
    outside, the store world-writable, objects/ group-writable, the store
    another uid's (root only), an index line naming `../` or an absolute
    path to a copy of the promotion receipt outside — are each refused by
    `promote` (exit 2), `promote status`, `promote show` (in the store and
    with --store) and `report STORE` (exit 1), the message naming the
    directory or line and why, and nothing outside the store is read or
    written: the directory outside keeps its files, bytes and times, no
    file appears there, no report is written.

    promote_custody_test.py TINYLM WORKDIR
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, skip, summary  # noqa: E402
from tiny_plan import tiny_plan  # noqa: E402

TINYLM = WORK = None
RULE = ("the store must be real directories owned by you, not group- or "
        "other-writable")


def tinylm(*args, exe=None):
    return subprocess.run([exe or TINYLM, *args], capture_output=True, timeout=600)


def sha_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def text(p):
    return (p.stdout + p.stderr).decode(errors="replace")


def made_store():
    """The tiny model, the short plan and the store promote made of it."""
    # The artifact claim and a stochastic comparison of 2 seeds: a few
    # seconds of claims between the start and the end.
    made = tiny_plan(tinylm, WORK, ("artifact", "stochastic"), seeds=2)
    if made is None:
        return None
    plan = made[0]
    store = os.path.join(WORK, "good")
    before = time.time()
    p = tinylm("promote", plan, "--store", store, "--json")
    after = time.time()
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = None
    if not check("promote writes a store (promoted or not)",
                 p.returncode in (0, 1) and out is not None, text(p)[-2000:]):
        return None
    return plan, store, out, before, after


def run_record(store, receipt_path):
    p = tinylm("promote", "show", receipt_path, "--json")
    view = json.loads(p.stdout)
    with open(os.path.join(store, "objects", view["run_record"])) as f:
        return view, json.load(f)


def utc(stamp):
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=timezone.utc).timestamp()


def test_run_record(store, out, before, after):
    view, rec = run_record(store, out["path"])
    ms = sum(a["ms"] for a in rec["attempts"])
    started, finished = rec.get("started"), rec.get("finished")
    ok = isinstance(started, str) and isinstance(finished, str)
    check("the run record has started and finished (UTC)", ok, json.dumps(rec)[:1000])
    if ok:
        s, e = utc(started), utc(finished)
        # To the second: the claims' time lies between them.
        check("started precedes the first attempt: finished - started >= the "
              "attempts' time (%d ms)" % ms,
              ms >= 1000 and int(before) <= s <= e <= after and e - s >= ms // 1000,
              (started, finished, ms, before, after))
    digest = "sha256:" + sha_file(TINYLM)
    check("the build id is sha256: and the SHA-256 of the binary that ran, in the run "
          "record and the receipts' runtime node",
          rec.get("build_id") == digest and view["runtime"]["build_id"] == digest,
          (rec.get("build_id"), view.get("runtime"), digest))
    check("the git description is kept beside it (build_describe)",
          isinstance(rec.get("build_describe"), str) and rec["build_describe"] and
          not rec["build_describe"].startswith("sha256:"), rec.get("build_describe"))
    custody = os.path.join(store, "objects", rec.get("custody", "none"))
    if os.path.exists(custody):
        with open(custody) as f:
            rt = json.load(f)["runtime"]
        check("the custody object names the same build and its description",
              rt["build_id"] == digest and rt["build_describe"] == rec["build_describe"], rt)


def test_build_ids(store):
    a, b = os.path.join(WORK, "tinylm-a"), os.path.join(WORK, "tinylm-b")
    shutil.copy(TINYLM, a)
    shutil.copy(TINYLM, b)
    with open(b, "ab") as f:
        f.write(b"\0")
    ids = []
    for exe in (a, b):
        p = tinylm("promote", "status", "--store", store, "--json", exe=exe)
        try:
            ids.append(json.loads(p.stdout))
        except ValueError:
            ids.append({"error": text(p)})
    check("two binaries one byte apart name two builds, each its own SHA-256",
          ids[0].get("build_id") == "sha256:" + sha_file(a) and
          ids[1].get("build_id") == "sha256:" + sha_file(b) and
          ids[0]["build_id"] != ids[1]["build_id"], ids)
    check("promote status: the receipts are current for the binary that made them "
          "(a copy), invalidated (build) for the other",
          ids[0].get("receipts") and ids[1].get("receipts") and
          all(r["status"] == "current" for r in ids[0]["receipts"]) and
          all(r["status"] == "invalidated" and r["invalidated_by"][0]["ancestor"] == "build"
              for r in ids[1]["receipts"]), json.dumps(ids)[:3000])


def snapshot(path):
    """Every file under path: its bytes' SHA-256, size and mtime."""
    out = {}
    for d, dirs, files in os.walk(path):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out[os.path.relpath(p, path)] = (st.st_mode, st.st_size, st.st_mtime_ns,
                                             sha_file(p) if os.path.isfile(p) and
                                             not os.path.islink(p) else None)
    return out


def expect_refused(name, store, plan, receipt, outside, needles, code=b"error: io: "):
    """Every command that opens the store refuses it; nothing outside the
    store changes."""
    before = snapshot(outside)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name)
    html = os.path.join(WORK, slug + ".html")
    elsewhere = os.path.join(WORK, slug + ".cbor")
    shutil.copy(os.path.join(WORK, "good", "receipts", receipt), elsewhere)
    cmds = [("promote", 2, ("promote", plan, "--store", store)),
            ("promote status", 1, ("promote", "status", "--store", store)),
            ("promote show", 1, ("promote", "show", os.path.join(store, "receipts", receipt))),
            ("promote show --store", 1, ("promote", "show", elsewhere, "--store", store)),
            ("report STORE", 1, ("report", store, "-o", html))]
    for what, rc, args in cmds:
        p = tinylm(*args)
        err = p.stderr
        check(f"{name}: {what} refused (exit {rc}), naming it and why",
              p.returncode == rc and err.startswith(code) and
              all(n.encode() in err for n in needles), text(p)[-1500:])
    check(f"{name}: nothing outside the store was written, read into a report, or "
          "changed", snapshot(outside) == before and not os.path.exists(html))


def test_custody(plan, out):
    receipt = os.path.basename(out["path"])
    good = os.path.join(WORK, "good")
    # The store as promote made it: report finds its promotion by the
    # index's id, show and status read it.
    p = tinylm("report", good, "-o", os.path.join(WORK, "good.html"), "--json")
    check("the store as made: report STORE draws its last promotion (by the index's id)",
          p.returncode == 0 and json.loads(p.stdout or b"{}").get("receipt") ==
          receipt[:-len(".cbor")], text(p)[-1500:])
    for args in (("show", out["path"]), ("status", "--store", good)):
        p = tinylm("promote", *args)
        check(f"the store as made: promote {args[0]} reads it (exit 0)", p.returncode == 0,
              text(p)[-1500:])

    def fresh(name):
        base = os.path.join(WORK, name)
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(os.path.join(base, "outside"))
        with open(os.path.join(base, "outside", "sentinel"), "wb") as f:
            f.write(b"untouched")
        return base, os.path.join(base, "store"), os.path.join(base, "outside")

    # The store a link to a real store outside.
    base, store, outside = fresh("linked-store")
    shutil.copytree(good, os.path.join(outside, "real"), symlinks=True)
    os.symlink(os.path.join(outside, "real"), store)
    expect_refused("a linked store", store, plan, receipt, outside,
                   [f"store {store}: a symbolic link; refusing ({RULE})"])
    expect_refused("a linked store given as DIR/", store + "/", plan, receipt, outside,
                   [f"store {store}: a symbolic link"])
    # objects/ or receipts/ a link to a copy outside.
    for sub in ("objects", "receipts"):
        base, store, outside = fresh("linked-" + sub)
        shutil.copytree(good, store, symlinks=True)
        shutil.move(os.path.join(store, sub), os.path.join(outside, sub))
        os.symlink(os.path.join(outside, sub), os.path.join(store, sub))
        expect_refused(f"a linked {sub}/", store, plan, receipt, outside,
                       [f"store {store}/{sub}: a symbolic link; refusing ({RULE})"])
    # Writable by others.
    base, store, outside = fresh("world-writable")
    shutil.copytree(good, store, symlinks=True)
    os.chmod(store, 0o777)
    expect_refused("a world-writable store", store, plan, receipt, outside,
                   [f"store {store}: group or others may write in it; refusing"])
    base, store, outside = fresh("group-objects")
    shutil.copytree(good, store, symlinks=True)
    os.chmod(os.path.join(store, "objects"), 0o770)
    expect_refused("a group-writable objects/", store, plan, receipt, outside,
                   [f"store {store}/objects: group or others may write in it; refusing"])
    # Another user's.
    if os.geteuid() != 0:
        skip("not root: a store owned by another uid cannot be made here (chown)")
    else:
        base, store, outside = fresh("foreign")
        shutil.copytree(good, store, symlinks=True)
        os.chown(store, 12345, 12345)
        expect_refused("another uid's store", store, plan, receipt, outside,
                       [f"store {store}: it belongs to uid 12345, not to you; refusing"])
    # index.jsonl naming a path to a copy of the promotion outside, as a
    # 64-character id (the length an id has).
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        evil = os.path.join(tmp, "evil")
        shutil.copy(out["path"], evil + ".cbor")
        rel = os.path.relpath(evil, os.path.join(WORK, "idx-relative", "store", "receipts"))
        absolute = tmp + "/" + "./" * ((64 - len(tmp) - 6) // 2) + "evil"
        for name, target in (("idx-relative", "./" * ((64 - len(rel)) // 2) + rel),
                             ("idx-absolute", absolute)):
            if len(target) != 64:
                target = target.replace("/evil", "//evil", 1)
            base, store, outside = fresh(name)
            shutil.copytree(good, store, symlinks=True)
            with open(os.path.join(store, "index.jsonl"), "a") as f:
                f.write(json.dumps({"id": target, "kind": "receipt", "size": 1,
                                    "what": "promotion"}, sort_keys=True,
                                   separators=(",", ":")) + "\n")
            n = sum(1 for _ in open(os.path.join(store, "index.jsonl")))
            check(f"{name}: the planted id is 64 characters, a path", len(target) == 64,
                  target)
            expect_refused(f"an index line naming {target[:12]}...", store, plan, receipt,
                           tmp, [f"{store}/index.jsonl: line {n}: 'id' is not 64 lower-case "
                                 "hex digits (an index line names an id, never a path)"],
                           code=b"error: invalid_argument: ")


def main():
    global TINYLM, WORK
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    TINYLM = os.path.abspath(sys.argv[1])
    WORK = os.path.abspath(sys.argv[2])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    os.chmod(WORK, 0o700)
    made = made_store()
    if made is not None:
        plan, store, out, before, after = made
        for test, args in ((test_run_record, (store, out, before, after)),
                           (test_build_ids, (store,)), (test_custody, (plan, out))):
            try:
                test(*args)
            except Exception as e:  # a crash in one test is one failure
                check(f"{test.__name__} raised", False, repr(e))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
