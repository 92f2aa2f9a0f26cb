#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lane.h"

static void report(bool json, const char *code, json_t *extra, const char *fmt,
                   va_list ap) {
  char detail[1024];
  vsnprintf(detail, sizeof detail, fmt, ap);
  if (json) {
    json_t *obj = json_pack("{s:s, s:s}", "error", code, "detail", detail);
    if (obj != NULL && extra != NULL) json_object_update(obj, extra);
    char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    json_decref(obj);
  }
  json_decref(extra);
  fprintf(stderr, "error: %s: %s\n", code, detail);
}

int tl_cli_fail(bool json, tl_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(json, tl_status_name(status), NULL, fmt, ap);
  va_end(ap);
  return TL_EXIT_FAILURE;
}

int tl_cli_fail_with(bool json, tl_status status, json_t *extra,
                     const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(json, tl_status_name(status), extra, fmt, ap);
  va_end(ap);
  return TL_EXIT_FAILURE;
}

/* errno of the first failed write to stdout (0: none seen yet). */
static int stdout_errno;

bool tl_cli_flush(FILE *out) {
  int e = 0;
  if (fflush(out) != 0) e = errno;
  if (e == 0 && !ferror(out)) return true;
  if (out == stdout && stdout_errno == 0) stdout_errno = e ? e : EIO;
  return false;
}

int tl_cli_finish(int rc) {
  bool failed = !tl_cli_flush(stdout);
  int e = stdout_errno;
  /* fclose reports what the final close(2) said (a write the kernel
   * deferred); EBADF there means stdout was closed and nothing was written
   * to it (a write would have failed above). */
  if (fclose(stdout) != 0 && !failed && errno != EBADF) {
    failed = true;
    e = errno;
  }
  if (!failed) return rc;
  fprintf(stderr, "error: io: cannot write standard output: %s\n", strerror(e ? e : EIO));
  return rc != TL_EXIT_OK ? rc : TL_EXIT_FAILURE;
}

static int exit_signal;

void tl_cli_exit_by_signal(int sig) { exit_signal = sig; }

int tl_cli_exit_signal(void) { return exit_signal; }

int tl_cli_output_value(bool json, int argc, char **argv, int *i, const char **v) {
  const char *flag = argv[*i];
  int rc = tl_cli_value(json, argc, argv, i, v);
  if (rc < 0 && strcmp(*v, "-") == 0)
    return tl_cli_usage(json, "%s -: this option writes a file, not standard output "
                        "(./- names a file called '-')", flag);
  return rc;
}

int tl_cli_usage(bool json, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(json, "usage", NULL, fmt, ap);
  va_end(ap);
  return TL_EXIT_USAGE;
}

json_t *tl_cli_json_hex(const uint8_t *p, size_t n) {
  char *buf = malloc(2 * n + 1);
  json_t *v;
  if (buf == NULL) return json_null();
  tl_hex_encode(p, n, buf);
  v = json_string(buf);
  free(buf);
  return v;
}

json_t *tl_cli_json_ids(const uint32_t *ids, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a != NULL && i < n; i++)
    json_array_append_new(a, json_integer(ids[i]));
  return a != NULL ? a : json_null();
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int tl_cli_unhex(const char *hex, uint8_t **out, size_t *len) {
  size_t n = strlen(hex);
  if (n % 2 != 0) return -1;
  *out = malloc(n / 2 + 1);
  if (*out == NULL) return -1;
  for (size_t i = 0; i < n / 2; i++) {
    int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      free(*out);
      *out = NULL;
      return -1;
    }
    (*out)[i] = (uint8_t)(hi << 4 | lo);
  }
  *len = n / 2;
  return 0;
}

bool tl_cli_parse_u64(const char *s, uint64_t *out) {
  uint64_t v = 0;
  if (*s == '\0') return false;
  for (; *s != '\0'; s++) {
    unsigned d = (unsigned)(unsigned char)*s - '0';
    if (d > 9 || v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool tl_cli_parse_i64(const char *s, int64_t *out) {
  bool neg = *s == '-';
  uint64_t mag;
  if (!tl_cli_parse_u64(s + neg, &mag) || mag > (uint64_t)INT64_MAX + neg)
    return false;
  /* -2^63 has no positive twin: negate in unsigned arithmetic. */
  *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
  return true;
}

static size_t digits(const char *s) {
  size_t n = 0;
  while (s[n] >= '0' && s[n] <= '9') n++;
  return n;
}

bool tl_cli_parse_f64(const char *s, double *out) {
  const char *p = s + (*s == '-');
  size_t whole = digits(p), frac = 0;
  char *end;
  double v;
  p += whole;
  if (*p == '.') frac = digits(++p);
  p += frac;
  if (whole + frac == 0) return false;
  if (*p == 'e' || *p == 'E') {
    size_t exp;
    p += 1 + (p[1] == '-' || p[1] == '+');
    if ((exp = digits(p)) == 0) return false;
    p += exp;
  }
  if (*p != '\0') return false;
  /* The grammar above is a subset of strtod's in the C locale, which the
   * CLI never changes; ERANGE is an overflow or a result below the
   * normal range (which would read as a different number). */
  errno = 0;
  v = strtod(s, &end);
  if (end != p || errno != 0 || !isfinite(v)) return false;
  *out = v;
  return true;
}

int tl_cli_value(bool json, int argc, char **argv, int *i, const char **v) {
  if (*i + 1 >= argc)
    return tl_cli_usage(json, "'%s' needs a value", argv[*i]);
  *v = argv[++*i];
  return -1;
}

int tl_cli_flag_u64(bool json, const char *flag, const char *v, uint64_t lo,
                    uint64_t hi, uint64_t *out) {
  uint64_t x;
  if (!tl_cli_parse_u64(v, &x) || x < lo || x > hi)
    return tl_cli_usage(json, "%s must be an integer in %" PRIu64 "..%" PRIu64
                        ", got '%s'", flag, lo, hi, v);
  *out = x;
  return -1;
}

int tl_cli_flag_u32(bool json, const char *flag, const char *v, uint32_t lo,
                    uint32_t hi, uint32_t *out) {
  uint64_t x = 0;
  int rc = tl_cli_flag_u64(json, flag, v, lo, hi, &x);
  if (rc < 0) *out = (uint32_t)x;
  return rc;
}

int tl_lane_flag(bool json, int argc, char **argv, int *i, tl_lane_options *o) {
  const char *a = argv[*i], *v = NULL;
  int rc;
  if (strcmp(a, "--mmap") == 0) {
    o->mmap = true;
    return -1;
  }
  if (strcmp(a, "--verify") == 0) {
    if ((rc = tl_cli_value(json, argc, argv, i, &v)) >= 0) return rc;
    if (strcmp(v, "full") != 0 && strcmp(v, "stamp") != 0)
      return tl_cli_usage(json, "--verify must be full or stamp, not '%s'", v);
    /* the model opens through the public API, which takes no options:
     * the environment is its channel (as TINYLM_KERNELS is the lane's) */
    setenv(TL_VERIFY_ENV, v, 1);
    return -1;
  }
  if (strcmp(a, "--lane") != 0 && strcmp(a, "-t") != 0 && strcmp(a, "--threads") != 0)
    return 0;
  if ((rc = tl_cli_value(json, argc, argv, i, &v)) >= 0) return rc;
  if (strcmp(a, "--lane") == 0) {
    if (strcmp(v, "fast") != 0 && strcmp(v, "scalar") != 0)
      return tl_cli_usage(json, "--lane must be scalar or fast, not '%s'", v);
    o->fast = strcmp(v, "fast") == 0;
    return -1;
  }
  return tl_cli_flag_u32(json, a, v, 1, TL_PAR_MAX_TASKS, &o->threads);
}

int tl_cli_flag_f64(bool json, const char *flag, const char *v, double *out) {
  if (!tl_cli_parse_f64(v, out))
    return tl_cli_usage(json, "%s must be a finite decimal number, got '%s'",
                        flag, v);
  return -1;
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void tl_cli_progress_begin(tl_cli_progress *p, const char *what, bool force) {
  p->tty = isatty(STDERR_FILENO) != 0;
  p->on = force || p->tty;
  p->what = what;
  p->start_us = now_us();
  p->last_us = 0;
}

void tl_cli_progress_update(tl_cli_progress *p, const char *unit,
                            uint64_t done, uint64_t total, uint64_t bytes,
                            uint64_t bytes_total) {
  uint64_t t = now_us();
  double secs, rate, left;
  if (!p->on || (t - p->last_us < 100000 && done < total)) return;
  p->last_us = t;
  secs = (double)(t - p->start_us) / 1e6;
  fprintf(stderr, "%s[%s %" PRIu64 "/%" PRIu64 " %s", p->tty ? "\r" : "",
          p->what, done, total, unit);
  if (bytes > 0 && secs > 0) {
    rate = (double)bytes / secs;
    fprintf(stderr, ", %.1f MB/s", rate / 1e6);
  }
  if (done > 0 && done < total && secs > 0) {
    left = bytes_total > bytes && bytes > 0
               ? secs * (double)(bytes_total - bytes) / (double)bytes
               : secs * (double)(total - done) / (double)done;
    fprintf(stderr, ", ETA %.0f s", left);
  }
  fputs(p->tty ? "]\033[K" : "]\n", stderr);
  fflush(stderr);
}

void tl_cli_progress_end(tl_cli_progress *p) {
  /* On a terminal the line disappears; a log keeps its last line. */
  if (p->on && p->tty) fputs("\r\033[K", stderr);
  fflush(stderr);
}

void tl_cli_progress_step(tl_cli_progress *p, const char *what) {
  if (strcmp(p->what, what) == 0) return;
  p->what = what;
  p->start_us = now_us();
  p->last_us = 0;
}

bool tl_cli_wants_json(int argc, char **argv) {
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--json") == 0) return true;
  return false;
}
