/* The evidence store (promote_store.h): objects named by the SHA-256 of
 * their bytes (FIPS 180 "abc" as the oracle for one name), never
 * rewritten, checked on every read, published whole by racing writers,
 * and one index line per entry written. */
#define _POSIX_C_SOURCE 200809L
#include "promote_store.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "hash/sha256.h"
#include "tl_test.h"

static char *make_dir(void) {
  char tmpl[] = "/tmp/tl_store_XXXXXX";
  char *d = mkdtemp(tmpl);
  return d != NULL ? strdup(d) : NULL;
}

static void rm_dir(char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  free(dir);
}

static void path_of(const char *dir, const char *sub, const uint8_t id[32],
                    const char *ext, char out[512]) {
  char hex[65];
  tl_hex_encode(id, 32, hex);
  snprintf(out, 512, "%s/%s/%s%s", dir, sub, hex, ext);
}

/* index.jsonl's lines, each checked to be one JSON object of the store's
 * four fields; those naming id (NULL: all). */
static size_t index_lines(tl_test_ctx *t, const char *dir, const uint8_t *id) {
  char path[512], line[512], hex[65] = "";
  size_t n = 0;
  FILE *f;
  snprintf(path, sizeof path, "%s/index.jsonl", dir);
  if ((f = fopen(path, "r")) == NULL) return 0;
  if (id != NULL) tl_hex_encode(id, 32, hex);
  while (fgets(line, sizeof line, f) != NULL) {
    json_error_t e;
    json_t *j = json_loads(line, 0, &e);
    const char *got = json_string_value(json_object_get(j, "id"));
    TL_EXPECT(t, j != NULL && json_object_size(j) == 4 && got != NULL &&
                     json_is_integer(json_object_get(j, "size")) &&
                     json_is_string(json_object_get(j, "kind")) &&
                     json_is_string(json_object_get(j, "what")));
    if (got != NULL && (id == NULL || strcmp(got, hex) == 0)) n++;
    json_decref(j);
  }
  fclose(f);
  return n;
}

static size_t count_entries(const char *dir, const char *sub) {
  char path[512];
  DIR *d;
  struct dirent *e;
  size_t n = 0;
  snprintf(path, sizeof path, "%s/%s", dir, sub);
  if ((d = opendir(path)) == NULL) return 0;
  while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void put_get_round_trip(tl_test_ctx *t) {
  char *dir = make_dir(), *top, err[512] = "", path[512], sub[600];
  tl_store *s = NULL;
  uint8_t id[32], want[32], *back = NULL;
  size_t len = 0;
  struct stat st;
  if (dir == NULL) {
    tl_test_skip(t, "no temporary directory");
    return;
  }
  /* A store directory that does not exist yet: created with its two
   * subdirectories, owner-only. */
  top = malloc(strlen(dir) + 8);
  sprintf(top, "%s/store", dir);
  TL_EXPECT_OK(t, tl_store_open(top, true, &s, err, sizeof err));
  TL_EXPECT_STR(t, tl_store_dir(s), top);
  TL_EXPECT(t, stat(top, &st) == 0 && (st.st_mode & 0777) == 0700);
  snprintf(sub, sizeof sub, "%s/objects", top);
  TL_EXPECT(t, stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
  snprintf(sub, sizeof sub, "%s/receipts", top);
  TL_EXPECT(t, stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
  /* The name is the SHA-256 of the bytes (FIPS 180-2 B.1). */
  TL_EXPECT_OK(t, tl_store_put(s, "observation", (const uint8_t *)"abc", 3, id, err,
                               sizeof err));
  tl_test_unhex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", want,
                32);
  TL_EXPECT_MEM(t, id, want, 32);
  path_of(top, "objects", id, "", path);
  TL_EXPECT(t, stat(path, &st) == 0 && st.st_size == 3 && (st.st_mode & 0222) == 0);
  TL_EXPECT(t, tl_store_has(s, id));
  TL_EXPECT_OK(t, tl_store_get(s, id, &back, &len, err, sizeof err));
  TL_EXPECT(t, len == 3 && back != NULL && memcmp(back, "abc", 3) == 0);
  free(back);
  TL_EXPECT_EQ_U64(t, index_lines(t, top, id), 1);
  /* The empty object too. */
  TL_EXPECT_OK(t, tl_store_put(s, "run", (const uint8_t *)"", 0, id, err, sizeof err));
  TL_EXPECT_OK(t, tl_store_get(s, id, &back, &len, err, sizeof err));
  TL_EXPECT(t, len == 0 && back != NULL);
  free(back);
  /* A store that is already there opens without create; a missing one
   * does not, and a file is not a store. */
  tl_store_close(s);
  TL_EXPECT_OK(t, tl_store_open(top, false, &s, err, sizeof err));
  tl_store_close(s);
  snprintf(sub, sizeof sub, "%s/none", dir);
  TL_EXPECT_STATUS(t, tl_store_open(sub, false, &s, err, sizeof err), TL_ERR_IO);
  TL_EXPECT(t, s == NULL && strstr(err, "none") != NULL);
  TL_EXPECT_STATUS(t, tl_store_open(path, true, &s, err, sizeof err),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, strstr(err, "not a directory") != NULL);
  free(top);
  rm_dir(dir);
}

static void never_rewritten(tl_test_ctx *t) {
  char *dir = make_dir(), err[512] = "", path[512];
  tl_store *s = NULL;
  uint8_t id[32], id2[32], *back = NULL;
  size_t len = 0;
  struct stat before, after;
  FILE *f;
  if (dir == NULL) {
    tl_test_skip(t, "no temporary directory");
    return;
  }
  TL_EXPECT_OK(t, tl_store_open(dir, true, &s, err, sizeof err));
  TL_EXPECT_OK(t, tl_store_put(s, "plan", (const uint8_t *)"plan bytes", 10, id, err,
                               sizeof err));
  path_of(dir, "objects", id, "", path);
  TL_EXPECT(t, stat(path, &before) == 0);
  /* The same bytes again: nothing written, nothing indexed. */
  TL_EXPECT_OK(t, tl_store_put(s, "plan", (const uint8_t *)"plan bytes", 10, id2, err,
                               sizeof err));
  TL_EXPECT_MEM(t, id2, id, 32);
  TL_EXPECT(t, stat(path, &after) == 0 && after.st_ino == before.st_ino &&
                   after.st_mtim.tv_nsec == before.st_mtim.tv_nsec &&
                   after.st_mtim.tv_sec == before.st_mtim.tv_sec);
  TL_EXPECT_EQ_U64(t, index_lines(t, dir, NULL), 1);
  /* Damage: other bytes under the name of "golden bytes". Putting the
   * real ones is refused and leaves the file as it is; reading it is
   * refused. */
  TL_EXPECT_OK(t, tl_sha256("golden bytes", 12, id));
  path_of(dir, "objects", id, "", path);
  TL_EXPECT(t, (f = fopen(path, "wb")) != NULL && fwrite("GOLDEN BYTES", 1, 12, f) == 12);
  if (f != NULL) fclose(f);
  TL_EXPECT(t, stat(path, &before) == 0);
  TL_EXPECT_STATUS(t, tl_store_put(s, "golden", (const uint8_t *)"golden bytes", 12, id2,
                                   err, sizeof err),
                   TL_ERR_HASH_MISMATCH);
  TL_EXPECT(t, strstr(err, "damaged") != NULL);
  TL_EXPECT(t, stat(path, &after) == 0 && after.st_ino == before.st_ino &&
                   after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
  TL_EXPECT(t, (f = fopen(path, "rb")) != NULL);
  if (f != NULL) {
    char got[16] = "";
    TL_EXPECT_EQ_U64(t, fread(got, 1, sizeof got, f), 12);
    TL_EXPECT(t, memcmp(got, "GOLDEN BYTES", 12) == 0);
    fclose(f);
  }
  TL_EXPECT_STATUS(t, tl_store_get(s, id, &back, &len, err, sizeof err),
                   TL_ERR_HASH_MISMATCH);
  TL_EXPECT(t, back == NULL && len == 0 && strstr(err, "damaged") != NULL);
  /* Absent is told apart from damaged. */
  memset(id, 0x5a, 32);
  TL_EXPECT(t, !tl_store_has(s, id));
  TL_EXPECT_STATUS(t, tl_store_get(s, id, &back, &len, err, sizeof err), TL_ERR_NOT_FOUND);
  TL_EXPECT_EQ_U64(t, index_lines(t, dir, NULL), 1);
  /* No temporary file is left behind. */
  TL_EXPECT_EQ_U64(t, count_entries(dir, "objects"), 2);
  tl_store_close(s);
  rm_dir(dir);
}

static void receipts(tl_test_ctx *t) {
  char *dir = make_dir(), err[512] = "", path[512];
  tl_store *s = NULL;
  uint8_t a[32], b[32], *doc = NULL, (*ids)[32] = NULL;
  size_t len = 0, n = 0;
  FILE *f;
  if (dir == NULL) {
    tl_test_skip(t, "no temporary directory");
    return;
  }
  TL_EXPECT_OK(t, tl_store_open(dir, true, &s, err, sizeof err));
  memset(a, 0xee, 32);
  memset(b, 0x11, 32);
  TL_EXPECT_OK(t, tl_store_put_receipt(s, "comparison", a, (const uint8_t *)"A", 1, err,
                                       sizeof err));
  TL_EXPECT_OK(t, tl_store_put_receipt(s, "promotion", b, (const uint8_t *)"BB", 2, err,
                                       sizeof err));
  path_of(dir, "receipts", a, ".cbor", path);
  TL_EXPECT(t, access(path, R_OK) == 0);
  TL_EXPECT_OK(t, tl_store_get_receipt(s, b, &doc, &len, err, sizeof err));
  TL_EXPECT(t, len == 2 && memcmp(doc, "BB", 2) == 0);
  free(doc);
  /* Same root, same bytes: a no-op; other bytes: a damaged store. */
  TL_EXPECT_OK(t, tl_store_put_receipt(s, "comparison", a, (const uint8_t *)"A", 1, err,
                                       sizeof err));
  TL_EXPECT_STATUS(t, tl_store_put_receipt(s, "comparison", a, (const uint8_t *)"X", 1,
                                           err, sizeof err),
                   TL_ERR_HASH_MISMATCH);
  TL_EXPECT_OK(t, tl_store_get_receipt(s, a, &doc, &len, err, sizeof err));
  TL_EXPECT(t, len == 1 && doc[0] == 'A');
  free(doc);
  TL_EXPECT_EQ_U64(t, index_lines(t, dir, a), 1);
  TL_EXPECT_EQ_U64(t, index_lines(t, dir, b), 1);
  /* The listing: receipts by root, sorted; anything else in the
   * directory is not a receipt. */
  snprintf(path, sizeof path, "%s/receipts/notes.txt", dir);
  TL_EXPECT(t, (f = fopen(path, "w")) != NULL);
  if (f != NULL) fclose(f);
  TL_EXPECT_OK(t, tl_store_list_receipts(s, &ids, &n, err, sizeof err));
  TL_EXPECT_EQ_U64(t, n, 2);
  if (n == 2) {
    TL_EXPECT_MEM(t, ids[0], b, 32);
    TL_EXPECT_MEM(t, ids[1], a, 32);
  }
  free(ids);
  memset(a, 0x77, 32);
  TL_EXPECT_STATUS(t, tl_store_get_receipt(s, a, &doc, &len, err, sizeof err),
                   TL_ERR_NOT_FOUND);
  tl_store_close(s);
  rm_dir(dir);
}

/* Eight processes put one shared object and one of their own at once:
 * each name is published whole by exactly one of them (one index line),
 * every put succeeds, no temporary file is left. */
static void racing_writers(tl_test_ctx *t) {
  enum { WRITERS = 8 };
  char *dir = make_dir(), err[512] = "";
  static const char shared[] = "the same observation from every writer";
  pid_t pids[WRITERS];
  uint8_t id[32];
  tl_store *s = NULL;
  if (dir == NULL) {
    tl_test_skip(t, "no temporary directory");
    return;
  }
  TL_EXPECT_OK(t, tl_store_open(dir, true, &s, err, sizeof err));
  for (int w = 0; w < WRITERS; w++) {
    pids[w] = fork();
    if (pids[w] == 0) {
      char own[32];
      uint8_t got[32];
      int ok = 1;
      snprintf(own, sizeof own, "writer %d", w);
      for (int k = 0; k < 50; k++)
        ok &= tl_store_put(s, "observation", (const uint8_t *)shared, sizeof shared, got,
                           err, sizeof err) == TL_OK;
      ok &= tl_store_put(s, "observation", (const uint8_t *)own, strlen(own), got, err,
                         sizeof err) == TL_OK;
      _exit(ok ? 0 : 1);
    }
  }
  for (int w = 0; w < WRITERS; w++) {
    int status = -1;
    TL_EXPECT(t, pids[w] > 0 && waitpid(pids[w], &status, 0) == pids[w] &&
                     WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  TL_EXPECT_OK(t, tl_sha256(shared, sizeof shared, id));
  TL_EXPECT_EQ_U64(t, index_lines(t, dir, id), 1);
  TL_EXPECT_EQ_U64(t, index_lines(t, dir, NULL), WRITERS + 1);
  TL_EXPECT_EQ_U64(t, count_entries(dir, "objects"), WRITERS + 1);
  {
    uint8_t *back = NULL;
    size_t len = 0;
    TL_EXPECT_OK(t, tl_store_get(s, id, &back, &len, err, sizeof err));
    TL_EXPECT(t, len == sizeof shared && memcmp(back, shared, len) == 0);
    free(back);
  }
  tl_store_close(s);
  rm_dir(dir);
}

/* What custody refuses: tl_store_open, with and without create, fails
 * with TL_ERR_IO naming the directory and why, and nothing is written
 * where the link points. */
static void expect_refused(tl_test_ctx *t, const char *store, const char *named,
                           const char *why) {
  char err[1024] = "";
  tl_store *s = NULL;
  for (int create = 0; create <= 1; create++) {
    TL_EXPECT_STATUS(t, tl_store_open(store, create, &s, err, sizeof err), TL_ERR_IO);
    TL_EXPECT(t, s == NULL);
    if (strstr(err, named) == NULL || strstr(err, why) == NULL ||
        strstr(err, "refusing") == NULL) {
      tl_test_print(t, err);
      TL_EXPECT(t, !"the message names the directory and why");
    }
    tl_store_close(s);
    s = NULL;
  }
}

static void make_store(tl_test_ctx *t, const char *dir) {
  char err[512] = "";
  tl_store *s = NULL;
  uint8_t id[32];
  TL_EXPECT_OK(t, tl_store_open(dir, true, &s, err, sizeof err));
  if (s != NULL)
    TL_EXPECT_OK(t, tl_store_put(s, "plan", (const uint8_t *)"plan", 4, id, err, sizeof err));
  tl_store_close(s);
}

static void custody(tl_test_ctx *t) {
  char *dir = make_dir(), store[300], other[300], sub[400], named[400];
  if (dir == NULL) {
    tl_test_skip(t, "no temporary directory");
    return;
  }
  snprintf(store, sizeof store, "%s/store", dir);
  snprintf(other, sizeof other, "%s/elsewhere", dir);
  make_store(t, other);
  /* The store itself a link (also written DIR/, which would follow it). */
  TL_EXPECT(t, symlink(other, store) == 0);
  expect_refused(t, store, store, "a symbolic link");
  snprintf(sub, sizeof sub, "%s/", store);
  expect_refused(t, sub, store, "a symbolic link");
  TL_EXPECT(t, unlink(store) == 0);
  /* objects/ or receipts/ a link to another store's. */
  make_store(t, store);
  for (int k = 0; k < 2; k++) {
    const char *name = k == 0 ? "objects" : "receipts";
    char target[400];
    snprintf(sub, sizeof sub, "%s/%s", store, name);
    snprintf(target, sizeof target, "%s/%s", other, name);
    snprintf(named, sizeof named, "%s/%s.real", store, name);
    TL_EXPECT(t, rename(sub, named) == 0);
    TL_EXPECT(t, symlink(target, sub) == 0);
    expect_refused(t, store, sub, "a symbolic link");
    TL_EXPECT(t, unlink(sub) == 0 && rename(named, sub) == 0);
  }
  TL_EXPECT_EQ_U64(t, count_entries(other, "objects"), 1);
  /* Writable by others: the store, or one of its directories. */
  TL_EXPECT(t, chmod(store, 0777) == 0);
  expect_refused(t, store, store, "group or others may write");
  TL_EXPECT(t, chmod(store, 0700) == 0);
  snprintf(sub, sizeof sub, "%s/objects", store);
  TL_EXPECT(t, chmod(sub, 0770) == 0);
  expect_refused(t, store, sub, "group or others may write");
  TL_EXPECT(t, chmod(sub, 0700) == 0);
  /* Another user's (chown needs root). */
  if (geteuid() != 0) {
    tl_test_skip(t, "not root: a store owned by another uid cannot be made here");
  } else {
    snprintf(sub, sizeof sub, "%s/receipts", store);
    TL_EXPECT(t, chown(sub, 12345, 12345) == 0);
    expect_refused(t, store, sub, "belongs to uid 12345");
    TL_EXPECT(t, chown(sub, 0, 0) == 0 && chown(store, 12345, 12345) == 0);
    expect_refused(t, store, store, "belongs to uid 12345");
    TL_EXPECT(t, chown(store, 0, 0) == 0);
  }
  {
    char err[512] = "";
    tl_store *s = NULL;
    TL_EXPECT_OK(t, tl_store_open(store, false, &s, err, sizeof err));
    tl_store_close(s);
  }
  rm_dir(dir);
}

/* index.jsonl names ids: a line naming a path (relative with ../ or
 * absolute), or anything else than the store writes, refuses the store,
 * naming the line. */
static void index_names_ids(tl_test_ctx *t) {
  static const char *const bad[] = {
      "{\"id\":\"../../../../../../../../../../../../../../../../../../tmp/evil\","
      "\"kind\":\"receipt\",\"size\":1,\"what\":\"promotion\"}\n",
      "{\"id\":\"/tmp/./././././././././././././././././././././././././././evil\","
      "\"kind\":\"receipt\",\"size\":1,\"what\":\"promotion\"}\n",
      "{\"id\":\"BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD\","
      "\"kind\":\"object\",\"size\":3,\"what\":\"plan\"}\n",
      "{\"id\":\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\","
      "\"kind\":\"link\",\"size\":3,\"what\":\"plan\"}\n",
      "{\"id\":\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\","
      "\"kind\":\"object\",\"size\":3,\"what\":\"plan\",\"path\":\"/etc/passwd\"}\n",
      "not json\n"};
  char *dir = make_dir(), index[400], err[1024] = "", good[1024] = "";
  size_t good_len = 0;
  tl_store *s = NULL;
  FILE *f;
  uint8_t id[32], want[32];
  if (dir == NULL) {
    tl_test_skip(t, "no temporary directory");
    return;
  }
  make_store(t, dir);
  snprintf(index, sizeof index, "%s/index.jsonl", dir);
  /* The last entry of a kind and label, by id. */
  TL_EXPECT_OK(t, tl_store_open(dir, false, &s, err, sizeof err));
  if (s != NULL) {
    TL_EXPECT_OK(t, tl_store_put_receipt(s, "promotion", (const uint8_t[32]){1},
                                         (const uint8_t *)"P", 1, err, sizeof err));
    memset(want, 0, 32);
    want[0] = 1;
    TL_EXPECT_OK(t, tl_store_last_entry(s, true, "promotion", id, err, sizeof err));
    TL_EXPECT_MEM(t, id, want, 32);
    TL_EXPECT_STATUS(t, tl_store_last_entry(s, false, "promotion", id, err, sizeof err),
                     TL_ERR_NOT_FOUND);
  }
  tl_store_close(s);
  if ((f = fopen(index, "r")) != NULL) {
    good_len = fread(good, 1, sizeof good, f);
    fclose(f);
  }
  TL_EXPECT_EQ_U64(t, index_lines(t, dir, NULL), 2);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    f = fopen(index, "a");
    TL_EXPECT(t, f != NULL && fputs(bad[i], f) >= 0);
    if (f != NULL) fclose(f);
    s = NULL;
    TL_EXPECT_STATUS(t, tl_store_open(dir, false, &s, err, sizeof err),
                     TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT(t, s == NULL);
    if (strstr(err, "index.jsonl: line 3") == NULL || strstr(err, "refusing") == NULL) {
      tl_test_print(t, err);
      TL_EXPECT(t, !"the message names the line");
    }
    /* The line taken out again: the store opens. */
    f = fopen(index, "w");
    TL_EXPECT(t, f != NULL && fwrite(good, 1, good_len, f) == good_len);
    if (f != NULL) fclose(f);
    TL_EXPECT_OK(t, tl_store_open(dir, false, &s, err, sizeof err));
    tl_store_close(s);
  }
  rm_dir(dir);
}

static const tl_test_case cases[] = {TL_CASE(put_get_round_trip), TL_CASE(never_rewritten),
                                     TL_CASE(receipts),           TL_CASE(racing_writers),
                                     TL_CASE(custody),            TL_CASE(index_names_ids)};
TL_SUITE(promote_store, cases);
