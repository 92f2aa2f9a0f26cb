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
 *     position and an indexed binary min-heap of positions keyed by
 *     (rank of the pair starting there, position): O(n log n) time,
 *     24 bytes of scratch per byte.
 * Short words' results go through a direct-mapped cache. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "checked.h"
#include "tok_internal.h"

/* ---- small words ----------------------------------------------------------- */

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
      rank[best - 1] = tl_tok_merge_find(t, ids[best - 1], ids[best], &res[best - 1]);
    if (best + 1 < m)
      rank[best] = tl_tok_merge_find(t, ids[best], ids[best + 1], &res[best]);
  }
  *n_out = m;
}

/* ---- long words: linked list + indexed heap -------------------------------- */

typedef struct bpe_heap {
  uint32_t *heap;       /* positions, a binary min-heap */
  uint32_t *slot;       /* position -> index in heap, or TL_TOK_NONE */
  const uint32_t *rank; /* position -> rank of the pair starting there */
  uint32_t n;
} bpe_heap;

static inline bool heap_less(const bpe_heap *h, uint32_t a, uint32_t b) {
  return h->rank[a] < h->rank[b] || (h->rank[a] == h->rank[b] && a < b);
}

static inline void heap_set(bpe_heap *h, uint32_t i, uint32_t pos) {
  h->heap[i] = pos;
  h->slot[pos] = i;
}

static void heap_up(bpe_heap *h, uint32_t i) {
  uint32_t pos = h->heap[i];
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (!heap_less(h, pos, h->heap[parent])) break;
    heap_set(h, i, h->heap[parent]);
    i = parent;
  }
  heap_set(h, i, pos);
}

static void heap_down(bpe_heap *h, uint32_t i) {
  uint32_t pos = h->heap[i];
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && heap_less(h, h->heap[c + 1], h->heap[c])) c++;
    if (!heap_less(h, h->heap[c], pos)) break;
    heap_set(h, i, h->heap[c]);
    i = c;
  }
  heap_set(h, i, pos);
}

static void heap_remove(bpe_heap *h, uint32_t pos) {
  uint32_t i = h->slot[pos], last;
  h->slot[pos] = TL_TOK_NONE;
  h->n--;
  if (i == h->n) return;
  last = h->heap[h->n];
  heap_set(h, i, last);
  heap_down(h, i);
  heap_up(h, h->slot[last]);
}

/* Position pos's pair changed to rank (maybe TL_TOK_NONE): fix the heap. */
static void heap_update(bpe_heap *h, uint32_t *rank, uint32_t pos,
                        uint32_t new_rank) {
  uint32_t old = rank[pos];
  if (h->slot[pos] == TL_TOK_NONE) {
    rank[pos] = new_rank;
    if (new_rank == TL_TOK_NONE) return;
    h->n++;
    heap_set(h, h->n - 1, pos);
    heap_up(h, h->n - 1);
    return;
  }
  if (new_rank == TL_TOK_NONE) {
    heap_remove(h, pos);
    rank[pos] = new_rank;
    return;
  }
  rank[pos] = new_rank;
  if (new_rank < old)
    heap_up(h, h->slot[pos]);
  else
    heap_down(h, h->slot[pos]);
}

tl_status tl_tok_bpe_scratch_bound(size_t n, size_t *bytes) {
  size_t b;
  /* id, next, prev, rank, slot, heap: six u32 per byte, plus alignment */
  if (tl_mul_size(n, 6 * sizeof(uint32_t), &b) != TL_OK ||
      tl_add_size(b, 6 * TL_ARENA_MIN_ALIGN, &b) != TL_OK)
    return TL_ERR_INTEGER_OVERFLOW;
  *bytes = b;
  return TL_OK;
}

tl_status tl_tok_bpe_word_heap(const struct tl_tokenizer *t, const uint8_t *w,
                               size_t n, tl_arena *scratch,
                               tl_tok_emit_fn emit, void *ctx) {
  tl_arena_mark mark = tl_arena_mark_now(scratch);
  uint32_t *id, *next, *prev, *rank, *slot, *heap;
  bpe_heap h;
  tl_status st;
  uint32_t nn = (uint32_t)n;
  if (n == 0) return TL_OK;
  if (n >= TL_TOK_NONE) return TL_ERR_BOUNDS;
  {
    void *p[6];
    for (int k = 0; k < 6; k++) {
      st = tl_arena_alloc_array(scratch, n, sizeof(uint32_t), 4, &p[k]);
      if (st != TL_OK) {
        tl_arena_rewind(scratch, mark);
        return st;
      }
    }
    id = p[0];
    next = p[1];
    prev = p[2];
    rank = p[3];
    slot = p[4];
    heap = p[5];
  }
  h.heap = heap;
  h.slot = slot;
  h.rank = rank;
  h.n = 0;
  for (uint32_t i = 0; i < nn; i++) {
    id[i] = t->byte_tok[w[i]];
    next[i] = i + 1; /* nn: end of the word */
    prev[i] = i - 1; /* TL_TOK_NONE for i == 0 */
    rank[i] = i + 1 < nn ? t->byte_pair_rank[(uint32_t)w[i] << 8 | w[i + 1]]
                         : TL_TOK_NONE;
    slot[i] = TL_TOK_NONE;
    if (rank[i] != TL_TOK_NONE) {
      slot[i] = h.n;
      heap[h.n++] = i;
    }
  }
  for (uint32_t i = h.n / 2; i-- > 0;) heap_down(&h, i);

  while (h.n > 0) {
    /* the best pair (p, q) becomes p */
    uint32_t p = heap[0], q = next[p], nq = next[q], res;
    id[p] = tl_tok_merge_result(t, rank[p]);
    heap_remove(&h, p);
    rank[p] = TL_TOK_NONE;
    if (slot[q] != TL_TOK_NONE) heap_remove(&h, q);
    rank[q] = TL_TOK_NONE;
    next[p] = nq;
    if (nq < nn) {
      prev[nq] = p;
      heap_update(&h, rank, p, tl_tok_merge_find(t, id[p], id[nq], &res));
    }
    if (prev[p] != TL_TOK_NONE)
      heap_update(&h, rank, prev[p],
                  tl_tok_merge_find(t, id[prev[p]], id[p], &res));
  }
  for (uint32_t p = 0; p < nn; p = next[p]) emit(ctx, id[p], next[p] - p);
  tl_arena_rewind(scratch, mark);
  return TL_OK;
}

/* ---- dispatch and cache ---------------------------------------------------- */

static uint32_t word_hash(const uint8_t *w, size_t n) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ w[i]) * 16777619u;
  return h;
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
    e = &cache->e[word_hash(w, n) & cache->mask];
    if (e->wlen == n && memcmp(e->word, w, n) == 0) {
      for (size_t i = 0; i < e->ntok; i++) emit(ctx, e->ids[i], e->lens[i]);
      return TL_OK;
    }
  }
  bpe_small(t, w, n, ids, lens, &m);
  for (size_t i = 0; i < m; i++) emit(ctx, ids[i], lens[i]);
  if (e != NULL && m <= TL_TOK_CACHE_TOKS) {
    e->wlen = (uint8_t)n;
    e->ntok = (uint8_t)m;
    memcpy(e->word, w, n);
    memcpy(e->ids, ids, m * sizeof ids[0]);
    memcpy(e->lens, lens, m);
  }
  return TL_OK;
}
