/* tinylm promote show and tinylm promote status (promote_receipt.h;
 * docs/promotion-receipts.md). show verifies a promotion receipt and the
 * evidence it names in the store: each comparison receipt recomputes to
 * the id named and says what the promotion says of it (else
 * forged_evidence), each observation object is there and hashes to its
 * name (else missing_raw_output). status lists every receipt of a store
 * as current or invalidated against the inputs given now. */
#define _DEFAULT_SOURCE /* realpath */
#include <jansson.h>
#include <libgen.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor_doc.h"
#include "cli.h"
#include "file.h"
#include "promote_plan.h"
#include "promote_receipt.h"
#include "promote_sign.h"
#include "promote_store.h"
#include "receipt.h"
#include "tool_msg.h"
#include "verify.h"

/* ------------------------------------------------------------------------ */
/* Reading verified receipts                                                */

static json_t *node_of(const json_t *doc, const char *type) {
  size_t i;
  json_t *n;
  json_array_foreach(json_object_get(doc, "nodes"), i, n) {
    if (strcmp(json_string_value(json_object_get(n, "type")), type) == 0) return n;
  }
  return NULL;
}

static const char *meta_str(const json_t *doc, const char *type, const char *key) {
  return json_string_value(json_object_get(tl_json_node_meta(doc, type), key));
}

/* A receipt's bytes checked (tl_receipt_check) and as JSON; kind and root
 * out. */
static tl_status load_doc(const uint8_t *bytes, size_t len, tl_receipt_kind *kind,
                          uint8_t root[32], json_t **doc, char *err, size_t cap) {
  tl_status st = tl_receipt_check(bytes, len, kind, root, err, cap);
  *doc = NULL;
  if (st == TL_OK) st = tl_cbor_to_json(bytes, len, doc, err, cap);
  return st;
}

/* A problem with the evidence: the stop rule it is (forged_evidence,
 * missing_raw_output), the claim, the status the CLI reports and why. */
typedef struct finding {
  const char *rule;
  char claim[128];
  tl_status status;
  char why[768];
} finding;

static bool found(finding *f, const char *rule, const char *claim, tl_status st,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static bool found(finding *f, const char *rule, const char *claim, tl_status st,
                  const char *fmt, ...) {
  va_list ap;
  f->rule = rule;
  snprintf(f->claim, sizeof f->claim, "%s", claim);
  f->status = st;
  va_start(ap, fmt);
  vsnprintf(f->why, sizeof f->why, fmt, ap);
  va_end(ap);
  return false;
}

static bool same_json(const json_t *a, const json_t *b) { return json_equal(a, b) == 1; }

/* Every observation a comparison names is in the store with its bytes. */
static bool observations_there(tl_store *s, const json_t *cmp, const char *claim,
                               finding *f) {
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(tl_json_node_meta(cmp, "evidence"), "observations"), i, o) {
    uint8_t id[32], *bytes = NULL;
    size_t len = 0;
    char err[512];
    tl_status st;
    tl_hex32_parse(json_string_value(o), id);
    st = tl_store_get(s, id, &bytes, &len, err, sizeof err);
    free(bytes);
    if (st != TL_OK)
      return found(f, TL_RULE_MISSING_OUTPUT, claim, st, "observation %s: %s",
                   json_string_value(o), err);
  }
  return true;
}

/* The comparison's verdict judged again from its raw observations, the
 * plan and the tolerance profile (tl_claim_rejudge): what it says, or
 * forged_evidence (missing_raw_output when an object is gone). */
static bool judged_again(tl_store *s, const json_t *cmp, const char *claim, finding *f) {
  const char *rule;
  char why[768];
  tl_status st = tl_claim_rejudge(s, cmp, &rule, why, sizeof why);
  return st == TL_OK || found(f, rule, claim, st, "%s", why);
}

/* The comparison receipt the promotion's entry names: in the store,
 * verified, its root the id named, saying the verdict and stop rule named
 * about the same claim, artifact, runtime and plan. *cmp gets it. */
static bool comparison_named(tl_store *s, const json_t *promo, const json_t *entry,
                             json_t **cmp, finding *f) {
  const char *claim = json_string_value(json_object_get(entry, "claim"));
  const char *id_hex = json_string_value(json_object_get(entry, "receipt_id"));
  uint8_t id[32], root[32], *bytes = NULL;
  size_t len = 0;
  char err[512], root_hex[65];
  tl_receipt_kind kind;
  tl_status st;
  *cmp = NULL;
  tl_hex32_parse(id_hex, id);
  st = tl_store_get_receipt(s, id, &bytes, &len, err, sizeof err);
  if (st != TL_OK)
    return found(f, TL_RULE_FORGED, claim, st, "comparison receipt %s: %s", id_hex, err);
  st = load_doc(bytes, len, &kind, root, cmp, err, sizeof err);
  free(bytes);
  if (st == TL_OK && kind != TL_RECEIPT_COMPARISON) {
    st = TL_ERR_INVALID_ARGUMENT;
    snprintf(err, sizeof err, "not a comparison receipt");
  }
  if (st != TL_OK)
    return found(f, TL_RULE_FORGED, claim, st, "comparison receipt %s is refused: %s",
                 id_hex, err);
  tl_hex_encode(root, 32, root_hex);
  if (strcmp(root_hex, id_hex) != 0)
    return found(f, TL_RULE_FORGED, claim, TL_ERR_HASH_MISMATCH,
                 "the store's receipts/%s.cbor recomputes to %s, not the id the promotion "
                 "names",
                 id_hex, root_hex);
  if (strcmp(meta_str(*cmp, "plan", "claim"), claim) != 0)
    return found(f, TL_RULE_FORGED, claim, TL_ERR_CONFLICT,
                 "comparison receipt %s is the claim '%s'", id_hex,
                 meta_str(*cmp, "plan", "claim"));
  if (!same_json(json_object_get(tl_json_node_meta(*cmp, "comparison"), "verdict"),
                 json_object_get(entry, "verdict")) ||
      !same_json(json_object_get(tl_json_node_meta(*cmp, "comparison"), "stop_rule"),
                 json_object_get(entry, "stop_rule")))
    return found(f, TL_RULE_FORGED, claim, TL_ERR_CONFLICT,
                 "comparison receipt %s says %s, the promotion says %s", id_hex,
                 meta_str(*cmp, "comparison", "verdict"),
                 json_string_value(json_object_get(entry, "verdict")));
  /* One artifact, one runtime (same metadata: same node id), one plan. */
  if (!same_json(json_object_get(node_of(*cmp, "artifact"), "id"),
                 json_object_get(node_of(promo, "artifact"), "id")) ||
      !same_json(json_object_get(node_of(*cmp, "runtime"), "id"),
                 json_object_get(node_of(promo, "runtime"), "id")) ||
      strcmp(meta_str(*cmp, "plan", "plan_id"), meta_str(promo, "plan", "plan_id")) != 0)
    return found(f, TL_RULE_FORGED, claim, TL_ERR_CONFLICT,
                 "comparison receipt %s names another artifact, runtime or plan than the "
                 "promotion",
                 id_hex);
  return observations_there(s, *cmp, claim, f) && judged_again(s, *cmp, claim, f);
}

/* ------------------------------------------------------------------------ */
/* The view: one JSON object the text and --json forms both print.          */

/* What `--public` keeps of a claim: names, ids, hashes, verdicts and
 * rules; never free text a case may hold (the oracle's description, the
 * summary, the first divergence). */
static const char *const private_fields[] = {"oracle", "summary", "first_divergence"};

static json_t *claim_view(const char *claim, const char *receipt_id, const json_t *cmp,
                          bool public_view) {
  json_t *v = json_pack("{s:s}", "claim", claim);
  json_t *plan = tl_json_node_meta(cmp, "plan"), *policy = tl_json_node_meta(cmp, "policy");
  json_t *ev = tl_json_node_meta(cmp, "evidence"), *root = tl_json_node_meta(cmp, "comparison");
  if (v == NULL) return NULL;
  json_object_set_new(v, "receipt_id", json_string(receipt_id));
  json_object_update(v, root);
  json_object_set(v, "kind", json_object_get(plan, "kind"));
  json_object_set(v, "level", json_object_get(plan, "level"));
  json_object_set(v, "oracle", json_object_get(plan, "oracle"));
  json_object_update(v, policy);
  json_object_update(v, ev);
  if (public_view)
    for (size_t i = 0; i < sizeof private_fields / sizeof private_fields[0]; i++)
      json_object_del(v, private_fields[i]);
  return v;
}

static json_t *header_view(const json_t *doc, const char *root_hex, const char *store) {
  json_t *rt = tl_json_node_meta(doc, "runtime");
  return json_pack("{s:s,s:s,s:b,s:s?,s:O,s:O,s:O}", "receipt", root_hex, "format",
                   json_string_value(json_object_get(doc, "format")), "verified", 1,
                   "store", store, "artifact_id",
                   json_object_get(tl_json_node_meta(doc, "artifact"), "artifact_id"), "runtime",
                   rt, "plan_id", json_object_get(tl_json_node_meta(doc, "plan"), "plan_id"));
}

static void print_text_field(FILE *out, const json_t *v, const char *label,
                             const char *key) {
  const json_t *x = json_object_get(v, key);
  if (x == NULL) return;
  if (json_is_string(x)) {
    /* Escaped: a case's text may hold anything. */
    char *t = json_dumps(x, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
    fprintf(out, "    %s: %s\n", label, t ? t : "?");
    free(t);
  }
}

static const char *or_dash(const json_t *v) {
  return json_is_string(v) ? json_string_value(v) : "-";
}

static void print_claim(FILE *out, const json_t *c) {
  size_t i;
  json_t *x;
  if (json_object_get(c, "receipt_id") == NULL) {
    fprintf(out, "  %-12s did not run (not a pass)\n",
            json_string_value(json_object_get(c, "claim")));
    return;
  }
  fprintf(out, "  %-12s %s  stop rule %s  (%s, %s)\n",
          json_string_value(json_object_get(c, "claim")),
          json_string_value(json_object_get(c, "verdict")),
          or_dash(json_object_get(c, "stop_rule")),
          json_string_value(json_object_get(c, "kind")),
          json_string_value(json_object_get(c, "level")));
  fprintf(out, "    receipt %s  attempt %" JSON_INTEGER_FORMAT "  tolerance %s  design %s\n",
          json_string_value(json_object_get(c, "receipt_id")),
          json_integer_value(json_object_get(c, "attempt")),
          or_dash(json_object_get(c, "tolerance")),
          or_dash(json_object_get(c, "design_sha256")));
  print_text_field(out, c, "oracle", "oracle");
  print_text_field(out, c, "summary", "summary");
  print_text_field(out, c, "first divergence", "first_divergence");
  json_array_foreach(json_object_get(c, "observations"), i, x)
      fprintf(out, "    observation %s (present, hashes to its name)\n",
              json_string_value(x));
  json_array_foreach(json_object_get(c, "cases"), i, x)
      fprintf(out, "    case %s  %-16s %s  output %s\n",
              json_string_value(json_object_get(x, "id")),
              json_string_value(json_object_get(x, "invariant")),
              json_is_true(json_object_get(x, "pass")) ? "pass" : "FAIL",
              json_string_value(json_object_get(x, "output")));
}

static void print_view(FILE *out, const json_t *v, bool promotion) {
  const json_t *rt = json_object_get(v, "runtime");
  size_t i;
  json_t *c;
  fprintf(out, "%s receipt %s\n  (%s: verified, with the evidence it names in %s%s)\n",
          promotion ? "promotion" : "comparison",
          json_string_value(json_object_get(v, "receipt")),
          json_string_value(json_object_get(v, "format")),
          json_string_value(json_object_get(v, "store")),
          json_is_true(json_object_get(v, "public")) ? "; public view" : "");
  if (promotion) {
    char *failing = json_dumps(json_object_get(v, "failing"), JSON_COMPACT);
    fprintf(out, "  decision %s%s%s\n", json_string_value(json_object_get(v, "decision")),
            json_array_size(json_object_get(v, "failing")) ? "; failing " : "",
            json_array_size(json_object_get(v, "failing")) && failing ? failing : "");
    free(failing);
  }
  fprintf(out, "  artifact %s\n  runtime  %s %s build %s lane %s (%s)\n  plan     %s\n",
          json_string_value(json_object_get(v, "artifact_id")),
          json_string_value(json_object_get(rt, "name")),
          json_string_value(json_object_get(rt, "version")),
          json_string_value(json_object_get(rt, "build_id")),
          json_string_value(json_object_get(rt, "backend")),
          json_string_value(json_object_get(rt, "numerical_profile")),
          json_string_value(json_object_get(v, "plan_id")));
  if (promotion)
    fprintf(out, "  run record %s (present, hashes to its name)\n",
            json_string_value(json_object_get(v, "run_record")));
  if (json_object_get(v, "signature") != NULL)
    fprintf(out, "  signed by ed25519:%s, the trusted key (signature receipt %s verifies)\n",
            json_string_value(json_object_get(json_object_get(v, "signature"), "public_key")),
            json_string_value(json_object_get(json_object_get(v, "signature"), "receipt")));
  json_array_foreach(json_object_get(v, "claims"), i, c) print_claim(out, c);
}

/* ------------------------------------------------------------------------ */
/* tinylm promote show                                                      */

static const char show_usage[] =
    "usage: tinylm promote show RECEIPT [--store DIR] [--public] [--trust KEY.pub] [--json]\n"
    "  verifies a promotion (or comparison) receipt and the evidence it\n"
    "  names in the store (default: the store RECEIPT sits in, DIR/receipts/):\n"
    "  every comparison receipt recomputes to the id named and says the\n"
    "  verdict named (else forged_evidence), every observation is present\n"
    "  and hashes to its name (else missing_raw_output)\n"
    "  --public  only ids, hashes, invariant names, verdicts and stop rules\n"
    "  --trust KEY.pub  also require a signature over the promotion by that\n"
    "            key (tinylm promote --sign) that verifies (else\n"
    "            missing_signature, untrusted_key or bad_signature)\n";

/* STORE when path is STORE/receipts/FILE (buf holds it), else NULL. The
 * path as written when it names a directory: a link in STORE is then the
 * store's to refuse, not resolved away; a bare FILE by the real path of
 * the directory it is in. */
static const char *store_of(const char *path, char *buf, size_t cap) {
  const char *slash = strrchr(path, '/');
  char *real, *dir, *base;
  const char *out = NULL;
  if (slash != NULL) {
    size_t n = (size_t)(slash - path);
    while (n > 0 && path[n - 1] == '/') n--;
    if (n >= 8 && strncmp(path + n - 8, "receipts", 8) == 0 &&
        (n == 8 || path[n - 9] == '/')) {
      n = n == 8 ? 0 : n - 9;
      while (n > 1 && path[n - 1] == '/') n--;
      if ((size_t)snprintf(buf, cap, "%.*s", (int)n, n > 0 ? path : ".") >= cap) return NULL;
      return buf;
    }
  }
  if ((real = realpath(path, NULL)) == NULL) return NULL;
  dir = dirname(real);
  base = strrchr(dir, '/');
  if (base != NULL && strcmp(base + 1, "receipts") == 0 && base != dir) {
    *base = '\0';
    snprintf(buf, cap, "%s", dir);
    out = buf;
  }
  free(real);
  return out;
}

/* The receipt at path, read through the store when path is
 * STORE/receipts/HEX64.cbor of this store as written (never through a
 * link swapped in since the store was checked), else from the file. */
static tl_status read_receipt(tl_store *s, const char *path, uint8_t **doc, size_t *len,
                              char *err, size_t cap) {
  const char *dir = tl_store_dir(s), *name;
  size_t n = strlen(dir);
  tl_file_view v;
  uint8_t id[32];
  char hex[65];
  tl_status st;
  if (strcmp(dir, ".") == 0) n = 0;
  name = path + n + (n > 0);
  if ((n == 0 || (strncmp(path, dir, n) == 0 && path[n] == '/')) &&
      strncmp(name, "receipts/", 9) == 0 && strlen(name + 9) == 69 &&
      strcmp(name + 9 + 64, ".cbor") == 0) {
    memcpy(hex, name + 9, 64);
    hex[64] = '\0';
    if (tl_hex32_parse(hex, id)) return tl_store_get_receipt(s, id, doc, len, err, cap);
  }
  if ((st = tl_file_open_view(path, &v, err, cap)) != TL_OK) return st;
  *doc = malloc(v.len > 0 ? v.len : 1);
  if (*doc == NULL) {
    tl_file_close_view(&v);
    return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  memcpy(*doc, v.data, v.len);
  *len = v.len;
  tl_file_close_view(&v);
  return TL_OK;
}

int tl_promote_trust_key(bool json, const char *path, uint8_t pub[32]) {
  char err[512];
  tl_status st;
  if (path == NULL) return 0;
  st = tl_sign_public_read(path, pub, err, sizeof err);
  return st == TL_OK ? 0 : tl_cli_usage(json, "--trust: %s", err);
}

static int refuse(bool json, const finding *f) {
  return tl_cli_fail_with(json, f->status,
                          json_pack("{s:s,s:s}", "rule", f->rule, "claim", f->claim),
                          "%s: claim '%s': %s", f->rule, f->claim, f->why);
}

/* A promotion's claims, each with its comparison verified (or the first
 * finding). */
static bool promotion_view(tl_store *s, const json_t *doc, json_t *view, bool public_view,
                           finding *f) {
  json_t *claims = json_array(), *plan = tl_json_node_meta(doc, "plan");
  json_t *receipts = json_object_get(tl_json_node_meta(doc, "comparisons"), "receipts");
  json_t *root = tl_json_node_meta(doc, "promotion"), *name;
  uint8_t run[32], *bytes = NULL;
  size_t i, next = 0, len = 0;
  char err[512];
  tl_status st;
  json_object_set_new(view, "claims", claims);
  json_object_set(view, "lane", json_object_get(plan, "lane"));
  json_object_update(view, root);
  tl_hex32_parse(json_string_value(json_object_get(root, "run_record")), run);
  st = tl_store_get(s, run, &bytes, &len, err, sizeof err);
  free(bytes);
  if (st != TL_OK) return found(f, TL_RULE_MISSING_OUTPUT, "(run record)", st, "%s", err);
  /* The plan's claims in order; the comparisons name those that ran, in
   * the same order (the check made sure). */
  json_array_foreach(json_object_get(plan, "claims"), i, name) {
    json_t *entry = json_array_get(receipts, next), *cmp = NULL, *c;
    const char *claim = json_string_value(name);
    if (entry == NULL ||
        strcmp(json_string_value(json_object_get(entry, "claim")), claim) != 0) {
      json_array_append_new(claims, json_pack("{s:s,s:s}", "claim", claim, "verdict",
                                              "not_run"));
      continue;
    }
    next++;
    if (!comparison_named(s, doc, entry, &cmp, f)) {
      json_decref(cmp);
      return false;
    }
    c = claim_view(claim, json_string_value(json_object_get(entry, "receipt_id")), cmp,
                   public_view);
    json_decref(cmp);
    if (c == NULL) return found(f, "out_of_memory", claim, TL_ERR_OUT_OF_MEMORY, "view");
    json_array_append_new(claims, c);
  }
  return true;
}

/* The signature over the promotion (root) by the trusted key: the view
 * names it, or the finding says why not (promote_sign.h's rules). */
static bool signed_by(tl_store *s, const uint8_t root[32], const uint8_t trust[32],
                      json_t *view, finding *f) {
  const char *rule;
  uint8_t sig[32];
  char why[640], sig_hex[65], key_hex[65];
  tl_status st = tl_sign_trust(s, root, trust, &rule, sig, why, sizeof why);
  if (st != TL_OK) return found(f, rule, "(signature)", st, "%s", why);
  tl_hex_encode(sig, 32, sig_hex);
  tl_hex_encode(trust, 32, key_hex);
  json_object_set_new(view, "signature", json_pack("{s:s,s:s,s:s}", "receipt", sig_hex,
                                                   "algorithm", "ed25519", "public_key",
                                                   key_hex));
  return true;
}

int tl_promote_verified_view(const char *path, const char *store_dir, bool json,
                             bool public_view, const uint8_t *trust, json_t **view_out,
                             tl_store **store_out) {
  char store_buf[PATH_MAX], err[512], root_hex[65];
  uint8_t *bytes = NULL;
  size_t len = 0;
  tl_receipt_kind kind;
  uint8_t root[32];
  json_t *doc = NULL, *view = NULL;
  tl_store *s = NULL;
  finding f;
  tl_status st;
  int rc = TL_EXIT_OK;
  *view_out = NULL;
  *store_out = NULL;
  if (store_dir == NULL && (store_dir = store_of(path, store_buf, sizeof store_buf)) == NULL)
    return tl_cli_usage(json, "%s is not in a store's receipts/ directory: give --store DIR",
                        path);
  /* The store first: one that is refused is not read from. */
  st = tl_store_open(store_dir, false, &s, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  if ((st = read_receipt(s, path, &bytes, &len, err, sizeof err)) != TL_OK) {
    tl_store_close(s);
    return tl_cli_fail(json, st, "%s", err);
  }
  st = load_doc(bytes, len, &kind, root, &doc, err, sizeof err);
  free(bytes);
  if (st == TL_OK && kind != TL_RECEIPT_PROMOTION && kind != TL_RECEIPT_COMPARISON) {
    st = TL_ERR_INVALID_ARGUMENT;
    snprintf(err, sizeof err, "not a promotion or comparison receipt (receipt show "
                              "shows the others)");
  }
  if (st != TL_OK) {
    json_decref(doc);
    tl_store_close(s);
    return tl_cli_fail(json, st, "%s: %s", path, err);
  }
  tl_hex_encode(root, 32, root_hex);
  view = header_view(doc, root_hex, tl_store_dir(s));
  if (view == NULL) {
    rc = tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "out of memory");
  } else {
    bool ok;
    if (public_view) json_object_set_new(view, "public", json_true());
    if (kind == TL_RECEIPT_PROMOTION) {
      ok = promotion_view(s, doc, view, public_view, &f) &&
           (trust == NULL || signed_by(s, root, trust, view, &f));
    } else if (trust != NULL) {
      ok = found(&f, TL_TRUST_MISSING, "(signature)", TL_ERR_INVALID_ARGUMENT,
                 "a comparison receipt is never signed: --trust verifies a promotion's "
                 "signature");
    } else {
      const char *claim = meta_str(doc, "plan", "claim");
      ok = observations_there(s, doc, claim, &f) && judged_again(s, doc, claim, &f);
      if (ok)
        json_object_set_new(view, "claims",
                            json_pack("[o]", claim_view(claim, root_hex, doc, public_view)));
    }
    if (!ok) rc = refuse(json, &f);
  }
  json_decref(doc);
  if (rc != TL_EXIT_OK) {
    json_decref(view);
    tl_store_close(s);
    return rc;
  }
  *view_out = view;
  *store_out = s;
  return TL_EXIT_OK;
}

int tl_promote_show_main(int argc, char **argv) {
  const char *path = NULL, *store_dir = NULL, *trust_path = NULL;
  bool json = false, public_view = false;
  uint8_t trust[32];
  json_t *view = NULL;
  tl_store *s = NULL;
  int rc;
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int r;
    if (strcmp(a, "--help") == 0) {
      fputs(show_usage, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      continue;
    } else if (strcmp(a, "--public") == 0) {
      public_view = true;
    } else if (strcmp(a, "--store") == 0) {
      if ((r = tl_cli_value(json, argc, argv, &i, &store_dir)) >= 0) return r;
    } else if (strcmp(a, "--trust") == 0) {
      if ((r = tl_cli_value(json, argc, argv, &i, &trust_path)) >= 0) return r;
    } else if (a[0] == '-' && a[1] != '\0') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", a, show_usage);
    } else if (path == NULL) {
      path = a;
    } else {
      return tl_cli_usage(json, "unexpected '%s'\n%s", a, show_usage);
    }
  }
  if (path == NULL) return tl_cli_usage(json, "show needs a RECEIPT\n%s", show_usage);
  if ((rc = tl_promote_trust_key(json, trust_path, trust)) != 0) return rc;
  if ((rc = tl_promote_verified_view(path, store_dir, json, public_view,
                                     trust_path ? trust : NULL, &view, &s)) != 0)
    return rc;
  if (json) {
    char *text = json_dumps(view, JSON_COMPACT | JSON_SORT_KEYS);
    if (text != NULL) printf("%s\n", text);
    free(text);
  } else {
    print_view(stdout, view, strcmp(json_string_value(json_object_get(view, "format")),
                                    "tinylm.promotion/1") == 0);
  }
  json_decref(view);
  tl_store_close(s);
  return TL_EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* tinylm promote status                                                    */

static const char status_usage[] =
    "usage: tinylm promote status --store DIR [--plan PLAN] [--artifact MODEL.slm] "
    "[--json]\n"
    "  lists every receipt in the store as current or invalidated, naming the\n"
    "  changed ancestor: another artifact (--artifact, else the plan's), another\n"
    "  build (this binary's), and with --plan another lane, claim, case set,\n"
    "  tolerance policy or stochastic design than the plan registers now.\n"
    "  Exit 0 (a listing, also when receipts are invalidated), 1 when a\n"
    "  receipt in the store is refused, 2 usage\n";

/* What the receipts are judged against. */
typedef struct current {
  const char *build_id;
  bool has_artifact;
  char artifact[65];
  const tl_plan *plan; /* NULL: none given */
  char plan_id[65];
} current;

static void changed(json_t *why, const char *ancestor, json_t *was, json_t *now) {
  json_array_append_new(why, json_pack("{s:s,s:o,s:o}", "ancestor", ancestor, "was",
                                       was ? was : json_null(), "now",
                                       now ? now : json_null()));
}

static json_t *hex_json(const uint8_t id[32]) {
  char hex[65];
  tl_hex_encode(id, 32, hex);
  return json_string(hex);
}

static const tl_plan_claim *plan_claim(const tl_plan *p, const char *name) {
  for (size_t i = 0; i < p->n_claims; i++)
    if (strcmp(p->claims[i].name, name) == 0) return &p->claims[i];
  return NULL;
}

/* The ancestors both kinds name: artifact, build, lane. */
static void common_ancestors(const json_t *doc, const current *now, json_t *why) {
  const json_t *rt = tl_json_node_meta(doc, "runtime");
  const char *artifact = meta_str(doc, "artifact", "artifact_id");
  if (now->has_artifact && strcmp(artifact, now->artifact) != 0)
    changed(why, "artifact", json_string(artifact), json_string(now->artifact));
  if (strcmp(json_string_value(json_object_get(rt, "build_id")), now->build_id) != 0)
    changed(why, "build", json_deep_copy(json_object_get(rt, "build_id")),
            json_string(now->build_id));
  if (now->plan != NULL &&
      strcmp(json_string_value(json_object_get(rt, "backend")), now->plan->lane) != 0)
    changed(why, "lane", json_deep_copy(json_object_get(rt, "backend")),
            json_string(now->plan->lane));
}

/* A comparison against the plan's claim of the same name. */
static void comparison_ancestors(const json_t *doc, const current *now, json_t *why,
                                 json_t *entry) {
  const char *name = meta_str(doc, "plan", "claim");
  const tl_plan_claim *c;
  json_t *policy = tl_json_node_meta(doc, "policy"), *cases, *ids, *x;
  const char *tol;
  size_t i;
  bool same_cases;
  common_ancestors(doc, now, why);
  if (now->plan == NULL) return;
  if ((c = plan_claim(now->plan, name)) == NULL) {
    changed(why, "claim", json_string(name), NULL);
    return;
  }
  if (strcmp(c->kind, meta_str(doc, "plan", "kind")) != 0 ||
      strcmp(c->level, meta_str(doc, "plan", "level")) != 0)
    changed(why, "claim", json_pack("{s:s,s:s}", "kind", meta_str(doc, "plan", "kind"),
                                    "level", meta_str(doc, "plan", "level")),
            json_pack("{s:s,s:s}", "kind", c->kind, "level", c->level));
  /* The cases: the same content ids in the same order. */
  cases = json_object_get(tl_json_node_meta(doc, "evidence"), "cases");
  same_cases = json_array_size(cases) == c->n_cases;
  for (i = 0; same_cases && i < c->n_cases; i++) {
    char hex[65];
    tl_hex_encode(c->case_ids[i], 32, hex);
    same_cases = strcmp(json_string_value(json_object_get(json_array_get(cases, i), "id")),
                        hex) == 0;
  }
  if (!same_cases) {
    ids = json_array();
    json_array_foreach(cases, i, x) json_array_append(ids, json_object_get(x, "id"));
    x = json_array();
    for (i = 0; i < c->n_cases; i++) json_array_append_new(x, hex_json(c->case_ids[i]));
    changed(why, "cases", ids, x);
  }
  /* The tolerance policy: the profile the claim is judged by, as promote
   * resolves it (tl_claim_profile). */
  tol = json_string_value(json_object_get(policy, "tolerance"));
  {
    const char *want = tl_claim_profile(c->kind, c->level, c->tolerance, now->plan->lane);
    bool same = want != NULL ? tol != NULL && strcmp(tol, want) == 0 : tol == NULL;
    if (!same)
      changed(why, "tolerance", tol ? json_string(tol) : NULL,
              want ? json_string(want) : NULL);
  }
  if (strcmp(c->kind, "stochastic") == 0) {
    json_t *had = json_object_get(policy, "design_sha256"), *want = hex_json(c->design_sha256);
    if (!json_equal(had, want))
      changed(why, "design", json_deep_copy(had), want);
    else
      json_decref(want);
  }
  /* Another plan id over unchanged inputs of this claim does not
   * invalidate it; it is said beside. */
  if (json_array_size(why) == 0 && strcmp(meta_str(doc, "plan", "plan_id"), now->plan_id) != 0)
    json_object_set_new(entry, "note",
                        json_string("another plan id; this claim's inputs are unchanged"));
}

/* A promotion: its plan and every comparison it names (statuses: the
 * listing so far, by receipt id). */
static void promotion_ancestors(const json_t *doc, const current *now, json_t *why,
                                const json_t *statuses) {
  size_t i;
  json_t *e;
  common_ancestors(doc, now, why);
  if (now->plan != NULL && strcmp(meta_str(doc, "plan", "plan_id"), now->plan_id) != 0)
    changed(why, "plan", json_string(meta_str(doc, "plan", "plan_id")),
            json_string(now->plan_id));
  json_array_foreach(json_object_get(tl_json_node_meta(doc, "comparisons"), "receipts"), i, e) {
    const char *id = json_string_value(json_object_get(e, "receipt_id"));
    const json_t *st = json_object_get(statuses, id);
    const char *s = json_string_value(json_object_get(st, "status"));
    if (s == NULL || strcmp(s, "current") != 0)
      changed(why, "comparison", json_pack("{s:O,s:s}", "claim", json_object_get(e, "claim"),
                                           "receipt_id", id),
              json_string(s == NULL ? "not in the store" : s));
  }
}

/* A signature stands with the promotion it signs: invalidated when that
 * one is not current (whether it verifies is promote show --trust's). */
static void signature_ancestors(const json_t *doc, json_t *why, const json_t *by_id) {
  const json_t *meta = tl_json_node_meta(doc, "signature");
  const char *id = json_string_value(json_object_get(meta, "signed"));
  const char *s = json_string_value(json_object_get(json_object_get(by_id, id), "status"));
  if (s == NULL || strcmp(s, "current") != 0)
    changed(why, "promotion", json_string(id), json_string(s == NULL ? "not in the store" : s));
}

/* Reads and checks every receipt of the store; comparisons first, so
 * that a promotion can be judged by its comparisons, and signatures
 * last, by their promotions. */
static int status_listing(tl_store *s, const current *now, bool json) {
  uint8_t (*ids)[32] = NULL, root[32];
  size_t n = 0, n_current = 0, n_invalid = 0, n_refused = 0;
  char err[512];
  json_t *list = json_array(), *by_id = json_object(), *docs = json_object();
  tl_status st = tl_store_list_receipts(s, &ids, &n, err, sizeof err);
  if (st != TL_OK) {
    json_decref(list);
    json_decref(by_id);
    json_decref(docs);
    return tl_cli_fail(json, st, "%s", err);
  }
  for (int pass = 0; pass < 3; pass++) {
    for (size_t i = 0; i < n; i++) {
      char hex[65];
      uint8_t *bytes = NULL;
      size_t len = 0;
      tl_receipt_kind kind;
      json_t *doc = NULL, *entry, *why;
      tl_hex_encode(ids[i], 32, hex);
      if (pass == 0) {
        st = tl_store_get_receipt(s, ids[i], &bytes, &len, err, sizeof err);
        if (st == TL_OK) st = load_doc(bytes, len, &kind, root, &doc, err, sizeof err);
        free(bytes);
        if (st == TL_OK && kind != TL_RECEIPT_COMPARISON && kind != TL_RECEIPT_PROMOTION &&
            kind != TL_RECEIPT_SIGNATURE) {
          st = TL_ERR_INVALID_ARGUMENT;
          snprintf(err, sizeof err, "not a comparison, promotion or signature receipt");
        }
        if (st == TL_OK && memcmp(root, ids[i], 32) != 0) {
          st = TL_ERR_HASH_MISMATCH;
          snprintf(err, sizeof err, "recomputes to another root than its name");
        }
        if (st == TL_OK && kind == TL_RECEIPT_COMPARISON) {
          /* Its verdict must be its raw observations' (tl_claim_rejudge). */
          const char *rule;
          char reason[400];
          if ((st = tl_claim_rejudge(s, doc, &rule, reason, sizeof reason)) != TL_OK)
            snprintf(err, sizeof err, "%s: claim '%s': %s", rule,
                     json_string_value(json_object_get(tl_json_node_meta(doc, "plan"), "claim")),
                     reason);
        }
        if (st != TL_OK) {
          json_object_set_new(by_id, hex,
                              json_pack("{s:s,s:s,s:s,s:s}", "id", hex, "status", "refused",
                                        "error", tl_status_name(st), "detail", err));
          json_decref(doc);
          continue;
        }
        json_object_set_new(docs, hex, doc);
        if (kind != TL_RECEIPT_COMPARISON) continue;
      } else {
        const char *format;
        doc = json_object_get(docs, hex);
        if (doc == NULL || json_object_get(by_id, hex) != NULL) continue;
        format = json_string_value(json_object_get(doc, "format"));
        if ((strcmp(format, TL_SIGNATURE_FORMAT) == 0) != (pass == 2)) continue;
      }
      why = json_array();
      entry = json_pack("{s:s,s:s}", "id", hex, "kind",
                        pass == 0 ? "comparison" : pass == 1 ? "promotion" : "signature");
      if (pass == 0) {
        json_object_set(entry, "claim", json_object_get(tl_json_node_meta(doc, "plan"), "claim"));
        comparison_ancestors(doc, now, why, entry);
      } else if (pass == 1) {
        promotion_ancestors(doc, now, why, by_id);
      } else {
        signature_ancestors(doc, why, by_id);
      }
      json_object_set_new(entry, "status",
                          json_string(json_array_size(why) ? "invalidated" : "current"));
      json_object_set_new(entry, "invalidated_by", why);
      json_object_set_new(by_id, hex, entry);
    }
  }
  /* In the store's order (by id). */
  for (size_t i = 0; i < n; i++) {
    char hex[65];
    json_t *e;
    const char *stt;
    tl_hex_encode(ids[i], 32, hex);
    e = json_object_get(by_id, hex);
    stt = json_string_value(json_object_get(e, "status"));
    n_current += strcmp(stt, "current") == 0;
    n_invalid += strcmp(stt, "invalidated") == 0;
    n_refused += strcmp(stt, "refused") == 0;
    json_array_append(list, e);
  }
  if (json) {
    json_t *out = json_pack("{s:s,s:s,s:o,s:o,s:O,s:I,s:I,s:I}", "store", tl_store_dir(s),
                            "build_id", now->build_id, "artifact_id",
                            now->has_artifact ? json_string(now->artifact) : json_null(),
                            "plan_id", now->plan ? json_string(now->plan_id) : json_null(),
                            "receipts", list, "current", (json_int_t)n_current,
                            "invalidated", (json_int_t)n_invalid, "refused",
                            (json_int_t)n_refused);
    char *text = out ? json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (text != NULL) printf("%s\n", text);
    free(text);
    json_decref(out);
  } else {
    size_t i;
    json_t *e;
    printf("store %s: %zu receipts: %zu current, %zu invalidated, %zu refused\n",
           tl_store_dir(s), n, n_current, n_invalid, n_refused);
    printf("  against build %s, artifact %s, plan %s\n", now->build_id,
           now->has_artifact ? now->artifact : "(not given)",
           now->plan ? now->plan_id : "(not given)");
    json_array_foreach(list, i, e) {
      const char *stt = json_string_value(json_object_get(e, "status"));
      size_t k;
      json_t *w;
      printf("  %s  %-10s %-12s %s", json_string_value(json_object_get(e, "id")),
             or_dash(json_object_get(e, "kind")), or_dash(json_object_get(e, "claim")), stt);
      if (strcmp(stt, "refused") == 0)
        printf(": %s: %s", json_string_value(json_object_get(e, "error")),
               json_string_value(json_object_get(e, "detail")));
      json_array_foreach(json_object_get(e, "invalidated_by"), k, w) {
        char *was = json_dumps(json_object_get(w, "was"), JSON_COMPACT | JSON_ENCODE_ANY);
        char *to = json_dumps(json_object_get(w, "now"), JSON_COMPACT | JSON_ENCODE_ANY);
        printf("%s%s (was %s, now %s)", k == 0 ? ": " : "; ",
               json_string_value(json_object_get(w, "ancestor")), was ? was : "?",
               to ? to : "?");
        free(was);
        free(to);
      }
      if (json_object_get(e, "note") != NULL)
        printf(" (%s)", json_string_value(json_object_get(e, "note")));
      putchar('\n');
    }
  }
  json_decref(list);
  json_decref(by_id);
  json_decref(docs);
  free(ids);
  return n_refused > 0 ? TL_EXIT_FAILURE : TL_EXIT_OK;
}

int tl_promote_status_main(int argc, char **argv) {
  const char *store_dir = NULL, *plan_path = NULL, *artifact_path = NULL;
  bool json = false;
  char err[512];
  current now = {.build_id = NULL};
  tl_plan plan;
  bool has_plan = false;
  tl_store *s = NULL;
  tl_status st;
  int rc;
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int r = -1;
    if (strcmp(a, "--help") == 0) {
      fputs(status_usage, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      continue;
    } else if (strcmp(a, "--store") == 0) {
      r = tl_cli_value(json, argc, argv, &i, &store_dir);
    } else if (strcmp(a, "--plan") == 0) {
      r = tl_cli_value(json, argc, argv, &i, &plan_path);
    } else if (strcmp(a, "--artifact") == 0) {
      r = tl_cli_value(json, argc, argv, &i, &artifact_path);
    } else {
      return tl_cli_usage(json, "unexpected '%s'\n%s", a, status_usage);
    }
    if (r >= 0) return r;
  }
  if (store_dir == NULL) return tl_cli_usage(json, "status needs --store DIR\n%s", status_usage);
  if ((now.build_id = tl_promote_build_id(err, sizeof err)) == NULL)
    return tl_cli_fail(json, TL_ERR_IO, "the build id: %s", err);
  if (artifact_path != NULL) {
    tl_file_view v;
    uint8_t id[32];
    st = tl_file_open_regular(artifact_path, &v, err, sizeof err);
    if (st == TL_OK) {
      st = tl_file_sha256(&v, id);
      tl_file_close_view(&v);
      if (st != TL_OK) snprintf(err, sizeof err, "%s: hashing failed", artifact_path);
    }
    if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
    tl_hex_encode(id, 32, now.artifact);
    now.has_artifact = true;
  }
  if (plan_path != NULL) {
    tl_file_view v;
    st = tl_file_open_view(plan_path, &v, err, sizeof err);
    if (st == TL_OK) {
      st = tl_plan_parse(v.data, v.len, &plan, err, sizeof err);
      tl_file_close_view(&v);
      if (st != TL_OK) return tl_cli_fail(json, st, "%s: %s", plan_path, err);
    }
    if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
    has_plan = true;
    now.plan = &plan;
    tl_hex_encode(plan.id, 32, now.plan_id);
    if (!now.has_artifact) {
      tl_hex_encode(plan.artifact_id, 32, now.artifact);
      now.has_artifact = true;
    }
  }
  st = tl_store_open(store_dir, false, &s, err, sizeof err);
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
  } else {
    rc = status_listing(s, &now, json);
    tl_store_close(s);
  }
  if (has_plan) tl_plan_free(&plan);
  return rc;
}
