#define _POSIX_C_SOURCE 200809L
#include "slm_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "checked.h"
#include "hash/sha256.h"

tl_status tl_slm_writer_begin(tl_slm_writer *w, const char *path,
                              const tl_slm_part *parts, size_t n, char *err,
                              size_t err_cap) {
  size_t total = TL_SLM_HEADER_LEN + n * TL_SLM_ENTRY_LEN;
  memset(w, 0, sizeof *w);
  w->file.fd = -1;
  if (n == 0 || n > TL_SLM_MAX_SECTIONS) {
    snprintf(err, err_cap, "%s: %zu sections (1..%d allowed)", path, n,
             TL_SLM_MAX_SECTIONS);
    return TL_ERR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < n; i++) {
    tl_slm_writer_section *s = &w->sections[i];
    if (tl_align_up(total, TL_SLM_ALIGN, &total) != TL_OK) goto too_large;
    s->kind = parts[i].kind;
    s->flags = parts[i].flags;
    s->offset = total;
    s->len = parts[i].len;
    tl_blake3_hasher_init(&s->hasher);
    if (tl_add_size(total, parts[i].len, &total) != TL_OK) goto too_large;
  }
  w->n = n;
  w->file_len = total;
  return tl_file_atomic_begin(&w->file, path, err, err_cap);
too_large:
  snprintf(err, err_cap, "%s: sections too large", path);
  return TL_ERR_INTEGER_OVERFLOW;
}

tl_status tl_slm_writer_append(tl_slm_writer *w, size_t i, const void *data,
                               size_t len, char *err, size_t err_cap) {
  tl_slm_writer_section *s;
  tl_status st;
  if (i >= w->n) return TL_ERR_INVALID_ARGUMENT;
  s = &w->sections[i];
  if (len > s->len - s->written) {
    snprintf(err, err_cap, "%s: section %zu would exceed its %llu bytes",
             w->file.path, i, (unsigned long long)s->len);
    return TL_ERR_BOUNDS;
  }
  st = tl_blake3_hasher_update(&s->hasher, data, len);
  if (st != TL_OK) return st;
  st = tl_file_atomic_pwrite(&w->file, s->offset + s->written, data, len, err,
                             err_cap);
  if (st == TL_OK) s->written += len;
  return st;
}

/* SHA-256 of the finished temporary file, read back in pieces (the header
 * is written last, so the id cannot be computed while streaming). */
static tl_status hash_file(tl_slm_writer *w, uint8_t id[32], char *err,
                           size_t err_cap) {
  enum { CHUNK = 1 << 20 };
  uint8_t *buf = malloc(CHUNK);
  tl_sha256_ctx ctx;
  uint64_t off = 0;
  if (buf == NULL) {
    snprintf(err, err_cap, "%s: out of memory", w->file.path);
    return TL_ERR_OUT_OF_MEMORY;
  }
  tl_sha256_init(&ctx);
  while (off < w->file_len) {
    ssize_t got = pread(w->file.fd, buf, CHUNK, (off_t)off);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      snprintf(err, err_cap, "%s: reading back failed: %s", w->file.path,
               got < 0 ? strerror(errno) : "short file");
      free(buf);
      return TL_ERR_IO;
    }
    tl_sha256_update(&ctx, buf, (size_t)got);
    off += (uint64_t)got;
  }
  tl_sha256_final(&ctx, id);
  free(buf);
  return TL_OK;
}

tl_status tl_slm_writer_finish(tl_slm_writer *w, uint8_t artifact_id[32],
                               char *err, size_t err_cap) {
  size_t table_end = TL_SLM_HEADER_LEN + w->n * TL_SLM_ENTRY_LEN;
  uint8_t head[TL_SLM_HEADER_LEN + TL_SLM_MAX_SECTIONS * TL_SLM_ENTRY_LEN];
  tl_status st;
  memset(head, 0, sizeof head);
  memcpy(head, TL_SLM_MAGIC, 8);
  tl_store_le16(head + 8, TL_SLM_VERSION_MAJOR);
  tl_store_le16(head + 10, TL_SLM_VERSION_MINOR);
  tl_store_le32(head + 12, TL_SLM_HEADER_LEN);
  tl_store_le64(head + 16, w->file_len);
  tl_store_le32(head + 24, (uint32_t)w->n);
  tl_store_le32(head + 28, TL_SLM_HEADER_LEN);
  for (size_t i = 0; i < w->n; i++) {
    tl_slm_writer_section *s = &w->sections[i];
    uint8_t *e = head + TL_SLM_HEADER_LEN + i * TL_SLM_ENTRY_LEN;
    if (s->written != s->len) {
      snprintf(err, err_cap, "%s: section %zu has %llu of %llu bytes",
               w->file.path, i, (unsigned long long)s->written,
               (unsigned long long)s->len);
      tl_slm_writer_abort(w);
      return TL_ERR_INTERNAL_INVARIANT;
    }
    tl_store_le32(e, (uint32_t)s->kind);
    tl_store_le32(e + 4, s->flags);
    tl_store_le64(e + 8, s->offset);
    tl_store_le64(e + 16, s->len);
    st = tl_blake3_hasher_finalize(&s->hasher, e + 24, 32);
    if (st != TL_OK) goto fail;
  }
  st = tl_slm_header_digest(head, table_end, head + 32);
  if (st != TL_OK) goto fail;
  /* The padding after the last section's predecessor is never written:
   * extending the file to its length makes every gap read as zeros. */
  if (ftruncate(w->file.fd, (off_t)w->file_len) != 0) {
    snprintf(err, err_cap, "%s: cannot size the file: %s", w->file.path,
             strerror(errno));
    st = TL_ERR_IO;
    goto fail;
  }
  st = tl_file_atomic_pwrite(&w->file, 0, head, table_end, err, err_cap);
  if (st == TL_OK) st = hash_file(w, artifact_id, err, err_cap);
  if (st != TL_OK) goto fail;
  return tl_file_atomic_commit(&w->file, err, err_cap);
fail:
  if (st != TL_ERR_IO && st != TL_ERR_OUT_OF_MEMORY)
    snprintf(err, err_cap, "%s: hashing failed (%s)", w->file.path,
             tl_status_name(st));
  tl_slm_writer_abort(w);
  return st;
}

void tl_slm_writer_abort(tl_slm_writer *w) { tl_file_atomic_abort(&w->file); }

tl_status tl_slm_write(const char *path, const tl_slm_part *parts, size_t n,
                       uint8_t artifact_id[32], char *err, size_t err_cap) {
  tl_slm_writer w;
  tl_status st = tl_slm_writer_begin(&w, path, parts, n, err, err_cap);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < n && st == TL_OK; i++)
    st = tl_slm_writer_append(&w, i, parts[i].data, parts[i].len, err,
                              err_cap);
  if (st != TL_OK) {
    tl_slm_writer_abort(&w);
    return st;
  }
  return tl_slm_writer_finish(&w, artifact_id, err, err_cap);
}
