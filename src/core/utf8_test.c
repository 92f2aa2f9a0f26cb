/* Strict UTF-8: Markus Kuhn-style stress cases, every range boundary of
 * Unicode §3.9 Table 3-7, and the maximal-subpart offsets the tokenizer
 * will report (Table 3-8 is checked verbatim). */
#include "utf8.h"

#include <string.h>

#include "tl_test.h"

#define VALID SIZE_MAX

typedef struct utf8_case {
  const char *what;
  const char *hex;
  size_t bad_offset; /* VALID, or the first maximal ill-formed subpart */
  size_t subpart;    /* its length: the bytes one U+FFFD stands for */
  size_t n_fffd;     /* U+FFFD count under the best practice */
} utf8_case;

static const utf8_case cases_table[] = {
    /* well-formed, every boundary */
    {"empty", "", VALID, 0, 0},
    {"U+0000 is text", "00", VALID, 0, 0},
    {"U+007F", "7f", VALID, 0, 0},
    {"U+0080", "c280", VALID, 0, 0},
    {"U+07FF", "dfbf", VALID, 0, 0},
    {"U+0800", "e0a080", VALID, 0, 0},
    {"U+D7FF", "ed9fbf", VALID, 0, 0},
    {"U+E000", "ee8080", VALID, 0, 0},
    {"U+FFFD", "efbfbd", VALID, 0, 0},
    {"U+FFFE noncharacter", "efbfbe", VALID, 0, 0},
    {"U+FFFF", "efbfbf", VALID, 0, 0},
    {"U+10000", "f0908080", VALID, 0, 0},
    {"U+10FFFF", "f48fbfbf", VALID, 0, 0},
    {"BOM", "efbbbf", VALID, 0, 0},
    {"kosme", "cebae1bdb9cf83cebcceb5", VALID, 0, 0},
    {"mixed lengths", "41c3bce6b0b4f0908591", VALID, 0, 0},
    /* beyond the scalar range */
    {"U+110000", "f4908080", 0, 1, 4},
    {"U+13FFFF", "f4bfbfbf", 0, 1, 4},
    {"F5 lead", "f5808080", 0, 1, 4},
    {"5-byte form", "f888808080", 0, 1, 5},
    {"6-byte form", "fc8480808080", 0, 1, 6},
    {"FE", "fe", 0, 1, 1},
    {"FF", "ff", 0, 1, 1},
    {"FFFE byte pair", "fffe", 0, 1, 2},
    /* surrogates */
    {"U+D800", "eda080", 0, 1, 3},
    {"U+DBFF", "edafbf", 0, 1, 3},
    {"U+DC00", "edb080", 0, 1, 3},
    {"U+DFFF", "edbfbf", 0, 1, 3},
    {"CESU pair", "eda0bdedb8b0", 0, 1, 6},
    {"after U+D7FF", "ed9fbfeda080", 3, 1, 3},
    /* overlongs */
    {"overlong NUL C0 80", "c080", 0, 1, 2},
    {"overlong C1 BF", "c1bf", 0, 1, 2},
    {"overlong 3-byte NUL", "e08080", 0, 1, 3},
    {"overlong U+07FF", "e09fbf", 0, 1, 3},
    {"overlong 4-byte NUL", "f0808080", 0, 1, 4},
    {"overlong U+FFFF", "f08fbfbf", 0, 1, 4},
    {"overlong slash", "c0af", 0, 1, 2},
    /* stray continuation bytes */
    {"lone 80", "80", 0, 1, 1},
    {"lone BF", "bf", 0, 1, 1},
    {"ASCII then 80", "6180", 1, 1, 1},
    {"two continuations", "80bf", 0, 1, 2},
    {"extra continuation", "c280bf", 2, 1, 1},
    /* truncated sequences */
    {"C2 at end", "c2", 0, 1, 1},
    {"E0 A0 at end", "e0a0", 0, 2, 1},
    {"F0 90 80 at end", "f09080", 0, 3, 1},
    {"F4 8F BF at end", "f48fbf", 0, 3, 1},
    {"euro truncated", "6162e282", 2, 2, 1},
    {"truncated then ASCII", "e28241", 0, 2, 1},
    {"2-byte lead then ASCII", "c241", 0, 1, 1},
    {"lead then lead", "41c2c280", 1, 1, 1},
    {"after U+FFFF", "efbfbff08f", 3, 1, 2},
    {"F1 truncated twice", "f180f180", 0, 2, 2},
    /* Unicode §3.9 Table 3-8, verbatim */
    {"table 3-8", "61f18080e180c262806380bf64", 1, 3, 6},
};

static void check_case(tl_test_ctx *t, const utf8_case *c) {
  uint8_t buf[32];
  size_t len = tl_test_unhex(c->hex, buf, sizeof buf), bad = 12345, pos = 0;
  size_t n_fffd = 0;
  tl_status st;
  if (!TL_EXPECT(t, len != SIZE_MAX)) return;
  st = tl_utf8_validate(buf, len, &bad);
  if (c->bad_offset == VALID) {
    if (!TL_EXPECT_OK(t, st)) tl_test_print(t, c->what);
    TL_EXPECT_EQ_U64(t, bad, 12345); /* untouched */
  } else {
    if (!TL_EXPECT_STATUS(t, st, TL_ERR_INVALID_UTF8) ||
        !TL_EXPECT_EQ_U64(t, bad, c->bad_offset) ||
        !TL_EXPECT_EQ_U64(t, tl_utf8_subpart_len(buf, len, bad), c->subpart))
      tl_test_print(t, c->what);
  }
  /* Walk with tl_utf8_next, substituting like the best practice does; the
   * first failure must be at the validator's offset. */
  while (pos < len) {
    uint32_t cp = 0xDEADu;
    size_t at = pos;
    st = tl_utf8_next(buf, len, &pos, &cp);
    if (st == TL_OK) continue;
    TL_EXPECT_STATUS(t, st, TL_ERR_INVALID_UTF8);
    TL_EXPECT_EQ_U64(t, pos, at);
    TL_EXPECT_EQ_U64(t, cp, 0xDEADu);
    if (n_fffd == 0) TL_EXPECT_EQ_U64(t, at, c->bad_offset);
    n_fffd++;
    pos += tl_utf8_subpart_len(buf, len, pos);
    if (!TL_EXPECT(t, pos > at)) return;
  }
  if (!TL_EXPECT_EQ_U64(t, n_fffd, c->n_fffd)) tl_test_print(t, c->what);
}

static void stress_table(tl_test_ctx *t) {
  for (size_t i = 0; i < sizeof cases_table / sizeof cases_table[0]; i++)
    check_case(t, &cases_table[i]);
}

/* Table 3-8 once more, as the substituted code point sequence. */
static void table_3_8_substitution(tl_test_ctx *t) {
  static const uint32_t want[] = {0x61,   0xFFFD, 0xFFFD, 0xFFFD, 0x62,
                                  0xFFFD, 0x63,   0xFFFD, 0xFFFD, 0x64};
  uint8_t buf[16];
  uint32_t got[16];
  size_t len = tl_test_unhex("61f18080e180c262806380bf64", buf, sizeof buf);
  size_t pos = 0, n = 0;
  while (pos < len && n < 16) {
    uint32_t cp;
    if (tl_utf8_next(buf, len, &pos, &cp) == TL_OK) {
      got[n++] = cp;
    } else {
      got[n++] = 0xFFFD;
      pos += tl_utf8_subpart_len(buf, len, pos);
    }
  }
  TL_EXPECT_EQ_U64(t, n, 10);
  TL_EXPECT_MEM(t, got, want, sizeof want);
}

static size_t expected_len(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* Every scalar value encodes, validates and decodes back; every surrogate
 * and every value above U+10FFFF is refused by the encoder. */
static void every_scalar_round_trips(tl_test_ctx *t) {
  for (uint32_t cp = 0; cp <= 0x110000u; cp++) {
    uint8_t b[4];
    size_t n = tl_utf8_encode(cp, b), pos = 0;
    uint32_t back = 0;
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > TL_UTF8_MAX_SCALAR) {
      if (!TL_EXPECT_EQ_U64(t, n, 0)) return;
      continue;
    }
    if (!TL_EXPECT_EQ_U64(t, n, expected_len(cp)) ||
        !TL_EXPECT_OK(t, tl_utf8_validate(b, n, NULL)) ||
        !TL_EXPECT_OK(t, tl_utf8_next(b, n, &pos, &back)) ||
        !TL_EXPECT_EQ_U64(t, back, cp) || !TL_EXPECT_EQ_U64(t, pos, n) ||
        !TL_EXPECT_EQ_U64(t, tl_utf8_subpart_len(b, n, 0), 0))
      return;
    /* Every proper prefix is a truncated sequence of subpart = prefix. */
    for (size_t k = 1; k < n; k++) {
      size_t bad = 99;
      if (!TL_EXPECT_STATUS(t, tl_utf8_validate(b, k, &bad),
                            TL_ERR_INVALID_UTF8) ||
          !TL_EXPECT_EQ_U64(t, bad, 0) ||
          !TL_EXPECT_EQ_U64(t, tl_utf8_subpart_len(b, k, 0), k))
        return;
    }
  }
  {
    uint8_t b[4] = {1, 2, 3, 4};
    TL_EXPECT_EQ_U64(t, tl_utf8_encode(0xFFFFFFFFu, b), 0);
    TL_EXPECT_EQ_U64(t, b[0], 1); /* nothing written */
  }
}

/* All 65536 two-byte strings against the table: valid exactly when both
 * are ASCII or they form C2..DF 80..BF. */
static void every_two_byte_string(tl_test_ctx *t) {
  for (unsigned a = 0; a < 256; a++) {
    for (unsigned b = 0; b < 256; b++) {
      uint8_t s[2] = {(uint8_t)a, (uint8_t)b};
      bool want = (a < 0x80 && b < 0x80) ||
                  (a >= 0xC2 && a <= 0xDF && b >= 0x80 && b <= 0xBF);
      size_t bad = 99;
      tl_status st = tl_utf8_validate(s, 2, &bad);
      if (!TL_EXPECT_STATUS(t, st, want ? TL_OK : TL_ERR_INVALID_UTF8)) {
        tl_test_print_hex(t, s, 2);
        return;
      }
      if (!want) {
        /* The first byte is bad unless it is ASCII. */
        size_t want_off = a < 0x80 ? 1 : 0;
        if (!TL_EXPECT_EQ_U64(t, bad, want_off)) return;
      }
    }
  }
}

static void offsets_are_absolute_in_long_input(tl_test_ctx *t) {
  static uint8_t buf[5000];
  size_t bad = 0;
  memset(buf, 'x', sizeof buf);
  TL_EXPECT_OK(t, tl_utf8_validate(buf, sizeof buf, &bad));
  buf[4321] = 0xED;
  buf[4322] = 0xA0;
  buf[4323] = 0x80;
  TL_EXPECT_STATUS(t, tl_utf8_validate(buf, sizeof buf, &bad),
                   TL_ERR_INVALID_UTF8);
  TL_EXPECT_EQ_U64(t, bad, 4321);
  buf[4999] = 0xC3; /* a later error does not move the first one */
  TL_EXPECT_STATUS(t, tl_utf8_validate(buf, sizeof buf, &bad),
                   TL_ERR_INVALID_UTF8);
  TL_EXPECT_EQ_U64(t, bad, 4321);
}

static void bad_arguments_are_typed(tl_test_ctx *t) {
  size_t pos = 0;
  uint32_t cp = 0;
  uint8_t one = 'a';
  TL_EXPECT_STATUS(t, tl_utf8_validate(NULL, 1, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_utf8_validate(NULL, 0, NULL));
  TL_EXPECT_STATUS(t, tl_utf8_next(&one, 1, NULL, &cp),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_utf8_next(&one, 1, &pos, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_utf8_next(&one, 1, &pos, &cp));
  TL_EXPECT_STATUS(t, tl_utf8_next(&one, 1, &pos, &cp), TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, tl_utf8_subpart_len(&one, 1, 1), 0);
  TL_EXPECT_EQ_U64(t, tl_utf8_subpart_len(NULL, 0, 0), 0);
}

static const tl_test_case cases[] = {
    TL_CASE(stress_table),
    TL_CASE(table_3_8_substitution),
    TL_CASE(every_scalar_round_trips),
    TL_CASE(every_two_byte_string),
    TL_CASE(offsets_are_absolute_in_long_input),
    TL_CASE(bad_arguments_are_typed),
};
TL_SUITE(utf8, cases);
