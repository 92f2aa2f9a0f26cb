#define _POSIX_C_SOURCE 200809L
#include "run_common.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_render.h"
#include "cli.h"
#include "file.h"
#include "fresh_seed.h"
#include "gen/think.h"
#include "sample/sampler.h"
#include "turn.h"
#include "utf8.h"

/* Set by SIGINT while a reply runs; every generation callback returns it,
 * which cancels. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

/* The sampling flags' ranges are the sampler's own (tl_sampler_profile_check,
 * docs/sampler.md); this names each field's flag and says its range. */
static const struct {
  tl_sampler_field field;
  const char *flag, *range;
} sampling_flags[] = {
    {TL_SAMPLER_FIELD_TEMPERATURE, "--temperature", "0 (greedy) or in 2^-128..1.8e308"},
    {TL_SAMPLER_FIELD_TOP_P, "--top-p", "in 0..1"},
    {TL_SAMPLER_FIELD_MIN_P, "--min-p", "in 0..1"},
    {TL_SAMPLER_FIELD_REPEAT_PENALTY, "--repeat-penalty", "in 2^-64..2^64"},
    {TL_SAMPLER_FIELD_FREQUENCY_PENALTY, "--frequency-penalty", "in -2..2"},
    {TL_SAMPLER_FIELD_PRESENCE_PENALTY, "--presence-penalty", "in -2..2"}};

/* The flag that sets a sampler field and its range; NULL for the fields
 * only the artifact sets (EOS set, vocabulary). */
static const char *field_flag(tl_sampler_field field, const char **range) {
  for (size_t i = 0; i < sizeof sampling_flags / sizeof sampling_flags[0]; i++)
    if (sampling_flags[i].field == field) {
      *range = sampling_flags[i].range;
      return sampling_flags[i].flag;
    }
  return NULL;
}

/* An artifact's sampling default out of range, named by its flag. */
static int sampling_fail(bool json, tl_sampler_field field) {
  /* The flags were checked: what is left came from the artifact. */
  const char *range, *flag = field_flag(field, &range);
  if (flag != NULL)
    return tl_cli_fail(json, TL_ERR_INVALID_MODEL,
                       "the artifact's generation default for %s is not %s "
                       "(give %s to override it)", flag, range, flag);
  return tl_cli_fail(json, TL_ERR_INVALID_MODEL,
                     "the artifact's EOS set or vocabulary is not a valid "
                     "sampler profile (field %d)", (int)field);
}

static int check_sampling(const tl_run_options *o, const char *usage) {
  tl_sampler_profile p = tl_sampler_profile_default(1);
  tl_sampler_field field;
  const char *flag, *range;
  double given;
  if (o->given & TL_RUN_GIVEN_TEMPERATURE) p.temperature = o->temperature;
  if (o->given & TL_RUN_GIVEN_TOP_P) p.top_p = o->top_p;
  if (o->given & TL_RUN_GIVEN_MIN_P) p.min_p = o->min_p;
  if (o->given & TL_RUN_GIVEN_REPEAT_PENALTY) p.repeat_penalty = o->repeat_penalty;
  p.frequency_penalty = o->frequency_penalty;
  p.presence_penalty = o->presence_penalty;
  if (tl_sampler_profile_check(&p, &field) == TL_OK) return -1;
  if ((flag = field_flag(field, &range)) == NULL)
    return tl_cli_usage(o->json, "sampling options out of range\n%s", usage);
  given = field == TL_SAMPLER_FIELD_TEMPERATURE ? p.temperature
          : field == TL_SAMPLER_FIELD_TOP_P     ? p.top_p
          : field == TL_SAMPLER_FIELD_MIN_P     ? p.min_p
          : field == TL_SAMPLER_FIELD_FREQUENCY_PENALTY ? p.frequency_penalty
          : field == TL_SAMPLER_FIELD_PRESENCE_PENALTY  ? p.presence_penalty
                                                : p.repeat_penalty;
  return tl_cli_usage(o->json, "%s must be %s, got %g", flag, range, given);
}

int tl_run_parse(int argc, char **argv, const char *usage, tl_run_options *o) {
  int rc;
  memset(o, 0, sizeof *o);
  /* --json anywhere makes every usage error JSON, whatever the order. */
  o->json = tl_cli_wants_json(argc, argv);
  o->max_new = 0; /* until EOS, a stop string or the context is full */
  o->think = TL_RUN_THINK_DEFAULT;
  o->lane = tl_lane_defaults();
  o->top_p = 1.0;
  o->repeat_penalty = 1.0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    /* A flag is recognised before its value is looked for, so an unknown
     * flag is reported as unknown wherever it stands. */
    bool missing = i + 1 >= argc, takes = true, ok = true;
    const char *v = missing ? "" : argv[i + 1];
    int lane_rc;
    rc = -1;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      return TL_EXIT_OK;
    } else if ((lane_rc = tl_lane_flag(o->json, argc, argv, &i, &o->lane)) != 0) {
      if (lane_rc > 0) return lane_rc;
      takes = false; /* consumed with its value */
    } else if (strcmp(a, "--json") == 0) {
      takes = false;
    } else if (strcmp(a, "--preflight") == 0) {
      o->preflight = true;
      takes = false;
    } else if (strcmp(a, "--progress") == 0) {
      o->progress = true;
      takes = false;
    } else if (strcmp(a, "--raw") == 0) {
      o->raw = true;
      takes = false;
    } else if (strcmp(a, "--think") == 0 || strcmp(a, "--no-think") == 0) {
      int want = a[2] == 't' ? TL_RUN_THINK_ON : TL_RUN_THINK_OFF;
      if (o->think != TL_RUN_THINK_DEFAULT && o->think != want)
        return tl_cli_usage(o->json, "--think and --no-think together: give one\n%s", usage);
      o->think = want;
      takes = false;
    } else if (strcmp(a, "--hide-thinking") == 0) {
      o->hide_thinking = true;
      takes = false;
    } else if (strcmp(a, "--json-object") == 0) {
      o->json_object = true;
      takes = false;
    } else if (strcmp(a, "--json-schema") == 0) {
      o->json_schema = v;
    } else if (strcmp(a, "--grammar") == 0) {
      o->grammar_file = v;
    } else if (strcmp(a, "--regex") == 0) {
      o->regex = v;
    } else if (strcmp(a, "--think-budget") == 0) {
      if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 1, UINT32_MAX, &o->think_budget);
    } else if (strcmp(a, "--prompt") == 0) {
      o->prompt = v;
    } else if (strcmp(a, "--prompt-file") == 0) {
      o->prompt_file = v;
    } else if (strcmp(a, "--messages") == 0) {
      o->messages = v;
    } else if ((strcmp(a, "--receipt") == 0 || strcmp(a, "--receipt-dir") == 0) &&
               strcmp(v, "-") == 0) {
      /* The reply is on stdout: a receipt is always a file. */
      return tl_cli_usage(o->json, "%s -: this option writes a file, not standard output "
                          "(./- names a file called '-')", a);
    } else if (strcmp(a, "--receipt") == 0) {
      o->receipt = v;
    } else if (strcmp(a, "--system") == 0) {
      o->system = v;
    } else if (strcmp(a, "--receipt-dir") == 0) {
      o->receipt_dir = v;
    } else if (strcmp(a, "--force") == 0) {
      o->force = true;
      takes = false;
    } else if (strcmp(a, "-n") == 0) {
      /* -1: no cap (until EOS, a stop rule or the context is full). */
      uint64_t n = 0;
      if (strcmp(v, "-1") == 0) o->max_new = 0;
      else if (!missing && (!tl_cli_parse_u64(v, &n) || n < 1 || n > UINT32_MAX))
        rc = tl_cli_usage(o->json, "-n must be -1 (no cap: until EOS, a stop string or "
                          "the context is full) or an integer in 1..%" PRIu32 ", got '%s'",
                          UINT32_MAX, v);
      else if (!missing) o->max_new = (uint32_t)n;
    } else if (strcmp(a, "--top-k") == 0) {
      if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 0, UINT32_MAX, &o->top_k);
      o->given |= TL_RUN_GIVEN_TOP_K;
    } else if (strcmp(a, "--repeat-window") == 0) {
      if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 0, UINT32_MAX, &o->repeat_window);
      o->given |= TL_RUN_GIVEN_REPEAT_WINDOW;
    } else if (strcmp(a, "--logprobs") == 0) {
      if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 0, TL_RUN_MAX_LOGPROBS, &o->logprobs);
    } else if (strcmp(a, "--ctx") == 0) {
      if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 1, UINT32_MAX, &o->context);
    } else if (strcmp(a, "--seed") == 0) {
      if (!missing) rc = tl_cli_flag_u64(o->json, a, v, 0, UINT64_MAX, &o->seed);
      o->given |= TL_RUN_GIVEN_SEED;
    } else if (strcmp(a, "--mem-budget") == 0) {
      if (!missing)
        rc = tl_cli_flag_u64(o->json, a, v, 1, UINT64_MAX / 1000000u, &o->mem_budget);
      o->mem_budget *= 1000000u;
    } else if (strcmp(a, "--temperature") == 0) {
      if (!missing) rc = tl_cli_flag_f64(o->json, a, v, &o->temperature);
      o->given |= TL_RUN_GIVEN_TEMPERATURE;
    } else if (strcmp(a, "--top-p") == 0) {
      if (!missing) rc = tl_cli_flag_f64(o->json, a, v, &o->top_p);
      o->given |= TL_RUN_GIVEN_TOP_P;
    } else if (strcmp(a, "--min-p") == 0) {
      if (!missing) rc = tl_cli_flag_f64(o->json, a, v, &o->min_p);
      o->given |= TL_RUN_GIVEN_MIN_P;
    } else if (strcmp(a, "--repeat-penalty") == 0) {
      if (!missing) rc = tl_cli_flag_f64(o->json, a, v, &o->repeat_penalty);
      o->given |= TL_RUN_GIVEN_REPEAT_PENALTY;
    } else if (strcmp(a, "--frequency-penalty") == 0) {
      if (!missing) rc = tl_cli_flag_f64(o->json, a, v, &o->frequency_penalty);
    } else if (strcmp(a, "--presence-penalty") == 0) {
      if (!missing) rc = tl_cli_flag_f64(o->json, a, v, &o->presence_penalty);
    } else if (strcmp(a, "--stop") == 0) {
      if (o->n_stops == TL_RUN_MAX_STOPS)
        return tl_cli_usage(o->json, "at most %d --stop strings\n%s", TL_RUN_MAX_STOPS, usage);
      ok = v[0] != '\0';
      if (ok) o->stops[o->n_stops++] = v;
    } else if (a[0] == '-' && a[1] != '\0') {
      return tl_cli_usage(o->json, "unknown option '%s'\n%s", a, usage);
    } else if (o->model == NULL) {
      o->model = a;
      takes = false;
    } else {
      return tl_cli_usage(o->json, "one MODEL.slm only (unexpected '%s')\n%s", a, usage);
    }
    if (takes && missing) return tl_cli_usage(o->json, "'%s' needs a value\n%s", a, usage);
    if (rc >= 0) return rc;
    if (!ok) return tl_cli_usage(o->json, "bad value for '%s': '%s'\n%s", a, v, usage);
    if (takes) i++;
  }
  if (o->model == NULL) return tl_cli_usage(o->json, "MODEL.slm is required\n%s", usage);
  if (o->json_object + (o->json_schema != NULL) + (o->grammar_file != NULL) +
          (o->regex != NULL) > 1)
    return tl_cli_usage(o->json, "at most one of --json-object, --json-schema, --grammar and "
                        "--regex\n%s", usage);
  if (o->think_budget != 0 && !o->json_object && o->json_schema == NULL &&
      o->grammar_file == NULL && o->regex == NULL)
    return tl_cli_usage(o->json, "--think-budget applies to a constrained reply: give "
                        "--json-object, --json-schema, --grammar or --regex\n%s", usage);
  /* llama.cpp's repeat_last_n default, so --repeat-penalty alone acts. */
  if ((o->given & TL_RUN_GIVEN_REPEAT_PENALTY) && !(o->given & TL_RUN_GIVEN_REPEAT_WINDOW))
    o->repeat_window = 64;
  /* No --seed: a fresh one (reported: run_generation, chat's start). */
  if (!(o->given & TL_RUN_GIVEN_SEED)) o->seed = tl_fresh_seed();
  return check_sampling(o, usage);
}

int tl_run_grammar(tl_run_options *o) {
  tl_file_view text = {0};
  const char *path = o->json_schema ? o->json_schema : o->grammar_file;
  uint32_t kind = o->json_object ? TL_GRAMMAR_JSON_OBJECT
                  : o->json_schema ? TL_GRAMMAR_JSON_SCHEMA
                  : o->grammar_file ? TL_GRAMMAR_GBNF
                                    : TL_GRAMMAR_REGEX;
  char err[1024];
  tl_error e;
  tl_status st;
  o->grammar = TL_NO_HANDLE;
  if (!o->json_object && path == NULL && o->regex == NULL) return -1;
  if (path != NULL && (st = tl_file_open_view(path, &text, err, sizeof err)) != TL_OK)
    return tl_cli_fail(o->json, st, "%s", err);
  st = o->regex ? tl_grammar_compile(kind, o->regex, strlen(o->regex), &o->grammar)
                : tl_grammar_compile(kind, text.data, text.len, &o->grammar);
  tl_file_close_view(&text);
  if (st == TL_OK) return -1;
  tl_error_detail(TL_NO_HANDLE, &e);
  return tl_cli_fail(o->json, st, "%s%s%s", path ? path : "", path ? ": " : "", e.message);
}

tl_status tl_run_receipt_check(const tl_run_options *o, char *err, size_t cap) {
  const char *inputs[] = {o->model, o->messages, o->prompt_file};
  if (o->receipt == NULL) return TL_OK;
  return tl_file_output_check(o->receipt, inputs, 3, o->force, NULL, err, cap);
}

/* log-softmax of the raw logits (f64), top K alternatives. */
static json_t *logprob_row(const float *logits, size_t n, uint32_t chosen,
                           uint32_t k) {
  double mx = -INFINITY, sum = 0.0, lse;
  json_t *top = json_array();
  uint32_t prev = UINT32_MAX;
  for (size_t i = 0; i < n; i++) if (logits[i] > mx) mx = logits[i];
  for (size_t i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
  lse = mx + log(sum);
  for (uint32_t j = 0; j < k; j++) { /* descending logit, ascending id */
    uint32_t best = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
      bool after_prev = prev == UINT32_MAX || logits[i] < logits[prev] ||
                        (logits[i] == logits[prev] && i > prev);
      if (after_prev && (best == UINT32_MAX || logits[i] > logits[best]))
        best = (uint32_t)i;
    }
    if (best == UINT32_MAX) break;
    json_array_append_new(top, json_pack("{s:I,s:f}", "id", (json_int_t)best,
                                         "logprob", (double)logits[best] - lse));
    prev = best;
  }
  return json_pack("{s:I,s:f,s:o}", "id", (json_int_t)chosen, "logprob",
                   (double)logits[chosen] - lse, "top", top);
}

/* How a reply's think block is printed: as the model wrote it (--json,
 * --raw, or out not a terminal), dimmed without its tags (a terminal), or
 * not at all (--hide-thinking). */
typedef enum { VIEW_RAW, VIEW_DIM, VIEW_HIDE } think_view;

/* The terminal side of a reply: visible text streamed to out (not with
 * --json), prefill progress on stderr, the --logprobs rows. The stream
 * functions take the streamer as ctx (generation callbacks); each returns
 * whether Ctrl-C asked to stop. */
typedef struct streamer {
  FILE *out;
  bool json;
  think_view view;
  uint8_t *text; /* VIEW_DIM, VIEW_HIDE: the visible text so far */
  size_t len, cap, reason_shown, answer_shown;
  bool text_failed; /* out of memory keeping it: printed as it comes */
  uint32_t logprobs;
  json_t *logprob_rows; /* NULL unless --logprobs */
  tl_cli_progress progress;
  bool out_failed; /* a write to out failed: the reply stopped there */
} streamer;

static void streamer_begin(streamer *sm, const tl_run_options *o, FILE *out) {
  memset(sm, 0, sizeof *sm);
  sm->out = out;
  sm->json = o->json;
  sm->logprobs = o->logprobs;
  sm->logprob_rows = o->logprobs ? json_array() : NULL;
  sm->view = o->json || o->raw ? VIEW_RAW
             : o->hide_thinking ? VIEW_HIDE
             : isatty(fileno(out)) ? VIEW_DIM : VIEW_RAW;
  /* --json keeps stderr quiet unless --progress asks. */
  tl_cli_progress_begin(&sm->progress, "prefill", o->progress);
  if (o->json && !o->progress) sm->progress.on = false;
}

static void streamer_end(streamer *sm) {
  json_decref(sm->logprob_rows);
  sm->logprob_rows = NULL;
  free(sm->text);
  sm->text = NULL;
}

static void put(streamer *sm, const uint8_t *b, size_t n) {
  if (n > 0) fwrite(b, 1, n, sm->out);
}

/* Prints what is new and decided of the reply's parts (all of it when
 * final): the reasoning dimmed (VIEW_DIM) or not at all, a newline between
 * it and the answer, then the answer. Text that may still turn out to be a
 * tag is held, as serve's streams hold it (gen/think.h). */
static void show_parts(streamer *sm, bool final) {
  tl_think th;
  size_t from;
  tl_think_split(sm->text, sm->len, final, &th);
  if (th.block) {
    from = sm->reason_shown > th.reason_from ? sm->reason_shown : th.reason_from;
    if (th.reason_to > from) {
      if (sm->view == VIEW_DIM) {
        fputs("\x1b[2m", sm->out);
        put(sm, sm->text + from, th.reason_to - from);
        fputs("\x1b[22m", sm->out);
      }
      sm->reason_shown = th.reason_to;
    }
    if (!th.closed && !final) return; /* the answer has not begun */
    if (sm->answer_shown == 0 && sm->view == VIEW_DIM && sm->reason_shown > th.reason_from &&
        sm->len > th.answer_from)
      fputc('\n', sm->out);
  }
  from = sm->answer_shown > th.answer_from ? sm->answer_shown : th.answer_from;
  if (sm->len > from) put(sm, sm->text + from, sm->len - from);
  if (sm->len > from) sm->answer_shown = sm->len;
}

/* Keeps the new visible bytes (VIEW_DIM, VIEW_HIDE); false when out of
 * memory (then they are printed as they come, the think block too). */
static bool keep_text(streamer *sm, const uint8_t *bytes, size_t n) {
  if (sm->len + n > sm->cap) {
    size_t cap = sm->cap ? sm->cap : 256;
    uint8_t *p;
    while (cap < sm->len + n) cap *= 2;
    if ((p = realloc(sm->text, cap)) == NULL) return false;
    sm->text = p;
    sm->cap = cap;
  }
  memcpy(sm->text + sm->len, bytes, n);
  sm->len += n;
  return true;
}

static void stream_choice(void *ctx, const float *logits, size_t vocab, uint32_t id) {
  streamer *sm = ctx;
  if (sm->logprob_rows != NULL)
    json_array_append_new(sm->logprob_rows, logprob_row(logits, vocab, id, sm->logprobs));
}

static int stream_text(void *ctx, const uint8_t *bytes, size_t n) {
  streamer *sm = ctx;
  if (!sm->json) {
    if (sm->view != VIEW_RAW && !sm->text_failed && keep_text(sm, bytes, n)) {
      show_parts(sm, false);
    } else {
      sm->text_failed = sm->view != VIEW_RAW;
      fwrite(bytes, 1, n, sm->out);
    }
    /* Nobody reads the rest: stop now (main reports the io error). */
    if (!tl_cli_flush(sm->out)) sm->out_failed = true;
  }
  return interrupted || sm->out_failed;
}

static int stream_prefill(void *ctx, size_t done, size_t total) {
  streamer *sm = ctx;
  /* Progress for long prefills only. */
  if (total > 64) {
    tl_cli_progress_update(&sm->progress, "tokens", done, total, 0, 0);
    if (done == total) tl_cli_progress_end(&sm->progress);
  }
  return interrupted;
}

static int stream_token(void *ctx, uint32_t id) {
  (void)ctx;
  (void)id;
  return interrupted;
}

static struct sigaction old_sigint;

/* SIGINT sets interrupted (on) / the previous handler again (off). */
static void catch_sigint(bool on) {
  if (on) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, &old_sigint);
    interrupted = 0;
  } else {
    sigaction(SIGINT, &old_sigint, NULL);
  }
}

bool tl_run_interrupted(void) { return interrupted != 0; }

/* Bytes as a JSON string, each maximal ill-formed UTF-8 subpart replaced
 * by U+FFFD (the raw bytes are reported separately, in hex). */
json_t *tl_json_lossy_string(const uint8_t *b, size_t n) {
  char *buf = malloc(3 * n + 1);
  size_t len = 0;
  json_t *v;
  if (buf == NULL) return json_null();
  for (size_t pos = 0; pos < n;) {
    uint32_t cp;
    size_t k;
    if (tl_utf8_decode(b, n, pos, &cp, &k)) {
      memcpy(buf + len, b + pos, k);
      len += k;
    } else {
      memcpy(buf + len, "\xEF\xBF\xBD", 3);
      len += 3;
    }
    pos += k;
  }
  v = json_stringn(buf, len);
  free(buf);
  return v ? v : json_null();
}


/* A generation that ran, as the report reads it. */
typedef struct outcome {
  tl_status status; /* TL_OK (also when cancelled), or the failure */
  bool cancelled;
  tl_generation_result r;
  tl_error e; /* TL_ERR_NUMERICAL_FAILURE: where */
  tl_model_handle model; /* token texts for --logprobs */
} outcome;

/* One token as printable text (the decoder's diagnostic mode). */
static void put_token(FILE *out, const outcome *oc, json_t *id_json) {
  uint32_t id = (uint32_t)json_integer_value(id_json);
  char buf[512];
  size_t len = 0;
  fprintf(out, "%u", id);
  if (tl_model_decode(oc->model, &id, 1, TL_DECODE_DIAGNOSTIC, buf, sizeof buf - 1, &len) ==
      TL_OK) {
    buf[len] = '\0';
    fprintf(out, " \"%s\"", buf);
  }
}

/* --logprobs without --json: each step's chosen token and the top
 * alternatives (log-softmax of the raw logits), after the text. */
static void print_logprobs(FILE *out, const outcome *oc, json_t *rows) {
  size_t i, j;
  json_t *row, *alt;
  fprintf(out, "logprobs (step: chosen token, logprob; top alternatives):\n");
  json_array_foreach(rows, i, row) {
    fprintf(out, "  %zu: ", i);
    put_token(out, oc, json_object_get(row, "id"));
    fprintf(out, " %.4f;", json_real_value(json_object_get(row, "logprob")));
    json_array_foreach(json_object_get(row, "top"), j, alt) {
      fputs(j ? ", " : " ", out);
      put_token(out, oc, json_object_get(alt, "id"));
      fprintf(out, " %.4f", json_real_value(json_object_get(alt, "logprob")));
    }
    fputc('\n', out);
  }
}

/* --json's "reasoning" (Qwen3's think block without its tags and the
 * newlines around them; null when the reply has none, and always with
 * --raw: plain completion is not a chat reply) and "answer" (the text
 * after it); "text" stays the whole visible text. */
static void reply_parts(const tl_run_options *o, const tl_generation_result *r, json_t *doc) {
  tl_think th;
  if (o->raw) memset(&th, 0, sizeof th);
  else tl_think_split(r->text, r->text_len, true, &th);
  json_object_set_new(doc, "reasoning",
                      th.block ? tl_json_lossy_string(r->text + th.reason_from,
                                                      th.reason_to - th.reason_from)
                               : json_null());
  json_object_set_new(doc, "answer", th.block ? tl_json_lossy_string(r->text + th.answer_from,
                                                                     r->text_len - th.answer_from)
                                              : tl_json_lossy_string(r->text, r->text_len));
}

/* The --receipt file, then the failure (error: ...), or the JSON document
 * (--json, with sm's logprobs) or the summary line on stderr (and the
 * logprobs table on out). Returns the exit status. */
static int report(const tl_run_options *o, streamer *sm, const outcome *oc, FILE *out) {
  const tl_generation_result *r = &oc->r;
  uint8_t digest[32];
  char err[512], grammar_hex[65] = "";
  tl_status rs = r->receipt != NULL ? TL_OK : TL_ERR_INTERNAL_INVARIANT;
  double prefill_tps = r->prefill_us ? r->prompt_tokens / (r->prefill_us / 1e6) : 0.0;
  double decode_tps =
      (r->decode_us && r->n_ids > 1) ? (r->n_ids - 1) / (r->decode_us / 1e6) : 0.0;
  /* The reply could not be written: a failure (the io error is reported
   * when stdout is closed, cli.h), no receipt for a reply nobody got. */
  if (sm->out_failed) return TL_EXIT_FAILURE;
  if (sm->view != VIEW_RAW && !sm->text_failed) show_parts(sm, true); /* what was held */
  if (!o->json && !oc->cancelled) fputc('\n', out);
  /* Checked again at the write: the file may have appeared meanwhile. */
  if (rs == TL_OK && o->receipt != NULL) rs = tl_run_receipt_check(o, err, sizeof err);
  if (rs == TL_OK && o->receipt != NULL)
    rs = tl_file_write_atomic(o->receipt, r->receipt, r->receipt_len, err, sizeof err);
  else if (r->receipt == NULL)
    snprintf(err, sizeof err, "%s", tl_status_name(rs));
  if (oc->status == TL_ERR_NUMERICAL_FAILURE)
    return tl_cli_fail(o->json, oc->status,
                       "generation failed after %zu tokens: non-finite value at stage %s, "
                       "layer %d, position %u, index %llu",
                       r->n_ids, oc->e.stage, (int)oc->e.layer, oc->e.position,
                       (unsigned long long)oc->e.index);
  if (oc->status != TL_OK)
    return tl_cli_fail(o->json, oc->status, "generation failed after %zu tokens", r->n_ids);
  if (rs != TL_OK) return tl_cli_fail(o->json, rs, "cannot write the receipt: %s", err);
  if (o->grammar != TL_NO_HANDLE && tl_grammar_get_digest(o->grammar, digest) == TL_OK)
    tl_hex_encode(digest, 32, grammar_hex);
  if (o->json) {
    json_t *doc_json = json_pack(
        "{s:o,s:o,s:o,s:s,s:I,s:I,s:s,s:{s:f,s:f}}", "ids", tl_cli_json_ids(r->ids, r->n_ids),
        "text", tl_json_lossy_string(r->text, r->text_len), "raw_hex",
        tl_cli_json_hex(r->raw, r->raw_len), "stop", r->stop, "prompt_tokens",
        (json_int_t)r->prompt_tokens, "position", (json_int_t)r->position, "receipt_id",
        r->receipt_id, "timings", "prefill_tokens_per_s", prefill_tps, "decode_tokens_per_s",
        decode_tps);
    char *text;
    reply_parts(o, r, doc_json);
    if (grammar_hex[0] != '\0') json_object_set_new(doc_json, "grammar", json_string(grammar_hex));
    json_object_set_new(doc_json, "seed", tl_run_seed_json(o->seed));
    if (sm->logprob_rows != NULL) {
      json_object_set_new(doc_json, "logprobs", sm->logprob_rows);
      sm->logprob_rows = NULL;
    }
    text = json_dumps(doc_json, JSON_COMPACT);
    fprintf(out, "%s\n", text);
    free(text);
    json_decref(doc_json);
  } else {
    if (sm->logprob_rows != NULL) print_logprobs(out, oc, sm->logprob_rows);
    /* a drawn seed is named, so the reply can be had again with --seed */
    char seed[40] = "";
    if (!(o->given & TL_RUN_GIVEN_SEED)) snprintf(seed, sizeof seed, " seed %" PRIu64 ";", o->seed);
    fprintf(stderr,
            "[%s after %zu tokens; prefill %u tokens %.2f tokens/s, decode "
            "%.2f tokens/s;%s%s%.16s receipt %s%s%s]\n",
            r->stop, r->n_ids, (unsigned)r->prompt_tokens, prefill_tps, decode_tps, seed,
            grammar_hex[0] ? " grammar " : "", grammar_hex, r->receipt_id,
            o->receipt ? " in " : "", o->receipt ? o->receipt : "");
  }
  return TL_EXIT_OK;
}

json_t *tl_run_seed_json(uint64_t seed) {
  char t[24];
  if (seed <= (uint64_t)INT64_MAX) return json_integer((json_int_t)seed);
  snprintf(t, sizeof t, "%" PRIu64, seed);
  return json_string(t);
}

int tl_run_api_fail(bool json, uint32_t h) {
  tl_error e;
  tl_error_detail(h, &e);
  return tl_cli_fail(json, e.status, "%s", e.message);
}

void tl_run_session_options(const tl_run_options *o, tl_session_options *so) {
  memset(so, 0, sizeof *so);
  so->lane = o->lane.fast ? TL_LANE_FAST : TL_LANE_SCALAR;
  so->threads = o->lane.threads;
  so->flags = o->lane.mmap ? TL_SESSION_NO_COPY : 0;
  so->mem_budget = o->mem_budget;
}

int tl_run_render(bool json, tl_model_handle model, const uint8_t *conv, size_t len,
                  const char *path, uint8_t **text, size_t *text_len) {
  size_t need = 0;
  tl_status st = tl_model_render(model, conv, len, NULL, 0, &need, NULL);
  *text = NULL;
  if (st == TL_OK || st == TL_ERR_BOUNDS) {
    *text = malloc(need ? need : 1);
    if (*text == NULL) return tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "out of memory");
    st = tl_model_render(model, conv, len, *text, need, &need, NULL);
  }
  if (st != TL_OK) {
    /* The API's record carries the renderer's (tl_error's kind, line,
     * column, index): reported as tinylm render reports it. */
    tl_error e;
    tl_render_error re;
    free(*text);
    *text = NULL;
    tl_error_detail(model, &e);
    memset(&re, 0, sizeof re);
    re.kind = e.kind;
    re.line = e.line;
    re.column = e.column;
    re.bad_message = e.index == UINT64_MAX ? SIZE_MAX : (size_t)e.index;
    snprintf(re.message, sizeof re.message, "%s", e.message);
    return tl_render_fail(json, e.status, path, &re);
  }
  *text_len = need;
  return -1;
}

void tl_run_generation_params(const tl_run_options *o, tl_generation_params *p) {
  p->given = o->given & TL_RUN_GIVEN_SAMPLING;
  p->temperature = o->temperature;
  p->top_k = o->top_k;
  p->top_p = o->top_p;
  p->min_p = o->min_p;
  p->repeat_penalty = o->repeat_penalty;
  p->repeat_window = o->repeat_window;
  p->seed = o->seed;
  p->flags |= TL_GENERATE_PENALTIES;
  p->frequency_penalty = o->frequency_penalty;
  p->presence_penalty = o->presence_penalty;
  p->max_tokens = o->max_new;
  p->stop_strings = o->stops;
  p->n_stops = o->n_stops;
  if (o->grammar != TL_NO_HANDLE) {
    p->flags |= TL_GENERATE_GRAMMAR;
    p->grammar = o->grammar;
    p->think_budget = o->think_budget;
  }
}

int tl_run_generation(const tl_run_options *o, tl_model_handle model, tl_session_handle session,
                      tl_generation_params *p, FILE *out, tl_generation_handle *keep) {
  streamer sm;
  tl_generation_handle gen;
  outcome oc;
  tl_status st;
  int rc;
  if (tl_generation_new(session, &gen) != TL_OK) return tl_run_api_fail(o->json, session);
  streamer_begin(&sm, o, out);
  p->on_text = stream_text;
  p->on_prefill = stream_prefill;
  p->on_token = stream_token;
  p->on_choice = stream_choice;
  p->ctx = &sm;
  catch_sigint(true);
  st = tl_generation_run(gen, p);
  catch_sigint(false);
  memset(&oc, 0, sizeof oc);
  tl_error_detail(gen, &oc.e);
  if (tl_generation_result_get(gen, &oc.r) != TL_OK) {
    /* refused before it ran */
    if (oc.e.status == TL_ERR_INVALID_MODEL) {
      tl_sampler_field field = TL_SAMPLER_FIELD_TEMPERATURE;
      while (field <= TL_SAMPLER_FIELD_DEFINED_IDS &&
             strcmp(tl_turn_field_name(field), oc.e.kind) != 0)
        field++;
      rc = sampling_fail(o->json, field);
    } else {
      rc = tl_cli_fail(o->json, oc.e.status, "%s", oc.e.message);
    }
  } else {
    /* Ctrl-C ends a reply like a stop rule (the receipt says "cancelled"). */
    oc.status = st == TL_ERR_CANCELLED ? TL_OK : st;
    oc.cancelled = st == TL_ERR_CANCELLED;
    oc.model = model;
    rc = report(o, &sm, &oc, out);
  }
  streamer_end(&sm);
  if (rc == TL_EXIT_OK && keep != NULL)
    *keep = gen;
  else
    tl_generation_free(gen);
  return rc;
}
