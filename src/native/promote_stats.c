/* The stochastic comparison's statistics (promote_stats.h): special
 * functions, the four tests and the exact quantities, the Bonferroni
 * family and the planned power. */
#include "promote_stats.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Special functions ---- */

/* Lanczos (g = 7, n = 9; the coefficients of Godfrey's table as printed in
 * Numerical Recipes 3rd ed. §6.1 / Wikipedia's "Lanczos approximation"):
 * relative error of Gamma about 1e-15 for x >= 0.5; below, the recurrence
 * lgamma(x) = lgamma(x + 1) - log(x) (no reflection: x > 0 only). libm's
 * lgamma writes the global signgam, a data race for threaded callers. */
double tl_stats_lgamma(double x) {
  static const double c[9] = {
      0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
      771.32342877765313,   -176.61502916214059,   12.507343278686905,
      -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
  if (!(x > 0)) return NAN;
  if (x < 0.5) return tl_stats_lgamma(x + 1) - log(x);
  x -= 1;
  double a = c[0];
  double t = x + 7.5;
  for (int i = 1; i < 9; i++) a += c[i] / (x + i);
  return 0.91893853320467274178 /* log(2 pi) / 2 */ + (x + 0.5) * log(t) - t +
         log(a);
}

/* lgamma(x) - Stirling's leading terms, for x >= 10: the asymptotic
 * series sum B_2k / (2k (2k-1) x^(2k-1)) to x^-13 (the next term is below
 * 1e-16 of the sum there). */
static double lgamma_corr(double x) {
  double r = 1 / x, r2 = r * r;
  return r * (1.0 / 12 +
              r2 * (-1.0 / 360 +
                    r2 * (1.0 / 1260 +
                          r2 * (-1.0 / 1680 +
                                r2 * (1.0 / 1188 +
                                      r2 * (-691.0 / 360360 + r2 / 156))))));
}

/* log B(a, b). For large arguments the three log-gammas are large and
 * nearly cancel; there Stirling's form keeps only the small corrections
 * apart (the arrangement of R's lbeta, nmath/lbeta.c). */
static double lbeta(double a, double b) {
  const double ln_sqrt_2pi = 0.91893853320467274178;
  double p = a < b ? a : b, q = a < b ? b : a;
  if (p >= 10) {
    double corr = lgamma_corr(p) + lgamma_corr(q) - lgamma_corr(p + q);
    return -0.5 * log(q) + ln_sqrt_2pi + corr + (p - 0.5) * log(p / (p + q)) +
           q * log1p(-p / (p + q));
  }
  if (q >= 10) {
    double corr = lgamma_corr(q) - lgamma_corr(p + q);
    return tl_stats_lgamma(p) + corr + p - p * log(p + q) +
           (q - 0.5) * log1p(-p / (p + q));
  }
  return tl_stats_lgamma(a) + tl_stats_lgamma(b) - tl_stats_lgamma(a + b);
}

/* The continued fraction of I_x(a, b) (modified Lentz; Numerical Recipes
 * §6.4 betacf), converging fast for x < (a + 1) / (a + b + 2). */
static double betacf(double a, double b, double x) {
  const double tiny = 1e-300, eps = 1e-16;
  double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 100000; m++) {
    int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) <= eps) break;
  }
  return h;
}

/* I_x(a, b) given x and y = 1 - x both: a caller that knows 1 - x to full
 * precision (the t distribution's t^2 / (df + t^2)) passes it, so nothing
 * here forms 1 - x where x rounds next to 1. */
static double betainc_xy(double a, double b, double x, double y) {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  double lx = x < 0.5 ? log(x) : log1p(-y), ly = y < 0.5 ? log(y) : log1p(-x);
  double lf = a * lx + b * ly - lbeta(a, b);
  if (x < (a + 1) / (a + b + 2)) return exp(lf) * betacf(a, b, x) / a;
  return 1 - exp(lf) * betacf(b, a, y) / b;
}

double tl_stats_betainc(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || isnan(x)) return NAN;
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  return betainc_xy(a, b, x, 1 - x);
}

/* The starting point of Numerical Recipes' invbetai (§6.14). */
static double betainc_inv_guess(double a, double b, double y) {
  if (a >= 1 && b >= 1) {
    double pp = y < 0.5 ? y : 1 - y;
    double t = sqrt(-2 * log(pp));
    double x = (2.30753 + t * 0.27061) / (1 + t * (0.99229 + t * 0.04481)) - t;
    if (y < 0.5) x = -x;
    double al = (x * x - 3) / 6;
    double h = 2 / (1 / (2 * a - 1) + 1 / (2 * b - 1));
    double w = x * sqrt(al + h) / h - (1 / (2 * b - 1) - 1 / (2 * a - 1)) *
                                          (al + 5.0 / 6 - 2 / (3 * h));
    return a / (a + b * exp(2 * w));
  }
  double lna = log(a / (a + b)), lnb = log(b / (a + b));
  double t = exp(a * lna) / a, u = exp(b * lnb) / b, w = t + u;
  if (y < t / w) return pow(a * w * y, 1 / a);
  return 1 - pow(b * w * (1 - y), 1 / b);
}

/* Newton's method on I_x(a, b) - y inside a shrinking bracket; a step that
 * leaves the bracket bisects it instead (geometrically once the bracket
 * is away from 0, so tiny roots are reached in few steps). Stops when a
 * step moves x by less than 4 ulp or the bracket is that narrow. */
double tl_stats_betainc_inv(double a, double b, double y) {
  if (!(a > 0) || !(b > 0) || !(y >= 0 && y <= 1)) return NAN;
  if (y == 0) return 0;
  if (y == 1) return 1;
  double lo = 0, hi = 1, lb = lbeta(a, b);
  double x = betainc_inv_guess(a, b, y);
  if (!(x > 0 && x < 1)) x = 0.5;
  for (int it = 0; it < 1000; it++) {
    double f = tl_stats_betainc(a, b, x) - y;
    if (f == 0) return x;
    if (f < 0)
      lo = x;
    else
      hi = x;
    double dens = exp((a - 1) * log(x) + (b - 1) * log1p(-x) - lb);
    double nx = x - f / dens;
    if (!(dens > 0) || !isfinite(nx) || !(nx > lo && nx < hi)) {
      nx = lo > 0 && hi / lo > 4 ? sqrt(lo * hi) : 0.5 * (lo + hi);
      if (lo == 0) nx = 0.5 * hi;
    }
    if (fabs(nx - x) <= 4 * DBL_EPSILON * nx || hi - lo <= 4 * DBL_EPSILON * hi)
      return nx;
    x = nx;
  }
  return x;
}

/* Q(a, x) by the series of P for x < a + 1, else the continued fraction
 * of Q (Numerical Recipes §6.2 gser / gcf, modified Lentz). */
double tl_stats_gammaq(double a, double x) {
  if (!(a > 0) || isnan(x)) return NAN;
  if (x <= 0) return 1;
  double lpre = -x + a * log(x) - tl_stats_lgamma(a);
  if (x < a + 1) {
    double ap = a, sum = 1 / a, del = sum;
    for (int n = 0; n < 100000; n++) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (fabs(del) < fabs(sum) * 1e-17) break;
    }
    return 1 - sum * exp(lpre);
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) <= 1e-16) break;
  }
  return exp(lpre) * h;
}

/* P(T > t) = I_x(df/2, 1/2) / 2 for t >= 0 with x = df / (df + t^2),
 * and 1 - x = t^2 / (df + t^2) formed directly (it is all that is left of
 * the tail where x rounds next to 1, t near 0). */
double tl_stats_t_sf(double t, double df) {
  if (isnan(t) || !(df > 0)) return NAN;
  if (isinf(t)) return t > 0 ? 0 : 1;
  double t2 = t * t;
  double half = 0.5 * betainc_xy(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2));
  return t >= 0 ? half : 1 - half;
}

double tl_stats_t_quantile(double q, double df) {
  if (!(q > 0 && q < 1) || !(df > 0)) return NAN;
  if (q == 0.5) return 0;
  double tail = q > 0.5 ? 1 - q : q;
  double x = tl_stats_betainc_inv(0.5 * df, 0.5, 2 * tail);
  double t = sqrt(df * (1 - x) / x);
  return q > 0.5 ? t : -t;
}

double tl_stats_chi2_sf(double x, double df) {
  if (!(df > 0) || isnan(x)) return NAN;
  return tl_stats_gammaq(0.5 * df, 0.5 * x);
}

/* The alternating Gnedenko-Korolyuk sum
 *   P(D >= h/n) = 2 sum_{j>=1} (-1)^(j+1) C(2n, n - jh) / C(2n, n)
 * in nested (Horner) form, each binomial ratio as a product of h factors
 * below 1 (no overflow): the evaluation SciPy's ks_2samp uses for equal
 * sizes (_compute_prob_outside_square). */
double tl_stats_ks2_sf_equal(uint32_t n, uint32_t h) {
  if (h == 0) return 1;
  if (h > n) return 0;
  double p = 0;
  for (int64_t k = n / h; k >= 0; k--) {
    double p1 = 1;
    for (uint32_t j = 0; j < h; j++)
      p1 = (double)((int64_t)n - k * h - j) * p1 /
           (double)((int64_t)n + k * h + j + 1);
    p = p1 * (1 - p);
  }
  p *= 2;
  return p > 1 ? 1 : p;
}

/* ---- The tests ---- */

double tl_stats_binom_sf(uint32_t k, uint32_t n, double p) {
  if (k == 0) return 1;
  if (k > n) return 0;
  return tl_stats_betainc((double)k, (double)(n - k + 1), p);
}

void tl_stats_clopper_pearson(uint32_t x, uint32_t n, double tail, double *lo,
                              double *hi) {
  *lo = x == 0 ? 0 : tl_stats_betainc_inv(x, (double)(n - x) + 1, tail);
  *hi = x >= n ? 1
               : tl_stats_betainc_inv((double)x + 1, (double)(n - x), 1 - tail);
}

uint32_t tl_stats_disagree_critical(uint32_t n, double delta,
                                    double alpha_test) {
  /* P(X >= x | delta) falls with x: the first x below alpha_test. */
  uint32_t lo = 0, hi = n + 1; /* answer in [lo, hi] */
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (tl_stats_binom_sf(mid, n, delta) < alpha_test)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

double tl_stats_disagree_power(uint32_t n, double delta, double alpha_test,
                               double rate) {
  return tl_stats_binom_sf(tl_stats_disagree_critical(n, delta, alpha_test), n,
                           rate);
}

void tl_stats_planned_power(const tl_stats_design *d, size_t n_prompts,
                            uint32_t n_seeds, double rate, double *per_prompt,
                            double *pooled) {
  double at = (1 - d->confidence) / (double)tl_stats_m(n_prompts);
  *per_prompt = tl_stats_disagree_power(n_seeds, d->min_disagree, at, rate);
  uint64_t total = (uint64_t)n_seeds * n_prompts;
  *pooled =
      n_prompts >= 2 && total <= UINT32_MAX
          ? tl_stats_disagree_power((uint32_t)total, d->min_disagree, at, rate)
          : 0;
}

uint32_t tl_stats_seeds_for_power(double delta, double alpha_test, double rate,
                                  double power, uint32_t max_n) {
  /* Power is not monotone in n (the binomial's lattice), so the first n. */
  for (uint32_t n = 1; n <= max_n; n++)
    if (tl_stats_disagree_power(n, delta, alpha_test, rate) >= power) return n;
  return 0;
}

void tl_stats_chi2_homogeneity(const uint32_t *a, const uint32_t *b, size_t k,
                               double *stat, uint32_t *dof, double *p) {
  double na = 0, nb = 0;
  uint32_t kept = 0;
  for (size_t i = 0; i < k; i++) {
    na += a[i];
    nb += b[i];
    if (a[i] + (uint64_t)b[i] > 0) kept++;
  }
  double n = na + nb, x2 = 0;
  if (kept < 2 || na == 0 || nb == 0) {
    *stat = 0;
    *dof = kept > 0 ? kept - 1 : 0;
    *p = 1;
    return;
  }
  for (size_t i = 0; i < k; i++) {
    double col = (double)a[i] + b[i];
    if (col == 0) continue;
    double ea = na * col / n, eb = nb * col / n;
    x2 += (a[i] - ea) * (a[i] - ea) / ea + (b[i] - eb) * (b[i] - eb) / eb;
  }
  *stat = x2;
  *dof = kept - 1;
  *p = tl_stats_chi2_sf(x2, kept - 1);
}

static int cmp_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return (a > b) - (a < b);
}

tl_status tl_stats_ks2(const uint32_t *a, const uint32_t *b, size_t n,
                       double *d, double *p) {
  if (n == 0 || n > UINT32_MAX) return TL_ERR_INVALID_ARGUMENT;
  uint32_t *sa = malloc(2 * n * sizeof *sa);
  if (!sa) return TL_ERR_OUT_OF_MEMORY;
  uint32_t *sb = sa + n;
  memcpy(sa, a, n * sizeof *sa);
  memcpy(sb, b, n * sizeof *sb);
  qsort(sa, n, sizeof *sa, cmp_u32);
  qsort(sb, n, sizeof *sb, cmp_u32);
  /* Walk the merged values; after all copies of one value the two
   * empirical CDFs differ by (i - j) / n. */
  size_t i = 0, j = 0;
  int64_t h = 0;
  while (i < n || j < n) {
    uint32_t v = j >= n || (i < n && sa[i] <= sb[j]) ? sa[i] : sb[j];
    while (i < n && sa[i] == v) i++;
    while (j < n && sb[j] == v) j++;
    int64_t diff = (int64_t)i - (int64_t)j;
    if (diff < 0) diff = -diff;
    if (diff > h) h = diff;
  }
  free(sa);
  *d = (double)h / (double)n;
  *p = tl_stats_ks2_sf_equal((uint32_t)n, (uint32_t)h);
  return TL_OK;
}

/* ---- The comparison ---- */

size_t tl_stats_m(size_t n_prompts) {
  return n_prompts == 0 ? 0 : 4 * n_prompts + (n_prompts >= 2 ? 4 : 0);
}

static tl_status fail(char *err, size_t cap, const char *fmt, ...) {
  if (err && cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
  }
  return TL_ERR_INVALID_ARGUMENT;
}

static tl_status check_design(const tl_stats_design *d, char *err, size_t cap) {
  if (!(d->confidence > 0 && d->confidence < 1))
    return fail(err, cap, "design.confidence: %g is not in (0, 1)",
                d->confidence);
  if (!(d->min_tvd >= 0 && d->min_tvd <= 1))
    return fail(err, cap, "design.min_tvd: %g is not in [0, 1]", d->min_tvd);
  if (!(d->min_disagree >= 0 && d->min_disagree < 1))
    return fail(err, cap, "design.min_disagree: %g is not in [0, 1)",
                d->min_disagree);
  if (!(d->min_logp >= 0 && isfinite(d->min_logp)))
    return fail(err, cap, "design.min_logp: %g is not a finite number >= 0",
                d->min_logp);
  if (d->bootstrap_resamples < 100)
    return fail(err, cap, "design.bootstrap_resamples: %u is below 100",
                d->bootstrap_resamples);
  return TL_OK;
}

static tl_status check_prompt(const tl_stats_prompt *q, size_t i, size_t vocab,
                              char *err, size_t cap) {
  if (!q->pa || !q->pb || q->vocab == 0)
    return fail(err, cap, "prompts[%zu]: no next-token distributions", i);
  if (q->vocab != vocab)
    return fail(err, cap, "prompts[%zu].vocab: %zu, prompts[0] has %zu", i,
                q->vocab, vocab);
  if (q->n == 0) return fail(err, cap, "prompts[%zu].n: no seeds", i);
  if (q->n > UINT32_MAX)
    return fail(err, cap, "prompts[%zu].n: too many seeds", i);
  if (!q->differ || !q->lp_a || !q->lp_b || !q->len_a || !q->len_b ||
      !q->stop_a || !q->stop_b)
    return fail(err, cap, "prompts[%zu]: a per-seed array is missing", i);
  const double *ps[2] = {q->pa, q->pb};
  for (int s = 0; s < 2; s++) {
    double sum = 0;
    for (size_t v = 0; v < q->vocab; v++) {
      double x = ps[s][v];
      if (!(x >= 0 && x <= 1))
        return fail(err, cap, "prompts[%zu].p%c[%zu]: %g is not a probability",
                    i, "ab"[s], v, x);
      sum += x;
    }
    if (!(fabs(sum - 1) <= 1e-6))
      return fail(err, cap, "prompts[%zu].p%c: sums to %.17g, not 1", i,
                  "ab"[s], sum);
  }
  for (size_t k = 0; k < q->n; k++) {
    if (q->differ[k] > 1)
      return fail(err, cap, "prompts[%zu].differ[%zu]: %u is not 0 or 1", i, k,
                  q->differ[k]);
    if (!isfinite(q->lp_a[k]) || !isfinite(q->lp_b[k]))
      return fail(err, cap, "prompts[%zu].lp_%c[%zu]: not finite", i,
                  isfinite(q->lp_a[k]) ? 'b' : 'a', k);
    if (q->stop_a[k] >= TL_STATS_STOP_CODES ||
        q->stop_b[k] >= TL_STATS_STOP_CODES)
      return fail(
          err, cap, "prompts[%zu].stop_%c[%zu]: %u is not below %d", i,
          q->stop_a[k] >= TL_STATS_STOP_CODES ? 'a' : 'b', k,
          q->stop_a[k] >= TL_STATS_STOP_CODES ? q->stop_a[k] : q->stop_b[k],
          TL_STATS_STOP_CODES);
  }
  return TL_OK;
}

static tl_stat stat_init(double threshold) {
  tl_stat s = {NAN, NAN, NAN, NAN, threshold, false};
  return s;
}

static void exact_diffs(const tl_stats_prompt *q, const tl_stats_design *d,
                        tl_stats_result *r) {
  double sum = 0, mx = -1;
  uint32_t at = 0;
  for (size_t v = 0; v < q->vocab; v++) {
    double x = fabs(q->pa[v] - q->pb[v]);
    sum += x;
    if (x > mx) {
      mx = x;
      at = (uint32_t)v;
    }
  }
  r->tvd = stat_init(d->min_tvd);
  r->tvd.estimate = r->tvd.lo = r->tvd.hi = 0.5 * sum;
  r->tvd.alarm = r->tvd.estimate > d->min_tvd;
  r->max_diff = stat_init(d->min_tvd);
  r->max_diff.estimate = r->max_diff.lo = r->max_diff.hi = mx;
  r->max_diff.alarm = mx > d->min_tvd;
  r->max_diff_token = at;
}

static void disagree_test(uint32_t x, uint32_t n, const tl_stats_design *d,
                          double alpha_test, tl_stats_result *r) {
  double lo, hi;
  tl_stats_clopper_pearson(x, n, alpha_test, &lo, &hi);
  r->disagree = stat_init(d->min_disagree);
  r->disagree.estimate = (double)x / n;
  r->disagree.lo = lo;
  r->disagree.hi = 1;
  r->disagree.p = tl_stats_binom_sf(x, n, d->min_disagree);
  r->disagree.alarm = lo > d->min_disagree;
  r->disagree_count = x;
}

static void logp_t_test(const tl_stats_prompt *q, const tl_stats_design *d,
                        double alpha_test, tl_stats_result *r) {
  size_t n = q->n;
  double sum = 0;
  for (size_t k = 0; k < n; k++) sum += q->lp_a[k] - q->lp_b[k];
  double mean = sum / n;
  r->logp_diff = stat_init(d->min_logp);
  r->logp_diff.estimate = mean;
  if (n < 2) return;
  double ss = 0;
  for (size_t k = 0; k < n; k++) {
    double e = q->lp_a[k] - q->lp_b[k] - mean;
    ss += e * e;
  }
  double se = sqrt(ss / (n - 1) / n);
  double excess = fabs(mean) - d->min_logp;
  if (se == 0) {
    r->logp_diff.lo = r->logp_diff.hi = mean;
    r->logp_diff.p = excess > 0 ? 0 : 1;
  } else {
    double tq = tl_stats_t_quantile(1 - 0.5 * alpha_test, (double)(n - 1));
    r->logp_diff.lo = mean - tq * se;
    r->logp_diff.hi = mean + tq * se;
    double p = 2 * tl_stats_t_sf(excess / se, (double)(n - 1));
    r->logp_diff.p = p > 1 ? 1 : p;
  }
  r->logp_diff.alarm =
      r->logp_diff.lo > d->min_logp || r->logp_diff.hi < -d->min_logp;
}

static void stop_test(const uint32_t *ca, const uint32_t *cb, double alpha_test,
                      tl_stats_result *r) {
  r->stop = stat_init(alpha_test);
  tl_stats_chi2_homogeneity(ca, cb, TL_STATS_STOP_CODES, &r->stop.estimate,
                            &r->stop_dof, &r->stop.p);
  r->stop.alarm = r->stop.p < alpha_test;
}

static tl_status length_test(const uint32_t *a, const uint32_t *b, size_t n,
                             double alpha_test, tl_stats_result *r) {
  r->lengths = stat_init(alpha_test);
  tl_status st = tl_stats_ks2(a, b, n, &r->lengths.estimate, &r->lengths.p);
  r->lengths.alarm = st == TL_OK && r->lengths.p < alpha_test;
  return st;
}

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The q-quantile of sorted v[0..n) by linear interpolation between order
 * statistics at position q (n - 1) (NumPy's default, "type 7"). */
static double quantile_sorted(const double *v, size_t n, double q) {
  double pos = q * (double)(n - 1);
  size_t i = (size_t)pos;
  if (i + 1 >= n) return v[n - 1];
  return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

/* Pooled mean log-prob difference with a cluster bootstrap by prompt:
 * each resample draws P prompts with replacement (index = splitmix64 mod
 * P: a bias below P / 2^64) and takes the mean over all their pairs, i.e.
 * the sum of the drawn prompts' difference sums over the sum of their
 * seed counts, accumulated in draw order. */
static tl_status logp_bootstrap(const tl_stats_prompt *prompts, size_t np,
                                const tl_stats_design *d, double alpha_test,
                                tl_stat *out) {
  double *sums = malloc((np + d->bootstrap_resamples) * sizeof *sums);
  if (!sums) return TL_ERR_OUT_OF_MEMORY;
  double *boot = sums + np, total = 0, count = 0;
  for (size_t i = 0; i < np; i++) {
    double s = 0;
    for (size_t k = 0; k < prompts[i].n; k++)
      s += prompts[i].lp_a[k] - prompts[i].lp_b[k];
    sums[i] = s;
    total += s;
    count += (double)prompts[i].n;
  }
  uint64_t state = d->bootstrap_seed;
  for (uint32_t b = 0; b < d->bootstrap_resamples; b++) {
    double s = 0, c = 0;
    for (size_t j = 0; j < np; j++) {
      size_t i = (size_t)(splitmix64(&state) % np);
      s += sums[i];
      c += (double)prompts[i].n;
    }
    boot[b] = s / c;
  }
  qsort(boot, d->bootstrap_resamples, sizeof *boot, cmp_double);
  *out = stat_init(d->min_logp);
  out->estimate = total / count;
  out->lo = quantile_sorted(boot, d->bootstrap_resamples, 0.5 * alpha_test);
  out->hi = quantile_sorted(boot, d->bootstrap_resamples, 1 - 0.5 * alpha_test);
  out->alarm = out->lo > d->min_logp || out->hi < -d->min_logp;
  free(sums);
  return TL_OK;
}

static void count_stops(const uint8_t *codes, size_t n, uint32_t *counts) {
  for (size_t k = 0; k < n; k++) counts[codes[k]]++;
}

/* "prompt 2: " / "pooled: " and the first alarming statistic of r. */
static void describe_alarm(const tl_stats_result *r, const char *where,
                           char *out, size_t cap) {
  if (r->tvd.alarm)
    snprintf(
        out, cap,
        "%s: next-token TVD %.6g > %.6g (largest difference %.6g at token %u)",
        where, r->tvd.estimate, r->tvd.threshold, r->max_diff.estimate,
        r->max_diff_token);
  else if (r->disagree.alarm)
    snprintf(out, cap,
             "%s: disagreement %u seeds (%.4g), lower bound %.4g > %.4g", where,
             r->disagree_count, r->disagree.estimate, r->disagree.lo,
             r->disagree.threshold);
  else if (r->logp_diff.alarm)
    snprintf(out, cap,
             "%s: mean log-prob difference %.6g nats, interval [%.6g, %.6g] "
             "outside +-%.6g",
             where, r->logp_diff.estimate, r->logp_diff.lo, r->logp_diff.hi,
             r->logp_diff.threshold);
  else if (r->stop.alarm)
    snprintf(out, cap,
             "%s: stop reasons differ, chi-square %.6g (%u dof), p %.3g < %.3g",
             where, r->stop.estimate, r->stop_dof, r->stop.p,
             r->stop.threshold);
  else if (r->lengths.alarm)
    snprintf(out, cap, "%s: lengths differ, KS D %.4g, p %.3g < %.3g", where,
             r->lengths.estimate, r->lengths.p, r->lengths.threshold);
}

static bool any_alarm(const tl_stats_result *r) {
  return r->tvd.alarm || r->max_diff.alarm || r->disagree.alarm ||
         r->logp_diff.alarm || r->stop.alarm || r->lengths.alarm;
}

tl_status tl_stats_compare(const tl_stats_design *d,
                           const tl_stats_prompt *prompts, size_t np,
                           tl_stats_report *out, char *err, size_t cap) {
  memset(out, 0, sizeof *out);
  if (err && cap) err[0] = '\0';
  tl_status st = check_design(d, err, cap);
  if (st != TL_OK) return st;
  if (np == 0 || !prompts) return fail(err, cap, "prompts: none");
  size_t total = 0;
  for (size_t i = 0; i < np; i++) {
    st = check_prompt(&prompts[i], i, prompts[0].vocab, err, cap);
    if (st != TL_OK) return st;
    total += prompts[i].n;
  }
  if (total > UINT32_MAX)
    return fail(err, cap, "prompts: too many seeds in all");

  out->alpha = 1 - d->confidence;
  out->m = tl_stats_m(np);
  out->alpha_test = out->alpha / (double)out->m;
  out->n_prompts = np;
  out->prompts = calloc(np, sizeof *out->prompts);
  uint32_t *pool_len = malloc(2 * total * sizeof *pool_len);
  if (!out->prompts || !pool_len) {
    free(pool_len);
    tl_stats_report_free(out);
    return TL_ERR_OUT_OF_MEMORY;
  }
  double at = out->alpha_test;
  uint32_t pool_x = 0, pool_sa[TL_STATS_STOP_CODES] = {0},
           pool_sb[TL_STATS_STOP_CODES] = {0};
  size_t off = 0;
  for (size_t i = 0; i < np && st == TL_OK; i++) {
    const tl_stats_prompt *q = &prompts[i];
    tl_stats_result *r = &out->prompts[i];
    exact_diffs(q, d, r);
    uint32_t x = 0;
    for (size_t k = 0; k < q->n; k++) x += q->differ[k];
    disagree_test(x, (uint32_t)q->n, d, at, r);
    logp_t_test(q, d, at, r);
    uint32_t sa[TL_STATS_STOP_CODES] = {0}, sb[TL_STATS_STOP_CODES] = {0};
    count_stops(q->stop_a, q->n, sa);
    count_stops(q->stop_b, q->n, sb);
    stop_test(sa, sb, at, r);
    st = length_test(q->len_a, q->len_b, q->n, at, r);
    pool_x += x;
    count_stops(q->stop_a, q->n, pool_sa);
    count_stops(q->stop_b, q->n, pool_sb);
    memcpy(pool_len + off, q->len_a, q->n * sizeof *pool_len);
    memcpy(pool_len + total + off, q->len_b, q->n * sizeof *pool_len);
    off += q->n;
  }
  if (st == TL_OK && np >= 2) {
    tl_stats_result *r = &out->pooled;
    out->has_pooled = true;
    r->tvd = out->prompts[0].tvd;
    r->max_diff = out->prompts[0].max_diff;
    r->max_diff_token = out->prompts[0].max_diff_token;
    for (size_t i = 1; i < np; i++) {
      if (out->prompts[i].tvd.estimate > r->tvd.estimate)
        r->tvd = out->prompts[i].tvd;
      if (out->prompts[i].max_diff.estimate > r->max_diff.estimate) {
        r->max_diff = out->prompts[i].max_diff;
        r->max_diff_token = out->prompts[i].max_diff_token;
      }
    }
    disagree_test(pool_x, (uint32_t)total, d, at, r);
    st = logp_bootstrap(prompts, np, d, at, &r->logp_diff);
    stop_test(pool_sa, pool_sb, at, r);
    if (st == TL_OK) st = length_test(pool_len, pool_len + total, total, at, r);
  }
  free(pool_len);
  if (st != TL_OK) {
    tl_stats_report_free(out);
    return st;
  }
  for (size_t i = 0; i < np && !out->alarm; i++) {
    if (!any_alarm(&out->prompts[i])) continue;
    char where[32];
    snprintf(where, sizeof where, "prompt %zu", i);
    describe_alarm(&out->prompts[i], where, out->first_alarm,
                   sizeof out->first_alarm);
    out->alarm = true;
  }
  if (!out->alarm && out->has_pooled && any_alarm(&out->pooled)) {
    describe_alarm(&out->pooled, "pooled", out->first_alarm,
                   sizeof out->first_alarm);
    out->alarm = true;
  }
  return TL_OK;
}

void tl_stats_report_free(tl_stats_report *r) {
  if (!r) return;
  free(r->prompts);
  memset(r, 0, sizeof *r);
}

/* ---- JSON ---- */

static json_t *num(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

static json_t *stat_json(const tl_stat *s) {
  return json_pack("{s:o,s:o,s:o,s:o,s:o,s:b}", "estimate", num(s->estimate),
                   "lo", num(s->lo), "hi", num(s->hi), "p", num(s->p),
                   "threshold", num(s->threshold), "alarm", s->alarm);
}

static json_t *result_json(const tl_stats_result *r) {
  return json_pack(
      "{s:o,s:o,s:I,s:o,s:I,s:o,s:o,s:I,s:o}", "tvd", stat_json(&r->tvd),
      "max_diff", stat_json(&r->max_diff), "max_diff_token",
      (json_int_t)r->max_diff_token, "disagree", stat_json(&r->disagree),
      "disagree_count", (json_int_t)r->disagree_count, "logp_diff",
      stat_json(&r->logp_diff), "stop", stat_json(&r->stop), "stop_dof",
      (json_int_t)r->stop_dof, "lengths", stat_json(&r->lengths));
}

json_t *tl_stats_report_json(const tl_stats_report *r) {
  json_t *prompts = json_array();
  if (!prompts) return NULL;
  for (size_t i = 0; i < r->n_prompts; i++)
    if (json_array_append_new(prompts, result_json(&r->prompts[i])) != 0) {
      json_decref(prompts);
      return NULL;
    }
  return json_pack("{s:o,s:I,s:o,s:b,s:s,s:o,s:o}", "alpha", num(r->alpha), "m",
                   (json_int_t)r->m, "alpha_test", num(r->alpha_test), "alarm",
                   r->alarm, "first_alarm", r->first_alarm, "prompts", prompts,
                   "pooled",
                   r->has_pooled ? result_json(&r->pooled) : json_null());
}
