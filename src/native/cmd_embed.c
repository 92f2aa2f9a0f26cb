/* tinylm embed: one text's embedding from an embedding model (docs/cli.md;
 * the vector /v1/embeddings gives, embed.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "embed.h"
#include "encoder.h"
#include "lane.h"
#include "session.h"

static const char usage_text[] =
    "usage: tinylm embed MODEL.slm --text T [--dimensions N] [--ctx N] [lane flags]\n"
    "  prints {\"model\", \"dimensions\", \"prompt_tokens\", \"embedding\": [...]}: the\n"
    "  text's vector from an embedding model (docs/server.md, Embeddings)\n"
    "  --dimensions N  the first N components, renormalised (default: all)\n"
    "  --ctx N         the longest input in tokens, the appended one included\n"
    "                  (default: max_position_embeddings, at most 4096)\n" TL_LANE_USAGE;

int tl_cmd_embed(int argc, char **argv) {
  const char *model = NULL, *text = NULL, *dims_arg = NULL, *ctx_arg = NULL;
  tl_lane_options lane = tl_lane_defaults();
  bool json = tl_cli_wants_json(argc, argv);
  tl_session s;
  tl_encoder enc = {0};
  tl_qwen3_fault fault;
  uint32_t dims = 0, ctx = 0;
  size_t n = 0, bad = 0;
  float *v = NULL;
  char err[1024] = "";
  tl_status st;
  int rc, lf;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    rc = -1;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
    } else if (strcmp(a, "--text") == 0) {
      rc = tl_cli_value(json, argc, argv, &i, &text);
    } else if (strcmp(a, "--dimensions") == 0) {
      rc = tl_cli_value(json, argc, argv, &i, &dims_arg);
    } else if (strcmp(a, "--ctx") == 0) {
      rc = tl_cli_value(json, argc, argv, &i, &ctx_arg);
    } else if ((lf = tl_lane_flag(json, argc, argv, &i, &lane)) != 0) {
      rc = lf; /* -1: taken */
    } else if (a[0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", a, usage_text);
    } else if (model == NULL) {
      model = a;
    } else {
      return tl_cli_usage(json, "one MODEL.slm only\n%s", usage_text);
    }
    if (rc >= 0) return rc;
  }
  if (model == NULL || text == NULL)
    return tl_cli_usage(json, "MODEL.slm and --text are required\n%s", usage_text);
  if (ctx_arg != NULL && (rc = tl_cli_flag_u32(json, "--ctx", ctx_arg, 2, UINT32_MAX, &ctx)) >= 0)
    return rc;
  if ((st = tl_session_open(&s, model, err, sizeof err)) != TL_OK)
    return tl_cli_fail(json, st, "%s", err);
  if (!s.embedding) {
    tl_session_close(&s);
    return tl_cli_fail(json, TL_ERR_UNSUPPORTED_FEATURE,
                       "%s is not an embedding model (a Qwen3-Embedding checkpoint converted "
                       "by tinylm convert)",
                       model);
  }
  if (dims_arg != NULL &&
      (rc = tl_cli_flag_u32(json, "--dimensions", dims_arg, 1, s.qwen.cfg.hidden, &dims)) >= 0) {
    tl_session_close(&s);
    return rc;
  }
  if (dims == 0) dims = s.qwen.cfg.hidden;
  st = tl_session_lane(&s, &lane, err, sizeof err);
  if (st == TL_OK) st = tl_session_plan(&s, ctx, 0, err, sizeof err);
  if (st == TL_OK) st = tl_session_allocate(&s, 0, err, sizeof err);
  if (st == TL_OK) {
    enc.tok = s.model.tok;
    st = tl_encoder_run(&enc, (const uint8_t *)text, strlen(text), &n, &bad);
    if (st != TL_OK) snprintf(err, sizeof err, "--text: %s at byte %zu", tl_status_name(st), bad);
  }
  if (st == TL_OK && (v = malloc((size_t)s.qwen.cfg.hidden * sizeof *v)) == NULL)
    st = TL_ERR_OUT_OF_MEMORY;
  if (st == TL_OK) {
    st = tl_embed(&s.qwen, &s.cache, &s.arena, s.prefill_chunk, enc.ids, n, s.embed_append, dims,
                  v, &fault);
    if (st == TL_ERR_CONTEXT_EXCEEDED)
      snprintf(err, sizeof err, "the text has %zu tokens; with the appended one that passes "
               "the context of %u (--ctx)", n, s.context);
    else if (st != TL_OK)
      snprintf(err, sizeof err, "%s: the forward pass failed", model);
  }
  if (st == TL_OK) {
    json_t *a = json_array();
    for (uint32_t i = 0; a != NULL && i < dims; i++) json_array_append_new(a, json_real(v[i]));
    json_t *doc = json_pack("{s:s,s:I,s:I,s:o}", "model", model, "dimensions", (json_int_t)dims,
                            "prompt_tokens", (json_int_t)(n + 1), "embedding", a);
    char *out = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (out != NULL) printf("%s\n", out);
    else st = TL_ERR_OUT_OF_MEMORY;
    free(out);
    json_decref(doc);
  }
  free(v);
  tl_encoder_free(&enc);
  tl_session_close(&s);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err[0] ? err : tl_status_name(st));
  return TL_EXIT_OK;
}
