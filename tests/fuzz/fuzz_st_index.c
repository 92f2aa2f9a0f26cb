/* libFuzzer target for a sharded safetensors checkpoint on disk
 * (src/tools/st_checkpoint.c over src/host/file.c): the index JSON, the
 * shard files it names, and the cross-checks between them (ST-20..ST-27).
 *
 * The input is the index, then files, each introduced by SEP, a name and a
 * newline: SEP "model-00001-of-00002.safetensors\n" <bytes>. Every file
 * is written into one scratch directory (under /dev/shm when there is one)
 * and tl_st_open_dir opens it, as `tinylm convert` does. A name may say
 * what the file is instead: "fifo:NAME" a FIFO with no writer, "zero:NAME"
 * a symlink to /dev/zero, "dir:NAME" a directory; each must be refused at
 * once (a hang or an endless read is a fuzzer timeout or OOM).
 *
 * Any input gives TL_OK or a typed refusal with a message. An accepted
 * checkpoint's tensors lie inside the mapped file of the shard holding
 * them, their names are unique, and every source's size and SHA-256 are
 * those of its bytes. */
#define _POSIX_C_SOURCE 200809L /* as file.c, which is included below */
#define _DEFAULT_SOURCE 1
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/host/file.c"
#include "../../src/tools/st_checkpoint.c"
#include "../../src/tools/tool_msg.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

#define SEP "\0TLFILE\0"
#define SEP_LEN 8
#define MAX_FILES 8
#define MAX_NAME 64

static char dir[64];
static char made[MAX_FILES + 1][MAX_NAME + 80];
static size_t n_made;

static void remove_dir(void) { rmdir(dir); }

static void scratch_dir(void) {
  struct stat st;
  if (dir[0] != '\0') return;
  snprintf(
      dir, sizeof dir, "%s/tl_fuzz_st_XXXXXX",
      stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp");
  CHECK(mkdtemp(dir) != NULL);
  atexit(remove_dir); /* emptied after every input */
}

static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end) {
  for (; p + SEP_LEN <= end; p++)
    if (memcmp(p, SEP, SEP_LEN) == 0) return p;
  return end;
}

/* A plain name that is not the index's, or nothing. */
static bool usable(const char *name, size_t n) {
  if (n == 0 || n > MAX_NAME || (n == 1 && name[0] == '.') ||
      (n == 2 && memcmp(name, "..", 2) == 0))
    return false;
  for (size_t i = 0; i < n; i++)
    if (name[i] == '/' || name[i] == '\0') return false;
  return !(n == strlen(INDEX_NAME) && memcmp(name, INDEX_NAME, n) == 0);
}

static void put_file(const char *name, size_t n, const uint8_t *bytes,
                     size_t len) {
  char *path = made[n_made];
  FILE *f;
  enum { PLAIN, FIFO, ZERO, DIR } kind = PLAIN;
  if (n > 5 && memcmp(name, "fifo:", 5) == 0)
    kind = FIFO;
  else if (n > 5 && memcmp(name, "zero:", 5) == 0)
    kind = ZERO;
  else if (n > 4 && memcmp(name, "dir:", 4) == 0)
    kind = DIR;
  if (kind != PLAIN) {
    size_t skip = kind == DIR ? 4 : 5;
    name += skip;
    n -= skip;
  }
  if (kind != PLAIN && !usable(name, n)) return;
  snprintf(path, sizeof made[0], "%s/%.*s", dir, (int)n, name);
  for (size_t i = 0; i < n_made; i++)
    if (strcmp(made[i], path) == 0) return; /* the first file of a name wins */
  switch (kind) {
    case FIFO:
      CHECK(mkfifo(path, 0600) == 0);
      break;
    case ZERO:
      CHECK(symlink("/dev/zero", path) == 0);
      break;
    case DIR:
      CHECK(mkdir(path, 0700) == 0);
      break;
    case PLAIN:
      f = fopen(path, "wb");
      CHECK(f != NULL);
      CHECK(fwrite(bytes, 1, len, f) == len);
      CHECK(fclose(f) == 0);
      break;
  }
  n_made++;
}

static void clean(void) {
  for (size_t i = 0; i < n_made; i++)
    if (unlink(made[i]) != 0) CHECK(rmdir(made[i]) == 0);
  n_made = 0;
}

static bool same_name(const tl_st_tensor *a, const tl_st_tensor *b) {
  return a->name_len == b->name_len &&
         memcmp(a->name, b->name, a->name_len) == 0;
}

static void check_accepted(const tl_st_checkpoint *ck) {
  CHECK(ck->sharded && ck->n_sources >= 1);
  for (size_t i = 0; i < ck->n_sources; i++) {
    const tl_st_source *s = &ck->sources[i];
    uint8_t digest[TL_SHA256_DIGEST_LEN];
    CHECK(s->size == s->view.len);
    CHECK(tl_sha256(s->view.data, s->view.len, digest) == TL_OK);
    CHECK(memcmp(digest, s->sha256, sizeof digest) == 0);
  }
  for (size_t i = 0; i < ck->n_tensors; i++) {
    const tl_st_tensor *t = &ck->tensors[i];
    const tl_file_view *v;
    CHECK(t->shard >= 1 && t->shard < ck->n_sources);
    v = &ck->sources[t->shard].view;
    CHECK(t->data >= v->data && t->len <= v->len &&
          (size_t)(t->data - v->data) <= v->len - t->len);
    for (size_t j = 0; j < i; j++) CHECK(!same_name(t, &ck->tensors[j]));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *end = data + size, *p, *next;
  tl_st_checkpoint ck;
  char err[1024];
  tl_status st;
  if (size > (1u << 20)) return 0;
  scratch_dir();
  next = find_sep(data, end);
  put_file(INDEX_NAME, strlen(INDEX_NAME), data, (size_t)(next - data));
  for (p = next; p < end && n_made <= MAX_FILES; p = next) {
    const uint8_t *body = p + SEP_LEN, *nl;
    next = find_sep(body, end);
    nl = memchr(body, '\n', (size_t)(next - body));
    if (nl == NULL) continue;
    if (usable((const char *)body, (size_t)(nl - body)))
      put_file((const char *)body, (size_t)(nl - body), nl + 1,
               (size_t)(next - nl - 1));
  }
  err[0] = '\0';
  st = tl_st_open_dir(dir, &ck, err, sizeof err);
  if (st == TL_OK) {
    check_accepted(&ck);
    tl_st_checkpoint_close(&ck);
  } else {
    CHECK(st == TL_ERR_INVALID_MODEL || st == TL_ERR_INTEGER_OVERFLOW ||
          st == TL_ERR_UNSUPPORTED_QUANTIZATION || st == TL_ERR_IO ||
          st == TL_ERR_OUT_OF_MEMORY);
    CHECK(err[0] != '\0');
    CHECK(ck.n_sources == 0 && ck.sources == NULL);
  }
  clean();
  return 0;
}
