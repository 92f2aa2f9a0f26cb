#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "compare.h"
#include "model/observe.h"

static long find_record(const tl_golden *g, tl_qwen3_stage stage, int32_t layer) {
  for (size_t i = 0; i < g->n_records; i++)
    if (g->records[i].stage == stage && g->records[i].layer == layer) return (long)i;
  return -1;
}

static long find_position(const tl_golden *g, uint32_t pos) {
  size_t lo = 0, hi = g->n_positions;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (g->positions[mid] == pos) return (long)mid;
    if (g->positions[mid] < pos) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/* The capture sink: the candidate's rows of the golden's records. */
typedef struct capture_ctx {
  const tl_golden *g;
  tl_verify_obs *o;
} capture_ctx;

static bool wants(void *p, tl_qwen3_stage stage, int32_t layer, uint32_t pos) {
  capture_ctx *c = p;
  return find_record(c->g, stage, layer) >= 0 && find_position(c->g, pos) >= 0;
}

static void row(void *p, tl_qwen3_stage stage, int32_t layer, uint32_t pos, const float *data,
                size_t n) {
  capture_ctx *c = p;
  long r = find_record(c->g, stage, layer), t = find_position(c->g, pos);
  size_t per_row;
  if (r < 0 || t < 0) return;
  per_row = c->g->records[r].count / c->g->n_positions;
  if (n != per_row) {
    c->o->shape_error = true;
    return;
  }
  memcpy(c->o->cand[r] + (size_t)t * per_row, data, n * sizeof *data);
  c->o->filled[r]++;
}

static uint32_t argmax(const float *x, size_t n) {
  uint32_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = (uint32_t)i; /* lowest id on ties */
  return best;
}

static tl_status obs_alloc(tl_verify_obs *o, const tl_golden *g, uint32_t layers) {
  size_t steps = g->n_continuation ? g->n_continuation : 1;
  memset(o, 0, sizeof *o);
  o->n_records = g->n_records;
  o->layers = layers;
  o->cand = calloc(g->n_records ? g->n_records : 1, sizeof *o->cand);
  o->filled = calloc(g->n_records ? g->n_records : 1, sizeof *o->filled);
  o->es = calloc(layers ? layers : 1, sizeof *o->es);
  o->step_argmax = calloc(steps, sizeof *o->step_argmax);
  o->step_top = calloc(steps, sizeof *o->step_top);
  o->step_rms = calloc(steps, sizeof *o->step_rms);
  if (!o->cand || !o->filled || !o->es || !o->step_argmax || !o->step_top || !o->step_rms)
    return TL_ERR_OUT_OF_MEMORY;
  for (size_t r = 0; r < g->n_records; r++) {
    o->cand[r] = calloc(g->records[r].count ? g->records[r].count : 1, sizeof(float));
    if (o->cand[r] == NULL) return TL_ERR_OUT_OF_MEMORY;
  }
  return TL_OK;
}

void tl_verify_obs_free(tl_verify_obs *o) {
  for (size_t r = 0; o->cand && r < o->n_records; r++) free(o->cand[r]);
  free(o->cand);
  free(o->filled);
  free(o->es);
  free(o->step_argmax);
  free(o->step_top);
  free(o->step_rms);
  memset(o, 0, sizeof *o);
}

tl_status tl_verify_observe(tl_session *s, const tl_golden *g, bool capture, bool greedy,
                            tl_verify_obs *o, tl_qwen3_fault *fault, char *err,
                            size_t err_cap) {
  const tl_qwen3 *m = &s->qwen;
  tl_qtype q = m->layers[0].q.type;
  capture_ctx cc = {g, o};
  tl_qwen3_capture cap = {wants, row, &cc};
  tl_status st = obs_alloc(o, g, m->cfg.layers);
  if (st != TL_OK) {
    snprintf(err, err_cap, "out of memory for the capture");
    return st;
  }
  o->quantized = q == TL_QTYPE_Q8 || q == TL_QTYPE_Q4;
  if (m->fast != NULL && (st = tl_kv_score_errors(m, o->es)) != TL_OK) {
    snprintf(err, err_cap, "the KV cache's error terms: %s", tl_status_name(st));
    return st;
  }
  for (size_t i = 0; i < g->n_ids; i++)
    if (g->ids[i] >= m->cfg.vocab) {
      snprintf(err, err_cap, "the golden's prompt id %u is outside the vocabulary", g->ids[i]);
      return TL_ERR_INVALID_ARGUMENT;
    }
  st = tl_qwen3_forward(&s->qwen, &s->cache, g->ids, g->n_ids, s->logits,
                        capture ? &cap : NULL, &s->arena, fault);
  if (st == TL_OK && o->shape_error) {
    snprintf(err, err_cap, "golden record shapes do not match the model");
    return TL_ERR_INVALID_MODEL;
  }
  if (st != TL_OK) {
    snprintf(err, err_cap, "the forward pass failed: %s", tl_status_name(st));
    return st;
  }
  /* The continuation, fed the reference's tokens up to the first step
   * whose argmax differs (the sequences part there). */
  for (size_t step = 0; greedy && step < g->n_continuation; step++) {
    uint32_t want = g->continuation[step], got = argmax(s->logits, m->cfg.vocab);
    double rms = 0.0;
    for (size_t i = 0; i < m->cfg.vocab; i++) rms += (double)s->logits[i] * s->logits[i];
    o->step_argmax[step] = got;
    o->step_top[step] = s->logits[got];
    o->step_rms[step] = sqrt(rms / m->cfg.vocab);
    o->n_steps = step + 1;
    if (got != want || step + 1 == g->n_continuation) break;
    st = tl_qwen3_forward(&s->qwen, &s->cache, &want, 1, s->logits, NULL, &s->arena, fault);
    if (st != TL_OK) {
      snprintf(err, err_cap, "the greedy continuation failed at step %zu: %s", step + 1,
               tl_status_name(st));
      return st;
    }
  }
  return TL_OK;
}

const char *tl_verify_lane_profile(bool fast) {
  return fast ? TL_TOLERANCE_PROFILE_FAST : TL_TOLERANCE_PROFILE;
}

/* ------------------------------------------------------------------------ */
/* Judging                                                                  */

typedef struct result {
  tl_compare_stats s;
  tl_tolerance tol;
  bool failed;
} result;

static tl_tolerance tolerance(const tl_qwen3_config *cfg, const tl_verify_obs *o, bool fast,
                              uint32_t keys, tl_qwen3_stage stage, int32_t layer,
                              double ref_rms) {
  if (!fast) return tl_tolerance_for(cfg, keys, stage, layer, ref_rms);
  return tl_tolerance_for_fast(cfg, keys, stage, layer, ref_rms, o->quantized, o->es);
}

/* What the index of a failing element means for its stage. */
static void locate(const tl_qwen3_config *cfg, const tl_golden *g, const tl_golden_record *rec,
                   size_t index, json_t *o) {
  size_t per_row = rec->count / g->n_positions, j = index % per_row;
  size_t keys = g->n_ids, d = cfg->head_dim;
  json_object_set_new(o, "position", json_integer(g->positions[index / per_row]));
  switch (rec->stage) {
    case TL_QWEN3_STAGE_Q: case TL_QWEN3_STAGE_Q_NORM: case TL_QWEN3_STAGE_Q_ROPE:
    case TL_QWEN3_STAGE_ATTN_OUT:
      json_object_set_new(o, "head", json_integer((json_int_t)(j / d)));
      json_object_set_new(o, "dim", json_integer((json_int_t)(j % d)));
      break;
    case TL_QWEN3_STAGE_K: case TL_QWEN3_STAGE_V: case TL_QWEN3_STAGE_K_NORM:
    case TL_QWEN3_STAGE_K_ROPE:
      json_object_set_new(o, "kv_head", json_integer((json_int_t)(j / d)));
      json_object_set_new(o, "dim", json_integer((json_int_t)(j % d)));
      break;
    case TL_QWEN3_STAGE_SCORES: case TL_QWEN3_STAGE_SCORES_MASKED:
    case TL_QWEN3_STAGE_PROBS:
      json_object_set_new(o, "head", json_integer((json_int_t)(j / keys)));
      json_object_set_new(o, "key", json_integer((json_int_t)(j % keys)));
      break;
    default:
      json_object_set_new(o, "index", json_integer((json_int_t)j));
  }
}

/* JSON has no infinities: masked scores are written as text. */
static json_t *number_json(double v) {
  if (isfinite(v)) return json_real(v);
  return json_string(v != v ? "nan" : v > 0 ? "inf" : "-inf");
}

static json_t *divergence(const tl_qwen3_config *cfg, const tl_golden *g, size_t r,
                          const result *res, float *const *cand, size_t probes) {
  const tl_golden_record *rec = &g->records[r];
  size_t i = res[r].s.first_fail;
  double ref = rec->values[i];
  float c = cand[r][i];
  char bits[40];
  json_t *o = json_object();
  json_object_set_new(o, "stage", json_string(tl_qwen3_stage_name(rec->stage)));
  json_object_set_new(o, "layer", rec->layer < 0 ? json_null() : json_integer(rec->layer));
  json_object_set_new(o, "layer_probes", json_integer((json_int_t)probes));
  locate(cfg, g, rec, i, o);
  json_object_set_new(o, "flat_index", json_integer((json_int_t)i));
  json_object_set_new(o, "reference", number_json(ref));
  json_object_set_new(o, "candidate", number_json((double)c));
  snprintf(bits, sizeof bits, "%016llx", (unsigned long long)tl_f64_to_bits(ref));
  json_object_set_new(o, "reference_bits_f64", json_string(bits));
  snprintf(bits, sizeof bits, "%08x", tl_f32_to_bits(c));
  json_object_set_new(o, "candidate_bits_f32", json_string(bits));
  json_object_set_new(o, "tolerance", json_pack("{s:f,s:f}", "rtol", res[r].tol.rtol, "atol",
                                                res[r].tol.atol));
  return o;
}

/* Whether the golden's (stage, layer) record failed, for
 * tl_qwen3_first_divergence (the bisection tinylm observe --compare
 * shares). */
typedef struct failed_ctx {
  const tl_golden *g;
  const result *res;
} failed_ctx;

static int record_state(void *p, tl_qwen3_stage stage, int32_t layer) {
  const failed_ctx *c = p;
  long r = find_record(c->g, stage, layer);
  return r < 0 ? 0 : c->res[r].failed ? 2 : 1;
}

static long first_divergence(const tl_golden *g, const result *res, uint32_t layers,
                             size_t *probes) {
  failed_ctx c = {g, res};
  tl_qwen3_stage stage;
  int32_t layer;
  if (!tl_qwen3_first_divergence(layers, record_state, &c, &stage, &layer, probes)) return -1;
  return find_record(g, stage, layer);
}

/* The continuation's verdict: a different token is a failure when the
 * reference's margin exceeds twice the error bound of the logits,
 * "unstable" otherwise (docs/architecture.md §6). */
static json_t *greedy_verdict(const tl_qwen3_config *cfg, const tl_golden *g,
                              const tl_verify_obs *o, bool fast, size_t *n_failed) {
  const char *verdict = "same";
  size_t step = 0;
  double margin = 0.0, bound = 0.0;
  for (; step < o->n_steps; step++) {
    if (o->step_argmax[step] != g->continuation[step]) {
      /* The golden holds no logits for continuation steps, so the atol
       * scale is this run's own logits RMS (same magnitude by then). */
      tl_tolerance tol = tolerance(cfg, o, fast, (uint32_t)(g->n_ids + step),
                                   TL_QWEN3_STAGE_LOGITS, -1, o->step_rms[step]);
      margin = g->margins[step];
      bound = tol.atol + tol.rtol * fabs((double)o->step_top[step]);
      verdict = margin > 2 * bound ? "different" : "unstable";
      if (margin > 2 * bound) (*n_failed)++;
      break;
    }
  }
  if (step == o->n_steps && o->n_steps < g->n_continuation) verdict = "missing";
  return json_pack("{s:I,s:I,s:s,s:f,s:f}", "steps", (json_int_t)g->n_continuation, "agreed",
                   (json_int_t)step, "verdict", verdict, "margin", margin, "error_bound", bound);
}

json_t *tl_verify_judge(const tl_qwen3_config *cfg, const tl_golden *g,
                        const tl_verify_obs *o, const char *profile, bool judge_records,
                        bool judge_greedy) {
  bool fast;
  size_t n_failed = 0, n_missing = 0, n_logits_different = 0, n_greedy_different = 0;
  result *res;
  json_t *out, *records, *logit_rows, *missing_rows;
  if (strcmp(profile, TL_TOLERANCE_PROFILE) == 0) fast = false;
  else if (strcmp(profile, TL_TOLERANCE_PROFILE_FAST) == 0) fast = true;
  else return NULL;
  res = calloc(g->n_records ? g->n_records : 1, sizeof *res);
  if (res == NULL) return NULL;
  out = json_object();
  records = json_array();
  logit_rows = json_array();
  missing_rows = json_array();
  for (size_t r = 0; judge_records && r < g->n_records; r++) {
    const tl_golden_record *rec = &g->records[r];
    if (o->filled[r] != g->n_positions) {
      n_missing++;
      res[r].failed = true;
      res[r].s.first_fail = 0;
      json_array_append_new(missing_rows, json_pack(
          "{s:s,s:o,s:I}", "stage", tl_qwen3_stage_name(rec->stage), "layer",
          rec->layer < 0 ? json_null() : json_integer(rec->layer), "elements",
          (json_int_t)rec->count));
      continue;
    }
    res[r].tol = tolerance(cfg, o, fast, (uint32_t)g->n_ids, rec->stage, rec->layer,
                           tl_rms(rec->values, rec->count));
    tl_compare(rec->values, o->cand[r], rec->count, res[r].tol,
               1e-3 * tl_rms(rec->values, rec->count), &res[r].s);
    res[r].failed = res[r].s.n_fail > 0;
    n_failed += res[r].failed;
    json_array_append_new(records, json_pack(
        "{s:s,s:o,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:f,s:b,s:o}", "stage",
        tl_qwen3_stage_name(rec->stage), "layer",
        rec->layer < 0 ? json_null() : json_integer(rec->layer), "elements",
        (json_int_t)rec->count, "failing", (json_int_t)res[r].s.n_fail, "max_abs",
        res[r].s.max_abs, "max_rel", res[r].s.max_rel, "rms_err", res[r].s.rms_err, "nrmse",
        res[r].s.nrmse, "cosine", res[r].s.cosine, "max_ulp", (json_int_t)res[r].s.max_ulp,
        "rtol", res[r].tol.rtol, "pass", !res[r].failed, "bound_ratio",
        isfinite(res[r].s.max_bound_ratio) ? json_real(res[r].s.max_bound_ratio) : json_null()));
    if (rec->stage == TL_QWEN3_STAGE_LOGITS) {
      size_t v = rec->count / g->n_positions;
      for (size_t t = 0; t < g->n_positions; t++) {
        tl_logit_stats ls;
        double e;
        const char *verdict;
        tl_compare_logits(rec->values + t * v, o->cand[r] + t * v, v, 10, &ls);
        e = res[r].tol.atol + res[r].tol.rtol * fabs(rec->values[t * v + ls.ref_argmax]);
        verdict = ls.ref_argmax == ls.cand_argmax ? "same"
                  : ls.margin > 2 * e             ? "different"
                                                  : "unstable";
        if (strcmp(verdict, "different") == 0) n_logits_different++;
        json_array_append_new(logit_rows, json_pack(
            "{s:I,s:f,s:I,s:I,s:I,s:f,s:f,s:s}", "position", (json_int_t)g->positions[t], "jsd",
            ls.jsd, "top10_overlap", (json_int_t)ls.topk_overlap, "reference_argmax",
            (json_int_t)ls.ref_argmax, "candidate_argmax", (json_int_t)ls.cand_argmax, "margin",
            ls.margin, "error_bound", e, "greedy", verdict));
      }
    }
  }
  json_object_set_new(out, "profile", json_string(profile));
  json_object_set_new(out, "reference",
                      json_pack("{s:s,s:s}", "producer", g->producer, "precision", g->precision));
  json_object_set_new(out, "records", records);
  json_object_set_new(out, "logits", logit_rows);
  json_object_set_new(out, "missing", json_integer((json_int_t)n_missing));
  json_object_set_new(out, "missing_records", missing_rows);
  if (judge_greedy && g->n_continuation > 0) {
    json_t *gr = greedy_verdict(cfg, g, o, fast, &n_greedy_different);
    if (strcmp(json_string_value(json_object_get(gr, "verdict")), "missing") == 0) n_missing++;
    json_object_set_new(out, "greedy", gr);
  }
  /* One set of counts, which the human header prints too. */
  json_object_set_new(out, "counts", json_pack(
      "{s:I,s:I,s:I,s:I,s:I}", "records", (json_int_t)(judge_records ? g->n_records : 0),
      "failing", (json_int_t)n_failed, "missing", (json_int_t)n_missing, "logits_different",
      (json_int_t)n_logits_different, "greedy_different", (json_int_t)n_greedy_different));
  n_failed += n_logits_different + n_greedy_different;
  if (judge_records && n_failed + n_missing > 0) {
    size_t probes = 0;
    long r = first_divergence(g, res, cfg->layers, &probes);
    json_object_set_new(out, "first_divergence",
                        r >= 0 && res[r].s.first_fail != SIZE_MAX && o->filled[r]
                            ? divergence(cfg, g, (size_t)r, res, o->cand, probes)
                            : json_null());
  }
  json_object_set_new(out, "pass", json_boolean(n_failed + n_missing == 0));
  free(res);
  return out;
}

/* ------------------------------------------------------------------------ */
/* Storing an observation                                                   */

static json_t *bits_array_f64(const double *x, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) {
    char hex[24];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)tl_f64_to_bits(x[i]));
    json_array_append_new(a, json_string(hex));
  }
  return a;
}

tl_status tl_verify_obs_encode(const tl_verify_obs *o, const tl_golden *g,
                               const uint8_t *metadata, size_t metadata_len,
                               const char *weights, tl_golden_producer p, uint8_t **capture,
                               size_t *capture_len, json_t **side) {
  json_t *filled = json_array(), *steps = json_array();
  tl_status st = tl_golden_write_run(g, o->cand, metadata, metadata_len, weights, p, capture,
                                     capture_len);
  if (st != TL_OK) {
    json_decref(filled);
    json_decref(steps);
    return st;
  }
  for (size_t r = 0; r < o->n_records; r++)
    json_array_append_new(filled, json_integer((json_int_t)o->filled[r]));
  for (size_t s = 0; s < o->n_steps; s++) {
    char top[16], rms[24];
    snprintf(top, sizeof top, "%08x", tl_f32_to_bits(o->step_top[s]));
    snprintf(rms, sizeof rms, "%016llx", (unsigned long long)tl_f64_to_bits(o->step_rms[s]));
    json_array_append_new(steps, json_pack("{s:I,s:s,s:s}", "argmax",
                                           (json_int_t)o->step_argmax[s], "top_f32", top,
                                           "rms_f64", rms));
  }
  *side = json_pack("{s:o,s:o,s:b,s:o}", "filled", filled, "es_f64",
                    bits_array_f64(o->es, o->layers), "quantized", o->quantized, "greedy",
                    steps);
  return *side ? TL_OK : TL_ERR_OUT_OF_MEMORY;
}

static bool hex_bits(const json_t *v, int digits, uint64_t *out) {
  const char *s = json_string_value(v);
  char *end;
  if (s == NULL || (int)strlen(s) != digits) return false;
  *out = strtoull(s, &end, 16);
  return *end == '\0';
}

tl_status tl_verify_obs_decode(const tl_golden *g, const uint8_t *capture, size_t capture_len,
                               const json_t *side, tl_verify_obs *o, char *err,
                               size_t err_cap) {
  tl_golden c;
  const json_t *filled = json_object_get(side, "filled"), *es = json_object_get(side, "es_f64"),
               *steps = json_object_get(side, "greedy");
  tl_status st = tl_golden_read(capture, capture_len, &c, err, err_cap);
  if (st != TL_OK) return st;
  st = obs_alloc(o, g, (uint32_t)json_array_size(es));
  if (st == TL_OK && (c.n_records != g->n_records || json_array_size(filled) != g->n_records ||
                      json_array_size(steps) > (g->n_continuation ? g->n_continuation : 0) ||
                      !json_is_boolean(json_object_get(side, "quantized")))) {
    snprintf(err, err_cap, "the stored capture does not fit the golden");
    st = TL_ERR_INVALID_ARGUMENT;
  }
  for (size_t r = 0; st == TL_OK && r < g->n_records; r++) {
    if (c.records[r].count != g->records[r].count || c.records[r].stage != g->records[r].stage ||
        c.records[r].layer != g->records[r].layer) {
      snprintf(err, err_cap, "the stored capture's record %zu is not the golden's", r);
      st = TL_ERR_INVALID_ARGUMENT;
      break;
    }
    for (size_t i = 0; i < c.records[r].count; i++) o->cand[r][i] = (float)c.records[r].values[i];
    o->filled[r] = (size_t)json_integer_value(json_array_get(filled, r));
  }
  o->quantized = json_is_true(json_object_get(side, "quantized"));
  for (size_t l = 0; st == TL_OK && l < o->layers; l++) {
    uint64_t b;
    if (!hex_bits(json_array_get(es, l), 16, &b)) st = TL_ERR_INVALID_ARGUMENT;
    else o->es[l] = tl_bits_to_f64(b);
  }
  for (size_t s = 0; st == TL_OK && s < json_array_size(steps); s++) {
    const json_t *e = json_array_get(steps, s);
    uint64_t top, rms;
    if (!json_is_integer(json_object_get(e, "argmax")) ||
        !hex_bits(json_object_get(e, "top_f32"), 8, &top) ||
        !hex_bits(json_object_get(e, "rms_f64"), 16, &rms)) {
      snprintf(err, err_cap, "the stored greedy step %zu is malformed", s);
      st = TL_ERR_INVALID_ARGUMENT;
      break;
    }
    o->step_argmax[s] = (uint32_t)json_integer_value(json_object_get(e, "argmax"));
    o->step_top[s] = tl_bits_to_f32((uint32_t)top);
    o->step_rms[s] = tl_bits_to_f64(rms);
    o->n_steps = s + 1;
  }
  tl_golden_free(&c);
  if (st != TL_OK) tl_verify_obs_free(o);
  return st;
}
