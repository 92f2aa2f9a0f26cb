#include "slm/tensors.h"

#include <string.h>

#include "bytes.h"
#include "checked.h"
#include "hash/blake3.h"

static const struct {
  uint32_t code;
  tl_qtype type;
  bool packed;
  const char *name;
} dtypes[] = {
    {TL_SLM_DTYPE_F32, TL_QTYPE_F32, false, "f32"},
    {TL_SLM_DTYPE_F16, TL_QTYPE_F16, false, "f16"},
    {TL_SLM_DTYPE_BF16, TL_QTYPE_BF16, false, "bf16"},
    {TL_SLM_DTYPE_Q8, TL_QTYPE_Q8, false, "q8"},
    {TL_SLM_DTYPE_Q4, TL_QTYPE_Q4, false, "q4"},
    {TL_SLM_DTYPE_Q8P, TL_QTYPE_Q8, true, "q8p"},
    {TL_SLM_DTYPE_Q4P, TL_QTYPE_Q4, true, "q4p"},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

const char *tl_slm_dtype_name(uint32_t code) {
  for (size_t i = 0; i < N_DTYPES; i++)
    if (dtypes[i].code == code) return dtypes[i].name;
  return NULL;
}

bool tl_slm_dtype_qtype(uint32_t code, tl_qtype *out, bool *packed) {
  for (size_t i = 0; i < N_DTYPES; i++) {
    if (dtypes[i].code == code) {
      *out = dtypes[i].type;
      if (packed != NULL) *packed = dtypes[i].packed;
      return true;
    }
  }
  return false;
}

uint32_t tl_slm_dtype_code(tl_qtype type, bool packed) {
  for (size_t i = 0; i < N_DTYPES; i++)
    if (dtypes[i].type == type && dtypes[i].packed == packed) return dtypes[i].code;
  return 0;
}

static tl_status fail(size_t *fail_offset, size_t at, tl_status st) {
  if (fail_offset != NULL) *fail_offset = at;
  return st;
}

static bool name_byte_ok(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* Bytewise order of two names (shorter prefix first). */
static int name_cmp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
  int c = memcmp(a, b, na < nb ? na : nb);
  if (c != 0) return c;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/* Decodes entry i without validation (tl_slm_tensors_open has checked it,
 * except while it is checking it). */
static void decode(const tl_slm_tensors *t, size_t i, tl_slm_tensor *out) {
  const uint8_t *e = t->dir + TL_SLM_TD_HEADER_LEN + i * TL_SLM_TD_ENTRY_LEN;
  memset(out, 0, sizeof *out);
  out->name = (const char *)t->names + tl_load_le32(e);
  out->name_len = tl_load_le32(e + 4);
  (void)tl_slm_dtype_qtype(tl_load_le32(e + 8), &out->type, &out->packed);
  out->rank = tl_load_le32(e + 12);
  for (size_t d = 0; d < TL_SLM_TD_MAX_RANK; d++)
    out->shape[d] = tl_load_le64(e + 16 + 8 * d);
  out->data = t->data + (size_t)tl_load_le64(e + 48);
  out->len = (size_t)tl_load_le64(e + 56);
  out->digest = e + 64;
}

/* SLM-11: rows x n from the shape, and the exact byte length. */
static tl_status shape_bytes(const uint8_t *e, tl_qtype type, size_t *rows,
                             size_t *n, size_t *bytes) {
  uint32_t rank = tl_load_le32(e + 12);
  size_t r = 1, dim;
  for (uint32_t d = 0; d < TL_SLM_TD_MAX_RANK; d++) {
    uint64_t v = tl_load_le64(e + 16 + 8 * d);
    if ((d < rank) != (v != 0)) return TL_ERR_INVALID_MODEL;
  }
  for (uint32_t d = 0; d + 1 < rank; d++) {
    if (tl_u64_to_size(tl_load_le64(e + 16 + 8 * d), &dim) != TL_OK ||
        tl_mul_size(r, dim, &r) != TL_OK)
      return TL_ERR_INTEGER_OVERFLOW;
  }
  if (tl_u64_to_size(tl_load_le64(e + 16 + 8 * (rank - 1)), &dim) != TL_OK)
    return TL_ERR_INTEGER_OVERFLOW;
  *rows = r;
  *n = dim;
  return tl_quant_tensor_bytes(type, r, dim, bytes);
}

/* Entry i: every field except the digest and the name's bytes (checked
 * once the names area is known to be covered exactly). */
static tl_status check_entry(const tl_slm_tensors *t, const tl_slm *slm,
                             size_t i, size_t *name_end, size_t *data_end,
                             size_t *fail_offset) {
  const uint8_t *e = t->dir + TL_SLM_TD_HEADER_LEN + i * TL_SLM_TD_ENTRY_LEN;
  size_t at = (size_t)(e - slm->file);
  uint32_t name_off = tl_load_le32(e), name_len = tl_load_le32(e + 4);
  uint32_t code = tl_load_le32(e + 8), rank = tl_load_le32(e + 12);
  uint64_t off64 = tl_load_le64(e + 48), len64 = tl_load_le64(e + 56);
  size_t rows, n, bytes, start;
  tl_qtype type;
  tl_status st;
  if (name_off != *name_end || name_len == 0 ||
      name_len > TL_SLM_TD_MAX_NAME)
    return fail(fail_offset, at, TL_ERR_INVALID_MODEL);
  if (!tl_slm_dtype_qtype(code, &type, NULL))
    return fail(fail_offset, at + 8, TL_ERR_INVALID_MODEL);
  if (rank == 0 || rank > TL_SLM_TD_MAX_RANK)
    return fail(fail_offset, at + 12, TL_ERR_INVALID_MODEL);
  st = shape_bytes(e, type, &rows, &n, &bytes);
  if (st != TL_OK) return fail(fail_offset, at + 16, st);
  /* SLM-12: each tensor starts at the previous end rounded up to 64. */
  if (tl_align_up(*data_end, TL_SLM_ALIGN, &start) != TL_OK ||
      off64 != (uint64_t)start)
    return fail(fail_offset, at + 48, TL_ERR_INVALID_MODEL);
  if (len64 != (uint64_t)bytes || start > t->data_len ||
      bytes > t->data_len - start)
    return fail(fail_offset, at + 56, TL_ERR_INVALID_MODEL);
  for (size_t p = *data_end; p < start; p++)
    if (t->data[p] != 0)
      return fail(fail_offset, (size_t)(t->data + p - slm->file),
                  TL_ERR_INVALID_MODEL);
  *name_end = (size_t)name_off + name_len;
  *data_end = start + bytes;
  return TL_OK;
}

tl_status tl_slm_tensors_open(tl_slm_tensors *t, const tl_slm *slm,
                              tl_slm_verify verify, size_t *fail_offset) {
  const tl_slm_section *dir, *data;
  uint64_t names_off64, names_len64;
  size_t n, names_len, entries_end, dir_at, name_end = 0, data_end = 0;
  tl_status st;
  if (t == NULL || slm == NULL ||
      (verify != TL_SLM_VERIFY_EAGER && verify != TL_SLM_VERIFY_LAZY))
    return TL_ERR_INVALID_ARGUMENT;
  memset(t, 0, sizeof *t);
  if (tl_slm_find(slm, TL_SLM_TENSOR_DIR, &dir) != TL_OK ||
      tl_slm_find(slm, TL_SLM_TENSOR_DATA, &data) != TL_OK)
    return fail(fail_offset, 24, TL_ERR_INVALID_MODEL);
  dir_at = (size_t)(dir->data - slm->file);
  if (dir->len < TL_SLM_TD_HEADER_LEN ||
      memcmp(dir->data, TL_SLM_TD_MAGIC, 4) != 0)
    return fail(fail_offset, dir_at, TL_ERR_INVALID_MODEL);
  if (tl_load_le32(dir->data + 4) != TL_SLM_TD_VERSION)
    return fail(fail_offset, dir_at + 4, TL_ERR_UNSUPPORTED_ABI);
  n = tl_load_le32(dir->data + 8);
  if (n == 0 || n > TL_SLM_TD_MAX_TENSORS)
    return fail(fail_offset, dir_at + 8, TL_ERR_INVALID_MODEL);
  if (tl_load_le32(dir->data + 12) != TL_SLM_TD_ENTRY_LEN)
    return fail(fail_offset, dir_at + 12, TL_ERR_INVALID_MODEL);
  /* n <= 65536, so the entries' extent cannot overflow. */
  entries_end = TL_SLM_TD_HEADER_LEN + n * TL_SLM_TD_ENTRY_LEN;
  names_off64 = tl_load_le64(dir->data + 16);
  names_len64 = tl_load_le64(dir->data + 24);
  if (names_off64 != (uint64_t)entries_end || entries_end > dir->len)
    return fail(fail_offset, dir_at + 16, TL_ERR_INVALID_MODEL);
  names_len = dir->len - entries_end;
  if (names_len64 != (uint64_t)names_len)
    return fail(fail_offset, dir_at + 24, TL_ERR_INVALID_MODEL);
  t->dir = dir->data;
  t->n = n;
  t->names = dir->data + entries_end;
  t->data = data->data;
  t->data_len = data->len;
  for (size_t i = 0; i < n; i++) {
    st = check_entry(t, slm, i, &name_end, &data_end, fail_offset);
    if (st != TL_OK) goto refuse;
  }
  st = TL_ERR_INVALID_MODEL;
  if (name_end != names_len) {
    if (fail_offset != NULL) *fail_offset = dir_at + 24;
    goto refuse;
  }
  if (data_end != data->len) {
    if (fail_offset != NULL) *fail_offset = (size_t)(data->data - slm->file);
    goto refuse;
  }
  /* SLM-10 over the now bounded names: the byte set and strict order. */
  for (size_t i = 0; i < n; i++) {
    tl_slm_tensor cur, prev;
    decode(t, i, &cur);
    for (size_t k = 0; k < cur.name_len; k++) {
      if (!name_byte_ok((uint8_t)cur.name[k])) {
        if (fail_offset != NULL)
          *fail_offset = (size_t)((const uint8_t *)cur.name + k - slm->file);
        goto refuse;
      }
    }
    if (i > 0) {
      decode(t, i - 1, &prev);
      if (name_cmp((const uint8_t *)prev.name, prev.name_len,
                   (const uint8_t *)cur.name, cur.name_len) >= 0) {
        if (fail_offset != NULL)
          *fail_offset = dir_at + TL_SLM_TD_HEADER_LEN + i * TL_SLM_TD_ENTRY_LEN;
        goto refuse;
      }
    }
  }
  if (verify == TL_SLM_VERIFY_EAGER) {
    for (size_t i = 0; i < n; i++) {
      tl_slm_tensor cur;
      decode(t, i, &cur);
      st = tl_slm_tensor_verify(&cur);
      if (st != TL_OK) {
        if (fail_offset != NULL)
          *fail_offset = (size_t)(cur.data - slm->file);
        goto refuse;
      }
    }
  }
  return TL_OK;
refuse:
  memset(t, 0, sizeof *t);
  return st;
}

tl_status tl_slm_tensor_at(const tl_slm_tensors *t, size_t i,
                           tl_slm_tensor *out) {
  size_t bytes;
  if (t == NULL || out == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (i >= t->n) return TL_ERR_BOUNDS;
  decode(t, i, out);
  /* Validated at open: cannot fail here. */
  (void)shape_bytes(t->dir + TL_SLM_TD_HEADER_LEN + i * TL_SLM_TD_ENTRY_LEN,
                    out->type, &out->rows, &out->n, &bytes);
  return TL_OK;
}

tl_status tl_slm_tensor_find(const tl_slm_tensors *t, const char *name,
                             size_t len, tl_slm_tensor *out) {
  size_t lo = 0, hi;
  if (t == NULL || out == NULL || (name == NULL && len != 0))
    return TL_ERR_INVALID_ARGUMENT;
  hi = t->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    tl_slm_tensor cur;
    int c;
    decode(t, mid, &cur);
    c = name_cmp((const uint8_t *)cur.name, cur.name_len,
                 (const uint8_t *)name, len);
    if (c == 0) return tl_slm_tensor_at(t, mid, out);
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return TL_ERR_BOUNDS;
}

tl_status tl_slm_tensor_verify(const tl_slm_tensor *tensor) {
  uint8_t digest[32];
  tl_status st;
  if (tensor == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = tl_blake3(tensor->data, tensor->len, digest);
  if (st != TL_OK) return st;
  return memcmp(digest, tensor->digest, 32) == 0 ? TL_OK
                                                 : TL_ERR_HASH_MISMATCH;
}
