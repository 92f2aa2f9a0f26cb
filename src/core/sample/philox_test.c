/* Philox-4x32-10 against Random123's published known answers, and the
 * draw layout of docs/architecture.md §7 (key = seed little-endian, counter = (draw,
 * token, turn, stream)). */
#include "sample/philox.h"
#include "sample/philox_kat.h"

#include "tl_test.h"

static void test_known_answers(tl_test_ctx *t) {
  for (size_t i = 0; i < TL_PHILOX_KAT_COUNT; i++) {
    uint32_t out[4];
    tl_philox4x32_10(tl_philox_kat[i].ctr, tl_philox_kat[i].key, out);
    for (int w = 0; w < 4; w++) TL_EXPECT_EQ_U64(t, out[w], tl_philox_kat[i].out[w]);
  }
}

static void test_in_place(tl_test_ctx *t) {
  uint32_t c[4] = {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344};
  tl_philox4x32_10(c, tl_philox_kat[2].key, c);
  for (int w = 0; w < 4; w++) TL_EXPECT_EQ_U64(t, c[w], tl_philox_kat[2].out[w]);
}

/* The KATs through the draw layout: seed 0x299f31d0a4093822 is key
 * (k0 = a4093822, k1 = 299f31d0), so position (243f6a88, 85a308d3,
 * 13198a2e, 03707344) gives the pi vector's word 0. A swapped key or
 * counter order would not. */
static void test_layout_kat(tl_test_ctx *t) {
  tl_draw_pos pi = {0x299f31d0a4093822ull, 0x243f6a88, 0x85a308d3,
                    0x13198a2e, 0x03707344};
  tl_draw_pos ones = {UINT64_MAX, 0xffffffff, 0xffffffff, 0xffffffff,
                      0xffffffff};
  tl_draw_pos zero = {0, 0, 0, 0, 0};
  TL_EXPECT_EQ_U64(t, tl_draw_word(&pi), 0xd16cfe09);
  TL_EXPECT_EQ_U64(t, tl_draw_word(&ones), 0x408f276d);
  TL_EXPECT_EQ_U64(t, tl_draw_word(&zero), 0x6627e8d5);
}

/* Own layout vectors, from tools/oracle/sampler_ref.py (an independent
 * Philox checked against the same KATs): `sampler_ref.py draw SEED D T U S`.
 * Each counter word and each key half moves the draw. */
static void test_layout_own(tl_test_ctx *t) {
  static const struct {
    tl_draw_pos pos;
    uint32_t word;
  } v[] = {
      {{0x0123456789abcdefull, 1, 2, 3, 4}, 0x99d4cb09},
      {{0x0123456789abcdefull, 0, 0, 0, 0}, 0xb850222e},
      {{0x0123456789abcdefull, 1, 0, 0, 0}, 0xadca1466}, /* draw */
      {{0x0123456789abcdefull, 0, 1, 0, 0}, 0xd9412d6a}, /* token */
      {{0x0123456789abcdefull, 0, 0, 1, 0}, 0xfa9dff5e}, /* turn */
      {{0x0123456789abcdefull, 0, 0, 0, 1}, 0xd0e1fe69}, /* stream */
      {{42, 0, 0, 0, 0}, 0x9ceaf053},
      {{42, 0, 1, 0, 0}, 0x42e0b8b3},
      {{42, 0, 2, 0, 0}, 0x9be4a6d3},
      {{1, 0, 0, 0, 0}, 0xe3e80670},          /* k0 = 1 */
      {{1ull << 32, 0, 0, 0, 0}, 0xfdde3e0b}, /* k1 = 1 */
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (!TL_EXPECT_EQ_U64(t, tl_draw_word(&v[i].pos), v[i].word))
      tl_test_print_u64(t, i);
}

static void test_unit(tl_test_ctx *t) {
  TL_EXPECT(t, tl_draw_to_unit(0) == 0.0);
  TL_EXPECT(t, tl_draw_to_unit(0x80000000u) == 0.5);
  /* The largest draw is 1 - 2^-32 exactly: never 1. */
  TL_EXPECT(t, tl_draw_to_unit(0xffffffffu) == 1.0 - 0x1p-32);
  TL_EXPECT(t, tl_draw_to_unit(1) == 0x1p-32);
}

static const tl_test_case cases[] = {
    TL_CASE(test_known_answers), TL_CASE(test_in_place),
    TL_CASE(test_layout_kat),    TL_CASE(test_layout_own),
    TL_CASE(test_unit),
};
TL_SUITE(philox, cases);
