#include "kernels/parallel.h"

#include "kernels/mutant.h"

void tl_parallel_run(const tl_parallel *par, tl_par_fn fn, void *ctx,
                     uint32_t n_tasks) {
  if (par != NULL && par->run != NULL && n_tasks > 1 && n_tasks <= TL_PAR_MAX_TASKS) {
    par->run(par->host, fn, ctx, n_tasks);
    return;
  }
  for (uint32_t i = 0; i < n_tasks; i++) fn(ctx, i, n_tasks);
}

void tl_par_range(size_t count, uint32_t i, uint32_t n, size_t *begin,
                  size_t *end) {
  /* count / n each, the first count % n one more: no product that could
   * overflow on wasm32 */
  size_t q = count / n, r = count % n;
  *begin = (size_t)i * q + (i < r ? i : r);
  *end = TL_MUTANT_RANGE_END(*begin, *begin + q + (i < r ? 1 : 0), i, n);
}
