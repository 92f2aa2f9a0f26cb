/* The sampler's known answers (docs/web.md, Self-tests: `sampler`): the
 * cases of sampler_vectors.h, written by
 * tools/oracle/sampler_selftest_vectors.py from the Python reference of
 * docs/sampler.md, run through tl_sample. Freestanding: each wasm32 lane
 * runs it at start-up (web/wasm/self_test.c), the native and wasm32 unit
 * tests on every build. */
#ifndef TL_CORE_SAMPLE_SAMPLER_SELFTEST_H
#define TL_CORE_SAMPLE_SAMPLER_SELFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample/sampler_vectors.h"
#include "tinylm.h"

#define TL_SAMPLER_SELFTEST_MAX_SURVIVORS 16

/* What tl_sample gave for one case: the draw word, chosen id, candidate
 * and survivor counts, survivors with their probabilities and bounds. */
typedef struct tl_sampler_draw {
  uint32_t draw_word, id, draws_used;
  size_t n_candidates, n_survivors;
  bool truncated; /* more survivors than the arrays hold */
  uint32_t survivors[TL_SAMPLER_SELFTEST_MAX_SURVIVORS];
  double q[TL_SAMPLER_SELFTEST_MAX_SURVIVORS];
  double bounds[TL_SAMPLER_SELFTEST_MAX_SURVIVORS];
} tl_sampler_draw;

/* Runs one case through tl_sample at its draw position; its status (a
 * case the fixed buffers cannot hold: TL_ERR_BOUNDS). */
tl_status tl_sampler_vector_draw(const tl_sampler_vector *v,
                                 tl_sampler_draw *out);
/* Whether a draw is the case's known answer, bit for bit. */
bool tl_sampler_vector_matches(const tl_sampler_vector *v,
                               const tl_sampler_draw *d);

/* Runs v[0..count) through tl_sample at each case's draw position: TL_OK
 * when every case gives the oracle's draw word, chosen id, candidate and
 * survivor counts, survivors and the bits of their probabilities and
 * bounds; else TL_ERR_SELF_TEST_FAILED with *failed (may be NULL) the
 * first differing case (an empty table fails too, *failed = 0). */
tl_status tl_sampler_selftest(const tl_sampler_vector *v, size_t count,
                              size_t *failed);

#endif
