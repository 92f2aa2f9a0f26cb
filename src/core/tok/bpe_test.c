/* Byte-level BPE (bpe.c): merge order on hand-made vocabularies, the two
 * paths (stack, heap) against each other and against a naive reference
 * written here (rescan every pair, merge the lowest rank, leftmost first),
 * the word cache, and a long word in O(n log n). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "tl_test.h"
#include "tok/tok_internal.h"
#include "tok_build.h"

static tok_builder builder;
static _Alignas(64) uint8_t section[1 << 18];
static _Alignas(64) uint8_t load_mem[4 << 20];
static _Alignas(64) uint8_t scratch_mem[8 << 20];

typedef struct collected {
  uint32_t ids[4096];
  uint32_t lens[4096];
  size_t n;
} collected;

static void collect(void *ctx, uint32_t id, uint32_t len) {
  collected *c = ctx;
  if (c->n < 4096) {
    c->ids[c->n] = id;
    c->lens[c->n] = len;
  }
  c->n++;
}

static const tl_tokenizer *load(tl_test_ctx *t, tl_arena *arena) {
  const tl_tokenizer *tok = NULL;
  size_t len = tok_build_finish(&builder, section, sizeof section);
  if (!TL_EXPECT(t, len > 0)) return NULL;
  tl_arena_init(arena, load_mem, sizeof load_mem);
  if (!TL_EXPECT_OK(t, tl_tok_load(section, len, arena, &tok))) return NULL;
  return tok;
}

static uint32_t id_of(const char *s) {
  return tok_build_find(&builder, (const uint8_t *)s, strlen(s));
}

/* BPE of s through the dispatching entry point. */
static void bpe(const tl_tokenizer *tok, const char *s, collected *c) {
  tl_arena scratch;
  tl_arena_init(&scratch, scratch_mem, sizeof scratch_mem);
  c->n = 0;
  tl_tok_bpe_word(tok, (const uint8_t *)s, strlen(s), &scratch, NULL, collect,
                  c);
}

static bool same_tokens(const collected *c, const char *const *want, size_t n) {
  if (c->n != n) return false;
  for (size_t i = 0; i < n; i++)
    if (c->ids[i] != id_of(want[i]) || c->lens[i] != strlen(want[i]))
      return false;
  return true;
}

#define EXPECT_BPE(t, tok, s, ...)                                           \
  do {                                                                       \
    static const char *const want_[] = {__VA_ARGS__};                        \
    collected c_;                                                            \
    bpe(tok, s, &c_);                                                        \
    if (!TL_EXPECT(t,                                                        \
                   same_tokens(&c_, want_, sizeof want_ / sizeof want_[0]))) \
      tl_test_print(t, "  for input \"" s "\"\n");                           \
  } while (0)

static void merge_order(tl_test_ctx *t) {
  tl_arena arena;
  const tl_tokenizer *tok;
  tok_build_init(&builder);
  tok_build_merge(&builder, "e r");  /* rank 0 */
  tok_build_merge(&builder, "l o");  /* rank 1 */
  tok_build_merge(&builder, "h e");  /* rank 2 */
  tok_build_merge(&builder, "lo w"); /* rank 3 */
  tok_build_merge(&builder, "h er"); /* rank 4 */
  tok_build_merge(&builder, "a a");  /* rank 5 */
  tok_build_merge(&builder, "aa aa");
  tok_build_merge(&builder, "Ġ t");
  tok_build_merge(&builder, "Ġt he");
  tok = load(t, &arena);
  if (tok == NULL) return;
  EXPECT_BPE(t, tok, "x", "x");
  EXPECT_BPE(t, tok, "low", "low");
  EXPECT_BPE(t, tok, "lower", "low", "er");
  /* "e r" (rank 0) wins over "h e" (rank 2): "her", not "he" "r" */
  EXPECT_BPE(t, tok, "her", "her");
  EXPECT_BPE(t, tok, "he", "he");
  /* equal ranks: leftmost first */
  EXPECT_BPE(t, tok, "aaa", "aa", "a");
  EXPECT_BPE(t, tok, "aaaaa", "aaaa", "a");
  EXPECT_BPE(t, tok, "aaaaaaa", "aaaa", "aa", "a");
  /* "h e" (rank 2), "Ġ t" (7), then "Ġt he" (8) */
  EXPECT_BPE(t, tok, " the", " the");
  EXPECT_BPE(t, tok, " th", " t", "h");
}

/* The naive reference: the builder's merge list, rescanned each step. */
static size_t naive_bpe(const uint8_t *w, size_t n, uint32_t *out) {
  uint32_t sym[512];
  size_t m = n;
  for (size_t i = 0; i < n; i++) sym[i] = w[i];
  for (;;) {
    size_t best = SIZE_MAX;
    uint32_t best_rank = UINT32_MAX;
    for (size_t i = 0; i + 1 < m; i++)
      for (uint32_t r = 0; r < builder.n_merges && r < best_rank; r++)
        if (builder.merges[r][0] == sym[i] &&
            builder.merges[r][1] == sym[i + 1]) {
          best = i;
          best_rank = r;
          break;
        }
    if (best == SIZE_MAX) break;
    sym[best] = builder.merges[best_rank][2];
    memmove(sym + best + 1, sym + best + 2, (m - best - 2) * sizeof sym[0]);
    m--;
  }
  memcpy(out, sym, m * sizeof sym[0]);
  return m;
}

/* Random vocabularies over a four-letter alphabet, random words up to 300
 * bytes: the stack path, the heap path and the reference agree. */
static void paths_agree(tl_test_ctx *t) {
  static const char letters[] = "abcd";
  tl_test_rng rng = {2024};
  for (int vocab = 0; vocab < 12; vocab++) {
    tl_arena arena, scratch;
    const tl_tokenizer *tok;
    uint32_t n_merges = 20 + (uint32_t)(tl_test_rng_next(&rng) % 200);
    tok_build_init(&builder);
    for (uint32_t k = 0; k < 4 * n_merges && builder.n_merges < n_merges; k++) {
      /* pick two existing tokens made of the alphabet */
      uint32_t a = 'a' + (uint32_t)(tl_test_rng_next(&rng) % 4),
               b = 'a' + (uint32_t)(tl_test_rng_next(&rng) % 4);
      uint32_t extra = builder.n_tokens - 256;
      uint8_t xy[256];
      size_t la, lb;
      bool dup = false;
      if (extra > 0 && tl_test_rng_next(&rng) % 2)
        a = 256 + (uint32_t)(tl_test_rng_next(&rng) % extra);
      if (extra > 0 && tl_test_rng_next(&rng) % 2)
        b = 256 + (uint32_t)(tl_test_rng_next(&rng) % extra);
      la = builder.off[a + 1] - builder.off[a];
      lb = builder.off[b + 1] - builder.off[b];
      if (la + lb > 16) continue;
      for (uint32_t r = 0; r < builder.n_merges; r++)
        dup |= builder.merges[r][0] == a && builder.merges[r][1] == b;
      if (dup) continue;
      memcpy(xy, builder.bytes + builder.off[a], la);
      memcpy(xy + la, builder.bytes + builder.off[b], lb);
      {
        uint32_t r = tok_build_find(&builder, xy, la + lb);
        if (r == UINT32_MAX) r = tok_build_token(&builder, xy, la + lb);
        builder.merges[builder.n_merges][0] = a;
        builder.merges[builder.n_merges][1] = b;
        builder.merges[builder.n_merges][2] = r;
        builder.n_merges++;
      }
    }
    tok = load(t, &arena);
    if (tok == NULL) return;
    for (int word = 0; word < 300; word++) {
      uint8_t w[300];
      uint32_t ref[512];
      size_t n = 1 + tl_test_rng_next(&rng) % (word < 200 ? 64 : 300), m;
      collected a, b;
      for (size_t i = 0; i < n; i++)
        w[i] = (uint8_t)
            letters[tl_test_rng_next(&rng) % (1 + tl_test_rng_next(&rng) % 4)];
      m = naive_bpe(w, n, ref);
      a.n = b.n = 0;
      tl_arena_init(&scratch, scratch_mem, sizeof scratch_mem);
      TL_EXPECT_OK(t, tl_tok_bpe_word(tok, w, n, &scratch, NULL, collect, &a));
      TL_EXPECT_OK(t, tl_tok_bpe_word_heap(tok, w, n, &scratch, collect, &b));
      if (!TL_EXPECT_EQ_U64(t, a.n, m) || !TL_EXPECT_EQ_U64(t, b.n, m)) return;
      for (size_t i = 0; i < m; i++)
        if (!TL_EXPECT_EQ_U64(t, a.ids[i], ref[i]) ||
            !TL_EXPECT_EQ_U64(t, b.ids[i], ref[i]))
          return;
      TL_EXPECT_EQ_U64(t, scratch.used, 0); /* released */
    }
  }
}

/* The cache returns what the computation returned, also after collisions
 * overwrote entries. */
static void cache_consistent(tl_test_ctx *t) {
  static tl_tok_cache_entry entries[4];
  static const char *const words[] = {"lower", "low", "her", "aaaaa", "x",
                                      "aaa",   "he",  "lo",  "lowlow"};
  tl_tok_cache cache = {entries, 3};
  tl_arena arena, scratch;
  const tl_tokenizer *tok;
  tok_build_init(&builder);
  tok_build_merge(&builder, "e r");
  tok_build_merge(&builder, "l o");
  tok_build_merge(&builder, "h e");
  tok_build_merge(&builder, "lo w");
  tok_build_merge(&builder, "a a");
  tok = load(t, &arena);
  if (tok == NULL) return;
  memset(entries, 0, sizeof entries);
  tl_arena_init(&scratch, scratch_mem, sizeof scratch_mem);
  for (int round = 0; round < 3; round++)
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
      collected a, b;
      size_t n = strlen(words[i]);
      a.n = b.n = 0;
      tl_tok_bpe_word(tok, (const uint8_t *)words[i], n, &scratch, &cache,
                      collect, &a);
      tl_tok_bpe_word(tok, (const uint8_t *)words[i], n, &scratch, NULL,
                      collect, &b);
      if (!TL_EXPECT_EQ_U64(t, a.n, b.n)) return;
      TL_EXPECT_MEM(t, a.ids, b.ids, a.n * sizeof a.ids[0]);
      TL_EXPECT_MEM(t, a.lens, b.lens, a.n * sizeof a.lens[0]);
    }
}

typedef struct counter {
  size_t n, bytes;
  uint32_t first, last;
} counter;

static void count(void *ctx, uint32_t id, uint32_t len) {
  counter *c = ctx;
  if (c->n == 0) c->first = id;
  c->last = id;
  c->n++;
  c->bytes += len;
}

/* One word of 300000 'a' with merges a+a, aa+aa, ... up to 64 a's: the
 * heap path ends with 4687 tokens of 64 a's and one of 32. Quadratic time
 * would not finish; the scratch it takes is the stated bound. */
static void long_word(tl_test_ctx *t) {
  static uint8_t w[300000];
  tl_arena arena, scratch;
  const tl_tokenizer *tok;
  counter c = {0, 0, 0, 0};
  size_t bound = 0;
  tok_build_init(&builder);
  tok_build_merge(&builder, "a a");
  tok_build_merge(&builder, "aa aa");
  tok_build_merge(&builder, "aaaa aaaa");
  tok_build_merge(&builder, "aaaaaaaa aaaaaaaa");
  tok_build_merge(&builder, "aaaaaaaaaaaaaaaa aaaaaaaaaaaaaaaa");
  tok_build_merge(&builder,
                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa "
                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  tok = load(t, &arena);
  if (tok == NULL) return;
  memset(w, 'a', sizeof w);
  TL_EXPECT_OK(t, tl_tok_bpe_scratch_bound(sizeof w, &bound));
  if (!TL_EXPECT(t, bound <= sizeof scratch_mem)) return;
  tl_arena_init(&scratch, scratch_mem, bound);
  TL_EXPECT_OK(t, tl_tok_bpe_word(tok, w, sizeof w, &scratch, NULL, count, &c));
  TL_EXPECT_EQ_U64(t, c.n, sizeof w / 64 + 1);
  TL_EXPECT_EQ_U64(t, c.bytes, sizeof w);
  TL_EXPECT_EQ_U64(t, c.first, builder.merges[5][2]);
  TL_EXPECT_EQ_U64(t, c.last, builder.merges[4][2]);
  /* one byte less than the bound is not enough */
  tl_arena_init(&scratch, scratch_mem, bound - 5 * TL_ARENA_MIN_ALIGN - 1);
  TL_EXPECT_STATUS(t,
                   tl_tok_bpe_word(tok, w, sizeof w, &scratch, NULL, count, &c),
                   TL_ERR_OUT_OF_MEMORY);
}

static const tl_test_case cases[] = {TL_CASE(merge_order), TL_CASE(paths_agree),
                                     TL_CASE(cache_consistent),
                                     TL_CASE(long_word)};
TL_SUITE(bpe, cases);
