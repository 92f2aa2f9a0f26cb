/* Qwen3's think block: where a reply's reasoning and its answer lie.
 *
 * A reply that opens with "<think>" (its first bytes; text before the tag
 * means there is no block) holds its reasoning up to "</think>", and its
 * answer after. The reasoning is reported without the tags and the
 * newlines around it, the answer without the newlines that follow
 * "</think>": "<think>\nhm\n</think>\n\n42" is reasoning "hm", answer
 * "42". A block never closed (the reply cut short while thinking) is all
 * reasoning; the answer is then empty. Receipts, ids and raw bytes are
 * never changed by this: it only says where the parts lie. */
#ifndef TL_GEN_THINK_H
#define TL_GEN_THINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The reply's reasoning is text[reason_from, reason_to) and its answer
 * starts at answer_from (to the end); closed: "</think>" is there (so
 * what follows is the answer's). Without a block: block false, all
 * offsets 0. While the reply may still grow (final false), what could
 * still change is held back: a text that may yet become "<think>" (all of
 * it: block true, every offset len), and the reasoning's trailing
 * newlines or partial "</think>" (reason_to before them); so a stream
 * that sends what lies before these offsets never sends part of a tag. */
typedef struct tl_think {
  bool block, closed;
  size_t reason_from, reason_to, answer_from;
} tl_think;

void tl_think_split(const uint8_t *text, size_t len, bool final, tl_think *out);

#endif /* TL_GEN_THINK_H */
