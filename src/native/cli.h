/* Shared conventions of the tinylm command line (docs/architecture.md §3, §11):
 * human text by default, --json for machines, errors as
 * `error: <code>: <detail>` on stderr (or {"error": ...} with --json) and a
 * non-zero exit status. */
#ifndef TL_NATIVE_CLI_H
#define TL_NATIVE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bytes.h" /* tl_hex_encode */
#include "tinylm.h"

struct json_t;

enum {
  TL_EXIT_OK = 0,
  TL_EXIT_FAILURE = 1, /* the command ran and failed: a typed status */
  TL_EXIT_USAGE = 2    /* the command line itself was wrong */
};

/* Reports status with a printf-style detail; returns TL_EXIT_FAILURE. */
int tl_cli_fail(bool json, tl_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* tl_cli_fail with extra machine-readable fields (a JSON object, consumed)
 * merged into the --json error object, e.g. {"offset": 12}. */
int tl_cli_fail_with(bool json, tl_status status, struct json_t *extra,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Standard output, checked (every command's output is): tl_cli_flush
 * flushes out and returns false once a write to it has failed (the
 * reason, errno, is kept), so streaming work stops early. tl_cli_finish
 * ends the process's stdout (fflush, ferror, fclose) after a command
 * returned rc: when any write failed it reports
 * `error: io: cannot write standard output: <reason>` on stderr and
 * returns TL_EXIT_FAILURE (rc when rc is already a failure), else rc.
 * A closed pipe: SIGPIPE keeps its default action (the process ends
 * quietly, as head(1) users expect); when SIGPIPE is ignored, EPIPE is
 * this io error. */
bool tl_cli_flush(FILE *out);
int tl_cli_finish(int rc);

/* The process ends by signal sig once the command has returned and its
 * output is flushed (main.c): a command stopped by Ctrl-C reports what it
 * did and then exits as killed by SIGINT (status 130 in a shell), as
 * convert, synth and pull do. */
void tl_cli_exit_by_signal(int sig);
int tl_cli_exit_signal(void);

/* Whether the command line asks for JSON output: a `--json` anywhere
 * before `--`, so that errors found before the flag is reached (a bad
 * value earlier on the line) are already reported as JSON. */
bool tl_cli_wants_json(int argc, char **argv);

/* Reports a usage error; returns TL_EXIT_USAGE. */
int tl_cli_usage(bool json, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Bytes as a JSON string of their lower-case hex, ids as a JSON array of
 * integers (JSON null when memory runs out). */
struct json_t *tl_cli_json_hex(const uint8_t *p, size_t n);
struct json_t *tl_cli_json_ids(const uint32_t *ids, size_t n);
/* Hex text (either case) to a malloc'd byte string of *len bytes; -1 on
 * odd length, a non-digit or no memory. */
int tl_cli_unhex(const char *hex, uint8_t **out, size_t *len);

/* Strict numbers for flag values, one parser per type, used by every
 * command: the whole string is the number (no spaces, no '+', no trailing
 * bytes), in range, with overflow detected. Integers are ASCII decimal
 * digits; a leading '-' only for the signed type. A double is
 * -?(D+(.D*)?|.D+)([eE][-+]?D+)? and finite (no hex, inf, nan, or
 * out-of-range exponent). */
bool tl_cli_parse_u64(const char *s, uint64_t *out);
bool tl_cli_parse_i64(const char *s, int64_t *out);
bool tl_cli_parse_f64(const char *s, double *out);

/* Token ids "1 2 3" (spaces, commas, tabs or newlines between them) into
 * *ids (malloc'd; free it) and *n: 0, or -1 (nothing allocated) for
 * anything else or an id past UINT32_MAX. Used by decode and observe. */
int tl_cli_parse_ids(const char *s, uint32_t **ids, size_t *n);

/* The value of the flag argv[*i] into *v (advancing *i). Returns -1, or
 * reports "'FLAG' needs a value" and returns TL_EXIT_USAGE when the flag
 * is the last argument. */
int tl_cli_value(bool json, int argc, char **argv, int *i, const char **v);

/* tl_cli_value for a flag that names a file to write: "-" is refused as a
 * usage error (it would make a file called "-"; stdout is written only
 * where a command says so, e.g. observe -o -; ./- names such a file). */
int tl_cli_output_value(bool json, int argc, char **argv, int *i, const char **v);

/* The value v of a flag as an integer in [lo, hi] (or a double). Returns
 * -1 when it is one, else reports a usage error naming the flag, the
 * accepted range and v, and returns TL_EXIT_USAGE. */
int tl_cli_flag_u64(bool json, const char *flag, const char *v, uint64_t lo,
                    uint64_t hi, uint64_t *out);
int tl_cli_flag_u32(bool json, const char *flag, const char *v, uint32_t lo,
                    uint32_t hi, uint32_t *out);
int tl_cli_flag_f64(bool json, const char *flag, const char *v, double *out);

/* The lane flags shared by run, chat, bench, serve, observe and verify
 * (src/lib/lane.h chooses the lane from them). */
#define TL_LANE_USAGE                                                        \
  "  --lane L      scalar (the strict reference lane) or fast (default):\n"  \
  "                docs/fast-profile.md\n"                                   \
  "  -t, --threads N  threads of the fast lane (default: the CPUs online,\n" \
  "                at most 256)\n"                                           \
  "  --mmap        float weights on the file mapping, not a copy\n"         \
  "  --verify full  every digest, even with a verified stamp (docs/cli.md)\n" \
  "  (environment TINYLM_KERNELS=scalar|avx2|avx-vnni|avx512:\n"   \
  "                the fast lane's kernels, not the fastest; same bits)\n"

struct tl_lane_options;
/* If argv[*i] is one of the lane flags, consumes it (and its value) and
 * returns -1, or reports a usage error and returns TL_EXIT_USAGE; returns
 * 0 when argv[*i] is not a lane flag. */
int tl_lane_flag(bool json, int argc, char **argv, int *i, struct tl_lane_options *o);

/* Progress of long work on stderr (convert, prefill, inspect --verify):
 * shown when stderr is a terminal, or always when forced (--progress),
 * at most ten updates a second; on a terminal one line rewritten in
 * place, otherwise one line per update. */
typedef struct tl_cli_progress {
  bool on, tty;
  const char *what;
  uint64_t start_us, last_us;
} tl_cli_progress;

void tl_cli_progress_begin(tl_cli_progress *p, const char *what, bool force);
/* done of total items ("[convert 3/311 tensors, 40.1 MB/s, ETA 9 s]"); bytes of bytes_total processed
 * (both 0 when unknown) gives MB/s. The ETA assumes the rate so far holds
 * for the rest (of the bytes when known, else of the items). */
void tl_cli_progress_update(tl_cli_progress *p, const char *unit,
                            uint64_t done, uint64_t total, uint64_t bytes,
                            uint64_t bytes_total);
void tl_cli_progress_end(tl_cli_progress *p);
/* The next step of the same work: what its lines are called from now on,
 * its rate and ETA counted from now (nothing when what is already it). */
void tl_cli_progress_step(tl_cli_progress *p, const char *what);

/* The two silent seconds-long steps before chat's and run's first output,
 * said on stderr when it is a terminal (nothing otherwise): "[MODEL:
 * verifying the digests (N MB) …]" while tl_model_open_file checks
 * every section and tensor digest, then "[MODEL: verified N MB in S s,
 * X MB/s]" in its place; the same for tl_session_new loading the weights
 * into the lane ("[fast lane: loading the weights (N MB) …]", then
 * "[fast lane: loaded the weights, N MB in S s, X MB/s]").
 * A failure erases the line: the error follows on its own. Same results
 * as the calls they wrap. */
tl_status tl_cli_model_open(const char *path, tl_model_handle *out);
tl_status tl_cli_session_new(tl_model_handle model, const tl_session_options *opts,
                             tl_session_handle *out);

/* Subcommands: argv[0] is the subcommand's name. */
int tl_cmd_bench(int argc, char **argv);
int tl_cmd_bench_grammar(int argc, char **argv); /* tinylm bench --grammar */
int tl_cmd_hash(int argc, char **argv);
int tl_cmd_convert(int argc, char **argv);
int tl_cmd_embed(int argc, char **argv);
int tl_cmd_encode(int argc, char **argv);
int tl_cmd_decode(int argc, char **argv);
int tl_cmd_render(int argc, char **argv);
int tl_cmd_inspect(int argc, char **argv);
int tl_cmd_verify(int argc, char **argv);
int tl_cmd_observe(int argc, char **argv);
int tl_cmd_run(int argc, char **argv);
int tl_cmd_serve(int argc, char **argv);
int tl_cmd_receipt(int argc, char **argv);
int tl_cmd_chat(int argc, char **argv);
int tl_cmd_synth(int argc, char **argv);
int tl_cmd_pull(int argc, char **argv);
int tl_cmd_drift(int argc, char **argv);
int tl_cmd_plan(int argc, char **argv);
int tl_cmd_promote(int argc, char **argv);
int tl_cmd_report(int argc, char **argv);
int tl_cmd_grammar(int argc, char **argv);

#endif
