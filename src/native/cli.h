/* Shared conventions of the tinylm command line (DESIGN.md §3, §11):
 * human text by default, --json for machines, errors as
 * `error: <code>: <detail>` on stderr (or {"error": ...} with --json) and a
 * non-zero exit status. */
#ifndef TL_NATIVE_CLI_H
#define TL_NATIVE_CLI_H

#include <stdbool.h>

#include "tinylm.h"

enum {
  TL_EXIT_OK = 0,
  TL_EXIT_FAILURE = 1, /* the command ran and failed: a typed status */
  TL_EXIT_USAGE = 2    /* the command line itself was wrong */
};

/* Reports status with a printf-style detail; returns TL_EXIT_FAILURE. */
int tl_cli_fail(bool json, tl_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reports a usage error; returns TL_EXIT_USAGE. */
int tl_cli_usage(bool json, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Subcommands: argv[0] is the subcommand's name. */
int tl_cmd_hash(int argc, char **argv);

#endif
