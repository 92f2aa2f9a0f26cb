/* fast/4 kernels with AArch64 Advanced SIMD (NEON), which every AArch64
 * CPU has (the `neon` variant; kernels_neon_dotprod.c is the same with the
 * dot-product extension). Float products are vmulq then vaddq (never
 * vfmaq/vmlaq: F-2 forbids the fused form). Integer sums of four
 * consecutive products (one step of four packed blocks): 8x8 -> 16-bit
 * widening products (|w|, |x| <= 127, so a pair sum 2 * 127 * 127 fits in
 * 16 bits), a pairwise add of neighbours, then a widening pairwise add:
 * exact. */
#include "kernels/kernels_impl.h"

#if TL_KERN_HAVE_NEON
#include "kernels/kernels_neon.h"

static inline int32x4_t groups4(int8x16_t w, int8x16_t x) {
  int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(x));
  int16x8_t hi = vmull_high_s8(w, x);
  return vpaddlq_s16(vpaddq_s16(lo, hi));
}

static void rows_q8(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                    size_t rows, float *y) {
  tl_neon_rows_quant(groups4, false, w, row_bytes, n, x, rows, y);
}

static void rows_q4(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                    size_t rows, float *y) {
  tl_neon_rows_quant(groups4, true, w, row_bytes, n, x, rows, y);
}

/* 4 weights from p as floats; type: 0 f32, 1 f16, 2 bf16. f16 and bf16
 * widen exactly (fcvtl keeps subnormals: Linux leaves FPCR.FZ16 clear). */
static inline float32x4_t load4(int type, const uint8_t *p) {
  if (type == 0) return vreinterpretq_f32_u8(vld1q_u8(p));
  if (type == 1) return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p)));
  return vreinterpretq_f32_u32(vshll_n_u16(vreinterpret_u16_u8(vld1_u8(p)), 16));
}

/* 16 products of F-6 into the four accumulators. */
static inline void add16(int type, const uint8_t *wp, size_t es, const float *xp,
                         float32x4_t *a) {
  for (int q = 0; q < 4; q++)
    a[q] = vaddq_f32(a[q], vmulq_f32(load4(type, wp + 4 * (size_t)q * es), vld1q_f32(xp + 4 * q)));
}

/* F-6; the tail through zero-filled copies (a +-0 product changes no
 * lane). */
static void rows_float(int type, const uint8_t *w, size_t row_bytes, size_t n,
                       const tl_kern_x *x, size_t rows, float *y) {
  size_t es = type == 0 ? 4 : 2, full = n / 16 * 16;
  for (size_t r = 0; r < rows; r++) {
    const uint8_t *row = w + r * row_bytes;
    float32x4_t a[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),
                        vdupq_n_f32(0.0f)};
    for (size_t i = 0; i < full; i += 16) add16(type, row + i * es, es, x->f + i, a);
    if (full < n) {
      uint8_t wt[64] = {0};
      float xt[16] = {0};
      memcpy(wt, row + full * es, (n - full) * es);
      memcpy(xt, x->f + full, (n - full) * sizeof(float));
      add16(type, wt, es, xt, a);
    }
    y[r] = tl_neon_tree(a);
  }
}

void tl_neon_rows_f32(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                      size_t rows, float *y) {
  rows_float(0, w, row_bytes, n, x, rows, y);
}

void tl_neon_rows_f16(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                      size_t rows, float *y) {
  rows_float(1, w, row_bytes, n, x, rows, y);
}

void tl_neon_rows_bf16(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                       size_t rows, float *y) {
  rows_float(2, w, row_bytes, n, x, rows, y);
}

void tl_neon_f16_to_f32(const uint16_t *h, size_t n, float *out) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h + i))));
  tl_kern_f16_to_f32(h + i, n - i, out + i);
}

/* The fields left out are NULL: prefill runs rows once per token and
 * F-3 the scalar twin (tl_kern_tile, tl_kern_quantize). */
const tl_kernels tl_kernels_neon = {
    .isa = TL_KERN_NEON,
    .name = "neon",
    .rows = {tl_neon_rows_f32, tl_neon_rows_f16, tl_neon_rows_bf16, rows_q8, rows_q4},
    .f16_to_f32 = tl_neon_f16_to_f32,
};

#endif
