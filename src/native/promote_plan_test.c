/* The plan reader (promote_plan.h, docs/promotion.md §The plan): a plan
 * is data in one strict schema; a case is named by the SHA-256 of its
 * canonical JSON (FIPS 180's "abc" digest is the oracle for the hash; the
 * canonical form is jansson's compact sorted dump, checked here on a
 * case whose bytes are written out by hand). */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "promote_plan.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hash/sha256.h"
#include "promote.h"
#include "tl_test.h"

/* A valid plan: one claim of each level's shape. */
static json_t *valid_plan(void) {
  json_t *claims = json_array();
  json_array_append_new(claims, json_pack("{s:s,s:s,s:s,s:s,s:n,s:n,s:[o]}", "name", "artifact",
                                          "kind", "artifact", "level", "mechanical", "oracle",
                                          "the container's digests", "tolerance", "design",
                                          "cases",
                                          tl_plan_case(json_pack("{s:s}", "check", "verify"))));
  json_array_append_new(claims, json_pack("{s:s,s:s,s:s,s:s,s:s,s:n,s:[o]}", "name", "forward",
                                          "kind", "forward", "level", "numerical", "oracle",
                                          "numpy", "tolerance", "scalar-f32-vs-f64/1", "design",
                                          "cases",
                                          tl_plan_case(json_pack("{s:{s:s,s:s},s:s}", "golden",
                                                                 "path", "g.cbor", "sha256",
                                                                 "00", "label", "g"))));
  json_array_append_new(claims, json_pack("{s:s,s:s,s:s,s:s,s:n,s:{s:f},s:[o]}", "name",
                                          "stochastic", "kind", "stochastic", "level",
                                          "stochastic", "oracle", "the other lane", "tolerance",
                                          "design", "confidence", 0.95, "cases",
                                          tl_plan_case(json_pack("{s:[]}", "messages"))));
  return json_pack("{s:s,s:{s:s,s:s,s:n},s:s,s:o}", "format", TL_PLAN_FORMAT, "artifact", "id",
                   "0000000000000000000000000000000000000000000000000000000000000000", "path",
                   "m.slm", "acquisition_receipt", "lane", "fast", "claims", claims);
}

static tl_status parse_json(const json_t *plan, tl_plan *p, char *err, size_t cap) {
  char *text = json_dumps(plan, JSON_COMPACT);
  tl_status st = tl_plan_parse((const uint8_t *)text, strlen(text), p, err, cap);
  free(text);
  return st;
}

static void case_ids_are_sha256_of_compact_sorted_json(tl_test_ctx *t) {
  json_t *c = json_pack("{s:i,s:s}", "b", 1, "a", "x\ty");
  uint8_t id[32], want[32];
  const char canonical[] = "{\"a\":\"x\\ty\",\"b\":1}";
  TL_EXPECT_OK(t, tl_case_id(c, id));
  TL_EXPECT_OK(t, tl_sha256(canonical, strlen(canonical), want));
  TL_EXPECT_MEM(t, id, want, 32);
  json_decref(c);
}

static void a_valid_plan_reads_back(tl_test_ctx *t) {
  json_t *plan = valid_plan();
  tl_plan p;
  char err[512];
  char *text = json_dumps(plan, JSON_COMPACT);
  uint8_t id[32];
  TL_EXPECT_OK(t, tl_plan_parse((const uint8_t *)text, strlen(text), &p, err, sizeof err));
  TL_EXPECT_EQ_U64(t, p.n_claims, 3);
  TL_EXPECT_STR(t, p.lane, "fast");
  TL_EXPECT_STR(t, p.claims[1].tolerance, "scalar-f32-vs-f64/1");
  TL_EXPECT(t, p.claims[0].tolerance == NULL && p.claims[2].design != NULL);
  /* The plan id is the SHA-256 of the bytes as read. */
  TL_EXPECT_OK(t, tl_sha256(text, strlen(text), id));
  TL_EXPECT_MEM(t, p.id, id, 32);
  tl_plan_free(&p);
  free(text);
  json_decref(plan);
}

/* Each edit of a valid plan and the error it must give (status and a
 * fragment of the message naming the field). */
static void every_departure_is_refused_naming_the_field(tl_test_ctx *t) {
  static const struct {
    const char *what, *path, *key; /* set key at path (JSON pointer-ish) */
    const char *value_json;        /* NULL: delete */
    tl_status want;
    const char *fragment;
  } edits[] = {
      {"unknown top field", "", "extra", "1", TL_ERR_INVALID_ARGUMENT, "unknown field 'extra'"},
      {"format", "", "format", "\"tinylm.plan/2\"", TL_ERR_INVALID_ARGUMENT, "format"},
      {"lane", "", "lane", "\"gpu\"", TL_ERR_INVALID_ARGUMENT, "lane"},
      {"missing claims", "", "claims", NULL, TL_ERR_INVALID_ARGUMENT, "missing field 'claims'"},
      {"empty claims", "", "claims", "[]", TL_ERR_INVALID_ARGUMENT, "claims"},
      {"artifact id", "artifact", "id", "\"ABC\"", TL_ERR_INVALID_ARGUMENT, "artifact.id"},
      {"unknown kind", "claims/0", "kind", "\"vibes\"", TL_ERR_INVALID_ARGUMENT, "kind"},
      {"wrong level", "claims/0", "level", "\"numerical\"", TL_ERR_INVALID_ARGUMENT,
       "the kind artifact is mechanical"},
      {"tolerance on a mechanical claim", "claims/0", "tolerance", "\"x\"",
       TL_ERR_INVALID_ARGUMENT, "only numerical"},
      {"design on a numerical claim", "claims/1", "design", "{}", TL_ERR_INVALID_ARGUMENT,
       "only a stochastic claim"},
      {"stochastic without design", "claims/2", "design", "null", TL_ERR_INVALID_ARGUMENT,
       "needs its design"},
      {"name with a space", "claims/0", "name", "\"a b\"", TL_ERR_INVALID_ARGUMENT, "name"},
      {"duplicate name", "claims/1", "name", "\"artifact\"", TL_ERR_INVALID_ARGUMENT,
       "same name"},
      {"no cases", "claims/0", "cases", "[]", TL_ERR_INVALID_ARGUMENT, "cases"},
      {"case edited, id kept", "claims/0/cases/0/case", "check", "\"other\"",
       TL_ERR_HASH_MISMATCH, "does not hash to its id"},
      {"float in a case", "claims/0/cases/0/case", "x", "0.5", TL_ERR_INVALID_ARGUMENT,
       "floating-point"},
      {"unknown case field", "claims/0/cases/0", "note", "\"n\"", TL_ERR_INVALID_ARGUMENT,
       "unknown field 'note'"},
      /* the benchmark step (docs/promotion.md §Benchmark) */
      {"benchmark not an object", "", "benchmark", "[16]", TL_ERR_INVALID_ARGUMENT,
       "benchmark: not an object"},
      {"benchmark unknown field", "", "benchmark",
       "{\"prompt_tokens\": [16], \"decode_tokens\": 4, \"repetitions\": 1, \"warmup\": 1}",
       TL_ERR_INVALID_ARGUMENT, "unknown field 'warmup'"},
      {"benchmark without decode_tokens", "", "benchmark",
       "{\"prompt_tokens\": [16], \"repetitions\": 1}", TL_ERR_INVALID_ARGUMENT,
       "missing field 'decode_tokens'"},
      {"benchmark without lengths", "", "benchmark",
       "{\"prompt_tokens\": [], \"decode_tokens\": 4, \"repetitions\": 1}",
       TL_ERR_INVALID_ARGUMENT, "benchmark.prompt_tokens: not an array of 1 to 12"},
      {"benchmark with 13 lengths", "", "benchmark",
       "{\"prompt_tokens\": [1,2,3,4,5,6,7,8,9,10,11,12,13], \"decode_tokens\": 4, "
       "\"repetitions\": 1}",
       TL_ERR_INVALID_ARGUMENT, "benchmark.prompt_tokens: not an array of 1 to 12"},
      {"benchmark lengths descending", "", "benchmark",
       "{\"prompt_tokens\": [64, 16], \"decode_tokens\": 4, \"repetitions\": 1}",
       TL_ERR_INVALID_ARGUMENT, "prompt_tokens[1]: not greater"},
      {"benchmark length twice", "", "benchmark",
       "{\"prompt_tokens\": [16, 16], \"decode_tokens\": 4, \"repetitions\": 1}",
       TL_ERR_INVALID_ARGUMENT, "prompt_tokens[1]: not greater"},
      {"benchmark length 0", "", "benchmark",
       "{\"prompt_tokens\": [0], \"decode_tokens\": 4, \"repetitions\": 1}",
       TL_ERR_INVALID_ARGUMENT, "prompt_tokens[0]: not an integer in [1, 1048576]"},
      {"benchmark length as a real", "", "benchmark",
       "{\"prompt_tokens\": [16.0], \"decode_tokens\": 4, \"repetitions\": 1}",
       TL_ERR_INVALID_ARGUMENT, "prompt_tokens[0]: not an integer"},
      {"benchmark length as text", "", "benchmark",
       "{\"prompt_tokens\": [\"16\"], \"decode_tokens\": 4, \"repetitions\": 1}",
       TL_ERR_INVALID_ARGUMENT, "prompt_tokens[0]: not an integer"},
      {"benchmark decode 0", "", "benchmark",
       "{\"prompt_tokens\": [16], \"decode_tokens\": 0, \"repetitions\": 1}",
       TL_ERR_INVALID_ARGUMENT, "benchmark.decode_tokens: not an integer in [1, 4096]"},
      {"benchmark 16 repetitions", "", "benchmark",
       "{\"prompt_tokens\": [16], \"decode_tokens\": 4, \"repetitions\": 16}",
       TL_ERR_INVALID_ARGUMENT, "benchmark.repetitions: not an integer in [1, 15]"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    json_t *plan = valid_plan(), *at = plan;
    char path[128], *tok, *save = NULL;
    char err[512] = "";
    tl_plan p;
    tl_status st;
    snprintf(path, sizeof path, "%s", edits[i].path);
    for (tok = strtok_r(path, "/", &save); tok != NULL; tok = strtok_r(NULL, "/", &save))
      at = json_is_array(at) ? json_array_get(at, (size_t)atoi(tok)) : json_object_get(at, tok);
    if (edits[i].value_json == NULL)
      json_object_del(at, edits[i].key);
    else
      json_object_set_new(at, edits[i].key, json_loads(edits[i].value_json, JSON_DECODE_ANY, NULL));
    st = parse_json(plan, &p, err, sizeof err);
    if (!TL_EXPECT_STATUS(t, st, edits[i].want) || strstr(err, edits[i].fragment) == NULL)
      fprintf(stderr, "  %s: %s (%s)\n", edits[i].what, err, tl_status_name(st));
    TL_EXPECT(t, strstr(err, edits[i].fragment) != NULL);
    if (st == TL_OK) tl_plan_free(&p);
    json_decref(plan);
  }
}

/* The benchmark is optional: absent and null are no step, a valid one
 * reads back as written (and is part of the plan's bytes, so its id). */
static void the_benchmark_field_reads_back(tl_test_ctx *t) {
  static const char *const values[] = {NULL, "null",
                                       "{\"prompt_tokens\": [16, 64, 4079], "
                                       "\"decode_tokens\": 16, \"repetitions\": 3}",
                                       "{\"prompt_tokens\": [1048576], "
                                       "\"decode_tokens\": 4096, \"repetitions\": 15}"};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    json_t *plan = valid_plan();
    tl_plan p;
    char err[512] = "";
    if (values[i] != NULL)
      json_object_set_new(plan, "benchmark", json_loads(values[i], JSON_DECODE_ANY, NULL));
    if (!TL_EXPECT_OK(t, parse_json(plan, &p, err, sizeof err))) {
      fprintf(stderr, "  %s: %s\n", values[i] ? values[i] : "(absent)", err);
      json_decref(plan);
      continue;
    }
    TL_EXPECT(t, p.has_benchmark == (i >= 2));
    if (i == 2) {
      TL_EXPECT_EQ_U64(t, p.benchmark.n_prompts, 3);
      TL_EXPECT_EQ_U64(t, p.benchmark.prompt_tokens[0], 16);
      TL_EXPECT_EQ_U64(t, p.benchmark.prompt_tokens[2], 4079);
      TL_EXPECT_EQ_U64(t, p.benchmark.decode_tokens, 16);
      TL_EXPECT_EQ_U64(t, p.benchmark.repetitions, 3);
    }
    if (i == 3) {
      TL_EXPECT_EQ_U64(t, p.benchmark.n_prompts, 1);
      TL_EXPECT_EQ_U64(t, p.benchmark.prompt_tokens[0], 1u << 20);
    }
    tl_plan_free(&p);
    json_decref(plan);
  }
}

static void bytes_that_are_not_one_plan(tl_test_ctx *t) {
  static const char *const docs[] = {"", "[]", "{\"format\": \"tinylm.plan/1\", \"format\": 1}",
                                     "{\"format\": \"tinylm.plan/1\"", "null"};
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    tl_plan p;
    char err[512];
    tl_status st = tl_plan_parse((const uint8_t *)docs[i], strlen(docs[i]), &p, err, sizeof err);
    TL_EXPECT_STATUS(t, st, TL_ERR_INVALID_ARGUMENT);
  }
}

static void plan_init_claims_read_back(tl_test_ctx *t) {
  /* What tl_plan_case writes is what the reader accepts: a case with text
   * that needs escaping and non-ASCII. */
  json_t *plan = valid_plan();
  json_t *cases = json_object_get(json_array_get(json_object_get(plan, "claims"), 0), "cases");
  tl_plan p;
  char err[512];
  json_array_append_new(cases, tl_plan_case(json_pack("{s:s,s:[i,i]}", "text",
                                                      "tab\t nul-free \x01 \xc3\xa9 \\u0000",
                                                      "ids", 1, 2)));
  TL_EXPECT_OK(t, parse_json(plan, &p, err, sizeof err));
  if (p.n_claims) TL_EXPECT_EQ_U64(t, p.claims[0].n_cases, 2);
  tl_plan_free(&p);
  json_decref(plan);
}

static const tl_test_case cases[] = {TL_CASE(case_ids_are_sha256_of_compact_sorted_json),
                                     TL_CASE(a_valid_plan_reads_back),
                                     TL_CASE(every_departure_is_refused_naming_the_field),
                                     TL_CASE(the_benchmark_field_reads_back),
                                     TL_CASE(bytes_that_are_not_one_plan),
                                     TL_CASE(plan_init_claims_read_back)};
TL_SUITE(promote_plan, cases);
