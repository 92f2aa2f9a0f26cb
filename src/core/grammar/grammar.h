/* Grammars for structured output (docs/structured.md): a context-free
 * grammar over bytes, the readers that build one (JSON Schema, GBNF,
 * regular expressions), and the matcher that turns a parser state into
 * the token mask the sampler applies before its draw.
 *
 * Freestanding, like the rest of the core: memory comes from arenas the
 * caller hands in, and no function here allocates anything else.
 *
 * The pieces:
 *   builder   expression trees (literals, classes, sequences, choices,
 *             bounded repetition, named rules) that readers produce;
 *   grammar   the builder's output after tl_gb_finish: rules of
 *             alternatives of byte sets and rule references, checked
 *             (every rule defined, no left recursion, a non-empty
 *             language) and digested (SHA-256 of its canonical form: the
 *             receipt's grammar id);
 *   vocab     a trie of the tokenizer's token byte strings, built once per
 *             tokenizer and shared by every matcher;
 *   matcher   one generation's parser state: the mask of tokens whose
 *             bytes keep the text a prefix of some sentence, advanced by
 *             the bytes of each chosen token. */
#ifndef TL_CORE_GRAMMAR_GRAMMAR_H
#define TL_CORE_GRAMMAR_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "tinylm.h"

/* ---- errors ---------------------------------------------------------------
 * What a reader or the builder refuses, with a message a user can act on
 * ("unsupported JSON Schema keyword 'patternProperties' at /properties/a",
 * "gbnf: undefined rule 'value' at line 3"). */
/* Start one zeroed (tl_gerror err = {0}): the first error set wins. */
typedef struct tl_gerror {
  tl_status status;  /* TL_ERR_INVALID_ARGUMENT (malformed input),
                      * TL_ERR_UNSUPPORTED_FEATURE (valid but not enforced:
                      * names the keyword), TL_ERR_INVALID_UTF8 (a text
                      * that is not UTF-8), TL_ERR_BOUNDS (a limit),
                      * TL_ERR_OUT_OF_MEMORY */
  uint32_t offset;   /* byte offset in the input, where known; else 0 */
  char message[256]; /* NUL-terminated, truncated to fit */
} tl_gerror;

/* Sets status and message (the concatenation of the NULL-terminated
 * list of strings) unless err already holds an error: the first one
 * wins. Returns status. */
tl_status tl_gerror_set(tl_gerror *err, tl_status status, uint32_t offset, ...);
/* Appends to err->message (truncating). */
void tl_gerror_append(tl_gerror *err, const char *s, size_t n);
void tl_gerror_append_u64(tl_gerror *err, uint64_t v);

/* ---- builder --------------------------------------------------------------
 * Expressions are ids; every constructor returns TL_GEXPR_NONE after the
 * builder's first failure (which tl_gb_finish reports), so readers can
 * build without checking each call. */
typedef uint32_t tl_gexpr;
#define TL_GEXPR_NONE UINT32_MAX
#define TL_GB_UNBOUNDED UINT32_MAX

typedef struct tl_gbuilder tl_gbuilder;

/* Limits that keep compilation and matching bounded (tl_gb_finish refuses
 * a grammar past them with TL_ERR_BOUNDS naming the limit). */
#define TL_GRAMMAR_MAX_RULES 65536u    /* after lowering */
#define TL_GRAMMAR_MAX_ELEMS 1048576u  /* after lowering */
#define TL_GRAMMAR_MAX_REPEAT 100000u  /* a bounded repetition's max */

/* The builder lives in a, as does everything it builds (and the finished
 * grammar). */
tl_status tl_gb_new(tl_arena *a, tl_gbuilder **out);

/* The exact bytes s[0..n) (n 0: the empty string). */
tl_gexpr tl_gb_literal(tl_gbuilder *b, const uint8_t *s, size_t n);
/* One Unicode scalar value (as UTF-8) from ranges: pairs lo, hi (inclusive,
 * code points <= 0x10FFFF; surrogates never match), n_pairs of them; with
 * negate, one scalar value outside all of them. */
tl_gexpr tl_gb_class(tl_gbuilder *b, const uint32_t *ranges, size_t n_pairs, bool negate);
/* One byte whose bit is set in set[0..32) (bit b of set[b / 8] is
 * 1 << (b % 8)): for raw-byte grammars (GBNF's \xNN in a class). */
tl_gexpr tl_gb_bytes(tl_gbuilder *b, const uint8_t set[32]);
tl_gexpr tl_gb_seq(tl_gbuilder *b, const tl_gexpr *items, size_t n); /* n 0: empty */
tl_gexpr tl_gb_alt(tl_gbuilder *b, const tl_gexpr *items, size_t n); /* n >= 1 */
/* e repeated min..max times (max TL_GB_UNBOUNDED: no upper bound). */
tl_gexpr tl_gb_repeat(tl_gbuilder *b, tl_gexpr e, uint32_t min, uint32_t max);

/* Rules by name: the same name gives the same id (declared on first use,
 * so references may precede definitions). */
uint32_t tl_gb_rule(tl_gbuilder *b, const char *name, size_t len);
tl_gexpr tl_gb_ref(tl_gbuilder *b, uint32_t rule);
/* Gives the rule its body; a second definition is an error naming it. */
void tl_gb_define(tl_gbuilder *b, uint32_t rule, tl_gexpr body);
/* The arena the builder lives in: readers keep their working state there
 * (a JSON Schema's merged subschemas), released with the builder. */
tl_arena *tl_gb_arena(tl_gbuilder *b);
/* Records a reader's own error (the first error wins); later constructors
 * return TL_GEXPR_NONE. */
void tl_gb_fail(tl_gbuilder *b, const tl_gerror *err);
/* The builder's first error (status TL_OK if none). */
const tl_gerror *tl_gb_error(const tl_gbuilder *b);

typedef struct tl_grammar tl_grammar;

/* Lowers the rules reachable from root and checks them; *out lives in the
 * builder's arena. Errors (err says which rule): an undefined rule, left
 * recursion (also through rules that can match the empty string), an
 * empty language, a limit. */
tl_status tl_gb_finish(tl_gbuilder *b, uint32_t root, const tl_grammar **out, tl_gerror *err);

/* SHA-256 of the grammar's canonical form (rule numbering by first
 * reference from the root, byte sets as bitmaps): equal for grammars that
 * lower to the same rules, whatever reader built them. */
void tl_grammar_digest(const tl_grammar *g, uint8_t out[32]);
/* Sizes of the lowered form (for limits, benchmarks and docs). */
uint32_t tl_grammar_rules(const tl_grammar *g);
uint32_t tl_grammar_elems(const tl_grammar *g);

/* ---- readers --------------------------------------------------------------
 * Each builds into a fresh builder in arena and finishes it. */

/* JSON Schema (draft 2020-12) as JSON text; the keywords of
 * docs/structured.md. Anything it does not enforce is refused with
 * TL_ERR_UNSUPPORTED_FEATURE naming the keyword and where it is. */
tl_status tl_grammar_from_json_schema(tl_arena *arena, const uint8_t *text, size_t len,
                                      const tl_grammar **out, tl_gerror *err);
/* Any JSON object (OpenAI's response_format json_object). */
tl_status tl_grammar_json_object(tl_arena *arena, const tl_grammar **out, tl_gerror *err);
/* The JSON Schema reader into an existing builder, from a parsed schema:
 * what composes several schemas in one grammar (tinylm serve's tool calls,
 * one schema per tool's parameters). Each call names its rules apart from
 * every other call's (and from names a reader chooses: they all start with
 * "json-"), so calls can share a builder. */
struct tl_json_value;
tl_gexpr tl_gb_json_schema(tl_gbuilder *b, const struct tl_json_value *schema, tl_gerror *err);
/* llama.cpp's GBNF; the start rule is "root". */
tl_status tl_grammar_from_gbnf(tl_arena *arena, const uint8_t *text, size_t len,
                               const tl_grammar **out, tl_gerror *err);
/* A regular expression (the subset of docs/structured.md), matched as a
 * whole: the text is one full match. */
tl_status tl_grammar_from_regex(tl_arena *arena, const uint8_t *text, size_t len,
                                const tl_grammar **out, tl_gerror *err);
/* The regex subset as an expression inside an existing builder (what the
 * JSON Schema reader uses for "pattern"): anchors ^ and $ are allowed only
 * at the ends; an unanchored pattern matches anywhere inside the string
 * (JSON Schema's semantics), so the caller asks for that with
 * unanchored_search. Characters are Unicode scalar values. */
tl_gexpr tl_gb_regex(tl_gbuilder *b, const uint8_t *text, size_t len, bool unanchored_search,
                     tl_gerror *err);

/* ---- vocabulary -----------------------------------------------------------
 * A trie of token byte strings in depth-first order. Tokens given with
 * NULL bytes (special tokens: EOS, <|im_start|>, ...) are never in a mask;
 * the matcher's caller decides EOS separately (tl_gmatcher_mask's
 * *eos_allowed). */
typedef struct tl_gvocab tl_gvocab;
tl_status tl_gvocab_build(tl_arena *a, uint32_t n_tokens,
                          const uint8_t *const *bytes, const uint32_t *lens,
                          const tl_gvocab **out);
uint32_t tl_gvocab_tokens(const tl_gvocab *v);

/* ---- matcher --------------------------------------------------------------
 * The parser state of one generation. Memory: its own arena (a region of
 * at least tl_gmatcher_min_bytes; more memory means larger caches). */
typedef struct tl_gmatcher tl_gmatcher;

/* Start options. */
enum {
  /* Up to two '\n' bytes may precede the grammar's text (what a model
   * writes after closing a <think> block). */
  TL_GM_LEADING_NEWLINES = 1u << 0
};

size_t tl_gmatcher_min_bytes(const tl_grammar *g, const tl_gvocab *v);
tl_status tl_gmatcher_new(tl_arena *a, const tl_grammar *g, const tl_gvocab *v,
                          uint32_t options, tl_gmatcher **out);
/* Back to the start state (the caches are kept). */
void tl_gmatcher_reset(tl_gmatcher *m);
/* Back to the start state for options, keeping the caches, now for g: the
 * matcher's grammar or one whose lowered form is the same (equal digest:
 * the same text compiled again, as a server does per request), whose
 * memory the matcher uses from now on. TL_ERR_INVALID_ARGUMENT (nothing
 * changed) for another grammar. What the caches hold depends on the
 * lowered form alone, so masks stay exact. */
tl_status tl_gmatcher_restart(tl_gmatcher *m, const tl_grammar *g, uint32_t options);

/* The tokens whose bytes keep the text so far followed by them a prefix of
 * some sentence: bit id of allow[id / 64] (words: ceil(n_tokens / 64)).
 * *eos_allowed: the text so far is a sentence. TL_ERR_OUT_OF_MEMORY when
 * the matcher's arena cannot hold the state (its caches are flushed first). */
tl_status tl_gmatcher_mask(tl_gmatcher *m, uint64_t *allow, bool *eos_allowed);

/* Advances by bytes, any number of them (the caches flush on the way when
 * the text's states outnumber the tables); TL_ERR_INVALID_ARGUMENT (state
 * unchanged) when they leave the language's prefixes, TL_ERR_OUT_OF_MEMORY
 * (state unchanged) when a single state does not fit. */
tl_status tl_gmatcher_accept(tl_gmatcher *m, const uint8_t *bytes, size_t n);
/* The text so far is a complete sentence. */
bool tl_gmatcher_accepting(const tl_gmatcher *m);
/* No byte can follow (only EOS remains). */
bool tl_gmatcher_finished(const tl_gmatcher *m);

/* Statistics for benchmarks and tests. */
typedef struct tl_gmatcher_stats {
  uint64_t masks, mask_cache_hits, trie_nodes_visited, states, flushes;
} tl_gmatcher_stats;
void tl_gmatcher_get_stats(const tl_gmatcher *m, tl_gmatcher_stats *out);

#endif
