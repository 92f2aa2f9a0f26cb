/* Internals of the renderer: run-time values and the rendering context. */
#ifndef TL_CORE_TMPL_VAL_H
#define TL_CORE_TMPL_VAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tmpl/tmpl.h"

typedef enum vkind {
  V_UNDEF,
  V_NONE,
  V_BOOL,
  V_INT,
  V_FLOAT,
  V_STR,
  V_LIST, /* also tuples (tuple flag) */
  V_DICT,
  V_NS,
  V_LOOP
} vkind;

struct tmpl_ns;
struct tmpl_loop;

typedef struct val {
  uint8_t kind;
  bool tuple;
  /* V_UNDEF: why (for UndefinedError's message): the missing name in s,
   * and the object's type name when an attribute/item was missing. */
  const char *undef_obj;
  union {
    bool b;
    int64_t i;
    double f;
    struct {
      const char *p;
      size_t n;
    } s;
    struct {
      const tl_json_value *items;
      size_t n;
    } l;
    const tl_json_value *obj; /* V_DICT: a TL_JSON_OBJECT */
    struct tmpl_ns *ns;
    struct tmpl_loop *loop;
  } u;
} val;

typedef struct tmpl_ns_member {
  const char *k;
  size_t kn;
  val v;
} tmpl_ns_member;

typedef struct tmpl_ns {
  tmpl_ns_member *m;
  size_t n, cap;
} tmpl_ns;

typedef struct tmpl_loop {
  const val *items;
  size_t n, i;
} tmpl_loop;

typedef struct tmpl_var {
  const char *k;
  size_t kn;
  val v;
} tmpl_var;

typedef struct tmpl_sink {
  uint8_t *buf;
  size_t cap, len, max;
  const uint8_t *cmp; /* compare mode: bytes the output must start with */
  size_t cmp_len;
  bool cmp_prefix; /* everything written so far matched cmp */
} tmpl_sink;

typedef struct rctx {
  const tl_tmpl_program *p;
  const tl_json_value *vars;
  bool agp_override; /* add_generation_prompt reads as false */
  tl_arena *arena;
  uint64_t steps, max_steps;
  tmpl_sink out;
  tmpl_var *v;
  size_t n_v, cap_v, frame;
  int ctl; /* 0, CTL_BREAK, CTL_CONTINUE */
  tl_tmpl_error *err;
  uint32_t node;
} rctx;

#define CTL_BREAK 1
#define CTL_CONTINUE 2

/* errors: set err (first one wins) and return the status */
tl_status tmpl_fail(rctx *r, tl_tmpl_error_kind kind, const char *a,
                    const char *b, size_t bn, const char *c);
tl_status tmpl_step(rctx *r, uint64_t n);
/* jinja2.UndefinedError for using u (attribute, item, operator) */
tl_status tmpl_undefined_error(rctx *r, const val *u);
tl_status tmpl_alloc(rctx *r, size_t size, void **out);

const char *tmpl_type_name(const val *v);
val tmpl_from_json(const tl_json_value *j);
/* v as a JSON value (NONE..DICT); UNSUPPORTED otherwise */
tl_status tmpl_to_json(rctx *r, const val *v, tl_json_value *out);
bool tmpl_truthy(const val *v);
/* str(v): a string in the arena (or v's own bytes) */
tl_status tmpl_str(rctx *r, const val *v, const char **p, size_t *n);
tl_status tmpl_eq(rctx *r, const val *a, const val *b, bool *out);

/* strings, filters, tests and methods (tmpl_ops.c) */
size_t tmpl_cp_count(const char *s, size_t n);
tl_status tmpl_method(rctx *r, uint32_t m, const val *obj, const val *args,
                      uint64_t mask, val *out);
tl_status tmpl_filter(rctx *r, uint32_t f, const val *x, const val *args,
                      uint64_t mask, val *out);
tl_status tmpl_test(rctx *r, uint32_t t, const val *x, const val *args,
                    bool *out);
tl_status tmpl_contains(rctx *r, const val *item, const val *seq, bool *out);
/* for-loop and list() materialisation: the items of an iterable */
tl_status tmpl_iterate(rctx *r, const val *x, val **items, size_t *n);
tl_status tmpl_make_list(rctx *r, const val *items, size_t n, bool tuple,
                         val *out);

/* Value constructors. */
static inline val tmpl_v_undef(const char *obj, const char *name, size_t n) {
  val v;
  memset(&v, 0, sizeof v);
  v.kind = V_UNDEF;
  v.undef_obj = obj;
  v.u.s.p = name;
  v.u.s.n = n;
  return v;
}
static inline val tmpl_v_bool(bool b) {
  val v;
  memset(&v, 0, sizeof v);
  v.kind = V_BOOL;
  v.u.b = b;
  return v;
}
static inline val tmpl_v_int(int64_t i) {
  val v;
  memset(&v, 0, sizeof v);
  v.kind = V_INT;
  v.u.i = i;
  return v;
}
static inline val tmpl_v_float(double f) {
  val v;
  memset(&v, 0, sizeof v);
  v.kind = V_FLOAT;
  v.u.f = f;
  return v;
}
static inline val tmpl_v_str(const char *p, size_t n) {
  val v;
  memset(&v, 0, sizeof v);
  v.kind = V_STR;
  v.u.s.p = p;
  v.u.s.n = n;
  return v;
}

#endif
