/* The evidence store (promote_store.h, docs/promotion.md §The evidence
 * store). Objects and receipts are published with link(): the name
 * appears whole or not at all and an existing name is never replaced, not
 * even by this process (tl_file_atomic_commit would rename over a file
 * this process wrote; the store must not). */
#define _POSIX_C_SOURCE 200809L
#include "promote_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"
#include "hash/sha256.h"
#include "promote_plan.h" /* tl_hex32_parse */
#include "tool_msg.h"

struct tl_store {
  char *dir;
};

/* dir, created 0700 when asked and absent; it must be a directory. */
static tl_status need_dir(const char *dir, bool create, char *err, size_t cap) {
  struct stat st;
  if (create && mkdir(dir, 0700) != 0 && errno != EEXIST)
    return tl_fail(err, cap, TL_ERR_IO, "%s: cannot create the directory: %s", dir,
                   strerror(errno));
  if (stat(dir, &st) != 0)
    return tl_fail(err, cap, TL_ERR_IO, "%s: %s%s", dir, strerror(errno),
                   create ? "" : " (not an evidence store; promote --store creates one)");
  if (!S_ISDIR(st.st_mode))
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT, "%s: not a directory", dir);
  return TL_OK;
}

tl_status tl_store_open(const char *dir, bool create, tl_store **out, char *err,
                        size_t err_cap) {
  tl_store *s;
  char sub[4096];
  tl_status st;
  *out = NULL;
  if (dir == NULL || dir[0] == '\0')
    return tl_fail(err, err_cap, TL_ERR_INVALID_ARGUMENT, "the store directory is empty");
  if (strlen(dir) > sizeof sub - 128)
    return tl_fail(err, err_cap, TL_ERR_INVALID_ARGUMENT, "%.64s...: path too long", dir);
  if ((st = need_dir(dir, create, err, err_cap)) != TL_OK) return st;
  snprintf(sub, sizeof sub, "%s/objects", dir);
  if ((st = need_dir(sub, create, err, err_cap)) != TL_OK) return st;
  snprintf(sub, sizeof sub, "%s/receipts", dir);
  if ((st = need_dir(sub, create, err, err_cap)) != TL_OK) return st;
  s = calloc(1, sizeof *s);
  if (s == NULL || (s->dir = strdup(dir)) == NULL) {
    free(s);
    return tl_fail(err, err_cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
  }
  *out = s;
  return TL_OK;
}

void tl_store_close(tl_store *s) {
  if (s == NULL) return;
  free(s->dir);
  free(s);
}

const char *tl_store_dir(const tl_store *s) { return s->dir; }

/* STORE/objects/HEX or STORE/receipts/HEX.cbor. */
static void entry_path(const tl_store *s, bool receipt, const uint8_t id[32],
                       char out[4200]) {
  char hex[65];
  tl_hex_encode(id, 32, hex);
  snprintf(out, 4200, "%s/%s/%s%s", s->dir, receipt ? "receipts" : "objects", hex,
           receipt ? ".cbor" : "");
}

/* The whole file at path (malloc'd; a zero-length file gets a 1-byte
 * buffer so that *bytes is never NULL). TL_ERR_NOT_FOUND when absent. */
static tl_status read_all(const char *path, uint8_t **bytes, size_t *len, char *err,
                          size_t cap) {
  tl_file_view v;
  struct stat st;
  tl_status rc;
  *bytes = NULL;
  *len = 0;
  if (lstat(path, &st) != 0 && errno == ENOENT)
    return tl_fail(err, cap, TL_ERR_NOT_FOUND, "%s: not in the store", path);
  if ((rc = tl_file_open_regular(path, &v, err, cap)) != TL_OK) return rc;
  *bytes = malloc(v.len > 0 ? v.len : 1);
  if (*bytes == NULL) {
    tl_file_close_view(&v);
    return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  memcpy(*bytes, v.data, v.len);
  *len = v.len;
  tl_file_close_view(&v);
  return TL_OK;
}

/* One line at the end of index.jsonl, in one write on an O_APPEND
 * descriptor (writers racing interleave whole lines). */
static tl_status index_line(tl_store *s, const char *kind, const char *what,
                            const uint8_t id[32], size_t len, char *err, size_t cap) {
  char path[4200], hex[65], *text;
  json_t *line;
  int fd;
  size_t n, done = 0;
  tl_status st = TL_OK;
  tl_hex_encode(id, 32, hex);
  line = json_pack("{s:s,s:s,s:s,s:I}", "kind", kind, "what", what, "id", hex, "size",
                   (json_int_t)len);
  text = line != NULL ? json_dumps(line, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(line);
  if (text == NULL) return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "index line: out of memory");
  n = strlen(text);
  text[n++] = '\n'; /* json_dumps's NUL becomes the newline */
  snprintf(path, sizeof path, "%s/index.jsonl", s->dir);
  fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  while (fd >= 0 && done < n) {
    ssize_t k = write(fd, text + done, n - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    done += (size_t)k;
  }
  if (fd < 0 || done < n || fsync(fd) != 0)
    st = tl_fail(err, cap, TL_ERR_IO, "%s: cannot append: %s", path, strerror(errno));
  if (fd >= 0) close(fd);
  free(text);
  return st;
}

/* An existing entry: the same bytes (nothing to do) or a damaged store. */
static tl_status same_bytes(const char *path, const uint8_t *bytes, size_t len,
                            char *err, size_t cap) {
  uint8_t *have;
  size_t have_len;
  tl_status st = read_all(path, &have, &have_len, err, cap);
  if (st != TL_OK) return st;
  if (have_len != len || memcmp(have, bytes, len) != 0)
    st = tl_fail(err, cap, TL_ERR_HASH_MISMATCH,
                 "%s exists with other bytes: the store is damaged (an entry is never "
                 "rewritten)",
                 path);
  free(have);
  return st;
}

/* Publishes bytes at path unless it exists; *wrote says whether it did. */
static tl_status publish(const char *path, const uint8_t *bytes, size_t len,
                         bool *wrote, char *err, size_t cap) {
  tl_file_atomic f;
  struct stat st;
  tl_status rc;
  *wrote = false;
  if (lstat(path, &st) == 0) return same_bytes(path, bytes, len, err, cap);
  /* A temporary file beside it (removed on an error or a fatal signal),
   * made read-only and durable, then linked under its name: link() fails
   * with EEXIST when another writer got there first. */
  if ((rc = tl_file_atomic_begin(&f, path, err, cap)) != TL_OK) return rc;
  rc = tl_file_atomic_pwrite(&f, 0, bytes, len, err, cap);
  if (rc == TL_OK && (fchmod(f.fd, 0400) != 0 || fsync(f.fd) != 0))
    rc = tl_fail(err, cap, TL_ERR_IO, "%s: write failed: %s", path, strerror(errno));
  if (rc == TL_OK && link(f.tmp, path) != 0) {
    if (errno == EEXIST)
      rc = same_bytes(path, bytes, len, err, cap);
    else
      rc = tl_fail(err, cap, TL_ERR_IO, "%s: cannot link into place: %s", path,
                   strerror(errno));
  } else if (rc == TL_OK) {
    *wrote = true;
  }
  tl_file_atomic_abort(&f); /* the temporary name goes; the object stays */
  return rc;
}

static tl_status put_entry(tl_store *s, bool receipt, const char *what,
                           const uint8_t id[32], const uint8_t *bytes, size_t len,
                           char *err, size_t cap) {
  char path[4200];
  bool wrote;
  tl_status st;
  if (what == NULL || what[0] == '\0')
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT, "an entry needs a label");
  entry_path(s, receipt, id, path);
  st = publish(path, bytes, len, &wrote, err, cap);
  if (st == TL_OK && wrote)
    st = index_line(s, receipt ? "receipt" : "object", what, id, len, err, cap);
  return st;
}

tl_status tl_store_put(tl_store *s, const char *what, const uint8_t *bytes, size_t len,
                       uint8_t id[32], char *err, size_t err_cap) {
  tl_status st = tl_sha256(bytes, len, id);
  if (st != TL_OK) return tl_fail(err, err_cap, st, "hashing an object failed");
  return put_entry(s, false, what, id, bytes, len, err, err_cap);
}

tl_status tl_store_get(tl_store *s, const uint8_t id[32], uint8_t **bytes, size_t *len,
                       char *err, size_t err_cap) {
  char path[4200], want[65], got[65];
  uint8_t digest[32];
  tl_status st;
  entry_path(s, false, id, path);
  if ((st = read_all(path, bytes, len, err, err_cap)) != TL_OK) return st;
  if (tl_sha256(*bytes, *len, digest) != TL_OK || memcmp(digest, id, 32) != 0) {
    tl_hex_encode(id, 32, want);
    tl_hex_encode(digest, 32, got);
    free(*bytes);
    *bytes = NULL;
    *len = 0;
    return tl_fail(err, err_cap, TL_ERR_HASH_MISMATCH,
                   "%s: its bytes hash to %.16s..., not %.16s...: the store is damaged",
                   path, got, want);
  }
  return TL_OK;
}

bool tl_store_has(tl_store *s, const uint8_t id[32]) {
  char path[4200];
  struct stat st;
  entry_path(s, false, id, path);
  return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

tl_status tl_store_put_receipt(tl_store *s, const char *what, const uint8_t root[32],
                               const uint8_t *doc, size_t len, char *err,
                               size_t err_cap) {
  return put_entry(s, true, what, root, doc, len, err, err_cap);
}

tl_status tl_store_get_receipt(tl_store *s, const uint8_t root[32], uint8_t **doc,
                               size_t *len, char *err, size_t err_cap) {
  char path[4200];
  entry_path(s, true, root, path);
  return read_all(path, doc, len, err, err_cap);
}

static int by_id(const void *a, const void *b) { return memcmp(a, b, 32); }

tl_status tl_store_list_receipts(tl_store *s, uint8_t (**ids)[32], size_t *n, char *err,
                                 size_t err_cap) {
  char path[4200];
  DIR *d;
  struct dirent *e;
  size_t cap = 0;
  *ids = NULL;
  *n = 0;
  snprintf(path, sizeof path, "%s/receipts", s->dir);
  if ((d = opendir(path)) == NULL)
    return tl_fail(err, err_cap, TL_ERR_IO, "%s: %s", path, strerror(errno));
  /* HEX64.cbor only: temporary files and anything else are not receipts. */
  while ((e = readdir(d)) != NULL) {
    char hex[65];
    uint8_t id[32];
    if (strlen(e->d_name) != 69 || strcmp(e->d_name + 64, ".cbor") != 0) continue;
    memcpy(hex, e->d_name, 64);
    hex[64] = '\0';
    if (!tl_hex32_parse(hex, id)) continue;
    if (*n == cap) {
      size_t grow = cap ? 2 * cap : 16;
      void *p = realloc(*ids, grow * sizeof **ids);
      if (p == NULL) {
        closedir(d);
        free(*ids);
        *ids = NULL;
        *n = 0;
        return tl_fail(err, err_cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
      }
      *ids = p;
      cap = grow;
    }
    memcpy((*ids)[(*n)++], id, 32);
  }
  closedir(d);
  if (*n > 0) qsort(*ids, *n, sizeof **ids, by_id);
  return TL_OK;
}
