#include "slm_view.h"

#include <stdio.h>
#include <string.h>

#include "cbor_doc.h"

const char *tl_slm_view_kind_name(uint32_t kind) {
  static const char *names[] = {NULL,        "metadata",  "tokenizer",
                                "template",  "tensor_dir", "tensor_data"};
  return kind >= 1 && kind <= 5 ? names[kind] : NULL;
}

static void name_it(char *what, size_t cap, const char *fmt, const char *a,
                    size_t a_len) {
  if (what != NULL && cap > 0) snprintf(what, cap, fmt, (int)a_len, a);
}

static tl_status verify_sections(const tl_slm *slm, tl_cli_progress *p,
                                 size_t *at, char *what, size_t what_cap) {
  uint64_t bytes = 0, total = 0;
  for (size_t i = 0; i < slm->n_sections; i++) total += slm->sections[i].len;
  for (size_t i = 0; i < slm->n_sections; i++) {
    const tl_slm_section *s = &slm->sections[i];
    tl_status st = tl_slm_verify_section(s);
    if (st != TL_OK) {
      const char *name = tl_slm_view_kind_name(s->kind);
      *at = (size_t)(s->data - slm->file);
      name_it(what, what_cap, "section %.*s", name ? name : "?",
              name ? strlen(name) : 1);
      return st;
    }
    bytes += s->len;
    if (p != NULL)
      tl_cli_progress_update(p, "sections", i + 1, slm->n_sections, bytes,
                             total);
  }
  return TL_OK;
}

static tl_status verify_tensors(const tl_slm_tensors *t, const uint8_t *file,
                                tl_cli_progress *p, size_t *at, char *what,
                                size_t what_cap) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < t->n; i++) {
    tl_slm_tensor x;
    tl_status st = tl_slm_tensor_at(t, i, &x);
    if (st != TL_OK) return st; /* i < n: cannot happen */
    if ((st = tl_slm_tensor_verify(&x)) != TL_OK) {
      *at = (size_t)(x.data - file);
      name_it(what, what_cap, "tensor %.*s", x.name, x.name_len);
      return st;
    }
    bytes += x.len;
    if (p != NULL)
      tl_cli_progress_update(p, "tensors", i + 1, t->n, bytes, t->data_len);
  }
  return TL_OK;
}

tl_status tl_slm_view_open(const uint8_t *file, size_t len, bool verify,
                           tl_cli_progress *p, tl_slm *slm,
                           tl_slm_tensors *tensors, tl_slm_artifact_kind *kind,
                           size_t *at, char *what, size_t what_cap) {
  tl_status st;
  memset(tensors, 0, sizeof *tensors);
  *kind = TL_SLM_ARTIFACT_TOKENIZER_ONLY;
  *at = 0;
  name_it(what, what_cap, "%.*s", "container", 9);
  /* Opened lazily; verify then checks every digest an eager open would,
   * in the same order, one at a time. */
  st = tl_slm_open(slm, file, len, TL_SLM_VERIFY_LAZY, at);
  if (st == TL_OK && verify)
    st = verify_sections(slm, p, at, what, what_cap);
  if (st == TL_OK && (st = tl_slm_artifact(slm, kind)) != TL_OK) {
    *at = 0;
    name_it(what, what_cap, "%.*s", "section table", 13);
  }
  if (st == TL_OK && *kind == TL_SLM_ARTIFACT_MODEL) {
    st = tl_slm_tensors_open(tensors, slm, TL_SLM_VERIFY_LAZY, at);
    if (st != TL_OK) name_it(what, what_cap, "%.*s", "tensor directory", 16);
  }
  if (st == TL_OK && verify && *kind == TL_SLM_ARTIFACT_MODEL)
    st = verify_tensors(tensors, file, p, at, what, what_cap);
  return st;
}

static json_t *sections_json(const tl_slm *slm) {
  json_t *a = json_array();
  for (size_t i = 0; i < slm->n_sections; i++) {
    const tl_slm_section *s = &slm->sections[i];
    const char *name = tl_slm_view_kind_name(s->kind);
    json_array_append_new(
        a, json_pack("{s:o,s:I,s:I,s:b,s:o}", "kind",
                     name ? json_string(name) : json_integer(s->kind),
                     "offset", (json_int_t)(s->data - slm->file), "length",
                     (json_int_t)s->len, "required",
                     (s->flags & TL_SLM_SECTION_REQUIRED) != 0, "blake3",
                     tl_cli_json_hex(s->digest, 32)));
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
                     "dtype", tl_slm_dtype_name(tl_slm_dtype_code(x.type, x.packed)),
                     "shape", shape, "offset", (json_int_t)(x.data - file),
                     "length", (json_int_t)x.len, "blake3",
                     tl_cli_json_hex(x.digest, 32)));
  }
  return a;
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

json_t *tl_slm_view_json(const tl_slm *slm, const tl_slm_tensors *tensors,
                         size_t file_len, const uint8_t id[32], bool verified,
                         tl_status *st) {
  char version[16];
  json_t *o;
  snprintf(version, sizeof version, "%u.%u", TL_SLM_VERSION_MAJOR,
           slm->version_minor);
  o = json_pack("{s:o,s:I,s:s,s:b,s:o,s:o}", "artifact_id", tl_cli_json_hex(id, 32),
                "file_bytes", (json_int_t)file_len, "version", version,
                "verified", verified, "sections", sections_json(slm),
                "tensors", tensors_json(tensors, slm->file));
  if (o == NULL) {
    *st = TL_ERR_OUT_OF_MEMORY;
    return NULL;
  }
  *st = read_metadata(slm, o);
  if (*st != TL_OK) {
    json_decref(o);
    return NULL;
  }
  return o;
}
