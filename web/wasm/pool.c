/* The threads module's parallel-for (kernels/parallel.h) over Web Workers
 * sharing this module's memory (docs/web.md): the JS loader starts
 * workers - 1 Web Workers, each its own instance of the module with its
 * own stack and thread-local storage, each calling tl_wasm_worker(w),
 * which never returns; the instance that runs generations (itself in a
 * worker: a page's main thread may not wait) hands out every call.
 *
 * A call's tasks are split by index: task i runs on worker i mod T (the
 * caller is worker 0), so no two threads share a task; each task owns its
 * outputs (tl_par_range), so the bits do not depend on T. The caller
 * publishes the call (fn, ctx, n), bumps `gen` and wakes the workers; each
 * runs its tasks and counts itself into `done`; the caller returns when all
 * T - 1 have, so no worker can still be in a call when the next is
 * published. Only in modules built with atomics (-matomics).
 *
 * A worker whose task traps (its JS catches the trap) counts itself done
 * and marks the pool failed (tl_wasm_pool_fail), so the caller is not left
 * waiting: the call returns once the live workers are done, the loader
 * ends the reply with worker_failure, and later calls run every task on
 * the caller (the failed worker is gone). */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/parallel.h"
#include "pool.h"
#include "tinylm.h"

#ifdef __wasm_atomics__

static struct {
  _Atomic uint32_t gen;  /* bumped per call; the workers wait on it */
  _Atomic uint32_t done; /* workers finished with the current call */
  _Atomic uint32_t ready; /* workers that entered tl_wasm_worker */
  _Atomic uint32_t failed; /* 1 + the first worker whose task trapped, else 0 */
  uint32_t threads;      /* T: the caller and T - 1 workers */
  tl_par_fn fn;
  void *ctx;
  uint32_t n_tasks;
  _Atomic uint32_t tasks[TL_PAR_MAX_TASKS]; /* tasks each thread ran */
} pool = {0, 0, 0, 0, 1, NULL, NULL, 0, {0}};

#ifdef TL_WASM_POOL_TRAP
/* Test-only (make web-pooltrap, tests/web/loader_test.mjs): worker 1 traps
 * in its TL_WASM_POOL_TRAP-th call. */
static _Atomic uint32_t trap_calls;
#endif

static void run_share(uint32_t w) {
#ifdef TL_WASM_POOL_TRAP
  if (w == 1 && atomic_fetch_add(&trap_calls, 1) + 1 == TL_WASM_POOL_TRAP) __builtin_trap();
#endif
  for (uint32_t i = w; i < pool.n_tasks; i += pool.threads) {
    pool.fn(pool.ctx, i, pool.n_tasks);
    atomic_fetch_add(&pool.tasks[w], 1);
  }
}

static void pool_run(void *host, tl_par_fn fn, void *ctx, uint32_t n_tasks) {
  uint32_t d;
  (void)host;
  if (atomic_load(&pool.failed) != 0) { /* a worker is gone: every task here */
    for (uint32_t i = 0; i < n_tasks; i++) fn(ctx, i, n_tasks);
    return;
  }
  pool.fn = fn;
  pool.ctx = ctx;
  pool.n_tasks = n_tasks;
  atomic_store(&pool.done, 0);
  atomic_fetch_add(&pool.gen, 1);
  __builtin_wasm_memory_atomic_notify((int *)&pool.gen, UINT32_MAX);
  run_share(0);
  while ((d = atomic_load(&pool.done)) != pool.threads - 1)
    __builtin_wasm_memory_atomic_wait32((int *)&pool.done, (int)d, -1);
}

/* The pool's size, before any worker starts: T in 1..TL_PAR_MAX_TASKS. */
tl_status tl_wasm_pool_init(uint32_t threads);
__attribute__((export_name("tl_wasm_pool_init"))) tl_status tl_wasm_pool_init(uint32_t threads) {
  if (threads < 1 || threads > TL_PAR_MAX_TASKS || atomic_load(&pool.ready) != 0)
    return TL_ERR_INVALID_ARGUMENT;
  pool.threads = threads;
  return TL_OK;
}

/* Worker w's task trapped (called by its JS, which caught the trap): it
 * counts itself done with the current call, so the caller stops waiting
 * for it, and the pool is failed from now on. */
void tl_wasm_pool_fail(uint32_t w);
__attribute__((export_name("tl_wasm_pool_fail"))) void tl_wasm_pool_fail(uint32_t w) {
  uint32_t none = 0;
  atomic_compare_exchange_strong(&pool.failed, &none, w + 1);
  atomic_fetch_add(&pool.done, 1);
  __builtin_wasm_memory_atomic_notify((int *)&pool.done, 1);
}

/* 1 + the worker whose task trapped, or 0 (the loader checks it during and
 * after every reply). */
uint32_t tl_wasm_pool_failed(void);
__attribute__((export_name("tl_wasm_pool_failed"))) uint32_t tl_wasm_pool_failed(void) {
  return atomic_load(&pool.failed);
}

/* Workers that have entered tl_wasm_worker (the loader waits for all). */
uint32_t tl_wasm_pool_ready(void);
__attribute__((export_name("tl_wasm_pool_ready"))) uint32_t tl_wasm_pool_ready(void) {
  return atomic_load(&pool.ready);
}

/* Tasks thread w (0: the caller) has run so far: what shows that the
 * workers take part (the loader reports it with each reply). */
uint32_t tl_wasm_pool_tasks(uint32_t w);
__attribute__((export_name("tl_wasm_pool_tasks"))) uint32_t tl_wasm_pool_tasks(uint32_t w) {
  return w < TL_PAR_MAX_TASKS ? atomic_load(&pool.tasks[w]) : 0;
}

/* Worker w (1..T-1) of the pool, on its own instance: runs its share of
 * every call, forever. A w out of range returns at once. */
void tl_wasm_worker(uint32_t w);
__attribute__((export_name("tl_wasm_worker"))) void tl_wasm_worker(uint32_t w) {
  uint32_t seen = atomic_load(&pool.gen);
  if (w == 0 || w >= pool.threads) return;
  atomic_fetch_add(&pool.ready, 1);
  for (;;) {
    uint32_t g;
    while ((g = atomic_load(&pool.gen)) == seen)
      __builtin_wasm_memory_atomic_wait32((int *)&pool.gen, (int)seen, -1);
    seen = g;
    run_share(w);
    if (atomic_fetch_add(&pool.done, 1) + 1 == pool.threads - 1)
      __builtin_wasm_memory_atomic_notify((int *)&pool.done, 1);
  }
}

tl_parallel tl_wasm_pool_parallel(uint32_t threads, uint32_t *used) {
  tl_parallel par = {NULL, NULL, 1};
  uint32_t t = pool.threads;
  if (t > 1 && atomic_load(&pool.ready) == t - 1) {
    par.run = pool_run;
    par.threads = threads != 0 && threads < t ? threads : t;
  }
  *used = par.threads;
  return par;
}

#endif
