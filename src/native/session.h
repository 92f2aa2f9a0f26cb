/* A model ready to generate on the native host: the artifact (eagerly
 * verified), its identity, the bound Qwen3 weights, a KV cache for the
 * requested context and the working memory, planned before anything large
 * is allocated (the memory preflight). Used by run and chat. */
#ifndef TL_NATIVE_SESSION_H
#define TL_NATIVE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "model/qwen3.h"

#define TL_SESSION_MAX_EOS 8

/* The memory plan (bytes). */
typedef struct tl_memory_plan {
  uint64_t weights;   /* tensor data, memory-mapped from the artifact */
  uint64_t tokenizer; /* tokenizer + template arena */
  uint64_t kv_cache;  /* 2 x layers x context x kv_heads x head_dim x 4 */
  uint64_t scratch;   /* forward-pass buffers for the longest prefill chunk */
  uint64_t logits;    /* vocab x 4 */
  uint64_t sampler;   /* sampler scratch */
  uint64_t total;
} tl_memory_plan;

/* The publisher's sampling defaults recorded in the artifact
 * (generation_config.json; docs/slm.md). */
typedef struct tl_gen_defaults {
  bool has_do_sample, do_sample;
  bool has_temperature, has_top_k, has_top_p, has_min_p, has_repeat_penalty;
  double temperature, top_p, min_p, repeat_penalty;
  uint32_t top_k;
} tl_gen_defaults;

typedef struct tl_session {
  tl_native_model model;
  char path[4096];
  uint8_t artifact_id[32]; /* SHA-256 of the file */
  tl_qwen3 qwen;
  tl_qwen3_cache cache;
  uint32_t context;     /* cache capacity in tokens */
  uint32_t defined_ids; /* ids the tokenizer defines */
  size_t max_token_bytes; /* the longest token's bytes (output buffers) */
  uint32_t eos[TL_SESSION_MAX_EOS];
  size_t n_eos;
  tl_gen_defaults gen;
  size_t prefill_chunk;
  tl_memory_plan plan;
  tl_arena arena;   /* qwen binding + cache + forward scratch */
  void *arena_mem;
  tl_arena sampler_scratch;
  void *sampler_mem;
  float *logits;
} tl_session;

/* Opens path and plans memory for a context of `context` tokens (0: the
 * model's max_position_embeddings, capped at 4096). When mem_budget is not
 * 0 and the plan exceeds it, returns TL_ERR_OUT_OF_MEMORY before
 * allocating (err says the plan). plan_only: fill s->plan and stop. */
tl_status tl_session_open(tl_session *s, const char *path, uint32_t context,
                          uint64_t mem_budget, bool plan_only, char *err,
                          size_t err_cap);
void tl_session_close(tl_session *s);

/* "weights 1195.7 MB, tokenizer ..., total ..." */
void tl_memory_plan_text(const tl_memory_plan *p, char *buf, size_t cap);

#endif
