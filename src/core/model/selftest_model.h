/* The start-up self-test's tiny forward pass (docs/web.md, Self-tests): a
 * lane about to compute tokens first runs seeded Qwen3-shaped models
 * (tl_model_gen: hidden 40, intermediate 72, heads of 10, so every kernel
 * has a tail; one model per stored dtype f32, f16, bf16, q8 and q4, the
 * q4 one with tied embeddings) through the forward pass it will use,
 * prefill of six tokens (a block of four positions and two more) then two
 * decoded tokens, and hashes every call's logits (BLAKE3 of their f32
 * bits, little-endian) into one digest. The digest is compared with a
 * golden the native lanes produced (selftest_golden.h, written by
 * tools/selftest_golden.c), whose kernels `make test` checks against the
 * float64 oracle. Freestanding: the wasm32 modules run it at start-up, the
 * native tests on every kernel variant and thread count. */
#ifndef TL_CORE_MODEL_SELFTEST_MODEL_H
#define TL_CORE_MODEL_SELFTEST_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "hash/blake3.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "model/model_gen.h"
#include "model/qwen3.h"
#include "tinylm.h"

/* Working memory a digest needs (the largest model twice, its cache and
 * the forward pass's scratch, with room). */
#define TL_SELFTEST_WORK_BYTES (1u << 20)
#define TL_SELFTEST_TYPES 5

/* One opened self-test model, in a caller's arena. */
typedef struct tl_selftest_model {
  tl_slm slm;
  tl_slm_tensors ts;
  tl_qwen3 m;
  uint8_t *file, *pack; /* the artifact; its q8/q4 weights packed */
  size_t len;
} tl_selftest_model;

/* The generator config of model i (< TL_SELFTEST_TYPES). */
tl_model_gen tl_selftest_gen(size_t i);

/* Builds and opens model i into arena (which keeps it). */
tl_status tl_selftest_open(tl_selftest_model *s, size_t i, tl_arena *arena);

/* Runs s's prompt on the fast lane with kernels k (NULL: the strict lane)
 * and par (NULL: the caller alone), hashing each call's logits into h.
 * arena holds the cache and scratch and is rewound before returning. */
tl_status tl_selftest_run(tl_selftest_model *s, const tl_kernels *k, const tl_parallel *par,
                          tl_arena *arena, tl_blake3_hasher *h);

/* Every model in turn (tl_selftest_open, tl_selftest_run) into one digest.
 * work: TL_SELFTEST_WORK_BYTES (TL_ERR_OUT_OF_MEMORY when short). */
tl_status tl_selftest_digest(const tl_kernels *k, const tl_parallel *par, uint8_t *work,
                             size_t work_len, uint8_t out[32]);

/* The goldens of the strict lane and of the fast profile (any kernels, any
 * thread count: fast/4's bits do not depend on them). */
extern const uint8_t tl_selftest_golden_strict[32];
extern const uint8_t tl_selftest_golden_fast[32];

#endif
