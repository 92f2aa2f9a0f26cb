#include "receipt/node.h"

#include <string.h>

#include "cbor/cbor.h"
#include "hash/sha256.h"

/* A CBOR head (major type, argument) into out; returns its length. */
static size_t head(uint8_t major, uint64_t arg, uint8_t out[9]) {
  size_t n;
  if (arg < 24) {
    out[0] = (uint8_t)(major << 5 | arg);
    return 1;
  }
  n = arg <= 0xff ? 1 : arg <= 0xffff ? 2 : arg <= 0xffffffffu ? 4 : 8;
  out[0] = (uint8_t)(major << 5 | (n == 1 ? 24 : n == 2 ? 25 : n == 4 ? 26 : 27));
  for (size_t i = 0; i < n; i++) out[1 + i] = (uint8_t)(arg >> (8 * (n - 1 - i)));
  return 1 + n;
}

tl_status tl_node_id(const char *type, const uint8_t *metadata,
                     size_t metadata_len, const uint8_t *children,
                     size_t n_children, uint8_t id[TL_NODE_ID_LEN]) {
  tl_sha256_ctx ctx;
  uint8_t h[9];
  size_t type_len;
  if (type == NULL || (metadata == NULL && metadata_len != 0) || id == NULL ||
      (children == NULL && n_children != 0))
    return TL_ERR_INVALID_ARGUMENT;
  if (tl_cbor_validate(metadata, metadata_len, NULL, NULL) != TL_OK)
    return TL_ERR_INVALID_CBOR;
  type_len = strlen(type);
  tl_sha256_init(&ctx);
  tl_sha256_update(&ctx, TL_NODE_DOMAIN, sizeof TL_NODE_DOMAIN - 1);
  tl_sha256_update(&ctx, h, head(3, type_len, h));
  tl_sha256_update(&ctx, type, type_len);
  tl_sha256_update(&ctx, metadata, metadata_len);
  tl_sha256_update(&ctx, h, head(0, n_children, h));
  for (size_t i = 0; i < n_children; i++)
    tl_sha256_update(&ctx, children + i * TL_NODE_ID_LEN, TL_NODE_ID_LEN);
  return tl_sha256_final(&ctx, id);
}
