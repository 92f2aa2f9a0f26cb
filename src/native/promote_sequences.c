/* The claims of tinylm promote that generate through the public API
 * (docs/api.md), as an embedder would: `multiturn` (a next turn that
 * reuses the cached prefix equals recomputing the whole conversation);
 * the stochastic claim is promote_stochastic.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cli.h"
#include "hash/sha256.h"
#include "promote.h"
#include "promote_plan.h"
#include "utf8.h"

static tl_status put_observation(tl_claim_ctx *c, json_t *doc, tl_claim_result *out) {
  char *text = tl_plan_canonical(doc);
  tl_status st = text ? tl_store_put(c->store, "observation", (const uint8_t *)text,
                                     strlen(text), out->observation, c->err, c->err_cap)
                      : TL_ERR_OUT_OF_MEMORY;
  out->has_observation = st == TL_OK;
  free(text);
  return st;
}

/* One generation's record: what the receipt-free comparison needs. */
typedef struct run_rec {
  uint32_t *ids;
  size_t n_ids;
  uint8_t *raw;
  size_t raw_len;
  char stop[16];
  tl_sha256_ctx logits_hash; /* every step's logits, in order (multiturn) */
  uint8_t logits_digest[32];
  uint32_t reused, position;
} run_rec;

static void on_choice(void *ctx, const float *logits, size_t vocab, uint32_t id) {
  run_rec *r = ctx;
  (void)id;
  tl_sha256_update(&r->logits_hash, logits, vocab * sizeof *logits);
}

static void run_free(run_rec *r) {
  free(r->ids);
  free(r->raw);
  r->ids = NULL;
  r->raw = NULL;
}

/* Generates once on s; r gets the ids, raw bytes, stop and digests. */
static tl_status generate(tl_claim_ctx *c, tl_session_handle s, tl_generation_params *p,
                          run_rec *r) {
  tl_generation_handle g;
  tl_generation_result res;
  tl_status st = tl_generation_new(s, &g);
  if (st != TL_OK) return tl_claim_api_fail(c, s, st, "a generation");
  tl_sha256_init(&r->logits_hash);
  p->on_choice = on_choice;
  p->ctx = r;
  st = tl_generation_run(g, p);
  if (st != TL_OK) {
    tl_claim_api_fail(c, g, st, "generating");
    tl_generation_free(g);
    return st;
  }
  tl_generation_result_get(g, &res);
  r->ids = malloc((res.n_ids ? res.n_ids : 1) * sizeof *r->ids);
  r->raw = malloc(res.raw_len ? res.raw_len : 1);
  if (r->ids == NULL || r->raw == NULL) st = TL_ERR_OUT_OF_MEMORY;
  else {
    memcpy(r->ids, res.ids, res.n_ids * sizeof *r->ids);
    memcpy(r->raw, res.raw, res.raw_len);
    r->n_ids = res.n_ids;
    r->raw_len = res.raw_len;
    r->position = res.position;
    snprintf(r->stop, sizeof r->stop, "%s", res.stop);
    tl_sha256_final(&r->logits_hash, r->logits_digest);
  }
  tl_generation_free(g);
  return st;
}

static json_t *ids_json(const uint32_t *ids, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
  return a;
}

static json_t *hex_json(const uint8_t *p, size_t n) {
  char *h = malloc(2 * n + 1);
  json_t *v;
  if (h == NULL) return NULL;
  tl_hex_encode(p, n, h);
  v = json_string(h);
  free(h);
  return v;
}

/* A conversation file for the API from a case: its messages, a reply
 * prompt, its thinking switch. */
static char *conversation(const json_t *messages, bool thinking) {
  json_t *conv = json_pack("{s:O,s:b,s:b}", "messages", messages, "add_generation_prompt", 1,
                           "enable_thinking", thinking);
  char *text = json_dumps(conv, JSON_COMPACT);
  json_decref(conv);
  return text;
}

/* ------------------------------------------------------------------------ */
/* multiturn                                                                */

/* OBSERVE one case: turn 1 greedy on session A; turn 2 (the conversation
 * with the reply and the next user message) on A reusing its cache, and
 * on a fresh session B computing everything. */
static tl_status multiturn_case(tl_claim_ctx *c, tl_model_handle m, const json_t *cs,
                                json_t **entry) {
  const json_t *messages = json_object_get(cs, "messages");
  const char *next = json_string_value(json_object_get(cs, "next_user"));
  json_int_t max_new = json_integer_value(json_object_get(cs, "max_new"));
  bool thinking = json_is_true(json_object_get(cs, "enable_thinking"));
  tl_session_handle a = 0, b = 0;
  tl_generation_params p;
  run_rec t1 = {0}, reuse = {0}, fresh = {0};
  char *conv1 = NULL, *conv2 = NULL;
  json_t *messages2 = NULL;
  tl_status st;
  if (!json_is_array(messages) || next == NULL || max_new < 1 || max_new > 4096) {
    snprintf(c->err, c->err_cap,
             "a multiturn case needs messages, next_user and max_new in 1..4096");
    return TL_ERR_INVALID_ARGUMENT;
  }
  memset(&p, 0, sizeof p);
  p.given = TL_GIVEN_TEMPERATURE; /* greedy: the comparison is of bits, not draws */
  p.max_tokens = (uint32_t)max_new;
  st = tl_claim_open_session(c, m, c->lane, 0, &a);
  if (st == TL_OK) st = tl_claim_open_session(c, m, c->lane, 0, &b);
  if (st == TL_OK && (conv1 = conversation(messages, thinking)) == NULL) st = TL_ERR_OUT_OF_MEMORY;
  if (st == TL_OK) {
    p.messages_json = conv1;
    p.messages_len = strlen(conv1);
    st = generate(c, a, &p, &t1);
  }
  if (st == TL_OK) {
    /* The reply as the template will see it next turn: its raw bytes up to
     * the end-of-turn token the template writes itself. */
    size_t keep = t1.raw_len;
    const char *eot = "<|im_end|>";
    size_t bad;
    if (keep >= strlen(eot) && memcmp(t1.raw + keep - strlen(eot), eot, strlen(eot)) == 0)
      keep -= strlen(eot);
    /* A reply cut by max_new inside a character: the whole characters, as
     * a chat would show it. */
    if (tl_utf8_validate(t1.raw, keep, &bad) != TL_OK) keep = bad;
    messages2 = json_deep_copy(messages);
    json_array_append_new(messages2, json_pack("{s:s,s:s%}", "role", "assistant", "content",
                                               (const char *)t1.raw, keep));
    json_array_append_new(messages2, json_pack("{s:s,s:s}", "role", "user", "content", next));
    if ((conv2 = conversation(messages2, thinking)) == NULL) st = TL_ERR_OUT_OF_MEMORY;
  }
  if (st == TL_OK) {
    p.messages_json = conv2;
    p.messages_len = strlen(conv2);
    p.flags = TL_GENERATE_REUSE_PREFIX;
    st = generate(c, a, &p, &reuse);
  }
  if (st == TL_OK) {
    p.flags = 0;
    st = generate(c, b, &p, &fresh);
  }
  if (st == TL_OK) {
    *entry = json_pack("{s:{s:o,s:o,s:s},s:{s:o,s:o,s:s,s:o,s:I},s:{s:o,s:o,s:s,s:o}}", "turn1",
                       "ids", ids_json(t1.ids, t1.n_ids), "raw", hex_json(t1.raw, t1.raw_len),
                       "stop", t1.stop, "reused", "ids", ids_json(reuse.ids, reuse.n_ids), "raw",
                       hex_json(reuse.raw, reuse.raw_len), "stop", reuse.stop, "logits_sha256",
                       hex_json(reuse.logits_digest, 32), "reused_tokens",
                       (json_int_t)reuse.position, "recomputed", "ids",
                       ids_json(fresh.ids, fresh.n_ids), "raw", hex_json(fresh.raw, fresh.raw_len),
                       "stop", fresh.stop, "logits_sha256", hex_json(fresh.logits_digest, 32));
    if (*entry == NULL) st = TL_ERR_OUT_OF_MEMORY;
  }
  run_free(&t1);
  run_free(&reuse);
  run_free(&fresh);
  free(conv1);
  free(conv2);
  json_decref(messages2);
  if (a) tl_session_free(a);
  if (b) tl_session_free(b);
  return st;
}

tl_status tl_claim_multiturn(tl_claim_ctx *c, tl_claim_result *out) {
  const json_t *cases;
  json_t *entries = json_array();
  tl_model_handle m = 0;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st == TL_OK) st = tl_claim_open_model(c, &m);
  for (size_t i = 0; st == TL_OK && i < out->n_cases; i++) {
    json_t *entry = NULL;
    st = multiturn_case(c, m, json_object_get(json_array_get(cases, i), "case"), &entry);
    if (st == TL_OK) json_array_append_new(entries, entry);
  }
  if (m) tl_model_close(m);
  if (st == TL_OK) {
    json_t *doc = json_pack("{s:s,s:s,s:s,s:O}", "claim",
                            json_string_value(json_object_get(c->claim, "name")), "kind",
                            "multiturn", "lane", c->lane, "cases", entries);
    st = put_observation(c, doc, out);
    json_decref(doc);
  }
  json_decref(entries);
  if (st != TL_OK) tl_claim_result_free(out);
  return st;
}

/* A stored observation document of a claim: the object, its "cases"
 * array as many as the plan's. */
static tl_status load_observation(tl_claim_ctx *c, const uint8_t observation[32],
                                  tl_claim_result *out, json_t **doc) {
  uint8_t *bytes = NULL;
  size_t len = 0;
  tl_status st = tl_store_get(c->store, observation, &bytes, &len, c->err, c->err_cap);
  *doc = NULL;
  if (st != TL_OK) return st;
  *doc = json_loadb((const char *)bytes, len, JSON_REJECT_DUPLICATES, NULL);
  free(bytes);
  if (json_array_size(json_object_get(*doc, "cases")) != out->n_cases) {
    snprintf(c->err, c->err_cap, "the stored observation holds other cases than the plan's");
    return TL_ERR_INVALID_ARGUMENT;
  }
  memcpy(out->observation, observation, 32);
  out->has_observation = true;
  return TL_OK;
}

/* A case's output hash: SHA-256 of its entry's canonical JSON. */
static tl_status entry_output(const json_t *entry, uint8_t out[32]) {
  char *canon = tl_plan_canonical(entry);
  if (canon == NULL) return TL_ERR_OUT_OF_MEMORY;
  tl_sha256(canon, strlen(canon), out);
  free(canon);
  return TL_OK;
}

/* JUDGE: per case the next turn with the cached prefix reused equals the
 * recomputed one (ids, raw bytes, logits digest) and reused a prefix. */
tl_status tl_judge_multiturn(tl_claim_ctx *c, const uint8_t observation[32],
                             tl_claim_result *out) {
  const json_t *cases;
  json_t *doc = NULL;
  size_t passed = 0;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st == TL_OK) st = load_observation(c, observation, out, &doc);
  for (size_t i = 0; st == TL_OK && i < out->n_cases; i++) {
    const json_t *e = json_array_get(json_object_get(doc, "cases"), i);
    const json_t *reuse = json_object_get(e, "reused"), *fresh = json_object_get(e, "recomputed");
    bool same_ids = json_equal(json_object_get(reuse, "ids"), json_object_get(fresh, "ids"));
    bool same_raw = json_equal(json_object_get(reuse, "raw"), json_object_get(fresh, "raw"));
    bool same_logits = json_equal(json_object_get(reuse, "logits_sha256"),
                                  json_object_get(fresh, "logits_sha256"));
    json_int_t reused = json_integer_value(json_object_get(reuse, "reused_tokens"));
    bool pass = same_ids && same_raw && same_logits && reused > 0;
    st = entry_output(e, out->cases[i].output);
    out->cases[i].invariant = "reuse_equals_recompute";
    out->cases[i].pass = pass;
    passed += pass;
    if (!pass && out->pass) {
      out->pass = false;
      out->stop_rule = TL_RULE_MECHANICAL;
      snprintf(out->first_divergence, sizeof out->first_divergence,
               "case %zu: next turn with the cached prefix (%lld tokens reused) vs recomputed: "
               "ids %s, raw bytes %s, logits %s",
               i, (long long)reused, same_ids ? "equal" : "differ",
               same_raw ? "equal" : "differ", same_logits ? "equal" : "differ");
    }
  }
  json_decref(doc);
  if (st != TL_OK) {
    tl_claim_result_free(out);
    return st;
  }
  snprintf(out->summary, sizeof out->summary,
           "%zu of %zu next turns equal with the cached prefix reused and recomputed", passed,
           out->n_cases);
  return TL_OK;
}
