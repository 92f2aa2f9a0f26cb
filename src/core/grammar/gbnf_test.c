/* Specification of the GBNF reader (gbnf.c).
 *
 * What a grammar text means is checked against the same grammar built
 * directly with the builder (an independent construction): the two must
 * have the same digest, which is the digest of the lowered rules. Every
 * construct of llama.cpp's grammars/README.md is covered this way: string
 * escapes (\xNN is a code point, as in llama.cpp), classes, negation,
 * '.', grouping, alternatives across lines, quantifiers and their
 * stacking, rule references, comments, CRLF. Refusals: one minimal text
 * per message, with its status, offset and "line L, column C". */
#include "grammar/grammar.h"

#include <string.h>

#include "tl_test.h"

static _Alignas(64) uint8_t region[2][1u << 20];

static tl_status read_gbnf(int slot, const char *text, const tl_grammar **g, tl_gerror *e) {
  tl_arena a;
  tl_arena_init(&a, region[slot], sizeof region[slot]);
  return tl_grammar_from_gbnf(&a, (const uint8_t *)text, strlen(text), g, e);
}

/* A builder in the other slot; the test builds root's body with it. */
static tl_gbuilder *builder(void) {
  static tl_arena a;
  tl_gbuilder *b = NULL;
  tl_arena_init(&a, region[1], sizeof region[1]);
  tl_gb_new(&a, &b);
  return b;
}

static tl_gexpr lit(tl_gbuilder *b, const char *s) {
  return tl_gb_literal(b, (const uint8_t *)s, strlen(s));
}

static tl_gexpr range(tl_gbuilder *b, uint32_t lo, uint32_t hi) {
  uint32_t r[2] = {lo, hi};
  return tl_gb_class(b, r, 1, false);
}

static tl_gexpr seq2(tl_gbuilder *b, tl_gexpr x, tl_gexpr y) {
  tl_gexpr items[2] = {x, y};
  return tl_gb_seq(b, items, 2);
}

static tl_gexpr alt2(tl_gbuilder *b, tl_gexpr x, tl_gexpr y) {
  tl_gexpr items[2] = {x, y};
  return tl_gb_alt(b, items, 2);
}

/* text read as GBNF has the digest of root ::= body (built in b). */
static void expect_same(tl_test_ctx *t, const char *text, tl_gbuilder *b, tl_gexpr body) {
  const tl_grammar *g, *h;
  tl_gerror e;
  uint8_t d1[32], d2[32];
  uint32_t root = tl_gb_rule(b, "root", 4);
  tl_gb_define(b, root, body);
  if (!TL_EXPECT_OK(t, tl_gb_finish(b, root, &h, &e))) return;
  if (!TL_EXPECT_OK(t, read_gbnf(0, text, &g, &e))) {
    tl_test_print(t, e.message);
    return;
  }
  tl_grammar_digest(g, d1);
  tl_grammar_digest(h, d2);
  if (!TL_EXPECT_MEM(t, d1, d2, 32)) {
    tl_test_print(t, "grammar: ");
    tl_test_print(t, text);
  }
}

static void literals_and_escapes(tl_test_ctx *t) {
  tl_gbuilder *b = builder();
  expect_same(t, "root ::= \"ab\"", b, lit(b, "ab"));
  b = builder();
  /* every escape of llama.cpp's parse_char */
  expect_same(t, "root ::= \"\\x41\\u00e9\\U0001F600\\n\\r\\t\\\\\\\"\\[\\]\"", b,
              lit(b, "A\xc3\xa9\xf0\x9f\x98\x80\n\r\t\\\"[]"));
  b = builder();
  /* \xNN names the code point U+00NN (its UTF-8), never the byte NN */
  expect_same(t, "root ::= \"\\xe9\\xFF\"", b, lit(b, "\xc3\xa9\xc3\xbf"));
  b = builder();
  expect_same(t, "root ::= \"\xc3\xa9\xe6\x97\xa5\"", b, lit(b, "\xc3\xa9\xe6\x97\xa5"));
  b = builder();
  /* a sequence of literals is their concatenation as a sequence */
  expect_same(t, "root ::= \"a\" \"\" \"b\"", b, seq2(b, lit(b, "a"), lit(b, "b")));
  b = builder();
  expect_same(t, "root ::= \"\"", b, tl_gb_seq(b, NULL, 0));
}

static void classes(tl_test_ctx *t) {
  tl_gbuilder *b = builder();
  expect_same(t, "root ::= [0-9]", b, range(b, '0', '9'));
  b = builder();
  {
    uint32_t r[] = {'a', 'c', '\n', '\n'};
    expect_same(t, "root ::= [^a-c\\n]", b, tl_gb_class(b, r, 2, true));
  }
  b = builder();
  {
    /* '-' first or last is itself; "]" and "\\" by escape */
    uint32_t r[] = {'-', '-', 'a', 'a', ']', ']', '\\', '\\', '-', '-'};
    expect_same(t, "root ::= [-a\\]\\\\-]", b, tl_gb_class(b, r, 5, false));
  }
  b = builder();
  {
    uint32_t r[] = {0xE9, 0xFF, 0x3041, 0x309F, 0x1F600, 0x1F600};
    expect_same(t, "root ::= [\\xe9-\\xff\xe3\x81\x81-\xe3\x82\x9f\\U0001F600]", b,
                tl_gb_class(b, r, 3, false));
  }
  b = builder();
  expect_same(t, "root ::= .", b, range(b, 0, 0x10FFFF));
  b = builder();
  /* a range of surrogates is allowed in a class: it matches nothing */
  {
    uint32_t r[] = {'a', 'a', 0xD800, 0xDFFF};
    expect_same(t, "root ::= [a\\uD800-\\uDFFF]", b, tl_gb_class(b, r, 2, false));
  }
}

static void quantifiers(tl_test_ctx *t) {
  tl_gbuilder *b = builder();
  tl_gexpr items[5];
  items[0] = tl_gb_repeat(b, lit(b, "a"), 2, 5);
  items[1] = tl_gb_repeat(b, lit(b, "b"), 3, 3);
  items[2] = tl_gb_repeat(b, lit(b, "c"), 1, TL_GB_UNBOUNDED);
  items[3] = tl_gb_repeat(b, lit(b, "d"), 0, 1);
  items[4] = tl_gb_repeat(b, lit(b, "e"), 0, TL_GB_UNBOUNDED);
  expect_same(t, "root ::= \"a\"{2,5} \"b\"{ 3 } \"c\"{1,} \"d\"? \"e\"*", b,
              tl_gb_seq(b, items, 5));
  b = builder();
  /* + * ? are {1,} {0,} {0,1} */
  items[0] = tl_gb_repeat(b, lit(b, "x"), 1, TL_GB_UNBOUNDED);
  items[1] = tl_gb_repeat(b, lit(b, "y"), 0, TL_GB_UNBOUNDED);
  items[2] = tl_gb_repeat(b, lit(b, "z"), 0, 1);
  expect_same(t, "root ::= \"x\"+ \"y\"* \"z\"?", b, tl_gb_seq(b, items, 3));
  b = builder();
  /* quantifiers stack on the quantified item, as in llama.cpp */
  expect_same(t, "root ::= \"a\"+?", b,
              tl_gb_repeat(b, tl_gb_repeat(b, lit(b, "a"), 1, TL_GB_UNBOUNDED), 0, 1));
  b = builder();
  /* a string is one item: "ab"* repeats both bytes */
  expect_same(t, "root ::= \"ab\"*", b, tl_gb_repeat(b, lit(b, "ab"), 0, TL_GB_UNBOUNDED));
  b = builder();
  /* x{0} removes x */
  expect_same(t, "root ::= \"a\" \"b\"{0} \"c\"", b, seq2(b, lit(b, "a"), lit(b, "c")));
  b = builder();
  expect_same(t, "root ::= [a-z]{0,3}", b, tl_gb_repeat(b, range(b, 'a', 'z'), 0, 3));
}

static void structure(tl_test_ctx *t) {
  tl_gbuilder *b = builder();
  /* grouping, newlines and comments inside parentheses */
  expect_same(t, "root ::= (\n  \"a\" # first\n  | \"b\"\n)+\n", b,
              tl_gb_repeat(b, alt2(b, lit(b, "a"), lit(b, "b")), 1, TL_GB_UNBOUNDED));
  b = builder();
  /* a newline after '|' continues the rule; an empty alternative */
  expect_same(t, "root ::= \"a\" |\n  \"b\" |\n", b,
              tl_gb_alt(b, (tl_gexpr[]){lit(b, "a"), lit(b, "b"), tl_gb_seq(b, NULL, 0)}, 3));
  b = builder();
  /* rule references before their definitions; CRLF line ends; blanks and
   * comments between rules */
  {
    uint32_t x = tl_gb_rule(b, "x-1", 3);
    tl_gb_define(b, x, range(b, 'q', 'r'));
    expect_same(t, "# a comment\r\n\r\nroot ::= x-1 x-1  # twice\r\n\tx-1 ::= [q-r]\r\n", b,
                seq2(b, tl_gb_ref(b, x), tl_gb_ref(b, x)));
  }
  b = builder();
  /* a rule name may start with a digit or a capital, as in llama.cpp */
  {
    uint32_t x = tl_gb_rule(b, "9Z", 2);
    tl_gb_define(b, x, lit(b, "z"));
    expect_same(t, "root ::= 9Z\n9Z ::= \"z\"", b, tl_gb_ref(b, x));
  }
}

/* The language, seen through a matcher over single bytes: whether text is
 * a sentence of the grammar read from gbnf. */
static bool sentence(tl_test_ctx *t, const char *gbnf, const char *text) {
  static _Alignas(64) uint8_t mem[4u << 20];
  static uint8_t bytes[256];
  const uint8_t *tok[256];
  uint32_t lens[256];
  const tl_grammar *g;
  const tl_gvocab *v;
  tl_gmatcher *m;
  tl_gerror e;
  tl_arena a;
  for (int i = 0; i < 256; i++) {
    bytes[i] = (uint8_t)i;
    tok[i] = bytes + i;
    lens[i] = 1;
  }
  tl_arena_init(&a, mem, sizeof mem);
  if (!TL_EXPECT_OK(t, tl_grammar_from_gbnf(&a, (const uint8_t *)gbnf, strlen(gbnf), &g, &e)) ||
      !TL_EXPECT_OK(t, tl_gvocab_build(&a, 256, tok, lens, &v)) ||
      !TL_EXPECT_OK(t, tl_gmatcher_new(&a, g, v, 0, &m)))
    return false;
  return tl_gmatcher_accept(m, (const uint8_t *)text, strlen(text)) == TL_OK &&
         tl_gmatcher_accepting(m);
}

static void code_points(tl_test_ctx *t) {
  /* \xe9 matches the text "é" (C3 A9), never the lone byte E9 */
  TL_EXPECT(t, sentence(t, "root ::= \"\\xe9\"", "\xc3\xa9"));
  TL_EXPECT(t, !sentence(t, "root ::= \"\\xe9\"", "\xe9"));
  TL_EXPECT(t, sentence(t, "root ::= [\\x80-\\xff]", "\xc2\x80"));
  TL_EXPECT(t, !sentence(t, "root ::= [\\x80-\\xff]", "\x80"));
  /* '.' and a negated class are one character, of any length in bytes */
  TL_EXPECT(t, sentence(t, "root ::= . [^a]", "\xf0\x9f\x98\x80\xe6\x97\xa5"));
  TL_EXPECT(t, !sentence(t, "root ::= .", "ab"));
  TL_EXPECT(t, !sentence(t, "root ::= [^a]", "a"));
}

/* One refusal: its status, offset and message. */
static void expect_refusal(tl_test_ctx *t, const char *text, tl_status st, uint32_t offset,
                           const char *message) {
  const tl_grammar *g = (const tl_grammar *)&g;
  tl_gerror e;
  TL_EXPECT_STATUS(t, read_gbnf(0, text, &g, &e), st);
  TL_EXPECT(t, g == NULL);
  TL_EXPECT_EQ_U64(t, e.status, st);
  TL_EXPECT_EQ_U64(t, e.offset, offset);
  TL_EXPECT_STR(t, e.message, message);
}

static void refusals(tl_test_ctx *t) {
  const tl_status bad = TL_ERR_INVALID_ARGUMENT;
  expect_refusal(t, "", bad, 0, "gbnf: no rule 'root' (the start rule) at line 1, column 1");
  expect_refusal(t, "start ::= \"a\"", bad, 0,
                 "gbnf: no rule 'root' (the start rule) at line 1, column 1");
  expect_refusal(t, "root ::= value\n", bad, 9,
                 "gbnf: undefined rule 'value' at line 1, column 10");
  /* llama.cpp refuses an undefined rule even where root cannot reach it */
  expect_refusal(t, "root ::= \"a\"\nx ::= y\n", bad, 19,
                 "gbnf: undefined rule 'y' at line 2, column 7");
  expect_refusal(t, "root ::= \"a\"\nroot ::= \"b\"\n", bad, 13,
                 "gbnf: rule 'root' defined a second time at line 2, column 1");
  expect_refusal(t, "root = \"a\"", bad, 5,
                 "gbnf: expecting '::=' after the rule name 'root' at line 1, column 6");
  expect_refusal(t, "::= \"a\"", bad, 0, "gbnf: expecting a rule name at line 1, column 1");
  expect_refusal(t, "root ::= \"a\n", bad, 9, "gbnf: unterminated string at line 1, column 10");
  expect_refusal(t, "root ::= [a-z", bad, 9,
                 "gbnf: unterminated character class at line 1, column 10");
  expect_refusal(t, "root ::= []", bad, 9, "gbnf: empty character class at line 1, column 10");
  expect_refusal(t, "root ::= [z-a]", bad, 10,
                 "gbnf: range ends before it starts at line 1, column 11");
  expect_refusal(t, "root ::= \"\\q\"", bad, 10,
                 "gbnf: unknown escape '\\q' (known: \\n \\r \\t \\\\ \\\" \\[ \\] \\xNN "
                 "\\uNNNN \\UNNNNNNNN) at line 1, column 11");
  expect_refusal(t, "root ::= \"\\x4\"", bad, 10,
                 "gbnf: '\\x' needs 2 hex digits at line 1, column 11");
  expect_refusal(t, "root ::= \"\\U00110000\"", bad, 10,
                 "gbnf: code point past U+10FFFF at line 1, column 11");
  expect_refusal(t, "root ::= \"\\uD800\"", bad, 10,
                 "gbnf: a surrogate (U+D800..U+DFFF) is not a character at line 1, column 11");
  expect_refusal(t, "root ::= * \"a\"", bad, 9,
                 "gbnf: nothing to repeat before '*' at line 1, column 10");
  expect_refusal(t, "root ::= \"\"+", bad, 11,
                 "gbnf: nothing to repeat before '+' at line 1, column 12");
  expect_refusal(t, "root ::= \"a\"{0}?", bad, 15,
                 "gbnf: nothing to repeat before '?' at line 1, column 16");
  expect_refusal(t, "root ::= \"a\"{3,2}", bad, 12,
                 "gbnf: repetition {m,n} with m > n at line 1, column 13");
  expect_refusal(t, "root ::= \"a\"{x}", bad, 13,
                 "gbnf: expecting a number in '{...}' at line 1, column 14");
  expect_refusal(t, "root ::= \"a\"{2;}", bad, 14,
                 "gbnf: expecting ',' or '}' at line 1, column 15");
  expect_refusal(t, "root ::= \"a\"{100001}", TL_ERR_BOUNDS, 13,
                 "gbnf: repetition count past the limit of 100000 at line 1, column 14");
  expect_refusal(t, "root ::= (\"a\"", bad, 9, "gbnf: unclosed '(' at line 1, column 10");
  expect_refusal(t, "root ::= (\"a\" ]", bad, 14, "gbnf: expecting ')' at line 1, column 15");
  expect_refusal(t, "root ::= \"a\")", bad, 12, "gbnf: unmatched ')' at line 1, column 13");
  expect_refusal(t, "root ::= \"a\" @", bad, 13,
                 "gbnf: unexpected '@' (expecting an item, '|', a newline or the end) "
                 "at line 1, column 14");
  /* outside parentheses a newline ends the rule: a line starting with '|'
   * is not a continuation (as in llama.cpp) */
  expect_refusal(t, "root ::= \"a\"\n  | \"b\"", bad, 15,
                 "gbnf: expecting a rule name at line 2, column 3");
  expect_refusal(t, "root ::= <think>", TL_ERR_UNSUPPORTED_FEATURE, 9,
                 "gbnf: token terminals ('<...>', '!<...>') are not supported: grammars "
                 "here are over text at line 1, column 10");
  /* columns count characters, not bytes */
  expect_refusal(t, "root ::= \"\xc3\xa9\xc3\xa9\" ?? x", bad, 19,
                 "gbnf: undefined rule 'x' at line 1, column 18");
  expect_refusal(t, "root ::= \"\xff\"", bad, 10, "gbnf: invalid UTF-8 at line 1, column 11");
  /* the builder's own checks come through */
  {
    const tl_grammar *g;
    tl_gerror e;
    TL_EXPECT_STATUS(t, read_gbnf(0, "root ::= root \"a\"", &g, &e), bad);
    TL_EXPECT_STATUS(t, read_gbnf(0, "root ::= (\"\")*", &g, &e), bad);
    TL_EXPECT_STATUS(t, read_gbnf(0, "root ::= \"a\" root", &g, &e), bad); /* no finite text */
    TL_EXPECT(t, e.message[0] != '\0');
  }
}

static void nesting_limit(tl_test_ctx *t) {
  static char text[1200];
  const tl_grammar *g;
  tl_gerror e;
  size_t n = 0;
  memcpy(text, "root ::= ", 9);
  n = 9;
  for (int i = 0; i < 300; i++) text[n++] = '(';
  text[n++] = '"';
  text[n++] = 'a';
  text[n++] = '"';
  for (int i = 0; i < 300; i++) text[n++] = ')';
  text[n] = '\0';
  TL_EXPECT_STATUS(t, read_gbnf(0, text, &g, &e), TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, e.offset, 9 + 256);
  /* 256 levels are fine */
  n = 9;
  for (int i = 0; i < 256; i++) text[n++] = '(';
  text[n++] = '"';
  text[n++] = 'a';
  text[n++] = '"';
  for (int i = 0; i < 256; i++) text[n++] = ')';
  text[n] = '\0';
  TL_EXPECT_OK(t, read_gbnf(0, text, &g, &e));
}

/* Out of memory at each allocation in turn: TL_ERR_OUT_OF_MEMORY with a
 * message, until the reader has all it needs and succeeds with the same
 * digest. */
static void allocation_failures(tl_test_ctx *t) {
  const char *text = "root ::= (item \",\")* item\nitem ::= [a-z]+ | \"\\u00e9\"{2,4}\n";
  const tl_grammar *g;
  tl_gerror e;
  uint8_t want[32], got[32];
  tl_arena a;
  if (!TL_EXPECT_OK(t, read_gbnf(0, text, &g, &e))) return;
  tl_grammar_digest(g, want);
  for (size_t k = 1;; k++) {
    tl_status st;
    tl_arena_init(&a, region[1], sizeof region[1]);
    a.fail_countdown = k;
    st = tl_grammar_from_gbnf(&a, (const uint8_t *)text, strlen(text), &g, &e);
    if (st == TL_OK) {
      tl_grammar_digest(g, got);
      TL_EXPECT_MEM(t, got, want, 32);
      break;
    }
    if (!TL_EXPECT_STATUS(t, st, TL_ERR_OUT_OF_MEMORY) || !TL_EXPECT(t, e.message[0] != '\0') ||
        !TL_EXPECT(t, k < 1000))
      break;
  }
}

static const tl_test_case cases[] = {
    TL_CASE(literals_and_escapes), TL_CASE(classes),  TL_CASE(quantifiers),
    TL_CASE(structure),            TL_CASE(code_points), TL_CASE(refusals),
    TL_CASE(nesting_limit),        TL_CASE(allocation_failures),
};
TL_SUITE(gbnf, cases);
