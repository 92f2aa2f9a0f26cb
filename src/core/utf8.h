/* Strict UTF-8 (Unicode 15, §3.9 Table 3-7; RFC 3629).
 *
 * Well-formed means exactly the byte sequences of Table 3-7: no overlong
 * forms, no surrogates U+D800..U+DFFF, nothing above U+10FFFF, no truncated
 * sequences, no stray continuation bytes, never C0 C1 F5..FF. U+0000 is an
 * ordinary character. Nothing is ever replaced with U+FFFD; errors carry the
 * byte offset of the first maximal ill-formed subpart (§3.9 "U+FFFD
 * Substitution of Maximal Subparts", D93b), which is what the tokenizer
 * reports to users. */
#ifndef TL_CORE_UTF8_H
#define TL_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_UTF8_MAX_SCALAR 0x10FFFFu

/* TL_OK when s[0..len) is well-formed. Otherwise TL_ERR_INVALID_UTF8 and,
 * when bad_offset is not NULL, *bad_offset = offset of the first byte of the
 * first maximal ill-formed subpart. s may be NULL only when len is 0
 * (TL_ERR_INVALID_ARGUMENT otherwise). */
tl_status tl_utf8_validate(const uint8_t *s, size_t len, size_t *bad_offset);

/* Decodes the character starting at s[*pos] (*pos < len). On success *cp is
 * the scalar value and *pos moves past its bytes. On ill-formed input it
 * returns TL_ERR_INVALID_UTF8 and leaves *pos (the offset of the maximal
 * ill-formed subpart) and *cp unchanged; TL_ERR_BOUNDS when *pos >= len. */
tl_status tl_utf8_next(const uint8_t *s, size_t len, size_t *pos, uint32_t *cp);

/* Length (1..3) of the maximal ill-formed subpart starting at s[pos], i.e.
 * how many bytes one U+FFFD would stand for under the best practice; 0 when
 * a well-formed character starts there or pos >= len. For diagnostic
 * output: the core itself never substitutes. */
size_t tl_utf8_subpart_len(const uint8_t *s, size_t len, size_t pos);

/* Writes the UTF-8 form of scalar value cp and returns its length (1..4);
 * returns 0 and writes nothing for a surrogate or a value above U+10FFFF. */
size_t tl_utf8_encode(uint32_t cp, uint8_t out[4]);

/* Decodes one character at s[pos] (pos < len). Returns true with *cp and
 * *n = its length, or false with *n = length of the maximal ill-formed
 * subpart (1..3). */
static inline bool tl_utf8_decode(const uint8_t *s, size_t len, size_t pos,
                                  uint32_t *cp, size_t *n) {
  uint8_t b0 = s[pos], lo = 0x80, hi = 0xBF;
  size_t need;
  uint32_t v;
  if (b0 < 0x80) {
    *cp = b0;
    *n = 1;
    return true;
  }
  if (b0 < 0xC2) { /* continuation byte, or C0/C1 (overlong 2-byte) */
    *n = 1;
    return false;
  }
  if (b0 < 0xE0) {
    need = 1;
    v = b0 & 0x1Fu;
  } else if (b0 < 0xF0) {
    need = 2;
    v = b0 & 0x0Fu;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 < 0xF5) {
    need = 3;
    v = b0 & 0x07u;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else { /* F5..FF never appear */
    *n = 1;
    return false;
  }
  for (size_t k = 1; k <= need; k++) {
    uint8_t b;
    if (k >= len - pos) { /* truncated: the prefix so far is the subpart */
      *n = k;
      return false;
    }
    b = s[pos + k];
    if (b < lo || b > hi) {
      *n = k;
      return false;
    }
    v = v << 6 | (b & 0x3Fu);
    lo = 0x80;
    hi = 0xBF;
  }
  *cp = v;
  *n = need + 1;
  return true;
}

#endif
