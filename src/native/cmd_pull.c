/* tinylm pull and tinylm drift: the command lines of acquire.h. */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acquire.h"
#include "cbor_doc.h"
#include "cli.h"
#include "hub_http.h"

#ifndef TL_BUILD_ID
#define TL_BUILD_ID "unknown"
#endif

static const char pull_usage[] =
    "usage: tinylm pull REPO_ID [--revision REV] -o DIR [--endpoint URL]\n"
    "                   [--profile NAME] [--accept-missing-license] "
    "[--max-files N]\n"
    "                   [--max-file-bytes N] [--max-total-bytes N]\n"
    "                   [--timeout SECONDS] [--max-redirects N] [--progress]\n"
    "                   [--update] [--json]\n"
    "  Fetches a Hugging Face model at the commit REV resolves to (default\n"
    "  main) into the new directory DIR, verifying every file against the\n"
    "  repository tree, and writes DIR/" TL_ACQ_RECEIPT_NAME
    ".\n"
    "  DIR appears complete or not at all; after a dropped connection or a\n"
    "  timeout DIR.partial is kept and a rerun resumes (verifying again).\n"
    "  --update         DIR may hold an earlier pull of REPO_ID: the revision\n"
    "                   (default: the one DIR was pulled at) is pulled into\n"
    "                   DIR.partial, reusing DIR's unchanged files, and\n"
    "                   swapped with DIR in one step; nothing happens when DIR\n"
    "                   is already at that commit\n"
    "  --endpoint       default $HF_ENDPOINT, else " TL_ACQ_DEFAULT_ENDPOINT
    "\n"
    "                   ($HF_TOKEN, when set, goes to this host only)\n"
    "  --profile        for the converter's checks (as tinylm convert "
    "--profile)\n"
    "  --accept-missing-license  proceed without a declared license "
    "(recorded)\n"
    "  --max-files      tree entries (default 64)\n"
    "  --max-file-bytes / --max-total-bytes  (default 64 GiB / 256 GiB)\n"
    "  --timeout        connect timeout, the longest stall, and the time\n"
    "                   each answer has (a body: that plus 4 KiB/s; default "
    "30)\n"
    "  --max-redirects  per request (default 5)\n"
    "  $CURL_CA_BUNDLE  CA certificates to trust instead of the system's\n";

static const char drift_usage[] =
    "usage: tinylm drift DIR [-o RECEIPT] [--endpoint URL] [--timeout "
    "SECONDS]\n"
    "                    [--json]\n"
    "  Resolves the revision DIR was pulled at again and reports whether it\n"
    "  moved and which files differ, as a new observation receipt (default\n"
    "  DIR.drift-<UTC time>.receipt.cbor beside DIR). DIR is only read.\n"
    "  --endpoint       default $HF_ENDPOINT, else " TL_ACQ_DEFAULT_ENDPOINT
    "\n"
    "                   ($HF_TOKEN, when set, goes to this host only; the\n"
    "                   endpoint named in DIR's receipt is never asked: it\n"
    "                   must equal this one, else drift stops)\n";

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v != NULL && v[0] != '\0' ? v : fallback;
}

/* What both commands share: --json wherever it stands, the token from the
 * environment, the defaults. */
static void begin(int argc, char **argv, tl_acq_net *n, bool *json) {
  memset(n, 0, sizeof *n);
  n->token = env_or("HF_TOKEN", NULL);
  n->build_id = TL_BUILD_ID;
  n->timeout_s = 30;
  n->max_redirects = 5;
  *json = false;
  *json = tl_cli_wants_json(argc, argv);
}

/* The flags both commands share; returns -1 when argv[*i] was one of them
 * (consumed), 0 when it was not, or an exit status. */
static int net_flag(int argc, char **argv, int *i, bool json, tl_acq_net *n) {
  const char *a = argv[*i];
  const char *value;
  uint64_t v = 0;
  int rc;
  if (strcmp(a, "--endpoint") != 0 && strcmp(a, "--timeout") != 0 &&
      strcmp(a, "--max-redirects") != 0)
    return 0;
  if ((rc = tl_cli_value(json, argc, argv, i, &value)) >= 0) return rc;
  if (strcmp(a, "--endpoint") == 0) {
    n->endpoint = value;
    return -1;
  }
  if (strcmp(a, "--timeout") == 0) {
    rc = tl_cli_flag_u64(json, a, value, 1, 86400, &v);
    n->timeout_s = (long)v;
    return rc;
  }
  rc = tl_cli_flag_u64(json, a, value, 0, 50, &v);
  n->max_redirects = (int)v;
  return rc;
}

/* A message that carries the server's text (headers, tree names, URLs),
 * made safe for the terminal and for --json (tl_hub_printable), short
 * enough that the error line holds it whole. */
static const char *printable(const char *text, char out[1000]) {
  tl_hub_printable(text, strlen(text), out, 1000);
  return out;
}

/* One JSON line, ASCII only: names from the server may hold C1 or bidi
 * controls, which JSON allows raw. Takes the reference. */
static void print_json(json_t *out) {
  char *text = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
  puts(text);
  free(text);
  json_decref(out);
}

static int fail_pull(bool json, tl_status st, const tl_pull_report *r,
                     const char *dir, const char *err) {
  json_t *extra = json_object();
  char message[3000], safe[1000];
  if (r->conflict != NULL) {
    json_t *record = NULL;
    char ignored[256];
    if (tl_cbor_to_json(r->conflict, r->conflict_len, &record, ignored,
                        sizeof ignored) == TL_OK)
      json_object_set_new(extra, "conflict", record);
  }
  json_object_set_new(extra, "resumable", json_boolean(r->kept_partial));
  json_object_set_new(extra, "transient", json_boolean(r->transient));
  if (r->kept_partial)
    snprintf(message, sizeof message,
             "%s (%s.partial is kept: run the same command again to resume)",
             err, dir);
  else
    snprintf(message, sizeof message, "%s (no directory was written%s)", err,
             r->transient ? "; a rerun may succeed" : "");
  return tl_cli_fail_with(json, st, extra, "%s", printable(message, safe));
}

int tl_cmd_pull(int argc, char **argv) {
  tl_pull_options o;
  tl_pull_report r;
  bool json;
  char err[2048], id[65];
  tl_status st;
  int rc;
  memset(&o, 0, sizeof o);
  begin(argc, argv, &o.net, &json);
  tl_acq_default_limits(&o.limits);
  o.net.endpoint = env_or("HF_ENDPOINT", TL_ACQ_DEFAULT_ENDPOINT);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    rc = net_flag(argc, argv, &i, json, &o.net);
    if (rc > 0) return rc;
    if (rc < 0) continue;
    if (strcmp(a, "--help") == 0) {
      fputs(pull_usage, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
    } else if (strcmp(a, "--accept-missing-license") == 0) {
      o.accept_missing_license = true;
    } else if (strcmp(a, "--progress") == 0) {
      o.progress = true;
    } else if (strcmp(a, "--update") == 0) {
      o.update = true;
    } else if (strcmp(a, "-o") == 0) {
      if ((rc = tl_cli_output_value(json, argc, argv, &i, &o.out_dir)) >= 0) return rc;
    } else if (strcmp(a, "--revision") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &o.revision)) >= 0)
        return rc;
    } else if (strcmp(a, "--profile") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &o.profile)) >= 0) return rc;
    } else if (strcmp(a, "--max-files") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &v)) < 0)
        rc = tl_cli_flag_u64(json, a, v, 1, 1000000, &o.limits.max_files);
      if (rc >= 0) return rc;
    } else if (strcmp(a, "--max-file-bytes") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &v)) < 0)
        rc = tl_cli_flag_u64(json, a, v, 1, (uint64_t)1 << 50,
                             &o.limits.max_file_bytes);
      if (rc >= 0) return rc;
    } else if (strcmp(a, "--max-total-bytes") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &v)) < 0)
        rc = tl_cli_flag_u64(json, a, v, 1, (uint64_t)1 << 52,
                             &o.limits.max_total_bytes);
      if (rc >= 0) return rc;
    } else if (a[0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", a, pull_usage);
    } else if (o.repo_id == NULL) {
      o.repo_id = a;
    } else {
      return tl_cli_usage(json, "one REPO_ID only\n%s", pull_usage);
    }
  }
  if (o.repo_id == NULL || o.out_dir == NULL)
    return tl_cli_usage(json, "REPO_ID and -o DIR are required\n%s",
                        pull_usage);
  st = tl_pull(&o, &r, err, sizeof err);
  if (st != TL_OK) {
    rc = fail_pull(json, st, &r, o.out_dir, err);
    tl_pull_report_free(&r);
    return rc;
  }
  if (r.up_to_date) {
    if (json)
      print_json(json_pack("{s:s,s:s,s:b,s:s}", "repo_id", o.repo_id, "commit",
                           r.commit, "up_to_date", true, "dir", o.out_dir));
    else
      printf("%s is up to date: %s@%s (nothing was changed)\n", o.out_dir,
             o.repo_id, r.commit);
    tl_pull_report_free(&r);
    return TL_EXIT_OK;
  }
  tl_hex_encode(r.receipt_id, 32, id);
  if (json) {
    print_json(json_pack(
        "{s:s,s:s,s:s,s:s,s:b,s:s,s:I,s:I,s:I,s:I,s:o,s:s,s:b,s:o,s:o}",
        "repo_id", o.repo_id, "revision", r.revision, "commit", r.commit,
        "final_commit", r.final_commit,
        "drifted", r.drifted, "dir", o.out_dir, "files", (json_int_t)r.n_files,
        "bytes", (json_int_t)r.bytes_total, "bytes_fetched",
        (json_int_t)r.bytes_fetched, "reused", (json_int_t)r.n_reused,
        "license", r.license[0] ? json_string(r.license) : json_null(),
        "receipt_id", id, "up_to_date", false, "previous_commit",
        r.previous_commit[0] ? json_string(r.previous_commit) : json_null(),
        "note", r.note[0] ? json_string(r.note) : json_null()));
  } else {
    if (r.previous_commit[0])
      printf("updated %s from %s@%s to %s (revision %s)\n", o.out_dir,
             o.repo_id, r.previous_commit, r.commit, r.revision);
    else
      printf("pulled %s@%s (revision %s) into %s\n", o.repo_id, r.commit,
             r.revision, o.out_dir);
    printf(
        "%zu files, %llu bytes verified (%llu fetched, %zu kept from an "
        "earlier run)\n",
        r.n_files, (unsigned long long)r.bytes_total,
        (unsigned long long)r.bytes_fetched, r.n_reused);
    printf("license %s\n",
           r.license[0] ? r.license : "none declared (accepted)");
    if (r.drifted)
      printf(
          "note: %s moved to %s during the pull (recorded; the files are "
          "those of %s)\n",
          r.revision, r.final_commit, r.commit);
    if (r.note[0]) printf("note: %s\n", r.note);
    printf("acquisition receipt %s\n", id);
  }
  tl_pull_report_free(&r);
  return TL_EXIT_OK;
}

int tl_cmd_drift(int argc, char **argv) {
  tl_drift_options o;
  tl_drift_report r;
  bool json;
  char err[2048], id[65], out_path[4200];
  tl_status st;
  int rc;
  memset(&o, 0, sizeof o);
  begin(argc, argv, &o.net, &json);
  o.net.endpoint = env_or("HF_ENDPOINT", TL_ACQ_DEFAULT_ENDPOINT);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    rc = net_flag(argc, argv, &i, json, &o.net);
    if (rc > 0) return rc;
    if (rc < 0) continue;
    if (strcmp(a, "--help") == 0) {
      fputs(drift_usage, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
    } else if (strcmp(a, "-o") == 0) {
      if ((rc = tl_cli_output_value(json, argc, argv, &i, &o.out_path)) >= 0)
        return rc;
    } else if (a[0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", a, drift_usage);
    } else if (o.dir == NULL) {
      o.dir = a;
    } else {
      return tl_cli_usage(json, "one DIR only\n%s", drift_usage);
    }
  }
  if (o.dir == NULL)
    return tl_cli_usage(json, "DIR is required\n%s", drift_usage);
  if (o.out_path == NULL) {
    char stamp[32];
    time_t now = time(NULL);
    size_t n = strlen(o.dir);
    struct tm tm;
    while (n > 1 && o.dir[n - 1] == '/') n--;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(out_path, sizeof out_path, "%.*s.drift-%s.receipt.cbor", (int)n,
             o.dir, stamp);
    o.out_path = out_path;
  }
  st = tl_drift(&o, &r, err, sizeof err);
  if (st != TL_OK) {
    char safe[1000];
    tl_drift_report_free(&r);
    return tl_cli_fail(json, st, "%s", printable(err, safe));
  }
  tl_hex_encode(r.receipt_id, 32, id);
  if (json) {
    print_json(json_pack("{s:s,s:s,s:b,s:O,s:O,s:O,s:s,s:s}", "commit",
                         r.commit, "now", r.now, "moved", r.moved, "changed",
                         r.changed, "added", r.added, "removed", r.removed,
                         "receipt", o.out_path, "receipt_id", id));
  } else {
    /* Tree names are the server's: printed escaped (--json has them as
     * JSON strings, escaped by the serializer). */
    static const char *const kinds[3] = {"changed", "added", "removed"};
    const json_t *lists[3] = {r.changed, r.added, r.removed};
    char safe[1000];
    size_t i;
    json_t *p;
    if (!r.moved)
      printf("no drift: the revision still resolves to %s\n", r.commit);
    else
      printf("drift: the revision moved from %s to %s\n", r.commit, r.now);
    for (int k = 0; k < 3; k++)
      json_array_foreach(lists[k], i, p) printf(
          "  %-8s %s\n", kinds[k],
          printable(json_string_value(p) ? json_string_value(p) : "", safe));
    printf("observation receipt %s (%s)\n", id, o.out_path);
  }
  tl_drift_report_free(&r);
  return TL_EXIT_OK;
}
