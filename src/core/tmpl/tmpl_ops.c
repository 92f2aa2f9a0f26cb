/* Filters, tests and str/dict methods with Python's and Jinja2's semantics
 * (docs/template.md §Filters, §Tests, §Methods). Strings are UTF-8; Python
 * counts and indexes code points, so lengths and positions do too. */
#include <string.h>

#include "checked.h"
#include "tmpl/tmpl_val.h"
#include "utf8.h"

size_t tmpl_cp_count(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
  return k;
}

static tl_status type_err(rctx *r, const char *a, const val *v, const char *c) {
  const char *t = tmpl_type_name(v);
  return tmpl_fail(r, TL_TMPL_ERR_TYPE, a, t, strlen(t), c);
}

/* str.isspace() for one code point */
static bool py_isspace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
         cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static uint32_t cp_at(const char *s, size_t n, size_t pos, size_t *next) {
  size_t p = pos;
  uint32_t cp = 0;
  if (tl_utf8_next((const uint8_t *)s, n, &p, &cp) != TL_OK) {
    *next = pos + 1;
    return 0xFFFD;
  }
  *next = p;
  return cp;
}

static size_t cp_start_before(const char *s, size_t end) {
  size_t st = end - 1;
  while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
  return st;
}

static bool in_set(uint32_t cp, const val *chars) {
  if (chars == NULL) return py_isspace(cp);
  for (size_t i = 0; i < chars->u.s.n;) {
    size_t nx;
    if (cp_at(chars->u.s.p, chars->u.s.n, i, &nx) == cp) return true;
    i = nx;
  }
  return false;
}

/* str.strip/lstrip/rstrip(chars) ; which: 1 left, 2 right, 3 both */
static tl_status do_strip(rctx *r, const char *p, size_t n, const val *chars,
                          int which, val *out) {
  const val *set = NULL;
  if (chars != NULL && chars->kind != V_UNDEF && chars->kind != V_NONE) {
    if (chars->kind != V_STR)
      return type_err(r, "strip arg must be None or str, not '", chars, "'");
    set = chars;
  }
  tl_status st = tmpl_step(r, 1 + n / 64);
  if (st != TL_OK) return st;
  size_t a = 0, b = n;
  if (which & 1)
    while (a < b) {
      size_t nx;
      if (!in_set(cp_at(p, n, a, &nx), set)) break;
      a = nx;
    }
  if (which & 2)
    while (b > a) {
      size_t s0 = cp_start_before(p, b), nx;
      if (!in_set(cp_at(p, n, s0, &nx), set)) break;
      b = s0;
    }
  *out = tmpl_v_str(p + a, b - a);
  return TL_OK;
}

static const char *find_sub(const char *h, size_t hn, const char *nd,
                            size_t nn) {
  if (nn == 0) return h;
  if (nn > hn) return NULL;
  for (size_t i = 0; i + nn <= hn; i++)
    if (h[i] == nd[0] && memcmp(h + i, nd, nn) == 0) return h + i;
  return NULL;
}

static tl_status list_of(rctx *r, val *items, size_t n, val *out) {
  return tmpl_make_list(r, items, n, false, out);
}

static tl_status do_split(rctx *r, const char *p, size_t n, const val *sep,
                          const val *maxsplit, val *out) {
  int64_t maxc = -1;
  tl_status st;
  if (maxsplit->kind != V_UNDEF) {
    if (maxsplit->kind != V_INT && maxsplit->kind != V_BOOL)
      return type_err(r, "'", maxsplit,
                      "' object cannot be interpreted as an integer");
    maxc = maxsplit->kind == V_BOOL ? maxsplit->u.b : maxsplit->u.i;
  }
  if (maxc < 0) maxc = INT64_MAX;
  if ((st = tmpl_step(r, 1 + n / 16)) != TL_OK) return st;
  /* at most n + 1 pieces */
  val *items;
  if ((st = tmpl_alloc(r, (n + 1) * sizeof *items, (void **)&items)) != TL_OK)
    return st;
  size_t cnt = 0;
  if (sep->kind == V_UNDEF || sep->kind == V_NONE) {
    size_t i = 0;
    while (maxc-- > 0) {
      size_t nx;
      while (i < n && py_isspace(cp_at(p, n, i, &nx))) i = nx;
      if (i == n) break;
      size_t j = i;
      cp_at(p, n, i, &nx);
      i = nx;
      while (i < n && !py_isspace(cp_at(p, n, i, &nx))) i = nx;
      items[cnt++] = tmpl_v_str(p + j, i - j);
    }
    if (i < n) {
      size_t nx;
      while (i < n && py_isspace(cp_at(p, n, i, &nx))) i = nx;
      if (i != n) items[cnt++] = tmpl_v_str(p + i, n - i);
    }
    return list_of(r, items, cnt, out);
  }
  if (sep->kind != V_STR)
    return type_err(r, "must be str or None, not '", sep, "'");
  if (sep->u.s.n == 0)
    return tmpl_fail(r, TL_TMPL_ERR_TYPE, "empty separator", NULL, 0, NULL);
  size_t i = 0;
  while (maxc > 0) {
    const char *f = find_sub(p + i, n - i, sep->u.s.p, sep->u.s.n);
    if (f == NULL) break;
    size_t at = (size_t)(f - p);
    items[cnt++] = tmpl_v_str(p + i, at - i);
    i = at + sep->u.s.n;
    maxc--;
  }
  items[cnt++] = tmpl_v_str(p + i, n - i);
  return list_of(r, items, cnt, out);
}

static tl_status do_replace(rctx *r, const char *p, size_t n, const val *old,
                            const val *nw, const val *count, val *out) {
  if (old->kind != V_STR || nw->kind != V_STR)
    return type_err(r, "replace() arguments must be str, not '",
                    old->kind != V_STR ? old : nw, "'");
  int64_t maxc = -1;
  if (count->kind == V_INT)
    maxc = count->u.i;
  else if (count->kind == V_BOOL)
    maxc = count->u.b;
  else if (count->kind != V_UNDEF && count->kind != V_NONE)
    return type_err(r, "'", count,
                    "' object cannot be interpreted as an integer");
  if (maxc < 0) maxc = INT64_MAX;
  /* worst case size: every position replaced */
  size_t slots = n + 1, cap, tmp;
  tl_status st;
  if (tl_mul_size(slots, nw->u.s.n, &tmp) != TL_OK ||
      tl_add_size(tmp, n + 1, &cap) != TL_OK)
    return tmpl_fail(r, TL_TMPL_ERR_MEMORY, "string too long", NULL, 0, NULL);
  char *buf;
  if ((st = tmpl_step(r, 1 + cap / 64)) != TL_OK ||
      (st = tmpl_alloc(r, cap, (void **)&buf)) != TL_OK)
    return st;
  size_t len = 0, i = 0;
  if (old->u.s.n == 0) {
    while (i <= n) {
      if (maxc > 0) {
        memcpy(buf + len, nw->u.s.p, nw->u.s.n);
        len += nw->u.s.n;
        maxc--;
      }
      if (i == n) break;
      size_t nx;
      cp_at(p, n, i, &nx);
      memcpy(buf + len, p + i, nx - i);
      len += nx - i;
      i = nx;
    }
  } else {
    while (i < n) {
      const char *f =
          maxc > 0 ? find_sub(p + i, n - i, old->u.s.p, old->u.s.n) : NULL;
      if (f == NULL) {
        memcpy(buf + len, p + i, n - i);
        len += n - i;
        break;
      }
      size_t at = (size_t)(f - p);
      memcpy(buf + len, p + i, at - i);
      len += at - i;
      memcpy(buf + len, nw->u.s.p, nw->u.s.n);
      len += nw->u.s.n;
      i = at + old->u.s.n;
      maxc--;
    }
  }
  *out = tmpl_v_str(buf, len);
  return TL_OK;
}

/* mode: 'U' upper, 'L' lower, 'T' title, 'C' capitalize. ASCII only: a
 * string with other characters is refused (no Unicode case tables). */
static tl_status do_case(rctx *r, const char *p, size_t n, char mode,
                         val *out) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] >= 0x80)
      return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                       "case mapping of non-ASCII text is not supported", NULL,
                       0, NULL);
  char *buf;
  tl_status st;
  if ((st = tmpl_step(r, 1 + n / 64)) != TL_OK ||
      (st = tmpl_alloc(r, n + 1, (void **)&buf)) != TL_OK)
    return st;
  bool prev_cased = false;
  for (size_t i = 0; i < n; i++) {
    char ch = p[i];
    bool lo = ch >= 'a' && ch <= 'z', up = ch >= 'A' && ch <= 'Z';
    bool to_up =
        mode == 'U' || (mode == 'T' && !prev_cased) || (mode == 'C' && i == 0);
    if (to_up && lo)
      ch = (char)(ch - 32);
    else if (!to_up && up)
      ch = (char)(ch + 32);
    buf[i] = ch;
    prev_cased = lo || up;
  }
  *out = tmpl_v_str(buf, n);
  return TL_OK;
}

static tl_status affix(rctx *r, const val *s, const val *arg, bool start,
                       val *out) {
  const tl_json_value *alts = NULL;
  size_t n_alts = 1;
  if (arg->kind == V_LIST && arg->tuple) {
    alts = arg->u.l.items;
    n_alts = arg->u.l.n;
  } else if (arg->kind != V_STR) {
    return type_err(
        r,
        start ? "startswith first arg must be str or a tuple of str, not '"
              : "endswith first arg must be str or a tuple of str, not '",
        arg, "'");
  }
  bool res = false;
  for (size_t i = 0; i < n_alts && !res; i++) {
    const char *ap;
    size_t an;
    if (alts != NULL) {
      if (alts[i].type != TL_JSON_STRING)
        return tmpl_fail(r, TL_TMPL_ERR_TYPE,
                         "tuple for startswith/endswith must only contain str",
                         NULL, 0, NULL);
      ap = alts[i].u.str.ptr;
      an = alts[i].u.str.len;
    } else {
      ap = arg->u.s.p;
      an = arg->u.s.n;
    }
    if (an <= s->u.s.n)
      res = memcmp(start ? s->u.s.p : s->u.s.p + s->u.s.n - an, ap, an) == 0;
  }
  *out = tmpl_v_bool(res);
  return TL_OK;
}

tl_status tmpl_iterate(rctx *r, const val *x, val **items, size_t *n) {
  tl_status st;
  size_t cnt = 0;
  *items = NULL;
  *n = 0;
  switch (x->kind) {
    case V_UNDEF:
      return TL_OK;
    case V_LIST:
      cnt = x->u.l.n;
      break;
    case V_DICT:
      cnt = x->u.obj->u.obj.n;
      break;
    case V_STR:
      cnt = tmpl_cp_count(x->u.s.p, x->u.s.n);
      break;
    default:
      return type_err(r, "'", x, "' object is not iterable");
  }
  val *it;
  size_t bytes;
  if (tl_mul_size(cnt + 1, sizeof *it, &bytes) != TL_OK)
    return tmpl_fail(r, TL_TMPL_ERR_MEMORY, "too many items", NULL, 0, NULL);
  if ((st = tmpl_step(r, 1 + cnt / 16)) != TL_OK ||
      (st = tmpl_alloc(r, bytes, (void **)&it)) != TL_OK)
    return st;
  if (x->kind == V_LIST) {
    for (size_t i = 0; i < cnt; i++) it[i] = tmpl_from_json(&x->u.l.items[i]);
  } else if (x->kind == V_DICT) {
    for (size_t i = 0; i < cnt; i++)
      it[i] = tmpl_v_str(x->u.obj->u.obj.members[i].key,
                         x->u.obj->u.obj.members[i].key_len);
  } else {
    size_t i = 0, k = 0;
    while (i < x->u.s.n) {
      size_t nx;
      cp_at(x->u.s.p, x->u.s.n, i, &nx);
      it[k++] = tmpl_v_str(x->u.s.p + i, nx - i);
      i = nx;
    }
  }
  *items = it;
  *n = cnt;
  return TL_OK;
}

tl_status tmpl_contains(rctx *r, const val *item, const val *seq, bool *out) {
  tl_status st;
  *out = false;
  switch (seq->kind) {
    case V_UNDEF:
      return TL_OK;
    case V_STR:
      if (item->kind != V_STR)
        return type_err(r,
                        "'in <string>' requires string as left operand, not '",
                        item, "'");
      if ((st = tmpl_step(r, 1 + seq->u.s.n / 64)) != TL_OK) return st;
      *out = find_sub(seq->u.s.p, seq->u.s.n, item->u.s.p, item->u.s.n) != NULL;
      return TL_OK;
    case V_LIST:
      for (size_t i = 0; i < seq->u.l.n && !*out; i++) {
        val e = tmpl_from_json(&seq->u.l.items[i]);
        if ((st = tmpl_eq(r, item, &e, out)) != TL_OK) return st;
      }
      return TL_OK;
    case V_DICT:
      if (item->kind == V_LIST || item->kind == V_DICT || item->kind == V_NS)
        return type_err(r, "unhashable type: '", item, "'");
      if (item->kind == V_STR)
        *out = tl_json_get(seq->u.obj, item->u.s.p, item->u.s.n) != NULL;
      return TL_OK;
    default:
      return type_err(r, "argument of type '", seq, "' is not iterable");
  }
}

/* ---- tojson ------------------------------------------------------------- */

static void out_put(tl_json_out *o, const char *p, size_t n) {
  if (o->status != TL_OK) return;
  if (o->buf == NULL) {
    o->len += n;
    return;
  }
  if (n > o->cap - o->len) {
    o->status = TL_ERR_BOUNDS;
    return;
  }
  memcpy(o->buf + o->len, p, n);
  o->len += n;
}

static void put_indent(tl_json_out *o, const char *ind, size_t in,
                       size_t level) {
  out_put(o, "\n", 1);
  for (size_t i = 0; i < level; i++) out_put(o, ind, in);
}

/* json.dumps(v, indent=ind): item separator ",", key separator ": " */
static bool dumps_indent(const tl_json_value *v, const char *ind, size_t in,
                         size_t level, tl_json_out *o) {
  if (level > 256) return false;
  if (v->type == TL_JSON_ARRAY && v->u.arr.n > 0) {
    out_put(o, "[", 1);
    for (size_t i = 0; i < v->u.arr.n; i++) {
      if (i > 0) out_put(o, ",", 1);
      put_indent(o, ind, in, level + 1);
      if (!dumps_indent(&v->u.arr.items[i], ind, in, level + 1, o))
        return false;
    }
    put_indent(o, ind, in, level);
    out_put(o, "]", 1);
    return true;
  }
  if (v->type == TL_JSON_OBJECT && v->u.obj.n > 0) {
    out_put(o, "{", 1);
    for (size_t i = 0; i < v->u.obj.n; i++) {
      const tl_json_member *m = &v->u.obj.members[i];
      if (i > 0) out_put(o, ",", 1);
      put_indent(o, ind, in, level + 1);
      tl_json_value k;
      memset(&k, 0, sizeof k);
      k.type = TL_JSON_STRING;
      k.u.str.ptr = m->key;
      k.u.str.len = m->key_len;
      tl_py_json_dumps(&k, o);
      out_put(o, ": ", 2);
      if (!dumps_indent(&m->value, ind, in, level + 1, o)) return false;
    }
    put_indent(o, ind, in, level);
    out_put(o, "}", 1);
    return true;
  }
  tl_py_json_dumps(v, o);
  return true;
}

static tl_status do_tojson(rctx *r, const val *x, const val *args,
                           uint64_t mask, val *out) {
  /* ensure_ascii, indent, separators, sort_keys */
  if ((mask & 1) && !(args[0].kind == V_BOOL && !args[0].u.b))
    return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                     "tojson(ensure_ascii=True) is not supported", NULL, 0,
                     NULL);
  if ((mask & 4) && args[2].kind != V_NONE)
    return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                     "tojson(separators=...) is not supported", NULL, 0, NULL);
  if ((mask & 8) && !(args[3].kind == V_BOOL && !args[3].u.b))
    return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                     "tojson(sort_keys=True) is not supported", NULL, 0, NULL);
  const char *ind = NULL;
  size_t in = 0;
  char spaces[64];
  if ((mask & 2) && args[1].kind != V_NONE) {
    if (args[1].kind == V_STR) {
      ind = args[1].u.s.p;
      in = args[1].u.s.n;
    } else if (args[1].kind == V_INT) {
      int64_t k = args[1].u.i;
      if (k > 64)
        return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "tojson indent above 64",
                         NULL, 0, NULL);
      in = k < 0 ? 0 : (size_t)k;
      memset(spaces, ' ', sizeof spaces);
      ind = spaces;
    } else {
      return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                       "tojson indent must be an int or a str", NULL, 0, NULL);
    }
  }
  if (x->kind == V_UNDEF || x->kind == V_NS || x->kind == V_LOOP)
    return type_err(r, "Object of type ", x, " is not JSON serializable");
  tl_json_value j;
  tl_status st = tmpl_to_json(r, x, &j);
  if (st != TL_OK) return st;
  tl_json_out m = {NULL, 0, 0, TL_OK};
  bool ok =
      ind ? dumps_indent(&j, ind, in, 0, &m) : (tl_py_json_dumps(&j, &m), true);
  if (!ok || m.status != TL_OK)
    return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "value cannot be serialised",
                     NULL, 0, NULL);
  uint8_t *buf;
  if ((st = tmpl_step(r, 1 + m.len / 64)) != TL_OK ||
      (st = tmpl_alloc(r, m.len + 1, (void **)&buf)) != TL_OK)
    return st;
  tl_json_out o = {buf, m.len + 1, 0, TL_OK};
  if (ind)
    dumps_indent(&j, ind, in, 0, &o);
  else
    tl_py_json_dumps(&j, &o);
  *out = tmpl_v_str((const char *)buf, o.len);
  return TL_OK;
}

/* ---- methods ------------------------------------------------------------ */

static tl_status dict_items(rctx *r, const tl_json_value *obj, int what,
                            val *out) {
  size_t n = obj->u.obj.n;
  tl_status st;
  val *items;
  if ((st = tmpl_alloc(r, (n + 1) * sizeof *items, (void **)&items)) != TL_OK)
    return st;
  for (size_t i = 0; i < n; i++) {
    const tl_json_member *m = &obj->u.obj.members[i];
    val k = tmpl_v_str(m->key, m->key_len);
    if (what == 1) {
      items[i] = k;
    } else if (what == 2) {
      items[i] = tmpl_from_json(&m->value);
    } else {
      val pair[2] = {k, tmpl_from_json(&m->value)};
      if ((st = tmpl_make_list(r, pair, 2, true, &items[i])) != TL_OK)
        return st;
    }
  }
  return list_of(r, items, n, out);
}

tl_status tmpl_method(rctx *r, uint32_t m, const val *obj, const val *args,
                      uint64_t mask, val *out) {
  const tl_tmpl_sig *sig = &tl_tmpl_methods[m];
  (void)mask;
  if (obj->kind == V_UNDEF) return tmpl_undefined_error(r, obj);
  bool owner_ok = (sig->owner == 'S' && obj->kind == V_STR) ||
                  (sig->owner == 'D' && obj->kind == V_DICT);
  if (!owner_ok) {
    const char *t = tmpl_type_name(obj);
    tl_status st = tmpl_fail(r, TL_TMPL_ERR_UNDEFINED, "'", t, strlen(t),
                             " object' has no attribute '");
    if (r->err && r->err->kind == TL_TMPL_ERR_UNDEFINED) {
      size_t l = strlen(sig->name);
      for (size_t i = 0; i <= l && r->err->message_len + 1 < TL_TMPL_MSG_CAP;
           i++) {
        r->err->message[r->err->message_len++] = i < l ? sig->name[i] : '\'';
        r->err->message[r->err->message_len] = '\0';
      }
    }
    return st;
  }
  const char *p = obj->u.s.p;
  size_t n = obj->u.s.n;
  switch (m) {
    case TL_M_STARTSWITH:
    case TL_M_ENDSWITH:
      if (args[0].kind == V_UNDEF && !(mask & 1))
        return tmpl_fail(r, TL_TMPL_ERR_TYPE, sig->name,
                         "() takes at least 1 argument", 28, NULL);
      return affix(r, obj, &args[0], m == TL_M_STARTSWITH, out);
    case TL_M_SPLIT:
      return do_split(r, p, n, &args[0], &args[1], out);
    case TL_M_STRIP:
      return do_strip(r, p, n, &args[0], 3, out);
    case TL_M_LSTRIP:
      return do_strip(r, p, n, &args[0], 1, out);
    case TL_M_RSTRIP:
      return do_strip(r, p, n, &args[0], 2, out);
    case TL_M_REPLACE:
      if ((mask & 3) != 3)
        return tmpl_fail(r, TL_TMPL_ERR_TYPE,
                         "replace() takes at least 2 arguments", NULL, 0, NULL);
      return do_replace(r, p, n, &args[0], &args[1], &args[2], out);
    case TL_M_UPPER:
      return do_case(r, p, n, 'U', out);
    case TL_M_LOWER:
      return do_case(r, p, n, 'L', out);
    case TL_M_TITLE:
      return do_case(r, p, n, 'T', out);
    case TL_M_CAPITALIZE:
      return do_case(r, p, n, 'C', out);
    case TL_M_FIND: {
      if (args[0].kind != V_STR)
        return type_err(r, "must be str, not '", &args[0], "'");
      const char *f = find_sub(p, n, args[0].u.s.p, args[0].u.s.n);
      *out = tmpl_v_int(f == NULL ? -1
                                  : (int64_t)tmpl_cp_count(p, (size_t)(f - p)));
      return TL_OK;
    }
    case TL_M_ITEMS:
      return dict_items(r, obj->u.obj, 0, out);
    case TL_M_KEYS:
      return dict_items(r, obj->u.obj, 1, out);
    case TL_M_VALUES:
      return dict_items(r, obj->u.obj, 2, out);
    case TL_M_GET: {
      if (!(mask & 1))
        return tmpl_fail(r, TL_TMPL_ERR_TYPE,
                         "get expected at least 1 argument", NULL, 0, NULL);
      const val *k = &args[0];
      if (k->kind == V_LIST || k->kind == V_DICT)
        return type_err(r, "unhashable type: '", k, "'");
      const tl_json_value *j =
          k->kind == V_STR ? tl_json_get(obj->u.obj, k->u.s.p, k->u.s.n) : NULL;
      if (j != NULL) {
        *out = tmpl_from_json(j);
      } else if (mask & 2) {
        *out = args[1];
      } else {
        memset(out, 0, sizeof *out);
        out->kind = V_NONE;
      }
      return TL_OK;
    }
    default:
      return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "method not supported", NULL,
                       0, NULL);
  }
}

/* ---- filters ------------------------------------------------------------ */

static tl_status length_of(rctx *r, const val *x, int64_t *n) {
  switch (x->kind) {
    case V_UNDEF:
      *n = 0;
      return TL_OK;
    case V_STR:
      *n = (int64_t)tmpl_cp_count(x->u.s.p, x->u.s.n);
      return TL_OK;
    case V_LIST:
      *n = (int64_t)x->u.l.n;
      return TL_OK;
    case V_DICT:
      *n = (int64_t)x->u.obj->u.obj.n;
      return TL_OK;
    default:
      return type_err(r, "object of type '", x, "' has no len()");
  }
}

static tl_status parse_int_str(const char *p, size_t n, int64_t *out) {
  size_t a = 0, b = n;
  while (a < b && (p[a] == ' ' || (p[a] >= 9 && p[a] <= 13))) a++;
  while (b > a && (p[b - 1] == ' ' || (p[b - 1] >= 9 && p[b - 1] <= 13))) b--;
  bool neg = false;
  if (a < b && (p[a] == '+' || p[a] == '-')) neg = p[a++] == '-';
  if (a == b) return TL_ERR_INVALID_ARGUMENT;
  uint64_t v = 0;
  bool prev_digit = false;
  for (size_t i = a; i < b; i++) {
    if (p[i] == '_' && prev_digit && i + 1 < b && p[i + 1] >= '0' &&
        p[i + 1] <= '9') {
      prev_digit = false;
      continue;
    }
    if (p[i] < '0' || p[i] > '9') return TL_ERR_INVALID_ARGUMENT;
    unsigned d = (unsigned)(p[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return TL_ERR_INTEGER_OVERFLOW;
    v = v * 10 + d;
    prev_digit = true;
  }
  if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) return TL_ERR_INTEGER_OVERFLOW;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return TL_OK;
}

tl_status tmpl_filter(rctx *r, uint32_t f, const val *x, const val *args,
                      uint64_t mask, val *out) {
  tl_status st;
  const char *p;
  size_t n;
  int64_t len = 0;
  val *items;
  size_t cnt;
  switch (f) {
    case TL_F_LENGTH:
    case TL_F_COUNT:
      if ((st = length_of(r, x, &len)) != TL_OK) return st;
      *out = tmpl_v_int(len);
      return TL_OK;
    case TL_F_TOJSON:
      return do_tojson(r, x, args, mask, out);
    case TL_F_TRIM:
      if ((st = tmpl_str(r, x, &p, &n)) != TL_OK) return st;
      return do_strip(r, p, n, &args[0], 3, out);
    case TL_F_JOIN: {
      if (mask & 2)
        return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                         "join(attribute=...) is not supported", NULL, 0, NULL);
      const char *dp = "";
      size_t dn = 0;
      if ((mask & 1) && (st = tmpl_str(r, &args[0], &dp, &dn)) != TL_OK)
        return st;
      if ((st = tmpl_iterate(r, x, &items, &cnt)) != TL_OK) return st;
      const char **ps;
      size_t *ns, total = 0;
      if ((st = tmpl_alloc(r, (cnt + 1) * sizeof *ps, (void **)&ps)) != TL_OK ||
          (st = tmpl_alloc(r, (cnt + 1) * sizeof *ns, (void **)&ns)) != TL_OK)
        return st;
      for (size_t i = 0; i < cnt; i++) {
        if ((st = tmpl_str(r, &items[i], &ps[i], &ns[i])) != TL_OK) return st;
        if (tl_add_size(total, ns[i], &total) != TL_OK ||
            (i > 0 && tl_add_size(total, dn, &total) != TL_OK))
          return tmpl_fail(r, TL_TMPL_ERR_MEMORY, "string too long", NULL, 0,
                           NULL);
      }
      char *buf;
      if ((st = tmpl_step(r, 1 + total / 64)) != TL_OK ||
          (st = tmpl_alloc(r, total + 1, (void **)&buf)) != TL_OK)
        return st;
      size_t off = 0;
      for (size_t i = 0; i < cnt; i++) {
        if (i > 0) {
          memcpy(buf + off, dp, dn);
          off += dn;
        }
        memcpy(buf + off, ps[i], ns[i]);
        off += ns[i];
      }
      *out = tmpl_v_str(buf, off);
      return TL_OK;
    }
    case TL_F_UPPER:
    case TL_F_LOWER:
    case TL_F_CAPITALIZE:
      if ((st = tmpl_str(r, x, &p, &n)) != TL_OK) return st;
      return do_case(r, p, n,
                     f == TL_F_UPPER   ? 'U'
                     : f == TL_F_LOWER ? 'L'
                                       : 'C',
                     out);
    case TL_F_DEFAULT:
    case TL_F_D: {
      bool boolean = (mask & 2) && tmpl_truthy(&args[1]);
      if (x->kind == V_UNDEF || (boolean && !tmpl_truthy(x))) {
        if (mask & 1)
          *out = args[0];
        else
          *out = tmpl_v_str("", 0);
      } else {
        *out = *x;
      }
      return TL_OK;
    }
    case TL_F_ITEMS:
      if (x->kind == V_UNDEF) return list_of(r, NULL, 0, out);
      if (x->kind != V_DICT)
        return tmpl_fail(r, TL_TMPL_ERR_TYPE,
                         "Can only get item pairs from a mapping.", NULL, 0,
                         NULL);
      return dict_items(r, x->u.obj, 0, out);
    case TL_F_LIST:
      if ((st = tmpl_iterate(r, x, &items, &cnt)) != TL_OK) return st;
      return list_of(r, items, cnt, out);
    case TL_F_FIRST:
    case TL_F_LAST:
      if (x->kind == V_UNDEF && f == TL_F_LAST)
        return tmpl_fail(r, TL_TMPL_ERR_UNDEFINED, "last of an undefined value",
                         NULL, 0, NULL);
      if ((st = tmpl_iterate(r, x, &items, &cnt)) != TL_OK) return st;
      if (cnt == 0)
        *out = tmpl_v_undef(NULL, "item", 4);
      else
        *out = items[f == TL_F_FIRST ? 0 : cnt - 1];
      return TL_OK;
    case TL_F_STRING:
    case TL_F_SAFE:
      if (x->kind == V_NS || x->kind == V_LOOP)
        return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                         "str() of this object is not supported", NULL, 0,
                         NULL);
      if ((st = tmpl_str(r, x, &p, &n)) != TL_OK) return st;
      *out = tmpl_v_str(p, n);
      return TL_OK;
    case TL_F_INT: {
      int64_t def = 0;
      if (mask & 2)
        return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                         "int(base=...) is not supported", NULL, 0, NULL);
      if (mask & 1) {
        if (args[0].kind != V_INT)
          return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                           "int(default=...) must be an integer here", NULL, 0,
                           NULL);
        def = args[0].u.i;
      }
      int64_t v = def;
      if (x->kind == V_INT)
        v = x->u.i;
      else if (x->kind == V_BOOL)
        v = x->u.b;
      else if (x->kind == V_FLOAT) {
        if (x->u.f > -9.2e18 && x->u.f < 9.2e18)
          v = (int64_t)x->u.f;
        else
          return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                           "int of a float beyond 64 bits is not supported",
                           NULL, 0, NULL);
      } else if (x->kind == V_STR) {
        st = parse_int_str(x->u.s.p, x->u.s.n, &v);
        if (st == TL_ERR_INTEGER_OVERFLOW)
          return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                           "integers beyond 64 bits are not supported", NULL, 0,
                           NULL);
        if (st != TL_OK) {
          bool only_int_chars = true;
          for (size_t i = 0; i < x->u.s.n; i++) {
            char ch = x->u.s.p[i];
            if (ch == '.' || ch == 'e' || ch == 'E' || ch == 'n' || ch == 'N' ||
                ch == 'i' || ch == 'I')
              only_int_chars = false;
          }
          if (!only_int_chars)
            return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                             "int of a float-like string is not supported",
                             NULL, 0, NULL);
          v = def;
        }
      }
      *out = tmpl_v_int(v);
      return TL_OK;
    }
    case TL_F_REPLACE:
      if ((mask & 3) != 3)
        return tmpl_fail(r, TL_TMPL_ERR_TYPE, "replace needs old and new", NULL,
                         0, NULL);
      if ((st = tmpl_str(r, x, &p, &n)) != TL_OK) return st;
      {
        val o, nw;
        const char *op, *np;
        size_t on, nn;
        if ((st = tmpl_str(r, &args[0], &op, &on)) != TL_OK ||
            (st = tmpl_str(r, &args[1], &np, &nn)) != TL_OK)
          return st;
        o = tmpl_v_str(op, on);
        nw = tmpl_v_str(np, nn);
        val cnt_v = (mask & 4) ? args[2] : tmpl_v_undef(NULL, NULL, 0);
        return do_replace(r, p, n, &o, &nw, &cnt_v, out);
      }
    case TL_F_REVERSE:
      if (x->kind == V_STR) {
        size_t k = tmpl_cp_count(x->u.s.p, x->u.s.n);
        char *buf;
        if ((st = tmpl_alloc(r, x->u.s.n + 1, (void **)&buf)) != TL_OK)
          return st;
        size_t end = x->u.s.n, off = 0;
        for (size_t i = 0; i < k; i++) {
          size_t s0 = cp_start_before(x->u.s.p, end);
          memcpy(buf + off, x->u.s.p + s0, end - s0);
          off += end - s0;
          end = s0;
        }
        *out = tmpl_v_str(buf, off);
        return TL_OK;
      }
      if ((st = tmpl_iterate(r, x, &items, &cnt)) != TL_OK) return st;
      for (size_t i = 0; i < cnt / 2; i++) {
        val t = items[i];
        items[i] = items[cnt - 1 - i];
        items[cnt - 1 - i] = t;
      }
      return list_of(r, items, cnt, out);
    case TL_F_ABS:
      if (x->kind == V_INT) {
        if (x->u.i == INT64_MIN)
          return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                           "integers beyond 64 bits are not supported", NULL, 0,
                           NULL);
        *out = tmpl_v_int(x->u.i < 0 ? -x->u.i : x->u.i);
      } else if (x->kind == V_BOOL) {
        *out = tmpl_v_int(x->u.b);
      } else if (x->kind == V_FLOAT) {
        *out = *x;
        if (out->u.f < 0 || (out->u.f == 0.0 && 1.0 / out->u.f < 0))
          out->u.f = -out->u.f;
      } else {
        return type_err(r, "bad operand type for abs(): '", x, "'");
      }
      return TL_OK;
    default:
      return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "filter not supported", NULL,
                       0, NULL);
  }
}

/* ---- tests -------------------------------------------------------------- */

static tl_status int_mod(rctx *r, const val *x, int64_t m, bool *zero) {
  if (x->kind != V_INT && x->kind != V_BOOL)
    return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                     "even/odd/divisibleby of a non-integer is not supported",
                     NULL, 0, NULL);
  if (m == 0)
    return tmpl_fail(r, TL_TMPL_ERR_TYPE, "integer division or modulo by zero",
                     NULL, 0, NULL);
  int64_t v = x->kind == V_BOOL ? x->u.b : x->u.i;
  *zero = m == -1 ? true : v % m == 0;
  return TL_OK;
}

tl_status tmpl_test(rctx *r, uint32_t t, const val *x, const val *args,
                    bool *out) {
  bool z;
  tl_status st;
  switch (t) {
    case TL_T_DEFINED:
      *out = x->kind != V_UNDEF;
      return TL_OK;
    case TL_T_UNDEFINED:
      *out = x->kind == V_UNDEF;
      return TL_OK;
    case TL_T_NONE:
      *out = x->kind == V_NONE;
      return TL_OK;
    case TL_T_STRING:
      *out = x->kind == V_STR;
      return TL_OK;
    case TL_T_MAPPING:
      *out = x->kind == V_DICT;
      return TL_OK;
    case TL_T_ITERABLE:
      *out = x->kind == V_UNDEF || x->kind == V_STR || x->kind == V_LIST ||
             x->kind == V_DICT || x->kind == V_LOOP;
      return TL_OK;
    case TL_T_SEQUENCE:
      *out = x->kind == V_UNDEF || x->kind == V_STR || x->kind == V_LIST ||
             x->kind == V_DICT;
      return TL_OK;
    case TL_T_NUMBER:
      *out = x->kind == V_INT || x->kind == V_FLOAT || x->kind == V_BOOL;
      return TL_OK;
    case TL_T_INTEGER:
      *out = x->kind == V_INT;
      return TL_OK;
    case TL_T_FLOAT:
      *out = x->kind == V_FLOAT;
      return TL_OK;
    case TL_T_BOOLEAN:
      *out = x->kind == V_BOOL;
      return TL_OK;
    case TL_T_TRUE:
      *out = x->kind == V_BOOL && x->u.b;
      return TL_OK;
    case TL_T_FALSE:
      *out = x->kind == V_BOOL && !x->u.b;
      return TL_OK;
    case TL_T_EVEN:
    case TL_T_ODD:
      if ((st = int_mod(r, x, 2, &z)) != TL_OK) return st;
      *out = t == TL_T_EVEN ? z : !z;
      return TL_OK;
    case TL_T_DIVISIBLEBY:
      if (args[0].kind != V_INT && args[0].kind != V_BOOL)
        return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED,
                         "divisibleby of a non-integer is not supported", NULL,
                         0, NULL);
      return int_mod(r, x, args[0].kind == V_BOOL ? args[0].u.b : args[0].u.i,
                     out);
    case TL_T_EQ:
    case TL_T_EQUALTO:
      return tmpl_eq(r, x, &args[0], out);
    case TL_T_NE:
      if ((st = tmpl_eq(r, x, &args[0], &z)) != TL_OK) return st;
      *out = !z;
      return TL_OK;
    case TL_T_IN:
      return tmpl_contains(r, x, &args[0], out);
    default:
      return tmpl_fail(r, TL_TMPL_ERR_UNSUPPORTED, "test not supported", NULL,
                       0, NULL);
  }
}
