/* Qwen3's native 32,768-position context on the fast lane: a one-head,
 * one-layer synthetic q8 model whose config allows 32,768 positions
 * prefills 20,000 tokens (past the 16,384 of bench/llama.sh's long rows)
 * in the sessions' chunks of 64 at 2 threads; its last positions then
 * computed again from the same earlier rows token by token on one thread,
 * and in one call at 3 threads, give the same logits and K/V bits (F-8);
 * and the forward scratch grows with the keys and with the tokens of a
 * call, never with their product (the memory plan stays linear in the
 * context). Kept to one long prefill: each of its positions attends to
 * every earlier one. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "model/model_gen.h"
#include "model/qwen3.h"
#include "pool.h"
#include "tl_test.h"

#define N_POS 20000u
#define TAIL 77u   /* positions recomputed at the end: two blocks of 4 and more */
#define CHUNK 64u  /* the sessions' prefill chunk (src/lib/session.c) */
#define LOAD_CAP (64u << 10)

typedef struct fixture {
  uint8_t *model, *packed, *load_mem, *cache_mem, *scratch_mem;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_qwen3 m;
  tl_arena load, scratch;
  tl_qwen3_cache cache;
} fixture;

static void release(fixture *f) {
  free(f->model);
  free(f->packed);
  free(f->load_mem);
  free(f->cache_mem);
  free(f->scratch_mem);
}

/* The model on the fast lane with this CPU's kernels (par set later), its
 * cache of N_POS positions and a scratch for calls of up to TAIL tokens. */
static bool setup(tl_test_ctx *t, fixture *f) {
  tl_model_gen g = tl_model_gen_tiny(TL_QTYPE_Q8, 41);
  tl_arena a;
  size_t len, cache_bytes, scratch_bytes;
  memset(f, 0, sizeof *f);
  g.layers = 1;
  g.heads = g.kv_heads = 1;
  g.hidden = 16;
  g.inter = 16;
  g.max_positions = 32768;
  f->load_mem = malloc(LOAD_CAP);
  f->scratch_mem = malloc(tl_model_gen_scratch_bound(&g));
  if (!TL_EXPECT(t, f->load_mem != NULL && f->scratch_mem != NULL)) return false;
  tl_arena_init(&a, f->scratch_mem, tl_model_gen_scratch_bound(&g));
  len = tl_model_gen_size(&g, &a);
  f->model = malloc(len);
  f->packed = malloc(len);
  if (!TL_EXPECT(t, len > 0 && f->model != NULL && f->packed != NULL) ||
      !TL_EXPECT_OK(t, tl_model_gen_build(&g, f->model, len, &a, &len)))
    return false;
  tl_arena_init(&f->load, f->load_mem, LOAD_CAP);
  if (!TL_EXPECT_OK(t, tl_model_gen_open(f->model, len, &f->slm, &f->ts, &f->m, &f->load)) ||
      !TL_EXPECT_OK(t, tl_qwen3_pack(&f->m, f->model, len, f->packed, NULL)) ||
      !TL_EXPECT_OK(t, tl_qwen3_set_lane(&f->m, tl_native_kernels(), NULL)))
    return false;
  cache_bytes = (size_t)tl_qwen3_cache_bytes(&f->m, N_POS) + 256;
  scratch_bytes = tl_qwen3_scratch_bound(&f->m, TAIL, N_POS);
  f->cache_mem = malloc(cache_bytes);
  free(f->scratch_mem);
  f->scratch_mem = malloc(scratch_bytes);
  if (!TL_EXPECT(t, f->cache_mem != NULL && f->scratch_mem != NULL)) return false;
  tl_arena_init(&a, f->cache_mem, cache_bytes);
  tl_arena_init(&f->scratch, f->scratch_mem, scratch_bytes);
  return TL_EXPECT_OK(t, tl_qwen3_cache_init(&f->cache, &f->m, N_POS, &a));
}

static uint32_t id_at(const fixture *f, uint32_t pos) {
  return (pos * 7919u + 13u) % f->m.cfg.vocab;
}

/* Positions [from, to) in calls of `chunk` tokens on threads threads (1:
 * no pool); the last call's logits into logits. */
static bool feed(tl_test_ctx *t, fixture *f, uint32_t from, uint32_t to, uint32_t chunk,
                 uint32_t threads, float *logits) {
  tl_pool *pool = NULL;
  tl_parallel par;
  uint32_t ids[TAIL > CHUNK ? TAIL : CHUNK];
  bool ok = true;
  if (threads > 1) {
    if (!TL_EXPECT_OK(t, tl_pool_create(threads, &pool))) return false;
    par = tl_pool_parallel(pool);
  }
  ok = TL_EXPECT_OK(t, tl_qwen3_set_lane(&f->m, tl_native_kernels(), pool ? &par : NULL));
  f->cache.len = from;
  for (uint32_t at = from; ok && at < to; at += chunk) {
    uint32_t n = to - at < chunk ? to - at : chunk;
    for (uint32_t i = 0; i < n; i++) ids[i] = id_at(f, at + i);
    ok = TL_EXPECT_OK(t, tl_qwen3_forward(&f->m, &f->cache, ids, n, logits, NULL, &f->scratch,
                                          NULL));
  }
  if (pool != NULL) tl_pool_destroy(pool);
  return ok && TL_EXPECT_EQ_U64(t, f->cache.len, to);
}

/* The binary16 K and V rows of positions [from, N_POS), K then V. */
static void tail_rows(const fixture *f, uint32_t from, uint16_t *out) {
  size_t row = f->m.cfg.head_dim, n = (N_POS - from) * row;
  size_t at = tl_qwen3_cache_at(&f->cache, 0, 0, from);
  memcpy(out, f->cache.k16 + at, n * sizeof *out);
  memcpy(out + n, f->cache.v16 + at, n * sizeof *out);
}

static void chunks_and_steps_agree_at_20000(tl_test_ctx *t) {
  enum { ROWS = 2 * TAIL * 8 };
  static float want[64], got[64];
  static uint16_t want_kv[ROWS], got_kv[ROWS];
  const uint32_t from = N_POS - TAIL;
  fixture f;
  if (setup(t, &f) && TL_EXPECT_EQ_U64(t, f.m.cfg.head_dim * 2 * TAIL, ROWS) &&
      TL_EXPECT_EQ_U64(t, f.m.cfg.vocab, 64) && feed(t, &f, 0, N_POS, CHUNK, 2, want)) {
    tail_rows(&f, from, want_kv);
    /* the same earlier rows; the tail token by token, then in one call */
    if (feed(t, &f, from, N_POS, 1, 1, got)) {
      tail_rows(&f, from, got_kv);
      TL_EXPECT_MEM(t, got, want, sizeof want);
      TL_EXPECT_MEM(t, got_kv, want_kv, sizeof want_kv);
    }
    memset(got, 0, sizeof got);
    if (feed(t, &f, from, N_POS, TAIL, 3, got)) {
      tail_rows(&f, from, got_kv);
      TL_EXPECT_MEM(t, got, want, sizeof want);
      TL_EXPECT_MEM(t, got_kv, want_kv, sizeof want_kv);
    }
  }
  release(&f);
}

/* bound(n, keys) = a + b n + c keys on the fast lane and the strict one:
 * doubling keys adds as much at 64 tokens as at 128 (no n x keys term),
 * and from 16,384 to 32,768 keys twice what it adds from 8,192 to 16,384
 * (no keys^2 term). */
static void scratch_linear_in_context(tl_test_ctx *t) {
  fixture f;
  if (setup(t, &f)) {
    for (int lane = 0; lane < 2; lane++) {
      const tl_qwen3 *m = &f.m;
      size_t k1 = tl_qwen3_scratch_bound(m, 64, 8192), k2 = tl_qwen3_scratch_bound(m, 64, 16384),
             k4 = tl_qwen3_scratch_bound(m, 64, 32768);
      size_t n2k2 = tl_qwen3_scratch_bound(m, 128, 16384),
             n2k4 = tl_qwen3_scratch_bound(m, 128, 32768);
      TL_EXPECT(t, k1 < k2 && k2 < k4);
      TL_EXPECT_EQ_U64(t, k4 - k2, 2 * (k2 - k1));
      TL_EXPECT_EQ_U64(t, n2k4 - n2k2, k4 - k2);
      TL_EXPECT_OK(t, tl_qwen3_set_lane(&f.m, NULL, NULL));
    }
  }
  release(&f);
}

static const tl_test_case cases[] = {
    TL_CASE(chunks_and_steps_agree_at_20000),
    TL_CASE(scratch_linear_in_context),
};
TL_SUITE(long_context, cases);
