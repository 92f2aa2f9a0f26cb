/* libFuzzer target for the chat-template compiler (src/tools/tmpl): any
 * bytes as template source. The compiler must return a status (never
 * crash, leak or overrun); on success the IR must pass the core loader,
 * compile deterministically, and render over a small fixed conversation
 * with a typed outcome.
 *
 * The compiler is converter-side code; the generic fuzz rule links only the
 * portable core, so its sources are included here (one translation unit). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/tools/tmpl/tmpl_compile.c"
#include "../../src/tools/tmpl/tmpl_lex.c"
#include "../../src/tools/tmpl/tmpl_parse.c"
#include "tmpl/tmpl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static uint8_t arena_mem[1 << 22];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  uint8_t *ir = NULL, *ir2 = NULL;
  size_t n = 0, n2 = 0;
  char err[256];
  tl_status st =
      tl_tmpl_compile((const char *)data, size, &ir, &n, err, sizeof err);
  if (st != TL_OK) {
    CHECK(ir == NULL);
    CHECK(memchr(err, '\0', sizeof err) != NULL);
    return 0;
  }
  CHECK(tl_tmpl_compile((const char *)data, size, &ir2, &n2, err, sizeof err) ==
        TL_OK);
  CHECK(n == n2 && memcmp(ir, ir2, n) == 0);
  free(ir2);
  tl_arena a;
  tl_arena_init(&a, arena_mem, sizeof arena_mem);
  tl_tmpl_program p;
  CHECK(tl_tmpl_load(ir, n, &a, &p, NULL) == TL_OK);
  static const char vars[] =
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"},"
      " {\"role\": \"assistant\", \"content\": \"<think>x</think>y\","
      " \"tool_calls\": [{\"function\": {\"name\": \"f\", \"arguments\": "
      "{\"a\": 1.5}}}]}],"
      " \"tools\": null, \"add_generation_prompt\": true, \"x\": [1, \"a\", "
      "{}]}";
  tl_json_value *v;
  tl_json_error je;
  CHECK(tl_json_parse((const uint8_t *)vars, sizeof vars - 1, NULL, &a, &v,
                      &je) == TL_OK);
  static uint8_t out[1 << 16];
  size_t len;
  tl_tmpl_limits lim = tl_tmpl_limits_default();
  lim.max_steps = 100000;
  tl_tmpl_error e;
  tl_tmpl_ownership own;
  st = tl_tmpl_render(&p, v, &lim, &a, out, sizeof out, &len, &own, &e);
  CHECK(st == TL_OK ? e.kind == TL_TMPL_ERR_NONE : e.kind != TL_TMPL_ERR_NONE);
  if (st == TL_OK)
    CHECK(len <= sizeof out && tl_utf8_validate(out, len, NULL) == TL_OK);
  free(ir);
  return 0;
}
