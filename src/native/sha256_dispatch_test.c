/* The SHA-NI SHA-256 backend against the portable one, digest for digest:
 * the FIPS 180-4 examples, random messages of every length up to a few
 * blocks and some large ones, fed whole and in random pieces. Skipped
 * (with a note) where this CPU lacks the SHA extensions. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "hash/sha256.h"
#include "tl_test.h"

static void digest(tl_sha256_backend b, const uint8_t *m, size_t len, tl_test_rng *rng,
                   uint8_t out[32]) {
  tl_sha256_ctx c;
  size_t at = 0;
  (void)tl_sha256_set_default_backend(b);
  tl_sha256_init(&c);
  while (at < len) {
    size_t step = rng ? 1 + (size_t)(tl_test_rng_next(rng) % 300) : len - at;
    if (step > len - at) step = len - at;
    (void)tl_sha256_update(&c, m + at, step);
    at += step;
  }
  (void)tl_sha256_final(&c, out);
}

static void shani_equals_portable(tl_test_ctx *t) {
  static const char abc[] = "abc";
  static const uint8_t abc_digest[32] = {
      0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
      0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  tl_test_rng rng = {77};
  size_t big = (size_t)3 << 20;
  uint8_t *m, a[32], b[32];
  if (tl_native_sha256_backend() != TL_SHA256_SHANI) {
    tl_test_skip(t, "no SHA-NI on this CPU or build"); /* counted as skipped, not passed */
    return;
  }
  m = malloc(big);
  if (!TL_EXPECT(t, m != NULL)) return;
  tl_test_rng_fill(&rng, m, big);
  digest(TL_SHA256_SHANI, (const uint8_t *)abc, 3, NULL, a);
  TL_EXPECT_MEM(t, a, abc_digest, 32);
  for (size_t len = 0; len < 300; len++) {
    digest(TL_SHA256_PORTABLE, m, len, NULL, a);
    digest(TL_SHA256_SHANI, m, len, NULL, b);
    if (!TL_EXPECT_MEM(t, b, a, 32)) break;
  }
  for (size_t len = big - 5; len <= big; len++) {
    digest(TL_SHA256_PORTABLE, m, len, NULL, a);
    digest(TL_SHA256_SHANI, m + (big - len), len, &rng, b); /* other alignment */
    digest(TL_SHA256_PORTABLE, m + (big - len), len, NULL, a);
    TL_EXPECT_MEM(t, b, a, 32);
  }
  (void)tl_sha256_set_default_backend(TL_SHA256_PORTABLE);
  free(m);
}

static void bad_backends(tl_test_ctx *t) {
  TL_EXPECT_STATUS(t, tl_sha256_set_default_backend((tl_sha256_backend)7),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, tl_sha256_backend_compiled(TL_SHA256_PORTABLE));
  TL_EXPECT_OK(t, tl_sha256_set_default_backend(TL_SHA256_PORTABLE));
}

static const tl_test_case cases[] = {
    TL_CASE(shani_equals_portable),
    TL_CASE(bad_backends),
};
TL_SUITE(sha256_dispatch, cases);
