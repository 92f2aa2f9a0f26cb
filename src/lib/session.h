/* A model ready to run on the native host, in three steps:
 *   tl_session_open      the artifact (eagerly verified), the bound Qwen3
 *                        weights, the EOS set and generation defaults;
 *   tl_session_plan      the memory plan for a context and a prefill chunk
 *                        (the preflight: nothing large is allocated yet);
 *   tl_session_allocate  the KV cache and working memory, within a budget.
 * The artifact id (SHA-256 of the whole file) is computed only when asked
 * for (tl_session_artifact_id): receipts need it, verification and
 * benchmarks do not. Used by run, chat, verify and the forward bench. */
#ifndef TL_NATIVE_SESSION_H
#define TL_NATIVE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lane.h"
#include "model.h"
#include "model/qwen3.h"

#define TL_SESSION_MAX_EOS 8

/* The memory plan (bytes). */
typedef struct tl_memory_plan {
  uint64_t weights;   /* tensor data: copied into memory (fast lane) or mapped */
  uint64_t tokenizer; /* tokenizer + template arena */
  uint64_t kv_cache;  /* tl_qwen3_cache_bytes: 2 x layers x context x kv_heads x head_dim x 4
                       * (strict lane) or x 2 (fast lane: binary16) */
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
  bool shared_model; /* model is another owner's (tl_session_open_shared) */
  bool slot;         /* a slot of another session (tl_session_open_slot) */
  char path[4096];
  bool has_artifact_id;
  uint8_t artifact_id[32]; /* SHA-256 of the file, once computed */
  tl_qwen3 qwen;
  tl_native_lane lane; /* strict until tl_session_lane */
  tl_qwen3_cache cache;
  uint32_t context;     /* cache capacity in tokens */
  uint32_t defined_ids; /* ids the tokenizer defines */
  size_t max_token_bytes; /* the longest token's bytes (output buffers) */
  uint32_t eos[TL_SESSION_MAX_EOS];
  size_t n_eos;
  tl_gen_defaults gen;
  /* An embedding model (metadata "embedding", docs/slm.md): it generates
   * no text (tl_turn_run refuses it); embed_append is the id its
   * tokenizer appends to every input (embed.h). */
  bool embedding;
  uint32_t embed_append;
  size_t prefill_chunk;
  tl_memory_plan plan;
  tl_arena bind_arena; /* the qwen binding */
  void *bind_mem;
  tl_arena arena; /* cache + forward scratch */
  void *arena_mem;
  tl_arena sampler_scratch;
  void *sampler_mem;
  float *logits;
  /* A constrained turn's matcher region and allow mask (constrain.h):
   * allocated by the first turn with a grammar, grown when a grammar
   * needs more, kept for the next; outside the memory plan. */
  void *grammar_mem;
  size_t grammar_cap;
  struct tl_gmatcher *grammar_matcher; /* the last constrained turn's, in grammar_mem */
  uint64_t *allow;
} tl_session;

/* On failure everything is released and err says why. */
tl_status tl_session_open(tl_session *s, const char *path, char *err,
                          size_t err_cap);

/* The same over a model opened elsewhere (the public API's model handle,
 * which several sessions share), without verifying it again: m must stay
 * open until after tl_session_close, which leaves it open. name stands
 * for the path in err and receipts' error texts. */
tl_status tl_session_open_shared(tl_session *s, const tl_native_model *m,
                                 const char *name, char *err, size_t err_cap);

/* Puts the model on the lane o asks for (lane.h): once, before planning.
 * On failure the model stays on the strict lane and err says why. */
tl_status tl_session_lane(tl_session *s, const tl_lane_options *o, char *err,
                          size_t err_cap);

/* Plans for `context` tokens of cache (0: max_position_embeddings, capped
 * at 4096) and forward calls of at most `chunk` tokens (0: 32, the
 * prefill chunk). TL_ERR_CONTEXT_EXCEEDED past max_position_embeddings. */
tl_status tl_session_plan(tl_session *s, uint32_t context, size_t chunk,
                          char *err, size_t err_cap);

/* Allocates what the plan says, and copies the weights when the lane
 * wants them in memory; TL_ERR_OUT_OF_MEMORY before allocating when
 * mem_budget is not 0 and the plan exceeds it (err gives the plan). */
tl_status tl_session_allocate(tl_session *s, uint64_t mem_budget, char *err,
                              size_t err_cap);

/* The artifact id, computed on the first call (one pass over the file). */
tl_status tl_session_artifact_id(tl_session *s, const uint8_t **id);

/* A slot of tinylm serve's engine: a session that computes with master's
 * model, lane and weights (master allocated, its artifact id computed)
 * and has its own KV cache of master's context, logits and sampler
 * scratch, and no forward scratch: its turns pass their forward calls to
 * the engine (tl_turn_params.forward). Close every slot before master. */
tl_status tl_session_open_slot(tl_session *slot, const tl_session *master, char *err,
                               size_t err_cap);
/* The bytes a slot takes beyond master's: cache, logits, sampler. */
uint64_t tl_session_slot_bytes(const tl_session *master);

/* The region and mask a constrained turn needs (at least bytes; the mask
 * over the vocabulary's rows), allocated or grown here. */
tl_status tl_session_grammar_memory(tl_session *s, size_t bytes);

void tl_session_close(tl_session *s);

/* "weights 1195.7 MB, tokenizer ..., total ..." */
void tl_memory_plan_text(const tl_memory_plan *p, char *buf, size_t cap);

#endif
