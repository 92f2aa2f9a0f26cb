#!/usr/bin/python3
"""Differential test of the core CBOR reader/writer against Python cbor2.

Run with Debian's python3 (it has python3-cbor2 5.4.6):

    /usr/bin/python3 tests/diff/cbor_diff.py build/gcc/cbor_tool [--docs N] [--seed S]

Groups (one line each, then "N passed, N failed"; exit status 1 on any
failure). Requirement ids are docs/cbor.md's.

  A   Python -> C: random documents encoded by cbor2 in RFC 8949 order
      must pass the C reader and re-encode through the C writer to the
      same bytes (CBOR-2, -7, -8, -11, -13).
  B   C -> Python: documents from the C writer (pairs put in random order)
      must load in cbor2, dump back byte for byte, and equal cbor2's
      encoding with keys ordered here, bytewise (CBOR-8, -13).
  B2  the C writer's output passes the C reader unchanged.
  C1  hand-made hostile encodings, most of them produced by cbor2 itself
      (floats, tags, undefined, length-first "canonical" maps), with the
      expected fault kind and offset (CBOR-1..-12).
  C2  hostile documents built from valid ones with a known fault: keys
      reversed, a pair duplicated, a head widened, a definite head made
      indefinite, a byte appended.
  C3  random mutations (truncation, byte flips, insertions, deletions) of
      valid documents: the C verdict (kind, offset) must equal the one of
      the small strict reference checker below, written from RFC 8949
      independently of the C code; what both accept must also load in
      cbor2 and re-encode to the same bytes.

cbor2 5.4.6's canonical=True orders map keys length-first (RFC 7049
canonical CBOR), not bytewise as RFC 8949 §4.2.1 does, so keys are ordered
here and cbor2 dumps with canonical=False (it keeps insertion order and
always writes shortest integer heads). How often the two orders give
different bytes is printed as information.
"""

import argparse
import datetime
import decimal
import fractions
import random
import struct
import subprocess
import sys
import uuid

import cbor2
from cbor2 import CBORSimpleValue, CBORTag
from cbor2.types import FrozenDict

# Tag numbers the documents may carry: one per head width, none that cbor2
# decodes into a Python type.
TAGS = [6, 23, 24, 4242, 70000, 2**32 + 5]
MAX_DEPTH = 32
INVALID_CBOR_NAMES = ('invalid_cbor', 'TL_ERR_INVALID_CBOR')
BOUNDARIES = [0, 1, 10, 23, 24, 25, 100, 255, 256, 1000, 65535, 65536,
              2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1]


# --- deterministic encoding on the Python side ------------------------------

def canon(obj):
    """obj with every map's keys in RFC 8949 order (bytewise by encoding)."""
    if isinstance(obj, (dict, FrozenDict)):
        items = [(canon(k), canon(v)) for k, v in obj.items()]
        items.sort(key=lambda kv: cbor2.dumps(kv[0]))
        return FrozenDict(items) if isinstance(obj, FrozenDict) else dict(items)
    if isinstance(obj, list):
        return [canon(x) for x in obj]
    if isinstance(obj, tuple):
        return tuple(canon(x) for x in obj)
    if isinstance(obj, CBORTag):
        return CBORTag(obj.tag, canon(obj.value))
    return obj


def det_dumps(obj):
    return cbor2.dumps(canon(obj), canonical=False)


# --- random documents ------------------------------------------------------

def rand_int(rng):
    if rng.random() < 0.5:
        n = rng.choice(BOUNDARIES)
    else:
        n = rng.getrandbits(rng.randint(0, 64))
    return n if rng.random() < 0.5 else -1 - n


def rand_text(rng):
    out = []
    for _ in range(rng.randrange(12)):
        kind = rng.randrange(6)
        if kind == 0:
            cp = rng.randrange(0x80)
        elif kind == 1:
            cp = rng.randrange(0x80, 0x800)
        elif kind == 2:
            cp = rng.randrange(0x800, 0x10000)
            if 0xD800 <= cp <= 0xDFFF:
                cp = 0xFFFD
        elif kind == 3:
            cp = rng.randrange(0x10000, 0x110000)
        else:
            cp = ord('a') + rng.randrange(4)
        out.append(chr(cp))
    return ''.join(out)


def rand_bytes(rng):
    n = rng.randrange(40) if rng.random() < 0.3 else rng.randrange(4)
    return bytes(rng.getrandbits(8) for _ in range(n))


class Budget:
    def __init__(self, n):
        self.n = n


def rand_obj(rng, budget, depth=0, key=False):
    """A random value; inside keys, containers are tuple and FrozenDict."""
    budget.n -= 1
    may_nest = budget.n > 0 and depth + 1 < MAX_DEPTH
    while True:
        c = rng.randrange(10)
        if c in (0, 1):
            return rand_int(rng)
        if c == 2:
            return rand_text(rng)
        if c == 3:
            return rand_bytes(rng)
        if c == 4:
            return rng.random() < 0.5
        if c == 5:
            return None
        if not may_nest:
            continue
        if c in (6, 7):
            items = [rand_obj(rng, budget, depth + 1, key)
                     for _ in range(rng.randrange(3 if key else 8))]
            return tuple(items) if key else items
        if c == 8:
            d = {}
            for _ in range(rng.randrange(3 if key else 7)):
                k = rand_obj(rng, budget, depth + 1, True)
                if k in d:  # equal in Python (True == 1 included): skip
                    continue
                d[k] = rand_obj(rng, budget, depth + 1, key)
            return FrozenDict(d) if key else d
        return CBORTag(rng.choice(TAGS), rand_obj(rng, budget, depth + 1, key))


def rand_deep(rng):
    depth = rng.randint(1, MAX_DEPTH)
    obj = rand_int(rng)
    for _ in range(depth):
        c = rng.randrange(3)
        obj = [obj] if c == 0 else {rand_int(rng): obj} if c == 1 else \
            CBORTag(rng.choice(TAGS), obj)
    return obj


def python_documents(rng, n):
    docs = []
    while len(docs) < n:
        obj = rand_deep(rng) if rng.random() < 0.03 else \
            rand_obj(rng, Budget(rng.randrange(40)))
        docs.append((obj, det_dumps(obj)))
    return docs


# --- the C tool -------------------------------------------------------------

def pack(docs):
    return b''.join(struct.pack('>I', len(d)) + d for d in docs)


def unpack(stream):
    docs, i = [], 0
    while i < len(stream):
        (n,) = struct.unpack('>I', stream[i:i + 4])
        docs.append(stream[i + 4:i + 4 + n])
        i += 4 + n
    return docs


def c_canon(tool, docs, tags=TAGS):
    """C verdicts: ('OK', bytes) or ('ERR', kind, offset)."""
    res = subprocess.run([tool, 'canon'] + [str(t) for t in tags],
                         input=pack(docs), stdout=subprocess.PIPE, check=False)
    lines = res.stdout.decode().splitlines()
    if res.returncode != 0 or len(lines) != len(docs):
        raise RuntimeError('cbor_tool canon failed (rc %d, %d/%d lines): %s'
                           % (res.returncode, len(lines), len(docs),
                              [l for l in lines if l.startswith('MISMATCH')][:3]))
    out = []
    for line in lines:
        f = line.split()
        if f[0] == 'OK':
            out.append(('OK', bytes.fromhex(f[1]) if len(f) > 1 else b''))
        else:
            # the status as tl_status_name() spells it
            assert f[0] == 'ERR' and f[1] in INVALID_CBOR_NAMES, line
            out.append(('ERR', f[2], int(f[3])))
    return out


def c_gen(tool, seed, n, tags=TAGS):
    res = subprocess.run([tool, 'gen', str(seed), str(n)] +
                         [str(t) for t in tags],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         check=True)
    return unpack(res.stdout), res.stderr.decode().strip()


# --- independent strict reference checker -----------------------------------

class Fault(Exception):
    def __init__(self, kind, offset):
        super().__init__(kind, offset)
        self.kind, self.offset = kind, offset


MIN_ARG = [24, 0x100, 0x10000, 0x100000000]


def ref_check(b, tags=TAGS, max_depth=MAX_DEPTH):
    """None if b is in the profile, else (fault kind, offset)."""
    pos = 0
    owed = 1  # items announced and not started yet: the document's one

    def item(depth):
        nonlocal pos, owed
        start = pos
        if pos >= len(b):
            raise Fault('truncated', len(b))
        major, ai = b[pos] >> 5, b[pos] & 31
        if 28 <= ai <= 30:
            raise Fault('reserved_additional_info', start)
        if ai == 31:
            raise Fault('indefinite_length', start)
        if major == 7:
            if ai in (20, 21, 22):
                pos += 1
                owed -= 1
                return
            raise Fault('float_or_simple', start)
        if ai < 24:
            arg, hl = ai, 1
        else:
            nb = 1 << (ai - 24)
            if len(b) - pos - 1 < nb:
                raise Fault('truncated', start)
            arg = int.from_bytes(b[pos + 1:pos + 1 + nb], 'big')
            if arg < MIN_ARG[ai - 24]:
                raise Fault('non_shortest_head', start)
            hl = 1 + nb
        owed -= 1  # this one starts; every other owed item needs a byte
        rem = len(b) - pos - hl
        need = {2: arg, 3: arg, 4: arg, 5: 2 * arg}.get(major, 0)
        if major in (2, 3, 4, 5) and owed + need > rem:
            raise Fault('length_exceeds_input', start)
        if major in (2, 3):
            if major == 3:
                try:
                    b[pos + hl:pos + hl + arg].decode('utf-8')
                except UnicodeDecodeError as e:
                    raise Fault('invalid_utf8', pos + hl + e.start) from None
            pos += hl + arg
            return
        if major in (0, 1):
            pos += hl
            return
        if major == 6 and arg not in tags:
            raise Fault('disallowed_tag', start)
        if depth >= max_depth:
            raise Fault('depth_exceeded', start)
        pos += hl
        owed += need if major != 6 else 1
        if major == 4:
            for _ in range(arg):
                item(depth + 1)
        elif major == 5:
            prev = None
            for _ in range(arg):
                ks = pos
                item(depth + 1)
                k = b[ks:pos]
                if prev is not None and k == prev:
                    raise Fault('duplicate_key', ks)
                if prev is not None and k < prev:
                    raise Fault('key_order', ks)
                prev = k
                item(depth + 1)
        else:
            item(depth + 1)

    try:
        item(0)
        if pos < len(b):
            raise Fault('trailing_bytes', pos)
    except Fault as f:
        return (f.kind, f.offset)
    return None


def heads(b):
    """(offset, major, additional info) of every head of a valid document."""
    out, pos = [], 0

    def item():
        nonlocal pos
        start, major, ai = pos, b[pos] >> 5, b[pos] & 31
        if major == 7:
            pos += 1
            out.append((start, major, ai))
            return
        nb = 0 if ai < 24 else 1 << (ai - 24)
        arg = ai if ai < 24 else int.from_bytes(b[pos + 1:pos + 1 + nb], 'big')
        out.append((start, major, ai))
        pos += 1 + nb
        if major in (2, 3):
            pos += arg
        elif major == 4:
            for _ in range(arg):
                item()
        elif major == 5:
            for _ in range(2 * arg):
                item()
        elif major == 6:
            item()

    item()
    return out


def widen(b, off):
    """b with the head at off one width wider (non-shortest), or None."""
    major, ai = b[off] >> 5, b[off] & 31
    if major == 7 or ai == 27:
        return None
    if ai < 24:
        arg, nb = ai, 0
    else:
        nb = 1 << (ai - 24)
        arg = int.from_bytes(b[off + 1:off + 1 + nb], 'big')
    wide_ai = 24 if ai < 24 else ai + 1
    wide_nb = 1 << (wide_ai - 24)
    head = bytes([major << 5 | wide_ai]) + arg.to_bytes(wide_nb, 'big')
    return b[:off] + head + b[off + 1 + nb:]


def head_bytes(major, arg):
    """The shortest head for major type and argument."""
    if arg < 24:
        return bytes([major << 5 | arg])
    for ai, nb in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if arg < 1 << (8 * nb):
            return bytes([major << 5 | ai]) + arg.to_bytes(nb, 'big')
    raise ValueError(arg)


# --- the checks -------------------------------------------------------------

class Report:
    def __init__(self):
        self.passed = self.failed = 0

    def group(self, name, ok, detail, failures=()):
        print('%s %s: %s' % ('PASS' if ok else 'FAIL', name, detail))
        for f in list(failures)[:5]:
            print('    ' + f)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def length_first_differs(obj, det):
    try:
        return cbor2.dumps(obj, canonical=True) != det
    except Exception:  # pragma: no cover - information only
        return True


def group_a(rep, tool, rng, n):
    docs = python_documents(rng, n)
    verdicts = c_canon(tool, [d for _, d in docs])
    bad = []
    differ = 0
    for (obj, d), v in zip(docs, verdicts):
        if v != ('OK', d):
            bad.append('%s -> %s' % (d.hex()[:80], v))
        if length_first_differs(obj, d):
            differ += 1
    rep.group('A  python->C canon identity', not bad,
              '%d documents, %d identical, %d bytes' %
              (len(docs), len(docs) - len(bad), sum(len(d) for _, d in docs)),
              bad)
    return len(docs), differ, [d for _, d in docs]


def group_b(rep, tool, seed, n):
    docs, info = c_gen(tool, seed, n)
    bad_rt, bad_order = [], []
    differ = 0
    for d in docs:
        try:
            obj = cbor2.loads(d)
        except Exception as e:  # noqa: BLE001
            bad_rt.append('%s: cbor2 cannot load: %s' % (d.hex()[:80], e))
            continue
        if cbor2.dumps(obj) != d:
            bad_rt.append('%s: cbor2 round trip %s' %
                          (d.hex()[:80], cbor2.dumps(obj).hex()[:80]))
        if det_dumps(obj) != d:
            bad_order.append('%s: RFC 8949 order here %s' %
                             (d.hex()[:80], det_dumps(obj).hex()[:80]))
        if length_first_differs(obj, d):
            differ += 1
    rep.group('B  C->python cbor2 round trip', not bad_rt,
              '%d documents (%s)' % (len(docs), info), bad_rt)
    rep.group('B  C->python RFC 8949 key order', not bad_order,
              '%d documents, %d identical' %
              (len(docs), len(docs) - len(bad_order)), bad_order)
    verdicts = c_canon(tool, docs)
    bad = ['%s -> %s' % (d.hex()[:80], v)
           for d, v in zip(docs, verdicts) if v != ('OK', d)]
    rep.group('B2 C writer output passes C reader', not bad,
              '%d documents' % len(docs), bad)
    return len(docs), differ, docs


def hostile_cases():
    """(name, bytes, kind, offset) with the verdict fixed by hand."""
    utc = datetime.timezone.utc
    deep = b'\x81' * 33 + b'\x00'
    cases = [
        # CBOR-1
        ('empty', b'', 'truncated', 0),
        ('two items', cbor2.dumps(1) + cbor2.dumps(2), 'trailing_bytes', 1),
        ('uint64 cut', cbor2.dumps(2**40)[:-1], 'truncated', 0),
        ('text cut', cbor2.dumps('hello')[:-1], 'length_exceeds_input', 0),
        ('nested cut', cbor2.dumps([1, [2, 3]])[:-1], 'length_exceeds_input', 2),
        ('map value missing', cbor2.dumps({1: [2]})[:-1], 'length_exceeds_input', 2),
        # CBOR-2
        ('uint 5 in 1 byte', b'\x18\x05', 'non_shortest_head', 0),
        ('uint 255 in 2', b'\x19\x00\xff', 'non_shortest_head', 0),
        ('uint 65535 in 4', b'\x1a\x00\x00\xff\xff', 'non_shortest_head', 0),
        ('uint 2^32-1 in 8', b'\x1b' + (2**32 - 1).to_bytes(8, 'big'),
         'non_shortest_head', 0),
        ('nint -1 in 1', b'\x38\x00', 'non_shortest_head', 0),
        ('bytes len in 1', b'\x58\x01\x00', 'non_shortest_head', 0),
        ('array count in 2', b'\x99\x00\x01\x00', 'non_shortest_head', 0),
        ('map count in 1', b'\xb8\x00', 'non_shortest_head', 0),
        ('tag in 1', b'\xd8\x06\x00', 'non_shortest_head', 0),
        # CBOR-3
        ('indef bytes', b'\x5f\x41\x00\xff', 'indefinite_length', 0),
        ('indef text', b'\x7f\x61a\xff', 'indefinite_length', 0),
        ('indef array', b'\x9f\x01\xff', 'indefinite_length', 0),
        ('indef map', b'\xbf\x01\x02\xff', 'indefinite_length', 0),
        ('lone break', b'\xff', 'indefinite_length', 0),
        ('indef inside', b'\x82\x01\x9f\xff', 'indefinite_length', 2),
        # CBOR-4
        ('ai 28', b'\x1c', 'reserved_additional_info', 0),
        ('ai 30 in array', b'\x81\x5e', 'reserved_additional_info', 1),
        # CBOR-5 (cbor2 writes these)
        ('double', cbor2.dumps(1.5), 'float_or_simple', 0),
        ('half', cbor2.dumps(1.5, canonical=True), 'float_or_simple', 0),
        ('nan', cbor2.dumps(float('nan')), 'float_or_simple', 0),
        ('inf', cbor2.dumps(float('inf')), 'float_or_simple', 0),
        ('float in array', cbor2.dumps([1, 2.5]), 'float_or_simple', 2),
        ('float key', cbor2.dumps({0.5: 1}), 'float_or_simple', 1),
        # CBOR-6
        ('undefined', cbor2.dumps(cbor2.undefined), 'float_or_simple', 0),
        ('simple 16', cbor2.dumps(CBORSimpleValue(16)), 'float_or_simple', 0),
        ('simple 200', cbor2.dumps(CBORSimpleValue(200)), 'float_or_simple', 0),
        # CBOR-7
        ('bad utf-8', b'\x62\xc3\x28', 'invalid_utf8', 1),
        ('surrogate', b'\x63\xed\xa0\x80', 'invalid_utf8', 1),
        ('overlong', b'\x82\x61a\x62\xc0\x80', 'invalid_utf8', 4),
        ('above 10FFFF', b'\x64\xf4\x90\x80\x80', 'invalid_utf8', 1),
        ('utf-8 cut', b'\x63ab\xe2', 'invalid_utf8', 3),
        # CBOR-8 (cbor2 canonical=True and insertion order)
        ('length-first canonical', cbor2.dumps({256: 0, 'a': 0}, canonical=True),
         'key_order', 4),
        ('insertion order', cbor2.dumps({2: 0, 1: 0}), 'key_order', 3),
        ('-1 before 10', cbor2.dumps({-1: 0, 10: 0}), 'key_order', 3),
        ('[-1] before [100]', cbor2.dumps({(-1,): 0, (100,): 0}), 'key_order', 4),
        ('false before "z"', cbor2.dumps({False: 0, 'z': 0}), 'key_order', 3),
        ('duplicate', b'\xa2' + cbor2.dumps(1) + b'\x00' + cbor2.dumps(1) + b'\x01',
         'duplicate_key', 3),
        ('duplicate text', b'\xa2' + (cbor2.dumps('k') + b'\xf6') * 2,
         'duplicate_key', 4),
        # CBOR-9 (cbor2 writes these tags for Python types)
        ('datetime', cbor2.dumps(datetime.datetime(2020, 1, 1, tzinfo=utc)),
         'disallowed_tag', 0),
        ('timestamp', cbor2.dumps(datetime.datetime(2020, 1, 1, tzinfo=utc),
                                  datetime_as_timestamp=True), 'disallowed_tag', 0),
        ('bignum', cbor2.dumps(2**64), 'disallowed_tag', 0),
        ('negative bignum', cbor2.dumps(-2**64 - 1), 'disallowed_tag', 0),
        ('decimal', cbor2.dumps(decimal.Decimal('1.5')), 'disallowed_tag', 0),
        ('fraction', cbor2.dumps(fractions.Fraction(1, 3)), 'disallowed_tag', 0),
        ('uuid', cbor2.dumps(uuid.UUID(int=1)), 'disallowed_tag', 0),
        ('set', cbor2.dumps({1, 2}), 'disallowed_tag', 0),
        ('unlisted tag', cbor2.dumps(CBORTag(4243, 0)), 'disallowed_tag', 0),
        ('unlisted inside', cbor2.dumps([CBORTag(6, CBORTag(7, 0))]),
         'disallowed_tag', 2),
        # CBOR-10
        ('huge array', b'\x9b' + b'\xff' * 8, 'length_exceeds_input', 0),
        ('huge bytes', b'\x5b' + b'\xff' * 8, 'length_exceeds_input', 0),
        ('huge map', b'\xbb' + b'\x7f' + b'\xff' * 7, 'length_exceeds_input', 0),
        ('huge text', b'\x7a\xff\xff\xff\xff', 'length_exceeds_input', 0),
        ('count one too many', b'\x83\x00\x00', 'length_exceeds_input', 0),
        # CBOR-12
        ('33 nested arrays', deep, 'depth_exceeded', 32),
        ('33 nested tags', b'\xc6' * 33 + b'\x00', 'depth_exceeded', 32),
    ]
    return cases


def group_c1(rep, tool):
    cases = hostile_cases()
    verdicts = c_canon(tool, [b for _, b, _, _ in cases])
    bad = []
    for (name, b, kind, off), v in zip(cases, verdicts):
        want = ('ERR', kind, off)
        if v != want:
            bad.append('%s %s: C %s, want %s' % (name, b.hex()[:40], v, want))
        if ref_check(b) != (kind, off):
            bad.append('%s: reference checker %s, want %s' %
                       (name, ref_check(b), (kind, off)))
    kinds = sorted({k for _, _, k, _ in cases})
    rep.group('C1 hostile encodings rejected', not bad,
              '%d cases, %d fault kinds' % (len(cases), len(kinds)), bad)
    return len(cases)


def group_c2(rep, tool, rng, valid_docs):
    """Faults put in by construction; the expected verdict follows."""
    cases = []
    # Keys reversed and a pair duplicated, in top-level maps of >= 2 pairs.
    maps = 0
    for d in valid_docs:
        obj = cbor2.loads(d)
        if not isinstance(obj, dict) or len(obj) < 2 or maps >= 400:
            continue
        maps += 1
        pairs = [cbor2.dumps(k) + cbor2.dumps(v) for k, v in obj.items()]
        head = d[:len(d) - sum(len(p) for p in pairs)]
        rev = head + b''.join(reversed(pairs))
        cases.append(('reversed', rev, 'key_order', len(head) + len(pairs[-1])))
        i = rng.randrange(len(pairs))
        dup_head = head_bytes(5, len(pairs) + 1)
        dup_doc = dup_head + b''.join(pairs[:i + 1]) + pairs[i] + \
            b''.join(pairs[i + 1:])
        cases.append(('duplicated', dup_doc, 'duplicate_key',
                      len(dup_head) + sum(len(p) for p in pairs[:i + 1])))
    for d in valid_docs[:1500]:
        hs = heads(d)
        off, major, ai = hs[rng.randrange(len(hs))]
        w = widen(d, off)
        if w is not None:
            cases.append(('widened', w, 'non_shortest_head', off))
        cases.append(('trailing', d + bytes([rng.randrange(256)]),
                      'trailing_bytes', len(d)))
        if d[0] >> 5 in (2, 3, 4, 5):
            nb = 0 if d[0] & 31 < 24 else 1 << ((d[0] & 31) - 24)
            indef = bytes([(d[0] & 0xe0) | 31]) + d[1 + nb:] + b'\xff'
            cases.append(('indefinite', indef, 'indefinite_length', 0))
    verdicts = c_canon(tool, [b for _, b, _, _ in cases])
    bad, per = [], {}
    for (name, b, kind, off), v in zip(cases, verdicts):
        per[name] = per.get(name, 0) + 1
        if v != ('ERR', kind, off):
            bad.append('%s %s: C %s, want %s' % (name, b.hex()[:60], v,
                                                 (kind, off)))
        elif ref_check(b) != (kind, off):
            bad.append('%s %s: reference %s' % (name, b.hex()[:60],
                                                ref_check(b)))
    rep.group('C2 constructed faults rejected', not bad,
              '%d documents (%s)' % (len(cases), ', '.join(
                  '%s %d' % kv for kv in sorted(per.items()))), bad)
    return len(cases)


def mutate(rng, d):
    d = bytearray(d)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(4)
        if op == 0 and d:
            del d[rng.randrange(len(d)):]
        elif op == 1 and d:
            d[rng.randrange(len(d))] ^= 1 << rng.randrange(8)
        elif op == 2:
            d.insert(rng.randrange(len(d) + 1), rng.randrange(256))
        elif d:
            del d[rng.randrange(len(d))]
    return bytes(d)


def group_c3(rep, tool, rng, valid_docs, n):
    cases = [mutate(rng, rng.choice(valid_docs)) for _ in range(n)]
    verdicts = c_canon(tool, cases)
    bad, kinds, accepted = [], {}, 0
    for b, v in zip(cases, verdicts):
        ref = ref_check(b)
        if ref is None:
            accepted += 1
            if v != ('OK', b):
                bad.append('%s: C %s, reference accepts' % (b.hex()[:60], v))
                continue
            try:
                if det_dumps(cbor2.loads(b)) != b:
                    bad.append('%s: cbor2 re-encodes differently' % b.hex()[:60])
            except Exception as e:  # noqa: BLE001
                bad.append('%s: cbor2 cannot load: %s' % (b.hex()[:60], e))
        else:
            kinds[ref[0]] = kinds.get(ref[0], 0) + 1
            if v != ('ERR',) + ref:
                bad.append('%s: C %s, reference %s' % (b.hex()[:60], v, ref))
    rep.group('C3 mutations: C agrees with reference checker', not bad,
              '%d documents, %d still valid, rejected: %s' %
              (len(cases), accepted,
               ', '.join('%s %d' % kv for kv in sorted(kinds.items()))), bad)
    return len(cases)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('tool', help='path to build/<cfg>/cbor_tool')
    ap.add_argument('--docs', type=int, default=5000,
                    help='documents per direction (default 5000)')
    ap.add_argument('--seed', type=int, default=20240601)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    rep = Report()
    try:
        na, da, py_docs = group_a(rep, args.tool, rng, args.docs)
        nb, db, c_docs = group_b(rep, args.tool, args.seed, args.docs)
        group_c1(rep, args.tool)
        group_c2(rep, args.tool, rng, py_docs + c_docs)
        group_c3(rep, args.tool, rng, py_docs + c_docs, args.docs)
        print('INFO cbor2 canonical=True (length-first) differs from RFC 8949 '
              'order in %d of %d python documents, %d of %d C documents' %
              (da, na, db, nb))
    except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
        print('FAIL harness: %s' % e)
        rep.failed += 1
    print('%d passed, %d failed' % (rep.passed, rep.failed))
    return 1 if rep.failed else 0


if __name__ == '__main__':
    sys.exit(main())
