/* tinylm synth (docs/synth.md): tiny checkpoints read back with the
 * project's safetensors reader: names, dtypes, shapes, determinism,
 * sharding, the lm_head copy, bf16 = RNE(f32), and the special-token ids
 * taken from the copied tokenizer. */
#define _POSIX_C_SOURCE 200809L
#include "synth.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quant/quant.h"
#include "st_checkpoint.h"
#include "tl_test.h"

static char *make_dir(void) {
  char tmpl[] = "/tmp/tl_synth_XXXXXX";
  char *d = mkdtemp(tmpl);
  return d != NULL ? strdup(d) : NULL;
}

static void rm_dir(char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  free(dir);
}

static char *sub(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p != NULL) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static tl_status synth(const char *dir, uint64_t seed, bool f32,
                       unsigned shards, bool lm_head) {
  tl_synth_options o;
  memset(&o, 0, sizeof o);
  tl_synth_config_tiny(&o.config);
  o.seed = seed;
  o.f32 = f32;
  o.shards = shards;
  o.separate_lm_head = lm_head;
  char err[512] = "";
  tl_status st = tl_synth_write(dir, &o, NULL, err, sizeof err);
  if (st != TL_OK) fprintf(stderr, "synth: %s\n", err);
  return st;
}

/* The tiny preset with another vocabulary size and tokenizer directory. */
static tl_status synth_tok(const char *dir, const char *tok_dir, uint64_t vocab,
                           bool publisher_eos, char *err, size_t err_cap) {
  tl_synth_options o;
  memset(&o, 0, sizeof o);
  tl_synth_config_tiny(&o.config);
  o.config.vocab_size = vocab;
  o.seed = 1;
  o.tokenizer_dir = tok_dir;
  o.publisher_eos = publisher_eos;
  return tl_synth_write(dir, &o, NULL, err, err_cap);
}

static json_int_t int_at(json_t *root, const char *key, size_t i) {
  json_t *v = json_object_get(root, key);
  if (json_is_array(v)) v = json_array_get(v, i);
  return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* config.json: bos = endoftext, eos = im_end; generation_config.json: bos
 * and pad = endoftext, eos = [im_end] (agreeing), or with publisher_eos
 * [im_end, endoftext] as the published file has it. */
static void expect_special_ids(tl_test_ctx *t, const char *dir,
                               json_int_t endoftext, json_int_t im_end,
                               bool publisher_eos) {
  char *c = sub(dir, "config.json"), *g = sub(dir, "generation_config.json");
  json_error_t je;
  json_t *cfg = c != NULL ? json_load_file(c, 0, &je) : NULL;
  json_t *gen = g != NULL ? json_load_file(g, 0, &je) : NULL;
  if (TL_EXPECT(t, cfg != NULL && gen != NULL)) {
    TL_EXPECT_EQ_I64(t, int_at(cfg, "bos_token_id", 0), endoftext);
    TL_EXPECT_EQ_I64(t, int_at(cfg, "eos_token_id", 0), im_end);
    TL_EXPECT_EQ_I64(t, int_at(gen, "bos_token_id", 0), endoftext);
    TL_EXPECT_EQ_I64(t, int_at(gen, "pad_token_id", 0), endoftext);
    TL_EXPECT_EQ_U64(t, json_array_size(json_object_get(gen, "eos_token_id")),
                     publisher_eos ? 2 : 1);
    TL_EXPECT_EQ_I64(t, int_at(gen, "eos_token_id", 0), im_end);
    if (publisher_eos)
      TL_EXPECT_EQ_I64(t, int_at(gen, "eos_token_id", 1), endoftext);
  }
  json_decref(cfg);
  json_decref(gen);
  free(c);
  free(g);
}

static const tl_st_tensor *find(const tl_st_checkpoint *ck, const char *n) {
  for (size_t i = 0; i < ck->n_tensors; i++)
    if (ck->tensors[i].name_len == strlen(n) &&
        memcmp(ck->tensors[i].name, n, ck->tensors[i].name_len) == 0)
      return &ck->tensors[i];
  return NULL;
}

static void expect_tensor(tl_test_ctx *t, const tl_st_checkpoint *ck,
                          const char *name, tl_st_dtype dt, uint64_t r0,
                          uint64_t r1) {
  const tl_st_tensor *x = find(ck, name);
  if (!TL_EXPECT(t, x != NULL)) {
    tl_test_print(t, "  missing: ");
    tl_test_print(t, name);
    tl_test_print(t, "\n");
    return;
  }
  TL_EXPECT(t, x->dtype == dt);
  TL_EXPECT_EQ_U64(t, x->rank, r1 == 0 ? 1 : 2);
  TL_EXPECT_EQ_U64(t, x->shape[0], r0);
  if (r1 != 0 && x->rank == 2) TL_EXPECT_EQ_U64(t, x->shape[1], r1);
}

static void expect_qwen3_tensors(tl_test_ctx *t, const tl_st_checkpoint *ck,
                                 tl_st_dtype dt, bool lm_head) {
  tl_synth_config c;
  tl_synth_config_tiny(&c);
  uint64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim,
           kv = c.num_key_value_heads * c.head_dim, im = c.intermediate_size;
  TL_EXPECT_EQ_U64(t, ck->n_tensors,
                   2 + 11 * c.num_hidden_layers + (lm_head ? 1 : 0));
  expect_tensor(t, ck, "model.embed_tokens.weight", dt, c.vocab_size, h);
  expect_tensor(t, ck, "model.norm.weight", dt, h, 0);
  if (lm_head) expect_tensor(t, ck, "lm_head.weight", dt, c.vocab_size, h);
  for (uint64_t l = 0; l < c.num_hidden_layers; l++) {
    char n[128];
#define L(suffix, a, b)                                                      \
  snprintf(n, sizeof n, "model.layers.%llu." suffix, (unsigned long long)l); \
  expect_tensor(t, ck, n, dt, a, b)
    L("input_layernorm.weight", h, 0);
    L("post_attention_layernorm.weight", h, 0);
    L("self_attn.q_proj.weight", q, h);
    L("self_attn.k_proj.weight", kv, h);
    L("self_attn.v_proj.weight", kv, h);
    L("self_attn.o_proj.weight", h, q);
    L("self_attn.q_norm.weight", c.head_dim, 0);
    L("self_attn.k_norm.weight", c.head_dim, 0);
    L("mlp.gate_proj.weight", im, h);
    L("mlp.up_proj.weight", im, h);
    L("mlp.down_proj.weight", h, im);
#undef L
  }
}

static void tiny_reads_back(tl_test_ctx *t) {
  char *d = make_dir();
  if (!TL_EXPECT(t, d != NULL)) return;
  char *out = sub(d, "m");
  if (TL_EXPECT_OK(t, synth(out, 7, false, 1, false))) {
    tl_st_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    char err[512] = "";
    if (TL_EXPECT_OK(t, tl_st_open_dir(out, &ck, err, sizeof err))) {
      TL_EXPECT(t, !ck.sharded);
      expect_qwen3_tensors(t, &ck, TL_ST_BF16, false);
      const tl_st_source *s = &ck.sources[0];
      TL_EXPECT_EQ_U64(t, s->n_metadata, 1);
      if (s->n_metadata == 1) {
        TL_EXPECT_MEM(t, s->metadata[0].key, "format", 6);
        TL_EXPECT_MEM(t, s->metadata[0].value, "pt", 2);
      }
      /* Header order is name order; the header pads to 8 bytes. */
      for (size_t i = 1; i < ck.n_tensors; i++) {
        const tl_st_tensor *a = &ck.tensors[i - 1], *b = &ck.tensors[i];
        size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
        int c = memcmp(a->name, b->name, m);
        TL_EXPECT(t, c < 0 || (c == 0 && a->name_len < b->name_len));
      }
      TL_EXPECT_EQ_U64(t, ck.tensors[0].file_offset % 8, 0);
      /* Norm weights sit near 1, projections near 0, nothing degenerate. */
      const tl_st_tensor *nw = find(&ck, "model.norm.weight");
      const tl_st_tensor *e = find(&ck, "model.embed_tokens.weight");
      if (nw != NULL && e != NULL) {
        uint16_t v;
        memcpy(&v, nw->data, 2);
        float f = tl_bf16_to_f32(v);
        TL_EXPECT(t, f > 0.9f && f < 1.1f);
        double ss = 0;
        for (size_t i = 0; i < 4096; i++) {
          memcpy(&v, e->data + 2 * i, 2);
          ss += (double)tl_bf16_to_f32(v) * tl_bf16_to_f32(v);
        }
        double rms = ss / 4096;
        TL_EXPECT(t, rms > 0.04 * 0.04 && rms < 0.06 * 0.06);
      }
    } else {
      tl_test_print(t, err);
    }
    tl_st_checkpoint_close(&ck);
    const char *files[] = {"config.json", "generation_config.json",
                           "tokenizer.json", "tokenizer_config.json"};
    for (size_t i = 0; i < 4; i++) {
      char *p = sub(out, files[i]);
      TL_EXPECT(t, p != NULL && access(p, R_OK) == 0);
      free(p);
    }
    /* The real tokenizer yields the published ids. */
    expect_special_ids(t, out, 151643, 151645, false);
    /* An existing non-empty directory is refused and left as it was. */
    TL_EXPECT_STATUS(t, synth(out, 7, false, 1, false), TL_ERR_IO);
  }
  free(out);
  rm_dir(d);
}

static void digest(const char *dir, const char *name, uint8_t *out) {
  char *p = sub(dir, name);
  tl_file_view v;
  char err[256];
  memset(out, 0, TL_SHA256_DIGEST_LEN);
  if (p != NULL && tl_file_open_view(p, &v, err, sizeof err) == TL_OK) {
    tl_sha256(v.data, v.len, out);
    tl_file_close_view(&v);
  }
  free(p);
}

static void deterministic(tl_test_ctx *t) {
  char *d = make_dir();
  if (!TL_EXPECT(t, d != NULL)) return;
  char *a = sub(d, "a"), *b = sub(d, "b"), *c = sub(d, "c");
  TL_EXPECT_OK(t, synth(a, 42, false, 2, true));
  TL_EXPECT_OK(t, synth(b, 42, false, 2, true));
  TL_EXPECT_OK(t, synth(c, 43, false, 2, true));
  const char *files[] = {"config.json",
                         "generation_config.json",
                         "tokenizer.json",
                         "tokenizer_config.json",
                         "model-00001-of-00002.safetensors",
                         "model-00002-of-00002.safetensors",
                         "model.safetensors.index.json"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    uint8_t x[TL_SHA256_DIGEST_LEN], y[TL_SHA256_DIGEST_LEN],
        z[TL_SHA256_DIGEST_LEN], zero[TL_SHA256_DIGEST_LEN] = {0};
    digest(a, files[i], x);
    digest(b, files[i], y);
    digest(c, files[i], z);
    TL_EXPECT(t, memcmp(x, zero, sizeof x) != 0);
    TL_EXPECT_MEM(t, x, y, sizeof x);
    if (strstr(files[i], "-of-") != NULL)
      TL_EXPECT(t, memcmp(x, z, sizeof x) != 0); /* the seed matters */
  }
  free(a);
  free(b);
  free(c);
  rm_dir(d);
}

static void sharded_with_lm_head(tl_test_ctx *t) {
  char *d = make_dir();
  if (!TL_EXPECT(t, d != NULL)) return;
  char *out = sub(d, "s");
  if (TL_EXPECT_OK(t, synth(out, 3, false, 2, true))) {
    tl_st_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    char err[512] = "";
    if (TL_EXPECT_OK(t, tl_st_open_dir(out, &ck, err, sizeof err))) {
      TL_EXPECT(t, ck.sharded);
      TL_EXPECT_EQ_U64(t, ck.n_sources, 3); /* index + 2 shards */
      expect_qwen3_tensors(t, &ck, TL_ST_BF16, true);
      const tl_st_tensor *e = find(&ck, "model.embed_tokens.weight");
      const tl_st_tensor *l = find(&ck, "lm_head.weight");
      if (e != NULL && l != NULL) {
        TL_EXPECT_EQ_U64(t, e->len, l->len);
        TL_EXPECT(t, e->len == l->len && memcmp(e->data, l->data, e->len) == 0);
      }
      uint64_t total = 0;
      for (size_t i = 0; i < ck.n_tensors; i++) total += ck.tensors[i].len;
      const tl_json_value *ts =
          ck.index_metadata != NULL
              ? tl_json_get(ck.index_metadata, "total_size", 10)
              : NULL;
      TL_EXPECT(t, ts != NULL && ts->type == TL_JSON_INT);
      if (ts != NULL && ts->type == TL_JSON_INT)
        TL_EXPECT_EQ_U64(t, (uint64_t)ts->u.i, total);
    } else {
      tl_test_print(t, err);
    }
    tl_st_checkpoint_close(&ck);
  }
  free(out);
  rm_dir(d);
}

static void bf16_is_rne_of_f32(tl_test_ctx *t) {
  char *d = make_dir();
  if (!TL_EXPECT(t, d != NULL)) return;
  char *a = sub(d, "bf16"), *b = sub(d, "f32");
  if (TL_EXPECT_OK(t, synth(a, 9, false, 1, false)) &&
      TL_EXPECT_OK(t, synth(b, 9, true, 1, false))) {
    tl_st_checkpoint x, y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    char err[512] = "";
    if (TL_EXPECT_OK(t, tl_st_open_dir(a, &x, err, sizeof err)) &&
        TL_EXPECT_OK(t, tl_st_open_dir(b, &y, err, sizeof err))) {
      expect_qwen3_tensors(t, &y, TL_ST_F32, false);
      uint64_t mismatches = 0, checked = 0;
      for (size_t i = 0; i < x.n_tensors; i++) {
        const tl_st_tensor *h = &x.tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)h->name_len, h->name);
        const tl_st_tensor *f = find(&y, name);
        if (!TL_EXPECT(t, f != NULL && f->n_elements == h->n_elements))
          continue;
        for (uint64_t j = 0; j < h->n_elements; j++) {
          uint32_t bits = (uint32_t)f->data[4 * j] |
                          (uint32_t)f->data[4 * j + 1] << 8 |
                          (uint32_t)f->data[4 * j + 2] << 16 |
                          (uint32_t)f->data[4 * j + 3] << 24;
          float v;
          memcpy(&v, &bits, 4);
          uint16_t want = tl_f32_to_bf16(v);
          uint16_t got =
              (uint16_t)(h->data[2 * j] | (uint16_t)h->data[2 * j + 1] << 8);
          mismatches += got != want;
          checked++;
        }
      }
      TL_EXPECT_EQ_U64(t, mismatches, 0);
      TL_EXPECT(t, checked > 9000000);
    }
    tl_st_checkpoint_close(&x);
    tl_st_checkpoint_close(&y);
  }
  free(a);
  free(b);
  rm_dir(d);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f != NULL) {
    fputs(text, f);
    fclose(f);
  }
}

static void config_files(tl_test_ctx *t) {
  char *d = make_dir();
  if (!TL_EXPECT(t, d != NULL)) return;
  char *p = sub(d, "c.json");
  tl_synth_config c;
  char err[512] = "";
  write_text(p, "{\"hidden_size\": 32, \"num_hidden_layers\": 3}");
  if (TL_EXPECT_OK(t, tl_synth_config_named(p, &c, err, sizeof err))) {
    TL_EXPECT_EQ_U64(t, c.hidden_size, 32);
    TL_EXPECT_EQ_U64(t, c.num_hidden_layers, 3);
    TL_EXPECT_EQ_U64(t, c.intermediate_size, 128); /* tiny's default */
  }
  write_text(p, "{\"hidden_sise\": 32}");
  TL_EXPECT_STATUS(t, tl_synth_config_named(p, &c, err, sizeof err),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, strstr(err, "hidden_sise") != NULL);
  write_text(p, "{\"hidden_size\": 0}");
  TL_EXPECT_STATUS(t, tl_synth_config_named(p, &c, err, sizeof err),
                   TL_ERR_INVALID_ARGUMENT);
  write_text(p, "{\"hidden_size\": 1.5}");
  TL_EXPECT_STATUS(t, tl_synth_config_named(p, &c, err, sizeof err),
                   TL_ERR_INVALID_ARGUMENT);
  write_text(p, "{\"num_attention_heads\": 4, \"num_key_value_heads\": 3}");
  TL_EXPECT_STATUS(t, tl_synth_config_named(p, &c, err, sizeof err),
                   TL_ERR_INVALID_ARGUMENT);
  write_text(p, "[1]");
  TL_EXPECT_STATUS(t, tl_synth_config_named(p, &c, err, sizeof err),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_synth_config_named("qwen3-0.6b", &c, err, sizeof err));
  TL_EXPECT_EQ_U64(t, c.hidden_size, 1024);
  TL_EXPECT_EQ_U64(t, c.num_hidden_layers, 28);
  free(p);
  rm_dir(d);
}

#define TINY_TOKENIZER "tests/fixtures/tiny-tokenizer"

/* The fixture (tools/make_tiny_tokenizer.py): 320 model tokens, then the
 * 26 added ones from "<|endoftext|>" = 320; "<|im_end|>" = 322. */
static void tiny_tokenizer_ids(tl_test_ctx *t) {
  char *d = make_dir();
  if (!TL_EXPECT(t, d != NULL)) return;
  char *out = sub(d, "m"), *tok = sub(out, "tokenizer.json");
  char err[512] = "";
  /* 346 = the largest id + 1: the smallest vocabulary that covers it. */
  if (TL_EXPECT_OK(t, synth_tok(out, TINY_TOKENIZER, 346, true, err, sizeof err))) {
    expect_special_ids(t, out, 320, 322, true);
    tl_st_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    if (TL_EXPECT_OK(t, tl_st_open_dir(out, &ck, err, sizeof err)))
      expect_tensor(t, &ck, "model.embed_tokens.weight", TL_ST_BF16, 346, 64);
    tl_st_checkpoint_close(&ck);
    TL_EXPECT(t, tok != NULL && access(tok, R_OK) == 0);
  } else {
    tl_test_print(t, err);
  }
  free(tok);
  free(out);
  rm_dir(d);
}

static void missing_special_token(tl_test_ctx *t) {
  char *d = make_dir();
  if (!TL_EXPECT(t, d != NULL)) return;
  char *tj = sub(d, "tokenizer.json"), *tc = sub(d, "tokenizer_config.json");
  char *out = sub(d, "m");
  char err[512] = "";
  write_text(tc, "{}");
  write_text(tj,
             "{\"model\": {\"vocab\": {\"a\": 0}}, \"added_tokens\": "
             "[{\"id\": 1, \"content\": \"<|endoftext|>\"}]}");
  TL_EXPECT_STATUS(t, synth_tok(out, d, 1000, false, err, sizeof err),
                   TL_ERR_INVALID_MODEL);
  TL_EXPECT(t, strstr(err, tj) != NULL);
  TL_EXPECT(t, strstr(err, "<|im_end|>") != NULL);
  TL_EXPECT(t, access(out, F_OK) != 0); /* nothing written */
  write_text(tj,
             "{\"model\": {\"vocab\": {\"a\": 0}}, \"added_tokens\": "
             "[{\"id\": 1, \"content\": \"<|im_end|>\"}]}");
  TL_EXPECT_STATUS(t, synth_tok(out, d, 1000, false, err, sizeof err),
                   TL_ERR_INVALID_MODEL);
  TL_EXPECT(t, strstr(err, "<|endoftext|>") != NULL);
  free(tj);
  free(tc);
  free(out);
  rm_dir(d);
}

static void vocab_too_small(tl_test_ctx *t) {
  char *d = make_dir();
  if (!TL_EXPECT(t, d != NULL)) return;
  char *out = sub(d, "m");
  char err[512] = "";
  TL_EXPECT_STATUS(t, synth_tok(out, TINY_TOKENIZER, 345, false, err, sizeof err),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, strstr(err, "vocab_size 345") != NULL);
  TL_EXPECT(t, strstr(err, "345 (vocab_size must be at least 346)") != NULL);
  TL_EXPECT(t, access(out, F_OK) != 0);
  free(out);
  rm_dir(d);
}

static const tl_test_case cases[] = {
    TL_CASE(tiny_reads_back),       TL_CASE(deterministic),
    TL_CASE(sharded_with_lm_head),  TL_CASE(bf16_is_rne_of_f32),
    TL_CASE(config_files),          TL_CASE(tiny_tokenizer_ids),
    TL_CASE(missing_special_token), TL_CASE(vocab_too_small),
};
TL_SUITE(synth, cases);
