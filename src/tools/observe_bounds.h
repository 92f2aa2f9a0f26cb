/* Observation records of two numerical profiles judged within the bound
 * one of them promises against the other (docs/webgpu-profile.md, W-5):
 * a webgpu/1 document against a fast/4 one of the same artifact and
 * prompt. The records hold summaries, not values, so each is checked
 * through what an element-wise bound implies for its count, non-finite
 * count, L2 norm, mean, minimum and maximum. */
#ifndef TL_TOOLS_OBSERVE_BOUNDS_H
#define TL_TOOLS_OBSERVE_BOUNDS_H

#include <stdbool.h>
#include <stddef.h>

#include "model/observe.h"
#include "model/qwen3.h"

/* W-5's name; any change to tl_observe_within makes a new one. */
#define TL_TOLERANCE_PROFILE_WEBGPU "webgpu-vs-fast/1"

typedef struct tl_observe_within_result {
  size_t compared, identical, outside;
  size_t first_ref, first_cand; /* the first record outside (computation order); SIZE_MAX: none */
  const char *field;            /* of that record: the summary outside its bound */
  double ratio, max_ratio;      /* |difference| / bound: that summary's, the largest of all */
} tl_observe_within_result;

/* Whether profiles a and b are the pair W-5 judges (in either order). */
bool tl_observe_within_applies(const char *a, const char *b);

/* Judges every record of cand against ref's record of the same place
 * (both read by tl_observe_read; ref the fast/4 one) with element bound
 * |c - r| <= atol + rtol max(|c|, |r|), rtol = 2 rtol_fast and atol =
 * rtol RMS(ref record) + 2^-60, rtol_fast being fast-f32-vs-f64/2's for
 * that record (tl_tolerance_for_fast with cfg, quantized and es, keys =
 * the prompt's length). TL_ERR_INVALID_ARGUMENT when the documents do not
 * hold the same places; TL_ERR_OUT_OF_MEMORY. */
tl_status tl_observe_within(const tl_observe_doc *ref, const tl_observe_doc *cand,
                            const tl_qwen3_config *cfg, bool quantized, const double *es,
                            tl_observe_within_result *out);

#endif
