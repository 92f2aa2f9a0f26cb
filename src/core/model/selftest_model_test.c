/* The self-test's tiny forward pass (selftest_model.h): the strict lane and
 * the fast lane's kernels this build has that run everywhere it runs (the
 * scalar twins; wasm SIMD128 in a -msimd128 build) give the goldens the
 * native lanes wrote (tools/selftest_golden.c); one weight changed after
 * the artifact was verified changes the digest, on both lanes; short
 * working memory is out_of_memory. The native variants and thread counts:
 * src/native/selftest_lanes_test.c. */
#include "model/selftest_model.h"

#include <string.h>

#include "bytes.h"
#include "tl_test.h"

static _Alignas(64) uint8_t work[TL_SELFTEST_WORK_BYTES];

static void expect_digest(tl_test_ctx *t, const tl_kernels *k, const uint8_t *want) {
  uint8_t d[32];
  if (TL_EXPECT_OK(t, tl_selftest_digest(k, NULL, work, sizeof work, d)) &&
      !TL_EXPECT_MEM(t, d, want, 32)) {
    tl_test_print(t, k != NULL ? k->name : "strict");
    tl_test_print(t, " lane's digest ");
    tl_test_print_hex(t, d, 32);
    tl_test_print(t, "\n");
  }
}

static void lanes_give_the_goldens(tl_test_ctx *t) {
  const tl_kernels *simd = tl_kernels_get(TL_KERN_WASM_SIMD128);
  expect_digest(t, NULL, tl_selftest_golden_strict);
  expect_digest(t, tl_kernels_get(TL_KERN_SCALAR), tl_selftest_golden_fast);
  if (simd != NULL) expect_digest(t, simd, tl_selftest_golden_fast);
}

/* Model i's digest on lane k, after adding delta to element at of the
 * weight `which` (tl_qwen3_weight_at) when delta is not 0. */
static bool model_digest(tl_test_ctx *t, size_t i, const tl_kernels *k, size_t which, size_t at,
                         int delta, uint8_t *out) {
  tl_arena arena;
  tl_selftest_model s;
  tl_blake3_hasher h;
  tl_qwen3_weight *w;
  if (!TL_EXPECT_OK(t, tl_arena_init(&arena, work, sizeof work)) ||
      !TL_EXPECT_OK(t, tl_selftest_open(&s, i, &arena)))
    return false;
  w = tl_qwen3_weight_at(&s.m, which);
  if (!TL_EXPECT(t, w != NULL && w->data != NULL)) return false;
  if (delta != 0) {
    /* the weight's bytes lie in s.file, which the test owns */
    uint8_t *p = s.file + (w->data - s.file);
    if (w->type == TL_QTYPE_F32)
      tl_store_le32(p + 4 * at, tl_f32_to_bits(tl_bits_to_f32(tl_load_le32(p + 4 * at)) + 0.25f));
    else /* a q8 code of the first block (after its f32 scale), kept inside the domain */
      p[4 + at] = (uint8_t)((int8_t)p[4 + at] > 0 ? p[4 + at] - 1 : p[4 + at] + 1);
  }
  tl_blake3_hasher_init(&h);
  return TL_EXPECT_OK(t, tl_selftest_run(&s, k, NULL, &arena, &h)) &&
         TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, out, 32));
}

static void one_weight_changed_changes_the_digest(tl_test_ctx *t) {
  /* weight 3 + 11 + 10: layer 1's down projection; 3 + 1: layer 0's q */
  static const struct {
    size_t model, which, at;
  } plants[] = {{0, 3 + 11 + 10, 7}, {3, 3 + 1, 5}};
  const tl_kernels *lanes[2] = {NULL, tl_kernels_get(TL_KERN_SCALAR)};
  for (size_t p = 0; p < sizeof plants / sizeof plants[0]; p++)
    for (size_t l = 0; l < 2; l++) {
      uint8_t clean[32], again[32], planted[32];
      if (!model_digest(t, plants[p].model, lanes[l], plants[p].which, plants[p].at, 0, clean) ||
          !model_digest(t, plants[p].model, lanes[l], plants[p].which, plants[p].at, 0, again) ||
          !model_digest(t, plants[p].model, lanes[l], plants[p].which, plants[p].at, 1, planted))
        return;
      TL_EXPECT_MEM(t, again, clean, 32);
      TL_EXPECT(t, memcmp(planted, clean, 32) != 0);
    }
}

static void short_work_is_out_of_memory(tl_test_ctx *t) {
  uint8_t d[32];
  TL_EXPECT_STATUS(t, tl_selftest_digest(NULL, NULL, work, 4096, d), TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT_STATUS(t, tl_selftest_digest(NULL, NULL, NULL, sizeof work, d), TL_ERR_INVALID_ARGUMENT);
}

static const tl_test_case cases[] = {
    TL_CASE(lanes_give_the_goldens),
    TL_CASE(one_weight_changed_changes_the_digest),
    TL_CASE(short_work_is_out_of_memory),
};
TL_SUITE(selftest_model, cases);
