/* Shared by the JSON reader and the Python formatter: exact decimal <->
 * binary64 conversion without <math.h>, strtod or printf.
 *
 * Both directions use one exact tool, a decimal digit string that can be
 * multiplied and divided by powers of two (the algorithm of Go's
 * strconv/decimal.go): a double's exact value has at most 767 significant
 * decimal digits, so TL_DEC_CAP digits hold every value the formatter
 * needs exactly, and on input any digits beyond the capacity only matter as
 * a "something non-zero was dropped" bit, which the rounding honours. */
#ifndef TL_CORE_JSON_INTERNAL_H
#define TL_CORE_JSON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TL_DEC_CAP 800

/* value = 0.d[0] d[1] ... d[nd-1] x 10^dp, digits 0..9, no trailing zeros;
 * trunc: non-zero digits beyond d[TL_DEC_CAP-1] were dropped. */
typedef struct tl_dec {
  uint8_t d[TL_DEC_CAP];
  int nd;
  int dp;
  bool trunc;
} tl_dec;

typedef enum tl_dec_result {
  TL_DEC_FINITE,  /* *out is the correctly rounded double */
  TL_DEC_OVERFLOW /* rounds to infinity */
} tl_dec_result;

/* Correctly rounded (ties to even) conversion of sign * d, where d->dp may
 * be anything in int range (the caller clamps huge exponents). d is
 * consumed (scaled in place). */
tl_dec_result tl_dec_to_double(tl_dec *d, bool negative, double *out);

/* The shortest digits that round-trip to v (finite, non-zero magnitude),
 * the closest to v among those, ties to even: Python's repr digits
 * (_Py_dg_dtoa mode 0). v = 0.d x 10^dp. */
void tl_dec_shortest(double v, tl_dec *d);

/* Clinger's fast path: exact when the significand w <= 2^53 and
 * |e10| <= 22; returns false when it does not apply. */
bool tl_dec_fast_path(uint64_t w, int e10, bool negative, double *out);

#endif
