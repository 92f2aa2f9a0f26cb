#!/usr/bin/python3
"""Forged receipts: `tinylm receipt show` rejects every byte it does not
hash (docs/receipts.md §Verification), on real receipts written by the CLI
on the tiny golden artifact:

  * the node ids recompute here, independently (hashlib, and a
    deterministic CBOR encoder of this file's own);
  * for each node type and each metadata field (the sampler profile's
    too), one changed value left unhashed is hash_mismatch naming the
    node; a changed type, child or id likewise;
  * forgeries whose ids are all recomputed up to a new root are
    invalid_argument naming the field: a type "generation\\0forged", an
    extra or missing field in a node, in each node type's metadata, at
    the top level ("model": "forged") or in timings_us; a key "a\\0b";
    text holding U+0000; a field of the wrong type; an integer below
    -2^63 or a map with a non-text key (both crashed `--json` before); a
    node outside the graph, twice, or out of order; token counts that
    disagree with the nodes;
  * every rejected file fails the same way without --json (never "no
    nodes" and exit 0);
  * seeds in [2^63, 2^64-1] (issue 11.1: a segfault with --json, nodes
    missing without): the receipt verifies and shows the seed exactly;
  * sampler parameters display as decimals (raw bits kept in --json);
    stop strings and the token limit are in the generation node's
    identity even when they do not fire; timings show as unverified and
    changing them changes nothing else;
  * the execution record (kernel variant, thread count and how the model's
    digests were checked, docs/fast-profile.md F-10) is outside the identity like the timings: changed or removed, the
    receipt verifies with the same root and shows the values it holds as
    unverified; it is strictly typed; a receipt written before it existed
    (before-execution.receipt.cbor, committed) still verifies;
  * the converter's receipt displays (not verified: a record), forged
    ones are refused; `tinylm receipt` alone prints its usage once;
  * acquisition and drift receipts (tinylm pull, tinylm drift), written
    here for a synthetic checkpoint, verify; forged ones with every id
    recomputed (an unknown, missing or mistyped field in a node, a file
    entry or at the top level, an unknown node type, an extra node, nodes
    or children out of order, the root elsewhere) are invalid_argument
    naming the field, from `receipt show` and from `convert`, which writes
    no artifact (the same forgeries were accepted, or crashed convert,
    before issue 23.3/23.6).

    forged_test.py TINYLM WORKDIR
"""

import copy
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

import cbor2

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402
MODEL = os.path.join(ROOT, "tests", "golden", "slm", "tiny-f32.slm")
# Written by `tinylm run` at ab8e3da (before receipts had "execution").
OLD_RECEIPT = os.path.join(ROOT, "tests", "receipt", "before-execution.receipt.cbor")
OLD_ROOT = "dcf7b3280913d40471cf6ec219aef08a8bc81e407e1fc732520d31c053abac9f"
TOKENIZER_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-tokenizer")
NODE_TYPES = ["artifact", "runtime", "tokenizer", "template", "prompt", "sampler",
              "generation"]

def tinylm(*args):
    return subprocess.run([TINYLM, *args], capture_output=True, timeout=300)


# --- deterministic CBOR (RFC 8949 §4.2.1), written independently -----------

def head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    for ai, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * width):
            return bytes([major << 5 | ai]) + n.to_bytes(width, "big")
    raise ValueError(n)


def enc(v):
    if v is None:
        return b"\xf6"
    if v is True:
        return b"\xf5"
    if v is False:
        return b"\xf4"
    if isinstance(v, int):
        return head(0, v) if v >= 0 else head(1, -1 - v)
    if isinstance(v, bytes):
        return head(2, len(v)) + v
    if isinstance(v, str):
        b = v.encode()
        return head(3, len(b)) + b
    if isinstance(v, list):
        return head(4, len(v)) + b"".join(enc(x) for x in v)
    if isinstance(v, dict):
        pairs = sorted((enc(k), enc(x)) for k, x in v.items())
        return head(5, len(pairs)) + b"".join(k + x for k, x in pairs)
    raise TypeError(type(v))


def node_id(node):
    t = node["type"].encode()
    return hashlib.sha256(b"tinylm-node-v1" + head(3, len(t)) + t +
                          enc(node["metadata"]) + head(0, len(node["children"])) +
                          b"".join(node["children"])).digest()


def rehash(doc):
    """Recomputes every node id, children first, and the root: the forger's
    best effort."""
    ids = {}
    for n in doc.get("nodes", []):
        n["children"] = [ids.get(c, c) for c in n["children"]]
        new = node_id(n)
        ids[n["id"]] = new
        if doc.get("root") == n["id"]:
            doc["root"] = new
        n["id"] = new
    return doc


# --- running receipt show ----------------------------------------------------

def show(doc_or_bytes, name):
    path = os.path.join(WORK, name + ".cbor")
    data = doc_or_bytes if isinstance(doc_or_bytes, bytes) else enc(doc_or_bytes)
    with open(path, "wb") as f:
        f.write(data)
    pj = tinylm("receipt", "show", path, "--json")
    pt = tinylm("receipt", "show", path)
    try:
        out = json.loads(pj.stdout)
    except ValueError:
        out = None
    return pj, pt, out


def expect_rejected(name, doc, code, needle):
    pj, pt, out = show(doc, "forged")
    detail = (pj.stdout + pj.stderr).decode(errors="replace")
    ok = (pj.returncode == 1 and isinstance(out, dict) and out.get("error") == code and
          needle in out.get("detail", ""))
    text_err = pt.stderr.decode(errors="replace")
    ok_text = (pt.returncode == 1 and pt.stdout == b"" and
               text_err.startswith(f"error: {code}: ") and needle in text_err)
    check(f"{name}: {code} naming {needle!r} (--json and text)", ok and ok_text,
          detail + " | " + text_err + f" rc={pj.returncode}/{pt.returncode}")


def mutate_value(v):
    """A different value of the same type."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1 if v < 2**64 - 1 else v - 1
    if isinstance(v, bytes):
        return bytes([v[0] ^ 1]) + v[1:] if v else b"\x00"
    if isinstance(v, str):
        return v + "x"
    if isinstance(v, list):
        return v[:-1] if v else [0]
    if v is None:
        return "x"
    raise TypeError(type(v))


def leaf_paths(meta, prefix=()):
    for k, v in meta.items():
        if isinstance(v, dict):
            yield from leaf_paths(v, prefix + (k,))
        else:
            yield prefix + (k,)


def get_in(d, path):
    for k in path[:-1]:
        d = d[k]
    return d


def run_receipt(name, *args):
    path = os.path.join(WORK, name + ".receipt.cbor")
    p = tinylm("run", MODEL, *args, "--receipt", path, "--json")
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = None
    if not check(f"run {name} writes a receipt", p.returncode == 0 and out is not None
                 and os.path.exists(path), p.stderr.decode(errors="replace")):
        return None, None
    with open(path, "rb") as f:
        return f.read(), out


def bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


# --- the tests ---------------------------------------------------------------

def test_big_seeds():
    for seed in (2**63, 2**64 - 1):
        raw, out = run_receipt(f"seed{seed}", "--prompt", "hi", "-n", "3", "--seed", str(seed))
        if raw is None:
            continue
        pj, pt, doc = show(raw, "bigseed")
        ok = pj.returncode == 0 and doc is not None and doc.get("verified") is True
        if not check(f"seed {seed}: receipt show --json verifies (issue 11.1)", ok,
                     (pj.stdout + pj.stderr).decode(errors="replace")[-400:]):
            continue
        sampler = next(n for n in doc["nodes"] if n["type"] == "sampler")
        check(f"seed {seed}: --json seed is {{\"integer\": \"{seed}\"}}",
              sampler["metadata"]["seed"] == {"integer": str(seed)},
              str(sampler["metadata"]["seed"]))
        text = pt.stdout.decode()
        check(f"seed {seed}: text shows every node and the seed exactly",
              pt.returncode == 0 and f"seed={seed} " in text and
              all(f"  {t} " in text for t in NODE_TYPES), text)


def test_independent_ids(raw):
    doc = cbor2.loads(raw)
    check("the receipt is deterministic CBOR (re-encoded here to the same bytes)",
          enc(doc) == raw)
    check("every node id recomputes here",
          all(node_id(n) == n["id"] for n in doc["nodes"]))
    check("the nodes are the seven types, children first",
          [n["type"] for n in doc["nodes"]] == NODE_TYPES)


def test_unhashed_mutations(raw):
    doc = cbor2.loads(raw)
    for i, n in enumerate(doc["nodes"]):
        for path in leaf_paths(n["metadata"]):
            bad = copy.deepcopy(doc)
            parent = get_in(bad["nodes"][i]["metadata"], path)
            parent[path[-1]] = mutate_value(parent[path[-1]])
            expect_rejected(f"{n['type']}.{'.'.join(path)} changed", bad,
                            "hash_mismatch", f"nodes[{i}] ({n['type']})")
        bad = copy.deepcopy(doc)
        bad["nodes"][i]["id"] = mutate_value(n["id"])
        expect_rejected(f"{n['type']} id changed", bad, "hash_mismatch", f"nodes[{i}]")
        if n["children"]:
            bad = copy.deepcopy(doc)
            bad["nodes"][i]["children"][0] = mutate_value(n["children"][0])
            expect_rejected(f"{n['type']} child changed", bad, "hash_mismatch",
                            f"nodes[{i}]")
    # A node's type swapped for another with the same metadata schema.
    bad = copy.deepcopy(doc)
    bad["nodes"][2]["type"] = "template"
    expect_rejected("tokenizer node retyped as template", bad, "hash_mismatch", "nodes[2]")


def test_rehashed_forgeries(raw):
    doc = cbor2.loads(raw)
    gen = len(doc["nodes"]) - 1

    def forged(edit):
        bad = copy.deepcopy(doc)
        edit(bad)
        return rehash(bad)

    def set_type(d):
        d["nodes"][gen]["type"] = "generation\0forged"
    bad = copy.deepcopy(doc)
    set_type(bad)  # the id of "generation" kept (issue 17.3)
    expect_rejected('type "generation\\0forged" with the id of "generation"', bad,
                    "invalid_argument", "unknown node type 'generation\\x00forged'")
    expect_rejected('type "generation\\0forged"', forged(set_type), "invalid_argument",
                    "unknown node type 'generation\\x00forged'")
    for i, n in enumerate(doc["nodes"]):
        t = n["type"]

        def extra_node_field(d, i=i):
            d["nodes"][i]["note"] = "forged"
        expect_rejected(f"{t}: extra node field", forged(extra_node_field),
                        "invalid_argument", f"nodes[{i}]: unknown field 'note'")

        def extra_meta(d, i=i):
            d["nodes"][i]["metadata"]["model"] = "forged"
        expect_rejected(f"{t}: extra metadata field", forged(extra_meta),
                        "invalid_argument", "unknown field 'model'")

        def nul_key(d, i=i):
            d["nodes"][i]["metadata"]["a\0b"] = 2
        expect_rejected(f"{t}: metadata key a\\0b", forged(nul_key), "invalid_argument",
                        "unknown field 'a\\x00b'")

        def non_text_key(d, i=i):
            d["nodes"][i]["metadata"][1] = 2
        expect_rejected(f"{t}: metadata with a non-text key", forged(non_text_key),
                        "invalid_argument", "expected text keys")
        for path in leaf_paths(n["metadata"]):
            name = ".".join(path)

            def drop(d, i=i, path=path):
                del get_in(d["nodes"][i]["metadata"], path)[path[-1]]
            expect_rejected(f"{t}.{name} missing", forged(drop), "invalid_argument",
                            f"missing field '{path[-1]}'")

            def retype(d, i=i, path=path):
                parent = get_in(d["nodes"][i]["metadata"], path)
                v = parent[path[-1]]
                parent[path[-1]] = -2**64 if isinstance(v, (str, bytes, list)) or v is None \
                    else "forged"
            expect_rejected(f"{t}.{name} of another type", forged(retype),
                            "invalid_argument", name)
            v = get_in(n["metadata"], path)[path[-1]]
            if isinstance(v, str):
                def nul_text(d, i=i, path=path):
                    parent = get_in(d["nodes"][i]["metadata"], path)
                    parent[path[-1]] = parent[path[-1]] + "\0forged"
                expect_rejected(f"{t}.{name} holding U+0000", forged(nul_text),
                                "invalid_argument", f"{name}: text holds U+0000")

    def top_extra(d):
        d["model"] = "forged"
    expect_rejected('top-level "model": "forged"', forged(top_extra), "invalid_argument",
                    "unknown top-level field 'model'")

    def top_non_text_key(d):
        d["extra"] = {1: 2}
    expect_rejected("top-level field holding a map with a non-text key (issue 17.2)",
                    forged(top_non_text_key), "invalid_argument",
                    "unknown top-level field 'extra'")

    def top_big_negative(d):
        d["extra"] = -2**64
    expect_rejected("top-level field holding -2^64 (issue 17.2)", forged(top_big_negative),
                    "invalid_argument", "unknown top-level field 'extra'")
    for key in ("format", "root", "nodes", "timings_us"):
        def drop_top(d, key=key):
            del d[key]
        expect_rejected(f"top-level {key} missing", forged(drop_top), "invalid_argument",
                        "neither a run receipt" if key == "format" else "are required")

    def wrong_format(d):
        d["format"] = "tinylm.receipt/2"
    expect_rejected("format tinylm.receipt/2", forged(wrong_format), "invalid_argument",
                    "format: 'tinylm.receipt/2'")
    for key in ("prefill", "decode", "prefill_tokens", "decode_tokens"):
        def t_drop(d, key=key):
            del d["timings_us"][key]
        expect_rejected(f"timings_us.{key} missing", forged(t_drop), "invalid_argument",
                        f"missing field '{key}'")

        def t_text(d, key=key):
            d["timings_us"][key] = "1"
        expect_rejected(f"timings_us.{key} as text", forged(t_text), "invalid_argument",
                        f"timings_us.{key}: expected an unsigned integer")

    def t_extra(d):
        d["timings_us"]["model"] = 1
    expect_rejected("timings_us extra field", forged(t_extra), "invalid_argument",
                    "timings_us: unknown field 'model'")
    for key in ("prefill_tokens", "decode_tokens"):
        def t_count(d, key=key):
            d["timings_us"][key] += 1
        expect_rejected(f"timings_us.{key} disagrees with the nodes", forged(t_count),
                        "invalid_argument", f"timings_us.{key}")

    # The node list: exactly the graph under the root, each once, in order.
    def orphan(d):
        extra = copy.deepcopy(d["nodes"][0])
        extra["metadata"]["artifact_id"] = b"\x01" * 32
        extra["id"] = node_id(extra)
        d["nodes"].insert(0, extra)
    expect_rejected("a node outside the graph", forged(orphan), "invalid_argument",
                    "is out of place")

    def twice(d):
        d["nodes"].insert(1, copy.deepcopy(d["nodes"][0]))
    expect_rejected("a node listed twice", forged(twice), "invalid_argument",
                    "is out of place")

    def swapped(d):
        d["nodes"][0], d["nodes"][1] = d["nodes"][1], d["nodes"][0]
    expect_rejected("two nodes swapped", forged(swapped), "invalid_argument",
                    "out of place")

    def wrong_child_type(d):
        d["nodes"][gen]["children"][0] = d["nodes"][1]["id"]
    expect_rejected("a child of the wrong type", forged(wrong_child_type),
                    "invalid_argument", "children[0] is a 'runtime' node, not 'artifact'")

    def root_elsewhere(d):
        d["root"] = d["nodes"][4]["id"]
    expect_rejected("root naming the prompt node", forged(root_elsewhere),
                    "invalid_argument", "root: not a generation node")


def test_display(raw, out):
    pj, pt, doc = show(raw, "genuine")
    if not check("genuine receipt verifies", pj.returncode == 0 and doc is not None and
                 doc.get("verified") is True and doc["root"] == out["receipt_id"]):
        return
    sampler = next(n for n in doc["nodes"] if n["type"] == "sampler")["metadata"]["profile"]
    check("--json keeps the sampler's raw bits",
          [sampler[k] for k in ("temperature", "top_p", "min_p", "repeat_penalty")] ==
          [bits(0.9), bits(0.95), bits(0.01), bits(1.1)], str(sampler))
    text = pt.stdout.decode()
    check("text shows sampler parameters as decimals",
          all(s in text for s in ("temperature=0.9 ", "top_p=0.95 ", "min_p=0.01 ",
                                  "repeat_penalty=1.1")), text)
    check("--json names the unverified fields",
          doc.get("unverified") == ["timings_us.prefill", "timings_us.decode",
                                    "execution.isa", "execution.threads", "execution.verify"],
          str(doc.get("unverified")))
    check("text marks the timings unverified",
          "timings (unverified, not part of the identity)" in text, text)
    gen = next(n for n in doc["nodes"] if n["type"] == "generation")["metadata"]
    check("generation node holds max_new_tokens and stop_strings",
          gen["max_new_tokens"] == 6 and gen["stop_strings"] == ["zzz".encode().hex()],
          str(gen))
    # Timings are outside the identity: changed, the receipt still
    # verifies with the same root and shows the new value as unverified.
    d = cbor2.loads(raw)
    d["timings_us"]["prefill"] = 123456789
    pj, pt, doc2 = show(enc(d), "timings")
    check("changed timings still verify, same root, shown as unverified",
          pj.returncode == 0 and doc2 and doc2["root"] == doc["root"] and
          "prefill 123456789 us" in pt.stdout.decode())


def test_execution(raw):
    d = cbor2.loads(raw)
    ex = d.get("execution", {})
    if not check("run writes the execution record: isa, threads and how the model was verified",
                 set(ex) == {"isa", "threads", "verify"} and isinstance(ex["isa"], str) and
                 isinstance(ex["threads"], int) and ex["threads"] >= 1 and
                 ex["verify"] in ("full", "stamp"), repr(ex)):
        return
    root = d["root"].hex()
    d["execution"] = {"isa": "forged-isa", "threads": 99}
    pj, pt, doc = show(enc(d), "execution-forged")
    check("a changed execution record still verifies, same root, shown as unverified",
          pj.returncode == 0 and doc and doc["root"] == root and
          doc.get("execution") == {"isa": "forged-isa", "threads": 99} and
          "execution.threads" in doc.get("unverified", []) and
          'execution (unverified, not part of the identity): isa="forged-isa" threads=99'
          in pt.stdout.decode(), (pj.stdout + pj.stderr + pt.stdout).decode(errors="replace"))
    del d["execution"]
    pj, pt, doc = show(enc(d), "execution-dropped")
    check("without the execution record the receipt verifies (same root) and shows none",
          pj.returncode == 0 and doc and doc["root"] == root and "execution" not in doc and
          doc.get("unverified") == ["timings_us.prefill", "timings_us.decode"] and
          "  execution (" not in pt.stdout.decode(),
          (pj.stdout + pj.stderr).decode(errors="replace"))

    def forged(edit):
        bad = cbor2.loads(raw)
        edit(bad["execution"])
        return rehash(bad)

    def setitem(k, v):
        return lambda e: e.__setitem__(k, v)
    cases = [("an extra field", setitem("model", 1), "execution: unknown field 'model'"),
             ("isa missing", lambda e: e.pop("isa"), "execution: missing field 'isa'"),
             ("threads missing", lambda e: e.pop("threads"),
              "execution: missing field 'threads'"),
             ("threads as text", setitem("threads", "2"),
              "execution.threads: expected an unsigned integer"),
             ("threads negative", setitem("threads", -1),
              "execution.threads: expected an unsigned integer"),
             ("isa as bytes", setitem("isa", b"avx2"), "execution.isa: expected text"),
             ("verify as bytes", setitem("verify", b"full"), "execution.verify: expected text"),
             ("isa holding U+0000", setitem("isa", "avx2\0scalar"),
              "execution.isa: text holds U+0000")]
    for name, edit, needle in cases:
        expect_rejected(f"execution: {name}", forged(edit), "invalid_argument", needle)
    bad = cbor2.loads(raw)
    bad["execution"] = ["avx2", 2]
    expect_rejected("execution not a map", bad, "invalid_argument", "execution: expected a map")


def test_old_receipt():
    with open(OLD_RECEIPT, "rb") as f:
        raw = f.read()
    pj, pt, doc = show(raw, "old")
    check("a receipt written before the execution record verifies, with its root",
          pj.returncode == 0 and doc and doc.get("verified") is True and
          doc["root"] == OLD_ROOT and "execution" not in doc and
          doc.get("unverified") == ["timings_us.prefill", "timings_us.decode"] and
          pt.returncode == 0 and f"run receipt {OLD_ROOT}" in pt.stdout.decode(),
          (pj.stdout + pj.stderr).decode(errors="replace"))


def test_policy_in_identity():
    args = ["--prompt", "Hello world", "-n", "6", "--seed", "5"]
    _, a = run_receipt("plain", *args)
    _, b = run_receipt("stop", *args, "--stop", "zzz")
    _, c = run_receipt("limit", "--prompt", "Hello world", "-n", "7", "--seed", "5")
    if a and b and c:
        check("an unfired stop string changes the receipt id",
              a["ids"] == b["ids"] and a["receipt_id"] != b["receipt_id"])
        check("the token limit changes the receipt id",
              c["ids"][:len(a["ids"])] == a["ids"] and a["receipt_id"] != c["receipt_id"])


def test_generation_prompt_recorded():
    """run --messages adds the generation prompt unless the conversation
    says otherwise (issue 11); the prompt node records which."""
    def prompt_meta(raw):
        doc = cbor2.loads(raw)
        return next(n["metadata"] for n in doc["nodes"] if n["type"] == "prompt")

    def conv(name, extra):
        path = os.path.join(WORK, name + ".json")
        with open(path, "w") as f:
            json.dump({"messages": [{"role": "user", "content": "Hi"}], **extra}, f)
        return path

    args = ["-n", "2", "--seed", "3"]
    raw_default, _ = run_receipt("conv-default", "--messages", conv("default", {}), *args)
    raw_off, _ = run_receipt("conv-off", "--messages",
                             conv("off", {"add_generation_prompt": False}), *args)
    raw_text, _ = run_receipt("text-prompt", "--raw", "--prompt", "Hi", *args)
    raw_asked, _ = run_receipt("asked-prompt", "--prompt", "Hi", *args)
    if raw_asked:
        pj, _, shown = show(raw_asked, "asked")
        check("run --prompt (through the template): receipt show verifies it",
              pj.returncode == 0 and shown is not None and shown.get("verified") is True,
              (pj.stdout + pj.stderr).decode(errors="replace")[-400:])
    if raw_default and raw_asked:
        check("run --prompt records the template's rendering, as --messages with that one "
              "user message", prompt_meta(raw_asked) == prompt_meta(raw_default),
              repr(prompt_meta(raw_asked)))
    if raw_default and raw_off and raw_text:
        d, o, t = prompt_meta(raw_default), prompt_meta(raw_off), prompt_meta(raw_text)
        check("run --messages records add_generation_prompt true by default",
              d["mode"] == "messages" and d["add_generation_prompt"] is True, repr(d))
        check("the conversation's own false is recorded",
              o["mode"] == "messages" and o["add_generation_prompt"] is False, repr(o))
        check("the generation prompt shows in the rendered ids (default longer)",
              len(d["ids"]) > len(o["ids"]) and d["ids"][:len(o["ids"])] == o["ids"])
        check("a raw prompt (--raw) records mode text, add_generation_prompt false",
              t["mode"] == "text" and t["add_generation_prompt"] is False, repr(t))


def test_convert_receipt():
    slm = os.path.join(WORK, "tok.slm")
    p = tinylm("convert", "--tokenizer-only", TOKENIZER_DIR, "-o", slm)
    if not check("convert --tokenizer-only writes a receipt",
                 p.returncode == 0 and os.path.exists(slm + ".receipt.cbor"),
                 p.stderr.decode(errors="replace")):
        return
    with open(slm + ".receipt.cbor", "rb") as f:
        raw = f.read()
    with open(slm, "rb") as f:
        artifact_id = hashlib.sha256(f.read()).hexdigest()
    pj, pt, doc = show(raw, "convert")
    check("receipt show --json on a converter receipt: verified false",
          pj.returncode == 0 and doc and doc["verified"] is False and
          doc["receipt"] == "tinylm.convert/1" and doc["artifact_id"] == artifact_id,
          (pj.stdout + pj.stderr).decode(errors="replace"))
    text = pt.stdout.decode()
    check("receipt show on a converter receipt says it is a record",
          pt.returncode == 0 and text.startswith("converter receipt (tinylm.convert/1") and
          artifact_id in text, text)
    d = cbor2.loads(raw)
    d["model"] = "forged"
    expect_rejected("converter receipt with an extra field", d, "invalid_argument",
                    "unknown field 'model'")
    d = cbor2.loads(raw)
    d["options"][7] = 1
    expect_rejected("converter receipt with a non-text key", d, "invalid_argument",
                    "receipt.options: expected text keys")
    d = cbor2.loads(raw)
    d["receipt"] = "tinylm.convert/9"
    expect_rejected("converter receipt of another version", d, "invalid_argument",
                    "not tinylm.convert/1")


# --- acquisition and drift receipts (tinylm pull, tinylm drift) -------------

def blob_oid(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def acquisition_receipt(hf):
    """An acquisition receipt for the files of hf, in the layout `tinylm
    pull` writes (docs/acquisition.md), every id computed here."""
    files = []
    for name in sorted(os.listdir(hf)):
        with open(os.path.join(hf, name), "rb") as f:
            data = f.read()
        sha = hashlib.sha256(data).hexdigest()
        files.append({"path": name, "size": len(data), "sha256": sha, "git_oid": blob_oid(data),
                      "lfs_oid": sha if name.endswith(".safetensors") else None})
    endpoint, repo, commit = "https://huggingface.co", "tinylm-test/qwen3-tiny", "a" * 40
    metas = [
        ("builder", {"name": "tinylm pull", "version": "0", "build_id": "forged-test"}),
        ("source", {"endpoint": endpoint, "repo_id": repo, "requested_revision": "main",
                    "resolved_commit": commit}),
        ("files", {"files": files}),
        ("policy", {"allowlist": "qwen3/1", "profile": None,
                    "limits": {"max_files": 64, "max_file_bytes": 1 << 36,
                               "max_total_bytes": 1 << 38, "max_depth": 1},
                    "license": {"id": None, "source": None, "decision": "accepted-missing",
                                "license_file_sha256": None, "readme_sha256": None}}),
        ("drift", {"re_resolved_commit": commit, "moved": False}),
    ]
    nodes = [{"id": b"", "type": t, "children": [], "metadata": m} for t, m in metas]
    for n in nodes:
        n["id"] = node_id(n)
    root = {"id": b"", "type": "acquisition", "children": [n["id"] for n in nodes],
            "metadata": {"invocation": {"command": "tinylm pull", "repo_id": repo,
                                        "revision": "main", "endpoint": endpoint,
                                        "accept_missing_license": True}}}
    root["id"] = node_id(root)
    return {"format": "tinylm.acquisition/1", "root": root["id"], "nodes": nodes + [root],
            "timings_us": {"download": 1, "total": 2, "bytes_fetched": 3}}


def drift_receipt(acq):
    """A drift observation receipt on acq, in the layout `tinylm drift` writes."""
    src = next(n for n in acq["nodes"] if n["type"] == "source")
    nodes = [{"id": b"", "type": "builder", "children": [],
              "metadata": {"name": "tinylm drift", "version": "0", "build_id": "forged-test"}},
             copy.deepcopy(src),
             {"id": b"", "type": "observation", "children": [],
              "metadata": {"endpoint": src["metadata"]["endpoint"], "re_resolved_commit": "b" * 40,
                           "moved": True, "changed": ["README.md"], "added": [], "removed": [],
                           "requested_revision": "main"}}]
    for n in nodes:
        n["id"] = node_id(n)
    root = {"id": b"", "type": "drift", "children": [n["id"] for n in nodes],
            "metadata": {"acquisition_receipt_id": acq["root"].hex()}}
    root["id"] = node_id(root)
    return {"format": "tinylm.drift/1", "root": root["id"], "nodes": nodes + [root],
            "timings_us": {"total": 5}}


def node_of(doc, t):
    return next(n for n in doc["nodes"] if n["type"] == t)


def graph_forgeries(kind, good):
    """(name, forged document, the detail's needle): every id recomputed."""
    out = []

    def forged(name, change, needle):
        d = copy.deepcopy(good)
        change(d)
        out.append((f"{kind} {name}", rehash(d), needle))

    first_leaf = "endpoint" if kind == "acquisition" else "endpoint"
    forged("source node with an unknown field",
           lambda d: node_of(d, "source")["metadata"].__setitem__("mirror", "https://evil"),
           "unknown field 'mirror'")
    forged("source node without endpoint",
           lambda d: node_of(d, "source")["metadata"].pop(first_leaf),
           "missing field 'endpoint'")
    forged("source repo_id of the wrong type",
           lambda d: node_of(d, "source")["metadata"].__setitem__("repo_id", 7),
           "source).metadata.repo_id: expected text")
    forged("builder version as bytes",
           lambda d: node_of(d, "builder")["metadata"].__setitem__("version", b"0"),
           "metadata.version: expected text")
    forged("an unknown top-level field",
           lambda d: d.__setitem__("signed_by", "huggingface"),
           "unknown top-level field 'signed_by'")
    forged("timings_us with an extra field",
           lambda d: d["timings_us"].__setitem__("fetched_from", "x"),
           "unknown field 'fetched_from'")
    forged("a node with a fifth field",
           lambda d: node_of(d, "builder").__setitem__("signature", b"x"),
           "unknown field 'signature'")

    def extra_node(d):
        n = copy.deepcopy(node_of(d, "builder"))
        n["metadata"]["name"] = "someone else"
        n["id"] = node_id(n)
        d["nodes"].insert(0, n)
    forged("an extra node outside the graph", extra_node, "out of place")

    def unknown_type(d):
        n = node_of(d, "builder")
        n["type"] = "signature"
    forged("a node of an unknown type", unknown_type, "unknown node type 'signature'")

    def swapped(d):
        d["nodes"][0], d["nodes"][1] = d["nodes"][1], d["nodes"][0]
    forged("two nodes swapped", swapped, "out of place")

    def children_swapped(d):
        r = d["nodes"][-1]
        r["children"][0], r["children"][1] = r["children"][1], r["children"][0]
    forged("the root's children swapped", children_swapped, "children[0] is a 'source' node")

    def root_elsewhere(d):
        d["root"] = d["nodes"][0]["id"]
    forged("root naming the builder node", root_elsewhere, "root: not a")

    def fewer_children(d):
        d["nodes"][-1]["children"].pop()
    forged("the root without its last child", fewer_children, "expected")
    if kind == "acquisition":
        forged("a file without path",
               lambda d: node_of(d, "files")["metadata"]["files"][0].pop("path"),
               "missing field 'path'")
        forged("a file size as text",
               lambda d: node_of(d, "files")["metadata"]["files"][0].__setitem__("size", "12"),
               "files[0].size: expected an unsigned integer")
        forged("a file with an unknown field",
               lambda d: node_of(d, "files")["metadata"]["files"][0].__setitem__("origin", "x"),
               "unknown field 'origin'")
    else:
        forged("observation changed as text",
               lambda d: node_of(d, "observation")["metadata"].__setitem__("changed", "README.md"),
               "changed: expected an array")
        forged("observation added holding a number",
               lambda d: node_of(d, "observation")["metadata"].__setitem__("added", [1]),
               "added[0]: expected text")
    return out


def test_acquisition_receipts():
    """docs/acquisition.md: acquisition and drift receipts are checked like
    run receipts; convert binds only a receipt that passes (a forged one
    with recomputed ids would otherwise lend the artifact its provenance)."""
    hf = os.path.join(WORK, "hf")
    p = tinylm("synth", "--config", "tiny", "--seed", "7", "--tokenizer-dir", TOKENIZER_DIR,
               "-o", hf)
    if not check("synth a checkpoint for the acquisition receipts", p.returncode == 0,
                 p.stderr.decode(errors="replace")):
        return
    # As in tests/convert: the synthetic generation_config.json's EOS
    # disagreement would stop the conversion (the file is optional).
    os.remove(os.path.join(hf, "generation_config.json"))
    good = acquisition_receipt(hf)
    pj, pt, out = show(good, "acquisition")
    check("an acquisition receipt written here verifies (receipt show)",
          pj.returncode == 0 and out is not None and out.get("verified") is True and
          pt.returncode == 0, (pj.stderr + pt.stderr).decode(errors="replace"))
    receipt = os.path.join(hf, "acquisition.receipt.cbor")

    def convert(doc, name):
        with open(receipt, "wb") as f:
            f.write(enc(doc))
        slm = os.path.join(WORK, name + ".slm")
        p = tinylm("convert", hf, "-o", slm, "--force", "--json")
        return p, slm

    p, slm = convert(good, "acq-good")
    check("convert binds the acquisition receipt written here",
          p.returncode == 0, p.stderr.decode(errors="replace"))
    if p.returncode == 0:
        i = tinylm("inspect", slm, "--json")
        acq = json.loads(i.stdout).get("acquisition") if i.returncode == 0 else None
        check("inspect names the receipt convert bound",
              acq is not None and acq.get("receipt_id") == good["root"].hex(), acq)
    drift = drift_receipt(good)
    pj, pt, out = show(drift, "drift")
    check("a drift receipt written here verifies (receipt show)",
          pj.returncode == 0 and out is not None and out.get("verified") is True,
          (pj.stderr + pt.stderr).decode(errors="replace"))
    for kind, doc in (("acquisition", good), ("drift", drift)):
        for name, bad, needle in graph_forgeries(kind, doc):
            expect_rejected(name, bad, "invalid_argument", needle)
            if kind == "acquisition":
                p, slm = convert(bad, "acq-forged")
                err = p.stderr.decode(errors="replace")
                check(f"convert refuses the {name}: invalid_argument naming {needle!r}, "
                      "no artifact", p.returncode == 1 and
                      "invalid_argument" in err and needle in err and not os.path.exists(slm),
                      f"rc={p.returncode} {err}")
    # Values the schema types but pull would never write.
    for name, change, needle in (
            ("a file path with '..'", lambda d: node_of(d, "files")["metadata"]["files"][0]
             .__setitem__("path", "../config.json"), "path is not one pull would write"),
            ("a commit that is not 40 hex digits", lambda d: node_of(d, "source")["metadata"]
             .__setitem__("resolved_commit", "main"), "resolved_commit"),
            ("a file listed twice", lambda d: node_of(d, "files")["metadata"]["files"]
             .append(copy.deepcopy(node_of(d, "files")["metadata"]["files"][0])),
             "listed twice")):
        d = copy.deepcopy(good)
        change(d)
        p, slm = convert(rehash(d), "acq-value")
        err = p.stderr.decode(errors="replace")
        check(f"convert refuses {name}", p.returncode == 1 and "invalid_argument" in err and
              needle in err and not os.path.exists(slm), f"rc={p.returncode} {err}")


def test_usage():
    p = tinylm("receipt")
    err = p.stderr.decode()
    check("`tinylm receipt` alone prints its usage once, exit 2",
          p.returncode == 2 and err.count("usage: tinylm receipt show") == 1 and
          "usage: usage" not in err, err)
    p = tinylm("receipt", "show", "--bogus", "--json")
    check("`receipt show --bogus --json`: unknown option, as JSON, exit 2",
          p.returncode == 2 and json.loads(p.stdout).get("error") == "usage" and
          "unknown option '--bogus'" in p.stderr.decode(), p.stderr.decode())


def main():
    global TINYLM, WORK
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    TINYLM = os.path.abspath(sys.argv[1])
    WORK = os.path.abspath(sys.argv[2])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    raw, out = run_receipt("sampled", "--prompt", "Hello world", "-n", "6", "--seed", "9",
                           "--temperature", "0.9", "--top-k", "40", "--top-p", "0.95",
                           "--min-p", "0.01", "--repeat-penalty", "1.1", "--stop", "zzz")
    tests = [test_big_seeds, test_policy_in_identity, test_generation_prompt_recorded,
             test_convert_receipt, test_usage, test_old_receipt, test_acquisition_receipts]
    if raw is not None:
        tests += [lambda: test_independent_ids(raw), lambda: test_display(raw, out),
                  lambda: test_execution(raw),
                  lambda: test_unhashed_mutations(raw), lambda: test_rehashed_forgeries(raw)]
    for test in tests:
        try:
            test()
        except Exception as e:  # a crash in one test is one failure
            check(f"{getattr(test, '__name__', 'test')} raised", False, repr(e))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
