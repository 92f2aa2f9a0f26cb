/* wasm32 side of the identity check. */
#include "transcript.h"

size_t tl_wasm_transcript(uint8_t *out, size_t cap, uint8_t *scratch,
                          size_t *records);

__attribute__((export_name("tl_wasm_transcript"))) size_t tl_wasm_transcript(
    uint8_t *out, size_t cap, uint8_t *scratch, size_t *records) {
  return tl_transcript(out, cap, scratch, records);
}
