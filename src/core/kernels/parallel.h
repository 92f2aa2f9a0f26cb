/* The parallel-for the core asks its host for (docs/architecture.md §6): the core stays
 * freestanding, and the host runs tasks on whatever it has (native: a
 * persistent pthread pool, src/host/pool.h; the browser: Web Workers over
 * shared memory). Work is split by output ownership with the fixed
 * partition of tl_par_range, so no two tasks write the same element and
 * no result depends on which thread ran a task, or on how many there are. */
#ifndef TL_CORE_KERNELS_PARALLEL_H
#define TL_CORE_KERNELS_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

/* The most tasks one call is split into. */
#define TL_PAR_MAX_TASKS 256

typedef void (*tl_par_fn)(void *ctx, uint32_t task, uint32_t n_tasks);

typedef struct tl_parallel {
  /* Calls fn(ctx, i, n_tasks) exactly once for every i < n_tasks, possibly
   * concurrently, and returns when every call has returned. */
  void (*run)(void *host, tl_par_fn fn, void *ctx, uint32_t n_tasks);
  void *host;
  uint32_t threads; /* 1..TL_PAR_MAX_TASKS: how many tasks are worth it */
} tl_parallel;

/* fn over n_tasks tasks: through par, or in order on the caller when par
 * is NULL. */
void tl_parallel_run(const tl_parallel *par, tl_par_fn fn, void *ctx,
                     uint32_t n_tasks);

/* Task i of n's share of count units: [*begin, *end), contiguous, in task
 * order, differing in size by at most one. */
void tl_par_range(size_t count, uint32_t i, uint32_t n, size_t *begin,
                  size_t *end);

#endif
