/* A bounds-checked little-endian reader over a byte span, and the matching
 * load/store helpers. Nothing here reads past [data, data + len). */
#ifndef TL_CORE_BYTES_H
#define TL_CORE_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tinylm.h"

static inline uint16_t tl_load_le16(const uint8_t *p) {
  return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}
static inline uint32_t tl_load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}
static inline uint64_t tl_load_le64(const uint8_t *p) {
  return (uint64_t)tl_load_le32(p) | (uint64_t)tl_load_le32(p + 4) << 32;
}
static inline uint32_t tl_load_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}
static inline void tl_store_le16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void tl_store_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}
static inline void tl_store_le64(uint8_t *p, uint64_t v) {
  tl_store_le32(p, (uint32_t)v);
  tl_store_le32(p + 4, (uint32_t)(v >> 32));
}
static inline void tl_store_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}
static inline void tl_store_be64(uint8_t *p, uint64_t v) {
  tl_store_be32(p, (uint32_t)(v >> 32));
  tl_store_be32(p + 4, (uint32_t)v);
}

/* Bit patterns of floats and back (memcpy: no aliasing or FPU tricks, so
 * native and wasm32 agree). */
static inline uint32_t tl_f32_to_bits(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}
static inline float tl_bits_to_f32(uint32_t b) {
  float x;
  memcpy(&x, &b, sizeof x);
  return x;
}
static inline uint64_t tl_f64_to_bits(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}
static inline double tl_bits_to_f64(uint64_t b) {
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}

/* Cursor over untrusted bytes. A failed read leaves pos unchanged. */
typedef struct tl_reader {
  const uint8_t *data;
  size_t len;
  size_t pos;
} tl_reader;

/* data may be NULL only when len is 0. */
tl_status tl_reader_init(tl_reader *r, const uint8_t *data, size_t len);
size_t tl_reader_remaining(const tl_reader *r);
tl_status tl_reader_u8(tl_reader *r, uint8_t *out);
tl_status tl_reader_u16le(tl_reader *r, uint16_t *out);
tl_status tl_reader_u32le(tl_reader *r, uint32_t *out);
tl_status tl_reader_u64le(tl_reader *r, uint64_t *out);
/* Points *out at the next n bytes (no copy) and advances past them. */
tl_status tl_reader_span(tl_reader *r, size_t n, const uint8_t **out);
tl_status tl_reader_skip(tl_reader *r, size_t n);
/* Moves to an absolute offset within [0, len]. */
tl_status tl_reader_seek(tl_reader *r, size_t pos);

/* Lower-case hex of n bytes into out (2n + 1 bytes, NUL-terminated): the
 * one spelling of digests and ids in messages, JSON and file names. */
static inline void tl_hex_encode(const uint8_t *p, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  out[2 * n] = '\0';
}

#endif
