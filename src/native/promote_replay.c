/* The `replay` claim of tinylm promote (docs/promotion.md; its bound is
 * docs/tolerance.md §replay-f32/1): the lane runs a long prompt with every
 * capture point of every layer recorded, and each stage is recomputed in
 * float64 from the lane's own captured inputs of that stage (the norm from
 * its input row, q from attn_norm, q_rope from q_norm, the scores from
 * q_rope and the cached keys, ...) with the artifact's own weights. Each
 * stage is then one operation away from its reference, so the bound is
 * that operation's rounding alone: no error accumulates through the
 * layers, and a lane that computes a different function (another RoPE
 * base, a shifted position, a late cache row, another scale, epsilon or
 * activation) is refused at the stage where it happens.
 *
 * The observation is the capture (one store object of f32 rows) and an
 * index of its rows; judging reads only those and the artifact, so the
 * verdict can be derived again from what is stored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "bytes.h"
#include "cli.h"
#include "hash/sha256.h"
#include "kernels/kernels.h"
#include "promote.h"
#include "promote_plan.h"
#include "quant/quant.h"
#include "tok/tokenizer.h"

#define U (1.0 / 16777216.0) /* f32 unit roundoff, 2^-24 */
/* Products and sums of subnormal size: a bound never smaller than this. */
#define TINY 1e-37

/* Wilkinson's gamma_n = n u / (1 - n u): any summation order of n terms. */
static double gamma_n(size_t n) {
  double nu = (double)n * U;
  return nu / (1.0 - nu);
}

/* ------------------------------------------------------------------------ */
/* The capture: rows in arrival order, and a table from (stage, layer,
 * position) to a row. */

typedef struct row_ref {
  uint8_t stage;
  int32_t layer;
  uint32_t pos;
  size_t off, n;
} row_ref;

typedef struct capture {
  const uint32_t *judged; /* ascending */
  size_t n_judged;
  uint32_t tokens, logits_from;
  float *data;
  size_t len, cap;
  row_ref *rows;
  size_t n_rows, rows_cap;
  int32_t *table; /* [stage][layer + 1][pos] -> row, -1: none */
  uint32_t layers;
  bool oom, shape_error;
} capture;

static bool judged_at(const capture *c, uint32_t pos) {
  size_t lo = 0, hi = c->n_judged;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->judged[mid] == pos) return true;
    if (c->judged[mid] < pos)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

static size_t slot(const capture *c, int stage, int32_t layer, uint32_t pos) {
  return ((size_t)stage * (c->layers + 1) + (size_t)(layer + 1)) * c->tokens +
         pos;
}

static bool cap_wants(void *p, tl_qwen3_stage stage, int32_t layer,
                      uint32_t pos) {
  capture *c = p;
  (void)layer;
  if (stage == TL_QWEN3_STAGE_K_ROPE || stage == TL_QWEN3_STAGE_V) return true;
  if (stage == TL_QWEN3_STAGE_SCORES)
    return false; /* scores_masked holds them */
  if (stage == TL_QWEN3_STAGE_LOGITS && pos < c->logits_from) return false;
  return judged_at(c, pos);
}

static bool cap_add(capture *c, int stage, int32_t layer, uint32_t pos,
                    size_t n) {
  if (c->n_rows == c->rows_cap) {
    size_t nc = c->rows_cap ? 2 * c->rows_cap : 1024;
    row_ref *r = realloc(c->rows, nc * sizeof *r);
    if (r == NULL) return false;
    c->rows = r;
    c->rows_cap = nc;
  }
  if (c->len + n > c->cap) {
    size_t nc = c->cap ? c->cap : 1u << 20;
    while (nc < c->len + n) nc *= 2;
    float *d = realloc(c->data, nc * sizeof *d);
    if (d == NULL) return false;
    c->data = d;
    c->cap = nc;
  }
  c->rows[c->n_rows] = (row_ref){(uint8_t)stage, layer, pos, c->len, n};
  c->table[slot(c, stage, layer, pos)] = (int32_t)c->n_rows;
  c->n_rows++;
  c->len += n;
  return true;
}

static void cap_row(void *p, tl_qwen3_stage stage, int32_t layer, uint32_t pos,
                    const float *data, size_t n) {
  capture *c = p;
  if (c->oom || pos >= c->tokens || layer + 1 > (int32_t)c->layers) {
    c->shape_error = c->shape_error || !c->oom;
    return;
  }
  if (!cap_add(c, stage, layer, pos, n)) {
    c->oom = true;
    return;
  }
  memcpy(c->data + c->len - n, data, n * sizeof *data);
}

static tl_status cap_init(capture *c, uint32_t layers, uint32_t tokens) {
  size_t cells = (size_t)TL_QWEN3_STAGE_COUNT * (layers + 1) * tokens;
  memset(c, 0, sizeof *c);
  c->layers = layers;
  c->tokens = tokens;
  c->table = malloc(cells * sizeof *c->table);
  if (c->table == NULL) return TL_ERR_OUT_OF_MEMORY;
  memset(c->table, 0xff, cells * sizeof *c->table);
  return TL_OK;
}

static void cap_free(capture *c) {
  free(c->data);
  free(c->rows);
  free(c->table);
  memset(c, 0, sizeof *c);
}

static const float *cap_get(const capture *c, int stage, int32_t layer,
                            uint32_t pos, size_t n) {
  int32_t r;
  if (pos >= c->tokens || layer + 1 > (int32_t)c->layers) return NULL;
  r = c->table[slot(c, stage, layer, pos)];
  if (r < 0 || c->rows[r].n != n) return NULL;
  return c->data + c->rows[r].off;
}

/* The positions judged in full: the first four, every power of two and
 * its neighbours, eight more spread evenly, and the last. Generic on
 * purpose: a defect from some position on shows at every later one. */
static size_t judged_positions(uint32_t n, uint32_t *out) {
  size_t k = 0;
  bool *mark = calloc(n, 1);
  if (mark == NULL) return 0;
  for (uint32_t p = 0; p < 4 && p < n; p++) mark[p] = true;
  for (uint64_t q = 4; q <= n; q *= 2)
    for (uint64_t p = q - 1; p <= q + 1; p++)
      if (p < n) mark[p] = true;
  for (uint32_t i = 1; i <= 8; i++) mark[(uint64_t)(n - 1) * i / 9] = true;
  mark[n - 1] = true;
  for (uint32_t p = 0; p < n; p++)
    if (mark[p]) out[k++] = p;
  free(mark);
  return k;
}

/* ------------------------------------------------------------------------ */
/* Judging: each stage's reference from the lane's own inputs. */

typedef struct judge {
  const tl_qwen3 *m;
  bool fast;
  const capture *cap;
  const uint32_t *ids;
  float *row;      /* one weight row (the widest) */
  uint8_t *blocks; /* one q8/q4 row's stored blocks, from packed rows */
  double *acc;     /* scratch */
  size_t elements; /* compared */
  double worst;
  char worst_at[96];
  bool failed;
  char first[512];
} judge;

static void where(char *buf, size_t cap, int stage, int32_t layer,
                  uint32_t pos) {
  if (layer < 0)
    snprintf(buf, cap, "%s, position %u",
             tl_qwen3_stage_name((tl_qwen3_stage)stage), pos);
  else
    snprintf(buf, cap, "%s, layer %d, position %u",
             tl_qwen3_stage_name((tl_qwen3_stage)stage), (int)layer, pos);
}

/* One element: the lane's value c against the reference r within bound. */
static void compare(judge *j, int stage, int32_t layer, uint32_t pos,
                    size_t index, float c, double r, double bound) {
  double diff = fabs((double)c - r), ratio;
  j->elements++;
  if (!isfinite(c))
    ratio = INFINITY;
  else if (diff == 0.0)
    ratio = 0.0;
  else
    ratio = bound > 0.0 ? diff / bound : INFINITY;
  if (ratio > j->worst || (ratio != ratio)) {
    j->worst = ratio;
    where(j->worst_at, sizeof j->worst_at, stage, layer, pos);
  }
  if (!(ratio <= 1.0) && !j->failed) {
    char at[96];
    j->failed = true;
    where(at, sizeof at, stage, layer, pos);
    snprintf(
        j->first, sizeof j->first,
        "%s, index %zu: lane %.9g, replay %.9g (difference %.3g, bound %.3g)",
        at, index, (double)c, r, diff, bound);
  }
}

static void missing(judge *j, int stage, int32_t layer, uint32_t pos) {
  char at[96];
  where(at, sizeof at, stage, layer, pos);
  if (!j->failed) snprintf(j->first, sizeof j->first, "%s: not captured", at);
  j->failed = true;
}

/* RMSNorm (docs/forward.md): the mean of squares and its reciprocal
 * square root in f32 in the specified order, as the lane computes them;
 * the two products per element within 4u. */
static void check_norm(judge *j, int stage, int32_t layer, uint32_t pos,
                       const float *x, const tl_qwen3_weight *w, size_t n,
                       const float *y) {
  float ss = 0.0f, r;
  if (tl_qwen3_weight_row(w, 0, j->row) != TL_OK) {
    missing(j, stage, layer, pos);
    return;
  }
  for (size_t i = 0; i < n; i++) ss += x[i] * x[i];
  r = 1.0f / sqrtf(ss / (float)n + j->m->cfg.rms_eps);
  for (size_t i = 0; i < n; i++) {
    double ref = (double)j->row[i] * ((double)x[i] * (double)r);
    compare(j, stage, layer, pos, i, y[i], ref, 4.0 * U * fabs(ref) + TINY);
  }
}

static bool quantized(const judge *j, const tl_qwen3_weight *w) {
  return j->fast && (w->type == TL_QTYPE_Q8 || w->type == TL_QTYPE_Q4);
}

/* y = W x for the rows [0, rows). On the fast lane with q8/q4 weights x
 * is first quantized as F-3 says (blocks of 32, scale max|x|/127 in f32,
 * codes rounded to nearest even), so the integer block sums are the
 * lane's exactly and only the scaled block terms' f32 rounding remains:
 * gamma_(blocks + 6) of their absolute sum (F-4's chain: two products, a
 * lane's additions and the tree's four, counted as W-3 of
 * docs/webgpu-profile.md counts them). Otherwise gamma_(n + 2) of the
 * products' absolute sum. */
static void check_matmul(judge *j, int stage, int32_t layer, uint32_t pos,
                         const tl_qwen3_weight *w, const float *x,
                         const float *y) {
  size_t n = w->n, nb = (n + 31) / 32;
  bool q = quantized(j, w);
  double *xq = j->acc, *dx = j->acc + nb * 32;
  if (q) {
    for (size_t b = 0; b < nb; b++) {
      size_t lo = b * 32, hi = lo + 32 < n ? lo + 32 : n;
      float a = 0.0f, d;
      for (size_t i = lo; i < hi; i++)
        if (fabsf(x[i]) > a) a = fabsf(x[i]);
      d = a / 127.0f;
      dx[b] = d;
      for (size_t i = lo; i < hi; i++) {
        float rr = d == 0.0f ? 0.0f : x[i] / d;
        rr = rr > 127.0f ? 127.0f : rr < -127.0f ? -127.0f : rr;
        xq[i] = d == 0.0f ? 0.0 : (double)nearbyintf(rr);
      }
    }
  }
  size_t row_bytes = 0;
  if (q && ((w->data == NULL && w->packed == NULL) ||
            tl_quant_row_bytes(w->type, n, &row_bytes) != TL_OK)) {
    missing(j, stage, layer, pos);
    return;
  }
  for (size_t r = 0; r < w->rows; r++) {
    double ref = 0.0, mag = 0.0;
    if (q) {
      /* the stored blocks: each f32 scale and the integer codes, so
       * that s_b is F-4's exact integer sum */
      const uint8_t *blk = j->blocks;
      size_t bb = w->type == TL_QTYPE_Q8 ? 36 : 20;
      if (w->data != NULL) blk = w->data + r * row_bytes;
      else /* packed (docs/slm.md SLM-11a): as stored */
        tl_kern_unpack(w->type, w->packed + r * row_bytes, j->blocks, row_bytes, n, 0, 1);
      for (size_t b = 0; b < nb; b++, blk += bb) {
        size_t lo = b * 32, hi = lo + 32 < n ? lo + 32 : n;
        double dw = tl_bits_to_f32(tl_load_le32(blk)), t;
        int64_t s = 0;
        for (size_t i = lo; i < hi; i++) {
          size_t e = i - lo;
          int code = w->type == TL_QTYPE_Q8
                         ? (int8_t)blk[4 + e]
                         : ((blk[4 + e / 2] >> (4 * (e % 2))) & 0xF) - 8;
          s += (int64_t)code * (int64_t)xq[i];
        }
        t = (double)s * dw * dx[b];
        ref += t;
        mag += fabs(t);
      }
      compare(j, stage, layer, pos, r, y[r], ref, gamma_n(nb + 6) * mag + TINY);
    } else {
      if (tl_qwen3_weight_row(w, r, j->row) != TL_OK) {
        missing(j, stage, layer, pos);
        return;
      }
      for (size_t i = 0; i < n; i++) {
        double t = (double)j->row[i] * (double)x[i];
        ref += t;
        mag += fabs(t);
      }
      compare(j, stage, layer, pos, r, y[r], ref, gamma_n(n + 2) * mag + TINY);
    }
  }
}

/* RoPE, rotate_half pairs (i, i + d/2) at frequency i: the lane's angle
 * is f32 pos x inv_freq (its inverse frequency within 3u, the product u),
 * then cosine and sine rounded to f32 and two products and a sum. */
static void check_rope(judge *j, int stage, int32_t layer, uint32_t pos,
                       const float *x, size_t heads, const float *y) {
  size_t d = j->m->cfg.head_dim, half = d / 2;
  for (size_t h = 0; h < heads; h++)
    for (size_t i = 0; i < half; i++) {
      double angle =
          (double)pos * pow(j->m->cfg.rope_theta, -(double)(2 * i) / (double)d);
      double c = cos(angle), s = sin(angle), a = x[h * d + i],
             b = x[h * d + half + i];
      double bound = (fabs(a) + fabs(b)) * U * (4.0 * angle + 4.0) + TINY;
      compare(j, stage, layer, pos, h * d + i, y[h * d + i], a * c - b * s,
              bound);
      compare(j, stage, layer, pos, h * d + half + i, y[h * d + half + i],
              b * c + a * s, bound);
    }
}

/* A cached row as attention reads it: binary16 on the fast lane (F-11). */
static double cached(const judge *j, float v) {
  return j->fast ? (double)tl_f16_to_f32(tl_f32_to_f16(v)) : (double)v;
}

/* One layer's attention at pos from its captured q_rope, k_rope and v. */
static void check_attention(judge *j, uint32_t l, uint32_t pos) {
  const tl_qwen3_config *cfg = &j->m->cfg;
  const capture *c = j->cap;
  size_t d = cfg->head_dim, H = cfg->heads, G = cfg->heads / cfg->kv_heads,
         keys = c->tokens;
  size_t kd = (size_t)cfg->kv_heads * d;
  int32_t li = (int32_t)l;
  const float *q = cap_get(c, TL_QWEN3_STAGE_Q_ROPE, li, pos, H * d);
  const float *sm = cap_get(c, TL_QWEN3_STAGE_SCORES_MASKED, li, pos, H * keys);
  const float *pr = cap_get(c, TL_QWEN3_STAGE_PROBS, li, pos, H * keys);
  const float *out = cap_get(c, TL_QWEN3_STAGE_ATTN_OUT, li, pos, H * d);
  double scale = 1.0 / sqrt((double)d);
  if (q == NULL || sm == NULL || pr == NULL || out == NULL) {
    missing(j, TL_QWEN3_STAGE_SCORES_MASKED, li, pos);
    return;
  }
  for (size_t h = 0; h < H; h++) {
    size_t g = h / G;
    const float *qh = q + h * d, *sh = sm + h * keys, *ph = pr + h * keys;
    double mx = -INFINITY, sum = 0.0, spread = 0.0;
    for (size_t k = 0; k < keys; k++) {
      const float *kr = cap_get(c, TL_QWEN3_STAGE_K_ROPE, li, (uint32_t)k, kd);
      double ref = 0.0, mag = 0.0;
      if (k > pos) {
        if (!(isinf(sh[k]) && sh[k] < 0))
          compare(j, TL_QWEN3_STAGE_SCORES_MASKED, li, pos, h * keys + k, sh[k],
                  -INFINITY, 0.0);
        continue;
      }
      if (kr == NULL) {
        missing(j, TL_QWEN3_STAGE_K_ROPE, li, (uint32_t)k);
        return;
      }
      for (size_t i = 0; i < d; i++) {
        double t = (double)qh[i] * cached(j, kr[g * d + i]);
        ref += t;
        mag += fabs(t);
      }
      compare(j, TL_QWEN3_STAGE_SCORES_MASKED, li, pos, h * keys + k, sh[k],
              ref * scale, (gamma_n(d) + 2.0 * U) * mag * scale + TINY);
      if (sh[k] > mx) mx = sh[k];
    }
    /* The softmax of the lane's own scores: each exponent's argument is
     * rounded (u|s - max|), the exponential rounded to f32 (u), the sum of
     * p + 1 terms (gamma), the normalisation (2u); the sum's error moves
     * every probability by the weighted mean of the terms' errors. */
    for (size_t k = 0; k <= pos; k++) sum += exp((double)sh[k] - mx);
    for (size_t k = 0; k <= pos; k++) {
      double pk = exp((double)sh[k] - mx) / sum;
      spread += pk * U * (fabs((double)sh[k] - mx) + 2.0);
    }
    for (size_t k = 0; k < keys; k++) {
      double pk, eps;
      if (k > pos) {
        compare(j, TL_QWEN3_STAGE_PROBS, li, pos, h * keys + k, ph[k], 0.0,
                0.0);
        continue;
      }
      pk = exp((double)sh[k] - mx) / sum;
      eps = U * (fabs((double)sh[k] - mx) + 2.0) + spread + gamma_n(pos + 1) +
            3.0 * U;
      compare(j, TL_QWEN3_STAGE_PROBS, li, pos, h * keys + k, ph[k], pk,
              pk * eps + TINY);
    }
    /* The probability-weighted V: one sum of p + 1 products per element. */
    for (size_t i = 0; i < d; i++) {
      double ref = 0.0, mag = 0.0;
      for (size_t k = 0; k <= pos; k++) {
        const float *vr = cap_get(c, TL_QWEN3_STAGE_V, li, (uint32_t)k, kd);
        double t;
        if (vr == NULL) {
          missing(j, TL_QWEN3_STAGE_V, li, (uint32_t)k);
          return;
        }
        t = (double)ph[k] * cached(j, vr[g * d + i]);
        ref += t;
        mag += fabs(t);
      }
      compare(j, TL_QWEN3_STAGE_ATTN_OUT, li, pos, h * d + i, out[h * d + i],
              ref, gamma_n(pos + 2) * mag + TINY);
    }
  }
}

/* a + b into y: one rounding. */
static void check_add(judge *j, int stage, int32_t layer, uint32_t pos,
                      const float *a, const float *b, size_t n,
                      const float *y) {
  for (size_t i = 0; i < n; i++) {
    double ref = (double)a[i] + (double)b[i];
    compare(j, stage, layer, pos, i, y[i], ref, U * fabs(ref) + TINY);
  }
}

/* silu(g) x up = g / (1 + e^-g) x up: the exponential within one f32
 * rounding of e^-g (whose relative error reaches silu at most whole),
 * then the sum, the division and the product. */
static void check_act(judge *j, uint32_t l, uint32_t pos, const float *gate,
                      const float *up, size_t n, const float *y) {
  for (size_t i = 0; i < n; i++) {
    double g = gate[i], ref = g / (1.0 + exp(-g)) * (double)up[i];
    compare(j, TL_QWEN3_STAGE_ACT, (int32_t)l, pos, i, y[i], ref,
            6.0 * U * fabs(ref) + TINY);
  }
}

/* Every stage of one layer at pos. */
static void check_layer(judge *j, uint32_t l, uint32_t pos) {
  const tl_qwen3_config *cfg = &j->m->cfg;
  const tl_qwen3_layer *L = &j->m->layers[l];
  const capture *c = j->cap;
  size_t Hd = cfg->hidden, d = cfg->head_dim, qd = (size_t)cfg->heads * d;
  size_t kd = (size_t)cfg->kv_heads * d, I = cfg->inter;
  int32_t li = (int32_t)l;
  const float *in = l == 0
                        ? cap_get(c, TL_QWEN3_STAGE_EMBEDDING, -1, pos, Hd)
                        : cap_get(c, TL_QWEN3_STAGE_LAYER_OUT, li - 1, pos, Hd);
#define GET(stage, n) cap_get(c, TL_QWEN3_STAGE_##stage, li, pos, n)
  const float *an = GET(ATTN_NORM, Hd), *q = GET(Q, qd), *k = GET(K, kd),
              *v = GET(V, kd);
  const float *qn = GET(Q_NORM, qd), *kn = GET(K_NORM, kd),
              *qr = GET(Q_ROPE, qd);
  const float *kr = GET(K_ROPE, kd), *ao = GET(ATTN_OUT, qd),
              *op = GET(O_PROJ, Hd);
  const float *res = GET(ATTN_RESIDUAL, Hd), *mn = GET(MLP_NORM, Hd),
              *ga = GET(GATE, I);
  const float *up = GET(UP, I), *act = GET(ACT, I), *dn = GET(DOWN, Hd);
  const float *out = GET(LAYER_OUT, Hd);
#undef GET
  if (!in || !an || !q || !k || !v || !qn || !kn || !qr || !kr || !ao || !op ||
      !res || !mn || !ga || !up || !act || !dn || !out) {
    missing(j, TL_QWEN3_STAGE_ATTN_NORM, li, pos);
    return;
  }
  check_norm(j, TL_QWEN3_STAGE_ATTN_NORM, li, pos, in, &L->attn_norm, Hd, an);
  check_matmul(j, TL_QWEN3_STAGE_Q, li, pos, &L->q, an, q);
  check_matmul(j, TL_QWEN3_STAGE_K, li, pos, &L->k, an, k);
  check_matmul(j, TL_QWEN3_STAGE_V, li, pos, &L->v, an, v);
  for (size_t h = 0; h < cfg->heads; h++)
    check_norm(j, TL_QWEN3_STAGE_Q_NORM, li, pos, q + h * d, &L->q_norm, d,
               qn + h * d);
  for (size_t h = 0; h < cfg->kv_heads; h++)
    check_norm(j, TL_QWEN3_STAGE_K_NORM, li, pos, k + h * d, &L->k_norm, d,
               kn + h * d);
  check_rope(j, TL_QWEN3_STAGE_Q_ROPE, li, pos, qn, cfg->heads, qr);
  check_rope(j, TL_QWEN3_STAGE_K_ROPE, li, pos, kn, cfg->kv_heads, kr);
  check_attention(j, l, pos);
  check_matmul(j, TL_QWEN3_STAGE_O_PROJ, li, pos, &L->o, ao, op);
  check_add(j, TL_QWEN3_STAGE_ATTN_RESIDUAL, li, pos, in, op, Hd, res);
  check_norm(j, TL_QWEN3_STAGE_MLP_NORM, li, pos, res, &L->mlp_norm, Hd, mn);
  check_matmul(j, TL_QWEN3_STAGE_GATE, li, pos, &L->gate, mn, ga);
  check_matmul(j, TL_QWEN3_STAGE_UP, li, pos, &L->up, mn, up);
  check_act(j, l, pos, ga, up, I, act);
  check_matmul(j, TL_QWEN3_STAGE_DOWN, li, pos, &L->down, act, dn);
  check_add(j, TL_QWEN3_STAGE_LAYER_OUT, li, pos, res, dn, Hd, out);
}

/* The embedding row of the position's token, bit for bit (decoding is
 * exact); every layer; the final norm; the logits where captured. */
static void check_position(judge *j, uint32_t pos) {
  const tl_qwen3_config *cfg = &j->m->cfg;
  const capture *c = j->cap;
  size_t Hd = cfg->hidden;
  const float *e = cap_get(c, TL_QWEN3_STAGE_EMBEDDING, -1, pos, Hd);
  const float *last =
      cap_get(c, TL_QWEN3_STAGE_LAYER_OUT, (int32_t)cfg->layers - 1, pos, Hd);
  const float *fn = cap_get(c, TL_QWEN3_STAGE_FINAL_NORM, -1, pos, Hd);
  const float *lg = cap_get(c, TL_QWEN3_STAGE_LOGITS, -1, pos, cfg->vocab);
  if (e == NULL || last == NULL || fn == NULL) {
    missing(j, TL_QWEN3_STAGE_EMBEDDING, -1, pos);
    return;
  }
  if (tl_qwen3_weight_row(&j->m->embed, j->ids[pos], j->row) != TL_OK) {
    missing(j, TL_QWEN3_STAGE_EMBEDDING, -1, pos);
    return;
  }
  for (size_t i = 0; i < Hd; i++)
    compare(j, TL_QWEN3_STAGE_EMBEDDING, -1, pos, i, e[i], j->row[i], 0.0);
  for (uint32_t l = 0; l < cfg->layers; l++) check_layer(j, l, pos);
  check_norm(j, TL_QWEN3_STAGE_FINAL_NORM, -1, pos, last, &j->m->final_norm, Hd,
             fn);
  if (pos >= c->logits_from) {
    if (lg == NULL) {
      missing(j, TL_QWEN3_STAGE_LOGITS, -1, pos);
      return;
    }
    check_matmul(j, TL_QWEN3_STAGE_LOGITS, -1, pos, &j->m->lm_head, fn, lg);
  }
}

/* ------------------------------------------------------------------------ */
/* The claim. */

/* A case: {"label": TEXT, "ids": [N ids]} (plan init: text of the
 * project's, encoded by the artifact's tokenizer). */
static tl_status case_ids(tl_claim_ctx *c, const json_t *cs, uint32_t vocab,
                          uint32_t **ids, uint32_t *n) {
  const json_t *a = json_object_get(cs, "ids"), *v;
  size_t i;
  if (!json_is_array(a) || json_array_size(a) < 2 ||
      json_array_size(a) > 65536) {
    snprintf(c->err, c->err_cap,
             "a replay case needs \"ids\": 2 to 65536 token ids");
    return TL_ERR_INVALID_ARGUMENT;
  }
  *n = (uint32_t)json_array_size(a);
  *ids = malloc(*n * sizeof **ids);
  if (*ids == NULL) return TL_ERR_OUT_OF_MEMORY;
  json_array_foreach(a, i, v) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) >= vocab) {
      snprintf(c->err, c->err_cap,
               "replay case: ids[%zu] is not a token id below %u", i, vocab);
      free(*ids);
      return TL_ERR_INVALID_ARGUMENT;
    }
    (*ids)[i] = (uint32_t)json_integer_value(v);
  }
  return TL_OK;
}

/* The lane runs the ids in one forward call with the capture. */
static tl_status observe(tl_claim_ctx *c, const uint32_t *ids, uint32_t n,
                         capture *cap, tl_qwen3_fault *fault) {
  tl_lane_options o = tl_lane_defaults();
  tl_session s;
  tl_qwen3_capture sink = {cap_wants, cap_row, cap};
  tl_status st;
  o.fast = strcmp(c->lane, "fast") == 0;
  if (c->threads) o.threads = c->threads;
  st = tl_session_open_shared(&s, &c->session->model, c->slm_path, c->err,
                              c->err_cap);
  if (st != TL_OK) return st;
  st = tl_session_lane(&s, &o, c->err, c->err_cap);
  if (st == TL_OK) st = tl_session_plan(&s, n, n, c->err, c->err_cap);
  if (st == TL_OK) st = tl_session_allocate(&s, 0, c->err, c->err_cap);
  if (st == TL_OK) {
    st = tl_qwen3_forward(&s.qwen, &s.cache, ids, n, s.logits, &sink, &s.arena,
                          fault);
    if (st == TL_OK && (cap->oom || cap->shape_error)) {
      snprintf(c->err, c->err_cap, "the replay capture: %s",
               cap->oom ? "out of memory" : "rows of an unexpected shape");
      st = cap->oom ? TL_ERR_OUT_OF_MEMORY : TL_ERR_INVALID_MODEL;
    } else if (st != TL_OK && st != TL_ERR_NUMERICAL_FAILURE) {
      snprintf(c->err, c->err_cap, "the replay's forward pass: %s",
               tl_status_name(st));
    }
  }
  tl_session_close(&s);
  return st;
}

static tl_status put_capture(tl_claim_ctx *c, const capture *cap,
                             uint8_t id[32]) {
  uint8_t *bytes = malloc(cap->len * 4 + 1);
  tl_status st;
  if (bytes == NULL) return TL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < cap->len; i++)
    tl_store_le32(bytes + 4 * i, tl_f32_to_bits(cap->data[i]));
  st = tl_store_put(c->store, "replay_capture", bytes, cap->len * 4, id, c->err,
                    c->err_cap);
  free(bytes);
  return st;
}

static json_t *rows_json(const capture *cap) {
  json_t *rows = json_array();
  for (size_t i = 0; rows != NULL && i < cap->n_rows; i++) {
    const row_ref *r = &cap->rows[i];
    json_array_append_new(
        rows, json_pack("[s,i,I,I]", tl_qwen3_stage_name(r->stage),
                        (int)r->layer, (json_int_t)r->pos, (json_int_t)r->n));
  }
  return rows;
}

/* Rebuilds a capture from its stored bytes and row index. */
static tl_status load_capture(tl_claim_ctx *c, const json_t *entry,
                              uint32_t layers, uint32_t tokens, capture *cap,
                              tl_claim_result *out) {
  uint8_t id[32], *bytes = NULL;
  size_t len = 0, i;
  const json_t *rows = json_object_get(entry, "rows"), *r;
  tl_status st;
  if (!tl_hex32_parse(json_string_value(json_object_get(entry, "capture")),
                      id)) {
    snprintf(c->err, c->err_cap, "the replay observation names no capture");
    return TL_ERR_INVALID_ARGUMENT;
  }
  if ((st = tl_store_get(c->store, id, &bytes, &len, c->err, c->err_cap)) !=
      TL_OK)
    return st;
  if (len % 4 != 0) {
    free(bytes);
    snprintf(c->err, c->err_cap,
             "the replay capture is not a whole number of f32 values");
    return TL_ERR_INVALID_ARGUMENT;
  }
  if ((st = tl_claim_result_support(out, id)) != TL_OK ||
      (st = cap_init(cap, layers, tokens))) {
    free(bytes);
    return st;
  }
  cap->data = malloc(len + 4);
  if (cap->data == NULL) st = TL_ERR_OUT_OF_MEMORY;
  for (i = 0; st == TL_OK && i + 4 <= len; i += 4)
    cap->data[i / 4] = tl_bits_to_f32(tl_load_le32(bytes + i));
  cap->cap = cap->len = len / 4;
  free(bytes);
  cap->len = 0;
  json_array_foreach(rows, i, r) {
    tl_qwen3_stage stage;
    const char *name = json_string_value(json_array_get(r, 0));
    json_int_t layer = json_integer_value(json_array_get(r, 1));
    json_int_t pos = json_integer_value(json_array_get(r, 2));
    json_int_t n = json_integer_value(json_array_get(r, 3));
    if (st != TL_OK) break;
    stage =
        name ? tl_qwen3_stage_find(name, strlen(name)) : TL_QWEN3_STAGE_COUNT;
    if (stage == TL_QWEN3_STAGE_COUNT || layer < -1 ||
        layer >= (json_int_t)layers || pos < 0 || pos >= (json_int_t)tokens ||
        n <= 0 || (size_t)n > cap->cap - cap->len) {
      snprintf(c->err, c->err_cap,
               "the replay observation's row %zu does not fit its capture", i);
      st = TL_ERR_INVALID_ARGUMENT;
      break;
    }
    {
      size_t len0 = cap->len;
      if (!cap_add(cap, stage, (int32_t)layer, (uint32_t)pos, (size_t)n))
        st = TL_ERR_OUT_OF_MEMORY;
      cap->len = len0 + (size_t)n;
    }
  }
  if (st == TL_OK && cap->len != cap->cap) {
    snprintf(c->err, c->err_cap,
             "the replay capture holds bytes its rows do not name");
    st = TL_ERR_INVALID_ARGUMENT;
  }
  if (st != TL_OK) cap_free(cap);
  return st;
}

static void set_positions(capture *cap, uint32_t *judged, uint32_t tokens) {
  cap->judged = judged;
  cap->n_judged = judged_positions(tokens, judged);
  /* the lm_head (vocab rows) at the last two judged positions only */
  cap->logits_from = cap->n_judged >= 2 ? judged[cap->n_judged - 2] : 0;
}

/* The weights as the artifact stores them, decoded by Q-12 (a session on
 * the strict lane, which computes on the stored bytes): the reference
 * never reads the fast lane's packed copy. promote shares its session's
 * model; a reader (no session) opens the plan's artifact from slm_path and
 * refuses any other file: the verdict rests on these weights. */
static tl_status weights_session(tl_claim_ctx *c, tl_session *ws) {
  tl_lane_options o = tl_lane_defaults();
  tl_status st;
  if (c->session != NULL) {
    st = tl_session_open_shared(ws, &c->session->model, c->slm_path, c->err, c->err_cap);
  } else if (c->slm_path == NULL || c->artifact_id == NULL) {
    snprintf(c->err, c->err_cap,
             "the replay judge reads the artifact's weights, and the plan names no absolute "
             "artifact path to read them from");
    return TL_ERR_NOT_FOUND;
  } else if ((st = tl_session_open(ws, c->slm_path, c->err, c->err_cap)) == TL_OK) {
    const uint8_t *id;
    /* hashed from the bytes the session maps: no window to swap the file */
    if ((st = tl_session_artifact_id(ws, &id)) == TL_OK && memcmp(id, c->artifact_id, 32) != 0) {
      char want[65];
      tl_hex_encode(c->artifact_id, 32, want);
      snprintf(c->err, c->err_cap,
               "the replay judge reads the artifact's weights: %s is not the plan's artifact %s",
               c->slm_path, want);
      st = TL_ERR_HASH_MISMATCH;
    }
    if (st != TL_OK) tl_session_close(ws);
  } else {
    char why[512];
    snprintf(why, sizeof why, "%s", c->err);
    snprintf(c->err, c->err_cap, "the replay judge reads the artifact's weights: %s", why);
  }
  o.fast = false;
  if (st == TL_OK &&
      (st = tl_session_lane(ws, &o, c->err, c->err_cap)) != TL_OK)
    tl_session_close(ws);
  return st;
}

/* JUDGE: the stored observation (the replay's raw output) against the
 * artifact's weights. */
tl_status tl_judge_replay(tl_claim_ctx *c, const uint8_t observation[32],
                          tl_claim_result *out) {
  const json_t *cases;
  tl_session ws;
  const tl_qwen3 *m = &ws.qwen;
  uint8_t *bytes = NULL;
  size_t len = 0, widest;
  json_t *doc = NULL, *entries = NULL;
  size_t elements = 0, positions = 0;
  double worst = 0.0;
  char worst_at[96] = "";
  const char *profile = json_string_value(json_object_get(c->claim, "tolerance"));
  tl_status st;
  if (profile != NULL && strcmp(profile, TL_REPLAY_PROFILE) != 0) {
    snprintf(c->err, c->err_cap, "a replay claim is judged by %s only, not %.100s",
             TL_REPLAY_PROFILE, profile);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if ((st = weights_session(c, &ws)) != TL_OK) return st;
  widest = m->cfg.hidden;
  st = tl_claim_result_begin(c, out, &cases);
  if (st == TL_OK)
    st = tl_store_get(c->store, observation, &bytes, &len, c->err, c->err_cap);
  if (st == TL_OK) {
    doc = json_loadb((const char *)bytes, len, JSON_REJECT_DUPLICATES, NULL);
    entries = json_object_get(doc, "cases");
    if (json_array_size(entries) != out->n_cases) {
      snprintf(c->err, c->err_cap,
               "the stored replay observation holds other cases");
      st = TL_ERR_INVALID_ARGUMENT;
    }
  }
  free(bytes);
  memcpy(out->observation, observation, 32);
  out->has_observation = true;
  /* the widest weight row: hidden (q, k, v, gate, up, lm_head), inter
   * (down) or heads x head_dim (o) */
  if (widest < m->cfg.inter) widest = m->cfg.inter;
  if (widest < (size_t)m->cfg.heads * m->cfg.head_dim)
    widest = (size_t)m->cfg.heads * m->cfg.head_dim;
  for (size_t i = 0; st == TL_OK && i < out->n_cases; i++) {
    const json_t *e = json_array_get(entries, i),
                 *cs = json_object_get(json_array_get(cases, i), "case");
    const char *label = json_string_value(json_object_get(cs, "label"));
    uint32_t *ids = NULL, n = 0, *judged = NULL;
    capture cap;
    judge j = {0};
    uint8_t cid[32];
    out->cases[i].invariant = "stages_within_replay_bound";
    if (!tl_hex32_parse(json_string_value(json_object_get(e, "case")), cid) ||
        memcmp(cid, out->cases[i].id, 32) != 0) {
      snprintf(c->err, c->err_cap,
               "the stored replay observation's case %zu is not the plan's", i);
      st = TL_ERR_INVALID_ARGUMENT;
      break;
    }
    {
      char *canon = tl_plan_canonical(e);
      if (canon != NULL) tl_sha256(canon, strlen(canon), out->cases[i].output);
      free(canon);
    }
    if (json_object_get(e, "fault") != NULL) {
      out->cases[i].pass = false;
      out->cases[i].invariant = "finite";
      out->pass = false;
      if (out->stop_rule == NULL) out->stop_rule = TL_RULE_NON_FINITE;
      if (out->first_divergence[0] == '\0')
        snprintf(out->first_divergence, sizeof out->first_divergence,
                 "%s: a non-finite value at %s", label ? label : "replay",
                 json_string_value(
                     json_object_get(json_object_get(e, "fault"), "stage")));
      continue;
    }
    if ((st = case_ids(c, cs, m->cfg.vocab, &ids, &n)) != TL_OK) break;
    judged = malloc(n * sizeof *judged);
    if (judged == NULL) st = TL_ERR_OUT_OF_MEMORY;
    if (st == TL_OK) st = load_capture(c, e, m->cfg.layers, n, &cap, out);
    if (st == TL_OK) {
      set_positions(&cap, judged, n);
      j.m = m;
      j.fast = strcmp(c->lane, "fast") == 0;
      j.cap = &cap;
      j.ids = ids;
      j.row = malloc(widest * sizeof *j.row);
      j.acc = malloc((widest + 32) * 2 * sizeof *j.acc);
      j.blocks = malloc((widest + 31) / 32 * TL_QUANT_Q8_BLOCK_BYTES);
      if (j.row == NULL || j.acc == NULL || j.blocks == NULL) st = TL_ERR_OUT_OF_MEMORY;
      for (size_t p = 0; st == TL_OK && p < cap.n_judged; p++)
        check_position(&j, judged[p]);
      elements += j.elements;
      positions += cap.n_judged;
      free(j.row);
      free(j.acc);
      free(j.blocks);
      cap_free(&cap);
      out->cases[i].pass = !j.failed;
      if (j.worst > worst) {
        worst = j.worst;
        snprintf(worst_at, sizeof worst_at, "%s", j.worst_at);
      }
      if (j.failed) {
        out->pass = false;
        if (out->stop_rule == NULL) out->stop_rule = TL_RULE_TOLERANCE;
        if (out->first_divergence[0] == '\0')
          snprintf(out->first_divergence, sizeof out->first_divergence,
                   "%s (%s): %s", label ? label : "replay", TL_REPLAY_PROFILE,
                   j.first);
      }
    }
    free(ids);
    free(judged);
  }
  json_decref(doc);
  tl_session_close(&ws);
  if (st == TL_OK) {
    size_t passed = 0;
    for (size_t i = 0; i < out->n_cases; i++) passed += out->cases[i].pass;
    snprintf(out->summary, sizeof out->summary,
             "%zu of %zu prompts: %zu values at %zu positions x %u layers "
             "within %s; worst "
             "bound ratio %.3g (%s)",
             passed, out->n_cases, elements, positions, m->cfg.layers,
             TL_REPLAY_PROFILE, worst, worst_at);
  } else {
    tl_claim_result_free(out);
  }
  return st;
}

tl_status tl_claim_replay(tl_claim_ctx *c, tl_claim_result *out) {
  const json_t *cases;
  const tl_qwen3 *m = &c->session->qwen;
  json_t *obs = json_array();
  tl_status st = tl_claim_result_begin(c, out, &cases);
  for (size_t i = 0; st == TL_OK && i < out->n_cases; i++) {
    const json_t *cs = json_object_get(json_array_get(cases, i), "case");
    uint32_t *ids = NULL, n = 0, *judged = NULL;
    capture cap;
    tl_qwen3_fault fault;
    char case_hex[65], cap_hex[65];
    uint8_t cap_id[32];
    tl_hex_encode(out->cases[i].id, 32, case_hex);
    if ((st = case_ids(c, cs, m->cfg.vocab, &ids, &n)) != TL_OK) break;
    judged = malloc(n * sizeof *judged);
    st = judged == NULL ? TL_ERR_OUT_OF_MEMORY
                        : cap_init(&cap, m->cfg.layers, n);
    if (st == TL_OK) {
      set_positions(&cap, judged, n);
      st = observe(c, ids, n, &cap, &fault);
      if (st == TL_ERR_NUMERICAL_FAILURE) {
        json_array_append_new(
            obs,
            json_pack("{s:s,s:{s:s,s:i,s:I,s:I}}", "case", case_hex, "fault",
                      "stage", tl_qwen3_stage_name(fault.stage), "layer",
                      (int)fault.layer, "position", (json_int_t)fault.pos,
                      "index", (json_int_t)fault.index));
        st = TL_OK;
      } else if (st == TL_OK && (st = put_capture(c, &cap, cap_id)) == TL_OK) {
        tl_hex_encode(cap_id, 32, cap_hex);
        json_array_append_new(
            obs,
            json_pack("{s:s,s:s,s:I,s:o}", "case", case_hex, "capture", cap_hex,
                      "tokens", (json_int_t)n, "rows", rows_json(&cap)));
      }
      cap_free(&cap);
    }
    free(ids);
    free(judged);
  }
  tl_claim_result_free(out);
  if (st == TL_OK) {
    json_t *doc = json_pack(
        "{s:s,s:s,s:s,s:s,s:O}", "claim",
        json_string_value(json_object_get(c->claim, "name")), "kind", "replay",
        "lane", c->lane, "profile", TL_REPLAY_PROFILE, "cases", obs);
    char *text = doc ? tl_plan_canonical(doc) : NULL;
    uint8_t id[32];
    st = text ? tl_store_put(c->store, "observation", (const uint8_t *)text,
                             strlen(text), id, c->err, c->err_cap)
              : TL_ERR_OUT_OF_MEMORY;
    free(text);
    json_decref(doc);
    if (st == TL_OK) {
      memcpy(out->observation, id, 32);
      out->has_observation = true;
    }
  }
  json_decref(obs);
  return st;
}

/* ------------------------------------------------------------------------ */
/* plan init's prompts. */

/* Plain prose of the project's, repeated with a counter until the
 * artifact's tokenizer gives enough ids: natural text, so attention is as
 * peaked as in use. */
static const char *const prose[] = {
    "The river bends twice before it reaches the old mill, where the water "
    "slows and turns "
    "green.",
    "In 1887 the town council voted to build a bridge, but the money ran out "
    "after the first "
    "pier.",
    "A good recipe lists its ingredients in the order they are used, with the "
    "quantities in "
    "grams.",
    "Seventeen plus twenty-five is forty-two; forty-two times three is one "
    "hundred and "
    "twenty-six.",
    "She packed a map, two apples, a torch and a notebook, then left before "
    "sunrise.",
    "The compiler reads each file once, builds a tree of its declarations and "
    "checks every "
    "type.",
    "When the wind comes from the north the harbour is calm, and the boats go "
    "out at dawn.",
    "Ask three questions before you answer one: who is asking, why now, and "
    "what would change."};

tl_status tl_plan_prose_ids(const tl_native_model *m, uint32_t tokens, uint32_t **out,
                            char *err, size_t err_cap) {
  size_t cap = 0, len = 0, n_ids = 0, scratch_bytes = 0, bound = 0, off = 0;
  char *text = NULL;
  uint32_t *ids = NULL;
  void *mem = NULL;
  tl_arena arena;
  tl_status st = TL_OK;
  *out = NULL;
  /* about four bytes a token: build eight times what is needed, then cut */
  for (uint32_t k = 0; len < (size_t)tokens * 8; k++) {
    const char *s = prose[k % (sizeof prose / sizeof prose[0])];
    size_t need = strlen(s) + 32;
    if (len + need >= cap) {
      char *t = realloc(text, cap = 2 * (len + need));
      if (t == NULL) {
        free(text);
        return TL_ERR_OUT_OF_MEMORY;
      }
      text = t;
    }
    len += (size_t)snprintf(text + len, cap - len, "%s(%u) %s", k ? " " : "", k + 1, s);
  }
  if ((st = tl_tok_encode_scratch_bound(len, &scratch_bytes)) == TL_OK) {
    bound = len + 1;
    ids = malloc(bound * sizeof *ids);
    mem = malloc(scratch_bytes);
    if (ids == NULL || mem == NULL) st = TL_ERR_OUT_OF_MEMORY;
  }
  if (st == TL_OK) st = tl_arena_init(&arena, mem, scratch_bytes);
  if (st == TL_OK)
    st = tl_tok_encode(m->tok, (const uint8_t *)text, len, &arena, ids, NULL, bound, &n_ids,
                       &off);
  if (st == TL_OK && n_ids < tokens) {
    snprintf(err, err_cap, "the project's prose gave %zu ids, fewer than %u", n_ids, tokens);
    st = TL_ERR_INTERNAL_INVARIANT;
  } else if (st != TL_OK) {
    snprintf(err, err_cap, "the project's prose does not encode: %s", tl_status_name(st));
  }
  free(text);
  free(mem);
  if (st == TL_OK) *out = ids;
  else free(ids);
  return st;
}

tl_status tl_plan_replay_case(const tl_native_model *m, uint32_t tokens, json_t **out, char *err,
                              size_t err_cap) {
  uint32_t *ids = NULL;
  json_t *arr;
  tl_status st = tl_plan_prose_ids(m, tokens, &ids, err, err_cap);
  *out = NULL;
  if (st != TL_OK) return st;
  arr = json_array();
  for (uint32_t i = 0; arr != NULL && i < tokens; i++)
    json_array_append_new(arr, json_integer(ids[i]));
  free(ids);
  *out = tl_plan_case(json_pack("{s:s,s:o}", "label", "prose", "ids", arr));
  return *out == NULL ? TL_ERR_OUT_OF_MEMORY : TL_OK;
}
