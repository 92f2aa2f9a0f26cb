/* /v1/embeddings' request and response (serve_embed.h). */
#include "serve_embed.h"

#include <stdlib.h>
#include <string.h>

static tl_status bad(tl_srv_error *err, const char *param, const char *fmt, const char *what) {
  tl_srv_error_set(err, 400, NULL, param, "invalid_value", fmt, what);
  return TL_ERR_INVALID_ARGUMENT;
}

/* An array of token ids into in (each < vocab, at least one). */
static tl_status read_ids(json_t *a, uint32_t vocab, tl_srv_embed_input *in, tl_srv_error *err) {
  size_t n = json_array_size(a);
  if (n == 0) return bad(err, "input", "%s", "an input's token array is empty");
  if ((in->ids = malloc(n * sizeof *in->ids)) == NULL) {
    tl_srv_error_set(err, 500, NULL, NULL, "internal", "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_array_get(a, i);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) >= (json_int_t)vocab) {
      tl_srv_error_set(err, 400, NULL, "input", "invalid_value",
                       "token %zu of an input is not an id below the vocabulary (%u)", i,
                       vocab);
      return TL_ERR_INVALID_ARGUMENT;
    }
    in->ids[i] = (uint32_t)json_integer_value(v);
  }
  in->n_ids = n;
  return TL_OK;
}

static tl_status read_text(json_t *s, tl_srv_embed_input *in, tl_srv_error *err) {
  if (json_string_length(s) == 0) return bad(err, "input", "%s", "an input string is empty");
  in->text = json_string_value(s);
  in->len = json_string_length(s);
  return TL_OK;
}

/* The four shapes of input: one string, one id array, or an array of
 * either (all strings or all id arrays). */
static tl_status read_input(json_t *input, uint32_t vocab, tl_srv_embed_request *r,
                            tl_srv_error *err) {
  json_t *first = json_array_get(input, 0);
  bool one = json_is_string(input) || json_is_integer(first);
  size_t n = one ? 1 : json_array_size(input);
  tl_status st = TL_OK;
  if (input == NULL) {
    tl_srv_error_set(err, 400, NULL, "input", "missing_required_parameter",
                     "input is required");
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (!json_is_string(input) && !json_is_array(input))
    return bad(err, "input", "%s", "input must be a string, an array of strings, an array of "
               "token ids or an array of such arrays");
  if (n == 0) return bad(err, "input", "%s", "input is empty");
  if (n > TL_SRV_MAX_EMBED_INPUTS)
    return bad(err, "input", "%s", "input has more than 2048 entries");
  if ((r->inputs = calloc(n, sizeof *r->inputs)) == NULL) {
    tl_srv_error_set(err, 500, NULL, NULL, "internal", "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  r->n = n;
  if (json_is_string(input)) return read_text(input, &r->inputs[0], err);
  if (one) return read_ids(input, vocab, &r->inputs[0], err);
  for (size_t i = 0; i < n && st == TL_OK; i++) {
    json_t *v = json_array_get(input, i);
    if (json_is_string(v) && json_is_string(first))
      st = read_text(v, &r->inputs[i], err);
    else if (json_is_array(v) && json_is_array(first))
      st = read_ids(v, vocab, &r->inputs[i], err);
    else
      st = bad(err, "input", "%s", "input's entries must be all strings or all token arrays");
  }
  return st;
}

tl_status tl_srv_embed_parse(const uint8_t *body, size_t len, uint32_t vocab, uint32_t hidden,
                             tl_srv_embed_request *out, tl_srv_error *err) {
  static const char *const fields[] = {"input", "model", "encoding_format", "dimensions",
                                       "user"};
  const char *key;
  json_t *v;
  tl_status st;
  memset(out, 0, sizeof *out);
  memset(err, 0, sizeof *err);
  out->dims = hidden;
  if ((st = tl_srv_json_object(body, len, &out->root, err)) != TL_OK) return st;
  json_object_foreach(out->root, key, v) {
    size_t f = 0;
    while (f < sizeof fields / sizeof *fields && strcmp(key, fields[f]) != 0) f++;
    if (f == sizeof fields / sizeof *fields) {
      tl_srv_error_set(err, 400, NULL, key, "unknown_parameter",
                       "Unrecognized request argument supplied: %.80s", key);
      st = TL_ERR_INVALID_ARGUMENT;
      goto done;
    }
  }
  if ((v = json_object_get(out->root, "model")) != NULL && !json_is_string(v)) {
    st = bad(err, "model", "%s", "model must be a string");
  } else if ((v = json_object_get(out->root, "user")) != NULL && !json_is_string(v)) {
    st = bad(err, "user", "%s", "user must be a string");
  } else if ((v = json_object_get(out->root, "encoding_format")) != NULL &&
             !(json_is_string(v) && (strcmp(json_string_value(v), "float") == 0 ||
                                     strcmp(json_string_value(v), "base64") == 0))) {
    st = bad(err, "encoding_format", "%s", "encoding_format must be \"float\" or \"base64\"");
  } else if ((v = json_object_get(out->root, "dimensions")) != NULL &&
             (!json_is_integer(v) || json_integer_value(v) < 1 ||
              json_integer_value(v) > (json_int_t)hidden)) {
    tl_srv_error_set(err, 400, NULL, "dimensions", "invalid_value",
                     "dimensions must be an integer in 1..%u (the model's width)", hidden);
    st = TL_ERR_INVALID_ARGUMENT;
  } else {
    v = json_object_get(out->root, "encoding_format");
    out->base64 = v != NULL && strcmp(json_string_value(v), "base64") == 0;
    if ((v = json_object_get(out->root, "dimensions")) != NULL)
      out->dims = (uint32_t)json_integer_value(v);
    st = read_input(json_object_get(out->root, "input"), vocab, out, err);
  }
done:
  if (st != TL_OK) tl_srv_embed_request_free(out);
  return st;
}

void tl_srv_embed_request_free(tl_srv_embed_request *r) {
  for (size_t i = 0; r->inputs != NULL && i < r->n; i++) free(r->inputs[i].ids);
  free(r->inputs);
  json_decref(r->root);
  memset(r, 0, sizeof *r);
}

/* RFC 4648 base64 of n bytes (with padding), NUL-terminated. */
static char *base64(const uint8_t *b, size_t n) {
  static const char digits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
  if (out == NULL) return NULL;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t w = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) |
                 (i + 2 < n ? b[i + 2] : 0);
    *o++ = digits[w >> 18];
    *o++ = digits[(w >> 12) & 63];
    *o++ = i + 1 < n ? digits[(w >> 6) & 63] : '=';
    *o++ = i + 2 < n ? digits[w & 63] : '=';
  }
  *o = '\0';
  return out;
}

json_t *tl_srv_embed_item(size_t index, const float *v, uint32_t dims, bool b64) {
  json_t *e;
  if (b64) {
    uint8_t *bytes = malloc((size_t)dims * 4);
    char *text = NULL;
    for (uint32_t i = 0; bytes != NULL && i < dims; i++) {
      uint32_t u;
      memcpy(&u, &v[i], 4);
      for (int k = 0; k < 4; k++) bytes[4 * i + k] = (uint8_t)(u >> (8 * k));
    }
    text = bytes != NULL ? base64(bytes, (size_t)dims * 4) : NULL;
    free(bytes);
    e = text != NULL ? json_string(text) : NULL;
    free(text);
  } else {
    e = json_array();
    for (uint32_t i = 0; e != NULL && i < dims; i++)
      if (json_array_append_new(e, json_real(v[i])) != 0) {
        json_decref(e);
        e = NULL;
      }
  }
  return e != NULL ? json_pack("{s:s,s:I,s:o}", "object", "embedding", "index",
                               (json_int_t)index, "embedding", e)
                   : NULL;
}
