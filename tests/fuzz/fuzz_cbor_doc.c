/* libFuzzer target for the converter-side CBOR document reader
 * (src/tools/cbor_doc.c, tl_cbor_to_json), which renders untrusted CBOR
 * (receipts, .slm metadata) as JSON. For any bytes:
 *
 *  - the status is typed and agrees with the core validator: a valid
 *    document converts unless a map key is not text
 *    (unsupported_feature); an invalid one is invalid_cbor (or
 *    unsupported_feature when a non-text key comes before the fault);
 *    err is set whenever the status is not TL_OK, and no value is handed
 *    back then;
 *  - a converted value equals the document item by item, walked again
 *    with the strict reader: every integer exactly (int64 as JSON
 *    integers, the rest as {"integer": "<decimal>"} with the decimal
 *    computed here independently, and tl_json_u64 gives unsigned ones
 *    back), text byte for byte (U+0000 included, in keys too), bytes as
 *    lower-case hex, container sizes;
 *  - jansson can print it. */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/tools/cbor_doc.c"
#include "../../src/host/cbor_alloc.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static void check_big(const json_t *v, const char *decimal) {
  CHECK(json_is_object(v) && json_object_size(v) == 1);
  CHECK(strcmp(json_string_value(json_object_get(v, "integer")), decimal) == 0);
}

/* The value v must equal the reader's next item. */
static void same(tl_cbor_reader *r, const json_t *v) {
  tl_cbor_item it;
  char dec[32];
  uint64_t u;
  CHECK(tl_cbor_read(r, &it) == TL_OK);
  switch (it.type) {
    case TL_CBOR_UINT:
      if (it.value <= (uint64_t)INT64_MAX) {
        CHECK(json_is_integer(v) &&
              (uint64_t)json_integer_value(v) == it.value);
      } else {
        snprintf(dec, sizeof dec, "%" PRIu64, it.value);
        check_big(v, dec);
      }
      CHECK(tl_json_u64(v, &u) && u == it.value);
      break;
    case TL_CBOR_NEGINT: /* -1 - n */
      if (it.value <= (uint64_t)INT64_MAX) {
        CHECK(json_is_integer(v) &&
              json_integer_value(v) == -1 - (int64_t)it.value);
      } else if (it.value == UINT64_MAX) {
        check_big(v, "-18446744073709551616");
      } else {
        snprintf(dec, sizeof dec, "-%" PRIu64, it.value + 1);
        check_big(v, dec);
      }
      CHECK(!tl_json_u64(v, &u));
      break;
    case TL_CBOR_TEXT:
      CHECK(json_is_string(v) && json_string_length(v) == it.len &&
            memcmp(json_string_value(v), it.data, it.len) == 0);
      break;
    case TL_CBOR_BYTES:
      CHECK(json_is_string(v) && json_string_length(v) == 2 * it.len);
      for (size_t i = 0; i < it.len; i++) {
        char hex[3];
        snprintf(hex, sizeof hex, "%02x", it.data[i]);
        CHECK(memcmp(json_string_value(v) + 2 * i, hex, 2) == 0);
      }
      break;
    case TL_CBOR_BOOL:
      CHECK(json_is_boolean(v) && json_is_true(v) == (it.value != 0));
      break;
    case TL_CBOR_NULL:
      CHECK(json_is_null(v));
      break;
    case TL_CBOR_ARRAY:
      CHECK(json_is_array(v) && json_array_size(v) == it.len);
      for (size_t i = 0; i < it.len; i++) same(r, json_array_get(v, i));
      break;
    case TL_CBOR_MAP:
      CHECK(json_is_object(v) && json_object_size(v) == it.len);
      for (size_t i = 0; i < it.len; i++) {
        tl_cbor_item key;
        const json_t *item;
        CHECK(tl_cbor_read(r, &key) == TL_OK && key.type == TL_CBOR_TEXT);
        item = json_object_getn(v, (const char *)key.data, key.len);
        CHECK(item != NULL);
        same(r, item);
      }
      break;
    case TL_CBOR_TAG:
      CHECK(false); /* never allowed by the default limits */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[256];
  json_t *v = (json_t *)1;
  tl_status valid = tl_cbor_validate(data, size, NULL, NULL);
  tl_status st = tl_cbor_to_json(data, size, &v, err, sizeof err);
  if (st != TL_OK) {
    CHECK(v == NULL && err[0] != '\0');
    CHECK(st == TL_ERR_UNSUPPORTED_FEATURE ||
          (st == TL_ERR_INVALID_CBOR && valid != TL_OK));
    return 0;
  }
  CHECK(valid == TL_OK && v != NULL);
  {
    tl_cbor_reader r;
    char *text;
    CHECK(tl_cbor_reader_init(&r, data, size, NULL) == TL_OK);
    same(&r, v);
    CHECK(tl_cbor_reader_finish(&r) == TL_OK);
    text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    CHECK(text != NULL);
    free(text);
  }
  json_decref(v);
  return 0;
}
