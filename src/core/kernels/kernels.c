/* The scalar twins of fast/2 (docs/fast-profile.md), written as the spec
 * reads, and the dispatch table. */
#include "kernels/kernels.h"

#include <stdbool.h>
#include <string.h>

#include "bytes.h"
#include "kernels/kernels_impl.h"
#include "kernels/mutant.h"

float tl_kern_tree(const float *a) {
  float b[8], c[4], d0, d1;
  for (int j = 0; j < 8; j++) b[j] = a[j] + a[j + 8];
  for (int j = 0; j < 4; j++) c[j] = b[j] + b[j + 4];
  d0 = c[0] + c[2];
  d1 = c[1] + c[3];
  return d0 + d1;
}

float tl_kern_dot(const float *a, const float *b, size_t n) {
  float acc[TL_KERN_LANES] = {0};
  size_t i = 0;
  for (; i + TL_KERN_LANES <= n; i += TL_KERN_LANES)
    for (size_t k = 0; k < TL_KERN_LANES; k++) acc[k] += a[i + k] * b[i + k];
  for (size_t k = 0; i < n; i++, k++) acc[k] += a[i] * b[i];
  return tl_kern_tree(acc);
}

/* Sixteen sums at a time in a local array, j outer, so the compiler keeps
 * them in vector registers and the rows of v are read contiguously,
 * without changing any sum's order. */
void tl_kern_weighted(const float *p, size_t count, const float *v, size_t stride, size_t d,
                      float *out) {
  for (size_t e0 = 0; e0 < d; e0 += 16) {
    float acc[16] = {0};
    size_t m = d - e0 < 16 ? d - e0 : 16;
    if (m == 16)
      for (size_t j = 0; j < count; j++)
        for (size_t k = 0; k < 16; k++) acc[k] += p[j] * v[j * stride + e0 + k];
    else
      for (size_t j = 0; j < count; j++)
        for (size_t k = 0; k < m; k++) acc[k] += p[j] * v[j * stride + e0 + k];
    memcpy(out + e0, acc, m * sizeof(float));
  }
}

void tl_kern_dots(const float *q, const float *k, size_t stride, size_t count, size_t n,
                  float *out) {
  for (size_t j = 0; j < count; j++) out[j] = tl_kern_dot(q, k + j * stride, n);
}

void tl_kern_dots_k(const tl_kernels *k, const float *q, const float *keys, size_t stride,
                    size_t count, size_t n, float *out) {
  if (k->dots != NULL) k->dots(q, keys, stride, count, n, out);
  else tl_kern_dots(q, keys, stride, count, n, out);
}

void tl_kern_weighted_k(const tl_kernels *k, const float *p, size_t count, const float *v,
                        size_t stride, size_t d, float *out) {
  if (k->weighted != NULL) k->weighted(p, count, v, stride, d, out);
  else tl_kern_weighted(p, count, v, stride, d, out);
}

/* RNE of r, |r| <= 127 (F-3): the integer part by truncation, then the
 * half-way rule on the exact remainder. */
static int8_t rne127(float r) {
  int t = (int)r; /* toward zero, exact for |r| <= 127 */
  float rem = r - (float)t; /* exact: r and t share the exponent range */
  if (rem > 0.5f || (rem == 0.5f && (t & 1))) t++;
  else if (rem < -0.5f || (rem == -0.5f && (t & 1))) t--;
  return (int8_t)t;
}

/* bias[g] = -k * (sum of codes 4g .. 4g+3), g < 8. */
static void group_bias(const int8_t *codes, int32_t k, int32_t *bias) {
  for (size_t g = 0; g < 8; g++) {
    int32_t s = 0;
    for (size_t i = 0; i < 4; i++) s += codes[4 * g + i];
    bias[g] = -k * s;
  }
}

void tl_kern_quantize_x(const float *x, size_t n, float *scales, int8_t *q8,
                        int32_t *q8_bias, int8_t *q4, int32_t *q4_bias) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK;
  for (size_t b = 0; b < nb; b++) {
    size_t lo = b * TL_QUANT_BLOCK, m = n - lo < TL_QUANT_BLOCK ? n - lo : TL_QUANT_BLOCK;
    int8_t codes[TL_QUANT_BLOCK] = {0};
    float a = 0.0f, d;
    for (size_t i = 0; i < m; i++) {
      float v = x[lo + i] < 0 ? -x[lo + i] : x[lo + i];
      if (v > a) a = v;
    }
    d = a == 0.0f ? 0.0f : a / 127.0f;
    if (d != 0.0f)
      for (size_t i = 0; i < m; i++) {
        float r = x[lo + i] / d;
        r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
        codes[i] = rne127(r);
      }
    scales[b] = d;
    if (q8 != NULL) {
      memcpy(q8 + lo, codes, TL_QUANT_BLOCK);
      group_bias(codes, 128, q8_bias + 8 * b);
    }
    if (q4 != NULL) {
      /* even elements, then odd: the order of the low and high nibbles */
      for (size_t k = 0; k < 16; k++) {
        q4[lo + k] = codes[2 * k];
        q4[lo + 16 + k] = codes[2 * k + 1];
      }
      group_bias(q4 + lo, 8, q4_bias + 8 * b);
    }
  }
}

/* Codes of the q4 block at blk in the permuted order of tl_kern_x.q4. */
static void q4_codes(const uint8_t *blk, int8_t *q) {
  for (size_t k = 0; k < 16; k++) {
    q[k] = (int8_t)((blk[4 + k] & 0xF) - 8);
    q[16 + k] = (int8_t)((blk[4 + k] >> 4) - 8);
  }
}

/* F-4 / F-5: both layouts reduce to 8 groups of 4 consecutive codes once
 * the q4 codes are in the permuted order. */
static void rows_quant(tl_qtype type, const uint8_t *w, size_t row_bytes,
                       size_t n, const tl_kern_x *x, size_t rows, float *y) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK;
  size_t bb = type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES : TL_QUANT_Q4_BLOCK_BYTES;
  const int8_t *xc = type == TL_QTYPE_Q8 ? x->q8 : x->q4;
  for (size_t r = 0; r < rows; r++) {
    float acc[TL_KERN_LANES] = {0};
    for (size_t b = 0; b < nb; b++) {
      const uint8_t *blk = w + r * row_bytes + b * bb;
      int8_t q[TL_QUANT_BLOCK];
      float p = tl_bits_to_f32(tl_load_le32(blk)) * x->scales[TL_MUTANT_BLOCK(b)];
      if (type == TL_QTYPE_Q8) memcpy(q, blk + 4, TL_QUANT_BLOCK);
      else q4_codes(blk, q);
      for (size_t g = 0; g < 8; g++) {
        int32_t s = 0;
        for (size_t k = 0; k < 4; k++)
          s += (int32_t)q[4 * g + k] * xc[b * TL_QUANT_BLOCK + 4 * g + k];
        acc[8 * (b % 2) + g] += (float)s * p;
      }
    }
    y[r] = tl_kern_tree(acc);
  }
}

static float elem(tl_qtype type, const uint8_t *row, size_t i) {
  switch (type) {
    case TL_QTYPE_F16:
      return tl_f16_to_f32(tl_load_le16(row + 2 * i));
    case TL_QTYPE_BF16:
      return tl_bf16_to_f32(tl_load_le16(row + 2 * i));
    default:
      return tl_bits_to_f32(tl_load_le32(row + 4 * i));
  }
}

/* F-6. */
static void rows_float(tl_qtype type, const uint8_t *w, size_t row_bytes,
                       size_t n, const tl_kern_x *x, size_t rows, float *y) {
  for (size_t r = 0; r < rows; r++) {
    float acc[TL_KERN_LANES] = {0};
    for (size_t i = 0; i < TL_MUTANT_FLOAT_LEN(n); i++)
      acc[i % TL_KERN_LANES] += elem(type, w + r * row_bytes, i) * x->f[i];
    y[r] = tl_kern_tree(acc);
  }
}

#define TL_KERN_SCALAR_FN(name, type, impl)                                  \
  static void name(const uint8_t *w, size_t row_bytes, size_t n,            \
                   const tl_kern_x *x, size_t rows, float *y) {              \
    impl(type, w, row_bytes, n, x, rows, y);                                 \
  }
TL_KERN_SCALAR_FN(scalar_f32, TL_QTYPE_F32, rows_float)
TL_KERN_SCALAR_FN(scalar_f16, TL_QTYPE_F16, rows_float)
TL_KERN_SCALAR_FN(scalar_bf16, TL_QTYPE_BF16, rows_float)
TL_KERN_SCALAR_FN(scalar_q8, TL_QTYPE_Q8, rows_quant)
TL_KERN_SCALAR_FN(scalar_q4, TL_QTYPE_Q4, rows_quant)
#undef TL_KERN_SCALAR_FN

static const tl_kernels scalar = {
    TL_KERN_SCALAR, "scalar", {scalar_f32, scalar_f16, scalar_bf16, scalar_q8, scalar_q4},
    {NULL, NULL, NULL, NULL, NULL},
    NULL, NULL, NULL};

#ifdef __wasm_simd128__
static const tl_kernels wasm_simd = {
    TL_KERN_WASM_SIMD128,
    "wasm-simd128",
    {tl_wasm_rows_f32, tl_wasm_rows_f16, tl_wasm_rows_bf16, tl_wasm_rows_q8, tl_wasm_rows_q4},
    {NULL, NULL, NULL, NULL, NULL},
    NULL, NULL, NULL};
#endif

const tl_kernels *tl_kernels_get(tl_kern_isa isa) {
  switch (isa) {
    case TL_KERN_SCALAR:
      return &scalar;
#if TL_KERN_HAVE_X86
    case TL_KERN_AVX2:
      return &tl_kernels_avx2;
    case TL_KERN_AVX512:
      return &tl_kernels_avx512;
#endif
#if TL_KERN_HAVE_NEON
    case TL_KERN_NEON:
      return &tl_kernels_neon;
    case TL_KERN_NEON_DOTPROD:
      return &tl_kernels_neon_dotprod;
#endif
#ifdef __wasm_simd128__
    case TL_KERN_WASM_SIMD128:
      return &wasm_simd;
#endif
    default:
      return NULL;
  }
}

void tl_kern_quantize(const tl_kernels *k, const float *x, size_t n, float *scales,
                      int8_t *q8, int32_t *q8_bias, int8_t *q4, int32_t *q4_bias) {
  if (k->quantize != NULL) k->quantize(x, n, scales, q8, q8_bias, q4, q4_bias);
  else tl_kern_quantize_x(x, n, scales, q8, q8_bias, q4, q4_bias);
}

void tl_kern_tile(const tl_kernels *k, tl_qtype type, const uint8_t *w, size_t row_bytes,
                  size_t n, const tl_kern_x *xs, size_t tokens, size_t rows, float *y,
                  size_t y_stride) {
  if (k->tile[type] != NULL) {
    k->tile[type](w, row_bytes, n, xs, tokens, rows, y, y_stride);
    return;
  }
  for (size_t t = 0; t < tokens; t++) k->rows[type](w, row_bytes, n, &xs[t], rows, y + t * y_stride);
}

/* Whether one of the 8 bytes of w is 0 (exact, no false positives). */
static bool has_zero_byte(uint64_t w) {
  return ((w - 0x0101010101010101u) & ~w & 0x8080808080808080u) != 0;
}

/* The common case of Q-17, word by word: a full block (no padding) with a
 * positive finite scale small enough that no code times it overflows, and
 * no code -128 (q8) or nibble 0 (q4). False means "look closer", not
 * "invalid": block_valid decides. */
static bool block_plainly_valid(tl_qtype type, const uint8_t *blk, size_t present) {
  uint32_t bits = tl_load_le32(blk);
  float d = tl_bits_to_f32(bits), top;
  if (present != TL_QUANT_BLOCK || bits == 0 || bits >= 0x7F800000u) return false;
  top = (type == TL_QTYPE_Q8 ? 127.0f : 7.0f) * d;
  if (!(top - top == 0.0f)) return false;
  for (size_t k = 0; k < (type == TL_QTYPE_Q8 ? 4u : 2u); k++) {
    uint64_t w = tl_load_le64(blk + 4 + 8 * k);
    if (type == TL_QTYPE_Q8 ? has_zero_byte(w ^ 0x8080808080808080u)
                            : has_zero_byte(w & 0x0F0F0F0F0F0F0F0Fu) ||
                                  has_zero_byte((w >> 4) & 0x0F0F0F0F0F0F0F0Fu))
      return false;
  }
  return true;
}

/* Q-17 for one block's stored bytes. */
static bool block_valid(tl_qtype type, const uint8_t *blk, size_t present) {
  uint32_t bits = tl_load_le32(blk);
  float d = tl_bits_to_f32(bits);
  int maxabs = 0;
  if ((bits >> 31) != 0 || ((bits >> 23) & 0xFF) == 0xFF) return false;
  for (size_t i = 0; i < TL_QUANT_BLOCK; i++) {
    int q;
    if (type == TL_QTYPE_Q8) {
      q = (int8_t)blk[4 + i];
      if (q == -128) return false;
    } else {
      int u = (blk[4 + i / 2] >> (4 * (i & 1))) & 0xF;
      if (u == 0) return false;
      q = u - 8;
    }
    if (q != 0 && (i >= present || bits == 0)) return false;
    if ((q < 0 ? -q : q) > maxabs) maxabs = q < 0 ? -q : q;
  }
  {
    float top = (float)maxabs * d;
    return top - top == 0.0f; /* finite */
  }
}

tl_status tl_kern_validate(tl_qtype type, const uint8_t *w, size_t row_bytes,
                           size_t n, size_t r0, size_t r1) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK, bb;
  if (type != TL_QTYPE_Q8 && type != TL_QTYPE_Q4) return TL_OK;
  bb = type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES : TL_QUANT_Q4_BLOCK_BYTES;
  for (size_t r = r0; r < r1; r++)
    for (size_t b = 0; b < nb; b++) {
      size_t present = n - b * TL_QUANT_BLOCK;
      const uint8_t *blk = w + r * row_bytes + b * bb;
      if (present > TL_QUANT_BLOCK) present = TL_QUANT_BLOCK;
      if (!block_plainly_valid(type, blk, present) && !block_valid(type, blk, present))
        return TL_ERR_INVALID_MODEL;
    }
  return TL_OK;
}
