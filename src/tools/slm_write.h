/* Writes a .slm container (docs/slm.md) from sections held in memory:
 * deterministic bytes (same sections, same file) and atomic (temp file +
 * rename). */
#ifndef TL_TOOLS_SLM_WRITE_H
#define TL_TOOLS_SLM_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "slm/slm.h"

typedef struct tl_slm_part {
  tl_slm_kind kind;
  uint32_t flags; /* TL_SLM_SECTION_REQUIRED or 0 */
  const uint8_t *data;
  size_t len;
} tl_slm_part;

/* Lays out the parts in the given order and writes path. artifact_id gets
 * the SHA-256 of the whole file. */
tl_status tl_slm_write(const char *path, const tl_slm_part *parts, size_t n,
                       uint8_t artifact_id[32], char *err, size_t err_cap);

#endif
