/* tinylm — the one public header.
 *
 * Freestanding: it includes only <stddef.h> and <stdint.h>, so the same
 * header serves the native host, the wasm32 build and every tool. */
#ifndef TINYLM_H
#define TINYLM_H

#include <stddef.h>
#include <stdint.h>

#define TL_VERSION_MAJOR 0
#define TL_VERSION_MINOR 1
#define TL_VERSION_PATCH 0
#define TL_VERSION_STRING "0.1.0"
/* One integer that orders releases: 0x00MMmmpp. */
#define TL_VERSION_NUMBER \
  ((TL_VERSION_MAJOR << 16) | (TL_VERSION_MINOR << 8) | TL_VERSION_PATCH)

/* Every expected failure is one of these (DESIGN.md §3). The list is the
 * single source for the enum and for tl_status_name(); the numeric values
 * are part of the ABI (the wasm host sees them) and never change meaning.
 * The short name is the machine-readable error code the CLI prints
 * (`error: invalid_utf8: ...`, {"error": "invalid_utf8"}). */
#define TL_STATUS_LIST(X)                                                     \
  X(TL_OK, 0, "ok")                                                                 \
  X(TL_ERR_INVALID_ARGUMENT, 1, "invalid_argument")                                               \
  X(TL_ERR_UNSUPPORTED_ABI, 2, "unsupported_abi")                                                \
  X(TL_ERR_UNSUPPORTED_FEATURE, 3, "unsupported_feature")                                            \
  X(TL_ERR_INVALID_HANDLE, 4, "invalid_handle")                                                 \
  X(TL_ERR_STALE_HANDLE, 5, "stale_handle")                                                   \
  X(TL_ERR_BOUNDS, 6, "bounds")                                                         \
  X(TL_ERR_ALIGNMENT, 7, "alignment")                                                      \
  X(TL_ERR_INTEGER_OVERFLOW, 8, "integer_overflow")                                               \
  X(TL_ERR_OUT_OF_MEMORY, 9, "out_of_memory")                                                  \
  X(TL_ERR_INVALID_MODEL, 10, "invalid_model")                                                 \
  X(TL_ERR_HASH_MISMATCH, 11, "hash_mismatch")                                                 \
  X(TL_ERR_UNSUPPORTED_QUANTIZATION, 12, "unsupported_quantization")                                      \
  X(TL_ERR_UNSUPPORTED_SHAPE, 13, "unsupported_shape")                                             \
  X(TL_ERR_CONTEXT_EXCEEDED, 14, "context_exceeded")                                              \
  X(TL_ERR_CANCELLED, 15, "cancelled")                                                     \
  X(TL_ERR_WORKER_FAILURE, 16, "worker_failure")                                                \
  X(TL_ERR_SELF_TEST_FAILED, 17, "self_test_failed")                                              \
  X(TL_ERR_NUMERICAL_FAILURE, 18, "numerical_failure")                                             \
  X(TL_ERR_INTERNAL_INVARIANT, 19, "internal_invariant")                                            \
  /* domain statuses */                                                       \
  X(TL_ERR_INVALID_UTF8, 32, "invalid_utf8")                                                  \
  X(TL_ERR_INVALID_CBOR, 33, "invalid_cbor")                                                  \
  X(TL_ERR_CONFLICT, 34, "conflict")                                                      \
  X(TL_ERR_IO, 35, "io")                                                  \
  X(TL_ERR_TEMPLATE_RAISED, 36, "template_raised")

typedef enum tl_status {
#define TL_STATUS_ENUM_(name, value, code) name = value,
  TL_STATUS_LIST(TL_STATUS_ENUM_)
#undef TL_STATUS_ENUM_
} tl_status;

#ifdef __cplusplus
extern "C" {
#endif

/* The status's error code: "ok", "bounds", "invalid_utf8", ... (the
 * identifier without TL_ERR_, lower case); "unknown" for a value that is
 * not in the list. Never NULL. */
const char *tl_status_name(tl_status status);

/* The library's version string, for checking header against library. */
const char *tl_version(void);

#ifdef __cplusplus
}
#endif

#endif /* TINYLM_H */
