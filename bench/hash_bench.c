/* Native hash throughput: SHA-256 and every BLAKE3 backend this build has
 * and this CPU supports, over one file (mapped, so disk speed is out of the
 * figure). Best of R runs; prints MB/s (10^6 bytes per second).
 *   hash_bench FILE [RUNS] */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "cpu.h"
#include "file.h"
#include "hash/blake3.h"
#include "hash/sha256.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One hash of the whole input: SHA-256 when sha256 is set, else BLAKE3 on
 * the given backend. */
static tl_status hash_once(bool sha256, tl_blake3_backend backend,
                           const uint8_t *data, size_t len, uint8_t *out) {
  tl_blake3_hasher h;
  tl_status st;
  if (sha256) return tl_sha256(data, len, out);
  st = tl_blake3_hasher_init_backend(&h, backend);
  if (st == TL_OK) st = tl_blake3_hasher_update(&h, data, len);
  if (st == TL_OK) st = tl_blake3_hasher_finalize(&h, out, 32);
  return st;
}

static int measure(const char *label, bool sha256, tl_blake3_backend backend,
                   const tl_file_view *v, int runs) {
  uint8_t digest[32];
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = now_seconds();
    if (hash_once(sha256, backend, v->data, v->len, digest) != TL_OK) {
      fprintf(stderr, "error: %s failed\n", label);
      return 1;
    }
    double dt = now_seconds() - t0;
    if (dt < best) best = dt;
  }
  printf("%-28s %10.1f MB/s  (%.3f s for %zu bytes, best of %d)\n", label,
         (double)v->len / best / 1e6, best, v->len, runs);
  return 0;
}

int main(int argc, char **argv) {
  static const tl_blake3_backend backends[] = {
      TL_BLAKE3_PORTABLE, TL_BLAKE3_SSE41, TL_BLAKE3_AVX2, TL_BLAKE3_AVX512};
  tl_file_view view;
  char err[512];
  int runs = argc > 2 ? atoi(argv[2]) : 3;
  int rc = 0;
  struct rusage ru;
  if (argc < 2 || argc > 3 || runs < 1) {
    fprintf(stderr, "usage: hash_bench FILE [RUNS]\n");
    return 2;
  }
  if (tl_file_open_view(argv[1], &view, err, sizeof err) != TL_OK) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  rc |= measure("native sha256", true, TL_BLAKE3_PORTABLE, &view, runs);
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    char label[64];
    if (!tl_blake3_backend_compiled(backends[i]) ||
        !tl_native_blake3_backend_supported(backends[i]))
      continue;
    snprintf(label, sizeof label, "native blake3 (%s)",
             tl_blake3_backend_name(backends[i]));
    rc |= measure(label, false, backends[i], &view, runs);
  }
  getrusage(RUSAGE_SELF, &ru);
  printf("%-28s %10ld KiB\n", "native peak RSS", ru.ru_maxrss);
  tl_file_close_view(&view);
  return rc;
}
