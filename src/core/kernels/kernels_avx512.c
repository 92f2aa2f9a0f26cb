/* fast/1 kernels with AVX-512: integer block products with VNNI
 * (vpdpbusd: q8 two blocks per 512-bit instruction, q4 one block per
 * 256-bit one with two accumulators for even and odd blocks, as F-4
 * orders them), float
 * products in one 512-bit accumulator (lanes A_0..15 of F-6) with masked
 * tail loads. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/kernels_impl.h"

#if TL_KERN_HAVE_X86

#define TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni,f16c")))

TARGET static inline float tree8(__m256 s) {
  __m128 c = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  __m128 d = _mm_add_ps(c, _mm_movehl_ps(c, c));
  return _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps(d, d, 1)));
}


/* The activation side of a block pair (b, b + 1): codes, biases, scales;
 * without a second block its codes and biases load as 0. */
typedef struct act_pair {
  __m512i x, bias;
  __m512 dx; /* dx0 in lanes 0..7, dx1 in 8..15 */
} act_pair;

/* [a x 8 | b x 8] from two floats in memory (b absent: +0). */
TARGET static inline __m512 halves(const uint8_t *a, const uint8_t *b) {
  __m128 v = _mm_castsi128_ps(_mm_loadu_si32(a));
  if (b != NULL) v = _mm_unpacklo_ps(v, _mm_castsi128_ps(_mm_loadu_si32(b)));
  return _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
                               _mm512_castps128_ps512(v));
}

TARGET static inline act_pair load_act(const int8_t *x, const int32_t *bias, const float *xs,
                                       bool second) {
  act_pair a;
  a.x = _mm512_maskz_loadu_epi8(second ? ~(__mmask64)0 : 0xFFFFFFFFu, x);
  a.bias = _mm512_maskz_loadu_epi32(second ? 0xFFFF : 0x00FF, bias);
  a.dx = halves((const uint8_t *)xs, second ? (const uint8_t *)(xs + 1) : NULL);
  return a;
}

/* The 16 terms t_{b,g} of a block pair (F-4) from one row's unsigned
 * weights u and scales dw ([dw0 x 8 | dw1 x 8]): group sums exact through
 * vpdpbusd plus the activation's bias, then times p = dw * dx per block
 * (the same single f32 product as the scalar twin's). Without a second
 * block its codes, biases and scales are 0, so its lanes are +0 and add
 * nothing (F-6: no lane is -0); a code times an absent scale could not be
 * -0 either, as every code there is 0. */
TARGET static inline __m512 pair_terms(__m512i u, const act_pair *a, __m512 dw) {
  __m512i sum = _mm512_dpbusd_epi32(a->bias, u, a->x);
  return _mm512_mul_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, a->dx));
}

/* q8 weights of a block pair, offset to unsigned (w + 128): the
 * activation's q8_bias takes the offset out again, exactly. */
TARGET static inline __m512i q8_u(const uint8_t *k0, bool second) {
  __m256i w0 = _mm256_loadu_si256((const __m256i *)(k0 + 4));
  __m256i w1 = second ? _mm256_loadu_si256((const __m256i *)(k0 + 40)) : _mm256_setzero_si256();
  return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1),
                          _mm512_set1_epi8((char)0x80));
}

/* q4 weights of a block pair: each block's nibbles as [low nibbles | high
 * nibbles] (the even elements, then the odd: the order of tl_kern_x.q4);
 * q4_bias removes the offset 8. */
TARGET static inline __m512i q4_u(const uint8_t *k0, bool second) {
  __m128i b0 = _mm_loadu_si128((const __m128i *)(k0 + 4));
  /* an absent second block: nibbles 8 (code 0) */
  __m128i b1 = second ? _mm_loadu_si128((const __m128i *)(k0 + 24)) : _mm_set1_epi8((char)0x88);
  __m256i v = _mm256_set_m128i(b1, b0), m = _mm256_set1_epi8(0x0F);
  __m256i lo = _mm256_and_si256(v, m), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
  __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  /* [lo0 lo1 | hi0 hi1] -> [lo0 hi0 | lo1 hi1] */
  return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
}

/* Rows [r, r + G) of a q8/q4 matrix, G accumulators side by side (the
 * activation loads are shared and the G dependency chains overlap); one
 * lane order per row, as F-4 says, whatever G is. */
#define GROUP_FN(name, G)                                                                  \
  TARGET static inline void name(bool q4, const uint8_t *w, size_t row_bytes, size_t nb,  \
                                 const tl_kern_x *x, float *y) {                           \
    size_t bb = q4 ? 20 : 36;                                                              \
    __m512 acc[G];                                                                         \
    for (int i = 0; i < G; i++) acc[i] = _mm512_setzero_ps();                              \
    for (size_t b = 0; b < nb; b += 2) {                                                   \
      bool second = b + 1 < nb;                                                            \
      act_pair a = q4 ? load_act(x->q4 + 32 * b, x->q4_bias + 8 * b, x->scales + b, second) \
                      : load_act(x->q8 + 32 * b, x->q8_bias + 8 * b, x->scales + b, second); \
      for (int i = 0; i < G; i++) {                                                        \
        const uint8_t *k0 = w + (size_t)i * row_bytes + b * bb;                            \
        acc[i] = _mm512_add_ps(acc[i], pair_terms(q4 ? q4_u(k0, second) : q8_u(k0, second), \
                                                  &a, halves(k0, second ? k0 + bb : NULL))); \
      }                                                                                    \
    }                                                                                      \
    for (int i = 0; i < G; i++)                                                            \
      y[i] = tree8(_mm256_add_ps(                                                          \
          _mm512_castps512_ps256(acc[i]),                                                  \
          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[i]), 1))));         \
  }
GROUP_FN(rows_group4, 4)
GROUP_FN(rows_group1, 1)
#undef GROUP_FN

TARGET static inline void rows_quant(bool q4, const uint8_t *w, size_t row_bytes, size_t n,
                                     const tl_kern_x *x, size_t rows, float *y) {
  size_t nb = (n + 31) / 32, r = 0;
  for (; r + 4 <= rows; r += 4) rows_group4(q4, w + r * row_bytes, row_bytes, nb, x, y + r);
  for (; r < rows; r++) rows_group1(q4, w + r * row_bytes, row_bytes, nb, x, y + r);
}

TARGET static void rows_q8(const uint8_t *w, size_t row_bytes, size_t n,
                           const tl_kern_x *x, size_t rows, float *y) {
  rows_quant(false, w, row_bytes, n, x, rows, y);
}

TARGET static void rows_q4(const uint8_t *w, size_t row_bytes, size_t n,
                           const tl_kern_x *x, size_t rows, float *y) {
  rows_quant(true, w, row_bytes, n, x, rows, y);
}

/* Up to 16 weights (mask m) as 16 floats; absent ones are +0. */
TARGET static inline __m512 load16(int type, const uint8_t *p, __mmask16 m) {
  if (type == 0) return _mm512_maskz_loadu_ps(m, p);
  if (type == 1) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

TARGET static inline void rows_float(int type, const uint8_t *w, size_t row_bytes,
                                     size_t n, const tl_kern_x *x, size_t rows,
                                     float *y) {
  size_t es = type == 0 ? 4 : 2, full = n / 16 * 16;
  __mmask16 tail = (__mmask16)((1u << (n - full)) - 1);
  for (size_t r = 0; r < rows; r++) {
    const uint8_t *row = w + r * row_bytes;
    __m512 a = _mm512_setzero_ps();
    for (size_t i = 0; i < full; i += 16)
      a = _mm512_add_ps(a, _mm512_mul_ps(load16(type, row + i * es, 0xFFFF),
                                         _mm512_loadu_ps(x->f + i)));
    if (full < n)
      a = _mm512_add_ps(a, _mm512_mul_ps(load16(type, row + full * es, tail),
                                         _mm512_maskz_loadu_ps(tail, x->f + full)));
    y[r] = tree8(_mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1))));
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

const tl_kernels tl_kernels_avx512 = {
    TL_KERN_AVX512, "avx512", {rows_f32, rows_f16, rows_bf16, rows_q8, rows_q4}};

#endif
