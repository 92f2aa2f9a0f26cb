/* The numerical claims of tinylm promote (docs/promotion.md): `forward`
 * (every capture point of each golden within the tolerance profile) and
 * `greedy` (each golden's continuation). The raw observation is the
 * lane's capture (a tinylm.golden/1 document of its values, one store
 * object per golden), a side record per case (verify.h) and the model's
 * shape; the judge reads only those and the stored goldens, so the same
 * observation is judged again under another profile (promote --reuse)
 * and by every reader, without running the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "bytes.h"
#include "compare.h"
#include "file.h"
#include "golden.h"
#include "hash/sha256.h"
#include "promote.h"
#include "promote_plan.h"
#include "verify.h"

/* The profile a claim is judged by (tl_claim_profile). */
static const char *claim_profile(const tl_claim_ctx *c) {
  return tl_claim_profile("forward", "numerical",
                          json_string_value(json_object_get(c->claim, "tolerance")), c->lane);
}

/* A case's golden: read, checked against the plan's SHA-256, put into the
 * store (so the evidence holds the reference it was judged by). */
static tl_status load_golden(tl_claim_ctx *c, const json_t *cs, tl_golden *g, uint8_t gid[32]) {
  const json_t *ref = json_object_get(cs, "golden");
  const char *path = json_string_value(json_object_get(ref, "path"));
  uint8_t want[32], got[32];
  char full[4096];
  tl_file_view v;
  tl_status st;
  if (path == NULL || !tl_hex32_parse(json_string_value(json_object_get(ref, "sha256")), want)) {
    snprintf(c->err, c->err_cap, "a %s case needs golden.path and golden.sha256",
             json_string_value(json_object_get(c->claim, "kind")));
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (path[0] == '/' || c->plan_dir == NULL) snprintf(full, sizeof full, "%s", path);
  else snprintf(full, sizeof full, "%s/%s", c->plan_dir, path);
  if ((st = tl_file_open_regular(full, &v, c->err, c->err_cap)) != TL_OK) return st;
  st = tl_sha256(v.data, v.len, got);
  if (st == TL_OK && memcmp(got, want, 32) != 0) {
    snprintf(c->err, c->err_cap, "%s: its SHA-256 is not the one the plan registered", full);
    st = TL_ERR_HASH_MISMATCH;
  }
  if (st == TL_OK) st = tl_store_put(c->store, "golden", v.data, v.len, gid, c->err, c->err_cap);
  if (st == TL_OK) {
    st = tl_golden_read(v.data, v.len, g, c->err, c->err_cap);
    if (st != TL_OK) {
      char why[512];
      snprintf(why, sizeof why, "%s", c->err);
      snprintf(c->err, c->err_cap, "%s: %s", full, why);
    }
  }
  tl_file_close_view(&v);
  return st;
}

/* A session of its own for one golden: the whole prompt in one forward
 * call (every captured score row spans all of its keys). */
static tl_status golden_session(tl_claim_ctx *c, const tl_golden *g, tl_session *s) {
  tl_lane_options o = tl_lane_defaults();
  tl_status st;
  o.fast = strcmp(c->lane, "fast") == 0;
  if (c->threads) o.threads = c->threads;
  st = tl_session_open_shared(s, &c->session->model, c->slm_path, c->err, c->err_cap);
  if (st != TL_OK) return st;
  st = tl_session_lane(s, &o, c->err, c->err_cap);
  if (st == TL_OK && g->n_ids + g->n_continuation > UINT32_MAX) st = TL_ERR_CONTEXT_EXCEEDED;
  if (st == TL_OK)
    st = tl_session_plan(s, (uint32_t)(g->n_ids + g->n_continuation), g->n_ids, c->err,
                         c->err_cap);
  if (st == TL_OK) st = tl_session_allocate(s, 0, c->err, c->err_cap);
  if (st != TL_OK) tl_session_close(s);
  return st;
}

/* The judgement object of a case: the verdict's figures per record
 * (tinylm.judgement/1: verify --json's report under the profile, beside
 * the case, golden and capture it judged), named by the comparison so
 * that the report plots only stored numbers (docs/report.md). */
static tl_status put_judgement(const tl_claim_ctx *c, const json_t *entry, const json_t *rep,
                               tl_claim_result *out) {
  json_t *doc = json_pack("{s:s,s:O,s:O,s:O,s:s,s:O}", "format", "tinylm.judgement/1", "case",
                          json_object_get(entry, "case"), "golden",
                          json_object_get(entry, "golden"), "capture",
                          json_object_get(entry, "capture"), "profile", claim_profile(c),
                          "report", rep);
  char *text = doc ? tl_plan_canonical(doc) : NULL;
  uint8_t id[32];
  tl_status st = text == NULL ? TL_ERR_OUT_OF_MEMORY
                 : c->reading ? tl_sha256(text, strlen(text), id)
                              : tl_store_put(c->store, "judgement", (const uint8_t *)text,
                                             strlen(text), id, c->err, c->err_cap);
  if (st == TL_OK) st = tl_claim_result_support(out, id);
  free(text);
  json_decref(doc);
  return st;
}

/* Judges one case's observation; appends its outcome, its judgement
 * object and the claim's first failure. */
static tl_status judge_case(const tl_claim_ctx *c, bool greedy, const tl_qwen3_config *cfg,
                            const tl_golden *g, const tl_verify_obs *o, const json_t *entry,
                            const char *label, tl_claim_result *out, size_t i, double *worst,
                            size_t *failing_records) {
  json_t *rep = tl_verify_judge(cfg, g, o, claim_profile(c), !greedy, greedy);
  const char *rule = NULL;
  tl_status st = TL_OK;
  char *canon = tl_plan_canonical(entry);
  tl_case_outcome *oc = &out->cases[i];
  oc->invariant = greedy ? "greedy_ids" : "records_within_tolerance";
  if (canon != NULL) tl_sha256(canon, strlen(canon), oc->output);
  free(canon);
  if (rep == NULL) {
    oc->pass = false;
    rule = TL_RULE_MISSING_OUTPUT;
    snprintf(out->first_divergence, sizeof out->first_divergence, "%s: cannot be judged", label);
  } else {
    const json_t *counts = json_object_get(rep, "counts"), *gr = json_object_get(rep, "greedy");
    size_t i2;
    json_t *rec;
    oc->pass = json_is_true(json_object_get(rep, "pass"));
    *failing_records += (size_t)json_integer_value(json_object_get(counts, "failing"));
    json_array_foreach(json_object_get(rep, "records"), i2, rec) {
      double nrmse = json_real_value(json_object_get(rec, "nrmse"));
      if (nrmse > *worst) *worst = nrmse;
    }
    if (!oc->pass) {
      const char *gv = json_string_value(json_object_get(gr, "verdict"));
      char *d = json_dumps(greedy ? gr : json_object_get(rep, "first_divergence"),
                           JSON_COMPACT | JSON_ENCODE_ANY);
      rule = json_integer_value(json_object_get(counts, "missing")) > 0 ? TL_RULE_MISSING_OUTPUT
             : gv != NULL && strcmp(gv, "unstable") == 0               ? TL_RULE_SAMPLER_TIE
                                                                        : TL_RULE_TOLERANCE;
      if (out->first_divergence[0] == '\0')
        snprintf(out->first_divergence, sizeof out->first_divergence, "%s (%s): %s", label,
                 json_string_value(json_object_get(rep, "profile")), d ? d : "");
      free(d);
    }
  }
  if (rep != NULL) st = put_judgement(c, entry, rep, out);
  json_decref(rep);
  if (rule != NULL && out->stop_rule == NULL) out->stop_rule = rule;
  if (!oc->pass) out->pass = false;
  return st;
}

static void summarize(tl_claim_ctx *c, bool greedy, tl_claim_result *out, double worst,
                      size_t failing_records) {
  size_t passed = 0;
  for (size_t i = 0; i < out->n_cases; i++) passed += out->cases[i].pass;
  if (greedy)
    snprintf(out->summary, sizeof out->summary, "%zu of %zu continuations agree (profile %s)",
             passed, out->n_cases, claim_profile(c));
  else
    snprintf(out->summary, sizeof out->summary,
             "%zu of %zu goldens within profile %s; %zu failing records; worst NRMSE %.3g",
             passed, out->n_cases, claim_profile(c), failing_records, worst);
}

/* The model's shape the tolerance profiles need (tl_qwen3_config), floats
 * as their IEEE bits, and back. */
static json_t *config_json(const tl_qwen3_config *k) {
  char eps[9], theta[17];
  snprintf(eps, sizeof eps, "%08x", (unsigned)tl_f32_to_bits(k->rms_eps));
  snprintf(theta, sizeof theta, "%016llx", (unsigned long long)tl_f64_to_bits(k->rope_theta));
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:s}", "vocab", (json_int_t)k->vocab,
                   "hidden", (json_int_t)k->hidden, "inter", (json_int_t)k->inter, "layers",
                   (json_int_t)k->layers, "heads", (json_int_t)k->heads, "kv_heads",
                   (json_int_t)k->kv_heads, "head_dim", (json_int_t)k->head_dim,
                   "max_positions", (json_int_t)k->max_positions, "rms_eps_f32", eps,
                   "rope_theta_f64", theta);
}

static bool config_read(const json_t *j, tl_qwen3_config *k) {
  const char *names[] = {"vocab", "hidden", "inter", "layers", "heads", "kv_heads", "head_dim",
                         "max_positions"};
  uint32_t *fields[] = {&k->vocab, &k->hidden,   &k->inter,    &k->layers,
                        &k->heads, &k->kv_heads, &k->head_dim, &k->max_positions};
  const char *eps = json_string_value(json_object_get(j, "rms_eps_f32"));
  const char *theta = json_string_value(json_object_get(j, "rope_theta_f64"));
  unsigned e;
  unsigned long long t;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    json_int_t v = json_integer_value(json_object_get(j, names[i]));
    if (v < 1 || v > (json_int_t)UINT32_MAX) return false;
    *fields[i] = (uint32_t)v;
  }
  if (eps == NULL || theta == NULL || strlen(eps) != 8 || strlen(theta) != 16 ||
      sscanf(eps, "%8x", &e) != 1 || sscanf(theta, "%16llx", &t) != 1)
    return false;
  k->rms_eps = tl_bits_to_f32((uint32_t)e);
  k->rope_theta = tl_bits_to_f64((uint64_t)t);
  return true;
}

/* OBSERVE. The observation object: {"claim", "kind", "lane", "config",
 * "cases": [{"case": id, "golden": object id, "capture": object id,
 * "side": {..}} or {"case", "golden", "fault": {...}}]}. */
static tl_status numeric(tl_claim_ctx *c, bool greedy, tl_claim_result *out) {
  const json_t *cases;
  json_t *obs = json_array();
  tl_status st = tl_claim_result_begin(c, out, &cases);
  for (size_t i = 0; st == TL_OK && i < out->n_cases; i++) {
    const json_t *cs = json_object_get(json_array_get(cases, i), "case");
    char gid_hex[65], cap_hex[65], case_hex[65];
    uint8_t gid[32], cap_id[32];
    tl_golden g;
    tl_session s;
    tl_verify_obs o;
    tl_qwen3_fault fault;
    if ((st = load_golden(c, cs, &g, gid)) != TL_OK) break;
    tl_hex_encode(gid, 32, gid_hex);
    tl_hex_encode(out->cases[i].id, 32, case_hex);
    if ((st = golden_session(c, &g, &s)) != TL_OK) {
      tl_golden_free(&g);
      break;
    }
    st = tl_verify_observe(&s, &g, !greedy, greedy, &o, &fault, c->err, c->err_cap);
    if (st == TL_ERR_NUMERICAL_FAILURE) {
      /* A non-finite value where the reference is finite: the raw output
       * is where it happened. */
      json_array_append_new(
          obs, json_pack("{s:s,s:s,s:{s:s,s:i,s:I,s:I}}", "case", case_hex, "golden", gid_hex,
                         "fault", "stage", tl_qwen3_stage_name(fault.stage), "layer",
                         (int)fault.layer, "position", (json_int_t)fault.pos, "index",
                         (json_int_t)fault.index));
      st = TL_OK;
    } else if (st == TL_OK) {
      const tl_slm_section *meta;
      uint8_t *doc = NULL;
      size_t doc_len = 0;
      json_t *side = NULL;
      st = tl_slm_find(&s.model.slm, TL_SLM_METADATA, &meta);
      if (st == TL_OK)
        st = tl_verify_obs_encode(&o, &g, meta->data, meta->len, c->slm_path,
                                  (tl_golden_producer){s.lane.fast ? "tinylm-fast"
                                                                   : "tinylm-scalar",
                                                       tl_native_lane_profile(&s.lane)},
                                  &doc, &doc_len, &side);
      if (st == TL_OK)
        st = tl_store_put(c->store, "capture", doc, doc_len, cap_id, c->err, c->err_cap);
      free(doc);
      if (st == TL_OK) {
        tl_hex_encode(cap_id, 32, cap_hex);
        json_array_append_new(obs, json_pack("{s:s,s:s,s:s,s:O}", "case", case_hex, "golden",
                                             gid_hex, "capture", cap_hex, "side", side));
      }
      json_decref(side);
      tl_verify_obs_free(&o);
    }
    tl_session_close(&s);
    tl_golden_free(&g);
  }
  if (st == TL_OK) {
    json_t *doc = json_pack("{s:s,s:s,s:s,s:o,s:O}", "claim",
                            json_string_value(json_object_get(c->claim, "name")), "kind",
                            greedy ? "greedy" : "forward", "lane", c->lane, "config",
                            config_json(&c->session->qwen.cfg), "cases", obs);
    char *text = tl_plan_canonical(doc);
    st = text ? tl_store_put(c->store, "observation", (const uint8_t *)text, strlen(text),
                             out->observation, c->err, c->err_cap)
              : TL_ERR_OUT_OF_MEMORY;
    out->has_observation = st == TL_OK;
    free(text);
    json_decref(doc);
  }
  json_decref(obs);
  if (st != TL_OK) tl_claim_result_free(out);
  return st;
}

tl_status tl_claim_forward(tl_claim_ctx *c, tl_claim_result *out) { return numeric(c, false, out); }
tl_status tl_claim_greedy(tl_claim_ctx *c, tl_claim_result *out) { return numeric(c, true, out); }

/* A case whose forward pass met a non-finite value: one under every
 * profile. */
static void judge_fault(const json_t *e, const char *label, tl_claim_result *out, size_t i) {
  const json_t *f = json_object_get(e, "fault");
  out->pass = false;
  out->cases[i].pass = false;
  out->cases[i].invariant = "finite";
  if (out->stop_rule == NULL) out->stop_rule = TL_RULE_NON_FINITE;
  if (out->first_divergence[0] == '\0')
    snprintf(out->first_divergence, sizeof out->first_divergence,
             "%s: non-finite value at stage %s, layer %d, position %lld, index %lld", label,
             json_string_value(json_object_get(f, "stage")),
             (int)json_integer_value(json_object_get(f, "layer")),
             (long long)json_integer_value(json_object_get(f, "position")),
             (long long)json_integer_value(json_object_get(f, "index")));
}

/* JUDGE: the stored observation under the claim's profile; the cases must
 * be the observation's, in order. */
static tl_status numeric_judge(tl_claim_ctx *c, bool greedy, const uint8_t observation[32],
                               tl_claim_result *out) {
  const json_t *cases;
  uint8_t *bytes = NULL;
  size_t len = 0;
  json_t *doc = NULL, *entries = NULL;
  tl_qwen3_config cfg;
  double worst = 0.0;
  size_t failing = 0;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st == TL_OK) st = tl_store_get(c->store, observation, &bytes, &len, c->err, c->err_cap);
  if (st == TL_OK) {
    doc = json_loadb((const char *)bytes, len, JSON_REJECT_DUPLICATES, NULL);
    entries = json_object_get(doc, "cases");
    if (json_array_size(entries) != out->n_cases ||
        !config_read(json_object_get(doc, "config"), &cfg)) {
      snprintf(c->err, c->err_cap,
               "the stored observation holds other cases, or no model config");
      st = TL_ERR_INVALID_ARGUMENT;
    }
  }
  memcpy(out->observation, observation, 32);
  out->has_observation = true;
  for (size_t i = 0; st == TL_OK && i < out->n_cases; i++) {
    const json_t *e = json_array_get(entries, i),
                 *cs = json_object_get(json_array_get(cases, i), "case");
    const char *label = json_string_value(json_object_get(cs, "label"));
    uint8_t gid[32], cap_id[32], case_id[32];
    uint8_t *gb = NULL, *cb = NULL;
    size_t gl = 0, cl = 0;
    tl_golden g;
    tl_verify_obs o;
    if (label == NULL) label = "golden";
    if (!tl_hex32_parse(json_string_value(json_object_get(e, "case")), case_id) ||
        memcmp(case_id, out->cases[i].id, 32) != 0 ||
        !tl_hex32_parse(json_string_value(json_object_get(e, "golden")), gid)) {
      snprintf(c->err, c->err_cap, "the stored observation's case %zu is not the plan's", i);
      st = TL_ERR_INVALID_ARGUMENT;
      break;
    }
    st = tl_claim_result_support(out, gid);
    if (st == TL_OK && json_object_get(e, "fault") != NULL) {
      char *canon = tl_plan_canonical(e);
      if (canon == NULL) st = TL_ERR_OUT_OF_MEMORY;
      else tl_sha256(canon, strlen(canon), out->cases[i].output);
      free(canon);
      judge_fault(e, label, out, i);
      continue;
    }
    if (st == TL_OK && !tl_hex32_parse(json_string_value(json_object_get(e, "capture")), cap_id)) {
      snprintf(c->err, c->err_cap, "the stored observation's case %zu names no capture", i);
      st = TL_ERR_INVALID_ARGUMENT;
    }
    if (st == TL_OK) st = tl_store_get(c->store, gid, &gb, &gl, c->err, c->err_cap);
    if (st == TL_OK) st = tl_store_get(c->store, cap_id, &cb, &cl, c->err, c->err_cap);
    if (st == TL_OK) st = tl_claim_result_support(out, cap_id);
    if (st == TL_OK) st = tl_golden_read(gb, gl, &g, c->err, c->err_cap);
    if (st == TL_OK) {
      st = tl_verify_obs_decode(&g, cb, cl, json_object_get(e, "side"), &o, c->err, c->err_cap);
      if (st == TL_OK) {
        st = judge_case(c, greedy, &cfg, &g, &o, e, label, out, i, &worst, &failing);
        tl_verify_obs_free(&o);
      }
      tl_golden_free(&g);
    }
    free(gb);
    free(cb);
  }
  free(bytes);
  json_decref(doc);
  if (st == TL_OK) summarize(c, greedy, out, worst, failing);
  else tl_claim_result_free(out);
  return st;
}

tl_status tl_judge_forward(tl_claim_ctx *c, const uint8_t observation[32], tl_claim_result *out) {
  return numeric_judge(c, false, observation, out);
}
tl_status tl_judge_greedy(tl_claim_ctx *c, const uint8_t observation[32], tl_claim_result *out) {
  return numeric_judge(c, true, observation, out);
}
