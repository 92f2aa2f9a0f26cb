/* Byte-level BPE over one pre-tokenized piece (a "word").
 *
 * The word starts as one symbol per byte (the section's single-byte
 * tokens). Repeatedly, the adjacent pair with the lowest merge rank is
 * merged, the leftmost one when ranks are equal, until no adjacent pair has
 * a merge. This is HF tokenizers' Word::merge_all (a heap of (rank, pos)
 * with stale entries skipped when the pair at pos no longer yields the same
 * token). The two agree because a section's merges concatenate their
 * operands (TOK-S-4, checked at load): the pair at a position only grows,
 * so an entry that went stale never becomes valid again, and the valid
 * entries are exactly one per position, keyed by its current pair.
 *
 * Two paths with the same result (bpe_test checks them against each other):
 *   - small words (<= TL_TOK_BPE_SMALL bytes): arrays on the stack, a
 *     linear scan for the best pair: O(n^2) but n is tiny and nothing is
 *     allocated;
 *   - longer words: a doubly linked list of symbols indexed by byte
 *     position and an indexed 4-ary min-heap of positions keyed by
 *     (rank of the pair starting there, position): O(n log n) time,
 *     24 bytes of scratch per byte.
 * Short words' results go through a direct-mapped cache. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "checked.h"
#include "tok_internal.h"

/* ---- small words -------------------------------------------------------- */

static void bpe_small(const struct tl_tokenizer *t, const uint8_t *w, size_t n,
                      uint32_t *ids, uint8_t *lens, size_t *n_out) {
  uint32_t rank[TL_TOK_BPE_SMALL], res[TL_TOK_BPE_SMALL];
  size_t m = n;
  for (size_t i = 0; i < n; i++) {
    ids[i] = t->byte_tok[w[i]];
    lens[i] = 1;
  }
  for (size_t i = 0; i + 1 < n; i++) {
    rank[i] = t->byte_pair_rank[(uint32_t)w[i] << 8 | w[i + 1]];
    if (rank[i] != TL_TOK_NONE) res[i] = tl_tok_merge_result(t, rank[i]);
  }
  while (m > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < m; i++)
      if (rank[i] < rank[best]) best = i;
    if (rank[best] == TL_TOK_NONE) break;
    ids[best] = res[best];
    lens[best] = (uint8_t)(lens[best] + lens[best + 1]);
    /* drop symbol best + 1 and the pair that started there */
    memmove(ids + best + 1, ids + best + 2, (m - best - 2) * sizeof ids[0]);
    memmove(lens + best + 1, lens + best + 2, (m - best - 2) * sizeof lens[0]);
    if (best + 2 < m) { /* pairs best + 2 .. m - 2 move down one */
      memmove(rank + best + 1, rank + best + 2,
              (m - best - 3) * sizeof rank[0]);
      memmove(res + best + 1, res + best + 2, (m - best - 3) * sizeof res[0]);
    }
    m--;
    if (best > 0)
      rank[best - 1] =
          tl_tok_merge_find(t, ids[best - 1], ids[best], &res[best - 1]);
    if (best + 1 < m)
      rank[best] = tl_tok_merge_find(t, ids[best], ids[best + 1], &res[best]);
  }
  *n_out = m;
}

/* ---- long words: linked list + indexed heap ----------------------------- */

/* A 4-ary min-heap of keys rank << 32 | position (so equal ranks pop
 * leftmost first), indexed: slot[position] is the key's index in the heap
 * or TL_TOK_NONE. Keys live in the heap array itself, so sifting touches
 * one array. */
typedef struct bpe_heap {
  uint64_t *key;
  uint32_t *slot;
  uint32_t n;
} bpe_heap;

#define KEY(rank, pos) ((uint64_t)(rank) << 32 | (pos))
#define KEY_POS(k) ((uint32_t)(k))
#define KEY_RANK(k) ((uint32_t)((k) >> 32))

static inline void heap_set(bpe_heap *h, uint32_t i, uint64_t k) {
  h->key[i] = k;
  h->slot[KEY_POS(k)] = i;
}

static void heap_up(bpe_heap *h, uint32_t i, uint64_t k) {
  while (i > 0) {
    uint32_t parent = (i - 1) / 4;
    if (h->key[parent] <= k) break;
    heap_set(h, i, h->key[parent]);
    i = parent;
  }
  heap_set(h, i, k);
}

static void heap_down(bpe_heap *h, uint32_t i, uint64_t k) {
  for (;;) {
    uint32_t c = 4 * i + 1, best;
    uint64_t bk;
    if (c >= h->n) break;
    best = c;
    bk = h->key[c];
    for (uint32_t j = c + 1; j < c + 4 && j < h->n; j++)
      if (h->key[j] < bk) {
        bk = h->key[j];
        best = j;
      }
    if (bk >= k) break;
    heap_set(h, i, bk);
    i = best;
  }
  heap_set(h, i, k);
}

/* Puts key k at index i (a key there went away or changed). */
static void heap_fix(bpe_heap *h, uint32_t i, uint64_t k) {
  if (i > 0 && h->key[(i - 1) / 4] > k)
    heap_up(h, i, k);
  else
    heap_down(h, i, k);
}

static void heap_remove(bpe_heap *h, uint32_t pos) {
  uint32_t i = h->slot[pos];
  h->slot[pos] = TL_TOK_NONE;
  h->n--;
  if (i != h->n) heap_fix(h, i, h->key[h->n]);
}

/* Position pos's pair now has rank r (TL_TOK_NONE: no merge). */
static void heap_update(bpe_heap *h, uint32_t pos, uint32_t r) {
  uint32_t i = h->slot[pos];
  if (i == TL_TOK_NONE) {
    if (r != TL_TOK_NONE) heap_up(h, h->n++, KEY(r, pos));
  } else if (r == TL_TOK_NONE) {
    heap_remove(h, pos);
  } else {
    heap_fix(h, i, KEY(r, pos));
  }
}

tl_status tl_tok_bpe_scratch_bound(size_t n, size_t *bytes) {
  size_t b;
  /* id, next, prev, slot: four u32 per byte; the heap: one u64 */
  if (tl_mul_size(n, 4 * sizeof(uint32_t) + sizeof(uint64_t), &b) != TL_OK ||
      tl_add_size(b, 5 * TL_ARENA_MIN_ALIGN, &b) != TL_OK)
    return TL_ERR_INTEGER_OVERFLOW;
  *bytes = b;
  return TL_OK;
}

tl_status tl_tok_bpe_word_heap(const struct tl_tokenizer *t, const uint8_t *w,
                               size_t n, tl_arena *scratch, tl_tok_emit_fn emit,
                               void *ctx) {
  tl_arena_mark mark = tl_arena_mark_now(scratch);
  uint32_t *id, *next, *prev, *slot;
  bpe_heap h;
  tl_status st;
  uint32_t nn = (uint32_t)n;
  void *p[5];
  if (n == 0) return TL_OK;
  if (n >= TL_TOK_NONE) return TL_ERR_BOUNDS;
  for (int k = 0; k < 5; k++) {
    st = tl_arena_alloc_array(scratch, n, k < 4 ? 4 : 8, 8, &p[k]);
    if (st != TL_OK) {
      tl_arena_rewind(scratch, mark);
      return st;
    }
  }
  id = p[0];
  next = p[1];
  prev = p[2];
  slot = p[3];
  h.key = p[4];
  h.slot = slot;
  h.n = 0;
  for (uint32_t i = 0; i < nn; i++) {
    uint32_t r = i + 1 < nn ? t->byte_pair_rank[(uint32_t)w[i] << 8 | w[i + 1]]
                            : TL_TOK_NONE;
    id[i] = t->byte_tok[w[i]];
    next[i] = i + 1; /* nn: end of the word */
    prev[i] = i - 1; /* TL_TOK_NONE for i == 0 */
    slot[i] = TL_TOK_NONE;
    if (r != TL_TOK_NONE) heap_set(&h, h.n++, KEY(r, i));
  }
  for (uint32_t i = h.n; i-- > 0;) heap_down(&h, i, h.key[i]);

  while (h.n > 0) {
    /* the best pair (p, q) becomes p */
    uint64_t top = h.key[0];
    uint32_t pp = KEY_POS(top), q = next[pp], nq = next[q], res, r;
    id[pp] = tl_tok_merge_result(t, KEY_RANK(top));
    if (slot[q] != TL_TOK_NONE) heap_remove(&h, q);
    next[pp] = nq;
    r = TL_TOK_NONE;
    if (nq < nn) {
      prev[nq] = pp;
      r = tl_tok_merge_find(t, id[pp], id[nq], &res);
    }
    heap_update(&h, pp, r);
    if (prev[pp] != TL_TOK_NONE)
      heap_update(&h, prev[pp],
                  tl_tok_merge_find(t, id[prev[pp]], id[pp], &res));
  }
  for (uint32_t i = 0; i < nn; i = next[i]) emit(ctx, id[i], next[i] - i);
  tl_arena_rewind(scratch, mark);
  return TL_OK;
}

/* ---- dispatch and cache ------------------------------------------------- */

static inline uint64_t load64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline uint32_t load32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* A word of 1..TL_TOK_CACHE_WORD bytes as three overlapping windows that,
 * with its length, determine it, read without going past its end. */
static inline void word_windows(const uint8_t *w, size_t n, uint64_t k[3]) {
  if (n >= 16) {
    k[0] = load64(w);
    k[1] = load64(w + 8);
    k[2] = load64(w + n - 8);
  } else if (n >= 8) {
    k[0] = load64(w);
    k[1] = load64(w + n - 8);
    k[2] = 0;
  } else if (n >= 4) {
    k[0] = load32(w);
    k[1] = load32(w + n - 4);
    k[2] = 0;
  } else {
    k[0] = w[0];
    k[1] = (uint64_t)w[n / 2] << 8 | w[n - 1];
    k[2] = 0;
  }
}

static inline uint32_t cache_slot(const uint64_t k[3], size_t n) {
  uint64_t h =
      ((k[0] * 0x9E3779B97F4A7C15ull) ^ (k[1] * 0xC2B2AE3D27D4EB4Full) ^
       (k[2] * 0x165667B19E3779F9ull) ^ n) *
      0xFF51AFD7ED558CCDull;
  return (uint32_t)(h >> 40);
}

void tl_tok_bpe_prefetch(const tl_tok_cache *cache, const uint8_t *w,
                         size_t n) {
#if defined(__GNUC__) || defined(__clang__)
  if (cache != NULL && cache->e != NULL && n >= 1 && n <= TL_TOK_CACHE_WORD) {
    uint64_t k[3];
    word_windows(w, n, k);
    __builtin_prefetch(&cache->e[cache_slot(k, n) & cache->mask]);
  }
#else
  (void)cache;
  (void)w;
  (void)n;
#endif
}

tl_status tl_tok_bpe_word(const struct tl_tokenizer *t, const uint8_t *w,
                          size_t n, tl_arena *scratch, tl_tok_cache *cache,
                          tl_tok_emit_fn emit, void *ctx) {
  uint32_t ids[TL_TOK_BPE_SMALL];
  uint8_t lens[TL_TOK_BPE_SMALL];
  size_t m;
  tl_tok_cache_entry *e = NULL;
  if (n == 0) return TL_OK;
  if (n > TL_TOK_BPE_SMALL)
    return tl_tok_bpe_word_heap(t, w, n, scratch, emit, ctx);
  if (cache != NULL && cache->e != NULL && n <= TL_TOK_CACHE_WORD) {
    uint64_t k[3], c[3];
    word_windows(w, n, k);
    e = &cache->e[cache_slot(k, n) & cache->mask];
    if (e->key[0] == n) {
      word_windows(e->key + 1, n, c);
      if (c[0] == k[0] && c[1] == k[1] && c[2] == k[2]) {
        for (size_t i = 0; i < e->ntok; i++) emit(ctx, e->ids[i], e->lens[i]);
        return TL_OK;
      }
    }
  }
  bpe_small(t, w, n, ids, lens, &m);
  for (size_t i = 0; i < m; i++) emit(ctx, ids[i], lens[i]);
  if (e != NULL && m <= TL_TOK_CACHE_TOKS) {
    e->key[0] = (uint8_t)n;
    memcpy(e->key + 1, w, n);
    e->ntok = (uint8_t)m;
    memcpy(e->ids, ids, m * sizeof ids[0]);
    memcpy(e->lens, lens, m);
  }
  return TL_OK;
}
