#include "bytes.h"

tl_status tl_reader_init(tl_reader *r, const uint8_t *data, size_t len) {
  if (r == NULL || (data == NULL && len != 0)) return TL_ERR_INVALID_ARGUMENT;
  r->data = data;
  r->len = len;
  r->pos = 0;
  return TL_OK;
}

size_t tl_reader_remaining(const tl_reader *r) { return r->len - r->pos; }

tl_status tl_reader_span(tl_reader *r, size_t n, const uint8_t **out) {
  if (n > r->len - r->pos) return TL_ERR_BOUNDS;
  *out = r->data + r->pos;
  r->pos += n;
  return TL_OK;
}

tl_status tl_reader_skip(tl_reader *r, size_t n) {
  const uint8_t *ignored;
  return tl_reader_span(r, n, &ignored);
}

tl_status tl_reader_seek(tl_reader *r, size_t pos) {
  if (pos > r->len) return TL_ERR_BOUNDS;
  r->pos = pos;
  return TL_OK;
}

tl_status tl_reader_u8(tl_reader *r, uint8_t *out) {
  const uint8_t *p;
  tl_status st = tl_reader_span(r, 1, &p);
  if (st == TL_OK) *out = p[0];
  return st;
}

tl_status tl_reader_u16le(tl_reader *r, uint16_t *out) {
  const uint8_t *p;
  tl_status st = tl_reader_span(r, 2, &p);
  if (st == TL_OK) *out = tl_load_le16(p);
  return st;
}

tl_status tl_reader_u32le(tl_reader *r, uint32_t *out) {
  const uint8_t *p;
  tl_status st = tl_reader_span(r, 4, &p);
  if (st == TL_OK) *out = tl_load_le32(p);
  return st;
}

tl_status tl_reader_u64le(tl_reader *r, uint64_t *out) {
  const uint8_t *p;
  tl_status st = tl_reader_span(r, 8, &p);
  if (st == TL_OK) *out = tl_load_le64(p);
  return st;
}
