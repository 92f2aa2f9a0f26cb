/* Specification of the arena allocator. */
#include "arena.h"

#include <string.h>

#include "tl_test.h"

static _Alignas(64) uint8_t region[4096];

static void allocations_are_aligned_and_disjoint(tl_test_ctx *t) {
  tl_arena a;
  void *p = NULL, *q = NULL, *r = NULL;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 3, 1, &p));
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 10, 64, &q));
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 1, 0, &r)); /* 0 means the minimum */
  TL_EXPECT_EQ_U64(t, (uintptr_t)p % TL_ARENA_MIN_ALIGN, 0);
  TL_EXPECT_EQ_U64(t, (uintptr_t)q % 64, 0);
  TL_EXPECT_EQ_U64(t, (uintptr_t)r % TL_ARENA_MIN_ALIGN, 0);
  TL_EXPECT(t, (uint8_t *)q >= (uint8_t *)p + 3);
  TL_EXPECT(t, (uint8_t *)r >= (uint8_t *)q + 10);
  TL_EXPECT_STATUS(t, tl_arena_alloc(&a, 1, 24, &p), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, p == NULL);
}

static void exhaustion_is_typed_and_leaves_arena_usable(tl_test_ctx *t) {
  tl_arena a;
  void *p = NULL;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, 256));
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 200, 16, &p));
  TL_EXPECT_STATUS(t, tl_arena_alloc(&a, 57, 16, &p), TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT(t, p == NULL);
  TL_EXPECT_EQ_U64(t, a.used, 200);
  TL_EXPECT_STATUS(t, tl_arena_alloc(&a, SIZE_MAX, 16, &p),
                   TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 48, 16, &p)); /* 208 + 48 = 256 */
  TL_EXPECT_EQ_U64(t, tl_arena_available(&a, 16), 0);
}

static void array_size_overflow_is_caught(tl_test_ctx *t) {
  tl_arena a;
  void *p = region;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  TL_EXPECT_STATUS(t, tl_arena_alloc_array(&a, SIZE_MAX / 2, 4, 16, &p),
                   TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT(t, p == NULL);
  TL_EXPECT_OK(t, tl_arena_alloc_array(&a, 16, 4, 16, &p));
  TL_EXPECT_EQ_U64(t, a.used, 64);
}

static void high_water_survives_reset_and_rewind(tl_test_ctx *t) {
  tl_arena a;
  void *p;
  tl_arena_mark m;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 100, 16, &p));
  m = tl_arena_mark_now(&a);
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 1000, 16, &p));
  TL_EXPECT_EQ_U64(t, a.high_water, 1112);
  TL_EXPECT_OK(t, tl_arena_rewind(&a, m));
  TL_EXPECT_EQ_U64(t, a.used, 100);
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 10, 16, &p));
  TL_EXPECT(t, (uint8_t *)p == region + 112); /* reuses the released bytes */
  tl_arena_reset(&a);
  TL_EXPECT_EQ_U64(t, a.used, 0);
  TL_EXPECT_EQ_U64(t, a.high_water, 1112);
  m.used = 5000; /* a mark beyond `used` is not ours */
  TL_EXPECT_STATUS(t, tl_arena_rewind(&a, m), TL_ERR_INVALID_ARGUMENT);
}

static void sub_arena_is_bounded_by_its_slice(tl_test_ctx *t) {
  tl_arena parent, child;
  void *p;
  TL_EXPECT_OK(t, tl_arena_init(&parent, region, sizeof region));
  TL_EXPECT_OK(t, tl_arena_sub(&parent, 512, 64, &child));
  TL_EXPECT_EQ_U64(t, parent.used, 512);
  TL_EXPECT_OK(t, tl_arena_alloc(&child, 512, 16, &p));
  TL_EXPECT_STATUS(t, tl_arena_alloc(&child, 1, 16, &p), TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT_STATUS(t, tl_arena_sub(&parent, 4000, 16, &child),
                   TL_ERR_OUT_OF_MEMORY);
}

static void fault_injection_fails_the_nth_allocation(tl_test_ctx *t) {
  tl_arena a;
  void *p;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  a.fail_countdown = 3;
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 8, 16, &p));
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 8, 16, &p));
  TL_EXPECT_STATUS(t, tl_arena_alloc(&a, 8, 16, &p), TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT_OK(t, tl_arena_alloc(&a, 8, 16, &p)); /* disarmed afterwards */
}

static void empty_arena_allocates_nothing(tl_test_ctx *t) {
  tl_arena a;
  void *p;
  TL_EXPECT_STATUS(t, tl_arena_init(&a, NULL, 1), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_arena_init(&a, NULL, 0));
  TL_EXPECT_STATUS(t, tl_arena_alloc(&a, 0, 16, &p), TL_ERR_OUT_OF_MEMORY);
}

static const tl_test_case cases[] = {
    TL_CASE(allocations_are_aligned_and_disjoint),
    TL_CASE(exhaustion_is_typed_and_leaves_arena_usable),
    TL_CASE(array_size_overflow_is_caught),
    TL_CASE(high_water_survives_reset_and_rewind),
    TL_CASE(sub_arena_is_bounded_by_its_slice),
    TL_CASE(fault_injection_fails_the_nth_allocation),
    TL_CASE(empty_arena_allocates_nothing),
};
TL_SUITE(arena, cases);
