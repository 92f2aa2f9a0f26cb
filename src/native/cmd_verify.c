/* tinylm verify: run a model on a golden document's prompt with capture,
 * compare every captured tensor with the golden values under the
 * preregistered tolerance profile (docs/tolerance.md), and on failure
 * name the first divergence: layer (binary search over the residual
 * checkpoints), then stage, then position, head and index. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cli.h"
#include "compare.h"
#include "file.h"
#include "golden.h"
#include "model/observe.h"
#include "model/qwen3.h"
#include "session.h"

static const char usage_text[] =
    "usage: tinylm verify MODEL.slm --golden FILE [--json] [--dump OUT.cbor]\n"
    "                     [--force] [--lane scalar|fast] [-t N] [--mmap]\n"
    "  --dump  also write this run's values for the golden's records, in the\n"
    "          same schema (producer tinylm-scalar or tinylm-fast, with the\n"
    "          lane's numerical profile)\n"
    "  --force replace an existing --dump file (never MODEL or FILE)\n"
    "  FILE: a tinylm.golden/1 document (docs/golden.md), e.g. from\n"
    "  tools/oracle/qwen3_ref.py on the checkpoint the model came from\n"
    "  --lane scalar (default: the strict lane, tolerance scalar-f32-vs-f64/1)\n"
    "  or fast (fast/4, tolerance fast-f32-vs-f64/2: docs/fast-profile.md);\n"
    "  -t N and --mmap as for run\n";

static const struct {
  const char *name;
  uint32_t bit;
} mutations[] = {{"rope_pairing", TL_QWEN3_MUT_ROPE_PAIRING},
                 {"no_q_norm", TL_QWEN3_MUT_NO_Q_NORM},
                 {"gqa_map", TL_QWEN3_MUT_GQA_MAP},
                 {"softmax_no_max", TL_QWEN3_MUT_SOFTMAX_NO_MAX},
                 {"mask_off_by_one", TL_QWEN3_MUT_MASK_OFF_BY_ONE},
                 {"rms_eps", TL_QWEN3_MUT_RMS_EPS}};

/* The candidate's values for each golden record. */
typedef struct capture_ctx {
  const tl_golden *g;
  float **cand;  /* per record, count floats (malloc) */
  size_t *filled; /* rows received per record */
  bool shape_error;
} capture_ctx;

static long find_record(const tl_golden *g, tl_qwen3_stage stage,
                        int32_t layer) {
  for (size_t i = 0; i < g->n_records; i++)
    if (g->records[i].stage == stage && g->records[i].layer == layer)
      return (long)i;
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

static bool wants(void *p, tl_qwen3_stage stage, int32_t layer, uint32_t pos) {
  capture_ctx *c = p;
  return find_record(c->g, stage, layer) >= 0 && find_position(c->g, pos) >= 0;
}

static void row(void *p, tl_qwen3_stage stage, int32_t layer, uint32_t pos,
                const float *data, size_t n) {
  capture_ctx *c = p;
  long r = find_record(c->g, stage, layer), t = find_position(c->g, pos);
  size_t per_row;
  if (r < 0 || t < 0) return;
  per_row = c->g->records[r].count / c->g->n_positions;
  if (n != per_row) {
    c->shape_error = true;
    return;
  }
  memcpy(c->cand[r] + (size_t)t * per_row, data, n * sizeof *data);
  c->filled[r]++;
}

typedef struct result {
  tl_compare_stats s;
  tl_tolerance tol;
  bool failed;
} result;

/* What the index of a failing element means for its stage. */
static void locate(const tl_qwen3_config *cfg, const tl_golden *g,
                   const tl_golden_record *rec, size_t index, json_t *o) {
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

static json_t *divergence(const tl_qwen3_config *cfg, const tl_golden *g,
                          size_t r, const result *res, float *const *cand,
                          size_t probes) {
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
  json_object_set_new(o, "tolerance", json_pack("{s:f,s:f}", "rtol", res[r].tol.rtol,
                                                "atol", res[r].tol.atol));
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

/* The golden record of the first divergence, or -1. */
static long first_divergence(const tl_golden *g, const result *res,
                             uint32_t layers, size_t *probes) {
  failed_ctx c = {g, res};
  tl_qwen3_stage stage;
  int32_t layer;
  if (!tl_qwen3_first_divergence(layers, record_state, &c, &stage, &layer, probes)) return -1;
  return find_record(g, stage, layer);
}

static uint32_t argmax(const float *x, size_t n) {
  uint32_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = (uint32_t)i; /* lowest id on ties */
  return best;
}

/* The tolerance of the lane m runs on: docs/tolerance.md, or for the fast
 * lane docs/fast-profile.md (with the activation-quantization term when
 * the matrices are q8/q4, and the KV cache's from es: tl_kv_score_errors). */
static tl_tolerance tolerance(const tl_qwen3 *m, const double *es, uint32_t keys,
                              tl_qwen3_stage stage, int32_t layer, double ref_rms) {
  tl_qtype q = m->layers[0].q.type;
  if (m->fast == NULL) return tl_tolerance_for(&m->cfg, keys, stage, layer, ref_rms);
  return tl_tolerance_for_fast(&m->cfg, keys, stage, layer, ref_rms,
                               q == TL_QTYPE_Q8 || q == TL_QTYPE_Q4, es);
}

/* Decodes the golden's continuation greedily from the prompt's last
 * logits and compares each step's token with the reference's. A different
 * token is a failure when the reference's margin exceeds twice the error
 * bound of the logits, "unstable" otherwise (DESIGN.md §6); the sequences
 * part there, so the comparison stops. NULL when the forward pass fails. */
static json_t *greedy(const tl_qwen3 *m, const double *es, tl_qwen3_cache *cache,
                      const tl_golden *g, float *logits, tl_arena *scratch,
                      size_t *n_failed) {
  const char *verdict = "same";
  size_t step = 0;
  double margin = 0.0, bound = 0.0;
  for (; step < g->n_continuation; step++) {
    uint32_t want = g->continuation[step], got = argmax(logits, m->cfg.vocab);
    if (got != want) {
      double rms = 0.0;
      tl_tolerance tol;
      for (size_t i = 0; i < m->cfg.vocab; i++) rms += (double)logits[i] * logits[i];
      /* The golden holds no logits for continuation steps, so the atol
       * scale is this run's own logits RMS (same magnitude by then). */
      rms = sqrt(rms / m->cfg.vocab);
      tol = tolerance(m, es, cache->len, TL_QWEN3_STAGE_LOGITS, -1, rms);
      margin = g->margins[step];
      bound = tol.atol + tol.rtol * fabs((double)logits[got]);
      verdict = margin > 2 * bound ? "different" : "unstable";
      if (margin > 2 * bound) (*n_failed)++;
      break;
    }
    if (step + 1 < g->n_continuation &&
        tl_qwen3_forward(m, cache, &want, 1, logits, NULL, scratch, NULL) != TL_OK)
      return NULL;
  }
  return json_pack("{s:I,s:I,s:s,s:f,s:f}", "steps", (json_int_t)g->n_continuation,
                   "agreed", (json_int_t)step, "verdict", verdict, "margin", margin,
                   "error_bound", bound);
}

static long long count_of(const json_t *counts, const char *name) {
  return (long long)json_integer_value(json_object_get(counts, name));
}

int tl_cmd_verify(int argc, char **argv) {
  const char *model_path = NULL, *golden_path = NULL, *dump_path = NULL;
  bool json = false, force = false;
  uint32_t mutate = 0;
  tl_lane_options lane = tl_lane_defaults();
  tl_session s;
  tl_qwen3_fault fault;
  tl_golden g;
  tl_file_view gv;
  capture_ctx cc = {0};
  result *res = NULL;
  double *es = NULL; /* the KV cache's score errors per layer (fast lane) */
  char err[1024];
  tl_status st;
  int rc = TL_EXIT_OK;
  /* failing and missing records; greedy verdicts that differ */
  size_t n_failed = 0, n_missing = 0, n_logits_different = 0, n_greedy_different = 0;
  json_t *out = NULL, *records = NULL, *logit_rows = NULL, *missing_rows = NULL;
  /* --json anywhere makes every usage error JSON. */
  for (int i = 1; i < argc; i++) json |= strcmp(argv[i], "--json") == 0;
  lane.fast = false; /* the strict lane is verify's reference */
  for (int i = 1; i < argc; i++) {
    int lane_rc;
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--golden") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &golden_path);
      if (u >= 0) return u;
    } else if (strcmp(argv[i], "--dump") == 0) {
      int u = tl_cli_output_value(json, argc, argv, &i, &dump_path);
      if (u >= 0) return u;
    } else if (strcmp(argv[i], "--force") == 0) {
      force = true;
    } else if (strcmp(argv[i], "--mutate") == 0) {
      /* Test-only: break one piece on purpose (docs/forward.md). */
      const char *name;
      int u = tl_cli_value(json, argc, argv, &i, &name);
      size_t k = 0;
      if (u >= 0) return u;
      for (; k < sizeof mutations / sizeof mutations[0]; k++)
        if (strcmp(name, mutations[k].name) == 0) break;
      if (k == sizeof mutations / sizeof mutations[0])
        return tl_cli_usage(json, "unknown mutation '%s'", name);
      mutate |= mutations[k].bit;
    } else if ((lane_rc = tl_lane_flag(json, argc, argv, &i, &lane)) != 0) {
      if (lane_rc > 0) return lane_rc;
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i], usage_text);
    } else if (model_path == NULL) {
      model_path = argv[i];
    } else {
      return tl_cli_usage(json, "one MODEL.slm only\n%s", usage_text);
    }
  }
  if (model_path == NULL || golden_path == NULL)
    return tl_cli_usage(json, "MODEL.slm and --golden FILE are required\n%s",
                        usage_text);
  if (dump_path != NULL) {
    const char *inputs[] = {model_path, golden_path};
    st = tl_file_output_check(dump_path, inputs, 2, force, NULL, err, sizeof err);
    if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  }
  st = tl_file_open_view(golden_path, &gv, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  st = tl_golden_read(gv.data, gv.len, &g, err, sizeof err);
  tl_file_close_view(&gv);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s: %s", golden_path, err);
  /* The whole prompt goes in as one call, so that every captured score row
   * spans all of its keys (docs/golden.md): plan for a chunk that long. */
  st = tl_session_open(&s, model_path, err, sizeof err);
  if (st != TL_OK) {
    tl_golden_free(&g);
    return tl_cli_fail(json, st, "%s", err);
  }
  if (st == TL_OK) st = tl_session_lane(&s, &lane, err, sizeof err);
  if (st == TL_OK && g.n_ids + g.n_continuation > UINT32_MAX) {
    st = TL_ERR_CONTEXT_EXCEEDED;
    snprintf(err, sizeof err, "%s: the prompt is too long", golden_path);
  }
  if (st == TL_OK)
    st = tl_session_plan(&s, (uint32_t)(g.n_ids + g.n_continuation), g.n_ids, err, sizeof err);
  if (st == TL_OK) st = tl_session_allocate(&s, 0, err, sizeof err);
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
    goto done;
  }
  s.qwen.mutations = mutate;
  cc.g = &g;
  cc.cand = calloc(g.n_records ? g.n_records : 1, sizeof *cc.cand);
  cc.filled = calloc(g.n_records ? g.n_records : 1, sizeof *cc.filled);
  res = calloc(g.n_records ? g.n_records : 1, sizeof *res);
  es = calloc(s.qwen.cfg.layers ? s.qwen.cfg.layers : 1, sizeof *es);
  if (es != NULL && s.qwen.fast != NULL) st = tl_kv_score_errors(&s.qwen, es);
  for (size_t r = 0; r < g.n_records && cc.cand; r++) {
    cc.cand[r] = calloc(g.records[r].count, sizeof(float));
    if (cc.cand[r] == NULL) st = TL_ERR_OUT_OF_MEMORY;
  }
  if (cc.cand == NULL || cc.filled == NULL || res == NULL || es == NULL) st = TL_ERR_OUT_OF_MEMORY;
  if (st == TL_OK) {
    tl_qwen3_capture cap = {wants, row, &cc};
    for (size_t i = 0; i < g.n_ids; i++)
      if (g.ids[i] >= s.qwen.cfg.vocab) st = TL_ERR_INVALID_ARGUMENT;
    if (st == TL_OK)
      st = tl_qwen3_forward(&s.qwen, &s.cache, g.ids, g.n_ids, s.logits, &cap, &s.arena, &fault);
  }
  if (st == TL_ERR_NUMERICAL_FAILURE) {
    rc = tl_cli_fail(json, st, "non-finite value at stage %s, layer %d, position %u, index %zu",
                     tl_qwen3_stage_name(fault.stage), (int)fault.layer, fault.pos, fault.index);
    goto done;
  }
  if (st != TL_OK || cc.shape_error) {
    rc = tl_cli_fail(json, cc.shape_error ? TL_ERR_INVALID_MODEL : st,
                     "%s", cc.shape_error ? "golden record shapes do not match the model"
                                          : "the forward pass failed");
    goto done;
  }
  if (dump_path != NULL) {
    const tl_slm_section *meta;
    uint8_t *doc = NULL;
    size_t doc_len = 0;
    char label[96];
    snprintf(label, sizeof label, "the weights of %s", model_path);
    st = tl_slm_find(&s.model.slm, TL_SLM_METADATA, &meta);
    if (st == TL_OK)
      st = tl_golden_write_run(&g, cc.cand, meta->data, meta->len, label,
                               (tl_golden_producer){s.lane.fast ? "tinylm-fast" : "tinylm-scalar",
                                                    tl_native_lane_profile(&s.lane)},
                               &doc, &doc_len);
    if (st == TL_OK) st = tl_file_write_atomic(dump_path, doc, doc_len, err, sizeof err);
    else snprintf(err, sizeof err, "%s: cannot encode the capture", dump_path);
    free(doc);
    if (st != TL_OK) {
      rc = tl_cli_fail(json, st, "%s", err);
      goto done;
    }
  }
  out = json_object();
  records = json_array();
  logit_rows = json_array();
  missing_rows = json_array();
  for (size_t r = 0; r < g.n_records; r++) {
    const tl_golden_record *rec = &g.records[r];
    double floor_ = 0.0;
    if (cc.filled[r] != g.n_positions) {
      n_missing++;
      res[r].failed = true;
      res[r].s.first_fail = 0;
      json_array_append_new(missing_rows, json_pack(
          "{s:s,s:o,s:I}", "stage", tl_qwen3_stage_name(rec->stage), "layer",
          rec->layer < 0 ? json_null() : json_integer(rec->layer), "elements",
          (json_int_t)rec->count));
      continue;
    }
    res[r].tol = tolerance(&s.qwen, es, (uint32_t)g.n_ids, rec->stage, rec->layer,
                           tl_rms(rec->values, rec->count));
    floor_ = 1e-3 * tl_rms(rec->values, rec->count);
    tl_compare(rec->values, cc.cand[r], rec->count, res[r].tol, floor_, &res[r].s);
    res[r].failed = res[r].s.n_fail > 0;
    n_failed += res[r].failed;
    json_array_append_new(records, json_pack(
        "{s:s,s:o,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:f,s:b}", "stage",
        tl_qwen3_stage_name(rec->stage), "layer",
        rec->layer < 0 ? json_null() : json_integer(rec->layer), "elements",
        (json_int_t)rec->count, "failing", (json_int_t)res[r].s.n_fail, "max_abs",
        res[r].s.max_abs, "max_rel", res[r].s.max_rel, "rms_err", res[r].s.rms_err,
        "nrmse", res[r].s.nrmse, "cosine", res[r].s.cosine, "max_ulp",
        (json_int_t)res[r].s.max_ulp, "rtol", res[r].tol.rtol, "pass", !res[r].failed));
    if (rec->stage == TL_QWEN3_STAGE_LOGITS) {
      size_t v = rec->count / g.n_positions;
      for (size_t t = 0; t < g.n_positions; t++) {
        tl_logit_stats ls;
        double e;
        const char *verdict;
        tl_compare_logits(rec->values + t * v, cc.cand[r] + t * v, v, 10, &ls);
        e = res[r].tol.atol + res[r].tol.rtol * fabs(rec->values[t * v + ls.ref_argmax]);
        verdict = ls.ref_argmax == ls.cand_argmax ? "same"
                  : ls.margin > 2 * e             ? "different"
                                                  : "unstable";
        if (strcmp(verdict, "different") == 0) n_logits_different++;
        json_array_append_new(logit_rows, json_pack(
            "{s:I,s:f,s:I,s:I,s:I,s:f,s:f,s:s}", "position", (json_int_t)g.positions[t],
            "jsd", ls.jsd, "top10_overlap", (json_int_t)ls.topk_overlap,
            "reference_argmax", (json_int_t)ls.ref_argmax, "candidate_argmax",
            (json_int_t)ls.cand_argmax, "margin", ls.margin, "error_bound", e,
            "greedy", verdict));
      }
    }
  }
  json_object_set_new(out, "profile", json_string(s.qwen.fast ? TL_TOLERANCE_PROFILE_FAST
                                                              : TL_TOLERANCE_PROFILE));
  json_object_set_new(out, "reference", json_pack("{s:s,s:s}", "producer", g.producer,
                                                  "precision", g.precision));
  json_object_set_new(out, "records", records);
  json_object_set_new(out, "logits", logit_rows);
  json_object_set_new(out, "missing", json_integer((json_int_t)n_missing));
  json_object_set_new(out, "missing_records", missing_rows);
  missing_rows = NULL;
  if (g.n_continuation > 0) {
    json_t *gr = greedy(&s.qwen, es, &s.cache, &g, s.logits, &s.arena, &n_greedy_different);
    if (gr == NULL) {
      rc = tl_cli_fail(json, TL_ERR_NUMERICAL_FAILURE, "the greedy continuation failed");
      goto done;
    }
    json_object_set_new(out, "greedy", gr);
  }
  /* One set of counts, which the human header prints too. */
  json_object_set_new(out, "counts", json_pack(
      "{s:I,s:I,s:I,s:I,s:I}", "records", (json_int_t)g.n_records, "failing",
      (json_int_t)n_failed, "missing", (json_int_t)n_missing, "logits_different",
      (json_int_t)n_logits_different, "greedy_different", (json_int_t)n_greedy_different));
  n_failed += n_logits_different + n_greedy_different;
  if (n_failed + n_missing > 0) {
    size_t probes = 0;
    long r = first_divergence(&g, res, s.qwen.cfg.layers, &probes);
    json_object_set_new(out, "first_divergence",
                        r >= 0 && res[r].s.first_fail != SIZE_MAX && cc.filled[r]
                            ? divergence(&s.qwen.cfg, &g, (size_t)r, res, cc.cand, probes)
                            : json_null());
  }
  json_object_set_new(out, "pass", json_boolean(n_failed + n_missing == 0));
  if (json) {
    char *text = json_dumps(out, JSON_COMPACT);
    puts(text);
    free(text);
  } else {
    size_t i;
    json_t *v, *d = json_object_get(out, "first_divergence"),
                *counts = json_object_get(out, "counts");
    printf("profile %s; reference %s (%s); %lld records, %lld failing, %lld missing; "
           "%lld logit rows and %lld greedy steps with a different argmax\n",
           s.qwen.fast ? TL_TOLERANCE_PROFILE_FAST : TL_TOLERANCE_PROFILE, g.producer, g.precision, count_of(counts, "records"),
           count_of(counts, "failing"), count_of(counts, "missing"),
           count_of(counts, "logits_different"), count_of(counts, "greedy_different"));
    printf("  %-14s %5s %10s %10s %10s %9s %12s %6s\n", "stage", "layer", "max_abs",
           "max_rel", "nrmse", "max_ulp", "cos-1", "pass");
    json_array_foreach(records, i, v) {
      json_t *layer = json_object_get(v, "layer");
      char layer_text[16] = "-";
      if (!json_is_null(layer))
        snprintf(layer_text, sizeof layer_text, "%lld",
                 (long long)json_integer_value(layer));
      printf("  %-14s %5s %10.3g %10.3g %10.3g %9lld %12.3g %6s\n",
             json_string_value(json_object_get(v, "stage")), layer_text,
             json_real_value(json_object_get(v, "max_abs")),
             json_real_value(json_object_get(v, "max_rel")),
             json_real_value(json_object_get(v, "nrmse")),
             (long long)json_integer_value(json_object_get(v, "max_ulp")),
             json_real_value(json_object_get(v, "cosine")) - 1.0,
             json_is_true(json_object_get(v, "pass")) ? "ok" : "FAIL");
    }
    if (json_is_object(json_object_get(out, "greedy"))) {
      json_t *gr = json_object_get(out, "greedy");
      printf("  greedy continuation: %lld of %lld tokens agree (%s)\n",
             (long long)json_integer_value(json_object_get(gr, "agreed")),
             (long long)json_integer_value(json_object_get(gr, "steps")),
             json_string_value(json_object_get(gr, "verdict")));
    }
    json_array_foreach(json_object_get(out, "missing_records"), i, v)
      printf("  %-14s %5lld not captured (missing)\n",
             json_string_value(json_object_get(v, "stage")),
             (long long)json_integer_value(json_object_get(v, "layer")));
    json_array_foreach(logit_rows, i, v)
      printf("  logits @%lld: jsd %.3g, top-10 overlap %lld, argmax %lld vs %lld (%s, margin %.3g)\n",
             (long long)json_integer_value(json_object_get(v, "position")),
             json_real_value(json_object_get(v, "jsd")),
             (long long)json_integer_value(json_object_get(v, "top10_overlap")),
             (long long)json_integer_value(json_object_get(v, "reference_argmax")),
             (long long)json_integer_value(json_object_get(v, "candidate_argmax")),
             json_string_value(json_object_get(v, "greedy")),
             json_real_value(json_object_get(v, "margin")));
    if (json_is_object(d)) {
      char *text = json_dumps(d, JSON_COMPACT);
      printf("first divergence: %s\n", text);
      free(text);
    }
  }
  rc = n_failed + n_missing == 0 ? TL_EXIT_OK : TL_EXIT_FAILURE;
done:
  json_decref(out);
  json_decref(missing_rows);
  for (size_t r = 0; cc.cand && r < g.n_records; r++) free(cc.cand[r]);
  free(cc.cand);
  free(cc.filled);
  free(res);
  free(es);
  tl_golden_free(&g);
  tl_session_close(&s);
  return rc;
}
