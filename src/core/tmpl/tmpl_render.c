/* The renderer: walks the IR tree with Jinja2's semantics (docs/template.md
 * §Semantics). Recursion follows the tree, whose height the loader bounds
 * (TL_TMPL_MAX_DEPTH); loops run over materialised values only. */
#include <string.h>

#include "checked.h"
#include "tmpl/tmpl_val.h"

/* ---- errors, steps, memory ---------------------------------------------- */

static void msg_put(tl_tmpl_error *e, const char *s, size_t n) {
  for (size_t i = 0; i < n && e->message_len + 1 < TL_TMPL_MSG_CAP; i++)
    e->message[e->message_len++] = s[i];
  e->message[e->message_len] = '\0';
}

tl_status tmpl_fail(rctx *r, tl_tmpl_error_kind kind, const char *a,
                    const char *b, size_t bn, const char *c) {
  tl_status st = TL_ERR_INVALID_ARGUMENT;
  switch (kind) {
    case TL_TMPL_ERR_UNSUPPORTED:
      st = TL_ERR_UNSUPPORTED_FEATURE;
      break;
    case TL_TMPL_ERR_STEP_LIMIT:
    case TL_TMPL_ERR_OUTPUT_LIMIT:
    case TL_TMPL_ERR_VARS_LIMIT:
    case TL_TMPL_ERR_BUFFER:
      st = TL_ERR_BOUNDS;
      break;
    case TL_TMPL_ERR_MEMORY:
      st = TL_ERR_OUT_OF_MEMORY;
      break;
    default:
      break;
  }
  tl_tmpl_error *e = r->err;
  if (e != NULL && e->kind == TL_TMPL_ERR_NONE) {
    e->kind = kind;
    e->node = r->node;
    e->message_len = 0;
    e->message[0] = '\0';
    if (a) msg_put(e, a, strlen(a));
    if (b) msg_put(e, b, bn);
    if (c) msg_put(e, c, strlen(c));
  }
  return st;
}

tl_status tmpl_step(rctx *r, uint64_t n) {
  if (n > r->max_steps - r->steps) {
    r->steps = r->max_steps;
    return tmpl_fail(r, TL_TMPL_ERR_STEP_LIMIT, "step limit exceeded", NULL, 0,
                     NULL);
  }
  r->steps += n;
  return TL_OK;
}

tl_status tmpl_alloc(rctx *r, size_t size, void **out) {
  if (tl_arena_alloc(r->arena, size, 8, out) != TL_OK)
    return tmpl_fail(r, TL_TMPL_ERR_MEMORY, "the render arena is exhausted",
                     NULL, 0, NULL);
  return TL_OK;
}

/* ---- values ------------------------------------------------------------- */

const char *tmpl_type_name(const val *v) {
  switch (v->kind) {
    case V_UNDEF:
      return "Undefined";
    case V_NONE:
      return "NoneType";
    case V_BOOL:
      return "bool";
    case V_INT:
      return "int";
    case V_FLOAT:
      return "float";
    case V_STR:
      return "str";
    case V_LIST:
      return v->tuple ? "tuple" : "list";
    case V_DICT:
      return "dict";
    case V_NS:
      return "Namespace";
    default:
      return "LoopContext";
  }
}

val tmpl_from_json(const tl_json_value *j) {
  val v;
  memset(&v, 0, sizeof v);
  switch (j->type) {
    case TL_JSON_NULL:
      v.kind = V_NONE;
      break;
    case TL_JSON_BOOL:
      v.kind = V_BOOL;
      v.u.b = j->u.b;
      break;
    case TL_JSON_INT:
      v.kind = V_INT;
      v.u.i = j->u.i;
      break;
    case TL_JSON_FLOAT:
      v.kind = V_FLOAT;
      v.u.f = j->u.f;
      break;
    case TL_JSON_STRING:
      v.kind = V_STR;
      v.u.s.p = j->u.str.ptr;
      v.u.s.n = j->u.str.len;
      break;
    case TL_JSON_ARRAY:
      v.kind = V_LIST;
      v.u.l.items = j->u.arr.items;
      v.u.l.n = j->u.arr.n;
      break;
    default:
      v.kind = V_DICT;
      v.u.obj = j;
      break;
  }
  return v;
}

tl_status tmpl_to_json(rctx *r, const val *v, tl_json_value *out) {
  memset(out, 0, sizeof *out);
  switch (v->kind) {
    case V_NONE:
      out->type = TL_JSON_NULL;
      return TL_OK;
    case V_BOOL:
      out->type = TL_JSON_BOOL;
      out->u.b = v->u.b;
      return TL_OK;
    case V_INT:
      out->type = TL_JSON_INT;
      out->u.i = v->u.i;
      return TL_OK;
    case V_FLOAT:
      out->type = TL_JSON_FLOAT;
      out->u.f = v->u.f;
      return TL_OK;
    case V_STR:
      out->type = TL_JSON_STRING;
      out->u.str.ptr = v->u.s.p;
      out->u.str.len = v->u.s.n;
      return TL_OK;
    case V_LIST:
      out->type = TL_JSON_ARRAY;
      out->u.arr.items = (tl_json_value *)v->u.l.items;
      out->u.arr.n = v->u.l.n;
      return TL_OK;
    case V_DICT:
      *out = *v->u.obj;
      return TL_OK;
    default:
      return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "a value of type '",
                       tmpl_type_name(v), strlen(tmpl_type_name(v)),
                       "' cannot be stored in a list, dict or output here");
  }
}

bool tmpl_truthy(const val *v) {
  switch (v->kind) {
    case V_UNDEF:
    case V_NONE:
      return false;
    case V_BOOL:
      return v->u.b;
    case V_INT:
      return v->u.i != 0;
    case V_FLOAT:
      return v->u.f != 0.0;
    case V_STR:
      return v->u.s.n > 0;
    case V_LIST:
      return v->u.l.n > 0;
    case V_DICT:
      return v->u.obj->u.obj.n > 0;
    default:
      return true;
  }
}

tl_status tmpl_str(rctx *r, const val *v, const char **p, size_t *n) {
  if (v->kind == V_STR) {
    *p = v->u.s.p;
    *n = v->u.s.n;
    return TL_OK;
  }
  if (v->kind == V_UNDEF) {
    *p = "";
    *n = 0;
    return TL_OK;
  }
  tl_json_value j;
  tl_status st = tmpl_to_json(r, v, &j);
  if (st != TL_OK) return st;
  tl_json_out m = {NULL, 0, 0, TL_OK};
  tl_py_str(&j, &m);
  if (m.status != TL_OK)
    return tmpl_fail(r, TL_TMPL_ERR_TYPE, "value cannot be converted to str",
                     NULL, 0, NULL);
  uint8_t *buf;
  if ((st = tmpl_step(r, 1 + m.len / 64)) != TL_OK ||
      (st = tmpl_alloc(r, m.len + 1, (void **)&buf)) != TL_OK)
    return st;
  tl_json_out o = {buf, m.len + 1, 0, TL_OK};
  tl_py_str(&j, &o);
  if (v->kind == V_LIST && v->tuple && o.len >= 2) {
    /* str(tuple): "(" items ")" with a trailing comma for one item */
    buf[0] = '(';
    if (v->u.l.n == 1) {
      buf[o.len - 1] = ',';
      buf[o.len++] = ')';
    } else {
      buf[o.len - 1] = ')';
    }
  }
  *p = (const char *)buf;
  *n = o.len;
  return TL_OK;
}

static bool is_num(const val *v) {
  return v->kind == V_BOOL || v->kind == V_INT || v->kind == V_FLOAT;
}
static int64_t as_int(const val *v) {
  return v->kind == V_BOOL ? (v->u.b ? 1 : 0) : v->u.i;
}
static double as_double(const val *v) {
  return v->kind == V_FLOAT ? v->u.f : (double)as_int(v);
}

static tl_status json_eq(rctx *r, const tl_json_value *a,
                         const tl_json_value *b, bool *out, unsigned depth);

tl_status tmpl_eq(rctx *r, const val *a, const val *b, bool *out) {
  if (is_num(a) && is_num(b)) {
    if (a->kind != V_FLOAT && b->kind != V_FLOAT)
      *out = as_int(a) == as_int(b);
    else
      *out = as_double(a) == as_double(b);
    return TL_OK;
  }
  if (a->kind != b->kind) {
    *out = false;
    return TL_OK;
  }
  switch (a->kind) {
    case V_UNDEF:
    case V_NONE:
      *out = true;
      return TL_OK;
    case V_STR:
      *out = a->u.s.n == b->u.s.n && memcmp(a->u.s.p, b->u.s.p, a->u.s.n) == 0;
      return TL_OK;
    case V_LIST:
    case V_DICT: {
      if (a->kind == V_LIST && a->tuple != b->tuple) {
        *out = false;
        return TL_OK;
      }
      tl_json_value ja, jb;
      tmpl_to_json(r, a, &ja);
      tmpl_to_json(r, b, &jb);
      return json_eq(r, &ja, &jb, out, 0);
    }
    default:
      *out = a == b || (a->kind == V_NS && a->u.ns == b->u.ns) ||
             (a->kind == V_LOOP && a->u.loop == b->u.loop);
      return TL_OK;
  }
}

static tl_status json_eq(rctx *r, const tl_json_value *a,
                         const tl_json_value *b, bool *out, unsigned depth) {
  if (depth > 256)
    return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "values nested too deeply",
                     NULL, 0, NULL);
  tl_status st = tmpl_step(r, 1);
  if (st != TL_OK) return st;
  if (a->type == TL_JSON_ARRAY && b->type == TL_JSON_ARRAY) {
    *out = a->u.arr.n == b->u.arr.n;
    for (size_t i = 0; *out && i < a->u.arr.n; i++)
      if ((st = json_eq(r, &a->u.arr.items[i], &b->u.arr.items[i], out,
                        depth + 1)) != TL_OK)
        return st;
    return TL_OK;
  }
  if (a->type == TL_JSON_OBJECT && b->type == TL_JSON_OBJECT) {
    *out = a->u.obj.n == b->u.obj.n;
    for (size_t i = 0; *out && i < a->u.obj.n; i++) {
      const tl_json_member *m = &a->u.obj.members[i];
      const tl_json_value *o = tl_json_get(b, m->key, m->key_len);
      if (o == NULL) {
        *out = false;
        break;
      }
      if ((st = json_eq(r, &m->value, o, out, depth + 1)) != TL_OK) return st;
    }
    return TL_OK;
  }
  if (a->type == TL_JSON_ARRAY || b->type == TL_JSON_ARRAY ||
      a->type == TL_JSON_OBJECT || b->type == TL_JSON_OBJECT) {
    *out = false;
    return TL_OK;
  }
  val va = tmpl_from_json(a), vb = tmpl_from_json(b);
  return tmpl_eq(r, &va, &vb, out);
}

tl_status tmpl_undefined_error(rctx *r, const val *u) {
  if (u->undef_obj != NULL) {
    tl_status st =
        tmpl_fail(r, TL_TMPL_ERR_UNDEFINED, "'", u->undef_obj,
                  strlen(u->undef_obj), " object' has no attribute '");
    if (r->err != NULL && r->err->kind == TL_TMPL_ERR_UNDEFINED) {
      msg_put(r->err, u->u.s.p, u->u.s.n);
      msg_put(r->err, "'", 1);
    }
    return st;
  }
  if (u->u.s.p != NULL)
    return tmpl_fail(r, TL_TMPL_ERR_UNDEFINED, "'", u->u.s.p, u->u.s.n,
                     "' is undefined");
  return tmpl_fail(r, TL_TMPL_ERR_UNDEFINED, "value is undefined", NULL, 0,
                   NULL);
}

static tl_status type_error(rctx *r, const char *what, const val *a,
                            const val *b) {
  const char *ta = tmpl_type_name(a);
  tl_status st = tmpl_fail(r, TL_TMPL_ERR_TYPE, what, ta, strlen(ta),
                           b != NULL ? "' and '" : "'");
  if (b != NULL && r->err != NULL && r->err->kind == TL_TMPL_ERR_TYPE) {
    const char *tb = tmpl_type_name(b);
    msg_put(r->err, tb, strlen(tb));
    msg_put(r->err, "'", 1);
  }
  return st;
}

tl_status tmpl_make_list(rctx *r, const val *items, size_t n, bool tuple,
                         val *out) {
  tl_json_value *arr = NULL;
  size_t bytes;
  tl_status st;
  if (tl_mul_size(n, sizeof *arr, &bytes) != TL_OK)
    return tmpl_fail(r, TL_TMPL_ERR_MEMORY, "list too large", NULL, 0, NULL);
  if ((st = tmpl_step(r, 1 + n / 16)) != TL_OK ||
      (st = tmpl_alloc(r, bytes, (void **)&arr)) != TL_OK)
    return st;
  for (size_t i = 0; i < n; i++)
    if ((st = tmpl_to_json(r, &items[i], &arr[i])) != TL_OK) return st;
  memset(out, 0, sizeof *out);
  out->kind = V_LIST;
  out->tuple = tuple;
  out->u.l.items = arr;
  out->u.l.n = n;
  return TL_OK;
}

/* ---- variables ---------------------------------------------------------- */

static bool name_is(const char *a, size_t an, const char *b, size_t bn) {
  return an == bn && memcmp(a, b, an) == 0;
}

static val lookup(rctx *r, const char *k, size_t kn) {
  for (size_t i = r->n_v; i > 0; i--)
    if (name_is(r->v[i - 1].k, r->v[i - 1].kn, k, kn)) return r->v[i - 1].v;
  if (r->agp_override && name_is(k, kn, "add_generation_prompt", 21))
    return tmpl_v_bool(false);
  const tl_json_value *j = tl_json_get(r->vars, k, kn);
  if (j != NULL) return tmpl_from_json(j);
  return tmpl_v_undef(NULL, k, kn);
}

static tl_status set_var(rctx *r, const char *k, size_t kn, const val *v) {
  for (size_t i = r->n_v; i > r->frame; i--)
    if (name_is(r->v[i - 1].k, r->v[i - 1].kn, k, kn)) {
      r->v[i - 1].v = *v;
      return TL_OK;
    }
  if (r->n_v == r->cap_v)
    return tmpl_fail(r, TL_TMPL_ERR_VARS_LIMIT, "too many variables", NULL, 0,
                     NULL);
  r->v[r->n_v].k = k;
  r->v[r->n_v].kn = kn;
  r->v[r->n_v].v = *v;
  r->n_v++;
  return TL_OK;
}

static const tl_tmpl_str *pstr(rctx *r, uint64_t i) {
  return &r->p->strings[i];
}

/* ---- attribute and item access ------------------------------------------ */

static const char *const DICT_METHODS[] = {
    "items",  "keys", "values", "get",        "pop",     "popitem",
    "update", "copy", "clear",  "setdefault", "fromkeys"};
static const char *const STR_METHODS[] = {
    "startswith",  "endswith",   "split",        "rsplit",       "strip",
    "lstrip",      "rstrip",     "replace",      "upper",        "lower",
    "title",       "capitalize", "find",         "rfind",        "index",
    "rindex",      "count",      "format",       "join",         "splitlines",
    "isdigit",     "isalpha",    "isspace",      "casefold",     "swapcase",
    "center",      "ljust",      "rjust",        "zfill",        "encode",
    "partition",   "rpartition", "expandtabs",   "isalnum",      "islower",
    "isupper",     "istitle",    "isnumeric",    "isdecimal",    "isidentifier",
    "isprintable", "isascii",    "removeprefix", "removesuffix", "format_map",
    "translate",   "maketrans"};
static const char *const LIST_METHODS[] = {
    "append", "extend", "insert", "remove",  "pop", "clear",
    "index",  "count",  "sort",   "reverse", "copy"};

static bool in_names(const char *const *names, size_t n, const char *k,
                     size_t kn) {
  for (size_t i = 0; i < n; i++)
    if (name_is(names[i], strlen(names[i]), k, kn)) return true;
  return false;
}

static tl_status method_value(rctx *r, const val *obj, const char *k,
                              size_t kn) {
  const char *t = tmpl_type_name(obj);
  tl_status st =
      tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "the method '", k, kn, "' of ");
  if (r->err && r->err->kind == TL_TMPL_ERR_UNSUPPORTED) {
    msg_put(r->err, t, strlen(t));
    msg_put(r->err, " used as a value is not supported", 33);
  }
  return st;
}

static tl_status loop_attr(rctx *r, const tmpl_loop *lp, const char *k,
                           size_t kn, val *out) {
  size_t n = lp->n, i = lp->i;
  if (name_is(k, kn, "index0", 6))
    *out = tmpl_v_int((int64_t)i);
  else if (name_is(k, kn, "index", 5))
    *out = tmpl_v_int((int64_t)i + 1);
  else if (name_is(k, kn, "revindex", 8))
    *out = tmpl_v_int((int64_t)(n - i));
  else if (name_is(k, kn, "revindex0", 9))
    *out = tmpl_v_int((int64_t)(n - i - 1));
  else if (name_is(k, kn, "first", 5))
    *out = tmpl_v_bool(i == 0);
  else if (name_is(k, kn, "last", 4))
    *out = tmpl_v_bool(i + 1 == n);
  else if (name_is(k, kn, "length", 6))
    *out = tmpl_v_int((int64_t)n);
  else if (name_is(k, kn, "depth", 5))
    *out = tmpl_v_int(1);
  else if (name_is(k, kn, "depth0", 6))
    *out = tmpl_v_int(0);
  else if (name_is(k, kn, "previtem", 8))
    *out = i > 0 ? lp->items[i - 1] : tmpl_v_undef(NULL, "previtem", 8);
  else if (name_is(k, kn, "nextitem", 8))
    *out = i + 1 < n ? lp->items[i + 1] : tmpl_v_undef(NULL, "nextitem", 8);
  else if (name_is(k, kn, "cycle", 5) || name_is(k, kn, "changed", 7))
    return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "loop.", k, kn,
                     " is not supported");
  else
    *out = tmpl_v_undef("LoopContext", k, kn);
  return TL_OK;
}

static tl_status getattr(rctx *r, const val *obj, const char *k, size_t kn,
                         val *out) {
  switch (obj->kind) {
    case V_UNDEF:
      return tmpl_undefined_error(r, obj);
    case V_DICT: {
      if (in_names(DICT_METHODS, sizeof DICT_METHODS / sizeof *DICT_METHODS, k,
                   kn))
        return method_value(r, obj, k, kn);
      const tl_json_value *j = tl_json_get(obj->u.obj, k, kn);
      *out = j != NULL ? tmpl_from_json(j) : tmpl_v_undef("dict", k, kn);
      return TL_OK;
    }
    case V_STR:
      if (in_names(STR_METHODS, sizeof STR_METHODS / sizeof *STR_METHODS, k,
                   kn))
        return method_value(r, obj, k, kn);
      break;
    case V_LIST:
      if (in_names(LIST_METHODS, sizeof LIST_METHODS / sizeof *LIST_METHODS, k,
                   kn))
        return method_value(r, obj, k, kn);
      break;
    case V_NS:
      for (size_t i = 0; i < obj->u.ns->n; i++)
        if (name_is(obj->u.ns->m[i].k, obj->u.ns->m[i].kn, k, kn)) {
          *out = obj->u.ns->m[i].v;
          return TL_OK;
        }
      break;
    case V_LOOP:
      return loop_attr(r, obj->u.loop, k, kn, out);
    case V_INT:
    case V_FLOAT:
    case V_BOOL:
      if (name_is(k, kn, "real", 4) || name_is(k, kn, "imag", 4) ||
          name_is(k, kn, "numerator", 9) || name_is(k, kn, "denominator", 11))
        return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "attribute '", k, kn,
                         "' of a number is not supported");
      break;
    default:
      break;
  }
  *out = tmpl_v_undef(tmpl_type_name(obj), k, kn);
  return TL_OK;
}

/* Python index i into a sequence of n: the position, or false. */
static bool norm_index(int64_t i, size_t n, size_t *pos) {
  if (i < 0) {
    if ((uint64_t)(-(i + 1)) + 1 > n) return false;
    *pos = n - (size_t)(-(i + 1)) - 1;
    return true;
  }
  if ((uint64_t)i >= n) return false;
  *pos = (size_t)i;
  return true;
}

/* Byte offset of code point index cp in s (cp <= count). */
static size_t cp_offset(const char *s, size_t n, size_t cp) {
  size_t i = 0, k = 0;
  while (i < n) {
    if (((unsigned char)s[i] & 0xC0) != 0x80) {
      if (k == cp) return i;
      k++;
    }
    i++;
  }
  return n;
}

static tl_status getitem(rctx *r, const val *obj, const val *key, val *out) {
  if (obj->kind == V_UNDEF) return tmpl_undefined_error(r, obj);
  bool int_key = key->kind == V_INT || key->kind == V_BOOL;
  if (obj->kind == V_LIST && int_key) {
    size_t pos;
    if (norm_index(as_int(key), obj->u.l.n, &pos)) {
      *out = tmpl_from_json(&obj->u.l.items[pos]);
      return TL_OK;
    }
    *out = tmpl_v_undef(tmpl_type_name(obj), "index", 5);
    return TL_OK;
  }
  if (obj->kind == V_STR && int_key) {
    size_t n = tmpl_cp_count(obj->u.s.p, obj->u.s.n), pos;
    tl_status st = tmpl_step(r, 1 + obj->u.s.n / 64);
    if (st != TL_OK) return st;
    if (norm_index(as_int(key), n, &pos)) {
      size_t a = cp_offset(obj->u.s.p, obj->u.s.n, pos);
      size_t b = cp_offset(obj->u.s.p, obj->u.s.n, pos + 1);
      *out = tmpl_v_str(obj->u.s.p + a, b - a);
      return TL_OK;
    }
    *out = tmpl_v_undef("str", "index", 5);
    return TL_OK;
  }
  if (obj->kind == V_DICT && key->kind == V_STR) {
    const tl_json_value *j = tl_json_get(obj->u.obj, key->u.s.p, key->u.s.n);
    if (j != NULL) {
      *out = tmpl_from_json(j);
      return TL_OK;
    }
  }
  if (key->kind == V_STR && obj->kind != V_DICT)
    return getattr(r, obj, key->u.s.p, key->u.s.n, out);
  if (key->kind == V_STR &&
      in_names(DICT_METHODS, sizeof DICT_METHODS / sizeof *DICT_METHODS,
               key->u.s.p, key->u.s.n))
    return method_value(r, obj, key->u.s.p, key->u.s.n);
  if (key->kind == V_LIST || key->kind == V_DICT) {
    if (obj->kind == V_DICT)
      return type_error(r, "unhashable type: '", key, NULL);
  }
  *out = key->kind == V_STR
             ? tmpl_v_undef(tmpl_type_name(obj), key->u.s.p, key->u.s.n)
             : tmpl_v_undef(tmpl_type_name(obj), "item", 4);
  return TL_OK;
}

/* Python's slice.indices(n) and the selected positions. */
static tl_status slice_positions(rctx *r, const val parts[3], size_t n,
                                 int64_t *start, int64_t *step, size_t *count) {
  int64_t st = 1;
  for (int i = 0; i < 3; i++)
    if (parts[i].kind != V_NONE && parts[i].kind != V_INT &&
        parts[i].kind != V_BOOL)
      return type_error(r, "slice indices must be integers or None, not '",
                        &parts[i], NULL);
  if (parts[2].kind != V_NONE) st = as_int(&parts[2]);
  if (st == 0)
    return tmpl_fail(r, TL_TMPL_ERR_TYPE, "slice step cannot be zero", NULL, 0,
                     NULL);
  if (st == INT64_MIN) st = -INT64_MAX;
  int64_t len = (int64_t)n, lo, hi;
  int64_t def_lo = st < 0 ? len - 1 : 0, def_hi = st < 0 ? -1 : len;
  int64_t a = def_lo, b = def_hi;
  for (int w = 0; w < 2; w++) {
    if (parts[w].kind == V_NONE) continue;
    int64_t x = as_int(&parts[w]);
    if (x < 0) {
      x = x < -len ? (st < 0 ? -1 : 0) : x + len;
    } else if (x >= len) {
      x = st < 0 ? len - 1 : len;
    }
    if (w == 0)
      a = x;
    else
      b = x;
  }
  lo = a;
  hi = b;
  size_t cnt = 0;
  if (st > 0 && hi > lo) cnt = (size_t)((hi - lo - 1) / st + 1);
  if (st < 0 && lo > hi) cnt = (size_t)((lo - hi - 1) / (-st) + 1);
  *start = lo;
  *step = st;
  *count = cnt;
  return TL_OK;
}

static tl_status do_slice(rctx *r, const val *obj, const val parts[3],
                          val *out) {
  tl_status st;
  if (obj->kind == V_UNDEF) return tmpl_undefined_error(r, obj);
  if (obj->kind == V_LIST) {
    int64_t start, step;
    size_t cnt;
    if ((st = slice_positions(r, parts, obj->u.l.n, &start, &step, &cnt)) !=
        TL_OK)
      return st;
    tl_json_value *arr = NULL;
    if ((st = tmpl_step(r, 1 + cnt / 16)) != TL_OK ||
        (st = tmpl_alloc(r, cnt * sizeof *arr, (void **)&arr)) != TL_OK)
      return st;
    for (size_t i = 0; i < cnt; i++)
      arr[i] = obj->u.l.items[start + (int64_t)i * step];
    *out = *obj;
    out->u.l.items = arr;
    out->u.l.n = cnt;
    return TL_OK;
  }
  if (obj->kind == V_STR) {
    size_t n = tmpl_cp_count(obj->u.s.p, obj->u.s.n);
    int64_t start, step;
    size_t cnt;
    if ((st = slice_positions(r, parts, n, &start, &step, &cnt)) != TL_OK)
      return st;
    size_t *offs;
    char *buf;
    if ((st = tmpl_step(r, 1 + obj->u.s.n / 16)) != TL_OK ||
        (st = tmpl_alloc(r, (n + 1) * sizeof *offs, (void **)&offs)) != TL_OK ||
        (st = tmpl_alloc(r, obj->u.s.n + 1, (void **)&buf)) != TL_OK)
      return st;
    size_t k = 0;
    for (size_t i = 0; i < obj->u.s.n; i++)
      if (((unsigned char)obj->u.s.p[i] & 0xC0) != 0x80) offs[k++] = i;
    offs[n] = obj->u.s.n;
    size_t len = 0;
    for (size_t i = 0; i < cnt; i++) {
      size_t cp = (size_t)(start + (int64_t)i * step);
      memcpy(buf + len, obj->u.s.p + offs[cp], offs[cp + 1] - offs[cp]);
      len += offs[cp + 1] - offs[cp];
    }
    *out = tmpl_v_str(buf, len);
    return TL_OK;
  }
  if (obj->kind == V_DICT)
    return type_error(r, "unhashable type: 'slice' (subscript of '", obj, NULL);
  *out = tmpl_v_undef(tmpl_type_name(obj), "slice", 5);
  return TL_OK;
}

/* ---- operators ---------------------------------------------------------- */

/* a * b with overflow detection, without a 128-bit libcall (wasm32) */
static bool mul_ovf(int64_t a, int64_t b, int64_t *r) {
  if (a == 0 || b == 0) {
    *r = 0;
    return false;
  }
  uint64_t ua = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
  uint64_t ub = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
  bool neg = (a < 0) != (b < 0);
  uint64_t lim = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
  if (ua > lim / ub) return true;
  uint64_t p = ua * ub;
  if (!neg)
    *r = (int64_t)p;
  else
    *r = p == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)p;
  return false;
}

static tl_status arith(rctx *r, uint64_t op, const val *a, const val *b,
                       val *out) {
  if (a->kind == V_UNDEF) return tmpl_undefined_error(r, a);
  if (b->kind == V_UNDEF) return tmpl_undefined_error(r, b);
  tl_status st;
  if (is_num(a) && is_num(b)) {
    bool fl = a->kind == V_FLOAT || b->kind == V_FLOAT;
    if (op == TL_BIN_DIV) fl = true;
    if (!fl) {
      int64_t x = as_int(a), y = as_int(b), z = 0;
      bool ovf = false;
      switch (op) {
        case TL_BIN_ADD:
          ovf = __builtin_add_overflow(x, y, &z);
          break;
        case TL_BIN_SUB:
          ovf = __builtin_sub_overflow(x, y, &z);
          break;
        case TL_BIN_MUL:
          ovf = mul_ovf(x, y, &z);
          break;
        case TL_BIN_FLOORDIV:
        case TL_BIN_MOD:
          if (y == 0)
            return tmpl_fail(r, TL_TMPL_ERR_TYPE,
                             "integer division or modulo by zero", NULL, 0,
                             NULL);
          if (x == INT64_MIN && y == -1) {
            ovf = op == TL_BIN_FLOORDIV;
            z = 0;
            break;
          }
          {
            int64_t q = x / y, m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) {
              q -= 1;
              m += y;
            }
            z = op == TL_BIN_FLOORDIV ? q : m;
          }
          break;
        case TL_BIN_POW:
          if (y < 0)
            return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                             "negative integer powers are not supported", NULL,
                             0, NULL);
          z = 1;
          for (int64_t i = 0; i < y && !ovf; i++) {
            if ((st = tmpl_step(r, 1)) != TL_OK) return st;
            ovf = mul_ovf(z, x, &z);
            if (z == 0 || z == 1) break;
          }
          if (!ovf && z == 1 && x == -1 && (y % 2) == 1) z = -1;
          break;
        default:
          break;
      }
      if (ovf)
        return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                         "integers beyond 64 bits are not supported", NULL, 0,
                         NULL);
      *out = tmpl_v_int(z);
      return TL_OK;
    }
    double x = as_double(a), y = as_double(b), z;
    switch (op) {
      case TL_BIN_ADD:
        z = x + y;
        break;
      case TL_BIN_SUB:
        z = x - y;
        break;
      case TL_BIN_MUL:
        z = x * y;
        break;
      case TL_BIN_DIV:
        if (y == 0.0)
          return tmpl_fail(r, TL_TMPL_ERR_TYPE, "division by zero", NULL, 0,
                           NULL);
        z = x / y;
        break;
      default:
        return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                         "//, % and ** on floats are not supported", NULL, 0,
                         NULL);
    }
    if (z - z != 0.0)
      return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                       "non-finite float results are not supported", NULL, 0,
                       NULL);
    *out = tmpl_v_float(z);
    return TL_OK;
  }
  if (op == TL_BIN_ADD && a->kind == V_STR && b->kind == V_STR) {
    char *buf;
    size_t n;
    if (tl_add_size(a->u.s.n, b->u.s.n, &n) != TL_OK)
      return tmpl_fail(r, TL_TMPL_ERR_MEMORY, "string too long", NULL, 0, NULL);
    if ((st = tmpl_step(r, 1 + n / 64)) != TL_OK ||
        (st = tmpl_alloc(r, n + 1, (void **)&buf)) != TL_OK)
      return st;
    memcpy(buf, a->u.s.p, a->u.s.n);
    memcpy(buf + a->u.s.n, b->u.s.p, b->u.s.n);
    *out = tmpl_v_str(buf, n);
    return TL_OK;
  }
  if (op == TL_BIN_ADD && a->kind == V_LIST && b->kind == V_LIST &&
      a->tuple == b->tuple) {
    size_t n = a->u.l.n + b->u.l.n;
    tl_json_value *arr;
    if ((st = tmpl_step(r, 1 + n / 16)) != TL_OK ||
        (st = tmpl_alloc(r, n * sizeof *arr, (void **)&arr)) != TL_OK)
      return st;
    for (size_t i = 0; i < a->u.l.n; i++) arr[i] = a->u.l.items[i];
    for (size_t i = 0; i < b->u.l.n; i++) arr[a->u.l.n + i] = b->u.l.items[i];
    *out = *a;
    out->u.l.items = arr;
    out->u.l.n = n;
    return TL_OK;
  }
  if (op == TL_BIN_MUL &&
      ((a->kind == V_STR && (b->kind == V_INT || b->kind == V_BOOL)) ||
       (b->kind == V_STR && (a->kind == V_INT || a->kind == V_BOOL)))) {
    const val *s = a->kind == V_STR ? a : b;
    int64_t k = as_int(a->kind == V_STR ? b : a);
    if (k <= 0 || s->u.s.n == 0) {
      *out = tmpl_v_str("", 0);
      return TL_OK;
    }
    size_t n;
    if (tl_mul_size(s->u.s.n, (size_t)k, &n) != TL_OK || (uint64_t)k > SIZE_MAX)
      return tmpl_fail(r, TL_TMPL_ERR_MEMORY, "string too long", NULL, 0, NULL);
    char *buf;
    if ((st = tmpl_step(r, 1 + n / 64)) != TL_OK ||
        (st = tmpl_alloc(r, n + 1, (void **)&buf)) != TL_OK)
      return st;
    for (int64_t i = 0; i < k; i++)
      memcpy(buf + (size_t)i * s->u.s.n, s->u.s.p, s->u.s.n);
    *out = tmpl_v_str(buf, n);
    return TL_OK;
  }
  if (op == TL_BIN_MOD && a->kind == V_STR)
    return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                     "printf-style string formatting is not supported", NULL, 0,
                     NULL);
  return type_error(r, "unsupported operand type(s): '", a, b);
}

static tl_status order(rctx *r, const val *a, const val *b, int *cmp) {
  if (a->kind == V_UNDEF) return tmpl_undefined_error(r, a);
  if (b->kind == V_UNDEF) return tmpl_undefined_error(r, b);
  if (is_num(a) && is_num(b)) {
    if (a->kind != V_FLOAT && b->kind != V_FLOAT) {
      int64_t x = as_int(a), y = as_int(b);
      *cmp = x < y ? -1 : x > y;
    } else {
      double x = as_double(a), y = as_double(b);
      *cmp = x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
    }
    return TL_OK;
  }
  if (a->kind == V_STR && b->kind == V_STR) {
    size_t n = a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n;
    int c = memcmp(a->u.s.p, b->u.s.p, n);
    *cmp = c < 0                 ? -1
           : c > 0               ? 1
           : a->u.s.n < b->u.s.n ? -1
                                 : a->u.s.n > b->u.s.n;
    return TL_OK;
  }
  if (a->kind == V_LIST && b->kind == V_LIST && a->tuple == b->tuple) {
    size_t n = a->u.l.n < b->u.l.n ? a->u.l.n : b->u.l.n;
    for (size_t i = 0; i < n; i++) {
      val x = tmpl_from_json(&a->u.l.items[i]),
          y = tmpl_from_json(&b->u.l.items[i]);
      bool eq;
      tl_status st = tmpl_eq(r, &x, &y, &eq);
      if (st != TL_OK) return st;
      if (!eq) return order(r, &x, &y, cmp);
    }
    *cmp = a->u.l.n < b->u.l.n ? -1 : a->u.l.n > b->u.l.n;
    return TL_OK;
  }
  return type_error(r, "'<' not supported between instances of '", a, b);
}

static tl_status compare(rctx *r, unsigned op, const val *a, const val *b,
                         bool *out) {
  tl_status st;
  bool eq;
  int c;
  switch (op) {
    case TL_CMP_EQ:
    case TL_CMP_NE:
      if ((st = tmpl_eq(r, a, b, &eq)) != TL_OK) return st;
      *out = op == TL_CMP_EQ ? eq : !eq;
      return TL_OK;
    case TL_CMP_IN:
    case TL_CMP_NOTIN:
      if ((st = tmpl_contains(r, a, b, &eq)) != TL_OK) return st;
      *out = op == TL_CMP_IN ? eq : !eq;
      return TL_OK;
    default:
      if ((st = order(r, a, b, &c)) != TL_OK) return st;
      if (c == 2) {
        *out = false; /* NaN */
        return TL_OK;
      }
      *out = op == TL_CMP_LT   ? c < 0
             : op == TL_CMP_LE ? c <= 0
             : op == TL_CMP_GT ? c > 0
                               : c >= 0;
      return TL_OK;
  }
}

/* ---- expressions -------------------------------------------------------- */

static tl_status eval(rctx *r, uint32_t idx, val *out);

static tl_status eval_args(rctx *r, const tl_tmpl_node *n, uint32_t from,
                           val *args, uint64_t mask, unsigned n_params) {
  uint32_t k = from;
  for (unsigned i = 0; i < n_params && i < 8; i++) {
    memset(&args[i], 0, sizeof args[i]);
    args[i].kind = V_UNDEF;
    if (mask & ((uint64_t)1 << i)) {
      tl_status st = eval(r, n->kids[k++], &args[i]);
      if (st != TL_OK) return st;
    }
  }
  return TL_OK;
}

static tl_status call_func(rctx *r, const tl_tmpl_node *n, val *out) {
  tl_status st;
  if (n->b == TL_FN_NAMESPACE) {
    tmpl_ns *ns;
    if ((st = tmpl_alloc(r, sizeof *ns, (void **)&ns)) != TL_OK) return st;
    ns->n = 0;
    ns->cap = n->n_kids / 2 + 4;
    if ((st = tmpl_alloc(r, ns->cap * sizeof *ns->m, (void **)&ns->m)) != TL_OK)
      return st;
    for (uint32_t i = 0; i < n->n_kids; i += 2) {
      const tl_tmpl_str *k = pstr(r, r->p->nodes[n->kids[i]].b);
      tmpl_ns_member *m = NULL;
      for (size_t j = 0; j < ns->n; j++)
        if (name_is(ns->m[j].k, ns->m[j].kn, k->ptr, k->len)) m = &ns->m[j];
      if (m == NULL) m = &ns->m[ns->n++];
      m->k = k->ptr;
      m->kn = k->len;
      if ((st = eval(r, n->kids[i + 1], &m->v)) != TL_OK) return st;
    }
    memset(out, 0, sizeof *out);
    out->kind = V_NS;
    out->u.ns = ns;
    return TL_OK;
  }
  val a;
  if ((st = eval(r, n->kids[0], &a)) != TL_OK) return st;
  if (n->b == TL_FN_RAISE_EXCEPTION) {
    const char *p;
    size_t len;
    if ((st = tmpl_str(r, &a, &p, &len)) != TL_OK) return st;
    return tmpl_fail(r, TL_TMPL_ERR_RAISED, NULL, p, len, NULL);
  }
  return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                   "strftime_now() is not supported: a rendering must not "
                   "depend on the clock (pass the date as a variable)",
                   NULL, 0, NULL);
}

static tl_status eval(rctx *r, uint32_t idx, val *out) {
  const tl_tmpl_node *n = &r->p->nodes[idx];
  tl_status st = tmpl_step(r, 1);
  if (st != TL_OK) return st;
  uint32_t saved = r->node;
  r->node = idx;
  memset(out, 0, sizeof *out);
  val a, b;
  switch (n->op) {
    case TL_OP_NONE:
      out->kind = V_NONE;
      break;
    case TL_OP_BOOL:
      *out = tmpl_v_bool(n->a != 0);
      break;
    case TL_OP_INT:
      *out = tmpl_v_int(n->a);
      break;
    case TL_OP_FLOAT: {
      double f;
      memcpy(&f, &n->b, sizeof f);
      *out = tmpl_v_float(f);
      break;
    }
    case TL_OP_STR:
      *out = tmpl_v_str(pstr(r, n->b)->ptr, pstr(r, n->b)->len);
      break;
    case TL_OP_NAME:
      *out = lookup(r, pstr(r, n->b)->ptr, pstr(r, n->b)->len);
      break;
    case TL_OP_LIST:
    case TL_OP_TUPLE: {
      val *items = NULL;
      if (n->n_kids > 0 && (st = tmpl_alloc(r, n->n_kids * sizeof *items,
                                            (void **)&items)) != TL_OK)
        break;
      for (uint32_t i = 0; i < n->n_kids && st == TL_OK; i++)
        st = eval(r, n->kids[i], &items[i]);
      if (st == TL_OK)
        st = tmpl_make_list(r, items, n->n_kids, n->op == TL_OP_TUPLE, out);
      break;
    }
    case TL_OP_DICT: {
      tl_json_value *obj;
      tl_json_member *m = NULL;
      size_t cnt = 0;
      if ((st = tmpl_alloc(r, sizeof *obj, (void **)&obj)) != TL_OK) break;
      if (n->n_kids > 0 && (st = tmpl_alloc(r, (n->n_kids / 2) * sizeof *m,
                                            (void **)&m)) != TL_OK)
        break;
      for (uint32_t i = 0; i < n->n_kids && st == TL_OK; i += 2) {
        if ((st = eval(r, n->kids[i], &a)) != TL_OK ||
            (st = eval(r, n->kids[i + 1], &b)) != TL_OK)
          break;
        if (a.kind != V_STR) {
          st = tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                         "dict literal keys must be strings", NULL, 0, NULL);
          break;
        }
        size_t j = 0;
        while (j < cnt && !name_is(m[j].key, m[j].key_len, a.u.s.p, a.u.s.n))
          j++;
        if (j == cnt) cnt++;
        m[j].key = a.u.s.p;
        m[j].key_len = a.u.s.n;
        st = tmpl_to_json(r, &b, &m[j].value);
      }
      if (st != TL_OK) break;
      memset(obj, 0, sizeof *obj);
      obj->type = TL_JSON_OBJECT;
      obj->u.obj.members = m;
      obj->u.obj.n = cnt;
      out->kind = V_DICT;
      out->u.obj = obj;
      break;
    }
    case TL_OP_GETATTR:
      if ((st = eval(r, n->kids[0], &a)) == TL_OK)
        st = getattr(r, &a, pstr(r, n->b)->ptr, pstr(r, n->b)->len, out);
      break;
    case TL_OP_GETITEM:
      if ((st = eval(r, n->kids[0], &a)) == TL_OK &&
          (st = eval(r, n->kids[1], &b)) == TL_OK)
        st = getitem(r, &a, &b, out);
      break;
    case TL_OP_SLICE: {
      val parts[3];
      uint32_t k = 1;
      if ((st = eval(r, n->kids[0], &a)) != TL_OK) break;
      for (int i = 0; i < 3 && st == TL_OK; i++) {
        memset(&parts[i], 0, sizeof parts[i]);
        parts[i].kind = V_NONE;
        if (n->b & (1u << i)) st = eval(r, n->kids[k++], &parts[i]);
      }
      if (st == TL_OK) st = do_slice(r, &a, parts, out);
      break;
    }
    case TL_OP_NOT:
      if ((st = eval(r, n->kids[0], &a)) == TL_OK)
        *out = tmpl_v_bool(!tmpl_truthy(&a));
      break;
    case TL_OP_NEG:
    case TL_OP_POS:
      if ((st = eval(r, n->kids[0], &a)) != TL_OK) break;
      if (a.kind == V_UNDEF) {
        st = tmpl_undefined_error(r, &a);
      } else if (a.kind == V_FLOAT) {
        *out = tmpl_v_float(n->op == TL_OP_NEG ? -a.u.f : a.u.f);
      } else if (a.kind == V_INT || a.kind == V_BOOL) {
        int64_t x = as_int(&a);
        if (n->op == TL_OP_NEG && x == INT64_MIN)
          st = tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                         "integers beyond 64 bits are not supported", NULL, 0,
                         NULL);
        else
          *out = tmpl_v_int(n->op == TL_OP_NEG ? -x : x);
      } else {
        st = type_error(r, "bad operand type for unary -/+: '", &a, NULL);
      }
      break;
    case TL_OP_BINARY:
      if ((st = eval(r, n->kids[0], &a)) == TL_OK &&
          (st = eval(r, n->kids[1], &b)) == TL_OK)
        st = arith(r, n->b, &a, &b, out);
      break;
    case TL_OP_AND:
    case TL_OP_OR:
      if ((st = eval(r, n->kids[0], &a)) != TL_OK) break;
      if (tmpl_truthy(&a) == (n->op == TL_OP_OR))
        *out = a;
      else
        st = eval(r, n->kids[1], out);
      break;
    case TL_OP_COMPARE: {
      if ((st = eval(r, n->kids[0], &a)) != TL_OK) break;
      bool res = true;
      for (uint64_t i = 0; i < n->c && res; i++) {
        if ((st = eval(r, n->kids[i + 1], &b)) != TL_OK) break;
        if ((st = compare(r, (unsigned)((n->b >> (4 * i)) & 15), &a, &b,
                          &res)) != TL_OK)
          break;
        a = b;
      }
      if (st == TL_OK) *out = tmpl_v_bool(res);
      break;
    }
    case TL_OP_CONCAT: {
      const char **ps;
      size_t *ns, total = 0;
      if ((st = tmpl_alloc(r, n->n_kids * sizeof *ps, (void **)&ps)) != TL_OK ||
          (st = tmpl_alloc(r, n->n_kids * sizeof *ns, (void **)&ns)) != TL_OK)
        break;
      for (uint32_t i = 0; i < n->n_kids && st == TL_OK; i++) {
        if ((st = eval(r, n->kids[i], &a)) == TL_OK &&
            (st = tmpl_str(r, &a, &ps[i], &ns[i])) == TL_OK &&
            tl_add_size(total, ns[i], &total) != TL_OK)
          st = tmpl_fail(r, TL_TMPL_ERR_MEMORY, "string too long", NULL, 0,
                         NULL);
      }
      if (st != TL_OK) break;
      char *buf;
      if ((st = tmpl_step(r, total / 64)) != TL_OK ||
          (st = tmpl_alloc(r, total + 1, (void **)&buf)) != TL_OK)
        break;
      size_t off = 0;
      for (uint32_t i = 0; i < n->n_kids; i++) {
        memcpy(buf + off, ps[i], ns[i]);
        off += ns[i];
      }
      *out = tmpl_v_str(buf, total);
      break;
    }
    case TL_OP_COND:
      if ((st = eval(r, n->kids[0], &a)) != TL_OK) break;
      if (tmpl_truthy(&a))
        st = eval(r, n->kids[1], out);
      else if (n->b)
        st = eval(r, n->kids[2], out);
      else
        *out = tmpl_v_undef(NULL, NULL, 0);
      break;
    case TL_OP_FILTER:
    case TL_OP_METHOD: {
      val args[8];
      const tl_tmpl_sig *sig = n->op == TL_OP_FILTER ? &tl_tmpl_filters[n->b]
                                                     : &tl_tmpl_methods[n->b];
      if ((st = eval(r, n->kids[0], &a)) != TL_OK ||
          (st = eval_args(r, n, 1, args, n->c, sig->n_params)) != TL_OK)
        break;
      r->node = idx;
      st = n->op == TL_OP_FILTER
               ? tmpl_filter(r, (uint32_t)n->b, &a, args, n->c, out)
               : tmpl_method(r, (uint32_t)n->b, &a, args, n->c, out);
      break;
    }
    case TL_OP_TEST: {
      val args[1];
      bool res = false;
      if ((st = eval(r, n->kids[0], &a)) != TL_OK) break;
      if (n->n_kids > 1 && (st = eval(r, n->kids[1], &args[0])) != TL_OK) break;
      r->node = idx;
      if ((st = tmpl_test(r, (uint32_t)n->b, &a, args, &res)) == TL_OK)
        *out = tmpl_v_bool(n->a ? !res : res);
      break;
    }
    case TL_OP_CALL:
      st = call_func(r, n, out);
      break;
    default:
      st = tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "not an expression", NULL, 0,
                     NULL);
      break;
  }
  if (st == TL_OK) r->node = saved;
  return st;
}

/* ---- statements --------------------------------------------------------- */

static tl_status sink_put(rctx *r, const char *p, size_t n) {
  tmpl_sink *s = &r->out;
  if (n > s->max - s->len)
    return tmpl_fail(r, TL_TMPL_ERR_OUTPUT_LIMIT, "output limit exceeded", NULL,
                     0, NULL);
  tl_status st = tmpl_step(r, n / 64);
  if (st != TL_OK) return st;
  if (s->cmp != NULL) {
    if (s->cmp_prefix &&
        (s->len + n > s->cmp_len || memcmp(s->cmp + s->len, p, n) != 0))
      s->cmp_prefix = false;
  } else if (s->len < s->cap) {
    size_t k = s->cap - s->len < n ? s->cap - s->len : n;
    memcpy(s->buf + s->len, p, k);
  }
  s->len += n;
  return TL_OK;
}

static tl_status exec(rctx *r, uint32_t idx);

static tl_status bind(rctx *r, uint32_t target, const val *v) {
  const tl_tmpl_node *t = &r->p->nodes[target];
  if (t->op == TL_OP_NAME)
    return set_var(r, pstr(r, t->b)->ptr, pstr(r, t->b)->len, v);
  /* TUPLE of NAME: unpack */
  val *items;
  size_t n;
  tl_status st;
  if (v->kind != V_LIST && v->kind != V_STR)
    return type_error(r, "cannot unpack non-iterable '", v, NULL);
  if ((st = tmpl_iterate(r, v, &items, &n)) != TL_OK) return st;
  if (n != t->n_kids)
    return tmpl_fail(r, TL_TMPL_ERR_TYPE,
                     n > t->n_kids ? "too many values to unpack"
                                   : "not enough values to unpack",
                     NULL, 0, NULL);
  for (uint32_t i = 0; i < t->n_kids; i++) {
    const tl_tmpl_node *nm = &r->p->nodes[t->kids[i]];
    if ((st = set_var(r, pstr(r, nm->b)->ptr, pstr(r, nm->b)->len,
                      &items[i])) != TL_OK)
      return st;
  }
  return TL_OK;
}

static tl_status exec_for(rctx *r, const tl_tmpl_node *n) {
  val seq;
  val *items;
  size_t cnt;
  tl_status st;
  if ((st = eval(r, n->kids[1], &seq)) != TL_OK) return st;
  if ((st = tmpl_iterate(r, &seq, &items, &cnt)) != TL_OK) return st;
  uint32_t k = 3;
  if (n->b & 1) {
    uint32_t filt = n->kids[k++];
    size_t kept = 0;
    for (size_t i = 0; i < cnt; i++) {
      size_t save_n = r->n_v, save_f = r->frame;
      r->frame = r->n_v;
      val c;
      if ((st = bind(r, n->kids[0], &items[i])) == TL_OK)
        st = eval(r, filt, &c);
      r->n_v = save_n;
      r->frame = save_f;
      if (st != TL_OK) return st;
      if (tmpl_truthy(&c)) items[kept++] = items[i];
    }
    cnt = kept;
  }
  if (cnt == 0) {
    if (n->b & 2) return exec(r, n->kids[k]);
    return TL_OK;
  }
  tmpl_loop *lp;
  if ((st = tmpl_alloc(r, sizeof *lp, (void **)&lp)) != TL_OK) return st;
  lp->items = items;
  lp->n = cnt;
  val lv;
  memset(&lv, 0, sizeof lv);
  lv.kind = V_LOOP;
  lv.u.loop = lp;
  for (size_t i = 0; i < cnt; i++) {
    if ((st = tmpl_step(r, 1)) != TL_OK) return st;
    lp->i = i;
    size_t save_n = r->n_v, save_f = r->frame;
    r->frame = r->n_v;
    if ((st = set_var(r, "loop", 4, &lv)) == TL_OK &&
        (st = bind(r, n->kids[0], &items[i])) == TL_OK)
      st = exec(r, n->kids[2]);
    r->n_v = save_n;
    r->frame = save_f;
    if (st != TL_OK) return st;
    int ctl = r->ctl;
    r->ctl = 0;
    if (ctl == CTL_BREAK) break;
  }
  return TL_OK;
}

static tl_status exec(rctx *r, uint32_t idx) {
  const tl_tmpl_node *n = &r->p->nodes[idx];
  tl_status st = tmpl_step(r, 1);
  if (st != TL_OK) return st;
  r->node = idx;
  val v;
  switch (n->op) {
    case TL_OP_BLOCK:
      for (uint32_t i = 0; i < n->n_kids && r->ctl == 0; i++)
        if ((st = exec(r, n->kids[i])) != TL_OK) return st;
      return TL_OK;
    case TL_OP_TEXT:
      return sink_put(r, pstr(r, n->b)->ptr, pstr(r, n->b)->len);
    case TL_OP_OUTPUT: {
      const char *p;
      size_t len;
      if ((st = eval(r, n->kids[0], &v)) != TL_OK) return st;
      if (v.kind == V_NS || v.kind == V_LOOP)
        return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "printing a ",
                         tmpl_type_name(&v), strlen(tmpl_type_name(&v)),
                         " is not supported");
      if ((st = tmpl_str(r, &v, &p, &len)) != TL_OK) return st;
      return sink_put(r, p, len);
    }
    case TL_OP_IF: {
      uint32_t pairs = (n->n_kids - (uint32_t)n->b) / 2;
      for (uint32_t i = 0; i < pairs; i++) {
        if ((st = eval(r, n->kids[2 * i], &v)) != TL_OK) return st;
        if (tmpl_truthy(&v)) return exec(r, n->kids[2 * i + 1]);
      }
      if (n->b) return exec(r, n->kids[n->n_kids - 1]);
      return TL_OK;
    }
    case TL_OP_FOR:
      return exec_for(r, n);
    case TL_OP_SET: {
      const tl_tmpl_node *t = &r->p->nodes[n->kids[0]];
      if ((st = eval(r, n->kids[1], &v)) != TL_OK) return st;
      if (t->op != TL_OP_GETATTR) return bind(r, n->kids[0], &v);
      const tl_tmpl_node *nm = &r->p->nodes[t->kids[0]];
      val ns = lookup(r, pstr(r, nm->b)->ptr, pstr(r, nm->b)->len);
      if (ns.kind != V_NS)
        return tmpl_fail(r, TL_TMPL_ERR_TYPE,
                         "cannot assign attribute on non-namespace object",
                         NULL, 0, NULL);
      const tl_tmpl_str *k = pstr(r, t->b);
      tmpl_ns *o = ns.u.ns;
      for (size_t i = 0; i < o->n; i++)
        if (name_is(o->m[i].k, o->m[i].kn, k->ptr, k->len)) {
          o->m[i].v = v;
          return TL_OK;
        }
      if (o->n == o->cap) {
        if (o->cap >= r->cap_v)
          return tmpl_fail(r, TL_TMPL_ERR_VARS_LIMIT, "too many variables",
                           NULL, 0, NULL);
        tmpl_ns_member *m;
        if ((st = tmpl_alloc(r, 2 * o->cap * sizeof *m, (void **)&m)) != TL_OK)
          return st;
        memcpy(m, o->m, o->n * sizeof *m);
        o->m = m;
        o->cap *= 2;
      }
      o->m[o->n].k = k->ptr;
      o->m[o->n].kn = k->len;
      o->m[o->n].v = v;
      o->n++;
      return TL_OK;
    }
    case TL_OP_BREAK:
      r->ctl = CTL_BREAK;
      return TL_OK;
    case TL_OP_CONTINUE:
      r->ctl = CTL_CONTINUE;
      return TL_OK;
    default:
      return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "not a statement", NULL, 0,
                       NULL);
  }
}

/* ---- entry -------------------------------------------------------------- */

tl_tmpl_limits tl_tmpl_limits_default(void) {
  tl_tmpl_limits l = {1000000u, (size_t)1 << 20, 1024u};
  return l;
}

const char *tl_tmpl_error_kind_name(tl_tmpl_error_kind kind) {
  static const char *const names[] = {
      "none",        "raised",     "undefined",    "type",
      "unsupported", "step_limit", "output_limit", "vars_limit",
      "buffer",      "memory",     "input"};
  return (unsigned)kind < sizeof names / sizeof *names ? names[kind]
                                                       : "unknown";
}

static tl_status run(const tl_tmpl_program *prog, const tl_json_value *vars,
                     const tl_tmpl_limits *lim, tl_arena *arena, tmpl_sink sink,
                     bool agp_override, tl_tmpl_error *err, tmpl_sink *out) {
  rctx r;
  memset(&r, 0, sizeof r);
  r.p = prog;
  r.vars = vars;
  r.agp_override = agp_override;
  r.arena = arena;
  r.max_steps = lim->max_steps;
  r.out = sink;
  r.err = err;
  r.node = UINT32_MAX;
  r.cap_v = lim->max_vars;
  size_t bytes;
  tl_status st;
  if (tl_mul_size(r.cap_v, sizeof *r.v, &bytes) != TL_OK ||
      tl_arena_alloc(arena, bytes, 8, (void **)&r.v) != TL_OK)
    return tmpl_fail(&r, TL_TMPL_ERR_MEMORY, "the render arena is exhausted",
                     NULL, 0, NULL);
  st = exec(&r, prog->root);
  *out = r.out;
  return st;
}

static size_t count_occ(const uint8_t *s, size_t n, const char *t, size_t tn) {
  size_t c = 0;
  if (tn == 0) return 0;
  for (size_t i = 0; i + tn <= n;) {
    if (memcmp(s + i, t, tn) == 0) {
      c++;
      i += tn;
    } else {
      i++;
    }
  }
  return c;
}

tl_status tl_tmpl_render(const tl_tmpl_program *prog, const tl_json_value *vars,
                         const tl_tmpl_limits *limits, tl_arena *arena,
                         uint8_t *out, size_t out_cap, size_t *out_len,
                         tl_tmpl_ownership *own, tl_tmpl_error *err) {
  tl_tmpl_error local_err;
  if (err == NULL) err = &local_err;
  memset(err, 0, sizeof *err);
  err->node = UINT32_MAX;
  if (own != NULL) memset(own, 0, sizeof *own);
  if (out_len != NULL) *out_len = 0;
  if (prog == NULL || vars == NULL || arena == NULL || out_len == NULL ||
      (out == NULL && out_cap > 0))
    return TL_ERR_INVALID_ARGUMENT;
  if (vars->type != TL_JSON_OBJECT) {
    err->kind = TL_TMPL_ERR_INPUT;
    msg_put(err, "the template variables must be a JSON object", 44);
    return TL_ERR_INVALID_ARGUMENT;
  }
  tl_tmpl_limits lim = limits != NULL ? *limits : tl_tmpl_limits_default();
  tl_arena_mark mark = tl_arena_mark_now(arena);
  tmpl_sink sink = {out, out_cap, 0, lim.max_output, NULL, 0, false};
  tmpl_sink res;
  tl_status st = run(prog, vars, &lim, arena, sink, false, err, &res);
  tl_arena_rewind(arena, mark);
  if (st != TL_OK) return st;
  *out_len = res.len;
  if (res.len > out_cap) {
    err->kind = TL_TMPL_ERR_BUFFER;
    msg_put(err, "the output buffer is too small", 30);
    return TL_ERR_BOUNDS;
  }
  if (own == NULL) return TL_OK;
  const tl_json_value *agp = tl_json_get(vars, "add_generation_prompt", 21);
  if (agp != NULL) {
    val a = tmpl_from_json(agp);
    own->add_generation_prompt = tmpl_truthy(&a);
  }
  if (own->add_generation_prompt) {
    tl_tmpl_error e2;
    memset(&e2, 0, sizeof e2);
    tmpl_sink cmp = {NULL, 0, 0, lim.max_output, out, res.len, true};
    tmpl_sink res2;
    if (run(prog, vars, &lim, arena, cmp, true, &e2, &res2) == TL_OK &&
        res2.cmp_prefix && res2.len <= res.len) {
      own->gen_is_suffix = true;
      own->gen_offset = res2.len;
      own->gen_len = res.len - res2.len;
    }
    tl_arena_rewind(arena, mark);
  }
  const tl_json_value *bos = tl_json_get(vars, "bos_token", 9);
  const tl_json_value *eos = tl_json_get(vars, "eos_token", 9);
  if (bos != NULL && bos->type == TL_JSON_STRING && bos->u.str.len > 0) {
    own->bos_count = count_occ(out, res.len, bos->u.str.ptr, bos->u.str.len);
    own->bos_at_start = res.len >= bos->u.str.len &&
                        memcmp(out, bos->u.str.ptr, bos->u.str.len) == 0;
  }
  if (eos != NULL && eos->type == TL_JSON_STRING && eos->u.str.len > 0) {
    own->eos_count = count_occ(out, res.len, eos->u.str.ptr, eos->u.str.len);
    own->eos_at_end = res.len >= eos->u.str.len &&
                      memcmp(out + res.len - eos->u.str.len, eos->u.str.ptr,
                             eos->u.str.len) == 0;
  }
  return TL_OK;
}
