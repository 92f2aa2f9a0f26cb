/* Conflict records: why a conversion stopped, machine-readable
 * (docs/qwen3-config.md §Conflict stops, docs/convert.md): deterministic
 * CBOR {"conflict": kind, "field": name, "sources": [{"file", "value",
 * "ids"?}, ...], "message": text}. Shared by the config resolver and the
 * converter. */
#ifndef TL_TOOLS_CONFLICT_H
#define TL_TOOLS_CONFLICT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_CONFLICT_MAX_SOURCES 4
#define TL_CONFLICT_MAX_IDS 8

typedef struct tl_conflict_source {
  const char *file;
  const json_t *value; /* the claim as the file holds it; NULL: absent */
  bool has_ids;        /* special tokens: the claim as an id set */
  uint32_t ids[TL_CONFLICT_MAX_IDS];
  size_t n_ids;
} tl_conflict_source;

typedef struct tl_conflict {
  const char *kind, *field, *message;
  tl_conflict_source sources[TL_CONFLICT_MAX_SOURCES];
  size_t n_sources;
} tl_conflict;

/* The record as deterministic CBOR (malloc'd into *out). */
tl_status tl_conflict_encode(const tl_conflict *c, uint8_t **out, size_t *len);

#endif
