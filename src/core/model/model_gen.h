/* Seeded synthetic Qwen3 model artifacts for the tests and for the
 * browser lanes' start-up self-test (selftest_model.h): a complete, valid
 * in-memory .slm (docs/slm.md: container SLM-1..4, a model artifact's five
 * sections SLM-4a, tensor directory SLM-10..12 with per-tensor BLAKE3)
 * with deterministic pseudo-random weights, without the converter.
 *
 *   tl_model_gen g = tl_model_gen_tiny(TL_QTYPE_Q8, 7);
 *   size_t len;
 *   st = tl_model_gen_build(&g, buf, cap, &scratch, &len);
 *   st = tl_model_gen_open(buf, len, &slm, &tensors, &model, &arena);
 *
 * Weights: every value of a tensor comes from splitmix64 seeded with the
 * seed and the tensor's name, uniform in +-bound: bound 1 for the
 * embedding, 1/sqrt(fan_in) for the projections (and an untied lm_head),
 * norm weights in [0.9, 1.1). Every 2-D tensor is stored as g->dtype
 * (encoded with the core's packers: q8/q4 quantize those values); the 1-D
 * norms are f32, as the converter stores them. The tokenizer and template
 * sections are placeholder bytes (the forward pass never reads them).
 *
 * Freestanding (core headers only), so the same artifact bytes come out
 * natively and in wasm32. */
#ifndef TL_CORE_MODEL_MODEL_GEN_H
#define TL_CORE_MODEL_MODEL_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "model/qwen3.h"
#include "quant/quant.h"
#include "slm/slm.h"
#include "slm/tensors.h"
#include "tinylm.h"

typedef struct tl_model_gen {
  uint32_t vocab, hidden, inter, layers, heads, kv_heads, head_dim;
  uint32_t max_positions;
  const char *rms_norm_eps; /* Python repr text, e.g. "1e-06" */
  const char *rope_theta;   /* e.g. "1000000.0" */
  bool tie;                 /* tie_word_embeddings: no lm_head.weight */
  tl_qtype dtype;           /* every 2-D tensor */
  uint64_t seed;
} tl_model_gen;

/* The most layers a generated model may have (names stay short). */
#define TL_MODEL_GEN_MAX_LAYERS 64

/* vocab 64, hidden 32, inter 48, 2 layers, 4 heads, 2 kv heads, head_dim
 * 8, 64 positions, eps "1e-06", theta "1000000.0", untied. */
tl_model_gen tl_model_gen_tiny(tl_qtype dtype, uint64_t seed);

/* Bytes of the artifact g describes (0 when g is invalid). scratch as for
 * tl_model_gen_build (the metadata is encoded to measure it). */
size_t tl_model_gen_size(const tl_model_gen *g, tl_arena *scratch);

/* Writes the artifact into buf (cap bytes) and its length to *len.
 * scratch holds the float weights of the largest tensor, the tensor list
 * and the CBOR writer's map scratch (tl_model_gen_scratch_bound bytes); it
 * is rewound before returning. TL_ERR_INVALID_ARGUMENT for a config
 * tl_qwen3_load would refuse as malformed (zero sizes, heads not a
 * multiple of kv_heads, odd head_dim, too many layers, NULL texts),
 * TL_ERR_BOUNDS when cap is too small, TL_ERR_OUT_OF_MEMORY (scratch). */
tl_status tl_model_gen_build(const tl_model_gen *g, uint8_t *buf, size_t cap,
                             tl_arena *scratch, size_t *len);

size_t tl_model_gen_scratch_bound(const tl_model_gen *g);

/* Opens an artifact the way a careful host does: tl_slm_open (eager),
 * tl_slm_artifact (must be a model), tl_slm_tensors_open (eager),
 * tl_qwen3_load (arena: the model's layer table and rope frequencies). */
tl_status tl_model_gen_open(const uint8_t *buf, size_t len, tl_slm *slm,
                            tl_slm_tensors *tensors, tl_qwen3 *model,
                            tl_arena *arena);

/* The metadata's "weights" text, e.g. "model_gen seed 7 q8": written into
 * out (cap bytes, NUL-terminated); returns its length. */
size_t tl_model_gen_describe(const tl_model_gen *g, char *out, size_t cap);

/* Whether K and V rows [0, len) of every layer and KV head of caches a and
 * b (of models of one shape, layers deep) are the same bits. */
bool tl_model_gen_same_cache(const tl_qwen3_cache *a, const tl_qwen3_cache *b,
                             uint32_t layers, uint32_t len);

#endif
