#define _POSIX_C_SOURCE 200809L
#include "run_common.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"
#include "gen/generate.h"
#include "receipt.h"
#include "sample/sampler.h"
#include "tok/tokenizer.h"
#include "turn.h"
#include "utf8.h"

volatile int tl_run_interrupted;

void tl_turn_out_free(tl_turn_out *t) {
  free(t->ids);
  free(t->visible);
  memset(t, 0, sizeof *t);
}

static void on_sigint(int sig) {
  (void)sig;
  tl_run_interrupted = 1;
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
    {TL_SAMPLER_FIELD_REPEAT_PENALTY, "--repeat-penalty", "in 2^-64..2^64"}};

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

int tl_run_sampling_fail(bool json, tl_sampler_field field) {
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
  if (tl_sampler_profile_check(&p, &field) == TL_OK) return -1;
  if ((flag = field_flag(field, &range)) == NULL)
    return tl_cli_usage(o->json, "sampling options out of range\n%s", usage);
  given = field == TL_SAMPLER_FIELD_TEMPERATURE ? p.temperature
          : field == TL_SAMPLER_FIELD_TOP_P     ? p.top_p
          : field == TL_SAMPLER_FIELD_MIN_P     ? p.min_p
                                                : p.repeat_penalty;
  return tl_cli_usage(o->json, "%s must be %s, got %g", flag, range, given);
}

int tl_run_parse(int argc, char **argv, const char *usage, tl_run_options *o) {
  int rc;
  memset(o, 0, sizeof *o);
  /* --json anywhere makes every usage error JSON, whatever the order. */
  for (int i = 1; i < argc; i++) o->json |= strcmp(argv[i], "--json") == 0;
  o->max_new = 64;
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
    } else if (strcmp(a, "--prompt") == 0) {
      o->prompt = v;
    } else if (strcmp(a, "--prompt-file") == 0) {
      o->prompt_file = v;
    } else if (strcmp(a, "--messages") == 0) {
      o->messages = v;
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
      o->given |= TL_RUN_GIVEN_MAX_NEW;
      /* -1: no cap (until EOS, a stop rule or the context is full). */
      if (strcmp(v, "-1") == 0) o->max_new = 0;
      else if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 1, UINT32_MAX, &o->max_new);
    } else if (strcmp(a, "--top-k") == 0) {
      if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 0, UINT32_MAX, &o->top_k);
      o->given |= TL_RUN_GIVEN_TOP_K;
    } else if (strcmp(a, "--repeat-window") == 0) {
      if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 0, UINT32_MAX, &o->repeat_window);
    } else if (strcmp(a, "--logprobs") == 0) {
      if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 0, TL_RUN_MAX_LOGPROBS, &o->logprobs);
    } else if (strcmp(a, "--ctx") == 0) {
      if (!missing) rc = tl_cli_flag_u32(o->json, a, v, 1, UINT32_MAX, &o->context);
    } else if (strcmp(a, "--seed") == 0) {
      if (!missing) rc = tl_cli_flag_u64(o->json, a, v, 0, UINT64_MAX, &o->seed);
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
  return check_sampling(o, usage);
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

void tl_run_streamer_begin(tl_run_streamer *sm, const tl_run_options *o, FILE *out) {
  memset(sm, 0, sizeof *sm);
  sm->out = out;
  sm->json = o->json;
  sm->logprobs = o->logprobs;
  sm->logprob_rows = o->logprobs ? json_array() : NULL;
  /* --json keeps stderr quiet unless --progress asks. */
  tl_cli_progress_begin(&sm->progress, "prefill", o->progress);
  if (o->json && !o->progress) sm->progress.on = false;
}

void tl_run_streamer_end(tl_run_streamer *sm) {
  json_decref(sm->logprob_rows);
  sm->logprob_rows = NULL;
}

void tl_run_stream_choice(void *ctx, const float *logits, size_t vocab, uint32_t id) {
  tl_run_streamer *sm = ctx;
  if (sm->logprob_rows != NULL)
    json_array_append_new(sm->logprob_rows, logprob_row(logits, vocab, id, sm->logprobs));
}

void tl_run_stream_text(void *ctx, const uint8_t *bytes, size_t n) {
  tl_run_streamer *sm = ctx;
  if (sm->json) return;
  fwrite(bytes, 1, n, sm->out);
  fflush(sm->out);
}

void tl_run_stream_prefill(void *ctx, size_t done, size_t total) {
  tl_run_streamer *sm = ctx;
  /* Progress for long prefills only. */
  if (total <= 64) return;
  tl_cli_progress_update(&sm->progress, "tokens", done, total, 0, 0);
  if (done == total) tl_cli_progress_end(&sm->progress);
}

static bool cancelled(void *ctx) {
  (void)ctx;
  return tl_run_interrupted != 0;
}

static struct sigaction old_sigint;

void tl_run_catch_sigint(bool on) {
  if (on) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, &old_sigint);
    tl_run_interrupted = 0;
  } else {
    sigaction(SIGINT, &old_sigint, NULL);
  }
}

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

static json_t *hex_json(const uint8_t *b, size_t n) {
  char *buf = malloc(2 * n + 1);
  json_t *v;
  if (buf == NULL) return json_null();
  tl_cli_hex(b, n, buf);
  v = json_string(buf);
  free(buf);
  return v;
}

static json_t *ids_json(const uint32_t *ids, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
  return a;
}

/* One token as printable text (the decoder's diagnostic mode). */
static void put_token(FILE *out, const tl_run_outcome *oc, json_t *id_json) {
  uint32_t id = (uint32_t)json_integer_value(id_json);
  char buf[512];
  fprintf(out, "%u", id);
  if (oc->token_text != NULL && oc->token_text(oc->token_ctx, id, buf, sizeof buf))
    fprintf(out, " \"%s\"", buf);
}

/* --logprobs without --json: each step's chosen token and the top
 * alternatives (log-softmax of the raw logits), after the text. */
static void print_logprobs(FILE *out, const tl_run_outcome *oc, json_t *rows) {
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

int tl_run_report(const tl_run_options *o, tl_run_streamer *sm, const tl_run_outcome *oc,
                  FILE *out) {
  char root_hex[65] = "", err[512];
  tl_status rs = oc->receipt_status;
  double prefill_tps = oc->prefill_us ? oc->n_prompt / (oc->prefill_us / 1e6) : 0.0;
  double decode_tps =
      (oc->decode_us && oc->n_ids > 1) ? (oc->n_ids - 1) / (oc->decode_us / 1e6) : 0.0;
  if (!o->json && !oc->cancelled) fputc('\n', out);
  /* Checked again at the write: the file may have appeared meanwhile. */
  if (rs == TL_OK && o->receipt != NULL) rs = tl_run_receipt_check(o, err, sizeof err);
  if (rs == TL_OK && o->receipt != NULL)
    rs = tl_file_write_atomic(o->receipt, oc->receipt, oc->receipt_len, err, sizeof err);
  else if (oc->receipt_status != TL_OK)
    snprintf(err, sizeof err, "%s", tl_status_name(rs));
  if (oc->receipt_status == TL_OK) snprintf(root_hex, sizeof root_hex, "%s", oc->receipt_hex);
  if (oc->status == TL_ERR_NUMERICAL_FAILURE)
    return tl_cli_fail(o->json, oc->status,
                       "generation failed after %zu tokens: non-finite value at stage %s, "
                       "layer %d, position %u, index %zu",
                       oc->n_ids, oc->fault_stage, (int)oc->fault_layer, oc->fault_pos,
                       oc->fault_index);
  if (oc->status != TL_OK)
    return tl_cli_fail(o->json, oc->status, "generation failed after %zu tokens", oc->n_ids);
  if (rs != TL_OK) return tl_cli_fail(o->json, rs, "cannot write the receipt: %s", err);
  if (o->json) {
    json_t *doc_json = json_pack(
        "{s:o,s:o,s:o,s:s,s:I,s:I,s:s,s:{s:f,s:f}}", "ids", ids_json(oc->ids, oc->n_ids),
        "text", tl_json_lossy_string(oc->visible, oc->visible_len), "raw_hex",
        hex_json(oc->raw, oc->raw_len), "stop", oc->stop, "prompt_tokens",
        (json_int_t)oc->n_prompt, "position", (json_int_t)oc->position, "receipt_id",
        root_hex, "timings", "prefill_tokens_per_s", prefill_tps, "decode_tokens_per_s",
        decode_tps);
    char *text;
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
    fprintf(stderr,
            "[%s after %zu tokens; prefill %zu tokens %.2f tokens/s, decode "
            "%.2f tokens/s; receipt %s%s%s]\n",
            oc->stop, oc->n_ids, oc->n_prompt, prefill_tps, decode_tps, root_hex,
            o->receipt ? " in " : "", o->receipt ? o->receipt : "");
  }
  return TL_EXIT_OK;
}

/* A token's diagnostic text through the session's tokenizer. */
static bool session_token_text(void *ctx, uint32_t id, char *buf, size_t cap) {
  const tl_session *s = ctx;
  size_t len = 0, bad;
  if (tl_tok_decode(s->model.tok, &id, 1, TL_TOK_DECODE_DIAGNOSTIC, (uint8_t *)buf, cap - 1,
                    &len, &bad) != TL_OK)
    return false;
  buf[len] = '\0';
  return true;
}

int tl_run_generate(tl_session *s, const tl_run_options *o, const char *mode,
                    bool add_generation_prompt, const uint8_t *prompt_bytes, size_t prompt_len,
                    const uint32_t *ids, size_t n, uint32_t turn, FILE *out,
                    tl_turn_out *turn_out) {
  tl_turn_params tp;
  tl_turn t;
  tl_sampler_field field;
  tl_run_streamer sm;
  tl_run_outcome oc;
  char receipt_hex[65];
  const uint8_t *stops[TL_RUN_MAX_STOPS];
  size_t stop_lens[TL_RUN_MAX_STOPS];
  char err[512];
  tl_status st;
  int rc;
  for (size_t i = 0; i < o->n_stops; i++) {
    stops[i] = (const uint8_t *)o->stops[i];
    stop_lens[i] = strlen(o->stops[i]);
  }
  memset(&tp, 0, sizeof tp);
  tp.temperature = o->temperature;
  tp.top_k = o->top_k;
  tp.top_p = o->top_p;
  tp.min_p = o->min_p;
  tp.repeat_penalty = o->repeat_penalty;
  tp.repeat_window = o->repeat_window;
  tp.given = o->given & TL_RUN_GIVEN_SAMPLING;
  tp.seed = o->seed;
  tp.turn = turn;
  tp.max_new = o->max_new;
  tp.stops = stops;
  tp.stop_lens = stop_lens;
  tp.n_stops = o->n_stops;
  tp.mode = mode;
  tp.add_generation_prompt = add_generation_prompt;
  tp.prompt_bytes = prompt_bytes;
  tp.prompt_len = prompt_len;
  tp.on_visible = tl_run_stream_text;
  tp.on_prefill = tl_run_stream_prefill;
  tp.cancelled = cancelled;
  tp.on_choice = tl_run_stream_choice;
  tp.cb_ctx = &sm;
  tl_run_streamer_begin(&sm, o, out);
  tl_run_catch_sigint(true);
  st = tl_turn_run(s, &tp, ids, n, &t, &field, err, sizeof err);
  tl_run_catch_sigint(false);
  if (st == TL_ERR_INVALID_MODEL) {
    rc = tl_run_sampling_fail(o->json, field);
    tl_run_streamer_end(&sm);
    return rc;
  }
  if (st != TL_OK) {
    tl_run_streamer_end(&sm);
    return tl_cli_fail(o->json, st, "%s", err);
  }
  memset(&oc, 0, sizeof oc);
  oc.status = t.status;
  oc.ids = t.r.ids;
  oc.n_ids = t.r.n_ids;
  oc.raw = t.r.raw;
  oc.raw_len = t.r.raw_len;
  oc.visible = t.r.visible;
  oc.visible_len = t.r.visible_len;
  oc.stop = tl_stop_reason_name(t.r.stop);
  oc.cancelled = t.r.stop == TL_STOP_CANCELLED;
  oc.n_prompt = n;
  oc.position = t.position;
  oc.prefill_us = t.prefill_us;
  oc.decode_us = t.decode_us;
  oc.receipt = t.receipt;
  oc.receipt_len = t.receipt_len;
  oc.receipt_status = t.receipt_status;
  tl_cli_hex(t.receipt_id, 32, receipt_hex);
  oc.receipt_hex = receipt_hex;
  oc.fault_stage = tl_qwen3_stage_name(t.r.fault.stage);
  oc.fault_layer = t.r.fault.layer;
  oc.fault_pos = t.r.fault.pos;
  oc.fault_index = t.r.fault.index;
  oc.token_text = session_token_text;
  oc.token_ctx = s;
  rc = tl_run_report(o, &sm, &oc, out);
  if (turn_out != NULL && t.status == TL_OK) {
    const tl_gen_result *r = &t.r;
    turn_out->ids = malloc((r->n_ids ? r->n_ids : 1) * sizeof *r->ids);
    turn_out->visible = malloc(r->visible_len + 1);
    if (turn_out->ids != NULL && turn_out->visible != NULL) {
      memcpy(turn_out->ids, r->ids, r->n_ids * sizeof *r->ids);
      memcpy(turn_out->visible, r->visible, r->visible_len);
      turn_out->visible[r->visible_len] = '\0';
      turn_out->n_ids = r->n_ids;
      turn_out->visible_len = r->visible_len;
      turn_out->stop = (int)r->stop;
    }
  }
  tl_turn_free(&t);
  tl_run_streamer_end(&sm);
  return rc;
}
