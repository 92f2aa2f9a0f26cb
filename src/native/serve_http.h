/* The response side of `tinylm serve` (docs/server.md): a generation's
 * choices as they arrive from the engine, turned into OpenAI's JSON bodies
 * and server-sent events, plus the error, usage and metrics texts. No
 * socket here: cmd_serve.c owns the HTTP daemon and the waiting.
 *
 * Every string handed to JSON is valid UTF-8: a choice's text is sent only
 * up to a complete UTF-8 sequence while more may come, and ill-formed
 * bytes left at the end become U+FFFD (the maximal-subpart rule of
 * src/core/utf8.h). */
#ifndef TL_NATIVE_SERVE_HTTP_H
#define TL_NATIVE_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve_engine.h"
#include "serve_request.h"

struct json_t;

/* A growing byte buffer; failed once an allocation failed (then it
 * holds what it had). */
typedef struct tl_srv_buf {
  char *p;
  size_t len, cap;
  bool failed;
} tl_srv_buf;
bool tl_srv_buf_add(tl_srv_buf *b, const void *s, size_t n);
void tl_srv_buf_free(tl_srv_buf *b);

/* ---- text ---- */

/* The length of s[0, len) without a trailing start of a UTF-8 sequence
 * that more bytes could still complete (at most 3 bytes left out). */
size_t tl_srv_utf8_complete(const uint8_t *s, size_t len);
/* s[0, len) as a malloc'd NUL-terminated UTF-8 string with each maximal
 * ill-formed subpart replaced by U+FFFD; *out_len its length. NULL when
 * out of memory. */
char *tl_srv_utf8_clean(const uint8_t *s, size_t len, size_t *out_len);

/* The Qwen3 tool calls in a reply: <tool_call>{"name": N, "arguments":
 * A}</tool_call> blocks. Returns OpenAI's tool_calls array ([{id:
 * "call_<hex>", type: "function", function: {name, arguments: A as
 * compact JSON text (a string A as given)}}]) and *content_len = the bytes
 * before the first block, or NULL when the text holds no block or a block
 * that is not such an object (then the whole text is content). */
struct json_t *tl_srv_tool_calls(const char *text, size_t len, size_t *content_len);
/* Where text[0, len) may start "<tool_call>": the offset of the marker,
 * or of a trailing proper prefix of it, else len. Streaming holds the text
 * from there on. */
size_t tl_srv_tool_hold(const uint8_t *text, size_t len);

/* n random bytes as 2n lower-case hex digits into out (2n + 1 bytes). */
void tl_srv_random_hex(char *out, size_t n);

/* {"error": {"message", "type", "param", "code"}} ("" param or code:
 * null), compact, malloc'd. */
char *tl_srv_error_body(const tl_srv_error *e);

/* ---- a generation ---- */

/* One choice: the engine's job and what it has reported so far. */
typedef struct tl_srv_choice {
  tl_srv_job *job; /* NULL once released */
  uint8_t *raw;    /* the visible text so far (raw bytes) */
  size_t raw_len, raw_cap;
  tl_srv_token *tokens;
  size_t n_tokens, tokens_cap;
  tl_srv_state state;
  bool done;
  tl_srv_result result;
  /* streaming: the raw bytes already sent as content, the token entries
   * already sent as logprobs, whether the choice's final chunk went */
  size_t raw_sent, tokens_sent;
  size_t reasoning_sent; /* chat: the raw bytes sent as reasoning_content */
  bool finished;
} tl_srv_choice;

/* A generation request: its request, prompt and choices. */
typedef struct tl_srv_gen {
  tl_srv_engine *engine;
  tl_srv_facts facts;
  tl_srv_request req;
  tl_srv_prompt prompt;
  tl_srv_grammar *grammar; /* the request's constraint (a reference); NULL: none */
  bool chat;
  char id[48];
  int64_t created;
  uint32_t n; /* choices submitted */
  tl_srv_choice choices[TL_SRV_MAX_N];
} tl_srv_gen;

/* Takes an update (from tl_srv_job_wait with c's offsets) into c. */
tl_status tl_srv_choice_take(tl_srv_choice *c, const tl_srv_update *u);
/* Cancels (when not done) and releases every job; frees the choices'
 * buffers, the prompt, the grammar reference and the request. */
void tl_srv_gen_free(tl_srv_gen *g);

/* The non-streaming response of a finished generation (every choice
 * done), compact, malloc'd; NULL when out of memory. */
char *tl_srv_response_body(const tl_srv_gen *g);

/* Streaming: the first events of every choice (chat: the role). */
bool tl_srv_stream_begin(const tl_srv_gen *g, tl_srv_buf *out);
/* Appends the events of what choice i has that was not sent yet (its
 * final chunk once it is done). */
bool tl_srv_stream_choice(tl_srv_gen *g, uint32_t i, tl_srv_buf *out);
/* The end: the usage chunk (include_usage) and data: [DONE]. */
bool tl_srv_stream_end(const tl_srv_gen *g, tl_srv_buf *out);
/* An error event (a generation that failed after the stream began). */
bool tl_srv_stream_error(const tl_srv_error *e, tl_srv_buf *out);

/* The Prometheus text of /metrics. */
typedef struct tl_srv_http_counts {
  uint64_t requests, rejected;
} tl_srv_http_counts;
char *tl_srv_metrics_text(const tl_srv_stats *s, const tl_srv_http_counts *c);
/* Each model's lines of /metrics (label model="NAME"): whether it is
 * loaded, its loads and unloads, its jobs and tokens. */
typedef struct tl_srv_model_sample {
  const char *name;
  bool loaded;
  uint64_t loads, unloads;
  tl_srv_stats stats; /* of every engine it had */
} tl_srv_model_sample;
char *tl_srv_model_metrics_text(const tl_srv_model_sample *m, size_t n);

#endif
