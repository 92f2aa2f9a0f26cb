/* SHA-256 (FIPS 180-4), streaming. */
#ifndef TL_CORE_SHA256_H
#define TL_CORE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_SHA256_DIGEST_LEN 32
#define TL_SHA256_BLOCK_LEN 64

typedef struct tl_sha256_ctx {
  uint32_t state[8];
  uint64_t total_len; /* bytes absorbed so far */
  uint8_t block[TL_SHA256_BLOCK_LEN];
  size_t block_len;
} tl_sha256_ctx;

void tl_sha256_init(tl_sha256_ctx *ctx);
/* data may be NULL only when len is 0. Fails with TL_ERR_INTEGER_OVERFLOW
 * when the message would exceed 2^61 - 1 bytes (the 2^64-bit limit). */
tl_status tl_sha256_update(tl_sha256_ctx *ctx, const void *data, size_t len);
/* Writes the digest; the context must be initialised again before reuse. */
tl_status tl_sha256_final(tl_sha256_ctx *ctx,
                          uint8_t out[TL_SHA256_DIGEST_LEN]);
tl_status tl_sha256(const void *data, size_t len,
                    uint8_t out[TL_SHA256_DIGEST_LEN]);

/* Compression backends: the portable one, and on x86-64 native builds the
 * SHA extensions (SHA-NI). All give the same digests; the host picks one
 * its CPU runs (src/host/cpu.h) at start-up, as for BLAKE3. */
typedef enum tl_sha256_backend {
  TL_SHA256_PORTABLE,
  TL_SHA256_SHANI
} tl_sha256_backend;

bool tl_sha256_backend_compiled(tl_sha256_backend b);
/* The backend every context uses from now on (TL_ERR_UNSUPPORTED_FEATURE
 * when not compiled in, TL_ERR_INVALID_ARGUMENT for an unknown value). */
tl_status tl_sha256_set_default_backend(tl_sha256_backend b);

#endif
