/* Other servers' request fields: see serve_compat.h and docs/server.md
 * ("Extension fields"), which lists every one with its reason. */
#include "serve_compat.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { CHAT = 1, COMPLETION = 2, BOTH = 3 };

typedef enum ext_how {
  IGNORE, /* no meaning here: checked for its type, dropped */
  OFF,    /* a sampler or output tinylm lacks: only its "off" value */
  REFUSE, /* would change the reply in a way tinylm cannot: only null */
  MOVE,   /* the field `to` says the same */
  LIMIT   /* the token limit: -1 (ollama also -2) is none, else max_tokens */
} ext_how;

typedef enum ext_type { T_BOOL, T_NUM, T_INT, T_STR, T_OBJ, T_ARR, T_STR_OR_NUM } ext_type;

typedef struct ext {
  const char *name;
  unsigned kinds;
  ext_how how;
  ext_type type;
  double off;       /* OFF: the value that leaves the reply as it is */
  const char *what; /* OFF, REFUSE: what tinylm does not have; MOVE: the target */
} ext;

/* Top-level fields (chat and completion bodies). */
static const ext top[] = {
    /* OpenAI's: no meaning for one local model */
    {"prompt_cache_key", CHAT, IGNORE, T_STR, 0, NULL},
    {"prompt_cache_retention", CHAT, IGNORE, T_STR, 0, NULL},
    {"prompt_cache_options", CHAT, IGNORE, T_OBJ, 0, NULL},
    {"safety_identifier", CHAT, IGNORE, T_STR, 0, NULL},
    {"prediction", CHAT, IGNORE, T_OBJ, 0, NULL}, /* a latency hint: the reply is the same */
    {"audio", CHAT, REFUSE, T_OBJ, 0, "audio output"},
    {"moderation", CHAT, REFUSE, T_OBJ, 0, "moderation"},
    {"web_search_options", CHAT, REFUSE, T_OBJ, 0, "web search"},
    {"functions", CHAT, REFUSE, T_ARR, 0, "the deprecated functions field (use tools)"},
    {"function_call", CHAT, REFUSE, T_STR_OR_NUM, 0,
     "the deprecated function_call field (use tool_choice)"},
    /* llama-server's */
    {"n_predict", BOTH, LIMIT, T_INT, 0, NULL},
    {"typical_p", BOTH, OFF, T_NUM, 1, "typical sampling"},
    {"typ_p", BOTH, OFF, T_NUM, 1, "typical sampling"},
    {"xtc_probability", BOTH, OFF, T_NUM, 0, "XTC sampling"},
    {"xtc_threshold", BOTH, IGNORE, T_NUM, 0, NULL}, /* only with xtc_probability */
    {"dynatemp_range", BOTH, OFF, T_NUM, 0, "dynamic temperature"},
    {"dynatemp_exponent", BOTH, IGNORE, T_NUM, 0, NULL}, /* only with dynatemp_range */
    {"dry_multiplier", BOTH, OFF, T_NUM, 0, "DRY sampling"},
    {"dry_base", BOTH, IGNORE, T_NUM, 0, NULL}, /* the dry_ values: only with dry_multiplier */
    {"dry_allowed_length", BOTH, IGNORE, T_INT, 0, NULL},
    {"dry_penalty_last_n", BOTH, IGNORE, T_INT, 0, NULL},
    {"dry_sequence_breakers", BOTH, IGNORE, T_ARR, 0, NULL},
    {"top_n_sigma", BOTH, OFF, T_NUM, -1, "top-n-sigma sampling"},
    {"mirostat", BOTH, OFF, T_INT, 0, "mirostat sampling"},
    {"mirostat_tau", BOTH, IGNORE, T_NUM, 0, NULL}, /* only with mirostat */
    {"mirostat_eta", BOTH, IGNORE, T_NUM, 0, NULL},
    {"n_probs", BOTH, OFF, T_INT, 0, "llama-server's probabilities (use logprobs)"},
    {"post_sampling_probs", BOTH, OFF, T_BOOL, 0, "post-sampling probabilities"},
    {"ignore_eos", BOTH, OFF, T_BOOL, 0, "ignoring EOS (use logit_bias)"},
    {"timings_per_token", BOTH, IGNORE, T_BOOL, 0, NULL},
    {"return_progress", BOTH, IGNORE, T_BOOL, 0, NULL},
    {"backend_sampling", BOTH, IGNORE, T_BOOL, 0, NULL},
    {"id_slot", BOTH, IGNORE, T_INT, 0, NULL}, /* the engine picks the slot by prefix */
    {"n_keep", BOTH, IGNORE, T_INT, 0, NULL},  /* no context shift: a full context ends */
    /* ollama's */
    {"keep_alive", BOTH, IGNORE, T_STR_OR_NUM, 0, NULL}, /* the model stays loaded */
};

/* ollama's options: the request's settings under one key. */
static const ext options[] = {
    {"num_predict", BOTH, LIMIT, T_INT, 0, NULL},
    {"temperature", BOTH, MOVE, T_NUM, 0, "temperature"},
    {"top_k", BOTH, MOVE, T_NUM, 0, "top_k"},
    {"top_p", BOTH, MOVE, T_NUM, 0, "top_p"},
    {"min_p", BOTH, MOVE, T_NUM, 0, "min_p"},
    {"seed", BOTH, MOVE, T_NUM, 0, "seed"},
    {"repeat_penalty", BOTH, MOVE, T_NUM, 0, "repeat_penalty"},
    {"repeat_last_n", BOTH, MOVE, T_NUM, 0, "repeat_last_n"},
    {"presence_penalty", BOTH, MOVE, T_NUM, 0, "presence_penalty"},
    {"frequency_penalty", BOTH, MOVE, T_NUM, 0, "frequency_penalty"},
    {"stop", BOTH, MOVE, T_ARR, 0, "stop"},
    {"typical_p", BOTH, OFF, T_NUM, 1, "typical sampling"},
    {"tfs_z", BOTH, OFF, T_NUM, 1, "tail-free sampling"},
    {"mirostat", BOTH, OFF, T_INT, 0, "mirostat sampling"},
    {"mirostat_tau", BOTH, IGNORE, T_NUM, 0, NULL},
    {"mirostat_eta", BOTH, IGNORE, T_NUM, 0, NULL},
    {"penalize_newline", BOTH, IGNORE, T_BOOL, 0, NULL}, /* ollama itself ignores it */
    /* where and how the model runs: the server's flags decide */
    {"num_ctx", BOTH, IGNORE, T_INT, 0, NULL},
    {"num_keep", BOTH, IGNORE, T_INT, 0, NULL},
    {"num_batch", BOTH, IGNORE, T_INT, 0, NULL},
    {"num_gpu", BOTH, IGNORE, T_INT, 0, NULL},
    {"main_gpu", BOTH, IGNORE, T_INT, 0, NULL},
    {"num_thread", BOTH, IGNORE, T_INT, 0, NULL},
    {"use_mmap", BOTH, IGNORE, T_BOOL, 0, NULL},
    {"use_mlock", BOTH, IGNORE, T_BOOL, 0, NULL},
    {"numa", BOTH, IGNORE, T_BOOL, 0, NULL},
    {"low_vram", BOTH, IGNORE, T_BOOL, 0, NULL},
    {"vocab_only", BOTH, IGNORE, T_BOOL, 0, NULL},
};

static tl_status refuse(tl_srv_error *e, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tl_status refuse(tl_srv_error *e, const char *param, const char *code, const char *fmt, ...) {
  char msg[sizeof e->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tl_srv_error_set(e, 400, NULL, param, code, "%s", msg);
  return TL_ERR_INVALID_ARGUMENT;
}

static tl_status no_memory(tl_srv_error *e) {
  tl_srv_error_set(e, 500, NULL, "", "internal", "out of memory reading the request");
  return TL_ERR_OUT_OF_MEMORY;
}

static const char *const type_names[] = {
    [T_BOOL] = "a boolean", [T_NUM] = "a number",  [T_INT] = "an integer",
    [T_STR] = "a string",   [T_OBJ] = "an object", [T_ARR] = "an array",
    [T_STR_OR_NUM] = "a string or a number"};

static bool has_type(const json_t *v, ext_type t) {
  switch (t) {
  case T_BOOL: return json_is_boolean(v);
  case T_NUM: return json_is_number(v);
  case T_INT: return json_is_integer(v);
  case T_STR: return json_is_string(v);
  case T_OBJ: return json_is_object(v);
  case T_ARR: return json_is_array(v);
  case T_STR_OR_NUM: return json_is_string(v) || json_is_number(v);
  }
  return false;
}

static const ext *find(const ext *table, size_t n, const char *key, unsigned kind) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(table[i].name, key) == 0 && (table[i].kinds & kind)) return &table[i];
  return NULL;
}

/* Records that `from` now stands at `to`, for the errors. */
static void moved(tl_srv_compat *cx, const char *from, const char *to) {
  if (cx->n_moved == TL_SRV_COMPAT_MAX_MOVED) return;
  snprintf(cx->moved[cx->n_moved].from, sizeof cx->moved[0].from, "%s", from);
  cx->moved[cx->n_moved++].to = to;
}

/* The field, or NULL when absent or null. */
static json_t *given(const json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_null(v) ? NULL : v;
}

/* Puts v (a new reference, taken) at root.to, unless the client gave to
 * too: equal is fine, different is 400. */
static tl_status put(json_t *root, const char *to, json_t *v, const char *from,
                     tl_srv_compat *cx, tl_srv_error *e) {
  json_t *there = given(root, to);
  if (there != NULL) {
    bool same = json_equal(there, v);
    json_decref(v);
    return same ? TL_OK
                : refuse(e, from, "invalid_value", "%s and %s differ (give one)", from, to);
  }
  if (json_object_set_new(root, to, v) != 0) return no_memory(e);
  moved(cx, from, to);
  return TL_OK;
}

/* The token limit of n_predict (or num_predict, -2: "until the context is
 * full", the same here): -1 none, else max_tokens. */
static tl_status limit(json_t *root, json_t *v, const char *from, bool ollama, tl_srv_compat *cx,
                       tl_srv_error *e) {
  json_int_t x = json_integer_value(v);
  json_t *mt = given(root, "max_tokens"), *mct = given(root, "max_completion_tokens");
  if (x == -1 || (ollama && x == -2)) {
    if (mt != NULL || mct != NULL)
      return refuse(e, from, "invalid_value", "%s %lld (no limit) and %s differ (give one)", from,
                  (long long)x, mt != NULL ? "max_tokens" : "max_completion_tokens");
    cx->unlimited = true;
    return TL_OK;
  }
  if (cx->unlimited)
    return refuse(e, from, "invalid_value", "%s and max_tokens -1 (no limit) differ (give one)",
                from);
  if (mct != NULL && mt == NULL && !json_equal(mct, v))
    return refuse(e, from, "invalid_value", "%s and max_completion_tokens differ (give one)", from);
  return put(root, "max_tokens", json_integer(x), from, cx, e);
}

/* One field of table; handled fields are removed by the caller. */
static tl_status one(json_t *root, const ext *x, json_t *v, const char *param, bool ollama,
                     tl_srv_compat *cx, tl_srv_error *e) {
  if (!has_type(v, x->type))
    return refuse(e, param, "invalid_type", "%s must be %s", param, type_names[x->type]);
  switch (x->how) {
  case IGNORE: return TL_OK;
  case OFF:
    if (x->type == T_BOOL ? json_is_true(v) == (x->off != 0) : json_number_value(v) == x->off)
      return TL_OK;
    if (x->type == T_BOOL)
      return refuse(e, param, "unsupported_value", "%s: tinylm has no %s; only false is accepted",
                  param, x->what);
    return refuse(e, param, "unsupported_value", "%s: tinylm has no %s; only %g (off) is accepted",
                param, x->what, x->off);
  case REFUSE:
    return refuse(e, param, "unsupported_value", "%s: tinylm has no %s", param, x->what);
  case MOVE: return put(root, x->what, json_incref(v), param, cx, e);
  case LIMIT: return limit(root, v, param, ollama, cx, e);
  }
  return TL_OK;
}

/* ollama's options object, each key as its table says. */
static tl_status read_options(json_t *root, json_t *opts, unsigned kind, tl_srv_compat *cx,
                              tl_srv_error *e) {
  const char *key;
  json_t *v;
  tl_status st;
  if (!json_is_object(opts)) return refuse(e, "options", "invalid_type", "options must be an object");
  json_object_foreach(opts, key, v) {
    char param[48];
    const ext *x = find(options, sizeof options / sizeof options[0], key, kind);
    snprintf(param, sizeof param, "options.%.38s", key);
    if (x == NULL) return refuse(e, param, "unknown_parameter", "unknown field '%s'", param);
    if (json_is_null(v)) continue;
    if ((st = one(root, x, v, param, true, cx, e)) != TL_OK) return st;
  }
  return TL_OK;
}

/* ollama's format: "json" (any object), a JSON schema, or "" (none). */
static tl_status read_format(json_t *root, json_t *v, tl_srv_compat *cx, tl_srv_error *e) {
  json_t *rf;
  if (json_is_string(v) && json_string_length(v) == 0) return TL_OK;
  if (json_is_string(v) && strcmp(json_string_value(v), "json") == 0)
    rf = json_pack("{s:s}", "type", "json_object");
  else if (json_is_object(v))
    rf = json_pack("{s:s,s:{s:s,s:O}}", "type", "json_schema", "json_schema", "name", "format",
                   "schema", v);
  else
    return refuse(e, "format", "invalid_value",
                "format must be \"json\", \"\" or a JSON schema (an object)");
  return put(root, "response_format", rf, "format", cx, e);
}

/* ollama's think: Qwen3's switch, chat_template_kwargs.enable_thinking. */
static tl_status read_think(json_t *root, json_t *v, tl_srv_compat *cx, tl_srv_error *e) {
  json_t *kw = json_object_get(root, "chat_template_kwargs"), *was;
  if (!json_is_boolean(v)) return refuse(e, "think", "invalid_type", "think must be a boolean");
  if (kw == NULL || json_is_null(kw)) {
    if ((kw = json_object()) == NULL || json_object_set_new(root, "chat_template_kwargs", kw) != 0)
      return no_memory(e);
  }
  if (!json_is_object(kw)) return TL_OK; /* the reader refuses it */
  if ((was = given(kw, "enable_thinking")) != NULL)
    return json_equal(was, v) ? TL_OK
                              : refuse(e, "think", "invalid_value",
                                     "think and chat_template_kwargs.enable_thinking differ "
                                     "(give one)");
  json_object_set(kw, "enable_thinking", v);
  moved(cx, "think", "chat_template_kwargs.enable_thinking");
  return TL_OK;
}

/* OpenAI's modalities: ["text"] only. */
static tl_status read_modalities(json_t *v, tl_srv_error *e) {
  size_t i;
  json_t *m;
  if (!json_is_array(v)) return refuse(e, "modalities", "invalid_type", "modalities must be an array");
  json_array_foreach(v, i, m) {
    if (!json_is_string(m) || strcmp(json_string_value(m), "text") != 0)
      return refuse(e, "modalities", "unsupported_value",
                  "modalities: tinylm answers in text only ([\"text\"])");
  }
  return TL_OK;
}

/* llama-server's samplers: the order of its sampler chain, a list of
 * names or one string of letters. tinylm's chain is fixed (docs/server.md). */
static tl_status read_samplers(json_t *v, tl_srv_error *e) {
  size_t i;
  json_t *s;
  if (json_is_string(v)) return TL_OK;
  if (!json_is_array(v))
    return refuse(e, "samplers", "invalid_type", "samplers must be a string or an array of strings");
  json_array_foreach(v, i, s) {
    if (!json_is_string(s))
      return refuse(e, "samplers", "invalid_type", "samplers must be a string or an array of strings");
  }
  return TL_OK;
}

tl_status tl_srv_compat_apply(tl_srv_kind kind, json_t *root, tl_srv_compat *cx,
                              tl_srv_error *err) {
  unsigned k = kind == TL_SRV_CHAT ? CHAT : kind == TL_SRV_COMPLETION ? COMPLETION : 0;
  const char *key;
  json_t *v, *mt;
  void *tmp;
  tl_status st = TL_OK;
  memset(cx, 0, sizeof *cx);
  if (k == 0) return TL_OK;
  /* llama-server's web UI sends max_tokens -1 for "no limit" */
  mt = json_object_get(root, "max_tokens");
  if (json_is_integer(mt) && json_integer_value(mt) == -1) {
    json_t *minus = json_integer(-1);
    json_object_del(root, "max_tokens");
    if (minus == NULL) return no_memory(err);
    st = limit(root, minus, "max_tokens", false, cx, err);
    json_decref(minus);
    if (st != TL_OK) return st;
  }
  json_object_foreach_safe(root, tmp, key, v) {
    const ext *x = find(top, sizeof top / sizeof top[0], key, k);
    bool chat = k == CHAT;
    if (x != NULL) {
      if (!json_is_null(v)) st = one(root, x, v, key, false, cx, err);
    } else if (strcmp(key, "options") == 0) {
      if (!json_is_null(v)) st = read_options(root, v, k, cx, err);
    } else if (strcmp(key, "cache_prompt") == 0) {
      if (!json_is_null(v) && !json_is_boolean(v))
        return refuse(err, key, "invalid_type", "cache_prompt must be a boolean");
      cx->no_prompt_cache = json_is_false(v);
    } else if (strcmp(key, "samplers") == 0) {
      if (!json_is_null(v)) st = read_samplers(v, err);
    } else if (chat && strcmp(key, "modalities") == 0) {
      if (!json_is_null(v)) st = read_modalities(v, err);
    } else if (chat && strcmp(key, "verbosity") == 0) {
      /* GPT-5's answer length: only its default leaves the reply as it is */
      if (!json_is_null(v) && (!json_is_string(v) || strcmp(json_string_value(v), "medium") != 0))
        st = refuse(err, key, "unsupported_value",
                  "verbosity: tinylm cannot make replies shorter or longer; only \"medium\" "
                  "(the default) is accepted");
    } else if (chat && strcmp(key, "format") == 0) {
      if (!json_is_null(v)) st = read_format(root, v, cx, err);
    } else if (chat && strcmp(key, "think") == 0) {
      if (!json_is_null(v)) st = read_think(root, v, cx, err);
    } else {
      continue; /* a field of the reader's (or an unknown one: it says so) */
    }
    if (st != TL_OK) return st;
    json_object_del(root, key);
  }
  return TL_OK;
}

void tl_srv_compat_finish(const tl_srv_compat *cx, tl_srv_request *r) {
  if (cx->unlimited) r->max_tokens = 0;
  r->no_prompt_cache = cx->no_prompt_cache;
}

void tl_srv_compat_blame(const tl_srv_compat *cx, tl_srv_error *err) {
  for (size_t i = 0; i < cx->n_moved; i++) {
    size_t n = strlen(cx->moved[i].to);
    char param[sizeof err->param], code[sizeof err->code], message[sizeof err->message];
    if (strncmp(err->param, cx->moved[i].to, n) != 0 ||
        (err->param[n] != '\0' && err->param[n] != '.' && err->param[n] != '['))
      continue;
    /* ollama's format became a whole response_format: name format itself */
    snprintf(param, sizeof param, "%.47s%.48s", cx->moved[i].from,
             strcmp(cx->moved[i].from, "format") == 0 ? "" : err->param + n);
    snprintf(code, sizeof code, "%s", err->code); /* tl_srv_error_set writes over err */
    snprintf(message, sizeof message, "%.440s (given as %.47s)", err->message, cx->moved[i].from);
    tl_srv_error_set(err, err->status, err->type, param, code, "%s", message);
    return;
  }
}
