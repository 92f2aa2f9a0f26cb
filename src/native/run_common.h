/* What run and chat share: the sampling and stopping options, and one
 * generation turn on an open session (sampler, streaming, Ctrl-C,
 * logprobs, receipt, report). */
#ifndef TL_NATIVE_RUN_COMMON_H
#define TL_NATIVE_RUN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "sample/sampler.h"
#include "session.h"

#define TL_RUN_MAX_STOPS 8
#define TL_RUN_MAX_LOGPROBS 20

typedef struct tl_run_options {
  const char *model, *prompt, *prompt_file, *messages, *receipt;
  uint32_t max_new; /* 0: no cap (-n -1): until the context is full */
  uint32_t top_k, repeat_window, logprobs, context;
  double temperature, top_p, min_p, repeat_penalty;
  uint64_t seed, mem_budget; /* mem_budget in bytes; 0: none */
  const char *stops[TL_RUN_MAX_STOPS];
  size_t n_stops;
  const char *system, *receipt_dir; /* chat only */
  tl_lane_options lane; /* --lane, -t/--threads, --mmap (lane.h) */
  bool json, preflight, progress, force;
  uint32_t given; /* TL_RUN_GIVEN_*: flags set on the command line */
} tl_run_options;

enum {
  /* the sampling flags: the public API's bits (tinylm.h) */
  TL_RUN_GIVEN_TEMPERATURE = TL_GIVEN_TEMPERATURE,
  TL_RUN_GIVEN_TOP_K = TL_GIVEN_TOP_K,
  TL_RUN_GIVEN_TOP_P = TL_GIVEN_TOP_P,
  TL_RUN_GIVEN_MIN_P = TL_GIVEN_MIN_P,
  TL_RUN_GIVEN_REPEAT_PENALTY = TL_GIVEN_REPEAT_PENALTY,
  TL_RUN_GIVEN_SAMPLING = TL_RUN_GIVEN_TEMPERATURE | TL_RUN_GIVEN_TOP_K | TL_RUN_GIVEN_TOP_P |
                          TL_RUN_GIVEN_MIN_P | TL_RUN_GIVEN_REPEAT_PENALTY,
  TL_RUN_GIVEN_MAX_NEW = 1u << 5
};

/* Parses argv into o (defaults first); every number strictly (cli.h) and
 * the sampling flags against the sampler's ranges. Returns -1 to go on, or
 * the exit status to return (usage error, --help). */
int tl_run_parse(int argc, char **argv, const char *usage, tl_run_options *o);

/* Whether --receipt may be written (file.h's tl_file_output_check: never
 * the model or the prompt's file, an existing file only with --force).
 * TL_OK when there is no --receipt. */
tl_status tl_run_receipt_check(const tl_run_options *o, char *err, size_t cap);

/* What a turn produced, for a caller that keeps a conversation (malloc'd
 * copies; free with tl_turn_out_free). */
typedef struct tl_turn_out {
  uint32_t *ids;
  size_t n_ids;
  char *visible;
  size_t visible_len;
  int stop; /* tl_stop_reason */
} tl_turn_out;

void tl_turn_out_free(tl_turn_out *t);

/* Generates after ids[0..n) (which follow the cache's current contents),
 * for the prompt_bytes rendered in mode ("text" or "messages", the latter
 * with or without the template's generation prompt: the receipt says),
 * streaming visible text to out (human mode) and reporting as o says.
 * turn numbers the draws (DESIGN.md §7). On return the cache holds the
 * prompt and every generated token whose forward pass completed.
 * Returns the exit status; *generated (when not NULL) gets the ids. */
int tl_run_generate(tl_session *s, const tl_run_options *o, const char *mode,
                    bool add_generation_prompt, const uint8_t *prompt_bytes, size_t prompt_len,
                    const uint32_t *ids, size_t n, uint32_t turn, FILE *out,
                    tl_turn_out *turn_out);

/* The terminal side of a turn: visible text streamed to out (not with
 * --json), prefill progress on stderr, the --logprobs rows. The stream
 * functions take the streamer as ctx (generation callbacks). */
typedef struct tl_run_streamer {
  FILE *out;
  bool json;
  uint32_t logprobs;
  struct json_t *logprob_rows; /* NULL unless --logprobs */
  tl_cli_progress progress;
} tl_run_streamer;

void tl_run_streamer_begin(tl_run_streamer *sm, const tl_run_options *o, FILE *out);
void tl_run_streamer_end(tl_run_streamer *sm);
void tl_run_stream_text(void *sm, const uint8_t *bytes, size_t n);
void tl_run_stream_prefill(void *sm, size_t done, size_t total);
void tl_run_stream_choice(void *sm, const float *logits, size_t vocab, uint32_t id);

/* SIGINT sets tl_run_interrupted (on) / the previous handler again (off). */
void tl_run_catch_sigint(bool on);

/* What a generation that ran produced, for tl_run_report. */
typedef struct tl_run_outcome {
  tl_status status; /* TL_OK (also when cancelled), or the failure */
  const uint32_t *ids;
  size_t n_ids;
  const uint8_t *raw, *visible;
  size_t raw_len, visible_len;
  const char *stop; /* tl_stop_reason_name */
  bool cancelled;
  size_t n_prompt;
  uint32_t position;
  uint64_t prefill_us, decode_us;
  const uint8_t *receipt;
  size_t receipt_len;
  const char *receipt_hex;   /* the receipt id */
  tl_status receipt_status; /* TL_OK when receipt is set */
  const char *fault_stage;  /* TL_ERR_NUMERICAL_FAILURE: where */
  int32_t fault_layer;
  uint32_t fault_pos;
  size_t fault_index;
  /* A token's text in the decoder's diagnostic mode (--logprobs). */
  bool (*token_text)(void *ctx, uint32_t id, char *buf, size_t cap);
  void *token_ctx;
} tl_run_outcome;

/* Reports a generation as run and chat do: the --receipt file, then the
 * failure (error: ...), or the JSON document (--json, with sm's logprobs)
 * or the summary line on stderr (and the logprobs table on out). Returns
 * the exit status. */
int tl_run_report(const tl_run_options *o, tl_run_streamer *sm, const tl_run_outcome *oc,
                  FILE *out);

/* An artifact's sampling default out of range, named by its flag. */
int tl_run_sampling_fail(bool json, tl_sampler_field field);

/* Bytes as a JSON string, each maximal ill-formed UTF-8 subpart replaced
 * by U+FFFD. */
struct json_t;
struct json_t *tl_json_lossy_string(const uint8_t *b, size_t n);

/* Set by SIGINT while a turn runs; checked at every cancellation point. */
extern volatile int tl_run_interrupted;

#endif
