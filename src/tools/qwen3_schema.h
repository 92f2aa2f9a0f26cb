/* What an artifact's effective config (schema qwen3/1, docs/qwen3-config.md)
 * may hold, for checking one read back (tinylm promote's artifact claim).
 * Apart from qwen3_config.h, whose tl_qwen3_config is not the runtime's
 * (model/qwen3.h), so that runtime-side code can include it. */
#ifndef TL_TOOLS_QWEN3_SCHEMA_H
#define TL_TOOLS_QWEN3_SCHEMA_H

#include <stdbool.h>

#define TL_QWEN3_SCHEMA "qwen3/1"

/* The names of the effective config's "config" map fields, in the order
 * they are written (qwen3_config.c). */
#define TL_QWEN3_N_EFFECTIVE 20
extern const char *const tl_qwen3_effective_fields[TL_QWEN3_N_EFFECTIVE];

/* Whether name is a documentary field of config.json's schema. */
bool tl_qwen3_is_documentary(const char *name);

#endif
