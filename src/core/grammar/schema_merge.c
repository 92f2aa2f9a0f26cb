/* Composition by merging: the schema whose instances are exactly those
 * valid under two schemas, built as a new JSON value (in the builder's
 * arena), so that allOf, a $ref beside other keywords and keywords beside
 * anyOf/oneOf are enforced rather than refused. Where the merge cannot be
 * exact it refuses and names the keyword.
 *
 * Per keyword, x and y both having it:
 *   type                    the intersection (integer within number); none
 *                           left: the schema false
 *   required                the union
 *   minimum, minLength, ... the larger; maximum, maxLength, ... the smaller
 *   properties / additionalProperties
 *                           per name k: allOf(x's schema for k, y's), a
 *                           side's schema for k being properties[k] when it
 *                           has one, else its additionalProperties (true
 *                           when absent); additionalProperties: allOf of
 *                           both sides'
 *   prefixItems / items     the same, position by position
 *   anything else           kept when both are equal, refused otherwise
 * A keyword on one side only is kept as it is. */
#include <string.h>

#include "grammar/schema_internal.h"

/* Merges through references at most this deep (a recursive one would
 * never end). */
#define MERGE_MAX_DEPTH 64u

static const tl_json_value k_false = {TL_JSON_BOOL, {.b = false}};

static bool is_key(const char *key, size_t len, const char *name) {
  return strlen(name) == len && memcmp(key, name, len) == 0;
}

static bool is_true(const tl_json_value *v) {
  return v == NULL || (v->type == TL_JSON_BOOL && v->u.b) ||
         (v->type == TL_JSON_OBJECT && v->u.obj.n == 0);
}

static tl_json_value *new_value(sc *c, tl_json_type type, size_t cap) {
  tl_arena *a = tl_gb_arena(c->b);
  tl_json_value *v;
  void *mem;
  if (tl_arena_alloc(a, sizeof *v, 0, &mem) != TL_OK) goto oom;
  v = mem;
  memset(v, 0, sizeof *v);
  v->type = type;
  if (type == TL_JSON_OBJECT || type == TL_JSON_ARRAY) {
    size_t elem = type == TL_JSON_OBJECT ? sizeof(tl_json_member) : sizeof(tl_json_value);
    if (tl_arena_alloc_array(a, cap ? cap : 1, elem, 0, &mem) != TL_OK) goto oom;
    if (type == TL_JSON_OBJECT) v->u.obj.members = mem;
    else v->u.arr.items = mem;
  }
  return v;
oom:
  sc_fail(c, TL_ERR_OUT_OF_MEMORY, "out of memory merging schemas", NULL);
  return NULL;
}

static void put(tl_json_value *obj, const char *key, size_t len, const tl_json_value *v) {
  tl_json_member *m = &obj->u.obj.members[obj->u.obj.n++];
  m->key = key;
  m->key_len = len;
  m->value = *v;
}

static const tl_json_value *refuse(sc *c, const char *what, const char *key, size_t len) {
  char name[64];
  size_t n = len < sizeof name - 1 ? len : sizeof name - 1;
  memcpy(name, key, n);
  name[n] = '\0';
  sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE, what, name);
  return NULL;
}

/* {"allOf": [x, y]}, or the one that constrains when the other does not
 * (NULL when neither does: absent stays absent). */
static const tl_json_value *all_of(sc *c, const tl_json_value *x, const tl_json_value *y) {
  tl_json_value *arr, *obj;
  if (is_true(x)) return is_true(y) ? x : y;
  if (is_true(y)) return x;
  arr = new_value(c, TL_JSON_ARRAY, 2);
  obj = new_value(c, TL_JSON_OBJECT, 1);
  if (arr == NULL || obj == NULL) return NULL;
  arr->u.arr.items[0] = *x;
  arr->u.arr.items[1] = *y;
  arr->u.arr.n = 2;
  put(obj, "allOf", 5, arr);
  return obj;
}

static bool is_num(const tl_json_value *v) {
  return v->type == TL_JSON_INT || v->type == TL_JSON_FLOAT;
}

static double num(const tl_json_value *v) {
  return v->type == TL_JSON_INT ? (double)v->u.i : v->u.f;
}

/* properties + additionalProperties of x and y, merged into out. */
static bool merge_properties(sc *c, const tl_json_value *x, const tl_json_value *y,
                             tl_json_value *out) {
  const tl_json_value *px = sc_get(x, "properties"), *py = sc_get(y, "properties");
  const tl_json_value *ax = sc_get(x, "additionalProperties"),
                      *ay = sc_get(y, "additionalProperties");
  tl_json_value *props;
  if (px == NULL && py == NULL && ax == NULL && ay == NULL) return true;
  if ((px && px->type != TL_JSON_OBJECT) || (py && py->type != TL_JSON_OBJECT)) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "must be an object:", "properties");
    return false;
  }
  props = new_value(c, TL_JSON_OBJECT, (px ? px->u.obj.n : 0) + (py ? py->u.obj.n : 0));
  if (props == NULL) return false;
  for (int side = 0; side < 2; side++) {
    const tl_json_value *p = side ? py : px, *other = side ? px : py;
    const tl_json_value *other_ap = side ? ax : ay;
    for (size_t i = 0; p != NULL && i < p->u.obj.n; i++) {
      const tl_json_member *m = &p->u.obj.members[i];
      const tl_json_value *theirs, *both;
      if (side == 1 && px != NULL && tl_json_get(px, m->key, m->key_len) != NULL) continue;
      theirs = other ? tl_json_get(other, m->key, m->key_len) : NULL;
      if (theirs == NULL) theirs = other_ap;
      both = side ? all_of(c, theirs, &m->value) : all_of(c, &m->value, theirs);
      if (c->failed) return false;
      put(props, m->key, m->key_len, both != NULL ? both : &m->value);
    }
  }
  if (props->u.obj.n > 0) put(out, "properties", 10, props);
  if (ax != NULL || ay != NULL) {
    const tl_json_value *ap = all_of(c, ax, ay);
    if (c->failed) return false;
    if (ap != NULL) put(out, "additionalProperties", 20, ap);
  }
  return true;
}

/* prefixItems + items of x and y, merged into out. */
static bool merge_items(sc *c, const tl_json_value *x, const tl_json_value *y,
                        tl_json_value *out) {
  static const tl_json_value yes = {TL_JSON_BOOL, {.b = true}};
  const tl_json_value *px = sc_get(x, "prefixItems"), *py = sc_get(y, "prefixItems");
  const tl_json_value *ix = sc_get(x, "items"), *iy = sc_get(y, "items");
  size_t nx, ny, n;
  if (px == NULL && py == NULL && ix == NULL && iy == NULL) return true;
  if ((px && px->type != TL_JSON_ARRAY) || (py && py->type != TL_JSON_ARRAY)) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "must be an array:", "prefixItems");
    return false;
  }
  nx = px ? px->u.arr.n : 0;
  ny = py ? py->u.arr.n : 0;
  n = nx > ny ? nx : ny;
  if (n > 0) {
    tl_json_value *arr = new_value(c, TL_JSON_ARRAY, n);
    if (arr == NULL) return false;
    for (size_t i = 0; i < n; i++) {
      const tl_json_value *both =
          all_of(c, i < nx ? &px->u.arr.items[i] : ix, i < ny ? &py->u.arr.items[i] : iy);
      if (c->failed) return false;
      arr->u.arr.items[arr->u.arr.n++] = both != NULL ? *both : yes;
    }
    put(out, "prefixItems", 11, arr);
  }
  if (ix != NULL || iy != NULL) {
    const tl_json_value *items = all_of(c, ix, iy);
    if (c->failed) return false;
    if (items != NULL) put(out, "items", 5, items);
  }
  return true;
}

static const char *const k_types[] = {"null",   "boolean", "integer", "number",
                                      "string", "array",   "object"};

/* The bits of a "type" value (bit i: k_types[i]; number admits the
 * integers); -1 for a name JSON Schema has no type for. */
static int type_bits(const tl_json_value *t) {
  int bits = 0;
  size_t n = t->type == TL_JSON_ARRAY ? t->u.arr.n : 1;
  for (size_t i = 0; i < n; i++) {
    const tl_json_value *v = t->type == TL_JSON_ARRAY ? &t->u.arr.items[i] : t;
    int known = 0;
    for (int k = 0; k < 7 && v->type == TL_JSON_STRING; k++)
      if (is_key(v->u.str.ptr, v->u.str.len, k_types[k])) known = 1 << k;
    if (known == 0) return -1;
    bits |= known;
  }
  if (bits & 8) bits |= 4;
  return bits;
}

/* The intersection of two "type" values, or NULL for none (the schema
 * false) or after an error. */
static const tl_json_value *type_meet(sc *c, const tl_json_value *x, const tl_json_value *y,
                                      bool *none) {
  int bits = type_bits(x), other = type_bits(y);
  tl_json_value *arr;
  if (bits < 0 || other < 0) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT,
            "'type' must name JSON types (a string, or a non-empty array of distinct ones)",
            NULL);
    return NULL;
  }
  bits &= other;
  if (bits & 8) bits &= ~4; /* number: the integers are in it */
  *none = bits == 0;
  if (*none) return NULL;
  arr = new_value(c, TL_JSON_ARRAY, 7);
  if (arr == NULL) return NULL;
  for (int k = 0; k < 7; k++)
    if (bits & (1 << k)) {
      tl_json_value *v = &arr->u.arr.items[arr->u.arr.n++];
      v->type = TL_JSON_STRING;
      v->u.str.ptr = k_types[k];
      v->u.str.len = strlen(k_types[k]);
    }
  return arr;
}

static bool lower_bound(const char *key, size_t len) {
  return is_key(key, len, "minimum") || is_key(key, len, "exclusiveMinimum") ||
         is_key(key, len, "minLength") || is_key(key, len, "minItems");
}

static bool upper_bound(const char *key, size_t len) {
  return is_key(key, len, "maximum") || is_key(key, len, "exclusiveMaximum") ||
         is_key(key, len, "maxLength") || is_key(key, len, "maxItems");
}

/* Keywords merge_properties and merge_items take, and what a merged
 * schema does not carry ($id: only the root's, which changes nothing). */
static bool merged_apart(const char *key, size_t len) {
  return is_key(key, len, "properties") || is_key(key, len, "additionalProperties") ||
         is_key(key, len, "prefixItems") || is_key(key, len, "items") || is_key(key, len, "$id");
}

/* x and y: objects without allOf or $ref. */
static const tl_json_value *merge_flat(sc *c, const tl_json_value *x, const tl_json_value *y) {
  tl_json_value *out = new_value(c, TL_JSON_OBJECT, x->u.obj.n + y->u.obj.n + 4);
  if (out == NULL) return NULL;
  for (int side = 0; side < 2; side++) {
    const tl_json_value *s = side ? y : x, *other = side ? x : y;
    for (size_t i = 0; i < s->u.obj.n; i++) {
      const tl_json_member *m = &s->u.obj.members[i];
      const tl_json_value *o = tl_json_get(other, m->key, m->key_len);
      if (sc_is_annotation(m) || merged_apart(m->key, m->key_len)) continue;
      if (o == NULL) {
        put(out, m->key, m->key_len, &m->value);
      } else if (side == 1) {
        continue; /* both sides have it: merged on the first */
      } else if (is_key(m->key, m->key_len, "type")) {
        bool none = false;
        const tl_json_value *t = type_meet(c, &m->value, o, &none);
        if (none) return &k_false;
        if (t == NULL) return NULL;
        put(out, "type", 4, t);
      } else if (is_key(m->key, m->key_len, "required") && m->value.type == TL_JSON_ARRAY &&
                 o->type == TL_JSON_ARRAY) {
        tl_json_value *r = new_value(c, TL_JSON_ARRAY, m->value.u.arr.n + o->u.arr.n);
        if (r == NULL) return NULL;
        for (size_t k = 0; k < m->value.u.arr.n; k++)
          r->u.arr.items[r->u.arr.n++] = m->value.u.arr.items[k];
        for (size_t k = 0; k < o->u.arr.n; k++) {
          bool dup = false;
          for (size_t j = 0; j < m->value.u.arr.n && !dup; j++)
            dup = sc_json_equal(&o->u.arr.items[k], &m->value.u.arr.items[j]);
          if (!dup) r->u.arr.items[r->u.arr.n++] = o->u.arr.items[k];
        }
        put(out, "required", 8, r);
      } else if ((lower_bound(m->key, m->key_len) || upper_bound(m->key, m->key_len)) &&
                 is_num(&m->value) && is_num(o)) {
        bool mine = lower_bound(m->key, m->key_len) ? num(&m->value) >= num(o)
                                                    : num(&m->value) <= num(o);
        put(out, m->key, m->key_len, mine ? &m->value : o);
      } else if (sc_json_equal(&m->value, o)) {
        put(out, m->key, m->key_len, &m->value);
      } else {
        return refuse(c,
                      "allOf (or a $ref or anyOf/oneOf beside keywords) with two different "
                      "values of",
                      m->key, m->key_len);
      }
    }
  }
  if (!merge_properties(c, x, y, out) || !merge_items(c, x, y, out)) return NULL;
  return out;
}

/* s without the keywords k1, k2 (k2 may be NULL). */
static tl_json_value *strip(sc *c, const tl_json_value *s, const char *k1, const char *k2) {
  tl_json_value *out = new_value(c, TL_JSON_OBJECT, s->u.obj.n);
  if (out == NULL) return NULL;
  for (size_t i = 0; i < s->u.obj.n; i++) {
    const tl_json_member *m = &s->u.obj.members[i];
    if (is_key(m->key, m->key_len, k1) || (k2 != NULL && is_key(m->key, m->key_len, k2)))
      continue;
    put(out, m->key, m->key_len, &m->value);
  }
  return out;
}

/* Whether s has a keyword that constrains (not an annotation). */
static bool constrains(const tl_json_value *s) {
  for (size_t i = 0; i < s->u.obj.n; i++)
    if (!sc_is_annotation(&s->u.obj.members[i]) &&
        !is_key(s->u.obj.members[i].key, s->u.obj.members[i].key_len, "$id"))
      return true;
  return false;
}

static const tl_json_value *merge(sc *c, const tl_json_value *x, const tl_json_value *y);

/* x with allOf merged in, and a $ref beside other keywords merged with
 * its target; a $ref alone stays a reference (recursion needs it). */
static const tl_json_value *flatten(sc *c, const tl_json_value *x) {
  const tl_json_value *all, *ref, *out;
  if (x->type != TL_JSON_OBJECT) return x;
  all = sc_get(x, "allOf");
  ref = sc_get(x, "$ref");
  if (all == NULL && ref == NULL) return x;
  if (all == NULL) {
    const tl_json_value *rest = strip(c, x, "$ref", NULL);
    if (rest == NULL || !constrains(rest)) return rest == NULL ? NULL : x;
  }
  if (all != NULL && (all->type != TL_JSON_ARRAY || all->u.arr.n == 0)) {
    sc_fail(c, TL_ERR_INVALID_ARGUMENT, "must be a non-empty array of schemas:", "allOf");
    return NULL;
  }
  out = strip(c, x, "allOf", "$ref");
  for (size_t i = 0; out != NULL && all != NULL && i < all->u.arr.n; i++)
    out = merge(c, out, &all->u.arr.items[i]);
  if (out != NULL && ref != NULL) {
    const tl_json_value *target = sc_resolve(c, ref);
    out = target == NULL ? NULL : merge(c, out, target);
  }
  return out;
}

static const tl_json_value *merge_once(sc *c, const tl_json_value *x, const tl_json_value *y) {
  for (;;) {
    if (c->failed) return NULL;
    if (x->type == TL_JSON_BOOL) return x->u.b ? flatten(c, y) : &k_false;
    if (y->type == TL_JSON_BOOL) return y->u.b ? flatten(c, x) : &k_false;
    if (x->type != TL_JSON_OBJECT || y->type != TL_JSON_OBJECT) {
      sc_fail(c, TL_ERR_INVALID_ARGUMENT, "a schema must be an object or a boolean", NULL);
      return NULL;
    }
    if (!sc_check_keywords(c, x) || !sc_check_keywords(c, y)) return NULL;
    if ((x = flatten(c, x)) == NULL || (y = flatten(c, y)) == NULL) return NULL;
    /* A plain reference (flatten keeps those): its target, then again. */
    if (x->type == TL_JSON_OBJECT && sc_get(x, "$ref") != NULL) {
      if ((x = sc_resolve(c, sc_get(x, "$ref"))) == NULL) return NULL;
    } else if (y->type == TL_JSON_OBJECT && sc_get(y, "$ref") != NULL) {
      if ((y = sc_resolve(c, sc_get(y, "$ref"))) == NULL) return NULL;
    } else if (x->type == TL_JSON_OBJECT && y->type == TL_JSON_OBJECT) {
      return merge_flat(c, x, y);
    }
  }
}

/* Merges nest through references; their depth is bounded. */
static const tl_json_value *merge(sc *c, const tl_json_value *x, const tl_json_value *y) {
  const tl_json_value *r;
  if (c->failed) return NULL;
  if (c->merge_depth >= MERGE_MAX_DEPTH) {
    sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE,
            "allOf (or a $ref beside keywords) through a recursive $ref", NULL);
    return NULL;
  }
  c->merge_depth++;
  r = merge_once(c, x, y);
  c->merge_depth--;
  return r;
}

const tl_json_value *sc_normalize(sc *c, const tl_json_value *s) {
  static const char *const choices[] = {"anyOf", "oneOf"};
  if ((s = flatten(c, s)) == NULL || s->type != TL_JSON_OBJECT) return s;
  for (int k = 0; k < 2; k++) {
    const tl_json_value *list = sc_get(s, choices[k]), *rest;
    tl_json_value *branches, *out;
    if (list == NULL) continue;
    if ((rest = strip(c, s, choices[k], NULL)) == NULL) return NULL;
    if (!constrains(rest)) return s;
    if (list->type != TL_JSON_ARRAY || list->u.arr.n == 0) {
      sc_fail(c, TL_ERR_INVALID_ARGUMENT, "must be a non-empty array of schemas:", choices[k]);
      return NULL;
    }
    /* A and (B or C) is (A and B) or (A and C). */
    branches = new_value(c, TL_JSON_ARRAY, list->u.arr.n);
    out = new_value(c, TL_JSON_OBJECT, 1);
    if (branches == NULL || out == NULL) return NULL;
    for (size_t i = 0; i < list->u.arr.n; i++) {
      const tl_json_value *b = merge(c, rest, &list->u.arr.items[i]);
      if (b == NULL) return NULL;
      branches->u.arr.items[branches->u.arr.n++] = *b;
    }
    put(out, choices[k], strlen(choices[k]), branches);
    return out;
  }
  return s;
}
