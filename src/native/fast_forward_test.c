/* The fast lane of the Qwen3 forward pass (docs/fast-profile.md) on seeded
 * synthetic artifacts of every stored dtype, with widths that are not
 * multiples of the block or vector sizes: every kernel variant this CPU
 * runs, at 1, 2, 3 and 7 threads, gives the same logits and KV cache bits
 * (F-7); prefill, chunks and token-by-token decoding agree (F-8); switching
 * back gives the strict lane's bits; invalid q8/q4 bytes are refused when
 * the lane is selected (F-9); an overflow inside a product is a
 * numerical_failure naming the stage, layer, position and row. */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cpu.h"
#include "model/qwen3.h"
#include "model_gen.h"
#include "pool.h"
#include "tl_test.h"

#define MODEL_CAP (512u << 10)
#define ARENA_CAP (1u << 20)
#define SCRATCH_CAP (1u << 20)
#define N_IDS 9

static _Alignas(64) uint8_t model_buf[MODEL_CAP];
static _Alignas(64) uint8_t arena_mem[ARENA_CAP];
static _Alignas(64) uint8_t scratch_mem[SCRATCH_CAP];

typedef struct fixture {
  tl_model_gen g;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_qwen3 m;
  tl_arena arena, scratch;
} fixture;

/* tiny, with odd widths: hidden 40, intermediate 72, heads of 10. */
static bool setup(tl_test_ctx *t, fixture *f, tl_qtype type, uint64_t seed) {
  size_t len;
  memset(f, 0, sizeof *f);
  f->g = tl_model_gen_tiny(type, seed);
  f->g.hidden = 40;
  f->g.inter = 72;
  f->g.head_dim = 10;
  tl_arena_init(&f->arena, arena_mem, ARENA_CAP);
  tl_arena_init(&f->scratch, scratch_mem, SCRATCH_CAP);
  return TL_EXPECT_OK(t, tl_model_gen_build(&f->g, model_buf, MODEL_CAP, &f->scratch, &len)) &&
         TL_EXPECT_OK(t, tl_model_gen_open(model_buf, len, &f->slm, &f->ts, &f->m, &f->arena));
}

/* The prompt in chunks of `chunk` tokens (N_IDS: one call); the last
 * logits and the cache's K and V, concatenated, into out. */
static bool run(tl_test_ctx *t, fixture *f, size_t chunk, float *out, size_t *n_out) {
  tl_qwen3_cache c;
  uint32_t ids[N_IDS];
  size_t kd = (size_t)f->m.cfg.kv_heads * f->m.cfg.head_dim, at = 0;
  tl_arena_mark mark = tl_arena_mark_now(&f->arena);
  bool ok;
  for (size_t i = 0; i < N_IDS; i++) ids[i] = (uint32_t)((i * 37 + 5) % f->m.cfg.vocab);
  ok = TL_EXPECT_OK(t, tl_qwen3_cache_init(&c, &f->m, N_IDS, &f->arena));
  for (size_t i = 0; ok && i < N_IDS; i += chunk) {
    size_t n = N_IDS - i < chunk ? N_IDS - i : chunk;
    ok = TL_EXPECT_OK(t, tl_qwen3_forward(&f->m, &c, ids + i, n, out, NULL, &f->scratch, NULL));
  }
  at = f->m.cfg.vocab;
  for (uint32_t l = 0; ok && l < f->m.cfg.layers; l++) {
    memcpy(out + at, c.k + (size_t)l * c.capacity * kd, N_IDS * kd * sizeof(float));
    at += N_IDS * kd;
    memcpy(out + at, c.v + (size_t)l * c.capacity * kd, N_IDS * kd * sizeof(float));
    at += N_IDS * kd;
  }
  *n_out = at;
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
    if (!TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, tl_kernels_get(TL_KERN_SCALAR), NULL)) ||
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
        if (TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, k, &par)) && run(t, &f, N_IDS, got, &n_got) &&
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
        !TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, tl_native_kernels(), NULL)) ||
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
    if (!TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, tl_native_kernels(), NULL)) ||
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
    TL_EXPECT_STATUS(t, tl_qwen3_set_lane(&f.m, tl_native_kernels(), NULL), TL_ERR_INVALID_MODEL);
    TL_EXPECT(t, f.m.fast == NULL);
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
  if (!TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, tl_native_kernels(), NULL)) ||
      !TL_EXPECT_OK(t, tl_qwen3_cache_init(&c, &f.m, 4, &f.arena)))
    return;
  memset(&fault, 0xAB, sizeof fault);
  TL_EXPECT_STATUS(t, tl_qwen3_forward(&f.m, &c, ids, 2, NULL, NULL, &f.scratch, &fault),
                   TL_ERR_NUMERICAL_FAILURE);
  TL_EXPECT_EQ_U64(t, fault.stage, TL_QWEN3_STAGE_Q);
  TL_EXPECT_EQ_I64(t, fault.layer, 0);
  TL_EXPECT_EQ_U64(t, fault.pos, 0);
  TL_EXPECT_EQ_U64(t, fault.index, 3);
  TL_EXPECT_EQ_U64(t, c.len, 0);
}

static void bad_lane_arguments(tl_test_ctx *t) {
  fixture f;
  tl_parallel none = {NULL, NULL, 0};
  if (!setup(t, &f, TL_QTYPE_F32, 90)) return;
  TL_EXPECT_STATUS(t, tl_qwen3_set_lane(NULL, NULL, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_qwen3_set_lane(&f.m, tl_native_kernels(), &none),
                   TL_ERR_INVALID_ARGUMENT);
}

static const tl_test_case cases[] = {
    TL_CASE(every_variant_and_thread_count),
    TL_CASE(prefill_chunks_and_steps_agree),
    TL_CASE(strict_lane_back),
    TL_CASE(invalid_codes_refused_once),
    TL_CASE(overflow_is_located),
    TL_CASE(bad_lane_arguments),
};
TL_SUITE(fast_forward, cases);
