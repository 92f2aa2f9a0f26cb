#!/usr/bin/env python3
"""Independent reference for docs/quant.md (f32, f16, bf16, q8, q4).

Written from the spec, not from src/core/quant/quant.c. Standard library
only. Binary32 arithmetic is emulated as one binary64 operation followed by
one rounding to binary32 (struct 'f', i.e. RNE), which docs/quant.md Q-4
states is exact for a single division or multiplication. f16 uses struct
'e' (CPython's own binary16 packer); bf16 uses exact rational rounding.

    /usr/bin/python3 tools/quant_ref.py          write tests/vectors/quant/quant_vectors.h
    /usr/bin/python3 tools/quant_ref.py --check  exit 1 if the committed file differs
"""
import math
import os
import struct
import sys
from fractions import Fraction

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                   "vectors", "quant", "quant_vectors.h")
INF = float("inf")
BLOCK = 32


class Reject(Exception):
    def __init__(self, index):
        super().__init__(index)
        self.index = index


def f32(x):
    """Round a binary64 value to binary32 (RNE); overflow gives +-Inf."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(INF, x)


def bits_to_f32(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


def f32_to_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


# --- f16 / bf16 (Q-7 .. Q-9) -------------------------------------------------

def round_exact(v, p, emin, emax):
    """RNE of the exact rational v to a binary format with p significand bits
    (implicit bit included), minimum normal exponent emin, maximum emax.
    Returns a Fraction, or None for overflow (Inf)."""
    if v == 0:
        return Fraction(0)
    sign = -1 if v < 0 else 1
    a = abs(v)
    e = math.floor(math.log2(a))
    # log2 of a Fraction may be off by one near powers of two; fix exactly.
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, emin)  # subnormal range shares the quantum of emin
    quantum = Fraction(2) ** (e - (p - 1))
    k = a / quantum
    n = math.floor(k)
    rest = k - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * quantum
    largest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if r > largest:
        return None
    return sign * r


def f16_bits(xb):
    """Q-7/Q-8: f32 bit pattern -> f16 bit pattern (total)."""
    sign = (xb >> 31) & 1
    exp = (xb >> 23) & 0xFF
    frac = xb & 0x7FFFFF
    if exp == 0xFF and frac != 0:
        return (sign << 15) | 0x7C00 | 0x200 | (frac >> 13)
    x = bits_to_f32(xb)
    try:
        h = struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        h = (sign << 15) | 0x7C00
    # Cross-check CPython's packer against the exact rational rounding.
    if not math.isinf(x):
        r = round_exact(Fraction(x), 11, -14, 15)
        if r is None:
            assert h & 0x7FFF == 0x7C00
        else:
            assert struct.unpack("<e", struct.pack("<H", h))[0] == r
    return h


def bf16_bits(xb):
    sign = (xb >> 31) & 1
    exp = (xb >> 23) & 0xFF
    frac = xb & 0x7FFFFF
    if exp == 0xFF and frac != 0:
        return (sign << 15) | 0x7F80 | 0x40 | (frac >> 16)
    if exp == 0xFF:
        return (sign << 15) | 0x7F80
    x = bits_to_f32(xb)
    r = round_exact(Fraction(x), 8, -126, 127)
    if r is None:
        return (sign << 15) | 0x7F80
    hb = f32_to_bits(float(r)) >> 16
    if r == 0:
        hb = sign << 15
    assert f32_to_bits(float(r)) & 0xFFFF == 0
    return hb


def f16_decode(h):
    """Q-9, written from the binary16 definition."""
    sign = -1.0 if h >> 15 else 1.0
    e = (h >> 10) & 0x1F
    f = h & 0x3FF
    if e == 0x1F:
        if f:
            return ((h >> 15) << 31) | 0x7F800000 | (f << 13)
        return f32_to_bits(sign * INF)
    if e == 0:
        return f32_to_bits(sign * f * 2.0 ** -24)
    return f32_to_bits(sign * (1024 + f) * 2.0 ** (e - 25))


def pack_float16(xs_bits, conv):
    for i, b in enumerate(xs_bits):
        if (b >> 23) & 0xFF == 0xFF:
            raise Reject(i)
    out = bytearray()
    for i, b in enumerate(xs_bits):
        h = conv(b)
        inf_exp = 0x7C00 if conv is f16_bits else 0x7F80
        if h & inf_exp == inf_exp:  # rounded past the largest finite value
            raise Reject(i)
        out += struct.pack("<H", h)
    return bytes(out)


# --- q8 / q4 (Q-10 .. Q-17) --------------------------------------------------

def rne_int(r):
    return int(round(r))  # Python's round() on a float is exact RNE


def quantize(xs_bits, rows, n, qmax):
    for i, b in enumerate(xs_bits):
        if (b >> 23) & 0xFF == 0xFF:
            raise Reject(i)
    xs = [bits_to_f32(b) for b in xs_bits]
    nb = (n + BLOCK - 1) // BLOCK
    out = bytearray()
    decoded = []
    for r in range(rows):
        for blk in range(nb):
            lo = r * n + blk * BLOCK
            hi = r * n + min(blk * BLOCK + BLOCK, n)
            part = xs[lo:hi]
            a = max(abs(v) for v in part)
            d = 0.0 if a == 0 else f32(a / qmax)
            codes = []
            for k, v in enumerate(part):
                if d == 0.0:
                    q = 0
                else:
                    rr = f32(v / d)
                    rr = min(max(rr, -float(qmax)), float(qmax))
                    q = rne_int(rr)
                y = f32(q * d) if q != 0 else 0.0
                if math.isinf(y):
                    raise Reject(lo + k)
                codes.append(q)
                decoded.append(f32_to_bits(y))
            codes += [0] * (BLOCK - len(codes))
            out += struct.pack("<f", d)
            if qmax == 127:
                out += bytes(q & 0xFF for q in codes)
            else:
                for j in range(BLOCK // 2):
                    out.append((codes[2 * j] + 8) | ((codes[2 * j + 1] + 8) << 4))
    return bytes(out), decoded


def dequantize(data, rows, n, qmax):
    """The independent unpacker: bytes -> f32 bit patterns (Q-16)."""
    nb = (n + BLOCK - 1) // BLOCK
    size = 36 if qmax == 127 else 20
    assert len(data) == rows * nb * size
    ys = []
    for r in range(rows):
        for blk in range(nb):
            base = (r * nb + blk) * size
            d = struct.unpack_from("<f", data, base)[0]
            m = min(BLOCK, n - blk * BLOCK)
            for i in range(m):
                if qmax == 127:
                    q = struct.unpack_from("<b", data, base + 4 + i)[0]
                else:
                    byte = data[base + 4 + i // 2]
                    q = ((byte >> (4 * (i & 1))) & 0xF) - 8
                ys.append(f32_to_bits(f32(q * d) if q != 0 else 0.0))
    return ys


# --- inputs -----------------------------------------------------------------

class SplitMix:
    def __init__(self, seed):
        self.s = seed

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)


def fb(x):
    return f32_to_bits(f32(x))


def random_row(rng, count, spread=4):
    out = []
    for _ in range(count):
        v = rng.next()
        mant = 1.0 + (v & 0xFFFFFF) / float(1 << 24)
        e = ((v >> 24) % (2 * spread + 1)) - spread - 3
        s = -1.0 if (v >> 40) & 1 else 1.0
        out.append(fb(s * mant * 2.0 ** e))
    return out


def vectors():
    rng = SplitMix(20240605)
    sub = lambda k: k * 2.0 ** -149
    fmax = bits_to_f32(0x7F7FFFFF)
    v = []
    add = lambda name, rows, n, xs: v.append((name, rows, n, [fb(x) if isinstance(x, float) else x for x in xs]))
    add("all_zero", 1, 32, [0.0] * 32)
    add("signed_zeros", 1, 32, [0.0, -0.0] * 16)
    add("constant_one", 1, 32, [1.0] * 32)
    add("constant_neg_tail", 1, 40, [-0.37] * 40)
    add("ties_q8", 1, 32, [127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5,
                            -126.5, 3.5, -3.5, 4.5, 63.5, -64.5, 100.5, 0.25,
                            0.75, -0.75] + [float(k) - 7.0 for k in range(14)])
    add("ties_q4", 1, 32, [7.0, 0.5, 1.5, 6.5, -6.5, 2.5, -2.5, 3.5, -3.5,
                            4.5, -4.5, 5.5, -5.5, -0.5, 0.25, -0.75] +
        [float(k % 15) - 7.0 for k in range(16)])
    add("nibble_ramp", 1, 32, [float(i % 15) - 7.0 for i in range(32)])
    add("nibble_ramp_shifted", 1, 32, [float((i + 7) % 15) - 7.0 for i in range(32)])
    add("one_hot_every_position", 32, 32,
        [(-1.0 if r % 2 else 1.0) * (r + 1) if c == r else 0.0
         for r in range(32) for c in range(32)])
    add("pow2_127", 1, 32, [2.0 ** 127, -2.0 ** 127] + [1.0] * 30)
    add("flt_max", 1, 2, [fmax, -fmax])
    add("flt_max_q4_ok", 1, 3, [0.0, -fmax, 1e30])
    add("min_normal", 1, 32, [2.0 ** -126, -2.0 ** -126] * 16)
    add("subnormals", 1, 32, [sub(k) for k in (1, -1, 2, 3, 5, 127, 128, 190,
                                                -190, 254, 255, 1000, -1000,
                                                0x7FFFFF, -0x7FFFFF, 381)] +
        [sub(k) for k in range(16)])
    add("subnormal_saturate", 1, 4, [sub(190), sub(95), -sub(190), sub(13)])
    add("tiny_zero_scale", 1, 3, [sub(3), -sub(2), sub(1)])
    add("dynamic_range", 1, 64, [1e-30, 1e30, -1e-5] + random_row(rng, 61, 20))
    for n in (1, 31, 33, 63, 65):
        add("tail_%d" % n, 1, n, random_row(rng, n))
    for n in (31, 32, 33, 63, 64, 65, 95, 96, 97):
        add("rows3_n%d" % n, 3, n, random_row(rng, 3 * n))
    add("reject_nan", 1, 33, [1.0] * 5 + [0x7FC00000] + [1.0] * 26 + [0x7F800000])
    add("reject_inf_row2", 2, 33, [1.0] * 40 + [0xFF800000] + [1.0] * 25)
    add("reject_neg_inf_first", 1, 2, [0xFF800000, 0x7FC00001])
    add("f16_overflow", 1, 4, [1.0, 65519.0, 65520.0, -70000.0])
    add("f16_edges", 1, 8, [65504.0, -65504.0, 2.0 ** -14, 2.0 ** -24,
                            2.0 ** -25, 3 * 2.0 ** -25, 1 + 2.0 ** -11,
                            1 + 3 * 2.0 ** -11])
    return v


def conv_inputs():
    rng = SplitMix(77)
    xs = [0x00000000, 0x80000000, 0x3F800000, 0x3F801000, 0x3F803000,
          0x3F802000, 0x3F802001, 0x477FE000, 0x477FEFFF, 0x477FF000,
          0x38800000, 0x387FE000, 0x33800000, 0x33000000, 0x33000001,
          0x33C00000, 0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0x7F7F7FFF,
          0x7F7F8000, 0x3F808000, 0x3F818000, 0x3F817FFF, 0x7F800000,
          0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7FA00000,
          0x00008000, 0x00018000, 0x0001FFFF]
    for _ in range(400):
        xs.append(rng.next() & 0xFFFFFFFF)
    for _ in range(200):  # values in f16 range
        b = rng.next()
        e = 103 + (b >> 32) % 40
        xs.append(((b >> 40) & 1) << 31 | e << 23 | (b & 0x7FFFFF))
    return xs


# --- header -----------------------------------------------------------------

def c_array(ctype, name, vals, per_line, fmt):
    lines = []
    for i in range(0, len(vals), per_line):
        lines.append("    " + ", ".join(fmt % x for x in vals[i:i + per_line]) + ",")
    return "static const %s %s[] = {\n%s\n};\n" % (ctype, name, "\n".join(lines))


def render():
    out = ["/* Generated by tools/quant_ref.py from docs/quant.md: do not edit. */",
           "#ifndef TL_QUANT_VECTORS_H", "#define TL_QUANT_VECTORS_H", "",
           "#include <stddef.h>", "#include <stdint.h>", "",
           "/* bad == QV_OK: the encoding succeeds; otherwise it fails naming bad. */",
           "#define QV_OK SIZE_MAX", "",
           "typedef struct qv_case {",
           "  const char *name;",
           "  size_t rows, n;",
           "  const uint32_t *x; /* rows * n f32 bit patterns */",
           "  const uint8_t *q8, *q4, *f16, *bf16; /* packed; NULL when rejected */",
           "  const uint32_t *q8_y, *q4_y; /* the reference unpacker's output */",
           "  size_t q8_bad, q4_bad, f16_bad, bf16_bad;",
           "} qv_case;", ""]
    table = []
    for idx, (name, rows, n, xs) in enumerate(vectors()):
        p = "qv%d_" % idx
        out.append("/* %s: %d x %d */" % (name, rows, n))
        out.append(c_array("uint32_t", p + "x", xs, 6, "0x%08xu"))
        fields = {}
        for kind, qmax in (("q8", 127), ("q4", 7)):
            try:
                data, dec = quantize(xs, rows, n, qmax)
                assert dequantize(data, rows, n, qmax) == dec
                out.append(c_array("uint8_t", p + kind, list(data), 12, "0x%02x"))
                out.append(c_array("uint32_t", p + kind + "_y", dec, 6, "0x%08xu"))
                fields[kind] = (p + kind, p + kind + "_y", "QV_OK")
            except Reject as e:
                fields[kind] = ("NULL", "NULL", "%d" % e.index)
        for kind, conv in (("f16", f16_bits), ("bf16", bf16_bits)):
            try:
                data = pack_float16(xs, conv)
                out.append(c_array("uint8_t", p + kind, list(data), 12, "0x%02x"))
                fields[kind] = (p + kind, "QV_OK")
            except Reject as e:
                fields[kind] = ("NULL", "%d" % e.index)
        table.append("    {\"%s\", %d, %d, %sx, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s},"
                     % (name, rows, n, p, fields["q8"][0], fields["q4"][0],
                        fields["f16"][0], fields["bf16"][0], fields["q8"][1],
                        fields["q4"][1], fields["q8"][2], fields["q4"][2],
                        fields["f16"][1], fields["bf16"][1]))
    out.append("static const qv_case qv_cases[] = {\n%s\n};\n" % "\n".join(table))
    out.append("/* Element conversions (Q-7..Q-9): f32 bits, f16 bits, f16 decoded,")
    out.append(" * bf16 bits. */")
    out.append("typedef struct qv_conv {\n  uint32_t x;\n  uint16_t f16;\n"
               "  uint32_t f16_y;\n  uint16_t bf16;\n} qv_conv;\n")
    rows = []
    for x in conv_inputs():
        h = f16_bits(x)
        rows.append("    {0x%08xu, 0x%04x, 0x%08xu, 0x%04x}," % (x, h, f16_decode(h), bf16_bits(x)))
    out.append("static const qv_conv qv_convs[] = {\n%s\n};\n" % "\n".join(rows))
    out.append("#endif")
    return "\n".join(out) + "\n"


def write_or_check(out, text, generator):
    """Writes a generated header, or with --check says whether the
    committed one equals text (exit status 1 when stale)."""
    name = os.path.basename(out)
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        with open(out) as f:
            if f.read() != text:
                print("%s is stale: run %s" % (name, generator))
                return 1
        print("%s is current" % name)
        return 0
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    return 0


def main():
    return write_or_check(OUT, render(), "tools/quant_ref.py")


if __name__ == "__main__":
    sys.exit(main())
