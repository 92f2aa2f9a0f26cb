/* The request bodies of `tinylm serve` (serve_request.h), as the wire
 * contract (docs/server.md) states them: what each field accepts, and for
 * each refusal its status, param and code. Expected conversations are
 * the contract's own rewriting of the messages (developer -> system, text
 * parts joined, tools dropped by tool_choice "none"); each accepted one
 * is also put through the renderer's own check (tl_conversation_check),
 * the oracle for "the template can render it". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "chat_render.h"
#include "json/json.h"
#include "serve_request.h"
#include "serve_request_checks.h"
#include "tl_test.h"
#include "utf8.h"

/* The renderer's check of a conversation (what tl_native_render runs for
 * a reply before the template). */
static bool renderable(const char *conv, size_t len) {
  static uint8_t mem[1 << 20];
  tl_arena a;
  tl_json_value *v;
  tl_json_error je;
  tl_render_error re;
  return tl_arena_init(&a, mem, sizeof mem) == TL_OK &&
         tl_json_parse((const uint8_t *)conv, len, NULL, &a, &v, &je) == TL_OK &&
         tl_conversation_check(v, &re) == TL_OK;
}

/* The conversation a chat body gives (and apply-template the same). */
static void conversation_is_at(tl_test_ctx *t, const char *body, const char *want,
                               const char *file, int line) {
  tl_srv_request r;
  if (!accepted_at(t, TL_SRV_CHAT, body, strlen(body), &r, file, line)) return;
  tl_test_check_str(t, r.conversation, want, file, line, body);
  tl_test_check_u64(t, r.conversation_len, strlen(want), file, line, "conversation_len");
  tl_test_check(t, renderable(r.conversation, r.conversation_len), file, line,
                "tl_conversation_check accepts it");
  tl_srv_request_free(&r);
}
#define CONVERSATION_IS(t, body, want) conversation_is_at(t, body, want, __FILE__, __LINE__)

/* ---- the body ---- */

static void body_must_be_utf8_with_the_offset(tl_test_ctx *t) {
  static const struct {
    const char *body;
    size_t len, offset;
  } bad[] = {
      {"{\"prompt\":\"\xff\"}", 14, 11},         /* never valid */
      {"{\"prompt\":\"ab\xc3(\"}", 17, 13},      /* a 2-byte sequence cut short */
      {"{\"prompt\":\"\xed\xa0\x80\"}", 16, 11}, /* a surrogate */
      {"{\"prompt\":\"x\"}\xe2\x82", 16, 14},    /* truncated at the end */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tl_srv_error e;
    char want[64];
    if (!refused_at(t, TL_SRV_COMPLETION, bad[i].body, bad[i].len, "", "invalid_utf8", &e,
                    __FILE__, __LINE__))
      continue;
    snprintf(want, sizeof want, "(byte offset %zu)", bad[i].offset);
    TL_EXPECT(t, strstr(e.message, want) != NULL);
  }
}

static void body_must_be_a_json_object(tl_test_ctx *t) {
  tl_srv_error e;
  REFUSED(t, TL_SRV_CHAT, "", "", "invalid_json");
  REFUSED(t, TL_SRV_CHAT, "{\"messages\": [}", "", "invalid_json");
  REFUSED(t, TL_SRV_CHAT, "[]", "", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "null", "", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "\"x\"", "", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI "} x", "", "invalid_json");
  /* jansson's line and column of the fault */
  if (refused_at(t, TL_SRV_TOKENIZE, "{\n  \"content\": tru\n}", 20, "", "invalid_json", &e,
                 __FILE__, __LINE__))
    TL_EXPECT(t, strstr(e.message, "line 2, column") != NULL);
  /* duplicate keys, at any depth */
  if (refused_at(t, TL_SRV_TOKENIZE, "{\"content\":\"a\",\"content\":\"b\"}", 29, "", "invalid_json",
                 &e, __FILE__, __LINE__))
    TL_EXPECT(t, strstr(e.message, "duplicate") != NULL);
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"3\":-100,\"3\":-100}}", "",
          "invalid_json");
  /* jansson holds no NUL in a key (in a string it does) */
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"model\\u0000x\":\"m\"}", "", "invalid_json");
  /* a raw control character in a string */
  REFUSED(t, TL_SRV_TOKENIZE, "{\"content\":\"a\tb\"}", "", "invalid_json");
}

/* A chat body whose tools[0].function.parameters nests so that the whole
 * body is depth levels deep (the body's object is level 1). */
static char *nested_body(size_t depth) {
  const char *head = "{" USER_HI ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
                     "\"parameters\":";
  size_t inner = depth - 4, n = strlen(head), cap = n + inner * 6 + 8;
  char *b = malloc(cap);
  if (b == NULL) return NULL;
  memcpy(b, head, n);
  for (size_t i = 0; i < inner; i++) n += (size_t)sprintf(b + n, "%s", i + 1 < inner ? "{\"a\":" : "{}");
  for (size_t i = 1; i < inner; i++) b[n++] = '}';
  memcpy(b + n, "}}]}", 5);
  return b;
}

static void nesting_deeper_than_64_is_refused(tl_test_ctx *t) {
  char *ok64 = nested_body(64), *bad65 = nested_body(65), *text;
  tl_srv_request r;
  tl_srv_error e;
  if (!TL_EXPECT(t, ok64 != NULL && bad65 != NULL)) goto done;
  if (ACCEPTED(t, TL_SRV_CHAT, ok64, &r)) {
    TL_EXPECT(t, r.has_tools && renderable(r.conversation, r.conversation_len));
    tl_srv_request_free(&r);
  }
  if (refused_at(t, TL_SRV_CHAT, bad65, strlen(bad65), "", "invalid_json", &e, __FILE__, __LINE__))
    TL_EXPECT(t, strstr(e.message, "deeper than 64") != NULL);
  /* a top-level integer past int64 (rewritten in a copy) before the fault:
   * the copy is freed (ASan checks; found by fuzz_serve_request) */
  text = malloc(200);
  if (TL_EXPECT(t, text != NULL)) {
    strcpy(text, "{\"seed\":18446744073709551615,\"x\":");
    memset(text + strlen(text), '[', 70);
    text[33 + 70] = '\0';
    REFUSED(t, TL_SRV_CHAT, text, "", "invalid_json");
    free(text);
  }
  /* brackets inside strings are text, not nesting */
  text = malloc(300);
  if (TL_EXPECT(t, text != NULL)) {
    strcpy(text, "{\"content\":\"");
    memset(text + 12, '[', 200);
    strcpy(text + 212, "\"}");
    if (ACCEPTED(t, TL_SRV_TOKENIZE, text, &r)) {
      TL_EXPECT_EQ_U64(t, r.prompt_len, 200);
      tl_srv_request_free(&r);
    }
    free(text);
  }
done:
  free(ok64);
  free(bad65);
}

/* At most 2^18 JSON values (keys count) in a body, refused as too large
 * before jansson allocates them: {"tokens": [0, ...]} holds the object,
 * the key, the array and the ids. */
static void value_count_is_bounded(tl_test_ctx *t) {
  const size_t cap = (size_t)1 << 18;
  char *body = malloc(2 * cap + 64);
  tl_srv_request r;
  tl_srv_error e;
  if (!TL_EXPECT(t, body != NULL)) return;
  for (size_t ids = cap - 3; ids <= cap - 2; ids++) {
    size_t n = (size_t)sprintf(body, "{\"tokens\":[");
    tl_status st;
    for (size_t i = 0; i < ids; i++) {
      body[n++] = '0';
      body[n++] = i + 1 < ids ? ',' : ']';
    }
    strcpy(body + n, "}");
    st = parse_n(TL_SRV_DETOKENIZE, body, n + 1, &r, &e);
    if (ids == cap - 3) {
      if (TL_EXPECT_OK(t, st)) {
        TL_EXPECT_EQ_U64(t, r.n_ids, ids);
        tl_srv_request_free(&r);
      }
    } else {
      TL_EXPECT_STATUS(t, st, TL_ERR_INVALID_ARGUMENT);
      TL_EXPECT_EQ_U64(t, e.status, 413);
      TL_EXPECT_STR(t, e.type, "invalid_request_error");
      TL_EXPECT_STR(t, e.code, "request_too_large");
      TL_EXPECT(t, all_zero(&r, sizeof r));
    }
  }
  free(body);
}

static void unknown_fields_are_named(tl_test_ctx *t) {
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"temprature\":1}", "temprature", "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"prompt\":\"x\"}", "prompt", "unknown_parameter");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"top_logprobs\":1}", "top_logprobs",
          "unknown_parameter");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\"," USER_HI "}", "messages", "unknown_parameter");
  REFUSED(t, TL_SRV_TOKENIZE, "{\"content\":\"x\",\"n\":1}", "n", "unknown_parameter");
  REFUSED(t, TL_SRV_DETOKENIZE, "{\"tokens\":[],\"x\":1}", "x", "unknown_parameter");
  REFUSED(t, TL_SRV_APPLY_TEMPLATE, "{" USER_HI ",\"temperature\":1}", "temperature",
          "unknown_parameter");
  REFUSED(t, TL_SRV_APPLY_TEMPLATE, "{" USER_HI ",\"tool_choice\":\"auto\"}", "tool_choice",
          "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"refusal\":null}]}",
          "messages[0].refusal", "unknown_parameter");
  /* an unknown field is reported before the others are judged */
  REFUSED(t, TL_SRV_CHAT, "{\"temperature\":9,\"zz\":1}", "zz", "unknown_parameter");
}

/* ---- chat: the conversation ---- */

static void chat_defaults(tl_test_ctx *t) {
  tl_srv_request r;
  if (!ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI "}", &r)) return;
  TL_EXPECT_STR(t, r.conversation, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
  TL_EXPECT_EQ_U64(t, r.kind, TL_SRV_CHAT);
  TL_EXPECT_STR(t, r.model, "");
  TL_EXPECT_EQ_U64(t, r.max_tokens, 0); /* until EOS or the context is full */
  TL_EXPECT_EQ_U64(t, r.given, 0);
  TL_EXPECT_EQ_U64(t, r.n, 1);
  TL_EXPECT(t, !r.has_seed && r.seed == 0);
  TL_EXPECT_EQ_U64(t, r.n_stops, 0);
  TL_EXPECT_EQ_U64(t, r.n_ban, 0);
  TL_EXPECT(t, !r.logprobs && r.top_logprobs == 0 && !r.stream && !r.include_usage);
  TL_EXPECT(t, !r.has_tools && r.prompt == NULL && r.ids == NULL);
  tl_srv_request_free(&r);
  if (ACCEPTED(t, TL_SRV_CHAT, "{\"model\":\"qwen3 \xe2\x9c\x93\"," USER_HI ",\"n\":null}", &r)) {
    TL_EXPECT_STR(t, r.model, "qwen3 \xe2\x9c\x93");
    TL_EXPECT_EQ_U64(t, r.n, 1);
    tl_srv_request_free(&r);
  }
}

static void chat_messages_become_the_conversation(tl_test_ctx *t) {
  /* content parts joined in order; developer is system; UTF-8 kept as is */
  CONVERSATION_IS(t,
                  "{\"messages\":[{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":"
                  "\"Be \"},{\"type\":\"text\",\"text\":\"brief.\"}]},{\"role\":\"user\",\"content\":"
                  "\"h\xc3\xa9llo \xe2\x9c\x93\",\"name\":\"bob\"}]}",
                  "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\","
                  "\"content\":\"h\xc3\xa9llo \xe2\x9c\x93\",\"name\":\"bob\"}]}");
  CONVERSATION_IS(t, "{\"messages\":[{\"role\":\"system\",\"content\":[]},{\"role\":\"user\","
                     "\"content\":\"a\\u0000b\"}]}",
                  "{\"messages\":[{\"role\":\"system\",\"content\":\"\"},{\"role\":\"user\","
                  "\"content\":\"a\\u0000b\"}]}");
  /* an assistant's null content beside tool_calls becomes "", and a tool
   * message keeps its tool_call_id */
  CONVERSATION_IS(
      t,
      "{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},{\"role\":\"assistant\","
      "\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":"
      "{\"name\":\"get\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]},{\"role\":\"tool\","
      "\"tool_call_id\":\"call_1\",\"content\":\"12 C\"}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},{\"role\":\"assistant\","
      "\"content\":\"\",\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":"
      "{\"name\":\"get\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]},{\"role\":\"tool\","
      "\"content\":\"12 C\",\"tool_call_id\":\"call_1\"}]}");
  /* arguments as an object, content absent (as null) */
  CONVERSATION_IS(t,
                  "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":"
                  "\"f\",\"arguments\":{\"x\":1}}}]}]}",
                  "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{"
                  "\"function\":{\"name\":\"f\",\"arguments\":{\"x\":1}}}]}]}");
}

#define TOOL_F "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\"," \
               "\"parameters\":{\"type\":\"object\"}}}"

static void chat_tools_tool_choice_and_thinking(tl_test_ctx *t) {
  tl_srv_request r;
  CONVERSATION_IS(t, "{" USER_HI ",\"tools\":[" TOOL_F "]}",
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[" TOOL_F "]}");
  CONVERSATION_IS(t, "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":\"auto\"}",
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[" TOOL_F "]}");
  /* "none" leaves the tools out of the template; so does an empty list */
  CONVERSATION_IS(t, "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":\"none\"}",
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
  CONVERSATION_IS(t, "{" USER_HI ",\"tools\":[]}",
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
  CONVERSATION_IS(t, "{" USER_HI ",\"chat_template_kwargs\":{\"enable_thinking\":false}}",
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"enable_thinking\":false}");
  CONVERSATION_IS(t, "{" USER_HI ",\"chat_template_kwargs\":{\"enable_thinking\":true}}",
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"enable_thinking\":true}");
  CONVERSATION_IS(t, "{" USER_HI ",\"chat_template_kwargs\":{}}",
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "]}", &r)) {
    TL_EXPECT(t, r.has_tools);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":\"none\"}", &r)) {
    TL_EXPECT(t, !r.has_tools);
    tl_srv_request_free(&r);
  }
  /* apply-template reads the same conversation */
  if (ACCEPTED(t, TL_SRV_APPLY_TEMPLATE,
               "{" USER_HI ",\"tools\":[" TOOL_F "],\"chat_template_kwargs\":{\"enable_thinking\":"
               "false}}",
               &r)) {
    TL_EXPECT_STR(t, r.conversation,
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[" TOOL_F
                  "],\"enable_thinking\":false}");
    TL_EXPECT(t, r.has_tools);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tool_choice\":\"sometimes\"}", "tool_choice",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tool_choice\":1}", "tool_choice", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":{}}", "tools", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[1]}", "tools[0]", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[{\"function\":{\"name\":\"f\"}}]}",
          "tools[0].type", "missing_required_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[{\"type\":\"code_interpreter\"}]}",
          "tools[0].type", "unsupported_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F ",{\"type\":\"function\"}]}",
          "tools[1].function", "missing_required_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[{\"type\":\"function\",\"function\":{}}]}",
          "tools[0].function.name", "missing_required_parameter");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"\"}}]}",
          "tools[0].function.name", "invalid_value");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
          "\"parameters\":[]}}]}",
          "tools[0].function.parameters", "invalid_type");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
          "\"strict\":1}}]}",
          "tools[0].function.strict", "invalid_type");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
          "\"seal\":true}}]}",
          "tools[0].function.seal", "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "," TOOL_F "]}",
          "tools[1].function.name", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"chat_template_kwargs\":{\"add_generation_prompt\":false}}",
          "chat_template_kwargs.add_generation_prompt", "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"chat_template_kwargs\":{\"enable_thinking\":1}}",
          "chat_template_kwargs.enable_thinking", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"chat_template_kwargs\":[]}", "chat_template_kwargs",
          "invalid_type");
}

/* reasoning_effort is Qwen3's switch (none/minimal off, low/medium/high
 * on), refused when chat_template_kwargs says otherwise; reasoning_format
 * "none" keeps the think block in content, deepseek/auto report it apart;
 * neither is a completions or apply-template field. */
static void reasoning_effort_and_format(tl_test_ctx *t) {
  static const struct {
    const char *effort;
    bool on;
  } efforts[] = {{"none", false}, {"minimal", false}, {"low", true}, {"medium", true}, {"high", true}};
  static const struct {
    const char *format;
    bool raw;
  } formats[] = {{"none", true}, {"deepseek", false}, {"auto", false}};
  char body[256], want[160];
  tl_srv_request r;
  for (size_t i = 0; i < sizeof efforts / sizeof efforts[0]; i++) {
    snprintf(body, sizeof body, "{" USER_HI ",\"reasoning_effort\":\"%s\"}", efforts[i].effort);
    snprintf(want, sizeof want, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
             "\"enable_thinking\":%s}", efforts[i].on ? "true" : "false");
    CONVERSATION_IS(t, body, want);
    /* agreeing with chat_template_kwargs is fine, disagreeing is refused */
    snprintf(body, sizeof body, "{" USER_HI ",\"reasoning_effort\":\"%s\","
             "\"chat_template_kwargs\":{\"enable_thinking\":%s}}", efforts[i].effort,
             efforts[i].on ? "true" : "false");
    CONVERSATION_IS(t, body, want);
    snprintf(body, sizeof body, "{" USER_HI ",\"reasoning_effort\":\"%s\","
             "\"chat_template_kwargs\":{\"enable_thinking\":%s}}", efforts[i].effort,
             efforts[i].on ? "false" : "true");
    REFUSED(t, TL_SRV_CHAT, body, "reasoning_effort", "invalid_value");
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"reasoning_effort\":\"max\"}", "reasoning_effort",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"reasoning_effort\":\"low\\u0000\"}", "reasoning_effort",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"reasoning_effort\":1}", "reasoning_effort",
          "invalid_type");
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    snprintf(body, sizeof body, "{" USER_HI ",\"reasoning_format\":\"%s\"}", formats[i].format);
    if (accepted_at(t, TL_SRV_CHAT, body, strlen(body), &r, __FILE__, __LINE__)) {
      TL_EXPECT(t, r.raw_reasoning == formats[i].raw);
      tl_srv_request_free(&r);
    }
  }
  if (accepted_at(t, TL_SRV_CHAT, "{" USER_HI "}", strlen("{" USER_HI "}"), &r, __FILE__, __LINE__)) {
    TL_EXPECT(t, !r.raw_reasoning); /* absent: apart */
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"reasoning_format\":\"hidden\"}", "reasoning_format",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"reasoning_format\":true}", "reasoning_format",
          "invalid_type");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"reasoning_format\":\"none\"}",
          "reasoning_format", "unknown_parameter");
  REFUSED(t, TL_SRV_APPLY_TEMPLATE, "{" USER_HI ",\"reasoning_effort\":\"low\"}",
          "reasoning_effort", "unknown_parameter");
}

static void chat_message_refusals(tl_test_ctx *t) {
  static const struct {
    const char *messages, *param, *code;
  } bad[] = {
      {"[]", "messages", "invalid_value"},
      {"{}", "messages", "invalid_type"},
      {"[\"hi\"]", "messages[0]", "invalid_type"},
      {"[{\"content\":\"x\"}]", "messages[0].role", "missing_required_parameter"},
      {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"bot\",\"content\":\"x\"}]",
       "messages[1].role", "invalid_value"},
      {"[{\"role\":\"User\",\"content\":\"x\"}]", "messages[0].role", "invalid_value"},
      {"[{\"role\":7,\"content\":\"x\"}]", "messages[0].role", "invalid_type"},
      {"[{\"role\":\"user\"}]", "messages[0].content", "missing_required_parameter"},
      {"[{\"role\":\"user\",\"content\":null}]", "messages[0].content", "invalid_value"},
      {"[{\"role\":\"assistant\",\"content\":null}]", "messages[0].content", "invalid_value"},
      {"[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]}]", "messages[0].content",
       "invalid_value"},
      {"[{\"role\":\"user\",\"content\":5}]", "messages[0].content", "invalid_type"},
      {"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image_url\","
       "\"image_url\":{\"url\":\"x\"}}]}]",
       "messages[0].content[1].type", "unsupported_value"},
      {"[{\"role\":\"user\",\"content\":[{\"text\":\"a\"}]}]", "messages[0].content[0].type",
       "missing_required_parameter"},
      {"[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]", "messages[0].content[0].text",
       "missing_required_parameter"},
      {"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":1}]}]",
       "messages[0].content[0].text", "invalid_type"},
      {"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\",\"x\":1}]}]",
       "messages[0].content[0].x", "unknown_parameter"},
      {"[{\"role\":\"user\",\"content\":[\"a\"]}]", "messages[0].content[0]", "invalid_type"},
      {"[{\"role\":\"user\",\"content\":\"x\",\"name\":1}]", "messages[0].name", "invalid_type"},
      {"[{\"role\":\"tool\",\"content\":\"x\",\"tool_call_id\":1}]", "messages[0].tool_call_id",
       "invalid_type"},
      {"[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]", "messages[0].tool_calls",
       "invalid_value"},
      {"[{\"role\":\"assistant\",\"content\":\"x\",\"tool_calls\":{}}]", "messages[0].tool_calls",
       "invalid_type"},
      {"[{\"role\":\"assistant\",\"tool_calls\":[{\"type\":\"function\"}]}]",
       "messages[0].tool_calls[0].function", "missing_required_parameter"},
      {"[{\"role\":\"assistant\",\"tool_calls\":[{\"type\":\"web\",\"function\":{\"name\":\"f\","
       "\"arguments\":\"{}\"}}]}]",
       "messages[0].tool_calls[0].type", "unsupported_value"},
      {"[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":5,\"function\":{\"name\":\"f\","
       "\"arguments\":\"{}\"}}]}]",
       "messages[0].tool_calls[0].id", "invalid_type"},
      {"[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"arguments\":\"{}\"}}]}]",
       "messages[0].tool_calls[0].function.name", "missing_required_parameter"},
      {"[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\"}}]}]",
       "messages[0].tool_calls[0].function.arguments", "missing_required_parameter"},
      {"[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":[]}}]}]",
       "messages[0].tool_calls[0].function.arguments", "invalid_type"},
      {"[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"\","
       "\"x\":0}}]}]",
       "messages[0].tool_calls[0].function.x", "unknown_parameter"},
  };
  char body[1024];
  REFUSED(t, TL_SRV_CHAT, "{}", "messages", "missing_required_parameter");
  REFUSED(t, TL_SRV_CHAT, "{\"messages\":null}", "messages", "missing_required_parameter");
  REFUSED(t, TL_SRV_APPLY_TEMPLATE, "{\"messages\":[]}", "messages", "invalid_value");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(body, sizeof body, "{\"messages\":%s}", bad[i].messages);
    REFUSED(t, TL_SRV_CHAT, body, bad[i].param, bad[i].code);
    REFUSED(t, TL_SRV_APPLY_TEMPLATE, body, bad[i].param, bad[i].code);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"model\":5}", "model", "invalid_type");
}

/* model: any string of at most 127 bytes (echoed; r.model holds it), no NUL. */
static void model_names(tl_test_ctx *t) {
  char name[130], body[256];
  tl_srv_request r;
  memset(name, 'm', sizeof name);
  name[127] = '\0';
  snprintf(body, sizeof body, "{\"model\":\"%s\",\"prompt\":\"x\"}", name);
  if (ACCEPTED(t, TL_SRV_COMPLETION, body, &r)) {
    TL_EXPECT_STR(t, r.model, name);
    tl_srv_request_free(&r);
  }
  name[127] = 'm';
  name[128] = '\0';
  snprintf(body, sizeof body, "{\"model\":\"%s\",\"prompt\":\"x\"}", name);
  REFUSED(t, TL_SRV_COMPLETION, body, "model", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"model\":\"a\\u0000b\"}", "model", "invalid_value");
  OK(t, TL_SRV_CHAT, "{" USER_HI ",\"model\":null}");
  OK(t, TL_SRV_CHAT, "{" USER_HI ",\"model\":\"\"}");
  /* every endpoint takes "model": it picks one of several models */
  if (ACCEPTED(t, TL_SRV_TOKENIZE, "{\"content\":\"x\",\"model\":\"m\"}", &r)) {
    TL_EXPECT_STR(t, r.model, "m");
    tl_srv_request_free(&r);
  }
  OK(t, TL_SRV_DETOKENIZE, "{\"tokens\":[],\"model\":\"m\"}");
  OK(t, TL_SRV_APPLY_TEMPLATE, "{" USER_HI ",\"model\":\"m\"}");
  REFUSED(t, TL_SRV_DETOKENIZE, "{\"tokens\":[],\"model\":1}", "model", "invalid_type");
}

/* ---- generation fields ---- */

/* A field's integer bounds: value lo and hi accepted, lo - 1 and hi + 1
 * refused with invalid_value (as decimal text, so 2^64 - 1 can be said). */
static void int_bounds(tl_test_ctx *t, tl_srv_kind kind, const char *prefix, const char *field,
                       const char *below, const char *lo, const char *hi, const char *above) {
  char body[512], param[64];
  const char *const in[] = {lo, hi}, *const out[] = {below, above};
  snprintf(param, sizeof param, "%s", field);
  for (int i = 0; i < 2; i++) {
    snprintf(body, sizeof body, "{%s,\"%s\":%s}", prefix, field, in[i]);
    OK(t, kind, body);
    snprintf(body, sizeof body, "{%s,\"%s\":%s}", prefix, field, out[i]);
    REFUSED(t, kind, body, param, "invalid_value");
  }
  /* an integer field takes JSON integers only */
  snprintf(body, sizeof body, "{%s,\"%s\":%s.0}", prefix, field, lo);
  REFUSED(t, kind, body, param, "invalid_type");
  snprintf(body, sizeof body, "{%s,\"%s\":\"%s\"}", prefix, field, lo);
  REFUSED(t, kind, body, param, "invalid_type");
}

static void integer_fields_at_their_bounds(tl_test_ctx *t) {
  static const char chat[] = USER_HI, comp[] = "\"prompt\":\"x\"";
  int_bounds(t, TL_SRV_CHAT, chat, "max_tokens", "0", "1", "2147483647", "2147483648");
  int_bounds(t, TL_SRV_CHAT, chat, "max_completion_tokens", "0", "1", "2147483647", "2147483648");
  int_bounds(t, TL_SRV_COMPLETION, comp, "max_tokens", "0", "1", "2147483647", "2147483648");
  int_bounds(t, TL_SRV_CHAT, chat, "top_k", "-1", "0", "1000", "1001"); /* 0..vocab */
  int_bounds(t, TL_SRV_COMPLETION, comp, "top_k", "-1", "0", "1000", "1001");
  int_bounds(t, TL_SRV_CHAT, chat, "n", "0", "1", "16", "17");
  int_bounds(t, TL_SRV_COMPLETION, comp, "n", "0", "1", "16", "17");
  int_bounds(t, TL_SRV_CHAT, chat, "seed", "-1", "0", "18446744073709551615",
             "18446744073709551616");
  int_bounds(t, TL_SRV_COMPLETION, comp, "seed", "-1", "0", "18446744073709551615",
             "18446744073709551616");
  int_bounds(t, TL_SRV_CHAT, USER_HI ",\"logprobs\":true", "top_logprobs", "-1", "0", "20", "21");
  int_bounds(t, TL_SRV_COMPLETION, comp, "logprobs", "-1", "0", "5", "6");
  /* past int64 (which jansson cannot hold) is out of range too, not bad JSON */
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"max_tokens\":99999999999999999999999}", "max_tokens",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"n\":-9223372036854775809}", "n", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"n\":9223372036854775807}", "n", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"n\":-9223372036854775808}", "n", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"seed\":-999}", "seed", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"max_tokens\":true}", "max_tokens", "invalid_type");
}

static void detokenize_ids_below_the_vocabulary(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_DETOKENIZE, "{\"tokens\":[0,999,5]}", &r)) {
    TL_EXPECT_EQ_U64(t, r.n_ids, 3);
    TL_EXPECT(t, r.ids[0] == 0 && r.ids[1] == 999 && r.ids[2] == 5);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_DETOKENIZE, "{\"tokens\":[]}", &r)) {
    TL_EXPECT_EQ_U64(t, r.n_ids, 0);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_DETOKENIZE, "{\"tokens\":[0,1000]}", "tokens[1]", "invalid_value");
  REFUSED(t, TL_SRV_DETOKENIZE, "{\"tokens\":[0,-1]}", "tokens[1]", "invalid_value");
  REFUSED(t, TL_SRV_DETOKENIZE, "{\"tokens\":[1.5]}", "tokens[0]", "invalid_type");
  REFUSED(t, TL_SRV_DETOKENIZE, "{\"tokens\":[\"1\"]}", "tokens[0]", "invalid_type");
  REFUSED(t, TL_SRV_DETOKENIZE, "{\"tokens\":5}", "tokens", "invalid_type");
  REFUSED(t, TL_SRV_DETOKENIZE, "{}", "tokens", "missing_required_parameter");
}

/* A number field's range: the bounds accepted, just past them refused. */
static void num_bounds(tl_test_ctx *t, const char *field, const char *below, const char *lo,
                       const char *hi, const char *above) {
  char body[256];
  const char *const in[] = {lo, hi}, *const out[] = {below, above};
  for (int i = 0; i < 2; i++) {
    snprintf(body, sizeof body, "{" USER_HI ",\"%s\":%s}", field, in[i]);
    OK(t, TL_SRV_CHAT, body);
    snprintf(body, sizeof body, "{" USER_HI ",\"%s\":%s}", field, out[i]);
    REFUSED(t, TL_SRV_CHAT, body, field, "invalid_value");
  }
  snprintf(body, sizeof body, "{" USER_HI ",\"%s\":\"1\"}", field);
  REFUSED(t, TL_SRV_CHAT, body, field, "invalid_type");
}

static void sampling_values_and_given(tl_test_ctx *t) {
  tl_srv_request r;
  num_bounds(t, "temperature", "-0.0001", "0", "2", "2.0001");
  num_bounds(t, "top_p", "-1e-9", "0", "1", "1.000001");
  num_bounds(t, "min_p", "-0.5", "0.0", "1.0", "1.5");
  num_bounds(t, "repeat_penalty", "0", "1e-300", "18446744073709551616.0", "1.9e19");
  if (ACCEPTED(t, TL_SRV_CHAT,
               "{" USER_HI ",\"temperature\":0.7,\"top_p\":0.9,\"top_k\":40,\"min_p\":0.05,"
               "\"repeat_penalty\":1.1,\"seed\":18446744073709551615}",
               &r)) {
    TL_EXPECT_EQ_U64(t, r.given, TL_GIVEN_TEMPERATURE | TL_GIVEN_TOP_P | TL_GIVEN_TOP_K |
                                     TL_GIVEN_MIN_P | TL_GIVEN_REPEAT_PENALTY);
    TL_EXPECT(t, r.temperature == 0.7 && r.top_p == 0.9 && r.top_k == 40 && r.min_p == 0.05 &&
                     r.repeat_penalty == 1.1);
    TL_EXPECT(t, r.has_seed && r.seed == UINT64_MAX);
    tl_srv_request_free(&r);
  }
  /* null is "not given" */
  if (ACCEPTED(t, TL_SRV_CHAT,
               "{" USER_HI ",\"temperature\":null,\"top_p\":null,\"top_k\":null,\"min_p\":null,"
               "\"repeat_penalty\":null,\"seed\":null}",
               &r)) {
    TL_EXPECT_EQ_U64(t, r.given, 0);
    TL_EXPECT(t, !r.has_seed);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"top_k\":0,\"temperature\":1,\"seed\":7}",
               &r)) {
    TL_EXPECT_EQ_U64(t, r.given, TL_GIVEN_TOP_K | TL_GIVEN_TEMPERATURE);
    TL_EXPECT(t, r.top_k == 0 && r.temperature == 1 && r.has_seed && r.seed == 7);
    tl_srv_request_free(&r);
  }
  /* seeds past int64 keep their value */
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"seed\":9223372036854775808}", &r)) {
    TL_EXPECT(t, r.seed == (uint64_t)INT64_MAX + 1);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"seed\": 12345678901234567890 }", &r)) {
    TL_EXPECT(t, r.seed == 12345678901234567890u);
    tl_srv_request_free(&r);
  }
  /* both max_tokens spellings: one, or the same value */
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"max_completion_tokens\":7}", &r)) {
    TL_EXPECT_EQ_U64(t, r.max_tokens, 7);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"max_tokens\":7,\"max_completion_tokens\":7}", &r)) {
    TL_EXPECT_EQ_U64(t, r.max_tokens, 7);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"max_tokens\":7,\"max_completion_tokens\":8}",
          "max_completion_tokens", "invalid_value");
}

/* OpenAI's penalties in [-2, 2]; llama-server's repeat_last_n: -1 the
 * whole context, 0 off, absent 64 when a repeat_penalty is given (its
 * default), else 0 (the artifact's own penalty, if any, stays as it was). */
static void penalties_and_the_repeat_window(tl_test_ctx *t) {
  tl_srv_request r;
  num_bounds(t, "frequency_penalty", "-2.0001", "-2", "2", "2.0001");
  num_bounds(t, "presence_penalty", "-2.0000001", "-2.0", "2.0", "3");
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"frequency_penalty\":0.5,\"presence_penalty\":-1.25}",
               &r)) {
    TL_EXPECT(t, r.frequency_penalty == 0.5 && r.presence_penalty == -1.25);
    TL_EXPECT_EQ_U64(t, r.repeat_window, 0);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"repeat_penalty\":1.5}", &r)) {
    TL_EXPECT_EQ_U64(t, r.repeat_window, 64);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"repeat_penalty\":1.5,\"repeat_last_n\":-1}", &r)) {
    TL_EXPECT_EQ_U64(t, r.repeat_window, UINT32_MAX);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"repeat_penalty\":1.5,\"repeat_last_n\":0}", &r)) {
    TL_EXPECT_EQ_U64(t, r.repeat_window, 0);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"repeat_last_n\":4294967295}", &r)) {
    TL_EXPECT_EQ_U64(t, r.repeat_window, UINT32_MAX);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"repeat_last_n\":null,\"frequency_penalty\":null}",
               &r)) {
    TL_EXPECT(t, r.repeat_window == 0 && r.frequency_penalty == 0);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"repeat_last_n\":-2}", "repeat_last_n", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"repeat_last_n\":4294967296}", "repeat_last_n",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"repeat_last_n\":1.5}", "repeat_last_n", "invalid_type");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"presence_penalty\":false}", "presence_penalty",
          "invalid_type");
}

static void stop_strings(tl_test_ctx *t) {
  char body[1024], s256[257], s257[258];
  tl_srv_request r;
  memset(s256, 'a', 256);
  s256[256] = '\0';
  memset(s257, 'a', 257);
  s257[257] = '\0';
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"stop\":\"\\n\\n\"}", &r)) {
    TL_EXPECT_EQ_U64(t, r.n_stops, 1);
    TL_EXPECT(t, r.stop_lens[0] == 2 && memcmp(r.stops[0], "\n\n", 3) == 0);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION,
               "{\"prompt\":\"x\",\"stop\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"a\\u0000b\"]}",
               &r)) {
    TL_EXPECT_EQ_U64(t, r.n_stops, 8);
    TL_EXPECT(t, r.stop_lens[0] == 1 && strcmp(r.stops[6], "7") == 0);
    TL_EXPECT(t, r.stop_lens[7] == 3 && memcmp(r.stops[7], "a\0b", 4) == 0);
    tl_srv_request_free(&r);
  }
  snprintf(body, sizeof body, "{" USER_HI ",\"stop\":[\"%s\"]}", s256);
  OK(t, TL_SRV_CHAT, body);
  OK(t, TL_SRV_CHAT, "{" USER_HI ",\"stop\":null}");
  snprintf(body, sizeof body, "{" USER_HI ",\"stop\":[\"x\",\"%s\"]}", s257);
  REFUSED(t, TL_SRV_CHAT, body, "stop[1]", "invalid_value");
  snprintf(body, sizeof body, "{" USER_HI ",\"stop\":\"%s\"}", s257);
  REFUSED(t, TL_SRV_CHAT, body, "stop", "invalid_value");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"stop\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\"]}", "stop",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"stop\":[]}", "stop", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"stop\":\"\"}", "stop", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"stop\":[\"a\",\"\"]}", "stop[1]", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"stop\":[\"a\",1]}", "stop[1]", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"stop\":{}}", "stop", "invalid_type");
  /* a later field's refusal frees the stops already read (ASan checks) */
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"stop\":[\"a\",\"b\"],\"logit_bias\":{\"1\":500}}",
          "logit_bias", "invalid_value");
}

static void logit_bias_bans_and_biases(tl_test_ctx *t) {
  tl_srv_request r;
  char *body;
  size_t n;
  if (ACCEPTED(t, TL_SRV_CHAT,
               "{" USER_HI ",\"logit_bias\":{\"999\":-100,\"5\":-100,\"7\":0,\"0\":-100.0,\"42\":"
               "-0.0,\"6\":-100}}",
               &r)) {
    TL_EXPECT_EQ_U64(t, r.n_ban, 4);
    if (r.n_ban == 4) TL_EXPECT(t, r.ban[0] == 0 && r.ban[1] == 5 && r.ban[2] == 6 && r.ban[3] == 999);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"logit_bias\":{\"3\":0}}", &r)) {
    TL_EXPECT_EQ_U64(t, r.n_ban, 0);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"1000\":-100}}", "logit_bias",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"-1\":-100}}", "logit_bias",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"01\":-100}}", "logit_bias",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"\":-100}}", "logit_bias",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"1 \":-100}}", "logit_bias",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"99999999999\":-100}}", "logit_bias",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"1\":-100.5}}", "logit_bias",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"1\":101}}", "logit_bias",
          "invalid_value");
  /* any other value is a bias, ids ascending; 0 and -0 are dropped */
  if (ACCEPTED(t, TL_SRV_CHAT,
               "{" USER_HI ",\"logit_bias\":{\"9\":100,\"1\":-99.9,\"4\":-100,\"3\":0,"
               "\"2\":0.25}}",
               &r)) {
    TL_EXPECT_EQ_U64(t, r.n_ban, 1);
    if (TL_EXPECT_EQ_U64(t, r.n_bias, 3))
      TL_EXPECT(t, r.bias_ids[0] == 1 && r.bias[0] == -99.9 && r.bias_ids[1] == 2 &&
                       r.bias[1] == 0.25 && r.bias_ids[2] == 9 && r.bias[2] == 100);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":{\"1\":\"-100\"}}", "logit_bias",
          "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logit_bias\":[1]}", "logit_bias", "invalid_type");
  /* at most TL_SRV_MAX_BANS entries: 1000 ids fill a vocabulary of 1000,
   * so the 1025-entry body is checked against a larger one */
  body = malloc(20 * (TL_SRV_MAX_BANS + 2) + 64);
  if (!TL_EXPECT(t, body != NULL)) return;
  for (size_t count = TL_SRV_MAX_BANS; count <= TL_SRV_MAX_BANS + 1; count++) {
    tl_srv_error e;
    tl_status st;
    n = (size_t)sprintf(body, "{" USER_HI ",\"logit_bias\":{");
    for (size_t i = count; i-- > 0;) /* descending: the ban list comes back ascending */
      n += (size_t)sprintf(body + n, "\"%zu\":-100%s", i, i > 0 ? "," : "");
    strcpy(body + n, "}}");
    st = tl_srv_request_parse(TL_SRV_CHAT, (const uint8_t *)body, strlen(body), 4096, &r, &e);
    if (count == TL_SRV_MAX_BANS) {
      if (TL_EXPECT_OK(t, st)) {
        bool ascending = r.n_ban == TL_SRV_MAX_BANS;
        for (size_t i = 0; ascending && i < r.n_ban; i++) ascending = r.ban[i] == i;
        TL_EXPECT(t, ascending);
        tl_srv_request_free(&r);
      }
    } else {
      TL_EXPECT_STATUS(t, st, TL_ERR_INVALID_ARGUMENT);
      TL_EXPECT_STR(t, e.param, "logit_bias");
      TL_EXPECT_STR(t, e.code, "invalid_value");
    }
  }
  free(body);
}

static void logprobs_fields(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"logprobs\":true,\"top_logprobs\":3}", &r)) {
    TL_EXPECT(t, r.logprobs && r.top_logprobs == 3);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"logprobs\":true}", &r)) {
    TL_EXPECT(t, r.logprobs && r.top_logprobs == 0);
    tl_srv_request_free(&r);
  }
  OK(t, TL_SRV_CHAT, "{" USER_HI ",\"logprobs\":false,\"top_logprobs\":null}");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"top_logprobs\":2}", "top_logprobs", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logprobs\":false,\"top_logprobs\":0}", "top_logprobs",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"logprobs\":1}", "logprobs", "invalid_type");
  /* completions: an integer 0..5 is top_logprobs; null is none */
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"logprobs\":0}", &r)) {
    TL_EXPECT(t, r.logprobs && r.top_logprobs == 0);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"logprobs\":null}", &r)) {
    TL_EXPECT(t, !r.logprobs && r.top_logprobs == 0);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"logprobs\":true}", "logprobs", "invalid_type");
}

static void response_format_stream_and_ignored_fields(tl_test_ctx *t) {
  tl_srv_request r;
  OK(t, TL_SRV_CHAT, "{" USER_HI ",\"response_format\":{\"type\":\"text\"}}");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"response_format\":{\"type\":\"xml\"}}",
          "response_format.type", "unsupported_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"response_format\":{\"type\":\"text\",\"x\":1}}",
          "response_format.x", "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"response_format\":{}}", "response_format.type",
          "missing_required_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"response_format\":\"text\"}", "response_format",
          "invalid_type");
  if (ACCEPTED(t, TL_SRV_CHAT,
               "{" USER_HI ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}", &r)) {
    TL_EXPECT(t, r.stream && r.include_usage);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{}}",
               &r)) {
    TL_EXPECT(t, r.stream && !r.include_usage);
    tl_srv_request_free(&r);
  }
  OK(t, TL_SRV_CHAT, "{" USER_HI ",\"stream\":false,\"stream_options\":null}");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"stream_options\":{\"include_usage\":true}}",
          "stream_options", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"stream\":true,\"stream_options\":{\"x\":true}}",
          "stream_options.x", "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"stream\":true,\"stream_options\":{\"include_usage\":\"yes\"}}",
          "stream_options.include_usage", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"stream\":1}", "stream", "invalid_type");
  OK(t, TL_SRV_CHAT,
     "{" USER_HI ",\"user\":\"u\",\"store\":false,\"metadata\":{\"k\":\"v\"},\"service_tier\":"
     "\"auto\",\"parallel_tool_calls\":true}");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"user\":1}", "user", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"store\":\"no\"}", "store", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"metadata\":[]}", "metadata", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"service_tier\":0}", "service_tier", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"parallel_tool_calls\":0}", "parallel_tool_calls",
          "invalid_type");
}

/* ---- structured output ---- */

#define TOOL_G "{\"type\":\"function\",\"function\":{\"name\":\"g\"}}"

static void response_formats(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"response_format\":{\"type\":\"text\"}}", &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_TEXT && r.format_text == NULL);
    TL_EXPECT(t, !tl_srv_request_constrained(&r));
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"response_format\":{\"type\":\"json_object\"}}", &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_JSON_OBJECT && r.format_text == NULL);
    TL_EXPECT_STR(t, r.format_param, "response_format");
    TL_EXPECT(t, tl_srv_request_constrained(&r));
    tl_srv_request_free(&r);
  }
  /* the schema kept as compact JSON, its member order as given */
  if (ACCEPTED(t, TL_SRV_CHAT,
               "{" USER_HI ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{"
               "\"name\":\"n\",\"description\":\"d\",\"strict\":true,\"schema\":{\"type\": "
               "\"object\", \"required\":[\"b\"],\"properties\":{\"b\":{\"type\":\"integer\"}}}}}}",
               &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_JSON_SCHEMA);
    TL_EXPECT_STR(t, r.format_text,
                  "{\"type\":\"object\",\"required\":[\"b\"],\"properties\":{\"b\":{\"type\":"
                  "\"integer\"}}}");
    TL_EXPECT_EQ_U64(t, r.format_len, strlen(r.format_text));
    TL_EXPECT_STR(t, r.format_param, "response_format.json_schema.schema");
    tl_srv_request_free(&r);
  }
  /* strict false and a boolean schema */
  if (ACCEPTED(t, TL_SRV_CHAT,
               "{" USER_HI ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{"
               "\"name\":\"n\",\"strict\":false,\"schema\":true}}}",
               &r)) {
    TL_EXPECT_STR(t, r.format_text, "true");
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"response_format\":{\"type\":\"json_object\",\"x\":1}}",
          "response_format.x", "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"response_format\":{\"type\":\"json_schema\"}}",
          "response_format.json_schema", "missing_required_parameter");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{}}}",
          "response_format.json_schema.name", "missing_required_parameter");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":"
          "\"n\"}}}",
          "response_format.json_schema.schema", "missing_required_parameter");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":"
          "\"n\",\"schema\":[]}}}",
          "response_format.json_schema.schema", "invalid_type");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":"
          "\"n\",\"schema\":{},\"strict\":\"yes\"}}}",
          "response_format.json_schema.strict", "invalid_type");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":"
          "\"n\",\"schema\":{},\"format\":1}}}",
          "response_format.json_schema.format", "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":\"s\"}}",
          "response_format.json_schema", "invalid_type");
}

static void tool_choices(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "," TOOL_G "],\"tool_choice\":"
               "\"required\"}", &r)) {
    TL_EXPECT(t, r.tool_choice == TL_SRV_TOOLS_REQUIRED && r.has_tools && r.parallel_tool_calls);
    TL_EXPECT_STR(t, r.tools, "[" TOOL_F "," TOOL_G "]");
    TL_EXPECT(t, tl_srv_request_constrained(&r));
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "," TOOL_G "],\"tool_choice\":"
               "{\"type\":\"function\",\"function\":{\"name\":\"g\"}},\"parallel_tool_calls\":false}",
               &r)) {
    TL_EXPECT(t, r.tool_choice == TL_SRV_TOOLS_NAMED && r.forced_tool == 1 && !r.parallel_tool_calls);
    tl_srv_request_free(&r);
  }
  /* auto: free text, calls parsed out of it */
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "]}", &r)) {
    TL_EXPECT(t, r.tool_choice == TL_SRV_TOOLS_AUTO && !tl_srv_request_constrained(&r));
    tl_srv_request_free(&r);
  }
  /* "none" leaves no tools to call */
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":\"none\"}", &r)) {
    TL_EXPECT(t, r.tool_choice == TL_SRV_TOOLS_NONE && r.tools == NULL);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tool_choice\":\"required\"}", "tool_choice",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[],\"tool_choice\":\"required\"}", "tool_choice",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":{\"type\":\"function\",\"function\":"
          "{\"name\":\"h\"}}}",
          "tool_choice.function.name", "invalid_value");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}",
          "tool_choice.function.name", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":{\"type\":\"custom\"}}",
          "tool_choice.type", "unsupported_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":{\"type\":\"function\"}}",
          "tool_choice.function", "missing_required_parameter");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":{\"type\":\"function\",\"function\":"
          "{\"name\":\"f\",\"x\":1}}}",
          "tool_choice.function.x", "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":{\"type\":\"function\",\"function\":"
          "{\"name\":1}}}",
          "tool_choice.function.name", "invalid_type");
}

static void grammars_and_their_conflicts(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"grammar\":\"root ::= \\\"a\\\"\"}", &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_GRAMMAR && r.format_len == 12);
    TL_EXPECT_STR(t, r.format_text, "root ::= \"a\"");
    TL_EXPECT_STR(t, r.format_param, "grammar");
    tl_srv_request_free(&r);
  }
  /* "" as not given (llama-server's default) */
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"grammar\":\"\"}", &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_TEXT && !tl_srv_request_constrained(&r));
    tl_srv_request_free(&r);
  }
  /* a grammar beside tool_choice auto: the grammar alone constrains */
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"tools\":[" TOOL_F "],\"grammar\":\"root ::= \\\"a\\\"\"}",
               &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_GRAMMAR && r.tool_choice == TL_SRV_TOOLS_AUTO);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"grammar\":\"root ::= [a-z]+\"}", &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_GRAMMAR);
    TL_EXPECT_STR(t, r.format_text, "root ::= [a-z]+");
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"json_schema\":{\"type\":\"string\"}}", &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_JSON_SCHEMA);
    TL_EXPECT_STR(t, r.format_text, "{\"type\":\"string\"}");
    TL_EXPECT_STR(t, r.format_param, "json_schema");
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"grammar\":1}", "grammar", "invalid_type");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"response_format\":{\"type\":\"json_object\"},\"grammar\":\"root ::= "
          "\\\"a\\\"\"}",
          "grammar", "invalid_value");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"tools\":[" TOOL_F "],\"tool_choice\":\"required\",\"grammar\":\"root ::= "
          "\\\"a\\\"\"}",
          "grammar", "invalid_value");
  REFUSED(t, TL_SRV_COMPLETION,
          "{\"prompt\":\"x\",\"json_schema\":{},\"grammar\":\"root ::= [a-z]\"}", "grammar",
          "invalid_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"json_schema\":\"{}\"}", "json_schema",
          "invalid_type");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"response_format\":{\"type\":\"text\"}}",
          "response_format", "unknown_parameter");
}

/* ---- completions, tokenize ---- */

static void completion_prompt_and_defaults(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"model\":\"m\",\"prompt\":\"Once upon\"}", &r)) {
    TL_EXPECT_EQ_U64(t, r.kind, TL_SRV_COMPLETION);
    TL_EXPECT(t, r.prompt_len == 9 && strcmp(r.prompt, "Once upon") == 0);
    TL_EXPECT_EQ_U64(t, r.max_tokens, 16); /* OpenAI's default */
    TL_EXPECT(t, r.n == 1 && r.given == 0 && !r.logprobs && r.conversation == NULL);
    TL_EXPECT_STR(t, r.model, "m");
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":[\"one\"],\"max_tokens\":null}", &r)) {
    TL_EXPECT(t, r.prompt_len == 3 && strcmp(r.prompt, "one") == 0 && r.max_tokens == 16);
    tl_srv_request_free(&r);
  }
  OK(t, TL_SRV_COMPLETION,
     "{\"prompt\":\"x\",\"echo\":false,\"best_of\":1,\"suffix\":null,\"user\":\"u\"}");
  REFUSED(t, TL_SRV_COMPLETION, "{}", "prompt", "missing_required_parameter");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"\"}", "prompt", "invalid_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":[\"a\",\"b\"]}", "prompt", "unsupported_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":[]}", "prompt", "unsupported_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":[[1,2]]}", "prompt[0]", "unsupported_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":[7]}", "prompt[0]", "unsupported_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":7}", "prompt", "invalid_type");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"echo\":true}", "echo", "unsupported_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"echo\":1}", "echo", "invalid_type");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"best_of\":2}", "best_of", "unsupported_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"best_of\":0}", "best_of", "unsupported_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"best_of\":1.0}", "best_of", "invalid_type");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"suffix\":\"\"}", "suffix", "unsupported_value");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"user\":[]}", "user", "invalid_type");
}

static void tokenize_content(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_TOKENIZE, "{\"content\":\"a\\u0000\xc3\xa9\",\"with_pieces\":true}", &r)) {
    TL_EXPECT(t, r.prompt_len == 4 && memcmp(r.prompt, "a\0\xc3\xa9", 5) == 0 && r.with_pieces);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_TOKENIZE, "{\"content\":\"\"}", &r)) {
    TL_EXPECT(t, r.prompt_len == 0 && r.prompt != NULL && r.prompt[0] == '\0' && !r.with_pieces);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_TOKENIZE, "{}", "content", "missing_required_parameter");
  REFUSED(t, TL_SRV_TOKENIZE, "{\"content\":[1]}", "content", "invalid_type");
  REFUSED(t, TL_SRV_TOKENIZE, "{\"content\":\"x\",\"with_pieces\":\"y\"}", "with_pieces",
          "invalid_type");
  /* an escaped lone surrogate is not text (jansson refuses it) */
  REFUSED(t, TL_SRV_TOKENIZE, "{\"content\":\"\\ud800\"}", "", "invalid_json");
}

/* ---- the error struct ---- */

static void error_set_types_and_utf8(tl_test_ctx *t) {
  static const struct {
    int status;
    const char *type;
  } types[] = {{400, "invalid_request_error"}, {404, "invalid_request_error"},
               {405, "invalid_request_error"}, {413, "invalid_request_error"},
               {401, "authentication_error"},  {500, "server_error"},
               {503, "server_error"}};
  tl_srv_error e;
  char long_text[600];
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    tl_srv_error_set(&e, types[i].status, NULL, NULL, NULL, "m%d", types[i].status);
    TL_EXPECT_STR(t, e.type, types[i].type);
    TL_EXPECT_EQ_U64(t, e.status, types[i].status);
    TL_EXPECT(t, e.param[0] == '\0' && e.code[0] == '\0');
  }
  tl_srv_error_set(&e, 503, "server_error", "", "queue_full", "the queue is full (%d)", 64);
  TL_EXPECT_STR(t, e.code, "queue_full");
  TL_EXPECT_STR(t, e.message, "the queue is full (64)");
  /* 3-byte characters past the message's room: cut at a character */
  for (size_t i = 0; i + 3 < sizeof long_text; i += 3) memcpy(long_text + i, "\xe2\x9c\x93", 3);
  long_text[sizeof long_text - 1 - (sizeof long_text - 1) % 3] = '\0';
  tl_srv_error_set(&e, 400, NULL, long_text, "c", "%s", long_text);
  TL_EXPECT(t, tl_utf8_validate((const uint8_t *)e.message, strlen(e.message), NULL) == TL_OK);
  TL_EXPECT(t, tl_utf8_validate((const uint8_t *)e.param, strlen(e.param), NULL) == TL_OK);
  TL_EXPECT(t, strlen(e.message) > 500 && strlen(e.param) > 90);
  /* a long unknown field is named as far as the param holds, whole characters */
  {
    char body[800];
    snprintf(body, sizeof body, "{\"%s\":1}", long_text);
    REFUSED(t, TL_SRV_DETOKENIZE, body, e.param, "unknown_parameter");
  }
}

static void free_is_safe_on_zeroed_and_freed(tl_test_ctx *t) {
  tl_srv_request r;
  memset(&r, 0, sizeof r);
  tl_srv_request_free(&r);
  TL_EXPECT(t, all_zero(&r, sizeof r));
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"stop\":\"x\",\"logit_bias\":{\"1\":-100}}", &r)) {
    tl_srv_request_free(&r);
    TL_EXPECT(t, all_zero(&r, sizeof r));
    tl_srv_request_free(&r); /* twice: still nothing */
  }
}

static const tl_test_case cases[] = {
    TL_CASE(body_must_be_utf8_with_the_offset),
    TL_CASE(body_must_be_a_json_object),
    TL_CASE(nesting_deeper_than_64_is_refused),
    TL_CASE(value_count_is_bounded),
    TL_CASE(unknown_fields_are_named),
    TL_CASE(chat_defaults),
    TL_CASE(chat_messages_become_the_conversation),
    TL_CASE(chat_tools_tool_choice_and_thinking),
    TL_CASE(chat_message_refusals),
    TL_CASE(model_names),
    TL_CASE(integer_fields_at_their_bounds),
    TL_CASE(detokenize_ids_below_the_vocabulary),
    TL_CASE(sampling_values_and_given),
    TL_CASE(penalties_and_the_repeat_window),
    TL_CASE(stop_strings),
    TL_CASE(logit_bias_bans_and_biases),
    TL_CASE(logprobs_fields),
    TL_CASE(response_format_stream_and_ignored_fields),
    TL_CASE(response_formats),
    TL_CASE(tool_choices),
    TL_CASE(grammars_and_their_conflicts),
    TL_CASE(reasoning_effort_and_format),
    TL_CASE(completion_prompt_and_defaults),
    TL_CASE(tokenize_content),
    TL_CASE(error_set_types_and_utf8),
    TL_CASE(free_is_safe_on_zeroed_and_freed),
};
TL_SUITE(serve_request, cases);
