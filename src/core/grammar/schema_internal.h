/* The JSON Schema reader's shared state and its parts (schema.c: keywords,
 * objects, arrays, composition, references; schema_value.c: enum/const
 * values; schema_number.c: numbers and their bounds; schema_format.c:
 * string formats). Grammars are for the JSON text a model writes, in the
 * canonical forms of docs/structured.md. */
#ifndef TL_CORE_GRAMMAR_SCHEMA_INTERNAL_H
#define TL_CORE_GRAMMAR_SCHEMA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar/grammar.h"
#include "json/json.h"

#define SC_MAX_REFS 256       /* distinct $ref targets in one schema */
#define SC_MAX_NAMES 1024     /* property names of the objects being compiled */
#define SC_PATH_MAX 200       /* JSON pointer kept for messages (truncated) */
#define SC_WS_MAX 20          /* whitespace bytes between two tokens */
#define SC_INT_DIGITS 16      /* digits of an integer part, unbounded numbers */
#define SC_FRAC_DIGITS 16     /* digits of a fraction */
#define SC_MAX_DEPTH 128      /* schema nesting the compiler recurses through */

/* A declared property of an object being compiled. */
typedef struct sc_name {
  const char *s;
  size_t len;
  const tl_json_value *schema; /* NULL: any value */
  bool required, from_props;
  tl_gexpr member; /* "key" ws ":" ws value ws */
} sc_name;

typedef struct sc {
  tl_gbuilder *b;
  tl_gerror *err;
  const tl_json_value *root;
  char tag[24]; /* "json-<n>-": this call's rule prefix */
  size_t tag_len;
  uint32_t next_rule;
  struct {
    const tl_json_value *node;
    uint32_t rule;
  } refs[SC_MAX_REFS];
  uint32_t n_refs;
  sc_name names[SC_MAX_NAMES]; /* a stack: each object pushes and pops its own */
  uint32_t n_names;
  uint32_t ws_rule, char_rule, value_rule; /* shared rules, UINT32_MAX until made */
  uint32_t format_rule[6];                 /* schema_format.c's, likewise */
  char path[SC_PATH_MAX + 1];
  size_t path_len;
  unsigned depth;
  bool failed;
} sc;

/* Records the first error: "<message> at <pointer>". */
void sc_fail(sc *c, tl_status st, const char *what, const char *name);
/* A fresh rule of this call. */
uint32_t sc_fresh_rule(sc *c);
/* A reference to *rule, made from make(c) on first use. */
tl_gexpr sc_shared(sc *c, uint32_t *rule, tl_gexpr (*make)(sc *));
/* Shared pieces: bounded whitespace, one canonical JSON string character,
 * any JSON value. */
tl_gexpr sc_ws(sc *c);
tl_gexpr sc_char(sc *c);
tl_gexpr sc_any_value(sc *c);
tl_gexpr sc_lit(sc *c, const char *s);
tl_gexpr sc_never(sc *c);

/* schema_value.c: a JSON value in canonical form (enum/const), and value
 * equality as JSON Schema defines it (numbers by value). */
tl_gexpr sc_value(sc *c, const tl_json_value *v);
tl_gexpr sc_string_literal(sc *c, const char *s, size_t len);
bool sc_json_equal(const tl_json_value *a, const tl_json_value *b);
/* ECMAScript's Number::toString of a finite double into out (>= 32 bytes);
 * returns the length. */
size_t sc_js_number(double v, char *out);

/* schema_number.c: integers (integer_only) or numbers under the bounds of
 * schema s (minimum, maximum, exclusiveMinimum, exclusiveMaximum). */
tl_gexpr sc_number(sc *c, const tl_json_value *s, bool integer_only);

/* schema_format.c: the inside of a JSON string in a format (NULL name
 * refused by the caller). */
tl_gexpr sc_format(sc *c, const char *name, size_t len);

#endif
