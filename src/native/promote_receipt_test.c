/* Comparison and promotion receipts (promote_receipt.h, receipt.c): what
 * the writers put is what the tables of docs/promotion.md say, every
 * input is in the root id, the promotion's decision is the conjunction of
 * its claims, and a reader refuses what a forger who recomputes every id
 * could still write (promoted over a failed claim, a verdict without its
 * stop rule, a claim at a level its kind does not have). Independent
 * recomputation of the ids and forgeries that leave the ids alone:
 * tests/receipt/promote_forged_test.py. */
#define _POSIX_C_SOURCE 200809L
#include "promote_receipt.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor/cbor.h"
#include "cbor_alloc.h"
#include "cbor_doc.h"
#include "cli.h"
#include "receipt.h"
#include "tl_test.h"

/* Build ids as promote writes them: the executable's SHA-256. */
#define TEST_BUILD "sha256:" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OTHER_BUILD "sha256:" "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* A claim that ran three cases. */
typedef struct fixture {
  uint8_t artifact[32], plan[32], design[32], run_record[32];
  tl_case_outcome cases[3];
  tl_claim_result result;
  tl_comparison_facts f;
} fixture;

static void fixture_init(fixture *x, bool pass) {
  memset(x, 0, sizeof *x);
  memset(x->artifact, 0xa1, 32);
  memset(x->plan, 0x91, 32);
  memset(x->design, 0xd5, 32);
  memset(x->run_record, 0x7e, 32);
  for (int i = 0; i < 3; i++) {
    memset(x->cases[i].id, 0x10 + i, 32);
    memset(x->cases[i].output, 0x20 + i, 32);
    x->cases[i].invariant = "ids";
    x->cases[i].pass = pass || i != 1;
  }
  x->result.pass = pass;
  x->result.stop_rule = pass ? NULL : TL_RULE_MECHANICAL;
  if (!pass)
    snprintf(x->result.first_divergence, sizeof x->result.first_divergence,
             "case 1: ids[3] 17 != 18");
  snprintf(x->result.summary, sizeof x->result.summary, "%d of 3 cases", pass ? 3 : 2);
  x->result.cases = x->cases;
  x->result.n_cases = 3;
  memset(x->result.observation, 0x0b, 32);
  x->result.has_observation = true;
  x->f = (tl_comparison_facts){.rt = {x->artifact, TEST_BUILD, "scalar", "scalar-f32/1"},
                               .plan_id = x->plan,
                               .claim = "tokenizer",
                               .kind = "tokenizer",
                               .level = "mechanical",
                               .oracle = "HF tokenizers",
                               .result = &x->result,
                               .attempt = 1};
}

static tl_status comparison(const tl_comparison_facts *f, uint8_t root[32], json_t **doc,
                            char *err, size_t cap) {
  uint8_t *bytes = NULL, checked[32];
  size_t len = 0;
  tl_receipt_kind kind;
  tl_status st = tl_comparison_receipt(f, &bytes, &len, root, err, cap);
  if (st == TL_OK) st = tl_receipt_check(bytes, len, &kind, checked, err, cap);
  if (st == TL_OK && (kind != TL_RECEIPT_COMPARISON || memcmp(checked, root, 32) != 0))
    st = TL_ERR_INTERNAL_INVARIANT;
  if (st == TL_OK && doc != NULL) st = tl_cbor_to_json(bytes, len, doc, err, cap);
  free(bytes);
  return st;
}

static json_t *meta_of(json_t *doc, size_t i) {
  return json_object_get(json_array_get(json_object_get(doc, "nodes"), i), "metadata");
}

static const char *type_of(json_t *doc, size_t i) {
  return json_string_value(
      json_object_get(json_array_get(json_object_get(doc, "nodes"), i), "type"));
}

static void hex_is(tl_test_ctx *t, const json_t *v, const uint8_t id[32]) {
  char hex[65];
  tl_hex_encode(id, 32, hex);
  TL_EXPECT_STR(t, json_string_value(v), hex);
}

/* The table of docs/promotion.md §Comparison receipts, node by node. */
static void comparison_nodes(tl_test_ctx *t) {
  fixture x;
  uint8_t root[32];
  json_t *doc = NULL, *m, *c;
  char err[512] = "";
  fixture_init(&x, false);
  TL_EXPECT_OK(t, comparison(&x.f, root, &doc, err, sizeof err));
  if (doc == NULL) return;
  TL_EXPECT_STR(t, json_string_value(json_object_get(doc, "format")), "tinylm.comparison/1");
  hex_is(t, json_object_get(doc, "root"), root);
  TL_EXPECT_EQ_U64(t, json_array_size(json_object_get(doc, "nodes")), 6);
  TL_EXPECT_STR(t, type_of(doc, 0), "artifact");
  hex_is(t, json_object_get(meta_of(doc, 0), "artifact_id"), x.artifact);
  TL_EXPECT_STR(t, type_of(doc, 1), "runtime");
  m = meta_of(doc, 1);
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "build_id")), TEST_BUILD);
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "backend")), "scalar");
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "numerical_profile")),
                "scalar-f32/1");
  TL_EXPECT_STR(t, type_of(doc, 2), "plan");
  m = meta_of(doc, 2);
  hex_is(t, json_object_get(m, "plan_id"), x.plan);
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "claim")), "tokenizer");
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "level")), "mechanical");
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "oracle")), "HF tokenizers");
  TL_EXPECT_STR(t, type_of(doc, 3), "policy");
  m = meta_of(doc, 3);
  TL_EXPECT(t, json_is_null(json_object_get(m, "tolerance")) &&
                   json_is_null(json_object_get(m, "design_sha256")));
  TL_EXPECT_STR(t, type_of(doc, 4), "evidence");
  m = meta_of(doc, 4);
  TL_EXPECT_EQ_U64(t, json_array_size(json_object_get(m, "cases")), 3);
  c = json_array_get(json_object_get(m, "cases"), 1);
  hex_is(t, json_object_get(c, "id"), x.cases[1].id);
  hex_is(t, json_object_get(c, "output"), x.cases[1].output);
  TL_EXPECT(t, json_is_false(json_object_get(c, "pass")));
  TL_EXPECT_STR(t, json_string_value(json_object_get(c, "invariant")), "ids");
  hex_is(t, json_array_get(json_object_get(m, "observations"), 0), x.result.observation);
  TL_EXPECT_STR(t, type_of(doc, 5), "comparison");
  m = meta_of(doc, 5);
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "verdict")), "fail");
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "stop_rule")), "mechanical_mismatch");
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "first_divergence")),
                "case 1: ids[3] 17 != 18");
  TL_EXPECT_STR(t, json_string_value(json_object_get(m, "summary")), "2 of 3 cases");
  TL_EXPECT_EQ_U64(t, (uint64_t)json_integer_value(json_object_get(m, "attempt")), 1);
  json_decref(doc);
}

/* The artifact and runtime nodes are a run receipt's: one artifact, one
 * build, one lane, one id, whichever receipt names them. */
static void shares_run_receipt_nodes(tl_test_ctx *t) {
  fixture x;
  uint8_t root[32], run_root[32], *run = NULL;
  size_t run_len = 0;
  json_t *doc = NULL, *rdoc = NULL;
  tl_slm slm;
  tl_sampler_profile profile = tl_sampler_profile_default(8);
  tl_run_facts rf;
  char err[512] = "";
  fixture_init(&x, true);
  memset(&slm, 0, sizeof slm);
  rf = (tl_run_facts){.artifact_id = x.artifact,
                      .slm = &slm,
                      .build_id = TEST_BUILD,
                      .prompt_mode = "text",
                      .prompt_bytes = (const uint8_t *)"hi",
                      .prompt_len = 2,
                      .profile = &profile,
                      .stop = "max_tokens",
                      .backend = "scalar",
                      .numerical_profile = "scalar-f32/1"};
  TL_EXPECT_OK(t, comparison(&x.f, root, &doc, err, sizeof err));
  TL_EXPECT_OK(t, tl_run_receipt(&rf, &run, &run_len, run_root));
  TL_EXPECT_OK(t, tl_cbor_to_json(run, run_len, &rdoc, err, sizeof err));
  if (doc != NULL && rdoc != NULL) {
    for (size_t i = 0; i < 2; i++) {
      json_t *a = json_array_get(json_object_get(doc, "nodes"), i);
      json_t *b = json_array_get(json_object_get(rdoc, "nodes"), i);
      TL_EXPECT_STR(t, json_string_value(json_object_get(a, "type")),
                    json_string_value(json_object_get(b, "type")));
      TL_EXPECT_STR(t, json_string_value(json_object_get(a, "id")),
                    json_string_value(json_object_get(b, "id")));
    }
  }
  json_decref(doc);
  json_decref(rdoc);
  free(run);
}

/* Every input the receipt names is in its root id; the same inputs give
 * the same id. */
static void every_input_in_the_id(tl_test_ctx *t) {
  fixture x;
  uint8_t base[32], again[32], other[32];
  char err[512] = "";
  fixture_init(&x, true);
  TL_EXPECT_OK(t, comparison(&x.f, base, NULL, err, sizeof err));
  TL_EXPECT_OK(t, comparison(&x.f, again, NULL, err, sizeof err));
  TL_EXPECT_MEM(t, again, base, 32);
#define CHANGED(label, change, undo)                                       \
  do {                                                                     \
    change;                                                                \
    TL_EXPECT_OK(t, comparison(&x.f, other, NULL, err, sizeof err));       \
    if (memcmp(other, base, 32) == 0) TL_EXPECT(t, !label);                \
    undo;                                                                  \
  } while (0)
  CHANGED("artifact", x.artifact[31] ^= 1, x.artifact[31] ^= 1);
  CHANGED("build", x.f.rt.build_id = OTHER_BUILD, x.f.rt.build_id = TEST_BUILD);
  CHANGED("lane", (x.f.rt.backend = "fast", x.f.rt.numerical_profile = "fast/4"),
          (x.f.rt.backend = "scalar", x.f.rt.numerical_profile = "scalar-f32/1"));
  CHANGED("plan", x.plan[0] ^= 1, x.plan[0] ^= 1);
  CHANGED("claim name", x.f.claim = "tokenizer2", x.f.claim = "tokenizer");
  CHANGED("oracle", x.f.oracle = "other", x.f.oracle = "HF tokenizers");
  CHANGED("case id", x.cases[2].id[0] ^= 1, x.cases[2].id[0] ^= 1);
  CHANGED("case output", x.cases[0].output[5] ^= 1, x.cases[0].output[5] ^= 1);
  CHANGED("invariant", x.cases[0].invariant = "offsets", x.cases[0].invariant = "ids");
  CHANGED("observation", x.result.observation[9] ^= 1, x.result.observation[9] ^= 1);
  CHANGED("summary", x.result.summary[0] = '4', x.result.summary[0] = '3');
  CHANGED("attempt", x.f.attempt = 2, x.f.attempt = 1);
#undef CHANGED
  /* A numerical claim's tolerance policy. */
  x.f.kind = "forward";
  x.f.level = "numerical";
  TL_EXPECT_OK(t, comparison(&x.f, base, NULL, err, sizeof err));
  x.f.tolerance = "scalar-f32/1";
  TL_EXPECT_OK(t, comparison(&x.f, other, NULL, err, sizeof err));
  TL_EXPECT(t, memcmp(other, base, 32) != 0);
  x.f.tolerance = "fast/4";
  TL_EXPECT_OK(t, comparison(&x.f, base, NULL, err, sizeof err));
  TL_EXPECT(t, memcmp(other, base, 32) != 0);
}

/* Facts the format cannot hold are refused by the writer, naming the
 * field, as the reader refuses them. */
static void refused_facts(tl_test_ctx *t) {
  fixture x;
  uint8_t root[32];
  char err[512] = "";
#define REFUSED(label, change, field, undo)                                              \
  do {                                                                                   \
    change;                                                                              \
    TL_EXPECT_STATUS(t, comparison(&x.f, root, NULL, err, sizeof err),                   \
                     TL_ERR_INVALID_ARGUMENT);                                           \
    if (strstr(err, field) == NULL) {                                                    \
      tl_test_print(t, label ": ");                                                      \
      tl_test_print(t, err);                                                             \
      TL_EXPECT(t, !"the message names " field);                                         \
    }                                                                                    \
    undo;                                                                                \
  } while (0)
  fixture_init(&x, false);
  REFUSED("a failed claim without its stop rule", x.result.stop_rule = NULL, "stop_rule",
          x.result.stop_rule = TL_RULE_MECHANICAL);
  REFUSED("an unknown stop rule", x.result.stop_rule = "bad_luck", "stop_rule",
          x.result.stop_rule = TL_RULE_MECHANICAL);
  REFUSED("attempt 3", x.f.attempt = 3, "attempt", x.f.attempt = 1);
  REFUSED("attempt 0", x.f.attempt = 0, "attempt", x.f.attempt = 1);
  REFUSED("an unknown kind", x.f.kind = "vibes", "kind", x.f.kind = "tokenizer");
  REFUSED("a mechanical kind called numerical", x.f.level = "numerical", "level",
          x.f.level = "mechanical");
  REFUSED("a tolerance on a mechanical claim", x.f.tolerance = "fast/4", "tolerance",
          x.f.tolerance = NULL);
  REFUSED("a design on a mechanical claim", x.f.design_sha256 = x.design, "design_sha256",
          x.f.design_sha256 = NULL);
  REFUSED("a stochastic claim without its design",
          (x.f.kind = "stochastic", x.f.level = "stochastic"), "design_sha256",
          (x.f.kind = "tokenizer", x.f.level = "mechanical"));
  fixture_init(&x, true);
  REFUSED("a passed claim with a stop rule", x.result.stop_rule = TL_RULE_TOLERANCE,
          "stop_rule", x.result.stop_rule = NULL);
  REFUSED("a passed claim with a divergence", x.result.first_divergence[0] = 'x',
          "first_divergence", x.result.first_divergence[0] = '\0');
  REFUSED("a passed claim with a failed case", x.cases[2].pass = false, "cases[2].pass",
          x.cases[2].pass = true);
  REFUSED("a passed claim without raw outputs", x.result.has_observation = false,
          "observations", x.result.has_observation = true);
  REFUSED("a passed claim without cases", x.result.n_cases = 0, "cases",
          x.result.n_cases = 3);
  REFUSED("text holding U+0000 cannot be given: no summary", x.result.summary[0] = '\0',
          "summary", x.result.summary[0] = '2');
#undef REFUSED
  /* A stochastic claim's cases may differ one by one: its verdict is the
   * statistics'. */
  x.f.kind = "stochastic";
  x.f.level = "stochastic";
  x.f.design_sha256 = x.design;
  x.cases[1].pass = false;
  TL_EXPECT_OK(t, comparison(&x.f, root, NULL, err, sizeof err));
}

static tl_status promotion(const tl_promotion_facts *f, uint8_t root[32], json_t **doc,
                           char *err, size_t cap) {
  uint8_t *bytes = NULL, checked[32];
  size_t len = 0;
  tl_receipt_kind kind;
  tl_status st = tl_promotion_receipt(f, &bytes, &len, root, err, cap);
  if (st == TL_OK) st = tl_receipt_check(bytes, len, &kind, checked, err, cap);
  if (st == TL_OK && (kind != TL_RECEIPT_PROMOTION || memcmp(checked, root, 32) != 0))
    st = TL_ERR_INTERNAL_INVARIANT;
  if (st == TL_OK && doc != NULL) st = tl_cbor_to_json(bytes, len, doc, err, cap);
  free(bytes);
  return st;
}

static char *dumps(const json_t *v) { return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS); }

static void expect_json(tl_test_ctx *t, const json_t *v, const char *want) {
  char *got = dumps(v);
  TL_EXPECT_STR(t, got, want);
  free(got);
}

/* The decision is the conjunction: every claim ran and passed. */
static void promotion_conjunction(tl_test_ctx *t) {
  uint8_t ids[3][32], artifact[32], plan[32], run_record[32], root[32];
  tl_promotion_claim claims[3] = {{"artifact", ids[0], true, NULL},
                                  {"tokenizer", ids[1], true, NULL},
                                  {"stochastic", ids[2], true, NULL}};
  tl_promotion_facts f = {.rt = {artifact, TEST_BUILD, "fast", "fast/4"},
                          .plan_id = plan,
                          .lane = "fast",
                          .claims = claims,
                          .n_claims = 3,
                          .run_record = run_record};
  json_t *doc = NULL, *m;
  char err[512] = "";
  for (int i = 0; i < 3; i++) memset(ids[i], 0x30 + i, 32);
  memset(artifact, 1, 32);
  memset(plan, 2, 32);
  memset(run_record, 3, 32);
  TL_EXPECT_OK(t, promotion(&f, root, &doc, err, sizeof err));
  if (doc != NULL) {
    TL_EXPECT_STR(t, type_of(doc, 2), "plan");
    expect_json(t, json_object_get(meta_of(doc, 2), "claims"),
                "[\"artifact\",\"tokenizer\",\"stochastic\"]");
    TL_EXPECT_STR(t, json_string_value(json_object_get(meta_of(doc, 2), "lane")), "fast");
    TL_EXPECT_STR(t, type_of(doc, 3), "comparisons");
    m = json_array_get(json_object_get(meta_of(doc, 3), "receipts"), 1);
    hex_is(t, json_object_get(m, "receipt_id"), ids[1]);
    TL_EXPECT_STR(t, json_string_value(json_object_get(m, "verdict")), "pass");
    TL_EXPECT_STR(t, type_of(doc, 4), "promotion");
    m = meta_of(doc, 4);
    TL_EXPECT_STR(t, json_string_value(json_object_get(m, "decision")), "promoted");
    expect_json(t, json_object_get(m, "failing"), "[]");
    expect_json(t, json_object_get(m, "stop_rules"), "[]");
    hex_is(t, json_object_get(m, "run_record"), run_record);
  }
  json_decref(doc);
  doc = NULL;
  /* One failed claim: not promoted, naming it and its rule. */
  claims[1].pass = false;
  claims[1].stop_rule = TL_RULE_MECHANICAL;
  TL_EXPECT_OK(t, promotion(&f, root, &doc, err, sizeof err));
  if (doc != NULL) {
    m = meta_of(doc, 4);
    TL_EXPECT_STR(t, json_string_value(json_object_get(m, "decision")), "not_promoted");
    expect_json(t, json_object_get(m, "failing"), "[\"tokenizer\"]");
    expect_json(t, json_object_get(m, "stop_rules"),
                "[{\"claim\":\"tokenizer\",\"rule\":\"mechanical_mismatch\"}]");
  }
  json_decref(doc);
  doc = NULL;
  /* A claim that did not run (stochastic, after a mechanical failure) is
   * not a pass: no comparison names it, and it is failing. */
  claims[2].receipt_id = NULL;
  TL_EXPECT_OK(t, promotion(&f, root, &doc, err, sizeof err));
  if (doc != NULL) {
    TL_EXPECT_EQ_U64(t, json_array_size(json_object_get(meta_of(doc, 3), "receipts")), 2);
    expect_json(t, json_object_get(meta_of(doc, 4), "failing"),
                "[\"tokenizer\",\"stochastic\"]");
  }
  json_decref(doc);
  doc = NULL;
  claims[1].pass = true;
  claims[1].stop_rule = NULL;
  TL_EXPECT_OK(t, promotion(&f, root, &doc, err, sizeof err));
  if (doc != NULL)
    TL_EXPECT_STR(t, json_string_value(json_object_get(meta_of(doc, 4), "decision")),
                  "not_promoted");
  json_decref(doc);
  /* What the format cannot hold. */
  claims[2].receipt_id = ids[2];
  claims[0].stop_rule = TL_RULE_FORGED; /* a pass with a rule */
  TL_EXPECT_STATUS(t, promotion(&f, root, NULL, err, sizeof err), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, strstr(err, "receipts[0].stop_rule") != NULL);
  claims[0].stop_rule = NULL;
  claims[2].claim = "artifact"; /* a claim twice */
  TL_EXPECT_STATUS(t, promotion(&f, root, NULL, err, sizeof err), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, strstr(err, "claims[2]") != NULL);
  claims[2].claim = "stochastic";
  f.lane = "scalar"; /* another lane than the runtime ran */
  TL_EXPECT_STATUS(t, promotion(&f, root, NULL, err, sizeof err), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, strstr(err, "backend") != NULL);
}

/* ------------------------------------------------------------------------ */
/* Forgeries whose ids are all recomputed: one metadata value replaced in
 * a receipt this writer wrote, every node sealed again. */

typedef struct forged_value {
  const char *text;         /* a text value, or */
  const char *const *texts; /* an array of text (n_texts), or */
  size_t n_texts;
  bool null; /* null */
} forged_value;

static void put_forged(tl_cbor_writer *w, const forged_value *v) {
  if (v->null) {
    tl_cbor_put_null(w);
  } else if (v->text != NULL) {
    tl_cbor_put_cstr(w, v->text);
  } else {
    tl_cbor_begin_array(w, v->n_texts);
    for (size_t i = 0; i < v->n_texts; i++) tl_cbor_put_cstr(w, v->texts[i]);
    tl_cbor_end_array(w);
  }
}

typedef struct forge_arg {
  const uint8_t *meta;
  size_t meta_len;
  const char *key;
  const forged_value *v;
} forge_arg;

static void emit_forged_meta(tl_cbor_writer *w, const void *arg) {
  const forge_arg *a = arg;
  tl_cbor_reader r;
  size_t n;
  tl_cbor_reader_init(&r, a->meta, a->meta_len, NULL);
  tl_cbor_expect_map(&r, &n);
  tl_cbor_begin_map(w, n);
  for (size_t i = 0; i < n; i++) {
    const char *k;
    size_t klen;
    tl_cbor_expect_text(&r, &k, &klen);
    tl_cbor_put_text(w, k, klen);
    if (tl_cbor_text_is(k, klen, a->key)) {
      tl_cbor_skip(&r);
      put_forged(w, a->v);
    } else {
      tl_cbor_copy_item(&r, w);
    }
  }
  tl_cbor_end_map(w);
}

/* doc with node `which`'s `key` set to v, every id recomputed (the root's
 * children are all the other nodes in both formats). */
static tl_status forge(const uint8_t *doc, size_t len, const char *format, size_t which,
                       const char *key, const forged_value *v, uint8_t **out,
                       size_t *out_len, uint8_t root[32]) {
  tl_cbor_reader r;
  tl_graph_node nodes[8];
  uint8_t *metas[8] = {NULL};
  size_t n = 0;
  tl_status st;
  memset(nodes, 0, sizeof nodes);
  tl_cbor_reader_init(&r, doc, len, NULL);
  if ((st = tl_cbor_map_find(&r, "nodes")) != TL_OK) return st;
  if ((st = tl_cbor_expect_array(&r, &n)) != TL_OK || n > 8) return TL_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < n; i++) {
    size_t pairs;
    tl_cbor_expect_map(&r, &pairs);
    for (size_t p = 0; p < pairs; p++) {
      const char *k, *s;
      size_t klen, slen;
      tl_cbor_expect_text(&r, &k, &klen);
      if (tl_cbor_text_is(k, klen, "type")) {
        tl_cbor_expect_text(&r, &s, &slen);
        nodes[i].type = strndup(s, slen);
      } else if (tl_cbor_text_is(k, klen, "metadata")) {
        size_t at = r.pos;
        tl_cbor_skip(&r);
        nodes[i].meta = doc + at;
        nodes[i].meta_len = r.pos - at;
      } else {
        tl_cbor_skip(&r);
      }
    }
  }
  {
    forge_arg a = {nodes[which].meta, nodes[which].meta_len, key, v};
    st = tl_cbor_encode_alloc(emit_forged_meta, &a, &metas[which], &nodes[which].meta_len);
    nodes[which].meta = metas[which];
  }
  nodes[n - 1].n_kids = n - 1;
  for (size_t k = 0; k + 1 < n; k++) nodes[n - 1].kids[k] = k;
  if (st == TL_OK) st = tl_graph_receipt_encode(format, nodes, n, NULL, 0, out, out_len, root);
  for (size_t i = 0; i < n; i++) free((void *)nodes[i].type);
  free(metas[which]);
  return st;
}

static void expect_forgery_refused(tl_test_ctx *t, const uint8_t *doc, size_t len,
                                   const char *format, size_t which, const char *key,
                                   forged_value v, const char *field) {
  uint8_t *forged = NULL, root[32];
  size_t flen = 0;
  tl_receipt_kind kind;
  char err[512] = "";
  TL_EXPECT_OK(t, forge(doc, len, format, which, key, &v, &forged, &flen, root));
  TL_EXPECT_STATUS(t, tl_receipt_check(forged, flen, &kind, root, err, sizeof err),
                   TL_ERR_INVALID_ARGUMENT);
  if (strstr(err, field) == NULL) {
    tl_test_print(t, err);
    TL_EXPECT(t, !"the message names the field");
  }
  free(forged);
}

static void forged_with_ids_recomputed(tl_test_ctx *t) {
  fixture x;
  uint8_t *doc = NULL, root[32], ids[2][32], *forged = NULL;
  size_t len = 0, flen = 0;
  char err[512] = "";
  tl_receipt_kind kind;
  static const char *const none[1] = {NULL};
  static const char *const both[2] = {"artifact", "tokenizer"};
  tl_promotion_claim claims[2] = {{"artifact", ids[0], true, NULL},
                                  {"tokenizer", ids[1], false, TL_RULE_MECHANICAL}};
  tl_promotion_facts pf;
  fixture_init(&x, false);
  memset(ids, 0x44, sizeof ids);
  /* A failed comparison called passed. */
  TL_EXPECT_OK(t, tl_comparison_receipt(&x.f, &doc, &len, root, err, sizeof err));
  expect_forgery_refused(t, doc, len, TL_COMPARISON_FORMAT, 5, "verdict",
                         (forged_value){.text = "pass"}, "comparison).metadata.stop_rule");
  expect_forgery_refused(t, doc, len, TL_COMPARISON_FORMAT, 5, "verdict",
                         (forged_value){.text = "PASS"}, "verdict");
  expect_forgery_refused(t, doc, len, TL_COMPARISON_FORMAT, 2, "level",
                         (forged_value){.text = "stochastic"}, "level");
  /* Passing it off whole (verdict, rule and divergence all changed) is a
   * valid receipt with another root: the promotion names the original,
   * and promote show compares (promote_forged_test.py). */
  {
    forged_value pass = {.text = "pass"}, null = {.null = true};
    uint8_t *step = NULL, r1[32], r2[32];
    size_t slen = 0, s2len = 0;
    uint8_t *step2 = NULL;
    TL_EXPECT_OK(t, forge(doc, len, TL_COMPARISON_FORMAT, 5, "verdict", &pass, &step,
                          &slen, r1));
    TL_EXPECT_OK(t, forge(step, slen, TL_COMPARISON_FORMAT, 5, "stop_rule", &null, &step2,
                          &s2len, r2));
    free(step);
    TL_EXPECT_OK(t, forge(step2, s2len, TL_COMPARISON_FORMAT, 5, "first_divergence",
                          &null, &forged, &flen, r1));
    free(step2);
    /* Still refused: the evidence says case 1 failed. */
    TL_EXPECT_STATUS(t, tl_receipt_check(forged, flen, &kind, r2, err, sizeof err),
                     TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT(t, strstr(err, "cases[1].pass") != NULL);
    free(forged);
  }
  free(doc);
  /* A promotion that says promoted over a failed claim. */
  pf = (tl_promotion_facts){.rt = {x.artifact, TEST_BUILD, "scalar", "scalar-f32/1"},
                            .plan_id = x.plan,
                            .lane = "scalar",
                            .claims = claims,
                            .n_claims = 2,
                            .run_record = x.run_record};
  TL_EXPECT_OK(t, tl_promotion_receipt(&pf, &doc, &len, root, err, sizeof err));
  expect_forgery_refused(t, doc, len, TL_PROMOTION_FORMAT, 4, "decision",
                         (forged_value){.text = "promoted"}, "decision");
  /* A build named by its git description, which every patched binary of
   * one commit shares, not by the executable's digest. */
  expect_forgery_refused(t, doc, len, TL_PROMOTION_FORMAT, 1, "build_id",
                         (forged_value){.text = "4dbdb1d-dirty"}, "build_id");
  expect_forgery_refused(t, doc, len, TL_PROMOTION_FORMAT, 1, "build_id",
                         (forged_value){.text = "sha256:0123456789ABCDEF0123456789abcdef0123456789"
                                                "abcdef0123456789abcdef"},
                         "build_id");
  expect_forgery_refused(t, doc, len, TL_PROMOTION_FORMAT, 4, "failing",
                         (forged_value){.texts = none, .n_texts = 0}, "failing");
  expect_forgery_refused(t, doc, len, TL_PROMOTION_FORMAT, 4, "failing",
                         (forged_value){.texts = both, .n_texts = 2}, "failing");
  expect_forgery_refused(t, doc, len, TL_PROMOTION_FORMAT, 2, "claims",
                         (forged_value){.texts = both, .n_texts = 1}, "receipts[1]");
  expect_forgery_refused(t, doc, len, TL_PROMOTION_FORMAT, 2, "lane",
                         (forged_value){.text = "fast"}, "backend");
  /* The untouched document recomputes to its own root through forge. */
  {
    forged_value same = {.text = "scalar"};
    uint8_t again[32];
    TL_EXPECT_OK(t, forge(doc, len, TL_PROMOTION_FORMAT, 2, "lane", &same, &forged, &flen,
                          again));
    TL_EXPECT(t, flen == len && memcmp(forged, doc, len) == 0);
    TL_EXPECT_MEM(t, again, root, 32);
    free(forged);
  }
  free(doc);
}

static const tl_test_case cases[] = {
    TL_CASE(comparison_nodes),       TL_CASE(shares_run_receipt_nodes),
    TL_CASE(every_input_in_the_id),  TL_CASE(refused_facts),
    TL_CASE(promotion_conjunction),  TL_CASE(forged_with_ids_recomputed)};
TL_SUITE(promote_receipt, cases);
