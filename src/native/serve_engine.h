/* The engine behind `tinylm serve` (docs/server.md): one model on one
 * lane, --parallel sequence slots each with its own KV cache, a bounded
 * queue of jobs, and one forward thread that serves every slot: the
 * active slots' next tokens in one batched pass over the weights
 * (tl_qwen3_forward_rows), prefill chunks between those passes.
 *
 * A job is one choice of one request: its prompt ids, sampling values and
 * stop rules. It runs the same generation turn as `tinylm run`
 * (turn.h) in a slot, so its tokens, bytes and receipt id are the same
 * whether it ran alone or beside others, in any slot, with or without a
 * prefix taken from a slot's cache, at any thread count (the batched and
 * chunked forward passes give the bits of the one-token pass: F-8,
 * docs/fast-profile.md).
 *
 * Thread-safe: any thread may submit, wait, cancel and release. */
#ifndef TL_NATIVE_SERVE_ENGINE_H
#define TL_NATIVE_SERVE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lane.h"
#include "serve_grammar.h"
#include "serve_request.h"
#include "session.h"
#include "tinylm.h"

typedef struct tl_srv_engine tl_srv_engine;
typedef struct tl_srv_job tl_srv_job;

typedef struct tl_srv_engine_options {
  const char *model_path;
  tl_lane_options lane;
  uint32_t parallel;      /* slots, 1..64 */
  uint32_t queue;         /* jobs waiting for a slot, 0..4096 */
  uint32_t context;       /* per slot; 0: max_position_embeddings, at most 4096 */
  uint64_t mem_budget;    /* bytes; 0: the machine's available memory */
  const char *receipt_dir; /* NULL: receipts are not kept; else a directory
                            * only this user can change (created 0700) */
  bool no_shared_cache;    /* no prompt prefix reused across jobs */
  bool escape_special;     /* special-token text in messages as text (serve_escape.h) */
  uint32_t gather_us;      /* how long a decode step waits at least for the decoding
                            * slots that have not yet asked for their next token,
                            * microseconds; 0: 3000 (3 ms); tl_srv_gather_ns */
} tl_srv_engine_options;

/* How long a decode step waits for the decoding slots (of `decoding`)
 * that have not yet asked for their next token: the last step's time
 * step_ns over the number decoding, or floor_ns (gather_us) when that is
 * longer. A slot left out waits a whole step for its token, and the step
 * runs nearly as long with one row fewer (the weights are read once for
 * all of them): n rows after a wait w give more tokens per second than
 * n - 1 without it while w < step / (n - 1), so a share of step / n is
 * always worth waiting for a slot that is only late (sampling, or
 * descheduled on a loaded host). */
long tl_srv_gather_ns(long floor_ns, long step_ns, uint32_t decoding);

/* Loads the model, preflights the memory of every slot (refused with
 * TL_ERR_OUT_OF_MEMORY and every figure in err when it does not fit) and
 * starts the forward and slot threads. */
tl_status tl_srv_engine_open(const tl_srv_engine_options *o, tl_srv_engine **out, char *err,
                             size_t err_cap);
/* Cancels every job, joins the threads, frees everything. */
void tl_srv_engine_close(tl_srv_engine *e);

/* Facts for responses: the model's vocabulary (ids the tokenizer
 * defines), the context per slot, the artifact id (hex), the lane profile
 * ("fast/4"), kernel variant, threads, and the build id
 * (system_fingerprint). Pointers live as long as e. */
typedef struct tl_srv_facts {
  uint32_t vocab, context, parallel, queue;
  const char *artifact_id, *profile, *isa, *build_id, *model_name;
  uint32_t threads;
  uint64_t plan_bytes; /* the preflight's total for every slot */
  const tl_gen_defaults *gen; /* the artifact's sampling defaults */
  bool embedding;  /* an embedding model (tl_srv_embed; no jobs) */
  uint32_t hidden; /* its vector's full width */
} tl_srv_facts;
void tl_srv_engine_facts(const tl_srv_engine *e, tl_srv_facts *out);

/* ---- text (no slot involved) ---- */

/* A prompt ready to submit: its ids and the bytes the receipt names. */
typedef struct tl_srv_prompt {
  uint32_t *ids; /* malloc */
  size_t n_ids;
  uint8_t *bytes; /* malloc: the rendered conversation or the text */
  size_t len;
  bool messages;      /* rendered from a conversation */
  bool add_generation_prompt;
} tl_srv_prompt;

/* A conversation (tl_srv_request.conversation) through the chat template
 * for a reply, then tokenized; or text tokenized as given. Errors in
 * OpenAI's shape (400 for a conversation the template refuses, naming
 * the message). */
tl_status tl_srv_prompt_chat(tl_srv_engine *e, const char *conversation, size_t len,
                             tl_srv_prompt *out, tl_srv_error *err);
tl_status tl_srv_prompt_text(tl_srv_engine *e, const char *text, size_t len,
                             tl_srv_prompt *out, tl_srv_error *err);
void tl_srv_prompt_free(tl_srv_prompt *p);

/* A token's raw bytes (special tokens as their text); false for an id
 * outside the vocabulary. */
bool tl_srv_token_bytes(const tl_srv_engine *e, uint32_t id, const uint8_t **bytes,
                        size_t *len);
/* ids' bytes (TL_DECODE_RAW or TL_DECODE_VISIBLE) into a malloc'd buffer. */
tl_status tl_srv_decode(const tl_srv_engine *e, const uint32_t *ids, size_t n, uint32_t mode,
                        uint8_t **out, size_t *len);

/* ---- embeddings ---- */

/* The embedding of ids[0..n) (embed.h; an embedding model's engine only):
 * out gets room for facts.hidden floats, its first dims the vector. One
 * input at a time; the same ids give the same bits. 400
 * context_length_exceeded when n + 1 (the appended token) passes the
 * context; 500 if the forward pass fails. Its n + 1 tokens count in the
 * engine's prompt_tokens (tl_srv_engine_stats). */
tl_status tl_srv_embed(tl_srv_engine *e, const uint32_t *ids, size_t n, uint32_t dims,
                       float *out, tl_srv_error *err);

/* ---- jobs ---- */

/* One choice of a generation request. The request's sampling values,
 * stops, bans, logprobs and max_tokens apply; seed is the request's seed
 * plus the choice index (so `tinylm run --seed` reproduces every choice),
 * the request's seed 0 when it gave none. */
typedef struct tl_srv_job_params {
  const tl_srv_request *req;
  const tl_srv_prompt *prompt;
  uint32_t choice;
  tl_srv_grammar *grammar; /* the reply's constraint (the job takes a reference); NULL: none */
  uint32_t partition; /* a prefix cached by a job is reused only by a job of the same
                       * partition (the server's: one per API key) */
} tl_srv_job_params;

/* Queues a job. Refusals (err filled, *out NULL): 400 invalid_value for
 * more choices (req->n) than slots + queue hold, a logit_bias banning
 * every token, or an embedding model (param "model"), 400
 * context_length_exceeded (the prompt, or prompt + max_tokens, past the context: both
 * counts in the message), 503 queue full (err->code "queue_full"; the
 * caller answers Retry-After), 503 while closing. */
tl_status tl_srv_submit(tl_srv_engine *e, const tl_srv_job_params *p, tl_srv_job **out,
                        tl_srv_error *err);

typedef enum tl_srv_state {
  TL_SRV_QUEUED,
  TL_SRV_PREFILL,
  TL_SRV_DECODING,
  TL_SRV_DONE
} tl_srv_state;

/* One generated token with its log-probabilities: the model's
 * distribution before any sampling transform (log-softmax of the raw
 * logits), top the most likely (ties: lower id first). text_end: the
 * visible length of the reply once this token's bytes are in (the
 * token's text is [previous text_end, text_end)). */
typedef struct tl_srv_token {
  uint32_t id;
  float logprob;
  uint32_t n_top;
  uint32_t top_ids[TL_SRV_MAX_TOP_LOGPROBS];
  float top_logprobs[TL_SRV_MAX_TOP_LOGPROBS];
  size_t text_end;
} tl_srv_token;

/* What a finished job tells. finish: "eos", "stop_string", "max_tokens",
 * "context_full", "cancelled" or "error" (then status and error say
 * what). */
typedef struct tl_srv_result {
  const char *finish;
  tl_status status;
  char error[256];
  uint32_t prompt_tokens, cached_tokens, completion_tokens;
  uint64_t seed;
  uint32_t slot;
  double queue_seconds, prefill_seconds, decode_seconds;
  char receipt_id[65]; /* hex; "" if none */
} tl_srv_result;

/* What changed since the caller's offsets: the final visible bytes
 * [text_from, text_len) (never bytes that could still become a stop
 * string; UTF-8 sequences may be split: the caller joins them) and token
 * entries [tokens_from, n_tokens). */
typedef struct tl_srv_update {
  tl_srv_state state;
  size_t prompt_done, prompt_total; /* prefill progress (tokens computed) */
  uint8_t *text;                    /* malloc: text_len - text_from bytes */
  size_t text_from, text_len;
  tl_srv_token *tokens;             /* malloc: n_tokens - tokens_from entries */
  size_t tokens_from, n_tokens;
  tl_srv_result result;             /* state TL_SRV_DONE */
} tl_srv_update;

/* Waits until the job has more than the caller has seen (text past
 * text_from, tokens past tokens_from whose text is in, a state change
 * from *state_seen) or timeout_ms passed, then fills u. Returns TL_OK
 * (also on a timeout with nothing new). */
tl_status tl_srv_job_wait(tl_srv_job *job, int timeout_ms, size_t text_from,
                          size_t tokens_from, tl_srv_state state_seen, tl_srv_update *u);
void tl_srv_update_free(tl_srv_update *u);

/* How many of tokens[0, n) a waiter may take, from at least from: a token
 * is handed out with its text, so one whose text_end is past text_len
 * (its bytes not yet appended, or cut back at a stop string) waits, and
 * so do the ones after it; all n once the job is done. A token that is
 * not ready is no news: tl_srv_job_wait keeps waiting for its text. */
size_t tl_srv_tokens_ready(const tl_srv_token *tokens, size_t n, size_t text_len,
                           size_t from, bool done);

/* Asks the job to stop (a client went away): it stops before its next
 * forward pass (within one decode step or prefill chunk) and frees its
 * slot. Safe at any time. */
void tl_srv_job_cancel(tl_srv_job *job);
/* The caller's reference ends (after cancel or done). */
void tl_srv_job_release(tl_srv_job *job);

/* ---- counters (/metrics) ---- */
typedef struct tl_srv_stats {
  uint64_t prompt_tokens, cached_tokens, generated_tokens;
  double prompt_seconds, decode_seconds;
  uint64_t requests_done, requests_cancelled, requests_failed;
  uint32_t processing, queued, slots_busy;
  uint64_t forward_batches, batched_tokens; /* decode passes and tokens they served */
  /* the wall time of those passes and of the prefill chunks run between
   * them, on the forward thread: what the decode span holds beyond both
   * is the time between passes (sampling, hand-offs, the gather, the HTTP
   * threads on the same CPUs) */
  double decode_step_seconds, prefill_chunk_seconds;
  /* KV cache rows held by the jobs in slots (reused prefix, prompt computed
   * so far, generated tokens fed back) and the rows of every slot */
  uint64_t kv_used, kv_capacity;
} tl_srv_stats;
void tl_srv_engine_stats(tl_srv_engine *e, tl_srv_stats *out);

#endif
