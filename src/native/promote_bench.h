/* tinylm promote's benchmark step (docs/promotion.md §Benchmark): after
 * the claims, one `tinylm bench` process per prompt length of the plan's
 * "benchmark" (a separate process per point, so that each peak RSS is that
 * context's alone), their figures in one store object
 * (tinylm.benchmark/1) that the run record names. A benchmark is not a
 * claim: its failure changes no verdict. */
#ifndef TL_NATIVE_PROMOTE_BENCH_H
#define TL_NATIVE_PROMOTE_BENCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "promote_plan.h"
#include "promote_store.h"
#include "tinylm.h"

#define TL_BENCHMARK_FORMAT "tinylm.benchmark/1"

/* What the step runs on: the plan's artifact (its id), lane and benchmark,
 * the fast lane's threads (0: the lane's default), the build. */
typedef struct tl_bench_step {
  const tl_plan *plan;
  const char *slm_path;
  const uint8_t *artifact_id;
  const char *build_id;
  uint32_t threads;
  const char *exe; /* the tinylm to run: NULL is /proc/self/exe */
} tl_bench_step;

/* Runs every point (one stderr line each) and puts the object into the
 * store; *id names it. Any failure (a child's exit, its output, the
 * store): err says which point and why. */
tl_status tl_promote_benchmark(const tl_bench_step *b, tl_store *store, uint8_t id[32], char *err,
                               size_t err_cap);

/* plan init's "benchmark" for a model of max_positions on lane: prompt
 * lengths 16, 64, 256, 1024 and 4096 (the strict lane's stop at 1024),
 * 16 decoded tokens after each, one repetition. A length the context
 * cannot hold (P + 16 + 1 tokens) is dropped and the longest it can
 * hold takes the place of the dropped ones; NULL when not even one
 * token fits. */
json_t *tl_bench_plan_default(const char *lane, uint32_t max_positions);

/* One point from `tinylm bench --json`'s object: its entry of "points"
 * (NULL with err when a figure is missing or not positive). Exposed for
 * the unit test. */
json_t *tl_bench_point(const json_t *bench, uint32_t prompt_tokens, char *err, size_t err_cap);

/* The CPU's model name (/proc/cpuinfo's "model name", as lscpu shows it);
 * "unknown" when there is none. */
void tl_bench_cpu_name(char *buf, size_t cap);

/* argv run as a child with its stdout read through a pipe into *out
 * (malloc'd, NUL-terminated) and its stderr discarded (the error it
 * prints is also in its --json output); *status its wait status. */
tl_status tl_spawn_read(const char *exe, char *const argv[], char **out, int *status,
                        char *err, size_t cap);

#endif
