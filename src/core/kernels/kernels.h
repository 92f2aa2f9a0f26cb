/* Kernels of the fast numerical profile fast/4 (docs/fast-profile.md):
 * activation quantization (F-3), q8/q4 exact integer block dot products
 * on packed weights (F-4, F-5) and float dot products (F-6) for one token (rows) or several
 * (tiles), and attention's scores and probability-weighted values (F-1),
 * each with one fixed order of float operations that every ISA variant
 * reproduces bit for bit.
 *
 * The scalar twins here are the reference; the ISA variants live beside
 * them (kernels_avx2.c, kernels_avxvnni.c, kernels_avx512.c,
 * kernels_neon.c, kernels_wasm_simd.c) and are tested against them. The
 * core never looks at the CPU: a host picks a variant it has checked
 * (src/host/cpu.h) and hands it to the model. */
#ifndef TL_CORE_KERNELS_H
#define TL_CORE_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"
#include "tinylm.h"

#define TL_KERN_LANES 16 /* accumulators of F-4..F-6 */

/* The name of the numerical profile these kernels implement. */
#define TL_FAST_PROFILE "fast/4"
/* The profile of fast/4 with its q8/q4 products computed by a device
 * (tl_kern_device: the browser's WebGPU lane, docs/webgpu-profile.md). */
#define TL_WEBGPU_PROFILE "webgpu/1"

/* q8/q4 blocks per group (F-4: block b feeds lane b mod 16). The fast
 * lane reads q8/q4 weights packed group by group (tl_kern_pack) and
 * activations in the same layout, padded to whole groups. */
#define TL_KERN_GROUP 16
#define TL_KERN_GROUP_CODES (TL_KERN_GROUP * 32) /* activation code bytes */

/* Groups of the activation of a row of n elements: ceil(ceil(n/32)/16). */
size_t tl_kern_groups(size_t n);

/* One activation vector, prepared for the weight types that read it.
 * f: the f32 values (float weights). For q8/q4 weights (F-3), ng =
 * tl_kern_groups(n) groups of 16 blocks, the blocks past the last (padding)
 * with scale +0, codes 0 and biases 0:
 * codes[512 g + 64 s + 4 j + k] = the code of element 4s + k (s < 8,
 * k < 4) of block 16g + j — the packed weights' order; scales[16 g + j]
 * its scale; the biases make unsigned-times-signed products exact block
 * sums: q8_bias[b] = -128 * (the block's code sum), for q8 weights stored
 * offset to w + 128; q4_bias[b] = -8 * (the code sum), for the nibbles
 * u = q + 8. */
typedef struct tl_kern_x {
  const float *f;
  const int8_t *codes;
  const float *scales;
  const int32_t *q8_bias, *q4_bias;
} tl_kern_x;

/* y[r] = row r of w (rows rows of n elements of one type, row_bytes apart)
 * times x, for r in [0, rows). q8/q4 rows are packed (tl_kern_pack); no
 * validation: their bytes were checked once, by tl_kern_validate, before
 * packing. */
typedef void (*tl_kern_rows_fn)(const uint8_t *w, size_t row_bytes, size_t n,
                                const tl_kern_x *x, size_t rows, float *y);

/* The same products for several tokens: y[t * y_stride + r] = row r of w
 * times xs[t], for t < tokens and r < rows, each (token, row) product
 * exactly rows' computation (F-8), so a variant may order the work as it
 * likes: weights are read once per call instead of once per token. */
typedef void (*tl_kern_tile_fn)(const uint8_t *w, size_t row_bytes, size_t n,
                                const tl_kern_x *xs, size_t tokens, size_t rows,
                                float *y, size_t y_stride);

/* One matrix of a device call: rows packed q8/q4 rows (tl_kern_pack) of n
 * elements, row_bytes apart, at w; y[t * rows + r] receives row r times
 * token t's activation. The layout is fixed (wasm32: six 32-bit fields)
 * because the browser's device reads it from the module's memory. */
typedef struct tl_kern_mat {
  uint32_t type; /* tl_qtype: q8 or q4 */
  const uint8_t *w;
  size_t row_bytes, n, rows;
  float *y;
} tl_kern_mat;

/* A device that computes the q8/q4 products of the fast lane itself (the
 * WebGPU lane, docs/webgpu-profile.md): for n_mats matrices sharing the
 * activations xs of tokens tokens (quantized, F-3), every y of mats; its
 * own numerical profile says how far from F-4/F-5 a result may be.
 * TL_OK, or the status of the device's failure. */
typedef struct tl_kern_device {
  void *ctx;
  tl_status (*products)(void *ctx, const tl_kern_mat *mats, size_t n_mats, const tl_kern_x *xs,
                        size_t tokens);
} tl_kern_device;

/* webgpu/1's per-product bound (docs/webgpu-profile.md, W-3) for one
 * packed q8/q4 row of n elements and the quantized activation x: how far
 * a device's product may lie from F-4/F-5's value (rows_quant's), in
 * double. */
double tl_kern_device_bound(tl_qtype type, const uint8_t *row, size_t n, const tl_kern_x *x);

typedef enum tl_kern_isa {
  TL_KERN_SCALAR, /* the scalar twins: every build */
  TL_KERN_AVX2,   /* AVX2 + F16C: x86-64 native builds */
  TL_KERN_AVX512, /* AVX-512 F/VL/BW + VNNI + F16C: x86-64 native builds */
  TL_KERN_WASM_SIMD128, /* wasm SIMD128: wasm32 builds with -msimd128 */
  TL_KERN_NEON,   /* AArch64 Advanced SIMD: aarch64 native builds */
  TL_KERN_NEON_DOTPROD, /* the same + the dot-product extension (sdot) */
  TL_KERN_AVX_VNNI, /* AVX2 + F16C + AVX-VNNI (VEX vpdpbusd): x86-64 native builds */
  TL_KERN_ISA_COUNT
} tl_kern_isa;

typedef struct tl_kernels {
  tl_kern_isa isa;
  const char *name;
  tl_kern_rows_fn rows[5]; /* indexed by tl_qtype; every variant has all */
  /* NULL where the variant has none: callers use tl_kern_tile, which
   * loops over the tokens with rows. */
  tl_kern_tile_fn tile[5];
  /* F-3 (tl_kern_quantize_x's contract); NULL: the scalar twin. */
  void (*quantize)(const float *x, size_t n, int8_t *codes, float *scales, int32_t *q8_bias,
                   int32_t *q4_bias);
  /* Attention: tl_kern_dots' and tl_kern_weighted's contracts; NULL: the
   * scalar twins. */
  void (*dots)(const float *q, const float *k, size_t stride, size_t count, size_t n,
               float *out);
  void (*weighted)(const float *p, size_t count, const float *v, size_t stride, size_t d,
                   float *out);
  /* tl_kern_dots and tl_kern_weighted for two queries against the same
   * keys and values (heads that share a KV head): each output exactly the
   * single kernel's; NULL: the single kernel twice. */
  void (*dots2)(const float *q0, const float *q1, const float *k, size_t stride, size_t count,
                size_t n, float *out0, float *out1);
  void (*weighted2)(const float *p0, const float *p1, size_t count, const float *v,
                    size_t stride, size_t d, float *out0, float *out1);
  /* tl_kern_dots_n's and tl_kern_weighted_n's contracts; NULL: the pair
   * or single kernels per query. */
  void (*dots_n)(const float *const *q, size_t nq, const float *k, size_t stride, size_t count,
                 size_t n, float *const *out);
  void (*weighted_n)(const float *const *p, const size_t *counts, size_t nq, const float *v,
                     size_t stride, size_t d, float *const *out);
  /* tl_kern_exps' contract; NULL: the scalar twin. */
  void (*exps)(const float *x, float sub, size_t n, float *out);
  /* tl_kern_f16_to_f32's and tl_kern_f32_to_f16's contracts; NULL: the
   * scalar twins. */
  void (*f16_to_f32)(const uint16_t *h, size_t n, float *out);
  void (*f32_to_f16)(const float *x, size_t n, uint16_t *out);
  /* tl_kern_dots_h's and tl_kern_weighted_h's contracts: attention reading
   * the binary16 cache rows (F-11) where they lie; NULL: the caller
   * converts the rows first (tl_kern_f16_to_f32_k) and uses the f32
   * kernels, which gives the same bits. */
  void (*dots_h)(const float *const *q, size_t nq, const uint16_t *k, size_t stride,
                 size_t count, size_t n, float *const *out);
  void (*weighted_h)(const float *const *p, const size_t *counts, size_t nq, const uint16_t *v,
                     size_t stride, size_t d, float *const *out);
} tl_kernels;

/* The AVX-VNNI variant's test twin: its kernels with the EVEX encoding of
 * the same vpdpbusd (AVX512-VNNI + VL), for checking them on a CPU
 * without VEX AVX-VNNI; NULL where the x86 variants are not compiled.
 * Tests only. */
const tl_kernels *tl_kernels_avx_vnni_twin(void);

/* F-3 through k's quantizer when it has one, else the scalar twin. */
void tl_kern_quantize(const tl_kernels *k, const float *x, size_t n, int8_t *codes,
                      float *scales, int32_t *q8_bias, int32_t *q4_bias);

/* k's tile kernel for type when it has one, else its rows once per
 * token. */
void tl_kern_tile(const tl_kernels *k, tl_qtype type, const uint8_t *w, size_t row_bytes,
                  size_t n, const tl_kern_x *xs, size_t tokens, size_t rows, float *y,
                  size_t y_stride);

/* The variant for isa, or NULL when it is not compiled into this build
 * (e.g. the x86 variants off x86-64, NEON off aarch64). Says nothing about
 * whether the CPU runs it. */
const tl_kernels *tl_kernels_get(tl_kern_isa isa);

/* F-3 for one vector of n finite floats into tl_kern_x's layout: codes
 * [512 ng], scales, q8_bias and q4_bias [16 ng] (ng = tl_kern_groups(n)),
 * padding included. */
void tl_kern_quantize_x(const float *x, size_t n, int8_t *codes, float *scales,
                        int32_t *q8_bias, int32_t *q4_bias);

/* Rows [r0, r1) of a q8/q4 matrix (rows of n elements, row_bytes apart, as
 * stored: Q-12) rewritten into the fast lane's packed layout, in the same
 * bytes of dst (dst == src: in place). Each group of m <= 16 blocks of a row
 * (the last may be short) keeps its m * block-bytes: first the m f32
 * scales, then the codes, block j's 4 codes for each step side by side:
 * q8: byte 4ms + 4j + k (s < 8, k < 4) = the code of element 4s + k,
 * offset to unsigned (w + 128, i.e. XOR 0x80); q4: byte 4mc + 4j + k
 * (c < 4) holds element 8c + k's nibble low and 8c + 4 + k's high (u =
 * q + 8). So a vector of 16 blocks x 4 bytes is one step of 16 blocks.
 * Other types: nothing to do. */
void tl_kern_pack(tl_qtype type, const uint8_t *src, uint8_t *dst, size_t row_bytes, size_t n,
                  size_t r0, size_t r1);

/* The exact inverse of tl_kern_pack: rows [r0, r1) of packed q8/q4 rows
 * back to the stored layout, dst == src allowed; other types:
 * nothing to do. For readers that need the stored blocks of an artifact
 * that holds the packed layout (docs/slm.md, SLM-11). */
void tl_kern_unpack(tl_qtype type, const uint8_t *src, uint8_t *dst, size_t row_bytes,
                    size_t n, size_t r0, size_t r1);

/* One packed q8/q4 row as floats: code * scale, the values the stored
 * row decodes to (tl_quant_unpack). */
void tl_kern_unpack_row(tl_qtype type, const uint8_t *row, size_t n, float *out);

/* Q-17 for rows [r0, r1) of a q8/q4 weight, stored or (packed) in
 * tl_kern_pack's layout (any other type: TL_OK):
 * TL_ERR_INVALID_MODEL for a negative or non-finite scale, a code outside
 * the domain, a non-zero padding code or a non-zero code under a zero
 * scale, or a product code * scale that overflows. */
tl_status tl_kern_validate(tl_qtype type, bool packed, const uint8_t *w, size_t row_bytes,
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

/* out[i] = tl_expf(x[i] - sub) for i < n (the softmax's exponentials:
 * the strict lane's function, so a variant must give its bits exactly). */
void tl_kern_exps(const float *x, float sub, size_t n, float *out);

/* out[i] = the f32 value of the binary16 h[i] for i < n (exact, as
 * tl_f16_to_f32): the fast lane's KV cache rows (F-11) read back. */
void tl_kern_f16_to_f32(const uint16_t *h, size_t n, float *out);

/* out[i] = x[i] rounded to binary16 as tl_f32_to_f16 (RNE, subnormals
 * kept, an overflow +-inf) for i < n finite x: the fast lane's KV cache
 * rows stored (F-11). */
void tl_kern_f32_to_f16(const float *x, size_t n, uint16_t *out);

/* Through k's own variants when it has them, else the scalar twins. */
void tl_kern_f16_to_f32_k(const tl_kernels *k, const uint16_t *h, size_t n, float *out);
void tl_kern_f32_to_f16_k(const tl_kernels *k, const float *x, size_t n, uint16_t *out);
void tl_kern_dots_k(const tl_kernels *k, const float *q, const float *keys, size_t stride,
                    size_t count, size_t n, float *out);
void tl_kern_weighted_k(const tl_kernels *k, const float *p, size_t count, const float *v,
                        size_t stride, size_t d, float *out);
void tl_kern_exps_k(const tl_kernels *k, const float *x, float sub, size_t n, float *out);
/* out[i][j] = tl_kern_dot(q[i], k + j * stride, n) for i < nq, j < count:
 * several queries (heads sharing a KV head, consecutive positions) against
 * the same keys, each score exactly the single kernel's. */
void tl_kern_dots_n(const tl_kernels *k, const float *const *q, size_t nq, const float *keys,
                    size_t stride, size_t count, size_t n, float *const *out);

/* out[i] = tl_kern_weighted(p[i], counts[i], v, stride, d) for i < nq:
 * several probability rows, each over its own first counts[i] value rows,
 * each output element exactly the single kernel's. */
void tl_kern_weighted_n(const tl_kernels *k, const float *const *p, const size_t *counts,
                        size_t nq, const float *v, size_t stride, size_t d, float *const *out);

/* out[i][j] = tl_kern_dot(q[i], the f32 values of the binary16 row
 * k + j * stride, n) for i < nq, j < count: the scores against the fast
 * lane's cached keys (F-11) without converting them first, each exactly
 * what tl_kern_f16_to_f32 then tl_kern_dots give (the conversion is
 * exact). */
void tl_kern_dots_h(const float *const *q, size_t nq, const uint16_t *k, size_t stride,
                    size_t count, size_t n, float *const *out);

/* out[i] = tl_kern_weighted(p[i], counts[i], the f32 values of the
 * binary16 rows v (stride apart), d) for i < nq: the cached values (F-11)
 * read as they lie, each output element exactly the f32 kernel's. */
void tl_kern_weighted_h(const float *const *p, const size_t *counts, size_t nq,
                        const uint16_t *v, size_t stride, size_t d, float *const *out);

/* Through k's variants when it has them, else the twins above. */
void tl_kern_dots_h_k(const tl_kernels *k, const float *const *q, size_t nq,
                      const uint16_t *keys, size_t stride, size_t count, size_t n,
                      float *const *out);
void tl_kern_weighted_h_k(const tl_kernels *k, const float *const *p, const size_t *counts,
                          size_t nq, const uint16_t *v, size_t stride, size_t d,
                          float *const *out);

void tl_kern_dots2_k(const tl_kernels *k, const float *q0, const float *q1, const float *keys,
                     size_t stride, size_t count, size_t n, float *out0, float *out1);
void tl_kern_weighted2_k(const tl_kernels *k, const float *p0, const float *p1, size_t count,
                         const float *v, size_t stride, size_t d, float *out0, float *out1);

#endif
