/* Checked size arithmetic. Every product or sum derived from untrusted
 * bytes goes through these before it becomes an offset or a length
 * (docs/architecture.md §3). On overflow *out is left untouched. */
#ifndef TL_CORE_CHECKED_H
#define TL_CORE_CHECKED_H

#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

static inline tl_status tl_add_size(size_t a, size_t b, size_t *out) {
  if (a > SIZE_MAX - b) return TL_ERR_INTEGER_OVERFLOW;
  *out = a + b;
  return TL_OK;
}

static inline tl_status tl_mul_size(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return TL_ERR_INTEGER_OVERFLOW;
  *out = a * b;
  return TL_OK;
}

static inline tl_status tl_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (a > UINT64_MAX - b) return TL_ERR_INTEGER_OVERFLOW;
  *out = a + b;
  return TL_OK;
}

static inline tl_status tl_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (a != 0 && b > UINT64_MAX / a) return TL_ERR_INTEGER_OVERFLOW;
  *out = a * b;
  return TL_OK;
}

/* A u64 read from a file becomes a size_t only through this: on wasm32
 * size_t is 32 bits wide. */
static inline tl_status tl_u64_to_size(uint64_t v, size_t *out) {
  if (v > (uint64_t)SIZE_MAX) return TL_ERR_INTEGER_OVERFLOW;
  *out = (size_t)v;
  return TL_OK;
}

/* Round v up to a multiple of align (a power of two, non-zero). */
static inline tl_status tl_align_up(size_t v, size_t align, size_t *out) {
  size_t mask = align - 1;
  if (align == 0 || (align & mask) != 0) return TL_ERR_INVALID_ARGUMENT;
  if (v > SIZE_MAX - mask) return TL_ERR_INTEGER_OVERFLOW;
  *out = (v + mask) & ~mask;
  return TL_OK;
}

#endif
