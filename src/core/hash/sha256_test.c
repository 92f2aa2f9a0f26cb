/* SHA-256 against the FIPS 180-2 / NIST CSRC example vectors, plus the
 * streaming contract. Boundary lengths are checked differentially against
 * sha256sum in tests/diff/hash_diff.sh. */
#include "hash/sha256.h"

#include <string.h>

#include "tl_test.h"

static void expect_digest(tl_test_ctx *t, const char *msg, size_t len,
                          const char *hex) {
  uint8_t want[32], got[32];
  TL_EXPECT_EQ_U64(t, tl_test_unhex(hex, want, sizeof want), 32);
  TL_EXPECT_OK(t, tl_sha256(msg, len, got));
  TL_EXPECT_MEM(t, got, want, 32);
}

static void nist_short_messages(tl_test_ctx *t) {
  expect_digest(
      t, "", 0,
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  expect_digest(
      t, "abc", 3,
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  expect_digest(
      t, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  expect_digest(
      t,
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
      "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
      112, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void nist_million_a_streamed(tl_test_ctx *t) {
  uint8_t chunk[1000], got[32], want[32];
  tl_sha256_ctx ctx;
  memset(chunk, 'a', sizeof chunk);
  tl_sha256_init(&ctx);
  for (int i = 0; i < 1000; i++)
    TL_EXPECT_OK(t, tl_sha256_update(&ctx, chunk, sizeof chunk));
  TL_EXPECT_OK(t, tl_sha256_final(&ctx, got));
  tl_test_unhex(
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", want,
      32);
  TL_EXPECT_MEM(t, got, want, 32);
}

static void any_split_gives_the_one_shot_digest(tl_test_ctx *t) {
  static uint8_t msg[3000];
  tl_test_rng rng = {1};
  uint8_t one_shot[32], streamed[32];
  tl_test_rng_fill(&rng, msg, sizeof msg);
  for (size_t len = 0; len <= sizeof msg; len += 1 + len / 7) {
    tl_sha256_ctx ctx;
    size_t pos = 0;
    TL_EXPECT_OK(t, tl_sha256(msg, len, one_shot));
    tl_sha256_init(&ctx);
    while (pos < len) {
      size_t step = (size_t)(tl_test_rng_next(&rng) % 130);
      if (step > len - pos) step = len - pos;
      TL_EXPECT_OK(t, tl_sha256_update(&ctx, msg + pos, step));
      pos += step;
    }
    TL_EXPECT_OK(t, tl_sha256_final(&ctx, streamed));
    if (!TL_EXPECT_MEM(t, streamed, one_shot, 32)) return;
  }
}

static void bad_arguments_are_typed(tl_test_ctx *t) {
  tl_sha256_ctx ctx;
  uint8_t out[32];
  tl_sha256_init(&ctx);
  TL_EXPECT_STATUS(t, tl_sha256_update(&ctx, NULL, 1), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_sha256_update(&ctx, NULL, 0));
  TL_EXPECT_STATUS(t, tl_sha256_update(NULL, "x", 1), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_sha256_final(&ctx, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_sha256("x", 1, NULL), TL_ERR_INVALID_ARGUMENT);
  /* A length that would pass the 2^64-bit message limit. */
  ctx.total_len = (UINT64_C(1) << 61) - 4;
  TL_EXPECT_STATUS(t, tl_sha256_update(&ctx, out, 8), TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT_OK(t, tl_sha256_update(&ctx, out, 3));
}

static const tl_test_case cases[] = {
    TL_CASE(nist_short_messages),
    TL_CASE(nist_million_a_streamed),
    TL_CASE(any_split_gives_the_one_shot_digest),
    TL_CASE(bad_arguments_are_typed),
};
TL_SUITE(sha256, cases);
