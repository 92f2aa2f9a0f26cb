/* The .slm template section (docs/template.md §Section): the compiled IR,
 * its and its source's SHA-256, and the special-token variables that
 * transformers' apply_chat_template passes to every rendering; plus the
 * assembly of a rendering's variables from a conversation. */
#ifndef TL_CORE_TMPL_SECTION_H
#define TL_CORE_TMPL_SECTION_H

#include "arena.h"
#include "json/json.h"
#include "tinylm.h"
#include "tmpl/tmpl.h"

#define TL_TMPL_SECTION_FORMAT "tinylm-template-section"
#define TL_TMPL_SECTION_VERSION 1

typedef struct tl_tmpl_section {
  tl_tmpl_program program;
  uint8_t ir_sha256[32];
  uint8_t source_sha256[32];
  const tl_json_value *special_tokens; /* an object: eos_token, ... */
} tl_tmpl_section;

/* Validates the section (CBOR map with exactly the keys format, version,
 * ir, ir_sha256, source_sha256, special_tokens_json; the IR's digest must
 * match) and loads it into arena. Errors: TL_ERR_INVALID_CBOR,
 * TL_ERR_INVALID_MODEL, TL_ERR_HASH_MISMATCH, TL_ERR_UNSUPPORTED_ABI,
 * TL_ERR_OUT_OF_MEMORY. */
tl_status tl_tmpl_section_load(const uint8_t *section, size_t len,
                               tl_arena *arena, tl_tmpl_section *out);

/* The variables one rendering sees, as transformers builds them:
 * {**special_tokens, **conversation} with add_generation_prompt defaulting
 * to false and tools/documents to None.
 *
 * The conversation is validated first (docs/template.md §Input), stricter
 * than Jinja, which renders some malformed messages silently: conv must be
 * an object whose "messages" is an array of objects, each with a string
 * "role" and a "content" that, when present, is a string or null.
 * "continue_final_message" is refused (not implemented).
 * On bad input: TL_ERR_INVALID_ARGUMENT (or TL_ERR_UNSUPPORTED_FEATURE)
 * with *why set and *bad_message the offending message's index (SIZE_MAX
 * when the problem is not in one message). */
tl_status tl_tmpl_chat_vars(const tl_tmpl_section *section,
                            const tl_json_value *conv, tl_arena *arena,
                            tl_json_value **vars, const char **why,
                            size_t *bad_message);

#endif
