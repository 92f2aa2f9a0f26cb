#!/usr/bin/python3
"""Writes a copy of a q8/q4 .slm artifact whose weights are changed the way
a converter bug or a tampered file would change them, with every digest
that covers them recomputed (nonfinite.py's reseal), so the container is
valid and only a comparison with the source can tell: the planted
artifact defects of promotion's mutation table (mutation_test.py), which
the source_binding claim must refuse.

    plant_weights.py TINYLM MODEL.slm OUT.slm scale-row TENSOR ROW
        every q8/q4 block scale of one row of TENSOR times 2
    plant_weights.py TINYLM MODEL.slm OUT.slm scale-tensor TENSOR
        every block scale of TENSOR times 2 (for the tied embedding: the
        logits doubled, an effective temperature of 0.5)

Tensors are found by name through `tinylm inspect --json` (its BLAKE3 is
the directory entry's digest)."""

import json
import struct
import subprocess
import sys

from nonfinite import layout, reseal

# q8, q4 and their packed layouts q8p, q4p (docs/quant.md Q-12: an f32
# scale per block; docs/slm.md SLM-11a: a packed group of up to 16 blocks
# keeps its blocks' scales first, 4 bytes each, then their codes)
BLOCK_BYTES = {4: 36, 5: 20, 6: 36, 7: 20}
PACKED = (6, 7)
PACK_GROUP = 16


def scale_at(dtype, bb, b):
    """Where block b's scale lies in its row, in either layout."""
    if dtype not in PACKED:
        return b * bb
    return b // PACK_GROUP * PACK_GROUP * bb + 4 * (b % PACK_GROUP)


def main(tinylm, src, dst, what, name, row=None):
    info = json.loads(subprocess.run([tinylm, "inspect", src, "--json"], capture_output=True,
                                     check=True).stdout)
    tensor = next(t for t in info["tensors"] if t["name"] == name)
    buf = bytearray(open(src, "rb").read())
    lay = layout(buf)
    entry = next(x for x in lay["entries"] if x[4].hex() == tensor["blake3"])
    _e, dtype, t_off, t_len, _digest = entry
    bb = BLOCK_BYTES[dtype]
    rows, n = tensor["shape"][0], tensor["shape"][-1]
    row_bytes = (n + 31) // 32 * bb
    assert row_bytes * rows == t_len
    picked = [row] if what == "scale-row" else range(rows)
    base = lay["data_off"] + t_off
    for r in picked:
        for b in range(row_bytes // bb):
            at = base + r * row_bytes + scale_at(dtype, bb, b)
            (d,) = struct.unpack_from("<f", buf, at)
            struct.pack_into("<f", buf, at, d * 2.0)
    reseal(buf, lay, entry)
    with open(dst, "wb") as f:
        f.write(buf)
    print(f"{dst}: {name}: {what} {'' if row is None else row} scales x2, digests recomputed")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (6, 7):
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:6], *(int(a) for a in sys.argv[6:])))
