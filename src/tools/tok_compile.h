/* Compiles a Hugging Face tokenizer (tokenizer.json + tokenizer_config.json)
 * into the binary tokenizer section (docs/tokenizer-section.md). Accepts
 * only the closed profile `qwen2-byte-bpe`; anything else is refused with
 * the file, the JSON path of the field, and why. */
#ifndef TL_TOOLS_TOK_COMPILE_H
#define TL_TOOLS_TOK_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef struct tl_tok_compiled {
  uint8_t *section; /* malloc'd; free with tl_tok_compiled_free */
  size_t len;
  uint32_t n_tokens, n_merges, n_added;
  /* The id the post-processor appends to every single input (a
   * TemplateProcessing "$A X", as Qwen3-Embedding's tokenizer.json has),
   * or -1 (ByteLevel: nothing appended). */
  int64_t append_id;
} tl_tok_compiled;

/* On failure returns TL_ERR_INVALID_MODEL (a refused component or field),
 * TL_ERR_CONFLICT (the two files disagree) or TL_ERR_IO, with the reason
 * in err. */
tl_status tl_tok_compile(const char *tokenizer_json,
                         const char *tokenizer_config_json,
                         tl_tok_compiled *out, char *err, size_t err_cap);
void tl_tok_compiled_free(tl_tok_compiled *c);

/* GPT-2 ByteLevel's byte → code point map and its inverse (-1: not a
 * byte-level character). */
uint32_t tl_byte_level_char(uint8_t byte);
int tl_byte_level_byte(uint32_t cp);

#endif
