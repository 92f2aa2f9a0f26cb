/* The closed "qwen3/1" config schema and the special-token conflict stops
 * (qwen3_config.h, docs/qwen3-config.md). */
#include "qwen3_config.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cbor/cbor.h"
#include "cbor_doc.h"
#include "conflict.h"
#include "input_snapshot.h"
#include "json/json.h"
#include "tool_msg.h"

/* ------------------------------------------------------------------------ */
/* The schema                                                               */

enum { BEHAVIOUR, DOCUMENTARY };

typedef struct field_spec {
  const char *name;
  int cls;
  const char *reason; /* documentary fields: why it does not matter */
} field_spec;

/* Every field config.json may hold, sorted by name. */
static const field_spec schema[] = {
    {"architectures", DOCUMENTARY,
     "checked: must be [\"Qwen3ForCausalLM\"] (selects the family)"},
    {"attention_bias", BEHAVIOUR, NULL},
    {"attention_dropout", DOCUMENTARY,
     "training only: dropout is off at inference"},
    {"bos_token_id", BEHAVIOUR, NULL},
    {"dtype", BEHAVIOUR, NULL},
    {"eos_token_id", BEHAVIOUR, NULL},
    {"head_dim", BEHAVIOUR, NULL},
    {"hidden_act", BEHAVIOUR, NULL},
    {"hidden_size", BEHAVIOUR, NULL},
    {"initializer_range", DOCUMENTARY, "training only: weight initialisation"},
    {"intermediate_size", BEHAVIOUR, NULL},
    {"layer_types", BEHAVIOUR, NULL},
    {"max_position_embeddings", BEHAVIOUR, NULL},
    {"max_window_layers", DOCUMENTARY,
     "read only when use_sliding_window is true, which qwen3/1 refuses"},
    {"model_type", DOCUMENTARY, "checked: must be \"qwen3\""},
    {"num_attention_heads", BEHAVIOUR, NULL},
    {"num_hidden_layers", BEHAVIOUR, NULL},
    {"num_key_value_heads", BEHAVIOUR, NULL},
    {"pad_token_id", BEHAVIOUR, NULL},
    {"rms_norm_eps", BEHAVIOUR, NULL},
    {"rope_scaling", BEHAVIOUR, NULL},
    {"rope_theta", BEHAVIOUR, NULL},
    {"sliding_window", DOCUMENTARY,
     "Qwen3Config sets it to None when use_sliding_window is false"},
    {"tie_word_embeddings", BEHAVIOUR, NULL},
    {"torch_dtype", BEHAVIOUR, NULL},
    {"transformers_version", DOCUMENTARY,
     "provenance: the transformers version that wrote the file"},
    {"use_cache", DOCUMENTARY,
     "generation-time KV-cache switch; the runtime always caches"},
    {"use_sliding_window", BEHAVIOUR, NULL},
    {"vocab_size", BEHAVIOUR, NULL},
};
#define N_SCHEMA (sizeof schema / sizeof schema[0])

static const field_spec *schema_find(const char *name) {
  for (size_t i = 0; i < N_SCHEMA; i++)
    if (strcmp(schema[i].name, name) == 0) return &schema[i];
  return NULL;
}

bool tl_qwen3_is_documentary(const char *name) {
  const field_spec *f = schema_find(name);
  return f != NULL && f->cls == DOCUMENTARY;
}

/* emit_effective writes exactly these (qwen3_config_test checks it). */
const char *const tl_qwen3_effective_fields[TL_QWEN3_N_EFFECTIVE] = {
    "vocab_size",          "hidden_size",         "intermediate_size",
    "num_hidden_layers",   "num_attention_heads", "num_key_value_heads",
    "head_dim",            "max_position_embeddings", "tie_word_embeddings",
    "rms_norm_eps",        "rope_theta",          "rope_scaling",
    "hidden_act",          "attention_bias",      "use_sliding_window",
    "layer_types",         "source_dtype",        "bos_token_id",
    "pad_token_id",        "eos_token_ids"};

static const tl_qwen3_profile publisher_0_6b = {
    "qwen3-0.6b-publisher",
    true,
    {{151645},
     1,
     {151645, 151643},
     2,
     {151645, 151643},
     2,
     "Qwen/Qwen3-0.6B declares eos_token_id 151645 (<|im_end|>) in "
     "config.json but [151645, 151643] in generation_config.json; "
     "transformers' generate() stops on the generation_config set, so both "
     "<|im_end|> and <|endoftext|> end generation"}};

const tl_qwen3_profile *tl_qwen3_profile_publisher_0_6b(void) {
  return &publisher_0_6b;
}

/* ------------------------------------------------------------------------ */
/* Deterministic CBOR                                                       */

_Static_assert(TL_CONFLICT_MAX_IDS >= TL_QWEN3_MAX_IDS,
               "a conflict source holds any special-token set");

/* ------------------------------------------------------------------------ */
/* The resolver                                                             */

typedef struct ctx {
  const char *file; /* the file being read, for messages */
  char *err;
  size_t err_cap;
  uint8_t **conflict_cbor;
  size_t *conflict_len;
  tl_qwen3_config *out;
  json_t *config;
} ctx;

static tl_status refuse(ctx *c, tl_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tl_status refuse(ctx *c, tl_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tl_tool_vmsg(c->err, c->err_cap, c->file, fmt, ap);
  va_end(ap);
  return st;
}

/* Writes the record and the message "conflict <kind>: <message>". */
static tl_status stop(ctx *c, tl_conflict *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tl_status stop(ctx *c, tl_conflict *k, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  uint8_t *doc = NULL;
  size_t len = 0;
  tl_status st;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  k->message = msg;
  snprintf(c->err, c->err_cap, "conflict %s: %s", k->kind, msg);
  st = tl_conflict_encode(k, &doc, &len);
  if (st != TL_OK) return st;
  if (c->conflict_cbor != NULL) {
    *c->conflict_cbor = doc;
    if (c->conflict_len != NULL) *c->conflict_len = len;
  } else {
    free(doc);
  }
  return TL_ERR_CONFLICT;
}

static void add_default(ctx *c, const char *name) {
  if (c->out->n_defaults < TL_QWEN3_MAX_DEFAULTS)
    c->out->defaults[c->out->n_defaults++] = name;
}

/* A positive integer up to max; absent: def (recorded). */
static tl_status get_uint(ctx *c, const char *key, uint32_t def, uint32_t max,
                          uint32_t *v) {
  json_t *j = json_object_get(c->config, key);
  if (j == NULL) {
    *v = def;
    add_default(c, key);
    return TL_OK;
  }
  if (!json_is_integer(j) || json_integer_value(j) < 1 ||
      json_integer_value(j) > (json_int_t)max)
    return refuse(c, TL_ERR_INVALID_MODEL, "$.%s: must be an integer in 1..%u",
                  key, (unsigned)max);
  *v = (uint32_t)json_integer_value(j);
  return TL_OK;
}

/* A finite positive number; absent: def (recorded). */
static tl_status get_pos(ctx *c, const char *key, double def, double *v) {
  json_t *j = json_object_get(c->config, key);
  if (j == NULL) {
    *v = def;
    add_default(c, key);
    return TL_OK;
  }
  if (!json_is_number(j) || !isfinite(json_number_value(j)) ||
      !(json_number_value(j) > 0))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "$.%s: must be a finite positive number", key);
  *v = json_number_value(j);
  return TL_OK;
}

/* A boolean; absent: def (recorded). When only_value is 0 or 1, the other
 * value is unsupported. */
static tl_status get_bool(ctx *c, const char *key, bool def, int only_value,
                          const char *why, bool *v) {
  json_t *j = json_object_get(c->config, key);
  if (j == NULL) {
    *v = def;
    add_default(c, key);
    return TL_OK;
  }
  if (!json_is_boolean(j))
    return refuse(c, TL_ERR_INVALID_MODEL, "$.%s: must be a boolean", key);
  *v = json_is_true(j);
  if (only_value >= 0 && *v != (only_value == 1))
    return refuse(c, TL_ERR_UNSUPPORTED_FEATURE,
                  "$.%s: %s is not supported (%s)", key, *v ? "true" : "false",
                  why);
  return TL_OK;
}

static tl_status check_documentary(ctx *c) {
  json_t *j;
  if ((j = json_object_get(c->config, "initializer_range")) != NULL &&
      !json_is_number(j))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "$.initializer_range: must be a number");
  if ((j = json_object_get(c->config, "attention_dropout")) != NULL &&
      (!json_is_number(j) || json_number_value(j) < 0))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "$.attention_dropout: must be a number >= 0");
  if ((j = json_object_get(c->config, "use_cache")) != NULL &&
      !json_is_boolean(j))
    return refuse(c, TL_ERR_INVALID_MODEL, "$.use_cache: must be a boolean");
  if ((j = json_object_get(c->config, "transformers_version")) != NULL &&
      !json_is_string(j))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "$.transformers_version: must be a string");
  if ((j = json_object_get(c->config, "sliding_window")) != NULL &&
      !json_is_null(j) && !json_is_integer(j))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "$.sliding_window: must be null or an integer");
  if ((j = json_object_get(c->config, "max_window_layers")) != NULL &&
      !json_is_integer(j))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "$.max_window_layers: must be an integer");
  return TL_OK;
}

static tl_status check_architecture(ctx *c) {
  json_t *arch = json_object_get(c->config, "architectures");
  json_t *type = json_object_get(c->config, "model_type");
  tl_conflict k;
  memset(&k, 0, sizeof k);
  k.field = "architectures";
  k.sources[0].file = c->file;
  k.sources[0].value = arch;
  k.sources[1].file = c->file;
  k.sources[1].value = type;
  k.n_sources = 2;
  if (arch == NULL || json_is_null(arch) ||
      (json_is_array(arch) && json_array_size(arch) == 0)) {
    k.kind = "architecture_missing";
    return stop(c, &k,
                "%s: $.architectures is missing; qwen3/1 requires "
                "[\"Qwen3ForCausalLM\"]",
                c->file);
  }
  if (!json_is_array(arch) || json_array_size(arch) != 1 ||
      !json_is_string(json_array_get(arch, 0)) ||
      strcmp(json_string_value(json_array_get(arch, 0)), "Qwen3ForCausalLM") !=
          0) {
    k.kind = "architecture_contradictory";
    return stop(c, &k,
                "%s: $.architectures must be exactly "
                "[\"Qwen3ForCausalLM\"]",
                c->file);
  }
  if (type == NULL || json_is_null(type)) {
    k.kind = "architecture_missing";
    k.field = "model_type";
    return stop(c, &k,
                "%s: $.model_type is missing; qwen3/1 requires "
                "\"qwen3\"",
                c->file);
  }
  if (!json_is_string(type) || strcmp(json_string_value(type), "qwen3") != 0) {
    k.kind = "architecture_contradictory";
    k.field = "model_type";
    return stop(c, &k,
                "%s: $.model_type must be \"qwen3\" for "
                "architectures [\"Qwen3ForCausalLM\"]",
                c->file);
  }
  return TL_OK;
}

static tl_status parse_dtype(ctx *c, const char *key, json_t *j,
                             tl_qwen3_dtype *d) {
  const char *s;
  *d = TL_QWEN3_DTYPE_NONE;
  if (j == NULL || json_is_null(j)) return TL_OK;
  if (!json_is_string(j))
    return refuse(c, TL_ERR_INVALID_MODEL, "$.%s: must be a string or null",
                  key);
  s = json_string_value(j);
  if (strcmp(s, "bfloat16") == 0)
    *d = TL_QWEN3_DTYPE_BF16;
  else if (strcmp(s, "float16") == 0)
    *d = TL_QWEN3_DTYPE_F16;
  else if (strcmp(s, "float32") == 0)
    *d = TL_QWEN3_DTYPE_F32;
  else
    return refuse(c, TL_ERR_UNSUPPORTED_FEATURE,
                  "$.%s: \"%s\" is not supported (bfloat16, float16, "
                  "float32)",
                  key, s);
  return TL_OK;
}

static tl_status check_fields(ctx *c) {
  tl_qwen3_config *o = c->out;
  json_t *j;
  tl_status st;
  tl_qwen3_dtype d1, d2;
  const char *key;
  json_t *value;

  json_object_foreach(c->config, key, value) {
    (void)value;
    if (schema_find(key) == NULL)
      return refuse(c, TL_ERR_INVALID_MODEL,
                    "$.%s: unknown field (not in the %s schema)", key,
                    TL_QWEN3_SCHEMA);
  }
  if ((st = check_architecture(c)) != TL_OK) return st;

  if ((st = get_uint(c, "vocab_size", 151936, 1u << 24, &o->vocab_size)) ||
      (st = get_uint(c, "hidden_size", 4096, 1u << 20, &o->hidden_size)) ||
      (st = get_uint(c, "intermediate_size", 22016, 1u << 22,
                     &o->intermediate_size)) ||
      (st = get_uint(c, "num_hidden_layers", 32, 1u << 12,
                     &o->num_hidden_layers)) ||
      (st = get_uint(c, "num_attention_heads", 32, 1u << 12,
                     &o->num_attention_heads)) ||
      (st = get_uint(c, "head_dim", 128, 1u << 14, &o->head_dim)) ||
      (st = get_uint(c, "max_position_embeddings", 32768, 1u << 28,
                     &o->max_position_embeddings)) ||
      (st = get_pos(c, "rms_norm_eps", 1e-6, &o->rms_norm_eps)) ||
      (st = get_pos(c, "rope_theta", 10000.0, &o->rope_theta)) ||
      (st = get_bool(c, "tie_word_embeddings", false, -1, NULL,
                     &o->tie_word_embeddings)) ||
      (st = get_bool(c, "attention_bias", false, 0,
                     "no q/k/v/o projection biases are implemented",
                     &o->attention_bias)) ||
      (st = get_bool(c, "use_sliding_window", false, 0,
                     "sliding-window attention is not implemented",
                     &o->use_sliding_window)))
    return st;
  /* Qwen3Config: num_key_value_heads None means num_attention_heads. */
  j = json_object_get(c->config, "num_key_value_heads");
  if (j != NULL && json_is_null(j)) {
    o->num_key_value_heads = o->num_attention_heads;
    add_default(c, "num_key_value_heads");
  } else if ((st = get_uint(c, "num_key_value_heads", 32, 1u << 12,
                            &o->num_key_value_heads)) != TL_OK) {
    return st;
  }

  j = json_object_get(c->config, "hidden_act");
  if (j == NULL) {
    add_default(c, "hidden_act");
  } else if (!json_is_string(j)) {
    return refuse(c, TL_ERR_INVALID_MODEL, "$.hidden_act: must be a string");
  } else if (strcmp(json_string_value(j), "silu") != 0) {
    return refuse(c, TL_ERR_UNSUPPORTED_FEATURE,
                  "$.hidden_act: \"%s\" is not supported (only \"silu\")",
                  json_string_value(j));
  }
  o->hidden_act = "silu";

  j = json_object_get(c->config, "rope_scaling");
  if (j == NULL) add_default(c, "rope_scaling");
  if (j != NULL && !json_is_null(j))
    return refuse(c, TL_ERR_UNSUPPORTED_FEATURE,
                  "$.rope_scaling: only null is supported (no RoPE scaling "
                  "is implemented)");
  o->rope_scaling_null = true;

  j = json_object_get(c->config, "layer_types");
  if (j == NULL || json_is_null(j)) {
    add_default(c, "layer_types");
  } else {
    size_t i;
    json_t *item;
    if (!json_is_array(j) || json_array_size(j) != o->num_hidden_layers)
      return refuse(c, TL_ERR_INVALID_MODEL,
                    "$.layer_types: must be an array of num_hidden_layers "
                    "(%u) strings",
                    (unsigned)o->num_hidden_layers);
    json_array_foreach(j, i, item) {
      if (!json_is_string(item) ||
          strcmp(json_string_value(item), "full_attention") != 0)
        return refuse(c, TL_ERR_UNSUPPORTED_FEATURE,
                      "$.layer_types[%zu]: only \"full_attention\" is "
                      "supported",
                      i);
    }
  }

  if ((st = parse_dtype(c, "torch_dtype",
                        json_object_get(c->config, "torch_dtype"), &d1)) ||
      (st = parse_dtype(c, "dtype", json_object_get(c->config, "dtype"), &d2)))
    return st;
  if (d1 != TL_QWEN3_DTYPE_NONE && d2 != TL_QWEN3_DTYPE_NONE && d1 != d2) {
    tl_conflict k;
    memset(&k, 0, sizeof k);
    k.kind = "dtype_disagreement";
    k.field = "torch_dtype";
    k.sources[0].file = c->file;
    k.sources[0].value = json_object_get(c->config, "torch_dtype");
    k.sources[1].file = c->file;
    k.sources[1].value = json_object_get(c->config, "dtype");
    k.n_sources = 2;
    return stop(c, &k, "%s: $.torch_dtype and $.dtype disagree", c->file);
  }
  o->source_dtype = d1 != TL_QWEN3_DTYPE_NONE ? d1 : d2;
  if (json_object_get(c->config, "torch_dtype") == NULL &&
      json_object_get(c->config, "dtype") == NULL)
    add_default(c, "torch_dtype");

  if ((st = check_documentary(c)) != TL_OK) return st;

  if (o->num_attention_heads % o->num_key_value_heads != 0) {
    tl_conflict k;
    memset(&k, 0, sizeof k);
    k.kind = "kv_heads_not_dividing";
    k.field = "num_key_value_heads";
    k.sources[0].file = c->file;
    k.sources[0].value = json_object_get(c->config, "num_attention_heads");
    k.sources[1].file = c->file;
    k.sources[1].value = json_object_get(c->config, "num_key_value_heads");
    k.n_sources = 2;
    return stop(c, &k,
                "%s: num_key_value_heads %u does not divide "
                "num_attention_heads %u",
                c->file, (unsigned)o->num_key_value_heads,
                (unsigned)o->num_attention_heads);
  }
  return TL_OK;
}

/* ------------------------------------------------------------------------ */
/* Special tokens                                                           */

typedef struct token_map {
  const tl_qwen3_token *tokens;
  size_t n;
  json_t *decoder; /* tokenizer_config.json's added_tokens_decoder */
} token_map;

static bool map_token(const token_map *m, const char *s, uint32_t *id) {
  if (m->tokens != NULL) {
    for (size_t i = 0; i < m->n; i++)
      if (m->tokens[i].content != NULL &&
          strcmp(m->tokens[i].content, s) == 0) {
        *id = m->tokens[i].id;
        return true;
      }
    return false;
  }
  if (json_is_object(m->decoder)) {
    const char *key;
    json_t *v;
    json_object_foreach(m->decoder, key, v) {
      json_t *content = json_object_get(v, "content");
      char *end;
      unsigned long n;
      if (!json_is_string(content) || strcmp(json_string_value(content), s))
        continue;
      n = strtoul(key, &end, 10);
      if (*key == '\0' || *end != '\0' || n > UINT32_MAX) continue;
      *id = (uint32_t)n;
      return true;
    }
  }
  return false;
}

/* An id field (int, or a list of ints when allow_list) of config.json or
 * generation_config.json into s. */
static tl_status read_ids(ctx *c, const char *file, json_t *obj,
                          const char *key, bool allow_list, tl_conflict_source *s) {
  json_t *j = json_object_get(obj, key);
  memset(s, 0, sizeof *s);
  s->file = file;
  s->value = j;
  if (j == NULL || json_is_null(j)) {
    s->value = NULL;
    return TL_OK;
  }
  s->has_ids = true;
  if (json_is_integer(j) && json_integer_value(j) >= 0 &&
      json_integer_value(j) <= (json_int_t)UINT32_MAX) {
    s->ids[s->n_ids++] = (uint32_t)json_integer_value(j);
    return TL_OK;
  }
  if (allow_list && json_is_array(j) && json_array_size(j) >= 1 &&
      json_array_size(j) <= TL_QWEN3_MAX_IDS) {
    size_t i;
    json_t *item;
    json_array_foreach(j, i, item) {
      if (!json_is_integer(item) || json_integer_value(item) < 0 ||
          json_integer_value(item) > (json_int_t)UINT32_MAX)
        break;
      s->ids[s->n_ids++] = (uint32_t)json_integer_value(item);
    }
    if (s->n_ids == json_array_size(j)) return TL_OK;
  }
  c->file = file;
  return refuse(c, TL_ERR_INVALID_MODEL,
                allow_list ? "$.%s: must be null, a non-negative integer or "
                             "a list of 1..8 of them"
                           : "$.%s: must be null or a non-negative integer",
                key);
}

/* tokenizer_config.json's "<role>_token": null, a string or an AddedToken
 * object {"content": ...}. */
static tl_status read_token(ctx *c, const char *file, json_t *obj,
                            const char *key, const token_map *m, tl_conflict_source *s) {
  json_t *j = json_object_get(obj, key);
  const char *text = NULL;
  memset(s, 0, sizeof *s);
  s->file = file;
  s->value = j;
  if (j == NULL || json_is_null(j)) {
    s->value = NULL;
    return TL_OK;
  }
  c->file = file;
  if (json_is_string(j))
    text = json_string_value(j);
  else if (json_is_object(j) && json_is_string(json_object_get(j, "content")))
    text = json_string_value(json_object_get(j, "content"));
  else
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "$.%s: must be null, a string or {\"content\": string}", key);
  s->has_ids = true;
  s->n_ids = 1;
  if (!map_token(m, text, &s->ids[0]))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "$.%s: \"%s\" is not a known token (no id for it)", key,
                  text);
  return TL_OK;
}

static bool in_set(const uint32_t *ids, size_t n, uint32_t id) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return true;
  return false;
}

static bool same_set(const uint32_t *a, size_t na, const uint32_t *b,
                     size_t nb) {
  for (size_t i = 0; i < na; i++)
    if (!in_set(b, nb, a[i])) return false;
  for (size_t i = 0; i < nb; i++)
    if (!in_set(a, na, b[i])) return false;
  return true;
}

/* The claims of the present sources agree (as sets); *first is the first
 * present one, or NULL. */
static bool agree(const tl_conflict_source *s, size_t n, const tl_conflict_source **first) {
  *first = NULL;
  for (size_t i = 0; i < n; i++) {
    if (!s[i].has_ids) continue;
    if (*first == NULL)
      *first = &s[i];
    else if (!same_set((*first)->ids, (*first)->n_ids, s[i].ids, s[i].n_ids))
      return false;
  }
  return true;
}

/* "config.json [151645], generation_config.json [151645, 151643]": each
 * claim by file base name, for the readable message. */
static const char *claims_text(const tl_conflict_source *s, size_t n, char *buf,
                               size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && len < cap; i++) {
    const char *slash = strrchr(s[i].file, '/');
    len += (size_t)snprintf(buf + len, cap - len, "%s%s [", i ? ", " : "",
                            slash ? slash + 1 : s[i].file);
    for (size_t j = 0; j < s[i].n_ids && len < cap; j++)
      len += (size_t)snprintf(buf + len, cap - len, "%s%u", j ? ", " : "",
                              (unsigned)s[i].ids[j]);
    if (len < cap) len += (size_t)snprintf(buf + len, cap - len, "]");
  }
  return buf;
}

static tl_status disagreement(ctx *c, const char *kind, const char *field,
                              const tl_conflict_source *s, size_t n) {
  tl_conflict k;
  char claims[320];
  size_t m = 0;
  memset(&k, 0, sizeof k);
  k.kind = kind;
  k.field = field;
  for (size_t i = 0; i < n; i++)
    if (s[i].has_ids) k.sources[m++] = s[i];
  k.n_sources = m;
  return stop(c, &k, "%s: the sources disagree: %s", field,
              claims_text(k.sources, m, claims, sizeof claims));
}

static tl_status out_of_vocab(ctx *c, const char *field, const tl_conflict_source *s,
                              size_t n, uint32_t id) {
  tl_conflict k;
  char claims[320];
  size_t m = 0;
  memset(&k, 0, sizeof k);
  k.kind = "id_out_of_vocab";
  k.field = field;
  for (size_t i = 0; i < n; i++)
    if (s[i].has_ids && in_set(s[i].ids, s[i].n_ids, id)) k.sources[m++] = s[i];
  k.n_sources = m;
  return stop(c, &k, "%s: id %u is not below vocab_size %u (claimed by %s)",
              field, (unsigned)id, (unsigned)c->out->vocab_size,
              claims_text(k.sources, m, claims, sizeof claims));
}

/* The files of resolve_tokens' claims, by index. */
static const char *const claim_files[3] = {
    "config.json", "generation_config.json", "tokenizer_config.json"};

static const char embedding_eos_reason[] =
    "an embedding checkpoint never generates (run, chat and completions "
    "refuse it), so no EOS id ends any output; the token its tokenizer "
    "appends is the post-processor's, not an EOS claim. The effective set "
    "is the union of the claims, so the chat template's turn end stays in it";

static tl_status resolve_tokens(ctx *c, const char *config_path,
                                const char *gen_path, json_t *gen,
                                const char *tok_path, json_t *tok,
                                const token_map *m,
                                const tl_qwen3_profile *profile,
                                bool embedding) {
  tl_qwen3_config *o = c->out;
  tl_conflict_source bos[3], eos[3], pad[3];
  const tl_conflict_source *first;
  tl_status st;
  /* [0] config.json, [1] generation_config.json, [2] tokenizer_config. */
  if ((st = read_ids(c, config_path, c->config, "bos_token_id", false,
                     &bos[0])) ||
      (st = read_ids(c, config_path, c->config, "eos_token_id", true,
                     &eos[0])) ||
      (st = read_ids(c, config_path, c->config, "pad_token_id", false,
                     &pad[0])) ||
      (st = read_ids(c, gen_path, gen, "bos_token_id", false, &bos[1])) ||
      (st = read_ids(c, gen_path, gen, "eos_token_id", true, &eos[1])) ||
      (st = read_ids(c, gen_path, gen, "pad_token_id", false, &pad[1])) ||
      (st = read_token(c, tok_path, tok, "bos_token", m, &bos[2])) ||
      (st = read_token(c, tok_path, tok, "eos_token", m, &eos[2])) ||
      (st = read_token(c, tok_path, tok, "pad_token", m, &pad[2])))
    return st;
  c->file = config_path;

  /* BOS and PAD: null or absent is no claim (see docs). */
  if (!agree(bos, 3, &first))
    return disagreement(c, "bos_disagreement", "bos_token_id", bos, 3);
  if (first != NULL) {
    o->has_bos = true;
    o->bos_token_id = first->ids[0];
    if (o->bos_token_id >= o->vocab_size)
      return out_of_vocab(c, "bos_token_id", bos, 3, o->bos_token_id);
  }
  if (!agree(pad, 3, &first))
    return disagreement(c, "pad_disagreement", "pad_token_id", pad, 3);
  if (first != NULL) {
    o->has_pad = true;
    o->pad_token_id = first->ids[0];
    if (o->pad_token_id >= o->vocab_size)
      return out_of_vocab(c, "pad_token_id", pad, 3, o->pad_token_id);
  }

  if (agree(eos, 3, &first)) {
    if (first == NULL)
      return refuse(c, TL_ERR_INVALID_MODEL,
                    "eos_token_id: no tl_conflict_source declares an EOS token");
    memcpy(o->eos_ids, first->ids, first->n_ids * sizeof first->ids[0]);
    o->n_eos = first->n_ids;
  } else {
    const tl_qwen3_eos_resolution *r =
        profile != NULL && profile->has_eos_resolution ? &profile->eos : NULL;
    tl_qwen3_deviation *d = &o->deviations[0];
    if (r != NULL && eos[0].has_ids && eos[1].has_ids &&
        same_set(eos[0].ids, eos[0].n_ids, r->config_ids, r->n_config_ids) &&
        same_set(eos[1].ids, eos[1].n_ids, r->generation_ids,
                 r->n_generation_ids) &&
        (!eos[2].has_ids ||
         in_set(r->config_ids, r->n_config_ids, eos[2].ids[0]))) {
      d->kind = "declared_resolution";
      d->profile = profile->name;
      d->reason = r->reason;
      memcpy(d->resolved, r->resolved, r->n_resolved * sizeof r->resolved[0]);
      d->n_resolved = r->n_resolved;
    } else if (embedding) {
      d->kind = "embedding_unused";
      d->reason = embedding_eos_reason;
      for (size_t i = 0; i < 3; i++) {
        if (!eos[i].has_ids) continue;
        tl_qwen3_claim *k = &d->claims[d->n_claims++];
        k->file = claim_files[i];
        memcpy(k->ids, eos[i].ids, eos[i].n_ids * sizeof eos[i].ids[0]);
        k->n_ids = eos[i].n_ids;
        /* each claim holds up to TL_QWEN3_MAX_IDS ids, their union may
         * hold more: then it stops as a chat checkpoint does */
        for (size_t j = 0; j < eos[i].n_ids; j++)
          if (!in_set(d->resolved, d->n_resolved, eos[i].ids[j])) {
            if (d->n_resolved == TL_QWEN3_MAX_IDS)
              return disagreement(c, "eos_disagreement", "eos_token_id", eos, 3);
            d->resolved[d->n_resolved++] = eos[i].ids[j];
          }
      }
    } else {
      return disagreement(c, "eos_disagreement", "eos_token_id", eos, 3);
    }
    d->field = "eos_token_id";
    memcpy(o->eos_ids, d->resolved, d->n_resolved * sizeof d->resolved[0]);
    o->n_eos = d->n_resolved;
    o->n_deviations = 1;
  }
  for (size_t i = 0; i < o->n_eos; i++)
    if (o->eos_ids[i] >= o->vocab_size)
      return out_of_vocab(c, "eos_token_id", eos, 3, o->eos_ids[i]);
  return TL_OK;
}

/* ------------------------------------------------------------------------ */
/* The effective config document                                            */

typedef struct effective {
  const tl_qwen3_config *o;
  const json_t *config;
  const char *profile;
} effective;

static const char *dtype_name(tl_qwen3_dtype d) {
  switch (d) {
    case TL_QWEN3_DTYPE_F32:
      return "float32";
    case TL_QWEN3_DTYPE_F16:
      return "float16";
    case TL_QWEN3_DTYPE_BF16:
      return "bfloat16";
    case TL_QWEN3_DTYPE_NONE:
      break;
  }
  return NULL;
}

static void put_uint_field(tl_cbor_writer *w, const char *k, uint32_t v) {
  tl_cbor_put_cstr(w, k);
  tl_cbor_put_uint(w, v);
}

static void emit_effective(tl_cbor_writer *w, const void *arg) {
  const effective *e = arg;
  const tl_qwen3_config *o = e->o;
  size_t n_doc = 0;
  for (size_t i = 0; i < N_SCHEMA; i++)
    if (schema[i].cls == DOCUMENTARY &&
        json_object_get(e->config, schema[i].name) != NULL)
      n_doc++;
  tl_cbor_begin_map(w, 6);
  tl_cbor_put_cstr(w, "schema");
  tl_cbor_put_cstr(w, TL_QWEN3_SCHEMA);
  tl_cbor_put_cstr(w, "profile");
  if (e->profile != NULL)
    tl_cbor_put_cstr(w, e->profile);
  else
    tl_cbor_put_null(w);

  tl_cbor_put_cstr(w, "config");
  tl_cbor_begin_map(w, 20);
  put_uint_field(w, "vocab_size", o->vocab_size);
  put_uint_field(w, "hidden_size", o->hidden_size);
  put_uint_field(w, "intermediate_size", o->intermediate_size);
  put_uint_field(w, "num_hidden_layers", o->num_hidden_layers);
  put_uint_field(w, "num_attention_heads", o->num_attention_heads);
  put_uint_field(w, "num_key_value_heads", o->num_key_value_heads);
  put_uint_field(w, "head_dim", o->head_dim);
  put_uint_field(w, "max_position_embeddings", o->max_position_embeddings);
  tl_cbor_put_cstr(w, "tie_word_embeddings");
  tl_cbor_put_bool(w, o->tie_word_embeddings);
  tl_cbor_put_cstr(w, "rms_norm_eps");
  tl_cbor_put_float_text(w, o->rms_norm_eps);
  tl_cbor_put_cstr(w, "rope_theta");
  tl_cbor_put_float_text(w, o->rope_theta);
  tl_cbor_put_cstr(w, "rope_scaling");
  tl_cbor_put_null(w);
  tl_cbor_put_cstr(w, "hidden_act");
  tl_cbor_put_cstr(w, o->hidden_act);
  tl_cbor_put_cstr(w, "attention_bias");
  tl_cbor_put_bool(w, o->attention_bias);
  tl_cbor_put_cstr(w, "use_sliding_window");
  tl_cbor_put_bool(w, o->use_sliding_window);
  tl_cbor_put_cstr(w, "layer_types");
  tl_cbor_put_cstr(w, "full_attention");
  tl_cbor_put_cstr(w, "source_dtype");
  if (dtype_name(o->source_dtype) != NULL)
    tl_cbor_put_cstr(w, dtype_name(o->source_dtype));
  else
    tl_cbor_put_null(w);
  tl_cbor_put_cstr(w, "bos_token_id");
  if (o->has_bos)
    tl_cbor_put_uint(w, o->bos_token_id);
  else
    tl_cbor_put_null(w);
  tl_cbor_put_cstr(w, "pad_token_id");
  if (o->has_pad)
    tl_cbor_put_uint(w, o->pad_token_id);
  else
    tl_cbor_put_null(w);
  tl_cbor_put_cstr(w, "eos_token_ids");
  tl_cbor_put_u32s(w, o->eos_ids, o->n_eos);
  tl_cbor_end_map(w);

  tl_cbor_put_cstr(w, "defaults");
  tl_cbor_begin_array(w, o->n_defaults);
  for (size_t i = 0; i < o->n_defaults; i++) tl_cbor_put_cstr(w, o->defaults[i]);
  tl_cbor_end_array(w);

  tl_cbor_put_cstr(w, "documentary");
  tl_cbor_begin_map(w, n_doc);
  for (size_t i = 0; i < N_SCHEMA; i++) {
    const json_t *v = json_object_get(e->config, schema[i].name);
    if (schema[i].cls != DOCUMENTARY || v == NULL) continue;
    tl_cbor_put_cstr(w, schema[i].name);
    tl_cbor_begin_map(w, 2);
    tl_cbor_put_cstr(w, "reason");
    tl_cbor_put_cstr(w, schema[i].reason);
    tl_cbor_put_cstr(w, "value");
    tl_cbor_put_json(w, v);
    tl_cbor_end_map(w);
  }
  tl_cbor_end_map(w);

  tl_cbor_put_cstr(w, "deviations");
  tl_cbor_begin_array(w, o->n_deviations);
  for (size_t i = 0; i < o->n_deviations; i++) {
    const tl_qwen3_deviation *d = &o->deviations[i];
    /* A declared resolution names its profile; an embedding_unused one has
     * none and lists the files' claims instead. */
    tl_cbor_begin_map(w, 5);
    tl_cbor_put_cstr(w, "kind");
    tl_cbor_put_cstr(w, d->kind);
    tl_cbor_put_cstr(w, "field");
    tl_cbor_put_cstr(w, d->field);
    if (d->profile != NULL) {
      tl_cbor_put_cstr(w, "profile");
      tl_cbor_put_cstr(w, d->profile);
    } else {
      tl_cbor_put_cstr(w, "claims");
      tl_cbor_begin_array(w, d->n_claims);
      for (size_t j = 0; j < d->n_claims; j++) {
        tl_cbor_begin_map(w, 2);
        tl_cbor_put_cstr(w, "file");
        tl_cbor_put_cstr(w, d->claims[j].file);
        tl_cbor_put_cstr(w, "ids");
        tl_cbor_put_u32s(w, d->claims[j].ids, d->claims[j].n_ids);
        tl_cbor_end_map(w);
      }
      tl_cbor_end_array(w);
    }
    tl_cbor_put_cstr(w, "reason");
    tl_cbor_put_cstr(w, d->reason);
    tl_cbor_put_cstr(w, "resolved");
    tl_cbor_put_u32s(w, d->resolved, d->n_resolved);
    tl_cbor_end_map(w);
  }
  tl_cbor_end_array(w);
  tl_cbor_end_map(w);
}

/* ------------------------------------------------------------------------ */

static json_t *load(ctx *c, const char *path, tl_status *st) {
  json_error_t e;
  json_t *root;
  c->file = path;
  root = tl_snapshot_json(path, JSON_REJECT_DUPLICATES, &e);
  if (root == NULL) {
    *st = refuse(c, e.line < 0 ? TL_ERR_IO : TL_ERR_INVALID_MODEL,
                 "line %d, column %d: %s", e.line, e.column, e.text);
    return NULL;
  }
  if (!json_is_object(root)) {
    *st = refuse(c, TL_ERR_INVALID_MODEL, "$: expected a JSON object");
    json_decref(root);
    return NULL;
  }
  return root;
}

tl_status tl_qwen3_config_resolve(
    const char *config_json, const char *generation_config_json,
    const char *tokenizer_config_json, const tl_qwen3_token *tokens,
    size_t n_tokens, const tl_qwen3_profile *profile, bool embedding,
    tl_qwen3_config *out, uint8_t **conflict_cbor, size_t *conflict_len,
    char *err, size_t err_cap) {
  ctx c;
  json_t *gen = NULL, *tok = NULL, *empty = json_object();
  token_map m;
  effective e;
  tl_status st = TL_OK;
  memset(&c, 0, sizeof c);
  memset(out, 0, sizeof *out);
  if (conflict_cbor != NULL) *conflict_cbor = NULL;
  if (conflict_len != NULL) *conflict_len = 0;
  if (err_cap > 0) err[0] = '\0';
  c.err = err;
  c.err_cap = err_cap;
  c.conflict_cbor = conflict_cbor;
  c.conflict_len = conflict_len;
  c.out = out;
  if (empty == NULL) return TL_ERR_OUT_OF_MEMORY;
  if ((c.config = load(&c, config_json, &st)) == NULL) goto done;
  if (generation_config_json != NULL &&
      (gen = load(&c, generation_config_json, &st)) == NULL)
    goto done;
  if (tokenizer_config_json != NULL &&
      (tok = load(&c, tokenizer_config_json, &st)) == NULL)
    goto done;
  c.file = config_json;
  if ((st = check_fields(&c)) != TL_OK) goto done;
  m.tokens = tokens;
  m.n = n_tokens;
  m.decoder = tok != NULL ? json_object_get(tok, "added_tokens_decoder") : NULL;
  if ((st = resolve_tokens(&c, config_json,
                           gen != NULL ? generation_config_json : "(absent)",
                           gen != NULL ? gen : empty,
                           tok != NULL ? tokenizer_config_json : "(absent)",
                           tok != NULL ? tok : empty, &m, profile,
                           embedding)) != TL_OK)
    goto done;
  e.o = out;
  e.config = c.config;
  e.profile = profile != NULL ? profile->name : NULL;
  st = tl_cbor_encode_alloc(emit_effective, &e, &out->cbor, &out->cbor_len);
done:
  json_decref(c.config);
  json_decref(gen);
  json_decref(tok);
  json_decref(empty);
  if (st != TL_OK) {
    free(out->cbor);
    memset(out, 0, sizeof *out);
  }
  return st;
}

void tl_qwen3_config_free(tl_qwen3_config *c) {
  free(c->cbor);
  memset(c, 0, sizeof *c);
}
