/* A sentence-transformers embedding checkpoint (modules.json beside
 * config.json; docs/convert.md, Embedding checkpoints): the closed schema
 * of its modules.json and 1_Pooling/config.json, accepting exactly what
 * Qwen3-Embedding publishes: Transformer, last-token Pooling, Normalize. */
#ifndef TL_TOOLS_ST_MODULES_H
#define TL_TOOLS_ST_MODULES_H

#include <stdint.h>

#include "tinylm.h"

/* Checks dir's modules.json and 1_Pooling/config.json (read through the
 * input snapshot, so hash them first); the pooled width must be hidden.
 * TL_ERR_INVALID_MODEL (a refused field, named with its file and JSON
 * path), TL_ERR_UNSUPPORTED_FEATURE (another pooling or module chain),
 * TL_ERR_IO. */
tl_status tl_st_modules_check(const char *dir, uint32_t hidden, char *err, size_t err_cap);

#endif
