#!/usr/bin/env python3
"""Golden vectors for src/core/json (docs/json.md), from real CPython.

Outputs (both committed, deterministic: fixed seed, no time, no network):

  tests/vectors/json/py_format_vectors.h  float repr / float() parse / json.dumps /
                                     str() / repr(str) vectors for the
                                     json_parse and py_format suites
  src/core/json/py_printable.h       the code points >= U+0080 for which
                                     str.isprintable() is False, as ranges
                                     (this Python's unicodedata version)

    /usr/bin/python3 tools/oracle/py_format_vectors.py          write both
    /usr/bin/python3 tools/oracle/py_format_vectors.py --check  exit 1 if the
                                                                committed files differ
What each vector holds:
  * repr: random doubles by bit pattern, random short decimals, powers of
    2 and 10, the boundaries of fixed/scientific notation, subnormals:
    (bits, repr(float)).
  * parse: decimal strings in JSON number syntax -> float(s) bits, or
    "out of range" when float(s) is infinite: random digit strings, exact
    halfway points between neighbouring doubles (and a hair above/below,
    and with more than 800 significant digits), subnormals, underflow to
    zero, overflow, int64 boundaries are in the C tests.
  * json: a JSON text, json.dumps(json.loads(text), ensure_ascii=False),
    str(json.loads(text)).
  * repr_cp: around every boundary of the printable table, repr(chr(cp)).
"""
import json
import math
import pathlib
import random
import struct
import sys
import unicodedata
from decimal import Decimal, getcontext

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
OUT_VECTORS = ROOT / "tests/vectors/json/py_format_vectors.h"
OUT_PRINTABLE = ROOT / "src/core/json/py_printable.h"

getcontext().prec = 2000


def bits_of(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def double_of(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def c_str(s):
    """A C string literal for UTF-8 text (octal escapes for everything
    outside printable ASCII, so no escape can swallow a following digit)."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F and c != "?":
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return '"' + "".join(out) + '"'


def repr_vectors(rng):
    vals = []
    # random bit patterns (finite only)
    while len(vals) < 3000:
        b = rng.getrandbits(64)
        if (b >> 52) & 0x7FF != 0x7FF:
            vals.append(double_of(b))
    # short decimals, where shortest output matters most
    for _ in range(1500):
        digits = rng.randint(1, 17)
        m = rng.randrange(10 ** (digits - 1), 10 ** digits)
        e = rng.randint(-30, 30) if rng.random() < 0.8 else rng.randint(-330, 310)
        x = float(f"{m}e{e}")
        if math.isfinite(x):
            vals.append(x if rng.random() < 0.7 else -x)
    # powers and notation boundaries
    for e in range(-325, 309):
        vals.append(float(f"1e{e}"))
    for e in range(-1074, 1024, 7):
        vals.append(2.0 ** e)
    vals += [0.0, -0.0, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 1.5, 100.0, 1e15, 1e16,
             1e17, 9999999999999998.0, 1e-4, 1e-5, 0.00012345, 1.2345e-5,
             123456789012345678.0, 5e-324, -5e-324, 2.2250738585072014e-308,
             2.225073858507201e-308, 1.7976931348623157e308,
             -1.7976931348623157e308, 9007199254740993.0, 9007199254740992.0,
             4.35, 0.30000000000000004, 2.5e-07, 1e22, 1e23, 5e-310,
             123.456, -0.5, 1e100, 12345678901234567890.0]
    # the neighbours of some of them
    extra = []
    for x in vals[-40:]:
        if x != 0 and math.isfinite(x):
            extra += [math.nextafter(x, math.inf), math.nextafter(x, -math.inf)]
    vals += [x for x in extra if math.isfinite(x)]
    seen, out = set(), []
    for x in vals:
        b = bits_of(x)
        if b not in seen:
            seen.add(b)
            out.append((b, repr(x)))
    return out


def exact_decimal(x):
    return Decimal(x)  # exact binary value


def sci(d, digits=None):
    """Decimal -> JSON number text in scientific form."""
    s = format(d, "e") if digits is None else format(d, f".{digits}e")
    return s.replace("E", "e")


def parse_vectors(rng):
    texts = []
    # random digit strings in every JSON shape
    for _ in range(4000):
        nd = rng.choice([1, 2, 3, 5, 8, 15, 16, 17, 18, 19, 20, 25, 40])
        digits = str(rng.randrange(1, 10)) + "".join(
            str(rng.randrange(10)) for _ in range(nd - 1))
        shape = rng.randrange(4)
        e = rng.randint(-340, 320) if rng.random() < 0.5 else rng.randint(-25, 25)
        if shape == 0:
            t = f"{digits[0]}.{digits[1:] or '0'}e{e}"
        elif shape == 1:
            k = rng.randrange(len(digits) + 1)
            t = (digits[:k] or "0") + "." + (digits[k:] or "0")
        elif shape == 2:
            t = f"{digits}E{'+' if e >= 0 else ''}{e}"
        else:
            t = "0." + "0" * rng.randrange(0, 30) + digits
        if rng.random() < 0.3:
            t = "-" + t
        texts.append(t)
    # exact halfway points between neighbours, and a hair either side
    for i in range(500):
        if i % 10 == 0:
            b = rng.getrandbits(52)  # subnormal
        else:
            b = rng.getrandbits(63)
        x = double_of(b)
        if not math.isfinite(x) or x == 0:
            continue
        y = math.nextafter(x, math.inf)
        if not math.isfinite(y):
            continue
        mid = (exact_decimal(x) + exact_decimal(y)) / 2
        s = sci(mid)
        texts.append(s)
        mant, exp = s.split("e")
        # just above / below, by a digit far past the last one
        if "." not in mant:
            mant += "."
        if i % 2 == 0:
            texts.append(mant + "0" * 20 + "1e" + exp)
        if i % 40 == 0:
            # beyond 800 significant digits: only the sticky bit survives
            texts.append(mant + "0" * 900 + "1e" + exp)
            texts.append(mant + "0" * 900 + "e" + exp)
        # below: the previous 17-digit-ish neighbour of the midpoint
        lo = mid - Decimal(10) ** (mid.adjusted() - 40)
        texts.append(sci(lo))
    # boundaries
    texts += ["0.0", "-0.0", "0e0", "0E-5", "1e-400", "-1e-400", "1e309",
              "-1e309", "1.7976931348623157e308", "1.7976931348623158e308",
              "1.7976931348623159e308", "179769313486231580793728971405301e276",
              "2.2250738585072011e-308", "2.2250738585072012e-308",
              "4.9406564584124654e-324", "2.4703282292062327e-324",
              "2.4703282292062328e-324", "2.4703282292062326e-324",
              "1e-323", "5e-324", "3e-324", "1.0", "1e0", "1E0", "1e+0",
              "0.1", "0.30000000000000004", "9007199254740993.0",
              "9007199254740993e0", "9007199254740992.0000000000001",
              "1e22", "1e23", "123456789012345678901234567890.0",
              "0.000000000000000000000000000000000000001",
              "1" + "0" * 400 + ".0e-400", "0." + "0" * 400 + "1e400",
              "1e99999999999999999999", "1e-99999999999999999999",
              "0e99999999999999999999", "0.0e-99999999999"]
    out = []
    seen = set()
    for t in texts:
        if t in seen:
            continue
        seen.add(t)
        json.loads(t)  # must be valid JSON
        x = float(t)
        out.append((t, bits_of(x) if math.isfinite(x) else None))
    return out


JSON_TEXTS = [
    '{"a": 1, "b": [1, 2.5, "x"], "c": null}',
    '[true, false, null, 0, -0, -0.0, 1.0, 1e0, 100000.0, 1e16, 1e-05, 0.0001]',
    '{}', '[]', '[[]]', '[{}]', '{"": ""}', '""', '"plain"', '0', '-1',
    '9223372036854775807', '-9223372036854775808', '3.14', '-2.5e-7',
    ' { "k" : [ 1 , { "z" : 2 } ] } ',
    '"\\"quoted\\" and \\\\ back\\/slash"',
    '"tab\\there\\nnewline\\r\\b\\f\\u0000\\u0001\\u001f\\u007f"',
    '"caf\\u00e9 \\u2028 \\u2029 \\ud83d\\ude00 \u00e9\u4e2d"',
    '"it\'s"', '"say \\"hi\\""', '"both \' and \\""', '"\'"', '"\\""',
    '["it\'s", "say \\"hi\\"", "both \' and \\"", "\\\\", "\\n\\t\\r"]',
    '{"it\'s": "x", "q\\"": 1, "\\u0007": "\\u001b[0m"}',
    '["\\u00a0", "\\u00ad", "\\u0085", "\\u200b", "\\u2028", "\\u3000", '
    '"\\ue000", "\\udbff\\udfff", "\\ud83d\\ude00", "\\u00e9", "\\u0378", '
    '"\\ufeff", "\\u061c", "\\ud800\\udc00", "\\u00ff", "\\u0100"]',
    '{"name": "get_weather", "parameters": {"type": "object", "properties": '
    '{"city": {"type": "string", "description": "City name"}, "days": '
    '{"type": "integer", "minimum": 1, "maximum": 14, "default": 3.0}}, '
    '"required": ["city"]}}',
    '{"b": 1, "a": 2, "10": 3, "2": 4, "1": 5}',
    '[1e300, 1.5e-300, 5e-324, 1.7976931348623157e308, 123456789.123, '
    '0.1, 0.2, 0.30000000000000004, 1e15, 1e17, 12345678901234567890.0]',
    '{"nested": {"deeper": {"deepest": [[[["end"]]]]}}}',
    '["\u00e9\u00e8", "\U0001F600", "\\u0000", "a\u007fb"]',
]


def json_vectors():
    out = []
    for t in JSON_TEXTS:
        v = json.loads(t)
        out.append((t, json.dumps(v, ensure_ascii=False), str(v)))
    return out


def nonprintable_ranges():
    r, start = [], None
    for cp in range(0x80, 0x110000):
        np_ = not chr(cp).isprintable()
        if np_ and start is None:
            start = cp
        if not np_ and start is not None:
            r.append((start, cp - 1))
            start = None
    if start is not None:
        r.append((start, 0x10FFFF))
    return r


def repr_cp_vectors(ranges):
    cps = set(range(0, 0x100))
    for a, b in ranges:
        for cp in (a - 1, a, b, b + 1):
            if 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF:
                cps.add(cp)
    return [(cp, repr(chr(cp))) for cp in sorted(cps)]


def header_note():
    return (f"/* Generated by tools/oracle/py_format_vectors.py from CPython "
            f"{sys.version.split()[0]}\n * (unicodedata "
            f"{unicodedata.unidata_version}); do not edit. Regenerate with\n"
            f" *   /usr/bin/python3 tools/oracle/py_format_vectors.py */\n")


def gen_vectors():
    rng = random.Random(20240611)
    rv = repr_vectors(rng)
    pv = parse_vectors(rng)
    jv = json_vectors()
    cv = repr_cp_vectors(nonprintable_ranges())
    L = [header_note(), "#ifndef TL_CORE_JSON_PY_FORMAT_VECTORS_H",
         "#define TL_CORE_JSON_PY_FORMAT_VECTORS_H", "",
         "#include <stddef.h>", "#include <stdint.h>", "",
         "/* repr(float) of the double with these bits. */",
         "typedef struct tl_py_repr_vector {", "  uint64_t bits;",
         "  const char *repr;", "} tl_py_repr_vector;", "",
         "/* float(text) for a JSON number text; ok false: float() gives inf, "
         "which",
         " * the reader refuses as out of range. */",
         "typedef struct tl_py_parse_vector {", "  const char *text;",
         "  uint64_t bits;", "  int ok;", "} tl_py_parse_vector;", "",
         "/* json.dumps(json.loads(text), ensure_ascii=False) and str() of it. */",
         "typedef struct tl_py_json_vector {", "  const char *text;",
         "  const char *dumps;", "  const char *str;", "} tl_py_json_vector;", "",
         "/* repr(chr(cp)). */",
         "typedef struct tl_py_repr_cp_vector {", "  uint32_t cp;",
         "  const char *repr;", "} tl_py_repr_cp_vector;", ""]
    L.append("static const tl_py_repr_vector tl_py_repr_vectors[] = {")
    for b, r in rv:
        L.append(f"    {{0x{b:016x}u, {c_str(r)}}},")
    L.append("};\n")
    L.append("static const tl_py_parse_vector tl_py_parse_vectors[] = {")
    for t, b in pv:
        L.append(f"    {{{c_str(t)}, 0x{(b or 0):016x}u, {0 if b is None else 1}}},")
    L.append("};\n")
    L.append("static const tl_py_json_vector tl_py_json_vectors[] = {")
    for t, d, s in jv:
        L.append(f"    {{{c_str(t)},\n     {c_str(d)},\n     {c_str(s)}}},")
    L.append("};\n")
    L.append("static const tl_py_repr_cp_vector tl_py_repr_cp_vectors[] = {")
    for cp, r in cv:
        L.append(f"    {{0x{cp:x}u, {c_str(r)}}},")
    L.append("};\n")
    L.append("#endif")
    return "\n".join(L) + "\n"


def gen_printable():
    r = nonprintable_ranges()
    L = [header_note(), "#ifndef TL_CORE_JSON_PY_PRINTABLE_H",
         "#define TL_CORE_JSON_PY_PRINTABLE_H", "", "#include <stdint.h>", "",
         "/* Inclusive ranges of code points >= U+0080 for which str.isprintable()",
         " * is False (general categories Cc Cf Cs Co Cn Zl Zp Zs), sorted. Below",
         " * U+0080 only U+0020..U+007E are printable. */",
         f"static const uint32_t tl_py_nonprintable[{len(r)}][2] = {{"]
    for a, b in r:
        L.append(f"    {{0x{a:x}u, 0x{b:x}u}},")
    L.append("};\n")
    L.append("#endif")
    return "\n".join(L) + "\n"


def main():
    outs = {OUT_VECTORS: gen_vectors(), OUT_PRINTABLE: gen_printable()}
    if "--check" in sys.argv[1:]:
        bad = [str(p) for p, t in outs.items()
               if not p.exists() or p.read_text() != t]
        if bad:
            print("out of date: " + ", ".join(bad), file=sys.stderr)
            sys.exit(1)
        print("py_format vectors: up to date")
        return
    for p, t in outs.items():
        p.write_text(t)
        print(f"wrote {p.relative_to(ROOT)} ({len(t)} bytes)")


if __name__ == "__main__":
    main()
