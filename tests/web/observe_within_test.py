"""`tinylm observe --compare A B --model M` judging a webgpu/1 document against
a fast/4 one (docs/webgpu-profile.md, W-5; src/tools/observe_bounds.c).

    python3 tests/web/observe_within_test.py TINYLM WORKDIR

The fast/4 document is native `tinylm observe --lane fast` on the tiny q8
golden artifact; the webgpu/1 ones are that document with its producer's
profile renamed (what a device that returned fast/4's bits would write)
and then one record's summaries moved: by a part in 10^9 (far inside any
bound the profile derives: its smallest relative term is 2 * 16 gamma_N,
about 1e-4 here), by half the value (inside: on a q8 model W-5 inherits
fast-f32-vs-f64/2's allowance for activation quantization, rtol near 0.7
at layer 1 here, so only gross faults are outside it), a thousandfold
(outside), or its non-finite count changed.
The verdicts and the record named must follow; --model must be the
artifact both observe, and only the fast/4 and webgpu/1 pair is judged.
"""
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import cbor2

TINYLM, WORK = sys.argv[1], Path(sys.argv[2])
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402

MODEL = ROOT / "tests/golden/slm/tiny-q8.slm"
OTHER = ROOT / "tests/golden/slm/tiny-f32.slm"
WORK.mkdir(parents=True, exist_ok=True)


def run(*args):
    return subprocess.run([TINYLM, *map(str, args)], capture_output=True, text=True)


def f64(u):
    return struct.unpack("<d", struct.pack("<Q", u))[0]


def u64(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def write(doc, name):
    path = WORK / name
    path.write_bytes(cbor2.dumps(doc, canonical=True))
    return path


fast = WORK / "fast.cbor"
r = run("observe", MODEL, "--prompt", "Hello there, how are you", "-o", fast, "--force", "--lane", "fast")
check("native fast/4 observe", r.returncode == 0, r.stderr)
doc = cbor2.loads(fast.read_bytes())
check("the document is deterministic CBOR as cbor2 writes it", cbor2.dumps(doc, canonical=True) == fast.read_bytes())


def variant(name, edit=None):
    d = cbor2.loads(fast.read_bytes())
    d["producer"]["profile"] = "webgpu/1"
    d["execution"]["isa"] = "webgpu"
    if edit:
        edit(d)
    return write(d, name)


# the record moved: layer 1's layer_out at position 3 (a later record than
# the first, so "the first outside" is this one)
def find(d):
    for i, rec in enumerate(d["records"]):
        if rec["stage"] == "layer_out" and rec["layer"] == 1 and rec["position"] == 3:
            return i
    raise SystemExit("no layer_out record of layer 1 at position 3")


def nudge(d, factor):
    rec = d["records"][find(d)]
    rec["l2"] = u64(f64(rec["l2"]) * factor)
    rec["blake3"] = bytes(32)  # its row is another row now


same = variant("webgpu-same.cbor")
small = variant("webgpu-small.cbor", lambda d: nudge(d, 1 + 1e-9))
half = variant("webgpu-half.cbor", lambda d: nudge(d, 1.5))
large = variant("webgpu-large.cbor", lambda d: nudge(d, 1000))


def recount(d):
    d["records"][find(d)]["nonfinite"] += 1


count = variant("webgpu-count.cbor", recount)

r = run("observe", "--compare", fast, same)
check("without --model: equal records are identical whatever the profiles' names", r.returncode == 0
      and r.stdout.startswith("identical"), r.stdout)
r = run("observe", "--compare", fast, half)
check("without --model: records of two profiles that differ are different_profile, exit 1",
      r.returncode == 1 and "different profiles" in r.stdout, r.stdout)

r = run("observe", "--compare", fast, same, "--model", MODEL, "--json")
o = json.loads(r.stdout or "{}")
check("the same bits under webgpu/1: within_profile, exit 0, every record identical",
      r.returncode == 0 and o.get("verdict") == "within_profile" and o.get("identical") == o.get("compared") == len(doc["records"])
      and o.get("tolerance") == "webgpu-vs-fast/1", r.stdout + r.stderr)

r = run("observe", "--compare", small, fast, "--model", MODEL, "--json")
o = json.loads(r.stdout or "{}")
check("a record's L2 moved by 1e-9 (documents in either order): within_profile",
      r.returncode == 0 and o.get("verdict") == "within_profile" and o.get("identical") == len(doc["records"]) - 1
      and 0 < o.get("max_bound_ratio", 0) < 1e-3, r.stdout + r.stderr)

r = run("observe", "--compare", fast, half, "--model", MODEL, "--json")
o = json.loads(r.stdout or "{}")
check("a record's L2 times 1.5 on this q8 model: within_profile, its bound ratio printed",
      r.returncode == 0 and o.get("verdict") == "within_profile" and 0.01 < o.get("max_bound_ratio", 0) < 1, r.stdout + r.stderr)

r = run("observe", "--compare", fast, large, "--model", MODEL, "--json")
o = json.loads(r.stdout or "{}")
first = o.get("first_outside", {})
check("a record's L2 times 1000: outside_profile, exit 1, naming that record and summary",
      r.returncode == 1 and o.get("verdict") == "outside_profile" and o.get("outside") == 1
      and (first.get("stage"), first.get("layer"), first.get("position"), first.get("summary")) == ("layer_out", 1, 3, "l2")
      and first.get("bound_ratio", 0) > 1, r.stdout + r.stderr)
r = run("observe", "--compare", fast, large, "--model", MODEL)
check("the same in text", r.returncode == 1 and r.stdout.startswith("outside_profile (webgpu-vs-fast/1): 1 of")
      and "stage layer_out, layer 1, position 3" in r.stdout, r.stdout)

r = run("observe", "--compare", fast, count, "--model", MODEL, "--json")
o = json.loads(r.stdout or "{}")
check("a non-finite count that differs: outside_profile",
      r.returncode == 1 and o.get("first_outside", {}).get("summary") == "nonfinite", r.stdout + r.stderr)

r = run("observe", "--compare", fast, same, "--model", OTHER)
check("--model another artifact: invalid_argument, exit 1", r.returncode == 1 and "invalid_argument" in r.stderr
      and "is not the artifact" in r.stderr, r.stderr)

r = run("observe", "--compare", fast, fast, "--model", MODEL)
check("--model with two fast/4 documents: usage error naming the pair", r.returncode == 2 and "webgpu/1" in r.stderr, r.stderr)

r = run("observe", "--compare", fast, same, "--model")
check("--model without a path: usage error", r.returncode == 2, r.stderr)

sys.exit(summary())
