/* What run and chat share: the sampling and stopping options, and one
 * generation through the public API (include/tinylm.h) with the terminal
 * around it (streaming, Ctrl-C, logprobs, receipt, report). */
#ifndef TL_NATIVE_RUN_COMMON_H
#define TL_NATIVE_RUN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "cli.h"
#include "lane.h"
#include "tinylm.h"

#define TL_RUN_MAX_STOPS 8
#define TL_RUN_MAX_LOGPROBS 20

typedef struct tl_run_options {
  const char *model, *prompt, *prompt_file, *messages, *receipt;
  uint32_t max_new; /* 0: no cap (the default, -n -1): until EOS, a stop
                     * string or the context is full */
  uint32_t top_k, repeat_window, logprobs, context;
  double temperature, top_p, min_p, repeat_penalty;
  double frequency_penalty, presence_penalty; /* 0: off */
  uint64_t seed, mem_budget; /* mem_budget in bytes; 0: none */
  const char *stops[TL_RUN_MAX_STOPS];
  size_t n_stops;
  const char *system, *receipt_dir; /* chat only */
  tl_lane_options lane; /* --lane, -t/--threads, --mmap (lane.h) */
  bool json, preflight, progress, force;
  bool raw;  /* run --raw: --prompt/--prompt-file as plain text, no template */
  int think; /* TL_RUN_THINK_*: --think / --no-think */
  bool hide_thinking; /* --hide-thinking: the reply's think block not printed */
  uint32_t given; /* TL_RUN_GIVEN_*: flags set on the command line */
  /* Structured output (docs/structured.md): at most one of --json-object,
   * --json-schema FILE, --grammar FILE (GBNF), --regex TEXT; --think-budget
   * N with one of them. grammar: the compiled handle (tl_run_grammar). */
  bool json_object;
  const char *json_schema, *grammar_file, *regex;
  uint32_t think_budget;
  tl_grammar_handle grammar;
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
  /* the command line's own */
  TL_RUN_GIVEN_SEED = 1u << 16,          /* else a fresh one was drawn */
  TL_RUN_GIVEN_REPEAT_WINDOW = 1u << 17  /* else 64 with --repeat-penalty */
};

/* The chat template's thinking switch (enable_thinking): the template's
 * own default unless a flag asks (Qwen3's template thinks unless
 * enable_thinking is false). */
enum { TL_RUN_THINK_DEFAULT = -1, TL_RUN_THINK_OFF = 0, TL_RUN_THINK_ON = 1 };

/* Parses argv into o (defaults first); every number strictly (cli.h) and
 * the sampling flags against the sampler's ranges. Returns -1 to go on, or
 * the exit status to return (usage error, --help). */
int tl_run_parse(int argc, char **argv, const char *usage, tl_run_options *o);

/* The flags' usage lines, for run's and chat's usage texts. */
#define TL_RUN_GRAMMAR_USAGE                                                       \
  "  --json-object    the reply is one JSON object (any)\n"                       \
  "  --json-schema FILE  the reply is JSON valid for the schema in FILE (draft\n"  \
  "                   2020-12; a keyword tinylm cannot enforce is refused)\n"      \
  "  --grammar FILE   the reply is a sentence of the GBNF grammar in FILE\n"      \
  "  --regex TEXT     the reply matches the regular expression TEXT\n"            \
  "  --think-budget N with one of them and thinking on: at most N tokens inside\n" \
  "                   <think> (1..2^32-1, default 1024), then </think> is forced\n"

#define TL_RUN_THINKING_USAGE                                                      \
  "  --hide-thinking  print the reply without its think block (on a terminal the\n" \
  "                   block is shown dimmed, without its tags; through a pipe,\n"  \
  "                   as the model wrote it)\n"

/* Compiles the grammar o's flags ask for into o->grammar (TL_NO_HANDLE
 * when none), reading --json-schema's or --grammar's file. Returns -1 to
 * go on, else the exit status (the compiler's typed refusal: the message
 * names the keyword or construct and where). */
int tl_run_grammar(tl_run_options *o);

/* Whether --receipt may be written (file.h's tl_file_output_check: never
 * the model or the prompt's file, an existing file only with --force).
 * TL_OK when there is no --receipt. */
tl_status tl_run_receipt_check(const tl_run_options *o, char *err, size_t cap);

/* The last failure on handle h (tl_error_detail), reported as every
 * command reports one; returns the exit status. */
int tl_run_api_fail(bool json, uint32_t h);

/* The session options o's --lane, -t/--threads, --mmap and --mem-budget
 * ask for (context left 0: the caller's). */
void tl_run_session_options(const tl_run_options *o, tl_session_options *so);

/* The conversation conv[0..len) (read from path) rendered for a reply
 * through model: *text (malloc'd; free it) and *text_len. A
 * refusal is reported as run --messages reports it (tl_render_fail: JSON
 * syntax errors as path:line:column, the bad message, the template's
 * error kind); returns -1 on success, else the exit status. */
int tl_run_render(bool json, tl_model_handle model, const uint8_t *conv, size_t len,
                  const char *path, uint8_t **text, size_t *text_len);

/* Generation parameters with o's sampling values (those given), seed,
 * -n and --stop strings; the prompt and flags are the caller's. */
void tl_run_generation_params(const tl_run_options *o, tl_generation_params *p);

/* Runs the generation p describes on session (a session on model),
 * streaming visible text to out (not with --json), prefill progress on
 * stderr, Ctrl-C stopping the reply like a stop rule, and reports it as
 * run and chat do: the --receipt file, then the failure (error: ...), or
 * the JSON document (--json, with --logprobs' rows) or the summary line on
 * stderr (and the logprobs table on out). Returns the exit status; on
 * TL_EXIT_OK with keep not NULL, *keep gets the generation (the caller
 * reads its result and frees it), else it is freed. */
int tl_run_generation(const tl_run_options *o, tl_model_handle model, tl_session_handle session,
                      tl_generation_params *p, FILE *out, tl_generation_handle *keep);

/* A seed as run --json and serve write it: a JSON integer, or a decimal
 * string from 2^63 up. */
json_t *tl_run_seed_json(uint64_t seed);

/* Whether Ctrl-C stopped the last generation. */
bool tl_run_interrupted(void);

/* Bytes as a JSON string, each maximal ill-formed UTF-8 subpart replaced
 * by U+FFFD. */
struct json_t;
struct json_t *tl_json_lossy_string(const uint8_t *b, size_t n);

#endif
