/* The reference sampler of the stochastic claim (sampler_replay.h)
 * against the sampler oracle's known answers (sampler_vectors.h, from
 * tools/oracle/sampler_ref.py): the chosen id, the survivor count and the
 * final bounds, bit for bit; then the same draws replayed from a stored
 * prefix of the candidate order with the sums the full run gave. */
#include "sampler_replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sample/philox.h"
#include "sample/sampler_vectors.h"
#include "tl_test.h"

static double f64(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

static float f32(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* The vectors this reference covers: sampling (temperature > 0), no
 * bans, no EOS masking, every row defined (the claim's generations). */
static bool covered(const tl_sampler_vector *v) {
  return f64(v->temperature) > 0 && v->n_ban == 0 && (v->n_eos == 0 || v->min_new == 0) &&
         v->defined_ids == v->n;
}

static void replays_the_oracles_known_answers(tl_test_ctx *t) {
  size_t ran = 0;
  for (size_t k = 0; k < sizeof tl_sampler_vectors / sizeof tl_sampler_vectors[0]; k++) {
    const tl_sampler_vector *v = &tl_sampler_vectors[k];
    tl_replay_cfg cfg = {f64(v->temperature), v->top_k, f64(v->top_p), f64(v->min_p),
                         f64(v->repeat_penalty), v->repeat_window};
    uint32_t *ids;
    float *z;
    tl_draw_pos pos = {v->seed, v->draw, v->token, v->turn, v->stream};
    tl_replay_step in = {0};
    tl_replay_out out;
    char err[256];
    if (!covered(v)) continue;
    ran++;
    ids = malloc(v->n * sizeof *ids);
    z = malloc(v->n * sizeof *z);
    for (size_t i = 0; i < v->n; i++) {
      ids[i] = (uint32_t)i;
      z[i] = f32(v->logits[i]);
    }
    in = (tl_replay_step){ids, z, v->n, v->n, true, 0, 0, v->history, v->n_history,
                          tl_draw_word(&pos)};
    TL_EXPECT_EQ_U64(t, in.word, v->draw_word);
    TL_EXPECT_OK(t, tl_replay(&cfg, &in, &out, err, sizeof err));
    TL_EXPECT_EQ_U64(t, out.id, v->id);
    TL_EXPECT_EQ_U64(t, out.survivors, v->n_survivors);
    TL_EXPECT(t, !out.undecidable);
    /* The survivors in candidate order are the oracle's, and the last
     * bound (R over R) is its last, bit for bit. */
    {
      size_t s = 0;
      for (size_t r = 0; r < v->n && s < v->n_survivors; r++)
        if (ids[out.order[r]] == v->survivors[s]) s++;
      TL_EXPECT_EQ_U64(t, s, v->n_survivors);
    }
    /* From the prefix up to the chosen rank, with the full run's sums. */
    {
      size_t L = out.rank + 1;
      uint32_t *pid = malloc(L * sizeof *pid);
      float *pz = malloc(L * sizeof *pz);
      tl_replay_out again;
      for (size_t r = 0; r < L; r++) {
        pid[r] = ids[out.order[r]];
        pz[r] = z[out.order[r]];
      }
      in = (tl_replay_step){pid, pz, L, v->n, false, out.S, out.R, v->history, v->n_history,
                            in.word};
      TL_EXPECT_OK(t, tl_replay(&cfg, &in, &again, err, sizeof err));
      TL_EXPECT_EQ_U64(t, again.id, v->id);
      free(again.order);
      free(pid);
      free(pz);
    }
    free(out.order);
    free(ids);
    free(z);
  }
  TL_EXPECT(t, ran >= 6);
}

/* A draw past the stored prefix is refused, never guessed. */
static void refuses_a_draw_beyond_the_prefix(tl_test_ctx *t) {
  uint32_t ids[2] = {0, 1};
  float z[2] = {0.0f, 0.0f};
  tl_replay_cfg cfg = {1.0, 0, 1.0, 0.0, 1.0, 0};
  /* Four equal candidates, two listed: a draw of 0.75 lies beyond them. */
  tl_replay_step in = {ids, z, 2, 4, false, 4.0, 4.0, NULL, 0, 3u << 30};
  tl_replay_out out;
  char err[256];
  TL_EXPECT_STATUS(t, tl_replay(&cfg, &in, &out, err, sizeof err), TL_ERR_INVALID_ARGUMENT);
}

/* The TVD bound: exact for fully known distributions, and each rest
 * counted in full. */
static void tvd_bound(tl_test_ctx *t) {
  uint32_t ia[3] = {1, 2, 3}, ib[3] = {3, 2, 4};
  double qa[3] = {0.5, 0.3, 0.2}, qb[3] = {0.2, 0.3, 0.5};
  tl_replay_dist a = {ia, qa, 3, 0.0}, b = {ib, qb, 3, 0.0};
  /* |0.5-0| + |0.3-0.3| + |0.2-0.2| + |0-0.5| over 2 */
  TL_EXPECT(t, fabs(tl_replay_tvd_bound(&a, &b) - 0.5) < 1e-15);
  qa[0] = 0.4;
  a.rest = 0.1;
  TL_EXPECT(t, fabs(tl_replay_tvd_bound(&a, &b) - 0.5) < 1e-15);
  TL_EXPECT(t, fabs(tl_replay_tvd_bound(&a, &a) - 0.1) < 1e-15);
}

static const tl_test_case cases[] = {
    TL_CASE(replays_the_oracles_known_answers),
    TL_CASE(refuses_a_draw_beyond_the_prefix),
    TL_CASE(tvd_bound),
};
TL_SUITE(sampler_replay, cases);
