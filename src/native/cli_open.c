/* The CLI's model open and session start with a line of progress each
 * (cli.h: tl_cli_model_open, tl_cli_session_new). Apart from cli.c, which
 * the flag fuzzer compiles whole without the library. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <sys/stat.h>

#include "cli.h"
#include "clock.h"

/* One step with no count of its own: "[what …]" now; at the end,
 * "[done N MB in S s, X MB/s]" in its place (ok) or nothing (failed).
 * Terminal only. Returns the start time. */
static double step_begin(tl_cli_progress *p, const char *what, uint64_t bytes) {
  tl_cli_progress_begin(p, what, false);
  if (p->on) {
    fprintf(stderr, "[%s (%.0f MB) …]", what, (double)bytes / 1e6);
    fflush(stderr);
  }
  return tl_now_s();
}

static void step_end(const tl_cli_progress *p, double start, bool ok, const char *done,
                     uint64_t bytes) {
  double secs = tl_now_s() - start;
  if (!p->on) return;
  fputs("\r\033[K", stderr);
  if (ok) {
    fprintf(stderr, "[%s %.0f MB in %.1f s", done, (double)bytes / 1e6, secs);
    if (secs > 0) fprintf(stderr, ", %.0f MB/s", (double)bytes / 1e6 / secs);
    fputs("]\n", stderr);
  }
  fflush(stderr);
}

tl_status tl_cli_model_open(const char *path, tl_model_handle *out) {
  struct stat sb;
  uint64_t bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
  char what[512], done[512];
  tl_cli_progress p;
  tl_status st;
  double start;
  snprintf(what, sizeof what, "%s: verifying the digests", path);
  snprintf(done, sizeof done, "%s: verified", path);
  start = step_begin(&p, what, bytes);
  st = tl_model_open_file(path, out);
  step_end(&p, start, st == TL_OK, done, bytes);
  return st;
}

tl_status tl_cli_session_new(tl_model_handle model, const tl_session_options *opts,
                             tl_session_handle *out) {
  tl_preflight_plan plan;
  const char *lane = opts->lane == TL_LANE_SCALAR ? "strict" : "fast";
  char what[128], done[128];
  tl_cli_progress p;
  tl_status st;
  double start;
  if (tl_model_preflight(model, opts, &plan) != TL_OK) plan.weights = 0;
  snprintf(what, sizeof what, "%s lane: loading the weights", lane);
  snprintf(done, sizeof done, "%s lane: loaded the weights,", lane);
  start = step_begin(&p, what, plan.weights);
  st = tl_session_new(model, opts, out);
  step_end(&p, start, st == TL_OK, done, plan.weights);
  return st;
}
