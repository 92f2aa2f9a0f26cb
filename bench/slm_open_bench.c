/* Opening a .slm artifact: plain open (mmap + structure checks, lazy: no
 * digest computed) versus open + eager verification (every section and
 * tensor BLAKE3), both in-process so process start-up is out of the
 * figure. Best of R runs of each; the page cache is warm after the first.
 *   slm_open_bench MODEL.slm [RUNS] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cpu.h"
#include "file.h"
#include "hash/blake3.h"
#include "slm/slm.h"
#include "slm/tensors.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One open of path in mode; seconds, or a negative value on failure. */
static double open_once(const char *path, tl_slm_verify mode) {
  double t0 = now_seconds();
  char err[512];
  tl_file_view v;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_status st = tl_file_open_view(path, &v, err, sizeof err);
  if (st != TL_OK) {
    fprintf(stderr, "%s\n", err);
    return -1.0;
  }
  st = tl_slm_open(&slm, v.data, v.len, mode, NULL);
  if (st == TL_OK) st = tl_slm_tensors_open(&ts, &slm, mode, NULL);
  tl_file_close_view(&v);
  if (st != TL_OK) {
    fprintf(stderr, "%s: %s\n", path, tl_status_name(st));
    return -1.0;
  }
  return now_seconds() - t0;
}

int main(int argc, char **argv) {
  static const struct {
    const char *label;
    tl_slm_verify mode;
  } modes[] = {{"open (mmap, structure only, lazy digests)", TL_SLM_VERIFY_LAZY},
               {"open + verify (eager BLAKE3 of every section and tensor)",
                TL_SLM_VERIFY_EAGER}};
  int runs = argc > 2 ? atoi(argv[2]) : 3;
  if (argc < 2 || runs < 1) {
    fprintf(stderr, "usage: slm_open_bench MODEL.slm [RUNS]\n");
    return 2;
  }
  (void)tl_blake3_set_default_backend(tl_native_blake3_backend());
  printf("BLAKE3 backend: %s\n",
         tl_blake3_backend_name(tl_native_blake3_backend()));
  for (size_t m = 0; m < 2; m++) {
    double best = 1e30;
    for (int r = 0; r < runs; r++) {
      double s = open_once(argv[1], modes[m].mode);
      if (s < 0) return 1;
      if (s < best) best = s;
    }
    printf("  %-58s %10.3f ms (best of %d)\n", modes[m].label, best * 1e3,
           runs);
  }
  return 0;
}
