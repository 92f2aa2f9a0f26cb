/* W-5 of docs/webgpu-profile.md: see observe_bounds.h. */
#include "observe_bounds.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "kernels/kernels.h"

bool tl_observe_within_applies(const char *a, const char *b) {
  return (strcmp(a, TL_FAST_PROFILE) == 0 && strcmp(b, TL_WEBGPU_PROFILE) == 0) ||
         (strcmp(b, TL_FAST_PROFILE) == 0 && strcmp(a, TL_WEBGPU_PROFILE) == 0);
}

/* Where a record's place lands in the index (stage, layer + 1, position). */
static size_t slot(const tl_observe_doc *d, const tl_observe_record *r) {
  return ((size_t)r->stage * (d->meta.layers + 1) + (size_t)(r->layer + 1)) * d->meta.n_ids +
         r->pos;
}

/* The largest ratio |difference| / bound of one pair's summaries, and
 * which summary gives it. Element rule e_i <= atol + rtol max(|c_i|,
 * |r_i|) over k finite elements implies: |l2_c - l2_r| <= sqrt(k) atol +
 * rtol (l2_c + l2_r) (triangle inequality, max <= sum); |mean_c - mean_r|
 * <= atol + rtol (l2_c + l2_r) / sqrt(k) (Cauchy-Schwarz); |max_c - max_r|
 * and |min_c - min_r| <= atol + rtol M, M the largest magnitude of either
 * record. A count or non-finite count that differs is infinitely far. */
static double pair_ratio(const tl_observe_record *r, const tl_observe_record *c, double rtol,
                         double atol, const char **field) {
  double k = (double)(r->count - r->nonfinite), ratio = 0.0;
  double m = fmax(fmax(fabs(r->min), fabs(r->max)), fmax(fabs(c->min), fabs(c->max)));
  struct {
    const char *name;
    double diff, bound;
  } s[4];
  *field = NULL;
  if (r->count != c->count || r->nonfinite != c->nonfinite) {
    *field = r->count != c->count ? "count" : "nonfinite";
    return INFINITY;
  }
  if (k == 0) return 0.0;
  s[0].name = "l2", s[0].diff = fabs(c->l2 - r->l2), s[0].bound = sqrt(k) * atol + rtol * (c->l2 + r->l2);
  s[1].name = "mean", s[1].diff = fabs(c->mean - r->mean);
  s[1].bound = atol + rtol * (c->l2 + r->l2) / sqrt(k);
  s[2].name = "max", s[2].diff = fabs(c->max - r->max), s[2].bound = atol + rtol * m;
  s[3].name = "min", s[3].diff = fabs(c->min - r->min), s[3].bound = atol + rtol * m;
  for (size_t i = 0; i < 4; i++) {
    double q = s[i].diff == 0 ? 0.0 : s[i].bound > 0 ? s[i].diff / s[i].bound : INFINITY;
    if (isnan(q)) q = INFINITY; /* a NaN summary is never within a bound */
    if (q > ratio || *field == NULL) {
      ratio = q > ratio ? q : ratio;
      *field = s[i].name;
    }
  }
  return ratio;
}

tl_status tl_observe_within(const tl_observe_doc *ref, const tl_observe_doc *cand,
                            const tl_qwen3_config *cfg, bool quantized, const double *es,
                            tl_observe_within_result *out) {
  size_t n_slots = (size_t)TL_QWEN3_STAGE_COUNT * (ref->meta.layers + 1) * ref->meta.n_ids;
  size_t *at;
  memset(out, 0, sizeof *out);
  out->first_ref = out->first_cand = SIZE_MAX;
  if (cand->meta.layers != ref->meta.layers || cand->meta.n_ids != ref->meta.n_ids ||
      cand->n_records != ref->n_records)
    return TL_ERR_INVALID_ARGUMENT;
  at = malloc((n_slots ? n_slots : 1) * sizeof *at);
  if (at == NULL) return TL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n_slots; i++) at[i] = SIZE_MAX;
  for (size_t i = 0; i < cand->n_records; i++) at[slot(cand, &cand->records[i])] = i;
  for (size_t i = 0; i < ref->n_records; i++) {
    const tl_observe_record *r = &ref->records[i], *c;
    size_t j = at[slot(ref, r)];
    double rms, rtol, ratio;
    tl_tolerance t;
    const char *field;
    if (j == SIZE_MAX) {
      free(at);
      return TL_ERR_INVALID_ARGUMENT;
    }
    c = &cand->records[j];
    out->compared++;
    if (tl_observe_record_equal(r, c)) {
      out->identical++;
      continue;
    }
    rms = r->count > r->nonfinite ? r->l2 / sqrt((double)(r->count - r->nonfinite)) : 0.0;
    t = tl_tolerance_for_fast(cfg, (uint32_t)ref->meta.n_ids, r->stage, r->layer, rms, quantized,
                              es);
    rtol = 2.0 * t.rtol;
    ratio = pair_ratio(r, c, rtol, rtol * rms + 0x1p-60, &field);
    if (ratio > out->max_ratio) out->max_ratio = ratio;
    if (!(ratio <= 1.0)) {
      if (out->outside++ == 0) {
        out->first_ref = i;
        out->first_cand = j;
        out->field = field;
        out->ratio = ratio;
      }
    }
  }
  free(at);
  return TL_OK;
}
