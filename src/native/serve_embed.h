/* POST /v1/embeddings' request and response (docs/server.md,
 * Embeddings), in OpenAI's shape: input a string, an array of strings,
 * an array of token ids or an array of such arrays; encoding_format
 * "float" or "base64" (little-endian float32 bytes); dimensions (the
 * first N components, renormalised); model; user (ignored). */
#ifndef TL_NATIVE_SERVE_EMBED_H
#define TL_NATIVE_SERVE_EMBED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve_request.h"

#define TL_SRV_MAX_EMBED_INPUTS 2048 /* OpenAI's limit per request */

typedef struct tl_srv_embed_input {
  const char *text; /* a string input (in the request's JSON), or NULL */
  size_t len;
  uint32_t *ids; /* ids given as such (malloc), each < vocab */
  size_t n_ids;
} tl_srv_embed_input;

typedef struct tl_srv_embed_request {
  json_t *root; /* holds the texts */
  tl_srv_embed_input *inputs;
  size_t n;
  bool base64;
  uint32_t dims; /* 1..hidden; hidden when not given */
} tl_srv_embed_request;

/* TL_OK, or 400 naming the param: an unknown field, an empty or mistyped
 * input (an empty string or id array included), an id not below vocab,
 * more than TL_SRV_MAX_EMBED_INPUTS inputs, dimensions outside
 * 1..hidden, an encoding_format other than float or base64. */
tl_status tl_srv_embed_parse(const uint8_t *body, size_t len, uint32_t vocab, uint32_t hidden,
                             tl_srv_embed_request *out, tl_srv_error *err);
void tl_srv_embed_request_free(tl_srv_embed_request *r);

/* data[i]: {"object": "embedding", "index": i, "embedding": v[0..dims)
 * as numbers, or their float32 bytes in base64}. */
json_t *tl_srv_embed_item(size_t index, const float *v, uint32_t dims, bool base64);

#endif
