/* The fast lane of the Qwen3 forward pass (docs/fast-profile.md) on seeded
 * synthetic artifacts of every stored dtype, with widths that are not
 * multiples of the block or vector sizes: every kernel variant this CPU
 * runs, at 1, 2, 3 and 7 threads, gives the same logits and KV cache bits
 * (F-7); prefill, chunks and token-by-token decoding agree (F-8); switching
 * back gives the strict lane's bits; invalid q8/q4 bytes are refused when
 * the weights are packed for the lane (F-9); packing in place keeps the
 * strict lane's values; an overflow inside a product is a
 * numerical_failure naming the stage, layer, position and row; a prefill
 * cancelled between chunks leaves only whole chunks in the cache, and
 * resuming or restarting it gives a fresh session's bits; one decode step
 * of several sequences at once (tl_qwen3_forward_rows) gives each the bits
 * of its step alone. */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cpu.h"
#include "gen/generate.h"
#include "model/qwen3.h"
#include "model/model_gen.h"
#include "pool.h"
#include "tl_test.h"
#include "tok/tokenizer.h"
#include "tok_build.h"

#define MODEL_CAP (512u << 10)
#define ARENA_CAP (1u << 20)
#define SCRATCH_CAP (1u << 20)
#define N_IDS 9

static _Alignas(64) uint8_t model_buf[MODEL_CAP];
static _Alignas(64) uint8_t arena_mem[ARENA_CAP];
static _Alignas(64) uint8_t scratch_mem[SCRATCH_CAP];
static _Alignas(64) uint8_t pack_buf[MODEL_CAP]; /* the packed q8/q4 weights */

typedef struct fixture {
  tl_model_gen g;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_qwen3 m;
  tl_arena arena, scratch;
  bool packed;
} fixture;

/* tiny, with odd widths: hidden 40, intermediate 72, heads of 10; tie:
 * the embedding doubles as lm_head. */
static bool setup_tied(tl_test_ctx *t, fixture *f, tl_qtype type, uint64_t seed, bool tie) {
  size_t len;
  memset(f, 0, sizeof *f);
  f->g = tl_model_gen_tiny(type, seed);
  f->g.hidden = 40;
  f->g.inter = 72;
  f->g.head_dim = 10;
  f->g.tie = tie;
  tl_arena_init(&f->arena, arena_mem, ARENA_CAP);
  tl_arena_init(&f->scratch, scratch_mem, SCRATCH_CAP);
  return TL_EXPECT_OK(t, tl_model_gen_build(&f->g, model_buf, MODEL_CAP, &f->scratch, &len)) &&
         TL_EXPECT_OK(t, tl_model_gen_open(model_buf, len, &f->slm, &f->ts, &f->m, &f->arena));
}

static bool setup(tl_test_ctx *t, fixture *f, tl_qtype type, uint64_t seed) {
  return setup_tied(t, f, type, seed, false);
}

/* The fast lane with kernels k: the q8/q4 weights validated and packed
 * into pack_buf the first time (the stored ones stay, for the strict
 * lane). */
static tl_status fast_lane(fixture *f, const tl_kernels *k, const tl_parallel *par) {
  if (!f->packed) {
    tl_status st = tl_qwen3_pack(&f->m, model_buf, MODEL_CAP, pack_buf, par);
    if (st != TL_OK) return st;
    f->packed = true;
  }
  return tl_qwen3_set_lane(&f->m, k, par);
}

static void prompt_ids(const fixture *f, uint32_t *ids) {
  for (size_t i = 0; i < N_IDS; i++) ids[i] = (uint32_t)((i * 37 + 5) % f->m.cfg.vocab);
}

/* The cache's first N_IDS rows of K and V, concatenated, after the vocab
 * logits already in out (the fast lane's binary16 rows as their exact f32
 * values: one f32 per f16, so equal bits either way). */
static size_t snapshot(const fixture *f, const tl_qwen3_cache *c, float *out) {
  size_t d = f->m.cfg.head_dim, at = f->m.cfg.vocab;
  for (uint32_t l = 0; l < f->m.cfg.layers; l++)
    for (uint32_t h = 0; h < f->m.cfg.kv_heads; h++)
      for (int kv = 0; kv < 2; kv++, at += N_IDS * d) {
        size_t row = tl_qwen3_cache_at(c, l, h, 0);
        if (c->k16 != NULL)
          tl_kern_f16_to_f32((kv ? c->v16 : c->k16) + row, N_IDS * d, out + at);
        else
          memcpy(out + at, (kv ? c->v : c->k) + row, N_IDS * d * sizeof(float));
      }
  return at;
}

/* The prompt in chunks of `chunk` tokens (N_IDS: one call); the last
 * logits and the cache's K and V, concatenated, into out. */
static bool run(tl_test_ctx *t, fixture *f, size_t chunk, float *out, size_t *n_out) {
  tl_qwen3_cache c;
  uint32_t ids[N_IDS];
  tl_arena_mark mark = tl_arena_mark_now(&f->arena);
  bool ok;
  prompt_ids(f, ids);
  ok = TL_EXPECT_OK(t, tl_qwen3_cache_init(&c, &f->m, N_IDS, &f->arena));
  for (size_t i = 0; ok && i < N_IDS; i += chunk) {
    size_t n = N_IDS - i < chunk ? N_IDS - i : chunk;
    ok = TL_EXPECT_OK(t, tl_qwen3_forward(&f->m, &c, ids + i, n, out, NULL, &f->scratch, NULL));
  }
  if (ok) *n_out = snapshot(f, &c, out);
  tl_arena_rewind(&f->arena, mark);
  return ok;
}

#define OUT_CAP 4096
static float want[OUT_CAP], got[OUT_CAP];

static void every_variant_and_thread_count(tl_test_ctx *t) {
  static const uint32_t threads[] = {1, 2, 3, 7};
  for (int type = 0; type < 5; type++) {
    fixture f;
    size_t n_want, n_got;
    if (!setup(t, &f, (tl_qtype)type, 40 + (uint64_t)type)) return;
    if (!TL_EXPECT_OK(t, fast_lane(&f, tl_kernels_get(TL_KERN_SCALAR), NULL)) ||
        !run(t, &f, N_IDS, want, &n_want))
      return;
    for (int isa = 0; isa < TL_KERN_ISA_COUNT; isa++) {
      const tl_kernels *k = tl_kernels_get((tl_kern_isa)isa);
      if (k == NULL || !tl_native_kernels_supported((tl_kern_isa)isa)) continue;
      for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
        tl_pool *pool;
        tl_parallel par;
        if (!TL_EXPECT_OK(t, tl_pool_create(threads[ti], &pool))) return;
        par = tl_pool_parallel(pool);
        if (TL_EXPECT_OK(t, fast_lane(&f, k, &par)) && run(t, &f, N_IDS, got, &n_got) &&
            (!TL_EXPECT_EQ_U64(t, n_got, n_want) ||
             !TL_EXPECT_MEM(t, got, want, n_want * sizeof(float)))) {
          tl_test_print(t, "  in variant ");
          tl_test_print(t, k->name);
          tl_test_print(t, " type ");
          tl_test_print_u64(t, (uint64_t)type);
          tl_test_print(t, " threads ");
          tl_test_print_u64(t, threads[ti]);
          tl_test_print(t, "\n");
        }
        tl_pool_destroy(pool);
      }
    }
  }
}

static void prefill_chunks_and_steps_agree(tl_test_ctx *t) {
  for (int type = 0; type < 5; type++) {
    fixture f;
    size_t n_want, n_got;
    if (!setup(t, &f, (tl_qtype)type, 50 + (uint64_t)type) ||
        !TL_EXPECT_OK(t, fast_lane(&f, tl_native_kernels(), NULL)) ||
        !run(t, &f, N_IDS, want, &n_want))
      return;
    for (size_t chunk = 1; chunk < N_IDS; chunk += 3)
      if (run(t, &f, chunk, got, &n_got))
        TL_EXPECT_MEM(t, got, want, n_want * sizeof(float));
  }
}

static void strict_lane_back(tl_test_ctx *t) {
  for (int type = 0; type < 5; type++) {
    fixture f;
    size_t n_want, n_got;
    bool differs = false;
    if (!setup(t, &f, (tl_qtype)type, 60 + (uint64_t)type) || !run(t, &f, N_IDS, want, &n_want))
      return;
    if (!TL_EXPECT_OK(t, fast_lane(&f, tl_native_kernels(), NULL)) ||
        !run(t, &f, N_IDS, got, &n_got))
      return;
    /* a different profile: different bits (the test would not see a lane
     * switch that did nothing) */
    differs = memcmp(got, want, n_want * sizeof(float)) != 0;
    TL_EXPECT(t, differs);
    if (!TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, NULL, NULL)) || !run(t, &f, N_IDS, got, &n_got))
      return;
    TL_EXPECT_MEM(t, got, want, n_want * sizeof(float));
  }
}

/* Bytes of the stored layer-0 q_proj tensor (writable: model_buf). */
static uint8_t *q_proj(fixture *f, size_t *row_bytes) {
  (void)tl_quant_row_bytes(f->m.layers[0].q.type, f->m.layers[0].q.n, row_bytes);
  return model_buf + (f->m.layers[0].q.data - model_buf);
}

static void invalid_codes_refused_once(tl_test_ctx *t) {
  for (int type = TL_QTYPE_Q8; type <= TL_QTYPE_Q4; type++) {
    fixture f;
    size_t rb;
    uint8_t *w;
    if (!setup(t, &f, (tl_qtype)type, 70)) return;
    w = q_proj(&f, &rb);
    /* row 5, block 1: code -128 (q8) / nibble 0 (q4) */
    w[5 * rb + (type == TL_QTYPE_Q8 ? 36 : 20) + 4] = 0x80;
    TL_EXPECT_STATUS(t, fast_lane(&f, tl_native_kernels(), NULL), TL_ERR_INVALID_MODEL);
    TL_EXPECT(t, f.m.fast == NULL && f.m.layers[0].q.packed == NULL);
  }
}

static void overflow_is_located(tl_test_ctx *t) {
  fixture f;
  tl_qwen3_cache c;
  tl_qwen3_fault fault;
  uint32_t ids[2] = {3, 4};
  size_t rb;
  uint8_t *w;
  if (!setup(t, &f, TL_QTYPE_Q8, 80)) return;
  w = q_proj(&f, &rb);
  /* row 3's block scales 2^121: 127 * 2^121 is finite (valid bytes, Q-17),
   * but times the activation scales and group sums it overflows */
  tl_store_le32(w + 3 * rb, 0x7C000000u);
  tl_store_le32(w + 3 * rb + 36, 0x7C000000u);
  if (!TL_EXPECT_OK(t, fast_lane(&f, tl_native_kernels(), NULL)) ||
      !TL_EXPECT_OK(t, tl_qwen3_cache_init(&c, &f.m, 4, &f.arena)))
    return;
  memset(&fault, 0xAB, sizeof fault);
  TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &c, ids, 2, NULL, NULL, &f.scratch, &fault),
                   TL_ERR_NUMERICAL_FAILURE);
  TL_EXPECT_EQ_U64(t, fault.stage, TL_QWEN3_STAGE_Q);
  TL_EXPECT_EQ_I64(t, fault.layer, 0);
  TL_EXPECT(t, fault.pos < 2);
  TL_EXPECT_EQ_U64(t, fault.index, 3);
  TL_EXPECT_EQ_U64(t, c.len, 0);
  /* the first position that overflows: position 0 alone fails exactly
   * when the fault names it (whether it does depends on the block sums) */
  TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &c, ids, 1, NULL, NULL, &f.scratch, NULL),
                   fault.pos == 0 ? TL_ERR_NUMERICAL_FAILURE : TL_OK);
}

/* Attention over a whole call (each task takes its heads through every
 * position) names a non-finite value where attention position by position
 * (the same tokens one call each) names it, at 1 and 3 threads: huge q
 * norm weights (1e37) against keys of a few thousand (k norm weights 1e3:
 * within binary16, so the cache takes them, F-11) make the scores
 * overflow. */
static void attention_fault_located_as_in_order(tl_test_ctx *t) {
  static const uint32_t threads[] = {1, 3};
  uint32_t ids[4] = {3, 4, 5, 6};
  for (size_t ti = 0; ti < 2; ti++) {
    fixture f;
    tl_qwen3_cache c;
    tl_qwen3_fault one, whole;
    tl_pool *pool;
    tl_parallel par;
    const tl_qwen3_layer *L;
    tl_status st = TL_OK;
    if (!setup(t, &f, TL_QTYPE_F32, 85) || !TL_EXPECT_OK(t, tl_pool_create(threads[ti], &pool)))
      return;
    par = tl_pool_parallel(pool);
    L = &f.m.layers[0];
    if (TL_EXPECT(t, L->q_norm.type == TL_QTYPE_F32 && L->k_norm.type == TL_QTYPE_F32)) {
      for (size_t i = 0; i < L->q_norm.n; i++)
        tl_store_le32(model_buf + (L->q_norm.data - model_buf) + 4 * i, tl_f32_to_bits(1e37f));
      for (size_t i = 0; i < L->k_norm.n; i++)
        tl_store_le32(model_buf + (L->k_norm.data - model_buf) + 4 * i, tl_f32_to_bits(1e3f));
      if (TL_EXPECT_OK(t, fast_lane(&f, tl_native_kernels(), &par)) &&
          TL_EXPECT_OK(t, tl_qwen3_cache_init(&c, &f.m, 4, &f.arena))) {
        memset(&one, 0xAB, sizeof one);
        memset(&whole, 0xCD, sizeof whole);
        for (size_t i = 0; i < 4 && st == TL_OK; i++)
          st = tl_qwen3_forward(&f.m, &c, ids + i, 1, NULL, NULL, &f.scratch, &one);
        TL_EXPECT_STATUS(t, st, TL_ERR_NUMERICAL_FAILURE);
        c.len = 0;
        TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &c, ids, 4, NULL, NULL, &f.scratch, &whole),
                         TL_ERR_NUMERICAL_FAILURE);
        TL_EXPECT(t, one.stage >= TL_QWEN3_STAGE_SCORES_MASKED &&
                         one.stage <= TL_QWEN3_STAGE_ATTN_OUT);
        TL_EXPECT_EQ_U64(t, whole.stage, one.stage);
        TL_EXPECT_EQ_I64(t, whole.layer, one.layer);
        TL_EXPECT_EQ_U64(t, whole.pos, one.pos);
        /* scores and probabilities index heads x keys of their call: 4
         * keys for the whole, pos + 1 one token at a time */
        if (one.stage == TL_QWEN3_STAGE_ATTN_OUT) {
          TL_EXPECT_EQ_U64(t, whole.index, one.index);
        } else {
          TL_EXPECT_EQ_U64(t, whole.index / 4, one.index / (one.pos + 1));
          TL_EXPECT_EQ_U64(t, whole.index % 4, one.index % (one.pos + 1));
        }
      }
    }
    tl_pool_destroy(pool);
  }
}

/* F-11: a K (after rope) or V value beyond binary16's range is a
 * numerical failure of stage k_rope or v naming layer, position and
 * index, on one position and on a call of three, at 1 and 3 threads; the
 * strict lane (f32 cache) runs the same weights. K: k norm weights 1e19;
 * V: layer 0's v_proj row 0 times 1e8 (finite in f32). */
static void cache_overflow_located(tl_test_ctx *t) {
  static const uint32_t threads[] = {1, 3};
  uint32_t ids[3] = {3, 4, 5};
  for (int which = 0; which < 2; which++)
    for (size_t ti = 0; ti < 2; ti++)
      for (size_t n = 1; n <= 3; n += 2) {
        fixture f;
        tl_qwen3_cache c;
        tl_qwen3_fault fault;
        tl_pool *pool;
        tl_parallel par;
        const tl_qwen3_weight *w;
        if (!setup(t, &f, TL_QTYPE_F32, 90) || !TL_EXPECT_OK(t, tl_pool_create(threads[ti], &pool)))
          return;
        par = tl_pool_parallel(pool);
        w = which == 0 ? &f.m.layers[0].k_norm : &f.m.layers[0].v;
        for (size_t i = 0; i < w->n; i++) {
          uint8_t *p = model_buf + (w->data - model_buf) + 4 * i;
          tl_store_le32(p, tl_f32_to_bits(which == 0 ? 1e19f : tl_bits_to_f32(tl_load_le32(p)) * 1e8f));
        }
        if (TL_EXPECT_OK(t, tl_qwen3_cache_init(&c, &f.m, 4, &f.arena)))
          TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &c, ids, n, NULL, NULL, &f.scratch, NULL));
        if (TL_EXPECT_OK(t, fast_lane(&f, tl_native_kernels(), &par)) &&
            TL_EXPECT_OK(t, tl_qwen3_cache_init(&c, &f.m, 4, &f.arena))) {
          memset(&fault, 0xAB, sizeof fault);
          TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &c, ids, n, NULL, NULL, &f.scratch, &fault),
                           TL_ERR_NUMERICAL_FAILURE);
          TL_EXPECT_EQ_U64(t, fault.stage, which == 0 ? TL_QWEN3_STAGE_K_ROPE : TL_QWEN3_STAGE_V);
          TL_EXPECT_EQ_I64(t, fault.layer, 0);
          TL_EXPECT_EQ_U64(t, fault.pos, 0);
          TL_EXPECT_EQ_U64(t, fault.index, 0);
          TL_EXPECT_EQ_U64(t, c.len, 0);
        }
        tl_pool_destroy(pool);
      }
}

/* Cancelled from the check-th cancellation point on. */
typedef struct cancel_at {
  size_t checks, at;
} cancel_at;

static bool cancel_now(void *ctx) {
  cancel_at *c = ctx;
  return ++c->checks >= c->at;
}

static tl_status choose_none(void *ctx, const float *logits, size_t vocab,
                             const uint32_t *generated, size_t step, uint32_t *id) {
  (void)ctx, (void)logits, (void)vocab, (void)generated, (void)step, (void)id;
  return TL_ERR_INTERNAL_INVARIANT; /* prefill only: never asked */
}

/* tl_generate's prefill (chunks of 4: 4, 4, 1) on the fast lane at 3
 * threads, cancelled before chunk k: the cache holds exactly the k whole
 * chunks before it, bit for bit a fresh session's rows; the rest of the
 * prompt fed after them (what chat's prefix reuse does), or the whole
 * prompt again from an empty cache, gives a fresh session's logits and
 * K/V bits. */
static void cancelled_prefill_leaves_whole_chunks(tl_test_ctx *t) {
  static tok_builder b;
  static _Alignas(64) uint8_t tok_section[4096];
  static _Alignas(64) uint8_t tok_mem[1u << 20];
  static float logits[4096];
  tl_arena tok_arena;
  const tl_tokenizer *tok;
  size_t len;
  tok_build_init(&b);
  len = tok_build_finish(&b, tok_section, sizeof tok_section);
  tl_arena_init(&tok_arena, tok_mem, sizeof tok_mem);
  if (!TL_EXPECT(t, len > 0) || !TL_EXPECT_OK(t, tl_tok_load(tok_section, len, &tok_arena, &tok)))
    return;
  for (int type = 0; type < 5; type++) {
    fixture f;
    tl_pool *pool;
    tl_parallel par;
    uint32_t ids[N_IDS];
    size_t n_want, n_got;
    if (!setup(t, &f, (tl_qtype)type, 100 + (uint64_t)type)) return;
    if (!TL_EXPECT_OK(t, tl_pool_create(3, &pool))) return;
    par = tl_pool_parallel(pool);
    prompt_ids(&f, ids);
    if (TL_EXPECT_OK(t, fast_lane(&f, tl_native_kernels(), &par)) &&
        run(t, &f, N_IDS, want, &n_want))
      for (size_t k = 1; k <= 3; k++)
        for (int restart = 0; restart < 2; restart++) {
          tl_qwen3_cache c;
          cancel_at cancel = {0, k};
          tl_gen_params p;
          tl_gen_result r;
          size_t fed;
          tl_arena_mark mark = tl_arena_mark_now(&f.arena);
          unsigned before = t->failed_checks;
          memset(&p, 0, sizeof p);
          memset(&r, 0, sizeof r);
          p.prefill_chunk = 4;
          p.choose = choose_none;
          p.cancelled = cancel_now;
          p.cb_ctx = &cancel;
          if (!TL_EXPECT_OK(t, tl_qwen3_cache_init(&c, &f.m, N_IDS, &f.arena)) ||
              !TL_EXPECT_OK(t, tl_generate(&f.m, &c, tok, ids, N_IDS, &p, &f.scratch, logits, &r)))
            break;
          TL_EXPECT_EQ_U64(t, r.stop, TL_STOP_CANCELLED);
          TL_EXPECT_EQ_U64(t, r.prompt_fed, 4 * (k - 1));
          TL_EXPECT_EQ_U64(t, c.len, 4 * (k - 1));
          snapshot(&f, &c, got);
          /* rows [0, c.len) of each layer and head's K then V, as in want
           * (snapshot's order) */
          {
            size_t d = f.m.cfg.head_dim, at = f.m.cfg.vocab;
            for (uint32_t i = 0; i < 2 * f.m.cfg.layers * f.m.cfg.kv_heads; i++, at += N_IDS * d)
              TL_EXPECT_MEM(t, got + at, want + at, c.len * d * sizeof(float));
          }
          /* then uncancelled: the rest after the whole chunks, or all again */
          fed = restart ? 0 : r.prompt_fed;
          c.len = (uint32_t)fed;
          p.cancelled = NULL;
          if (TL_EXPECT_OK(t, tl_generate(&f.m, &c, tok, ids + fed, N_IDS - fed, &p, &f.scratch,
                                          logits, &r))) {
            TL_EXPECT_EQ_U64(t, r.stop, TL_STOP_MAX_TOKENS);
            memcpy(got, logits, f.m.cfg.vocab * sizeof(float));
            n_got = snapshot(&f, &c, got);
            TL_EXPECT_EQ_U64(t, n_got, n_want);
            TL_EXPECT_MEM(t, got, want, n_want * sizeof(float));
          }
          tl_arena_rewind(&f.arena, mark);
          if (t->failed_checks != before) {
            tl_test_print(t, "  type ");
            tl_test_print_u64(t, (uint64_t)type);
            tl_test_print(t, " cancelled before chunk ");
            tl_test_print_u64(t, k);
            tl_test_print(t, restart ? " then restarted\n" : " then resumed\n");
            break;
          }
        }
    tl_pool_destroy(pool);
  }
}

static void bad_lane_arguments(tl_test_ctx *t) {
  fixture f;
  tl_parallel none = {NULL, NULL, 0};
  if (!setup(t, &f, TL_QTYPE_F32, 90)) return;
  TL_EXPECT_STATUS(t, tl_qwen3_set_lane(NULL, NULL, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_qwen3_set_lane(&f.m, tl_native_kernels(), &none),
                   TL_ERR_INVALID_ARGUMENT);
}

/* F-11: a cache belongs to the lane it was made on (f32 rows on the
 * strict lane, binary16 on the fast), and a forward pass on the other
 * lane refuses it, leaving it empty; tl_qwen3_cache_bytes is the plan's
 * figure, half on the fast lane. */
static void cache_of_other_lane_refused(tl_test_ctx *t) {
  fixture f;
  tl_qwen3_cache strict, fast;
  uint32_t id = 1;
  const tl_qwen3_config *c;
  uint64_t elems;
  if (!setup(t, &f, TL_QTYPE_F32, 91)) return;
  c = &f.m.cfg;
  elems = 2ull * c->layers * 4 * c->kv_heads * c->head_dim;
  TL_EXPECT_EQ_U64(t, tl_qwen3_cache_bytes(&f.m, 4), elems * 4);
  if (!TL_EXPECT_OK(t, tl_qwen3_cache_init(&strict, &f.m, 4, &f.arena))) return;
  TL_EXPECT(t, strict.k != NULL && strict.v != NULL && strict.k16 == NULL && strict.v16 == NULL);
  if (!TL_EXPECT_OK(t, fast_lane(&f, tl_native_kernels(), NULL))) return;
  TL_EXPECT_EQ_U64(t, tl_qwen3_cache_bytes(&f.m, 4), elems * 2);
  if (!TL_EXPECT_OK(t, tl_qwen3_cache_init(&fast, &f.m, 4, &f.arena))) return;
  TL_EXPECT(t, fast.k == NULL && fast.v == NULL && fast.k16 != NULL && fast.v16 != NULL);
  TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &strict, &id, 1, NULL, NULL, &f.scratch, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, strict.len, 0);
  TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &fast, &id, 1, NULL, NULL, &f.scratch, NULL));
  TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, NULL, NULL));
  TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &fast, &id, 1, NULL, NULL, &f.scratch, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, fast.len, 1);
  TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &strict, &id, 1, NULL, NULL, &f.scratch, NULL));
}

/* Packing in place (the native lane's way, over its copy of the weights)
 * leaves the strict lane decoding the packed rows to the same values, and
 * the fast lane the same bits as packed elsewhere; a tied embedding is
 * packed once. The fast lane before packing is refused. */
static void packed_in_place(tl_test_ctx *t) {
  static float elsewhere[OUT_CAP];
  for (int type = TL_QTYPE_Q8; type <= TL_QTYPE_Q4; type++)
    for (int tie = 0; tie < 2; tie++) {
      fixture f, g;
      size_t n_want, n_got;
      tl_qwen3_cache c;
      uint32_t id = 1;
      uint64_t seed = 100 + (uint64_t)(2 * type + tie);
      /* the fast lane packed elsewhere: the bits to match */
      if (!setup_tied(t, &g, (tl_qtype)type, seed, tie) ||
          !TL_EXPECT_OK(t, fast_lane(&g, tl_native_kernels(), NULL)) ||
          !run(t, &g, N_IDS, elsewhere, &n_want))
        return;
      if (!setup_tied(t, &f, (tl_qtype)type, seed, tie) || !run(t, &f, N_IDS, want, &n_want))
        return;
      TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, tl_native_kernels(), NULL));
      if (!TL_EXPECT_OK(t, tl_qwen3_cache_init(&c, &f.m, 2, &f.arena))) return;
      TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &c, &id, 1, NULL, NULL, &f.scratch, NULL),
                       TL_ERR_INVALID_ARGUMENT);
      TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, NULL, NULL));
      if (!TL_EXPECT_OK(t, tl_qwen3_pack(&f.m, model_buf, MODEL_CAP, model_buf, NULL)) ||
          !run(t, &f, N_IDS, got, &n_got))
        return;
      TL_EXPECT(t, f.m.layers[0].q.data == NULL && f.m.lm_head.packed != NULL);
      TL_EXPECT(t, !tie || f.m.embed.packed == f.m.lm_head.packed);
      TL_EXPECT_MEM(t, got, want, n_want * sizeof(float)); /* strict lane, packed rows */
      if (!TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, tl_native_kernels(), NULL)) ||
          !run(t, &f, N_IDS, got, &n_got))
        return;
      TL_EXPECT_MEM(t, got, elsewhere, n_want * sizeof(float));
    }
}


/* The K and V rows [0, len) of c as f32 (a fast cache's binary16 exactly)
 * into out; returns the floats written. */
static size_t cache_rows(const fixture *f, const tl_qwen3_cache *c, float *out) {
  size_t d = f->m.cfg.head_dim, at = 0;
  for (uint32_t l = 0; l < f->m.cfg.layers; l++)
    for (uint32_t h = 0; h < f->m.cfg.kv_heads; h++)
      for (int kv = 0; kv < 2; kv++, at += c->len * d) {
        size_t row = tl_qwen3_cache_at(c, l, h, 0);
        if (c->k16 != NULL)
          tl_kern_f16_to_f32((kv ? c->v16 : c->k16) + row, c->len * d, out + at);
        else
          memcpy(out + at, (kv ? c->v : c->k) + row, c->len * d * sizeof(float));
      }
  return at;
}

#define SEQS 3
#define STEPS 4

/* Three sequences with prompts of 2, 5 and 1 tokens, then four decode
 * steps in which a varying subset of them takes part (rows joining and
 * leaving a batch, as a server's slots do): each step's logits and the
 * final caches, computed with tl_qwen3_forward_rows, equal each sequence
 * computed alone with tl_qwen3_forward, on every kernel variant at 1 and
 * 3 threads and on the strict lane. */
static bool rows_case(tl_test_ctx *t, fixture *f, const char *what) {
  static const size_t prompt_len[SEQS] = {2, 5, 1};
  static const bool takes_part[STEPS][SEQS] = {
      {true, true, true}, {true, false, true}, {false, true, false}, {true, true, true}};
  static float alone[SEQS][STEPS][512], batched[SEQS][STEPS][512];
  tl_qwen3_cache ca[SEQS], cb[SEQS];
  tl_arena_mark mark = tl_arena_mark_now(&f->arena);
  size_t vocab = f->m.cfg.vocab;
  bool ok = TL_EXPECT(t, vocab <= 512);
  for (size_t s = 0; ok && s < SEQS; s++) {
    uint32_t ids[5];
    for (size_t i = 0; i < prompt_len[s]; i++) ids[i] = (uint32_t)((s * 41 + i * 13 + 3) % vocab);
    ok = TL_EXPECT_OK(t, tl_qwen3_cache_init(&ca[s], &f->m, N_IDS, &f->arena)) &&
         TL_EXPECT_OK(t, tl_qwen3_cache_init(&cb[s], &f->m, N_IDS, &f->arena)) &&
         TL_EXPECT_OK(t, tl_qwen3_forward(&f->m, &ca[s], ids, prompt_len[s], alone[s][0], NULL,
                                          &f->scratch, NULL)) &&
         TL_EXPECT_OK(t, tl_qwen3_forward(&f->m, &cb[s], ids, prompt_len[s], batched[s][0],
                                          NULL, &f->scratch, NULL));
  }
  for (size_t step = 0; ok && step < STEPS; step++) {
    tl_qwen3_cache *rows[SEQS];
    uint32_t ids[SEQS];
    float *outs[SEQS];
    size_t n = 0;
    for (size_t s = 0; s < SEQS; s++) {
      uint32_t id = (uint32_t)((step * 29 + s * 7 + 1) % vocab);
      if (!takes_part[step][s]) continue;
      ok = ok && TL_EXPECT_OK(t, tl_qwen3_forward(&f->m, &ca[s], &id, 1, alone[s][step], NULL,
                                                  &f->scratch, NULL));
      rows[n] = &cb[s];
      ids[n] = id;
      outs[n++] = batched[s][step];
    }
    ok = ok && TL_EXPECT_OK(t, tl_qwen3_forward_rows(&f->m, rows, ids, n, outs, &f->scratch,
                                                     NULL));
    for (size_t s = 0; ok && s < SEQS; s++)
      if (takes_part[step][s] &&
          !TL_EXPECT_MEM(t, batched[s][step], alone[s][step], vocab * sizeof(float)))
        ok = false;
  }
  for (size_t s = 0; ok && s < SEQS; s++) {
    size_t na, nb;
    ok = TL_EXPECT_EQ_U64(t, cb[s].len, ca[s].len);
    na = cache_rows(f, &ca[s], want);
    nb = cache_rows(f, &cb[s], got);
    ok = ok && TL_EXPECT_EQ_U64(t, nb, na) && TL_EXPECT_MEM(t, got, want, na * sizeof(float));
  }
  if (ok) {
    /* a sequence given twice would write one row twice; a full cache has
     * no row for the token */
    tl_qwen3_cache *twice[2] = {&cb[0], &cb[0]};
    uint32_t ids[2] = {1, 2};
    float *outs[2] = {batched[0][0], batched[1][0]};
    TL_EXPECT_STATUS(t, tl_qwen3_forward_rows(&f->m, twice, ids, 2, outs, &f->scratch, NULL),
                     TL_ERR_INVALID_ARGUMENT);
    cb[1].len = cb[1].capacity;
    twice[1] = &cb[1];
    TL_EXPECT_STATUS(t, tl_qwen3_forward_rows(&f->m, twice, ids, 2, outs, &f->scratch, NULL),
                     TL_ERR_CONTEXT_EXCEEDED);
    TL_EXPECT_EQ_U64(t, cb[0].len, ca[0].len); /* nothing grew */
  }
  if (!ok) {
    tl_test_print(t, "  in ");
    tl_test_print(t, what);
    tl_test_print(t, "\n");
  }
  tl_arena_rewind(&f->arena, mark);
  return ok;
}

static void rows_are_each_sequence_alone(tl_test_ctx *t) {
  static const uint32_t threads[] = {1, 3};
  for (int type = 0; type < 5; type++) {
    fixture f;
    if (!setup(t, &f, (tl_qtype)type, 70 + (uint64_t)type) || !rows_case(t, &f, "strict lane"))
      return;
    for (int isa = 0; isa < TL_KERN_ISA_COUNT; isa++) {
      const tl_kernels *k = tl_kernels_get((tl_kern_isa)isa);
      if (k == NULL || !tl_native_kernels_supported((tl_kern_isa)isa)) continue;
      for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
        tl_pool *pool;
        tl_parallel par;
        bool ok;
        if (!TL_EXPECT_OK(t, tl_pool_create(threads[ti], &pool))) return;
        par = tl_pool_parallel(pool);
        ok = TL_EXPECT_OK(t, fast_lane(&f, k, &par)) && rows_case(t, &f, k->name);
        tl_pool_destroy(pool);
        if (!ok) return;
      }
    }
  }
}

static const tl_test_case cases[] = {
    TL_CASE(every_variant_and_thread_count),
    TL_CASE(prefill_chunks_and_steps_agree),
    TL_CASE(strict_lane_back),
    TL_CASE(invalid_codes_refused_once),
    TL_CASE(packed_in_place),
    TL_CASE(overflow_is_located),
    TL_CASE(attention_fault_located_as_in_order),
    TL_CASE(cache_overflow_located),
    TL_CASE(cancelled_prefill_leaves_whole_chunks),
    TL_CASE(bad_lane_arguments),
    TL_CASE(cache_of_other_lane_refused),
    TL_CASE(rows_are_each_sequence_alone),
};
TL_SUITE(fast_forward, cases);
