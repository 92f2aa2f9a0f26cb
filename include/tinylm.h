/* tinylm — the one public header.
 *
 * Freestanding: it includes only <stddef.h> and <stdint.h>, so the same
 * header serves the native host, the wasm32 build and every tool. */
#ifndef TINYLM_H
#define TINYLM_H

#include <stddef.h>
#include <stdint.h>

#define TL_VERSION_MAJOR 0
#define TL_VERSION_MINOR 1
#define TL_VERSION_PATCH 0
#define TL_VERSION_STRING "0.1.0"
/* One integer that orders releases: 0x00MMmmpp. */
#define TL_VERSION_NUMBER \
  ((TL_VERSION_MAJOR << 16) | (TL_VERSION_MINOR << 8) | TL_VERSION_PATCH)

/* Every expected failure is one of these (docs/architecture.md §3). The list is the
 * single source for the enum and for tl_status_name(); the numeric values
 * are part of the ABI (the wasm host sees them) and never change meaning.
 * The short name is the machine-readable error code the CLI prints
 * (`error: invalid_utf8: ...`, {"error": "invalid_utf8"}). */
#define TL_STATUS_LIST(X)                                                     \
  X(TL_OK, 0, "ok")                                                                 \
  X(TL_ERR_INVALID_ARGUMENT, 1, "invalid_argument")                                               \
  X(TL_ERR_UNSUPPORTED_ABI, 2, "unsupported_abi")                                                \
  X(TL_ERR_UNSUPPORTED_FEATURE, 3, "unsupported_feature")                                            \
  X(TL_ERR_INVALID_HANDLE, 4, "invalid_handle")                                                 \
  X(TL_ERR_STALE_HANDLE, 5, "stale_handle")                                                   \
  X(TL_ERR_BOUNDS, 6, "bounds")                                                         \
  X(TL_ERR_ALIGNMENT, 7, "alignment")                                                      \
  X(TL_ERR_INTEGER_OVERFLOW, 8, "integer_overflow")                                               \
  X(TL_ERR_OUT_OF_MEMORY, 9, "out_of_memory")                                                  \
  X(TL_ERR_INVALID_MODEL, 10, "invalid_model")                                                 \
  X(TL_ERR_HASH_MISMATCH, 11, "hash_mismatch")                                                 \
  X(TL_ERR_UNSUPPORTED_QUANTIZATION, 12, "unsupported_quantization")                                      \
  X(TL_ERR_UNSUPPORTED_SHAPE, 13, "unsupported_shape")                                             \
  X(TL_ERR_CONTEXT_EXCEEDED, 14, "context_exceeded")                                              \
  X(TL_ERR_CANCELLED, 15, "cancelled")                                                     \
  X(TL_ERR_WORKER_FAILURE, 16, "worker_failure")                                                \
  X(TL_ERR_SELF_TEST_FAILED, 17, "self_test_failed")                                              \
  X(TL_ERR_NUMERICAL_FAILURE, 18, "numerical_failure")                                             \
  X(TL_ERR_INTERNAL_INVARIANT, 19, "internal_invariant")                                            \
  /* domain statuses */                                                       \
  X(TL_ERR_INVALID_UTF8, 32, "invalid_utf8")                                                  \
  X(TL_ERR_INVALID_CBOR, 33, "invalid_cbor")                                                  \
  X(TL_ERR_CONFLICT, 34, "conflict")                                                      \
  X(TL_ERR_IO, 35, "io")                                                  \
  X(TL_ERR_TEMPLATE_RAISED, 36, "template_raised")                                                  \
  X(TL_ERR_NOT_FOUND, 37, "not_found")

typedef enum tl_status {
#define TL_STATUS_ENUM_(name, value, code) name = value,
  TL_STATUS_LIST(TL_STATUS_ENUM_)
#undef TL_STATUS_ENUM_
} tl_status;

#ifdef __cplusplus
extern "C" {
#endif

/* libtinylm.so exports what this header declares and nothing else: the
 * library is compiled with hidden visibility (docs/api.md, "Installing and
 * linking"), and these declarations are the exceptions. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The status's error code: "ok", "bounds", "invalid_utf8", ... (the
 * identifier without TL_ERR_, lower case); "unknown" for a value that is
 * not in the list. Never NULL. */
const char *tl_status_name(tl_status status);

/* The library's version string, for checking header against library. */
const char *tl_version(void);

/* ==== The public API (docs/api.md) ========================================
 * The one entry point for embedders: models, sessions and generations
 * behind generational handles. Every function returns a tl_status; the
 * details of a failure (a message, and where a numerical failure happened)
 * are kept per handle (tl_error_detail). */

/* The ABI this header describes. tl_api_init(TL_ABI_VERSION) must succeed
 * before any other call below (except tl_abi_version and
 * tl_error_detail); a library built for another ABI refuses it with
 * TL_ERR_UNSUPPORTED_ABI, and so does every call before it. */
#define TL_ABI_VERSION 1u
uint32_t tl_abi_version(void);
tl_status tl_api_init(uint32_t abi);

/* Handles: index + generation counter + kind tag in 32 bits. 0 is never a
 * handle. A handle after its close/free (or after its slot was reused) is
 * TL_ERR_STALE_HANDLE; one never issued, of another kind, or out of range
 * is TL_ERR_INVALID_HANDLE. */
typedef uint32_t tl_model_handle;
typedef uint32_t tl_session_handle;
typedef uint32_t tl_generation_handle;
typedef uint32_t tl_grammar_handle;
#define TL_NO_HANDLE 0u

/* What went wrong in the last failed call on a handle (or, for handle
 * TL_NO_HANDLE, the last failed call of this thread, also the ones that
 * produced no handle or were given a bad one). */
typedef struct tl_error {
  tl_status status; /* TL_OK: nothing failed yet */
  /* TL_ERR_NUMERICAL_FAILURE: the first non-finite value (stage is a
   * forward-pass stage name, "" otherwise; layer -1 outside the layers).
   * TL_ERR_INVALID_UTF8: index is the first invalid byte's offset. */
  char stage[24];
  int32_t layer;
  uint32_t position;
  uint64_t index;
  /* A conversation refused by tl_model_render or a generation: kind
   * "json" (line and column of the syntax error), "input" (index: the bad
   * message, UINT64_MAX when none) or the template's error kind. A
   * sampling value out of range: kind names the field ("temperature",
   * "top_k", "top_p", "min_p", "repeat_penalty", "repeat_window",
   * "frequency_penalty", "presence_penalty", "logit_bias"; "eos",
   * "vocabulary" for the artifact's). A grammar refused by
   * tl_grammar_compile: kind "json_schema", "gbnf", "regex" or
   * "json_object", index the byte offset in its text where known. ""
   * otherwise. */
  char kind[24];
  uint32_t line, column;
  char message[512]; /* NUL-terminated, UTF-8 */
} tl_error;

/* TL_ERR_INVALID_HANDLE / TL_ERR_STALE_HANDLE for a handle that does not
 * name a live object (out then describes that); TL_ERR_INVALID_ARGUMENT
 * when out is NULL. */
tl_status tl_error_detail(uint32_t handle, tl_error *out);

/* ---- models ---- */

/* Opens a .slm artifact from caller-provided bytes, verified as `tinylm`
 * verifies a file (container, every section and tensor digest:
 * TL_ERR_HASH_MISMATCH for a changed byte, TL_ERR_INVALID_MODEL, ...).
 * The bytes are copied unless flags has TL_OPEN_BORROW: then the caller
 * keeps them alive and unchanged until the model and every session on it
 * are closed. */
#define TL_OPEN_BORROW 1u
tl_status tl_model_open_bytes(const void *data, size_t len, uint32_t flags,
                              tl_model_handle *out);

/* The same from a reader: read(ctx, offset, buf, len) fills buf with the
 * bytes at offset and returns how many it wrote (fewer than len only at
 * the end of the data), or a negative number on failure (TL_ERR_IO). The
 * length comes from the artifact's header; the bytes are read once, in
 * order, into memory the model owns. */
typedef int64_t (*tl_read_fn)(void *ctx, uint64_t offset, void *buf, size_t len);
tl_status tl_model_open_reader(tl_read_fn read, void *ctx, tl_model_handle *out);

/* Native hosts only (not exported by the wasm32 modules): the file at
 * path, memory-mapped (not copied), verified the same way; errors name
 * the path (TL_ERR_IO when it cannot be opened). */
tl_status tl_model_open_file(const char *path, tl_model_handle *out);

/* Ends the handle. Sessions opened on the model keep it alive until
 * they are freed. */
tl_status tl_model_close(tl_model_handle model);

/* SHA-256 of the artifact's bytes (the artifact id receipts name). */
tl_status tl_model_artifact_id(tl_model_handle model, uint8_t id[32]);

/* ---- sessions ---- */

enum { TL_LANE_DEFAULT = 0, TL_LANE_SCALAR = 1, TL_LANE_FAST = 2 };
/* Compute on the model's bytes instead of a copy of the weights (the
 * fast lane copies them into aligned memory by default). */
#define TL_SESSION_NO_COPY 1u

/* All zero is the default: fast lane, threads = CPUs online, the model's
 * context capped at 4096, no memory budget. */
typedef struct tl_session_options {
  uint32_t lane;       /* TL_LANE_*: default fast; scalar is the strict lane */
  uint32_t threads;    /* fast lane threads, 1..256; 0: the CPUs online */
  uint32_t context;    /* KV cache tokens; 0: max_position_embeddings, at most 4096 */
  uint32_t flags;      /* TL_SESSION_* */
  uint64_t mem_budget; /* bytes; 0: none */
} tl_session_options;

/* The memory a session would take (bytes), without taking it. */
typedef struct tl_preflight_plan {
  uint32_t context;
  uint64_t weights, tokenizer, kv_cache, scratch, logits, sampler, total;
} tl_preflight_plan;

/* The plan tl_session_new would allocate for these options (what
 * `tinylm run --preflight` prints); nothing large is allocated.
 * TL_ERR_CONTEXT_EXCEEDED past the model's max_position_embeddings. */
tl_status tl_model_preflight(tl_model_handle model, const tl_session_options *opts,
                             tl_preflight_plan *out);

/* A session: the model on a lane with its KV cache. opts NULL: defaults.
 * TL_ERR_OUT_OF_MEMORY before allocating when the plan exceeds
 * mem_budget (the message gives every figure). */
tl_status tl_session_new(tl_model_handle model, const tl_session_options *opts,
                         tl_session_handle *out);
/* Ends the handle; a generation still holding the session keeps it alive
 * until that generation is freed. */
tl_status tl_session_free(tl_session_handle session);
/* Empties the KV cache (the next generation starts at position 0). */
tl_status tl_session_reset(tl_session_handle session);
/* Tokens in the KV cache. */
tl_status tl_session_position(tl_session_handle session, uint32_t *position);
/* How many leading tokens of ids[0..n) a generation with
 * TL_GENERATE_REUSE_PREFIX would take from the session's cache instead of
 * computing them: the longest prefix the cache holds, at most n - 1. */
tl_status tl_session_reuse(tl_session_handle session, const uint32_t *ids, size_t n,
                           uint32_t *reused);

/* ---- text ---- */

/* A conversation as JSON ({"messages": [{"role", "content"}, ...], ...},
 * as `tinylm render --messages` reads it) rendered through the model's
 * chat template for a reply (add_generation_prompt defaults to true).
 * Writes up to cap bytes to out and the full length to *len:
 * TL_ERR_BOUNDS when cap is too small (call again with *len). *add_gen
 * (may be NULL) gets whether the generation prompt was added. */
tl_status tl_model_render(tl_model_handle model, const void *json, size_t json_len,
                          void *out, size_t cap, size_t *len, int *add_gen);

/* The same from role/content arrays (UTF-8, n messages). */
typedef struct tl_message {
  const char *role;
  const char *content;
  size_t content_len;
} tl_message;
tl_status tl_model_render_messages(tl_model_handle model, const tl_message *messages,
                                   size_t n, void *out, size_t cap, size_t *len,
                                   int *add_gen);

/* Token ids of text (validated UTF-8: TL_ERR_INVALID_UTF8, the offset in
 * the error's index). Writes up to cap ids and the count to *n:
 * TL_ERR_BOUNDS when cap is too small. */
tl_status tl_model_encode(tl_model_handle model, const void *text, size_t len,
                          uint32_t *ids, size_t cap, size_t *n);

/* The bytes of ids: every token's (TL_DECODE_RAW), special tokens
 * skipped (TL_DECODE_VISIBLE), or raw with non-printable bytes escaped
 * (TL_DECODE_DIAGNOSTIC). An id outside the vocabulary:
 * TL_ERR_INVALID_ARGUMENT (its position in the error's index). *len as
 * for tl_model_render. */
enum { TL_DECODE_RAW = 0, TL_DECODE_VISIBLE = 1, TL_DECODE_DIAGNOSTIC = 2 };
tl_status tl_model_decode(tl_model_handle model, const uint32_t *ids, size_t n, uint32_t mode,
                          void *out, size_t cap, size_t *len);

/* ---- grammars (docs/structured.md) ---- */

/* What a grammar's text is: any JSON object (no text: OpenAI's
 * response_format json_object), a JSON Schema (draft 2020-12, the
 * keywords docs/structured.md lists), llama.cpp's GBNF (start rule
 * "root"), or a regular expression the whole reply matches. */
enum {
  TL_GRAMMAR_JSON_OBJECT = 1,
  TL_GRAMMAR_JSON_SCHEMA = 2,
  TL_GRAMMAR_GBNF = 3,
  TL_GRAMMAR_REGEX = 4
};

/* Compiles a grammar once, for any number of generations on any session
 * (a generation holds it while it runs). text[0..len) is the schema, GBNF
 * or regex (UTF-8; ignored for TL_GRAMMAR_JSON_OBJECT). Refusals, with
 * the message naming what and where (tl_error_detail(TL_NO_HANDLE);
 * kind names the reader, index the byte offset):
 * TL_ERR_INVALID_ARGUMENT (malformed text, an unknown kind),
 * TL_ERR_UNSUPPORTED_FEATURE (valid, but a keyword or construct the engine
 * does not enforce: never silently ignored), TL_ERR_BOUNDS (a limit),
 * TL_ERR_OUT_OF_MEMORY. */
tl_status tl_grammar_compile(uint32_t kind, const void *text, size_t len,
                             tl_grammar_handle *out);
/* Ends the handle (a generation running with it keeps it until done). */
tl_status tl_grammar_free(tl_grammar_handle grammar);
/* The grammar's digest, the id receipts name it by: SHA-256 of its
 * lowered canonical form, equal for texts that lower to the same rules. */
tl_status tl_grammar_get_digest(tl_grammar_handle grammar, uint8_t digest[32]);

/* ---- generations ---- */

/* Streaming callbacks, on the thread that runs the generation; a nonzero
 * return cancels (TL_ERR_CANCELLED, before the next forward call). */
typedef int (*tl_token_fn)(void *ctx, uint32_t id);
typedef int (*tl_text_fn)(void *ctx, const uint8_t *bytes, size_t len);

/* Sampling values not marked in `given` come from the artifact's
 * generation defaults, else greedy (as `tinylm run` does). */
enum {
  TL_GIVEN_TEMPERATURE = 1u << 0,
  TL_GIVEN_TOP_K = 1u << 1,
  TL_GIVEN_TOP_P = 1u << 2,
  TL_GIVEN_MIN_P = 1u << 3,
  TL_GIVEN_REPEAT_PENALTY = 1u << 4
};
/* The prompt follows what the session's cache holds (a conversation's
 * next turn); without it the cache is emptied first. */
#define TL_GENERATE_CONTINUE 1u
/* The prompt is the whole sequence again (a conversation rendered anew
 * each turn): the cache keeps the longest prefix of it that it holds
 * (tl_session_reuse) and the rest is computed; the receipt names the
 * computed part at its position. A cancelled generation then keeps what
 * it computed, for the next prompt to reuse as far as it matches. Not
 * with TL_GENERATE_CONTINUE. */
#define TL_GENERATE_REUSE_PREFIX 2u
/* The params carry the structured-output fields (grammar, think_budget:
 * the last ones, added after the first release): set it to use them. A
 * program built before them never sets it, so the library never reads
 * past the struct it was given. */
#define TL_GENERATE_GRAMMAR 4u
/* The params carry the penalty and bias fields (frequency_penalty ..
 * n_bias, after the grammar's); set it to use them. */
#define TL_GENERATE_PENALTIES 8u

typedef struct tl_generation_params {
  /* The prompt: exactly one of text (tokenized as given), messages_json
   * (rendered as tl_model_render does) or ids (which must be the
   * tokenizer's encoding of their own bytes, so the receipt can name
   * them). */
  const void *text;
  size_t text_len;
  const void *messages_json;
  size_t messages_len;
  const uint32_t *ids;
  size_t n_ids;
  /* Sampling (docs/architecture.md §7). */
  uint32_t given; /* TL_GIVEN_* */
  double temperature, top_p, min_p, repeat_penalty;
  uint32_t top_k, repeat_window;
  uint64_t seed;
  uint32_t turn; /* numbers the draws: a conversation's turn index */
  /* Stop rules (EOS always). max_tokens 0: until the context is full. */
  uint32_t max_tokens;
  const char *const *stop_strings; /* n_stops strings, each stop_lens[i] bytes */
  const size_t *stop_lens;         /* NULL: each string is NUL-terminated */
  size_t n_stops;
  uint32_t flags; /* TL_GENERATE_* */
  tl_token_fn on_token;
  tl_text_fn on_text; /* visible bytes, once they cannot start a stop string */
  /* After each prefill chunk: done of total prompt tokens; nonzero cancels. */
  int (*on_prefill)(void *ctx, size_t done, size_t total);
  /* Each sampled id with the logits (vocab floats, valid during the call)
   * it was drawn from, before on_token. */
  void (*on_choice)(void *ctx, const float *logits, size_t vocab, uint32_t id);
  void *ctx;
  /* Read only with TL_GENERATE_GRAMMAR in flags. Structured output
   * (docs/structured.md): the reply keeps to grammar (a compiled handle;
   * TL_NO_HANDLE: free text), its token mask applied before every draw,
   * EOS only where it accepts; the receipt names its digest. When the
   * prompt leaves the reply open for a thought (a chat-template prompt
   * that does not end with Qwen3's empty <think> block), the first token
   * may be <think>, and the thought is free for think_budget tokens (0:
   * 1024) before </think> is forced; the grammar applies after it. A
   * think_budget without a grammar: TL_ERR_INVALID_ARGUMENT. With a
   * grammar, stop "eos" means the reply is a complete sentence of it;
   * any other stop may leave a prefix. */
  tl_grammar_handle grammar;
  uint32_t think_budget;
  /* Read only with TL_GENERATE_PENALTIES in flags (docs/sampler.md S-4a,
   * S-4b): OpenAI's frequency and presence penalties ([-2, 2], 0: off),
   * counted over this generation's own tokens; logit biases bias[i] on id
   * bias_ids[i] (ids strictly ascending, values in [-100, 100]; exactly
   * -100 bans the id). All in the receipt's sampler profile. */
  double frequency_penalty, presence_penalty;
  const uint32_t *bias_ids;
  const double *bias;
  size_t n_bias;
} tl_generation_params;

/* A generation on a session (one at a time per session). */
tl_status tl_generation_new(tl_session_handle session, tl_generation_handle *out);

/* Runs it, once, on the calling thread; returns when a stop rule fired
 * (TL_OK), or with the failure: TL_ERR_CANCELLED, TL_ERR_NUMERICAL_FAILURE
 * (where: tl_error_detail), TL_ERR_INVALID_ARGUMENT (params, or the
 * session busy with another generation), TL_ERR_INVALID_UTF8, ...
 * A refused generation leaves the session's cache as it was; one that
 * failed while computing (cancelled included), as it was when the turn
 * started (the previous contents with TL_GENERATE_CONTINUE, the reused
 * prefix with TL_GENERATE_REUSE_PREFIX, else empty), except that a
 * cancelled TL_GENERATE_REUSE_PREFIX generation keeps what it computed.
 * The receipt of a generation that ran (also a cancelled one) is
 * available. */
tl_status tl_generation_run(tl_generation_handle gen, const tl_generation_params *params);

/* Asks a running (or not yet started) generation to stop: safe from any
 * thread; the generation polls it before every forward call (every token,
 * every prefill chunk). */
tl_status tl_generation_cancel(tl_generation_handle gen);

/* What a generation produced; the pointers stay valid until
 * tl_generation_free. TL_ERR_INVALID_ARGUMENT before it ran. */
typedef struct tl_generation_result {
  const uint32_t *ids;
  size_t n_ids;
  const uint8_t *text; /* visible bytes */
  size_t text_len;
  const uint8_t *raw; /* raw bytes of every generated token */
  size_t raw_len;
  const char *stop; /* "eos", "stop_string", "max_tokens", "context_full", "cancelled" */
  /* The prompt tokens computed (with TL_GENERATE_REUSE_PREFIX, those after
   * the reused prefix) and where in the cache they start. */
  uint32_t prompt_tokens, position;
  uint64_t prefill_us, decode_us;
  const uint8_t *receipt; /* the receipt file (tinylm.receipt/1 CBOR); NULL if none */
  size_t receipt_len;
  char receipt_id[65]; /* hex; "" if none */
} tl_generation_result;
tl_status tl_generation_result_get(tl_generation_handle gen, tl_generation_result *out);

/* A chat reply's parts (docs/api.md, Reasoning): Qwen3's think block, when
 * the text opens with "<think>", and the answer after it. reasoning: the
 * block's text without the tags and the newlines around them (NULL when
 * the text has no block; a block never closed, the reply cut short while
 * thinking, is all reasoning and the answer is empty); answer: the text
 * after "</think>" and its newlines (the whole text without a block).
 * Both point into text (a tl_generation_result's text, typically); the
 * result's text, raw bytes, ids and receipt are unchanged. A plain
 * completion's text is not a chat reply: its "<think>" means nothing.
 * TL_ERR_INVALID_ARGUMENT: out NULL, or text NULL with len > 0
 * (TL_ERR_UNSUPPORTED_ABI before tl_api_init, as every call). */
typedef struct tl_reply_parts {
  const uint8_t *reasoning;
  size_t reasoning_len;
  const uint8_t *answer;
  size_t answer_len;
} tl_reply_parts;
tl_status tl_reply_split(const void *text, size_t len, tl_reply_parts *out);

tl_status tl_generation_free(tl_generation_handle gen);

/* ---- observation (docs/observe.md) ---- */

/* Runs a prompt's forward pass on the session (from position 0, in one
 * call) and describes every capture point (stage, layer, position) by an
 * observation record: the BLAKE3 of the row and its min, max, L2, mean
 * and variance, not the row itself. Writes the tinylm.observe/1 document
 * (deterministic CBOR: producer lane and profile, the execution's isa and
 * threads, the artifact id, the prompt ids, the records in computation
 * order): up to cap bytes to out and its length to *len; TL_ERR_BOUNDS
 * when cap is too small (call again with *len: the session keeps the
 * document until its next observe call, and a call with the same prompt
 * gets it without running the pass again). The
 * prompt: exactly one of text (tokenized as given) and ids. The session's
 * cache is empty afterwards. TL_ERR_INVALID_ARGUMENT (a generation running
 * on the session, no prompt or two, an empty one, an id outside the
 * vocabulary), TL_ERR_INVALID_UTF8 (the offset in the error's index),
 * TL_ERR_CONTEXT_EXCEEDED, TL_ERR_NUMERICAL_FAILURE (where:
 * tl_error_detail), TL_ERR_OUT_OF_MEMORY. */
tl_status tl_session_observe(tl_session_handle session, const void *text, size_t text_len,
                             const uint32_t *ids, size_t n_ids, void *out, size_t cap,
                             size_t *len);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* TINYLM_H */
