/* One generation turn on an open session, as the public API (api.c) makes
 * it for tinylm run, chat and every embedder: the sampler profile (the
 * caller's values, the artifact's generation defaults for the rest), the
 * sampler as the generation loop's choose callback, the output buffers,
 * tl_generate, the timings and the run receipt (docs/receipts.md).
 * Reporting, files and signals stay with the caller. */
#ifndef TL_NATIVE_TURN_H
#define TL_NATIVE_TURN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "constrain.h"
#include "gen/generate.h"
#include "grammar/grammar.h"
#include "sample/sampler.h"
#include "session.h"
#include "tinylm.h"

typedef struct tl_turn_params {
  /* The public API's parameters (tinylm.h), checked by the caller: the
   * sampling values (those given override the artifact's generation
   * defaults; greedy for what neither sets), seed, turn, max_tokens and
   * the callbacks with their ctx, each optional (a nonzero return sets
   * *cancel). The prompt and stop strings are read from here instead. */
  const tl_generation_params *gen;
  const uint8_t *const *stops;
  const size_t *stop_lens;
  size_t n_stops;
  /* What the receipt's prompt node records. */
  const char *mode; /* "text" or "messages" */
  bool add_generation_prompt;
  const uint8_t *prompt_bytes;
  size_t prompt_len;
  atomic_int *cancel; /* polled before every forward call */
  /* ids[0..reused) are the cache's last rows already (an earlier turn's,
   * taken instead of computed: tinylm serve's prefix reuse, reused < n):
   * the turn computes the rest, and its sampler history and receipt take
   * all n ids as the prompt at position cache.len - reused, as if computed
   * now (the same bits: F-8). */
  size_t reused;
  /* Ids the sampler never draws (S-2: ascending, unique; tinylm serve's
   * logit_bias -100), recorded in the receipt's sampler profile. */
  const uint32_t *ban;
  size_t n_ban;
  /* Structured output (docs/structured.md): the grammar the reply keeps to,
   * its token mask applied before every draw (S-2a), EOS only where it
   * accepts; NULL: free text. With a prompt that leaves the reply open for
   * a thought (tl_constraint_thinking_open) the first token may also be
   * <think>, and the thought is free for think_budget tokens (0: the
   * default, TL_THINK_BUDGET_DEFAULT) before </think> is forced; the
   * grammar applies after it. think_budget counts only with a grammar. */
  const tl_grammar *grammar;
  uint32_t think_budget;
  /* The generation loop's forward pass (tl_gen_params.forward); NULL:
   * tl_qwen3_forward on the session. */
  tl_status (*forward)(void *ctx, tl_qwen3_cache *cache, const uint32_t *ids, size_t n,
                       float *logits, tl_qwen3_fault *fault);
  void *forward_ctx;
} tl_turn_params;

typedef struct tl_turn {
  tl_gen_result r; /* ids, raw and visible bytes (malloc'd), stop, fault */
  tl_status status; /* tl_generate's */
  tl_sampler_profile profile;
  uint32_t position; /* where the prompt started in the cache */
  uint32_t max_new;  /* the token limit that applied */
  uint64_t prefill_us, decode_us;
  /* With a grammar: its digest (in the receipt), the think budget that
   * applied, and whether the reply (after any thought) is a complete
   * sentence of the grammar: always after an EOS stop; a reply cut by
   * max_tokens, a stop string or the context may be a prefix. */
  bool constrained, grammar_complete;
  uint8_t grammar_digest[32];
  uint32_t think_budget;
  /* Why a constrained generation failed, when the constraint was the
   * reason (every id masked, the matcher's memory); NULL otherwise. */
  const char *why;
  uint8_t *receipt; /* the receipt file (malloc'd) */
  size_t receipt_len;
  uint8_t receipt_id[32];
  tl_status receipt_status; /* TL_OK when receipt is set */
} tl_turn;

/* Generates after ids[0..n) (which follow the cache's current contents).
 * Refusals before anything runs (t holds nothing then; err says why):
 *   TL_ERR_UNSUPPORTED_FEATURE an embedding model (session.h);
 *   TL_ERR_INVALID_MODEL     a sampling value the caller left to the
 *                            artifact is out of the sampler's range (*field
 *                            names it) or its EOS set is invalid;
 *   TL_ERR_INVALID_ARGUMENT  a value the caller gave is out of range
 *                            (*field names it);
 *   TL_ERR_CONTEXT_EXCEEDED  max_new 0 and the prompt does not fit;
 *   TL_ERR_OUT_OF_MEMORY, TL_ERR_BOUNDS (a grammar's matcher past its
 *                            limits), TL_ERR_INTERNAL_INVARIANT (the
 *                            grammar machinery refused what it must take).
 * Otherwise returns TL_OK and t describes the generation, whose own
 * outcome is t->status (TL_ERR_CANCELLED, TL_ERR_NUMERICAL_FAILURE with
 * t->r.fault, ...), with the receipt (also of a failed generation) unless
 * t->receipt_status says why not. Free t with tl_turn_free. */
/* The field's name in the public API's error records ("temperature",
 * "top_k", ..., "eos", "vocabulary"; tinylm.h's tl_error.kind). */
const char *tl_turn_field_name(tl_sampler_field field);

tl_status tl_turn_run(tl_session *s, const tl_turn_params *p, const uint32_t *ids,
                      size_t n, tl_turn *t, tl_sampler_field *field, char *err,
                      size_t err_cap);
void tl_turn_free(tl_turn *t);

#endif
