/* The qwen3/1 config schema: the real Qwen3-0.6B files resolve only with
 * the publisher profile's declared EOS resolution; every stop rule has a
 * case; conflict records are decoded with the strict CBOR reader. */
#define _POSIX_C_SOURCE 200809L
#include "qwen3_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbor/cbor.h"
#include "tl_test.h"

static const char real_config[] =
    "{\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false, "
    "\"attention_dropout\": 0.0, \"bos_token_id\": 151643, "
    "\"eos_token_id\": 151645, \"head_dim\": 128, \"hidden_act\": \"silu\", "
    "\"hidden_size\": 1024, \"initializer_range\": 0.02, "
    "\"intermediate_size\": 3072, \"max_position_embeddings\": 40960, "
    "\"max_window_layers\": 28, \"model_type\": \"qwen3\", "
    "\"num_attention_heads\": 16, \"num_hidden_layers\": 28, "
    "\"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-06, "
    "\"rope_scaling\": null, \"rope_theta\": 1000000, "
    "\"sliding_window\": null, \"tie_word_embeddings\": true, "
    "\"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.51.0\", "
    "\"use_cache\": true, \"use_sliding_window\": false, "
    "\"vocab_size\": 151936}";

static const char real_generation[] =
    "{\"bos_token_id\": 151643, \"do_sample\": true, "
    "\"eos_token_id\": [151645, 151643], \"pad_token_id\": 151643, "
    "\"temperature\": 0.6, \"top_k\": 20, \"top_p\": 0.95, "
    "\"transformers_version\": \"4.51.0\"}";

/* The fields tokenizer_config.json contributes (the real file has more). */
static const char real_tokenizer_config[] =
    "{\"bos_token\": null, \"eos_token\": \"<|im_end|>\", "
    "\"pad_token\": \"<|endoftext|>\", \"added_tokens_decoder\": {"
    "\"151643\": {\"content\": \"<|endoftext|>\", \"special\": true}, "
    "\"151644\": {\"content\": \"<|im_start|>\", \"special\": true}, "
    "\"151645\": {\"content\": \"<|im_end|>\", \"special\": true}}}";

typedef struct dir {
  char path[64];
  char config[96], generation[96], tokenizer[96];
} dir;

static bool write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) return false;
  fputs(text, f);
  return fclose(f) == 0;
}

static bool make_dir(tl_test_ctx *t, dir *d, const char *config,
                     const char *generation, const char *tokenizer) {
  strcpy(d->path, "/tmp/tl_qwen3_cfg_XXXXXX");
  if (!TL_EXPECT(t, mkdtemp(d->path) != NULL)) return false;
  snprintf(d->config, sizeof d->config, "%s/config.json", d->path);
  snprintf(d->generation, sizeof d->generation, "%s/generation_config.json",
           d->path);
  snprintf(d->tokenizer, sizeof d->tokenizer, "%s/tokenizer_config.json",
           d->path);
  return TL_EXPECT(t, write_file(d->config, config) &&
                          write_file(d->generation, generation) &&
                          write_file(d->tokenizer, tokenizer));
}

static void remove_dir(dir *d) {
  unlink(d->config);
  unlink(d->generation);
  unlink(d->tokenizer);
  rmdir(d->path);
}

/* config.json with one field replaced ("\"key\": value" → replacement,
 * or removed when replacement is ""). */
static char *edit(const char *key, const char *replacement) {
  const char *start = strstr(real_config, key), *end;
  size_t n = strlen(real_config) + strlen(replacement ? replacement : "") + 8;
  char *out = malloc(n);
  if (out == NULL || start == NULL) {
    free(out);
    return NULL;
  }
  start--; /* the opening quote */
  end = start;
  {
    int depth = 0;
    for (;; end++) {
      if (*end == '[' || *end == '{') depth++;
      if (*end == ']' || *end == '}') {
        if (depth == 0) break;
        depth--;
      }
      if (*end == ',' && depth == 0) break;
    }
  }
  memcpy(out, real_config, (size_t)(start - real_config));
  out[start - real_config] = '\0';
  if (replacement[0] != '\0') {
    strcat(out, replacement);
    strcat(out, end);
  } else if (*end == ',') {
    strcat(out, end + 2); /* ", " */
  } else {
    /* the last member: drop the ", " before it */
    out[strlen(out) - 2] = '\0';
    strcat(out, end);
  }
  return out;
}

typedef struct result {
  tl_status st;
  tl_qwen3_config cfg;
  uint8_t *conflict;
  size_t conflict_len;
  char err[512];
} result;

static void run_as(tl_test_ctx *t, const char *config, const char *generation,
                   const char *tokenizer, const tl_qwen3_profile *profile,
                   bool embedding, result *r) {
  dir d;
  memset(r, 0, sizeof *r);
  r->st = TL_ERR_INTERNAL_INVARIANT;
  if (config == NULL || !make_dir(t, &d, config, generation, tokenizer)) return;
  r->st = tl_qwen3_config_resolve(d.config, d.generation, d.tokenizer, NULL, 0,
                                  profile, embedding, &r->cfg, &r->conflict,
                                  &r->conflict_len, r->err, sizeof r->err);
  remove_dir(&d);
}

static void run(tl_test_ctx *t, const char *config, const char *generation,
                const char *tokenizer, const tl_qwen3_profile *profile,
                result *r) {
  run_as(t, config, generation, tokenizer, profile, false, r);
}

static void done(result *r) {
  tl_qwen3_config_free(&r->cfg);
  free(r->conflict);
}

/* Finds a key in the map that the reader is about to read; leaves the
 * reader at its value. */
static bool find_key(tl_cbor_reader *rd, const char *key) {
  size_t n;
  if (tl_cbor_expect_map(rd, &n) != TL_OK) return false;
  for (size_t i = 0; i < n; i++) {
    const char *k;
    size_t len;
    if (tl_cbor_expect_text(rd, &k, &len) != TL_OK) return false;
    if (len == strlen(key) && memcmp(k, key, len) == 0) return true;
    if (tl_cbor_skip(rd) != TL_OK) return false;
  }
  return false;
}

static bool text_at(const uint8_t *doc, size_t len, const char *key,
                    const char *want) {
  tl_cbor_reader rd;
  const char *s;
  size_t n;
  return tl_cbor_reader_init(&rd, doc, len, NULL) == TL_OK &&
         find_key(&rd, key) && tl_cbor_expect_text(&rd, &s, &n) == TL_OK &&
         n == strlen(want) && memcmp(s, want, n) == 0;
}

/* The conflict record: kind, field, and each source's file basename and
 * ids as "file=ids" joined by ";" (ids like "151645,151643"). */
static void check_record(tl_test_ctx *t, const result *r, const char *kind,
                         const char *field, const char *want_sources) {
  tl_cbor_reader rd;
  size_t n;
  char got[1024] = "";
  if (!TL_EXPECT_STATUS(t, r->st, TL_ERR_CONFLICT) ||
      !TL_EXPECT(t, r->conflict != NULL))
    return;
  TL_EXPECT_OK(t, tl_cbor_validate(r->conflict, r->conflict_len, NULL, NULL));
  TL_EXPECT(t, text_at(r->conflict, r->conflict_len, "conflict", kind));
  TL_EXPECT(t, text_at(r->conflict, r->conflict_len, "field", field));
  TL_EXPECT(t, tl_cbor_reader_init(&rd, r->conflict, r->conflict_len, NULL) ==
                       TL_OK &&
                   find_key(&rd, "message"));
  if (!TL_EXPECT(t, tl_cbor_reader_init(&rd, r->conflict, r->conflict_len,
                                        NULL) == TL_OK &&
                        find_key(&rd, "sources") &&
                        tl_cbor_expect_array(&rd, &n) == TL_OK))
    return;
  for (size_t i = 0; i < n; i++) {
    size_t pairs;
    if (!TL_EXPECT_OK(t, tl_cbor_expect_map(&rd, &pairs))) return;
    char file[256] = "", ids[128] = "";
    if (i > 0) strcat(got, ";");
    for (size_t p = 0; p < pairs; p++) {
      const char *k, *s;
      size_t len, slen;
      if (!TL_EXPECT_OK(t, tl_cbor_expect_text(&rd, &k, &len))) return;
      if (len == 4 && memcmp(k, "file", 4) == 0) {
        const char *base;
        char tmp[256];
        if (!TL_EXPECT_OK(t, tl_cbor_expect_text(&rd, &s, &slen))) return;
        snprintf(tmp, sizeof tmp, "%.*s", (int)slen, s);
        base = strrchr(tmp, '/');
        snprintf(file, sizeof file, "%s", base != NULL ? base + 1 : tmp);
      } else if (len == 3 && memcmp(k, "ids", 3) == 0) {
        size_t m;
        if (!TL_EXPECT_OK(t, tl_cbor_expect_array(&rd, &m))) return;
        for (size_t j = 0; j < m; j++) {
          uint64_t v;
          char num[24];
          if (!TL_EXPECT_OK(t, tl_cbor_expect_uint(&rd, &v))) return;
          snprintf(num, sizeof num, "%s%llu", j ? "," : "",
                   (unsigned long long)v);
          strcat(ids, num);
        }
      } else if (!TL_EXPECT_OK(t, tl_cbor_skip(&rd))) {
        return;
      }
    }
    strcat(got, file);
    strcat(got, "=");
    strcat(got, ids);
  }
  TL_EXPECT_STR(t, got, want_sources);
}

static void real_files_resolve_with_publisher_profile(tl_test_ctx *t) {
  result r;
  tl_cbor_reader rd;
  size_t n;
  run(t, real_config, real_generation, real_tokenizer_config,
      tl_qwen3_profile_publisher_0_6b(), &r);
  if (!TL_EXPECT_OK(t, r.st)) {
    tl_test_print(t, r.err);
    tl_test_print(t, "\n");
    done(&r);
    return;
  }
  TL_EXPECT_EQ_U64(t, r.cfg.vocab_size, 151936);
  TL_EXPECT_EQ_U64(t, r.cfg.hidden_size, 1024);
  TL_EXPECT_EQ_U64(t, r.cfg.intermediate_size, 3072);
  TL_EXPECT_EQ_U64(t, r.cfg.num_hidden_layers, 28);
  TL_EXPECT_EQ_U64(t, r.cfg.num_attention_heads, 16);
  TL_EXPECT_EQ_U64(t, r.cfg.num_key_value_heads, 8);
  TL_EXPECT_EQ_U64(t, r.cfg.head_dim, 128);
  TL_EXPECT_EQ_U64(t, r.cfg.max_position_embeddings, 40960);
  TL_EXPECT(t, r.cfg.tie_word_embeddings);
  TL_EXPECT(t, r.cfg.rms_norm_eps == 1e-6);
  TL_EXPECT(t, r.cfg.rope_theta == 1000000.0);
  TL_EXPECT_STR(t, r.cfg.hidden_act, "silu");
  TL_EXPECT(t, !r.cfg.attention_bias && !r.cfg.use_sliding_window);
  TL_EXPECT_EQ_U64(t, r.cfg.source_dtype, TL_QWEN3_DTYPE_BF16);
  TL_EXPECT(t, r.cfg.has_bos && r.cfg.bos_token_id == 151643);
  TL_EXPECT(t, r.cfg.has_pad && r.cfg.pad_token_id == 151643);
  TL_EXPECT_EQ_U64(t, r.cfg.n_eos, 2);
  TL_EXPECT_EQ_U64(t, r.cfg.eos_ids[0], 151645);
  TL_EXPECT_EQ_U64(t, r.cfg.eos_ids[1], 151643);
  /* Only layer_types (absent from the 4.51 file) is defaulted. */
  TL_EXPECT_EQ_U64(t, r.cfg.n_defaults, 1);
  TL_EXPECT_STR(t, r.cfg.defaults[0], "layer_types");
  TL_EXPECT_EQ_U64(t, r.cfg.n_deviations, 1);
  TL_EXPECT_STR(t, r.cfg.deviations[0].field, "eos_token_id");
  TL_EXPECT_STR(t, r.cfg.deviations[0].profile, "qwen3-0.6b-publisher");
  TL_EXPECT(t, r.conflict == NULL);
  /* The effective config document. */
  TL_EXPECT_OK(t, tl_cbor_validate(r.cfg.cbor, r.cfg.cbor_len, NULL, NULL));
  TL_EXPECT(t, text_at(r.cfg.cbor, r.cfg.cbor_len, "schema", "qwen3/1"));
  TL_EXPECT(t, text_at(r.cfg.cbor, r.cfg.cbor_len, "profile",
                       "qwen3-0.6b-publisher"));
  TL_EXPECT(
      t, tl_cbor_reader_init(&rd, r.cfg.cbor, r.cfg.cbor_len, NULL) == TL_OK &&
             find_key(&rd, "config") && find_key(&rd, "rms_norm_eps"));
  {
    const char *s;
    size_t len;
    TL_EXPECT(t, tl_cbor_expect_text(&rd, &s, &len) == TL_OK && len == 5 &&
                     memcmp(s, "1e-06", 5) == 0);
  }
  TL_EXPECT(
      t, tl_cbor_reader_init(&rd, r.cfg.cbor, r.cfg.cbor_len, NULL) == TL_OK &&
             find_key(&rd, "deviations") &&
             tl_cbor_expect_array(&rd, &n) == TL_OK && n == 1);
  TL_EXPECT(
      t, tl_cbor_reader_init(&rd, r.cfg.cbor, r.cfg.cbor_len, NULL) == TL_OK &&
             find_key(&rd, "documentary") &&
             tl_cbor_expect_map(&rd, &n) == TL_OK && n == 8);
  done(&r);
}

static void real_files_resolve_deterministically(tl_test_ctx *t) {
  result a, b;
  run(t, real_config, real_generation, real_tokenizer_config,
      tl_qwen3_profile_publisher_0_6b(), &a);
  run(t, real_config, real_generation, real_tokenizer_config,
      tl_qwen3_profile_publisher_0_6b(), &b);
  if (TL_EXPECT_OK(t, a.st) && TL_EXPECT_OK(t, b.st) &&
      TL_EXPECT_EQ_U64(t, a.cfg.cbor_len, b.cfg.cbor_len))
    TL_EXPECT_MEM(t, a.cfg.cbor, b.cfg.cbor, a.cfg.cbor_len);
  done(&a);
  done(&b);
}

static void eos_disagreement_without_profile(tl_test_ctx *t) {
  result r;
  run(t, real_config, real_generation, real_tokenizer_config, NULL, &r);
  check_record(t, &r, "eos_disagreement", "eos_token_id",
               "config.json=151645;generation_config.json=151645,151643;"
               "tokenizer_config.json=151645");
  TL_EXPECT(t, strstr(r.err, "eos_disagreement") != NULL);
  done(&r);
}

/* Qwen3-Embedding-0.6B's files: config.json 151643, tokenizer_config.json
 * <|im_end|> (151645). An embedding checkpoint records both claims and
 * takes their union (file order); a chat one stops. */
static void embedding_eos_disagreement_is_recorded(tl_test_ctx *t) {
  result r;
  char *c = edit("eos_token_id", "\"eos_token_id\": 151643");
  run_as(t, c, "{}", real_tokenizer_config, NULL, true, &r);
  if (TL_EXPECT_OK(t, r.st) && TL_EXPECT_EQ_U64(t, r.cfg.n_deviations, 1)) {
    const tl_qwen3_deviation *d = &r.cfg.deviations[0];
    TL_EXPECT_STR(t, d->kind, "embedding_unused");
    TL_EXPECT_STR(t, d->field, "eos_token_id");
    TL_EXPECT(t, d->profile == NULL);
    TL_EXPECT_EQ_U64(t, d->n_claims, 2);
    TL_EXPECT_STR(t, d->claims[0].file, "config.json");
    TL_EXPECT_EQ_U64(t, d->claims[0].ids[0], 151643);
    TL_EXPECT_STR(t, d->claims[1].file, "tokenizer_config.json");
    TL_EXPECT_EQ_U64(t, d->claims[1].ids[0], 151645);
    TL_EXPECT_EQ_U64(t, r.cfg.n_eos, 2);
    TL_EXPECT_EQ_U64(t, r.cfg.eos_ids[0], 151643);
    TL_EXPECT_EQ_U64(t, r.cfg.eos_ids[1], 151645);
    TL_EXPECT_OK(t, tl_cbor_validate(r.cfg.cbor, r.cfg.cbor_len, NULL, NULL));
  }
  done(&r);
  run(t, c, "{}", real_tokenizer_config, NULL, &r);
  check_record(t, &r, "eos_disagreement", "eos_token_id",
               "config.json=151643;tokenizer_config.json=151645");
  done(&r);
  free(c);
}

static void profile_applies_only_to_the_declared_disagreement(tl_test_ctx *t) {
  result r;
  run(t, real_config,
      "{\"eos_token_id\": [151645, 151644], \"bos_token_id\": 151643}",
      real_tokenizer_config, tl_qwen3_profile_publisher_0_6b(), &r);
  check_record(t, &r, "eos_disagreement", "eos_token_id",
               "config.json=151645;generation_config.json=151645,151644;"
               "tokenizer_config.json=151645");
  done(&r);
}

static void unknown_field_is_fatal(tl_test_ctx *t) {
  result r;
  char *c = edit("use_cache", "\"use_cache\": true, \"qk_layernorm\": true");
  run(t, c, real_generation, real_tokenizer_config,
      tl_qwen3_profile_publisher_0_6b(), &r);
  TL_EXPECT_STATUS(t, r.st, TL_ERR_INVALID_MODEL);
  TL_EXPECT(t, strstr(r.err, "$.qk_layernorm: unknown field") != NULL);
  TL_EXPECT(t, strstr(r.err, "config.json") != NULL);
  TL_EXPECT(t, r.conflict == NULL);
  free(c);
  done(&r);
}

static void expect_refused(tl_test_ctx *t, const char *key,
                           const char *replacement, tl_status want,
                           const char *needle) {
  result r;
  char *c = edit(key, replacement);
  run(t, c, real_generation, real_tokenizer_config,
      tl_qwen3_profile_publisher_0_6b(), &r);
  TL_EXPECT_STATUS(t, r.st, want);
  if (!TL_EXPECT(t, strstr(r.err, needle) != NULL)) {
    tl_test_print(t, r.err);
    tl_test_print(t, "\n");
  }
  free(c);
  done(&r);
}

static void unsupported_values_are_refused(tl_test_ctx *t) {
  expect_refused(t, "rope_scaling",
                 "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}",
                 TL_ERR_UNSUPPORTED_FEATURE, "$.rope_scaling");
  expect_refused(t, "hidden_act", "\"hidden_act\": \"gelu\"",
                 TL_ERR_UNSUPPORTED_FEATURE, "$.hidden_act: \"gelu\"");
  expect_refused(t, "attention_bias", "\"attention_bias\": true",
                 TL_ERR_UNSUPPORTED_FEATURE, "$.attention_bias");
  expect_refused(t, "use_sliding_window", "\"use_sliding_window\": true",
                 TL_ERR_UNSUPPORTED_FEATURE, "$.use_sliding_window");
  expect_refused(t, "torch_dtype", "\"torch_dtype\": \"float8_e4m3fn\"",
                 TL_ERR_UNSUPPORTED_FEATURE, "$.torch_dtype");
  expect_refused(t, "hidden_size", "\"hidden_size\": \"1024\"",
                 TL_ERR_INVALID_MODEL, "$.hidden_size: must be an integer");
  expect_refused(t, "rms_norm_eps", "\"rms_norm_eps\": -1",
                 TL_ERR_INVALID_MODEL, "$.rms_norm_eps");
}

static void kv_heads_must_divide_heads(tl_test_ctx *t) {
  result r;
  char *c = edit("num_key_value_heads", "\"num_key_value_heads\": 3");
  run(t, c, real_generation, real_tokenizer_config,
      tl_qwen3_profile_publisher_0_6b(), &r);
  check_record(t, &r, "kv_heads_not_dividing", "num_key_value_heads",
               "config.json=;config.json=");
  free(c);
  done(&r);
}

static void eos_out_of_vocab(tl_test_ctx *t) {
  result r;
  char *c = edit("eos_token_id", "\"eos_token_id\": 151936");
  run(t, c, "{\"eos_token_id\": 151936}", "{}", NULL, &r);
  check_record(t, &r, "id_out_of_vocab", "eos_token_id",
               "config.json=151936;generation_config.json=151936");
  free(c);
  done(&r);
}

static void architecture_missing_or_contradictory(tl_test_ctx *t) {
  result r;
  char *c = edit("architectures", "");
  run(t, c, real_generation, real_tokenizer_config,
      tl_qwen3_profile_publisher_0_6b(), &r);
  check_record(t, &r, "architecture_missing", "architectures",
               "config.json=;config.json=");
  free(c);
  done(&r);
  c = edit("architectures", "\"architectures\": [\"Qwen2ForCausalLM\"]");
  run(t, c, real_generation, real_tokenizer_config, NULL, &r);
  check_record(t, &r, "architecture_contradictory", "architectures",
               "config.json=;config.json=");
  free(c);
  done(&r);
  c = edit("model_type", "\"model_type\": \"qwen2\"");
  run(t, c, real_generation, real_tokenizer_config, NULL, &r);
  check_record(t, &r, "architecture_contradictory", "model_type",
               "config.json=;config.json=");
  free(c);
  done(&r);
}

static void bos_and_pad_disagreements(tl_test_ctx *t) {
  result r;
  /* tokenizer_config's bos_token null is no claim; a string is one. */
  run(t, real_config, real_generation,
      "{\"bos_token\": \"<|im_start|>\", \"eos_token\": \"<|im_end|>\", "
      "\"added_tokens_decoder\": {\"151644\": {\"content\": "
      "\"<|im_start|>\"}, \"151645\": {\"content\": \"<|im_end|>\"}}}",
      tl_qwen3_profile_publisher_0_6b(), &r);
  check_record(t, &r, "bos_disagreement", "bos_token_id",
               "config.json=151643;generation_config.json=151643;"
               "tokenizer_config.json=151644");
  done(&r);
  run(t, real_config,
      "{\"eos_token_id\": [151645, 151643], \"pad_token_id\": 151645}",
      real_tokenizer_config, tl_qwen3_profile_publisher_0_6b(), &r);
  check_record(t, &r, "pad_disagreement", "pad_token_id",
               "generation_config.json=151645;tokenizer_config.json=151643");
  done(&r);
}

static void unknown_special_token_is_refused(tl_test_ctx *t) {
  result r;
  run(t, real_config, real_generation,
      "{\"eos_token\": \"<|nope|>\", \"added_tokens_decoder\": {}}",
      tl_qwen3_profile_publisher_0_6b(), &r);
  TL_EXPECT_STATUS(t, r.st, TL_ERR_INVALID_MODEL);
  TL_EXPECT(t, strstr(r.err, "$.eos_token: \"<|nope|>\"") != NULL);
  done(&r);
}

static void defaults_are_materialised(tl_test_ctx *t) {
  static const char minimal[] =
      "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", "
      "\"eos_token_id\": 7, \"num_key_value_heads\": null}";
  result r;
  run(t, minimal, "{}", "{}", NULL, &r);
  if (!TL_EXPECT_OK(t, r.st)) {
    tl_test_print(t, r.err);
    done(&r);
    return;
  }
  /* Qwen3Config's own defaults. */
  TL_EXPECT_EQ_U64(t, r.cfg.vocab_size, 151936);
  TL_EXPECT_EQ_U64(t, r.cfg.hidden_size, 4096);
  TL_EXPECT_EQ_U64(t, r.cfg.intermediate_size, 22016);
  TL_EXPECT_EQ_U64(t, r.cfg.num_hidden_layers, 32);
  TL_EXPECT_EQ_U64(t, r.cfg.num_attention_heads, 32);
  TL_EXPECT_EQ_U64(t, r.cfg.num_key_value_heads, 32); /* null: = heads */
  TL_EXPECT_EQ_U64(t, r.cfg.head_dim, 128);
  TL_EXPECT_EQ_U64(t, r.cfg.max_position_embeddings, 32768);
  TL_EXPECT(t, r.cfg.rms_norm_eps == 1e-6 && r.cfg.rope_theta == 10000.0);
  TL_EXPECT(t, !r.cfg.tie_word_embeddings);
  TL_EXPECT_EQ_U64(t, r.cfg.source_dtype, TL_QWEN3_DTYPE_NONE);
  TL_EXPECT(t, !r.cfg.has_bos && !r.cfg.has_pad);
  TL_EXPECT_EQ_U64(t, r.cfg.n_defaults, 17);
  TL_EXPECT_EQ_U64(t, r.cfg.n_deviations, 0);
  {
    bool kv = false, rope = false;
    for (size_t i = 0; i < r.cfg.n_defaults; i++) {
      if (strcmp(r.cfg.defaults[i], "num_key_value_heads") == 0) kv = true;
      if (strcmp(r.cfg.defaults[i], "rope_theta") == 0) rope = true;
    }
    TL_EXPECT(t, kv && rope);
  }
  done(&r);
}

/* tl_qwen3_effective_fields names the "config" map's keys in the order
 * they are written, and tl_qwen3_is_documentary the documentary keys. */
static void effective_field_list_matches_the_document(tl_test_ctx *t) {
  result r;
  tl_cbor_reader rd;
  size_t n = 0;
  run(t, real_config, real_generation, real_tokenizer_config,
      tl_qwen3_profile_publisher_0_6b(), &r);
  if (TL_EXPECT_OK(t, r.st) &&
      TL_EXPECT(t, tl_cbor_reader_init(&rd, r.cfg.cbor, r.cfg.cbor_len,
                                       NULL) == TL_OK &&
                       find_key(&rd, "config") &&
                       tl_cbor_expect_map(&rd, &n) == TL_OK) &&
      TL_EXPECT_EQ_U64(t, n, TL_QWEN3_N_EFFECTIVE)) {
    /* Deterministic CBOR sorts the keys: compare as sets. */
    for (size_t i = 0; i < n; i++) {
      const char *k;
      size_t len;
      bool known = false;
      TL_EXPECT_OK(t, tl_cbor_expect_text(&rd, &k, &len));
      for (size_t j = 0; j < TL_QWEN3_N_EFFECTIVE; j++)
        known |= strlen(tl_qwen3_effective_fields[j]) == len &&
                 memcmp(tl_qwen3_effective_fields[j], k, len) == 0;
      TL_EXPECT(t, known);
      TL_EXPECT_OK(t, tl_cbor_skip(&rd));
    }
  }
  TL_EXPECT(t, tl_qwen3_is_documentary("use_cache"));
  TL_EXPECT(t, tl_qwen3_is_documentary("transformers_version"));
  TL_EXPECT(t, !tl_qwen3_is_documentary("hidden_size"));
  TL_EXPECT(t, !tl_qwen3_is_documentary("output_hidden_states"));
  done(&r);
}

static const tl_test_case cases[] = {
    TL_CASE(effective_field_list_matches_the_document),
    TL_CASE(real_files_resolve_with_publisher_profile),
    TL_CASE(real_files_resolve_deterministically),
    TL_CASE(eos_disagreement_without_profile),
    TL_CASE(embedding_eos_disagreement_is_recorded),
    TL_CASE(profile_applies_only_to_the_declared_disagreement),
    TL_CASE(unknown_field_is_fatal),
    TL_CASE(unsupported_values_are_refused),
    TL_CASE(kv_heads_must_divide_heads),
    TL_CASE(eos_out_of_vocab),
    TL_CASE(architecture_missing_or_contradictory),
    TL_CASE(bos_and_pad_disagreements),
    TL_CASE(unknown_special_token_is_refused),
    TL_CASE(defaults_are_materialised),
};
TL_SUITE(qwen3_config, cases);
