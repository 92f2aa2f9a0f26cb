/* safetensors intake: see safetensors.h and docs/safetensors.md. The ST-n
 * tags mark the line that implements each requirement. */
#include "safetensors/safetensors.h"

#include <stdbool.h>
#include <string.h>

#include "bytes.h"
#include "checked.h"
#include "json/json.h"

const char *tl_st_dtype_name(tl_st_dtype dtype) {
  switch (dtype) {
    case TL_ST_F32:
      return "F32";
    case TL_ST_F16:
      return "F16";
    case TL_ST_BF16:
      return "BF16";
  }
  return "?";
}

size_t tl_st_dtype_size(tl_st_dtype dtype) {
  switch (dtype) {
    case TL_ST_F32:
      return 4;
    case TL_ST_F16:
    case TL_ST_BF16:
      return 2;
  }
  return 0;
}

/* --- messages ------------------------------------------------------------ */

typedef struct msg {
  char *buf;
  size_t cap, len; /* len < cap; buf[len] == 0 */
} msg;

static void msg_bytes(msg *m, const char *s, size_t n) {
  for (size_t i = 0; i < n && m->len + 1 < m->cap; i++) m->buf[m->len++] = s[i];
  m->buf[m->len] = 0;
}

static void msg_str(msg *m, const char *s) {
  if (s != NULL) msg_bytes(m, s, strlen(s));
}

static void msg_u64(msg *m, uint64_t v) {
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) msg_bytes(m, &tmp[--n], 1);
}

/* A name from the file: printable ASCII and UTF-8 as is, control bytes and
 * quotes as \xNN, at most 96 bytes then "...". */
static void msg_name(msg *m, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t shown = n > 96 ? 96 : n;
  msg_str(m, "'");
  for (size_t i = 0; i < shown; i++) {
    uint8_t c = (uint8_t)s[i];
    if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
      char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
      msg_bytes(m, e, 4);
    } else {
      msg_bytes(m, &s[i], 1);
    }
  }
  if (shown < n) msg_str(m, "...");
  msg_str(m, "'");
}

/* --- parser state -------------------------------------------------------- */

typedef struct parser {
  const uint8_t *data;
  size_t len;
  const char *label;
  tl_st_error *err;
  msg m;
} parser;

/* Starts a message "<file>: [tensor 'x': ][field 'f': ]" and returns it
 * for the reason to be appended. */
static msg *fail_at(parser *p, const char *tensor, size_t tensor_len,
                    const char *field) {
  p->m.buf = p->err->message;
  p->m.cap = sizeof p->err->message;
  p->m.len = 0;
  p->m.buf[0] = 0;
  msg_str(&p->m, p->label != NULL ? p->label : "<safetensors>");
  msg_str(&p->m, ": ");
  if (tensor != NULL) {
    msg_str(&p->m, "tensor ");
    msg_name(&p->m, tensor, tensor_len);
    msg_str(&p->m, ": ");
  }
  if (field != NULL) {
    msg_str(&p->m, "field '");
    msg_str(&p->m, field);
    msg_str(&p->m, "': ");
  }
  return &p->m;
}

static tl_status fail(parser *p, tl_status st, const char *tensor,
                      size_t tensor_len, const char *field,
                      const char *reason) {
  msg_str(fail_at(p, tensor, tensor_len, field), reason);
  return st;
}

/* Dtypes the safetensors format defines; those outside the allowlist are
 * TL_ERR_UNSUPPORTED_QUANTIZATION, any other string TL_ERR_INVALID_MODEL. */
static const char *const known_dtypes[] = {
    "BOOL",    "U8",      "I8",      "I16", "U16",     "I32",
    "U32",     "I64",     "U64",     "F64", "F8_E5M2", "F8_E4M3",
    "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",  "C64"};

static bool str_is(const tl_json_value *v, const char *s) {
  size_t n = strlen(s);
  return v->u.str.len == n && memcmp(v->u.str.ptr, s, n) == 0;
}

static tl_status parse_dtype(parser *p, const tl_st_tensor *t,
                             const tl_json_value *v, tl_st_dtype *out) {
  if (v->type != TL_JSON_STRING)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, "dtype",
                "not a string");
  /* ST-5: the allowlist. */
  if (str_is(v, "F32"))
    *out = TL_ST_F32;
  else if (str_is(v, "F16"))
    *out = TL_ST_F16;
  else if (str_is(v, "BF16"))
    *out = TL_ST_BF16;
  else {
    bool known = false;
    for (size_t i = 0; i < sizeof known_dtypes / sizeof known_dtypes[0]; i++)
      known = known || str_is(v, known_dtypes[i]);
    msg *m = fail_at(p, t->name, t->name_len, "dtype");
    msg_str(m, "dtype ");
    msg_name(m, v->u.str.ptr, v->u.str.len);
    msg_str(m, known ? " is not supported (accepted: F32, F16, BF16)"
                     : " is not a safetensors dtype (accepted: F32, F16, "
                       "BF16)");
    return known ? TL_ERR_UNSUPPORTED_QUANTIZATION : TL_ERR_INVALID_MODEL;
  }
  return TL_OK;
}

/* ST-6/ST-7: non-negative integer dims, product checked in 64 bits. */
static tl_status parse_shape(parser *p, tl_arena *arena, tl_st_tensor *t,
                             const tl_json_value *v) {
  if (v->type != TL_JSON_ARRAY)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, "shape",
                "not an array");
  uint64_t *dims = NULL;
  tl_status st = tl_arena_alloc_array(arena, v->u.arr.n, sizeof(uint64_t),
                                      _Alignof(uint64_t), (void **)&dims);
  if (st != TL_OK)
    return fail(p, st, t->name, t->name_len, "shape", "out of memory");
  uint64_t count = 1;
  bool zero = false;
  for (size_t i = 0; i < v->u.arr.n; i++) {
    const tl_json_value *d = &v->u.arr.items[i];
    if (d->type != TL_JSON_INT || d->u.i < 0) {
      msg *m = fail_at(p, t->name, t->name_len, "shape");
      msg_str(m, "dimension ");
      msg_u64(m, i);
      msg_str(m, " is not a non-negative integer");
      return TL_ERR_INVALID_MODEL;
    }
    dims[i] = (uint64_t)d->u.i;
    zero = zero || dims[i] == 0;
    /* A zero dimension makes the count 0, but every product is still
     * checked so a huge shape is refused whatever its order. */
    if (tl_mul_u64(count, dims[i] == 0 ? 1 : dims[i], &count) != TL_OK)
      return fail(p, TL_ERR_INTEGER_OVERFLOW, t->name, t->name_len, "shape",
                  "element count overflows 64 bits");
  }
  uint64_t bytes;
  if (tl_mul_u64(count, tl_st_dtype_size(t->dtype), &bytes) != TL_OK)
    return fail(p, TL_ERR_INTEGER_OVERFLOW, t->name, t->name_len, "shape",
                "byte count overflows 64 bits");
  t->rank = v->u.arr.n;
  t->shape = dims;
  t->n_elements = zero ? 0 : count;
  return TL_OK;
}

/* ST-8: [begin, end] inside the data region, end - begin == byte count. */
static tl_status parse_offsets(parser *p, tl_st_tensor *t,
                               const tl_json_value *v, size_t data_len,
                               uint64_t *begin, uint64_t *end) {
  if (v->type != TL_JSON_ARRAY || v->u.arr.n != 2)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, "data_offsets",
                "not an array of two integers");
  const tl_json_value *b = &v->u.arr.items[0], *e = &v->u.arr.items[1];
  if (b->type != TL_JSON_INT || e->type != TL_JSON_INT || b->u.i < 0 ||
      e->u.i < 0)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, "data_offsets",
                "offsets must be non-negative integers");
  *begin = (uint64_t)b->u.i;
  *end = (uint64_t)e->u.i;
  if (*begin > *end)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, "data_offsets",
                "begin is after end");
  if (*end > (uint64_t)data_len) {
    msg *m = fail_at(p, t->name, t->name_len, "data_offsets");
    msg_str(m, "end ");
    msg_u64(m, *end);
    msg_str(m, " is past the data region (");
    msg_u64(m, data_len);
    msg_str(m, " bytes)");
    return TL_ERR_INVALID_MODEL;
  }
  /* Cannot overflow: parse_shape checked the product in 64 bits. */
  uint64_t want = t->n_elements * tl_st_dtype_size(t->dtype);
  if (*end - *begin != want) {
    msg *m = fail_at(p, t->name, t->name_len, "data_offsets");
    msg_str(m, "range holds ");
    msg_u64(m, *end - *begin);
    msg_str(m, " bytes but shape and dtype need ");
    msg_u64(m, want);
    return TL_ERR_INVALID_MODEL;
  }
  return TL_OK;
}

static tl_status parse_metadata(parser *p, tl_arena *arena,
                                const tl_json_value *v, tl_st_file *out) {
  if (v->type != TL_JSON_OBJECT)
    return fail(p, TL_ERR_INVALID_MODEL, NULL, 0, "__metadata__",
                "not an object");
  tl_status st =
      tl_arena_alloc_array(arena, v->u.obj.n, sizeof(tl_st_meta),
                           _Alignof(tl_st_meta), (void **)&out->metadata);
  if (st != TL_OK) return fail(p, st, NULL, 0, "__metadata__", "out of memory");
  for (size_t i = 0; i < v->u.obj.n; i++) {
    const tl_json_member *mem = &v->u.obj.members[i];
    if (mem->value.type != TL_JSON_STRING) {
      msg *m = fail_at(p, NULL, 0, "__metadata__");
      msg_str(m, "value of ");
      msg_name(m, mem->key, mem->key_len);
      msg_str(m, " is not a string");
      return TL_ERR_INVALID_MODEL;
    }
    tl_st_meta *e = &out->metadata[i];
    e->key = mem->key;
    e->key_len = mem->key_len;
    e->value = mem->value.u.str.ptr;
    e->value_len = mem->value.u.str.len;
  }
  out->n_metadata = v->u.obj.n;
  return TL_OK;
}

static tl_status parse_entry(parser *p, tl_arena *arena,
                             const tl_json_member *mem, size_t data_len,
                             tl_st_tensor *t, uint64_t *begin, uint64_t *end) {
  t->name = mem->key;
  t->name_len = mem->key_len;
  /* ST-10: names are non-empty, without U+0000 (UTF-8 is the JSON
   * reader's job). */
  if (mem->key_len == 0)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, 0, NULL,
                "tensor name is empty");
  for (size_t i = 0; i < mem->key_len; i++)
    if (mem->key[i] == 0)
      return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, NULL,
                  "tensor name contains U+0000");
  const tl_json_value *v = &mem->value;
  if (v->type != TL_JSON_OBJECT)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, NULL,
                "entry is not an object");
  const tl_json_value *dtype = NULL, *shape = NULL, *offsets = NULL;
  for (size_t i = 0; i < v->u.obj.n; i++) {
    const tl_json_member *f = &v->u.obj.members[i];
    if (f->key_len == 5 && memcmp(f->key, "dtype", 5) == 0)
      dtype = &f->value;
    else if (f->key_len == 5 && memcmp(f->key, "shape", 5) == 0)
      shape = &f->value;
    else if (f->key_len == 12 && memcmp(f->key, "data_offsets", 12) == 0)
      offsets = &f->value;
    else {
      /* ST-11: unknown keys are refused. */
      msg *m = fail_at(p, t->name, t->name_len, NULL);
      msg_str(m, "unknown field ");
      msg_name(m, f->key, f->key_len);
      return TL_ERR_INVALID_MODEL;
    }
  }
  if (dtype == NULL)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, "dtype",
                "missing");
  if (shape == NULL)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, "shape",
                "missing");
  if (offsets == NULL)
    return fail(p, TL_ERR_INVALID_MODEL, t->name, t->name_len, "data_offsets",
                "missing");
  tl_status st = parse_dtype(p, t, dtype, &t->dtype);
  if (st == TL_OK) st = parse_shape(p, arena, t, shape);
  if (st == TL_OK) st = parse_offsets(p, t, offsets, data_len, begin, end);
  return st;
}

/* Heap sort of tensor indices by (begin, end): freestanding, O(n log n),
 * no recursion. */
typedef struct range {
  uint64_t begin, end;
  size_t index;
} range;

static bool range_less(const range *a, const range *b) {
  if (a->begin != b->begin) return a->begin < b->begin;
  if (a->end != b->end) return a->end < b->end;
  return a->index < b->index;
}

static void sift_down(range *r, size_t root, size_t n) {
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && range_less(&r[child], &r[child + 1])) child++;
    if (!range_less(&r[root], &r[child])) return;
    range tmp = r[root];
    r[root] = r[child];
    r[child] = tmp;
    root = child;
  }
}

static void sort_ranges(range *r, size_t n) {
  for (size_t i = n / 2; i-- > 0;) sift_down(r, i, n);
  for (size_t end = n; end > 1; end--) {
    range tmp = r[0];
    r[0] = r[end - 1];
    r[end - 1] = tmp;
    sift_down(r, 0, end - 1);
  }
}

/* ST-9: sorted by begin, each range starts where the previous ended and
 * the last ends at the end of the data region. */
static tl_status check_tiling(parser *p, const tl_st_file *f, range *r,
                              size_t n, size_t data_len) {
  sort_ranges(r, n);
  uint64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const tl_st_tensor *t = &f->tensors[r[i].index];
    if (r[i].begin != at) {
      msg *m = fail_at(p, t->name, t->name_len, "data_offsets");
      if (r[i].begin < at) {
        msg_str(m, "range overlaps tensor ");
        const tl_st_tensor *prev = &f->tensors[r[i - 1].index];
        msg_name(m, prev->name, prev->name_len);
      } else {
        msg_str(m, "gap of ");
        msg_u64(m, r[i].begin - at);
        msg_str(m, " bytes before this tensor's range");
      }
      return TL_ERR_INVALID_MODEL;
    }
    at = r[i].end;
  }
  if (at != (uint64_t)data_len) {
    msg *m = fail_at(p, NULL, 0, NULL);
    msg_u64(m, (uint64_t)data_len - at);
    msg_str(m, " trailing bytes after the last tensor in the data region");
    return TL_ERR_INVALID_MODEL;
  }
  return TL_OK;
}

static tl_status parse_file(parser *p, tl_arena *arena, size_t shard,
                            tl_st_file *out) {
  const uint8_t *data = p->data;
  size_t len = p->len;
  /* ST-1: the 8-byte header length. */
  if (len < 8) {
    msg *m = fail_at(p, NULL, 0, "header length");
    msg_str(m, "file is ");
    msg_u64(m, len);
    msg_str(m, " bytes, shorter than the 8-byte header length");
    return TL_ERR_INVALID_MODEL;
  }
  uint64_t n = tl_load_le64(data);
  /* ST-2: bounds. */
  if (n > TL_ST_MAX_HEADER_LEN) {
    msg *m = fail_at(p, NULL, 0, "header length");
    msg_u64(m, n);
    msg_str(m, " exceeds the 100000000-byte limit");
    return TL_ERR_INVALID_MODEL;
  }
  if (n > (uint64_t)(len - 8)) {
    msg *m = fail_at(p, NULL, 0, "header length");
    msg_u64(m, n);
    msg_str(m, " is past the end of the file (");
    msg_u64(m, len - 8);
    msg_str(m, " bytes follow it)");
    return TL_ERR_INVALID_MODEL;
  }
  size_t hlen = (size_t)n, data_off = 8 + hlen, data_len = len - data_off;
  /* ST-3: strict JSON; duplicate keys (ST-4) refused by the reader. */
  tl_json_limits lim = tl_json_limits_default();
  lim.max_depth = 8;
  tl_json_value *root = NULL;
  tl_json_error je;
  tl_status st = tl_json_parse(data + 8, hlen, &lim, arena, &root, &je);
  if (st == TL_ERR_OUT_OF_MEMORY)
    return fail(p, st, NULL, 0, "header", "out of memory");
  if (st != TL_OK) {
    msg *m = fail_at(p, NULL, 0, "header");
    msg_str(m, "not valid JSON: ");
    msg_str(m, je.reason != NULL ? je.reason : "?");
    msg_str(m, " at header byte ");
    msg_u64(m, je.offset);
    return TL_ERR_INVALID_MODEL;
  }
  if (root->type != TL_JSON_OBJECT)
    return fail(p, TL_ERR_INVALID_MODEL, NULL, 0, "header",
                "not a JSON object");
  size_t n_tensors = 0;
  for (size_t i = 0; i < root->u.obj.n; i++) {
    const tl_json_member *mem = &root->u.obj.members[i];
    if (mem->key_len == 12 && memcmp(mem->key, "__metadata__", 12) == 0) {
      st = parse_metadata(p, arena, &mem->value, out); /* ST-12 */
      if (st != TL_OK) return st;
    } else {
      n_tensors++;
    }
  }
  range *ranges = NULL;
  st = tl_arena_alloc_array(arena, n_tensors, sizeof(tl_st_tensor),
                            _Alignof(tl_st_tensor), (void **)&out->tensors);
  if (st == TL_OK)
    st = tl_arena_alloc_array(arena, n_tensors, sizeof(range), _Alignof(range),
                              (void **)&ranges);
  if (st != TL_OK) return fail(p, st, NULL, 0, "header", "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < root->u.obj.n; i++) {
    const tl_json_member *mem = &root->u.obj.members[i];
    if (mem->key_len == 12 && memcmp(mem->key, "__metadata__", 12) == 0)
      continue;
    tl_st_tensor *t = &out->tensors[k];
    memset(t, 0, sizeof *t);
    st = parse_entry(p, arena, mem, data_len, t, &ranges[k].begin,
                     &ranges[k].end);
    if (st != TL_OK) return st;
    ranges[k].index = k;
    /* end <= data_len, so these fit size_t. */
    t->file_offset = data_off + (size_t)ranges[k].begin;
    t->data = data + t->file_offset;
    t->len = (size_t)(ranges[k].end - ranges[k].begin);
    t->shard = shard;
    k++;
  }
  out->n_tensors = n_tensors;
  st = check_tiling(p, out, ranges, n_tensors, data_len);
  if (st != TL_OK) return st;
  out->header_len = hlen;
  out->data_offset = data_off;
  return TL_OK;
}

tl_status tl_st_parse(const uint8_t *data, size_t len, const char *label,
                      size_t shard, tl_arena *arena, tl_st_file *out,
                      tl_st_error *err) {
  if (out != NULL) memset(out, 0, sizeof *out);
  if (err != NULL) err->message[0] = 0;
  if (out == NULL || err == NULL || arena == NULL || (data == NULL && len > 0))
    return TL_ERR_INVALID_ARGUMENT;
  parser p;
  p.data = data;
  p.len = len;
  p.label = label;
  p.err = err;
  tl_arena_mark mark = tl_arena_mark_now(arena);
  tl_status st = parse_file(&p, arena, shard, out);
  if (st != TL_OK) {
    memset(out, 0, sizeof *out);
    tl_arena_rewind(arena, mark);
  }
  return st;
}
