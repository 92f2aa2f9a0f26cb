/* The pthread pool: every task of every call runs exactly once, calls do
 * not bleed into each other (many short calls back to back, task counts
 * changing between calls), at 1, 2, 3 and 7 threads; bad thread counts are
 * refused; the workers' resident stack is what their tasks touched. */
#include <stdatomic.h>
#include <string.h>

#include "kernels/parallel.h"
#include "pool.h"
#include "tl_test.h"

typedef struct record {
  atomic_uint runs[TL_PAR_MAX_TASKS];
  atomic_uint wrong_count;
  uint32_t expect_n;
} record;

static void task(void *ctx, uint32_t i, uint32_t n) {
  record *r = ctx;
  if (n != r->expect_n || i >= n) atomic_fetch_add(&r->wrong_count, 1);
  else atomic_fetch_add(&r->runs[i], 1);
}

static void each_task_once(tl_test_ctx *t) {
  static const uint32_t threads[] = {1, 2, 3, 7};
  static record r;
  for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
    tl_pool *p = NULL;
    tl_parallel par;
    bool ok = true;
    if (!TL_EXPECT_OK(t, tl_pool_create(threads[k], &p))) return;
    par = tl_pool_parallel(p);
    TL_EXPECT_EQ_U64(t, par.threads, threads[k]);
    for (uint32_t call = 0; call < 20000 && ok; call++) {
      uint32_t n = 1 + (call * 7) % 9;
      memset(&r, 0, sizeof r);
      r.expect_n = n;
      tl_parallel_run(&par, task, &r, n);
      ok &= TL_EXPECT_EQ_U64(t, atomic_load(&r.wrong_count), 0);
      for (uint32_t i = 0; i < TL_PAR_MAX_TASKS && ok; i++)
        ok &= TL_EXPECT_EQ_U64(t, atomic_load(&r.runs[i]), i < n ? 1 : 0);
    }
    tl_pool_destroy(p);
  }
}

static void count_task(void *ctx, uint32_t i, uint32_t n) {
  (void)i;
  (void)n;
  atomic_fetch_add((atomic_uint *)ctx, 1);
}

/* Regression: a worker that started after the pool's last generation (a
 * pool destroyed before its threads ran) slept forever, and destroy hung
 * in join. */
static void destroyed_before_workers_start(tl_test_ctx *t) {
  for (int i = 0; i < 300; i++) {
    tl_pool *p = NULL;
    atomic_uint ran;
    tl_parallel par;
    atomic_init(&ran, 0);
    if (!TL_EXPECT_OK(t, tl_pool_create(7, &p))) return;
    par = tl_pool_parallel(p);
    if (i % 2) tl_parallel_run(&par, count_task, &ran, 5);
    tl_pool_destroy(p);
    TL_EXPECT_EQ_U64(t, atomic_load(&ran), i % 2 ? 5 : 0);
  }
}

static void bad_counts(tl_test_ctx *t) {
  tl_pool *p = (tl_pool *)&p;
  TL_EXPECT_STATUS(t, tl_pool_create(0, &p), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, p == NULL);
  TL_EXPECT_STATUS(t, tl_pool_create(TL_PAR_MAX_TASKS + 1, &p), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, tl_pool_default_threads() >= 1);
  tl_pool_destroy(NULL);
}

static void partition(tl_test_ctx *t) {
  /* contiguous, ordered, covering, sizes within one */
  for (size_t count = 0; count < 50; count++)
    for (uint32_t n = 1; n < 12; n++) {
      size_t prev = 0, lo = SIZE_MAX, hi = 0;
      for (uint32_t i = 0; i < n; i++) {
        size_t b, e;
        tl_par_range(count, i, n, &b, &e);
        TL_EXPECT_EQ_U64(t, b, prev);
        if (e - b < lo) lo = e - b;
        if (e - b > hi) hi = e - b;
        prev = e;
      }
      TL_EXPECT_EQ_U64(t, prev, count);
      TL_EXPECT(t, hi - lo <= 1);
    }
}

/* Each task waits until all have started (so each of the pool's threads
 * runs exactly one), then touches STACK_TOUCH bytes of its own stack. */
#define STACK_TOUCH (256u << 10)
static void touch_stack(void *ctx, uint32_t i, uint32_t n) {
  volatile unsigned char buf[STACK_TOUCH];
  (void)i;
  atomic_fetch_add((atomic_uint *)ctx, 1);
  while (atomic_load((atomic_uint *)ctx) < n) {
  }
  for (size_t k = 0; k < sizeof buf; k += 1024) buf[k] = (unsigned char)k;
}

static void worker_stacks_resident(tl_test_ctx *t) {
  tl_pool *p = NULL;
  tl_parallel par;
  atomic_uint started;
  TL_EXPECT_EQ_U64(t, tl_pool_stack_resident(NULL), 0);
  if (!TL_EXPECT_OK(t, tl_pool_create(1, &p))) return;
  TL_EXPECT_EQ_U64(t, tl_pool_stack_resident(p), 0); /* no workers */
  tl_pool_destroy(p);
#if defined(__linux__)
  if (!TL_EXPECT_OK(t, tl_pool_create(4, &p))) return;
  par = tl_pool_parallel(p);
  atomic_init(&started, 0);
  tl_parallel_run(&par, touch_stack, &started, 4);
  /* three workers, each with at least the bytes its task touched */
  TL_EXPECT(t, tl_pool_stack_resident(p) >= 3ull * STACK_TOUCH);
  tl_pool_destroy(p);
#else
  (void)par;
  (void)started;
#endif
}

static const tl_test_case cases[] = {
    TL_CASE(each_task_once),
    TL_CASE(destroyed_before_workers_start),
    TL_CASE(bad_counts),
    TL_CASE(partition),
    TL_CASE(worker_stacks_resident),
};
TL_SUITE(pool, cases);
