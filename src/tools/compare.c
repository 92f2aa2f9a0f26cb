#include "compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "quant/quant.h"

/* docs/tolerance.md's depth: the layer, 0 for the embedding, the layer
 * count for final_norm and logits. */
static double depth_of(const tl_qwen3_config *cfg, tl_qwen3_stage stage,
                       int32_t layer) {
  return stage == TL_QWEN3_STAGE_EMBEDDING ? 0.0
         : layer < 0                        ? (double)cfg->layers
                                            : (double)layer;
}

tl_tolerance tl_tolerance_for(const tl_qwen3_config *cfg, uint32_t keys,
                              tl_qwen3_stage stage, int32_t layer,
                              double ref_rms) {
  const double u = 0x1p-24;
  double n = cfg->hidden, gamma, depth;
  tl_tolerance t;
  if (cfg->inter > n) n = cfg->inter;
  if ((double)cfg->heads * cfg->head_dim > n) n = (double)cfg->heads * cfg->head_dim;
  if (keys > n) n = keys;
  gamma = n * u / (1.0 - n * u);
  depth = depth_of(cfg, stage, layer);
  t.rtol = 16.0 * (depth + 1.0) * gamma;
  t.atol = t.rtol * ref_rms;
  return t;
}

/* The binary16 cache's unit roundoff and half its subnormal spacing. */
#define KV_U 0x1p-11
#define KV_ETA 0x1p-25

/* The relative error the cache adds to layer l's probabilities (a score
 * error of at most es moves each by a factor within e^(+-2 es)) and to its
 * attention output (those, and the values' own rounding). */
static double kv_probs(const double *es, uint32_t l) { return expm1(2.0 * es[l]); }
static double kv_attn(const double *es, uint32_t l) { return kv_probs(es, l) + KV_U; }

tl_tolerance tl_tolerance_for_fast(const tl_qwen3_config *cfg, uint32_t keys,
                                   tl_qwen3_stage stage, int32_t layer,
                                   double ref_rms, bool quantized, const double *es) {
  tl_tolerance t = tl_tolerance_for(cfg, keys, stage, layer, ref_rms);
  /* lambda 6 standard deviations, crest factor 4, uniform rounding of the
   * codes: 6 * 4 / (127 sqrt 12) per quantized contraction, three in
   * series per layer */
  const double rho = 24.0 / (127.0 * sqrt(12.0));
  uint32_t own = stage == TL_QWEN3_STAGE_EMBEDDING ? 0
                 : layer < 0                        ? cfg->layers
                                                    : (uint32_t)layer;
  if (quantized) t.rtol += 3.0 * rho * (depth_of(cfg, stage, layer) + 1.0);
  /* the KV cache (F-11): earlier layers' attention carried by the residual
   * stream, then this layer's own stage */
  for (uint32_t l = 0; l < own; l++) t.rtol += kv_attn(es, l);
  if (stage != TL_QWEN3_STAGE_EMBEDDING && layer >= 0) {
    if (stage == TL_QWEN3_STAGE_SCORES || stage == TL_QWEN3_STAGE_SCORES_MASKED)
      t.rtol += ref_rms > 0.0 ? es[layer] / ref_rms : 0.0;
    else if (stage == TL_QWEN3_STAGE_PROBS)
      t.rtol += kv_probs(es, (uint32_t)layer);
    else if (stage > TL_QWEN3_STAGE_PROBS)
      t.rtol += kv_attn(es, (uint32_t)layer) + (ref_rms > 0.0 ? KV_ETA / ref_rms : 0.0);
  }
  t.atol = t.rtol * ref_rms;
  return t;
}

/* The largest |value| of a one-row norm weight of n elements. */
static tl_status max_abs_weight(const tl_qwen3_weight *w, double *out) {
  float *row = malloc((w->n ? w->n : 1) * sizeof *row);
  tl_status st = row == NULL ? TL_ERR_OUT_OF_MEMORY
                             : tl_quant_unpack(w->type, w->data, w->len, 1, w->n, row);
  *out = 0.0;
  for (size_t i = 0; st == TL_OK && i < w->n; i++)
    if (fabs(row[i]) > *out) *out = fabs(row[i]);
  free(row);
  return st;
}

tl_status tl_kv_score_errors(const tl_qwen3 *m, double *es) {
  double d = m->cfg.head_dim;
  for (uint32_t l = 0; l < m->cfg.layers; l++) {
    double wq, wk;
    tl_status st = max_abs_weight(&m->layers[l].q_norm, &wq);
    if (st == TL_OK) st = max_abs_weight(&m->layers[l].k_norm, &wk);
    if (st != TL_OK) return st;
    es[l] = sqrt(d) * wq * (KV_U * wk + KV_ETA);
  }
  return TL_OK;
}

double tl_rms(const double *ref, size_t n) {
  double ss = 0.0;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(ref[i])) continue;
    ss += ref[i] * ref[i];
    m++;
  }
  return m ? sqrt(ss / (double)m) : 0.0;
}

/* Distance in representable f32 steps (sign-magnitude to a monotone key). */
static uint64_t ulp_distance(float a, float b) {
  uint32_t ua = tl_f32_to_bits(a), ub = tl_f32_to_bits(b);
  int64_t ka = (ua & 0x80000000u) ? -(int64_t)(ua & 0x7fffffffu) : (int64_t)ua;
  int64_t kb = (ub & 0x80000000u) ? -(int64_t)(ub & 0x7fffffffu) : (int64_t)ub;
  return (uint64_t)(ka > kb ? ka - kb : kb - ka);
}

void tl_compare(const double *ref, const float *cand, size_t n,
                tl_tolerance tol, double rel_floor, tl_compare_stats *s) {
  double se = 0.0, sr = 0.0, dot = 0.0, sc = 0.0;
  memset(s, 0, sizeof *s);
  s->count = n;
  s->first_fail = SIZE_MAX;
  s->ref_rms = tl_rms(ref, n);
  for (size_t i = 0; i < n; i++) {
    double r = ref[i], c = cand[i], diff, mag, ratio;
    bool ok;
    if (isinf(r) || isinf(c)) {
      ok = r == c;
      diff = ok ? 0.0 : INFINITY;
      ratio = ok ? 0.0 : INFINITY;
    } else {
      double bound;
      diff = fabs(c - r);
      mag = fabs(c) > fabs(r) ? fabs(c) : fabs(r);
      bound = tol.atol + tol.rtol * mag;
      ok = diff <= bound;
      /* NaN compares false: a NaN candidate is an infinite ratio. */
      ratio = diff == 0.0 ? 0.0 : diff < INFINITY && bound > 0.0 ? diff / bound : INFINITY;
      se += diff * diff;
      sr += r * r;
      sc += c * c;
      dot += r * c;
      if (fabs(r) > rel_floor && diff / fabs(r) > s->max_rel)
        s->max_rel = diff / fabs(r);
      {
        uint64_t d = ulp_distance(cand[i], (float)r);
        if (d > s->max_ulp) s->max_ulp = d;
      }
    }
    if (diff > s->max_abs) s->max_abs = diff;
    if (ratio > s->max_bound_ratio) s->max_bound_ratio = ratio;
    if (!ok) {
      if (s->n_fail == 0) s->first_fail = i;
      s->n_fail++;
    }
  }
  s->rms_err = n ? sqrt(se / (double)n) : 0.0;
  s->nrmse = sr > 0 ? sqrt(se / sr) : 0.0;
  s->cosine = sr > 0 && sc > 0 ? dot / (sqrt(sr) * sqrt(sc)) : 1.0;
}

static void softmax(const double *x, size_t n, double *p) {
  double mx = -INFINITY, sum = 0.0;
  for (size_t i = 0; i < n; i++) if (x[i] > mx) mx = x[i];
  for (size_t i = 0; i < n; i++) sum += p[i] = exp(x[i] - mx);
  for (size_t i = 0; i < n; i++) p[i] /= sum;
}

/* Does (va, a) come before (vb, b) in the order descending value,
 * ascending id? */
static bool before(double va, size_t a, double vb, size_t b) {
  return va > vb || (va == vb && a < b);
}

/* The k first ids of x in that order (k passes; k is small). */
static size_t top_k(const double *x, size_t n, size_t k, size_t *out) {
  size_t m = 0;
  for (; m < k && m < n; m++) {
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
      if (m > 0 && !before(x[out[m - 1]], out[m - 1], x[i], i)) continue;
      if (best == SIZE_MAX || before(x[i], i, x[best], best)) best = i;
    }
    out[m] = best;
  }
  return m;
}

void tl_compare_logits(const double *ref, const float *cand, size_t vocab,
                       size_t k, tl_logit_stats *s) {
  double *p = malloc(vocab * sizeof *p), *q = malloc(vocab * sizeof *q);
  double *c = malloc(vocab * sizeof *c);
  size_t *tr = malloc((k ? k : 1) * sizeof *tr), *tc = malloc((k ? k : 1) * sizeof *tc);
  size_t nr, nc;
  memset(s, 0, sizeof *s);
  s->k = k;
  if (p == NULL || q == NULL || c == NULL || tr == NULL || tc == NULL || vocab < 2) {
    s->jsd = NAN;
  } else {
    for (size_t i = 0; i < vocab; i++) c[i] = cand[i];
    softmax(ref, vocab, p);
    softmax(c, vocab, q);
    for (size_t i = 0; i < vocab; i++) {
      double m = 0.5 * (p[i] + q[i]);
      if (p[i] > 0) s->jsd += 0.5 * p[i] * log(p[i] / m);
      if (q[i] > 0) s->jsd += 0.5 * q[i] * log(q[i] / m);
    }
    nr = top_k(ref, vocab, k > 2 ? k : 2, tr);
    nc = top_k(c, vocab, k > 2 ? k : 2, tc);
    s->ref_argmax = (uint32_t)tr[0];
    s->cand_argmax = (uint32_t)tc[0];
    s->margin = ref[tr[0]] - ref[tr[1]];
    for (size_t i = 0; i < k && i < nr; i++)
      for (size_t j = 0; j < k && j < nc; j++) s->topk_overlap += tr[i] == tc[j];
  }
  free(p);
  free(q);
  free(c);
  free(tr);
  free(tc);
}
