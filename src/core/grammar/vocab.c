/* The vocabulary trie: every token's byte string in one trie laid out in
 * depth-first order, so the mask walk is a forward scan that skips a
 * whole subtree (every token sharing a refused prefix) with one jump. */
#include <string.h>

#include "grammar/vocab_internal.h"

static int compare_bytes(const uint8_t *a, uint32_t na, const uint8_t *b, uint32_t nb) {
  uint32_t n = na < nb ? na : nb;
  for (uint32_t i = 0; i < n; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/* Token ids ordered by their bytes (bottom-up merge sort; stable, so equal
 * strings keep id order). */
static void sort_ids(uint32_t *ids, uint32_t *tmp, uint32_t n, const uint8_t *const *bytes,
                     const uint32_t *lens) {
  for (uint32_t width = 1; width < n; width *= 2) {
    for (uint32_t lo = 0; lo < n; lo += 2 * width) {
      uint32_t mid = lo + width < n ? lo + width : n;
      uint32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      uint32_t i = lo, j = mid, k = lo;
      while (i < mid || j < hi) {
        if (j >= hi || (i < mid && compare_bytes(bytes[ids[i]], lens[ids[i]], bytes[ids[j]],
                                                 lens[ids[j]]) <= 0))
          tmp[k++] = ids[i++];
        else
          tmp[k++] = ids[j++];
      }
    }
    memcpy(ids, tmp, (size_t)n * sizeof *ids);
  }
}

/* UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
 * U+10FFFF) as a decoder's states: the bytes a character still needs and
 * the range its next byte must be in. */
enum { U8_BOUNDARY, U8_NEED1, U8_NEED2, U8_NEED3, U8_E0, U8_ED, U8_F0, U8_F4, U8_BROKEN = 0x7F };

static uint8_t utf8_next(uint8_t st, uint8_t b) {
  bool cont = b >= 0x80 && b <= 0xBF;
  switch (st) {
  case U8_BOUNDARY:
    if (b < 0x80) return U8_BOUNDARY;
    if (b >= 0xC2 && b <= 0xDF) return U8_NEED1;
    if (b == 0xE0) return U8_E0;
    if (b == 0xED) return U8_ED;
    if (b >= 0xE1 && b <= 0xEF) return U8_NEED2;
    if (b == 0xF0) return U8_F0;
    if (b == 0xF4) return U8_F4;
    if (b >= 0xF1 && b <= 0xF3) return U8_NEED3;
    return U8_BROKEN;
  case U8_NEED1: return cont ? U8_BOUNDARY : U8_BROKEN;
  case U8_NEED2: return cont ? U8_NEED1 : U8_BROKEN;
  case U8_NEED3: return cont ? U8_NEED2 : U8_BROKEN;
  case U8_E0: return b >= 0xA0 && b <= 0xBF ? U8_NEED1 : U8_BROKEN;
  case U8_ED: return b >= 0x80 && b <= 0x9F ? U8_NEED1 : U8_BROKEN;
  case U8_F0: return b >= 0x90 && b <= 0xBF ? U8_NEED2 : U8_BROKEN;
  case U8_F4: return b >= 0x80 && b <= 0x8F ? U8_NEED2 : U8_BROKEN;
  default: return U8_BROKEN;
  }
}

/* utf8 (vocab_internal.h): the decoder's state along each path (parents
 * come first in preorder) in dec, then, children first, bit 7 of dec
 * marks a subtree with a broken character somewhere. */
static void mark_utf8(uint8_t *utf8, uint8_t *dec, const uint8_t *byte, const uint32_t *parent,
                      uint32_t n_nodes) {
  dec[0] = U8_BOUNDARY;
  for (uint32_t i = 1; i < n_nodes; i++) dec[i] = utf8_next(dec[parent[i]], byte[i]);
  for (uint32_t i = n_nodes - 1; i >= 1; i--)
    if (dec[i] == U8_BROKEN || (dec[i] & 0x80u)) dec[parent[i]] |= 0x80u;
  utf8[0] = dec[0] == U8_BOUNDARY ? TL_GVOCAB_UTF8_BELOW : 0;
  for (uint32_t i = 1; i < n_nodes; i++)
    utf8[i] = (uint8_t)((dec[i] == U8_BOUNDARY ? TL_GVOCAB_UTF8_BELOW : 0) |
                        ((dec[parent[i]] & 0x7Fu) == U8_BOUNDARY && !(dec[i] & 0x80u) && dec[i] != U8_BROKEN
                             ? TL_GVOCAB_UTF8_FROM
                             : 0));
}

static bool safe_byte(uint8_t b) { return (tl_gvocab_category(b) & TL_GVOCAB_SAFE_CATS) != 0; }

/* safe_upto, exit_first and exits (vocab_internal.h) from the trie in v:
 * one preorder scan counts, a second fills. safe[d]: the path to the
 * current node at depth d is safe bytes only (a node's parent is the last
 * node seen one level up). */
static tl_status build_safe_tables(tl_arena *a, tl_gvocab *v) {
  const uint32_t words = (v->n_tokens + 63) / 64, top = TL_GVOCAB_SAFE_MAX + 1;
  uint64_t *upto;
  uint32_t *first, *exits, fill[TL_GVOCAB_SAFE_MAX + 3];
  bool safe[TL_GVOCAB_SAFE_MAX + 2];
  tl_status st = tl_arena_alloc_array(a, (size_t)(TL_GVOCAB_SAFE_MAX + 1) * words, 8, 16, (void **)&upto);
  if (st == TL_OK) st = tl_arena_alloc_array(a, top + 2, 4, 16, (void **)&first);
  if (st != TL_OK) return st;
  memset(upto, 0, (size_t)(TL_GVOCAB_SAFE_MAX + 1) * words * 8);
  memset(first, 0, (size_t)(top + 2) * 4);
  safe[0] = true;
  for (uint32_t pass = 0; pass < 2; pass++) {
    for (uint32_t i = 1; i < v->n_nodes; i++) {
      uint32_t d = v->depth[i];
      if (d > top || !safe[d - 1]) { /* below a path that left the safe bytes: nothing */
        i = v->skip[i] - 1;
        continue;
      }
      safe[d] = safe_byte(v->byte[i]);
      if (!safe[d]) {
        if (pass == 0) first[d + 1]++;
        else exits[fill[d]++] = i;
        i = v->skip[i] - 1;
      } else if (pass == 1 && d <= TL_GVOCAB_SAFE_MAX) {
        for (uint32_t k = v->tok_first[i]; k < v->tok_first[i + 1]; k++)
          upto[(size_t)d * words + v->toks[k] / 64] |= 1ull << (v->toks[k] % 64);
      }
    }
    if (pass == 0) {
      for (uint32_t d = 1; d <= top; d++) first[d + 1] += first[d];
      st = tl_arena_alloc_array(a, first[top + 1] ? first[top + 1] : 1, 4, 16, (void **)&exits);
      if (st != TL_OK) return st;
      memcpy(fill, first, (size_t)(top + 2) * 4);
    }
  }
  for (uint32_t n = 1; n <= TL_GVOCAB_SAFE_MAX; n++) /* at most n bytes: n's and fewer */
    for (uint32_t w = 0; w < words; w++) upto[(size_t)n * words + w] |= upto[(size_t)(n - 1) * words + w];
  v->safe_upto = upto;
  v->exit_first = first;
  v->exits = exits;
  return TL_OK;
}

static uint32_t common_prefix(const uint8_t *a, uint32_t na, const uint8_t *b, uint32_t nb) {
  uint32_t n = 0;
  while (n < na && n < nb && a[n] == b[n]) n++;
  return n;
}

tl_status tl_gvocab_build(tl_arena *a, uint32_t n_tokens, const uint8_t *const *bytes,
                          const uint32_t *lens, const tl_gvocab **out) {
  tl_gvocab *v;
  uint32_t *ids, *tmp, *path, *open;
  uint32_t n_ids = 0, n_nodes = 1, max_depth = 0;
  uint8_t *byte, *cats, *utf8, *dec;
  uint16_t *sub_depth, *sub_chars;
  uint64_t *short_tokens;
  uint16_t *depth;
  uint32_t *skip, *parent, *tok_first;
  tl_arena_mark mark;
  tl_status st;
  if (a == NULL || out == NULL || (n_tokens > 0 && (bytes == NULL || lens == NULL)))
    return TL_ERR_INVALID_ARGUMENT;
  st = tl_arena_alloc(a, sizeof *v, 16, (void **)&v);
  if (st != TL_OK) return st;
  memset(v, 0, sizeof *v);
  st = tl_arena_alloc_array(a, n_tokens, sizeof *ids, 16, (void **)&ids);
  if (st != TL_OK) return st;
  mark = tl_arena_mark_now(a);
  st = tl_arena_alloc_array(a, n_tokens, sizeof *tmp, 16, (void **)&tmp);
  if (st != TL_OK) return st;
  for (uint32_t t = 0; t < n_tokens; t++) {
    if (bytes[t] == NULL || lens[t] == 0) continue;
    if (lens[t] > TL_GVOCAB_MAX_TOKEN) return TL_ERR_BOUNDS;
    ids[n_ids++] = t;
  }
  sort_ids(ids, tmp, n_ids, bytes, lens);
  tl_arena_rewind(a, mark);
  for (uint32_t i = 0; i < n_ids; i++) {
    uint32_t t = ids[i], len = lens[t];
    uint32_t lcp = i == 0 ? 0 : common_prefix(bytes[ids[i - 1]], lens[ids[i - 1]], bytes[t], len);
    n_nodes += len - lcp;
    if (len > max_depth) max_depth = len;
  }
  st = tl_arena_alloc(a, n_nodes, 1, (void **)&byte);
  if (st == TL_OK) st = tl_arena_alloc(a, n_nodes, 1, (void **)&cats);
  if (st == TL_OK) st = tl_arena_alloc(a, n_nodes, 1, (void **)&utf8);
  if (st == TL_OK) st = tl_arena_alloc_array(a, n_nodes, sizeof *sub_depth, 16, (void **)&sub_depth);
  if (st == TL_OK) st = tl_arena_alloc_array(a, n_nodes, sizeof *sub_chars, 16, (void **)&sub_chars);
  if (st == TL_OK)
    st = tl_arena_alloc_array(a, ((size_t)n_tokens + 63) / 64, 8, 16, (void **)&short_tokens);
  if (st == TL_OK) st = tl_arena_alloc_array(a, n_nodes, sizeof *depth, 16, (void **)&depth);
  if (st == TL_OK) st = tl_arena_alloc_array(a, n_nodes, sizeof *skip, 16, (void **)&skip);
  if (st == TL_OK) st = tl_arena_alloc_array(a, n_nodes, sizeof *parent, 16, (void **)&parent);
  if (st == TL_OK) st = tl_arena_alloc_array(a, (size_t)n_nodes + 1, sizeof *tok_first, 16, (void **)&tok_first);
  if (st != TL_OK) return st;
  mark = tl_arena_mark_now(a);
  st = tl_arena_alloc_array(a, (size_t)max_depth + 1, sizeof *path, 16, (void **)&path);
  if (st == TL_OK) st = tl_arena_alloc_array(a, (size_t)max_depth + 1, sizeof *open, 16, (void **)&open);
  if (st != TL_OK) return st;
  /* Preorder: each string adds the nodes past its common prefix with the
   * previous one; a new node at depth d closes every open node at depth
   * >= d (their subtrees end where it begins). */
  byte[0] = 0;
  depth[0] = 0;
  parent[0] = 0;
  path[0] = 0;
  memset(open, 0, ((size_t)max_depth + 1) * sizeof *open);
  memset(tok_first, 0, ((size_t)n_nodes + 1) * sizeof *tok_first);
  {
    uint32_t next = 1;
    for (uint32_t i = 0; i < n_ids; i++) {
      uint32_t t = ids[i], len = lens[t];
      uint32_t lcp = i == 0 ? 0 : common_prefix(bytes[ids[i - 1]], lens[ids[i - 1]], bytes[t], len);
      for (uint32_t d = lcp + 1; d <= len; d++) {
        for (uint32_t k = d; k <= max_depth && open[k] != 0; k++) {
          skip[open[k]] = next;
          open[k] = 0;
        }
        byte[next] = bytes[t][d - 1];
        depth[next] = (uint16_t)d;
        parent[next] = path[d - 1];
        path[d] = next;
        open[d] = next;
        next++;
      }
      tok_first[path[len] + 1]++; /* counts, summed below */
    }
    for (uint32_t k = 1; k <= max_depth; k++)
      if (open[k] != 0) skip[open[k]] = n_nodes;
    skip[0] = n_nodes;
  }
  for (uint32_t i = 1; i <= n_nodes; i++) tok_first[i] += tok_first[i - 1];
  /* subtree categories: children come after their parent in preorder */
  memset(cats, 0, n_nodes);
  memcpy(sub_depth, depth, (size_t)n_nodes * sizeof *depth);
  memset(sub_chars, 0, (size_t)n_nodes * sizeof *sub_chars);
  for (uint32_t i = n_nodes - 1; i >= 1; i--) {
    uint32_t chars = sub_chars[i] + (byte[i] < 0x80 || byte[i] >= 0xC0);
    cats[i] |= tl_gvocab_category(byte[i]);
    cats[parent[i]] |= cats[i];
    if (sub_depth[i] > sub_depth[parent[i]]) sub_depth[parent[i]] = sub_depth[i];
    if (chars > sub_chars[parent[i]]) sub_chars[parent[i]] = (uint16_t)chars;
  }
  st = tl_arena_alloc(a, n_nodes, 1, (void **)&dec); /* rewound below */
  if (st != TL_OK) return st;
  mark_utf8(utf8, dec, byte, parent, n_nodes);
  memset(short_tokens, 0, ((size_t)n_tokens + 63) / 64 * 8);
  for (uint32_t i = 0; i < n_ids; i++)
    if (lens[ids[i]] <= TL_GCANON_BYTES) short_tokens[ids[i] / 64] |= 1ull << (ids[i] % 64);
  tl_arena_rewind(a, mark);
  /* ids are in trie order already (sorted strings end at nondecreasing
   * nodes), so they are the token list. */
  v->n_tokens = n_tokens;
  v->n_nodes = n_nodes;
  v->max_depth = max_depth;
  v->byte = byte;
  v->depth = depth;
  v->skip = skip;
  v->parent = parent;
  v->cats = cats;
  v->utf8 = utf8;
  v->sub_depth = sub_depth;
  v->sub_chars = sub_chars;
  v->short_tokens = short_tokens;
  v->tok_first = tok_first;
  v->toks = ids;
  st = build_safe_tables(a, v);
  if (st != TL_OK) return st;
  *out = v;
  return TL_OK;
}

uint32_t tl_gvocab_tokens(const tl_gvocab *v) { return v->n_tokens; }
