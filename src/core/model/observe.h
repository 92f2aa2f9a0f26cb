/* Observation records of a forward pass (docs/architecture.md §8, docs/observe.md):
 * instead of whole tensors, each capture point's row (stage, layer,
 * position) becomes a record of its element count, the BLAKE3-256 of the
 * row canonicalised (f32 little-endian, every NaN one pattern) and bounded
 * summaries (min, max, L2, mean, variance in double, in one fixed
 * sequential order), so two lanes (native, wasm32 scalar, SIMD128,
 * threads) can be compared record by record and a difference located as
 * `tinylm verify` locates one: the same bisection (tl_qwen3_first_divergence).
 *
 * The document (`tinylm.observe/1`, deterministic CBOR, floats as the
 * uints of their f64 bits) is written and read here; freestanding, so
 * every lane writes it with the same code. */
#ifndef TL_CORE_MODEL_OBSERVE_H
#define TL_CORE_MODEL_OBSERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "model/qwen3.h"
#include "tinylm.h"

#define TL_OBSERVE_FORMAT "tinylm.observe/1"

/* Capture points of one layer (attn_norm .. layer_out). */
#define TL_OBSERVE_LAYER_STAGES (TL_QWEN3_STAGE_LAYER_OUT - TL_QWEN3_STAGE_ATTN_NORM + 1)

typedef struct tl_observe_record {
  tl_qwen3_stage stage;
  int32_t layer; /* -1 outside the layers */
  uint32_t pos;
  uint64_t count;     /* elements */
  uint64_t nonfinite; /* elements left out of the summaries (masked -inf) */
  uint8_t blake3[32];
  /* over the finite elements, in index order; all 0 when there are none */
  double min, max, l2, mean, variance;
} tl_observe_record;

/* The record of one row: digest and summaries (stage, layer and pos are
 * the caller's). */
void tl_observe_row(const float *data, size_t n, tl_observe_record *r);

/* Whether a and b hold the same place, count, digest and summary bits. */
bool tl_observe_record_equal(const tl_observe_record *a, const tl_observe_record *b);

/* A sink for tl_qwen3_forward that wants every capture point and records
 * each row, in the order they come (the computation's), into records. */
typedef struct tl_observer {
  tl_observe_record *records;
  size_t cap, n;
  tl_status status; /* TL_ERR_BOUNDS once a row found records full */
} tl_observer;

void tl_observer_init(tl_observer *o, tl_observe_record *records, size_t cap);
tl_qwen3_capture tl_observer_capture(tl_observer *o);

/* Records a forward call of n tokens captures at most (SIZE_MAX when that
 * does not fit a size_t). */
size_t tl_observe_records_max(const tl_qwen3_config *c, size_t n);

/* What the document says besides its records. Text fields are
 * NUL-terminated; the reader refuses longer ones. */
typedef struct tl_observe_meta {
  char version[16]; /* producer: the library's version */
  char lane[16];    /* "scalar" (the strict lane) or "fast" */
  char profile[32]; /* the lane's numerical profile: "scalar-f32/1", "fast/4" */
  /* execution: recorded, outside the identity (the same profile gives the
   * same bits on any of them) */
  char host[32];    /* "native", "wasm32" */
  char isa[32];     /* kernel variant */
  uint32_t threads;
  uint8_t artifact[32]; /* SHA-256 of the .slm */
  uint32_t layers;
  const uint32_t *ids; /* the prompt, fed from position 0 in one call */
  size_t n_ids;
} tl_observe_meta;

/* Bytes the document of meta and n records takes at most (SIZE_MAX on
 * overflow). */
size_t tl_observe_doc_bound(const tl_observe_meta *meta, size_t n);

/* Writes the document into buf (cap bytes; tl_observe_doc_bound is
 * enough) and its length to *len. scratch: the CBOR writer's map scratch
 * (a few KiB), rewound before returning. TL_ERR_BOUNDS when cap is short,
 * TL_ERR_INVALID_ARGUMENT for text that is not UTF-8 or a record outside
 * the stages. */
tl_status tl_observe_write(const tl_observe_meta *meta, const tl_observe_record *records,
                           size_t n, uint8_t *buf, size_t cap, size_t *len, tl_arena *scratch);

typedef struct tl_observe_doc {
  tl_observe_meta meta; /* ids in arena */
  tl_observe_record *records; /* in arena, in document order */
  size_t n_records;
} tl_observe_doc;

/* Reads a document into doc (its arrays in arena). TL_ERR_INVALID_CBOR for
 * bytes that are not deterministic CBOR; TL_ERR_INVALID_ARGUMENT for a
 * document that breaks the schema (another format, a missing or mistyped
 * field, a stage that does not exist, a layer or position out of range);
 * *why (may be NULL) names what. TL_ERR_OUT_OF_MEMORY (arena). */
tl_status tl_observe_read(const uint8_t *buf, size_t len, tl_observe_doc *doc, tl_arena *arena,
                          const char **why);

/* The first divergence of a forward pass, as `tinylm verify` finds it:
 * state(ctx, stage, layer) says whether the captures of (stage, layer)
 * agree (1), differ (2) or were not taken (0). The embedding first; then
 * the first layer whose layer_out differs, by binary search over the
 * layer_out records (a layer's output carries every earlier error;
 * without them every layer is scanned); then that layer's first differing
 * stage in computation order (the layers after it and final_norm/logits,
 * layer -1, when none does). *probes: the layer_out records probed. False
 * when nothing differs. */
typedef int (*tl_qwen3_capture_state)(void *ctx, tl_qwen3_stage stage, int32_t layer);
bool tl_qwen3_first_divergence(uint32_t layers, tl_qwen3_capture_state state, void *ctx,
                               tl_qwen3_stage *stage, int32_t *layer, size_t *probes);

typedef enum tl_observe_verdict {
  TL_OBSERVE_IDENTICAL = 0,         /* every record equal */
  TL_OBSERVE_DIVERGED = 1,          /* same profile, some record differs */
  TL_OBSERVE_DIFFERENT_PROFILE = 2, /* records differ, as two profiles may */
  TL_OBSERVE_DIFFERENT_INPUT = 3    /* another artifact, prompt or shape: not compared */
} tl_observe_verdict;

typedef struct tl_observe_diff {
  tl_observe_verdict verdict;
  const char *input; /* DIFFERENT_INPUT: "artifact", "prompt" or "layers" */
  size_t compared;   /* records both hold */
  size_t differing;  /* of those, unequal */
  size_t only_a, only_b;
  /* DIVERGED / DIFFERENT_PROFILE: the first divergence */
  tl_qwen3_stage stage;
  int32_t layer;
  uint32_t pos;       /* the first differing position of (stage, layer) */
  size_t index_a, index_b; /* its records; SIZE_MAX where one has none */
  size_t probes;
} tl_observe_diff;

/* Compares two documents record by record (matched by stage, layer and
 * position). scratch: an index of a's records (4 bytes per stage, layer
 * and position: tl_observe_compare_bound), rewound before returning. TL_ERR_INVALID_ARGUMENT
 * when a document holds one record twice (*why says so), TL_ERR_OUT_OF_MEMORY. */
tl_status tl_observe_compare(const tl_observe_doc *a, const tl_observe_doc *b,
                             tl_arena *scratch, tl_observe_diff *d, const char **why);
/* Scratch bytes tl_observe_compare takes with a as its first document
 * (SIZE_MAX on overflow). */
size_t tl_observe_compare_bound(const tl_observe_doc *a);

#endif
