/* The evidence store (promote_store.h, docs/promotion-receipts.md §The
 * evidence store). Objects and receipts are published with linkat(): the
 * name appears whole or not at all and an existing name is never
 * replaced, not even by this process (tl_file_atomic_commit would rename
 * over a file this process wrote; the store must not). Everything is
 * named relative to the store's directories, opened once and checked
 * (custody: docs/promotion-receipts.md). */
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
  /* The store and its two directories, opened once without following a
   * link and checked to be this user's: every entry is named relative to
   * them, so a link swapped in afterwards is never followed. */
  int fd, objects_fd, receipts_fd;
};

#define CUSTODY_RULE                                                       \
  "the store must be real directories owned by you, not group- or other-" \
  "writable"

/* name in the directory open as at (the store itself: AT_FDCWD and its
 * path), created 0700 when asked and absent, opened as *fd only when it
 * is a real directory only this user can change. shown names it. */
static tl_status open_private(int at, const char *name, const char *shown, bool create,
                              int *fd, char *err, size_t cap) {
  struct stat sb;
  char why_buf[96];
  const char *why;
  *fd = -1;
  if (create && mkdirat(at, name, 0700) != 0 && errno != EEXIST)
    return tl_fail(err, cap, TL_ERR_IO, "store %s: cannot create the directory: %s", shown,
                   strerror(errno));
  *fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (*fd < 0) {
    int e = errno;
    if ((e == ELOOP || e == ENOTDIR) && fstatat(at, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(sb.st_mode))
        return tl_fail(err, cap, TL_ERR_IO, "store %s: a symbolic link; refusing (" CUSTODY_RULE
                       ")", shown);
      return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT, "store %s: not a directory", shown);
    }
    return tl_fail(err, cap, TL_ERR_IO, "store %s: %s%s", shown, strerror(e),
                   create || e != ENOENT ? ""
                                         : " (not an evidence store; promote --store creates one)");
  }
  if ((why = tl_file_private_dir(*fd, &sb, why_buf, sizeof why_buf)) != NULL) {
    close(*fd);
    *fd = -1;
    return tl_fail(err, cap, TL_ERR_IO, "store %s: %s; refusing (" CUSTODY_RULE ")", shown, why);
  }
  return TL_OK;
}

static tl_status scan_index(tl_store *s, bool receipt, const char *what, uint8_t id[32],
                            bool *found, char *err, size_t err_cap);

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
  s = calloc(1, sizeof *s);
  if (s == NULL || (s->dir = strdup(dir)) == NULL) {
    free(s);
    return tl_fail(err, err_cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
  }
  /* "DIR/" would follow DIR when it is a link: the name without it. */
  for (size_t n = strlen(s->dir); n > 1 && s->dir[n - 1] == '/'; n--) s->dir[n - 1] = '\0';
  s->objects_fd = s->receipts_fd = -1;
  st = open_private(AT_FDCWD, s->dir, s->dir, create, &s->fd, err, err_cap);
  snprintf(sub, sizeof sub, "%s/objects", s->dir);
  if (st == TL_OK) st = open_private(s->fd, "objects", sub, create, &s->objects_fd, err, err_cap);
  snprintf(sub, sizeof sub, "%s/receipts", s->dir);
  if (st == TL_OK)
    st = open_private(s->fd, "receipts", sub, create, &s->receipts_fd, err, err_cap);
  /* A log that names anything but ids is a store not to be trusted. */
  if (st == TL_OK) {
    uint8_t unused[32];
    bool found;
    st = scan_index(s, false, NULL, unused, &found, err, err_cap);
  }
  if (st != TL_OK) {
    tl_store_close(s);
    return st;
  }
  *out = s;
  return TL_OK;
}

void tl_store_close(tl_store *s) {
  if (s == NULL) return;
  if (s->fd >= 0) close(s->fd);
  if (s->objects_fd >= 0) close(s->objects_fd);
  if (s->receipts_fd >= 0) close(s->receipts_fd);
  free(s->dir);
  free(s);
}

const char *tl_store_dir(const tl_store *s) { return s->dir; }

/* An entry: its directory, its name there (HEX or HEX.cbor) and the path
 * messages show. The name is always built from the id, never taken from
 * a file. */
typedef struct entry {
  int dirfd;
  char name[72], shown[4200];
} entry;

static void entry_of(const tl_store *s, bool receipt, const uint8_t id[32], entry *e) {
  tl_hex_encode(id, 32, e->name);
  if (receipt) memcpy(e->name + 64, ".cbor", sizeof ".cbor");
  e->dirfd = receipt ? s->receipts_fd : s->objects_fd;
  snprintf(e->shown, sizeof e->shown, "%s/%s/%s", s->dir, receipt ? "receipts" : "objects",
           e->name);
}

/* The whole entry (malloc'd; a zero-length file gets a 1-byte buffer so
 * that *bytes is never NULL). TL_ERR_NOT_FOUND when absent. */
static tl_status read_all(const entry *e, uint8_t **bytes, size_t *len, char *err, size_t cap) {
  tl_file_view v;
  tl_status rc;
  *bytes = NULL;
  *len = 0;
  rc = tl_file_open_regular_at(e->dirfd, e->name, e->shown, &v, err, cap);
  if (rc == TL_ERR_NOT_FOUND)
    return tl_fail(err, cap, TL_ERR_NOT_FOUND, "%s: not in the store", e->shown);
  if (rc != TL_OK) return rc;
  *bytes = malloc(v.len > 0 ? v.len : 1);
  if (*bytes == NULL) {
    tl_file_close_view(&v);
    return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory", e->shown);
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
  char hex[65], *text;
  json_t *line;
  int fd;
  struct stat sb;
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
  /* O_NONBLOCK: a FIFO in its place fails to open instead of hanging. */
  fd = openat(s->fd, "index.jsonl",
              O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) {
    close(fd);
    fd = -1;
    errno = EINVAL;
  }
  while (fd >= 0 && done < n) {
    ssize_t k = write(fd, text + done, n - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    done += (size_t)k;
  }
  if (fd < 0 || done < n || fsync(fd) != 0)
    st = tl_fail(err, cap, TL_ERR_IO, "%s/index.jsonl: cannot append: %s", s->dir,
                 errno == EINVAL ? "not a regular file" : strerror(errno));
  if (fd >= 0) close(fd);
  free(text);
  return st;
}

/* An existing entry: the same bytes (nothing to do) or a damaged store. */
static tl_status same_bytes(const entry *e, const uint8_t *bytes, size_t len, char *err,
                            size_t cap) {
  uint8_t *have;
  size_t have_len;
  tl_status st = read_all(e, &have, &have_len, err, cap);
  if (st != TL_OK) return st;
  if (have_len != len || memcmp(have, bytes, len) != 0)
    st = tl_fail(err, cap, TL_ERR_HASH_MISMATCH,
                 "%s exists with other bytes: the store is damaged (an entry is never "
                 "rewritten)",
                 e->shown);
  free(have);
  return st;
}

/* Publishes bytes as the entry unless it exists; *wrote says whether it
 * did. */
static tl_status publish(const entry *e, const uint8_t *bytes, size_t len, bool *wrote,
                         char *err, size_t cap) {
  tl_file_atomic f;
  struct stat st;
  tl_status rc;
  *wrote = false;
  if (fstatat(e->dirfd, e->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
    return same_bytes(e, bytes, len, err, cap);
  /* A temporary file beside it (removed on an error or a fatal signal),
   * made read-only and durable, then linked under its name: linkat()
   * fails with EEXIST when another writer got there first. */
  if ((rc = tl_file_atomic_begin_at(&f, e->dirfd, e->name, e->shown, err, cap)) != TL_OK)
    return rc;
  rc = tl_file_atomic_pwrite(&f, 0, bytes, len, err, cap);
  if (rc == TL_OK && (fchmod(f.fd, 0400) != 0 || fsync(f.fd) != 0))
    rc = tl_fail(err, cap, TL_ERR_IO, "%s: write failed: %s", e->shown, strerror(errno));
  if (rc == TL_OK && linkat(e->dirfd, f.tmp, e->dirfd, e->name, 0) != 0) {
    if (errno == EEXIST)
      rc = same_bytes(e, bytes, len, err, cap);
    else
      rc = tl_fail(err, cap, TL_ERR_IO, "%s: cannot link into place: %s", e->shown,
                   strerror(errno));
  } else if (rc == TL_OK) {
    *wrote = true;
  }
  tl_file_atomic_abort(&f); /* the temporary name goes; the entry stays */
  return rc;
}

static tl_status put_entry(tl_store *s, bool receipt, const char *what,
                           const uint8_t id[32], const uint8_t *bytes, size_t len,
                           char *err, size_t cap) {
  entry e;
  bool wrote;
  tl_status st;
  if (what == NULL || what[0] == '\0')
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT, "an entry needs a label");
  entry_of(s, receipt, id, &e);
  st = publish(&e, bytes, len, &wrote, err, cap);
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
  char want[65], got[65];
  uint8_t digest[32];
  entry e;
  tl_status st;
  entry_of(s, false, id, &e);
  if ((st = read_all(&e, bytes, len, err, err_cap)) != TL_OK) return st;
  if (tl_sha256(*bytes, *len, digest) != TL_OK || memcmp(digest, id, 32) != 0) {
    tl_hex_encode(id, 32, want);
    tl_hex_encode(digest, 32, got);
    free(*bytes);
    *bytes = NULL;
    *len = 0;
    return tl_fail(err, err_cap, TL_ERR_HASH_MISMATCH,
                   "%s: its bytes hash to %.16s..., not %.16s...: the store is damaged",
                   e.shown, got, want);
  }
  return TL_OK;
}

bool tl_store_has(tl_store *s, const uint8_t id[32]) {
  entry e;
  struct stat st;
  entry_of(s, false, id, &e);
  return fstatat(e.dirfd, e.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

tl_status tl_store_put_receipt(tl_store *s, const char *what, const uint8_t root[32],
                               const uint8_t *doc, size_t len, char *err,
                               size_t err_cap) {
  return put_entry(s, true, what, root, doc, len, err, err_cap);
}

tl_status tl_store_get_receipt(tl_store *s, const uint8_t root[32], uint8_t **doc,
                               size_t *len, char *err, size_t err_cap) {
  entry e;
  entry_of(s, true, root, &e);
  return read_all(&e, doc, len, err, err_cap);
}

/* Whether text is exactly 64 lower-case hex digits (the form the store
 * writes; tl_hex32_parse also takes upper case). */
static bool lower_hex64(const char *text) {
  size_t i = 0;
  if (text == NULL) return false;
  for (; i < 64; i++)
    if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f')))
      return false;
  return text[64] == '\0';
}

/* One line of index.jsonl as the store writes it: exactly
 * {"id": HEX64, "kind": "object"|"receipt", "size": N, "what": TEXT}.
 * NULL when it is; else what is wrong. */
static const char *bad_index_line(const json_t *e) {
  const char *kind = json_string_value(json_object_get(e, "kind"));
  if (!json_is_object(e)) return "not a JSON object";
  if (json_object_size(e) != 4 || !json_is_integer(json_object_get(e, "size")) ||
      json_integer_value(json_object_get(e, "size")) < 0 ||
      !json_is_string(json_object_get(e, "what")))
    return "not {\"id\", \"kind\", \"size\", \"what\"}";
  if (!lower_hex64(json_string_value(json_object_get(e, "id"))))
    return "'id' is not 64 lower-case hex digits (an index line names an id, never a path)";
  if (kind == NULL || (strcmp(kind, "object") != 0 && strcmp(kind, "receipt") != 0))
    return "'kind' is neither object nor receipt";
  return NULL;
}

/* Reads index.jsonl, every line of it checked (bad_index_line); with
 * `what`, *found and id say the last entry of that kind and label. An
 * absent index is an empty one. */
static tl_status scan_index(tl_store *s, bool receipt, const char *what, uint8_t id[32],
                            bool *found, char *err, size_t err_cap) {
  char shown[4200];
  tl_file_view v;
  size_t at = 0, line_no = 0;
  tl_status st;
  *found = false;
  snprintf(shown, sizeof shown, "%s/index.jsonl", s->dir);
  st = tl_file_open_regular_at(s->fd, "index.jsonl", shown, &v, err, err_cap);
  if (st == TL_ERR_NOT_FOUND) return TL_OK;
  if (st != TL_OK) return st;
  while (at < v.len && st == TL_OK) {
    const uint8_t *nl = memchr(v.data + at, '\n', v.len - at);
    size_t end = nl != NULL ? (size_t)(nl - v.data) : v.len;
    json_t *e = json_loadb((const char *)v.data + at, end - at, JSON_REJECT_DUPLICATES, NULL);
    const char *why = bad_index_line(e);
    line_no++;
    if (why != NULL) {
      st = tl_fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                   "%s: line %zu: %s; refusing (the store is damaged)", shown, line_no, why);
    } else if (what != NULL &&
               strcmp(json_string_value(json_object_get(e, "kind")),
                      receipt ? "receipt" : "object") == 0 &&
               strcmp(json_string_value(json_object_get(e, "what")), what) == 0) {
      *found = tl_hex32_parse(json_string_value(json_object_get(e, "id")), id);
    }
    json_decref(e);
    at = end + 1;
  }
  tl_file_close_view(&v);
  return st;
}

tl_status tl_store_last_entry(tl_store *s, bool receipt, const char *what, uint8_t id[32],
                              char *err, size_t err_cap) {
  bool found;
  tl_status st = scan_index(s, receipt, what, id, &found, err, err_cap);
  if (st == TL_OK && !found)
    st = tl_fail(err, err_cap, TL_ERR_NOT_FOUND, "%s/index.jsonl: no %s entry", s->dir, what);
  return st;
}

static int by_id(const void *a, const void *b) { return memcmp(a, b, 32); }

tl_status tl_store_list_receipts(tl_store *s, uint8_t (**ids)[32], size_t *n, char *err,
                                 size_t err_cap) {
  char path[4200];
  DIR *d;
  struct dirent *e;
  size_t cap = 0;
  int fd;
  *ids = NULL;
  *n = 0;
  snprintf(path, sizeof path, "%s/receipts", s->dir);
  /* A descriptor of its own (reading moves its offset), of the directory
   * the store checked. */
  fd = openat(s->receipts_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || (d = fdopendir(fd)) == NULL) {
    tl_status st = tl_fail(err, err_cap, TL_ERR_IO, "%s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return st;
  }
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
