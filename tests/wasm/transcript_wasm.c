/* wasm32 side of the identity check. Its fast-lane records run the
 * SIMD128 variant when the module is built with -msimd128, else the scalar
 * twins; one thread (the module has no workers). */
#include "transcript.h"

size_t tl_wasm_transcript(uint8_t *out, size_t cap, uint8_t *scratch,
                          size_t *records);

__attribute__((export_name("tl_wasm_transcript"))) size_t tl_wasm_transcript(
    uint8_t *out, size_t cap, uint8_t *scratch, size_t *records) {
  static const tl_parallel *const serial[] = {NULL};
  const tl_kernels *simd = tl_kernels_get(TL_KERN_WASM_SIMD128);
  tl_transcript_host host = {simd != NULL ? simd : tl_kernels_get(TL_KERN_SCALAR), serial, 1};
  return tl_transcript(out, cap, scratch, &host, records);
}
