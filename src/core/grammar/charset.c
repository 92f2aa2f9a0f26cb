/* Range sets of scalar values and their emission (charset.h). */
#include "grammar/charset.h"

#include <string.h>

#include "utf8.h"

void tl_cs_clear(tl_charset *cs) {
  cs->n = 0;
  cs->overflow = false;
}

void tl_cs_add(tl_charset *cs, uint32_t lo, uint32_t hi) {
  uint32_t i = 0, j;
  /* The first range that ends at or after lo - 1 (it may touch or overlap). */
  while (i < cs->n && cs->hi[i] + 1 < lo) i++;
  j = i;
  /* Absorb every range that starts at or before hi + 1. */
  while (j < cs->n && cs->lo[j] <= hi + 1) {
    if (cs->lo[j] < lo) lo = cs->lo[j];
    if (cs->hi[j] > hi) hi = cs->hi[j];
    j++;
  }
  if (j == i) { /* disjoint: insert at i */
    if (cs->n == TL_CS_MAX_RANGES) {
      cs->overflow = true;
      return;
    }
    memmove(&cs->lo[i + 1], &cs->lo[i], (cs->n - i) * sizeof cs->lo[0]);
    memmove(&cs->hi[i + 1], &cs->hi[i], (cs->n - i) * sizeof cs->hi[0]);
    cs->n++;
  } else if (j > i + 1) { /* ranges i..j-1 merge into i */
    memmove(&cs->lo[i + 1], &cs->lo[j], (cs->n - j) * sizeof cs->lo[0]);
    memmove(&cs->hi[i + 1], &cs->hi[j], (cs->n - j) * sizeof cs->hi[0]);
    cs->n -= j - i - 1;
  }
  cs->lo[i] = lo;
  cs->hi[i] = hi;
}

void tl_cs_add_set(tl_charset *cs, const tl_charset *other) {
  for (uint32_t i = 0; i < other->n; i++) tl_cs_add(cs, other->lo[i], other->hi[i]);
  if (other->overflow) cs->overflow = true;
}

void tl_cs_complement(tl_charset *cs) {
  tl_charset out;
  uint32_t next = 0;
  tl_cs_clear(&out);
  for (uint32_t i = 0; i < cs->n; i++) {
    if (cs->lo[i] > next) tl_cs_add(&out, next, cs->lo[i] - 1);
    next = cs->hi[i] + 1;
  }
  if (next <= TL_CS_MAX_CP) tl_cs_add(&out, next, TL_CS_MAX_CP);
  out.overflow = out.overflow || cs->overflow;
  *cs = out;
}

bool tl_cs_has(const tl_charset *cs, uint32_t cp) {
  for (uint32_t i = 0; i < cs->n; i++)
    if (cp >= cs->lo[i] && cp <= cs->hi[i]) return true;
  return false;
}

void tl_cs_add_digit(tl_charset *cs) { tl_cs_add(cs, '0', '9'); }

void tl_cs_add_word(tl_charset *cs) {
  tl_cs_add(cs, '0', '9');
  tl_cs_add(cs, 'A', 'Z');
  tl_cs_add(cs, '_', '_');
  tl_cs_add(cs, 'a', 'z');
}

/* ECMA-262 WhiteSpace (TAB VT FF SP NBSP ZWNBSP and category Zs, Unicode
 * 16) and LineTerminator (LF CR LS PS). */
void tl_cs_add_space(tl_charset *cs) {
  static const uint32_t r[][2] = {{0x09, 0x0D}, {0x20, 0x20},     {0xA0, 0xA0},
                                  {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                                  {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
                                  {0xFEFF, 0xFEFF}};
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) tl_cs_add(cs, r[i][0], r[i][1]);
}

void tl_cs_add_dot(tl_charset *cs) {
  tl_charset lt;
  tl_cs_clear(&lt);
  tl_cs_add(&lt, 0x0A, 0x0A);
  tl_cs_add(&lt, 0x0D, 0x0D);
  tl_cs_add(&lt, 0x2028, 0x2029);
  tl_cs_complement(&lt);
  tl_cs_add_set(cs, &lt);
}

size_t tl_json_char_canonical(uint32_t cp, uint8_t out[6]) {
  static const char hex[] = "0123456789abcdef";
  const char *esc = NULL;
  switch (cp) {
    case '"': esc = "\\\""; break;
    case '\\': esc = "\\\\"; break;
    case 0x08: esc = "\\b"; break;
    case 0x09: esc = "\\t"; break;
    case 0x0A: esc = "\\n"; break;
    case 0x0C: esc = "\\f"; break;
    case 0x0D: esc = "\\r"; break;
    default: break;
  }
  if (esc != NULL) {
    out[0] = (uint8_t)esc[0];
    out[1] = (uint8_t)esc[1];
    return 2;
  }
  if (cp < 0x20) {
    memcpy(out, "\\u00", 4);
    out[4] = (uint8_t)hex[cp >> 4];
    out[5] = (uint8_t)hex[cp & 15];
    return 6;
  }
  return tl_utf8_encode(cp, out);
}

static tl_gexpr class_of(tl_gbuilder *b, const tl_charset *cs) {
  uint32_t pairs[2 * TL_CS_MAX_RANGES];
  for (uint32_t i = 0; i < cs->n; i++) {
    pairs[2 * i] = cs->lo[i];
    pairs[2 * i + 1] = cs->hi[i];
  }
  return tl_gb_class(b, pairs, cs->n, false);
}

tl_gexpr tl_cs_emit(tl_gbuilder *b, const tl_charset *cs, bool json, tl_gerror *err) {
  tl_gexpr alts[40];
  size_t n_alts = 0;
  if (cs->overflow) {
    tl_gerror_set(err, TL_ERR_BOUNDS, 0, "character class with more than 128 ranges", NULL);
    tl_gb_fail(b, err);
    return TL_GEXPR_NONE;
  }
  if (!json) return class_of(b, cs);
  {
    /* Raw: cs less the controls, '"' and '\\' (escaped below). */
    tl_charset raw = *cs;
    tl_cs_complement(&raw);
    tl_cs_add(&raw, 0, 0x1F);
    tl_cs_add(&raw, '"', '"');
    tl_cs_add(&raw, '\\', '\\');
    tl_cs_complement(&raw);
    if (raw.n > 0) alts[n_alts++] = class_of(b, &raw);
  }
  for (uint32_t cp = 0; cp <= '\\'; cp++) {
    uint8_t enc[6];
    size_t len;
    if (!(cp < 0x20 || cp == '"' || cp == '\\') || !tl_cs_has(cs, cp)) continue;
    len = tl_json_char_canonical(cp, enc);
    alts[n_alts++] = tl_gb_literal(b, enc, len);
  }
  if (n_alts == 0) return class_of(b, cs); /* the empty set */
  return n_alts == 1 ? alts[0] : tl_gb_alt(b, alts, n_alts);
}
