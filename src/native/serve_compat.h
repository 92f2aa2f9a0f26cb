/* The extension fields of other servers' requests (llama-server's,
 * ollama's, OpenAI's newer ones) that `tinylm serve` takes: each is
 * implemented, accepted as the no-op it is, accepted and ignored, or
 * refused, as docs/server.md ("Extension fields") lists. Run on the parsed
 * body before serve_request.c reads it: a field with a meaning here is
 * rewritten into the field that has it (n_predict -> max_tokens, ollama's
 * options.temperature -> temperature, format -> response_format), the
 * others are checked and removed, so the reader's closed list of fields
 * (and its checks of each) stays the one place a value is judged. */
#ifndef TL_NATIVE_SERVE_COMPAT_H
#define TL_NATIVE_SERVE_COMPAT_H

#include <jansson.h>
#include <stdbool.h>

#include "serve_request.h"

#define TL_SRV_COMPAT_MAX_MOVED 16

/* What the rewrite did, for the reader's result and its errors. */
typedef struct tl_srv_compat {
  struct {
    char from[48];  /* the client's field ("options.temperature") */
    const char *to; /* the field it became ("temperature") */
  } moved[TL_SRV_COMPAT_MAX_MOVED];
  size_t n_moved;
  bool unlimited;       /* n_predict, max_tokens or num_predict -1: no token limit */
  bool no_prompt_cache; /* cache_prompt false */
} tl_srv_compat;

/* Rewrites root (a chat's or a completion's body) in place. TL_OK, or
 * TL_ERR_INVALID_ARGUMENT with err a 400 naming the client's field: a
 * value asking for what tinylm does not do (typical_p 0.5) is
 * unsupported_value, two fields that say different things (n_predict 5
 * and max_tokens 6) invalid_value, an unknown key of options
 * unknown_parameter. */
tl_status tl_srv_compat_apply(tl_srv_kind kind, json_t *root, tl_srv_compat *cx,
                              tl_srv_error *err);

/* The request read from the rewritten body gets what only the rewrite
 * knows. */
void tl_srv_compat_finish(const tl_srv_compat *cx, tl_srv_request *r);

/* An error about a field the rewrite made names the client's field. */
void tl_srv_compat_blame(const tl_srv_compat *cx, tl_srv_error *err);

#endif
