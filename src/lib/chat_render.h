/* A conversation (JSON bytes: {"messages": [...], ...}) through an
 * artifact's chat template on the native host: the rendered prompt bytes
 * and who inserted what. Shared by render, run and chat. */
#ifndef TL_NATIVE_CHAT_RENDER_H
#define TL_NATIVE_CHAT_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
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

/* How a conversation is rendered. */
enum {
  /* As transformers' apply_chat_template does (tinylm render):
   * add_generation_prompt defaults to false and the template judges the
   * messages (docs/template.md §Input). */
  TL_RENDER_AS_TRANSFORMERS = 0,
  /* For a reply (run --messages, chat): the conversation must pass
   * tl_conversation_check, and add_generation_prompt defaults to true
   * (the file's own value wins when present). */
  TL_RENDER_FOR_REPLY = 1
};

/* What a conversation must be before a model replies to it, checked
 * before the template sees it so that problems are named in the user's
 * terms, never as a template engine's internal error: at least one
 * message; each an object with a "role" among system, user, assistant
 * and tool and a string "content"; an assistant's "tool_calls" a list of
 * calls, each naming a string "name" and "arguments" (a string or an
 * object), directly or under "function". TL_OK, or
 * TL_ERR_INVALID_ARGUMENT with e (kind "input") saying what is wrong. */
tl_status tl_conversation_check(const tl_json_value *conv, tl_render_error *e);

/* TL_OK with out filled, or the failure status (TL_ERR_TEMPLATE_RAISED
 * for the template's raise_exception) with e filled. mode is one of
 * TL_RENDER_*. */
tl_status tl_native_render(const tl_native_model *m, const uint8_t *conv,
                           size_t conv_len, int mode, tl_render_out *out,
                           tl_render_error *e);
void tl_render_out_free(tl_render_out *out);

/* Reports a failed rendering of the conversation read from path as every
 * command does (JSON syntax errors as path:line:column, malformed input
 * naming the message, template errors by kind); returns the exit status.
 * Defined with tinylm render (cmd_render.c). */
int tl_render_fail(bool json, tl_status st, const char *path,
                   const tl_render_error *e);

#endif
