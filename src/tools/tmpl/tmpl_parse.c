/* The template parser: Jinja2 3.1's grammar (jinja2/parser.py) for the
 * subset of docs/template.md, building IR nodes directly. Nodes are made
 * after their children, so every child index is smaller than its parent's
 * and the IR is a tree in post-order. */
#include <stdlib.h>
#include <string.h>

#include "tmpl/tmpl.h"
#include "tmpl_cc.h"

#define NO_NODE UINT32_MAX
#define MAX_RECURSION 200u
#define MAX_ARGS 16u

static cc_tok *cur(cc *c) { return &c->toks[c->pos]; }
static cc_tok *peek(cc *c, size_t k) {
  size_t i = c->pos + k;
  return &c->toks[i < c->n_toks ? i : c->n_toks - 1];
}
static void advance(cc *c) {
  if (c->toks[c->pos].type != TK_EOF) c->pos++;
}
static bool tok_is_op(const cc_tok *t, const char *op) {
  return t->type == TK_OP && strcmp(t->op, op) == 0;
}
static bool tok_is_name(const cc *c, const cc_tok *t, const char *name) {
  return t->type == TK_NAME && t->len == strlen(name) &&
         memcmp(c->src + t->start, name, t->len) == 0;
}

/* A short description of a token for messages. */
static const char *describe(cc *c, const cc_tok *t, char *buf, size_t cap) {
  switch (t->type) {
    case TK_DATA:
      return "template data";
    case TK_VAR_BEGIN:
      return "'{{'";
    case TK_VAR_END:
      return "end of print statement";
    case TK_BLOCK_BEGIN:
      return "'{%'";
    case TK_BLOCK_END:
      return "end of statement block";
    case TK_STRING:
      return "string literal";
    case TK_INT:
      return "integer literal";
    case TK_FLOAT:
      return "float literal";
    case TK_EOF:
      return "end of template";
    case TK_NAME:
    case TK_OP: {
      size_t n = t->len < cap - 3 ? t->len : cap - 3;
      buf[0] = '\'';
      memcpy(buf + 1, c->src + t->start, n);
      buf[n + 1] = '\'';
      buf[n + 2] = '\0';
      return buf;
    }
  }
  return "token";
}

static bool unexpected(cc *c, const char *expected) {
  char b[64];
  cc_tok *t = cur(c);
  return cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, t,
                     "syntax error: expected %s, got %s", expected,
                     describe(c, t, b, sizeof b));
}

static bool expect_op(cc *c, const char *op) {
  if (!tok_is_op(cur(c), op)) {
    char e[8] = "'";
    strcat(e, op);
    strcat(e, "'");
    return unexpected(c, e);
  }
  advance(c);
  return true;
}

static bool expect_type(cc *c, cc_tok_type type, const char *what) {
  if (cur(c)->type != type) return unexpected(c, what);
  advance(c);
  return true;
}

/* ---- nodes and strings -------------------------------------------------- */

static uint32_t intern(cc *c, const char *p, size_t n) {
  for (size_t i = 0; i < c->n_strs; i++)
    if (c->strs[i].len == n && memcmp(c->strs[i].ptr, p, n) == 0)
      return (uint32_t)i;
  if (c->n_strs >= TL_TMPL_MAX_STRINGS) {
    cc_fail_tok(c, TL_ERR_BOUNDS, cur(c), "too many strings in the template");
    return NO_NODE;
  }
  if (c->n_strs == c->cap_strs) {
    size_t nc = c->cap_strs ? c->cap_strs * 2 : 64;
    cc_str *ns = realloc(c->strs, nc * sizeof *ns);
    if (ns == NULL) goto oom;
    c->strs = ns;
    c->cap_strs = nc;
  }
  char *copy = malloc(n + 1);
  if (copy == NULL) goto oom;
  if (n > 0) memcpy(copy, p, n);
  copy[n] = '\0';
  c->strs[c->n_strs].ptr = copy;
  c->strs[c->n_strs].len = n;
  return (uint32_t)c->n_strs++;
oom:
  cc_fail(c, TL_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
  return NO_NODE;
}

static uint32_t node(cc *c, const cc_tok *at, uint32_t op, int64_t a,
                     uint64_t b, uint64_t cc_, const uint32_t *kids,
                     size_t n_kids) {
  if (c->status != TL_OK) return NO_NODE;
  for (size_t i = 0; i < n_kids; i++)
    if (kids[i] == NO_NODE) return NO_NODE;
  if (n_kids > TL_TMPL_MAX_KIDS) {
    cc_fail_tok(c, TL_ERR_BOUNDS, at, "more than %u items in one construct",
                TL_TMPL_MAX_KIDS);
    return NO_NODE;
  }
  if (c->n_nodes >= TL_TMPL_MAX_NODES) {
    cc_fail_tok(c, TL_ERR_BOUNDS, at, "the template is too large");
    return NO_NODE;
  }
  uint32_t depth = 1;
  for (size_t i = 0; i < n_kids; i++)
    if (c->nodes[kids[i]].depth + 1 > depth)
      depth = c->nodes[kids[i]].depth + 1;
  if (depth > TL_TMPL_MAX_DEPTH) {
    cc_fail_tok(c, TL_ERR_BOUNDS, at, "nesting deeper than %u is not supported",
                TL_TMPL_MAX_DEPTH);
    return NO_NODE;
  }
  if (c->n_nodes == c->cap_nodes) {
    size_t nc = c->cap_nodes ? c->cap_nodes * 2 : 256;
    cc_node *nn = realloc(c->nodes, nc * sizeof *nn);
    if (nn == NULL) goto oom;
    c->nodes = nn;
    c->cap_nodes = nc;
  }
  cc_node *nd = &c->nodes[c->n_nodes];
  memset(nd, 0, sizeof *nd);
  if (n_kids > 0) {
    nd->kids = malloc(n_kids * sizeof *kids);
    if (nd->kids == NULL) goto oom;
    memcpy(nd->kids, kids, n_kids * sizeof *kids);
  }
  nd->op = op;
  nd->a = a;
  nd->b = b;
  nd->c = cc_;
  nd->n_kids = (uint32_t)n_kids;
  nd->depth = depth;
  return (uint32_t)c->n_nodes++;
oom:
  cc_fail(c, TL_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
  return NO_NODE;
}

static uint32_t node0(cc *c, const cc_tok *at, uint32_t op, int64_t a,
                      uint64_t b) {
  return node(c, at, op, a, b, 0, NULL, 0);
}
static uint32_t node1(cc *c, const cc_tok *at, uint32_t op, uint64_t b,
                      uint32_t k0) {
  return node(c, at, op, 0, b, 0, &k0, 1);
}
static uint32_t node2(cc *c, const cc_tok *at, uint32_t op, uint64_t b,
                      uint32_t k0, uint32_t k1) {
  uint32_t k[2] = {k0, k1};
  return node(c, at, op, 0, b, 0, k, 2);
}

/* A growable list of node indices. */
typedef struct vec {
  uint32_t *v;
  size_t n, cap;
} vec;
static bool vpush(cc *c, vec *v, uint32_t x) {
  if (x == NO_NODE) return false;
  if (v->n == v->cap) {
    size_t nc = v->cap ? v->cap * 2 : 16;
    uint32_t *nv = realloc(v->v, nc * sizeof *nv);
    if (nv == NULL)
      return cc_fail(c, TL_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
    v->v = nv;
    v->cap = nc;
  }
  v->v[v->n++] = x;
  return true;
}

/* ---- expressions -------------------------------------------------------- */

static uint32_t parse_expression(cc *c, bool with_condexpr);
static uint32_t parse_unary(cc *c, bool with_filter);
static uint32_t parse_tuple(cc *c, bool simplified, bool with_condexpr,
                            const char *extra_end, bool explicit_parens);

static bool enter(cc *c) {
  if (++c->recursion > MAX_RECURSION)
    return cc_fail_tok(c, TL_ERR_BOUNDS, cur(c),
                       "nesting deeper than the parser allows");
  return true;
}

/* Call arguments mapped to a signature's parameters. */
typedef struct args {
  uint32_t pos[MAX_ARGS];
  size_t n_pos;
  uint32_t kw[MAX_ARGS];
  uint32_t kw_name[MAX_ARGS]; /* token index of the keyword name */
  size_t n_kw;
} args;

/* After '(' has been seen: positional and keyword arguments up to ')'. */
static bool parse_call_args(cc *c, args *a) {
  a->n_pos = a->n_kw = 0;
  if (!expect_op(c, "(")) return false;
  while (!tok_is_op(cur(c), ")")) {
    if (a->n_pos + a->n_kw > 0 && !expect_op(c, ",")) return false;
    if (tok_is_op(cur(c), ")")) break;
    if (tok_is_op(cur(c), "*") || tok_is_op(cur(c), "**"))
      return cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, cur(c),
                         "*args and **kwargs are not supported");
    if (a->n_pos + a->n_kw >= MAX_ARGS)
      return cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, cur(c),
                         "more than %u arguments are not supported", MAX_ARGS);
    if (cur(c)->type == TK_NAME && tok_is_op(peek(c, 1), "=")) {
      a->kw_name[a->n_kw] = (uint32_t)c->pos;
      advance(c);
      advance(c);
      uint32_t v = parse_expression(c, true);
      if (v == NO_NODE) return false;
      a->kw[a->n_kw++] = v;
    } else {
      if (a->n_kw > 0)
        return cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, cur(c),
                           "syntax error: positional argument after keyword "
                           "argument");
      uint32_t v = parse_expression(c, true);
      if (v == NO_NODE) return false;
      a->pos[a->n_pos++] = v;
    }
  }
  return expect_op(c, ")");
}

/* Orders arguments by the signature's parameters: kids gets the present
 * ones in parameter order, *mask their presence bits. */
static bool bind_args(cc *c, const cc_tok *at, const char *what,
                      const tl_tmpl_sig *sig, const args *a, vec *kids,
                      uint64_t *mask) {
  uint32_t slot[MAX_ARGS];
  for (size_t i = 0; i < MAX_ARGS; i++) slot[i] = NO_NODE;
  if (a->n_pos > sig->n_params)
    return cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, at,
                       "%s '%s' with %zu positional arguments is not supported",
                       what, sig->name, a->n_pos);
  for (size_t i = 0; i < a->n_pos; i++) slot[i] = a->pos[i];
  for (size_t i = 0; i < a->n_kw; i++) {
    const cc_tok *kt = &c->toks[a->kw_name[i]];
    const char *kn = c->src + kt->start;
    size_t idx = 0, found = SIZE_MAX;
    const char *p = sig->params;
    while (*p) {
      const char *e = strchr(p, ' ');
      size_t l = e ? (size_t)(e - p) : strlen(p);
      if (l == kt->len && memcmp(p, kn, l) == 0) found = idx;
      idx++;
      p += l;
      if (*p == ' ') p++;
    }
    if (found == SIZE_MAX)
      return cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, kt,
                         "keyword argument '%.*s' of %s '%s' is not supported",
                         (int)kt->len, kn, what, sig->name);
    if (slot[found] != NO_NODE)
      return cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, kt,
                         "syntax error: argument '%.*s' given twice",
                         (int)kt->len, kn);
    slot[found] = a->kw[i];
  }
  *mask = 0;
  for (size_t i = 0; i < sig->n_params; i++)
    if (slot[i] != NO_NODE) {
      *mask |= (uint64_t)1 << i;
      if (!vpush(c, kids, slot[i])) return false;
    }
  return true;
}

static bool name_eq(const char *a, const char *p, size_t n) {
  return strlen(a) == n && memcmp(a, p, n) == 0;
}

static const char *const UNSUPPORTED_FUNCS[] = {"range",  "dict",    "lipsum",
                                                "cycler", "joiner",  "super",
                                                "caller", "varargs", "kwargs"};

/* name '(' ... ')' : a global function. */
static uint32_t parse_func_call(cc *c) {
  cc_tok *nt = cur(c);
  const char *nm = c->src + nt->start;
  size_t fn = TL_FN_COUNT_;
  for (size_t i = 0; i < TL_FN_COUNT_; i++)
    if (name_eq(tl_tmpl_funcs[i].name, nm, nt->len)) fn = i;
  if (fn == TL_FN_COUNT_) {
    cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, nt,
                "function '%.*s' is not supported", (int)nt->len, nm);
    return NO_NODE;
  }
  advance(c);
  args a;
  if (!parse_call_args(c, &a)) return NO_NODE;
  vec kids = {0};
  uint32_t r = NO_NODE;
  if (fn == TL_FN_NAMESPACE) {
    if (a.n_pos > 0) {
      cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, nt,
                  "namespace() with positional arguments is not supported");
      goto out;
    }
    for (size_t i = 0; i < a.n_kw; i++) {
      const cc_tok *kt = &c->toks[a.kw_name[i]];
      for (size_t j = 0; j < i; j++) {
        const cc_tok *o = &c->toks[a.kw_name[j]];
        if (o->len == kt->len &&
            memcmp(c->src + o->start, c->src + kt->start, kt->len) == 0) {
          cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, kt,
                      "syntax error: argument given twice");
          goto out;
        }
      }
      uint32_t s = intern(c, c->src + kt->start, kt->len);
      if (s == NO_NODE) goto out;
      if (!vpush(c, &kids, node0(c, kt, TL_OP_STR, 0, s)) ||
          !vpush(c, &kids, a.kw[i]))
        goto out;
    }
  } else {
    if (a.n_kw > 0 || a.n_pos != 1) {
      cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, nt,
                  "%s() takes exactly one positional argument here",
                  tl_tmpl_funcs[fn].name);
      goto out;
    }
    if (!vpush(c, &kids, a.pos[0])) goto out;
  }
  r = node(c, nt, TL_OP_CALL, 0, fn, 0, kids.v, kids.n);
out:
  free(kids.v);
  return r;
}

static uint32_t parse_primary(cc *c) {
  cc_tok *t = cur(c);
  char b[64];
  if (!enter(c)) return NO_NODE;
  uint32_t r = NO_NODE;
  if (t->type == TK_NAME) {
    const char *nm = c->src + t->start;
    if (name_eq("true", nm, t->len) || name_eq("True", nm, t->len)) {
      advance(c);
      r = node0(c, t, TL_OP_BOOL, 1, 0);
    } else if (name_eq("false", nm, t->len) || name_eq("False", nm, t->len)) {
      advance(c);
      r = node0(c, t, TL_OP_BOOL, 0, 0);
    } else if (name_eq("none", nm, t->len) || name_eq("None", nm, t->len)) {
      advance(c);
      r = node0(c, t, TL_OP_NONE, 0, 0);
    } else if (tok_is_op(peek(c, 1), "(")) {
      r = parse_func_call(c);
    } else {
      for (size_t i = 0;
           i < sizeof UNSUPPORTED_FUNCS / sizeof *UNSUPPORTED_FUNCS; i++)
        if (name_eq(UNSUPPORTED_FUNCS[i], nm, t->len)) {
          cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, t,
                      "global '%s' is not supported", UNSUPPORTED_FUNCS[i]);
          goto out;
        }
      uint32_t s = intern(c, nm, t->len);
      advance(c);
      if (s != NO_NODE) r = node0(c, t, TL_OP_NAME, 0, s);
    }
  } else if (t->type == TK_STRING) {
    /* adjacent string literals concatenate */
    size_t total = 0, k = c->pos;
    while (c->toks[k].type == TK_STRING) total += c->toks[k++].slen;
    char *buf = malloc(total + 1);
    if (buf == NULL) {
      cc_fail(c, TL_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
      goto out;
    }
    size_t off = 0;
    while (cur(c)->type == TK_STRING) {
      memcpy(buf + off, cur(c)->sval, cur(c)->slen);
      off += cur(c)->slen;
      advance(c);
    }
    uint32_t s = intern(c, buf, total);
    free(buf);
    if (s != NO_NODE) r = node0(c, t, TL_OP_STR, 0, s);
  } else if (t->type == TK_INT) {
    advance(c);
    r = node0(c, t, TL_OP_INT, t->ival, 0);
  } else if (t->type == TK_FLOAT) {
    advance(c);
    uint64_t bits;
    memcpy(&bits, &t->fval, sizeof bits);
    r = node0(c, t, TL_OP_FLOAT, 0, bits);
  } else if (tok_is_op(t, "(")) {
    advance(c);
    r = parse_tuple(c, false, true, NULL, true);
    if (r != NO_NODE && !expect_op(c, ")")) r = NO_NODE;
  } else if (tok_is_op(t, "[") || tok_is_op(t, "{")) {
    bool is_dict = tok_is_op(t, "{");
    const char *close = is_dict ? "}" : "]";
    advance(c);
    vec items = {0};
    while (!tok_is_op(cur(c), close)) {
      if (items.n > 0 && !expect_op(c, ",")) goto list_out;
      if (tok_is_op(cur(c), close)) break;
      if (!vpush(c, &items, parse_expression(c, true))) goto list_out;
      if (is_dict) {
        if (!expect_op(c, ":")) goto list_out;
        if (!vpush(c, &items, parse_expression(c, true))) goto list_out;
      }
    }
    if (expect_op(c, close))
      r = node(c, t, is_dict ? TL_OP_DICT : TL_OP_LIST, 0, 0, 0, items.v,
               items.n);
  list_out:
    free(items.v);
  } else {
    cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, t, "syntax error: unexpected %s",
                describe(c, t, b, sizeof b));
  }
out:
  c->recursion--;
  return r;
}

/* One subscript: an expression or a slice. */
typedef struct subscr {
  bool is_slice;
  uint32_t part[3]; /* NO_NODE when absent */
} subscr;

static bool parse_subscribed(cc *c, subscr *s) {
  s->is_slice = false;
  s->part[0] = s->part[1] = s->part[2] = NO_NODE;
  if (tok_is_op(cur(c), ":")) {
    advance(c);
  } else {
    uint32_t e = parse_expression(c, true);
    if (e == NO_NODE) return false;
    if (!tok_is_op(cur(c), ":")) {
      s->part[0] = e;
      return true;
    }
    advance(c);
    s->part[0] = e;
  }
  s->is_slice = true;
  if (!tok_is_op(cur(c), ":") && !tok_is_op(cur(c), "]") &&
      !tok_is_op(cur(c), ",")) {
    if ((s->part[1] = parse_expression(c, true)) == NO_NODE) return false;
  }
  if (tok_is_op(cur(c), ":")) {
    advance(c);
    if (!tok_is_op(cur(c), "]") && !tok_is_op(cur(c), ","))
      if ((s->part[2] = parse_expression(c, true)) == NO_NODE) return false;
  }
  return true;
}

static uint32_t parse_method_call(cc *c, uint32_t obj, cc_tok *nt) {
  const char *nm = c->src + nt->start;
  size_t m = TL_M_COUNT_;
  for (size_t i = 0; i < TL_M_COUNT_; i++)
    if (name_eq(tl_tmpl_methods[i].name, nm, nt->len)) m = i;
  if (m == TL_M_COUNT_) {
    cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, nt,
                "method '%.*s' is not supported", (int)nt->len, nm);
    return NO_NODE;
  }
  args a;
  if (!parse_call_args(c, &a)) return NO_NODE;
  vec kids = {0};
  uint64_t mask = 0;
  uint32_t r = NO_NODE;
  if (vpush(c, &kids, obj) &&
      bind_args(c, nt, "method", &tl_tmpl_methods[m], &a, &kids, &mask))
    r = node(c, nt, TL_OP_METHOD, 0, m, mask, kids.v, kids.n);
  free(kids.v);
  return r;
}

static uint32_t parse_postfix(cc *c, uint32_t n) {
  while (n != NO_NODE) {
    cc_tok *t = cur(c);
    if (tok_is_op(t, ".")) {
      advance(c);
      cc_tok *nt = cur(c);
      if (nt->type == TK_NAME) {
        advance(c);
        if (nt->len >= 2 && c->src[nt->start] == '_' &&
            c->src[nt->start + 1] == '_') {
          cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, nt,
                      "attribute '%.*s' is not supported", (int)nt->len,
                      c->src + nt->start);
          return NO_NODE;
        }
        if (tok_is_op(cur(c), "(")) {
          n = parse_method_call(c, n, nt);
        } else {
          uint32_t s = intern(c, c->src + nt->start, nt->len);
          if (s == NO_NODE) return NO_NODE;
          n = node1(c, nt, TL_OP_GETATTR, s, n);
        }
      } else if (nt->type == TK_INT) {
        advance(c);
        n = node2(c, nt, TL_OP_GETITEM, 0, n,
                  node0(c, nt, TL_OP_INT, nt->ival, 0));
      } else {
        unexpected(c, "a name or number after '.'");
        return NO_NODE;
      }
    } else if (tok_is_op(t, "[")) {
      advance(c);
      subscr s;
      if (!parse_subscribed(c, &s)) return NO_NODE;
      if (tok_is_op(cur(c), ",")) {
        cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, cur(c),
                    "tuple subscripts are not supported");
        return NO_NODE;
      }
      if (!expect_op(c, "]")) return NO_NODE;
      if (!s.is_slice) {
        n = node2(c, t, TL_OP_GETITEM, 0, n, s.part[0]);
      } else {
        uint32_t kids[4] = {n};
        size_t k = 1;
        uint64_t mask = 0;
        for (int i = 0; i < 3; i++)
          if (s.part[i] != NO_NODE) {
            kids[k++] = s.part[i];
            mask |= 1u << i;
          }
        n = node(c, t, TL_OP_SLICE, 0, mask, 0, kids, k);
      }
    } else if (tok_is_op(t, "(")) {
      cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, t,
                  "calling this expression is not supported");
      return NO_NODE;
    } else {
      break;
    }
  }
  return n;
}

/* The filter or test name at the cursor, looked up in table: its index, or
 * count after reporting why not (what: "filter" or "test"). */
static size_t parse_sig_name(cc *c, const char *what, const tl_tmpl_sig *table,
                             size_t count, cc_tok **name_tok) {
  cc_tok *nt = cur(c);
  const char *nm;
  size_t found = count;
  *name_tok = nt;
  if (nt->type != TK_NAME) {
    unexpected(c,
               strcmp(what, "filter") == 0 ? "a filter name" : "a test name");
    return count;
  }
  advance(c);
  if (tok_is_op(cur(c), ".")) {
    cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, nt,
                "dotted %s names are not supported", what);
    return count;
  }
  nm = c->src + nt->start;
  for (size_t i = 0; i < count; i++)
    if (name_eq(table[i].name, nm, nt->len)) found = i;
  if (found == count)
    cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, nt, "%s '%.*s' is not supported",
                what, (int)nt->len, nm);
  return found;
}

static uint32_t parse_filter(cc *c, uint32_t value) {
  cc_tok *nt;
  size_t f;
  advance(c); /* | */
  f = parse_sig_name(c, "filter", tl_tmpl_filters, TL_F_COUNT_, &nt);
  if (f == TL_F_COUNT_) return NO_NODE;
  args a = {0};
  if (tok_is_op(cur(c), "(") && !parse_call_args(c, &a)) return NO_NODE;
  vec kids = {0};
  uint64_t mask = 0;
  uint32_t r = NO_NODE;
  if (vpush(c, &kids, value) &&
      bind_args(c, nt, "filter", &tl_tmpl_filters[f], &a, &kids, &mask))
    r = node(c, nt, TL_OP_FILTER, 0, f, mask, kids.v, kids.n);
  free(kids.v);
  return r;
}

static uint32_t parse_test(cc *c, uint32_t value) {
  cc_tok *is_tok = cur(c);
  advance(c); /* is */
  bool negated = false;
  if (tok_is_name(c, cur(c), "not")) {
    negated = true;
    advance(c);
  }
  cc_tok *nt;
  size_t tst = parse_sig_name(c, "test", tl_tmpl_tests, TL_T_COUNT_, &nt);
  if (tst == TL_T_COUNT_) return NO_NODE;
  vec kids = {0};
  uint32_t r = NO_NODE;
  if (!vpush(c, &kids, value)) goto out;
  cc_tok *t = cur(c);
  if (tok_is_op(t, "(")) {
    args a;
    if (!parse_call_args(c, &a)) goto out;
    if (a.n_kw > 0) {
      cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, nt,
                  "keyword arguments to tests are not supported");
      goto out;
    }
    for (size_t i = 0; i < a.n_pos; i++)
      if (!vpush(c, &kids, a.pos[i])) goto out;
  } else if ((t->type == TK_NAME || t->type == TK_STRING || t->type == TK_INT ||
              t->type == TK_FLOAT || tok_is_op(t, "(") || tok_is_op(t, "[") ||
              tok_is_op(t, "{")) &&
             !tok_is_name(c, t, "else") && !tok_is_name(c, t, "or") &&
             !tok_is_name(c, t, "and")) {
    if (tok_is_name(c, t, "is")) {
      cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, t,
                  "syntax error: you cannot chain multiple tests with is");
      goto out;
    }
    uint32_t arg = parse_postfix(c, parse_primary(c));
    if (!vpush(c, &kids, arg)) goto out;
  }
  if (kids.n - 1 != tl_tmpl_tests[tst].n_params) {
    cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, nt,
                "test '%s' takes %u argument(s)", tl_tmpl_tests[tst].name,
                (unsigned)tl_tmpl_tests[tst].n_params);
    goto out;
  }
  r = node(c, is_tok, TL_OP_TEST, negated ? 1 : 0, tst, 0, kids.v, kids.n);
out:
  free(kids.v);
  return r;
}

static uint32_t parse_filter_expr(cc *c, uint32_t n) {
  while (n != NO_NODE) {
    cc_tok *t = cur(c);
    if (tok_is_op(t, "|")) {
      n = parse_filter(c, n);
    } else if (tok_is_name(c, t, "is")) {
      n = parse_test(c, n);
    } else if (tok_is_op(t, "(")) {
      cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, t,
                  "calling this expression is not supported");
      return NO_NODE;
    } else {
      break;
    }
  }
  return n;
}

static uint32_t parse_unary(cc *c, bool with_filter) {
  cc_tok *t = cur(c);
  if (!enter(c)) return NO_NODE;
  uint32_t n;
  if (tok_is_op(t, "-")) {
    advance(c);
    n = node1(c, t, TL_OP_NEG, 0, parse_unary(c, false));
  } else if (tok_is_op(t, "+")) {
    advance(c);
    n = node1(c, t, TL_OP_POS, 0, parse_unary(c, false));
  } else {
    n = parse_primary(c);
  }
  n = parse_postfix(c, n);
  if (with_filter) n = parse_filter_expr(c, n);
  c->recursion--;
  return n;
}

static uint32_t parse_pow(cc *c) {
  uint32_t left = parse_unary(c, true);
  while (left != NO_NODE && tok_is_op(cur(c), "**")) {
    cc_tok *t = cur(c);
    advance(c);
    left = node2(c, t, TL_OP_BINARY, TL_BIN_POW, left, parse_unary(c, true));
  }
  return left;
}

static uint32_t parse_math2(cc *c) {
  uint32_t left = parse_pow(c);
  for (;;) {
    cc_tok *t = cur(c);
    int op = tok_is_op(t, "*")    ? TL_BIN_MUL
             : tok_is_op(t, "/")  ? TL_BIN_DIV
             : tok_is_op(t, "//") ? TL_BIN_FLOORDIV
             : tok_is_op(t, "%")  ? TL_BIN_MOD
                                  : -1;
    if (op < 0 || left == NO_NODE) return left;
    advance(c);
    left = node2(c, t, TL_OP_BINARY, (uint64_t)op, left, parse_pow(c));
  }
}

static uint32_t parse_concat(cc *c) {
  cc_tok *t0 = cur(c);
  uint32_t first = parse_math2(c);
  if (first == NO_NODE || !tok_is_op(cur(c), "~")) return first;
  vec parts = {0};
  vpush(c, &parts, first);
  while (tok_is_op(cur(c), "~")) {
    advance(c);
    if (!vpush(c, &parts, parse_math2(c))) {
      free(parts.v);
      return NO_NODE;
    }
  }
  uint32_t r = node(c, t0, TL_OP_CONCAT, 0, 0, 0, parts.v, parts.n);
  free(parts.v);
  return r;
}

static uint32_t parse_math1(cc *c) {
  uint32_t left = parse_concat(c);
  for (;;) {
    cc_tok *t = cur(c);
    int op = tok_is_op(t, "+")   ? TL_BIN_ADD
             : tok_is_op(t, "-") ? TL_BIN_SUB
                                 : -1;
    if (op < 0 || left == NO_NODE) return left;
    advance(c);
    left = node2(c, t, TL_OP_BINARY, (uint64_t)op, left, parse_concat(c));
  }
}

static uint32_t parse_compare(cc *c) {
  cc_tok *t0 = cur(c);
  uint32_t first = parse_math1(c);
  vec ops = {0};
  uint64_t packed = 0;
  size_t n_ops = 0;
  if (first == NO_NODE) return NO_NODE;
  vpush(c, &ops, first);
  for (;;) {
    cc_tok *t = cur(c);
    int op = tok_is_op(t, "==")   ? TL_CMP_EQ
             : tok_is_op(t, "!=") ? TL_CMP_NE
             : tok_is_op(t, "<")  ? TL_CMP_LT
             : tok_is_op(t, "<=") ? TL_CMP_LE
             : tok_is_op(t, ">")  ? TL_CMP_GT
             : tok_is_op(t, ">=") ? TL_CMP_GE
                                  : -1;
    if (op >= 0) {
      advance(c);
    } else if (tok_is_name(c, t, "in")) {
      op = TL_CMP_IN;
      advance(c);
    } else if (tok_is_name(c, t, "not") && tok_is_name(c, peek(c, 1), "in")) {
      op = TL_CMP_NOTIN;
      advance(c);
      advance(c);
    } else {
      break;
    }
    if (n_ops == TL_TMPL_MAX_COMPARE) {
      cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, t,
                  "more than %u chained comparisons are not supported",
                  TL_TMPL_MAX_COMPARE);
      free(ops.v);
      return NO_NODE;
    }
    packed |= (uint64_t)op << (4 * n_ops);
    n_ops++;
    if (!vpush(c, &ops, parse_math1(c))) {
      free(ops.v);
      return NO_NODE;
    }
  }
  uint32_t r = first;
  if (n_ops > 0) r = node(c, t0, TL_OP_COMPARE, 0, packed, n_ops, ops.v, ops.n);
  free(ops.v);
  return r;
}

static uint32_t parse_not(cc *c) {
  cc_tok *t = cur(c);
  if (tok_is_name(c, t, "not")) {
    advance(c);
    if (!enter(c)) return NO_NODE;
    uint32_t r = node1(c, t, TL_OP_NOT, 0, parse_not(c));
    c->recursion--;
    return r;
  }
  return parse_compare(c);
}

static uint32_t parse_and(cc *c) {
  uint32_t left = parse_not(c);
  while (left != NO_NODE && tok_is_name(c, cur(c), "and")) {
    cc_tok *t = cur(c);
    advance(c);
    left = node2(c, t, TL_OP_AND, 0, left, parse_not(c));
  }
  return left;
}

static uint32_t parse_or(cc *c) {
  uint32_t left = parse_and(c);
  while (left != NO_NODE && tok_is_name(c, cur(c), "or")) {
    cc_tok *t = cur(c);
    advance(c);
    left = node2(c, t, TL_OP_OR, 0, left, parse_and(c));
  }
  return left;
}

static uint32_t parse_condexpr(cc *c) {
  uint32_t e1 = parse_or(c);
  while (e1 != NO_NODE && tok_is_name(c, cur(c), "if")) {
    cc_tok *t = cur(c);
    advance(c);
    uint32_t e2 = parse_or(c);
    if (e2 == NO_NODE) return NO_NODE;
    if (tok_is_name(c, cur(c), "else")) {
      advance(c);
      if (!enter(c)) return NO_NODE;
      uint32_t e3 = parse_condexpr(c);
      c->recursion--;
      uint32_t k[3] = {e2, e1, e3};
      e1 = node(c, t, TL_OP_COND, 0, 1, 0, k, 3);
    } else {
      uint32_t k[2] = {e2, e1};
      e1 = node(c, t, TL_OP_COND, 0, 0, 0, k, 2);
    }
  }
  return e1;
}

static uint32_t parse_expression(cc *c, bool with_condexpr) {
  if (!enter(c)) return NO_NODE;
  uint32_t r = with_condexpr ? parse_condexpr(c) : parse_or(c);
  c->recursion--;
  return r;
}

static bool is_tuple_end(cc *c, const char *extra_end) {
  cc_tok *t = cur(c);
  if (t->type == TK_VAR_END || t->type == TK_BLOCK_END || t->type == TK_EOF ||
      tok_is_op(t, ")"))
    return true;
  return extra_end != NULL && tok_is_name(c, t, extra_end);
}

static uint32_t parse_tuple(cc *c, bool simplified, bool with_condexpr,
                            const char *extra_end, bool explicit_parens) {
  cc_tok *t0 = cur(c);
  vec items = {0};
  bool is_tuple = false;
  uint32_t r = NO_NODE;
  for (;;) {
    if (items.n > 0 && !expect_op(c, ",")) goto out;
    if (is_tuple_end(c, extra_end)) break;
    uint32_t e;
    if (simplified) {
      e = parse_primary(c);
    } else {
      e = parse_expression(c, with_condexpr);
    }
    if (!vpush(c, &items, e)) goto out;
    if (tok_is_op(cur(c), ",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (items.n > 0) {
      r = items.v[0];
      goto out;
    }
    if (!explicit_parens) {
      unexpected(c, "an expression");
      goto out;
    }
  }
  r = node(c, t0, TL_OP_TUPLE, 0, 0, 0, items.v, items.n);
out:
  free(items.v);
  return r;
}

/* ---- statements --------------------------------------------------------- */

static uint32_t parse_body(cc *c, const char *const *ends, size_t n_ends,
                           const cc_tok *opener, size_t *which);

/* name, or name '.' attr (namespace), or a tuple of names */
static uint32_t parse_assign_target(cc *c, bool with_namespace,
                                    const char *extra_end) {
  cc_tok *t = cur(c);
  if (with_namespace && t->type == TK_NAME && tok_is_op(peek(c, 1), ".") &&
      peek(c, 2)->type == TK_NAME) {
    cc_tok *at = peek(c, 2);
    uint32_t s = intern(c, c->src + t->start, t->len);
    uint32_t s2 = intern(c, c->src + at->start, at->len);
    if (s == NO_NODE || s2 == NO_NODE) return NO_NODE;
    advance(c);
    advance(c);
    advance(c);
    return node1(c, t, TL_OP_GETATTR, s2, node0(c, t, TL_OP_NAME, 0, s));
  }
  uint32_t r = parse_tuple(c, true, true, extra_end, false);
  if (r == NO_NODE) return r;
  const cc_node *n = &c->nodes[r];
  bool ok = n->op == TL_OP_NAME;
  if (n->op == TL_OP_TUPLE) {
    ok = n->n_kids > 0;
    for (uint32_t i = 0; i < n->n_kids; i++)
      ok = ok && c->nodes[n->kids[i]].op == TL_OP_NAME;
  }
  if (!ok) {
    cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, t,
                "this assignment target is not supported");
    return NO_NODE;
  }
  return r;
}

static bool expect_block_end(cc *c) {
  return expect_type(c, TK_BLOCK_END, "end of statement block");
}

static uint32_t parse_if(cc *c, cc_tok *opener) {
  vec kids = {0};
  uint32_t r = NO_NODE;
  bool has_else = false;
  static const char *const ends[] = {"elif", "else", "endif"};
  static const char *const end_only[] = {"endif"};
  for (;;) {
    if (!vpush(c, &kids, parse_tuple(c, false, false, NULL, false))) goto out;
    if (!expect_block_end(c)) goto out;
    size_t which;
    if (!vpush(c, &kids, parse_body(c, ends, 3, opener, &which))) goto out;
    advance(c); /* the end name */
    if (which == 0) continue;
    if (which == 1) {
      if (!expect_block_end(c)) goto out;
      if (!vpush(c, &kids, parse_body(c, end_only, 1, opener, &which)))
        goto out;
      advance(c);
      has_else = true;
    }
    break;
  }
  if (expect_block_end(c))
    r = node(c, opener, TL_OP_IF, 0, has_else ? 1 : 0, 0, kids.v, kids.n);
out:
  free(kids.v);
  return r;
}

static uint32_t parse_for(cc *c, cc_tok *opener) {
  static const char *const ends[] = {"endfor", "else"};
  static const char *const end_only[] = {"endfor"};
  uint32_t target = parse_assign_target(c, false, "in");
  if (target == NO_NODE) return NO_NODE;
  if (!tok_is_name(c, cur(c), "in")) {
    unexpected(c, "'in'");
    return NO_NODE;
  }
  advance(c);
  uint32_t iter = parse_tuple(c, false, false, "recursive", false);
  if (iter == NO_NODE) return NO_NODE;
  uint32_t filter = NO_NODE, els = NO_NODE;
  if (tok_is_name(c, cur(c), "if")) {
    advance(c);
    filter = parse_expression(c, true);
    if (filter == NO_NODE) return NO_NODE;
  }
  if (tok_is_name(c, cur(c), "recursive")) {
    cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, cur(c),
                "recursive loops are not supported");
    return NO_NODE;
  }
  if (!expect_block_end(c)) return NO_NODE;
  size_t which;
  c->loop_depth++;
  uint32_t body = parse_body(c, ends, 2, opener, &which);
  c->loop_depth--;
  if (body == NO_NODE) return NO_NODE;
  advance(c);
  if (which == 1) {
    if (!expect_block_end(c)) return NO_NODE;
    els = parse_body(c, end_only, 1, opener, &which);
    if (els == NO_NODE) return NO_NODE;
    advance(c);
  }
  if (!expect_block_end(c)) return NO_NODE;
  uint32_t kids[5] = {target, iter, body};
  size_t n = 3;
  uint64_t flags = 0;
  if (filter != NO_NODE) {
    kids[n++] = filter;
    flags |= 1;
  }
  if (els != NO_NODE) {
    kids[n++] = els;
    flags |= 2;
  }
  return node(c, opener, TL_OP_FOR, 0, flags, 0, kids, n);
}

static uint32_t parse_set(cc *c, cc_tok *opener) {
  uint32_t target = parse_assign_target(c, true, NULL);
  if (target == NO_NODE) return NO_NODE;
  if (!tok_is_op(cur(c), "=")) {
    if (cur(c)->type == TK_BLOCK_END || tok_is_op(cur(c), "|")) {
      cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, opener,
                  "block assignment ({%% set x %%}...{%% endset %%}) is not "
                  "supported");
      return NO_NODE;
    }
    unexpected(c, "'='");
    return NO_NODE;
  }
  advance(c);
  uint32_t value = parse_tuple(c, false, true, NULL, false);
  if (value == NO_NODE || !expect_block_end(c)) return NO_NODE;
  return node2(c, opener, TL_OP_SET, 0, target, value);
}

static const char *const UNSUPPORTED_TAGS[] = {
    "macro", "call", "import",     "include", "extends", "block", "filter",
    "from",  "with", "autoescape", "print",   "do",      "trans", "pluralize"};

static uint32_t parse_statement(cc *c) {
  cc_tok *opener = cur(c); /* the tag name */
  if (opener->type != TK_NAME) {
    unexpected(c, "a tag name");
    return NO_NODE;
  }
  const char *nm = c->src + opener->start;
  if (!enter(c)) return NO_NODE;
  uint32_t r = NO_NODE;
  advance(c);
  if (name_eq("if", nm, opener->len)) {
    r = parse_if(c, opener);
  } else if (name_eq("for", nm, opener->len)) {
    r = parse_for(c, opener);
  } else if (name_eq("set", nm, opener->len)) {
    r = parse_set(c, opener);
  } else if (name_eq("break", nm, opener->len) ||
             name_eq("continue", nm, opener->len)) {
    if (c->loop_depth == 0) {
      cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, opener,
                  "syntax error: '%.*s' outside of a loop", (int)opener->len,
                  nm);
    } else if (expect_block_end(c)) {
      r = node0(
          c, opener,
          name_eq("break", nm, opener->len) ? TL_OP_BREAK : TL_OP_CONTINUE, 0,
          0);
    }
  } else if (name_eq("generation", nm, opener->len)) {
    /* transformers' AssistantTracker: the body, unchanged */
    static const char *const ends[] = {"endgeneration"};
    size_t which;
    if (expect_block_end(c)) {
      r = parse_body(c, ends, 1, opener, &which);
      if (r != NO_NODE) {
        advance(c);
        if (!expect_block_end(c)) r = NO_NODE;
      }
    }
  } else {
    bool known = false;
    for (size_t i = 0; i < sizeof UNSUPPORTED_TAGS / sizeof *UNSUPPORTED_TAGS;
         i++)
      if (name_eq(UNSUPPORTED_TAGS[i], nm, opener->len)) known = true;
    if (known)
      cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, opener,
                  "'{%% %.*s %%}' is not supported", (int)opener->len, nm);
    else
      cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, opener,
                  "syntax error: unknown tag '%.*s'", (int)opener->len, nm);
  }
  c->recursion--;
  return r;
}

/* Statements until a block whose tag name is one of ends (left as the
 * current token, *which its index) or, with no ends, the end of input. */
static uint32_t parse_body(cc *c, const char *const *ends, size_t n_ends,
                           const cc_tok *opener, size_t *which) {
  vec kids = {0};
  uint32_t r = NO_NODE;
  for (;;) {
    cc_tok *t = cur(c);
    if (t->type == TK_EOF) {
      if (n_ends > 0) {
        cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, opener,
                    "syntax error: unexpected end of template: this block "
                    "has no '%s'",
                    ends[n_ends - 1]);
        goto out;
      }
      break;
    }
    if (t->type == TK_DATA) {
      uint32_t s = intern(c, c->src + t->start, t->len);
      advance(c);
      if (s == NO_NODE || !vpush(c, &kids, node0(c, t, TL_OP_TEXT, 0, s)))
        goto out;
    } else if (t->type == TK_VAR_BEGIN) {
      advance(c);
      uint32_t e = parse_tuple(c, false, true, NULL, false);
      if (e == NO_NODE || !expect_type(c, TK_VAR_END, "end of print statement"))
        goto out;
      if (!vpush(c, &kids, node1(c, t, TL_OP_OUTPUT, 0, e))) goto out;
    } else if (t->type == TK_BLOCK_BEGIN) {
      advance(c);
      cc_tok *nt = cur(c);
      bool is_end = false;
      for (size_t i = 0; i < n_ends; i++)
        if (tok_is_name(c, nt, ends[i])) {
          *which = i;
          is_end = true;
        }
      if (is_end) break;
      static const char *const stray[] = {"elif",   "else",   "endif",
                                          "endfor", "endset", "endgeneration",
                                          "endraw"};
      for (size_t i = 0; i < sizeof stray / sizeof *stray; i++)
        if (tok_is_name(c, nt, stray[i])) {
          cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, nt,
                      "syntax error: unexpected '%s'", stray[i]);
          goto out;
        }
      if (!vpush(c, &kids, parse_statement(c))) goto out;
    } else {
      unexpected(c, "template data or a tag");
      goto out;
    }
  }
  r = node(c, opener, TL_OP_BLOCK, 0, 0, 0, kids.v, kids.n);
out:
  free(kids.v);
  return r;
}

bool cc_parse(cc *c, uint32_t *root) {
  size_t which;
  cc_tok *first = cur(c);
  uint32_t r = parse_body(c, NULL, 0, first, &which);
  if (r == NO_NODE) {
    if (c->status == TL_OK)
      cc_fail_tok(c, TL_ERR_INTERNAL_INVARIANT, first, "internal error");
    return false;
  }
  *root = r;
  return true;
}
