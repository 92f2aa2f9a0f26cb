/* Also built into the wasm32 API modules (docs/web.md, Modules): use only
 * the C library web/wasm/hosted provides (no jansson, files or threads). */
#include "chat_render.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "tmpl/tmpl_section.h"

/* Working memory for one rendering: the parsed conversation and the values
 * the template makes. Both are bounded by the input size (docs/json.md,
 * docs/template.md), so the arena is sized from it. */
#define RENDER_ARENA_FACTOR 64
#ifndef RENDER_ARENA_EXTRA /* the fuzz target takes less, for speed */
#define RENDER_ARENA_EXTRA (64u << 20)
#endif

static bool is_string(const tl_json_value *v) {
  return v != NULL && v->type == TL_JSON_STRING;
}

/* Text from the user's file for an error message: its first 32 bytes at
 * most, whole UTF-8 characters only (the JSON reader validated it),
 * control characters as '?'. */
static void quote(const tl_json_value *s, char *out, size_t cap) {
  const unsigned char *p = (const unsigned char *)s->u.str.ptr;
  size_t n = 0, i = 0;
  while (i < s->u.str.len) {
    size_t k = p[i] < 0x80 ? 1 : p[i] < 0xE0 ? 2 : p[i] < 0xF0 ? 3 : 4;
    if (i + k > 32 || n + k >= cap) break;
    for (size_t j = 0; j < k; j++, i++)
      out[n++] = p[i] < 0x20 || p[i] == 0x7f ? '?' : (char)p[i];
  }
  out[n] = '\0';
}

static tl_status bad(tl_render_error *e, size_t message, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));
static tl_status bad(tl_render_error *e, size_t message, const char *fmt,
                     ...) {
  va_list ap;
  e->kind = "input";
  e->bad_message = message;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return TL_ERR_INVALID_ARGUMENT;
}

/* One entry of an assistant's tool_calls: {"function": {"name", "arguments"}}
 * (OpenAI's shape) or {"name", "arguments"}. */
static bool tool_call_ok(const tl_json_value *call) {
  const tl_json_value *fn, *args;
  if (call->type != TL_JSON_OBJECT) return false;
  fn = tl_json_get(call, "function", 8);
  if (fn != NULL) {
    if (fn->type != TL_JSON_OBJECT) return false;
    call = fn;
  }
  args = tl_json_get(call, "arguments", 9);
  return is_string(tl_json_get(call, "name", 4)) && args != NULL &&
         (args->type == TL_JSON_STRING || args->type == TL_JSON_OBJECT);
}

tl_status tl_conversation_check(const tl_json_value *conv, tl_render_error *e) {
  static const char *const roles[] = {"system", "user", "assistant", "tool"};
  const tl_json_value *msgs;
  memset(e, 0, sizeof *e);
  e->bad_message = SIZE_MAX;
  if (conv->type != TL_JSON_OBJECT)
    return bad(e, SIZE_MAX, "the conversation must be a JSON object {\"messages\": [...]}");
  msgs = tl_json_get(conv, "messages", 8);
  if (msgs == NULL || msgs->type != TL_JSON_ARRAY)
    return bad(e, SIZE_MAX, "no \"messages\" list");
  if (msgs->u.arr.n == 0) return bad(e, SIZE_MAX, "no messages");
  for (size_t i = 0; i < msgs->u.arr.n; i++) {
    const tl_json_value *m = &msgs->u.arr.items[i], *role, *calls;
    size_t r = 0;
    char shown[40];
    if (m->type != TL_JSON_OBJECT)
      return bad(e, i, "message %zu is not an object {\"role\": ..., \"content\": ...}", i);
    role = tl_json_get(m, "role", 4);
    if (role == NULL) return bad(e, i, "message %zu has no role", i);
    if (!is_string(role)) return bad(e, i, "message %zu: the role must be a string", i);
    while (r < 4 && !(strlen(roles[r]) == role->u.str.len &&
                      memcmp(roles[r], role->u.str.ptr, role->u.str.len) == 0))
      r++;
    if (r == 4) {
      quote(role, shown, sizeof shown);
      return bad(e, i, "message %zu: unknown role '%s' (system, user, assistant or tool)", i,
                 shown);
    }
    if (tl_json_get(m, "content", 7) == NULL)
      return bad(e, i, "message %zu has no content", i);
    if (!is_string(tl_json_get(m, "content", 7)))
      return bad(e, i, "message %zu: the content must be a string", i);
    calls = tl_json_get(m, "tool_calls", 10);
    if (calls != NULL && r != 2)
      return bad(e, i, "message %zu: only an assistant message has tool_calls", i);
    if (calls != NULL && calls->type != TL_JSON_ARRAY)
      return bad(e, i, "message %zu: tool_calls must be a list", i);
    for (size_t k = 0; calls != NULL && k < calls->u.arr.n; k++)
      if (!tool_call_ok(&calls->u.arr.items[k]))
        return bad(e, i,
                   "message %zu: tool call %zu needs a string \"name\" and "
                   "\"arguments\" (a string or an object)",
                   i, k);
  }
  return TL_OK;
}

tl_status tl_native_render(const tl_native_model *m, const uint8_t *conv,
                           size_t conv_len, int mode, tl_render_out *out,
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
  if (mode == TL_RENDER_FOR_REPLY) {
    st = tl_conversation_check(conv_value, e);
    if (st != TL_OK) goto done;
  }
  st = tl_tmpl_chat_vars(&m->tmpl, conv_value, &arena, &vars, &why,
                         &e->bad_message);
  if (st != TL_OK) {
    char where[48] = "";
    if (e->bad_message != SIZE_MAX)
      snprintf(where, sizeof where, "messages[%zu]: ", e->bad_message);
    e->kind = "input";
    snprintf(e->message, sizeof e->message, "%s%s", where, why ? why : "bad input");
    goto done;
  }
  /* A reply needs the generation prompt unless the file says otherwise;
   * tl_tmpl_chat_vars supplied transformers' false when it is absent. */
  if (mode == TL_RENDER_FOR_REPLY &&
      tl_json_get(conv_value, "add_generation_prompt", 21) == NULL) {
    for (size_t i = 0; i < vars->u.obj.n; i++) {
      tl_json_member *mb = &vars->u.obj.members[i];
      if (mb->key_len == 21 && memcmp(mb->key, "add_generation_prompt", 21) == 0)
        mb->value.u.b = true;
    }
  }
  memset(&terr, 0, sizeof terr);
  terr.kind = TL_TMPL_ERR_MEMORY; /* if no attempt gets its buffer */
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
