/* Strict UTF-8 after Unicode §3.9 Table 3-7. Each lead byte fixes the
 * sequence length and the allowed range of the second byte; every later
 * byte must be 80..BF:
 *
 *   00..7F
 *   C2..DF  80..BF
 *   E0      A0..BF  80..BF          (A0: no overlong 3-byte forms)
 *   E1..EC  80..BF  80..BF
 *   ED      80..9F  80..BF          (9F: no surrogates)
 *   EE..EF  80..BF  80..BF
 *   F0      90..BF  80..BF  80..BF  (90: no overlong 4-byte forms)
 *   F1..F3  80..BF  80..BF  80..BF
 *   F4      80..8F  80..BF  80..BF  (8F: nothing above U+10FFFF)
 *
 * Because the table restricts the second byte, a decoder that stops at the
 * first byte outside its range has consumed exactly the maximal ill-formed
 * subpart (§3.9 D93b): the bytes before the stop are a prefix of some
 * well-formed sequence and the stop byte is not. */
#include "utf8.h"

#include <stdbool.h>

tl_status tl_utf8_validate(const uint8_t *s, size_t len, size_t *bad_offset) {
  size_t pos = 0;
  if (s == NULL && len != 0) return TL_ERR_INVALID_ARGUMENT;
  while (pos < len) {
    uint32_t cp;
    size_t n;
    if (s[pos] < 0x80) { /* ASCII fast path */
      pos++;
      continue;
    }
    if (!tl_utf8_decode(s, len, pos, &cp, &n)) {
      if (bad_offset != NULL) *bad_offset = pos;
      return TL_ERR_INVALID_UTF8;
    }
    pos += n;
  }
  return TL_OK;
}

tl_status tl_utf8_next(const uint8_t *s, size_t len, size_t *pos,
                       uint32_t *cp) {
  uint32_t v;
  size_t n;
  if (pos == NULL || cp == NULL || (s == NULL && len != 0))
    return TL_ERR_INVALID_ARGUMENT;
  if (*pos >= len) return TL_ERR_BOUNDS;
  if (!tl_utf8_decode(s, len, *pos, &v, &n)) return TL_ERR_INVALID_UTF8;
  *cp = v;
  *pos += n;
  return TL_OK;
}

size_t tl_utf8_subpart_len(const uint8_t *s, size_t len, size_t pos) {
  uint32_t v;
  size_t n;
  if (s == NULL || pos >= len) return 0;
  return tl_utf8_decode(s, len, pos, &v, &n) ? 0 : n;
}

size_t tl_utf8_encode(uint32_t cp, uint8_t out[4]) {
  if (cp < 0x80) {
    out[0] = (uint8_t)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (uint8_t)(0xC0 | cp >> 6);
    out[1] = (uint8_t)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  if (cp < 0x10000) {
    out[0] = (uint8_t)(0xE0 | cp >> 12);
    out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp & 0x3F));
    return 3;
  }
  if (cp > TL_UTF8_MAX_SCALAR) return 0;
  out[0] = (uint8_t)(0xF0 | cp >> 18);
  out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (uint8_t)(0x80 | (cp & 0x3F));
  return 4;
}
