/* libFuzzer target for conversation files: the JSON that `run --messages`,
 * `render --messages` and chat's /load accept (src/lib/chat_render.c),
 * rendered through the real Qwen3 template's IR (tmpl_qwen3_ir.h). Per
 * input:
 *
 * 1. Both modes (as transformers, for a reply) give a typed status; a
 *    failure names its kind and a NUL-terminated message, JSON syntax
 *    errors a line and column; a rendering is valid UTF-8 whose
 *    generation prefix, when it ends the text, lies inside it.
 * 2. A conversation that passes the reply check never reaches a template
 *    engine error (undefined value, type error, ...): only the template's
 *    own raise_exception or a resource limit may stop it. This is what
 *    keeps such messages from users of run and chat.
 * 3. What chat keeps of an accepted file (jansson, as /load reads it) and
 *    writes back (/save) is accepted again: a saved conversation loads. */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The host's 64 MB of template working memory, under ASan, makes every
 * input cost tens of milliseconds; 4 MB still renders every seed (an
 * input that needs more stops with the "memory" limit, which is allowed). */
#define RENDER_ARENA_EXTRA (4u << 20)
#include "../../src/lib/chat_render.c"
#include "tmpl_qwen3_ir.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

/* Qwen3's special tokens as its tokenizer_config.json sets them. */
static const char special_tokens[] =
    "{\"eos_token\": \"<|im_end|>\", \"pad_token\": \"<|endoftext|>\"}";

static tl_native_model model;

static void init_model(void) {
  static uint8_t mem[1 << 20];
  static bool done;
  tl_json_value *tokens;
  tl_json_error je;
  if (done) return;
  CHECK(tl_arena_init(&model.arena, mem, sizeof mem) == TL_OK);
  CHECK(tl_tmpl_load(TMPL_QWEN3_IR, sizeof TMPL_QWEN3_IR, &model.arena,
                     &model.tmpl.program, NULL) == TL_OK);
  CHECK(tl_json_parse((const uint8_t *)special_tokens, sizeof special_tokens - 1,
                      NULL, &model.arena, &tokens, &je) == TL_OK);
  model.tmpl.special_tokens = tokens;
  model.has_template = true;
  done = true;
}

/* Whether the bytes are a JSON conversation that passes the reply check. */
static bool passes_check(const uint8_t *d, size_t n) {
  size_t cap = n * RENDER_ARENA_FACTOR + (1u << 20);
  void *mem = malloc(cap);
  tl_arena a;
  tl_json_value *v;
  tl_json_error je;
  tl_render_error e;
  bool ok;
  CHECK(mem != NULL);
  tl_arena_init(&a, mem, cap);
  ok = tl_json_parse(d, n, NULL, &a, &v, &je) == TL_OK && tl_conversation_check(v, &e) == TL_OK;
  free(mem);
  return ok;
}

/* The only ways a checked conversation may fail to render: the template's
 * raise_exception, a resource limit, or continue_final_message (refused by
 * name, not implemented). */
static bool allowed_after_check(tl_status st, const char *kind) {
  static const char *const limits[] = {"step_limit", "output_limit", "vars_limit", "memory"};
  if (st == TL_ERR_TEMPLATE_RAISED || st == TL_ERR_OUT_OF_MEMORY ||
      st == TL_ERR_UNSUPPORTED_FEATURE)
    return true;
  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
    if (strcmp(kind, limits[i]) == 0) return true;
  return false;
}

static tl_status render(const uint8_t *d, size_t n, int mode, tl_render_error *e) {
  tl_render_out out;
  tl_status st = tl_native_render(&model, d, n, mode, &out, e);
  if (st == TL_OK) {
    CHECK(tl_utf8_validate(out.text, out.len, NULL) == TL_OK);
    if (out.own.gen_is_suffix) CHECK(out.own.gen_offset + out.own.gen_len == out.len);
  } else {
    CHECK(e->kind != NULL && memchr(e->message, '\0', sizeof e->message) != NULL);
    if (strcmp(e->kind, "json") == 0) CHECK(e->line >= 1 && e->column >= 1);
    CHECK(out.text == NULL);
  }
  tl_render_out_free(&out);
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tl_render_error e;
  tl_status st;
  json_t *doc;
  json_error_t je;
  char *saved;
  init_model();
  render(data, size, TL_RENDER_AS_TRANSFORMERS, &e);
  st = render(data, size, TL_RENDER_FOR_REPLY, &e);
  if (st != TL_OK) {
    if (passes_check(data, size)) CHECK(allowed_after_check(st, e.kind));
    return 0;
  }
  doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
  if (doc == NULL) return 0; /* chat refuses it with jansson's line:column */
  saved = json_dumps(doc, JSON_INDENT(2));
  CHECK(saved != NULL);
  CHECK(render((const uint8_t *)saved, strlen(saved), TL_RENDER_FOR_REPLY, &e) == TL_OK);
  free(saved);
  json_decref(doc);
  return 0;
}
