/* Python's formatting of JSON values (json.h, docs/json.md): repr(float),
 * json.dumps(x, ensure_ascii=False), str(x). Byte-for-byte rules are those
 * of CPython 3.11: Objects/floatobject.c + Python/pystrtod.c
 * (format_float_short, float_repr_style 'short'), Lib/json/encoder.py
 * (ESCAPE, separators), Objects/unicodeobject.c (unicode_repr). */
#include <string.h>

#include "json/json.h"
#include "json/json_internal.h"
#include "json/py_printable.h"
#include "utf8.h"

static const char hex_digits[] = "0123456789abcdef";

static void put(tl_json_out *o, const void *p, size_t n) {
  if (o->status != TL_OK) return;
  if (o->buf == NULL) { /* measuring */
    if (o->len > SIZE_MAX - n)
      o->status = TL_ERR_INTEGER_OVERFLOW;
    else
      o->len += n;
    return;
  }
  if (o->len > o->cap || n > o->cap - o->len) {
    o->status = TL_ERR_BOUNDS;
    return;
  }
  if (n > 0) memcpy(o->buf + o->len, p, n);
  o->len += n;
}

static void put_str(tl_json_out *o, const char *s) { put(o, s, strlen(s)); }

static void put_char(tl_json_out *o, char c) { put(o, &c, 1); }

static void put_i64(tl_json_out *o, int64_t v) {
  char buf[24];
  size_t n = sizeof buf;
  /* Magnitude as u64, so INT64_MIN needs no special case. */
  uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    buf[--n] = (char)('0' + m % 10);
    m /= 10;
  } while (m > 0);
  if (v < 0) buf[--n] = '-';
  put(o, buf + n, sizeof buf - n);
}

/* ------------------------------------------------------------------------ */
/* floats                                                                   */

static void put_digits(tl_json_out *o, const tl_dec *d, int from, int to) {
  char buf[32];
  while (from < to) {
    int k = 0;
    while (from < to && k < (int)sizeof buf)
      buf[k++] = (char)('0' + d->d[from++]);
    put(o, buf, (size_t)k);
  }
}

static void put_zeros(tl_json_out *o, int n) {
  static const char zeros[] = "0000000000000000";
  while (n > 0) {
    int k = n < 16 ? n : 16;
    put(o, zeros, (size_t)k);
    n -= k;
  }
}

/* The finite, non-zero part of repr: format_float_short with mode 0,
 * precision 0, Py_DTSF_ADD_DOT_0, exponent when decpt <= -4 or > 16. */
static void put_finite(tl_json_out *o, double v) {
  tl_dec d;
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  if (bits >> 63) put_char(o, '-');
  if ((bits << 1) == 0) {
    put_str(o, "0.0");
    return;
  }
  tl_dec_shortest(v, &d);
  int decpt = d.dp;
  if (decpt <= -4 || decpt > 16) {
    int e = decpt - 1;
    char eb[8];
    int k = sizeof eb;
    unsigned ue = (unsigned)(e < 0 ? -e : e);
    put_digits(o, &d, 0, 1);
    if (d.nd > 1) {
      put_char(o, '.');
      put_digits(o, &d, 1, d.nd);
    }
    do { /* at least two exponent digits */
      eb[--k] = (char)('0' + ue % 10);
      ue /= 10;
    } while (ue > 0 || k > (int)sizeof eb - 2);
    eb[--k] = e < 0 ? '-' : '+';
    eb[--k] = 'e';
    put(o, eb + k, sizeof eb - (size_t)k);
  } else if (decpt <= 0) {
    put_str(o, "0.");
    put_zeros(o, -decpt);
    put_digits(o, &d, 0, d.nd);
  } else if (decpt < d.nd) {
    put_digits(o, &d, 0, decpt);
    put_char(o, '.');
    put_digits(o, &d, decpt, d.nd);
  } else {
    put_digits(o, &d, 0, d.nd);
    put_zeros(o, decpt - d.nd);
    put_str(o, ".0");
  }
}

static bool is_nan(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return (b & 0x7FF0000000000000u) == 0x7FF0000000000000u &&
         (b & 0x000FFFFFFFFFFFFFu) != 0;
}

static bool is_inf(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return (b << 1) == 0xFFE0000000000000u;
}

void tl_py_float_repr(double v, tl_json_out *out) {
  if (is_nan(v))
    put_str(out, "nan"); /* repr(-nan) is 'nan' too */
  else if (is_inf(v))
    put_str(out, v < 0 ? "-inf" : "inf");
  else
    put_finite(out, v);
}

/* json.dumps: float.__repr__, except the non-finite ones (allow_nan). */
static void put_json_float(tl_json_out *o, double v) {
  if (is_nan(v))
    put_str(o, "NaN");
  else if (is_inf(v))
    put_str(o, v < 0 ? "-Infinity" : "Infinity");
  else
    put_finite(o, v);
}

/* ------------------------------------------------------------------------ */
/* strings                                                                  */

/* encoder.py ESCAPE_DCT with ensure_ascii=False: only '"', '\\' and the C0
 * controls are escaped; DEL, U+2028/2029 and all non-ASCII pass raw. */
static void put_json_string(tl_json_out *o, const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  size_t run = 0;
  put_char(o, '"');
  for (size_t i = 0; i < n; i++) {
    uint8_t c = p[i];
    const char *esc = NULL;
    char u[6];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    put(o, p + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        esc = "\\\"";
        break;
      case '\\':
        esc = "\\\\";
        break;
      case '\n':
        esc = "\\n";
        break;
      case '\r':
        esc = "\\r";
        break;
      case '\t':
        esc = "\\t";
        break;
      case '\b':
        esc = "\\b";
        break;
      case '\f':
        esc = "\\f";
        break;
      default:
        memcpy(u, "\\u00", 4);
        u[4] = hex_digits[c >> 4];
        u[5] = hex_digits[c & 15];
        put(o, u, 6);
        continue;
    }
    put_str(o, esc);
  }
  put(o, p + run, n - run);
  put_char(o, '"');
}

/* str.isprintable for one scalar value (Unicode 14.0, CPython 3.11). */
static bool py_isprintable(uint32_t cp) {
  size_t lo = 0, hi = sizeof tl_py_nonprintable / sizeof tl_py_nonprintable[0];
  if (cp < 0x80) return cp >= 0x20 && cp < 0x7F;
  while (lo < hi) { /* first range whose end is >= cp */
    size_t mid = lo + (hi - lo) / 2;
    if (tl_py_nonprintable[mid][1] < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return !(lo < sizeof tl_py_nonprintable / sizeof tl_py_nonprintable[0] &&
           tl_py_nonprintable[lo][0] <= cp);
}

static void put_hex_escape(tl_json_out *o, char kind, uint32_t cp, int width) {
  char b[10];
  b[0] = '\\';
  b[1] = kind;
  for (int i = 0; i < width; i++)
    b[2 + i] = hex_digits[(cp >> (4 * (width - 1 - i))) & 15];
  put(o, b, (size_t)(2 + width));
}

/* unicode_repr: single quotes unless the text has ' and no ". */
static void put_py_repr_string(tl_json_out *o, const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  bool squote = false, dquote = false;
  for (size_t i = 0; i < n; i++) { /* no memchr in the wasm libc */
    squote |= p[i] == '\'';
    dquote |= p[i] == '"';
  }
  char quote = squote && !dquote ? '"' : '\'';
  size_t pos = 0;
  put_char(o, quote);
  while (pos < n && o->status == TL_OK) {
    size_t start = pos;
    uint32_t cp;
    if (tl_utf8_next(p, n, &pos, &cp) != TL_OK) {
      o->status = TL_ERR_INVALID_UTF8;
      return;
    }
    if (cp == (uint32_t)quote || cp == '\\') {
      put_char(o, '\\');
      put_char(o, (char)cp);
    } else if (cp == '\t') {
      put_str(o, "\\t");
    } else if (cp == '\n') {
      put_str(o, "\\n");
    } else if (cp == '\r') {
      put_str(o, "\\r");
    } else if (cp < 0x20 || cp == 0x7F) {
      put_hex_escape(o, 'x', cp, 2);
    } else if (cp < 0x7F || py_isprintable(cp)) {
      put(o, p + start, pos - start);
    } else if (cp <= 0xFF) {
      put_hex_escape(o, 'x', cp, 2);
    } else if (cp <= 0xFFFF) {
      put_hex_escape(o, 'u', cp, 4);
    } else {
      put_hex_escape(o, 'U', cp, 8);
    }
  }
  put_char(o, quote);
}

/* ------------------------------------------------------------------------ */
/* values                                                                   */

typedef enum fmt_style { STYLE_JSON, STYLE_REPR } fmt_style;

static void put_value(tl_json_out *o, const tl_json_value *v, fmt_style st,
                      size_t depth) {
  if (o->status != TL_OK) return;
  if (v == NULL || depth > TL_PY_FORMAT_MAX_DEPTH) {
    o->status = TL_ERR_INVALID_ARGUMENT;
    return;
  }
  switch (v->type) {
    case TL_JSON_NULL:
      put_str(o, st == STYLE_JSON ? "null" : "None");
      return;
    case TL_JSON_BOOL:
      if (st == STYLE_JSON)
        put_str(o, v->u.b ? "true" : "false");
      else
        put_str(o, v->u.b ? "True" : "False");
      return;
    case TL_JSON_INT:
      put_i64(o, v->u.i);
      return;
    case TL_JSON_FLOAT:
      if (st == STYLE_JSON)
        put_json_float(o, v->u.f);
      else
        tl_py_float_repr(v->u.f, o);
      return;
    case TL_JSON_STRING:
      if (v->u.str.ptr == NULL && v->u.str.len > 0) break;
      if (st == STYLE_JSON)
        put_json_string(o, v->u.str.ptr, v->u.str.len);
      else
        put_py_repr_string(o, v->u.str.ptr, v->u.str.len);
      return;
    case TL_JSON_ARRAY:
      if (v->u.arr.items == NULL && v->u.arr.n > 0) break;
      put_char(o, '[');
      for (size_t i = 0; i < v->u.arr.n; i++) {
        if (i > 0) put_str(o, ", ");
        put_value(o, &v->u.arr.items[i], st, depth + 1);
      }
      put_char(o, ']');
      return;
    case TL_JSON_OBJECT:
      if (v->u.obj.members == NULL && v->u.obj.n > 0) break;
      put_char(o, '{');
      for (size_t i = 0; i < v->u.obj.n; i++) {
        const tl_json_member *m = &v->u.obj.members[i];
        if (i > 0) put_str(o, ", ");
        if (m->key == NULL && m->key_len > 0) {
          o->status = TL_ERR_INVALID_ARGUMENT;
          return;
        }
        if (st == STYLE_JSON)
          put_json_string(o, m->key, m->key_len);
        else
          put_py_repr_string(o, m->key, m->key_len);
        put_str(o, ": ");
        put_value(o, &m->value, st, depth + 1);
      }
      put_char(o, '}');
      return;
  }
  o->status = TL_ERR_INVALID_ARGUMENT;
}

void tl_py_json_dumps(const tl_json_value *v, tl_json_out *out) {
  put_value(out, v, STYLE_JSON, 0);
}

void tl_py_str(const tl_json_value *v, tl_json_out *out) {
  if (v != NULL && v->type == TL_JSON_STRING) {
    if (v->u.str.ptr == NULL && v->u.str.len > 0) {
      if (out->status == TL_OK) out->status = TL_ERR_INVALID_ARGUMENT;
      return;
    }
    put(out, v->u.str.ptr, v->u.str.len); /* str(s) is s itself */
    return;
  }
  put_value(out, v, STYLE_REPR, 0);
}

void tl_py_repr(const tl_json_value *v, tl_json_out *out) {
  put_value(out, v, STYLE_REPR, 0);
}
