/* tinylm hash: SHA-256 or BLAKE3 of whole files, printed exactly as
 * sha256sum / b3sum print them ("<hex>  <path>"), so the two can be
 * compared line for line (tests/diff/hash_diff.sh does). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cpu.h"
#include "file.h"
#include "hash/blake3.h"
#include "hash/sha256.h"

/* b3sum accepts any length; a cap keeps a typo from filling a terminal. */
#define MAX_XOF_LEN 65536u

typedef enum { ALGO_SHA256, ALGO_BLAKE3 } algo;

static const char usage_text[] =
    "usage: tinylm hash [--algo sha256|blake3] [--length N] [--json] FILE...\n"
    "  --algo     sha256 (default) or blake3\n"
    "  --length   BLAKE3 output length in bytes (extendable output), "
    "default 32\n"
    "  FILE       a path, or - for standard input\n";

static tl_status digest_file(algo a, const char *path, uint8_t *out,
                             size_t out_len, char *err, size_t err_cap) {
  tl_file_view view;
  tl_status st = tl_file_open_view(path, &view, err, err_cap);
  if (st != TL_OK) return st;
  if (a == ALGO_SHA256) {
    st = tl_sha256(view.data, view.len, out);
  } else {
    tl_blake3_hasher h;
    st = tl_blake3_hasher_init_backend(&h, tl_native_blake3_backend());
    if (st == TL_OK) st = tl_blake3_hasher_update(&h, view.data, view.len);
    if (st == TL_OK) st = tl_blake3_hasher_finalize(&h, out, out_len);
  }
  if (st != TL_OK) snprintf(err, err_cap, "%s: hashing failed", path);
  tl_file_close_view(&view);
  return st;
}

int tl_cmd_hash(int argc, char **argv) {
  algo a = ALGO_SHA256;
  size_t out_len = 0;
  bool json = false, options = true;
  int rc = TL_EXIT_OK, n_paths = 0;
  uint64_t length = 0;
  uint8_t *digest = NULL;
  char *hex = NULL;
  const char **paths = malloc((size_t)argc * sizeof *paths);
  json_t *files = NULL, *doc = NULL;

  if (paths == NULL)
    return tl_cli_fail(false, TL_ERR_OUT_OF_MEMORY, "out of memory");
  /* Options may stand anywhere before "--" (as sha256sum's do). */
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc && rc == TL_EXIT_OK; i++) {
    const char *arg = argv[i], *v;
    if (!options || arg[0] != '-' || arg[1] == '\0') {
      paths[n_paths++] = arg;
    } else if (strcmp(arg, "--") == 0) {
      options = false;
    } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      fputs(usage_text, stdout);
      free(paths);
      return TL_EXIT_OK;
    } else if (strcmp(arg, "--json") == 0) {
    } else if (strcmp(arg, "--algo") == 0) {
      int r = tl_cli_value(json, argc, argv, &i, &v);
      if (r >= 0) rc = r;
      else if (strcmp(v, "sha256") == 0) a = ALGO_SHA256;
      else if (strcmp(v, "blake3") == 0) a = ALGO_BLAKE3;
      else rc = tl_cli_usage(json, "unknown --algo '%s' (sha256 or blake3)", v);
    } else if (strcmp(arg, "--length") == 0) {
      int r = tl_cli_value(json, argc, argv, &i, &v);
      if (r < 0) r = tl_cli_flag_u64(json, arg, v, 1, MAX_XOF_LEN, &length);
      if (r >= 0) rc = r;
    } else {
      rc = tl_cli_usage(json, "unknown option '%s'\n%s", arg, usage_text);
    }
  }
  if (rc == TL_EXIT_OK && n_paths == 0)
    rc = tl_cli_usage(json, "no FILE given\n%s", usage_text);
  if (rc == TL_EXIT_OK && length != 0 && a != ALGO_BLAKE3)
    rc = tl_cli_usage(json, "--length applies to --algo blake3 only");
  if (rc != TL_EXIT_OK) {
    free(paths);
    return rc;
  }
  out_len = length != 0 ? (size_t)length : 32;

  digest = malloc(out_len);
  hex = malloc(2 * out_len + 1);
  if (json) files = json_array();
  if (digest == NULL || hex == NULL || (json && files == NULL)) {
    rc = tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "cannot allocate output");
    goto done;
  }
  if (json) doc = json_object();
  for (int i = 0; i < n_paths; i++) {
    char err[512];
    tl_status st = digest_file(a, paths[i], digest, out_len, err, sizeof err);
    if (st != TL_OK) {
      /* Like sha256sum: report and go on with the other files. With
       * --json the failure goes into the one document: the first one's
       * error and detail at the top, each file's in its entry. */
      fprintf(stderr, "error: %s: %s\n", tl_status_name(st), err);
      if (json && rc == TL_EXIT_OK) {
        json_object_set_new(doc, "error", json_string(tl_status_name(st)));
        json_object_set_new(doc, "detail", json_string(err));
      }
      if (json)
        json_array_append_new(files, json_pack("{s:s, s:s, s:s}", "path", paths[i],
                                               "error", tl_status_name(st),
                                               "detail", err));
      rc = TL_EXIT_FAILURE;
      continue;
    }
    tl_hex_encode(digest, out_len, hex);
    if (json)
      json_array_append_new(
          files, json_pack("{s:s, s:s}", "path", paths[i], "digest", hex));
    else
      printf("%s  %s\n", hex, paths[i]);
  }
  if (json) {
    char *text;
    json_object_set_new(doc, "algorithm",
                        json_string(a == ALGO_SHA256 ? "sha256" : "blake3"));
    json_object_set(doc, "files", files);
    text = json_dumps(doc, JSON_COMPACT);
    if (text) printf("%s\n", text);
    free(text);
  }
done:
  json_decref(doc);
  json_decref(files);
  free(paths);
  free(digest);
  free(hex);
  return rc;
}
