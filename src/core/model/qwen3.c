#include "model/qwen3.h"

#include <string.h>

#include "bytes.h"
#include "cbor/cbor.h"
#include "checked.h"
#include "json/json.h"
#include "math/detmath.h"
#include "model/lane_mutant.h"

static const char *const stage_names[] = {
#define TL_QWEN3_STAGE_NAME_(id, name) name,
    TL_QWEN3_STAGES(TL_QWEN3_STAGE_NAME_)
#undef TL_QWEN3_STAGE_NAME_
};

const char *tl_qwen3_stage_name(tl_qwen3_stage s) {
  return (unsigned)s < TL_QWEN3_STAGE_COUNT ? stage_names[s] : "?";
}

tl_qwen3_stage tl_qwen3_stage_find(const char *name, size_t len) {
  for (size_t i = 0; i < TL_QWEN3_STAGE_COUNT; i++)
    if (strlen(stage_names[i]) == len && memcmp(stage_names[i], name, len) == 0)
      return (tl_qwen3_stage)i;
  return TL_QWEN3_STAGE_COUNT;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                  */

/* The widest row the lane accepts (hidden, intermediate, heads x head_dim,
 * vocabulary): 2^24 elements. */
#define MAX_WIDTH (1u << 24)

/* A float of the effective config, stored as Python repr text. */
static tl_status parse_float_text(const char *s, size_t len, double *out) {
  uint8_t mem[1024];
  tl_arena a;
  tl_json_limits lim = tl_json_limits_default();
  tl_json_value *v;
  tl_json_error e;
  tl_arena_init(&a, mem, sizeof mem);
  if (tl_json_parse((const uint8_t *)s, len, &lim, &a, &v, &e) != TL_OK)
    return TL_ERR_INVALID_MODEL;
  if (v->type == TL_JSON_FLOAT) *out = v->u.f;
  else if (v->type == TL_JSON_INT) *out = (double)v->u.i;
  else return TL_ERR_INVALID_MODEL;
  return TL_OK;
}

typedef struct raw_config {
  uint64_t u[8];
  double eps, theta;
  bool tie, act_ok, bias, sliding, scaling_null;
  uint32_t seen;
} raw_config;

static const char *const uint_keys[8] = {
    "vocab_size",          "hidden_size",         "intermediate_size",
    "num_hidden_layers",   "num_attention_heads", "num_key_value_heads",
    "head_dim",            "max_position_embeddings"};

static tl_status read_config(const tl_slm *slm, raw_config *c) {
  const tl_slm_section *meta;
  tl_cbor_reader r;
  size_t n;
  memset(c, 0, sizeof *c);
  if (tl_slm_find(slm, TL_SLM_METADATA, &meta) != TL_OK ||
      tl_cbor_reader_init(&r, meta->data, meta->len, NULL) != TL_OK ||
      tl_cbor_map_find(&r, "config") != TL_OK ||
      tl_cbor_map_find(&r, "config") != TL_OK ||
      tl_cbor_expect_map(&r, &n) != TL_OK)
    return TL_ERR_INVALID_MODEL;
  for (size_t i = 0; i < n; i++) {
    const char *k, *s;
    size_t klen, slen;
    tl_cbor_item it;
    bool done = false;
    if (tl_cbor_expect_text(&r, &k, &klen) != TL_OK) return TL_ERR_INVALID_MODEL;
    for (size_t u = 0; u < 8 && !done; u++) {
      if (!tl_cbor_text_is(k, klen, uint_keys[u])) continue;
      if (tl_cbor_expect_uint(&r, &c->u[u]) != TL_OK) return TL_ERR_INVALID_MODEL;
      c->seen |= 1u << u;
      done = true;
    }
    if (done) continue;
    if (tl_cbor_text_is(k, klen, "rms_norm_eps") || tl_cbor_text_is(k, klen, "rope_theta")) {
      bool eps = tl_cbor_text_is(k, klen, "rms_norm_eps");
      if (tl_cbor_expect_text(&r, &s, &slen) != TL_OK ||
          parse_float_text(s, slen, eps ? &c->eps : &c->theta) != TL_OK)
        return TL_ERR_INVALID_MODEL;
      c->seen |= eps ? 1u << 8 : 1u << 9;
    } else if (tl_cbor_text_is(k, klen, "tie_word_embeddings")) {
      if (tl_cbor_expect_bool(&r, &c->tie) != TL_OK) return TL_ERR_INVALID_MODEL;
      c->seen |= 1u << 10;
    } else if (tl_cbor_text_is(k, klen, "hidden_act")) {
      if (tl_cbor_expect_text(&r, &s, &slen) != TL_OK) return TL_ERR_INVALID_MODEL;
      c->act_ok = tl_cbor_text_is(s, slen, "silu");
      c->seen |= 1u << 11;
    } else if (tl_cbor_text_is(k, klen, "attention_bias") ||
               tl_cbor_text_is(k, klen, "use_sliding_window")) {
      bool v;
      if (tl_cbor_expect_bool(&r, &v) != TL_OK) return TL_ERR_INVALID_MODEL;
      if (tl_cbor_text_is(k, klen, "attention_bias")) c->bias = v;
      else c->sliding = v;
    } else if (tl_cbor_text_is(k, klen, "rope_scaling")) {
      if (tl_cbor_read(&r, &it) != TL_OK) return TL_ERR_INVALID_MODEL;
      c->scaling_null = it.type == TL_CBOR_NULL;
      if (!c->scaling_null) return TL_ERR_UNSUPPORTED_FEATURE;
      c->seen |= 1u << 12;
    } else if (tl_cbor_skip(&r) != TL_OK) {
      return TL_ERR_INVALID_MODEL;
    }
  }
  if (c->seen != 0x1fffu) return TL_ERR_INVALID_MODEL;
  if (!c->act_ok || c->bias || c->sliding) return TL_ERR_UNSUPPORTED_FEATURE;
  return TL_OK;
}

static tl_status bind(const tl_slm_tensors *ts, const char *name, size_t rows,
                      size_t n, tl_qwen3_weight *w) {
  tl_slm_tensor t;
  if (tl_slm_tensor_find(ts, name, strlen(name), &t) != TL_OK ||
      t.rows != rows || t.n != n)
    return TL_ERR_INVALID_MODEL;
  /* an artifact's packed rows (SLM-11) are the fast lane's already */
  w->data = t.packed ? NULL : t.data;
  w->packed = t.packed ? t.data : NULL;
  w->len = t.len;
  w->type = t.type;
  w->rows = rows;
  w->n = n;
  return TL_OK;
}

/* "model.layers.<l>.<suffix>" into buf. */
static const char *layer_name(char *buf, size_t cap, uint32_t l,
                              const char *suffix) {
  static const char prefix[] = "model.layers.";
  char digits[12];
  size_t nd = 0, at = 0, sl = strlen(suffix);
  do {
    digits[nd++] = (char)('0' + l % 10);
    l /= 10;
  } while (l != 0);
  if (sizeof prefix - 1 + nd + 1 + sl + 1 > cap) return "";
  memcpy(buf, prefix, sizeof prefix - 1);
  at = sizeof prefix - 1;
  while (nd > 0) buf[at++] = digits[--nd];
  buf[at++] = '.';
  memcpy(buf + at, suffix, sl + 1);
  return buf;
}

tl_status tl_qwen3_load(tl_qwen3 *m, const tl_slm *slm,
                        const tl_slm_tensors *ts, tl_arena *arena) {
  raw_config rc;
  tl_qwen3_config *c = &m->cfg;
  size_t h, qd, kd, half;
  tl_status st;
  void *p;
  if (m == NULL || slm == NULL || ts == NULL || arena == NULL)
    return TL_ERR_INVALID_ARGUMENT;
  memset(m, 0, sizeof *m);
  st = read_config(slm, &rc);
  if (st != TL_OK) return st;
  for (size_t u = 0; u < 8; u++)
    if (rc.u[u] == 0 || rc.u[u] > (1u << 28)) return TL_ERR_INVALID_MODEL;
  c->vocab = (uint32_t)rc.u[0];
  c->hidden = (uint32_t)rc.u[1];
  c->inter = (uint32_t)rc.u[2];
  c->layers = (uint32_t)rc.u[3];
  c->heads = (uint32_t)rc.u[4];
  c->kv_heads = (uint32_t)rc.u[5];
  c->head_dim = (uint32_t)rc.u[6];
  c->max_positions = (uint32_t)rc.u[7];
  c->rms_eps = (float)rc.eps;
  c->rope_theta = rc.theta;
  if (c->heads % c->kv_heads != 0 || c->head_dim % 2 != 0 ||
      !(rc.eps > 0) || !(rc.theta > 1.0))
    return TL_ERR_INVALID_MODEL;
  /* Every per-token width must fit 32-bit size_t arithmetic (wasm32) with
   * room to spare: the buffers multiply them by token and key counts, which
   * tl_qwen3_scratch_bound then checks. */
  if ((uint64_t)c->heads * c->head_dim > MAX_WIDTH || c->hidden > MAX_WIDTH ||
      c->inter > MAX_WIDTH || c->vocab > MAX_WIDTH)
    return TL_ERR_UNSUPPORTED_SHAPE;
  h = c->hidden;
  qd = (size_t)c->heads * c->head_dim;
  kd = (size_t)c->kv_heads * c->head_dim;
  st = bind(ts, "model.embed_tokens.weight", c->vocab, h, &m->embed);
  if (st == TL_OK) st = bind(ts, "model.norm.weight", 1, h, &m->final_norm);
  if (st == TL_OK)
    st = rc.tie ? (m->lm_head = m->embed, TL_OK)
                : bind(ts, "lm_head.weight", c->vocab, h, &m->lm_head);
  if (st != TL_OK) return st;
  st = tl_arena_alloc_array(arena, c->layers, sizeof *m->layers, 8, &p);
  if (st != TL_OK) return st;
  m->layers = p;
  for (uint32_t l = 0; l < c->layers && st == TL_OK; l++) {
    tl_qwen3_layer *L = &m->layers[l];
    char b[96];
    const struct {
      const char *suffix;
      size_t rows, n;
      tl_qwen3_weight *w;
    } want[] = {
        {"input_layernorm.weight", 1, h, &L->attn_norm},
        {"self_attn.q_proj.weight", qd, h, &L->q},
        {"self_attn.k_proj.weight", kd, h, &L->k},
        {"self_attn.v_proj.weight", kd, h, &L->v},
        {"self_attn.o_proj.weight", h, qd, &L->o},
        {"self_attn.q_norm.weight", 1, c->head_dim, &L->q_norm},
        {"self_attn.k_norm.weight", 1, c->head_dim, &L->k_norm},
        {"post_attention_layernorm.weight", 1, h, &L->mlp_norm},
        {"mlp.gate_proj.weight", c->inter, h, &L->gate},
        {"mlp.up_proj.weight", c->inter, h, &L->up},
        {"mlp.down_proj.weight", h, c->inter, &L->down},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0] && st == TL_OK; i++)
      st = bind(ts, layer_name(b, sizeof b, l, want[i].suffix), want[i].rows,
                want[i].n, want[i].w);
  }
  if (st != TL_OK) return st;
  /* transformers' default rope: inv_freq = 1 / base^(2i/d), in f32. */
  half = c->head_dim / 2;
  st = tl_arena_alloc_array(arena, half, sizeof(float), 16, &p);
  if (st != TL_OK) return st;
  m->inv_freq = p;
  {
    double log_theta = tl_log(c->rope_theta);
    for (size_t i = 0; i < half; i++) {
      float e = (float)(2 * i) / (float)c->head_dim;
      float pw = (float)tl_exp((double)e * log_theta);
      m->inv_freq[i] = 1.0f / pw;
    }
  }
  return TL_OK;
}

/* Bytes per cached K or V element on m's lane (F-11: binary16 on the
 * fast lane). */
static size_t cache_elem_bytes(const tl_qwen3 *m) {
  return m->fast != NULL ? sizeof(uint16_t) : sizeof(float);
}

uint64_t tl_qwen3_cache_bytes(const tl_qwen3 *m, uint32_t capacity) {
  return 2ull * m->cfg.layers * capacity * m->cfg.kv_heads * m->cfg.head_dim *
         cache_elem_bytes(m);
}

tl_status tl_qwen3_cache_init(tl_qwen3_cache *c, const tl_qwen3 *m,
                              uint32_t capacity, tl_arena *arena) {
  size_t row = (size_t)m->cfg.kv_heads * m->cfg.head_dim, count;
  void *k, *v;
  tl_status st;
  if (c == NULL || m == NULL || arena == NULL || capacity == 0)
    return TL_ERR_INVALID_ARGUMENT;
  if (tl_mul_size(row, capacity, &count) != TL_OK ||
      tl_mul_size(count, m->cfg.layers, &count) != TL_OK)
    return TL_ERR_INTEGER_OVERFLOW;
  st = tl_arena_alloc_array(arena, count, cache_elem_bytes(m), 64, &k);
  if (st == TL_OK) st = tl_arena_alloc_array(arena, count, cache_elem_bytes(m), 64, &v);
  if (st != TL_OK) return st;
  c->k = m->fast != NULL ? NULL : k;
  c->v = m->fast != NULL ? NULL : v;
  c->k16 = m->fast != NULL ? k : NULL;
  c->v16 = m->fast != NULL ? v : NULL;
  c->capacity = capacity;
  c->len = 0;
  c->kv_heads = m->cfg.kv_heads;
  c->head_dim = m->cfg.head_dim;
  return TL_OK;
}

/* ------------------------------------------------------------------------ */
/* Kernels (scalar reference: the only lane so far)                         */

/* Row r of w as f32: exact for f32/f16/bf16, code * scale for q8/q4 (from
 * the packed rows when they replaced the stored ones). */
static tl_status weight_row(const tl_qwen3_weight *w, size_t r, float *out) {
  size_t row_bytes;
  const uint8_t *src;
  (void)tl_quant_row_bytes(w->type, w->n, &row_bytes); /* bound at load */
  if (w->data == NULL) {
    tl_kern_unpack_row(w->type, w->packed + r * row_bytes, w->n, out);
    return TL_OK;
  }
  src = w->data + r * row_bytes;
  switch (w->type) {
    case TL_QTYPE_F32:
      for (size_t i = 0; i < w->n; i++)
        out[i] = tl_bits_to_f32(tl_load_le32(src + 4 * i));
      return TL_OK;
    case TL_QTYPE_F16:
      for (size_t i = 0; i < w->n; i++)
        out[i] = tl_f16_to_f32(tl_load_le16(src + 2 * i));
      return TL_OK;
    case TL_QTYPE_BF16:
      for (size_t i = 0; i < w->n; i++)
        out[i] = tl_bf16_to_f32(tl_load_le16(src + 2 * i));
      return TL_OK;
    case TL_QTYPE_Q8:
    case TL_QTYPE_Q4:
      return tl_quant_unpack(w->type, src, row_bytes, 1, w->n, out);
  }
  return TL_ERR_INVALID_MODEL;
}

tl_status tl_qwen3_weight_row(const tl_qwen3_weight *w, size_t r, float *out) {
  if (r >= w->rows) return TL_ERR_BOUNDS;
  return weight_row(w, r, out);
}

/* Left-to-right f32 dot product: the lane's one reduction order. */
static float dot(const float *a, const float *b, size_t n) {
  float s = 0.0f;
  for (size_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/* y = W x, one decoded row at a time (row: w->n floats of scratch). */
static tl_status matvec(const tl_qwen3_weight *w, const float *x, float *y,
                        float *row) {
  for (size_t r = 0; r < w->rows; r++) {
    tl_status st = weight_row(w, r, row);
    if (st != TL_OK) return st;
    y[r] = dot(row, x, w->n);
  }
  return TL_OK;
}

/* transformers' Qwen3RMSNorm in f32: mean of squares, rsqrt of it plus
 * eps, times x, then times the weight. */
static tl_status rmsnorm(const tl_qwen3_weight *w, const float *x, float *y,
                         size_t n, float eps, float *row) {
  float ss = 0.0f, r;
  tl_status st = weight_row(w, 0, row);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < n; i++) ss += x[i] * x[i];
  r = 1.0f / tl_sqrtf(ss / (float)n + eps);
  for (size_t i = 0; i < n; i++) y[i] = row[i] * (x[i] * r);
  return TL_OK;
}

/* Layer l's attn_norm epsilon (eps, unless a test build plants a defect). */
static float attn_norm_eps(const tl_qwen3 *m, uint32_t l, float eps) {
  return m->fast != NULL && l == 1 && TL_LANE_MUT(TL_LANE_MUT_RMS_EPS_X10) ? eps * 10.0f : eps;
}

/* The rotation of position pos: cs[i] and cs[d/2 + i] are the cosine and
 * sine of frequency i's angle, computed once per position and call and
 * shared by every head and layer. */
static void rope_angles(const tl_qwen3 *m, uint32_t pos, float *cs) {
  size_t half = m->cfg.head_dim / 2;
  bool fast = m->fast != NULL;
  if (fast && ((TL_LANE_MUT(TL_LANE_MUT_POS_SHIFT_20) && pos >= 20) ||
               (TL_LANE_MUT(TL_LANE_MUT_POS_SHIFT_200) && pos >= 200)))
    pos++;
  for (size_t i = 0; i < half; i++) {
    float inv = m->inv_freq[i];
    /* theta x c: inv_freq_i = theta^(-2i/d) times c^(-2i/d) */
    if (fast && TL_LANE_MUT(TL_LANE_MUT_ROPE_THETA_1_1))
      inv *= (float)tl_exp(-(double)i / (double)half * 0.09531017980432486);
    if (fast && TL_LANE_MUT(TL_LANE_MUT_ROPE_THETA_3))
      inv *= (float)tl_exp(-(double)i / (double)half * 1.0986122886681098);
    float angle = (float)pos * inv;
    cs[i] = (float)tl_cos((double)angle);
    cs[half + i] = (float)tl_sin((double)angle);
  }
}

/* rotate_half layout: element i pairs with i + d/2, both at frequency i
 * (cs: rope_angles). */
static void rope(const tl_qwen3 *m, float *x, const float *cs) {
  size_t d = m->cfg.head_dim, half = d / 2;
  bool adjacent = (m->mutations & TL_QWEN3_MUT_ROPE_PAIRING) != 0;
  for (size_t i = 0; i < half; i++) {
    float c = cs[i], s = cs[half + i];
    size_t a = adjacent ? 2 * i : i, b = adjacent ? 2 * i + 1 : i + half;
    float x1 = x[a], x2 = x[b];
    x[a] = x1 * c - x2 * s;
    x[b] = x2 * c + x1 * s;
  }
}

/* ------------------------------------------------------------------------ */
/* The forward pass                                                         */

typedef struct run {
  const tl_qwen3 *m;
  const tl_qwen3_capture *cap;
  tl_qwen3_fault *fault;
} run;

static bool finite(float x) { return x - x == 0.0f; }

static bool wanted(const run *r, tl_qwen3_stage stage, int32_t layer,
                   uint32_t pos) {
  return r->cap != NULL && r->cap->row != NULL &&
         (r->cap->wants == NULL || r->cap->wants(r->cap->ctx, stage, layer, pos));
}

/* Whether every value is finite (or -inf, a masked score, when
 * allow_masked): x - x is +0 for a finite x and NaN otherwise, summed into
 * sixteen independent lanes that the compiler keeps in vector registers
 * (the order of sums of zeros changes nothing); -inf is first raised to
 * -FLT_MAX when it is allowed. */
static bool all_finite(const float *data, size_t n, bool allow_masked) {
  const float lowest = allow_masked ? -3.402823466e38f : -__builtin_inff();
  float acc[16] = {0};
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (size_t k = 0; k < 16; k++) {
      float v = data[i + k] < lowest ? lowest : data[i + k];
      acc[k] += v - v;
    }
  for (size_t k = 0; i < n; i++, k++) {
    float v = data[i] < lowest ? lowest : data[i];
    acc[k] += v - v;
  }
  for (size_t k = 0; k < 16; k++)
    if (acc[k] != 0.0f) return false;
  return true;
}

/* A numerical failure at element index of stage's row (layer, pos). */
static tl_status fail_at(const run *r, tl_qwen3_stage stage, int32_t layer, uint32_t pos,
                         size_t index) {
  if (r->fault != NULL) {
    r->fault->stage = stage;
    r->fault->layer = layer;
    r->fault->pos = pos;
    r->fault->index = index;
  }
  return TL_ERR_NUMERICAL_FAILURE;
}

/* Hands a row to the capture (when wanted) after checking it is finite;
 * scores may hold -inf for masked keys (allow_masked). */
static tl_status emit(const run *r, tl_qwen3_stage stage, int32_t layer,
                      uint32_t pos, const float *data, size_t n,
                      bool allow_masked) {
  /* the quick check first; the loop finds the first offender */
  for (size_t i = all_finite(data, n, allow_masked) ? n : 0; i < n; i++) {
    if (finite(data[i]) || (allow_masked && data[i] == -__builtin_inff()))
      continue;
    return fail_at(r, stage, layer, pos, i);
  }
  if (wanted(r, stage, layer, pos))
    r->cap->row(r->cap->ctx, stage, layer, pos, data, n);
  return TL_OK;
}

/* Positions whose attention the fast lane computes together (attend_all):
 * each key and value row read once for all of them. */
#define BLOCK_POSITIONS 4

typedef struct bufs {
  float *x;      /* [n][H] residual stream */
  float *q;      /* [n][A*D] queries after rope */
  float *xn;     /* [H] */
  float *kv;     /* [2][K*D] */
  float *attn;   /* [A*D] */
  float *h;      /* [H] */
  float *gate, *up; /* [I] */
  float *scores; /* [3][A*S]: raw, masked, probs; the fast lane: that for
                  * each of BLOCK_POSITIONS positions */
  float *row;    /* per task (row_tasks): row_floats of scratch (a decoded
                  * weight row, a head's copy) */
  float *act;    /* fast lane: [n] quantized activations (fast_act_floats) */
  float *fx;     /* fast lane: [n] rows of xn, k, v, attn, h, gate, up */
  tl_kern_x *xs; /* fast lane: [n] views of act */
  float *rope;   /* [n][D]: each position's rope_angles */
  float *kvf;    /* fast lane without fast_reads_f16: per attention task,
                  * a KV head's keys and values as f32 ([2][S*D], head_rows) */
  uint32_t pos0; /* the call's first position */
  float *logits; /* [V] */
} bufs;

static size_t max3(size_t a, size_t b, size_t c) {
  size_t m = a > b ? a : b;
  return m > c ? m : c;
}

/* Floats of room for one activation of the widest contraction prepared
 * for q8/q4 weights (F-3, tl_kern_x): per group of 16 blocks, 512 bytes of
 * codes, then 16 scales and 16 biases for each weight type. */
static size_t fast_act_floats(const tl_qwen3_config *c) {
  size_t widest = max3(c->hidden, c->inter, (size_t)c->heads * c->head_dim);
  return tl_kern_groups(widest) * (TL_KERN_GROUP_CODES / sizeof(float) + 3 * TL_KERN_GROUP);
}

/* Floats of room for one tl_kern_x. */
#define XS_FLOATS ((sizeof(tl_kern_x) + sizeof(float) - 1) / sizeof(float))

/* Floats per token of bufs.fx. */
static size_t fast_row_floats(const tl_qwen3_config *c) {
  size_t kd = (size_t)c->kv_heads * c->head_dim;
  return 2 * (size_t)c->hidden + 2 * kd + (size_t)c->heads * c->head_dim + 2 * (size_t)c->inter;
}

/* Floats of one task's row scratch: a decoded weight row of the widest
 * width, and two heads' worth for the per-head norms. */
static size_t row_floats(const tl_qwen3_config *c) {
  return max3(c->hidden, c->inter, (size_t)c->heads * c->head_dim) + 2 * (size_t)c->head_dim;
}

/* Tasks that may each hold a row scratch: the fast lane's per-token phases
 * run on every thread. */
static size_t row_tasks(const tl_qwen3 *m) {
  return m->fast != NULL && m->par != NULL ? m->par->threads : 1;
}

static uint32_t fast_tasks(const tl_qwen3 *m, size_t units) {
  uint32_t t = m->par != NULL ? m->par->threads : 1;
  return units < t ? (uint32_t)(units ? units : 1) : t;
}

/* Whether the fast lane's kernels read the binary16 cache rows where they
 * lie (attention); without them (NEON, SIMD128) each attention task first
 * converts a KV head's rows to f32 in its share of bufs.kvf. */
static bool fast_reads_f16(const tl_qwen3 *m) {
  return m->fast != NULL && m->fast->dots_h != NULL && m->fast->weighted_h != NULL;
}

#define N_BUFS 16

/* The float counts of the working buffers of a call of n tokens over
 * keys keys, in alloc_bufs order; false when a count overflows. */
static bool buffer_counts(const tl_qwen3 *m, size_t n, uint32_t keys,
                          size_t counts[N_BUFS]) {
  const tl_qwen3_config *c = &m->cfg;
  size_t qd = (size_t)c->heads * c->head_dim, kd = (size_t)c->kv_heads * c->head_dim;
  size_t h = c->hidden;
  if (tl_mul_size(n, h, &counts[0]) != TL_OK ||
      tl_mul_size(n, qd, &counts[1]) != TL_OK ||
      tl_mul_size((size_t)3 * c->heads * (m->fast != NULL ? BLOCK_POSITIONS : 1), keys,
                  &counts[8]) != TL_OK)
    return false;
  counts[2] = h;
  counts[3] = 2 * kd;
  counts[4] = qd;
  counts[5] = h > c->head_dim ? h : c->head_dim;
  counts[6] = c->inter;
  counts[7] = c->inter;
  if (tl_mul_size(row_floats(c), row_tasks(m), &counts[9]) != TL_OK) return false;
  counts[10] = counts[11] = counts[12] = 0;
  if (m->fast != NULL &&
      (tl_mul_size(n, fast_act_floats(c), &counts[10]) != TL_OK ||
       tl_mul_size(n, fast_row_floats(c), &counts[11]) != TL_OK ||
       tl_mul_size(n, XS_FLOATS, &counts[12]) != TL_OK))
    return false;
  if (tl_mul_size(n, c->head_dim, &counts[13]) != TL_OK) return false;
  counts[14] = 0; /* at 32,768 keys 33.5 MB per task on the 0.6B shape: only where used */
  if (m->fast != NULL && !fast_reads_f16(m) &&
      (tl_mul_size((size_t)2 * c->head_dim * fast_tasks(m, c->heads), keys, &counts[14]) !=
       TL_OK))
    return false;
  counts[15] = c->vocab; /* the logits, allocated after the layers */
  return true;
}

size_t tl_qwen3_scratch_bound(const tl_qwen3 *m, size_t n, uint32_t keys) {
  size_t counts[N_BUFS], total = 0;
  if (!buffer_counts(m, n, keys, counts)) return SIZE_MAX;
  for (size_t i = 0; i < N_BUFS; i++) {
    if (counts[i] == 0) continue; /* not allocated */
    /* each buffer: its floats plus up to 63 bytes of alignment */
    if (counts[i] > (SIZE_MAX - total) / sizeof(float) - 64) return SIZE_MAX;
    total += counts[i] * sizeof(float) + 63;
  }
  return total;
}

static tl_status alloc_bufs(const tl_qwen3 *m, size_t n, uint32_t keys,
                            tl_arena *a, bufs *b) {
  float *xs = NULL;
  float **dest[N_BUFS - 1] = {&b->x,      &b->q,   &b->xn,  &b->kv,  &b->attn,
                              &b->h,      &b->gate, &b->up, &b->scores, &b->row,
                              &b->act,    &b->fx,  &xs,    &b->rope, &b->kvf};
  size_t counts[N_BUFS];
  if (!buffer_counts(m, n, keys, counts)) return TL_ERR_INTEGER_OVERFLOW;
  for (size_t i = 0; i < N_BUFS - 1; i++) {
    void *p = NULL;
    tl_status st = counts[i] == 0 ? TL_OK
                                  : tl_arena_alloc_array(a, counts[i], sizeof(float), 64, &p);
    if (st != TL_OK) return st;
    *dest[i] = p;
  }
  b->xs = (tl_kern_x *)(void *)xs;
  return TL_OK;
}

/* ------------------------------------------------------------------------ */
/* The fast lane's products (docs/fast-profile.md)                          */

#define FAST_MAX_MATS 3
/* Rows whose weights stay in cache while every token of a call passes
 * over them (F-8: each (token, row) product is the decode computation). */
#define FAST_TILE 16

/* Up to three matrices that read the same inputs, as one run of rows
 * [0, total) split between tasks (F-7: each row has one owner), for n
 * tokens: y[i] holds n rows of w[i]->rows outputs. */
typedef struct fast_job {
  const tl_kernels *k;
  const tl_qwen3_weight *w[FAST_MAX_MATS];
  float *y[FAST_MAX_MATS];
  size_t n_mats, total, n;
  const tl_kern_x *xs;
} fast_job;

static void fast_task(void *ctx, uint32_t task, uint32_t n_tasks) {
  const fast_job *j = ctx;
  size_t b, e, base = 0;
  tl_par_range(j->total, task, n_tasks, &b, &e);
  for (size_t i = 0; i < j->n_mats; base += j->w[i]->rows, i++) {
    const tl_qwen3_weight *w = j->w[i];
    size_t lo = b > base ? b : base, hi = e < base + w->rows ? e : base + w->rows, rb;
    (void)tl_quant_row_bytes(w->type, w->n, &rb); /* bound at load */
    for (size_t r0 = lo; r0 < hi; r0 += FAST_TILE) {
      size_t rows = hi - r0 < FAST_TILE ? hi - r0 : FAST_TILE;
      tl_kern_tile(j->k, w->type, (w->packed ? w->packed : w->data) + (r0 - base) * rb, rb,
                   w->n, j->xs, j->n, rows, j->y[i] + (r0 - base), w->rows);
    }
  }
}

/* F-3 for the activations of tokens [0, n) (their tl_kern_x already
 * pointing at their rows and buffers), split between tasks by token. */
typedef struct act_job {
  const tl_kernels *k;
  tl_kern_x *xs;
  size_t width, n;
} act_job;

static void act_task(void *ctx, uint32_t task, uint32_t n_tasks) {
  const act_job *j = ctx;
  size_t b, e;
  tl_par_range(j->n, task, n_tasks, &b, &e);
  for (size_t t = b; t < e; t++) {
    tl_kern_x *xt = &j->xs[t]; /* its buffers are the call's own (bufs.act) */
    tl_kern_quantize(j->k, xt->f, j->width, (int8_t *)xt->codes, (float *)xt->scales,
                     (int32_t *)xt->q8_bias, (int32_t *)xt->q4_bias);
  }
}

static bool is_quant(const tl_qwen3_weight *w) {
  return w->type == TL_QTYPE_Q8 || w->type == TL_QTYPE_Q4;
}

/* y[i] = w[i] x_t for the n tokens x_t (rows of x, the matrices' common
 * width apart) and n_mats matrices; each activation is quantized once
 * (F-3), in the layouts the matrices' types read. When the model has a
 * device and every matrix is q8/q4, the device computes the products
 * (docs/webgpu-profile.md); a device's failure is the call's. */
static tl_status fast_matmul(const run *r, bufs *b, const tl_qwen3_weight *const *w,
                             size_t n_mats, const float *x, size_t n, float *const *y) {
  const tl_qwen3 *m = r->m;
  size_t width = w[0]->n, ng = tl_kern_groups(width), act = fast_act_floats(&m->cfg);
  bool quantize = false, all_quant = true;
  fast_job j;
  memset(&j, 0, sizeof j);
  j.k = m->fast;
  j.n_mats = n_mats;
  j.n = n;
  j.xs = b->xs;
  for (size_t i = 0; i < n_mats; i++) {
    j.w[i] = w[i];
    j.y[i] = y[i];
    j.total += w[i]->rows;
    quantize |= is_quant(w[i]);
    all_quant &= is_quant(w[i]);
  }
  for (size_t t = 0; t < n; t++) {
    tl_kern_x *xt = &b->xs[t];
    memset(xt, 0, sizeof *xt);
    xt->f = x + t * width;
    if (quantize) {
      /* per token: codes [512 ng] (64-byte aligned), scales and the two
       * biases [16 ng] each */
      int8_t *codes = (int8_t *)(void *)(b->act + t * act);
      float *scales = (float *)(void *)(codes + TL_KERN_GROUP_CODES * ng);
      int32_t *bias8 = (int32_t *)(void *)(scales + TL_KERN_GROUP * ng);
      xt->codes = codes;
      xt->scales = scales;
      xt->q8_bias = bias8;
      xt->q4_bias = bias8 + TL_KERN_GROUP * ng;
    }
  }
  if (quantize) {
    act_job a = {m->fast, b->xs, width, n};
    tl_parallel_run(m->par, act_task, &a, fast_tasks(m, n));
  }
  if (m->device != NULL && all_quant) {
    tl_kern_mat mats[FAST_MAX_MATS];
    for (size_t i = 0; i < n_mats; i++) {
      mats[i].type = (uint32_t)w[i]->type;
      mats[i].w = w[i]->packed;
      (void)tl_quant_row_bytes(w[i]->type, w[i]->n, &mats[i].row_bytes); /* bound at load */
      mats[i].n = w[i]->n;
      mats[i].rows = w[i]->rows;
      mats[i].y = y[i];
    }
    return m->device->products(m->device->ctx, mats, n_mats, b->xs, n);
  }
  tl_parallel_run(m->par, fast_task, &j, fast_tasks(m, j.total));
  return TL_OK;
}

/* y = W x on the model's lane. */
static tl_status mv(const run *r, bufs *b, const tl_qwen3_weight *w,
                    const float *x, float *y) {
  if (r->m->fast == NULL) return matvec(w, x, y, b->row);
  return fast_matmul(r, b, &w, 1, x, 1, &y);
}

static const tl_qwen3_weight *weight_at(const tl_qwen3 *m, size_t i) {
  const tl_qwen3_layer *L;
  if (i < 3) return i == 0 ? &m->embed : i == 1 ? &m->final_norm : &m->lm_head;
  if ((i -= 3) / 11 >= m->cfg.layers) return NULL;
  L = &m->layers[i / 11];
  switch (i % 11) {
    case 0: return &L->attn_norm;
    case 1: return &L->q;
    case 2: return &L->k;
    case 3: return &L->v;
    case 4: return &L->o;
    case 5: return &L->q_norm;
    case 6: return &L->k_norm;
    case 7: return &L->mlp_norm;
    case 8: return &L->gate;
    case 9: return &L->up;
    default: return &L->down;
  }
}

tl_qwen3_weight *tl_qwen3_weight_at(tl_qwen3 *m, size_t i) {
  return (tl_qwen3_weight *)weight_at(m, i); /* m is not const */
}

/* Validation or packing of one weight's rows, split between tasks. */
typedef struct weight_job {
  const tl_qwen3_weight *w;
  uint8_t *to; /* packing: the destination; NULL: validation */
  tl_status st[TL_PAR_MAX_TASKS];
} weight_job;

static void weight_task(void *ctx, uint32_t task, uint32_t n_tasks) {
  weight_job *j = ctx;
  const tl_qwen3_weight *w = j->w;
  size_t b, e, rb;
  tl_par_range(w->rows, task, n_tasks, &b, &e);
  (void)tl_quant_row_bytes(w->type, w->n, &rb);
  j->st[task] = TL_OK;
  if (j->to != NULL) tl_kern_pack(w->type, w->data, j->to, rb, w->n, b, e);
  else if (w->data != NULL) j->st[task] = tl_kern_validate(w->type, false, w->data, rb, w->n, b, e);
  else j->st[task] = tl_kern_validate(w->type, true, w->packed, rb, w->n, b, e);
}

static tl_status weight_run(const tl_qwen3_weight *w, uint8_t *to, const tl_parallel *par,
                            weight_job *j) {
  uint32_t t = par != NULL ? par->threads : 1;
  uint32_t n = w->rows < t ? (uint32_t)(w->rows ? w->rows : 1) : t;
  j->w = w;
  j->to = to;
  tl_parallel_run(par, weight_task, j, n);
  for (uint32_t i = 0; i < n; i++)
    if (j->st[i] != TL_OK) return j->st[i];
  return TL_OK;
}

tl_status tl_qwen3_pack(tl_qwen3 *m, const uint8_t *from, size_t len, uint8_t *to,
                        const tl_parallel *par) {
  weight_job j;
  tl_qwen3_weight *w;
  if (m == NULL || (len != 0 && (from == NULL || to == NULL)) ||
      (par != NULL && (par->threads == 0 || par->threads > TL_PAR_MAX_TASKS)))
    return TL_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; (w = tl_qwen3_weight_at(m, i)) != NULL; i++) {
    tl_status st = is_quant(w) && (w->data != NULL || w->packed != NULL)
                       ? weight_run(w, NULL, par, &j)
                       : TL_OK;
    if (st != TL_OK) return st;
  }
  for (size_t i = 0; (w = tl_qwen3_weight_at(m, i)) != NULL; i++) {
    const tl_qwen3_weight *same = NULL, *v;
    const uint8_t *src = w->data;
    uint8_t *dst;
    if (!is_quant(w) || src == NULL || src < from || src >= from + len) continue;
    /* a weight in two roles: the first one's packing serves both */
    for (size_t k = 0; k < i && same == NULL; k++)
      if ((v = tl_qwen3_weight_at(m, k))->packed >= to && v->packed < to + len &&
          from + (v->packed - to) == src)
        same = v;
    dst = to + (src - from);
    if (same == NULL) (void)weight_run(w, dst, par, &j);
    w->packed = dst;
    if (to == from) w->data = NULL;
  }
  return TL_OK;
}

void tl_qwen3_set_device(tl_qwen3 *m, const tl_kern_device *dev) { m->device = dev; }

tl_status tl_qwen3_set_lane(tl_qwen3 *m, const tl_kernels *k,
                            const tl_parallel *par) {
  if (m == NULL || (par != NULL && (par->threads == 0 || par->threads > TL_PAR_MAX_TASKS)))
    return TL_ERR_INVALID_ARGUMENT;
  m->fast = k;
  m->par = par;
  return TL_OK;
}

void tl_qwen3_quant_layouts(const tl_qwen3 *m, bool *stored, bool *packed) {
  const tl_qwen3_weight *w;
  *stored = *packed = false;
  for (size_t i = 0; (w = weight_at(m, i)) != NULL; i++) {
    if (!is_quant(w)) continue;
    if (w->data != NULL) *stored = true;
    else if (w->packed != NULL) *packed = true;
  }
}

/* Whether every q8/q4 weight has its packed rows (tl_qwen3_pack). */
static bool fast_ready(const tl_qwen3 *m) {
  const tl_qwen3_weight *w;
  for (size_t i = 0; (w = weight_at(m, i)) != NULL; i++)
    if (is_quant(w) && w->packed == NULL) return false;
  return true;
}

static tl_status project_rest(const run *r, tl_qwen3_cache *cache, uint32_t l, uint32_t pos,
                              const float *cs, float *q_out, float *k, const float *v,
                              float *row);

/* F-11: one position's K (after rope) or V, x (kv_heads rows of D finite
 * floats), rounded to binary16 (RNE, subnormals kept) into the fast
 * lane's cache rows at pos (rows: cache->k16 or v16). A value that
 * overflows is a numerical failure of stage at its index, never an
 * infinity in the cache. */
static tl_status store_f16(const run *r, tl_qwen3_stage stage, const tl_qwen3_cache *cache,
                           uint32_t l, uint32_t pos, const float *x, uint16_t *rows) {
  size_t d = cache->head_dim;
  /* planted: each row holds the previous position's values (row 0 its own) */
  if (TL_LANE_MUT(TL_LANE_MUT_KV_ROW_LATE) && pos + 1 < cache->capacity) {
    for (uint32_t h = 0; h < cache->kv_heads; h++)
      tl_kern_f32_to_f16_k(r->m->fast, x + h * d, d,
                           rows + tl_qwen3_cache_at(cache, l, h, pos + 1));
    if (pos > 0) return TL_OK;
  }
  for (uint32_t h = 0; h < cache->kv_heads; h++) {
    uint16_t *dst = rows + tl_qwen3_cache_at(cache, l, h, pos);
    tl_kern_f32_to_f16_k(r->m->fast, x + h * d, d, dst);
    for (size_t i = 0; i < d; i++)
      if ((dst[i] & 0x7FFFu) == 0x7C00u) return fail_at(r, stage, (int32_t)l, pos, h * d + i);
  }
  return TL_OK;
}

/* One position's projections: norm, q/k/v, per-head norms, rope; K and V
 * go to the cache row of pos, the query to q_out. */
static tl_status project(const run *r, bufs *b, tl_qwen3_cache *cache,
                         uint32_t l, const float *x, uint32_t pos,
                         float *q_out) {
  const tl_qwen3 *m = r->m;
  const tl_qwen3_config *c = &m->cfg;
  const tl_qwen3_layer *L = &m->layers[l];
  size_t d = c->head_dim, qd = (size_t)c->heads * d, kd = (size_t)c->kv_heads * d;
  float eps = (m->mutations & TL_QWEN3_MUT_RMS_EPS) ? 1e-5f : c->rms_eps;
  float *k = b->kv, *v = b->kv + kd;
  int32_t li = (int32_t)l;
  tl_status st = rmsnorm(&L->attn_norm, x, b->xn, c->hidden, attn_norm_eps(m, l, eps), b->row);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_ATTN_NORM, li, pos, b->xn, c->hidden, false);
  if (st == TL_OK) st = matvec(&L->q, b->xn, q_out, b->row);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_Q, li, pos, q_out, qd, false);
  if (st == TL_OK) st = matvec(&L->k, b->xn, k, b->row);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_K, li, pos, k, kd, false);
  if (st == TL_OK) st = matvec(&L->v, b->xn, v, b->row);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_V, li, pos, v, kd, false);
  if (st != TL_OK) return st;
  return project_rest(r, cache, l, pos, b->rope + (pos - b->pos0) * d, q_out, k, v, b->row);
}

/* The rest of one position's projections once q, k and v are computed
 * and emitted: per-head norms, rope (cs: pos's rope_angles), and K and V
 * into the cache row. row: ROW_FLOATS of scratch. */
static tl_status project_rest(const run *r, tl_qwen3_cache *cache, uint32_t l, uint32_t pos,
                              const float *cs, float *q_out, float *k, const float *v,
                              float *row) {
  const tl_qwen3 *m = r->m;
  const tl_qwen3_config *c = &m->cfg;
  const tl_qwen3_layer *L = &m->layers[l];
  size_t d = c->head_dim, qd = (size_t)c->heads * d, kd = (size_t)c->kv_heads * d;
  float eps = (m->mutations & TL_QWEN3_MUT_RMS_EPS) ? 1e-5f : c->rms_eps;
  int32_t li = (int32_t)l;
  tl_status st;
  /* q_norm / k_norm: RMSNorm over each head's D values, before rope. The
   * norm's weight row is decoded into row[0, D) by rmsnorm, and the input
   * is copied first to row[D, 2D), since the output overwrites it. */
  for (size_t h = 0; h < c->heads && !(m->mutations & TL_QWEN3_MUT_NO_Q_NORM); h++) {
    memcpy(row + d, q_out + h * d, d * sizeof(float));
    st = rmsnorm(&L->q_norm, row + d, q_out + h * d, d, eps, row);
    if (st != TL_OK) return st;
  }
  for (size_t h = 0; h < c->kv_heads; h++) {
    memcpy(row + d, k + h * d, d * sizeof(float));
    st = rmsnorm(&L->k_norm, row + d, k + h * d, d, eps, row);
    if (st != TL_OK) return st;
  }
  st = emit(r, TL_QWEN3_STAGE_Q_NORM, li, pos, q_out, qd, false);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_K_NORM, li, pos, k, kd, false);
  if (st != TL_OK) return st;
  for (size_t h = 0; h < c->heads; h++) rope(m, q_out + h * d, cs);
  for (size_t h = 0; h < c->kv_heads; h++) rope(m, k + h * d, cs);
  st = emit(r, TL_QWEN3_STAGE_Q_ROPE, li, pos, q_out, qd, false);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_K_ROPE, li, pos, k, kd, false);
  if (st != TL_OK) return st;
  if (cache->k16 != NULL) {
    st = store_f16(r, TL_QWEN3_STAGE_K_ROPE, cache, l, pos, k, cache->k16);
    return st == TL_OK ? store_f16(r, TL_QWEN3_STAGE_V, cache, l, pos, v, cache->v16) : st;
  }
  for (uint32_t h = 0; h < c->kv_heads; h++) {
    size_t at = tl_qwen3_cache_at(cache, l, h, pos);
    memcpy(cache->k + at, k + h * d, d * sizeof(float));
    memcpy(cache->v + at, v + h * d, d * sizeof(float));
  }
  return TL_OK;
}

/* One position's attention over keys [0, keys) of the cache, into
 * b->attn: scores q.k * D^-0.5, causal mask (keys after pos), a softmax
 * with the maximum subtracted, then the probability-weighted sum of V;
 * head by head: the heads are independent (each writes its own slices of
 * the score rows and of attn), so the fast lane splits them between tasks
 * with the fixed partition (F-7). */
typedef struct attend_job {
  const tl_qwen3 *m;
  const float *q, *kc, *vc;    /* the strict lane's cache rows */
  const uint16_t *kh, *vh;     /* the fast lane's (F-11) */
  float *kvf;                  /* fast lane: per task, 2 x keys x D floats */
  float *raw, *masked, *probs, *attn;
  size_t head_stride; /* values from one KV head's rows to the next's */
  size_t keys;
  uint32_t last;
  bool want_raw;
} attend_job;

/* D^-0.5 (times 1.01 where a test build plants that on the fast lane). */
static float attn_scale(const tl_qwen3 *m, size_t d) {
  float scale = (float)(1.0 / __builtin_sqrt((double)d));
  return m->fast != NULL && TL_LANE_MUT(TL_LANE_MUT_ATTN_SCALE_1_01) ? scale * 1.01f : scale;
}

static size_t kv_head_of(const tl_qwen3 *m, size_t h) {
  const tl_qwen3_config *c = &m->cfg;
  return (m->mutations & TL_QWEN3_MUT_GQA_MAP) ? h % c->kv_heads : h / (c->heads / c->kv_heads);
}

/* Keys whose scores are computed: past the last visible one only for the
 * capture of the unmasked scores. */
static size_t scored_keys(const attend_job *j) {
  return j->want_raw ? j->keys : (size_t)j->last + 1;
}

/* Head h's scores, in raw for the scored keys (times the scale): the
 * rest of raw, the mask, and the softmax's exponentials into probs (not
 * yet divided by their sum: softmax_normalize). The maximum is taken in
 * eight partial maxima side by side: the same value as in order (a
 * maximum is exact; ties can only differ in the sign of a zero, whose
 * x - max and exponential are the same), so the same bits. */
static void softmax_exps(const attend_job *j, size_t h) {
  const tl_qwen3 *m = j->m;
  float *sr = j->raw + h * j->keys, *sm = j->masked + h * j->keys, *p = j->probs + h * j->keys;
  float mx = -__builtin_inff(), part[8];
  size_t visible = (size_t)j->last + 1, k = 0;
  for (size_t i = scored_keys(j); i < j->keys; i++) sr[i] = 0.0f;
  /* the masked keys: -inf scores and +0 probabilities, which add nothing
   * to the maximum or the sum */
  for (size_t i = visible; i < j->keys; i++) {
    sm[i] = -__builtin_inff();
    p[i] = 0.0f;
  }
  for (size_t i = 0; i < 8; i++) part[i] = -__builtin_inff();
  for (; k + 8 <= visible; k += 8)
    for (size_t i = 0; i < 8; i++) {
      sm[k + i] = sr[k + i];
      part[i] = sm[k + i] > part[i] ? sm[k + i] : part[i];
    }
  for (; k < visible; k++) {
    sm[k] = sr[k];
    if (sm[k] > mx) mx = sm[k];
  }
  for (size_t i = 0; i < 8; i++)
    if (part[i] > mx) mx = part[i];
  if (m->mutations & TL_QWEN3_MUT_SOFTMAX_NO_MAX) mx = 0.0f;
  if (m->fast != NULL) tl_kern_exps_k(m->fast, sm, mx, visible, p);
  else tl_kern_exps(sm, mx, visible, p);
}

/* The first R rows of p summed over their first `common` elements, each
 * its own sequential sum, side by side so that the R chains of additions
 * overlap (R a constant where it is inlined). */
static inline void sum_rows(float *const *p, size_t common, size_t R, float *s) {
  for (size_t k = 0; k < common; k++)
    for (size_t r = 0; r < R; r++) s[r] += p[r][k];
}

/* Each of n rows of exponentials (row r: its first visible[r] values)
 * divided by its sum: the sum over k = 0, 1, ... in order (the strict
 * lane's), eight rows at a time side by side over the keys they all have,
 * then each row's own rest; every quotient one IEEE division. */
static void softmax_normalize(float *const *p, const size_t *visible, size_t n) {
  for (size_t r0 = 0; r0 < n; r0 += 8) {
    size_t rows = n - r0 < 8 ? n - r0 : 8, common = visible[r0];
    float s[8] = {0};
    for (size_t r = 1; r < rows; r++) common = visible[r0 + r] < common ? visible[r0 + r] : common;
    /* constant row counts, so that the sums stay in registers */
    if (rows == 8) {
      sum_rows(p + r0, common, 8, s);
    } else if (rows >= 4) {
      sum_rows(p + r0, common, 4, s);
      sum_rows(p + r0 + 4, common, rows - 4, s + 4);
    } else {
      sum_rows(p + r0, common, rows, s);
    }
    for (size_t r = 0; r < rows; r++) {
      float *row = p[r0 + r];
      size_t k = 0;
      for (size_t i = common; i < visible[r0 + r]; i++) s[r] += row[i];
      for (; k + 8 <= visible[r0 + r]; k += 8)
        for (size_t i = 0; i < 8; i++) row[k + i] = row[k + i] / s[r];
      for (; k < visible[r0 + r]; k++) row[k] = row[k] / s[r];
    }
  }
}

static void softmax_head(const attend_job *j, size_t h) {
  float *p = j->probs + h * j->keys;
  size_t visible = (size_t)j->last + 1;
  softmax_exps(j, h);
  softmax_normalize(&p, &visible, 1);
}

/* KV head kvh's first rows keys and values as f32 into *kh and *vh: the
 * strict lane's cache rows themselves; the fast lane's binary16 rows
 * converted exactly (F-11) into the task's scratch (2 x keys x D). */
static void head_rows(const attend_job *j, size_t kvh, size_t rows, uint32_t task,
                      const float **kh, const float **vh) {
  size_t d = j->m->cfg.head_dim, at = kvh * j->head_stride;
  float *kv;
  if (j->kh == NULL) {
    *kh = j->kc + at;
    *vh = j->vc + at;
    return;
  }
  kv = j->kvf + (size_t)task * 2 * j->keys * d;
  tl_kern_f16_to_f32_k(j->m->fast, j->kh + at, rows * d, kv);
  tl_kern_f16_to_f32_k(j->m->fast, j->vh + at, rows * d, kv + j->keys * d);
  *kh = kv;
  *vh = kv + j->keys * d;
}

/* Whether the fast lane's kernels read j's binary16 rows where they lie
 * (decoding reads the whole cache once per token; converting it first
 * was a second pass over it and a third through the f32 copy). */
static bool reads_f16(const attend_job *j) {
  return j->kh != NULL && fast_reads_f16(j->m);
}

/* Heads h .. h + w - 1 (w = 2 only on the fast lane, for two heads that
 * share a KV head: each key and value row is read once for both); every
 * score and output element is the one-head computation's. */
static void attend_heads(const attend_job *j, size_t h, size_t w, uint32_t task) {
  const tl_qwen3 *m = j->m;
  size_t d = m->cfg.head_dim, kvh = kv_head_of(m, h), scored = scored_keys(j);
  size_t visible = (size_t)j->last + 1, at = kvh * j->head_stride, counts[2] = {visible, visible};
  float scale = attn_scale(m, d);
  const float *qs[2], *kh = NULL, *vh = NULL;
  float *raw[2], *ps[2], *outs[2];
  for (size_t i = 0; i < w; i++) {
    qs[i] = j->q + (h + i) * d;
    raw[i] = j->raw + (h + i) * j->keys;
    ps[i] = j->probs + (h + i) * j->keys;
    outs[i] = j->attn + (h + i) * d;
  }
  if (m->fast == NULL) {
    head_rows(j, kvh, scored, task, &kh, &vh);
    for (size_t k = 0; k < scored; k++) raw[0][k] = dot(qs[0], kh + k * d, d) * scale;
    softmax_head(j, h);
    tl_kern_weighted(ps[0], visible, vh, d, d, outs[0]);
    return;
  }
  if (reads_f16(j)) {
    tl_kern_dots_h_k(m->fast, qs, w, j->kh + at, d, scored, d, raw);
  } else {
    head_rows(j, kvh, scored, task, &kh, &vh);
    if (w == 2) tl_kern_dots2_k(m->fast, qs[0], qs[1], kh, d, scored, d, raw[0], raw[1]);
    else tl_kern_dots_k(m->fast, qs[0], kh, d, scored, d, raw[0]);
  }
  for (size_t i = 0; i < w; i++) {
    for (size_t k = 0; k < scored; k++) raw[i][k] = raw[i][k] * scale;
    softmax_exps(j, h + i);
  }
  softmax_normalize(ps, counts, w);
  if (reads_f16(j))
    tl_kern_weighted_h_k(m->fast, (const float *const *)ps, counts, w, j->vh + at, d, d, outs);
  else if (w == 2)
    tl_kern_weighted2_k(m->fast, ps[0], ps[1], visible, vh, d, d, outs[0], outs[1]);
  else
    tl_kern_weighted_k(m->fast, ps[0], visible, vh, d, d, outs[0]);
}

static void attend_task(void *ctx, uint32_t task, uint32_t n_tasks) {
  const attend_job *j = ctx;
  size_t b, e;
  tl_par_range(j->m->cfg.heads, task, n_tasks, &b, &e);
  for (size_t h = b; h < e;) {
    size_t w = h + 1 < e && kv_head_of(j->m, h) == kv_head_of(j->m, h + 1) ? 2 : 1;
    attend_heads(j, h, w, task);
    h += w;
  }
}

/* j for layer l's keys [0, keys) of the cache, nothing captured. */
static void attend_init(attend_job *j, const tl_qwen3 *m, const tl_qwen3_cache *cache,
                        uint32_t l, uint32_t keys, float *kvf) {
  size_t at = tl_qwen3_cache_at(cache, l, 0, 0);
  memset(j, 0, sizeof *j);
  j->m = m;
  if (cache->k16 != NULL) {
    j->kh = cache->k16 + at;
    j->vh = cache->v16 + at;
  } else {
    j->kc = cache->k + at;
    j->vc = cache->v + at;
  }
  j->kvf = kvf;
  j->head_stride = (size_t)cache->capacity * m->cfg.head_dim;
  j->keys = keys;
}

/* j's score rows (raw, masked, probs: heads x keys each) from scores, and
 * the position it attends for: query q, output attn. */
static void attend_at(attend_job *j, float *scores, uint32_t pos, const float *q, float *attn) {
  size_t row = (size_t)j->m->cfg.heads * j->keys;
  j->raw = scores;
  j->masked = scores + row;
  j->probs = scores + 2 * row;
  j->q = q;
  j->attn = attn;
  j->last = pos + ((j->m->mutations & TL_QWEN3_MUT_MASK_OFF_BY_ONE) && pos + 1 < j->keys);
}

static tl_status attend(const run *r, bufs *b, const tl_qwen3_cache *cache,
                        uint32_t l, const float *q, uint32_t pos,
                        uint32_t keys) {
  const tl_qwen3 *m = r->m;
  const tl_qwen3_config *c = &m->cfg;
  size_t row = (size_t)c->heads * keys;
  int32_t li = (int32_t)l;
  attend_job j;
  tl_status st;
  attend_init(&j, m, cache, l, keys, b->kvf);
  attend_at(&j, b->scores, pos, q, b->attn);
  j.want_raw = wanted(r, TL_QWEN3_STAGE_SCORES, li, pos);
  if (m->fast != NULL) {
    tl_parallel_run(m->par, attend_task, &j, fast_tasks(m, c->heads));
  } else {
    for (size_t h = 0; h < c->heads; h++) attend_heads(&j, h, 1, 0);
  }
  st = j.want_raw ? emit(r, TL_QWEN3_STAGE_SCORES, li, pos, j.raw, row, false) : TL_OK;
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_SCORES_MASKED, li, pos, j.masked, row, true);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_PROBS, li, pos, j.probs, row, false);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_ATTN_OUT, li, pos, b->attn, c->heads * c->head_dim, false);
  return st;
}

/* The fast lane's attention for a call's n positions when nothing is
 * captured: each task takes its heads through every position in order, so
 * that a head's keys and values stay in cache from one position to the
 * next (position by position, every head's were read again for each).
 * Every score, probability and output is attend's, and each head's rows are
 * checked as attend's emits check them; when one is not finite the
 * positions run again through attend, which names the first fault. */
typedef struct block_job {
  attend_job base; /* the layer's keys and values */
  float *scores;   /* BLOCK_POSITIONS slots of score rows */
  const float *q;  /* [n][A*D] */
  float *at;       /* [n][A*D]: the outputs */
  size_t n;
  uint32_t pos0;
  bool bad[TL_PAR_MAX_TASKS];
} block_job;

static void block_task(void *ctx, uint32_t task, uint32_t n_tasks) {
  block_job *bj = ctx;
  const tl_qwen3 *m = bj->base.m;
  size_t b, e, d = m->cfg.head_dim, qd = (size_t)m->cfg.heads * d;
  size_t slot = 3 * (size_t)m->cfg.heads * bj->base.keys; /* one position's scores */
  float scale = attn_scale(m, d);
  tl_par_range(m->cfg.heads, task, n_tasks, &b, &e);
  bj->bad[task] = false;
  for (size_t h = b; h < e;) {
    size_t w = h + 1 < e && kv_head_of(m, h) == kv_head_of(m, h + 1) ? 2 : 1;
    size_t kvh = kv_head_of(m, h), at = kvh * bj->base.head_stride;
    const float *kh = NULL, *vh = NULL;
    bool direct = reads_f16(&bj->base);
    /* every key of the call: the last position's scored keys */
    if (!direct) head_rows(&bj->base, kvh, bj->base.keys, task, &kh, &vh);
    for (size_t t = 0; t < bj->n; t += BLOCK_POSITIONS) {
      size_t np = bj->n - t < BLOCK_POSITIONS ? bj->n - t : BLOCK_POSITIONS, scored = 0;
      attend_job j[BLOCK_POSITIONS];
      const float *qs[2 * BLOCK_POSITIONS];
      float *raw[2 * BLOCK_POSITIONS], *ps[2 * BLOCK_POSITIONS], *outs[2 * BLOCK_POSITIONS];
      size_t counts[2 * BLOCK_POSITIONS];
      for (size_t u = 0; u < np; u++) {
        uint32_t pos = bj->pos0 + (uint32_t)(t + u);
        j[u] = bj->base;
        attend_at(&j[u], bj->scores + u * slot, pos, bj->q + (t + u) * qd, bj->at + (t + u) * qd);
        scored = scored_keys(&j[u]) > scored ? scored_keys(&j[u]) : scored;
        for (size_t i = 0; i < w; i++) {
          qs[i * np + u] = j[u].q + (h + i) * d;
          raw[i * np + u] = j[u].raw + (h + i) * j[u].keys;
          ps[i * np + u] = j[u].probs + (h + i) * j[u].keys;
          outs[i * np + u] = j[u].attn + (h + i) * d;
          counts[i * np + u] = (size_t)j[u].last + 1;
        }
      }
      /* each head and position's scores as attend_heads computes them (the
       * keys past a position's last are scored but then zeroed) */
      if (direct) tl_kern_dots_h_k(m->fast, qs, w * np, bj->base.kh + at, d, scored, d, raw);
      else tl_kern_dots_n(m->fast, qs, w * np, kh, d, scored, d, raw);
      for (size_t i = 0; i < w * np; i++)
        for (size_t k = 0; k < scored; k++) raw[i][k] = raw[i][k] * scale;
      for (size_t u = 0; u < np; u++)
        for (size_t i = 0; i < w; i++) softmax_exps(&j[u], h + i);
      softmax_normalize(ps, counts, w * np);
      if (direct)
        tl_kern_weighted_h_k(m->fast, (const float *const *)ps, counts, w * np, bj->base.vh + at,
                             d, d, outs);
      else
        tl_kern_weighted_n(m->fast, (const float *const *)ps, counts, w * np, vh, d, d, outs);
      /* the rows as emit checks them; past a position's last key they
       * hold the -inf and +0 softmax_exps wrote, which pass */
      for (size_t u = 0; u < np; u++)
        for (size_t i = h; i < h + w; i++) {
          size_t visible = (size_t)j[u].last + 1;
          bj->bad[task] |= !all_finite(j[u].masked + i * j[u].keys, visible, true) ||
                           !all_finite(j[u].probs + i * j[u].keys, visible, false);
        }
    }
    h += w;
  }
}

/* Attention for positions [pos0, pos0 + n) of a fast_layer call into at
 * ([n][A*D]), with attend's checks and faults. */
static tl_status attend_all(const run *r, bufs *b, const tl_qwen3_cache *cache, uint32_t l,
                            size_t n, uint32_t pos0, uint32_t keys, float *at) {
  const tl_qwen3 *m = r->m;
  const tl_qwen3_config *c = &m->cfg;
  size_t qd = (size_t)c->heads * c->head_dim;
  tl_status st = TL_OK;
  if (r->cap == NULL && n > 1) {
    block_job bj;
    uint32_t tasks = fast_tasks(m, c->heads);
    bool bad = false;
    attend_init(&bj.base, m, cache, l, keys, b->kvf);
    bj.scores = b->scores;
    bj.q = b->q;
    bj.at = at;
    bj.n = n;
    bj.pos0 = pos0;
    tl_parallel_run(m->par, block_task, &bj, tasks);
    for (uint32_t i = 0; i < tasks; i++) bad |= bj.bad[i];
    if (!bad) {
      for (size_t t = 0; t < n && st == TL_OK; t++)
        st = emit(r, TL_QWEN3_STAGE_ATTN_OUT, (int32_t)l, pos0 + (uint32_t)t, at + t * qd, qd,
                  false);
      return st;
    }
  }
  for (size_t t = 0; t < n && st == TL_OK; t++) {
    st = attend(r, b, cache, l, b->q + t * qd, pos0 + (uint32_t)t, keys);
    memcpy(at + t * qd, b->attn, qd * sizeof(float));
  }
  return st;
}

/* After o_proj (o: its output) for one position: the residual into x,
 * and the MLP's norm of it into xn. */
static tl_status after_o_proj(const run *r, uint32_t l, float *x, const float *o,
                              float *xn, float *row, uint32_t pos) {
  const tl_qwen3 *m = r->m;
  const tl_qwen3_config *c = &m->cfg;
  float eps = (m->mutations & TL_QWEN3_MUT_RMS_EPS) ? 1e-5f : c->rms_eps;
  int32_t li = (int32_t)l;
  tl_status st = emit(r, TL_QWEN3_STAGE_O_PROJ, li, pos, o, c->hidden, false);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < c->hidden; i++) x[i] = x[i] + o[i];
  st = emit(r, TL_QWEN3_STAGE_ATTN_RESIDUAL, li, pos, x, c->hidden, false);
  if (st == TL_OK) st = rmsnorm(&m->layers[l].mlp_norm, x, xn, c->hidden, eps, row);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_MLP_NORM, li, pos, xn, c->hidden, false);
  return st;
}

/* SiLU(gate) * up into gate, with silu(g) = g / (1 + e^-g). The fast
 * lane takes the exponentials through its kernel (e^(-g - 0) is e^-g for
 * every g, -0 included), into row (inter floats), then the same division
 * and product: the same bits. */
static tl_status silu_up(const run *r, uint32_t l, float *gate, const float *up, float *row,
                         uint32_t pos) {
  size_t inter = r->m->cfg.inter;
  if (r->m->fast != NULL) {
    for (size_t i = 0; i < inter; i++) row[i] = -gate[i];
    tl_kern_exps_k(r->m->fast, row, 0.0f, inter, row);
    /* planted: e^x as (1 + x/256)^256, relative error near x^2/512 */
    for (size_t i = 0; TL_LANE_MUT(TL_LANE_MUT_SILU_APPROX) && i < inter; i++) {
      float t = 1.0f - gate[i] / 256.0f;
      for (int k = 0; k < 8; k++) t *= t;
      row[i] = t;
    }
    for (size_t i = 0; i < inter; i++) gate[i] = gate[i] / (1.0f + row[i]) * up[i];
  } else {
    for (size_t i = 0; i < inter; i++) {
      float g = gate[i];
      gate[i] = g / (1.0f + tl_expf(-g)) * up[i];
    }
  }
  return emit(r, TL_QWEN3_STAGE_ACT, (int32_t)l, pos, gate, inter, false);
}

/* After down_proj (down: its output): the residual into x. */
static tl_status after_down(const run *r, uint32_t l, float *x, const float *down,
                            uint32_t pos) {
  size_t h = r->m->cfg.hidden;
  tl_status st = emit(r, TL_QWEN3_STAGE_DOWN, (int32_t)l, pos, down, h, false);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < h; i++) x[i] = x[i] + down[i];
  return emit(r, TL_QWEN3_STAGE_LAYER_OUT, (int32_t)l, pos, x, h, false);
}

/* Everything after attention for one position: o_proj, residual, MLP,
 * residual. x is the position's residual stream (updated in place). */
static tl_status finish_layer(const run *r, bufs *b, uint32_t l, float *x,
                              uint32_t pos) {
  const tl_qwen3 *m = r->m;
  const tl_qwen3_config *c = &m->cfg;
  const tl_qwen3_layer *L = &m->layers[l];
  int32_t li = (int32_t)l;
  tl_status st = matvec(&L->o, b->attn, b->h, b->row);
  if (st == TL_OK) st = after_o_proj(r, l, x, b->h, b->xn, b->row, pos);
  if (st == TL_OK) st = matvec(&L->gate, b->xn, b->gate, b->row);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_GATE, li, pos, b->gate, c->inter, false);
  if (st == TL_OK) st = matvec(&L->up, b->xn, b->up, b->row);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_UP, li, pos, b->up, c->inter, false);
  if (st == TL_OK) st = silu_up(r, l, b->gate, b->up, b->row, pos);
  if (st == TL_OK) st = matvec(&L->down, b->gate, b->h, b->row);
  if (st == TL_OK) st = after_down(r, l, x, b->h, pos);
  return st;
}

/* The state of one fast_layer call that its per-token steps share: the
 * tokens of one sequence at pos0, pos0 + 1, ... in cache, or (rows) one
 * token of each of several sequences, token t at pos[t] in caches[t]. */
typedef struct layer_ctx {
  tl_qwen3_cache *cache;
  tl_qwen3_cache *const *caches; /* rows: [n]; NULL: cache */
  const uint32_t *pos;           /* rows: [n]; NULL: pos0 + t */
  uint32_t l, pos0;
  float *xn, *k, *v, *h, *gate, *up; /* [n][...] rows, as fast_layer lays them out */
} layer_ctx;

static tl_qwen3_cache *token_cache(const layer_ctx *lc, size_t t) {
  return lc->caches != NULL ? lc->caches[t] : lc->cache;
}

static uint32_t token_pos(const layer_ctx *lc, size_t t) {
  return lc->pos != NULL ? lc->pos[t] : lc->pos0 + (uint32_t)t;
}

/* One token's share of a per-token phase: token t of the call, row its
 * task's scratch. */
typedef tl_status (*token_step)(const run *r, bufs *b, const layer_ctx *lc, size_t t,
                                float *row);

typedef struct token_job {
  const run *r;
  bufs *b;
  const layer_ctx *lc;
  token_step step;
  size_t n, row_floats;
  tl_status st[TL_PAR_MAX_TASKS];
  tl_qwen3_fault fault[TL_PAR_MAX_TASKS];
} token_job;

static void token_task(void *ctx, uint32_t task, uint32_t n_tasks) {
  token_job *j = ctx;
  run r = *j->r;
  size_t b, e;
  if (r.fault != NULL) r.fault = &j->fault[task];
  tl_par_range(j->n, task, n_tasks, &b, &e);
  j->st[task] = TL_OK;
  for (size_t t = b; t < e && j->st[task] == TL_OK; t++)
    j->st[task] = j->step(&r, j->b, j->lc, t, j->b->row + task * j->row_floats);
}

/* step for tokens [0, n), split between tasks by token — each token's
 * step touches only its own rows and its task's scratch — as if in order:
 * the first failing token's status and fault (each task stops at its
 * first; tasks hold ordered ranges). With a capture, in order on one
 * thread, since the capture sees rows in order. */
static tl_status per_token(const run *r, bufs *b, const layer_ctx *lc, size_t n,
                           token_step step) {
  token_job j;
  uint32_t tasks = r->cap != NULL ? 1 : fast_tasks(r->m, n);
  j.r = r;
  j.b = b;
  j.lc = lc;
  j.step = step;
  j.n = n;
  j.row_floats = row_floats(&r->m->cfg);
  tl_parallel_run(r->m->par, token_task, &j, tasks);
  for (uint32_t i = 0; i < tasks; i++)
    if (j.st[i] != TL_OK) {
      if (r->fault != NULL) *r->fault = j.fault[i];
      return j.st[i];
    }
  return TL_OK;
}

static tl_status step_attn_norm(const run *r, bufs *b, const layer_ctx *lc, size_t t,
                                float *row) {
  const tl_qwen3_config *c = &r->m->cfg;
  float eps = (r->m->mutations & TL_QWEN3_MUT_RMS_EPS) ? 1e-5f : c->rms_eps;
  size_t H = c->hidden;
  tl_status st = rmsnorm(&r->m->layers[lc->l].attn_norm, b->x + t * H, lc->xn + t * H, H,
                         attn_norm_eps(r->m, lc->l, eps), row);
  return st == TL_OK ? emit(r, TL_QWEN3_STAGE_ATTN_NORM, (int32_t)lc->l, token_pos(lc, t),
                            lc->xn + t * H, H, false)
                     : st;
}

static tl_status step_project(const run *r, bufs *b, const layer_ctx *lc, size_t t,
                              float *row) {
  const tl_qwen3_config *c = &r->m->cfg;
  size_t qd = (size_t)c->heads * c->head_dim, kd = (size_t)c->kv_heads * c->head_dim;
  uint32_t pos = token_pos(lc, t);
  int32_t li = (int32_t)lc->l;
  tl_status st = emit(r, TL_QWEN3_STAGE_Q, li, pos, b->q + t * qd, qd, false);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_K, li, pos, lc->k + t * kd, kd, false);
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_V, li, pos, lc->v + t * kd, kd, false);
  if (st == TL_OK)
    st = project_rest(r, token_cache(lc, t), lc->l, pos, b->rope + t * c->head_dim,
                      b->q + t * qd, lc->k + t * kd, lc->v + t * kd, row);
  return st;
}

static tl_status step_after_o(const run *r, bufs *b, const layer_ctx *lc, size_t t,
                              float *row) {
  size_t H = r->m->cfg.hidden;
  return after_o_proj(r, lc->l, b->x + t * H, lc->h + t * H, lc->xn + t * H, row,
                      token_pos(lc, t));
}

static tl_status step_act(const run *r, bufs *b, const layer_ctx *lc, size_t t, float *row) {
  size_t I = r->m->cfg.inter;
  uint32_t pos = token_pos(lc, t);
  int32_t li = (int32_t)lc->l;
  tl_status st = emit(r, TL_QWEN3_STAGE_GATE, li, pos, lc->gate + t * I, I, false);
  (void)b;
  if (st == TL_OK) st = emit(r, TL_QWEN3_STAGE_UP, li, pos, lc->up + t * I, I, false);
  if (st == TL_OK) st = silu_up(r, lc->l, lc->gate + t * I, lc->up + t * I, row, pos);
  return st;
}

static tl_status step_after_down(const run *r, bufs *b, const layer_ctx *lc, size_t t,
                                 float *row) {
  size_t H = r->m->cfg.hidden;
  (void)row;
  return after_down(r, lc->l, b->x + t * H, lc->h + t * H, token_pos(lc, t));
}

/* Each token's rope angles at its position and its embedding row into
 * b->x (checked and captured). */
static tl_status embed_tokens(const run *r, bufs *b, const layer_ctx *lc, const uint32_t *ids,
                              size_t n) {
  const tl_qwen3_config *c = &r->m->cfg;
  tl_status st = TL_OK;
  for (size_t t = 0; t < n; t++) rope_angles(r->m, token_pos(lc, t), b->rope + t * c->head_dim);
  for (size_t t = 0; t < n && st == TL_OK; t++) {
    st = weight_row(&r->m->embed, ids[t], b->x + t * c->hidden);
    if (st == TL_OK)
      st = emit(r, TL_QWEN3_STAGE_EMBEDDING, -1, token_pos(lc, t), b->x + t * c->hidden,
                c->hidden, false);
  }
  return st;
}

/* Attention for the rows of a fast_layer call (one token of each of n
 * sequences): each token's is the one-token decode's, over its own cache
 * (attend with its keys). */
static tl_status attend_rows(const run *r, bufs *b, const layer_ctx *lc, size_t n, float *at) {
  size_t qd = (size_t)r->m->cfg.heads * r->m->cfg.head_dim;
  tl_status st = TL_OK;
  for (size_t t = 0; t < n && st == TL_OK; t++) {
    st = attend(r, b, lc->caches[t], lc->l, b->q + t * qd, lc->pos[t], lc->pos[t] + 1);
    memcpy(at + t * qd, b->attn, qd * sizeof(float));
  }
  return st;
}

/* One layer of the fast lane for the call's n tokens (base: their caches
 * and positions): the same per-token operations as
 * project/attend/finish_layer, but each group of products that share
 * inputs (q/k/v, o, gate/up, down) is one parallel call over every token,
 * so that each weight tile is read once per call (F-8), and the per-token
 * steps between them are split between the threads by token. */
static tl_status fast_layer(const run *r, bufs *b, const layer_ctx *base, uint32_t l, size_t n,
                            uint32_t keys) {
  const tl_qwen3 *m = r->m;
  const tl_qwen3_config *c = &m->cfg;
  const tl_qwen3_layer *L = &m->layers[l];
  size_t H = c->hidden, I = c->inter, qd = (size_t)c->heads * c->head_dim;
  size_t kd = (size_t)c->kv_heads * c->head_dim;
  layer_ctx lc = *base;
  float *at;
  tl_status st;
  lc.l = l;
  lc.xn = b->fx;
  lc.k = lc.xn + n * H;
  lc.v = lc.k + n * kd;
  at = lc.v + n * kd;
  lc.h = at + n * qd;
  lc.gate = lc.h + n * H;
  lc.up = lc.gate + n * I;
  st = per_token(r, b, &lc, n, step_attn_norm);
  if (st == TL_OK) {
    const tl_qwen3_weight *ws[3] = {&L->q, &L->k, &L->v};
    float *ys[3] = {b->q, lc.k, lc.v};
    st = fast_matmul(r, b, ws, 3, lc.xn, n, ys);
    if (st == TL_OK) st = per_token(r, b, &lc, n, step_project);
  }
  if (st == TL_OK)
    st = lc.caches != NULL ? attend_rows(r, b, &lc, n, at)
                           : attend_all(r, b, lc.cache, l, n, lc.pos0, keys, at);
  if (st == TL_OK) {
    const tl_qwen3_weight *w = &L->o;
    st = fast_matmul(r, b, &w, 1, at, n, &lc.h);
    if (st == TL_OK) st = per_token(r, b, &lc, n, step_after_o);
  }
  if (st == TL_OK) {
    const tl_qwen3_weight *ws[2] = {&L->gate, &L->up};
    float *ys[2] = {lc.gate, lc.up};
    st = fast_matmul(r, b, ws, 2, lc.xn, n, ys);
    if (st == TL_OK) st = per_token(r, b, &lc, n, step_act);
  }
  if (st == TL_OK) {
    const tl_qwen3_weight *w = &L->down;
    st = fast_matmul(r, b, &w, 1, lc.gate, n, &lc.h);
    if (st == TL_OK) st = per_token(r, b, &lc, n, step_after_down);
  }
  return st;
}

tl_status tl_qwen3_forward(const tl_qwen3 *m, tl_qwen3_cache *cache,
                           const uint32_t *ids, size_t n, float *logits,
                           const tl_qwen3_capture *cap, tl_arena *scratch,
                           tl_qwen3_fault *fault) {
  const tl_qwen3_config *c;
  tl_arena_mark mark;
  run r;
  bufs b;
  layer_ctx lc;
  uint32_t pos0, keys;
  size_t qd;
  tl_status st = TL_OK;
  if (m == NULL || cache == NULL || (ids == NULL && n != 0) || scratch == NULL)
    return TL_ERR_INVALID_ARGUMENT;
  c = &m->cfg;
  pos0 = cache->len;
  if (n == 0) return TL_OK;
  /* cache->len <= capacity always; positions run to max_positions - 1. */
  if (pos0 >= c->max_positions || n > c->max_positions - pos0 ||
      n > cache->capacity - pos0)
    return TL_ERR_CONTEXT_EXCEEDED;
  for (size_t t = 0; t < n; t++)
    if (ids[t] >= c->vocab) return TL_ERR_INVALID_ARGUMENT;
  if (m->fast != NULL && !fast_ready(m)) return TL_ERR_INVALID_ARGUMENT;
  /* a cache made for the other lane (F-11: binary16 rows on the fast) */
  if ((m->fast != NULL) != (cache->k16 != NULL)) return TL_ERR_INVALID_ARGUMENT;
  keys = pos0 + (uint32_t)n;
  qd = (size_t)c->heads * c->head_dim;
  r.m = m;
  r.cap = cap;
  r.fault = fault;
  mark = tl_arena_mark_now(scratch);
  st = alloc_bufs(m, n, keys, scratch, &b);
  if (st != TL_OK) goto done;
  b.pos0 = pos0;
  memset(&lc, 0, sizeof lc);
  lc.cache = cache;
  lc.pos0 = pos0;
  st = embed_tokens(&r, &b, &lc, ids, n);
  for (uint32_t l = 0; l < c->layers && st == TL_OK; l++) {
    if (m->fast != NULL) {
      st = fast_layer(&r, &b, &lc, l, n, keys);
      continue;
    }
    for (size_t t = 0; t < n && st == TL_OK; t++)
      st = project(&r, &b, cache, l, b.x + t * c->hidden, pos0 + (uint32_t)t,
                   b.q + t * qd);
    for (size_t t = 0; t < n && st == TL_OK; t++) {
      st = attend(&r, &b, cache, l, b.q + t * qd, pos0 + (uint32_t)t, keys);
      if (st == TL_OK)
        st = finish_layer(&r, &b, l, b.x + t * c->hidden, pos0 + (uint32_t)t);
    }
  }
  if (st == TL_OK) {
    void *p;
    st = tl_arena_alloc_array(scratch, c->vocab, sizeof(float), 64, &p);
    b.logits = p;
  }
  for (size_t t = 0; t < n && st == TL_OK; t++) {
    uint32_t pos = pos0 + (uint32_t)t;
    bool last = t + 1 == n;
    st = rmsnorm(&m->final_norm, b.x + t * c->hidden, b.xn, c->hidden,
                 (m->mutations & TL_QWEN3_MUT_RMS_EPS) ? 1e-5f : c->rms_eps, b.row);
    if (st == TL_OK) st = emit(&r, TL_QWEN3_STAGE_FINAL_NORM, -1, pos, b.xn, c->hidden, false);
    if (st != TL_OK || !(last || wanted(&r, TL_QWEN3_STAGE_LOGITS, -1, pos)))
      continue;
    st = mv(&r, &b, &m->lm_head, b.xn, b.logits);
    if (st == TL_OK) st = emit(&r, TL_QWEN3_STAGE_LOGITS, -1, pos, b.logits, c->vocab, false);
    if (st == TL_OK && last && logits != NULL)
      memcpy(logits, b.logits, c->vocab * sizeof(float));
  }
  if (st == TL_OK) cache->len = keys;
done:
  tl_arena_rewind(scratch, mark);
  return st;
}

size_t tl_qwen3_rows_scratch_bound(const tl_qwen3 *m, size_t n, uint32_t keys) {
  size_t bound = tl_qwen3_scratch_bound(m, n, keys), logits;
  if (bound == SIZE_MAX || tl_mul_size(n, (size_t)m->cfg.vocab * sizeof(float), &logits) != TL_OK ||
      logits > SIZE_MAX - 64 - bound)
    return SIZE_MAX;
  return bound + logits + 64;
}

tl_status tl_qwen3_forward_rows(const tl_qwen3 *m, tl_qwen3_cache *const *caches,
                                const uint32_t *ids, size_t n, float *const *logits,
                                tl_arena *scratch, tl_qwen3_fault *fault) {
  const tl_qwen3_config *c;
  tl_arena_mark mark;
  run r;
  bufs b;
  layer_ctx lc;
  uint32_t *pos;
  float *rows = NULL;
  uint32_t keys = 0;
  void *p = NULL;
  tl_status st;
  if (m == NULL || (n != 0 && (caches == NULL || ids == NULL || logits == NULL)) ||
      scratch == NULL)
    return TL_ERR_INVALID_ARGUMENT;
  c = &m->cfg;
  for (size_t t = 0; t < n; t++) {
    const tl_qwen3_cache *ct = caches[t];
    if (ct == NULL || logits[t] == NULL) return TL_ERR_INVALID_ARGUMENT;
    for (size_t u = 0; u < t; u++) /* each sequence once: a row writes its cache */
      if (caches[u] == ct) return TL_ERR_INVALID_ARGUMENT;
    if (ct->len >= c->max_positions || ct->len >= ct->capacity) return TL_ERR_CONTEXT_EXCEEDED;
    if (ids[t] >= c->vocab) return TL_ERR_INVALID_ARGUMENT;
    if (ct->len + 1 > keys) keys = ct->len + 1;
  }
  /* The strict lane reads each weight row per token anyway: one call per
   * sequence is its computation. */
  if (m->fast == NULL || n <= 1) {
    for (size_t t = 0; t < n; t++) {
      st = tl_qwen3_forward(m, caches[t], &ids[t], 1, logits[t], NULL, scratch, fault);
      if (st != TL_OK) return st;
    }
    return TL_OK;
  }
  if (!fast_ready(m)) return TL_ERR_INVALID_ARGUMENT;
  for (size_t t = 0; t < n; t++)
    if (caches[t]->k16 == NULL) return TL_ERR_INVALID_ARGUMENT; /* a strict lane's cache */
  r.m = m;
  r.cap = NULL;
  r.fault = fault;
  mark = tl_arena_mark_now(scratch);
  st = alloc_bufs(m, n, keys, scratch, &b);
  if (st == TL_OK) st = tl_arena_alloc_array(scratch, n, sizeof *pos, 64, &p);
  pos = p;
  if (st == TL_OK) st = tl_arena_alloc_array(scratch, n * c->vocab, sizeof(float), 64, &p);
  rows = p;
  if (st != TL_OK) goto done;
  memset(&lc, 0, sizeof lc);
  lc.caches = caches;
  lc.pos = pos;
  for (size_t t = 0; t < n; t++) pos[t] = caches[t]->len;
  st = embed_tokens(&r, &b, &lc, ids, n);
  for (uint32_t l = 0; l < c->layers && st == TL_OK; l++) st = fast_layer(&r, &b, &lc, l, n, keys);
  /* the final norm of every row, then lm_head over all of them at once */
  for (size_t t = 0; t < n && st == TL_OK; t++) {
    float *xn = b.fx + t * c->hidden;
    st = rmsnorm(&m->final_norm, b.x + t * c->hidden, xn, c->hidden,
                 (m->mutations & TL_QWEN3_MUT_RMS_EPS) ? 1e-5f : c->rms_eps, b.row);
    if (st == TL_OK) st = emit(&r, TL_QWEN3_STAGE_FINAL_NORM, -1, pos[t], xn, c->hidden, false);
  }
  if (st == TL_OK) {
    const tl_qwen3_weight *w = &m->lm_head;
    st = fast_matmul(&r, &b, &w, 1, b.fx, n, &rows);
  }
  for (size_t t = 0; t < n && st == TL_OK; t++)
    st = emit(&r, TL_QWEN3_STAGE_LOGITS, -1, pos[t], rows + t * c->vocab, c->vocab, false);
  if (st == TL_OK)
    for (size_t t = 0; t < n; t++) {
      memcpy(logits[t], rows + t * c->vocab, c->vocab * sizeof(float));
      caches[t]->len = pos[t] + 1;
    }
done:
  tl_arena_rewind(scratch, mark);
  return st;
}
