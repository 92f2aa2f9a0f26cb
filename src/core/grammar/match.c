/* The matcher: a nondeterministic pushdown parser over bytes, made
 * deterministic lazily.
 *
 * A parse is a stack of positions (element indices): the top is the byte
 * set the next byte must match, the ones below are where to return when
 * the rule above ends. Stacks are hash-consed nodes (pos, below), so equal
 * stacks are equal ids. The parser's state after some text is the set of
 * stacks alive after it (an ambiguous grammar keeps several) plus whether
 * the text is a sentence; states are interned too, and a state's
 * transition on a byte is computed once and kept in a 256-entry row: a
 * DFA built on demand. The grammar was checked for left recursion and
 * cut of alternatives that can never end (build.c), so the closure
 * terminates and every live state can still reach a sentence: a token is
 * allowed exactly when its bytes lead to a live state.
 *
 * The mask walks the vocabulary trie in preorder from the current state,
 * one transition per trie node, skipping every subtree whose prefix is
 * dead. Masks are cached per state. When a table is full, everything is
 * flushed except the current state, which is rebuilt in the empty tables;
 * results never depend on what was cached.
 *
 * Most of a walk depends only on the top of the stacks: inside a JSON
 * string, whether a token's bytes are string content does not depend on
 * which property the string belongs to. So the walk runs first from the
 * state's top (its stacks above the highest frame they all share, that
 * frame on the ESCAPE marker): a token that stays within the top is decided there (and
 * that result is cached for every state with the same top), and only the
 * subtrees whose prefix reached the marker (the closing quote and what
 * follows it) are walked again from the real state.
 *
 * Shortcuts keep the walk off most of the trie, each exact (match_test
 * checks them against accepting each token's bytes):
 * - a subtree is allowed whole when its characters lead along one chain
 *   of states for as many characters as its paths have, or back to the
 *   state: bytes by category (vocab_internal.h), UTF-8 characters when
 *   the subtree is whole UTF-8 (string content, a bounded string);
 * - a countdown over a string's safe bytes takes the tokens of at most k
 *   safe bytes from a per-vocabulary mask and walks only where tokens
 *   leave those bytes;
 * - rows are filled per byte class (the coarsest partition the grammar's
 *   sets are unions of), on demand. */
#include <string.h>

#include "checked.h"
#include "grammar/grammar_internal.h"
#include "grammar/vocab_internal.h"

#define NONE UINT32_MAX
#define T_UNKNOWN (-1)
#define T_DEAD (-2)
#define T_FULL (-3) /* a table filled up while computing it */

/* Node ids: 0 is the empty stack, 1 the marker below a state's top. */
#define ESCAPE 1u
#define FIRST_NODE 2u
/* State flags. */
#define F_ACCEPT 1u  /* the text is a sentence */
#define F_ESCAPED 2u /* a stack of a top reached its marker */


struct tl_gmatcher {
  const tl_grammar *g;
  const tl_gvocab *v;
  uint32_t options;
  uint32_t mask_words;

  /* stack nodes; id 0 is the empty stack */
  uint32_t *node_pos, *node_below, *node_stamp;
  uint32_t n_nodes, cap_nodes;
  uint32_t *node_table; /* open addressing, 2 * cap_nodes slots */
  uint32_t node_table_mask;
  uint32_t stamp;

  /* states */
  uint32_t *state_first, *state_count;
  uint8_t *state_flags;
  uint8_t *state_uni_known;  /* the categories whose uniform() answer is known */
  int32_t *state_utf8;        /* utf8_step()'s answer, or T_UNKNOWN */
  int32_t *state_uni;         /* 8 per state: uniform()'s answers */
  uint64_t **state_mask; /* cached mask (of a top: the tokens it decides), or NULL */
  uint32_t *state_unc_first, *state_unc_count; /* a top's undecided subtrees */
  int32_t *trans;        /* 256 per state */
  uint32_t n_states, cap_states;
  uint32_t *state_table; /* open addressing, 2 * cap_states slots */
  uint32_t state_table_mask;
  uint32_t *pool; /* state node lists */
  uint32_t pool_used, pool_cap;

  uint64_t *mask_store; /* mask_slots masks of mask_words */
  uint32_t mask_slots, masks_used;
  uint32_t *unc; /* the trie nodes whose subtrees a top leaves undecided */
  uint32_t unc_used, unc_cap;

  /* scratch: the closure's work list and result; the walk's states */
  uint32_t *work_pos, *work_below, *result;
  uint32_t *saved; /* a state written out (save_state) while an accept flushes */
  uint32_t work_cap, n_result;
  uint8_t result_flags;
  uint32_t *walk;

  /* The coarsest partition of the bytes that every set of the grammar is
   * a union of: a state's transitions differ only between classes. */
  uint8_t class_of[256];
  uint8_t class_rep[256]; /* a byte of each class */
  uint8_t class_bytes[256]; /* class k's bytes: [class_first[k], class_first[k + 1]) */
  uint16_t class_first[257];
  uint32_t n_classes;
  const uint64_t (*set_classes)[4]; /* per set: bit k when it holds class k */
  /* The bytes of each byte category (vocab_internal.h), category by
   * category: cat_bytes[cat_first[k] .. cat_first[k + 1]). */
  uint8_t cat_bytes[256];
  uint16_t cat_first[9];

  uint32_t cur;
  tl_gmatcher_stats stats;
};

/* ---- sizing ---- */

#define MIN_NODES 4096u
#define MIN_STATES 256u
#define MIN_POOL (MIN_STATES * 16u)

static size_t fixed_bytes(const tl_grammar *g, const tl_gvocab *v) {
  return sizeof(tl_gmatcher) + 64 + ((size_t)v->max_depth + 2) * 4 + 256 + (size_t)g->n_sets * 32 + 16;
}

/* Bytes per unit of each table (the matcher splits its region by these). */
static size_t node_unit(void) { return 4 * 3 + 8 + 4 * 4; } /* node + 2 table slots + work/result/saved */
static size_t state_unit(void) { return 4 + 4 + 1 + 1 + 4 + 8 * 4 + sizeof(uint64_t *) + 8 + 256 * 4 + 8 + 16; }
#define MIN_UNC 65536u

size_t tl_gmatcher_min_bytes(const tl_grammar *g, const tl_gvocab *v) {
  size_t mask_bytes = ((size_t)v->n_tokens + 63) / 64 * 8;
  return fixed_bytes(g, v) + MIN_NODES * node_unit() + MIN_STATES * state_unit() +
         MIN_POOL * 4 + MIN_UNC * 4 + mask_bytes + 16 * 64; /* 16 * 64: alignment */
}

static uint32_t pow2_at_most(size_t n) {
  uint32_t p = 1;
  while ((size_t)p * 2 <= n) p *= 2;
  return p;
}

/* ---- nodes ---- */

static uint32_t hash2(uint32_t a, uint32_t b) {
  uint64_t h = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 32);
}

/* The node (pos, below), or 0 when the table is full. */
static uint32_t intern_node(tl_gmatcher *m, uint32_t pos, uint32_t below) {
  uint32_t i = hash2(pos, below) & m->node_table_mask;
  for (;;) {
    uint32_t id = m->node_table[i];
    if (id == 0) break;
    if (m->node_pos[id] == pos && m->node_below[id] == below) return id;
    i = (i + 1) & m->node_table_mask;
  }
  if (m->n_nodes >= m->cap_nodes) return 0;
  m->node_pos[m->n_nodes] = pos;
  m->node_below[m->n_nodes] = below;
  m->node_stamp[m->n_nodes] = 0;
  m->node_table[i] = m->n_nodes;
  return m->n_nodes++;
}

/* ---- closure ---- */

/* Queues (pos, below) unless this closure saw it already. */
static bool push(tl_gmatcher *m, uint32_t *n_work, uint32_t pos, uint32_t below) {
  uint32_t id = intern_node(m, pos, below);
  if (id == 0 || *n_work >= m->work_cap) return false;
  if (m->node_stamp[id] == m->stamp) return true;
  m->node_stamp[id] = m->stamp;
  m->work_pos[*n_work] = pos;
  m->work_below[*n_work] = below;
  (*n_work)++;
  return true;
}

/* Expands the queued configurations until every stack's top is a byte
 * set (those go to result) or a stack ran out (the text is a sentence). */
static bool close_over(tl_gmatcher *m, uint32_t n_work) {
  const tl_grammar *g = m->g;
  while (n_work > 0) {
    uint32_t pos, below, e;
    n_work--;
    pos = m->work_pos[n_work];
    below = m->work_below[n_work];
    e = g->elems[pos];
    if (TL_GE_KIND(e) == TL_GE_SET) {
      if (m->n_result >= m->work_cap) return false;
      m->result[m->n_result++] = intern_node(m, pos, below);
    } else if (e == TL_GE_END) {
      if (below == 0) m->result_flags |= F_ACCEPT;
      else if (below == ESCAPE) m->result_flags |= F_ESCAPED;
      else if (!push(m, &n_work, m->node_pos[below], m->node_below[below])) return false;
    } else {
      uint32_t r = TL_GE_ARG(e), ret = pos + 1, nb = below;
      /* a reference in tail position returns where its caller returns */
      if (g->elems[ret] != TL_GE_END) {
        nb = intern_node(m, ret, below);
        if (nb == 0) return false;
      }
      for (uint32_t a = g->rule_first[r]; a < g->rule_first[r + 1]; a++)
        if (g->alt_start[a] != TL_GALT_DEAD && !push(m, &n_work, g->alt_start[a], nb)) return false;
    }
  }
  return true;
}

/* ---- states ---- */

static void sort_u32(uint32_t *x, uint32_t n) {
  /* Shell sort: in place, and the lists are short. */
  static const uint32_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
  for (size_t k = 0; k < sizeof gaps / sizeof gaps[0]; k++) {
    uint32_t gap = gaps[k];
    for (uint32_t i = gap; i < n; i++) {
      uint32_t v = x[i], j = i;
      while (j >= gap && x[j - gap] > v) {
        x[j] = x[j - gap];
        j -= gap;
      }
      x[j] = v;
    }
  }
}

static uint32_t hash_list(const uint32_t *x, uint32_t n, uint8_t flags) {
  uint32_t h = 0x27D4EB2Fu + flags;
  for (uint32_t i = 0; i < n; i++) h = hash2(h, x[i]);
  return h;
}

/* The state of the closure's result: its id, T_DEAD (no stack, not a
 * sentence) or T_FULL. */
static int32_t intern_result(tl_gmatcher *m) {
  uint32_t n = 0, i;
  if (m->n_result == 0 && m->result_flags == 0) return T_DEAD;
  sort_u32(m->result, m->n_result);
  for (uint32_t k = 0; k < m->n_result; k++) /* unique */
    if (n == 0 || m->result[k] != m->result[n - 1]) m->result[n++] = m->result[k];
  m->n_result = n;
  i = hash_list(m->result, n, m->result_flags) & m->state_table_mask;
  for (;;) {
    uint32_t s = m->state_table[i];
    if (s == NONE) break;
    if (m->state_count[s] == n && m->state_flags[s] == m->result_flags &&
        memcmp(m->pool + m->state_first[s], m->result, (size_t)n * 4) == 0)
      return (int32_t)s;
    i = (i + 1) & m->state_table_mask;
  }
  if (m->n_states >= m->cap_states || m->pool_cap - m->pool_used < n) return T_FULL;
  {
    uint32_t s = m->n_states++;
    m->state_first[s] = m->pool_used;
    m->state_count[s] = n;
    m->state_flags[s] = m->result_flags;
    m->state_uni_known[s] = 0;
    m->state_utf8[s] = T_UNKNOWN;
    m->state_mask[s] = NULL;
    m->state_unc_first[s] = NONE;
    memcpy(m->pool + m->pool_used, m->result, (size_t)n * 4);
    m->pool_used += n;
    for (uint32_t c = 0; c < 256; c++) m->trans[(size_t)s * 256 + c] = T_UNKNOWN;
    m->state_table[i] = s;
    m->stats.states++;
    return (int32_t)s;
  }
}

static void begin_closure(tl_gmatcher *m) {
  if (++m->stamp == 0) { /* wrapped: forget every mark */
    for (uint32_t i = 0; i < m->n_nodes; i++) m->node_stamp[i] = 0;
    m->stamp = 1;
  }
  m->n_result = 0;
  m->result_flags = 0;
}

static int32_t start_state(tl_gmatcher *m) {
  const tl_grammar *g = m->g;
  uint32_t r = (m->options & TL_GM_LEADING_NEWLINES) ? g->root_lead : g->root, n_work = 0;
  begin_closure(m);
  for (uint32_t a = g->rule_first[r]; a < g->rule_first[r + 1]; a++)
    if (g->alt_start[a] != TL_GALT_DEAD && !push(m, &n_work, g->alt_start[a], 0)) return T_FULL;
  if (!close_over(m, n_work)) return T_FULL;
  return intern_result(m);
}

/* The state after any byte of those whose bit is set in sig (bit i: the
 * state's i-th stack matches it), or after byte c alone (sig 0). */
static int32_t successor(tl_gmatcher *m, uint32_t s, uint8_t c, uint64_t sig) {
  uint32_t n_work = 0;
  begin_closure(m);
  for (uint32_t i = 0; i < m->state_count[s]; i++) {
    uint32_t id = m->pool[m->state_first[s] + i], pos = m->node_pos[id];
    bool match = sig != 0 ? ((sig >> i) & 1u) != 0
                          : tl_gset_has(m->g->sets[TL_GE_ARG(m->g->elems[pos])], c);
    if (match && !push(m, &n_work, pos + 1, m->node_below[id])) return T_FULL;
  }
  if (!close_over(m, n_work)) return T_FULL;
  return intern_result(m);
}

/* Fills s's transitions on byte c (a state of at most 64 stacks): the
 * bytes of c's class, and of every class that the same stacks match, lead
 * to the same state, so one closure serves them all. T_FULL when a table
 * filled up. */
static int32_t fill_row(tl_gmatcher *m, uint32_t s, uint8_t c) {
  int32_t *row = &m->trans[(size_t)s * 256];
  uint32_t n = m->state_count[s], nc = m->n_classes;
  uint64_t sig[256];
  int32_t next[256];
  memset(sig, 0, (size_t)nc * sizeof sig[0]);
  for (uint32_t i = 0; i < n; i++) { /* each stack's classes, by their set bits */
    const uint64_t *in = m->set_classes[TL_GE_ARG(m->g->elems[m->node_pos[m->pool[m->state_first[s] + i]]])];
    for (uint32_t w = 0; w * 64 < nc; w++)
      for (uint64_t x = in[w]; x != 0; x &= x - 1) sig[w * 64 + (uint32_t)__builtin_ctzll(x)] |= 1ull << i;
  }
  for (uint32_t k = 0; k < nc; k++) {
    uint32_t j = 0;
    next[k] = T_UNKNOWN;
    if (sig[k] != sig[m->class_of[c]]) continue;
    if (row[m->class_rep[k]] != T_UNKNOWN) {
      next[k] = row[m->class_rep[k]];
      continue;
    }
    if (sig[k] == 0) {
      next[k] = T_DEAD;
      continue;
    }
    while (j < k && (next[j] == T_UNKNOWN || sig[j] != sig[k])) j++;
    next[k] = j < k ? next[j] : successor(m, s, m->class_rep[k], sig[k]);
    if (next[k] == T_FULL) return T_FULL;
  }
  for (uint32_t k = 0; k < nc; k++)
    if (next[k] != T_UNKNOWN && row[m->class_rep[k]] == T_UNKNOWN)
      for (uint32_t x = m->class_first[k]; x < m->class_first[k + 1]; x++) row[m->class_bytes[x]] = next[k];
  return 0;
}

/* The state after byte c from state s (computed and remembered). */
static int32_t step(tl_gmatcher *m, uint32_t s, uint8_t c) {
  int32_t *row = &m->trans[(size_t)s * 256];
  if (row[c] != T_UNKNOWN) return row[c];
  if (m->state_count[s] > 64) { /* no signatures: c's class alone */
    int32_t t = successor(m, s, c, 0);
    uint32_t k = m->class_of[c];
    if (t == T_FULL) return t;
    for (uint32_t x = m->class_first[k]; x < m->class_first[k + 1]; x++) row[m->class_bytes[x]] = t;
    return t;
  }
  return fill_row(m, s, c) == T_FULL ? T_FULL : row[c];
}

/* The byte classes (class_of, class_rep, class_bytes, n_classes): every set refines
 * the partition into the bytes it holds and those it does not. Then each
 * set as the classes it holds. */
static tl_status byte_classes(tl_gmatcher *m, tl_arena *a) {
  const tl_grammar *g = m->g;
  uint64_t (*in)[4];
  uint32_t n = 1;
  tl_status st = tl_arena_alloc_array(a, g->n_sets ? g->n_sets : 1, 32, 16, (void **)&in);
  if (st != TL_OK) return st;
  memset(m->class_of, 0, sizeof m->class_of);
  for (uint32_t set = 0; set < g->n_sets; set++) {
    uint16_t renumber[512];
    uint32_t fresh = 0;
    memset(renumber, 0xff, sizeof renumber);
    for (uint32_t b = 0; b < 256; b++) {
      uint32_t key = m->class_of[b] * 2u + tl_gset_has(g->sets[set], (uint8_t)b);
      if (renumber[key] == 0xFFFF) renumber[key] = (uint16_t)fresh++;
      m->class_of[b] = (uint8_t)renumber[key];
    }
    n = fresh;
  }
  for (uint32_t b = 256; b-- > 0;) m->class_rep[m->class_of[b]] = (uint8_t)b;
  m->n_classes = n;
  { /* the bytes by class: a counting sort */
    uint16_t at[256];
    memset(m->class_first, 0, sizeof m->class_first);
    for (uint32_t b = 0; b < 256; b++) m->class_first[m->class_of[b] + 1]++;
    for (uint32_t k = 0; k < n; k++) m->class_first[k + 1] += m->class_first[k];
    memcpy(at, m->class_first, sizeof at);
    for (uint32_t b = 0; b < 256; b++) m->class_bytes[at[m->class_of[b]]++] = (uint8_t)b;
  }
  for (uint32_t set = 0; set < g->n_sets; set++) {
    memset(in[set], 0, 32);
    for (uint32_t k = 0; k < n; k++)
      if (tl_gset_has(g->sets[set], m->class_rep[k])) in[set][k >> 6] |= 1ull << (k & 63);
  }
  m->set_classes = (const uint64_t(*)[4])in;
  return TL_OK;
}

/* cat_bytes and cat_first (a counting sort of the bytes by category). */
static void sort_categories(tl_gmatcher *m) {
  uint16_t at[8];
  memset(m->cat_first, 0, sizeof m->cat_first);
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t k = 0;
    while (!((tl_gvocab_category((uint8_t)b) >> k) & 1u)) k++;
    m->cat_first[k + 1]++;
  }
  for (uint32_t k = 0; k < 8; k++) m->cat_first[k + 1] += m->cat_first[k];
  memcpy(at, m->cat_first, sizeof at);
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t k = 0;
    while (!((tl_gvocab_category((uint8_t)b) >> k) & 1u)) k++;
    m->cat_bytes[at[k]++] = (uint8_t)b;
  }
}

/* Writes state s out at buf + *used (cap entries in all): its flags, its
 * stack count, then each stack as its length and its positions from the
 * bottom. False when it does not fit. */
static bool save_state(const tl_gmatcher *m, uint32_t s, uint32_t *buf, uint32_t cap, uint32_t *used) {
  uint32_t n = m->state_count[s], at = *used;
  if (at + 2 > cap) return false;
  buf[at++] = m->state_flags[s];
  buf[at++] = n;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t id = m->pool[m->state_first[s] + i], len = 0;
    for (uint32_t k = id; k != 0; k = m->node_below[k]) len++;
    if (at + 1 + len > cap) return false;
    buf[at] = len;
    for (uint32_t k = id, j = 0; k != 0; k = m->node_below[k], j++) buf[at + len - j] = m->node_pos[k];
    at += 1 + len;
  }
  *used = at;
  return true;
}

/* The state written at buf + *at by save_state, interned (its new id), or
 * T_FULL. */
static int32_t load_state(tl_gmatcher *m, const uint32_t *buf, uint32_t *at) {
  uint32_t flags = buf[(*at)++], n = buf[(*at)++];
  begin_closure(m);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t len = buf[*at], below = 0;
    for (uint32_t j = 1; j <= len; j++) {
      below = intern_node(m, buf[*at + j], below);
      if (below == 0) return T_FULL;
    }
    m->result[m->n_result++] = below;
    *at += 1 + len;
  }
  m->result_flags = (uint8_t)flags;
  return intern_result(m);
}

/* Empties every table (stack nodes, states, rows, masks). */
static void clear_tables(tl_gmatcher *m) {
  m->stats.flushes++;
  m->n_nodes = FIRST_NODE;
  memset(m->node_table, 0, ((size_t)m->node_table_mask + 1) * 4);
  m->n_states = 0;
  memset(m->state_table, 0xff, ((size_t)m->state_table_mask + 1) * 4);
  m->pool_used = 0;
  m->masks_used = 0;
  m->unc_used = 0;
}

/* Empties every table except state *s, rebuilt (its new id in *s). */
static tl_status flush_keeping(tl_gmatcher *m, uint32_t *s) {
  uint32_t used = 0, at = 0;
  int32_t fresh;
  if (!save_state(m, *s, m->work_pos, m->work_cap, &used)) return TL_ERR_OUT_OF_MEMORY;
  clear_tables(m);
  fresh = load_state(m, m->work_pos, &at);
  if (fresh < 0) return TL_ERR_OUT_OF_MEMORY;
  *s = (uint32_t)fresh;
  return TL_OK;
}

/* Empties every table except the current state. */
static tl_status flush(tl_gmatcher *m) {
  uint32_t keep = m->cur;
  tl_status st = flush_keeping(m, &keep);
  if (st == TL_OK) m->cur = keep;
  return st;
}

/* ---- the public face ---- */

tl_status tl_gmatcher_new(tl_arena *a, const tl_grammar *g, const tl_gvocab *v,
                          uint32_t options, tl_gmatcher **out) {
  tl_gmatcher *m;
  size_t avail, extra, mask_bytes, budget;
  uint32_t nodes, states, slots, pool, unc;
  tl_status st;
  if (a == NULL || g == NULL || v == NULL || out == NULL ||
      (options & ~(uint32_t)TL_GM_LEADING_NEWLINES) != 0)
    return TL_ERR_INVALID_ARGUMENT;
  if (tl_arena_available(a, 16) < tl_gmatcher_min_bytes(g, v)) return TL_ERR_OUT_OF_MEMORY;
  st = tl_arena_alloc(a, sizeof *m, 16, (void **)&m);
  if (st != TL_OK) return st;
  memset(m, 0, sizeof *m);
  m->g = g;
  m->v = v;
  m->options = options;
  m->mask_words = (v->n_tokens + 63) / 64;
  mask_bytes = (size_t)m->mask_words * 8;
  st = tl_arena_alloc_array(a, (size_t)v->max_depth + 2, 4, 16, (void **)&m->walk);
  if (st == TL_OK) st = byte_classes(m, a);
  if (st != TL_OK) return st;
  sort_categories(m);
  /* The minimum tables first; what the region has beyond them goes a
   * quarter each to more stack nodes, states with their transition rows,
   * state node lists and cached masks. Table sizes are powers of two. */
  avail = tl_arena_available(a, 16);
  extra = avail - (tl_gmatcher_min_bytes(g, v) - fixed_bytes(g, v));
  budget = extra / 4;
  nodes = pow2_at_most(MIN_NODES + (budget / node_unit() > 4000000u ? 4000000u : budget / node_unit()));
  states = pow2_at_most(MIN_STATES + (budget / state_unit() > 1000000u ? 1000000u : budget / state_unit()));
  pool = MIN_POOL + (uint32_t)(budget / 4 > 16000000u ? 16000000u : budget / 4);
  slots = 1 + (uint32_t)(budget / 2 / mask_bytes > 65535u ? 65535u : budget / 2 / mask_bytes);
  unc = MIN_UNC + (uint32_t)(budget / 2 / 4 > 16000000u ? 16000000u : budget / 2 / 4);
  m->cap_nodes = nodes;
  m->node_table_mask = nodes * 2 - 1;
  m->work_cap = nodes;
  m->cap_states = states;
  m->state_table_mask = states * 2 - 1;
  m->pool_cap = pool;
  m->mask_slots = slots;
  m->unc_cap = unc;
  if ((st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->node_pos)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->node_below)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->node_stamp)) != TL_OK ||
      (st = tl_arena_alloc_array(a, (size_t)m->node_table_mask + 1, 4, 16, (void **)&m->node_table)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->work_pos)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->work_below)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->result)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->saved)) != TL_OK ||
      (st = tl_arena_alloc_array(a, states, 4, 16, (void **)&m->state_first)) != TL_OK ||
      (st = tl_arena_alloc_array(a, states, 4, 16, (void **)&m->state_count)) != TL_OK ||
      (st = tl_arena_alloc(a, states, 16, (void **)&m->state_flags)) != TL_OK ||
      (st = tl_arena_alloc(a, states, 16, (void **)&m->state_uni_known)) != TL_OK ||
      (st = tl_arena_alloc_array(a, states, 4, 16, (void **)&m->state_utf8)) != TL_OK ||
      (st = tl_arena_alloc_array(a, (size_t)states * 8, 4, 16, (void **)&m->state_uni)) != TL_OK ||
      (st = tl_arena_alloc_array(a, states, 4, 16, (void **)&m->state_unc_first)) != TL_OK ||
      (st = tl_arena_alloc_array(a, states, 4, 16, (void **)&m->state_unc_count)) != TL_OK ||
      (st = tl_arena_alloc_array(a, unc, 4, 16, (void **)&m->unc)) != TL_OK ||
      (st = tl_arena_alloc_array(a, states, sizeof(uint64_t *), 16, (void **)&m->state_mask)) != TL_OK ||
      (st = tl_arena_alloc_array(a, (size_t)m->state_table_mask + 1, 4, 16, (void **)&m->state_table)) != TL_OK ||
      (st = tl_arena_alloc_array(a, (size_t)states * 256, 4, 64, (void **)&m->trans)) != TL_OK ||
      (st = tl_arena_alloc_array(a, pool, 4, 16, (void **)&m->pool)) != TL_OK ||
      (st = tl_arena_alloc_array(a, (size_t)slots * m->mask_words, 8, 64, (void **)&m->mask_store)) != TL_OK)
    return st;
  m->n_nodes = FIRST_NODE;
  m->node_pos[0] = m->node_pos[ESCAPE] = NONE;
  m->node_below[0] = m->node_below[ESCAPE] = 0;
  memset(m->node_table, 0, ((size_t)m->node_table_mask + 1) * 4);
  memset(m->state_table, 0xff, ((size_t)m->state_table_mask + 1) * 4);
  {
    int32_t s = start_state(m);
    if (s < 0) return s == T_DEAD ? TL_ERR_INVALID_ARGUMENT : TL_ERR_OUT_OF_MEMORY;
    m->cur = (uint32_t)s;
  }
  *out = m;
  return TL_OK;
}

/* Two grammars whose lowered forms are equal (the digest covers every
 * rule; the leading-newlines start is built the same way for both). */
static bool same_lowered(const tl_grammar *a, const tl_grammar *b) {
  return a->n_rules == b->n_rules && a->n_elems == b->n_elems && a->n_sets == b->n_sets &&
         a->root_lead == b->root_lead && memcmp(a->digest, b->digest, 32) == 0;
}

tl_status tl_gmatcher_restart(tl_gmatcher *m, const tl_grammar *g, uint32_t options) {
  if (m == NULL || g == NULL || (options & ~(uint32_t)TL_GM_LEADING_NEWLINES) != 0 ||
      !same_lowered(m->g, g))
    return TL_ERR_INVALID_ARGUMENT;
  m->g = g;
  m->options = options;
  tl_gmatcher_reset(m);
  return TL_OK;
}

void tl_gmatcher_reset(tl_gmatcher *m) {
  int32_t s = start_state(m);
  if (s == T_FULL && flush(m) == TL_OK) s = start_state(m);
  /* the start state fit when the matcher was made, so it fits again in
   * emptied tables */
  if (s >= 0) m->cur = (uint32_t)s;
}

/* Marks the tokens ending at trie nodes [node, end). */
static void mark_tokens(const tl_gvocab *v, uint32_t node, uint32_t end, uint64_t *allow) {
  for (uint32_t k = v->tok_first[node]; k < v->tok_first[end]; k++) {
    uint32_t id = v->toks[k];
    allow[id >> 6] |= 1ull << (id & 63);
  }
}

/* The one state that every byte of category k leads to from s, or T_DEAD
 * when they lead to different states, to none, or to a top's end (the
 * marker), or T_FULL. Computed once per state and category, stepping only
 * that category's bytes. */
static int32_t uniform(tl_gmatcher *m, uint32_t s, uint32_t k) {
  int32_t *u = &m->state_uni[(size_t)s * 8 + k];
  if (!((m->state_uni_known[s] >> k) & 1u)) {
    int32_t one = T_UNKNOWN;
    /* a state of many stacks steps byte by byte: no shortcut there */
    for (uint32_t x = m->cat_first[k]; x < m->cat_first[k + 1] && m->state_count[s] <= 64; x++) {
      int32_t t = step(m, s, m->cat_bytes[x]);
      if (t == T_FULL) return T_FULL;
      if (one == T_UNKNOWN) one = t;
      if (t != one || t < 0) {
        one = T_DEAD;
        break;
      }
    }
    *u = one >= 0 && !(m->state_flags[one] & F_ESCAPED) ? one : T_DEAD;
    m->state_uni_known[s] |= (uint8_t)(1u << k);
  }
  return *u;
}

/* The state that every byte of categories cats leads to from s (T_DEAD:
 * no one state; T_FULL: a table is full). */
static int32_t chain_next(tl_gmatcher *m, uint32_t s, uint8_t cats) {
  int32_t next = T_UNKNOWN;
  for (uint32_t k = 0; k < 8; k++) {
    int32_t u;
    if (!((cats >> k) & 1u)) continue;
    u = uniform(m, s, k);
    if (u < 0) return u;
    if (next != T_UNKNOWN && u != next) return T_DEAD;
    next = u;
  }
  return next;
}

/* The one state that every UTF-8 character of two to four bytes leads to
 * from s through live states, or T_DEAD (they lead to several, or not all
 * are taken), or T_FULL. Bounded work: past a few thousand transitions
 * the answer is T_DEAD (the walk then decides byte by byte). */
static int32_t utf8_step(tl_gmatcher *m, uint32_t s) {
  /* lead bytes, the continuation bytes after them, the range of the first */
  static const struct {
    uint8_t lo, hi, more, first_lo, first_hi;
  } leads[] = {{0xC2, 0xDF, 1, 0x80, 0xBF}, {0xE0, 0xE0, 2, 0xA0, 0xBF},
               {0xE1, 0xEC, 2, 0x80, 0xBF}, {0xED, 0xED, 2, 0x80, 0x9F},
               {0xEE, 0xEF, 2, 0x80, 0xBF}, {0xF0, 0xF0, 3, 0x90, 0xBF},
               {0xF1, 0xF3, 3, 0x80, 0xBF}, {0xF4, 0xF4, 3, 0x80, 0x8F}};
  /* states still to check: (state, continuation bytes left, range of the
   * next one); consecutive bytes that lead to one state queue it once */
  uint32_t todo_s[64], budget = 4096, n = 0;
  uint8_t todo_more[64], todo_lo[64], todo_hi[64];
  int32_t end = T_UNKNOWN;
  if (m->state_utf8[s] != T_UNKNOWN) return m->state_utf8[s];
  for (size_t g = 0; g < sizeof leads / sizeof leads[0]; g++) {
    int32_t last = T_UNKNOWN;
    for (uint32_t b = leads[g].lo; b <= leads[g].hi; b++) {
      int32_t t = step(m, s, (uint8_t)b);
      if (t == T_FULL) return T_FULL;
      if (t < 0 || (m->state_flags[t] & F_ESCAPED) || (t != last && n == 64)) goto no;
      if (t == last) continue;
      todo_s[n] = (uint32_t)t;
      todo_more[n] = leads[g].more;
      todo_lo[n] = leads[g].first_lo;
      todo_hi[n] = leads[g].first_hi;
      n++;
      last = t;
    }
  }
  while (n > 0) {
    uint32_t from = todo_s[--n], more = todo_more[n], lo = todo_lo[n], hi = todo_hi[n];
    int32_t last = T_UNKNOWN;
    for (uint32_t c = lo; c <= hi; c++) {
      int32_t t = step(m, from, (uint8_t)c);
      if (t == T_FULL) return T_FULL;
      if (budget-- == 0 || t < 0 || (m->state_flags[t] & F_ESCAPED)) goto no;
      if (more == 1) { /* a whole character: the same end as every other */
        if (end != T_UNKNOWN && t != end) goto no;
        end = t;
        continue;
      }
      if (t == last) continue;
      if (n == 64) goto no;
      todo_s[n] = (uint32_t)t;
      todo_more[n] = (uint8_t)(more - 1);
      todo_lo[n] = 0x80;
      todo_hi[n] = 0xBF;
      n++;
      last = t;
    }
  }
  m->state_utf8[s] = end;
  return end;
no:
  m->state_utf8[s] = T_DEAD;
  return T_DEAD;
}

/* Whether every text of at most len characters in categories cats (whole
 * UTF-8 ones too when utf8) is allowed from s, each a prefix of such a
 * text included: its characters all lead to one state, and from there to
 * one state, for len characters (a countdown such as a string of at most
 * 40 characters), or back to the same state (a loop such as a string's
 * content). What decides a trie subtree at once: its categories, its
 * paths' characters (vocab_internal.h), whether it is whole UTF-8. */
#define UTF8_CATS ((1u << 6) | (1u << 7))
static bool chars_allowed(tl_gmatcher *m, uint32_t s, bool utf8_ok, uint8_t cats, uint32_t len) {
  const uint8_t ascii = (uint8_t)(cats & ~UTF8_CATS);
  const bool utf8 = (cats & UTF8_CATS) != 0;
  if (utf8 && !utf8_ok) return false;
  for (uint32_t at = s; len > 0; len--) {
    int32_t next = ascii ? chain_next(m, at, ascii) : T_UNKNOWN;
    if (utf8) {
      int32_t u = utf8_step(m, at);
      if (u < 0 || (ascii && u != next)) return false;
      next = u;
    }
    if (next < 0) return false;
    if ((uint32_t)next == at) return true;
    at = (uint32_t)next;
  }
  return true;
}

/* Walks trie nodes [lo, hi) in preorder (one subtree's descendants, or
 * the whole trie), the state of lo's parent in walk[depth(lo) - 1]: every
 * node whose path leads to a live state marks its tokens. top: the walk
 * is from a top; a node whose state reached the marker goes to the
 * undecided list instead (its subtree is skipped). T_FULL when a table
 * filled up on the way. */
static int32_t walk_range(tl_gmatcher *m, uint32_t lo, uint32_t hi, uint64_t *allow, bool top) {
  /* The tables in locals: the loop is the mask's hot path, and stores
   * through walk could otherwise alias every one of them. */
  const uint8_t *const byte = m->v->byte, *const cats = m->v->cats, *const utf8 = m->v->utf8;
  const uint16_t *const depth = m->v->depth, *const sub_chars = m->v->sub_chars;
  const uint32_t *const skip = m->v->skip, *const tok_first = m->v->tok_first;
  const uint32_t *const toks = m->v->toks;
  const int32_t *const trans = m->trans;
  uint32_t *const walk = m->walk;
  uint32_t i = lo;
  uint64_t visited = 0;
  while (i < hi) {
    uint32_t d = depth[i], from = walk[d - 1];
    int32_t t = trans[(size_t)from * 256 + byte[i]];
    visited++;
    /* a character's lead byte: its subtree decided from before it (a
     * string's content takes a script's thousands of tokens at once) */
    if (byte[i] >= 0xC0 && (utf8[i] & TL_GVOCAB_UTF8_FROM) && t != T_DEAD &&
        chars_allowed(m, from, true, cats[i], sub_chars[i] + 1u)) {
      mark_tokens(m->v, i, skip[i], allow);
      i = skip[i];
      continue;
    }
    if (t < 0) {
      if (t == T_UNKNOWN) t = step(m, from, byte[i]);
      if (t == T_FULL) return T_FULL;
      if (t == T_DEAD) {
        i = skip[i];
        continue;
      }
    }
    if (top && (m->state_flags[t] & F_ESCAPED)) {
      if (m->unc_used >= m->unc_cap) return T_FULL;
      m->unc[m->unc_used++] = i;
      i = skip[i];
      continue;
    }
    if (chars_allowed(m, (uint32_t)t, (utf8[i] & TL_GVOCAB_UTF8_BELOW) != 0, cats[i], sub_chars[i])) {
      mark_tokens(m->v, i, skip[i], allow);
      i = skip[i];
      continue;
    }
    walk[d] = (uint32_t)t;
    for (uint32_t k = tok_first[i], end = tok_first[i + 1]; k < end; k++)
      allow[toks[k] >> 6] |= 1ull << (toks[k] & 63);
    i++;
  }
  m->stats.trie_nodes_visited += visited;
  return 0;
}

/* The whole trie from state s (walk_range's top as there). Where the safe
 * bytes (vocab_internal.h) lead from s along a countdown of k <= SAFE_MAX
 * states whose end takes none of them (a string of at most k more
 * characters), the tokens of at most k safe bytes are allowed at once and
 * only the subtrees where tokens leave the safe bytes are walked. */
static int32_t walk_all(tl_gmatcher *m, uint32_t s, uint64_t *allow, bool top) {
  const tl_gvocab *v = m->v;
  uint32_t chain[TL_GVOCAB_SAFE_MAX + 1], k = 0;
  chain[0] = s;
  for (;;) {
    int32_t t = chain_next(m, chain[k], TL_GVOCAB_SAFE_CATS);
    if (t == T_FULL) return T_FULL;
    if (t < 0) break;
    if ((uint32_t)t == chain[k] || k == TL_GVOCAB_SAFE_MAX) { /* a loop, or too long */
      k = 0;
      break;
    }
    chain[++k] = (uint32_t)t;
  }
  for (uint32_t b = 0x20; b < 0x7F && k > 0; b++) { /* the end takes no safe byte */
    int32_t t = (b == '"' || b == '\\') ? T_DEAD : step(m, chain[k], (uint8_t)b);
    if (t == T_FULL) return T_FULL;
    if (t != T_DEAD) k = 0;
  }
  m->walk[0] = s;
  if (k == 0) return walk_range(m, 1, v->n_nodes, allow, top);
  memcpy(allow, v->safe_upto + (size_t)k * m->mask_words, (size_t)m->mask_words * 8);
  for (uint32_t d = 1; d <= k + 1; d++)
    for (uint32_t x = v->exit_first[d]; x < v->exit_first[d + 1]; x++) {
      uint32_t i = v->exits[x];
      m->walk[d - 1] = chain[d - 1];
      if (walk_range(m, i, v->skip[i], allow, top) < 0) return T_FULL;
    }
  return 0;
}

static uint32_t stack_depth(const tl_gmatcher *m, uint32_t id) {
  uint32_t d = 0;
  for (; id != 0; id = m->node_below[id]) d++;
  return d;
}

/* The highest frame two stacks share (0: none). */
static uint32_t common_frame(const tl_gmatcher *m, uint32_t x, uint32_t y) {
  uint32_t dx = stack_depth(m, x), dy = stack_depth(m, y);
  for (; dx > dy; dx--) x = m->node_below[x];
  for (; dy > dx; dy--) y = m->node_below[y];
  while (x != y) {
    x = m->node_below[x];
    y = m->node_below[y];
  }
  return x;
}

/* The top of state s: its stacks above the highest frame they all share,
 * that frame included, over the marker. Returns s itself when there is
 * nothing below that frame to cut. */
static int32_t top_of(tl_gmatcher *m, uint32_t s) {
  uint32_t n = m->state_count[s], first = m->state_first[s], shared;
  if (n == 0) return (int32_t)s;
  shared = m->pool[first];
  for (uint32_t i = 1; i < n && shared != 0; i++) shared = common_frame(m, shared, m->pool[first + i]);
  if (shared == 0 || m->node_below[shared] == 0) return (int32_t)s;
  begin_closure(m);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t id = m->pool[first + i], len = 0, below = ESCAPE;
    /* the frames from the top down to the shared one, rebuilt bottom up
     * (the work array holds them meanwhile) */
    for (uint32_t k = id;; k = m->node_below[k]) {
      m->work_pos[len++] = m->node_pos[k];
      if (k == shared) break;
    }
    while (len > 0) {
      below = intern_node(m, m->work_pos[--len], below);
      if (below == 0) return T_FULL;
    }
    m->result[m->n_result++] = below;
  }
  m->result_flags = m->state_flags[s];
  return intern_result(m);
}

/* The state after the bytes on the path to trie node u from state s. */
static int32_t along_path(tl_gmatcher *m, uint32_t s, uint32_t u) {
  const tl_gvocab *v = m->v;
  uint32_t d = v->depth[u];
  /* the path's nodes by depth (climbing from u), in walk[] for the moment:
   * the walk below u only reads the entries from u's depth on */
  for (uint32_t k = u; d > 0; k = v->parent[k], d--) m->walk[d] = k;
  for (uint32_t j = 1; j <= v->depth[u]; j++) {
    int32_t t = step(m, s, v->byte[m->walk[j]]);
    if (t < 0) return t;
    s = (uint32_t)t;
  }
  return (int32_t)s;
}

/* Empties the mask cache. Undecided lists stay where they are: a top
 * whose mask is forgotten is recomputed whole, appending a fresh list. */
static void forget_masks(tl_gmatcher *m) {
  for (uint32_t s = 0; s < m->n_states; s++) m->state_mask[s] = NULL;
  m->masks_used = 0;
}

/* The mask of state s into allow, not cached (its top's walk is). */
static int32_t mask_of(tl_gmatcher *m, uint32_t s, uint64_t *allow) {
  const tl_gvocab *v = m->v;
  int32_t top = top_of(m, s);
  if (top < 0) return top;
  if ((uint32_t)top == s) {
    memset(allow, 0, (size_t)m->mask_words * 8);
    return walk_all(m, s, allow, false);
  }
  if (m->state_unc_first[top] == NONE || m->state_mask[top] == NULL) {
    uint32_t first = m->unc_used;
    int32_t r;
    memset(allow, 0, (size_t)m->mask_words * 8);
    r = walk_all(m, (uint32_t)top, allow, true);
    if (r < 0) return r;
    if (m->masks_used == m->mask_slots) forget_masks(m);
    m->state_mask[top] = m->mask_store + (size_t)m->masks_used++ * m->mask_words;
    memcpy(m->state_mask[top], allow, (size_t)m->mask_words * 8);
    m->state_unc_first[top] = first;
    m->state_unc_count[top] = m->unc_used - first;
  } else {
    memcpy(allow, m->state_mask[top], (size_t)m->mask_words * 8);
  }
  for (uint32_t k = 0; k < m->state_unc_count[top]; k++) {
    uint32_t u = m->unc[m->state_unc_first[top] + k];
    int32_t t = along_path(m, s, u);
    if (t == T_FULL) return T_FULL;
    if (t == T_DEAD) continue;
    mark_tokens(v, u, u + 1, allow);
    m->walk[v->depth[u]] = (uint32_t)t;
    if (walk_range(m, u + 1, v->skip[u], allow, false) < 0) return T_FULL;
  }
  return 0;
}

/* State s with every frame in a long countdown rule moved to the same
 * place in its chain's shorter copy (grammar_internal.h, TL_GCANON_BYTES):
 * the two allow the same short tokens, and the image is shared by every
 * count past the bound. Returns s when nothing moves. */
static int32_t canon_of(tl_gmatcher *m, uint32_t s) {
  const uint32_t *canon = m->g->canon;
  uint32_t n = m->state_count[s], first = m->state_first[s];
  bool moved = false;
  if (canon == NULL) return (int32_t)s;
  for (uint32_t i = 0; i < n && !moved; i++)
    for (uint32_t k = m->pool[first + i]; k != 0 && !moved; k = m->node_below[k])
      moved = canon[m->node_pos[k]] != m->node_pos[k];
  if (!moved) return (int32_t)s;
  begin_closure(m);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t len = 0, below = 0;
    for (uint32_t k = m->pool[first + i]; k != 0; k = m->node_below[k]) {
      if (len >= m->work_cap) return T_FULL;
      m->work_pos[len++] = canon[m->node_pos[k]];
    }
    while (len > 0) {
      below = intern_node(m, m->work_pos[--len], below);
      if (below == 0) return T_FULL;
    }
    m->result[m->n_result++] = below;
  }
  m->result_flags = m->state_flags[s];
  return intern_result(m);
}

/* The tokens of more than TL_GCANON_BYTES bytes that state s allows: a
 * walk of the subtrees that hold such tokens. */
static int32_t walk_long_tokens(tl_gmatcher *m, uint32_t s, uint64_t *allow) {
  const tl_gvocab *v = m->v;
  uint32_t i = 1;
  m->walk[0] = s;
  while (i < v->n_nodes) {
    uint32_t from;
    int32_t t;
    if (v->sub_depth[i] <= TL_GCANON_BYTES) { /* nothing long below */
      i = v->skip[i];
      continue;
    }
    from = m->walk[v->depth[i] - 1];
    t = step(m, from, v->byte[i]);
    if (t == T_FULL) return T_FULL;
    if (t == T_DEAD) {
      i = v->skip[i];
      continue;
    }
    m->walk[v->depth[i]] = (uint32_t)t;
    if (v->depth[i] > TL_GCANON_BYTES) mark_tokens(v, i, i + 1, allow);
    i++;
  }
  return 0;
}

/* The mask of the current state into allow (not cached). A state inside a
 * long bounded repetition takes its short tokens from its canonical image
 * (whose mask is cached like any state's) and walks only for long ones. */
static int32_t compute_mask(tl_gmatcher *m, uint64_t *allow) {
  uint32_t s = m->cur;
  int32_t image = canon_of(m, s);
  const uint64_t *shorts = m->v->short_tokens;
  if (image < 0) return image;
  if ((uint32_t)image == s) return mask_of(m, s, allow);
  if (m->state_mask[image] == NULL) {
    int32_t r = mask_of(m, (uint32_t)image, allow);
    if (r < 0) return r;
    if (m->masks_used == m->mask_slots) forget_masks(m);
    m->state_mask[image] = m->mask_store + (size_t)m->masks_used++ * m->mask_words;
    memcpy(m->state_mask[image], allow, (size_t)m->mask_words * 8);
  }
  for (uint32_t w = 0; w < m->mask_words; w++) allow[w] = m->state_mask[image][w] & shorts[w];
  return walk_long_tokens(m, s, allow);
}

tl_status tl_gmatcher_mask(tl_gmatcher *m, uint64_t *allow, bool *eos_allowed) {
  if (m == NULL || allow == NULL || eos_allowed == NULL) return TL_ERR_INVALID_ARGUMENT;
  m->stats.masks++;
  if (m->state_mask[m->cur] != NULL) {
    m->stats.mask_cache_hits++;
    memcpy(allow, m->state_mask[m->cur], (size_t)m->mask_words * 8);
  } else {
    if (compute_mask(m, allow) == T_FULL) {
      tl_status st = flush(m);
      if (st != TL_OK) return st;
      if (compute_mask(m, allow) == T_FULL) return TL_ERR_OUT_OF_MEMORY;
    }
    if (m->masks_used == m->mask_slots) forget_masks(m);
    m->state_mask[m->cur] = m->mask_store + (size_t)m->masks_used++ * m->mask_words;
    memcpy(m->state_mask[m->cur], allow, (size_t)m->mask_words * 8);
  }
  *eos_allowed = (m->state_flags[m->cur] & F_ACCEPT) != 0;
  return TL_OK;
}

/* The state after bytes from the current one, or T_DEAD / T_FULL. */
static int32_t advance(tl_gmatcher *m, const uint8_t *bytes, size_t n) {
  uint32_t s = m->cur;
  for (size_t i = 0; i < n; i++) {
    int32_t t = step(m, s, bytes[i]);
    if (t < 0) return t;
    s = (uint32_t)t;
  }
  return (int32_t)s;
}

/* advance() for a text whose states do not all fit in the tables at once:
 * byte by byte, flushing all but where the text has got to, the current
 * state written out meanwhile (m->saved) and rebuilt when the text is
 * refused or a state does not fit, so it stays where it was (its id may
 * change). Needs no more room than one state and its step. */
static int32_t advance_flushing(tl_gmatcher *m, const uint8_t *bytes, size_t n) {
  uint32_t used = 0, at = 0, s = m->cur;
  int32_t t = 0, back;
  if (!save_state(m, m->cur, m->saved, m->work_cap, &used)) return T_FULL;
  for (size_t i = 0; i < n && t >= 0; i++) {
    t = step(m, s, bytes[i]);
    if (t == T_FULL) t = flush_keeping(m, &s) == TL_OK ? step(m, s, bytes[i]) : T_FULL;
    if (t >= 0) s = (uint32_t)t;
  }
  if (t >= 0) return (int32_t)s;
  clear_tables(m); /* the current state back: it fit before */
  back = load_state(m, m->saved, &at);
  if (back >= 0) m->cur = (uint32_t)back;
  return t;
}

tl_status tl_gmatcher_accept(tl_gmatcher *m, const uint8_t *bytes, size_t n) {
  int32_t s;
  if (m == NULL || (bytes == NULL && n > 0)) return TL_ERR_INVALID_ARGUMENT;
  s = advance(m, bytes, n);
  if (s == T_FULL) s = advance_flushing(m, bytes, n);
  if (s == T_FULL) return TL_ERR_OUT_OF_MEMORY;
  if (s == T_DEAD) return TL_ERR_INVALID_ARGUMENT;
  m->cur = (uint32_t)s;
  return TL_OK;
}

bool tl_gmatcher_accepting(const tl_gmatcher *m) { return (m->state_flags[m->cur] & F_ACCEPT) != 0; }
bool tl_gmatcher_finished(const tl_gmatcher *m) { return m->state_count[m->cur] == 0; }

void tl_gmatcher_get_stats(const tl_gmatcher *m, tl_gmatcher_stats *out) { *out = m->stats; }
