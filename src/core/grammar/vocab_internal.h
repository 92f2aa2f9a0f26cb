/* The vocabulary trie's layout (vocab.c builds it, match.c walks it).
 *
 * Nodes in depth-first preorder; node 0 is the root (the empty string).
 * Node i holds the byte on the edge into it and its depth; skip[i] is the
 * first node after its subtree; the tokens whose bytes end at node i are
 * toks[tok_first[i] .. tok_first[i + 1]). */
#ifndef TL_CORE_GRAMMAR_VOCAB_INTERNAL_H
#define TL_CORE_GRAMMAR_VOCAB_INTERNAL_H

#include <stdint.h>

#include "grammar/grammar.h"

/* Longest token byte string the trie takes. */
#define TL_GVOCAB_MAX_TOKEN 65535u

struct tl_gvocab {
  uint32_t n_tokens; /* ids 0 .. n_tokens - 1 (the mask's width) */
  uint32_t n_nodes;
  uint32_t max_depth;
  const uint8_t *byte;
  const uint16_t *depth;
  const uint32_t *skip;
  const uint32_t *tok_first; /* n_nodes + 1 */
  const uint32_t *toks;
};

#endif
