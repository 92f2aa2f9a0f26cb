#include "math/detmath.h"

#include <stdint.h>

#include "bytes.h"

#define LN2_HI 6.93147180369123816490e-01 /* ln 2, 32 leading bits */
#define LN2_LO 1.90821492927058770002e-10 /* ln 2 - LN2_HI */
#define INV_LN2 1.44269504088896338700e+00

/* 2^k for -1074 <= k <= 1023 (subnormal results included). */
static double pow2(int k) {
  if (k < -1022) /* build the subnormal in two exact steps */
    return pow2(k + 54) * 5.551115123125783e-17; /* 2^-54 */
  return tl_bits_to_f64((uint64_t)(k + 1023) << 52);
}

/* Nearest integer, ties away from zero; |x| < 2^31. */
static int round_int(double x) {
  return (int)(x < 0 ? x - 0.5 : x + 0.5);
}

double tl_exp(double x) {
  double r, p;
  int k;
  if (x != x) return x;
  if (x > 709.782712893384) return __builtin_inf();
  if (x < -745.1332191019412) return 0.0;
  /* x = k ln2 + r, |r| <= ln2/2; k * LN2_HI is exact for |k| < 2^21. */
  k = round_int(x * INV_LN2);
  r = (x - k * LN2_HI) - k * LN2_LO;
  /* Taylor series of e^r to r^14/14! (< 2^-60 relative beyond), Horner. */
  p = 1.0 / 87178291200.0;
  p = p * r + 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  if (k > 1023) return p * 2.0 * pow2(k - 1); /* x near the top */
  return p * pow2(k);
}

double tl_log(double x) {
  uint64_t bits;
  int e;
  double m, f, s, s2, r;
  if (x != x || x < 0) return __builtin_nan("");
  if (x == 0) return -__builtin_inf();
  if (x == __builtin_inf()) return x;
  bits = tl_f64_to_bits(x);
  e = (int)((bits >> 52) & 0x7ff);
  if (e == 0) { /* subnormal: scale into the normal range */
    bits = tl_f64_to_bits(x * 18014398509481984.0); /* 2^54 */
    e = (int)((bits >> 52) & 0x7ff) - 54;
  }
  /* x = m 2^e with m in [sqrt(1/2), sqrt(2)). */
  m = tl_bits_to_f64((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  e -= 1023;
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e += 1;
  }
  /* log m = 2 atanh(s) with f = m - 1 (exact) and s = f / (2 + f),
   * |s| < 0.1716: 2 atanh(s) = 2s + s R, R = 2s^2/3 + 2s^4/5 + ... +
   * 2s^40/41 (s^43/43 < 2^-112; Horner from the smallest term), and as
   * 2s = f - s f (fdlibm's form), log m = f - s (f - R): the leading f is
   * exact and the rounding of s (2 + f and the division) reaches the result
   * only through s (f - R), at most a fifth of it. (Summing 2 atanh(s)
   * term by term, largest first, measured up to 2^-50.3 relative.) */
  f = m - 1.0;
  s = f / (2.0 + f);
  s2 = s * s;
  r = 2.0 / 41;
  for (int n = 39; n >= 3; n -= 2) r = r * s2 + 2.0 / n;
  r *= s2;
  return e * LN2_HI + (f - (s * (f - r) - e * LN2_LO));
}

/* pi/2 in three 33-bit parts and the tail (fdlibm's constants): k * PIO2_n
 * is exact for |k| < 2^20. */
#define PIO2_1 1.57079632673412561417e+00
#define PIO2_2 6.07710050630396597660e-11
#define PIO2_3 2.02226624871116645580e-21
#define PIO2_3T 8.47842766036889956997e-32
#define INV_PIO2 6.36619772367581382433e-01

/* sin and cos of r in [-pi/4, pi/4], Taylor series to r^21 / r^20. */
static double sin_kernel(double r) {
  double r2 = r * r, p = -1.0 / 51090942171709440000.0;
  p = p * r2 + 1.0 / 121645100408832000.0;
  p = p * r2 - 1.0 / 355687428096000.0;
  p = p * r2 + 1.0 / 1307674368000.0;
  p = p * r2 - 1.0 / 6227020800.0;
  p = p * r2 + 1.0 / 39916800.0;
  p = p * r2 - 1.0 / 362880.0;
  p = p * r2 + 1.0 / 5040.0;
  p = p * r2 - 1.0 / 120.0;
  p = p * r2 + 1.0 / 6.0;
  return r - r * r2 * p;
}

static double cos_kernel(double r) {
  double r2 = r * r, p = 1.0 / 2432902008176640000.0;
  p = p * r2 - 1.0 / 6402373705728000.0;
  p = p * r2 + 1.0 / 20922789888000.0;
  p = p * r2 - 1.0 / 87178291200.0;
  p = p * r2 + 1.0 / 479001600.0;
  p = p * r2 - 1.0 / 3628800.0;
  p = p * r2 + 1.0 / 40320.0;
  p = p * r2 - 1.0 / 720.0;
  p = p * r2 + 1.0 / 24.0;
  p = p * r2 - 0.5;
  return 1.0 + r2 * p;
}

/* x = k pi/2 + r; returns r and the quadrant k mod 4. */
static double reduce(double x, int *quadrant) {
  int k = round_int(x * INV_PIO2);
  double r = x - k * PIO2_1;
  r -= k * PIO2_2;
  r -= k * PIO2_3;
  r -= k * PIO2_3T;
  *quadrant = k & 3;
  return r;
}

double tl_sin(double x) {
  int q;
  double r;
  if (x != x || x - x != 0) return __builtin_nan("");
  r = reduce(x, &q);
  switch (q) {
    case 0: return sin_kernel(r);
    case 1: return cos_kernel(r);
    case 2: return -sin_kernel(r);
    default: return -cos_kernel(r);
  }
}

double tl_cos(double x) {
  int q;
  double r;
  if (x != x || x - x != 0) return __builtin_nan("");
  r = reduce(x, &q);
  switch (q) {
    case 0: return cos_kernel(r);
    case 1: return -sin_kernel(r);
    case 2: return -cos_kernel(r);
    default: return sin_kernel(r);
  }
}
