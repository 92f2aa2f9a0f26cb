/* The sampler against docs/sampler.md: golden cases derived by hand (the
 * derivation is in each comment), errors, the trace, the profile identity.
 * The draw is mostly given explicitly (tl_sample_with_draw) so each
 * outcome follows from the text alone; u = word * 2^-32. Random vectors
 * against the independent Python oracle live in
 * tools/oracle/sampler_random.py. */
#include "sample/sampler.h"

#include <string.h>

#include "bytes.h"
#include "tl_test.h"

/* Qwen3's embedding rows and its tokenizer's defined ids (docs/architecture.md §7,
 * docs/sampler.md §Padded vocabulary). */
#define QWEN3_ROWS 151936u
#define QWEN3_DEFINED 151669u

static _Alignas(16) uint8_t scratch_mem[QWEN3_ROWS * 45 + 128];
static float big_logits[QWEN3_ROWS];

#define U_HALF 0x80000000u    /* u = 0.5 */
#define U_QUARTER 0x40000000u /* u = 0.25 */
#define U_3Q 0xC0000000u      /* u = 0.75 */
#define U_MAX 0xFFFFFFFFu     /* u = 1 - 2^-32 */

typedef struct run {
  tl_status st;
  tl_sample_result res;
  tl_sample_trace tr;
  uint32_t ids[16];
  double probs[16], bounds[16];
} run;

/* One step over logits[0..n) with the given draw word. */
static void go(run *r, const tl_sampler_profile *p, const float *logits,
               size_t n, const uint32_t *hist, size_t n_hist, uint32_t ngen,
               uint32_t word) {
  tl_arena a;
  tl_sample_input in;
  memset(&in, 0, sizeof in);
  in.logits = logits;
  in.n = n;
  in.history = hist;
  in.n_history = n_hist;
  in.n_generated = ngen;
  memset(&r->tr, 0, sizeof r->tr);
  r->tr.ids = r->ids;
  r->tr.probs = r->probs;
  r->tr.bounds = r->bounds;
  r->tr.cap = 16;
  tl_arena_init(&a, scratch_mem, sizeof scratch_mem);
  r->st = tl_sample_with_draw(p, &in, word, &a, &r->tr, &r->res);
}

static bool sampled(tl_test_ctx *t, const run *r, uint32_t want) {
  if (!TL_EXPECT_OK(t, r->st)) return false;
  return TL_EXPECT_EQ_U64(t, r->res.id, want) &&
         TL_EXPECT_EQ_U64(t, r->tr.chosen, want) &&
         TL_EXPECT_EQ_U64(t, r->res.draws_used, 1);
}

/* All ties: logits [2, 2, 2, 2], T = 1. Order by id 0, 1, 2, 3; each
 * exp(0) = 1, sum 4, probabilities 0.25 exactly, bounds 0.25 0.5 0.75 1.
 * The chosen one is the first bound strictly above u:
 *   u = 0           -> 0.25 > 0   -> id 0
 *   u = 0.25 - 2^-32 -> id 0;  u = 0.25 -> 0.5 is first above -> id 1
 *   u = 0.5         -> id 2;   u = 1 - 2^-32 -> id 3. */
static void test_all_ties(tl_test_ctx *t) {
  static const float l[4] = {2, 2, 2, 2};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  run r;
  go(&r, &p, l, 4, NULL, 0, 0, 0);
  sampled(t, &r, 0);
  TL_EXPECT_EQ_U64(t, r.tr.count, 4);
  for (int j = 0; j < 4; j++) {
    TL_EXPECT_EQ_U64(t, r.ids[j], (uint64_t)j);
    TL_EXPECT(t, r.probs[j] == 0.25);
    TL_EXPECT(t, r.bounds[j] == 0.25 * (j + 1));
  }
  go(&r, &p, l, 4, NULL, 0, 0, U_QUARTER - 1);
  sampled(t, &r, 0);
  go(&r, &p, l, 4, NULL, 0, 0, U_QUARTER);
  sampled(t, &r, 1);
  go(&r, &p, l, 4, NULL, 0, 0, U_HALF);
  sampled(t, &r, 2);
  go(&r, &p, l, 4, NULL, 0, 0, U_MAX);
  sampled(t, &r, 3);
}

/* One survivor: n = 5, ban {0, 1, 3, 4}: only id 2 is a candidate; it has
 * probability 1, bound 1 > any u. The draw is still taken (S-12). */
static void test_one_survivor(tl_test_ctx *t) {
  static const float l[5] = {9, 8, -4, 7, 6};
  static const uint32_t ban[4] = {0, 1, 3, 4};
  tl_sampler_profile p = tl_sampler_profile_default(5);
  run r;
  p.ban = ban;
  p.n_ban = 4;
  go(&r, &p, l, 5, NULL, 0, 0, U_MAX);
  sampled(t, &r, 2);
  TL_EXPECT_EQ_U64(t, r.res.n_candidates, 1);
  TL_EXPECT_EQ_U64(t, r.tr.count, 1);
  TL_EXPECT(t, r.probs[0] == 1.0);
  TL_EXPECT_EQ_U64(t, r.res.draw_word, U_MAX);
}

/* Top-p exactly at the boundary: logits [0, 0, 0, 0], top_p = 0.5. Running
 * sums 0.25, 0.5: 0.5 reaches 0.5 (>=) at the second, which is kept:
 * survivors {0, 1}, renormalised 0.5 each, bounds 0.5, 1.
 *   u = 0.5 -> id 1;  u = 0.5 - 2^-32 -> id 0.
 * top_p one ulp above 0.5: the second sum (exactly 0.5) falls short, the
 * third (0.75) crosses: three survivors of 1/3; u = 0.5 is below 2/3 ->
 * the second, id 1; u = 0.75 -> id 2. */
static void test_top_p_boundary(tl_test_ctx *t) {
  static const float l[4] = {0, 0, 0, 0};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  run r;
  p.top_p = 0.5;
  go(&r, &p, l, 4, NULL, 0, 0, U_HALF);
  sampled(t, &r, 1);
  TL_EXPECT_EQ_U64(t, r.tr.count, 2);
  TL_EXPECT(t, r.probs[0] == 0.5 && r.probs[1] == 0.5);
  go(&r, &p, l, 4, NULL, 0, 0, U_HALF - 1);
  sampled(t, &r, 0);
  p.top_p = 0.5 + 0x1p-53;
  go(&r, &p, l, 4, NULL, 0, 0, U_HALF);
  sampled(t, &r, 1);
  TL_EXPECT_EQ_U64(t, r.tr.count, 3);
  go(&r, &p, l, 4, NULL, 0, 0, U_3Q);
  sampled(t, &r, 2);
  /* top_p 0: the first running sum already reaches it: one survivor. */
  p.top_p = 0;
  go(&r, &p, l, 4, NULL, 0, 0, U_MAX);
  sampled(t, &r, 0);
  TL_EXPECT_EQ_U64(t, r.tr.count, 1);
}

/* Negative zero: -0 == +0, so [-0, +0, -0] is an all-tie: greedy takes the
 * lowest id, 0. [-1, -0, +0]: ids 1 and 2 tie on top; greedy -> 1; with
 * T = 1 the order is 1, 2, 0 and u = 0 picks the first, id 1. */
static void test_negative_zero(tl_test_ctx *t) {
  static const float a[3] = {-0.0f, 0.0f, -0.0f};
  static const float b[3] = {-1.0f, -0.0f, 0.0f};
  tl_sampler_profile p = tl_sampler_profile_default(3);
  run r;
  p.temperature = 0;
  go(&r, &p, a, 3, NULL, 0, 0, U_HALF);
  sampled(t, &r, 0);
  go(&r, &p, b, 3, NULL, 0, 0, U_HALF);
  sampled(t, &r, 1);
  p.temperature = 1;
  go(&r, &p, b, 3, NULL, 0, 0, 0);
  sampled(t, &r, 1);
  TL_EXPECT_EQ_U64(t, r.ids[0], 1);
  TL_EXPECT_EQ_U64(t, r.ids[1], 2);
  TL_EXPECT_EQ_U64(t, r.ids[2], 0);
  TL_EXPECT(t, r.probs[0] == r.probs[1]);
}

/* Temperature 0: [1, 5, 3, 5]: ids 1 and 3 share the highest logit, the
 * lower id wins: 1. One survivor with probability 1. Through tl_sample the
 * draw is still taken: the result carries Philox's word at the position,
 * draws_used is 1. */
static void test_temperature_zero(tl_test_ctx *t) {
  static const float l[4] = {1, 5, 3, 5};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  tl_sample_input in;
  tl_sample_result res;
  tl_arena a;
  run r;
  p.temperature = 0;
  go(&r, &p, l, 4, NULL, 0, 0, 12345);
  sampled(t, &r, 1);
  TL_EXPECT_EQ_U64(t, r.tr.count, 1);
  TL_EXPECT(t, r.probs[0] == 1.0);
  memset(&in, 0, sizeof in);
  in.logits = l;
  in.n = 4;
  in.pos.seed = 42;
  tl_arena_init(&a, scratch_mem, sizeof scratch_mem);
  TL_EXPECT_OK(t, tl_sample(&p, &in, &a, NULL, &res));
  TL_EXPECT_EQ_U64(t, res.id, 1);
  TL_EXPECT_EQ_U64(t, res.draws_used, 1);
  TL_EXPECT_EQ_U64(t, res.draw_word, 0x9ceaf053); /* philox_test.c */
  TL_EXPECT_EQ_U64(t, a.used, 0);
}

/* The draw comes from the position: four ties make the chosen index
 * floor(4u) = word >> 30. Seed 42, token 0: word 0x9ceaf053 -> 2; token 1:
 * 0x42e0b8b3 -> 1; token 2: 0x9be4a6d3 -> 2 (words: philox_test.c). */
static void test_draw_position(tl_test_ctx *t) {
  static const float l[4] = {0, 0, 0, 0};
  static const uint32_t want[3] = {2, 1, 2};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  for (uint32_t tok = 0; tok < 3; tok++) {
    tl_sample_input in;
    tl_sample_result res;
    tl_arena a;
    memset(&in, 0, sizeof in);
    in.logits = l;
    in.n = 4;
    in.pos.seed = 42;
    in.pos.token = tok;
    tl_arena_init(&a, scratch_mem, sizeof scratch_mem);
    TL_EXPECT_OK(t, tl_sample(&p, &in, &a, NULL, &res));
    TL_EXPECT_EQ_U64(t, res.id, want[tok]);
  }
}

/* Huge temperature 1e30: [1, 2, 3, 4] / 1e30 differ by ~1e-30, and
 * exp(-3e-30) rounds to 1, so all four have probability 0.25 exactly, in
 * the order 3, 2, 1, 0 (descending value). u = 0.5 -> third -> id 1. */
static void test_huge_temperature(tl_test_ctx *t) {
  static const float l[4] = {1, 2, 3, 4};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  run r;
  p.temperature = 1e30;
  go(&r, &p, l, 4, NULL, 0, 0, U_HALF);
  sampled(t, &r, 1);
  TL_EXPECT_EQ_U64(t, r.ids[0], 3);
  for (int j = 0; j < 4; j++) TL_EXPECT(t, r.probs[j] == 0.25);
}

/* Tiny temperature 1e-30: [1, 3, 2, 3] * 1e30: ids 1 and 3 tie at 3e30,
 * the others are 1e30 and 2e30 below: exp(-1e30) = 0. Order 1, 3, 2, 0,
 * probabilities 0.5, 0.5, 0, 0; bounds 0.5, 1, 1, 1.
 *   u = 0.5 - 2^-32 -> id 1;  u = 0.5 -> id 3;  u = 1 - 2^-32 -> id 3
 * (a zero-probability candidate can never be chosen). The smallest
 * temperature allowed, 2^-128, behaves the same. */
static void test_tiny_temperature(tl_test_ctx *t) {
  static const float l[4] = {1, 3, 2, 3};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  run r;
  p.temperature = 1e-30;
  go(&r, &p, l, 4, NULL, 0, 0, U_HALF - 1);
  sampled(t, &r, 1);
  go(&r, &p, l, 4, NULL, 0, 0, U_HALF);
  sampled(t, &r, 3);
  go(&r, &p, l, 4, NULL, 0, 0, U_MAX);
  sampled(t, &r, 3);
  TL_EXPECT_EQ_U64(t, r.tr.count, 4);
  TL_EXPECT(t, r.probs[0] == 0.5 && r.probs[1] == 0.5);
  TL_EXPECT(t, r.probs[2] == 0 && r.probs[3] == 0);
  p.temperature = 0x1p-128;
  go(&r, &p, l, 4, NULL, 0, 0, U_MAX);
  sampled(t, &r, 3);
}

/* Repetition penalty 2 (S-4), greedy so the outcome is the top value:
 * a) [-1, -1.5], history [0]: negative x 2: id 0 -> -2 < -1.5 -> id 1
 *    (dividing would give -0.5 and id 0).
 * b) [-1, -2, 2, 1], history [0, 2, 0]: distinct ids {0, 2}, once each:
 *    [-2, -2, 1, 1] -> tie 2/3 -> id 2 (twice would give 0.5 -> id 3).
 * c) window: [2, 3, 0], history [1, 2, 2]: W = 2 sees {2} -> [2, 3, 0] ->
 *    id 1; W = 3 sees {1, 2} -> [2, 1.5, 0] -> id 0; W = 0 -> off -> id 1.
 * d) zero stays zero: [0, -0.25], history [0, 1], penalty 2 -> [0, -0.5]
 *    -> id 0. */
static void test_repetition_penalty(tl_test_ctx *t) {
  static const float la[2] = {-1.0f, -1.5f};
  static const float lb[4] = {-1, -2, 2, 1};
  static const float lc[3] = {2, 3, 0};
  static const float ld[2] = {0, -0.25f};
  static const uint32_t ha[1] = {0}, hb[3] = {0, 2, 0}, hc[3] = {1, 2, 2},
                        hd[2] = {0, 1};
  tl_sampler_profile p = tl_sampler_profile_default(2);
  run r;
  p.temperature = 0;
  p.repeat_penalty = 2;
  p.repeat_window = 64;
  go(&r, &p, la, 2, ha, 1, 0, 0);
  sampled(t, &r, 1);
  p.defined_ids = 4;
  go(&r, &p, lb, 4, hb, 3, 0, 0);
  sampled(t, &r, 2);
  p.defined_ids = 3;
  p.repeat_window = 2;
  go(&r, &p, lc, 3, hc, 3, 0, 0);
  sampled(t, &r, 1);
  p.repeat_window = 3;
  go(&r, &p, lc, 3, hc, 3, 0, 0);
  sampled(t, &r, 0);
  p.repeat_window = 0;
  go(&r, &p, lc, 3, hc, 3, 0, 0);
  sampled(t, &r, 1);
  p.defined_ids = 2;
  p.repeat_window = 2;
  go(&r, &p, ld, 2, hd, 2, 0, 0);
  sampled(t, &r, 0);
}

/* Frequency and presence penalties (S-4b), greedy over [2, 1.5, 0]. The
 * history is the prompt [0, 1] and then the generated [0, 0]: id 0 was
 * generated twice, id 1 only sits in the prompt (never counted).
 *   frequency 0.3: z0 = 2 - 2*0.3 = 1.4 < 1.5 -> id 1; 0.2: 1.6 -> id 0
 *   presence 0.6: z0 = 1.4 -> id 1; 0.3: 1.7 -> id 0 (once, not per
 *   count: scaled by the count it would be 1.4 -> id 1)
 *   frequency 2 with nothing generated (n_generated 0): no penalty -> id 0
 *   presence 2 with n_generated 2: z0 = 0, id 1 (prompt only) 1.5 -> id 1
 *   negative: generated [1], frequency -0.5: z1 = 2.0 ties z0 -> id 0;
 *   -0.6: z1 = 2.1 -> id 1. */
static void test_frequency_presence(tl_test_ctx *t) {
  static const float l[3] = {2, 1.5f, 0};
  static const uint32_t h[4] = {0, 1, 0, 0}, h1[1] = {1};
  tl_sampler_profile p = tl_sampler_profile_default(3);
  run r;
  p.temperature = 0;
  p.frequency_penalty = 0.3;
  go(&r, &p, l, 3, h, 4, 2, 0);
  sampled(t, &r, 1);
  p.frequency_penalty = 0.2;
  go(&r, &p, l, 3, h, 4, 2, 0);
  sampled(t, &r, 0);
  p.frequency_penalty = 0;
  p.presence_penalty = 0.6;
  go(&r, &p, l, 3, h, 4, 2, 0);
  sampled(t, &r, 1);
  p.presence_penalty = 0.3;
  go(&r, &p, l, 3, h, 4, 2, 0);
  sampled(t, &r, 0);
  p.presence_penalty = 0;
  p.frequency_penalty = 2;
  go(&r, &p, l, 3, h, 4, 0, 0);
  sampled(t, &r, 0);
  p.frequency_penalty = 0;
  p.presence_penalty = 2;
  go(&r, &p, l, 3, h, 4, 2, 0);
  sampled(t, &r, 1);
  p.presence_penalty = 0;
  p.frequency_penalty = -0.5;
  go(&r, &p, l, 3, h1, 1, 1, 0);
  sampled(t, &r, 0);
  p.frequency_penalty = -0.6;
  go(&r, &p, l, 3, h1, 1, 1, 0);
  sampled(t, &r, 1);
}

/* Logit biases (S-4a, S-2). Greedy over [0, 1, 150]:
 *   id 0 +2.5 -> 2.5 beats 1 but not 150 -> id 2
 *   id 2 exactly -100: a ban, not 150 - 100 = 50 -> id 1
 *   id 2 -99.5: 50.5 -> id 2 (only exactly -100 bans)
 *   id 2 -100 with ids 0 and 1 banned: nothing left -> all_masked
 * Before the repetition penalty: [1, 0.9], id 0 +1 and penalty 4 on id 0:
 *   (1 + 1) / 4 = 0.5 < 0.9 -> id 1 (1/4 + 1 = 1.25 if the penalty came
 *   first -> id 0).
 * Before the temperature: [0, 0], T 0.5, id 1 + 0.5*ln 3 -> s1 = ln 3,
 *   p1 = 3/4 first, bounds 0.75, 1; u = 0.7 -> id 1 (added after the
 *   division, p1 = sqrt 3 / (1 + sqrt 3) = 0.634 < 0.7 -> id 0). */
static void test_logit_bias(tl_test_ctx *t) {
  static const float l[3] = {0, 1, 150}, lr[2] = {1, 0.9f}, lt[2] = {0, 0};
  static const uint32_t id0[1] = {0}, id1[1] = {1}, id2[1] = {2}, ban01[2] = {0, 1},
                        h0[1] = {0};
  double b;
  tl_sampler_profile p = tl_sampler_profile_default(3);
  run r;
  p.temperature = 0;
  p.n_bias = 1;
  p.bias = &b;
  p.bias_ids = id0;
  b = 2.5;
  go(&r, &p, l, 3, NULL, 0, 0, 0);
  sampled(t, &r, 2);
  p.bias_ids = id2;
  b = -100;
  go(&r, &p, l, 3, NULL, 0, 0, 0);
  sampled(t, &r, 1);
  b = -99.5;
  go(&r, &p, l, 3, NULL, 0, 0, 0);
  sampled(t, &r, 2);
  b = -100;
  p.ban = ban01;
  p.n_ban = 2;
  go(&r, &p, l, 3, NULL, 0, 0, 0);
  TL_EXPECT_STATUS(t, r.st, TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, r.res.fault, TL_SAMPLE_FAULT_ALL_MASKED);
  p = tl_sampler_profile_default(2);
  p.temperature = 0;
  p.n_bias = 1;
  p.bias = &b;
  p.bias_ids = id0;
  b = 1;
  p.repeat_penalty = 4;
  p.repeat_window = 64;
  go(&r, &p, lr, 2, h0, 1, 0, 0);
  sampled(t, &r, 1);
  p = tl_sampler_profile_default(2);
  p.temperature = 0.5;
  p.n_bias = 1;
  p.bias = &b;
  p.bias_ids = id1;
  b = 0.5 * 1.0986122886681098; /* ln 3 */
  go(&r, &p, lt, 2, NULL, 0, 0, 0xB3333333u); /* u = 0.7 */
  sampled(t, &r, 1);
}

/* Min-p: [0, -1, -3], T = 1: e = [1, 0.3679, 0.0498], sum 1.4177,
 * p = [0.7054, 0.2595, 0.0351]. min_p 0.1: threshold 0.0705 drops id 2;
 * renormalised [0.7311, 0.2689], bounds 0.7311, 1. u = 0.98 -> id 1.
 * Without min-p the bounds are 0.7054, 0.9649, 1 and u = 0.98 -> id 2.
 * min_p 1: only probabilities equal to the top stay -> id 0. */
static void test_min_p(tl_test_ctx *t) {
  static const float l[3] = {0, -1, -3};
  const uint32_t u98 = 0xFAE147AEu; /* 0.98 */
  tl_sampler_profile p = tl_sampler_profile_default(3);
  run r;
  go(&r, &p, l, 3, NULL, 0, 0, u98);
  sampled(t, &r, 2);
  p.min_p = 0.1;
  go(&r, &p, l, 3, NULL, 0, 0, u98);
  sampled(t, &r, 1);
  TL_EXPECT_EQ_U64(t, r.tr.count, 2);
  p.min_p = 1;
  go(&r, &p, l, 3, NULL, 0, 0, U_MAX);
  sampled(t, &r, 0);
}

/* Top-k: [1, 3, 2, 3]: order 1, 3, 2, 0. k = 2 keeps {1, 3} at 0.5 each:
 * u = 0.5 -> id 3. k = 1 -> id 1 whatever u. k = 9 (> n) is off. */
static void test_top_k(tl_test_ctx *t) {
  static const float l[4] = {1, 3, 2, 3};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  run r;
  p.top_k = 2;
  go(&r, &p, l, 4, NULL, 0, 0, U_HALF);
  sampled(t, &r, 3);
  TL_EXPECT_EQ_U64(t, r.tr.count, 2);
  p.top_k = 1;
  go(&r, &p, l, 4, NULL, 0, 0, U_MAX);
  sampled(t, &r, 1);
  p.top_k = 9;
  go(&r, &p, l, 4, NULL, 0, 0, U_MAX);
  TL_EXPECT_EQ_U64(t, r.tr.count, 4);
}

/* Min-length EOS and all masked: n = 3, defined_ids 2 (id 2 is padding),
 * ban {0}, EOS {1}, min_new 1. With nothing generated yet EOS is masked
 * too: no candidate -> TL_ERR_INVALID_ARGUMENT, fault all_masked, no draw
 * used. Once one token was generated EOS is allowed -> id 1. */
static void test_all_masked(tl_test_ctx *t) {
  static const float l[3] = {5, 1, 9};
  static const uint32_t ban[1] = {0}, eos[1] = {1};
  tl_sampler_profile p = tl_sampler_profile_default(2);
  run r;
  p.ban = ban;
  p.n_ban = 1;
  p.eos = eos;
  p.n_eos = 1;
  p.min_new = 1;
  go(&r, &p, l, 3, NULL, 0, 0, U_HALF);
  TL_EXPECT_STATUS(t, r.st, TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, r.res.fault, TL_SAMPLE_FAULT_ALL_MASKED);
  TL_EXPECT_EQ_U64(t, r.res.draws_used, 0);
  TL_EXPECT_STR(t, tl_sample_fault_name(r.res.fault), "all_masked");
  go(&r, &p, l, 3, NULL, 0, 1, U_HALF);
  sampled(t, &r, 1);
}

/* Non-finite logits (S-1), before any mask: [0, NaN, inf] -> index 1;
 * [0, 1, -inf] -> index 2; a NaN at a banned or padded id still fails. */
static void test_non_finite(tl_test_ctx *t) {
  float l[3] = {0, 0, 0};
  static const uint32_t ban[1] = {1};
  tl_sampler_profile p = tl_sampler_profile_default(3);
  run r;
  l[1] = tl_bits_to_f32(0x7fc00000u);
  l[2] = tl_bits_to_f32(0x7f800000u);
  go(&r, &p, l, 3, NULL, 0, 0, 0);
  TL_EXPECT_STATUS(t, r.st, TL_ERR_NUMERICAL_FAILURE);
  TL_EXPECT_EQ_U64(t, r.res.fault, TL_SAMPLE_FAULT_NON_FINITE);
  TL_EXPECT_EQ_U64(t, r.res.fault_index, 1);
  p.ban = ban;
  p.n_ban = 1;
  go(&r, &p, l, 3, NULL, 0, 0, 0);
  TL_EXPECT_EQ_U64(t, r.res.fault_index, 1);
  l[1] = 1;
  l[2] = tl_bits_to_f32(0xff800000u);
  p.defined_ids = 2; /* id 2 is padding, and still checked */
  go(&r, &p, l, 3, NULL, 0, 0, 0);
  TL_EXPECT_STATUS(t, r.st, TL_ERR_NUMERICAL_FAILURE);
  TL_EXPECT_EQ_U64(t, r.res.fault_index, 2);
}

/* Padded vocabulary (S-2): n = 8 rows, 6 defined. [0 x 7, 9]: the top
 * logit is at padded id 7, which is banned: greedy among the ties 0..5 ->
 * id 0. At Qwen3's size (151936 rows, 151669 defined): logit 50 at
 * id 151669 (the first padded row), 1 at id 151668 (the last defined one),
 * 0 elsewhere -> greedy id 151668; sampling at T = 1 never leaves the
 * defined ids: the survivors number 151669. */
static void test_padded_vocabulary(tl_test_ctx *t) {
  static const float l[8] = {0, 0, 0, 0, 0, 0, 0, 9};
  tl_sampler_profile p = tl_sampler_profile_default(6);
  tl_sample_input in;
  tl_sample_result res;
  tl_arena a;
  run r;
  p.temperature = 0;
  go(&r, &p, l, 8, NULL, 0, 0, 0);
  sampled(t, &r, 0);
  TL_EXPECT_EQ_U64(t, r.res.n_candidates, 6);

  memset(big_logits, 0, sizeof big_logits);
  big_logits[QWEN3_DEFINED - 1] = 1;
  big_logits[QWEN3_DEFINED] = 50;
  p = tl_sampler_profile_default(QWEN3_DEFINED);
  p.temperature = 0;
  memset(&in, 0, sizeof in);
  in.logits = big_logits;
  in.n = QWEN3_ROWS;
  tl_arena_init(&a, scratch_mem, sizeof scratch_mem);
  TL_EXPECT(t, tl_sampler_scratch_bytes(QWEN3_ROWS) <= sizeof scratch_mem);
  TL_EXPECT_OK(t, tl_sample(&p, &in, &a, NULL, &res));
  TL_EXPECT_EQ_U64(t, res.id, QWEN3_DEFINED - 1);
  TL_EXPECT_EQ_U64(t, res.n_candidates, QWEN3_DEFINED);
  p.temperature = 1;
  for (uint32_t tok = 0; tok < 4; tok++) {
    in.pos.token = tok;
    TL_EXPECT_OK(t, tl_sample(&p, &in, &a, NULL, &res));
    TL_EXPECT(t, res.id < QWEN3_DEFINED);
    TL_EXPECT_EQ_U64(t, res.n_survivors, QWEN3_DEFINED);
  }
  /* defined_ids above the row count is a mismatch, not a no-op. */
  p.defined_ids = QWEN3_ROWS + 1;
  TL_EXPECT_STATUS(t, tl_sample(&p, &in, &a, NULL, &res),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, res.fault, TL_SAMPLE_FAULT_VOCAB);
}

/* Ban list ids past the rows are harmless; EOS past the rows too. */
static void test_bans(tl_test_ctx *t) {
  static const float l[3] = {3, 2, 1};
  static const uint32_t ban[3] = {0, 2, 99};
  tl_sampler_profile p = tl_sampler_profile_default(3);
  run r;
  p.temperature = 0;
  p.ban = ban;
  p.n_ban = 3;
  go(&r, &p, l, 3, NULL, 0, 0, 0);
  sampled(t, &r, 1);
}

/* Arguments: each profile field out of range names itself; history ids
 * must be < n; NULLs. */
static void test_profile_check(tl_test_ctx *t) {
  static const float l[2] = {0, 0};
  static const uint32_t unsorted[2] = {3, 1}, dup[2] = {1, 1},
                        hist[3] = {0, 1, 2};
  tl_sampler_profile p = tl_sampler_profile_default(2), q;
  tl_sampler_field f;
  run r;
  struct {
    int field;
    double value;
  } bad[] = {
      {TL_SAMPLER_FIELD_TEMPERATURE, -1.0},
      {TL_SAMPLER_FIELD_TEMPERATURE, 1e-200},
      {TL_SAMPLER_FIELD_TEMPERATURE, __builtin_inf()},
      {TL_SAMPLER_FIELD_TEMPERATURE, __builtin_nan("")},
      {TL_SAMPLER_FIELD_TOP_P, 1.5},
      {TL_SAMPLER_FIELD_TOP_P, -0.25},
      {TL_SAMPLER_FIELD_MIN_P, __builtin_nan("")},
      {TL_SAMPLER_FIELD_MIN_P, 2},
      {TL_SAMPLER_FIELD_REPEAT_PENALTY, 0},
      {TL_SAMPLER_FIELD_REPEAT_PENALTY, 0x1p65},
  };
  TL_EXPECT_OK(t, tl_sampler_profile_check(&p, &f));
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    q = p;
    if (bad[i].field == TL_SAMPLER_FIELD_TEMPERATURE) q.temperature = bad[i].value;
    if (bad[i].field == TL_SAMPLER_FIELD_TOP_P) q.top_p = bad[i].value;
    if (bad[i].field == TL_SAMPLER_FIELD_MIN_P) q.min_p = bad[i].value;
    if (bad[i].field == TL_SAMPLER_FIELD_REPEAT_PENALTY)
      q.repeat_penalty = bad[i].value;
    f = TL_SAMPLER_FIELD_DEFINED_IDS;
    TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f),
                     TL_ERR_INVALID_ARGUMENT);
    if (!TL_EXPECT_EQ_U64(t, f, bad[i].field)) tl_test_print_u64(t, i);
    go(&r, &q, l, 2, NULL, 0, 0, 0);
    TL_EXPECT_STATUS(t, r.st, TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_EQ_U64(t, r.res.fault, TL_SAMPLE_FAULT_PROFILE);
    TL_EXPECT_EQ_U64(t, r.res.fault_index, bad[i].field);
  }
  q = p;
  q.eos = unsorted;
  q.n_eos = 2;
  TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, f, TL_SAMPLER_FIELD_EOS);
  q = p;
  q.ban = dup;
  q.n_ban = 2;
  TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, f, TL_SAMPLER_FIELD_BAN);
  q = p;
  q.n_ban = 1; /* NULL list with a count */
  TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
  q = p;
  q.defined_ids = 0;
  TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, f, TL_SAMPLER_FIELD_DEFINED_IDS);
  /* The penalties in [-2, 2]; biases in [-100, 100], ids ascending. */
  {
    static const double penalties[] = {2.5, -2.0000000000000004, __builtin_nan("")};
    static const uint32_t one[1] = {1}, two[2] = {1, 0};
    static const double over[1] = {100.5}, nan1[1] = {__builtin_nan("")},
                        fine[2] = {100, -100};
    for (size_t i = 0; i < 3; i++) {
      q = p;
      q.frequency_penalty = penalties[i];
      TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
      TL_EXPECT_EQ_U64(t, f, TL_SAMPLER_FIELD_FREQUENCY_PENALTY);
      q = p;
      q.presence_penalty = penalties[i];
      TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
      TL_EXPECT_EQ_U64(t, f, TL_SAMPLER_FIELD_PRESENCE_PENALTY);
    }
    q = p;
    q.frequency_penalty = -2;
    q.presence_penalty = 2;
    TL_EXPECT_OK(t, tl_sampler_profile_check(&q, &f));
    q = p;
    q.bias_ids = one;
    q.n_bias = 1;
    q.bias = over;
    TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_EQ_U64(t, f, TL_SAMPLER_FIELD_BIAS);
    q.bias = nan1;
    TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
    q.bias = NULL;
    TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
    q.bias_ids = two;
    q.n_bias = 2;
    q.bias = fine;
    TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_EQ_U64(t, f, TL_SAMPLER_FIELD_BIAS);
    go(&r, &q, l, 2, NULL, 0, 0, 0);
    TL_EXPECT_EQ_U64(t, r.res.fault, TL_SAMPLE_FAULT_PROFILE);
    TL_EXPECT_EQ_U64(t, r.res.fault_index, TL_SAMPLER_FIELD_BIAS);
  }
  /* -0 temperature is greedy; 2^-128 is the smallest sampled one. */
  q = p;
  q.temperature = -0.0;
  TL_EXPECT_OK(t, tl_sampler_profile_check(&q, &f));
  q.temperature = 0x1p-128;
  TL_EXPECT_OK(t, tl_sampler_profile_check(&q, &f));
  q.temperature = 0x1p-129;
  TL_EXPECT_STATUS(t, tl_sampler_profile_check(&q, &f), TL_ERR_INVALID_ARGUMENT);

  /* History id 2 >= n = 2: fault history, index 2. */
  go(&r, &p, l, 2, hist, 3, 0, 0);
  TL_EXPECT_STATUS(t, r.st, TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, r.res.fault, TL_SAMPLE_FAULT_HISTORY);
  TL_EXPECT_EQ_U64(t, r.res.fault_index, 2);
  go(&r, &p, l, 0, NULL, 0, 0, 0);
  TL_EXPECT_EQ_U64(t, r.res.fault, TL_SAMPLE_FAULT_VOCAB);
  go(&r, &p, NULL, 2, NULL, 0, 0, 0);
  TL_EXPECT_EQ_U64(t, r.res.fault, TL_SAMPLE_FAULT_VOCAB);
  go(&r, NULL, l, 2, NULL, 0, 0, 0);
  TL_EXPECT_STATUS(t, r.st, TL_ERR_INVALID_ARGUMENT);
}

/* Scratch: the documented bound suffices, one byte less of usable space
 * fails with out_of_memory, and the arena is rewound either way. */
static void test_scratch(tl_test_ctx *t) {
  static const float l[5] = {1, 2, 3, 4, 5};
  tl_sampler_profile p = tl_sampler_profile_default(5);
  tl_sample_input in;
  tl_sample_result res;
  tl_arena a;
  memset(&in, 0, sizeof in);
  in.logits = l;
  in.n = 5;
  tl_arena_init(&a, scratch_mem, tl_sampler_scratch_bytes(5));
  TL_EXPECT_OK(t, tl_sample(&p, &in, &a, NULL, &res));
  TL_EXPECT_EQ_U64(t, a.used, 0);
  TL_EXPECT(t, a.high_water > 0);
  tl_arena_init(&a, scratch_mem, a.high_water - 1);
  TL_EXPECT_STATUS(t, tl_sample(&p, &in, &a, NULL, &res),
                   TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT_EQ_U64(t, res.fault, TL_SAMPLE_FAULT_SCRATCH);
  TL_EXPECT_EQ_U64(t, a.used, 0);
  TL_EXPECT_EQ_U64(t, tl_sampler_scratch_bytes(SIZE_MAX / 4), SIZE_MAX);
}

/* A trace smaller than the survivors: the first cap are written, count is
 * all of them, truncated is set. */
static void test_trace_truncated(tl_test_ctx *t) {
  static const float l[4] = {0, 0, 0, 0};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  tl_sample_input in;
  tl_sample_result res;
  tl_sample_trace tr;
  uint32_t ids[3] = {7, 7, 7};
  tl_arena a;
  memset(&in, 0, sizeof in);
  memset(&tr, 0, sizeof tr);
  in.logits = l;
  in.n = 4;
  tr.ids = ids;
  tr.cap = 2;
  tl_arena_init(&a, scratch_mem, sizeof scratch_mem);
  TL_EXPECT_OK(t, tl_sample_with_draw(&p, &in, U_MAX, &a, &tr, &res));
  TL_EXPECT_EQ_U64(t, tr.count, 4);
  TL_EXPECT(t, tr.truncated);
  TL_EXPECT_EQ_U64(t, ids[0], 0);
  TL_EXPECT_EQ_U64(t, ids[1], 1);
  TL_EXPECT_EQ_U64(t, ids[2], 7);
  TL_EXPECT_EQ_U64(t, tr.chosen, 3);
  TL_EXPECT(t, tr.draw == 1.0 - 0x1p-32);
}

/* The profile identity: exact text for one profile; the two zeros are one
 * identity; any field change changes it; CBOR is deterministic. */
static void test_identity(tl_test_ctx *t) {
  static const uint32_t eos[2] = {151643, 151645}, ban[1] = {7};
  static const char want[] =
      "tinylm-sampler-profile-v1\n"
      "temperature=3fe3333333333333\n"
      "top_k=20\n"
      "top_p=3fee666666666666\n"
      "min_p=0000000000000000\n"
      "repeat_penalty=3ff0000000000000\n"
      "repeat_window=64\n"
      "min_new=0\n"
      "eos=151643,151645\n"
      "ban=7\n"
      "defined_ids=151669\n"
      "prng=philox4x32-10\n"
      "order=tinylm-sampler-v1\n"
      "deviation=padded-vocabulary-banned\n";
  char buf[512], buf2[512];
  size_t len = 0, len2 = 0;
  uint8_t cb[512], cb2[512], arena_mem[4096];
  tl_arena ar;
  tl_cbor_writer w;
  tl_sampler_profile p = tl_sampler_profile_default(QWEN3_DEFINED), q;
  /* Qwen3's generation_config.json: temperature 0.6, top_k 20, top_p 0.95. */
  p.temperature = 0.6;
  p.top_k = 20;
  p.top_p = 0.95;
  p.repeat_window = 64;
  p.eos = eos;
  p.n_eos = 2;
  p.ban = ban;
  p.n_ban = 1;
  TL_EXPECT_STATUS(t, tl_sampler_profile_text(&p, NULL, 0, &len),
                   TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, len, sizeof want - 1);
  TL_EXPECT_OK(t, tl_sampler_profile_text(&p, buf, sizeof buf, &len));
  if (TL_EXPECT_EQ_U64(t, len, sizeof want - 1))
    TL_EXPECT_MEM(t, buf, want, len);
  q = p;
  q.temperature = 0.0;
  TL_EXPECT_OK(t, tl_sampler_profile_text(&q, buf, sizeof buf, &len));
  q.temperature = -0.0;
  TL_EXPECT_OK(t, tl_sampler_profile_text(&q, buf2, sizeof buf2, &len2));
  TL_EXPECT(t, len == len2 && memcmp(buf, buf2, len) == 0);
  q = p;
  q.min_new = 1;
  TL_EXPECT_OK(t, tl_sampler_profile_text(&q, buf2, sizeof buf2, &len2));
  TL_EXPECT(t, len2 != sizeof want - 1 || memcmp(want, buf2, len2) != 0);
  q = p;
  q.top_p = 0.5;
  TL_EXPECT_STATUS(t, tl_sampler_profile_text(&q, buf2, 10, &len2),
                   TL_ERR_BOUNDS);
  q.top_p = 2;
  TL_EXPECT_STATUS(t, tl_sampler_profile_text(&q, buf2, sizeof buf2, &len2),
                   TL_ERR_INVALID_ARGUMENT);

  tl_arena_init(&ar, arena_mem, sizeof arena_mem);
  tl_cbor_writer_init(&w, cb, sizeof cb, &ar);
  TL_EXPECT_OK(t, tl_sampler_profile_cbor(&p, &w));
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  tl_arena_init(&ar, arena_mem, sizeof arena_mem);
  tl_cbor_writer_init(&w, cb2, sizeof cb2, &ar);
  TL_EXPECT_OK(t, tl_sampler_profile_cbor(&p, &w));
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len2));
  TL_EXPECT(t, len == len2 && memcmp(cb, cb2, len) == 0);
  TL_EXPECT_EQ_U64(t, cb[0], 0xae); /* a map of 14 pairs */

  /* The later fields, when on, come after defined_ids (0.5 and -100 as
   * their IEEE bits) and add four pairs to the map. */
  {
    static const uint32_t bias_ids[2] = {5, 9};
    static const double bias[2] = {-100, 0.5};
    static const char tail[] = "defined_ids=151669\n"
                               "frequency_penalty=3fe0000000000000\n"
                               "presence_penalty=bfe0000000000000\n"
                               "logit_bias=5:c059000000000000,9:3fe0000000000000\n"
                               "prng=";
    q = p;
    q.frequency_penalty = 0.5;
    q.presence_penalty = -0.5;
    q.bias_ids = bias_ids;
    q.bias = bias;
    q.n_bias = 2;
    TL_EXPECT_OK(t, tl_sampler_profile_text(&q, buf2, sizeof buf2 - 1, &len2));
    buf2[len2] = 0;
    TL_EXPECT(t, tl_test_contains(buf2, tail));
    tl_arena_init(&ar, arena_mem, sizeof arena_mem);
    tl_cbor_writer_init(&w, cb2, sizeof cb2, &ar);
    TL_EXPECT_OK(t, tl_sampler_profile_cbor(&q, &w));
    TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len2));
    TL_EXPECT_EQ_U64(t, cb2[0], 0xb2); /* a map of 18 pairs */
  }
}

/* The candidate order of S-6 over 300 logits drawn from few values (ties
 * everywhere, both zeros, extremes): every candidate kept (the radix
 * sort) and top_k = 4 (the heap) each give the order of a plain
 * insertion sort by (value descending, id ascending). */
static void test_order_paths(tl_test_ctx *t) {
  static const float vals[8] = {0.0f, -0.0f, 1.5f, -1.5f, 3.0e38f, -3.0e38f, 1e-45f, 2.0f};
  enum { N = 300 };
  static float l[N];
  static uint32_t want[N], got[N];
  uint32_t x = 12345;
  tl_sampler_profile p = tl_sampler_profile_default(N);
  for (size_t i = 0; i < N; i++) {
    x = x * 1103515245u + 12345u;
    l[i] = vals[(x >> 16) % 8];
    want[i] = (uint32_t)i;
  }
  for (size_t i = 1; i < N; i++) /* (value desc, id asc); -0 == +0 */
    for (size_t j = i; j > 0; j--) {
      double a = l[want[j - 1]], b = l[want[j]];
      if (a > b || (a == b && want[j - 1] < want[j])) break;
      uint32_t tmp = want[j];
      want[j] = want[j - 1];
      want[j - 1] = tmp;
    }
  for (int heap = 0; heap < 2; heap++) {
    tl_sample_input in;
    tl_sample_result res;
    tl_sample_trace tr;
    tl_arena a;
    size_t k = heap ? 4 : N;
    memset(&in, 0, sizeof in);
    memset(&tr, 0, sizeof tr);
    memset(got, 0xff, sizeof got);
    in.logits = l;
    in.n = N;
    tr.ids = got;
    tr.cap = N;
    p.top_k = heap ? 4 : 0;
    tl_arena_init(&a, scratch_mem, sizeof scratch_mem);
    TL_EXPECT_OK(t, tl_sample_with_draw(&p, &in, U_HALF, &a, &tr, &res));
    TL_EXPECT_EQ_U64(t, tr.count, k);
    TL_EXPECT(t, memcmp(got, want, k * sizeof *got) == 0);
  }
}

/* The allow mask (S-2a), by hand: logits [9, 5, 1, 7], greedy. Unmasked
 * the highest is id 0; with id 0 and id 3 outside the mask the highest
 * candidate left is id 1 (5 > 1). A mask with no bit for ids 0..3: every
 * id masked -> all_masked, no draw. */
static void test_allow_mask_top_token(tl_test_ctx *t) {
  static const float l[4] = {9, 5, 1, 7};
  static const uint64_t allow[1] = {0x6}, none[1] = {0xfffffffffffffff0u};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  tl_sample_input in;
  tl_sample_result res;
  tl_arena a;
  p.temperature = 0;
  memset(&in, 0, sizeof in);
  in.logits = l;
  in.n = 4;
  tl_arena_init(&a, scratch_mem, sizeof scratch_mem);
  TL_EXPECT_OK(t, tl_sample_with_draw(&p, &in, U_HALF, &a, NULL, &res));
  TL_EXPECT_EQ_U64(t, res.id, 0);
  in.allow = allow;
  TL_EXPECT_OK(t, tl_sample_with_draw(&p, &in, U_HALF, &a, NULL, &res));
  TL_EXPECT_EQ_U64(t, res.id, 1);
  TL_EXPECT_EQ_U64(t, res.n_candidates, 2);
  in.allow = none; /* bits past n do not count */
  TL_EXPECT_STATUS(t, tl_sample_with_draw(&p, &in, U_HALF, &a, NULL, &res),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, res.fault, TL_SAMPLE_FAULT_ALL_MASKED);
  TL_EXPECT_EQ_U64(t, res.draws_used, 0);
}

/* The mask and the other masks together: EOS {1} allowed by the mask but
 * masked by min_new while nothing was generated; the mask's other id (2)
 * is banned: all masked. Once min_new is met, EOS is the one candidate. */
static void test_allow_mask_and_min_new(tl_test_ctx *t) {
  static const float l[4] = {3, 2, 1, 0};
  static const uint32_t eos[1] = {1}, ban[1] = {2};
  static const uint64_t allow[1] = {0x6};
  tl_sampler_profile p = tl_sampler_profile_default(4);
  tl_sample_input in;
  tl_sample_result res;
  tl_arena a;
  p.eos = eos;
  p.n_eos = 1;
  p.ban = ban;
  p.n_ban = 1;
  p.min_new = 1;
  memset(&in, 0, sizeof in);
  in.logits = l;
  in.n = 4;
  in.allow = allow;
  tl_arena_init(&a, scratch_mem, sizeof scratch_mem);
  TL_EXPECT_STATUS(t, tl_sample_with_draw(&p, &in, U_HALF, &a, NULL, &res),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, res.fault, TL_SAMPLE_FAULT_ALL_MASKED);
  in.n_generated = 1;
  TL_EXPECT_OK(t, tl_sample_with_draw(&p, &in, U_HALF, &a, NULL, &res));
  TL_EXPECT_EQ_U64(t, res.id, 1);
}

/* A tiny deterministic generator for the property test below. */
static uint32_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005u + 1442695040888963407u;
  return (uint32_t)(*s >> 33);
}

/* The mask is a ban list that changes per step (S-2a): over random logits,
 * masks and profiles (top_k, top_p, min_p, penalty, temperature), a step
 * with the mask equals, trace bit for bit, the same step with the mask's
 * zero bits as bans (the ban path is checked against the Python oracle,
 * tools/oracle/sampler_random.py). And the draw does not move: tl_sample
 * with the mask takes the word at its position, as without it (S-12). */
static void test_allow_mask_is_a_ban(tl_test_ctx *t) {
  enum { N = 150 };
  static float l[N];
  static uint32_t ban[N], hist[8];
  static uint32_t ids_a[N], ids_b[N];
  static double pa[N], pb[N], ba[N], bb[N];
  uint64_t seed = 12345, allow[(N + 63) / 64];
  for (int c = 0; c < 200; c++) {
    tl_sampler_profile p = tl_sampler_profile_default(N), q;
    tl_sample_input in;
    tl_sample_result ra, rb, rc;
    tl_sample_trace ta, tb;
    tl_arena a;
    size_t nb = 0;
    memset(allow, 0, sizeof allow);
    for (size_t i = 0; i < N; i++) {
      l[i] = (float)((int)(lcg(&seed) % 2001) - 1000) / 100.0f;
      if (lcg(&seed) % 4 == 0 || i == (size_t)c % N)
        allow[i / 64] |= 1ull << (i % 64);
      else
        ban[nb++] = (uint32_t)i;
    }
    for (int h = 0; h < 8; h++) hist[h] = lcg(&seed) % N;
    p.temperature = c % 5 == 0 ? 0.0 : 0.25 + (lcg(&seed) % 8) / 4.0;
    p.top_k = c % 3 == 0 ? lcg(&seed) % 20 : 0;
    p.top_p = c % 4 == 1 ? (lcg(&seed) % 100) / 100.0 : 1.0;
    p.min_p = c % 4 == 2 ? (lcg(&seed) % 50) / 100.0 : 0.0;
    p.repeat_penalty = c % 2 ? 1.3 : 1.0;
    p.repeat_window = c % 2 ? 8 : 0;
    q = p;
    q.ban = ban;
    q.n_ban = nb;
    memset(&in, 0, sizeof in);
    in.logits = l;
    in.n = N;
    in.history = hist;
    in.n_history = 8;
    in.pos.seed = 77;
    in.pos.token = (uint32_t)c;
    memset(&ta, 0, sizeof ta);
    memset(&tb, 0, sizeof tb);
    ta.ids = ids_a, ta.probs = pa, ta.bounds = ba, ta.cap = N;
    tb.ids = ids_b, tb.probs = pb, tb.bounds = bb, tb.cap = N;
    tl_arena_init(&a, scratch_mem, sizeof scratch_mem);
    in.allow = allow;
    TL_EXPECT_OK(t, tl_sample(&p, &in, &a, &ta, &ra));
    in.allow = NULL;
    TL_EXPECT_OK(t, tl_sample(&q, &in, &a, &tb, &rb));
    TL_EXPECT_OK(t, tl_sample(&p, &in, &a, NULL, &rc)); /* unmasked */
    if (!TL_EXPECT_EQ_U64(t, ra.id, rb.id) || !TL_EXPECT_EQ_U64(t, ta.count, tb.count) ||
        !TL_EXPECT_EQ_U64(t, ra.n_candidates, rb.n_candidates))
      return;
    TL_EXPECT(t, memcmp(ids_a, ids_b, ta.count * sizeof *ids_a) == 0);
    TL_EXPECT(t, memcmp(pa, pb, ta.count * sizeof *pa) == 0);
    TL_EXPECT(t, memcmp(ba, bb, ta.count * sizeof *ba) == 0);
    TL_EXPECT(t, (allow[ra.id / 64] >> (ra.id % 64)) & 1u);
    TL_EXPECT_EQ_U64(t, ra.draw_word, rc.draw_word);
    TL_EXPECT_EQ_U64(t, ra.draws_used, 1);
  }
}

static const tl_test_case cases[] = {
    TL_CASE(test_all_ties),         TL_CASE(test_one_survivor),
    TL_CASE(test_top_p_boundary),   TL_CASE(test_negative_zero),
    TL_CASE(test_temperature_zero), TL_CASE(test_draw_position),
    TL_CASE(test_huge_temperature), TL_CASE(test_tiny_temperature),
    TL_CASE(test_repetition_penalty), TL_CASE(test_frequency_presence),
    TL_CASE(test_logit_bias),       TL_CASE(test_min_p),
    TL_CASE(test_top_k),            TL_CASE(test_all_masked),
    TL_CASE(test_non_finite),       TL_CASE(test_padded_vocabulary),
    TL_CASE(test_bans),             TL_CASE(test_profile_check),
    TL_CASE(test_scratch),          TL_CASE(test_trace_truncated),
    TL_CASE(test_identity),         TL_CASE(test_order_paths),
    TL_CASE(test_allow_mask_top_token), TL_CASE(test_allow_mask_and_min_new),
    TL_CASE(test_allow_mask_is_a_ban),
};
TL_SUITE(sampler, cases);
