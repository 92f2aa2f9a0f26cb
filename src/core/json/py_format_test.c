/* Python's formatting (docs/json.md): repr(float) for every vector of
 * tools/oracle/py_format_vectors.py (random bit patterns, short decimals,
 * powers, notation boundaries, subnormals), repr round-trips through the
 * reader for random doubles, json.dumps(ensure_ascii=False) and str() of
 * parsed documents byte for byte, repr(chr(cp)) around every boundary of
 * the str.isprintable table, and the output sink's bounds. */
#include <string.h>

#include "bytes.h"
#include "json/json.h"
#include "json/py_format_vectors.h"
#include "tl_test.h"
#include "utf8.h"

static _Alignas(64) uint8_t region[1u << 20];

/* The formatter's output as a C string (static buffer). */
static const char *repr_of(double v, char *buf, size_t cap) {
  tl_json_out o = tl_json_out_make((uint8_t *)buf, cap - 1);
  tl_py_float_repr(v, &o);
  buf[o.status == TL_OK ? o.len : 0] = '\0';
  return buf;
}

static void float_repr_matches_python(tl_test_ctx *t) {
  size_t n = sizeof tl_py_repr_vectors / sizeof tl_py_repr_vectors[0], bad = 0;
  for (size_t i = 0; i < n; i++) {
    char buf[64];
    const char *got =
        repr_of(tl_bits_to_f64(tl_py_repr_vectors[i].bits), buf, sizeof buf);
    if (strcmp(got, tl_py_repr_vectors[i].repr) != 0 && bad++ < 10)
      TL_EXPECT_STR(t, got, tl_py_repr_vectors[i].repr);
  }
  TL_EXPECT_EQ_U64(t, bad, 0);
  TL_EXPECT(t, n > 5000);
}

static void float_repr_rules(tl_test_ctx *t) {
  static const struct {
    double v;
    const char *want;
  } cases[] = {
      {1.0, "1.0"},
      {100000.0, "100000.0"},
      {1e15, "1000000000000000.0"},
      {1e16, "1e+16"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {2.5e-07, "2.5e-07"},
      {1.5e300, "1.5e+300"},
      {0.1, "0.1"},
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {-1.5, "-1.5"},
      {123456.789, "123456.789"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {1e100, "1e+100"},
      {1.2345678901234567e-7, "1.2345678901234566e-07"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[64];
    TL_EXPECT_STR(t, repr_of(cases[i].v, buf, sizeof buf), cases[i].want);
  }
  char buf[64];
  TL_EXPECT_STR(t, repr_of(tl_bits_to_f64(0x7FF0000000000000u), buf, 64),
                "inf");
  TL_EXPECT_STR(t, repr_of(tl_bits_to_f64(0xFFF0000000000000u), buf, 64),
                "-inf");
  TL_EXPECT_STR(t, repr_of(tl_bits_to_f64(0x7FF8000000000000u), buf, 64),
                "nan");
  TL_EXPECT_STR(t, repr_of(tl_bits_to_f64(0xFFF8000000000001u), buf, 64),
                "nan");
}

/* repr(x) read back gives x, for random bit patterns (the shortest-digit
 * search and the correctly rounded reader check each other). */
static void float_repr_round_trips(tl_test_ctx *t) {
  tl_test_rng rng = {0x6a736f6e};
  size_t bad = 0, n = 20000;
  for (size_t i = 0; i < n; i++) {
    uint64_t b = tl_test_rng_next(&rng);
    char buf[64];
    tl_arena a;
    tl_json_value *v;
    tl_json_error e;
    if ((b >> 52 & 0x7FF) == 0x7FF) continue;
    if (i % 4 == 0) b &= 0x800FFFFFFFFFFFFFu; /* subnormals too */
    repr_of(tl_bits_to_f64(b), buf, sizeof buf);
    tl_arena_init(&a, region, sizeof region);
    if (tl_json_parse((const uint8_t *)buf, strlen(buf), NULL, &a, &v, &e) !=
            TL_OK ||
        v->type != TL_JSON_FLOAT || tl_f64_to_bits(v->u.f) != b) {
      if (bad++ < 5) {
        tl_test_print(t, "    no round trip: ");
        tl_test_print(t, buf);
        tl_test_print(t, "\n");
      }
    }
  }
  TL_EXPECT_EQ_U64(t, bad, 0);
}

static bool format_doc(tl_test_ctx *t, const char *text, bool dumps, char *out,
                       size_t cap) {
  tl_arena a;
  tl_json_value *v;
  tl_json_error e;
  tl_arena_init(&a, region, sizeof region);
  if (!TL_EXPECT_OK(t, tl_json_parse((const uint8_t *)text, strlen(text), NULL,
                                     &a, &v, &e)))
    return false;
  tl_json_out o = tl_json_out_make((uint8_t *)out, cap - 1);
  if (dumps)
    tl_py_json_dumps(v, &o);
  else
    tl_py_str(v, &o);
  if (!TL_EXPECT_OK(t, o.status)) return false;
  out[o.len] = '\0';
  return true;
}

static void dumps_and_str_match_python(tl_test_ctx *t) {
  size_t n = sizeof tl_py_json_vectors / sizeof tl_py_json_vectors[0];
  for (size_t i = 0; i < n; i++) {
    char out[4096];
    if (format_doc(t, tl_py_json_vectors[i].text, true, out, sizeof out))
      TL_EXPECT_STR(t, out, tl_py_json_vectors[i].dumps);
    if (format_doc(t, tl_py_json_vectors[i].text, false, out, sizeof out))
      TL_EXPECT_STR(t, out, tl_py_json_vectors[i].str);
  }
}

/* repr(chr(cp)) for all of Latin-1 and around every boundary of the
 * printable table: quotes, escapes, \x \u \U forms, raw printables. */
static void string_repr_matches_python(tl_test_ctx *t) {
  size_t n = sizeof tl_py_repr_cp_vectors / sizeof tl_py_repr_cp_vectors[0];
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t s[4], out[32];
    size_t k = tl_utf8_encode(tl_py_repr_cp_vectors[i].cp, s);
    tl_json_value v;
    v.type = TL_JSON_STRING;
    v.u.str.ptr = (const char *)s;
    v.u.str.len = k;
    tl_json_out o = tl_json_out_make(out, sizeof out - 1);
    tl_py_repr(&v, &o);
    out[o.status == TL_OK ? o.len : 0] = '\0';
    if (strcmp((const char *)out, tl_py_repr_cp_vectors[i].repr) != 0 &&
        bad++ < 10)
      TL_EXPECT_STR(t, (const char *)out, tl_py_repr_cp_vectors[i].repr);
  }
  TL_EXPECT_EQ_U64(t, bad, 0);
  TL_EXPECT(t, n > 2000);
}

static void non_finite_and_ints(tl_test_ctx *t) {
  tl_json_value items[5];
  tl_json_value arr;
  char out[128];
  items[0].type = TL_JSON_FLOAT;
  items[0].u.f = tl_bits_to_f64(0x7FF0000000000000u);
  items[1].type = TL_JSON_FLOAT;
  items[1].u.f = tl_bits_to_f64(0xFFF0000000000000u);
  items[2].type = TL_JSON_FLOAT;
  items[2].u.f = tl_bits_to_f64(0x7FF8000000000000u);
  items[3].type = TL_JSON_INT;
  items[3].u.i = INT64_MIN;
  items[4].type = TL_JSON_INT;
  items[4].u.i = INT64_MAX;
  arr.type = TL_JSON_ARRAY;
  arr.u.arr.items = items;
  arr.u.arr.n = 5;
  tl_json_out o = tl_json_out_make((uint8_t *)out, sizeof out - 1);
  tl_py_json_dumps(&arr, &o); /* json.dumps([inf, -inf, nan, ...]) */
  out[o.len] = '\0';
  TL_EXPECT_STR(t, out,
                "[Infinity, -Infinity, NaN, -9223372036854775808, "
                "9223372036854775807]");
  o = tl_json_out_make((uint8_t *)out, sizeof out - 1);
  tl_py_str(&arr, &o); /* str([inf, -inf, nan, ...]) */
  out[o.len] = '\0';
  TL_EXPECT_STR(t, out,
                "[inf, -inf, nan, -9223372036854775808, 9223372036854775807]");
}

static void output_sink(tl_test_ctx *t) {
  tl_json_value v;
  uint8_t buf[8];
  v.type = TL_JSON_STRING;
  v.u.str.ptr = "it's \"x\"";
  v.u.str.len = 8;
  /* Measuring: buf NULL counts what json.dumps would write. */
  tl_json_out o = tl_json_out_make(NULL, 0);
  tl_py_json_dumps(&v, &o);
  TL_EXPECT_OK(t, o.status);
  TL_EXPECT_EQ_U64(t, o.len, 12); /* "it's \"x\"" */
  /* Too small: TL_ERR_BOUNDS, sticky, nothing past the last whole piece. */
  o = tl_json_out_make(buf, sizeof buf);
  tl_py_json_dumps(&v, &o);
  TL_EXPECT_STATUS(t, o.status, TL_ERR_BOUNDS);
  TL_EXPECT(t, o.len <= sizeof buf);
  o = tl_json_out_make(buf, sizeof buf);
  tl_py_str(&v, &o); /* exactly 8 bytes: fits */
  TL_EXPECT_OK(t, o.status);
  TL_EXPECT_MEM(t, buf, "it's \"x\"", 8);
  /* A string that is not UTF-8 cannot be repr'd; NULL is refused. */
  v.u.str.ptr = "\xff";
  v.u.str.len = 1;
  o = tl_json_out_make(NULL, 0);
  tl_py_repr(&v, &o);
  TL_EXPECT_STATUS(t, o.status, TL_ERR_INVALID_UTF8);
  o = tl_json_out_make(NULL, 0);
  tl_py_json_dumps(NULL, &o);
  TL_EXPECT_STATUS(t, o.status, TL_ERR_INVALID_ARGUMENT);
}

/* Nesting beyond TL_PY_FORMAT_MAX_DEPTH is refused, not recursed into. */
static void format_depth_is_bounded(tl_test_ctx *t) {
  static tl_json_value chain[TL_PY_FORMAT_MAX_DEPTH + 2];
  size_t n = sizeof chain / sizeof chain[0];
  for (size_t i = 0; i < n; i++) {
    chain[i].type = TL_JSON_ARRAY;
    chain[i].u.arr.items = i + 1 < n ? &chain[i + 1] : NULL;
    chain[i].u.arr.n = i + 1 < n ? 1 : 0;
  }
  tl_json_out o = tl_json_out_make(NULL, 0);
  tl_py_json_dumps(&chain[1], &o); /* depth exactly the maximum */
  TL_EXPECT_OK(t, o.status);
  TL_EXPECT_EQ_U64(t, o.len, 2 * (n - 1));
  o = tl_json_out_make(NULL, 0);
  tl_py_str(&chain[0], &o);
  TL_EXPECT_STATUS(t, o.status, TL_ERR_INVALID_ARGUMENT);
}

static const tl_test_case cases[] = {
    TL_CASE(float_repr_matches_python),
    TL_CASE(float_repr_rules),
    TL_CASE(float_repr_round_trips),
    TL_CASE(dumps_and_str_match_python),
    TL_CASE(string_repr_matches_python),
    TL_CASE(non_finite_and_ints),
    TL_CASE(output_sink),
    TL_CASE(format_depth_is_bounded),
};

TL_SUITE(py_format, cases);
