/* The wasm32 core module's exports (build/wasm/tinylm_core.wasm). Pointers
 * are offsets into the module's memory; JS places inputs there with
 * tl_wasm_alloc. Each returns a tl_status value. */
#include "bytes.h"
#include "cbor/cbor.h"
#include "hash/blake3.h"
#include "hash/sha256.h"
#include "tinylm.h"

#define TL_WASM_EXPORT(name) __attribute__((export_name(#name)))

int tl_wasm_sha256(const uint8_t *data, size_t len, uint8_t *out);
int tl_wasm_blake3(const uint8_t *data, size_t len, uint8_t *out,
                   size_t out_len);
int tl_wasm_cbor_validate(const uint8_t *doc, size_t len, uint8_t *fault_out);
const char *tl_wasm_status_name(int status);
const char *tl_wasm_version(void);

TL_WASM_EXPORT(tl_wasm_sha256)
int tl_wasm_sha256(const uint8_t *data, size_t len, uint8_t *out) {
  return (int)tl_sha256(data, len, out);
}

TL_WASM_EXPORT(tl_wasm_blake3)
int tl_wasm_blake3(const uint8_t *data, size_t len, uint8_t *out,
                   size_t out_len) {
  tl_blake3_hasher h;
  tl_status st;
  tl_blake3_hasher_init(&h);
  st = tl_blake3_hasher_update(&h, data, len);
  if (st == TL_OK) st = tl_blake3_hasher_finalize(&h, out, out_len);
  return (int)st;
}

/* Strict validation under the default limits (no tags). fault_out gets
 * 8 bytes: the fault kind and its byte offset, little-endian u32 each. */
TL_WASM_EXPORT(tl_wasm_cbor_validate)
int tl_wasm_cbor_validate(const uint8_t *doc, size_t len, uint8_t *fault_out) {
  tl_cbor_limits limits = tl_cbor_limits_default();
  tl_cbor_fault fault;
  tl_status st = tl_cbor_validate(doc, len, &limits, &fault);
  tl_store_le32(fault_out, (uint32_t)fault.kind);
  tl_store_le32(fault_out + 4, (uint32_t)fault.offset);
  return (int)st;
}

TL_WASM_EXPORT(tl_wasm_status_name)
const char *tl_wasm_status_name(int status) {
  return tl_status_name((tl_status)status);
}

TL_WASM_EXPORT(tl_wasm_version)
const char *tl_wasm_version(void) { return tl_version(); }
