/* The `neon-dotprod` variant: kernels_neon.c's, with the q8/q4 group sums
 * through sdot, which adds four consecutive int8 products into each 32-bit
 * lane (exactly F-4's groups). Compiled with -march=armv8.2-a+dotprod (the
 * extension exists from Armv8.2-A on; gcc's arm_neon.h asks for that
 * level) and chosen only when the kernel's HWCAP lists the extension
 * (cpu.c). */
#include "kernels/kernels_impl.h"

#if TL_KERN_HAVE_NEON
#include "kernels/kernels_neon.h"

static inline int32x4_t groups4_dot(int8x16_t w, int8x16_t x) {
  return vdotq_s32(vdupq_n_s32(0), w, x);
}

static void rows_q8(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                    size_t rows, float *y) {
  tl_neon_rows_quant(groups4_dot, false, w, row_bytes, n, x, rows, y);
}

static void rows_q4(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                    size_t rows, float *y) {
  tl_neon_rows_quant(groups4_dot, true, w, row_bytes, n, x, rows, y);
}

/* Float rows are the baseline's (no instruction of the extension helps). */
const tl_kernels tl_kernels_neon_dotprod = {
    .isa = TL_KERN_NEON_DOTPROD,
    .name = "neon-dotprod",
    .rows = {tl_neon_rows_f32, tl_neon_rows_f16, tl_neon_rows_bf16, rows_q8, rows_q4},
    .f16_to_f32 = tl_neon_f16_to_f32,
};

#endif
