/* Builds the .slm template section from tokenizer_config.json: compiles
 * `chat_template` and records the special-token variables transformers
 * passes to it (docs/template.md §Section). */
#ifndef TL_TOOLS_TMPL_SECTION_BUILD_H
#define TL_TOOLS_TMPL_SECTION_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef struct tl_tmpl_section_built {
  uint8_t *bytes; /* malloc'd CBOR */
  size_t len;
  uint8_t ir_sha256[32];
  uint8_t source_sha256[32];
} tl_tmpl_section_built;

/* TL_ERR_INVALID_MODEL when the config has no usable chat_template (named
 * templates in a list are not supported), TL_ERR_UNSUPPORTED_FEATURE /
 * TL_ERR_INVALID_ARGUMENT from the compiler with "line:column" in err. */
tl_status tl_tmpl_section_build(const char *tokenizer_config_path,
                                tl_tmpl_section_built *out, char *err,
                                size_t err_cap);
void tl_tmpl_section_built_free(tl_tmpl_section_built *s);

#endif
