/* Scalar-lane speed of the Qwen3 forward pass: prefill of P tokens in one
 * call, then N single-token decode steps (greedy on the logits), with
 * tokens/s for each and the process's peak RSS.
 *   forward_bench MODEL.slm [PROMPT_TOKENS] [DECODE_TOKENS] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "cpu.h"
#include "hash/blake3.h"
#include "session.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t argmax(const float *x, size_t n) {
  uint32_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = (uint32_t)i;
  return best;
}

int main(int argc, char **argv) {
  size_t prompt = argc > 2 ? (size_t)atoi(argv[2]) : 16;
  size_t decode = argc > 3 ? (size_t)atoi(argv[3]) : 8;
  tl_session s;
  uint32_t *ids;
  char err[1024];
  double t0, t_prefill, t_decode;
  struct rusage ru;
  tl_status st;
  if (argc < 2 || prompt == 0 || prompt + decode > UINT32_MAX) {
    fprintf(stderr, "usage: forward_bench MODEL.slm [PROMPT_TOKENS] [DECODE_TOKENS]\n");
    return 2;
  }
  (void)tl_blake3_set_default_backend(tl_native_blake3_backend());
  /* The prompt goes in as one prefill call: plan for a chunk that long. */
  st = tl_session_open(&s, argv[1], err, sizeof err);
  if (st == TL_OK)
    st = tl_session_plan(&s, (uint32_t)(prompt + decode), prompt, err, sizeof err);
  if (st == TL_OK) st = tl_session_allocate(&s, 0, err, sizeof err);
  ids = malloc(prompt * sizeof *ids);
  if (st != TL_OK || ids == NULL) {
    fprintf(stderr, "%s\n", st != TL_OK ? err : "out of memory");
    return 1;
  }
  for (size_t i = 0; i < prompt; i++)
    ids[i] = (uint32_t)((i * 7919 + 13) % s.qwen.cfg.vocab);
  t0 = now_seconds();
  st = tl_qwen3_forward(&s.qwen, &s.cache, ids, prompt, s.logits, NULL, &s.arena, NULL);
  t_prefill = now_seconds() - t0;
  t0 = now_seconds();
  for (size_t i = 0; i < decode && st == TL_OK; i++) {
    uint32_t next = argmax(s.logits, s.qwen.cfg.vocab);
    st = tl_qwen3_forward(&s.qwen, &s.cache, &next, 1, s.logits, NULL, &s.arena, NULL);
  }
  t_decode = now_seconds() - t0;
  if (st != TL_OK) {
    fprintf(stderr, "forward failed: %s\n", tl_status_name(st));
    return 1;
  }
  getrusage(RUSAGE_SELF, &ru);
  printf("  scalar lane: %u layers, hidden %u, vocab %u\n", s.qwen.cfg.layers,
         s.qwen.cfg.hidden, s.qwen.cfg.vocab);
  printf("  prefill %zu tokens: %.2f s, %.2f tokens/s\n", prompt, t_prefill,
         (double)prompt / t_prefill);
  printf("  decode %zu tokens: %.2f s, %.2f tokens/s\n", decode, t_decode,
         decode ? (double)decode / t_decode : 0.0);
  printf("  peak RSS %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
  free(ids);
  tl_session_close(&s);
  return 0;
}
