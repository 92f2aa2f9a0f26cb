/* tinylm render: a conversation through the artifact's chat template,
 * giving the exact prompt bytes, their token ids and who inserted what. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "encoder.h"
#include "file.h"
#include "model.h"

static const char usage_text[] =
    "usage: tinylm render MODEL.slm --messages CONV.json [--json]\n"
    "  CONV.json: {\"messages\": [...], \"tools\": [...], "
    "\"add_generation_prompt\": true, \"enable_thinking\": false, ...}\n"
    "  (the keyword names of transformers' apply_chat_template)\n";

/* Working memory for one rendering: the parsed conversation and the values
 * the template makes. Both are bounded by the input size (docs/json.md,
 * docs/template.md), so the arena is sized from it. */
#define RENDER_ARENA_FACTOR 64
#define RENDER_ARENA_EXTRA (64u << 20)

static json_t *ownership_json(const tl_tmpl_ownership *o) {
  return json_pack(
      "{s:b, s:b, s:I, s:I, s:b, s:I, s:b, s:I}", "add_generation_prompt",
      o->add_generation_prompt, "generation_prefix_is_suffix", o->gen_is_suffix,
      "generation_prefix_offset", (json_int_t)o->gen_offset,
      "generation_prefix_len", (json_int_t)o->gen_len, "bos_at_start",
      o->bos_at_start, "bos_count", (json_int_t)o->bos_count, "eos_at_end",
      o->eos_at_end, "eos_count", (json_int_t)o->eos_count);
}

int tl_cmd_render(int argc, char **argv) {
  const char *model = NULL, *conv_path = NULL, *why = NULL;
  bool json = false;
  tl_native_model m;
  tl_file_view conv = {0};
  tl_arena arena;
  void *mem = NULL;
  uint8_t *out = NULL;
  size_t arena_len, out_len = 0, cap, n_ids = 0, bad = 0, bad_message;
  tl_json_value *conv_value, *vars;
  tl_json_error jerr;
  tl_json_limits jl = tl_json_limits_default();
  tl_tmpl_limits limits = tl_tmpl_limits_default();
  tl_tmpl_ownership own;
  tl_tmpl_error terr;
  tl_encoder enc = {0};
  char err[1024];
  tl_status st;
  int rc = TL_EXIT_OK;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--messages") == 0 && i + 1 < argc) {
      conv_path = argv[++i];
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i], usage_text);
    } else if (model == NULL) {
      model = argv[i];
    } else {
      return tl_cli_usage(json, "one MODEL.slm only\n%s", usage_text);
    }
  }
  if (model == NULL || conv_path == NULL)
    return tl_cli_usage(json, "MODEL.slm and --messages CONV.json\n%s",
                        usage_text);
  st = tl_native_model_open(model, &m, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  if (!m.has_template) {
    rc = tl_cli_fail(json, TL_ERR_INVALID_MODEL, "%s: has no chat template",
                     model);
    goto done;
  }
  st = tl_file_open_view(conv_path, &conv, err, sizeof err);
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
    goto done;
  }
  arena_len = conv.len > (SIZE_MAX - RENDER_ARENA_EXTRA) / RENDER_ARENA_FACTOR
                  ? 0
                  : conv.len * RENDER_ARENA_FACTOR + RENDER_ARENA_EXTRA;
  mem = arena_len ? malloc(arena_len) : NULL;
  if (mem == NULL) {
    rc = tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "%s: too large to render",
                     conv_path);
    goto done;
  }
  tl_arena_init(&arena, mem, arena_len);
  st = tl_json_parse(conv.data, conv.len, &jl, &arena, &conv_value, &jerr);
  if (st != TL_OK) {
    rc = tl_cli_fail_with(json, st,
                          json_pack("{s:I, s:I}", "line", (json_int_t)jerr.line,
                                    "column", (json_int_t)jerr.column),
                          "%s:%zu:%zu: %s", conv_path, jerr.line, jerr.column,
                          jerr.reason ? jerr.reason : "invalid JSON");
    goto done;
  }
  st =
      tl_tmpl_chat_vars(&m.tmpl, conv_value, &arena, &vars, &why, &bad_message);
  if (st != TL_OK) {
    char where[48] = "";
    if (bad_message != SIZE_MAX)
      snprintf(where, sizeof where, "messages[%zu]: ", bad_message);
    rc = tl_cli_fail_with(
        json, st,
        json_pack("{s:s}", "kind", tl_tmpl_error_kind_name(TL_TMPL_ERR_INPUT)),
        "%s: %s%s", conv_path, where, why ? why : "bad input");
    goto done;
  }
  cap = 1 << 16;
  for (int attempt = 0; attempt < 2; attempt++) {
    free(out);
    out = malloc(cap);
    if (out == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      break;
    }
    st = tl_tmpl_render(&m.tmpl.program, vars, &limits, &arena, out, cap,
                        &out_len, &own, &terr);
    if (!(st == TL_ERR_BOUNDS && terr.kind == TL_TMPL_ERR_BUFFER)) break;
    cap = out_len;
  }
  if (st != TL_OK) {
    tl_status shown =
        terr.kind == TL_TMPL_ERR_RAISED ? TL_ERR_TEMPLATE_RAISED : st;
    rc = tl_cli_fail_with(
        json, shown,
        json_pack("{s:s, s:s%}", "kind", tl_tmpl_error_kind_name(terr.kind),
                  "message", terr.message, terr.message_len),
        "%s%s%.*s",
        terr.kind == TL_TMPL_ERR_RAISED ? ""
                                        : tl_tmpl_error_kind_name(terr.kind),
        terr.kind == TL_TMPL_ERR_RAISED ? "" : ": ", (int)terr.message_len,
        terr.message);
    goto done;
  }
  enc.tok = m.tok;
  st = tl_encoder_run(&enc, out, out_len, &n_ids, &bad);
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "tokenizing the rendered prompt failed");
    goto done;
  }
  if (json) {
    json_t *ids = json_array();
    char *text;
    for (size_t i = 0; i < n_ids; i++)
      json_array_append_new(ids, json_integer(enc.ids[i]));
    json_t *doc =
        json_pack("{s:s%, s:o, s:o}", "text", (const char *)out, out_len, "ids",
                  ids, "ownership", ownership_json(&own));
    text = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (text == NULL) {
      rc = tl_cli_fail(json, TL_ERR_INTERNAL_INVARIANT,
                       "could not encode the result as JSON");
    } else {
      puts(text);
    }
    free(text);
    json_decref(doc);
  } else {
    fwrite(out, 1, out_len, stdout);
  }
done:
  tl_encoder_free(&enc);
  free(out);
  free(mem);
  tl_file_close_view(&conv);
  tl_native_model_close(&m);
  return rc;
}
