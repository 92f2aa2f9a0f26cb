#define _POSIX_C_SOURCE 200809L /* strndup */
#include "cbor_doc.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "json/json.h"

tl_status tl_cbor_encode_alloc(tl_cbor_emit_fn emit, const void *arg,
                               uint8_t **out, size_t *out_len) {
  size_t cap = 4096;
  for (;;) {
    uint8_t *buf = malloc(cap), *scratch = malloc(cap * 4);
    tl_arena arena;
    tl_cbor_writer w;
    tl_status st;
    size_t len = 0;
    if (buf == NULL || scratch == NULL) {
      free(buf);
      free(scratch);
      return TL_ERR_OUT_OF_MEMORY;
    }
    tl_arena_init(&arena, scratch, cap * 4);
    tl_cbor_writer_init(&w, buf, cap, &arena);
    emit(&w, arg);
    st = tl_cbor_writer_finish(&w, &len);
    free(scratch);
    if (st == TL_OK) {
      *out = buf;
      *out_len = len;
      return TL_OK;
    }
    free(buf);
    if ((st != TL_ERR_BOUNDS && st != TL_ERR_OUT_OF_MEMORY) || cap > (1u << 28))
      return st;
    cap *= 4;
  }
}

void tl_cbor_put_float_text(tl_cbor_writer *w, double d) {
  char buf[64];
  tl_json_out o = tl_json_out_make((uint8_t *)buf, sizeof buf);
  tl_py_float_repr(d, &o);
  tl_cbor_put_text(w, buf, o.len);
}

void tl_cbor_put_json(tl_cbor_writer *w, const json_t *v) {
  switch (json_typeof(v)) {
    case JSON_NULL:
      tl_cbor_put_null(w);
      break;
    case JSON_TRUE:
      tl_cbor_put_bool(w, true);
      break;
    case JSON_FALSE:
      tl_cbor_put_bool(w, false);
      break;
    case JSON_INTEGER:
      tl_cbor_put_int(w, (int64_t)json_integer_value(v));
      break;
    case JSON_REAL:
      tl_cbor_put_float_text(w, json_real_value(v));
      break;
    case JSON_STRING:
      tl_cbor_put_text(w, json_string_value(v), json_string_length(v));
      break;
    case JSON_ARRAY: {
      size_t i;
      json_t *item;
      tl_cbor_begin_array(w, json_array_size(v));
      json_array_foreach(v, i, item) tl_cbor_put_json(w, item);
      tl_cbor_end_array(w);
      break;
    }
    case JSON_OBJECT: {
      const char *key;
      json_t *item;
      tl_cbor_begin_map(w, json_object_size(v));
      json_object_foreach((json_t *)v, key, item) {
        tl_cbor_put_cstr(w, key);
        tl_cbor_put_json(w, item);
      }
      tl_cbor_end_map(w);
      break;
    }
  }
}

void tl_cbor_put_u32s(tl_cbor_writer *w, const uint32_t *ids, size_t n) {
  tl_cbor_begin_array(w, n);
  for (size_t i = 0; i < n; i++) tl_cbor_put_uint(w, ids[i]);
  tl_cbor_end_array(w);
}

void tl_cbor_put_cstr(tl_cbor_writer *w, const char *s) {
  tl_cbor_put_text(w, s, strlen(s));
}

static json_t *read_value(tl_cbor_reader *r) {
  tl_cbor_item it;
  json_t *v;
  if (tl_cbor_read(r, &it) != TL_OK) return NULL;
  switch (it.type) {
    case TL_CBOR_UINT:
      return it.value > (uint64_t)INT64_MAX ? NULL
                                            : json_integer((json_int_t)it.value);
    case TL_CBOR_NEGINT:
      return it.value > (uint64_t)INT64_MAX
                 ? NULL
                 : json_integer(-1 - (json_int_t)it.value);
    case TL_CBOR_TEXT:
      return json_stringn((const char *)it.data, it.len);
    case TL_CBOR_BYTES: {
      static const char hex[] = "0123456789abcdef";
      char *s = malloc(2 * it.len + 1);
      if (s == NULL) return NULL;
      for (size_t i = 0; i < it.len; i++) {
        s[2 * i] = hex[it.data[i] >> 4];
        s[2 * i + 1] = hex[it.data[i] & 15];
      }
      v = json_stringn(s, 2 * it.len);
      free(s);
      return v;
    }
    case TL_CBOR_BOOL:
      return json_boolean(it.value != 0);
    case TL_CBOR_NULL:
      return json_null();
    case TL_CBOR_ARRAY:
      v = json_array();
      for (size_t i = 0; v != NULL && i < it.len; i++) {
        json_t *item = read_value(r);
        if (item == NULL || json_array_append_new(v, item) != 0) {
          json_decref(v);
          v = NULL;
        }
      }
      return v;
    case TL_CBOR_MAP:
      v = json_object();
      for (size_t i = 0; v != NULL && i < it.len; i++) {
        tl_cbor_item key;
        json_t *item;
        char *k;
        if (tl_cbor_read(r, &key) != TL_OK || key.type != TL_CBOR_TEXT ||
            (k = strndup((const char *)key.data, key.len)) == NULL) {
          json_decref(v);
          return NULL;
        }
        item = read_value(r);
        if (item == NULL || json_object_set_new(v, k, item) != 0) {
          json_decref(v);
          v = NULL;
        }
        free(k);
      }
      return v;
    case TL_CBOR_TAG:
      return NULL;
  }
  return NULL;
}

json_t *tl_cbor_to_json(const uint8_t *doc, size_t len) {
  tl_cbor_reader r;
  json_t *v;
  if (tl_cbor_reader_init(&r, doc, len, NULL) != TL_OK) return NULL;
  v = read_value(&r);
  if (v != NULL && tl_cbor_reader_finish(&r) != TL_OK) {
    json_decref(v);
    v = NULL;
  }
  return v;
}
