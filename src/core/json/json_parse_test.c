/* The strict JSON reader (docs/json.md): what it accepts and the value tree
 * it builds (ints and floats apart, members in document order, escapes
 * decoded), one minimal document per refusal with its offset, line,
 * column and reason, the limits at their boundaries, duplicate keys, arena
 * behaviour (exact use, rewind on error, every allocation failing), and
 * float() agreement with CPython on every vector of
 * tools/oracle/py_format_vectors.py. */
#include <string.h>

#include "json/json.h"
#include "json/py_format_vectors.h"
#include "tl_test.h"

static _Alignas(64) uint8_t region[1u << 20];

static tl_status parse_lim(tl_arena *a, const char *text,
                           const tl_json_limits *lim, tl_json_value **v,
                           tl_json_error *err) {
  tl_arena_init(a, region, sizeof region);
  return tl_json_parse((const uint8_t *)text, strlen(text), lim, a, v, err);
}

static tl_status parse(tl_arena *a, const char *text, tl_json_value **v,
                       tl_json_error *err) {
  return parse_lim(a, text, NULL, v, err);
}

static uint64_t bits(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}

static bool same_str(const tl_json_value *v, const char *s, size_t n) {
  return v != NULL && v->type == TL_JSON_STRING && v->u.str.len == n &&
         memcmp(v->u.str.ptr, s, n) == 0;
}

/* ------------------------------------------------------------------------ */

static void scalars_and_types(tl_test_ctx *t) {
  tl_arena a;
  tl_json_value *v;
  tl_json_error e;
  if (!TL_EXPECT_OK(t, parse(&a, " null ", &v, &e))) return;
  TL_EXPECT_EQ_U64(t, v->type, TL_JSON_NULL);
  TL_EXPECT_OK(t, parse(&a, "true", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_BOOL && v->u.b);
  TL_EXPECT_OK(t, parse(&a, "\t\r\nfalse\n", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_BOOL && !v->u.b);
  /* Integer literals stay integers; '.', 'e', 'E' make floats. */
  TL_EXPECT_OK(t, parse(&a, "1", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_INT && v->u.i == 1);
  TL_EXPECT_OK(t, parse(&a, "-0", &v, &e)); /* json.loads gives int 0 */
  TL_EXPECT(t, v->type == TL_JSON_INT && v->u.i == 0);
  TL_EXPECT_OK(t, parse(&a, "1.0", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_FLOAT && bits(v->u.f) == bits(1.0));
  TL_EXPECT_OK(t, parse(&a, "1e0", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_FLOAT && bits(v->u.f) == bits(1.0));
  TL_EXPECT_OK(t, parse(&a, "1E2", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_FLOAT && bits(v->u.f) == bits(100.0));
  TL_EXPECT_OK(t, parse(&a, "-0.0", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_FLOAT && bits(v->u.f) == bits(-0.0));
  TL_EXPECT_OK(t, parse(&a, "1e-400", &v, &e)); /* underflow: 0.0 */
  TL_EXPECT(t, v->type == TL_JSON_FLOAT && bits(v->u.f) == 0);
  TL_EXPECT_OK(t, parse(&a, "9223372036854775807", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_INT && v->u.i == INT64_MAX);
  TL_EXPECT_OK(t, parse(&a, "-9223372036854775808", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_INT && v->u.i == INT64_MIN);
  TL_EXPECT_OK(t, parse(&a, "9223372036854775808.0", &v, &e));
  TL_EXPECT(t, v->type == TL_JSON_FLOAT &&
                   bits(v->u.f) == bits(9223372036854775808.0));
}

static void strings_decode(tl_test_ctx *t) {
  tl_arena a;
  tl_json_value *v;
  tl_json_error e;
  TL_EXPECT_OK(t, parse(&a, "\"\"", &v, &e));
  TL_EXPECT(t, same_str(v, "", 0));
  TL_EXPECT_OK(t, parse(&a, "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", &v, &e));
  TL_EXPECT(t, same_str(v, "a\"b\\c/d\b\f\n\r\t", 12));
  /* \u escapes: NUL is an ordinary character; pairs join; hex either case */
  TL_EXPECT_OK(t,
               parse(&a, "\"x\\u0000y\\u00E9\\u20ac\\uD83D\\ude00\"", &v, &e));
  TL_EXPECT(t, same_str(v, "x\0y\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 12));
  /* raw UTF-8 and DEL pass through */
  TL_EXPECT_OK(t, parse(&a, "\"\xe4\xb8\xad\x7f\xf4\x8f\xbf\xbf\"", &v, &e));
  TL_EXPECT(t, same_str(v, "\xe4\xb8\xad\x7f\xf4\x8f\xbf\xbf", 8));
}

static void containers_keep_order(tl_test_ctx *t) {
  tl_arena a;
  tl_json_value *v;
  tl_json_error e;
  const char *doc =
      "{\"b\": 1, \"a\": [1, 2.5, \"x\", [], {}], \"10\": null, \"\": {\"k\": "
      "true}}";
  if (!TL_EXPECT_OK(t, parse(&a, doc, &v, &e))) return;
  TL_EXPECT_EQ_U64(t, v->type, TL_JSON_OBJECT);
  if (!TL_EXPECT_EQ_U64(t, v->u.obj.n, 4)) return;
  TL_EXPECT(
      t, v->u.obj.members[0].key_len == 1 && v->u.obj.members[0].key[0] == 'b');
  TL_EXPECT(t, v->u.obj.members[1].key[0] == 'a');
  TL_EXPECT(t, v->u.obj.members[2].key_len == 2);
  TL_EXPECT(t, v->u.obj.members[3].key_len == 0);
  const tl_json_value *arr = tl_json_get(v, "a", 1);
  if (!TL_EXPECT(t, arr != NULL && arr->type == TL_JSON_ARRAY)) return;
  TL_EXPECT_EQ_U64(t, arr->u.arr.n, 5);
  TL_EXPECT(t, arr->u.arr.items[0].type == TL_JSON_INT);
  TL_EXPECT(t, arr->u.arr.items[1].type == TL_JSON_FLOAT);
  TL_EXPECT(t, same_str(&arr->u.arr.items[2], "x", 1));
  TL_EXPECT(t, arr->u.arr.items[3].type == TL_JSON_ARRAY &&
                   arr->u.arr.items[3].u.arr.n == 0);
  TL_EXPECT(t, arr->u.arr.items[4].type == TL_JSON_OBJECT &&
                   arr->u.arr.items[4].u.obj.n == 0);
  const tl_json_value *inner = tl_json_get(v, "", 0);
  TL_EXPECT(t, inner != NULL && inner->type == TL_JSON_OBJECT);
  const tl_json_value *k = tl_json_get(inner, "k", 1);
  TL_EXPECT(t, k != NULL && k->type == TL_JSON_BOOL && k->u.b);
  TL_EXPECT(t, tl_json_get(v, "c", 1) == NULL);
  TL_EXPECT(t, tl_json_get(arr, "a", 1) == NULL); /* not an object */
}

typedef struct bad_case {
  const char *text;
  tl_status st;
  size_t offset, line, column;
  const char *reason;
} bad_case;

#define BAD(txt, off, ln, col, why) \
  { txt, TL_ERR_INVALID_ARGUMENT, off, ln, col, why }

static const bad_case bad_cases[] = {
    BAD("", 0, 1, 1, "unexpected end of input"),
    BAD("   ", 3, 1, 4, "unexpected end of input"),
    BAD("[1,]", 3, 1, 4, "trailing comma"),
    BAD("{\"a\":1,}", 7, 1, 8, "string key expected"),
    BAD("[1 2]", 3, 1, 4, "',' or ']' expected"),
    BAD("{\"a\" 1}", 5, 1, 6, "':' expected"),
    BAD("{\"a\":1 \"b\":2}", 7, 1, 8, "',' or '}' expected"),
    BAD("{1:2}", 1, 1, 2, "string key expected"),
    BAD("[1]]", 3, 1, 4, "trailing characters after the document"),
    BAD("1 2", 2, 1, 3, "trailing characters after the document"),
    BAD("[1, // c\n2]", 4, 1, 5, "unexpected character"),
    BAD("/* c */ 1", 0, 1, 1, "unexpected character"),
    BAD("NaN", 0, 1, 1, "unexpected character"),
    BAD("Infinity", 0, 1, 1, "unexpected character"),
    BAD("-Infinity", 1, 1, 2, "invalid number"),
    BAD("tru", 0, 1, 1, "unexpected character"),
    BAD("nul", 0, 1, 1, "unexpected character"),
    BAD("True", 0, 1, 1, "unexpected character"),
    BAD("'a'", 0, 1, 1, "unexpected character"),
    BAD("01", 0, 1, 1, "leading zero"),
    BAD("-01.5", 0, 1, 1, "leading zero"),
    BAD("+1", 0, 1, 1, "unexpected character"),
    BAD("1.", 2, 1, 3, "digit expected after '.'"),
    BAD(".5", 0, 1, 1, "unexpected character"),
    BAD("1e", 2, 1, 3, "digit expected in exponent"),
    BAD("1e+", 3, 1, 4, "digit expected in exponent"),
    BAD("-", 1, 1, 2, "invalid number"),
    BAD("0x10", 1, 1, 2, "trailing characters after the document"),
    BAD("9223372036854775808", 0, 1, 1, "integer out of int64 range"),
    BAD("-9223372036854775809", 0, 1, 1, "integer out of int64 range"),
    BAD("[\n 1e309]", 3, 2, 2, "number out of double range"),
    BAD("-1.8e308", 0, 1, 1, "number out of double range"),
    BAD("\"abc", 4, 1, 5, "unterminated string"),
    BAD("\"a\\", 3, 1, 4, "unterminated string"),
    BAD("\"a\nb\"", 2, 1, 3, "control character in string"),
    BAD("\"\t\"", 1, 1, 2, "control character in string"),
    BAD("\"\\x41\"", 1, 1, 2, "invalid escape"),
    BAD("\"\\'\"", 1, 1, 2, "invalid escape"),
    BAD("\"\\u12\"", 1, 1, 2, "invalid \\u escape"),
    BAD("\"\\u12G4\"", 1, 1, 2, "invalid \\u escape"),
    BAD("\"\\ud800\"", 1, 1, 2, "lone surrogate escape"),
    BAD("\"\\udc00\"", 1, 1, 2, "lone surrogate escape"),
    BAD("\"\\ud800\\u0041\"", 1, 1, 2, "lone surrogate escape"),
    BAD("\"\\ud800\\ud800\"", 1, 1, 2, "lone surrogate escape"),
    BAD("{\"a\":1,\n\"a\":2}", 8, 2, 1, "duplicate key"),
    BAD("{\"x\":{\"a\":1,\"b\":2,\"a\":3}}", 18, 1, 19, "duplicate key"),
    BAD("{\"\\u0061\":1,\"a\":2}", 12, 1, 13, "duplicate key"),
    {"\"\xc0\xaf\"", TL_ERR_INVALID_UTF8, 1, 1, 2, "invalid UTF-8"},
    {"[1, \"\xed\xa0\x80\"]", TL_ERR_INVALID_UTF8, 5, 1, 6, "invalid UTF-8"},
    {"\xef\xbb\xbf{}", TL_ERR_INVALID_ARGUMENT, 0, 1, 1,
     "unexpected character"}, /* a BOM is not whitespace */
};

static void refusals_locate_the_fault(tl_test_ctx *t) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const bad_case *c = &bad_cases[i];
    tl_arena a;
    tl_json_value *v = (tl_json_value *)1;
    tl_json_error e;
    bool ok = TL_EXPECT_STATUS(t, parse(&a, c->text, &v, &e), c->st);
    ok &= TL_EXPECT(t, v == NULL);
    ok &= TL_EXPECT_EQ_U64(t, e.offset, c->offset);
    ok &= TL_EXPECT_EQ_U64(t, e.line, c->line);
    ok &= TL_EXPECT_EQ_U64(t, e.column, c->column);
    ok &= TL_EXPECT_STR(t, e.reason, c->reason);
    ok &= TL_EXPECT_EQ_U64(t, a.used, 0); /* rewound */
    if (!ok) {
      tl_test_print(t, "    document: ");
      tl_test_print(t, c->text);
      tl_test_print(t, "\n");
    }
  }
}

/* Duplicate keys in an object large enough for the sorted check. */
static void duplicate_keys_in_large_object(tl_test_ctx *t) {
  char doc[4096];
  size_t n = 0;
  tl_arena a;
  tl_json_value *v;
  tl_json_error e;
  doc[n++] = '{';
  for (int i = 0; i < 200; i++) {
    int k = i == 150 ? 37 : i == 180 ? 99 : i; /* 150 repeats 37 */
    if (i > 0) doc[n++] = ',';
    doc[n++] = '"';
    doc[n++] = (char)('a' + k / 26 % 26);
    doc[n++] = (char)('a' + k % 26);
    doc[n++] = '"';
    doc[n++] = ':';
    doc[n++] = '0';
  }
  doc[n++] = '}';
  doc[n] = '\0';
  TL_EXPECT_STATUS(t, parse(&a, doc, &v, &e), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STR(t, e.reason, "duplicate key");
  TL_EXPECT_EQ_U64(t, e.offset, 1 + 150 * 7); /* the first second occurrence */
  TL_EXPECT_EQ_U64(t, a.used, 0);
  /* Without the repeats it parses, and the members keep their order. */
  doc[1 + 150 * 7 + 1] = 'z';
  doc[1 + 180 * 7 + 1] = 'y';
  if (!TL_EXPECT_OK(t, parse(&a, doc, &v, &e))) return;
  TL_EXPECT_EQ_U64(t, v->u.obj.n, 200);
  TL_EXPECT(t, tl_json_get(v, "zl", 2) == &v->u.obj.members[150].value);
}

static void limits_at_their_boundaries(tl_test_ctx *t) {
  tl_json_limits lim = tl_json_limits_default();
  tl_arena a;
  tl_json_value *v;
  tl_json_error e;
  TL_EXPECT_EQ_U64(t, lim.max_depth, 128);
  lim.max_depth = 3;
  TL_EXPECT_OK(t, parse_lim(&a, "[[{\"a\":1}]]", &lim, &v, &e));
  TL_EXPECT_STATUS(t, parse_lim(&a, "[[{\"a\":[]}]]", &lim, &v, &e),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STR(t, e.reason, "nesting too deep");
  TL_EXPECT_EQ_U64(t, e.offset, 7);
  lim.max_depth = 0; /* scalars only */
  TL_EXPECT_OK(t, parse_lim(&a, "\"s\"", &lim, &v, &e));
  TL_EXPECT_STATUS(t, parse_lim(&a, "[]", &lim, &v, &e),
                   TL_ERR_INVALID_ARGUMENT);
  lim = tl_json_limits_default();
  lim.max_values = 4; /* the array counts as a value */
  TL_EXPECT_OK(t, parse_lim(&a, "[1, [2]]", &lim, &v, &e));
  TL_EXPECT_STATUS(t, parse_lim(&a, "[1, [2], 3]", &lim, &v, &e),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STR(t, e.reason, "too many values");
  TL_EXPECT_EQ_U64(t, e.offset, 9);
  TL_EXPECT_EQ_U64(t, a.used, 0);
}

/* 10,000 nested brackets: refused at the limit, no recursion anywhere;
 * with the limit raised the walk is still iterative. */
static void deep_nesting_is_iterative(tl_test_ctx *t) {
  enum { N = 10000 };
  static char doc[2 * N + 1];
  tl_json_limits lim = tl_json_limits_default();
  tl_arena a;
  tl_json_value *v;
  tl_json_error e;
  memset(doc, '[', N);
  memset(doc + N, ']', N);
  doc[2 * N] = '\0';
  TL_EXPECT_STATUS(t, parse(&a, doc, &v, &e), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, e.offset, 128);
  lim.max_depth = SIZE_MAX;
  if (!TL_EXPECT_OK(t, parse_lim(&a, doc, &lim, &v, &e))) return;
  size_t depth = 0;
  for (const tl_json_value *p = v; p->u.arr.n == 1; p = &p->u.arr.items[0])
    depth++;
  TL_EXPECT_EQ_U64(t, depth, N - 1);
  doc[N] = '\0'; /* unterminated */
  TL_EXPECT_STATUS(t, parse_lim(&a, doc, &lim, &v, &e),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, e.offset, N);
}

/* The arena keeps exactly the tree; every allocation can fail cleanly. */
static void arena_use_and_exhaustion(tl_test_ctx *t) {
  const char *doc =
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hi \\u00e9\"}, "
      "{\"role\": \"assistant\", \"content\": \"\"}], \"n\": 1.5, \"a\": "
      "{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":"
      "8,"
      "\"k9\":9,\"k10\":10,\"k11\":11,\"k12\":12,\"k13\":13,\"k14\":14,\"k15\":"
      "15,\"k16\":16,\"k17\":17}}";
  tl_arena a;
  tl_json_value *v;
  tl_json_error e;
  if (!TL_EXPECT_OK(t, parse(&a, doc, &v, &e))) return;
  size_t used = a.used;
  /* 1 root + 3 + 2 + 2*2 + 17 members..., strings: about 1 KB in all */
  TL_EXPECT(t, used > 0 && used < 2048);
  for (size_t k = 1; k < 16; k++) {
    uint8_t mem[4096];
    tl_status st;
    tl_arena_init(&a, mem, sizeof mem);
    a.fail_countdown = k;
    st = tl_json_parse((const uint8_t *)doc, strlen(doc), NULL, &a, &v, &e);
    if (st == TL_OK) {
      TL_EXPECT_EQ_U64(t, a.used, used);
      break;
    }
    TL_EXPECT_STATUS(t, st, TL_ERR_OUT_OF_MEMORY);
    TL_EXPECT_EQ_U64(t, a.used, 0);
  }
  /* Too small an arena: out of memory, never a partial tree. */
  for (size_t cap = 0; cap < used; cap += 16) {
    uint8_t mem[4096];
    tl_arena_init(&a, mem, cap);
    TL_EXPECT_STATUS(
        t, tl_json_parse((const uint8_t *)doc, strlen(doc), NULL, &a, &v, &e),
        TL_ERR_OUT_OF_MEMORY);
    TL_EXPECT(t, v == NULL);
  }
  TL_EXPECT_STATUS(t, tl_json_parse(NULL, 1, NULL, &a, &v, &e),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t,
                   tl_json_parse((const uint8_t *)"1", 1, NULL, NULL, &v, &e),
                   TL_ERR_INVALID_ARGUMENT);
}

/* float(text) from CPython, bit for bit: random digit strings, exact
 * halfway points (ties to even), a hair either side, more than 800
 * significant digits, subnormals, underflow, overflow (refused). */
static void floats_agree_with_python(tl_test_ctx *t) {
  size_t n = sizeof tl_py_parse_vectors / sizeof tl_py_parse_vectors[0];
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const tl_py_parse_vector *c = &tl_py_parse_vectors[i];
    tl_arena a;
    tl_json_value *v;
    tl_json_error e;
    tl_status st = parse(&a, c->text, &v, &e);
    bool ok;
    if (c->ok)
      ok = st == TL_OK && v->type == TL_JSON_FLOAT && bits(v->u.f) == c->bits;
    else
      ok = st == TL_ERR_INVALID_ARGUMENT &&
           strcmp(e.reason, "number out of double range") == 0;
    if (!ok && bad++ < 10) {
      TL_EXPECT(t, ok);
      tl_test_print(t, "    text: ");
      tl_test_print(t, c->text);
      tl_test_print(t, "\n    want bits: ");
      tl_test_print_hex(t, &c->bits, 8);
      if (st == TL_OK) {
        uint64_t g = bits(v->u.f);
        tl_test_print(t, " got bits: ");
        tl_test_print_hex(t, &g, 8);
      }
      tl_test_print(t, "\n");
    }
  }
  TL_EXPECT_EQ_U64(t, bad, 0);
  TL_EXPECT(t, n > 5000);
}

static const tl_test_case cases[] = {
    TL_CASE(scalars_and_types),
    TL_CASE(strings_decode),
    TL_CASE(containers_keep_order),
    TL_CASE(refusals_locate_the_fault),
    TL_CASE(duplicate_keys_in_large_object),
    TL_CASE(limits_at_their_boundaries),
    TL_CASE(deep_nesting_is_iterative),
    TL_CASE(arena_use_and_exhaustion),
    TL_CASE(floats_agree_with_python),
};

TL_SUITE(json_parse, cases);
