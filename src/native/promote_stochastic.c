/* tinylm promote's stochastic claim (docs/promotion.md §Stochastic
 * comparison): does the lane sample what docs/sampler.md says from the
 * distribution the strict lane computes? Observed, then judged from what
 * was stored alone (tl_judge_stochastic):
 *   replay   every token the lane drew under every configuration and seed
 *            equals the reference sampler's (sampler_replay.c) from the
 *            lane's own logits at that step (exact; sampler defects);
 *   TVD      along some of those trajectories, lane b teacher-forced on
 *            the same prefixes: the post-sampler distributions of the two
 *            lanes within min_tvd (exact per step; forward defects);
 *   variety  a prompt x configuration whose seeds all drew the same ids is
 *            degenerate: reported, never counted as evidence. */
#define _DEFAULT_SOURCE /* isatty */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "cli.h"
#include "clock.h"
#include "file.h"
#include "hash/sha256.h"
#include "promote.h"
#include "promote_plan.h"
#include "sample/philox.h"
#include "session.h"

/* ------------------------------------------------------------------------ */
/* The design                                                               */

static bool real_text(const json_t *v, double lo, double hi, double *out) {
  const char *s = json_string_value(v);
  char *end;
  if (s == NULL || *s == '\0') return false;
  *out = strtod(s, &end);
  return *end == '\0' && isfinite(*out) && *out >= lo && *out <= hi;
}

static bool count_in(const json_t *v, json_int_t lo, json_int_t hi, uint32_t *out) {
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
    return false;
  *out = (uint32_t)json_integer_value(v);
  return true;
}

static bool only_keys(const json_t *o, const char *const *keys, size_t n, const char **bad) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    size_t i = 0;
    while (i < n && strcmp(keys[i], k) != 0) i++;
    if (i == n) {
      *bad = k;
      return false;
    }
  }
  return true;
}

#define BAD(...) (snprintf(err, err_cap, __VA_ARGS__), TL_ERR_INVALID_ARGUMENT)

static tl_status config_parse(const json_t *c, size_t i, tl_stoch_design *o, char *err,
                              size_t err_cap) {
  static const char *const keys[] = {"name", "temperature", "top_k", "top_p", "min_p",
                                     "repeat_penalty", "repeat_window"};
  tl_replay_cfg *r = &o->configs[i];
  const char *bad = NULL;
  if (!json_is_object(c) || !only_keys(c, keys, 7, &bad))
    return BAD("design.configurations[%zu]: %s%.80s", i, bad ? "unknown field " : "an object",
               bad ? bad : "");
  o->config_names[i] = json_string_value(json_object_get(c, "name"));
  if (o->config_names[i] == NULL ||
      !real_text(json_object_get(c, "temperature"), 0x1p-128, 1e300, &r->temperature) ||
      !count_in(json_object_get(c, "top_k"), 0, 0xffffffff, &r->top_k) ||
      !real_text(json_object_get(c, "top_p"), 0, 1, &r->top_p) ||
      !real_text(json_object_get(c, "min_p"), 0, 1, &r->min_p) ||
      !real_text(json_object_get(c, "repeat_penalty"), 0x1p-64, 0x1p64, &r->repeat_penalty) ||
      !count_in(json_object_get(c, "repeat_window"), 0, 0xffffffff, &r->repeat_window))
    return BAD("design.configurations[%zu]: name (text), temperature (text, > 0), top_k, "
               "top_p and min_p (text, in [0, 1]), repeat_penalty (text), repeat_window",
               i);
  return TL_OK;
}

tl_status tl_stoch_design_parse(const json_t *d, const char *lane, tl_stoch_design *o, char *err,
                                size_t err_cap) {
  static const char *const keys[] = {"format",         "lanes",          "seeds",
                                     "max_new",        "configurations", "distributions",
                                     "min_varied_prompts", "calibration"};
  const json_t *lanes = json_object_get(d, "lanes"), *seeds = json_object_get(d, "seeds"),
               *cfgs = json_object_get(d, "configurations"),
               *dist = json_object_get(d, "distributions");
  const char *format = json_string_value(json_object_get(d, "format")), *bad = NULL;
  tl_status st;
  memset(o, 0, sizeof *o);
  if (format == NULL || strcmp(format, TL_STOCH_FORMAT) != 0)
    return BAD("design: format must be \"" TL_STOCH_FORMAT "\" (a design without it is the "
               "paired-seed comparison this build no longer runs: tinylm plan init writes the "
               "new design)");
  if (!only_keys(d, keys, sizeof keys / sizeof keys[0], &bad))
    return BAD("design: unknown field '%.80s'", bad);
  o->a = json_string_value(json_object_get(lanes, "a"));
  o->b = json_string_value(json_object_get(lanes, "b"));
  if (o->a == NULL || o->b == NULL || strcmp(o->a, lane) != 0 ||
      (strcmp(o->b, "scalar") != 0 && strcmp(o->b, "fast") != 0))
    return BAD("design.lanes: a must be the plan's lane (%s), b scalar or fast", lane);
  if (!json_is_integer(json_object_get(seeds, "base")) ||
      !count_in(json_object_get(seeds, "count"), 2, 100000, &o->count) ||
      !count_in(json_object_get(d, "max_new"), 1, 4096, &o->max_new))
    return BAD("design: seeds.base an integer, seeds.count 2..100000, max_new 1..4096");
  o->base = (uint64_t)json_integer_value(json_object_get(seeds, "base"));
  o->n_configs = json_array_size(cfgs);
  if (o->n_configs < 1 || o->n_configs > TL_STOCH_MAX_CONFIGS)
    return BAD("design.configurations: 1 to %d sampler configurations", TL_STOCH_MAX_CONFIGS);
  for (size_t i = 0; i < o->n_configs; i++)
    if ((st = config_parse(json_array_get(cfgs, i), i, o, err, err_cap)) != TL_OK) return st;
  if (!count_in(json_object_get(dist, "trajectories"), 1, 100000, &o->trajectories) ||
      o->trajectories > o->count || !real_text(json_object_get(dist, "min_tvd"), 0, 1, &o->min_tvd) ||
      !real_text(json_object_get(dist, "mass"), 0, 0.01, &o->mass))
    return BAD("design.distributions: trajectories 1..seeds.count, min_tvd (text, in [0, 1]), "
               "mass (text, in [0, 0.01])");
  if (!count_in(json_object_get(d, "min_varied_prompts"), 1, 100000, &o->min_varied))
    return BAD("design.min_varied_prompts: at least 1");
  if (json_object_get(d, "calibration") != NULL &&
      !json_is_string(json_object_get(d, "calibration")))
    return BAD("design.calibration: text (what was measured of this design), when present");
  return TL_OK;
}

/* ------------------------------------------------------------------------ */
/* Shared                                                                   */

static json_t *hex_f64(double v) {
  char h[17];
  snprintf(h, sizeof h, "%016llx", (unsigned long long)tl_f64_to_bits(v));
  return json_string(h);
}

static bool f64_of(const json_t *v, double *out) {
  const char *s = json_string_value(v);
  char *end;
  unsigned long long b;
  if (s == NULL || strlen(s) != 16) return false;
  b = strtoull(s, &end, 16);
  if (*end != '\0') return false;
  *out = tl_bits_to_f64((uint64_t)b);
  return true;
}

/* A prompt's ids: the conversation rendered and encoded as a generation
 * from messages would be. */
static tl_status prompt_ids(tl_claim_ctx *c, tl_model_handle m, const json_t *cs, uint32_t **ids,
                            size_t *n) {
  json_t *conv = json_pack("{s:O,s:b,s:b}", "messages", json_object_get(cs, "messages"),
                           "add_generation_prompt", 1, "enable_thinking",
                           json_is_true(json_object_get(cs, "enable_thinking")));
  char *text = json_dumps(conv, JSON_COMPACT), *r = NULL;
  size_t len = 0, cap = 0;
  tl_status st = text ? TL_OK : TL_ERR_OUT_OF_MEMORY;
  json_decref(conv);
  *ids = NULL;
  if (st == TL_OK && (st = tl_model_render(m, text, strlen(text), NULL, 0, &len, NULL)) ==
                         TL_ERR_BOUNDS) {
    r = malloc(len + 1);
    st = r ? tl_model_render(m, text, strlen(text), r, len, &len, NULL) : TL_ERR_OUT_OF_MEMORY;
  }
  if (st == TL_OK && (*ids = malloc((len + 1) * sizeof **ids)) == NULL) st = TL_ERR_OUT_OF_MEMORY;
  cap = len + 1;
  if (st == TL_OK) st = tl_model_encode(m, r, len, *ids, cap, n);
  free(text);
  free(r);
  if (st != TL_OK) {
    free(*ids);
    *ids = NULL;
    return tl_claim_api_fail(c, m, st, "the prompt");
  }
  return TL_OK;
}


/* Generation under a configuration; every step's logits go to on_step. */
typedef struct gen_rec {
  uint32_t *ids;
  size_t n;
  char stop[16];
  void (*on_step)(void *ctx, const float *logits, size_t vocab, uint32_t id, size_t step);
  void *ctx;
  size_t step;
} gen_rec;

static void on_choice(void *ctx, const float *logits, size_t vocab, uint32_t id) {
  gen_rec *g = ctx;
  g->on_step(g->ctx, logits, vocab, id, g->step++);
}

static tl_status generate(tl_claim_ctx *c, tl_session_handle s, const uint32_t *prompt,
                          size_t n_prompt, const tl_replay_cfg *cfg, uint64_t seed,
                          uint32_t max_new, gen_rec *g) {
  tl_generation_handle h;
  tl_generation_result res;
  tl_generation_params p;
  tl_status st = tl_generation_new(s, &h);
  if (st != TL_OK) return tl_claim_api_fail(c, s, st, "a generation");
  memset(&p, 0, sizeof p);
  p.ids = prompt;
  p.n_ids = n_prompt;
  p.given = TL_GIVEN_TEMPERATURE | TL_GIVEN_TOP_K | TL_GIVEN_TOP_P | TL_GIVEN_MIN_P |
            TL_GIVEN_REPEAT_PENALTY;
  p.temperature = cfg->temperature;
  p.top_k = cfg->top_k;
  p.top_p = cfg->top_p;
  p.min_p = cfg->min_p;
  p.repeat_penalty = cfg->repeat_penalty;
  p.repeat_window = cfg->repeat_window;
  p.seed = seed;
  p.max_tokens = max_new;
  /* No TL_GENERATE_REUSE_PREFIX: a reused prefix leaves the penalty
   * window's prompt ids out of the sampler's history (api.c passes only the
   * computed part), and the prompt's prefill is cheap next to the steps. */
  p.on_choice = on_choice;
  p.ctx = g;
  g->step = 0;
  st = tl_generation_run(h, &p);
  if (st != TL_OK) tl_claim_api_fail(c, h, st, "generating");
  else {
    tl_generation_result_get(h, &res);
    g->ids = malloc((res.n_ids ? res.n_ids : 1) * sizeof *g->ids);
    if (g->ids == NULL) st = TL_ERR_OUT_OF_MEMORY;
    else {
      memcpy(g->ids, res.ids, res.n_ids * sizeof *g->ids);
      g->n = res.n_ids;
      snprintf(g->stop, sizeof g->stop, "%s", res.stop);
    }
  }
  tl_generation_free(h);
  return st;
}

static json_t *ids_json(const uint32_t *ids, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
  return a;
}

/* ------------------------------------------------------------------------ */
/* Observe                                                                  */

/* The longest candidate-order prefix a step stores. A near-uniform
 * distribution (the synthetic checkpoints': next-token entropy near its
 * maximum) puts a draw's rank in the tens of thousands, and every step's
 * prefix kept would take gigabytes; such a step is replayed when observed
 * and stored as its outcome (the reference's id, rank and the sums) with
 * the SHA-256 of the logits it was replayed from. */
#define REPLAY_VIEW_MAX 256

/* What one sampled step stores for its replay: the prefix of the
 * candidate order up to the reference's choice and the lane's token, and
 * the sums over every candidate (sampler_replay.h); past REPLAY_VIEW_MAX
 * the outcome instead. */
static tl_status replay_view(const tl_replay_cfg *cfg, const float *logits, uint32_t defined,
                             const uint32_t *hist, size_t n_hist, uint64_t seed, uint32_t step,
                             uint32_t drawn, const uint32_t *all_ids, json_t **out, char *err,
                             size_t cap) {
  tl_draw_pos pos = {seed, 0, step, 0, 0};
  tl_replay_step in = {all_ids, logits, defined, defined, true, 0, 0, hist, n_hist,
                       tl_draw_word(&pos)};
  tl_replay_out r;
  size_t L;
  json_t *z;
  tl_status st = tl_replay(cfg, &in, &r, err, cap);
  if (st != TL_OK) return st;
  L = r.rank + 1;
  for (size_t k = 0; k < r.head; k++) /* a drawn id beyond it cannot be placed: mismatch anyway */
    if (all_ids[r.order[k]] == drawn) {
      if (k + 1 > L) L = k + 1;
      break;
    }
  if (L > REPLAY_VIEW_MAX) {
    uint8_t digest[32];
    char hex[65];
    free(r.order);
    if ((st = tl_sha256(logits, (size_t)defined * sizeof *logits, digest)) != TL_OK) return st;
    tl_hex_encode(digest, 32, hex);
    *out = json_pack("{s:I,s:o,s:o,s:I,s:I,s:b,s:s}", "n", (json_int_t)defined, "S",
                     hex_f64(r.S), "R", hex_f64(r.R), "rank", (json_int_t)r.rank, "expected",
                     (json_int_t)r.id, "undecidable", r.undecidable, "logits_sha256", hex);
    return *out ? TL_OK : TL_ERR_OUT_OF_MEMORY;
  }
  z = json_array();
  for (size_t k = 0; k < L; k++) {
    size_t i = r.order[k];
    json_array_append_new(z, json_pack("[I,I]", (json_int_t)all_ids[i],
                                       (json_int_t)tl_f32_to_bits(logits[i])));
  }
  *out = json_pack("{s:I,s:o,s:o,s:o}", "n", (json_int_t)defined, "S", hex_f64(r.S), "R",
                   hex_f64(r.R), "z", z);
  free(r.order);
  return *out ? TL_OK : TL_ERR_OUT_OF_MEMORY;
}

static int by_logit_desc(const void *a, const void *b, const float *z) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return z[x] > z[y] ? -1 : z[x] < z[y] ? 1 : (x > y) - (x < y);
}
static const float *g_sort_z; /* qsort has no context argument: set just around the call */
static int cmp_top(const void *a, const void *b) { return by_logit_desc(a, b, g_sort_z); }

/* What a teacher-forced step stores of one lane for the TVD: its largest
 * raw logits until they leave out at most `mass` (at every configuration's
 * temperature), the penalty window's ids, each configuration's lse; or,
 * when that takes more than 4096 ids (a near-uniform distribution), every
 * logit as a store object. */
static tl_status tvd_view(tl_claim_ctx *c, const tl_stoch_design *d, const float *z,
                          uint32_t defined, const uint32_t *hist, size_t n_hist, uint32_t *idx,
                          tl_claim_result *res, json_t **out) {
  json_t *lse = json_array(), *list;
  size_t K = 0, need = 64;
  double mx = -INFINITY;
  uint32_t window = 0;
  for (uint32_t i = 0; i < defined; i++)
    if (z[i] > mx) mx = z[i];
  for (size_t k = 0; k < d->n_configs; k++) {
    double T = d->configs[k].temperature, sum = 0.0;
    for (uint32_t i = 0; i < defined; i++) sum += exp(((double)z[i] - mx) / T);
    json_array_append_new(lse, hex_f64(mx / T + log(sum)));
    if (d->configs[k].repeat_penalty != 1.0 && d->configs[k].repeat_window > window)
      window = d->configs[k].repeat_window;
  }
  /* Only ids within 40 T of the largest can matter (each holds below
   * e^-40 of it); they are sorted, the rest follow unsorted. */
  {
    double tmax = 1.0, low;
    size_t head = 0, tail = defined;
    for (size_t k = 0; k < d->n_configs; k++)
      if (d->configs[k].temperature > tmax) tmax = d->configs[k].temperature;
    low = mx - 40.0 * tmax;
    for (uint32_t i = 0; i < defined; i++)
      if ((double)z[i] >= low) idx[head++] = i;
      else idx[--tail] = i;
    g_sort_z = z;
    qsort(idx, head, sizeof *idx, cmp_top);
    g_sort_z = NULL;
  }
  /* The smallest K leaving out at most `mass` at each temperature. */
  for (size_t k = 0; k < d->n_configs; k++) {
    double T = d->configs[k].temperature, l, left = 1.0;
    f64_of(json_array_get(lse, k), &l);
    for (size_t j = 0; j < defined && left > d->mass; j++) {
      left -= exp((double)z[idx[j]] / T - l);
      if (j + 1 > need) need = j + 1;
    }
  }
  if (need > defined) need = defined;
  if (need > 4096) {
    uint8_t *bytes = malloc((size_t)defined * 4), id[32];
    char hex[65];
    tl_status st = bytes ? TL_OK : TL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; bytes && i < defined; i++) tl_store_le32(bytes + 4 * i, tl_f32_to_bits(z[i]));
    if (st == TL_OK) st = tl_store_put(c->store, "logits", bytes, (size_t)defined * 4, id, c->err, c->err_cap);
    if (st == TL_OK) st = tl_claim_result_support(res, id);
    free(bytes);
    json_decref(lse);
    if (st != TL_OK) return st;
    tl_hex_encode(id, 32, hex);
    *out = json_pack("{s:I,s:s}", "n", (json_int_t)defined, "logits_f32le", hex);
    return *out ? TL_OK : TL_ERR_OUT_OF_MEMORY;
  }
  K = need;
  list = json_array();
  for (size_t j = 0; j < K; j++)
    json_array_append_new(list, json_pack("[I,I]", (json_int_t)idx[j],
                                          (json_int_t)tl_f32_to_bits(z[idx[j]])));
  /* The window's ids beyond the top, once each. */
  for (size_t h = n_hist > window ? n_hist - window : 0; window && h < n_hist; h++) {
    bool listed = false;
    for (size_t j = 0; j < K && !listed; j++) listed = idx[j] == hist[h];
    for (size_t j = K; j < json_array_size(list) && !listed; j++)
      listed = json_integer_value(json_array_get(json_array_get(list, j), 0)) == hist[h];
    if (!listed && hist[h] < defined)
      json_array_append_new(list, json_pack("[I,I]", (json_int_t)hist[h],
                                            (json_int_t)tl_f32_to_bits(z[hist[h]])));
  }
  *out = json_pack("{s:I,s:o,s:o,s:o}", "n", (json_int_t)defined, "z", list, "floor",
                   K < defined ? json_integer(tl_f32_to_bits(z[idx[K]])) : json_null(), "lse", lse);
  return *out ? TL_OK : TL_ERR_OUT_OF_MEMORY;
}

/* One seed's generation: its replay views (per step) and, for the first
 * `trajectories` seeds of configuration 0, every step's logits kept for
 * the teacher-forced comparison. */
typedef struct seed_obs {
  const tl_replay_cfg *cfg;
  uint32_t defined;
  uint64_t seed;
  const uint32_t *prompt;
  size_t n_prompt;
  uint32_t *hist;      /* prompt, then drawn ids */
  const uint32_t *all; /* 0 .. defined - 1 */
  json_t *steps;
  float *keep; /* max_new x defined, or NULL */
  tl_status st;
  char *err;
  size_t err_cap;
} seed_obs;

static void observe_step(void *ctx, const float *logits, size_t vocab, uint32_t id, size_t step) {
  seed_obs *o = ctx;
  json_t *v = NULL;
  if (o->st != TL_OK) return;
  if (vocab < o->defined) {
    snprintf(o->err, o->err_cap, "the lane gave %zu logits, fewer than %u defined ids", vocab,
             o->defined);
    o->st = TL_ERR_INTERNAL_INVARIANT;
    return;
  }
  o->st = replay_view(o->cfg, logits, o->defined, o->hist, o->n_prompt + step, o->seed,
                      (uint32_t)step, id, o->all, &v, o->err, o->err_cap);
  if (o->st == TL_OK) json_array_append_new(o->steps, v);
  if (o->keep) memcpy(o->keep + step * o->defined, logits, o->defined * sizeof *logits);
  o->hist[o->n_prompt + step] = id;
}

/* Lane b's logits at each prefix of a trajectory: the prompt prefilled
 * once per prompt, each trajectory decoded from there. */
typedef struct forced_lane {
  tl_session s;
  bool open;
} forced_lane;

static tl_status forced_open(tl_claim_ctx *c, const char *lane, forced_lane *f) {
  tl_lane_options o = tl_lane_defaults();
  tl_status st = tl_session_open_shared(&f->s, &c->session->model, c->slm_path, c->err, c->err_cap);
  if (st != TL_OK) return st;
  o.fast = strcmp(lane, "fast") == 0;
  if (c->threads) o.threads = c->threads;
  st = tl_session_lane(&f->s, &o, c->err, c->err_cap);
  if (st == TL_OK) st = tl_session_plan(&f->s, 1024, 0, c->err, c->err_cap);
  if (st == TL_OK) st = tl_session_allocate(&f->s, 0, c->err, c->err_cap);
  if (st != TL_OK) tl_session_close(&f->s);
  f->open = st == TL_OK;
  return st;
}

static tl_status forward(tl_claim_ctx *c, tl_session *s, const uint32_t *ids, size_t n) {
  tl_status st = TL_OK;
  for (size_t at = 0; st == TL_OK && at < n; at += s->prefill_chunk) {
    size_t k = n - at < s->prefill_chunk ? n - at : s->prefill_chunk;
    st = tl_qwen3_forward(&s->qwen, &s->cache, ids + at, k, s->logits, NULL, &s->arena, NULL);
  }
  if (st != TL_OK) snprintf(c->err, c->err_cap, "lane b's forward pass: %s", tl_status_name(st));
  return st;
}

/* One prompt: every configuration x seed on lane a, then lane b forced. */
static tl_status observe_prompt(tl_claim_ctx *c, tl_model_handle m, tl_session_handle sa,
                                forced_lane *fb, const tl_stoch_design *d, const json_t *cs,
                                const uint32_t *all, uint32_t defined, uint32_t *idx,
                                tl_claim_result *res, json_t **entry, tl_cli_progress *pr,
                                size_t *done, size_t total) {
  uint32_t *prompt = NULL;
  size_t n_prompt = 0;
  float *keep = NULL;
  json_t *configs = json_array(), *forced = json_array();
  tl_status st = prompt_ids(c, m, cs, &prompt, &n_prompt);
  uint32_t *hist = NULL;
  uint32_t **traj = calloc(d->trajectories, sizeof *traj);
  size_t *traj_n = calloc(d->trajectories, sizeof *traj_n);
  if (st == TL_OK && (!traj || !traj_n ||
                      !(hist = malloc((n_prompt + d->max_new) * sizeof *hist)) ||
                      !(keep = malloc((size_t)d->trajectories * d->max_new * defined * sizeof *keep))))
    st = TL_ERR_OUT_OF_MEMORY;
  if (st == TL_OK) memcpy(hist, prompt, n_prompt * sizeof *hist);
  for (size_t k = 0; st == TL_OK && k < d->n_configs; k++) {
    json_t *seeds = json_array();
    json_array_append_new(configs, json_pack("{s:o}", "seeds", seeds));
    for (uint32_t i = 0; st == TL_OK && i < d->count; i++) {
      bool kept = k == 0 && i < d->trajectories;
      seed_obs o = {&d->configs[k], defined, d->base + i, prompt, n_prompt, hist, all,
                    json_array(), kept ? keep + (size_t)i * d->max_new * defined : NULL,
                    TL_OK, c->err, c->err_cap};
      gen_rec g = {NULL, 0, "", observe_step, &o, 0};
      st = generate(c, sa, prompt, n_prompt, &d->configs[k], d->base + i, d->max_new, &g);
      if (st == TL_OK) st = o.st;
      if (st == TL_OK && g.n != json_array_size(o.steps)) {
        snprintf(c->err, c->err_cap, "%zu ids drawn, %zu steps seen", g.n,
                 json_array_size(o.steps));
        st = TL_ERR_INTERNAL_INVARIANT;
      }
      if (st == TL_OK)
        json_array_append_new(seeds, json_pack("{s:o,s:s,s:o}", "ids", ids_json(g.ids, g.n),
                                               "stop", g.stop, "steps", o.steps));
      else
        json_decref(o.steps);
      if (st == TL_OK && kept) {
        traj[i] = g.ids;
        traj_n[i] = g.n;
        g.ids = NULL;
      }
      free(g.ids);
      tl_cli_progress_update(pr, "generations", ++*done, total, 0, 0);
    }
  }
  /* Lane b, teacher-forced on the kept trajectories. */
  if (st == TL_OK) {
    fb->s.cache.len = 0;
    st = forward(c, &fb->s, prompt, n_prompt);
  }
  for (uint32_t i = 0; st == TL_OK && i < d->trajectories; i++) {
    json_t *steps = json_array();
    json_array_append_new(forced, json_pack("{s:i,s:I,s:o}", "configuration", 0, "seed",
                                            (json_int_t)i, "steps", steps));
    memcpy(hist + n_prompt, traj[i], traj_n[i] * sizeof *hist);
    fb->s.cache.len = (uint32_t)n_prompt - 1;
    st = forward(c, &fb->s, prompt + n_prompt - 1, 1); /* the prompt's last logits again */
    for (size_t t = 0; st == TL_OK && t < traj_n[i]; t++) {
      json_t *va = NULL, *vb = NULL;
      st = tvd_view(c, d, keep + ((size_t)i * d->max_new + t) * defined, defined, hist,
                    n_prompt + t, idx, res, &va);
      if (st == TL_OK) st = tvd_view(c, d, fb->s.logits, defined, hist, n_prompt + t, idx, res, &vb);
      if (st == TL_OK) json_array_append_new(steps, json_pack("{s:o,s:o}", "a", va, "b", vb));
      else {
        json_decref(va);
        json_decref(vb);
      }
      if (st == TL_OK && t + 1 < traj_n[i]) st = forward(c, &fb->s, &traj[i][t], 1);
    }
  }
  if (st == TL_OK)
    *entry = json_pack("{s:o,s:O,s:O}", "prompt_ids", ids_json(prompt, n_prompt),
                       "configurations", configs, "forced", forced);
  for (uint32_t i = 0; traj && i < d->trajectories; i++) free(traj[i]);
  free(traj);
  free(traj_n);
  free(prompt);
  free(hist);
  free(keep);
  json_decref(configs);
  json_decref(forced);
  return st;
}

tl_status tl_claim_stochastic(tl_claim_ctx *c, tl_claim_result *out) {
  const json_t *cases;
  tl_stoch_design d;
  tl_model_handle m = 0;
  tl_session_handle sa = 0;
  forced_lane fb = {0};
  json_t *entries = json_array();
  uint32_t defined = c->session->defined_ids, *all = NULL, *idx = NULL;
  tl_cli_progress pr;
  size_t done = 0, total;
  uint8_t obs[32];
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st == TL_OK)
    st = tl_stoch_design_parse(json_object_get(c->claim, "design"), c->lane, &d, c->err,
                               c->err_cap);
  if (st == TL_OK) st = tl_claim_open_model(c, &m);
  if (st == TL_OK) st = tl_claim_open_session(c, m, d.a, 1024, &sa);
  if (st == TL_OK) st = forced_open(c, d.b, &fb);
  if (st == TL_OK && (!(all = malloc(defined * sizeof *all)) || !(idx = malloc(defined * sizeof *idx))))
    st = TL_ERR_OUT_OF_MEMORY;
  for (uint32_t i = 0; all && i < defined; i++) all[i] = i;
  total = out->n_cases * d.n_configs * d.count;
  tl_cli_progress_begin(&pr, "stochastic: lane a", c->progress);
  for (size_t i = 0; st == TL_OK && i < out->n_cases; i++) {
    json_t *entry = NULL;
    st = observe_prompt(c, m, sa, &fb, &d, json_object_get(json_array_get(cases, i), "case"), all,
                        defined, idx, out, &entry, &pr, &done, total);
    if (st == TL_OK) json_array_append_new(entries, entry);
  }
  tl_cli_progress_end(&pr);
  if (st == TL_OK) {
    json_t *doc = json_pack("{s:s,s:s,s:s,s:s,s:O}", "format", "tinylm.stochastic-observation/1",
                            "claim", json_string_value(json_object_get(c->claim, "name")), "a",
                            d.a, "b", d.b, "cases", entries);
    char *text = tl_plan_canonical(doc);
    st = text ? tl_store_put(c->store, "observation", (const uint8_t *)text, strlen(text), obs,
                             c->err, c->err_cap)
              : TL_ERR_OUT_OF_MEMORY;
    free(text);
    json_decref(doc);
  }
  if (st == TL_OK) {
    /* OBSERVE only: tl_claim_observe_judge judges from the store alone */
    memcpy(out->observation, obs, 32);
    out->has_observation = true;
  }
  json_decref(entries);
  free(all);
  free(idx);
  if (fb.open) tl_session_close(&fb.s);
  if (sa) tl_session_free(sa);
  if (m) tl_model_close(m);
  if (st != TL_OK) tl_claim_result_free(out);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Judge                                                                    */

/* A stored list of [id, f32 bits] as arrays (n entries, malloc'd). */
static bool pairs_of(const json_t *list, uint32_t **ids, float **z, size_t *n) {
  *n = json_array_size(list);
  *ids = malloc((*n ? *n : 1) * sizeof **ids);
  *z = malloc((*n ? *n : 1) * sizeof **z);
  if (!*ids || !*z) return false;
  for (size_t j = 0; j < *n; j++) {
    const json_t *p = json_array_get(list, j);
    json_int_t id = json_integer_value(json_array_get(p, 0)),
               bits = json_integer_value(json_array_get(p, 1));
    if (!json_is_integer(json_array_get(p, 0)) || id < 0 || id > 0xffffffff || bits < 0 ||
        bits > 0xffffffff)
      return false;
    (*ids)[j] = (uint32_t)id;
    (*z)[j] = tl_bits_to_f32((uint32_t)bits);
  }
  return true;
}

typedef struct verdict {
  size_t replayed, undecidable, mismatches, forced, degenerate, pairs, summarised;
  double tvd_max;
  char first_mismatch[600], first_tvd[300];
  size_t *varied; /* per configuration: prompts where the seeds drew differently */
} verdict;

/* One sampled step replayed from its stored view. */
static tl_status judge_step(tl_claim_ctx *c, const tl_replay_cfg *cfg, const json_t *view,
                            const uint32_t *hist, size_t n_hist, uint64_t seed, uint32_t step,
                            uint32_t *expected, bool *undecidable, bool *summarised) {
  uint32_t *ids = NULL;
  float *z = NULL;
  size_t n = 0;
  double S, R;
  tl_draw_pos pos = {seed, 0, step, 0, 0};
  tl_replay_out r = {0};
  tl_status st = TL_ERR_INVALID_ARGUMENT;
  json_int_t n_all = json_integer_value(json_object_get(view, "n"));
  if (json_is_integer(json_object_get(view, "expected"))) {
    /* replayed when observed (a prefix past REPLAY_VIEW_MAX): its outcome */
    *expected = (uint32_t)json_integer_value(json_object_get(view, "expected"));
    *undecidable = json_is_true(json_object_get(view, "undecidable"));
    *summarised = true;
    return TL_OK;
  }
  *summarised = false;
  if (pairs_of(json_object_get(view, "z"), &ids, &z, &n) && f64_of(json_object_get(view, "S"), &S) &&
      f64_of(json_object_get(view, "R"), &R) && n_all >= (json_int_t)n) {
    tl_replay_step in = {ids, z, n, (size_t)n_all, false, S, R, hist, n_hist, tl_draw_word(&pos)};
    st = tl_replay(cfg, &in, &r, c->err, c->err_cap);
  } else {
    snprintf(c->err, c->err_cap, "a step's view is not [id, bits] pairs with n, S and R");
  }
  /* The stored prefix must be the candidate order itself. */
  for (size_t k = 0; st == TL_OK && k < n; k++)
    if (r.order[k] != k) {
      snprintf(c->err, c->err_cap, "a stored prefix is not in candidate order (entry %zu)", k);
      st = TL_ERR_INVALID_ARGUMENT;
    }
  if (st == TL_OK) {
    *undecidable = r.undecidable;
    *expected = r.id;
  }
  free(r.order);
  free(ids);
  free(z);
  return st;
}

/* A lane's post-sampler distribution at a teacher-forced step. */
static tl_status view_dist(tl_claim_ctx *c, const tl_replay_cfg *cfg, size_t k, const json_t *view,
                           const uint32_t *hist, size_t n_hist, tl_replay_dist *out) {
  uint32_t *ids = NULL;
  float *z = NULL;
  size_t n = 0;
  double lse = 0.0, floor_z = -INFINITY;
  json_int_t n_all = json_integer_value(json_object_get(view, "n"));
  const char *obj = json_string_value(json_object_get(view, "logits_f32le"));
  tl_status st = TL_OK;
  if (obj != NULL) {
    uint8_t id[32], *bytes = NULL;
    size_t len = 0;
    double mx = -INFINITY, sum = 0.0;
    if (!tl_hex32_parse(obj, id)) {
      snprintf(c->err, c->err_cap, "a logits object id is not 64 hex digits");
      return TL_ERR_INVALID_ARGUMENT;
    }
    if ((st = tl_store_get(c->store, id, &bytes, &len, c->err, c->err_cap)) != TL_OK) return st;
    n = len / 4;
    ids = malloc((n ? n : 1) * sizeof *ids);
    z = malloc((n ? n : 1) * sizeof *z);
    if (!ids || !z || (json_int_t)n != n_all) st = ids && z ? TL_ERR_INVALID_ARGUMENT : TL_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; st == TL_OK && i < n; i++) {
      ids[i] = (uint32_t)i;
      z[i] = tl_bits_to_f32(tl_load_le32(bytes + 4 * i));
      if (z[i] > mx) mx = z[i];
    }
    for (size_t i = 0; st == TL_OK && i < n; i++) sum += exp(((double)z[i] - mx) / cfg->temperature);
    lse = mx / cfg->temperature + log(sum);
    free(bytes);
  } else if (!pairs_of(json_object_get(view, "z"), &ids, &z, &n) ||
             !f64_of(json_array_get(json_object_get(view, "lse"), k), &lse) || n_all < (json_int_t)n) {
    st = TL_ERR_INVALID_ARGUMENT;
  } else if (json_is_integer(json_object_get(view, "floor"))) {
    floor_z = tl_bits_to_f32((uint32_t)json_integer_value(json_object_get(view, "floor")));
  }
  if (st == TL_OK)
    st = tl_replay_distribution(cfg, ids, z, n, (size_t)n_all, lse, floor_z, hist, n_hist, out);
  else if (st == TL_ERR_INVALID_ARGUMENT)
    snprintf(c->err, c->err_cap, "a teacher-forced step's view is damaged");
  free(ids);
  free(z);
  return st;
}

/* Whether a configuration keeps only part of the candidates (top_k,
 * top_p, min_p). Such a cut is a step function of the logits: where two
 * candidates are nearly tied at the boundary, the smallest difference
 * between two correct lanes' logits (the fast lane's activation
 * quantisation) moves one across it, and the distributions then differ by
 * its whole mass: a near-uniform distribution's top-5 sets can share no
 * member at all. The lanes' distributions are compared where the
 * transform is continuous (temperature, the penalty); the cuts are the
 * sampler's own, checked exactly by the replay on each lane's logits. */
static bool truncates(const tl_replay_cfg *cfg) {
  return cfg->top_k != 0 || cfg->top_p < 1.0 || cfg->min_p > 0.0;
}

/* One prompt's entry: every draw replayed, every forced step's TVD, the
 * configurations where its seeds varied. *pass: no mismatch, no TVD
 * beyond min_tvd. */
static tl_status judge_prompt(tl_claim_ctx *c, const tl_stoch_design *d, size_t p,
                              const json_t *e, verdict *v, bool *pass) {
  const json_t *pj = json_object_get(e, "prompt_ids"), *cfgs = json_object_get(e, "configurations");
  size_t n_prompt = json_array_size(pj);
  uint32_t *hist = malloc((n_prompt + d->max_new + 1) * sizeof *hist);
  tl_status st = TL_OK;
  *pass = true;
  if (hist == NULL) return TL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n_prompt; i++) hist[i] = (uint32_t)json_integer_value(json_array_get(pj, i));
  if (n_prompt == 0 || json_array_size(cfgs) != d->n_configs) {
    snprintf(c->err, c->err_cap, "cases[%zu]: the observation does not hold the design's "
             "configurations", p);
    st = TL_ERR_INVALID_ARGUMENT;
  }
  for (size_t k = 0; st == TL_OK && k < d->n_configs; k++) {
    const json_t *seeds = json_object_get(json_array_get(cfgs, k), "seeds");
    bool varied = false;
    if (json_array_size(seeds) != d->count) {
      snprintf(c->err, c->err_cap, "cases[%zu]: %zu seeds stored, the design has %u", p,
               json_array_size(seeds), d->count);
      st = TL_ERR_INVALID_ARGUMENT;
    }
    for (uint32_t i = 0; st == TL_OK && i < d->count; i++) {
      const json_t *s = json_array_get(seeds, i), *ids = json_object_get(s, "ids"),
                   *steps = json_object_get(s, "steps");
      varied = varied || !json_equal(ids, json_object_get(json_array_get(seeds, 0), "ids"));
      if (json_array_size(ids) != json_array_size(steps) || json_array_size(ids) > d->max_new) {
        snprintf(c->err, c->err_cap, "cases[%zu]: a seed's ids and steps differ in length", p);
        st = TL_ERR_INVALID_ARGUMENT;
      }
      for (size_t t = 0; st == TL_OK && t < json_array_size(ids); t++) {
        uint32_t drawn = (uint32_t)json_integer_value(json_array_get(ids, t));
        uint32_t expected = 0;
        bool undecidable = false, summarised = false;
        st = judge_step(c, &d->configs[k], json_array_get(steps, t), hist, n_prompt + t,
                        d->base + i, (uint32_t)t, &expected, &undecidable, &summarised);
        v->summarised += summarised;
        hist[n_prompt + t] = drawn;
        if (st != TL_OK) break;
        if (undecidable) {
          v->undecidable++;
          continue;
        }
        v->replayed++;
        if (expected != drawn) {
          v->mismatches++;
          *pass = false;
          if (v->first_mismatch[0] == '\0')
            snprintf(v->first_mismatch, sizeof v->first_mismatch,
                     "prompt %zu, configuration %s, seed %llu, step %zu: the lane drew %u, the "
                     "reference sampler %u from the lane's own logits",
                     p, d->config_names[k], (unsigned long long)(d->base + i), t, drawn, expected);
        }
      }
    }
    if (st == TL_OK) {
      v->pairs++;
      if (varied) v->varied[k]++;
      else v->degenerate++;
    }
  }
  /* Teacher-forced steps: the trajectories of configuration 0. */
  {
    const json_t *forced = json_object_get(e, "forced"), *f;
    size_t i;
    json_array_foreach(forced, i, f) {
      const json_t *steps = json_object_get(f, "steps"),
                   *traj = json_object_get(json_array_get(json_object_get(json_array_get(cfgs, 0),
                                                                          "seeds"),
                                                          (size_t)json_integer_value(
                                                              json_object_get(f, "seed"))),
                                           "ids");
      if (st != TL_OK) break;
      if (json_array_size(steps) != json_array_size(traj)) {
        snprintf(c->err, c->err_cap, "cases[%zu].forced[%zu]: steps and trajectory differ", p, i);
        st = TL_ERR_INVALID_ARGUMENT;
      }
      for (size_t t = 0; st == TL_OK && t < json_array_size(steps); t++) {
        const json_t *step = json_array_get(steps, t);
        if (t > 0) hist[n_prompt + t - 1] = (uint32_t)json_integer_value(json_array_get(traj, t - 1));
        v->forced++;
        for (size_t k = 0; st == TL_OK && k < d->n_configs; k++) {
          tl_replay_dist da = {0}, db = {0};
          double tvd;
          if (truncates(&d->configs[k])) continue;
          st = view_dist(c, &d->configs[k], k, json_object_get(step, "a"), hist, n_prompt + t, &da);
          if (st == TL_OK)
            st = view_dist(c, &d->configs[k], k, json_object_get(step, "b"), hist, n_prompt + t, &db);
          if (st == TL_OK) {
            tvd = tl_replay_tvd_bound(&da, &db);
            if (tvd > v->tvd_max) v->tvd_max = tvd;
            if (tvd > d->min_tvd) {
              *pass = false;
              if (v->first_tvd[0] == '\0')
                snprintf(v->first_tvd, sizeof v->first_tvd,
                         "prompt %zu, configuration %s, trajectory %zu, step %zu: TVD of the "
                         "lanes' post-sampler distributions %.4g > %.4g",
                         p, d->config_names[k], i, t, tvd, d->min_tvd);
            }
          }
          tl_replay_dist_free(&da);
          tl_replay_dist_free(&db);
        }
      }
    }
    if (st == TL_OK && json_array_size(forced) != d->trajectories) {
      snprintf(c->err, c->err_cap, "cases[%zu]: %zu teacher-forced trajectories, the design has %u",
               p, json_array_size(forced), d->trajectories);
      st = TL_ERR_INVALID_ARGUMENT;
    }
  }
  free(hist);
  return st;
}

tl_status tl_judge_stochastic(tl_claim_ctx *c, const uint8_t observation[32], tl_claim_result *out) {
  const json_t *cases;
  tl_stoch_design d;
  verdict v;
  uint8_t *bytes = NULL;
  size_t len = 0;
  json_t *doc = NULL, *entries;
  json_error_t jerr;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  memset(&v, 0, sizeof v);
  if (st == TL_OK)
    st = tl_stoch_design_parse(json_object_get(c->claim, "design"), c->lane, &d, c->err,
                               c->err_cap);
  if (st == TL_OK) st = tl_store_get(c->store, observation, &bytes, &len, c->err, c->err_cap);
  if (st == TL_OK && (doc = json_loadb((const char *)bytes, len, 0, &jerr)) == NULL) {
    snprintf(c->err, c->err_cap, "the observation is not JSON: %s", jerr.text);
    st = TL_ERR_INVALID_ARGUMENT;
  }
  free(bytes);
  entries = json_object_get(doc, "cases");
  if (st == TL_OK && json_array_size(entries) != out->n_cases) {
    snprintf(c->err, c->err_cap, "the observation holds %zu prompts, the claim %zu",
             json_array_size(entries), out->n_cases);
    st = TL_ERR_INVALID_ARGUMENT;
  }
  if (st == TL_OK && (v.varied = calloc(d.n_configs, sizeof *v.varied)) == NULL)
    st = TL_ERR_OUT_OF_MEMORY;
  if (st == TL_OK) {
    memcpy(out->observation, observation, 32);
    out->has_observation = true;
  }
  for (size_t p = 0; st == TL_OK && p < out->n_cases; p++) {
    const json_t *e = json_array_get(entries, p), *f, *s, *a;
    char *canon = tl_plan_canonical((json_t *)e);
    size_t i, t;
    bool pass = false;
    if (canon) tl_sha256(canon, strlen(canon), out->cases[p].output);
    free(canon);
    st = judge_prompt(c, &d, p, e, &v, &pass);
    out->cases[p].invariant = "replay_and_tvd";
    out->cases[p].pass = pass;
    /* Every logits object the views name is part of the evidence. */
    json_array_foreach(json_object_get(e, "forced"), i, f) {
      json_array_foreach(json_object_get(f, "steps"), t, s) {
        const char *lanes[2] = {"a", "b"};
        for (int l = 0; l < 2; l++) {
          uint8_t id[32];
          a = json_object_get(json_object_get(s, lanes[l]), "logits_f32le");
          if (st == TL_OK && a != NULL && tl_hex32_parse(json_string_value(a), id))
            st = tl_claim_result_support(out, id);
        }
      }
    }
  }
  if (st == TL_OK) {
    size_t least = SIZE_MAX, least_k = 0;
    for (size_t k = 0; k < d.n_configs; k++)
      if (v.varied[k] < least) {
        least = v.varied[k];
        least_k = k;
      }
    if (v.mismatches > 0) {
      out->pass = false;
      out->stop_rule = TL_RULE_REPLAY;
      snprintf(out->first_divergence, sizeof out->first_divergence, "%s", v.first_mismatch);
    } else if (v.first_tvd[0] != '\0') {
      out->pass = false;
      out->stop_rule = TL_RULE_STOCHASTIC;
      snprintf(out->first_divergence, sizeof out->first_divergence, "%s", v.first_tvd);
    } else if (least < d.min_varied) {
      out->pass = false;
      out->stop_rule = TL_RULE_DEGENERATE;
      snprintf(out->first_divergence, sizeof out->first_divergence,
               "configuration %s: the seeds drew differently on %zu of %zu prompts, the design "
               "needs %u (degenerate prompts are no evidence)",
               d.config_names[least_k], least, out->n_cases, d.min_varied);
    }
    snprintf(out->summary, sizeof out->summary,
             "%s vs %s, %zu prompts x %zu configurations x %u seeds: %zu draws replayed (%zu "
             "as observed), %zu mismatched, %zu undecidable; post-sampler TVD at most %.3g over "
             "%zu teacher-forced steps (min_tvd %.3g); %zu of %zu prompt x configuration "
             "degenerate",
             d.a, d.b, out->n_cases, d.n_configs, d.count, v.replayed, v.summarised,
             v.mismatches, v.undecidable, v.tvd_max, v.forced, d.min_tvd, v.degenerate,
             v.pairs);
  }
  free(v.varied);
  json_decref(doc);
  if (st != TL_OK) tl_claim_result_free(out);
  return st;
}

/* ------------------------------------------------------------------------ */
/* plan init                                                                */

/* The default design: 8 prompts x 5 configurations x 16 seeds x 4 tokens
 * (docs/promotion-stats.md derives each number). */
#define DEFAULT_PROMPTS 8
#define DEFAULT_MAX_NEW 4
/* What tests/promote/stochastic_calibration.py measured of the fast
 * lane's default design (docs/promotion-stats.md §Measured): recorded in
 * the plan, so that the design a promotion names carries its own
 * figures. A change of the design above is measured again. */
#define DEFAULT_CALIBRATION                                                             \
  "false alarms 0 of 30 correct runs (10 seed bases each: synthetic tiny q8, a wider "   \
  "synthetic q8, the demo model q8; 95% interval [0, 0.116]); power against the fast "   \
  "lane sampling at temperature x1.05, synthetic tiny: 10 of 10 refused (95% interval " \
  "[0.69, 1]); tests/promote/stochastic_calibration.py, 2026-12-07"

static json_t *config_json(const char *name, const char *temperature, const char *top_p,
                           uint32_t top_k, const char *min_p, const char *penalty,
                           uint32_t window) {
  return json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:I}", "name", name, "temperature", temperature,
                   "top_k",
                   (json_int_t)top_k, "top_p", top_p, "min_p", min_p, "repeat_penalty", penalty,
                   "repeat_window", (json_int_t)window);
}

/* Mean next-token entropy (nats, over the defined ids) along a greedy
 * continuation of max_new steps. */
typedef struct entropy_rec {
  uint32_t defined;
  double sum;
  size_t steps;
} entropy_rec;

static void on_entropy(void *ctx, const float *logits, size_t vocab, uint32_t id) {
  entropy_rec *e = ctx;
  double mx = -INFINITY, sum = 0.0, h = 0.0;
  size_t n = vocab < e->defined ? vocab : e->defined;
  (void)id;
  for (size_t i = 0; i < n; i++)
    if (logits[i] > mx) mx = logits[i];
  for (size_t i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
  for (size_t i = 0; i < n; i++) {
    double lp = (double)logits[i] - mx - log(sum);
    h -= exp(lp) * lp;
  }
  e->sum += h;
  e->steps++;
}

typedef struct ranked {
  double entropy;
  size_t index;
} ranked;

static int by_entropy(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  return x->entropy < y->entropy ? 1 : x->entropy > y->entropy ? -1 : (x->index > y->index) - (x->index < y->index);
}

tl_status tl_plan_stochastic_claim(const char *slm_path, const char *lane, const char *root,
                                   json_t *claims, char *note, size_t note_cap, char *err,
                                   size_t err_cap) {
  char path[4200], cerr[512];
  json_t *pool = NULL, *prompts, *cases = json_array(), *design, *configs;
  json_error_t jerr;
  tl_model_handle m = 0;
  tl_session_handle s = 0;
  tl_claim_ctx c = {0};
  ranked *r = NULL;
  size_t n = 0;
  tl_status st = TL_OK;
  c.slm_path = slm_path;
  c.err = cerr;
  c.err_cap = sizeof cerr;
  snprintf(path, sizeof path, "%.4000s/tests/promote/stochastic_prompts.json", root);
  pool = json_load_file(path, 0, &jerr);
  prompts = json_object_get(pool, "prompts");
  n = json_array_size(prompts);
  if (n < DEFAULT_PROMPTS) {
    snprintf(err, err_cap, "%s: a pool of at least %d prompts is needed (%s)", path,
             DEFAULT_PROMPTS, pool ? "too few" : jerr.text);
    json_decref(pool);
    json_decref(cases);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if ((r = calloc(n, sizeof *r)) == NULL) st = TL_ERR_OUT_OF_MEMORY;
  if (st == TL_OK) st = tl_claim_open_model(&c, &m);
  /* the prompts are chosen on the fast lane whatever the plan's: the
   * entropy decides which prompts, not a verdict, and the strict lane
   * would spend a minute on it */
  if (st == TL_OK) st = tl_claim_open_session(&c, m, "fast", 1024, &s);
  for (size_t i = 0; st == TL_OK && i < n; i++) {
    json_t *cs = json_pack("{s:[{s:s,s:O}],s:b}", "messages", "role", "user", "content",
                           json_array_get(prompts, i), "enable_thinking", 0);
    uint32_t *ids = NULL;
    size_t n_ids = 0;
    entropy_rec e = {UINT32_MAX, 0.0, 0}; /* every logit: padded rows are far below */
    tl_generation_handle g;
    tl_generation_params p;
    st = prompt_ids(&c, m, cs, &ids, &n_ids);
    json_decref(cs);
    if (st == TL_OK && (st = tl_generation_new(s, &g)) == TL_OK) {
      memset(&p, 0, sizeof p);
      p.ids = ids;
      p.n_ids = n_ids;
      p.given = TL_GIVEN_TEMPERATURE; /* greedy */
      p.max_tokens = DEFAULT_MAX_NEW;
      p.on_choice = on_entropy;
      p.ctx = &e;
      st = tl_generation_run(g, &p);
      if (st != TL_OK) tl_claim_api_fail(&c, g, st, "the entropy pass");
      tl_generation_free(g);
    }
    free(ids);
    r[i] = (ranked){e.steps ? e.sum / (double)e.steps : 0.0, i};
  }
  if (st == TL_OK) {
    qsort(r, n, sizeof *r, by_entropy);
    for (size_t k = 0; k < DEFAULT_PROMPTS; k++) {
      char h[32];
      snprintf(h, sizeof h, "%.4f", r[k].entropy);
      json_array_append_new(cases, tl_plan_case(json_pack(
                                       "{s:[{s:s,s:O}],s:b,s:s}", "messages", "role", "user",
                                       "content", json_array_get(prompts, r[k].index),
                                       "enable_thinking", 0, "entropy_nats", h)));
    }
    snprintf(note, note_cap,
             "%d of %zu pool prompts, mean next-token entropy %.3g to %.3g nats over %d greedy "
             "steps on lane %s",
             DEFAULT_PROMPTS, n, r[DEFAULT_PROMPTS - 1].entropy, r[0].entropy, DEFAULT_MAX_NEW,
             "fast");
    /* 8 seeds x 4 tokens x 5 configurations x 8 prompts: 1280 replayed
     * draws (the sampler defects of the mutation table each mismatch on
     * tens of them); a strict-lane plan samples on the strict lane, whose
     * sampler is the fast lane's code, with 2 tokens (640 strict steps). */
    bool strict = strcmp(lane, "scalar") == 0;
    /* top_k at temperature 2 with k = 3: the candidates at the cut carry
     * mass even on a peaked model (the demo's), so a cut one place off
     * changes draws (at temperature 1 and k = 5 the demo model's sixth
     * candidate drew nothing in 256 draws) */
    configs = json_pack("[o,o,o,o,o]", config_json("plain", "1", "1", 0, "0", "1", 0),
                        config_json("top_p", "1", "0.9", 0, "0", "1", 0),
                        config_json("top_k", "2", "1", 3, "0", "1", 0),
                        config_json("min_p", "1", "1", 0, "0.1", "1", 0),
                        config_json("penalty", "1", "1", 0, "0", "1.3", 64));
    design = json_pack("{s:s,s:{s:s,s:s},s:{s:i,s:i,s:s},s:i,s:o,s:{s:i,s:s,s:s},s:i}", "format",
                       TL_STOCH_FORMAT, "lanes", "a", lane, "b",
                       strcmp(lane, "fast") == 0 ? "scalar" : "fast", "seeds", "base", 1000,
                       "count", 8, "derivation", "seed_i = base + i", "max_new",
                       strict ? 2 : DEFAULT_MAX_NEW,
                       "configurations", configs, "distributions", "trajectories", 2, "min_tvd",
                       "0.05", "mass", "1e-4",
                       /* every draw is replayed, identical ones too: a
                        * configuration is evidence about its cut once one
                        * prompt's draws left the first candidate (docs/
                        * promotion-stats.md §Degenerate prompts) */
                       "min_varied_prompts", 1);
    if (!strict) json_object_set_new(design, "calibration", json_string(DEFAULT_CALIBRATION));
    json_array_append_new(claims, json_pack("{s:s,s:s,s:s,s:s,s:n,s:o,s:O}", "name", "stochastic",
                                            "kind", "stochastic", "level", "stochastic", "oracle",
                                            "the reference sampler (docs/sampler.md) on the lane's "
                                            "logits; the other native lane's distributions",
                                            "tolerance", "design", design, "cases", cases));
  } else {
    snprintf(err, err_cap, "the stochastic claim's prompts: %s", cerr);
  }
  free(r);
  json_decref(cases);
  json_decref(pool);
  if (s) tl_session_free(s);
  if (m) tl_model_close(m);
  return st;
}
