/* The JSON Schema reader. Expected verdicts come from oracles independent
 * of the grammar: integer comparison for numeric bounds (every value of a
 * range), a calendar for dates, JSON Schema's own semantics plus
 * docs/structured.md's order and whitespace policies for objects and
 * arrays; refusals must name the keyword and its JSON pointer. The suite
 * of tests/grammar/schema_suite.mjs covers the keywords at large. */
#include "grammar/grammar.h"
#include "grammar/grammar_test_util.h"
#include "json/json.h"
#include "tl_test.h"

static _Alignas(64) uint8_t region[8u << 20];

/* Compiles schema text and a matcher over single bytes into a. */
static bool compile(tl_test_ctx *t, tl_arena *a, const char *schema, tl_gmatcher **m) {
  const tl_grammar *g;
  tl_gerror err;
  TL_EXPECT_OK(t, tl_arena_init(a, region, sizeof region));
  if (!TL_EXPECT_OK(t, tl_grammar_from_json_schema(a, (const uint8_t *)schema, strlen(schema), &g,
                                                   &err))) {
    tl_test_print(t, err.message);
    tl_test_print(t, "\n");
    return false;
  }
  return TL_EXPECT_OK(t, gt_matcher(a, g, m));
}

static void expect_text(tl_test_ctx *t, tl_gmatcher *m, const char *text, bool want) {
  if (!TL_EXPECT(t, gt_accepts_str(m, text) == want)) {
    tl_test_print(t, want ? "  refused: " : "  accepted: ");
    tl_test_print(t, text);
    tl_test_print(t, "\n");
  }
}

static size_t put_int(char *out, long v) {
  char tmp[24];
  size_t n = 0, k = 0;
  unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
  do tmp[n++] = (char)('0' + u % 10);
  while ((u /= 10) != 0);
  if (v < 0) out[k++] = '-';
  while (n > 0) out[k++] = tmp[--n];
  out[k] = 0;
  return k;
}

/* v / 100 as the shortest decimal ("-1.5", "0.07", "3"). */
static void put_hundredths(char *out, long v) {
  long whole = (v < 0 ? -v : v) / 100, frac = (v < 0 ? -v : v) % 100;
  size_t n = 0;
  if (v < 0) out[n++] = '-';
  n += put_int(out + n, whole);
  if (frac != 0) {
    out[n++] = '.';
    out[n++] = (char)('0' + frac / 10);
    if (frac % 10 != 0) out[n++] = (char)('0' + frac % 10);
  }
  out[n] = 0;
}

typedef struct bounds_case {
  const char *schema;
  long lo, hi; /* in the unit of the instances: integers, or hundredths */
  bool lo_incl, hi_incl, has_lo, has_hi;
} bounds_case;

static bool in_bounds(const bounds_case *c, long v) {
  if (c->has_lo && (c->lo_incl ? v < c->lo : v <= c->lo)) return false;
  if (c->has_hi && (c->hi_incl ? v > c->hi : v >= c->hi)) return false;
  return true;
}

static void integer_bounds_hold_for_every_value_in_range(tl_test_ctx *t) {
  static const bounds_case cases[] = {
      {"{\"type\":\"integer\",\"minimum\":-17,\"maximum\":123}", -17, 123, true, true, true, true},
      {"{\"type\":\"integer\",\"exclusiveMinimum\":0}", 0, 0, false, false, true, false},
      {"{\"type\":\"integer\",\"exclusiveMaximum\":-10}", 0, -10, false, false, false, true},
      {"{\"type\":\"integer\",\"minimum\":1.5,\"exclusiveMaximum\":99.5}", 2, 99, true, true, true,
       true},
      {"{\"type\":\"integer\",\"minimum\":5,\"exclusiveMinimum\":7,\"maximum\":200,"
       "\"exclusiveMaximum\":150}", 7, 150, false, false, true, true},
      {"{\"type\":\"integer\",\"minimum\":-100,\"maximum\":-100}", -100, -100, true, true, true,
       true}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl_arena a;
    tl_gmatcher *m;
    if (!compile(t, &a, cases[i].schema, &m)) return;
    for (long v = -260; v <= 260; v++) {
      char text[24];
      put_int(text, v);
      expect_text(t, m, text, in_bounds(&cases[i], v));
    }
    expect_text(t, m, "1.0", false); /* integers are written without a fraction */
  }
}

static void decimal_bounds_hold_for_every_hundredth_in_range(tl_test_ctx *t) {
  static const bounds_case cases[] = {
      {"{\"type\":\"number\",\"minimum\":1.1}", 110, 0, true, false, true, false},
      {"{\"type\":\"number\",\"exclusiveMinimum\":-0.25,\"maximum\":2}", -25, 200, false, true,
       true, true},
      {"{\"type\":\"number\",\"exclusiveMaximum\":0}", 0, 0, false, false, false, true},
      {"{\"type\":\"number\",\"minimum\":-1.07,\"exclusiveMaximum\":-0.5}", -107, -50, true,
       false, true, true},
      {"{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":0.3}", 0, 30, false, true, true,
       true}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl_arena a;
    tl_gmatcher *m;
    if (!compile(t, &a, cases[i].schema, &m)) return;
    for (long v = -300; v <= 300; v++) {
      char text[24];
      put_hundredths(text, v);
      expect_text(t, m, text, in_bounds(&cases[i], v));
    }
  }
  {
    /* Trailing zeros and long fractions compare by value. */
    tl_arena a;
    tl_gmatcher *m;
    if (!compile(t, &a, "{\"type\":\"number\",\"exclusiveMinimum\":1.1}", &m)) return;
    expect_text(t, m, "1.10", false);
    expect_text(t, m, "1.1000000001", true);
    expect_text(t, m, "1.0999999999", false);
    expect_text(t, m, "1e5", false); /* bounded numbers are written without an exponent */
  }
}

static bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static void dates_follow_the_calendar(tl_test_ctx *t) {
  static const int years[] = {1600, 1700, 1896, 1900, 1999, 2000, 2023, 2024};
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  tl_arena a;
  tl_gmatcher *m;
  if (!compile(t, &a, "{\"type\":\"string\",\"format\":\"date\"}", &m)) return;
  for (size_t k = 0; k < sizeof years / sizeof years[0]; k++)
    for (int month = 0; month <= 13; month++)
      for (int day = 0; day <= 32; day++) {
        int y = years[k];
        char text[16];
        bool valid = month >= 1 && month <= 12 && day >= 1 &&
                     day <= days[month - 1] + (month == 2 && leap(y));
        text[0] = '"';
        text[1] = (char)('0' + y / 1000);
        text[2] = (char)('0' + y / 100 % 10);
        text[3] = (char)('0' + y / 10 % 10);
        text[4] = (char)('0' + y % 10);
        text[5] = '-';
        text[6] = (char)('0' + month / 10);
        text[7] = (char)('0' + month % 10);
        text[8] = '-';
        text[9] = (char)('0' + day / 10);
        text[10] = (char)('0' + day % 10);
        text[11] = '"';
        text[12] = 0;
        expect_text(t, m, text, valid);
      }
}

static void objects_keep_schema_order_and_bounded_whitespace(tl_test_ctx *t) {
  tl_arena a;
  tl_gmatcher *m;
  if (!compile(t, &a,
               "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{}},"
               "\"required\":[\"b\"],\"additionalProperties\":false}",
               &m))
    return;
  expect_text(t, m, "{\"b\":1}", true);
  expect_text(t, m, "{\"a\":1,\"b\":[true]}", true);
  expect_text(t, m, "{ \"a\" : 1 ,\n \"b\" : null }", true);
  expect_text(t, m, "{\"b\":1,\"a\":2}", false); /* schema order */
  expect_text(t, m, "{\"a\":1}", false);         /* b is required */
  expect_text(t, m, "{}", false);
  expect_text(t, m, "{\"b\":1,\"c\":2}", false); /* no additional properties */
  expect_text(t, m, "{\"a\":\"x\",\"b\":1}", false);
  expect_text(t, m, "{\"b\":                    1}", true);  /* 20 spaces */
  expect_text(t, m, "{\"b\":                     1}", false); /* 21 */
  if (!compile(t, &a,
               "{\"properties\":{\"ab\":{\"type\":\"string\"}},\"additionalProperties\":"
               "{\"type\":\"integer\"}}",
               &m))
    return;
  expect_text(t, m, "{\"ab\":\"x\",\"a\":1,\"abc\":2,\"\":3}", true);
  expect_text(t, m, "{\"x\":1}", true);
  expect_text(t, m, "{\"x\":\"s\"}", false);
  expect_text(t, m, "{\"x\":1,\"ab\":1}", false); /* a declared name is not an additional one */
  expect_text(t, m, "7", true);                   /* no type: any other value */
}

static void arrays_count_and_position_their_items(tl_test_ctx *t) {
  tl_arena a;
  tl_gmatcher *m;
  if (!compile(t, &a,
               "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"null\"}],"
               "\"items\":{\"type\":\"boolean\"},\"minItems\":1,\"maxItems\":4}",
               &m))
    return;
  expect_text(t, m, "[\"a\"]", true);
  expect_text(t, m, "[\"a\",null,true,false]", true);
  expect_text(t, m, "[\"a\",null,true,false,true]", false);
  expect_text(t, m, "[]", false);
  expect_text(t, m, "[null]", false);
  expect_text(t, m, "[\"a\",true]", false);
}

static void enum_values_are_written_in_canonical_form(tl_test_ctx *t) {
  tl_arena a;
  tl_gmatcher *m;
  if (!compile(t, &a,
               "{\"enum\":[1.5,\"a\\\"b\\u0001\",{\"x\":[true,null]},1e21,1.0,2e-7,\"\\u00e9\"],"
               "\"title\":\"t\"}",
               &m))
    return;
  /* Number::toString and JSON.stringify's escapes. */
  expect_text(t, m, "1.5", true);
  expect_text(t, m, "1.50", false);
  expect_text(t, m, "\"a\\\"b\\u0001\"", true);
  expect_text(t, m, "\"a\\\"b\\u0001\"", true);
  expect_text(t, m, "\"a\\u0022b\\u0001\"", false);
  expect_text(t, m, "{\"x\": [true, null]}", true);
  expect_text(t, m, "1e+21", true);
  expect_text(t, m, "1", true);
  expect_text(t, m, "2e-7", true);
  expect_text(t, m, "\"\xc3\xa9\"", true);
  if (!compile(t, &a, "{\"type\":\"integer\",\"enum\":[1,1.5,\"1\",2.0]}", &m)) return;
  expect_text(t, m, "1", true);
  expect_text(t, m, "2", true);
  expect_text(t, m, "1.5", false);
  expect_text(t, m, "\"1\"", false);
}

static void recursive_refs_compile(tl_test_ctx *t) {
  tl_arena a;
  tl_gmatcher *m;
  if (!compile(t, &a,
               "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":"
               "\"integer\"},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},"
               "\"required\":[\"v\"],\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}",
               &m))
    return;
  expect_text(t, m, "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}", true);
  expect_text(t, m, "{\"v\":1,\"kids\":[{\"w\":2}]}", false);
}

/* allOf, a $ref beside keywords and keywords beside anyOf/oneOf are
 * merged into one schema: each text is accepted exactly when it is valid
 * under all of them (JSON Schema's semantics: the verdicts were checked
 * with python-jsonschema 4.26, Draft202012Validator), in the canonical
 * forms of docs/structured.md. */
static void composition_is_merged_exactly(tl_test_ctx *t) {
  typedef struct {
    const char *schema, *text;
    bool valid;
  } row;
  static const row rows[] = {
      {"{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}}},"
       "{\"properties\":{\"a\":{\"minimum\":5}},\"required\":[\"a\"]}]}",
       "{\"a\":5}", true},
      {"{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}}},"
       "{\"properties\":{\"a\":{\"minimum\":5}},\"required\":[\"a\"]}]}",
       "{\"a\":4}", false},
      {"{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}}},"
       "{\"properties\":{\"a\":{\"minimum\":5}},\"required\":[\"a\"]}]}",
       "{}", false},
      /* a side's additionalProperties constrains the other side's names */
      {"{\"allOf\":[{\"type\":\"object\",\"additionalProperties\":false},"
       "{\"properties\":{\"a\":{}}}]}",
       "{\"a\":1}", false},
      {"{\"allOf\":[{\"type\":\"object\",\"additionalProperties\":false},"
       "{\"properties\":{\"a\":{}}}]}",
       "{}", true},
      {"{\"allOf\":[{\"additionalProperties\":{\"type\":\"string\"}},"
       "{\"properties\":{\"a\":{}}}]}",
       "{\"a\":\"x\"}", true},
      {"{\"allOf\":[{\"additionalProperties\":{\"type\":\"string\"}},"
       "{\"properties\":{\"a\":{}}}]}",
       "{\"a\":1}", false},
      {"{\"type\":\"integer\",\"allOf\":[{\"maximum\":3},{\"maximum\":5}]}", "3", true},
      {"{\"type\":\"integer\",\"allOf\":[{\"maximum\":3},{\"maximum\":5}]}", "4", false},
      {"{\"allOf\":[{\"prefixItems\":[{\"type\":\"integer\"}],\"items\":false},"
       "{\"items\":{\"minimum\":2}}]}",
       "[2]", true},
      {"{\"allOf\":[{\"prefixItems\":[{\"type\":\"integer\"}],\"items\":false},"
       "{\"items\":{\"minimum\":2}}]}",
       "[1]", false},
      /* $ref beside keywords */
      {"{\"$defs\":{\"p\":{\"minimum\":2}},\"$ref\":\"#/$defs/p\",\"type\":\"integer\"}",
       "2", true},
      {"{\"$defs\":{\"p\":{\"minimum\":2}},\"$ref\":\"#/$defs/p\",\"type\":\"integer\"}",
       "1", false},
      {"{\"$defs\":{\"p\":{\"minimum\":2}},\"$ref\":\"#/$defs/p\",\"type\":\"integer\"}",
       "\"x\"", false},
      /* keywords beside anyOf / oneOf */
      {"{\"type\":\"string\",\"anyOf\":[{\"maxLength\":1},{\"minLength\":3}]}", "\"ab\"",
       false},
      {"{\"type\":\"string\",\"anyOf\":[{\"maxLength\":1},{\"minLength\":3}]}", "\"abc\"",
       true},
      {"{\"type\":\"string\",\"anyOf\":[{\"maxLength\":1},{\"minLength\":3}]}", "3", false},
      {"{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}],\"type\":\"string\"}",
       "\"s\"", true},
      {"{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}],\"type\":\"string\"}",
       "1", false},
      /* a discriminated oneOf */
      {"{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"t\":{\"const\":\"a\"},"
       "\"x\":{\"type\":\"integer\"}},\"required\":[\"t\"]},{\"type\":\"object\","
       "\"properties\":{\"t\":{\"const\":\"b\"}},\"required\":[\"t\"]}]}",
       "{\"t\":\"a\",\"x\":1}", true},
      {"{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"t\":{\"const\":\"a\"},"
       "\"x\":{\"type\":\"integer\"}},\"required\":[\"t\"]},{\"type\":\"object\","
       "\"properties\":{\"t\":{\"const\":\"b\"}},\"required\":[\"t\"]}]}",
       "{\"t\":\"c\"}", false},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    tl_arena a;
    tl_gmatcher *m;
    if (!compile(t, &a, rows[i].schema, &m)) continue;
    expect_text(t, m, rows[i].text, rows[i].valid);
  }
}

/* Every allocation of a merge-heavy schema failing in turn: a typed
 * error each time, never a crash. */
static void allocation_failures_are_typed(tl_test_ctx *t) {
  static const char s[] =
      "{\"$defs\":{\"p\":{\"properties\":{\"a\":{\"minimum\":1}}}},\"type\":\"object\","
      "\"allOf\":[{\"$ref\":\"#/$defs/p\"},{\"properties\":{\"a\":{\"type\":\"integer\"}},"
      "\"required\":[\"a\"]}],\"anyOf\":[{\"required\":[\"b\"]},"
      "{\"properties\":{\"c\":{\"type\":\"null\"}}}]}";
  size_t failures = 0;
  for (size_t k = 1; k < 100000; k++) {
    tl_arena a;
    const tl_grammar *g;
    tl_gerror err;
    tl_status st;
    TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
    a.fail_countdown = k;
    st = tl_grammar_from_json_schema(&a, (const uint8_t *)s, sizeof s - 1, &g, &err);
    if (st == TL_OK) break;
    failures++;
    if (!TL_EXPECT_STATUS(t, st, TL_ERR_OUT_OF_MEMORY)) {
      tl_test_print(t, err.message);
      break;
    }
  }
  TL_EXPECT(t, failures > 20);
}

typedef struct refusal {
  const char *schema;
  tl_status status;
  const char *names, *where;
} refusal;

static void refusals_name_the_keyword_and_where(tl_test_ctx *t) {
  static const refusal cases[] = {
      {"{\"properties\":{\"a/b\":{\"patternProperties\":{}}}}", TL_ERR_UNSUPPORTED_FEATURE,
       "'patternProperties'", "/properties/a~1b"},
      {"{\"items\":{\"multipleOf\":2}}", TL_ERR_UNSUPPORTED_FEATURE, "'multipleOf'", "/items"},
      {"{\"anyOf\":[{},{\"not\":{}}]}", TL_ERR_UNSUPPORTED_FEATURE, "'not'", "/anyOf/1"},
      {"{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", TL_ERR_UNSUPPORTED_FEATURE,
       "oneOf", "/oneOf"},
      {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":2}],\"type\":\"integer\"}",
       TL_ERR_UNSUPPORTED_FEATURE, "oneOf", "/oneOf"},
      {"{\"allOf\":[{\"pattern\":\"a\"},{\"pattern\":\"b\"}]}", TL_ERR_UNSUPPORTED_FEATURE,
       "'pattern'", "root"},
      {"{\"$defs\":{\"r\":{\"allOf\":[{\"$ref\":\"#/$defs/r\"}],\"type\":\"integer\"}},"
       "\"$ref\":\"#/$defs/r\"}",
       TL_ERR_UNSUPPORTED_FEATURE, "recursive $ref", "/$defs/r"},
      {"{\"allOf\":[{\"type\":\"strin\"},{\"type\":\"string\"}]}", TL_ERR_INVALID_ARGUMENT,
       "'type'", "root"},
      {"{\"allOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", TL_ERR_INVALID_ARGUMENT,
       "no text", ""},
      {"{\"$ref\":\"other.json#/a\"}", TL_ERR_UNSUPPORTED_FEATURE, "$ref", "root"},
      {"{\"$ref\":\"#/$defs/missing\"}", TL_ERR_INVALID_ARGUMENT, "$ref", "root"},
      {"{\"type\":\"string\",\"pattern\":\"a(?!b)\"}", TL_ERR_UNSUPPORTED_FEATURE, "lookahead",
       "/pattern"},
      {"{\"type\":\"string\",\"format\":\"hostname\"}", TL_ERR_UNSUPPORTED_FEATURE,
       "'hostname'", "root"},
      {"{\"type\":\"string\",\"pattern\":\"a\",\"maxLength\":3}", TL_ERR_UNSUPPORTED_FEATURE,
       "pattern", "root"},
      {"{\"type\":\"strin\"}", TL_ERR_INVALID_ARGUMENT, "'type'", "root"},
      {"{\"minLength\":-1,\"type\":\"string\"}", TL_ERR_INVALID_ARGUMENT, "minLength", "root"},
      {"{\"uniqueItems\":true,\"type\":\"array\"}", TL_ERR_UNSUPPORTED_FEATURE, "'uniqueItems'",
       "root"},
      {"{\"type\":\"object\",", TL_ERR_INVALID_ARGUMENT, "not JSON", "line 1"},
      {"false", TL_ERR_INVALID_ARGUMENT, "no text", ""}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl_arena a;
    const tl_grammar *g = NULL;
    tl_gerror err;
    const refusal *c = &cases[i];
    TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
    TL_EXPECT_STATUS(t, tl_grammar_from_json_schema(&a, (const uint8_t *)c->schema,
                                                    strlen(c->schema), &g, &err),
                     c->status);
    if (!TL_EXPECT(t, tl_test_contains(err.message, c->names) && tl_test_contains(err.message, c->where))) {
      tl_test_print(t, "  ");
      tl_test_print(t, err.message);
      tl_test_print(t, "\n");
    }
  }
}

/* Two schemas in one builder (what tool calls compose): each call names
 * its rules apart, and the choice of both finishes. */
static void calls_share_a_builder(tl_test_ctx *t) {
  tl_arena a;
  tl_gbuilder *b;
  tl_json_value *s1, *s2;
  tl_json_error jerr;
  tl_gerror err;
  const tl_grammar *g;
  tl_gmatcher *m;
  tl_gexpr both[2];
  uint32_t root;
  static const char t1[] = "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}}}";
  static const char t2[] = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}";
  tl_json_limits lim = tl_json_limits_default();
  memset(&err, 0, sizeof err);
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  TL_EXPECT_OK(t, tl_json_parse((const uint8_t *)t1, sizeof t1 - 1, &lim, &a, &s1, &jerr));
  TL_EXPECT_OK(t, tl_json_parse((const uint8_t *)t2, sizeof t2 - 1, &lim, &a, &s2, &jerr));
  TL_EXPECT_OK(t, tl_gb_new(&a, &b));
  both[0] = tl_gb_json_schema(b, s1, &err);
  both[1] = tl_gb_json_schema(b, s2, &err);
  root = tl_gb_rule(b, "root", 4);
  tl_gb_define(b, root, tl_gb_alt(b, both, 2));
  if (!TL_EXPECT_OK(t, tl_gb_finish(b, root, &g, &err))) return;
  if (!TL_EXPECT_OK(t, gt_matcher(&a, g, &m))) return;
  expect_text(t, m, "{\"q\":\"x\"}", true);
  expect_text(t, m, "[1,2]", true);
  expect_text(t, m, "[\"x\"]", false);
}

static const tl_test_case cases[] = {
    TL_CASE(integer_bounds_hold_for_every_value_in_range),
    TL_CASE(decimal_bounds_hold_for_every_hundredth_in_range),
    TL_CASE(dates_follow_the_calendar),
    TL_CASE(objects_keep_schema_order_and_bounded_whitespace),
    TL_CASE(arrays_count_and_position_their_items),
    TL_CASE(enum_values_are_written_in_canonical_form),
    TL_CASE(recursive_refs_compile),
    TL_CASE(composition_is_merged_exactly),
    TL_CASE(allocation_failures_are_typed),
    TL_CASE(refusals_name_the_keyword_and_where),
    TL_CASE(calls_share_a_builder)};
TL_SUITE(schema, cases);
