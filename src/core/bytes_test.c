/* Specification of the checked arithmetic and the little-endian reader. */
#include "bytes.h"

#include "checked.h"
#include "tl_test.h"

static void add_and_mul_detect_overflow(tl_test_ctx *t) {
  size_t out = 7;
  TL_EXPECT_OK(t, tl_add_size(SIZE_MAX - 1, 1, &out));
  TL_EXPECT_EQ_U64(t, out, SIZE_MAX);
  TL_EXPECT_STATUS(t, tl_add_size(SIZE_MAX, 1, &out), TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT_EQ_U64(t, out, SIZE_MAX); /* untouched on failure */
  TL_EXPECT_OK(t, tl_mul_size(0, SIZE_MAX, &out));
  TL_EXPECT_EQ_U64(t, out, 0);
  TL_EXPECT_OK(t, tl_mul_size(SIZE_MAX / 3, 3, &out));
  TL_EXPECT_STATUS(t, tl_mul_size(SIZE_MAX / 2 + 1, 2, &out),
                   TL_ERR_INTEGER_OVERFLOW);
}

static void u64_arithmetic_and_narrowing(tl_test_ctx *t) {
  uint64_t v;
  size_t s;
  TL_EXPECT_STATUS(t, tl_add_u64(UINT64_MAX, 1, &v), TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT_STATUS(t, tl_mul_u64(1ull << 32, 1ull << 32, &v),
                   TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT_OK(t, tl_mul_u64(1ull << 31, 1ull << 32, &v));
  TL_EXPECT_EQ_U64(t, v, 1ull << 63);
  TL_EXPECT_OK(t, tl_u64_to_size((uint64_t)SIZE_MAX, &s));
  if (SIZE_MAX < UINT64_MAX)
    TL_EXPECT_STATUS(t, tl_u64_to_size((uint64_t)SIZE_MAX + 1, &s),
                     TL_ERR_INTEGER_OVERFLOW);
}

static void align_up_rounds_to_power_of_two(tl_test_ctx *t) {
  size_t out;
  TL_EXPECT_OK(t, tl_align_up(0, 64, &out));
  TL_EXPECT_EQ_U64(t, out, 0);
  TL_EXPECT_OK(t, tl_align_up(65, 64, &out));
  TL_EXPECT_EQ_U64(t, out, 128);
  TL_EXPECT_OK(t, tl_align_up(128, 64, &out));
  TL_EXPECT_EQ_U64(t, out, 128);
  TL_EXPECT_STATUS(t, tl_align_up(1, 48, &out), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_align_up(1, 0, &out), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_align_up(SIZE_MAX - 2, 64, &out),
                   TL_ERR_INTEGER_OVERFLOW);
}

static void reader_decodes_little_endian(tl_test_ctx *t) {
  static const uint8_t bytes[] = {0x01, 0x02, 0x03, 0x04, 0x05,
                                  0x06, 0x07, 0x08, 0x09, 0x0a,
                                  0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
  tl_reader r;
  uint8_t b;
  uint16_t h;
  uint32_t w;
  uint64_t d;
  TL_EXPECT_OK(t, tl_reader_init(&r, bytes, sizeof bytes));
  TL_EXPECT_OK(t, tl_reader_u8(&r, &b));
  TL_EXPECT_EQ_U64(t, b, 0x01);
  TL_EXPECT_OK(t, tl_reader_u16le(&r, &h));
  TL_EXPECT_EQ_U64(t, h, 0x0302);
  TL_EXPECT_OK(t, tl_reader_u32le(&r, &w));
  TL_EXPECT_EQ_U64(t, w, 0x07060504u);
  TL_EXPECT_OK(t, tl_reader_u64le(&r, &d));
  TL_EXPECT_EQ_U64(t, d, 0x0f0e0d0c0b0a0908ull);
  TL_EXPECT_EQ_U64(t, tl_reader_remaining(&r), 0);
}

static void reader_refuses_to_cross_the_end(tl_test_ctx *t) {
  static const uint8_t bytes[] = {0xaa, 0xbb, 0xcc};
  tl_reader r;
  uint32_t w = 0;
  const uint8_t *span = NULL;
  TL_EXPECT_OK(t, tl_reader_init(&r, bytes, sizeof bytes));
  TL_EXPECT_STATUS(t, tl_reader_u32le(&r, &w), TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, r.pos, 0); /* a failed read does not move */
  TL_EXPECT_STATUS(t, tl_reader_span(&r, SIZE_MAX, &span), TL_ERR_BOUNDS);
  TL_EXPECT_OK(t, tl_reader_skip(&r, 3));
  TL_EXPECT_STATUS(t, tl_reader_skip(&r, 1), TL_ERR_BOUNDS);
  TL_EXPECT_OK(t, tl_reader_seek(&r, 1));
  TL_EXPECT_OK(t, tl_reader_span(&r, 2, &span));
  TL_EXPECT(t, span == bytes + 1);
  TL_EXPECT_STATUS(t, tl_reader_seek(&r, 4), TL_ERR_BOUNDS);
}

static void reader_rejects_null_with_length(tl_test_ctx *t) {
  tl_reader r;
  uint8_t b;
  TL_EXPECT_STATUS(t, tl_reader_init(&r, NULL, 1), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_reader_init(&r, NULL, 0));
  TL_EXPECT_STATUS(t, tl_reader_u8(&r, &b), TL_ERR_BOUNDS);
}

static void stores_round_trip(tl_test_ctx *t) {
  uint8_t buf[8];
  tl_store_le64(buf, 0x1122334455667788ull);
  TL_EXPECT_EQ_U64(t, buf[0], 0x88);
  TL_EXPECT_EQ_U64(t, tl_load_le64(buf), 0x1122334455667788ull);
  tl_store_be64(buf, 0x1122334455667788ull);
  TL_EXPECT_EQ_U64(t, buf[0], 0x11);
  TL_EXPECT_EQ_U64(t, tl_load_be32(buf + 4), 0x55667788u);
}

static const tl_test_case cases[] = {
    TL_CASE(add_and_mul_detect_overflow),
    TL_CASE(u64_arithmetic_and_narrowing),
    TL_CASE(align_up_rounds_to_power_of_two),
    TL_CASE(reader_decodes_little_endian),
    TL_CASE(reader_refuses_to_cross_the_end),
    TL_CASE(reader_rejects_null_with_length),
    TL_CASE(stores_round_trip),
};
TL_SUITE(bytes, cases);
