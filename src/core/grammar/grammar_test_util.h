/* Test helper shared by the readers' tests: whole texts through a matcher
 * over a vocabulary of the 256 single bytes. */
#ifndef TL_CORE_GRAMMAR_TEST_UTIL_H
#define TL_CORE_GRAMMAR_TEST_UTIL_H

#include <string.h>

#include "grammar/grammar.h"

typedef struct gt_bytes_vocab {
  uint8_t byte[256];
  const uint8_t *bytes[256];
  uint32_t lens[256];
} gt_bytes_vocab;

/* A matcher for g in a (after g's own memory). */
static inline tl_status gt_matcher(tl_arena *a, const tl_grammar *g, tl_gmatcher **m) {
  static gt_bytes_vocab v;
  const tl_gvocab *vocab;
  tl_status st;
  for (int i = 0; i < 256; i++) {
    v.byte[i] = (uint8_t)i;
    v.bytes[i] = &v.byte[i];
    v.lens[i] = 1;
  }
  st = tl_gvocab_build(a, 256, v.bytes, v.lens, &vocab);
  return st != TL_OK ? st : tl_gmatcher_new(a, g, vocab, 0, m);
}

/* The whole of s[0..n) is a sentence of the matcher's grammar. */
static inline bool gt_accepts(tl_gmatcher *m, const char *s, size_t n) {
  tl_gmatcher_reset(m);
  return tl_gmatcher_accept(m, (const uint8_t *)s, n) == TL_OK && tl_gmatcher_accepting(m);
}

static inline bool gt_accepts_str(tl_gmatcher *m, const char *s) {
  return gt_accepts(m, s, strlen(s));
}

#endif
