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
  bool json = false;
  int first_file = argc;
  int rc = TL_EXIT_OK;
  uint8_t *digest;
  char *hex;
  json_t *files = NULL;

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--algo") == 0 && i + 1 < argc) {
      const char *name = argv[++i];
      if (strcmp(name, "sha256") == 0) {
        a = ALGO_SHA256;
      } else if (strcmp(name, "blake3") == 0) {
        a = ALGO_BLAKE3;
      } else {
        return tl_cli_usage(json, "unknown --algo '%s' (sha256 or blake3)",
                            name);
      }
    } else if (strcmp(argv[i], "--length") == 0 && i + 1 < argc) {
      char *end;
      unsigned long v = strtoul(argv[++i], &end, 10);
      if (*end != '\0' || argv[i][0] == '\0' || argv[i][0] == '-' || v == 0 ||
          v > MAX_XOF_LEN)
        return tl_cli_usage(json, "--length must be 1..%u, got '%s'",
                            MAX_XOF_LEN, argv[i]);
      out_len = (size_t)v;
    } else if (strcmp(argv[i], "--") == 0) {
      first_file = i + 1;
      break;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i], usage_text);
    } else {
      first_file = i;
      break;
    }
  }
  if (first_file >= argc)
    return tl_cli_usage(json, "no FILE given\n%s", usage_text);
  if (out_len != 0 && a != ALGO_BLAKE3)
    return tl_cli_usage(json, "--length applies to --algo blake3 only");
  if (out_len == 0) out_len = 32;

  digest = malloc(out_len);
  hex = malloc(2 * out_len + 1);
  if (json) files = json_array();
  if (digest == NULL || hex == NULL || (json && files == NULL)) {
    rc = tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "cannot allocate output");
    goto done;
  }
  for (int i = first_file; i < argc; i++) {
    char err[512];
    tl_status st = digest_file(a, argv[i], digest, out_len, err, sizeof err);
    if (st != TL_OK) {
      /* Like sha256sum: report and go on with the other files. */
      rc = tl_cli_fail(json, st, "%s", err);
      continue;
    }
    tl_cli_hex(digest, out_len, hex);
    if (json)
      json_array_append_new(
          files, json_pack("{s:s, s:s}", "path", argv[i], "digest", hex));
    else
      printf("%s  %s\n", hex, argv[i]);
  }
  if (json) {
    json_t *doc =
        json_pack("{s:s, s:O}", "algorithm",
                  a == ALGO_SHA256 ? "sha256" : "blake3", "files", files);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    json_decref(doc);
  }
done:
  json_decref(files);
  free(digest);
  free(hex);
  return rc;
}
