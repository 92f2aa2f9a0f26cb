/* Seeded synthetic Qwen3 .slm artifacts: see model_gen.h.
 * Freestanding (core headers only). */
#include "model_gen.h"

#include <string.h>

#include "bytes.h"
#include "cbor/cbor.h"
#include "checked.h"
#include "hash/blake3.h"

#define N_SECTIONS 5
#define NAME_CAP 72
#define META_CAP 4096

typedef enum { T_EMBED, T_PROJ, T_NORM } tensor_kind;

typedef struct gen_tensor {
  char name[NAME_CAP];
  uint32_t name_len;
  tensor_kind kind;
  size_t rows, n; /* rows == 0: a 1-D tensor of n */
  tl_qtype type;
  size_t bytes, off; /* inside the tensor data section */
} gen_tensor;

typedef struct layout {
  gen_tensor *t;
  size_t n_tensors, names_len;
  size_t off[N_SECTIONS], len[N_SECTIONS];
  size_t total;
} layout;

static const char tokenizer_placeholder[] =
    "model_gen placeholder tokenizer section (never read by the forward pass)";
static const char template_placeholder[] =
    "model_gen placeholder template section (never read by the forward pass)";

/* ------------------------------------------------------------------------ */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* Uniform in [0, 1), exactly representable in f32. */
static float unit(uint64_t *s) {
  return (float)(splitmix(s) >> 40) * (1.0f / 16777216.0f);
}

/* 1/sqrt(x) by Newton's iteration in binary64 (no libm: same bits on
 * every host). */
static float inv_sqrt(size_t x) {
  double v = (double)x, r = v > 1 ? v / 2 : 1;
  for (int i = 0; i < 80; i++) r = 0.5 * (r + v / r);
  return (float)(1.0 / r);
}

static size_t text_len(const char *s) {
  size_t n = 0;
  while (s[n] != '\0') n++;
  return n;
}

static const char *dtype_name(tl_qtype t) {
  switch (t) {
    case TL_QTYPE_F32: return "f32";
    case TL_QTYPE_F16: return "f16";
    case TL_QTYPE_BF16: return "bf16";
    case TL_QTYPE_Q8: return "q8";
    case TL_QTYPE_Q4: return "q4";
  }
  return NULL;
}

/* Appends s to out at *at (bounded; NUL kept). */
static void append(char *out, size_t cap, size_t *at, const char *s) {
  while (*s != '\0' && *at + 1 < cap) out[(*at)++] = *s++;
  if (cap > 0) out[*at < cap ? *at : cap - 1] = '\0';
}

static void append_u64(char *out, size_t cap, size_t *at, uint64_t v) {
  char d[21];
  size_t n = 0;
  do {
    d[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  {
    char r[21];
    for (size_t i = 0; i < n; i++) r[i] = d[n - 1 - i];
    r[n] = '\0';
    append(out, cap, at, r);
  }
}

size_t tl_model_gen_describe(const tl_model_gen *g, char *out, size_t cap) {
  size_t at = 0;
  if (cap == 0) return 0;
  out[0] = '\0';
  append(out, cap, &at, "model_gen seed ");
  append_u64(out, cap, &at, g->seed);
  append(out, cap, &at, " ");
  append(out, cap, &at, dtype_name(g->dtype) ? dtype_name(g->dtype) : "?");
  append(out, cap, &at, g->tie ? " tied" : " untied");
  return at;
}

tl_model_gen tl_model_gen_tiny(tl_qtype dtype, uint64_t seed) {
  tl_model_gen g;
  memset(&g, 0, sizeof g);
  g.vocab = 64;
  g.hidden = 32;
  g.inter = 48;
  g.layers = 2;
  g.heads = 4;
  g.kv_heads = 2;
  g.head_dim = 8;
  g.max_positions = 64;
  g.rms_norm_eps = "1e-06";
  g.rope_theta = "1000000.0";
  g.tie = false;
  g.dtype = dtype;
  g.seed = seed;
  return g;
}

static bool config_ok(const tl_model_gen *g) {
  return g != NULL && g->vocab > 0 && g->hidden > 0 && g->inter > 0 &&
         g->layers > 0 && g->layers <= TL_MODEL_GEN_MAX_LAYERS &&
         g->heads > 0 && g->kv_heads > 0 && g->heads % g->kv_heads == 0 &&
         g->head_dim > 0 && g->head_dim % 2 == 0 && g->max_positions > 0 &&
         g->rms_norm_eps != NULL && g->rope_theta != NULL &&
         dtype_name(g->dtype) != NULL;
}

static size_t n_tensors(const tl_model_gen *g) {
  return 2 + (g->tie ? 0 : 1) + 11 * (size_t)g->layers;
}

size_t tl_model_gen_scratch_bound(const tl_model_gen *g) {
  size_t h = g->hidden, i = g->inter, q = (size_t)g->heads * g->head_dim;
  size_t big = (size_t)g->vocab * h;
  if (i * h > big) big = i * h;
  if (q * h > big) big = q * h;
  return big * sizeof(float) + n_tensors(g) * sizeof(gen_tensor) + META_CAP +
         16384 + 4 * 64;
}

/* ------------------------------------------------------------------------ */
/* The tensor list                                                          */

static void add(gen_tensor *t, size_t *count, const char *prefix, uint32_t layer,
                bool in_layer, const char *suffix, tensor_kind kind,
                size_t rows, size_t n, tl_qtype dtype) {
  gen_tensor *e = &t[(*count)++];
  size_t at = 0;
  memset(e, 0, sizeof *e);
  append(e->name, NAME_CAP, &at, prefix);
  if (in_layer) {
    append_u64(e->name, NAME_CAP, &at, layer);
    append(e->name, NAME_CAP, &at, ".");
  }
  append(e->name, NAME_CAP, &at, suffix);
  e->name_len = (uint32_t)at;
  e->kind = kind;
  e->rows = rows;
  e->n = n;
  e->type = kind == T_NORM ? TL_QTYPE_F32 : dtype;
}

static int name_cmp(const gen_tensor *a, const gen_tensor *b) {
  size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
  int c = memcmp(a->name, b->name, n);
  if (c != 0) return c;
  return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

static tl_status list_tensors(const tl_model_gen *g, tl_arena *scratch,
                              layout *L) {
  size_t h = g->hidden, qd = (size_t)g->heads * g->head_dim;
  size_t kd = (size_t)g->kv_heads * g->head_dim, count = 0;
  void *p;
  tl_status st = tl_arena_alloc_array(scratch, n_tensors(g), sizeof(gen_tensor),
                                      16, &p);
  if (st != TL_OK) return st;
  L->t = p;
  if (!g->tie)
    add(L->t, &count, "lm_head.weight", 0, false, "", T_PROJ, g->vocab, h,
        g->dtype);
  add(L->t, &count, "model.embed_tokens.weight", 0, false, "", T_EMBED,
      g->vocab, h, g->dtype);
  add(L->t, &count, "model.norm.weight", 0, false, "", T_NORM, 0, h, g->dtype);
  for (uint32_t l = 0; l < g->layers; l++) {
    static const char pre[] = "model.layers.";
    add(L->t, &count, pre, l, true, "input_layernorm.weight", T_NORM, 0, h, g->dtype);
    add(L->t, &count, pre, l, true, "self_attn.q_proj.weight", T_PROJ, qd, h, g->dtype);
    add(L->t, &count, pre, l, true, "self_attn.k_proj.weight", T_PROJ, kd, h, g->dtype);
    add(L->t, &count, pre, l, true, "self_attn.v_proj.weight", T_PROJ, kd, h, g->dtype);
    add(L->t, &count, pre, l, true, "self_attn.o_proj.weight", T_PROJ, h, qd, g->dtype);
    add(L->t, &count, pre, l, true, "self_attn.q_norm.weight", T_NORM, 0, g->head_dim, g->dtype);
    add(L->t, &count, pre, l, true, "self_attn.k_norm.weight", T_NORM, 0, g->head_dim, g->dtype);
    add(L->t, &count, pre, l, true, "post_attention_layernorm.weight", T_NORM, 0, h, g->dtype);
    add(L->t, &count, pre, l, true, "mlp.gate_proj.weight", T_PROJ, g->inter, h, g->dtype);
    add(L->t, &count, pre, l, true, "mlp.up_proj.weight", T_PROJ, g->inter, h, g->dtype);
    add(L->t, &count, pre, l, true, "mlp.down_proj.weight", T_PROJ, h, g->inter, g->dtype);
  }
  L->n_tensors = count;
  /* SLM-10: strictly ascending bytewise (insertion sort: a few hundred). */
  for (size_t i = 1; i < count; i++) {
    gen_tensor cur = L->t[i];
    size_t j = i;
    while (j > 0 && name_cmp(&L->t[j - 1], &cur) > 0) {
      L->t[j] = L->t[j - 1];
      j--;
    }
    L->t[j] = cur;
  }
  return TL_OK;
}

/* ------------------------------------------------------------------------ */
/* Metadata                                                                 */

static void put_str(tl_cbor_writer *w, const char *s) {
  tl_cbor_put_text(w, s, text_len(s));
}

static void put_uint_field(tl_cbor_writer *w, const char *k, uint64_t v) {
  put_str(w, k);
  tl_cbor_put_uint(w, v);
}

/* The effective config map (docs/qwen3-config.md §Effective config), with
 * the 20 materialised fields the converter writes. */
static void put_config(tl_cbor_writer *w, const tl_model_gen *g) {
  tl_cbor_begin_map(w, 6);
  put_str(w, "schema");
  put_str(w, "qwen3/1");
  put_str(w, "profile");
  tl_cbor_put_null(w);
  put_str(w, "config");
  tl_cbor_begin_map(w, 20);
  put_uint_field(w, "vocab_size", g->vocab);
  put_uint_field(w, "hidden_size", g->hidden);
  put_uint_field(w, "intermediate_size", g->inter);
  put_uint_field(w, "num_hidden_layers", g->layers);
  put_uint_field(w, "num_attention_heads", g->heads);
  put_uint_field(w, "num_key_value_heads", g->kv_heads);
  put_uint_field(w, "head_dim", g->head_dim);
  put_uint_field(w, "max_position_embeddings", g->max_positions);
  put_str(w, "tie_word_embeddings");
  tl_cbor_put_bool(w, g->tie);
  put_str(w, "rms_norm_eps");
  put_str(w, g->rms_norm_eps);
  put_str(w, "rope_theta");
  put_str(w, g->rope_theta);
  put_str(w, "rope_scaling");
  tl_cbor_put_null(w);
  put_str(w, "hidden_act");
  put_str(w, "silu");
  put_str(w, "attention_bias");
  tl_cbor_put_bool(w, false);
  put_str(w, "use_sliding_window");
  tl_cbor_put_bool(w, false);
  put_str(w, "layer_types");
  put_str(w, "full_attention");
  put_str(w, "source_dtype");
  put_str(w, "float32");
  put_str(w, "bos_token_id");
  tl_cbor_put_null(w);
  put_str(w, "pad_token_id");
  tl_cbor_put_null(w);
  put_str(w, "eos_token_ids");
  tl_cbor_begin_array(w, 1);
  tl_cbor_put_uint(w, g->vocab - 1);
  tl_cbor_end_array(w);
  tl_cbor_end_map(w);
  put_str(w, "defaults");
  tl_cbor_begin_array(w, 0);
  tl_cbor_end_array(w);
  put_str(w, "documentary");
  tl_cbor_begin_map(w, 0);
  tl_cbor_end_map(w);
  put_str(w, "deviations");
  tl_cbor_begin_array(w, 0);
  tl_cbor_end_array(w);
  tl_cbor_end_map(w);
}

static tl_status write_metadata(const tl_model_gen *g, uint8_t *out, size_t cap,
                                tl_arena *scratch, size_t *len) {
  tl_cbor_writer w;
  char desc[96];
  tl_arena_mark mark = tl_arena_mark_now(scratch);
  tl_status st;
  tl_model_gen_describe(g, desc, sizeof desc);
  tl_cbor_writer_init(&w, out, cap, scratch);
  tl_cbor_begin_map(&w, 6);
  put_str(&w, "format");
  put_str(&w, "tinylm.slm");
  put_str(&w, "artifact_kind");
  put_str(&w, "model");
  put_str(&w, "converter");
  tl_cbor_begin_map(&w, 2);
  put_str(&w, "name");
  put_str(&w, "tests/support/model_gen");
  put_str(&w, "version");
  put_str(&w, "1");
  tl_cbor_end_map(&w);
  put_str(&w, "config");
  put_config(&w, g);
  put_str(&w, "quantization");
  tl_cbor_begin_map(&w, 3);
  put_str(&w, "requested");
  put_str(&w, dtype_name(g->dtype));
  put_uint_field(&w, "block", TL_QUANT_BLOCK);
  put_str(&w, "rule");
  put_str(&w, "every 2-D tensor as requested; 1-D norms f32");
  tl_cbor_end_map(&w);
  put_str(&w, "weights");
  put_str(&w, desc);
  tl_cbor_end_map(&w);
  st = tl_cbor_writer_finish(&w, len);
  tl_arena_rewind(scratch, mark);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Layout                                                                   */

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

static tl_status plan(layout *L, size_t meta_len) {
  size_t data = 0, end;
  L->names_len = 0;
  for (size_t i = 0; i < L->n_tensors; i++) {
    gen_tensor *e = &L->t[i];
    tl_status st = tl_quant_tensor_bytes(e->type, e->rows ? e->rows : 1, e->n,
                                         &e->bytes);
    if (st != TL_OK) return st;
    e->off = align64(data);
    data = e->off + e->bytes;
    L->names_len += e->name_len;
  }
  L->len[0] = meta_len;
  L->len[1] = sizeof tokenizer_placeholder - 1;
  L->len[2] = sizeof template_placeholder - 1;
  L->len[3] = TL_SLM_TD_HEADER_LEN + L->n_tensors * TL_SLM_TD_ENTRY_LEN +
              L->names_len;
  L->len[4] = data;
  end = TL_SLM_HEADER_LEN + N_SECTIONS * TL_SLM_ENTRY_LEN;
  for (size_t s = 0; s < N_SECTIONS; s++) {
    L->off[s] = align64(end);
    end = L->off[s] + L->len[s];
  }
  L->total = end;
  return TL_OK;
}

size_t tl_model_gen_size(const tl_model_gen *g, tl_arena *scratch) {
  layout L;
  tl_arena_mark mark;
  void *meta;
  size_t meta_len = 0, total = 0;
  if (!config_ok(g) || scratch == NULL) return 0;
  mark = tl_arena_mark_now(scratch);
  if (list_tensors(g, scratch, &L) == TL_OK &&
      tl_arena_alloc(scratch, META_CAP, 16, &meta) == TL_OK &&
      write_metadata(g, meta, META_CAP, scratch, &meta_len) == TL_OK &&
      plan(&L, meta_len) == TL_OK)
    total = L.total;
  tl_arena_rewind(scratch, mark);
  return total;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                  */

static void fill_values(const tl_model_gen *g, const gen_tensor *e, float *v) {
  uint64_t s = g->seed * UINT64_C(0x100000001B3) ^ UINT64_C(0xCBF29CE484222325);
  size_t count = (e->rows ? e->rows : 1) * e->n;
  float bound;
  for (size_t i = 0; i < e->name_len; i++) /* FNV-1a over the name */
    s = (s ^ (uint8_t)e->name[i]) * UINT64_C(0x100000001B3);
  bound = e->kind == T_EMBED ? 1.0f : inv_sqrt(e->n);
  for (size_t i = 0; i < count; i++) {
    float u = unit(&s);
    v[i] = e->kind == T_NORM ? 0.9f + 0.2f * u : (2.0f * u - 1.0f) * bound;
  }
}

static tl_status write_tensors(const tl_model_gen *g, const layout *L,
                               uint8_t *file, tl_arena *scratch) {
  uint8_t *dir = file + L->off[3], *data = file + L->off[4];
  uint8_t *names = dir + TL_SLM_TD_HEADER_LEN + L->n_tensors * TL_SLM_TD_ENTRY_LEN;
  size_t name_off = 0;
  memcpy(dir, TL_SLM_TD_MAGIC, 4);
  tl_store_le32(dir + 4, TL_SLM_TD_VERSION);
  tl_store_le32(dir + 8, (uint32_t)L->n_tensors);
  tl_store_le32(dir + 12, TL_SLM_TD_ENTRY_LEN);
  tl_store_le64(dir + 16, TL_SLM_TD_HEADER_LEN + L->n_tensors * TL_SLM_TD_ENTRY_LEN);
  tl_store_le64(dir + 24, L->names_len);
  for (size_t i = 0; i < L->n_tensors; i++) {
    const gen_tensor *e = &L->t[i];
    uint8_t *ent = dir + TL_SLM_TD_HEADER_LEN + i * TL_SLM_TD_ENTRY_LEN;
    size_t rows = e->rows ? e->rows : 1;
    tl_arena_mark mark = tl_arena_mark_now(scratch);
    void *p;
    tl_status st = tl_arena_alloc_array(scratch, rows * e->n, sizeof(float), 16, &p);
    if (st != TL_OK) return st;
    fill_values(g, e, p);
    st = tl_quant_pack(e->type, p, rows, e->n, data + e->off, e->bytes, NULL);
    tl_arena_rewind(scratch, mark);
    if (st != TL_OK) return st;
    tl_store_le32(ent, (uint32_t)name_off);
    tl_store_le32(ent + 4, e->name_len);
    tl_store_le32(ent + 8, tl_slm_dtype_code(e->type, false));
    if (e->rows) {
      tl_store_le32(ent + 12, 2);
      tl_store_le64(ent + 16, e->rows);
      tl_store_le64(ent + 24, e->n);
    } else {
      tl_store_le32(ent + 12, 1);
      tl_store_le64(ent + 16, e->n);
    }
    tl_store_le64(ent + 48, e->off);
    tl_store_le64(ent + 56, e->bytes);
    st = tl_blake3(data + e->off, e->bytes, ent + 64);
    if (st != TL_OK) return st;
    memcpy(names + name_off, e->name, e->name_len);
    name_off += e->name_len;
  }
  return TL_OK;
}

tl_status tl_model_gen_build(const tl_model_gen *g, uint8_t *buf, size_t cap,
                             tl_arena *scratch, size_t *len) {
  static const uint32_t kinds[N_SECTIONS] = {
      TL_SLM_METADATA, TL_SLM_TOKENIZER, TL_SLM_TEMPLATE, TL_SLM_TENSOR_DIR,
      TL_SLM_TENSOR_DATA};
  size_t table_end = TL_SLM_HEADER_LEN + N_SECTIONS * TL_SLM_ENTRY_LEN;
  size_t meta_len;
  tl_arena_mark mark;
  layout L;
  tl_status st;
  if (!config_ok(g) || buf == NULL || scratch == NULL || len == NULL)
    return TL_ERR_INVALID_ARGUMENT;
  if (cap < align64(table_end)) return TL_ERR_BOUNDS;
  mark = tl_arena_mark_now(scratch);
  st = list_tensors(g, scratch, &L);
  /* The metadata goes straight to its place: the first section. */
  if (st == TL_OK)
    st = write_metadata(g, buf + align64(table_end), cap - align64(table_end),
                        scratch, &meta_len);
  if (st == TL_OK) st = plan(&L, meta_len);
  if (st == TL_OK && L.total > cap) st = TL_ERR_BOUNDS;
  if (st != TL_OK) goto done;
  /* Zero everything but the metadata (padding must be zero). */
  memset(buf, 0, L.off[0]);
  memset(buf + L.off[0] + L.len[0], 0, L.total - (L.off[0] + L.len[0]));
  memcpy(buf + L.off[1], tokenizer_placeholder, L.len[1]);
  memcpy(buf + L.off[2], template_placeholder, L.len[2]);
  st = write_tensors(g, &L, buf, scratch);
  if (st != TL_OK) goto done;
  /* Header and section table (SLM-1..3), then the digests (SLM-2). */
  memcpy(buf, TL_SLM_MAGIC, 8);
  tl_store_le16(buf + 8, TL_SLM_VERSION_MAJOR);
  tl_store_le16(buf + 10, TL_SLM_VERSION_MINOR);
  tl_store_le32(buf + 12, TL_SLM_HEADER_LEN);
  tl_store_le64(buf + 16, L.total);
  tl_store_le32(buf + 24, N_SECTIONS);
  tl_store_le32(buf + 28, TL_SLM_HEADER_LEN);
  for (size_t s = 0; s < N_SECTIONS && st == TL_OK; s++) {
    uint8_t *e = buf + TL_SLM_HEADER_LEN + s * TL_SLM_ENTRY_LEN;
    tl_store_le32(e, kinds[s]);
    tl_store_le32(e + 4, TL_SLM_SECTION_REQUIRED);
    tl_store_le64(e + 8, L.off[s]);
    tl_store_le64(e + 16, L.len[s]);
    st = tl_blake3(buf + L.off[s], L.len[s], e + 24);
  }
  if (st == TL_OK) st = tl_slm_header_digest(buf, table_end, buf + 32);
  if (st == TL_OK) *len = L.total;
done:
  tl_arena_rewind(scratch, mark);
  return st;
}

tl_status tl_model_gen_open(const uint8_t *buf, size_t len, tl_slm *slm,
                            tl_slm_tensors *tensors, tl_qwen3 *model,
                            tl_arena *arena) {
  tl_slm_artifact_kind kind;
  tl_status st = tl_slm_open(slm, buf, len, TL_SLM_VERIFY_EAGER, NULL);
  if (st == TL_OK) st = tl_slm_artifact(slm, &kind);
  if (st == TL_OK && kind != TL_SLM_ARTIFACT_MODEL) st = TL_ERR_INVALID_MODEL;
  if (st == TL_OK) st = tl_slm_tensors_open(tensors, slm, TL_SLM_VERIFY_EAGER, NULL);
  if (st == TL_OK) st = tl_qwen3_load(model, slm, tensors, arena);
  return st;
}

bool tl_model_gen_same_cache(const tl_qwen3_cache *a, const tl_qwen3_cache *b,
                             uint32_t layers, uint32_t len) {
  bool f16 = a->k16 != NULL;
  size_t bytes = (size_t)len * a->head_dim * (f16 ? sizeof(uint16_t) : sizeof(float));
  if (f16 != (b->k16 != NULL)) return false; /* different lanes' caches */
  for (uint32_t l = 0; l < layers; l++)
    for (uint32_t h = 0; h < a->kv_heads; h++) {
      size_t at_a = tl_qwen3_cache_at(a, l, h, 0), at_b = tl_qwen3_cache_at(b, l, h, 0);
      if (f16 ? memcmp(a->k16 + at_a, b->k16 + at_b, bytes) != 0 ||
                    memcmp(a->v16 + at_a, b->v16 + at_b, bytes) != 0
              : memcmp(a->k + at_a, b->k + at_b, bytes) != 0 ||
                    memcmp(a->v + at_a, b->v + at_b, bytes) != 0)
        return false;
    }
  return true;
}
