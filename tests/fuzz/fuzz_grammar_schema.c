/* libFuzzer target for the JSON Schema compiler
 * (src/core/grammar/schema.c): any bytes as schema text; grammar_check.h
 * says what is checked (typed refusals, reproducible digests, allocation
 * failures, a matcher walk). */
#include "grammar_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return gc_check(tl_grammar_from_json_schema, data, size);
}
