/* The claims of tinylm promote that generate through the public API
 * (docs/api.md), as an embedder would: `multiturn` (a next turn that
 * reuses the cached prefix equals recomputing the whole conversation) and
 * `stochastic` (two lanes sampled with the same seeds, compared by the
 * statistics of promote_stats.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cli.h"
#include "hash/sha256.h"
#include "promote.h"
#include "promote_plan.h"
#include "promote_stats.h"
#include "utf8.h"

static tl_status api_fail(tl_claim_ctx *c, uint32_t handle, tl_status st, const char *what) {
  tl_error e;
  tl_error_detail(handle, &e);
  snprintf(c->err, c->err_cap, "%s: %s (%s)", what, tl_status_name(st), e.message);
  return st;
}

static tl_status put_observation(tl_claim_ctx *c, json_t *doc, tl_claim_result *out) {
  char *text = tl_plan_canonical(doc);
  tl_status st = text ? tl_store_put(c->store, "observation", (const uint8_t *)text,
                                     strlen(text), out->observation, c->err, c->err_cap)
                      : TL_ERR_OUT_OF_MEMORY;
  out->has_observation = st == TL_OK;
  free(text);
  return st;
}

static tl_status open_session(tl_claim_ctx *c, tl_model_handle m, const char *lane,
                              tl_session_handle *s) {
  tl_session_options o = {0};
  tl_status st;
  o.lane = strcmp(lane, "fast") == 0 ? TL_LANE_FAST : TL_LANE_SCALAR;
  o.threads = c->threads;
  st = tl_session_new(m, &o, s);
  return st == TL_OK ? TL_OK : api_fail(c, m, st, "a session");
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
  double lp;          /* log-prob of the sampled ids (stochastic) */
  float *first;       /* the first step's logits (stochastic: seed 0) */
  size_t vocab;
  uint32_t reused, position;
} run_rec;

static void on_choice(void *ctx, const float *logits, size_t vocab, uint32_t id) {
  run_rec *r = ctx;
  double max = -INFINITY, sum = 0.0;
  tl_sha256_update(&r->logits_hash, logits, vocab * sizeof *logits);
  for (size_t i = 0; i < vocab; i++)
    if (logits[i] > max) max = logits[i];
  for (size_t i = 0; i < vocab; i++) sum += exp((double)logits[i] - max);
  r->lp += (double)logits[id] - max - log(sum);
  if (r->first != NULL && r->vocab == 0) {
    memcpy(r->first, logits, vocab * sizeof *logits);
    r->vocab = vocab;
  }
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
  if (st != TL_OK) return api_fail(c, s, st, "a generation");
  tl_sha256_init(&r->logits_hash);
  r->lp = 0.0;
  p->on_choice = on_choice;
  p->ctx = r;
  st = tl_generation_run(g, p);
  if (st != TL_OK) {
    api_fail(c, g, st, "generating");
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
  st = open_session(c, m, c->lane, &a);
  if (st == TL_OK) st = open_session(c, m, c->lane, &b);
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

static tl_status with_model(tl_claim_ctx *c, tl_model_handle *m) {
  tl_status st = tl_api_init(TL_ABI_VERSION);
  if (st == TL_OK) st = tl_model_open_file(c->slm_path, m);
  return st == TL_OK ? TL_OK : api_fail(c, TL_NO_HANDLE, st, c->slm_path);
}

tl_status tl_claim_multiturn(tl_claim_ctx *c, tl_claim_result *out) {
  const json_t *cases;
  json_t *entries = json_array();
  tl_model_handle m = 0;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st == TL_OK) st = with_model(c, &m);
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

/* ------------------------------------------------------------------------ */
/* stochastic                                                               */

static double real_of(const json_t *v) {
  return json_is_number(v) ? json_number_value(v) : NAN;
}

tl_status tl_stoch_design_parse(const json_t *d, const char *lane, tl_stoch_design *o, char *err,
                                size_t err_cap) {
  static const char *const keys[] = {"lanes",      "seeds",      "samples_per_seed",
                                     "max_new",    "sampling",   "confidence",
                                     "min_effect", "correction", "bootstrap",
                                     "planned_power"};
  const json_t *lanes = json_object_get(d, "lanes"), *seeds = json_object_get(d, "seeds"),
               *eff = json_object_get(d, "min_effect"), *boot = json_object_get(d, "bootstrap");
  const char *k;
  json_t *v;
  memset(o, 0, sizeof *o);
  json_object_foreach((json_t *)d, k, v) {
    size_t i = 0;
    while (i < sizeof keys / sizeof keys[0] && strcmp(keys[i], k) != 0) i++;
    if (i == sizeof keys / sizeof keys[0]) {
      snprintf(err, err_cap, "design: unknown field '%.80s'", k);
      return TL_ERR_INVALID_ARGUMENT;
    }
  }
  o->a = json_string_value(json_object_get(lanes, "a"));
  o->b = json_string_value(json_object_get(lanes, "b"));
  o->base = (uint64_t)json_integer_value(json_object_get(seeds, "base"));
  o->count = (uint32_t)json_integer_value(json_object_get(seeds, "count"));
  o->max_new = (uint32_t)json_integer_value(json_object_get(d, "max_new"));
  o->stats.confidence = real_of(json_object_get(d, "confidence"));
  o->stats.min_tvd = real_of(json_object_get(eff, "tvd"));
  o->stats.min_disagree = real_of(json_object_get(eff, "disagreement"));
  o->stats.min_logp = real_of(json_object_get(eff, "logprob"));
  o->stats.bootstrap_resamples = (uint32_t)json_integer_value(json_object_get(boot, "resamples"));
  o->stats.bootstrap_seed = (uint64_t)json_integer_value(json_object_get(boot, "seed"));
  if (o->a == NULL || o->b == NULL || strcmp(o->a, lane) != 0 ||
      (strcmp(o->b, "scalar") != 0 && strcmp(o->b, "fast") != 0)) {
    snprintf(err, err_cap, "design.lanes: a must be the plan's lane (%s), b scalar or fast", lane);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (!json_is_integer(json_object_get(seeds, "base")) || o->count < 2 || o->count > 100000 ||
      json_integer_value(json_object_get(d, "samples_per_seed")) != 1 || o->max_new < 1 ||
      o->max_new > 4096) {
    snprintf(err, err_cap,
             "design: seeds.base an integer, seeds.count 2..100000, samples_per_seed 1, "
             "max_new 1..4096");
    return TL_ERR_INVALID_ARGUMENT;
  }
  {
    const char *corr = json_string_value(json_object_get(d, "correction"));
    const json_t *sampling = json_object_get(d, "sampling");
    const char *temp = json_string_value(json_object_get(sampling, "temperature"));
    if (corr == NULL || strcmp(corr, "bonferroni") != 0) {
      snprintf(err, err_cap, "design.correction: only \"bonferroni\"");
      return TL_ERR_INVALID_ARGUMENT;
    }
    if (temp == NULL || strcmp(temp, "1") != 0 || json_object_size(sampling) != 1) {
      snprintf(err, err_cap,
               "design.sampling: {\"temperature\": \"1\"} (plain softmax, the distribution the "
               "statistics describe)");
      return TL_ERR_INVALID_ARGUMENT;
    }
  }
  return TL_OK;
}

/* Stop reasons as the statistics' codes. */
static uint8_t stop_code(const char *stop) {
  static const char *const names[] = {"eos", "max_tokens", "stop_string", "context_full"};
  for (uint8_t i = 0; i < 4; i++)
    if (strcmp(stop, names[i]) == 0) return i;
  return 4;
}

/* Per prompt and lane: every seed's draw. */
typedef struct lane_draws {
  float *first; /* the first step's logits (vocab; sampling only) */
  double *p;    /* their softmax (judging only) */
  uint8_t *stop;
  uint32_t *len;
  double *lp;
  uint32_t **ids;
} lane_draws;

static void draws_free(lane_draws *d, uint32_t n) {
  for (uint32_t i = 0; d->ids && i < n; i++) free(d->ids[i]);
  free(d->ids);
  free(d->first);
  free(d->p);
  free(d->stop);
  free(d->len);
  free(d->lp);
  memset(d, 0, sizeof *d);
}

static tl_status draws_alloc(lane_draws *d, uint32_t count) {
  d->stop = calloc(count, 1);
  d->len = calloc(count, sizeof *d->len);
  d->lp = calloc(count, sizeof *d->lp);
  d->ids = calloc(count, sizeof *d->ids);
  return d->stop && d->len && d->lp && d->ids ? TL_OK : TL_ERR_OUT_OF_MEMORY;
}

static tl_status sample_lane(tl_claim_ctx *c, tl_model_handle m, const char *lane,
                             const char *conv, const tl_stoch_design *d, lane_draws *out,
                             size_t vocab) {
  tl_session_handle s;
  tl_generation_params p;
  tl_status st = open_session(c, m, lane, &s);
  if (st != TL_OK) return st;
  out->first = calloc(vocab, sizeof *out->first);
  st = out->first != NULL ? draws_alloc(out, d->count) : TL_ERR_OUT_OF_MEMORY;
  memset(&p, 0, sizeof p);
  p.messages_json = conv;
  p.messages_len = strlen(conv);
  p.given = TL_GIVEN_TEMPERATURE | TL_GIVEN_TOP_K | TL_GIVEN_TOP_P | TL_GIVEN_MIN_P |
            TL_GIVEN_REPEAT_PENALTY;
  p.temperature = 1.0;
  p.top_p = 1.0;
  p.repeat_penalty = 1.0;
  p.max_tokens = d->max_new;
  /* Every seed after the first reuses the prompt's cached prefix. */
  p.flags = TL_GENERATE_REUSE_PREFIX;
  for (uint32_t i = 0; st == TL_OK && i < d->count; i++) {
    run_rec r = {0};
    r.first = i == 0 ? out->first : NULL;
    p.seed = d->base + i;
    st = generate(c, s, &p, &r);
    if (st != TL_OK) break;
    out->stop[i] = stop_code(r.stop);
    out->len[i] = (uint32_t)r.n_ids;
    out->lp[i] = r.lp;
    out->ids[i] = r.ids;
    r.ids = NULL;
    run_free(&r);
    if (i == 0 && r.vocab != vocab) {
      snprintf(c->err, c->err_cap, "the first step's logits are missing");
      st = TL_ERR_INTERNAL_INVARIANT;
    }
  }
  tl_session_free(s);
  return st;
}

/* One lane's raw output: the first step's logits as a store object (f32
 * LE), every seed's ids, stop code and log-probability (bits). */
static json_t *lane_json(tl_claim_ctx *c, const lane_draws *d, uint32_t count, size_t vocab,
                         tl_status *st) {
  json_t *seeds = json_array();
  uint8_t lid[32];
  uint8_t *bytes = malloc(vocab * 4);
  if (bytes == NULL) {
    *st = TL_ERR_OUT_OF_MEMORY;
    return seeds;
  }
  for (size_t i = 0; i < vocab; i++) tl_store_le32(bytes + 4 * i, tl_f32_to_bits(d->first[i]));
  *st = tl_store_put(c->store, "logits", bytes, vocab * 4, lid, c->err, c->err_cap);
  free(bytes);
  for (uint32_t i = 0; i < count; i++) {
    char lp[24];
    snprintf(lp, sizeof lp, "%016llx", (unsigned long long)tl_f64_to_bits(d->lp[i]));
    json_array_append_new(seeds, json_pack("{s:o,s:i,s:s}", "ids", ids_json(d->ids[i], d->len[i]),
                                           "stop", d->stop[i], "logprob_f64", lp));
  }
  return json_pack("{s:o,s:o}", "first_logits_f32le", hex_json(lid, 32), "seeds", seeds);
}

/* One stored lane read back: its logits object (into out's support when
 * out is not NULL) as a softmax over *vocab tokens (the same for every
 * lane), every seed as sampled. */
static tl_status lane_read(tl_claim_ctx *c, const json_t *j, uint32_t count, lane_draws *d,
                           size_t *vocab, tl_claim_result *out) {
  const json_t *seeds = json_object_get(j, "seeds");
  uint8_t lid[32], *bytes = NULL;
  size_t len = 0;
  double max = -INFINITY, sum = 0.0;
  tl_status st;
  if (!tl_hex32_parse(json_string_value(json_object_get(j, "first_logits_f32le")), lid) ||
      json_array_size(seeds) != count) {
    snprintf(c->err, c->err_cap, "a stored lane names no logits or other seeds than the design");
    return TL_ERR_INVALID_ARGUMENT;
  }
  if ((st = tl_store_get(c->store, lid, &bytes, &len, c->err, c->err_cap)) != TL_OK) return st;
  if (out != NULL) st = tl_claim_result_support(out, lid);
  if (st == TL_OK && (len == 0 || len % 4 != 0 || (*vocab != 0 && *vocab != len / 4))) {
    snprintf(c->err, c->err_cap, "stored logits of %zu bytes do not fit the vocabulary", len);
    st = TL_ERR_INVALID_ARGUMENT;
  }
  if (st == TL_OK) {
    *vocab = len / 4;
    d->p = malloc(*vocab * sizeof *d->p);
    st = d->p != NULL ? draws_alloc(d, count) : TL_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; st == TL_OK && i < *vocab; i++) {
    d->p[i] = tl_bits_to_f32(tl_load_le32(bytes + 4 * i));
    if (d->p[i] > max) max = d->p[i];
  }
  for (size_t i = 0; st == TL_OK && i < *vocab; i++) sum += (d->p[i] = exp(d->p[i] - max));
  for (size_t i = 0; st == TL_OK && i < *vocab; i++) d->p[i] /= sum;
  free(bytes);
  for (uint32_t i = 0; st == TL_OK && i < count; i++) {
    const json_t *sd = json_array_get(seeds, i), *ids = json_object_get(sd, "ids");
    const char *lp = json_string_value(json_object_get(sd, "logprob_f64"));
    json_int_t stop = json_integer_value(json_object_get(sd, "stop"));
    unsigned long long bits;
    d->len[i] = (uint32_t)json_array_size(ids);
    d->ids[i] = calloc(d->len[i] + 1, sizeof **d->ids);
    if (d->ids[i] == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      break;
    }
    for (uint32_t k = 0; k < d->len[i]; k++)
      d->ids[i][k] = (uint32_t)json_integer_value(json_array_get(ids, k));
    if (lp == NULL || strlen(lp) != 16 || sscanf(lp, "%16llx", &bits) != 1 || stop < 0 ||
        stop > 4) {
      snprintf(c->err, c->err_cap, "a stored seed's stop or log-probability is unreadable");
      st = TL_ERR_INVALID_ARGUMENT;
      break;
    }
    d->stop[i] = (uint8_t)stop;
    d->lp[i] = tl_bits_to_f64((uint64_t)bits);
  }
  return st;
}

/* The statistics of stored samples (cases: [{"a": lane, "b": lane}]): the
 * one computation the runner records and the judge repeats. */
static tl_status stoch_stats(tl_claim_ctx *c, const tl_stoch_design *d, const json_t *cases,
                             tl_claim_result *out, tl_stats_report *rep) {
  size_t n = json_array_size(cases), vocab = 0;
  lane_draws *da = calloc(n ? n : 1, sizeof *da), *db = calloc(n ? n : 1, sizeof *db);
  tl_stats_prompt *sp = calloc(n ? n : 1, sizeof *sp);
  uint8_t **differ = calloc(n ? n : 1, sizeof *differ);
  tl_status st = da && db && sp && differ ? TL_OK : TL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; st == TL_OK && i < n; i++) {
    const json_t *e = json_array_get(cases, i);
    st = lane_read(c, json_object_get(e, "a"), d->count, &da[i], &vocab, out);
    if (st == TL_OK) st = lane_read(c, json_object_get(e, "b"), d->count, &db[i], &vocab, out);
    if (st == TL_OK && (differ[i] = calloc(d->count, 1)) == NULL) st = TL_ERR_OUT_OF_MEMORY;
    for (uint32_t s = 0; st == TL_OK && s < d->count; s++)
      differ[i][s] = da[i].len[s] != db[i].len[s] ||
                     memcmp(da[i].ids[s], db[i].ids[s], da[i].len[s] * sizeof(uint32_t)) != 0;
    if (st == TL_OK)
      sp[i] = (tl_stats_prompt){da[i].p, db[i].p, vocab,   d->count,   differ[i], da[i].lp,
                                db[i].lp, da[i].len, db[i].len, da[i].stop, db[i].stop};
  }
  if (st == TL_OK) st = tl_stats_compare(&d->stats, sp, n, rep, c->err, c->err_cap);
  else if (st == TL_ERR_OUT_OF_MEMORY) snprintf(c->err, c->err_cap, "out of memory");
  for (size_t i = 0; i < n; i++) {
    if (da) draws_free(&da[i], d->count);
    if (db) draws_free(&db[i], d->count);
    if (differ) free(differ[i]);
  }
  free(da);
  free(db);
  free(sp);
  free(differ);
  return st;
}

/* OBSERVE: both lanes sample every prompt with every seed; the
 * observation holds every draw and (for the report) the statistics. */
tl_status tl_claim_stochastic(tl_claim_ctx *c, tl_claim_result *out) {
  const json_t *cases;
  tl_stoch_design d;
  tl_model_handle m = 0;
  size_t vocab = 0;
  json_t *entries = json_array();
  tl_stats_report rep;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st == TL_OK)
    st = tl_stoch_design_parse(json_object_get(c->claim, "design"), c->lane, &d, c->err,
                               c->err_cap);
  if (st == TL_OK) st = with_model(c, &m);
  if (st == TL_OK) vocab = c->session->qwen.cfg.vocab;
  for (size_t i = 0; st == TL_OK && i < out->n_cases; i++) {
    const json_t *cs = json_object_get(json_array_get(cases, i), "case");
    char *conv = conversation(json_object_get(cs, "messages"),
                              json_is_true(json_object_get(cs, "enable_thinking")));
    lane_draws da = {0}, db = {0};
    json_t *ja, *jb;
    if (conv == NULL) st = TL_ERR_OUT_OF_MEMORY;
    if (st == TL_OK) st = sample_lane(c, m, d.a, conv, &d, &da, vocab);
    if (st == TL_OK) st = sample_lane(c, m, d.b, conv, &d, &db, vocab);
    free(conv);
    if (st == TL_OK) {
      ja = lane_json(c, &da, d.count, vocab, &st);
      jb = st == TL_OK ? lane_json(c, &db, d.count, vocab, &st) : json_null();
      json_array_append_new(entries, json_pack("{s:o,s:o}", "a", ja, "b", jb));
    }
    draws_free(&da, d.count);
    draws_free(&db, d.count);
  }
  if (m) tl_model_close(m);
  if (st == TL_OK && (st = stoch_stats(c, &d, entries, NULL, &rep)) == TL_OK) {
    json_t *seeds = json_pack("{s:I,s:I,s:s}", "base", (json_int_t)d.base, "count",
                              (json_int_t)d.count, "derivation", "seed_i = base + i");
    json_t *doc = json_pack("{s:s,s:s,s:s,s:s,s:o,s:O,s:o}", "claim",
                            json_string_value(json_object_get(c->claim, "name")), "kind",
                            "stochastic", "a", d.a, "b", d.b, "seeds", seeds, "cases", entries,
                            "statistics", tl_stats_report_json(&rep));
    st = put_observation(c, doc, out);
    json_decref(doc);
    tl_stats_report_free(&rep);
  }
  json_decref(entries);
  if (st != TL_OK) tl_claim_result_free(out);
  return st;
}

/* JUDGE (self-contained, so that another design can replace it): the
 * statistics computed again from the stored samples and logits under the
 * plan's design, which must be the statistics the observation holds; a
 * case passes when none of its statistics alarms, the claim when no test
 * (pooled included) does. */
tl_status tl_judge_stochastic(tl_claim_ctx *c, const uint8_t observation[32],
                              tl_claim_result *out) {
  const json_t *cases;
  json_t *doc = NULL, *stats = NULL;
  tl_stoch_design d;
  tl_stats_report rep;
  bool have_report = false;
  size_t n = 0;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st == TL_OK)
    st = tl_stoch_design_parse(json_object_get(c->claim, "design"), c->lane, &d, c->err,
                               c->err_cap);
  if (st == TL_OK) st = load_observation(c, observation, out, &doc);
  n = out->n_cases;
  for (size_t i = 0; st == TL_OK && i < n; i++) {
    st = entry_output(json_array_get(json_object_get(doc, "cases"), i), out->cases[i].output);
    out->cases[i].invariant = "same_distribution";
  }
  if (st == TL_OK) {
    st = stoch_stats(c, &d, json_object_get(doc, "cases"), out, &rep);
    have_report = st == TL_OK;
  }
  if (st == TL_OK) {
    stats = tl_stats_report_json(&rep);
    if (!json_equal(stats, json_object_get(doc, "statistics"))) {
      snprintf(c->err, c->err_cap, "the stored statistics are not those of the stored samples");
      st = TL_ERR_CONFLICT;
    }
    json_decref(stats);
  }
  if (st == TL_OK) {
    for (size_t i = 0; i < n; i++) {
      const tl_stats_result *r = &rep.prompts[i];
      out->cases[i].pass = !(r->tvd.alarm || r->max_diff.alarm || r->disagree.alarm ||
                             r->logp_diff.alarm || r->stop.alarm || r->lengths.alarm);
    }
    out->pass = !rep.alarm;
    if (rep.alarm) {
      out->stop_rule = TL_RULE_STOCHASTIC;
      snprintf(out->first_divergence, sizeof out->first_divergence, "%s", rep.first_alarm);
    }
    {
      const tl_stats_result *w = rep.has_pooled ? &rep.pooled : &rep.prompts[0];
      snprintf(out->summary, sizeof out->summary,
               "%s vs %s, %zu prompts x %u seeds (every one reported): TVD max %.3g, "
               "disagreement %u of %u, mean log-prob difference %.3g [%.3g, %.3g]; m = %zu, "
               "alpha/m = %.3g",
               d.a, d.b, n, d.count, w->tvd.estimate, w->disagree_count,
               (unsigned)(d.count * (rep.has_pooled ? n : 1)), w->logp_diff.estimate,
               w->logp_diff.lo, w->logp_diff.hi, rep.m, rep.alpha_test);
    }
  }
  if (have_report) tl_stats_report_free(&rep);
  json_decref(doc);
  if (st != TL_OK) tl_claim_result_free(out);
  return st;
}
