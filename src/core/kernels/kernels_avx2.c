/* fast/4 kernels with AVX2 (+ F16C for f16 weights): two 256-bit
 * accumulators are the lanes A_0..7 and A_8..15 of docs/fast-profile.md;
 * q8/q4 block sums through maddubs/madd on packed weights, one block per
 * i32 lane; attention's scores and weighted values over the binary16 KV
 * cache. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/kernels_impl.h"

#if TL_KERN_HAVE_X86

#define TARGET __attribute__((target("avx2,f16c")))

/* T(A) with A_0..7 in a and A_8..15 in b. */
TARGET static inline float tree(__m256 a, __m256 b) {
  __m256 s = _mm256_add_ps(a, b);
  __m128 c = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  __m128 d = _mm_add_ps(c, _mm_movehl_ps(c, c));
  return _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps(d, d, 1)));
}

/* Bytes ahead of a row's reads to prefetch (as kernels_avx512.c: the
 * hardware prefetcher alone streams the weights slower here). */
#define PREFETCH_AHEAD 2048

/* The terms of one whole packed group g (16 blocks) against the
 * activation's group (codes xc, scales dx, q4 biases): blocks 0-7 onto a0
 * (lanes A_0..7), 8-15 onto a1. Each i32 lane is one block's sum over its
 * 8 steps. q8: the codes back to signed (XOR 0x80), |w| times x with w's
 * sign moved onto x; q4: the nibbles u times x, then q4_bias; no pair sum
 * of maddubs saturates (2*127*127, 2*15*127 < 32767). */
TARGET static inline void group_terms(bool q4, const uint8_t *g, const int8_t *xc,
                                      const float *dx, const int32_t *bias, __m256 *a0,
                                      __m256 *a1) {
  const uint8_t *c = g + 64;
  for (int h = 0; h < 2; h++) {
    __m256i s = q4 ? _mm256_loadu_si256((const __m256i *)(bias + 8 * h)) : _mm256_setzero_si256();
    __m256 p;
    for (int st = 0; st < 8; st++) {
      __m256i x = _mm256_loadu_si256((const __m256i *)(xc + 64 * st + 32 * h)), prod;
      if (q4) {
        __m256i raw = _mm256_loadu_si256((const __m256i *)(c + 64 * (st / 2) + 32 * h));
        __m256i u = _mm256_and_si256(st % 2 ? _mm256_srli_epi16(raw, 4) : raw,
                                     _mm256_set1_epi8(0x0F));
        prod = _mm256_maddubs_epi16(u, x);
      } else {
        __m256i w = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(c + 64 * st + 32 * h)),
                                     _mm256_set1_epi8((char)0x80));
        prod = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
      }
      s = _mm256_add_epi32(s, _mm256_madd_epi16(prod, _mm256_set1_epi16(1)));
    }
    p = _mm256_mul_ps(_mm256_loadu_ps((const float *)g + 8 * h), _mm256_loadu_ps(dx + 8 * h));
    p = _mm256_mul_ps(_mm256_cvtepi32_ps(s), p);
    if (h == 0) *a0 = _mm256_add_ps(*a0, p);
    else *a1 = _mm256_add_ps(*a1, p);
  }
}

/* F-4/F-5 on packed rows, a group at a time; a short last group through
 * a padded copy (tl_kern_pad_group). */
TARGET static inline void rows_quant(bool q4, const uint8_t *w, size_t row_bytes, size_t n,
                                     const tl_kern_x *x, size_t rows, float *y) {
  size_t nb = (n + 31) / 32, bb = q4 ? 20 : 36;
  for (size_t r = 0; r < rows; r++) {
    const uint8_t *row = w + r * row_bytes;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b += TL_KERN_GROUP) {
      size_t m = nb - b < TL_KERN_GROUP ? nb - b : TL_KERN_GROUP;
      const uint8_t *g = row + b * bb;
      uint8_t padded[TL_KERN_GROUP * 36];
      for (size_t o = 0; o < m * bb; o += 64)
        _mm_prefetch((const char *)g + o + PREFETCH_AHEAD, _MM_HINT_T0);
      if (m < TL_KERN_GROUP) g = tl_kern_pad_group(q4 ? TL_QTYPE_Q4 : TL_QTYPE_Q8, g, m, padded);
      group_terms(q4, g, x->codes + 32 * b, x->scales + b, x->q4_bias + b, &a0, &a1);
    }
    y[r] = tree(a0, a1);
  }
}

TARGET static void rows_q8(const uint8_t *w, size_t row_bytes, size_t n,
                           const tl_kern_x *x, size_t rows, float *y) {
  rows_quant(false, w, row_bytes, n, x, rows, y);
}

TARGET static void rows_q4(const uint8_t *w, size_t row_bytes, size_t n,
                           const tl_kern_x *x, size_t rows, float *y) {
  rows_quant(true, w, row_bytes, n, x, rows, y);
}

/* 16 weights as two vectors of 8 floats, per weight type. */
TARGET static inline void load16(int type, const uint8_t *p, __m256 *lo, __m256 *hi) {
  if (type == 0) {
    *lo = _mm256_loadu_ps((const float *)p);
    *hi = _mm256_loadu_ps((const float *)p + 8);
  } else if (type == 1) {
    *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16)));
  } else {
    __m256i a = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    __m256i b = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p + 16)));
    *lo = _mm256_castsi256_ps(_mm256_slli_epi32(a, 16));
    *hi = _mm256_castsi256_ps(_mm256_slli_epi32(b, 16));
  }
}

/* Elements [e, e + 16) of a row of the given type (0 f32, 1 f16, 2 bf16:
 * element sizes 4, 2, 2) as two vectors (lanes A_0..7 and A_8..15 of
 * F-6), those at or past n read from a zero-filled copy as +0 (F-6: a +-0
 * product changes no lane). Every AVX2 kernel's tail goes through here. */
TARGET static inline void load16_tail(int type, const void *row, size_t e, size_t n,
                                      __m256 *lo, __m256 *hi) {
  size_t es = type == 0 ? 4 : 2;
  const uint8_t *p = (const uint8_t *)row + e * es;
  if (e + 16 <= n) {
    load16(type, p, lo, hi);
  } else {
    uint8_t t[64] = {0}; /* zeroed only for a tail: not on the full steps */
    memcpy(t, p, (n - e) * es);
    load16(type, t, lo, hi);
  }
}

TARGET static inline void rows_float(int type, const uint8_t *w, size_t row_bytes,
                                     size_t n, const tl_kern_x *x, size_t rows,
                                     float *y) {
  size_t es = type == 0 ? 4 : 2, full = n / 16 * 16;
  for (size_t r = 0; r < rows; r++) {
    const uint8_t *row = w + r * row_bytes;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), lo, hi, xlo, xhi;
    /* Whole steps with plain loads (the hot loop), then the tail. */
    for (size_t i = 0; i < full; i += 16) {
      _mm_prefetch((const char *)row + i * es + PREFETCH_AHEAD, _MM_HINT_T0);
      load16(type, row + i * es, &lo, &hi);
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(lo, _mm256_loadu_ps(x->f + i)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(hi, _mm256_loadu_ps(x->f + i + 8)));
    }
    if (full < n) {
      load16_tail(type, row, full, n, &lo, &hi);
      load16_tail(0, x->f, full, n, &xlo, &xhi);
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(lo, xlo));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(hi, xhi));
    }
    y[r] = tree(a0, a1);
  }
}

#define FLOAT_FN(name, type)                                               \
  TARGET static void name(const uint8_t *w, size_t row_bytes, size_t n,   \
                          const tl_kern_x *x, size_t rows, float *y) {     \
    rows_float(type, w, row_bytes, n, x, rows, y);                         \
  }
FLOAT_FN(rows_f32, 0)
FLOAT_FN(rows_f16, 1)
FLOAT_FN(rows_bf16, 2)
#undef FLOAT_FN

/* The KV cache's f16 rows (F-11), 8 at a time with F16C (exact, as the
 * twin's decoding); the tail through the twin. */
TARGET static void f16_to_f32(const uint16_t *h, size_t n, float *out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(h + i))));
  tl_kern_f16_to_f32(h + i, n - i, out + i);
}

/* The KV cache's rows stored (F-11), 8 at a time with F16C's RNE
 * conversion (IEEE: subnormals kept, an overflow inf, as the twin); the
 * tail through the twin. */
TARGET static void f32_to_f16(const float *x, size_t n, uint16_t *out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(void *)(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  tl_kern_f32_to_f16(x + i, n - i, out + i);
}

/* Rows of the binary16 KV cache ahead of the attention's reads to
 * prefetch (kernels_avx512.c's CACHE_ROWS_AHEAD: the cache streams from
 * memory once per decoded token). */
#define CACHE_ROWS_AHEAD 16


/* tl_kern_dots_h: two queries (or the last one) against each key row,
 * whose 16-element steps are converted once for both (F-6 each: two
 * 8-lane accumulators, tree T). */
TARGET static void dots_h(const float *const *q, size_t nq, const uint16_t *k, size_t stride,
                          size_t count, size_t n, float *const *out) {
  for (size_t i = 0; i < nq; i += 2) {
    bool two = i + 1 < nq;
    for (size_t j = 0; j < count; j++) {
      const uint16_t *kj = k + j * stride;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, klo, khi, xlo, xhi;
      for (size_t o = 0; o < n * sizeof(uint16_t); o += 64)
        _mm_prefetch((const char *)(kj + CACHE_ROWS_AHEAD * stride) + o, _MM_HINT_T0);
      for (size_t e = 0; e < n; e += 16) {
        load16_tail(1, kj, e, n, &klo, &khi);
        load16_tail(0, q[i], e, n, &xlo, &xhi);
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(xlo, klo));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(xhi, khi));
        if (two) {
          load16_tail(0, q[i + 1], e, n, &xlo, &xhi);
          b0 = _mm256_add_ps(b0, _mm256_mul_ps(xlo, klo));
          b1 = _mm256_add_ps(b1, _mm256_mul_ps(xhi, khi));
        }
      }
      out[i][j] = tree(a0, a1);
      if (two) out[i + 1][j] = tree(b0, b1);
    }
  }
}

/* tl_kern_weighted_h: each row over its own keys, 64 elements per pass
 * in eight accumulators, each element's sum over the keys in order; a
 * tail through zero-filled copies. */
TARGET static void weighted_h(const float *const *p, const size_t *counts, size_t nq,
                              const uint16_t *v, size_t stride, size_t d, float *const *out) {
  for (size_t i = 0; i < nq; i++)
    for (size_t e0 = 0; e0 < d; e0 += 64) {
      __m256 acc[8];
      float t[64];
      size_t m = d - e0 < 64 ? d - e0 : 64;
      for (int c = 0; c < 8; c++) acc[c] = _mm256_setzero_ps();
      for (size_t j = 0; j < counts[i]; j++) {
        const uint16_t *vj = v + j * stride;
        __m256 pj = _mm256_set1_ps(p[i][j]);
        for (size_t o = 0; o < m * sizeof(uint16_t); o += 64)
          _mm_prefetch((const char *)(vj + CACHE_ROWS_AHEAD * stride + e0) + o, _MM_HINT_T0);
        for (int c = 0; c < 8; c += 2) {
          __m256 lo, hi;
          if (8 * (size_t)c >= m) break;
          load16_tail(1, vj, e0 + 8 * (size_t)c, e0 + m, &lo, &hi);
          acc[c] = _mm256_add_ps(acc[c], _mm256_mul_ps(pj, lo));
          acc[c + 1] = _mm256_add_ps(acc[c + 1], _mm256_mul_ps(pj, hi));
        }
      }
      for (int c = 0; c < 8; c++) _mm256_storeu_ps(t + 8 * c, acc[c]);
      memcpy(out[i] + e0, t, m * sizeof(float));
    }
}

const tl_kernels tl_kernels_avx2 = {
    TL_KERN_AVX2, "avx2", {rows_f32, rows_f16, rows_bf16, rows_q8, rows_q4},
    {NULL, NULL, NULL, NULL, NULL},
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, f16_to_f32, f32_to_f16, dots_h, weighted_h};

#endif
