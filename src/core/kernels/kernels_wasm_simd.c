/* fast/2 kernels with wasm SIMD128 (built with -msimd128 only; in every
 * other build this file is empty). Four 128-bit accumulators per row are
 * the lanes A_0..3, A_4..7, A_8..11, A_12..15 of docs/fast-profile.md.
 *
 * Written for what V8 makes of SIMD128 on x86-64 (one xmm instruction per
 * operation, 15 usable registers):
 * - f16/bf16 rows in pairs share each activation load; q8/q4 activations
 *   are split once per chunk of blocks and tile of rows (rows_quant) and
 *   read by row pairs;
 * - integer groups through i32x4.dot_i16x8_s (pmaddwd) on codes split
 *   into their even and odd bytes by 16-bit shifts: the dot of the even
 *   halves gives lane j = w[4j]x[4j] + w[4j+2]x[4j+2], the odd halves the
 *   other two products of group j, so one add makes F-4's group sums with
 *   no shuffles or sign extensions (all exact: |sum| < 2^24);
 * - f16 decoded exactly with bit operations and one multiply by 2^112
 *   (wasm has no half-precision conversion).
 * Each row's lanes see the same additions in the same order as the scalar
 * twin's, so the results are the twin's bits. */
#include "kernels/kernels_impl.h"

#ifdef __wasm_simd128__
#include <stdbool.h>
#include <string.h>
#include <wasm_simd128.h>

#define ROWS 2 /* rows per pass: 2 x 4 accumulators + operands fit 15 xmm */
#define INLINE static inline __attribute__((always_inline))

/* T(A) with A in a[0..3] (4 lanes each). */
INLINE float tree(const v128_t *a) {
  v128_t b0 = wasm_f32x4_add(a[0], a[2]), b1 = wasm_f32x4_add(a[1], a[3]);
  v128_t c = wasm_f32x4_add(b0, b1);
  v128_t d = wasm_f32x4_add(c, wasm_i32x4_shuffle(c, c, 2, 3, 2, 3));
  return wasm_f32x4_extract_lane(d, 0) + wasm_f32x4_extract_lane(d, 1);
}

/* The even (e) and odd (o) bytes of 16 int8 codes as i16 lanes. */
INLINE void split8(v128_t v, v128_t *e, v128_t *o) {
  *e = wasm_i16x8_shr(wasm_i16x8_shl(v, 8), 8);
  *o = wasm_i16x8_shr(v, 8);
}

/* Groups 0..3 of 16 codes: weight halves we, wo times activation halves. */
INLINE v128_t groups(v128_t we, v128_t wo, v128_t xe, v128_t xo) {
  return wasm_i32x4_add(wasm_i32x4_dot_i16x8(we, xe), wasm_i32x4_dot_i16x8(wo, xo));
}

/* a[0..1] += t_{b,g} for g < 4 (g0) and g >= 4 (g1) of the block at k
 * (F-4: its scale times dx, in every lane). The scale is loaded as a
 * vector: a scalar load would be a call to memcpy in this freestanding
 * build. */
INLINE void add_terms(v128_t *a, v128_t g0, v128_t g1, const uint8_t *k, v128_t dx) {
  v128_t s = wasm_f32x4_mul(wasm_v128_load32_splat(k), dx);
  a[0] = wasm_f32x4_add(a[0], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(g0), s));
  a[1] = wasm_f32x4_add(a[1], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(g1), s));
}

/* Block b of a q8 (q4 false) or q4 row into a[0..1]. The q4 nibbles, as
 * i16 lanes of the 16 stored bytes: bits 0..3 and 8..11 are the even and
 * odd bytes of the low nibbles (elements 0, 2, .. in tl_kern_x.q4's
 * order), bits 4..7 and 12..15 those of the high nibbles; u = q + 8 is
 * corrected by the group bias. */
INLINE void block(bool q4, const uint8_t *row, size_t b, const v128_t *xs, v128_t bias0,
                  v128_t bias1, v128_t dx, v128_t *a) {
  v128_t g0, g1;
  if (q4) {
    const uint8_t *k = row + b * 20;
    v128_t v = wasm_v128_load(k + 4), m = wasm_i16x8_splat(0x0F);
    g0 = groups(wasm_v128_and(v, m), wasm_v128_and(wasm_u16x8_shr(v, 8), m), xs[0], xs[1]);
    g1 = groups(wasm_v128_and(wasm_u16x8_shr(v, 4), m), wasm_u16x8_shr(v, 12), xs[2], xs[3]);
    add_terms(a, wasm_i32x4_add(g0, bias0), wasm_i32x4_add(g1, bias1), k, dx);
  } else {
    const uint8_t *k = row + b * 36;
    v128_t we, wo;
    split8(wasm_v128_load(k + 4), &we, &wo);
    g0 = groups(we, wo, xs[0], xs[1]);
    split8(wasm_v128_load(k + 20), &we, &wo);
    g1 = groups(we, wo, xs[2], xs[3]);
    add_terms(a, g0, g1, k, dx);
  }
}

/* The activation codes of block b, split for block(). */
INLINE void split_x(bool q4, const tl_kern_x *x, size_t b, v128_t *xs) {
  const int8_t *c = (q4 ? x->q4 : x->q8) + 32 * b;
  split8(wasm_v128_load(c), &xs[0], &xs[1]);
  split8(wasm_v128_load(c + 16), &xs[2], &xs[3]);
}

/* Block b of nr <= ROWS rows into a[r][half ..]; xb: its split activation. */
INLINE void quant_step(bool q4, size_t nr, const uint8_t *w, size_t row_bytes, size_t b,
                       const v128_t *xb, const tl_kern_x *x, v128_t (*a)[4], int half) {
  v128_t dx = wasm_v128_load32_splat(x->scales + b), bias0 = dx, bias1 = dx;
  if (q4) {
    bias0 = wasm_v128_load(x->q4_bias + 8 * b);
    bias1 = wasm_v128_load(x->q4_bias + 8 * b + 4);
  }
  for (size_t r = 0; r < nr; r++) block(q4, w + r * row_bytes, b, xb, bias0, bias1, dx, a[r] + half);
}

/* F-4 / F-5, blocks [b0, b1) (b0 even) of nr <= ROWS rows: even blocks
 * into acc[r][0..1], odd ones into acc[r][2..3], a pair per pass (constant
 * indices keep the accumulators in registers); xs[b - b0] is block b's
 * split activation. */
INLINE void rows_quant_n(bool q4, size_t nr, const uint8_t *w, size_t row_bytes, size_t b0,
                         size_t b1, const v128_t (*xs)[4], const tl_kern_x *x, v128_t (*acc)[4]) {
  v128_t a[ROWS][4];
  size_t b = b0;
  for (size_t r = 0; r < nr; r++)
    for (int q = 0; q < 4; q++) a[r][q] = acc[r][q];
  for (; b + 2 <= b1; b += 2) {
    quant_step(q4, nr, w, row_bytes, b, xs[b - b0], x, a, 0);
    quant_step(q4, nr, w, row_bytes, b + 1, xs[b + 1 - b0], x, a, 2);
  }
  if (b < b1) quant_step(q4, nr, w, row_bytes, b, xs[b - b0], x, a, 0);
  for (size_t r = 0; r < nr; r++)
    for (int q = 0; q < 4; q++) acc[r][q] = a[r][q];
}

/* The activation is split once per CHUNK blocks and TILE rows (an even
 * CHUNK keeps each block's parity), not once per row: tiles of rows keep
 * their accumulators in memory between chunks. */
#define CHUNK 64 /* 4 KiB of split activation */
#define TILE 32

INLINE void rows_quant(bool q4, const uint8_t *w, size_t row_bytes, size_t n,
                       const tl_kern_x *x, size_t rows, float *y) {
  size_t nb = (n + 31) / 32;
  v128_t xs[CHUNK][4], acc[TILE][4];
  for (size_t r0 = 0; r0 < rows; r0 += TILE) {
    size_t nt = rows - r0 < TILE ? rows - r0 : TILE;
    for (size_t r = 0; r < nt; r++)
      for (int q = 0; q < 4; q++) acc[r][q] = wasm_f32x4_splat(0.0f);
    for (size_t c0 = 0; c0 < nb; c0 += CHUNK) {
      size_t c1 = nb - c0 < CHUNK ? nb : c0 + CHUNK, r = 0;
      for (size_t b = c0; b < c1; b++) split_x(q4, x, b, xs[b - c0]);
      for (; r + ROWS <= nt; r += ROWS)
        rows_quant_n(q4, ROWS, w + (r0 + r) * row_bytes, row_bytes, c0, c1, xs, x, acc + r);
      for (; r < nt; r++)
        rows_quant_n(q4, 1, w + (r0 + r) * row_bytes, row_bytes, c0, c1, xs, x, acc + r);
    }
    for (size_t r = 0; r < nt; r++) y[r0 + r] = tree(acc[r]);
  }
}

void tl_wasm_rows_q8(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                     size_t rows, float *y) {
  rows_quant(false, w, row_bytes, n, x, rows, y);
}

void tl_wasm_rows_q4(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                     size_t rows, float *y) {
  rows_quant(true, w, row_bytes, n, x, rows, y);
}

/* 8 f16 values (i16 lanes h) as f32x4 lo and hi, exactly as
 * tl_f16_to_f32 for every value but inf and NaN (f16_special): h's bits
 * moved to f32's places (sign | exponent | fraction, made of h
 * arithmetically shifted right by 3 above h << 13) are 2^-112 times the
 * f16 value, normal or subnormal, so one exact multiply by 2^112
 * finishes. */
INLINE void f16x8(v128_t h, v128_t *lo, v128_t *hi) {
  v128_t top = wasm_v128_and(wasm_i16x8_shr(h, 3), wasm_i16x8_splat((int16_t)0x8FFF));
  v128_t low = wasm_i16x8_shl(h, 13), k = wasm_f32x4_splat(0x1p112f);
  *lo = wasm_f32x4_mul(wasm_i16x8_shuffle(low, top, 0, 8, 1, 9, 2, 10, 3, 11), k);
  *hi = wasm_f32x4_mul(wasm_i16x8_shuffle(low, top, 4, 12, 5, 13, 6, 14, 7, 15), k);
}

/* All ones in the i16 lanes of h holding inf or NaN (exponent 31). */
INLINE v128_t f16_special(v128_t h) {
  v128_t e = wasm_i16x8_splat(0x7C00);
  return wasm_i16x8_eq(wasm_v128_and(h, e), e);
}

/* v (from f16x8) where special: exponent all ones, the fraction kept. */
INLINE void f16_fix(v128_t special, v128_t *lo, v128_t *hi) {
  v128_t z = wasm_i32x4_splat(0), inf = wasm_u32x4_splat(0x7F800000u);
  v128_t m0 = wasm_i16x8_shuffle(z, special, 0, 8, 1, 9, 2, 10, 3, 11);
  v128_t m1 = wasm_i16x8_shuffle(z, special, 4, 12, 5, 13, 6, 14, 7, 15);
  *lo = wasm_v128_or(*lo, wasm_v128_and(m0, inf));
  *hi = wasm_v128_or(*hi, wasm_v128_and(m1, inf));
}

/* 16 weights from p as floats (type 0 f32, 1 f16, 2 bf16). */
INLINE void load16(int type, const uint8_t *p, v128_t *v) {
  if (type == 0) {
    for (int q = 0; q < 4; q++) v[q] = wasm_v128_load(p + 16 * q);
  } else if (type == 1) {
    v128_t h0 = wasm_v128_load(p), h1 = wasm_v128_load(p + 16);
    v128_t s0 = f16_special(h0), s1 = f16_special(h1);
    f16x8(h0, &v[0], &v[1]);
    f16x8(h1, &v[2], &v[3]);
    if (wasm_v128_any_true(wasm_v128_or(s0, s1))) { /* rare: a branch is cheaper */
      f16_fix(s0, &v[0], &v[1]);
      f16_fix(s1, &v[2], &v[3]);
    }
  } else {
    v128_t z = wasm_i32x4_splat(0);
    for (int q = 0; q < 2; q++) {
      v128_t h = wasm_v128_load(p + 16 * q);
      v[2 * q] = wasm_i16x8_shuffle(z, h, 0, 8, 1, 9, 2, 10, 3, 11);
      v[2 * q + 1] = wasm_i16x8_shuffle(z, h, 4, 12, 5, 13, 6, 14, 7, 15);
    }
  }
}

/* a[q] += weights times xs, 16 elements. */
INLINE void step16(int type, const uint8_t *p, const v128_t *xs, v128_t *a) {
  v128_t v[4];
  load16(type, p, v);
  for (int q = 0; q < 4; q++) a[q] = wasm_f32x4_add(a[q], wasm_f32x4_mul(v[q], xs[q]));
}

/* F-6 for nr <= ROWS rows; the tail (n mod 16 elements) through
 * zero-filled copies (xt: the activation's, made once per call). */
INLINE void rows_float_n(int type, size_t nr, const uint8_t *w, size_t row_bytes, size_t n,
                         const float *xf, const float *xt, float *y) {
  size_t es = type == 0 ? 4 : 2, full = n / 16 * 16;
  v128_t a[ROWS][4], xs[4];
  for (size_t r = 0; r < nr; r++)
    for (int q = 0; q < 4; q++) a[r][q] = wasm_f32x4_splat(0.0f);
  for (size_t i = 0; i < full; i += 16) {
    for (int q = 0; q < 4; q++) xs[q] = wasm_v128_load(xf + i + 4 * q);
    for (size_t r = 0; r < nr; r++) step16(type, w + r * row_bytes + i * es, xs, a[r]);
  }
  if (full < n) {
    for (int q = 0; q < 4; q++) xs[q] = wasm_v128_load(xt + 4 * q);
    for (size_t r = 0; r < nr; r++) {
      uint8_t wt[64] = {0};
      memcpy(wt, w + r * row_bytes + full * es, (n - full) * es);
      step16(type, wt, xs, a[r]);
    }
  }
  for (size_t r = 0; r < nr; r++) y[r] = tree(a[r]);
}

INLINE void rows_float(int type, const uint8_t *w, size_t row_bytes, size_t n,
                       const tl_kern_x *x, size_t rows, float *y) {
  size_t full = n / 16 * 16, r = 0;
  float xt[16] = {0};
  memcpy(xt, x->f + full, (n - full) * sizeof(float));
  /* f32 rows one at a time: their four weight loads per step, twice,
   * crowd V8's registers (measured slower in pairs, unlike f16/bf16) */
  for (; type != 0 && r + ROWS <= rows; r += ROWS)
    rows_float_n(type, ROWS, w + r * row_bytes, row_bytes, n, x->f, xt, y + r);
  for (; r < rows; r++) rows_float_n(type, 1, w + r * row_bytes, row_bytes, n, x->f, xt, y + r);
}

void tl_wasm_rows_f32(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                      size_t rows, float *y) {
  rows_float(0, w, row_bytes, n, x, rows, y);
}

void tl_wasm_rows_f16(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                      size_t rows, float *y) {
  rows_float(1, w, row_bytes, n, x, rows, y);
}

void tl_wasm_rows_bf16(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                       size_t rows, float *y) {
  rows_float(2, w, row_bytes, n, x, rows, y);
}

#else
/* ISO C wants a declaration in every translation unit. */
typedef int tl_kernels_wasm_simd_unused;
#endif
