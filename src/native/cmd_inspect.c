/* tinylm inspect: what an artifact holds (docs/slm.md §tinylm inspect).
 * Without --verify only the structure is checked (lazy open: no section or
 * tensor digest is computed); with --verify every digest is. The artifact
 * id (SHA-256 of the file) is always computed: it is the identity. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "file.h"
#include "model.h"
#include "slm/slm.h"
#include "slm/tensors.h"
#include "slm_view.h"

static const char usage_text[] =
    "usage: tinylm inspect MODEL.slm [--json] [--verify] [--progress]\n"
    "  --verify    check every section and tensor digest (eager open)\n"
    "  --progress  the digests checked, MB/s and ETA on stderr even when it\n"
    "              is not a terminal (on a terminal they are always shown)\n";

static void print_human(const json_t *o) {
  size_t i;
  json_t *v;
  printf("artifact id (sha256) %s\n",
         json_string_value(json_object_get(o, "artifact_id")));
  printf("%lld bytes, format %s, %s, %s\n",
         (long long)json_integer_value(json_object_get(o, "file_bytes")),
         json_string_value(json_object_get(o, "version")),
         json_string_value(json_object_get(o, "artifact_kind")),
         json_is_true(json_object_get(o, "verified"))
             ? "every digest verified"
             : "structure checked, digests not verified (--verify)");
  printf("\nsections:\n");
  json_array_foreach(json_object_get(o, "sections"), i, v) {
    json_t *k = json_object_get(v, "kind");
    char kind[32];
    if (json_is_string(k))
      snprintf(kind, sizeof kind, "%s", json_string_value(k));
    else
      snprintf(kind, sizeof kind, "kind %lld", (long long)json_integer_value(k));
    printf("  %-12s offset %12lld  length %12lld  blake3 %.16s...\n", kind,
           (long long)json_integer_value(json_object_get(v, "offset")),
           (long long)json_integer_value(json_object_get(v, "length")),
           json_string_value(json_object_get(v, "blake3")));
  }
  if (json_array_size(json_object_get(o, "tensors")) > 0) {
    printf("\ntensors:\n");
    json_array_foreach(json_object_get(o, "tensors"), i, v) {
      char shape[64] = "";
      size_t d, len = 0;
      json_t *dim;
      json_array_foreach(json_object_get(v, "shape"), d, dim)
          len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld",
                                  d ? " x " : "",
                                  (long long)json_integer_value(dim));
      printf("  %-48s %-5s %-14s %12lld bytes\n",
             json_string_value(json_object_get(v, "name")),
             json_string_value(json_object_get(v, "dtype")), shape,
             (long long)json_integer_value(json_object_get(v, "length")));
    }
  }
  v = json_object_get(o, "config");
  if (json_is_object(v)) {
    char *text = json_dumps(v, JSON_SORT_KEYS | JSON_INDENT(2));
    printf("\neffective config:\n%s\n", text ? text : "?");
    free(text);
  }
  v = json_object_get(o, "acquisition");
  if (json_is_object(v))
    printf("\nsource: %s@%s (revision %s, %s)\nacquisition receipt %s\n",
           json_string_value(json_object_get(v, "repo_id")),
           json_string_value(json_object_get(v, "resolved_commit")),
           json_string_value(json_object_get(v, "requested_revision")),
           json_string_value(json_object_get(v, "endpoint")),
           json_string_value(json_object_get(v, "receipt_id")));
  printf("\nledger entries: %lld\n",
         (long long)json_integer_value(json_object_get(o, "ledger_entries")));
}

int tl_cmd_inspect(int argc, char **argv) {
  const char *path = NULL;
  bool json = false, verify = false;
  tl_file_view view;
  tl_slm slm;
  tl_slm_tensors tensors;
  tl_slm_artifact_kind kind;
  bool progress_forced = false;
  tl_cli_progress progress;
  uint8_t id[32];
  size_t at = 0;
  char err[1024];
  json_t *o;
  tl_status st;
  int rc = TL_EXIT_OK;
  /* --json anywhere makes every usage error JSON. */
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--verify") == 0) {
      verify = true;
    } else if (strcmp(argv[i], "--progress") == 0) {
      progress_forced = true;
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i], usage_text);
    } else if (path == NULL) {
      path = argv[i];
    } else {
      return tl_cli_usage(json, "one MODEL.slm only\n%s", usage_text);
    }
  }
  if (path == NULL)
    return tl_cli_usage(json, "MODEL.slm is required\n%s", usage_text);
  st = tl_file_open_view(path, &view, err, sizeof err);
  if (st != TL_OK) tl_native_open_hint(path, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  tl_cli_progress_begin(&progress, "verify", progress_forced);
  st = tl_slm_view_open(view.data, view.len, verify, &progress, &slm, &tensors,
                        &kind, &at, NULL, 0);
  tl_cli_progress_end(&progress);
  if (st != TL_OK) {
    tl_native_slm_error(path, view.data, view.len, st, at, err, sizeof err);
    rc = tl_cli_fail_with(json, st, json_pack("{s:I}", "offset", (json_int_t)at),
                          "%s", err);
    tl_file_close_view(&view);
    return rc;
  }
  st = tl_file_sha256(&view, id);
  o = st == TL_OK
          ? tl_slm_view_json(&slm, &tensors, view.len, id, verify, &st)
          : NULL;
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s: the metadata section is not a CBOR map",
                     path);
  } else if (json) {
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    puts(text);
    free(text);
  } else {
    print_human(o);
  }
  json_decref(o);
  tl_file_close_view(&view);
  return rc;
}
