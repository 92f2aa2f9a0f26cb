/* Synthetic Qwen3 checkpoints (docs/synth.md). */
#define _POSIX_C_SOURCE 200809L
#include "synth.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bytes.h"
#include "file.h"
#include "quant/quant.h"

#define MAX_DIM (1u << 24)
#define MAX_LAYERS 4096u
#define MAX_SHARDS 1024u
#define CHUNK_ELEMS 65536u

static tl_status fail(char *err, size_t cap, tl_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tl_status fail(char *err, size_t cap, tl_status st, const char *fmt,
                      ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err != NULL && cap > 0) vsnprintf(err, cap, fmt, ap);
  va_end(ap);
  return st;
}

/* --- presets and config files ------------------------------------------ */

void tl_synth_config_tiny(tl_synth_config *c) {
  c->vocab_size = 151936;
  c->hidden_size = 64;
  c->intermediate_size = 128;
  c->num_hidden_layers = 2;
  c->num_attention_heads = 4;
  c->num_key_value_heads = 2;
  c->head_dim = 16;
  c->max_position_embeddings = 40960;
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 1000000.0;
}

void tl_synth_config_qwen3_06b(tl_synth_config *c) {
  c->vocab_size = 151936;
  c->hidden_size = 1024;
  c->intermediate_size = 3072;
  c->num_hidden_layers = 28;
  c->num_attention_heads = 16;
  c->num_key_value_heads = 8;
  c->head_dim = 128;
  c->max_position_embeddings = 40960;
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 1000000.0;
}

tl_status tl_synth_config_validate(const tl_synth_config *c, char *err,
                                   size_t err_cap) {
  struct {
    const char *name;
    uint64_t v, max;
  } f[] = {
      {"vocab_size", c->vocab_size, MAX_DIM},
      {"hidden_size", c->hidden_size, MAX_DIM},
      {"intermediate_size", c->intermediate_size, MAX_DIM},
      {"num_hidden_layers", c->num_hidden_layers, MAX_LAYERS},
      {"num_attention_heads", c->num_attention_heads, MAX_DIM},
      {"num_key_value_heads", c->num_key_value_heads, MAX_DIM},
      {"head_dim", c->head_dim, MAX_DIM},
      {"max_position_embeddings", c->max_position_embeddings, MAX_DIM},
  };
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (f[i].v == 0 || f[i].v > f[i].max)
      return fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                  "config field '%s' must be 1..%llu, got %llu", f[i].name,
                  (unsigned long long)f[i].max, (unsigned long long)f[i].v);
  if (c->num_attention_heads % c->num_key_value_heads != 0)
    return fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                "num_key_value_heads (%llu) must divide num_attention_heads "
                "(%llu)",
                (unsigned long long)c->num_key_value_heads,
                (unsigned long long)c->num_attention_heads);
  /* heads * head_dim <= 2^48 and the rest: products stay far from 2^64. */
  if (!(c->rms_norm_eps > 0.0 && c->rms_norm_eps < 1.0))
    return fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                "config field 'rms_norm_eps' must be in (0, 1)");
  if (!(c->rope_theta > 0.0 && c->rope_theta < 1e300))
    return fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                "config field 'rope_theta' must be positive and finite");
  return TL_OK;
}

static tl_status load_config_file(const char *path, tl_synth_config *c,
                                  char *err, size_t err_cap) {
  json_error_t je;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (root == NULL)
    return fail(err, err_cap,
                errno == ENOENT ? TL_ERR_IO : TL_ERR_INVALID_ARGUMENT,
                "%s: line %d: %s", path, je.line, je.text);
  tl_status st = TL_OK;
  if (!json_is_object(root)) {
    st = fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
              "%s: the config must be a JSON object", path);
    goto done;
  }
  struct {
    const char *name;
    uint64_t *p;
  } ints[] = {
      {"vocab_size", &c->vocab_size},
      {"hidden_size", &c->hidden_size},
      {"intermediate_size", &c->intermediate_size},
      {"num_hidden_layers", &c->num_hidden_layers},
      {"num_attention_heads", &c->num_attention_heads},
      {"num_key_value_heads", &c->num_key_value_heads},
      {"head_dim", &c->head_dim},
      {"max_position_embeddings", &c->max_position_embeddings},
  };
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    bool known = false;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
      if (strcmp(key, ints[i].name) != 0) continue;
      known = true;
      if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        st = fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                  "%s: field '%s' must be a positive integer", path, key);
        goto done;
      }
      *ints[i].p = (uint64_t)json_integer_value(v);
    }
    if (strcmp(key, "rms_norm_eps") == 0 || strcmp(key, "rope_theta") == 0) {
      known = true;
      if (!json_is_number(v)) {
        st = fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                  "%s: field '%s' must be a number", path, key);
        goto done;
      }
      *(key[1] == 'm' ? &c->rms_norm_eps : &c->rope_theta) =
          json_number_value(v);
    }
    if (!known) {
      st = fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                "%s: unknown config field '%s'", path, key);
      goto done;
    }
  }
  st = tl_synth_config_validate(c, err, err_cap);
done:
  json_decref(root);
  return st;
}

tl_status tl_synth_config_named(const char *name, tl_synth_config *c, char *err,
                                size_t err_cap) {
  tl_synth_config_tiny(c);
  if (strcmp(name, "tiny") == 0) return TL_OK;
  if (strcmp(name, "qwen3-0.6b") == 0) {
    tl_synth_config_qwen3_06b(c);
    return TL_OK;
  }
  return load_config_file(name, c, err, err_cap);
}

/* --- the generator --------------------------------------------------------
 */

static uint64_t mix64(uint64_t z) { /* the splitmix64 finaliser */
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

static uint64_t fnv1a64(const char *s) {
  uint64_t h = 0xCBF29CE484222325u;
  for (; *s != '\0'; s++) h = (h ^ (uint8_t)*s) * 0x100000001B3u;
  return h;
}

static double approx_normal(uint64_t key, uint64_t j) {
  uint64_t b = mix64(key + (j + 1) * 0x9E3779B97F4A7C15u);
  /* Irwin-Hall with four 16-bit uniforms (x + 0.5) / 65536, centred and
   * scaled to unit variance; every step is exact in double until the final
   * multiplication. */
  double s = (double)(b & 0xFFFF) + (double)((b >> 16) & 0xFFFF) +
             (double)((b >> 32) & 0xFFFF) + (double)(b >> 48);
  return ((s + 2.0) / 65536.0 - 2.0) * 1.7320508075688772;
}

float tl_synth_value(uint64_t seed, const char *name, uint64_t j, double mean,
                     double std) {
  uint64_t key = mix64(seed ^ fnv1a64(name));
  return (float)(mean + std * approx_normal(key, j));
}

/* 1 / sqrt(x) by Newton's iteration on sqrt (no libm needed; exact enough
 * and deterministic: IEEE double arithmetic only). */
static double inv_sqrt(double x) {
  double r = x > 1.0 ? x : 1.0;
  for (int i = 0; i < 200; i++) {
    double n = 0.5 * (r + x / r);
    if (n == r) break;
    r = n;
  }
  return 1.0 / r;
}

/* --- the tensor list ------------------------------------------------------
 */

typedef struct synth_tensor {
  char name[80];
  const char *source; /* name whose values it holds (lm_head: embed) */
  uint64_t shape[2];
  size_t rank;
  double mean, std;
  uint64_t n_elements, offset, len; /* offset within its shard's data */
  unsigned shard;
} synth_tensor;

static int by_name(const void *a, const void *b) {
  return strcmp(((const synth_tensor *)a)->name,
                ((const synth_tensor *)b)->name);
}

#define EMBED_NAME "model.embed_tokens.weight"
#define EMBED_STD 0.05
#define NORM_STD 0.02

static void add(synth_tensor *t, size_t *n, const char *name, uint64_t rows,
                uint64_t cols, size_t esize) {
  synth_tensor *x = &t[(*n)++];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%s", name);
  x->shape[0] = rows;
  x->shape[1] = cols;
  x->rank = cols == 0 ? 1 : 2;
  x->n_elements = cols == 0 ? rows : rows * cols;
  x->len = x->n_elements * esize;
  if (cols == 0) {
    x->mean = 1.0;
    x->std = NORM_STD;
  } else {
    x->mean = 0.0;
    x->std = inv_sqrt((double)cols);
  }
}

static synth_tensor *build_tensors(const tl_synth_options *o, size_t *count) {
  const tl_synth_config *c = &o->config;
  size_t esize = o->f32 ? 4 : 2;
  size_t cap = 3 + 11 * (size_t)c->num_hidden_layers;
  synth_tensor *t = calloc(cap, sizeof *t);
  if (t == NULL) return NULL;
  size_t n = 0;
  uint64_t h = c->hidden_size, q = c->num_attention_heads * c->head_dim,
           kv = c->num_key_value_heads * c->head_dim;
  add(t, &n, EMBED_NAME, c->vocab_size, h, esize);
  t[0].std = EMBED_STD;
  for (uint64_t l = 0; l < c->num_hidden_layers; l++) {
    char b[80];
#define LAYER(suffix, rows, cols)                                            \
  snprintf(b, sizeof b, "model.layers.%llu." suffix, (unsigned long long)l); \
  add(t, &n, b, rows, cols, esize)
    LAYER("input_layernorm.weight", h, 0);
    LAYER("post_attention_layernorm.weight", h, 0);
    LAYER("self_attn.q_proj.weight", q, h);
    LAYER("self_attn.k_proj.weight", kv, h);
    LAYER("self_attn.v_proj.weight", kv, h);
    LAYER("self_attn.o_proj.weight", h, q);
    LAYER("self_attn.q_norm.weight", c->head_dim, 0);
    LAYER("self_attn.k_norm.weight", c->head_dim, 0);
    LAYER("mlp.gate_proj.weight", c->intermediate_size, h);
    LAYER("mlp.up_proj.weight", c->intermediate_size, h);
    LAYER("mlp.down_proj.weight", h, c->intermediate_size);
#undef LAYER
  }
  add(t, &n, "model.norm.weight", h, 0, esize);
  if (o->separate_lm_head) {
    add(t, &n, "lm_head.weight", c->vocab_size, h, esize);
    t[n - 1].std = EMBED_STD;
  }
  qsort(t, n, sizeof *t, by_name);
  /* Qwen3-Embedding is saved from Qwen3Model: no "model." (the order
   * stays sorted) */
  for (size_t i = 0; o->embedding && i < n; i++)
    memmove(t[i].name, t[i].name + 6, strlen(t[i].name + 6) + 1);
  /* After the sort: the slots moved, so name pointers are taken now. */
  for (size_t i = 0; i < n; i++)
    t[i].source =
        strcmp(t[i].name, "lm_head.weight") == 0 ? EMBED_NAME : t[i].name;
  *count = n;
  return t;
}

/* --- text helpers ---------------------------------------------------------
 */

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool oom;
} sbuf;

static void sb_printf(sbuf *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *s, const char *fmt, ...) {
  if (s->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = s->cap - s->len;
    int k = vsnprintf(s->p == NULL ? NULL : s->p + s->len, room, fmt, ap);
    va_end(ap);
    if (k < 0) {
      s->oom = true;
      return;
    }
    if ((size_t)k < room) {
      s->len += (size_t)k;
      return;
    }
    size_t ncap = (s->cap + (size_t)k + 1) * 2;
    char *np = realloc(s->p, ncap);
    if (np == NULL) {
      s->oom = true;
      return;
    }
    s->p = np;
    s->cap = ncap;
  }
}

/* Python's repr of a float (shortest round-trip; "1e-06", "0.02", "1.0"). */
static void py_float(char *out, size_t cap, double v) {
  for (int p = 1; p <= 17; p++) {
    snprintf(out, cap, "%.*g", p, v);
    if (strtod(out, NULL) == v) break;
  }
  if (strpbrk(out, ".eni") == NULL && strlen(out) + 3 <= cap) strcat(out, ".0");
}

/* --- special tokens -------------------------------------------------------
 */

/* What config.json and generation_config.json need from the copied
 * tokenizer: the special-token ids, looked up by content so that the side
 * files agree with whichever tokenizer is copied (the real one gives the
 * published 151643 and 151645), and the largest id, which the embedding
 * must cover. */
typedef struct synth_tokens {
  uint64_t endoftext; /* "<|endoftext|>": bos, pad, second generation eos */
  uint64_t im_end;    /* "<|im_end|>": eos */
  uint64_t max_id;    /* over model.vocab and added_tokens */
} synth_tokens;

static bool json_id(json_t *v, uint64_t *id) {
  if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
  *id = (uint64_t)json_integer_value(v);
  return true;
}

static tl_status read_tokens(const char *path, synth_tokens *k, char *err,
                             size_t err_cap) {
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  if (root == NULL)
    return fail(err, err_cap, je.line < 0 ? TL_ERR_IO : TL_ERR_INVALID_MODEL,
                "%s: line %d: %s", path, je.line, je.text);
  tl_status st = TL_OK;
  json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab");
  json_t *added = json_object_get(root, "added_tokens");
  struct {
    const char *content;
    uint64_t *id;
    bool found;
  } want[] = {{"<|endoftext|>", &k->endoftext, false},
              {"<|im_end|>", &k->im_end, false}};
  k->max_id = 0;
  if (!json_is_object(vocab) || !json_is_array(added)) {
    st = fail(err, err_cap, TL_ERR_INVALID_MODEL,
              "%s: expected model.vocab (an object) and added_tokens (an "
              "array)",
              path);
    goto done;
  }
  const char *token;
  json_t *v;
  json_object_foreach(vocab, token, v) {
    uint64_t id;
    if (!json_id(v, &id)) {
      st = fail(err, err_cap, TL_ERR_INVALID_MODEL,
                "%s: model.vocab[\"%s\"]: expected a non-negative integer id",
                path, token);
      goto done;
    }
    if (id > k->max_id) k->max_id = id;
  }
  size_t i;
  json_array_foreach(added, i, v) {
    uint64_t id;
    json_t *content = json_object_get(v, "content");
    if (!json_id(json_object_get(v, "id"), &id) || !json_is_string(content)) {
      st = fail(err, err_cap, TL_ERR_INVALID_MODEL,
                "%s: added_tokens[%zu]: expected a non-negative integer id "
                "and a string content",
                path, i);
      goto done;
    }
    if (id > k->max_id) k->max_id = id;
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++)
      if (!want[w].found &&
          strcmp(json_string_value(content), want[w].content) == 0) {
        *want[w].id = id;
        want[w].found = true;
      }
  }
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++)
    if (!want[w].found) {
      st = fail(err, err_cap, TL_ERR_INVALID_MODEL,
                "%s: added_tokens has no \"%s\" (its id goes into "
                "config.json and generation_config.json)",
                path, want[w].content);
      goto done;
    }
done:
  json_decref(root);
  return st;
}

/* eos: config.json's eos_token_id (the published Qwen3-0.6B's is
 * <|im_end|>, Qwen3-Embedding-0.6B's <|endoftext|>). */
static void config_json(sbuf *s, const tl_synth_config *c,
                        const synth_tokens *k, uint64_t eos) {
  char eps[40], theta[40];
  py_float(eps, sizeof eps, c->rms_norm_eps);
  /* The published file writes rope_theta as an integer. */
  if (c->rope_theta == (double)(uint64_t)c->rope_theta &&
      c->rope_theta < 9007199254740992.0)
    snprintf(theta, sizeof theta, "%llu",
             (unsigned long long)(uint64_t)c->rope_theta);
  else
    py_float(theta, sizeof theta, c->rope_theta);
  sb_printf(s,
            "{\n"
            "  \"architectures\": [\n"
            "    \"Qwen3ForCausalLM\"\n"
            "  ],\n"
            "  \"attention_bias\": false,\n"
            "  \"attention_dropout\": 0.0,\n"
            "  \"bos_token_id\": %llu,\n"
            "  \"eos_token_id\": %llu,\n"
            "  \"head_dim\": %llu,\n"
            "  \"hidden_act\": \"silu\",\n"
            "  \"hidden_size\": %llu,\n"
            "  \"initializer_range\": 0.02,\n"
            "  \"intermediate_size\": %llu,\n"
            "  \"max_position_embeddings\": %llu,\n"
            "  \"max_window_layers\": %llu,\n"
            "  \"model_type\": \"qwen3\",\n"
            "  \"num_attention_heads\": %llu,\n"
            "  \"num_hidden_layers\": %llu,\n"
            "  \"num_key_value_heads\": %llu,\n"
            "  \"rms_norm_eps\": %s,\n"
            "  \"rope_scaling\": null,\n"
            "  \"rope_theta\": %s,\n"
            "  \"sliding_window\": null,\n"
            "  \"tie_word_embeddings\": true,\n"
            "  \"torch_dtype\": \"bfloat16\",\n"
            "  \"transformers_version\": \"4.51.0\",\n"
            "  \"use_cache\": true,\n"
            "  \"use_sliding_window\": false,\n"
            "  \"vocab_size\": %llu\n"
            "}\n",
            (unsigned long long)k->endoftext, (unsigned long long)eos,
            (unsigned long long)c->head_dim, (unsigned long long)c->hidden_size,
            (unsigned long long)c->intermediate_size,
            (unsigned long long)c->max_position_embeddings,
            (unsigned long long)c->num_hidden_layers,
            (unsigned long long)c->num_attention_heads,
            (unsigned long long)c->num_hidden_layers,
            (unsigned long long)c->num_key_value_heads, eps, theta,
            (unsigned long long)c->vocab_size);
}

/* The published file lists <|endoftext|> as a second EOS, which config.json
 * and tokenizer_config.json do not: written only when asked
 * (publisher_eos), so that a default checkpoint converts without a
 * profile. */
static void generation_config_json(sbuf *s, const synth_tokens *k,
                                   bool publisher_eos) {
  char second[40] = "";
  if (publisher_eos)
    snprintf(second, sizeof second, ",\n    %llu",
             (unsigned long long)k->endoftext);
  sb_printf(s,
            "{\n"
            "  \"bos_token_id\": %llu,\n"
            "  \"do_sample\": true,\n"
            "  \"eos_token_id\": [\n"
            "    %llu%s\n"
            "  ],\n"
            "  \"pad_token_id\": %llu,\n"
            "  \"temperature\": 0.6,\n"
            "  \"top_k\": 20,\n"
            "  \"top_p\": 0.95,\n"
            "  \"transformers_version\": \"4.51.0\"\n"
            "}\n",
            (unsigned long long)k->endoftext, (unsigned long long)k->im_end,
            second, (unsigned long long)k->endoftext);
}

static void shard_name(char *out, size_t cap, unsigned i, unsigned k) {
  if (k <= 1)
    snprintf(out, cap, "model.safetensors");
  else
    snprintf(out, cap, "model-%05u-of-%05u.safetensors", i + 1, k);
}

/* --- writing --------------------------------------------------------------
 */

typedef struct writer {
  const char *dir;
  char **written; /* base names, removed again on failure */
  size_t n_written;
  uint64_t bytes;
  char *err;
  size_t err_cap;
} writer;

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p != NULL) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static tl_status note_written(writer *w, const char *name, uint64_t size) {
  char **nw = realloc(w->written, (w->n_written + 1) * sizeof *nw);
  if (nw == NULL) return TL_ERR_OUT_OF_MEMORY;
  w->written = nw;
  w->written[w->n_written] = strdup(name);
  if (w->written[w->n_written] == NULL) return TL_ERR_OUT_OF_MEMORY;
  w->n_written++;
  w->bytes += size;
  return TL_OK;
}

static tl_status write_small(writer *w, const char *name, const void *data,
                             size_t len) {
  char *path = join(w->dir, name);
  if (path == NULL) return TL_ERR_OUT_OF_MEMORY;
  tl_status st = tl_file_write_atomic(path, data, len, w->err, w->err_cap);
  free(path);
  return st == TL_OK ? note_written(w, name, len) : st;
}

/* The published Qwen3-Embedding's sentence-transformers files. */
static const char modules_json[] =
    "[\n  {\n    \"idx\": 0,\n    \"name\": \"0\",\n    \"path\": \"\",\n"
    "    \"type\": \"sentence_transformers.models.Transformer\"\n  },\n"
    "  {\n    \"idx\": 1,\n    \"name\": \"1\",\n    \"path\": \"1_Pooling\",\n"
    "    \"type\": \"sentence_transformers.models.Pooling\"\n  },\n"
    "  {\n    \"idx\": 2,\n    \"name\": \"2\",\n    \"path\": \"2_Normalize\",\n"
    "    \"type\": \"sentence_transformers.models.Normalize\"\n  }\n]\n";

static void pooling_json(sbuf *s, uint64_t hidden) {
  sb_printf(s,
            "{\n    \"word_embedding_dimension\": %llu,\n"
            "    \"pooling_mode_cls_token\": false,\n"
            "    \"pooling_mode_mean_tokens\": false,\n"
            "    \"pooling_mode_max_tokens\": false,\n"
            "    \"pooling_mode_mean_sqrt_len_tokens\": false,\n"
            "    \"pooling_mode_weightedmean_tokens\": false,\n"
            "    \"pooling_mode_lasttoken\": true,\n"
            "    \"include_prompt\": true\n}",
            (unsigned long long)hidden);
}

/* tokenizer.json with the post-processor Qwen3-Embedding's has: every
 * input gets <|endoftext|> appended. */
static tl_status embedding_tokenizer(writer *w, const char *src_dir, uint64_t endoftext) {
  char *src = join(src_dir, "tokenizer.json"), *text;
  json_error_t je;
  json_t *doc = src != NULL ? json_load_file(src, JSON_REJECT_DUPLICATES, &je) : NULL, *pp;
  tl_status st;
  free(src);
  if (doc == NULL) return fail(w->err, w->err_cap, TL_ERR_IO, "tokenizer.json: %s", je.text);
  pp = json_pack("{s:s,s:[{s:{s:s,s:i}},{s:{s:s,s:i}}],s:[{s:{s:s,s:i}},{s:{s:s,s:i}},"
                 "{s:{s:s,s:i}},{s:{s:s,s:i}}],s:{s:{s:s,s:[I],s:[s]}}}",
                 "type", "TemplateProcessing", "single", "Sequence", "id", "A", "type_id", 0,
                 "SpecialToken", "id", "<|endoftext|>", "type_id", 0, "pair", "Sequence", "id",
                 "A", "type_id", 0, "SpecialToken", "id", "<|endoftext|>", "type_id", 0,
                 "Sequence", "id", "B", "type_id", 1, "SpecialToken", "id", "<|endoftext|>",
                 "type_id", 1, "special_tokens", "<|endoftext|>", "id", "<|endoftext|>", "ids",
                 (json_int_t)endoftext, "tokens", "<|endoftext|>");
  text = pp != NULL && json_object_set_new(doc, "post_processor", pp) == 0
             ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII)
             : NULL;
  json_decref(doc);
  if (text == NULL) return TL_ERR_OUT_OF_MEMORY;
  st = write_small(w, "tokenizer.json", text, strlen(text));
  free(text);
  return st;
}

static tl_status copy_file(writer *w, const char *src_dir, const char *name) {
  char *src = join(src_dir, name);
  if (src == NULL) return TL_ERR_OUT_OF_MEMORY;
  tl_file_view v;
  tl_status st = tl_file_open_view(src, &v, w->err, w->err_cap);
  free(src);
  if (st != TL_OK) return st;
  st = write_small(w, name, v.data, v.len);
  tl_file_close_view(&v);
  return st;
}

/* One shard: header, then every tensor's values, streamed through a
 * temporary file that is renamed into place. */
static tl_status write_shard(writer *w, const tl_synth_options *o,
                             const synth_tensor *t, size_t n, unsigned shard,
                             const char *name) {
  sbuf h = {0};
  sb_printf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
  for (size_t i = 0; i < n; i++) {
    if (t[i].shard != shard) continue;
    sb_printf(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name,
              o->f32 ? "F32" : "BF16");
    for (size_t r = 0; r < t[i].rank; r++)
      sb_printf(&h, "%s%llu", r ? "," : "", (unsigned long long)t[i].shape[r]);
    sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}",
              (unsigned long long)t[i].offset,
              (unsigned long long)(t[i].offset + t[i].len));
  }
  sb_printf(&h, "}");
  while (!h.oom && h.len % 8 != 0) sb_printf(&h, " ");
  if (h.oom) {
    free(h.p);
    return TL_ERR_OUT_OF_MEMORY;
  }

  /* Through the host's atomic writer: the temporary file is removed on
   * any failure and on SIGINT/SIGTERM (file.h). */
  tl_status st = TL_OK;
  char *path = join(w->dir, name);
  uint8_t *buf = malloc((size_t)CHUNK_ELEMS * 4);
  tl_file_atomic f;
  uint64_t total = 8 + h.len, at = 8 + h.len;
  uint8_t len8[8];
  if (path == NULL || buf == NULL) {
    st = TL_ERR_OUT_OF_MEMORY;
    goto out;
  }
  st = tl_file_atomic_begin(&f, path, w->err, w->err_cap);
  if (st != TL_OK) goto out;
  tl_store_le64(len8, h.len);
  st = tl_file_atomic_pwrite(&f, 0, len8, 8, w->err, w->err_cap);
  if (st == TL_OK) st = tl_file_atomic_pwrite(&f, 8, h.p, h.len, w->err, w->err_cap);
  for (size_t i = 0; st == TL_OK && i < n; i++) {
    if (t[i].shard != shard) continue;
    uint64_t key = mix64(o->seed ^ fnv1a64(t[i].source));
    for (uint64_t j0 = 0; st == TL_OK && j0 < t[i].n_elements; j0 += CHUNK_ELEMS) {
      uint64_t m = t[i].n_elements - j0;
      if (m > CHUNK_ELEMS) m = CHUNK_ELEMS;
      for (uint64_t k = 0; k < m; k++) {
        float v = (float)(t[i].mean + t[i].std * approx_normal(key, j0 + k));
        if (o->f32) {
          uint32_t bits;
          memcpy(&bits, &v, 4);
          tl_store_le32(buf + 4 * k, bits);
        } else {
          uint16_t hb = tl_f32_to_bf16(v);
          buf[2 * k] = (uint8_t)hb;
          buf[2 * k + 1] = (uint8_t)(hb >> 8);
        }
      }
      size_t bytes = (size_t)m * (o->f32 ? 4 : 2);
      if (o->stop != NULL && *o->stop) {
        st = fail(w->err, w->err_cap, TL_ERR_CANCELLED, "%s: stopped by a signal", path);
        break;
      }
      st = tl_file_atomic_pwrite(&f, at, buf, bytes, w->err, w->err_cap);
      at += bytes;
    }
    total += t[i].len;
  }
  if (st == TL_OK) st = tl_file_atomic_commit(&f, w->err, w->err_cap);
  else tl_file_atomic_abort(&f);
  if (st == TL_OK) st = note_written(w, name, total);
out:
  free(h.p);
  free(path);
  free(buf);
  return st;
}

/* Free bytes for an unprivileged writer on the file system that holds dir
 * (or, when dir does not exist yet, its parent); UINT64_MAX when unknown. */
static uint64_t free_bytes(const char *dir) {
  struct statvfs sv;
  char *parent;
  const char *slash;
  size_t n;
  uint64_t got = UINT64_MAX;
  if (statvfs(dir, &sv) == 0) return (uint64_t)sv.f_bavail * sv.f_frsize;
  slash = strrchr(dir, '/');
  n = slash == NULL ? 1 : slash == dir ? 1 : (size_t)(slash - dir);
  parent = malloc(n + 1);
  if (parent == NULL) return got;
  memcpy(parent, slash == NULL ? "." : dir, n);
  parent[n] = '\0';
  if (statvfs(parent, &sv) == 0) got = (uint64_t)sv.f_bavail * sv.f_frsize;
  free(parent);
  return got;
}

/* What the checkpoint will take: the tensor bytes, each shard's header
 * (a bound: 256 bytes per tensor plus 64), the copied tokenizer files and
 * the small JSON files (64 KiB). */
static uint64_t estimate_bytes(const char *tok, uint64_t tensor_bytes, size_t n_tensors,
                               unsigned shards) {
  const char *names[] = {"tokenizer.json", "tokenizer_config.json"};
  uint64_t est = tensor_bytes + (uint64_t)n_tensors * 256 + (uint64_t)shards * 64 + 65536;
  for (size_t i = 0; i < 2; i++) {
    char *p = join(tok, names[i]);
    struct stat st;
    if (p != NULL && stat(p, &st) == 0) est += (uint64_t)st.st_size;
    free(p);
  }
  return est;
}

static tl_status prepare_dir(const char *dir, char *err, size_t cap,
                             bool *created) {
  *created = false;
  if (mkdir(dir, 0777) == 0) {
    *created = true;
    return TL_OK;
  }
  if (errno != EEXIST)
    return fail(err, cap, TL_ERR_IO, "%s: cannot create: %s", dir,
                strerror(errno));
  DIR *d = opendir(dir);
  if (d == NULL)
    return fail(err, cap, TL_ERR_IO, "%s: not a readable directory: %s", dir,
                strerror(errno));
  struct dirent *e;
  bool empty = true;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      empty = false;
  closedir(d);
  if (!empty)
    return fail(err, cap, TL_ERR_IO, "%s: directory is not empty", dir);
  return TL_OK;
}

tl_status tl_synth_write(const char *dir, const tl_synth_options *o,
                         tl_synth_report *report, char *err, size_t err_cap) {
  if (dir == NULL || o == NULL) return TL_ERR_INVALID_ARGUMENT;
  tl_status st = tl_synth_config_validate(&o->config, err, err_cap);
  if (st != TL_OK) return st;
  unsigned k = o->shards == 0 ? 1 : o->shards;
  if (k > MAX_SHARDS)
    return fail(err, err_cap, TL_ERR_INVALID_ARGUMENT, "--shards must be 1..%u",
                MAX_SHARDS);
  const char *tok =
      o->tokenizer_dir != NULL ? o->tokenizer_dir : TL_SYNTH_TOKENIZER_DIR;
  {
    const char *need[] = {"tokenizer.json", "tokenizer_config.json"};
    for (size_t i = 0; i < 2; i++) {
      char *p = join(tok, need[i]);
      if (p == NULL) return TL_ERR_OUT_OF_MEMORY;
      bool there = access(p, R_OK) == 0;
      if (!there)
        fail(err, err_cap, TL_ERR_IO, "%s: tokenizer file not readable", p);
      free(p);
      if (!there) return TL_ERR_IO;
    }
  }
  synth_tokens ids;
  {
    char *p = join(tok, "tokenizer.json");
    if (p == NULL) return TL_ERR_OUT_OF_MEMORY;
    st = read_tokens(p, &ids, err, err_cap);
    /* Every token needs an embedding row. */
    if (st == TL_OK && ids.max_id >= o->config.vocab_size)
      st = fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                "vocab_size %llu does not cover the tokenizer: %s has token "
                "id %llu (vocab_size must be at least %llu)",
                (unsigned long long)o->config.vocab_size, p,
                (unsigned long long)ids.max_id,
                (unsigned long long)ids.max_id + 1);
    free(p);
    if (st != TL_OK) return st;
  }

  size_t n = 0;
  synth_tensor *t = build_tensors(o, &n);
  if (t == NULL) return TL_ERR_OUT_OF_MEMORY;
  if (k > n) {
    free(t);
    return fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                "--shards %u exceeds the %zu tensors", k, n);
  }
  /* Shards: contiguous runs of the name-sorted list, cut where the running
   * byte count first reaches total * (s + 1) / K, each shard non-empty. */
  uint64_t total = 0, params = 0;
  for (size_t i = 0; i < n; i++) {
    total += t[i].len;
    params += t[i].n_elements;
  }
  {
    unsigned s = 0;
    uint64_t cum = 0, off = 0;
    for (size_t i = 0; i < n; i++) {
      t[i].shard = s;
      t[i].offset = off;
      off += t[i].len;
      cum += t[i].len;
      size_t left = n - i - 1;
      unsigned shards_left = k - s - 1;
      if (shards_left > 0 &&
          (left == shards_left ||
           (double)cum >= (double)total * (double)(s + 1) / (double)k)) {
        s++;
        off = 0;
      }
    }
  }

  {
    uint64_t need = estimate_bytes(tok, total, n, k), have = free_bytes(dir);
    if (have != UINT64_MAX && need > have) {
      free(t);
      return fail(err, err_cap, TL_ERR_IO,
                  "%s: the checkpoint needs about %llu bytes (%.1f GB: %zu tensors, %llu "
                  "parameters), and the file system has %llu bytes (%.1f GB) free; nothing "
                  "was written",
                  dir, (unsigned long long)need, need / 1e9, n,
                  (unsigned long long)params, (unsigned long long)have, have / 1e9);
    }
  }
  bool created;
  st = prepare_dir(dir, err, err_cap, &created);
  if (st != TL_OK) {
    free(t);
    return st;
  }
  writer w = {.dir = dir, .err = err, .err_cap = err_cap};
  sbuf s = {0};
  config_json(&s, &o->config, &ids,
              o->embedding && o->publisher_eos ? ids.endoftext : ids.im_end);
  st =
      s.oom ? TL_ERR_OUT_OF_MEMORY : write_small(&w, "config.json", s.p, s.len);
  if (st == TL_OK) {
    s.len = 0;
    generation_config_json(&s, &ids, o->publisher_eos);
    st = s.oom ? TL_ERR_OUT_OF_MEMORY
               : write_small(&w, "generation_config.json", s.p, s.len);
  }
  free(s.p);
  if (st == TL_OK)
    st = o->embedding ? embedding_tokenizer(&w, tok, ids.endoftext)
                      : copy_file(&w, tok, "tokenizer.json");
  if (st == TL_OK) st = copy_file(&w, tok, "tokenizer_config.json");
  if (st == TL_OK && o->embedding) {
    char *pool = join(dir, "1_Pooling");
    sbuf ps = {0};
    pooling_json(&ps, o->config.hidden_size);
    st = write_small(&w, "modules.json", modules_json, sizeof modules_json - 1);
    if (st == TL_OK && (pool == NULL || ps.oom)) st = TL_ERR_OUT_OF_MEMORY;
    if (st == TL_OK && mkdir(pool, 0777) != 0)
      st = fail(err, err_cap, TL_ERR_IO, "%s: %s", pool, strerror(errno));
    if (st == TL_OK) st = write_small(&w, "1_Pooling/config.json", ps.p, ps.len);
    free(ps.p);
    free(pool);
  }
  for (unsigned i = 0; st == TL_OK && i < k; i++) {
    char name[64];
    if (o->stop != NULL && *o->stop) {
      st = fail(err, err_cap, TL_ERR_CANCELLED, "%s: stopped by a signal", dir);
      break;
    }
    shard_name(name, sizeof name, i, k);
    st = write_shard(&w, o, t, n, i, name);
  }
  if (st == TL_OK && k > 1) {
    sbuf ix = {0};
    sb_printf(&ix,
              "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n"
              "  \"weight_map\": {\n",
              (unsigned long long)total);
    for (size_t i = 0; i < n; i++) {
      char name[64];
      shard_name(name, sizeof name, t[i].shard, k);
      sb_printf(&ix, "    \"%s\": \"%s\"%s\n", t[i].name, name,
                i + 1 < n ? "," : "");
    }
    sb_printf(&ix, "  }\n}\n");
    st = ix.oom ? TL_ERR_OUT_OF_MEMORY
                : write_small(&w, "model.safetensors.index.json", ix.p, ix.len);
    free(ix.p);
  }
  if (st != TL_OK) {
    if (st == TL_ERR_OUT_OF_MEMORY) fail(err, err_cap, st, "out of memory");
    for (size_t i = 0; i < w.n_written; i++) {
      char *p = join(dir, w.written[i]);
      if (p != NULL) unlink(p);
      free(p);
    }
    if (o->embedding) {
      char *pool = join(dir, "1_Pooling");
      if (pool != NULL) rmdir(pool);
      free(pool);
    }
    if (created) rmdir(dir);
  } else if (report != NULL) {
    report->n_tensors = n;
    report->n_parameters = params;
    report->tensor_bytes = total;
    report->n_files = w.n_written;
    report->file_bytes = w.bytes;
  }
  for (size_t i = 0; i < w.n_written; i++) free(w.written[i]);
  free(w.written);
  free(t);
  return st;
}
