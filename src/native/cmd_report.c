/* tinylm report RECEIPT|STORE -o report.html (docs/report.md): verifies
 * the promotion as `promote show` does, loads the store objects it names
 * (the run record, and through it the custody and benchmark objects; the
 * plan by its id; each forward case's judgement; the stochastic
 * observation) and writes the page report_html.c draws from them. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "file.h"
#include "promote_plan.h"
#include "promote_receipt.h"
#include "promote_store.h"
#include "report.h"

static const char usage_text[] =
    "usage: tinylm report RECEIPT|STORE -o report.html [--store DIR] [--public] [--force]\n"
    "                     [--trust KEY.pub] [--json]\n"
    "  one self-contained HTML page of a promotion: the decision, every claim, the\n"
    "  chain of custody, the forward error against its bound, latency and memory,\n"
    "  the stochastic comparison (docs/report.md). RECEIPT: a promotion receipt;\n"
    "  STORE: its most recent promotion. Verified first, as promote show does.\n"
    "  -o FILE       the page (written to a temporary file, then renamed)\n"
    "  --store DIR   the store, when RECEIPT is not in DIR/receipts/\n"
    "  --public      only what promote show --public prints: no case text\n"
    "  --force       replace an existing FILE\n"
    "  --trust KEY.pub  only a promotion signed by that key (promote show --trust)\n"
    "  --json        errors and the result as JSON\n";

/* The store's most recent promotion: the last one its index names, by
 * id (tl_store_last_entry refuses a line that names anything else). */
static tl_status last_promotion(const char *store, char *path, size_t cap, char *err,
                                size_t err_cap) {
  tl_store *s;
  uint8_t id[32];
  char hex[65];
  tl_status st = tl_store_open(store, false, &s, err, err_cap);
  if (st != TL_OK) return st;
  st = tl_store_last_entry(s, true, "promotion", id, err, err_cap);
  if (st == TL_ERR_NOT_FOUND)
    snprintf(err, err_cap, "%s: the store holds no promotion (tinylm promote PLAN --store %s "
                           "makes one)",
             store, store);
  if (st == TL_OK) {
    tl_hex_encode(id, 32, hex);
    snprintf(path, cap, "%s/receipts/%s.cbor", tl_store_dir(s), hex);
  }
  tl_store_close(s);
  return st;
}

/* A JSON store object by its hex id (its bytes checked by the store). */
static tl_status object_json(tl_store *s, const char *hex, json_t **out, char *err, size_t cap) {
  uint8_t id[32], *bytes = NULL;
  size_t len = 0;
  tl_status st;
  *out = NULL;
  if (hex == NULL || !tl_hex32_parse(hex, id)) {
    snprintf(err, cap, "'%s' is not an object id", hex ? hex : "(none)");
    return TL_ERR_INVALID_ARGUMENT;
  }
  if ((st = tl_store_get(s, id, &bytes, &len, err, cap)) != TL_OK) return st;
  *out = len > 0 && bytes[0] == '{' ? json_loadb((const char *)bytes, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
  free(bytes);
  return TL_OK;
}

/* A named JSON object that must be there and be of format fmt. */
static tl_status named_object(tl_store *s, const char *hex, const char *fmt, const char *what,
                              json_t **out, char *err, size_t cap) {
  tl_status st = object_json(s, hex, out, err, cap);
  const char *got;
  if (st != TL_OK) return st;
  got = json_string_value(json_object_get(*out, "format"));
  if (fmt != NULL && (got == NULL || strcmp(got, fmt) != 0)) {
    json_decref(*out);
    *out = NULL;
    snprintf(err, cap, "the %s object %s is not %s", what, hex, fmt);
    return TL_ERR_INVALID_ARGUMENT;
  }
  return TL_OK;
}

/* A stochastic observation's prompts x configurations: whether the seeds
 * drew differently ({"prompts": [[bool per configuration], ...]}), read
 * from the stored draws; a prompt whose seeds all drew the same ids under
 * a configuration is degenerate there (docs/promotion-stats.md). */
static json_t *varied_matrix(const json_t *o) {
  json_t *prompts = json_array();
  const json_t *c, *k;
  size_t i, j;
  json_array_foreach(json_object_get(o, "cases"), i, c) {
    json_t *row = json_array();
    json_array_foreach(json_object_get(c, "configurations"), j, k) {
      const json_t *seeds = json_object_get(k, "seeds"), *sd;
      const json_t *first = json_object_get(json_array_get(seeds, 0), "ids");
      bool varied = false;
      size_t n;
      json_array_foreach(seeds, n, sd) varied = varied || !json_equal(json_object_get(sd, "ids"), first);
      json_array_append_new(row, json_boolean(varied));
    }
    json_array_append_new(prompts, row);
  }
  return json_pack("{s:o}", "prompts", prompts);
}

/* Per forward claim, its cases' judgements (in the order the comparison
 * names them); per stochastic claim, which prompts varied under which
 * configuration (varied_matrix). */
static tl_status claim_objects(tl_store *s, const json_t *view, json_t *judgements,
                               json_t *statistics, char *err, size_t cap) {
  const json_t *c, *id;
  size_t i, k;
  json_array_foreach(json_object_get(view, "claims"), i, c) {
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *claim = json_string_value(json_object_get(c, "claim"));
    const json_t *obs = json_object_get(c, "observations");
    if (kind == NULL || claim == NULL) continue;
    if (strcmp(kind, "forward") == 0) {
      json_t *list = json_array();
      json_object_set_new(judgements, claim, list);
      json_array_foreach(obs, k, id) {
        json_t *o;
        tl_status st = object_json(s, json_string_value(id), &o, err, cap);
        if (st != TL_OK) return st;
        if (o != NULL && json_is_string(json_object_get(o, "format")) &&
            strcmp(json_string_value(json_object_get(o, "format")), "tinylm.judgement/1") == 0)
          json_array_append(list, o);
        json_decref(o);
      }
    } else if (strcmp(kind, "stochastic") == 0 && json_array_size(obs) > 0) {
      json_t *o;
      tl_status st = object_json(s, json_string_value(json_array_get(obs, 0)), &o, err, cap);
      if (st != TL_OK) return st;
      if (o != NULL) json_object_set_new(statistics, claim, varied_matrix(o));
      json_decref(o);
    }
  }
  return TL_OK;
}

int tl_cmd_report(int argc, char **argv) {
  const char *target = NULL, *out_path = NULL, *store_dir = NULL, *trust_path = NULL;
  uint8_t trust[32];
  bool json = false, public_view = false, force = false;
  char err[2048], receipt_path[PATH_MAX + 128];
  struct stat sb;
  json_t *view = NULL, *run = NULL, *custody = NULL, *bench = NULL, *plan = NULL;
  json_t *judgements = json_object(), *statistics = json_object();
  tl_store *s = NULL;
  tl_status st = TL_OK;
  char *html = NULL;
  size_t len = 0;
  int rc;
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      rc = TL_EXIT_OK;
      goto done;
    } else if (strcmp(a, "--json") == 0) {
    } else if (strcmp(a, "--public") == 0) {
      public_view = true;
    } else if (strcmp(a, "--force") == 0) {
      force = true;
    } else if (strcmp(a, "-o") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &out_path)) >= 0) goto done;
    } else if (strcmp(a, "--store") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &store_dir)) >= 0) goto done;
    } else if (strcmp(a, "--trust") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &trust_path)) >= 0) goto done;
    } else if (a[0] == '-' && a[1] != '\0') {
      rc = tl_cli_usage(json, "unknown option '%s'\n%s", a, usage_text);
      goto done;
    } else if (target == NULL) {
      target = a;
    } else {
      rc = tl_cli_usage(json, "one RECEIPT or STORE only\n%s", usage_text);
      goto done;
    }
  }
  if (target == NULL || out_path == NULL) {
    rc = tl_cli_usage(json, "RECEIPT|STORE and -o FILE are required\n%s", usage_text);
    goto done;
  }
  if (stat(target, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    if (store_dir == NULL) store_dir = target;
    if ((st = last_promotion(target, receipt_path, sizeof receipt_path, err, sizeof err)) != TL_OK) {
      rc = tl_cli_fail(json, st, "%s", err);
      goto done;
    }
  } else {
    snprintf(receipt_path, sizeof receipt_path, "%s", target);
  }
  {
    const char *inputs[1] = {receipt_path};
    st = tl_file_output_check(out_path, inputs, 1, force, NULL, err, sizeof err);
    if (st != TL_OK) {
      rc = tl_cli_fail(json, st, "%s", err);
      goto done;
    }
  }
  if ((rc = tl_promote_trust_key(json, trust_path, trust)) != 0 ||
      (rc = tl_promote_verified_view(receipt_path, store_dir, json, public_view,
                                     trust_path ? trust : NULL, &view, &s)) != 0)
    goto done;
  if (strcmp(json_string_value(json_object_get(view, "format")), "tinylm.promotion/1") != 0) {
    rc = tl_cli_usage(json, "%s is a comparison receipt: report takes a promotion receipt (or "
                            "its store)",
                      receipt_path);
    goto done;
  }
  st = named_object(s, json_string_value(json_object_get(view, "run_record")),
                    "tinylm.promote-run/1", "run record", &run, err, sizeof err);
  if (st == TL_OK)
    st = named_object(s, json_string_value(json_object_get(view, "plan_id")), "tinylm.plan/1",
                      "plan", &plan, err, sizeof err);
  if (st == TL_OK && json_object_get(run, "custody") != NULL)
    st = named_object(s, json_string_value(json_object_get(run, "custody")), "tinylm.custody/1",
                      "custody", &custody, err, sizeof err);
  if (st == TL_OK && json_object_get(run, "benchmark") != NULL)
    st = named_object(s, json_string_value(json_object_get(run, "benchmark")),
                      "tinylm.benchmark/1", "benchmark", &bench, err, sizeof err);
  if (st == TL_OK) st = claim_objects(s, view, judgements, statistics, err, sizeof err);
  if (st == TL_OK && (!judgements || !statistics)) st = TL_ERR_OUT_OF_MEMORY;
  if (st == TL_OK) {
    tl_report_inputs in = {view, run, custody, bench, plan, judgements, statistics, public_view};
    st = tl_report_html(&in, &html, &len);
    if (st != TL_OK) snprintf(err, sizeof err, "out of memory");
  }
  if (st == TL_OK) st = tl_file_write_atomic(out_path, html, len, err, sizeof err);
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
    goto done;
  }
  if (json) {
    json_t *o = json_pack("{s:s,s:s,s:s,s:b,s:I}", "report", out_path, "receipt",
                          json_string_value(json_object_get(view, "receipt")), "decision",
                          json_string_value(json_object_get(view, "decision")), "public",
                          public_view, "bytes", (json_int_t)len);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    json_decref(o);
  } else {
    printf("%s: %s, report of promotion %s (%zu bytes%s)\n", out_path,
           json_string_value(json_object_get(view, "decision")),
           json_string_value(json_object_get(view, "receipt")), len,
           public_view ? ", public view" : "");
  }
  rc = TL_EXIT_OK;
done:
  free(html);
  json_decref(view);
  json_decref(run);
  json_decref(custody);
  json_decref(bench);
  json_decref(plan);
  json_decref(judgements);
  json_decref(statistics);
  tl_store_close(s);
  return rc;
}
