/* The source_binding claim's judge (promote_source.c) on observations
 * written here as its runner writes them: every equality, the verdict,
 * the stop rule and the first divergence derived from the stored digests
 * alone, and an observation that contradicts itself refused. (The runner,
 * which re-runs the converter, is exercised by tests/promote: the
 * promote and promote-mutations stages.) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "promote.h"
#include "promote_plan.h"
#include "tl_test.h"

#define A64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define B64 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

typedef struct fixture {
  char dir[64];
  tl_store *store;
  json_t *claim;
  char case_hex[65];
  char err[512];
  tl_claim_ctx c;
} fixture;

/* A store and a plan's source_binding claim over source (NULL: none). */
static bool fx_open(tl_test_ctx *t, fixture *fx, const char *source) {
  json_t *cs = json_pack("{s:s?,s:s}", "source", source, "quant", "q8"), *one;
  snprintf(fx->dir, sizeof fx->dir, "/tmp/tl_source_XXXXXX");
  fx->store = NULL;
  one = tl_plan_case(cs);
  fx->claim = json_pack("{s:s,s:s,s:[o]}", "name", "source_binding", "kind", "source_binding",
                        "cases", one);
  snprintf(fx->case_hex, sizeof fx->case_hex, "%s",
           json_string_value(json_object_get(one, "id")));
  fx->c = (tl_claim_ctx){.claim = fx->claim, .lane = "fast", .err = fx->err,
                         .err_cap = sizeof fx->err, .reading = true};
  if (!TL_EXPECT(t, mkdtemp(fx->dir) != NULL)) return false;
  if (!TL_EXPECT_OK(t, tl_store_open(fx->dir, true, &fx->store, fx->err, sizeof fx->err)))
    return false;
  fx->c.store = fx->store;
  return true;
}

static void fx_close(fixture *fx) {
  char cmd[128];
  tl_store_close(fx->store);
  json_decref(fx->claim);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", fx->dir);
}

/* A tensor line as the runner writes it. */
static json_t *line(const char *name, const char *artifact, const char *source, bool equal) {
  json_t *l = json_pack("{s:s,s:s,s:s,s:b}", "tensor", name, "artifact", artifact, "type", "q8",
                        "equal", equal);
  if (source == NULL) {
    json_object_set_new(l, "source", json_null());
  } else {
    json_object_set_new(l, "source", json_string(source));
    json_object_set_new(l, "source_type", json_string("q8"));
    if (strcmp(artifact, source) != 0)
      json_object_set_new(l, "first_difference", json_string("row 1, block 0 differ first"));
  }
  return l;
}

/* The observation {claim, case, source, quant, ...more} stored; the judge's
 * status, *r its result. */
static tl_status judge(tl_test_ctx *t, fixture *fx, const char *source, json_t *more,
                       tl_claim_result *r) {
  json_t *doc = json_pack("{s:s,s:s,s:s?,s:s}", "claim", "source_binding", "case", fx->case_hex,
                          "source", source, "quant", "q8");
  char *text;
  uint8_t id[32];
  json_object_update(doc, more);
  json_decref(more);
  text = tl_plan_canonical(doc);
  json_decref(doc);
  TL_EXPECT_OK(t, tl_store_put(fx->store, "observation", (const uint8_t *)text, strlen(text), id,
                               fx->err, sizeof fx->err));
  free(text);
  return tl_claim_kind_find("source_binding")->judge(&fx->c, id, r);
}

static void every_tensor_equal_passes_and_one_flipped_fails(tl_test_ctx *t) {
  fixture fx;
  tl_claim_result r;
  if (!fx_open(t, &fx, "/src")) return;
  if (TL_EXPECT_OK(t, judge(t, &fx, "/src",
                            json_pack("{s:i,s:[o,o]}", "source_tensors", 2, "tensors",
                                      line("a", A64, A64, true), line("b", B64, B64, true)),
                            &r))) {
    TL_EXPECT(t, r.pass && r.cases[0].pass && r.stop_rule == NULL);
    TL_EXPECT_STR(t, r.summary, "2 of 2 tensors equal the source re-converted (--quant q8)");
    tl_claim_result_free(&r);
  }
  /* Tensor b's re-conversion has other bytes: requantization_mismatch. */
  if (TL_EXPECT_OK(t, judge(t, &fx, "/src",
                            json_pack("{s:i,s:[o,o]}", "source_tensors", 2, "tensors",
                                      line("a", A64, A64, true), line("b", B64, A64, false)),
                            &r))) {
    TL_EXPECT(t, !r.pass && !r.cases[0].pass);
    TL_EXPECT_STR(t, r.stop_rule, TL_RULE_REQUANT);
    TL_EXPECT_STR(t, r.first_divergence, "b: not the source's (row 1, block 0 differ first)");
    tl_claim_result_free(&r);
  }
  /* A tensor the source does not give. */
  if (TL_EXPECT_OK(t, judge(t, &fx, "/src",
                            json_pack("{s:i,s:[o]}", "source_tensors", 1, "tensors",
                                      line("a", A64, NULL, false)),
                            &r))) {
    TL_EXPECT_STR(t, r.stop_rule, TL_RULE_REQUANT);
    TL_EXPECT_STR(t, r.first_divergence, "a: the source gives no such tensor");
    tl_claim_result_free(&r);
  }
  /* Every stored tensor equal, but the source gives one more. */
  if (TL_EXPECT_OK(t, judge(t, &fx, "/src",
                            json_pack("{s:i,s:[o]}", "source_tensors", 2, "tensors",
                                      line("a", A64, A64, true)),
                            &r))) {
    TL_EXPECT_STR(t, r.stop_rule, TL_RULE_REQUANT);
    TL_EXPECT_STR(t, r.first_divergence, "the source gives 2 tensors, the artifact holds 1");
    tl_claim_result_free(&r);
  }
  /* A source that does not convert. */
  if (TL_EXPECT_OK(t, judge(t, &fx, "/src",
                            json_pack("{s:s}", "error", "the source does not convert: x"),
                            &r))) {
    TL_EXPECT_STR(t, r.stop_rule, TL_RULE_REQUANT);
    TL_EXPECT_STR(t, r.first_divergence, "the source does not convert: x");
    tl_claim_result_free(&r);
  }
  fx_close(&fx);
}

static void a_self_contradicting_observation_is_refused(tl_test_ctx *t) {
  fixture fx;
  tl_claim_result r;
  if (!fx_open(t, &fx, "/src")) return;
  /* `equal` flipped to true over digests that differ */
  TL_EXPECT_EQ_I64(t,
                   judge(t, &fx, "/src",
                         json_pack("{s:i,s:[o]}", "source_tensors", 1, "tensors",
                                   line("a", A64, B64, true)),
                         &r),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, strstr(fx.err, "`equal` is not what its digests say") != NULL);
  /* another source than the plan's case */
  TL_EXPECT_EQ_I64(t,
                   judge(t, &fx, "/elsewhere",
                         json_pack("{s:i,s:[o]}", "source_tensors", 1, "tensors",
                                   line("a", A64, A64, true)),
                         &r),
                   TL_ERR_INVALID_ARGUMENT);
  /* an object that is not in the store */
  {
    uint8_t none[32] = {0};
    TL_EXPECT_EQ_I64(t, tl_judge_source_binding(&fx.c, none, &r), TL_ERR_NOT_FOUND);
  }
  fx_close(&fx);
}

static void no_source_is_not_run(tl_test_ctx *t) {
  fixture fx;
  tl_claim_result r;
  if (!fx_open(t, &fx, NULL)) return;
  if (TL_EXPECT_OK(t, judge(t, &fx, NULL,
                            json_pack("{s:s}", "not_run", "the plan names no source checkpoint"),
                            &r))) {
    TL_EXPECT(t, !r.pass);
    TL_EXPECT_STR(t, r.stop_rule, TL_RULE_MISSING_OUTPUT);
    tl_claim_result_free(&r);
  }
  fx_close(&fx);
}

static const tl_test_case cases[] = {
    TL_CASE(every_tensor_equal_passes_and_one_flipped_fails),
    TL_CASE(a_self_contradicting_observation_is_refused),
    TL_CASE(no_source_is_not_run),
};
TL_SUITE(promote_source, cases);
