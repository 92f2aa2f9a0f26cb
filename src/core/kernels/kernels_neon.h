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

/* Sums of four consecutive products of 16 codes w, x, exact in 32 bits:
 * one step of four packed blocks. */
typedef int32x4_t (*tl_neon_groups_fn)(int8x16_t w, int8x16_t x);

/* T(A) with A in a[0..3] (4 lanes each). */
static inline float tl_neon_tree(const float32x4_t *a) {
  float32x4_t c = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3]));
  float32x2_t d = vadd_f32(vget_low_f32(c), vget_high_f32(c));
  return vget_lane_f32(d, 0) + vget_lane_f32(d, 1);
}

/* Step st of blocks 4q .. 4q+3 of a whole packed group whose codes start
 * at c (tl_kern_pack's layout) as signed codes: q8 back from the offset
 * (XOR 0x80), q4 the nibbles minus 8. */
static inline int8x16_t tl_neon_step(bool q4, const uint8_t *c, int st, int q) {
  if (q4) {
    uint8x16_t u = vld1q_u8(c + 64 * (st / 2) + 16 * q);
    u = st % 2 ? vshrq_n_u8(u, 4) : vandq_u8(u, vdupq_n_u8(0x0F));
    return vsubq_s8(vreinterpretq_s8_u8(u), vdupq_n_s8(8));
  }
  return vreinterpretq_s8_u8(veorq_u8(vld1q_u8(c + 64 * st + 16 * q), vdupq_n_u8(0x80)));
}

/* F-4 / F-5 on packed rows, a group of 16 blocks at a time: lane i of
 * a[q] is block 4q + i of the group (A_{b mod 16}), its 8 steps' group
 * sums added exactly, then scaled once; a short last group through a
 * padded copy. Always inlined, so that groups is a known function in each
 * variant's copy and is inlined too. */
__attribute__((always_inline)) static inline void tl_neon_rows_quant(
    tl_neon_groups_fn groups, bool q4, const uint8_t *w, size_t row_bytes, size_t n,
    const tl_kern_x *x, size_t rows, float *y) {
  size_t nb = (n + 31) / 32, bb = q4 ? 20 : 36;
  for (size_t r = 0; r < rows; r++) {
    const uint8_t *row = w + r * row_bytes;
    float32x4_t a[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),
                        vdupq_n_f32(0.0f)};
    for (size_t b = 0; b < nb; b += TL_KERN_GROUP) {
      size_t m = nb - b < TL_KERN_GROUP ? nb - b : TL_KERN_GROUP;
      uint8_t padded[TL_KERN_GROUP * 36];
      const uint8_t *g = row + b * bb;
      const int8_t *xc = x->codes + 32 * b;
      if (m < TL_KERN_GROUP) g = tl_kern_pad_group(q4 ? TL_QTYPE_Q4 : TL_QTYPE_Q8, g, m, padded);
      for (int q = 0; q < 4; q++) {
        int32x4_t s = vdupq_n_s32(0);
        float32x4_t dw, p;
        for (int st = 0; st < 8; st++)
          s = vaddq_s32(s, groups(tl_neon_step(q4, g + 64, st, q), vld1q_s8(xc + 64 * st + 16 * q)));
        memcpy(&dw, g + 16 * q, 16); /* AArch64 Linux is little-endian, as the file */
        p = vmulq_f32(dw, vld1q_f32(x->scales + b + 4 * (size_t)q));
        a[q] = vaddq_f32(a[q], vmulq_f32(vcvtq_f32_s32(s), p));
      }
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

/* The KV cache's f16 rows (F-11), widened exactly by fcvtl
 * (kernels_neon.c). */
void tl_neon_f16_to_f32(const uint16_t *h, size_t n, float *out);

#endif
