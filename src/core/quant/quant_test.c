/* docs/quant.md against the golden vectors of tools/quant_ref.py (an
 * independent Python implementation): C packing byte for byte, C unpacking
 * against the Python unpacker, round-trip bounds, rejections, sizes. */
#include "quant/quant.h"

#include <string.h>

#include "bytes.h"
#include "quant/quant_vectors.h"
#include "tl_test.h"

#define MAX_ELEMS 1024
#define MAX_BYTES (MAX_ELEMS * 4)

static void load_x(const qv_case *c, float *x) {
  for (size_t i = 0; i < c->rows * c->n; i++) x[i] = tl_bits_to_f32(c->x[i]);
}

/* One dtype of one vector: pack equals the golden bytes (or fails with the
 * golden index) and unpack of the golden bytes equals Python's unpack. */
static void check_one(tl_test_ctx *t, const qv_case *c, tl_qtype type,
                      const uint8_t *want, const uint32_t *want_y,
                      size_t want_bad) {
  static float x[MAX_ELEMS], y[MAX_ELEMS];
  static uint8_t buf[MAX_BYTES];
  size_t count = c->rows * c->n, need, bad = 12345;
  tl_status st;
  load_x(c, x);
  if (!TL_EXPECT_OK(t, tl_quant_tensor_bytes(type, c->rows, c->n, &need)))
    return;
  memset(buf, 0xA5, sizeof buf);
  st = tl_quant_pack(type, x, c->rows, c->n, buf, need, &bad);
  if (want_bad != QV_OK) {
    if (!TL_EXPECT_STATUS(t, st, TL_ERR_NUMERICAL_FAILURE) ||
        !TL_EXPECT_EQ_U64(t, bad, want_bad))
      tl_test_print(t, c->name);
    /* Nothing was written. */
    for (size_t i = 0; i < need; i++)
      if (!TL_EXPECT_EQ_U64(t, buf[i], 0xA5)) return;
    return;
  }
  if (!TL_EXPECT_OK(t, st) || !TL_EXPECT_MEM(t, buf, want, need)) {
    tl_test_print(t, c->name);
    return;
  }
  if (!TL_EXPECT_OK(t, tl_quant_unpack(type, want, need, c->rows, c->n, y)))
    return;
  for (size_t i = 0; i < count; i++) {
    uint32_t w = want_y ? want_y[i] : 0;
    if (type == TL_QTYPE_F16)
      w = tl_f32_to_bits(
          tl_f16_to_f32((uint16_t)(want[2 * i] | want[2 * i + 1] << 8)));
    if (type == TL_QTYPE_BF16)
      w = (uint32_t)(want[2 * i] | want[2 * i + 1] << 8) << 16;
    if (!TL_EXPECT_EQ_U64(t, tl_f32_to_bits(y[i]), w)) {
      tl_test_print(t, c->name);
      return;
    }
  }
}

static void golden_q8(tl_test_ctx *t) {
  for (size_t k = 0; k < sizeof qv_cases / sizeof qv_cases[0]; k++) {
    const qv_case *c = &qv_cases[k];
    check_one(t, c, TL_QTYPE_Q8, c->q8, c->q8_y, c->q8_bad);
  }
}

static void golden_q4(tl_test_ctx *t) {
  for (size_t k = 0; k < sizeof qv_cases / sizeof qv_cases[0]; k++) {
    const qv_case *c = &qv_cases[k];
    check_one(t, c, TL_QTYPE_Q4, c->q4, c->q4_y, c->q4_bad);
  }
}

static void golden_f16_bf16(tl_test_ctx *t) {
  for (size_t k = 0; k < sizeof qv_cases / sizeof qv_cases[0]; k++) {
    const qv_case *c = &qv_cases[k];
    check_one(t, c, TL_QTYPE_F16, c->f16, NULL, c->f16_bad);
    check_one(t, c, TL_QTYPE_BF16, c->bf16, NULL, c->bf16_bad);
  }
}

static void golden_element_conversions(tl_test_ctx *t) {
  for (size_t k = 0; k < sizeof qv_convs / sizeof qv_convs[0]; k++) {
    const qv_conv *v = &qv_convs[k];
    float x = tl_bits_to_f32(v->x);
    if (!TL_EXPECT_EQ_U64(t, tl_f32_to_f16(x), v->f16) ||
        !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(tl_f16_to_f32(v->f16)), v->f16_y) ||
        !TL_EXPECT_EQ_U64(t, tl_f32_to_bf16(x), v->bf16) ||
        !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(tl_bf16_to_f32(v->bf16)),
                          (uint32_t)v->bf16 << 16)) {
      tl_test_print_hex(t, &v->x, 4);
      return;
    }
  }
}

/* Every f16 value survives f16 -> f32 -> f16 (NaNs keep their bits too,
 * as long as they are already quiet). */
static void f16_round_trips_exhaustively(tl_test_ctx *t) {
  for (uint32_t h = 0; h <= 0xFFFFu; h++) {
    uint16_t want = (uint16_t)h;
    if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu)) want |= 0x200u;
    if (!TL_EXPECT_EQ_U64(t, tl_f32_to_f16(tl_f16_to_f32((uint16_t)h)), want))
      return;
  }
}

/* Q-16 on random rows at awkward lengths. */
static void round_trip_within_half_a_step(tl_test_ctx *t) {
  static float x[3 * 200], y[3 * 200];
  static uint8_t buf[3 * 7 * 36];
  tl_test_rng rng = {7};
  for (size_t n = 1; n <= 200; n += 1 + n / 9) {
    for (int qi = 0; qi < 2; qi++) {
      tl_qtype type = qi ? TL_QTYPE_Q4 : TL_QTYPE_Q8;
      size_t need, bb = qi ? 20 : 36;
      for (size_t i = 0; i < 3 * n; i++) {
        uint64_t v = tl_test_rng_next(&rng);
        /* random sign, exponent in [-20, 10], mantissa */
        uint32_t b = (uint32_t)((v >> 63) << 31 | (107 + (v >> 32) % 31) << 23 |
                                (v & 0x7FFFFFu));
        x[i] = tl_bits_to_f32(b);
      }
      TL_EXPECT_OK(t, tl_quant_tensor_bytes(type, 3, n, &need));
      if (!TL_EXPECT_OK(t, tl_quant_pack(type, x, 3, n, buf, need, NULL)) ||
          !TL_EXPECT_OK(t, tl_quant_unpack(type, buf, need, 3, n, y)))
        return;
      for (size_t i = 0; i < 3 * n; i++) {
        size_t r = i / n, blk = (i % n) / 32;
        size_t nb = (n + 31) / 32;
        float d = tl_bits_to_f32((uint32_t)buf[(r * nb + blk) * bb] |
                                 (uint32_t)buf[(r * nb + blk) * bb + 1] << 8 |
                                 (uint32_t)buf[(r * nb + blk) * bb + 2] << 16 |
                                 (uint32_t)buf[(r * nb + blk) * bb + 3] << 24);
        float err = y[i] - x[i];
        float bound = d * (0.5f + 1.0f / 65536.0f) + tl_bits_to_f32(1);
        if (err < 0) err = -err;
        if (!TL_EXPECT(t, err <= bound)) return;
      }
    }
  }
}

static void non_finite_rejected_with_index(tl_test_ctx *t) {
  static float x[100];
  static uint8_t buf[400];
  const tl_qtype types[] = {TL_QTYPE_F32, TL_QTYPE_F16, TL_QTYPE_BF16,
                            TL_QTYPE_Q8, TL_QTYPE_Q4};
  const uint32_t bad_bits[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u,
                               0xFFFFFFFFu, 0x7F800001u};
  for (size_t k = 0; k < 5; k++) {
    for (size_t at = 0; at < 100; at += 33) {
      for (size_t i = 0; i < 100; i++) x[i] = (float)i * 0.25f - 3.0f;
      x[at] = tl_bits_to_f32(bad_bits[k]);
      if (at + 40 < 100) x[at + 40] = tl_bits_to_f32(bad_bits[(k + 1) % 5]);
      for (size_t ti = 0; ti < 5; ti++) {
        size_t bad = 0;
        TL_EXPECT_STATUS(
            t, tl_quant_pack(types[ti], x, 4, 25, buf, sizeof buf, &bad),
            TL_ERR_NUMERICAL_FAILURE);
        TL_EXPECT_EQ_U64(t, bad, at);
      }
    }
  }
}

static void sizes_and_overflow(tl_test_ctx *t) {
  size_t out = 99;
  TL_EXPECT_OK(t, tl_quant_row_bytes(TL_QTYPE_Q8, 0, &out));
  TL_EXPECT_EQ_U64(t, out, 0);
  TL_EXPECT_OK(t, tl_quant_row_bytes(TL_QTYPE_Q8, 1, &out));
  TL_EXPECT_EQ_U64(t, out, 36);
  TL_EXPECT_OK(t, tl_quant_row_bytes(TL_QTYPE_Q8, 33, &out));
  TL_EXPECT_EQ_U64(t, out, 72);
  TL_EXPECT_OK(t, tl_quant_row_bytes(TL_QTYPE_Q4, 64, &out));
  TL_EXPECT_EQ_U64(t, out, 40);
  TL_EXPECT_OK(t, tl_quant_row_bytes(TL_QTYPE_Q4, 65, &out));
  TL_EXPECT_EQ_U64(t, out, 60);
  TL_EXPECT_OK(t, tl_quant_tensor_bytes(TL_QTYPE_BF16, 3, 5, &out));
  TL_EXPECT_EQ_U64(t, out, 30);
  TL_EXPECT_STATUS(t, tl_quant_row_bytes(TL_QTYPE_Q8, SIZE_MAX, &out),
                   TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT_STATUS(t, tl_quant_row_bytes(TL_QTYPE_F32, SIZE_MAX / 2, &out),
                   TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT_STATUS(t,
                   tl_quant_tensor_bytes(TL_QTYPE_Q4, SIZE_MAX / 8, 64, &out),
                   TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT_STATUS(t, tl_quant_tensor_bytes((tl_qtype)99, 1, 1, &out),
                   TL_ERR_INVALID_ARGUMENT);
  {
    float x[33] = {0};
    uint8_t buf[72];
    float y[33];
    TL_EXPECT_STATUS(t, tl_quant_pack_q8(x, 1, 33, buf, 71, NULL),
                     TL_ERR_BOUNDS);
    TL_EXPECT_STATUS(t, tl_quant_pack_q8(x, SIZE_MAX, 33, buf, 72, NULL),
                     TL_ERR_INTEGER_OVERFLOW);
    TL_EXPECT_STATUS(t, tl_quant_pack_q4(NULL, 1, 1, buf, 72, NULL),
                     TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_OK(t, tl_quant_pack_q8(x, 1, 33, buf, 72, NULL));
    TL_EXPECT_STATUS(t, tl_quant_unpack_q8(buf, 71, 1, 33, y), TL_ERR_BOUNDS);
    TL_EXPECT_OK(t, tl_quant_pack_q8(NULL, 0, 33, NULL, 0, NULL));
  }
}

/* stored bytes an encoder cannot produce are refused. */
static void invalid_stored_bytes(tl_test_ctx *t) {
  float x[33], y[33];
  uint8_t q8[72], q4[40], bad[72];
  for (size_t i = 0; i < 33; i++) x[i] = (float)i - 16.0f;
  TL_EXPECT_OK(t, tl_quant_pack_q8(x, 1, 33, q8, sizeof q8, NULL));
  TL_EXPECT_OK(t, tl_quant_pack_q4(x, 1, 33, q4, sizeof q4, NULL));
  TL_EXPECT_OK(t, tl_quant_unpack_q8(q8, sizeof q8, 1, 33, y));
  TL_EXPECT_OK(t, tl_quant_unpack_q4(q4, sizeof q4, 1, 33, y));
  memcpy(bad, q8, 72);
  bad[3] |= 0x80; /* negative scale */
  TL_EXPECT_STATUS(t, tl_quant_unpack_q8(bad, 72, 1, 33, y),
                   TL_ERR_INVALID_MODEL);
  memcpy(bad, q8, 72);
  bad[2] = 0x80, bad[3] = 0x7F; /* Inf scale */
  TL_EXPECT_STATUS(t, tl_quant_unpack_q8(bad, 72, 1, 33, y),
                   TL_ERR_INVALID_MODEL);
  memcpy(bad, q8, 72);
  bad[4 + 5] = 0x80; /* code -128 */
  TL_EXPECT_STATUS(t, tl_quant_unpack_q8(bad, 72, 1, 33, y),
                   TL_ERR_INVALID_MODEL);
  memcpy(bad, q8, 72);
  bad[36 + 4 + 1] = 1; /* padding */
  TL_EXPECT_STATUS(t, tl_quant_unpack_q8(bad, 72, 1, 33, y),
                   TL_ERR_INVALID_MODEL);
  memcpy(bad, q4, 40);
  bad[4 + 3] &= 0xF0; /* nibble 0 */
  TL_EXPECT_STATUS(t, tl_quant_unpack_q4(bad, 40, 1, 33, y),
                   TL_ERR_INVALID_MODEL);
  memcpy(bad, q4, 40);
  bad[20 + 4] = 0x98; /* padding nibble (element 1 of the tail) */
  TL_EXPECT_STATUS(t, tl_quant_unpack_q4(bad, 40, 1, 33, y),
                   TL_ERR_INVALID_MODEL);
  memcpy(bad, q4, 40);
  memset(bad + 20, 0, 4); /* zero scale under a non-zero code */
  TL_EXPECT_STATUS(t, tl_quant_unpack_q4(bad, 40, 1, 33, y),
                   TL_ERR_INVALID_MODEL);
  memcpy(bad, q8, 72);
  bad[0] = 0xFF, bad[1] = 0xFF, bad[2] = 0x7F, bad[3] = 0x7F; /* FLT_MAX */
  TL_EXPECT_STATUS(t, tl_quant_unpack_q8(bad, 72, 1, 33, y),
                   TL_ERR_INVALID_MODEL);
}

static const tl_test_case cases[] = {
    TL_CASE(golden_q8),
    TL_CASE(golden_q4),
    TL_CASE(golden_f16_bf16),
    TL_CASE(golden_element_conversions),
    TL_CASE(f16_round_trips_exhaustively),
    TL_CASE(round_trip_within_half_a_step),
    TL_CASE(non_finite_rejected_with_index),
    TL_CASE(sizes_and_overflow),
    TL_CASE(invalid_stored_bytes),
};
TL_SUITE(quant, cases);
