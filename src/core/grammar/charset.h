/* Sets of Unicode scalar values as sorted, merged ranges (fixed capacity:
 * what the regex and JSON Schema readers build classes in, without an
 * allocator), and their emission as one character of the text: raw UTF-8,
 * or a character inside a JSON string in its canonical escaped form
 * (docs/structured.md, "Canonical forms"). */
#ifndef TL_CORE_GRAMMAR_CHARSET_H
#define TL_CORE_GRAMMAR_CHARSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar/grammar.h"

#define TL_CS_MAX_RANGES 128u
#define TL_CS_MAX_CP 0x10FFFFu

typedef struct tl_charset {
  uint32_t lo[TL_CS_MAX_RANGES], hi[TL_CS_MAX_RANGES];
  uint32_t n;
  bool overflow; /* a range did not fit: the set is unusable */
} tl_charset;

void tl_cs_clear(tl_charset *cs);
/* Adds lo..hi (inclusive; lo <= hi <= TL_CS_MAX_CP), keeping the ranges
 * sorted and merged. */
void tl_cs_add(tl_charset *cs, uint32_t lo, uint32_t hi);
void tl_cs_add_set(tl_charset *cs, const tl_charset *other);
/* Every scalar value not in cs (surrogates included: they never match). */
void tl_cs_complement(tl_charset *cs);
bool tl_cs_has(const tl_charset *cs, uint32_t cp);

/* The ECMAScript classes (ECMA-262 without the i flag): \d, \w, \s (its
 * WhiteSpace and LineTerminator code points) and '.' (everything but the
 * four LineTerminators). */
void tl_cs_add_digit(tl_charset *cs);
void tl_cs_add_word(tl_charset *cs);
void tl_cs_add_space(tl_charset *cs);
void tl_cs_add_dot(tl_charset *cs);

/* One character of cs. json: as JSON string content in canonical form
 * (what ECMAScript's JSON.stringify writes: \" \\ \b \f \n \r \t, other
 * controls as \u00xx with lower-case hex, everything else raw). An empty
 * set matches nothing. TL_GEXPR_NONE on overflow (err set, the builder
 * failed). */
tl_gexpr tl_cs_emit(tl_gbuilder *b, const tl_charset *cs, bool json, tl_gerror *err);

/* The canonical JSON string escape of cp into out (1..6 bytes, no
 * quotes); UTF-8 for characters written raw. 0 for a surrogate or a value
 * past U+10FFFF. */
size_t tl_json_char_canonical(uint32_t cp, uint8_t out[6]);

#endif
