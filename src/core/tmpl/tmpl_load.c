/* The IR loader: every field of untrusted IR bytes is checked before the
 * renderer sees it (docs/template.md §IR, requirement TMPL-IR-*). */
#include <string.h>

#include "cbor/cbor.h"
#include "checked.h"
#include "tmpl/tmpl.h"

static tl_status bad(tl_tmpl_load_error *err, uint32_t node,
                     const char *reason) {
  if (err != NULL) {
    err->node = node;
    err->reason = reason;
  }
  return TL_ERR_INVALID_MODEL;
}

static bool is_expr(uint32_t op) { return op <= TL_OP_CALL; }
static bool is_stmt(uint32_t op) {
  return op >= TL_OP_BLOCK && op <= TL_OP_CONTINUE;
}

static unsigned popcount(uint64_t v) {
  unsigned n = 0;
  for (; v; v &= v - 1) n++;
  return n;
}

static bool target_ok(const tl_tmpl_program *p, uint32_t k, bool allow_attr) {
  const tl_tmpl_node *n = &p->nodes[k];
  if (n->op == TL_OP_NAME) return true;
  if (n->op == TL_OP_TUPLE) {
    if (n->n_kids == 0) return false;
    for (uint32_t i = 0; i < n->n_kids; i++)
      if (p->nodes[n->kids[i]].op != TL_OP_NAME) return false;
    return true;
  }
  return allow_attr && n->op == TL_OP_GETATTR &&
         p->nodes[n->kids[0]].op == TL_OP_NAME;
}

/* Field rules of one node (its children already exist). */
static const char *check_node(const tl_tmpl_program *p, uint32_t i) {
  const tl_tmpl_node *n = &p->nodes[i];
  uint32_t k = n->n_kids;
  bool kids_expr = true;
  const tl_tmpl_sig *sig = NULL;
  switch (n->op) {
    case TL_OP_NONE:
      if (n->a || n->b || n->c || k) return "bad NONE";
      break;
    case TL_OP_BOOL:
      if ((n->a != 0 && n->a != 1) || n->b || n->c || k) return "bad BOOL";
      break;
    case TL_OP_INT:
      if (n->b || n->c || k) return "bad INT";
      break;
    case TL_OP_FLOAT:
      if (n->a || n->c || k || ((n->b >> 52) & 0x7FF) == 0x7FF)
        return "bad FLOAT";
      break;
    case TL_OP_STR:
    case TL_OP_NAME:
    case TL_OP_TEXT:
      if (n->a || n->c || k || n->b >= p->n_strings) return "bad string node";
      break;
    case TL_OP_LIST:
    case TL_OP_TUPLE:
    case TL_OP_CONCAT:
      if (n->a || n->b || n->c) return "bad sequence node";
      if (n->op == TL_OP_CONCAT && k == 0) return "empty CONCAT";
      break;
    case TL_OP_DICT:
      if (n->a || n->b || n->c || (k % 2) != 0) return "bad DICT";
      break;
    case TL_OP_GETATTR:
      if (n->a || n->c || k != 1 || n->b >= p->n_strings) return "bad GETATTR";
      break;
    case TL_OP_GETITEM:
    case TL_OP_AND:
    case TL_OP_OR:
      if (n->a || n->b || n->c || k != 2) return "bad binary node";
      break;
    case TL_OP_SLICE:
      if (n->a || n->c || n->b >= 8 || k != 1 + popcount(n->b))
        return "bad SLICE";
      break;
    case TL_OP_NOT:
    case TL_OP_NEG:
    case TL_OP_POS:
      if (n->a || n->b || n->c || k != 1) return "bad unary node";
      break;
    case TL_OP_BINARY:
      if (n->a || n->c || k != 2 || n->b >= TL_BIN_COUNT_) return "bad BINARY";
      break;
    case TL_OP_COMPARE:
      if (n->a || n->c == 0 || n->c > TL_TMPL_MAX_COMPARE || k != n->c + 1 ||
          (n->b >> (4 * n->c)) != 0)
        return "bad COMPARE";
      for (uint64_t j = 0; j < n->c; j++)
        if (((n->b >> (4 * j)) & 15) >= TL_CMP_COUNT_) return "bad COMPARE op";
      break;
    case TL_OP_COND:
      if (n->a || n->c || n->b > 1 || k != 2 + n->b) return "bad COND";
      break;
    case TL_OP_FILTER:
      if (n->b >= TL_F_COUNT_) return "unknown filter";
      sig = &tl_tmpl_filters[n->b];
      goto masked;
    case TL_OP_METHOD:
      if (n->b >= TL_M_COUNT_) return "unknown method";
      sig = &tl_tmpl_methods[n->b];
    masked:
      if (n->a || (n->c >> sig->n_params) != 0 || k != 1 + popcount(n->c))
        return "bad argument mask";
      break;
    case TL_OP_TEST:
      if (n->b >= TL_T_COUNT_) return "unknown test";
      if ((n->a != 0 && n->a != 1) || n->c ||
          k != 1u + tl_tmpl_tests[n->b].n_params)
        return "bad TEST";
      break;
    case TL_OP_CALL:
      if (n->a || n->c || n->b >= TL_FN_COUNT_) return "bad CALL";
      if (n->b == TL_FN_NAMESPACE) {
        if (k % 2) return "bad namespace() arguments";
        for (uint32_t j = 0; j < k; j += 2)
          if (p->nodes[n->kids[j]].op != TL_OP_STR)
            return "namespace() key is not a string";
      } else if (k != 1) {
        return "bad CALL arity";
      }
      break;
    case TL_OP_BLOCK:
      if (n->a || n->b || n->c) return "bad BLOCK";
      for (uint32_t j = 0; j < k; j++)
        if (!is_stmt(p->nodes[n->kids[j]].op))
          return "BLOCK child not a statement";
      kids_expr = false;
      break;
    case TL_OP_OUTPUT:
      if (n->a || n->b || n->c || k != 1) return "bad OUTPUT";
      break;
    case TL_OP_IF:
      if (n->a || n->c || n->b > 1 || k < 2 || (k - n->b) % 2 != 0)
        return "bad IF";
      for (uint32_t j = 0; j < k; j++) {
        bool body = (j % 2 == 1) || (n->b && j == k - 1);
        uint32_t op = p->nodes[n->kids[j]].op;
        if (body ? op != TL_OP_BLOCK : !is_expr(op)) return "bad IF child";
      }
      kids_expr = false;
      break;
    case TL_OP_FOR: {
      if (n->a || n->c || n->b > 3 || k != 3 + popcount(n->b)) return "bad FOR";
      if (!target_ok(p, n->kids[0], false)) return "bad FOR target";
      if (!is_expr(p->nodes[n->kids[1]].op) ||
          p->nodes[n->kids[2]].op != TL_OP_BLOCK)
        return "bad FOR child";
      uint32_t j = 3;
      if ((n->b & 1) && !is_expr(p->nodes[n->kids[j++]].op))
        return "bad FOR filter";
      if ((n->b & 2) && p->nodes[n->kids[j]].op != TL_OP_BLOCK)
        return "bad FOR else";
      kids_expr = false;
      break;
    }
    case TL_OP_SET:
      if (n->a || n->b || n->c || k != 2 || !target_ok(p, n->kids[0], true) ||
          !is_expr(p->nodes[n->kids[1]].op))
        return "bad SET";
      kids_expr = false;
      break;
    case TL_OP_BREAK:
    case TL_OP_CONTINUE:
      if (n->a || n->b || n->c || k) return "bad loop control";
      break;
    default:
      return "unknown op";
  }
  if (kids_expr)
    for (uint32_t j = 0; j < k; j++)
      if (!is_expr(p->nodes[n->kids[j]].op))
        return "child is not an expression";
  return NULL;
}

static tl_status read_nodes(tl_cbor_reader *r, tl_arena *arena,
                            tl_tmpl_program *p, tl_tmpl_load_error *err) {
  size_t n;
  tl_status st = tl_cbor_expect_array(r, &n);
  if (st != TL_OK) return st;
  if (n == 0 || n > TL_TMPL_MAX_NODES)
    return bad(err, UINT32_MAX, "node count");
  tl_tmpl_node *nodes;
  st = tl_arena_alloc_array(arena, n, sizeof *nodes, 8, (void **)&nodes);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < n; i++) {
    size_t len, nk;
    uint64_t op;
    if ((st = tl_cbor_expect_array(r, &len)) != TL_OK) return st;
    if (len != 5)
      return bad(err, (uint32_t)i, "node is not [op, a, b, c, kids]");
    if ((st = tl_cbor_expect_uint(r, &op)) != TL_OK ||
        (st = tl_cbor_expect_int(r, &nodes[i].a)) != TL_OK ||
        (st = tl_cbor_expect_uint(r, &nodes[i].b)) != TL_OK ||
        (st = tl_cbor_expect_uint(r, &nodes[i].c)) != TL_OK ||
        (st = tl_cbor_expect_array(r, &nk)) != TL_OK)
      return st;
    if (op > 255) return bad(err, (uint32_t)i, "unknown op");
    nodes[i].op = (uint32_t)op;
    if (nk > TL_TMPL_MAX_KIDS)
      return bad(err, (uint32_t)i, "too many children");
    uint32_t *kids = NULL;
    if (nk > 0) {
      st = tl_arena_alloc_array(arena, nk, sizeof *kids, 4, (void **)&kids);
      if (st != TL_OK) return st;
    }
    for (size_t j = 0; j < nk; j++) {
      uint64_t kv;
      if ((st = tl_cbor_expect_uint(r, &kv)) != TL_OK) return st;
      if (kv >= i) return bad(err, (uint32_t)i, "child index not below parent");
      kids[j] = (uint32_t)kv;
    }
    nodes[i].kids = kids;
    nodes[i].n_kids = (uint32_t)nk;
  }
  p->nodes = nodes;
  p->n_nodes = (uint32_t)n;
  return TL_OK;
}

tl_status tl_tmpl_load(const uint8_t *ir, size_t len, tl_arena *arena,
                       tl_tmpl_program *out, tl_tmpl_load_error *err) {
  if (err != NULL) {
    err->node = UINT32_MAX;
    err->offset = 0;
    err->reason = NULL;
  }
  if (arena == NULL || out == NULL || (ir == NULL && len > 0))
    return TL_ERR_INVALID_ARGUMENT;
  tl_arena_mark mark = tl_arena_mark_now(arena);
  tl_tmpl_program p;
  memset(&p, 0, sizeof p);
  tl_cbor_reader r;
  tl_status st = tl_cbor_reader_init(&r, ir, len, NULL);
  size_t n_pairs = 0;
  bool have_format = false, have_version = false, have_sha = false,
       have_strings = false, have_nodes = false, have_root = false;
  bool format_ok = false;
  uint64_t version = 0, root = 0;
  if (st == TL_OK) st = tl_cbor_expect_map(&r, &n_pairs);
  if (st == TL_OK && n_pairs != 6) {
    st = bad(err, UINT32_MAX, "the IR map must have exactly 6 keys");
    goto fail;
  }
  for (size_t i = 0; st == TL_OK && i < n_pairs; i++) {
    const char *k;
    size_t kn;
    if ((st = tl_cbor_expect_text(&r, &k, &kn)) != TL_OK) break;
    if (tl_cbor_text_is(k, kn, "format")) {
      const char *f;
      size_t fn;
      st = tl_cbor_expect_text(&r, &f, &fn);
      format_ok = st == TL_OK && tl_cbor_text_is(f, fn, TL_TMPL_IR_FORMAT);
      have_format = true;
    } else if (tl_cbor_text_is(k, kn, "version")) {
      st = tl_cbor_expect_uint(&r, &version);
      have_version = true;
    } else if (tl_cbor_text_is(k, kn, "source_sha256")) {
      const uint8_t *d;
      size_t dn;
      st = tl_cbor_expect_bytes(&r, &d, &dn);
      if (st == TL_OK && dn != 32) {
        st = bad(err, UINT32_MAX, "source_sha256 is not 32 bytes");
        goto fail;
      }
      if (st == TL_OK) memcpy(p.source_sha256, d, 32);
      have_sha = true;
    } else if (tl_cbor_text_is(k, kn, "strings")) {
      size_t n;
      if ((st = tl_cbor_expect_array(&r, &n)) != TL_OK) break;
      if (n > TL_TMPL_MAX_STRINGS) {
        st = bad(err, UINT32_MAX, "too many strings");
        goto fail;
      }
      tl_tmpl_str *s = NULL;
      st = tl_arena_alloc_array(arena, n, sizeof *s, 8, (void **)&s);
      for (size_t j = 0; st == TL_OK && j < n; j++)
        st = tl_cbor_expect_text(&r, &s[j].ptr, &s[j].len);
      p.strings = s;
      p.n_strings = (uint32_t)n;
      have_strings = true;
    } else if (tl_cbor_text_is(k, kn, "nodes")) {
      st = read_nodes(&r, arena, &p, err);
      have_nodes = true;
    } else if (tl_cbor_text_is(k, kn, "root")) {
      st = tl_cbor_expect_uint(&r, &root);
      have_root = true;
    } else {
      st = bad(err, UINT32_MAX, "unknown key in the IR map");
      goto fail;
    }
  }
  if (st == TL_OK) st = tl_cbor_reader_finish(&r);
  if (st == TL_ERR_INVALID_CBOR) {
    if (err != NULL) {
      err->offset = r.fault.offset;
      err->reason = tl_cbor_fault_name(r.fault.kind);
    }
    goto fail;
  }
  if (st != TL_OK) goto fail;
  if (!(have_format && have_version && have_sha && have_strings && have_nodes &&
        have_root)) {
    st = bad(err, UINT32_MAX, "a required key is missing");
    goto fail;
  }
  if (!format_ok || version != TL_TMPL_IR_VERSION) {
    st = TL_ERR_UNSUPPORTED_ABI;
    if (err != NULL) err->reason = "not tinylm-tmpl-ir version 1";
    goto fail;
  }
  if (root >= p.n_nodes) {
    st = bad(err, UINT32_MAX, "root out of range");
    goto fail;
  }
  p.root = (uint32_t)root;
  if (p.nodes[p.root].op != TL_OP_BLOCK) {
    st = bad(err, p.root, "root is not a BLOCK");
    goto fail;
  }
  /* Tree shape: every node except the root is the child of exactly one
   * node; the height is bounded. parent[] also serves the loop-control
   * check. */
  {
    uint32_t *parent, *depth;
    st = tl_arena_alloc_array(arena, p.n_nodes, sizeof *parent, 4,
                              (void **)&parent);
    if (st == TL_OK)
      st = tl_arena_alloc_array(arena, p.n_nodes, sizeof *depth, 4,
                                (void **)&depth);
    if (st != TL_OK) goto fail;
    for (uint32_t i = 0; i < p.n_nodes; i++) parent[i] = UINT32_MAX;
    for (uint32_t i = 0; i < p.n_nodes; i++) {
      const tl_tmpl_node *n = &p.nodes[i];
      uint32_t d = 1;
      for (uint32_t j = 0; j < n->n_kids; j++) {
        uint32_t kid = n->kids[j];
        if (parent[kid] != UINT32_MAX) {
          st = bad(err, kid, "node has two parents");
          goto fail;
        }
        parent[kid] = i;
        if (depth[kid] + 1 > d) d = depth[kid] + 1;
      }
      if (d > TL_TMPL_MAX_DEPTH) {
        st = bad(err, i, "nesting too deep");
        goto fail;
      }
      depth[i] = d;
      const char *why = check_node(&p, i);
      if (why != NULL) {
        st = bad(err, i, why);
        goto fail;
      }
    }
    for (uint32_t i = 0; i < p.n_nodes; i++) {
      if (i == p.root) {
        if (parent[i] != UINT32_MAX) {
          st = bad(err, i, "root has a parent");
          goto fail;
        }
        continue;
      }
      if (parent[i] == UINT32_MAX) {
        st = bad(err, i, "node is not part of the tree");
        goto fail;
      }
      uint32_t op = p.nodes[i].op;
      if (op == TL_OP_BREAK || op == TL_OP_CONTINUE) {
        /* must sit in a FOR's body (kid 2), through blocks and ifs only */
        uint32_t at = i;
        bool ok = false;
        while (parent[at] != UINT32_MAX) {
          const tl_tmpl_node *pn = &p.nodes[parent[at]];
          if (pn->op == TL_OP_FOR) {
            ok = pn->kids[2] == at;
            break;
          }
          at = parent[at];
        }
        if (!ok) {
          st = bad(err, i, "loop control outside a loop body");
          goto fail;
        }
      }
    }
    p.max_depth = depth[p.root];
  }
  *out = p;
  return TL_OK;
fail:
  tl_arena_rewind(arena, mark);
  return st;
}
