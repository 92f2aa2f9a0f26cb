/* Specification of the grammar builder and the matcher.
 *
 * The oracle for masks is independent of both: a backtracking recognizer
 * over the test's own expression trees (it never sees the lowered rules,
 * the DFA or the trie), asked for every token whether the text so far
 * followed by the token's bytes is a prefix of some sentence, and whether
 * the text so far is a sentence (EOS). Random grammars and random walks
 * through their languages compare the two bit for bit. */
#include "grammar/grammar.h"

#include <string.h>

#include "grammar/grammar_test_util.h"
#include "tl_test.h"

static _Alignas(64) uint8_t region[8u << 20];

/* ---- the test's expression trees and their recognizer ---- */

enum { X_LIT, X_RANGE, X_SEQ, X_ALT, X_REP, X_REF };
typedef struct xnode {
  int kind;
  const char *lit;       /* X_LIT */
  uint32_t lo, hi;       /* X_RANGE: scalar values */
  int kids[4], n_kids;   /* X_SEQ, X_ALT; X_REP: kids[0] */
  uint32_t min, max;     /* X_REP; max UINT32_MAX: unbounded */
  int rule;              /* X_REF */
} xnode;

#define MAX_X 256
#define MAX_RULES 4
typedef struct xgrammar {
  xnode n[MAX_X];
  int count;
  int body[MAX_RULES], n_rules;
  uint8_t productive[MAX_X], nullable[MAX_X];
} xgrammar;

static int utf8_put(uint32_t c, uint8_t *out) {
  if (c < 0x80) { out[0] = (uint8_t)c; return 1; }
  if (c < 0x800) { out[0] = (uint8_t)(0xC0 | c >> 6); out[1] = (uint8_t)(0x80 | (c & 0x3F)); return 2; }
  if (c < 0x10000) {
    out[0] = (uint8_t)(0xE0 | c >> 12); out[1] = (uint8_t)(0x80 | (c >> 6 & 0x3F));
    out[2] = (uint8_t)(0x80 | (c & 0x3F)); return 3;
  }
  out[0] = (uint8_t)(0xF0 | c >> 18); out[1] = (uint8_t)(0x80 | (c >> 12 & 0x3F));
  out[2] = (uint8_t)(0x80 | (c >> 6 & 0x3F)); out[3] = (uint8_t)(0x80 | (c & 0x3F));
  return 4;
}

/* Fixed points of "can match the empty string" and "matches something". */
static bool x_flag(const xgrammar *g, int e, const uint8_t *flag, bool productive) {
  const xnode *x = &g->n[e];
  switch (x->kind) {
  case X_LIT: return productive || x->lit[0] == '\0';
  case X_RANGE: return productive;
  case X_SEQ:
    for (int i = 0; i < x->n_kids; i++)
      if (!flag[x->kids[i]]) return false;
    return true;
  case X_ALT:
    for (int i = 0; i < x->n_kids; i++)
      if (flag[x->kids[i]]) return true;
    return false;
  case X_REP: return x->min == 0 || flag[x->kids[0]];
  default: return flag[g->body[x->rule]];
  }
}

static void x_analyse(xgrammar *g) {
  for (int pass = 0; pass < 2; pass++) {
    uint8_t *flag = pass == 0 ? g->productive : g->nullable;
    bool changed = true;
    memset(flag, 0, MAX_X);
    while (changed) {
      changed = false;
      for (int e = 0; e < g->count; e++)
        if (!flag[e] && x_flag(g, e, flag, pass == 0)) flag[e] = 1, changed = true;
    }
  }
}

/* The recognizer's obligations: a linked stack of expressions (with a
 * repetition's remaining counts) still to match. */
typedef struct oblig {
  int e;
  uint32_t min, max; /* for X_REP entries: what is left */
  const struct oblig *next;
} oblig;

static bool all_flag(const xgrammar *g, const oblig *o, const uint8_t *flag) {
  for (; o ; o = o->next) {
    const xnode *x = &g->n[o->e];
    if (x->kind == X_REP) {
      if (o->min > 0 && !flag[x->kids[0]]) return false;
    } else if (!flag[o->e]) return false;
  }
  return true;
}

/* Can s[i..n) be matched by the obligations? prefix: it only has to be a
 * prefix of what they match (what is left must still be completable). */
static bool viable(const xgrammar *g, const uint8_t *s, size_t i, size_t n, const oblig *o,
                   bool prefix, int depth) {
  const xnode *x;
  if (depth > 2000) return false; /* cannot happen without left recursion */
  if (i == n) return all_flag(g, o, prefix ? g->productive : g->nullable);
  if (o == NULL) return false;
  x = &g->n[o->e];
  switch (x->kind) {
  case X_LIT: {
    size_t len = strlen(x->lit), k = 0;
    while (k < len && i + k < n && (uint8_t)x->lit[k] == s[i + k]) k++;
    if (k == len) return viable(g, s, i + len, n, o->next, prefix, depth + 1);
    return prefix && i + k == n && all_flag(g, o->next, g->productive);
  }
  case X_RANGE: {
    for (uint32_t c = x->lo; c <= x->hi; c++) {
      uint8_t enc[4];
      int len = utf8_put(c, enc), k = 0;
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      while (k < len && i + (size_t)k < n && enc[k] == s[i + (size_t)k]) k++;
      if (k == len && viable(g, s, i + (size_t)len, n, o->next, prefix, depth + 1)) return true;
      if (k < len && i + (size_t)k == n && prefix && all_flag(g, o->next, g->productive)) return true;
    }
    return false;
  }
  case X_SEQ: {
    oblig chain[4];
    const oblig *next = o->next;
    for (int k = x->n_kids - 1; k >= 0; k--) {
      chain[k] = (oblig){x->kids[k], g->n[x->kids[k]].min, g->n[x->kids[k]].max, next};
      next = &chain[k];
    }
    return viable(g, s, i, n, next, prefix, depth + 1);
  }
  case X_ALT:
    for (int k = 0; k < x->n_kids; k++) {
      oblig one = {x->kids[k], g->n[x->kids[k]].min, g->n[x->kids[k]].max, o->next};
      if (viable(g, s, i, n, &one, prefix, depth + 1)) return true;
    }
    return false;
  case X_REP: {
    int kid = x->kids[0];
    oblig again = {o->e, o->min > 0 ? o->min - 1 : 0,
                   o->max == UINT32_MAX ? UINT32_MAX : o->max - 1, o->next};
    oblig one = {kid, g->n[kid].min, g->n[kid].max, &again};
    if (o->min == 0 && viable(g, s, i, n, o->next, prefix, depth + 1)) return true;
    return o->max > 0 && viable(g, s, i, n, &one, prefix, depth + 1);
  }
  default: {
    int b = g->body[x->rule];
    oblig body = {b, g->n[b].min, g->n[b].max, o->next};
    return viable(g, s, i, n, &body, prefix, depth + 1);
  }
  }
}

static bool x_viable(const xgrammar *g, const uint8_t *s, size_t n, bool prefix) {
  oblig root = {g->body[0], g->n[g->body[0]].min, g->n[g->body[0]].max, NULL};
  return viable(g, s, 0, n, &root, prefix, 0);
}

/* ---- building the same trees with the builder ---- */

static tl_gexpr x_build(tl_gbuilder *b, const xgrammar *g, const uint32_t *rules, int e) {
  const xnode *x = &g->n[e];
  tl_gexpr kids[4];
  switch (x->kind) {
  case X_LIT: return tl_gb_literal(b, (const uint8_t *)x->lit, strlen(x->lit));
  case X_RANGE: {
    uint32_t r[2] = {x->lo, x->hi};
    return tl_gb_class(b, r, 1, false);
  }
  case X_SEQ:
  case X_ALT:
    for (int i = 0; i < x->n_kids; i++) kids[i] = x_build(b, g, rules, x->kids[i]);
    return x->kind == X_SEQ ? tl_gb_seq(b, kids, (size_t)x->n_kids)
                            : tl_gb_alt(b, kids, (size_t)x->n_kids);
  case X_REP:
    return tl_gb_repeat(b, x_build(b, g, rules, x->kids[0]), x->min,
                        x->max == UINT32_MAX ? TL_GB_UNBOUNDED : x->max);
  default: return tl_gb_ref(b, rules[x->rule]);
  }
}

static tl_status x_compile(tl_arena *a, const xgrammar *g, const tl_grammar **out, tl_gerror *err) {
  tl_gbuilder *b;
  uint32_t rules[MAX_RULES];
  static const char *names[MAX_RULES] = {"root", "r1", "r2", "r3"};
  tl_status st = tl_gb_new(a, &b);
  if (st != TL_OK) return st;
  for (int r = 0; r < g->n_rules; r++) rules[r] = tl_gb_rule(b, names[r], strlen(names[r]));
  for (int r = 0; r < g->n_rules; r++) tl_gb_define(b, rules[r], x_build(b, g, rules, g->body[r]));
  return tl_gb_finish(b, rules[0], out, err);
}

/* ---- random grammars ---- */

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static int x_add(xgrammar *g, xnode n) {
  g->n[g->count] = n;
  return g->count++;
}

static int x_random(xgrammar *g, uint64_t *s, int depth) {
  static const char *lits[] = {"a", "b", "ab", "ba", "c", "", "abc", "\xc3\xa9"};
  static const uint32_t ranges[][2] = {{'a', 'c'}, {'b', 'b'}, {0xE9, 0xEB}, {0x3B1, 0x3B3},
                                       {0x1F600, 0x1F601}};
  xnode x;
  int pick = (int)(rng_next(s) % (depth >= 3 ? 3 : 7));
  memset(&x, 0, sizeof x);
  if (g->count > MAX_X - 8) pick = 0;
  switch (pick) {
  case 0:
    x.kind = X_LIT;
    x.lit = lits[rng_next(s) % 8];
    break;
  case 1: {
    int r = (int)(rng_next(s) % 5);
    x.kind = X_RANGE;
    x.lo = ranges[r][0];
    x.hi = ranges[r][1];
    break;
  }
  case 2:
    x.kind = X_REF;
    x.rule = (int)(rng_next(s) % (uint64_t)g->n_rules);
    break;
  case 3:
  case 4:
    x.kind = pick == 3 ? X_SEQ : X_ALT;
    x.n_kids = 2 + (int)(rng_next(s) % 2);
    for (int i = 0; i < x.n_kids; i++) x.kids[i] = x_random(g, s, depth + 1);
    break;
  default:
    x.kind = X_REP;
    x.kids[0] = x_random(g, s, depth + 1);
    x.min = (uint32_t)(rng_next(s) % 3);
    x.max = rng_next(s) % 3 == 0 ? UINT32_MAX : x.min + (uint32_t)(rng_next(s) % 3);
    break;
  }
  return x_add(g, x);
}

/* The test vocabulary: every string over {a, b, c} up to length 3, the
 * pieces of é, α and 😀 (whole and split across tokens), and "x". */
#define MAX_TOKENS 64
typedef struct tvocab {
  const uint8_t *bytes[MAX_TOKENS];
  uint32_t lens[MAX_TOKENS];
  uint8_t store[MAX_TOKENS][8];
  uint32_t n;
} tvocab;

static void tv_add(tvocab *v, const char *s, size_t len) {
  memcpy(v->store[v->n], s, len);
  v->bytes[v->n] = v->store[v->n];
  v->lens[v->n++] = (uint32_t)len;
}

static void tv_make(tvocab *v) {
  static const char *extra[] = {"\xc3", "\xa9", "\xc3\xa9", "\xce\xb1", "\xce", "\xf0\x9f",
                                "\x98\x80", "\xf0\x9f\x98\x81", "a\xc3", "x"};
  char s[4];
  v->n = 0;
  for (int len = 1; len <= 3; len++) {
    int total = len == 1 ? 3 : len == 2 ? 9 : 27;
    for (int k = 0; k < total; k++) {
      int c = k;
      for (int i = 0; i < len; i++, c /= 3) s[i] = (char)('a' + c % 3);
      tv_add(v, s, (size_t)len);
    }
  }
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) tv_add(v, extra[i], strlen(extra[i]));
  v->bytes[v->n] = NULL; /* a special token: never in a mask */
  v->lens[v->n++] = 0;
}

static bool bit(const uint64_t *m, uint32_t id) { return (m[id >> 6] >> (id & 63)) & 1u; }

static void masks_equal_the_recognizer_on_random_grammars(tl_test_ctx *t) {
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  tvocab v;
  int compiled = 0, refused = 0, steps = 0;
  tv_make(&v);
  for (int round = 0; round < 300; round++) {
    static xgrammar g;
    tl_arena a;
    const tl_grammar *gr;
    const tl_gvocab *vocab;
    tl_gmatcher *m;
    tl_gerror err = {0};
    uint8_t text[64];
    size_t n_text = 0;
    memset(&g, 0, sizeof g);
    g.n_rules = 1 + (int)(rng_next(&seed) % 3);
    for (int r = 0; r < g.n_rules; r++) g.body[r] = x_random(&g, &seed, 0);
    x_analyse(&g);
    TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
    if (x_compile(&a, &g, &gr, &err) != TL_OK) {
      /* only left recursion and empty languages are refused */
      if (!TL_EXPECT(t, err.status == TL_ERR_INVALID_ARGUMENT)) return;
      if (!TL_EXPECT(t, !g.productive[g.body[0]] || tl_test_contains(err.message, "left recursion")))
        return;
      refused++;
      continue;
    }
    if (!TL_EXPECT(t, g.productive[g.body[0]])) return;
    compiled++;
    if (!TL_EXPECT_OK(t, tl_gvocab_build(&a, v.n, v.bytes, v.lens, &vocab))) return;
    if (!TL_EXPECT_OK(t, tl_gmatcher_new(&a, gr, vocab, 0, &m))) return;
    for (int step_i = 0; step_i < 6; step_i++) {
      uint64_t allow[1];
      bool eos;
      uint32_t allowed[MAX_TOKENS], n_allowed = 0;
      if (!TL_EXPECT_OK(t, tl_gmatcher_mask(m, allow, &eos))) return;
      if (!TL_EXPECT(t, eos == x_viable(&g, text, n_text, false))) return;
      if (!TL_EXPECT(t, eos == tl_gmatcher_accepting(m))) return;
      for (uint32_t id = 0; id < v.n; id++) {
        uint8_t probe[64];
        bool want = false;
        if (v.bytes[id] ) {
          memcpy(probe, text, n_text);
          memcpy(probe + n_text, v.bytes[id], v.lens[id]);
          want = x_viable(&g, probe, n_text + v.lens[id], true);
        }
        if (!TL_EXPECT(t, bit(allow, id) == want)) return;
        if (want) allowed[n_allowed++] = id;
      }
      steps++;
      /* finished: nothing can follow (a live state may still have no
       * token here: the vocabulary lacks the byte it needs) */
      if (tl_gmatcher_finished(m) && !TL_EXPECT(t, n_allowed == 0 && eos)) return;
      if (n_allowed == 0) break;
      {
        uint32_t id = allowed[rng_next(&seed) % n_allowed];
        if (!TL_EXPECT_OK(t, tl_gmatcher_accept(m, v.bytes[id], v.lens[id]))) return;
        memcpy(text + n_text, v.bytes[id], v.lens[id]);
        n_text += v.lens[id];
      }
    }
  }
  /* the random grammars exercised both paths */
  TL_EXPECT(t, compiled > 100 && refused > 0 && steps > 300);
}

static tl_status compile_one(tl_arena *a, tl_gexpr (*make)(tl_gbuilder *, uint32_t),
                             const tl_grammar **g, tl_gerror *err);
static tl_gexpr ab_as_literal(tl_gbuilder *b, uint32_t root);

/* root ::= "ab" | "a" "c"* */
static tl_gexpr ab_or_a_c_star(tl_gbuilder *b, uint32_t root) {
  tl_gexpr e[2], s[2];
  (void)root;
  e[0] = tl_gb_literal(b, (const uint8_t *)"ab", 2);
  s[0] = tl_gb_literal(b, (const uint8_t *)"a", 1);
  s[1] = tl_gb_repeat(b, tl_gb_literal(b, (const uint8_t *)"c", 1), 0, TL_GB_UNBOUNDED);
  e[1] = tl_gb_seq(b, s, 2);
  return tl_gb_alt(b, e, 2);
}

/* A hand-written case: the mask, EOS, refusal, reset, restart. */
static void a_small_grammar_masks_as_specified(tl_test_ctx *t) {
  tl_arena a;
  tl_gbuilder *b;
  const tl_grammar *g;
  const tl_gvocab *v;
  tl_gmatcher *m;
  tl_gerror err = {0};
  /* root ::= "ab" | "a" "c"* */
  static const char *toks[] = {"a", "b", "ab", "c", "cc", "x", "abc"};
  const uint8_t *bytes[7];
  uint32_t lens[7];
  uint64_t allow[1];
  bool eos;
  uint32_t root;
  tl_gexpr e[2], c;
  for (int i = 0; i < 7; i++) bytes[i] = (const uint8_t *)toks[i], lens[i] = (uint32_t)strlen(toks[i]);
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  TL_EXPECT_OK(t, tl_gb_new(&a, &b));
  root = tl_gb_rule(b, "root", 4);
  c = tl_gb_literal(b, (const uint8_t *)"c", 1);
  e[0] = tl_gb_literal(b, (const uint8_t *)"ab", 2);
  {
    tl_gexpr s[2] = {tl_gb_literal(b, (const uint8_t *)"a", 1), tl_gb_repeat(b, c, 0, TL_GB_UNBOUNDED)};
    e[1] = tl_gb_seq(b, s, 2);
  }
  tl_gb_define(b, root, tl_gb_alt(b, e, 2));
  if (!TL_EXPECT_OK(t, tl_gb_finish(b, root, &g, &err))) return;
  TL_EXPECT_OK(t, tl_gvocab_build(&a, 7, bytes, lens, &v));
  TL_EXPECT_OK(t, tl_gmatcher_new(&a, g, v, 0, &m));
  TL_EXPECT_OK(t, tl_gmatcher_mask(m, allow, &eos));
  TL_EXPECT_EQ_U64(t, allow[0], 0x1u | 0x4u); /* a, ab */
  TL_EXPECT(t, !eos);
  TL_EXPECT_STATUS(t, tl_gmatcher_accept(m, (const uint8_t *)"x", 1), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_gmatcher_accept(m, (const uint8_t *)"a", 1));
  TL_EXPECT_OK(t, tl_gmatcher_mask(m, allow, &eos));
  TL_EXPECT_EQ_U64(t, allow[0], 0x2u | 0x8u | 0x10u); /* b, c, cc */
  TL_EXPECT(t, eos);
  TL_EXPECT_OK(t, tl_gmatcher_accept(m, (const uint8_t *)"b", 1));
  TL_EXPECT(t, tl_gmatcher_finished(m) && tl_gmatcher_accepting(m));
  tl_gmatcher_reset(m);
  TL_EXPECT(t, !tl_gmatcher_accepting(m));
  /* a restart takes the same grammar compiled again, and no other */
  {
    const tl_grammar *same, *other;
    tl_gerror err2 = {0};
    TL_EXPECT_OK(t, compile_one(&a, ab_or_a_c_star, &same, &err2));
    TL_EXPECT_OK(t, compile_one(&a, ab_as_literal, &other, &err2));
    TL_EXPECT_OK(t, tl_gmatcher_restart(m, same, TL_GM_LEADING_NEWLINES));
    TL_EXPECT_OK(t, tl_gmatcher_accept(m, (const uint8_t *)"\na", 2));
    TL_EXPECT(t, tl_gmatcher_accepting(m));
    TL_EXPECT_STATUS(t, tl_gmatcher_restart(m, other, 0), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT(t, tl_gmatcher_accepting(m)); /* unchanged */
  }
}

static tl_status compile_one(tl_arena *a, tl_gexpr (*make)(tl_gbuilder *, uint32_t),
                             const tl_grammar **g, tl_gerror *err) {
  tl_gbuilder *b;
  uint32_t root;
  tl_status st = tl_gb_new(a, &b);
  if (st != TL_OK) return st;
  root = tl_gb_rule(b, "root", 4);
  tl_gb_define(b, root, make(b, root));
  return tl_gb_finish(b, root, g, err);
}

static tl_gexpr left_recursive(tl_gbuilder *b, uint32_t root) {
  tl_gexpr s[2] = {tl_gb_ref(b, root), tl_gb_literal(b, (const uint8_t *)"a", 1)};
  tl_gexpr alt[2] = {tl_gb_seq(b, s, 2), tl_gb_literal(b, (const uint8_t *)"b", 1)};
  return tl_gb_alt(b, alt, 2);
}

static tl_gexpr star_of_empty(tl_gbuilder *b, uint32_t root) {
  (void)root;
  return tl_gb_repeat(b, tl_gb_literal(b, NULL, 0), 0, TL_GB_UNBOUNDED);
}

static tl_gexpr never_ends(tl_gbuilder *b, uint32_t root) {
  tl_gexpr s[2] = {tl_gb_literal(b, (const uint8_t *)"a", 1), tl_gb_ref(b, root)};
  return tl_gb_seq(b, s, 2);
}

static tl_gexpr undefined_ref(tl_gbuilder *b, uint32_t root) {
  (void)root;
  return tl_gb_ref(b, tl_gb_rule(b, "value", 5));
}

static void bad_grammars_are_refused_with_the_rule_named(tl_test_ctx *t) {
  tl_arena a;
  const tl_grammar *g;
  tl_gerror err = {0};
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  TL_EXPECT_STATUS(t, compile_one(&a, left_recursive, &g, &err), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, tl_test_contains(err.message, "left recursion") && tl_test_contains(err.message, "'root'"));
  memset(&err, 0, sizeof err);
  TL_EXPECT_STATUS(t, compile_one(&a, star_of_empty, &g, &err), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, tl_test_contains(err.message, "empty"));
  memset(&err, 0, sizeof err);
  TL_EXPECT_STATUS(t, compile_one(&a, never_ends, &g, &err), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, tl_test_contains(err.message, "matches no text"));
  memset(&err, 0, sizeof err);
  TL_EXPECT_STATUS(t, compile_one(&a, undefined_ref, &g, &err), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, tl_test_contains(err.message, "undefined rule 'value'"));
}

/* The digest is the lowered form's: the same language written through
 * different expression shapes that lower alike has one digest, a changed
 * byte another. */
static tl_gexpr ab_as_literal(tl_gbuilder *b, uint32_t root) {
  (void)root;
  return tl_gb_literal(b, (const uint8_t *)"ab", 2);
}
static tl_gexpr ab_as_sequence(tl_gbuilder *b, uint32_t root) {
  tl_gexpr s[2] = {tl_gb_literal(b, (const uint8_t *)"a", 1), tl_gb_literal(b, (const uint8_t *)"b", 1)};
  (void)root;
  return tl_gb_seq(b, s, 2);
}
static tl_gexpr ac_as_literal(tl_gbuilder *b, uint32_t root) {
  (void)root;
  return tl_gb_literal(b, (const uint8_t *)"ac", 2);
}

static void digests_name_the_lowered_grammar(tl_test_ctx *t) {
  tl_arena a;
  const tl_grammar *g1, *g2, *g3;
  tl_gerror err = {0};
  uint8_t d1[32], d2[32], d3[32];
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  TL_EXPECT_OK(t, compile_one(&a, ab_as_literal, &g1, &err));
  TL_EXPECT_OK(t, compile_one(&a, ab_as_sequence, &g2, &err));
  TL_EXPECT_OK(t, compile_one(&a, ac_as_literal, &g3, &err));
  tl_grammar_digest(g1, d1);
  tl_grammar_digest(g2, d2);
  tl_grammar_digest(g3, d3);
  TL_EXPECT_MEM(t, d1, d2, 32);
  TL_EXPECT(t, memcmp(d1, d3, 32) != 0);
}

/* A class of every scalar value but '"' matches UTF-8 only: tokens that
 * split a character are allowed, an invalid byte or a lone continuation
 * byte is not, and the mask stays right after the tables are flushed. */
static void classes_take_utf8_split_across_tokens(tl_test_ctx *t) {
  tl_arena a;
  tl_gbuilder *b;
  const tl_grammar *g;
  const tl_gvocab *v;
  tl_gmatcher *m;
  tl_gerror err = {0};
  static const char *toks[] = {"\"", "\xc3", "\xa9", "\xff", "\xed\xa0\x80", "q\"", "\xe2\x82"};
  const uint8_t *bytes[7];
  uint32_t lens[7], root, quote[2] = {'"', '"'};
  uint64_t allow[1];
  bool eos;
  for (int i = 0; i < 7; i++) bytes[i] = (const uint8_t *)toks[i], lens[i] = (uint32_t)strlen(toks[i]);
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  TL_EXPECT_OK(t, tl_gb_new(&a, &b));
  root = tl_gb_rule(b, "root", 4);
  {
    tl_gexpr s[2] = {tl_gb_repeat(b, tl_gb_class(b, quote, 1, true), 0, TL_GB_UNBOUNDED),
                     tl_gb_literal(b, (const uint8_t *)"\"", 1)};
    tl_gb_define(b, root, tl_gb_seq(b, s, 2));
  }
  if (!TL_EXPECT_OK(t, tl_gb_finish(b, root, &g, &err))) return;
  TL_EXPECT_OK(t, tl_gvocab_build(&a, 7, bytes, lens, &v));
  /* the smallest matcher: its tables flush often */
  {
    tl_arena small;
    void *mem;
    size_t need = tl_gmatcher_min_bytes(g, v) + 4096;
    TL_EXPECT_OK(t, tl_arena_alloc(&a, need, 64, &mem));
    TL_EXPECT_OK(t, tl_arena_init(&small, mem, need));
    TL_EXPECT_OK(t, tl_gmatcher_new(&small, g, v, 0, &m));
  }
  TL_EXPECT_OK(t, tl_gmatcher_mask(m, allow, &eos));
  /* '"', 0xC3 (a lead byte), "q\"", the first two bytes of '€' */
  TL_EXPECT_EQ_U64(t, allow[0], 0x1u | 0x2u | 0x20u | 0x40u);
  TL_EXPECT_OK(t, tl_gmatcher_accept(m, (const uint8_t *)"\xc3", 1));
  TL_EXPECT_OK(t, tl_gmatcher_mask(m, allow, &eos));
  TL_EXPECT_EQ_U64(t, allow[0], 0x4u); /* only the continuation byte */
  TL_EXPECT(t, !eos);
}


/* A long bounded repetition: states past TL_GCANON_BYTES copies from its
 * end share one canonical image for short tokens and walk for long ones;
 * every mask must still be the exact one (checked against accepting each
 * token's bytes on a second matcher replaying the text). */
static tl_gexpr ab_up_to_60_then_dot(tl_gbuilder *b, uint32_t root) {
  uint32_t ab[2] = {'a', 'b'};
  tl_gexpr s[2];
  (void)root;
  s[0] = tl_gb_repeat(b, tl_gb_class(b, ab, 1, false), 0, 60);
  s[1] = tl_gb_literal(b, (const uint8_t *)".", 1);
  return tl_gb_seq(b, s, 2);
}

static void long_repetitions_mask_exactly(tl_test_ctx *t) {
  static char store[8][48];
  const uint8_t *bytes[8];
  uint32_t lens[8];
  static const uint32_t sizes[8] = {1, 1, 2, 1, 25, 30, 31, 3};
  tl_arena a;
  const tl_grammar *g;
  const tl_gvocab *v;
  tl_gmatcher *m, *ref;
  tl_gerror err = {0};
  size_t text_len = 0;
  uint8_t text[128];
  /* "a" "b" "ab" "." a*25 b*30 a*30"." "ba." */
  for (int i = 0; i < 8; i++) {
    for (uint32_t k = 0; k < sizes[i]; k++) store[i][k] = i == 5 ? 'b' : 'a';
    bytes[i] = (const uint8_t *)store[i];
    lens[i] = sizes[i];
  }
  store[1][0] = 'b';
  store[2][1] = 'b';
  store[3][0] = '.';
  store[6][30] = '.';
  memcpy(store[7], "ba.", 3);
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  if (!TL_EXPECT_OK(t, compile_one(&a, ab_up_to_60_then_dot, &g, &err))) return;
  TL_EXPECT_OK(t, tl_gvocab_build(&a, 8, bytes, lens, &v));
  TL_EXPECT_OK(t, tl_gmatcher_new(&a, g, v, 0, &m));
  TL_EXPECT_OK(t, tl_gmatcher_new(&a, g, v, 0, &ref));
  /* walk 2 bytes at a time through 60 copies, checking every mask */
  for (int step_i = 0; step_i <= 30; step_i++) {
    uint64_t allow[1];
    bool eos;
    TL_EXPECT_OK(t, tl_gmatcher_mask(m, allow, &eos));
    for (uint32_t id = 0; id < 8; id++) {
      bool want;
      tl_gmatcher_reset(ref);
      want = tl_gmatcher_accept(ref, text, text_len) == TL_OK &&
             tl_gmatcher_accept(ref, bytes[id], lens[id]) == TL_OK;
      if (!TL_EXPECT(t, bit(allow, id) == want)) return;
    }
    if (step_i == 30) break;
    TL_EXPECT_OK(t, tl_gmatcher_accept(m, bytes[2], 2)); /* "ab" */
    memcpy(text + text_len, "ab", 2);
    text_len += 2;
  }
  /* 60 copies taken: no more */
  TL_EXPECT_STATUS(t, tl_gmatcher_accept(m, bytes[2], 2), TL_ERR_INVALID_ARGUMENT);
}

/* The walk allows whole subtrees without visiting them where a state's
 * byte categories lead along a countdown (a string of at most n
 * characters) or back to the state (a string's content), UTF-8
 * characters included. Every mask must be the exact one anyway: checked
 * against accepting each token's bytes on a second matcher replaying the
 * text, over JSON Schemas and a vocabulary of words, quotes, whole,
 * split and broken UTF-8, and random mixes of them. */
#define SHORTCUT_TOKENS 400
static void shortcut_masks_equal_byte_level_accepts(tl_test_ctx *t) {
  static const char *const schemas[] = {
      "{\"type\":\"string\"}",
      "{\"type\":\"string\",\"maxLength\":5}",
      "{\"type\":\"string\",\"minLength\":2,\"maxLength\":30}",
      ("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\",\"maxLength\":40},"
       "\"t\":{\"type\":\"string\"}},\"required\":[\"s\",\"t\"]}"),
      "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":3}",
      "{\"type\":\"string\",\"pattern\":\"^[a-z\\u00e9 ]{0,12}$\"}",
      /* UTF-8 characters that end in different states */
      "{\"type\":\"string\",\"pattern\":\"^x[^\\u20ac]*(\\u20ac[^\\u20ac]*)?$\"}",
      /* a countdown whose end still takes safe bytes */
      "{\"type\":\"string\",\"pattern\":\"^[ -~]{3}a*$\"}",
  };
  static const char *const fixed[] = {
      "\"", "\",", "\"}", "\"]", "\\\"", "\\n", "\n", " ", "a", "ab", "abc", "hello", " world",
      "\xc3\xa9", "\xe2\x82\xac", "\xe4\xb8\xad\xe6\x96\x87", "\xf0\x9f\x98\x80", "\xe2\x82",
      "\xac", "\xf0\x9f", "\xc0\x80", "\xed\xa0\x80", "\xff", "\xc3\xa9\"", "a\xc3\xa9",
      "\xc3\xa9,", "{\"", "{\"s\":\"", "\":\"", "\",\"t\":\"", "[\"", "1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
      /* subtrees ("zz", "qq", "yy") whose one fault is a broken character */
      "zz", "zz\xc3\xa9", "zz\xa9", "zz\xc3", "qq", "qq\xe2\x82\xac", "qq\xc3\xa9\xff",
      "yy", "yy\xed\x9f\xbf", "yy\xed\xa0\x80" /* the last a surrogate */,
      /* characters to count ("ww"), to end apart ("x"), to leave a countdown at each depth */
      "ww", "ww\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", "ww\xc3\xa9\xc3\xa9", "x",
      "x\xc3\xa9\xe2\x82\xac\xc3\xa9", "x\xc3\xa9\xc3\xa9\xe2\x82\xac", "x\xe2\x82\xac\xe2\x82\xac",
      "x\xe2\x82\xac\xc3\xa9\xe2\x82\xac",
      "a\"", "ab\"", "abc\"", "abcd\"", "abcde\"", "abcdef\""};
  static const uint8_t alphabet[] = {'a', ' ', '"', '\\', ',', '}', ':', 'n', 0xC3, 0xA9, 0xE2,
                                     0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, '1', '\n', '{', '['};
  static uint8_t store[SHORTCUT_TOKENS][8];
  const uint8_t *bytes[SHORTCUT_TOKENS];
  uint32_t lens[SHORTCUT_TOKENS], n = 0, checked = 0;
  uint64_t seed = 0x243F6A8885A308D3ull;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++, n++) {
    bytes[n] = (const uint8_t *)fixed[i];
    lens[n] = (uint32_t)strlen(fixed[i]);
  }
  for (; n < SHORTCUT_TOKENS; n++) {
    lens[n] = 1 + (uint32_t)(rng_next(&seed) % 8);
    for (uint32_t k = 0; k < lens[n]; k++) store[n][k] = alphabet[rng_next(&seed) % sizeof alphabet];
    bytes[n] = store[n];
  }
  /* per schema four walks: the shortest allowed token at every step (deep
   * into each string), then three random ones */
  for (size_t run = 0; run < 4 * sizeof schemas / sizeof schemas[0]; run++) {
    const char *schema = schemas[run / 4];
    bool shortest = run % 4 == 0;
    tl_arena a;
    const tl_grammar *g;
    const tl_gvocab *v;
    tl_gmatcher *m, *ref;
    tl_gerror err = {0};
    uint8_t text[512];
    size_t text_len = 0;
    TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
    if (!TL_EXPECT_OK(t, tl_grammar_from_json_schema(&a, (const uint8_t *)schema, strlen(schema),
                                                      &g, &err)) ||
        !TL_EXPECT_OK(t, tl_gvocab_build(&a, n, bytes, lens, &v)) ||
        !TL_EXPECT_OK(t, tl_gmatcher_new(&a, g, v, 0, &m)) ||
        !TL_EXPECT_OK(t, tl_gmatcher_new(&a, g, v, 0, &ref)))
      return;
    for (int step_i = 0; step_i < 40; step_i++) {
      uint64_t allow[(SHORTCUT_TOKENS + 63) / 64];
      uint32_t allowed[SHORTCUT_TOKENS], n_allowed = 0, id;
      bool eos;
      TL_EXPECT_OK(t, tl_gmatcher_mask(m, allow, &eos));
      for (id = 0; id < n; id++) {
        bool want;
        tl_gmatcher_reset(ref);
        want = tl_gmatcher_accept(ref, text, text_len) == TL_OK &&
               tl_gmatcher_accept(ref, bytes[id], lens[id]) == TL_OK;
        if (!TL_EXPECT(t, bit(allow, id) == want)) {
          tl_test_print(t, schema);
          tl_test_print(t, "\n");
          return;
        }
        if (want) allowed[n_allowed++] = id;
        checked++;
      }
      if (n_allowed == 0) break;
      id = allowed[rng_next(&seed) % n_allowed];
      for (uint32_t k = 0; shortest && k < n_allowed; k++)
        if (lens[allowed[k]] < lens[id]) id = allowed[k];
      if (text_len + lens[id] > sizeof text) break;
      TL_EXPECT_OK(t, tl_gmatcher_accept(m, bytes[id], lens[id]));
      memcpy(text + text_len, bytes[id], lens[id]);
      text_len += lens[id];
    }
  }
  TL_EXPECT(t, checked > 100000);
}

/* A state of more than 64 stacks steps byte class by byte class without
 * signatures. root ::= "q" [a-X_i] D_i "!" for i < 80, X_i = 'a' + i % 26,
 * D_i = i % 10: after "q" the state holds 80 stacks, one per alternative,
 * and every mask must be what the alternatives say. */
static bool wide_allows(const char *text, size_t n, uint8_t next) {
  for (int i = 0; i < 80; i++) {
    char alt[4] = {'q', 0, (char)('0' + i % 10), '!'};
    bool ok = true;
    for (size_t k = 0; k <= n && ok; k++) {
      uint8_t c = k < n ? (uint8_t)text[k] : next;
      ok = k >= 4 ? false : k == 1 ? c >= 'a' && c <= 'a' + i % 26 : c == (uint8_t)alt[k];
    }
    if (ok) return true;
  }
  return false;
}

static void wide_states_step_by_class(tl_test_ctx *t) {
  static char text[80 * 32 + 16];
  static const char *const prefixes[] = {"", "q", "qa", "qc", "qz", "qc3", "qz5", "qa0"};
  size_t len = 0;
  tl_arena a;
  const tl_grammar *g;
  tl_gmatcher *m;
  tl_gerror err = {0};
  memcpy(text, "root ::= ", 9);
  len = 9;
  for (int i = 0; i < 80; i++) { /* " | "? "q" [a-X] "D!" */
    static const char part[] = " | \"q\" [a-X] \"D!\"";
    memcpy(text + len, i ? part : part + 3, sizeof part - (i ? 1 : 4));
    len += sizeof part - (i ? 1 : 4);
    text[len - 7] = (char)('a' + i % 26);
    text[len - 3] = (char)('0' + i % 10);
  }
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  if (!TL_EXPECT_OK(t, tl_grammar_from_gbnf(&a, (const uint8_t *)text, len, &g, &err)) ||
      !TL_EXPECT_OK(t, gt_matcher(&a, g, &m)))
    return;
  for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
    uint64_t allow[5];
    bool eos;
    size_t n = strlen(prefixes[p]);
    tl_gmatcher_reset(m);
    if (!TL_EXPECT_OK(t, tl_gmatcher_accept(m, (const uint8_t *)prefixes[p], n))) return;
    TL_EXPECT_OK(t, tl_gmatcher_mask(m, allow, &eos));
    for (uint32_t b = 0; b < 256; b++)
      if (!TL_EXPECT(t, bit(allow, b) == wide_allows(prefixes[p], n, (uint8_t)b))) {
        tl_test_print(t, prefixes[p]);
        tl_test_print(t, "\n");
        return;
      }
  }
}

/* A text whose states outnumber a small matcher's tables, accepted in one
 * call: the matcher flushes on the way (keeping where it started and
 * where the text has got to) instead of running out of memory, and a text
 * refused on the way leaves the state as it was. root ::= [a-z]{0,700} "."
 * makes a new state per letter; the smallest matcher holds a few hundred. */
static void long_accepts_flush_on_the_way(tl_test_ctx *t) {
  static const char grammar[] = "root ::= [a-z]{0,700} \".\"";
  static uint8_t letters[701];
  tl_arena a, small;
  const tl_grammar *g;
  const tl_gvocab *v;
  tl_gmatcher *m;
  tl_gerror err = {0};
  uint64_t before[4], after[4];
  bool eos;
  void *mem;
  size_t need;
  static gt_bytes_vocab bv;
  for (int i = 0; i < 256; i++) {
    bv.byte[i] = (uint8_t)i;
    bv.bytes[i] = &bv.byte[i];
    bv.lens[i] = 1;
  }
  memset(letters, 'a', sizeof letters);
  TL_EXPECT_OK(t, tl_arena_init(&a, region, sizeof region));
  if (!TL_EXPECT_OK(t, tl_grammar_from_gbnf(&a, (const uint8_t *)grammar, sizeof grammar - 1, &g, &err)) ||
      !TL_EXPECT_OK(t, tl_gvocab_build(&a, 256, bv.bytes, bv.lens, &v)))
    return;
  need = tl_gmatcher_min_bytes(g, v);
  TL_EXPECT_OK(t, tl_arena_alloc(&a, need, 64, &mem));
  TL_EXPECT_OK(t, tl_arena_init(&small, mem, need));
  if (!TL_EXPECT_OK(t, tl_gmatcher_new(&small, g, v, 0, &m))) return;
  /* one letter in, then 701 more refused: the state stays */
  TL_EXPECT_OK(t, tl_gmatcher_accept(m, letters, 1));
  TL_EXPECT_OK(t, tl_gmatcher_mask(m, before, &eos));
  TL_EXPECT_STATUS(t, tl_gmatcher_accept(m, letters, 700), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_gmatcher_mask(m, after, &eos));
  TL_EXPECT(t, memcmp(before, after, sizeof before) == 0 && !eos);
  /* 699 more in one call: 700 in all, then only the dot */
  TL_EXPECT_OK(t, tl_gmatcher_accept(m, letters, 699));
  TL_EXPECT_OK(t, tl_gmatcher_mask(m, after, &eos));
  for (uint32_t b = 0; b < 256; b++) TL_EXPECT(t, bit(after, b) == (b == '.'));
  TL_EXPECT_OK(t, tl_gmatcher_accept(m, (const uint8_t *)".", 1));
  TL_EXPECT(t, tl_gmatcher_accepting(m) && tl_gmatcher_finished(m));
  /* from the start, the whole sentence at once */
  tl_gmatcher_reset(m);
  TL_EXPECT_OK(t, tl_gmatcher_accept(m, letters, 700));
  TL_EXPECT_OK(t, tl_gmatcher_accept(m, (const uint8_t *)".", 1));
  TL_EXPECT(t, tl_gmatcher_accepting(m));
}

static const tl_test_case cases[] = {
    TL_CASE(a_small_grammar_masks_as_specified),
    TL_CASE(masks_equal_the_recognizer_on_random_grammars),
    TL_CASE(bad_grammars_are_refused_with_the_rule_named),
    TL_CASE(digests_name_the_lowered_grammar),
    TL_CASE(classes_take_utf8_split_across_tokens),
    TL_CASE(long_repetitions_mask_exactly),
    TL_CASE(shortcut_masks_equal_byte_level_accepts),
    TL_CASE(wide_states_step_by_class),
    TL_CASE(long_accepts_flush_on_the_way),
};
TL_SUITE(match, cases);
