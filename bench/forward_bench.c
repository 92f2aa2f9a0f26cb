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
#include "model.h"
#include "model/qwen3.h"

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
  tl_native_model nm;
  tl_qwen3 m;
  tl_qwen3_cache cache;
  tl_arena arena, scratch;
  void *arena_mem, *scratch_mem;
  uint32_t *ids;
  float *logits;
  char err[1024];
  double t0, t_prefill, t_decode;
  struct rusage ru;
  tl_status st;
  if (argc < 2 || prompt == 0) {
    fprintf(stderr, "usage: forward_bench MODEL.slm [PROMPT_TOKENS] [DECODE_TOKENS]\n");
    return 2;
  }
  (void)tl_blake3_set_default_backend(tl_native_blake3_backend());
  st = tl_native_model_open(argv[1], &nm, err, sizeof err);
  if (st != TL_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  arena_mem = malloc(1 << 20);
  tl_arena_init(&arena, arena_mem, 1 << 20);
  st = tl_qwen3_load(&m, &nm.slm, &nm.tensors, &arena);
  if (st != TL_OK) {
    fprintf(stderr, "%s: %s\n", argv[1], tl_status_name(st));
    return 1;
  }
  {
    size_t keys = prompt + decode;
    size_t need = tl_qwen3_scratch_bound(&m, prompt, (uint32_t)keys) +
                  2 * (size_t)m.cfg.layers * keys * m.cfg.kv_heads * m.cfg.head_dim *
                      sizeof(float) + 256;
    scratch_mem = malloc(need);
    tl_arena_init(&scratch, scratch_mem, need);
    st = tl_qwen3_cache_init(&cache, &m, (uint32_t)keys, &scratch);
  }
  ids = malloc(prompt * sizeof *ids);
  logits = malloc(m.cfg.vocab * sizeof *logits);
  for (size_t i = 0; i < prompt; i++) ids[i] = (uint32_t)((i * 7919 + 13) % m.cfg.vocab);
  t0 = now_seconds();
  if (st == TL_OK) st = tl_qwen3_forward(&m, &cache, ids, prompt, logits, NULL, &scratch, NULL);
  t_prefill = now_seconds() - t0;
  t0 = now_seconds();
  for (size_t i = 0; i < decode && st == TL_OK; i++) {
    uint32_t next = argmax(logits, m.cfg.vocab);
    st = tl_qwen3_forward(&m, &cache, &next, 1, logits, NULL, &scratch, NULL);
  }
  t_decode = now_seconds() - t0;
  if (st != TL_OK) {
    fprintf(stderr, "forward failed: %s\n", tl_status_name(st));
    return 1;
  }
  getrusage(RUSAGE_SELF, &ru);
  printf("  scalar lane: %u layers, hidden %u, vocab %u\n", m.cfg.layers,
         m.cfg.hidden, m.cfg.vocab);
  printf("  prefill %zu tokens: %.2f s, %.2f tokens/s\n", prompt, t_prefill,
         (double)prompt / t_prefill);
  printf("  decode %zu tokens: %.2f s, %.2f tokens/s\n", decode, t_decode,
         decode ? (double)decode / t_decode : 0.0);
  printf("  peak RSS %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
  free(ids);
  free(logits);
  free(arena_mem);
  free(scratch_mem);
  tl_native_model_close(&nm);
  return 0;
}
