/* tinylm promote's mechanical claims (promote_mechanical.c): each runner
 * passes on real artifacts with the cases plan init registers from the
 * project's oracles (HF tokenizers' and Jinja2's goldens, the sampler
 * reference's known answers, tools/slm_inspect.py, the converter's
 * records), and each refuses a planted defect with the stop rule
 * docs/promotion.md gives it, naming where. Every run's observation is
 * in the store, one line per case hashing to the case's output. */
#define _POSIX_C_SOURCE 200809L
#include "promote_mechanical.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "cbor_doc.h"
#include "cli.h"
#include "file.h"
#include "hash/blake3.h"
#include "hash/sha256.h"
#include "promote_plan.h"
#include "sample/sampler_vectors.h"
#include "slm_view.h"
#include "slm_write.h"
#include "tl_test.h"

#define TINY_Q8 "tests/golden/slm/tiny-q8.slm"
#define TINY_F32 "tests/golden/slm/tiny-f32.slm"
#define TINY_Q4 "tests/golden/slm/tiny-q4.slm"
/* The real Qwen3 tokenizer (make tok-slm): what the goldens were made
 * from. */
#define QWEN3_TOK "build/tok/qwen3-tokenizer.slm"

typedef struct fixture {
  char dir[64];
  tl_store *store;
} fixture;

static bool fx_open(tl_test_ctx *t, fixture *fx) {
  char err[256];
  snprintf(fx->dir, sizeof fx->dir, "/tmp/tl_mech_XXXXXX");
  fx->store = NULL;
  if (!TL_EXPECT(t, mkdtemp(fx->dir) != NULL)) return false;
  return TL_EXPECT_OK(t, tl_store_open(fx->dir, true, &fx->store, err, sizeof err));
}

static void fx_close(fixture *fx) {
  char cmd[128];
  tl_store_close(fx->store);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", fx->dir);
}



/* The claim of `name` plan init registers for the artifact at path
 * (NULL: it registers none), with the reader's output when given. */
static json_t *plan_claim(tl_test_ctx *t, const char *path, const char *name,
                          const char *reader_json) {
  tl_native_model m;
  char err[512];
  json_t *claims = json_array(), *found = NULL, *c;
  size_t i;
  if (!TL_EXPECT_OK(t, tl_native_model_open(path, &m, err, sizeof err))) {
    json_decref(claims);
    return NULL;
  }
  TL_EXPECT_OK(t, tl_plan_mechanical_claims(&m, ".", reader_json, claims, err,
                                            sizeof err));
  json_array_foreach(claims, i, c) {
    if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
      found = json_incref(c);
  }
  json_decref(claims);
  tl_native_model_close(&m);
  return found;
}

/* The observation holds one line per case; each hashes to its output. */
static void check_observation(tl_test_ctx *t, fixture *fx,
                              const tl_claim_result *r) {
  uint8_t *bytes = NULL, h[32];
  size_t len = 0, at = 0, k = 0;
  char err[256];
  if (!TL_EXPECT(t, r->has_observation) ||
      !TL_EXPECT_OK(t, tl_store_get(fx->store, r->observation, &bytes, &len,
                                    err, sizeof err)))
    return;
  while (at < len && k < r->n_cases) {
    const uint8_t *nl = memchr(bytes + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - bytes) : len;
    tl_sha256(bytes + at, end - at, h);
    TL_EXPECT_MEM(t, h, r->cases[k].output, 32);
    at = end + 1;
    k++;
  }
  TL_EXPECT_EQ_U64(t, k, r->n_cases);
  TL_EXPECT_EQ_U64(t, at, len);
  free(bytes);
}

/* A stored observation with case 0's raw output changed so that it must
 * fail: what a forger who edits an observation (and every id above it)
 * would write. */
static void flip_case0(const char *kind, json_t *line) {
  json_t *d = json_object_get(line, "draw");
  if (strcmp(kind, "artifact") == 0)
    json_object_set_new(line, "problem", json_pack("{s:s,s:s,s:s}", "rule", "pack_mismatch",
                                                   "where", "tensor x", "detail", "flipped"));
  else if (strcmp(kind, "eos") == 0)
    json_object_set_new(line, "turn_end",
                        json_integer(json_integer_value(json_object_get(line, "turn_end")) + 1));
  else if (strcmp(kind, "sampler") == 0)
    json_object_set_new(d, "id", json_integer(json_integer_value(json_object_get(d, "id")) + 1));
  else if (strcmp(kind, "independent_reader") == 0)
    json_object_set_new(json_object_get(line, "inspect"), "flipped", json_true());
  else /* tokenizer, template: the runtime refused the case */
    json_object_set_new(line, "error", json_pack("{s:s}", "error", "flipped"));
}

/* The kind's judge on the observation with case 0 flipped: it fails case
 * 0 and the claim, and judges every other case as before. */
static void judge_flipped(tl_test_ctx *t, fixture *fx, tl_claim_ctx *c, const char *kind,
                          const tl_claim_result *was) {
  uint8_t *bytes = NULL, id[32];
  size_t len = 0;
  char err[256], *text, *nl;
  json_t *line;
  tl_claim_result r;
  if (!TL_EXPECT_OK(t, tl_store_get(fx->store, was->observation, &bytes, &len, err,
                                    sizeof err)))
    return;
  nl = memchr(bytes, '\n', len);
  line = nl ? json_loadb((const char *)bytes, (size_t)(nl - (char *)bytes), 0, NULL) : NULL;
  if (TL_EXPECT(t, line != NULL)) {
    flip_case0(kind, line);
    text = json_dumps(line, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    {
      size_t n = strlen(text), rest = len - (size_t)(nl - (char *)bytes);
      uint8_t *edited = malloc(n + rest);
      memcpy(edited, text, n);
      memcpy(edited + n, nl, rest);
      TL_EXPECT_OK(t, tl_store_put(fx->store, "observation", edited, n + rest, id, err,
                                   sizeof err));
      free(edited);
    }
    free(text);
    if (TL_EXPECT_OK(t, tl_claim_kind_find(kind)->judge(c, id, &r))) {
      TL_EXPECT(t, !r.pass);
      TL_EXPECT(t, !r.cases[0].pass);
      TL_EXPECT(t, r.stop_rule != NULL);
      for (size_t i = 1; i < r.n_cases; i++)
        TL_EXPECT(t, r.cases[i].pass == was->cases[i].pass);
      tl_claim_result_free(&r);
    }
  }
  json_decref(line);
  free(bytes);
}

/* Observes and judges a claim as promote does; the result's stop rule and
 * first divergence as asked. A passing claim's judge must also fail the
 * same observation with one case flipped. */
static void expect_claim(tl_test_ctx *t, const char *kind, tl_session *s,
                         const char *path, const json_t *claim,
                         const char *rule, const char *divergence) {
  fixture fx;
  tl_claim_result r;
  char err[512] = "";
  tl_claim_ctx c = {.session = s, .slm_path = path, .lane = "scalar",
                    .claim = claim, .plan_dir = ".", .err = err,
                    .err_cap = sizeof err};
  if (claim == NULL || !fx_open(t, &fx)) return;
  c.store = fx.store;
  if (TL_EXPECT_OK(t, tl_claim_observe_judge(tl_claim_kind_find(kind), &c, &r))) {
    TL_EXPECT_EQ_U64(t, r.n_cases, json_array_size(json_object_get(claim, "cases")));
    if (rule == NULL) {
      TL_EXPECT(t, r.pass);
      TL_EXPECT(t, r.stop_rule == NULL);
      if (!r.pass) tl_test_print(t, r.first_divergence);
      else judge_flipped(t, &fx, &c, kind, &r);
    } else {
      TL_EXPECT(t, !r.pass);
      TL_EXPECT_STR(t, r.stop_rule, rule);
      if (!TL_EXPECT(t, strstr(r.first_divergence, divergence) != NULL))
        tl_test_print(t, r.first_divergence);
    }
    check_observation(t, &fx, &r);
    tl_claim_result_free(&r);
  } else {
    tl_test_print(t, err);
  }
  fx_close(&fx);
}

static const char *case_name(const json_t *claim, size_t i) {
  return json_string_value(json_object_get(
      json_object_get(json_array_get(json_object_get(claim, "cases"), i), "case"),
      "name"));
}

/* Replaces case i's body by a changed copy, with its id recomputed as
 * plan init would. */
static void replace_case(json_t *claim, size_t i, json_t *body) {
  json_array_set_new(json_object_get(claim, "cases"), i, tl_plan_case(body));
}

/* ------------------------------------------------------------------------ */
/* Planted defects in copies of an artifact                                 */

/* Rewrites src into dst through edit, which may change any section's
 * bytes; every tensor digest, section digest and the header are then
 * recomputed (as the converter writes them), so that only the planted
 * fault is wrong. */
typedef void (*section_edit)(tl_slm_kind kind, uint8_t **data, size_t *len,
                             const void *arg);

static void emit_json(tl_cbor_writer *w, const void *arg) {
  tl_cbor_put_json(w, arg);
}

static bool rewrite(tl_test_ctx *t, const char *src, const char *dst,
                    section_edit edit, const void *arg) {
  tl_file_view v;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_slm_artifact_kind kind;
  tl_slm_part parts[TL_SLM_MAX_SECTIONS];
  uint8_t *bufs[TL_SLM_MAX_SECTIONS] = {0}, id[32], *dir = NULL, *data = NULL;
  char err[512], what[64];
  size_t at, n, dir_len = 0;
  bool ok;
  if (!TL_EXPECT_OK(t, tl_file_open_view(src, &v, err, sizeof err))) return false;
  ok = TL_EXPECT_OK(t, tl_slm_view_open(v.data, v.len, true, NULL, &slm, &ts,
                                        &kind, &at, what, sizeof what));
  n = ok ? slm.n_sections : 0;
  for (size_t i = 0; i < n; i++) {
    bufs[i] = malloc(slm.sections[i].len + 1);
    memcpy(bufs[i], slm.sections[i].data, slm.sections[i].len);
    parts[i] = (tl_slm_part){slm.sections[i].kind,
                             slm.sections[i].flags & TL_SLM_SECTION_REQUIRED,
                             bufs[i], slm.sections[i].len};
  }
  for (size_t i = 0; i < n; i++) {
    edit(parts[i].kind, &bufs[i], &parts[i].len, arg);
    parts[i].data = bufs[i];
    if (parts[i].kind == TL_SLM_TENSOR_DIR) dir = bufs[i], dir_len = parts[i].len;
    if (parts[i].kind == TL_SLM_TENSOR_DATA) data = bufs[i];
  }
  /* Entry i: data_off at 32 + 96 i + 48, data_len at + 56, digest + 64. */
  for (size_t i = 0; dir != NULL && data != NULL && i < ts.n; i++) {
    uint8_t *e = dir + 32 + 96 * i;
    tl_blake3_hasher h;
    if (32 + 96 * (i + 1) > dir_len) break;
    tl_blake3_hasher_init(&h);
    tl_blake3_hasher_update(&h, data + tl_load_le64(e + 48), tl_load_le64(e + 56));
    tl_blake3_hasher_finalize(&h, e + 64, 32);
  }
  if (ok) ok = TL_EXPECT_OK(t, tl_slm_write(dst, parts, n, id, err, sizeof err));
  for (size_t i = 0; i < n; i++) free(bufs[i]);
  tl_file_close_view(&v);
  return ok;
}

/* Edits: the metadata as JSON (byte strings become hex text, which no
 * check here reads as bytes), or one tensor's bytes. */
typedef struct meta_edit {
  void (*fn)(json_t *meta);
} meta_edit;

static void edit_metadata(tl_slm_kind kind, uint8_t **data, size_t *len,
                          const void *arg) {
  json_t *meta = NULL;
  char why[128];
  uint8_t *out = NULL;
  size_t out_len = 0;
  if (kind != TL_SLM_METADATA ||
      tl_cbor_to_json(*data, *len, &meta, why, sizeof why) != TL_OK)
    return;
  ((const meta_edit *)arg)->fn(meta);
  if (tl_cbor_encode_alloc(emit_json, meta, &out, &out_len) == TL_OK) {
    free(*data);
    *data = out;
    *len = out_len;
  }
  json_decref(meta);
}

typedef struct tensor_edit {
  const char *tensor;
  size_t byte;    /* within the tensor */
  uint32_t value; /* written little-endian at byte */
  const uint8_t *dir; /* the original directory, to find the tensor */
  tl_slm_tensors *ts;
} tensor_edit;

static void edit_tensor(tl_slm_kind kind, uint8_t **data, size_t *len,
                        const void *arg) {
  const tensor_edit *e = arg;
  tl_slm_tensor x;
  (void)len;
  if (kind != TL_SLM_TENSOR_DATA ||
      tl_slm_tensor_find(e->ts, e->tensor, strlen(e->tensor), &x) != TL_OK)
    return;
  tl_store_le32(*data + (x.data - e->ts->data) + e->byte, e->value);
}

static bool plant_tensor(tl_test_ctx *t, const char *src, const char *dst,
                         const char *tensor, size_t byte, uint32_t value) {
  tl_file_view v;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_slm_artifact_kind kind;
  char err[256];
  size_t at;
  tensor_edit e = {tensor, byte, value, NULL, &ts};
  bool ok;
  if (!TL_EXPECT_OK(t, tl_file_open_view(src, &v, err, sizeof err))) return false;
  ok = TL_EXPECT_OK(t, tl_slm_view_open(v.data, v.len, false, NULL, &slm, &ts,
                                        &kind, &at, NULL, 0)) &&
       rewrite(t, src, dst, edit_tensor, &e);
  tl_file_close_view(&v);
  return ok;
}

static void tmp_path(fixture *fx, const char *name, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s", fx->dir, name);
}

/* ------------------------------------------------------------------------ */
/* artifact                                                                 */

static void artifact_passes_on_real_artifacts(tl_test_ctx *t) {
  const char *paths[] = {TINY_Q8, TINY_Q4, TINY_F32, QWEN3_TOK};
  for (size_t i = 0; i < 4; i++) {
    json_t *claim;
    if (access(paths[i], R_OK) != 0) {
      tl_test_skip(t, "build/tok/qwen3-tokenizer.slm is not made (make tok-slm)");
      continue;
    }
    claim = plan_claim(t, paths[i], "artifact", NULL);
    TL_EXPECT(t, claim != NULL);
    expect_claim(t, "artifact", NULL, paths[i], claim, NULL, NULL);
    json_decref(claim);
  }
}

/* A changed byte in a copy (digests not recomputed): pack_mismatch, naming
 * the tensor whose recorded BLAKE3 no longer recomputes. */
static void artifact_corrupted_tensor_byte_is_pack_mismatch(tl_test_ctx *t) {
  fixture fx;
  char path[128];
  json_t *claim = plan_claim(t, TINY_Q8, "artifact", NULL);
  tl_file_view v;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_slm_artifact_kind kind;
  tl_slm_tensor x;
  size_t at;
  char err[256];
  uint8_t *copy;
  if (claim == NULL || !fx_open(t, &fx)) return;
  tmp_path(&fx, "corrupt.slm", path, sizeof path);
  if (TL_EXPECT_OK(t, tl_file_open_view(TINY_Q8, &v, err, sizeof err))) {
    copy = malloc(v.len);
    memcpy(copy, v.data, v.len);
    if (TL_EXPECT_OK(t, tl_slm_view_open(v.data, v.len, false, NULL, &slm, &ts,
                                         &kind, &at, NULL, 0)) &&
        TL_EXPECT_OK(t, tl_slm_tensor_find(&ts, "model.norm.weight", 17, &x))) {
      FILE *f = fopen(path, "wb");
      copy[(x.data - v.data) + 5] ^= 0x01;
      TL_EXPECT(t, f != NULL && fwrite(copy, 1, v.len, f) == v.len);
      if (f != NULL) fclose(f);
      expect_claim(t, "artifact", NULL, path, claim, TL_RULE_PACK_MISMATCH,
                   "tensor model.norm.weight: hash_mismatch");
    }
    free(copy);
    tl_file_close_view(&v);
  }
  json_decref(claim);
  fx_close(&fx);
}

/* Non-finite values with every digest recomputed: an f32 element and a
 * q8 block scale, named by tensor and index; a negative q8 scale breaks
 * the pack layout. */
static void artifact_non_finite_and_bad_scales(tl_test_ctx *t) {
  fixture fx;
  char path[128];
  json_t *q8 = plan_claim(t, TINY_Q8, "artifact", NULL);
  if (q8 == NULL || !fx_open(t, &fx)) return;
  tmp_path(&fx, "inf.slm", path, sizeof path);
  /* element 5 of an RMSNorm weight (f32 in every artifact): +Inf */
  if (plant_tensor(t, TINY_F32, path, "model.norm.weight", 4 * 5, 0x7f800000u))
    expect_claim(t, "artifact", NULL, path, q8, TL_RULE_NON_FINITE,
                 "tensor model.norm.weight: element 5 is not finite");
  tmp_path(&fx, "nan-scale.slm", path, sizeof path);
  /* q8 blocks are 36 bytes, the f32 scale first: block 3's scale NaN */
  if (plant_tensor(t, TINY_Q8, path, "model.embed_tokens.weight", 36 * 3,
                   0x7fc00000u))
    expect_claim(t, "artifact", NULL, path, q8, TL_RULE_NON_FINITE,
                 "tensor model.embed_tokens.weight: the scale of block 3 "
                 "(element 96) is not finite");
  tmp_path(&fx, "neg-scale.slm", path, sizeof path);
  /* hidden 32: one block a row; row 2's scale -1.0 */
  if (plant_tensor(t, TINY_Q8, path, "model.embed_tokens.weight", 36 * 2,
                   0xbf800000u))
    expect_claim(t, "artifact", NULL, path, q8, TL_RULE_PACK_MISMATCH,
                 "tensor model.embed_tokens.weight: row 2 breaks");
  json_decref(q8);
  fx_close(&fx);
}

static void add_unknown_field(json_t *meta) {
  json_object_set_new(json_object_get(json_object_get(meta, "config"), "config"),
                      "rope_type", json_string("yarn"));
}
static void add_unresolved_deviation(json_t *meta) {
  json_array_append_new(
      json_object_get(json_object_get(meta, "config"), "deviations"),
      json_pack("{s:s,s:s}", "kind", "eos_disagreement", "field",
                "eos_token_id"));
}
/* What convert records for an embedding checkpoint's EOS disagreement
 * (docs/qwen3-config.md): valid only in an embedding artifact. Planted
 * defects caught (tried once each): config_ok accepting it in any
 * artifact (the chat plant passes), or in none (the embedding one fails). */
static void add_embedding_unused_deviation(json_t *meta) {
  json_array_append_new(
      json_object_get(json_object_get(meta, "config"), "deviations"),
      json_pack("{s:s,s:s}", "kind", "embedding_unused", "field", "eos_token_id"));
}
static void make_embedding_with_unused_eos(json_t *meta) {
  json_object_set_new(meta, "embedding",
                      json_pack("{s:s,s:b,s:i}", "pooling", "last", "normalize", 1,
                                "append_id", 320));
  add_embedding_unused_deviation(meta);
}
static void unconsume_lm_head(json_t *meta) {
  /* Ledger entry 0: the tied lm_head.weight, an alias of the embedding. */
  json_object_set_new(json_array_get(json_object_get(meta, "ledger"), 0), "dest",
                      json_string("lm_head.weight"));
}
static void add_unknown_sampling_default(json_t *meta) {
  json_object_set_new(meta, "generation_defaults",
                      json_pack("{s:b,s:s}", "do_sample", 1, "typical_p", "0.9"));
}

/* What convert refuses to write, planted in the metadata of a copy. */
static void artifact_metadata_faults(tl_test_ctx *t) {
  static const struct {
    meta_edit edit;
    const char *rule, *divergence;
  } plants[] = {
      {{add_unknown_field}, TL_RULE_UNKNOWN_FIELD,
       "metadata.config.config.rope_type: not in the known schema"},
      {{add_unknown_sampling_default}, TL_RULE_UNKNOWN_FIELD,
       "metadata.generation_defaults.typical_p"},
      {{add_unresolved_deviation}, TL_RULE_SOURCE_CONFLICT,
       "metadata.config.deviations[0]: eos_token_id"},
      {{add_embedding_unused_deviation}, TL_RULE_SOURCE_CONFLICT,
       "metadata.config.deviations[0]: eos_token_id"},
      {{make_embedding_with_unused_eos}, NULL, NULL},
      {{unconsume_lm_head}, TL_RULE_UNCONSUMED_TENSOR,
       "source tensor lm_head.weight: its dest lm_head.weight is not a stored "
       "tensor"},
  };
  fixture fx;
  char path[128];
  json_t *claim = plan_claim(t, TINY_Q8, "artifact", NULL);
  if (claim == NULL || !fx_open(t, &fx)) return;
  for (size_t i = 0; i < sizeof plants / sizeof *plants; i++) {
    char name[32];
    snprintf(name, sizeof name, "meta%zu.slm", i);
    tmp_path(&fx, name, path, sizeof path);
    if (rewrite(t, TINY_Q8, path, edit_metadata, &plants[i].edit))
      expect_claim(t, "artifact", NULL, path, claim, plants[i].rule,
                   plants[i].divergence);
  }
  json_decref(claim);
  fx_close(&fx);
}

/* ------------------------------------------------------------------------ */
/* tokenizer and template                                                   */

/* The tiny artifacts share the real chat template but not the tokenizer:
 * plan init registers neither golden set for them. */
static void goldens_only_for_their_own_tokenizer(tl_test_ctx *t) {
  json_t *tok = plan_claim(t, TINY_Q8, "tokenizer", NULL);
  json_t *tmpl = plan_claim(t, TINY_Q8, "template", NULL);
  TL_EXPECT(t, tok == NULL);
  TL_EXPECT(t, tmpl == NULL);
  json_decref(tok);
  json_decref(tmpl);
}

static void tokenizer_goldens_pass_and_a_changed_id_fails(tl_test_ctx *t) {
  json_t *claim, *body;
  size_t i = 0;
  if (access(QWEN3_TOK, R_OK) != 0) {
    tl_test_skip(t, "build/tok/qwen3-tokenizer.slm is not made (make tok-slm)");
    return;
  }
  claim = plan_claim(t, QWEN3_TOK, "tokenizer", NULL);
  if (!TL_EXPECT(t, claim != NULL)) return;
  TL_EXPECT_EQ_U64(t, json_array_size(json_object_get(claim, "cases")), 814);
  expect_claim(t, "tokenizer", NULL, QWEN3_TOK, claim, NULL, NULL);
  /* The first case with at least three ids: its id 2 plus one. */
  while (json_array_size(json_object_get(
             json_object_get(json_array_get(json_object_get(claim, "cases"), i),
                             "case"),
             "ids")) < 3)
    i++;
  body = json_deep_copy(json_object_get(
      json_array_get(json_object_get(claim, "cases"), i), "case"));
  {
    json_t *ids = json_object_get(body, "ids");
    char want[256];
    json_array_set_new(ids, 2,
                       json_integer(json_integer_value(json_array_get(ids, 2)) + 1));
    snprintf(want, sizeof want, "tokenizer case %s: ids differ at token 2",
             case_name(claim, i));
    replace_case(claim, i, body);
    expect_claim(t, "tokenizer", NULL, QWEN3_TOK, claim,
                 TL_RULE_MECHANICAL, want);
  }
  json_decref(claim);
}

static void template_goldens_pass_and_a_changed_byte_fails(tl_test_ctx *t) {
  json_t *claim, *body;
  size_t i = 0;
  char want[256], *hex;
  if (access(QWEN3_TOK, R_OK) != 0) {
    tl_test_skip(t, "build/tok/qwen3-tokenizer.slm is not made (make tok-slm)");
    return;
  }
  claim = plan_claim(t, QWEN3_TOK, "template", NULL);
  if (!TL_EXPECT(t, claim != NULL)) return;
  /* Every golden but those rendered through a template prefix. */
  TL_EXPECT_EQ_U64(t, json_array_size(json_object_get(claim, "cases")), 137);
  expect_claim(t, "template", NULL, QWEN3_TOK, claim, NULL, NULL);
  while (json_object_get(json_object_get(json_array_get(json_object_get(claim, "cases"), i),
                                         "case"),
                         "text_hex") == NULL)
    i++;
  body = json_deep_copy(json_object_get(
      json_array_get(json_object_get(claim, "cases"), i), "case"));
  hex = strdup(json_string_value(json_object_get(body, "text_hex")));
  hex[2 * 4] = hex[2 * 4] == '0' ? '1' : '0'; /* byte 4 */
  json_object_set_new(body, "text_hex", json_string(hex));
  free(hex);
  snprintf(want, sizeof want, "template case %s: text differs at byte 4",
           case_name(claim, i));
  replace_case(claim, i, body);
  expect_claim(t, "template", NULL, QWEN3_TOK, claim, TL_RULE_MECHANICAL,
               want);
  json_decref(claim);
}

/* ------------------------------------------------------------------------ */
/* eos                                                                      */

static bool open_session(tl_test_ctx *t, const char *path, tl_session *s) {
  char err[512];
  if (!TL_EXPECT_OK(t, tl_session_open(s, path, err, sizeof err))) return false;
  if (TL_EXPECT_OK(t, tl_session_plan(s, 16, 0, err, sizeof err)) &&
      TL_EXPECT_OK(t, tl_session_allocate(s, 0, err, sizeof err)))
    return true;
  tl_session_close(s);
  return false;
}

static void eos_honoured_and_a_wrong_set_fails(tl_test_ctx *t) {
  tl_session s;
  json_t *claim = plan_claim(t, TINY_Q8, "eos", NULL), *body;
  if (!TL_EXPECT(t, claim != NULL) || !open_session(t, TINY_Q8, &s)) {
    json_decref(claim);
    return;
  }
  /* The converter's record: the fixture tokenizer's <|im_end|> (322). */
  body = json_object_get(json_array_get(json_object_get(claim, "cases"), 0), "case");
  TL_EXPECT_EQ_I64(t, json_integer_value(json_array_get(json_object_get(body, "eos"), 0)),
                   322);
  TL_EXPECT_EQ_I64(t, json_integer_value(json_object_get(body, "end_of_turn")), 322);
  expect_claim(t, "eos", &s, TINY_Q8, claim, NULL, NULL);
  TL_EXPECT_EQ_U64(t, s.cache.len, 0); /* the forced turns leave it empty */
  /* A plan that says the runtime must also stop on 320 (<|endoftext|>). */
  body = json_pack("{s:[i,i],s:i}", "eos", 322, 320, "end_of_turn", 322);
  replace_case(claim, 0, body);
  expect_claim(t, "eos", &s, TINY_Q8, claim, TL_RULE_MECHANICAL,
               "eos: the runtime's EOS set has 1 ids");
  /* And one whose turn terminator is another token. */
  body = json_pack("{s:[i],s:i}", "eos", 322, "end_of_turn", 320);
  replace_case(claim, 0, body);
  expect_claim(t, "eos", &s, TINY_Q8, claim, TL_RULE_MECHANICAL,
               "eos: the template ends a turn with id 322, the plan registered 320");
  tl_session_close(&s);
  json_decref(claim);
}

/* ------------------------------------------------------------------------ */
/* sampler                                                                  */

static void sampler_known_answers(tl_test_ctx *t) {
  json_t *claim = plan_claim(t, TINY_Q8, "sampler", NULL), *body;
  if (!TL_EXPECT(t, claim != NULL)) return;
  TL_EXPECT_EQ_U64(t, json_array_size(json_object_get(claim, "cases")),
                   TL_SAMPLER_VECTOR_COUNT);
  expect_claim(t, "sampler", NULL, NULL, claim, NULL, NULL);
  /* A vector this build does not have. */
  body = json_pack("{s:s,s:s}", "vector", "no_such_vector", "sha256",
                   "0000000000000000000000000000000000000000000000000000000000000000");
  replace_case(claim, 1, body);
  expect_claim(t, "sampler", NULL, NULL, claim, TL_RULE_MISSING_OUTPUT,
               "sampler case no_such_vector: this build has no such known answer");
  json_decref(claim);
  /* Another content hash than the plan registered. */
  claim = plan_claim(t, TINY_Q8, "sampler", NULL);
  body = json_pack("{s:s,s:s}", "vector", tl_sampler_vectors[2].name, "sha256",
                   "0000000000000000000000000000000000000000000000000000000000000000");
  replace_case(claim, 2, body);
  expect_claim(t, "sampler", NULL, NULL, claim, TL_RULE_MECHANICAL,
               "the plan registered 0000");
  json_decref(claim);
}

/* An oracle that breaks the tie of greedy_tie_lowest_id by the higher id
 * (logits 3.0 at ids 1, 3 and 5): the runtime's draw differs on a tie. */
static void sampler_reversed_tie_is_unstable_tie(tl_test_ctx *t) {
  static const uint32_t highest[] = {5u};
  tl_sampler_vector table[TL_SAMPLER_VECTOR_COUNT];
  json_t *cases = json_array(), *claim;
  size_t k;
  memcpy(table, tl_sampler_vectors, sizeof table);
  for (k = 0; k < TL_SAMPLER_VECTOR_COUNT; k++)
    if (strcmp(table[k].name, "greedy_tie_lowest_id") == 0) break;
  if (!TL_EXPECT(t, k < TL_SAMPLER_VECTOR_COUNT && table[k].id == 1)) {
    json_decref(cases);
    return;
  }
  table[k].id = 5;
  table[k].survivors = highest;
  for (size_t i = 0; i < TL_SAMPLER_VECTOR_COUNT; i++) {
    uint8_t h[32];
    char hex[65];
    TL_EXPECT_OK(t, tl_sampler_vector_sha256(&table[i], h));
    tl_hex_encode(h, 32, hex);
    json_array_append_new(cases, tl_plan_case(json_pack(
                                     "{s:s,s:s}", "vector", table[i].name,
                                     "sha256", hex)));
  }
  claim = json_pack("{s:s,s:s,s:o}", "name", "sampler", "kind", "sampler",
                    "cases", cases);
  {
    fixture fx;
    tl_claim_result r, seen = {0};
    char err[256];
    tl_claim_ctx c = {.claim = claim, .err = err, .err_cap = sizeof err};
    if (fx_open(t, &fx)) {
      c.store = fx.store;
      /* OBSERVE with this table, JUDGE as promote does */
      if (TL_EXPECT_OK(t, tl_claim_sampler_table(&c, &seen, table, TL_SAMPLER_VECTOR_COUNT)) &&
          TL_EXPECT_OK(t, tl_judge_sampler(&c, seen.observation, &r))) {
        TL_EXPECT(t, !r.pass);
        TL_EXPECT_STR(t, r.stop_rule, TL_RULE_SAMPLER_TIE);
        TL_EXPECT(t, strstr(r.first_divergence,
                            "sampler case greedy_tie_lowest_id: drew id 1") != NULL);
        TL_EXPECT(t, !r.cases[k].pass);
        for (size_t i = 0; i < r.n_cases; i++)
          if (i != k) TL_EXPECT(t, r.cases[i].pass);
        check_observation(t, &fx, &r);
        tl_claim_result_free(&r);
      }
      tl_claim_result_free(&seen);
      fx_close(&fx);
    }
  }
  json_decref(claim);
}

/* ------------------------------------------------------------------------ */
/* independent_reader                                                       */

/* tools/slm_inspect.py's --json output for path into file (false, with a
 * skip, where the reader cannot run here). */
static bool reader_output(tl_test_ctx *t, const char *path, const char *file) {
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 tools/slm_inspect.py --json '%s' > '%s' 2>/dev/null",
           path, file);
  if (system(cmd) != 0) {
    tl_test_skip(t, "tools/slm_inspect.py does not run here (python3-cbor2?)");
    return false;
  }
  return true;
}

static void independent_reader_agrees_and_a_changed_field_fails(tl_test_ctx *t) {
  fixture fx;
  char out[128];
  json_t *claim, *body, *output;
  if (!fx_open(t, &fx)) return;
  tmp_path(&fx, "reader.json", out, sizeof out);
  if (!reader_output(t, TINY_Q4, out)) {
    fx_close(&fx);
    return;
  }
  claim = plan_claim(t, TINY_Q4, "independent_reader", out);
  if (TL_EXPECT(t, claim != NULL)) {
    expect_claim(t, "independent_reader", NULL, TINY_Q4, claim, NULL, NULL);
    /* One field changed: tensor 3's digest. */
    body = json_deep_copy(json_object_get(
        json_array_get(json_object_get(claim, "cases"), 0), "case"));
    output = json_object_get(body, "output");
    json_object_set_new(
        json_array_get(json_object_get(output, "tensors"), 3), "blake3",
        json_string("00000000000000000000000000000000000000000000000000000000"
                    "00000000"));
    replace_case(claim, 0, body);
    expect_claim(t, "independent_reader", NULL, TINY_Q4, claim,
                 TL_RULE_READER,
                 "tools/slm_inspect.py and tinylm differ first at "
                 "$.tensors[3].blake3");
    /* The reader's view of another artifact. */
    json_decref(claim);
    claim = plan_claim(t, TINY_Q4, "independent_reader", out);
    expect_claim(t, "independent_reader", NULL, TINY_Q8, claim,
                 TL_RULE_READER, "differ first at $.artifact_id");
  }
  json_decref(claim);
  fx_close(&fx);
}

/* What plan init writes is a plan the strict reader takes: every claim of
 * the schema, every case id recomputing, no floating-point number. */
static void plan_init_claims_read_back(tl_test_ctx *t) {
  const char *paths[] = {TINY_Q8, QWEN3_TOK};
  for (size_t k = 0; k < 2; k++) {
    tl_native_model m;
    tl_plan p;
    char err[512], *text;
    json_t *claims = json_array(), *plan;
    if (access(paths[k], R_OK) != 0) {
      tl_test_skip(t, "build/tok/qwen3-tokenizer.slm is not made (make tok-slm)");
      json_decref(claims);
      continue;
    }
    if (!TL_EXPECT_OK(t, tl_native_model_open(paths[k], &m, err, sizeof err))) {
      json_decref(claims);
      continue;
    }
    TL_EXPECT_OK(t, tl_plan_mechanical_claims(&m, ".", NULL, claims, err, sizeof err));
    /* artifact and sampler always; eos for a model artifact only; the
     * golden sets for the real tokenizer only. */
    TL_EXPECT_EQ_U64(t, json_array_size(claims), k == 0 ? 3 : 4);
    tl_native_model_close(&m);
    plan = json_pack("{s:s,s:{s:s,s:s,s:n},s:s,s:o}", "format", TL_PLAN_FORMAT,
                     "artifact", "id",
                     "0000000000000000000000000000000000000000000000000000000000000000",
                     "path", paths[k], "acquisition_receipt", "lane", "scalar",
                     "claims", claims);
    text = json_dumps(plan, JSON_COMPACT);
    if (TL_EXPECT(t, text != NULL)) {
      TL_EXPECT_OK(t, tl_plan_parse((const uint8_t *)text, strlen(text), &p, err,
                                    sizeof err));
      tl_plan_free(&p);
    }
    free(text);
    json_decref(plan);
  }
}

static const tl_test_case cases[] = {
    TL_CASE(plan_init_claims_read_back),
    TL_CASE(artifact_passes_on_real_artifacts),
    TL_CASE(artifact_corrupted_tensor_byte_is_pack_mismatch),
    TL_CASE(artifact_non_finite_and_bad_scales),
    TL_CASE(artifact_metadata_faults),
    TL_CASE(goldens_only_for_their_own_tokenizer),
    TL_CASE(tokenizer_goldens_pass_and_a_changed_id_fails),
    TL_CASE(template_goldens_pass_and_a_changed_byte_fails),
    TL_CASE(eos_honoured_and_a_wrong_set_fails),
    TL_CASE(sampler_known_answers),
    TL_CASE(sampler_reversed_tie_is_unstable_tie),
    TL_CASE(independent_reader_agrees_and_a_changed_field_fails),
};
TL_SUITE(promote_mechanical, cases);
