/* The CBOR profile (docs/cbor.md): RFC 8949 Appendix A examples that are in
 * the profile, byte-exact both ways; one minimal hostile input per fault
 * kind with its offset; the writer's map order, conflicts, limits and
 * behaviour under arena exhaustion. tests/diff/cbor_diff.py checks the same
 * code against Python cbor2 on thousands of random documents. */
#include "cbor/cbor.h"

#include <string.h>

#include "tl_test.h"

#define DOC_CAP 512

/* ------------------------------------------------------------------------ */
/* helpers                                                                  */

/* tl_test_unhex, with spaces allowed between bytes for readability. */
static size_t unhex_spaced(const char *hex, uint8_t *out, size_t cap) {
  char clean[2 * DOC_CAP + 1];
  size_t k = 0;
  for (size_t i = 0; hex[i] != '\0' && k < sizeof clean - 1; i++)
    if (hex[i] != ' ') clean[k++] = hex[i];
  clean[k] = '\0';
  return tl_test_unhex(clean, out, cap);
}

static bool expect_hex(tl_test_ctx *t, const uint8_t *got, size_t len,
                       const char *hex) {
  uint8_t want[DOC_CAP];
  size_t n = unhex_spaced(hex, want, sizeof want);
  if (!TL_EXPECT(t, n != SIZE_MAX)) return false;
  if (TL_EXPECT_EQ_U64(t, len, n) && TL_EXPECT_MEM(t, got, want, n))
    return true;
  tl_test_print(t, "    got  ");
  tl_test_print_hex(t, got, len);
  tl_test_print(t, "\n    want ");
  tl_test_print(t, hex);
  tl_test_print(t, "\n");
  return false;
}

static tl_cbor_limits tags_limits(const uint64_t *tags, size_t n) {
  tl_cbor_limits l = tl_cbor_limits_default();
  for (size_t i = 0; i < n; i++) l.allowed_tags[i] = tags[i];
  l.n_allowed_tags = n;
  return l;
}

/* Decodes hex strictly and re-encodes it through the writer: valid input
 * must come back byte for byte (CBOR-13: one encoding per value). */
static bool recode_is_identity(tl_test_ctx *t, const char *hex,
                               const tl_cbor_limits *limits) {
  uint8_t in[DOC_CAP], out[DOC_CAP], mem[4096];
  tl_arena arena;
  tl_cbor_reader r;
  tl_cbor_writer w;
  tl_cbor_fault fault;
  size_t n = unhex_spaced(hex, in, sizeof in), len = 0;
  if (!TL_EXPECT(t, n != SIZE_MAX)) return false;
  if (!TL_EXPECT_OK(t, tl_cbor_validate(in, n, limits, &fault))) {
    tl_test_print(t, hex);
    tl_test_print(t, " rejected: ");
    tl_test_print(t, tl_cbor_fault_name(fault.kind));
    tl_test_print(t, "\n");
    return false;
  }
  TL_EXPECT_OK(t, tl_arena_init(&arena, mem, sizeof mem));
  TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, n, limits));
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, out, sizeof out, &arena));
  if (!TL_EXPECT_OK(t, tl_cbor_copy_item(&r, &w)) ||
      !TL_EXPECT_OK(t, tl_cbor_reader_finish(&r)) ||
      !TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len)))
    return false;
  TL_EXPECT_EQ_U64(t, arena.used, 0);
  return expect_hex(t, out, len, hex);
}

/* ------------------------------------------------------------------------ */
/* RFC 8949 Appendix A                                                      */

typedef struct int_case {
  bool negative; /* the integer is -1 - n */
  uint64_t n;
  const char *hex;
} int_case;

static const int_case appendix_a_ints[] = {
    {false, 0, "00"},
    {false, 1, "01"},
    {false, 10, "0a"},
    {false, 23, "17"},
    {false, 24, "1818"},
    {false, 25, "1819"},
    {false, 100, "1864"},
    {false, 255, "18ff"},
    {false, 256, "190100"},
    {false, 1000, "1903e8"},
    {false, 65535, "19ffff"},
    {false, 65536, "1a00010000"},
    {false, 1000000, "1a000f4240"},
    {false, 0xFFFFFFFFu, "1affffffff"},
    {false, UINT64_C(0x100000000), "1b0000000100000000"},
    {false, UINT64_C(1000000000000), "1b000000e8d4a51000"},
    {false, UINT64_MAX, "1bffffffffffffffff"},
    {true, 0, "20"},                                   /* -1 */
    {true, 9, "29"},                                   /* -10 */
    {true, 23, "37"},                                  /* -24 */
    {true, 24, "3818"},                                /* -25 */
    {true, 99, "3863"},                                /* -100 */
    {true, 999, "3903e7"},                             /* -1000 */
    {true, UINT64_MAX, "3bffffffffffffffff"},          /* -2^64 */
    {true, (uint64_t)INT64_MAX, "3b7fffffffffffffff"}, /* -2^63 */
};

/* CBOR-2, CBOR-11 */
static void appendix_a_integers(tl_test_ctx *t) {
  for (size_t i = 0; i < sizeof appendix_a_ints / sizeof appendix_a_ints[0];
       i++) {
    const int_case *c = &appendix_a_ints[i];
    uint8_t buf[16], in[16];
    size_t len = 0, n = tl_test_unhex(c->hex, in, sizeof in);
    tl_cbor_writer w;
    tl_cbor_reader r;
    tl_cbor_item it;
    TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
    TL_EXPECT_OK(t, c->negative ? tl_cbor_put_negative(&w, c->n)
                                : tl_cbor_put_uint(&w, c->n));
    TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
    if (!expect_hex(t, buf, len, c->hex)) continue;
    TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, n, NULL));
    TL_EXPECT_OK(t, tl_cbor_read(&r, &it));
    TL_EXPECT_EQ_U64(t, it.type, c->negative ? TL_CBOR_NEGINT : TL_CBOR_UINT);
    TL_EXPECT_EQ_U64(t, it.value, c->n);
    TL_EXPECT_OK(t, tl_cbor_reader_finish(&r));
    /* put_int agrees wherever the value fits int64. */
    if (c->n <= (uint64_t)INT64_MAX) {
      int64_t v = c->negative ? -1 - (int64_t)c->n : (int64_t)c->n, back = 0;
      TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
      TL_EXPECT_OK(t, tl_cbor_put_int(&w, v));
      TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
      expect_hex(t, buf, len, c->hex);
      TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, n, NULL));
      TL_EXPECT_OK(t, tl_cbor_expect_int(&r, &back));
      TL_EXPECT_EQ_I64(t, back, v);
    }
  }
}

typedef struct string_case {
  bool text;
  const char *payload; /* bytes as written */
  size_t len;
  const char *hex;
} string_case;

static const string_case appendix_a_strings[] = {
    {false, "", 0, "40"},
    {false, "\x01\x02\x03\x04", 4, "4401020304"},
    {true, "", 0, "60"},
    {true, "a", 1, "6161"},
    {true, "IETF", 4, "6449455446"},
    {true, "\"\\", 2, "62225c"},
    {true, "\xc3\xbc", 2, "62c3bc"},             /* "\u00fc" */
    {true, "\xe6\xb0\xb4", 3, "63e6b0b4"},       /* "\u6c34" */
    {true, "\xf0\x90\x85\x91", 4, "64f0908591"}, /* "\ud800\udd51" */
    {true, "a\0b", 3, "63610062"},               /* U+0000 is text */
};

/* CBOR-7 */
static void appendix_a_strings_round_trip(tl_test_ctx *t) {
  for (size_t i = 0;
       i < sizeof appendix_a_strings / sizeof appendix_a_strings[0]; i++) {
    const string_case *c = &appendix_a_strings[i];
    uint8_t buf[16], in[16];
    size_t len = 0, n = tl_test_unhex(c->hex, in, sizeof in), got_len = 99;
    tl_cbor_writer w;
    tl_cbor_reader r;
    TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
    TL_EXPECT_OK(t, c->text ? tl_cbor_put_text(&w, c->payload, c->len)
                            : tl_cbor_put_bytes(&w, (const uint8_t *)c->payload,
                                                c->len));
    TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
    expect_hex(t, buf, len, c->hex);
    TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, n, NULL));
    if (c->text) {
      const char *s = NULL;
      TL_EXPECT_OK(t, tl_cbor_expect_text(&r, &s, &got_len));
      if (TL_EXPECT_EQ_U64(t, got_len, c->len) && c->len != 0)
        TL_EXPECT_MEM(t, s, c->payload, c->len);
    } else {
      const uint8_t *p = NULL;
      TL_EXPECT_OK(t, tl_cbor_expect_bytes(&r, &p, &got_len));
      if (TL_EXPECT_EQ_U64(t, got_len, c->len) && c->len != 0)
        TL_EXPECT_MEM(t, p, c->payload, c->len);
    }
    TL_EXPECT_OK(t, tl_cbor_reader_finish(&r));
  }
}

static void appendix_a_simple_values(tl_test_ctx *t) {
  uint8_t buf[4];
  size_t len;
  bool b = true;
  tl_cbor_writer w;
  tl_cbor_reader r;
  static const uint8_t f4 = 0xf4, f5 = 0xf5, f6 = 0xf6;
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  TL_EXPECT_OK(t, tl_cbor_put_bool(&w, false));
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "f4");
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  TL_EXPECT_OK(t, tl_cbor_put_bool(&w, true));
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "f5");
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  TL_EXPECT_OK(t, tl_cbor_put_null(&w));
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "f6");
  TL_EXPECT_OK(t, tl_cbor_reader_init(&r, &f4, 1, NULL));
  TL_EXPECT_OK(t, tl_cbor_expect_bool(&r, &b));
  TL_EXPECT(t, !b);
  TL_EXPECT_OK(t, tl_cbor_reader_init(&r, &f5, 1, NULL));
  TL_EXPECT_OK(t, tl_cbor_expect_bool(&r, &b));
  TL_EXPECT(t, b);
  TL_EXPECT_OK(t, tl_cbor_reader_init(&r, &f6, 1, NULL));
  TL_EXPECT_OK(t, tl_cbor_expect_null(&r));
  TL_EXPECT_OK(t, tl_cbor_reader_finish(&r));
}

/* Arrays, maps and nesting, written call by call. */
static void appendix_a_containers(tl_test_ctx *t) {
  uint8_t buf[DOC_CAP], mem[2048];
  size_t len = 0;
  tl_arena arena;
  tl_cbor_writer w;
  TL_EXPECT_OK(t, tl_arena_init(&arena, mem, sizeof mem));

  /* [] */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_array(&w, 0);
  tl_cbor_end_array(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "80");

  /* [1, [2, 3], [4, 5]] */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_array(&w, 3);
  tl_cbor_put_uint(&w, 1);
  tl_cbor_begin_array(&w, 2);
  tl_cbor_put_uint(&w, 2);
  tl_cbor_put_uint(&w, 3);
  tl_cbor_end_array(&w);
  tl_cbor_begin_array(&w, 2);
  tl_cbor_put_uint(&w, 4);
  tl_cbor_put_uint(&w, 5);
  tl_cbor_end_array(&w);
  tl_cbor_end_array(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "8301820203820405");

  /* [1, 2, ..., 25]: the count needs a one-byte argument */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_array(&w, 25);
  for (uint64_t i = 1; i <= 25; i++) tl_cbor_put_uint(&w, i);
  tl_cbor_end_array(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len,
             "98190102030405060708090a0b0c0d0e0f101112131415161718181819");

  /* {} */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_map(&w, 0);
  tl_cbor_end_map(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "a0");

  /* {1: 2, 3: 4}, written in reverse order */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_map(&w, 2);
  tl_cbor_put_uint(&w, 3);
  tl_cbor_put_uint(&w, 4);
  tl_cbor_put_uint(&w, 1);
  tl_cbor_put_uint(&w, 2);
  tl_cbor_end_map(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "a201020304");

  /* {"a": 1, "b": [2, 3]} */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_map(&w, 2);
  tl_cbor_put_text(&w, "b", 1);
  tl_cbor_begin_array(&w, 2);
  tl_cbor_put_uint(&w, 2);
  tl_cbor_put_uint(&w, 3);
  tl_cbor_end_array(&w);
  tl_cbor_put_text(&w, "a", 1);
  tl_cbor_put_uint(&w, 1);
  tl_cbor_end_map(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "a26161016162820203");

  /* ["a", {"b": "c"}] */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_array(&w, 2);
  tl_cbor_put_text(&w, "a", 1);
  tl_cbor_begin_map(&w, 1);
  tl_cbor_put_text(&w, "b", 1);
  tl_cbor_put_text(&w, "c", 1);
  tl_cbor_end_map(&w);
  tl_cbor_end_array(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "826161a161626163");

  /* {"a": "A", ..., "e": "E"}, written e..a */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_map(&w, 5);
  for (int i = 4; i >= 0; i--) {
    char k = (char)('a' + i), v = (char)('A' + i);
    tl_cbor_put_text(&w, &k, 1);
    tl_cbor_put_text(&w, &v, 1);
  }
  tl_cbor_end_map(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "a56161614161626142616361436164614461656145");
  TL_EXPECT_EQ_U64(t, arena.used, 0); /* scratch released by every map */
}

/* Every Appendix A example in the profile decodes and re-encodes to the
 * same bytes; the tagged ones need their tag allowed (CBOR-9). */
static void appendix_a_decode_and_reencode(tl_test_ctx *t) {
  static const char *const plain[] = {
      "00",
      "17",
      "1818",
      "190100",
      "1a000f4240",
      "1bffffffffffffffff",
      "3bffffffffffffffff",
      "20",
      "3903e7",
      "f4",
      "f5",
      "f6",
      "40",
      "4401020304",
      "60",
      "6449455446",
      "62c3bc",
      "63e6b0b4",
      "64f0908591",
      "80",
      "83010203",
      "8301820203820405",
      "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
      "a0",
      "a201020304",
      "a26161016162820203",
      "826161a161626163",
      "a56161614161626142616361436164614461656145"};
  static const char *const tagged[] = {
      "c11a514b67b0",     /* 1(1363896240) */
      "d74401020304",     /* 23(h'01020304') */
      "d818456449455446", /* 24(h'6449455446') */
      "d82076687474703a2f2f7777772e6578616d706c652e636f6d", /* 32(uri) */
  };
  static const uint64_t tags[] = {1, 23, 24, 32};
  tl_cbor_limits with_tags = tags_limits(tags, 4);
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
    recode_is_identity(t, plain[i], NULL);
  for (size_t i = 0; i < sizeof tagged / sizeof tagged[0]; i++) {
    uint8_t in[64];
    size_t n = tl_test_unhex(tagged[i], in, sizeof in);
    tl_cbor_fault f;
    recode_is_identity(t, tagged[i], &with_tags);
    TL_EXPECT_STATUS(t, tl_cbor_validate(in, n, NULL, &f), TL_ERR_INVALID_CBOR);
    TL_EXPECT_EQ_U64(t, f.kind, TL_CBOR_FAULT_TAG);
    TL_EXPECT_EQ_U64(t, f.offset, 0);
  }
}

/* ------------------------------------------------------------------------ */
/* rejection: one minimal hostile input per fault kind                      */

typedef struct reject_case {
  const char *req;
  const char *hex;
  uint32_t max_depth; /* 0: default */
  uint64_t allow_tag; /* 0: none */
  tl_cbor_fault_kind kind;
  size_t offset;
} reject_case;

static const reject_case rejects[] = {
    /* CBOR-1: truncated and trailing */
    {"CBOR-1", "", 0, 0, TL_CBOR_FAULT_TRUNCATED, 0},
    {"CBOR-1", "18", 0, 0, TL_CBOR_FAULT_TRUNCATED, 0},
    {"CBOR-1", "1901", 0, 0, TL_CBOR_FAULT_TRUNCATED, 0},
    {"CBOR-1", "1a000000", 0, 0, TL_CBOR_FAULT_TRUNCATED, 0},
    {"CBOR-1", "1b00000000000000", 0, 0, TL_CBOR_FAULT_TRUNCATED, 0},
    {"CBOR-1", "8201", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-1", "821a00010000", 0, 0, TL_CBOR_FAULT_TRUNCATED, 6},
    {"CBOR-1", "a11a00010000", 0, 0, TL_CBOR_FAULT_TRUNCATED, 6},
    {"CBOR-1", "8281010100", 0, 0, TL_CBOR_FAULT_TRAILING, 4},
    {"CBOR-1", "8159", 0, 0, TL_CBOR_FAULT_TRUNCATED, 1},
    {"CBOR-1", "c1", 0, 1, TL_CBOR_FAULT_TRUNCATED, 1},
    {"CBOR-1", "0000", 0, 0, TL_CBOR_FAULT_TRAILING, 1},
    {"CBOR-1", "80f6", 0, 0, TL_CBOR_FAULT_TRAILING, 1},
    {"CBOR-1", "a0ff", 0, 0, TL_CBOR_FAULT_TRAILING, 1},
    /* CBOR-2: non-shortest heads, in every major type that has them */
    {"CBOR-2", "1817", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "1900ff", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "1a0000ffff", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "1b00000000ffffffff", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "3800", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "5800", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "780161", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "9800", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "b800", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "d80100", 0, 1, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "d80100", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 0},
    {"CBOR-2", "82011900ff", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 2},
    /* CBOR-3: indefinite lengths and break */
    {"CBOR-3", "5f4100ff", 0, 0, TL_CBOR_FAULT_INDEFINITE, 0},
    {"CBOR-3", "7f6100ff", 0, 0, TL_CBOR_FAULT_INDEFINITE, 0},
    {"CBOR-3", "9fff", 0, 0, TL_CBOR_FAULT_INDEFINITE, 0},
    {"CBOR-3", "bfff", 0, 0, TL_CBOR_FAULT_INDEFINITE, 0},
    {"CBOR-3", "ff", 0, 0, TL_CBOR_FAULT_INDEFINITE, 0},
    {"CBOR-3", "1f", 0, 0, TL_CBOR_FAULT_INDEFINITE, 0},
    {"CBOR-3", "3f", 0, 0, TL_CBOR_FAULT_INDEFINITE, 0},
    {"CBOR-3", "df00", 0, 0, TL_CBOR_FAULT_INDEFINITE, 0},
    {"CBOR-3", "8201ff", 0, 0, TL_CBOR_FAULT_INDEFINITE, 2},
    /* CBOR-4: reserved additional information */
    {"CBOR-4", "1c", 0, 0, TL_CBOR_FAULT_RESERVED, 0},
    {"CBOR-4", "3d", 0, 0, TL_CBOR_FAULT_RESERVED, 0},
    {"CBOR-4", "5e", 0, 0, TL_CBOR_FAULT_RESERVED, 0},
    {"CBOR-4", "7c", 0, 0, TL_CBOR_FAULT_RESERVED, 0},
    {"CBOR-4", "9d", 0, 0, TL_CBOR_FAULT_RESERVED, 0},
    {"CBOR-4", "be", 0, 0, TL_CBOR_FAULT_RESERVED, 0},
    {"CBOR-4", "dc", 0, 0, TL_CBOR_FAULT_RESERVED, 0},
    {"CBOR-4", "fe", 0, 0, TL_CBOR_FAULT_RESERVED, 0},
    {"CBOR-4", "811c", 0, 0, TL_CBOR_FAULT_RESERVED, 1},
    /* CBOR-5: floats */
    {"CBOR-5", "f93c00", 0, 0, TL_CBOR_FAULT_SIMPLE, 0},
    {"CBOR-5", "fa47c35000", 0, 0, TL_CBOR_FAULT_SIMPLE, 0},
    {"CBOR-5", "fb3ff8000000000000", 0, 0, TL_CBOR_FAULT_SIMPLE, 0},
    {"CBOR-5", "f9", 0, 0, TL_CBOR_FAULT_SIMPLE, 0},
    {"CBOR-5", "f97e00", 0, 0, TL_CBOR_FAULT_SIMPLE, 0}, /* NaN */
    /* CBOR-6: simple values other than false/true/null */
    {"CBOR-6", "f7", 0, 0, TL_CBOR_FAULT_SIMPLE, 0}, /* undefined */
    {"CBOR-6", "e0", 0, 0, TL_CBOR_FAULT_SIMPLE, 0},
    {"CBOR-6", "f0", 0, 0, TL_CBOR_FAULT_SIMPLE, 0},
    {"CBOR-6", "f3", 0, 0, TL_CBOR_FAULT_SIMPLE, 0},
    {"CBOR-6", "f814", 0, 0, TL_CBOR_FAULT_SIMPLE, 0},
    {"CBOR-6", "f8ff", 0, 0, TL_CBOR_FAULT_SIMPLE, 0},
    /* CBOR-7: UTF-8; the offset is the bad byte's, in the document */
    {"CBOR-7", "62c328", 0, 0, TL_CBOR_FAULT_UTF8, 1},
    {"CBOR-7", "6461eda080", 0, 0, TL_CBOR_FAULT_UTF8, 2},
    {"CBOR-7", "8162c080", 0, 0, TL_CBOR_FAULT_UTF8, 2},
    {"CBOR-7", "6180", 0, 0, TL_CBOR_FAULT_UTF8, 1},
    {"CBOR-7", "64f4908080", 0, 0, TL_CBOR_FAULT_UTF8, 1},
    {"CBOR-7", "6261e2", 0, 0, TL_CBOR_FAULT_UTF8, 2},
    /* CBOR-8: key order and uniqueness */
    {"CBOR-8", "a202010102", 0, 0, TL_CBOR_FAULT_KEY_ORDER, 3},
    {"CBOR-8", "a2616200616100", 0, 0, TL_CBOR_FAULT_KEY_ORDER, 4},
    {"CBOR-8", "a2186400 0a00", 0, 0, TL_CBOR_FAULT_KEY_ORDER, 4},
    {"CBOR-8", "a26161001901 0000", 0, 0, TL_CBOR_FAULT_KEY_ORDER, 4},
    {"CBOR-8", "a2f400 0a00", 0, 0, TL_CBOR_FAULT_KEY_ORDER, 3},
    {"CBOR-8", "a28120008118 6400", 0, 0, TL_CBOR_FAULT_KEY_ORDER, 4},
    {"CBOR-8", "a20100 0101", 0, 0, TL_CBOR_FAULT_DUPLICATE_KEY, 3},
    {"CBOR-8", "a3010002000100", 0, 0, TL_CBOR_FAULT_KEY_ORDER, 5},
    {"CBOR-8", "a2810100 810100", 0, 0, TL_CBOR_FAULT_DUPLICATE_KEY, 4},
    {"CBOR-8", "a2a1010200 a1010200", 0, 0, TL_CBOR_FAULT_DUPLICATE_KEY, 5},
    {"CBOR-8", "a26161f6 6161f5", 0, 0, TL_CBOR_FAULT_DUPLICATE_KEY, 4},
    {"CBOR-8", "81a2 0000 0000", 0, 0, TL_CBOR_FAULT_DUPLICATE_KEY, 4},
    /* CBOR-9: tags */
    {"CBOR-9", "c101", 0, 0, TL_CBOR_FAULT_TAG, 0},
    {"CBOR-9", "c101", 0, 2, TL_CBOR_FAULT_TAG, 0},
    {"CBOR-9", "c24101", 0, 0, TL_CBOR_FAULT_TAG, 0},
    {"CBOR-9", "d9d9f700", 0, 0, TL_CBOR_FAULT_TAG, 0},
    {"CBOR-9", "8200c100", 0, 0, TL_CBOR_FAULT_TAG, 2},
    {"CBOR-9", "c1c200", 0, 1, TL_CBOR_FAULT_TAG, 1},
    /* CBOR-10: declared lengths larger than the input */
    {"CBOR-10", "5bffffffffffffffff", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-10", "7bffffffffffffffff", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-10", "9bffffffffffffffff", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-10", "bbffffffffffffffff", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-10", "bb7fffffffffffffff", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-10", "5a80000000", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-10", "9affffffff", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-10", "44010203", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-10", "a2010203", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    {"CBOR-10", "8181", 0, 0, TL_CBOR_FAULT_LENGTH, 1},
    /* ... counting the items open containers still owe */
    {"CBOR-10", "828100", 0, 0, TL_CBOR_FAULT_LENGTH, 1},
    {"CBOR-10", "a1a10102", 0, 0, TL_CBOR_FAULT_LENGTH, 1},
    {"CBOR-10", "8300824100", 0, 0, TL_CBOR_FAULT_LENGTH, 2},
    {"CBOR-10", "83004100", 0, 0, TL_CBOR_FAULT_LENGTH, 2},
    {"CBOR-10", "831a0001000040", 0, 0, TL_CBOR_FAULT_LENGTH, 6},
    {"CBOR-10", "83 81 81 00", 0, 0, TL_CBOR_FAULT_LENGTH, 1},
    {"CBOR-10", "8261", 0, 0, TL_CBOR_FAULT_LENGTH, 0},
    /* CBOR-12: depth, tags included */
    {"CBOR-12", "81818100", 2, 0, TL_CBOR_FAULT_DEPTH, 2},
    {"CBOR-12", "818180", 2, 0, TL_CBOR_FAULT_DEPTH, 2},
    {"CBOR-12", "81c100", 1, 1, TL_CBOR_FAULT_DEPTH, 1},
    {"CBOR-12", "a1 00 a100a000", 1, 0, TL_CBOR_FAULT_DEPTH, 2},
    /* CBOR-14: with several defects, the first in document order wins */
    {"CBOR-14", "82 1817 f7", 0, 0, TL_CBOR_FAULT_NON_SHORTEST, 1},
    {"CBOR-14", "a2 0100 0000 ff", 0, 0, TL_CBOR_FAULT_KEY_ORDER, 3},
};

static bool check_reject(tl_test_ctx *t, const reject_case *c,
                         const uint8_t *in, size_t n) {
  tl_cbor_limits l = tl_cbor_limits_default();
  tl_cbor_fault f;
  if (c->max_depth != 0) l.max_depth = c->max_depth;
  if (c->allow_tag != 0) {
    l.allowed_tags[0] = c->allow_tag;
    l.n_allowed_tags = 1;
  }
  if (TL_EXPECT_STATUS(t, tl_cbor_validate(in, n, &l, &f),
                       TL_ERR_INVALID_CBOR) &&
      TL_EXPECT_STR(t, tl_cbor_fault_name(f.kind),
                    tl_cbor_fault_name(c->kind)) &&
      TL_EXPECT_EQ_U64(t, f.offset, c->offset))
    return true;
  tl_test_print(t, "    ");
  tl_test_print(t, c->req);
  tl_test_print(t, " input ");
  tl_test_print(t, c->hex);
  tl_test_print(t, "\n");
  return false;
}

static void every_fault_kind_with_its_offset(tl_test_ctx *t) {
  for (size_t i = 0; i < sizeof rejects / sizeof rejects[0]; i++) {
    uint8_t in[DOC_CAP];
    size_t n = unhex_spaced(rejects[i].hex, in, sizeof in);
    if (!TL_EXPECT(t, n != SIZE_MAX)) continue;
    check_reject(t, &rejects[i], in, n);
  }
}

/* CBOR-12: 32 nested arrays pass, 33 fail at the 33rd head. */
static void depth_limit_at_the_boundary(tl_test_ctx *t) {
  uint8_t in[40];
  tl_cbor_fault f;
  memset(in, 0x81, sizeof in);
  in[32] = 0x00;
  TL_EXPECT_OK(t, tl_cbor_validate(in, 33, NULL, &f));
  TL_EXPECT_EQ_U64(t, f.kind, TL_CBOR_FAULT_NONE);
  in[32] = 0x80; /* an empty container still opens */
  TL_EXPECT_STATUS(t, tl_cbor_validate(in, 33, NULL, &f), TL_ERR_INVALID_CBOR);
  TL_EXPECT_EQ_U64(t, f.kind, TL_CBOR_FAULT_DEPTH);
  TL_EXPECT_EQ_U64(t, f.offset, 32);
  in[31] = 0x80;
  TL_EXPECT_OK(t, tl_cbor_validate(in, 32, NULL, &f));
  /* Tags count as containers. */
  memset(in, 0xc1, sizeof in);
  in[32] = 0x00;
  {
    static const uint64_t one = 1;
    tl_cbor_limits l = tags_limits(&one, 1);
    TL_EXPECT_OK(t, tl_cbor_validate(in, 33, &l, &f));
    in[32] = 0xc1;
    in[33] = 0x00;
    TL_EXPECT_STATUS(t, tl_cbor_validate(in, 34, &l, &f), TL_ERR_INVALID_CBOR);
    TL_EXPECT_EQ_U64(t, f.kind, TL_CBOR_FAULT_DEPTH);
    TL_EXPECT_EQ_U64(t, f.offset, 32);
  }
}

/* CBOR-10: huge declared lengths fail at the head, before anything is
 * touched; the reader has no allocator to exhaust. Also under a schema
 * helper and when the claimed count is just one too many. */
static void huge_declared_lengths(tl_test_ctx *t) {
  static const char *const heads[] = {
      "9bffffffffffffffff", "5bffffffffffffffff", "bb8000000000000000",
      "7b7fffffffffffffff", "9a7fffffff"};
  for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
    uint8_t in[16];
    size_t n = tl_test_unhex(heads[i], in, sizeof in), got = 7;
    tl_cbor_reader r;
    TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, n, NULL));
    TL_EXPECT_STATUS(t, tl_cbor_expect_array(&r, &got), TL_ERR_INVALID_CBOR);
    TL_EXPECT_EQ_U64(t, r.fault.kind, TL_CBOR_FAULT_LENGTH);
    TL_EXPECT_EQ_U64(t, r.pos, 0);
    TL_EXPECT_EQ_U64(t, got, 7);
  }
  {
    /* Exactly enough bytes for n items passes the head check. */
    uint8_t in[4] = {0x83, 0, 0, 0};
    tl_cbor_fault f;
    TL_EXPECT_OK(t, tl_cbor_validate(in, 4, NULL, &f));
    TL_EXPECT_STATUS(t, tl_cbor_validate(in, 3, NULL, &f), TL_ERR_INVALID_CBOR);
    TL_EXPECT_EQ_U64(t, f.kind, TL_CBOR_FAULT_LENGTH);
  }
}

/* CBOR-11: schema helpers range-check and type-check. */
static void schema_helpers_check_range_and_type(tl_test_ctx *t) {
  struct {
    const char *hex;
    int which; /* 0 uint, 1 int */
    tl_cbor_fault_kind kind;
  } cases_[] = {
      {"1b8000000000000000", 1, TL_CBOR_FAULT_INT_RANGE}, /* 2^63 */
      {"3b8000000000000000", 1, TL_CBOR_FAULT_INT_RANGE}, /* -2^63 - 1 */
      {"3bffffffffffffffff", 1, TL_CBOR_FAULT_INT_RANGE}, /* -2^64 */
      {"20", 0, TL_CBOR_FAULT_INT_RANGE},
      {"6161", 0, TL_CBOR_FAULT_TYPE},
      {"f6", 1, TL_CBOR_FAULT_TYPE},
      {"80", 1, TL_CBOR_FAULT_TYPE},
  };
  for (size_t i = 0; i < sizeof cases_ / sizeof cases_[0]; i++) {
    uint8_t in[16];
    size_t n = tl_test_unhex(cases_[i].hex, in, sizeof in);
    uint64_t u = 5;
    int64_t v = 5;
    tl_cbor_reader r;
    TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, n, NULL));
    TL_EXPECT_STATUS(t,
                     cases_[i].which == 0 ? tl_cbor_expect_uint(&r, &u)
                                          : tl_cbor_expect_int(&r, &v),
                     TL_ERR_INVALID_CBOR);
    TL_EXPECT_EQ_U64(t, r.fault.kind, cases_[i].kind);
    TL_EXPECT_EQ_U64(t, r.fault.offset, 0);
    TL_EXPECT(t, u == 5 && v == 5);
    /* sticky */
    TL_EXPECT_STATUS(t, tl_cbor_reader_finish(&r), TL_ERR_INVALID_CBOR);
    TL_EXPECT_EQ_U64(t, r.fault.kind, cases_[i].kind);
  }
  {
    uint8_t in[32];
    size_t n = tl_test_unhex("831b7fffffffffffffff3b7fffffffffffffffc100", in,
                             sizeof in),
           count = 0;
    int64_t a = 0, b = 0;
    uint64_t tag = 0, z = 9;
    static const uint64_t one = 1;
    tl_cbor_limits l = tags_limits(&one, 1);
    tl_cbor_reader r;
    TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, n, &l));
    TL_EXPECT_OK(t, tl_cbor_expect_array(&r, &count));
    TL_EXPECT_EQ_U64(t, count, 3);
    TL_EXPECT_OK(t, tl_cbor_expect_int(&r, &a));
    TL_EXPECT_OK(t, tl_cbor_expect_int(&r, &b));
    TL_EXPECT_EQ_I64(t, a, INT64_MAX);
    TL_EXPECT_EQ_I64(t, b, INT64_MIN);
    TL_EXPECT_OK(t, tl_cbor_expect_tag(&r, &tag));
    TL_EXPECT_EQ_U64(t, tag, 1);
    TL_EXPECT_OK(t, tl_cbor_expect_uint(&r, &z));
    TL_EXPECT_EQ_U64(t, z, 0);
    TL_EXPECT_OK(t, tl_cbor_reader_finish(&r));
  }
}

/* The pull reader's contract: document order, depth, peek, skip, the end
 * of the document, finish. */
static void reader_walks_a_document(tl_test_ctx *t) {
  uint8_t in[64];
  /* {"a": [1, {}], "b": h'00'} */
  tl_cbor_reader r;
  tl_cbor_item it;
  size_t pairs = 0, len = 0, n;
  const char *s = NULL;
  n = unhex_spaced("a2616182 01a0 616241 00", in, sizeof in);
  TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, n, NULL));
  TL_EXPECT_OK(t, tl_cbor_peek(&r, &it));
  TL_EXPECT_EQ_U64(t, it.type, TL_CBOR_MAP);
  TL_EXPECT_EQ_U64(t, r.pos, 0);
  TL_EXPECT_OK(t, tl_cbor_expect_map(&r, &pairs));
  TL_EXPECT_EQ_U64(t, pairs, 2);
  TL_EXPECT_EQ_U64(t, tl_cbor_reader_depth(&r), 1);
  TL_EXPECT_OK(t, tl_cbor_expect_text(&r, &s, &len));
  TL_EXPECT(t, len == 1 && s[0] == 'a');
  TL_EXPECT_OK(t, tl_cbor_skip(&r)); /* [1, {}] */
  TL_EXPECT_EQ_U64(t, r.pos, 6);
  TL_EXPECT_EQ_U64(t, tl_cbor_reader_depth(&r), 1);
  /* A schema decoder that stops early leaves items unread. */
  {
    tl_cbor_reader early = r;
    TL_EXPECT_STATUS(t, tl_cbor_reader_finish(&early), TL_ERR_INVALID_CBOR);
    TL_EXPECT_EQ_U64(t, early.fault.kind, TL_CBOR_FAULT_TRAILING);
    TL_EXPECT_EQ_U64(t, early.fault.offset, 6);
  }
  TL_EXPECT_OK(t, tl_cbor_read(&r, &it));
  TL_EXPECT_EQ_U64(t, it.type, TL_CBOR_TEXT);
  TL_EXPECT_EQ_U64(t, it.offset, 6);
  TL_EXPECT_OK(t, tl_cbor_read(&r, &it));
  TL_EXPECT_EQ_U64(t, it.type, TL_CBOR_BYTES);
  TL_EXPECT_EQ_U64(t, it.len, 1);
  TL_EXPECT(t, it.data == in + 9);
  TL_EXPECT_EQ_U64(t, tl_cbor_reader_depth(&r), 0);
  /* The document is complete: no more items, and that is not a fault. */
  TL_EXPECT_STATUS(t, tl_cbor_read(&r, &it), TL_ERR_BOUNDS);
  TL_EXPECT_STATUS(t, tl_cbor_peek(&r, &it), TL_ERR_BOUNDS);
  TL_EXPECT_OK(t, tl_cbor_reader_finish(&r));
  /* Unclosed containers at the end of the input: [65536, <missing>]. */
  {
    static const uint8_t cut[] = {0x82, 0x1a, 0x00, 0x01, 0x00, 0x00};
    uint64_t v = 0;
    TL_EXPECT_OK(t, tl_cbor_reader_init(&r, cut, sizeof cut, NULL));
    TL_EXPECT_OK(t, tl_cbor_expect_array(&r, &pairs));
    TL_EXPECT_OK(t, tl_cbor_expect_uint(&r, &v));
    TL_EXPECT_STATUS(t, tl_cbor_reader_finish(&r), TL_ERR_INVALID_CBOR);
    TL_EXPECT_EQ_U64(t, r.fault.kind, TL_CBOR_FAULT_TRUNCATED);
    TL_EXPECT_EQ_U64(t, r.fault.offset, 6);
  }
  /* Cut inside the map: the items it still owes do not fit (CBOR-10). */
  TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, 8, NULL));
  TL_EXPECT_OK(t, tl_cbor_expect_map(&r, &pairs));
  TL_EXPECT_OK(t, tl_cbor_skip(&r));
  TL_EXPECT_OK(t, tl_cbor_skip(&r));
  TL_EXPECT_STATUS(t, tl_cbor_read(&r, &it), TL_ERR_INVALID_CBOR);
  TL_EXPECT_EQ_U64(t, r.fault.kind, TL_CBOR_FAULT_LENGTH);
  TL_EXPECT_EQ_U64(t, r.fault.offset, 6);
  /* Read past a complete document with bytes after it: trailing. */
  TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in + 6, 3, NULL));
  TL_EXPECT_OK(t, tl_cbor_read(&r, &it));
  TL_EXPECT_STATUS(t, tl_cbor_read(&r, &it), TL_ERR_INVALID_CBOR);
  TL_EXPECT_EQ_U64(t, r.fault.kind, TL_CBOR_FAULT_TRAILING);
  TL_EXPECT_EQ_U64(t, r.fault.offset, 2);
}

/* A peeked fault is the reader's fault from then on (CBOR-14). */
static void peek_records_faults(tl_test_ctx *t) {
  static const uint8_t in[] = {0x82, 0x01, 0xf7};
  tl_cbor_reader r;
  tl_cbor_item it;
  TL_EXPECT_OK(t, tl_cbor_reader_init(&r, in, sizeof in, NULL));
  TL_EXPECT_OK(t, tl_cbor_read(&r, &it));
  TL_EXPECT_OK(t, tl_cbor_read(&r, &it));
  TL_EXPECT_STATUS(t, tl_cbor_peek(&r, &it), TL_ERR_INVALID_CBOR);
  TL_EXPECT_EQ_U64(t, r.fault.kind, TL_CBOR_FAULT_SIMPLE);
  TL_EXPECT_EQ_U64(t, r.fault.offset, 2);
  TL_EXPECT_STATUS(t, tl_cbor_read(&r, &it), TL_ERR_INVALID_CBOR);
}

static void bad_reader_arguments(tl_test_ctx *t) {
  tl_cbor_reader r;
  tl_cbor_limits l = tl_cbor_limits_default();
  tl_cbor_item it;
  tl_cbor_fault f;
  uint8_t b = 0;
  TL_EXPECT_STATUS(t, tl_cbor_reader_init(&r, NULL, 1, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  l.max_depth = TL_CBOR_MAX_DEPTH + 1;
  TL_EXPECT_STATUS(t, tl_cbor_reader_init(&r, &b, 1, &l),
                   TL_ERR_INVALID_ARGUMENT);
  l = tl_cbor_limits_default();
  l.n_allowed_tags = TL_CBOR_MAX_ALLOWED_TAGS + 1;
  TL_EXPECT_STATUS(t, tl_cbor_validate(&b, 1, &l, &f), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_cbor_reader_init(&r, &b, 1, NULL));
  TL_EXPECT_STATUS(t, tl_cbor_read(&r, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_cbor_read(NULL, &it), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_cbor_validate(NULL, 0, NULL, &f), TL_ERR_INVALID_CBOR);
  TL_EXPECT_EQ_U64(t, f.kind, TL_CBOR_FAULT_TRUNCATED);
  /* max_depth 0: scalars only */
  l = tl_cbor_limits_default();
  l.max_depth = 0;
  TL_EXPECT_OK(t, tl_cbor_validate(&b, 1, &l, &f));
}

static bool same_name(const char *a, const char *b) {
  size_t i = 0;
  while (a[i] != '\0' && a[i] == b[i]) i++;
  return a[i] == b[i];
}

static void fault_names_are_distinct(tl_test_ctx *t) {
  for (int i = 0; i < TL_CBOR_FAULT_COUNT_; i++) {
    const char *a = tl_cbor_fault_name((tl_cbor_fault_kind)i);
    TL_EXPECT(t, !same_name(a, "unknown"));
    for (int j = 0; j < i; j++)
      TL_EXPECT(t, !same_name(a, tl_cbor_fault_name((tl_cbor_fault_kind)j)));
  }
  TL_EXPECT_STR(t, tl_cbor_fault_name(TL_CBOR_FAULT_KEY_ORDER), "key_order");
  TL_EXPECT_STR(t, tl_cbor_fault_name(TL_CBOR_FAULT_COUNT_), "unknown");
  TL_EXPECT_STR(t, tl_cbor_fault_name((tl_cbor_fault_kind)-1), "unknown");
}

/* ------------------------------------------------------------------------ */
/* writer                                                                   */

/* The eight keys of RFC 8949 §4.2.1's example, in the order it gives. */
static void put_rfc_key(tl_cbor_writer *w, int k) {
  switch (k) {
    case 0:
      tl_cbor_put_uint(w, 10);
      break;
    case 1:
      tl_cbor_put_uint(w, 100);
      break;
    case 2:
      tl_cbor_put_int(w, -1);
      break;
    case 3:
      tl_cbor_put_text(w, "z", 1);
      break;
    case 4:
      tl_cbor_put_text(w, "aa", 2);
      break;
    case 5:
      tl_cbor_begin_array(w, 1);
      tl_cbor_put_uint(w, 100);
      tl_cbor_end_array(w);
      break;
    case 6:
      tl_cbor_begin_array(w, 1);
      tl_cbor_put_int(w, -1);
      tl_cbor_end_array(w);
      break;
    default:
      tl_cbor_put_bool(w, false);
      break;
  }
}

/* CBOR-8, CBOR-13: whatever order the pairs are put in, the map comes out
 * in the §4.2.1 order: 10, 100, -1, "z", "aa", [100], [-1], false. All
 * 8! orders. */
static void writer_sorts_rfc_example_in_every_order(tl_test_ctx *t) {
  static const char *const want =
      "a8"
      "0a00"     /* 10 */
      "186401"   /* 100 */
      "2002"     /* -1 */
      "617a03"   /* "z" */
      "62616104" /* "aa" */
      "81186405" /* [100] */
      "812006"   /* [-1] */
      "f407";    /* false */
  uint8_t buf[64], mem[1024];
  int perm[8] = {0, 1, 2, 3, 4, 5, 6, 7}, c[8] = {0};
  size_t checked = 0;
  tl_arena arena;
  TL_EXPECT_OK(t, tl_arena_init(&arena, mem, sizeof mem));
  /* Heap's algorithm, iterative. */
  for (int i = 0;;) {
    tl_cbor_writer w;
    size_t len = 0;
    TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
    tl_cbor_begin_map(&w, 8);
    for (int k = 0; k < 8; k++) {
      put_rfc_key(&w, perm[k]);
      tl_cbor_put_uint(&w, (uint64_t)perm[k]);
    }
    tl_cbor_end_map(&w);
    checked++;
    if (!TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len)) ||
        !expect_hex(t, buf, len, want) || !TL_EXPECT_EQ_U64(t, arena.used, 0))
      return;
    while (i < 8 && c[i] >= i) c[i++] = 0;
    if (i == 8) break;
    {
      int j = (i % 2 == 0) ? 0 : c[i], tmp = perm[j];
      perm[j] = perm[i];
      perm[i] = tmp;
    }
    c[i]++;
    i = 0;
  }
  TL_EXPECT_EQ_U64(t, checked, 40320);
}

/* Nested maps are sorted on their own; maps can be keys; tags travel with
 * their keys. */
static void writer_sorts_nested_and_tagged_keys(tl_test_ctx *t) {
  uint8_t buf[128], mem[2048];
  size_t len = 0;
  tl_arena arena;
  tl_cbor_writer w;
  TL_EXPECT_OK(t, tl_arena_init(&arena, mem, sizeof mem));
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_map(&w, 3);
  /* key 7("k") -> {"y": 1, "x": 2} */
  tl_cbor_put_tag(&w, 7);
  tl_cbor_put_text(&w, "k", 1);
  tl_cbor_begin_map(&w, 2);
  tl_cbor_put_text(&w, "y", 1);
  tl_cbor_put_uint(&w, 1);
  tl_cbor_put_text(&w, "x", 1);
  tl_cbor_put_uint(&w, 2);
  tl_cbor_end_map(&w);
  /* key {2: 0, 1: 0} -> null */
  tl_cbor_begin_map(&w, 2);
  tl_cbor_put_uint(&w, 2);
  tl_cbor_put_uint(&w, 0);
  tl_cbor_put_uint(&w, 1);
  tl_cbor_put_uint(&w, 0);
  tl_cbor_end_map(&w);
  tl_cbor_put_null(&w);
  /* key 0 -> 7(7(true)) */
  tl_cbor_put_uint(&w, 0);
  tl_cbor_put_tag(&w, 7);
  tl_cbor_put_tag(&w, 7);
  tl_cbor_put_bool(&w, true);
  tl_cbor_end_map(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len,
             "a3"
             "00c7c7f5"    /* 0: 7(7(true)) */
             "a20100 0200" /* {1: 0, 2: 0}: null */
             "f6"
             "c7616b a2617802617901"); /* 7("k"): {"x": 2, "y": 1} */
}

static void writer_sorts_nested_and_tagged_keys_hex(tl_test_ctx *t) {
  static const uint64_t tag = 7;
  tl_cbor_limits l = tags_limits(&tag, 1);
  recode_is_identity(t, "a300c7c7f5a201000200f6c7616ba2617802617901", &l);
}

/* CBOR-13: equal keys are a conflict, adjacent or not, in any order. */
static void writer_duplicate_keys_conflict(tl_test_ctx *t) {
  static const uint64_t keys[][3] = {{1, 1, 0}, {5, 1, 5}, {1, 5, 5}};
  uint8_t buf[64], mem[1024];
  tl_arena arena;
  TL_EXPECT_OK(t, tl_arena_init(&arena, mem, sizeof mem));
  for (size_t i = 0; i < 3; i++) {
    tl_cbor_writer w;
    size_t len = 0, n = keys[i][2] == 0 ? 2 : 3;
    TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
    tl_cbor_begin_map(&w, n);
    for (size_t k = 0; k < n; k++) {
      tl_cbor_put_uint(&w, keys[i][k]);
      tl_cbor_put_uint(&w, k);
    }
    TL_EXPECT_STATUS(t, tl_cbor_end_map(&w), TL_ERR_CONFLICT);
    TL_EXPECT_STATUS(t, tl_cbor_put_null(&w), TL_ERR_CONFLICT); /* sticky */
    TL_EXPECT_STATUS(t, tl_cbor_writer_finish(&w, &len), TL_ERR_CONFLICT);
    tl_arena_reset(&arena);
  }
  {
    /* Equal keys written through different calls: put_int(5) and
     * put_uint(5) encode the same. */
    tl_cbor_writer w;
    TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
    tl_cbor_begin_map(&w, 2);
    tl_cbor_put_int(&w, 5);
    tl_cbor_put_null(&w);
    tl_cbor_put_uint(&w, 5);
    tl_cbor_put_null(&w);
    TL_EXPECT_STATUS(t, tl_cbor_end_map(&w), TL_ERR_CONFLICT);
  }
}

/* A map of many pairs in scrambled order comes out sorted, and the strict
 * reader agrees. */
static void writer_sorts_a_large_map(tl_test_ctx *t) {
  static uint8_t buf[16384];
  static uint8_t mem[65536];
  tl_arena arena;
  tl_cbor_writer w;
  tl_cbor_fault f;
  size_t len = 0;
  const size_t n = 1000;
  TL_EXPECT_OK(t, tl_arena_init(&arena, mem, sizeof mem));
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_map(&w, n);
  for (size_t i = 0; i < n; i++) {
    /* 0..999 in a scrambled order (379 is coprime to 1000), spanning
     * one-, two- and three-byte heads, as uint and as text */
    uint64_t k = (i * 379 + 11) % n;
    if (k % 3 == 0) {
      char s[4] = {(char)('a' + k % 26), (char)('a' + k / 26 % 26),
                   (char)('a' + k / 676)};
      tl_cbor_put_text(&w, s, 3);
    } else {
      tl_cbor_put_uint(&w, k * 97);
    }
    tl_cbor_put_uint(&w, i);
  }
  tl_cbor_end_map(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  TL_EXPECT_OK(t, tl_cbor_validate(buf, len, NULL, &f));
  TL_EXPECT_EQ_U64(t, arena.used, 0);
  TL_EXPECT(t, arena.high_water > n * 2 * sizeof(size_t));
}

/* TL_ERR_BOUNDS at every capacity below the document's length, sticky,
 * nothing written past cap. */
static void writer_buffer_full(tl_test_ctx *t) {
  uint8_t buf[64], mem[1024];
  static const char *const want = "a2 6161 1a00010000 6162 83f4f5f6";
  uint8_t exact[64];
  size_t want_len = unhex_spaced(want, exact, sizeof exact);
  tl_arena arena;
  TL_EXPECT_OK(t, tl_arena_init(&arena, mem, sizeof mem));
  for (size_t cap = 0; cap <= want_len; cap++) {
    tl_cbor_writer w;
    size_t len = 0;
    tl_status st;
    memset(buf, 0xEE, sizeof buf);
    TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, cap, &arena));
    tl_cbor_begin_map(&w, 2);
    tl_cbor_put_text(&w, "b", 1);
    tl_cbor_begin_array(&w, 3);
    tl_cbor_put_bool(&w, false);
    tl_cbor_put_bool(&w, true);
    tl_cbor_put_null(&w);
    tl_cbor_end_array(&w);
    tl_cbor_put_text(&w, "a", 1);
    tl_cbor_put_uint(&w, 65536);
    tl_cbor_end_map(&w);
    st = tl_cbor_writer_finish(&w, &len);
    TL_EXPECT_EQ_U64(t, buf[cap], 0xEE); /* nothing past cap */
    if (cap < want_len) {
      if (!TL_EXPECT_STATUS(t, st, TL_ERR_BOUNDS)) return;
      TL_EXPECT(t, w.len <= cap);
    } else {
      TL_EXPECT_OK(t, st);
      expect_hex(t, buf, len, "a26161 1a00010000 616283f4f5f6");
    }
    tl_arena_reset(&arena);
  }
}

/* CBOR-13: counts, nesting and misuse. */
static void writer_checks_counts_and_nesting(tl_test_ctx *t) {
  uint8_t buf[128];
  tl_cbor_writer w;
  size_t len;
  /* too few items */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  tl_cbor_begin_array(&w, 2);
  tl_cbor_put_uint(&w, 1);
  TL_EXPECT_STATUS(t, tl_cbor_end_array(&w), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_cbor_writer_finish(&w, &len), TL_ERR_INVALID_ARGUMENT);
  /* too many items */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  tl_cbor_begin_array(&w, 1);
  tl_cbor_put_uint(&w, 1);
  TL_EXPECT_STATUS(t, tl_cbor_put_uint(&w, 2), TL_ERR_INVALID_ARGUMENT);
  /* a map of one pair is two items */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  tl_cbor_begin_map(&w, 1);
  tl_cbor_put_uint(&w, 1);
  TL_EXPECT_STATUS(t, tl_cbor_end_map(&w), TL_ERR_INVALID_ARGUMENT);
  /* mismatched end */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  tl_cbor_begin_array(&w, 0);
  TL_EXPECT_STATUS(t, tl_cbor_end_map(&w), TL_ERR_INVALID_ARGUMENT);
  /* end with nothing open */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  TL_EXPECT_STATUS(t, tl_cbor_end_array(&w), TL_ERR_INVALID_ARGUMENT);
  /* a tag without content */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  tl_cbor_begin_array(&w, 1);
  tl_cbor_put_tag(&w, 1);
  TL_EXPECT_STATUS(t, tl_cbor_end_array(&w), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  tl_cbor_put_tag(&w, 1);
  TL_EXPECT_STATUS(t, tl_cbor_writer_finish(&w, &len), TL_ERR_INVALID_ARGUMENT);
  /* one document, one top-level item */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  TL_EXPECT_STATUS(t, tl_cbor_writer_finish(&w, &len), TL_ERR_INVALID_ARGUMENT);
  tl_cbor_put_uint(&w, 1);
  TL_EXPECT_STATUS(t, tl_cbor_put_uint(&w, 2), TL_ERR_INVALID_ARGUMENT);
  /* a map of two or more pairs needs scratch memory */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  TL_EXPECT_STATUS(t, tl_cbor_begin_map(&w, 2), TL_ERR_INVALID_ARGUMENT);
  /* NULL payloads */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  TL_EXPECT_STATUS(t, tl_cbor_put_bytes(&w, NULL, 1), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  TL_EXPECT_OK(t, tl_cbor_put_text(&w, NULL, 0));
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "60");
  TL_EXPECT_STATUS(t, tl_cbor_writer_init(&w, NULL, 1, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  /* a size that cannot be indexed */
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  TL_EXPECT_STATUS(t, tl_cbor_begin_map(&w, SIZE_MAX / 2 + 1),
                   TL_ERR_INTEGER_OVERFLOW);
}

/* CBOR-12: the writer's depth limit matches the reader's. */
static void writer_depth_limit(tl_test_ctx *t) {
  uint8_t buf[128];
  tl_cbor_writer w;
  tl_cbor_fault f;
  size_t len = 0;
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  for (int i = 0; i < TL_CBOR_MAX_DEPTH; i++)
    TL_EXPECT_OK(t, tl_cbor_begin_array(&w, 1));
  TL_EXPECT_STATUS(t, tl_cbor_begin_array(&w, 0), TL_ERR_BOUNDS);
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  for (int i = 0; i < TL_CBOR_MAX_DEPTH - 1; i++) tl_cbor_put_tag(&w, 9);
  tl_cbor_begin_array(&w, 0);
  tl_cbor_end_array(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  {
    static const uint64_t nine = 9;
    tl_cbor_limits l = tags_limits(&nine, 1);
    TL_EXPECT_OK(t, tl_cbor_validate(buf, len, &l, &f));
  }
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  for (int i = 0; i < TL_CBOR_MAX_DEPTH; i++) tl_cbor_put_tag(&w, 9);
  TL_EXPECT_STATUS(t, tl_cbor_put_tag(&w, 9), TL_ERR_BOUNDS);
}

static void writer_rejects_bad_utf8(tl_test_ctx *t) {
  uint8_t buf[16];
  tl_cbor_writer w;
  size_t len;
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, NULL));
  tl_cbor_begin_array(&w, 2);
  TL_EXPECT_STATUS(t, tl_cbor_put_text(&w, "\xed\xa0\x80", 3),
                   TL_ERR_INVALID_UTF8);
  TL_EXPECT_STATUS(t, tl_cbor_put_text(&w, "ok", 2), TL_ERR_INVALID_UTF8);
  TL_EXPECT_STATUS(t, tl_cbor_writer_finish(&w, &len), TL_ERR_INVALID_UTF8);
  TL_EXPECT_EQ_U64(t, w.len, 1); /* only the array head */
}

/* One document with three unsorted maps (two nested), written under every
 * allocation failure point: each fails with TL_ERR_OUT_OF_MEMORY, cleanly,
 * until the countdown passes the last allocation. */
static void build_nested_unsorted(tl_cbor_writer *w) {
  tl_cbor_begin_map(w, 3);
  tl_cbor_put_text(w, "z", 1);
  tl_cbor_begin_map(w, 2);
  tl_cbor_put_uint(w, 2);
  tl_cbor_put_null(w);
  tl_cbor_put_uint(w, 1);
  tl_cbor_put_null(w);
  tl_cbor_end_map(w);
  tl_cbor_put_text(w, "y", 1);
  tl_cbor_begin_array(w, 1);
  tl_cbor_begin_map(w, 2);
  tl_cbor_put_bool(w, true);
  tl_cbor_put_uint(w, 0);
  tl_cbor_put_bool(w, false);
  tl_cbor_put_uint(w, 0);
  tl_cbor_end_map(w);
  tl_cbor_end_array(w);
  tl_cbor_put_text(w, "x", 1);
  tl_cbor_put_uint(w, 0);
  tl_cbor_end_map(w);
}

static void writer_arena_exhaustion(tl_test_ctx *t) {
  static const char *const want =
      "a3 6178 00 6179 81a2f400f500 617a a201f602f6";
  uint8_t buf[64], mem[2048];
  tl_arena arena;
  size_t failures = 0;
  TL_EXPECT_OK(t, tl_arena_init(&arena, mem, sizeof mem));
  for (size_t k = 1; k < 64; k++) {
    tl_cbor_writer w;
    size_t len = 0;
    tl_status st;
    tl_arena_reset(&arena);
    arena.fail_countdown = k;
    TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
    build_nested_unsorted(&w);
    st = tl_cbor_writer_finish(&w, &len);
    if (st == TL_OK) {
      expect_hex(t, buf, len, want);
      TL_EXPECT_EQ_U64(t, arena.used, 0);
      break;
    }
    if (!TL_EXPECT_STATUS(t, st, TL_ERR_OUT_OF_MEMORY)) return;
    failures++;
  }
  /* begin_map x3, index arrays x3, body copies x3 */
  TL_EXPECT_EQ_U64(t, failures, 9);
  /* An arena too small for anything fails the same way. */
  {
    tl_cbor_writer w;
    TL_EXPECT_OK(t, tl_arena_init(&arena, mem, 8));
    TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
    build_nested_unsorted(&w);
    TL_EXPECT_STATUS(t, tl_cbor_writer_finish(&w, NULL), TL_ERR_OUT_OF_MEMORY);
  }
}

/* The caller may allocate from the scratch arena while a map is open; the
 * writer then leaves the caller's memory alone. */
static void writer_respects_caller_allocations(tl_test_ctx *t) {
  uint8_t buf[64], mem[1024];
  tl_arena arena;
  tl_cbor_writer w;
  void *p = NULL;
  size_t len = 0;
  TL_EXPECT_OK(t, tl_arena_init(&arena, mem, sizeof mem));
  TL_EXPECT_OK(t, tl_cbor_writer_init(&w, buf, sizeof buf, &arena));
  tl_cbor_begin_map(&w, 2);
  tl_cbor_put_uint(&w, 2);
  TL_EXPECT_OK(t, tl_arena_alloc(&arena, 40, 16, &p));
  memset(p, 0x5A, 40);
  tl_cbor_put_uint(&w, 0);
  tl_cbor_put_uint(&w, 1);
  tl_cbor_put_uint(&w, 0);
  tl_cbor_end_map(&w);
  TL_EXPECT_OK(t, tl_cbor_writer_finish(&w, &len));
  expect_hex(t, buf, len, "a201000200");
  TL_EXPECT(t, (uint8_t *)p + 40 <= arena.base + arena.used);
  TL_EXPECT_EQ_U64(t, ((uint8_t *)p)[39], 0x5A);
}

/* tl_cbor_map_find: stops at the key's value, reports a missing key and a
 * non-map. */
static void map_find_stops_at_the_value(tl_test_ctx *t) {
  /* {"a": 1, "c": {"d": 4}, "bb": [2, 3]} (keys in encoded-byte order) */
  static const uint8_t doc[] = {0xa3, 0x61, 0x61, 0x01, 0x61, 0x63, 0xa1, 0x61,
                                0x64, 0x04, 0x62, 0x62, 0x62, 0x82, 0x02, 0x03};
  tl_cbor_reader r;
  uint64_t v = 0;
  size_t n = 0;
  tl_cbor_reader_init(&r, doc, sizeof doc, NULL);
  TL_EXPECT_OK(t, tl_cbor_map_find(&r, "bb"));
  TL_EXPECT_OK(t, tl_cbor_expect_array(&r, &n));
  TL_EXPECT_EQ_U64(t, n, 2);
  tl_cbor_reader_init(&r, doc, sizeof doc, NULL);
  TL_EXPECT_OK(t, tl_cbor_map_find(&r, "c"));
  TL_EXPECT_OK(t, tl_cbor_map_find(&r, "d"));
  TL_EXPECT_OK(t, tl_cbor_expect_uint(&r, &v));
  TL_EXPECT_EQ_U64(t, v, 4);
  tl_cbor_reader_init(&r, doc, sizeof doc, NULL);
  TL_EXPECT_STATUS(t, tl_cbor_map_find(&r, "b"), TL_ERR_BOUNDS);
  tl_cbor_reader_init(&r, doc + 3, 1, NULL); /* the integer 1 */
  TL_EXPECT_STATUS(t, tl_cbor_map_find(&r, "a"), TL_ERR_INVALID_CBOR);
}

static const tl_test_case cases[] = {
    TL_CASE(map_find_stops_at_the_value),
    TL_CASE(appendix_a_integers),
    TL_CASE(appendix_a_strings_round_trip),
    TL_CASE(appendix_a_simple_values),
    TL_CASE(appendix_a_containers),
    TL_CASE(appendix_a_decode_and_reencode),
    TL_CASE(every_fault_kind_with_its_offset),
    TL_CASE(depth_limit_at_the_boundary),
    TL_CASE(huge_declared_lengths),
    TL_CASE(schema_helpers_check_range_and_type),
    TL_CASE(reader_walks_a_document),
    TL_CASE(peek_records_faults),
    TL_CASE(bad_reader_arguments),
    TL_CASE(fault_names_are_distinct),
    TL_CASE(writer_sorts_rfc_example_in_every_order),
    TL_CASE(writer_sorts_nested_and_tagged_keys),
    TL_CASE(writer_sorts_nested_and_tagged_keys_hex),
    TL_CASE(writer_duplicate_keys_conflict),
    TL_CASE(writer_sorts_a_large_map),
    TL_CASE(writer_buffer_full),
    TL_CASE(writer_checks_counts_and_nesting),
    TL_CASE(writer_depth_limit),
    TL_CASE(writer_rejects_bad_utf8),
    TL_CASE(writer_arena_exhaustion),
    TL_CASE(writer_respects_caller_allocations),
};
TL_SUITE(cbor, cases);
