/* Deterministic elementary functions for the scalar lane (docs/architecture.md §6):
 * the same bits on every host and in wasm32, because they use only IEEE
 * +, -, *, / and conversions in binary64 with a fixed evaluation order (no
 * libm, no FMA: the build has -ffp-contract=off).
 *
 * Accuracy (asserted by src/native/detmath_test.c against glibc's long
 * double functions on ~1.3 million points each; docs/forward.md):
 *   tl_exp  relative error < 2^-51 where the result is normal (measured
 *           2^-52.4), absolute error < 2^-1074 where it is subnormal
 *   tl_sin, tl_cos  absolute error < 2^-52 for |x| < 2^20 (Cody-Waite
 *                   reduction by pi/2 in three parts, then Taylor series on
 *                   [-pi/4, pi/4]; measured 2^-52.25); larger |x| is
 *                   outside the contract
 *   tl_log  relative error < 2^-51 for finite x > 0 (measured 2^-52.5)
 * The f32 wrappers round the binary64 result once. */
#ifndef TL_CORE_MATH_DETMATH_H
#define TL_CORE_MATH_DETMATH_H

double tl_exp(double x);
double tl_log(double x);
double tl_sin(double x);
double tl_cos(double x);

/* exp of an f32, rounded to f32 (softmax, SiLU). */
static inline float tl_expf(float x) { return (float)tl_exp((double)x); }

/* sqrt: IEEE correctly rounded everywhere (sqrtss, f32.sqrt). */
static inline float tl_sqrtf(float x) { return __builtin_sqrtf(x); }

#endif
