/* The <inttypes.h> of the wasm32 API modules (wasm32: long is 32 bits). */
#ifndef TL_WASM_INTTYPES_H
#define TL_WASM_INTTYPES_H

#include <stdint.h>

#define PRIu64 "llu"
#define PRId64 "lld"
#define PRIx64 "llx"
#define PRIu32 "u"
#define PRIx32 "x"

#endif
