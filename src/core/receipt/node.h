/* Receipt nodes (docs/architecture.md §8, docs/receipts.md): content-addressed
 * records whose id binds their type, their metadata (deterministic CBOR)
 * and their children's ids, so a receipt is a hash graph: changing any
 * input anywhere changes the root id.
 *
 *   id = SHA-256("tinylm-node-v1" || cbor_text(type) || metadata ||
 *                cbor_uint(n_children) || child_id_1 || ... )
 *
 * The type is encoded as a CBOR text item and the child count as a CBOR
 * unsigned integer so the concatenation cannot be split two ways; metadata
 * must be one deterministic CBOR item (checked). */
#ifndef TL_CORE_RECEIPT_NODE_H
#define TL_CORE_RECEIPT_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_NODE_DOMAIN "tinylm-node-v1"
#define TL_NODE_ID_LEN 32

/* children: n_children ids of TL_NODE_ID_LEN bytes, back to back.
 * TL_ERR_INVALID_CBOR when metadata is not one deterministic CBOR item;
 * TL_ERR_INVALID_ARGUMENT for NULL arguments. */
tl_status tl_node_id(const char *type, const uint8_t *metadata,
                     size_t metadata_len, const uint8_t *children,
                     size_t n_children, uint8_t id[TL_NODE_ID_LEN]);

#endif
