/* tinylm receipt show FILE: checks a receipt and prints it. A run receipt's
 * hash graph is verified (every node id recomputes, the nodes are exactly
 * the graph under the root, every field is one the format defines); a
 * converter receipt is a record, checked against its schema only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acquire.h"
#include "cli.h"
#include "file.h"
#include "receipt.h"

static const char usage_text[] =
    "usage: tinylm receipt show FILE [--json]\n"
    "  (also acquisition and drift receipts: tinylm pull, tinylm drift)\n"
    "  FILE is a run receipt (run --receipt), a converter receipt\n"
    "  (convert --receipt), a browser capability receipt (web/tinylm.js)\n"
    "  or a comparison or promotion receipt (tinylm promote); all but the\n"
    "  converter's are hash graphs whose node ids are verified\n";

int tl_cmd_receipt(int argc, char **argv) {
  const char *sub = NULL, *path = NULL;
  bool json = false;
  tl_file_view v;
  char err[512];
  tl_status st;
  bool shown;
  /* --json anywhere makes usage errors JSON too. */
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      continue;
    } else if (a[0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", a, usage_text);
    } else if (sub == NULL) {
      sub = a;
    } else if (path == NULL) {
      path = a;
    } else {
      return tl_cli_usage(json, "unexpected '%s'\n%s", a, usage_text);
    }
  }
  if (sub == NULL)
    return tl_cli_usage(json, "receipt needs a subcommand (show)\n%s",
                        usage_text);
  if (strcmp(sub, "show") != 0)
    return tl_cli_usage(json, "unknown subcommand '%s'\n%s", sub, usage_text);
  if (path == NULL)
    return tl_cli_usage(json, "show needs a FILE\n%s", usage_text);
  st = tl_file_open_view(path, &v, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  /* Acquisition and drift receipts (tinylm pull, tinylm drift). */
  st = tl_acq_show(v.data, v.len, json, stdout, &shown, err, sizeof err);
  if (!shown) st = tl_receipt_show(v.data, v.len, json, stdout, err, sizeof err);
  tl_file_close_view(&v);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s: %s", path, err);
  return TL_EXIT_OK;
}
