/* SHA-256 as specified in FIPS 180-4 §4.1.2 (functions), §4.2.2 (constants),
 * §5.1.1 (padding), §6.2.2 (compression). Portable scalar compression, and
 * a SHA-NI one beside it (sha256_sse41.c) that the host may select: the
 * artifact id of a run's receipt hashes the whole file. */
#include "hash/sha256.h"

#include <string.h>

#include "bytes.h"
#include "hash/sha256_impl.h"

#define K tl_sha256_k
const uint32_t tl_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, unsigned n) { return x >> n | x << (32 - n); }

static void compress_one(uint32_t s[8], const uint8_t *block) {
  uint32_t w[64];
  uint32_t a = s[0], b = s[1], c = s[2], d = s[3];
  uint32_t e = s[4], f = s[5], g = s[6], h = s[7];
  for (int i = 0; i < 16; i++) w[i] = tl_load_be32(block + 4 * i);
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
                  ((e & f) ^ (~e & g)) + K[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) +
                  ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  s[0] += a;
  s[1] += b;
  s[2] += c;
  s[3] += d;
  s[4] += e;
  s[5] += f;
  s[6] += g;
  s[7] += h;
}

static void compress_portable(uint32_t s[8], const uint8_t *p, size_t blocks) {
  for (size_t i = 0; i < blocks; i++) compress_one(s, p + i * TL_SHA256_BLOCK_LEN);
}

/* The backend in use: portable until the host, having checked its CPU,
 * names a faster one. */
static tl_sha256_compress_fn *compress_many = compress_portable;

static tl_sha256_compress_fn *backend_fn(unsigned b) {
  switch (b) {
    case TL_SHA256_PORTABLE:
      return compress_portable;
#if TL_SHA256_HAVE_X86
    case TL_SHA256_SHANI:
      return tl_sha256_compress_shani;
#endif
    default:
      return NULL;
  }
}

bool tl_sha256_backend_compiled(tl_sha256_backend b) { return backend_fn((unsigned)b) != NULL; }

tl_status tl_sha256_set_default_backend(tl_sha256_backend b) {
  if ((unsigned)b > TL_SHA256_SHANI) return TL_ERR_INVALID_ARGUMENT;
  if (backend_fn((unsigned)b) == NULL) return TL_ERR_UNSUPPORTED_FEATURE;
  compress_many = backend_fn((unsigned)b);
  return TL_OK;
}

static void compress(uint32_t s[8], const uint8_t *block) { compress_many(s, block, 1); }

void tl_sha256_init(tl_sha256_ctx *ctx) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                 0xa54ff53a, 0x510e527f, 0x9b05688c,
                                 0x1f83d9ab, 0x5be0cd19};
  memcpy(ctx->state, iv, sizeof iv);
  ctx->total_len = 0;
  ctx->block_len = 0;
}

/* FIPS 180-4 allows messages below 2^64 bits. */
#define TL_SHA256_MAX_BYTES ((UINT64_C(1) << 61) - 1)

tl_status tl_sha256_update(tl_sha256_ctx *ctx, const void *data, size_t len) {
  const uint8_t *p = (const uint8_t *)data;
  if (ctx == NULL || (data == NULL && len != 0)) return TL_ERR_INVALID_ARGUMENT;
  if ((uint64_t)len > TL_SHA256_MAX_BYTES - ctx->total_len)
    return TL_ERR_INTEGER_OVERFLOW;
  ctx->total_len += len;
  if (ctx->block_len != 0) {
    size_t take = TL_SHA256_BLOCK_LEN - ctx->block_len;
    if (take > len) take = len;
    memcpy(ctx->block + ctx->block_len, p, take);
    ctx->block_len += take;
    p += take;
    len -= take;
    if (ctx->block_len < TL_SHA256_BLOCK_LEN) return TL_OK;
    compress(ctx->state, ctx->block);
    ctx->block_len = 0;
  }
  if (len >= TL_SHA256_BLOCK_LEN) {
    size_t blocks = len / TL_SHA256_BLOCK_LEN;
    compress_many(ctx->state, p, blocks);
    p += blocks * TL_SHA256_BLOCK_LEN;
    len -= blocks * TL_SHA256_BLOCK_LEN;
  }
  if (len != 0) memcpy(ctx->block, p, len);
  ctx->block_len = len;
  return TL_OK;
}

tl_status tl_sha256_final(tl_sha256_ctx *ctx,
                          uint8_t out[TL_SHA256_DIGEST_LEN]) {
  uint64_t bit_len;
  if (ctx == NULL || out == NULL) return TL_ERR_INVALID_ARGUMENT;
  bit_len = ctx->total_len * 8;
  /* Padding: 0x80, zeros, then the 64-bit big-endian bit length, ending on
   * a block boundary (§5.1.1). */
  ctx->block[ctx->block_len++] = 0x80;
  if (ctx->block_len > TL_SHA256_BLOCK_LEN - 8) {
    memset(ctx->block + ctx->block_len, 0,
           TL_SHA256_BLOCK_LEN - ctx->block_len);
    compress(ctx->state, ctx->block);
    ctx->block_len = 0;
  }
  memset(ctx->block + ctx->block_len, 0,
         TL_SHA256_BLOCK_LEN - 8 - ctx->block_len);
  tl_store_be64(ctx->block + TL_SHA256_BLOCK_LEN - 8, bit_len);
  compress(ctx->state, ctx->block);
  for (int i = 0; i < 8; i++) tl_store_be32(out + 4 * i, ctx->state[i]);
  return TL_OK;
}

tl_status tl_sha256(const void *data, size_t len,
                    uint8_t out[TL_SHA256_DIGEST_LEN]) {
  tl_sha256_ctx ctx;
  tl_status st;
  if (out == NULL) return TL_ERR_INVALID_ARGUMENT;
  tl_sha256_init(&ctx);
  st = tl_sha256_update(&ctx, data, len);
  if (st != TL_OK) return st;
  return tl_sha256_final(&ctx, out);
}
