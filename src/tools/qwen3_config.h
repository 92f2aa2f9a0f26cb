/* The effective configuration of a Qwen3 checkpoint: the closed, versioned
 * schema "qwen3/1" (docs/qwen3-config.md).
 *
 * Every config.json field is classified: behaviour-affecting fields are
 * materialised into tl_qwen3_config (defaults applied only where
 * transformers' Qwen3Config / PretrainedConfig define one, each recorded),
 * documentary fields are recorded with a reason, and an unknown field is
 * fatal and named. The special token ids (BOS, EOS, PAD) are cross-checked
 * among config.json, generation_config.json and tokenizer_config.json; a
 * disagreement stops with a conflict record (deterministic CBOR, below)
 * unless the family profile declares a resolution for exactly that
 * disagreement, which is then recorded as an explicit deviation. */
#ifndef TL_TOOLS_QWEN3_CONFIG_H
#define TL_TOOLS_QWEN3_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qwen3_schema.h"
#include "tinylm.h"

#define TL_QWEN3_MAX_IDS 8        /* ids in one special-token set */
#define TL_QWEN3_MAX_DEFAULTS 32  /* fields that can be defaulted */
#define TL_QWEN3_MAX_DEVIATIONS 4 /* declared resolutions applied */

/* token string -> id, for tokenizer_config.json's "eos_token" etc. */
typedef struct tl_qwen3_token {
  const char *content;
  uint32_t id;
} tl_qwen3_token;

/* A declared resolution of the known EOS disagreement of a publisher: it
 * applies only when config.json's eos_token_id set is exactly config_ids,
 * generation_config.json's is exactly generation_ids, and
 * tokenizer_config.json's eos_token (when present) resolves into
 * config_ids; the effective EOS set is then `resolved` (in that order). */
typedef struct tl_qwen3_eos_resolution {
  uint32_t config_ids[TL_QWEN3_MAX_IDS];
  size_t n_config_ids;
  uint32_t generation_ids[TL_QWEN3_MAX_IDS];
  size_t n_generation_ids;
  uint32_t resolved[TL_QWEN3_MAX_IDS];
  size_t n_resolved;
  const char *reason;
} tl_qwen3_eos_resolution;

typedef struct tl_qwen3_profile {
  const char *name;
  bool has_eos_resolution;
  tl_qwen3_eos_resolution eos;
} tl_qwen3_profile;

/* "qwen3-0.6b-publisher": config.json eos 151645, generation_config.json
 * [151645, 151643] -> effective EOS set {151645, 151643}. */
const tl_qwen3_profile *tl_qwen3_profile_publisher_0_6b(void);

typedef enum tl_qwen3_dtype {
  TL_QWEN3_DTYPE_NONE = 0, /* torch_dtype absent or null (default None) */
  TL_QWEN3_DTYPE_F32,
  TL_QWEN3_DTYPE_F16,
  TL_QWEN3_DTYPE_BF16
} tl_qwen3_dtype;

/* One file's claim of a special-token id set. */
typedef struct tl_qwen3_claim {
  const char *file; /* "config.json", "generation_config.json", ... */
  uint32_t ids[TL_QWEN3_MAX_IDS];
  size_t n_ids;
} tl_qwen3_claim;

/* An applied resolution of a source disagreement: a profile's declared
 * resolution (kind "declared_resolution"), or "embedding_unused": an
 * embedding checkpoint never generates, so its EOS claims end no output
 * and their disagreement is recorded (claims) instead of stopping. */
typedef struct tl_qwen3_deviation {
  const char *kind;
  const char *field;   /* "eos_token_id" */
  const char *profile; /* declared_resolution: the profile's name */
  const char *reason;
  uint32_t resolved[TL_QWEN3_MAX_IDS];
  size_t n_resolved;
  tl_qwen3_claim claims[3]; /* embedding_unused: the files' claims */
  size_t n_claims;
} tl_qwen3_deviation;

typedef struct tl_qwen3_config {
  /* Behaviour-affecting, materialised. */
  uint32_t vocab_size, hidden_size, intermediate_size, num_hidden_layers;
  uint32_t num_attention_heads, num_key_value_heads, head_dim;
  uint32_t max_position_embeddings;
  bool tie_word_embeddings;
  double rms_norm_eps, rope_theta;
  /* Accepted only with one value; materialised so the identity binds it. */
  const char *hidden_act;  /* "silu" */
  bool attention_bias;     /* false */
  bool use_sliding_window; /* false: every layer is full attention */
  bool rope_scaling_null;  /* true */
  tl_qwen3_dtype source_dtype;
  bool has_bos, has_pad;
  uint32_t bos_token_id, pad_token_id;
  uint32_t eos_ids[TL_QWEN3_MAX_IDS]; /* at least one */
  size_t n_eos;
  /* Names of the fields whose value is a schema default. */
  const char *defaults[TL_QWEN3_MAX_DEFAULTS];
  size_t n_defaults;
  tl_qwen3_deviation deviations[TL_QWEN3_MAX_DEVIATIONS];
  size_t n_deviations;
  /* The effective config as deterministic CBOR (docs/qwen3-config.md
   * §Effective config): malloc'd, free with tl_qwen3_config_free. */
  uint8_t *cbor;
  size_t cbor_len;
} tl_qwen3_config;

/* Reads config.json (required), generation_config.json and
 * tokenizer_config.json (each may be NULL: not present), with jansson and
 * duplicate keys rejected.
 *
 * tokens/n_tokens map tokenizer_config.json's special-token strings to ids
 * (e.g. the tokenizer's added tokens); when tokens is NULL the file's own
 * added_tokens_decoder is used. profile may be NULL (no declared
 * resolutions). embedding: the checkpoint is an embedding one (a
 * sentence-transformers modules.json); an EOS disagreement no profile
 * resolves is then an "embedding_unused" deviation whose effective set is
 * the union of the claims (in file order), not a stop.
 *
 * Returns TL_OK with *out filled, or:
 *   TL_ERR_IO                 a file cannot be read
 *   TL_ERR_INVALID_MODEL      malformed JSON, unknown field, wrong type or
 *                             out-of-range value
 *   TL_ERR_UNSUPPORTED_FEATURE a recognised value the runtime does not
 *                             implement (rope_scaling, gelu, bias, SWA, ...)
 *   TL_ERR_CONFLICT           a conflict stop: *conflict_cbor (malloc'd,
 *                             caller frees) holds the record
 *                             {"conflict", "field", "sources", "message"}
 *   TL_ERR_OUT_OF_MEMORY
 * with a readable message naming the file and JSON path in err. On any
 * failure *out is zeroed; conflict_cbor/conflict_len may be NULL. */
tl_status tl_qwen3_config_resolve(
    const char *config_json, const char *generation_config_json,
    const char *tokenizer_config_json, const tl_qwen3_token *tokens,
    size_t n_tokens, const tl_qwen3_profile *profile, bool embedding,
    tl_qwen3_config *out, uint8_t **conflict_cbor, size_t *conflict_len,
    char *err, size_t err_cap);

void tl_qwen3_config_free(tl_qwen3_config *c);


#endif
