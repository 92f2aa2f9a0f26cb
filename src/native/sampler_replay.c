/* docs/sampler.md S-4 to S-11 from the document, for replaying a lane's
 * draws (sampler_replay.h). Every float operation is the document's, in
 * its order, binary64, exponentials by tl_exp. */
#include "sampler_replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "math/detmath.h"
#include "sample/philox.h"

/* S-4: the distinct ids of the last W history ids. */
static bool in_window(const tl_replay_cfg *c, const uint32_t *h, size_t n, uint32_t id) {
  size_t from;
  if (c->repeat_penalty == 1.0 || c->repeat_window == 0) return false;
  from = n > c->repeat_window ? n - c->repeat_window : 0;
  for (size_t i = from; i < n; i++)
    if (h[i] == id) return true;
  return false;
}

/* S-4 then S-5: the working value s of a raw logit. */
static double working(const tl_replay_cfg *c, const uint32_t *h, size_t nh, uint32_t id, float z) {
  double v = (double)z;
  if (in_window(c, h, nh, id)) {
    if (v > 0) v = v / c->repeat_penalty;
    else if (v < 0) v = v * c->repeat_penalty;
  }
  return v / c->temperature;
}

/* S-6's order: s descending, then id ascending, with == on binary64 (so
 * -0 and +0 tie). An LSD radix sort (stable), first by id, then by s as
 * an order-preserving integer: linear in n, for whole vocabularies. */
static uint64_t desc_key(double s) {
  uint64_t b;
  if (s == 0.0) s = 0.0; /* -0 as +0 */
  memcpy(&b, &s, sizeof b);
  b = b >> 63 ? ~b : b | (1ull << 63); /* ascending with s */
  return ~b;
}

static void radix_pass(const uint64_t *key, size_t *from, size_t *to, size_t n, unsigned shift) {
  size_t count[2049] = {0};
  for (size_t i = 0; i < n; i++) count[((key[from[i]] >> shift) & 2047) + 1]++;
  for (size_t d = 1; d < 2049; d++) count[d] += count[d - 1];
  for (size_t i = 0; i < n; i++) to[count[(key[from[i]] >> shift) & 2047]++] = from[i];
}

/* Candidate order of n entries: *order (malloc'd) and their s. */
static tl_status sort_candidates(const tl_replay_cfg *c, const uint32_t *ids, const float *z,
                                 size_t n, const uint32_t *h, size_t nh, size_t **order,
                                 double **s) {
  uint64_t *key = malloc(n * sizeof *key);
  size_t *tmp = malloc(n * sizeof *tmp);
  double *v = malloc(n * sizeof *v);
  *order = malloc(n * sizeof **order);
  *s = malloc(n * sizeof **s);
  if (!key || !tmp || !v || !*order || !*s) {
    free(key);
    free(tmp);
    free(v);
    free(*order);
    free(*s);
    *order = NULL;
    *s = NULL;
    return TL_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < n; i++) {
    (*order)[i] = i;
    key[i] = ids[i];
    v[i] = working(c, h, nh, ids[i], z[i]);
  }
  for (unsigned sh = 0; sh < 33; sh += 11) { /* id: 3 passes, ends in *order */
    radix_pass(key, *order, tmp, n, sh);
    memcpy(*order, tmp, n * sizeof *tmp);
  }
  for (size_t i = 0; i < n; i++) key[i] = desc_key(v[i]);
  for (unsigned sh = 0; sh < 66; sh += 11) { /* s: 6 passes */
    radix_pass(key, *order, tmp, n, sh);
    memcpy(*order, tmp, n * sizeof *tmp);
  }
  for (size_t i = 0; i < n; i++) (*s)[i] = v[(*order)[i]];
  free(key);
  free(tmp);
  free(v);
  return TL_OK;
}

/* The candidates S-7 to S-11 can see: with every candidate given, those
 * within 40 of the largest working value. Below that e_j < 2^-54, and
 * adding it to a running sum of at least e_0 = 1 (S) or P_0 (R: the terms
 * are e_j / S) leaves the sum's bits as they are: the order of the rest
 * changes nothing, so it is not sorted. A stored prefix is taken whole.
 * *order then lists the head (nh entries) first, in candidate order. */
static tl_status sort_head(const tl_replay_cfg *c, const tl_replay_step *in, size_t **order,
                           double **s, size_t *nh) {
  uint32_t *hid;
  float *hz;
  size_t *sub = NULL, n = 0, k = 0;
  double mx = -INFINITY;
  tl_status st;
  if (!in->full) {
    *nh = in->n;
    return sort_candidates(c, in->ids, in->z, in->n, in->history, in->n_history, order, s);
  }
  for (size_t i = 0; i < in->n; i++) {
    double v = working(c, in->history, in->n_history, in->ids[i], in->z[i]);
    if (v > mx) mx = v;
  }
  hid = malloc(in->n * sizeof *hid);
  hz = malloc(in->n * sizeof *hz);
  *order = malloc(in->n * sizeof **order);
  if (!hid || !hz || !*order) {
    free(hid);
    free(hz);
    free(*order);
    *order = NULL;
    return TL_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < in->n; i++)
    if (working(c, in->history, in->n_history, in->ids[i], in->z[i]) >= mx - 40.0) {
      (*order)[n] = i;
      hid[n] = in->ids[i];
      hz[n++] = in->z[i];
    }
  st = sort_candidates(c, hid, hz, n, in->history, in->n_history, &sub, s);
  if (st == TL_OK) {
    size_t *head = malloc(n * sizeof *head);
    bool *taken = calloc(in->n, sizeof *taken);
    if (!head || !taken) st = TL_ERR_OUT_OF_MEMORY;
    for (size_t j = 0; st == TL_OK && j < n; j++) head[j] = (*order)[sub[j]];
    for (size_t j = 0; st == TL_OK && j < n; j++) {
      (*order)[j] = head[j];
      taken[head[j]] = true;
    }
    for (size_t i = 0, at = n; st == TL_OK && i < in->n; i++)
      if (!taken[i]) (*order)[at++] = i;
    k = n;
    free(head);
    free(taken);
  }
  free(sub);
  free(hid);
  free(hz);
  if (st != TL_OK) {
    free(*order);
    free(*s);
    *order = NULL;
    *s = NULL;
  }
  *nh = k;
  return st;
}

static bool near(double a, double b) { return fabs(a - b) < TL_REPLAY_MARGIN; }

tl_status tl_replay(const tl_replay_cfg *cfg, const tl_replay_step *in, tl_replay_out *out,
                    char *err, size_t err_cap) {
  double *s = NULL, *P = NULL, S, R, u, b, theta;
  size_t kept, cut, *surv = NULL, ns = 0, nh = 0;
  tl_status st;
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < in->n; i++)
    if (!isfinite(in->z[i])) {
      snprintf(err, err_cap, "logit of id %u is not finite", in->ids[i]);
      return TL_ERR_INVALID_ARGUMENT;
    }
  if (in->n == 0 || in->n > in->n_all) {
    snprintf(err, err_cap, "%zu listed of %zu candidates", in->n, in->n_all);
    return TL_ERR_INVALID_ARGUMENT;
  }
  st = sort_head(cfg, in, &out->order, &s, &nh);
  if (st != TL_OK) return st;
  P = malloc(nh * sizeof *P);
  surv = malloc(nh * sizeof *surv);
  if (!P || !surv) {
    st = TL_ERR_OUT_OF_MEMORY;
    goto done;
  }
  /* S-6: top-k over every candidate. */
  kept = cfg->top_k > 0 && cfg->top_k < in->n_all ? cfg->top_k : in->n_all;
  if (kept > nh) kept = nh; /* the rest lies beyond the prefix, or adds nothing */
  /* S-7 */
  S = 0.0;
  for (size_t j = 0; j < kept; j++) {
    P[j] = tl_exp(s[j] - s[0]);
    S += P[j];
  }
  if (!in->full) S = in->S;
  for (size_t j = 0; j < kept; j++) P[j] /= S;
  /* S-8: the prefix ends at the first running sum >= top_p. */
  cut = kept;
  if (cfg->top_p < 1.0) {
    double csum = 0.0;
    for (size_t j = 0; j < kept; j++) {
      csum += P[j];
      if (near(csum, cfg->top_p)) out->undecidable = true;
      if (csum >= cfg->top_p) {
        cut = j + 1;
        break;
      }
    }
  }
  /* S-9 */
  theta = cfg->min_p * P[0];
  for (size_t j = 0; j < cut; j++) {
    if (cfg->min_p > 0.0 && near(P[j], theta)) out->undecidable = true;
    if (cfg->min_p <= 0.0 || P[j] >= theta) surv[ns++] = j;
  }
  /* S-10 */
  R = 0.0;
  for (size_t k = 0; k < ns; k++) R += P[surv[k]];
  if (!in->full) R = in->R;
  /* S-11: the first bound strictly above u; else the last survivor with
   * q > 0 (only when every survivor was listed). */
  u = tl_draw_to_unit(in->word);
  b = 0.0;
  out->rank = SIZE_MAX;
  for (size_t k = 0; k < ns; k++) {
    double q = P[surv[k]] / R, prev = b;
    b = b + q;
    if (b > u) {
      if (near(prev, u) || near(b, u)) out->undecidable = true;
      out->rank = surv[k];
      break;
    }
  }
  if (out->rank == SIZE_MAX) {
    if (!in->full) {
      snprintf(err, err_cap, "the draw %.17g lies beyond the %zu listed candidates", u, in->n);
      st = TL_ERR_INVALID_ARGUMENT;
      goto done;
    }
    for (size_t k = ns; k-- > 0;)
      if (P[surv[k]] / R > 0.0) {
        out->rank = surv[k];
        break;
      }
    if (out->rank == SIZE_MAX) out->rank = surv[0];
  }
  out->id = in->ids[out->order[out->rank]];
  out->S = S;
  out->R = R;
  out->survivors = ns;
  out->head = nh;
done:
  free(s);
  free(P);
  free(surv);
  if (st != TL_OK) {
    free(out->order);
    out->order = NULL;
  }
  return st;
}

tl_status tl_replay_distribution(const tl_replay_cfg *cfg, const uint32_t *ids, const float *z,
                                 size_t n, size_t n_all, double lse, double floor_z,
                                 const uint32_t *history, size_t n_history, tl_replay_dist *out) {
  size_t *order = NULL, kept, cut, reliable = 0;
  double *s = NULL, Z = 1.0, listed = 0.0, R, theta, floor_s = floor_z / cfg->temperature;
  tl_status st = sort_candidates(cfg, ids, z, n, history, n_history, &order, &s);
  memset(out, 0, sizeof *out);
  if (st != TL_OK) return st;
  out->ids = malloc(n * sizeof *out->ids);
  out->q = malloc(n * sizeof *out->q);
  if (!out->ids || !out->q) {
    free(order);
    free(s);
    tl_replay_dist_free(out);
    return TL_ERR_OUT_OF_MEMORY;
  }
  /* S-7 over every candidate: exp(s - lse); the penalty moved the mass of
   * the window's ids (all listed), so the normaliser moves with it. */
  for (size_t i = 0; i < n; i++) {
    double raw = (double)z[i] / cfg->temperature, pen = working(cfg, history, n_history, ids[i], z[i]);
    if (raw != pen) Z += exp(pen - lse) - exp(raw - lse);
  }
  for (size_t j = 0; j < n; j++) {
    out->ids[j] = ids[order[j]];
    out->q[j] = exp(s[j] - lse) / Z;
    listed += out->q[j];
    if (s[j] > floor_s) reliable = j + 1; /* its rank among all is known */
  }
  out->n = n;
  out->rest = n < n_all && listed < 1.0 ? 1.0 - listed : 0.0;
  /* S-6: top-k, decided where the k-th lies among the ranked ids. */
  kept = n;
  if (cfg->top_k > 0 && cfg->top_k < n_all && cfg->top_k <= reliable) {
    kept = cfg->top_k;
    out->rest = 0.0;
  }
  /* S-8 */
  cut = kept;
  if (cfg->top_p < 1.0) {
    double c = 0.0;
    for (size_t j = 0; j < kept && j < reliable; j++) {
      c += out->q[j];
      if (c >= cfg->top_p) {
        cut = j + 1;
        out->rest = 0.0;
        break;
      }
    }
  }
  /* S-9: the ids left out all fall below the threshold when the largest
   * of them does. */
  theta = cfg->min_p * out->q[0];
  if (cfg->min_p > 0.0 && exp(floor_s - lse) / Z < theta) out->rest = 0.0;
  out->n = 0;
  for (size_t j = 0; j < cut; j++)
    if (cfg->min_p <= 0.0 || out->q[j] >= theta) {
      out->ids[out->n] = out->ids[j];
      out->q[out->n++] = out->q[j];
    }
  /* S-10 */
  R = out->rest;
  for (size_t j = 0; j < out->n; j++) R += out->q[j];
  for (size_t j = 0; j < out->n; j++) out->q[j] /= R;
  out->rest /= R;
  free(order);
  free(s);
  return TL_OK;
}

void tl_replay_dist_free(tl_replay_dist *d) {
  free(d->ids);
  free(d->q);
  memset(d, 0, sizeof *d);
}

typedef struct id_q {
  uint32_t id;
  double q;
} id_q;

static int by_id(const void *a, const void *b) {
  uint32_t x = ((const id_q *)a)->id, y = ((const id_q *)b)->id;
  return (x > y) - (x < y);
}

double tl_replay_tvd_bound(const tl_replay_dist *a, const tl_replay_dist *b) {
  id_q *bs = malloc((b->n ? b->n : 1) * sizeof *bs);
  double sum = a->rest + b->rest, both_b = 0.0, all_b = 0.0;
  if (bs == NULL) return 1.0; /* no memory: the bound every pair satisfies */
  for (size_t i = 0; i < b->n; i++) {
    bs[i] = (id_q){b->ids[i], b->q[i]};
    all_b += b->q[i];
  }
  qsort(bs, b->n, sizeof *bs, by_id);
  for (size_t i = 0; i < a->n; i++) {
    id_q want = {a->ids[i], 0.0};
    const id_q *hit = bsearch(&want, bs, b->n, sizeof *bs, by_id);
    if (hit == NULL) sum += a->q[i];
    else {
      sum += fabs(a->q[i] - hit->q);
      both_b += hit->q;
    }
  }
  sum += all_b - both_b; /* b's listed mass that a does not list */
  free(bs);
  return sum / 2 > 1.0 ? 1.0 : sum / 2;
}
