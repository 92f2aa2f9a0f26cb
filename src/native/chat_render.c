#include "chat_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "tmpl/tmpl_section.h"

/* Working memory for one rendering: the parsed conversation and the values
 * the template makes. Both are bounded by the input size (docs/json.md,
 * docs/template.md), so the arena is sized from it. */
#define RENDER_ARENA_FACTOR 64
#define RENDER_ARENA_EXTRA (64u << 20)

tl_status tl_native_render(const tl_native_model *m, const uint8_t *conv,
                           size_t conv_len, tl_render_out *out,
                           tl_render_error *e) {
  tl_arena arena;
  tl_json_value *conv_value, *vars;
  tl_json_error jerr;
  tl_json_limits jl = tl_json_limits_default();
  tl_tmpl_limits limits = tl_tmpl_limits_default();
  tl_tmpl_error terr;
  const char *why = NULL;
  size_t arena_len, cap = 1 << 16;
  void *mem;
  tl_status st;
  memset(out, 0, sizeof *out);
  memset(e, 0, sizeof *e);
  e->bad_message = SIZE_MAX;
  if (!m->has_template) {
    e->kind = "input";
    snprintf(e->message, sizeof e->message, "the artifact has no chat template");
    return TL_ERR_INVALID_MODEL;
  }
  arena_len = conv_len > (SIZE_MAX - RENDER_ARENA_EXTRA) / RENDER_ARENA_FACTOR
                  ? 0
                  : conv_len * RENDER_ARENA_FACTOR + RENDER_ARENA_EXTRA;
  mem = arena_len ? malloc(arena_len) : NULL;
  if (mem == NULL) {
    e->kind = "input";
    snprintf(e->message, sizeof e->message, "too large to render");
    return TL_ERR_OUT_OF_MEMORY;
  }
  tl_arena_init(&arena, mem, arena_len);
  st = tl_json_parse(conv, conv_len, &jl, &arena, &conv_value, &jerr);
  if (st != TL_OK) {
    e->kind = "json";
    e->line = jerr.line;
    e->column = jerr.column;
    snprintf(e->message, sizeof e->message, "%s",
             jerr.reason ? jerr.reason : "invalid JSON");
    goto done;
  }
  st = tl_tmpl_chat_vars(&m->tmpl, conv_value, &arena, &vars, &why,
                         &e->bad_message);
  if (st != TL_OK) {
    e->kind = "input";
    snprintf(e->message, sizeof e->message, "%s", why ? why : "bad input");
    goto done;
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    free(out->text);
    out->text = malloc(cap);
    if (out->text == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      break;
    }
    st = tl_tmpl_render(&m->tmpl.program, vars, &limits, &arena, out->text,
                        cap, &out->len, &out->own, &terr);
    if (!(st == TL_ERR_BOUNDS && terr.kind == TL_TMPL_ERR_BUFFER)) break;
    cap = out->len;
  }
  if (st != TL_OK) {
    e->kind = tl_tmpl_error_kind_name(terr.kind);
    snprintf(e->message, sizeof e->message, "%.*s", (int)terr.message_len,
             terr.message);
    if (terr.kind == TL_TMPL_ERR_RAISED) st = TL_ERR_TEMPLATE_RAISED;
    tl_render_out_free(out);
  }
done:
  free(mem);
  return st;
}

void tl_render_out_free(tl_render_out *out) {
  free(out->text);
  out->text = NULL;
  out->len = 0;
}
