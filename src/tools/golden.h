/* Reading golden-vector documents (docs/golden.md, `tinylm.golden/1`) on
 * the native side: the prompt, the captured positions and every record's
 * values widened to double. */
#ifndef TL_TOOLS_GOLDEN_H
#define TL_TOOLS_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#include "model/qwen3.h"
#include "tinylm.h"

#define TL_GOLDEN_MAX_RANK 4

typedef struct tl_golden_record {
  tl_qwen3_stage stage;
  int32_t layer; /* -1: not inside a layer */
  size_t rank, shape[TL_GOLDEN_MAX_RANK];
  size_t count; /* elements */
  double *values; /* malloc */
} tl_golden_record;

typedef struct tl_golden {
  char producer[64], precision[8];
  uint32_t *ids; /* the prompt (malloc) */
  size_t n_ids;
  uint32_t *positions; /* captured query positions, ascending (malloc) */
  size_t n_positions;
  tl_golden_record *records; /* in document order (malloc) */
  size_t n_records;
  /* A greedy continuation after the prompt (may be absent: 0 steps): the
   * reference's token and its top-1 minus top-2 logit margin per step. */
  uint32_t *continuation; /* malloc */
  double *margins;        /* malloc */
  size_t n_continuation;
} tl_golden;

/* TL_ERR_INVALID_CBOR / TL_ERR_INVALID_MODEL with the reason in err;
 * TL_ERR_OUT_OF_MEMORY. On failure *g is freed and zeroed. */
tl_status tl_golden_read(const uint8_t *doc, size_t len, tl_golden *g,
                         char *err, size_t err_cap);
void tl_golden_free(tl_golden *g);

/* The producer of a run's capture: the lane that computed it, e.g.
 * {"tinylm-scalar", "scalar-f32/1"} or {"tinylm-fast", "fast/4"}. */
typedef struct tl_golden_producer {
  const char *name, *profile;
} tl_golden_producer;

/* A golden document of a run's values for the records g has (same names,
 * layers, shapes; dtype f32): producer {"name": p.name, "version",
 * "precision": "f32", "profile": p.profile}, model {"config": the effective
 * config map copied from the artifact's metadata, "weights": weights}, g's
 * prompt and positions. *out is malloc'd. */
tl_status tl_golden_write_run(const tl_golden *g, float *const *values,
                              const uint8_t *metadata, size_t metadata_len,
                              const char *weights, tl_golden_producer p,
                              uint8_t **out, size_t *out_len);

#endif
