/* Structured output in a generation turn (docs/structured.md, "Thinking";
 * docs/generation.md): the vocabulary trie every grammar on a model shares,
 * and the turn's constraint, which turns a grammar's matcher into the
 * sampler's allow mask (S-2a) step by step, with Qwen3's <think> block
 * kept free within a budget.
 *
 * Also built into the wasm32 API modules (docs/web.md, Modules). */
#ifndef TL_LIB_CONSTRAIN_H
#define TL_LIB_CONSTRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "grammar/grammar.h"
#include "tok/tokenizer.h"

/* A think budget of 0 asks for this one (tokens inside <think>). */
#define TL_THINK_BUDGET_DEFAULT 1024u

/* ---- the model's vocabulary trie ---------------------------------------
 * One cell per model, made at its open: shallow copies of the model
 * (sessions, tinylm serve's slots, each on its own thread) share it. The
 * trie is built on first use, once, under a lock. */
typedef struct tl_grammar_vocab_cell tl_grammar_vocab_cell;

tl_grammar_vocab_cell *tl_grammar_vocab_cell_new(void);
void tl_grammar_vocab_cell_free(tl_grammar_vocab_cell *c);

typedef struct tl_grammar_vocab {
  const tl_gvocab *trie; /* ids 0..tl_tok_vocab_size: special ones never match */
  /* The added tokens that open and close a thought ("<think>",
   * "</think>": what the tokenizer encodes those texts to, when one token
   * each); UINT32_MAX when the tokenizer has none. */
  uint32_t think_open, think_close;
} tl_grammar_vocab;

/* The trie of tok's vocabulary (tok: the cell's model's), built on the
 * first call. TL_ERR_OUT_OF_MEMORY, or the builder's error (then every
 * later call gives it again). */
tl_status tl_grammar_vocab_get(tl_grammar_vocab_cell *c, const tl_tokenizer *tok,
                               tl_grammar_vocab *out);

/* ---- the turn's constraint ---------------------------------------------- */

typedef enum tl_constraint_phase {
  TL_CONSTRAINT_OPEN,     /* the first token: the grammar's, or <think> */
  TL_CONSTRAINT_THINKING, /* inside <think>: free, within the budget */
  TL_CONSTRAINT_GRAMMAR   /* the grammar's text */
} tl_constraint_phase;

typedef struct tl_constraint {
  const tl_grammar *g;
  tl_grammar_vocab v;
  tl_gmatcher *m; /* in the session's region, kept for its next turn */
  uint64_t *allow; /* words over the logits' rows */
  size_t words;
  size_t rows;
  const uint32_t *eos;
  size_t n_eos;
  const tl_tokenizer *tok;
  tl_constraint_phase phase;
  uint32_t budget, thought; /* the think budget; tokens thought so far */
} tl_constraint;

/* The memory a turn's constraint takes for g on v: its matcher's region
 * (the matcher's minimum, or more for its caches). */
size_t tl_constraint_region_bytes(const tl_grammar *g, const tl_gvocab *v);

/* Starts the constraint of one turn: g's matcher in region[0..cap) (at
 * least tl_constraint_region_bytes), the mask in allow (ceil(rows / 64)
 * words; rows: the logits' count, >= the vocabulary's), EOS ids eos.
 * *kept: the matcher an earlier turn left in the region (NULL: none); when
 * it was made for a grammar of the same lowered form (the same schema
 * again) it starts over with its caches warm, else a new one replaces it;
 * either way *kept is this turn's. thinking: the prompt leaves the reply
 * open for a thought (the rule of docs/structured.md,
 * tl_constraint_thinking_open); budget 0: the default. */
tl_status tl_constraint_start(tl_constraint *c, const tl_grammar *g, const tl_grammar_vocab *v,
                              const tl_tokenizer *tok, void *region, size_t cap,
                              tl_gmatcher **kept,
                              uint64_t *allow, size_t rows, const uint32_t *eos, size_t n_eos,
                              bool thinking, uint32_t budget);

/* Whether a prompt leaves the reply open for a thought: one rendered by
 * the chat template ("messages") that does not end with the empty thought
 * the template writes when thinking is off ("<think>\n\n</think>\n\n"),
 * for a model whose tokenizer has <think> and </think>. */
bool tl_constraint_thinking_open(const tl_grammar_vocab *v, const char *mode,
                                 const uint8_t *prompt, size_t len);

/* The allow mask for the next token (c->allow; EOS ids set only where the
 * grammar accepts). TL_ERR_OUT_OF_MEMORY: the matcher's region cannot
 * hold its state. */
tl_status tl_constraint_mask(tl_constraint *c);

/* Advances past the chosen id (one the mask allowed). An id the matcher
 * refuses is TL_ERR_INTERNAL_INVARIANT (the mask and the matcher
 * disagree). */
tl_status tl_constraint_advance(tl_constraint *c, uint32_t id);

/* The text after the thought is a complete sentence of the grammar. */
bool tl_constraint_complete(const tl_constraint *c);

#endif
