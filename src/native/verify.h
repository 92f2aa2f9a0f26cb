/* A lane against golden vectors (docs/golden.md, docs/tolerance.md), in
 * two steps that tinylm verify and tinylm promote share:
 *   tl_verify_observe  runs the golden's prompt with capture (and its
 *                      greedy continuation), keeping the raw values;
 *   tl_verify_judge    compares them with the golden under a named
 *                      tolerance profile and names the first divergence.
 * Judging needs no model, so a stored observation can be judged again
 * under another policy without running inference (docs/promotion.md
 * §Invalidation). */
#ifndef TL_NATIVE_VERIFY_H
#define TL_NATIVE_VERIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "golden.h"
#include "session.h"

/* What a lane computed for a golden. */
typedef struct tl_verify_obs {
  size_t n_records;
  float **cand;   /* per golden record, count floats */
  size_t *filled; /* rows received per record */
  bool shape_error;
  /* What the tolerance profiles need from the model. */
  uint32_t layers;
  double *es;     /* the fast KV cache's score errors per layer (0 on strict) */
  bool quantized; /* q8/q4 matrices (the fast profile's activation term) */
  /* The greedy continuation, fed the reference's tokens, up to and
   * including the first step whose argmax differs: per step the argmax,
   * its logit and the logits' RMS (the error bound's scale). */
  size_t n_steps;
  uint32_t *step_argmax;
  float *step_top;
  double *step_rms;
} tl_verify_obs;

/* Runs g on s (allocated for g's prompt + continuation in one chunk):
 * capture when `capture`, the continuation when `greedy`. A non-finite
 * value is TL_ERR_NUMERICAL_FAILURE with *fault saying where. */
tl_status tl_verify_observe(tl_session *s, const tl_golden *g, bool capture, bool greedy,
                            tl_verify_obs *o, tl_qwen3_fault *fault, char *err,
                            size_t err_cap);
void tl_verify_obs_free(tl_verify_obs *o);

/* The profile a lane is judged by when the plan names none. */
const char *tl_verify_lane_profile(bool fast);

/* The report `verify --json` prints ("profile", "records", "logits",
 * "missing", "greedy", "counts", "first_divergence", "pass") under
 * profile (TL_TOLERANCE_PROFILE or TL_TOLERANCE_PROFILE_FAST); NULL when
 * out of memory or the profile is unknown. records/greedy: which parts to
 * judge. */
json_t *tl_verify_judge(const tl_qwen3_config *cfg, const tl_golden *g,
                        const tl_verify_obs *o, const char *profile, bool records,
                        bool greedy);

/* The observation as a golden document of the candidate's values (NULL
 * values for unfilled records are written as zeros and flagged in the
 * side record) plus a side record (JSON: filled counts, es, quantized,
 * greedy steps; floats as their IEEE bits), and back. */
tl_status tl_verify_obs_encode(const tl_verify_obs *o, const tl_golden *g,
                               const uint8_t *metadata, size_t metadata_len,
                               const char *weights, tl_golden_producer p, uint8_t **capture,
                               size_t *capture_len, json_t **side);
tl_status tl_verify_obs_decode(const tl_golden *g, const uint8_t *capture, size_t capture_len,
                               const json_t *side, tl_verify_obs *o, char *err,
                               size_t err_cap);

#endif
