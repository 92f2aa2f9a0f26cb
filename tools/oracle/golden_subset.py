#!/usr/bin/python3
"""A golden document (docs/golden.md, tinylm.golden/1) restricted to some of
its captured positions: every record keeps the rows of those positions,
byte for byte, and nothing else changes (producer, model, prompt,
continuation). So an oracle's golden too large to commit is committed as a
subset whose values are still exactly the oracle's (tests/golden/
transformers/README.md says which positions of which original).

    golden_subset.py IN.cbor --positions 0,15 -o OUT.cbor
"""
import argparse
import os
import sys

import cbor2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_cbor import cbor_encode  # noqa: E402


def subset(doc, keep):
    positions = doc["positions"]
    missing = [p for p in keep if p not in positions]
    if missing:
        raise SystemExit(f"positions {missing} are not captured (captured: {positions})")
    rows = [positions.index(p) for p in sorted(keep)]
    for rec in doc["records"]:
        n = len(positions)
        size = len(rec["data"]) // n
        rec["data"] = b"".join(rec["data"][r * size:(r + 1) * size] for r in rows)
        rec["shape"][0] = len(rows)
    doc["positions"] = sorted(keep)
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("golden")
    ap.add_argument("--positions", required=True)
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    with open(a.golden, "rb") as f:
        doc = cbor2.loads(f.read())
    doc = subset(doc, [int(p) for p in a.positions.split(",")])
    with open(a.o, "wb") as f:
        f.write(cbor_encode(doc))


if __name__ == "__main__":
    main()
