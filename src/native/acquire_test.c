/* The name checks of tinylm pull (docs/acquisition.md §Names, §Allowlist):
 * repository ids, revisions, tree paths, the Qwen3 allowlist. The
 * transaction itself is tested end to end against the hub fixture
 * (tests/pull). */
#include "acquire.h"

#include "hub_http.h"
#include "tl_test.h"

static void repo_ids(tl_test_ctx *t) {
  static const char *const good[] = {"Qwen/Qwen3-0.6B", "gpt2", "a.b_c-d/e.f"};
  static const char *const bad[] = {
      "",      "../x", "a/..", "a/b/c", "/abs", "a//b",  "%2e%2e/x",
      "a b/c", "a/",   ".a/b", "a/b.",  "a/-b", "x/a..b"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    TL_EXPECT(t, tl_acq_valid_repo_id(good[i]));
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (!TL_EXPECT(t, !tl_acq_valid_repo_id(bad[i]))) return;
}

static void revisions(tl_test_ctx *t) {
  static const char *const good[] = {
      "main", "v1.0", "refs/pr/1", "0123456789abcdef0123456789abcdef01234567"};
  static const char *const bad[] = {"",       "../main", "a/../b",
                                    "/main",  "main/",   "a//b",
                                    "%2e%2e", "ma in",   "a..b"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    TL_EXPECT(t, tl_acq_valid_revision(good[i]));
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    TL_EXPECT(t, !tl_acq_valid_revision(bad[i]));
}

static void paths(tl_test_ctx *t) {
  TL_EXPECT(t, tl_acq_path_problem("config.json") == NULL);
  TL_EXPECT(t, tl_acq_path_problem(".gitattributes") == NULL);
  TL_EXPECT(t, tl_acq_path_problem("") != NULL);
  TL_EXPECT(t, tl_acq_path_problem("/etc/passwd") != NULL);
  TL_EXPECT(t, tl_acq_path_problem("../config.json") != NULL);
  TL_EXPECT(t, tl_acq_path_problem("..") != NULL);
  TL_EXPECT(t, tl_acq_path_problem(".") != NULL);
  TL_EXPECT(t, tl_acq_path_problem("%2e%2e/x") != NULL);
  TL_EXPECT(t, tl_acq_path_problem("a\\b") != NULL);
  TL_EXPECT(t, tl_acq_path_problem("sub/config.json") != NULL); /* depth 2 */
  TL_EXPECT(t, tl_acq_path_problem("a\nb") != NULL);
}

static void allowlist(tl_test_ctx *t) {
  static const char *const yes[] = {"config.json",
                                    "generation_config.json",
                                    "tokenizer.json",
                                    "tokenizer_config.json",
                                    "model.safetensors",
                                    "model.safetensors.index.json",
                                    "model-00001-of-00002.safetensors",
                                    "LICENSE",
                                    "README.md",
                                    ".gitattributes",
                                    "merges.txt",
                                    "vocab.json"};
  static const char *const no[] = {"modeling_qwen3.py",
                                   "pytorch_model.bin",
                                   "weights.pkl",
                                   "model.ckpt",
                                   "model.zip",
                                   "model.tar.gz",
                                   "model-1-of-2.safetensors",
                                   "model-0000a-of-00002.safetensors",
                                   "model-00001-of-00002.safetensorsx",
                                   "other.safetensors",
                                   "chat_template.jinja",
                                   "notes.txt"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
    TL_EXPECT(t, tl_acq_allowlist_problem(yes[i]) == NULL);
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    TL_EXPECT(t, tl_acq_allowlist_problem(no[i]) != NULL);
  TL_EXPECT_STR(t, tl_acq_allowlist_problem("x.py"), "executable code");
  TL_EXPECT_STR(t, tl_acq_allowlist_problem("x.tgz"), "an archive");
}

/* RFC 3986 percent-encoding as huggingface_hub's quote(rev, safe="")
 * gives it: unreserved characters kept, '/' only where a path keeps it. */
static void quoting(tl_test_ctx *t) {
  char out[32];
  TL_EXPECT(t, tl_hub_quote("refs/pr/1", false, out, sizeof out));
  TL_EXPECT_STR(t, out, "refs%2Fpr%2F1");
  TL_EXPECT(t, tl_hub_quote("a b/c~d.e_f-g", true, out, sizeof out));
  TL_EXPECT_STR(t, out, "a%20b/c~d.e_f-g");
  TL_EXPECT(t, tl_hub_quote("\xff%", false, out, sizeof out));
  TL_EXPECT_STR(t, out, "%FF%25");
  TL_EXPECT(t,
            !tl_hub_quote("0123456789", false, out, 10)); /* no room for NUL */
  TL_EXPECT(t, tl_hub_quote("012345678", false, out, 10));
}

/* The server's text as it may be shown: controls (C0, DEL, C1), bidi
 * overrides and line separators escaped, bytes outside well-formed UTF-8
 * as \xNN, other text kept, cut only between characters. */
static void printable(tl_test_ctx *t) {
  char out[64];
  static const char hostile[] =
      "\x1b[31mA\x07\x7f\xc2\x9b\xe2\x80\xae"
      "\xe2\x80\xa8\xff\xc3";
  tl_hub_printable(hostile, sizeof hostile - 1, out, sizeof out);
  TL_EXPECT_STR(t, out, "\\x1b[31mA\\x07\\x7f\\u009b\\u202e\\u2028\\xff\\xc3");
  tl_hub_printable("caf\xc3\xa9 \xe4\xb8\xad", 9, out, sizeof out);
  TL_EXPECT_STR(t, out, "caf\xc3\xa9 \xe4\xb8\xad"); /* kept as it is */
  /* Cut to fit: the first U+00E9 fits with "..." and the NUL after it,
   * the second would not; never half a character. What fits whole is not
   * cut. */
  tl_hub_printable("ab\xc3\xa9\xc3\xa9xyz", 9, out, 8);
  TL_EXPECT_STR(t, out, "ab\xc3\xa9...");
  tl_hub_printable("abcdefg", 7, out, 8);
  TL_EXPECT_STR(t, out, "abcdefg");
  tl_hub_printable("\x1b\x1b", 2, out, 6);
  TL_EXPECT_STR(t, out, "...");
}

static const tl_test_case cases[] = {TL_CASE(repo_ids), TL_CASE(revisions),
                                     TL_CASE(paths),    TL_CASE(allowlist),
                                     TL_CASE(quoting),  TL_CASE(printable)};
TL_SUITE(acquire, cases);
