/* The deterministic elementary functions (src/core/math/detmath.h) against
 * the host's libm, natively only (the core itself never calls libm): dense
 * grids, seeded random points and the domain edges of each function.
 *
 * The error is measured against glibc's long double functions (x87
 * extended precision, 64-bit significand, about 2^-63 relative), which
 * resolve errors of a few 2^-53 cleanly; the distance in ulps to glibc's
 * double function is reported beside it. The bounds asserted are the ones
 * detmath.h documents:
 *   tl_exp  relative error < 2^-51 where e^x is a normal double; where it
 *           is subnormal no double has a relative error that small (the
 *           spacing there is 2^-1074), so there the error is measured in
 *           units of 2^-1074 and must stay below 1
 *   tl_log  relative error < 2^-51 for finite x > 0
 *   tl_sin, tl_cos  absolute error < 2^-52 for |x| < 2^20
 * Each case prints its measured maxima (with the worst argument). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "math/detmath.h"
#include "tl_test.h"

typedef struct worst {
  const char *what;
  long double err; /* the largest error seen */
  double at;       /* its argument */
  uint64_t ulps;   /* the largest distance to glibc's double result */
  double ulps_at;
  size_t points;
} worst;

/* Doubles as ordered integers, so the distance in ulps is a difference. */
static int64_t ordered(double x) {
  int64_t b = (int64_t)tl_f64_to_bits(x);
  return b < 0 ? INT64_MIN - b : b;
}

static uint64_t ulp_distance(double a, double b) {
  int64_t x = ordered(a), y = ordered(b);
  if (a != a && b != b) return 0;
  if (a != a || b != b) return UINT64_MAX;
  return x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
}

static void note(worst *w, long double err, double x, double got, double libm) {
  uint64_t u = ulp_distance(got, libm);
  w->points++;
  if (err != err || err > w->err) {
    w->err = err;
    w->at = x;
  }
  if (u > w->ulps) {
    w->ulps = u;
    w->ulps_at = x;
  }
}

static void report(tl_test_ctx *t, const worst *w, const char *unit) {
  char line[256];
  double e = (double)w->err;
  snprintf(line, sizeof line,
           "  detmath: %-22s max %s %.3Le (2^%.2f) at x=%.17g; max %llu ulp from "
           "glibc at x=%.17g; %zu points\n",
           w->what, unit, w->err, e > 0 ? log2(e) : -INFINITY, w->at,
           (unsigned long long)w->ulps, w->ulps_at, w->points);
  tl_test_print(t, line);
}

static uint64_t next(tl_test_rng *r) { return tl_test_rng_next(r); }

/* Uniform in [lo, hi]. */
static double uniform(tl_test_rng *r, double lo, double hi) {
  double u = (double)(next(r) >> 11) * 0x1p-53;
  return lo + (hi - lo) * u;
}

/* A finite double of random bits with the sign cleared. */
static double random_positive(tl_test_rng *r) {
  for (;;) {
    double x = tl_bits_to_f64(next(r) & 0x7fffffffffffffffull);
    if (x - x == 0 && x > 0) return x;
  }
}

/* ------------------------------------------------------------------------ */
/* exp                                                                      */

#define EXP_LO (-745.1332191019412)
#define EXP_HI 709.782712893384
#define EXP_MIN_NORMAL (-708.39641853226408) /* ~ ln 2^-1022 */

typedef struct exp_stats {
  worst normal, subnormal;
} exp_stats;

static void exp_point(exp_stats *s, double x) {
  double got = tl_exp(x), libm = exp(x);
  long double ref = expl((long double)x);
  if (ref >= (long double)DBL_MIN) {
    long double err = fabsl(((long double)got - ref) / ref);
    if (got == INFINITY) err = INFINITY;
    note(&s->normal, err, x, got, libm);
  } else {
    /* units of 2^-1074, the spacing of subnormals */
    long double err = fabsl((long double)got - ref) / 0x1p-1074L;
    note(&s->subnormal, err, x, got, libm);
  }
}

static void exp_against_libm(tl_test_ctx *t) {
  exp_stats s;
  tl_test_rng rng = {0xe4e4};
  const size_t grid = 600000;
  memset(&s, 0, sizeof s);
  s.normal.what = "tl_exp (normal result)";
  s.subnormal.what = "tl_exp (subnormal)";
  for (size_t i = 0; i <= grid; i++)
    exp_point(&s, EXP_LO + (EXP_HI - EXP_LO) * ((double)i / (double)grid));
  for (size_t i = 0; i < 300000; i++) exp_point(&s, uniform(&rng, EXP_LO, EXP_HI));
  for (size_t i = 0; i <= 200000; i++) /* where the reduction is trivial */
    exp_point(&s, -1.0 + 2.0 * ((double)i / 200000.0));
  for (size_t i = 0; i < 100000; i++) { /* tiny |x|, random exponents */
    double x = tl_bits_to_f64((next(&rng) & 0x800fffffffffffffull) |
                              ((uint64_t)(1023 - 1 - next(&rng) % 60) << 52));
    exp_point(&s, x);
  }
  for (size_t i = 0; i < 100000; i++) /* the subnormal range */
    exp_point(&s, uniform(&rng, EXP_LO, EXP_MIN_NORMAL));
  /* Both ends, ulp by ulp, and around the multiples of ln2 / 2 (where the
   * reduction's k changes). */
  {
    double edges[] = {EXP_LO, EXP_HI, EXP_MIN_NORMAL, 0.0};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
      double x = edges[e];
      for (int k = 0; k < 200; k++) x = nextafter(x, -INFINITY);
      for (int k = 0; k < 400; k++, x = nextafter(x, INFINITY))
        if (x >= EXP_LO && x <= EXP_HI) exp_point(&s, x);
    }
    for (int k = -1076; k <= 1024; k++) {
      double x = (double)((long double)k * 0.693147180559945309417232121458L +
                          0.346573590279972654708616060729L);
      for (int j = -3; j <= 3; j++) {
        double y = x;
        for (int m = 0; m < (j < 0 ? -j : j); m++)
          y = nextafter(y, j < 0 ? -INFINITY : INFINITY);
        if (y >= EXP_LO && y <= EXP_HI) exp_point(&s, y);
      }
    }
  }
  report(t, &s.normal, "rel err");
  report(t, &s.subnormal, "err/2^-1074");
  TL_EXPECT(t, s.normal.err < 0x1p-51L);
  TL_EXPECT(t, s.subnormal.err < 1.0L);
  /* Outside the domain and the special values. */
  TL_EXPECT(t, tl_exp(710.0) == INFINITY);
  TL_EXPECT(t, tl_exp(INFINITY) == INFINITY);
  TL_EXPECT(t, tl_exp(-INFINITY) == 0.0);
  TL_EXPECT(t, tl_exp(-746.0) == 0.0);
  TL_EXPECT(t, tl_exp(NAN) != tl_exp(NAN));
  TL_EXPECT(t, tl_exp(0.0) == 1.0);
  TL_EXPECT(t, tl_exp(-0.0) == 1.0);
  /* Where glibc overflows, tl_exp does too, and vice versa. */
  {
    double x = EXP_HI;
    for (int k = 0; k < 50; k++) x = nextafter(x, -INFINITY);
    for (int k = 0; k < 100; k++, x = nextafter(x, INFINITY))
      TL_EXPECT(t, (tl_exp(x) == INFINITY) == (exp(x) == INFINITY));
  }
}

/* ------------------------------------------------------------------------ */
/* log                                                                      */

static void log_point(worst *w, double x) {
  double got = tl_log(x), libm = log(x);
  long double ref = logl((long double)x);
  long double err = ref == 0 ? fabsl((long double)got) : fabsl(((long double)got - ref) / ref);
  note(w, err, x, got, libm);
}

static void log_against_libm(tl_test_ctx *t) {
  worst w;
  tl_test_rng rng = {0x1091};
  memset(&w, 0, sizeof w);
  w.what = "tl_log";
  for (size_t i = 0; i < 400000; i++) log_point(&w, random_positive(&rng));
  for (size_t i = 0; i <= 400000; i++) /* two binades around 1, densely */
    log_point(&w, 0.5 + 1.5 * ((double)i / 400000.0));
  for (size_t i = 0; i < 200000; i++) /* 1 + tiny and 1 - tiny */
    log_point(&w, 1.0 + uniform(&rng, -0x1p-20, 0x1p-20));
  for (size_t i = 0; i < 100000; i++) /* subnormal inputs */
    log_point(&w, tl_bits_to_f64(1 + next(&rng) % 0x000fffffffffffffull));
  for (size_t i = 0; i < 100000; i++) /* around sqrt(2) (the m split) */
    log_point(&w, (double)(1.41421356237309504880L * (1.0L + (long double)uniform(&rng, -1e-9, 1e-9))) *
                  tl_bits_to_f64((uint64_t)(1023 + (int)(next(&rng) % 200) - 100) << 52));
  {
    double edges[] = {DBL_TRUE_MIN, DBL_MIN, DBL_MAX, 1.0, 2.0, 0.5};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
      double x = edges[e];
      for (int k = 0; k < 100 && x > DBL_TRUE_MIN; k++) x = nextafter(x, 0);
      for (int k = 0; k < 200 && x - x == 0; k++, x = nextafter(x, INFINITY))
        log_point(&w, x);
    }
    for (int k = -1074; k <= 1023; k++) log_point(&w, ldexp(1.0, k));
  }
  report(t, &w, "rel err");
  TL_EXPECT(t, w.err < 0x1p-51L);
  TL_EXPECT(t, tl_log(1.0) == 0.0);
  TL_EXPECT(t, tl_log(0.0) == -INFINITY);
  TL_EXPECT(t, tl_log(-0.0) == -INFINITY);
  TL_EXPECT(t, tl_log(INFINITY) == INFINITY);
  TL_EXPECT(t, tl_log(-1.0) != tl_log(-1.0));
  TL_EXPECT(t, tl_log(NAN) != tl_log(NAN));
}

/* ------------------------------------------------------------------------ */
/* sin, cos                                                                 */

#define TRIG_MAX 0x1p20

static void trig_point(worst *ws, worst *wc, double x) {
  double s = tl_sin(x), c = tl_cos(x);
  note(ws, fabsl((long double)s - sinl((long double)x)), x, s, sin(x));
  note(wc, fabsl((long double)c - cosl((long double)x)), x, c, cos(x));
}

static void sin_cos_against_libm(tl_test_ctx *t) {
  worst ws, wc;
  tl_test_rng rng = {0x51c0};
  const size_t grid = 500000;
  memset(&ws, 0, sizeof ws);
  memset(&wc, 0, sizeof wc);
  ws.what = "tl_sin";
  wc.what = "tl_cos";
  for (size_t i = 0; i <= grid; i++) { /* the whole domain */
    double x = -TRIG_MAX + 2 * TRIG_MAX * ((double)i / (double)grid);
    trig_point(&ws, &wc, nextafter(x, 0)); /* |x| < 2^20 strictly */
  }
  for (size_t i = 0; i < 300000; i++)
    trig_point(&ws, &wc, uniform(&rng, -TRIG_MAX, TRIG_MAX) * (1 - 0x1p-52));
  for (size_t i = 0; i <= 300000; i++) /* a few turns, densely */
    trig_point(&ws, &wc, -10.0 + 20.0 * ((double)i / 300000.0));
  for (size_t i = 0; i < 100000; i++) { /* tiny |x|, random exponents */
    double x = tl_bits_to_f64((next(&rng) & 0x800fffffffffffffull) |
                              ((uint64_t)(1023 - 1 - next(&rng) % 60) << 52));
    trig_point(&ws, &wc, x);
  }
  /* Next to multiples of pi/4 (quadrant and octant switches, where the
   * reduced argument is tiny or at the kernel's edge), up to 2^20. */
  for (size_t i = 0; i < 200000; i++) {
    long double k = (long double)(next(&rng) % 1335088);  /* 2^20 / (pi/4) */
    double x = (double)(k * 0.785398163397448309615660845819875721L);
    int steps = (int)(next(&rng) % 7) - 3;
    for (int m = 0; m < (steps < 0 ? -steps : steps); m++)
      x = nextafter(x, steps < 0 ? -INFINITY : INFINITY);
    if (next(&rng) & 1) x = -x;
    if (fabs(x) < TRIG_MAX) trig_point(&ws, &wc, x);
  }
  /* The numbers rounding_int and the reduction find hardest: the doubles
   * nearest k pi/2 for every k below 2^20 / (pi/2) in a sparse sweep. */
  for (long k = 1; k < 667544; k += 97) {
    double x = (double)((long double)k * 1.57079632679489661923132169163975144L);
    trig_point(&ws, &wc, x);
    trig_point(&ws, &wc, -x);
  }
  report(t, &ws, "abs err");
  report(t, &wc, "abs err");
  TL_EXPECT(t, ws.err < 0x1p-52L);
  TL_EXPECT(t, wc.err < 0x1p-52L);
  TL_EXPECT(t, tl_sin(0.0) == 0.0 && tl_cos(0.0) == 1.0);
  TL_EXPECT(t, tl_sin(INFINITY) != tl_sin(INFINITY));
  TL_EXPECT(t, tl_cos(-INFINITY) != tl_cos(-INFINITY));
  TL_EXPECT(t, tl_sin(NAN) != tl_sin(NAN));
}

/* The f32 wrapper the lane uses: one rounding of the binary64 result, so
 * within half an f32 ulp (plus the binary64 error) of the true value. */
static void expf_wrapper_against_libm(tl_test_ctx *t) {
  uint64_t worst_ulps = 0;
  float worst_at = 0;
  char line[160];
  for (uint64_t b = 0; b <= 0xffffffffu; b += 997) {
    float x = tl_bits_to_f32((uint32_t)b), got, libm;
    int64_t d;
    if (!(x - x == 0.0f) || x > 88.7f || x < -103.9f) continue;
    got = tl_expf(x);
    libm = expf(x);
    d = (int64_t)tl_f32_to_bits(got) - (int64_t)tl_f32_to_bits(libm);
    if ((uint64_t)(d < 0 ? -d : d) > worst_ulps) {
      worst_ulps = (uint64_t)(d < 0 ? -d : d);
      worst_at = x;
    }
  }
  snprintf(line, sizeof line,
           "  detmath: tl_expf differs from glibc expf by at most %llu f32 ulp "
           "(at x=%.9g)\n",
           (unsigned long long)worst_ulps, (double)worst_at);
  tl_test_print(t, line);
  /* glibc's expf is correctly rounded; a correctly rounded binary64 value
   * rounded once to f32 can differ only by double rounding (1 ulp). */
  TL_EXPECT(t, worst_ulps <= 1);
}

static const tl_test_case cases[] = {
    TL_CASE(exp_against_libm),
    TL_CASE(log_against_libm),
    TL_CASE(sin_cos_against_libm),
    TL_CASE(expf_wrapper_against_libm),
};
TL_SUITE(detmath, cases);
