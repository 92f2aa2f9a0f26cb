/* libFuzzer target for the GBNF reader (src/core/grammar/gbnf.c): any
 * bytes as grammar text; grammar_check.h says what is checked (typed
 * refusals, reproducible digests, allocation failures, a matcher walk). */
#include "grammar_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return gc_check(tl_grammar_from_gbnf, data, size);
}
