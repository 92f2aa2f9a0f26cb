/* The scalar twins of fast/4 (docs/fast-profile.md), written as the spec
 * reads, and the dispatch table. */
#include "kernels/kernels.h"

#include <stdbool.h>
#include <string.h>

#include "bytes.h"
#include "kernels/kernels_impl.h"
#include "kernels/mutant.h"
#include "math/detmath.h"

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

void tl_kern_dots2_k(const tl_kernels *k, const float *q0, const float *q1, const float *keys,
                     size_t stride, size_t count, size_t n, float *out0, float *out1) {
  if (k->dots2 != NULL) {
    k->dots2(q0, q1, keys, stride, count, n, out0, out1);
    return;
  }
  tl_kern_dots_k(k, q0, keys, stride, count, n, out0);
  tl_kern_dots_k(k, q1, keys, stride, count, n, out1);
}

void tl_kern_weighted2_k(const tl_kernels *k, const float *p0, const float *p1, size_t count,
                         const float *v, size_t stride, size_t d, float *out0, float *out1) {
  if (k->weighted2 != NULL) {
    k->weighted2(p0, p1, count, v, stride, d, out0, out1);
    return;
  }
  tl_kern_weighted_k(k, p0, count, v, stride, d, out0);
  tl_kern_weighted_k(k, p1, count, v, stride, d, out1);
}

void tl_kern_dots_n(const tl_kernels *k, const float *const *q, size_t nq, const float *keys,
                    size_t stride, size_t count, size_t n, float *const *out) {
  size_t i = 0;
  if (k->dots_n != NULL) {
    k->dots_n(q, nq, keys, stride, count, n, out);
    return;
  }
  for (; i + 2 <= nq; i += 2)
    tl_kern_dots2_k(k, q[i], q[i + 1], keys, stride, count, n, out[i], out[i + 1]);
  if (i < nq) tl_kern_dots_k(k, q[i], keys, stride, count, n, out[i]);
}

void tl_kern_weighted_n(const tl_kernels *k, const float *const *p, const size_t *counts,
                        size_t nq, const float *v, size_t stride, size_t d, float *const *out) {
  size_t i = 0;
  if (k->weighted_n != NULL) {
    k->weighted_n(p, counts, nq, v, stride, d, out);
    return;
  }
  for (; i + 2 <= nq && counts[i] == counts[i + 1]; i += 2)
    tl_kern_weighted2_k(k, p[i], p[i + 1], counts[i], v, stride, d, out[i], out[i + 1]);
  for (; i < nq; i++) tl_kern_weighted_k(k, p[i], counts[i], v, stride, d, out[i]);
}

void tl_kern_exps(const float *x, float sub, size_t n, float *out) {
  for (size_t i = 0; i < n; i++) out[i] = tl_expf(x[i] - sub);
}

void tl_kern_exps_k(const tl_kernels *k, const float *x, float sub, size_t n, float *out) {
  if (k->exps != NULL) k->exps(x, sub, n, out);
  else tl_kern_exps(x, sub, n, out);
}

void tl_kern_f16_to_f32(const uint16_t *h, size_t n, float *out) {
  for (size_t i = 0; i < n; i++) out[i] = tl_f16_to_f32(h[i]);
}

void tl_kern_f16_to_f32_k(const tl_kernels *k, const uint16_t *h, size_t n, float *out) {
  if (k->f16_to_f32 != NULL) k->f16_to_f32(h, n, out);
  else tl_kern_f16_to_f32(h, n, out);
}

void tl_kern_f32_to_f16(const float *x, size_t n, uint16_t *out) {
  for (size_t i = 0; i < n; i++) out[i] = tl_f32_to_f16(x[i]);
}

void tl_kern_f32_to_f16_k(const tl_kernels *k, const float *x, size_t n, uint16_t *out) {
  if (k->f32_to_f16 != NULL) k->f32_to_f16(x, n, out);
  else tl_kern_f32_to_f16(x, n, out);
}

void tl_kern_dots_h(const float *const *q, size_t nq, const uint16_t *k, size_t stride,
                    size_t count, size_t n, float *const *out) {
  for (size_t i = 0; i < nq; i++)
    for (size_t j = 0; j < count; j++) {
      float acc[TL_KERN_LANES] = {0};
      for (size_t e = 0; e < n; e++)
        acc[e % TL_KERN_LANES] += q[i][e] * tl_f16_to_f32(k[j * stride + e]);
      out[i][j] = tl_kern_tree(acc);
    }
}

void tl_kern_weighted_h(const float *const *p, const size_t *counts, size_t nq,
                        const uint16_t *v, size_t stride, size_t d, float *const *out) {
  for (size_t i = 0; i < nq; i++)
    for (size_t e = 0; e < d; e++) {
      float acc = 0.0f;
      for (size_t j = 0; j < counts[i]; j++) acc += p[i][j] * tl_f16_to_f32(v[j * stride + e]);
      out[i][e] = acc;
    }
}

void tl_kern_dots_h_k(const tl_kernels *k, const float *const *q, size_t nq,
                      const uint16_t *keys, size_t stride, size_t count, size_t n,
                      float *const *out) {
  if (k->dots_h != NULL) k->dots_h(q, nq, keys, stride, count, n, out);
  else tl_kern_dots_h(q, nq, keys, stride, count, n, out);
}

void tl_kern_weighted_h_k(const tl_kernels *k, const float *const *p, const size_t *counts,
                          size_t nq, const uint16_t *v, size_t stride, size_t d,
                          float *const *out) {
  if (k->weighted_h != NULL) k->weighted_h(p, counts, nq, v, stride, d, out);
  else tl_kern_weighted_h(p, counts, nq, v, stride, d, out);
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

size_t tl_kern_groups(size_t n) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK;
  return (nb + TL_KERN_GROUP - 1) / TL_KERN_GROUP;
}

/* Block b's 32 codes (element order), scale and code sum into x's layout. */
static void place_block(const int8_t *block, size_t b, float d, int8_t *codes, float *scales,
                        int32_t *q8_bias, int32_t *q4_bias) {
  int8_t *at = codes + b / TL_KERN_GROUP * TL_KERN_GROUP_CODES + 4 * (b % TL_KERN_GROUP);
  int32_t sum = 0;
  for (size_t s = 0; s < 8; s++)
    for (size_t k = 0; k < 4; k++) {
      at[64 * s + k] = block[4 * s + k];
      sum += block[4 * s + k];
    }
  scales[b] = d;
  q8_bias[b] = -128 * sum;
  q4_bias[b] = -8 * sum;
}

void tl_kern_quantize_x(const float *x, size_t n, int8_t *codes, float *scales,
                        int32_t *q8_bias, int32_t *q4_bias) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK;
  for (size_t b = 0; b < tl_kern_groups(n) * TL_KERN_GROUP; b++) {
    size_t lo = b * TL_QUANT_BLOCK, m = b >= nb ? 0 : n - lo < TL_QUANT_BLOCK ? n - lo : TL_QUANT_BLOCK;
    int8_t block[TL_QUANT_BLOCK] = {0};
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
        block[i] = rne127(r);
      }
    place_block(block, b, d, codes, scales, q8_bias, q4_bias);
  }
}

/* The code of element i (< 32) of block j of a packed group of m blocks
 * whose codes start at c (tl_kern_pack's layout). */
static int packed_code(tl_qtype type, const uint8_t *c, size_t m, size_t j, size_t i) {
  size_t s = i / 4, k = i % 4;
  if (type == TL_QTYPE_Q8) return (int8_t)(c[4 * m * s + 4 * j + k] ^ 0x80);
  return ((c[4 * m * (s / 2) + 4 * j + k] >> (4 * (s % 2))) & 0xF) - 8;
}

/* One group of m q8 blocks (in: stored, out: packed), four codes at a
 * time: each step's 4 bytes of a block move as one word, offset to
 * unsigned. */
static void pack_group_q8(const uint8_t *in, size_t m, uint8_t *out) {
  uint8_t *c = out + 4 * m;
  for (size_t j = 0; j < m; j++) {
    const uint8_t *blk = in + j * TL_QUANT_Q8_BLOCK_BYTES;
    memcpy(out + 4 * j, blk, 4);
    for (size_t s = 0; s < 8; s++)
      tl_store_le32(c + 4 * m * s + 4 * j, tl_load_le32(blk + 4 + 4 * s) ^ 0x80808080u);
  }
}

/* The same for q4: chunk c (elements 8c .. 8c+7, stored in bytes 4c ..
 * 4c+3 as low/high nibble pairs) becomes 4 bytes, byte k holding element
 * 8c + k's nibble low and 8c + 4 + k's high. */
static void pack_group_q4(const uint8_t *in, size_t m, uint8_t *out) {
  uint8_t *c = out + 4 * m;
  for (size_t j = 0; j < m; j++) {
    const uint8_t *blk = in + j * TL_QUANT_Q4_BLOCK_BYTES;
    memcpy(out + 4 * j, blk, 4);
    for (size_t k = 0; k < 4; k++) {
      const uint8_t *b = blk + 4 + 4 * k;
      uint8_t *o = c + 4 * m * k + 4 * j;
      o[0] = (uint8_t)((b[0] & 0x0F) | (b[2] & 0x0F) << 4);
      o[1] = (uint8_t)((b[0] >> 4) | (b[2] & 0xF0));
      o[2] = (uint8_t)((b[1] & 0x0F) | (b[3] & 0x0F) << 4);
      o[3] = (uint8_t)((b[1] >> 4) | (b[3] & 0xF0));
    }
  }
}

/* Rows [r0, r1) of q8/q4 rows, group by group, through one of the group
 * functions above (pack or unpack: same byte count per group); each group
 * is copied out first, so dst may be src. */
typedef void group_fn(const uint8_t *in, size_t m, uint8_t *out);
static void regroup_rows(tl_qtype type, group_fn *q8, group_fn *q4, const uint8_t *src,
                         uint8_t *dst, size_t row_bytes, size_t n, size_t r0, size_t r1) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK, bb;
  if (type != TL_QTYPE_Q8 && type != TL_QTYPE_Q4) return;
  bb = type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES : TL_QUANT_Q4_BLOCK_BYTES;
  for (size_t r = r0; r < r1; r++)
    for (size_t b = 0; b < nb; b += TL_KERN_GROUP) {
      size_t m = nb - b < TL_KERN_GROUP ? nb - b : TL_KERN_GROUP;
      uint8_t in[TL_KERN_GROUP * TL_QUANT_Q8_BLOCK_BYTES];
      memcpy(in, src + r * row_bytes + b * bb, m * bb);
      (type == TL_QTYPE_Q8 ? q8 : q4)(in, m, dst + r * row_bytes + b * bb);
    }
}

void tl_kern_pack(tl_qtype type, const uint8_t *src, uint8_t *dst, size_t row_bytes, size_t n,
                  size_t r0, size_t r1) {
  regroup_rows(type, pack_group_q8, pack_group_q4, src, dst, row_bytes, n, r0, r1);
}

/* The inverses of pack_group_q8/q4: a packed group of m blocks back to
 * the stored blocks (out must not overlap in). */
static void unpack_group_q8(const uint8_t *in, size_t m, uint8_t *out) {
  const uint8_t *c = in + 4 * m;
  for (size_t j = 0; j < m; j++) {
    uint8_t *blk = out + j * TL_QUANT_Q8_BLOCK_BYTES;
    memcpy(blk, in + 4 * j, 4);
    for (size_t s = 0; s < 8; s++)
      tl_store_le32(blk + 4 + 4 * s, tl_load_le32(c + 4 * m * s + 4 * j) ^ 0x80808080u);
  }
}

static void unpack_group_q4(const uint8_t *in, size_t m, uint8_t *out) {
  const uint8_t *c = in + 4 * m;
  for (size_t j = 0; j < m; j++) {
    uint8_t *blk = out + j * TL_QUANT_Q4_BLOCK_BYTES;
    memcpy(blk, in + 4 * j, 4);
    for (size_t k = 0; k < 4; k++) {
      const uint8_t *o = c + 4 * m * k + 4 * j;
      uint8_t *b = blk + 4 + 4 * k;
      b[0] = (uint8_t)((o[0] & 0x0F) | (o[1] & 0x0F) << 4);
      b[1] = (uint8_t)((o[2] & 0x0F) | (o[3] & 0x0F) << 4);
      b[2] = (uint8_t)((o[0] >> 4) | (o[1] & 0xF0));
      b[3] = (uint8_t)((o[2] >> 4) | (o[3] & 0xF0));
    }
  }
}

/* Group g (m blocks) of a packed row, unpacked into out. */
static void unpack_group(tl_qtype type, const uint8_t *g, size_t m, uint8_t *out) {
  if (type == TL_QTYPE_Q8) unpack_group_q8(g, m, out);
  else unpack_group_q4(g, m, out);
}

void tl_kern_unpack(tl_qtype type, const uint8_t *src, uint8_t *dst, size_t row_bytes,
                    size_t n, size_t r0, size_t r1) {
  regroup_rows(type, unpack_group_q8, unpack_group_q4, src, dst, row_bytes, n, r0, r1);
}

const uint8_t *tl_kern_pad_group(tl_qtype type, const uint8_t *g, size_t m, uint8_t *out) {
  size_t step = type == TL_QTYPE_Q8 ? 8 : 4; /* code rows of 4 bytes per block */
  uint8_t zero = type == TL_QTYPE_Q8 ? 0x80 : 0x00;
  memset(out, 0, 4 * TL_KERN_GROUP);
  memcpy(out, g, 4 * m);
  for (size_t s = 0; s < step; s++) {
    uint8_t *row = out + 4 * TL_KERN_GROUP + 4 * TL_KERN_GROUP * s;
    memset(row, zero, 4 * TL_KERN_GROUP);
    memcpy(row, g + 4 * m + 4 * m * s, 4 * m);
  }
  return out;
}

void tl_kern_unpack_row(tl_qtype type, const uint8_t *row, size_t n, float *out) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK;
  size_t bb = type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES : TL_QUANT_Q4_BLOCK_BYTES;
  for (size_t b = 0; b < nb; b += TL_KERN_GROUP) {
    size_t m = nb - b < TL_KERN_GROUP ? nb - b : TL_KERN_GROUP;
    const uint8_t *g = row + b * bb;
    for (size_t j = 0; j < m; j++) {
      float d = tl_bits_to_f32(tl_load_le32(g + 4 * j));
      for (size_t i = 0; i < TL_QUANT_BLOCK && (b + j) * TL_QUANT_BLOCK + i < n; i++)
        out[(b + j) * TL_QUANT_BLOCK + i] = (float)packed_code(type, g + 4 * m, m, j, i) * d;
    }
  }
}

/* The exact integer sum of block j of a packed group of m blocks (codes
 * at c, tl_kern_pack's layout) with its activation codes (xc: the
 * group's, tl_kern_x's layout): F-4's s_b. */
static int32_t block_sum(tl_qtype type, const uint8_t *c, size_t m, size_t j, const int8_t *xc) {
  int32_t s = 0;
  for (size_t st = 0; st < 8; st++)
    for (size_t k = 0; k < 4; k++) s += packed_code(type, c, m, j, 4 * st + k) * xc[64 * st + 4 * j + k];
  return s;
}

/* F-4 / F-5 on packed rows: each block's exact integer sum (its 8 steps
 * of 4 codes, read where tl_kern_pack put them), scaled once. */
static void rows_quant(tl_qtype type, const uint8_t *w, size_t row_bytes,
                       size_t n, const tl_kern_x *x, size_t rows, float *y) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK;
  size_t bb = type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES : TL_QUANT_Q4_BLOCK_BYTES;
  for (size_t r = 0; r < rows; r++) {
    float acc[TL_KERN_LANES] = {0};
    for (size_t g0 = 0; g0 < nb; g0 += TL_KERN_GROUP) {
      size_t m = nb - g0 < TL_KERN_GROUP ? nb - g0 : TL_KERN_GROUP;
      const uint8_t *g = w + r * row_bytes + g0 * bb, *c = g + 4 * m;
      const int8_t *xc = x->codes + g0 / TL_KERN_GROUP * TL_KERN_GROUP_CODES;
      for (size_t j = 0; j < m; j++) {
        size_t b = g0 + j;
        float p = tl_bits_to_f32(tl_load_le32(g + 4 * j)) * x->scales[TL_MUTANT_BLOCK(b)];
        acc[b % TL_KERN_LANES] += (float)block_sum(type, c, m, j, xc) * p;
      }
    }
    y[r] = tl_kern_tree(acc);
  }
}

static double magnitude(float v) { return v < 0 ? -(double)v : (double)v; }

/* W-3 (docs/webgpu-profile.md): with S = the sum over blocks of
 * |s_b dw_b dx_b| (exact magnitudes), F = 2^-126 (the sum over blocks of
 * |s_b| (max(|dw_b|, |dx_b|) + 2) + 4 nb + 45) (what flushing subnormal
 * operands and results can move) and k = 6 + ceil(nb / 16) (the longest
 * chain of rounded operations: two products, a lane's additions, the
 * tree's four), the bound is 2 gamma_k (S + F) + 2 F. */
double tl_kern_device_bound(tl_qtype type, const uint8_t *row, size_t n, const tl_kern_x *x) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK;
  size_t bb = type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES : TL_QUANT_Q4_BLOCK_BYTES;
  double mag = 0.0, flush = 0.0, k = 6.0 + (double)((nb + TL_KERN_GROUP - 1) / TL_KERN_GROUP);
  double u = 0x1p-24, gamma = k * u / (1.0 - k * u), tiny = 0x1p-126;
  for (size_t g0 = 0; g0 < nb; g0 += TL_KERN_GROUP) {
    size_t m = nb - g0 < TL_KERN_GROUP ? nb - g0 : TL_KERN_GROUP;
    const uint8_t *g = row + g0 * bb, *c = g + 4 * m;
    const int8_t *xc = x->codes + g0 / TL_KERN_GROUP * TL_KERN_GROUP_CODES;
    for (size_t j = 0; j < m; j++) {
      double dw = magnitude(tl_bits_to_f32(tl_load_le32(g + 4 * j)));
      double dx = magnitude(x->scales[g0 + j]);
      double s = magnitude((float)block_sum(type, c, m, j, xc)); /* |s| < 2^24: exact */
      mag += s * dw * dx;
      flush += s * ((dw > dx ? dw : dx) + 2.0);
    }
  }
  flush = tiny * (flush + 4.0 * (double)nb + 45.0);
  return 2.0 * gamma * (mag + flush) + 2.0 * flush;
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
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, tl_kern_dots_h,
    tl_kern_weighted_h};

#ifdef __wasm_simd128__
static const tl_kernels wasm_simd = {
    TL_KERN_WASM_SIMD128,
    "wasm-simd128",
    {tl_wasm_rows_f32, tl_wasm_rows_f16, tl_wasm_rows_bf16, tl_wasm_rows_q8, tl_wasm_rows_q4},
    {NULL, NULL, NULL, tl_wasm_tile_q8, tl_wasm_tile_q4},
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, tl_wasm_exps, tl_wasm_f16_to_f32, NULL, NULL, NULL};
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
    case TL_KERN_AVX_VNNI:
      return &tl_kernels_avx_vnni;
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

const tl_kernels *tl_kernels_avx_vnni_twin(void) {
#if TL_KERN_HAVE_X86
  return &tl_kernels_avx_vnni_evex;
#else
  return NULL;
#endif
}

void tl_kern_quantize(const tl_kernels *k, const float *x, size_t n, int8_t *codes,
                      float *scales, int32_t *q8_bias, int32_t *q4_bias) {
  if (k->quantize != NULL) k->quantize(x, n, codes, scales, q8_bias, q4_bias);
  else tl_kern_quantize_x(x, n, codes, scales, q8_bias, q4_bias);
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

/* block_plainly_valid for a packed group of m full blocks: each scale
 * positive, finite and small enough, then every code word at once (the
 * packed codes are the stored ones permuted, q8 offset by 0x80: a code
 * -128 is a zero byte, a q4 nibble 0 a zero nibble). */
static bool group_plainly_valid(tl_qtype type, const uint8_t *g, size_t m) {
  size_t codes = (type == TL_QTYPE_Q8 ? 32u : 16u) * m;
  for (size_t j = 0; j < m; j++) {
    uint32_t bits = tl_load_le32(g + 4 * j);
    float top = (type == TL_QTYPE_Q8 ? 127.0f : 7.0f) * tl_bits_to_f32(bits);
    if (bits == 0 || bits >= 0x7F800000u || !(top - top == 0.0f)) return false;
  }
  /* no early exit: a loop the compiler vectorises (valid groups are the
   * common case) */
  if (type == TL_QTYPE_Q8) {
    uint64_t any = 0;
    for (size_t k = 0; k < codes; k += 8) {
      uint64_t w = tl_load_le64(g + 4 * m + k);
      any |= (w - 0x0101010101010101u) & ~w;
    }
    return (any & 0x8080808080808080u) == 0;
  } else {
    uint64_t any = 0;
    for (size_t k = 0; k < codes; k += 8) {
      uint64_t w = tl_load_le64(g + 4 * m + k), lo = w & 0x0F0F0F0F0F0F0F0Fu,
               hi = (w >> 4) & 0x0F0F0F0F0F0F0F0Fu;
      any |= ((lo - 0x0101010101010101u) & ~lo) | ((hi - 0x0101010101010101u) & ~hi);
    }
    return (any & 0x8080808080808080u) == 0;
  }
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

tl_status tl_kern_validate(tl_qtype type, bool packed, const uint8_t *w, size_t row_bytes,
                           size_t n, size_t r0, size_t r1) {
  size_t nb = (n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK, bb;
  if (type != TL_QTYPE_Q8 && type != TL_QTYPE_Q4) return TL_OK;
  bb = type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES : TL_QUANT_Q4_BLOCK_BYTES;
  for (size_t r = r0; r < r1; r++)
    for (size_t b = 0; b < nb; b += TL_KERN_GROUP) {
      size_t m = nb - b < TL_KERN_GROUP ? nb - b : TL_KERN_GROUP;
      const uint8_t *g = w + r * row_bytes + b * bb;
      uint8_t stored[TL_KERN_GROUP * TL_QUANT_Q8_BLOCK_BYTES];
      /* a packed group is checked as the stored blocks it stands for */
      if (packed && (b + m) * TL_QUANT_BLOCK <= n && group_plainly_valid(type, g, m)) continue;
      if (packed) {
        unpack_group(type, g, m, stored);
        g = stored;
      }
      for (size_t j = 0; j < m; j++) {
        size_t present = n - (b + j) * TL_QUANT_BLOCK;
        if (present > TL_QUANT_BLOCK) present = TL_QUANT_BLOCK;
        if (!block_plainly_valid(type, g + j * bb, present) &&
            !block_valid(type, g + j * bb, present))
          return TL_ERR_INVALID_MODEL;
      }
    }
  return TL_OK;
}
