/* /v1/embeddings' request and response (serve_embed.h): the four input
 * shapes, each refusal naming its param, and base64 as Python's
 * base64.b64encode(struct.pack('<Nf', ...)) writes it (the expected
 * strings below were computed that way).
 *
 * Planted defects these cases catch (each tried once by hand):
 *   base64 without '=' padding               -> base64_is_little_endian_float32
 *   big-endian float bytes                   -> base64_is_little_endian_float32
 *   strings and id arrays mixed accepted     -> refusals_name_their_param
 *   dimensions hidden + 1 accepted           -> refusals_name_their_param */
#include <stdlib.h>
#include <string.h>

#include "serve_embed.h"
#include "tl_test.h"

#define VOCAB 100
#define HIDDEN 8

static tl_status parse(const char *body, tl_srv_embed_request *r, tl_srv_error *e) {
  return tl_srv_embed_parse((const uint8_t *)body, strlen(body), VOCAB, HIDDEN, r, e);
}

static void the_four_input_shapes(tl_test_ctx *t) {
  tl_srv_embed_request r;
  tl_srv_error e;
  TL_EXPECT(t, parse("{\"input\": \"hi\", \"model\": \"m\", \"user\": \"u\"}", &r, &e) == TL_OK);
  TL_EXPECT(t, r.n == 1 && r.inputs[0].len == 2 && memcmp(r.inputs[0].text, "hi", 2) == 0 &&
                   r.dims == HIDDEN && !r.base64);
  tl_srv_embed_request_free(&r);
  TL_EXPECT(t, parse("{\"input\": [\"a\", \"bc\"], \"encoding_format\": \"base64\"}", &r, &e) == TL_OK);
  TL_EXPECT(t, r.n == 2 && r.inputs[1].len == 2 && r.base64);
  tl_srv_embed_request_free(&r);
  TL_EXPECT(t, parse("{\"input\": [5, 99], \"dimensions\": 3}", &r, &e) == TL_OK);
  TL_EXPECT(t, r.n == 1 && r.inputs[0].text == NULL && r.inputs[0].n_ids == 2 &&
                   r.inputs[0].ids[1] == 99 && r.dims == 3);
  tl_srv_embed_request_free(&r);
  TL_EXPECT(t, parse("{\"input\": [[1], [2, 3]], \"dimensions\": 8}", &r, &e) == TL_OK);
  TL_EXPECT(t, r.n == 2 && r.inputs[1].n_ids == 2 && r.inputs[1].ids[0] == 2 && r.dims == 8);
  tl_srv_embed_request_free(&r);
}

static void refusals_name_their_param(tl_test_ctx *t) {
  static const struct {
    const char *body, *param, *code;
  } cases[] = {
      {"{\"input\": \"\"}", "input", "invalid_value"},
      {"{\"input\": []}", "input", "invalid_value"},
      {"{\"input\": [[1], []]}", "input", "invalid_value"},
      {"{\"input\": [\"a\", [1]]}", "input", "invalid_value"},
      {"{\"input\": [[1], \"a\"]}", "input", "invalid_value"},
      {"{\"input\": [1, \"a\"]}", "input", "invalid_value"},
      {"{\"input\": [100]}", "input", "invalid_value"},
      {"{\"input\": [-1]}", "input", "invalid_value"},
      {"{\"input\": 7}", "input", "invalid_value"},
      {"{\"model\": \"m\"}", "input", "missing_required_parameter"},
      {"{\"input\": \"x\", \"dimensions\": 0}", "dimensions", "invalid_value"},
      {"{\"input\": \"x\", \"dimensions\": 9}", "dimensions", "invalid_value"},
      {"{\"input\": \"x\", \"dimensions\": 2.5}", "dimensions", "invalid_value"},
      {"{\"input\": \"x\", \"encoding_format\": \"int8\"}", "encoding_format", "invalid_value"},
      {"{\"input\": \"x\", \"model\": 3}", "model", "invalid_value"},
      {"{\"input\": \"x\", \"pooling\": \"mean\"}", "pooling", "unknown_parameter"},
      {"[\"x\"]", "", "invalid_type"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl_srv_embed_request r;
    tl_srv_error e;
    tl_status st = parse(cases[i].body, &r, &e);
    TL_EXPECT(t, st == TL_ERR_INVALID_ARGUMENT && e.status == 400 &&
                     strcmp(e.param, cases[i].param) == 0 && strcmp(e.code, cases[i].code) == 0);
    TL_EXPECT(t, r.inputs == NULL && r.root == NULL);
  }
}

static void at_most_2048_inputs(tl_test_ctx *t) {
  size_t cap = 16 + 4 * (TL_SRV_MAX_EMBED_INPUTS + 1);
  char *body = malloc(cap), *p = body;
  tl_srv_embed_request r;
  tl_srv_error e;
  p += sprintf(p, "{\"input\":[");
  for (int i = 0; i <= TL_SRV_MAX_EMBED_INPUTS; i++) p += sprintf(p, "%s\"a\"", i ? "," : "");
  strcpy(p, "]}");
  TL_EXPECT(t, parse(body, &r, &e) == TL_ERR_INVALID_ARGUMENT && strcmp(e.param, "input") == 0);
  strcpy(p - 4, "]}"); /* one fewer */
  TL_EXPECT(t, parse(body, &r, &e) == TL_OK && r.n == TL_SRV_MAX_EMBED_INPUTS);
  tl_srv_embed_request_free(&r);
  free(body);
}

static void base64_is_little_endian_float32(tl_test_ctx *t) {
  static const struct {
    float v[3];
    uint32_t n;
    const char *want;
  } cases[] = {{{1.0f, -2.0f}, 2, "AACAPwAAAMA="}, {{0.5f}, 1, "AAAAPw=="},
               {{1.0f, 0.25f, -0.0f}, 3, "AACAPwAAgD4AAACA"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *item = tl_srv_embed_item(4, cases[i].v, cases[i].n, true);
    TL_EXPECT_STR(t, json_string_value(json_object_get(item, "embedding")), cases[i].want);
    TL_EXPECT(t, json_integer_value(json_object_get(item, "index")) == 4);
    TL_EXPECT_STR(t, json_string_value(json_object_get(item, "object")), "embedding");
    json_decref(item);
  }
}

static void floats_keep_their_bits(tl_test_ctx *t) {
  const float v[2] = {0.1f, -3.4028235e38f};
  json_t *item = tl_srv_embed_item(0, v, 2, false), *a = json_object_get(item, "embedding");
  TL_EXPECT(t, json_array_size(a) == 2 &&
                   (float)json_real_value(json_array_get(a, 0)) == v[0] &&
                   (float)json_real_value(json_array_get(a, 1)) == v[1]);
  json_decref(item);
}

static const tl_test_case cases[] = {
    TL_CASE(the_four_input_shapes),
    TL_CASE(refusals_name_their_param),
    TL_CASE(at_most_2048_inputs),
    TL_CASE(base64_is_little_endian_float32),
    TL_CASE(floats_keep_their_bits),
};
TL_SUITE(serve_embed, cases);
