/* The verified-stamp cache (stamp.c) and the model open that uses it
 * (model.c): a stamp matches only its exact key and header digest, lives
 * only in a directory only this user can change, and a file changed in
 * any way (a byte, touch, replaced) is verified in full again. Runs from
 * the repository root; each case points XDG_CACHE_HOME at its own
 * temporary directory and restores it. */
#define _DEFAULT_SOURCE 1
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash/sha256.h"
#include "model.h"
#include "stamp.h"
#include "tl_test.h"

#define TINY "tests/golden/slm/tiny-f32.slm"

typedef struct scratch {
  char dir[64];
  char *old_cache; /* XDG_CACHE_HOME before the case (malloc), or NULL */
} scratch;

static bool scratch_begin(tl_test_ctx *t, scratch *s) {
  const char *old = getenv("XDG_CACHE_HOME");
  char cache[128];
  snprintf(s->dir, sizeof s->dir, "/tmp/tl_stamp_test_XXXXXX");
  s->old_cache = old != NULL ? strdup(old) : NULL;
  if (!TL_EXPECT(t, mkdtemp(s->dir) != NULL)) return false;
  snprintf(cache, sizeof cache, "%s/cache", s->dir);
  setenv("XDG_CACHE_HOME", cache, 1);
  unsetenv(TL_VERIFY_ENV);
  return true;
}

static void scratch_end(scratch *s) {
  char cmd[128];
  if (s->old_cache != NULL) setenv("XDG_CACHE_HOME", s->old_cache, 1);
  else unsetenv("XDG_CACHE_HOME");
  free(s->old_cache);
  unsetenv(TL_VERIFY_ENV);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
  (void)system(cmd);
}

static uint8_t *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  long n;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)n)) != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf != NULL) *len = (size_t)n;
  fclose(f);
  return buf;
}

static bool write_all(const char *path, const uint8_t *data, size_t len) {
  FILE *f = fopen(path, "wb");
  bool ok = f != NULL && fwrite(data, 1, len, f) == len;
  if (f != NULL && fclose(f) != 0) ok = false;
  return ok;
}

/* Opens path: status, and whether a stamp served (false when it failed). */
static tl_status open_model(const char *path, bool *stamped, uint8_t id[32]) {
  tl_native_model m;
  char err[512];
  tl_status st = tl_native_model_open(path, &m, err, sizeof err);
  *stamped = false;
  if (st != TL_OK) return st; /* closed by the open */
  *stamped = m.stamped;
  if (id != NULL) st = tl_native_model_artifact_id(&m, id);
  tl_native_model_close(&m);
  return st;
}

static void key_fields_each_miss(tl_test_ctx *t) {
  scratch s;
  tl_stamp_key k = {0xfe01, 77, 4096, 1000, 5, 1001, 6}, v;
  uint8_t header[32], other[32], id[32], got[32];
  bool has_id;
  if (!scratch_begin(t, &s)) return;
  memset(header, 0xA5, 32);
  memset(other, 0xA5, 32);
  other[31] ^= 1;
  for (int i = 0; i < 32; i++) id[i] = (uint8_t)i;
  TL_EXPECT(t, !tl_stamp_lookup(&k, header, got, &has_id));
  tl_stamp_record(&k, header, NULL);
  TL_EXPECT(t, tl_stamp_lookup(&k, header, got, &has_id) && !has_id);
  tl_stamp_record(&k, header, id);
  TL_EXPECT(t, tl_stamp_lookup(&k, header, got, &has_id) && has_id);
  TL_EXPECT_MEM(t, got, id, 32);
  TL_EXPECT(t, !tl_stamp_lookup(&k, other, got, &has_id));
  for (int f = 0; f < 7; f++) {
    v = k;
    switch (f) {
      case 0: v.dev++; break;
      case 1: v.ino++; break;
      case 2: v.size++; break;
      case 3: v.mtime_s++; break;
      case 4: v.mtime_ns++; break;
      case 5: v.ctime_s++; break;
      default: v.ctime_ns++; break;
    }
    TL_EXPECT(t, !tl_stamp_lookup(&v, header, got, &has_id));
  }
  scratch_end(&s);
}

/* The codes stamp is its own record: not implied by the verified stamp,
 * and under the same key and header rules. */
static void codes_stamp_is_separate(tl_test_ctx *t) {
  scratch s;
  tl_stamp_key k = {0xfe02, 78, 4096, 1000, 5, 1001, 6}, v = k;
  uint8_t header[32], other[32], got[32];
  bool has_id;
  if (!scratch_begin(t, &s)) return;
  memset(header, 0x5A, 32);
  memcpy(other, header, 32);
  other[0] ^= 1;
  tl_stamp_record(&k, header, NULL);
  TL_EXPECT(t, !tl_stamp_codes_lookup(&k, header));
  tl_stamp_codes_record(&k, header);
  TL_EXPECT(t, tl_stamp_codes_lookup(&k, header));
  TL_EXPECT(t, !tl_stamp_codes_lookup(&k, other));
  v.ctime_ns++;
  TL_EXPECT(t, !tl_stamp_codes_lookup(&v, header));
  /* and a codes stamp is no verified stamp */
  v = k;
  v.ino++;
  tl_stamp_codes_record(&v, header);
  TL_EXPECT(t, !tl_stamp_lookup(&v, header, got, &has_id));
  scratch_end(&s);
}

/* A file changed less than two seconds ago is never stamped. */
static void recent_file_not_stamped(tl_test_ctx *t) {
  scratch s;
  uint8_t header[32] = {0}, got[32];
  bool has_id;
  tl_stamp_key k;
  char path[128];
  int fd;
  if (!scratch_begin(t, &s)) return;
  snprintf(path, sizeof path, "%s/fresh", s.dir);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (TL_EXPECT(t, fd >= 0 && tl_stamp_key_of(fd, &k))) {
    tl_stamp_record(&k, header, NULL);
    TL_EXPECT(t, !tl_stamp_lookup(&k, header, got, &has_id));
  }
  if (fd >= 0) close(fd);
  scratch_end(&s);
}

/* A cache directory that is a link, or that group or others may write,
 * holds no stamp: none is written there, none is read. */
static void refused_cache_dirs(tl_test_ctx *t) {
  scratch s;
  tl_stamp_key k = {1, 2, 3, 1000, 0, 1000, 0};
  uint8_t header[32] = {0}, got[32];
  bool has_id;
  char path[256], real[128];
  struct stat sb;
  if (!scratch_begin(t, &s)) return;
  snprintf(path, sizeof path, "%s/cache", s.dir);
  TL_EXPECT(t, mkdir(path, 0700) == 0);
  snprintf(real, sizeof real, "%s/real", s.dir);
  TL_EXPECT(t, mkdir(real, 0700) == 0);
  snprintf(path, sizeof path, "%s/cache/tinylm", s.dir);
  TL_EXPECT(t, symlink(real, path) == 0);
  tl_stamp_record(&k, header, NULL);
  TL_EXPECT(t, !tl_stamp_lookup(&k, header, got, &has_id));
  snprintf(path, sizeof path, "%s/verified-1-2", real);
  TL_EXPECT(t, stat(path, &sb) != 0); /* nothing went through the link */
  /* the same directory, no longer a link but group-writable */
  snprintf(path, sizeof path, "%s/cache/tinylm", s.dir);
  TL_EXPECT(t, unlink(path) == 0 && mkdir(path, 0700) == 0 && chmod(path, 0770) == 0);
  tl_stamp_record(&k, header, NULL);
  TL_EXPECT(t, !tl_stamp_lookup(&k, header, got, &has_id));
  snprintf(path, sizeof path, "%s/cache/tinylm/verified-1-2", s.dir);
  TL_EXPECT(t, stat(path, &sb) != 0);
  /* once only this user may write it, stamps work */
  snprintf(path, sizeof path, "%s/cache/tinylm", s.dir);
  TL_EXPECT(t, chmod(path, 0700) == 0);
  tl_stamp_record(&k, header, NULL);
  TL_EXPECT(t, tl_stamp_lookup(&k, header, got, &has_id));
  scratch_end(&s);
}

/* Four copies of the tiny model, stamped by a first open: the second open
 * of an unchanged one uses the stamp and gives the file's SHA-256 as the
 * artifact id; --verify full (TINYLM_VERIFY) ignores it; a byte changed in
 * place, a touch and a replacement each verify in full again. */
static void model_open_uses_and_distrusts_stamps(tl_test_ctx *t) {
  scratch s;
  char paths[4][128], other[128];
  uint8_t *bytes = NULL, want[32], id[32];
  size_t len = 0;
  bool stamped;
  if (!scratch_begin(t, &s)) return;
  bytes = read_all(TINY, &len);
  if (!TL_EXPECT(t, bytes != NULL && len > 4096)) goto out;
  TL_EXPECT_OK(t, tl_sha256(bytes, len, want));
  for (int i = 0; i < 4; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/m%d.slm", s.dir, i);
    TL_EXPECT(t, write_all(paths[i], bytes, len));
  }
  sleep(3); /* older than a stamp's two-second window */
  for (int i = 0; i < 4; i++) {
    TL_EXPECT_OK(t, open_model(paths[i], &stamped, id));
    TL_EXPECT(t, !stamped);
  }
  /* unchanged: the stamp serves, with the artifact id */
  TL_EXPECT_OK(t, open_model(paths[0], &stamped, id));
  TL_EXPECT(t, stamped);
  TL_EXPECT_MEM(t, id, want, 32);
  setenv(TL_VERIFY_ENV, "full", 1);
  TL_EXPECT_OK(t, open_model(paths[0], &stamped, NULL));
  TL_EXPECT(t, !stamped);
  setenv(TL_VERIFY_ENV, "sometimes", 1);
  TL_EXPECT_STATUS(t, open_model(paths[0], &stamped, NULL), TL_ERR_INVALID_ARGUMENT);
  unsetenv(TL_VERIFY_ENV);
  /* one byte of the last tensor's data changed in place */
  {
    int fd = open(paths[1], O_WRONLY);
    uint8_t b = (uint8_t)(bytes[len - 64] ^ 0x40);
    TL_EXPECT(t, fd >= 0 && pwrite(fd, &b, 1, (off_t)len - 64) == 1);
    if (fd >= 0) close(fd);
    TL_EXPECT_STATUS(t, open_model(paths[1], &stamped, NULL), TL_ERR_HASH_MISMATCH);
  }
  /* touched: same bytes, verified in full */
  TL_EXPECT(t, utimensat(AT_FDCWD, paths[2], NULL, 0) == 0);
  TL_EXPECT_OK(t, open_model(paths[2], &stamped, NULL));
  TL_EXPECT(t, !stamped);
  /* replaced by a copy (another inode) */
  snprintf(other, sizeof other, "%s/other.slm", s.dir);
  TL_EXPECT(t, write_all(other, bytes, len) && rename(other, paths[3]) == 0);
  TL_EXPECT_OK(t, open_model(paths[3], &stamped, NULL));
  TL_EXPECT(t, !stamped);
out:
  free(bytes);
  scratch_end(&s);
}

static const tl_test_case cases[] = {
    TL_CASE(key_fields_each_miss),
    TL_CASE(codes_stamp_is_separate),
    TL_CASE(recent_file_not_stamped),
    TL_CASE(refused_cache_dirs),
    TL_CASE(model_open_uses_and_distrusts_stamps),
};
TL_SUITE(stamp, cases);
