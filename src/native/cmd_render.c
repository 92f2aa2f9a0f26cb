/* tinylm render: a conversation through the artifact's chat template,
 * giving the exact prompt bytes, their token ids and who inserted what. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "encoder.h"
#include "file.h"
#include "chat_render.h"
#include "model.h"

static const char usage_text[] =
    "usage: tinylm render MODEL.slm --messages CONV.json [--json]\n"
    "  CONV.json: {\"messages\": [...], \"tools\": [...], "
    "\"add_generation_prompt\": true, \"enable_thinking\": false, ...}\n"
    "  (the keyword names of transformers' apply_chat_template)\n";

static json_t *ownership_json(const tl_tmpl_ownership *o) {
  return json_pack(
      "{s:b, s:b, s:I, s:I, s:b, s:I, s:b, s:I}", "add_generation_prompt",
      o->add_generation_prompt, "generation_prefix_is_suffix", o->gen_is_suffix,
      "generation_prefix_offset", (json_int_t)o->gen_offset,
      "generation_prefix_len", (json_int_t)o->gen_len, "bos_at_start",
      o->bos_at_start, "bos_count", (json_int_t)o->bos_count, "eos_at_end",
      o->eos_at_end, "eos_count", (json_int_t)o->eos_count);
}

int tl_render_fail(bool json, tl_status st, const char *path,
                   const tl_render_error *e) {
  if (strcmp(e->kind, "json") == 0)
    return tl_cli_fail_with(json, st,
                            json_pack("{s:I, s:I}", "line", (json_int_t)e->line,
                                      "column", (json_int_t)e->column),
                            "%s:%zu:%zu: %s", path, e->line, e->column, e->message);
  if (strcmp(e->kind, "input") == 0) {
    json_t *extra = json_pack("{s:s}", "kind", "input");
    if (e->bad_message != SIZE_MAX)
      json_object_set_new(extra, "message_index", json_integer((json_int_t)e->bad_message));
    return tl_cli_fail_with(json, st, extra, "%s: %s", path, e->message);
  }
  /* The template's own raise_exception speaks for itself. */
  if (st == TL_ERR_TEMPLATE_RAISED)
    return tl_cli_fail_with(json, st,
                            json_pack("{s:s, s:s}", "kind", e->kind, "message", e->message),
                            "%s", e->message);
  return tl_cli_fail_with(json, st,
                          json_pack("{s:s, s:s}", "kind", e->kind, "message", e->message),
                          "%s: %s", e->kind, e->message);
}

int tl_cmd_render(int argc, char **argv) {
  const char *model = NULL, *conv_path = NULL;
  bool json = false;
  tl_native_model m;
  tl_file_view conv = {0};
  tl_render_out r = {0};
  tl_render_error re;
  const uint8_t *out = NULL;
  size_t out_len = 0, n_ids = 0, bad = 0;
  tl_tmpl_ownership own;
  tl_encoder enc = {0};
  char err[1024];
  tl_status st;
  int rc = TL_EXIT_OK;
  /* --json anywhere makes every usage error JSON. */
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--messages") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &conv_path);
      if (u >= 0) return u;
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
  st = tl_native_render(&m, conv.data, conv.len, TL_RENDER_AS_TRANSFORMERS, &r, &re);
  if (st != TL_OK) {
    rc = tl_render_fail(json, st, conv_path, &re);
    goto done;
  }
  out = r.text;
  out_len = r.len;
  own = r.own;
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
  tl_render_out_free(&r);
  tl_file_close_view(&conv);
  tl_native_model_close(&m);
  return rc;
}
