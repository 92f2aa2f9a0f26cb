/* fast/4 kernels with AVX2 (+ F16C for f16 weights): two 256-bit
 * accumulators are the lanes A_0..7 and A_8..15 of docs/fast-profile.md;
 * q8/q4 block sums of the packed weights' nibbles through maddubs, one
 * block per i32 lane; one row against several tokens (prefill) or one
 * (decoding); F-3's quantizer; the
 * softmax's exponentials; attention's scores and weighted values over f32
 * rows and the binary16 KV cache.
 *
 * The AVX-VNNI variant is this source compiled again (kernels_avxvnni.c,
 * and its test twin kernels_avxvnni_avx512.c) with TL_AVX2_DPBUSD, the
 * 256-bit vpdpbusd of its target, doing the q8/q4 block sums instead of
 * maddubs (as kernels_avx512.c's with 512-bit); everything else is
 * the same code. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/kernels_impl.h"
#include "kernels/mutant.h"
#include "math/detmath.h"

#if TL_KERN_HAVE_X86

#ifndef TL_AVX2_TABLE /* the plain AVX2 variant */
#define TARGET __attribute__((target("avx2,f16c")))
#define TL_AVX2_TABLE tl_kernels_avx2
#define TL_AVX2_ISA TL_KERN_AVX2
#define TL_AVX2_NAME "avx2"
#endif

/* T(A) with A_0..7 in a and A_8..15 in b. */
TARGET static inline float tree(__m256 a, __m256 b) {
  __m256 s = _mm256_add_ps(a, b);
  __m128 c = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  __m128 d = _mm_add_ps(c, _mm_movehl_ps(c, c));
  return _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps(d, d, 1)));
}

/* Bytes ahead of a row's reads to prefetch for one token (decoding),
 * into L2 (prefetcht1), as kernels_avx512.c measured: the hardware
 * prefetcher alone streams the weights slower, and a prefetch into L1
 * holds one of its few miss buffers. Tiles of several tokens prefetch
 * nothing: they read the call's rows again from cache. */
#define PREFETCH_AHEAD 8192

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
      _mm_prefetch((const char *)row + i * es + PREFETCH_AHEAD, _MM_HINT_T1);
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

/* Tokens per pass of the q8/q4 tile: one packed row against up to QT
 * tokens, whose block sums stay in the 16 ymm registers (q8 without
 * vpdpbusd: two i16 sums per token, ten, with the row's two nibble
 * vectors, the nibble mask and a product). Measured beside 3, 4 and 6
 * (q4 up to 8: alike). */
#define QT 5

/* Keeps v in a register as it is: the compiler otherwise reassociates
 * the eight steps' integer adds into a tree, which holds every step's
 * products at once and spills them. */
#define KEEP(v) __asm__("" : "+x"(v))

/* F-4/F-5's terms of one half group h (8 blocks: lanes A_0..7 or
 * A_8..15) of a packed group g (blocks b..b+15 of the activations) for
 * tokens [0, T), added onto acc[t][h]: the row's step loaded once for
 * the T tokens. The block sums: with vpdpbusd, from the activation's
 * bias, the unsigned weights as packed, one vpdpbusd per step. Without:
 * each unsigned weight byte u (q8: w + 128) split into its nibbles, each
 * nibble times the codes by maddubs, summed over the 8 steps in i16
 * (8 x 2 x 15 x 127 = 30480 < 32767: exact, and no pair saturates), then
 * one madd and the bias: q8's 16 * high + low + q8_bias, q4's (the
 * nibbles are the steps 2c and 2c + 1) sum + q4_bias. A pair of (row,
 * token) so costs two maddubs and two adds per q8 step (the sign trick:
 * sign, maddubs, madd and add, three of them on the two multiply pipes)
 * and one each per q4 step. Then F-4's conversion, scale product and add
 * per block, as the rows. */
TARGET static inline __attribute__((always_inline)) void
half_terms(bool q4, int T, const uint8_t *g, int h, const tl_kern_x *xs, size_t b,
           __m256 (*acc)[2]) {
  const uint8_t *c = g + 64 + 32 * h;
  const __m256i nib = _mm256_set1_epi8(0x0F);
  size_t xo = 32 * b + 32 * (size_t)h, bo = b + 8 * (size_t)h;
  __m256i s[QT];
#ifndef TL_AVX2_DPBUSD
  __m256i hs[QT];
#endif
  _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
#ifdef TL_AVX2_DPBUSD
    s[t] = TL_MUTANT_NO_BIAS
               ? _mm256_setzero_si256()
               : _mm256_loadu_si256((const __m256i *)((q4 ? xs[t].q4_bias : xs[t].q8_bias) + bo));
#else
    s[t] = hs[t] = _mm256_setzero_si256();
#endif
  }
  /* q8: step st; q4: chunk st / 2's low (st even) or high nibbles */
  _Pragma("GCC unroll 8") for (int st = 0; st < 8; st++) {
    __m256i raw = _mm256_loadu_si256((const __m256i *)(c + 64 * (q4 ? st / 2 : st)));
    __m256i lo = _mm256_and_si256(q4 && st % 2 ? _mm256_srli_epi16(raw, 4) : raw, nib);
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
      __m256i x = _mm256_loadu_si256((const __m256i *)(xs[t].codes + xo + 64 * st));
#ifdef TL_AVX2_DPBUSD
      s[t] = TL_AVX2_DPBUSD(s[t], q4 ? lo : raw, x);
#else
      s[t] = _mm256_add_epi16(s[t], _mm256_maddubs_epi16(lo, x));
      if (!q4) {
        __m256i hx = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), nib), x);
        hs[t] = _mm256_add_epi16(hs[t], TL_MUTANT_HIGH_FIRST ? _mm256_slli_epi16(hx, 4) : hx);
        KEEP(hs[t]);
      }
#endif
      KEEP(s[t]);
    }
  }
  _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
    __m256 dx = _mm256_loadu_ps(xs[TL_MUTANT_TOKEN(t)].scales + bo);
    __m256 p = _mm256_mul_ps(_mm256_loadu_ps((const float *)g + 8 * h), dx);
    __m256i sum = s[t];
#ifndef TL_AVX2_DPBUSD
    sum = _mm256_madd_epi16(sum, _mm256_set1_epi16(1));
    if (!q4)
      sum = _mm256_add_epi32(
          sum, _mm256_madd_epi16(hs[t], _mm256_set1_epi16(TL_MUTANT_HIGH_FIRST ? 1 : 16)));
    sum = _mm256_add_epi32(
        sum, _mm256_loadu_si256((const __m256i *)((q4 ? xs[t].q4_bias : xs[t].q8_bias) + bo)));
#endif
    acc[t][h] = _mm256_add_ps(acc[t][h], _mm256_mul_ps(_mm256_cvtepi32_ps(sum), p));
  }
}

/* One packed q8 (Q4 false) or q4 row of nb blocks times tokens [0, T)
 * (T <= QT) into y[t * y_stride], a group at a time (half_terms); a
 * short last group through a padded copy (tl_kern_pad_group). One token
 * (decoding: the row streams from memory) prefetches PREFETCH_AHEAD on. */
TARGET static inline __attribute__((always_inline)) void
quant_tile(bool q4, int T, const uint8_t *row, size_t nb, const tl_kern_x *xs, float *y,
           size_t y_stride) {
  const size_t bb = q4 ? 20 : 36;
  __m256 acc[QT][2];
  size_t b = 0;
  _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (; b + TL_KERN_GROUP <= nb; b += TL_KERN_GROUP) {
    if (T == 1)
      for (size_t o = 0; o < TL_KERN_GROUP * bb; o += 64)
        _mm_prefetch((const char *)row + b * bb + o + PREFETCH_AHEAD, _MM_HINT_T1);
    half_terms(q4, T, row + b * bb, 0, xs, b, acc);
    half_terms(q4, T, row + b * bb, 1, xs, b, acc);
  }
  if (b < nb) {
    uint8_t padded[TL_KERN_GROUP * 36];
    const uint8_t *g =
        tl_kern_pad_group(q4 ? TL_QTYPE_Q4 : TL_QTYPE_Q8, row + b * bb, nb - b, padded);
    half_terms(q4, T, g, 0, xs, b, acc);
    half_terms(q4, T, g, 1, xs, b, acc);
  }
  _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)
    y[(size_t)t * y_stride] = tree(acc[t][0], acc[t][1]);
}
#undef KEEP

/* A tile kernel (quant_tile, float_tile) instantiated for one token
 * count T, as a function the entries pick from a table (index T - 1):
 * the count is a constant inside, so the accumulators stay in registers. */
typedef void (*tile_fn)(const uint8_t *row, size_t len, const tl_kern_x *xs, float *y,
                        size_t y_stride);
#define TILE_FN(kernel, prefix, ARG, T)                                                    \
  TARGET static void prefix##_##T(const uint8_t *r, size_t len, const tl_kern_x *xs,       \
                                  float *y, size_t ys) {                                   \
    kernel(ARG, T, r, len, xs, y, ys);                                                     \
  }
#define TILE_FNS_1_TO_5(kernel, prefix, ARG)                                               \
  TILE_FN(kernel, prefix, ARG, 1)                                                          \
  TILE_FN(kernel, prefix, ARG, 2)                                                          \
  TILE_FN(kernel, prefix, ARG, 3)                                                          \
  TILE_FN(kernel, prefix, ARG, 4)                                                          \
  TILE_FN(kernel, prefix, ARG, 5)

/* quant_tile for each token count 1..QT; len is the row's blocks. */
TILE_FNS_1_TO_5(quant_tile, q8_tile, false)
TILE_FNS_1_TO_5(quant_tile, q4_tile, true)
static const tile_fn q8_tile_fns[QT] = {q8_tile_1, q8_tile_2, q8_tile_3, q8_tile_4, q8_tile_5};
static const tile_fn q4_tile_fns[QT] = {q4_tile_1, q4_tile_2, q4_tile_3, q4_tile_4, q4_tile_5};

/* F-4/F-5 for one token (decoding): each row through the one-token
 * tile. */
TARGET static void rows_q8(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                           size_t rows, float *y) {
  for (size_t r = 0; r < rows; r++) q8_tile_1(w + r * row_bytes, (n + 31) / 32, x, y + r, 0);
}

TARGET static void rows_q4(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *x,
                           size_t rows, float *y) {
  for (size_t r = 0; r < rows; r++) q4_tile_1(w + r * row_bytes, (n + 31) / 32, x, y + r, 0);
}

/* The tile entry for q8/q4: QT tokens at a time (the last pass fewer),
 * and for each pass every row, so a call's rows stay in cache across the
 * passes. */
TARGET static void tile_quant(bool q4, const uint8_t *w, size_t row_bytes, size_t n,
                              const tl_kern_x *xs, size_t tokens, size_t rows, float *y,
                              size_t y_stride) {
  const tile_fn *fns = q4 ? q4_tile_fns : q8_tile_fns;
  for (size_t t = 0; t < tokens; t += QT) {
    size_t tt = tokens - t < QT ? tokens - t : QT;
    for (size_t r = 0; r < rows; r++)
      fns[tt - 1](w + r * row_bytes, (n + 31) / 32, xs + t, y + t * y_stride + r, y_stride);
  }
}

TARGET static void tile_q8(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *xs,
                           size_t tokens, size_t rows, float *y, size_t y_stride) {
  tile_quant(false, w, row_bytes, n, xs, tokens, rows, y, y_stride);
}

TARGET static void tile_q4(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *xs,
                           size_t tokens, size_t rows, float *y, size_t y_stride) {
  tile_quant(true, w, row_bytes, n, xs, tokens, rows, y, y_stride);
}

/* Tokens per pass of the float tile: one row against up to FT tokens,
 * two 8-lane accumulators per token (F-6's A_0..7 and A_8..15): twelve,
 * with the row's two converted vectors and an activation, in the 16 ymm
 * registers. A row's step is converted (bf16's widening, f16's F16C)
 * once for FT tokens, and every multiply and add is F-6's: with F-2's
 * separate multiply and add, this Zen 5 issues two of each a cycle, and
 * the conversions and loads run beside them. */
#define FT 6

/* One row of an f32 (TYPE 0), f16 (1) or bf16 (2) matrix of n elements
 * times tokens [0, T) (T <= FT) into y[t * y_stride] (F-6): whole steps
 * of 16 with plain loads (nothing in the loop that calls, so the
 * accumulators stay in registers), then the tail through load16_tail's
 * zero-filled copies. */
TARGET static inline __attribute__((always_inline)) void
float_tile(int type, int T, const uint8_t *row, size_t n, const tl_kern_x *xs, float *y,
           size_t y_stride) {
  size_t es = type == 0 ? 4 : 2, full = n / 16 * 16;
  __m256 acc[FT][2], wl, wh;
  _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (size_t k = 0; k < full; k += 16) {
    load16(type, row + k * es, &wl, &wh);
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
      acc[t][0] = _mm256_add_ps(acc[t][0], _mm256_mul_ps(wl, _mm256_loadu_ps(xs[t].f + k)));
      acc[t][1] = _mm256_add_ps(acc[t][1], _mm256_mul_ps(wh, _mm256_loadu_ps(xs[t].f + k + 8)));
    }
  }
  if (full < n && !TL_MUTANT_NO_TILE_TAIL) {
    load16_tail(type, row, full, n, &wl, &wh);
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
      __m256 xl, xh;
      load16_tail(0, xs[t].f, full, n, &xl, &xh);
      acc[t][0] = _mm256_add_ps(acc[t][0], _mm256_mul_ps(wl, xl));
      acc[t][1] = _mm256_add_ps(acc[t][1], _mm256_mul_ps(wh, xh));
    }
  }
  _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)
    y[(size_t)t * y_stride] = tree(acc[t][0], acc[t][1]);
}

/* float_tile for each type and token count 1..FT; len is the row's
 * elements. */
#define FLOAT_TILE_FNS(prefix, TYPE)                                                       \
  TILE_FNS_1_TO_5(float_tile, prefix, TYPE)                                                \
  TILE_FN(float_tile, prefix, TYPE, 6)                                                     \
  static const tile_fn prefix##_fns[FT] = {prefix##_1, prefix##_2, prefix##_3,             \
                                           prefix##_4, prefix##_5, prefix##_6};
FLOAT_TILE_FNS(f32_tile, 0)
FLOAT_TILE_FNS(f16_tile, 1)
FLOAT_TILE_FNS(bf16_tile, 2)
#undef FLOAT_TILE_FNS
#undef TILE_FNS_1_TO_5
#undef TILE_FN

/* The tile entry for f32/f16/bf16 (TYPE as load16's): one token through
 * the rows (decoding); else FT tokens at a time (the last pass fewer),
 * and for each pass every row, so a call's rows stay in cache across the
 * passes. */
TARGET static void tile_float(int type, const uint8_t *w, size_t row_bytes, size_t n,
                              const tl_kern_x *xs, size_t tokens, size_t rows, float *y,
                              size_t y_stride) {
  const tile_fn *fns = type == 0 ? f32_tile_fns : type == 1 ? f16_tile_fns : bf16_tile_fns;
  if (tokens == 1) {
    rows_float(type, w, row_bytes, n, xs, rows, y);
    return;
  }
  for (size_t t = 0; t < tokens; t += FT) {
    size_t tt = tokens - t < FT ? tokens - t : FT;
    for (size_t r = 0; r < rows; r++)
      fns[tt - 1](w + r * row_bytes, n, xs + t, y + t * y_stride + r, y_stride);
  }
}

#define FLOAT_TILE(name, TYPE)                                                             \
  TARGET static void name(const uint8_t *w, size_t row_bytes, size_t n, const tl_kern_x *xs, \
                          size_t tokens, size_t rows, float *y, size_t y_stride) {         \
    tile_float(TYPE, w, row_bytes, n, xs, tokens, rows, y, y_stride);                      \
  }
FLOAT_TILE(tile_f32, 0)
FLOAT_TILE(tile_f16, 1)
FLOAT_TILE(tile_bf16, 2)
#undef FLOAT_TILE

/* F-3, one block of 32 at a time, as kernels_avx512.c's: the same maximum
 * (exact), the same f32 divisions (vdivps is correctly rounded, as the
 * scalar '/'), the same clamp, and RNE by the conversion under the default
 * rounding mode (the twin's rne127). A partial block (and the padding
 * blocks) reads from a zero-filled copy, so its absent codes are 0. */
TARGET static void quantize_x(const float *x, size_t n, int8_t *codes, float *scales,
                              int32_t *q8_bias, int32_t *q4_bias) {
  const __m256 lim = _mm256_set1_ps(127.0f), nlim = _mm256_set1_ps(-127.0f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  size_t total = tl_kern_groups(n) * 16;
  for (size_t b = 0; b < total; b++) {
    size_t lo = 32 * b;
    float tail[32] = {0};
    const float *src = x + lo;
    __m256 v[4], a;
    __m256i c[4], sum;
    float d;
    int8_t block[32];
    if (lo + 32 > n) {
      if (lo < n) memcpy(tail, x + lo, (n - lo) * sizeof(float));
      src = tail;
    }
    for (int q = 0; q < 4; q++) v[q] = _mm256_loadu_ps(src + 8 * q);
    a = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
                      _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
    a = _mm256_max_ps(a, _mm256_permute2f128_ps(a, a, 1));
    a = _mm256_max_ps(a, _mm256_shuffle_ps(a, a, 0x4E));
    a = _mm256_max_ps(a, _mm256_shuffle_ps(a, a, 0xB1));
    d = _mm256_cvtss_f32(a);
    d = d == 0.0f ? 0.0f : d / 127.0f;
    for (int q = 0; q < 4; q++) {
      __m256 r = _mm256_max_ps(_mm256_min_ps(_mm256_div_ps(v[q], _mm256_set1_ps(d)), lim), nlim);
      c[q] = d == 0.0f           ? _mm256_setzero_si256()
             : TL_MUTANT_TRUNCATE ? _mm256_cvttps_epi32(r)
                                  : _mm256_cvtps_epi32(r);
    }
    sum = _mm256_add_epi32(_mm256_add_epi32(c[0], c[1]), _mm256_add_epi32(c[2], c[3]));
    /* i32 -> i8 in element order: packs interleave the 128-bit lanes, the
     * permute puts the eight dwords back */
    _mm256_storeu_si256((__m256i *)(void *)block,
                        _mm256_permutevar8x32_epi32(
                            _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]),
                                               _mm256_packs_epi32(c[2], c[3])),
                            _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    {
      int8_t *at = codes + b / 16 * TL_KERN_GROUP_CODES + 4 * (b % 16);
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
      int32_t total_sum;
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
      total_sum = _mm_cvtsi128_si32(s4);
      for (int s = 0; s < 8; s++) memcpy(at + 64 * s, block + 4 * s, 4);
      scales[b] = d;
      q8_bias[b] = -128 * total_sum;
      q4_bias[b] = -8 * total_sum;
    }
  }
}

/* tl_kern_exps: tl_exp's own steps (math/detmath.c) on four doubles at a
 * time, as kernels_avx512.c's eight — x - sub in f32, widened exactly;
 * k = x/ln2 rounded half away from zero by truncating t +- 0.5; r = (x -
 * k ln2_hi) - k ln2_lo; the same Horner polynomial with the same
 * constants; times 2^k built from its bits; narrowed with RNE as the
 * scalar cast — each one IEEE operation with the scalar's rounding, so the
 * same bits. Lanes outside the plain path (NaN, overflow, underflow, a
 * subnormal 2^k) take the scalar function itself; a tail reads from a
 * zero-filled copy. */
TARGET static void exps(const float *x, float sub, size_t n, float *out) {
  const __m256d inv_ln2 = _mm256_set1_pd(1.44269504088896338700e+00);
  const __m256d ln2_hi = _mm256_set1_pd(6.93147180369123816490e-01);
  const __m256d ln2_lo = _mm256_set1_pd(1.90821492927058770002e-10);
  static const double coef[15] = {
      1.0 / 87178291200.0, 1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
      1.0 / 3628800.0,     1.0 / 362880.0,     1.0 / 40320.0,      1.0 / 5040.0,
      1.0 / 720.0,         1.0 / 120.0,        1.0 / 24.0,         1.0 / 6.0,
      0.5,                 1.0,                1.0};
  for (size_t i = 0; i < n; i += 4) {
    size_t m = n - i < 4 ? n - i : 4;
    float in[4] = {0}, res[4];
    __m128 xf;
    __m256d xd, t, kd, r, p;
    __m128i k;
    int special;
    if (m == 4) xf = _mm_loadu_ps(x + i);
    else {
      memcpy(in, x + i, m * sizeof(float));
      xf = _mm_loadu_ps(in);
    }
    xd = _mm256_cvtps_pd(_mm_sub_ps(xf, _mm_set1_ps(sub)));
    t = _mm256_mul_pd(xd, inv_ln2);
    k = _mm256_cvttpd_epi32(_mm256_blendv_pd(_mm256_add_pd(t, _mm256_set1_pd(0.5)),
                                             _mm256_sub_pd(t, _mm256_set1_pd(0.5)),
                                             _mm256_cmp_pd(t, _mm256_setzero_pd(), _CMP_LT_OQ)));
    kd = _mm256_cvtepi32_pd(k);
    r = _mm256_sub_pd(_mm256_sub_pd(xd, _mm256_mul_pd(kd, ln2_hi)), _mm256_mul_pd(kd, ln2_lo));
    p = _mm256_set1_pd(coef[0]);
    _Pragma("GCC unroll 14") for (int c = 1; c < 15; c++)
      p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(coef[c]));
    p = _mm256_mul_pd(p, _mm256_castsi256_pd(_mm256_slli_epi64(
                             _mm256_add_epi64(_mm256_cvtepi32_epi64(k), _mm256_set1_epi64x(1023)), 52)));
    special = _mm256_movemask_pd(_mm256_or_pd(
                  _mm256_cmp_pd(xd, _mm256_set1_pd(709.782712893384), _CMP_NLE_UQ),
                  _mm256_cmp_pd(xd, _mm256_set1_pd(-745.1332191019412), _CMP_LT_OQ))) |
              _mm_movemask_ps(_mm_castsi128_ps(
                  _mm_or_si128(_mm_cmplt_epi32(k, _mm_set1_epi32(-1022)),
                               _mm_cmpgt_epi32(k, _mm_set1_epi32(1023)))));
    if (m == 4 && special == 0) {
      _mm_storeu_ps(out + i, _mm256_cvtpd_ps(p));
      continue;
    }
    _mm_storeu_ps(res, _mm256_cvtpd_ps(p));
    for (size_t l = 0; l < m; l++) out[i + l] = special >> l & 1 ? tl_expf(x[i + l] - sub) : res[l];
  }
}

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

/* Queries per pass of the scores: each key row's step loaded (converted)
 * once for QS queries, two 8-lane accumulators each (F-6). */
#define QS 4

/* Scores of queries q[0, Q) (Q <= QS) against key row kj of n elements of
 * type TYPE (load16's: 0 f32, 1 the binary16 cache) into out[a][j] (F-6
 * each, tree T): whole steps with plain loads, the tail through
 * load16_tail; the row CACHE_ROWS_AHEAD rows on prefetched. */
TARGET static inline __attribute__((always_inline)) void
score_tile(int type, int Q, const float *const *q, const uint8_t *kj, size_t row_bytes,
           size_t n, float *const *out, size_t j) {
  size_t es = type == 0 ? 4 : 2, full = n / 16 * 16;
  __m256 acc[QS][2], klo, khi;
  for (size_t o = 0; o < n * es; o += 64)
    _mm_prefetch((const char *)kj + CACHE_ROWS_AHEAD * row_bytes + o, _MM_HINT_T0);
  _Pragma("GCC unroll 4") for (int a = 0; a < Q; a++) acc[a][0] = acc[a][1] = _mm256_setzero_ps();
  for (size_t e = 0; e < full; e += 16) {
    load16(type, kj + e * es, &klo, &khi);
    _Pragma("GCC unroll 4") for (int a = 0; a < Q; a++) {
      acc[a][0] = _mm256_add_ps(acc[a][0], _mm256_mul_ps(_mm256_loadu_ps(q[a] + e), klo));
      acc[a][1] = _mm256_add_ps(acc[a][1], _mm256_mul_ps(_mm256_loadu_ps(q[a] + e + 8), khi));
    }
  }
  if (full < n) {
    load16_tail(type, kj, full, n, &klo, &khi);
    _Pragma("GCC unroll 4") for (int a = 0; a < Q; a++) {
      __m256 xlo, xhi;
      load16_tail(0, q[a], full, n, &xlo, &xhi);
      acc[a][0] = _mm256_add_ps(acc[a][0], _mm256_mul_ps(xlo, klo));
      acc[a][1] = _mm256_add_ps(acc[a][1], _mm256_mul_ps(xhi, khi));
    }
  }
  _Pragma("GCC unroll 4") for (int a = 0; a < Q; a++) out[a][j] = tree(acc[a][0], acc[a][1]);
}

/* tl_kern_dots_n over key rows of type T (TYPE as score_tile's): QS
 * queries at a time against each key row, the queries left over two and
 * then one at a time. */
#define DOTS(name, T, TYPE)                                                                \
  TARGET static void name(const float *const *q, size_t nq, const T *k, size_t stride,     \
                          size_t count, size_t n, float *const *out) {                     \
    const uint8_t *kb = (const uint8_t *)k;                                                \
    size_t rb = stride * sizeof(T);                                                        \
    for (size_t i = 0; i < nq;) {                                                          \
      size_t w = nq - i >= QS ? QS : nq - i >= 2 ? 2 : 1;                                  \
      for (size_t j = 0; j < count; j++)                                                   \
        if (w == QS) score_tile(TYPE, QS, q + i, kb + j * rb, rb, n, out + i, j);          \
        else if (w == 2) score_tile(TYPE, 2, q + i, kb + j * rb, rb, n, out + i, j);       \
        else score_tile(TYPE, 1, q + i, kb + j * rb, rb, n, out + i, j);                   \
      i += w;                                                                              \
    }                                                                                      \
  }
DOTS(dots_n, float, 0)
DOTS(dots_h, uint16_t, 1)
#undef DOTS

/* 8 elements of a row of type TYPE (load16's) at e as floats, those at or
 * past n (all of them when e >= n) read from a zero-filled copy as +0. */
TARGET static inline __attribute__((always_inline)) __m256 load8_tail(int type, const void *row,
                                                                      size_t e, size_t n) {
  size_t es = type == 0 ? 4 : 2;
  const uint8_t *p = (const uint8_t *)row + e * es;
  uint8_t t[32] = {0};
  if (e + 8 > n) {
    if (e < n) memcpy(t, p, (n - e) * es);
    p = t;
  }
  return type == 0 ? _mm256_loadu_ps((const float *)p)
                   : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* Probability rows p[0, Q) over value rows of type TYPE (load16's), each
 * over its own keys j < counts[a], for elements [e0, e0 + 8 V) (V = 8 /
 * Q vectors each: eight accumulators, each element's sum over the keys in
 * order) into out[a]: the keys every row reaches with each value step
 * converted once for all Q rows, then each row's own last keys. WHOLE:
 * the elements are all below d (plain loads); else the last pass, through
 * zero-filled copies. */
TARGET static inline __attribute__((always_inline)) void
weighted_pass(int type, int Q, bool whole, const float *const *p, const size_t *counts,
              const uint8_t *v, size_t row_bytes, size_t d, size_t e0, float *const *out) {
  const int V = 8 / Q;
  size_t lo = counts[0];
  __m256 acc[8], x[8];
  float t[64];
  _Pragma("GCC unroll 8") for (int a = 1; a < Q; a++) lo = counts[a] < lo ? counts[a] : lo;
  _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++) acc[c] = _mm256_setzero_ps();
  for (size_t j = 0; j < lo; j++) {
    const uint8_t *vj = v + j * row_bytes;
    _mm_prefetch((const char *)vj + CACHE_ROWS_AHEAD * row_bytes + e0 * (type == 0 ? 4 : 2),
                 _MM_HINT_T0);
    _Pragma("GCC unroll 8") for (int c = 0; c < V; c++)
      x[c] = whole ? load8_tail(type, vj, e0 + 8 * (size_t)c, e0 + 8 * (size_t)c + 8)
                   : load8_tail(type, vj, e0 + 8 * (size_t)c, d);
    _Pragma("GCC unroll 8") for (int a = 0; a < Q; a++) {
      __m256 pj = _mm256_set1_ps(p[a][j]);
      _Pragma("GCC unroll 8") for (int c = 0; c < V; c++)
        acc[a * V + c] = _mm256_add_ps(acc[a * V + c], _mm256_mul_ps(pj, x[c]));
    }
  }
  _Pragma("GCC unroll 8") for (int a = 0; a < Q; a++) {
    for (size_t j = lo; j < counts[a]; j++) {
      __m256 pj = _mm256_set1_ps(p[a][j]);
      _Pragma("GCC unroll 8") for (int c = 0; c < V; c++)
        acc[a * V + c] = _mm256_add_ps(
            acc[a * V + c], _mm256_mul_ps(pj, load8_tail(type, v + j * row_bytes,
                                                         e0 + 8 * (size_t)c, d)));
    }
    _Pragma("GCC unroll 8") for (int c = 0; c < V; c++) _mm256_storeu_ps(t + 8 * c, acc[a * V + c]);
    memcpy(out[a] + e0, t, (d - e0 < 8 * (size_t)V ? d - e0 : 8 * (size_t)V) * sizeof(float));
  }
}

/* tl_kern_weighted_n over value rows of type T (TYPE as weighted_pass's):
 * eight probability rows at a time (one vector of elements each), then
 * four, two (decoding's pair of heads: 32 elements each per pass, a cache
 * line of a binary16 row), one (64 elements). */
#define WEIGHTED(name, T, TYPE)                                                            \
  TARGET static void name(const float *const *p, const size_t *counts, size_t nq,          \
                          const T *v, size_t stride, size_t d, float *const *out) {        \
    const uint8_t *vb = (const uint8_t *)v;                                                \
    size_t rb = stride * sizeof(T);                                                        \
    for (size_t i = 0; i < nq;) {                                                          \
      size_t w = nq - i >= 8 ? 8 : nq - i >= 4 ? 4 : nq - i >= 2 ? 2 : 1, e0 = 0;          \
      for (; e0 + 64 / w <= d; e0 += 64 / w)                                               \
        if (w == 8) weighted_pass(TYPE, 8, true, p + i, counts + i, vb, rb, d, e0, out + i); \
        else if (w == 4) weighted_pass(TYPE, 4, true, p + i, counts + i, vb, rb, d, e0, out + i); \
        else if (w == 2) weighted_pass(TYPE, 2, true, p + i, counts + i, vb, rb, d, e0, out + i); \
        else weighted_pass(TYPE, 1, true, p + i, counts + i, vb, rb, d, e0, out + i);      \
      if (e0 < d) {                                                                        \
        if (w == 8) weighted_pass(TYPE, 8, false, p + i, counts + i, vb, rb, d, e0, out + i); \
        else if (w == 4) weighted_pass(TYPE, 4, false, p + i, counts + i, vb, rb, d, e0, out + i); \
        else if (w == 2) weighted_pass(TYPE, 2, false, p + i, counts + i, vb, rb, d, e0, out + i); \
        else weighted_pass(TYPE, 1, false, p + i, counts + i, vb, rb, d, e0, out + i);     \
      }                                                                                    \
      i += w;                                                                              \
    }                                                                                      \
  }
WEIGHTED(weighted_n, float, 0)
WEIGHTED(weighted_h, uint16_t, 1)
#undef WEIGHTED

TL_KERN_DOTS_FROM_N(TARGET)

/* The one- and two-query weighted forms through the n-query kernel (each
 * output is computed on its own there, so exactly the single kernel's). */
TARGET static void weighted(const float *p, size_t count, const float *v, size_t stride,
                            size_t d, float *out) {
  weighted_n(&p, &count, 1, v, stride, d, &out);
}

TARGET static void weighted2(const float *p0, const float *p1, size_t count, const float *v,
                             size_t stride, size_t d, float *out0, float *out1) {
  const float *p[2] = {p0, p1};
  const size_t counts[2] = {count, count};
  float *out[2] = {out0, out1};
  weighted_n(p, counts, 2, v, stride, d, out);
}

const tl_kernels TL_AVX2_TABLE = {
    TL_AVX2_ISA, TL_AVX2_NAME, {rows_f32, rows_f16, rows_bf16, rows_q8, rows_q4},
    {tile_f32, tile_f16, tile_bf16, tile_q8, tile_q4},
    quantize_x, dots, weighted, dots2, weighted2, dots_n, weighted_n, exps,
    f16_to_f32, f32_to_f16, dots_h, weighted_h};

#endif

