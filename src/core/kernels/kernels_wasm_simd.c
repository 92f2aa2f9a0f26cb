/* fast/1 kernels with wasm SIMD128 (built with -msimd128 only; in every
 * other build this file is empty). Four 128-bit accumulators are the
 * lanes A_0..3, A_4..7, A_8..11, A_12..15 of docs/fast-profile.md; q8
 * group sums through i32x4.dot_i16x8_s on sign-extended codes (exact),
 * then the pair sums added into groups of four. kernels.c puts these in
 * the variant's table beside the scalar twins for q4 and f16 weights (the
 * same bits by definition). */
#include "kernels/kernels_impl.h"

#ifdef __wasm_simd128__
#include <string.h>
#include <wasm_simd128.h>

#include "bytes.h"

/* T(A) with A in a[0..3] (4 lanes each). */
static float tree(const v128_t *a) {
  v128_t b0 = wasm_f32x4_add(a[0], a[2]), b1 = wasm_f32x4_add(a[1], a[3]);
  v128_t c = wasm_f32x4_add(b0, b1);
  v128_t d = wasm_f32x4_add(c, wasm_i32x4_shuffle(c, c, 2, 3, 2, 3));
  return wasm_f32x4_extract_lane(d, 0) + wasm_f32x4_extract_lane(d, 1);
}

/* Groups 0..3 of 16 codes w, x (int8): sums of four consecutive products. */
static v128_t groups4(v128_t w, v128_t x) {
  v128_t lo = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(w), wasm_i16x8_extend_low_i8x16(x));
  v128_t hi = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(w), wasm_i16x8_extend_high_i8x16(x));
  return wasm_i32x4_add(wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6), wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7));
}

void tl_wasm_rows_q8(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                     size_t rows, float *y) {
  size_t nb = (n + 31) / 32;
  for (size_t r = 0; r < rows; r++) {
    const uint8_t *row = w + r * row_bytes;
    v128_t a[4] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f),
                   wasm_f32x4_splat(0.0f)};
    for (size_t b = 0; b < nb; b++) {
      const uint8_t *k = row + b * 36;
      const int8_t *c = x->q8 + 32 * b;
      v128_t p = wasm_f32x4_splat(tl_bits_to_f32(tl_load_le32(k)) * x->scales[b]);
      v128_t g0 = groups4(wasm_v128_load(k + 4), wasm_v128_load(c));
      v128_t g1 = groups4(wasm_v128_load(k + 20), wasm_v128_load(c + 16));
      size_t at = 2 * (b % 2);
      a[at] = wasm_f32x4_add(a[at], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(g0), p));
      a[at + 1] = wasm_f32x4_add(a[at + 1], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(g1), p));
    }
    y[r] = tree(a);
  }
}

/* 4 weights from p as floats (0 f32, 2 bf16). */
static v128_t load4(int type, const uint8_t *p) {
  if (type == 0) return wasm_v128_load(p);
  return wasm_i32x4_shl(wasm_u32x4_load16x4(p), 16);
}

/* F-6 for f32 and bf16 weights; tails through zero-filled copies. */
static void rows_float(int type, const uint8_t *w, size_t row_bytes, size_t n,
                       const tl_kern_x *x, size_t rows, float *y) {
  size_t es = type == 0 ? 4 : 2, full = n / 16 * 16;
  for (size_t r = 0; r < rows; r++) {
    const uint8_t *row = w + r * row_bytes;
    v128_t a[4] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f),
                   wasm_f32x4_splat(0.0f)};
    for (size_t i = 0; i < n; i += 16) {
      uint8_t wt[64] = {0};
      float xt[16] = {0};
      const uint8_t *wp = row + i * es;
      const float *xp = x->f + i;
      if (i >= full) {
        memcpy(wt, wp, (n - i) * es);
        memcpy(xt, xp, (n - i) * sizeof(float));
        wp = wt;
        xp = xt;
      }
      for (int q = 0; q < 4; q++)
        a[q] = wasm_f32x4_add(a[q], wasm_f32x4_mul(load4(type, wp + 4 * (size_t)q * es),
                                                   wasm_v128_load(xp + 4 * q)));
    }
    y[r] = tree(a);
  }
}

void tl_wasm_rows_f32(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                      size_t rows, float *y) {
  rows_float(0, w, row_bytes, n, x, rows, y);
}

void tl_wasm_rows_bf16(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                       size_t rows, float *y) {
  rows_float(2, w, row_bytes, n, x, rows, y);
}

#else
/* ISO C wants a declaration in every translation unit. */
typedef int tl_kernels_wasm_simd_unused;
#endif
