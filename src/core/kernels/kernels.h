/* Kernels of the fast numerical profile fast/2 (docs/fast-profile.md):
 * activation quantization (F-3), q8/q4 integer block dot products (F-4,
 * F-5) and float dot products (F-6) for one token (rows) or several
 * (tiles), and attention's scores and probability-weighted values (F-1),
 * each with one fixed order of float operations that every ISA variant
 * reproduces bit for bit.
 *
 * The scalar twins here are the reference; the ISA variants live beside
 * them (kernels_avx2.c, kernels_avx512.c, kernels_neon.c,
 * kernels_wasm_simd.c) and are tested against them. The
 * core never looks at the CPU: a host picks a variant it has checked
 * (src/native/cpu.h) and hands it to the model. */
#ifndef TL_CORE_KERNELS_H
#define TL_CORE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"
#include "tinylm.h"

#define TL_KERN_LANES 16 /* accumulators of F-4..F-6 */

/* The name of the numerical profile these kernels implement. */
#define TL_FAST_PROFILE "fast/2"

/* One activation vector, prepared for the weight types that read it.
 * f: the f32 values (float weights). For q8/q4 weights (F-3), per block b
 * of 32: scales[b]; codes[32b ..]: in element order for q8 (q8 != NULL),
 * and for q4 (q4 != NULL) the even elements first, then the odd ones (the
 * nibble layout). The biases make unsigned-times-signed products exact
 * products with the codes: q8_bias[8b + g] = -128 * (sum of group g's
 * codes), for weights offset to w + 128; q4_bias[8b + g] = -8 * (sum of
 * group g's codes, in the q4 order), for the stored nibbles u = q + 8. */
typedef struct tl_kern_x {
  const float *f;
  const int8_t *q8, *q4;
  const float *scales;
  const int32_t *q8_bias, *q4_bias;
} tl_kern_x;

/* y[r] = row r of w (rows rows of n elements of one type, row_bytes apart)
 * times x, for r in [0, rows). No validation: q8/q4 bytes are checked once
 * by tl_kern_validate. */
typedef void (*tl_kern_rows_fn)(const uint8_t *w, size_t row_bytes, size_t n,
                                const tl_kern_x *x, size_t rows, float *y);

/* The same products for several tokens: y[t * y_stride + r] = row r of w
 * times xs[t], for t < tokens and r < rows, each (token, row) product
 * exactly rows' computation (F-8), so a variant may order the work as it
 * likes: weights are read once per call instead of once per token. */
typedef void (*tl_kern_tile_fn)(const uint8_t *w, size_t row_bytes, size_t n,
                                const tl_kern_x *xs, size_t tokens, size_t rows,
                                float *y, size_t y_stride);

typedef enum tl_kern_isa {
  TL_KERN_SCALAR, /* the scalar twins: every build */
  TL_KERN_AVX2,   /* AVX2 + F16C: x86-64 native builds */
  TL_KERN_AVX512, /* AVX-512 F/VL/BW + VNNI + F16C: x86-64 native builds */
  TL_KERN_WASM_SIMD128, /* wasm SIMD128: wasm32 builds with -msimd128 */
  TL_KERN_NEON,   /* AArch64 Advanced SIMD: aarch64 native builds */
  TL_KERN_NEON_DOTPROD, /* the same + the dot-product extension (sdot) */
  TL_KERN_ISA_COUNT
} tl_kern_isa;

typedef struct tl_kernels {
  tl_kern_isa isa;
  const char *name;
  tl_kern_rows_fn rows[5]; /* indexed by tl_qtype */
  /* NULL where the variant has none: callers use tl_kern_tile, which
   * loops over the tokens with rows. */
  tl_kern_tile_fn tile[5];
  /* F-3 (tl_kern_quantize_x's contract); NULL: the scalar twin. */
  void (*quantize)(const float *x, size_t n, float *scales, int8_t *q8, int32_t *q8_bias,
                   int8_t *q4, int32_t *q4_bias);
  /* Attention: tl_kern_dots' and tl_kern_weighted's contracts; NULL: the
   * scalar twins. */
  void (*dots)(const float *q, const float *k, size_t stride, size_t count, size_t n,
               float *out);
  void (*weighted)(const float *p, size_t count, const float *v, size_t stride, size_t d,
                   float *out);
} tl_kernels;

/* F-3 through k's quantizer when it has one, else the scalar twin. */
void tl_kern_quantize(const tl_kernels *k, const float *x, size_t n, float *scales,
                      int8_t *q8, int32_t *q8_bias, int8_t *q4, int32_t *q4_bias);

/* k's tile kernel for type when it has one, else rows once per token. */
void tl_kern_tile(const tl_kernels *k, tl_qtype type, const uint8_t *w, size_t row_bytes,
                  size_t n, const tl_kern_x *xs, size_t tokens, size_t rows, float *y,
                  size_t y_stride);

/* The variant for isa, or NULL when it is not compiled into this build
 * (e.g. the x86 variants off x86-64, NEON off aarch64). Says nothing about
 * whether the CPU runs it. */
const tl_kernels *tl_kernels_get(tl_kern_isa isa);

/* F-3 for one vector of n finite floats into nb = ceil(n/32) blocks:
 * scales[nb], and codes for q8 (q8 and q8_bias != NULL: nb*32 and nb*8)
 * and/or q4 (q4 and q4_bias != NULL: nb*32 and nb*8). */
void tl_kern_quantize_x(const float *x, size_t n, float *scales, int8_t *q8,
                        int32_t *q8_bias, int8_t *q4, int32_t *q4_bias);

/* Q-17 for rows [r0, r1) of a q8/q4 weight (any other type: TL_OK):
 * TL_ERR_INVALID_MODEL for a negative or non-finite scale, a code outside
 * the domain, a non-zero padding code or a non-zero code under a zero
 * scale, or a product code * scale that overflows. */
tl_status tl_kern_validate(tl_qtype type, const uint8_t *w, size_t row_bytes,
                           size_t n, size_t r0, size_t r1);

/* F-6's tree T over A[0..16). */
float tl_kern_tree(const float *a);

/* F-6's reduction of two f32 vectors of n: the attention scores of the
 * fast lane (F-1), in plain C whose order every compiler keeps. */
float tl_kern_dot(const float *a, const float *b, size_t n);

/* out[e] = the sum over j = 0 .. count-1, in this order, of p[j] v[j][e]
 * (v[j]: stride floats apart), for e < d: attention's probability-weighted
 * values, each element its own sequential sum (the strict lane's order,
 * so both lanes share it). */
void tl_kern_weighted(const float *p, size_t count, const float *v, size_t stride, size_t d,
                      float *out);

/* out[j] = tl_kern_dot(q, k + j * stride, n) for j < count: one query's
 * scores against count keys. */
void tl_kern_dots(const float *q, const float *k, size_t stride, size_t count, size_t n,
                  float *out);

/* Through k's own variants when it has them, else the scalar twins. */
void tl_kern_dots_k(const tl_kernels *k, const float *q, const float *keys, size_t stride,
                    size_t count, size_t n, float *out);
void tl_kern_weighted_k(const tl_kernels *k, const float *p, size_t count, const float *v,
                        size_t stride, size_t d, float *out);

#endif
