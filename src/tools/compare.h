/* Comparing a run's tensors with golden vectors (docs/tolerance.md): the
 * preregistered tolerance profile and the per-tensor metrics. */
#ifndef TL_TOOLS_COMPARE_H
#define TL_TOOLS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/qwen3.h"

/* The profile's name; any change to tl_tolerance_for makes a new one. */
#define TL_TOLERANCE_PROFILE "scalar-f32-vs-f64/1"

typedef struct tl_tolerance {
  double rtol, atol;
} tl_tolerance;

/* The bound for one record: rtol = 16 (depth + 1) gamma_N with
 * N = max(hidden, intermediate, heads * head_dim, keys), u = 2^-24,
 * depth = the layer (0 for the embedding, the layer count for final_norm
 * and logits); atol = rtol * ref_rms (the reference record's RMS). */
tl_tolerance tl_tolerance_for(const tl_qwen3_config *cfg, uint32_t keys,
                              tl_qwen3_stage stage, int32_t layer,
                              double ref_rms);

/* The fast lane's profile (docs/fast-profile.md), derived before its first
 * comparison: tl_tolerance_for's rtol plus 3 rho (depth + 1) when the
 * matrices are q8/q4 (activation quantization, rho = 24 / (127 sqrt 12)),
 * plus the binary16 KV cache's terms (F-11) from es (tl_kv_score_errors):
 * with P(l) = e^(2 es[l]) - 1 and A(l) = P(l) + 2^-11, a record of layer l
 * adds the sum of A over the layers before it, and its own layer's
 * es[l] / ref_rms (scores, scores_masked), P(l) (probs) or A(l) + 2^-25 /
 * ref_rms (attn_out and every later stage of the layer); final_norm and
 * logits add A over all layers. atol = rtol * ref_rms. */
#define TL_TOLERANCE_PROFILE_FAST "fast-f32-vs-f64/2"
tl_tolerance tl_tolerance_for_fast(const tl_qwen3_config *cfg, uint32_t keys,
                                   tl_qwen3_stage stage, int32_t layer,
                                   double ref_rms, bool quantized, const double *es);

/* es[l] for l < layers: the bound on the error one attention score of
 * layer l takes from keys stored as binary16 (relative 2^-11, absolute
 * 2^-25 for subnormals): sqrt(D) Wq (2^-11 Wk + 2^-25), Wq and Wk the
 * largest |q_norm| and |k_norm| weight of the layer (after RMSNorm a
 * head's q has 2-norm at most sqrt(D) Wq, k at most sqrt(D) Wk; rope
 * rotates pairs). TL_ERR_OUT_OF_MEMORY, or a weight's decoding error. */
tl_status tl_kv_score_errors(const tl_qwen3 *m, double *es);

typedef struct tl_compare_stats {
  size_t count, n_fail, first_fail; /* first_fail: SIZE_MAX when none */
  double max_abs, max_rel;          /* max_rel over |ref| above the floor */
  double rms_err, nrmse, cosine;
  /* max over elements of |c - r| / (atol + rtol max(|c|, |r|)): how close
   * the record comes to its bound (above 1 fails); INFINITY for a
   * non-finite mismatch */
  double max_bound_ratio;
  uint64_t max_ulp; /* candidate vs reference rounded to f32 */
  double ref_rms;
} tl_compare_stats;

/* Element rule: |c - r| <= atol + rtol * max(|c|, |r|); equal infinities
 * (masked scores) match. rel_floor: |r| below it is left out of max_rel. */
void tl_compare(const double *ref, const float *cand, size_t n,
                tl_tolerance tol, double rel_floor, tl_compare_stats *s);

/* RMS of the finite values of ref. */
double tl_rms(const double *ref, size_t n);

/* Final distributions of one position: Jensen-Shannon divergence (nats)
 * of softmax(ref) and softmax(cand) in f64, overlap of the top-k id sets,
 * the reference's top-2 margin and both argmaxes (lowest id on ties). */
typedef struct tl_logit_stats {
  double jsd, margin;
  size_t topk_overlap, k;
  uint32_t ref_argmax, cand_argmax;
} tl_logit_stats;

void tl_compare_logits(const double *ref, const float *cand, size_t vocab,
                       size_t k, tl_logit_stats *s);

#endif
