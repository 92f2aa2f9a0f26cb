/* tinylm receipt show FILE: checks a receipt's hash graph (every node id
 * recomputes, every child is present, the root is a node) and prints it. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor_doc.h"
#include "cli.h"
#include "file.h"
#include "receipt.h"

static const char usage_text[] =
    "usage: tinylm receipt show FILE [--json]\n";

int tl_cmd_receipt(int argc, char **argv) {
  const char *path = NULL;
  bool json = false;
  tl_file_view v;
  uint8_t root[32];
  char err[512], root_hex[65];
  json_t *doc;
  tl_status st;
  if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
    fputs(usage_text, stdout);
    return TL_EXIT_OK;
  }
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) json = true;
    else if (path == NULL && argv[i][0] != '-') path = argv[i];
    else return tl_cli_usage(json, "unexpected '%s'\n%s", argv[i], usage_text);
  }
  if (argc < 2 || strcmp(argv[1], "show") != 0 || path == NULL)
    return tl_cli_usage(json, "%s", usage_text);
  st = tl_file_open_view(path, &v, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  st = tl_receipt_check(v.data, v.len, root, err, sizeof err);
  if (st != TL_OK) {
    tl_file_close_view(&v);
    return tl_cli_fail(json, st, "%s: %s", path, err);
  }
  doc = tl_cbor_to_json(v.data, v.len);
  tl_file_close_view(&v);
  tl_cli_hex(root, 32, root_hex);
  if (json) {
    char *text;
    json_object_set_new(doc, "verified", json_true());
    text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    puts(text);
    free(text);
  } else {
    size_t i;
    json_t *n;
    char *text;
    printf("receipt %s (every node id verified)\n", root_hex);
    json_array_foreach(json_object_get(doc, "nodes"), i, n) {
      text = json_dumps(json_object_get(n, "metadata"), JSON_COMPACT | JSON_SORT_KEYS);
      printf("  %-10s %.16s...  %s\n", json_string_value(json_object_get(n, "type")),
             json_string_value(json_object_get(n, "id")), text ? text : "");
      free(text);
    }
    text = json_dumps(json_object_get(doc, "timings_us"), JSON_COMPACT | JSON_SORT_KEYS);
    printf("  timings (not part of the identity): %s\n", text ? text : "");
    free(text);
  }
  json_decref(doc);
  return TL_EXIT_OK;
}
