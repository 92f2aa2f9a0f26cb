/* libFuzzer target for the chat-template runtime (src/core/tmpl).
 *
 * First byte even: the rest is a JSON object of template variables
 * (messages, tools, add_generation_prompt, ...) rendered through the real
 * Qwen3 template's IR (tmpl_qwen3_ir.h, kept current by the native test
 * tmpl_engine.qwen3_ir_header_is_current). First byte odd: the rest is IR
 * bytes, rendered over a fixed conversation. Either way: a status, never a
 * crash; output valid UTF-8 within its bounds; typed errors. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl/tmpl.h"
#include "tmpl_qwen3_ir.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static uint8_t arena_mem[1 << 22];

static void render(const tl_tmpl_program *p, const tl_json_value *v,
                   tl_arena *a) {
  static uint8_t out[1 << 16];
  size_t len = 0;
  tl_tmpl_limits lim = tl_tmpl_limits_default();
  lim.max_steps = 200000;
  tl_tmpl_error e;
  tl_tmpl_ownership own;
  tl_status st = tl_tmpl_render(p, v, &lim, a, out, sizeof out, &len, &own, &e);
  CHECK(st == TL_OK ? e.kind == TL_TMPL_ERR_NONE : e.kind != TL_TMPL_ERR_NONE);
  CHECK(memchr(e.message, '\0', sizeof e.message) != NULL);
  if (st == TL_OK) {
    CHECK(len <= sizeof out && tl_utf8_validate(out, len, NULL) == TL_OK);
    if (own.gen_is_suffix) CHECK(own.gen_offset + own.gen_len == len);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  tl_arena a;
  tl_arena_init(&a, arena_mem, sizeof arena_mem);
  tl_tmpl_program p;
  tl_json_value *v;
  tl_json_error je;
  if ((data[0] & 1) == 0) {
    CHECK(tl_tmpl_load(TMPL_QWEN3_IR, sizeof TMPL_QWEN3_IR, &a, &p, NULL) ==
          TL_OK);
    if (tl_json_parse(data + 1, size - 1, NULL, &a, &v, &je) != TL_OK) return 0;
    render(&p, v, &a);
    return 0;
  }
  tl_tmpl_load_error le;
  if (tl_tmpl_load(data + 1, size - 1, &a, &p, &le) != TL_OK) return 0;
  static const char vars[] =
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": "
      "\"tool\"}],"
      " \"tools\": [{\"a\": [1, 2.5, null]}], \"add_generation_prompt\": true,"
      " \"bos_token\": \"<s>\"}";
  CHECK(tl_json_parse((const uint8_t *)vars, sizeof vars - 1, NULL, &a, &v,
                      &je) == TL_OK);
  render(&p, v, &a);
  return 0;
}
