#include "slm/slm.h"

#include <string.h>

#include "bytes.h"
#include "cbor/cbor.h"
#include "checked.h"
#include "hash/blake3.h"

static tl_status fail(size_t *fail_offset, size_t at, tl_status st) {
  if (fail_offset != NULL) *fail_offset = at;
  return st;
}

static bool all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != 0) return false;
  return true;
}

static bool known_kind(uint32_t kind) {
  return kind >= TL_SLM_METADATA && kind <= TL_SLM_TENSOR_DATA;
}

tl_status tl_slm_header_digest(const uint8_t *file, size_t table_end,
                                uint8_t digest[32]) {
  tl_blake3_hasher h;
  tl_status st;
  if (file == NULL || digest == NULL || table_end < TL_SLM_HEADER_LEN)
    return TL_ERR_INVALID_ARGUMENT;
  tl_blake3_hasher_init(&h);
  st = tl_blake3_hasher_update(&h, file, 32);
  if (st == TL_OK)
    st = tl_blake3_hasher_update(&h, file + TL_SLM_HEADER_LEN,
                                 table_end - TL_SLM_HEADER_LEN);
  if (st == TL_OK) st = tl_blake3_hasher_finalize(&h, digest, 32);
  return st;
}

tl_status tl_slm_verify_section(const tl_slm_section *section) {
  uint8_t digest[32];
  tl_status st;
  if (section == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = tl_blake3(section->data, section->len, digest);
  if (st != TL_OK) return st;
  return memcmp(digest, section->digest, 32) == 0 ? TL_OK
                                                  : TL_ERR_HASH_MISMATCH;
}

/* One section-table entry at file offset at; prev_end is where the
 * previous section (or the table) ended. */
static tl_status read_entry(tl_slm *slm, size_t at, size_t *prev_end,
                            size_t *fail_offset) {
  const uint8_t *e = slm->file + at;
  tl_slm_section *s = &slm->sections[slm->n_sections];
  uint64_t off64 = tl_load_le64(e + 8), len64 = tl_load_le64(e + 16);
  size_t off, len, end;
  s->kind = tl_load_le32(e);
  s->flags = tl_load_le32(e + 4);
  if ((s->flags & ~TL_SLM_SECTION_REQUIRED) != 0 || !all_zero(e + 56, 8))
    return fail(fail_offset, at + 4, TL_ERR_INVALID_MODEL);
  if (!known_kind(s->kind)) {
    if (s->flags & TL_SLM_SECTION_REQUIRED)
      return fail(fail_offset, at, TL_ERR_UNSUPPORTED_ABI);
  }
  for (size_t i = 0; i < slm->n_sections; i++)
    if (slm->sections[i].kind == s->kind)
      return fail(fail_offset, at, TL_ERR_INVALID_MODEL); /* duplicate */
  if (tl_u64_to_size(off64, &off) != TL_OK ||
      tl_u64_to_size(len64, &len) != TL_OK ||
      tl_add_size(off, len, &end) != TL_OK || end > slm->len)
    return fail(fail_offset, at + 8, TL_ERR_INVALID_MODEL);
  /* Each section starts where the previous one (or the table) ended,
   * rounded up to 64, after zero padding: the bytes of a valid file are
   * canonical (SLM-4). */
  {
    size_t start;
    if (tl_align_up(*prev_end, TL_SLM_ALIGN, &start) != TL_OK || off != start ||
        !all_zero(slm->file + *prev_end, off - *prev_end))
      return fail(fail_offset, at + 8, TL_ERR_INVALID_MODEL);
  }
  s->data = slm->file + off;
  s->len = len;
  memcpy(s->digest, e + 24, 32);
  *prev_end = end;
  slm->n_sections++;
  return TL_OK;
}

tl_status tl_slm_open(tl_slm *slm, const uint8_t *file, size_t len,
                      tl_slm_verify verify, size_t *fail_offset) {
  uint32_t n, table_off;
  size_t table_len, table_end, prev_end;
  tl_status st;
  if (slm == NULL || (file == NULL && len != 0) ||
      (verify != TL_SLM_VERIFY_EAGER && verify != TL_SLM_VERIFY_LAZY))
    return TL_ERR_INVALID_ARGUMENT;
  memset(slm, 0, sizeof *slm);
  if (len < TL_SLM_HEADER_LEN)
    return fail(fail_offset, 0, TL_ERR_INVALID_MODEL);
  if (memcmp(file, TL_SLM_MAGIC, 8) != 0)
    return fail(fail_offset, 0, TL_ERR_INVALID_MODEL);
  if (tl_load_le16(file + 8) != TL_SLM_VERSION_MAJOR)
    return fail(fail_offset, 8, TL_ERR_UNSUPPORTED_ABI);
  if (tl_load_le32(file + 12) != TL_SLM_HEADER_LEN)
    return fail(fail_offset, 12, TL_ERR_INVALID_MODEL);
  if (tl_load_le64(file + 16) != (uint64_t)len)
    return fail(fail_offset, 16, TL_ERR_INVALID_MODEL);
  n = tl_load_le32(file + 24);
  table_off = tl_load_le32(file + 28);
  if (n == 0 || n > TL_SLM_MAX_SECTIONS)
    return fail(fail_offset, 24, TL_ERR_INVALID_MODEL);
  if (table_off != TL_SLM_HEADER_LEN)
    return fail(fail_offset, 28, TL_ERR_INVALID_MODEL);
  table_len = (size_t)n * TL_SLM_ENTRY_LEN;
  if (tl_add_size(table_off, table_len, &table_end) != TL_OK || table_end > len)
    return fail(fail_offset, 24, TL_ERR_INVALID_MODEL);
  /* The header digest covers every byte that is not inside a section, so
   * no field (the minor version and section flags included) can change
   * unnoticed. */
  {
    uint8_t digest[32];
    st = tl_slm_header_digest(file, table_end, digest);
    if (st != TL_OK) return st;
    if (memcmp(digest, file + 32, 32) != 0)
      return fail(fail_offset, 32, TL_ERR_HASH_MISMATCH);
  }
  slm->file = file;
  slm->len = len;
  slm->version_minor = tl_load_le16(file + 10);
  prev_end = table_end;
  for (uint32_t i = 0; i < n; i++) {
    st = read_entry(slm, table_off + (size_t)i * TL_SLM_ENTRY_LEN, &prev_end,
                    fail_offset);
    if (st != TL_OK) return st;
  }
  if (prev_end != len) /* nothing may follow the last section */
    return fail(fail_offset, prev_end, TL_ERR_INVALID_MODEL);
  if (verify == TL_SLM_VERIFY_EAGER) {
    for (size_t i = 0; i < slm->n_sections; i++) {
      st = tl_slm_verify_section(&slm->sections[i]);
      if (st != TL_OK)
        return fail(fail_offset, (size_t)(slm->sections[i].data - file), st);
    }
  }
  return TL_OK;
}

tl_status tl_slm_declared_len(const uint8_t *file, size_t len,
                              uint64_t *declared) {
  if (file == NULL || declared == NULL || len < 24 ||
      memcmp(file, TL_SLM_MAGIC, 8) != 0 ||
      tl_load_le32(file + 12) != TL_SLM_HEADER_LEN)
    return TL_ERR_INVALID_MODEL;
  *declared = tl_load_le64(file + 16);
  return TL_OK;
}

tl_status tl_slm_find(const tl_slm *slm, tl_slm_kind kind,
                      const tl_slm_section **out) {
  if (slm == NULL || out == NULL) return TL_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < slm->n_sections; i++) {
    if (slm->sections[i].kind == (uint32_t)kind) {
      *out = &slm->sections[i];
      return TL_OK;
    }
  }
  return TL_ERR_INVALID_MODEL;
}

tl_status tl_slm_artifact(const tl_slm *slm, tl_slm_artifact_kind *kind) {
  static const tl_slm_kind model_sections[] = {
      TL_SLM_TOKENIZER, TL_SLM_TEMPLATE, TL_SLM_TENSOR_DIR, TL_SLM_TENSOR_DATA};
  const tl_slm_section *meta, *unused;
  tl_cbor_reader r;
  size_t n_pairs;
  bool format_ok = false;
  int found = 0;
  if (slm == NULL || kind == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (tl_slm_find(slm, TL_SLM_METADATA, &meta) != TL_OK ||
      tl_cbor_validate(meta->data, meta->len, NULL, NULL) != TL_OK ||
      tl_cbor_reader_init(&r, meta->data, meta->len, NULL) != TL_OK ||
      tl_cbor_expect_map(&r, &n_pairs) != TL_OK)
    return TL_ERR_INVALID_MODEL;
  for (size_t i = 0; i < n_pairs; i++) {
    const char *key, *value;
    size_t key_len, value_len;
    if (tl_cbor_expect_text(&r, &key, &key_len) != TL_OK)
      return TL_ERR_INVALID_MODEL;
    if (tl_cbor_text_is(key, key_len, "format")) {
      if (tl_cbor_expect_text(&r, &value, &value_len) != TL_OK)
        return TL_ERR_INVALID_MODEL;
      format_ok = tl_cbor_text_is(value, value_len, "tinylm.slm");
    } else if (tl_cbor_text_is(key, key_len, "artifact_kind")) {
      if (tl_cbor_expect_text(&r, &value, &value_len) != TL_OK)
        return TL_ERR_INVALID_MODEL;
      found = tl_cbor_text_is(value, value_len, "model")            ? 2
              : tl_cbor_text_is(value, value_len, "tokenizer-only") ? 1
                                                            : -1;
    } else if (tl_cbor_skip(&r) != TL_OK) {
      return TL_ERR_INVALID_MODEL;
    }
  }
  if (!format_ok || found <= 0) return TL_ERR_INVALID_MODEL;
  /* A tokenizer-only artifact needs the first two of these; a model all. */
  for (size_t i = 0; i < (found == 2 ? 4u : 2u); i++)
    if (tl_slm_find(slm, model_sections[i], &unused) != TL_OK)
      return TL_ERR_INVALID_MODEL;
  *kind = (tl_slm_artifact_kind)found;
  return TL_OK;
}
