/* The self-test's tiny forward pass: see selftest_model.h. */
#include "model/selftest_model.h"

#include <string.h>

#include "bytes.h"
#include "model/selftest_golden.h"

const uint8_t tl_selftest_golden_strict[32] = TL_SELFTEST_GOLDEN_STRICT;
const uint8_t tl_selftest_golden_fast[32] = TL_SELFTEST_GOLDEN_FAST;

#define SEED 0x5e1f7e57u
#define PREFILL 6
#define DECODE 2
#define MAX_VOCAB 64

tl_model_gen tl_selftest_gen(size_t i) {
  static const tl_qtype types[TL_SELFTEST_TYPES] = {TL_QTYPE_F32, TL_QTYPE_F16, TL_QTYPE_BF16,
                                                    TL_QTYPE_Q8, TL_QTYPE_Q4};
  tl_model_gen g = tl_model_gen_tiny(types[i % TL_SELFTEST_TYPES], SEED + i);
  g.hidden = 40;
  g.inter = 72;
  g.head_dim = 10;
  g.tie = types[i % TL_SELFTEST_TYPES] == TL_QTYPE_Q4;
  return g;
}

tl_status tl_selftest_open(tl_selftest_model *s, size_t i, tl_arena *arena) {
  tl_model_gen g;
  void *p;
  tl_status st;
  if (s == NULL || arena == NULL || i >= TL_SELFTEST_TYPES) return TL_ERR_INVALID_ARGUMENT;
  memset(s, 0, sizeof *s);
  g = tl_selftest_gen(i);
  s->len = tl_model_gen_size(&g, arena);
  if (s->len == 0) return TL_ERR_OUT_OF_MEMORY;
  st = tl_arena_alloc(arena, s->len, 64, &p);
  if (st != TL_OK) return st;
  s->file = p;
  st = tl_arena_alloc(arena, s->len, 64, &p);
  if (st != TL_OK) return st;
  s->pack = p;
  st = tl_model_gen_build(&g, s->file, s->len, arena, &s->len);
  if (st == TL_OK) st = tl_model_gen_open(s->file, s->len, &s->slm, &s->ts, &s->m, arena);
  return st;
}

/* One forward call; its logits' bits into h. */
static tl_status step(tl_selftest_model *s, tl_qwen3_cache *c, const uint32_t *ids, size_t n,
                      float *logits, tl_arena *arena, tl_blake3_hasher *h) {
  tl_qwen3_fault fault;
  uint8_t bits[4 * MAX_VOCAB];
  tl_status st = tl_qwen3_forward(&s->m, c, ids, n, logits, NULL, arena, &fault);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < s->m.cfg.vocab; i++) tl_store_le32(bits + 4 * i, tl_f32_to_bits(logits[i]));
  return tl_blake3_hasher_update(h, bits, 4 * (size_t)s->m.cfg.vocab);
}

tl_status tl_selftest_run(tl_selftest_model *s, const tl_kernels *k, const tl_parallel *par,
                          tl_arena *arena, tl_blake3_hasher *h) {
  static const uint32_t ids[PREFILL + DECODE] = {1, 17, 42, 5, 63, 28, 9, 50};
  tl_arena_mark mark;
  tl_qwen3_cache cache;
  void *p;
  tl_status st;
  if (s == NULL || arena == NULL || h == NULL || s->m.cfg.vocab > MAX_VOCAB)
    return TL_ERR_INVALID_ARGUMENT;
  mark = tl_arena_mark_now(arena);
  st = k != NULL ? tl_qwen3_pack(&s->m, s->file, s->len, s->pack, par) : TL_OK;
  if (st == TL_OK) st = tl_qwen3_set_lane(&s->m, k, par);
  if (st == TL_OK) st = tl_qwen3_cache_init(&cache, &s->m, PREFILL + DECODE, arena);
  if (st == TL_OK) st = tl_arena_alloc_array(arena, s->m.cfg.vocab, sizeof(float), 64, &p);
  if (st == TL_OK) st = step(s, &cache, ids, PREFILL, p, arena, h);
  for (size_t i = PREFILL; i < PREFILL + DECODE && st == TL_OK; i++)
    st = step(s, &cache, ids + i, 1, p, arena, h);
  (void)tl_arena_rewind(arena, mark);
  return st;
}

tl_status tl_selftest_digest(const tl_kernels *k, const tl_parallel *par, uint8_t *work,
                             size_t work_len, uint8_t out[32]) {
  tl_arena arena;
  tl_blake3_hasher h;
  tl_status st;
  if (work == NULL || out == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = tl_arena_init(&arena, work, work_len);
  tl_blake3_hasher_init(&h);
  for (size_t i = 0; i < TL_SELFTEST_TYPES && st == TL_OK; i++) {
    tl_arena_mark mark = tl_arena_mark_now(&arena);
    tl_selftest_model s;
    st = tl_selftest_open(&s, i, &arena);
    if (st == TL_OK) st = tl_selftest_run(&s, k, par, &arena, &h);
    (void)tl_arena_rewind(&arena, mark);
  }
  return st == TL_OK ? tl_blake3_hasher_finalize(&h, out, 32) : st;
}
