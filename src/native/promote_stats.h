/* The statistics of tinylm promote's stochastic comparison
 * (docs/promotion.md §Stochastic comparison, §Statistics).
 *
 * Two lanes A and B are run on the same prompts with the same seeds
 * (paired). Per prompt the runner hands over the two exact next-token
 * distributions at the prompt's end and, per seed, what the two sampled
 * continuations did; tl_stats_compare turns that into estimates,
 * confidence intervals, p-values and alarms under a Bonferroni correction
 * over every test it makes.
 *
 * Pure functions: no I/O, no globals, deterministic (the bootstrap draws
 * from splitmix64 seeded by the design). Only tl_stats_compare and the
 * KS test allocate (TL_ERR_OUT_OF_MEMORY).
 *
 * The family: alpha = 1 - confidence; every test runs at alpha/m and every
 * interval is two-sided at confidence 1 - alpha/m (the disagreement bound
 * is one-sided: its null hypothesis is). m counts the tests, not the exact
 * quantities (the TVD and the largest probability difference have no
 * sampling error, so no false-alarm rate to share):
 *   m = 4 * P            (per prompt: disagreement, log-prob difference,
 *                         stop reasons, lengths)
 *     + 4 when P >= 2    (the same four pooled over the prompts)
 * for P prompts (tl_stats_m). */
#ifndef TL_NATIVE_PROMOTE_STATS_H
#define TL_NATIVE_PROMOTE_STATS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

/* Stop-reason codes are small integers below this (the runner's mapping,
 * e.g. 0 eos, 1 max_new, 2 stop string). */
#define TL_STATS_STOP_CODES 16

/* What the plan registered (its `design`). */
typedef struct tl_stats_design {
  double confidence;      /* family-wise, in (0, 1): 0.95 */
  double min_tvd;         /* TVD of concern of the next-token distributions */
  double min_disagree;    /* delta: disagreement rate of concern, in [0, 1) */
  double min_logp;        /* |mean log-prob difference| of concern, nats, >= 0 */
  uint32_t bootstrap_resamples; /* B >= 100 (the pooled log-prob interval) */
  uint64_t bootstrap_seed;
} tl_stats_design;

/* One prompt (a cluster): n paired seeds. All arrays are the caller's. */
typedef struct tl_stats_prompt {
  const double *pa, *pb;   /* vocab: exact next-token probabilities, A and B */
  size_t vocab;
  size_t n;                /* seeds, >= 1 */
  const uint8_t *differ;   /* n: 1 when A's and B's sequences differ, else 0 */
  const double *lp_a;      /* n: log-prob of A's sequence under A (nats) */
  const double *lp_b;      /* n: log-prob of B's sequence under B */
  const uint32_t *len_a, *len_b; /* n: generated lengths (tokens) */
  const uint8_t *stop_a, *stop_b; /* n: stop-reason codes < TL_STATS_STOP_CODES */
} tl_stats_prompt;

/* One statistic. Intervals are at confidence 1 - alpha/m; a field that
 * does not apply is NAN (p of an exact quantity, an interval that cannot
 * be formed). `threshold` is the minimum effect (TVD, disagreement, log-prob)
 * or the per-test level alpha/m (stop reasons, lengths): the rule that
 * compares against it is documented at each field of tl_stats_result. */
typedef struct tl_stat {
  double estimate;
  double lo, hi;
  double p;
  double threshold;
  bool alarm;
} tl_stat;

typedef struct tl_stats_result {
  /* 0.5 * sum |pa - pb|; lo = hi = estimate (exact). Alarm: > min_tvd. */
  tl_stat tvd;
  /* max |pa - pb| (and the first token where it is reached); never above
   * the TVD, so its alarm (> min_tvd) implies the TVD's. */
  tl_stat max_diff;
  uint32_t max_diff_token;
  /* Paired disagreement rate x/n. [lo, hi] = [one-sided Clopper-Pearson
   * lower bound at 1 - alpha/m, 1]; p = P(X >= x | rate = delta), exact
   * binomial. Alarm: lo > delta (equivalently p < alpha/m): H0 rate <= delta. */
  tl_stat disagree;
  uint32_t disagree_count;
  /* Mean of lp_a - lp_b. Per prompt: Student-t interval (n - 1 degrees of
   * freedom; NAN when n < 2); p = 2 * P(T >= (|mean| - min_logp) / se),
   * capped at 1. Pooled: the mean over all pairs with a cluster bootstrap
   * by prompt (percentile interval, linear interpolation between order
   * statistics); p NAN. Alarm: the interval lies entirely outside
   * [-min_logp, +min_logp] (per prompt equivalently p < alpha/m). */
  tl_stat logp_diff;
  /* Stop-reason frequencies, A vs B: Pearson chi-square test of homogeneity
   * of the 2 x k table (categories with zero total dropped, no continuity
   * correction); estimate = the statistic, lo = hi = NAN, p its upper tail
   * with k - 1 degrees of freedom (p = 1 when k < 2). Alarm: p < alpha/m. */
  tl_stat stop;
  uint32_t stop_dof;
  /* Length distributions: two-sample Kolmogorov-Smirnov, estimate = D,
   * p exact for equal sample sizes (Gnedenko-Korolyuk), conservative with
   * ties. Alarm: p < alpha/m. */
  tl_stat lengths;
} tl_stats_result;

typedef struct tl_stats_report {
  double alpha;      /* 1 - confidence */
  size_t m;          /* the Bonferroni count */
  double alpha_test; /* alpha / m */
  size_t n_prompts;
  tl_stats_result *prompts; /* n_prompts (malloc'd) */
  /* Over all prompts when n_prompts >= 2 (else has_pooled is false):
   * disagree, logp_diff, stop and lengths as above on the pooled pairs;
   * tvd and max_diff are the largest over the prompts (max_diff_token
   * that of the prompt it came from), alarming with any prompt's. */
  bool has_pooled;
  tl_stats_result pooled;
  bool alarm;            /* any statistic's alarm */
  char first_alarm[256]; /* "prompt 2: disagreement ..." or "" */
} tl_stats_report;

/* m for P prompts (see above); 0 when P == 0. */
size_t tl_stats_m(size_t n_prompts);

/* Computes every statistic. TL_ERR_INVALID_ARGUMENT (err names the field,
 * e.g. "prompts[2].stop_a[5]: 17 is not below 16") for a design out of
 * range, no prompts, n == 0, a vocab of 0 or different between prompts'
 * pa/pb lengths, a non-finite or negative probability, a non-finite
 * log-prob, a differ flag other than 0/1, a stop code out of range;
 * TL_ERR_OUT_OF_MEMORY. On failure *out holds nothing to free. */
tl_status tl_stats_compare(const tl_stats_design *d,
                           const tl_stats_prompt *prompts, size_t n_prompts,
                           tl_stats_report *out, char *err, size_t err_cap);
void tl_stats_report_free(tl_stats_report *r);

/* The report as JSON (NULL on out of memory): {"alpha", "m", "alpha_test",
 * "alarm", "first_alarm", "prompts": [RESULT...], "pooled": RESULT|null},
 * RESULT = {"tvd": STAT, "max_diff": STAT, "max_diff_token", "disagree":
 * STAT, "disagree_count", "logp_diff": STAT, "stop": STAT, "stop_dof",
 * "lengths": STAT}, STAT = {"estimate", "lo", "hi", "p", "threshold",
 * "alarm"} with NAN as null. */
json_t *tl_stats_report_json(const tl_stats_report *r);

/* ---- Planned power (plan init) ---- */

/* The smallest disagreement count x in 0..n with P(X >= x | n, delta) <
 * alpha_test (the count at which test 2 alarms), or n + 1 when none. */
uint32_t tl_stats_disagree_critical(uint32_t n, double delta,
                                    double alpha_test);
/* Probability that the disagreement test alarms for n seeds when the true
 * rate is `rate`: P(X >= critical | n, rate), the exact binomial sum. */
double tl_stats_disagree_power(uint32_t n, double delta, double alpha_test,
                               double rate);
/* The fewest seeds (<= max_n) whose power at `rate` reaches `power`, or 0
 * when none does. */
uint32_t tl_stats_seeds_for_power(double delta, double alpha_test,
                                  double rate, double power, uint32_t max_n);

/* ---- The tests on their own (the runner's, the tool's, the tests') ---- */

/* Clopper-Pearson bounds for x successes in n: lo with P(X >= x | lo) =
 * tail (0 when x == 0), hi with P(X <= x | hi) = tail (1 when x == n).
 * A two-sided interval at confidence c has tail (1 - c) / 2. */
void tl_stats_clopper_pearson(uint32_t x, uint32_t n, double tail, double *lo,
                              double *hi);
/* P(X >= k) for X ~ Binomial(n, p). */
double tl_stats_binom_sf(uint32_t k, uint32_t n, double p);
/* Pearson chi-square homogeneity of a 2 x k table (rows a, b). */
void tl_stats_chi2_homogeneity(const uint32_t *a, const uint32_t *b, size_t k,
                               double *stat, uint32_t *dof, double *p);
/* Two-sample KS on a and b, n each: *d = sup |F_a - F_b|, *p exact. */
tl_status tl_stats_ks2(const uint32_t *a, const uint32_t *b, size_t n,
                       double *d, double *p);

/* ---- Special functions (accuracy: docs/promotion-stats.md) ---- */

double tl_stats_lgamma(double x);                 /* x > 0 */
double tl_stats_betainc(double a, double b, double x); /* I_x(a, b) */
double tl_stats_betainc_inv(double a, double b, double y); /* I_x = y */
double tl_stats_gammaq(double a, double x);       /* Q(a, x) = 1 - P(a, x) */
double tl_stats_t_sf(double t, double df);        /* P(T > t) */
double tl_stats_t_quantile(double q, double df);  /* P(T <= x) = q */
double tl_stats_chi2_sf(double x, double df);     /* P(X > x) */
/* P(D_{n,n} >= h / n) for two samples of n (h in 0..n). */
double tl_stats_ks2_sf_equal(uint32_t n, uint32_t h);

#endif
