/* The table of claim kinds (promote.h): each kind's level, runner
 * (OBSERVE) and judge (JUDGE), from the one list TL_CLAIM_KINDS; what
 * promote does with them (observe, then judge) and what a reader does
 * (judge the stored observation again and compare with the receipt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor_doc.h"
#include "cli.h"
#include "promote.h"
#include "promote_plan.h"

#define KIND_ROW(k, l) {#k, #l, tl_claim_##k, tl_judge_##k},
static const tl_claim_kind kinds[] = {TL_CLAIM_KINDS(KIND_ROW)};
#undef KIND_ROW

const tl_claim_kind *tl_claim_kind_find(const char *kind) {
  for (size_t i = 0; kind != NULL && i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(kinds[i].kind, kind) == 0) return &kinds[i];
  return NULL;
}

tl_status tl_claim_observe_judge(const tl_claim_kind *k, tl_claim_ctx *c, tl_claim_result *out) {
  tl_claim_result seen;
  tl_status st = k->run(c, &seen);
  memset(out, 0, sizeof *out);
  if (st != TL_OK) return st;
  if (!seen.has_observation) {
    snprintf(c->err, c->err_cap, "the %s runner stored no observation", k->kind);
    st = TL_ERR_INTERNAL_INVARIANT;
  } else {
    st = k->judge(c, seen.observation, out);
  }
  tl_claim_result_free(&seen);
  return st;
}

/* ------------------------------------------------------------------------ */
/* A reader's judgement                                                     */

static const char *hex_of(const uint8_t id[32], char hex[65]) {
  tl_hex_encode(id, 32, hex);
  return hex;
}

/* Where the judgement and the receipt differ ("" when they agree). */
static void compare(const tl_claim_result *r, const json_t *cmp, char *why, size_t cap) {
  const json_t *root = tl_json_node_meta(cmp, "comparison"), *ev = tl_json_node_meta(cmp, "evidence");
  const json_t *cases = json_object_get(ev, "cases"), *obs = json_object_get(ev, "observations");
  const char *verdict = json_string_value(json_object_get(root, "verdict"));
  const char *rule = json_string_value(json_object_get(root, "stop_rule"));
  char hex[65];
  why[0] = '\0';
  if (strcmp(verdict, r->pass ? "pass" : "fail") != 0 ||
      (rule == NULL) != (r->stop_rule == NULL) ||
      (rule != NULL && strcmp(rule, r->stop_rule) != 0)) {
    snprintf(why, cap, "judged again from its raw observations it is %s (%s), the receipt says %s (%s)",
             r->pass ? "pass" : "fail", r->stop_rule ? r->stop_rule : "no stop rule", verdict,
             rule ? rule : "no stop rule");
    return;
  }
  if (json_array_size(cases) != r->n_cases) {
    snprintf(why, cap, "the receipt names %zu cases, the plan's claim has %zu",
             json_array_size(cases), r->n_cases);
    return;
  }
  for (size_t i = 0; i < r->n_cases; i++) {
    const json_t *c = json_array_get(cases, i);
    const tl_case_outcome *o = &r->cases[i];
    if (strcmp(json_string_value(json_object_get(c, "id")), hex_of(o->id, hex)) != 0 ||
        json_is_true(json_object_get(c, "pass")) != o->pass ||
        strcmp(json_string_value(json_object_get(c, "output")), hex_of(o->output, hex)) != 0 ||
        strcmp(json_string_value(json_object_get(c, "invariant")), o->invariant) != 0) {
      snprintf(why, cap,
               "case %zu: judged again from its raw observation it %s (output %s), the receipt "
               "says it %s (output %s)",
               i, o->pass ? "passes" : "fails", hex_of(o->output, hex),
               json_is_true(json_object_get(c, "pass")) ? "passes" : "fails",
               json_string_value(json_object_get(c, "output")));
      return;
    }
  }
  if (json_array_size(obs) != 1 + r->n_support) {
    snprintf(why, cap, "the receipt names %zu objects, its observation rests on %zu",
             json_array_size(obs), 1 + r->n_support);
    return;
  }
  for (size_t i = 0; i < r->n_support; i++)
    if (strcmp(json_string_value(json_array_get(obs, i + 1)), hex_of(r->support[i], hex)) != 0) {
      snprintf(why, cap, "observations[%zu] is not the object its observation names (%s)", i + 1,
               hex);
      return;
    }
}

tl_status tl_claim_rejudge(tl_store *store, const json_t *cmp, const char **rule, char *err,
                           size_t err_cap) {
  const json_t *plan_meta = tl_json_node_meta(cmp, "plan"), *root = tl_json_node_meta(cmp, "comparison");
  const json_t *obs = json_object_get(tl_json_node_meta(cmp, "evidence"), "observations");
  const char *name = json_string_value(json_object_get(plan_meta, "claim"));
  const char *kind_name = json_string_value(json_object_get(plan_meta, "kind"));
  const tl_claim_kind *kind = tl_claim_kind_find(kind_name);
  uint8_t plan_id[32], observation[32], *bytes = NULL;
  size_t len = 0;
  char why[1024];
  tl_plan plan;
  tl_claim_result r;
  tl_status st;
  *rule = TL_RULE_FORGED;
  if (json_array_size(obs) == 0) {
    /* No raw output to judge: only a claim that failed for want of one. */
    const char *said = json_string_value(json_object_get(root, "stop_rule"));
    if (said != NULL && strcmp(said, TL_RULE_MISSING_OUTPUT) == 0) return TL_OK;
    snprintf(err, err_cap, "it names no raw observation, yet says %s",
             said ? said : "pass");
    return TL_ERR_CONFLICT;
  }
  if (kind == NULL || !tl_hex32_parse(json_string_value(json_object_get(plan_meta, "plan_id")),
                                      plan_id) ||
      !tl_hex32_parse(json_string_value(json_array_get(obs, 0)), observation)) {
    snprintf(err, err_cap, "a kind or digest the reader cannot use");
    return TL_ERR_INVALID_ARGUMENT;
  }
  /* The plan the receipt names, from the store (promote puts it there). */
  if ((st = tl_store_get(store, plan_id, &bytes, &len, why, sizeof why)) != TL_OK) {
    *rule = TL_RULE_MISSING_OUTPUT;
    snprintf(err, err_cap, "its plan: %s", why);
    return st;
  }
  st = tl_plan_parse(bytes, len, &plan, why, sizeof why);
  free(bytes);
  if (st != TL_OK) {
    snprintf(err, err_cap, "its plan %s: %s", json_string_value(json_object_get(plan_meta, "plan_id")),
             why);
    return st;
  }
  {
    const tl_plan_claim *cl = NULL;
    for (size_t i = 0; i < plan.n_claims && cl == NULL; i++)
      if (strcmp(plan.claims[i].name, name) == 0) cl = &plan.claims[i];
    if (cl == NULL || strcmp(cl->kind, kind->kind) != 0) {
      snprintf(err, err_cap, "its plan has no %s claim of that name", kind->kind);
      tl_plan_free(&plan);
      return TL_ERR_CONFLICT;
    }
    {
      /* No session: a judge that reads the weights opens the artifact the
       * plan names, by its absolute path (plan init writes one), and
       * checks it is the plan's by its SHA-256. */
      tl_claim_ctx c = {store, NULL, plan.artifact_path[0] == '/' ? plan.artifact_path : NULL,
                        plan.lane, 0, cl->json, NULL, why, sizeof why, true,
                        plan.artifact_id, false};
      why[0] = '\0';
      st = kind->judge(&c, observation, &r);
    }
  }
  tl_plan_free(&plan);
  if (st != TL_OK) {
    if (st == TL_ERR_NOT_FOUND || st == TL_ERR_HASH_MISMATCH) *rule = TL_RULE_MISSING_OUTPUT;
    snprintf(err, err_cap, "its raw observation cannot be judged again: %s", why);
    return st;
  }
  compare(&r, cmp, why, sizeof why);
  tl_claim_result_free(&r);
  if (why[0] != '\0') {
    snprintf(err, err_cap, "%s", why);
    return TL_ERR_CONFLICT;
  }
  return TL_OK;
}
