/* enum and const values as grammar: each value in the canonical form of
 * docs/structured.md (what ECMAScript's JSON.stringify writes: numbers by
 * Number::toString, strings with its escapes, members in the schema's
 * order), with the bounded whitespace between tokens. */
#include <string.h>

#include "grammar/charset.h"
#include "grammar/schema_internal.h"
#include "utf8.h"

size_t sc_js_number(double v, char *out) {
  char repr[40], digits[40];
  tl_json_out o = tl_json_out_make((uint8_t *)repr, sizeof repr - 1);
  size_t k = 0, n_out = 0, i = 0;
  long point = -1, exp10 = 0, n;
  bool neg = false, exp_neg = false;
  tl_py_float_repr(v, &o);
  repr[o.len] = 0;
  if (repr[i] == '-') {
    neg = true;
    i++;
  }
  for (; i < o.len && repr[i] != 'e'; i++) {
    if (repr[i] == '.') point = (long)k;
    else digits[k++] = repr[i];
  }
  if (point < 0) point = (long)k;
  if (i < o.len) { /* e[+-]XX */
    i++;
    if (repr[i] == '-' || repr[i] == '+') exp_neg = repr[i++] == '-';
    for (; i < o.len; i++) exp10 = exp10 * 10 + (repr[i] - '0');
  }
  n = point + (exp_neg ? -exp10 : exp10); /* value = 0.DIGITS x 10^n */
  {
    size_t lead = 0;
    while (lead < k && digits[lead] == '0') lead++;
    memmove(digits, digits + lead, k - lead);
    k -= lead;
    n -= (long)lead;
    while (k > 0 && digits[k - 1] == '0') k--;
  }
  if (k == 0) { /* zero, signed or not, prints as 0 */
    out[0] = '0';
    return 1;
  }
  if (neg) out[n_out++] = '-';
  if ((long)k <= n && n <= 21) {
    memcpy(out + n_out, digits, k);
    n_out += k;
    for (long z = (long)k; z < n; z++) out[n_out++] = '0';
  } else if (0 < n && n <= 21) {
    memcpy(out + n_out, digits, (size_t)n);
    n_out += (size_t)n;
    out[n_out++] = '.';
    memcpy(out + n_out, digits + n, k - (size_t)n);
    n_out += k - (size_t)n;
  } else if (-6 < n && n <= 0) {
    out[n_out++] = '0';
    out[n_out++] = '.';
    for (long z = 0; z < -n; z++) out[n_out++] = '0';
    memcpy(out + n_out, digits, k);
    n_out += k;
  } else {
    long e = n - 1;
    char ed[8];
    size_t ne = 0;
    out[n_out++] = digits[0];
    if (k > 1) {
      out[n_out++] = '.';
      memcpy(out + n_out, digits + 1, k - 1);
      n_out += k - 1;
    }
    out[n_out++] = 'e';
    out[n_out++] = e < 0 ? '-' : '+';
    if (e < 0) e = -e;
    do ed[ne++] = (char)('0' + e % 10);
    while ((e /= 10) != 0);
    while (ne > 0) out[n_out++] = ed[--ne];
  }
  return n_out;
}

static size_t i64_dec(int64_t v, char *out) {
  char tmp[24];
  size_t n = 0, k = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do tmp[n++] = (char)('0' + u % 10);
  while ((u /= 10) != 0);
  if (v < 0) out[k++] = '-';
  while (n > 0) out[k++] = tmp[--n];
  return k;
}

tl_gexpr sc_string_literal(sc *c, const char *s, size_t len) {
  uint8_t buf[256];
  size_t n = 0, pos = 0;
  tl_gexpr acc = TL_GEXPR_NONE;
  buf[n++] = '"';
  for (;;) {
    uint32_t cp;
    bool end = pos >= len;
    if (end || n + 6 > sizeof buf) {
      tl_gexpr part;
      if (end) buf[n++] = '"';
      part = tl_gb_literal(c->b, buf, n);
      if (acc == TL_GEXPR_NONE) {
        acc = part;
      } else {
        tl_gexpr v[2] = {acc, part};
        acc = tl_gb_seq(c->b, v, 2);
      }
      n = 0;
      if (end) return acc;
    }
    /* The JSON reader validated the UTF-8. */
    (void)tl_utf8_next((const uint8_t *)s, len, &pos, &cp);
    n += tl_json_char_canonical(cp, buf + n);
  }
}

bool sc_json_equal(const tl_json_value *a, const tl_json_value *b) {
  bool an = a->type == TL_JSON_INT || a->type == TL_JSON_FLOAT;
  bool bn = b->type == TL_JSON_INT || b->type == TL_JSON_FLOAT;
  if (an && bn) {
    if (a->type == TL_JSON_INT && b->type == TL_JSON_INT) return a->u.i == b->u.i;
    return (a->type == TL_JSON_INT ? (double)a->u.i : a->u.f) ==
           (b->type == TL_JSON_INT ? (double)b->u.i : b->u.f);
  }
  if (a->type != b->type) return false;
  switch (a->type) {
    case TL_JSON_NULL: return true;
    case TL_JSON_BOOL: return a->u.b == b->u.b;
    case TL_JSON_STRING:
      return a->u.str.len == b->u.str.len && memcmp(a->u.str.ptr, b->u.str.ptr, a->u.str.len) == 0;
    case TL_JSON_ARRAY:
      if (a->u.arr.n != b->u.arr.n) return false;
      for (size_t i = 0; i < a->u.arr.n; i++)
        if (!sc_json_equal(&a->u.arr.items[i], &b->u.arr.items[i])) return false;
      return true;
    case TL_JSON_OBJECT:
      if (a->u.obj.n != b->u.obj.n) return false;
      for (size_t i = 0; i < a->u.obj.n; i++) {
        const tl_json_member *m = &a->u.obj.members[i];
        const tl_json_value *o = tl_json_get(b, m->key, m->key_len);
        if (o == NULL || !sc_json_equal(&m->value, o)) return false;
      }
      return true;
    default: return false;
  }
}

tl_gexpr sc_value(sc *c, const tl_json_value *v) {
  char num[40];
  switch (v->type) {
    case TL_JSON_NULL: return sc_lit(c, "null");
    case TL_JSON_BOOL: return sc_lit(c, v->u.b ? "true" : "false");
    case TL_JSON_INT: return tl_gb_literal(c->b, (const uint8_t *)num, i64_dec(v->u.i, num));
    case TL_JSON_FLOAT: return tl_gb_literal(c->b, (const uint8_t *)num, sc_js_number(v->u.f, num));
    case TL_JSON_STRING: return sc_string_literal(c, v->u.str.ptr, v->u.str.len);
    default: break;
  }
  {
    bool obj = v->type == TL_JSON_OBJECT;
    size_t n = obj ? v->u.obj.n : v->u.arr.n;
    tl_gexpr items[3], acc = sc_lit(c, obj ? "{" : "[");
    items[0] = acc;
    items[1] = sc_ws(c);
    acc = tl_gb_seq(c->b, items, 2);
    for (size_t i = 0; i < n; i++) {
      tl_gexpr e;
      if (obj) {
        const tl_json_member *m = &v->u.obj.members[i];
        tl_gexpr kv[5] = {sc_string_literal(c, m->key, m->key_len), sc_ws(c), sc_lit(c, ":"),
                          sc_ws(c), sc_value(c, &m->value)};
        e = tl_gb_seq(c->b, kv, 5);
      } else {
        e = sc_value(c, &v->u.arr.items[i]);
      }
      items[0] = acc;
      items[1] = i > 0 ? tl_gb_seq(c->b, (tl_gexpr[]){sc_lit(c, ","), sc_ws(c), e}, 3) : e;
      items[2] = sc_ws(c);
      acc = tl_gb_seq(c->b, items, 3);
    }
    items[0] = acc;
    items[1] = sc_lit(c, obj ? "}" : "]");
    return tl_gb_seq(c->b, items, 2);
  }
}
