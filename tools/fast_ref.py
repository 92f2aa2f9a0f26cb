#!/usr/bin/env python3
"""Independent reference for docs/fast-profile.md (profile fast/4).

Written from the spec, not from src/core/kernels/. Standard library only.
Binary32 arithmetic is one binary64 operation rounded once to binary32,
which is exact RNE for one +, * or / of binary32 operands (53 >= 2*24+2).
Weight encodings come from tools/quant_ref.py (the independent reference of
docs/quant.md).

    /usr/bin/python3 tools/fast_ref.py          write src/core/kernels/fast_vectors.h
    /usr/bin/python3 tools/fast_ref.py --check  exit 1 if the committed file differs
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quant_ref import (SplitMix, write_or_check, bits_to_f32, bf16_bits, c_array, f16_bits,  # noqa: E402
                       f16_decode, f32, f32_to_bits, fb, pack_float16,
                       quantize, random_row, rne_int)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src",
                   "core", "kernels", "fast_vectors.h")
BLOCK = 32
F32, F16, BF16, Q8, Q4 = range(5)  # tl_qtype


def act_quantize(x_bits):
    """F-3: codes (nb * 32, padding 0) and scale bits per block."""
    xs = [bits_to_f32(b) for b in x_bits]
    n = len(xs)
    nb = (n + BLOCK - 1) // BLOCK
    codes, scales = [], []
    for b in range(nb):
        part = xs[b * BLOCK:min(n, b * BLOCK + BLOCK)]
        a = max(abs(v) for v in part)
        d = 0.0 if a == 0 else f32(a / 127)
        for v in part:
            if d == 0.0:
                codes.append(0)
            else:
                r = min(max(f32(v / d), -127.0), 127.0)
                codes.append(rne_int(r))
        codes += [0] * (BLOCK - len(part))
        scales.append(d)
    return codes, scales


def tree(acc):
    """F-6's T."""
    b = [f32(acc[j] + acc[j + 8]) for j in range(8)]
    c = [f32(b[j] + b[j + 4]) for j in range(4)]
    d = [f32(c[j] + c[j + 2]) for j in range(2)]
    return f32(d[0] + d[1])


def dot_quant(wrow, qtype, codes, scales):
    """F-4 / F-5 for one row of stored bytes (Q-12): each block's exact
    integer sum, times the block's scale product, onto lane b mod 16."""
    size = 36 if qtype == Q8 else 20
    acc = [0.0] * 16
    for b in range(len(scales)):
        base = b * size
        dw = struct.unpack_from("<f", wrow, base)[0]
        if qtype == Q8:
            w = [struct.unpack_from("<b", wrow, base + 4 + i)[0] for i in range(BLOCK)]
        else:
            w = [((wrow[base + 4 + i // 2] >> (4 * (i & 1))) & 0xF) - 8 for i in range(BLOCK)]
        x = codes[b * BLOCK:(b + 1) * BLOCK]
        s = sum(wi * xi for wi, xi in zip(w, x))
        p = f32(dw * scales[b])
        acc[b % 16] = f32(acc[b % 16] + f32(float(s) * p))
    return tree(acc)


def dot_float(w, x):
    """F-6: w and x as f32 values."""
    acc = [0.0] * 16
    for i, (a, b) in enumerate(zip(w, x)):
        acc[i % 16] = f32(acc[i % 16] + f32(a * b))
    return tree(acc)


# --- cases ------------------------------------------------------------------

def act_cases():
    rng = SplitMix(20261203)
    sub = 2.0 ** -149
    cases = [
        ("all_zero", [fb(0.0)] * 40),
        ("signed_zeros_then_ones", [fb(0.0), fb(-0.0)] * 16 + [fb(1.0)] * 3),
        ("ties", [fb(v) for v in [127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5,
                                  -126.5, 63.5, -64.5, 0.25, 0.75, -0.75]]),
        ("subnormal_block", [fb(k * sub) for k in (190, 95, -190, 13, 1, -1)]),
        ("one", [fb(-3.25)]),
        ("tail_31", random_row(rng, 31)),
        ("exact_32", random_row(rng, 32)),
        ("tail_33", random_row(rng, 33)),
        ("wide_spread_100", random_row(rng, 100, spread=20)),
    ]
    return cases


def dot_cases():
    rng = SplitMix(777)
    out = []
    for qtype, name in ((Q8, "q8"), (Q4, "q4"), (F32, "f32"), (F16, "f16"), (BF16, "bf16")):
        # 1100 (q8/q4): 35 blocks, so the lanes wrap past 16 blocks
        for n in (1, 15, 16, 17, 31, 32, 33, 64, 95, 160, 257) + ((1100,) if qtype in (Q8, Q4) else ()):
            rows = 3
            w_bits = random_row(rng, rows * n)
            x_bits = random_row(rng, n, spread=6)
            if qtype in (Q8, Q4):
                data, _ = quantize(w_bits, rows, n, 127 if qtype == Q8 else 7)
                codes, scales = act_quantize(x_bits)
                rb = len(data) // rows
                ys = [dot_quant(data[r * rb:(r + 1) * rb], qtype, codes, scales)
                      for r in range(rows)]
            else:
                if qtype == F32:
                    data = b"".join(struct.pack("<I", b) for b in w_bits)
                    wv = [bits_to_f32(b) for b in w_bits]
                elif qtype == F16:
                    data = pack_float16(w_bits, f16_bits)
                    wv = [bits_to_f32(f16_decode(h)) for h in
                          struct.unpack("<%dH" % (rows * n), data)]
                else:
                    data = pack_float16(w_bits, bf16_bits)
                    wv = [bits_to_f32(h << 16) for h in
                          struct.unpack("<%dH" % (rows * n), data)]
                xv = [bits_to_f32(b) for b in x_bits]
                ys = [dot_float(wv[r * n:(r + 1) * n], xv) for r in range(rows)]
            out.append(("%s_%d" % (name, n), qtype, rows, n, data, x_bits,
                        [f32_to_bits(y) for y in ys]))
    return out


def render():
    out = ["/* Generated by tools/fast_ref.py from docs/fast-profile.md: do not edit. */",
           "#ifndef TL_FAST_VECTORS_H", "#define TL_FAST_VECTORS_H", "",
           "#include <stddef.h>", "#include <stdint.h>", "",
           "/* F-3: input bits, codes (32 per block, padding 0), scale bits. */",
           "typedef struct fv_act {",
           "  const char *name;",
           "  size_t n;",
           "  const uint32_t *x;",
           "  const int8_t *codes;",
           "  const uint32_t *scales;",
           "} fv_act;", "",
           "/* F-4..F-6: rows x n weights of type (a tl_qtype) as stored, the",
           " * f32 activation's bits, each row's result bits. */",
           "typedef struct fv_dot {",
           "  const char *name;",
           "  int type;",
           "  size_t rows, n;",
           "  const uint8_t *w;",
           "  size_t w_len;",
           "  const uint32_t *x, *y;",
           "} fv_dot;", ""]
    table = []
    for idx, (name, x) in enumerate(act_cases()):
        p = "fva%d_" % idx
        codes, scales = act_quantize(x)
        out.append("/* %s: n = %d */" % (name, len(x)))
        out.append(c_array("uint32_t", p + "x", x, 6, "0x%08xu"))
        out.append(c_array("int8_t", p + "codes", codes, 16, "%d"))
        out.append(c_array("uint32_t", p + "scales", [f32_to_bits(s) for s in scales], 6, "0x%08xu"))
        table.append("    {\"%s\", %d, %sx, %scodes, %sscales}," % (name, len(x), p, p, p))
    out.append("static const fv_act fv_acts[] = {\n%s\n};\n" % "\n".join(table))
    table = []
    for idx, (name, qtype, rows, n, data, x, ys) in enumerate(dot_cases()):
        p = "fvd%d_" % idx
        out.append("/* %s: %d x %d */" % (name, rows, n))
        out.append(c_array("uint8_t", p + "w", list(data), 12, "0x%02x"))
        out.append(c_array("uint32_t", p + "x", x, 6, "0x%08xu"))
        out.append(c_array("uint32_t", p + "y", ys, 6, "0x%08xu"))
        table.append("    {\"%s\", %d, %d, %d, %sw, %d, %sx, %sy},"
                     % (name, qtype, rows, n, p, len(data), p, p))
    out.append("static const fv_dot fv_dots[] = {\n%s\n};\n" % "\n".join(table))
    out.append("#endif")
    return "\n".join(out) + "\n"


def main():
    return write_or_check(OUT, render(), "tools/fast_ref.py")


if __name__ == "__main__":
    sys.exit(main())
