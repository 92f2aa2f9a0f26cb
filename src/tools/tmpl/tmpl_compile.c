/* tl_tmpl_compile: lex, parse, and write the IR (docs/template.md §IR). */
#include "tmpl_compile.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cbor/cbor.h"
#include "hash/sha256.h"
#include "tmpl/tmpl.h"
#include "tmpl_cc.h"
#include "utf8.h"

static tl_status write_ir(const cc *c, uint32_t root, const uint8_t sha[32],
                          uint8_t *buf, size_t cap, tl_arena *scratch,
                          size_t *len) {
  tl_cbor_writer w;
  tl_cbor_writer_init(&w, buf, cap, scratch);
  tl_cbor_begin_map(&w, 6);
  tl_cbor_put_text(&w, "format", 6);
  tl_cbor_put_text(&w, TL_TMPL_IR_FORMAT, strlen(TL_TMPL_IR_FORMAT));
  tl_cbor_put_text(&w, "version", 7);
  tl_cbor_put_uint(&w, TL_TMPL_IR_VERSION);
  tl_cbor_put_text(&w, "source_sha256", 13);
  tl_cbor_put_bytes(&w, sha, 32);
  tl_cbor_put_text(&w, "strings", 7);
  tl_cbor_begin_array(&w, c->n_strs);
  for (size_t i = 0; i < c->n_strs; i++)
    tl_cbor_put_text(&w, c->strs[i].ptr, c->strs[i].len);
  tl_cbor_end_array(&w);
  tl_cbor_put_text(&w, "nodes", 5);
  tl_cbor_begin_array(&w, c->n_nodes);
  for (size_t i = 0; i < c->n_nodes; i++) {
    const cc_node *n = &c->nodes[i];
    tl_cbor_begin_array(&w, 5);
    tl_cbor_put_uint(&w, n->op);
    tl_cbor_put_int(&w, n->a);
    tl_cbor_put_uint(&w, n->b);
    tl_cbor_put_uint(&w, n->c);
    tl_cbor_begin_array(&w, n->n_kids);
    for (uint32_t k = 0; k < n->n_kids; k++) tl_cbor_put_uint(&w, n->kids[k]);
    tl_cbor_end_array(&w);
    tl_cbor_end_array(&w);
  }
  tl_cbor_end_array(&w);
  tl_cbor_put_text(&w, "root", 4);
  tl_cbor_put_uint(&w, root);
  tl_cbor_end_map(&w);
  return tl_cbor_writer_finish(&w, len);
}

static void cc_free(cc *c) {
  for (size_t i = 0; i < c->n_toks; i++) free(c->toks[i].sval);
  free(c->toks);
  for (size_t i = 0; i < c->n_nodes; i++) free(c->nodes[i].kids);
  free(c->nodes);
  for (size_t i = 0; i < c->n_strs; i++) free(c->strs[i].ptr);
  free(c->strs);
  free(c->src);
}

tl_status tl_tmpl_compile(const char *src, size_t len, uint8_t **ir,
                          size_t *ir_len, char *err, size_t err_cap) {
  if (err != NULL && err_cap > 0) err[0] = '\0';
  if (ir == NULL || ir_len == NULL || (src == NULL && len > 0))
    return TL_ERR_INVALID_ARGUMENT;
  *ir = NULL;
  *ir_len = 0;
  cc c;
  memset(&c, 0, sizeof c);
  c.err = err;
  c.err_cap = err_cap;
  size_t bad = 0;
  if (tl_utf8_validate((const uint8_t *)src, len, &bad) != TL_OK) {
    c.src = (char *)src;
    c.len = len;
    uint32_t l, col;
    cc_position(&c, bad, &l, &col);
    cc_fail(&c, TL_ERR_INVALID_UTF8, l, col,
            "the template is not valid UTF-8 (byte offset %zu)", bad);
    return TL_ERR_INVALID_UTF8;
  }
  uint8_t sha[32];
  tl_sha256(src, len, sha);
  c.src = (char *)src;
  c.len = len;
  uint32_t root = 0;
  tl_status st = TL_OK;
  if (!cc_lex(&c) || !cc_parse(&c, &root)) {
    st = c.status;
    goto done;
  }
  size_t cap = 4096 + c.n_nodes * 48;
  for (size_t i = 0; i < c.n_strs; i++) cap += c.strs[i].len + 9;
  uint8_t *buf = malloc(cap);
  void *scratch_mem = malloc(1 << 16);
  tl_arena scratch;
  if (buf == NULL || scratch_mem == NULL) {
    free(buf);
    free(scratch_mem);
    st = TL_ERR_OUT_OF_MEMORY;
    goto done;
  }
  tl_arena_init(&scratch, scratch_mem, 1 << 16);
  st = write_ir(&c, root, sha, buf, cap, &scratch, ir_len);
  free(scratch_mem);
  if (st != TL_OK) {
    free(buf);
    if (err != NULL && err_cap > 0)
      strncpy(err, "IR encoding failed", err_cap - 1);
    goto done;
  }
  *ir = buf;
done:
  if (c.src == src) c.src = NULL;
  cc_free(&c);
  return st;
}
