/* The self-test's tiny forward pass (src/core/model/selftest_model.h) on
 * the native lanes: every kernel variant this CPU runs (scalar twins,
 * AVX2, AVX-512; NEON where built), at 1, 2 and 3 threads of the pool,
 * gives the fast golden, and the strict lane on the pool's threads the
 * strict one: the digests the browser lanes check at start-up do not
 * depend on the variant or the thread count. */
#include <stdlib.h>

#include "cpu.h"
#include "model/selftest_model.h"
#include "pool.h"
#include "tl_test.h"

static void every_variant_and_thread_count(tl_test_ctx *t) {
  static const uint32_t threads[] = {1, 2, 3};
  uint8_t *work = malloc(TL_SELFTEST_WORK_BYTES);
  size_t variants = 0;
  if (!TL_EXPECT(t, work != NULL)) return;
  for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
    tl_pool *pool;
    tl_parallel par;
    uint8_t d[32];
    if (!TL_EXPECT_OK(t, tl_pool_create(threads[ti], &pool))) break;
    par = tl_pool_parallel(pool);
    if (TL_EXPECT_OK(t, tl_selftest_digest(NULL, &par, work, TL_SELFTEST_WORK_BYTES, d)))
      TL_EXPECT_MEM(t, d, tl_selftest_golden_strict, 32);
    for (int isa = 0; isa < TL_KERN_ISA_COUNT; isa++) {
      const tl_kernels *k = tl_kernels_get((tl_kern_isa)isa);
      if (k == NULL || !tl_native_kernels_supported((tl_kern_isa)isa)) continue;
      variants++;
      if (TL_EXPECT_OK(t, tl_selftest_digest(k, &par, work, TL_SELFTEST_WORK_BYTES, d)) &&
          !TL_EXPECT_MEM(t, d, tl_selftest_golden_fast, 32)) {
        tl_test_print(t, "  in variant ");
        tl_test_print(t, k->name);
        tl_test_print(t, " threads ");
        tl_test_print_u64(t, threads[ti]);
        tl_test_print(t, "\n");
      }
    }
    tl_pool_destroy(pool);
  }
  TL_EXPECT(t, variants >= 3); /* at least the scalar twins at each thread count */
  free(work);
}

static const tl_test_case cases[] = {
    TL_CASE(every_variant_and_thread_count),
};
TL_SUITE(selftest_lanes, cases);
