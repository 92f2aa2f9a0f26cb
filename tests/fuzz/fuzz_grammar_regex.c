/* libFuzzer target for the regular-expression reader
 * (src/core/grammar/regex.c): any bytes as a pattern matched whole;
 * grammar_check.h says what is checked (typed refusals, reproducible
 * digests, allocation failures, a matcher walk). */
#include "grammar_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return gc_check(tl_grammar_from_regex, data, size);
}
