#!/usr/bin/env python3
"""Structured output through `tinylm run` on the demo model
(docs/structured.md, docs/generation.md).

usage: lanes_test.py TINYLM WORKDIR

1. Sampling under the mask at temperature 1 over many seeds (fast lane,
   thinking off and on): every reply stops at EOS or at the -n limit; each
   EOS-stopped reply (after any <think> block) is a JSON document that ajv
   (npm, the independent validator) accepts for the schema, and run --json's
   `grammar` digest is the one the receipt's sampler node names.
2. Cross-lane: the same constrained request (schema, seed, temperature 1,
   thinking on) gives the same ids and receipt id on the fast lane with
   every kernel variant this CPU runs (TINYLM_KERNELS) at 1, 2 and 3
   threads; the strict lane (its own numerical profile, so its own ids and
   receipt) gives the same ids and receipt id again on a second run.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
PROMPT = "Describe a cat as a JSON object."
SEEDS = range(16)
VARIANTS = ("scalar", "avx2", "avx512")  # tl_native_kernels' x86-64 variants
AJV = r"""
const Ajv = require('ajv');
const fs = require('fs');
const [schema, docs] = process.argv.slice(1).map((f) => fs.readFileSync(f, 'utf8'));
const validate = new Ajv({ strict: true }).compile(JSON.parse(schema));
let bad = 0;
for (const line of docs.split('\n').filter((l) => l)) {
  const { seed, text } = JSON.parse(line);
  let doc;
  try { doc = JSON.parse(text); } catch (e) { console.log(`seed ${seed}: not JSON: ${e.message}`); bad++; continue; }
  if (!validate(doc)) { console.log(`seed ${seed}: ${JSON.stringify(validate.errors)}`); bad++; }
}
console.log(`ajv: ${bad} of ${docs.split('\n').filter((l) => l).length} invalid`);
process.exit(bad ? 1 : 0);
"""

failures = 0


def check(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures += 1


def run(tinylm, model, schema_path, seed, extra=(), env=None, receipt=None):
    cmd = [tinylm, "run", model, "--prompt", PROMPT, "--json-schema", schema_path,
           "--temperature", "1", "--seed", str(seed), "-n", "96", "--json", *extra]
    if receipt:
        cmd += ["--receipt", receipt, "--force"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return p.returncode, p.stdout + p.stderr
    return 0, json.loads(p.stdout)


def reply_text(text):
    """The reply after a <think> block, if any, and the newlines after it."""
    if text.startswith("<think>") and "</think>" in text:
        text = text.split("</think>", 1)[1]
    return text.lstrip("\n")


def main():
    tinylm, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    model = subprocess.run([os.path.join(ROOT, "scripts/demo_model.sh"), tinylm,
                            os.path.join(ROOT, "build/demo")],
                           capture_output=True, text=True, check=True).stdout.strip()
    schema_path = os.path.join(work, "schema.json")
    with open(schema_path, "w") as f:
        json.dump(SCHEMA, f)

    # 1. sampling under the mask, thinking off and on
    docs, stops, digests = [], {}, set()
    for think in ("--no-think", "--think"):
        for seed in SEEDS:
            rc, out = run(tinylm, model, schema_path, seed, [think])
            if rc != 0:
                check(False, "seed %d %s: run failed: %s" % (seed, think, out))
                continue
            stops[out["stop"]] = stops.get(out["stop"], 0) + 1
            digests.add(out.get("grammar"))
            if out["stop"] == "eos":
                docs.append({"seed": seed, "text": reply_text(out["text"])})
    check(set(stops) <= {"eos", "max_tokens"}, "every reply stops at EOS or -n: %s" % stops)
    check(len(docs) >= 8, "%d EOS-stopped documents to validate" % len(docs))
    check(len(digests) == 1 and None not in digests, "one grammar digest: %s" % digests)
    docs_path = os.path.join(work, "docs.jsonl")
    with open(docs_path, "w") as f:
        f.writelines(json.dumps(d) + "\n" for d in docs)
    p = subprocess.run(["node", "-e", AJV, schema_path, docs_path], capture_output=True,
                       text=True, cwd=ROOT)
    print(p.stdout.strip())
    check(p.returncode == 0, "ajv accepts every EOS-stopped document")
    rc, out = run(tinylm, model, schema_path, 0, ["--no-think"],
                  receipt=os.path.join(work, "r.cbor"))
    shown = subprocess.run([tinylm, "receipt", "show", os.path.join(work, "r.cbor"), "--json"],
                           capture_output=True, text=True)
    sampler = [n for n in json.loads(shown.stdout)["nodes"] if n["type"] == "sampler"]
    check(rc == 0 and sampler and sampler[0]["metadata"].get("grammar") == out["grammar"]
          and sampler[0]["metadata"].get("think_budget") == 1024,
          "the receipt verifies and names the grammar digest and the think budget")

    # 2. cross-lane: one request, every fast-lane variant and thread count
    seen = {}
    base = {k: v for k, v in os.environ.items() if k != "TINYLM_KERNELS"}
    for v in VARIANTS:
        for threads in ("1", "2", "3"):
            env = dict(base, TINYLM_KERNELS=v)
            rc, out = run(tinylm, model, schema_path, 5, ["--think", "-t", threads], env=env)
            if rc == 1 and "unsupported_feature" in out:
                print("skip: TINYLM_KERNELS=%s: this CPU does not run it" % v)
                break
            if rc != 0:
                check(False, "TINYLM_KERNELS=%s -t %s: %s" % (v, threads, out))
                continue
            seen["%s -t %s" % (v, threads)] = (out["ids"], out["receipt_id"])
    first = next(iter(seen.values()), None)
    check(len(seen) >= 3 and all(x == first for x in seen.values()),
          "fast lane: the same ids and receipt id on %s" % ", ".join(seen))
    strict = [run(tinylm, model, schema_path, 5, ["--think", "--lane", "scalar"])[1]
              for _ in range(2)]
    check(all(isinstance(s, dict) for s in strict) and
          strict[0]["ids"] == strict[1]["ids"] and
          strict[0]["receipt_id"] == strict[1]["receipt_id"] and
          strict[0]["stop"] in ("eos", "max_tokens"),
          "strict lane: the same ids and receipt id again")
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
