/* libFuzzer target for tl_tok_encode / tl_tok_decode on a tokenizer built
 * here (the first 400 merges of Qwen3's tokenizer.json plus added tokens of
 * every kind that keeps text intact), self-contained. Any bytes in:
 *   - never a crash; invalid UTF-8 is refused with tl_utf8_validate's
 *     offset;
 *   - valid UTF-8 round-trips through raw decode to the text with every
 *     span between non-normalized added tokens NFC-normalized (the
 *     reference split below is a naive leftmost-longest search);
 *   - offsets lie in the input, start <= end, starts never decrease;
 *   - the other decode modes and a too-small capacity behave. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "tok/tokenizer.h"
#include "tok/unicode.h"
#include "tok_build.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static const char *const merges[] = {
    "Ġ Ġ",
    "ĠĠ ĠĠ",
    "i n",
    "Ġ t",
    "ĠĠĠĠ ĠĠĠĠ",
    "e r",
    "ĠĠ Ġ",
    "o n",
    "Ġ a",
    "r e",
    "a t",
    "s t",
    "e n",
    "o r",
    "Ġt h",
    "Ċ Ċ",
    "Ġ c",
    "l e",
    "Ġ s",
    "i t",
    "a n",
    "a r",
    "a l",
    "Ġth e",
    "; Ċ",
    "Ġ p",
    "Ġ f",
    "o u",
    "Ġ =",
    "i s",
    "ĠĠĠĠ ĠĠĠ",
    "in g",
    "e s",
    "Ġ w",
    "i on",
    "e d",
    "i c",
    "Ġ b",
    "Ġ d",
    "e t",
    "Ġ m",
    "Ġ o",
    "ĉ ĉ",
    "r o",
    "a s",
    "e l",
    "c t",
    "n d",
    "Ġ in",
    "Ġ h",
    "en t",
    "i d",
    "Ġ n",
    "a m",
    "ĠĠĠĠĠĠĠĠ ĠĠĠ",
    "Ġt o",
    "Ġ re",
    "- -",
    "Ġ {",
    "Ġo f",
    "o m",
    ") ;Ċ",
    "i m",
    "č Ċ",
    "Ġ (",
    "i l",
    "/ /",
    "Ġa nd",
    "u r",
    "s e",
    "Ġ l",
    "e x",
    "Ġ S",
    "a d",
    "Ġ \"",
    "c h",
    "u t",
    "i f",
    "* *",
    "Ġ }",
    "e m",
    "o l",
    "ĠĠĠĠĠĠĠĠ ĠĠĠĠĠĠĠĠ",
    "t h",
    ") Ċ",
    "Ġ{ Ċ",
    "Ġ g",
    "i g",
    "i v",
    ", Ċ",
    "c e",
    "o d",
    "Ġ v",
    "at e",
    "Ġ T",
    "a g",
    "a y",
    "Ġ *",
    "o t",
    "u s",
    "Ġ C",
    "Ġ st",
    "Ġ I",
    "u n",
    "u l",
    "u e",
    "Ġ A",
    "o w",
    "Ġ '",
    "e w",
    "Ġ <",
    "at ion",
    "( )",
    "Ġf or",
    "a b",
    "or t",
    "u m",
    "am e",
    "Ġ is",
    "p e",
    "t r",
    "c k",
    "â Ģ",
    "Ġ y",
    "i st",
    "-- --",
    ". ĊĊ",
    "h e",
    "Ġ e",
    "l o",
    "Ġ M",
    "Ġb e",
    "er s",
    "Ġ on",
    "Ġc on",
    "a p",
    "u b",
    "Ġ P",
    "ĠĠĠĠĠĠĠĠ ĠĠĠĠĠĠĠ",
    "as s",
    "in t",
    "> Ċ",
    "l y",
    "ur n",
    "Ġ $",
    "; ĊĊ",
    "a v",
    "p ort",
    "i r",
    "- >",
    "n t",
    "ct ion",
    "en d",
    "Ġd e",
    "it h",
    "ou t",
    "t urn",
    "ou r",
    "ĠĠĠĠ Ġ",
    "l ic",
    "re s",
    "p t",
    "= =",
    "Ġth is",
    "Ġw h",
    "Ġ if",
    "Ġ D",
    "v er",
    "ag e",
    "Ġ B",
    "h t",
    "ex t",
    "= \"",
    "Ġth at",
    "** **",
    "Ġ R",
    "Ġ it",
    "es s",
    "Ġ F",
    "Ġ r",
    "o s",
    "an d",
    "Ġa s",
    "e ct",
    "k e",
    "ro m",
    "Ġ //",
    "c on",
    "Ġ L",
    "( \"",
    "q u",
    "l ass",
    "Ġw ith",
    "i z",
    "d e",
    "Ġ N",
    "Ġa l",
    "o p",
    "u p",
    "g et",
    "Ġ} Ċ",
    "i le",
    "Ġa n",
    "at a",
    "o re",
    "r i",
    "Ġp ro",
    "; čĊ",
    "ĉĉ ĉĉ",
    "t er",
    "a in",
    "Ġ W",
    "Ġ E",
    "Ġc om",
    "Ġre turn",
    "ar t",
    "Ġ H",
    "a ck",
    "im port",
    "ub lic",
    "Ġ or",
    "e st",
    "m ent",
    "Ġ G",
    "ab le",
    "Ġ -",
    "in e",
    "il l",
    "in d",
    "er e",
    ": :",
    "it y",
    "Ġ +",
    "Ġt r",
    "el f",
    "ig ht",
    "( '",
    "or m",
    "ul t",
    "st r",
    ". .",
    "\" ,",
    "Ġy ou",
    "y pe",
    "p l",
    "Ġn ew",
    "Ġ j",
    "ĠĠĠĠĠĠĠĠ ĠĠĠĠĠĠĠĠĠĠĠ",
    "Ġf rom",
    "Ġ ex",
    "Ġ O",
    "l d",
    "Ġ [",
    "o c",
    ": Ċ",
    "Ġs e",
    "Ġ le",
    "---- ----",
    ". s",
    "{ Ċ",
    "' ,",
    "an t",
    "Ġa t",
    "as e",
    ". c",
    "Ġc h",
    "< /",
    "av e",
    "an g",
    "Ġa re",
    "Ġin t",
    "âĢ Ļ",
    "_ t",
    "er t",
    "i al",
    "a ct",
    "} Ċ",
    "iv e",
    "od e",
    "o st",
    "Ġc lass",
    "Ġn ot",
    "o g",
    "or d",
    "al ue",
    "al l",
    "f f",
    "( );Ċ",
    "on t",
    "im e",
    "a re",
    "Ġ U",
    "Ġp r",
    "Ġ :",
    "i es",
    "iz e",
    "u re",
    "Ġb y",
    "i re",
    "Ġ} ĊĊ",
    ". p",
    "Ġs h",
    "ic e",
    "a st",
    "pt ion",
    "tr ing",
    "o k",
    "_ _",
    "c l",
    "# #",
    "Ġh e",
    "ar d",
    ") .",
    "Ġ @",
    "i ew",
    "ĉĉ ĉ",
    "Ġw as",
    "i p",
    "th is",
    "Ġ u",
    "ĠT he",
    "id e",
    "a ce",
    "i b",
    "a c",
    "r ou",
    "Ġw e",
    "j ect",
    "Ġp ublic",
    "a k",
    "v e",
    "at h",
    "o id",
    "Ġ= >",
    "u st",
    "q ue",
    "Ġre s",
    ") )",
    "' s",
    "Ġ k",
    "an s",
    "y st",
    "un ction",
    "**** ****",
    "Ġ i",
    "Ġ us",
    "p p",
    "on e",
    "a il",
    "== ==",
    "n ame",
    "Ġst r",
    "Ġ /",
    "Ġ &",
    "a ch",
    "d iv",
    "yst em",
    "el l",
    "Ġh ave",
    "er r",
    "ou ld",
    "ul l",
    "p on",
    "Ġ J",
    "_ p",
    "Ġ= =",
    "ig n",
    "S t",
    ". Ċ",
    "Ġp l",
    ") ;ĊĊ",
    "f orm",
    "p ut",
    "ou nt",
    "} ĊĊ",
    "d d",
    "it e",
    "Ġg et",
    "r r",
    "om e",
    "Ġ âĢ",
    "ar am",
    "c c",
    "Ġ* /",
    "E R",
    "I n",
    "le s",
    "_ s",
    "on g",
    "i e",
    "Ġc an",
    "Ġ V",
    "er v",
    "p r",
    "Ġ un",
    "ro w",
    "b er",
    "Ġd o",
    "l l",
    "Ġ el",
};

/* Raw (not normalized) added tokens: the reference split knows these. */
static const char *const raw_added[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>",
    "</think>",      "<tool_call>",  "<|",         "the"};
static const uint32_t raw_flags[] = {1, 1, 1, 0, 0, 0, 0, 0};
/* Normalized ones (NFC already, so matching them changes no text). */
static const char *const norm_added[] = {"<W>", "\xE4\xB8\xAD\xE6\x96\x87",
                                         "ing"};
static const uint32_t norm_flags[] = {(1u << 1) | (1u << 4), 1u << 1,
                                      (1u << 1) | (1u << 4)};

static tok_builder builder;
static uint8_t section[1 << 16];
static const tl_tokenizer *tok;
static void *load_mem;

static void setup(void) {
  size_t len, bound;
  tl_arena arena;
  tok_build_init(&builder);
  for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++)
    CHECK(tok_build_merge(&builder, merges[i]));
  for (size_t i = 0; i < sizeof raw_added / sizeof raw_added[0]; i++)
    tok_build_added(&builder, raw_added[i], raw_flags[i]);
  for (size_t i = 0; i < sizeof norm_added / sizeof norm_added[0]; i++)
    tok_build_added(&builder, norm_added[i], norm_flags[i]);
  len = tok_build_finish(&builder, section, sizeof section);
  CHECK(len > 0);
  CHECK(tl_tok_load_arena_bound(section, len, &bound) == TL_OK);
  load_mem = malloc(bound);
  CHECK(load_mem != NULL);
  tl_arena_init(&arena, load_mem, bound);
  CHECK(tl_tok_load(section, len, &arena, &tok) == TL_OK);
}

/* Appends NFC(s[0..n)) to out. */
static size_t nfc_into(const uint8_t *s, size_t n, uint8_t *out) {
  size_t cap = 27 * n + 256;
  void *mem = malloc(cap);
  tl_arena a;
  tl_uni_nfc_result r;
  CHECK(mem != NULL);
  tl_arena_init(&a, mem, cap);
  CHECK(tl_uni_nfc(s, n, 0, &a, &r) == TL_OK);
  memcpy(out, r.text, r.len);
  free(mem);
  return r.len;
}

/* The expected raw decode: raw added tokens kept, the rest NFC'd. */
static size_t expected(const uint8_t *s, size_t n, uint8_t *out) {
  size_t i = 0, gap = 0, len = 0;
  while (i < n) {
    size_t best = 0;
    for (size_t k = 0; k < sizeof raw_added / sizeof raw_added[0]; k++) {
      size_t m = strlen(raw_added[k]);
      if (m > best && m <= n - i && memcmp(s + i, raw_added[k], m) == 0)
        best = m;
    }
    if (best == 0) {
      i++;
      continue;
    }
    len += nfc_into(s + gap, i - gap, out + len);
    memcpy(out + len, s + i, best);
    len += best;
    i += best;
    gap = i;
  }
  return len + nfc_into(s + gap, n - gap, out + len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t bound, n = 0, err = 0, bad = 0, out_len = 0, want_len;
  uint32_t *ids;
  tl_tok_span *offs;
  uint8_t *out, *want;
  void *scratch_mem;
  tl_arena scratch;
  tl_status st;
  if (tok == NULL) setup();
  if (size > (1u << 16)) return 0;
  CHECK(tl_tok_encode_scratch_bound(size, &bound) == TL_OK);
  scratch_mem = malloc(bound);
  ids = malloc((3 * size + 1) * sizeof *ids);
  offs = malloc((3 * size + 1) * sizeof *offs);
  out = malloc(12 * size + 16);
  want = malloc(3 * size + 16);
  CHECK(scratch_mem && ids && offs && out && want);
  tl_arena_init(&scratch, scratch_mem, bound);
  st = tl_tok_encode(tok, data, size, &scratch, ids, offs, 3 * size + 1, &n,
                     &err);
  if (tl_utf8_validate(data, size, &bad) != TL_OK) {
    CHECK(st == TL_ERR_INVALID_UTF8 && err == bad && n == 0);
  } else {
    CHECK(st == TL_OK);
    CHECK(scratch.used == 0 && scratch.high_water <= bound);
    for (size_t i = 0; i < n; i++) {
      CHECK(ids[i] < tl_tok_vocab_size(tok));
      CHECK(offs[i].start <= offs[i].end && offs[i].end <= size);
      CHECK(i == 0 || offs[i].start >= offs[i - 1].start);
    }
    CHECK(tl_tok_decode(tok, ids, n, TL_TOK_DECODE_RAW, out, 3 * size + 16,
                        &out_len, &bad) == TL_OK);
    want_len = expected(data, size, want);
    CHECK(out_len == want_len && memcmp(out, want, out_len) == 0);
    /* too small: the count needed, the prefix written */
    if (n > 1) {
      size_t m = 0;
      uint32_t first = ids[0];
      tl_arena_init(&scratch, scratch_mem, bound);
      CHECK(tl_tok_encode(tok, data, size, &scratch, ids, NULL, n - 1, &m,
                          NULL) == TL_ERR_BOUNDS);
      CHECK(m == n && ids[0] == first);
    }
    CHECK(tl_tok_decode(tok, ids, n, TL_TOK_DECODE_VISIBLE, out, 3 * size + 16,
                        &out_len, &bad) == TL_OK);
    CHECK(out_len <= want_len);
    CHECK(tl_tok_decode(tok, ids, n, TL_TOK_DECODE_DIAGNOSTIC, out,
                        12 * size + 16, &out_len, &bad) == TL_OK);
    CHECK(tl_utf8_validate(out, out_len, NULL) == TL_OK);
  }
  /* the input's bytes as ids: in range or refused with the index */
  if (size >= 4) {
    size_t k = size / 4;
    for (size_t i = 0; i < k; i++) {
      ids[i] = ((uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8) %
               (tl_tok_vocab_size(tok) + 2);
    }
    st = tl_tok_decode(tok, ids, k, TL_TOK_DECODE_DIAGNOSTIC, out,
                       12 * size + 16, &out_len, &bad);
    CHECK(st == TL_OK || st == TL_ERR_BOUNDS ||
          (st == TL_ERR_INVALID_ARGUMENT && bad < k &&
           ids[bad] >= tl_tok_vocab_size(tok)));
  }
  free(scratch_mem);
  free(ids);
  free(offs);
  free(out);
  free(want);
  return 0;
}
