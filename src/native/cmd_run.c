/* tinylm run: one generation, streamed, with a receipt (docs/generation.md).
 * --prompt is raw text completion (tokenized as given, no template);
 * --messages goes through the chat template with add_generation_prompt. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat_render.h"
#include "cli.h"
#include "encoder.h"
#include "file.h"
#include "gen/generate.h"
#include "math/detmath.h"
#include "receipt.h"
#include "run_common.h"
#include "session.h"

static const char usage_text[] =
    "usage: tinylm run MODEL.slm (--prompt S | --prompt-file F | --messages CONV.json)\n"
    "           [-n N] [--temperature T] [--top-k K] [--top-p P] [--min-p M]\n"
    "           [--repeat-penalty R] [--repeat-window W] [--seed S]\n"
    "           [--stop STR]... [--receipt FILE] [--logprobs K] [--json]\n"
    "           [--ctx N] [--preflight] [--mem-budget MB] [--progress] [--force]\n"
    "  --prompt-file F  the prompt's bytes from a file (- for standard input)\n"
    "  -n N             at most N new tokens (1..2^32-1; -1: until EOS, a stop\n"
    "                   string or the context is full); default 64\n"
    "  --temperature T  0 (greedy) or 2^-128..1.8e308;  --top-p P, --min-p M  0..1\n"
    "  --repeat-penalty R  2^-64..2^64;  --top-k K, --repeat-window W  0 = off\n"
    "  --seed S         0..2^64-1 (default 0);  --logprobs K  0..20 alternatives\n"
    "  --ctx N          context tokens (default: prompt + N, or the model's\n"
    "                   context capped at 4096 with -n -1)\n"
    "  sampling flags not given come from the artifact's generation defaults\n"
    "  (the checkpoint's generation_config.json), else greedy\n"
    "  --preflight      print the memory plan and exit (JSON with --json)\n"
    "  --mem-budget MB  refuse a plan over MB megabytes before allocating\n"
    "  --progress       prefill progress on stderr even when it is not a terminal\n"
    "  --force          replace an existing --receipt file (never MODEL or the\n"
    "                   prompt's file)\n" TL_LANE_USAGE;

static void print_plan(const tl_session *s, bool json) {
  const tl_memory_plan *p = &s->plan;
  if (json) {
    json_t *doc = json_pack(
        "{s:I,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I}}", "context",
        (json_int_t)s->context, "plan_bytes", "weights", (json_int_t)p->weights,
        "tokenizer", (json_int_t)p->tokenizer, "kv_cache",
        (json_int_t)p->kv_cache, "scratch", (json_int_t)p->scratch, "logits",
        (json_int_t)p->logits, "sampler", (json_int_t)p->sampler, "total",
        (json_int_t)p->total);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    json_decref(doc);
  } else {
    char text[512];
    tl_memory_plan_text(p, text, sizeof text);
    printf("memory plan for %u tokens of context: %s\n", s->context, text);
  }
}

int tl_cmd_run(int argc, char **argv) {
  tl_run_options o;
  tl_session s;
  tl_encoder enc = {0};
  tl_render_out rendered = {0};
  const uint8_t *prompt_bytes = NULL;
  size_t prompt_len = 0, n_prompt = 0, bad = 0;
  tl_file_view conv = {0}; /* --messages or --prompt-file */
  char err[1024];
  tl_status st;
  int rc;
  rc = tl_run_parse(argc, argv, usage_text, &o);
  if (rc >= 0) return rc;
  if ((o.prompt != NULL) + (o.prompt_file != NULL) + (o.messages != NULL) != 1)
    return tl_cli_usage(o.json, "exactly one of --prompt, --prompt-file and "
                        "--messages\n%s", usage_text);
  if (o.system != NULL || o.receipt_dir != NULL)
    return tl_cli_usage(o.json, "--system and --receipt-dir are chat options\n%s", usage_text);
  /* Before any work: a refused --receipt must not cost a generation. */
  st = tl_run_receipt_check(&o, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(o.json, st, "%s", err);
  st = tl_session_open(&s, o.model, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(o.json, st, "%s", err);
  st = tl_session_lane(&s, &o.lane, err, sizeof err);
  if (st != TL_OK) {
    rc = tl_cli_fail(o.json, st, "%s", err);
    goto done;
  }
  /* The prompt first: its length sizes the context. */
  if (o.messages != NULL) {
    tl_render_error re;
    st = tl_file_open_view(o.messages, &conv, err, sizeof err);
    if (st == TL_OK) {
      st = tl_native_render(&s.model, conv.data, conv.len, TL_RENDER_FOR_REPLY,
                            &rendered, &re);
      if (st != TL_OK) {
        rc = tl_render_fail(o.json, st, o.messages, &re);
        goto done;
      }
    }
    prompt_bytes = rendered.text;
    prompt_len = rendered.len;
  } else if (o.prompt_file != NULL) {
    st = tl_file_open_view(o.prompt_file, &conv, err, sizeof err);
    prompt_bytes = conv.data;
    prompt_len = conv.len;
  } else {
    prompt_bytes = (const uint8_t *)o.prompt;
    prompt_len = strlen(o.prompt);
  }
  if (st == TL_OK) {
    enc.tok = s.model.tok;
    st = tl_encoder_run(&enc, prompt_bytes, prompt_len, &n_prompt, &bad);
    if (st != TL_OK) snprintf(err, sizeof err, "the prompt is not valid UTF-8 at byte %zu", bad);
  }
  if (st == TL_OK && n_prompt == 0) {
    st = TL_ERR_INVALID_ARGUMENT;
    snprintf(err, sizeof err, "the prompt is empty");
  }
  if (st == TL_OK) {
    /* The context: --ctx, else the prompt plus -n, else (-n -1) the
     * session's default (the model's, capped). */
    uint64_t want = (uint64_t)n_prompt + o.max_new;
    uint32_t ctx = o.context ? o.context
                   : o.max_new ? (uint32_t)(want < UINT32_MAX ? want : UINT32_MAX)
                               : 0;
    if (ctx != 0 && want > ctx) {
      st = TL_ERR_CONTEXT_EXCEEDED;
      snprintf(err, sizeof err, "prompt (%zu tokens) + -n %u exceed --ctx %u (refused: no truncation)",
               n_prompt, o.max_new, ctx);
    } else {
      st = tl_session_plan(&s, ctx, 0, err, sizeof err);
    }
  }
  if (st == TL_OK && o.preflight) {
    print_plan(&s, o.json);
    rc = TL_EXIT_OK;
    goto done;
  }
  if (st == TL_OK) st = tl_session_allocate(&s, o.mem_budget, err, sizeof err);
  if (st != TL_OK) {
    rc = tl_cli_fail(o.json, st, "%s", err);
    goto done;
  }
  rc = tl_run_generate(&s, &o, o.messages ? "messages" : "text",
                       o.messages && rendered.own.add_generation_prompt, prompt_bytes,
                       prompt_len, enc.ids, n_prompt, 0, stdout, NULL);
done:
  tl_session_close(&s);
  tl_encoder_free(&enc);
  tl_render_out_free(&rendered);
  tl_file_close_view(&conv);
  return rc;
}
