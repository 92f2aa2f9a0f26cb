/* tinylm convert: see convert.h. */
#define _POSIX_C_SOURCE 200809L
#include "convert.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytes.h"
#include "cbor/cbor.h"
#include "cbor_doc.h"
#include "conflict.h"
#include "file.h"
#include "hash/blake3.h"
#include "hash/sha256.h"
#include "input_snapshot.h"
#include "kernels/kernels.h"
#include "quant/quant.h"
#include "qwen3_config.h"
#include "slm_tensor_dir.h"
#include "slm_write.h"
#include "st_modules.h"
#include "st_checkpoint.h"
#include "template_eos.h"
#include "tmpl_section_build.h"
#include "tok_compile.h"

#define MAX_NAME 128
#define MAX_SOURCES (8 + TL_ST_MAX_SHARDS)

static tl_status failf(char *err, size_t cap, tl_status st, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
static tl_status failf(char *err, size_t cap, tl_status st, const char *fmt,
                       ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                   */

typedef struct input_file {
  char name[256];
  uint64_t size;
  uint8_t sha256[32];
} input_file;

typedef struct inputs {
  input_file files[MAX_SOURCES];
  size_t n;
} inputs;

static tl_status hash_input(inputs *in, const char *dir, const char *name,
                            bool optional, bool *present, char *err,
                            size_t cap) {
  char path[4096];
  const uint8_t *data;
  size_t len;
  input_file *f = &in->files[in->n];
  tl_status st;
  struct stat probe; /* not fopen: a FIFO would block */
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (optional) {
    *present = stat(path, &probe) == 0;
    if (!*present) return TL_OK;
  }
  /* Every input is hashed here before it is parsed (a regular file only),
   * and its readers parse these same bytes (input_snapshot.h). */
  st = tl_snapshot_take(path, &data, &len, err, cap);
  if (st != TL_OK) return st;
  snprintf(f->name, sizeof f->name, "%s", name);
  f->size = len;
  st = tl_sha256(data, len, f->sha256);
  if (st == TL_OK) in->n++;
  return st;
}

static int input_cmp(const void *a, const void *b) {
  return strcmp(((const input_file *)a)->name, ((const input_file *)b)->name);
}

/* ------------------------------------------------------------------------ */
/* The tensors a Qwen3 config expects                                       */

typedef struct expected {
  char name[MAX_NAME];
  uint32_t rank;
  uint64_t shape[2];
  bool optional; /* a tied lm_head.weight may be absent */
} expected;

static void expect(expected *e, size_t *n, uint32_t rank, uint64_t d0,
                   uint64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void expect(expected *e, size_t *n, uint32_t rank, uint64_t d0,
                   uint64_t d1, const char *fmt, ...) {
  va_list ap;
  expected *x = &e[(*n)++];
  va_start(ap, fmt);
  vsnprintf(x->name, sizeof x->name, fmt, ap);
  va_end(ap);
  x->rank = rank;
  x->shape[0] = d0;
  x->shape[1] = d1;
  x->optional = false;
}

static int expected_cmp(const void *a, const void *b) {
  return strcmp(((const expected *)a)->name, ((const expected *)b)->name);
}

/* The Qwen3ForCausalLM parameter set (transformers' modeling_qwen3): names
 * and [out, in] shapes, sorted by name. */
static expected *expected_tensors(const tl_qwen3_config *c, size_t *n_out) {
  uint64_t h = c->hidden_size, q = (uint64_t)c->num_attention_heads * c->head_dim;
  uint64_t kv = (uint64_t)c->num_key_value_heads * c->head_dim;
  uint64_t hd = c->head_dim, in = c->intermediate_size, v = c->vocab_size;
  size_t n = 0, cap = 3 + 11 * (size_t)c->num_hidden_layers;
  expected *e = calloc(cap, sizeof *e);
  if (e == NULL) return NULL;
  expect(e, &n, 2, v, h, "model.embed_tokens.weight");
  expect(e, &n, 1, h, 0, "model.norm.weight");
  expect(e, &n, 2, v, h, "lm_head.weight");
  e[n - 1].optional = c->tie_word_embeddings;
  for (uint32_t l = 0; l < c->num_hidden_layers; l++) {
    const char *p = "model.layers";
    expect(e, &n, 1, h, 0, "%s.%u.input_layernorm.weight", p, l);
    expect(e, &n, 1, h, 0, "%s.%u.post_attention_layernorm.weight", p, l);
    expect(e, &n, 2, q, h, "%s.%u.self_attn.q_proj.weight", p, l);
    expect(e, &n, 2, kv, h, "%s.%u.self_attn.k_proj.weight", p, l);
    expect(e, &n, 2, kv, h, "%s.%u.self_attn.v_proj.weight", p, l);
    expect(e, &n, 2, h, q, "%s.%u.self_attn.o_proj.weight", p, l);
    expect(e, &n, 1, hd, 0, "%s.%u.self_attn.q_norm.weight", p, l);
    expect(e, &n, 1, hd, 0, "%s.%u.self_attn.k_norm.weight", p, l);
    expect(e, &n, 2, in, h, "%s.%u.mlp.gate_proj.weight", p, l);
    expect(e, &n, 2, in, h, "%s.%u.mlp.up_proj.weight", p, l);
    expect(e, &n, 2, h, in, "%s.%u.mlp.down_proj.weight", p, l);
  }
  qsort(e, n, sizeof *e, expected_cmp);
  *n_out = n;
  return e;
}

/* ------------------------------------------------------------------------ */
/* Conflict records                                                         */

typedef struct claim {
  const char *file;
  const uint64_t *shape; /* NULL: absent */
  size_t rank;
} claim;

typedef struct tconflict {
  const char *kind, *field;
  char message[1024];
  claim claims[2];
  size_t n_claims;
} tconflict;

/* The record (conflict.h; each claim's value a shape or id array) and the
 * message "conflict <kind>: <message>". */
static tl_status stop(tl_convert_report *r, tconflict *c, char *err,
                      size_t cap) {
  tl_conflict rec;
  tl_status st;
  memset(&rec, 0, sizeof rec);
  rec.kind = c->kind;
  rec.field = c->field;
  rec.message = c->message;
  rec.n_sources = c->n_claims;
  for (size_t i = 0; i < c->n_claims; i++) {
    json_t *v = NULL;
    if (c->claims[i].shape != NULL) {
      v = json_array();
      for (size_t d = 0; d < c->claims[i].rank; d++)
        json_array_append_new(v, json_integer((json_int_t)c->claims[i].shape[d]));
    }
    rec.sources[i].file = c->claims[i].file;
    rec.sources[i].value = v;
  }
  st = tl_conflict_encode(&rec, &r->conflict, &r->conflict_len);
  for (size_t i = 0; i < c->n_claims; i++) json_decref((json_t *)rec.sources[i].value);
  if (st != TL_OK) return st;
  return failf(err, cap, TL_ERR_CONFLICT, "conflict %s: %s", c->kind,
               c->message);
}

/* ------------------------------------------------------------------------ */
/* The plan: every source tensor, what it becomes                           */

typedef struct planned {
  const tl_st_tensor *src;
  const char *file; /* shard name */
  char name[MAX_NAME];   /* the runtime's name (model.*) */
  char source[MAX_NAME]; /* the checkpoint's (no model. prefix in an embedding one) */
  uint8_t src_blake3[32];
  bool alias;   /* stored as the tensor named by alias_of */
  const char *alias_of;
  tl_qtype dest; /* when stored */
  size_t entry;  /* its tensor directory entry, when stored */
} planned;

typedef struct plan {
  const tl_convert_options *opt;
  tl_st_checkpoint ck;
  tl_qwen3_config cfg;
  tl_tok_compiled tok;
  tl_tmpl_section_built tmpl;
  inputs in;
  planned *tensors; /* sorted by name */
  size_t n_tensors;
  tl_td_entry *entries; /* stored tensors, sorted by name */
  size_t n_entries;
  uint64_t data_len;
  const char *quant; /* "source", "f32", ... */
  uint32_t turn_end; /* the chat template's turn terminator (model) */
  json_t *gen_defaults; /* generation_config.json's sampling fields, or NULL */
  const tl_convert_acquisition *acq; /* the directory's acquisition receipt, bound */
  bool embedding; /* a sentence-transformers embedding checkpoint (st_modules.h) */
} plan;

static const char *qtype_name(tl_qtype t) {
  return tl_slm_dtype_name(tl_slm_dtype_code(t, false));
}

static tl_qtype st_qtype(tl_st_dtype d) {
  return d == TL_ST_F16 ? TL_QTYPE_F16 : d == TL_ST_BF16 ? TL_QTYPE_BF16
                                                         : TL_QTYPE_F32;
}

static bool parse_quant(const char *s, bool *source, tl_qtype *t) {
  static const char *names[] = {"f32", "f16", "bf16", "q8", "q4"};
  static const tl_qtype types[] = {TL_QTYPE_F32, TL_QTYPE_F16, TL_QTYPE_BF16,
                                   TL_QTYPE_Q8, TL_QTYPE_Q4};
  *source = s == NULL || strcmp(s, "source") == 0;
  if (*source) return true;
  for (size_t i = 0; i < 5; i++) {
    if (strcmp(s, names[i]) == 0) {
      *t = types[i];
      return true;
    }
  }
  return false;
}

static int planned_cmp(const void *a, const void *b) {
  return strcmp(((const planned *)a)->name, ((const planned *)b)->name);
}

static void shape_text(const uint64_t *shape, size_t rank, char *buf,
                       size_t cap) {
  size_t len = 0;
  len += (size_t)snprintf(buf, cap, "[");
  for (size_t d = 0; d < rank && len < cap; d++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%llu", d ? ", " : "",
                            (unsigned long long)shape[d]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* Binds every source tensor to an expected one (conflict stops for
 * missing, unconsumed and misshapen tensors and a divergent tied head). */
static tl_status bind(plan *p, tl_convert_report *r, char *err, size_t cap) {
  size_t n_exp = 0;
  expected *exp = expected_tensors(&p->cfg, &n_exp);
  tconflict c;
  tl_status st = TL_OK;
  if (exp == NULL) return failf(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
  p->tensors = calloc(p->ck.n_tensors ? p->ck.n_tensors : 1, sizeof *p->tensors);
  if (p->tensors == NULL) {
    free(exp);
    return failf(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (size_t i = 0; i < p->ck.n_tensors; i++) {
    planned *t = &p->tensors[i];
    const tl_st_tensor *s = &p->ck.tensors[i];
    t->src = s;
    t->file = p->ck.sources[s->shard].name;
    /* an embedding checkpoint is saved from Qwen3Model: no "model." */
    snprintf(t->source, sizeof t->source, "%.*s", (int)s->name_len, s->name);
    snprintf(t->name, sizeof t->name, "%s%.*s", p->embedding ? "model." : "",
             (int)s->name_len, s->name);
    if (s->name_len + 6 >= sizeof t->name) t->name[0] = '\0'; /* never expected */
  }
  p->n_tensors = p->ck.n_tensors;
  qsort(p->tensors, p->n_tensors, sizeof *p->tensors, planned_cmp);
  memset(&c, 0, sizeof c);
  /* Expected tensors, in name order: present, and of the right shape. */
  for (size_t i = 0; i < n_exp && st == TL_OK; i++) {
    planned key, *t;
    snprintf(key.name, sizeof key.name, "%s", exp[i].name);
    t = bsearch(&key, p->tensors, p->n_tensors, sizeof *p->tensors,
                planned_cmp);
    c.field = exp[i].name;
    c.claims[0] = (claim){"config.json", exp[i].shape, exp[i].rank};
    if (t == NULL) {
      if (exp[i].optional) continue;
      c.kind = "missing_tensor";
      c.claims[1] = (claim){"checkpoint", NULL, 0};
      c.n_claims = 2;
      snprintf(c.message, sizeof c.message,
               "the config requires tensor '%s'%s and no safetensors file has it",
               exp[i].name,
               strcmp(exp[i].name, "lm_head.weight") == 0
                   ? " (config.json sets tie_word_embeddings false)"
                   : "");
      st = stop(r, &c, err, cap);
      break;
    }
    if (t->src->rank != exp[i].rank ||
        memcmp(t->src->shape, exp[i].shape, exp[i].rank * sizeof(uint64_t))) {
      char want[96], got[96];
      bool vocab = strcmp(exp[i].name, "model.embed_tokens.weight") == 0 ||
                   strcmp(exp[i].name, "lm_head.weight") == 0;
      shape_text(exp[i].shape, exp[i].rank, want, sizeof want);
      shape_text(t->src->shape, t->src->rank, got, sizeof got);
      c.kind = vocab && t->src->rank == 2 && t->src->shape[1] == exp[i].shape[1]
                   ? "vocab_embedding_mismatch"
                   : "shape_mismatch";
      c.claims[1] = (claim){t->file, t->src->shape, t->src->rank};
      c.n_claims = 2;
      snprintf(c.message, sizeof c.message,
               "tensor '%s' in %s has shape %s; the config (vocab_size %u, "
               "hidden_size %u, ...) requires %s",
               exp[i].name, t->file, got, p->cfg.vocab_size,
               p->cfg.hidden_size, want);
      st = stop(r, &c, err, cap);
    }
  }
  /* Source tensors the config does not account for. */
  for (size_t i = 0; i < p->n_tensors && st == TL_OK; i++) {
    expected key;
    planned *t = &p->tensors[i];
    snprintf(key.name, sizeof key.name, "%s", t->name);
    if (t->name[0] != '\0' &&
        bsearch(&key, exp, n_exp, sizeof *exp, expected_cmp) != NULL)
      continue;
    c.kind = "unconsumed_tensor";
    c.field = t->name[0] ? t->name : "(long name)";
    c.claims[0] = (claim){t->file, t->src->shape, t->src->rank};
    c.n_claims = 1;
    snprintf(c.message, sizeof c.message,
             "tensor '%.*s' in %s is not part of a Qwen3ForCausalLM with this "
             "config; refusing to drop it",
             (int)(t->src->name_len > 200 ? 200 : t->src->name_len),
             t->src->name, t->file);
    st = stop(r, &c, err, cap);
  }
  free(exp);
  return st;
}

/* memcmp of two equally long tensors, slice by slice, each slice leaving
 * the resident set once compared (the two are never both resident). */
static bool same_bytes(const plan *p, const tl_st_tensor *a,
                       const tl_st_tensor *b) {
  enum { SLICE = 16 << 20 };
  const tl_file_view *va = &p->ck.sources[a->shard].view;
  const tl_file_view *vb = &p->ck.sources[b->shard].view;
  for (size_t off = 0; off < a->len; off += SLICE) {
    size_t n = a->len - off < SLICE ? a->len - off : SLICE;
    bool same = memcmp(a->data + off, b->data + off, n) == 0;
    tl_file_release(va, a->data + off, n);
    tl_file_release(vb, b->data + off, n);
    if (!same) return false;
  }
  return true;
}

/* A tied lm_head.weight is stored once: byte-identical to the embedding,
 * it becomes an alias; anything else is a conflict. */
static tl_status tie(plan *p, tl_convert_report *r, char *err, size_t cap) {
  planned key, *head, *emb;
  tconflict c;
  snprintf(key.name, sizeof key.name, "lm_head.weight");
  head = bsearch(&key, p->tensors, p->n_tensors, sizeof *p->tensors,
                 planned_cmp);
  if (head == NULL || !p->cfg.tie_word_embeddings) return TL_OK;
  snprintf(key.name, sizeof key.name, "model.embed_tokens.weight");
  emb = bsearch(&key, p->tensors, p->n_tensors, sizeof *p->tensors,
                planned_cmp);
  if (emb->src->dtype == head->src->dtype &&
      same_bytes(p, emb->src, head->src)) {
    head->alias = true;
    head->alias_of = emb->name;
    return TL_OK;
  }
  memset(&c, 0, sizeof c);
  c.kind = "tied_lm_head_divergent";
  c.field = "lm_head.weight";
  c.claims[0] = (claim){emb->file, emb->src->shape, emb->src->rank};
  c.claims[1] = (claim){head->file, head->src->shape, head->src->rank};
  c.n_claims = 2;
  snprintf(c.message, sizeof c.message,
           "config.json sets tie_word_embeddings, but lm_head.weight (%s, %s) "
           "is not byte-identical to model.embed_tokens.weight (%s, %s)",
           head->file, tl_st_dtype_name(head->src->dtype), emb->file,
           tl_st_dtype_name(emb->src->dtype));
  return stop(r, &c, err, cap);
}

/* ------------------------------------------------------------------------ */
/* Elements                                                                 */

static float load_elem(const uint8_t *p, tl_st_dtype d) {
  switch (d) {
    case TL_ST_F16: return tl_f16_to_f32(tl_load_le16(p));
    case TL_ST_BF16: return tl_bf16_to_f32(tl_load_le16(p));
    case TL_ST_F32: break;
  }
  return tl_bits_to_f32(tl_load_le32(p));
}

static bool finite(float x) { return x - x == 0.0f; }

/* BLAKE3 of a source tensor and the check that every element is finite,
 * slice by slice (the slices leave the resident set). */
static tl_status scan(plan *p, planned *t, char *err, size_t cap) {
  enum { SLICE = 16 << 20 };
  const tl_st_tensor *s = t->src;
  const tl_file_view *view = &p->ck.sources[s->shard].view;
  size_t esize = tl_st_dtype_size(s->dtype);
  tl_blake3_hasher h;
  tl_blake3_hasher_init(&h);
  for (size_t off = 0; off < s->len; off += SLICE) {
    size_t n = s->len - off < SLICE ? s->len - off : SLICE;
    for (size_t k = 0; k < n; k += esize) {
      float x = load_elem(s->data + off + k, s->dtype);
      if (!finite(x))
        return failf(err, cap, TL_ERR_NUMERICAL_FAILURE,
                     "tensor '%s' in %s: element %zu is %s; refusing to "
                     "convert a non-finite weight",
                     t->name, t->file, (off + k) / esize,
                     x != x ? "NaN" : x > 0 ? "+Inf" : "-Inf");
    }
    tl_blake3_hasher_update(&h, s->data + off, n);
    tl_file_release(view, s->data + off, n);
  }
  return tl_blake3_hasher_finalize(&h, t->src_blake3, 32);
}

/* ------------------------------------------------------------------------ */
/* Layout and metadata                                                      */

static tl_status lay_out(plan *p, char *err, size_t cap) {
  bool source;
  tl_qtype want = TL_QTYPE_F32;
  (void)parse_quant(p->quant, &source, &want);
  p->entries = calloc(p->n_tensors ? p->n_tensors : 1, sizeof *p->entries);
  if (p->entries == NULL)
    return failf(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < p->n_tensors; i++) {
    planned *t = &p->tensors[i];
    tl_td_entry *e;
    tl_qtype src_type = st_qtype(t->src->dtype);
    if (t->alias) continue;
    /* Norm weights (1-D) stay f32: exact from any source type and tiny. */
    t->dest = t->src->rank == 1 ? TL_QTYPE_F32 : source ? src_type : want;
    t->entry = p->n_entries++;
    e = &p->entries[t->entry];
    e->name = t->name;
    e->type = t->dest;
    e->packed = p->opt->packed && (e->type == TL_QTYPE_Q8 || e->type == TL_QTYPE_Q4);
    e->rank = (uint32_t)t->src->rank;
    memcpy(e->shape, t->src->shape, t->src->rank * sizeof(uint64_t));
  }
  return tl_td_layout(p->entries, p->n_entries, &p->data_len, err, cap);
}

static const char *lower_dtype(tl_st_dtype d) {
  return d == TL_ST_F32 ? "f32" : d == TL_ST_F16 ? "f16" : "bf16";
}

static void put_cast(tl_cbor_writer *w, const char *from, const char *to) {
  tl_cbor_begin_map(w, 3);
  tl_cbor_put_cstr(w, "op");
  tl_cbor_put_cstr(w, "cast");
  tl_cbor_put_cstr(w, "from");
  tl_cbor_put_cstr(w, from);
  tl_cbor_put_cstr(w, "to");
  tl_cbor_put_cstr(w, to);
  tl_cbor_end_map(w);
}

/* SLM-20: the ordered transforms of one source tensor. */
static void put_ops(tl_cbor_writer *w, const planned *t) {
  const char *from = lower_dtype(t->src->dtype);
  tl_qtype src_type = st_qtype(t->src->dtype);
  if (t->alias) {
    tl_cbor_begin_array(w, 1);
    tl_cbor_begin_map(w, 3);
    tl_cbor_put_cstr(w, "op");
    tl_cbor_put_cstr(w, "alias");
    tl_cbor_put_cstr(w, "of");
    tl_cbor_put_cstr(w, t->alias_of);
    tl_cbor_put_cstr(w, "check");
    tl_cbor_put_cstr(w, "byte-identical");
    tl_cbor_end_map(w);
    tl_cbor_end_array(w);
    return;
  }
  if (t->dest == src_type) { /* byte copy */
    tl_cbor_begin_array(w, 0);
    tl_cbor_end_array(w);
    return;
  }
  {
    bool via_f32 = src_type != TL_QTYPE_F32 && t->dest != TL_QTYPE_F32;
    bool quantize = t->dest == TL_QTYPE_Q8 || t->dest == TL_QTYPE_Q4;
    size_t n_ops = (size_t)via_f32 + 1;
    tl_cbor_begin_array(w, n_ops);
    if (via_f32 || t->dest == TL_QTYPE_F32) put_cast(w, from, "f32");
    if (quantize) {
      tl_cbor_begin_map(w, 3);
      tl_cbor_put_cstr(w, "op");
      tl_cbor_put_cstr(w, "quantize");
      tl_cbor_put_cstr(w, "to");
      tl_cbor_put_cstr(w, qtype_name(t->dest));
      tl_cbor_put_cstr(w, "block");
      tl_cbor_put_uint(w, TL_QUANT_BLOCK);
      tl_cbor_end_map(w);
    } else if (t->dest != TL_QTYPE_F32) {
      put_cast(w, "f32", qtype_name(t->dest));
    }
    tl_cbor_end_array(w);
  }
}

static void put_sources(tl_cbor_writer *w, const inputs *in) {
  tl_cbor_begin_array(w, in->n);
  for (size_t i = 0; i < in->n; i++) {
    tl_cbor_begin_map(w, 3);
    tl_cbor_put_cstr(w, "name");
    tl_cbor_put_cstr(w, in->files[i].name);
    tl_cbor_put_cstr(w, "size");
    tl_cbor_put_uint(w, in->files[i].size);
    tl_cbor_put_cstr(w, "sha256");
    tl_cbor_put_bytes(w, in->files[i].sha256, 32);
    tl_cbor_end_map(w);
  }
  tl_cbor_end_array(w);
}

static void put_converter(tl_cbor_writer *w, const char *build_id) {
  tl_cbor_begin_map(w, build_id ? 3 : 2);
  tl_cbor_put_cstr(w, "name");
  tl_cbor_put_cstr(w, "tinylm convert");
  tl_cbor_put_cstr(w, "version");
  tl_cbor_put_cstr(w, TL_VERSION_STRING);
  if (build_id) {
    tl_cbor_put_cstr(w, "build_id");
    tl_cbor_put_cstr(w, build_id);
  }
  tl_cbor_end_map(w);
}

static void put_tokenizer(tl_cbor_writer *w, const plan *p) {
  uint8_t digest[32];
  size_t n_src = 0;
  tl_sha256(p->tok.section, p->tok.len, digest);
  for (size_t i = 0; i < p->in.n; i++)
    n_src += strncmp(p->in.files[i].name, "tokenizer", 9) == 0;
  tl_cbor_begin_map(w, 6);
  tl_cbor_put_cstr(w, "profile");
  tl_cbor_put_cstr(w, "qwen2-byte-bpe");
  tl_cbor_put_cstr(w, "n_tokens");
  tl_cbor_put_uint(w, p->tok.n_tokens);
  tl_cbor_put_cstr(w, "n_merges");
  tl_cbor_put_uint(w, p->tok.n_merges);
  tl_cbor_put_cstr(w, "n_added");
  tl_cbor_put_uint(w, p->tok.n_added);
  tl_cbor_put_cstr(w, "section_sha256");
  tl_cbor_put_bytes(w, digest, 32);
  tl_cbor_put_cstr(w, "sources");
  tl_cbor_begin_array(w, n_src);
  for (size_t i = 0; i < p->in.n; i++) {
    const input_file *f = &p->in.files[i];
    if (strncmp(f->name, "tokenizer", 9) != 0) continue;
    tl_cbor_begin_map(w, 3);
    tl_cbor_put_cstr(w, "name");
    tl_cbor_put_cstr(w, f->name);
    tl_cbor_put_cstr(w, "size");
    tl_cbor_put_uint(w, f->size);
    tl_cbor_put_cstr(w, "sha256");
    tl_cbor_put_bytes(w, f->sha256, 32);
    tl_cbor_end_map(w);
  }
  tl_cbor_end_array(w);
  tl_cbor_end_map(w);
}

static void put_template(tl_cbor_writer *w, const plan *p) {
  bool model = !p->opt->tokenizer_only;
  tl_cbor_begin_map(w, model ? 3 : 2);
  tl_cbor_put_cstr(w, "source_sha256");
  tl_cbor_put_bytes(w, p->tmpl.source_sha256, 32);
  tl_cbor_put_cstr(w, "ir_sha256");
  tl_cbor_put_bytes(w, p->tmpl.ir_sha256, 32);
  if (model) {
    tl_cbor_put_cstr(w, "turn_end_id");
    tl_cbor_put_uint(w, p->turn_end);
  }
  tl_cbor_end_map(w);
}

static void put_ledger(tl_cbor_writer *w, const plan *p) {
  tl_cbor_begin_array(w, p->n_tensors);
  for (size_t i = 0; i < p->n_tensors; i++) {
    const planned *t = &p->tensors[i];
    tl_cbor_begin_map(w, 7);
    tl_cbor_put_cstr(w, "source");
    tl_cbor_put_cstr(w, t->source);
    tl_cbor_put_cstr(w, "file");
    tl_cbor_put_cstr(w, t->file);
    tl_cbor_put_cstr(w, "dtype");
    tl_cbor_put_cstr(w, tl_st_dtype_name(t->src->dtype));
    tl_cbor_put_cstr(w, "shape");
    tl_cbor_begin_array(w, t->src->rank);
    for (size_t d = 0; d < t->src->rank; d++)
      tl_cbor_put_uint(w, t->src->shape[d]);
    tl_cbor_end_array(w);
    tl_cbor_put_cstr(w, "blake3");
    tl_cbor_put_bytes(w, t->src_blake3, 32);
    tl_cbor_put_cstr(w, "dest");
    tl_cbor_put_cstr(w, t->alias ? t->alias_of : t->name);
    tl_cbor_put_cstr(w, "ops");
    put_ops(w, t);
    tl_cbor_end_map(w);
  }
  tl_cbor_end_array(w);
}

static void put_gen_defaults(tl_cbor_writer *w, const json_t *d) {
  const char *key;
  json_t *v;
  if (d == NULL) {
    tl_cbor_put_null(w);
    return;
  }
  tl_cbor_begin_map(w, json_object_size(d));
  json_object_foreach((json_t *)d, key, v) {
    tl_cbor_put_cstr(w, key);
    if (json_is_boolean(v)) tl_cbor_put_bool(w, json_is_true(v));
    else if (json_is_integer(v) && strcmp(key, "top_k") == 0)
      tl_cbor_put_uint(w, (uint64_t)json_integer_value(v));
    else tl_cbor_put_float_text(w, json_number_value(v));
  }
  tl_cbor_end_map(w);
}

/* Where the source files came from (an acquisition receipt's source). */
static void put_acquisition(tl_cbor_writer *w, const tl_convert_acquisition *a) {
  static const char *const keys[] = {"endpoint", "repo_id", "requested_revision",
                                     "resolved_commit"};
  tl_cbor_put_cstr(w, "acquisition");
  tl_cbor_begin_map(w, 5);
  tl_cbor_put_cstr(w, "receipt_id");
  tl_cbor_put_bytes(w, a->receipt_id, 32);
  for (size_t i = 0; i < 4; i++) {
    tl_cbor_put_cstr(w, keys[i]);
    tl_cbor_put_json(w, json_object_get(a->source, keys[i]));
  }
  tl_cbor_end_map(w);
}

/* A directory tinylm pull wrote carries its receipt: every input must be
 * one of its files, byte for byte (sizes and SHA-256 as hashed here). */
static tl_status bind_acquisition(plan *p, char *err, size_t cap) {
  const tl_convert_acquisition *a = p->opt->acquisition;
  const char *path = a != NULL ? a->path : "";
  char sha[65];
  tl_status st = TL_OK;
  if (a == NULL) return TL_OK;
  p->acq = a;
  for (size_t i = 0; i < p->in.n && st == TL_OK; i++) {
    const input_file *f = &p->in.files[i];
    const json_t *want = a->file(a->ctx, f->name);
    const char *want_sha = json_string_value(json_object_get(want, "sha256"));
    tl_hex_encode(f->sha256, 32, sha);
    if (want == NULL)
      st = failf(err, cap, TL_ERR_HASH_MISMATCH,
                 "%s is not among the files of the acquisition receipt %s",
                 f->name, path);
    else if (json_integer_value(json_object_get(want, "size")) != (json_int_t)f->size ||
             want_sha == NULL || strcmp(want_sha, sha) != 0)
      st = failf(err, cap, TL_ERR_HASH_MISMATCH,
                 "%s has changed since it was acquired: SHA-256 %s (%llu bytes), "
                 "the acquisition receipt says %s (%lld bytes)",
                 f->name, sha, (unsigned long long)f->size,
                 want_sha ? want_sha : "?",
                 (long long)json_integer_value(json_object_get(want, "size")));
  }
  return st;
}

static const char quant_rule[] =
    "1-D tensors (RMSNorm weights): f32; 2-D tensors: the requested type "
    "(source: each tensor's own dtype)";

static void emit_metadata(tl_cbor_writer *w, const void *arg) {
  const plan *p = arg;
  uint8_t config_sha[32];
  tl_sha256(p->cfg.cbor, p->cfg.cbor_len, config_sha);
  tl_cbor_begin_map(w, 11 + (p->acq != NULL) + p->embedding);
  if (p->acq != NULL) put_acquisition(w, p->acq);
  if (p->embedding) {
    tl_cbor_put_cstr(w, "embedding");
    tl_cbor_begin_map(w, 3);
    tl_cbor_put_cstr(w, "pooling");
    tl_cbor_put_cstr(w, "last");
    tl_cbor_put_cstr(w, "normalize");
    tl_cbor_put_bool(w, true);
    tl_cbor_put_cstr(w, "append_id");
    tl_cbor_put_uint(w, (uint64_t)p->tok.append_id);
    tl_cbor_end_map(w);
  }
  tl_cbor_put_cstr(w, "format");
  tl_cbor_put_cstr(w, "tinylm.slm");
  tl_cbor_put_cstr(w, "artifact_kind");
  tl_cbor_put_cstr(w, "model");
  tl_cbor_put_cstr(w, "converter");
  put_converter(w, NULL);
  tl_cbor_put_cstr(w, "tokenizer");
  put_tokenizer(w, p);
  tl_cbor_put_cstr(w, "chat_template");
  put_template(w, p);
  tl_cbor_put_cstr(w, "config");
  tl_cbor_put_item(w, p->cfg.cbor, p->cfg.cbor_len);
  tl_cbor_put_cstr(w, "config_sha256");
  tl_cbor_put_bytes(w, config_sha, 32);
  tl_cbor_put_cstr(w, "quantization");
  tl_cbor_begin_map(w, 3);
  tl_cbor_put_cstr(w, "requested");
  tl_cbor_put_cstr(w, p->quant);
  tl_cbor_put_cstr(w, "block");
  tl_cbor_put_uint(w, TL_QUANT_BLOCK);
  tl_cbor_put_cstr(w, "rule");
  tl_cbor_put_cstr(w, quant_rule);
  tl_cbor_end_map(w);
  tl_cbor_put_cstr(w, "ledger");
  put_ledger(w, p);
  tl_cbor_put_cstr(w, "generation_defaults");
  put_gen_defaults(w, p->gen_defaults);
  tl_cbor_put_cstr(w, "sources");
  put_sources(w, &p->in);
  tl_cbor_end_map(w);
}

typedef struct receipt_args {
  const plan *p;
  const tl_convert_report *r;
} receipt_args;

static void emit_receipt(tl_cbor_writer *w, const void *arg) {
  const receipt_args *a = arg;
  const plan *p = a->p;
  uint8_t config_sha[32] = {0}, tok_sha[32];
  bool model = !p->opt->tokenizer_only;
  if (model) tl_sha256(p->cfg.cbor, p->cfg.cbor_len, config_sha);
  tl_sha256(p->tok.section, p->tok.len, tok_sha);
  tl_cbor_begin_map(w, model ? 10 : 9);
  tl_cbor_put_cstr(w, "receipt");
  tl_cbor_put_cstr(w, "tinylm.convert/1");
  tl_cbor_put_cstr(w, "artifact_id");
  tl_cbor_put_bytes(w, a->r->artifact_id, 32);
  tl_cbor_put_cstr(w, "artifact_bytes");
  tl_cbor_put_uint(w, a->r->artifact_bytes);
  tl_cbor_put_cstr(w, "converter");
  put_converter(w, p->opt->build_id ? p->opt->build_id : "unknown");
  tl_cbor_put_cstr(w, "options");
  tl_cbor_begin_map(w, 2);
  tl_cbor_put_cstr(w, "quant");
  tl_cbor_put_cstr(w, model ? p->quant : "none");
  tl_cbor_put_cstr(w, "tokenizer_only");
  tl_cbor_put_bool(w, !model);
  tl_cbor_end_map(w);
  tl_cbor_put_cstr(w, "sources");
  put_sources(w, &p->in);
  if (model) {
    tl_cbor_put_cstr(w, "config_sha256");
    tl_cbor_put_bytes(w, config_sha, 32);
  }
  tl_cbor_put_cstr(w, "tokenizer_section_sha256");
  tl_cbor_put_bytes(w, tok_sha, 32);
  tl_cbor_put_cstr(w, "template_ir_sha256");
  tl_cbor_put_bytes(w, p->tmpl.ir_sha256, 32);
  tl_cbor_put_cstr(w, "template_source_sha256");
  tl_cbor_put_bytes(w, p->tmpl.source_sha256, 32);
  tl_cbor_end_map(w);
}

/* The metadata of a tokenizer-only artifact (docs/slm.md). */
static void emit_tokenizer_only(tl_cbor_writer *w, const void *arg) {
  const plan *p = arg;
  tl_cbor_begin_map(w, 5);
  tl_cbor_put_cstr(w, "chat_template");
  put_template(w, p);
  tl_cbor_put_cstr(w, "format");
  tl_cbor_put_cstr(w, "tinylm.slm");
  tl_cbor_put_cstr(w, "artifact_kind");
  tl_cbor_put_cstr(w, "tokenizer-only");
  tl_cbor_put_cstr(w, "converter");
  put_converter(w, NULL);
  tl_cbor_put_cstr(w, "tokenizer");
  put_tokenizer(w, p);
  tl_cbor_end_map(w);
}

/* ------------------------------------------------------------------------ */
/* Streaming the tensor data                                                */

static tl_status write_tensor(plan *p, tl_slm_writer *w, size_t section,
                              planned *t, char *err, size_t cap) {
  enum { CHUNK_ELEMS = 1 << 20 };
  tl_td_entry *e = &p->entries[t->entry];
  const tl_st_tensor *s = t->src;
  const tl_file_view *view = &p->ck.sources[s->shard].view;
  size_t esize = tl_st_dtype_size(s->dtype), n = e->n, rows_per;
  size_t row_bytes, src_row = n * esize;
  tl_qtype src_type = st_qtype(s->dtype);
  tl_blake3_hasher h;
  float *f = NULL;
  uint8_t *out = NULL;
  tl_status st = TL_OK;
  tl_blake3_hasher_init(&h);
  if (e->type == src_type) { /* byte copy, slice by slice (flat RSS) */
    enum { SLICE = 16 << 20 };
    for (size_t off = 0; off < s->len && st == TL_OK; off += SLICE) {
      size_t k = s->len - off < SLICE ? s->len - off : SLICE;
      tl_blake3_hasher_update(&h, s->data + off, k);
      st = tl_slm_writer_append(w, section, s->data + off, k, err, cap);
      tl_file_release(view, s->data + off, k);
    }
    if (st == TL_OK) st = tl_blake3_hasher_finalize(&h, e->digest, 32);
    return st;
  }
  (void)tl_quant_row_bytes(e->type, n, &row_bytes); /* checked by layout */
  rows_per = n >= CHUNK_ELEMS ? 1 : CHUNK_ELEMS / n;
  if (rows_per > e->rows) rows_per = e->rows;
  f = malloc(rows_per * n * sizeof *f);
  out = malloc(rows_per * row_bytes);
  if (f == NULL || out == NULL) {
    st = failf(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t r0 = 0; r0 < e->rows && st == TL_OK; r0 += rows_per) {
    size_t rows = e->rows - r0 < rows_per ? e->rows - r0 : rows_per;
    const uint8_t *in = s->data + r0 * src_row;
    size_t bad = 0;
    for (size_t k = 0; k < rows * n; k++) f[k] = load_elem(in + k * esize, s->dtype);
    st = tl_quant_pack(e->type, f, rows, n, out, rows * row_bytes, &bad);
    if (st == TL_ERR_NUMERICAL_FAILURE) {
      /* scan() refused non-finite sources: a finite element here is one
       * the destination type cannot represent. */
      float x = bad < rows * n ? f[bad] : 0.0f;
      if (bad < rows * n && finite(x))
        st = failf(err, cap, st,
                   "tensor '%s' in %s: element %zu (%.9g) overflows %s; "
                   "refusing to store an infinity",
                   t->name, t->file, r0 * n + bad, (double)x,
                   qtype_name(e->type));
      else
        st = failf(err, cap, st, "tensor '%s' in %s: element %zu is not finite",
                   t->name, t->file, r0 * n + bad);
      break;
    }
    if (st != TL_OK) {
      st = failf(err, cap, st, "tensor '%s': packing failed", t->name);
      break;
    }
    /* the digest covers the bytes as the file holds them */
    if (e->packed) tl_kern_pack(e->type, out, out, row_bytes, n, 0, rows);
    tl_blake3_hasher_update(&h, out, rows * row_bytes);
    st = tl_slm_writer_append(w, section, out, rows * row_bytes, err, cap);
    tl_file_release(view, in, rows * src_row);
  }
  if (st == TL_OK) st = tl_blake3_hasher_finalize(&h, e->digest, 32);
done:
  free(f);
  free(out);
  return st;
}

/* Metadata, tokenizer and template, then (model artifacts) the tensor data
 * streamed tensor by tensor and the directory with the digests it got. */
static tl_status write_artifact(plan *p, tl_convert_report *r, char *err,
                                size_t cap) {
  static const uint8_t zeros[TL_SLM_ALIGN];
  bool model = !p->opt->tokenizer_only;
  uint8_t *meta = NULL, *dir = NULL;
  size_t meta_len = 0, dir_len = 0;
  uint64_t at = 0;
  tl_slm_writer w;
  tl_status st = tl_cbor_encode_alloc(
      model ? emit_metadata : emit_tokenizer_only, p, &meta, &meta_len);
  if (st != TL_OK)
    return failf(err, cap, TL_ERR_INTERNAL_INVARIANT,
                 "metadata encoding failed (%s)", tl_status_name(st));
  if (model) {
    dir_len = tl_td_encoded_len(p->entries, p->n_entries);
    dir = calloc(1, dir_len);
    if (dir == NULL) {
      free(meta);
      return failf(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
    }
  }
  {
    tl_slm_part parts[5] = {
        {TL_SLM_METADATA, TL_SLM_SECTION_REQUIRED, meta, meta_len},
        {TL_SLM_TOKENIZER, TL_SLM_SECTION_REQUIRED, p->tok.section, p->tok.len},
        {TL_SLM_TEMPLATE, TL_SLM_SECTION_REQUIRED, p->tmpl.bytes, p->tmpl.len},
        {TL_SLM_TENSOR_DIR, TL_SLM_SECTION_REQUIRED, NULL, dir_len},
        {TL_SLM_TENSOR_DATA, TL_SLM_SECTION_REQUIRED, NULL, p->data_len}};
    st = tl_slm_writer_begin(&w, p->opt->out_path, parts, model ? 5 : 3, err,
                             cap);
    for (size_t i = 0; i < 3 && st == TL_OK; i++)
      st = tl_slm_writer_append(&w, i, parts[i].data, parts[i].len, err, cap);
  }
  size_t stored = 0, done = 0; /* tensors with their own bytes, for progress */
  for (size_t i = 0; i < p->n_tensors; i++) stored += !p->tensors[i].alias;
  for (size_t i = 0; model && i < p->n_tensors && st == TL_OK; i++) {
    planned *t = &p->tensors[i];
    const tl_td_entry *e = &p->entries[t->entry];
    if (t->alias) continue;
    if (e->offset > at) /* SLM-12: zero padding up to the next 64 */
      st = tl_slm_writer_append(&w, 4, zeros, (size_t)(e->offset - at), err,
                                cap);
    if (st == TL_OK) st = write_tensor(p, &w, 4, t, err, cap);
    at = e->offset + e->len;
    if (st == TL_OK && p->opt->on_tensor != NULL)
      p->opt->on_tensor(p->opt->progress_ctx, ++done, stored, at, p->data_len);
  }
  if (model && st == TL_OK) {
    tl_td_encode(p->entries, p->n_entries, dir);
    st = tl_slm_writer_append(&w, 3, dir, dir_len, err, cap);
  }
  if (st == TL_OK) {
    r->artifact_bytes = w.file_len;
    st = tl_slm_writer_finish(&w, r->artifact_id, err, cap);
  } else {
    tl_slm_writer_abort(&w); /* safe when begin failed: nothing to remove */
  }
  free(meta);
  free(dir);
  return st;
}

static tl_status write_receipt(plan *p, tl_convert_report *r, char *err,
                               size_t cap) {
  receipt_args a = {p, r};
  char path[4096];
  uint8_t *doc = NULL;
  size_t len = 0;
  tl_status st = tl_cbor_encode_alloc(emit_receipt, &a, &doc, &len);
  if (st != TL_OK)
    return failf(err, cap, TL_ERR_INTERNAL_INVARIANT,
                 "receipt encoding failed (%s)", tl_status_name(st));
  if (p->opt->receipt_path != NULL)
    snprintf(path, sizeof path, "%s", p->opt->receipt_path);
  else
    snprintf(path, sizeof path, "%s.receipt.cbor", p->opt->out_path);
  st = tl_file_write_atomic(path, doc, len, err, cap);
  free(doc);
  return st;
}

/* ------------------------------------------------------------------------ */

/* The sampling defaults the publisher declares in generation_config.json
 * (docs/slm.md §generation_defaults): do_sample, temperature, top_k, top_p,
 * min_p, repetition_penalty, each checked; other keys are not sampling
 * settings and are left to the config resolver. */
static tl_status read_gen_defaults(plan *p, const char *path, char *err,
                                   size_t cap) {
  static const struct {
    const char *key;
    char kind; /* b bool, u unsigned integer, f float in [lo, hi] */
    double lo, hi;
  } fields[] = {{"do_sample", 'b', 0, 0},        {"temperature", 'f', 0, 1e6},
                {"top_k", 'u', 0, 4294967295.0}, {"top_p", 'f', 0, 1},
                {"min_p", 'f', 0, 1},            {"repetition_penalty", 'f', 1e-6, 1e6}};
  json_error_t je;
  json_t *doc = tl_snapshot_json(path, JSON_REJECT_DUPLICATES, &je), *out;
  if (doc == NULL || !json_is_object(doc)) {
    json_decref(doc);
    return failf(err, cap, TL_ERR_INVALID_MODEL, "%s: line %d: %s", path,
                 je.line, doc ? "not a JSON object" : je.text);
  }
  out = json_object();
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    json_t *v = json_object_get(doc, fields[i].key);
    bool ok;
    if (v == NULL || json_is_null(v)) continue;
    switch (fields[i].kind) {
      case 'b': ok = json_is_boolean(v); break;
      case 'u': ok = json_is_integer(v) && json_integer_value(v) >= 0 &&
                     (double)json_integer_value(v) <= fields[i].hi; break;
      default: ok = json_is_number(v) && isfinite(json_number_value(v)) &&
                    json_number_value(v) >= fields[i].lo &&
                    json_number_value(v) <= fields[i].hi;
    }
    if (!ok) {
      json_decref(doc);
      json_decref(out);
      return failf(err, cap, TL_ERR_INVALID_MODEL,
                   "%s: $.%s: not a valid sampling value", path, fields[i].key);
    }
    json_object_set(out, fields[i].key, v);
  }
  json_decref(doc);
  p->gen_defaults = out;
  return TL_OK;
}

static bool id_in(uint32_t id, const uint32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return true;
  return false;
}

static tl_status prepare_model(plan *p, tl_convert_report *r, char *err,
                               size_t cap) {
  const tl_convert_options *o = p->opt;
  const tl_qwen3_profile *profile = NULL;
  char cfg_path[4096], gen_path[4096], tokcfg_path[4096];
  bool has_gen = false, present = true;
  tl_status st;
  if (o->profile != NULL) {
    profile = tl_qwen3_profile_publisher_0_6b();
    if (strcmp(o->profile, profile->name) != 0)
      return failf(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "unknown profile '%s' (known: %s)", o->profile,
                   profile->name);
  }
  st = hash_input(&p->in, o->hf_dir, "config.json", false, &present, err, cap);
  if (st == TL_OK)
    st = hash_input(&p->in, o->hf_dir, "generation_config.json", true,
                    &has_gen, err, cap);
  if (st != TL_OK) return st;
  snprintf(cfg_path, sizeof cfg_path, "%s/config.json", o->hf_dir);
  snprintf(gen_path, sizeof gen_path, "%s/generation_config.json", o->hf_dir);
  if (has_gen) {
    st = read_gen_defaults(p, gen_path, err, cap);
    if (st != TL_OK) return st;
  }
  snprintf(tokcfg_path, sizeof tokcfg_path, "%s/tokenizer_config.json",
           o->hf_dir);
  /* Before the config: an embedding checkpoint's EOS claims are unused. */
  st = hash_input(&p->in, o->hf_dir, "modules.json", true, &p->embedding, err, cap);
  if (st != TL_OK) return st;
  st = tl_qwen3_config_resolve(cfg_path, has_gen ? gen_path : NULL,
                               tokcfg_path, NULL, 0, profile, p->embedding,
                               &p->cfg, &r->conflict, &r->conflict_len, err,
                               cap);
  if (st == TL_ERR_CONFLICT && profile == NULL && !p->embedding &&
      strstr(err, "eos_disagreement") != NULL) {
    size_t len = strlen(err);
    snprintf(err + len, cap - len,
             " (if this is the published Qwen3-0.6B checkpoint, --profile "
             "qwen3-0.6b-publisher applies its declared resolution)");
  }
  if (st != TL_OK) return st;
  if (p->embedding)
    st = hash_input(&p->in, o->hf_dir, "1_Pooling/config.json", false, &present, err, cap);
  if (st == TL_OK && p->embedding)
    st = tl_st_modules_check(o->hf_dir, p->cfg.hidden_size, err, cap);
  if (st != TL_OK) return st;
  if (p->embedding && (p->tok.append_id < 0 || p->tok.append_id >= p->cfg.vocab_size))
    return failf(err, cap, TL_ERR_INVALID_MODEL,
                 "tokenizer.json: post_processor: an embedding checkpoint's tokenizer must "
                 "append one token below vocab_size %u (TemplateProcessing \"$A X\")",
                 p->cfg.vocab_size);
  if (!p->embedding && p->tok.append_id >= 0)
    return failf(err, cap, TL_ERR_UNSUPPORTED_FEATURE,
                 "tokenizer.json: post_processor appends token %lld to every input: only an "
                 "embedding checkpoint (with modules.json) is converted with such a tokenizer",
                 (long long)p->tok.append_id);
  if (p->tok.n_tokens > p->cfg.vocab_size) {
    uint64_t vocab = p->cfg.vocab_size, ntok = p->tok.n_tokens;
    tconflict c;
    memset(&c, 0, sizeof c);
    c.kind = "vocab_tokenizer_mismatch";
    c.field = "vocab_size";
    c.claims[0] = (claim){"config.json", &vocab, 1};
    c.claims[1] = (claim){"tokenizer.json", &ntok, 1};
    c.n_claims = 2;
    snprintf(c.message, sizeof c.message,
             "the tokenizer has %u token ids but vocab_size is %u: the "
             "embedding cannot cover the tokenizer",
             p->tok.n_tokens, p->cfg.vocab_size);
    return stop(r, &c, err, cap);
  }
  st = tl_template_turn_end(p->tok.section, p->tok.len, p->tmpl.bytes,
                            p->tmpl.len, &p->turn_end, err, cap);
  if (st != TL_OK) return st;
  if (!id_in(p->turn_end, p->cfg.eos_ids, p->cfg.n_eos)) {
    uint64_t turn_end = p->turn_end, eos[TL_QWEN3_MAX_IDS];
    tconflict c;
    for (size_t i = 0; i < p->cfg.n_eos; i++) eos[i] = p->cfg.eos_ids[i];
    memset(&c, 0, sizeof c);
    c.kind = "template_eos_disagreement";
    c.field = "eos_token_id";
    c.claims[0] = (claim){"tokenizer_config.json:chat_template", &turn_end, 1};
    c.claims[1] = (claim){"effective config", eos, p->cfg.n_eos};
    c.n_claims = 2;
    snprintf(c.message, sizeof c.message,
             "the chat template ends an assistant turn with token %u, which "
             "is not in the effective EOS set: generation would not stop at "
             "the end of a reply",
             p->turn_end);
    return stop(r, &c, err, cap);
  }
  if (o->on_step != NULL && !o->check_only) o->on_step(o->progress_ctx, "hashing", 0, 0);
  st = tl_st_open_dir(o->hf_dir, &p->ck, err, cap);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < p->ck.n_sources; i++) {
    input_file *f = &p->in.files[p->in.n++];
    snprintf(f->name, sizeof f->name, "%s", p->ck.sources[i].name);
    f->size = p->ck.sources[i].size;
    memcpy(f->sha256, p->ck.sources[i].sha256, 32);
    r->source_bytes += p->ck.sources[i].size;
  }
  st = bind(p, r, err, cap);
  if (st == TL_OK) st = tie(p, r, err, cap);
  if (st != TL_OK || o->check_only) return st;
  {
    uint64_t total = 0, done = 0;
    for (size_t i = 0; i < p->n_tensors; i++)
      if (!p->tensors[i].alias) total += p->tensors[i].src->len;
    if (o->on_step != NULL) o->on_step(o->progress_ctx, "checking", 0, total);
    for (size_t i = 0; i < p->n_tensors && st == TL_OK; i++) {
      if (p->tensors[i].alias) continue;
      st = scan(p, &p->tensors[i], err, cap);
      done += p->tensors[i].src->len;
      if (st == TL_OK && o->on_step != NULL) o->on_step(o->progress_ctx, "checking", done, total);
    }
  }
  /* An alias's digest is its twin's. */
  for (size_t i = 0; i < p->n_tensors && st == TL_OK; i++) {
    planned *t = &p->tensors[i], key, *twin;
    if (!t->alias) continue;
    snprintf(key.name, sizeof key.name, "%s", t->alias_of);
    twin = bsearch(&key, p->tensors, p->n_tensors, sizeof *p->tensors,
                   planned_cmp);
    memcpy(t->src_blake3, twin->src_blake3, 32);
  }
  if (st == TL_OK) st = lay_out(p, err, cap);
  return st;
}

tl_status tl_convert(const tl_convert_options *opt, tl_convert_report *r,
                     char *err, size_t cap) {
  plan p;
  bool source, present = true;
  tl_qtype t;
  char tok_path[4096], tokcfg_path[4096];
  tl_status st;
  if (opt == NULL || r == NULL || opt->hf_dir == NULL ||
      (opt->out_path == NULL && !opt->check_only))
    return TL_ERR_INVALID_ARGUMENT;
  memset(r, 0, sizeof *r);
  memset(&p, 0, sizeof p);
  p.opt = opt;
  p.quant = opt->quant ? opt->quant : "source";
  if (!parse_quant(opt->quant, &source, &t))
    return failf(err, cap, TL_ERR_INVALID_ARGUMENT,
                 "unknown --quant '%s' (source, f32, f16, bf16, q8, q4)",
                 opt->quant);
  snprintf(tok_path, sizeof tok_path, "%s/tokenizer.json", opt->hf_dir);
  snprintf(tokcfg_path, sizeof tokcfg_path, "%s/tokenizer_config.json",
           opt->hf_dir);
  if (opt->on_step != NULL && !opt->check_only) opt->on_step(opt->progress_ctx, "tokenizer", 0, 0);
  st = hash_input(&p.in, opt->hf_dir, "tokenizer.json", false, &present, err,
                  cap);
  if (st == TL_OK)
    st = hash_input(&p.in, opt->hf_dir, "tokenizer_config.json", false,
                    &present, err, cap);
  if (st == TL_OK) st = tl_tok_compile(tok_path, tokcfg_path, &p.tok, err, cap);
  if (st == TL_OK) st = tl_tmpl_section_build(tokcfg_path, &p.tmpl, err, cap);
  if (st == TL_OK && !opt->tokenizer_only) st = prepare_model(&p, r, err, cap);
  if (st == TL_OK && !opt->tokenizer_only && !opt->check_only)
    st = bind_acquisition(&p, err, cap);
  if (st == TL_OK && !opt->check_only) {
    qsort(p.in.files, p.in.n, sizeof *p.in.files, input_cmp);
    if (opt->on_step != NULL) opt->on_step(opt->progress_ctx, "writing", 0, 0);
    st = write_artifact(&p, r, err, cap);
  }
  if (st == TL_OK && !opt->check_only) {
    st = write_receipt(&p, r, err, cap);
    if (st != TL_OK) remove(opt->out_path); /* no artifact without receipt */
  }
  if (st == TL_OK) {
    r->n_tokens = p.tok.n_tokens;
    r->n_merges = p.tok.n_merges;
    r->n_added = p.tok.n_added;
    r->n_tensors = p.n_entries;
    r->n_ledger = p.n_tensors;
    for (size_t i = 0; i < p.n_tensors; i++) r->n_aliases += p.tensors[i].alias;
  }
  free(p.tensors);
  free(p.entries);
  tl_st_checkpoint_close(&p.ck);
  tl_qwen3_config_free(&p.cfg);
  json_decref(p.gen_defaults);
  tl_tok_compiled_free(&p.tok);
  tl_tmpl_section_built_free(&p.tmpl);
  tl_snapshot_release_all();
  return st;
}

void tl_convert_report_free(tl_convert_report *r) {
  if (r == NULL) return;
  free(r->conflict);
  r->conflict = NULL;
  r->conflict_len = 0;
}
