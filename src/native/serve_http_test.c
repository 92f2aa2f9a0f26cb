/* What the server's responses promise about text (serve_http.h): a
 * streamed chunk never splits a UTF-8 sequence, ill-formed bytes become
 * U+FFFD by the maximal-subpart rule (Unicode §3.9, Table 3-8), Qwen3
 * <tool_call> blocks become OpenAI tool_calls, and text that may start
 * such a block is held back while streaming. The expected replacements
 * are the Unicode standard's own examples. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "serve_http.h"
#include "tl_test.h"

static void complete_sequences_only(tl_test_ctx *t) {
  static const struct {
    const char *s;
    size_t want;
  } cases[] = {
      {"", 0},
      {"ab", 2},
      {"a\xE2\x82", 1},         /* € cut after two of its three bytes */
      {"a\xE2\x82\xAC", 4},     /* € whole */
      {"\xF0\x9F\x98", 0},      /* an emoji's first three bytes */
      {"a\xC3", 1},             /* é's lead byte */
      {"a\xFF", 2},             /* never UTF-8: no use waiting */
      {"a\x80", 2},             /* a stray continuation byte */
      {"a\xE2\x28", 3},         /* a lead byte already broken */
      {"a\xF4\x90", 3},         /* past U+10FFFF already */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    TL_EXPECT_EQ_U64(t, tl_srv_utf8_complete((const uint8_t *)cases[i].s, strlen(cases[i].s)),
                     cases[i].want);
}

static void ill_formed_bytes_become_u_fffd(tl_test_ctx *t) {
  /* Table 3-8 of Unicode 15 §3.9: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64
   * is a, FFFD, FFFD, FFFD, b, FFFD, c, FFFD, FFFD, d */
  static const char in[] = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  static const char want[] = "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                             "b\xEF\xBF\xBD"
                             "c\xEF\xBF\xBD\xEF\xBF\xBD"
                             "d";
  size_t n = 0;
  char *out = tl_srv_utf8_clean((const uint8_t *)in, sizeof in - 1, &n);
  if (!TL_EXPECT(t, out != NULL)) return;
  TL_EXPECT_EQ_U64(t, n, sizeof want - 1);
  TL_EXPECT_STR(t, out, want);
  free(out);
  out = tl_srv_utf8_clean((const uint8_t *)"\xE2\x82\xAC", 3, &n);
  TL_EXPECT_STR(t, out, "\xE2\x82\xAC");
  free(out);
}

static void tool_call_blocks_become_tool_calls(tl_test_ctx *t) {
  static const char text[] =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": "
      "\"{}\"}\n</tool_call>";
  size_t before = 0;
  json_t *calls = tl_srv_tool_calls(text, sizeof text - 1, &before), *fn;
  if (!TL_EXPECT(t, json_is_array(calls) && json_array_size(calls) == 2)) return;
  TL_EXPECT_EQ_U64(t, before, strlen("Let me check.\n"));
  fn = json_object_get(json_array_get(calls, 0), "function");
  TL_EXPECT_STR(t, json_string_value(json_object_get(fn, "name")), "get_weather");
  /* arguments: the object as compact JSON text, key order kept */
  TL_EXPECT_STR(t, json_string_value(json_object_get(fn, "arguments")),
                "{\"city\":\"Paris\",\"days\":2}");
  TL_EXPECT_STR(t, json_string_value(json_object_get(json_array_get(calls, 0), "type")),
                "function");
  TL_EXPECT(t, strncmp(json_string_value(json_object_get(json_array_get(calls, 0), "id")),
                       "call_", 5) == 0);
  /* a string argument is passed on as given */
  fn = json_object_get(json_array_get(calls, 1), "function");
  TL_EXPECT_STR(t, json_string_value(json_object_get(fn, "arguments")), "{}");
  json_decref(calls);
}

static void malformed_blocks_stay_content(tl_test_ctx *t) {
  static const char *const texts[] = {
      "no call here",
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}", /* cut short */
      "<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>",
      "<tool_call>{\"arguments\": {}}</tool_call>",         /* no name */
      "<tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>",
      "<tool_call>[1]</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>x</tool_call>",
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    size_t before = 99;
    json_t *calls = tl_srv_tool_calls(texts[i], strlen(texts[i]), &before);
    TL_EXPECT(t, calls == NULL && before == 99);
    json_decref(calls);
  }
}

static void text_that_may_open_a_tool_call_is_held(tl_test_ctx *t) {
  static const struct {
    const char *s;
    size_t want;
  } cases[] = {
      {"abc", 3},       {"abc<", 3},          {"abc<tool_ca", 3},
      {"abc<tool_call>{", 3}, {"abc<tool_cal>", 13}, {"<", 0},
      {"a<b", 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    TL_EXPECT_EQ_U64(t, tl_srv_tool_hold((const uint8_t *)cases[i].s, strlen(cases[i].s)),
                     cases[i].want);
}

/* ---- streaming a choice whose text arrives in pieces ---- */

static void gen_init(tl_srv_gen *g, bool tools) {
  memset(g, 0, sizeof *g);
  g->chat = true;
  g->n = 1;
  g->req.has_tools = tools;
  g->facts.model_name = "m";
  g->facts.build_id = "b";
  g->facts.artifact_id = "a";
  g->facts.profile = "p";
  snprintf(g->id, sizeof g->id, "chatcmpl-0");
}

/* Appends bytes to the choice's text as the engine would report them. */
static void arrive(tl_srv_choice *c, const char *s, bool done) {
  tl_srv_update u;
  memset(&u, 0, sizeof u);
  u.text = (uint8_t *)(uintptr_t)s;
  u.text_from = c->raw_len;
  u.text_len = c->raw_len + strlen(s);
  u.state = done ? TL_SRV_DONE : TL_SRV_DECODING;
  u.result.finish = "eos";
  (void)tl_srv_choice_take(c, &u);
}

/* The events in out: the concatenated delta contents, the number of
 * chunks, the last finish_reason and the tool_calls delta (if any). */
typedef struct seen {
  char content[256], reasoning[256];
  size_t chunks;
  char finish[32];
  json_t *calls;
} seen;

static bool read_events(const tl_srv_buf *out, seen *s) {
  const char *p = out->p;
  while (p != NULL && *p != '\0') {
    const char *end = strstr(p, "\n\n");
    json_t *doc, *choice, *delta, *content, *reason;
    if (strncmp(p, "data: ", 6) != 0 || end == NULL) return false;
    doc = json_loadb(p + 6, (size_t)(end - p - 6), 0, NULL);
    choice = json_array_get(json_object_get(doc, "choices"), 0);
    delta = json_object_get(choice, "delta");
    content = json_object_get(delta, "content");
    reason = json_object_get(choice, "finish_reason");
    if (doc == NULL) return false;
    if (json_is_string(content)) strcat(s->content, json_string_value(content));
    if (json_is_string(json_object_get(delta, "reasoning_content")))
      strcat(s->reasoning, json_string_value(json_object_get(delta, "reasoning_content")));
    if (json_is_string(reason)) snprintf(s->finish, sizeof s->finish, "%s", json_string_value(reason));
    if (json_object_get(delta, "tool_calls") != NULL)
      s->calls = json_incref(json_object_get(delta, "tool_calls"));
    s->chunks++;
    json_decref(doc);
    p = end + 2;
  }
  return true;
}

static void free_choice(tl_srv_gen *g) {
  free(g->choices[0].raw);
  free(g->choices[0].tokens);
}

static void streamed_text_never_splits_a_character(tl_test_ctx *t) {
  tl_srv_gen g;
  tl_srv_buf out = {0};
  seen s = {0};
  gen_init(&g, false);
  arrive(&g.choices[0], "pay 5 \xE2\x82", false);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out) && read_events(&out, &s));
  TL_EXPECT_STR(t, s.content, "pay 5 "); /* the euro sign waits for its last byte */
  TL_EXPECT_EQ_U64(t, s.chunks, 1);
  out.len = 0;
  memset(&s, 0, sizeof s);
  arrive(&g.choices[0], "\xAC now\xE2\x82", true); /* the reply ends cut short */
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out) && read_events(&out, &s));
  TL_EXPECT_STR(t, s.content, "\xE2\x82\xAC now\xEF\xBF\xBD");
  TL_EXPECT_STR(t, s.finish, "stop");
  TL_EXPECT(t, g.choices[0].finished);
  tl_srv_buf_free(&out);
  free_choice(&g);
}

static void streamed_tool_calls_are_held_and_sent_whole(tl_test_ctx *t) {
  tl_srv_gen g;
  tl_srv_buf out = {0};
  seen s = {0};
  json_t *fn;
  gen_init(&g, true);
  arrive(&g.choices[0], "Checking.<tool_", false);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out));
  arrive(&g.choices[0], "call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}", false);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out));
  arrive(&g.choices[0], "</tool_call>", true);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out) && read_events(&out, &s));
  TL_EXPECT_STR(t, s.content, "Checking.");
  TL_EXPECT_STR(t, s.finish, "tool_calls");
  fn = json_object_get(json_array_get(s.calls, 0), "function");
  TL_EXPECT_STR(t, json_string_value(json_object_get(fn, "name")), "f");
  TL_EXPECT_STR(t, json_string_value(json_object_get(fn, "arguments")), "{\"x\":1}");
  TL_EXPECT(t, json_integer_value(json_object_get(json_array_get(s.calls, 0), "index")) == 0);
  json_decref(s.calls);
  tl_srv_buf_free(&out);
  free_choice(&g);
}

static void held_text_that_is_no_tool_call_is_sent(tl_test_ctx *t) {
  tl_srv_gen g;
  tl_srv_buf out = {0};
  seen s = {0};
  gen_init(&g, true);
  arrive(&g.choices[0], "a <tool_call> without an end", false);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out));
  arrive(&g.choices[0], "", true);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out) && read_events(&out, &s));
  TL_EXPECT_STR(t, s.content, "a <tool_call> without an end");
  TL_EXPECT_STR(t, s.finish, "stop");
  TL_EXPECT(t, s.calls == NULL);
  tl_srv_buf_free(&out);
  free_choice(&g);
}

/* A constrained reply (json_object here) with thinking: the block goes as
 * reasoning_content, the document as content, each piece once. */
static void streamed_constrained_reply_splits_reasoning(tl_test_ctx *t) {
  tl_srv_gen g;
  tl_srv_buf out = {0};
  seen s = {0};
  gen_init(&g, false);
  g.req.format = TL_SRV_FORMAT_JSON_OBJECT;
  arrive(&g.choices[0], "<thi", false);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out));
  arrive(&g.choices[0], "nk>\nsum it\n</th", false);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out));
  arrive(&g.choices[0], "ink>\n\n{\"n\": ", false);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out));
  arrive(&g.choices[0], "3}", true);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out) && read_events(&out, &s));
  TL_EXPECT_STR(t, s.reasoning, "sum it");
  TL_EXPECT_STR(t, s.content, "{\"n\": 3}");
  TL_EXPECT_STR(t, s.finish, "stop");
  tl_srv_buf_free(&out);
  free_choice(&g);
}

/* Every chat reply's think block goes apart, streamed a byte at a time:
 * no delta holds any part of a tag or of a UTF-8 sequence, the reasoning
 * and the answer joined are the reply's parts; with reasoning_format
 * "none" the deltas joined are the raw text. */
static void streamed_byte_by_byte_never_shows_a_tag(tl_test_ctx *t) {
  static const char reply[] = "<think>\nadd \xE2\x82\xAC <b\n</think>\n\n42 <thin";
  for (int raw = 0; raw < 2; raw++) {
    tl_srv_gen g;
    tl_srv_buf out = {0};
    seen s = {0};
    bool whole = true;
    gen_init(&g, false);
    g.req.raw_reasoning = raw == 1;
    for (size_t i = 0; i < sizeof reply - 1; i++) {
      char one[2] = {reply[i], 0};
      seen step = {0};
      arrive(&g.choices[0], one, i + 2 == sizeof reply);
      out.len = 0;
      if (out.p != NULL) out.p[0] = '\0'; /* this step's events alone */
      TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out) && read_events(&out, &step));
      strcat(s.content, step.content);
      strcat(s.reasoning, step.reasoning);
      if (!raw) /* a tag's bytes never arrive alone: "<b" and "<thin" in the text are not tags */
        whole = whole && strstr(step.reasoning, "<t") == NULL && strstr(step.reasoning, "</") == NULL &&
                strstr(step.content, "think") == NULL && strchr(step.content, '\xE2') == NULL;
    }
    TL_EXPECT(t, whole);
    TL_EXPECT_STR(t, s.reasoning, raw ? "" : "add \xE2\x82\xAC <b");
    TL_EXPECT_STR(t, s.content, raw ? reply : "42 <thin");
    tl_srv_buf_free(&out);
    free_choice(&g);
  }
}

/* The body of a finished reply: a block never closed (cut short while
 * thinking) is all reasoning and the content is ""; no block, no
 * reasoning_content; a tool call inside the think block is not read. */
static json_t *body_message(tl_srv_gen *g) {
  char *body = tl_srv_response_body(g);
  json_t *doc = body ? json_loads(body, 0, NULL) : NULL;
  json_t *msg = json_incref(json_object_get(json_array_get(json_object_get(doc, "choices"), 0), "message"));
  free(body);
  json_decref(doc);
  return msg;
}

#define CALL "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"
static void bodies_split_every_chat_reply(tl_test_ctx *t) {
  static const struct {
    const char *reply;
    bool tools, raw, calls;
    const char *content, *reasoning; /* NULL: JSON null or absent */
  } cases[] = {
      {"<think>\nstill thinking", false, false, false, "", "still thinking"},
      {"<think>\nhm\n</think>\n\n42", false, false, false, "42", "hm"},
      {"<think>\nhm\n</think>\n\n42", false, true, false, "<think>\nhm\n</think>\n\n42", NULL},
      {"just 42", false, false, false, "just 42", NULL},
      {"<think>\n" CALL "\n</think>\n\nno call", true, false, false, "no call", CALL},
      {"<think>\n" CALL "\n</think>\n\nno call", true, true, false,
       "<think>\n" CALL "\n</think>\n\nno call", NULL},
      {"<think>\n\n</think>\n\n" CALL, true, true, true, "<think>\n\n</think>\n\n", NULL},
      {"<think>\n\n</think>\n\n" CALL, true, false, true, NULL, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl_srv_gen g;
    json_t *msg, *content, *reasoning;
    gen_init(&g, cases[i].tools);
    g.req.raw_reasoning = cases[i].raw;
    arrive(&g.choices[0], cases[i].reply, true);
    msg = body_message(&g);
    content = json_object_get(msg, "content");
    reasoning = json_object_get(msg, "reasoning_content");
    TL_EXPECT_STR(t, json_is_string(content) ? json_string_value(content) : "(null)",
                  cases[i].content ? cases[i].content : "(null)");
    TL_EXPECT_STR(t, json_is_string(reasoning) ? json_string_value(reasoning) : "(null)",
                  cases[i].reasoning ? cases[i].reasoning : "(null)");
    TL_EXPECT(t, (json_object_get(msg, "tool_calls") != NULL) == cases[i].calls);
    json_decref(msg);
    free_choice(&g);
  }
}
#undef CALL

/* Required tool calls after an empty think block: no content at all. */
static void streamed_required_calls_after_thinking(tl_test_ctx *t) {
  tl_srv_gen g;
  tl_srv_buf out = {0};
  seen s = {0};
  gen_init(&g, true);
  g.req.tool_choice = TL_SRV_TOOLS_REQUIRED;
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out) && out.len == 0); /* no text yet: nothing */
  arrive(&g.choices[0], "<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"f\", ", false);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out));
  arrive(&g.choices[0], "\"arguments\": {}}\n</tool_call>", true);
  TL_EXPECT(t, tl_srv_stream_choice(&g, 0, &out) && read_events(&out, &s));
  TL_EXPECT_STR(t, s.content, "");
  TL_EXPECT_STR(t, s.reasoning, "");
  TL_EXPECT_STR(t, s.finish, "tool_calls");
  TL_EXPECT_STR(t, json_string_value(json_object_get(json_object_get(json_array_get(s.calls, 0),
                                                                     "function"),
                                                     "arguments")),
                "{}");
  json_decref(s.calls);
  tl_srv_buf_free(&out);
  free_choice(&g);
}

static void errors_have_openai_shape(tl_test_ctx *t) {
  tl_srv_error e;
  json_t *doc, *err;
  char *body;
  tl_srv_error_set(&e, 400, NULL, "messages[2].role", "invalid_value", "role %s", "x");
  body = tl_srv_error_body(&e);
  doc = body ? json_loads(body, 0, NULL) : NULL;
  err = json_object_get(doc, "error");
  TL_EXPECT_STR(t, json_string_value(json_object_get(err, "message")), "role x");
  TL_EXPECT_STR(t, json_string_value(json_object_get(err, "type")), "invalid_request_error");
  TL_EXPECT_STR(t, json_string_value(json_object_get(err, "param")), "messages[2].role");
  TL_EXPECT_STR(t, json_string_value(json_object_get(err, "code")), "invalid_value");
  json_decref(doc);
  free(body);
  /* no param, no code: JSON null, as OpenAI's */
  tl_srv_error_set(&e, 503, NULL, "", "", "busy");
  body = tl_srv_error_body(&e);
  doc = body ? json_loads(body, 0, NULL) : NULL;
  err = json_object_get(doc, "error");
  TL_EXPECT(t, json_is_null(json_object_get(err, "param")) &&
                   json_is_null(json_object_get(err, "code")));
  TL_EXPECT_STR(t, json_string_value(json_object_get(err, "type")), "server_error");
  json_decref(doc);
  free(body);
}

static void metrics_name_every_counter(tl_test_ctx *t) {
  /* the names and values the wire contract lists (docs/server.md) */
  tl_srv_stats st = {.prompt_tokens = 11, .cached_tokens = 3, .generated_tokens = 40,
                     .prompt_seconds = 0.5, .decode_seconds = 2.25, .requests_cancelled = 2,
                     .processing = 1, .queued = 4, .slots_busy = 1, .forward_batches = 30,
                     .batched_tokens = 45, .decode_step_seconds = 1.5,
                     .prefill_chunk_seconds = 0.25, .kv_used = 60,
                     .kv_capacity = 160};
  tl_srv_http_counts n = {.requests = 9, .rejected = 5};
  static const char *const lines[] = {
      "\ntinylm_prompt_tokens_total 11\n", "\ntinylm_prompt_cached_tokens_total 3\n",
      "\ntinylm_tokens_predicted_total 40\n", "\ntinylm_prompt_seconds_total 0.500000\n",
      "\ntinylm_tokens_predicted_seconds_total 2.250000\n", "\ntinylm_requests_processing 1\n",
      "\ntinylm_requests_queued 4\n", "\ntinylm_requests_rejected_total 5\n",
      "\ntinylm_requests_total 9\n", "\ntinylm_requests_cancelled_total 2\n",
      "\ntinylm_slots_busy 1\n", "\ntinylm_decode_batches_total 30\n",
      "\ntinylm_decode_batched_tokens_total 45\n", "\ntinylm_decode_step_seconds_total 1.500000\n",
      "\ntinylm_prefill_chunk_seconds_total 0.250000\n",
      "\ntinylm_kv_cache_usage_ratio 0.375000\n", /* 60 of 160 rows */
      "# TYPE tinylm_kv_cache_usage_ratio gauge\n",
      "# TYPE tinylm_requests_queued gauge\n", "# TYPE tinylm_requests_total counter\n"};
  char *text = tl_srv_metrics_text(&st, &n);
  if (!TL_EXPECT(t, text != NULL)) return;
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
    if (!TL_EXPECT(t, strstr(text, lines[i]) != NULL)) break;
  free(text);
  /* no slots (the engine not loaded): the ratio is 0, not a division by 0 */
  memset(&st, 0, sizeof st);
  text = tl_srv_metrics_text(&st, &n);
  if (TL_EXPECT(t, text != NULL))
    TL_EXPECT(t, strstr(text, "\ntinylm_kv_cache_usage_ratio 0.000000\n") != NULL);
  free(text);
}

static const tl_test_case cases[] = {
    TL_CASE(complete_sequences_only),
    TL_CASE(ill_formed_bytes_become_u_fffd),
    TL_CASE(tool_call_blocks_become_tool_calls),
    TL_CASE(malformed_blocks_stay_content),
    TL_CASE(text_that_may_open_a_tool_call_is_held),
    TL_CASE(streamed_text_never_splits_a_character),
    TL_CASE(streamed_tool_calls_are_held_and_sent_whole),
    TL_CASE(held_text_that_is_no_tool_call_is_sent),
    TL_CASE(streamed_constrained_reply_splits_reasoning),
    TL_CASE(streamed_required_calls_after_thinking),
    TL_CASE(streamed_byte_by_byte_never_shows_a_tag),
    TL_CASE(bodies_split_every_chat_reply),
    TL_CASE(errors_have_openai_shape),
    TL_CASE(metrics_name_every_counter),
};
TL_SUITE(serve_http, cases);
