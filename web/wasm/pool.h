/* The threads module's Web Worker pool (pool.c): its parallel-for. */
#ifndef TL_WASM_POOL_H
#define TL_WASM_POOL_H

#include <stdint.h>

#include "kernels/parallel.h"

/* The parallel-for of a session wanting `threads` (0: all the pool has):
 * the pool when its workers run, else the caller alone; *used gets the
 * threads that compute. */
tl_parallel tl_wasm_pool_parallel(uint32_t threads, uint32_t *used);

#endif
