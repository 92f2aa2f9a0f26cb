/* JSON Schema (draft 2020-12) to a grammar of the JSON text a model writes
 * (docs/structured.md, "JSON Schema"): the keyword table, types, objects,
 * arrays, strings, composition and references. Every keyword outside the
 * table is refused (TL_ERR_UNSUPPORTED_FEATURE) with its JSON pointer:
 * a keyword that would be ignored is a constraint the output could break. */
#include <string.h>

#include "grammar/charset.h"
#include "grammar/regex.h"
#include "grammar/schema_internal.h"
#include "utf8.h"

/* ---- errors, names, shared rules ------------------------------------------ */

void sc_fail(sc *c, tl_status st, const char *what, const char *name) {
  bool fresh = c->err->status == TL_OK;
  if (c->failed) return;
  c->failed = true;
  /* the builder failed first (out of memory, a limit): that is the error */
  if (tl_gb_error(c->b)->status != TL_OK) {
    if (fresh) *c->err = *tl_gb_error(c->b);
    return;
  }
  tl_gerror_set(c->err, st, 0, "json schema: ", what, NULL);
  if (fresh) {
    if (name != NULL) {
      tl_gerror_append(c->err, " '", 2);
      tl_gerror_append(c->err, name, strlen(name));
      tl_gerror_append(c->err, "'", 1);
    }
    tl_gerror_append(c->err, " at ", 4);
    if (c->path_len == 0) tl_gerror_append(c->err, "the root (#)", 12);
    else tl_gerror_append(c->err, c->path, c->path_len);
  }
  tl_gb_fail(c->b, c->err);
}

static void fail_kw(sc *c, tl_status st, const char *what, const char *kw, size_t kw_len) {
  char name[64];
  size_t n = kw_len < sizeof name - 1 ? kw_len : sizeof name - 1;
  memcpy(name, kw, n);
  name[n] = 0;
  sc_fail(c, st, what, name);
}

static size_t u32_dec(uint32_t v, char *out) {
  char tmp[10];
  size_t n = 0, k = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0) out[k++] = tmp[--n];
  return k;
}

uint32_t sc_fresh_rule(sc *c) {
  char name[48];
  size_t n = c->tag_len;
  memcpy(name, c->tag, n);
  n += u32_dec(c->next_rule++, name + n);
  return tl_gb_rule(c->b, name, n);
}

tl_gexpr sc_lit(sc *c, const char *s) { return tl_gb_literal(c->b, (const uint8_t *)s, strlen(s)); }

tl_gexpr sc_never(sc *c) { return tl_gb_class(c->b, NULL, 0, false); }

tl_gexpr sc_shared(sc *c, uint32_t *rule, tl_gexpr (*make)(sc *)) {
  if (*rule == UINT32_MAX) {
    uint32_t r = sc_fresh_rule(c);
    if (r == UINT32_MAX) return TL_GEXPR_NONE; /* the builder failed */
    *rule = r;
    tl_gb_define(c->b, r, make(c));
  }
  return tl_gb_ref(c->b, *rule);
}

static tl_gexpr make_ws(sc *c) {
  static const uint32_t ws[] = {'\t', '\n', '\r', '\r', ' ', ' '};
  return tl_gb_repeat(c->b, tl_gb_class(c->b, ws, 3, false), 0, SC_WS_MAX);
}

static tl_gexpr make_char(sc *c) {
  tl_charset all;
  tl_cs_clear(&all);
  tl_cs_complement(&all);
  return tl_cs_emit(c->b, &all, true, c->err);
}

/* Any JSON value: the grammar of the empty schema. */
static tl_gexpr compile_bool_schema(sc *c, bool v);
static tl_gexpr make_value(sc *c);

tl_gexpr sc_ws(sc *c) { return sc_shared(c, &c->ws_rule, make_ws); }
tl_gexpr sc_char(sc *c) { return sc_shared(c, &c->char_rule, make_char); }
tl_gexpr sc_any_value(sc *c) { return sc_shared(c, &c->value_rule, make_value); }

/* ---- the JSON pointer of the node being compiled (for messages) ------------ */

static size_t path_push(sc *c, const char *seg, size_t len) {
  size_t old = c->path_len;
  if (c->path_len < SC_PATH_MAX) c->path[c->path_len++] = '/';
  for (size_t i = 0; i < len && c->path_len < SC_PATH_MAX; i++) {
    if (seg[i] == '~' || seg[i] == '/') {
      c->path[c->path_len++] = '~';
      if (c->path_len < SC_PATH_MAX) c->path[c->path_len++] = seg[i] == '~' ? '0' : '1';
    } else {
      c->path[c->path_len++] = seg[i];
    }
  }
  c->path[c->path_len] = 0;
  return old;
}

static size_t path_push_index(sc *c, size_t i) {
  char num[12];
  return path_push(c, num, u32_dec((uint32_t)i, num));
}

static void path_pop(sc *c, size_t old) {
  c->path_len = old;
  c->path[old] = 0;
}

/* ---- keywords -------------------------------------------------------------- */

enum {
  T_NULL = 1, T_BOOL = 2, T_INT = 4, T_NUM = 8, T_STR = 16, T_ARR = 32, T_OBJ = 64,
  T_ALL = 127
};

static bool key_is(const tl_json_member *m, const char *k) {
  return m->key_len == strlen(k) && memcmp(m->key, k, m->key_len) == 0;
}

/* Keywords that do not constrain an instance: ignored on purpose. */
static const char *const annotations[] = {
    "title", "description", "$schema", "default", "examples", "$comment",
    "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};
/* Keywords this reader enforces. */
static const char *const enforced[] = {
    "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
    "additionalProperties", "items", "prefixItems", "minItems", "maxItems", "uniqueItems",
    "pattern", "minLength", "maxLength", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "$id"};

static bool in_list(const tl_json_member *m, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (key_is(m, list[i])) return true;
  return false;
}

static bool is_annotation(const tl_json_member *m) {
  return in_list(m, annotations, sizeof annotations / sizeof annotations[0]);
}

static const tl_json_value *get(const tl_json_value *s, const char *k) {
  return tl_json_get(s, k, strlen(k));
}

/* A non-negative integer keyword's value (absent: dflt). */
static bool get_count(sc *c, const tl_json_value *s, const char *k, uint64_t dflt,
                      uint64_t *out) {
  const tl_json_value *v = get(s, k);
  *out = dflt;
  if (v == NULL) return true;
  if (v->type == TL_JSON_FLOAT && v->u.f >= 0 && v->u.f <= 9.0e15 &&
      (double)(int64_t)v->u.f == v->u.f) {
    *out = (uint64_t)(int64_t)v->u.f;
    return true;
  }
  if (v->type != TL_JSON_INT || v->u.i < 0) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "must be a non-negative integer:", k);
    return false;
  }
  *out = (uint64_t)v->u.i;
  return true;
}

/* Counts above the builder's repetition limit are refused (a bound the
 * grammar cannot write exactly). */
static bool count_fits(sc *c, uint64_t v, const char *k) {
  if (v == UINT64_MAX || v <= TL_GRAMMAR_MAX_REPEAT) return true;
  sc_fail(c, TL_ERR_BOUNDS, "a count above 100000 in", k);
  return false;
}

static uint32_t rep_max(uint64_t v) {
  return v == UINT64_MAX ? TL_GB_UNBOUNDED : (uint32_t)v;
}

static int type_bit(const char *s, size_t n) {
  static const char *const names[] = {"null", "boolean", "integer", "number",
                                      "string", "array", "object"};
  for (int i = 0; i < 7; i++)
    if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) return 1 << i;
  return 0;
}

/* The types "type" allows (T_ALL when absent); 0 after an error. */
static int types_of(sc *c, const tl_json_value *s) {
  const tl_json_value *t = get(s, "type");
  int bits = 0;
  if (t == NULL) return T_ALL;
  if (t->type == TL_JSON_STRING) {
    bits = type_bit(t->u.str.ptr, t->u.str.len);
  } else if (t->type == TL_JSON_ARRAY && t->u.arr.n > 0) {
    for (size_t i = 0; i < t->u.arr.n; i++) {
      const tl_json_value *e = &t->u.arr.items[i];
      int bit = e->type == TL_JSON_STRING ? type_bit(e->u.str.ptr, e->u.str.len) : 0;
      if (bit == 0 || (bits & bit)) {
        bits = 0;
        break;
      }
      bits |= bit;
    }
  }
  if (bits == 0)
    sc_fail(c, TL_ERR_INVALID_ARGUMENT,
            "'type' must name JSON types (a string, or a non-empty array of distinct ones)",
            NULL);
  return bits;
}

/* The type bit of an instance value. */
static int value_type(const tl_json_value *v) {
  switch (v->type) {
    case TL_JSON_NULL: return T_NULL;
    case TL_JSON_BOOL: return T_BOOL;
    case TL_JSON_INT: return T_INT | T_NUM;
    case TL_JSON_FLOAT: {
      /* Every double of magnitude 2^52 or more is a whole number. */
      double f = v->u.f, mag = f < 0 ? -f : f;
      return (mag >= 4503599627370496.0 || f == (double)(int64_t)f) ? T_INT | T_NUM : T_NUM;
    }
    case TL_JSON_STRING: return T_STR;
    case TL_JSON_ARRAY: return T_ARR;
    default: return T_OBJ;
  }
}

/* ---- compilation ------------------------------------------------------------ */

static tl_gexpr compile(sc *c, const tl_json_value *s);

/* A sub-schema under the keyword path segments given. */
static tl_gexpr compile_at(sc *c, const tl_json_value *s, const char *kw, long index) {
  size_t old = path_push(c, kw, strlen(kw));
  tl_gexpr e;
  if (index >= 0) path_push_index(c, (size_t)index);
  e = compile(c, s);
  path_pop(c, old);
  return e;
}

/* A sub-schema as a rule (shared by several places without copying). */
static tl_gexpr as_rule(sc *c, tl_gexpr body) {
  uint32_t r = sc_fresh_rule(c);
  tl_gb_define(c->b, r, body);
  return tl_gb_ref(c->b, r);
}

static tl_gexpr compile_bool_schema(sc *c, bool v) { return v ? sc_any_value(c) : sc_never(c); }

static tl_gexpr alt2(sc *c, tl_gexpr a, tl_gexpr b) {
  tl_gexpr v[2] = {a, b};
  return tl_gb_alt(c->b, v, 2);
}

static tl_gexpr seq2(sc *c, tl_gexpr a, tl_gexpr b) {
  tl_gexpr v[2] = {a, b};
  return tl_gb_seq(c->b, v, 2);
}

static tl_gexpr seq3(sc *c, tl_gexpr a, tl_gexpr b, tl_gexpr d) {
  tl_gexpr v[3] = {a, b, d};
  return tl_gb_seq(c->b, v, 3);
}

/* "," ws */
static tl_gexpr comma(sc *c) { return seq2(c, sc_lit(c, ","), sc_ws(c)); }

/* ---- strings ---- */

static tl_gexpr quoted(sc *c, tl_gexpr inner) {
  return seq3(c, sc_lit(c, "\""), inner, sc_lit(c, "\""));
}

static tl_gexpr compile_string(sc *c, const tl_json_value *s) {
  const tl_json_value *pattern = get(s, "pattern"), *format = get(s, "format");
  uint64_t min_len, max_len;
  bool lengths = get(s, "minLength") != NULL || get(s, "maxLength") != NULL;
  if (!get_count(c, s, "minLength", 0, &min_len) ||
      !get_count(c, s, "maxLength", UINT64_MAX, &max_len) ||
      !count_fits(c, min_len, "minLength") || !count_fits(c, max_len, "maxLength"))
    return TL_GEXPR_NONE;
  if ((pattern != NULL) + (format != NULL) + lengths > 1) {
    sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE,
            "only one of pattern, format and minLength/maxLength on a string (their "
            "intersection is not built)", NULL);
    return TL_GEXPR_NONE;
  }
  if (pattern != NULL) {
    size_t old = path_push(c, "pattern", 7);
    tl_gexpr e = TL_GEXPR_NONE;
    if (pattern->type != TL_JSON_STRING)
      sc_fail(c, TL_ERR_INVALID_ARGUMENT, "'pattern' must be a string", NULL);
    else
      e = tl_gb_regex_enc(c->b, (const uint8_t *)pattern->u.str.ptr, pattern->u.str.len,
                          true, true, c->err);
    if (e == TL_GEXPR_NONE && !c->failed) {
      /* The regex reader's message stands; add where it came from. */
      c->failed = true;
      tl_gerror_append(c->err, " in the pattern at ", 19);
      tl_gerror_append(c->err, c->path, c->path_len);
    }
    path_pop(c, old);
    return quoted(c, e);
  }
  if (format != NULL) {
    if (format->type != TL_JSON_STRING) {
      sc_fail(c, TL_ERR_INVALID_ARGUMENT, "'format' must be a string", NULL);
      return TL_GEXPR_NONE;
    }
    return quoted(c, sc_format(c, format->u.str.ptr, format->u.str.len));
  }
  if (min_len > max_len) return sc_never(c);
  return quoted(c, tl_gb_repeat(c->b, sc_char(c), (uint32_t)min_len, rep_max(max_len)));
}

/* ---- arrays ---- */

/* Elements from index i on (i > 0: each after a comma): prefix[i] while
 * i < n_prefix, then items, count between min and max. */
static tl_gexpr array_elems(sc *c, const tl_gexpr *prefix, size_t n_prefix, tl_gexpr item,
                            size_t i, uint64_t min, uint64_t max) {
  tl_gexpr sep = i > 0 ? comma(c) : tl_gb_literal(c->b, NULL, 0);
  tl_gexpr here;
  if (i >= max) return tl_gb_literal(c->b, NULL, 0);
  if (i < n_prefix) {
    here = seq3(c, sep, prefix[i],
                array_elems(c, prefix, n_prefix, item, i + 1, min, max));
  } else {
    uint64_t lo = min > i ? min - i : 0;
    uint32_t hi = max == UINT64_MAX ? TL_GB_UNBOUNDED : (uint32_t)(max - i);
    tl_gexpr next = tl_gb_repeat(c->b, seq2(c, comma(c), item), lo > 0 ? (uint32_t)lo - 1 : 0,
                                 hi == TL_GB_UNBOUNDED ? hi : hi - 1);
    here = seq3(c, sep, item, next);
  }
  if (i >= min) here = alt2(c, here, tl_gb_literal(c->b, NULL, 0));
  return here;
}

static tl_gexpr compile_array(sc *c, const tl_json_value *s) {
  const tl_json_value *pre = get(s, "prefixItems"), *items = get(s, "items");
  const tl_json_value *uniq = get(s, "uniqueItems");
  uint64_t min, max;
  tl_gexpr prefix[64], item;
  size_t n_prefix = 0;
  if (!get_count(c, s, "minItems", 0, &min) || !get_count(c, s, "maxItems", UINT64_MAX, &max) ||
      !count_fits(c, min, "minItems") || !count_fits(c, max, "maxItems"))
    return TL_GEXPR_NONE;
  if (uniq != NULL && !(uniq->type == TL_JSON_BOOL && !uniq->u.b)) {
    sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE, "unsupported JSON Schema keyword", "uniqueItems");
    return TL_GEXPR_NONE;
  }
  if (pre != NULL) {
    if (pre->type != TL_JSON_ARRAY || pre->u.arr.n == 0) {
      sc_fail(c, TL_ERR_INVALID_ARGUMENT, "'prefixItems' must be a non-empty array", NULL);
      return TL_GEXPR_NONE;
    }
    if (pre->u.arr.n > sizeof prefix / sizeof prefix[0]) {
      sc_fail(c, TL_ERR_BOUNDS, "more than 64 prefixItems", NULL);
      return TL_GEXPR_NONE;
    }
    for (size_t i = 0; i < pre->u.arr.n; i++)
      prefix[n_prefix++] =
          as_rule(c, seq2(c, compile_at(c, &pre->u.arr.items[i], "prefixItems", (long)i),
                          sc_ws(c)));
  }
  if (items != NULL && items->type == TL_JSON_BOOL && !items->u.b) {
    if (max > n_prefix) max = n_prefix; /* nothing past the prefix */
    item = sc_never(c);
  } else {
    item = as_rule(c, seq2(c, items != NULL ? compile_at(c, items, "items", -1) : sc_any_value(c),
                           sc_ws(c)));
  }
  if (min > max) return sc_never(c);
  return seq3(c, seq2(c, sc_lit(c, "["), sc_ws(c)),
              array_elems(c, prefix, n_prefix, item, 0, min, max), sc_lit(c, "]"));
}

/* ---- objects ---- */

static int name_cmp(const sc_name *a, const sc_name *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int d = memcmp(a->s, b->s, n);
  if (d != 0) return d;
  return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

/* The inside of a JSON string whose value is none of names[lo..hi) (sorted,
 * all sharing their first d bytes): a trie walked in canonical encoding. */
static tl_gexpr key_not_in(sc *c, const sc_name *names, size_t lo, size_t hi, size_t d) {
  tl_gexpr alts[4], rest = tl_gb_repeat(c->b, sc_char(c), 0, TL_GB_UNBOUNDED);
  tl_gexpr kids = TL_GEXPR_NONE;
  tl_charset next;
  size_t n = 0, i = lo;
  if (lo == hi) return rest;
  if (names[lo].len > d) alts[n++] = tl_gb_literal(c->b, NULL, 0); /* stop here */
  else i++;                                              /* names[lo] ends here */
  tl_cs_clear(&next);
  while (i < hi) {
    size_t j = i, pos = d;
    uint32_t cp;
    uint8_t enc[6];
    tl_gexpr branch;
    (void)tl_utf8_next((const uint8_t *)names[i].s, names[i].len, &pos, &cp);
    while (j < hi && names[j].len >= pos && memcmp(names[j].s + d, names[i].s + d, pos - d) == 0)
      j++;
    tl_cs_add(&next, cp, cp);
    branch = seq2(c, tl_gb_literal(c->b, enc, tl_json_char_canonical(cp, enc)),
                  key_not_in(c, names, i, j, pos));
    kids = kids == TL_GEXPR_NONE ? branch : alt2(c, kids, branch);
    i = j;
  }
  if (kids != TL_GEXPR_NONE) alts[n++] = kids;
  tl_cs_complement(&next);
  alts[n++] = seq2(c, tl_cs_emit(c->b, &next, true, c->err), rest);
  return tl_gb_alt(c->b, alts, n);
}

static tl_gexpr compile_object(sc *c, const tl_json_value *s) {
  const tl_json_value *props = get(s, "properties"), *req = get(s, "required");
  const tl_json_value *addl = get(s, "additionalProperties");
  uint32_t base = c->n_names, n_decl, n_props = 0, next_first, next_after, extra_rule = 0;
  bool addl_ok = !(addl != NULL && addl->type == TL_JSON_BOOL && !addl->u.b);
  sc_name *names = &c->names[base];
  tl_gexpr addl_value = sc_never(c), extra = TL_GEXPR_NONE;
  if (props != NULL && props->type != TL_JSON_OBJECT) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "'properties' must be an object", NULL);
    return TL_GEXPR_NONE;
  }
  if (req != NULL && req->type != TL_JSON_ARRAY) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "'required' must be an array of strings", NULL);
    return TL_GEXPR_NONE;
  }
  if (props != NULL) n_props = (uint32_t)props->u.obj.n;
  if (c->n_names + n_props + (req != NULL ? req->u.arr.n : 0) > SC_MAX_NAMES) {
    sc_fail(c, TL_ERR_BOUNDS, "more than 1024 property names in nested objects", NULL);
    return TL_GEXPR_NONE;
  }
  /* Declared members: properties in schema order, then required names
   * that properties does not declare (their value: additionalProperties). */
  for (uint32_t i = 0; i < n_props; i++) {
    const tl_json_member *m = &props->u.obj.members[i];
    sc_name nm = {m->key, m->key_len, &m->value, false, true, TL_GEXPR_NONE};
    c->names[c->n_names++] = nm;
  }
  for (size_t i = 0; req != NULL && i < req->u.arr.n; i++) {
    const tl_json_value *r = &req->u.arr.items[i];
    uint32_t k;
    if (r->type != TL_JSON_STRING) {
      sc_fail(c, TL_ERR_INVALID_ARGUMENT, "'required' must be an array of strings", NULL);
      c->n_names = base;
      return TL_GEXPR_NONE;
    }
    for (k = base; k < c->n_names; k++)
      if (c->names[k].len == r->u.str.len &&
          memcmp(c->names[k].s, r->u.str.ptr, r->u.str.len) == 0)
        break;
    if (k == c->n_names) {
      sc_name nm = {r->u.str.ptr, r->u.str.len, addl, false, false, TL_GEXPR_NONE};
      c->names[c->n_names++] = nm;
    }
    c->names[k].required = true;
  }
  n_decl = c->n_names - base;
  if (addl_ok)
    addl_value = as_rule(c, addl != NULL ? compile_at(c, addl, "additionalProperties", -1)
                                         : sc_any_value(c));
  for (uint32_t i = 0; i < n_decl && !c->failed; i++) {
    sc_name *nm = &names[i];
    tl_gexpr v;
    if (nm->from_props) {
      size_t old = path_push(c, "properties", 10);
      path_push(c, nm->s, nm->len);
      v = compile(c, nm->schema);
      path_pop(c, old);
    } else {
      v = addl_value; /* a required name that properties leaves to additionalProperties */
    }
    nm->member = as_rule(c, seq3(c, seq3(c, sc_string_literal(c, nm->s, nm->len), sc_ws(c),
                                         sc_lit(c, ":")),
                                 seq2(c, sc_ws(c), v), sc_ws(c)));
  }
  if (addl_ok) {
    extra_rule = sc_fresh_rule(c);
    extra = tl_gb_ref(c->b, extra_rule);
  }
  /* first_k: members k.. with none written yet; after_k: after one was. */
  next_first = sc_fresh_rule(c);
  next_after = sc_fresh_rule(c);
  tl_gb_define(c->b, next_first,
               addl_ok ? tl_gb_repeat(c->b, seq2(c, extra, tl_gb_repeat(c->b, seq2(c, comma(c), extra),
                                                                      0, TL_GB_UNBOUNDED)),
                                      0, 1)
                       : tl_gb_literal(c->b, NULL, 0));
  tl_gb_define(c->b, next_after,
               addl_ok ? tl_gb_repeat(c->b, seq2(c, comma(c), extra), 0, TL_GB_UNBOUNDED)
                       : tl_gb_literal(c->b, NULL, 0));
  for (uint32_t k = n_decl; k-- > 0;) {
    uint32_t first_rule = sc_fresh_rule(c), after_rule = sc_fresh_rule(c);
    tl_gexpr fb = seq2(c, names[k].member, tl_gb_ref(c->b, next_after));
    tl_gexpr ab = seq3(c, comma(c), names[k].member, tl_gb_ref(c->b, next_after));
    if (!names[k].required) {
      fb = alt2(c, fb, tl_gb_ref(c->b, next_first));
      ab = alt2(c, ab, tl_gb_ref(c->b, next_after));
    }
    tl_gb_define(c->b, first_rule, fb);
    tl_gb_define(c->b, after_rule, ab);
    next_first = first_rule;
    next_after = after_rule;
  }
  if (addl_ok) {
    /* Additional members: any key but the declared ones (sorted, they
     * form the trie key_not_in walks). */
    for (uint32_t i = 1; i < n_decl; i++)
      for (uint32_t j = i; j > 0 && name_cmp(&names[j - 1], &names[j]) > 0; j--) {
        sc_name t = names[j];
        names[j] = names[j - 1];
        names[j - 1] = t;
      }
    tl_gb_define(c->b, extra_rule,
                 seq3(c, seq3(c, quoted(c, key_not_in(c, names, 0, n_decl, 0)), sc_ws(c),
                              sc_lit(c, ":")),
                      seq2(c, sc_ws(c), addl_value), sc_ws(c)));
  }
  c->n_names = base;
  return seq3(c, seq2(c, sc_lit(c, "{"), sc_ws(c)), tl_gb_ref(c->b, next_first), sc_lit(c, "}"));
}

/* ---- enum, const ---- */

/* The values of enum/const that the sibling "type" allows; const and enum
 * together: the enum values equal to the const. */
static tl_gexpr compile_values(sc *c, const tl_json_value *s, int types) {
  const tl_json_value *en = get(s, "enum"), *cn = get(s, "const");
  tl_gexpr acc = TL_GEXPR_NONE;
  const tl_json_value *vals = cn;
  size_t n = 1;
  if (en != NULL) {
    if (en->type != TL_JSON_ARRAY) {
      sc_fail(c, TL_ERR_INVALID_ARGUMENT, "'enum' must be an array", NULL);
      return TL_GEXPR_NONE;
    }
    vals = en->u.arr.items;
    n = en->u.arr.n;
  }
  for (size_t i = 0; i < n; i++) {
    const tl_json_value *v = &vals[i];
    bool dup = false;
    if (!(value_type(v) & types)) continue;
    if (cn != NULL && !sc_json_equal(v, cn)) continue;
    for (size_t k = 0; k < i && !dup; k++) dup = sc_json_equal(&vals[k], v);
    if (dup) continue;
    acc = acc == TL_GEXPR_NONE ? sc_value(c, v) : alt2(c, acc, sc_value(c, v));
  }
  return acc == TL_GEXPR_NONE ? sc_never(c) : acc;
}

/* ---- composition and references ---- */

/* The types a schema can accept at most (for oneOf's disjointness). */
static int kinds(sc *c, const tl_json_value *s, unsigned depth);

static const tl_json_value *resolve_ref(sc *c, const tl_json_value *ref);

static int kinds_list(sc *c, const tl_json_value *list, bool all, unsigned depth) {
  int k = all ? T_ALL : 0;
  if (list->type != TL_JSON_ARRAY) return T_ALL;
  for (size_t i = 0; i < list->u.arr.n; i++) {
    int ki = kinds(c, &list->u.arr.items[i], depth + 1);
    k = all ? (k & ki) : (k | ki);
  }
  return k;
}

static int kinds(sc *c, const tl_json_value *s, unsigned depth) {
  const tl_json_value *v;
  int k = T_ALL;
  if (s->type == TL_JSON_BOOL) return s->u.b ? T_ALL : 0;
  if (s->type != TL_JSON_OBJECT || depth > 16) return T_ALL;
  if ((v = get(s, "type")) != NULL) {
    int t = 0;
    if (v->type == TL_JSON_STRING) t = type_bit(v->u.str.ptr, v->u.str.len);
    for (size_t i = 0; v->type == TL_JSON_ARRAY && i < v->u.arr.n; i++)
      if (v->u.arr.items[i].type == TL_JSON_STRING)
        t |= type_bit(v->u.arr.items[i].u.str.ptr, v->u.arr.items[i].u.str.len);
    if (t & T_NUM) t |= T_INT;
    if (t & T_INT) t |= T_NUM; /* integers and numbers overlap */
    k &= t;
  }
  if ((v = get(s, "const")) != NULL) k &= value_type(v) | ((value_type(v) & T_NUM) ? T_INT : 0);
  if ((v = get(s, "enum")) != NULL && v->type == TL_JSON_ARRAY) {
    int t = 0;
    for (size_t i = 0; i < v->u.arr.n; i++) t |= value_type(&v->u.arr.items[i]);
    if (t & T_NUM) t |= T_INT;
    k &= t;
  }
  if ((v = get(s, "anyOf")) != NULL) k &= kinds_list(c, v, false, depth);
  if ((v = get(s, "oneOf")) != NULL) k &= kinds_list(c, v, false, depth);
  if ((v = get(s, "allOf")) != NULL) k &= kinds_list(c, v, true, depth);
  if ((v = get(s, "$ref")) != NULL && v->type == TL_JSON_STRING) {
    const tl_json_value *t = resolve_ref(c, v);
    if (t != NULL) k &= kinds(c, t, depth + 1);
  }
  return k;
}

/* Finite value sets of two enum/const-only branches that share no value. */
static bool values_disjoint(const tl_json_value *a, const tl_json_value *b) {
  const tl_json_value *va, *vb;
  size_t na = 1, nb = 1;
  const tl_json_value *ea = get(a, "enum"), *eb = get(b, "enum");
  va = ea != NULL ? ea->u.arr.items : get(a, "const");
  vb = eb != NULL ? eb->u.arr.items : get(b, "const");
  if (va == NULL || vb == NULL) return false;
  if (ea != NULL) {
    if (ea->type != TL_JSON_ARRAY) return false;
    na = ea->u.arr.n;
  }
  if (eb != NULL) {
    if (eb->type != TL_JSON_ARRAY) return false;
    nb = eb->u.arr.n;
  }
  for (size_t i = 0; i < na; i++)
    for (size_t k = 0; k < nb; k++)
      if (sc_json_equal(&va[i], &vb[k])) return false;
  return true;
}

static tl_gexpr compile_anyof(sc *c, const tl_json_value *list, const char *kw, bool one) {
  tl_gexpr acc = TL_GEXPR_NONE;
  if (list->type != TL_JSON_ARRAY || list->u.arr.n == 0) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "must be a non-empty array of schemas:", kw);
    return TL_GEXPR_NONE;
  }
  for (size_t i = 0; i < list->u.arr.n; i++) {
    const tl_json_value *bi = &list->u.arr.items[i];
    for (size_t k = 0; one && k < i; k++) {
      const tl_json_value *bk = &list->u.arr.items[k];
      bool disjoint = (kinds(c, bi, 0) & kinds(c, bk, 0)) == 0 ||
                      (bi->type == TL_JSON_OBJECT && bk->type == TL_JSON_OBJECT &&
                       values_disjoint(bi, bk));
      if (!disjoint) {
        size_t old = path_push(c, kw, strlen(kw));
        sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE,
                "oneOf whose branches may overlap (enforced only when their types or "
                "enum/const values are disjoint)", NULL);
        path_pop(c, old);
        return TL_GEXPR_NONE;
      }
    }
    acc = acc == TL_GEXPR_NONE ? compile_at(c, bi, kw, (long)i)
                               : alt2(c, acc, compile_at(c, bi, kw, (long)i));
  }
  return acc;
}

/* A schema that constrains nothing: true, or an object of annotations. */
static bool trivially_true(const tl_json_value *s) {
  if (s->type == TL_JSON_BOOL) return s->u.b;
  if (s->type != TL_JSON_OBJECT) return false;
  for (size_t i = 0; i < s->u.obj.n; i++)
    if (!is_annotation(&s->u.obj.members[i])) return false;
  return true;
}

/* allOf is exact only when at most one member constrains anything. */
static tl_gexpr compile_allof(sc *c, const tl_json_value *list) {
  const tl_json_value *only = NULL;
  long at = -1;
  if (list->type != TL_JSON_ARRAY || list->u.arr.n == 0) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "must be a non-empty array of schemas:", "allOf");
    return TL_GEXPR_NONE;
  }
  for (size_t i = 0; i < list->u.arr.n; i++) {
    const tl_json_value *m = &list->u.arr.items[i];
    if (m->type == TL_JSON_BOOL && !m->u.b) return sc_never(c);
    if (trivially_true(m)) continue;
    if (only != NULL) {
      size_t old = path_push(c, "allOf", 5);
      sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE,
              "allOf with more than one constraining member (no exact merge is built)", NULL);
      path_pop(c, old);
      return TL_GEXPR_NONE;
    }
    only = m;
    at = (long)i;
  }
  return only == NULL ? sc_any_value(c) : compile_at(c, only, "allOf", at);
}

/* "#", "#/json/pointer" (URI-fragment encoded) from the root. */
static const tl_json_value *resolve_ref(sc *c, const tl_json_value *ref) {
  const char *p = ref->u.str.ptr;
  size_t n = ref->u.str.len, i = 1;
  const tl_json_value *node = c->root;
  if (n == 0 || p[0] != '#') return NULL;
  if (n == 1) return node;
  if (p[1] != '/') return NULL;
  while (i < n && node != NULL) {
    char seg[256];
    size_t len = 0;
    i++; /* the '/' */
    while (i < n && p[i] != '/') {
      char ch = p[i++];
      if (ch == '%' && i + 1 < n) {
        int hi = p[i] >= 'a' ? p[i] - 'a' + 10 : p[i] >= 'A' ? p[i] - 'A' + 10 : p[i] - '0';
        int lo = p[i + 1] >= 'a' ? p[i + 1] - 'a' + 10
                 : p[i + 1] >= 'A' ? p[i + 1] - 'A' + 10 : p[i + 1] - '0';
        if (hi < 0 || hi > 15 || lo < 0 || lo > 15) return NULL;
        ch = (char)(hi * 16 + lo);
        i += 2;
      } else if (ch == '~' && i < n && (p[i] == '0' || p[i] == '1')) {
        ch = p[i++] == '0' ? '~' : '/';
      }
      if (len == sizeof seg) return NULL;
      seg[len++] = ch;
    }
    if (node->type == TL_JSON_OBJECT) {
      node = tl_json_get(node, seg, len);
    } else if (node->type == TL_JSON_ARRAY) {
      size_t idx = 0;
      if (len == 0 || (len > 1 && seg[0] == '0')) return NULL;
      for (size_t k = 0; k < len; k++) {
        if (seg[k] < '0' || seg[k] > '9' || idx > 100000000) return NULL;
        idx = idx * 10 + (size_t)(seg[k] - '0');
      }
      node = idx < node->u.arr.n ? &node->u.arr.items[idx] : NULL;
    } else {
      return NULL;
    }
  }
  return node;
}

static tl_gexpr compile_ref(sc *c, const tl_json_value *ref) {
  const tl_json_value *target;
  uint32_t rule, i;
  if (ref->type != TL_JSON_STRING) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "'$ref' must be a string", NULL);
    return TL_GEXPR_NONE;
  }
  if (ref->u.str.len == 0 || ref->u.str.ptr[0] != '#' ||
      (ref->u.str.len > 1 && ref->u.str.ptr[1] != '/')) {
    sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE,
            "a $ref other than a local JSON pointer (\"#\", \"#/...\")", NULL);
    return TL_GEXPR_NONE;
  }
  target = resolve_ref(c, ref);
  if (target == NULL) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "a $ref to nothing in this schema", NULL);
    return TL_GEXPR_NONE;
  }
  for (i = 0; i < c->n_refs; i++)
    if (c->refs[i].node == target) return tl_gb_ref(c->b, c->refs[i].rule);
  if (c->n_refs == SC_MAX_REFS) {
    sc_fail(c, TL_ERR_BOUNDS, "more than 256 distinct $ref targets", NULL);
    return TL_GEXPR_NONE;
  }
  /* Declared before its body is compiled: recursion refers to it. */
  rule = sc_fresh_rule(c);
  c->refs[c->n_refs].node = target;
  c->refs[c->n_refs].rule = rule;
  c->n_refs++;
  {
    char saved[SC_PATH_MAX + 1];
    size_t saved_len = c->path_len, n = ref->u.str.len - 1;
    tl_gexpr body;
    memcpy(saved, c->path, saved_len + 1);
    if (n > SC_PATH_MAX) n = SC_PATH_MAX;
    memcpy(c->path, ref->u.str.ptr + 1, n);
    c->path[n] = 0;
    c->path_len = n;
    body = compile(c, target);
    memcpy(c->path, saved, saved_len + 1);
    c->path_len = saved_len;
    tl_gb_define(c->b, rule, body);
  }
  return tl_gb_ref(c->b, rule);
}

/* ---- one schema ---- */

static tl_gexpr compile_types(sc *c, const tl_json_value *s, int types) {
  tl_gexpr alts[6];
  size_t n = 0;
  if (types & T_NULL) alts[n++] = sc_lit(c, "null");
  if (types & T_BOOL) alts[n++] = alt2(c, sc_lit(c, "true"), sc_lit(c, "false"));
  if (types & (T_INT | T_NUM)) alts[n++] = sc_number(c, s, !(types & T_NUM));
  if (types & T_STR) alts[n++] = compile_string(c, s);
  if (types & T_ARR) alts[n++] = compile_array(c, s);
  if (types & T_OBJ) alts[n++] = compile_object(c, s);
  return n == 1 ? alts[0] : tl_gb_alt(c->b, alts, n);
}

static tl_gexpr compile(sc *c, const tl_json_value *s) {
  const tl_json_member *composer = NULL;
  size_t n_constraining = 0;
  bool has_values = false, has_type = false;
  tl_gexpr e;
  if (c->failed || tl_gb_error(c->b)->status != TL_OK) return TL_GEXPR_NONE;
  if (s->type == TL_JSON_BOOL) return compile_bool_schema(c, s->u.b);
  if (s->type != TL_JSON_OBJECT) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "a schema must be an object or a boolean", NULL);
    return TL_GEXPR_NONE;
  }
  if (++c->depth > SC_MAX_DEPTH) {
    sc_fail(c, TL_ERR_BOUNDS, "schemas nested deeper than 128", NULL);
    return TL_GEXPR_NONE;
  }
  for (size_t i = 0; i < s->u.obj.n; i++) {
    const tl_json_member *m = &s->u.obj.members[i];
    if (is_annotation(m)) continue;
    if (!in_list(m, enforced, sizeof enforced / sizeof enforced[0])) {
      fail_kw(c, TL_ERR_UNSUPPORTED_FEATURE, "unsupported JSON Schema keyword", m->key,
              m->key_len);
      return TL_GEXPR_NONE;
    }
    if (key_is(m, "$id")) {
      /* A base URI: only the root's (which changes nothing local refs see). */
      if (s != c->root) {
        sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE,
                "'$id' below the root (it would rebase the $refs under it)", NULL);
        return TL_GEXPR_NONE;
      }
      continue;
    }
    if (key_is(m, "anyOf") || key_is(m, "oneOf") || key_is(m, "allOf") || key_is(m, "$ref")) {
      if (composer != NULL) {
        fail_kw(c, TL_ERR_UNSUPPORTED_FEATURE, "more than one of anyOf/oneOf/allOf/$ref, here",
                m->key, m->key_len);
        return TL_GEXPR_NONE;
      }
      composer = m;
      continue;
    }
    if (key_is(m, "enum") || key_is(m, "const")) has_values = true;
    else if (key_is(m, "type")) has_type = true;
    n_constraining++;
  }
  if (composer != NULL) {
    if (n_constraining > 0) {
      fail_kw(c, TL_ERR_UNSUPPORTED_FEATURE,
              "constraining keywords beside (their intersection with it is not built)", composer->key,
              composer->key_len);
      return TL_GEXPR_NONE;
    }
    if (key_is(composer, "$ref")) e = compile_ref(c, &composer->value);
    else if (key_is(composer, "allOf")) e = compile_allof(c, &composer->value);
    else e = compile_anyof(c, &composer->value, key_is(composer, "oneOf") ? "oneOf" : "anyOf",
                           key_is(composer, "oneOf"));
  } else if (has_values) {
    int types;
    if (n_constraining > (size_t)(has_type + (get(s, "enum") != NULL) + (get(s, "const") != NULL))) {
      sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE,
              "enum/const beside keywords other than 'type' (not filtered)", NULL);
      return TL_GEXPR_NONE;
    }
    types = types_of(c, s);
    e = c->failed ? TL_GEXPR_NONE : compile_values(c, s, types);
  } else {
    int types = types_of(c, s);
    e = c->failed ? TL_GEXPR_NONE : compile_types(c, s, types);
  }
  c->depth--;
  return e;
}

static tl_gexpr make_value(sc *c) { return compile_types(c, &(tl_json_value){.type = TL_JSON_OBJECT}, T_ALL); }

/* ---- entry points ------------------------------------------------------------ */

tl_gexpr tl_gb_json_schema(tl_gbuilder *b, const struct tl_json_value *schema, tl_gerror *err) {
  sc ctx, *c = &ctx;
  tl_gexpr e;
  memset(c, 0, sizeof *c);
  c->b = b;
  c->err = err;
  c->root = schema;
  c->ws_rule = c->char_rule = c->value_rule = UINT32_MAX;
  for (size_t i = 0; i < sizeof c->format_rule / sizeof c->format_rule[0]; i++)
    c->format_rule[i] = UINT32_MAX;
  /* A fresh expression's id tells this call apart from every other call
   * on the builder. */
  memcpy(c->tag, "json-", 5);
  c->tag_len = 5 + u32_dec(tl_gb_literal(b, NULL, 0), c->tag + 5);
  c->tag[c->tag_len++] = '-';
  e = compile(c, schema);
  return c->failed ? TL_GEXPR_NONE : e;
}

static tl_status finish(tl_gbuilder *b, tl_gexpr e, const tl_grammar **out, tl_gerror *err) {
  uint32_t root = tl_gb_rule(b, "json-root", 9);
  if (err->status != TL_OK) return err->status;
  tl_gb_define(b, root, e);
  return tl_gb_finish(b, root, out, err);
}

tl_status tl_grammar_from_json_schema(tl_arena *arena, const uint8_t *text, size_t len,
                                      const tl_grammar **out, tl_gerror *err) {
  tl_json_value *schema;
  tl_json_error jerr;
  tl_json_limits lim = tl_json_limits_default();
  tl_gbuilder *b;
  tl_status st;
  memset(err, 0, sizeof *err);
  *out = NULL;
  st = tl_json_parse(text, len, &lim, arena, &schema, &jerr);
  if (st == TL_ERR_OUT_OF_MEMORY) return tl_gerror_set(err, st, 0, "json schema: out of memory", NULL);
  if (st != TL_OK) {
    tl_gerror_set(err, st, (uint32_t)jerr.offset, "json schema: not JSON: ", jerr.reason, NULL);
    tl_gerror_append(err, " at line ", 9);
    tl_gerror_append_u64(err, jerr.line);
    tl_gerror_append(err, " column ", 8);
    tl_gerror_append_u64(err, jerr.column);
    return st;
  }
  st = tl_gb_new(arena, &b);
  if (st != TL_OK) return tl_gerror_set(err, st, 0, "json schema: out of memory", NULL);
  return finish(b, tl_gb_json_schema(b, schema, err), out, err);
}

tl_status tl_grammar_json_object(tl_arena *arena, const tl_grammar **out, tl_gerror *err) {
  tl_json_member type = {"type", 4, {.type = TL_JSON_STRING}};
  tl_json_value schema = {.type = TL_JSON_OBJECT};
  tl_gbuilder *b;
  tl_status st;
  memset(err, 0, sizeof *err);
  *out = NULL;
  type.value.u.str.ptr = "object";
  type.value.u.str.len = 6;
  schema.u.obj.members = &type;
  schema.u.obj.n = 1;
  st = tl_gb_new(arena, &b);
  if (st != TL_OK) return tl_gerror_set(err, st, 0, "json object: out of memory", NULL);
  return finish(b, tl_gb_json_schema(b, &schema, err), out, err);
}
