/* Whole CBOR documents on the converter side: encoding (cbor_alloc.h,
 * which needs no jansson) and reading a document back as a jansson value
 * (for --json output). */
#ifndef TL_TOOLS_CBOR_DOC_H
#define TL_TOOLS_CBOR_DOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cbor/cbor.h"
#include "cbor_alloc.h"

/* A JSON value as CBOR: floats as Python's repr text (the CBOR profile has
 * no floats), objects as maps. */
void tl_cbor_put_json(tl_cbor_writer *w, const json_t *v);

/* A deterministic CBOR document as JSON (for --json output and display).
 * Text, bools, null, arrays and maps map directly; byte strings become
 * lower-case hex text; integers that jansson's json_int_t (int64) holds
 * become JSON integers, and the others (2^63 .. 2^64-1 and -2^64 ..
 * -2^63-1) the object {"integer": "<decimal>"}, exact and typed (read
 * either form with tl_json_u64). Map keys must be text and are kept whole
 * (a key "a\0b" stays three bytes long). On success *out is the value;
 * otherwise *out is NULL, err says what and where, and the status is
 * TL_ERR_INVALID_CBOR (malformed: the reader's fault and offset),
 * TL_ERR_UNSUPPORTED_FEATURE (a tag, or a map key that is not text) or
 * TL_ERR_OUT_OF_MEMORY. */
tl_status tl_cbor_to_json(const uint8_t *doc, size_t len, json_t **out,
                          char *err, size_t err_cap);

/* The metadata of the first node of type in a graph receipt read as JSON
 * ({"nodes": [{"type", "metadata"}, ...]}); NULL when none. */
json_t *tl_json_node_meta(const json_t *doc, const char *type);

/* An integer of a tl_cbor_to_json value, in either form, as a uint64;
 * false when v is not an integer in 0 .. 2^64-1. */
bool tl_json_u64(const json_t *v, uint64_t *out);

#endif
