/* Added tokens, as HF tokenizers' AddedVocabulary finds them (0.22.2,
 * added_vocabulary.rs find_matches):
 *
 *   - an Aho-Corasick automaton with MatchKind::LeftmostLongest over one
 *     matching set yields non-overlapping matches: the leftmost start, the
 *     longest pattern there, the search resuming at the match's end. Here a
 *     byte trie gives the same matches: from each position in turn, the
 *     longest pattern that starts there. Time O(text * longest pattern);
 *     for Qwen3 every pattern starts with '<', so most positions cost one
 *     table lookup.
 *   - single_word: a match is discarded (and the search still resumes after
 *     it) when the character before it or the one after it is a word
 *     character (Rust regex \w).
 *   - lstrip: the split starts at the beginning of the whitespace (\s,
 *     White_Space) run before the match, but not before the previous
 *     split's end. rstrip: the split takes the whitespace run after it.
 *   - the text between splits becomes a gap split; empty gaps do not exist.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "checked.h"
#include "tok_internal.h"
#include "unicode.h"

/* ---- trie construction -------------------------------------------------- */

static int pattern_cmp(const tl_tok_added_info *info, uint32_t a, uint32_t b) {
  const tl_tok_added_info *x = &info[a], *y = &info[b];
  size_t n = x->pattern_len < y->pattern_len ? x->pattern_len : y->pattern_len;
  int c = memcmp(x->pattern, y->pattern, n);
  if (c != 0) return c;
  return x->pattern_len < y->pattern_len ? -1 : x->pattern_len > y->pattern_len;
}

static void sift(const tl_tok_added_info *info, uint32_t *v, size_t i,
                 size_t n) {
  for (;;) {
    size_t c = 2 * i + 1;
    uint32_t tmp;
    if (c >= n) return;
    if (c + 1 < n && pattern_cmp(info, v[c + 1], v[c]) > 0) c++;
    if (pattern_cmp(info, v[c], v[i]) <= 0) return;
    tmp = v[c];
    v[c] = v[i];
    v[i] = tmp;
    i = c;
  }
}

/* Heapsort: no recursion, no allocation. */
static void sort_patterns(const tl_tok_added_info *info, uint32_t *v,
                          size_t n) {
  for (size_t i = n / 2; i-- > 0;) sift(info, v, i, n);
  for (size_t end = n; end-- > 1;) {
    uint32_t tmp = v[0];
    v[0] = v[end];
    v[end] = tmp;
    sift(info, v, 0, end);
  }
}

tl_status tl_tok_trie_build(const tl_tok_added_info *info, const uint32_t *idx,
                            uint32_t n, tl_arena *arena, tl_tok_trie *out) {
  size_t cap = 1, head = 0, tail = 0, n_edges = 0;
  uint32_t *first, *term, *edge_child, *sorted, *q;
  uint16_t *count;
  uint8_t *edge_byte;
  tl_arena_mark tmp;
  void *p[5];
  tl_status st = TL_OK;
  memset(out, 0, sizeof *out);
  for (uint32_t i = 0; i < n; i++)
    if (tl_add_size(cap, info[idx[i]].pattern_len, &cap) != TL_OK ||
        cap >= UINT32_MAX)
      return TL_ERR_INVALID_MODEL;
  /* the trie: at most one node per pattern byte, plus the root */
  st = tl_arena_alloc_array(arena, cap, 4, 4, &p[0]);
  if (st == TL_OK) st = tl_arena_alloc_array(arena, cap, 2, 2, &p[1]);
  if (st == TL_OK) st = tl_arena_alloc_array(arena, cap, 4, 4, &p[2]);
  if (st == TL_OK) st = tl_arena_alloc_array(arena, cap, 1, 1, &p[3]);
  if (st == TL_OK) st = tl_arena_alloc_array(arena, cap, 4, 4, &p[4]);
  if (st != TL_OK) return st;
  first = p[0];
  count = p[1];
  term = p[2];
  edge_byte = p[3];
  edge_child = p[4];
  /* transient: the sorted members and a BFS queue of (node, lo, hi, depth) */
  tmp = tl_arena_mark_now(arena);
  st = tl_arena_alloc_array(arena, n, 4, 4, &p[0]);
  if (st == TL_OK) st = tl_arena_alloc_array(arena, cap, 16, 4, &p[1]);
  if (st != TL_OK) return st;
  sorted = p[0];
  q = p[1];
  memcpy(sorted, idx, (size_t)n * 4);
  sort_patterns(info, sorted, n);
  for (uint32_t i = 1; i < n; i++)
    if (pattern_cmp(info, sorted[i - 1], sorted[i]) == 0) {
      tl_arena_rewind(arena, tmp);
      return TL_ERR_INVALID_MODEL; /* two tokens, one pattern */
    }
  out->n_nodes = 1;
  q[0] = 0;
  q[1] = 0;
  q[2] = n;
  q[3] = 0;
  tail = 1;
  while (head < tail) {
    uint32_t node = q[4 * head], lo = q[4 * head + 1], hi = q[4 * head + 2],
             depth = q[4 * head + 3];
    head++;
    term[node] = 0;
    /* sorted: a pattern that ends here comes first (a prefix of the rest) */
    if (lo < hi && info[sorted[lo]].pattern_len == depth) {
      term[node] = sorted[lo] + 1;
      lo++;
    }
    first[node] = (uint32_t)n_edges;
    count[node] = 0;
    while (lo < hi) {
      uint8_t b = info[sorted[lo]].pattern[depth];
      uint32_t run = lo + 1, child = out->n_nodes++;
      while (run < hi && info[sorted[run]].pattern[depth] == b) run++;
      edge_byte[n_edges] = b;
      edge_child[n_edges] = child;
      n_edges++;
      count[node]++;
      q[4 * tail] = child;
      q[4 * tail + 1] = lo;
      q[4 * tail + 2] = run;
      q[4 * tail + 3] = depth + 1;
      tail++;
      lo = run;
    }
  }
  tl_arena_rewind(arena, tmp);
  for (uint32_t e = 0; e < count[0]; e++)
    out->root_child[edge_byte[first[0] + e]] = edge_child[first[0] + e];
  out->first = first;
  out->count = count;
  out->term = term;
  out->edge_byte = edge_byte;
  out->edge_child = edge_child;
  return TL_OK;
}

/* ---- matching ----------------------------------------------------------- */

static uint32_t trie_child(const tl_tok_trie *tr, uint32_t node, uint8_t b) {
  size_t lo = tr->first[node], hi = lo + tr->count[node];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (tr->edge_byte[mid] < b)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < (size_t)tr->first[node] + tr->count[node] &&
                 tr->edge_byte[lo] == b
             ? tr->edge_child[lo]
             : 0;
}

/* The leftmost-longest match in s[from..len): [*ms, *me), added index
 * *term - 1. */
static bool find_next(const tl_tok_trie *tr, const uint8_t *s, size_t len,
                      size_t from, size_t *ms, size_t *me, uint32_t *term) {
  if (tr->n_nodes <= 1) return false;
  for (size_t i = from; i < len; i++) {
    uint32_t node = tr->root_child[s[i]], best_term = 0;
    size_t j = i + 1, best = 0;
    if (node == 0) continue;
    for (;;) {
      if (tr->term[node] != 0) {
        best = j;
        best_term = tr->term[node];
      }
      if (j == len) break;
      node = trie_child(tr, node, s[j]);
      if (node == 0) break;
      j++;
    }
    if (best != 0) {
      *ms = i;
      *me = best;
      *term = best_term;
      return true;
    }
  }
  return false;
}

static uint32_t cp_at(const uint8_t *s, size_t i, size_t *n) {
  uint32_t b = s[i];
  if (b < 0x80u) {
    *n = 1;
    return b;
  }
  if (b < 0xE0u) {
    *n = 2;
    return (b & 0x1Fu) << 6 | (s[i + 1] & 0x3Fu);
  }
  if (b < 0xF0u) {
    *n = 3;
    return (b & 0x0Fu) << 12 | (uint32_t)(s[i + 1] & 0x3Fu) << 6 |
           (s[i + 2] & 0x3Fu);
  }
  *n = 4;
  return (b & 0x07u) << 18 | (uint32_t)(s[i + 1] & 0x3Fu) << 12 |
         (uint32_t)(s[i + 2] & 0x3Fu) << 6 | (s[i + 3] & 0x3Fu);
}

/* The start of the character that ends at s[end] (end > 0). */
static size_t cp_start_before(const uint8_t *s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (s[i] & 0xC0u) == 0x80u) i--;
  return i;
}

/* Rust regex \w (Unicode): Alphabetic, M, Nd, Pc, Join_Control. The
 * Unicode layer has no Alphabetic or M tables; this uses \p{L} and \p{N}
 * (Alphabetic minus its marks and letter-like symbols, plus No), non-zero
 * combining classes for marks, and the Pc and Join_Control lists. */
static bool is_word_char(uint32_t cp) {
  switch (cp) {
    case 0x005F:
    case 0x203F:
    case 0x2040:
    case 0x2054:
    case 0xFE33:
    case 0xFE34:
    case 0xFE4D:
    case 0xFE4E:
    case 0xFE4F:
    case 0xFF3F:
    case 0x200C:
    case 0x200D:
      return true;
    default:
      break;
  }
  return (tl_uni_class(cp) & (TL_UNI_LETTER | TL_UNI_NUMBER)) != 0 ||
         tl_uni_ccc(cp) != 0;
}

void tl_tok_added_iter_init(tl_tok_added_iter *it,
                            const struct tl_tokenizer *tok,
                            const tl_tok_trie *trie, const uint8_t *s,
                            size_t len) {
  memset(it, 0, sizeof *it);
  it->tok = tok;
  it->trie = trie;
  it->s = s;
  it->len = len;
}

bool tl_tok_added_iter_next(tl_tok_added_iter *it, tl_tok_split *out) {
  const uint8_t *s = it->s;
  size_t len = it->len;
  if (it->have_pending) {
    *out = it->pending;
    it->have_pending = false;
    return true;
  }
  while (!it->done) {
    size_t ms, me, start, stop, n;
    uint32_t term;
    const tl_tok_added_info *a;
    tl_tok_split tok;
    if (!find_next(it->trie, s, len, it->search, &ms, &me, &term)) {
      it->done = true;
      if (it->start_offset >= len) return false;
      out->is_token = false;
      out->id = 0;
      out->start = it->start_offset;
      out->end = len;
      return true;
    }
    it->search = me;
    a = &it->tok->added[term - 1];
    if (a->flags & TL_TOK_ADDED_SINGLE_WORD) {
      /* \w$ on the text before, ^\w on the text after */
      if (ms > 0 && is_word_char(cp_at(s, cp_start_before(s, ms), &n)))
        continue;
      if (me < len && is_word_char(cp_at(s, me, &n))) continue;
    }
    start = ms;
    stop = me;
    if (a->flags & TL_TOK_ADDED_LSTRIP) {
      /* \s*$ before the match, not before the previous split's end */
      while (start > it->start_offset) {
        size_t at = cp_start_before(s, start);
        if (!tl_uni_is_space(cp_at(s, at, &n))) break;
        start = at;
      }
    }
    if (a->flags & TL_TOK_ADDED_RSTRIP) {
      /* ^\s* after the match */
      while (stop < len && tl_uni_is_space(cp_at(s, stop, &n))) stop += n;
    }
    tok.is_token = true;
    tok.id = a->id;
    tok.start = start;
    tok.end = stop;
    if (it->start_offset < start) {
      out->is_token = false;
      out->id = 0;
      out->start = it->start_offset;
      out->end = start;
      it->pending = tok;
      it->have_pending = true;
    } else {
      *out = tok;
    }
    it->start_offset = stop;
    return true;
  }
  return false;
}
