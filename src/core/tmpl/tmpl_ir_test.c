/* The IR loader against hostile bytes and the renderer on hand-built IR
 * (these run in the wasm32 build too, so the IR is built here with the
 * CBOR writer rather than by the native compiler). */
#include <string.h>

#include "cbor/cbor.h"
#include "tl_test.h"
#include "tmpl/tmpl.h"

typedef struct spec_node {
  uint32_t op;
  int64_t a;
  uint64_t b, c;
  uint32_t n_kids;
  uint32_t kids[4];
} spec_node;

static uint8_t mem[1 << 18];

static size_t build(const char *const *strs, size_t n_strs,
                    const spec_node *nodes, size_t n_nodes, uint64_t root,
                    uint64_t version, uint8_t *buf, size_t cap) {
  static uint8_t scratch_mem[4096];
  tl_arena scratch;
  tl_arena_init(&scratch, scratch_mem, sizeof scratch_mem);
  tl_cbor_writer w;
  uint8_t sha[32] = {0};
  tl_cbor_writer_init(&w, buf, cap, &scratch);
  tl_cbor_begin_map(&w, 6);
  tl_cbor_put_text(&w, "format", 6);
  tl_cbor_put_text(&w, TL_TMPL_IR_FORMAT, strlen(TL_TMPL_IR_FORMAT));
  tl_cbor_put_text(&w, "version", 7);
  tl_cbor_put_uint(&w, version);
  tl_cbor_put_text(&w, "source_sha256", 13);
  tl_cbor_put_bytes(&w, sha, 32);
  tl_cbor_put_text(&w, "strings", 7);
  tl_cbor_begin_array(&w, n_strs);
  for (size_t i = 0; i < n_strs; i++)
    tl_cbor_put_text(&w, strs[i], strlen(strs[i]));
  tl_cbor_end_array(&w);
  tl_cbor_put_text(&w, "nodes", 5);
  tl_cbor_begin_array(&w, n_nodes);
  for (size_t i = 0; i < n_nodes; i++) {
    tl_cbor_begin_array(&w, 5);
    tl_cbor_put_uint(&w, nodes[i].op);
    tl_cbor_put_int(&w, nodes[i].a);
    tl_cbor_put_uint(&w, nodes[i].b);
    tl_cbor_put_uint(&w, nodes[i].c);
    tl_cbor_begin_array(&w, nodes[i].n_kids);
    for (uint32_t k = 0; k < nodes[i].n_kids; k++)
      tl_cbor_put_uint(&w, nodes[i].kids[k]);
    tl_cbor_end_array(&w);
    tl_cbor_end_array(&w);
  }
  tl_cbor_end_array(&w);
  tl_cbor_put_text(&w, "root", 4);
  tl_cbor_put_uint(&w, root);
  tl_cbor_end_map(&w);
  size_t len = 0;
  if (tl_cbor_writer_finish(&w, &len) != TL_OK) return 0;
  return len;
}

/* {% for m in messages %}{{ m.content }}{% if loop.last %}!{% endif %}{% endfor
 * %} */
static const char *const S1[] = {"m",    "messages", "content",
                                 "loop", "last",     "!"};
static const spec_node N1[] = {
    {TL_OP_NAME, 0, 0, 0, 0, {0}},       /* 0: m (target) */
    {TL_OP_NAME, 0, 1, 0, 0, {0}},       /* 1: messages */
    {TL_OP_NAME, 0, 0, 0, 0, {0}},       /* 2: m */
    {TL_OP_GETATTR, 0, 2, 0, 1, {2}},    /* 3: m.content */
    {TL_OP_OUTPUT, 0, 0, 0, 1, {3}},     /* 4 */
    {TL_OP_NAME, 0, 3, 0, 0, {0}},       /* 5: loop */
    {TL_OP_GETATTR, 0, 4, 0, 1, {5}},    /* 6: loop.last */
    {TL_OP_TEXT, 0, 5, 0, 0, {0}},       /* 7: ! */
    {TL_OP_BLOCK, 0, 0, 0, 1, {7}},      /* 8 */
    {TL_OP_IF, 0, 0, 0, 2, {6, 8}},      /* 9 */
    {TL_OP_BLOCK, 0, 0, 0, 2, {4, 9}},   /* 10: body */
    {TL_OP_FOR, 0, 0, 0, 3, {0, 1, 10}}, /* 11 */
    {TL_OP_BLOCK, 0, 0, 0, 1, {11}},     /* 12: root */
};

static tl_status load(const uint8_t *ir, size_t n, tl_arena *a,
                      tl_tmpl_program *p, tl_tmpl_load_error *e) {
  tl_arena_init(a, mem, sizeof mem);
  return tl_tmpl_load(ir, n, a, p, e);
}

static void hand_built_ir_renders(tl_test_ctx *t) {
  uint8_t ir[1024];
  size_t n = build(S1, 6, N1, 13, 12, 1, ir, sizeof ir);
  tl_arena a;
  tl_tmpl_program p;
  if (!TL_EXPECT(t, n > 0) || !TL_EXPECT_OK(t, load(ir, n, &a, &p, NULL)))
    return;
  static const char vars[] =
      "{\"messages\": [{\"content\": \"{{ x }}\"}, {\"content\": \"b\"}]}";
  tl_json_value *v;
  tl_json_error je;
  if (!TL_EXPECT_OK(t, tl_json_parse((const uint8_t *)vars, sizeof vars - 1,
                                     NULL, &a, &v, &je)))
    return;
  uint8_t out[64];
  size_t len;
  tl_tmpl_error e;
  if (TL_EXPECT_OK(t, tl_tmpl_render(&p, v, NULL, &a, out, sizeof out, &len,
                                     NULL, &e))) {
    TL_EXPECT_EQ_U64(t, len, 9);
    TL_EXPECT_MEM(t, out, "{{ x }}b!", 9);
  }
  /* content missing: printing undefined gives "" */
  static const char vars2[] = "{\"messages\": [{}]}";
  TL_EXPECT_OK(t, tl_json_parse((const uint8_t *)vars2, sizeof vars2 - 1, NULL,
                                &a, &v, &je));
  TL_EXPECT_OK(
      t, tl_tmpl_render(&p, v, NULL, &a, out, sizeof out, &len, NULL, &e));
  TL_EXPECT_EQ_U64(t, len, 1);
  /* messages not iterable: a typed error */
  static const char vars3[] = "{\"messages\": 5}";
  TL_EXPECT_OK(t, tl_json_parse((const uint8_t *)vars3, sizeof vars3 - 1, NULL,
                                &a, &v, &je));
  TL_EXPECT_STATUS(
      t, tl_tmpl_render(&p, v, NULL, &a, out, sizeof out, &len, NULL, &e),
      TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, e.kind, TL_TMPL_ERR_TYPE);
  /* not an object */
  TL_EXPECT_OK(t, tl_json_parse((const uint8_t *)"[]", 2, NULL, &a, &v, &je));
  TL_EXPECT_STATUS(
      t, tl_tmpl_render(&p, v, NULL, &a, out, sizeof out, &len, NULL, &e),
      TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, e.kind, TL_TMPL_ERR_INPUT);
}

static void expect_invalid(tl_test_ctx *t, const spec_node *nodes,
                           size_t n_nodes, uint64_t root, tl_status want) {
  uint8_t ir[1024];
  size_t n = build(S1, 6, nodes, n_nodes, root, 1, ir, sizeof ir);
  tl_arena a;
  tl_tmpl_program p;
  tl_tmpl_load_error e;
  if (!TL_EXPECT(t, n > 0)) return;
  TL_EXPECT_STATUS(t, load(ir, n, &a, &p, &e), want);
}

static void hostile_ir_is_refused(tl_test_ctx *t) {
  spec_node m[13];
  uint8_t ir[1024];
  tl_arena a;
  tl_tmpl_program p;
  tl_tmpl_load_error e;
  /* another version */
  size_t n = build(S1, 6, N1, 13, 12, 2, ir, sizeof ir);
  TL_EXPECT_STATUS(t, load(ir, n, &a, &p, &e), TL_ERR_UNSUPPORTED_ABI);
  /* root out of range, root not a block */
  expect_invalid(t, N1, 13, 13, TL_ERR_INVALID_MODEL);
  expect_invalid(t, N1, 12, 11, TL_ERR_INVALID_MODEL);
  /* a child at or after its parent (a cycle) */
  memcpy(m, N1, sizeof m);
  m[3].kids[0] = 3;
  expect_invalid(t, m, 13, 12, TL_ERR_INVALID_MODEL);
  /* a node with two parents (a DAG) */
  memcpy(m, N1, sizeof m);
  m[3].kids[0] = 0;
  expect_invalid(t, m, 13, 12, TL_ERR_INVALID_MODEL);
  /* an unreferenced node */
  memcpy(m, N1, sizeof m);
  m[10].n_kids = 1;
  expect_invalid(t, m, 13, 12, TL_ERR_INVALID_MODEL);
  /* string index out of range; unknown op; unknown filter */
  memcpy(m, N1, sizeof m);
  m[7].b = 6;
  expect_invalid(t, m, 13, 12, TL_ERR_INVALID_MODEL);
  memcpy(m, N1, sizeof m);
  m[7].op = 99;
  expect_invalid(t, m, 13, 12, TL_ERR_INVALID_MODEL);
  memcpy(m, N1, sizeof m);
  m[3].op = TL_OP_FILTER;
  m[3].b = TL_F_COUNT_;
  expect_invalid(t, m, 13, 12, TL_ERR_INVALID_MODEL);
  /* a statement where an expression belongs */
  memcpy(m, N1, sizeof m);
  m[4].kids[0] = 2;
  m[3].op = TL_OP_TEXT;
  m[3].n_kids = 0;
  m[3].b = 0;
  m[2].op = TL_OP_OUTPUT; /* OUTPUT(m) at 2 needs a kid: invalid anyway */
  expect_invalid(t, m, 13, 12, TL_ERR_INVALID_MODEL);
  /* break outside a loop body */
  static const spec_node brk[] = {{TL_OP_BREAK, 0, 0, 0, 0, {0}},
                                  {TL_OP_BLOCK, 0, 0, 0, 1, {0}}};
  expect_invalid(t, brk, 2, 1, TL_ERR_INVALID_MODEL);
  /* a FOR whose target is not a name */
  memcpy(m, N1, sizeof m);
  m[0].op = TL_OP_INT;
  m[0].b = 0;
  expect_invalid(t, m, 13, 12, TL_ERR_INVALID_MODEL);
}

static void every_truncation_and_byte_flip_is_handled(tl_test_ctx *t) {
  uint8_t ir[1024], bad[1024];
  size_t n = build(S1, 6, N1, 13, 12, 1, ir, sizeof ir);
  tl_arena a;
  tl_tmpl_program p;
  tl_tmpl_load_error e;
  for (size_t k = 0; k < n; k++)
    if (!TL_EXPECT(t, load(ir, k, &a, &p, &e) != TL_OK)) return;
  static const char vars[] =
      "{\"messages\": [{\"content\": \"x\"}, {\"content\": 1}]}";
  for (size_t k = 0; k < n; k++) {
    for (unsigned flip = 1; flip < 256; flip <<= 1) {
      memcpy(bad, ir, n);
      bad[k] ^= (uint8_t)flip;
      if (load(bad, n, &a, &p, &e) != TL_OK) continue;
      tl_json_value *v;
      tl_json_error je;
      if (tl_json_parse((const uint8_t *)vars, sizeof vars - 1, NULL, &a, &v,
                        &je) != TL_OK)
        continue;
      uint8_t out[256];
      size_t len;
      tl_tmpl_error re;
      tl_status st =
          tl_tmpl_render(&p, v, NULL, &a, out, sizeof out, &len, NULL, &re);
      TL_EXPECT(t, st == TL_OK || re.kind != TL_TMPL_ERR_NONE);
    }
  }
}

static const tl_test_case cases[] = {
    TL_CASE(hand_built_ir_renders),
    TL_CASE(hostile_ir_is_refused),
    TL_CASE(every_truncation_and_byte_flip_is_handled),
};
TL_SUITE(tmpl_ir, cases);
