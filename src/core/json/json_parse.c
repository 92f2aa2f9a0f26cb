/* The strict JSON reader (json.h, docs/json.md).
 *
 * Three linear scans of the same explicit-stack walker, no recursion:
 *   1. validate everything (syntax, escapes, numbers, limits) and count
 *      values, containers, children and decoded string bytes; nothing is
 *      allocated for the tree yet, only a bit per nesting level;
 *   2. count each container's children (in opening order);
 *   3. build: every container's children array is carved at its opening
 *      bracket from one block sized in scan 1, strings from another.
 * Scratch (the per-level stack, the child counts) lives above the tree and
 * is released at the end, so the arena keeps exactly the tree. On any error
 * the arena is rewound to where it was. */
#include <string.h>

#include "checked.h"
#include "json/json.h"
#include "json/json_internal.h"
#include "utf8.h"

tl_json_limits tl_json_limits_default(void) {
  tl_json_limits l;
  l.max_depth = 128;
  l.max_values = (size_t)1 << 20;
  return l;
}

enum { SCAN_VALIDATE = 1, SCAN_COUNT = 2, SCAN_BUILD = 3 };

typedef struct frame {
  tl_json_value *node; /* scan 3: the container being filled */
  size_t fill;         /* scan 3: children written so far */
  size_t ci;           /* scans 2-3: index of the container in opening order */
  size_t open_off;     /* offset of its opening bracket */
} frame;

typedef struct parser {
  const uint8_t *s;
  size_t len;
  tl_json_limits lim;
  int scan;
  tl_arena *arena;
  /* failure */
  tl_status st;
  size_t err_off;
  const char *reason;
  /* one bit per nesting level: 1 = object */
  uint8_t *kinds;
  size_t kinds_cap; /* levels */
  /* scan 1 totals */
  size_t n_values, n_containers, n_items, n_members, str_bytes, max_depth;
  /* scans 2-3 */
  frame *frames;
  size_t *counts;
  size_t next_ci;
  /* scan 3 */
  uint8_t *nodes, *nodes_end;
  uint8_t *strs, *strs_end;
  tl_json_value *root;
  const char *key;
  size_t key_len;
} parser;

static bool fail(parser *p, tl_status st, size_t off, const char *reason) {
  if (p->st == TL_OK) {
    p->st = st;
    p->err_off = off;
    p->reason = reason;
  }
  return false;
}

static size_t skip_ws(const parser *p, size_t pos) {
  while (pos < p->len) {
    uint8_t c = p->s[pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    pos++;
  }
  return pos;
}

static int hex_val(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool hex4(const parser *p, size_t pos, uint32_t *out) {
  uint32_t v = 0;
  if (p->len - pos < 4) return false;
  for (int i = 0; i < 4; i++) {
    int h = hex_val(p->s[pos + (size_t)i]);
    if (h < 0) return false;
    v = v << 4 | (uint32_t)h;
  }
  *out = v;
  return true;
}

/* A string starting at its opening quote *pos. Decodes into dst when not
 * NULL (exactly *out_len bytes, as measured by an earlier call). */
static bool scan_string(parser *p, size_t *pos, uint8_t *dst, size_t *out_len) {
  size_t i = *pos + 1, n = 0;
  for (;;) {
    size_t run = i;
    while (i < p->len && p->s[i] != '"' && p->s[i] != '\\' && p->s[i] >= 0x20)
      i++;
    if (dst != NULL) memcpy(dst + n, p->s + run, i - run);
    n += i - run;
    if (i >= p->len)
      return fail(p, TL_ERR_INVALID_ARGUMENT, p->len, "unterminated string");
    if (p->s[i] == '"') break;
    if (p->s[i] < 0x20)
      return fail(p, TL_ERR_INVALID_ARGUMENT, i, "control character in string");
    /* an escape */
    if (i + 1 >= p->len)
      return fail(p, TL_ERR_INVALID_ARGUMENT, p->len, "unterminated string");
    {
      uint8_t e = p->s[i + 1], simple = 0;
      switch (e) {
        case '"':
          simple = '"';
          break;
        case '\\':
          simple = '\\';
          break;
        case '/':
          simple = '/';
          break;
        case 'b':
          simple = '\b';
          break;
        case 'f':
          simple = '\f';
          break;
        case 'n':
          simple = '\n';
          break;
        case 'r':
          simple = '\r';
          break;
        case 't':
          simple = '\t';
          break;
        case 'u':
          break;
        default:
          return fail(p, TL_ERR_INVALID_ARGUMENT, i, "invalid escape");
      }
      if (simple != 0) {
        if (dst != NULL) dst[n] = simple;
        n++;
        i += 2;
        continue;
      }
    }
    {
      uint32_t cp, lo;
      uint8_t enc[4];
      size_t k;
      if (!hex4(p, i + 2, &cp))
        return fail(p, TL_ERR_INVALID_ARGUMENT, i, "invalid \\u escape");
      if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(p, TL_ERR_INVALID_ARGUMENT, i, "lone surrogate escape");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (p->len - (i + 6) < 2 || p->s[i + 6] != '\\' || p->s[i + 7] != 'u' ||
            !hex4(p, i + 8, &lo) || lo < 0xDC00 || lo > 0xDFFF)
          return fail(p, TL_ERR_INVALID_ARGUMENT, i, "lone surrogate escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        i += 6;
      }
      i += 6;
      k = tl_utf8_encode(cp, enc);
      if (dst != NULL) memcpy(dst + n, enc, k);
      n += k;
    }
  }
  *pos = i + 1;
  *out_len = n;
  return true;
}

static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* A number at *pos: grammar, then (when v is not NULL) its value. */
static bool scan_number(parser *p, size_t *pos, tl_json_value *v) {
  size_t start = *pos, i = start;
  bool neg = false, is_float = false;
  if (p->s[i] == '-') {
    neg = true;
    i++;
  }
  if (i >= p->len || !is_digit(p->s[i]))
    return fail(p, TL_ERR_INVALID_ARGUMENT, i, "invalid number");
  if (p->s[i] == '0') {
    i++;
    if (i < p->len && is_digit(p->s[i]))
      return fail(p, TL_ERR_INVALID_ARGUMENT, start, "leading zero");
  } else {
    while (i < p->len && is_digit(p->s[i])) i++;
  }
  size_t int_end = i, frac_start = i, frac_end = i;
  if (i < p->len && p->s[i] == '.') {
    is_float = true;
    i++;
    frac_start = i;
    if (i >= p->len || !is_digit(p->s[i]))
      return fail(p, TL_ERR_INVALID_ARGUMENT, i, "digit expected after '.'");
    while (i < p->len && is_digit(p->s[i])) i++;
    frac_end = i;
  }
  int64_t exp10 = 0;
  if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
    bool eneg = false;
    is_float = true;
    i++;
    if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
      eneg = p->s[i++] == '-';
    if (i >= p->len || !is_digit(p->s[i]))
      return fail(p, TL_ERR_INVALID_ARGUMENT, i, "digit expected in exponent");
    while (i < p->len && is_digit(p->s[i])) {
      /* Saturate: beyond 10^9 the result is 0 or out of range anyway. */
      if (exp10 < 1000000000) exp10 = exp10 * 10 + (p->s[i] - '0');
      i++;
    }
    if (eneg) exp10 = -exp10;
  }
  *pos = i;
  if (v == NULL) return true;
  size_t d0 = neg ? start + 1 : start;
  if (!is_float) {
    uint64_t m = 0, limit = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
    for (size_t k = d0; k < int_end; k++) {
      uint64_t dig = (uint64_t)(p->s[k] - '0');
      if (m > (limit - dig) / 10)
        return fail(p, TL_ERR_INVALID_ARGUMENT, start,
                    "integer out of int64 range");
      m = m * 10 + dig;
    }
    v->type = TL_JSON_INT;
    v->u.i = neg ? (int64_t)(0 - m) : (int64_t)m;
    if (neg && m == (uint64_t)1 << 63) v->u.i = INT64_MIN;
    return true;
  }
  /* Float: significant digits into an exact decimal. */
  tl_dec d;
  int64_t dp = 0;
  uint64_t w = 0;
  d.nd = 0;
  d.trunc = false;
  for (size_t k = d0; k < frac_end; k++) {
    uint8_t c = p->s[k];
    bool in_frac = k >= frac_start;
    if (k == int_end) continue; /* the '.' */
    if (c == '0' && d.nd == 0) {
      if (in_frac) dp--;
      continue;
    }
    if (d.nd < TL_DEC_CAP) {
      d.d[d.nd++] = (uint8_t)(c - '0');
      if (d.nd <= 19) w = w * 10 + (uint64_t)(c - '0');
    } else if (c != '0') {
      d.trunc = true;
    }
    if (!in_frac) dp++;
  }
  dp += exp10;
  double f;
  int nd_sig = d.nd, nd_w = d.nd < 19 ? d.nd : 19; /* w = d[0..nd_w) */
  while (nd_sig > 0 && d.d[nd_sig - 1] == 0) nd_sig--;
  if (nd_sig == 0) {
    f = 0.0;
    if (neg) f = -f;
  } else if (nd_sig <= 19 && !d.trunc && dp - nd_w >= -22 && dp - nd_w <= 22 &&
             tl_dec_fast_path(w, (int)(dp - nd_w), neg, &f)) {
    /* exact single rounding */
  } else {
    if (dp > 1000) dp = 1000;
    if (dp < -1000) dp = -1000;
    d.dp = (int)dp;
    if (tl_dec_to_double(&d, neg, &f) != TL_DEC_FINITE)
      return fail(p, TL_ERR_INVALID_ARGUMENT, start,
                  "number out of double range");
  }
  v->type = TL_JSON_FLOAT;
  v->u.f = f;
  return true;
}

static bool is_obj_at(const parser *p, size_t level) {
  return (p->kinds[level / 8] >> (level % 8)) & 1;
}

/* Carves n bytes from a block sized in scan 1 (never fails then). */
static void *carve(uint8_t **cur, uint8_t *end, size_t n) {
  void *r = *cur;
  if ((size_t)(end - *cur) < n) return NULL;
  *cur += n;
  return r;
}

/* Where the next value goes (scan 3), at nesting level depth. */
static tl_json_value *slot(parser *p, size_t depth) {
  frame *f;
  if (depth == 0) return p->root;
  f = &p->frames[depth - 1];
  if (f->node->type == TL_JSON_ARRAY) return &f->node->u.arr.items[f->fill++];
  tl_json_member *m = &f->node->u.obj.members[f->fill++];
  m->key = p->key;
  m->key_len = p->key_len;
  return &m->value;
}

/* Scan 1: one more value; scans 2-3: record it. Returns the slot (scan 3). */
static bool on_value(parser *p, size_t depth, size_t off, tl_json_value **out) {
  *out = NULL;
  if (p->scan == SCAN_VALIDATE) {
    if (p->n_values >= p->lim.max_values)
      return fail(p, TL_ERR_INVALID_ARGUMENT, off, "too many values");
    p->n_values++;
    if (depth > 0) {
      if (is_obj_at(p, depth - 1))
        p->n_members++;
      else
        p->n_items++;
    }
  } else if (p->scan == SCAN_COUNT) {
    if (depth > 0) p->counts[p->frames[depth - 1].ci]++;
  } else {
    *out = slot(p, depth);
  }
  return true;
}

static bool keys_equal(const tl_json_member *a, const tl_json_member *b) {
  return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
}

/* Key order for the duplicate check: length, bytes, then position. */
static bool member_less(const tl_json_member *m, size_t a, size_t b) {
  if (m[a].key_len != m[b].key_len) return m[a].key_len < m[b].key_len;
  int c = memcmp(m[a].key, m[b].key, m[a].key_len);
  if (c != 0) return c < 0;
  return a < b;
}

static void sift_down(const tl_json_member *m, size_t *ix, size_t root,
                      size_t n) {
  for (;;) {
    size_t child = 2 * root + 1, big = root;
    if (child < n && member_less(m, ix[big], ix[child])) big = child;
    if (child + 1 < n && member_less(m, ix[big], ix[child + 1]))
      big = child + 1;
    if (big == root) return;
    size_t t = ix[root];
    ix[root] = ix[big];
    ix[big] = t;
    root = big;
  }
}

/* Skips one valid value (the document passed scan 1). */
static size_t skip_value(const parser *p, size_t pos) {
  size_t depth = 0;
  do {
    uint8_t c;
    pos = skip_ws(p, pos);
    c = p->s[pos];
    if (c == '"') {
      pos++;
      while (p->s[pos] != '"') pos += p->s[pos] == '\\' ? 2 : 1;
      pos++;
    } else if (c == '[' || c == '{') {
      depth++;
      pos++;
    } else if (c == ']' || c == '}') {
      depth--;
      pos++;
    } else {
      pos++;
      while (pos < p->len && p->s[pos] != ',' && p->s[pos] != ']' &&
             p->s[pos] != '}' && p->s[pos] != ' ' && p->s[pos] != '\t' &&
             p->s[pos] != '\n' && p->s[pos] != '\r' && p->s[pos] != ':')
        pos++;
    }
    if (depth > 0) {
      pos = skip_ws(p, pos);
      if (p->s[pos] == ',' || p->s[pos] == ':') pos++;
    }
  } while (depth > 0);
  return pos;
}

/* Offset of the opening quote of member j of the object at open_off. */
static size_t member_key_offset(const parser *p, size_t open_off, size_t j) {
  size_t pos = open_off + 1;
  for (size_t k = 0;; k++) {
    pos = skip_ws(p, pos);
    if (k == j) return pos;
    pos = skip_value(p, pos);  /* the key */
    pos = skip_ws(p, pos) + 1; /* ':' */
    pos = skip_value(p, pos);
    pos = skip_ws(p, pos) + 1; /* ',' */
  }
}

/* Scan 3, object closed: refuse duplicate keys (json.loads keeps the last
 * one silently; a template would see a different object than the
 * publisher wrote). Reports the second occurrence that comes first. */
static bool check_duplicates(parser *p, const frame *f) {
  const tl_json_member *m = f->node->u.obj.members;
  size_t n = f->node->u.obj.n, dup = SIZE_MAX;
  if (n <= 16) {
    for (size_t j = 1; j < n && dup == SIZE_MAX; j++)
      for (size_t i = 0; i < j; i++)
        if (keys_equal(&m[i], &m[j])) {
          dup = j;
          break;
        }
  } else {
    tl_arena_mark mark = tl_arena_mark_now(p->arena);
    size_t *ix;
    tl_status st = tl_arena_alloc_array(p->arena, n, sizeof *ix,
                                        _Alignof(size_t), (void **)&ix);
    if (st != TL_OK) return fail(p, st, f->open_off, "out of memory");
    for (size_t i = 0; i < n; i++) ix[i] = i;
    for (size_t i = n / 2; i-- > 0;) sift_down(m, ix, i, n);
    for (size_t end = n; end-- > 1;) {
      size_t t = ix[0];
      ix[0] = ix[end];
      ix[end] = t;
      sift_down(m, ix, 0, end);
    }
    for (size_t i = 1; i < n; i++)
      if (keys_equal(&m[ix[i - 1]], &m[ix[i]]) && ix[i] < dup) dup = ix[i];
    tl_arena_rewind(p->arena, mark);
  }
  if (dup == SIZE_MAX) return true;
  return fail(p, TL_ERR_INVALID_ARGUMENT,
              member_key_offset(p, f->open_off, dup), "duplicate key");
}

static bool open_container(parser *p, size_t depth, size_t off, bool is_obj,
                           tl_json_value *v) {
  if (depth >= p->lim.max_depth)
    return fail(p, TL_ERR_INVALID_ARGUMENT, off, "nesting too deep");
  if (depth >= p->kinds_cap)
    return fail(p, TL_ERR_INTERNAL_INVARIANT, off, "nesting stack");
  if (is_obj)
    p->kinds[depth / 8] |= (uint8_t)(1u << (depth % 8));
  else
    p->kinds[depth / 8] &= (uint8_t) ~(1u << (depth % 8));
  if (p->scan == SCAN_VALIDATE) {
    p->n_containers++;
    if (depth + 1 > p->max_depth) p->max_depth = depth + 1;
    return true;
  }
  frame *f = &p->frames[depth];
  f->open_off = off;
  f->fill = 0;
  f->ci = p->next_ci++;
  if (p->scan == SCAN_COUNT) {
    p->counts[f->ci] = 0;
    return true;
  }
  size_t n = p->counts[f->ci];
  f->node = v;
  if (is_obj) {
    v->type = TL_JSON_OBJECT;
    v->u.obj.n = n;
    v->u.obj.members =
        carve(&p->nodes, p->nodes_end, n * sizeof(tl_json_member));
    if (v->u.obj.members == NULL)
      return fail(p, TL_ERR_INTERNAL_INVARIANT, off, "node block");
  } else {
    v->type = TL_JSON_ARRAY;
    v->u.arr.n = n;
    v->u.arr.items = carve(&p->nodes, p->nodes_end, n * sizeof(tl_json_value));
    if (v->u.arr.items == NULL)
      return fail(p, TL_ERR_INTERNAL_INVARIANT, off, "node block");
  }
  return true;
}

static bool close_container(parser *p, size_t depth) {
  if (p->scan == SCAN_BUILD && is_obj_at(p, depth))
    return check_duplicates(p, &p->frames[depth]);
  return true;
}

/* A string at *pos: measured (scan 1), skipped (scan 2), decoded (scan 3). */
static bool take_string(parser *p, size_t *pos, const char **out,
                        size_t *out_len) {
  size_t n = 0, start = *pos;
  if (!scan_string(p, pos, NULL, &n)) return false;
  *out = NULL;
  *out_len = n;
  if (p->scan == SCAN_VALIDATE) {
    if (tl_add_size(p->str_bytes, n, &p->str_bytes) != TL_OK)
      return fail(p, TL_ERR_INTEGER_OVERFLOW, start, "too large");
  } else if (p->scan == SCAN_BUILD) {
    uint8_t *dst = carve(&p->strs, p->strs_end, n);
    if (dst == NULL)
      return fail(p, TL_ERR_INTERNAL_INVARIANT, start, "string block");
    *pos = start;
    scan_string(p, pos, dst, &n);
    *out = (const char *)dst;
  }
  return true;
}

/* After '{' or ',' in an object: "key" ':' */
static bool member_key(parser *p, size_t *pos) {
  *pos = skip_ws(p, *pos);
  if (*pos >= p->len)
    return fail(p, TL_ERR_INVALID_ARGUMENT, *pos, "unexpected end of input");
  if (p->s[*pos] != '"')
    return fail(p, TL_ERR_INVALID_ARGUMENT, *pos, "string key expected");
  if (!take_string(p, pos, &p->key, &p->key_len)) return false;
  *pos = skip_ws(p, *pos);
  if (*pos >= p->len)
    return fail(p, TL_ERR_INVALID_ARGUMENT, *pos, "unexpected end of input");
  if (p->s[*pos] != ':')
    return fail(p, TL_ERR_INVALID_ARGUMENT, *pos, "':' expected");
  (*pos)++;
  return true;
}

static bool match_word(const parser *p, size_t pos, const char *w) {
  size_t n = strlen(w);
  return p->len - pos >= n && memcmp(p->s + pos, w, n) == 0;
}

static bool walk(parser *p) {
  size_t pos = 0, depth = 0;
  p->next_ci = 0;
  for (;;) {
    /* A value. */
    tl_json_value *v;
    pos = skip_ws(p, pos);
    if (pos >= p->len)
      return fail(p, TL_ERR_INVALID_ARGUMENT, pos, "unexpected end of input");
    uint8_t c = p->s[pos];
    size_t off = pos;
    if (!on_value(p, depth, off, &v)) return false;
    if (c == '[' || c == '{') {
      bool is_obj = c == '{';
      if (!open_container(p, depth, off, is_obj, v)) return false;
      depth++;
      pos = skip_ws(p, pos + 1);
      if (pos < p->len && p->s[pos] == (is_obj ? '}' : ']')) {
        pos++;
        depth--;
        if (!close_container(p, depth)) return false;
      } else {
        if (is_obj && !member_key(p, &pos)) return false;
        continue;
      }
    } else if (c == '"') {
      const char *s;
      size_t n;
      if (!take_string(p, &pos, &s, &n)) return false;
      if (v != NULL) {
        v->type = TL_JSON_STRING;
        v->u.str.ptr = s;
        v->u.str.len = n;
      }
    } else if (c == '-' || is_digit(c)) {
      if (!scan_number(p, &pos,
                       p->scan == SCAN_COUNT ? NULL
                       : v                   ? v
                                             : &(tl_json_value){0}))
        return false;
    } else if (match_word(p, pos, "true") || match_word(p, pos, "false")) {
      bool b = c == 't';
      pos += b ? 4 : 5;
      if (v != NULL) {
        v->type = TL_JSON_BOOL;
        v->u.b = b;
      }
    } else if (match_word(p, pos, "null")) {
      pos += 4;
      if (v != NULL) v->type = TL_JSON_NULL;
    } else {
      return fail(p, TL_ERR_INVALID_ARGUMENT, pos, "unexpected character");
    }
    /* After a value: ',' continues, a bracket closes, or the end. */
    for (;;) {
      pos = skip_ws(p, pos);
      if (depth == 0) {
        if (pos != p->len)
          return fail(p, TL_ERR_INVALID_ARGUMENT, pos,
                      "trailing characters after the document");
        return true;
      }
      bool is_obj = is_obj_at(p, depth - 1);
      if (pos >= p->len)
        return fail(p, TL_ERR_INVALID_ARGUMENT, pos, "unexpected end of input");
      if (p->s[pos] == ',') {
        pos++;
        if (is_obj && !member_key(p, &pos)) return false;
        if (!is_obj) {
          size_t q = skip_ws(p, pos);
          if (q < p->len && p->s[q] == ']')
            return fail(p, TL_ERR_INVALID_ARGUMENT, q, "trailing comma");
        }
        break;
      }
      if (p->s[pos] == (is_obj ? '}' : ']')) {
        pos++;
        depth--;
        if (!close_container(p, depth)) return false;
        continue;
      }
      return fail(p, TL_ERR_INVALID_ARGUMENT, pos,
                  is_obj ? "',' or '}' expected" : "',' or ']' expected");
    }
  }
}

static void locate(const uint8_t *s, size_t off, tl_json_error *err) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < off; i++) {
    if (s[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  err->line = line;
  err->column = col;
}

static tl_status alloc_kinds(parser *p, size_t levels) {
  size_t bytes = levels / 8 + 1;
  p->kinds_cap = levels;
  return tl_arena_alloc(p->arena, bytes, 1, (void **)&p->kinds);
}

tl_status tl_json_parse(const uint8_t *text, size_t len,
                        const tl_json_limits *limits, tl_arena *arena,
                        tl_json_value **out, tl_json_error *err) {
  parser p;
  tl_json_error scratch_err;
  tl_arena_mark mark0;
  tl_status st;
  size_t bad = 0, nodes_bytes = 0, t1, t2;
  if (err == NULL) err = &scratch_err;
  err->offset = 0;
  err->line = 1;
  err->column = 1;
  err->reason = "ok";
  if (out != NULL) *out = NULL;
  if ((text == NULL && len > 0) || arena == NULL || out == NULL) {
    err->reason = "invalid argument";
    return TL_ERR_INVALID_ARGUMENT;
  }
  st = tl_utf8_validate(text, len, &bad);
  if (st != TL_OK) {
    err->offset = bad;
    err->reason = "invalid UTF-8";
    locate(text, bad, err);
    return st;
  }
  memset(&p, 0, sizeof p);
  p.s = text;
  p.len = len;
  p.lim = limits != NULL ? *limits : tl_json_limits_default();
  p.arena = arena;
  p.st = TL_OK;
  mark0 = tl_arena_mark_now(arena);

  /* Scan 1: validate and count. Depth cannot exceed len. */
  p.scan = SCAN_VALIDATE;
  st = alloc_kinds(&p, p.lim.max_depth < len ? p.lim.max_depth : len);
  if (st != TL_OK) {
    fail(&p, st, 0, "out of memory");
    goto done;
  }
  if (!walk(&p)) goto done;
  tl_arena_rewind(arena, mark0);

  /* The tree's two blocks, then scratch above them. */
  if (tl_mul_size(p.n_items, sizeof(tl_json_value), &t1) != TL_OK ||
      tl_mul_size(p.n_members, sizeof(tl_json_member), &t2) != TL_OK ||
      tl_add_size(t1, t2, &nodes_bytes) != TL_OK ||
      tl_add_size(nodes_bytes, sizeof(tl_json_value), &nodes_bytes) != TL_OK) {
    fail(&p, TL_ERR_INTEGER_OVERFLOW, 0, "document too large");
    goto done;
  }
  st = tl_arena_alloc(arena, nodes_bytes, _Alignof(tl_json_member),
                      (void **)&p.nodes);
  if (st == TL_OK) {
    p.nodes_end = p.nodes + nodes_bytes;
    st = tl_arena_alloc(arena, p.str_bytes, 1, (void **)&p.strs);
  }
  if (st != TL_OK) {
    fail(&p, st, 0, "out of memory");
    goto done;
  }
  p.strs_end = p.strs + p.str_bytes;
  tl_arena_mark mark1 = tl_arena_mark_now(arena);
  p.root = carve(&p.nodes, p.nodes_end, sizeof(tl_json_value));
  st = alloc_kinds(&p, p.max_depth);
  if (st == TL_OK)
    st = tl_arena_alloc_array(arena, p.max_depth + 1, sizeof(frame),
                              _Alignof(frame), (void **)&p.frames);
  if (st == TL_OK)
    st = tl_arena_alloc_array(arena, p.n_containers + 1, sizeof(size_t),
                              _Alignof(size_t), (void **)&p.counts);
  if (st != TL_OK) {
    fail(&p, st, 0, "out of memory");
    goto done;
  }
  p.scan = SCAN_COUNT;
  if (!walk(&p)) goto done;
  p.scan = SCAN_BUILD;
  if (!walk(&p)) goto done;
  tl_arena_rewind(arena, mark1);
  *out = p.root;
  return TL_OK;

done:
  tl_arena_rewind(arena, mark0);
  err->offset = p.err_off;
  err->reason = p.reason;
  locate(text, p.err_off, err);
  return p.st != TL_OK ? p.st : TL_ERR_INTERNAL_INVARIANT;
}

const tl_json_value *tl_json_get(const tl_json_value *obj, const char *key,
                                 size_t key_len) {
  if (obj == NULL || obj->type != TL_JSON_OBJECT || (key == NULL && key_len))
    return NULL;
  for (size_t i = 0; i < obj->u.obj.n; i++) {
    const tl_json_member *m = &obj->u.obj.members[i];
    if (m->key_len == key_len &&
        (key_len == 0 || memcmp(m->key, key, key_len) == 0))
      return &m->value;
  }
  return NULL;
}
