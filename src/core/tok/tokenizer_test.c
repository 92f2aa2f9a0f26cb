/* The tokenizer's public API (tokenizer.h) on hand-built sections
 * (tests/support/tok_build.h): section validation (TOK-S-1..6), encode
 * (added tokens with every flag, NFC, offsets, UTF-8 errors, capacity),
 * decode in its three modes, and the memory bounds. Every encode and decode
 * expectation about HF semantics comes from HF tokenizers itself:
 * tokenizer_test_hf.h, written by tools/oracle/tok_unit_cases.mjs on the
 * same vocabularies (make test checks it is current); the real Qwen3
 * vocabulary is covered by tests/tok/. */
#include "tok/tokenizer.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "utf8.h"
#include "tl_test.h"
#include "tok/tok_internal.h"
#include "tok_build.h"
#include "tok/tokenizer_test_hf.h"

static tok_builder builder;
static _Alignas(64) uint8_t section[1 << 16];
static size_t section_len;
static _Alignas(64) uint8_t load_mem[2 << 20];
static _Alignas(64) uint8_t scratch_mem[4 << 20];
static tl_arena load_arena;

static uint32_t id_of(const char *s) {
  return tok_build_find(&builder, (const uint8_t *)s, strlen(s));
}

/* One of the oracle's vocabularies (tokenizer_test_hf.h). */
static void build_vocab(unsigned v) {
  const hf_vocab *voc = &HF_VOCABS[v];
  tok_build_init(&builder);
  for (size_t i = 0; i < voc->n_merges; i++)
    tok_build_merge(&builder, voc->merges[i]);
  for (size_t i = 0; i < voc->n_added; i++)
    tok_build_added(&builder, voc->added[i].content, voc->added[i].flags);
}

/* The vocabulary most cases use. */
static void build_basic(void) { build_vocab(HF_VOCAB_BASIC); }

static tl_status load_section(const tl_tokenizer **tok) {
  tl_arena_init(&load_arena, load_mem, sizeof load_mem);
  return tl_tok_load(section, section_len, &load_arena, tok);
}

static const tl_tokenizer *load_built(tl_test_ctx *t) {
  const tl_tokenizer *tok = NULL;
  section_len = tok_build_finish(&builder, section, sizeof section);
  if (!TL_EXPECT(t, section_len > 0)) return NULL;
  if (!TL_EXPECT_OK(t, load_section(&tok))) return NULL;
  return tok;
}

/* Encodes text (len bytes); the ids and offsets land in these. */
static uint32_t ids[4096];
static tl_tok_span offs[4096];
static size_t n_ids;

static tl_status encode_n(const tl_tokenizer *tok, const char *text,
                          size_t len) {
  tl_arena scratch;
  size_t err = 0;
  tl_arena_init(&scratch, scratch_mem, sizeof scratch_mem);
  return tl_tok_encode(tok, (const uint8_t *)text, len, &scratch, ids, offs,
                       4096, &n_ids, &err);
}

/* ---- loading ---------------------------------------------------------- */

static void loads_and_reports(tl_test_ctx *t) {
  const tl_tokenizer *tok;
  const uint8_t *bytes;
  size_t len, bound;
  build_basic();
  tok = load_built(t);
  if (tok == NULL) return;
  TL_EXPECT_EQ_U64(t, tl_tok_vocab_size(tok), builder.n_tokens);
  TL_EXPECT_OK(t, tl_tok_token_bytes(tok, id_of("hello"), &bytes, &len));
  TL_EXPECT_EQ_U64(t, len, 5);
  TL_EXPECT_MEM(t, bytes, "hello", 5);
  TL_EXPECT_OK(t, tl_tok_token_bytes(tok, id_of("<think>"), &bytes, &len));
  TL_EXPECT_MEM(t, bytes, "<think>", 7);
  TL_EXPECT_STATUS(t, tl_tok_token_bytes(tok, builder.n_tokens, &bytes, &len),
                   TL_ERR_INVALID_ARGUMENT);
  /* the stated arena bound is enough, and respected */
  TL_EXPECT_OK(t, tl_tok_load_arena_bound(section, section_len, &bound));
  TL_EXPECT(t, load_arena.used <= bound);
  tl_arena_init(&load_arena, load_mem, bound);
  TL_EXPECT_OK(t, tl_tok_load(section, section_len, &load_arena, &tok));
}

/* Every arena failure point gives TL_ERR_OUT_OF_MEMORY and leaves the
 * arena as it was. */
static void load_out_of_memory(tl_test_ctx *t) {
  const tl_tokenizer *tok;
  build_basic();
  if (load_built(t) == NULL) return;
  for (size_t k = 1; k < 64; k++) {
    tl_status st;
    tl_arena_init(&load_arena, load_mem, sizeof load_mem);
    load_arena.fail_countdown = k;
    st = tl_tok_load(section, section_len, &load_arena, &tok);
    if (st == TL_OK) break;
    TL_EXPECT_STATUS(t, st, TL_ERR_OUT_OF_MEMORY);
    TL_EXPECT_EQ_U64(t, load_arena.used, 0);
  }
  for (size_t cap = 0; cap < 262144; cap += 997) { /* < the pair table */
    tl_arena_init(&load_arena, load_mem, cap);
    TL_EXPECT_STATUS(t, tl_tok_load(section, section_len, &load_arena, &tok),
                     TL_ERR_OUT_OF_MEMORY);
  }
}

static void put32(size_t at, uint32_t v) {
  section[at] = (uint8_t)v;
  section[at + 1] = (uint8_t)(v >> 8);
  section[at + 2] = (uint8_t)(v >> 16);
  section[at + 3] = (uint8_t)(v >> 24);
}

static uint32_t get32(size_t at) { return tl_tok_rd32(section + at); }

/* One corruption: set the u32 at `at` to v, expect st, restore. */
static void expect_corrupt(tl_test_ctx *t, const char *what, size_t at,
                           uint32_t v, tl_status want) {
  const tl_tokenizer *tok;
  uint32_t old = get32(at);
  put32(at, v);
  if (!TL_EXPECT_STATUS(t, load_section(&tok), want)) {
    tl_test_print(t, "  corruption: ");
    tl_test_print(t, what);
    tl_test_print(t, "\n");
  }
  put32(at, old);
}

/* TOK-S-2..6: every header field and array is checked. */
static void rejects_malformed(tl_test_ctx *t) {
  const tl_tokenizer *tok;
  uint32_t n_tokens, index_off, bytes_off, merges_off, added_off;
  build_basic();
  if (load_built(t) == NULL) return;
  n_tokens = get32(20);
  index_off = get32(32);
  bytes_off = get32(36);
  merges_off = get32(44);
  added_off = get32(48);
  expect_corrupt(t, "magic", 0, 0x4B544C55, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "major version 2", 4, 2, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "minor version 7 is fine", 4, 1 | 7u << 16, TL_OK);
  expect_corrupt(t, "profile", 8, 2, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "nfc version", 12, 0x000A0000, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "class version", 16, 0x000F0000, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "n_tokens + 1", 20, n_tokens + 1, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "n_tokens huge", 20, 0xFFFFFFFF, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "n_tokens < 256", 20, 255, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "n_merges + 1", 24, get32(24) + 1, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "n_added + 1", 28, get32(28) + 1, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "index in header", 32, 60, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "index unaligned", 32, index_off + 2, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "bytes overlap index", 36, bytes_off - 4,
                 TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "bytes_len", 40, get32(40) - 1, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "merges overlap added", 44, merges_off + 4,
                 TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "added past end", 48, added_off + 8, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "section_len", 52, (uint32_t)section_len + 4,
                 TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "reserved", 56, 1, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "reserved high", 60, 1u << 31, TL_ERR_INVALID_MODEL);
  /* the index: starts at 0, strictly increasing, ends at bytes_len */
  expect_corrupt(t, "index[0]", index_off, 1, TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "empty token", index_off + 4 * 262,
                 get32(index_off + 4 * 261), TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "index decreasing", index_off + 4 * 262,
                 get32(index_off + 4 * 261) - 1, TL_ERR_INVALID_MODEL);
  /* a byte token duplicated (and so another byte missing) */
  section[bytes_off + 'a'] = 'b';
  TL_EXPECT_STATUS(t, load_section(&tok), TL_ERR_INVALID_MODEL);
  section[bytes_off + 'a'] = 'a';
  /* merges: ids in range, result = left ++ right, pairs unique */
  expect_corrupt(t, "merge left out of range", merges_off, n_tokens,
                 TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "merge result out of range", merges_off + 8, 0xFFFFFFFF,
                 TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "merge result not the concatenation", merges_off + 8,
                 id_of("ll"), TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "merge operands swapped", merges_off + 12 + 4, 'o',
                 TL_ERR_INVALID_MODEL);
  {
    /* merge 1 made a copy of merge 0: a duplicate pair */
    uint32_t saved[3];
    for (int k = 0; k < 3; k++) {
      saved[k] = get32(merges_off + 12 + 4 * k);
      put32(merges_off + 12 + 4 * k, get32(merges_off + 4 * k));
    }
    TL_EXPECT_STATUS(t, load_section(&tok), TL_ERR_INVALID_MODEL);
    for (int k = 0; k < 3; k++) put32(merges_off + 12 + 4 * k, saved[k]);
  }
  /* added tokens: ids in range and increasing, known flags, UTF-8 */
  expect_corrupt(t, "added id out of range", added_off, n_tokens,
                 TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "added ids not increasing", added_off + 8, get32(added_off),
                 TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "unknown flag", added_off + 4, 1u << 5,
                 TL_ERR_INVALID_MODEL);
  expect_corrupt(t, "added content not UTF-8", added_off, 0xFF,
                 TL_ERR_INVALID_MODEL); /* the byte token FF */
  TL_EXPECT_OK(t, load_section(&tok));  /* everything restored */
  /* every truncation, and bytes past the declared length */
  for (size_t n = 0; n < section_len; n++) {
    tl_arena_init(&load_arena, load_mem, sizeof load_mem);
    if (!TL_EXPECT_STATUS(t, tl_tok_load(section, n, &load_arena, &tok),
                          TL_ERR_INVALID_MODEL))
      break;
  }
  tl_arena_init(&load_arena, load_mem, sizeof load_mem);
  TL_EXPECT_STATUS(t, tl_tok_load(section, section_len + 4, &load_arena, &tok),
                   TL_ERR_INVALID_MODEL);
  TL_EXPECT_STATUS(t, tl_tok_load(NULL, 0, &load_arena, &tok),
                   TL_ERR_INVALID_MODEL);
  TL_EXPECT_STATUS(t, tl_tok_load(section, section_len, NULL, &tok),
                   TL_ERR_INVALID_ARGUMENT);
}

static void rejects_duplicate_patterns(tl_test_ctx *t) {
  const tl_tokenizer *tok;
  /* two added tokens with one content */
  tok_build_init(&builder);
  tok_build_added(&builder, "<x>", 0);
  tok_build_added(&builder, "<x>", TL_TOK_ADDED_SPECIAL);
  section_len = tok_build_finish(&builder, section, sizeof section);
  TL_EXPECT_STATUS(t, load_section(&tok), TL_ERR_INVALID_MODEL);
  /* normalized: "<é>" precomposed and decomposed are one pattern */
  tok_build_init(&builder);
  tok_build_added(&builder, "<\xC3\xA9>", TL_TOK_ADDED_NORMALIZED);
  tok_build_added(&builder, "<e\xCC\x81>", TL_TOK_ADDED_NORMALIZED);
  section_len = tok_build_finish(&builder, section, sizeof section);
  TL_EXPECT_STATUS(t, load_section(&tok), TL_ERR_INVALID_MODEL);
  /* ... but one normalized and one not are two sets: fine */
  tok_build_init(&builder);
  tok_build_added(&builder, "<\xC3\xA9>", TL_TOK_ADDED_NORMALIZED);
  tok_build_added(&builder, "<e\xCC\x81>", 0);
  section_len = tok_build_finish(&builder, section, sizeof section);
  TL_EXPECT_OK(t, load_section(&tok));
}

/* An rstrip token's whitespace can run into a match that starts with
 * whitespace; HF then emits overlapping splits (or panics). Refused. */
static void rejects_rstrip_into_space(tl_test_ctx *t) {
  const tl_tokenizer *tok;
  tok_build_init(&builder);
  tok_build_added(&builder, "<r>", TL_TOK_ADDED_RSTRIP);
  tok_build_added(&builder, " <x>", 0);
  section_len = tok_build_finish(&builder, section, sizeof section);
  TL_EXPECT_STATUS(t, load_section(&tok), TL_ERR_UNSUPPORTED_FEATURE);
  /* in different sets they never meet */
  tok_build_init(&builder);
  tok_build_added(&builder, "<r>", TL_TOK_ADDED_RSTRIP);
  tok_build_added(&builder, " <x>", TL_TOK_ADDED_NORMALIZED);
  section_len = tok_build_finish(&builder, section, sizeof section);
  TL_EXPECT_OK(t, load_section(&tok));
}

/* ---- encoding --------------------------------------------------------- */

/* bytes as HF's decode returns them, a Rust String: each maximal ill-formed
 * subpart replaced by U+FFFD (String::from_utf8_lossy); returns the length
 * written to out (room for 3 bytes per input byte). */
static size_t utf8_lossy(const uint8_t *bytes, size_t len, uint8_t *out) {
  size_t k = 0;
  for (size_t i = 0, n; i < len; i += n) {
    uint32_t cp;
    if (tl_utf8_decode(bytes, len, i, &cp, &n)) {
      memcpy(out + k, bytes + i, n);
      k += n;
    } else {
      memcpy(out + k, "\xEF\xBF\xBD", 3);
      k += 3;
    }
  }
  return k;
}

/* Every case of the oracle (tokenizer_test_hf.h): the ids and byte offsets
 * HF gives, and its raw and visible decodes of those ids (compared as HF
 * returns them: exactly when the bytes are UTF-8, through U+FFFD where
 * they are not). */
static void matches_hf_oracle(tl_test_ctx *t) {
  static uint8_t dec[256], shown[3 * sizeof dec];
  for (size_t c = 0; c < sizeof HF_CASES / sizeof HF_CASES[0]; c++) {
    const hf_case *k = &HF_CASES[c];
    const tl_tokenizer *tok;
    size_t len = 0, bad = 0;
    bool ok;
    build_vocab(k->vocab);
    tok = load_built(t);
    if (tok == NULL) return;
    ok = TL_EXPECT_OK(t, encode_n(tok, k->text, k->len)) &&
         TL_EXPECT_EQ_U64(t, n_ids, k->n);
    for (size_t i = 0; ok && i < k->n; i++) {
      ok &= TL_EXPECT_EQ_U64(t, ids[i], k->toks[i][0]);
      ok &= TL_EXPECT_EQ_U64(t, offs[i].start, k->toks[i][1]);
      ok &= TL_EXPECT_EQ_U64(t, offs[i].end, k->toks[i][2]);
    }
    ok = ok &&
         TL_EXPECT_OK(t, tl_tok_decode(tok, ids, n_ids, TL_TOK_DECODE_RAW, dec,
                                       sizeof dec, &len, &bad));
    if (ok) len = utf8_lossy(dec, len, shown);
    ok = ok && TL_EXPECT_EQ_U64(t, len, k->raw_len) &&
         TL_EXPECT_MEM(t, shown, k->raw, len) &&
         TL_EXPECT_OK(t, tl_tok_decode(tok, ids, n_ids, TL_TOK_DECODE_VISIBLE,
                                       dec, sizeof dec, &len, &bad));
    if (ok) len = utf8_lossy(dec, len, shown);
    ok = ok && TL_EXPECT_EQ_U64(t, len, k->visible_len) &&
         TL_EXPECT_MEM(t, shown, k->visible, len);
    if (!ok) {
      tl_test_print(t, "    in the oracle's case: ");
      tl_test_print(t, k->why);
      tl_test_print(t, "\n");
    }
  }
}

/* Strict UTF-8 first: the offset of the first maximal ill-formed subpart,
 * nothing encoded. */
static void invalid_utf8(tl_test_ctx *t) {
  static const struct {
    const char *hex;
    size_t offset;
  } bad[] = {
      {"ff", 0},           {"41c0af", 1},   {"4142e080", 2},   {"eda080", 0},
      {"f4908080", 0},     {"61f09f98", 1}, {"6180", 1},       {"616263f5", 3},
      {"68656c6c6fc3", 5}, {"3c733e80", 3}, {"e282ac20f8", 4}, {"00c1bf", 1},
  };
  const tl_tokenizer *tok;
  uint8_t buf[16];
  build_basic();
  tok = load_built(t);
  if (tok == NULL) return;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tl_arena scratch;
    size_t n = tl_test_unhex(bad[i].hex, buf, sizeof buf), err = 99;
    tl_arena_init(&scratch, scratch_mem, sizeof scratch_mem);
    TL_EXPECT_STATUS(
        t, tl_tok_encode(tok, buf, n, &scratch, ids, offs, 4096, &n_ids, &err),
        TL_ERR_INVALID_UTF8);
    TL_EXPECT_EQ_U64(t, err, bad[i].offset);
    TL_EXPECT_EQ_U64(t, n_ids, 0);
  }
}

static void capacity(tl_test_ctx *t) {
  const tl_tokenizer *tok;
  tl_arena scratch;
  uint32_t few[2] = {0, 0};
  size_t n = 0;
  build_basic();
  tok = load_built(t);
  if (tok == NULL) return;
  tl_arena_init(&scratch, scratch_mem, sizeof scratch_mem);
  TL_EXPECT_STATUS(t,
                   tl_tok_encode(tok, (const uint8_t *)"hello world hello", 17,
                                 &scratch, few, NULL, 2, &n, NULL),
                   TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, n, 4); /* hello, " world", " ", hello */
  TL_EXPECT_EQ_U64(t, few[0], id_of("hello"));
  TL_EXPECT_EQ_U64(t, few[1], id_of(" world"));
  TL_EXPECT_EQ_U64(t, scratch.used, 0); /* rewound */
  /* a size query with no room at all */
  TL_EXPECT_STATUS(t,
                   tl_tok_encode(tok, (const uint8_t *)"hello", 5, &scratch,
                                 NULL, NULL, 0, &n, NULL),
                   TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, n, 1);
  TL_EXPECT_STATUS(
      t, tl_tok_encode(tok, NULL, 1, &scratch, few, NULL, 2, &n, NULL),
      TL_ERR_INVALID_ARGUMENT);
}

/* The scratch bound is enough; any smaller arena fails cleanly. */
static void scratch_bound(tl_test_ctx *t) {
  static char text[3000];
  const tl_tokenizer *tok;
  size_t bound = 0;
  build_basic();
  tok = load_built(t);
  if (tok == NULL) return;
  /* a long word (heap path) and text that needs NFC */
  for (size_t i = 0; i < sizeof text; i += 3) memcpy(text + i, "e\xCC\x81", 3);
  memset(text + 1500, 'l', 600);
  TL_EXPECT_OK(t, tl_tok_encode_scratch_bound(sizeof text, &bound));
  for (size_t cap = 0; cap <= bound; cap += cap < 70000 ? 4093 : 1 + cap / 2) {
    tl_arena scratch;
    tl_status st;
    size_t n;
    tl_arena_init(&scratch, scratch_mem, cap);
    st = tl_tok_encode(tok, (const uint8_t *)text, sizeof text, &scratch, ids,
                       offs, 4096, &n, NULL);
    TL_EXPECT(t, st == TL_OK || st == TL_ERR_OUT_OF_MEMORY);
    TL_EXPECT_EQ_U64(t, scratch.used, 0);
  }
  {
    tl_arena scratch;
    tl_arena_init(&scratch, scratch_mem, bound);
    TL_EXPECT_OK(t, tl_tok_encode(tok, (const uint8_t *)text, sizeof text,
                                  &scratch, ids, offs, 4096, &n_ids, NULL));
    TL_EXPECT(t, scratch.high_water <= bound);
  }
}

/* A special token starting in a plain range is encoded as the text around
 * it, as by a tokenizer without that token (the oracle: the same
 * vocabulary built without it); out of the ranges, and a non-special
 * added token in one, stay tokens. */
static void plain_ranges(tl_test_ctx *t) {
  static const char text[] = "a<x>b <y><x>";
  const tl_tok_span plain[] = {{1, 3}, {6, 12}}; /* the first <x>, and <y><x> */
  uint32_t got[64], want[64], x_id, y_id;
  size_t n_got = 0, n_want = 0;
  const tl_tokenizer *tok;
  tl_arena scratch;
  build_basic();
  tok_build_added(&builder, "<x>", TL_TOK_ADDED_SPECIAL);
  tok_build_added(&builder, "<y>", 0);
  if ((tok = load_built(t)) == NULL) return;
  /* with no ranges, every <x> is a token: as tl_tok_encode */
  TL_EXPECT_OK(t, encode_n(tok, text, sizeof text - 1));
  TL_EXPECT_EQ_U64(t, n_ids, 6); /* a <x> b " " <y> <x>, each one id here */
  x_id = ids[1];
  y_id = ids[4];
  TL_EXPECT(t, tl_tok_is_special(tok, x_id) && !tl_tok_is_special(tok, y_id) &&
                   !tl_tok_is_special(tok, ids[0]));
  tl_arena_init(&scratch, scratch_mem, sizeof scratch_mem);
  if (!TL_EXPECT_OK(t, tl_tok_encode_plain(tok, (const uint8_t *)text, sizeof text - 1, plain, 2,
                                           &scratch, got, NULL, 64, &n_got, NULL)))
    return;
  /* the oracle: "a<x>b " and "<x>" as text, <y> still a token */
  build_basic();
  tok_build_added(&builder, "<y>", 0);
  if ((tok = load_built(t)) == NULL) return;
  TL_EXPECT_OK(t, encode_n(tok, "a<x>b ", 6));
  memcpy(want, ids, n_ids * sizeof *ids);
  n_want = n_ids;
  want[n_want++] = y_id;
  TL_EXPECT_OK(t, encode_n(tok, "<x>", 3));
  memcpy(want + n_want, ids, n_ids * sizeof *ids);
  n_want += n_ids;
  TL_EXPECT_EQ_U64(t, n_got, n_want);
  TL_EXPECT_MEM(t, got, want, n_want * sizeof *want);
  for (size_t i = 0; i < n_got; i++) TL_EXPECT(t, got[i] != x_id);
}

/* ---- decoding --------------------------------------------------------- */

static uint8_t out[256];
static size_t out_len;

static tl_status decode(const tl_tokenizer *tok, const uint32_t *v, size_t n,
                        tl_tok_decode_mode mode) {
  size_t bad = 0;
  return tl_tok_decode(tok, v, n, mode, out, sizeof out, &out_len, &bad);
}

static void decodes(tl_test_ctx *t) {
  const tl_tokenizer *tok;
  uint32_t v[8];
  size_t bad = 99;
  build_basic();
  tok = load_built(t);
  if (tok == NULL) return;
  v[0] = id_of("<s>");
  v[1] = id_of("hello");
  v[2] = id_of("<think>");
  v[3] = id_of(" world");
  TL_EXPECT_OK(t, decode(tok, v, 4, TL_TOK_DECODE_RAW));
  TL_EXPECT_EQ_U64(t, out_len, 21);
  TL_EXPECT_MEM(t, out, "<s>hello<think> world", 21);
  /* visible: only tokens flagged special go; <think> is not special */
  TL_EXPECT_OK(t, decode(tok, v, 4, TL_TOK_DECODE_VISIBLE));
  TL_EXPECT_EQ_U64(t, out_len, 18);
  TL_EXPECT_MEM(t, out, "hello<think> world", 18);
  /* an id out of range: its index */
  v[2] = builder.n_tokens;
  TL_EXPECT_STATUS(t,
                   tl_tok_decode(tok, v, 4, TL_TOK_DECODE_RAW, out, sizeof out,
                                 &out_len, &bad),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, bad, 2);
  /* too small: the length needed */
  v[2] = id_of("<think>");
  TL_EXPECT_STATUS(
      t, tl_tok_decode(tok, v, 4, TL_TOK_DECODE_RAW, out, 5, &out_len, &bad),
      TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, out_len, 21);
  TL_EXPECT_OK(t, decode(tok, v, 0, TL_TOK_DECODE_RAW));
  TL_EXPECT_EQ_U64(t, out_len, 0);
  /* HF's ByteLevel decoder maps an added token's characters through the
   * byte-level alphabet when all of them are in it: "éé" -> E9 E9 (HF's
   * own answer, as a String: tokenizer_test_hf.h) */
  v[0] = id_of("\xC3\xA9\xC3\xA9");
  TL_EXPECT_OK(t, decode(tok, v, 1, TL_TOK_DECODE_RAW));
  TL_EXPECT_EQ_U64(t, out_len, 2);
  TL_EXPECT_MEM(t, out, "\xE9\xE9", 2);
}

/* Diagnostic: raw bytes made printable and unambiguous. */
static void decodes_diagnostic(tl_test_ctx *t) {
  static const char want[] =
      "a\\x0A\\\\\\x00\\x7F\\xC2\\x85\xC3\xA9\\xF0\\x9F"
      "x\\xE9\\xE9\xF0\x9F\x98\x80\\xC0";
  const tl_tokenizer *tok;
  uint32_t v[16];
  size_t n = 0;
  build_basic();
  tok = load_built(t);
  if (tok == NULL) return;
  v[n++] = 'a';
  v[n++] = '\n';
  v[n++] = '\\';
  v[n++] = 0;
  v[n++] = 0x7F;
  v[n++] = 0xC2; /* U+0085, a C1 control, split over two tokens */
  v[n++] = 0x85;
  v[n++] = id_of("\xC3\xA9");
  v[n++] = id_of("\xF0\x9F"); /* a truncated character */
  v[n++] = 'x';
  v[n++] = id_of("\xC3\xA9\xC3\xA9"); /* E9 E9: ill-formed */
  v[n++] = id_of("\xF0\x9F");         /* whole again over three tokens */
  v[n++] = 0x98;
  v[n++] = 0x80;
  v[n++] = 0xC0;
  TL_EXPECT_OK(t, decode(tok, v, n, TL_TOK_DECODE_DIAGNOSTIC));
  TL_EXPECT_EQ_U64(t, out_len, sizeof want - 1);
  TL_EXPECT_MEM(t, out, want, sizeof want - 1);
}

static const tl_test_case cases[] = {TL_CASE(loads_and_reports),
                                     TL_CASE(load_out_of_memory),
                                     TL_CASE(rejects_malformed),
                                     TL_CASE(rejects_duplicate_patterns),
                                     TL_CASE(rejects_rstrip_into_space),
                                     TL_CASE(matches_hf_oracle),
                                     TL_CASE(invalid_utf8),
                                     TL_CASE(capacity),
                                     TL_CASE(scratch_bound),
                                     TL_CASE(plain_ranges),
                                     TL_CASE(decodes),
                                     TL_CASE(decodes_diagnostic)};

TL_SUITE(tokenizer, cases);
