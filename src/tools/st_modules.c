/* The sentence-transformers module chain (st_modules.h). */
#include "st_modules.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "input_snapshot.h"

static const char *const chain[3][2] = {
    {"", "sentence_transformers.models.Transformer"},
    {"1_Pooling", "sentence_transformers.models.Pooling"},
    {"2_Normalize", "sentence_transformers.models.Normalize"}};

/* The pooling flags sentence-transformers writes; only lasttoken may be
 * true (the others pool differently: unsupported). */
static const char *const modes[] = {"pooling_mode_cls_token", "pooling_mode_mean_tokens",
                                    "pooling_mode_max_tokens",
                                    "pooling_mode_mean_sqrt_len_tokens",
                                    "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"};
#define N_MODES (sizeof modes / sizeof modes[0])

static json_t *load(const char *path, char *err, size_t cap, tl_status *st) {
  json_error_t e;
  json_t *doc = tl_snapshot_json(path, JSON_REJECT_DUPLICATES, &e);
  if (doc == NULL) {
    *st = e.line < 0 ? TL_ERR_IO : TL_ERR_INVALID_MODEL;
    snprintf(err, cap, "%s: line %d, column %d: %s", path, e.line, e.column, e.text);
  }
  return doc;
}

static tl_status check_modules(const char *path, json_t *doc, char *err, size_t cap) {
  if (!json_is_array(doc) || json_array_size(doc) != 3) {
    snprintf(err, cap,
             "%s: must list exactly Transformer, Pooling, Normalize (the only chain "
             "the runtime implements)", path);
    return TL_ERR_UNSUPPORTED_FEATURE;
  }
  for (size_t i = 0; i < 3; i++) {
    json_t *m = json_array_get(doc, i), *v;
    const char *key;
    char name[4];
    snprintf(name, sizeof name, "%zu", i);
    json_object_foreach(m, key, v) {
      if (strcmp(key, "idx") != 0 && strcmp(key, "name") != 0 && strcmp(key, "path") != 0 &&
          strcmp(key, "type") != 0) {
        snprintf(err, cap, "%s: $[%zu].%s: unknown field", path, i, key);
        return TL_ERR_INVALID_MODEL;
      }
    }
    if (!json_is_object(m) || !json_is_integer(json_object_get(m, "idx")) ||
        json_integer_value(json_object_get(m, "idx")) != (json_int_t)i ||
        !json_is_string(json_object_get(m, "name")) ||
        strcmp(json_string_value(json_object_get(m, "name")), name) != 0 ||
        !json_is_string(json_object_get(m, "path")) ||
        strcmp(json_string_value(json_object_get(m, "path")), chain[i][0]) != 0 ||
        !json_is_string(json_object_get(m, "type")) ||
        strcmp(json_string_value(json_object_get(m, "type")), chain[i][1]) != 0) {
      snprintf(err, cap,
               "%s: $[%zu]: must be {\"idx\": %zu, \"name\": \"%zu\", \"path\": \"%s\", "
               "\"type\": \"%s\"} (the only chain the runtime implements)",
               path, i, i, i, chain[i][0], chain[i][1]);
      return TL_ERR_UNSUPPORTED_FEATURE;
    }
  }
  return TL_OK;
}

static tl_status check_pooling(const char *path, json_t *doc, uint32_t hidden, char *err,
                               size_t cap) {
  const char *key;
  json_t *v;
  if (!json_is_object(doc)) {
    snprintf(err, cap, "%s: expected a JSON object", path);
    return TL_ERR_INVALID_MODEL;
  }
  json_object_foreach(doc, key, v) {
    bool known = strcmp(key, "word_embedding_dimension") == 0 ||
                 strcmp(key, "include_prompt") == 0;
    for (size_t i = 0; i < N_MODES; i++) known = known || strcmp(key, modes[i]) == 0;
    if (!known) {
      snprintf(err, cap, "%s: $.%s: unknown field", path, key);
      return TL_ERR_INVALID_MODEL;
    }
  }
  v = json_object_get(doc, "word_embedding_dimension");
  if (!json_is_integer(v) || json_integer_value(v) != (json_int_t)hidden) {
    snprintf(err, cap, "%s: $.word_embedding_dimension: must be hidden_size (%u)", path,
             hidden);
    return TL_ERR_INVALID_MODEL;
  }
  for (size_t i = 0; i < N_MODES; i++) {
    bool want = i == N_MODES - 1;
    v = json_object_get(doc, modes[i]);
    if (!json_is_boolean(v) || json_is_true(v) != want) {
      snprintf(err, cap, "%s: $.%s: must be %s (last-token pooling is the only one the "
               "runtime implements)", path, modes[i], want ? "true" : "false");
      return TL_ERR_UNSUPPORTED_FEATURE;
    }
  }
  /* as published; false (drop the prompt's tokens) has no meaning here */
  v = json_object_get(doc, "include_prompt");
  if (v != NULL && !json_is_true(v)) {
    snprintf(err, cap, "%s: $.include_prompt: must be true", path);
    return TL_ERR_UNSUPPORTED_FEATURE;
  }
  return TL_OK;
}

tl_status tl_st_modules_check(const char *dir, uint32_t hidden, char *err, size_t err_cap) {
  char path[4096];
  tl_status st = TL_OK;
  json_t *doc;
  snprintf(path, sizeof path, "%s/modules.json", dir);
  if ((doc = load(path, err, err_cap, &st)) == NULL) return st;
  st = check_modules(path, doc, err, err_cap);
  json_decref(doc);
  if (st != TL_OK) return st;
  snprintf(path, sizeof path, "%s/1_Pooling/config.json", dir);
  if ((doc = load(path, err, err_cap, &st)) == NULL) return st;
  st = check_pooling(path, doc, hidden, err, err_cap);
  json_decref(doc);
  return st;
}
