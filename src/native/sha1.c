#include "sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, unsigned n) {
  return (x << n) | (x >> (32 - n));
}

static void compress(uint32_t s[5], const uint8_t p[64]) {
  uint32_t w[80], a = s[0], b = s[1], c = s[2], d = s[3], e = s[4];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 80; i++)
    w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  for (int i = 0; i < 80; i++) {
    uint32_t f, k, t;
    if (i < 20)
      f = (b & c) | (~b & d), k = 0x5a827999u;
    else if (i < 40)
      f = b ^ c ^ d, k = 0x6ed9eba1u;
    else if (i < 60)
      f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdcu;
    else
      f = b ^ c ^ d, k = 0xca62c1d6u;
    t = rol(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rol(b, 30);
    b = a;
    a = t;
  }
  s[0] += a;
  s[1] += b;
  s[2] += c;
  s[3] += d;
  s[4] += e;
}

void tl_sha1_init(tl_sha1_ctx *ctx) {
  static const uint32_t iv[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu,
                                 0x10325476u, 0xc3d2e1f0u};
  memcpy(ctx->state, iv, sizeof iv);
  ctx->total_len = 0;
  ctx->block_len = 0;
}

void tl_sha1_update(tl_sha1_ctx *ctx, const void *data, size_t len) {
  const uint8_t *p = data;
  ctx->total_len += len;
  while (len > 0) {
    size_t n = 64 - ctx->block_len < len ? 64 - ctx->block_len : len;
    memcpy(ctx->block + ctx->block_len, p, n);
    ctx->block_len += n;
    p += n;
    len -= n;
    if (ctx->block_len == 64) {
      compress(ctx->state, ctx->block);
      ctx->block_len = 0;
    }
  }
}

void tl_sha1_final(tl_sha1_ctx *ctx, uint8_t out[20]) {
  uint64_t bits = ctx->total_len * 8;
  uint8_t pad[72] = {0x80};
  size_t n = ctx->block_len < 56 ? 56 - ctx->block_len : 120 - ctx->block_len;
  for (int i = 0; i < 8; i++)
    pad[n + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
  tl_sha1_update(ctx, pad, n + 8);
  for (int i = 0; i < 5; i++) {
    out[4 * i] = (uint8_t)(ctx->state[i] >> 24);
    out[4 * i + 1] = (uint8_t)(ctx->state[i] >> 16);
    out[4 * i + 2] = (uint8_t)(ctx->state[i] >> 8);
    out[4 * i + 3] = (uint8_t)ctx->state[i];
  }
}
