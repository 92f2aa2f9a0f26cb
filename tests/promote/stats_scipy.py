#!/usr/bin/python3
"""The stochastic comparison's statistics (src/native/promote_stats.c)
checked against SciPy (Debian's python3-scipy) on fixed inputs.

    /usr/bin/python3 tests/promote/stats_scipy.py build/gcc/stats_tool

Each case is a JSON request to stats_tool (tests/diff/stats_tool.c); every
statistic, interval and p-value it returns is recomputed here with SciPy's
own implementations:

  disagreement   scipy.stats.binomtest(x, n, delta, 'greater'): its p-value
                 and proportion_ci(1 - alpha/m, 'exact') lower bound
  log-prob diff  scipy.stats.t (interval, p), ttest_1samp where min_logp = 0
  stop reasons   scipy.stats.chi2_contingency(correction=False)
  lengths        scipy.stats.ks_2samp(method='exact')
  TVD, max diff  NumPy sums
  pooled boot.   the same resampling replayed here (splitmix64, numpy
                 quantile 'linear'), and scipy.stats.bootstrap's percentile
                 interval over the same clusters (a different random stream)
  planned power  scipy.stats.binom
  special fns    scipy.special (betainc, betaincinv, gammaincc, gammaln)

Tolerances (relative unless said):
  1e-12  sums and means (the same arithmetic, another summation order)
  1e-11  the binomial tails (disagreement p-values, planned power) against
         their plain sum in 60-digit decimals (ours: ~1e-16 (n + 1) from
         the log-gammas and the continued fraction, n <= 2400 here)
  1e-9   anything through a special function: the C functions are accurate
         to about 1e-13 at these sizes (docs/promotion-stats.md) and
         SciPy's (Cephes/Boost) to about 1e-14
  4e-12  absolute, against binomtest's proportion_ci: SciPy finds that
         bound with brentq at xtol 2e-12 (it errs by 1.6e-11 relative on
         a bound of 9.4e-4 here); the same bound as beta.ppf (Boost's
         inverse incomplete beta) is checked at 1e-12 relative
  1e-8   against scipy.stats.t.ppf: SciPy 1.10's t quantile itself errs by
         up to 7e-10 (at df 4, q 0.999 it gives 7.173182214917768; the
         closed form gives 7.173182219782307, as does ours), so ours is
         also checked by the round trip t.sf(quantile) = tail at 1e-9
  exact  the replayed bootstrap (same draws, same order of operations:
         checked at 1e-12) and integer results (counts, dof, KS D)
  MC     scipy.stats.bootstrap draws other resamples: its percentile
         bounds agree with ours within Monte-Carlo error; allowed: 5% of
         the interval's width plus 4 standard errors of the bound
         (sd of a bootstrap quantile, sqrt(q (1-q) / B) / density, with the
         density estimated from the replayed resamples)
Prints one line per failure and `N passed, N failed` last; exits 1 on any
failure.
"""
import json
import math
import os
from decimal import Decimal, getcontext
import subprocess
import sys

import numpy as np
from scipy import special, stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import check, summary  # noqa: E402

TOOL = sys.argv[1] if len(sys.argv) > 1 else "build/gcc/stats_tool"
worst = {}  # tolerance -> (largest relative difference seen, check name)


def close(name, got, want, rel, abs_tol=0.0):
    if got is None or want is None or (isinstance(want, float) and math.isnan(want)):
        check(name, got is None and (want is None or math.isnan(want)), f"got {got!r}, want {want!r}")
        return
    ok = abs(got - want) <= max(rel * abs(want), abs_tol)
    if want != 0 and abs(want) > abs_tol:
        r = abs(got - want) / abs(want)
        if r > worst.get(rel, (0.0, ""))[0]:
            worst[rel] = (r, name)
    check(name, ok, f"got {got!r}, want {want!r}, rel {abs(got - want) / abs(want) if want else abs(got)}")


def run(doc):
    p = subprocess.run([TOOL], input=json.dumps(doc), capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"stats_tool failed ({p.returncode}): {p.stderr}")
    return json.loads(p.stdout)


# ---- the binomial tail in 60-digit decimal arithmetic ----

def binom_tail_exact(k, n, p):
    """P(X >= k), X ~ Binomial(n, p) for the double p, as the plain sum
    in 60-digit decimals (no special function at all)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    getcontext().prec = 60
    x = Decimal(p)  # the double's exact value
    if x == 0:
        return 0.0
    q = 1 - x
    if q == 0:
        return 1.0
    term = Decimal(math.comb(n, k)) * x ** k * q ** (n - k)
    total = Decimal(0)
    for j in range(k, n + 1):
        total += term
        if j < n:
            term = term * (n - j) / (j + 1) * x / q
    return float(total)


# ---- splitmix64 and the cluster bootstrap, replayed ----

M64 = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def replay_bootstrap(sums, counts, resamples, seed):
    state = seed
    out = []
    for _ in range(resamples):
        s = 0.0
        c = 0.0
        for _ in range(len(sums)):
            state, z = splitmix64(state)
            i = z % len(sums)
            s += sums[i]
            c += float(counts[i])
        out.append(s / c)
    return np.sort(np.array(out))


# ---- one comparison, recomputed ----

def seq_sum(xs):
    s = 0.0
    for x in xs:
        s += x
    return s


def check_result(tag, r, at, design, pa_list, pb_list, prompts, pooled):
    delta = design["min_disagree"]
    # Exact quantities: one prompt's, or the largest over the prompts.
    tvds = [0.5 * np.abs(np.array(pa) - np.array(pb)).sum() for pa, pb in zip(pa_list, pb_list)]
    diffs = [np.abs(np.array(pa) - np.array(pb)) for pa, pb in zip(pa_list, pb_list)]
    close(f"{tag}.tvd", r["tvd"]["estimate"], max(tvds), 1e-12, 1e-15)
    best = max(range(len(diffs)), key=lambda i: diffs[i].max())
    close(f"{tag}.max_diff", r["max_diff"]["estimate"], diffs[best].max(), 1e-12, 1e-15)
    check(f"{tag}.max_diff_token", r["max_diff_token"] == int(np.argmax(diffs[best])),
          f"{r['max_diff_token']} vs {int(np.argmax(diffs[best]))}")
    check(f"{tag}.tvd.alarm", r["tvd"]["alarm"] == (max(tvds) > design["min_tvd"]))

    differ = np.concatenate([p["differ"] for p in prompts])
    n, x = len(differ), int(differ.sum())
    bt = stats.binomtest(x, n, delta, alternative="greater")
    lo = bt.proportion_ci(confidence_level=1 - at, method="exact").low
    check(f"{tag}.disagree_count", r["disagree_count"] == x)
    close(f"{tag}.disagree.estimate", r["disagree"]["estimate"], x / n, 1e-15)
    close(f"{tag}.disagree.p", r["disagree"]["p"], bt.pvalue, 1e-9)
    close(f"{tag}.disagree.p (exact sum)", r["disagree"]["p"], binom_tail_exact(x, n, delta),
          1e-11, 1e-300)
    # binomtest finds the bound with brentq (xtol 2e-12, absolute): within
    # that of it, and at 1e-12 of the Clopper-Pearson bound as the beta
    # quantile (the definition; Boost's ibeta_inv under beta.ppf).
    close(f"{tag}.disagree.lo", r["disagree"]["lo"], lo, 1e-9, 4e-12)
    cp = float(stats.beta.ppf(at, x, n - x + 1)) if x > 0 else 0.0
    close(f"{tag}.disagree.lo (beta quantile)", r["disagree"]["lo"], cp, 1e-12, 1e-300)
    check(f"{tag}.disagree.alarm", r["disagree"]["alarm"] == (lo > delta) == (bt.pvalue < at),
          f"alarm {r['disagree']['alarm']}, lo {lo}, p {bt.pvalue}")

    table = np.zeros((2, 16), dtype=np.int64)
    for p in prompts:
        for a, b in zip(p["stop_a"], p["stop_b"]):
            table[0, a] += 1
            table[1, b] += 1
    table = table[:, table.sum(axis=0) > 0]
    c = stats.chi2_contingency(table, correction=False)
    close(f"{tag}.stop.statistic", r["stop"]["estimate"], float(c.statistic), 1e-12, 1e-15)
    close(f"{tag}.stop.p", r["stop"]["p"], float(c.pvalue), 1e-9)
    check(f"{tag}.stop.dof", r["stop_dof"] == int(c.dof), f"{r['stop_dof']} vs {c.dof}")
    check(f"{tag}.stop.alarm", r["stop"]["alarm"] == (c.pvalue < at))

    la = np.concatenate([p["len_a"] for p in prompts])
    lb = np.concatenate([p["len_b"] for p in prompts])
    ks = stats.ks_2samp(la, lb, method="exact")
    close(f"{tag}.lengths.D", r["lengths"]["estimate"], float(ks.statistic), 1e-15, 1e-15)
    close(f"{tag}.lengths.p", r["lengths"]["p"], float(ks.pvalue), 1e-9)
    check(f"{tag}.lengths.alarm", r["lengths"]["alarm"] == (ks.pvalue < at))

    mlp = design["min_logp"]
    lr = r["logp_diff"]
    if not pooled:
        p = prompts[0]
        d = [a - b for a, b in zip(p["lp_a"], p["lp_b"])]
        k = len(d)
        mean = seq_sum(d) / k
        close(f"{tag}.logp.mean", lr["estimate"], mean, 1e-12, 1e-15)
        if k < 2:
            check(f"{tag}.logp.n1", lr["lo"] is None and lr["p"] is None and not lr["alarm"])
            return
        se = float(np.std(d, ddof=1)) / math.sqrt(k)
        if se == 0:
            check(f"{tag}.logp.se0", lr["lo"] == lr["hi"] == mean and
                  lr["p"] == (0.0 if abs(mean) > mlp else 1.0), f"{lr}")
            return
        tq = stats.t.ppf(1 - at / 2, k - 1)
        close(f"{tag}.logp.lo", lr["lo"], mean - tq * se, 1e-8, 1e-12)
        close(f"{tag}.logp.hi", lr["hi"], mean + tq * se, 1e-8, 1e-12)
        ours_q = (lr["hi"] - mean) / se
        close(f"{tag}.logp.quantile_round_trip", float(stats.t.sf(ours_q, k - 1)), at / 2, 1e-9)
        want_p = min(1.0, 2 * float(stats.t.sf((abs(mean) - mlp) / se, k - 1)))
        close(f"{tag}.logp.p", lr["p"], want_p, 1e-9)
        if mlp == 0:
            close(f"{tag}.logp.ttest_1samp", lr["p"], float(stats.ttest_1samp(d, 0).pvalue), 1e-9)
        check(f"{tag}.logp.alarm", lr["alarm"] == (lr["lo"] > mlp or lr["hi"] < -mlp))
        return
    sums = [seq_sum([a - b for a, b in zip(p["lp_a"], p["lp_b"])]) for p in prompts]
    counts = [len(p["lp_a"]) for p in prompts]
    close(f"{tag}.logp.mean", lr["estimate"], seq_sum(sums) / sum(counts), 1e-12, 1e-15)
    B = design["bootstrap_resamples"]
    boot = replay_bootstrap(sums, counts, B, design["bootstrap_seed"])
    qlo, qhi = np.quantile(boot, [at / 2, 1 - at / 2], method="linear")
    close(f"{tag}.logp.boot_lo (replayed)", lr["lo"], float(qlo), 1e-12, 1e-15)
    close(f"{tag}.logp.boot_hi (replayed)", lr["hi"], float(qhi), 1e-12, 1e-15)
    check(f"{tag}.logp.alarm", lr["alarm"] == (lr["lo"] > mlp or lr["hi"] < -mlp))
    # SciPy's own percentile bootstrap over the same clusters.
    S, N = np.array(sums), np.array(counts, dtype=float)
    res = stats.bootstrap((S, N), lambda s, c, axis=-1: s.sum(axis=axis) / c.sum(axis=axis),
                          paired=True, vectorized=True, method="percentile",
                          confidence_level=1 - at, n_resamples=B,
                          random_state=np.random.default_rng(2026))
    width = float(qhi - qlo)
    for side, ours, theirs, q in (("lo", lr["lo"], res.confidence_interval.low, at / 2),
                                  ("hi", lr["hi"], res.confidence_interval.high, 1 - at / 2)):
        # Density at the quantile from the replayed resamples' spacing.
        j = int(q * (B - 1))
        span = max(1, B // 100)
        a_, b_ = max(0, j - span), min(B - 1, j + span)
        dens = (b_ - a_) / B / max(boot[b_] - boot[a_], 1e-300)
        se_q = math.sqrt(q * (1 - q) / B) / dens
        tol = 0.05 * width + 4 * se_q
        check(f"{tag}.logp.boot_{side} vs scipy.stats.bootstrap",
              abs(ours - theirs) <= tol, f"ours {ours}, scipy {theirs}, allowed {tol}")


def compare_case(name, design, prompts):
    doc = {"op": "compare", "design": design, "prompts": prompts}
    out = run(doc)
    if "error" in out:
        check(f"{name}: ran", False, out["message"])
        return out
    P = len(prompts)
    m = 4 * P + (4 if P >= 2 else 0)
    alpha = 1 - design["confidence"]
    check(f"{name}.m", out["m"] == m, f"{out['m']} vs {m}")
    close(f"{name}.alpha_test", out["alpha_test"], alpha / m, 1e-15)
    at = out["alpha_test"]
    for i, p in enumerate(prompts):
        check_result(f"{name}.prompts[{i}]", out["prompts"][i], at, design, [p["pa"]], [p["pb"]],
                     [p], False)
    if P >= 2:
        check_result(f"{name}.pooled", out["pooled"], at, design, [p["pa"] for p in prompts],
                     [p["pb"] for p in prompts], prompts, True)
    else:
        check(f"{name}.pooled", out["pooled"] is None)
    alarms = [r[k]["alarm"] for r in out["prompts"] + ([out["pooled"]] if P >= 2 else [])
              for k in ("tvd", "max_diff", "disagree", "logp_diff", "stop", "lengths")]
    check(f"{name}.alarm", out["alarm"] == any(alarms) and (out["first_alarm"] != "") == any(alarms))
    return out


def softmax(z):
    e = np.exp(z - z.max())
    return (e / e.sum()).tolist()


def prompt(rng, n, vocab=50, disagree=0.1, shift=0.0, noise=0.3, stop_b=(0.6, 0.3, 0.1),
           len_scale_b=1.0, tvd_noise=0.02):
    z = rng.normal(0, 2, vocab)
    pa = softmax(z)
    pb = softmax(z + rng.normal(0, tvd_noise, vocab))
    lp_a = (-rng.gamma(4, 5, n)).tolist()
    lp_b = [a - shift - rng.normal(0, noise) for a in lp_a]
    return {
        "pa": pa, "pb": pb,
        "differ": (rng.random(n) < disagree).astype(int).tolist(),
        "lp_a": lp_a, "lp_b": lp_b,
        "len_a": rng.geometric(0.05, n).tolist(),
        "len_b": np.maximum(1, (rng.geometric(0.05, n) * len_scale_b).astype(int)).tolist(),
        "stop_a": rng.choice(3, n, p=[0.6, 0.3, 0.1]).tolist(),
        "stop_b": rng.choice(3, n, p=list(stop_b)).tolist(),
    }


def main():
    rng = np.random.default_rng(20261204)
    design = {"confidence": 0.95, "min_tvd": 0.05, "min_disagree": 0.05, "min_logp": 0.1,
              "bootstrap_resamples": 4000, "bootstrap_seed": 12345}

    # Three ordinary prompts (no planted difference).
    compare_case("null3", design, [prompt(rng, 64) for _ in range(3)])
    # Planted differences: disagreement, shift, stop mix, lengths, TVD.
    out = compare_case("planted", design, [
        prompt(rng, 200, disagree=0.3),
        prompt(rng, 200, shift=0.5),
        prompt(rng, 200, stop_b=(0.2, 0.3, 0.5)),
        prompt(rng, 200, len_scale_b=3.0),
        prompt(rng, 200, tvd_noise=1.0),
    ])
    if "prompts" in out:
        got = [[r[k]["alarm"] for k in ("disagree", "logp_diff", "stop", "lengths", "tvd")]
               for r in out["prompts"]]
        check("planted: each planted difference alarms", all(got[i][i] for i in range(5)), f"{got}")
    # Many prompts, larger pooled sample, min_logp 0 (the plain t-test).
    compare_case("pooled12", dict(design, min_logp=0.0, bootstrap_resamples=2000, bootstrap_seed=7),
                 [prompt(rng, 48, shift=0.05) for _ in range(12)])

    # Edge cases.
    base = prompt(rng, 32)
    none = dict(base, differ=[0] * 32)
    every = dict(base, differ=[1] * 32)
    ties = dict(base, len_a=[5, 5, 6, 6, 7] * 6 + [5, 9], len_b=[5, 6, 6, 6, 7] * 6 + [9, 9])
    same_len = dict(base, len_a=[12] * 32, len_b=[12] * 32)
    one_cat = dict(base, stop_a=[1] * 32, stop_b=[1] * 32)
    two_cat = dict(base, stop_a=[0] * 30 + [4, 4], stop_b=[0] * 32)  # one side has a code the other lacks
    same_lp = dict(base, lp_b=list(base["lp_a"]))
    compare_case("edge.zero_disagreements", design, [none])
    compare_case("edge.all_disagree", design, [every])
    compare_case("edge.length_ties", design, [ties])
    compare_case("edge.equal_lengths", design, [same_len])
    compare_case("edge.single_stop_category", design, [one_cat])
    compare_case("edge.sparse_stop_categories", design, [two_cat])
    compare_case("edge.identical_logprobs", design, [same_lp])
    one = {k: (v[:1] if k not in ("pa", "pb") else v) for k, v in base.items()}
    compare_case("edge.one_seed", design, [one])
    compare_case("edge.delta_zero", dict(design, min_disagree=0.0), [base, every])
    compare_case("edge.identical_pair", design, [dict(same_lp, pb=list(base["pa"]), differ=[0] * 32,
                                                      len_b=list(base["len_a"]),
                                                      stop_b=list(base["stop_a"]))] * 2)

    # Refusals name the field.
    bad = dict(base, stop_b=[16] + base["stop_b"][1:])
    out = run({"op": "compare", "design": design, "prompts": [bad]})
    check("refuses a stop code out of range",
          out.get("error") == "invalid_argument" and "prompts[0].stop_b[0]" in out.get("message", ""),
          f"{out}")
    out = run({"op": "compare", "design": dict(design, confidence=1.5), "prompts": [base]})
    check("refuses confidence 1.5", out.get("error") == "invalid_argument" and
          "design.confidence" in out.get("message", ""), f"{out}")

    # Planned power: the critical count and the exact binomial sum.
    cases = []
    for n in (8, 16, 64, 200, 1000):
        for delta in (0.0, 0.01, 0.05, 0.2):
            for at in (0.05, 0.05 / 16, 1e-4):
                for rate in (delta, delta + 0.05, delta + 0.15):
                    cases.append({"n": n, "delta": delta, "alpha_test": at, "rate": rate})
    res = run({"op": "power", "cases": cases})["results"]
    for c, r in zip(cases, res):
        n, delta, at, rate = c["n"], c["delta"], c["alpha_test"], c["rate"]
        crit = next((k for k in range(n + 1) if stats.binom.sf(k - 1, n, delta) < at), n + 1)
        tag = f"power n={n} delta={delta} alpha={at:.3g} rate={rate:.3g}"
        check(f"{tag}: critical", r["critical"] == crit, f"{r['critical']} vs {crit}")
        close(f"{tag}: power", r["power"], float(stats.binom.sf(crit - 1, n, rate)), 1e-9, 1e-300)
        close(f"{tag}: power (exact sum)", r["power"], binom_tail_exact(crit, n, rate), 1e-11,
              1e-300)

    # Special functions over wider ranges than the comparisons reach.
    calls, want = [], []
    for a, b, x in [(1, 1, 0.3), (5, 96, 0.01), (1, 10000, 1e-7), (3000, 7000, 0.3),
                    (0.5, 0.5, 0.2), (50, 2, 0.999), (1, 64, 0.001), (20, 30, 0.5),
                    (0.3, 4, 0.9), (150, 150, 0.45)]:
        calls.append(["betainc", a, b, x])
        want.append(special.betainc(a, b, x))
    for a, b, y in [(1, 64, 1e-4), (10, 55, 0.3), (64, 1, 1e-5), (2, 10000, 1e-6),
                    (32, 0.5, 1e-5), (0.5, 30, 0.9999), (500, 500, 0.01)]:
        calls.append(["betainc_inv", a, b, y])
        want.append(special.betaincinv(a, b, y))
    for a, x in [(0.5, 3), (2.5, 1), (10, 30), (100, 50), (3, 0.01), (7.5, 40)]:
        calls.append(["gammaq", a, x, 0])
        want.append(special.gammaincc(a, x))
    for x, df in [(3.84, 1), (12.0, 5), (100.0, 60), (0.2, 2)]:
        calls.append(["chi2_sf", x, df, 0])
        want.append(stats.chi2.sf(x, df))
    # t near 0 with large df (x = df/(df+t^2) rounds next to 1) and a deep
    # tail with t^2 < df (the tail is not a difference of two near-halves).
    for t, df in [(2.0, 5), (-1.0, 3), (10.0, 63), (0.1, 1), (4.5, 200),
                  (2.4e-4, 2649), (-1e-6, 100), (14.95, 365), (35.0, 3143)]:
        calls.append(["t_sf", t, df, 0])
        want.append(stats.t.sf(t, df))
    for x in (0.5, 3.0, 7.25, 100.0, 1e4):
        calls.append(["lgamma", x, 0, 0])
        want.append(special.gammaln(x))
    for n, h in [(10, 3), (64, 15), (500, 60), (2000, 100)]:
        calls.append(["ks2_sf_equal", n, h, 0])
        # The same probability through ks_2samp: D = h/n from two samples.
        a = np.arange(n, dtype=float)
        b = a + h - 0.5
        want.append(stats.ks_2samp(a, b, method="exact").pvalue)
    res = run({"op": "special", "calls": calls})["results"]
    for c, r, w in zip(calls, res, want):
        close(f"special {c[0]}{tuple(c[1:])}", r, float(w), 1e-9, 1e-300)

    for tol in sorted(worst):
        r, name = worst[tol]
        print(f"note: tolerance {tol:g}: largest relative difference {r:.2g} ({name})")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
