#!/usr/bin/python3
"""Independent reference for the sampler (docs/sampler.md, docs/architecture.md §7).

Written from docs/sampler.md, not from src/core/sample/: its own
Philox-4x32-10, its own ordering, filtering and selection, in Python floats
(IEEE binary64, one rounding per operation, like the C side's strict lane).
Standard library only.

exp is the one function the two sides may not share. sample() takes it as
a parameter:
  math.exp    the independent oracle. It can differ from the C side's
              tl_exp in the last bit, so a probability can differ by an ulp
              or so; the chosen id can then only differ when a comparison
              (top-p prefix, min-p threshold, draw against a bound) is within
              a few ulps of equality. margins() measures exactly those
              distances so a disagreement is classified (near tie) rather
              than hidden.
  tl_exp      a port of src/core/math/detmath.c's tl_exp, operation for
              operation. With it every value is bit-identical to the C side,
              so the differential test can demand bit equality of the whole
              trace, not only of the chosen id.

  sampler_ref.py --selftest        Philox known-answer vectors, the tl_exp
                                   port's sanity, a hand-derived tie case
  sampler_ref.py draw SEED DRAW TOKEN TURN STREAM
                                   the draw word and value at a position
"""
import math
import struct
import sys

MASK32 = 0xFFFFFFFF

# --- Philox-4x32-10 (Salmon et al., SC'11; Random123) -----------------------
PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)

# Known-answer vectors from Random123's tests/kat_vectors
# (https://github.com/DEShawResearch/random123, tests/kat_vectors, the three
# "philox4x32 10" lines): counter[4] key[2] -> output[4].
PHILOX_KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def philox4x32_10(ctr, key):
    x0, x1, x2, x3 = ctr
    k0, k1 = key
    for rnd in range(10):
        if rnd:
            k0 = (k0 + PHILOX_W[0]) & MASK32
            k1 = (k1 + PHILOX_W[1]) & MASK32
        a = PHILOX_M[0] * x0
        b = PHILOX_M[1] * x2
        x0, x1, x2, x3 = ((b >> 32) ^ x1 ^ k0, b & MASK32,
                          (a >> 32) ^ x3 ^ k1, a & MASK32)
    return (x0, x1, x2, x3)


def draw_word(seed, draw, token, turn, stream):
    """Word 0 at counter (draw, token, turn, stream), key = seed's
    little-endian 32-bit words."""
    return philox4x32_10((draw, token, turn, stream),
                         (seed & MASK32, (seed >> 32) & MASK32))[0]


def draw_unit(word):
    return word * 2.0 ** -32  # exact: 32 bits fit a binary64 significand


# --- floats -------------------------------------------------------------------
def f32_from_bits(b):
    return struct.unpack('<f', struct.pack('<I', b))[0]


def f32_bits(x):
    return struct.unpack('<I', struct.pack('<f', x))[0]


def f64_bits(x):
    return struct.unpack('<Q', struct.pack('<d', x))[0]


def f64_from_bits(b):
    return struct.unpack('<d', struct.pack('<Q', b))[0]


def f32_finite(b):
    return (b & 0x7F800000) != 0x7F800000


# Port of tl_exp (src/core/math/detmath.c): the same binary64 operations in
# the same order; Python floats round each one like C with
# -ffp-contract=off, so the result is the same bits.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00


def _pow2(k):
    if k < -1022:
        return _pow2(k + 54) * 5.551115123125783e-17
    return f64_from_bits((k + 1023) << 52)


def tl_exp(x):
    if x != x:
        return x
    if x > 709.782712893384:
        return math.inf
    if x < -745.1332191019412:
        return 0.0
    t = x * _INV_LN2
    k = int(t - 0.5) if t < 0 else int(t + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 / 87178291200.0
    for c in (1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
              1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0,
              1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0):
        p = p * r + c
    if k > 1023:
        return p * 2.0 * _pow2(k - 1)
    return p * _pow2(k)


# --- the sampler ----------------------------------------------------------------
TWO_M128 = 2.0 ** -128
TWO_M64 = 2.0 ** -64
TWO_P64 = 2.0 ** 64
DBL_MAX = sys.float_info.max

# Profile field indices (PROFILE fault index), docs/sampler.md §Profile.
FIELDS = ['temperature', 'top_k', 'top_p', 'min_p', 'repeat_penalty',
          'repeat_window', 'min_new', 'eos', 'ban', 'defined_ids',
          'frequency_penalty', 'presence_penalty', 'bias']


def penalties(p):
    """The later fields, off when absent: frequency, presence, {id: bias}."""
    return (p.get('frequency_penalty', 0.0), p.get('presence_penalty', 0.0),
            dict(p.get('bias', [])))


def penalty_term(count, freq, pres):
    """S-4b: what a generated id's value loses (count > 0), OpenAI's
    c * frequency_penalty + presence_penalty."""
    return float(count) * freq + pres


def profile_fault(p):
    """The first field out of range, or None."""
    t = p['temperature']
    if not (t == 0 or TWO_M128 <= t <= DBL_MAX):
        return 'temperature'
    if not 0.0 <= p['top_p'] <= 1.0:
        return 'top_p'
    if not 0.0 <= p['min_p'] <= 1.0:
        return 'min_p'
    if not TWO_M64 <= p['repeat_penalty'] <= TWO_P64:
        return 'repeat_penalty'
    for name in ('eos', 'ban'):
        ids = p[name]
        if any(ids[i - 1] >= ids[i] for i in range(1, len(ids))):
            return name
    if p['defined_ids'] == 0:
        return 'defined_ids'
    for name in ('frequency_penalty', 'presence_penalty'):
        if not -2.0 <= p.get(name, 0.0) <= 2.0:
            return name
    bias = p.get('bias', [])
    if (any(bias[i - 1][0] >= bias[i][0] for i in range(1, len(bias)))
            or not all(-100.0 <= v <= 100.0 for _, v in bias)):
        return 'bias'
    return None


def sample(p, logit_bits, history, n_generated, word, exp=math.exp):
    """One step. logit_bits: the f32 logits as u32 bit patterns. Returns
    ('ERR', status, fault, index) or a dict with id, survivors (ids in
    order), q (final probabilities), bounds, u, and the values margins()
    needs."""
    n = len(logit_bits)
    bad = profile_fault(p)
    if bad is not None:
        return ('ERR', 'invalid_argument', 'profile', FIELDS.index(bad))
    if n == 0 or n > MASK32 or p['defined_ids'] > n:
        return ('ERR', 'invalid_argument', 'vocab', 0)
    for i, h in enumerate(history):
        if h >= n:
            return ('ERR', 'invalid_argument', 'history', i)
    for i, b in enumerate(logit_bits):  # 1: non-finite
        if not f32_finite(b):
            return ('ERR', 'numerical_failure', 'non_finite', i)
    masked = set(range(p['defined_ids'], n))  # 2: padded rows, bans
    masked.update(b for b in p['ban'] if b < n)
    freq, pres, bias = penalties(p)
    masked.update(i for i, v in bias.items() if v == -100.0 and i < n)  # 2: a -100 bias bans
    if n_generated < p['min_new']:  # 3: EOS before min_new
        masked.update(e for e in p['eos'] if e < n)
    pen = p['repeat_penalty']  # 4: window of distinct ids
    window = set()
    if pen != 1.0 and p['repeat_window'] > 0:
        window = set(history[-p['repeat_window']:]) if history else set()
    # 4b: counts over the turn's generated ids (the history's tail).
    gen = history[len(history) - min(n_generated, len(history)):]
    counts = {}
    for h in gen:
        counts[h] = counts.get(h, 0) + 1
    cands = []
    for i in range(n):
        if i in masked:
            continue
        s = f32_from_bits(logit_bits[i])
        if i in bias:  # 4a
            s = s + bias[i]
        if i in window:
            if s > 0:
                s = s / pen
            elif s < 0:
                s = s * pen
        if (freq != 0.0 or pres != 0.0) and counts.get(i, 0) > 0:
            s = s - penalty_term(counts[i], freq, pres)
        cands.append((s, i))
    if not cands:
        return ('ERR', 'invalid_argument', 'all_masked', 0)
    u = draw_unit(word)
    t = p['temperature']
    if t == 0:  # 5: greedy; the draw is still taken
        best = min(cands, key=lambda c: (-c[0], c[1]))
        return {'id': best[1], 'survivors': [best[1]], 'q': [1.0],
                'bounds': [1.0], 'u': u, 'n_candidates': len(cands),
                'greedy': True}
    cands = [(s / t, i) for s, i in cands]
    # 6: descending value, ascending id (-0.0 == 0.0 in this key too).
    cands.sort(key=lambda c: (-c[0], c[1]))
    n_cand = len(cands)
    k = len(cands) if p['top_k'] == 0 or p['top_k'] >= len(cands) else p['top_k']
    cands = cands[:k]
    # 7: softmax from the first (largest), summed in order.
    e = [exp(s - cands[0][0]) for s, _ in cands]
    total = 0.0
    for v in e:
        total += v
    prob = [v / total for v in e]
    # 8: top-p prefix, crossing token kept.
    cut = k
    running = []
    if p['top_p'] < 1.0:
        c = 0.0
        for j in range(k):
            c += prob[j]
            running.append(c)
            if c >= p['top_p']:
                cut = j + 1
                break
    kept = list(range(cut))
    # 9: min-p filter.
    thr = None
    if p['min_p'] > 0:
        thr = p['min_p'] * prob[0]
        kept = [j for j in kept if prob[j] >= thr]
    # 10: renormalise.
    tot = 0.0
    for j in kept:
        tot += prob[j]
    q = [prob[j] / tot for j in kept]
    # 11: first bound above the draw; else the last non-zero one.
    bounds, b = [], 0.0
    for v in q:
        b += v
        bounds.append(b)
    chosen = None
    for j, bj in enumerate(bounds):
        if bj > u:
            chosen = j
            break
    if chosen is None:
        chosen = max(j for j, v in enumerate(q) if v > 0)
    ids = [cands[j][1] for j in kept]
    return {'id': ids[chosen], 'survivors': ids, 'q': q, 'bounds': bounds,
            'u': u, 'n_candidates': n_cand,
            'greedy': False, 'running': running, 'top_p': p['top_p'],
            'prob': prob, 'thr': thr, 'cut': cut, 'chosen_index': chosen}


def margins(r):
    """The smallest relative distance of any decision of r to its
    threshold: top-p (running sums against p), min-p (probabilities
    against the threshold), the draw against the chosen bound and the one
    before. A change of a few ulps in exp can only change the outcome when
    this is of the order of 1e-15."""
    if not isinstance(r, dict) or r['greedy']:
        return math.inf
    m = math.inf
    for c in r['running']:
        m = min(m, abs(c - r['top_p']))
    if r['thr'] is not None:
        for v in r['prob'][:r['cut']]:
            m = min(m, abs(v - r['thr']))
    j = r['chosen_index']
    m = min(m, abs(r['bounds'][j] - r['u']))
    if j > 0:
        m = min(m, abs(r['bounds'][j - 1] - r['u']))
    return m


# --- self-test ------------------------------------------------------------------
def _profile(**kw):
    p = {'temperature': 1.0, 'top_k': 0, 'top_p': 1.0, 'min_p': 0.0,
         'repeat_penalty': 1.0, 'repeat_window': 0, 'min_new': 0, 'eos': [],
         'ban': [], 'defined_ids': None}
    p.update(kw)
    return p


def selftest(quiet=False):
    """Returns (passed, failed); prints each failure, and the count line
    unless quiet."""
    fails = 0
    passes = 0

    def check(ok, what):
        nonlocal fails, passes
        if ok:
            passes += 1
        else:
            fails += 1
            print('FAIL', what)

    for ctr, key, want in PHILOX_KAT:
        check(philox4x32_10(ctr, key) == want, 'philox kat %s' % (ctr,))
    # tl_exp port: exact at 0, close to math.exp elsewhere.
    check(tl_exp(0.0) == 1.0, 'tl_exp(0)')
    for x in (-745.0, -100.5, -1.0, -1e-300, 0.5, 1.0, 700.0):
        check(abs(tl_exp(x) - math.exp(x)) <= 4e-16 * math.exp(x) + 1e-323,
              'tl_exp(%r)' % x)

    def bits(vals):
        return [f32_bits(v) for v in vals]

    # All ties, uniform: q = 1/4 each, bounds .25 .5 .75 1; draw 0.5 ->
    # first bound > 0.5 is 0.75, the third in order (id 2).
    for expfn in (math.exp, tl_exp):
        r = sample(_profile(defined_ids=4), bits([1, 1, 1, 1]), [], 0,
                   0x80000000, expfn)
        check(r['id'] == 2 and r['q'] == [0.25] * 4, 'ties')
    if not quiet:
        print('%d passed, %d failed' % (passes, fails))
    return passes, fails


def main(argv):
    if argv[1:2] == ['--selftest']:
        return 0 if selftest()[1] == 0 else 1
    if argv[1:2] == ['draw'] and len(argv) == 7:
        seed, d, t, u, s = (int(a, 0) for a in argv[2:])
        w = draw_word(seed, d, t, u, s)
        print('%08x %r' % (w, draw_unit(w)))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
