#include "template_eos.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "encoder.h"
#include "json/json.h"
#include "tmpl/tmpl.h"
#include "tmpl/tmpl_section.h"
#include "tok/tokenizer.h"

static const char probe[] =
    "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}, "
    "{\"role\": \"assistant\", \"content\": \"" TL_TEMPLATE_PROBE_REPLY
    "\"}]}";

/* The last occurrence of needle in hay[0..len), or NULL. */
static const uint8_t *last_match(const uint8_t *hay, size_t len,
                                 const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = len >= n ? len - n + 1 : 0; i-- > 0;)
    if (memcmp(hay + i, needle, n) == 0) return hay + i;
  return NULL;
}

tl_status tl_template_turn_end(const uint8_t *tok_section, size_t tok_len,
                               const uint8_t *tmpl_section, size_t tmpl_len,
                               uint32_t *turn_end, char *err, size_t err_cap) {
  enum { OUT_CAP = 1 << 16, EXTRA = 8 << 20 };
  const tl_tokenizer *tok;
  tl_tmpl_section tmpl;
  tl_tmpl_limits limits = tl_tmpl_limits_default();
  tl_tmpl_error terr;
  tl_json_limits jl = tl_json_limits_default();
  tl_json_error jerr;
  tl_json_value *conv, *vars;
  tl_encoder enc = {0};
  tl_arena arena;
  const char *why = NULL;
  const uint8_t *at;
  uint8_t *mem = NULL, *out = NULL;
  size_t bound = 0, out_len = 0, n_ids = 0, bad = 0, bad_message;
  tl_status st = tl_tok_load_arena_bound(tok_section, tok_len, &bound);
  if (st == TL_OK && bound > SIZE_MAX - EXTRA) st = TL_ERR_INTEGER_OVERFLOW;
  if (st == TL_OK) {
    mem = malloc(bound + EXTRA);
    out = malloc(OUT_CAP);
    if (mem == NULL || out == NULL) st = TL_ERR_OUT_OF_MEMORY;
  }
  if (st == TL_OK) st = tl_arena_init(&arena, mem, bound + EXTRA);
  if (st == TL_OK) st = tl_tok_load(tok_section, tok_len, &arena, &tok);
  if (st == TL_OK) st = tl_tmpl_section_load(tmpl_section, tmpl_len, &arena, &tmpl);
  if (st == TL_OK)
    st = tl_json_parse((const uint8_t *)probe, sizeof probe - 1, &jl, &arena,
                       &conv, &jerr);
  if (st == TL_OK)
    st = tl_tmpl_chat_vars(&tmpl, conv, &arena, &vars, &why, &bad_message);
  if (st != TL_OK) {
    snprintf(err, err_cap, "template EOS probe: cannot set up (%s)",
             why ? why : tl_status_name(st));
    goto done;
  }
  st = tl_tmpl_render(&tmpl.program, vars, &limits, &arena, out, OUT_CAP,
                      &out_len, NULL, &terr);
  if (st != TL_OK) {
    snprintf(err, err_cap, "template EOS probe: rendering failed: %s: %.*s",
             tl_tmpl_error_kind_name(terr.kind), (int)terr.message_len,
             terr.message);
    goto done;
  }
  at = last_match(out, out_len, TL_TEMPLATE_PROBE_REPLY);
  if (at == NULL) {
    st = TL_ERR_INVALID_MODEL;
    snprintf(err, err_cap,
             "template EOS probe: the chat template does not render an "
             "assistant reply verbatim, so its turn terminator cannot be "
             "checked against the EOS set");
    goto done;
  }
  at += strlen(TL_TEMPLATE_PROBE_REPLY);
  enc.tok = tok;
  st = tl_encoder_run(&enc, at, (size_t)(out + out_len - at), &n_ids, &bad);
  if (st == TL_OK && n_ids == 0) {
    st = TL_ERR_INVALID_MODEL;
    snprintf(err, err_cap,
             "template EOS probe: the chat template emits nothing after an "
             "assistant reply (no turn terminator)");
  } else if (st != TL_OK) {
    snprintf(err, err_cap, "template EOS probe: tokenizing failed (%s)",
             tl_status_name(st));
  } else {
    *turn_end = enc.ids[0];
  }
done:
  tl_encoder_free(&enc);
  free(mem);
  free(out);
  return st;
}
