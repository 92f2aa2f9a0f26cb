#!/usr/bin/python3
"""Writes a copy of a .slm model artifact with one weight made NaN and every
digest that covers it recomputed (docs/slm.md: the tensor's BLAKE3 in the
tensor directory, the tensor directory's and the tensor data's section
digests, the header digest), so the container is valid and only the values
tell: the planted defect of promote_test.py for the stop rule
non_finite_value. The NaN goes into the first element of the first f32
tensor (a norm weight), or, without one, the first q8/q4 block scale.

    nonfinite.py MODEL.slm OUT.slm

BLAKE3 comes from `b3sum` (scripts/setup.sh installs it)."""

import struct
import subprocess
import sys


def blake3(data):
    p = subprocess.run(["b3sum", "--no-names", "--raw"], input=data, capture_output=True,
                       check=True)
    return p.stdout


def layout(buf):
    """The section table and the tensor directory's entries (entry offset,
    dtype, data offset, length, BLAKE3 digest)."""
    n_sections, table_off = struct.unpack_from("<II", buf, 24)
    sections = {}
    for i in range(n_sections):
        e = table_off + 64 * i
        kind, _flags, off, length = struct.unpack_from("<IIQQ", buf, e)
        sections[kind] = (e, off, length)
    dir_off = sections[4][1]
    n_tensors = struct.unpack_from("<I", buf, dir_off + 8)[0]
    entries = []
    for i in range(n_tensors):
        e = dir_off + 32 + 96 * i
        dtype = struct.unpack_from("<I", buf, e + 8)[0]
        t_off, t_len = struct.unpack_from("<QQ", buf, e + 48)
        entries.append((e, dtype, t_off, t_len, bytes(buf[e + 64:e + 96])))
    return {"n_sections": n_sections, "table_off": table_off, "sections": sections,
            "data_off": sections[5][1], "entries": entries}


def reseal(buf, lay, entry):
    """Recomputes every digest that covers the tensor of `entry`."""
    e, _dtype, t_off, t_len, _digest = entry
    at = lay["data_off"] + t_off
    buf[e + 64:e + 96] = blake3(bytes(buf[at:at + t_len]))
    for ent, off, length in (lay["sections"][4], lay["sections"][5]):
        buf[ent + 24:ent + 56] = blake3(bytes(buf[off:off + length]))
    table_off, n = lay["table_off"], lay["n_sections"]
    buf[32:64] = blake3(bytes(buf[0:32]) + bytes(buf[table_off:table_off + 64 * n]))


def main(src, dst):
    buf = bytearray(open(src, "rb").read())
    lay = layout(buf)
    # f32 first (an element), else a q8 (1 above 4) / q4 block's f32 scale
    # (q8p/q4p too: block 0's scale is a group's first 4 bytes, SLM-11a).
    entry = next((x for x in lay["entries"] if x[1] == 1), None) or \
        next(x for x in lay["entries"] if x[1] in (4, 5, 6, 7))
    _e, dtype, t_off, _t_len, _digest = entry
    struct.pack_into("<I", buf, lay["data_off"] + t_off, 0x7FC00000)
    reseal(buf, lay, entry)
    with open(dst, "wb") as f:
        f.write(buf)
    print(f"{dst}: tensor at data offset {t_off} (dtype {dtype}), first value NaN")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
