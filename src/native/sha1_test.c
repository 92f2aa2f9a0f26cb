/* SHA-1 against the FIPS 180 example vectors (NIST CSRC examples) and one
 * Git blob id (`git hash-object` of "hello\n", as printed by git). */
#include "sha1.h"

#include <string.h>

#include "tl_test.h"

static void expect_sha1(tl_test_ctx *t, const char *msg, size_t len,
                        size_t repeat, const char *hex) {
  uint8_t want[20], got[20];
  tl_sha1_ctx c;
  TL_EXPECT_EQ_U64(t, tl_test_unhex(hex, want, sizeof want), 20);
  tl_sha1_init(&c);
  for (size_t i = 0; i < repeat; i++) tl_sha1_update(&c, msg, len);
  tl_sha1_final(&c, got);
  TL_EXPECT_MEM(t, got, want, 20);
}

static void fips_vectors(tl_test_ctx *t) {
  expect_sha1(t, "", 0, 1, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  expect_sha1(t, "abc", 3, 1, "a9993e364706816aba3e25717850c26c9cd0d89d");
  expect_sha1(t, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
              1, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  /* A million 'a', fed in odd-sized pieces to cross block boundaries. */
  expect_sha1(t, "aaaaaaaaaaaaaaaaaaaaaaaaa", 25, 40000,
              "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

static void git_blob_id(tl_test_ctx *t) {
  expect_sha1(t, "blob 6\0hello\n", 13, 1,
              "ce013625030ba8dba906f756967f9e9ca394464a");
}

static const tl_test_case cases[] = {TL_CASE(fips_vectors),
                                     TL_CASE(git_blob_id)};
TL_SUITE(sha1, cases);
