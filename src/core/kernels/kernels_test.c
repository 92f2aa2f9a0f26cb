/* The scalar twins of fast/4 against the golden vectors of the independent
 * reference (tools/fast_ref.py, docs/fast-profile.md), and the one-time
 * validation of q8/q4 bytes. The ISA variants are checked against
 * these twins in src/native/kernels_dispatch_test.c. */
#include <string.h>

#include "bytes.h"
#include "kernels/fast_vectors.h"
#include "kernels/kernels.h"
#include "tl_test.h"

#define MAX_N 1120 /* the longest golden vector, rounded up to blocks */
#define MAX_G 3    /* its groups of 16 blocks */
static float fx[MAX_N], fscales[16 * MAX_G];
static _Alignas(64) int8_t fcodes[TL_KERN_GROUP_CODES * MAX_G];
static int32_t fbias8[16 * MAX_G], fbias4[16 * MAX_G];

/* Prepares x (n f32 bit patterns) for every weight type. */
static void prepare(const uint32_t *bits, size_t n, tl_kern_x *x) {
  for (size_t i = 0; i < n; i++) fx[i] = tl_bits_to_f32(bits[i]);
  tl_kern_quantize_x(fx, n, fcodes, fscales, fbias8, fbias4);
  x->f = fx;
  x->codes = fcodes;
  x->scales = fscales;
  x->q8_bias = fbias8;
  x->q4_bias = fbias4;
}

/* F-3's codes and scales equal the reference's, in tl_kern_x's layout;
 * the biases are the block code sums times -128 and -8; the padding blocks
 * of the last group are zero. */
static void act_golden(tl_test_ctx *t) {
  for (size_t c = 0; c < sizeof fv_acts / sizeof fv_acts[0]; c++) {
    const fv_act *v = &fv_acts[c];
    size_t nb = (v->n + 31) / 32, ng = tl_kern_groups(v->n);
    tl_kern_x x;
    bool ok = TL_EXPECT(t, ng <= MAX_G);
    prepare(v->x, v->n, &x);
    for (size_t b = 0; ok && b < 16 * ng; b++) {
      int32_t sum = 0;
      for (size_t i = 0; i < 32; i++) {
        int8_t code = fcodes[512 * (b / 16) + 64 * (i / 4) + 4 * (b % 16) + i % 4];
        ok &= TL_EXPECT_EQ_I64(t, code, b < nb ? v->codes[32 * b + i] : 0);
        sum += code;
      }
      ok &= TL_EXPECT_EQ_U64(t, tl_f32_to_bits(fscales[b]), b < nb ? v->scales[b] : 0);
      ok &= TL_EXPECT_EQ_I64(t, fbias8[b], -128 * sum);
      ok &= TL_EXPECT_EQ_I64(t, fbias4[b], -8 * sum);
    }
    if (!ok) {
      tl_test_print(t, "  in case ");
      tl_test_print(t, v->name);
      tl_test_print(t, "\n");
    }
  }
}

/* Packing (tl_kern_pack) is a permutation of each group's bytes that
 * unpacks to the stored rows' values, in place or not. */
static void pack_roundtrip(tl_test_ctx *t) {
  enum { N = 1100, ROWS = 3 }; /* 35 blocks: groups of 16, 16 and 3 */
  static float src[ROWS * N], want[N], got[N];
  static uint8_t w[ROWS * 36 * 35], packed[ROWS * 36 * 35];
  tl_test_rng rng = {77};
  for (int type = TL_QTYPE_Q8; type <= TL_QTYPE_Q4; type++) {
    size_t rb = 0;
    for (size_t i = 0; i < ROWS * N; i++)
      src[i] = (float)((int64_t)(tl_test_rng_next(&rng) % 2001) - 1000) / 64.0f;
    (void)tl_quant_row_bytes((tl_qtype)type, N, &rb);
    if (!TL_EXPECT_OK(t, tl_quant_pack((tl_qtype)type, src, ROWS, N, w, sizeof w, NULL))) return;
    tl_kern_pack((tl_qtype)type, w, packed, rb, N, 0, ROWS);
    for (size_t r = 0; r < ROWS; r++) {
      TL_EXPECT_OK(t, tl_quant_unpack((tl_qtype)type, w + r * rb, rb, 1, N, want));
      tl_kern_unpack_row((tl_qtype)type, packed + r * rb, N, got);
      TL_EXPECT_MEM(t, got, want, sizeof want);
    }
    tl_kern_pack((tl_qtype)type, w, w, rb, N, 0, ROWS); /* in place */
    TL_EXPECT_MEM(t, w, packed, ROWS * rb);
    /* tl_kern_unpack is its inverse, short last group included */
    if (!TL_EXPECT_OK(t, tl_quant_pack((tl_qtype)type, src, ROWS, N, w, sizeof w, NULL))) return;
    tl_kern_unpack((tl_qtype)type, packed, packed, rb, N, 0, ROWS);
    TL_EXPECT_MEM(t, packed, w, ROWS * rb);
    /* and packed rows pass Q-17 as their stored rows do */
    tl_kern_pack((tl_qtype)type, w, packed, rb, N, 0, ROWS);
    TL_EXPECT_OK(t, tl_kern_validate((tl_qtype)type, true, packed, rb, N, 0, ROWS));
  }
}

/* tl_kern_unpack on random bytes (any bytes, valid or not, in both
 * layouts' sizes): pack after unpack and unpack after pack give them back. */
static void unpack_inverts_pack(tl_test_ctx *t) {
  enum { N = 530, ROWS = 2 }; /* 17 blocks: a group of 16 and one of 1 */
  static uint8_t w[ROWS * 36 * 17], a[sizeof w], b[sizeof w];
  tl_test_rng rng = {4141};
  for (int type = TL_QTYPE_Q8; type <= TL_QTYPE_Q4; type++) {
    size_t rb = 0;
    (void)tl_quant_row_bytes((tl_qtype)type, N, &rb);
    for (size_t i = 0; i < ROWS * rb; i++) w[i] = (uint8_t)tl_test_rng_next(&rng);
    tl_kern_pack((tl_qtype)type, w, a, rb, N, 0, ROWS);
    tl_kern_unpack((tl_qtype)type, a, b, rb, N, 0, ROWS);
    TL_EXPECT_MEM(t, b, w, ROWS * rb);
    tl_kern_unpack((tl_qtype)type, w, a, rb, N, 0, ROWS);
    tl_kern_pack((tl_qtype)type, a, b, rb, N, 0, ROWS);
    TL_EXPECT_MEM(t, b, w, ROWS * rb);
  }
}

/* tl_kern_dot is F-6 for f32 vectors: the f32 golden rows through it. */
static void f32_dot_golden(tl_test_ctx *t) {
  for (size_t c = 0; c < sizeof fv_dots / sizeof fv_dots[0]; c++) {
    const fv_dot *v = &fv_dots[c];
    float x[512], w[512];
    if (v->type != TL_QTYPE_F32) continue;
    if (!TL_EXPECT(t, v->n <= 512)) return;
    for (size_t i = 0; i < v->n; i++) x[i] = tl_bits_to_f32(v->x[i]);
    for (size_t r = 0; r < v->rows; r++) {
      for (size_t i = 0; i < v->n; i++) w[i] = tl_bits_to_f32(tl_load_le32(v->w + 4 * (r * v->n + i)));
      TL_EXPECT_EQ_U64(t, tl_f32_to_bits(tl_kern_dot(w, x, v->n)), v->y[r]);
    }
  }
}

/* A golden case's weights, packed for the fast lane (float types: as
 * stored). */
static const uint8_t *packed_case(const fv_dot *v, size_t row_bytes) {
  static uint8_t w[4096];
  if (v->w_len > sizeof w) return NULL;
  memcpy(w, v->w, v->w_len);
  tl_kern_pack((tl_qtype)v->type, w, w, row_bytes, v->n, 0, v->rows);
  return w;
}

static void dot_golden(tl_test_ctx *t) {
  const tl_kernels *k = tl_kernels_get(TL_KERN_SCALAR);
  for (size_t c = 0; c < sizeof fv_dots / sizeof fv_dots[0]; c++) {
    const fv_dot *v = &fv_dots[c];
    float y[3];
    size_t row_bytes = 0;
    const uint8_t *w;
    tl_kern_x x;
    prepare(v->x, v->n, &x);
    TL_EXPECT_OK(t, tl_quant_row_bytes((tl_qtype)v->type, v->n, &row_bytes));
    TL_EXPECT_EQ_U64(t, row_bytes * v->rows, v->w_len);
    TL_EXPECT_OK(t, tl_kern_validate((tl_qtype)v->type, false, v->w, row_bytes, v->n, 0, v->rows));
    if (!TL_EXPECT(t, (w = packed_case(v, row_bytes)) != NULL)) return;
    k->rows[v->type](w, row_bytes, v->n, &x, v->rows, y);
    for (size_t r = 0; r < v->rows; r++)
      if (!TL_EXPECT_EQ_U64(t, tl_f32_to_bits(y[r]), v->y[r])) {
        tl_test_print(t, "  in case ");
        tl_test_print(t, v->name);
        tl_test_print(t, "\n");
      }
  }
}

/* v scaled by 2^e, e random in [lo, hi). */
static float scaled(tl_test_rng *rng, float v, int lo, int hi) {
  int e = lo + (int)(tl_test_rng_next(rng) % (uint64_t)(hi - lo));
  for (; e > 0; e--) v *= 2.0f;
  for (; e < 0; e++) v *= 0.5f;
  return v;
}

/* rows random rows of n elements of every type through variant v and the
 * twin: the same bits. trial 0: ordinary values; 1: a wide range (within
 * f16's for f16 weights), subnormal products included; 2: zero activation
 * blocks (every other one) and a zero row. */
static void simd_random_rows(tl_test_ctx *t, const tl_kernels *v, tl_test_rng *rng, size_t n,
                             size_t rows, int trial) {
  enum { N = 4100, ROWS = 35 };
  static uint8_t w[ROWS * N * 4];
  enum { G = (N + 511) / 512 };
  static float src[ROWS * N], xf[N], scales[16 * G], want[ROWS], got[ROWS];
  static int8_t codes[TL_KERN_GROUP_CODES * G];
  static int32_t b8[16 * G], b4[16 * G];
  tl_kern_x x = {xf, codes, scales, b8, b4};
  if (!TL_EXPECT(t, n <= N && rows <= ROWS)) return;
  for (int type = 0; type < 5; type++) {
    size_t rb = 0;
    int lo = trial == 1 ? -60 : 0, hi = trial == 1 ? (type == TL_QTYPE_F16 ? 12 : 40) : 1;
    for (size_t i = 0; i < rows * n; i++)
      src[i] = scaled(rng, (float)((int64_t)(tl_test_rng_next(rng) % 20001) - 10000) / 1024.0f,
                      type == TL_QTYPE_F16 && trial == 1 ? -20 : lo, hi);
    for (size_t i = 0; i < n; i++)
      xf[i] = trial == 2 && (i / 32) % 2 == 0
                  ? 0.0f
                  : scaled(rng, (float)((int64_t)(tl_test_rng_next(rng) % 2001) - 1000) / 64.0f,
                           lo, hi);
    if (trial == 2)
      for (size_t i = 0; i < n; i++) src[i] = 0.0f;
    (void)tl_quant_row_bytes((tl_qtype)type, n, &rb);
    if (!TL_EXPECT_OK(t, tl_quant_pack((tl_qtype)type, src, rows, n, w, sizeof w, NULL))) return;
    tl_kern_pack((tl_qtype)type, w, w, rb, n, 0, rows);
    tl_kern_quantize_x(xf, n, codes, scales, b8, b4);
    tl_kernels_get(TL_KERN_SCALAR)->rows[type](w, rb, n, &x, rows, want);
    v->rows[type](w, rb, n, &x, rows, got);
    if (!TL_EXPECT_MEM(t, got, want, rows * sizeof(float))) {
      tl_test_print(t, "  in a random shape\n");
      return;
    }
  }
}

/* The wasm SIMD128 variant (compiled only into the SIMD128 module; the
 * x86 ones are checked natively, where the CPU can be asked) against the
 * twin: the golden vectors and random rows of every type and length, 1 to
 * 7 rows (the variant takes rows in pairs), and shapes past its chunks of
 * 64 q8/q4 blocks and tiles of 32 rows, each with ordinary values, a wide
 * range and zero blocks. */
static void wasm_simd_equals_twin(tl_test_ctx *t) {
  const tl_kernels *v = tl_kernels_get(TL_KERN_WASM_SIMD128);
  tl_test_rng rng = {4242};
  if (v == NULL) {
    tl_test_print(t, "note: no wasm SIMD128 variant in this build\n");
    return;
  }
  for (size_t c = 0; c < sizeof fv_dots / sizeof fv_dots[0]; c++) {
    const fv_dot *d = &fv_dots[c];
    float y[3];
    size_t rb = 0;
    tl_kern_x x;
    prepare(d->x, d->n, &x);
    const uint8_t *w;
    (void)tl_quant_row_bytes((tl_qtype)d->type, d->n, &rb);
    if (!TL_EXPECT(t, (w = packed_case(d, rb)) != NULL)) return;
    v->rows[d->type](w, rb, d->n, &x, d->rows, y);
    for (size_t r = 0; r < d->rows; r++) TL_EXPECT_EQ_U64(t, tl_f32_to_bits(y[r]), d->y[r]);
  }
  for (int trial = 0; trial < 3; trial++) {
    for (size_t n = 1; n <= 288; n += 7) simd_random_rows(t, v, &rng, n, 1 + n % 7, trial);
    simd_random_rows(t, v, &rng, 2048, 32, trial);
    simd_random_rows(t, v, &rng, 2085, 35, trial);
    simd_random_rows(t, v, &rng, 4100, 33, trial);
  }
}

/* The SIMD128 tile kernels (q8, q4: 4 tokens per pass, q4 rows in pairs,
 * the rest one by one) against the twin's rows token by token: 1, 4 and 9
 * tokens, 3 and 35 rows (tiles of 32, an odd row left), lengths with tails and short groups, ordinary and
 * wide-range values; the gaps of a y_stride wider than the rows are left
 * alone. */
static void wasm_simd_tiles_equal_twin(tl_test_ctx *t) {
  enum { N = 1100, ROWS = 35, TOK = 9, STRIDE = ROWS + 3, G = (N + 511) / 512 };
  static const size_t lengths[] = {17, 64, 95, N}, row_counts[] = {3, ROWS},
                      token_counts[] = {1, 4, TOK};
  static uint8_t w[ROWS * 36 * ((N + 31) / 32)];
  static float src[ROWS * N], xf[TOK][N], scales[TOK][16 * G];
  static float want[TOK * STRIDE], got[TOK * STRIDE];
  static int8_t codes[TOK][TL_KERN_GROUP_CODES * G];
  static int32_t b8[TOK][16 * G], b4[TOK][16 * G];
  const tl_kernels *v = tl_kernels_get(TL_KERN_WASM_SIMD128);
  const tl_kernels *twin = tl_kernels_get(TL_KERN_SCALAR);
  tl_kern_x xs[TOK];
  tl_test_rng rng = {4343};
  if (v == NULL) {
    tl_test_print(t, "note: no wasm SIMD128 variant in this build\n");
    return;
  }
  TL_EXPECT(t, v->tile[TL_QTYPE_Q8] != NULL && v->tile[TL_QTYPE_Q4] != NULL);
  for (int trial = 0; trial < 2; trial++)
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
      for (int type = TL_QTYPE_Q8; type <= TL_QTYPE_Q4; type++)
        for (size_t ri = 0; ri < 2; ri++)
          for (size_t ti = 0; ti < 3; ti++) {
            size_t n = lengths[li], rows = row_counts[ri], tokens = token_counts[ti], rb = 0;
            int lo = trial ? -60 : 0, hi = trial ? 40 : 1;
            for (size_t i = 0; i < rows * n; i++)
              src[i] = scaled(&rng, (float)((int64_t)(tl_test_rng_next(&rng) % 2001) - 1000) / 64.0f,
                              lo, hi);
            (void)tl_quant_row_bytes((tl_qtype)type, n, &rb);
            if (!TL_EXPECT_OK(t, tl_quant_pack((tl_qtype)type, src, rows, n, w, sizeof w, NULL)))
              return;
            tl_kern_pack((tl_qtype)type, w, w, rb, n, 0, rows);
            for (size_t i = 0; i < TOK * STRIDE; i++) want[i] = got[i] = -1.0f;
            for (size_t k = 0; k < tokens; k++) {
              for (size_t i = 0; i < n; i++)
                xf[k][i] = scaled(
                    &rng, (float)((int64_t)(tl_test_rng_next(&rng) % 2001) - 1000) / 64.0f, lo, hi);
              tl_kern_quantize_x(xf[k], n, codes[k], scales[k], b8[k], b4[k]);
              xs[k] = (tl_kern_x){xf[k], codes[k], scales[k], b8[k], b4[k]};
              twin->rows[type](w, rb, n, &xs[k], rows, want + k * STRIDE);
            }
            tl_kern_tile(v, (tl_qtype)type, w, rb, n, xs, tokens, rows, got, STRIDE);
            if (!TL_EXPECT_MEM(t, got, want, sizeof got)) {
              tl_test_print(t, "  in a tile\n");
              return;
            }
          }
}

/* The SIMD128 f16 decoding of every one of the 65536 values (subnormals,
 * inf and NaN included) against the twin's: row r of 21 f16 weights (a
 * full step of 16 and a tail) holds value r at position r mod 21 and +0
 * elsewhere, times an activation of one value a, so the result is the
 * decoded value times a (NaN: any NaN, as wasm arithmetic may change its
 * bits). a = 1; 2^-20 (subnormal products); the largest float below 2^16
 * (the largest the variant scales by 2^112 against weights decoded to
 * 2^-112 times their values); 2^16 (the smallest it does not). */
static void wasm_simd_f16_every_value(tl_test_ctx *t) {
  enum { N = 21, ROWS = 4096 };
  static const float acts[] = {1.0f, 0x1p-20f, 0x1.fffffep15f, 0x1p16f};
  static uint8_t w[ROWS * N * 2];
  static float act[N], want[ROWS], got[ROWS];
  const tl_kernels *v = tl_kernels_get(TL_KERN_WASM_SIMD128);
  const tl_kernels *twin = tl_kernels_get(TL_KERN_SCALAR);
  tl_kern_x x = {act, NULL, NULL, NULL, NULL};
  if (v == NULL) {
    tl_test_print(t, "note: no wasm SIMD128 variant in this build\n");
    return;
  }
  for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
    for (uint32_t h0 = 0; h0 < 65536; h0 += ROWS) {
      for (size_t i = 0; i < N; i++) act[i] = acts[a];
      memset(w, 0, sizeof w);
      for (uint32_t r = 0; r < ROWS; r++)
        tl_store_le16(w + r * N * 2 + (h0 + r) % N * 2, (uint16_t)(h0 + r));
      twin->rows[TL_QTYPE_F16](w, N * 2, N, &x, ROWS, want);
      v->rows[TL_QTYPE_F16](w, N * 2, N, &x, ROWS, got);
      for (uint32_t r = 0; r < ROWS; r++) {
        bool nan = want[r] != want[r] && got[r] != got[r];
        if (!nan && !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[r]), tl_f32_to_bits(want[r]))) {
          tl_test_print(t, "  f16 value differs\n");
          return;
        }
      }
    }
}

/* The KV cache's f16 rows read back (F-11) through the SIMD128 variant
 * against the twin: all 65536 values from offsets 0..8 (each value in
 * every lane and in the tails; NaN: any NaN), then lengths 0..20 with
 * nothing written past them. */
static void wasm_simd_f16_rows_equal_twin(tl_test_ctx *t) {
  enum { N = 65536 + 8 };
  static uint16_t h[N];
  static float want[N], got[N + 1];
  const tl_kernels *v = tl_kernels_get(TL_KERN_WASM_SIMD128);
  if (v == NULL) {
    tl_test_print(t, "note: no wasm SIMD128 variant in this build\n");
    return;
  }
  for (size_t i = 0; i < N; i++) h[i] = (uint16_t)(i * 40503u); /* odd: a permutation */
  tl_kern_f16_to_f32(h, N, want);
  for (size_t off = 0; off <= 8; off++) {
    tl_kern_f16_to_f32_k(v, h + off, N - off, got);
    for (size_t i = 0; i < N - off; i++)
      if (!(want[off + i] != want[off + i] && got[i] != got[i]) &&
          !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[i]), tl_f32_to_bits(want[off + i])))
        return;
  }
  for (size_t n = 0; n <= 20; n++) {
    memset(got, 0xA5, (n + 1) * sizeof(float));
    tl_kern_f16_to_f32_k(v, h + 3000 * n, n, got);
    for (size_t i = 0; i < n; i++)
      if (!(want[3000 * n + i] != want[3000 * n + i] && got[i] != got[i]))
        TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[i]), tl_f32_to_bits(want[3000 * n + i]));
    TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[n]), 0xA5A5A5A5u); /* nothing past n */
  }
}

/* The softmax's and SiLU's exponentials through the SIMD128 variant
 * against the twin (tl_expf), bit for bit: x = j/64 from -800 to 96
 * (zero, subnormal and overflowing results, subnormal 2^k in the
 * doubles) with sub 0 and 3.5, +-0, +-inf and NaN in every lane (offsets
 * 0..3), then lengths 0..9 with nothing written past them. */
static void wasm_simd_exps_equal_twin(tl_test_ctx *t) {
  enum { N = 57344 + 8 };
  static float x[N], want[N], got[N + 1];
  const tl_kernels *v = tl_kernels_get(TL_KERN_WASM_SIMD128);
  if (v == NULL) {
    tl_test_print(t, "note: no wasm SIMD128 variant in this build\n");
    return;
  }
  TL_EXPECT(t, v->exps != NULL);
  for (size_t i = 0; i < N - 8; i++) x[i] = (float)((int32_t)i - 51200) / 64.0f;
  for (size_t i = 0; i < 8; i += 4)
    x[N - 8 + i] = -0.0f, x[N - 7 + i] = __builtin_inff(), x[N - 6 + i] = -__builtin_inff(),
              x[N - 5 + i] = __builtin_nanf("");
  for (int s = 0; s < 2; s++)
    for (size_t off = 0; off <= 3; off++) {
      float sub = s ? 3.5f : 0.0f;
      tl_kern_exps(x + off, sub, N - off, want);
      tl_kern_exps_k(v, x + off, sub, N - off, got);
      for (size_t i = 0; i < N - off; i++)
        if (!(want[i] != want[i] && got[i] != got[i]) &&
            !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[i]), tl_f32_to_bits(want[i]))) {
          tl_test_print(t, "  exp of the float with bits ");
          tl_test_print_u64(t, tl_f32_to_bits(x[off + i] - sub));
          tl_test_print(t, "\n");
          return;
        }
    }
  for (size_t n = 0; n <= 9; n++) {
    memset(got, 0xA5, (n + 1) * sizeof(float));
    tl_kern_exps(x + 5000 * n, 1.0f, n, want);
    tl_kern_exps_k(v, x + 5000 * n, 1.0f, n, got);
    for (size_t i = 0; i < n; i++) TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[i]), tl_f32_to_bits(want[i]));
    TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[n]), 0xA5A5A5A5u); /* nothing past n */
  }
}

/* Q-17 of one block, stored and packed (tl_kern_pack): the same answer. */
static void expect_validate(tl_test_ctx *t, tl_qtype type, const uint8_t *blk, size_t bb,
                            size_t n, tl_status want) {
  uint8_t packed[36];
  tl_kern_pack(type, blk, packed, bb, n, 0, 1);
  TL_EXPECT_STATUS(t, tl_kern_validate(type, false, blk, bb, n, 0, 1), want);
  TL_EXPECT_STATUS(t, tl_kern_validate(type, true, packed, bb, n, 0, 1), want);
}

/* One valid block per type, broken one way at a time. */
static void validate_rejects(tl_test_ctx *t) {
  uint8_t b8[36], b4[20];
  float one = 1.0f;
  memcpy(b8, &one, 4);
  memcpy(b4, &one, 4);
  for (size_t i = 0; i < 32; i++) b8[4 + i] = (uint8_t)(int8_t)(i - 16);
  memset(b4 + 4, 0x88, 16); /* every code 0 */
  expect_validate(t, TL_QTYPE_Q8, b8, 36, 32, TL_OK);
  expect_validate(t, TL_QTYPE_Q4, b4, 20, 32, TL_OK);
  {
    uint8_t c[36];
    memcpy(c, b8, 36);
    c[3] |= 0x80; /* negative scale */
    expect_validate(t, TL_QTYPE_Q8, c, 36, 32, TL_ERR_INVALID_MODEL);
    memcpy(c, b8, 36);
    tl_store_le32(c, 0x7F800000u); /* infinite scale */
    expect_validate(t, TL_QTYPE_Q8, c, 36, 32, TL_ERR_INVALID_MODEL);
    memcpy(c, b8, 36);
    c[10] = 0x80; /* code -128 */
    expect_validate(t, TL_QTYPE_Q8, c, 36, 32, TL_ERR_INVALID_MODEL);
    memcpy(c, b8, 36);
    /* n = 30: positions 30, 31 are padding and hold codes 14, 15 */
    expect_validate(t, TL_QTYPE_Q8, c, 36, 30, TL_ERR_INVALID_MODEL);
    tl_store_le32(c, 0); /* codes under a zero scale */
    expect_validate(t, TL_QTYPE_Q8, c, 36, 32, TL_ERR_INVALID_MODEL);
    memcpy(c, b8, 36);
    tl_store_le32(c, 0x7F7FFFFFu); /* 16 * FLT_MAX overflows */
    expect_validate(t, TL_QTYPE_Q8, c, 36, 32, TL_ERR_INVALID_MODEL);
  }
  {
    uint8_t c[20];
    memcpy(c, b4, 20);
    c[19] = 0x08; /* element 31: nibble 0 */
    expect_validate(t, TL_QTYPE_Q4, c, 20, 32, TL_ERR_INVALID_MODEL);
    memcpy(c, b4, 20);
    c[4] = 0x80; /* element 0: nibble 0 */
    expect_validate(t, TL_QTYPE_Q4, c, 20, 32, TL_ERR_INVALID_MODEL);
    memcpy(c, b4, 20);
    c[19] = 0x98; /* element 31 = 1: padding when n = 31 */
    expect_validate(t, TL_QTYPE_Q4, c, 20, 32, TL_OK);
    expect_validate(t, TL_QTYPE_Q4, c, 20, 31, TL_ERR_INVALID_MODEL);
  }
  /* only the rows asked for are read */
  {
    uint8_t two[72];
    memcpy(two, b8, 36);
    memcpy(two + 36, b8, 36);
    two[40] = 0x80;
    expect_validate(t, TL_QTYPE_Q8, two, 36, 32, TL_OK);
    TL_EXPECT_STATUS(t, tl_kern_validate(TL_QTYPE_Q8, false, two, 36, 32, 0, 2), TL_ERR_INVALID_MODEL);
  }
}

static const tl_test_case cases[] = {
    TL_CASE(act_golden),
    TL_CASE(pack_roundtrip),
    TL_CASE(unpack_inverts_pack),
    TL_CASE(dot_golden),
    TL_CASE(f32_dot_golden),
    TL_CASE(validate_rejects),
    TL_CASE(wasm_simd_equals_twin),
    TL_CASE(wasm_simd_tiles_equal_twin),
    TL_CASE(wasm_simd_f16_every_value),
    TL_CASE(wasm_simd_f16_rows_equal_twin),
    TL_CASE(wasm_simd_exps_equal_twin),
};
TL_SUITE(kernels, cases);
