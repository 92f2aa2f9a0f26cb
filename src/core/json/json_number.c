/* Exact decimal <-> binary64 (json_internal.h). The decimal type and its
 * shifts follow Go's strconv/decimal.go and the shortest-digit search its
 * ftoa.go roundShortest; both are exact, so native and wasm builds give the
 * same bits without depending on the host's strtod or printf. */
#include <string.h>

#include "bytes.h"
#include "json/json_internal.h"

/* 9 * 2^60 + carry stays below 2^64. */
#define MAX_SHIFT 60

static void dec_trim(tl_dec *a) {
  while (a->nd > 0 && a->d[a->nd - 1] == 0) a->nd--;
  if (a->nd == 0) a->dp = 0;
}

static void dec_assign(tl_dec *a, uint64_t v) {
  uint8_t buf[24];
  int n = 0;
  while (v > 0) {
    buf[n++] = (uint8_t)(v % 10);
    v /= 10;
  }
  a->nd = 0;
  a->trunc = false;
  for (int i = n - 1; i >= 0; i--) a->d[a->nd++] = buf[i];
  a->dp = a->nd;
  dec_trim(a);
}

/* a *= 2^k, 0 < k <= MAX_SHIFT. */
static void dec_left_shift(tl_dec *a, unsigned k) {
  /* New digits, least significant first. */
  uint8_t tmp[TL_DEC_CAP + 24];
  int w = 0;
  uint64_t n = 0;
  for (int r = a->nd - 1; r >= 0; r--) {
    n += (uint64_t)a->d[r] << k;
    tmp[w++] = (uint8_t)(n % 10);
    n /= 10;
  }
  while (n > 0) {
    tmp[w++] = (uint8_t)(n % 10);
    n /= 10;
  }
  a->dp += w - a->nd;
  /* Most significant first, dropping what does not fit. */
  int keep = w < TL_DEC_CAP ? w : TL_DEC_CAP;
  for (int i = 0; i < keep; i++) a->d[i] = tmp[w - 1 - i];
  for (int i = keep; i < w; i++)
    if (tmp[w - 1 - i] != 0) a->trunc = true;
  a->nd = keep;
  dec_trim(a);
}

/* a /= 2^k, 0 < k <= MAX_SHIFT. */
static void dec_right_shift(tl_dec *a, unsigned k) {
  int r = 0, w = 0;
  uint64_t n = 0;
  /* Pick up enough leading digits to cover the first shift. */
  for (; (n >> k) == 0; r++) {
    if (r >= a->nd) {
      if (n == 0) {
        a->nd = 0;
        a->dp = 0;
        return;
      }
      while ((n >> k) == 0) {
        n *= 10;
        r++;
      }
      break;
    }
    n = n * 10 + a->d[r];
  }
  a->dp -= r - 1;
  uint64_t mask = ((uint64_t)1 << k) - 1;
  for (; r < a->nd; r++) {
    uint8_t c = a->d[r];
    a->d[w++] = (uint8_t)(n >> k);
    n &= mask;
    n = n * 10 + c;
  }
  while (n > 0) {
    uint8_t dig = (uint8_t)(n >> k);
    n &= mask;
    if (w < TL_DEC_CAP)
      a->d[w++] = dig;
    else if (dig > 0)
      a->trunc = true;
    n *= 10;
  }
  a->nd = w;
  dec_trim(a);
}

static void dec_shift(tl_dec *a, int k) {
  if (a->nd == 0) return;
  while (k > MAX_SHIFT) {
    dec_left_shift(a, MAX_SHIFT);
    k -= MAX_SHIFT;
  }
  if (k > 0) dec_left_shift(a, (unsigned)k);
  while (k < -MAX_SHIFT) {
    dec_right_shift(a, MAX_SHIFT);
    k += MAX_SHIFT;
  }
  if (k < 0) dec_right_shift(a, (unsigned)-k);
}

/* Whether rounding to nd digits rounds up (ties to even; trunc breaks a
 * tie upwards because the true value lies above it). */
static bool dec_should_round_up(const tl_dec *a, int nd) {
  if (nd < 0 || nd >= a->nd) return false;
  if (a->d[nd] == 5 && nd + 1 == a->nd) {
    if (a->trunc) return true;
    return nd > 0 && (a->d[nd - 1] % 2) == 1;
  }
  return a->d[nd] >= 5;
}

static void dec_round_down(tl_dec *a, int nd) {
  if (nd < 0 || nd >= a->nd) return;
  a->nd = nd;
  dec_trim(a);
}

static void dec_round_up(tl_dec *a, int nd) {
  if (nd < 0 || nd >= a->nd) return;
  for (int i = nd - 1; i >= 0; i--) {
    if (a->d[i] < 9) {
      a->d[i]++;
      a->nd = i + 1;
      return;
    }
  }
  a->d[0] = 1; /* all nines */
  a->nd = 1;
  a->dp++;
}

static void dec_round(tl_dec *a, int nd) {
  if (dec_should_round_up(a, nd))
    dec_round_up(a, nd);
  else
    dec_round_down(a, nd);
}

/* The integer part of a rounded to nearest (a->dp <= 20). */
static uint64_t dec_rounded_integer(const tl_dec *a) {
  uint64_t n = 0;
  int i = 0;
  if (a->dp > 20) return UINT64_MAX;
  for (; i < a->dp && i < a->nd; i++) n = n * 10 + a->d[i];
  for (; i < a->dp; i++) n *= 10;
  if (dec_should_round_up(a, a->dp)) n++;
  return n;
}

#define MANT_BITS 52
#define EXP_BIAS (-1023)
#define EXP_MAX 2047

/* Binary exponents that bring 10^i below 1 at least: floor(i*log2(10)). */
static const uint8_t pow_tab[] = {1, 3, 6, 9, 13, 16, 19, 23, 26};
#define POW_TAB_N ((int)(sizeof pow_tab / sizeof pow_tab[0]))

tl_dec_result tl_dec_to_double(tl_dec *d, bool negative, double *out) {
  uint64_t sign = negative ? (uint64_t)1 << 63 : 0;
  uint64_t mant = 0;
  int exp = 0;
  dec_trim(d);
  if (d->nd == 0 || d->dp < -330) { /* zero, or below half the least denormal */
    *out = tl_bits_to_f64(sign);
    return TL_DEC_FINITE;
  }
  if (d->dp > 310) return TL_DEC_OVERFLOW;
  /* Scale into [0.5, 1). */
  while (d->dp > 0) {
    int n = d->dp >= POW_TAB_N ? 27 : pow_tab[d->dp];
    dec_shift(d, -n);
    exp += n;
  }
  while (d->dp < 0 || (d->dp == 0 && d->d[0] < 5)) {
    int n = -d->dp >= POW_TAB_N ? 27 : pow_tab[-d->dp];
    dec_shift(d, n);
    exp -= n;
  }
  exp--;                    /* [0.5, 1) -> [1, 2) */
  if (exp < EXP_BIAS + 1) { /* denormal: fix the exponent, lose bits */
    int n = EXP_BIAS + 1 - exp;
    dec_shift(d, -n);
    exp += n;
  }
  if (exp - EXP_BIAS >= EXP_MAX) return TL_DEC_OVERFLOW;
  dec_shift(d, 1 + MANT_BITS);
  mant = dec_rounded_integer(d);
  if (mant == (uint64_t)2 << MANT_BITS) { /* rounding carried out */
    mant >>= 1;
    exp++;
    if (exp - EXP_BIAS >= EXP_MAX) return TL_DEC_OVERFLOW;
  }
  if ((mant & ((uint64_t)1 << MANT_BITS)) == 0) exp = EXP_BIAS; /* denormal */
  *out = tl_bits_to_f64(sign | (uint64_t)(exp - EXP_BIAS) << MANT_BITS |
                        (mant & (((uint64_t)1 << MANT_BITS) - 1)));
  return TL_DEC_FINITE;
}

static const double exact_pow10[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

bool tl_dec_fast_path(uint64_t w, int e10, bool negative, double *out) {
  double v;
  if (w > ((uint64_t)1 << 53) || e10 < -22 || e10 > 22) return false;
  /* w and 10^|e10| are exact doubles; one IEEE operation rounds once. */
  v = (double)w;
  if (e10 >= 0)
    v = v * exact_pow10[e10];
  else
    v = v / exact_pow10[-e10];
  *out = negative ? -v : v;
  return true;
}

void tl_dec_shortest(double v, tl_dec *d) {
  uint64_t bits = tl_f64_to_bits(v) & ~((uint64_t)1 << 63);
  int exp = (int)(bits >> MANT_BITS);
  uint64_t mant = bits & (((uint64_t)1 << MANT_BITS) - 1);
  const int minexp = EXP_BIAS + 1;
  tl_dec upper, lower;
  uint64_t mantlo;
  int explo;
  bool inclusive;
  int upperdelta = 0;

  if (exp == 0)
    exp++; /* denormal */
  else
    mant |= (uint64_t)1 << MANT_BITS;
  exp += EXP_BIAS;
  dec_assign(d, mant);
  dec_shift(d, exp - MANT_BITS);
  if (mant == 0) return;
  /* Already shortest when the closest shorter number is farther away than
   * the rounding interval (332/100 < log2 10). */
  if (exp > minexp && 332 * (d->dp - d->nd) >= 100 * (exp - MANT_BITS)) return;

  /* Upper bound: halfway to the next double. */
  dec_assign(&upper, mant * 2 + 1);
  dec_shift(&upper, exp - MANT_BITS - 1);
  /* Lower bound: halfway to the previous double, which is closer when
   * mant is a power of two (except at the smallest exponent). */
  if (mant > ((uint64_t)1 << MANT_BITS) || exp == minexp) {
    mantlo = mant - 1;
    explo = exp;
  } else {
    mantlo = mant * 2 - 1;
    explo = exp - 1;
  }
  dec_assign(&lower, mantlo * 2 + 1);
  dec_shift(&lower, explo - MANT_BITS - 1);
  /* Round-to-even reading maps the bounds to v only when mant is even. */
  inclusive = (mant % 2) == 0;

  for (int ui = 0;; ui++) {
    int mi = ui - upper.dp + d->dp;
    int li = ui - upper.dp + lower.dp;
    uint8_t l = 0, m = 0, u = 0;
    bool okdown, okup;
    if (mi >= d->nd) break;
    if (li >= 0 && li < lower.nd) l = lower.d[li];
    if (mi >= 0) m = d->d[mi];
    if (ui < upper.nd) u = upper.d[ui];
    okdown = l != m || (inclusive && li + 1 == lower.nd);
    if (upperdelta == 0 && m + 1 < u)
      upperdelta = 2;
    else if (upperdelta == 0 && m != u)
      upperdelta = 1;
    else if (upperdelta == 1 && (m != 9 || u != 0))
      upperdelta = 2;
    okup = upperdelta > 0 && (inclusive || upperdelta > 1 || ui + 1 < upper.nd);
    if (okdown && okup) {
      dec_round(d, mi + 1);
      return;
    }
    if (okdown) {
      dec_round_down(d, mi + 1);
      return;
    }
    if (okup) {
      dec_round_up(d, mi + 1);
      return;
    }
  }
}
