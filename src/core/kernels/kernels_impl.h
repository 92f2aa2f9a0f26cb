/* Shared by the kernel variants only (not part of the core's interface). */
#ifndef TL_CORE_KERNELS_IMPL_H
#define TL_CORE_KERNELS_IMPL_H

#include "kernels/kernels.h"

/* A short packed group (m < 16 blocks at g, tl_kern_pack's layout) as a
 * whole one in out (16 blocks of the type's bytes): the missing blocks
 * with scale +0 and code 0, which add +0 to their lanes. Returns out. */
const uint8_t *tl_kern_pad_group(tl_qtype type, const uint8_t *g, size_t m, uint8_t *out);

/* The ISA variants exist in x86-64 native builds only (the Makefile
 * compiles *_avx2.c / *_avxvnni.c / *_avx512.c there); a native build for x86-64 without
 * them defines TL_NO_X86_SIMD. */
#if defined(__x86_64__) && !defined(TL_NO_X86_SIMD)
#define TL_KERN_HAVE_X86 1
extern const tl_kernels tl_kernels_avx2;
extern const tl_kernels tl_kernels_avx512;
extern const tl_kernels tl_kernels_avx_vnni;
extern const tl_kernels tl_kernels_avx_vnni_evex;
#else
#define TL_KERN_HAVE_X86 0
#endif

/* The NEON variants exist in little-endian aarch64 builds only (the
 * Makefile compiles *_neon.c and *_dotprod.c there; they load the file's
 * little-endian weights directly); TL_NO_NEON leaves them out. */
#if defined(__aarch64__) && !defined(__AARCH64EB__) && !defined(TL_NO_NEON)
#define TL_KERN_HAVE_NEON 1
extern const tl_kernels tl_kernels_neon;
extern const tl_kernels tl_kernels_neon_dotprod;
#else
#define TL_KERN_HAVE_NEON 0
#endif

/* The SIMD128 kernels exist in wasm32 builds with -msimd128 only. */
#ifdef __wasm_simd128__
void tl_wasm_rows_f32(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                      size_t rows, float *y);
void tl_wasm_rows_f16(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                      size_t rows, float *y);
void tl_wasm_rows_bf16(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                       size_t rows, float *y);
void tl_wasm_rows_q8(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                     size_t rows, float *y);
void tl_wasm_rows_q4(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                     size_t rows, float *y);
void tl_wasm_tile_q8(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *xs,
                     size_t tokens, size_t rows, float *y, size_t y_stride);
void tl_wasm_tile_q4(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *xs,
                     size_t tokens, size_t rows, float *y, size_t y_stride);
void tl_wasm_f16_to_f32(const uint16_t *h, size_t n, float *out);
void tl_wasm_exps(const float *x, float sub, size_t n, float *out);
#endif

/* tl_kern_dots and its two-query form through a variant's own n-query
 * kernel `dots_n` (every output computed on its own there, so exactly the
 * single kernel's), compiled with the variant's target attribute. */
#define TL_KERN_DOTS_FROM_N(TARGET)                                                        \
  TARGET static void dots(const float *q, const float *k, size_t stride, size_t count,    \
                          size_t n, float *out) {                                          \
    dots_n(&q, 1, k, stride, count, n, &out);                                              \
  }                                                                                        \
  TARGET static void dots2(const float *q0, const float *q1, const float *k, size_t stride, \
                           size_t count, size_t n, float *out0, float *out1) {             \
    const float *q[2] = {q0, q1};                                                          \
    float *out[2] = {out0, out1};                                                          \
    dots_n(q, 2, k, stride, count, n, out);                                                \
  }

#endif
