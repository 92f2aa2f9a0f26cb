/* `tinylm receipt show` (receipt.h): the display, on jansson; apart from
 * the writer and the check (receipt.c), which the wasm32 API modules
 * build too. */
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cbor_doc.h"
#include "json/json.h"
#include "receipt.h"

/* ------------------------------------------------------------------------ */
/* The display                                                              */

/* Sampler parameters the receipt keeps as IEEE-754 bits
 * (tl_sampler_profile_cbor); shown as decimals. */
static bool is_float_bits(const char *key) {
  static const char *const keys[] = {"temperature", "top_p", "min_p",
                                     "repeat_penalty", "frequency_penalty",
                                     "presence_penalty"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (strcmp(key, keys[i]) == 0) return true;
  return false;
}

static void print_value(FILE *out, const char *key, const json_t *v,
                        bool floats);

/* key=value pairs; floats: the map is a sampler profile. */
static void print_fields(FILE *out, const json_t *obj, bool floats) {
  const char *key;
  json_t *v;
  bool first = true;
  json_object_foreach((json_t *)obj, key, v) {
    fprintf(out, "%s%s", first ? "" : " ", key);
    print_value(out, key, v, floats);
    first = false;
  }
}

static void print_value(FILE *out, const char *key, const json_t *v,
                        bool floats) {
  uint64_t u;
  char *text;
  if (tl_json_u64(v, &u)) {
    if (floats && is_float_bits(key)) {
      char buf[64];
      tl_json_out o = tl_json_out_make((uint8_t *)buf, sizeof buf - 1);
      tl_py_float_repr(tl_bits_to_f64(u), &o);
      fprintf(out, "=%.*s", (int)o.len, buf);
    } else {
      fprintf(out, "=%" PRIu64, u);
    }
  } else if (json_is_object(v)) {
    fputc('{', out);
    print_fields(out, v, strcmp(key, "profile") == 0);
    fputc('}', out);
  } else if (floats && strcmp(key, "bias") == 0 && json_is_array(v)) {
    /* the logit biases' values, bits like the other floats */
    size_t i;
    json_t *b;
    fputs("=[", out);
    json_array_foreach(v, i, b) {
      char buf[64];
      tl_json_out o = tl_json_out_make((uint8_t *)buf, sizeof buf - 1);
      tl_json_u64(b, &u);
      tl_py_float_repr(tl_bits_to_f64(u), &o);
      fprintf(out, "%s%.*s", i ? "," : "", (int)o.len, buf);
    }
    fputc(']', out);
  } else {
    text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    fprintf(out, "=%s", text ? text : "?");
    free(text);
  }
}

/* doc has passed the check: every field below exists with its type. */
static void show_run(FILE *out, const json_t *doc) {
  size_t i;
  json_t *n, *t = json_object_get(doc, "timings_us");
  uint64_t prefill = 0, decode = 0;
  tl_json_u64(json_object_get(t, "prefill"), &prefill); /* checked: uints */
  tl_json_u64(json_object_get(t, "decode"), &decode);
  fprintf(
      out,
      "run receipt %s\n  (tinylm.receipt/1: every node id verified; everything "
      "below is part of the root id except the timings and the execution)\n",
      json_string_value(json_object_get(doc, "root")));
  json_array_foreach(json_object_get(doc, "nodes"), i, n) {
    fprintf(out, "  %-10s %.16s...  ",
            json_string_value(json_object_get(n, "type")),
            json_string_value(json_object_get(n, "id")));
    print_fields(out, json_object_get(n, "metadata"), false);
    fputc('\n', out);
  }
  fprintf(out,
          "  timings (unverified, not part of the identity): prefill %" PRIu64
          " us, decode %" PRIu64 " us\n",
          prefill, decode);
  if ((t = json_object_get(doc, "execution")) != NULL) {
    fprintf(out, "  execution (unverified, not part of the identity): ");
    print_fields(out, t, false);
    fputc('\n', out);
  }
}

/* A comparison, promotion or signature receipt (tinylm promote): a line
 * per node, all of it in the root id. A signature's shape is checked; that
 * it verifies under a key is promote show --trust's. */
static void show_promote(FILE *out, const json_t *doc, tl_receipt_kind kind) {
  size_t i;
  json_t *n;
  fprintf(out, "%s receipt %s\n  (%s: every node id verified; everything below is part "
               "of the root id)\n",
          kind == TL_RECEIPT_COMPARISON  ? "comparison"
          : kind == TL_RECEIPT_PROMOTION ? "promotion"
                                         : "signature",
          json_string_value(json_object_get(doc, "root")),
          json_string_value(json_object_get(doc, "format")));
  json_array_foreach(json_object_get(doc, "nodes"), i, n) {
    fprintf(out, "  %-11s %.16s...  ", json_string_value(json_object_get(n, "type")),
            json_string_value(json_object_get(n, "id")));
    print_fields(out, json_object_get(n, "metadata"), false);
    fputc('\n', out);
  }
}

/* A record's fields, a line each, keys in a column width wide; a list of
 * records one per line. */
static void show_record(FILE *out, const json_t *rec, int width) {
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)rec, key, v) {
    fprintf(out, "  %-*s", width, key);
    if (json_is_array(v)) {
      size_t i;
      json_t *item;
      json_array_foreach(v, i, item) {
        fprintf(out, "%s%*s", i == 0 ? "" : "\n", i == 0 ? 0 : width + 2, "");
        print_fields(out, item, false);
      }
    } else if (json_is_object(v)) {
      print_fields(out, v, false);
    } else {
      char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
      fprintf(out, "%s", text ? text : "?");
      free(text);
    }
    fputc('\n', out);
  }
}

/* A capability receipt (web/tinylm.js): its one node's fields. */
static void show_capability(FILE *out, const json_t *doc) {
  json_t *node = json_array_get(json_object_get(doc, "nodes"), 0);
  fprintf(out,
          "capability receipt %s\n  (tinylm.capability-receipt/1: the node id "
          "verified; everything below is part of it)\n",
          json_string_value(json_object_get(doc, "root")));
  show_record(out, json_object_get(node, "metadata"), 21);
}

static void show_convert(FILE *out, const json_t *doc) {
  fprintf(out,
          "converter receipt (tinylm.convert/1: a record, not a hash graph; "
          "nothing "
          "in it is verified here: compare artifact_id with `tinylm hash "
          "ARTIFACT`)\n");
  show_record(out, doc, 25);
}

/* The --json form: the document as cbor_doc renders it, with "verified"
 * (true for a run or a capability receipt) and, for a run receipt,
 * "unverified" naming what lies outside the root id. */
static tl_status show_json(FILE *out, json_t *doc, tl_receipt_kind kind) {
  char *text;
  json_object_set_new(doc, "verified", json_boolean(kind != TL_RECEIPT_CONVERT));
  if (kind == TL_RECEIPT_RUN) {
    json_t *u = json_pack("[s,s]", "timings_us.prefill", "timings_us.decode");
    const json_t *ex = json_object_get(doc, "execution");
    if (u != NULL && ex != NULL) {
      json_array_append_new(u, json_string("execution.isa"));
      json_array_append_new(u, json_string("execution.threads"));
      if (json_object_get(ex, "verify") != NULL)
        json_array_append_new(u, json_string("execution.verify"));
    }
    json_object_set_new(doc, "unverified", u);
  }
  text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
  if (text == NULL) return TL_ERR_OUT_OF_MEMORY;
  fprintf(out, "%s\n", text);
  free(text);
  return TL_OK;
}

tl_status tl_receipt_show(const uint8_t *doc, size_t len, bool json, FILE *out,
                          char *err, size_t err_cap) {
  tl_receipt_kind kind;
  uint8_t root[32];
  json_t *v;
  tl_status st = tl_receipt_check(doc, len, &kind, root, err, err_cap);
  if (st == TL_OK) st = tl_cbor_to_json(doc, len, &v, err, err_cap);
  if (st != TL_OK) return st;
  if (json) {
    st = show_json(out, v, kind);
    if (st != TL_OK)
      snprintf(err, err_cap, "out of memory printing the receipt");
  } else if (kind == TL_RECEIPT_RUN) {
    show_run(out, v);
  } else if (kind == TL_RECEIPT_CAPABILITY) {
    show_capability(out, v);
  } else if (kind == TL_RECEIPT_COMPARISON || kind == TL_RECEIPT_PROMOTION ||
             kind == TL_RECEIPT_SIGNATURE) {
    show_promote(out, v, kind);
  } else {
    show_convert(out, v);
  }
  json_decref(v);
  return st;
}
