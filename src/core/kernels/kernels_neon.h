/* Shared by the two NEON variants (kernels_neon.c, kernels_neon_dotprod.c;
 * aarch64 builds only): the accumulator layout, the tree, the q8/q4 row
 * loop with the group sums as a parameter, and the float rows, which both
 * variants use. Four 128-bit accumulators are the lanes A_0..3, A_4..7,
 * A_8..11, A_12..15 of docs/fast-profile.md. */
#ifndef TL_CORE_KERNELS_NEON_H
#define TL_CORE_KERNELS_NEON_H

#include <arm_neon.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/kernels_impl.h"

/* The four F-4 groups in one half block: sums of four consecutive
 * products of 16 codes w, x, exact in 32 bits. */
typedef int32x4_t (*tl_neon_groups_fn)(int8x16_t w, int8x16_t x);

/* T(A) with A in a[0..3] (4 lanes each). */
static inline float tl_neon_tree(const float32x4_t *a) {
  float32x4_t c = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3]));
  float32x2_t d = vadd_f32(vget_low_f32(c), vget_high_f32(c));
  return vget_lane_f32(d, 0) + vget_lane_f32(d, 1);
}

/* One q8 (q4 false) or q4 block's codes as two vectors of 16, in the
 * order of tl_kern_x.q8 / .q4 (q4: the low nibbles are the even
 * elements, the high ones the odd; codes u - 8, so no bias is needed). */
static inline void tl_neon_codes(bool q4, const uint8_t *blk, int8x16_t *c0, int8x16_t *c1) {
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

/* F-4 / F-5: even blocks into a[0..1] (A_0..7), odd ones into a[2..3].
 * Always inlined, so that groups is a known function in each variant's
 * copy and is inlined too. */
__attribute__((always_inline)) static inline void tl_neon_rows_quant(
    tl_neon_groups_fn groups, bool q4, const uint8_t *w, size_t row_bytes, size_t n,
    const tl_kern_x *x, size_t rows, float *y) {
  size_t nb = (n + 31) / 32, bb = q4 ? 20 : 36;
  const int8_t *xc = q4 ? x->q4 : x->q8;
  for (size_t r = 0; r < rows; r++) {
    const uint8_t *row = w + r * row_bytes;
    float32x4_t a[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),
                        vdupq_n_f32(0.0f)};
    for (size_t b = 0; b < nb; b++) {
      const uint8_t *blk = row + b * bb;
      float dw, dx = x->scales[b];
      int8x16_t c0, c1;
      size_t at = 2 * (b % 2);
      float32x4_t p;
      memcpy(&dw, blk, 4); /* AArch64 Linux is little-endian, as the file */
      p = vdupq_n_f32(dw * dx);
      tl_neon_codes(q4, blk, &c0, &c1);
      a[at] = vaddq_f32(a[at], vmulq_f32(vcvtq_f32_s32(groups(c0, vld1q_s8(xc + 32 * b))), p));
      a[at + 1] = vaddq_f32(a[at + 1],
                            vmulq_f32(vcvtq_f32_s32(groups(c1, vld1q_s8(xc + 32 * b + 16))), p));
    }
    y[r] = tl_neon_tree(a);
  }
}

/* F-6 for f32, f16 and bf16 weights (kernels_neon.c). */
void tl_neon_rows_f32(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                      size_t rows, float *y);
void tl_neon_rows_f16(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                      size_t rows, float *y);
void tl_neon_rows_bf16(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                       size_t rows, float *y);

#endif
