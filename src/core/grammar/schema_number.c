/* Numbers and integers, with minimum / maximum / exclusiveMinimum /
 * exclusiveMaximum enforced exactly (docs/structured.md, "Numbers").
 *
 * Unbounded: -?(0|[1-9][0-9]{0,15})(\.[0-9]{1,16})?([eE][+-]?[0-9]{1,2})?
 * (integers: no fraction, no exponent). Bounded: no exponent, and the
 * bounds compared as decimals (a bound given as a float is the decimal its
 * shortest repr spells): the magnitude's digits are generated position by
 * position, each state remembering whether the digits so far equal the
 * lower bound's and the upper bound's (the textbook digit-range
 * construction, extended past the decimal point). Negative numbers are "-"
 * and a magnitude in the mirrored range; negative zero is never written. */
#include <string.h>

#include "grammar/schema_internal.h"

#define DEC_MAX 64 /* digits of a bound's integer part and of its fraction */

/* A non-negative decimal: i has no leading zeros ("0" for zero), f no
 * trailing zeros. */
typedef struct dec {
  char i[DEC_MAX], f[DEC_MAX];
  size_t ni, nf;
} dec;

typedef struct bound {
  bool set, neg, incl;
  dec d;
} bound;

/* The value as a signed decimal; false when it has too many digits. */
static bool to_dec(const tl_json_value *v, bool *neg, dec *d) {
  char repr[40], digits[40];
  size_t k = 0, i = 0;
  long point = -1, e10 = 0, n;
  bool eneg = false;
  if (v->type == TL_JSON_INT) {
    uint64_t u = v->u.i < 0 ? (uint64_t)0 - (uint64_t)v->u.i : (uint64_t)v->u.i;
    char tmp[24];
    size_t m = 0;
    *neg = v->u.i < 0;
    do tmp[m++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    d->ni = 0;
    while (m > 0) d->i[d->ni++] = tmp[--m];
    d->nf = 0;
    return true;
  }
  {
    tl_json_out o = tl_json_out_make((uint8_t *)repr, sizeof repr);
    tl_py_float_repr(v->u.f, &o);
    *neg = repr[0] == '-';
    if (*neg) i++;
    for (; i < o.len && repr[i] != 'e'; i++) {
      if (repr[i] == '.') point = (long)k;
      else digits[k++] = repr[i];
    }
    if (point < 0) point = (long)k;
    if (i < o.len) {
      i++;
      if (repr[i] == '-' || repr[i] == '+') eneg = repr[i++] == '-';
      for (; i < o.len; i++) e10 = e10 * 10 + (repr[i] - '0');
    }
  }
  n = point + (eneg ? -e10 : e10); /* digits with the point after n of them */
  if (n > DEC_MAX || (long)k - n > DEC_MAX) return false;
  d->ni = d->nf = 0;
  for (long p = 0; p < n; p++) {
    char ch = p < (long)k ? digits[p] : '0';
    if (d->ni == 0 && ch == '0') continue;
    d->i[d->ni++] = ch;
  }
  if (d->ni == 0) d->i[d->ni++] = '0';
  for (long p = n < 0 ? n : (n > (long)k ? (long)k : n); p < (long)k; p++)
    d->f[d->nf++] = p < 0 ? '0' : digits[p];
  while (d->nf > 0 && d->f[d->nf - 1] == '0') d->nf--;
  if (d->ni == 1 && d->i[0] == '0' && d->nf == 0) *neg = false;
  return true;
}

static int dec_cmp(const dec *a, const dec *b) {
  if (a->ni != b->ni) return a->ni < b->ni ? -1 : 1;
  int r = memcmp(a->i, b->i, a->ni);
  size_t n = a->nf > b->nf ? a->nf : b->nf;
  if (r != 0) return r < 0 ? -1 : 1;
  for (size_t k = 0; k < n; k++) {
    char x = k < a->nf ? a->f[k] : '0', y = k < b->nf ? b->f[k] : '0';
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

/* Signed comparison of bounds' values. */
static int bound_cmp(const bound *a, const bound *b) {
  if (a->neg != b->neg) return a->neg ? -1 : 1;
  return a->neg ? -dec_cmp(&a->d, &b->d) : dec_cmp(&a->d, &b->d);
}

/* ---- the magnitude generator ---- */

typedef struct mag {
  sc *c;
  const dec *lo, *hi; /* hi NULL: unbounded */
  bool lo_incl, hi_incl, frac;
  size_t len;      /* integer digits of this alternative */
  char lo_pad[DEC_MAX + 1]; /* lo's integer digits padded to len */
  size_t frac_max; /* fraction digits at most */
} mag;

static tl_gexpr digits(sc *c, char lo, char hi) {
  uint32_t r[2] = {(uint32_t)lo, (uint32_t)hi};
  return tl_gb_class(c->b, r, 1, false);
}

static tl_gexpr empty(sc *c) { return tl_gb_literal(c->b, NULL, 0); }

static tl_gexpr alt_add(sc *c, tl_gexpr acc, tl_gexpr e) {
  tl_gexpr v[2] = {acc, e};
  return acc == TL_GEXPR_NONE ? e : tl_gb_alt(c->b, v, 2);
}

static tl_gexpr seq_of(sc *c, tl_gexpr a, tl_gexpr b) {
  tl_gexpr v[2] = {a, b};
  return tl_gb_seq(c->b, v, 2);
}

static char lo_frac_digit(const mag *m, size_t q) { return q < m->lo->nf ? m->lo->f[q] : '0'; }
static char hi_frac_digit(const mag *m, size_t q) { return q < m->hi->nf ? m->hi->f[q] : '0'; }

/* Stopping after q fraction digits keeps the value within the bounds the
 * digits so far are tight against. */
static bool stop_ok(const mag *m, size_t q, bool tl, bool th) {
  return (!tl || (q >= m->lo->nf && m->lo_incl)) && (!th || q < m->hi->nf || m->hi_incl);
}

static tl_gexpr frac_from(mag *m, size_t q, bool tl, bool th);

/* Fraction digits from position q on, possibly none. */
static tl_gexpr frac_after(mag *m, size_t q, bool tl, bool th) {
  tl_gexpr acc = stop_ok(m, q, tl, th) ? empty(m->c) : TL_GEXPR_NONE;
  tl_gexpr more = frac_from(m, q, tl, th);
  if (more != TL_GEXPR_NONE) acc = alt_add(m->c, acc, more);
  return acc;
}

/* At least one fraction digit at position q; TL_GEXPR_NONE: none fits. */
static tl_gexpr frac_from(mag *m, size_t q, bool tl, bool th) {
  sc *c = m->c;
  tl_gexpr acc = TL_GEXPR_NONE;
  char lo_d, hi_d;
  if (q >= m->frac_max) return TL_GEXPR_NONE;
  if (!tl && !th)
    return tl_gb_repeat(c->b, digits(c, '0', '9'), 1, (uint32_t)(m->frac_max - q));
  lo_d = tl ? lo_frac_digit(m, q) : '0';
  hi_d = th ? hi_frac_digit(m, q) : '9';
  for (char d = lo_d; d <= hi_d;) {
    bool ntl = tl && d == lo_d, nth = th && d == hi_d;
    char end = d;
    tl_gexpr rest;
    /* digits strictly inside share one class */
    if (!ntl && !nth) while (end + 1 <= hi_d && !(th && end + 1 == hi_d)) end++;
    rest = frac_after(m, q + 1, ntl, nth);
    if (rest != TL_GEXPR_NONE) acc = alt_add(c, acc, seq_of(c, digits(c, d, end), rest));
    d = (char)(end + 1);
  }
  return acc;
}

/* After the integer part: no fraction, or "." and at least one digit. */
static tl_gexpr int_end(mag *m, bool tl, bool th) {
  tl_gexpr acc = stop_ok(m, 0, tl, th) ? empty(m->c) : TL_GEXPR_NONE;
  if (m->frac) {
    tl_gexpr f = frac_from(m, 0, tl, th);
    if (f != TL_GEXPR_NONE) acc = alt_add(m->c, acc, seq_of(m->c, tl_gb_literal(m->c->b, (const uint8_t *)".", 1), f));
  }
  return acc;
}

static tl_gexpr int_from(mag *m, size_t p, bool tl, bool th) {
  sc *c = m->c;
  tl_gexpr acc = TL_GEXPR_NONE;
  char lo_d, hi_d;
  if (p == m->len) return int_end(m, tl, th);
  if (!tl && !th) {
    tl_gexpr e = int_end(m, false, false);
    tl_gexpr run = tl_gb_repeat(c->b, digits(c, '0', '9'), (uint32_t)(m->len - p),
                                (uint32_t)(m->len - p));
    if (p == 0) run = seq_of(c, digits(c, m->len > 1 ? '1' : '0', '9'),
                             tl_gb_repeat(c->b, digits(c, '0', '9'), (uint32_t)(m->len - 1),
                                          (uint32_t)(m->len - 1)));
    return e == TL_GEXPR_NONE ? TL_GEXPR_NONE : seq_of(c, run, e);
  }
  lo_d = tl ? m->lo_pad[p] : (p == 0 && m->len > 1 ? '1' : '0');
  hi_d = th ? m->hi->i[p] : '9';
  for (char d = lo_d; d <= hi_d;) {
    bool ntl = tl && d == lo_d, nth = th && d == hi_d;
    char end = d;
    tl_gexpr rest;
    if (!ntl && !nth) while (end + 1 <= hi_d && !(th && end + 1 == hi_d)) end++;
    rest = int_from(m, p + 1, ntl, nth);
    if (rest != TL_GEXPR_NONE) acc = alt_add(c, acc, seq_of(c, digits(c, d, end), rest));
    d = (char)(end + 1);
  }
  return acc;
}

/* Canonical magnitudes (0|[1-9][0-9]*)(\.[0-9]+)? between lo and hi. */
static tl_gexpr magnitude(sc *c, const dec *lo, bool lo_incl, const dec *hi, bool hi_incl,
                          bool frac) {
  mag m;
  tl_gexpr acc = TL_GEXPR_NONE;
  size_t max_len = hi != NULL ? hi->ni : (lo->ni > SC_INT_DIGITS ? lo->ni : SC_INT_DIGITS);
  memset(&m, 0, sizeof m);
  m.c = c;
  m.lo = lo;
  m.hi = hi;
  m.lo_incl = lo_incl;
  m.hi_incl = hi_incl;
  m.frac = frac;
  m.frac_max = SC_FRAC_DIGITS;
  if (lo->nf + 1 > m.frac_max) m.frac_max = lo->nf + 1;
  if (hi != NULL && hi->nf + 1 > m.frac_max) m.frac_max = hi->nf + 1;
  for (size_t len = lo->ni; len <= max_len; len++) {
    bool tl = len == lo->ni, th = hi != NULL && len == hi->ni;
    tl_gexpr e;
    m.len = len;
    if (tl) memcpy(m.lo_pad, lo->i, len);
    e = int_from(&m, 0, tl, th);
    if (e != TL_GEXPR_NONE) acc = alt_add(c, acc, e);
  }
  return acc;
}

/* ---- bounds from the schema ---- */

static bool read_bound(sc *c, const tl_json_value *s, const char *kw, bool incl, bool lower,
                       bound *b) {
  const tl_json_value *v = tl_json_get(s, kw, strlen(kw));
  bound nb;
  if (v == NULL) return true;
  if (v->type != TL_JSON_INT && v->type != TL_JSON_FLOAT) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "must be a number:", kw);
    return false;
  }
  memset(&nb, 0, sizeof nb);
  nb.set = true;
  nb.incl = incl;
  if (!to_dec(v, &nb.neg, &nb.d)) {
    sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE, "a bound past 64 decimal digits:", kw);
    return false;
  }
  /* The tighter of minimum and exclusiveMinimum (maximum likewise). */
  if (b->set) {
    int r = bound_cmp(&nb, b);
    if (lower ? r < 0 : r > 0) return true;
    if (r == 0 && !b->incl) return true;
  }
  *b = nb;
  return true;
}

tl_gexpr sc_number(sc *c, const tl_json_value *s, bool integer_only) {
  bound lo, hi;
  dec zero;
  tl_gexpr acc = TL_GEXPR_NONE, minus = tl_gb_literal(c->b, (const uint8_t *)"-", 1);
  memset(&lo, 0, sizeof lo);
  memset(&hi, 0, sizeof hi);
  if (!read_bound(c, s, "minimum", true, true, &lo) ||
      !read_bound(c, s, "exclusiveMinimum", false, true, &lo) ||
      !read_bound(c, s, "maximum", true, false, &hi) ||
      !read_bound(c, s, "exclusiveMaximum", false, false, &hi))
    return TL_GEXPR_NONE;
  if (!lo.set && !hi.set) {
    tl_gexpr v[4];
    v[0] = tl_gb_repeat(c->b, minus, 0, 1);
    v[1] = tl_gb_alt(c->b, (tl_gexpr[]){tl_gb_literal(c->b, (const uint8_t *)"0", 1),
                                        seq_of(c, digits(c, '1', '9'),
                                               tl_gb_repeat(c->b, digits(c, '0', '9'), 0,
                                                            SC_INT_DIGITS - 1))}, 2);
    if (integer_only) return tl_gb_seq(c->b, v, 2);
    v[2] = tl_gb_repeat(c->b, seq_of(c, tl_gb_literal(c->b, (const uint8_t *)".", 1),
                                     tl_gb_repeat(c->b, digits(c, '0', '9'), 1, SC_FRAC_DIGITS)),
                        0, 1);
    v[3] = tl_gb_repeat(
        c->b,
        tl_gb_seq(c->b, (tl_gexpr[]){tl_gb_class(c->b, (const uint32_t[]){'E', 'E', 'e', 'e'}, 2, false),
                                     tl_gb_repeat(c->b, tl_gb_class(c->b, (const uint32_t[]){'+', '+', '-', '-'}, 2, false), 0, 1),
                                     tl_gb_repeat(c->b, digits(c, '0', '9'), 1, 2)}, 3),
        0, 1);
    return tl_gb_seq(c->b, v, 4);
  }
  memset(&zero, 0, sizeof zero);
  zero.i[0] = '0';
  zero.ni = 1;
  /* Negative values: "-" and a magnitude in (0 or -hi, -lo). */
  if (!lo.set || lo.neg) {
    const dec *mlo = &zero, *mhi = lo.set ? &lo.d : NULL;
    bool mlo_incl = false;
    if (hi.set && hi.neg) {
      mlo = &hi.d;
      mlo_incl = hi.incl;
    }
    tl_gexpr m = magnitude(c, mlo, mlo_incl, mhi, lo.set ? lo.incl : true, !integer_only);
    if (m != TL_GEXPR_NONE) acc = alt_add(c, acc, seq_of(c, minus, m));
  }
  /* Non-negative values: a magnitude in [max(lo, 0), hi]. */
  if (!hi.set || !hi.neg) {
    const dec *mlo = lo.set && !lo.neg ? &lo.d : &zero;
    bool mlo_incl = lo.set && !lo.neg ? lo.incl : true;
    tl_gexpr m = magnitude(c, mlo, mlo_incl, hi.set ? &hi.d : NULL, hi.set ? hi.incl : true,
                           !integer_only);
    if (m != TL_GEXPR_NONE) acc = alt_add(c, acc, m);
  }
  return acc == TL_GEXPR_NONE ? sc_never(c) : acc;
}
