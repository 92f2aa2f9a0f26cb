/* The `source_binding` claim of tinylm promote (docs/promotion.md): the
 * artifact's weights are the source checkpoint's, transformed as its
 * ledger says. The converter runs again on the source directory the plan
 * names, with the artifact's recorded quantisation, into a scratch
 * directory (convert is deterministic: the same inputs and options give
 * the same bytes), and every tensor of the artifact must equal the
 * re-conversion's, bit for bit, by its digest. A scale row doubled, an
 * embedding rescaled, a tensor from another checkpoint: each is a tensor
 * whose digest differs, named with its first differing block, even when
 * the artifact's own digests were all recomputed. Without a source the
 * claim is not run, and fails saying so: an artifact whose weights nobody
 * re-derived is not promoted.
 *
 * OBSERVE stores, per tensor of the artifact, its type and digest, the
 * re-conversion's (null: no such tensor) and where the bytes first
 * differ; JUDGE derives every equality, the verdict, the stop rule and the
 * first divergence again from those alone. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bytes.h"
#include "cli.h"
#include "hash/sha256.h"
#include "model.h"
#include "promote.h"
#include "promote_bench.h"
#include "promote_plan.h"

static void hex(const uint8_t *p, char out[65]) { tl_hex_encode(p, 32, out); }

/* Where a and b (one tensor's bytes) first differ, as row and block. */
static void first_block(const tl_slm_tensor *a, const tl_slm_tensor *b, char *out, size_t cap) {
  size_t n = a->len < b->len ? a->len : b->len, i = 0, row_bytes = a->rows ? a->len / a->rows : 0;
  size_t bb = a->type == TL_QTYPE_Q8 ? 36 : a->type == TL_QTYPE_Q4 ? 20 : 0;
  while (i < n && a->data[i] == b->data[i]) i++;
  if (a->len != b->len) snprintf(out, cap, "%zu bytes, the source gives %zu", a->len, b->len);
  else if (bb && row_bytes) snprintf(out, cap, "row %zu, block %zu differ first", i / row_bytes,
                                     i % row_bytes / bb);
  else snprintf(out, cap, "byte %zu differs first", i);
}

/* OBSERVE: each tensor of the artifact beside the re-conversion's. */
static json_t *observe_tensors(const tl_native_model *art, const tl_native_model *re) {
  json_t *lines = json_array();
  for (size_t i = 0; lines != NULL && i < art->tensors.n; i++) {
    tl_slm_tensor a, b;
    char ha[65], hb[65], name[256];
    json_t *line;
    if (tl_slm_tensor_at(&art->tensors, i, &a) != TL_OK) continue;
    snprintf(name, sizeof name, "%.*s", (int)(a.name_len < 200 ? a.name_len : 200), a.name);
    hex(a.digest, ha);
    line = json_pack("{s:s,s:s,s:s}", "tensor", name, "artifact", ha, "type",
                     tl_slm_dtype_name(tl_slm_dtype_code(a.type, a.packed)));
    if (tl_slm_tensor_find(&re->tensors, a.name, a.name_len, &b) == TL_OK) {
      bool same = a.type == b.type && a.packed == b.packed && a.len == b.len && memcmp(a.digest, b.digest, 32) == 0;
      hex(b.digest, hb);
      json_object_set_new(line, "source", json_string(hb));
      json_object_set_new(line, "source_type", json_string(tl_slm_dtype_name(tl_slm_dtype_code(b.type, b.packed))));
      json_object_set_new(line, "equal", json_boolean(same));
      if (!same) {
        char where[128];
        first_block(&a, &b, where, sizeof where);
        json_object_set_new(line, "first_difference", json_string(where));
      }
    } else {
      json_object_set_new(line, "source", json_null());
      json_object_set_new(line, "equal", json_false());
    }
    json_array_append_new(lines, line);
  }
  return lines;
}

/* "packed" when the artifact holds q8/q4 tensors in the packed layout
 * (docs/slm.md SLM-11a), else "stored": the re-conversion writes the same. */
static const char *layout_of(const tl_native_model *m) {
  for (size_t i = 0; i < m->tensors.n; i++) {
    tl_slm_tensor t;
    if (tl_slm_tensor_at(&m->tensors, i, &t) == TL_OK && t.packed) return "packed";
  }
  return "stored";
}

/* convert SOURCE -o DIR/requantized.slm --quant Q --layout L, as a child. */
static tl_status reconvert(tl_claim_ctx *c, const char *source, const char *quant,
                           const char *out) {
  char *argv[] = {"tinylm", "convert", (char *)source, "-o", (char *)out, "--quant",
                  (char *)quant, "--layout", (char *)layout_of(&c->session->model), "--json",
                  NULL};
  char *text = NULL;
  int status = 0;
  tl_status st = tl_spawn_read("/proc/self/exe", argv, &text, &status, c->err, c->err_cap);
  if (st == TL_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    json_t *o = json_loads(text ? text : "", 0, NULL);
    const char *why = json_string_value(json_object_get(o, "detail"));
    snprintf(c->err, c->err_cap, "the source does not convert: %s", why ? why : "(no detail)");
    json_decref(o);
    st = TL_ERR_INVALID_ARGUMENT;
  }
  free(text);
  return st;
}

/* The plan's one case: its body and id. */
static tl_status the_case(tl_claim_ctx *c, tl_claim_result *out, const json_t **cs,
                          char case_hex[65]) {
  const json_t *cases;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st != TL_OK) return st;
  *cs = json_object_get(json_array_get(cases, 0), "case");
  tl_hex_encode(out->cases[0].id, 32, case_hex);
  if (out->n_cases != 1 || json_string_value(json_object_get(*cs, "quant")) == NULL) {
    snprintf(c->err, c->err_cap, "a source_binding claim has one case, with \"quant\"");
    tl_claim_result_free(out);
    return TL_ERR_INVALID_ARGUMENT;
  }
  return TL_OK;
}

tl_status tl_claim_source_binding(tl_claim_ctx *c, tl_claim_result *out) {
  const json_t *cs;
  const char *source, *quant;
  char tmpl[] = "/tmp/tinylm-source-XXXXXX", path[64], case_hex[65];
  tl_native_model re;
  json_t *doc;
  tl_status st = the_case(c, out, &cs, case_hex);
  if (st != TL_OK) return st;
  source = json_string_value(json_object_get(cs, "source"));
  quant = json_string_value(json_object_get(cs, "quant"));
  if (source == NULL) {
    doc = json_pack("{s:s,s:s,s:n,s:s}", "claim", "source_binding", "case", case_hex, "source",
                    "not_run", "the plan names no source checkpoint");
  } else {
    json_t *seen = NULL;
    if (mkdtemp(tmpl) == NULL) {
      snprintf(c->err, c->err_cap, "a scratch directory under /tmp: cannot be made");
      tl_claim_result_free(out);
      return TL_ERR_IO;
    }
    snprintf(path, sizeof path, "%s/requantized.slm", tmpl);
    st = reconvert(c, source, quant, path);
    if (st == TL_ERR_INVALID_ARGUMENT) {
      /* a source that does not convert is evidence, not infrastructure */
      seen = json_pack("{s:s}", "error", c->err);
      st = TL_OK;
    } else if (st == TL_OK &&
               (st = tl_native_model_open(path, &re, c->err, c->err_cap)) == TL_OK) {
      seen = json_pack("{s:I,s:o}", "source_tensors", (json_int_t)re.tensors.n, "tensors",
                       observe_tensors(&c->session->model, &re));
      tl_native_model_close(&re);
    }
    unlink(path);
    rmdir(tmpl);
    if (st != TL_OK) {
      tl_claim_result_free(out);
      return st;
    }
    doc = json_pack("{s:s,s:s,s:s,s:s}", "claim", "source_binding", "case", case_hex, "source",
                    source, "quant", quant);
    if (doc != NULL && seen != NULL) json_object_update(doc, seen);
    json_decref(seen);
  }
  {
    char *text = doc ? tl_plan_canonical(doc) : NULL;
    st = text ? tl_store_put(c->store, "observation", (const uint8_t *)text, strlen(text),
                             out->observation, c->err, c->err_cap)
              : TL_ERR_OUT_OF_MEMORY;
    free(text);
    json_decref(doc);
  }
  out->has_observation = st == TL_OK;
  if (st != TL_OK) tl_claim_result_free(out);
  return st;
}

/* ------------------------------------------------------------------------ */
/* JUDGE                                                                    */

static tl_status unfit(tl_claim_ctx *c, const char *why) {
  snprintf(c->err, c->err_cap, "the stored source_binding observation %s", why);
  return TL_ERR_INVALID_ARGUMENT;
}

static bool same_text(const json_t *a, const json_t *b) {
  return json_is_string(a) && json_is_string(b) &&
         strcmp(json_string_value(a), json_string_value(b)) == 0;
}

/* Every tensor line's equality derived from its digests and types; the
 * first differing tensor in artifact order is the divergence. */
static tl_status judge_tensors(tl_claim_ctx *c, const json_t *doc, tl_claim_result *out,
                               size_t *differ) {
  const json_t *lines = json_object_get(doc, "tensors"), *l;
  json_int_t source_n = json_integer_value(json_object_get(doc, "source_tensors"));
  size_t i;
  *differ = 0;
  if (!json_is_array(lines) || !json_is_integer(json_object_get(doc, "source_tensors")))
    return unfit(c, "holds neither tensors nor an error");
  json_array_foreach(lines, i, l) {
    const json_t *src = json_object_get(l, "source");
    const char *name = json_string_value(json_object_get(l, "tensor"));
    bool same = same_text(json_object_get(l, "artifact"), src) &&
                same_text(json_object_get(l, "type"), json_object_get(l, "source_type"));
    if (name == NULL || !json_is_boolean(json_object_get(l, "equal")) ||
        json_is_true(json_object_get(l, "equal")) != same ||
        (!json_is_null(src) && !same && !json_is_string(json_object_get(l, "first_difference"))))
      return unfit(c, "has a tensor line whose `equal` is not what its digests say");
    if (!same && (*differ)++ == 0)
      snprintf(out->first_divergence, sizeof out->first_divergence,
               json_is_null(src) ? "%s: the source gives no such tensor"
                                 : "%s: not the source's (%s)",
               name, json_string_value(json_object_get(l, "first_difference")));
  }
  if (source_n != (json_int_t)json_array_size(lines) && *differ == 0) {
    snprintf(out->first_divergence, sizeof out->first_divergence,
             "the source gives %lld tensors, the artifact holds %zu", (long long)source_n,
             json_array_size(lines));
    (*differ)++;
  }
  return TL_OK;
}

tl_status tl_judge_source_binding(tl_claim_ctx *c, const uint8_t observation[32],
                                  tl_claim_result *out) {
  const json_t *cs;
  char case_hex[65];
  uint8_t *bytes = NULL;
  size_t len = 0, differ = 0;
  json_t *doc = NULL;
  const char *quant;
  tl_status st = the_case(c, out, &cs, case_hex);
  if (st != TL_OK) return st;
  quant = json_string_value(json_object_get(cs, "quant"));
  if ((st = tl_store_get(c->store, observation, &bytes, &len, c->err, c->err_cap)) != TL_OK) {
    tl_claim_result_free(out);
    return st;
  }
  doc = json_loadb((const char *)bytes, len, JSON_REJECT_DUPLICATES, NULL);
  tl_sha256(bytes, len, out->cases[0].output);
  free(bytes);
  memcpy(out->observation, observation, 32);
  out->has_observation = true;
  out->cases[0].invariant = "tensors_equal_reconversion";
  if (doc == NULL || !json_is_string(json_object_get(doc, "case")) ||
      strcmp(json_string_value(json_object_get(doc, "case")), case_hex) != 0 ||
      !json_equal(json_object_get(doc, "source"), json_object_get(cs, "source"))) {
    st = unfit(c, "is not of the plan's case (its id and source)");
  } else if (json_is_null(json_object_get(cs, "source"))) {
    out->stop_rule = TL_RULE_MISSING_OUTPUT;
    snprintf(out->first_divergence, sizeof out->first_divergence,
             "not run: the plan names no source checkpoint (plan init --source HF_DIR)");
    snprintf(out->summary, sizeof out->summary, "not run: no source checkpoint");
  } else if (!same_text(json_object_get(doc, "quant"), json_object_get(cs, "quant"))) {
    st = unfit(c, "is of another quantisation than the plan's case");
  } else if (json_is_string(json_object_get(doc, "error"))) {
    differ = 1;
    snprintf(out->first_divergence, sizeof out->first_divergence, "%s",
             json_string_value(json_object_get(doc, "error")));
    snprintf(out->summary, sizeof out->summary, "the source does not convert (--quant %s)",
             quant);
  } else if ((st = judge_tensors(c, doc, out, &differ)) == TL_OK) {
    size_t n = json_array_size(json_object_get(doc, "tensors"));
    snprintf(out->summary, sizeof out->summary,
             "%zu of %zu tensors equal the source re-converted (--quant %s)",
             n - (differ < n ? differ : n), n, quant);
  }
  json_decref(doc);
  if (st != TL_OK) {
    tl_claim_result_free(out);
    return st;
  }
  out->cases[0].pass = !json_is_null(json_object_get(cs, "source")) && differ == 0;
  out->pass = out->cases[0].pass;
  if (!out->pass && out->stop_rule == NULL) out->stop_rule = TL_RULE_REQUANT;
  return TL_OK;
}
