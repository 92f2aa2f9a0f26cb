/* The grammars of `tinylm serve`'s structured output (serve_grammar.h), as
 * docs/server.md states them: each request's grammar run over texts by the
 * core's matcher on a vocabulary of the 256 single bytes, texts the
 * contract admits accepted to the end, texts it excludes refused; and the
 * refusals' status, param and code. */
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "grammar/grammar.h"
#include "serve_grammar.h"
#include "serve_request.h"
#include "tl_test.h"

#define USER "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
#define ADD                                                                                     \
  "{\"type\":\"function\",\"function\":{\"name\":\"add\",\"parameters\":{\"type\":\"object\"," \
  "\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"}},\"required\":"   \
  "[\"a\",\"b\"],\"additionalProperties\":false}}}"
#define NOW "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}"
#define CALL_ADD "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 22}}\n</tool_call>"
#define CALL_NOW "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"

/* The request's grammar (NULL when it has none or was refused: then e). */
static tl_srv_grammar *compile(tl_test_ctx *t, tl_srv_kind kind, const char *body,
                               tl_srv_error *e) {
  tl_srv_request r;
  tl_srv_grammar *g = NULL;
  if (!TL_EXPECT_OK(t, tl_srv_request_parse(kind, (const uint8_t *)body, strlen(body), 1000, &r, e)))
    return NULL;
  (void)tl_srv_grammar_compile(&r, &g, e);
  tl_srv_request_free(&r); /* the grammar lives on its own */
  return g;
}

/* Whether text is a whole sentence of g (false also when a prefix of it
 * already leaves the language). */
static bool sentence(tl_test_ctx *t, const tl_srv_grammar *g, const char *text) {
  static uint8_t bytes[256];
  static const uint8_t *ptrs[256];
  static uint32_t lens[256];
  size_t cap = 64u << 20;
  void *mem = malloc(cap);
  tl_arena a;
  const tl_gvocab *v;
  tl_gmatcher *m;
  bool ok = false;
  for (int i = 0; i < 256; i++) {
    bytes[i] = (uint8_t)i;
    ptrs[i] = &bytes[i];
    lens[i] = 1;
  }
  if (TL_EXPECT(t, mem != NULL) && TL_EXPECT_OK(t, tl_arena_init(&a, mem, cap)) &&
      TL_EXPECT_OK(t, tl_gvocab_build(&a, 256, ptrs, lens, &v)) &&
      TL_EXPECT_OK(t, tl_gmatcher_new(&a, tl_srv_grammar_get(g), v, 0, &m)))
    ok = tl_gmatcher_accept(m, (const uint8_t *)text, strlen(text)) == TL_OK &&
         tl_gmatcher_accepting(m);
  free(mem);
  return ok;
}

static void required_calls_of_the_tools(tl_test_ctx *t) {
  tl_srv_error e;
  tl_srv_grammar *g = compile(t, TL_SRV_CHAT,
                              "{" USER ",\"tools\":[" ADD "," NOW "],\"tool_choice\":\"required\"}", &e);
  if (!TL_EXPECT(t, g != NULL)) return;
  TL_EXPECT(t, sentence(t, g, CALL_ADD));
  TL_EXPECT(t, sentence(t, g, CALL_NOW));
  TL_EXPECT(t, sentence(t, g, CALL_ADD "\n" CALL_NOW "\n" CALL_ADD)); /* parallel by default */
  TL_EXPECT(t, !sentence(t, g, ""));
  TL_EXPECT(t, !sentence(t, g, "{\"a\": 1}"));
  TL_EXPECT(t, !sentence(t, g, CALL_ADD "\n")); /* a separator promises another call */
  TL_EXPECT(t, !sentence(t, g, CALL_ADD CALL_NOW));
  /* arguments keep to the tool's parameters; a tool without them takes {} */
  TL_EXPECT(t, !sentence(t, g, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>"));
  TL_EXPECT(t, !sentence(t, g, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": \"x\"}}\n</tool_call>"));
  TL_EXPECT(t, !sentence(t, g, "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"a\": 1}}\n</tool_call>"));
  TL_EXPECT(t, !sentence(t, g, "<tool_call>\n{\"name\": \"mul\", \"arguments\": {}}\n</tool_call>"));
  tl_srv_grammar_unref(g);
}

static void a_named_tool_once_without_parallel_calls(tl_test_ctx *t) {
  tl_srv_error e;
  tl_srv_grammar *g = compile(t, TL_SRV_CHAT,
                              "{" USER ",\"tools\":[" ADD "," NOW "],\"tool_choice\":{\"type\":"
                              "\"function\",\"function\":{\"name\":\"now\"}},\"parallel_tool_calls\":false}",
                              &e);
  if (!TL_EXPECT(t, g != NULL)) return;
  TL_EXPECT(t, sentence(t, g, CALL_NOW));
  TL_EXPECT(t, !sentence(t, g, CALL_ADD));
  TL_EXPECT(t, !sentence(t, g, CALL_NOW "\n" CALL_NOW));
  tl_srv_grammar_unref(g);
  /* parameters null: not given */
  g = compile(t, TL_SRV_CHAT,
              "{" USER ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"now\","
              "\"parameters\":null}}],\"tool_choice\":\"required\"}",
              &e);
  if (!TL_EXPECT(t, g != NULL)) return;
  TL_EXPECT(t, sentence(t, g, CALL_NOW));
  tl_srv_grammar_unref(g);
}

static void a_format_beside_auto_tools_is_either(tl_test_ctx *t) {
  tl_srv_error e;
  tl_srv_grammar *g = compile(t, TL_SRV_CHAT,
                              "{" USER ",\"tools\":[" ADD "],\"response_format\":{\"type\":\"json_object\"}}", &e);
  if (!TL_EXPECT(t, g != NULL)) return;
  TL_EXPECT(t, sentence(t, g, "{\"k\": [1, true]}"));
  TL_EXPECT(t, sentence(t, g, CALL_ADD));
  TL_EXPECT(t, !sentence(t, g, "[1]"));
  TL_EXPECT(t, !sentence(t, g, "hello"));
  tl_srv_grammar_unref(g);
}

static void formats_alone(tl_test_ctx *t) {
  tl_srv_error e;
  tl_srv_grammar *g;
  TL_EXPECT(t, compile(t, TL_SRV_CHAT, "{" USER ",\"response_format\":{\"type\":\"text\"}}", &e) == NULL);
  TL_EXPECT(t, compile(t, TL_SRV_CHAT, "{" USER ",\"tools\":[" ADD "]}", &e) == NULL); /* auto: free */
  g = compile(t, TL_SRV_CHAT, "{" USER ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
              "{\"name\":\"n\",\"schema\":{\"enum\":[\"yes\",\"no\"]}}}}", &e);
  if (TL_EXPECT(t, g != NULL)) {
    TL_EXPECT(t, sentence(t, g, "\"yes\""));
    TL_EXPECT(t, !sentence(t, g, "\"maybe\""));
    tl_srv_grammar_unref(g);
  }
  g = compile(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"grammar\":\"root ::= [0-9]+ \\\"!\\\"\"}", &e);
  if (TL_EXPECT(t, g != NULL)) {
    TL_EXPECT(t, sentence(t, g, "42!"));
    TL_EXPECT(t, !sentence(t, g, "42"));
    /* another reference keeps it after the first is dropped */
    TL_EXPECT(t, tl_srv_grammar_ref(g) == g);
    tl_srv_grammar_unref(g);
    TL_EXPECT(t, sentence(t, g, "7!"));
    tl_srv_grammar_unref(g);
  }
}

/* Refused with a 400 naming param, with code, the message holding want. */
static void refused_at(tl_test_ctx *t, tl_srv_kind kind, const char *body, const char *param,
                       const char *code, const char *want, const char *file, int line) {
  tl_srv_error e;
  memset(&e, 0, sizeof e);
  tl_srv_grammar *g = compile(t, kind, body, &e);
  tl_test_check(t, g == NULL, file, line, body);
  tl_srv_grammar_unref(g);
  tl_test_check_u64(t, (uint64_t)e.status, 400, file, line, "status");
  tl_test_check_str(t, e.param, param, file, line, "param");
  tl_test_check_str(t, e.code, code, file, line, "code");
  tl_test_check(t, strstr(e.message, want) != NULL, file, line, e.message);
}
#define REFUSED(t, kind, body, param, code, want) \
  refused_at(t, kind, body, param, code, want, __FILE__, __LINE__)

static void refusals_name_the_field(tl_test_ctx *t) {
  REFUSED(t, TL_SRV_CHAT,
          "{" USER ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"n\","
          "\"schema\":{\"type\":\"object\",\"patternProperties\":{\"^a\":{}}}}}}",
          "response_format.json_schema.schema", "unsupported_value", "patternProperties");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER ",\"tools\":[" NOW ",{\"type\":\"function\",\"function\":{\"name\":\"f\","
          "\"parameters\":{\"type\":\"object\",\"patternProperties\":{}}}}],\"tool_choice\":\"required\"}",
          "tools[1].function.parameters", "unsupported_value", "patternProperties");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"json_schema\":{\"patternProperties\":{}}}",
          "json_schema", "unsupported_value", "patternProperties");
  /* where a grammar goes wrong: line 2 */
  REFUSED(t, TL_SRV_CHAT, "{" USER ",\"grammar\":\"root ::= \\\"a\\\"\\nx ::= (\"}", "grammar",
          "invalid_value", "(line 2, column ");
  REFUSED(t, TL_SRV_CHAT, "{" USER ",\"grammar\":\"root ::= value\"}", "grammar", "invalid_value",
          "value");
}

static const tl_test_case cases[] = {
    TL_CASE(required_calls_of_the_tools),
    TL_CASE(a_named_tool_once_without_parallel_calls),
    TL_CASE(a_format_beside_auto_tools_is_either),
    TL_CASE(formats_alone),
    TL_CASE(refusals_name_the_field),
};
TL_SUITE(serve_grammar, cases);
