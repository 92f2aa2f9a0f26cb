/* Throughput of each fast/4 matvec kernel variant this CPU runs, one
 * thread: a 1024-wide matrix of each weight type, hot (256 rows, in L2:
 * the compute rate) and cold (the given MB of rows, from memory), as GB/s
 * of weights read and rows/s, per second of this thread's CPU time (so a
 * shared, loaded host does not count the time others had the core; the
 * cold figures still share the memory bus with them).
 *   kernel_bench [COLD_MB]   (default 256) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"
#include "kernels/kernels.h"

#define WIDTH 1024

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* rows x WIDTH weights of type, packed from a fixed pseudo-random pattern */
static uint8_t *make_weights(tl_qtype type, size_t rows, size_t *bytes) {
  float *src = malloc(WIDTH * sizeof(float));
  uint8_t *w;
  size_t row_bytes;
  if (src == NULL || tl_quant_row_bytes(type, WIDTH, &row_bytes) != TL_OK) return NULL;
  for (size_t i = 0; i < WIDTH; i++) src[i] = (float)((int)(i * 37 % 201) - 100) / 64.0f;
  *bytes = rows * row_bytes;
  w = malloc(*bytes);
  if (w != NULL)
    for (size_t r = 0; r < rows; r++) {
      (void)tl_quant_pack(type, src, 1, WIDTH, w + r * row_bytes, row_bytes, NULL);
      tl_kern_pack(type, w + r * row_bytes, w + r * row_bytes, row_bytes, WIDTH, 0, 1);
    }
  free(src);
  return w;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* The float kernels' ceiling on this CPU: 16-lane multiply-adds per CPU
 * second one thread issues as a separate multiply and add (fast/4, F-6:
 * no fused multiply-add) and as FMA, with ten independent chains of each so
 * that latency does not limit. The empty asm keeps every chain in its own
 * register (otherwise the compiler splits the loop and drops the adds). */
#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)
#define CHAIN_INIT(i) __m512 a##i = _mm512_set1_ps(1.0f + i), b##i = _mm512_set1_ps(2.0f + i);
#define CHAIN_KEEP(i) __asm__ volatile("" : "+v"(a##i), "+v"(b##i));
#define CHAIN_MUL_ADD(i) a##i = _mm512_mul_ps(a##i, m); b##i = _mm512_add_ps(b##i, c);
#define CHAIN_FMA(i) a##i = _mm512_fmadd_ps(a##i, m, c); b##i = _mm512_fmadd_ps(b##i, m, c);
__attribute__((target("avx512f,fma"))) static void issue_rates(double *mul_add, double *fma) {
  const __m512 m = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-9f);
  const long steps = 20000000;
  double t0;
  CHAINS(CHAIN_INIT)
  t0 = now_s();
  for (long n = 0; n < steps; n++) {
    CHAINS(CHAIN_MUL_ADD)
    CHAINS(CHAIN_KEEP)
  }
  *mul_add = 10.0 * steps * 16 / (now_s() - t0) / 1e9; /* one MAC per mul+add pair */
  t0 = now_s();
  for (long n = 0; n < steps; n++) {
    CHAINS(CHAIN_FMA)
    CHAINS(CHAIN_KEEP)
  }
  *fma = 20.0 * steps * 16 / (now_s() - t0) / 1e9;
}
#endif

/* A whole decimal number of megabytes, 1..65536 (atoi took "--help" as 0
 * and the benchmark then overran a zero-length buffer). */
static int parse_mb(const char *text, size_t *mb) {
  char *end;
  unsigned long v = strtoul(text, &end, 10);
  if (end == text || *end != '\0' || text[0] == '-' || v < 1 || v > 65536) return 0;
  *mb = v;
  return 1;
}

int main(int argc, char **argv) {
  static const char *const names[] = {"f32", "f16", "bf16", "q8", "q4"};
  size_t cold_mb = 256;
  enum { G = (WIDTH + 511) / 512 };
  static float xf[WIDTH], scales[16 * G];
  static _Alignas(64) int8_t codes[TL_KERN_GROUP_CODES * G];
  static int32_t b8[16 * G], b4[16 * G];
  tl_kern_x x = {xf, codes, scales, b8, b4};
  if (argc > 2 || (argc == 2 && !parse_mb(argv[1], &cold_mb))) {
    fprintf(stderr, "usage: kernel_bench [COLD_MB]   (1..65536, default 256)\n");
    return 2;
  }
  for (size_t i = 0; i < WIDTH; i++) xf[i] = (float)((int)(i * 53 % 97) - 48) / 16.0f;
  tl_kern_quantize_x(xf, WIDTH, codes, scales, b8, b4);
  printf("kernel throughput, one thread, width %d (GB/s of weights, Mrows/s; per CPU second)\n",
         WIDTH);
  printf("%-7s %-5s %16s %16s %16s\n", "isa", "type", "hot (256 rows)", "cold",
         "tile (16 tokens)");
  for (int isa = 0; isa < TL_KERN_ISA_COUNT; isa++) {
    const tl_kernels *k = tl_kernels_get((tl_kern_isa)isa);
    if (k == NULL || !tl_native_kernels_supported((tl_kern_isa)isa)) continue;
    for (int type = 0; type < 5; type++) {
      size_t row_bytes, hot_bytes, cold_bytes, cold_rows;
      uint8_t *hot, *cold;
      float *y;
      double gbs[2], rows_s[2];
      (void)tl_quant_row_bytes((tl_qtype)type, WIDTH, &row_bytes);
      cold_rows = cold_mb * 1000000 / row_bytes;
      hot = make_weights((tl_qtype)type, 256, &hot_bytes);
      cold = make_weights((tl_qtype)type, cold_rows, &cold_bytes);
      y = malloc(cold_rows * sizeof(float));
      if (hot == NULL || cold == NULL || y == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
      }
      for (int c = 0; c < 2; c++) {
        const uint8_t *w = c ? cold : hot;
        size_t rows = c ? cold_rows : 256, reps = c ? 3 : 2000;
        double best = 1e30;
        for (int trial = 0; trial < 3; trial++) {
          double t0 = now_s();
          for (size_t r = 0; r < reps; r++) k->rows[type](w, row_bytes, WIDTH, &x, rows, y);
          if (now_s() - t0 < best) best = now_s() - t0;
        }
        gbs[c] = (double)rows * row_bytes * reps / best / 1e9;
        rows_s[c] = (double)rows * reps / best / 1e6;
      }
      {
        /* prefill's product: the hot rows times 16 tokens at once, as
         * G multiply-adds per second */
        static tl_kern_x xs[16];
        static float ys[16 * 256];
        double best = 1e30;
        for (int t = 0; t < 16; t++) xs[t] = x;
        for (int trial = 0; trial < 3; trial++) {
          double t0 = now_s();
          for (int r = 0; r < 200; r++)
            tl_kern_tile(k, (tl_qtype)type, hot, row_bytes, WIDTH, xs, 16, 256, ys, 256);
          if (now_s() - t0 < best) best = now_s() - t0;
        }
        printf("%-7s %-5s %7.1f %7.1f  %7.1f %7.1f  %7.1f GMAC/s\n", k->name, names[type], gbs[0],
               rows_s[0], gbs[1], rows_s[1], 200.0 * 16 * 256 * WIDTH / best / 1e9);
      }
      free(hot);
      free(cold);
      free(y);
    }
  }
#if defined(__x86_64__)
  if (tl_native_kernels_supported(TL_KERN_AVX512) && __builtin_cpu_supports("fma")) {
    double mul_add, fma;
    issue_rates(&mul_add, &fma);
    printf("float ceiling (zmm, one thread): separate multiply and add %.1f GMAC/s (fast/4); "
           "fused multiply-add %.1f GMAC/s (not in fast/4)\n",
           mul_add, fma);
  }
#endif
  return 0;
}
