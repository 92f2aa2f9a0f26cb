/* What an artifact holds, as `tinylm inspect` shows it (docs/slm.md
 * §tinylm inspect): a lazy open that verifies each section and tensor
 * digest one at a time (so a failure names the section or tensor), and
 * the inspect object. Shared by tinylm inspect and tinylm promote's
 * artifact and independent-reader claims (promote_mechanical.c). */
#ifndef TL_NATIVE_SLM_VIEW_H
#define TL_NATIVE_SLM_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "slm/slm.h"
#include "slm/tensors.h"

/* Opens file[0..len) lazily (structure only) and, when verify is true,
 * checks every section digest and then every tensor digest in the order
 * of an eager open. On failure *at is the file offset of the offending
 * field or data and `what` (may be NULL) names it: "container" (header
 * or section table), "section metadata", "tensor directory", "tensor NAME". tensors is zeroed for a
 * tokenizer-only artifact. p may be NULL (no progress). */
tl_status tl_slm_view_open(const uint8_t *file, size_t len, bool verify,
                           tl_cli_progress *p, tl_slm *slm,
                           tl_slm_tensors *tensors, tl_slm_artifact_kind *kind,
                           size_t *at, char *what, size_t what_cap);

/* The `tinylm inspect --json` object of an artifact opened with
 * tl_slm_view_open (id: the file's SHA-256; verified: whether every digest
 * was checked). NULL with *st set when the metadata section is not a CBOR
 * map (TL_ERR_INVALID_MODEL) or memory ran out. */
json_t *tl_slm_view_json(const tl_slm *slm, const tl_slm_tensors *tensors,
                         size_t file_len, const uint8_t id[32], bool verified,
                         tl_status *st);

/* The section kind's name in that object ("metadata", ..., NULL for a
 * kind outside 1..5). */
const char *tl_slm_view_kind_name(uint32_t kind);

#endif
