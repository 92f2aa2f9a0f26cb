/* The sampler gives the known answers the lanes' start-up self-test checks
 * (sampler_vectors.h, from tools/oracle/sampler_selftest_vectors.py), so a
 * drift between the reference and the C sampler fails here natively and in
 * the wasm32 unit builds, not only in a browser; and the check itself
 * notices each kind of wrong answer. */
#include "sample/sampler_selftest.h"

#include <stdint.h>
#include <string.h>

#include "tl_test.h"

static void test_known_answers(tl_test_ctx *t) {
  size_t failed = SIZE_MAX;
  TL_EXPECT(t, TL_SAMPLER_VECTOR_COUNT >= 10);
  TL_EXPECT_OK(t, tl_sampler_selftest(tl_sampler_vectors, TL_SAMPLER_VECTOR_COUNT, &failed));
  TL_EXPECT_EQ_U64(t, failed, SIZE_MAX);
}

/* The case at i with one expected value changed must fail, naming i. */
static void expect_refused(tl_test_ctx *t, const tl_sampler_vector *v, size_t i,
                           const char *what) {
  tl_sampler_vector copy[TL_SAMPLER_VECTOR_COUNT];
  size_t failed = SIZE_MAX;
  memcpy(copy, tl_sampler_vectors, sizeof copy);
  copy[i] = *v;
  if (!TL_EXPECT_STATUS(t, tl_sampler_selftest(copy, TL_SAMPLER_VECTOR_COUNT, &failed),
                        TL_ERR_SELF_TEST_FAILED) ||
      !TL_EXPECT_EQ_U64(t, failed, i))
  {
    tl_test_print(t, "    case ");
    tl_test_print(t, v->name);
    tl_test_print(t, ": ");
    tl_test_print(t, what);
    tl_test_print(t, " changed\n");
  }
}

static void test_wrong_answers_refused(tl_test_ctx *t) {
  for (size_t i = 0; i < TL_SAMPLER_VECTOR_COUNT; i++) {
    const tl_sampler_vector *v = &tl_sampler_vectors[i];
    tl_sampler_vector w;
    uint64_t q[16], b[16];
    size_t last = v->n_survivors - 1;
    if (!TL_EXPECT(t, v->n_survivors >= 1 && v->n_survivors <= 16)) return;
    w = *v;
    w.id = (v->id + 1) % (uint32_t)v->n;
    expect_refused(t, &w, i, "id");
    w = *v;
    w.draw_word ^= 1;
    expect_refused(t, &w, i, "draw word");
    /* The key's high word (k1) and the counter words enter the draw. */
    w = *v;
    w.seed ^= (uint64_t)1 << 32;
    expect_refused(t, &w, i, "seed's high word");
    w = *v;
    w.turn ^= 1;
    expect_refused(t, &w, i, "turn");
    w = *v;
    w.n_candidates++;
    expect_refused(t, &w, i, "candidate count");
    memcpy(q, v->q, v->n_survivors * sizeof q[0]);
    memcpy(b, v->bounds, v->n_survivors * sizeof b[0]);
    w = *v;
    q[last] ^= 1;
    w.q = q;
    expect_refused(t, &w, i, "a probability's last bit");
    w = *v;
    b[last] ^= 1;
    w.bounds = b;
    expect_refused(t, &w, i, "a bound's last bit");
  }
  TL_EXPECT_STATUS(t, tl_sampler_selftest(tl_sampler_vectors, 0, NULL),
                   TL_ERR_SELF_TEST_FAILED);
}

static const tl_test_case cases[] = {
    TL_CASE(test_known_answers),
    TL_CASE(test_wrong_answers_refused),
};
TL_SUITE(sampler_selftest, cases);
