/* The Qwen2 pre-tokenizer: a hand-written matcher exactly equivalent to
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * under Oniguruma semantics, as HF tokenizers runs it (Split, behaviour
 * Isolated): at each position the first alternative that matches wins, each
 * quantifier greedy with the backtracking the pattern implies. Every code
 * point is in \p{L}, \p{N}, \s or none of them, and each of those starts some
 * alternative, so the matches tile the text: there are no gaps, and no match
 * is empty. The matcher works on code points and returns byte positions.
 *
 * Settled against the reference (HF tokenizers 0.22.2 through
 * @anush008/tokenizers, pre_tokenizer.preTokenizeString over every code
 * point): (?i) makes 's match U+017F LATIN SMALL LETTER LONG S too (it case
 * folds to s); no other code point matches a contraction letter (U+212A
 * KELVIN SIGN has no k to match; U+FB05/U+FB06 do not match 's or 't). */
#include <stddef.h>
#include <stdint.h>

#include "tok_internal.h"
#include "unicode.h"

/* The class of a code point: TL_UNI_LETTER (\p{L}), TL_UNI_NUMBER (\p{N}),
 * TL_UNI_SPACE (\s) or 0. ASCII is answered without the tables. */
static const uint8_t ascii_class[128] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 0, 0, /* \t \n \v \f \r */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 1C..1F are not \s */
    4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* space */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, /* digits */
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* A.. */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, /* ..Z */
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* a.. */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0  /* ..z */
};

static inline unsigned cls_of(uint32_t cp) {
  return cp < 0x80u ? ascii_class[cp] : tl_uni_class(cp);
}

/* Decodes the well-formed character at s[i]; *n gets its length. */
static inline uint32_t next_cp(const uint8_t *s, size_t i, size_t *n) {
  uint32_t b = s[i];
  if (b < 0x80u) {
    *n = 1;
    return b;
  }
  if (b < 0xE0u) {
    *n = 2;
    return (b & 0x1Fu) << 6 | (s[i + 1] & 0x3Fu);
  }
  if (b < 0xF0u) {
    *n = 3;
    return (b & 0x0Fu) << 12 | (uint32_t)(s[i + 1] & 0x3Fu) << 6 |
           (s[i + 2] & 0x3Fu);
  }
  *n = 4;
  return (b & 0x07u) << 18 | (uint32_t)(s[i + 1] & 0x3Fu) << 12 |
         (uint32_t)(s[i + 2] & 0x3Fu) << 6 | (s[i + 3] & 0x3Fu);
}

/* ASCII case folding plus U+017F -> s, which is all (?i) adds for the
 * contraction letters s t r e v m l d. */
static inline uint32_t fold(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32u;
  if (cp == 0x17Fu) return 's';
  return cp;
}

/* End of the run of \p{L} starting at i. */
static size_t letters_end(const uint8_t *s, size_t len, size_t i) {
  while (i < len) {
    size_t n;
    uint32_t cp = next_cp(s, i, &n);
    if (!(cls_of(cp) & TL_UNI_LETTER)) break;
    i += n;
  }
  return i;
}

size_t tl_tok_pretok_next(const uint8_t *s, size_t len, size_t pos) {
  size_t n0, p1;
  uint32_t c0 = next_cp(s, pos, &n0);
  unsigned k0 = cls_of(c0);
  p1 = pos + n0;

  /* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
  if (c0 == '\'' && p1 < len) {
    size_t n1, p2;
    uint32_t f1 = fold(next_cp(s, p1, &n1));
    p2 = p1 + n1;
    if (f1 == 's' || f1 == 't' || f1 == 'm' || f1 == 'd') return p2;
    if ((f1 == 'r' || f1 == 'v' || f1 == 'l') && p2 < len) {
      size_t n2;
      uint32_t f2 = fold(next_cp(s, p2, &n2));
      if (f2 == (f1 == 'l' ? 'l' : 'e')) return p2 + n2;
    }
  }

  /* [^\r\n\p{L}\p{N}]?\p{L}+
   * The optional character is tried first; when no letter follows it, the
   * optional part backs off and \p{L}+ must start at pos itself. */
  if (k0 & TL_UNI_LETTER) return letters_end(s, len, p1);
  if (!(k0 & TL_UNI_NUMBER) && c0 != '\r' && c0 != '\n' && p1 < len) {
    size_t n1;
    uint32_t c1 = next_cp(s, p1, &n1);
    if (cls_of(c1) & TL_UNI_LETTER) return letters_end(s, len, p1 + n1);
  }

  /* \p{N} */
  if (k0 & TL_UNI_NUMBER) return p1;

  /* ' ?[^\s\p{L}\p{N}]+[\r\n]*'
   * With a leading space the run must start after it; backing the optional
   * space off cannot help, since a space is \s. Nothing after [\r\n]* can
   * fail, so no other backtracking applies. */
  {
    size_t q = c0 == ' ' ? p1 : pos, e = q;
    while (e < len) {
      size_t n;
      uint32_t cp = next_cp(s, e, &n);
      if (cls_of(cp) != 0) break;
      e += n;
    }
    if (e > q) {
      while (e < len && (s[e] == '\r' || s[e] == '\n')) e++;
      return e;
    }
  }

  /* Here c0 is \s: every other class has matched above. Scan the maximal
   * whitespace run [pos, e), noting the end of its last \r or \n and the
   * start of its last character. */
  {
    size_t e = pos, crlf_end = 0, last = pos;
    while (e < len) {
      size_t n;
      uint32_t cp = next_cp(s, e, &n);
      if (!(cls_of(cp) & TL_UNI_SPACE)) break;
      last = e;
      e += n;
      if (cp == '\r' || cp == '\n') crlf_end = e;
    }
    /* \s*[\r\n]+
     * \s* gives characters back until [\r\n]+ can start: at the last \r or
     * \n of the run; [\r\n]+ then ends right after it. */
    if (crlf_end != 0) return crlf_end;
    /* \s+(?!\S)
     * At the end of the text the whole run matches; before a non-space the
     * run gives back its last character (whose successor is \s), which
     * needs a run of two or more. */
    if (e == len) return e;
    if (last > pos) return last;
    /* \s+ */
    return e;
  }
}
