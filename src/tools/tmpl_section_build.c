#include "tmpl_section_build.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cbor/cbor.h"
#include "hash/sha256.h"
#include "input_snapshot.h"
#include "tmpl/tmpl_compile.h"
#include "tmpl/tmpl_section.h"

/* transformers' SPECIAL_TOKENS_ATTRIBUTES, in its order; only those that
 * are set reach the template (special_tokens_map). */
static const char *const special_attrs[] = {
    "bos_token", "eos_token", "unk_token",  "sep_token",
    "pad_token", "cls_token", "mask_token", "additional_special_tokens"};

/* A token is a string or an AddedToken object {"content": ...}. */
static json_t *token_text(json_t *v) {
  if (json_is_string(v)) return json_incref(v);
  if (json_is_object(v) && json_is_string(json_object_get(v, "content")))
    return json_incref(json_object_get(v, "content"));
  return NULL;
}

static char *special_tokens_json(json_t *config, char *err, size_t err_cap) {
  json_t *map = json_object();
  char *text;
  for (size_t i = 0; i < sizeof special_attrs / sizeof special_attrs[0]; i++) {
    json_t *v = json_object_get(config, special_attrs[i]), *t;
    if (v == NULL || json_is_null(v)) continue;
    if (json_is_array(v)) {
      json_t *list = json_array(), *item;
      size_t k;
      json_array_foreach(v, k, item) {
        t = token_text(item);
        if (t == NULL) {
          snprintf(err, err_cap, "%s[%zu]: expected a token string",
                   special_attrs[i], k);
          json_decref(list);
          json_decref(map);
          return NULL;
        }
        json_array_append_new(list, t);
      }
      json_object_set_new(map, special_attrs[i], list);
    } else if ((t = token_text(v)) != NULL) {
      json_object_set_new(map, special_attrs[i], t);
    } else {
      snprintf(err, err_cap, "%s: expected a token string", special_attrs[i]);
      json_decref(map);
      return NULL;
    }
  }
  text = json_dumps(map, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(map);
  return text;
}

static void put_text(tl_cbor_writer *w, const char *s) {
  tl_cbor_put_text(w, s, strlen(s));
}

tl_status tl_tmpl_section_build(const char *config_path,
                                tl_tmpl_section_built *out, char *err,
                                size_t err_cap) {
  json_error_t jerr;
  json_t *config =
      tl_snapshot_json(config_path, JSON_REJECT_DUPLICATES, &jerr);
  json_t *tmpl;
  uint8_t *ir = NULL;
  size_t ir_len = 0, cap;
  char *tokens = NULL, cerr[512] = "";
  tl_status st;
  memset(out, 0, sizeof *out);
  if (config == NULL) {
    snprintf(err, err_cap, "%s: line %d, column %d: %s", config_path, jerr.line,
             jerr.column, jerr.text);
    return jerr.line < 0 ? TL_ERR_IO : TL_ERR_INVALID_MODEL;
  }
  tmpl = json_object_get(config, "chat_template");
  if (!json_is_string(tmpl)) {
    snprintf(err, err_cap, "%s: chat_template: %s", config_path,
             tmpl == NULL ? "missing"
                          : "must be one template string (named templates "
                            "in a list are not supported)");
    json_decref(config);
    return TL_ERR_INVALID_MODEL;
  }
  st = tl_tmpl_compile(json_string_value(tmpl), json_string_length(tmpl), &ir,
                       &ir_len, cerr, sizeof cerr);
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: chat_template: %s", config_path, cerr);
    json_decref(config);
    return st;
  }
  tl_sha256(json_string_value(tmpl), json_string_length(tmpl),
            out->source_sha256);
  tl_sha256(ir, ir_len, out->ir_sha256);
  tokens = special_tokens_json(config, cerr, sizeof cerr);
  json_decref(config);
  if (tokens == NULL) {
    snprintf(err, err_cap, "%s: %s", config_path, cerr);
    free(ir);
    return TL_ERR_INVALID_MODEL;
  }
  cap = ir_len + strlen(tokens) + 512;
  out->bytes = malloc(cap);
  /* The writer sorts map keys through scratch memory as large as the map. */
  uint8_t *scratch_mem = malloc(2 * cap + 4096);
  if (out->bytes == NULL || scratch_mem == NULL) {
    st = TL_ERR_OUT_OF_MEMORY;
    snprintf(err, err_cap, "out of memory");
    tl_tmpl_section_built_free(out);
  } else {
    tl_arena scratch;
    tl_cbor_writer w;
    tl_arena_init(&scratch, scratch_mem, 2 * cap + 4096);
    tl_cbor_writer_init(&w, out->bytes, cap, &scratch);
    tl_cbor_begin_map(&w, 6);
    put_text(&w, "format");
    put_text(&w, TL_TMPL_SECTION_FORMAT);
    put_text(&w, "version");
    tl_cbor_put_uint(&w, TL_TMPL_SECTION_VERSION);
    put_text(&w, "ir");
    tl_cbor_put_bytes(&w, ir, ir_len);
    put_text(&w, "ir_sha256");
    tl_cbor_put_bytes(&w, out->ir_sha256, 32);
    put_text(&w, "source_sha256");
    tl_cbor_put_bytes(&w, out->source_sha256, 32);
    put_text(&w, "special_tokens_json");
    put_text(&w, tokens);
    tl_cbor_end_map(&w);
    st = tl_cbor_writer_finish(&w, &out->len);
    if (st != TL_OK) {
      snprintf(err, err_cap, "template section encoding failed (%s)",
               tl_status_name(st));
      tl_tmpl_section_built_free(out);
    }
  }
  free(scratch_mem);
  free(ir);
  free(tokens);
  return st;
}

void tl_tmpl_section_built_free(tl_tmpl_section_built *s) {
  free(s->bytes);
  memset(s, 0, sizeof *s);
}
