/* Receipt node ids (docs/receipts.md): the preimage layout, and that every
 * part (type, metadata, each child, child order) changes the id. The
 * expected id is the SHA-256 (tl_sha256, itself checked against sha256sum
 * by the diff-hash stage) of the preimage spelled out byte by byte here. */
#include "receipt/node.h"

#include <string.h>

#include "hash/sha256.h"
#include "tl_test.h"

static void id_is_sha256_of_the_documented_preimage(tl_test_ctx *t) {
  /* type "run", metadata {"a": 1}, one child of 32 bytes 0x11. */
  static const uint8_t meta[] = {0xa1, 0x61, 0x61, 0x01};
  uint8_t child[1][32], pre[128], want[32], got[32];
  size_t n = 0;
  memset(child[0], 0x11, 32);
  memcpy(pre, "tinylm-node-v1", 14);
  n = 14;
  pre[n++] = 0x63; /* text(3) */
  memcpy(pre + n, "run", 3);
  n += 3;
  memcpy(pre + n, meta, sizeof meta);
  n += sizeof meta;
  pre[n++] = 0x01; /* uint 1: one child */
  memcpy(pre + n, child[0], 32);
  n += 32;
  tl_sha256(pre, n, want);
  TL_EXPECT_OK(t, tl_node_id("run", meta, sizeof meta, child[0], 1, got));
  TL_EXPECT_MEM(t, got, want, 32);
}

static void every_part_changes_the_id(tl_test_ctx *t) {
  static const uint8_t m1[] = {0xa1, 0x61, 0x61, 0x01}, m2[] = {0xa1, 0x61, 0x61, 0x02};
  uint8_t kids[2][32], swapped[2][32], base[32], other[32];
  memset(kids[0], 1, 32);
  memset(kids[1], 2, 32);
  memcpy(swapped[0], kids[1], 32);
  memcpy(swapped[1], kids[0], 32);
  TL_EXPECT_OK(t, tl_node_id("gen", m1, sizeof m1, kids[0], 2, base));
  TL_EXPECT_OK(t, tl_node_id("geN", m1, sizeof m1, kids[0], 2, other));
  TL_EXPECT(t, memcmp(base, other, 32) != 0);
  TL_EXPECT_OK(t, tl_node_id("gen", m2, sizeof m2, kids[0], 2, other));
  TL_EXPECT(t, memcmp(base, other, 32) != 0);
  TL_EXPECT_OK(t, tl_node_id("gen", m1, sizeof m1, swapped[0], 2, other));
  TL_EXPECT(t, memcmp(base, other, 32) != 0);
  TL_EXPECT_OK(t, tl_node_id("gen", m1, sizeof m1, kids[0], 1, other));
  TL_EXPECT(t, memcmp(base, other, 32) != 0);
  TL_EXPECT_OK(t, tl_node_id("gen", m1, sizeof m1, kids[0], 2, other));
  TL_EXPECT_MEM(t, base, other, 32);
}

static void metadata_must_be_deterministic_cbor(tl_test_ctx *t) {
  static const uint8_t unsorted[] = {0xa2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02};
  static const uint8_t two_items[] = {0x01, 0x02};
  uint8_t id[32];
  TL_EXPECT_STATUS(t, tl_node_id("x", unsorted, sizeof unsorted, NULL, 0, id),
                   TL_ERR_INVALID_CBOR);
  TL_EXPECT_STATUS(t, tl_node_id("x", two_items, sizeof two_items, NULL, 0, id),
                   TL_ERR_INVALID_CBOR);
  TL_EXPECT_STATUS(t, tl_node_id(NULL, two_items, 1, NULL, 0, id),
                   TL_ERR_INVALID_ARGUMENT);
}

static const tl_test_case cases[] = {
    TL_CASE(id_is_sha256_of_the_documented_preimage),
    TL_CASE(every_part_changes_the_id),
    TL_CASE(metadata_must_be_deterministic_cbor),
};
TL_SUITE(node, cases);
