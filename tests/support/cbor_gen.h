/* Seeded random CBOR documents, written through the core's writer: nested
 * arrays and maps (pairs put in random order, so the writer must sort
 * them), unsigned and negative integers with every head-width boundary,
 * byte and text strings (non-ASCII and U+0000 included), bool, null, and
 * the allowed tags. Map keys are of mixed types but never contain bool, so
 * Python dicts (where True == 1) keep every key. Used by the differential
 * tool (tests/diff/cbor_tool.c) and the wasm identity transcript. */
#ifndef TL_TEST_CBOR_GEN_H
#define TL_TEST_CBOR_GEN_H

#include "cbor/cbor.h"

typedef struct tl_cbor_gen {
  uint64_t state;             /* splitmix64 */
  const tl_cbor_limits *tags; /* tags to draw from (n_allowed_tags may be 0) */
  int budget;                 /* items left for this document */
} tl_cbor_gen;

/* Writes one document into a freshly initialised writer and finishes it.
 * TL_ERR_CONFLICT means random keys collided: call again for a new draw. */
tl_status tl_cbor_gen_document(tl_cbor_gen *g, tl_cbor_writer *w, size_t *len);

#endif
