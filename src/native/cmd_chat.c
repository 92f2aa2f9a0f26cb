/* tinylm chat: an interactive multi-turn conversation (docs/generation.md
 * §Chat), through the public API (include/tinylm.h) like tinylm run. Each
 * turn renders the whole conversation through the chat template and
 * generates with TL_GENERATE_REUSE_PREFIX: the session reuses its KV cache
 * for the longest exact token prefix it shares with what the cache holds;
 * the rest is computed. Reuse is decided on tokens, never assumed per
 * turn: Qwen3's template drops earlier turns' reasoning, so the shared
 * prefix can end before the previous reply. Commands: /reset, /system TEXT, /save FILE, /load FILE,
 * /think [on|off], /quit. Ctrl-C stops a reply at the next token; the turn
 * is then dropped from the conversation. On a terminal, lines are read
 * through libedit (editing, history with the arrow keys); from a pipe,
 * plainly. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <histedit.h>
#include <jansson.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"
#include "model.h"
#include "run_common.h"
#include "tinylm.h"
#include "utf8.h"

static const char usage_text[] =
    "usage: tinylm chat MODEL.slm [-n N] [--think | --no-think] [--hide-thinking] [--system TEXT]\n"
    "           [--temperature T] [--top-k K] [--top-p P] [--min-p M] [--repeat-penalty R]\n"
    "           [--repeat-window W] [--frequency-penalty F] [--presence-penalty P]\n"
    "           [--seed S] [--stop STR]... [--ctx N] [--mem-budget MB]\n"
    "           [--receipt-dir DIR] [--force]\n"
    "           [--json-object | --json-schema FILE | --grammar FILE | --regex TEXT]\n"
    "           [--think-budget N]\n"
    "  -n N             at most N new tokens a reply (default and -1: until\n"
    "                   EOS, a stop string or the context is full)\n"
    "  --think, --no-think  the template's enable_thinking at the start\n"
    "                   (default on, Qwen3's own default; /think on|off changes it)\n"
    TL_RUN_THINKING_USAGE
    "  --system TEXT    the system message\n"
    "  --seed S         the session's seed (default: a fresh one, named in the\n"
    "                   banner; turns differ by their turn index)\n"
    "  --receipt-dir DIR  a receipt per reply, DIR/turn-0001.cbor, ...\n"
    "  --force          replace existing receipt files in DIR\n" TL_RUN_GRAMMAR_USAGE
    "                   (each reply keeps to the grammar)\n" TL_LANE_USAGE
    "  then type messages; commands: /reset, /system TEXT, /save FILE\n"
    "  (/save! FILE replaces an existing file), /load FILE, /think [on|off], /quit\n";

static const char commands_text[] =
    "commands: /reset, /system TEXT, /save FILE (/save! FILE replaces an existing\n"
    "file), /load FILE, /think [on|off], /quit\n";

typedef struct chat {
  tl_model_handle model;
  tl_session_handle session;
  uint32_t context; /* the session's, in tokens */
  tl_run_options o;
  json_t *messages; /* after the system message */
  json_t *system;   /* a string, or NULL */
  json_t *extra;    /* a loaded file's other members (tools, ...) */
  bool think;
  unsigned receipts; /* replies attempted: numbers the receipt files */
  bool receipt_missing; /* a turn under --receipt-dir got no receipt */
  bool model_lost; /* a reply failed with io: the model file changed */
} chat;

/* The highest N of the turn-NNNN.cbor files already in dir (0: none), so a
 * reused --receipt-dir continues the numbering instead of refusing every
 * turn. */
static unsigned last_receipt(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  unsigned last = 0;
  if (d == NULL) return 0;
  while ((e = readdir(d)) != NULL) {
    unsigned n;
    char tail[8];
    if (sscanf(e->d_name, "turn-%u.%7s", &n, tail) == 2 && strcmp(tail, "cbor") == 0 &&
        n > last && n < 100000000u)
      last = n;
  }
  closedir(d);
  return last;
}

/* The turn index of the draws (docs/architecture.md §7): the number of assistant
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

/* The conversation as /save writes it and a turn renders it. A chat asks
 * for replies: add_generation_prompt is true unless a loaded file set it. */
static json_t *conversation(const chat *c) {
  json_t *doc = c->extra ? json_deep_copy(c->extra) : json_object();
  json_t *msgs = json_array();
  size_t i;
  json_t *m;
  if (c->system != NULL)
    json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", "system", "content", c->system));
  json_array_foreach(c->messages, i, m) json_array_append(msgs, m);
  json_object_set_new(doc, "messages", msgs);
  if (json_object_get(doc, "add_generation_prompt") == NULL)
    json_object_set_new(doc, "add_generation_prompt", json_true());
  json_object_set_new(doc, "enable_thinking", json_boolean(c->think));
  return doc;
}

/* The next receipt's path under --receipt-dir, checked before the reply
 * is generated (an existing file is refused unless --force). */
static bool receipt_path(chat *c, char *path, size_t cap) {
  char err[1024];
  const char *inputs[1] = {c->o.model};
  int n = snprintf(path, cap, "%s/turn-%04u.cbor", c->o.receipt_dir, c->receipts + 1);
  if (n < 0 || (size_t)n >= cap) {
    fprintf(stderr, "error: invalid_argument: --receipt-dir %s: path too long\n",
            c->o.receipt_dir);
    return false;
  }
  if (tl_file_output_check(path, inputs, 1, c->o.force, NULL, err, sizeof err) != TL_OK) {
    fprintf(stderr, "error: invalid_argument: %s; the turn is dropped\n", err);
    return false;
  }
  return true;
}

/* One user turn. Returns false when the turn was dropped (the
 * conversation is then as it was). */
static bool turn(chat *c, const char *text, size_t len) {
  json_t *conv, *content = json_stringn(text, len);
  char *bytes = NULL, receipt[4096];
  uint8_t *rendered = NULL;
  uint32_t *ids = NULL;
  tl_generation_params gp = {0};
  tl_generation_handle gen = TL_NO_HANDLE;
  tl_generation_result r;
  tl_run_options o = c->o;
  size_t rendered_len = 0, n_ids = 0;
  uint32_t reuse = 0;
  bool kept = false;
  tl_status st;
  if (content == NULL) { /* the caller validated the line */
    fprintf(stderr, "error: out_of_memory: the line is not kept\n");
    return false;
  }
  json_array_append_new(c->messages, json_pack("{s:s,s:o}", "role", "user", "content", content));
  conv = conversation(c);
  bytes = conv ? json_dumps(conv, JSON_COMPACT) : NULL;
  json_decref(conv);
  if (bytes == NULL) {
    fprintf(stderr, "error: out_of_memory: the turn is dropped\n");
    goto drop;
  }
  if (tl_run_render(false, c->model, (const uint8_t *)bytes, strlen(bytes), "the conversation",
                    &rendered, &rendered_len) >= 0)
    goto drop;
  /* A token covers at least one byte: rendered_len ids suffice. */
  ids = malloc((rendered_len ? rendered_len : 1) * sizeof *ids);
  st = ids == NULL ? TL_ERR_OUT_OF_MEMORY
                   : tl_model_encode(c->model, rendered, rendered_len, ids, rendered_len, &n_ids);
  if (st != TL_OK) {
    fprintf(stderr, "error: %s: tokenizing the conversation failed\n", tl_status_name(st));
    goto drop;
  }
  if (o.max_new != 0 ? (uint64_t)n_ids + o.max_new > c->context : n_ids >= c->context) {
    char cap[32] = "", limit[96];
    if (o.max_new != 0) snprintf(cap, sizeof cap, " plus -n %u", o.max_new);
    /* The limit as it came: --ctx, or the default when none was given. */
    if (c->o.context != 0) snprintf(limit, sizeof limit, "--ctx %u", c->context);
    else
      snprintf(limit, sizeof limit, "the context of %u tokens (no --ctx given: the "
               "model's, capped at 4096)", c->context);
    fprintf(stderr,
            "error: context_exceeded: the conversation (%zu tokens)%s "
            "does not fit %s; /reset or /save and start over (nothing is "
            "truncated)\n", n_ids, cap, limit);
    goto drop;
  }
  if (o.receipt_dir != NULL) {
    if (!receipt_path(c, receipt, sizeof receipt)) {
      c->receipt_missing = true;
      goto drop;
    }
    o.receipt = receipt;
    c->receipts++;
  }
  if (tl_session_reuse(c->session, ids, n_ids, &reuse) != TL_OK) {
    tl_run_api_fail(false, c->session);
    goto drop;
  }
  if (isatty(fileno(stderr)))
    fprintf(stderr, "[%zu prompt tokens, %u reused from the cache]\n", n_ids, (unsigned)reuse);
  tl_run_generation_params(&o, &gp);
  gp.messages_json = bytes;
  gp.messages_len = strlen(bytes);
  gp.turn = turn_index(c);
  gp.flags |= TL_GENERATE_REUSE_PREFIX;
  if (tl_run_generation(&o, c->model, c->session, &gp, stdout, &gen) != TL_EXIT_OK ||
      tl_generation_result_get(gen, &r) != TL_OK) {
    /* exit status 1 at the end when a turn's receipt was not written */
    if (o.receipt != NULL && access(o.receipt, F_OK) != 0) c->receipt_missing = true;
    /* the model's file changed under the session (the error named it):
     * no later turn can run */
    c->model_lost = tl_api_model_changed(c->model);
    goto drop;
  }
  /* A cancelled reply is not kept; the session keeps what it computed. */
  if (strcmp(r.stop, "cancelled") == 0) {
    fprintf(stderr, "[cancelled: the turn is dropped]\n");
    goto drop;
  }
  /* Random-weight models emit bytes that are not UTF-8; the conversation
   * (a JSON document) keeps U+FFFD for those. */
  json_array_append_new(c->messages,
                        json_pack("{s:s,s:o}", "role", "assistant", "content",
                                  tl_json_lossy_string(r.text, r.text_len)));
  kept = true;
  goto done;
drop:
  json_array_remove(c->messages, json_array_size(c->messages) - 1);
done:
  if (gen != TL_NO_HANDLE) tl_generation_free(gen);
  free(ids);
  free(rendered);
  free(bytes);
  return kept;
}

/* /load: the file is rendered for a reply first, so a conversation that
 * every later turn would refuse is refused now, with the reason; on any
 * failure the current conversation stays. */
static void load(chat *c, const char *path) {
  tl_file_view v = {0};
  uint8_t *rendered = NULL;
  size_t rendered_len;
  json_error_t je;
  json_t *doc = NULL, *msgs, *first, *think;
  size_t n;
  char err[1024];
  tl_status st = tl_file_open_view(path, &v, err, sizeof err);
  if (st != TL_OK) {
    fprintf(stderr, "error: %s: %s\n", tl_status_name(st), err);
    return;
  }
  if (tl_run_render(false, c->model, v.data, v.len, path, &rendered, &rendered_len) >= 0)
    goto done;
  free(rendered);
  /* The bytes passed the project's JSON reader; jansson keeps them for
   * the session (duplicate keys and U+0000 as that reader treats them). */
  doc = json_loadb((const char *)v.data, v.len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
  if (doc == NULL) {
    fprintf(stderr, "error: invalid_argument: %s:%d:%d: %s\n", path, je.line, je.column, je.text);
    goto done;
  }
  msgs = json_incref(json_object_get(doc, "messages")); /* checked: a list */
  n = json_array_size(msgs);
  first = json_array_get(msgs, 0);
  json_decref(c->system);
  c->system = NULL;
  if (strcmp(json_string_value(json_object_get(first, "role")), "system") == 0) {
    c->system = json_incref(json_object_get(first, "content"));
    json_array_remove(msgs, 0);
  }
  json_decref(c->messages);
  c->messages = msgs;
  /* enable_thinking as Qwen3's template reads it: only false turns it off. */
  think = json_object_get(doc, "enable_thinking");
  if (think != NULL) c->think = !json_is_false(think);
  json_object_del(doc, "messages");
  json_object_del(doc, "enable_thinking");
  json_decref(c->extra);
  c->extra = json_incref(doc);
  fprintf(stderr, "[loaded %zu messages from %s]\n", n, path);
done:
  json_decref(doc);
  tl_file_close_view(&v);
}

static void command(chat *c, char *line) {
  char *arg = strchr(line, ' ');
  if (arg != NULL) *arg++ = '\0';
  if (strcmp(line, "/reset") == 0) {
    json_array_clear(c->messages);
    fprintf(stderr, "[conversation cleared]\n");
  } else if (strcmp(line, "/system") == 0) {
    json_decref(c->system);
    c->system = arg && *arg ? json_string(arg) : NULL;
    fprintf(stderr, "[system message %s]\n", c->system ? "set" : "cleared");
  } else if (strcmp(line, "/think") == 0 && (arg == NULL || !strcmp(arg, "on") || !strcmp(arg, "off"))) {
    if (arg != NULL) c->think = strcmp(arg, "on") == 0;
    fprintf(stderr, "[enable_thinking %s]\n", c->think ? "on" : "off");
  } else if ((strcmp(line, "/save") == 0 || strcmp(line, "/save!") == 0) && arg && *arg) {
    /* Never the model; an existing file this chat did not write only with
     * /save! (file.h's rule for every output). */
    json_t *conv = conversation(c);
    char *text = json_dumps(conv, JSON_INDENT(2));
    char err[512];
    tl_status st = text == NULL ? TL_ERR_OUT_OF_MEMORY : TL_OK;
    if (st == TL_OK)
      st = tl_file_output_check(arg, &c->o.model, 1, line[5] == '!', "/save!", err, sizeof err);
    if (st == TL_OK) st = tl_file_write_atomic(arg, text, strlen(text), err, sizeof err);
    if (st != TL_OK)
      fprintf(stderr, "error: %s: %s\n", tl_status_name(st),
              text == NULL ? "out of memory" : err);
    else
      fprintf(stderr, "[saved %zu messages to %s]\n",
              json_array_size(json_object_get(conv, "messages")), arg);
    free(text);
    json_decref(conv);
  } else if (strcmp(line, "/load") == 0 && arg && *arg) {
    load(c, arg);
  } else {
    fputs(commands_text, stderr);
  }
}

/* Lines from the user: libedit on a terminal, getline otherwise. */
typedef struct reader {
  EditLine *el;
  History *hist;
  char *line; /* getline's buffer */
  size_t cap;
} reader;

static const char *prompt_text(EditLine *el) {
  (void)el;
  return "> ";
}

static void reader_open(reader *r) {
  memset(r, 0, sizeof r[0]);
  /* libedit edits on a terminal (its display is stdout; with stdout
   * redirected it would read plainly anyway: said here, and the locale
   * left alone). It decodes the terminal's bytes by the locale: UTF-8, as
   * the model's text is, whatever the environment says; without it,
   * plain reads. */
  if (!isatty(fileno(stdin)) || !isatty(fileno(stdout)) ||
      setlocale(LC_CTYPE, "C.UTF-8") == NULL)
    return;
  r->el = el_init("tinylm", stdin, stdout, stderr);
  r->hist = history_init();
  if (r->el == NULL || r->hist == NULL) {
    if (r->el != NULL) el_end(r->el);
    if (r->hist != NULL) history_end(r->hist);
    r->el = NULL;
    r->hist = NULL;
    return;
  }
  {
    HistEvent ev;
    history(r->hist, &ev, H_SETSIZE, 1000);
  }
  el_set(r->el, EL_PROMPT, prompt_text);
  el_set(r->el, EL_EDITOR, "emacs");
  el_set(r->el, EL_HIST, history, r->hist);
}

static void reader_close(reader *r) {
  if (r->el != NULL) el_end(r->el);
  if (r->hist != NULL) history_end(r->hist);
  free(r->line);
}

enum { LINE_OK, LINE_EOF, LINE_INTERRUPTED, LINE_UNDECODABLE };

/* The next line without its line ending: *text, *len (it may hold NUL
 * bytes). LINE_UNDECODABLE: libedit met bytes that are not UTF-8. */
static int reader_next(reader *r, const char **text, size_t *len) {
  if (r->el != NULL) {
    int n = 0;
    const char *l;
    errno = 0;
    l = el_gets(r->el, &n);
    if (l == NULL && n < 0 && errno == EINTR) {
      fputc('\n', stdout);
      return LINE_INTERRUPTED;
    }
    if (l == NULL || n <= 0) return LINE_EOF;
    if (errno == EILSEQ) return LINE_UNDECODABLE;
    *text = l;
    *len = (size_t)n;
  } else {
    ssize_t got;
    errno = 0;
    got = getline(&r->line, &r->cap, stdin);
    if (got < 0 && errno == EINTR) {
      clearerr(stdin);
      return LINE_INTERRUPTED;
    }
    if (got < 0) return LINE_EOF;
    *text = r->line;
    *len = (size_t)got;
  }
  while (*len > 0 && ((*text)[*len - 1] == '\n' || (*text)[*len - 1] == '\r')) (*len)--;
  if (r->el != NULL && *len > 0) {
    HistEvent ev;
    char *copy = strndup(*text, *len);
    if (copy != NULL) history(r->hist, &ev, H_ENTER, copy);
    free(copy);
  }
  return LINE_OK;
}

/* A line is sent whole or not at all: NUL bytes and invalid UTF-8 are
 * refused with the byte offset, and the conversation does not change. */
static bool line_ok(const char *text, size_t len) {
  const char *nul = memchr(text, '\0', len);
  size_t bad = 0;
  if (nul != NULL) {
    fprintf(stderr, "error: invalid_argument: the line has a NUL byte at offset %zu; "
            "nothing was sent\n", (size_t)(nul - text));
    return false;
  }
  if (tl_utf8_validate((const uint8_t *)text, len, &bad) != TL_OK) {
    fprintf(stderr, "error: invalid_utf8: the line is not valid UTF-8 at byte offset %zu; "
            "nothing was sent\n", bad);
    return false;
  }
  return true;
}

static void on_prompt_sigint(int sig) { (void)sig; }

int tl_cmd_chat(int argc, char **argv) {
  struct sigaction sa;
  chat c;
  reader rd;
  tl_session_options so;
  tl_preflight_plan plan;
  int rc;
  memset(&c, 0, sizeof c);
  rc = tl_run_parse(argc, argv, usage_text, &c.o);
  if (rc >= 0) return rc;
  if (c.o.prompt || c.o.prompt_file || c.o.messages || c.o.receipt || c.o.logprobs ||
      c.o.json || c.o.raw)
    return tl_cli_usage(false, "chat takes no --prompt/--prompt-file/--messages/--receipt/"
                        "--logprobs/--json/--raw\n%s", usage_text);
  if (c.o.system != NULL && !line_ok(c.o.system, strlen(c.o.system))) return TL_EXIT_USAGE;
  /* Thinking as the template does by default (Qwen3: on) unless a flag
   * says; /think and /load change it. */
  c.think = c.o.think != TL_RUN_THINK_OFF;
  if (c.o.receipt_dir != NULL && mkdir(c.o.receipt_dir, 0777) != 0 && errno != EEXIST)
    return tl_cli_fail(false, TL_ERR_IO, "--receipt-dir %s: cannot create: %s",
                       c.o.receipt_dir, strerror(errno));
  /* A reused directory: numbering continues after its last receipt
   * (--force starts again at turn-0001, replacing). */
  if (c.o.receipt_dir != NULL && !c.o.force) c.receipts = last_receipt(c.o.receipt_dir);
  if (tl_api_init(TL_ABI_VERSION) != TL_OK) return tl_run_api_fail(false, TL_NO_HANDLE);
  if ((rc = tl_run_grammar(&c.o)) >= 0) return rc;
  if (tl_cli_model_open(c.o.model, &c.model) != TL_OK) {
    if (c.o.grammar != TL_NO_HANDLE) tl_grammar_free(c.o.grammar);
    return tl_run_api_fail(false, TL_NO_HANDLE);
  }
  tl_run_session_options(&c.o, &so);
  so.context = c.o.context;
  /* The plan names the context the session gets. */
  if (tl_model_preflight(c.model, &so, &plan) != TL_OK ||
      tl_cli_session_new(c.model, &so, &c.session) != TL_OK) {
    rc = tl_run_api_fail(false, c.model);
    tl_model_close(c.model);
    if (c.o.grammar != TL_NO_HANDLE) tl_grammar_free(c.o.grammar);
    return rc;
  }
  c.context = plan.context;
  c.messages = json_array();
  if (c.o.system != NULL) c.system = json_string(c.o.system);
  /* One seed per session (llama.cpp and ollama draw so too), drawn unless
   * --seed: turns differ by their turn index in the draw position. */
  fprintf(stderr,
          "tinylm chat: %s (%u tokens of context, seed %" PRIu64 "). thinking %s (/think %s or "
          "--%sthink to change). /quit to leave.\n",
          c.o.model, c.context, c.o.seed, c.think ? "on" : "off", c.think ? "off" : "on",
          c.think ? "no-" : "");
  /* Ctrl-C at the prompt discards the line being typed (a reply installs
   * its own handler, which stops the reply). */
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_prompt_sigint;
  sigaction(SIGINT, &sa, NULL);
  reader_open(&rd);
  for (;;) {
    const char *text = NULL;
    size_t len = 0;
    char *line;
    int got;
    if (rd.el == NULL && isatty(fileno(stdin)) && isatty(fileno(stdout))) {
      fputs("> ", stdout);
      fflush(stdout);
    }
    got = reader_next(&rd, &text, &len);
    if (got == LINE_EOF) break;
    if (got == LINE_INTERRUPTED) continue;
    if (got == LINE_UNDECODABLE) {
      fprintf(stderr, "error: invalid_utf8: the line is not valid UTF-8; nothing was sent\n");
      continue;
    }
    if (len == 0 || !line_ok(text, len)) continue;
    if (len == 5 && memcmp(text, "/quit", 5) == 0) break;
    if (text[0] != '/') {
      turn(&c, text, len);
      /* Replies nobody can read: stop (main reports the io error). */
      if (ferror(stdout)) break;
      if (c.model_lost) break;
      continue;
    }
    line = strndup(text, len); /* commands edit their copy */
    if (line == NULL) continue;
    command(&c, line);
    free(line);
  }
  reader_close(&rd);
  json_decref(c.system);
  json_decref(c.extra);
  json_decref(c.messages);
  tl_session_free(c.session);
  tl_model_close(c.model);
  if (c.o.grammar != TL_NO_HANDLE) tl_grammar_free(c.o.grammar);
  if (c.model_lost) return TL_EXIT_FAILURE; /* the error named the file */
  if (c.receipt_missing)
    return tl_cli_fail(false, TL_ERR_IO, "--receipt-dir %s: some turns have no receipt "
                       "(see the errors above)", c.o.receipt_dir);
  return TL_EXIT_OK;
}
