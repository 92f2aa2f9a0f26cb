/* The CBOR document reader (cbor_doc.h): every integer CBOR can hold
 * (-2^64 .. 2^64-1) comes out exact, keys keep their U+0000, and what JSON
 * cannot show is a typed error, never a NULL used later (issues 11.1,
 * 17.2). Inputs are hand-encoded per RFC 8949 §3.1. */
#include "cbor_doc.h"

#include <stdlib.h>
#include <string.h>

#include "tl_test.h"

static json_t *convert(tl_test_ctx *t, const uint8_t *d, size_t n) {
  json_t *v = NULL;
  char err[128];
  TL_EXPECT_OK(t, tl_cbor_to_json(d, n, &v, err, sizeof err));
  return v;
}

static void expect_big(tl_test_ctx *t, const uint8_t d[9],
                       const char *decimal) {
  json_t *v = convert(t, d, 9);
  TL_EXPECT(t, json_is_object(v) && json_object_size(v) == 1);
  TL_EXPECT_STR(t, json_string_value(json_object_get(v, "integer")), decimal);
  json_decref(v);
}

static void integers_outside_int64_are_exact(tl_test_ctx *t) {
  static const uint8_t two63[9] = {0x1b, 0x80, 0, 0, 0, 0, 0, 0, 0};
  static const uint8_t max[9] = {0x1b, 0xff, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff};
  /* -1 - n for n = 2^63, 2^63 + 1 (a carry), 2^63 + 8, 2^64 - 1. */
  static const uint8_t n63[9] = {0x3b, 0x80, 0, 0, 0, 0, 0, 0, 0};
  static const uint8_t n63p1[9] = {0x3b, 0x80, 0, 0, 0, 0, 0, 0, 1};
  static const uint8_t n63p8[9] = {0x3b, 0x80, 0, 0, 0, 0, 0, 0, 8};
  static const uint8_t nmin[9] = {0x3b, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff};
  uint64_t u = 0;
  json_t *v;
  expect_big(t, two63, "9223372036854775808");
  expect_big(t, max, "18446744073709551615");
  expect_big(t, n63, "-9223372036854775809");
  expect_big(t, n63p1, "-9223372036854775810");
  expect_big(t, n63p8, "-9223372036854775817");
  expect_big(t, nmin, "-18446744073709551616");
  v = convert(t, max, 9);
  TL_EXPECT(t, tl_json_u64(v, &u));
  TL_EXPECT_EQ_U64(t, u, UINT64_MAX);
  json_decref(v);
  v = convert(t, two63, 9);
  TL_EXPECT(t, tl_json_u64(v, &u));
  TL_EXPECT_EQ_U64(t, u, (uint64_t)1 << 63);
  json_decref(v);
  v = convert(t, nmin, 9);
  TL_EXPECT(t, !tl_json_u64(v, &u));
  json_decref(v);
}

static void int64_stays_a_json_integer(tl_test_ctx *t) {
  static const uint8_t max[9] = {0x1b, 0x7f, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff};
  static const uint8_t min[9] = {0x3b, 0x7f, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff};
  static const uint8_t minus_one[1] = {0x20};
  uint64_t u = 0;
  json_t *v = convert(t, max, 9);
  TL_EXPECT(t, json_is_integer(v) && json_integer_value(v) == INT64_MAX);
  TL_EXPECT(t, tl_json_u64(v, &u) && u == INT64_MAX);
  json_decref(v);
  v = convert(t, min, 9);
  TL_EXPECT(t, json_is_integer(v) && json_integer_value(v) == INT64_MIN);
  json_decref(v);
  v = convert(t, minus_one, 1);
  TL_EXPECT(t, json_is_integer(v) && json_integer_value(v) == -1);
  TL_EXPECT(t, !tl_json_u64(v, &u));
  json_decref(v);
}

static void keys_keep_their_nul(tl_test_ctx *t) {
  /* {"a": 1, "a\0b": 2}: two keys, never one "a" shown as 2. */
  static const uint8_t d[] = {0xa2, 0x61, 'a', 0x01, 0x63, 'a', 0, 'b', 0x02};
  json_t *v = convert(t, d, sizeof d);
  TL_EXPECT(t, json_object_size(v) == 2);
  TL_EXPECT(t, json_integer_value(json_object_get(v, "a")) == 1);
  TL_EXPECT(t, json_integer_value(json_object_getn(v, "a\0b", 3)) == 2);
  json_decref(v);
}

static void bytes_are_hex(tl_test_ctx *t) {
  static const uint8_t d[] = {0x42, 0x00, 0xff};
  json_t *v = convert(t, d, sizeof d);
  TL_EXPECT_STR(t, json_string_value(v), "00ff");
  json_decref(v);
}

static void refusals_are_typed(tl_test_ctx *t) {
  static const uint8_t int_key[] = {0xa1, 0x01, 0x02};      /* {1: 2} */
  static const uint8_t nested[] = {0x81, 0xa1, 0xf6, 0x00}; /* [{null: 0}] */
  static const uint8_t truncated[] = {0x19, 0x01}; /* a uint16 head, one byte */
  static const uint8_t tag[] = {0xc0, 0x00};
  static const uint8_t trailing[] = {0x01, 0x02};
  json_t *v = NULL;
  char err[128];
  TL_EXPECT_STATUS(
      t, tl_cbor_to_json(int_key, sizeof int_key, &v, err, sizeof err),
      TL_ERR_UNSUPPORTED_FEATURE);
  TL_EXPECT(t, v == NULL && strstr(err, "not text at byte 1") != NULL);
  TL_EXPECT_STATUS(t,
                   tl_cbor_to_json(nested, sizeof nested, &v, err, sizeof err),
                   TL_ERR_UNSUPPORTED_FEATURE);
  TL_EXPECT(t, v == NULL && strstr(err, "byte 2") != NULL);
  TL_EXPECT_STATUS(
      t, tl_cbor_to_json(truncated, sizeof truncated, &v, err, sizeof err),
      TL_ERR_INVALID_CBOR);
  TL_EXPECT(t, v == NULL && strstr(err, "truncated at byte 0") != NULL);
  TL_EXPECT_STATUS(t, tl_cbor_to_json(tag, sizeof tag, &v, err, sizeof err),
                   TL_ERR_INVALID_CBOR);
  TL_EXPECT(t, v == NULL && strstr(err, "disallowed_tag at byte 0") != NULL);
  TL_EXPECT_STATUS(
      t, tl_cbor_to_json(trailing, sizeof trailing, &v, err, sizeof err),
      TL_ERR_INVALID_CBOR);
  TL_EXPECT(t, v == NULL && strstr(err, "trailing") != NULL);
}

static void emit_json(tl_cbor_writer *w, const void *arg) {
  tl_cbor_put_json(w, arg);
}

static void json_keys_with_nul_round_trip(tl_test_ctx *t) {
  /* {"a\0b": 2, "a": 1} as CBOR: the encoded keys, sorted bytewise. */
  static const uint8_t want[] = {0xa2, 0x61, 'a', 0x01, 0x63,
                                 'a',  0,    'b', 0x02};
  json_t *o = json_object(), *back = NULL;
  uint8_t *doc = NULL;
  size_t len = 0;
  char err[128];
  json_object_setn_new(o, "a\0b", 3, json_integer(2));
  json_object_set_new(o, "a", json_integer(1));
  TL_EXPECT_OK(t, tl_cbor_encode_alloc(emit_json, o, &doc, &len));
  TL_EXPECT(t, len == sizeof want && memcmp(doc, want, len) == 0);
  TL_EXPECT_OK(t, tl_cbor_to_json(doc, len, &back, err, sizeof err));
  /* json_equal looks keys up as C strings: compare by length here. */
  TL_EXPECT(t, json_object_size(back) == 2);
  TL_EXPECT(t, json_integer_value(json_object_getn(back, "a\0b", 3)) == 2);
  TL_EXPECT(t, json_integer_value(json_object_get(back, "a")) == 1);
  json_decref(o);
  json_decref(back);
  free(doc);
}

static const tl_test_case cases[] = {
    TL_CASE(integers_outside_int64_are_exact),
    TL_CASE(int64_stays_a_json_integer),
    TL_CASE(keys_keep_their_nul),
    TL_CASE(bytes_are_hex),
    TL_CASE(refusals_are_typed),
    TL_CASE(json_keys_with_nul_round_trip),
};
TL_SUITE(cbor_doc, cases);
