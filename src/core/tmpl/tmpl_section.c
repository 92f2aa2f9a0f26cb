#include "tmpl/tmpl_section.h"

#include <string.h>

#include "cbor/cbor.h"
#include "hash/sha256.h"

static tl_status expect_digest(tl_cbor_reader *r, uint8_t out[32]) {
  const uint8_t *d;
  size_t n;
  tl_status st = tl_cbor_expect_bytes(r, &d, &n);
  if (st != TL_OK) return st;
  if (n != 32) return TL_ERR_INVALID_MODEL;
  memcpy(out, d, 32);
  return TL_OK;
}

tl_status tl_tmpl_section_load(const uint8_t *section, size_t len,
                               tl_arena *arena, tl_tmpl_section *out) {
  tl_cbor_limits limits = tl_cbor_limits_default();
  tl_cbor_reader r;
  const uint8_t *ir = NULL;
  const char *tokens_json = NULL;
  size_t ir_len = 0, tokens_len = 0, n_pairs, seen = 0;
  uint8_t digest[32];
  tl_status st;
  tl_tmpl_load_error load_err;
  tl_json_error json_err;
  tl_json_value *tokens;
  if (section == NULL || arena == NULL || out == NULL)
    return TL_ERR_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  st = tl_cbor_reader_init(&r, section, len, &limits);
  if (st == TL_OK) st = tl_cbor_expect_map(&r, &n_pairs);
  if (st != TL_OK) return st;
  if (n_pairs != 6) return TL_ERR_INVALID_MODEL;
  for (size_t i = 0; i < n_pairs; i++) {
    const char *key;
    size_t key_len;
    st = tl_cbor_expect_text(&r, &key, &key_len);
    if (st != TL_OK) return st;
    if (tl_cbor_text_is(key, key_len, "format")) {
      const char *f;
      size_t n;
      st = tl_cbor_expect_text(&r, &f, &n);
      if (st == TL_OK && !tl_cbor_text_is(f, n, TL_TMPL_SECTION_FORMAT))
        return TL_ERR_INVALID_MODEL;
    } else if (tl_cbor_text_is(key, key_len, "version")) {
      uint64_t v;
      st = tl_cbor_expect_uint(&r, &v);
      if (st == TL_OK && v != TL_TMPL_SECTION_VERSION)
        return TL_ERR_UNSUPPORTED_ABI;
    } else if (tl_cbor_text_is(key, key_len, "ir")) {
      st = tl_cbor_expect_bytes(&r, &ir, &ir_len);
    } else if (tl_cbor_text_is(key, key_len, "ir_sha256")) {
      st = expect_digest(&r, out->ir_sha256);
    } else if (tl_cbor_text_is(key, key_len, "source_sha256")) {
      st = expect_digest(&r, out->source_sha256);
    } else if (tl_cbor_text_is(key, key_len, "special_tokens_json")) {
      st = tl_cbor_expect_text(&r, &tokens_json, &tokens_len);
    } else {
      return TL_ERR_INVALID_MODEL; /* an unknown key */
    }
    if (st != TL_OK) return st;
    seen++;
  }
  st = tl_cbor_reader_finish(&r);
  if (st != TL_OK) return st;
  if (seen != 6 || ir == NULL || tokens_json == NULL)
    return TL_ERR_INVALID_MODEL;
  st = tl_sha256(ir, ir_len, digest);
  if (st != TL_OK) return st;
  if (memcmp(digest, out->ir_sha256, 32) != 0) return TL_ERR_HASH_MISMATCH;
  st = tl_tmpl_load(ir, ir_len, arena, &out->program, &load_err);
  if (st != TL_OK) return st;
  if (memcmp(out->program.source_sha256, out->source_sha256, 32) != 0)
    return TL_ERR_INVALID_MODEL;
  {
    tl_json_limits jl = tl_json_limits_default();
    st = tl_json_parse((const uint8_t *)tokens_json, tokens_len, &jl, arena,
                       &tokens, &json_err);
  }
  if (st != TL_OK) return TL_ERR_INVALID_MODEL;
  if (tokens->type != TL_JSON_OBJECT) return TL_ERR_INVALID_MODEL;
  out->special_tokens = tokens;
  return TL_OK;
}

static bool has_key(const tl_json_value *obj, const char *key) {
  return tl_json_get(obj, key, strlen(key)) != NULL;
}

/* Each message: an object with a string role; content a string or null
 * when present. */
static tl_status check_messages(const tl_json_value *messages, const char **why,
                                size_t *bad_message) {
  if (messages->type != TL_JSON_ARRAY) {
    *why = "\"messages\" must be a list";
    return TL_ERR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < messages->u.arr.n; i++) {
    const tl_json_value *msg = &messages->u.arr.items[i], *role, *content;
    *bad_message = i;
    if (msg->type != TL_JSON_OBJECT) {
      *why = "a message must be an object";
      return TL_ERR_INVALID_ARGUMENT;
    }
    role = tl_json_get(msg, "role", 4);
    if (role == NULL || role->type != TL_JSON_STRING) {
      *why = "a message needs a string \"role\"";
      return TL_ERR_INVALID_ARGUMENT;
    }
    content = tl_json_get(msg, "content", 7);
    if (content != NULL && content->type != TL_JSON_STRING &&
        content->type != TL_JSON_NULL) {
      *why = "a message's \"content\" must be a string or null";
      return TL_ERR_INVALID_ARGUMENT;
    }
  }
  *bad_message = SIZE_MAX;
  return TL_OK;
}

tl_status tl_tmpl_chat_vars(const tl_tmpl_section *section,
                            const tl_json_value *conv, tl_arena *arena,
                            tl_json_value **vars, const char **why,
                            size_t *bad_message) {
  static const char *const defaults[] = {"add_generation_prompt", "tools",
                                         "documents"};
  const tl_json_value *tokens;
  const tl_json_value *messages;
  tl_json_value *v;
  tl_json_member *m;
  size_t n = 0, cap;
  tl_status st;
  *why = NULL;
  *bad_message = SIZE_MAX;
  if (section == NULL || conv == NULL || arena == NULL || vars == NULL)
    return TL_ERR_INVALID_ARGUMENT;
  tokens = section->special_tokens;
  if (conv->type != TL_JSON_OBJECT) {
    *why = "the conversation must be a JSON object";
    return TL_ERR_INVALID_ARGUMENT;
  }
  messages = tl_json_get(conv, "messages", 8);
  if (messages == NULL) {
    *why = "the conversation has no \"messages\" member";
    return TL_ERR_INVALID_ARGUMENT;
  }
  st = check_messages(messages, why, bad_message);
  if (st != TL_OK) return st;
  if (has_key(conv, "continue_final_message")) {
    *why = "continue_final_message is not supported";
    return TL_ERR_UNSUPPORTED_FEATURE;
  }
  cap = tokens->u.obj.n + conv->u.obj.n + 3;
  st = tl_arena_alloc(arena, sizeof *v, 16, (void **)&v);
  if (st == TL_OK)
    st = tl_arena_alloc_array(arena, cap, sizeof *m, 16, (void **)&m);
  if (st != TL_OK) return st;
  /* {**special_tokens_map, **kwargs}: the conversation wins. */
  for (size_t i = 0; i < tokens->u.obj.n; i++) {
    const tl_json_member *t = &tokens->u.obj.members[i];
    if (tl_json_get(conv, t->key, t->key_len) == NULL) m[n++] = *t;
  }
  for (size_t i = 0; i < conv->u.obj.n; i++) m[n++] = conv->u.obj.members[i];
  for (size_t i = 0; i < 3; i++) {
    if (has_key(conv, defaults[i])) continue;
    m[n].key = defaults[i];
    m[n].key_len = strlen(defaults[i]);
    memset(&m[n].value, 0, sizeof m[n].value);
    if (i == 0) {
      m[n].value.type = TL_JSON_BOOL; /* add_generation_prompt=False */
      m[n].value.u.b = false;
    } else {
      m[n].value.type = TL_JSON_NULL; /* tools=None, documents=None */
    }
    n++;
  }
  v->type = TL_JSON_OBJECT;
  v->u.obj.members = m;
  v->u.obj.n = n;
  *vars = v;
  return TL_OK;
}
