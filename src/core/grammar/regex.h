/* The regex reader's entry with a choice of character encoding
 * (regex.c): what the JSON Schema reader uses for "pattern", where the
 * pattern constrains a string's value and the grammar the JSON text that
 * spells it. */
#ifndef TL_CORE_GRAMMAR_REGEX_H
#define TL_CORE_GRAMMAR_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar/grammar.h"

/* tl_gb_regex; json: every character as JSON string content in canonical
 * form (charset.h), so the expression matches the inside of a JSON string
 * whose value the pattern matches. */
tl_gexpr tl_gb_regex_enc(tl_gbuilder *b, const uint8_t *text, size_t len,
                         bool unanchored_search, bool json, tl_gerror *err);

#endif
