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
 * re-derived is not promoted. */
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

/* Each tensor of the artifact against the re-conversion: the observation
 * lines and the first difference. */
static json_t *compare_tensors(const tl_native_model *art, const tl_native_model *re,
                               char *first, size_t cap, size_t *differ) {
  json_t *lines = json_array();
  *differ = 0;
  for (size_t i = 0; lines != NULL && i < art->tensors.n; i++) {
    tl_slm_tensor a, b;
    char ha[65], hb[65] = "", name[256];
    bool same = false;
    if (tl_slm_tensor_at(&art->tensors, i, &a) != TL_OK) continue;
    snprintf(name, sizeof name, "%.*s", (int)(a.name_len < 200 ? a.name_len : 200), a.name);
    hex(a.digest, ha);
    if (tl_slm_tensor_find(&re->tensors, a.name, a.name_len, &b) == TL_OK) {
      hex(b.digest, hb);
      same = a.type == b.type && a.len == b.len && memcmp(a.digest, b.digest, 32) == 0;
      if (!same && *differ == 0) {
        char where[128];
        first_block(&a, &b, where, sizeof where);
        snprintf(first, cap, "%s: not the source's (%s)", name, where);
      }
    } else if (*differ == 0) {
      snprintf(first, cap, "%s: the source gives no such tensor", name);
    }
    *differ += !same;
    json_array_append_new(lines, json_pack("{s:s,s:s,s:s,s:b}", "tensor", name, "artifact", ha,
                                           "source", hb, "equal", same));
  }
  if (lines != NULL && art->tensors.n != re->tensors.n && *differ == 0) {
    snprintf(first, cap, "the source gives %zu tensors, the artifact holds %zu", re->tensors.n,
             art->tensors.n);
    (*differ)++;
  }
  return lines;
}

/* convert SOURCE -o DIR/requantized.slm --quant Q, as a child. */
static tl_status reconvert(tl_claim_ctx *c, const char *source, const char *quant,
                           const char *out) {
  char *argv[] = {"tinylm", "convert", (char *)source, "-o", (char *)out, "--quant",
                  (char *)quant, "--json", NULL};
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

tl_status tl_claim_source_binding(tl_claim_ctx *c, tl_claim_result *out) {
  const json_t *cases, *cs;
  const char *source, *quant;
  char tmpl[] = "/tmp/tinylm-source-XXXXXX", path[64], case_hex[65];
  tl_native_model re;
  json_t *lines = NULL, *doc;
  size_t differ = 0;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st != TL_OK) return st;
  cs = json_object_get(json_array_get(cases, 0), "case");
  source = json_string_value(json_object_get(cs, "source"));
  quant = json_string_value(json_object_get(cs, "quant"));
  tl_hex_encode(out->cases[0].id, 32, case_hex);
  out->cases[0].invariant = "tensors_equal_reconversion";
  if (quant == NULL) {
    snprintf(c->err, c->err_cap, "a source_binding case needs \"quant\"");
    tl_claim_result_free(out);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (source == NULL) {
    doc = json_pack("{s:s,s:s,s:n,s:s}", "claim", "source_binding", "case", case_hex, "source",
                    "not_run", "the plan names no source checkpoint");
  } else {
    if (mkdtemp(tmpl) == NULL) {
      snprintf(c->err, c->err_cap, "a scratch directory under /tmp: cannot be made");
      tl_claim_result_free(out);
      return TL_ERR_IO;
    }
    snprintf(path, sizeof path, "%s/requantized.slm", tmpl);
    st = reconvert(c, source, quant, path);
    if (st == TL_ERR_INVALID_ARGUMENT) {
      /* a source that does not convert is evidence, not infrastructure */
      lines = json_pack("[{s:s}]", "error", c->err);
      snprintf(out->first_divergence, sizeof out->first_divergence, "%s", c->err);
      differ = 1;
      st = TL_OK;
    } else if (st == TL_OK &&
               (st = tl_native_model_open(path, &re, c->err, c->err_cap)) == TL_OK) {
      lines = compare_tensors(&c->session->model, &re, out->first_divergence,
                              sizeof out->first_divergence, &differ);
      tl_native_model_close(&re);
    }
    unlink(path);
    rmdir(tmpl);
    if (st != TL_OK) {
      tl_claim_result_free(out);
      return st;
    }
    doc = json_pack("{s:s,s:s,s:s,s:s,s:o}", "claim", "source_binding", "case", case_hex,
                    "source", source, "quant", quant, "tensors", lines ? lines : json_array());
  }
  {
    char *text = doc ? tl_plan_canonical(doc) : NULL;
    st = text ? tl_store_put(c->store, "observation", (const uint8_t *)text, strlen(text),
                             out->observation, c->err, c->err_cap)
              : TL_ERR_OUT_OF_MEMORY;
    if (text != NULL) tl_sha256(text, strlen(text), out->cases[0].output);
    out->has_observation = st == TL_OK;
    free(text);
    json_decref(doc);
  }
  if (st != TL_OK) {
    tl_claim_result_free(out);
    return st;
  }
  out->cases[0].pass = source != NULL && differ == 0;
  out->pass = out->cases[0].pass;
  if (source == NULL) {
    out->stop_rule = TL_RULE_MISSING_OUTPUT;
    snprintf(out->first_divergence, sizeof out->first_divergence,
             "not run: the plan names no source checkpoint (plan init --source HF_DIR)");
    snprintf(out->summary, sizeof out->summary, "not run: no source checkpoint");
  } else {
    if (!out->pass) out->stop_rule = TL_RULE_REQUANT;
    snprintf(out->summary, sizeof out->summary,
             "%zu of %zu tensors equal the source re-converted (--quant %s)",
             c->session->model.tensors.n - (differ < c->session->model.tensors.n ? differ : 0),
             c->session->model.tensors.n, quant);
  }
  return TL_OK;
}
