#!/usr/bin/python3
"""examples/stream_reply (the public API, linked from the static library
through include/tinylm.h alone) against `tinylm run` on the tiny golden
artifact: the same conversation and flags give the same ids, the same
visible text and the same receipt id, on the scalar and the fast lane,
greedy and sampled; with no flags, what `run --prompt MESSAGE` gives with
none (the template's thinking default, no token cap: EOS); --preflight
gives the plan `run --preflight` prints;
a changed byte is refused as hash_mismatch; a weight row that overflows
(tests/model/fast_test.py's poisoned checkpoint) is numerical_failure with
the same place `tinylm run` names, on both lanes; a reply or plan that
cannot be written (stdout on /dev/full) is exit 1 with error: io, the
reply stopped at the first failed write.

    example_test.py TINYLM STREAM_REPLY WORKDIR
"""

import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "model"))
import fast_test  # noqa: E402  (its poisoned checkpoint)
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402
MODEL = os.path.join(ROOT, "tests", "golden", "slm", "tiny-f32.slm")
def example(*args, model=MODEL, stdout=subprocess.PIPE):
    return subprocess.run([EXAMPLE, model, *args], stdout=stdout, stderr=subprocess.PIPE,
                          timeout=300)


def parse_example(p):
    """(ids, receipt id, visible bytes) from a successful run."""
    fields = {}
    for line in p.stderr.decode().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    ids = [int(x) for x in fields.get("ids", "").split()]
    # stdout: the streamed visible bytes, then one newline
    return ids, fields.get("receipt"), p.stdout[:-1]


def main():
    global TINYLM, EXAMPLE
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    TINYLM, EXAMPLE, work = (os.path.abspath(a) for a in sys.argv[1:])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    message = "Hello there, \"tiny\" model"
    conv = os.path.join(work, "conv.json")
    with open(conv, "w") as f:
        json.dump({"messages": [{"role": "user", "content": message}]}, f)

    # Every case names its seed: the library's seed is the caller's (the
    # example's default 0) while tinylm run draws a fresh one without --seed.
    cases = [("scalar greedy", ["--lane", "scalar", "-n", "8", "--seed", "0"]),
             ("scalar sampled", ["--lane", "scalar", "-n", "12", "--seed", "5",
                                 "--temperature", "0.9"]),
             ("fast sampled, 2 threads", ["--lane", "fast", "-t", "2", "-n", "12",
                                          "--seed", "9", "--temperature", "1.3"])]
    for name, flags in cases:
        p = example(message, *flags)
        if not check(f"{name}: stream_reply exits 0", p.returncode == 0, p.stderr.decode()):
            continue
        ids, receipt, text = parse_example(p)
        r = subprocess.run([TINYLM, "run", MODEL, "--messages", conv, *flags, "--json"],
                           capture_output=True, timeout=300)
        if not check(f"{name}: tinylm run exits 0", r.returncode == 0, r.stdout.decode()):
            continue
        doc = json.loads(r.stdout)
        check(f"{name}: some ids generated", len(ids) > 0)
        check(f"{name}: the same ids as tinylm run", ids == doc["ids"], f"{ids} vs {doc['ids']}")
        check(f"{name}: the same receipt id", receipt == doc["receipt_id"],
              f"{receipt} vs {doc['receipt_id']}")
        check(f"{name}: the same visible text",
              text.decode("utf-8", "replace") == doc["text"], f"{text!r} vs {doc['text']!r}")

    # The defaults, as tinylm run's (issue 28 items 1-3): the template's own
    # thinking switch, no token cap. "Yes" ends at EOS after 503 tokens on
    # the scalar lane, past the old cap of 64.
    p = example("Yes", "--lane", "scalar")
    r = subprocess.run([TINYLM, "run", MODEL, "--prompt", "Yes", "--lane", "scalar", "--seed", "0",
                        "--json"],
                       capture_output=True, timeout=300)
    if check("defaults: stream_reply and tinylm run --prompt exit 0",
             p.returncode == 0 and r.returncode == 0, p.stderr.decode() + r.stderr.decode()):
        ids, receipt, _ = parse_example(p)
        doc = json.loads(r.stdout)
        check("defaults: the same ids and receipt id as tinylm run --prompt (no -n)",
              ids == doc["ids"] and receipt == doc["receipt_id"], f"{receipt} vs {doc['receipt_id']}")
        check("defaults: no token cap, the reply ends at EOS past 64 tokens",
              doc["stop"] == "eos" and len(ids) > 64 and "stop: eos" in p.stderr.decode(),
              f"{doc['stop']} after {len(ids)}")

    for lane in ["scalar", "fast"]:
        p = example("x", "--preflight", "--lane", lane, "-t", "2")
        r = subprocess.run([TINYLM, "run", MODEL, "--prompt", "x", "--ctx", "4096",
                            "--lane", lane, "-t", "2", "--preflight", "--json"],
                           capture_output=True, timeout=300)
        try:
            mine, theirs = json.loads(p.stdout), json.loads(r.stdout)
        except ValueError:
            mine, theirs = None, {}
        # the API's default context: max_position_embeddings (40960) capped at 4096
        check(f"preflight ({lane}): the plan of tinylm run --preflight at that context",
              mine is not None and mine == theirs, f"{p.stdout!r} vs {r.stdout!r}")

    bad = os.path.join(work, "flipped.slm")
    data = bytearray(open(MODEL, "rb").read())
    data[-1] ^= 1
    open(bad, "wb").write(data)
    p = example(message, model=bad)
    check("a changed byte: exit 1, error: hash_mismatch",
          p.returncode == 1 and p.stderr.decode().startswith("error: hash_mismatch:"),
          p.stderr.decode())

    poisoned = fast_test.poisoned_row(TINYLM, work)
    where = "stage q, layer 0, position 0, index 3"
    for lane in ["scalar", "fast"]:
        p = example(message, "--lane", lane, "-n", "2", model=poisoned)
        check(f"an overflowing weight ({lane}): numerical_failure at {where}",
              p.returncode == 1 and p.stderr.decode().startswith("error: numerical_failure:")
              and f"({where})" in p.stderr.decode(), p.stderr.decode())

    # Output nobody can read is a failure, never a silent success.
    with open("/dev/full", "wb") as full:
        for name, flags in [("a streamed reply", ["--lane", "scalar", "-n", "8"]),
                            ("the preflight plan", ["--preflight"])]:
            p = example(message, *flags, stdout=full)
            err = p.stderr.decode()
            check(f"{name} to a full device: exit 1, error: io",
                  p.returncode == 1 and err.startswith("error: io: cannot write standard output:"),
                  f"exit {p.returncode}: {err}")
            check(f"{name} to a full device: no success report", "receipt:" not in err, err)

    return summary()


if __name__ == "__main__":
    sys.exit(main())
