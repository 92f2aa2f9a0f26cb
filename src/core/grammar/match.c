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
 * results never depend on what was cached. */
#include <string.h>

#include "checked.h"
#include "grammar/grammar_internal.h"
#include "grammar/vocab_internal.h"

#define NONE UINT32_MAX
#define T_UNKNOWN (-1)
#define T_DEAD (-2)
#define T_FULL (-3) /* a table filled up while computing it */

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
  uint8_t *state_accept;
  uint64_t **state_mask; /* cached mask, or NULL */
  int32_t *trans;        /* 256 per state */
  uint32_t n_states, cap_states;
  uint32_t *state_table; /* open addressing, 2 * cap_states slots */
  uint32_t state_table_mask;
  uint32_t *pool; /* state node lists */
  uint32_t pool_used, pool_cap;

  uint64_t *mask_store; /* mask_slots masks of mask_words */
  uint32_t mask_slots, masks_used;

  /* scratch: the closure's work list and result; the walk's states */
  uint32_t *work_pos, *work_below, *result;
  uint32_t work_cap, n_result;
  bool result_accept;
  uint32_t *walk;

  uint32_t cur;
  tl_gmatcher_stats stats;
};

/* ---- sizing ---- */

#define MIN_NODES 4096u
#define MIN_STATES 256u
#define MIN_POOL (MIN_STATES * 16u)

static size_t fixed_bytes(const tl_gvocab *v) {
  return sizeof(tl_gmatcher) + 64 + ((size_t)v->max_depth + 2) * 4 + 256;
}

/* Bytes per unit of each table (the matcher splits its region by these). */
static size_t node_unit(void) { return 4 * 3 + 8 + 4 * 3; } /* node + 2 table slots + work/result */
static size_t state_unit(void) { return 4 + 4 + 1 + sizeof(uint64_t *) + 256 * 4 + 8 + 16; }

size_t tl_gmatcher_min_bytes(const tl_grammar *g, const tl_gvocab *v) {
  size_t mask_bytes = ((size_t)v->n_tokens + 63) / 64 * 8;
  (void)g;
  return fixed_bytes(v) + MIN_NODES * node_unit() + MIN_STATES * state_unit() +
         MIN_POOL * 4 + mask_bytes + 16 * 64; /* 16 * 64: alignment */
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
      if (below == 0) m->result_accept = true;
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

static uint32_t hash_list(const uint32_t *x, uint32_t n, bool accept) {
  uint32_t h = accept ? 0x85EBCA6Bu : 0x27D4EB2Fu;
  for (uint32_t i = 0; i < n; i++) h = hash2(h, x[i]);
  return h;
}

/* The state of the closure's result: its id, T_DEAD (no stack, not a
 * sentence) or T_FULL. */
static int32_t intern_result(tl_gmatcher *m) {
  uint32_t n = m->n_result, i;
  if (n == 0 && !m->result_accept) return T_DEAD;
  sort_u32(m->result, n);
  i = hash_list(m->result, n, m->result_accept) & m->state_table_mask;
  for (;;) {
    uint32_t s = m->state_table[i];
    if (s == NONE) break;
    if (m->state_count[s] == n && m->state_accept[s] == m->result_accept &&
        memcmp(m->pool + m->state_first[s], m->result, (size_t)n * 4) == 0)
      return (int32_t)s;
    i = (i + 1) & m->state_table_mask;
  }
  if (m->n_states >= m->cap_states || m->pool_cap - m->pool_used < n) return T_FULL;
  {
    uint32_t s = m->n_states++;
    m->state_first[s] = m->pool_used;
    m->state_count[s] = n;
    m->state_accept[s] = m->result_accept;
    m->state_mask[s] = NULL;
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
  m->result_accept = false;
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

/* The state after byte c from state s (computed and remembered). */
static int32_t step(tl_gmatcher *m, uint32_t s, uint8_t c) {
  int32_t *t = &m->trans[(size_t)s * 256 + c];
  uint32_t n_work = 0;
  if (*t != T_UNKNOWN) return *t;
  begin_closure(m);
  for (uint32_t i = 0; i < m->state_count[s]; i++) {
    uint32_t id = m->pool[m->state_first[s] + i], pos = m->node_pos[id];
    if (tl_gset_has(m->g->sets[TL_GE_ARG(m->g->elems[pos])], c) &&
        !push(m, &n_work, pos + 1, m->node_below[id]))
      return T_FULL;
  }
  if (!close_over(m, n_work)) return T_FULL;
  {
    int32_t next = intern_result(m);
    if (next != T_FULL) *t = next;
    return next;
  }
}

/* Empties every table except the current state, rebuilt from its stacks
 * (written out bottom to top in the work arrays first). */
static tl_status flush(tl_gmatcher *m) {
  uint32_t s = m->cur, n = m->state_count[s], used = 0;
  bool accept = m->state_accept[s];
  m->stats.flushes++;
  /* each stack as its length, then its positions from the bottom */
  for (uint32_t i = 0; i < n; i++) {
    uint32_t id = m->pool[m->state_first[s] + i], len = 0;
    for (uint32_t k = id; k != 0; k = m->node_below[k]) len++;
    if (used + 1 + len > m->work_cap) return TL_ERR_OUT_OF_MEMORY;
    m->work_pos[used] = len;
    for (uint32_t k = id, j = 0; k != 0; k = m->node_below[k], j++)
      m->work_pos[used + len - j] = m->node_pos[k];
    used += 1 + len;
  }
  m->n_nodes = 1;
  memset(m->node_table, 0, ((size_t)m->node_table_mask + 1) * 4);
  m->n_states = 0;
  memset(m->state_table, 0xff, ((size_t)m->state_table_mask + 1) * 4);
  m->pool_used = 0;
  m->masks_used = 0;
  begin_closure(m);
  for (uint32_t at = 0; at < used;) {
    uint32_t len = m->work_pos[at], below = 0;
    for (uint32_t j = 1; j <= len; j++) {
      below = intern_node(m, m->work_pos[at + j], below);
      if (below == 0) return TL_ERR_OUT_OF_MEMORY;
    }
    m->result[m->n_result++] = below;
    at += 1 + len;
  }
  m->result_accept = accept;
  {
    int32_t fresh = intern_result(m);
    if (fresh < 0) return TL_ERR_OUT_OF_MEMORY;
    m->cur = (uint32_t)fresh;
  }
  return TL_OK;
}

/* ---- the public face ---- */

tl_status tl_gmatcher_new(tl_arena *a, const tl_grammar *g, const tl_gvocab *v,
                          uint32_t options, tl_gmatcher **out) {
  tl_gmatcher *m;
  size_t avail, extra, mask_bytes, budget;
  uint32_t nodes, states, slots, pool;
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
  if (st != TL_OK) return st;
  /* The minimum tables first; what the region has beyond them goes a
   * quarter each to more stack nodes, states with their transition rows,
   * state node lists and cached masks. Table sizes are powers of two. */
  avail = tl_arena_available(a, 16);
  extra = avail - (tl_gmatcher_min_bytes(g, v) - fixed_bytes(v));
  budget = extra / 4;
  nodes = pow2_at_most(MIN_NODES + (budget / node_unit() > 4000000u ? 4000000u : budget / node_unit()));
  states = pow2_at_most(MIN_STATES + (budget / state_unit() > 1000000u ? 1000000u : budget / state_unit()));
  pool = MIN_POOL + (uint32_t)(budget / 4 > 16000000u ? 16000000u : budget / 4);
  slots = 1 + (uint32_t)(budget / mask_bytes > 65535u ? 65535u : budget / mask_bytes);
  m->cap_nodes = nodes;
  m->node_table_mask = nodes * 2 - 1;
  m->work_cap = nodes;
  m->cap_states = states;
  m->state_table_mask = states * 2 - 1;
  m->pool_cap = pool;
  m->mask_slots = slots;
  if ((st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->node_pos)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->node_below)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->node_stamp)) != TL_OK ||
      (st = tl_arena_alloc_array(a, (size_t)m->node_table_mask + 1, 4, 16, (void **)&m->node_table)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->work_pos)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->work_below)) != TL_OK ||
      (st = tl_arena_alloc_array(a, nodes, 4, 16, (void **)&m->result)) != TL_OK ||
      (st = tl_arena_alloc_array(a, states, 4, 16, (void **)&m->state_first)) != TL_OK ||
      (st = tl_arena_alloc_array(a, states, 4, 16, (void **)&m->state_count)) != TL_OK ||
      (st = tl_arena_alloc(a, states, 16, (void **)&m->state_accept)) != TL_OK ||
      (st = tl_arena_alloc_array(a, states, sizeof(uint64_t *), 16, (void **)&m->state_mask)) != TL_OK ||
      (st = tl_arena_alloc_array(a, (size_t)m->state_table_mask + 1, 4, 16, (void **)&m->state_table)) != TL_OK ||
      (st = tl_arena_alloc_array(a, (size_t)states * 256, 4, 64, (void **)&m->trans)) != TL_OK ||
      (st = tl_arena_alloc_array(a, pool, 4, 16, (void **)&m->pool)) != TL_OK ||
      (st = tl_arena_alloc_array(a, (size_t)slots * m->mask_words, 8, 64, (void **)&m->mask_store)) != TL_OK)
    return st;
  m->n_nodes = 1;
  m->node_pos[0] = NONE;
  m->node_below[0] = 0;
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

void tl_gmatcher_reset(tl_gmatcher *m) {
  int32_t s = start_state(m);
  if (s == T_FULL && flush(m) == TL_OK) s = start_state(m);
  /* the start state fit when the matcher was made, so it fits again in
   * emptied tables */
  if (s >= 0) m->cur = (uint32_t)s;
}

/* The walk: every trie node whose path leads to a live state marks its
 * tokens. T_FULL when a table filled up on the way. */
static int32_t walk(tl_gmatcher *m, uint64_t *allow) {
  const tl_gvocab *v = m->v;
  uint32_t i = 1, visited = 0;
  memset(allow, 0, (size_t)m->mask_words * 8);
  m->walk[0] = m->cur;
  while (i < v->n_nodes) {
    uint32_t from = m->walk[v->depth[i] - 1];
    int32_t t = m->trans[(size_t)from * 256 + v->byte[i]];
    visited++;
    if (t == T_UNKNOWN) t = step(m, from, v->byte[i]);
    if (t == T_FULL) return T_FULL;
    if (t == T_DEAD) {
      i = v->skip[i];
      continue;
    }
    m->walk[v->depth[i]] = (uint32_t)t;
    for (uint32_t k = v->tok_first[i]; k < v->tok_first[i + 1]; k++) {
      uint32_t id = v->toks[k];
      allow[id >> 6] |= 1ull << (id & 63);
    }
    i++;
  }
  m->stats.trie_nodes_visited += visited;
  return 0;
}

tl_status tl_gmatcher_mask(tl_gmatcher *m, uint64_t *allow, bool *eos_allowed) {
  if (m == NULL || allow == NULL || eos_allowed == NULL) return TL_ERR_INVALID_ARGUMENT;
  m->stats.masks++;
  if (m->state_mask[m->cur] != NULL) {
    m->stats.mask_cache_hits++;
    memcpy(allow, m->state_mask[m->cur], (size_t)m->mask_words * 8);
  } else {
    if (walk(m, allow) == T_FULL) {
      tl_status st = flush(m);
      if (st != TL_OK) return st;
      if (walk(m, allow) == T_FULL) return TL_ERR_OUT_OF_MEMORY;
    }
    if (m->masks_used == m->mask_slots) { /* forget every cached mask */
      for (uint32_t s = 0; s < m->n_states; s++) m->state_mask[s] = NULL;
      m->masks_used = 0;
    }
    m->state_mask[m->cur] = m->mask_store + (size_t)m->masks_used++ * m->mask_words;
    memcpy(m->state_mask[m->cur], allow, (size_t)m->mask_words * 8);
  }
  *eos_allowed = m->state_accept[m->cur] != 0;
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

tl_status tl_gmatcher_accept(tl_gmatcher *m, const uint8_t *bytes, size_t n) {
  int32_t s;
  if (m == NULL || (bytes == NULL && n > 0)) return TL_ERR_INVALID_ARGUMENT;
  s = advance(m, bytes, n);
  if (s == T_FULL) {
    tl_status st = flush(m);
    if (st != TL_OK) return st;
    s = advance(m, bytes, n);
    if (s == T_FULL) return TL_ERR_OUT_OF_MEMORY;
  }
  if (s == T_DEAD) return TL_ERR_INVALID_ARGUMENT;
  m->cur = (uint32_t)s;
  return TL_OK;
}

bool tl_gmatcher_accepting(const tl_gmatcher *m) { return m->state_accept[m->cur] != 0; }
bool tl_gmatcher_finished(const tl_gmatcher *m) { return m->state_count[m->cur] == 0; }

void tl_gmatcher_get_stats(const tl_gmatcher *m, tl_gmatcher_stats *out) { *out = m->stats; }
