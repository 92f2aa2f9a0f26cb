/* tinylm run: one generation, streamed, with a receipt (docs/generation.md),
 * through the public API (include/tinylm.h, docs/api.md) like any embedder.
 * --prompt (and --prompt-file) is asked as one user message through the
 * model's chat template, as --messages with that one message would be;
 * --raw completes the text as given, no template. --messages goes through
 * the chat template with add_generation_prompt. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "file.h"
#include "run_common.h"
#include "session.h"
#include "tinylm.h"
#include "utf8.h"

static const char usage_text[] =
    "usage: tinylm run MODEL.slm (--prompt S | --prompt-file F | --messages CONV.json)\n"
    "           [--raw] [--think | --no-think] [--hide-thinking] [-n N] [--temperature T]\n"
    "           [--top-k K] [--top-p P] [--min-p M] [--repeat-penalty R] [--repeat-window W]\n"
    "           [--seed S] [--stop STR]... [--receipt FILE] [--logprobs K] [--json]\n"
    "           [--frequency-penalty F] [--presence-penalty P]\n"
    "           [--ctx N] [--preflight] [--mem-budget MB] [--progress] [--force]\n"
    "           [--json-object | --json-schema FILE | --grammar FILE | --regex TEXT]\n"
    "           [--think-budget N]\n"
    "  --prompt S       S as one user message through the model's chat template\n"
    "                   (a reply, as --messages with that one message gives)\n"
    "  --prompt-file F  the same with a file's bytes (- for standard input)\n"
    "  --raw            plain completion: the prompt's text as given, no template\n"
    "  --think, --no-think  the template's enable_thinking (default: the\n"
    "                   template's own; Qwen3 thinks); a --messages file's own\n"
    "                   enable_thinking must agree\n" TL_RUN_THINKING_USAGE
    "  -n N             at most N new tokens (1..2^32-1); default and -1: until\n"
    "                   EOS, a stop string or the context is full\n"
    "  --temperature T  0 (greedy) or 2^-128..1.8e308;  --top-p P, --min-p M  0..1\n"
    "  --repeat-penalty R  2^-64..2^64 over the last W ids of prompt and reply\n"
    "                   (--repeat-window W, default 64 with R; 0 = off);  --top-k K  0 = off\n"
    "  --frequency-penalty F, --presence-penalty P  -2..2 (OpenAI's; 0 = off)\n"
    "  --seed S         0..2^64-1 (default: a fresh one, named in the summary on\n"
    "                   stderr, in the JSON with --json);  --logprobs K  0..20\n"
    "  --ctx N          context tokens (default: prompt + N with -n N, else the\n"
    "                   model's context capped at 4096)\n"
    "  sampling flags not given come from the artifact's generation defaults\n"
    "  (the checkpoint's generation_config.json), else greedy\n"
    "  --preflight      print the memory plan and exit (JSON with --json)\n"
    "  --mem-budget MB  refuse a plan over MB megabytes before allocating\n"
    "  --progress       prefill progress on stderr even when it is not a terminal\n"
    "  --force          replace an existing --receipt file (never MODEL or the\n"
    "                   prompt's file)\n" TL_RUN_GRAMMAR_USAGE TL_LANE_USAGE;

/* --prompt's text as a conversation of one user message, with
 * enable_thinking when a flag asked for it: the document run --messages
 * would read. NULL when out of memory (the text is valid UTF-8). */
static char *user_conversation(const uint8_t *text, size_t len, int think) {
  json_t *doc = json_pack("{s:[{s:s,s:s%}]}", "messages", "role", "user", "content",
                          (const char *)text, len);
  char *out = NULL;
  if (doc != NULL && (think == TL_RUN_THINK_DEFAULT ||
                      json_object_set_new(doc, "enable_thinking",
                                          json_boolean(think == TL_RUN_THINK_ON)) == 0))
    out = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  return out;
}

/* --think/--no-think on a --messages file (rendered once already, so a
 * JSON object the template accepts): a file that sets enable_thinking
 * must agree with the flag (as Qwen3's template reads it: only false
 * turns thinking off), a usage error otherwise, since the flag does not
 * silently rewrite the conversation; a file without it gets the flag's,
 * inserted as the object's first member (the rest of the bytes as they
 * are). Returns -1 to go on with *out (malloc'd; NULL: the file as it is),
 * else the exit status. */
static int messages_thinking(const tl_run_options *o, const uint8_t *conv, size_t len,
                             char **out, size_t *out_len) {
  json_error_t je = {0};
  json_t *doc = json_loadb((const char *)conv, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
  json_t *given = json_object_get(doc, "enable_thinking");
  bool on = o->think == TL_RUN_THINK_ON, empty = json_object_size(doc) == 0;
  bool is_object = json_is_object(doc), has = given != NULL, file_on = !json_is_false(given);
  const char *flag = on ? "--think" : "--no-think";
  char member[32];
  size_t brace = 0, n;
  json_decref(doc);
  *out = NULL;
  if (!is_object) /* the renderer read it: not expected */
    return tl_cli_fail(o->json, TL_ERR_INVALID_ARGUMENT,
                       "%s: cannot read it to set enable_thinking (%s)", o->messages, je.text);
  if (has) {
    if (file_on == on) return -1;
    return tl_cli_usage(o->json, "%s, but %s sets \"enable_thinking\": %s; the flag does not "
                        "override the conversation's own switch (drop one)",
                        flag, o->messages, file_on ? "true" : "false");
  }
  while (conv[brace] != '{') brace++; /* whitespace, then the object */
  n = (size_t)snprintf(member, sizeof member, "\"enable_thinking\":%s%s", on ? "true" : "false",
                       empty ? "" : ",");
  *out = malloc(len + n);
  if (*out == NULL) return tl_cli_fail(o->json, TL_ERR_OUT_OF_MEMORY, "out of memory");
  memcpy(*out, conv, brace + 1);
  memcpy(*out + brace + 1, member, n);
  memcpy(*out + brace + 1 + n, conv + brace + 1, len - brace - 1);
  *out_len = len + n;
  return -1;
}

static void print_plan(const tl_preflight_plan *p, bool json) {
  if (json) {
    json_t *doc = json_pack(
        "{s:I,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I}}", "context", (json_int_t)p->context,
        "plan_bytes", "weights", (json_int_t)p->weights, "tokenizer", (json_int_t)p->tokenizer,
        "kv_cache", (json_int_t)p->kv_cache, "scratch", (json_int_t)p->scratch, "logits",
        (json_int_t)p->logits, "sampler", (json_int_t)p->sampler, "total",
        (json_int_t)p->total);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    json_decref(doc);
  } else {
    tl_memory_plan plan = {p->weights, p->tokenizer, p->kv_cache, p->scratch,
                           p->logits,  p->sampler,   p->total};
    char text[512];
    tl_memory_plan_text(&plan, text, sizeof text);
    printf("memory plan for %u tokens of context: %s\n", p->context, text);
  }
}

int tl_cmd_run(int argc, char **argv) {
  tl_run_options o;
  tl_model_handle model = TL_NO_HANDLE;
  tl_session_handle session = TL_NO_HANDLE;
  tl_session_options so;
  tl_generation_params gp = {0};
  uint8_t *rendered = NULL;
  char *doc = NULL; /* the conversation run renders, when not the file's bytes */
  const uint8_t *prompt_bytes = NULL;
  size_t prompt_len = 0, n_prompt = 0, doc_len = 0;
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
  if (o.raw && o.messages != NULL)
    return tl_cli_usage(o.json, "--raw is for --prompt and --prompt-file (a --messages "
                        "conversation is always rendered by the chat template)");
  if (o.raw && o.hide_thinking)
    return tl_cli_usage(o.json, "--hide-thinking is for a chat reply; --raw is plain completion");
  if (o.raw && o.think != TL_RUN_THINK_DEFAULT)
    return tl_cli_usage(o.json, "--think and --no-think set the chat template's "
                        "enable_thinking; --raw uses no template");
  /* Before any work: a refused --receipt must not cost a generation. */
  st = tl_run_receipt_check(&o, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(o.json, st, "%s", err);
  if (tl_api_init(TL_ABI_VERSION) != TL_OK) return tl_run_api_fail(o.json, TL_NO_HANDLE);
  /* A grammar the engine refuses is refused before the model loads. */
  if ((rc = tl_run_grammar(&o)) >= 0) return rc;
  if (tl_cli_model_open(o.model, &model) != TL_OK) {
    if (o.grammar != TL_NO_HANDLE) tl_grammar_free(o.grammar);
    return tl_run_api_fail(o.json, TL_NO_HANDLE);
  }
  tl_run_session_options(&o, &so);
  /* The prompt first: its length sizes the context. */
  if (o.messages != NULL) {
    st = tl_file_open_view(o.messages, &conv, err, sizeof err);
  } else if (o.prompt_file != NULL) {
    st = tl_file_open_view(o.prompt_file, &conv, err, sizeof err);
    prompt_bytes = conv.data;
    prompt_len = conv.len;
  } else {
    prompt_bytes = (const uint8_t *)o.prompt;
    prompt_len = strlen(o.prompt);
  }
  if (st == TL_OK && o.messages == NULL && !o.raw) {
    /* One user message through the template, as --messages would give. */
    size_t bad = 0;
    if (tl_utf8_validate(prompt_bytes, prompt_len, &bad) != TL_OK) {
      st = TL_ERR_INVALID_UTF8;
      snprintf(err, sizeof err, "the prompt is not valid UTF-8 at byte %zu", bad);
    } else if ((doc = user_conversation(prompt_bytes, prompt_len, o.think)) == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      snprintf(err, sizeof err, "out of memory");
    } else {
      doc_len = strlen(doc);
    }
  }
  if (st == TL_OK && (o.messages != NULL || doc != NULL)) {
    const char *what = o.messages ? o.messages : o.prompt_file ? o.prompt_file : "--prompt";
    rc = tl_run_render(o.json, model, doc ? (const uint8_t *)doc : conv.data,
                       doc ? doc_len : conv.len, what, &rendered, &prompt_len);
    if (rc >= 0) goto done;
    if (o.messages != NULL && o.think != TL_RUN_THINK_DEFAULT) {
      /* The file rendered as it is (its problems named in its own terms);
       * now with the flag's switch. */
      rc = messages_thinking(&o, conv.data, conv.len, &doc, &doc_len);
      if (rc >= 0) goto done;
      if (doc != NULL) {
        free(rendered);
        rc = tl_run_render(o.json, model, (const uint8_t *)doc, doc_len, o.messages, &rendered,
                           &prompt_len);
        if (rc >= 0) goto done;
      }
    }
    gp.messages_json = doc ? (const void *)doc : conv.data;
    gp.messages_len = doc ? doc_len : conv.len;
    prompt_bytes = rendered;
  }
  if (st == TL_OK) {
    if (gp.messages_json == NULL) {
      gp.text = prompt_bytes;
      gp.text_len = prompt_len;
    }
    st = tl_model_encode(model, prompt_bytes, prompt_len, NULL, 0, &n_prompt);
    if (st == TL_ERR_BOUNDS) st = TL_OK; /* only the count is needed */
    if (st != TL_OK) {
      tl_error e;
      tl_error_detail(model, &e);
      if (st == TL_ERR_INVALID_UTF8)
        snprintf(err, sizeof err, "the prompt is not valid UTF-8 at byte %llu",
                 (unsigned long long)e.index);
      else
        snprintf(err, sizeof err, "%s", e.message);
    }
  }
  if (st == TL_OK && n_prompt == 0) {
    st = TL_ERR_INVALID_ARGUMENT;
    snprintf(err, sizeof err, "the prompt is empty");
  }
  if (st == TL_OK) {
    /* The context: --ctx, else the prompt plus -n (at most the model's
     * max_position_embeddings), else (no -n, or -n -1) the session's
     * default (the model's, capped). */
    uint64_t want = (uint64_t)n_prompt + o.max_new;
    uint32_t max = 0;
    so.context = o.context;
    if (o.context != 0) {
      if (o.max_new != 0 && want > o.context) {
        st = TL_ERR_CONTEXT_EXCEEDED;
        snprintf(err, sizeof err,
                 "prompt (%zu tokens) + -n %u = %llu tokens exceed --ctx %u "
                 "(refused: no truncation)",
                 n_prompt, o.max_new, (unsigned long long)want, o.context);
      }
    } else if (o.max_new != 0) {
      st = tl_api_model_max_context(model, &max);
      if (st != TL_OK) {
        rc = tl_run_api_fail(o.json, model);
        goto done;
      }
      if (want > max) {
        st = TL_ERR_CONTEXT_EXCEEDED;
        snprintf(err, sizeof err,
                 "prompt (%zu tokens) + -n %u = %llu tokens exceed the model's "
                 "context of %u tokens (max_position_embeddings; no --ctx given, "
                 "so the context is the prompt plus -n; refused: no truncation)",
                 n_prompt, o.max_new, (unsigned long long)want, max);
      } else {
        so.context = (uint32_t)want;
      }
    } else {
      /* No cap: the session's default context must hold the prompt and
       * one token more (said here, not after loading the weights). */
      tl_preflight_plan plan;
      if (tl_model_preflight(model, &so, &plan) != TL_OK) {
        rc = tl_run_api_fail(o.json, model);
        goto done;
      }
      if (n_prompt >= plan.context) {
        st = TL_ERR_CONTEXT_EXCEEDED;
        snprintf(err, sizeof err,
                 "the prompt (%zu tokens) leaves no room in the context of %u tokens "
                 "(no --ctx or -n given: the model's, capped at 4096); give --ctx N "
                 "(refused: no truncation)", n_prompt, plan.context);
      }
    }
  }
  if (st != TL_OK) {
    rc = tl_cli_fail(o.json, st, "%s", err);
    goto done;
  }
  if (o.preflight) {
    tl_preflight_plan plan;
    if (tl_model_preflight(model, &so, &plan) != TL_OK) {
      rc = tl_run_api_fail(o.json, model);
    } else {
      print_plan(&plan, o.json);
      rc = TL_EXIT_OK;
    }
    goto done;
  }
  if (tl_cli_session_new(model, &so, &session) != TL_OK) {
    rc = tl_run_api_fail(o.json, model);
    goto done;
  }
  tl_run_generation_params(&o, &gp);
  rc = tl_run_generation(&o, model, session, &gp, stdout, NULL);
  /* Ctrl-C: the reply so far, its receipt and summary, then the process
   * ends as killed by SIGINT (130), never a plain success. */
  if (tl_run_interrupted()) tl_cli_exit_by_signal(SIGINT);
done:
  if (session != TL_NO_HANDLE) tl_session_free(session);
  if (o.grammar != TL_NO_HANDLE) tl_grammar_free(o.grammar);
  tl_model_close(model);
  free(rendered);
  free(doc);
  tl_file_close_view(&conv);
  return rc;
}
