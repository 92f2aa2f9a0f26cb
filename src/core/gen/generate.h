/* The generation loop (docs/generation.md): feed the new prompt tokens,
 * then choose, emit and feed one token at a time until a stop rule fires.
 *
 * Kept apart from the sampler: a `choose` callback turns the logits into
 * the next id (the sampler of docs/architecture.md §7, or anything a test needs).
 *
 * Stop rules, checked after each generated token in this order:
 *   eos         the id is in the EOS set (the effective config's; the id
 *               is kept in the raw ids and bytes, and is not visible);
 *   stop string a stop string occurs in the raw bytes generated so far:
 *               matches may span tokens; raw ids and raw bytes keep
 *               everything generated, the visible bytes end before the
 *               match;
 *   max tokens  max_new ids generated;
 *   context     the cache is full (no room for the next token).
 * Cancellation (`cancelled` returns true) is checked before every forward
 * call; prefill runs in chunks so a long prompt can be stopped too. The
 * cache always ends at the last token whose forward call completed.
 *
 * Visible bytes stream through on_visible as soon as they cannot be the
 * start of a stop string (a suffix that is a prefix of one is held back
 * until decided). */
#ifndef TL_CORE_GEN_GENERATE_H
#define TL_CORE_GEN_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/qwen3.h"
#include "tok/tokenizer.h"

typedef enum tl_stop_reason {
  TL_STOP_NONE = 0,
  TL_STOP_EOS,
  TL_STOP_STRING,
  TL_STOP_MAX_TOKENS,
  TL_STOP_CONTEXT,
  TL_STOP_CANCELLED
} tl_stop_reason;

/* "eos", "stop_string", "max_tokens", "context_full", "cancelled". */
const char *tl_stop_reason_name(tl_stop_reason r);

/* Chooses the next id from the logits of the last position; generated
 * holds the ids generated so far in this call (step = their count). */
typedef tl_status (*tl_gen_choose_fn)(void *ctx, const float *logits,
                                      size_t vocab, const uint32_t *generated,
                                      size_t step, uint32_t *id);

typedef struct tl_gen_params {
  uint32_t max_new;
  const uint32_t *eos;
  size_t n_eos;
  const uint8_t *const *stops; /* stop strings (bytes) */
  const size_t *stop_lens;
  size_t n_stops;
  size_t prefill_chunk; /* tokens per prefill call (0: 64) */
  tl_gen_choose_fn choose;
  void *choose_ctx;
  /* Optional: visible bytes as they become final; the id just generated. */
  void (*on_visible)(void *ctx, const uint8_t *bytes, size_t n);
  void (*on_token)(void *ctx, uint32_t id);
  void (*on_prefill)(void *ctx, size_t done, size_t total); /* per chunk */
  bool (*cancelled)(void *ctx);
  void *cb_ctx;
  /* The forward pass; NULL: tl_qwen3_forward(m, cache, ..., scratch). A
   * host that runs several generations' steps together (tinylm serve's
   * batched decoding) passes its own, which must give tl_qwen3_forward's
   * logits, cache contents and errors. */
  tl_status (*forward)(void *ctx, tl_qwen3_cache *cache, const uint32_t *ids, size_t n,
                       float *logits, tl_qwen3_fault *fault);
  void *forward_ctx;
} tl_gen_params;

/* Caller-owned output buffers. */
typedef struct tl_gen_result {
  uint32_t *ids; /* generated ids */
  size_t n_ids, ids_cap;
  uint8_t *raw; /* their raw bytes (special tokens as their text) */
  size_t raw_len, raw_cap;
  uint8_t *visible; /* raw minus special tokens, cut before a stop match */
  size_t visible_len, visible_cap;
  size_t prompt_fed; /* prompt tokens whose forward pass completed */
  tl_stop_reason stop;
  tl_qwen3_fault fault; /* TL_ERR_NUMERICAL_FAILURE: where (tl_qwen3_forward) */
} tl_gen_result;

/* Feeds prompt[0..n_prompt) after the cache's current contents, then
 * generates. ids_cap must be >= max_new; raw_cap and visible_cap bound the
 * bytes kept (TL_ERR_BOUNDS when a token would not fit: the run stops
 * there). Errors from the forward pass and from choose are returned
 * as is, with the result describing everything up to the failure. */
tl_status tl_generate(const tl_qwen3 *m, tl_qwen3_cache *cache,
                      const tl_tokenizer *tok, const uint32_t *prompt,
                      size_t n_prompt, const tl_gen_params *p,
                      tl_arena *scratch, float *logits, tl_gen_result *r);

#endif
