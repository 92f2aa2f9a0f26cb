/* Native side of the identity checks: writes the transcript to stdout and
 * the record count to stderr. Its fast-lane records run the kernel
 * variant this CPU picks (tl_native_kernels) on the pthread pool at 1, 2,
 * 3 and 7 threads. `transcript --describe` prints that variant and those
 * thread counts instead, so a check can tell which ISA it compared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "pool.h"
#include "transcript.h"

static const uint32_t threads[] = {1, 2, 3, 7};
#define N_THREADS (sizeof threads / sizeof threads[0])

int main(int argc, char **argv) {
  size_t cap = 1u << 20, records = 0, len = 0;
  tl_pool *pools[N_THREADS] = {NULL};
  tl_parallel pars[N_THREADS];
  const tl_parallel *par_ptrs[N_THREADS];
  tl_transcript_host host = {tl_native_kernels(), par_ptrs, N_THREADS};
  uint8_t *out, *scratch;
  int rc = 1;
  if (argc == 2 && strcmp(argv[1], "--describe") == 0) {
    printf("kernels %s, threads", host.kernels->name);
    for (size_t i = 0; i < N_THREADS; i++) printf(" %u", (unsigned)threads[i]);
    printf("\n");
    return 0;
  }
  if (argc != 1) {
    fprintf(stderr, "usage: %s [--describe]\n", argv[0]);
    return 2;
  }
  out = malloc(cap);
  scratch = malloc(TL_TRANSCRIPT_SCRATCH);
  for (size_t i = 0; i < N_THREADS; i++) {
    if (tl_pool_create(threads[i], &pools[i]) != TL_OK) {
      fprintf(stderr, "transcript: no pool of %u threads\n", (unsigned)threads[i]);
      goto done;
    }
    pars[i] = tl_pool_parallel(pools[i]);
    par_ptrs[i] = &pars[i];
  }
  if (out == NULL || scratch == NULL) goto done;
  len = tl_transcript(out, cap, scratch, &host, &records);
  if (len == 0) {
    fprintf(stderr, "transcript failed\n");
    goto done;
  }
  fwrite(out, 1, len, stdout);
  fprintf(stderr, "%zu\n", records);
  rc = 0;
done:
  for (size_t i = 0; i < N_THREADS; i++) tl_pool_destroy(pools[i]);
  free(out);
  free(scratch);
  return rc;
}
