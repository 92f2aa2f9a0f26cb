/* The request bodies of `tinylm serve` (docs/server.md): untrusted JSON
 * bytes in, a validated request (or an OpenAI-shaped error) out. Nothing
 * here touches the model: ids are range-checked against the vocabulary
 * the caller passes, and a chat's messages become the conversation JSON
 * that the chat template renders (tl_native_render, TL_RENDER_FOR_REPLY).
 * Fuzzed by tests/fuzz/fuzz_serve_request.c. */
#ifndef TL_NATIVE_SERVE_REQUEST_H
#define TL_NATIVE_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef enum tl_srv_kind {
  TL_SRV_CHAT,          /* POST /v1/chat/completions */
  TL_SRV_COMPLETION,    /* POST /v1/completions */
  TL_SRV_TOKENIZE,      /* POST /tokenize */
  TL_SRV_DETOKENIZE,    /* POST /detokenize */
  TL_SRV_APPLY_TEMPLATE /* POST /apply-template */
} tl_srv_kind;

#define TL_SRV_MAX_STOPS 8      /* stop strings per request */
#define TL_SRV_MAX_STOP_BYTES 256
#define TL_SRV_MAX_N 16         /* choices per request */
#define TL_SRV_MAX_TOP_LOGPROBS 20
#define TL_SRV_MAX_BANS 1024    /* logit_bias entries */

/* What the reply must keep to (docs/server.md, Structured output), as the
 * request asked; serve_grammar.c compiles it into a grammar. */
typedef enum tl_srv_format {
  TL_SRV_FORMAT_TEXT,        /* free text */
  TL_SRV_FORMAT_JSON_OBJECT, /* any JSON object (response_format json_object) */
  TL_SRV_FORMAT_JSON_SCHEMA, /* a document valid for format_text, a JSON schema */
  TL_SRV_FORMAT_GRAMMAR      /* a sentence of format_text, a GBNF grammar */
} tl_srv_format;

typedef enum tl_srv_tool_choice {
  TL_SRV_TOOLS_AUTO,     /* free; calls are parsed out of the text */
  TL_SRV_TOOLS_NONE,     /* the tools are left out of the template */
  TL_SRV_TOOLS_REQUIRED, /* the reply is tool calls, of any tool */
  TL_SRV_TOOLS_NAMED     /* the reply is calls of tools[forced_tool] */
} tl_srv_tool_choice;

/* An error as OpenAI's {"error": {"message", "type", "param", "code"}}
 * with its HTTP status. type: "invalid_request_error" (400, 413, 404,
 * 405), "authentication_error" (401), "server_error" (500, 503). param
 * the offending field's path ("messages[2].role", "temperature"), ""
 * when none; code a short machine word ("invalid_json",
 * "invalid_value", "unsupported_value", "context_length_exceeded", ...)
 * or "" (JSON null). */
typedef struct tl_srv_error {
  int status;
  const char *type;
  char param[96];
  char code[48];
  char message[512];
} tl_srv_error;

/* A validated request. Strings are UTF-8 (checked), malloc'd and
 * NUL-terminated (their length is given too, they may hold NUL). */
typedef struct tl_srv_request {
  tl_srv_kind kind;
  char model[128]; /* echoed in responses; "" when not given */

  /* chat, apply-template: the conversation as the template reads it:
   * {"messages": [...], "tools": [...] (when given and tool_choice is not
   * "none"), "enable_thinking": B (chat_template_kwargs.enable_thinking,
   * or reasoning_effort's, when given)}. Messages keep role (developer becomes system), content
   * (a string; an array of text parts joined), name, tool_calls and
   * tool_call_id as given. */
  char *conversation;
  size_t conversation_len;
  /* completion: the prompt; tokenize: the content */
  char *prompt;
  size_t prompt_len;
  /* detokenize: the tokens (each < vocab) */
  uint32_t *ids;
  size_t n_ids;
  /* tokenize: also each token's piece ("with_pieces") */
  bool with_pieces;

  /* generation (chat, completion) */
  uint32_t max_tokens;     /* 0: until EOS or the context is full */
  uint32_t given;          /* TL_GIVEN_* for the values below */
  double temperature;      /* [0, 2] (OpenAI's range) */
  double top_p, min_p;     /* [0, 1] */
  uint32_t top_k;          /* [0, vocab] */
  double repeat_penalty;   /* tinylm extension: (0, 2^64] */
  /* repeat_last_n (llama-server's): the penalty's window over the prompt
   * and reply ids; -1 (the context) is UINT32_MAX; absent: 64 with a
   * repeat_penalty given, else 0 */
  uint32_t repeat_window;
  double frequency_penalty, presence_penalty; /* OpenAI's, [-2, 2] */
  bool has_seed;
  uint64_t seed;
  char *stops[TL_SRV_MAX_STOPS]; /* non-empty, at most TL_SRV_MAX_STOP_BYTES */
  size_t stop_lens[TL_SRV_MAX_STOPS];
  size_t n_stops;
  uint32_t n;              /* choices, 1..TL_SRV_MAX_N */
  uint32_t *ban;           /* logit_bias ids set to -100, ascending, unique */
  size_t n_ban;
  uint32_t *bias_ids;      /* the other non-zero logit_bias entries, ids ascending */
  double *bias;
  size_t n_bias;
  bool logprobs;           /* chat: logprobs true; completion: logprobs >= 0 given */
  uint32_t top_logprobs;   /* 0..TL_SRV_MAX_TOP_LOGPROBS (completion: 0..5) */
  bool stream, include_usage;
  bool has_tools;          /* tools were passed to the template */
  bool no_prompt_cache;    /* cache_prompt false: compute the whole prompt, reuse no slot's cache */
  bool raw_reasoning;      /* chat: reasoning_format "none": the think block stays in content */

  /* structured output (chat: response_format, tools, tool_choice,
   * parallel_tool_calls, grammar; completion: grammar, json_schema) */
  tl_srv_format format;
  char *format_text;       /* JSON_SCHEMA: the schema as compact JSON; GRAMMAR: the text */
  size_t format_len;
  char format_param[48];   /* the field format_text came from, for errors */
  tl_srv_tool_choice tool_choice;
  char *tools;             /* has_tools: the tools array as compact JSON */
  size_t tools_len;
  uint32_t forced_tool;    /* TL_SRV_TOOLS_NAMED: its index in tools */
  bool parallel_tool_calls; /* several calls may follow each other (default true) */
} tl_srv_request;

/* Whether a grammar constrains the reply: a format other than text, or
 * tool calls required. */
bool tl_srv_request_constrained(const tl_srv_request *r);

/* Parses and validates body (len bytes) as kind's request. vocab bounds
 * token ids (detokenize, logit_bias keys) and top_k. TL_OK with *out
 * filled (free it with tl_srv_request_free), or TL_ERR_INVALID_ARGUMENT
 * with *err filled (status 400: not UTF-8, not JSON, not an object, an
 * unknown or mistyped field, a value out of range, an unsupported value
 * such as a tool_choice naming no tool,
 * each naming its param; a missing required field is code
 * missing_required_parameter) and *out holding nothing; a body of more
 * than 2^18 JSON values is refused with status 413 before jansson
 * allocates. Never more than O(len) memory and time; nesting deeper than
 * 64 is refused. */
tl_status tl_srv_request_parse(tl_srv_kind kind, const uint8_t *body, size_t len,
                               uint32_t vocab, tl_srv_request *out, tl_srv_error *err);
void tl_srv_request_free(tl_srv_request *r);

/* The first checks of tl_srv_request_parse alone (UTF-8, the 2^18 value
 * cap, JSON without duplicate keys, an object), for the endpoints with
 * their own fields (serve_embed.h): *root (the caller's reference) or
 * *err (400, 413) and NULL. */
struct json_t;
tl_status tl_srv_json_object(const uint8_t *body, size_t len, struct json_t **root,
                             tl_srv_error *err);

/* Fills e (printf-style message). */
void tl_srv_error_set(tl_srv_error *e, int status, const char *type, const char *param,
                      const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

#endif
