/* A conversation (JSON bytes: {"messages": [...], ...}) through an
 * artifact's chat template on the native host: the rendered prompt bytes
 * and who inserted what. Shared by render, run and chat. */
#ifndef TL_NATIVE_CHAT_RENDER_H
#define TL_NATIVE_CHAT_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "tmpl/tmpl.h"

typedef struct tl_render_out {
  uint8_t *text; /* malloc */
  size_t len;
  tl_tmpl_ownership own;
} tl_render_out;

/* Why rendering failed, for the caller's error report. */
typedef struct tl_render_error {
  /* "json" (the conversation is not JSON: line and column set), "input"
   * (a malformed conversation: bad_message set or SIZE_MAX), or the
   * template error kind ("raised", "undefined", ...). */
  const char *kind;
  size_t line, column, bad_message;
  char message[512];
} tl_render_error;

/* TL_OK with out filled, or the failure status (TL_ERR_TEMPLATE_RAISED
 * for the template's raise_exception) with e filled. */
tl_status tl_native_render(const tl_native_model *m, const uint8_t *conv,
                           size_t conv_len, tl_render_out *out,
                           tl_render_error *e);
void tl_render_out_free(tl_render_out *out);

#endif
