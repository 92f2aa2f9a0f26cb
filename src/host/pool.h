/* A persistent pthread pool behind the core's parallel-for
 * (src/core/kernels/parallel.h). The caller's thread runs tasks too, so a
 * pool of N threads starts N - 1 workers. Tasks are handed out in any
 * order to whichever thread is free; the core's fixed partitions make the
 * results independent of that. */
#ifndef TL_NATIVE_POOL_H
#define TL_NATIVE_POOL_H

#include <stdint.h>

#include "kernels/parallel.h"
#include "tinylm.h"

typedef struct tl_pool tl_pool;

/* threads in [1, TL_PAR_MAX_TASKS] (else TL_ERR_INVALID_ARGUMENT);
 * TL_ERR_WORKER_FAILURE when a thread cannot be started,
 * TL_ERR_OUT_OF_MEMORY. */
tl_status tl_pool_create(uint32_t threads, tl_pool **out);
/* Stops and joins the workers; NULL is fine. */
void tl_pool_destroy(tl_pool *p);
/* The parallel-for of p (valid while p lives). */
tl_parallel tl_pool_parallel(tl_pool *p);

/* The resident bytes of the workers' stacks now (what they touched, not
 * what was reserved for them): each live worker's stack range
 * (pthread_getattr_np) and its resident pages (mincore). 0 for a pool of
 * one thread, for NULL, and where that cannot be measured (not Linux). */
uint64_t tl_pool_stack_resident(const tl_pool *p);

/* The number of CPUs online (at least 1, at most TL_PAR_MAX_TASKS). */
uint32_t tl_pool_default_threads(void);

#endif
