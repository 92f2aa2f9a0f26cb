/* SHA-1 (FIPS 180-4), streaming: only for Git object ids (a Git blob id is
 * SHA-1("blob <size>\0" || content)), which the Hub's tree listing gives
 * for files not stored in LFS. Never used as a security boundary on its
 * own: pull also records SHA-256 of every file. */
#ifndef TL_NATIVE_SHA1_H
#define TL_NATIVE_SHA1_H

#include <stddef.h>
#include <stdint.h>

typedef struct tl_sha1_ctx {
  uint32_t state[5];
  uint64_t total_len;
  uint8_t block[64];
  size_t block_len;
} tl_sha1_ctx;

void tl_sha1_init(tl_sha1_ctx *ctx);
void tl_sha1_update(tl_sha1_ctx *ctx, const void *data, size_t len);
void tl_sha1_final(tl_sha1_ctx *ctx, uint8_t out[20]);

#endif
