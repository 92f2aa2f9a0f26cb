/* libFuzzer target for the request bodies of `tinylm serve`
 * (src/native/serve_request.c): whatever a client sends, the reader
 * answers with a validated request or a 400, never a crash, a leak or
 * memory out of proportion (tests/fuzz/run.sh caps RSS). The first byte
 * picks the endpoint (byte % 5: chat, completion, tokenize, detokenize,
 * apply-template) and the vocabulary size (1 + byte / 5 * 3000, up to
 * Qwen3's); the rest is the body. Per input:
 *
 * 1. Accepted: every string is NUL-terminated UTF-8 of its stated length;
 *    each value lies in its documented range (n 1..16, stops 1..8 of
 *    1..256 bytes, the ban list and the biases' ids strictly ascending
    below the vocabulary, biases in [-100, 100], penalties in [-2, 2],
 *    ids below it, top_k at most it, ...); a chat's conversation is JSON
 *    jansson reads back and the renderer's own check
 *    (tl_conversation_check) accepts, with tools exactly when has_tools;
 *    the structured output is consistent: a schema is JSON text of an
 *    object or a boolean, a grammar non-empty text, no format text for
 *    json_object or text, calls required only of tools that are there
 *    (the named one among them), never beside a grammar.
 * 2. Refused: status 400 (413 request_too_large past 2^18 values), type
 *    invalid_request_error, a code the wire contract names, a non-empty
 *    message; param, code and message
 *    NUL-terminated UTF-8 (they go out as JSON); the request all zero. */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/lib/chat_render.c"
#include "../../src/native/serve_compat.c"
#include "../../src/native/serve_request.c"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static bool is_text(const char *s, size_t len) {
  return s != NULL && s[len] == '\0' && tl_utf8_validate((const uint8_t *)s, len, NULL) == TL_OK;
}

static bool all_zero(const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != 0) return false;
  return true;
}

/* The conversation as the renderer reads it (its JSON reader, its check). */
static void check_conversation(const tl_srv_request *r) {
  size_t cap = r->conversation_len * RENDER_ARENA_FACTOR + (1u << 20);
  void *mem = malloc(cap);
  tl_arena a;
  tl_json_value *v;
  tl_json_error je;
  tl_render_error re;
  json_error_t jerr;
  json_t *doc, *msgs;
  CHECK(is_text(r->conversation, r->conversation_len));
  CHECK(strlen(r->conversation) == r->conversation_len);
  doc = json_loadb(r->conversation, r->conversation_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                   &jerr);
  CHECK(json_is_object(doc));
  msgs = json_object_get(doc, "messages");
  CHECK(json_is_array(msgs) && json_array_size(msgs) >= 1);
  CHECK((json_object_get(doc, "tools") != NULL) == r->has_tools);
  json_decref(doc);
  CHECK(mem != NULL);
  tl_arena_init(&a, mem, cap);
  CHECK(tl_json_parse((const uint8_t *)r->conversation, r->conversation_len, NULL, &a, &v, &je) ==
        TL_OK);
  CHECK(tl_conversation_check(v, &re) == TL_OK);
  free(mem);
}

static void check_structured(const tl_srv_request *r, tl_srv_kind kind) {
  json_t *doc;
  CHECK(memchr(r->format_param, '\0', sizeof r->format_param) != NULL);
  switch (r->format) {
  case TL_SRV_FORMAT_TEXT:
  case TL_SRV_FORMAT_JSON_OBJECT:
    CHECK(r->format_text == NULL && r->format_len == 0);
    CHECK(r->format == TL_SRV_FORMAT_TEXT || kind == TL_SRV_CHAT);
    break;
  case TL_SRV_FORMAT_JSON_SCHEMA:
    CHECK(is_text(r->format_text, r->format_len));
    doc = json_loadb(r->format_text, r->format_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    CHECK(json_is_object(doc) || json_is_boolean(doc));
    json_decref(doc);
    break;
  case TL_SRV_FORMAT_GRAMMAR:
    CHECK(is_text(r->format_text, r->format_len) && r->format_len >= 1);
    CHECK(strcmp(r->format_param, "grammar") == 0);
    CHECK(r->tool_choice != TL_SRV_TOOLS_REQUIRED && r->tool_choice != TL_SRV_TOOLS_NAMED);
    break;
  default: CHECK(false);
  }
  CHECK(r->format == TL_SRV_FORMAT_TEXT || kind == TL_SRV_CHAT || kind == TL_SRV_COMPLETION);
  CHECK((r->tools != NULL) == r->has_tools);
  if (r->tools != NULL) {
    CHECK(is_text(r->tools, r->tools_len));
    doc = json_loadb(r->tools, r->tools_len, JSON_ALLOW_NUL, NULL);
    CHECK(json_is_array(doc) && json_array_size(doc) >= 1);
    CHECK(r->tool_choice != TL_SRV_TOOLS_NAMED || r->forced_tool < json_array_size(doc));
    json_decref(doc);
  }
  if (r->tool_choice == TL_SRV_TOOLS_REQUIRED || r->tool_choice == TL_SRV_TOOLS_NAMED)
    CHECK(r->has_tools && kind == TL_SRV_CHAT);
}

static void check_accepted(const tl_srv_request *r, tl_srv_kind kind, uint32_t vocab) {
  bool gen = kind == TL_SRV_CHAT || kind == TL_SRV_COMPLETION;
  CHECK(r->kind == kind);
  CHECK(memchr(r->model, '\0', sizeof r->model) != NULL && is_text(r->model, strlen(r->model)));
  CHECK((r->conversation != NULL) == (kind == TL_SRV_CHAT || kind == TL_SRV_APPLY_TEMPLATE));
  if (r->conversation != NULL) check_conversation(r);
  CHECK((r->prompt != NULL) == (kind == TL_SRV_COMPLETION || kind == TL_SRV_TOKENIZE));
  if (r->prompt != NULL) CHECK(is_text(r->prompt, r->prompt_len));
  if (kind == TL_SRV_COMPLETION) CHECK(r->prompt_len >= 1); /* max_tokens 0: n_predict -1 */
  CHECK(kind == TL_SRV_DETOKENIZE ? r->ids != NULL : r->ids == NULL && r->n_ids == 0);
  for (size_t i = 0; i < r->n_ids; i++) CHECK(r->ids[i] < vocab);
  CHECK(!r->with_pieces || kind == TL_SRV_TOKENIZE);
  CHECK(!r->has_tools || kind == TL_SRV_CHAT || kind == TL_SRV_APPLY_TEMPLATE);
  check_structured(r, kind);
  if (!gen) {
    CHECK(r->n == 0 && r->max_tokens == 0 && r->given == 0 && r->n_stops == 0 && r->ban == NULL);
    CHECK(!r->has_seed && !r->logprobs && !r->stream && !r->no_prompt_cache);
    return;
  }
  CHECK(r->n >= 1 && r->n <= TL_SRV_MAX_N);
  CHECK(r->max_tokens <= 2147483647u);
  CHECK(r->n_stops <= TL_SRV_MAX_STOPS);
  for (size_t i = 0; i < r->n_stops; i++) {
    CHECK(r->stop_lens[i] >= 1 && r->stop_lens[i] <= TL_SRV_MAX_STOP_BYTES);
    CHECK(is_text(r->stops[i], r->stop_lens[i]));
  }
  for (size_t i = r->n_stops; i < TL_SRV_MAX_STOPS; i++) CHECK(r->stops[i] == NULL);
  CHECK(r->n_ban <= TL_SRV_MAX_BANS);
  for (size_t i = 0; i < r->n_ban; i++) {
    CHECK(r->ban[i] < vocab);
    if (i > 0) CHECK(r->ban[i - 1] < r->ban[i]);
  }
  /* the other biases: ascending below the vocabulary, in [-100, 100],
   * neither 0 (dropped) nor -100 (a ban), all entries within the cap */
  CHECK(r->n_ban + r->n_bias <= TL_SRV_MAX_BANS);
  for (size_t i = 0; i < r->n_bias; i++) {
    CHECK(r->bias_ids[i] < vocab);
    if (i > 0) CHECK(r->bias_ids[i - 1] < r->bias_ids[i]);
    CHECK(r->bias[i] >= -100 && r->bias[i] <= 100 && r->bias[i] != 0 && r->bias[i] != -100);
  }
  CHECK(r->frequency_penalty >= -2 && r->frequency_penalty <= 2);
  CHECK(r->presence_penalty >= -2 && r->presence_penalty <= 2);
  CHECK(r->top_k <= vocab);
  if (r->given & TL_GIVEN_TEMPERATURE) CHECK(r->temperature >= 0 && r->temperature <= 2);
  if (r->given & TL_GIVEN_TOP_P) CHECK(r->top_p >= 0 && r->top_p <= 1);
  if (r->given & TL_GIVEN_MIN_P) CHECK(r->min_p >= 0 && r->min_p <= 1);
  if (r->given & TL_GIVEN_REPEAT_PENALTY) CHECK(r->repeat_penalty > 0);
  CHECK(r->top_logprobs <= (kind == TL_SRV_CHAT ? TL_SRV_MAX_TOP_LOGPROBS : 5));
  CHECK(r->top_logprobs == 0 || r->logprobs);
  CHECK(!r->include_usage || r->stream);
  CHECK(r->has_seed || r->seed == 0);
}

static void check_refused(const tl_srv_request *r, const tl_srv_error *e) {
  static const char *const codes[] = {"invalid_json", "invalid_utf8", "invalid_type",
                                      "invalid_value", "unsupported_value", "unknown_parameter",
                                      "missing_required_parameter", "request_too_large"};
  size_t i = 0;
  CHECK(all_zero(r, sizeof *r));
  CHECK(e->status == 400 || (e->status == 413 && strcmp(e->code, "request_too_large") == 0));
  CHECK(e->type != NULL && strcmp(e->type, "invalid_request_error") == 0);
  CHECK(memchr(e->param, '\0', sizeof e->param) != NULL);
  CHECK(memchr(e->code, '\0', sizeof e->code) != NULL);
  CHECK(memchr(e->message, '\0', sizeof e->message) != NULL && e->message[0] != '\0');
  CHECK(is_text(e->param, strlen(e->param)) && is_text(e->message, strlen(e->message)));
  while (i < sizeof codes / sizeof codes[0] && strcmp(codes[i], e->code) != 0) i++;
  CHECK(i < sizeof codes / sizeof codes[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tl_srv_request r;
  tl_srv_error e;
  tl_srv_kind kind;
  uint32_t vocab;
  if (size < 1) return 0;
  kind = (tl_srv_kind)(data[0] % 5);
  vocab = 1 + (uint32_t)(data[0] / 5) * 3000u;
  if (tl_srv_request_parse(kind, data + 1, size - 1, vocab, &r, &e) == TL_OK) {
    check_accepted(&r, kind, vocab);
    tl_srv_request_free(&r);
    CHECK(all_zero(&r, sizeof r));
  } else {
    check_refused(&r, &e);
  }
  return 0;
}
