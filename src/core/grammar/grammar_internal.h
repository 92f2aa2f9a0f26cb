/* The lowered grammar the matcher runs (shared by build.c and match.c).
 *
 * A rule is a list of alternatives; an alternative is a run of elements
 * ended by END. An element is a byte set (one byte from a 256-bit set) or
 * a reference to a rule. A parser position is an element's index. */
#ifndef TL_CORE_GRAMMAR_INTERNAL_H
#define TL_CORE_GRAMMAR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "grammar/grammar.h"

/* Element encoding: the kind in the top two bits, its operand below. */
#define TL_GE_END 0u
#define TL_GE_SET (1u << 30)
#define TL_GE_REF (2u << 30)
#define TL_GE_KIND(e) ((e) & (3u << 30))
#define TL_GE_ARG(e) ((e) & ~(3u << 30))
/* alt_start of an alternative cut because it needs a rule that matches no
 * text: never entered. */
#define TL_GALT_DEAD UINT32_MAX

struct tl_grammar {
  uint32_t n_rules;
  const uint32_t *rule_first; /* n_rules + 1: rule r's alternatives are
                               * alt_start[rule_first[r] .. rule_first[r+1]) */
  const uint32_t *alt_start;  /* an alternative's first element */
  uint32_t n_elems;
  const uint32_t *elems;
  uint32_t n_sets;
  const uint8_t (*sets)[32];  /* bit b of sets[i][b / 8] is 1 << (b % 8) */
  uint32_t root;              /* rule 0 */
  uint32_t root_lead;         /* "\n"{0,2} root (TL_GM_LEADING_NEWLINES); not in the digest */
  uint8_t digest[32];
  /* Per element: where it sits in a shorter copy of its countdown rule
   * (canon_positions in build.c), or itself; NULL when no repetition
   * counts down from more than TL_GCANON_BYTES. */
  const uint32_t *canon;
};

/* A bounded repetition's countdown rules O_k (k copies may still follow)
 * behave alike for any text of at most this many bytes once k exceeds it:
 * each copy takes at least one byte. */
#define TL_GCANON_BYTES 24u

static inline bool tl_gset_has(const uint8_t set[32], uint8_t b) {
  return (set[b >> 3] >> (b & 7)) & 1u;
}

#endif
