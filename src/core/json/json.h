/* A strict JSON reader (RFC 8259) into an arena-allocated value tree, and
 * Python-compatible formatting of those values: json.dumps (what
 * transformers' `tojson` filter calls) and str()/repr() (what Jinja prints
 * for {{ value }}). The chat-template renderer's data model.
 *
 * Integers and floats stay apart ("1" is TL_JSON_INT, "1.0" and "1e0" are
 * TL_JSON_FLOAT), and object members keep their order, because Python's
 * json.loads does both and templates can observe them. */
#ifndef TL_CORE_JSON_H
#define TL_CORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "tinylm.h"

typedef enum tl_json_type {
  TL_JSON_NULL,
  TL_JSON_BOOL,
  TL_JSON_INT,   /* fits int64_t; larger integers are refused */
  TL_JSON_FLOAT, /* a finite double */
  TL_JSON_STRING,
  TL_JSON_ARRAY,
  TL_JSON_OBJECT
} tl_json_type;

typedef struct tl_json_value tl_json_value;
typedef struct tl_json_member tl_json_member;

struct tl_json_value {
  tl_json_type type;
  union {
    bool b;
    int64_t i;
    double f;
    struct {
      const char *ptr; /* UTF-8, validated; may contain U+0000 */
      size_t len;
    } str;
    struct {
      tl_json_value *items;
      size_t n;
    } arr;
    struct {
      tl_json_member *members; /* in document order; keys unique */
      size_t n;
    } obj;
  } u;
};

struct tl_json_member {
  const char *key;
  size_t key_len;
  tl_json_value value;
};

typedef struct tl_json_limits {
  size_t max_depth;  /* nesting of arrays/objects */
  size_t max_values; /* total values in the document */
} tl_json_limits;

/* Defaults: max_depth 128, max_values 1048576. Both are checked while the
 * document is scanned, before anything is allocated for it. */
tl_json_limits tl_json_limits_default(void);

/* Where and why parsing stopped. */
typedef struct tl_json_error {
  size_t offset;       /* byte offset into the text */
  size_t line, column; /* 1-based; column counts bytes */
  const char *reason;  /* static string, e.g. "duplicate key" */
} tl_json_error;

/* Parses exactly one JSON document (surrounding whitespace allowed).
 * Errors: TL_ERR_INVALID_ARGUMENT (malformed JSON, duplicate keys, integer
 * out of int64 range, lone surrogate escapes, limits exceeded; see err),
 * TL_ERR_INVALID_UTF8, TL_ERR_OUT_OF_MEMORY. Strings are copied into the
 * arena (escapes decoded). */
tl_status tl_json_parse(const uint8_t *text, size_t len,
                        const tl_json_limits *limits, tl_arena *arena,
                        tl_json_value **out, tl_json_error *err);

/* The member's value, or NULL when the object has no such key. */
const tl_json_value *tl_json_get(const tl_json_value *obj, const char *key,
                                 size_t key_len);

/* Output sink: appends bytes; TL_ERR_BOUNDS when full (sticky: nothing
 * more is written, len stays at the bytes written so far). With buf NULL
 * it only measures: len grows by the bytes the output needs, cap is
 * ignored. Formatting errors are sticky in status too: TL_ERR_INVALID_UTF8
 * for a string that is not UTF-8 (repr/str decode characters),
 * TL_ERR_INVALID_ARGUMENT for a NULL value or nesting deeper than
 * TL_PY_FORMAT_MAX_DEPTH. */
typedef struct tl_json_out {
  uint8_t *buf;
  size_t cap, len;
  tl_status status;
} tl_json_out;

/* Containers nested deeper than this are refused by the formatters (they
 * recurse once per level). */
#define TL_PY_FORMAT_MAX_DEPTH 256

static inline tl_json_out tl_json_out_make(uint8_t *buf, size_t cap) {
  tl_json_out o;
  o.buf = buf;
  o.cap = cap;
  o.len = 0;
  o.status = TL_OK;
  return o;
}

/* Python's repr(float) / str(float): the shortest digits that round-trip,
 * fixed notation for decimal exponents -4 <= e < 16 ("1.0", "100000.0",
 * "0.0001"), scientific otherwise ("1e-05", "1e+16", "1.5e+300"). */
void tl_py_float_repr(double v, tl_json_out *out);

/* json.dumps(v, ensure_ascii=False) with the default separators (", ",
 * ": "), keys in their stored order. */
void tl_py_json_dumps(const tl_json_value *v, tl_json_out *out);

/* str(v) as Python prints it: strings raw; None/True/False; ints; floats
 * via tl_py_float_repr; lists and dicts as their repr ("['a', 1]",
 * "{'k': None}") with Python's quote choice for strings. */
void tl_py_str(const tl_json_value *v, tl_json_out *out);

/* repr(v): like tl_py_str, but a top-level string is quoted too ("'a'"),
 * which is what Python prints for strings inside containers. */
void tl_py_repr(const tl_json_value *v, tl_json_out *out);

#endif
