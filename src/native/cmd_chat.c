/* tinylm chat: an interactive multi-turn conversation (docs/generation.md
 * §Chat). Each turn renders the whole conversation through the chat
 * template, tokenizes it, and reuses the KV cache for the longest exact
 * token prefix it shares with what the cache holds; the rest is computed.
 * Reuse is decided on tokens, never assumed per turn: Qwen3's template
 * drops earlier turns' reasoning, so the shared prefix can end before the
 * previous reply. Commands: /reset, /system TEXT, /save FILE, /load FILE,
 * /think on|off, /quit. Ctrl-C stops a reply at the next token; the turn
 * is then dropped from the conversation. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_render.h"
#include "cli.h"
#include "encoder.h"
#include "file.h"
#include "gen/generate.h"
#include "run_common.h"
#include "session.h"

static const char usage_text[] =
    "usage: tinylm chat MODEL.slm [-n N] [--temperature T] [--top-k K]\n"
    "           [--top-p P] [--min-p M] [--repeat-penalty R] [--seed S]\n"
    "           [--stop STR]... [--ctx N] [--mem-budget MB]\n"
    "  then type messages; commands: /reset, /system TEXT, /save FILE,\n"
    "  /load FILE, /think on|off, /quit\n";

typedef struct chat {
  tl_session s;
  tl_run_options o;
  json_t *messages;
  char *system;
  bool think;
  uint32_t *cached; /* the ids whose K/V the cache holds, [0, s.cache.len) */
  size_t cached_cap;
} chat;

/* The turn index of the draws (DESIGN.md §7): the number of assistant
 * replies the conversation holds, so a dropped turn, /reset and /load
 * leave the sequence as if the dropped turns never happened. */
static uint32_t turn_index(const chat *c) {
  uint32_t n = 0;
  size_t i;
  json_t *m;
  json_array_foreach(c->messages, i, m) {
    const char *role = json_string_value(json_object_get(m, "role"));
    n += role != NULL && strcmp(role, "assistant") == 0;
  }
  return n;
}

static json_t *conversation(const chat *c) {
  json_t *msgs = json_array();
  size_t i;
  json_t *m;
  if (c->system != NULL)
    json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content", c->system));
  json_array_foreach(c->messages, i, m) json_array_append(msgs, m);
  return json_pack("{s:o,s:b,s:b}", "messages", msgs, "add_generation_prompt", 1,
                   "enable_thinking", c->think);
}

static size_t common_prefix(const uint32_t *a, size_t na, const uint32_t *b,
                            size_t nb) {
  size_t n = 0;
  while (n < na && n < nb && a[n] == b[n]) n++;
  return n;
}

/* One user turn. Returns false when the turn was dropped. */
static bool turn(chat *c, const char *text) {
  json_t *conv;
  char *bytes;
  tl_render_out rendered = {0};
  tl_render_error re;
  tl_encoder enc = {0};
  tl_turn_out out = {0};
  size_t n_ids = 0, bad = 0, reuse;
  bool kept = false;
  json_array_append_new(c->messages, json_pack("{s:s,s:s}", "role", "user", "content", text));
  conv = conversation(c);
  bytes = json_dumps(conv, JSON_COMPACT);
  json_decref(conv);
  if (bytes == NULL ||
      tl_native_render(&c->s.model, (const uint8_t *)bytes, strlen(bytes), &rendered, &re) != TL_OK) {
    fprintf(stderr, "error: the template refused the conversation: %s\n", re.message);
    goto drop;
  }
  enc.tok = c->s.model.tok;
  if (tl_encoder_run(&enc, rendered.text, rendered.len, &n_ids, &bad) != TL_OK) goto drop;
  if ((uint64_t)n_ids + c->o.max_new > c->s.context) {
    fprintf(stderr,
            "error: context_exceeded: the conversation (%zu tokens) plus -n %u "
            "does not fit --ctx %u; /reset or /save and start over (nothing is "
            "truncated)\n", n_ids, c->o.max_new, c->s.context);
    goto drop;
  }
  reuse = common_prefix(enc.ids, n_ids, c->cached, c->s.cache.len);
  if (reuse == n_ids) reuse--; /* at least one token is fed for logits */
  c->s.cache.len = (uint32_t)reuse;
  if (!c->o.json && isatty(fileno(stderr)))
    fprintf(stderr, "[%zu prompt tokens, %zu reused from the cache]\n", n_ids, reuse);
  if (tl_run_generate(&c->s, &c->o, "messages", rendered.text, rendered.len,
                      enc.ids + reuse, n_ids - reuse, turn_index(c), stdout,
                      &out) != TL_EXIT_OK) {
    /* The cache may hold rows past the reused prefix that `cached` does
     * not name (no ids come back from a failed turn): keep the prefix. */
    c->s.cache.len = (uint32_t)reuse;
    goto drop;
  }
  /* The cache now holds the prompt and every generated token that was fed. */
  if (c->cached_cap < (size_t)c->s.cache.len) {
    free(c->cached);
    c->cached_cap = c->s.context;
    c->cached = malloc(c->cached_cap * sizeof *c->cached);
    if (c->cached == NULL) { /* nothing can be reused: start empty */
      c->cached_cap = 0;
      c->s.cache.len = 0;
    }
  }
  if (c->cached != NULL) {
    size_t from_prompt = n_ids < c->s.cache.len ? n_ids : c->s.cache.len;
    memcpy(c->cached, enc.ids, from_prompt * sizeof *enc.ids);
    memcpy(c->cached + from_prompt, out.ids, (c->s.cache.len - from_prompt) * sizeof *out.ids);
  }
  if (out.stop == TL_STOP_CANCELLED) {
    fprintf(stderr, "[cancelled: the turn is dropped]\n");
    goto drop;
  }
  /* Random-weight models emit bytes that are not UTF-8; the conversation
   * (a JSON document) keeps U+FFFD for those. */
  json_array_append_new(c->messages,
                        json_pack("{s:s,s:o}", "role", "assistant", "content",
                                  tl_json_lossy_string((const uint8_t *)out.visible,
                                                       out.visible_len)));
  kept = true;
  goto done;
drop:
  json_array_remove(c->messages, json_array_size(c->messages) - 1);
done:
  tl_turn_out_free(&out);
  tl_encoder_free(&enc);
  tl_render_out_free(&rendered);
  free(bytes);
  return kept;
}

static void command(chat *c, char *line) {
  char *arg = strchr(line, ' ');
  if (arg != NULL) *arg++ = '\0';
  if (strcmp(line, "/reset") == 0) {
    json_array_clear(c->messages);
    fprintf(stderr, "[conversation cleared]\n");
  } else if (strcmp(line, "/system") == 0) {
    free(c->system);
    c->system = arg && *arg ? strdup(arg) : NULL;
    fprintf(stderr, "[system message %s]\n", c->system ? "set" : "cleared");
  } else if (strcmp(line, "/think") == 0 && arg && (!strcmp(arg, "on") || !strcmp(arg, "off"))) {
    c->think = strcmp(arg, "on") == 0;
    fprintf(stderr, "[enable_thinking %s]\n", c->think ? "on" : "off");
  } else if (strcmp(line, "/save") == 0 && arg && *arg) {
    json_t *conv = conversation(c);
    char *text = json_dumps(conv, JSON_INDENT(2));
    char err[512];
    if (text == NULL || tl_file_write_atomic(arg, text, strlen(text), err, sizeof err) != TL_OK)
      fprintf(stderr, "error: io: cannot save to %s\n", arg);
    else
      fprintf(stderr, "[saved %zu messages to %s]\n", json_array_size(c->messages), arg);
    free(text);
    json_decref(conv);
  } else if (strcmp(line, "/load") == 0 && arg && *arg) {
    json_error_t je;
    json_t *doc = json_load_file(arg, JSON_REJECT_DUPLICATES, &je), *msgs;
    msgs = json_object_get(doc, "messages");
    if (!json_is_array(msgs)) {
      fprintf(stderr, "error: invalid_argument: %s: no \"messages\" array\n", arg);
    } else {
      json_array_clear(c->messages);
      free(c->system);
      c->system = NULL;
      for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *content = json_string_value(json_object_get(m, "content"));
        if (i == 0 && role && strcmp(role, "system") == 0)
          c->system = strdup(content ? content : "");
        else
          json_array_append(c->messages, m);
      }
      fprintf(stderr, "[loaded %zu messages from %s]\n", json_array_size(msgs), arg);
    }
    json_decref(doc);
  } else {
    fprintf(stderr, "commands: /reset, /system TEXT, /save FILE, /load FILE, /think on|off, /quit\n");
  }
}

static void on_prompt_sigint(int sig) { (void)sig; }

int tl_cmd_chat(int argc, char **argv) {
  struct sigaction sa;
  chat c;
  char *line = NULL, err[1024];
  size_t cap = 0;
  bool tty = isatty(fileno(stdin));
  tl_status st;
  int rc;
  memset(&c, 0, sizeof c);
  rc = tl_run_parse(argc, argv, usage_text, &c.o);
  if (rc >= 0) return rc;
  if (c.o.prompt || c.o.messages || c.o.receipt || c.o.logprobs || c.o.json)
    return tl_cli_usage(false, "chat takes no --prompt/--messages/--receipt/--logprobs/--json\n%s", usage_text);
  st = tl_session_open(&c.s, c.o.model, err, sizeof err);
  if (st == TL_OK) st = tl_session_plan(&c.s, c.o.context, 0, err, sizeof err);
  if (st == TL_OK) st = tl_session_allocate(&c.s, c.o.mem_budget, err, sizeof err);
  if (st != TL_OK) {
    tl_session_close(&c.s);
    return tl_cli_fail(false, st, "%s", err);
  }
  c.messages = json_array();
  fprintf(stderr, "tinylm chat: %s (%u tokens of context). /quit to leave.\n", c.o.model, c.s.context);
  /* Ctrl-C at the prompt discards the line being typed (a reply installs
   * its own handler, which stops the reply). */
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_prompt_sigint;
  sigaction(SIGINT, &sa, NULL);
  for (;;) {
    ssize_t got;
    if (tty) {
      fputs("> ", stdout);
      fflush(stdout);
    }
    errno = 0;
    got = getline(&line, &cap, stdin);
    if (got < 0 && errno == EINTR) {
      clearerr(stdin);
      fputc('\n', stdout);
      continue;
    }
    if (got < 0) break;
    while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
    if (got == 0) continue;
    if (strcmp(line, "/quit") == 0) break;
    if (line[0] == '/') command(&c, line);
    else turn(&c, line);
  }
  free(line);
  free(c.system);
  free(c.cached);
  json_decref(c.messages);
  tl_session_close(&c.s);
  return TL_EXIT_OK;
}
