/* The grammar builder: expression trees in, lowered rules out.
 *
 * Lowering turns every expression into runs of byte sets and rule
 * references. Choices become rules; a class of Unicode scalar values
 * becomes a rule whose alternatives are its UTF-8 byte-range sequences;
 * e{min,max} becomes min copies of e followed by a right-recursive rule
 * (S ::= e S | "" for an unbounded tail, a chain O_k ::= e O_k-1 | "" for
 * a bounded one), so a repetition never deepens the parser's stack (the
 * matcher treats a reference in tail position as a jump).
 *
 * Rules are numbered in the order they are first referenced from the root
 * (a breadth-first walk), which makes the lowered form, and so the digest,
 * a function of the expressions alone. */
#include <string.h>

#include "grammar/grammar_internal.h"
#include "hash/sha256.h"

enum { N_LIT, N_BYTES, N_CLASS, N_SEQ, N_ALT, N_REP, N_REF };

typedef struct gnode {
  uint8_t kind;
  uint32_t n;       /* LIT: bytes; CLASS: range pairs; SEQ/ALT: children; REP: child */
  uint32_t a, b;    /* REP: min, max; REF: rule */
  const void *data; /* LIT: bytes; BYTES: set[32]; CLASS: ranges; SEQ/ALT: ids */
} gnode;

typedef struct grule {
  const char *name;
  size_t len;
  tl_gexpr body;
  uint32_t lowered; /* its lowered rule, UINT32_MAX until referenced */
  uint32_t next;    /* hash chain */
} grule;

#define NAME_BUCKETS 4096u
#define SET_BUCKETS 4096u
#define NONE UINT32_MAX

/* What a lowered rule is made from (one queue entry per lowered rule). */
enum { Q_ALTS, Q_CLASS, Q_STAR, Q_CHAIN, Q_LEAD };
typedef struct qitem {
  uint8_t kind;
  tl_gexpr expr; /* ALTS: an expression (a choice's children are the
                  * alternatives); CLASS: the class; STAR/CHAIN: the
                  * repeated expression */
  uint32_t k;    /* CHAIN: how many more copies may follow */
  uint32_t name; /* the named rule it belongs to (for messages) */
  uint32_t chain; /* CHAIN: the repetition it counts down (an expression) */
} qitem;

struct tl_gbuilder {
  tl_arena *a;
  tl_gerror err;
  gnode *nodes;
  uint32_t n_nodes, cap_nodes;
  grule *rules;
  uint32_t n_rules, cap_rules;
  uint32_t *name_heads; /* NAME_BUCKETS */

  /* lowering */
  qitem *queue;
  uint32_t n_queue, cap_queue;
  uint32_t *rule_first; /* per lowered rule: first alternative */
  uint32_t cap_rule_first;
  uint32_t *alt_start;
  uint32_t n_alts, cap_alts;
  uint32_t *elems;
  uint32_t n_elems, cap_elems;
  uint8_t (*sets)[32];
  uint32_t n_sets, cap_sets;
  uint32_t *set_next, *set_heads;
  uint32_t *memo_rule, *memo_tail; /* per expression: its lowered rule */
  uint32_t current_name;           /* named rule being lowered */
};

/* ---- growable arrays in the arena ---- */

static bool grow(tl_gbuilder *b, void **arr, uint32_t *cap, uint32_t need, size_t elem,
                 uint32_t limit, const char *what) {
  void *fresh;
  uint32_t n;
  if (need <= *cap) return true;
  if (need > limit) {
    tl_gerror_set(&b->err, TL_ERR_BOUNDS, 0, "grammar too large: more than ", what, " limit",
                  (const char *)NULL);
    return false;
  }
  n = *cap < 64 ? 64 : *cap;
  while (n < need) n = n > limit / 2 ? limit : n * 2;
  if (tl_arena_alloc_array(b->a, n, elem, 16, &fresh) != TL_OK) {
    tl_gerror_set(&b->err, TL_ERR_OUT_OF_MEMORY, 0, "out of memory building the grammar",
                  (const char *)NULL);
    return false;
  }
  if (*cap > 0) memcpy(fresh, *arr, (size_t)*cap * elem);
  *arr = fresh;
  *cap = n;
  return true;
}

/* n bytes from the arena, a copy of src unless it is NULL. */
static void *copy(tl_gbuilder *b, const void *src, size_t n) {
  void *dst;
  if (tl_arena_alloc(b->a, n, 1, &dst) != TL_OK) {
    tl_gerror_set(&b->err, TL_ERR_OUT_OF_MEMORY, 0, "out of memory building the grammar",
                  (const char *)NULL);
    return NULL;
  }
  if (n > 0 && src != NULL) memcpy(dst, src, n);
  return dst;
}

/* ---- expressions ---- */

tl_status tl_gb_new(tl_arena *a, tl_gbuilder **out) {
  tl_gbuilder *b;
  void *p;
  tl_status st;
  if (a == NULL || out == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = tl_arena_alloc(a, sizeof *b, 16, &p);
  if (st != TL_OK) return st;
  b = p;
  memset(b, 0, sizeof *b);
  b->a = a;
  st = tl_arena_alloc_array(a, NAME_BUCKETS, sizeof *b->name_heads, 16, &p);
  if (st != TL_OK) return st;
  b->name_heads = p;
  memset(b->name_heads, 0xff, NAME_BUCKETS * sizeof *b->name_heads);
  *out = b;
  return TL_OK;
}

static bool failed(const tl_gbuilder *b) { return b == NULL || b->err.status != TL_OK; }

static tl_gexpr add_node(tl_gbuilder *b, gnode n) {
  if (failed(b)) return TL_GEXPR_NONE;
  if (!grow(b, (void **)&b->nodes, &b->cap_nodes, b->n_nodes + 1, sizeof *b->nodes,
            TL_GRAMMAR_MAX_ELEMS, "expression"))
    return TL_GEXPR_NONE;
  b->nodes[b->n_nodes] = n;
  return b->n_nodes++;
}

static bool valid_expr(tl_gbuilder *b, tl_gexpr e) {
  if (failed(b)) return false;
  if (e >= b->n_nodes) {
    tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0, "grammar builder: invalid expression",
                  (const char *)NULL);
    return false;
  }
  return true;
}

tl_gexpr tl_gb_literal(tl_gbuilder *b, const uint8_t *s, size_t n) {
  gnode g = {N_LIT, 0, 0, 0, NULL};
  if (failed(b)) return TL_GEXPR_NONE;
  if (n > TL_GRAMMAR_MAX_ELEMS) {
    tl_gerror_set(&b->err, TL_ERR_BOUNDS, 0, "grammar literal too long", (const char *)NULL);
    return TL_GEXPR_NONE;
  }
  g.n = (uint32_t)n;
  g.data = copy(b, s, n);
  return g.data == NULL ? TL_GEXPR_NONE : add_node(b, g);
}

tl_gexpr tl_gb_bytes(tl_gbuilder *b, const uint8_t set[32]) {
  gnode g = {N_BYTES, 0, 0, 0, NULL};
  if (failed(b)) return TL_GEXPR_NONE;
  g.data = copy(b, set, 32);
  return g.data == NULL ? TL_GEXPR_NONE : add_node(b, g);
}

#define MAX_SCALAR 0x10FFFFu

/* Sorts range pairs by their low end (merge sort: classes from untrusted
 * text can be long). */
static void sort_pairs(uint32_t *r, uint32_t *tmp, size_t n) {
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n;
      size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid || j < hi) {
        if (j >= hi || (i < mid && r[2 * i] <= r[2 * j])) {
          tmp[2 * k] = r[2 * i];
          tmp[2 * k++ + 1] = r[2 * i++ + 1];
        } else {
          tmp[2 * k] = r[2 * j];
          tmp[2 * k++ + 1] = r[2 * j++ + 1];
        }
      }
    }
    memcpy(r, tmp, n * 2 * sizeof *r);
  }
}

/* Appends [lo, hi] minus the surrogates to out (merging with the last). */
static void put_range(uint32_t *out, size_t *n, uint32_t lo, uint32_t hi) {
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) put_range(out, n, lo, 0xD7FF);
    if (hi > 0xDFFF) put_range(out, n, 0xE000, hi);
    return;
  }
  if (*n > 0 && lo <= out[2 * *n - 1] + 1) {
    if (hi > out[2 * *n - 1]) out[2 * *n - 1] = hi;
    return;
  }
  out[2 * *n] = lo;
  out[2 * *n + 1] = hi;
  (*n)++;
}

tl_gexpr tl_gb_class(tl_gbuilder *b, const uint32_t *ranges, size_t n_pairs, bool negate) {
  gnode g = {N_CLASS, 0, 0, 0, NULL};
  uint32_t *r, *tmp, *out;
  size_t n = 0;
  if (failed(b)) return TL_GEXPR_NONE;
  if (n_pairs > TL_GRAMMAR_MAX_ELEMS) {
    tl_gerror_set(&b->err, TL_ERR_BOUNDS, 0, "character class too long", (const char *)NULL);
    return TL_GEXPR_NONE;
  }
  r = copy(b, ranges, n_pairs * 2 * sizeof *r);
  tmp = copy(b, ranges, n_pairs * 2 * sizeof *r);
  /* room for the complement: one more pair, plus a split at the surrogates */
  out = copy(b, NULL, (n_pairs + 3) * 2 * sizeof *r);
  if (r == NULL || tmp == NULL || out == NULL) return TL_GEXPR_NONE;
  for (size_t i = 0; i < n_pairs; i++) {
    if (r[2 * i] > r[2 * i + 1] || r[2 * i + 1] > MAX_SCALAR) {
      tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0,
                    "character class range out of order or past U+10FFFF", (const char *)NULL);
      return TL_GEXPR_NONE;
    }
  }
  sort_pairs(r, tmp, n_pairs);
  if (!negate) {
    for (size_t i = 0; i < n_pairs; i++) put_range(out, &n, r[2 * i], r[2 * i + 1]);
  } else {
    uint32_t next = 0; /* the first scalar not yet covered */
    for (size_t i = 0; i < n_pairs && next <= MAX_SCALAR; i++) {
      if (r[2 * i] > next) put_range(out, &n, next, r[2 * i] - 1);
      if (r[2 * i + 1] + 1 > next) next = r[2 * i + 1] + 1;
    }
    if (next <= MAX_SCALAR) put_range(out, &n, next, MAX_SCALAR);
  }
  g.n = (uint32_t)n;
  g.data = out;
  return add_node(b, g);
}

static tl_gexpr list_node(tl_gbuilder *b, uint8_t kind, const tl_gexpr *items, size_t n) {
  gnode g = {kind, 0, 0, 0, NULL};
  if (failed(b)) return TL_GEXPR_NONE;
  if (n > TL_GRAMMAR_MAX_ELEMS) {
    tl_gerror_set(&b->err, TL_ERR_BOUNDS, 0, "grammar sequence or choice too long",
                  (const char *)NULL);
    return TL_GEXPR_NONE;
  }
  for (size_t i = 0; i < n; i++)
    if (!valid_expr(b, items[i])) return TL_GEXPR_NONE;
  g.n = (uint32_t)n;
  g.data = copy(b, items, n * sizeof *items);
  return g.data == NULL ? TL_GEXPR_NONE : add_node(b, g);
}

tl_gexpr tl_gb_seq(tl_gbuilder *b, const tl_gexpr *items, size_t n) {
  if (n == 1) return valid_expr(b, items[0]) ? items[0] : TL_GEXPR_NONE;
  return list_node(b, N_SEQ, items, n);
}

tl_gexpr tl_gb_alt(tl_gbuilder *b, const tl_gexpr *items, size_t n) {
  if (failed(b)) return TL_GEXPR_NONE;
  if (n == 0) {
    tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0, "grammar builder: a choice of nothing",
                  (const char *)NULL);
    return TL_GEXPR_NONE;
  }
  if (n == 1) return valid_expr(b, items[0]) ? items[0] : TL_GEXPR_NONE;
  return list_node(b, N_ALT, items, n);
}

tl_gexpr tl_gb_repeat(tl_gbuilder *b, tl_gexpr e, uint32_t min, uint32_t max) {
  gnode g = {N_REP, 0, 0, 0, NULL};
  if (!valid_expr(b, e)) return TL_GEXPR_NONE;
  if (min > max || min > TL_GRAMMAR_MAX_REPEAT ||
      (max != TL_GB_UNBOUNDED && max > TL_GRAMMAR_MAX_REPEAT)) {
    tl_gerror_set(&b->err, min > max ? TL_ERR_INVALID_ARGUMENT : TL_ERR_BOUNDS, 0,
                  min > max ? "repetition with min greater than max"
                            : "repetition count past the limit of 100000",
                  (const char *)NULL);
    return TL_GEXPR_NONE;
  }
  g.n = e;
  g.a = min;
  g.b = max;
  return add_node(b, g);
}

static uint32_t name_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h % NAME_BUCKETS;
}

uint32_t tl_gb_rule(tl_gbuilder *b, const char *name, size_t len) {
  uint32_t h;
  char *owned;
  if (failed(b)) return NONE;
  h = name_hash(name, len);
  for (uint32_t r = b->name_heads[h]; r != NONE; r = b->rules[r].next)
    if (b->rules[r].len == len && memcmp(b->rules[r].name, name, len) == 0) return r;
  if (!grow(b, (void **)&b->rules, &b->cap_rules, b->n_rules + 1, sizeof *b->rules,
            TL_GRAMMAR_MAX_RULES, "rule"))
    return NONE;
  owned = copy(b, name, len);
  if (owned == NULL) return NONE;
  b->rules[b->n_rules] = (grule){owned, len, TL_GEXPR_NONE, NONE, b->name_heads[h]};
  b->name_heads[h] = b->n_rules;
  return b->n_rules++;
}

tl_gexpr tl_gb_ref(tl_gbuilder *b, uint32_t rule) {
  gnode g = {N_REF, 0, 0, 0, NULL};
  if (failed(b)) return TL_GEXPR_NONE;
  if (rule >= b->n_rules) {
    tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0, "grammar builder: invalid rule",
                  (const char *)NULL);
    return TL_GEXPR_NONE;
  }
  g.a = rule;
  return add_node(b, g);
}

/* Appends a rule's name to the error message. */
static void append_name(tl_gbuilder *b, uint32_t rule) {
  tl_gerror_append(&b->err, b->rules[rule].name, b->rules[rule].len);
}

void tl_gb_define(tl_gbuilder *b, uint32_t rule, tl_gexpr body) {
  if (!valid_expr(b, body)) return;
  if (rule >= b->n_rules) {
    tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0, "grammar builder: invalid rule",
                  (const char *)NULL);
    return;
  }
  if (b->rules[rule].body != TL_GEXPR_NONE) {
    tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0, "rule defined twice: '",
                  (const char *)NULL);
    append_name(b, rule);
    tl_gerror_append(&b->err, "'", 1);
    return;
  }
  b->rules[rule].body = body;
}

void tl_gb_fail(tl_gbuilder *b, const tl_gerror *err) {
  if (b == NULL || err == NULL || b->err.status != TL_OK) return;
  b->err = *err;
  if (b->err.status == TL_OK) b->err.status = TL_ERR_INVALID_ARGUMENT;
}

const tl_gerror *tl_gb_error(const tl_gbuilder *b) { return &b->err; }

tl_arena *tl_gb_arena(tl_gbuilder *b) { return b->a; }

/* ---- lowering ---- */

static uint32_t set_hash(const uint8_t set[32]) {
  uint32_t h = 2166136261u;
  for (int i = 0; i < 32; i++) h = (h ^ set[i]) * 16777619u;
  return h % SET_BUCKETS;
}

static bool emit(tl_gbuilder *b, uint32_t e) {
  if (!grow(b, (void **)&b->elems, &b->cap_elems, b->n_elems + 1, sizeof *b->elems,
            TL_GRAMMAR_MAX_ELEMS, "element"))
    return false;
  b->elems[b->n_elems++] = e;
  return true;
}

static bool emit_set(tl_gbuilder *b, const uint8_t set[32]) {
  uint32_t h = set_hash(set);
  for (uint32_t s = b->set_heads[h]; s != NONE; s = b->set_next[s])
    if (memcmp(b->sets[s], set, 32) == 0) return emit(b, TL_GE_SET | s);
  {
    uint32_t cap = b->cap_sets;
    if (!grow(b, (void **)&b->sets, &b->cap_sets, b->n_sets + 1, sizeof *b->sets,
              TL_GRAMMAR_MAX_ELEMS, "byte set"))
      return false;
    if (!grow(b, (void **)&b->set_next, &cap, b->n_sets + 1, sizeof *b->set_next,
              TL_GRAMMAR_MAX_ELEMS, "byte set"))
      return false;
  }
  memcpy(b->sets[b->n_sets], set, 32);
  b->set_next[b->n_sets] = b->set_heads[h];
  b->set_heads[h] = b->n_sets;
  return emit(b, TL_GE_SET | b->n_sets++);
}

static bool emit_byte_range(tl_gbuilder *b, uint8_t lo, uint8_t hi) {
  uint8_t set[32] = {0};
  for (unsigned c = lo; c <= hi; c++) set[c >> 3] |= (uint8_t)(1u << (c & 7));
  return emit_set(b, set);
}

/* Queues a lowered rule; its id is its place in the queue. */
static uint32_t enqueue(tl_gbuilder *b, uint8_t kind, tl_gexpr expr, uint32_t k) {
  if (!grow(b, (void **)&b->queue, &b->cap_queue, b->n_queue + 1, sizeof *b->queue,
            TL_GRAMMAR_MAX_RULES, "rule"))
    return NONE;
  b->queue[b->n_queue] = (qitem){kind, expr, k, b->current_name, NONE};
  return b->n_queue++;
}

/* The UTF-8 encodings of the scalar values lo..hi (one length) as runs of
 * byte ranges: split until every continuation position spans its full
 * range or a single prefix, then one alternative per piece. */
typedef struct utf8_seq {
  uint8_t n, lo[4], hi[4];
} utf8_seq;

static int utf8_len(uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

static void utf8_encode(uint32_t c, uint8_t out[4]) {
  int n = utf8_len(c);
  static const uint8_t lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; i--) {
    out[i] = (uint8_t)(0x80 | (c & 0x3F));
    c >>= 6;
  }
  out[0] = (uint8_t)(lead[n] | c);
}

/* Calls put for each byte-range sequence covering lo..hi. Returns false
 * when put does. */
static bool utf8_sequences(tl_gbuilder *b, uint32_t lo, uint32_t hi,
                           bool (*put)(tl_gbuilder *, const utf8_seq *)) {
  static const uint32_t ends[4] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (int len = 1; len <= 4; len++) {
    uint32_t cut = ends[len - 1];
    if (lo > cut) continue;
    if (hi > cut) {
      return utf8_sequences(b, lo, cut, put) && utf8_sequences(b, cut + 1, hi, put);
    }
    break;
  }
  {
    int n = utf8_len(lo);
    for (int i = 1; i < n; i++) {
      uint32_t m = (1u << (6 * i)) - 1;
      if ((lo & ~m) != (hi & ~m)) {
        if ((lo & m) != 0)
          return utf8_sequences(b, lo, lo | m, put) && utf8_sequences(b, (lo | m) + 1, hi, put);
        if ((hi & m) != m)
          return utf8_sequences(b, lo, (hi & ~m) - 1, put) && utf8_sequences(b, hi & ~m, hi, put);
      }
    }
    {
      utf8_seq s;
      utf8_encode(lo, s.lo);
      utf8_encode(hi, s.hi);
      s.n = (uint8_t)n;
      return put(b, &s);
    }
  }
}

static bool put_alternative(tl_gbuilder *b, const utf8_seq *s) {
  if (!grow(b, (void **)&b->alt_start, &b->cap_alts, b->n_alts + 1, sizeof *b->alt_start,
            TL_GRAMMAR_MAX_ELEMS, "alternative"))
    return false;
  b->alt_start[b->n_alts++] = b->n_elems;
  for (int i = 0; i < s->n; i++)
    if (!emit_byte_range(b, s->lo[i], s->hi[i])) return false;
  return emit(b, TL_GE_END);
}

static bool ascii_only(const gnode *g) {
  const uint32_t *r = g->data;
  return g->n > 0 && r[2 * g->n - 1] < 0x80;
}

static bool lower_inline(tl_gbuilder *b, tl_gexpr e, unsigned depth);

/* Sequences nested deeper than this become rules of their own, so the
 * lowering's recursion stays shallow whatever a reader built. */
#define INLINE_DEPTH 64u

/* A reference to the rule "R ::= e" (one per expression). */
static bool emit_rule_of(tl_gbuilder *b, tl_gexpr e, uint8_t kind) {
  if (b->memo_rule[e] == NONE) {
    b->memo_rule[e] = enqueue(b, kind, e, 0);
    if (b->memo_rule[e] == NONE) return false;
  }
  return emit(b, TL_GE_REF | b->memo_rule[e]);
}

static bool lower_inline(tl_gbuilder *b, tl_gexpr e, unsigned depth) {
  const gnode *g = &b->nodes[e];
  if (depth > INLINE_DEPTH && (g->kind == N_SEQ || g->kind == N_REP)) return emit_rule_of(b, e, Q_ALTS);
  switch (g->kind) {
  case N_LIT:
    for (uint32_t i = 0; i < g->n; i++) {
      uint8_t c = ((const uint8_t *)g->data)[i];
      if (!emit_byte_range(b, c, c)) return false;
    }
    return true;
  case N_BYTES:
    return emit_set(b, g->data);
  case N_CLASS:
    if (ascii_only(g)) {
      const uint32_t *r = g->data;
      uint8_t set[32] = {0};
      for (uint32_t i = 0; i < g->n; i++)
        for (uint32_t c = r[2 * i]; c <= r[2 * i + 1]; c++) set[c >> 3] |= (uint8_t)(1u << (c & 7));
      return emit_set(b, set);
    }
    return emit_rule_of(b, e, Q_CLASS);
  case N_SEQ:
    for (uint32_t i = 0; i < g->n; i++)
      if (!lower_inline(b, ((const tl_gexpr *)g->data)[i], depth + 1)) return false;
    return true;
  case N_ALT:
    return emit_rule_of(b, e, Q_ALTS);
  case N_REP:
    for (uint32_t i = 0; i < g->a; i++)
      if (!lower_inline(b, g->n, depth + 1)) return false;
    if (g->b == g->a) return true;
    if (b->memo_tail[e] == NONE) {
      b->memo_tail[e] = g->b == TL_GB_UNBOUNDED ? enqueue(b, Q_STAR, g->n, 0)
                                                : enqueue(b, Q_CHAIN, g->n, g->b - g->a);
      if (b->memo_tail[e] == NONE) return false;
      b->queue[b->memo_tail[e]].chain = e;
    }
    return emit(b, TL_GE_REF | b->memo_tail[e]);
  case N_REF: {
    grule *r = &b->rules[g->a];
    if (r->body == TL_GEXPR_NONE) {
      tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0, "undefined rule '", (const char *)NULL);
      append_name(b, g->a);
      tl_gerror_append(&b->err, "'", 1);
      return false;
    }
    if (r->lowered == NONE) {
      uint32_t saved = b->current_name;
      b->current_name = g->a;
      r->lowered = enqueue(b, Q_ALTS, r->body, 0);
      b->current_name = saved;
      if (r->lowered == NONE) return false;
    }
    return emit(b, TL_GE_REF | r->lowered);
  }
  }
  return false;
}

static bool begin_alt(tl_gbuilder *b) {
  if (!grow(b, (void **)&b->alt_start, &b->cap_alts, b->n_alts + 1, sizeof *b->alt_start,
            TL_GRAMMAR_MAX_ELEMS, "alternative"))
    return false;
  b->alt_start[b->n_alts++] = b->n_elems;
  return true;
}

/* Emits the alternatives of queued rule q. */
static bool lower_rule(tl_gbuilder *b, uint32_t q) {
  qitem it = b->queue[q];
  const gnode *g = it.kind == Q_LEAD ? NULL : &b->nodes[it.expr];
  b->current_name = it.name;
  switch (it.kind) {
  case Q_ALTS:
    if (g->kind == N_ALT) {
      for (uint32_t i = 0; i < g->n; i++)
        if (!begin_alt(b) || !lower_inline(b, ((const tl_gexpr *)g->data)[i], 0) ||
            !emit(b, TL_GE_END))
          return false;
      return true;
    }
    return begin_alt(b) && lower_inline(b, it.expr, 0) && emit(b, TL_GE_END);
  case Q_CLASS: {
    const uint32_t *r = g->data;
    for (uint32_t i = 0; i < g->n; i++)
      if (!utf8_sequences(b, r[2 * i], r[2 * i + 1], put_alternative)) return false;
    return true;
  }
  case Q_STAR: /* S ::= e S | "" */
    return begin_alt(b) && lower_inline(b, it.expr, 0) && emit(b, TL_GE_REF | q) &&
           emit(b, TL_GE_END) && begin_alt(b) && emit(b, TL_GE_END);
  case Q_CHAIN: { /* O_k ::= e O_k-1 | "" */
    uint32_t next = NONE;
    if (!begin_alt(b) || !lower_inline(b, it.expr, 0)) return false;
    if (it.k > 1) {
      next = enqueue(b, Q_CHAIN, it.expr, it.k - 1);
      if (next == NONE || !emit(b, TL_GE_REF | next)) return false;
      b->queue[next].chain = it.chain;
    }
    return emit(b, TL_GE_END) && begin_alt(b) && emit(b, TL_GE_END);
  }
  case Q_LEAD: { /* "\n"{0,2} root */
    for (int n = 0; n <= 2; n++) {
      if (!begin_alt(b)) return false;
      for (int i = 0; i < n; i++)
        if (!emit_byte_range(b, '\n', '\n')) return false;
      if (!emit(b, TL_GE_REF | 0u) || !emit(b, TL_GE_END)) return false;
    }
    return true;
  }
  }
  return false;
}

/* ---- checks ---- */

/* The rule's name for messages: the named rule it was lowered from. */
static void append_lowered_name(tl_gbuilder *b, uint32_t lowered) {
  uint32_t named = b->queue[lowered].name;
  if (named == NONE) tl_gerror_append(&b->err, "root", 4);
  else append_name(b, named);
}

static bool elem_flag(const uint8_t *flags, uint32_t e, bool set_value) {
  return TL_GE_KIND(e) == TL_GE_SET ? set_value : flags[TL_GE_ARG(e)] != 0;
}

/* Fixed point: a rule has the property when one of its alternatives has
 * it for every element (a byte set has it when set_value). */
static void fixpoint(const tl_gbuilder *b, uint32_t n_rules, uint8_t *flags, bool set_value) {
  bool changed = true;
  memset(flags, 0, n_rules);
  while (changed) {
    changed = false;
    for (uint32_t r = 0; r < n_rules; r++) {
      if (flags[r]) continue;
      for (uint32_t a = b->rule_first[r]; a < b->rule_first[r + 1] && !flags[r]; a++) {
        uint32_t p = b->alt_start[a];
        while (b->elems[p] != TL_GE_END && elem_flag(flags, b->elems[p], set_value)) p++;
        if (b->elems[p] == TL_GE_END) {
          flags[r] = 1;
          changed = true;
        }
      }
    }
  }
}

/* Left recursion: a rule reachable from itself through references that
 * only rules matching the empty string precede. Iterative depth-first
 * search over those edges. */
static bool check_left_recursion(tl_gbuilder *b, uint32_t n_rules, const uint8_t *nullable) {
  uint8_t *color;
  uint32_t *stack_rule, *stack_alt, *stack_pos;
  if (tl_arena_alloc(b->a, n_rules, 1, (void **)&color) != TL_OK ||
      tl_arena_alloc_array(b->a, n_rules, 4, 16, (void **)&stack_rule) != TL_OK ||
      tl_arena_alloc_array(b->a, n_rules, 4, 16, (void **)&stack_alt) != TL_OK ||
      tl_arena_alloc_array(b->a, n_rules, 4, 16, (void **)&stack_pos) != TL_OK) {
    tl_gerror_set(&b->err, TL_ERR_OUT_OF_MEMORY, 0, "out of memory checking the grammar",
                  (const char *)NULL);
    return false;
  }
  memset(color, 0, n_rules);
  for (uint32_t start = 0; start < n_rules; start++) {
    size_t top = 0;
    if (color[start] != 0) continue;
    color[start] = 1;
    stack_rule[0] = start;
    stack_alt[0] = b->rule_first[start];
    stack_pos[0] = stack_alt[0] < b->rule_first[start + 1] ? b->alt_start[stack_alt[0]] : 0;
    for (;;) {
      uint32_t r = stack_rule[top];
      uint32_t next = NONE;
      /* the next left-corner reference of r */
      while (stack_alt[top] < b->rule_first[r + 1]) {
        uint32_t e = b->elems[stack_pos[top]];
        if (TL_GE_KIND(e) == TL_GE_REF) {
          next = TL_GE_ARG(e);
          if (nullable[next]) stack_pos[top]++;
          else {
            stack_alt[top]++;
            if (stack_alt[top] < b->rule_first[r + 1]) stack_pos[top] = b->alt_start[stack_alt[top]];
          }
          break;
        }
        stack_alt[top]++; /* a byte set or the end: this alternative is done */
        if (stack_alt[top] < b->rule_first[r + 1]) stack_pos[top] = b->alt_start[stack_alt[top]];
      }
      if (next == NONE) {
        color[r] = 2;
        if (top == 0) break;
        top--;
        continue;
      }
      if (color[next] == 1) {
        tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0,
                      "left recursion (or a repetition of something that can be empty) "
                      "through rule '",
                      (const char *)NULL);
        append_lowered_name(b, next);
        tl_gerror_append(&b->err, "'", 1);
        return false;
      }
      if (color[next] == 0) {
        color[next] = 1;
        top++;
        stack_rule[top] = next;
        stack_alt[top] = b->rule_first[next];
        stack_pos[top] = stack_alt[top] < b->rule_first[next + 1] ? b->alt_start[stack_alt[top]] : 0;
      }
    }
  }
  return true;
}

/* Alternatives that reference a rule matching no text can never complete:
 * they are cut (alt_start TL_GALT_DEAD: the matcher never enters them), so
 * every parser state the matcher reaches can still be completed. */
static void prune_dead(tl_gbuilder *b, uint32_t n_rules, const uint8_t *productive,
                       uint32_t dead_alt_start) {
  for (uint32_t a = 0; a < b->rule_first[n_rules]; a++) {
    if (b->alt_start[a] == dead_alt_start) continue;
    for (uint32_t p = b->alt_start[a]; b->elems[p] != TL_GE_END; p++) {
      uint32_t e = b->elems[p];
      if (TL_GE_KIND(e) == TL_GE_REF && !productive[TL_GE_ARG(e)]) {
        b->alt_start[a] = dead_alt_start;
        break;
      }
    }
  }
}

/* The digest's input, gathered in a buffer: SHA-256 per call costs more
 * than the few bytes most calls bring. */
typedef struct digest_stream {
  tl_sha256_ctx c;
  uint8_t buf[512];
  uint32_t len;
} digest_stream;

static void digest_u32(digest_stream *d, uint32_t v) {
  if (d->len + 4 > sizeof d->buf) {
    tl_sha256_update(&d->c, d->buf, d->len);
    d->len = 0;
  }
  d->buf[d->len++] = (uint8_t)v;
  d->buf[d->len++] = (uint8_t)(v >> 8);
  d->buf[d->len++] = (uint8_t)(v >> 16);
  d->buf[d->len++] = (uint8_t)(v >> 24);
}

/* The canonical form: per rule its alternatives, per alternative its
 * elements; a byte set as the order of its first use, and after the rules
 * each set's bitmap in that order (so set numbering never counts, and a
 * set used a thousand times is hashed once). first_use, order: n_sets
 * scratch entries each. */
static void digest_rules(const tl_gbuilder *b, uint32_t n_rules, uint32_t dead,
                         uint32_t *first_use, uint32_t *order, uint8_t out[32]) {
  digest_stream d;
  static const char tag[] = "tinylm.grammar/2";
  uint32_t n_used = 0;
  tl_sha256_init(&d.c);
  tl_sha256_update(&d.c, tag, sizeof tag - 1);
  d.len = 0;
  memset(first_use, 0xff, (size_t)b->n_sets * 4);
  digest_u32(&d, n_rules);
  for (uint32_t r = 0; r < n_rules; r++) {
    digest_u32(&d, b->rule_first[r + 1] - b->rule_first[r]);
    for (uint32_t a = b->rule_first[r]; a < b->rule_first[r + 1]; a++) {
      uint32_t p = b->alt_start[a];
      if (p == dead) { /* a cut alternative counts as what it was before */
        digest_u32(&d, 0xFFFFFFFFu);
        continue;
      }
      for (; b->elems[p] != TL_GE_END; p++) {
        uint32_t e = b->elems[p], set = TL_GE_ARG(e);
        if (TL_GE_KIND(e) == TL_GE_SET) {
          if (first_use[set] == NONE) first_use[set] = n_used++;
          digest_u32(&d, 1);
          digest_u32(&d, first_use[set]);
        } else {
          digest_u32(&d, 2);
          digest_u32(&d, TL_GE_ARG(e));
        }
      }
      digest_u32(&d, 0);
    }
  }
  digest_u32(&d, n_used);
  tl_sha256_update(&d.c, d.buf, d.len);
  /* the bitmaps in first-use order (order: the set of each rank) */
  for (uint32_t set = 0; set < b->n_sets; set++)
    if (first_use[set] != NONE) order[first_use[set]] = set;
  for (uint32_t k = 0; k < n_used; k++) tl_sha256_update(&d.c, b->sets[order[k]], 32);
  tl_sha256_final(&d.c, out);
}

/* The positions of a countdown rule O_k with k > TL_GCANON_BYTES mapped to
 * the same places in its chain's O_TL_GCANON_BYTES (match.c: a state and
 * its image allow the same tokens of up to that many bytes). NULL when no
 * chain is that long. */
static const uint32_t *canon_positions(tl_gbuilder *b, uint32_t n_rules) {
  uint32_t *target = NULL, *canon = NULL;
  for (uint32_t r = 0; r < n_rules; r++) {
    const qitem *q = &b->queue[r];
    if (q->kind != Q_CHAIN || q->k != TL_GCANON_BYTES) continue;
    if (target == NULL) {
      if (tl_arena_alloc_array(b->a, b->n_nodes, 4, 16, (void **)&target) != TL_OK) return NULL;
      memset(target, 0xff, (size_t)b->n_nodes * 4);
    }
    target[q->chain] = r;
  }
  if (target == NULL) return NULL;
  for (uint32_t r = 0; r < n_rules; r++) {
    const qitem *q = &b->queue[r];
    uint32_t t;
    if (q->kind != Q_CHAIN || q->k <= TL_GCANON_BYTES || (t = target[q->chain]) == NONE) continue;
    if (canon == NULL) {
      if (tl_arena_alloc_array(b->a, b->n_elems, 4, 16, (void **)&canon) != TL_OK) return NULL;
      for (uint32_t p = 0; p < b->n_elems; p++) canon[p] = p;
    }
    for (uint32_t a = 0; a < 2; a++) {
      uint32_t from = b->alt_start[b->rule_first[r] + a], to = b->alt_start[b->rule_first[t] + a];
      if (from == TL_GALT_DEAD || to == TL_GALT_DEAD) continue;
      for (uint32_t i = 0;; i++) {
        canon[from + i] = to + i;
        if (b->elems[from + i] == TL_GE_END) break;
      }
    }
  }
  return canon;
}

tl_status tl_gb_finish(tl_gbuilder *b, uint32_t root, const tl_grammar **out, tl_gerror *err) {
  tl_grammar *g;
  uint8_t *nullable, *productive;
  uint32_t n_rules, dead, *scratch;
  if (b == NULL || out == NULL) return TL_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (!failed(b) && (root >= b->n_rules || b->rules[root].body == TL_GEXPR_NONE)) {
    tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0, "the start rule is not defined",
                  (const char *)NULL);
    if (root < b->n_rules) {
      tl_gerror_append(&b->err, ": '", 3);
      append_name(b, root);
      tl_gerror_append(&b->err, "'", 1);
    }
  }
  if (!failed(b) && (tl_arena_alloc_array(b->a, b->n_nodes, 4, 16, (void **)&b->memo_rule) != TL_OK ||
                     tl_arena_alloc_array(b->a, b->n_nodes, 4, 16, (void **)&b->memo_tail) != TL_OK ||
                     tl_arena_alloc_array(b->a, SET_BUCKETS, 4, 16, (void **)&b->set_heads) != TL_OK))
    tl_gerror_set(&b->err, TL_ERR_OUT_OF_MEMORY, 0, "out of memory building the grammar",
                  (const char *)NULL);
  if (!failed(b)) {
    memset(b->memo_rule, 0xff, (size_t)b->n_nodes * 4);
    memset(b->memo_tail, 0xff, (size_t)b->n_nodes * 4);
    memset(b->set_heads, 0xff, SET_BUCKETS * 4);
    b->current_name = NONE;
    /* the root: rule 0 is "root ::= <the start rule's body>" */
    b->rules[root].lowered = enqueue(b, Q_ALTS, b->rules[root].body, 0);
    if (b->rules[root].lowered != NONE) b->queue[0].name = root; /* else out of memory */
    for (uint32_t q = 0; q < b->n_queue && !failed(b); q++) {
      if (!grow(b, (void **)&b->rule_first, &b->cap_rule_first, q + 2, 4,
                TL_GRAMMAR_MAX_RULES + 2, "rule"))
        break;
      b->rule_first[q] = b->n_alts;
      if (!lower_rule(b, q)) break;
      b->rule_first[q + 1] = b->n_alts;
    }
  }
  if (failed(b)) goto fail;
  n_rules = b->n_queue;
  dead = TL_GALT_DEAD;
  if (tl_arena_alloc(b->a, n_rules, 1, (void **)&nullable) != TL_OK ||
      tl_arena_alloc(b->a, n_rules, 1, (void **)&productive) != TL_OK) {
    tl_gerror_set(&b->err, TL_ERR_OUT_OF_MEMORY, 0, "out of memory checking the grammar",
                  (const char *)NULL);
    goto fail;
  }
  fixpoint(b, n_rules, nullable, false);
  fixpoint(b, n_rules, productive, true);
  if (!productive[0]) {
    tl_gerror_set(&b->err, TL_ERR_INVALID_ARGUMENT, 0,
                  "the grammar matches no text (every alternative of the start rule "
                  "needs a rule that never ends)",
                  (const char *)NULL);
    goto fail;
  }
  if (!check_left_recursion(b, n_rules, nullable)) goto fail;
  prune_dead(b, n_rules, productive, dead);
  if (tl_arena_alloc(b->a, sizeof *g, 16, (void **)&g) != TL_OK) {
    tl_gerror_set(&b->err, TL_ERR_OUT_OF_MEMORY, 0, "out of memory building the grammar",
                  (const char *)NULL);
    goto fail;
  }
  memset(g, 0, sizeof *g);
  if (tl_arena_alloc_array(b->a, (size_t)b->n_sets * 2 + 1, 4, 16, (void **)&scratch) != TL_OK) {
    tl_gerror_set(&b->err, TL_ERR_OUT_OF_MEMORY, 0, "out of memory building the grammar",
                  (const char *)NULL);
    goto fail;
  }
  digest_rules(b, n_rules, dead, scratch, scratch + b->n_sets, g->digest);
  /* the leading-newlines start, after the digest */
  g->root_lead = enqueue(b, Q_LEAD, 0, 0);
  if (g->root_lead == NONE ||
      !grow(b, (void **)&b->rule_first, &b->cap_rule_first, n_rules + 2, 4,
            TL_GRAMMAR_MAX_RULES + 2, "rule") ||
      !lower_rule(b, g->root_lead))
    goto fail;
  b->rule_first[n_rules + 1] = b->n_alts;
  g->n_rules = n_rules + 1;
  g->rule_first = b->rule_first;
  g->alt_start = b->alt_start;
  g->n_elems = b->n_elems;
  g->elems = b->elems;
  g->n_sets = b->n_sets;
  g->sets = (const uint8_t(*)[32])b->sets;
  g->root = 0;
  g->canon = canon_positions(b, n_rules);
  *out = g;
  if (err != NULL) err->status = TL_OK;
  return TL_OK;
fail:
  if (err != NULL) *err = b->err;
  return b->err.status;
}

void tl_grammar_digest(const tl_grammar *g, uint8_t out[32]) { memcpy(out, g->digest, 32); }
uint32_t tl_grammar_rules(const tl_grammar *g) { return g->n_rules; }
uint32_t tl_grammar_elems(const tl_grammar *g) { return g->n_elems; }
