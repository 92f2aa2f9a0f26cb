/* An independent reference of docs/sampler.md's steps S-4 to S-11, written
 * from the document (it never calls tl_sample): the stochastic claim
 * (promote_stochastic.c) replays every token the lane drew with it, and
 * computes the lanes' post-sampler distributions. Only the generator
 * (tl_draw_word, with its Random123 known answers) and the exponential
 * (tl_exp, S-7) are the core's. */
#ifndef TL_NATIVE_SAMPLER_REPLAY_H
#define TL_NATIVE_SAMPLER_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

/* A sampler configuration of the design (no EOS masking, no bans: the
 * claim's generations set neither; padded ids are never candidates). */
typedef struct tl_replay_cfg {
  double temperature; /* > 0: the claim never replays greedy steps */
  uint32_t top_k;     /* 0: off */
  double top_p;       /* 1: off */
  double min_p;       /* 0: off */
  double repeat_penalty;
  uint32_t repeat_window; /* 0: off */
} tl_replay_cfg;

/* A step's candidates: ids[i] with raw logit z[i] (n of them). With
 * `full`, they are every candidate (S and R are computed, in candidate
 * order, S-7/S-10); without, they are a stored prefix of the candidate
 * order, n_all the candidate count and S, R the sums the observer
 * computed over all of them. */
typedef struct tl_replay_step {
  const uint32_t *ids;
  const float *z;
  size_t n, n_all;
  bool full;
  double S, R;
  const uint32_t *history; /* prompt then generated ids, oldest first */
  size_t n_history;
  uint32_t word; /* the step's draw word (S-0) */
} tl_replay_step;

/* margin: a decision (a top-p running sum, the min-p threshold, the draw
 * against a bound) closer than this to its threshold is undecidable. */
#define TL_REPLAY_MARGIN 1e-12

typedef struct tl_replay_out {
  uint32_t id;        /* the chosen id */
  size_t rank;        /* its position in candidate order */
  bool undecidable;   /* a decision within TL_REPLAY_MARGIN */
  double S, R;        /* the sums used */
  size_t survivors;   /* after S-9 */
  size_t *order;      /* n indices into ids (malloc'd): the first `head` in candidate order */
  size_t head;        /* the candidates within 40 of the largest (sampler_replay.c) */
} tl_replay_out;

/* TL_OK with *out (free out->order); TL_ERR_INVALID_ARGUMENT when the
 * input cannot be replayed (the draw beyond a stored prefix, a NaN), with
 * err saying why; TL_ERR_OUT_OF_MEMORY. */
tl_status tl_replay(const tl_replay_cfg *cfg, const tl_replay_step *in, tl_replay_out *out,
                    char *err, size_t err_cap);

/* A post-sampler distribution known in part: q[i] of ids[i] (n entries,
 * every other candidate together holds `rest`). */
typedef struct tl_replay_dist {
  uint32_t *ids;
  double *q;
  size_t n;
  double rest;
} tl_replay_dist;

/* A lane's distribution after the sampler's transforms (S-4 to S-10) from
 * the n largest raw logits (ids, z: a prefix by raw logit, every id of
 * the penalty window among them) and lse = log sum exp(z/T) over all
 * candidates without the penalty; floor the largest raw logit left out
 * (-INFINITY when none is). Where a filter's cut lies among the ids left
 * out, they keep their mass in `rest`. */
tl_status tl_replay_distribution(const tl_replay_cfg *cfg, const uint32_t *ids, const float *z,
                                 size_t n, size_t n_all, double lse, double floor_z,
                                 const uint32_t *history, size_t n_history, tl_replay_dist *out);
void tl_replay_dist_free(tl_replay_dist *d);

/* An upper bound of the total-variation distance between two partly
 * known distributions (exact when both rests are 0): ids listed in both
 * count |qa - qb|, in one only their q, and each rest in full. */
double tl_replay_tvd_bound(const tl_replay_dist *a, const tl_replay_dist *b);

#endif
