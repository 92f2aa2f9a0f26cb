/* docs/quant.md. The f16/bf16 conversions work on bit patterns with integer
 * arithmetic only; q8/q4 use exactly the f32 operations the spec names (one
 * division for the scale, one per code, one multiply per decoded element),
 * which the strict lane's flags (-ffp-contract=off, no fast-math,
 * FLT_EVAL_METHOD 0 on x86-64 and wasm32) keep identical everywhere. */
#include "quant/quant.h"

#include <stdbool.h>
#include <string.h>

#include "bytes.h"
#include "checked.h"

static bool bits_finite(uint32_t b) { return (b & 0x7F800000u) != 0x7F800000u; }

/* */
uint16_t tl_f32_to_f16(float x) {
  uint32_t b = tl_f32_to_bits(x);
  uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
  uint32_t exp = (b >> 23) & 0xFFu, frac = b & 0x7FFFFFu;
  int32_t e = (int32_t)exp - 127;
  if (exp == 0xFFu)
    return (uint16_t)(sign | (frac ? 0x7E00u | (frac >> 13) : 0x7C00u));
  /* Zero and f32 subnormals (< 2^-126) are below half of 2^-24. */
  if (exp == 0 || e < -25) return sign;
  if (e > 15) return (uint16_t)(sign | 0x7C00u);
  if (e >= -14) {
    uint32_t h = ((uint32_t)(e + 15) << 10) | (frac >> 13);
    uint32_t rest = frac & 0x1FFFu;
    /* A carry may reach the exponent (or Inf): that is the RNE result. */
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  {
    /* f16 subnormal: value / 2^-24 = m * 2^(e + 1), shift in [14, 24]. */
    uint32_t m = frac | 0x800000u;
    unsigned s = (unsigned)(-(e + 1));
    uint32_t h = m >> s, rest = m & ((UINT32_C(1) << s) - 1);
    uint32_t half = UINT32_C(1) << (s - 1);
    if (rest > half || (rest == half && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
}

/* */
float tl_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, frac = h & 0x3FFu;
  if (exp == 0x1Fu) return tl_bits_to_f32(sign | 0x7F800000u | frac << 13);
  if (exp == 0) {
    uint32_t e = 127 - 14;
    if (frac == 0) return tl_bits_to_f32(sign);
    while (!(frac & 0x400u)) {
      frac <<= 1;
      e--;
    }
    return tl_bits_to_f32(sign | e << 23 | (frac & 0x3FFu) << 13);
  }
  return tl_bits_to_f32(sign | (exp + 127 - 15) << 23 | frac << 13);
}

uint16_t tl_f32_to_bf16(float x) {
  uint32_t b = tl_f32_to_bits(x);
  uint32_t h = b >> 16, rest = b & 0xFFFFu;
  if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu))
    return (uint16_t)(h | 0x40u);
  if (rest > 0x8000u || (rest == 0x8000u && (h & 1u))) h++;
  return (uint16_t)h;
}

float tl_bf16_to_f32(uint16_t h) { return tl_bits_to_f32((uint32_t)h << 16); }

/* --- sizes ---------------------------------------------------------------- */

tl_status tl_quant_row_bytes(tl_qtype type, size_t n, size_t *out) {
  size_t nb = n / TL_QUANT_BLOCK + (n % TL_QUANT_BLOCK != 0);
  if (!out) return TL_ERR_INVALID_ARGUMENT;
  switch (type) {
    case TL_QTYPE_F32:
      return tl_mul_size(n, 4, out);
    case TL_QTYPE_F16:
    case TL_QTYPE_BF16:
      return tl_mul_size(n, 2, out);
    case TL_QTYPE_Q8:
      return tl_mul_size(nb, TL_QUANT_Q8_BLOCK_BYTES, out);
    case TL_QTYPE_Q4:
      return tl_mul_size(nb, TL_QUANT_Q4_BLOCK_BYTES, out);
  }
  return TL_ERR_INVALID_ARGUMENT;
}

tl_status tl_quant_tensor_bytes(tl_qtype type, size_t rows, size_t n,
                                size_t *out) {
  size_t row;
  tl_status st = tl_quant_row_bytes(type, n, &row);
  if (st != TL_OK) return st;
  return tl_mul_size(rows, row, out);
}

/* Common argument checks; *count gets rows * n, *need the byte size. */
static tl_status check_args(tl_qtype type, const void *src, size_t rows,
                            size_t n, const void *dst, size_t dst_len,
                            size_t *count, size_t *need) {
  tl_status st = tl_mul_size(rows, n, count);
  if (st != TL_OK) return st;
  st = tl_quant_tensor_bytes(type, rows, n, need);
  if (st != TL_OK) return st;
  if (*count != 0 && (!src || !dst)) return TL_ERR_INVALID_ARGUMENT;
  if (dst_len < *need) return TL_ERR_BOUNDS;
  return TL_OK;
}

/* --- q8 / q4 encoding (Q-10..Q-15) ------------------------------------------
 */

/* RNE of r after clamping to [-qmax, qmax]. r - trunc(r) is exact. */
static int32_t round_code(float r, int32_t qmax) {
  float lim = (float)qmax;
  int32_t t;
  float frac;
  if (r > lim) r = lim;
  if (r < -lim) r = -lim;
  t = (int32_t)r;
  frac = r - (float)t;
  if (frac > 0.5f || (frac == 0.5f && t % 2 != 0))
    t++;
  else if (frac < -0.5f || (frac == -0.5f && t % 2 != 0))
    t--;
  return t;
}

/* Encodes m (1..32) present values; codes[m..31] are 0. On a product that
 * overflows returns TL_ERR_NUMERICAL_FAILURE with *bad the offset. */
static tl_status encode_block(const float *x, size_t m, int32_t qmax,
                              float *d_out, int8_t codes[TL_QUANT_BLOCK],
                              size_t *bad) {
  uint32_t amax = 0;
  float d;
  for (size_t i = 0; i < m; i++) {
    uint32_t a = tl_f32_to_bits(x[i]) & 0x7FFFFFFFu;
    if (a > amax) amax = a; /* non-negative floats order as their bits */
  }
  d = amax == 0 ? 0.0f : tl_bits_to_f32(amax) / (float)qmax;
  memset(codes, 0, TL_QUANT_BLOCK);
  if (d != 0.0f) {
    for (size_t i = 0; i < m; i++) {
      int32_t q = round_code(x[i] / d, qmax);
      if (!bits_finite(tl_f32_to_bits((float)q * d))) {
        *bad = i;
        return TL_ERR_NUMERICAL_FAILURE;
      }
      codes[i] = (int8_t)q;
    }
  }
  *d_out = d;
  return TL_OK;
}

/* Finds the first non-finite element; *big says whether any element
 * has |x| >= 2^127, the only case where a q8 product can overflow. */
static tl_status scan_finite(const float *src, size_t count, size_t *bad_index,
                             bool *big) {
  *big = false;
  for (size_t i = 0; i < count; i++) {
    uint32_t b = tl_f32_to_bits(src[i]);
    if (!bits_finite(b)) {
      if (bad_index) *bad_index = i;
      return TL_ERR_NUMERICAL_FAILURE;
    }
    if ((b & 0x7FFFFFFFu) >= 0x7F000000u) *big = true;
  }
  return TL_OK;
}

static tl_status pack_blocks(const float *src, size_t rows, size_t n,
                             uint8_t *dst, size_t dst_len, size_t *bad_index,
                             tl_qtype type) {
  int32_t qmax = type == TL_QTYPE_Q8 ? 127 : 7;
  size_t block_bytes =
      type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES : TL_QUANT_Q4_BLOCK_BYTES;
  size_t count, need;
  bool big;
  tl_status st = check_args(type, src, rows, n, dst, dst_len, &count, &need);
  if (st != TL_OK) return st;
  st = scan_finite(src, count, bad_index, &big);
  if (st != TL_OK) return st;
  /* Pass 0 (dry run, only when a product could overflow), pass 1 writes:
   * nothing is stored unless the whole tensor encodes. */
  for (int pass = big ? 0 : 1; pass < 2; pass++) {
    uint8_t *out = dst;
    for (size_t r = 0; r < rows; r++) {
      for (size_t b0 = 0; b0 < n; b0 += TL_QUANT_BLOCK) {
        size_t m = n - b0 < TL_QUANT_BLOCK ? n - b0 : TL_QUANT_BLOCK, off;
        int8_t codes[TL_QUANT_BLOCK];
        float d;
        st = encode_block(src + r * n + b0, m, qmax, &d, codes, &off);
        if (st != TL_OK) {
          if (bad_index) *bad_index = r * n + b0 + off;
          return st;
        }
        if (pass == 0) continue;
        tl_store_le32(out, tl_f32_to_bits(d));
        if (type == TL_QTYPE_Q8) {
          for (size_t i = 0; i < TL_QUANT_BLOCK; i++)
            out[4 + i] = (uint8_t)codes[i];
        } else {
          for (size_t j = 0; j < TL_QUANT_BLOCK / 2; j++)
            out[4 + j] =
                (uint8_t)((codes[2 * j] + 8) | (codes[2 * j + 1] + 8) << 4);
        }
        out += block_bytes;
      }
    }
  }
  return TL_OK;
}

tl_status tl_quant_pack_q8(const float *src, size_t rows, size_t n,
                           uint8_t *dst, size_t dst_len, size_t *bad_index) {
  return pack_blocks(src, rows, n, dst, dst_len, bad_index, TL_QTYPE_Q8);
}

tl_status tl_quant_pack_q4(const float *src, size_t rows, size_t n,
                           uint8_t *dst, size_t dst_len, size_t *bad_index) {
  return pack_blocks(src, rows, n, dst, dst_len, bad_index, TL_QTYPE_Q4);
}

/* f32 / f16 / bf16: check all, then the first overflow, then write. */
static tl_status pack_float(tl_qtype type, const float *src, size_t rows,
                            size_t n, uint8_t *dst, size_t dst_len,
                            size_t *bad_index) {
  size_t count, need;
  bool big;
  tl_status st = check_args(type, src, rows, n, dst, dst_len, &count, &need);
  if (st != TL_OK) return st;
  st = scan_finite(src, count, bad_index, &big);
  if (st != TL_OK) return st;
  if (type == TL_QTYPE_F32) {
    for (size_t i = 0; i < count; i++)
      tl_store_le32(dst + 4 * i, tl_f32_to_bits(src[i]));
    return TL_OK;
  }
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < count; i++) {
      uint16_t h =
          type == TL_QTYPE_F16 ? tl_f32_to_f16(src[i]) : tl_f32_to_bf16(src[i]);
      uint16_t inf = type == TL_QTYPE_F16 ? 0x7C00u : 0x7F80u;
      if (pass == 0 && (h & inf) == inf) {
        if (bad_index) *bad_index = i;
        return TL_ERR_NUMERICAL_FAILURE;
      }
      if (pass == 1) {
        dst[2 * i] = (uint8_t)h;
        dst[2 * i + 1] = (uint8_t)(h >> 8);
      }
    }
  }
  return TL_OK;
}

tl_status tl_quant_pack(tl_qtype type, const float *src, size_t rows, size_t n,
                        uint8_t *dst, size_t dst_len, size_t *bad_index) {
  switch (type) {
    case TL_QTYPE_F32:
    case TL_QTYPE_F16:
    case TL_QTYPE_BF16:
      return pack_float(type, src, rows, n, dst, dst_len, bad_index);
    case TL_QTYPE_Q8:
    case TL_QTYPE_Q4:
      return pack_blocks(src, rows, n, dst, dst_len, bad_index, type);
  }
  return TL_ERR_INVALID_ARGUMENT;
}

/* --- decoding (Q-16, Q-17) ---------------------------------------------- */

static tl_status unpack_blocks(const uint8_t *src, size_t src_len, size_t rows,
                               size_t n, float *dst, tl_qtype type) {
  size_t block_bytes =
      type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES : TL_QUANT_Q4_BLOCK_BYTES;
  size_t count, need;
  const uint8_t *in = src;
  tl_status st = check_args(type, dst, rows, n, src, src_len, &count, &need);
  if (st != TL_OK) return st;
  for (size_t r = 0; r < rows; r++) {
    for (size_t b0 = 0; b0 < n; b0 += TL_QUANT_BLOCK, in += block_bytes) {
      size_t m = n - b0 < TL_QUANT_BLOCK ? n - b0 : TL_QUANT_BLOCK;
      uint32_t db = tl_load_le32(in);
      float d = tl_bits_to_f32(db);
      if ((db & 0x80000000u) || !bits_finite(db)) return TL_ERR_INVALID_MODEL;
      for (size_t i = 0; i < TL_QUANT_BLOCK; i++) {
        int32_t q;
        float y;
        if (type == TL_QTYPE_Q8) {
          uint8_t c = in[4 + i];
          if (c == 0x80u) return TL_ERR_INVALID_MODEL;
          q = c < 0x80u ? (int32_t)c : (int32_t)c - 256;
        } else {
          int32_t u = (in[4 + i / 2] >> (4 * (i & 1))) & 0xF;
          if (u == 0) return TL_ERR_INVALID_MODEL;
          q = u - 8;
        }
        if (q != 0 && (i >= m || d == 0.0f)) return TL_ERR_INVALID_MODEL;
        if (i >= m) continue;
        y = (float)q * d;
        if (!bits_finite(tl_f32_to_bits(y))) return TL_ERR_INVALID_MODEL;
        dst[r * n + b0 + i] = y;
      }
    }
  }
  return TL_OK;
}

tl_status tl_quant_unpack_q8(const uint8_t *src, size_t src_len, size_t rows,
                             size_t n, float *dst) {
  return unpack_blocks(src, src_len, rows, n, dst, TL_QTYPE_Q8);
}

tl_status tl_quant_unpack_q4(const uint8_t *src, size_t src_len, size_t rows,
                             size_t n, float *dst) {
  return unpack_blocks(src, src_len, rows, n, dst, TL_QTYPE_Q4);
}

tl_status tl_quant_unpack(tl_qtype type, const uint8_t *src, size_t src_len,
                          size_t rows, size_t n, float *dst) {
  size_t count, need;
  tl_status st;
  if (type == TL_QTYPE_Q8 || type == TL_QTYPE_Q4)
    return unpack_blocks(src, src_len, rows, n, dst, type);
  if (type != TL_QTYPE_F32 && type != TL_QTYPE_F16 && type != TL_QTYPE_BF16)
    return TL_ERR_INVALID_ARGUMENT;
  st = check_args(type, dst, rows, n, src, src_len, &count, &need);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < count; i++) {
    float y;
    if (type == TL_QTYPE_F32)
      y = tl_bits_to_f32(tl_load_le32(src + 4 * i));
    else if (type == TL_QTYPE_F16)
      y = tl_f16_to_f32(tl_load_le16(src + 2 * i));
    else
      y = tl_bf16_to_f32(tl_load_le16(src + 2 * i));
    if (!bits_finite(tl_f32_to_bits(y))) return TL_ERR_INVALID_MODEL;
    dst[i] = y;
  }
  return TL_OK;
}
