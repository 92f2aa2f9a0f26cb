/* Also built into the wasm32 API modules (docs/web.md, Modules): use only
 * the C library web/wasm/hosted provides (no jansson, files or threads). */
#include "receipt.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cbor/cbor.h"
#include "cbor_alloc.h"
#include "hash/sha256.h"
#include "json/json.h"
#include "receipt/node.h"

#define N_NODES 7

/* ------------------------------------------------------------------------ */
/* The format: what the writer puts and the check accepts, nothing else.   */

typedef enum field_kind {
  K_UINT,
  K_BOOL,
  K_TEXT, /* without U+0000 */
  K_TEXT_OR_NULL,
  K_DIGEST, /* 32 bytes */
  K_DIGEST_OR_NULL,
  K_BYTES,
  K_UINTS,      /* array of uints */
  K_BYTES_LIST, /* array of byte strings */
  K_TEXTS,      /* array of text (each without U+0000) */
  K_DIGESTS,    /* array of 32-byte strings */
  K_MAP,        /* sub: its fields */
  K_MAPS        /* array of maps, sub: their fields */
} field_kind;

typedef struct schema schema;
typedef struct field {
  const char *key;
  field_kind k;
  bool optional;
  const schema *sub;
} field;
struct schema {
  const field *f;
  size_t n;
};

/* The most fields a schema has (check_map keeps a flag per field). */
#define MAX_FIELDS 20

#define SCHEMA(name, ...)                                            \
  static const field name##_fields[] = {__VA_ARGS__};                \
  _Static_assert(sizeof name##_fields / sizeof(field) <= MAX_FIELDS, \
                 #name " has more than MAX_FIELDS fields");          \
  static const schema name = {name##_fields,                         \
                              sizeof name##_fields / sizeof(field)}

SCHEMA(artifact_meta, {"artifact_id", K_DIGEST, false, NULL});
SCHEMA(runtime_meta, {"name", K_TEXT, false, NULL},
       {"version", K_TEXT, false, NULL}, {"backend", K_TEXT, false, NULL},
       {"build_id", K_TEXT, false, NULL},
       {"numerical_profile", K_TEXT, false, NULL});
SCHEMA(section_meta, {"section_blake3", K_DIGEST_OR_NULL, false, NULL});
SCHEMA(prompt_meta, {"ids", K_UINTS, false, NULL},
       {"mode", K_TEXT, false, NULL}, {"position", K_UINT, false, NULL},
       {"bytes_sha256", K_DIGEST, false, NULL},
       {"add_generation_prompt", K_BOOL, false, NULL});
/* tl_sampler_profile_cbor; float parameters are their IEEE bits. */
SCHEMA(profile_meta, {"version", K_TEXT, false, NULL},
       {"temperature", K_UINT, false, NULL}, {"top_k", K_UINT, false, NULL},
       {"top_p", K_UINT, false, NULL}, {"min_p", K_UINT, false, NULL},
       {"repeat_penalty", K_UINT, false, NULL},
       {"repeat_window", K_UINT, false, NULL}, {"min_new", K_UINT, false, NULL},
       {"eos", K_UINTS, false, NULL}, {"ban", K_UINTS, false, NULL},
       {"defined_ids", K_UINT, false, NULL}, {"prng", K_TEXT, false, NULL},
       {"order", K_TEXT, false, NULL}, {"deviation", K_TEXT, false, NULL},
       /* Only when on (a receipt from before them has none). */
       {"frequency_penalty", K_UINT, true, NULL}, {"presence_penalty", K_UINT, true, NULL},
       {"bias_ids", K_UINTS, true, NULL}, {"bias", K_UINTS, true, NULL});
/* grammar and think_budget: a constrained generation only (docs/structured.md),
 * so a receipt without a grammar is what it was before them. */
SCHEMA(sampler_meta, {"seed", K_UINT, false, NULL},
       {"turn", K_UINT, false, NULL}, {"profile", K_MAP, false, &profile_meta},
       {"grammar", K_DIGEST, true, NULL}, {"think_budget", K_UINT, true, NULL});
SCHEMA(generation_meta, {"ids", K_UINTS, false, NULL},
       {"raw", K_BYTES, false, NULL}, {"stop", K_TEXT, false, NULL},
       {"error", K_TEXT_OR_NULL, false, NULL},
       {"max_new_tokens", K_UINT, false, NULL},
       {"stop_strings", K_BYTES_LIST, false, NULL});
SCHEMA(timings, {"prefill", K_UINT, false, NULL},
       {"decode", K_UINT, false, NULL}, {"prefill_tokens", K_UINT, false, NULL},
       {"decode_tokens", K_UINT, false, NULL});
/* Outside the identity like the timings (F-10); optional at the top level:
 * receipts written before it have none. */
SCHEMA(execution, {"isa", K_TEXT, false, NULL},
       {"threads", K_UINT, false, NULL}, {"verify", K_TEXT, true, NULL});
/* src/tools/convert.c: emit_receipt. */
SCHEMA(convert_converter, {"name", K_TEXT, false, NULL},
       {"version", K_TEXT, false, NULL}, {"build_id", K_TEXT, true, NULL});
SCHEMA(convert_options, {"quant", K_TEXT, false, NULL},
       {"tokenizer_only", K_BOOL, false, NULL});
SCHEMA(convert_source, {"name", K_TEXT, false, NULL},
       {"size", K_UINT, false, NULL}, {"sha256", K_DIGEST, false, NULL});
SCHEMA(convert_receipt, {"receipt", K_TEXT, false, NULL},
       {"artifact_id", K_DIGEST, false, NULL},
       {"artifact_bytes", K_UINT, false, NULL},
       {"converter", K_MAP, false, &convert_converter},
       {"options", K_MAP, false, &convert_options},
       {"sources", K_MAPS, false, &convert_source},
       {"config_sha256", K_DIGEST, true, NULL},
       {"tokenizer_section_sha256", K_DIGEST, false, NULL},
       {"template_ir_sha256", K_DIGEST, false, NULL},
       {"template_source_sha256", K_DIGEST, false, NULL});

/* The browser loader's capability receipt (web/tinylm.js,
 * tinylm.capability-receipt/1; docs/web.md): one node, all of it in the
 * identity. */
SCHEMA(capability_runtime, {"loader", K_TEXT, false, NULL},
       {"abi", K_UINT, false, NULL}, {"version", K_TEXT, false, NULL},
       {"build_id", K_TEXT, false, NULL});
SCHEMA(capability_features, {"simd128", K_BOOL, false, NULL},
       {"bulk_memory", K_BOOL, false, NULL}, {"atomics", K_BOOL, false, NULL},
       {"shared_array_buffer", K_BOOL, false, NULL},
       {"cross_origin_isolated", K_BOOL, false, NULL});
SCHEMA(capability_module, {"lane", K_TEXT, false, NULL},
       {"file", K_TEXT, false, NULL}, {"sha256", K_DIGEST, false, NULL},
       {"size", K_UINT, false, NULL});
SCHEMA(capability_refusal, {"lane", K_TEXT, false, NULL},
       {"code", K_TEXT, false, NULL}, {"why", K_TEXT, false, NULL});
SCHEMA(capability_self_test, {"lane", K_TEXT, false, NULL},
       {"name", K_TEXT, false, NULL}, {"ok", K_BOOL, false, NULL},
       {"status", K_TEXT, false, NULL});
/* The WebGPU lane's adapter, as the loader found it (docs/web.md): present
 * when the loader tried that lane and got an adapter. */
SCHEMA(capability_webgpu_adapter, {"vendor", K_TEXT, false, NULL},
       {"architecture", K_TEXT, false, NULL}, {"device", K_TEXT, false, NULL},
       {"description", K_TEXT, false, NULL}, {"is_fallback", K_BOOL, false, NULL},
       {"feature_level", K_TEXT, false, NULL});
SCHEMA(capability_webgpu_limit, {"name", K_TEXT, false, NULL}, {"value", K_UINT, false, NULL});
SCHEMA(capability_webgpu_message, {"module", K_TEXT, false, NULL},
       {"type", K_TEXT, false, NULL}, {"line", K_UINT, false, NULL},
       {"column", K_UINT, false, NULL}, {"message", K_TEXT, false, NULL});
SCHEMA(capability_webgpu_probe, {"name", K_TEXT, false, NULL},
       {"outcome", K_TEXT, false, NULL});
SCHEMA(capability_webgpu, {"adapter", K_MAP, false, &capability_webgpu_adapter},
       {"features", K_TEXTS, false, NULL},
       {"limits", K_MAPS, false, &capability_webgpu_limit},
       {"wgsl_sha256", K_DIGEST, false, NULL},
       {"compilation", K_MAPS, false, &capability_webgpu_message},
       {"probes", K_MAPS, false, &capability_webgpu_probe});
SCHEMA(capability_meta, {"runtime", K_MAP, false, &capability_runtime},
       {"user_agent", K_TEXT, false, NULL},
       {"hardware_concurrency", K_UINT, false, NULL},
       {"features", K_MAP, false, &capability_features},
       {"requested", K_TEXT_OR_NULL, false, NULL},
       {"lane", K_TEXT, false, NULL}, {"lane_reason", K_TEXT, false, NULL},
       {"refused", K_MAPS, false, &capability_refusal},
       {"modules", K_MAPS, false, &capability_module},
       {"self_tests", K_MAPS, false, &capability_self_test},
       {"kernels", K_TEXT, false, NULL}, {"numerics", K_TEXT, false, NULL},
       {"threads_requested", K_UINT, false, NULL},
       {"threads", K_UINT, false, NULL},
       {"artifact_id", K_DIGEST, false, NULL},
       {"webgpu", K_MAP, true, &capability_webgpu});

/* tinylm pull's acquisition receipt (src/native/acquire.c:
 * write_pull_receipt; docs/acquisition.md). Digests there are hex text. */
SCHEMA(acq_builder, {"name", K_TEXT, false, NULL},
       {"version", K_TEXT, false, NULL}, {"build_id", K_TEXT, false, NULL});
SCHEMA(acq_source, {"endpoint", K_TEXT, false, NULL},
       {"repo_id", K_TEXT, false, NULL},
       {"requested_revision", K_TEXT, false, NULL},
       {"resolved_commit", K_TEXT, false, NULL});
SCHEMA(acq_file, {"path", K_TEXT, false, NULL}, {"size", K_UINT, false, NULL},
       {"sha256", K_TEXT, false, NULL}, {"git_oid", K_TEXT, false, NULL},
       {"lfs_oid", K_TEXT_OR_NULL, false, NULL});
SCHEMA(acq_files, {"files", K_MAPS, false, &acq_file});
SCHEMA(acq_limits, {"max_files", K_UINT, false, NULL},
       {"max_file_bytes", K_UINT, false, NULL},
       {"max_total_bytes", K_UINT, false, NULL},
       {"max_depth", K_UINT, false, NULL});
SCHEMA(acq_license, {"id", K_TEXT_OR_NULL, false, NULL},
       {"source", K_TEXT_OR_NULL, false, NULL},
       {"decision", K_TEXT, false, NULL},
       {"license_file_sha256", K_TEXT_OR_NULL, false, NULL},
       {"readme_sha256", K_TEXT_OR_NULL, false, NULL});
SCHEMA(acq_policy, {"allowlist", K_TEXT, false, NULL},
       {"profile", K_TEXT_OR_NULL, false, NULL},
       {"limits", K_MAP, false, &acq_limits},
       {"license", K_MAP, false, &acq_license});
SCHEMA(acq_drift, {"re_resolved_commit", K_TEXT, false, NULL},
       {"moved", K_BOOL, false, NULL});
SCHEMA(acq_invocation, {"command", K_TEXT, false, NULL},
       {"repo_id", K_TEXT, false, NULL}, {"revision", K_TEXT, false, NULL},
       {"endpoint", K_TEXT, false, NULL},
       {"accept_missing_license", K_BOOL, false, NULL});
SCHEMA(acq_root, {"invocation", K_MAP, false, &acq_invocation});
SCHEMA(acq_timings, {"download", K_UINT, false, NULL},
       {"total", K_UINT, false, NULL}, {"bytes_fetched", K_UINT, false, NULL});
/* tinylm drift's observation receipt (acquire.c: tl_drift). */
SCHEMA(drift_observation, {"endpoint", K_TEXT, false, NULL},
       {"re_resolved_commit", K_TEXT, false, NULL},
       {"moved", K_BOOL, false, NULL}, {"changed", K_TEXTS, false, NULL},
       {"added", K_TEXTS, false, NULL}, {"removed", K_TEXTS, false, NULL},
       {"requested_revision", K_TEXT, false, NULL});
SCHEMA(drift_root, {"acquisition_receipt_id", K_TEXT, false, NULL});
SCHEMA(drift_timings, {"total", K_UINT, false, NULL});

/* tinylm promote's comparison and promotion receipts (promote_receipt.c;
 * docs/promotion.md). Their artifact and runtime nodes are a run
 * receipt's (artifact_meta, runtime_meta): the same facts, the same ids. */
SCHEMA(cmp_plan, {"plan_id", K_DIGEST, false, NULL},
       {"claim", K_TEXT, false, NULL}, {"kind", K_TEXT, false, NULL},
       {"level", K_TEXT, false, NULL}, {"oracle", K_TEXT, false, NULL});
SCHEMA(cmp_policy, {"tolerance", K_TEXT_OR_NULL, false, NULL},
       {"design_sha256", K_DIGEST_OR_NULL, false, NULL});
SCHEMA(cmp_case, {"id", K_DIGEST, false, NULL},
       {"invariant", K_TEXT, false, NULL}, {"pass", K_BOOL, false, NULL},
       {"output", K_DIGEST, false, NULL});
SCHEMA(cmp_evidence, {"cases", K_MAPS, false, &cmp_case},
       {"observations", K_DIGESTS, false, NULL});
SCHEMA(cmp_root, {"verdict", K_TEXT, false, NULL},
       {"stop_rule", K_TEXT_OR_NULL, false, NULL},
       {"first_divergence", K_TEXT_OR_NULL, false, NULL},
       {"summary", K_TEXT, false, NULL}, {"attempt", K_UINT, false, NULL});
SCHEMA(prom_plan, {"plan_id", K_DIGEST, false, NULL},
       {"lane", K_TEXT, false, NULL}, {"claims", K_TEXTS, false, NULL});
SCHEMA(prom_receipt, {"claim", K_TEXT, false, NULL},
       {"receipt_id", K_DIGEST, false, NULL}, {"verdict", K_TEXT, false, NULL},
       {"stop_rule", K_TEXT_OR_NULL, false, NULL});
SCHEMA(prom_comparisons, {"receipts", K_MAPS, false, &prom_receipt});
SCHEMA(prom_stop_rule, {"rule", K_TEXT, false, NULL},
       {"claim", K_TEXT, false, NULL});
SCHEMA(prom_root, {"decision", K_TEXT, false, NULL},
       {"failing", K_TEXTS, false, NULL},
       {"stop_rules", K_MAPS, false, &prom_stop_rule},
       {"run_record", K_DIGEST, false, NULL});

/* tinylm.signature/1 (src/native/promote_sign.c): one node, a key's
 * Ed25519 signature over a promotion's root id. */
SCHEMA(sig_root, {"signed", K_DIGEST, false, NULL},
       {"signed_format", K_TEXT, false, NULL}, {"algorithm", K_TEXT, false, NULL},
       {"public_key", K_DIGEST, false, NULL}, {"signature", K_BYTES, false, NULL});

/* The node types of tinylm.receipt/1, their metadata and their children's
 * types (emit_meta and tl_run_receipt below write them). */
typedef struct node_type {
  const char *name;
  const schema *meta;
  int children[8]; /* indexes into the format's node types */
  size_t n_children;
} node_type;

enum {
  T_ARTIFACT,
  T_RUNTIME,
  T_TOKENIZER,
  T_TEMPLATE,
  T_PROMPT,
  T_SAMPLER,
  T_GENERATION
};
static const node_type node_types[N_NODES] = {
    {"artifact", &artifact_meta, {0}, 0},
    {"runtime", &runtime_meta, {0}, 0},
    {"tokenizer", &section_meta, {0}, 0},
    {"template", &section_meta, {0}, 0},
    {"prompt", &prompt_meta, {T_TOKENIZER, T_TEMPLATE}, 2},
    {"sampler", &sampler_meta, {0}, 0},
    {"generation",
     &generation_meta,
     {T_ARTIFACT, T_RUNTIME, T_PROMPT, T_SAMPLER},
     4}};
static const node_type capability_type = {"capability", &capability_meta, {0}, 0};

/* tinylm.acquisition/1 and tinylm.drift/1, in their writers' order. */
static const node_type acq_types[6] = {
    {"builder", &acq_builder, {0}, 0},
    {"source", &acq_source, {0}, 0},
    {"files", &acq_files, {0}, 0},
    {"policy", &acq_policy, {0}, 0},
    {"drift", &acq_drift, {0}, 0},
    {"acquisition", &acq_root, {0, 1, 2, 3, 4}, 5}};
static const node_type drift_types[4] = {
    {"builder", &acq_builder, {0}, 0},
    {"source", &acq_source, {0}, 0},
    {"observation", &drift_observation, {0}, 0},
    {"drift", &drift_root, {0, 1, 2}, 3}};

/* tinylm.comparison/1 and tinylm.promotion/1, in their writers' order. */
static const node_type cmp_types[6] = {
    {"artifact", &artifact_meta, {0}, 0},
    {"runtime", &runtime_meta, {0}, 0},
    {"plan", &cmp_plan, {0}, 0},
    {"policy", &cmp_policy, {0}, 0},
    {"evidence", &cmp_evidence, {0}, 0},
    {"comparison", &cmp_root, {0, 1, 2, 3, 4}, 5}};
static const node_type prom_types[5] = {
    {"artifact", &artifact_meta, {0}, 0},
    {"runtime", &runtime_meta, {0}, 0},
    {"plan", &prom_plan, {0}, 0},
    {"comparisons", &prom_comparisons, {0}, 0},
    {"promotion", &prom_root, {0, 1, 2, 3}, 4}};

static const node_type sig_types[1] = {{"signature", &sig_root, {0}, 0}};

/* ------------------------------------------------------------------------ */
/* The writer                                                               */

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
  if (tl_slm_find(slm, kind, &s) == TL_OK)
    tl_cbor_put_bytes(w, s->digest, 32);
  else
    tl_cbor_put_null(w);
  tl_cbor_end_map(w);
}

void tl_receipt_put_artifact(tl_cbor_writer *w, const uint8_t artifact_id[32]) {
  tl_cbor_begin_map(w, 1);
  tl_cbor_put_cstr(w, "artifact_id");
  tl_cbor_put_bytes(w, artifact_id, 32);
  tl_cbor_end_map(w);
}

void tl_receipt_put_runtime(tl_cbor_writer *w, const char *backend, const char *build_id,
                            const char *numerical_profile) {
  tl_cbor_begin_map(w, 5);
  tl_cbor_put_cstr(w, "name");
  tl_cbor_put_cstr(w, "tinylm");
  tl_cbor_put_cstr(w, "version");
  tl_cbor_put_cstr(w, TL_VERSION_STRING);
  tl_cbor_put_cstr(w, "backend");
  tl_cbor_put_cstr(w, backend);
  tl_cbor_put_cstr(w, "build_id");
  tl_cbor_put_cstr(w, build_id);
  tl_cbor_put_cstr(w, "numerical_profile");
  tl_cbor_put_cstr(w, numerical_profile);
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
      tl_receipt_put_artifact(w, f->artifact_id);
      break;
    case 1: /* runtime */
      tl_receipt_put_runtime(w, f->backend ? f->backend : "scalar", f->build_id,
                             f->numerical_profile ? f->numerical_profile : "scalar-f32/1");
      break;
    case 2:
      put_section_digest(w, f->slm, TL_SLM_TOKENIZER);
      break;
    case 3:
      put_section_digest(w, f->slm, TL_SLM_TEMPLATE);
      break;
    case 4: /* prompt */
      tl_sha256(f->prompt_bytes, f->prompt_len, digest);
      tl_cbor_begin_map(w, 5);
      tl_cbor_put_cstr(w, "ids");
      put_ids(w, f->prompt_ids, f->n_prompt);
      tl_cbor_put_cstr(w, "mode");
      tl_cbor_put_cstr(w, f->prompt_mode);
      tl_cbor_put_cstr(w, "position");
      tl_cbor_put_uint(w, f->position);
      tl_cbor_put_cstr(w, "bytes_sha256");
      tl_cbor_put_bytes(w, digest, 32);
      tl_cbor_put_cstr(w, "add_generation_prompt");
      tl_cbor_put_bool(w, f->add_generation_prompt);
      tl_cbor_end_map(w);
      break;
    case 5: /* sampler */
      tl_cbor_begin_map(w, f->grammar_digest != NULL ? 5 : 3);
      tl_cbor_put_cstr(w, "seed");
      tl_cbor_put_uint(w, f->seed);
      tl_cbor_put_cstr(w, "turn");
      tl_cbor_put_uint(w, f->turn);
      tl_cbor_put_cstr(w, "profile");
      tl_sampler_profile_cbor(f->profile, w);
      if (f->grammar_digest != NULL) {
        tl_cbor_put_cstr(w, "grammar");
        tl_cbor_put_bytes(w, f->grammar_digest, 32);
        tl_cbor_put_cstr(w, "think_budget");
        tl_cbor_put_uint(w, f->think_budget);
      }
      tl_cbor_end_map(w);
      break;
    default: /* generation */
      tl_cbor_begin_map(w, 6);
      tl_cbor_put_cstr(w, "ids");
      put_ids(w, f->ids, f->n_ids);
      tl_cbor_put_cstr(w, "raw");
      tl_cbor_put_bytes(w, f->raw, f->raw_len);
      tl_cbor_put_cstr(w, "stop");
      tl_cbor_put_cstr(w, f->stop);
      tl_cbor_put_cstr(w, "error");
      if (f->error)
        tl_cbor_put_cstr(w, f->error);
      else
        tl_cbor_put_null(w);
      /* The stopping policy, also when it did not fire. */
      tl_cbor_put_cstr(w, "max_new_tokens");
      tl_cbor_put_uint(w, f->max_new);
      tl_cbor_put_cstr(w, "stop_strings");
      tl_cbor_begin_array(w, f->n_stops);
      for (size_t i = 0; i < f->n_stops; i++)
        tl_cbor_put_bytes(w, f->stops[i], f->stop_lens[i]);
      tl_cbor_end_array(w);
      tl_cbor_end_map(w);
  }
}

/* Seals nodes[0..n) in order: each id from its type, metadata and its
 * children's ids (children come first). */
static tl_status seal_nodes(tl_graph_node *nodes, size_t n) {
  tl_status st = n == 0 ? TL_ERR_INVALID_ARGUMENT : TL_OK;
  for (size_t i = 0; i < n && st == TL_OK; i++) {
    uint8_t kids[8 * 32];
    if (nodes[i].n_kids > 8) return TL_ERR_INVALID_ARGUMENT;
    for (size_t k = 0; k < nodes[i].n_kids; k++) {
      if (nodes[i].kids[k] >= i) return TL_ERR_INVALID_ARGUMENT; /* children first */
      memcpy(kids + 32 * k, nodes[nodes[i].kids[k]].id, 32);
    }
    st = tl_node_id(nodes[i].type, nodes[i].meta, nodes[i].meta_len, kids, nodes[i].n_kids,
                    nodes[i].id);
  }
  return st;
}

/* "root" and "nodes" of a graph document: the last node is the root. */
static void put_root_and_nodes(tl_cbor_writer *w, const tl_graph_node *nodes, size_t n) {
  tl_cbor_put_cstr(w, "root");
  tl_cbor_put_bytes(w, nodes[n - 1].id, 32);
  tl_cbor_put_cstr(w, "nodes");
  tl_cbor_begin_array(w, n);
  for (size_t i = 0; i < n; i++) {
    const tl_graph_node *g = &nodes[i];
    tl_cbor_begin_map(w, 4);
    tl_cbor_put_cstr(w, "id");
    tl_cbor_put_bytes(w, g->id, 32);
    tl_cbor_put_cstr(w, "type");
    tl_cbor_put_cstr(w, g->type);
    tl_cbor_put_cstr(w, "children");
    tl_cbor_begin_array(w, g->n_kids);
    for (size_t k = 0; k < g->n_kids; k++) tl_cbor_put_bytes(w, nodes[g->kids[k]].id, 32);
    tl_cbor_end_array(w);
    tl_cbor_put_cstr(w, "metadata");
    tl_cbor_put_item(w, g->meta, g->meta_len);
    tl_cbor_end_map(w);
  }
  tl_cbor_end_array(w);
}

typedef struct file_arg {
  const tl_run_facts *f;
  const tl_graph_node *nodes;
} file_arg;

static void emit_file(tl_cbor_writer *w, const void *arg) {
  const file_arg *a = arg;
  tl_cbor_begin_map(w, a->f->isa != NULL ? 5 : 4);
  put_root_and_nodes(w, a->nodes, N_NODES);
  tl_cbor_put_cstr(w, "format");
  tl_cbor_put_cstr(w, "tinylm.receipt/1");
  if (a->f->isa != NULL) {
    tl_cbor_put_cstr(w, "execution");
    tl_cbor_begin_map(w, a->f->verify != NULL ? 3 : 2);
    tl_cbor_put_cstr(w, "isa");
    tl_cbor_put_cstr(w, a->f->isa);
    if (a->f->verify != NULL) { /* deterministic order: shorter keys first */
      tl_cbor_put_cstr(w, "verify");
      tl_cbor_put_cstr(w, a->f->verify);
    }
    tl_cbor_put_cstr(w, "threads");
    tl_cbor_put_uint(w, a->f->threads);
    tl_cbor_end_map(w);
  }
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
  /* In node_types order, which is post-order: children before parents. */
  tl_graph_node nodes[N_NODES];
  tl_status st = TL_OK;
  memset(nodes, 0, sizeof nodes);
  for (int i = 0; i < N_NODES && st == TL_OK; i++) {
    const node_type *t = &node_types[i];
    emit_arg a = {f, i};
    uint8_t *meta = NULL;
    st = tl_cbor_encode_alloc(emit_meta, &a, &meta, &nodes[i].meta_len);
    nodes[i].meta = meta;
    nodes[i].type = t->name;
    nodes[i].n_kids = t->n_children;
    for (size_t c = 0; c < t->n_children; c++) nodes[i].kids[c] = (size_t)t->children[c];
  }
  if (st == TL_OK) st = seal_nodes(nodes, N_NODES);
  if (st == TL_OK) {
    file_arg fa = {f, nodes};
    st = tl_cbor_encode_alloc(emit_file, &fa, doc, len);
    memcpy(root, nodes[N_NODES - 1].id, 32);
  }
  for (int i = 0; i < N_NODES; i++) free((void *)nodes[i].meta);
  return st;
}

typedef struct graph_doc {
  const char *format;
  const tl_graph_node *nodes;
  size_t n;
  const uint8_t *timings; /* NULL: none */
  size_t timings_len;
} graph_doc;

static void emit_graph_doc(tl_cbor_writer *w, const void *arg) {
  const graph_doc *g = arg;
  tl_cbor_begin_map(w, g->timings != NULL ? 4 : 3);
  put_root_and_nodes(w, g->nodes, g->n);
  tl_cbor_put_cstr(w, "format");
  tl_cbor_put_cstr(w, g->format);
  if (g->timings != NULL) {
    tl_cbor_put_cstr(w, "timings_us");
    tl_cbor_put_item(w, g->timings, g->timings_len);
  }
  tl_cbor_end_map(w);
}

tl_status tl_graph_receipt_encode(const char *format, tl_graph_node *nodes, size_t n,
                                  const uint8_t *timings_us, size_t timings_len,
                                  uint8_t **doc, size_t *len, uint8_t root[32]) {
  tl_status st = seal_nodes(nodes, n);
  *doc = NULL;
  *len = 0;
  if (st == TL_OK) {
    graph_doc g = {format, nodes, n, timings_us, timings_len};
    st = tl_cbor_encode_alloc(emit_graph_doc, &g, doc, len);
    memcpy(root, nodes[n - 1].id, 32);
  }
  return st;
}

/* ------------------------------------------------------------------------ */
/* The check: the verifier rejects every byte it does not hash. Each node's
 * fields are exactly id, type, children and metadata; node metadata, the
 * file's top level, the timings and converter receipts follow the schemas
 * above (no unknown, missing or mistyped field; text never holds U+0000);
 * and the nodes are exactly the graph under the root, each once, in the
 * writer's order (post-order). */

#define MAX_NODES 64

typedef struct seen_node {
  const uint8_t *id;
  int type;
  const uint8_t *children[8];
  size_t n_children;
  const uint8_t *meta;
  size_t meta_len;
} seen_node;

typedef struct checker {
  tl_cbor_reader r;
  char *err;
  size_t cap;
} checker;

/* A key or text for a message: printable ASCII kept, the rest \xNN, cut
 * short when long. */
static const char *shown(const char *s, size_t len, char out[64]) {
  size_t o = 0;
  for (size_t i = 0; i < len && o < 56; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out[o++] = (char)c;
    else
      o += (size_t)snprintf(out + o, 64 - o, "\\x%02x", c);
  }
  if (o >= 56) o = (size_t)snprintf(out + 56, 8, "...") + 56;
  out[o] = '\0';
  return out;
}

static tl_status bad(checker *c, const char *path, const char *what) {
  snprintf(c->err, c->cap, "%s: %s", path, what);
  return TL_ERR_INVALID_ARGUMENT;
}

/* The reader's fault (malformed CBOR is found up front by validate, so
 * this is a type the schema did not expect). */
static tl_status mistyped(checker *c, const char *path, const char *want) {
  if (c->r.fault.kind != TL_CBOR_FAULT_TYPE &&
      c->r.fault.kind != TL_CBOR_FAULT_INT_RANGE) {
    snprintf(c->err, c->cap, "%s: %s at byte %zu", path,
             tl_cbor_fault_name(c->r.fault.kind), c->r.fault.offset);
    return TL_ERR_INVALID_CBOR;
  }
  snprintf(c->err, c->cap, "%s: expected %s", path, want);
  return TL_ERR_INVALID_ARGUMENT;
}

static tl_status check_map(checker *c, const schema *s, const char *path);

static tl_status check_text(checker *c, const char *path) {
  const char *t;
  size_t len;
  if (tl_cbor_expect_text(&c->r, &t, &len) != TL_OK)
    return mistyped(c, path, "text");
  if (memchr(t, 0, len) != NULL) return bad(c, path, "text holds U+0000");
  return TL_OK;
}

static tl_status check_value(checker *c, const field *f, const char *path) {
  tl_cbor_item it;
  const uint8_t *b;
  uint64_t u;
  size_t n, len;
  bool flag;
  tl_status st = TL_OK;
  bool nullable = f->k == K_TEXT_OR_NULL || f->k == K_DIGEST_OR_NULL;
  if (nullable && tl_cbor_peek(&c->r, &it) == TL_OK && it.type == TL_CBOR_NULL)
    return tl_cbor_expect_null(&c->r) == TL_OK ? TL_OK
                                               : mistyped(c, path, "null");
  switch (f->k) {
    case K_UINT:
      return tl_cbor_expect_uint(&c->r, &u) == TL_OK
                 ? TL_OK
                 : mistyped(c, path, "an unsigned integer");
    case K_BOOL:
      return tl_cbor_expect_bool(&c->r, &flag) == TL_OK
                 ? TL_OK
                 : mistyped(c, path, "a bool");
    case K_TEXT:
    case K_TEXT_OR_NULL:
      return check_text(c, path);
    case K_DIGEST:
    case K_DIGEST_OR_NULL:
      if (tl_cbor_expect_bytes(&c->r, &b, &len) != TL_OK)
        return mistyped(c, path, "32 bytes");
      return len == 32 ? TL_OK : bad(c, path, "expected 32 bytes");
    case K_BYTES:
      return tl_cbor_expect_bytes(&c->r, &b, &len) == TL_OK
                 ? TL_OK
                 : mistyped(c, path, "bytes");
    case K_UINTS:
    case K_BYTES_LIST:
    case K_TEXTS:
    case K_DIGESTS:
    case K_MAPS:
      if (tl_cbor_expect_array(&c->r, &n) != TL_OK)
        return mistyped(c, path, "an array");
      for (size_t i = 0; i < n && st == TL_OK; i++) {
        char item[288]; /* path (< 256) and an index */
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (f->k == K_UINTS && tl_cbor_expect_uint(&c->r, &u) != TL_OK)
          st = mistyped(c, item, "an unsigned integer");
        else if (f->k == K_BYTES_LIST &&
                 tl_cbor_expect_bytes(&c->r, &b, &len) != TL_OK)
          st = mistyped(c, item, "bytes");
        else if (f->k == K_TEXTS)
          st = check_text(c, item);
        else if (f->k == K_DIGESTS &&
                 (tl_cbor_expect_bytes(&c->r, &b, &len) != TL_OK || len != 32))
          st = c->r.fault.kind == TL_CBOR_FAULT_NONE ? bad(c, item, "expected 32 bytes")
                                                     : mistyped(c, item, "32 bytes");
        else if (f->k == K_MAPS)
          st = check_map(c, f->sub, item);
      }
      return st;
    case K_MAP:
      return check_map(c, f->sub, path);
  }
  return bad(c, path, "unknown field kind");
}

/* One map of schema s: every key known, every value of its type, every
 * field that is not optional present (the reader has already refused
 * equal keys). */
static tl_status check_map(checker *c, const schema *s, const char *path) {
  size_t n_pairs;
  bool seen[MAX_FIELDS] = {false};
  if (tl_cbor_expect_map(&c->r, &n_pairs) != TL_OK)
    return mistyped(c, path, "a map");
  for (size_t i = 0; i < n_pairs; i++) {
    const char *k;
    size_t klen, j;
    char sub[256], key[64];
    tl_status st;
    if (tl_cbor_expect_text(&c->r, &k, &klen) != TL_OK)
      return mistyped(c, path, "text keys");
    for (j = 0; j < s->n && !tl_cbor_text_is(k, klen, s->f[j].key); j++) {
    }
    if (j == s->n) {
      snprintf(sub, sizeof sub, "unknown field '%s'", shown(k, klen, key));
      return bad(c, path, sub);
    }
    seen[j] = true;
    snprintf(sub, sizeof sub, "%s.%s", path, s->f[j].key);
    if ((st = check_value(c, &s->f[j], sub)) != TL_OK) return st;
  }
  for (size_t j = 0; j < s->n; j++) {
    if (!seen[j] && !s->f[j].optional) {
      char what[96];
      snprintf(what, sizeof what, "missing field '%s'", s->f[j].key);
      return bad(c, path, what);
    }
  }
  return TL_OK;
}

/* Checks a whole item (at start, len bytes) against s with a reader of
 * its own. */
static tl_status check_span(checker *c, const uint8_t *start, size_t len,
                            const schema *s, const char *path) {
  checker sub = {.err = c->err, .cap = c->cap};
  tl_status st;
  tl_cbor_reader_init(&sub.r, start, len, NULL);
  st = check_map(&sub, s, path);
  if (st == TL_OK && tl_cbor_reader_finish(&sub.r) != TL_OK)
    st = mistyped(&sub, path, "one item");
  return st;
}

/* Skips one item and hands back its bytes. */
static tl_status span(checker *c, const uint8_t **start, size_t *len) {
  size_t at = c->r.pos;
  if (tl_cbor_skip(&c->r) != TL_OK) return TL_ERR_INVALID_CBOR;
  *start = c->r.buf + at;
  *len = c->r.pos - at;
  return TL_OK;
}

/* Node index of a file whose node types are types[0..n_types). */
static tl_status check_node(checker *c, size_t index, const node_type *types, int n_types,
                            seen_node *out) {
  size_t n_pairs, n_kids = 0;
  const uint8_t *kids_at = NULL;
  size_t kids_len = 0;
  bool has_type = false;
  char path[64];
  uint8_t want[32], kids[8 * 32];
  tl_status st;
  memset(out, 0, sizeof *out);
  snprintf(path, sizeof path, "nodes[%zu]", index);
  if (tl_cbor_expect_map(&c->r, &n_pairs) != TL_OK)
    return mistyped(c, path, "a map");
  for (size_t i = 0; i < n_pairs; i++) {
    const char *k;
    size_t klen, len;
    char key[64], what[96];
    if (tl_cbor_expect_text(&c->r, &k, &klen) != TL_OK)
      return mistyped(c, path, "text keys");
    if (tl_cbor_text_is(k, klen, "id")) {
      if (tl_cbor_expect_bytes(&c->r, &out->id, &len) != TL_OK || len != 32)
        return bad(c, path, "id is not 32 bytes");
    } else if (tl_cbor_text_is(k, klen, "type")) {
      const char *t;
      if (tl_cbor_expect_text(&c->r, &t, &len) != TL_OK)
        return mistyped(c, path, "a text type");
      for (out->type = 0; out->type < n_types &&
                          !tl_cbor_text_is(t, len, types[out->type].name);
           out->type++) {
      }
      if (out->type == n_types) {
        snprintf(what, sizeof what, "unknown node type '%s'",
                 shown(t, len, key));
        return bad(c, path, what);
      }
      has_type = true;
    } else if (tl_cbor_text_is(k, klen, "children")) {
      if ((st = span(c, &kids_at, &kids_len)) != TL_OK) return st;
    } else if (tl_cbor_text_is(k, klen, "metadata")) {
      if ((st = span(c, &out->meta, &out->meta_len)) != TL_OK) return st;
    } else {
      snprintf(what, sizeof what, "unknown field '%s'", shown(k, klen, key));
      return bad(c, path, what);
    }
  }
  if (out->id == NULL || !has_type || out->meta == NULL || kids_at == NULL)
    return bad(c, path, "a node has id, type, children and metadata");
  /* The node's type fixes its metadata schema and its number of children. */
  {
    const node_type *t = &types[out->type];
    checker kc = {.err = c->err, .cap = c->cap};
    char sub[96];
    snprintf(sub, sizeof sub, "%s (%s).metadata", path, t->name);
    if ((st = check_span(c, out->meta, out->meta_len, t->meta, sub)) != TL_OK)
      return st;
    snprintf(sub, sizeof sub, "%s (%s).children", path, t->name);
    tl_cbor_reader_init(&kc.r, kids_at, kids_len, NULL);
    if (tl_cbor_expect_array(&kc.r, &n_kids) != TL_OK)
      return mistyped(&kc, sub, "an array");
    if (n_kids != t->n_children || n_kids > 8) {
      char what[64];
      snprintf(what, sizeof what, "expected %zu children", t->n_children);
      return bad(c, sub, what);
    }
    for (size_t i = 0; i < n_kids; i++) {
      size_t len;
      if (tl_cbor_expect_bytes(&kc.r, &out->children[i], &len) != TL_OK ||
          len != 32)
        return bad(c, sub, "a child id is not 32 bytes");
      memcpy(kids + 32 * i, out->children[i], 32);
    }
    out->n_children = n_kids;
    if (tl_node_id(t->name, out->meta, out->meta_len, kids, n_kids, want) !=
            TL_OK ||
        memcmp(want, out->id, 32) != 0) {
      snprintf(c->err, c->cap, "%s (%s) does not hash to its id", path,
               t->name);
      return TL_ERR_HASH_MISMATCH;
    }
  }
  return TL_OK;
}

typedef struct graph {
  const node_type *types; /* the format's */
  seen_node *nodes;
  size_t n;
  bool visited[MAX_NODES];
  size_t order; /* nodes placed so far in post-order */
} graph;

/* Post-order from node i, children in their order: the writer's order.
 * Each node must come up exactly where the file has it. */
static tl_status walk(checker *c, graph *g, size_t i) {
  const seen_node *n = &g->nodes[i];
  g->visited[i] = true;
  for (size_t k = 0; k < n->n_children; k++) {
    size_t m;
    for (m = 0; m < g->n && memcmp(g->nodes[m].id, n->children[k], 32) != 0;
         m++) {
    }
    if (m == g->n) {
      snprintf(c->err, c->cap,
               "nodes[%zu].children[%zu] is not a node of the file", i, k);
      return TL_ERR_INVALID_ARGUMENT;
    }
    if (g->nodes[m].type != g->types[n->type].children[k]) {
      snprintf(c->err, c->cap,
               "nodes[%zu].children[%zu] is a '%s' node, not '%s'", i, k,
               g->types[g->nodes[m].type].name,
               g->types[g->types[n->type].children[k]].name);
      return TL_ERR_INVALID_ARGUMENT;
    }
    if (!g->visited[m]) {
      tl_status st = walk(c, g, m);
      if (st != TL_OK) return st;
    }
  }
  if (g->order != i) {
    snprintf(
        c->err, c->cap,
        "nodes[%zu] is out of place: the nodes are the graph under the root, "
        "each once, children first",
        i);
    return TL_ERR_INVALID_ARGUMENT;
  }
  g->order++;
  return TL_OK;
}

/* The length of the array under key in the map item at start. */
static size_t array_len(const uint8_t *start, size_t len, const char *key) {
  tl_cbor_reader r;
  size_t n = 0;
  tl_cbor_reader_init(&r, start, len, NULL);
  if (tl_cbor_map_find(&r, key) != TL_OK ||
      tl_cbor_expect_array(&r, &n) != TL_OK)
    return SIZE_MAX;
  return n;
}

static uint64_t uint_at(const uint8_t *start, size_t len, const char *key) {
  tl_cbor_reader r;
  uint64_t v = UINT64_MAX;
  tl_cbor_reader_init(&r, start, len, NULL);
  if (tl_cbor_map_find(&r, key) != TL_OK ||
      tl_cbor_expect_uint(&r, &v) != TL_OK)
    return UINT64_MAX;
  return v;
}

#define RUN_FORMAT "tinylm.receipt/1"
#define CAPABILITY_FORMAT "tinylm.capability-receipt/1"

/* The value of "format": text, equal to want. */
static tl_status expect_format(checker *c, const char *want) {
  const char *v;
  size_t vlen;
  char what[128], shown_v[64];
  if (tl_cbor_expect_text(&c->r, &v, &vlen) != TL_OK) return mistyped(c, "format", "text");
  if (tl_cbor_text_is(v, vlen, want)) return TL_OK;
  snprintf(what, sizeof what, "'%s' is not %s", shown(v, vlen, shown_v), want);
  return bad(c, "format", what);
}

/* The next top-level key of a graph receipt (run or capability) into *k:
 * "format" (which must be format) and "root" (32 bytes) are read here and
 * *k is NULL; the caller reads the value of any other. */
static tl_status top_field(checker *c, const char *format, const char **k, size_t *klen,
                           bool *has_format, const uint8_t **root_id) {
  size_t vlen;
  if (tl_cbor_expect_text(&c->r, k, klen) != TL_OK) return mistyped(c, "receipt", "text keys");
  if (tl_cbor_text_is(*k, *klen, "format")) {
    *k = NULL;
    *has_format = true;
    return expect_format(c, format);
  }
  if (tl_cbor_text_is(*k, *klen, "root")) {
    *k = NULL;
    if (tl_cbor_expect_bytes(&c->r, root_id, &vlen) != TL_OK || vlen != 32)
      return bad(c, "root", "expected 32 bytes");
  }
  return TL_OK;
}

static tl_status unknown_top(checker *c, const char *k, size_t klen) {
  char key[64], what[96];
  snprintf(what, sizeof what, "unknown top-level field '%s'", shown(k, klen, key));
  return bad(c, "receipt", what);
}

/* {"format", "root", "nodes": [one capability node]}: the root is that
 * node's id, which check_node recomputes. */
static tl_status check_capability(checker *c, uint8_t root[32]) {
  seen_node cap;
  size_t n_pairs, n_nodes;
  const uint8_t *root_id = NULL;
  bool has_format = false, has_node = false;
  tl_status st;
  tl_cbor_expect_map(&c->r, &n_pairs);
  for (size_t i = 0; i < n_pairs; i++) {
    const char *k;
    size_t klen;
    if ((st = top_field(c, CAPABILITY_FORMAT, &k, &klen, &has_format, &root_id)) != TL_OK)
      return st;
    if (k == NULL) continue;
    if (!tl_cbor_text_is(k, klen, "nodes")) return unknown_top(c, k, klen);
    if (tl_cbor_expect_array(&c->r, &n_nodes) != TL_OK) return mistyped(c, "nodes", "an array");
    if (n_nodes != 1) return bad(c, "nodes", "a capability receipt has one node");
    if ((st = check_node(c, 0, &capability_type, 1, &cap)) != TL_OK) return st;
    has_node = true;
  }
  if (!has_format || root_id == NULL || !has_node)
    return bad(c, "receipt", "format, root and nodes are required");
  if (memcmp(cap.id, root_id, 32) != 0) return bad(c, "root", "not the capability node's id");
  memcpy(root, root_id, 32);
  return TL_OK;
}

/* ------------------------------------------------------------------------ */
/* Comparison and promotion receipts: what their values must say, beyond
 * their types. A verdict is pass or fail, a stop rule one of the rules,
 * a claim's level the one its kind has; a promotion's decision is the
 * conjunction of its claims' verdicts, its failing claims and stop rules
 * exactly those its comparisons name. A forger who recomputes every id
 * still cannot show "promoted" over a failed claim. Called on a graph
 * already checked: every node of its type, in the writer's order, every
 * field present and typed. */

/* A text field of a node's metadata; false when it is null. */
static bool meta_text(const seen_node *n, const char *key, const char **s,
                      size_t *len) {
  tl_cbor_reader r;
  tl_cbor_reader_init(&r, n->meta, n->meta_len, NULL);
  return tl_cbor_map_find(&r, key) == TL_OK &&
         tl_cbor_expect_text(&r, s, len) == TL_OK;
}

/* The items of the array under key in a node's metadata (or in a map
 * item at p), one after another. */
typedef struct items {
  tl_cbor_reader r;
  size_t n;
} items;

static size_t items_at(items *it, const uint8_t *p, size_t len, const char *key) {
  tl_cbor_reader_init(&it->r, p, len, NULL);
  if (tl_cbor_map_find(&it->r, key) != TL_OK ||
      tl_cbor_expect_array(&it->r, &it->n) != TL_OK)
    it->n = 0;
  return it->n;
}

/* The next map item of it, as a span. */
static void next_map(items *it, const uint8_t **p, size_t *len) {
  size_t at = it->r.pos;
  tl_cbor_skip(&it->r);
  *p = it->r.buf + at;
  *len = it->r.pos - at;
}

/* A text field of a map item; false when null. */
static bool item_text(const uint8_t *p, size_t len, const char *key,
                      const char **s, size_t *slen) {
  tl_cbor_reader r;
  tl_cbor_reader_init(&r, p, len, NULL);
  return tl_cbor_map_find(&r, key) == TL_OK &&
         tl_cbor_expect_text(&r, s, slen) == TL_OK;
}

static bool item_bool(const uint8_t *p, size_t len, const char *key) {
  tl_cbor_reader r;
  bool v = false;
  tl_cbor_reader_init(&r, p, len, NULL);
  return tl_cbor_map_find(&r, key) == TL_OK &&
         tl_cbor_expect_bool(&r, &v) == TL_OK && v;
}

static bool text_eq(const char *a, size_t alen, const char *b, size_t blen) {
  return alen == blen && memcmp(a, b, alen) == 0;
}

/* docs/promotion.md §Stop rules (promote.h TL_RULE_*). */
static bool known_rule(const char *s, size_t len) {
  static const char *const rules[] = {
      "unresolved_source_conflict", "unknown_behaviour_field", "unconsumed_tensor",
      "pack_mismatch", "non_finite_value", "tolerance_breach", "mechanical_mismatch",
      "unstable_sampler_tie", "missing_raw_output", "independent_reader_failed",
      "stochastic_difference", "sampler_replay_mismatch", "degenerate_design", "forged_evidence",
      "requantization_mismatch"};
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (tl_cbor_text_is(s, len, rules[i])) return true;
  return false;
}

/* A claim kind's level (docs/promotion.md, the table of kinds); NULL for
 * a kind outside it. */
static const char *kind_level(const char *s, size_t len) {
#define KIND_LEVEL(kind, level) {#kind, #level},
  static const char *const kinds[][2] = {TL_CLAIM_KINDS(KIND_LEVEL)};
#undef KIND_LEVEL
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (tl_cbor_text_is(s, len, kinds[i][0])) return kinds[i][1];
  return NULL;
}

/* A verdict ("pass"/"fail") into *pass; stop_rule (present or not) must
 * agree: null when it passed, a known rule when it failed. */
static tl_status check_verdict(checker *c, const char *path, const char *v,
                               size_t vlen, bool has_rule, const char *rule,
                               size_t rule_len, bool *pass) {
  char at[160], shown_v[64];
  snprintf(at, sizeof at, "%s.verdict", path);
  if (!tl_cbor_text_is(v, vlen, "pass") && !tl_cbor_text_is(v, vlen, "fail")) {
    char what[96];
    snprintf(what, sizeof what, "'%s' is neither pass nor fail", shown(v, vlen, shown_v));
    return bad(c, at, what);
  }
  *pass = tl_cbor_text_is(v, vlen, "pass");
  snprintf(at, sizeof at, "%s.stop_rule", path);
  if (*pass && has_rule) return bad(c, at, "a passed claim names no stop rule");
  if (!*pass && !has_rule) return bad(c, at, "a failed claim names its stop rule");
  if (has_rule && !known_rule(rule, rule_len)) {
    char what[96];
    snprintf(what, sizeof what, "unknown stop rule '%s'", shown(rule, rule_len, shown_v));
    return bad(c, at, what);
  }
  return TL_OK;
}

/* Both formats' runtime (nodes[1]) names its build by the executable's
 * digest, "sha256:" and 64 lower-case hex digits (docs/promotion.md): a
 * git description names every patched binary of one commit alike. */
static tl_status build_digest(checker *c, const seen_node *runtime) {
  const char *v;
  size_t len;
  bool ok = meta_text(runtime, "build_id", &v, &len) && len == 7 + 64 &&
            memcmp(v, "sha256:", 7) == 0;
  for (size_t i = 7; ok && i < len; i++)
    ok = (v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f');
  return ok ? TL_OK
            : bad(c, "nodes[1] (runtime).metadata.build_id",
                  "not sha256: and the executable's 64 lower-case hex digits");
}

enum { C_RUNTIME = 1, C_PLAN = 2, C_POLICY = 3, C_EVIDENCE = 4, C_ROOT = 5 };

static tl_status comparison_consistent(checker *c, const seen_node *nodes,
                                       size_t n) {
  const char *v, *rule = NULL, *kind, *level, *want_level, *t;
  size_t vlen, rule_len = 0, kind_len, level_len, tlen;
  bool pass, has_rule, stochastic;
  uint64_t attempt = uint_at(nodes[C_ROOT].meta, nodes[C_ROOT].meta_len, "attempt");
  tl_cbor_reader r;
  items cases, obs;
  tl_status st;
  (void)n;
  if ((st = build_digest(c, &nodes[C_RUNTIME])) != TL_OK) return st;
  meta_text(&nodes[C_ROOT], "verdict", &v, &vlen);
  has_rule = meta_text(&nodes[C_ROOT], "stop_rule", &rule, &rule_len);
  if ((st = check_verdict(c, "nodes[5] (comparison).metadata", v, vlen, has_rule, rule,
                          rule_len, &pass)) != TL_OK)
    return st;
  if (pass && meta_text(&nodes[C_ROOT], "first_divergence", &t, &tlen))
    return bad(c, "nodes[5] (comparison).metadata.first_divergence",
               "a passed claim has no first divergence");
  if (attempt != 1 && attempt != 2)
    return bad(c, "nodes[5] (comparison).metadata.attempt",
               "1 or 2 (an infrastructure failure is retried once)");
  meta_text(&nodes[C_PLAN], "kind", &kind, &kind_len);
  meta_text(&nodes[C_PLAN], "level", &level, &level_len);
  if ((want_level = kind_level(kind, kind_len)) == NULL) {
    char what[96], sv[64];
    snprintf(what, sizeof what, "unknown claim kind '%s'", shown(kind, kind_len, sv));
    return bad(c, "nodes[2] (plan).metadata.kind", what);
  }
  if (!tl_cbor_text_is(level, level_len, want_level)) {
    char what[128];
    snprintf(what, sizeof what, "a %.*s claim is %s", (int)kind_len, kind, want_level);
    return bad(c, "nodes[2] (plan).metadata.level", what);
  }
  stochastic = tl_cbor_text_is(kind, kind_len, "stochastic");
  if (meta_text(&nodes[C_POLICY], "tolerance", &t, &tlen) &&
      !tl_cbor_text_is(level, level_len, "numerical"))
    return bad(c, "nodes[3] (policy).metadata.tolerance",
               "only a numerical claim has a tolerance profile");
  tl_cbor_reader_init(&r, nodes[C_POLICY].meta, nodes[C_POLICY].meta_len, NULL);
  {
    tl_cbor_item it;
    bool has_design = tl_cbor_map_find(&r, "design_sha256") == TL_OK &&
                      tl_cbor_peek(&r, &it) == TL_OK && it.type != TL_CBOR_NULL;
    if (has_design != stochastic)
      return bad(c, "nodes[3] (policy).metadata.design_sha256",
                 stochastic ? "a stochastic claim names its design"
                            : "only a stochastic claim has a design");
  }
  /* A passed claim has its raw outputs and every case passed. */
  items_at(&cases, nodes[C_EVIDENCE].meta, nodes[C_EVIDENCE].meta_len, "cases");
  items_at(&obs, nodes[C_EVIDENCE].meta, nodes[C_EVIDENCE].meta_len, "observations");
  if (pass && cases.n == 0)
    return bad(c, "nodes[4] (evidence).metadata.cases", "a passed claim has cases");
  if (pass && obs.n == 0)
    return bad(c, "nodes[4] (evidence).metadata.observations",
               "a passed claim has its raw outputs");
  for (size_t i = 0; pass && !stochastic && i < cases.n; i++) {
    const uint8_t *p;
    size_t len;
    next_map(&cases, &p, &len);
    if (!item_bool(p, len, "pass")) {
      char at[96];
      snprintf(at, sizeof at, "nodes[4] (evidence).metadata.cases[%zu].pass", i);
      return bad(c, at, "a passed claim has no failed case");
    }
  }
  return TL_OK;
}

/* Most claims a promotion names (a plan has about ten). */
#define MAX_CLAIMS 64

enum { P_RUNTIME = 1, P_PLAN = 2, P_COMPARISONS = 3, P_ROOT = 4 };

static tl_status promotion_consistent(checker *c, const seen_node *nodes,
                                      size_t n) {
  const char *names[MAX_CLAIMS], *lane, *backend, *v;
  size_t name_lens[MAX_CLAIMS], lane_len, backend_len, vlen;
  bool passed[MAX_CLAIMS] = {false}, all = true;
  items claims, receipts, list;
  size_t n_claims, next = 0, n_failing = 0;
  char at[128], sv[64], what[160];
  tl_status st;
  (void)n;
  if ((st = build_digest(c, &nodes[P_RUNTIME])) != TL_OK) return st;
  meta_text(&nodes[P_PLAN], "lane", &lane, &lane_len);
  meta_text(&nodes[P_RUNTIME], "backend", &backend, &backend_len);
  if (!tl_cbor_text_is(lane, lane_len, "scalar") && !tl_cbor_text_is(lane, lane_len, "fast")) {
    snprintf(what, sizeof what, "'%s' is neither scalar nor fast", shown(lane, lane_len, sv));
    return bad(c, "nodes[2] (plan).metadata.lane", what);
  }
  if (!text_eq(lane, lane_len, backend, backend_len))
    return bad(c, "nodes[1] (runtime).metadata.backend", "not the plan's lane");
  n_claims = items_at(&claims, nodes[P_PLAN].meta, nodes[P_PLAN].meta_len, "claims");
  if (n_claims == 0) return bad(c, "nodes[2] (plan).metadata.claims", "no claim");
  if (n_claims > MAX_CLAIMS)
    return bad(c, "nodes[2] (plan).metadata.claims", "more than 64 claims");
  for (size_t i = 0; i < n_claims; i++) {
    tl_cbor_expect_text(&claims.r, &names[i], &name_lens[i]);
    for (size_t j = 0; j < i; j++)
      if (text_eq(names[i], name_lens[i], names[j], name_lens[j])) {
        snprintf(at, sizeof at, "nodes[2] (plan).metadata.claims[%zu]", i);
        return bad(c, at, "a claim named twice");
      }
  }
  /* One comparison per claim that ran, in the plan's order. */
  items_at(&receipts, nodes[P_COMPARISONS].meta, nodes[P_COMPARISONS].meta_len,
           "receipts");
  for (size_t i = 0; i < receipts.n; i++) {
    const uint8_t *p;
    const char *claim, *rule = NULL;
    size_t len, claim_len, rule_len = 0;
    bool pass, has_rule;
    next_map(&receipts, &p, &len);
    item_text(p, len, "claim", &claim, &claim_len);
    item_text(p, len, "verdict", &v, &vlen);
    has_rule = item_text(p, len, "stop_rule", &rule, &rule_len);
    snprintf(at, sizeof at, "nodes[3] (comparisons).metadata.receipts[%zu]", i);
    while (next < n_claims && !text_eq(names[next], name_lens[next], claim, claim_len))
      next++;
    if (next == n_claims) {
      snprintf(what, sizeof what,
               "claim '%s' is not a claim of the plan after the ones before it",
               shown(claim, claim_len, sv));
      return bad(c, at, what);
    }
    if ((st = check_verdict(c, at, v, vlen, has_rule, rule, rule_len, &pass)) != TL_OK)
      return st;
    passed[next++] = pass;
  }
  /* The decision: promoted exactly when every claim passed. */
  for (size_t i = 0; i < n_claims; i++) all = all && passed[i];
  meta_text(&nodes[P_ROOT], "decision", &v, &vlen);
  if (!tl_cbor_text_is(v, vlen, all ? "promoted" : "not_promoted")) {
    snprintf(what, sizeof what, "'%s': %s", shown(v, vlen, sv),
             all ? "every claim passed: promoted"
                 : "not every claim passed: not_promoted");
    return bad(c, "nodes[4] (promotion).metadata.decision", what);
  }
  /* failing: the claims that did not pass, in plan order. */
  items_at(&list, nodes[P_ROOT].meta, nodes[P_ROOT].meta_len, "failing");
  for (size_t i = 0; i < n_claims; i++) {
    if (passed[i]) continue;
    if (n_failing == list.n || tl_cbor_expect_text(&list.r, &v, &vlen) != TL_OK ||
        !text_eq(v, vlen, names[i], name_lens[i])) {
      snprintf(what, sizeof what, "does not list '%s' (not passed) at [%zu]",
               shown(names[i], name_lens[i], sv), n_failing);
      return bad(c, "nodes[4] (promotion).metadata.failing", what);
    }
    n_failing++;
  }
  if (n_failing != list.n)
    return bad(c, "nodes[4] (promotion).metadata.failing",
               "lists a claim that passed, or one twice");
  /* stop_rules: each comparison's rule, in order. */
  items_at(&receipts, nodes[P_COMPARISONS].meta, nodes[P_COMPARISONS].meta_len,
           "receipts");
  items_at(&list, nodes[P_ROOT].meta, nodes[P_ROOT].meta_len, "stop_rules");
  {
    size_t k = 0;
    for (size_t i = 0; i < receipts.n; i++) {
      const uint8_t *p, *q;
      const char *claim, *rule, *claim2, *rule2;
      size_t len, qlen, claim_len, rule_len, claim2_len, rule2_len;
      next_map(&receipts, &p, &len);
      if (!item_text(p, len, "stop_rule", &rule, &rule_len)) continue;
      item_text(p, len, "claim", &claim, &claim_len);
      snprintf(at, sizeof at, "nodes[4] (promotion).metadata.stop_rules[%zu]", k);
      if (k == list.n) return bad(c, at, "missing: a comparison names a stop rule");
      next_map(&list, &q, &qlen);
      item_text(q, qlen, "rule", &rule2, &rule2_len);
      item_text(q, qlen, "claim", &claim2, &claim2_len);
      if (!text_eq(rule, rule_len, rule2, rule2_len) ||
          !text_eq(claim, claim_len, claim2, claim2_len)) {
        char sc[64];
        snprintf(what, sizeof what, "not the rule '%s' the comparison of '%s' names",
                 shown(rule, rule_len, sv), shown(claim, claim_len, sc));
        return bad(c, at, what);
      }
      k++;
    }
    if (k != list.n)
      return bad(c, "nodes[4] (promotion).metadata.stop_rules",
                 "names a rule no comparison names");
  }
  return TL_OK;
}

/* A graph format: its node types (the last is the root's), the schema of
 * its timings (NULL: the file has none), whether it is tinylm.receipt/1
 * (which has the optional execution record and token counts beside the
 * timings) and what its values must say beyond their types (or NULL). */
typedef struct graph_format {
  const char *format;
  const node_type *types;
  int n_types;
  const schema *timings;
  bool run;
  tl_status (*consistent)(checker *c, const seen_node *nodes, size_t n);
} graph_format;

/* A signature receipt says what it signs and how: a promotion, Ed25519,
 * 64 signature bytes. Whether the signature verifies is the reader's
 * (promote show --trust): the check needs no key. */
static tl_status signature_consistent(checker *c, const seen_node *nodes, size_t n) {
  const char *s;
  size_t len;
  const uint8_t *sig;
  tl_cbor_reader r;
  (void)n;
  meta_text(&nodes[0], "signed_format", &s, &len);
  if (!tl_cbor_text_is(s, len, TL_PROMOTION_FORMAT))
    return bad(c, "nodes[0] (signature).metadata.signed_format", "not " TL_PROMOTION_FORMAT);
  meta_text(&nodes[0], "algorithm", &s, &len);
  if (!tl_cbor_text_is(s, len, "ed25519"))
    return bad(c, "nodes[0] (signature).metadata.algorithm", "not ed25519");
  tl_cbor_reader_init(&r, nodes[0].meta, nodes[0].meta_len, NULL);
  if (tl_cbor_map_find(&r, "signature") != TL_OK ||
      tl_cbor_expect_bytes(&r, &sig, &len) != TL_OK || len != 64)
    return bad(c, "nodes[0] (signature).metadata.signature", "expected 64 bytes");
  return TL_OK;
}

static const graph_format run_format = {RUN_FORMAT, node_types, N_NODES,
                                        &timings, true, NULL};
static const graph_format acq_format = {"tinylm.acquisition/1", acq_types, 6,
                                        &acq_timings, false, NULL};
static const graph_format drift_format = {"tinylm.drift/1", drift_types, 4,
                                          &drift_timings, false, NULL};
static const graph_format cmp_format = {TL_COMPARISON_FORMAT, cmp_types, 6, NULL,
                                        false, comparison_consistent};
static const graph_format prom_format = {TL_PROMOTION_FORMAT, prom_types, 5, NULL,
                                         false, promotion_consistent};
static const graph_format sig_format = {TL_SIGNATURE_FORMAT, sig_types, 1, NULL, false,
                                        signature_consistent};
static const graph_format *const graph_formats[] = {
    &acq_format, &drift_format, &cmp_format, &prom_format, &sig_format};

static tl_status check_graph(checker *c, const graph_format *gf,
                             uint8_t root[32]) {
  static seen_node nodes[MAX_NODES];
  graph g;
  size_t n_pairs, n_nodes = 0;
  const uint8_t *root_id = NULL, *times = NULL;
  size_t times_len = 0, root_index;
  bool has_format = false, has_nodes = false;
  tl_status st;
  if (tl_cbor_expect_map(&c->r, &n_pairs) != TL_OK)
    return mistyped(c, "receipt", "a map");
  for (size_t i = 0; i < n_pairs; i++) {
    const char *k;
    size_t klen;
    if ((st = top_field(c, gf->format, &k, &klen, &has_format, &root_id)) != TL_OK)
      return st;
    if (k == NULL) continue;
    if (tl_cbor_text_is(k, klen, "nodes")) {
      if (tl_cbor_expect_array(&c->r, &n_nodes) != TL_OK)
        return mistyped(c, "nodes", "an array");
      if (n_nodes > MAX_NODES) return bad(c, "nodes", "more than 64 nodes");
      for (size_t n = 0; n < n_nodes; n++)
        if ((st = check_node(c, n, gf->types, gf->n_types, &nodes[n])) != TL_OK)
          return st;
      has_nodes = true;
    } else if (gf->timings != NULL && tl_cbor_text_is(k, klen, "timings_us")) {
      if ((st = span(c, &times, &times_len)) != TL_OK) return st;
      if ((st = check_span(c, times, times_len, gf->timings, "timings_us")) !=
          TL_OK)
        return st;
    } else if (gf->run && tl_cbor_text_is(k, klen, "execution")) {
      if ((st = check_map(c, &execution, "execution")) != TL_OK) return st;
    } else {
      return unknown_top(c, k, klen);
    }
  }
  if (!has_format || root_id == NULL || !has_nodes ||
      (times == NULL && gf->timings != NULL))
    return bad(c, "receipt",
               gf->timings != NULL
                   ? "format, root, nodes and timings_us are required"
                   : "format, root and nodes are required");
  for (root_index = 0;
       root_index < n_nodes && memcmp(nodes[root_index].id, root_id, 32) != 0;
       root_index++) {
  }
  if (root_index == n_nodes) return bad(c, "root", "not one of the nodes");
  if (nodes[root_index].type != gf->n_types - 1) {
    char what[96];
    snprintf(what, sizeof what, "not a %s node", gf->types[gf->n_types - 1].name);
    return bad(c, "root", what);
  }
  memset(&g, 0, sizeof g);
  g.types = gf->types;
  g.nodes = nodes;
  g.n = n_nodes;
  if ((st = walk(c, &g, root_index)) != TL_OK) return st;
  if (g.order != n_nodes) {
    snprintf(c->err, c->cap, "nodes[%zu] is not under the root", g.order);
    return TL_ERR_INVALID_ARGUMENT;
  }
  /* The token counts beside the timings are facts of the graph. */
  for (size_t n = 0; gf->run && n < n_nodes; n++) {
    const char *key = nodes[n].type == T_PROMPT       ? "prefill_tokens"
                      : nodes[n].type == T_GENERATION ? "decode_tokens"
                                                      : NULL;
    if (key != NULL && uint_at(times, times_len, key) !=
                           array_len(nodes[n].meta, nodes[n].meta_len, "ids")) {
      char what[96];
      snprintf(what, sizeof what, "differs from the %s node's ids",
               node_types[nodes[n].type].name);
      char path[64];
      snprintf(path, sizeof path, "timings_us.%s", key);
      return bad(c, path, what);
    }
  }
  if (gf->consistent != NULL && (st = gf->consistent(c, nodes, n_nodes)) != TL_OK)
    return st;
  memcpy(root, root_id, 32);
  return TL_OK;
}

static tl_status check_run(checker *c, uint8_t root[32]) {
  return check_graph(c, &run_format, root);
}

tl_status tl_graph_receipt_check(const uint8_t *doc, size_t len,
                                 const char *format, uint8_t root[32],
                                 char *err, size_t err_cap) {
  checker c = {.err = err, .cap = err_cap};
  tl_cbor_fault fault;
  const graph_format *gf = NULL;
  for (size_t i = 0; i < sizeof graph_formats / sizeof graph_formats[0]; i++)
    if (strcmp(format, graph_formats[i]->format) == 0) gf = graph_formats[i];
  memset(root, 0, 32);
  if (gf == NULL) {
    snprintf(err, err_cap, "%s is not a graph receipt format", format);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (tl_cbor_validate(doc, len, NULL, &fault) != TL_OK) {
    snprintf(err, err_cap, "not deterministic CBOR: %s at byte %zu",
             tl_cbor_fault_name(fault.kind), fault.offset);
    return TL_ERR_INVALID_CBOR;
  }
  tl_cbor_reader_init(&c.r, doc, len, NULL);
  return check_graph(&c, gf, root);
}

tl_status tl_receipt_check(const uint8_t *doc, size_t len,
                           tl_receipt_kind *kind, uint8_t root[32], char *err,
                           size_t err_cap) {
  checker c = {.err = err, .cap = err_cap};
  tl_cbor_fault fault;
  size_t n_pairs;
  bool run = false, convert = false, capability = false;
  const graph_format *promote = NULL;
  tl_status st;
  memset(root, 0, 32);
  snprintf(err, err_cap, "not a receipt");
  if (tl_cbor_validate(doc, len, NULL, &fault) != TL_OK) {
    snprintf(err, err_cap, "not deterministic CBOR: %s at byte %zu",
             tl_cbor_fault_name(fault.kind), fault.offset);
    return TL_ERR_INVALID_CBOR;
  }
  /* Which kind: a run receipt has "format", a converter receipt "receipt". */
  tl_cbor_reader_init(&c.r, doc, len, NULL);
  if (tl_cbor_expect_map(&c.r, &n_pairs) != TL_OK)
    return bad(&c, "receipt", "not a map");
  for (size_t i = 0; i < n_pairs; i++) {
    const char *k;
    size_t klen;
    if (tl_cbor_expect_text(&c.r, &k, &klen) != TL_OK)
      return mistyped(&c, "receipt", "text keys");
    convert = convert || tl_cbor_text_is(k, klen, "receipt");
    if (tl_cbor_text_is(k, klen, "format")) {
      /* a capability receipt by its format's value, else a run receipt */
      tl_cbor_reader peek = c.r;
      const char *v;
      size_t vlen;
      run = true;
      if (tl_cbor_expect_text(&peek, &v, &vlen) == TL_OK) {
        capability = tl_cbor_text_is(v, vlen, CAPABILITY_FORMAT);
        promote = tl_cbor_text_is(v, vlen, TL_COMPARISON_FORMAT)  ? &cmp_format
                  : tl_cbor_text_is(v, vlen, TL_PROMOTION_FORMAT) ? &prom_format
                  : tl_cbor_text_is(v, vlen, TL_SIGNATURE_FORMAT) ? &sig_format
                                                                  : NULL;
      }
    }
    tl_cbor_skip(&c.r);
  }
  if (run == convert)
    return bad(
        &c, "receipt",
        "neither a run receipt (format tinylm.receipt/1) nor a converter "
        "receipt (receipt tinylm.convert/1)");
  tl_cbor_reader_init(&c.r, doc, len, NULL);
  if (capability) {
    *kind = TL_RECEIPT_CAPABILITY;
    return check_capability(&c, root);
  }
  if (promote != NULL) {
    *kind = promote == &cmp_format    ? TL_RECEIPT_COMPARISON
            : promote == &prom_format ? TL_RECEIPT_PROMOTION
                                      : TL_RECEIPT_SIGNATURE;
    return check_graph(&c, promote, root);
  }
  if (run) {
    *kind = TL_RECEIPT_RUN;
    return check_run(&c, root);
  }
  *kind = TL_RECEIPT_CONVERT;
  if ((st = check_map(&c, &convert_receipt, "receipt")) != TL_OK) return st;
  {
    tl_cbor_reader r;
    const char *v;
    size_t vlen;
    tl_cbor_reader_init(&r, doc, len, NULL);
    if (tl_cbor_map_find(&r, "receipt") != TL_OK ||
        tl_cbor_expect_text(&r, &v, &vlen) != TL_OK ||
        !tl_cbor_text_is(v, vlen, "tinylm.convert/1"))
      return bad(&c, "receipt.receipt", "not tinylm.convert/1");
  }
  return TL_OK;
}
