/* fast/1 kernels with AArch64 Advanced SIMD (NEON), which every AArch64
 * CPU has, in two variants: `neon` (baseline) and `neon-dotprod` (the
 * same, with the q8/q4 group sums through sdot, for CPUs whose HWCAP lists
 * the dot-product extension). Four 128-bit accumulators are the lanes
 * A_0..3, A_4..7, A_8..11, A_12..15 of docs/fast-profile.md. Float
 * products are vmulq then vaddq (never vfmaq/vmlaq: F-2 forbids the fused
 * form). Integer groups of F-4/F-5, exact either way: sdot sums four
 * consecutive 8-bit products into 32 bits, which are F-4's groups; the
 * baseline forms 8x8 -> 16-bit products (|w|, |x| <= 127, so a pair sum
 * 2 * 127 * 127 fits in 16 bits), adds neighbours pairwise, then widens
 * with a pairwise add into the groups of four. */
#include "kernels/kernels_impl.h"

#if TL_KERN_HAVE_NEON
#include <arm_neon.h>
#include <stdbool.h>
#include <string.h>

/* T(A) with A in a[0..3] (4 lanes each). */
static inline float tree(const float32x4_t *a) {
  float32x4_t c = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3]));
  float32x2_t d = vadd_f32(vget_low_f32(c), vget_high_f32(c));
  return vget_lane_f32(d, 0) + vget_lane_f32(d, 1);
}

/* A function that uses sdot must carry the extension's target (it
 * exists from Armv8.2-A on; only a CPU listing it runs these). */
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))

/* Sums of four consecutive products of 16 codes w, x: groups 0..3. */
static inline int32x4_t groups4(int8x16_t w, int8x16_t x) {
  int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(x));
  int16x8_t hi = vmull_high_s8(w, x);
  return vpaddlq_s16(vpaddq_s16(lo, hi));
}

DOTPROD static inline int32x4_t groups4_dot(int8x16_t w, int8x16_t x) {
  return vdotq_s32(vdupq_n_s32(0), w, x);
}

static inline float scale_of(const uint8_t *blk) {
  float d;
  memcpy(&d, blk, 4); /* AArch64 Linux is little-endian, as the file */
  return d;
}

/* One q8 (q4 false) or q4 block's codes as two vectors of 16, in the
 * order of tl_kern_x.q8 / .q4 (q4: the low nibbles are the even
 * elements, the high ones the odd). */
static inline void codes(bool q4, const uint8_t *blk, int8x16_t *c0, int8x16_t *c1) {
  if (q4) {
    uint8x16_t u = vld1q_u8(blk + 4);
    int8x16_t eight = vdupq_n_s8(8);
    *c0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(u, vdupq_n_u8(0x0F))), eight);
    *c1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(u, 4)), eight);
  } else {
    *c0 = vld1q_s8((const int8_t *)blk + 4);
    *c1 = vld1q_s8((const int8_t *)blk + 20);
  }
}

/* F-4 / F-5 with the group sums of GROUPS: even blocks into a[0..1]
 * (A_0..7), odd ones into a[2..3]. One body, instantiated for each way of
 * forming the groups (the sdot one under its target). */
#define ROWS_QUANT(name, attr, groups)                                                        \
  attr static void name(bool q4, const uint8_t *w, size_t row_bytes, size_t n,                \
                        const tl_kern_x *x, size_t rows, float *y) {                          \
    size_t nb = (n + 31) / 32, bb = q4 ? 20 : 36;                                             \
    const int8_t *xc = q4 ? x->q4 : x->q8;                                                    \
    for (size_t r = 0; r < rows; r++) {                                                       \
      const uint8_t *row = w + r * row_bytes;                                                 \
      float32x4_t a[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),            \
                          vdupq_n_f32(0.0f)};                                                 \
      for (size_t b = 0; b < nb; b++) {                                                       \
        const uint8_t *blk = row + b * bb;                                                    \
        float32x4_t p = vdupq_n_f32(scale_of(blk) * x->scales[b]);                            \
        int8x16_t c0, c1;                                                                     \
        size_t at = 2 * (b % 2);                                                              \
        codes(q4, blk, &c0, &c1);                                                             \
        a[at] = vaddq_f32(a[at], vmulq_f32(vcvtq_f32_s32(groups(c0, vld1q_s8(xc + 32 * b))), p)); \
        a[at + 1] = vaddq_f32(                                                                \
            a[at + 1], vmulq_f32(vcvtq_f32_s32(groups(c1, vld1q_s8(xc + 32 * b + 16))), p));  \
      }                                                                                       \
      y[r] = tree(a);                                                                         \
    }                                                                                         \
  }
ROWS_QUANT(rows_quant, , groups4)
ROWS_QUANT(rows_quant_dot, DOTPROD, groups4_dot)
#undef ROWS_QUANT

#define QUANT_FN(name, attr, impl, q4)                                                   \
  attr static void name(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x, \
                        size_t rows, float *y) {                                         \
    impl(q4, w, row_bytes, n, x, rows, y);                                               \
  }
QUANT_FN(rows_q8, , rows_quant, false)
QUANT_FN(rows_q4, , rows_quant, true)
QUANT_FN(rows_q8_dot, DOTPROD, rows_quant_dot, false)
QUANT_FN(rows_q4_dot, DOTPROD, rows_quant_dot, true)
#undef QUANT_FN

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
    y[r] = tree(a);
  }
}

#define FLOAT_FN(name, type)                                                              \
  static void name(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x, \
                   size_t rows, float *y) {                                               \
    rows_float(type, w, row_bytes, n, x, rows, y);                                        \
  }
FLOAT_FN(rows_f32, 0)
FLOAT_FN(rows_f16, 1)
FLOAT_FN(rows_bf16, 2)
#undef FLOAT_FN

/* The fields left out are NULL: prefill runs rows once per token and
 * F-3 the scalar twin (tl_kern_tile, tl_kern_quantize). */
const tl_kernels tl_kernels_neon = {
    .isa = TL_KERN_NEON,
    .name = "neon",
    .rows = {rows_f32, rows_f16, rows_bf16, rows_q8, rows_q4},
};

const tl_kernels tl_kernels_neon_dotprod = {
    .isa = TL_KERN_NEON_DOTPROD,
    .name = "neon-dotprod",
    .rows = {rows_f32, rows_f16, rows_bf16, rows_q8_dot, rows_q4_dot},
};

#endif
