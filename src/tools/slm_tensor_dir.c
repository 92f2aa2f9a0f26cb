#include "slm_tensor_dir.h"

#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "checked.h"

static int name_ok(const char *s) {
  size_t len = strlen(s);
  if (len == 0 || len > TL_SLM_TD_MAX_NAME) return 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

tl_status tl_td_layout(tl_td_entry *entries, size_t n, uint64_t *data_len,
                       char *err, size_t err_cap) {
  size_t end = 0;
  if (n == 0 || n > TL_SLM_TD_MAX_TENSORS) {
    snprintf(err, err_cap, "%zu tensors (1..%d allowed)", n,
             TL_SLM_TD_MAX_TENSORS);
    return TL_ERR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < n; i++) {
    tl_td_entry *e = &entries[i];
    size_t rows = 1, bytes, start;
    if (!name_ok(e->name) ||
        (i > 0 && strcmp(entries[i - 1].name, e->name) >= 0)) {
      snprintf(err, err_cap,
               "tensor '%s': names must be 1..255 bytes of [A-Za-z0-9._-] "
               "in strictly ascending order",
               e->name);
      return TL_ERR_INVALID_ARGUMENT;
    }
    if (e->rank == 0 || e->rank > TL_SLM_TD_MAX_RANK) {
      snprintf(err, err_cap, "tensor '%s': rank %u (1..4 allowed)", e->name,
               e->rank);
      return TL_ERR_INVALID_ARGUMENT;
    }
    for (uint32_t d = 0; d < TL_SLM_TD_MAX_RANK; d++) {
      size_t dim;
      if ((d < e->rank) != (e->shape[d] != 0)) {
        snprintf(err, err_cap, "tensor '%s': dims must be >= 1", e->name);
        return TL_ERR_INVALID_ARGUMENT;
      }
      if (d + 1 >= e->rank) continue;
      if (tl_u64_to_size(e->shape[d], &dim) != TL_OK ||
          tl_mul_size(rows, dim, &rows) != TL_OK)
        goto overflow;
    }
    if (tl_u64_to_size(e->shape[e->rank - 1], &e->n) != TL_OK ||
        tl_quant_tensor_bytes(e->type, rows, e->n, &bytes) != TL_OK ||
        tl_align_up(end, TL_SLM_ALIGN, &start) != TL_OK ||
        tl_add_size(start, bytes, &end) != TL_OK)
      goto overflow;
    e->rows = rows;
    e->offset = start;
    e->len = bytes;
    continue;
  overflow:
    snprintf(err, err_cap, "tensor '%s': size overflows", e->name);
    return TL_ERR_INTEGER_OVERFLOW;
  }
  *data_len = end;
  return TL_OK;
}

size_t tl_td_encoded_len(const tl_td_entry *entries, size_t n) {
  size_t len = TL_SLM_TD_HEADER_LEN + n * TL_SLM_TD_ENTRY_LEN;
  for (size_t i = 0; i < n; i++) len += strlen(entries[i].name);
  return len;
}

void tl_td_encode(const tl_td_entry *entries, size_t n, uint8_t *out) {
  size_t names_off = TL_SLM_TD_HEADER_LEN + n * TL_SLM_TD_ENTRY_LEN;
  size_t names_len = tl_td_encoded_len(entries, n) - names_off, name_at = 0;
  memset(out, 0, names_off);
  memcpy(out, TL_SLM_TD_MAGIC, 4);
  tl_store_le32(out + 4, TL_SLM_TD_VERSION);
  tl_store_le32(out + 8, (uint32_t)n);
  tl_store_le32(out + 12, TL_SLM_TD_ENTRY_LEN);
  tl_store_le64(out + 16, names_off);
  tl_store_le64(out + 24, names_len);
  for (size_t i = 0; i < n; i++) {
    const tl_td_entry *e = &entries[i];
    uint8_t *p = out + TL_SLM_TD_HEADER_LEN + i * TL_SLM_TD_ENTRY_LEN;
    size_t len = strlen(e->name);
    tl_store_le32(p, (uint32_t)name_at);
    tl_store_le32(p + 4, (uint32_t)len);
    tl_store_le32(p + 8, tl_slm_dtype_code(e->type, e->packed));
    tl_store_le32(p + 12, e->rank);
    for (size_t d = 0; d < TL_SLM_TD_MAX_RANK; d++)
      tl_store_le64(p + 16 + 8 * d, e->shape[d]);
    tl_store_le64(p + 48, e->offset);
    tl_store_le64(p + 56, e->len);
    memcpy(p + 64, e->digest, 32);
    memcpy(out + names_off + name_at, e->name, len);
    name_at += len;
  }
}
