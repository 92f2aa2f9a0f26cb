/* The start-up self-test of the wasm32 API modules (docs/web.md): known
 * answers that came from oracles, run inside the module the loader is
 * about to use, so a miscompiled or tampered lane is refused before it
 * computes a token. The loader adds SHA-256 against WebCrypto.
 *   0  BLAKE3: the official test vectors (tests/vectors, every length,
 *      default and extended output);
 *   1  Philox-4x32-10: Random123's known answers (the sampler's PRNG);
 *   2  the fast lane's float dot products (F-6) through this module's
 *      kernels (SIMD128 where built with it) against tools/fast_ref.py's
 *      golden rows;
 *   3  a tiny forward pass on the strict lane (model/selftest_model.h):
 *      its logits digest against the native strict lane's;
 *   4  the same on the fast lane with this module's kernels against the
 *      native fast lane's (tools/selftest_golden.c). One thread: the
 *      threads module's pool starts after the self-tests, and the fast
 *      profile's bits do not depend on the thread count (the native
 *      selftest_lanes test);
 *   5  the sampler: steps of docs/sampler.md (greedy tie, temperature,
 *      top-k, top-p, min-p, a windowed penalty, one forced candidate, draws
 *      at several seeds and counter positions) against the Python
 *      reference's ids, draw words and probability bits
 *      (sample/sampler_vectors.h);
 *   6  on the WebGPU lane only (gpu.h): the tiny forward pass's q8 and q4
 *      models with their products on the device, each product within
 *      webgpu/1's bound of this module's kernels (docs/webgpu-profile.md). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "bytes.h"
#include "gpu.h"
#include "hash/blake3.h"
#include "hash/blake3_vectors.h"
#include "hash/sha256.h"
#include "kernels/fast_vectors.h"
#include "kernels/kernels.h"
#include "model/selftest_model.h"
#include "quant/quant.h"
#include "receipt/node.h"
#include "sample/philox.h"
#include "sample/philox_kat.h"
#include "sample/sampler_selftest.h"
#include "tinylm.h"

static tl_status blake3_vectors(void) {
  static const char hex[] = "0123456789abcdef";
  static uint8_t input[102400];
  uint8_t out[TL_BLAKE3_TV_OUT_LEN];
  for (size_t j = 0; j < sizeof input; j++) input[j] = (uint8_t)(j % 251);
  for (size_t i = 0; i < TL_BLAKE3_TV_COUNT; i++) {
    const tl_blake3_tv *v = &tl_blake3_tvs[i];
    tl_blake3_hasher h;
    if (v->input_len > sizeof input) return TL_ERR_SELF_TEST_FAILED;
    tl_blake3_hasher_init(&h);
    if (tl_blake3_hasher_update(&h, input, v->input_len) != TL_OK ||
        tl_blake3_hasher_finalize(&h, out, sizeof out) != TL_OK)
      return TL_ERR_SELF_TEST_FAILED;
    for (size_t b = 0; b < sizeof out; b++)
      if (v->hash[2 * b] != hex[out[b] >> 4] || v->hash[2 * b + 1] != hex[out[b] & 15])
        return TL_ERR_SELF_TEST_FAILED;
  }
  return TL_OK;
}

static tl_status philox_vectors(void) {
  for (size_t i = 0; i < TL_PHILOX_KAT_COUNT; i++) {
    uint32_t out[4];
    tl_philox4x32_10(tl_philox_kat[i].ctr, tl_philox_kat[i].key, out);
    if (memcmp(out, tl_philox_kat[i].out, sizeof out) != 0) return TL_ERR_SELF_TEST_FAILED;
  }
  return TL_OK;
}

static tl_status f32_dots(void) {
  const tl_kernels *k = tl_wasm_lane_kernels();
  static float x[512], y[8];
  size_t checked = 0;
  for (size_t c = 0; c < sizeof fv_dots / sizeof fv_dots[0]; c++) {
    const fv_dot *v = &fv_dots[c];
    tl_kern_x kx;
    if (v->type != TL_QTYPE_F32 || v->n > 512 || v->rows > 8) continue;
    for (size_t i = 0; i < v->n; i++) x[i] = tl_bits_to_f32(v->x[i]);
    memset(&kx, 0, sizeof kx);
    kx.f = x;
    (k->rows[TL_QTYPE_F32] ? k : tl_kernels_get(TL_KERN_SCALAR))->rows[TL_QTYPE_F32](v->w, 4 * v->n, v->n, &kx, v->rows, y);
    for (size_t r = 0; r < v->rows; r++)
      if (tl_f32_to_bits(y[r]) != v->y[r]) return TL_ERR_SELF_TEST_FAILED;
    checked++;
  }
  return checked > 0 ? TL_OK : TL_ERR_SELF_TEST_FAILED;
}

static tl_status forward(const tl_kernels *k, const uint8_t *golden) {
  uint8_t *work = malloc(TL_SELFTEST_WORK_BYTES), d[32];
  tl_status st = work != NULL ? tl_selftest_digest(k, NULL, work, TL_SELFTEST_WORK_BYTES, d)
                              : TL_ERR_OUT_OF_MEMORY;
  free(work);
  if (st != TL_OK) return st;
  return memcmp(d, golden, sizeof d) == 0 ? TL_OK : TL_ERR_SELF_TEST_FAILED;
}

tl_status tl_wasm_self_test(uint32_t which);
__attribute__((export_name("tl_wasm_self_test"))) tl_status tl_wasm_self_test(uint32_t which) {
  switch (which) {
    case 0:
      return blake3_vectors();
    case 1:
      return philox_vectors();
    case 2:
      return f32_dots();
    case 3:
      return forward(NULL, tl_selftest_golden_strict);
    case 4:
      return forward(tl_wasm_lane_kernels(), tl_selftest_golden_fast);
    case 5:
      return tl_sampler_selftest(tl_sampler_vectors, TL_SAMPLER_VECTOR_COUNT, NULL);
    case 6:
      return tl_wasm_gpu_self_test();
    default:
      return TL_ERR_INVALID_ARGUMENT;
  }
}

/* The kernel variant the fast lane runs here ("wasm_simd128", "scalar"). */
const char *tl_wasm_kernels(void);
__attribute__((export_name("tl_wasm_kernels"))) const char *tl_wasm_kernels(void) {
  return tl_wasm_lane_kernels()->name;
}

/* SHA-256 through this module, which the loader compares with WebCrypto
 * (an independent implementation) at start-up. */
tl_status tl_wasm_sha256(const uint8_t *data, size_t len, uint8_t *out);
__attribute__((export_name("tl_wasm_sha256"))) tl_status tl_wasm_sha256(const uint8_t *data,
                                                                          size_t len,
                                                                          uint8_t *out) {
  if (!tl_wasm_span_ok(data, len, false) || !tl_wasm_span_ok(out, 32, true)) return TL_ERR_BOUNDS;
  return tl_sha256(data, len, out);
}

/* SHA-256 in steps, of a model the loader streams into the memory chunk by
 * chunk (each chunk hashed where it landed, as it arrives), compared with
 * the artifact id tl_model_open_bytes computes. One stream at a time; its
 * state stays inside the module, so no caller can hand it a forged one. */
static tl_sha256_ctx stream;
static bool streaming;

void tl_wasm_sha256_begin(void);
__attribute__((export_name("tl_wasm_sha256_begin"))) void tl_wasm_sha256_begin(void) {
  tl_sha256_init(&stream);
  streaming = true;
}

tl_status tl_wasm_sha256_add(const uint8_t *data, size_t len);
__attribute__((export_name("tl_wasm_sha256_add"))) tl_status tl_wasm_sha256_add(const uint8_t *data,
                                                                                  size_t len) {
  if (!streaming) return TL_ERR_INVALID_ARGUMENT;
  if (!tl_wasm_span_ok(data, len, false)) return TL_ERR_BOUNDS;
  return tl_sha256_update(&stream, data, len);
}

tl_status tl_wasm_sha256_end(uint8_t *out);
__attribute__((export_name("tl_wasm_sha256_end"))) tl_status tl_wasm_sha256_end(uint8_t *out) {
  if (!streaming) return TL_ERR_INVALID_ARGUMENT;
  if (!tl_wasm_span_ok(out, 32, true)) return TL_ERR_BOUNDS;
  streaming = false;
  return tl_sha256_final(&stream, out);
}

/* A receipt node's id (receipt/node.h) for the loader's capability receipt
 * (docs/web.md): type[0..type_len) without U+0000, metadata one
 * deterministic CBOR item (else invalid_cbor), n_children ids of 32 bytes. */
tl_status tl_wasm_node_id(const char *type, size_t type_len, const uint8_t *meta,
                          size_t meta_len, const uint8_t *children, size_t n_children,
                          uint8_t *out);
__attribute__((export_name("tl_wasm_node_id"))) tl_status tl_wasm_node_id(
    const char *type, size_t type_len, const uint8_t *meta, size_t meta_len,
    const uint8_t *children, size_t n_children, uint8_t *out) {
  char t[64];
  if (!tl_wasm_span_ok(type, type_len, false) || !tl_wasm_span_ok(meta, meta_len, false) ||
      n_children > SIZE_MAX / TL_NODE_ID_LEN ||
      !tl_wasm_span_ok(children, TL_NODE_ID_LEN * n_children, false) || !tl_wasm_span_ok(out, TL_NODE_ID_LEN, true))
    return TL_ERR_BOUNDS;
  if (type_len >= sizeof t || memchr(type, 0, type_len) != NULL) return TL_ERR_INVALID_ARGUMENT;
  memcpy(t, type, type_len);
  t[type_len] = '\0';
  return tl_node_id(t, meta, meta_len, n_children != 0 ? children : NULL, n_children, out);
}
