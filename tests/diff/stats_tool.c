/* Native helper for tests/promote/stats_scipy.py: runs the stochastic
 * comparison's statistics (src/native/promote_stats.h) on one JSON
 * document read from stdin and prints one JSON document.
 *
 *   {"op": "compare", "design": {"confidence", "min_tvd", "min_disagree",
 *    "min_logp", "bootstrap_resamples", "bootstrap_seed"}, "prompts":
 *    [{"pa", "pb", "differ", "lp_a", "lp_b", "len_a", "len_b", "stop_a",
 *      "stop_b"}, ...]}
 *       -> tl_stats_report_json's document, or {"error": STATUS,
 *          "message": TEXT} when tl_stats_compare refuses the input.
 *   {"op": "power", "cases": [{"n", "delta", "alpha_test", "rate"}, ...]}
 *       -> {"results": [{"critical", "power"}, ...]}
 *   {"op": "special", "calls": [[NAME, ARG...], ...]}
 *       -> {"results": [VALUE, ...]}: NAME is one of lgamma, betainc,
 *          betainc_inv, gammaq, t_sf, t_quantile, chi2_sf, ks2_sf_equal,
 *          binom_sf (the tl_stats_ functions, arguments in their order).
 *
 * Host code: stdio and malloc are fine here. Exit 0 with a document, 1 on
 * malformed input (the reason on stderr), 2 usage. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "promote_stats.h"

static int bad(const char *what) {
  fprintf(stderr, "stats_tool: %s\n", what);
  return 1;
}

static double real_at(const json_t *a, size_t i) {
  return json_number_value(json_array_get(a, i));
}

static double num_field(const json_t *o, const char *key, int *ok) {
  const json_t *v = json_object_get(o, key);
  if (!json_is_number(v)) *ok = 0;
  return json_number_value(v);
}

/* The arrays of one prompt, owned here. */
typedef struct prompt_buf {
  double *pa, *pb, *lp_a, *lp_b;
  uint8_t *differ, *stop_a, *stop_b;
  uint32_t *len_a, *len_b;
} prompt_buf;

static void prompt_buf_free(prompt_buf *b) {
  free(b->pa);
  free(b->pb);
  free(b->lp_a);
  free(b->lp_b);
  free(b->differ);
  free(b->stop_a);
  free(b->stop_b);
  free(b->len_a);
  free(b->len_b);
}

static double *reals(const json_t *a, size_t *n) {
  *n = json_array_size(a);
  double *v = malloc((*n ? *n : 1) * sizeof *v);
  for (size_t i = 0; v && i < *n; i++) v[i] = real_at(a, i);
  return v;
}

static uint32_t *u32s(const json_t *a, size_t n) {
  uint32_t *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; v && i < n; i++)
    v[i] = (uint32_t)json_integer_value(json_array_get(a, i));
  return v;
}

static uint8_t *u8s(const json_t *a, size_t n) {
  uint8_t *v = malloc(n ? n : 1);
  for (size_t i = 0; v && i < n; i++)
    v[i] = (uint8_t)json_integer_value(json_array_get(a, i));
  return v;
}

static int load_prompt(const json_t *o, tl_stats_prompt *q, prompt_buf *b) {
  static const char *const keys[] = {"pa",    "pb",     "differ",
                                     "lp_a",  "lp_b",   "len_a",
                                     "len_b", "stop_a", "stop_b"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    if (!json_is_array(json_object_get(o, keys[k]))) return 0;
  size_t vb, n, n2;
  b->pa = reals(json_object_get(o, "pa"), &q->vocab);
  b->pb = reals(json_object_get(o, "pb"), &vb);
  b->lp_a = reals(json_object_get(o, "lp_a"), &q->n);
  b->lp_b = reals(json_object_get(o, "lp_b"), &n2);
  n = q->n;
  if (vb != q->vocab || n2 != n) return 0;
  const char *per_seed[] = {"differ", "len_a", "len_b", "stop_a", "stop_b"};
  for (size_t k = 0; k < 5; k++)
    if (json_array_size(json_object_get(o, per_seed[k])) != n) return 0;
  b->differ = u8s(json_object_get(o, "differ"), n);
  b->stop_a = u8s(json_object_get(o, "stop_a"), n);
  b->stop_b = u8s(json_object_get(o, "stop_b"), n);
  b->len_a = u32s(json_object_get(o, "len_a"), n);
  b->len_b = u32s(json_object_get(o, "len_b"), n);
  if (!b->pa || !b->pb || !b->lp_a || !b->lp_b || !b->differ || !b->stop_a ||
      !b->stop_b || !b->len_a || !b->len_b)
    return 0;
  q->pa = b->pa;
  q->pb = b->pb;
  q->lp_a = b->lp_a;
  q->lp_b = b->lp_b;
  q->differ = b->differ;
  q->stop_a = b->stop_a;
  q->stop_b = b->stop_b;
  q->len_a = b->len_a;
  q->len_b = b->len_b;
  return 1;
}

static json_t *compare(const json_t *doc) {
  const json_t *dj = json_object_get(doc, "design");
  const json_t *pj = json_object_get(doc, "prompts");
  if (!json_is_object(dj) || !json_is_array(pj)) return NULL;
  int ok = 1;
  tl_stats_design d;
  d.confidence = num_field(dj, "confidence", &ok);
  d.min_tvd = num_field(dj, "min_tvd", &ok);
  d.min_disagree = num_field(dj, "min_disagree", &ok);
  d.min_logp = num_field(dj, "min_logp", &ok);
  d.bootstrap_resamples = (uint32_t)num_field(dj, "bootstrap_resamples", &ok);
  d.bootstrap_seed =
      (uint64_t)json_integer_value(json_object_get(dj, "bootstrap_seed"));
  if (!ok) return NULL;
  size_t np = json_array_size(pj);
  tl_stats_prompt *qs = calloc(np ? np : 1, sizeof *qs);
  prompt_buf *bufs = calloc(np ? np : 1, sizeof *bufs);
  json_t *out = NULL;
  if (!qs || !bufs) goto done;
  for (size_t i = 0; i < np; i++)
    if (!load_prompt(json_array_get(pj, i), &qs[i], &bufs[i])) goto done;
  tl_stats_report r;
  char err[256];
  tl_status st = tl_stats_compare(&d, qs, np, &r, err, sizeof err);
  if (st != TL_OK) {
    out = json_pack("{s:s,s:s}", "error", tl_status_name(st), "message", err);
  } else {
    out = tl_stats_report_json(&r);
    tl_stats_report_free(&r);
  }
done:
  for (size_t i = 0; bufs && i < np; i++) prompt_buf_free(&bufs[i]);
  free(bufs);
  free(qs);
  return out;
}

static json_t *power(const json_t *doc) {
  const json_t *cases = json_object_get(doc, "cases");
  json_t *res = json_array();
  if (!json_is_array(cases) || !res) return NULL;
  for (size_t i = 0; i < json_array_size(cases); i++) {
    const json_t *c = json_array_get(cases, i);
    int ok = 1;
    uint32_t n = (uint32_t)num_field(c, "n", &ok);
    double delta = num_field(c, "delta", &ok),
           at = num_field(c, "alpha_test", &ok),
           rate = num_field(c, "rate", &ok);
    if (!ok) {
      json_decref(res);
      return NULL;
    }
    json_array_append_new(
        res, json_pack("{s:I,s:f}", "critical",
                       (json_int_t)tl_stats_disagree_critical(n, delta, at),
                       "power", tl_stats_disagree_power(n, delta, at, rate)));
  }
  return json_pack("{s:o}", "results", res);
}

static json_t *special(const json_t *doc) {
  const json_t *calls = json_object_get(doc, "calls");
  json_t *res = json_array();
  if (!json_is_array(calls) || !res) return NULL;
  for (size_t i = 0; i < json_array_size(calls); i++) {
    const json_t *c = json_array_get(calls, i);
    const char *f = json_string_value(json_array_get(c, 0));
    double a = real_at(c, 1), b = real_at(c, 2), x = real_at(c, 3), v;
    if (!f) {
      json_decref(res);
      return NULL;
    }
    if (!strcmp(f, "lgamma"))
      v = tl_stats_lgamma(a);
    else if (!strcmp(f, "betainc"))
      v = tl_stats_betainc(a, b, x);
    else if (!strcmp(f, "betainc_inv"))
      v = tl_stats_betainc_inv(a, b, x);
    else if (!strcmp(f, "gammaq"))
      v = tl_stats_gammaq(a, b);
    else if (!strcmp(f, "t_sf"))
      v = tl_stats_t_sf(a, b);
    else if (!strcmp(f, "t_quantile"))
      v = tl_stats_t_quantile(a, b);
    else if (!strcmp(f, "chi2_sf"))
      v = tl_stats_chi2_sf(a, b);
    else if (!strcmp(f, "ks2_sf_equal"))
      v = tl_stats_ks2_sf_equal((uint32_t)a, (uint32_t)b);
    else if (!strcmp(f, "binom_sf"))
      v = tl_stats_binom_sf((uint32_t)a, (uint32_t)b, x);
    else {
      json_decref(res);
      return NULL;
    }
    json_array_append_new(res, isfinite(v) ? json_real(v) : json_null());
  }
  return json_pack("{s:o}", "results", res);
}

int main(int argc, char **argv) {
  (void)argv;
  if (argc != 1) {
    fprintf(stderr, "usage: stats_tool < request.json\n");
    return 2;
  }
  json_error_t je;
  json_t *doc = json_loadf(stdin, 0, &je);
  if (!doc) return bad(je.text);
  const char *op = json_string_value(json_object_get(doc, "op"));
  json_t *out = NULL;
  if (op && !strcmp(op, "compare"))
    out = compare(doc);
  else if (op && !strcmp(op, "power"))
    out = power(doc);
  else if (op && !strcmp(op, "special"))
    out = special(doc);
  json_decref(doc);
  if (!out)
    return bad(
        "malformed request (see the usage at the top of "
        "tests/diff/stats_tool.c)");
  char *text = json_dumps(out, JSON_COMPACT | JSON_REAL_PRECISION(17));
  json_decref(out);
  if (!text) return bad("out of memory");
  puts(text);
  free(text);
  return 0;
}
