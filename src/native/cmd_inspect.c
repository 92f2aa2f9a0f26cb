/* tinylm inspect: what an artifact holds (docs/slm.md §tinylm inspect).
 * Without --verify only the structure is checked (lazy open: no section or
 * tensor digest is computed); with --verify every digest is. The artifact
 * id (SHA-256 of the file) is always computed: it is the identity. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor_doc.h"
#include "cli.h"
#include "file.h"
#include "model.h"
#include "slm/slm.h"
#include "slm/tensors.h"

static const char usage_text[] =
    "usage: tinylm inspect MODEL.slm [--json] [--verify] [--progress]\n"
    "  --verify    check every section and tensor digest (eager open)\n"
    "  --progress  the digests checked, MB/s and ETA on stderr even when it\n"
    "              is not a terminal (on a terminal they are always shown)\n";

static const char *kind_name(uint32_t kind) {
  static const char *names[] = {NULL,        "metadata",  "tokenizer",
                                "template",  "tensor_dir", "tensor_data"};
  return kind >= 1 && kind <= 5 ? names[kind] : NULL;
}

static json_t *hex_json(const uint8_t *p, size_t n) {
  char buf[129];
  tl_cli_hex(p, n, buf);
  return json_string(buf);
}

static json_t *sections_json(const tl_slm *slm) {
  json_t *a = json_array();
  for (size_t i = 0; i < slm->n_sections; i++) {
    const tl_slm_section *s = &slm->sections[i];
    const char *name = kind_name(s->kind);
    json_array_append_new(
        a, json_pack("{s:o,s:I,s:I,s:b,s:o}", "kind",
                     name ? json_string(name) : json_integer(s->kind),
                     "offset", (json_int_t)(s->data - slm->file), "length",
                     (json_int_t)s->len, "required",
                     (s->flags & TL_SLM_SECTION_REQUIRED) != 0, "blake3",
                     hex_json(s->digest, 32)));
  }
  return a;
}

static json_t *tensors_json(const tl_slm_tensors *t, const uint8_t *file) {
  json_t *a = json_array();
  for (size_t i = 0; i < t->n; i++) {
    tl_slm_tensor x;
    json_t *shape = json_array();
    (void)tl_slm_tensor_at(t, i, &x);
    for (uint32_t d = 0; d < x.rank; d++)
      json_array_append_new(shape, json_integer((json_int_t)x.shape[d]));
    json_array_append_new(
        a, json_pack("{s:s%,s:s,s:o,s:I,s:I,s:o}", "name", x.name, x.name_len,
                     "dtype", tl_slm_dtype_name(tl_slm_dtype_code(x.type)),
                     "shape", shape, "offset", (json_int_t)(x.data - file),
                     "length", (json_int_t)x.len, "blake3",
                     hex_json(x.digest, 32)));
  }
  return a;
}

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

/* The metadata fields inspect reports: the kind, the effective config and
 * the ledger length. */
static tl_status read_metadata(const tl_slm *slm, json_t *o) {
  const tl_slm_section *sec;
  json_t *meta, *cfg, *ledger, *kind, *acq;
  char why[128];
  if (tl_slm_find(slm, TL_SLM_METADATA, &sec) != TL_OK)
    return TL_ERR_INVALID_MODEL;
  if (tl_cbor_to_json(sec->data, sec->len, &meta, why, sizeof why) != TL_OK ||
      !json_is_object(meta)) {
    json_decref(meta);
    return TL_ERR_INVALID_MODEL;
  }
  kind = json_object_get(meta, "artifact_kind");
  cfg = json_object_get(json_object_get(meta, "config"), "config");
  ledger = json_object_get(meta, "ledger");
  json_object_set(o, "artifact_kind", json_is_string(kind) ? kind : json_null());
  json_object_set(o, "config", cfg != NULL ? cfg : json_null());
  json_object_set_new(o, "ledger_entries",
                      json_integer((json_int_t)json_array_size(ledger)));
  /* Where the source files came from (tinylm pull), when known. */
  acq = json_object_get(meta, "acquisition");
  if (acq != NULL) json_object_set(o, "acquisition", acq);
  json_decref(meta);
  return TL_OK;
}

static tl_status verify_sections(const tl_slm *slm, tl_cli_progress *p,
                                 size_t *at) {
  uint64_t bytes = 0, total = 0;
  for (size_t i = 0; i < slm->n_sections; i++) total += slm->sections[i].len;
  for (size_t i = 0; i < slm->n_sections; i++) {
    const tl_slm_section *s = &slm->sections[i];
    tl_status st = tl_slm_verify_section(s);
    if (st != TL_OK) {
      *at = (size_t)(s->data - slm->file);
      return st;
    }
    bytes += s->len;
    tl_cli_progress_update(p, "sections", i + 1, slm->n_sections, bytes, total);
  }
  return TL_OK;
}

static tl_status verify_tensors(const tl_slm_tensors *t, const uint8_t *file,
                                tl_cli_progress *p, size_t *at) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < t->n; i++) {
    tl_slm_tensor x;
    tl_status st = tl_slm_tensor_at(t, i, &x);
    if (st != TL_OK) return st; /* i < n: cannot happen */
    if ((st = tl_slm_tensor_verify(&x)) != TL_OK) {
      *at = (size_t)(x.data - file);
      return st;
    }
    bytes += x.len;
    tl_cli_progress_update(p, "tensors", i + 1, t->n, bytes, t->data_len);
  }
  return TL_OK;
}

int tl_cmd_inspect(int argc, char **argv) {
  const char *path = NULL;
  bool json = false, verify = false;
  tl_file_view view;
  tl_slm slm;
  tl_slm_tensors tensors;
  tl_slm_artifact_kind kind = TL_SLM_ARTIFACT_TOKENIZER_ONLY;
  bool progress_forced = false;
  tl_cli_progress progress;
  uint8_t id[32];
  size_t at = 0;
  char err[1024], version[16];
  json_t *o;
  tl_status st;
  int rc = TL_EXIT_OK;
  /* --json anywhere makes every usage error JSON. */
  for (int i = 1; i < argc; i++) json |= strcmp(argv[i], "--json") == 0;
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
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  /* Opened lazily; --verify then checks every digest an eager open would,
   * in the same order, one at a time so that progress can be shown. */
  memset(&tensors, 0, sizeof tensors);
  tl_cli_progress_begin(&progress, "verify", progress_forced);
  st = tl_slm_open(&slm, view.data, view.len, TL_SLM_VERIFY_LAZY, &at);
  if (st == TL_OK && verify) st = verify_sections(&slm, &progress, &at);
  if (st == TL_OK && (st = tl_slm_artifact(&slm, &kind)) != TL_OK)
    at = 0;
  if (st == TL_OK && kind == TL_SLM_ARTIFACT_MODEL)
    st = tl_slm_tensors_open(&tensors, &slm, TL_SLM_VERIFY_LAZY, &at);
  if (st == TL_OK && verify && kind == TL_SLM_ARTIFACT_MODEL)
    st = verify_tensors(&tensors, view.data, &progress, &at);
  tl_cli_progress_end(&progress);
  if (st != TL_OK) {
    tl_native_slm_error(path, view.data, view.len, st, at, err, sizeof err);
    rc = tl_cli_fail_with(json, st, json_pack("{s:I}", "offset", (json_int_t)at),
                          "%s", err);
    tl_file_close_view(&view);
    return rc;
  }
  st = tl_file_sha256(&view, id);
  snprintf(version, sizeof version, "%u.%u", TL_SLM_VERSION_MAJOR,
           slm.version_minor);
  o = json_pack("{s:o,s:I,s:s,s:b,s:o,s:o}", "artifact_id", hex_json(id, 32),
                "file_bytes", (json_int_t)view.len, "version", version,
                "verified", verify, "sections", sections_json(&slm), "tensors",
                tensors_json(&tensors, view.data));
  if (st == TL_OK) st = read_metadata(&slm, o);
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
