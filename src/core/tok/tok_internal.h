/* Internal interfaces of the tokenizer runtime: the loaded tokenizer's
 * layout and the jobs encode is made of, one file each:
 *   tok_load.c  validates a section and builds the lookup structures
 *   added.c     the added-token tries and HF AddedVocabulary matching
 *   pretok.c    the Qwen2 pre-tokenizer regex as a hand-written matcher
 *   bpe.c       byte-level BPE over one pre-tokenized piece
 *   encode.c    the pipeline: UTF-8, added tokens, NFC, pieces, offsets
 *   decode.c    ids back to bytes (raw / visible / diagnostic)
 * Nothing here is part of the public API. */
#ifndef TL_CORE_TOK_INTERNAL_H
#define TL_CORE_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "tinylm.h"
#include "tokenizer.h"

#define TL_TOK_NONE UINT32_MAX

/* ---- pre-tokenizer ------------------------------------------------------ */

/* The end of the pre-tokenizer piece that starts at s[pos] (pos < len): the
 * match of the Qwen2 pattern there. s[0..len) must be well-formed UTF-8 and
 * pos a character boundary; the result is a character boundary > pos. */
size_t tl_tok_pretok_next(const uint8_t *s, size_t len, size_t pos);

/* ---- added tokens ------------------------------------------------------- */

typedef struct tl_tok_added_info {
  uint32_t id;
  uint32_t flags;
  const uint8_t *pattern; /* what is matched: the content, or NFC(content) */
  size_t pattern_len;
  const uint8_t *dec; /* what HF's ByteLevel decoder makes of the content */
  size_t dec_len;
} tl_tok_added_info;

/* A byte trie over one matching set (non-normalized or normalized added
 * tokens). Node 0 is the root; node i's children are
 * edge_child[first[i] .. first[i] + count[i]), sorted by edge_byte. */
typedef struct tl_tok_trie {
  uint32_t n_nodes;
  const uint32_t *first;
  const uint16_t *count;
  const uint32_t *term; /* index into added_info + 1, or 0 */
  const uint8_t *edge_byte;
  const uint32_t *edge_child;
  uint32_t root_child[256]; /* the root's edges as a table; 0 = none */
} tl_tok_trie;

/* Builds the trie over the patterns of the added tokens idx[0..n) (indexes
 * into info). Patterns must be unique (TL_ERR_INVALID_MODEL otherwise). */
tl_status tl_tok_trie_build(const tl_tok_added_info *info, const uint32_t *idx,
                            uint32_t n, tl_arena *arena, tl_tok_trie *out);

/* One split of HF's AddedVocabulary::find_matches: a gap of text or an added
 * token, as byte ranges of the searched text. */
typedef struct tl_tok_split {
  bool is_token;
  uint32_t id;
  size_t start, end;
} tl_tok_split;

typedef struct tl_tok_added_iter {
  const struct tl_tokenizer *tok;
  const tl_tok_trie *trie;
  const uint8_t *s;
  size_t len;
  size_t search;       /* where the leftmost-longest search resumes */
  size_t start_offset; /* HF's start_offset: end of the last split */
  bool have_pending, done;
  tl_tok_split pending;
} tl_tok_added_iter;

void tl_tok_added_iter_init(tl_tok_added_iter *it,
                            const struct tl_tokenizer *tok,
                            const tl_tok_trie *trie, const uint8_t *s,
                            size_t len);
/* The next split in text order; false when there are no more. */
bool tl_tok_added_iter_next(tl_tok_added_iter *it, tl_tok_split *out);

/* ---- the loaded tokenizer ----------------------------------------------- */

/* Merge hash table slot: (left, right) -> (rank, result). */
typedef struct tl_tok_merge_slot {
  uint32_t left, right, rank, result;
} tl_tok_merge_slot;

struct tl_tokenizer {
  /* the section's arrays (validated; little-endian u32 unless noted) */
  const uint8_t *index;  /* (n_tokens + 1) u32 */
  const uint8_t *bytes;  /* token bytes */
  const uint8_t *merges; /* n_merges * {left, right, result} */
  uint32_t n_tokens, n_merges, n_added;
  uint32_t max_token_len;

  uint32_t byte_tok[256];         /* token id of each single byte */
  const uint32_t *byte_pair_rank; /* [a << 8 | b] -> merge rank of bytes */
  const tl_tok_merge_slot *mtab;  /* open addressing, linear probing */
  uint32_t mtab_bits;             /* capacity = 1 << mtab_bits */

  const tl_tok_added_info *added; /* n_added, by increasing id */
  const uint8_t *added_bits;      /* n_tokens bits: id is an added token */
  tl_tok_trie trie_raw, trie_norm;
  uint32_t n_raw, n_norm; /* tokens in each matching set */
};

static inline uint32_t tl_tok_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static inline uint32_t tl_tok_merge_result(const struct tl_tokenizer *t,
                                           uint32_t rank) {
  return tl_tok_rd32(t->merges + (size_t)rank * 12u + 8u);
}

static inline uint32_t tl_tok_merge_hash(uint32_t a, uint32_t b,
                                         uint32_t bits) {
  uint64_t k = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(k >> (64u - bits));
}

/* The rank of merge (a, b), or TL_TOK_NONE; *result gets its token. */
static inline uint32_t tl_tok_merge_find(const struct tl_tokenizer *t,
                                         uint32_t a, uint32_t b,
                                         uint32_t *result) {
  uint32_t mask = (1u << t->mtab_bits) - 1u;
  uint32_t i = tl_tok_merge_hash(a, b, t->mtab_bits);
  for (;;) {
    const tl_tok_merge_slot *s = &t->mtab[i];
    if (s->rank == TL_TOK_NONE) return TL_TOK_NONE;
    if (s->left == a && s->right == b) {
      *result = s->result;
      return s->rank;
    }
    i = (i + 1u) & mask;
  }
}

static inline bool tl_tok_is_added(const struct tl_tokenizer *t, uint32_t id) {
  return (t->added_bits[id >> 3] >> (id & 7u)) & 1u;
}

/* The added_info entry of an added token id (binary search). */
const tl_tok_added_info *tl_tok_added_find(const struct tl_tokenizer *t,
                                           uint32_t id);

static inline uint32_t tl_tok_len(const struct tl_tokenizer *t, uint32_t id) {
  return tl_tok_rd32(t->index + 4u * ((size_t)id + 1u)) -
         tl_tok_rd32(t->index + 4u * (size_t)id);
}

/* ---- BPE ---------------------------------------------------------------- */

/* Words up to this many bytes are merged in place on the stack (quadratic
 * in the word but tiny); longer ones use the heap path, O(n log n). */
#define TL_TOK_BPE_SMALL 64u

/* A direct-mapped cache of BPE results for short words, carved from the
 * encode scratch; one 64-byte line per entry. Results do not depend on it.
 * key[0] is the word's length (0: empty entry), key[1..] the word; a
 * lookup compares the length and three overlapping windows of the word. */
#define TL_TOK_CACHE_WORD 23u
#define TL_TOK_CACHE_TOKS 7u
typedef struct tl_tok_cache_entry {
  uint8_t key[1 + TL_TOK_CACHE_WORD];
  uint8_t ntok;
  uint8_t lens[TL_TOK_CACHE_TOKS];
  uint32_t ids[TL_TOK_CACHE_TOKS + 1];
} tl_tok_cache_entry;

typedef struct tl_tok_cache {
  tl_tok_cache_entry *e; /* NULL: no cache */
  uint32_t mask;
} tl_tok_cache;

/* Receives the BPE tokens of a word in order: id and byte length. */
typedef void (*tl_tok_emit_fn)(void *ctx, uint32_t id, uint32_t len);

/* Scratch the heap path needs for a word of n bytes. */
tl_status tl_tok_bpe_scratch_bound(size_t n, size_t *bytes);

/* BPE of the byte string w[0..n) (n >= 1): emits the tokens. Words longer
 * than TL_TOK_BPE_SMALL take tl_tok_bpe_scratch_bound(n) bytes of scratch,
 * released before returning. cache may be NULL. */
tl_status tl_tok_bpe_word(const struct tl_tokenizer *t, const uint8_t *w,
                          size_t n, tl_arena *scratch, tl_tok_cache *cache,
                          tl_tok_emit_fn emit, void *ctx);

/* Hints that w[0..n) will be looked up in the cache soon (a prefetch of
 * its entry; no effect on results). */
void tl_tok_bpe_prefetch(const tl_tok_cache *cache, const uint8_t *w, size_t n);

/* The heap path for any n (for tests: it must agree with the small one). */
tl_status tl_tok_bpe_word_heap(const struct tl_tokenizer *t, const uint8_t *w,
                               size_t n, tl_arena *scratch, tl_tok_emit_fn emit,
                               void *ctx);

/* ---- GPT-2 byte-level alphabet ------------------------------------------ */

/* The byte a ByteLevel character stands for, or -1 when cp is not one of
 * the 256 characters of the alphabet. */
int tl_tok_byte_level_byte(uint32_t cp);

#endif
