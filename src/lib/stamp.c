#define _DEFAULT_SOURCE 1 /* st_mtim, st_ctim */
#include "stamp.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "file.h"

/* A stamp file: the magic, the key's seven fields (u64 little-endian),
 * the header digest, the artifact id (zeros when absent) and 1 or 0 for
 * whether it is there. Anything else (a torn write included) is no stamp. */
#define MAGIC "tlstamp1"
enum { KEY_AT = 8, HEADER_AT = 64, ID_AT = 96, HAS_ID_AT = 128, STAMP_LEN = 129 };

bool tl_stamp_key_of(int fd, tl_stamp_key *k) {
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  k->dev = (uint64_t)st.st_dev;
  k->ino = (uint64_t)st.st_ino;
  k->size = (int64_t)st.st_size;
  k->mtime_s = (int64_t)st.st_mtim.tv_sec;
  k->mtime_ns = (int64_t)st.st_mtim.tv_nsec;
  k->ctime_s = (int64_t)st.st_ctim.tv_sec;
  k->ctime_ns = (int64_t)st.st_ctim.tv_nsec;
  return true;
}

bool tl_stamp_key_equal(const tl_stamp_key *a, const tl_stamp_key *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns && a->ctime_s == b->ctime_s &&
         a->ctime_ns == b->ctime_ns;
}

tl_status tl_stamp_full_wanted(bool *full, char *err, size_t err_cap) {
  const char *v = getenv(TL_VERIFY_ENV);
  *full = v != NULL && strcmp(v, "full") == 0;
  if (v == NULL || v[0] == '\0' || *full || strcmp(v, "stamp") == 0) return TL_OK;
  snprintf(err, err_cap, "%s=%s: must be full or stamp", TL_VERIFY_ENV, v);
  return TL_ERR_INVALID_ARGUMENT;
}

/* $XDG_CACHE_HOME/tinylm (an absolute XDG_CACHE_HOME), else
 * $HOME/.cache/tinylm, created 0700 when absent and opened only when it is
 * a real directory only this user can change (tl_file_private_dir, the
 * rule --receipt-dir and promote --store keep); -1 otherwise. */
static int open_cache_dir(void) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char root[4096], why[96];
  struct stat sb;
  int rfd, fd;
  if (xdg != NULL && xdg[0] == '/')
    snprintf(root, sizeof root, "%s", xdg);
  else if (home != NULL && home[0] == '/')
    snprintf(root, sizeof root, "%s/.cache", home);
  else
    return -1;
  (void)mkdir(root, 0700); /* an existing one is used as it is */
  if ((rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) return -1;
  (void)mkdirat(rfd, "tinylm", 0700);
  fd = openat(rfd, "tinylm", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  close(rfd);
  if (fd >= 0 && tl_file_private_dir(fd, &sb, why, sizeof why) != NULL) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* what: "verified" (the digests) or "codes" (the q8/q4 codes' Q-17). */
static void stamp_name(const char *what, const tl_stamp_key *k, char *name, size_t cap) {
  snprintf(name, cap, "%s-%llx-%llx", what, (unsigned long long)k->dev,
           (unsigned long long)k->ino);
}

static void encode(const tl_stamp_key *k, const uint8_t header[32], const uint8_t *id,
                   uint8_t out[STAMP_LEN]) {
  const int64_t f[5] = {k->mtime_s, k->mtime_ns, k->ctime_s, k->ctime_ns, k->size};
  memset(out, 0, STAMP_LEN);
  memcpy(out, MAGIC, 8);
  tl_store_le64(out + KEY_AT, k->dev);
  tl_store_le64(out + KEY_AT + 8, k->ino);
  for (int i = 0; i < 5; i++) tl_store_le64(out + KEY_AT + 16 + 8 * i, (uint64_t)f[i]);
  memcpy(out + HEADER_AT, header, 32);
  if (id != NULL) memcpy(out + ID_AT, id, 32);
  out[HAS_ID_AT] = id != NULL;
}

static bool lookup(const char *what, const tl_stamp_key *k, const uint8_t header[32],
                   uint8_t id[32], bool *has_id) {
  uint8_t got[STAMP_LEN + 1], want[STAMP_LEN];
  char name[64];
  struct stat sb;
  ssize_t n = -1;
  int dir = open_cache_dir(), fd;
  *has_id = false;
  if (dir < 0) return false;
  stamp_name(what, k, name, sizeof name);
  fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  close(dir);
  if (fd < 0) return false;
  /* only a file of this user's that nobody else may write */
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid() &&
      (sb.st_mode & (S_IWGRP | S_IWOTH)) == 0)
    n = read(fd, got, sizeof got);
  close(fd);
  if (n != STAMP_LEN || got[HAS_ID_AT] > 1) return false;
  encode(k, header, NULL, want);
  if (memcmp(got, want, ID_AT) != 0) return false;
  *has_id = got[HAS_ID_AT] == 1;
  memcpy(id, got + ID_AT, 32);
  return true;
}

static void record(const char *what, const tl_stamp_key *k, const uint8_t header[32],
                   const uint8_t *id) {
  uint8_t rec[STAMP_LEN];
  char name[64], err[256];
  tl_file_atomic f;
  struct timespec now;
  int dir;
  int64_t newest = k->mtime_s > k->ctime_s ? k->mtime_s : k->ctime_s;
  if (clock_gettime(CLOCK_REALTIME, &now) != 0 || (int64_t)now.tv_sec - newest < 2) return;
  if ((dir = open_cache_dir()) < 0) return;
  stamp_name(what, k, name, sizeof name);
  encode(k, header, id, rec);
  /* no fsync: a stamp lost or torn in a crash is only a miss */
  if (tl_file_atomic_begin_at(&f, dir, name, name, err, sizeof err) == TL_OK) {
    if (write(f.fd, rec, sizeof rec) == (ssize_t)sizeof rec)
      (void)renameat(dir, f.tmp, dir, name);
    tl_file_atomic_abort(&f); /* after the rename: only closes */
  }
  close(dir);
}

bool tl_stamp_lookup(const tl_stamp_key *k, const uint8_t header[32], uint8_t id[32],
                     bool *has_id) {
  return lookup("verified", k, header, id, has_id);
}

void tl_stamp_record(const tl_stamp_key *k, const uint8_t header[32], const uint8_t *id) {
  record("verified", k, header, id);
}

bool tl_stamp_codes_lookup(const tl_stamp_key *k, const uint8_t header[32]) {
  uint8_t id[32];
  bool has_id;
  return lookup("codes", k, header, id, &has_id);
}

void tl_stamp_codes_record(const tl_stamp_key *k, const uint8_t header[32]) {
  record("codes", k, header, NULL);
}
