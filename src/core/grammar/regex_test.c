/* The regex reader: texts matched as a whole and as a JSON Schema search,
 * and its refusals. Expected verdicts: ECMAScript's RegExp with the u flag
 * (node: new RegExp('^(?:' + P + ')$', 'u').test(S); a search:
 * new RegExp(P, 'u').test(S)), except "a{", which the u flag rejects and
 * Annex B reads as a literal, as this reader does. */
#include "grammar/grammar.h"
#include "grammar/grammar_test_util.h"
#include "tl_test.h"

static _Alignas(64) uint8_t region[8u << 20];

typedef struct rx_case {
  const char *pattern, *text;
  bool match;
} rx_case;

static const rx_case whole[] = {
    {"a|b|cd", "cd", true}, {"a|b|cd", "c", false}, {"a|b|cd", "ab", false},
    {"a|b|cd", "", false}, {"[a-c]+x?", "abx", true}, {"[a-c]+x?", "cab", true},
    {"[a-c]+x?", "x", false}, {"[a-c]+x?", "abcxx", false}, {"\\d{2,3}", "123", true},
    {"\\d{2,3}", "1", false}, {"\\d{2,3}", "1234", false}, {"(?:ab)*c", "ababc", true},
    {"(?:ab)*c", "abac", false}, {"[^a-z]", "A", true}, {"[^a-z]", "\n", true},
    {"[^a-z]", "\xc3\xa9", true}, {"[^a-z]", "a", false}, {".", "\xc3\xa9", true},
    {".", "\xf0\x9f\x98\x80", true}, {".", "\n", false}, {".", "\r", false},
    {".", "\xe2\x80\xa8", false}, {".", "ab", false}, {"\\w+\\s\\W", "ab_9 !", true},
    {"\\w+\\s\\W", "a\t-", true}, {"\\w+\\s\\W", "a  -", false},
    {"\\u00e9\\x41\\u{1F600}", "\xc3\xa9" "A\xf0\x9f\x98\x80", true},
    {"\\u00e9\\x41\\u{1F600}", "eA\xf0\x9f\x98\x80", false}, {"\\ud83d\\ude00", "\xf0\x9f\x98\x80", true},
    {"a{2}b{1,}c{0,1}", "aabbbc", true}, {"a{2}b{1,}c{0,1}", "ab", false},
    {"a{2}b{1,}c{0,1}", "aabcc", false}, {"[\\d-]+", "1-2", true}, {"[\\d-]+", "a", false},
    {"(?<year>\\d{4})", "2024", true}, {"[\\s\\S]", "\n", true}, {"\\{\\}\\.\\*", "{}.*", true},
    {"\\{\\}\\.\\*", "{}x*", false}, {"a{", "a{", true}, {"(a|){2}b", "ab", true},
    {"(a|){2}b", "aaab", false}, {"[]", "a", false}, {"[^]", "\n", true}, {"a+?b*?", "aab", true},
    {"[\\b]", "\b", true}};

static const rx_case search[] = {
    {"^a", "ab", true}, {"^a", "ba", false}, {"b$", "ab", true}, {"b$", "ba", false},
    {"a.c", "xxabcxx", true}, {"a.c", "a\nc", false}, {"^a|b$", "ax", true},
    {"^a|b$", "xb", true}, {"^a|b$", "xa", false}, {"^a|b$", "bx", false},
    {"b", "a\nb\n", true}};

static void show(tl_test_ctx *t, const char *pattern, const char *what) {
  tl_test_print(t, "  pattern ");
  tl_test_print(t, pattern);
  tl_test_print(t, ": ");
  tl_test_print(t, what);
  tl_test_print(t, "\n");
}

static void texts_match_as_ecmascript_says(tl_test_ctx *t) {
  for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
    tl_arena a;
    const tl_grammar *g;
    tl_gmatcher *m;
    tl_gerror err;
    const rx_case *c = &whole[i];
    TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
    if (c->pattern[0] == '[' && c->pattern[1] == ']') {
      /* the empty class matches no text: a grammar of nothing is refused */
      TL_EXPECT_STATUS(t, tl_grammar_from_regex(&a, (const uint8_t *)c->pattern, 2, &g, &err),
                          TL_ERR_INVALID_ARGUMENT);
      continue;
    }
    if (!TL_EXPECT_OK(t, tl_grammar_from_regex(&a, (const uint8_t *)c->pattern,
                                               strlen(c->pattern), &g, &err))) {
      show(t, c->pattern, err.message);
      continue;
    }
    if (!TL_EXPECT_OK(t, gt_matcher(&a, g, &m))) return;
    if (!TL_EXPECT(t, gt_accepts_str(m, c->text) == c->match)) show(t, c->pattern, c->text);
  }
}

static void an_unanchored_pattern_matches_anywhere(tl_test_ctx *t) {
  for (size_t i = 0; i < sizeof search / sizeof search[0]; i++) {
    tl_arena a;
    tl_gbuilder *b;
    const tl_grammar *g;
    tl_gmatcher *m;
    tl_gerror err;
    uint32_t root;
    const rx_case *c = &search[i];
    memset(&err, 0, sizeof err);
    TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
    TL_EXPECT_OK(t, tl_gb_new(&a, &b));
    root = tl_gb_rule(b, "root", 4);
    tl_gb_define(b, root, tl_gb_regex(b, (const uint8_t *)c->pattern, strlen(c->pattern), true, &err));
    if (!TL_EXPECT_OK(t, tl_gb_finish(b, root, &g, &err))) return;
    if (!TL_EXPECT_OK(t, gt_matcher(&a, g, &m))) return;
    if (!TL_EXPECT(t, gt_accepts_str(m, c->text) == c->match)) show(t, c->pattern, c->text);
  }
}

typedef struct rx_refusal {
  const char *pattern;
  tl_status status;
  uint32_t offset;
  const char *names;
} rx_refusal;

static void refusals_name_the_construct_and_its_offset(tl_test_ctx *t) {
  static const rx_refusal cases[] = {
      {"a(?=b)", TL_ERR_UNSUPPORTED_FEATURE, 1, "lookahead"},
      {"(?<=a)b", TL_ERR_UNSUPPORTED_FEATURE, 0, "lookbehind"},
      {"(a)\\1", TL_ERR_UNSUPPORTED_FEATURE, 3, "backreference"},
      {"x\\by", TL_ERR_UNSUPPORTED_FEATURE, 1, "word boundary"},
      {"\\p{L}", TL_ERR_UNSUPPORTED_FEATURE, 0, "property escape"},
      {"a^b", TL_ERR_UNSUPPORTED_FEATURE, 1, "anchor ^"},
      {"a$b", TL_ERR_UNSUPPORTED_FEATURE, 1, "anchor $"},
      {"(?i)a", TL_ERR_UNSUPPORTED_FEATURE, 0, "group modifier"},
      {"\\ud800", TL_ERR_UNSUPPORTED_FEATURE, 0, "lone surrogate"},
      {"[z-a]", TL_ERR_INVALID_ARGUMENT, 1, "out of order"},
      {"(ab", TL_ERR_INVALID_ARGUMENT, 0, "unterminated group"},
      {"ab)", TL_ERR_INVALID_ARGUMENT, 2, "unmatched"},
      {"*a", TL_ERR_INVALID_ARGUMENT, 0, "nothing to repeat"},
      {"a**", TL_ERR_INVALID_ARGUMENT, 2, "nothing to repeat"},
      {"a{3,2}", TL_ERR_INVALID_ARGUMENT, 1, "n > m"},
      {"a{100001}", TL_ERR_BOUNDS, 1, "100000"},
      {"\\q", TL_ERR_INVALID_ARGUMENT, 0, "unknown escape"},
      {"x(a|b?)+", TL_ERR_UNSUPPORTED_FEATURE, 1, "empty text"},
      {"[a", TL_ERR_INVALID_ARGUMENT, 0, "unterminated character class"},
      {"a\xff", TL_ERR_INVALID_UTF8, 1, "UTF-8"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl_arena a;
    const tl_grammar *g = NULL;
    tl_gerror err;
    const rx_refusal *c = &cases[i];
    TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
    TL_EXPECT_STATUS(t, tl_grammar_from_regex(&a, (const uint8_t *)c->pattern, strlen(c->pattern),
                                                 &g, &err),
                        c->status);
    TL_EXPECT_EQ_U64(t, err.offset, c->offset);
    if (!TL_EXPECT(t, tl_test_contains(err.message, c->names))) show(t, c->pattern, err.message);
    TL_EXPECT(t, g == NULL);
  }
}

static const tl_test_case cases[] = {TL_CASE(texts_match_as_ecmascript_says),
                                     TL_CASE(an_unanchored_pattern_matches_anywhere),
                                     TL_CASE(refusals_name_the_construct_and_its_offset)};
TL_SUITE(regex, cases);
