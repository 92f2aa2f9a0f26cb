/* fast/4 kernels with AVX-512: exact integer block sums with VNNI on
 * packed q8/q4 weights (16 blocks per 512-bit register, one per lane, so
 * lane j is F-4's lane b mod 16),
 * float products in one 512-bit accumulator (lanes A_0..15 of F-6) with
 * masked tails; tiles of rows x tokens for prefill, two rows with prefetch
 * for one token; F-3's quantizer; the attention scores (F-6 dots) and
 * probability-weighted values. Each is checked bit for bit against its
 * scalar twin (kernels_dispatch suite). */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/kernels_impl.h"
#include "kernels/mutant.h"
#include "math/detmath.h"

#if TL_KERN_HAVE_X86

#define TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni,f16c")))

TARGET static inline float tree8(__m256 s) {
  __m128 c = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  __m128 d = _mm_add_ps(c, _mm_movehl_ps(c, c));
  return _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps(d, d, 1)));
}


/* The mask of the first min(left, 16) lanes. */
static inline __mmask16 first16(size_t left) {
  return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

/* The mask of the lanes of elements [at, at + 16) below n: every masked
 * tail (a window at or past n has none). */
static inline __mmask16 lanes_below(size_t at, size_t n) {
  return first16(at < n ? n - at : 0);
}

TARGET static inline float tree16(__m512 a) {
  return tree8(_mm256_add_ps(_mm512_castps512_ps256(a),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1))));
}

/* tree16 of four accumulators at once (F-6's T, each add the same pair in
 * the same operand order): B for two rows per add (lower 256 bits plus
 * upper), C for four (128-bit quarters), then D and the result within
 * each quarter; lane 0 of quarter i is row i's. 5 adds and 9 shuffles for
 * four results where tree16 takes 4 and 4 each. */
TARGET static inline __m128 tree16x4(__m512 a, __m512 b, __m512 c, __m512 d) {
  __m512 p = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  __m512 q = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  __m512 r = _mm512_add_ps(_mm512_shuffle_f32x4(p, q, TL_MUTANT_TREE4_LO),
                           _mm512_shuffle_f32x4(p, q, 0xDD));
  r = _mm512_add_ps(r, _mm512_shuffle_ps(r, r, 0x0E));
  r = _mm512_add_ps(r, _mm512_shuffle_ps(r, r, 0x01));
  return _mm512_castps512_ps128(
      _mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), r));
}

/* Bytes ahead of each row's reads to prefetch, and how: for one token
 * (decoding, which streams every weight once per token) 8 KB ahead into
 * L2 only (prefetcht1), for a tile of tokens (prefill, which reads the
 * rows again for the next tokens while they are in cache) into every
 * level. With the hardware prefetcher alone a q8 row streamed at 9-10
 * GB/s on the Intel VM; on the AMD one, 2 KB ahead gave 18.7 GB/s, 8 KB
 * 23-25, and non-temporal 8 KB 25-28 of the 37-40 a plain 512-bit read
 * reaches; there, on a loaded host, per CPU second, a row read at 10-14
 * GB/s with prefetchnta or prefetcht0 8 KB ahead and at 21-23 with
 * prefetcht1 (t2 alike, 2 KB ahead 13-18) against a plain read's 19-25:
 * likely because a prefetch to L1 holds one of its few miss buffers.
 * bench/kernel_bench's cold column measures it. */
#define PREFETCH_HINT(tokens) ((tokens) == 1 ? _MM_HINT_T1 : _MM_HINT_T0)
#define PREFETCH_AHEAD 8192

/* 64 bytes at p: plain (FULL), or the lanes of mask m (the rest 0). */
TARGET static inline __m512i load64(const uint8_t *p, __mmask64 m, bool full) {
  return full ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(m, p);
}

/* One group of TILE_FN: blocks [b, b + 16) (FULL: plain loads), or the
 * short last one, masked. */
#define TILE_GROUP(R, T, Q4, FULL)                                                         \
  do {                                                                                     \
    size_t m = FULL ? 16 : nb - b, stride = 4 * m;                                         \
    __mmask64 cm = FULL ? ~(__mmask64)0 : ((__mmask64)1 << stride) - 1;                    \
    __mmask16 sm = first16(m);                                                             \
    const uint8_t *c[R];                                                                   \
    __m512 dw[R];                                                                          \
    __m512i s[R][T];                                                                       \
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {                                  \
      const uint8_t *g = w + (size_t)i * row_bytes + b * bb;                               \
      _Pragma("GCC unroll 9") for (size_t o = 0; o < 16 * bb; o += 64)                     \
        _mm_prefetch((const char *)g + o + PREFETCH_AHEAD, PREFETCH_HINT(T));              \
      dw[i] = FULL ? _mm512_loadu_ps(g) : _mm512_maskz_loadu_ps(sm, g);                    \
      c[i] = g + stride;                                                                   \
    }                                                                                      \
    _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {                                  \
      __m512i bias = _mm512_loadu_si512(Q4 ? xs[t].q4_bias + b : xs[t].q8_bias + b);       \
      _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) s[i][t] = bias;                  \
    }                                                                                      \
    _Pragma("GCC unroll 8") for (int st = 0; st < 8; st++) {                               \
      __m512i u[R];                                                                        \
      _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {                                \
        if (Q4) {                                                                          \
          __m512i raw = load64(c[i] + stride * (size_t)(st / 2), cm, FULL);                \
          u[i] = _mm512_and_si512(st % 2 ? _mm512_srli_epi16(raw, 4) : raw,                \
                                  _mm512_set1_epi8(0x0F));                                 \
        } else {                                                                           \
          u[i] = load64(c[i] + stride * (size_t)st, cm, FULL);                             \
        }                                                                                  \
      }                                                                                    \
      _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {                                \
        __m512i xv = _mm512_loadu_si512(xs[t].codes + 32 * b + 64 * st);                   \
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                                \
          s[i][t] = _mm512_dpbusd_epi32(s[i][t], u[i], xv);                                \
      }                                                                                    \
    }                                                                                      \
    _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {                                  \
      __m512 dx = _mm512_loadu_ps(xs[t].scales + b);                                       \
      _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                                  \
        acc[i][t] = _mm512_add_ps(                                                         \
            acc[i][t],                                                                     \
            _mm512_mul_ps(_mm512_cvtepi32_ps(s[i][t]), _mm512_mul_ps(dw[i], dx)));         \
    }                                                                                      \
  } while (0)
/* Rows [0, R) of a packed q8 (Q4 false) or q4 matrix times the
 * activations of tokens [0, T), a group of 16 blocks at a time: one i32
 * lane per block, whose 8 steps are 8 vpdpbusd (unsigned weights times
 * signed codes, started from the activation's bias, which takes the
 * weights' offset out: the exact block sum), then F-4's one conversion,
 * scale product and add per block onto lane b mod 16. Each row's steps are
 * loaded once for the T tokens, each token's once for the R rows. Whole
 * groups load plain; a short last one masked: its missing blocks are 0 in
 * every operand, so their lanes add +0. */
#define TILE_FN(name, R, T, Q4)                                                            \
  TARGET static void name(const uint8_t *w, size_t row_bytes, size_t nb,                  \
                          const tl_kern_x *xs, float *y, size_t y_stride) {                 \
    const size_t bb = Q4 ? 20 : 36;                                                        \
    __m512 acc[R][T];                                                                      \
    size_t b = 0;                                                                          \
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                                    \
      _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) acc[i][t] = _mm512_setzero_ps(); \
    for (; b + 16 <= nb; b += 16) TILE_GROUP(R, T, Q4, true);                              \
    if (b < nb) TILE_GROUP(R, T, Q4, false);                                               \
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                                    \
      _Pragma("GCC unroll 4") for (int t = 0; t < T; t++)                                  \
        y[(size_t)t * y_stride + (size_t)i] = tree16(acc[i][t]);                           \
  }
TILE_FN(q8_tile4x4, 4, 4, false)
TILE_FN(q8_tile4x1, 4, 1, false)
TILE_FN(q8_tile1x4, 1, 4, false)
TILE_FN(q8_tile1x1, 1, 1, false)
TILE_FN(q8_tile2x1, 2, 1, false)
TILE_FN(q4_tile4x4, 4, 4, true)
TILE_FN(q4_tile4x1, 4, 1, true)
TILE_FN(q4_tile1x4, 1, 4, true)
TILE_FN(q4_tile1x1, 1, 1, true)
TILE_FN(q4_tile2x1, 2, 1, true)
#undef TILE_FN
#undef TILE_GROUP

/* A tile function: rows [0, R) x tokens [0, T); len is the number of
 * blocks (q8/q4) or of elements (float types). */
typedef void (*tile_fn)(const uint8_t *w, size_t row_bytes, size_t len, const tl_kern_x *xs,
                        float *y, size_t y_stride);

/* The tiles of one width of tokens: four rows, one row. */
typedef struct tile_pair {
  tile_fn four, one;
} tile_pair;

/* A type's tiles: tb tokens wide (the widest), 4 wide (a float tail of 4
 * or 5 tokens, so a prefill chunk of 64 is 10 x 6 + 4; for q8/q4 tb is 4)
 * and 1 wide, and two rows of one token (decoding). */
typedef struct tile_set {
  size_t tb;
  size_t few; /* calls of at most this many tokens: token by token (single) */
  tile_pair wide, four, single;
  tile_fn two_rows;
} tile_set;

/* Tokens in blocks of the widest tile that fits, and for each block every
 * row, so a call's rows stay in cache across tokens. */
TARGET static inline void tile_run(const tile_set *ts, const uint8_t *w, size_t row_bytes,
                                   size_t len, const tl_kern_x *xs, size_t tokens, size_t rows,
                                   float *y, size_t y_stride) {
  if (tokens == 1) {
    /* one token (decoding): two rows at a time, nearly one sequential
     * stream through the weights, which reads memory faster here than four
     * rows side by side (and two chains hide the adds' latency) */
    size_t r = 0;
    for (; r + 2 <= rows; r += 2) ts->two_rows(w + r * row_bytes, row_bytes, len, xs, y + r, 0);
    if (r < rows) ts->single.one(w + r * row_bytes, row_bytes, len, xs, y + r, 0);
    return;
  }
  for (size_t t = 0, width; t < tokens; t += width) {
    size_t left = tokens - t, r = 0;
    /* q8/q4, at most four tokens (a serving batch's decode step): 4x1 per
     * token, the first pass prefetching the cold rows as one-token decoding
     * does and the others reading them from L1; the 4x4 tile read them
     * 20-40% slower per CPU second (200 MB of 1024-wide rows, one thread) */
    const bool few = tokens <= ts->few;
    const tile_pair *tp = few              ? &ts->single
                          : left >= ts->tb ? &ts->wide
                          : left >= 4      ? &ts->four
                                           : &ts->single;
    float *yt = y + t * y_stride;
    width = few ? 1 : left >= ts->tb ? ts->tb : left >= 4 ? 4 : 1;
    for (; r + 4 <= rows; r += 4) tp->four(w + r * row_bytes, row_bytes, len, xs + t, yt + r, y_stride);
    for (; r < rows; r++) tp->one(w + r * row_bytes, row_bytes, len, xs + t, yt + r, y_stride);
  }
}

static const tile_set q8_tiles = {4,
                                  4,
                                  {q8_tile4x4, q8_tile1x4},
                                  {q8_tile4x4, q8_tile1x4},
                                  {q8_tile4x1, q8_tile1x1},
                                  q8_tile2x1};
static const tile_set q4_tiles = {4,
                                  4,
                                  {q4_tile4x4, q4_tile1x4},
                                  {q4_tile4x4, q4_tile1x4},
                                  {q4_tile4x1, q4_tile1x1},
                                  q4_tile2x1};

/* A bf16 vector's 16 values (the low half of v) widened to f32, each
 * into the high half of its lane: one word permutation, the low words
 * zeroed (exact). */
TARGET static inline __m512 bf16_widen(__m512i v) {
  const __m512i hi = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0,
                                      6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, TL_MUTANT_BF16_LANE0, 0);
  return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, hi, v));
}

/* Up to 16 weights (mask m; FULL: all 16, plain loads) as 16 floats;
 * absent ones are +0. */
TARGET static inline __m512 load16(int type, const uint8_t *p, __mmask16 m, bool full) {
  __m256i h;
  if (type == 0) return full ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
  h = full ? _mm256_loadu_si256((const __m256i *)(const void *)p) : _mm256_maskz_loadu_epi16(m, p);
  return type == 1 ? _mm512_cvtph_ps(h) : bf16_widen(_mm512_castsi256_si512(h));
}

/* One step of FTILE_FN: elements [k, k + 16) (the lanes of m; FULL: all
 * 16). The prefetch is for one token (decoding) only: a tile reads the
 * call's rows again for each block of tokens, from cache. */
#define FTILE_STEP(R, T, TYPE, FULL)                                                       \
  do {                                                                                     \
    __m512 wv[R];                                                                          \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {                                  \
      const uint8_t *wi = w + (size_t)i * row_bytes + k * es;                              \
      if (T == 1) _mm_prefetch((const char *)wi + PREFETCH_AHEAD, PREFETCH_HINT(T));       \
      wv[i] = load16(TYPE, wi, m, FULL);                                                   \
    }                                                                                      \
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {                                  \
      const float *xt = xs[TL_MUTANT_TILE_TOKEN(t, T)].f + k;                              \
      __m512 xv = FULL ? _mm512_loadu_ps(xt) : _mm512_maskz_loadu_ps(m, xt);               \
      _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                                  \
        acc[i][t] = _mm512_add_ps(acc[i][t], _mm512_mul_ps(wv[i], xv));                    \
    }                                                                                      \
  } while (0)

/* Rows [0, R) of an f32 (TYPE 0), f16 (1) or bf16 (2) matrix times tokens
 * [0, T) (F-6): one 512-bit accumulator (lanes A_0..15) per (row, token),
 * R x T chains side by side; whole steps with plain loads, then a short
 * tail loaded zero-filled (F-6: a +-0 product changes no lane). */
#define FTILE_FN(name, R, T, TYPE)                                                         \
  TARGET static void name(const uint8_t *w, size_t row_bytes, size_t n,                   \
                          const tl_kern_x *xs, float *y, size_t y_stride) {                 \
    const size_t es = TYPE == 0 ? 4 : 2;                                                   \
    const __mmask16 m = first16(n % 16);                                                   \
    __m512 acc[R][T];                                                                      \
    size_t k = 0;                                                                          \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                                    \
      _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) acc[i][t] = _mm512_setzero_ps(); \
    for (; k + 16 <= n; k += 16) FTILE_STEP(R, T, TYPE, true);                             \
    if (k < n) FTILE_STEP(R, T, TYPE, false);                                              \
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {                                  \
      float *yt = y + (size_t)t * y_stride;                                                \
      if (R == 4) _mm_storeu_ps(yt, tree16x4(acc[0][t], acc[1][t], acc[2][t], acc[3][t]));  \
      else _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) yt[i] = tree16(acc[i][t]);  \
    }                                                                                      \
  }
/* Tokens per float tile: 4 x 6 = 24 accumulators, 4 weight vectors and an
 * activation in the 32 registers. A product is one multiply and one add
 * (F-2), and this machine issues one 512-bit multiply and one add per
 * cycle; a widening (vpermw, vcvtph2ps) takes the same pipes, about a
 * cycle each, so a row's conversion serves 6 tokens (4 in a 4 x 4 tile)
 * and an activation 4 rows. 3 x 8 and 2 x 12 (fewer widenings, more
 * activation loads) were no faster, nor f32 rows widened once per call
 * (twice the bytes in cache): docs/fast-profile.md. */
#define FLOAT_TOKENS 6
#define FLOAT_TILES(prefix, TYPE)                                                          \
  FTILE_FN(prefix##_tile4xT, 4, FLOAT_TOKENS, TYPE)                                        \
  FTILE_FN(prefix##_tile1xT, 1, FLOAT_TOKENS, TYPE)                                        \
  FTILE_FN(prefix##_tile4x4, 4, 4, TYPE)                                                   \
  FTILE_FN(prefix##_tile1x4, 1, 4, TYPE)                                                   \
  FTILE_FN(prefix##_tile4x1, 4, 1, TYPE)                                                   \
  FTILE_FN(prefix##_tile1x1, 1, 1, TYPE)                                                   \
  FTILE_FN(prefix##_tile2x1, 2, 1, TYPE)                                                   \
  static const tile_set prefix##_tiles = {FLOAT_TOKENS,                                     \
                                          0,                                                \
                                          {prefix##_tile4xT, prefix##_tile1xT},             \
                                          {prefix##_tile4x4, prefix##_tile1x4},             \
                                          {prefix##_tile4x1, prefix##_tile1x1},             \
                                          prefix##_tile2x1};
FLOAT_TILES(f32, 0)
FLOAT_TILES(f16, 1)
FLOAT_TILES(bf16, 2)
#undef FLOAT_TILES
#undef FTILE_FN
#undef FTILE_STEP

/* The table's entries: rows is a tile of one token. */
#define ENTRY_FNS(prefix, len_of)                                                          \
  TARGET static void tile_##prefix(const uint8_t *w, size_t row_bytes, size_t n,          \
                                   const tl_kern_x *xs, size_t tokens, size_t rows,        \
                                   float *y, size_t y_stride) {                            \
    tile_run(&prefix##_tiles, w, row_bytes, len_of, xs, tokens, rows, y, y_stride);       \
  }                                                                                        \
  TARGET static void rows_##prefix(const uint8_t *w, size_t row_bytes, size_t n,          \
                                   const tl_kern_x *x, size_t rows, float *y) {            \
    tile_run(&prefix##_tiles, w, row_bytes, len_of, x, 1, rows, y, 0);                     \
  }
ENTRY_FNS(q8, (n + 31) / 32)
ENTRY_FNS(q4, (n + 31) / 32)
ENTRY_FNS(f32, n)
ENTRY_FNS(f16, n)
ENTRY_FNS(bf16, n)
#undef ENTRY_FNS

/* F-3, one block of 32 at a time: the same maximum (exact), the same f32
 * divisions (vdivps is correctly rounded, as is the scalar '/'), the same
 * clamp, and RNE by the conversion under the default rounding mode (the
 * scalar twin's rne127); codes of absent positions (and of the padding
 * blocks) are 0 since their inputs load as +0. The block's 8 steps of 4
 * codes go 64 bytes apart (one scatter); its code sum is exact. */
TARGET static void quantize_x(const float *x, size_t n, int8_t *codes, float *scales,
                              int32_t *q8_bias, int32_t *q4_bias) {
  const __m512 lim = _mm512_set1_ps(127.0f), nlim = _mm512_set1_ps(-127.0f);
  const __m256i steps = _mm256_set_epi32(112, 96, 80, 64, 48, 32, 16, 0); /* x 4 bytes */
  size_t total = tl_kern_groups(n) * 16;
  for (size_t b = 0; b < total; b++) {
    size_t lo = 32 * b;
    __mmask16 m0 = lanes_below(lo, n), m1 = lanes_below(lo + 16, n);
    __m512 v0 = _mm512_maskz_loadu_ps(m0, x + lo), v1 = _mm512_maskz_loadu_ps(m1, x + lo + 16);
    float a = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    float d = a == 0.0f ? 0.0f : a / 127.0f;
    __m512i c0 = _mm512_setzero_si512(), c1 = _mm512_setzero_si512();
    int32_t sum;
    if (d != 0.0f) {
      __m512 dv = _mm512_set1_ps(d);
      c0 = _mm512_cvtps_epi32(_mm512_max_ps(_mm512_min_ps(_mm512_div_ps(v0, dv), lim), nlim));
      c1 = _mm512_cvtps_epi32(_mm512_max_ps(_mm512_min_ps(_mm512_div_ps(v1, dv), lim), nlim));
    }
    sum = _mm512_reduce_add_epi32(_mm512_add_epi32(c0, c1));
    _mm256_i32scatter_epi32(codes + 32 * (b / 16 * 16) + 4 * (b % 16), steps,
                            _mm256_set_m128i(_mm512_cvtepi32_epi8(c1), _mm512_cvtepi32_epi8(c0)),
                            4);
    scales[b] = d;
    q8_bias[b] = -128 * sum;
    q4_bias[b] = -8 * sum;
  }
}

/* Rows of the binary16 KV cache ahead of a decoding step's reads to
 * prefetch: it streams from memory (the whole cache once per token), and
 * the hardware prefetcher alone left the direct reads slower than a
 * conversion pass. */
#define CACHE_ROWS_AHEAD 16

/* 16 (masked) elements of a key or value row as floats: an f32 row, or
 * the fast lane's binary16 cache row (F-11) converted exactly. */
TARGET static inline __m512 load_f32(const float *p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
TARGET static inline __m512 load_f16(const uint16_t *p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

/* The scores of queries q[0, Q) against keys j .. j + K - 1 (F-6 each:
 * one 512-bit accumulator per score, lane i mod 16, masked tail, tree T):
 * each key row (elements of type T, loaded by LOAD) and query loaded once
 * per step for the whole tile, Q x K independent chains of adds hiding
 * their latency, the loops unrolled so that the accumulators stay in
 * registers. */
#define SCORE_TILE(name, Q, K, T, LOAD, PF)                                                \
  TARGET static inline void name(const float *const *q, const T *k, size_t stride,         \
                                 size_t j, size_t n, float *const *out) {                  \
    __m512 acc[Q][K];                                                                      \
    _Pragma("GCC unroll 8") for (int a = 0; a < Q; a++)                                    \
      _Pragma("GCC unroll 8") for (int c = 0; c < K; c++) acc[a][c] = _mm512_setzero_ps(); \
    for (size_t e = 0; e < n; e += 16) {                                                   \
      __mmask16 m = first16(n - e);                                                        \
      __m512 kv[K];                                                                        \
      if (PF && e % (64 / sizeof(T)) == 0)                                                 \
        _Pragma("GCC unroll 8") for (int c = 0; c < K; c++)                                \
          _mm_prefetch((const char *)(k + (j + (size_t)c + PF) * stride + e), _MM_HINT_T0); \
      _Pragma("GCC unroll 8") for (int c = 0; c < K; c++)                                  \
        kv[c] = LOAD(k + (j + (size_t)c) * stride + e, m);                                 \
      _Pragma("GCC unroll 8") for (int a = 0; a < Q; a++) {                                \
        __m512 x = _mm512_maskz_loadu_ps(m, q[a] + e);                                     \
        _Pragma("GCC unroll 8") for (int c = 0; c < K; c++)                                \
          acc[a][c] = _mm512_add_ps(acc[a][c], _mm512_mul_ps(x, kv[c]));                   \
      }                                                                                    \
    }                                                                                      \
    if (K % 4 == 0) /* four keys' scores of a query together */                           \
      _Pragma("GCC unroll 8") for (int a = 0; a < Q; a++)                                  \
        _Pragma("GCC unroll 8") for (int c = 0; c < K; c += 4)                             \
          _mm_storeu_ps(out[a] + j + c, tree16x4(acc[a][c], acc[a][(c + 1) % K],           \
                                                 acc[a][(c + 2) % K], acc[a][(c + 3) % K])); \
    else if (K == 2 && Q % 2 == 0) /* two keys of two queries */                           \
      _Pragma("GCC unroll 8") for (int a = 0; a < Q; a += 2) {                             \
        __m128 r = tree16x4(acc[a][0], acc[a][K - 1], acc[(a + 1) % Q][0],                 \
                            acc[(a + 1) % Q][K - 1]);                                      \
        _mm_storel_pi((__m64 *)(void *)(out[a] + j), r);                                   \
        _mm_storeh_pi((__m64 *)(void *)(out[(a + 1) % Q] + j), r);                         \
      }                                                                                    \
    else                                                                                   \
      _Pragma("GCC unroll 8") for (int a = 0; a < Q; a++)                                  \
        _Pragma("GCC unroll 8") for (int c = 0; c < K; c++)                                \
          out[a][j + (size_t)c] = tree16(acc[a][c]);                                       \
  }

/* tl_kern_dots_n (and so dots and dots2) over keys of type T: eight
 * queries at a time against two keys at a time, two against eight, one
 * against eight, then the keys left one at a time. */
#define DOTS_N(suffix, T, LOAD, PF)                                                        \
  SCORE_TILE(scores_1x1##suffix, 1, 1, T, LOAD, 0)                                         \
  SCORE_TILE(scores_1x8##suffix, 1, 8, T, LOAD, PF)                                        \
  SCORE_TILE(scores_2x8##suffix, 2, 8, T, LOAD, PF)                                        \
  SCORE_TILE(scores_8x2##suffix, 8, 2, T, LOAD, PF)                                        \
  TARGET static void dots_n##suffix(const float *const *q, size_t nq, const T *k,          \
                                    size_t stride, size_t count, size_t n,                 \
                                    float *const *out) {                                   \
    for (size_t i = 0; i < nq;) {                                                          \
      size_t w = nq - i >= 8 ? 8 : nq - i >= 2 ? 2 : 1, step = w == 8 ? 2 : 8, j = 0;      \
      for (; j + step <= count; j += step)                                                 \
        if (w == 8) scores_8x2##suffix(q + i, k, stride, j, n, out + i);                   \
        else if (w == 2) scores_2x8##suffix(q + i, k, stride, j, n, out + i);              \
        else scores_1x8##suffix(q + i, k, stride, j, n, out + i);                          \
      for (size_t a = i; a < i + w; a++)                                                   \
        for (size_t jj = j; jj < count; jj++)                                              \
          scores_1x1##suffix(q + a, k, stride, jj, n, out + a);                            \
      i += w;                                                                              \
    }                                                                                      \
  }
DOTS_N(, float, load_f32, 0)
DOTS_N(_h, uint16_t, load_f16, CACHE_ROWS_AHEAD)
#undef DOTS_N
#undef SCORE_TILE

TL_KERN_DOTS_FROM_N(TARGET)

/* tl_kern_weighted over value rows of type T: 128 elements at a time in
 * eight accumulators (masked at the end), each element's sum over j in
 * order; unrolled, so that they stay in registers. */
#define WEIGHTED(name, T, LOAD)                                                            \
  TARGET static void name(const float *p, size_t count, const T *v, size_t stride,         \
                          size_t d, float *out) {                                          \
    for (size_t e0 = 0; e0 < d; e0 += 128) {                                               \
      __m512 acc[8];                                                                       \
      __mmask16 m[8];                                                                      \
      _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++) {                                \
        m[c] = lanes_below(e0 + 16 * (size_t)c, d);                                        \
        acc[c] = _mm512_setzero_ps();                                                      \
      }                                                                                    \
      for (size_t j = 0; j < count; j++) {                                                 \
        __m512 pj = _mm512_set1_ps(p[j]);                                                  \
        const T *vj = v + j * stride + e0;                                                 \
        _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++)                                \
          acc[c] = _mm512_add_ps(acc[c], _mm512_mul_ps(pj, LOAD(vj + 16 * c, m[c])));      \
      }                                                                                    \
      _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++)                                  \
        _mm512_mask_storeu_ps(out + e0 + 16 * c, m[c], acc[c]);                            \
    }                                                                                      \
  }

/* weighted for two probability rows: 64 elements at a time, each value
 * row loaded once for both (8 accumulators each). */
#define WEIGHTED2(name, T, LOAD, W, PF)                                                   \
  TARGET static void name(const float *p0, const float *p1, size_t count, const T *v,      \
                          size_t stride, size_t d, float *out0, float *out1) {             \
    for (size_t e0 = 0; e0 < d; e0 += 16 * W) {                                            \
      __m512 a0[W], a1[W];                                                                 \
      __mmask16 m[W];                                                                      \
      _Pragma("GCC unroll 8") for (int c = 0; c < W; c++) {                                \
        m[c] = lanes_below(e0 + 16 * (size_t)c, d);                                        \
        a0[c] = a1[c] = _mm512_setzero_ps();                                               \
      }                                                                                    \
      for (size_t j = 0; j < count; j++) {                                                 \
        __m512 b0 = _mm512_set1_ps(p0[j]), b1 = _mm512_set1_ps(p1[j]);                     \
        const T *vj = v + j * stride + e0;                                                 \
        if (PF)                                                                            \
          for (size_t o = 0; o < 16 * W * sizeof(T); o += 64)                              \
            _mm_prefetch((const char *)(vj + PF * stride) + o, _MM_HINT_T0);               \
        _Pragma("GCC unroll 8") for (int c = 0; c < W; c++) {                              \
          __m512 x = LOAD(vj + 16 * c, m[c]);                                              \
          a0[c] = _mm512_add_ps(a0[c], _mm512_mul_ps(b0, x));                              \
          a1[c] = _mm512_add_ps(a1[c], _mm512_mul_ps(b1, x));                              \
        }                                                                                  \
      }                                                                                    \
      _Pragma("GCC unroll 8") for (int c = 0; c < W; c++) {                                \
        _mm512_mask_storeu_ps(out0 + e0 + 16 * c, m[c], a0[c]);                            \
        _mm512_mask_storeu_ps(out1 + e0 + 16 * c, m[c], a1[c]);                            \
      }                                                                                    \
    }                                                                                      \
  }
WEIGHTED(weighted, float, load_f32)
WEIGHTED(weighted1_h, uint16_t, load_f16)
WEIGHTED2(weighted2, float, load_f32, 4, 0)
/* the binary16 rows a whole row (128 elements) per pass, so each streams
 * from memory once */
WEIGHTED2(weighted2_h, uint16_t, load_f16, 8, CACHE_ROWS_AHEAD)
#undef WEIGHTED
#undef WEIGHTED2

/* tl_kern_weighted_n over value rows of type T: four probability rows at
 * a time, 64 elements per pass (16 accumulators), each value row loaded
 * once for the rows that reach it; every element's sum over the keys in
 * order; the rows left two at a time where they reach as far (decoding's
 * pair of heads: weighted2, a whole binary16 row per pass), then one. */
#define WEIGHTED_N(name, T, LOAD, ONE, TWO)                                                \
  TARGET static void name(const float *const *p, const size_t *counts, size_t nq, const T *v, \
                          size_t stride, size_t d, float *const *out) {                    \
    size_t i = 0;                                                                          \
    for (; i + 4 <= nq; i += 4) {                                                          \
      size_t lo = counts[i], hi = counts[i];                                               \
      for (size_t c = 1; c < 4; c++) {                                                     \
        lo = counts[i + c] < lo ? counts[i + c] : lo;                                      \
        hi = counts[i + c] > hi ? counts[i + c] : hi;                                      \
      }                                                                                    \
      for (size_t e0 = 0; e0 < d; e0 += 64) {                                              \
        __m512 acc[4][4];                                                                  \
        __mmask16 m[4];                                                                    \
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {                              \
          m[c] = lanes_below(e0 + 16 * (size_t)c, d);                                      \
          _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) acc[r][c] = _mm512_setzero_ps(); \
        }                                                                                  \
        for (size_t j = 0; j < lo; j++) {                                                  \
          const T *vj = v + j * stride + e0;                                               \
          __m512 b[4];                                                                     \
          _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) b[r] = _mm512_set1_ps(p[i + (size_t)r][j]); \
          _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {                            \
            __m512 x = LOAD(vj + 16 * c, m[c]);                                            \
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                            \
              acc[r][c] = _mm512_add_ps(acc[r][c], _mm512_mul_ps(b[r], x));                \
          }                                                                                \
        }                                                                                  \
        for (size_t j = lo; j < hi; j++) { /* the rows that reach further */               \
          const T *vj = v + j * stride + e0;                                               \
          _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {                            \
            __m512 b;                                                                      \
            if (counts[i + (size_t)r] <= j) continue;                                      \
            b = _mm512_set1_ps(p[i + (size_t)r][j]);                                       \
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)                            \
              acc[r][c] = _mm512_add_ps(acc[r][c],                                         \
                                        _mm512_mul_ps(b, LOAD(vj + 16 * c, m[c])));        \
          }                                                                                \
        }                                                                                  \
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                                \
          _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)                              \
            _mm512_mask_storeu_ps(out[i + (size_t)r] + e0 + 16 * c, m[c], acc[r][c]);      \
      }                                                                                    \
    }                                                                                      \
    for (; i + 2 <= nq && counts[i] == counts[i + 1]; i += 2)                              \
      TWO(p[i], p[i + 1], counts[i], v, stride, d, out[i], out[i + 1]);                    \
    for (; i < nq; i++) ONE(p[i], counts[i], v, stride, d, out[i]);                        \
  }
WEIGHTED_N(weighted_n, float, load_f32, weighted, weighted2)
WEIGHTED_N(weighted_h, uint16_t, load_f16, weighted1_h, weighted2_h)
#undef WEIGHTED_N

/* tl_kern_exps: tl_exp's own steps (math/detmath.c) on eight doubles at a
 * time — x - sub in f32, widened exactly; k = x/ln2 rounded half away from
 * zero by truncating t +- 0.5; r = (x - k ln2_hi) - k ln2_lo; the same
 * Horner polynomial with the same constants; times 2^k built from its
 * bits; narrowed with RNE as the scalar cast — each one IEEE operation
 * with the scalar's rounding, so the same bits. Lanes outside the plain
 * path (NaN, overflow, underflow, a subnormal 2^k) take the scalar
 * function itself. */
TARGET static void exps(const float *x, float sub, size_t n, float *out) {
  const __m512d inv_ln2 = _mm512_set1_pd(1.44269504088896338700e+00);
  const __m512d ln2_hi = _mm512_set1_pd(6.93147180369123816490e-01);
  const __m512d ln2_lo = _mm512_set1_pd(1.90821492927058770002e-10);
  static const double coef[15] = {
      1.0 / 87178291200.0, 1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
      1.0 / 3628800.0,     1.0 / 362880.0,     1.0 / 40320.0,      1.0 / 5040.0,
      1.0 / 720.0,         1.0 / 120.0,        1.0 / 24.0,         1.0 / 6.0,
      0.5,                 1.0,                1.0};
  for (size_t i = 0; i < n; i += 8) {
    __mmask8 m = n - i >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (n - i)) - 1);
    __m256 xf = _mm256_sub_ps(_mm256_maskz_loadu_ps(m, x + i), _mm256_set1_ps(sub));
    __m512d xd = _mm512_cvtps_pd(xf), t = _mm512_mul_pd(xd, inv_ln2), kd, r, p;
    __mmask8 neg = _mm512_cmp_pd_mask(t, _mm512_setzero_pd(), _CMP_LT_OQ), special;
    __m256i k = _mm512_cvttpd_epi32(_mm512_mask_blend_pd(
        neg, _mm512_add_pd(t, _mm512_set1_pd(0.5)), _mm512_sub_pd(t, _mm512_set1_pd(0.5))));
    kd = _mm512_cvtepi32_pd(k);
    r = _mm512_sub_pd(_mm512_sub_pd(xd, _mm512_mul_pd(kd, ln2_hi)), _mm512_mul_pd(kd, ln2_lo));
    p = _mm512_set1_pd(coef[0]);
    _Pragma("GCC unroll 14") for (int c = 1; c < 15; c++)
      p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(coef[c]));
    p = _mm512_mul_pd(p, _mm512_castsi512_pd(_mm512_slli_epi64(
                             _mm512_add_epi64(_mm512_cvtepi32_epi64(k), _mm512_set1_epi64(1023)), 52)));
    special = _mm512_cmp_pd_mask(xd, _mm512_set1_pd(709.782712893384), _CMP_NLE_UQ) |
              _mm512_cmp_pd_mask(xd, _mm512_set1_pd(-745.1332191019412), _CMP_LT_OQ) |
              _mm256_cmp_epi32_mask(k, _mm256_set1_epi32(-1022), _MM_CMPINT_LT) |
              _mm256_cmp_epi32_mask(k, _mm256_set1_epi32(1023), _MM_CMPINT_NLE);
    _mm256_mask_storeu_ps(out + i, m, _mm512_cvtpd_ps(p));
    for (special &= m; special != 0; special &= (__mmask8)(special - 1)) {
      size_t l = i + (size_t)__builtin_ctz(special);
      out[l] = tl_expf(x[l] - sub);
    }
  }
}

/* The KV cache's f16 rows (F-11), 16 at a time (exact, as the twin's
 * decoding), the tail through a masked load and store. */
TARGET static void f16_to_f32(const uint16_t *h, size_t n, float *out) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 m = first16(n - i);
    _mm512_mask_storeu_ps(out + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + i)));
  }
}

/* The KV cache's rows stored (F-11), 16 at a time with the RNE
 * conversion (IEEE: subnormals kept, an overflow inf, as the twin), the
 * tail through a masked load and store. */
TARGET static void f32_to_f16(const float *x, size_t n, uint16_t *out) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 m = first16(n - i);
    _mm256_mask_storeu_epi16(out + i, m,
                             _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
  }
}

const tl_kernels tl_kernels_avx512 = {
    TL_KERN_AVX512, "avx512", {rows_f32, rows_f16, rows_bf16, rows_q8, rows_q4},
    {tile_f32, tile_f16, tile_bf16, tile_q8, tile_q4},
    quantize_x,
    dots,
    weighted,
    dots2,
    weighted2,
    dots_n,
    weighted_n,
    exps,
    f16_to_f32,
    f32_to_f16,
    dots_n_h,
    weighted_h};

#endif
