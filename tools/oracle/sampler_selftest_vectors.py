#!/usr/bin/python3
"""The sampler's known answers for the lanes' start-up self-test (docs/web.md,
Self-tests: `sampler`) and the native sampler_selftest unit test.

Every expected value comes from tools/oracle/sampler_ref.py (the independent
reference of docs/sampler.md) with its port of tl_exp, so the probabilities'
bits are the C side's; the chosen ids and survivors are also checked against
the math.exp oracle, and each decision must lie further than 1e-12 from its
threshold, so no case hangs on an exp's last bit. Each case covers one step
of the pipeline, and the generator demands that it matters: the case's
outcome changes when that step is switched off (or, for the position cases,
when the Philox counter's words are laid out differently). Standard library.

    /usr/bin/python3 tools/oracle/sampler_selftest_vectors.py
        write src/core/sample/sampler_vectors.h (make sampler-selftest-vectors)
    /usr/bin/python3 tools/oracle/sampler_selftest_vectors.py --check
        exit 1 if the committed file differs
"""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import sampler_ref as ref  # noqa: E402
from quant_ref import c_array, write_or_check  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(HERE)),
                   'src', 'core', 'sample', 'sampler_vectors.h')
NEAR = 1e-12
SEED0 = 0x5EED0000  # where the search for a case's seed starts


def profile(n, **kw):
    p = {'temperature': 1.0, 'top_k': 0, 'top_p': 1.0, 'min_p': 0.0,
         'repeat_penalty': 1.0, 'repeat_window': 0, 'min_new': 0, 'eos': [],
         'ban': [], 'defined_ids': n}
    p.update(kw)
    return p


def run(case, exp=ref.tl_exp, pos=None):
    seed, draw, token, turn, stream = pos or case['pos']
    word = ref.draw_word(seed, draw, token, turn, stream)
    bits = [ref.f32_bits(v) for v in case['logits']]
    return ref.sample(case['p'], bits, case['history'], case['n_generated'],
                      word, exp), word


def with_profile(case, **kw):
    c = dict(case)
    c['p'] = dict(case['p'], **kw)
    return c


# Each case: a name, logits, profile, history, tokens generated, a draw
# position (seed searched from SEED0 when None), and `matters`: given the
# case and the oracle's result, whether the case's step decided it.
def cases():
    logits8 = [2.5, 1.75, 3.0, -0.5, 2.25, 0.0, 1.0, 2.75]
    out = [
        # S-5/S-6: greedy, three equal maxima: the lowest id wins.
        dict(name='greedy_tie_lowest_id', logits=[1.0, 3.0, -2.0, 3.0, 0.5, 3.0],
             p=profile(6, temperature=0.0), history=[], n_generated=0,
             pos=(1, 0, 0, 0, 0), matters=lambda c, r: r['id'] == 1),
        # S-6: -0 == +0 under T = 1 with every other logit far below: the
        # id decides among the zeros, the draw among them.
        dict(name='signed_zero_tie', logits=[-20.0, -0.0, 0.0, -0.0, -30.0],
             p=profile(5), history=[], n_generated=0, pos=None,
             matters=lambda c, r: r['survivors'][:3] == [1, 2, 3] and r['id'] != 1),
        # S-5..S-7: temperature and top-k.
        dict(name='temperature_top_k', logits=logits8,
             p=profile(8, temperature=0.7, top_k=3), history=[], n_generated=0,
             pos=None, matters=lambda c, r: differs(c, r, top_k=0)),
        # S-8: top-p keeps the candidate whose probability crosses it, and
        # the draw picks that one.
        dict(name='top_p_crossing', logits=logits8,
             p=profile(8, temperature=1.3, top_p=0.6), history=[], n_generated=0,
             pos=None, matters=lambda c, r: (r['id'] == r['survivors'][-1] and
                                             len(r['survivors']) < 8 and
                                             differs(c, r, top_p=1.0))),
        # S-9: min-p removes candidates the draw would otherwise pick.
        dict(name='min_p', logits=logits8,
             p=profile(8, temperature=2.0, min_p=0.55), history=[], n_generated=0,
             pos=None, matters=lambda c, r: differs(c, r, min_p=0.0)),
        # S-4: penalty over the last 3 ids of the history only (id 2, the
        # largest logit, occurs before the window): off, or with the whole
        # history as the window, the outcome differs.
        dict(name='repeat_penalty_window', logits=logits8,
             p=profile(8, temperature=0.8, repeat_penalty=1.8, repeat_window=3),
             history=[2, 7, 7, 0, 4], n_generated=5, pos=None,
             matters=lambda c, r: (differs(c, r, repeat_penalty=1.0) and
                                   differs(c, r, repeat_window=5))),
        # S-2/S-3/S-12: bans, padded rows and EOS before min_new leave one
        # candidate; the draw is still taken.
        dict(name='single_candidate', logits=[9.0, 1.0, 8.0, 7.0, 0.5, 6.0],
             p=profile(6, min_new=2, eos=[0], ban=[2, 3, 4], defined_ids=5),
             history=[], n_generated=1, pos=(0x0123456789ABCDEF, 0, 1, 0, 0),
             matters=lambda c, r: r['survivors'] == [1]),
    ]
    # S-11 positions: one profile, the draw at several (seed, token, turn,
    # stream); a seed with both key words set. Each must change its outcome
    # when two of the counter's words are swapped, or the key's halves.
    base = dict(logits=[0.5, 0.25, 0.75, 0.0, 0.6, 0.4, 0.1, 0.7],
                p=profile(8, temperature=1.0), history=[], n_generated=0)
    for name, pos in (('position_token_3', (None, 0, 3, 0, 0)),
                      ('position_turn_2', (None, 0, 0, 2, 0)),
                      ('position_stream_1', (None, 0, 5, 1, 1)),
                      ('position_seed_64bit', (0xFEDCBA9800000000, 0, 0, 0, 0))):
        out.append(dict(base, name=name, pos=pos, matters=moved_by_layout))
    return out


def differs(case, r, **off):
    """The oracle's id with those fields changed differs from r's."""
    r2, _ = run(with_profile(case, **off))
    return r2['id'] != r['id']


def moved_by_layout(case, r):
    seed, draw, token, turn, stream = case['pos']
    swapped_seed = ((seed & ref.MASK32) << 32) | (seed >> 32)
    other = {(seed, token, draw, turn, stream), (seed, draw, turn, token, stream),
             (seed, draw, token, stream, turn), (swapped_seed, draw, token, turn, stream)}
    other.discard(case['pos'])
    return all(run(case, pos=pos)[0]['id'] != r['id'] for pos in other)


def settle(case):
    """Fills in the seed (the first from SEED0 for which the case's step
    matters, decisions clear of their thresholds) and the oracle's answer."""
    seed = case['pos'][0] if case['pos'] else None
    for s in ([seed] if seed is not None else range(SEED0, SEED0 + 100000)):
        pos = (s,) + (case['pos'][1:] if case['pos'] else (0, 0, 0, 0))
        c = dict(case, pos=pos)
        r, word = run(c)
        if isinstance(r, tuple):
            raise SystemExit('%s: the oracle refused the case: %r' % (c['name'], r))
        m, _ = run(c, exp=math.exp)
        if (ref.margins(r) > NEAR and m['id'] == r['id'] and
                m['survivors'] == r['survivors'] and c['matters'](c, r)):
            return c, r, word
    raise SystemExit('%s: no seed makes the case decide its step' % case['name'])


def render():
    out = ['/* Generated by tools/oracle/sampler_selftest_vectors.py from',
           ' * tools/oracle/sampler_ref.py (the reference of docs/sampler.md, with its',
           ' * tl_exp port): do not edit. Regenerate: make sampler-selftest-vectors. */',
           '#ifndef TL_SAMPLER_VECTORS_H', '#define TL_SAMPLER_VECTORS_H', '',
           '#include <stddef.h>', '#include <stdint.h>', '',
           '/* One step: logits (f32 bits), the profile (binary64 fields as bits),',
           ' * history, tokens generated, draw position; the oracle\'s draw word,',
           ' * candidate count, chosen id and survivors with the bits of their',
           ' * final probabilities and bounds (docs/sampler.md S-13). */',
           'typedef struct tl_sampler_vector {',
           '  const char *name;',
           '  size_t n;',
           '  const uint32_t *logits;',
           '  uint64_t temperature, top_p, min_p, repeat_penalty;',
           '  uint32_t top_k, repeat_window, min_new, defined_ids;',
           '  const uint32_t *eos, *ban, *history;',
           '  size_t n_eos, n_ban, n_history;',
           '  uint32_t n_generated;',
           '  uint64_t seed;',
           '  uint32_t draw, token, turn, stream;',
           '  uint32_t draw_word, id;',
           '  size_t n_candidates, n_survivors;',
           '  const uint32_t *survivors;',
           '  const uint64_t *q, *bounds;',
           '} tl_sampler_vector;', '']
    rows = []
    written = {}  # (type, values) -> the array already written with them
    for i, case in enumerate(cases()):
        c, r, word = settle(case)
        p = c['p']
        pre = 'tl_sv%d_' % i

        def arr(ctype, suffix, vals, fmt, per_line):
            if not vals:
                return 'NULL'
            key = (ctype, tuple(vals))
            if key not in written:
                written[key] = pre + suffix
                out.append(c_array(ctype, pre + suffix, vals, per_line, fmt).rstrip('\n'))
            return written[key]

        out.append('/* %s */' % c['name'])
        logits = arr('uint32_t', 'logits', [ref.f32_bits(v) for v in c['logits']],
                     '0x%08xu', 6)
        eos = arr('uint32_t', 'eos', p['eos'], '%du', 12)
        ban = arr('uint32_t', 'ban', p['ban'], '%du', 12)
        hist = arr('uint32_t', 'history', c['history'], '%du', 12)
        surv = arr('uint32_t', 'survivors', r['survivors'], '%du', 12)
        q = arr('uint64_t', 'q', [ref.f64_bits(v) for v in r['q']], '0x%016xu', 3)
        bounds = arr('uint64_t', 'bounds', [ref.f64_bits(v) for v in r['bounds']],
                     '0x%016xu', 3)
        f = [ref.f64_bits(p[k]) for k in ('temperature', 'top_p', 'min_p', 'repeat_penalty')]
        seed, draw, token, turn, stream = c['pos']
        rows.append('    {"%s", %d, %s,\n     0x%016xu, 0x%016xu, 0x%016xu, 0x%016xu,\n'
                    '     %du, %du, %du, %du,\n     %s, %s, %s, %d, %d, %d, %du,\n'
                    '     0x%016xu, %du, %du, %du, %du,\n     0x%08xu, %du, %d, %d, %s, %s, %s},'
                    % (c['name'], len(c['logits']), logits, f[0], f[1], f[2], f[3],
                       p['top_k'], p['repeat_window'], p['min_new'], p['defined_ids'],
                       eos, ban, hist, len(p['eos']), len(p['ban']), len(c['history']),
                       c['n_generated'], seed, draw, token, turn, stream, word, r['id'],
                       r['n_candidates'], len(r['survivors']), surv, q, bounds))
    out += ['', 'static const tl_sampler_vector tl_sampler_vectors[] = {'] + rows + ['};',
            '#define TL_SAMPLER_VECTOR_COUNT (sizeof tl_sampler_vectors / sizeof tl_sampler_vectors[0])',
            '', '#endif', '']
    return '\n'.join(out)


def main():
    return write_or_check(OUT, render(), 'make sampler-selftest-vectors')


if __name__ == '__main__':
    sys.exit(main())
