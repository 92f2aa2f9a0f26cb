/* The comparison and promotion receipts' writers (promote_receipt.h):
 * each node's metadata as deterministic CBOR, sealed and encoded by
 * receipt.c (tl_graph_receipt_encode), then checked as any reader checks
 * it, so that nothing is written that `receipt show` would refuse. */
#include "promote_receipt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor/cbor.h"
#include "cbor_alloc.h"
#include "receipt.h"
#include "tool_msg.h"

typedef struct facts_arg {
  const tl_comparison_facts *c;
  const tl_promotion_facts *p;
  int which;
  const tl_signature_facts *s;
} facts_arg;

static void put_text_or_null(tl_cbor_writer *w, const char *s) {
  if (s != NULL)
    tl_cbor_put_cstr(w, s);
  else
    tl_cbor_put_null(w);
}

/* The two nodes a run receipt has too, with the same metadata. */
static void emit_shared(tl_cbor_writer *w, const tl_promote_runtime *rt, int which) {
  if (which == 0) tl_receipt_put_artifact(w, rt->artifact_id);
  else tl_receipt_put_runtime(w, rt->backend, rt->build_id, rt->numerical_profile);
}

static void emit_comparison(tl_cbor_writer *w, const void *arg) {
  const facts_arg *a = arg;
  const tl_comparison_facts *f = a->c;
  const tl_claim_result *r = f->result;
  switch (a->which) {
    case 0:
    case 1:
      emit_shared(w, &f->rt, a->which);
      break;
    case 2: /* plan */
      tl_cbor_begin_map(w, 5);
      tl_cbor_put_cstr(w, "plan_id");
      tl_cbor_put_bytes(w, f->plan_id, 32);
      tl_cbor_put_cstr(w, "claim");
      tl_cbor_put_cstr(w, f->claim);
      tl_cbor_put_cstr(w, "kind");
      tl_cbor_put_cstr(w, f->kind);
      tl_cbor_put_cstr(w, "level");
      tl_cbor_put_cstr(w, f->level);
      tl_cbor_put_cstr(w, "oracle");
      tl_cbor_put_cstr(w, f->oracle);
      tl_cbor_end_map(w);
      break;
    case 3: /* policy */
      tl_cbor_begin_map(w, 2);
      tl_cbor_put_cstr(w, "tolerance");
      put_text_or_null(w, f->tolerance);
      tl_cbor_put_cstr(w, "design_sha256");
      if (f->design_sha256 != NULL)
        tl_cbor_put_bytes(w, f->design_sha256, 32);
      else
        tl_cbor_put_null(w);
      tl_cbor_end_map(w);
      break;
    case 4: /* evidence */
      tl_cbor_begin_map(w, 2);
      tl_cbor_put_cstr(w, "cases");
      tl_cbor_begin_array(w, r->n_cases);
      for (size_t i = 0; i < r->n_cases; i++) {
        const tl_case_outcome *c = &r->cases[i];
        tl_cbor_begin_map(w, 4);
        tl_cbor_put_cstr(w, "id");
        tl_cbor_put_bytes(w, c->id, 32);
        tl_cbor_put_cstr(w, "invariant");
        tl_cbor_put_cstr(w, c->invariant);
        tl_cbor_put_cstr(w, "pass");
        tl_cbor_put_bool(w, c->pass);
        tl_cbor_put_cstr(w, "output");
        tl_cbor_put_bytes(w, c->output, 32);
        tl_cbor_end_map(w);
      }
      tl_cbor_end_array(w);
      tl_cbor_put_cstr(w, "observations");
      tl_cbor_begin_array(w, r->has_observation ? 1 + r->n_support : 0);
      if (r->has_observation) tl_cbor_put_bytes(w, r->observation, 32);
      for (size_t i = 0; r->has_observation && i < r->n_support; i++)
        tl_cbor_put_bytes(w, r->support[i], 32);
      tl_cbor_end_array(w);
      tl_cbor_end_map(w);
      break;
    default: /* comparison */
      tl_cbor_begin_map(w, 5);
      tl_cbor_put_cstr(w, "verdict");
      tl_cbor_put_cstr(w, r->pass ? "pass" : "fail");
      tl_cbor_put_cstr(w, "stop_rule");
      put_text_or_null(w, r->stop_rule);
      tl_cbor_put_cstr(w, "first_divergence");
      put_text_or_null(w, r->first_divergence[0] ? r->first_divergence : NULL);
      tl_cbor_put_cstr(w, "summary");
      tl_cbor_put_cstr(w, r->summary);
      tl_cbor_put_cstr(w, "attempt");
      tl_cbor_put_uint(w, f->attempt);
      tl_cbor_end_map(w);
  }
}

static void emit_promotion(tl_cbor_writer *w, const void *arg) {
  const facts_arg *a = arg;
  const tl_promotion_facts *f = a->p;
  size_t ran = 0, failing = 0, rules = 0;
  for (size_t i = 0; i < f->n_claims; i++) {
    const tl_promotion_claim *c = &f->claims[i];
    ran += c->receipt_id != NULL;
    failing += c->receipt_id == NULL || !c->pass;
    rules += c->receipt_id != NULL && c->stop_rule != NULL;
  }
  switch (a->which) {
    case 0:
    case 1:
      emit_shared(w, &f->rt, a->which);
      break;
    case 2: /* plan */
      tl_cbor_begin_map(w, 3);
      tl_cbor_put_cstr(w, "plan_id");
      tl_cbor_put_bytes(w, f->plan_id, 32);
      tl_cbor_put_cstr(w, "lane");
      tl_cbor_put_cstr(w, f->lane);
      tl_cbor_put_cstr(w, "claims");
      tl_cbor_begin_array(w, f->n_claims);
      for (size_t i = 0; i < f->n_claims; i++) tl_cbor_put_cstr(w, f->claims[i].claim);
      tl_cbor_end_array(w);
      tl_cbor_end_map(w);
      break;
    case 3: /* comparisons: the claims that ran */
      tl_cbor_begin_map(w, 1);
      tl_cbor_put_cstr(w, "receipts");
      tl_cbor_begin_array(w, ran);
      for (size_t i = 0; i < f->n_claims; i++) {
        const tl_promotion_claim *c = &f->claims[i];
        if (c->receipt_id == NULL) continue;
        tl_cbor_begin_map(w, 4);
        tl_cbor_put_cstr(w, "claim");
        tl_cbor_put_cstr(w, c->claim);
        tl_cbor_put_cstr(w, "receipt_id");
        tl_cbor_put_bytes(w, c->receipt_id, 32);
        tl_cbor_put_cstr(w, "verdict");
        tl_cbor_put_cstr(w, c->pass ? "pass" : "fail");
        tl_cbor_put_cstr(w, "stop_rule");
        put_text_or_null(w, c->stop_rule);
        tl_cbor_end_map(w);
      }
      tl_cbor_end_array(w);
      tl_cbor_end_map(w);
      break;
    default: /* promotion: the conjunction */
      tl_cbor_begin_map(w, 4);
      tl_cbor_put_cstr(w, "decision");
      tl_cbor_put_cstr(w, failing == 0 ? "promoted" : "not_promoted");
      tl_cbor_put_cstr(w, "failing");
      tl_cbor_begin_array(w, failing);
      for (size_t i = 0; i < f->n_claims; i++)
        if (f->claims[i].receipt_id == NULL || !f->claims[i].pass)
          tl_cbor_put_cstr(w, f->claims[i].claim);
      tl_cbor_end_array(w);
      tl_cbor_put_cstr(w, "stop_rules");
      tl_cbor_begin_array(w, rules);
      for (size_t i = 0; i < f->n_claims; i++) {
        const tl_promotion_claim *c = &f->claims[i];
        if (c->receipt_id == NULL || c->stop_rule == NULL) continue;
        tl_cbor_begin_map(w, 2);
        tl_cbor_put_cstr(w, "rule");
        tl_cbor_put_cstr(w, c->stop_rule);
        tl_cbor_put_cstr(w, "claim");
        tl_cbor_put_cstr(w, c->claim);
        tl_cbor_end_map(w);
      }
      tl_cbor_end_array(w);
      tl_cbor_put_cstr(w, "run_record");
      tl_cbor_put_bytes(w, f->run_record, 32);
      tl_cbor_end_map(w);
  }
}

static void emit_signature(tl_cbor_writer *w, const void *arg) {
  const tl_signature_facts *f = ((const facts_arg *)arg)->s;
  tl_cbor_begin_map(w, 5);
  tl_cbor_put_cstr(w, "signed");
  tl_cbor_put_bytes(w, f->signed_root, 32);
  tl_cbor_put_cstr(w, "signed_format");
  tl_cbor_put_cstr(w, TL_PROMOTION_FORMAT);
  tl_cbor_put_cstr(w, "algorithm");
  tl_cbor_put_cstr(w, "ed25519");
  tl_cbor_put_cstr(w, "public_key");
  tl_cbor_put_bytes(w, f->public_key, 32);
  tl_cbor_put_cstr(w, "signature");
  tl_cbor_put_bytes(w, f->signature, 64);
  tl_cbor_end_map(w);
}

/* The node types, children and emitters of one format. */
static tl_status write_graph(const char *format, const char *const *types, size_t n,
                             tl_cbor_emit_fn emit, facts_arg a, const char *what,
                             uint8_t **doc, size_t *len, uint8_t root[32], char *err,
                             size_t cap) {
  tl_graph_node nodes[6];
  uint8_t *meta[6] = {NULL};
  uint8_t checked[32];
  tl_status st = TL_OK;
  memset(nodes, 0, sizeof nodes);
  *doc = NULL;
  *len = 0;
  for (size_t i = 0; i < n && st == TL_OK; i++) {
    a.which = (int)i;
    st = tl_cbor_encode_alloc(emit, &a, &meta[i], &nodes[i].meta_len);
    nodes[i].meta = meta[i];
    nodes[i].type = types[i];
  }
  /* The root's children: every other node, in order. */
  nodes[n - 1].n_kids = n - 1;
  for (size_t k = 0; k + 1 < n; k++) nodes[n - 1].kids[k] = k;
  if (st == TL_OK) st = tl_graph_receipt_encode(format, nodes, n, NULL, 0, doc, len, root);
  for (size_t i = 0; i < n; i++) free(meta[i]);
  if (st != TL_OK)
    return tl_fail(err, cap, st, "%s: encoding failed (%s; text must be UTF-8)", what,
                   tl_status_name(st));
  /* What a reader would refuse is never written. */
  st = tl_graph_receipt_check(*doc, *len, format, checked, err, cap);
  if (st == TL_OK && memcmp(checked, root, 32) != 0) st = TL_ERR_INTERNAL_INVARIANT;
  if (st != TL_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", err);
    free(*doc);
    *doc = NULL;
    *len = 0;
    return tl_fail(err, cap, st == TL_ERR_HASH_MISMATCH ? TL_ERR_INTERNAL_INVARIANT : st,
                   "%s: %s", what, why);
  }
  return TL_OK;
}

#define NEED(cond, what) \
  if (!(cond)) return tl_fail(err, err_cap, TL_ERR_INVALID_ARGUMENT, "%s", what)

static tl_status runtime_given(const tl_promote_runtime *rt, char *err, size_t err_cap) {
  NEED(rt->artifact_id != NULL, "a promote receipt needs the artifact id");
  NEED(rt->build_id != NULL && rt->backend != NULL && rt->numerical_profile != NULL,
       "a promote receipt needs the build id, the lane and its numerical profile");
  return TL_OK;
}

tl_status tl_comparison_receipt(const tl_comparison_facts *f, uint8_t **doc, size_t *len,
                                uint8_t root[32], char *err, size_t err_cap) {
  static const char *const types[] = {"artifact", "runtime",  "plan",
                                      "policy",   "evidence", "comparison"};
  char what[160];
  tl_status st;
  facts_arg a = {f, NULL, 0, NULL};
  *doc = NULL;
  *len = 0;
  if ((st = runtime_given(&f->rt, err, err_cap)) != TL_OK) return st;
  NEED(f->plan_id != NULL && f->claim != NULL && f->kind != NULL && f->level != NULL &&
           f->oracle != NULL && f->result != NULL,
       "a comparison receipt needs the plan id, the claim's name, kind, level and "
       "oracle, and its result");
  NEED(f->result->summary[0] != '\0', "a comparison receipt needs the result's summary");
  for (size_t i = 0; i < f->result->n_cases; i++)
    NEED(f->result->cases[i].invariant != NULL, "every case names its invariant");
  snprintf(what, sizeof what, "the comparison receipt of claim '%.64s'", f->claim);
  return write_graph(TL_COMPARISON_FORMAT, types, 6, emit_comparison, a, what, doc, len,
                     root, err, err_cap);
}

tl_status tl_promotion_receipt(const tl_promotion_facts *f, uint8_t **doc, size_t *len,
                               uint8_t root[32], char *err, size_t err_cap) {
  static const char *const types[] = {"artifact", "runtime", "plan", "comparisons",
                                      "promotion"};
  tl_status st;
  facts_arg a = {NULL, f, 0, NULL};
  *doc = NULL;
  *len = 0;
  if ((st = runtime_given(&f->rt, err, err_cap)) != TL_OK) return st;
  NEED(f->plan_id != NULL && f->lane != NULL && f->run_record != NULL,
       "a promotion receipt needs the plan id, the lane and the run record");
  NEED(f->n_claims > 0 && f->claims != NULL, "a promotion receipt needs the claims");
  for (size_t i = 0; i < f->n_claims; i++)
    NEED(f->claims[i].claim != NULL, "every claim has its name");
  return write_graph(TL_PROMOTION_FORMAT, types, 5, emit_promotion, a,
                     "the promotion receipt", doc, len, root, err, err_cap);
}

tl_status tl_signature_receipt(const tl_signature_facts *f, uint8_t **doc, size_t *len,
                               uint8_t root[32], char *err, size_t err_cap) {
  static const char *const types[] = {"signature"};
  facts_arg a = {NULL, NULL, 0, f};
  return write_graph(TL_SIGNATURE_FORMAT, types, 1, emit_signature, a, "the signature receipt",
                     doc, len, root, err, err_cap);
}
