/* The access log's lines (serve_log.h): the fields docs/server.md names,
 * a client's path unable to forge a line or break the JSON, token counts
 * only for generations and embeddings. The JSON oracle is jansson's own reader.
 *
 * Planted defects these cases catch (each tried once by hand):
 *   escape() keeps control bytes and '"' -> a_path_cannot_forge_a_line
 *   the token counts always written       -> json_lines_parse_back */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "serve_log.h"
#include "tl_test.h"

static const tl_srv_access gen = {86400 * 365, "00ff", "POST", "/v1/chat/completions", 200, 12.25,
                                  true, 16, 28};

static void text_lines_name_every_field(tl_test_ctx *t) {
  tl_srv_access other = gen;
  char *s = tl_srv_access_line(TL_SRV_LOG_TEXT, &gen);
  TL_EXPECT_STR(t, s,
                "1971-01-01T00:00:00Z id=00ff method=POST path=/v1/chat/completions status=200 "
                "ms=12.2 prompt_tokens=16 completion_tokens=28\n");
  free(s);
  other.has_tokens = false;
  other.method = "GET";
  other.path = "/health";
  other.status = 503;
  s = tl_srv_access_line(TL_SRV_LOG_TEXT, &other);
  TL_EXPECT_STR(t, s, "1971-01-01T00:00:00Z id=00ff method=GET path=/health status=503 ms=12.2\n");
  free(s);
}

static void json_lines_parse_back(tl_test_ctx *t) {
  tl_srv_access other = gen;
  char *s = tl_srv_access_line(TL_SRV_LOG_JSON, &gen);
  json_error_t je;
  json_t *o = s != NULL ? json_loads(s, 0, &je) : NULL;
  TL_EXPECT(t, s != NULL && s[strlen(s) - 1] == '\n' && strchr(s, '\n') == s + strlen(s) - 1);
  TL_EXPECT(t, o != NULL);
  TL_EXPECT_STR(t, json_string_value(json_object_get(o, "time")), "1971-01-01T00:00:00Z");
  TL_EXPECT_STR(t, json_string_value(json_object_get(o, "id")), "00ff");
  TL_EXPECT_STR(t, json_string_value(json_object_get(o, "path")), "/v1/chat/completions");
  TL_EXPECT_EQ_U64(t, (uint64_t)json_integer_value(json_object_get(o, "status")), 200);
  TL_EXPECT(t, json_real_value(json_object_get(o, "ms")) == 12.25);
  TL_EXPECT_EQ_U64(t, (uint64_t)json_integer_value(json_object_get(o, "prompt_tokens")), 16);
  TL_EXPECT_EQ_U64(t, (uint64_t)json_integer_value(json_object_get(o, "completion_tokens")), 28);
  json_decref(o);
  free(s);
  other.has_tokens = false;
  s = tl_srv_access_line(TL_SRV_LOG_JSON, &other);
  o = s != NULL ? json_loads(s, 0, &je) : NULL;
  TL_EXPECT(t, o != NULL && json_object_get(o, "prompt_tokens") == NULL &&
                   json_object_get(o, "completion_tokens") == NULL);
  json_decref(o);
  free(s);
}

static void a_path_cannot_forge_a_line(tl_test_ctx *t) {
  tl_srv_access evil = gen;
  char long_path[1200];
  char *s;
  json_error_t je;
  json_t *o;
  evil.path = "/x\n2026 id=1 status=200\"}\x7f\xc3\xa9 \\";
  s = tl_srv_access_line(TL_SRV_LOG_TEXT, &evil);
  TL_EXPECT(t, s != NULL && strstr(s, "path=/x\\x0a2026\\x20id=1\\x20status=200\\x22}\\x7f\\xc3\\xa9"
                                      "\\x20\\x5c status=200") != NULL);
  TL_EXPECT(t, s != NULL && strchr(s, '\n') == s + strlen(s) - 1);
  free(s);
  s = tl_srv_access_line(TL_SRV_LOG_JSON, &evil);
  o = s != NULL ? json_loads(s, 0, &je) : NULL;
  TL_EXPECT(t, o != NULL && json_integer_value(json_object_get(o, "status")) == 200);
  TL_EXPECT(t, s != NULL && strchr(s, '\n') == s + strlen(s) - 1);
  json_decref(o);
  free(s);
  memset(long_path, 'a', sizeof long_path - 1);
  long_path[sizeof long_path - 1] = '\0';
  evil.path = long_path;
  s = tl_srv_access_line(TL_SRV_LOG_TEXT, &evil);
  TL_EXPECT(t, s != NULL && strstr(s, " status=200 ") != NULL && strlen(s) < 600);
  free(s);
  TL_EXPECT(t, tl_srv_log_format_parse("json", &(tl_srv_log_format){0}));
  TL_EXPECT(t, !tl_srv_log_format_parse("JSON", &(tl_srv_log_format){0}));
}

static const tl_test_case cases[] = {
    TL_CASE(text_lines_name_every_field),
    TL_CASE(json_lines_parse_back),
    TL_CASE(a_path_cannot_forge_a_line),
};
TL_SUITE(serve_log, cases);
