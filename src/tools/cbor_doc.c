#include "cbor_doc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "json/json.h"

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
      size_t key_len;
      json_t *item;
      tl_cbor_begin_map(w, json_object_size(v));
      /* Keys by their length: one may hold U+0000 (tl_cbor_to_json). */
      json_object_keylen_foreach((json_t *)v, key, key_len, item) {
        tl_cbor_put_text(w, key, key_len);
        tl_cbor_put_json(w, item);
      }
      tl_cbor_end_map(w);
      break;
    }
  }
}

/* The reading state: the first failure is kept with its detail. */
typedef struct doc_reader {
  tl_cbor_reader r;
  tl_status st;
  char *err;
  size_t err_cap;
} doc_reader;

static json_t *fail(doc_reader *d, tl_status st, size_t offset,
                    const char *what) {
  if (d->st == TL_OK) {
    d->st = st;
    snprintf(d->err, d->err_cap, "%s at byte %zu", what, offset);
  }
  return NULL;
}

static json_t *out_of_memory(doc_reader *d, size_t offset) {
  return fail(d, TL_ERR_OUT_OF_MEMORY, offset, "out of memory");
}

#define BIG_KEY "integer"

/* An integer outside int64: {"integer": "<decimal>"}. negative: the value
 * is -1 - n (so -2^64 for n = 2^64 - 1). */
static json_t *big_integer(uint64_t n, bool negative) {
  char digits[24], text[24];
  size_t len = (size_t)snprintf(digits, sizeof digits, "%" PRIu64, n);
  size_t i = len;
  if (negative) { /* |-1 - n| = n + 1, in decimal (it may gain a digit) */
    while (i > 0 && digits[i - 1] == '9') digits[--i] = '0';
    if (i > 0) {
      digits[i - 1]++;
    } else {
      memmove(digits + 1, digits, len + 1);
      digits[0] = '1';
      len++;
    }
  }
  snprintf(text, sizeof text, "%s%s", negative ? "-" : "", digits);
  return json_pack("{s:s}", BIG_KEY, text);
}

bool tl_json_u64(const json_t *v, uint64_t *out) {
  const char *s;
  uint64_t x = 0;
  if (json_is_integer(v)) {
    if (json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
  }
  if (!json_is_object(v) || json_object_size(v) != 1 ||
      (s = json_string_value(json_object_get(v, BIG_KEY))) == NULL ||
      *s == '\0')
    return false;
  for (; *s != '\0'; s++) { /* only this file writes the form: digits */
    unsigned digit = (unsigned)(*s - '0');
    if (digit > 9 || x > (UINT64_MAX - digit) / 10) return false;
    x = x * 10 + digit;
  }
  *out = x;
  return true;
}

static json_t *hex_text(const uint8_t *p, size_t n) {
  static const char hex[] = "0123456789abcdef";
  char *s = malloc(2 * n + 1);
  json_t *v;
  if (s == NULL) return NULL;
  for (size_t i = 0; i < n; i++) {
    s[2 * i] = hex[p[i] >> 4];
    s[2 * i + 1] = hex[p[i] & 15];
  }
  v = json_stringn(s, 2 * n);
  free(s);
  return v;
}

static json_t *read_value(doc_reader *d) {
  tl_cbor_item it;
  json_t *v = NULL;
  if (tl_cbor_read(&d->r, &it) != TL_OK)
    return fail(d, TL_ERR_INVALID_CBOR, d->r.fault.offset,
                tl_cbor_fault_name(d->r.fault.kind));
  switch (it.type) {
    case TL_CBOR_UINT:
      v = it.value > (uint64_t)INT64_MAX ? big_integer(it.value, false)
                                         : json_integer((json_int_t)it.value);
      break;
    case TL_CBOR_NEGINT:
      v = it.value > (uint64_t)INT64_MAX
              ? big_integer(it.value, true)
              : json_integer(-1 - (json_int_t)it.value);
      break;
    case TL_CBOR_TEXT:
      v = json_stringn((const char *)it.data, it.len);
      break;
    case TL_CBOR_BYTES:
      v = hex_text(it.data, it.len);
      break;
    case TL_CBOR_BOOL:
      v = json_boolean(it.value != 0);
      break;
    case TL_CBOR_NULL:
      v = json_null();
      break;
    case TL_CBOR_ARRAY:
      if ((v = json_array()) == NULL) break;
      for (size_t i = 0; i < it.len; i++) {
        json_t *item = read_value(d);
        if (item == NULL || json_array_append_new(v, item) != 0) {
          json_decref(v);
          return item == NULL ? NULL : out_of_memory(d, it.offset);
        }
      }
      return v;
    case TL_CBOR_MAP:
      if ((v = json_object()) == NULL) break;
      for (size_t i = 0; i < it.len; i++) {
        tl_cbor_item key;
        json_t *item;
        if (tl_cbor_read(&d->r, &key) != TL_OK) {
          json_decref(v);
          return fail(d, TL_ERR_INVALID_CBOR, d->r.fault.offset,
                      tl_cbor_fault_name(d->r.fault.kind));
        }
        if (key.type != TL_CBOR_TEXT) {
          json_decref(v);
          return fail(d, TL_ERR_UNSUPPORTED_FEATURE, key.offset,
                      "a map key that is not text");
        }
        item = read_value(d);
        /* The key's full length: text may hold U+0000. The reader has
         * already refused equal keys. */
        if (item == NULL || json_object_setn_new(v, (const char *)key.data,
                                                 key.len, item) != 0) {
          json_decref(v);
          return item == NULL ? NULL : out_of_memory(d, key.offset);
        }
      }
      return v;
    case TL_CBOR_TAG:
      return fail(d, TL_ERR_UNSUPPORTED_FEATURE, it.offset, "a tag");
  }
  return v != NULL ? v : out_of_memory(d, it.offset);
}

tl_status tl_cbor_to_json(const uint8_t *doc, size_t len, json_t **out,
                          char *err, size_t err_cap) {
  doc_reader d = {.st = TL_OK, .err = err, .err_cap = err_cap};
  json_t *v;
  *out = NULL;
  if (err_cap > 0) err[0] = '\0';
  if (tl_cbor_reader_init(&d.r, doc, len, NULL) != TL_OK) {
    fail(&d, TL_ERR_INVALID_ARGUMENT, 0, "no document");
    return d.st;
  }
  v = read_value(&d);
  if (v != NULL && tl_cbor_reader_finish(&d.r) != TL_OK) {
    json_decref(v);
    v = fail(&d, TL_ERR_INVALID_CBOR, d.r.fault.offset,
             tl_cbor_fault_name(d.r.fault.kind));
  }
  *out = v;
  return d.st;
}

json_t *tl_json_node_meta(const json_t *doc, const char *type) {
  size_t i;
  json_t *n;
  json_array_foreach(json_object_get(doc, "nodes"), i, n) {
    const char *t = json_string_value(json_object_get(n, "type"));
    if (t != NULL && strcmp(t, type) == 0) return json_object_get(n, "metadata");
  }
  return NULL;
}
