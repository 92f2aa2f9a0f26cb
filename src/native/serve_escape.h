/* --escape-special (docs/server.md, Security): special-token text typed
 * into a message's content (<|im_end|>, <|im_start|>) is tokenized as
 * ordinary text, while the chat template's own control tokens stay
 * special. Before rendering, each such text in a content is swapped for a
 * marker the template copies through; after rendering, the markers are
 * swapped back and their places become the tokenizer's plain ranges
 * (tl_tok_encode_plain). The rendered bytes are those without escaping. */
#ifndef TL_SERVE_ESCAPE_H
#define TL_SERVE_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

#include "tok/tokenizer.h"

/* The texts of a tokenizer's special tokens. */
typedef struct tl_srv_specials {
  size_t n;
  const uint8_t **text; /* the tokenizer's bytes */
  size_t *len;
} tl_srv_specials;

/* Collects them (malloc; TL_ERR_OUT_OF_MEMORY). */
tl_status tl_srv_specials_load(const tl_tokenizer *tok, tl_srv_specials *out);
void tl_srv_specials_free(tl_srv_specials *s);

/* conv (a conversation: {"messages": [{"content": str, ...}], ...}) with
 * every special text in a message's content swapped for its marker
 * (malloc'd JSON text in *out). TL_ERR_INVALID_ARGUMENT when conv already
 * holds U+10FFFD, which the markers are made of, or is not such JSON. */
tl_status tl_srv_escape_mark(const tl_srv_specials *s, const char *conv, size_t len, char **out,
                             size_t *out_len);

/* The rendering text[0..len) with each marker swapped back (*out, malloc),
 * and where each was (*plain, malloc; *n_plain of them, in order). */
tl_status tl_srv_escape_restore(const tl_srv_specials *s, const uint8_t *text, size_t len,
                                uint8_t **out, size_t *out_len, tl_tok_span **plain,
                                size_t *n_plain);

#endif
