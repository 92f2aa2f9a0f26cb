#!/usr/bin/python3
"""Signed promotions (docs/promotion-receipts.md §Signatures), on a store
`tinylm promote --sign` made of the synthetic tiny model (artifact and eos
claims: a few seconds):

  * `promote keygen -o KEY`: KEY (mode 0600, its header line) and KEY.pub;
    an existing key refused (exit 1, both files unchanged), --force
    replaces it;
  * `receipt show` verifies the signature receipt's shape;
  * `promote show --trust KEY.pub` and `report --trust` verify with the
    right key and name it; refuse (exit 1, typed error and rule) another
    key's signature (conflict, untrusted_key), one flipped byte in the
    signature in place (hash_mismatch, bad_signature) and with every id
    recomputed (bad_signature: it does not verify), a promotion with one
    flipped byte (hash_mismatch) or re-signed nowhere after an edit with
    its ids recomputed (not_found, missing_signature), an unsigned
    promotion (missing_signature) and a comparison receipt;
  * `promote status` lists the signature with its promotion;
  * a secret key others may read, or a public key file for --sign, is
    refused before anything runs (exit 2).

    promote_sign_test.py TINYLM WORKDIR
"""

import json
import os
import shutil
import stat
import subprocess
import sys

import cbor2

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
sys.path.insert(0, HERE)
from checks import check, summary  # noqa: E402
from forged_test import enc, rehash  # noqa: E402
from tiny_plan import tiny_plan  # noqa: E402


def tinylm(*args):
    return subprocess.run([TINYLM, *args], capture_output=True, timeout=300)


def text(p):
    return (p.stdout + p.stderr).decode(errors="replace")


def show(*args):
    p = tinylm("promote", "show", *args, "--json")
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        return p, {}


def refused(name, args, code, rule):
    p, out = show(*args)
    t = tinylm("promote", "show", *args)
    check(f"{name}: exit 1, {code} / {rule}",
          p.returncode == 1 and out.get("error") == code and out.get("rule") == rule and
          out.get("claim") == "(signature)" and t.returncode == 1 and
          t.stderr.decode().startswith(f"error: {code}: {rule}: claim '(signature)'"),
          text(p) + " | " + text(t))


def keygen(path, *more):
    return tinylm("promote", "keygen", "-o", path, *more, "--json")


def pub_hex(path):
    with open(path + ".pub") as f:
        return f.read().split("\n")[1].split(" ")[1]


def test_keygen():
    k = os.path.join(WORK, "k1")
    p = keygen(k)
    out = json.loads(p.stdout or b"{}")
    with open(k) as f:
        secret = f.read()
    with open(k + ".pub") as f:
        public = f.read()
    check("keygen writes KEY (0600, its header) and KEY.pub (its header, the same key)",
          p.returncode == 0 and stat.S_IMODE(os.stat(k).st_mode) == 0o600 and
          secret.startswith("tinylm-secret-key/1 ed25519\nseed ") and
          public.startswith("tinylm-public-key/1 ed25519\npublic ") and
          out.get("public_key") == pub_hex(k) and ("public " + pub_hex(k)) in secret,
          text(p))
    p = keygen(k)
    with open(k) as f:
        again = f.read()
    check("keygen refuses an existing key (exit 1, conflict), the file unchanged",
          p.returncode == 1 and json.loads(p.stdout or b"{}").get("error") == "conflict" and
          again == secret, text(p))
    p = keygen(k, "--force")
    with open(k) as f:
        forced = f.read()
    check("--force replaces it with a new key, still 0600",
          p.returncode == 0 and forced != secret and
          stat.S_IMODE(os.stat(k).st_mode) == 0o600, text(p))
    keygen(os.path.join(WORK, "k2"))


def node(doc, t):
    return next(n for n in doc["nodes"] if n["type"] == t)


def replace(path, data):
    os.chmod(path, 0o600)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o400)


def test_signed(plan):
    k1, k2 = os.path.join(WORK, "k1"), os.path.join(WORK, "k2")
    store = os.path.join(WORK, "store")
    p = tinylm("promote", plan, "--store", store, "--sign", k1, "--json")
    out = json.loads(p.stdout or b"{}")
    if not check("promote --sign promotes and names the signature receipt",
                 p.returncode == 0 and os.path.isfile(out.get("signature", "")), text(p)):
        return
    promo, sig = out["path"], out["signature"]
    r = tinylm("receipt", "show", sig, "--json")
    shown = json.loads(r.stdout or b"{}")
    meta = (shown.get("nodes") or [{}])[0].get("metadata", {})
    check("receipt show verifies the signature receipt: over the promotion, by k1",
          r.returncode == 0 and shown.get("verified") is True and
          meta.get("signed") == out["receipt"] and meta.get("public_key") == pub_hex(k1) and
          meta.get("algorithm") == "ed25519", text(r))
    p, view = show(promo, "--trust", k1 + ".pub")
    t = tinylm("promote", "show", promo, "--trust", k1 + ".pub")
    check("promote show --trust k1.pub: verified, naming the key and the signature",
          p.returncode == 0 and view.get("signature", {}).get("public_key") == pub_hex(k1) and
          t.returncode == 0 and ("signed by ed25519:" + pub_hex(k1)) in t.stdout.decode(),
          text(p) + text(t))
    refused("another key (k2.pub)", [promo, "--trust", k2 + ".pub"], "conflict",
            "untrusted_key")
    # One flipped byte in the signature, in place: the receipt is damaged.
    with open(sig, "rb") as f:
        original = f.read()
    doc = cbor2.loads(original)
    s = node(doc, "signature")["metadata"]["signature"]
    flipped = original.replace(s, bytes([s[0] ^ 1]) + s[1:])
    replace(sig, flipped)
    refused("one flipped signature byte in place", [promo, "--trust", k1 + ".pub"],
            "hash_mismatch", "bad_signature")
    replace(sig, original)
    # The same with every id recomputed: a well-formed receipt that does
    # not verify under the key.
    node(doc, "signature")["metadata"]["signature"] = bytes([s[0] ^ 1]) + s[1:]
    rehash(doc)
    forged = os.path.join(store, "receipts", doc["root"].hex() + ".cbor")
    with open(forged, "wb") as f:
        f.write(enc(doc))
    r = tinylm("receipt", "show", forged)
    check("the flipped signature with its ids recomputed passes receipt show (shape only)",
          r.returncode == 0, text(r))
    refused("one flipped signature byte, ids recomputed", [promo, "--trust", k1 + ".pub"],
            "hash_mismatch", "bad_signature")
    os.remove(forged)
    p, _ = show(promo, "--trust", k1 + ".pub")
    check("restored, it verifies again", p.returncode == 0, text(p))
    # One flipped byte in the promotion it signs.
    with open(promo, "rb") as f:
        pbytes = f.read()
    pdoc = cbor2.loads(pbytes)
    decision = node(pdoc, "promotion")["metadata"]["decision"].encode()
    replace(promo, pbytes.replace(decision, b"Promoted", 1))
    p, out = show(promo, "--trust", k1 + ".pub")
    check("a flipped byte in the signed promotion: refused (exit 1, hash_mismatch)",
          p.returncode == 1 and out.get("error") == "hash_mismatch", text(p))
    replace(promo, pbytes)
    # An edited promotion with its ids recomputed (it names the plan object
    # as its run record): it verifies, and nobody signed it.
    node(pdoc, "promotion")["metadata"]["run_record"] = \
        node(pdoc, "plan")["metadata"]["plan_id"]
    rehash(pdoc)
    edited = os.path.join(store, "receipts", pdoc["root"].hex() + ".cbor")
    with open(edited, "wb") as f:
        f.write(enc(pdoc))
    p, _ = show(edited)
    check("the edited promotion verifies without --trust", p.returncode == 0, text(p))
    refused("the edited promotion, ids recomputed", [edited, "--trust", k1 + ".pub"],
            "not_found", "missing_signature")
    os.remove(edited)
    # A comparison receipt is never signed.
    cmp_id = node(cbor2.loads(pbytes), "comparisons")["metadata"]["receipts"][0]["receipt_id"]
    refused("a comparison receipt", [os.path.join(store, "receipts", cmp_id.hex() + ".cbor"),
                                     "--trust", k1 + ".pub"], "invalid_argument",
            "missing_signature")
    # report --trust: the page with the right key, nothing with another.
    page = os.path.join(WORK, "report.html")
    r = tinylm("report", promo, "-o", page, "--trust", k1 + ".pub")
    check("report --trust k1.pub writes the page", r.returncode == 0 and os.path.isfile(page),
          text(r))
    page2 = os.path.join(WORK, "report2.html")
    r = tinylm("report", promo, "-o", page2, "--trust", k2 + ".pub", "--json")
    check("report --trust k2.pub: refused (exit 1, untrusted_key), no page",
          r.returncode == 1 and b"untrusted_key" in r.stdout and not os.path.exists(page2),
          text(r))
    # promote status: the signature stands with its promotion.
    r = tinylm("promote", "status", "--store", store, "--json")
    st = json.loads(r.stdout or b"{}")
    sigs = [x for x in st.get("receipts", []) if x.get("kind") == "signature"]
    check("promote status lists the signature, current with its promotion",
          r.returncode == 0 and len(sigs) == 1 and sigs[0]["status"] == "current", text(r))
    # An unsigned promotion of the same plan.
    other = os.path.join(WORK, "unsigned")
    p = tinylm("promote", plan, "--store", other, "--json")
    out = json.loads(p.stdout or b"{}")
    refused("an unsigned promotion", [out.get("path", "x"), "--trust", k1 + ".pub"],
            "not_found", "missing_signature")


def test_bad_keys(plan):
    k1 = os.path.join(WORK, "k1")
    store = os.path.join(WORK, "never")
    os.chmod(k1, 0o644)
    p = tinylm("promote", plan, "--store", store, "--sign", k1)
    check("a secret key others may read: refused before anything runs (exit 2)",
          p.returncode == 2 and b"chmod 600" in p.stderr and not os.path.exists(store), text(p))
    os.chmod(k1, 0o600)
    p = tinylm("promote", plan, "--store", store, "--sign", k1 + ".pub")
    check("a public key file for --sign: refused (exit 2), naming its header",
          p.returncode == 2 and b"tinylm-secret-key/1" in p.stderr and
          not os.path.exists(store), text(p))
    p = tinylm("promote", "show", os.path.join(WORK, "store", "receipts", "x.cbor"),
               "--trust", k1)
    check("a secret key file for --trust: usage (2)",
          p.returncode == 2 and b"tinylm-public-key/1" in p.stderr, text(p))


def main():
    global TINYLM, WORK
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    TINYLM = os.path.abspath(sys.argv[1])
    WORK = os.path.abspath(sys.argv[2])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    test_keygen()
    made = tiny_plan(tinylm, WORK, ("artifact", "eos"))
    if made is not None:
        plan = made[0]
        for test in (test_signed, test_bad_keys):
            try:
                test(plan)
            except Exception as e:  # a crash in one test is one failure
                check(f"{test.__name__} raised", False, repr(e))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
