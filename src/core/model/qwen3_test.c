/* The scalar Qwen3 forward pass on seeded synthetic artifacts
 * (tests/support/model_gen), in every stored dtype: prefill and decode
 * give the same bits, the context and vocabulary limits are typed errors
 * that change nothing, a planted NaN is located exactly, the capture sees
 * every stage of docs/golden.md in order with the documented masking, each
 * mutation switch changes the logits, and a one-layer one-token pass
 * computed here with plain loops gives the same bits. Freestanding, so it
 * runs natively and in wasm32. */
#include "model/qwen3.h"

#include <string.h>

#include "bytes.h"
#include "hash/blake3.h"
#include "math/detmath.h"
#include "model/model_gen.h"
#include "tl_test.h"

#define MODEL_CAP (256u << 10)
#define ARENA_CAP (512u << 10)
#define SCRATCH_CAP (512u << 10)
#define MAX_VOCAB 64
#define MAX_KEYS 64

static _Alignas(64) uint8_t model_buf[MODEL_CAP];
static _Alignas(64) uint8_t arena_mem[ARENA_CAP];
static _Alignas(64) uint8_t scratch_mem[SCRATCH_CAP];

static const tl_qtype all_types[] = {TL_QTYPE_F32, TL_QTYPE_F16,
                                     TL_QTYPE_BF16, TL_QTYPE_Q8, TL_QTYPE_Q4};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

static const char *type_name(tl_qtype q) {
  static const char *const names[] = {"f32", "f16", "bf16", "q8", "q4"};
  return (unsigned)q < 5 ? names[q] : "?";
}

typedef struct fixture {
  tl_model_gen g;
  size_t len;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_qwen3 m;
  tl_arena arena;   /* model tables and caches */
  tl_arena scratch; /* builder scratch, then forward scratch */
} fixture;

/* Builds g into model_buf and opens it (eager, as the CLI does). */
static bool setup(tl_test_ctx *t, fixture *f, const tl_model_gen *g) {
  memset(f, 0, sizeof *f);
  f->g = *g;
  tl_arena_init(&f->arena, arena_mem, ARENA_CAP);
  tl_arena_init(&f->scratch, scratch_mem, SCRATCH_CAP);
  if (!TL_EXPECT_OK(t, tl_model_gen_build(g, model_buf, MODEL_CAP, &f->scratch,
                                          &f->len)))
    return false;
  return TL_EXPECT_OK(t, tl_model_gen_open(model_buf, f->len, &f->slm, &f->ts,
                                           &f->m, &f->arena));
}

static bool new_cache(tl_test_ctx *t, fixture *f, tl_qwen3_cache *c,
                      uint32_t capacity) {
  return TL_EXPECT_OK(t, tl_qwen3_cache_init(c, &f->m, capacity, &f->arena));
}

static tl_status fwd(fixture *f, tl_qwen3_cache *c, const uint32_t *ids,
                     size_t n, float *logits) {
  return tl_qwen3_forward(&f->m, c, ids, n, logits, NULL, &f->scratch, NULL);
}

static void prompt_ids(uint32_t *ids, size_t n, uint32_t vocab, uint64_t seed) {
  tl_test_rng rng = {seed};
  for (size_t i = 0; i < n; i++) ids[i] = (uint32_t)(tl_test_rng_next(&rng) % vocab);
}


static bool all_finite(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(x[i] - x[i] == 0.0f)) return false;
  return true;
}

/* ------------------------------------------------------------------------ */

static void generated_artifact_is_valid_and_deterministic(tl_test_ctx *t) {
  for (size_t d = 0; d < N_TYPES; d++) {
    for (int tie = 0; tie < 2; tie++) {
      fixture f;
      tl_model_gen g = tl_model_gen_tiny(all_types[d], 11);
      tl_slm lazy;
      tl_slm_tensors lazy_ts;
      tl_slm_tensor lm;
      uint8_t digest[32];
      g.tie = tie != 0;
      if (!setup(t, &f, &g)) return;
      TL_EXPECT_EQ_U64(t, tl_model_gen_size(&g, &f.scratch), f.len);
      TL_EXPECT_EQ_U64(t, f.ts.n, 2 + (tie ? 0 : 1) + 11 * g.layers);
      TL_EXPECT_EQ_U64(t, f.m.cfg.vocab, 64);
      TL_EXPECT_EQ_U64(t, f.m.cfg.max_positions, 64);
      TL_EXPECT(t, f.m.cfg.rms_eps == 1e-6f);
      TL_EXPECT(t, f.m.cfg.rope_theta == 1000000.0);
      TL_EXPECT_EQ_U64(t, f.m.layers[1].q.type, all_types[d]);
      TL_EXPECT_EQ_U64(t, f.m.layers[1].q_norm.type, TL_QTYPE_F32);
      TL_EXPECT_STATUS(t, tl_slm_tensor_find(&f.ts, "lm_head.weight", 14, &lm),
                       tie ? TL_ERR_BOUNDS : TL_OK);
      TL_EXPECT(t, (f.m.lm_head.data == f.m.embed.data) == (tie != 0));
      /* Lazy open, then every tensor verifies on demand. */
      TL_EXPECT_OK(t, tl_slm_open(&lazy, model_buf, f.len, TL_SLM_VERIFY_LAZY, NULL));
      TL_EXPECT_OK(t, tl_slm_tensors_open(&lazy_ts, &lazy, TL_SLM_VERIFY_LAZY, NULL));
      for (size_t i = 0; i < lazy_ts.n; i++) {
        tl_slm_tensor x;
        TL_EXPECT_OK(t, tl_slm_tensor_at(&lazy_ts, i, &x));
        TL_EXPECT_OK(t, tl_slm_tensor_verify(&x));
      }
      /* Same inputs, same bytes; another seed, other weights. */
      TL_EXPECT_OK(t, tl_blake3(model_buf, f.len, digest));
      {
        static uint8_t again[MODEL_CAP];
        size_t len2;
        TL_EXPECT_OK(t, tl_model_gen_build(&g, again, sizeof again, &f.scratch, &len2));
        TL_EXPECT_EQ_U64(t, len2, f.len);
        TL_EXPECT(t, memcmp(again, model_buf, f.len) == 0);
        g.seed = 12;
        TL_EXPECT_OK(t, tl_model_gen_build(&g, again, sizeof again, &f.scratch, &len2));
        TL_EXPECT(t, memcmp(again, model_buf, f.len) != 0);
        TL_EXPECT_STATUS(t, tl_model_gen_build(&g, again, f.len - 1, &f.scratch, &len2),
                         TL_ERR_BOUNDS);
      }
    }
  }
}

/* (a) One prefill call, one call per token and two chunks give the same
 * last logits and the same KV cache bits. */
static void prefill_equals_token_by_token(tl_test_ctx *t) {
  for (size_t d = 0; d < N_TYPES; d++) {
    fixture f;
    tl_model_gen g = tl_model_gen_tiny(all_types[d], 7 + d);
    tl_qwen3_cache one, steps, chunks;
    uint32_t ids[9];
    float a[MAX_VOCAB], b[MAX_VOCAB], c[MAX_VOCAB];
    bool distinct = false;
    if (!setup(t, &f, &g) || !new_cache(t, &f, &one, 16) ||
        !new_cache(t, &f, &steps, 16) || !new_cache(t, &f, &chunks, 16))
      return;
    prompt_ids(ids, 9, g.vocab, 100 + d);
    if (!TL_EXPECT_OK(t, fwd(&f, &one, ids, 9, a))) return;
    for (size_t i = 0; i < 9; i++)
      if (!TL_EXPECT_OK(t, fwd(&f, &steps, ids + i, 1, b))) return;
    TL_EXPECT_OK(t, fwd(&f, &chunks, ids, 5, c));
    TL_EXPECT_OK(t, fwd(&f, &chunks, ids + 5, 4, c));
    TL_EXPECT_EQ_U64(t, one.len, 9);
    TL_EXPECT_EQ_U64(t, steps.len, 9);
    TL_EXPECT_EQ_U64(t, chunks.len, 9);
    if (!TL_EXPECT(t, memcmp(a, b, sizeof a) == 0) ||
        !TL_EXPECT(t, memcmp(a, c, sizeof a) == 0))
      tl_test_print(t, type_name(all_types[d]));
    TL_EXPECT(t, tl_model_gen_same_cache(&one, &steps, f.m.cfg.layers, 9));
    TL_EXPECT(t, tl_model_gen_same_cache(&one, &chunks, f.m.cfg.layers, 9));
    /* The logits are not degenerate. */
    TL_EXPECT(t, all_finite(a, g.vocab));
    for (size_t i = 1; i < g.vocab; i++) distinct |= a[i] != a[0];
    TL_EXPECT(t, distinct);
    /* A NULL logits pointer is allowed and changes nothing else. */
    {
      tl_qwen3_cache n;
      if (!new_cache(t, &f, &n, 16)) return;
      TL_EXPECT_OK(t, fwd(&f, &n, ids, 9, NULL));
      TL_EXPECT(t, tl_model_gen_same_cache(&one, &n, f.m.cfg.layers, 9));
    }
  }
}

/* (b) Past the cache capacity or max_position_embeddings: refused, the
 * cache unchanged; up to the limit exactly: accepted. */
static void context_limits_are_refused(tl_test_ctx *t) {
  for (size_t d = 0; d < N_TYPES; d++) {
    fixture f;
    tl_model_gen g = tl_model_gen_tiny(all_types[d], 3);
    tl_qwen3_cache c;
    uint32_t ids[12];
    float lg[MAX_VOCAB];
    g.max_positions = 10;
    if (!setup(t, &f, &g)) return;
    prompt_ids(ids, 12, g.vocab, 5);
    /* Capacity 8 < max_positions 10. */
    if (!new_cache(t, &f, &c, 8)) return;
    TL_EXPECT_STATUS(t, fwd(&f, &c, ids, 9, lg), TL_ERR_CONTEXT_EXCEEDED);
    TL_EXPECT_EQ_U64(t, c.len, 0);
    TL_EXPECT_OK(t, fwd(&f, &c, ids, 6, lg));
    TL_EXPECT_STATUS(t, fwd(&f, &c, ids, 3, lg), TL_ERR_CONTEXT_EXCEEDED);
    TL_EXPECT_EQ_U64(t, c.len, 6);
    TL_EXPECT_OK(t, fwd(&f, &c, ids, 2, lg));
    TL_EXPECT_EQ_U64(t, c.len, 8);
    TL_EXPECT_STATUS(t, fwd(&f, &c, ids, 1, lg), TL_ERR_CONTEXT_EXCEEDED);
    TL_EXPECT_EQ_U64(t, c.len, 8);
    TL_EXPECT_OK(t, fwd(&f, &c, ids, 0, lg)); /* nothing to do */
    /* Capacity 32 > max_positions 10. */
    if (!new_cache(t, &f, &c, 32)) return;
    TL_EXPECT_STATUS(t, fwd(&f, &c, ids, 11, lg), TL_ERR_CONTEXT_EXCEEDED);
    TL_EXPECT_EQ_U64(t, c.len, 0);
    TL_EXPECT_OK(t, fwd(&f, &c, ids, 9, lg));
    TL_EXPECT_STATUS(t, fwd(&f, &c, ids, 2, lg), TL_ERR_CONTEXT_EXCEEDED);
    TL_EXPECT_EQ_U64(t, c.len, 9);
    TL_EXPECT_OK(t, fwd(&f, &c, ids, 1, lg));
    TL_EXPECT_EQ_U64(t, c.len, 10);
    TL_EXPECT_STATUS(t, fwd(&f, &c, ids, 1, lg), TL_ERR_CONTEXT_EXCEEDED);
    TL_EXPECT_EQ_U64(t, c.len, 10);
  }
}

/* (c) An id outside the vocabulary, anywhere in the batch. */
static void out_of_vocab_id_is_refused(tl_test_ctx *t) {
  for (size_t d = 0; d < N_TYPES; d++) {
    fixture f;
    tl_model_gen g = tl_model_gen_tiny(all_types[d], 4);
    tl_qwen3_cache c;
    uint32_t ids[4] = {1, 2, 63, 64};
    float lg[MAX_VOCAB];
    if (!setup(t, &f, &g) || !new_cache(t, &f, &c, 16)) return;
    TL_EXPECT_STATUS(t, fwd(&f, &c, ids, 4, lg), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_EQ_U64(t, c.len, 0);
    TL_EXPECT_OK(t, fwd(&f, &c, ids, 3, lg)); /* 63 is the last id */
    TL_EXPECT_STATUS(t, fwd(&f, &c, ids + 3, 1, lg), TL_ERR_INVALID_ARGUMENT);
    ids[3] = UINT32_MAX;
    TL_EXPECT_STATUS(t, fwd(&f, &c, ids + 3, 1, lg), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_EQ_U64(t, c.len, 3);
    TL_EXPECT_STATUS(t, fwd(&f, NULL, ids, 1, lg), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_STATUS(t, fwd(&f, &c, NULL, 1, lg), TL_ERR_INVALID_ARGUMENT);
  }
}

/* (d) A NaN planted in a stored q_proj weight (after the digests were
 * checked at open) is reported at stage q, with its layer, position and
 * index (the weight's row); the cache keeps its length. In q8/q4 a NaN
 * can only sit in a block scale, which is a malformed stored tensor
 * (quant.md Q-17): TL_ERR_INVALID_MODEL. */
static void planted_nan_is_located(tl_test_ctx *t) {
  for (size_t d = 0; d < N_TYPES; d++) {
    fixture f;
    tl_qtype q = all_types[d];
    tl_model_gen g = tl_model_gen_tiny(q, 9);
    tl_qwen3_cache c;
    tl_slm_tensor w;
    tl_qwen3_fault fault;
    uint32_t ids[5];
    float lg[MAX_VOCAB];
    size_t row = 13, col = 5, row_bytes, at;
    uint8_t saved[4];
    uint8_t *p;
    if (!setup(t, &f, &g) || !new_cache(t, &f, &c, 16)) return;
    prompt_ids(ids, 5, g.vocab, 17);
    if (!TL_EXPECT_OK(t, tl_slm_tensor_find(&f.ts, "model.layers.1.self_attn.q_proj.weight",
                                            38, &w)))
      return;
    TL_EXPECT_OK(t, tl_quant_row_bytes(q, w.n, &row_bytes));
    p = model_buf + (w.data - model_buf); /* the caller's writable bytes */
    at = row * row_bytes;
    switch (q) {
      case TL_QTYPE_F32: at += 4 * col; break;
      case TL_QTYPE_F16:
      case TL_QTYPE_BF16: at += 2 * col; break;
      default: break; /* the scale of the row's first block */
    }
    memcpy(saved, p + at, 4);
    TL_EXPECT_OK(t, fwd(&f, &c, ids, 2, lg));
    switch (q) {
      case TL_QTYPE_F32: tl_store_le32(p + at, 0x7fc00000u); break;
      case TL_QTYPE_F16: tl_store_le16(p + at, 0x7e00u); break;
      case TL_QTYPE_BF16: tl_store_le16(p + at, 0x7fc0u); break;
      default: tl_store_le32(p + at, 0x7fc00000u); break;
    }
    memset(&fault, 0xAB, sizeof fault);
    if (q == TL_QTYPE_Q8 || q == TL_QTYPE_Q4) {
      TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &c, ids + 2, 3, lg, NULL,
                                           &f.scratch, &fault),
                       TL_ERR_INVALID_MODEL);
    } else {
      TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &c, ids + 2, 3, lg, NULL,
                                           &f.scratch, &fault),
                       TL_ERR_NUMERICAL_FAILURE);
      TL_EXPECT_EQ_U64(t, fault.stage, TL_QWEN3_STAGE_Q);
      TL_EXPECT_EQ_I64(t, fault.layer, 1);
      TL_EXPECT_EQ_U64(t, fault.pos, 2);
      TL_EXPECT_EQ_U64(t, fault.index, row);
    }
    TL_EXPECT_EQ_U64(t, c.len, 2);
    /* Restored, the same call goes through (the scratch was rewound). */
    memcpy(p + at, saved, 4);
    TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &c, ids + 2, 3, lg, NULL, &f.scratch, &fault));
    TL_EXPECT_EQ_U64(t, c.len, 5);
    TL_EXPECT_EQ_U64(t, f.scratch.used, 0);
  }
  /* A NaN in an f32 norm weight: the first stage it reaches. */
  {
    fixture f;
    tl_model_gen g = tl_model_gen_tiny(TL_QTYPE_F32, 9);
    tl_qwen3_cache c;
    tl_slm_tensor w;
    tl_qwen3_fault fault;
    uint32_t ids[3] = {1, 2, 3};
    if (!setup(t, &f, &g) || !new_cache(t, &f, &c, 16)) return;
    if (!TL_EXPECT_OK(t, tl_slm_tensor_find(&f.ts, "model.layers.0.post_attention_layernorm.weight",
                                            46, &w)))
      return;
    tl_store_le32(model_buf + (w.data - model_buf) + 4 * 7, 0xff800000u); /* -inf */
    TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &c, ids, 3, NULL, NULL, &f.scratch, &fault),
                     TL_ERR_NUMERICAL_FAILURE);
    TL_EXPECT_EQ_U64(t, fault.stage, TL_QWEN3_STAGE_MLP_NORM);
    TL_EXPECT_EQ_I64(t, fault.layer, 0);
    TL_EXPECT_EQ_U64(t, fault.pos, 0);
    TL_EXPECT_EQ_U64(t, fault.index, 7);
    TL_EXPECT_EQ_U64(t, c.len, 0);
  }
}

/* ------------------------------------------------------------------------ */
/* (e) The capture                                                          */

typedef struct capture_log {
  const tl_qwen3 *m;
  const tl_qwen3_cache *cache;
  uint32_t keys;       /* cached keys after the current call */
  uint32_t pos0;       /* first position of the current call */
  int32_t max_layer;   /* highest layer seen so far (order of layers) */
  bool final_seen;     /* a final_norm or logits row came */
  /* next expected stage per (layer + 1, position) */
  uint8_t next[8][MAX_KEYS];
  unsigned events, bad_order, bad_len, bad_mask, bad_probs, bad_cache;
  double worst_sum_err;
} capture_log;

static size_t stage_len(const tl_qwen3 *m, tl_qwen3_stage s, uint32_t keys) {
  const tl_qwen3_config *c = &m->cfg;
  size_t qd = (size_t)c->heads * c->head_dim, kd = (size_t)c->kv_heads * c->head_dim;
  switch (s) {
    case TL_QWEN3_STAGE_Q:
    case TL_QWEN3_STAGE_Q_NORM:
    case TL_QWEN3_STAGE_Q_ROPE:
    case TL_QWEN3_STAGE_ATTN_OUT: return qd;
    case TL_QWEN3_STAGE_K:
    case TL_QWEN3_STAGE_V:
    case TL_QWEN3_STAGE_K_NORM:
    case TL_QWEN3_STAGE_K_ROPE: return kd;
    case TL_QWEN3_STAGE_SCORES:
    case TL_QWEN3_STAGE_SCORES_MASKED:
    case TL_QWEN3_STAGE_PROBS: return (size_t)c->heads * keys;
    case TL_QWEN3_STAGE_GATE:
    case TL_QWEN3_STAGE_UP:
    case TL_QWEN3_STAGE_ACT: return c->inter;
    case TL_QWEN3_STAGE_LOGITS: return c->vocab;
    default: return c->hidden;
  }
}

static void log_row(void *ctx, tl_qwen3_stage s, int32_t layer, uint32_t pos,
                    const float *x, size_t n) {
  capture_log *g = ctx;
  const tl_qwen3 *m = g->m;
  uint32_t heads = m->cfg.heads, keys = g->keys;
  g->events++;
  if (n != stage_len(m, s, keys)) g->bad_len++;
  if (pos < g->pos0 || pos >= keys || layer < -1 || layer >= 7) {
    g->bad_order++;
    return;
  }
  /* Order: per (layer, position) the stages of docs/golden.md one after
   * the other; layers in ascending order; embedding before and
   * final_norm, logits after every layer. */
  if (layer == -1) {
    uint8_t *nx = &g->next[0][pos];
    if (s == TL_QWEN3_STAGE_EMBEDDING) {
      if (*nx != TL_QWEN3_STAGE_EMBEDDING || g->max_layer >= 0) g->bad_order++;
      *nx = TL_QWEN3_STAGE_FINAL_NORM;
    } else if (s == TL_QWEN3_STAGE_FINAL_NORM || s == TL_QWEN3_STAGE_LOGITS) {
      if (*nx != s || g->max_layer != (int32_t)m->cfg.layers - 1) g->bad_order++;
      *nx = (uint8_t)(s + 1);
      g->final_seen = true;
    } else {
      g->bad_order++;
    }
  } else {
    uint8_t *nx = &g->next[layer + 1][pos];
    if (s < TL_QWEN3_STAGE_ATTN_NORM || s > TL_QWEN3_STAGE_LAYER_OUT ||
        *nx != s || layer < g->max_layer || g->final_seen)
      g->bad_order++;
    *nx = (uint8_t)(s + 1);
    if (layer > g->max_layer) g->max_layer = layer;
  }
  if (s == TL_QWEN3_STAGE_SCORES_MASKED) {
    for (uint32_t h = 0; h < heads; h++)
      for (uint32_t j = 0; j < keys; j++) {
        float v = x[h * keys + j];
        bool ok = j > pos ? tl_f32_to_bits(v) == 0xff800000u : v - v == 0.0f;
        if (!ok) g->bad_mask++;
      }
  }
  if (s == TL_QWEN3_STAGE_SCORES) {
    for (size_t i = 0; i < n; i++)
      if (!(x[i] - x[i] == 0.0f)) g->bad_mask++;
  }
  if (s == TL_QWEN3_STAGE_PROBS) {
    for (uint32_t h = 0; h < heads; h++) {
      double sum = 0, err;
      for (uint32_t j = 0; j < keys; j++) {
        float v = x[h * keys + j];
        if (j > pos ? tl_f32_to_bits(v) != 0 : !(v > 0.0f && v <= 1.0f))
          g->bad_probs++;
        sum += v;
      }
      err = sum > 1 ? sum - 1 : 1 - sum;
      if (err > g->worst_sum_err) g->worst_sum_err = err;
    }
  }
}

/* Keeps the K_ROPE / V rows to compare with the cache after the call. */
typedef struct kv_keep {
  capture_log log;
  float k[2][MAX_KEYS][16], v[2][MAX_KEYS][16];
  float masked[2][MAX_KEYS][4 * MAX_KEYS], raw[2][MAX_KEYS][4 * MAX_KEYS];
} kv_keep;

static void keep_row(void *ctx, tl_qwen3_stage s, int32_t layer, uint32_t pos,
                     const float *x, size_t n) {
  kv_keep *k = ctx;
  log_row(ctx, s, layer, pos, x, n);
  if (layer < 0 || layer > 1 || pos >= MAX_KEYS) return;
  if (s == TL_QWEN3_STAGE_K_ROPE && n <= 16) memcpy(k->k[layer][pos], x, n * sizeof *x);
  if (s == TL_QWEN3_STAGE_V && n <= 16) memcpy(k->v[layer][pos], x, n * sizeof *x);
  if (s == TL_QWEN3_STAGE_SCORES && n <= 4 * MAX_KEYS)
    memcpy(k->raw[layer][pos], x, n * sizeof *x);
  if (s == TL_QWEN3_STAGE_SCORES_MASKED && n <= 4 * MAX_KEYS)
    memcpy(k->masked[layer][pos], x, n * sizeof *x);
}

static void capture_sees_every_stage_in_order(tl_test_ctx *t) {
  for (size_t d = 0; d < N_TYPES; d++) {
    fixture f;
    tl_model_gen g = tl_model_gen_tiny(all_types[d], 21);
    tl_qwen3_cache c, plain;
    static kv_keep keep;
    tl_qwen3_capture cap = {NULL, keep_row, &keep};
    uint32_t ids[9];
    float with[MAX_VOCAB], without[MAX_VOCAB];
    const size_t chunk[2] = {5, 4};
    size_t at = 0;
    if (!setup(t, &f, &g) || !new_cache(t, &f, &c, 16) ||
        !new_cache(t, &f, &plain, 16))
      return;
    prompt_ids(ids, 9, g.vocab, 31);
    memset(&keep, 0, sizeof keep);
    keep.log.m = &f.m;
    keep.log.cache = &c;
    for (int call = 0; call < 2; call++) {
      keep.log.pos0 = c.len;
      keep.log.keys = c.len + (uint32_t)chunk[call];
      keep.log.max_layer = -1;
      keep.log.final_seen = false;
      memset(keep.log.next, 0, sizeof keep.log.next); /* 0: embedding */
      for (uint32_t l = 1; l <= g.layers; l++)
        for (size_t p = 0; p < MAX_KEYS; p++)
          keep.log.next[l][p] = TL_QWEN3_STAGE_ATTN_NORM;
      if (!TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &c, ids + at, chunk[call], with,
                                            &cap, &f.scratch, NULL)))
        return;
      /* Every (layer, position) of the call got all its stages. */
      for (uint32_t p = keep.log.pos0; p < keep.log.keys; p++) {
        TL_EXPECT_EQ_U64(t, keep.log.next[0][p], TL_QWEN3_STAGE_COUNT);
        for (uint32_t l = 1; l <= g.layers; l++)
          TL_EXPECT_EQ_U64(t, keep.log.next[l][p], TL_QWEN3_STAGE_LAYER_OUT + 1);
      }
      at += chunk[call];
    }
    /* Per position: 1 embedding + 20 per layer + final_norm + logits. */
    TL_EXPECT_EQ_U64(t, keep.log.events, 9 * (3 + 20 * g.layers));
    TL_EXPECT_EQ_U64(t, keep.log.bad_order, 0);
    TL_EXPECT_EQ_U64(t, keep.log.bad_len, 0);
    TL_EXPECT_EQ_U64(t, keep.log.bad_mask, 0);
    TL_EXPECT_EQ_U64(t, keep.log.bad_probs, 0);
    TL_EXPECT(t, keep.log.worst_sum_err < 1e-6);
    /* Masked scores equal the raw ones on visible keys. */
    for (uint32_t l = 0; l < g.layers; l++)
      for (uint32_t p = 0; p < 9; p++) {
        uint32_t keys = p < 5 ? 5 : 9;
        for (uint32_t h = 0; h < g.heads; h++)
          for (uint32_t j = 0; j <= p; j++)
            if (!TL_EXPECT(t, keep.masked[l][p][h * keys + j] ==
                                  keep.raw[l][p][h * keys + j]))
              return;
      }
    /* The captured K (after rope) and V rows are the cache rows. */
    for (uint32_t l = 0; l < g.layers; l++)
      for (uint32_t p = 0; p < 9; p++)
        for (uint32_t h = 0; h < g.kv_heads; h++) {
          size_t row = tl_qwen3_cache_at(&c, l, h, p);
          TL_EXPECT(t, memcmp(keep.k[l][p] + h * g.head_dim, c.k + row,
                              g.head_dim * sizeof(float)) == 0);
          TL_EXPECT(t, memcmp(keep.v[l][p] + h * g.head_dim, c.v + row,
                              g.head_dim * sizeof(float)) == 0);
        }
    /* Capturing changes no bit. */
    TL_EXPECT_OK(t, fwd(&f, &plain, ids, 9, without));
    TL_EXPECT(t, memcmp(with, without, g.vocab * sizeof(float)) == 0);
    TL_EXPECT(t, tl_model_gen_same_cache(&c, &plain, f.m.cfg.layers, 9));
  }
}

/* A sink that wants only the logits of position 3: the call still returns
 * the last position's logits, and the wanted row is the logits a prefill
 * of ids[0..4) returns. */
typedef struct only_logits {
  float row[MAX_VOCAB];
  unsigned calls, wants;
} only_logits;

static bool want_logits_3(void *ctx, tl_qwen3_stage s, int32_t layer, uint32_t pos) {
  only_logits *o = ctx;
  o->wants++;
  return s == TL_QWEN3_STAGE_LOGITS && layer == -1 && pos == 3;
}

static void take_logits(void *ctx, tl_qwen3_stage s, int32_t layer, uint32_t pos,
                        const float *x, size_t n) {
  only_logits *o = ctx;
  (void)s;
  (void)layer;
  (void)pos;
  o->calls++;
  if (n <= MAX_VOCAB) memcpy(o->row, x, n * sizeof *x);
}

static void capture_of_a_subset(tl_test_ctx *t) {
  fixture f;
  tl_model_gen g = tl_model_gen_tiny(TL_QTYPE_BF16, 23);
  tl_qwen3_cache a, b;
  only_logits o;
  tl_qwen3_capture cap = {want_logits_3, take_logits, &o};
  uint32_t ids[9];
  float last[MAX_VOCAB], four[MAX_VOCAB], all9[MAX_VOCAB];
  memset(&o, 0, sizeof o);
  if (!setup(t, &f, &g) || !new_cache(t, &f, &a, 16) || !new_cache(t, &f, &b, 16))
    return;
  prompt_ids(ids, 9, g.vocab, 41);
  TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &a, ids, 9, last, &cap, &f.scratch, NULL));
  TL_EXPECT_EQ_U64(t, o.calls, 1);
  TL_EXPECT(t, o.wants > 0);
  TL_EXPECT_OK(t, fwd(&f, &b, ids, 4, four));
  TL_EXPECT(t, memcmp(o.row, four, g.vocab * sizeof(float)) == 0);
  TL_EXPECT_OK(t, fwd(&f, &b, ids + 4, 5, all9));
  TL_EXPECT(t, memcmp(last, all9, g.vocab * sizeof(float)) == 0);
}

/* (f) Each mutation switch changes the logits. */
static void each_mutation_changes_the_logits(tl_test_ctx *t) {
  static const uint32_t muts[] = {
      TL_QWEN3_MUT_ROPE_PAIRING,    TL_QWEN3_MUT_NO_Q_NORM,
      TL_QWEN3_MUT_GQA_MAP,         TL_QWEN3_MUT_SOFTMAX_NO_MAX,
      TL_QWEN3_MUT_MASK_OFF_BY_ONE, TL_QWEN3_MUT_RMS_EPS};
  for (size_t d = 0; d < N_TYPES; d++) {
    fixture f;
    tl_model_gen g = tl_model_gen_tiny(all_types[d], 29);
    uint32_t ids[9];
    float base[MAX_VOCAB], mut[MAX_VOCAB];
    tl_qwen3_cache c;
    if (!setup(t, &f, &g) || !new_cache(t, &f, &c, 16)) return;
    prompt_ids(ids, 9, g.vocab, 51);
    if (!TL_EXPECT_OK(t, fwd(&f, &c, ids, 9, base))) return;
    for (size_t i = 0; i < sizeof muts / sizeof muts[0]; i++) {
      c.len = 0;
      f.m.mutations = muts[i];
      TL_EXPECT_OK(t, fwd(&f, &c, ids, 9, mut));
      if (!TL_EXPECT(t, memcmp(base, mut, sizeof base) != 0)) {
        tl_test_print(t, "mutation bit ");
        tl_test_print_u64(t, i);
        tl_test_print(t, " left the logits unchanged\n");
      }
    }
    /* Switched off again: the same bits as before. */
    f.m.mutations = 0;
    c.len = 0;
    TL_EXPECT_OK(t, fwd(&f, &c, ids, 9, mut));
    TL_EXPECT(t, memcmp(base, mut, sizeof base) == 0);
  }
}

/* ------------------------------------------------------------------------ */
/* The hand check                                                           */

/* A whole tensor decoded to f32 (exact for f32/f16/bf16; code * scale for
 * q8/q4, which is what the model multiplies by). */
static float *decode_all(tl_test_ctx *t, const tl_qwen3_weight *w, tl_arena *a) {
  void *p;
  if (!TL_EXPECT_OK(t, tl_arena_alloc_array(a, w->rows * w->n, sizeof(float), 16, &p)) ||
      !TL_EXPECT_OK(t, tl_quant_unpack(w->type, w->data, w->len, w->rows, w->n, p)))
    return NULL;
  return p;
}

static void hand_norm(const float *w, const float *x, float *y, size_t n,
                      float eps) {
  float ss = 0.0f, r;
  for (size_t i = 0; i < n; i++) ss += x[i] * x[i];
  r = 1.0f / __builtin_sqrtf(ss / (float)n + eps);
  for (size_t i = 0; i < n; i++) y[i] = w[i] * (x[i] * r);
}

static void hand_matvec(const float *w, size_t rows, size_t n, const float *x,
                        float *y) {
  for (size_t r = 0; r < rows; r++) {
    float s = 0.0f;
    for (size_t i = 0; i < n; i++) s += w[r * n + i] * x[i];
    y[r] = s;
  }
}

/* One layer, one token: attention over a single key is a softmax of one
 * score, exp(s - s) / exp(s - s) = 1 exactly, so attn_out is that key's V
 * (head h reads kv head h / (A/K)) and q, k, their norms and rope cannot
 * reach the logits. The rest is computed here with plain loops in the
 * lane's documented f32 order (left-to-right dots, the RMSNorm of
 * transformers, silu(g) = g / (1 + e^-g) with the lane's tl_expf), so the
 * logits must be the same bits: the check is exact (memcmp), not a bound. */
static void one_token_by_hand(tl_test_ctx *t) {
  for (size_t d = 0; d < N_TYPES; d++) {
    for (int tie = 0; tie < 2; tie++) {
      fixture f;
      tl_model_gen g = tl_model_gen_tiny(all_types[d], 37 + d);
      const tl_qwen3_layer *L;
      tl_qwen3_cache c;
      float *emb, *an, *vw, *ow, *mn, *gw, *uw, *dw, *fn, *lm;
      float x[32], xn[32], v[16], attn[32], o[32], gate[48], up[48], dn[32];
      float want[MAX_VOCAB], got[MAX_VOCAB];
      uint32_t id = 41;
      size_t D = 8, group;
      float eps;
      g.layers = 1;
      g.tie = tie != 0;
      if (!setup(t, &f, &g) || !new_cache(t, &f, &c, 4)) return;
      L = &f.m.layers[0];
      eps = f.m.cfg.rms_eps;
      group = g.heads / g.kv_heads;
      emb = decode_all(t, &f.m.embed, &f.arena);
      an = decode_all(t, &L->attn_norm, &f.arena);
      vw = decode_all(t, &L->v, &f.arena);
      ow = decode_all(t, &L->o, &f.arena);
      mn = decode_all(t, &L->mlp_norm, &f.arena);
      gw = decode_all(t, &L->gate, &f.arena);
      uw = decode_all(t, &L->up, &f.arena);
      dw = decode_all(t, &L->down, &f.arena);
      fn = decode_all(t, &f.m.final_norm, &f.arena);
      lm = decode_all(t, &f.m.lm_head, &f.arena);
      if (!emb || !an || !vw || !ow || !mn || !gw || !uw || !dw || !fn || !lm) return;
      memcpy(x, emb + (size_t)id * 32, sizeof x);
      hand_norm(an, x, xn, 32, eps);
      hand_matvec(vw, 16, 32, xn, v);
      for (size_t h = 0; h < g.heads; h++)
        for (size_t e = 0; e < D; e++) attn[h * D + e] = v[(h / group) * D + e];
      hand_matvec(ow, 32, 32, attn, o);
      for (size_t i = 0; i < 32; i++) x[i] = x[i] + o[i];
      hand_norm(mn, x, xn, 32, eps);
      hand_matvec(gw, 48, 32, xn, gate);
      hand_matvec(uw, 48, 32, xn, up);
      for (size_t i = 0; i < 48; i++)
        gate[i] = gate[i] / (1.0f + tl_expf(-gate[i])) * up[i];
      hand_matvec(dw, 32, 48, gate, dn);
      for (size_t i = 0; i < 32; i++) x[i] = x[i] + dn[i];
      hand_norm(fn, x, xn, 32, eps);
      hand_matvec(lm, 64, 32, xn, want);
      if (!TL_EXPECT_OK(t, fwd(&f, &c, &id, 1, got))) return;
      if (!TL_EXPECT(t, memcmp(want, got, sizeof want) == 0)) {
        tl_test_print(t, type_name(all_types[d]));
        tl_test_print(t, tie ? " tied\n" : " untied\n");
      }
      /* The cache holds that V row, head by head. */
      for (uint32_t h = 0; h < g.kv_heads; h++)
        TL_EXPECT(t, memcmp(c.v + tl_qwen3_cache_at(&c, 0, h, 0), v + h * D, D * sizeof(float)) == 0);
    }
  }
}

static const tl_test_case cases[] = {
    TL_CASE(generated_artifact_is_valid_and_deterministic),
    TL_CASE(prefill_equals_token_by_token),
    TL_CASE(context_limits_are_refused),
    TL_CASE(out_of_vocab_id_is_refused),
    TL_CASE(planted_nan_is_located),
    TL_CASE(capture_sees_every_stage_in_order),
    TL_CASE(capture_of_a_subset),
    TL_CASE(each_mutation_changes_the_logits),
    TL_CASE(one_token_by_hand),
};
TL_SUITE(qwen3, cases);
