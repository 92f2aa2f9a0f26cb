/* CBOR documents into a malloc'd buffer that grows as needed, and the
 * small writers documents share. Needs malloc, not jansson: the run
 * receipt's writer (src/lib/receipt.c) uses it in the wasm32 API
 * modules too (web/wasm/). */
#ifndef TL_TOOLS_CBOR_ALLOC_H
#define TL_TOOLS_CBOR_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "cbor/cbor.h"

typedef void (*tl_cbor_emit_fn)(tl_cbor_writer *w, const void *arg);

/* Runs emit into a fresh writer, retrying with larger buffers, and hands
 * back the finished document (malloc; the caller frees). The writer's
 * sticky status reports any encoding error. */
tl_status tl_cbor_encode_alloc(tl_cbor_emit_fn emit, const void *arg,
                               uint8_t **out, size_t *out_len);

/* A double as the text Python's repr() gives ("1e-06", "0.95"): the CBOR
 * profile has no floats, and this text round-trips exactly. */
void tl_cbor_put_float_text(tl_cbor_writer *w, double d);

/* An array of unsigned integers. */
void tl_cbor_put_u32s(tl_cbor_writer *w, const uint32_t *v, size_t n);

/* A NUL-terminated string as CBOR text. */
void tl_cbor_put_cstr(tl_cbor_writer *w, const char *s);

#endif
