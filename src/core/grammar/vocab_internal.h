/* The vocabulary trie's layout (vocab.c builds it, match.c walks it).
 *
 * Nodes in depth-first preorder; node 0 is the root (the empty string).
 * Node i holds the byte on the edge into it, its depth and its parent;
 * skip[i] is the first node after its subtree; the tokens whose bytes end at node i are
 * toks[tok_first[i] .. tok_first[i + 1]). */
#ifndef TL_CORE_GRAMMAR_VOCAB_INTERNAL_H
#define TL_CORE_GRAMMAR_VOCAB_INTERNAL_H

#include <stdint.h>

#include "grammar/grammar.h"
#include "grammar/grammar_internal.h"

/* Longest token byte string the trie takes. */
#define TL_GVOCAB_MAX_TOKEN 65535u

/* Bytes fall in eight categories, chosen so that the loops grammars spend
 * most tokens in (string content, digits, words) cover whole categories:
 * a subtree whose categories all loop back to the walk's state is allowed
 * whole without visiting it. */
static inline uint8_t tl_gvocab_category(uint8_t b) {
  if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')) return 1u << 0;
  if (b == ' ') return 1u << 1;
  if (b == '"') return 1u << 3;
  if (b == '\\') return 1u << 4;
  if (b < 0x20 || b == 0x7F) return 1u << 5;
  if (b < 0x80) return 1u << 2; /* the rest of printable ASCII */
  return b < 0xC0 ? 1u << 6 : 1u << 7;
}

/* The bytes a JSON string takes as themselves: printable ASCII but '"'
 * and '\\' (categories 0-2). A string of at most n characters walks
 * only where its tokens leave these bytes (match.c). */
#define TL_GVOCAB_SAFE_CATS 0x07u
#define TL_GVOCAB_SAFE_MAX 32u

#define TL_GVOCAB_UTF8_BELOW 1u
#define TL_GVOCAB_UTF8_FROM 2u

struct tl_gvocab {
  uint32_t n_tokens; /* ids 0 .. n_tokens - 1 (the mask's width) */
  uint32_t n_nodes;
  uint32_t max_depth;
  const uint8_t *byte;
  const uint16_t *depth;
  const uint32_t *skip;
  const uint32_t *parent;
  const uint8_t *cats; /* the byte categories (tl_gvocab_category) in the subtree */
  /* Whole UTF-8 (a token may end inside a character, never break one):
   * TL_GVOCAB_UTF8_BELOW when the path to the node is valid UTF-8 ending
   * on a character boundary and every path through its subtree stays
   * valid; TL_GVOCAB_UTF8_FROM when the path to its parent ends on a
   * boundary and every path from the node down is valid from there. */
  const uint8_t *utf8;
  const uint16_t *sub_depth; /* the deepest node in the subtree */
  /* The most characters any path below the node starts: its bytes that
   * are not UTF-8 continuation bytes (a string's length counts these). */
  const uint16_t *sub_chars;
  /* Tokens of at most TL_GCANON_BYTES bytes (grammar_internal.h), one bit
   * per id as in a mask. */
  const uint64_t *short_tokens;
  /* Per n <= TL_GVOCAB_SAFE_MAX, a mask (at safe_upto + n * mask words)
   * of the tokens of at most n bytes, all safe ones. */
  const uint64_t *safe_upto;
  /* The nodes whose own byte is not safe below a path of safe bytes only
   * (where a token leaves them), by depth d = 1 .. TL_GVOCAB_SAFE_MAX + 1:
   * exits[exit_first[d] .. exit_first[d + 1]). */
  const uint32_t *exit_first;
  const uint32_t *exits;
  const uint32_t *tok_first; /* n_nodes + 1 */
  const uint32_t *toks;
};

#endif
