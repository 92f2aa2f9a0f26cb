#include "receipt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor/cbor.h"
#include "cbor_doc.h"
#include "hash/sha256.h"
#include "receipt/node.h"

#define N_NODES 7

typedef struct node {
  const char *type;
  uint8_t *meta;
  size_t meta_len;
  int children[4];
  size_t n_children;
  uint8_t id[32];
} node;

static void put_ids(tl_cbor_writer *w, const uint32_t *ids, size_t n) {
  tl_cbor_begin_array(w, n);
  for (size_t i = 0; i < n; i++) tl_cbor_put_uint(w, ids[i]);
  tl_cbor_end_array(w);
}

static void put_section_digest(tl_cbor_writer *w, const tl_slm *slm,
                               tl_slm_kind kind) {
  const tl_slm_section *s;
  tl_cbor_begin_map(w, 1);
  tl_cbor_put_cstr(w, "section_blake3");
  if (tl_slm_find(slm, kind, &s) == TL_OK) tl_cbor_put_bytes(w, s->digest, 32);
  else tl_cbor_put_null(w);
  tl_cbor_end_map(w);
}

typedef struct emit_arg {
  const tl_run_facts *f;
  int which;
} emit_arg;

static void emit_meta(tl_cbor_writer *w, const void *arg) {
  const emit_arg *a = arg;
  const tl_run_facts *f = a->f;
  uint8_t digest[32];
  switch (a->which) {
    case 0: /* artifact */
      tl_cbor_begin_map(w, 1);
      tl_cbor_put_cstr(w, "artifact_id");
      tl_cbor_put_bytes(w, f->artifact_id, 32);
      tl_cbor_end_map(w);
      break;
    case 1: /* runtime */
      tl_cbor_begin_map(w, 5);
      tl_cbor_put_cstr(w, "name");
      tl_cbor_put_cstr(w, "tinylm");
      tl_cbor_put_cstr(w, "version");
      tl_cbor_put_cstr(w, TL_VERSION_STRING);
      tl_cbor_put_cstr(w, "backend");
      tl_cbor_put_cstr(w, "scalar");
      tl_cbor_put_cstr(w, "build_id");
      tl_cbor_put_cstr(w, f->build_id);
      tl_cbor_put_cstr(w, "numerical_profile");
      tl_cbor_put_cstr(w, "scalar-f32/1");
      tl_cbor_end_map(w);
      break;
    case 2:
      put_section_digest(w, f->slm, TL_SLM_TOKENIZER);
      break;
    case 3:
      put_section_digest(w, f->slm, TL_SLM_TEMPLATE);
      break;
    case 4: /* prompt */
      tl_sha256(f->prompt_bytes, f->prompt_len, digest);
      tl_cbor_begin_map(w, 4);
      tl_cbor_put_cstr(w, "ids");
      put_ids(w, f->prompt_ids, f->n_prompt);
      tl_cbor_put_cstr(w, "mode");
      tl_cbor_put_cstr(w, f->prompt_mode);
      tl_cbor_put_cstr(w, "position");
      tl_cbor_put_uint(w, f->position);
      tl_cbor_put_cstr(w, "bytes_sha256");
      tl_cbor_put_bytes(w, digest, 32);
      tl_cbor_end_map(w);
      break;
    case 5: /* sampler */
      tl_cbor_begin_map(w, 3);
      tl_cbor_put_cstr(w, "seed");
      tl_cbor_put_uint(w, f->seed);
      tl_cbor_put_cstr(w, "turn");
      tl_cbor_put_uint(w, f->turn);
      tl_cbor_put_cstr(w, "profile");
      tl_sampler_profile_cbor(f->profile, w);
      tl_cbor_end_map(w);
      break;
    default: /* generation */
      tl_cbor_begin_map(w, 4);
      tl_cbor_put_cstr(w, "ids");
      put_ids(w, f->ids, f->n_ids);
      tl_cbor_put_cstr(w, "raw");
      tl_cbor_put_bytes(w, f->raw, f->raw_len);
      tl_cbor_put_cstr(w, "stop");
      tl_cbor_put_cstr(w, f->stop);
      tl_cbor_put_cstr(w, "error");
      if (f->error) tl_cbor_put_cstr(w, f->error);
      else tl_cbor_put_null(w);
      tl_cbor_end_map(w);
  }
}

typedef struct file_arg {
  const tl_run_facts *f;
  node *nodes;
} file_arg;

static void emit_file(tl_cbor_writer *w, const void *arg) {
  const file_arg *a = arg;
  tl_cbor_begin_map(w, 4);
  tl_cbor_put_cstr(w, "root");
  tl_cbor_put_bytes(w, a->nodes[N_NODES - 1].id, 32);
  tl_cbor_put_cstr(w, "nodes");
  tl_cbor_begin_array(w, N_NODES);
  for (size_t i = 0; i < N_NODES; i++) {
    const node *n = &a->nodes[i];
    tl_cbor_reader r;
    tl_cbor_begin_map(w, 4);
    tl_cbor_put_cstr(w, "id");
    tl_cbor_put_bytes(w, n->id, 32);
    tl_cbor_put_cstr(w, "type");
    tl_cbor_put_cstr(w, n->type);
    tl_cbor_put_cstr(w, "children");
    tl_cbor_begin_array(w, n->n_children);
    for (size_t c = 0; c < n->n_children; c++)
      tl_cbor_put_bytes(w, a->nodes[n->children[c]].id, 32);
    tl_cbor_end_array(w);
    tl_cbor_put_cstr(w, "metadata");
    tl_cbor_reader_init(&r, n->meta, n->meta_len, NULL);
    tl_cbor_copy_item(&r, w);
    tl_cbor_end_map(w);
  }
  tl_cbor_end_array(w);
  tl_cbor_put_cstr(w, "format");
  tl_cbor_put_cstr(w, "tinylm.receipt/1");
  tl_cbor_put_cstr(w, "timings_us");
  tl_cbor_begin_map(w, 4);
  tl_cbor_put_cstr(w, "decode");
  tl_cbor_put_uint(w, a->f->decode_us);
  tl_cbor_put_cstr(w, "prefill");
  tl_cbor_put_uint(w, a->f->prefill_us);
  tl_cbor_put_cstr(w, "decode_tokens");
  tl_cbor_put_uint(w, a->f->n_ids);
  tl_cbor_put_cstr(w, "prefill_tokens");
  tl_cbor_put_uint(w, a->f->n_prompt);
  tl_cbor_end_map(w);
  tl_cbor_end_map(w);
}

tl_status tl_run_receipt(const tl_run_facts *f, uint8_t **doc, size_t *len,
                         uint8_t root[32]) {
  node nodes[N_NODES] = {
      {"artifact", NULL, 0, {0}, 0, {0}},
      {"runtime", NULL, 0, {0}, 0, {0}},
      {"tokenizer", NULL, 0, {0}, 0, {0}},
      {"template", NULL, 0, {0}, 0, {0}},
      {"prompt", NULL, 0, {2, 3}, 2, {0}},
      {"sampler", NULL, 0, {0}, 0, {0}},
      {"generation", NULL, 0, {0, 1, 4, 5}, 4, {0}}};
  tl_status st = TL_OK;
  for (int i = 0; i < N_NODES && st == TL_OK; i++) {
    emit_arg a = {f, i};
    uint8_t kids[4 * 32];
    st = tl_cbor_encode_alloc(emit_meta, &a, &nodes[i].meta, &nodes[i].meta_len);
    for (size_t c = 0; st == TL_OK && c < nodes[i].n_children; c++)
      memcpy(kids + 32 * c, nodes[nodes[i].children[c]].id, 32);
    if (st == TL_OK)
      st = tl_node_id(nodes[i].type, nodes[i].meta, nodes[i].meta_len, kids,
                      nodes[i].n_children, nodes[i].id);
  }
  if (st == TL_OK) {
    file_arg fa = {f, nodes};
    st = tl_cbor_encode_alloc(emit_file, &fa, doc, len);
    memcpy(root, nodes[N_NODES - 1].id, 32);
  }
  for (int i = 0; i < N_NODES; i++) free(nodes[i].meta);
  return st;
}

/* ------------------------------------------------------------------------ */

typedef struct seen_node {
  const uint8_t *id;
  uint8_t children[16 * 32]; /* child ids, back to back */
  size_t n_children;
} seen_node;

static tl_status check_node(tl_cbor_reader *r, seen_node *out, char *err,
                            size_t cap) {
  size_t n_pairs, n_kids = 0;
  const uint8_t *id = NULL, *meta = NULL;
  size_t id_len = 0, meta_len = 0;
  char type[32] = "";
  uint8_t *kids = out->children, want[32];
  if (tl_cbor_expect_map(r, &n_pairs) != TL_OK) return TL_ERR_INVALID_MODEL;
  for (size_t i = 0; i < n_pairs; i++) {
    const char *k;
    size_t klen;
    if (tl_cbor_expect_text(r, &k, &klen) != TL_OK) return TL_ERR_INVALID_MODEL;
    if (tl_cbor_text_is(k, klen, "id")) {
      if (tl_cbor_expect_bytes(r, &id, &id_len) != TL_OK || id_len != 32)
        return TL_ERR_INVALID_MODEL;
    } else if (tl_cbor_text_is(k, klen, "type")) {
      const char *t;
      size_t tlen;
      if (tl_cbor_expect_text(r, &t, &tlen) != TL_OK || tlen >= sizeof type)
        return TL_ERR_INVALID_MODEL;
      memcpy(type, t, tlen);
      type[tlen] = '\0';
    } else if (tl_cbor_text_is(k, klen, "children")) {
      if (tl_cbor_expect_array(r, &n_kids) != TL_OK || n_kids > 16)
        return TL_ERR_INVALID_MODEL;
      for (size_t c = 0; c < n_kids; c++) {
        const uint8_t *kid;
        size_t kid_len;
        if (tl_cbor_expect_bytes(r, &kid, &kid_len) != TL_OK || kid_len != 32)
          return TL_ERR_INVALID_MODEL;
        memcpy(kids + 32 * c, kid, 32);
      }
    } else if (tl_cbor_text_is(k, klen, "metadata")) {
      size_t start = r->pos;
      if (tl_cbor_skip(r) != TL_OK) return TL_ERR_INVALID_MODEL;
      meta = r->buf + start;
      meta_len = r->pos - start;
    } else if (tl_cbor_skip(r) != TL_OK) {
      return TL_ERR_INVALID_MODEL;
    }
  }
  if (id == NULL || meta == NULL || type[0] == '\0') return TL_ERR_INVALID_MODEL;
  if (tl_node_id(type, meta, meta_len, kids, n_kids, want) != TL_OK ||
      memcmp(want, id, 32) != 0) {
    snprintf(err, cap, "node of type '%s' does not hash to its id", type);
    return TL_ERR_HASH_MISMATCH;
  }
  out->id = id;
  out->n_children = n_kids;
  return TL_OK;
}

tl_status tl_receipt_check(const uint8_t *doc, size_t len, uint8_t root[32],
                           char *err, size_t err_cap) {
  tl_cbor_reader r;
  size_t n_pairs, n_nodes = 0;
  static seen_node nodes[64];
  const uint8_t *root_id = NULL;
  size_t root_len = 0;
  bool format_ok = false;
  tl_status st;
  snprintf(err, err_cap, "not a tinylm.receipt/1 document");
  if (tl_cbor_validate(doc, len, NULL, NULL) != TL_OK) return TL_ERR_INVALID_CBOR;
  tl_cbor_reader_init(&r, doc, len, NULL);
  if (tl_cbor_expect_map(&r, &n_pairs) != TL_OK) return TL_ERR_INVALID_MODEL;
  for (size_t i = 0; i < n_pairs; i++) {
    const char *k, *v;
    size_t klen, vlen;
    if (tl_cbor_expect_text(&r, &k, &klen) != TL_OK) return TL_ERR_INVALID_MODEL;
    if (tl_cbor_text_is(k, klen, "format")) {
      if (tl_cbor_expect_text(&r, &v, &vlen) != TL_OK) return TL_ERR_INVALID_MODEL;
      format_ok = tl_cbor_text_is(v, vlen, "tinylm.receipt/1");
    } else if (tl_cbor_text_is(k, klen, "root")) {
      if (tl_cbor_expect_bytes(&r, &root_id, &root_len) != TL_OK || root_len != 32)
        return TL_ERR_INVALID_MODEL;
    } else if (tl_cbor_text_is(k, klen, "nodes")) {
      if (tl_cbor_expect_array(&r, &n_nodes) != TL_OK || n_nodes > 64)
        return TL_ERR_INVALID_MODEL;
      for (size_t n = 0; n < n_nodes; n++) {
        st = check_node(&r, &nodes[n], err, err_cap);
        if (st != TL_OK) return st;
      }
    } else if (tl_cbor_skip(&r) != TL_OK) {
      return TL_ERR_INVALID_MODEL;
    }
  }
  if (!format_ok || root_id == NULL) return TL_ERR_INVALID_MODEL;
  for (size_t n = 0; n < n_nodes; n++) {
    for (size_t c = 0; c < nodes[n].n_children; c++) {
      bool found = false;
      for (size_t m = 0; m < n_nodes && !found; m++)
        found = memcmp(nodes[m].id, nodes[n].children + 32 * c, 32) == 0;
      if (!found) {
        snprintf(err, err_cap, "node %zu names a child that is not in the file", n);
        return TL_ERR_INVALID_MODEL;
      }
    }
  }
  for (size_t n = 0; n < n_nodes; n++) {
    if (memcmp(nodes[n].id, root_id, 32) == 0) {
      memcpy(root, root_id, 32);
      return TL_OK;
    }
  }
  snprintf(err, err_cap, "the root is not one of the nodes");
  return TL_ERR_INVALID_MODEL;
}
