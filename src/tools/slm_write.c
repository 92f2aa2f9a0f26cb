#include "slm_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "checked.h"
#include "file.h"
#include "hash/blake3.h"
#include "hash/sha256.h"

tl_status tl_slm_write(const char *path, const tl_slm_part *parts, size_t n,
                       uint8_t artifact_id[32], char *err, size_t err_cap) {
  size_t total = TL_SLM_HEADER_LEN + n * TL_SLM_ENTRY_LEN, off;
  uint8_t *file;
  tl_status st = TL_OK;
  if (n == 0 || n > TL_SLM_MAX_SECTIONS) {
    snprintf(err, err_cap, "%s: %zu sections (1..%d allowed)", path, n,
             TL_SLM_MAX_SECTIONS);
    return TL_ERR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < n; i++) {
    if (tl_align_up(total, TL_SLM_ALIGN, &total) != TL_OK ||
        tl_add_size(total, parts[i].len, &total) != TL_OK) {
      snprintf(err, err_cap, "%s: sections too large", path);
      return TL_ERR_INTEGER_OVERFLOW;
    }
  }
  file = calloc(1, total);
  if (file == NULL) {
    snprintf(err, err_cap, "%s: out of memory for %zu bytes", path, total);
    return TL_ERR_OUT_OF_MEMORY;
  }
  memcpy(file, TL_SLM_MAGIC, 8);
  file[8] = TL_SLM_VERSION_MAJOR;
  file[10] = TL_SLM_VERSION_MINOR;
  tl_store_le32(file + 12, TL_SLM_HEADER_LEN);
  tl_store_le64(file + 16, total);
  tl_store_le32(file + 24, (uint32_t)n);
  tl_store_le32(file + 28, TL_SLM_HEADER_LEN);
  off = TL_SLM_HEADER_LEN + n * TL_SLM_ENTRY_LEN;
  for (size_t i = 0; i < n; i++) {
    uint8_t *e = file + TL_SLM_HEADER_LEN + i * TL_SLM_ENTRY_LEN;
    (void)tl_align_up(off, TL_SLM_ALIGN, &off); /* checked above */
    tl_store_le32(e, (uint32_t)parts[i].kind);
    tl_store_le32(e + 4, parts[i].flags);
    tl_store_le64(e + 8, off);
    tl_store_le64(e + 16, parts[i].len);
    st = tl_blake3(parts[i].data, parts[i].len, e + 24);
    if (st != TL_OK) break;
    if (parts[i].len != 0) memcpy(file + off, parts[i].data, parts[i].len);
    off += parts[i].len;
  }
  if (st == TL_OK)
    st = tl_slm_header_digest(file, TL_SLM_HEADER_LEN + n * TL_SLM_ENTRY_LEN,
                              file + 32);
  if (st == TL_OK) st = tl_sha256(file, total, artifact_id);
  if (st == TL_OK)
    st = tl_file_write_atomic(path, file, total, err, err_cap);
  else
    snprintf(err, err_cap, "%s: hashing failed", path);
  free(file);
  return st;
}
