/* Shared conventions of the tinylm command line (DESIGN.md §3, §11):
 * human text by default, --json for machines, errors as
 * `error: <code>: <detail>` on stderr (or {"error": ...} with --json) and a
 * non-zero exit status. */
#ifndef TL_NATIVE_CLI_H
#define TL_NATIVE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Reports a usage error; returns TL_EXIT_USAGE. */
int tl_cli_usage(bool json, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Lower-case hex of n bytes into out (2n + 1 bytes, NUL-terminated). */
void tl_cli_hex(const uint8_t *p, size_t n, char *out);

/* Subcommands: argv[0] is the subcommand's name. */
int tl_cmd_hash(int argc, char **argv);
int tl_cmd_convert(int argc, char **argv);
int tl_cmd_encode(int argc, char **argv);
int tl_cmd_decode(int argc, char **argv);
int tl_cmd_render(int argc, char **argv);
int tl_cmd_inspect(int argc, char **argv);
int tl_cmd_verify(int argc, char **argv);
int tl_cmd_run(int argc, char **argv);
int tl_cmd_receipt(int argc, char **argv);
int tl_cmd_chat(int argc, char **argv);
int tl_cmd_synth(int argc, char **argv);

#endif
