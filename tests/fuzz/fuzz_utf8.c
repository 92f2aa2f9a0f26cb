/* libFuzzer target for src/core/utf8.c. The input is arbitrary bytes; the
 * core's validator, decoder step, subpart length and encoder must agree
 * with a slow reference written here from the bit patterns of RFC 3629 §3
 * (not from Table 3-7, which the core uses), including the offset and the
 * length of every maximal ill-formed subpart (Unicode §3.9 D93b). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

/* Sequence length announced by a lead byte, 0 for a byte that cannot lead. */
static size_t ref_seq_len(uint8_t b) {
  if ((b & 0x80) == 0) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 0;
}

static bool ref_scalar_ok(uint32_t cp, size_t n) {
  static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
  return cp >= min_cp[n] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

/* Decodes at s[i]: true with *cp, *n; false when ill-formed. */
static bool ref_decode(const uint8_t *s, size_t len, size_t i, uint32_t *cp,
                       size_t *n) {
  size_t L = ref_seq_len(s[i]);
  uint32_t v;
  if (L == 0 || L > len - i) return false;
  v = L == 1 ? s[i] : (uint32_t)(s[i] & (0x7F >> L));
  for (size_t k = 1; k < L; k++) {
    if ((s[i + k] & 0xC0) != 0x80) return false;
    v = v << 6 | (s[i + k] & 0x3F);
  }
  if (!ref_scalar_ok(v, L)) return false;
  *cp = v;
  *n = L;
  return true;
}

/* Is s[i..i+k) a prefix of some well-formed sequence? Fill the missing
 * continuation bytes with 80 (smallest) and BF (largest): the prefix can be
 * completed iff that code point interval meets the valid scalars of its
 * length. */
static bool ref_is_prefix(const uint8_t *s, size_t i, size_t k) {
  size_t L = ref_seq_len(s[i]);
  uint32_t lo, hi;
  if (L == 0 || k > L) return false;
  lo = hi = L == 1 ? s[i] : (uint32_t)(s[i] & (0x7F >> L));
  for (size_t j = 1; j < L; j++) {
    uint8_t blo = 0x80, bhi = 0xBF;
    if (j < k) {
      if ((s[i + j] & 0xC0) != 0x80) return false;
      blo = bhi = s[i + j];
    }
    lo = lo << 6 | (blo & 0x3Fu);
    hi = hi << 6 | (bhi & 0x3Fu);
  }
  /* [lo, hi] against [min, 10FFFF] minus [D800, DFFF] */
  {
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    uint32_t a = lo > min_cp[L] ? lo : min_cp[L];
    uint32_t b = hi < 0x10FFFF ? hi : 0x10FFFF;
    if (a > b) return false;
    return !(a >= 0xD800 && b <= 0xDFFF);
  }
}

/* Maximal ill-formed subpart at i: the longest prefix (>= 1 byte) of
 * s[i..] that is a prefix of a well-formed sequence, else 1. */
static size_t ref_subpart(const uint8_t *s, size_t len, size_t i) {
  size_t best = 1;
  for (size_t k = 1; k <= 3 && k <= len - i; k++)
    if (ref_is_prefix(s, i, k)) best = k;
  return best;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t i = 0, pos = 0, bad = SIZE_MAX, ref_bad = SIZE_MAX;
  tl_status st;
  /* reference verdict */
  while (i < size) {
    uint32_t cp;
    size_t n;
    if (!ref_decode(data, size, i, &cp, &n)) {
      ref_bad = i;
      break;
    }
    i += n;
  }
  st = tl_utf8_validate(data, size, &bad);
  if (ref_bad == SIZE_MAX) {
    CHECK(st == TL_OK && bad == SIZE_MAX);
  } else {
    CHECK(st == TL_ERR_INVALID_UTF8 && bad == ref_bad);
  }
  /* decoder step with best-practice substitution, against the reference */
  while (pos < size) {
    uint32_t cp = 0, ref_cp = 0;
    size_t at = pos, ref_n = 0;
    bool ok = ref_decode(data, size, pos, &ref_cp, &ref_n);
    st = tl_utf8_next(data, size, &pos, &cp);
    if (ok) {
      uint8_t enc[4];
      CHECK(st == TL_OK && cp == ref_cp && pos == at + ref_n);
      CHECK(tl_utf8_subpart_len(data, size, at) == 0);
      CHECK(tl_utf8_encode(cp, enc) == ref_n);
      CHECK(memcmp(enc, data + at, ref_n) == 0);
    } else {
      size_t sub = tl_utf8_subpart_len(data, size, at);
      CHECK(st == TL_ERR_INVALID_UTF8 && pos == at);
      CHECK(sub == ref_subpart(data, size, at));
      pos += sub;
    }
  }
  return 0;
}
