/* tinylm pull and drift: see acquire.h and docs/acquisition.md. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* DT_* */
#include "acquire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cbor_doc.h"
#include "cli.h"
#include "conflict.h"
#include "convert.h"
#include "file.h"
#include "hash/sha256.h"
#include "hub_http.h"
#include "receipt.h"
#include "receipt/node.h"
#include "sha1.h"
#include "tool_msg.h"

#define MAX_PATH 256
#define MAX_TREE_PAGES 10000
/* Bounds on the Hub's JSON answers (issue 23.5: 63 MB of [{},{},...] took
 * 4.8 GB), by what each answer can justify. The revision's model info lists
 * the repository's files, its card data and the spaces using it: 16 MiB
 * and 2^18 values hold thousands of each. A tree page may hold only the
 * entries the tree still may (pull: --max-files; drift, which observes
 * without the allowlist: DRIFT_MAX_ENTRIES), each at most
 * TREE_ENTRY_BYTES of JSON (a path of at most 255 bytes, three hex ids,
 * sizes and keys take about 500) and TREE_ENTRY_VALUES values (about 20). */
#define INFO_MAX_BYTES ((uint64_t)16 << 20)
#define INFO_MAX_VALUES ((size_t)1 << 18)
#define TREE_ENTRY_BYTES 2048
#define TREE_ENTRY_VALUES 32
#define DRIFT_MAX_ENTRIES 10000
#define PROGRESS_BYTES ((uint64_t)8 << 20)
#define LFS_POINTER_PREFIX "version https://git-lfs.github.com/spec/"

void tl_acq_default_limits(tl_acq_limits *l) {
  l->max_files = 64;
  l->max_file_bytes = (uint64_t)64 << 30;
  l->max_total_bytes = (uint64_t)256 << 30;
}

/* ------------------------------------------------------------------------ */
/* Names                                                                    */

static bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

/* A Hub name component: [A-Za-z0-9._-]{1,96}, not "." or "..", no "--"
 * or ".." inside (the Hub refuses them too). */
static bool valid_component(const char *s, size_t n) {
  if (n == 0 || n > 96) return false;
  for (size_t i = 0; i < n; i++) {
    if (!name_char(s[i])) return false;
    if (i > 0 && s[i] == '.' && s[i - 1] == '.') return false;
  }
  return !(s[0] == '.' || s[0] == '-' || s[n - 1] == '.');
}

bool tl_acq_valid_repo_id(const char *s) {
  const char *slash = strchr(s, '/');
  if (slash == NULL) return valid_component(s, strlen(s));
  return valid_component(s, (size_t)(slash - s)) &&
         valid_component(slash + 1, strlen(slash + 1));
}

/* Branches, tags and commits: printable, no "..", no leading or trailing
 * '/', no "//", no '%' (nothing pre-encoded), at most 255 bytes. A '/' is
 * kept (refs/pr/1) and sent encoded as %2F. */
bool tl_acq_valid_revision(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 255 || s[0] == '/' || s[n - 1] == '/' || strstr(s, "..") ||
      strstr(s, "//"))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!name_char(s[i]) && s[i] != '/') return false;
  return true;
}

const char *tl_acq_path_problem(const char *path) {
  size_t n = strlen(path), depth = 1;
  if (n == 0) return "an empty path";
  if (n >= MAX_PATH) return "a path longer than 255 bytes";
  if (path[0] == '/') return "an absolute path";
  if (strchr(path, '%') != NULL) return "a percent-encoded path";
  for (size_t i = 0; i < n; i++) {
    if (path[i] == '/') {
      depth++;
    } else if (!name_char(path[i])) {
      return "a path with characters outside [A-Za-z0-9._-/]";
    }
  }
  for (const char *p = path; *p;) {
    size_t k = strcspn(p, "/");
    if (k == 0 || (k == 1 && p[0] == '.') ||
        (k == 2 && p[0] == '.' && p[1] == '.'))
      return "a path with an empty, '.' or '..' component";
    p += k;
    if (*p == '/') p++;
  }
  if (depth > TL_ACQ_MAX_DEPTH)
    return "nesting too deep (the Qwen3 layout is flat)";
  return NULL;
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* model-00001-of-00002.safetensors */
static bool is_shard(const char *s) {
  static const char pat[] = "model-DDDDD-of-DDDDD.safetensors";
  if (strlen(s) != sizeof pat - 1) return false;
  for (size_t i = 0; pat[i]; i++)
    if (pat[i] == 'D' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pat[i])
      return false;
  return true;
}

const char *tl_acq_allowlist_problem(const char *path) {
  /* What a Qwen3 checkpoint is made of, and the declared harmless extras
   * (Git metadata, the slow tokenizer's files, the model card). */
  static const char *const names[] = {
      "config.json",       "generation_config.json",
      "tokenizer.json",    "tokenizer_config.json",
      "model.safetensors", "model.safetensors.index.json",
      "LICENSE",           "LICENSE.txt",
      "LICENSE.md",        "README.md",
      ".gitattributes",    "vocab.json",
      "merges.txt",        "special_tokens_map.json",
      "added_tokens.json", "NOTICE",
      "USE_POLICY.md"};
  static const char *const code[] = {".py",  ".pyc", ".so", ".dll", ".dylib",
                                     ".exe", ".sh",  ".js", ".wasm"};
  static const char *const pickles[] = {
      ".bin",     ".pkl",    ".pickle", ".pt",  ".pth",  ".ckpt", ".h5",
      ".msgpack", ".joblib", ".npy",    ".npz", ".onnx", ".gguf"};
  static const char *const archives[] = {".zip", ".tar", ".gz",  ".tgz", ".bz2",
                                         ".xz",  ".7z",  ".zst", ".rar"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(path, names[i]) == 0) return NULL;
  if (is_shard(path)) return NULL;
  for (size_t i = 0; i < sizeof code / sizeof code[0]; i++)
    if (has_suffix(path, code[i])) return "executable code";
  for (size_t i = 0; i < sizeof pickles / sizeof pickles[0]; i++)
    if (has_suffix(path, pickles[i]))
      return "a checkpoint format other than safetensors (pickles can run "
             "code)";
  for (size_t i = 0; i < sizeof archives / sizeof archives[0]; i++)
    if (has_suffix(path, archives[i])) return "an archive";
  return "not in the Qwen3 allowlist";
}

static bool is_hex(const char *s, size_t n) {
  if (s == NULL || strlen(s) != n) return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

/* ------------------------------------------------------------------------ */
/* The tree                                                                 */

typedef struct entry {
  char path[MAX_PATH];
  uint64_t size;
  bool lfs;
  char oid[41];     /* Git blob id (for LFS files: of the pointer) */
  char lfs_oid[65]; /* SHA-256 of the content */
  uint8_t sha256[32];
} entry;

typedef struct tree {
  entry *e;
  size_t n, cap;
  uint64_t total;
  size_t n_entries; /* files and directories */
} tree;

/* Everything pull refuses in a tree entry, in order: an unsafe path, too
 * many entries, a non-file, a name outside the allowlist, a duplicate, a
 * malformed size or oid, the size limits, a malformed LFS record. */
static tl_status judge_entry(tree *t, const json_t *item,
                             const tl_acq_limits *l, char *err, size_t cap) {
  const char *type = json_string_value(json_object_get(item, "type"));
  const char *path = json_string_value(json_object_get(item, "path"));
  const char *why, *oid, *lfs_oid;
  const json_t *size = json_object_get(item, "size"), *lfs;
  if (path == NULL || type == NULL)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "a tree entry without a path or a type");
  if ((why = tl_acq_path_problem(path)) != NULL)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL, "tree entry '%.255s': %s",
                   path, why);
  if (++t->n_entries > l->max_files)
    return tl_fail(err, cap, TL_ERR_BOUNDS,
                   "the tree has more than %llu entries (--max-files)",
                   (unsigned long long)l->max_files);
  if (strcmp(type, "directory") == 0) return TL_OK;
  if (strcmp(type, "file") != 0)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "tree entry '%s' is a %.32s: symlinks, submodules and other "
                   "non-files are refused",
                   path, type);
  if ((why = tl_acq_allowlist_problem(path)) != NULL)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "'%s' is refused: %s (nothing was downloaded)", path, why);
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->e[i].path, path) == 0)
      return tl_fail(err, cap, TL_ERR_INVALID_MODEL, "'%s' is listed twice",
                     path);
  oid = json_string_value(json_object_get(item, "oid"));
  if (!json_is_integer(size) || json_integer_value(size) < 0 || oid == NULL ||
      !is_hex(oid, 40))
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "tree entry '%s' lacks a size or a 40-hex oid", path);
  if ((uint64_t)json_integer_value(size) > l->max_file_bytes)
    return tl_fail(err, cap, TL_ERR_BOUNDS,
                   "'%s' declares %lld bytes, over the %llu-byte limit "
                   "(--max-file-bytes)",
                   path, (long long)json_integer_value(size),
                   (unsigned long long)l->max_file_bytes);
  if (t->total + (uint64_t)json_integer_value(size) > l->max_total_bytes)
    return tl_fail(
        err, cap, TL_ERR_BOUNDS,
        "the files add up to more than %llu bytes (--max-total-bytes)",
        (unsigned long long)l->max_total_bytes);
  lfs = json_object_get(item, "lfs");
  lfs_oid = json_string_value(json_object_get(lfs, "oid"));
  if (lfs != NULL &&
      (lfs_oid == NULL || !is_hex(lfs_oid, 64) ||
       !json_equal(json_object_get(lfs, "size"), (json_t *)size)))
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "tree entry '%s': its LFS record needs a 64-hex oid and the "
                   "file's size",
                   path);
  return TL_OK;
}

/* Adds a tree entry: judged by pull (l non-NULL), only observed by drift
 * (l NULL: anything but a directory is recorded as it stands, a non-file
 * with its type in place of an oid, so that it shows as changed or added). */
static tl_status tree_add(tree *t, const json_t *item, const tl_acq_limits *l,
                          char *err, size_t cap) {
  const char *type = json_string_value(json_object_get(item, "type"));
  const char *path = json_string_value(json_object_get(item, "path"));
  const char *oid = json_string_value(json_object_get(item, "oid"));
  const char *lfs_oid =
      json_string_value(json_object_get(json_object_get(item, "lfs"), "oid"));
  const json_t *size = json_object_get(item, "size");
  entry *e;
  tl_status st = l != NULL ? judge_entry(t, item, l, err, cap) : TL_OK;
  if (l == NULL && ++t->n_entries > DRIFT_MAX_ENTRIES)
    return tl_fail(err, cap, TL_ERR_BOUNDS,
                   "the tree has more than %d entries", DRIFT_MAX_ENTRIES);
  if (st != TL_OK || path == NULL || type == NULL ||
      strcmp(type, "directory") == 0)
    return st;
  if (t->n == t->cap) {
    size_t want = t->cap ? 2 * t->cap : 16;
    entry *grown = realloc(t->e, want * sizeof *grown);
    if (grown == NULL)
      return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
    t->e = grown;
    t->cap = want;
  }
  e = &t->e[t->n++];
  memset(e, 0, sizeof *e);
  snprintf(e->path, sizeof e->path, "%s", path);
  e->size = json_is_integer(size) && json_integer_value(size) > 0
                ? (uint64_t)json_integer_value(size)
                : 0;
  t->total += e->size;
  snprintf(e->oid, sizeof e->oid, "%s",
           strcmp(type, "file") != 0 ? type
           : oid != NULL             ? oid
                                     : "");
  e->lfs = lfs_oid != NULL && is_hex(lfs_oid, 64);
  if (e->lfs) snprintf(e->lfs_oid, sizeof e->lfs_oid, "%s", lfs_oid);
  return TL_OK;
}

static int entry_order(const void *a, const void *b) {
  /* Small files (not in LFS) first: the license is decided before any
   * weight is fetched. */
  const entry *x = a, *y = b;
  if (x->lfs != y->lfs) return x->lfs ? 1 : -1;
  return strcmp(x->path, y->path);
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                 */

typedef struct ctx {
  tl_hub hub;
  const char *repo_id;
  char commit[41];
  char staging[4200]; /* DIR.partial, for messages and the converter */
  /* Every write, rename and removal in DIR.partial goes through
   * staging_fd, opened once (O_NOFOLLOW) and checked to be this user's;
   * DIR.partial and DIR are named only relative to parent_fd. */
  int parent_fd, staging_fd;
  char out_name[256], staging_name[sizeof "" + 256 + 8];
  dev_t staging_dev;
  ino_t staging_ino;
  bool transient;    /* the failure was one a rerun may get past */
  bool staging_ours; /* staging_fd is DIR.partial, this user's, marked */
  bool progress;     /* forced on (--progress) */
  uint64_t fetched;
  size_t reused;
  uint8_t *conflict;
  size_t conflict_len;
} ctx;

/* The model info at rev: the full commit it names, and the license id the
 * Hub read from the model card (NULL when none). */
static tl_status resolve(ctx *c, const char *rev, char commit[41],
                         char *license, size_t license_cap, char *err,
                         size_t cap) {
  char url[2048], qrev[800];
  tl_hub_headers hd;
  json_t *info;
  const char *sha, *lic;
  bool transport;
  tl_status st;
  if (!tl_hub_quote(rev, false, qrev, sizeof qrev))
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT, "revision too long");
  snprintf(url, sizeof url, "%s/api/models/%s/revision/%s", c->hub.endpoint,
           c->repo_id, qrev);
  st = tl_hub_get_json(&c->hub, url, INFO_MAX_BYTES, INFO_MAX_VALUES, &info,
                       &hd, &transport, err, cap);
  if (st != TL_OK) {
    c->transient |= transport;
    return st;
  }
  sha = json_string_value(json_object_get(info, "sha"));
  if (sha == NULL || !is_hex(sha, 40)) {
    json_decref(info);
    return tl_fail(err, cap, TL_ERR_IO,
                   "the model info for '%s' at '%s' has no 40-hex commit sha",
                   c->repo_id, rev);
  }
  if (is_hex(rev, 40) && strcmp(rev, sha) != 0) {
    json_decref(info);
    return tl_fail(err, cap, TL_ERR_IO,
                   "asked for commit %s, the Hub answered %s", rev, sha);
  }
  memcpy(commit, sha, 41);
  lic = json_string_value(
      json_object_get(json_object_get(info, "cardData"), "license"));
  if (license != NULL)
    snprintf(license, license_cap, "%s", lic != NULL ? lic : "");
  json_decref(info);
  return TL_OK;
}

/* Every page of the tree at the commit (Link: rel="next"). */
static tl_status list_tree(ctx *c, const char *commit, const tl_acq_limits *l,
                           tree *t, char *err, size_t cap) {
  char *url = malloc(4096);
  tl_status st = TL_OK;
  if (url == NULL)
    return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
  snprintf(url, 4096, "%s/api/models/%s/tree/%s?recursive=true",
           c->hub.endpoint, c->repo_id, commit);
  for (int page = 0; st == TL_OK; page++) {
    tl_hub_headers hd;
    json_t *doc, *item;
    bool transport;
    size_t i;
    size_t ep = strlen(c->hub.endpoint);
    if (page == MAX_TREE_PAGES) {
      st = tl_fail(err, cap, TL_ERR_BOUNDS, "the tree has more than %d pages",
                   MAX_TREE_PAGES);
      break;
    }
    /* One entry more than allowed gets its own message (tree_add). */
    size_t room = (l != NULL ? l->max_files : DRIFT_MAX_ENTRIES) + 1 -
                  (t->n_entries < (l != NULL ? l->max_files : DRIFT_MAX_ENTRIES)
                       ? t->n_entries
                       : (l != NULL ? l->max_files : DRIFT_MAX_ENTRIES));
    st = tl_hub_get_json(&c->hub, url,
                         (uint64_t)room * TREE_ENTRY_BYTES + 4096,
                         room * TREE_ENTRY_VALUES + 16, &doc, &hd, &transport,
                         err, cap);
    if (st != TL_OK) {
      c->transient |= transport;
      break;
    }
    if (!json_is_array(doc)) {
      json_decref(doc);
      st = tl_fail(err, cap, TL_ERR_IO, "the tree listing is not a JSON array");
      break;
    }
    json_array_foreach(doc, i, item) {
      st = tree_add(t, item, l, err, cap);
      if (st != TL_OK) break;
    }
    json_decref(doc);
    if (st != TL_OK || hd.next[0] == '\0') break;
    /* The next page stays on the endpoint. */
    if (strncmp(hd.next, c->hub.endpoint, ep) != 0 || hd.next[ep] != '/') {
      st = tl_fail(err, cap, TL_ERR_IO,
                   "the tree's next page is not on the endpoint");
      break;
    }
    snprintf(url, 4096, "%s", hd.next);
  }
  free(url);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Files                                                                    */

typedef struct sink {
  int fd;
  tl_sha256_ctx sha;
  tl_sha1_ctx blob;
  uint64_t have;
  uint8_t head[64];
  size_t head_len;
  const char *path;
  uint64_t size, offset;     /* declared; where this transfer began */
  tl_cli_progress *progress; /* NULL: none */
} sink;

static void sink_init(sink *s, int fd, const entry *e) {
  char header[40];
  int n =
      snprintf(header, sizeof header, "blob %llu", (unsigned long long)e->size);
  memset(s, 0, sizeof *s);
  s->fd = fd;
  s->path = e->path;
  s->size = e->size;
  tl_sha256_init(&s->sha);
  tl_sha1_init(&s->blob);
  tl_sha1_update(&s->blob, header, (size_t)n + 1); /* with its NUL */
}

static void sink_hash(sink *s, const uint8_t *p, size_t n) {
  if (s->head_len < sizeof s->head) {
    size_t k =
        sizeof s->head - s->head_len < n ? sizeof s->head - s->head_len : n;
    memcpy(s->head + s->head_len, p, k);
    s->head_len += k;
  }
  (void)tl_sha256_update(&s->sha, p, n);
  tl_sha1_update(&s->blob, p, n);
  s->have += n;
}

static tl_status to_file(void *arg, const uint8_t *p, size_t n, char *err,
                         size_t cap) {
  sink *s = arg;
  size_t done = 0;
  while (done < n) {
    ssize_t k = write(s->fd, p + done, n - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0)
      return tl_fail(err, cap, TL_ERR_IO, "%s: write failed: %s", s->path,
                     k < 0 ? strerror(errno) : "no progress");
    done += (size_t)k;
  }
  sink_hash(s, p, n);
  if (s->progress != NULL)
    tl_cli_progress_update(s->progress, "bytes", s->have, s->size,
                           s->have - s->offset, s->size - s->offset);
  return TL_OK;
}

/* Hashes what fd holds from its start (a file kept by an earlier run). */
static tl_status hash_existing(sink *s, char *err, size_t cap) {
  enum { CHUNK = 1 << 20 };
  uint8_t *buf = malloc(CHUNK);
  tl_status st = TL_OK;
  if (buf == NULL)
    return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
  for (;;) {
    ssize_t k = read(s->fd, buf, CHUNK);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0)
      st = tl_fail(err, cap, TL_ERR_IO, "%s: read failed: %s", s->path,
                   strerror(errno));
    if (k <= 0) break;
    sink_hash(s, buf, (size_t)k);
  }
  free(buf);
  return st;
}

static void digest_hex(tl_sha256_ctx *sha, tl_sha1_ctx *blob,
                       uint8_t sha256[32], char sha_hex[65],
                       char blob_hex[41]) {
  uint8_t b[20];
  (void)tl_sha256_final(sha, sha256);
  tl_sha1_final(blob, b);
  tl_hex_encode(sha256, 32, sha_hex);
  tl_hex_encode(b, 20, blob_hex);
}

/* The bytes in s are the entry's: size, then the LFS oid or the blob id. */
static tl_status check_content(sink *s, entry *e, char *err, size_t cap) {
  char sha_hex[65], blob_hex[41];
  bool pointer =
      s->head_len >= sizeof LFS_POINTER_PREFIX - 1 &&
      memcmp(s->head, LFS_POINTER_PREFIX, sizeof LFS_POINTER_PREFIX - 1) == 0;
  if (pointer && s->have < 1024)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "'%s': the server sent a Git LFS pointer file where the "
                   "content was expected",
                   e->path);
  if (s->have != e->size)
    return tl_fail(err, cap, TL_ERR_HASH_MISMATCH,
                   "'%s': %llu bytes received, the tree declares %llu", e->path,
                   (unsigned long long)s->have, (unsigned long long)e->size);
  digest_hex(&s->sha, &s->blob, e->sha256, sha_hex, blob_hex);
  if (e->lfs && strcmp(sha_hex, e->lfs_oid) != 0)
    return tl_fail(err, cap, TL_ERR_HASH_MISMATCH,
                   "'%s': SHA-256 %s, the tree's LFS oid is %s", e->path,
                   sha_hex, e->lfs_oid);
  if (!e->lfs && strcmp(blob_hex, e->oid) != 0)
    return tl_fail(err, cap, TL_ERR_HASH_MISMATCH,
                   "'%s': Git blob id %s, the tree says %s", e->path, blob_hex,
                   e->oid);
  return TL_OK;
}

/* A conflict record: the tree said one thing, a response header another. */
static tl_status changed(ctx *c, const entry *e, const char *header,
                         const char *want, const char *got, char *err,
                         size_t cap) {
  tl_conflict rec;
  char tree_name[64], header_name[MAX_PATH + 64], message[600];
  json_t *a = json_string(want), *b = json_string(got);
  tl_status st;
  snprintf(tree_name, sizeof tree_name, "tree@%.12s", c->commit);
  snprintf(header_name, sizeof header_name, "%s (%s)", header, e->path);
  snprintf(message, sizeof message,
           "the repository changed during the transaction: for '%s' the "
           "tree at %s says %s, the %s header says %s",
           e->path, c->commit, want, header, got);
  memset(&rec, 0, sizeof rec);
  rec.kind = "source_changed";
  rec.field = e->path;
  rec.message = message;
  rec.n_sources = 2;
  rec.sources[0].file = tree_name;
  rec.sources[0].value = a;
  rec.sources[1].file = header_name;
  rec.sources[1].value = b;
  free(c->conflict);
  c->conflict = NULL;
  st = tl_conflict_encode(&rec, &c->conflict, &c->conflict_len);
  json_decref(a);
  json_decref(b);
  if (st != TL_OK)
    return tl_fail(err, cap, st, "conflict record encoding failed");
  return tl_fail(err, cap, TL_ERR_CONFLICT, "conflict source_changed: %s",
                 message);
}

static tl_status check_headers(ctx *c, const entry *e, const tl_hub_headers *hd,
                               char *err, size_t cap) {
  char size_text[32];
  if (hd->repo_commit[0] && strcmp(hd->repo_commit, c->commit) != 0)
    return changed(c, e, "X-Repo-Commit", c->commit, hd->repo_commit, err, cap);
  if (e->lfs && hd->linked_etag[0] && strcmp(hd->linked_etag, e->lfs_oid) != 0)
    return changed(c, e, "X-Linked-Etag", e->lfs_oid, hd->linked_etag, err,
                   cap);
  if (!e->lfs && is_hex(hd->etag, 40) && strcmp(hd->etag, e->oid) != 0)
    return changed(c, e, "ETag", e->oid, hd->etag, err, cap);
  if (hd->linked_size != -1 &&
      (hd->linked_size < 0 || (uint64_t)hd->linked_size != e->size)) {
    char want[32];
    snprintf(want, sizeof want, "%llu", (unsigned long long)e->size);
    snprintf(size_text, sizeof size_text, "%lld", (long long)hd->linked_size);
    return changed(c, e, "X-Linked-Size", want,
                   hd->linked_size < 0 ? "(malformed)" : size_text, err, cap);
  }
  return TL_OK;
}

static tl_status sync_close(int fd, const char *path, char *err, size_t cap) {
  if (fsync(fd) != 0) {
    close(fd);
    return tl_fail(err, cap, TL_ERR_IO, "%s: fsync failed: %s", path,
                   strerror(errno));
  }
  if (close(fd) != 0)
    return tl_fail(err, cap, TL_ERR_IO, "%s: close failed: %s", path,
                   strerror(errno));
  return TL_OK;
}

/* One file into the staging directory, as NAME.part and then NAME. A
 * verified NAME from an earlier run is kept after it verifies again; a
 * NAME.part is resumed from its end (its prefix is hashed, the whole is
 * verified); a resumed file that fails verification is fetched again from
 * the start once. Names are opened, renamed and removed relative to
 * c->staging_fd (the allowlist keeps them flat: no '/'). */
static tl_status fetch_file(ctx *c, entry *e, bool may_resume, char *err,
                            size_t cap) {
  char final[4600], part[MAX_PATH + 8], url[2048], qpath[800];
  tl_hub_headers hd;
  tl_cli_progress progress;
  bool transport;
  uint64_t offset = 0;
  sink s;
  int fd;
  tl_status st;
  const int dfd = c->staging_fd;
  if (strchr(e->path, '/') != NULL)
    return tl_fail(err, cap, TL_ERR_INTERNAL_INVARIANT,
                   "'%s': a nested path reached the staging directory",
                   e->path);
  snprintf(final, sizeof final, "%s/%s", c->staging, e->path);
  snprintf(part, sizeof part, "%s.part", e->path);
  fd = openat(dfd, e->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    sink_init(&s, fd, e);
    st = hash_existing(&s, err, cap);
    close(fd);
    if (st == TL_OK && check_content(&s, e, err, cap) == TL_OK) {
      c->reused++;
      return TL_OK;
    }
    if (unlinkat(dfd, e->path, 0) != 0)
      return tl_fail(err, cap, TL_ERR_IO, "%s: cannot remove: %s", final,
                     strerror(errno));
  }
  fd = openat(dfd, part, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
              0644);
  if (fd < 0)
    return tl_fail(err, cap, TL_ERR_IO, "%s.part: cannot open: %s", final,
                   strerror(errno));
  sink_init(&s, fd, e);
  if (may_resume) {
    st = hash_existing(&s, err, cap);
    if (st != TL_OK) {
      close(fd);
      return st;
    }
    offset = s.have;
  }
  if (!may_resume || offset >= e->size) {
    if (ftruncate(fd, 0) != 0) {
      close(fd);
      return tl_fail(err, cap, TL_ERR_IO, "%s.part: cannot truncate: %s", final,
                     strerror(errno));
    }
    sink_init(&s, fd, e);
    offset = 0;
  }
  if (!tl_hub_quote(e->path, true, qpath, sizeof qpath)) qpath[0] = '\0';
  snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", c->hub.endpoint, c->repo_id,
           c->commit, qpath);
  /* Large files show bytes, rate and ETA on stderr. */
  s.offset = offset;
  if (e->size >= PROGRESS_BYTES) {
    tl_cli_progress_begin(&progress, e->path, c->progress);
    s.progress = &progress;
  }
  st = tl_hub_get(&c->hub, url, offset, e->size, to_file, &s, &hd, &transport,
                  err, cap);
  if (s.progress != NULL) tl_cli_progress_end(&progress);
  if (st != TL_OK) {
    size_t len = strlen(err);
    snprintf(err + len, cap - len, " (fetching '%s', %llu of %llu bytes)",
             e->path, (unsigned long long)s.have, (unsigned long long)e->size);
  }
  if (st == TL_OK) st = check_headers(c, e, &hd, err, cap);
  if (st == TL_OK) st = check_content(&s, e, err, cap);
  if (st == TL_ERR_HASH_MISMATCH && offset > 0) {
    /* The kept prefix may be what differs: start over once. */
    close(fd);
    unlinkat(dfd, part, 0);
    return fetch_file(c, e, false, err, cap);
  }
  if (st != TL_OK) {
    close(fd);
    if (transport)
      c->transient = true; /* resumable: keep the part */
    else
      unlinkat(dfd, part, 0);
    return st;
  }
  c->fetched += s.have - offset;
  st = sync_close(fd, part, err, cap);
  if (st == TL_OK && renameat(dfd, part, dfd, e->path) != 0)
    st = tl_fail(err, cap, TL_ERR_IO, "%s.part: cannot rename: %s", final,
                 strerror(errno));
  return st;
}

/* ------------------------------------------------------------------------ */
/* The staging directory (DIR.partial)                                      */

/* Marks DIR.partial as this program's: a directory of that name without
 * it is the user's and is never touched. */
#define STAGING_MARK ".tinylm-pull"

static bool expected_name(const tree *t, const char *name) {
  if (strcmp(name, STAGING_MARK) == 0) return true;
  for (size_t i = 0; i < t->n; i++) {
    size_t n = strlen(t->e[i].path);
    if (strcmp(name, t->e[i].path) == 0 ||
        (strncmp(name, t->e[i].path, n) == 0 && strcmp(name + n, ".part") == 0))
      return true;
  }
  return false;
}

/* Removes every entry of the staging directory that t does not name (t
 * NULL: all), through its descriptor: whatever path it has by now, only
 * what is inside it is removed (an empty directory too, nothing deeper). */
static tl_status clean_dir(ctx *c, const tree *t, char *err, size_t cap) {
  int fd = fcntl(c->staging_fd, F_DUPFD_CLOEXEC, 0);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *de;
  tl_status st = TL_OK;
  if (d == NULL) {
    if (fd >= 0) close(fd);
    return tl_fail(err, cap, TL_ERR_IO, "%s: cannot list: %s", c->staging,
                   strerror(errno));
  }
  rewinddir(d);
  while ((de = readdir(d)) != NULL) {
    struct stat sb;
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (t != NULL &&
        fstatat(c->staging_fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(sb.st_mode) && expected_name(t, de->d_name))
      continue;
    if (unlinkat(c->staging_fd, de->d_name, 0) != 0 &&
        ((errno != EISDIR && errno != EPERM) ||
         unlinkat(c->staging_fd, de->d_name, AT_REMOVEDIR) != 0) &&
        st == TL_OK)
      st = tl_fail(err, cap, TL_ERR_IO, "%s/%s: cannot remove: %s", c->staging,
                   de->d_name, strerror(errno));
  }
  closedir(d);
  return st;
}

/* Splits DIR into its parent (opened as c->parent_fd) and its last
 * component; DIR.partial is named relative to the parent from then on. */
static tl_status open_parent(ctx *c, const char *dir, size_t dir_len, char *err,
                             size_t cap) {
  char parent[4100];
  size_t base = dir_len;
  while (base > 0 && dir[base - 1] != '/') base--;
  if (dir_len - base == 0 || dir_len - base >= sizeof c->out_name ||
      (dir_len - base == 1 && dir[base] == '.') ||
      (dir_len - base == 2 && dir[base] == '.' && dir[base + 1] == '.'))
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "-o %.*s: name the new directory itself (not '.', '..' or "
                   "'/', at most 255 bytes)",
                   (int)dir_len, dir);
  snprintf(c->out_name, sizeof c->out_name, "%.*s", (int)(dir_len - base),
           dir + base);
  snprintf(c->staging_name, sizeof c->staging_name, "%s.partial", c->out_name);
  if (base == 0)
    snprintf(parent, sizeof parent, ".");
  else
    snprintf(parent, sizeof parent, "%.*s", (int)(base == 1 ? 1 : base - 1),
             dir);
  c->parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (c->parent_fd < 0)
    return tl_fail(err, cap, TL_ERR_IO, "%s: cannot open: %s", parent,
                   strerror(errno));
  return TL_OK;
}

/* Adopts an existing DIR.partial from an earlier run, only when it is this
 * user's (tl_file_private_dir), not a link, and carries the mark (a
 * regular file, this user's); anything else is refused, untouched. */
static tl_status adopt_staging(ctx *c, char *err, size_t cap) {
  struct stat sb;
  const char *why;
  char why_buf[96];
  int fd = openat(c->parent_fd, c->staging_name,
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return TL_OK;
    if (errno == ELOOP || errno == ENOTDIR)
      return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                     "%s exists and is a symbolic link or not a directory; "
                     "move it away (nothing was changed)",
                     c->staging);
    return tl_fail(err, cap, TL_ERR_IO, "%s: cannot open: %s", c->staging,
                   strerror(errno));
  }
  if ((why = tl_file_private_dir(fd, &sb, why_buf, sizeof why_buf)) != NULL) {
    close(fd);
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "%s exists and is not yours to resume: %s; move it away "
                   "(nothing was changed)",
                   c->staging, why);
  }
  c->staging_dev = sb.st_dev;
  c->staging_ino = sb.st_ino;
  if (fstatat(fd, STAGING_MARK, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
    close(fd);
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "%s exists and was not made by tinylm pull; move it away "
                   "(nothing was changed)",
                   c->staging);
  }
  c->staging_fd = fd;
  c->staging_ours = true;
  return TL_OK;
}

/* Whether DIR.partial still names the directory staging_fd is (it may have
 * been renamed or replaced while the pull waited on the network). */
static bool staging_in_place(const ctx *c) {
  struct stat sb;
  return fstatat(c->parent_fd, c->staging_name, &sb, AT_SYMLINK_NOFOLLOW) ==
             0 &&
         S_ISDIR(sb.st_mode) && sb.st_dev == c->staging_dev &&
         sb.st_ino == c->staging_ino;
}

static tl_status staging_moved(const ctx *c, char *err, size_t cap) {
  return tl_fail(err, cap, TL_ERR_IO,
                 "%s was moved or replaced during the pull (not by this "
                 "program); nothing was written through the new name",
                 c->staging);
}

/* Creates DIR.partial (never adopting one that appeared meanwhile), opens
 * it without following links, checks it is this user's, marks it. */
static tl_status make_staging(ctx *c, char *err, size_t cap) {
  struct stat sb;
  const char *why;
  char why_buf[96];
  int fd;
  if (mkdirat(c->parent_fd, c->staging_name, 0755) != 0)
    return tl_fail(err, cap,
                   errno == EEXIST ? TL_ERR_INVALID_ARGUMENT : TL_ERR_IO,
                   "%s: cannot create: %s%s", c->staging, strerror(errno),
                   errno == EEXIST ? " (it appeared during the pull; nothing "
                                     "was changed)"
                                   : "");
  fd = openat(c->parent_fd, c->staging_name,
              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return tl_fail(err, cap, TL_ERR_IO,
                   "%s: cannot open what was just created: %s", c->staging,
                   strerror(errno));
  if ((why = tl_file_private_dir(fd, &sb, why_buf, sizeof why_buf)) != NULL) {
    close(fd);
    return tl_fail(err, cap, TL_ERR_IO,
                   "%s was replaced right after its creation: %s", c->staging,
                   why);
  }
  c->staging_fd = fd;
  c->staging_dev = sb.st_dev;
  c->staging_ino = sb.st_ino;
  fd = openat(c->staging_fd, STAGING_MARK,
              O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    tl_status st =
        tl_fail(err, cap, TL_ERR_IO, "%s/" STAGING_MARK ": cannot create: %s",
                c->staging, strerror(errno));
    if (staging_in_place(c))
      unlinkat(c->parent_fd, c->staging_name, AT_REMOVEDIR);
    close(c->staging_fd);
    c->staging_fd = -1;
    return st;
  }
  close(fd);
  c->staging_ours = true;
  return TL_OK;
}

/* Empties the staging directory through its descriptor and removes its
 * name only while that name is still it (rmdir removes nothing else). */
static void remove_staging(ctx *c) {
  char ignored[256];
  if (clean_dir(c, NULL, ignored, sizeof ignored) == TL_OK &&
      staging_in_place(c))
    unlinkat(c->parent_fd, c->staging_name, AT_REMOVEDIR);
}

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1u << 1)
#endif

/* DIR.partial and DIR trade names in one step (renameat2 RENAME_EXCHANGE),
 * so that a reader of DIR sees the old pull or the new one, never a mix. */
static int exchange_names(const ctx *c) {
#ifdef SYS_renameat2
  return (int)syscall(SYS_renameat2, c->parent_fd, c->staging_name,
                      c->parent_fd, c->out_name, RENAME_EXCHANGE);
#else
  errno = ENOSYS;
  return -1;
#endif
}

/* Moves DIR.partial to DIR (exchange: swaps the two, DIR being an earlier
 * pull): the mark goes first (a DIR never carries it), and comes back when
 * the rename fails (a concurrent writer filled DIR; rename refuses a
 * non-empty directory). The rename reaches the disk with the parent
 * directory. */
static tl_status land_staging(ctx *c, const char *out, bool exchange,
                              char *err, size_t cap) {
  int fd;
  if (fsync(c->staging_fd) != 0)
    return tl_fail(err, cap, TL_ERR_IO, "%s: fsync failed: %s", c->staging,
                   strerror(errno));
  if (!staging_in_place(c)) return staging_moved(c, err, cap);
  if (unlinkat(c->staging_fd, STAGING_MARK, 0) == 0 &&
      (exchange ? exchange_names(c)
                : renameat(c->parent_fd, c->staging_name, c->parent_fd,
                           c->out_name)) == 0) {
    if (fsync(c->parent_fd) != 0)
      return tl_fail(err, cap, TL_ERR_IO, "%s: fsync of its parent failed: %s",
                     out, strerror(errno));
    return TL_OK;
  }
  tl_fail(err, cap, TL_ERR_IO, "cannot %s %s %s %s: %s%s",
          exchange ? "swap" : "move", c->staging, exchange ? "with" : "to", out,
          strerror(errno),
          exchange && (errno == ENOSYS || errno == EINVAL)
              ? " (this file system cannot swap directories in one step: "
                "pull into a new directory instead)"
              : "");
  fd = openat(c->staging_fd, STAGING_MARK,
              O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd >= 0) close(fd); /* still ours */
  return TL_ERR_IO;
}

/* ------------------------------------------------------------------------ */
/* License                                                                  */

static bool license_id_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64) return false;
  for (size_t i = 0; i < n; i++)
    if (!name_char(s[i]) && s[i] != '+') return false;
  return true;
}

/* license: ID in the model card's YAML front matter ("---" lines). */
/* README.md's front matter license, read through the staging directory's
 * descriptor. */
static void card_license(int dfd, char *out, size_t cap) {
  struct {
    const uint8_t *data;
    size_t len;
  } v;
  struct stat sb;
  void *map;
  int fd = openat(dfd, "README.md", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  out[0] = '\0';
  if (fd < 0) return;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0 ||
      (map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) ==
          MAP_FAILED) {
    close(fd);
    return;
  }
  close(fd);
  memset(&v, 0, sizeof v);
  v.data = map;
  v.len = (size_t)sb.st_size;
  if (v.len >= 4 && memcmp(v.data, "---", 3) == 0 &&
      (v.data[3] == '\n' || v.data[3] == '\r')) {
    const char *p = (const char *)v.data + 4,
               *end = (const char *)v.data + v.len;
    while (p < end) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
      if (n > 0 && p[n - 1] == '\r') n--;
      if (n == 3 && memcmp(p, "---", 3) == 0) break;
      if (n > 8 && memcmp(p, "license:", 8) == 0) {
        const char *val = p + 8;
        size_t k = n - 8;
        while (k > 0 && (*val == ' ' || *val == '\t')) val++, k--;
        while (k > 0 && (val[k - 1] == ' ' || val[k - 1] == '\t')) k--;
        if (k >= 2 && (val[0] == '"' || val[0] == '\'') && val[k - 1] == val[0])
          val++, k -= 2;
        if (k < cap) {
          memcpy(out, val, k);
          out[k] = '\0';
        }
        if (!license_id_ok(out)) out[0] = '\0';
        break;
      }
      if (nl == NULL) break;
      p = nl + 1;
    }
  }
  munmap(map, v.len);
}

/* ------------------------------------------------------------------------ */
/* Receipts: node graphs in the layout of run receipts (docs/receipts.md)   */

/* A node as pull and drift build it: its metadata as JSON, sealed and
 * written by the one graph writer (tl_graph_receipt_encode). */
typedef struct rnode {
  const char *type;
  json_t *meta; /* owned */
  size_t kids[6];
  size_t n_kids;
} rnode;

static void emit_json(tl_cbor_writer *w, const void *arg) {
  tl_cbor_put_json(w, (const json_t *)arg);
}

/* The nodes (the last is the root) and the timings, encoded
 * (*doc: malloc). */
static tl_status encode_graph(const char *format, const rnode *nodes, size_t n,
                              const json_t *timings, uint8_t **doc, size_t *len,
                              uint8_t root[32], char *err, size_t cap) {
  tl_graph_node g[6];
  uint8_t *meta[6] = {NULL}, *times = NULL;
  size_t times_len = 0;
  tl_status st = n <= 6 ? TL_OK : TL_ERR_INTERNAL_INVARIANT;
  memset(g, 0, sizeof g);
  *doc = NULL;
  *len = 0;
  for (size_t i = 0; i < n && st == TL_OK; i++) {
    st = nodes[i].meta == NULL ? TL_ERR_OUT_OF_MEMORY
                               : tl_cbor_encode_alloc(emit_json, nodes[i].meta,
                                                      &meta[i], &g[i].meta_len);
    g[i].type = nodes[i].type;
    g[i].meta = meta[i];
    g[i].n_kids = nodes[i].n_kids;
    memcpy(g[i].kids, nodes[i].kids, sizeof nodes[i].kids);
  }
  if (st == TL_OK)
    st = timings == NULL ? TL_ERR_OUT_OF_MEMORY
                         : tl_cbor_encode_alloc(emit_json, timings, &times,
                                                &times_len);
  if (st == TL_OK)
    st = tl_graph_receipt_encode(format, g, n, times, times_len, doc, len, root);
  for (size_t i = 0; i < n && i < 6; i++) free(meta[i]);
  free(times);
  if (st != TL_OK)
    return tl_fail(err, cap, TL_ERR_INTERNAL_INVARIANT,
                   "receipt encoding failed (%s)", tl_status_name(st));
  return TL_OK;
}

/* The same, written to path atomically. */
static tl_status write_graph(const char *format, rnode *nodes, size_t n,
                             json_t *timings, const char *path,
                             uint8_t root[32], char *err, size_t cap) {
  uint8_t *doc;
  size_t len;
  tl_status st =
      encode_graph(format, nodes, n, timings, &doc, &len, root, err, cap);
  if (st == TL_OK) st = tl_file_write_atomic(path, doc, len, err, cap);
  free(doc);
  return st;
}

static json_t *builder_json(const char *name, const char *build_id) {
  return json_pack("{s:s,s:s,s:s}", "name", name, "version", TL_VERSION_STRING,
                   "build_id", build_id ? build_id : "unknown");
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static json_t *opt_hex(const uint8_t *p, bool present) {
  char hex[65];
  if (!present) return json_null();
  tl_hex_encode(p, 32, hex);
  return json_string(hex);
}

static tl_status write_pull_receipt(const tl_pull_options *o, ctx *c,
                                    const tree *t, const char *license,
                                    const char *license_source,
                                    tl_pull_report *r, uint64_t t_download,
                                    uint64_t t_total, char *err, size_t cap) {
  rnode nodes[6];
  json_t *files = json_array(), *timings;
  const entry *lic = NULL, *readme = NULL;
  char path[4300];
  uint8_t *doc;
  size_t len;
  tl_status st;
  for (size_t i = 0; i < t->n; i++) {
    const entry *e = &t->e[i];
    char sha[65];
    tl_hex_encode(e->sha256, 32, sha);
    json_array_append_new(
        files,
        json_pack("{s:s,s:I,s:s,s:s,s:o}", "path", e->path, "size",
                  (json_int_t)e->size, "sha256", sha, "git_oid", e->oid,
                  "lfs_oid", e->lfs ? json_string(e->lfs_oid) : json_null()));
    if (strncmp(e->path, "LICENSE", 7) == 0 && lic == NULL) lic = e;
    if (strcmp(e->path, "README.md") == 0) readme = e;
  }
  memset(nodes, 0, sizeof nodes);
  nodes[0] = (rnode){
      "builder", builder_json("tinylm pull", o->net.build_id), {0}, 0};
  nodes[1] = (rnode){"source",
                     json_pack("{s:s,s:s,s:s,s:s}", "endpoint", c->hub.endpoint,
                               "repo_id", o->repo_id, "requested_revision",
                               o->revision, "resolved_commit", c->commit),
                     {0},
                     0};
  nodes[2] = (rnode){"files", json_pack("{s:o}", "files", files), {0}, 0};
  nodes[3] = (rnode){
      "policy",
      json_pack("{s:s,s:o,s:{s:I,s:I,s:I,s:I},s:{s:o,s:o,s:s,s:o,s:o}}",
                "allowlist", "qwen3/1", "profile",
                o->profile ? json_string(o->profile) : json_null(), "limits",
                "max_files", (json_int_t)o->limits.max_files, "max_file_bytes",
                (json_int_t)o->limits.max_file_bytes, "max_total_bytes",
                (json_int_t)o->limits.max_total_bytes, "max_depth",
                (json_int_t)TL_ACQ_MAX_DEPTH, "license", "id",
                license[0] ? json_string(license) : json_null(), "source",
                license_source ? json_string(license_source) : json_null(),
                "decision", license[0] ? "declared" : "accepted-missing",
                "license_file_sha256",
                opt_hex(lic ? lic->sha256 : NULL, lic != NULL), "readme_sha256",
                opt_hex(readme ? readme->sha256 : NULL, readme != NULL)),
      {0},
      0};
  nodes[4] = (rnode){"drift",
                     json_pack("{s:s,s:b}", "re_resolved_commit",
                               r->final_commit, "moved", r->drifted),
                     {0},
                     0};
  nodes[5] =
      (rnode){"acquisition",
              json_pack("{s:{s:s,s:s,s:s,s:s,s:b}}", "invocation", "command",
                        "tinylm pull", "repo_id", o->repo_id, "revision",
                        o->revision, "endpoint", c->hub.endpoint,
                        "accept_missing_license", o->accept_missing_license),
              {0, 1, 2, 3, 4},
              5};
  timings =
      json_pack("{s:I,s:I,s:I}", "download", (json_int_t)t_download, "total",
                (json_int_t)t_total, "bytes_fetched", (json_int_t)c->fetched);
  /* Into the staging directory through its descriptor (the directory
   * appears whole or not at all: no temporary name is needed). */
  snprintf(path, sizeof path, "%s/%s", c->staging, TL_ACQ_RECEIPT_NAME);
  st = encode_graph(TL_ACQ_FORMAT, nodes, 6, timings, &doc, &len, r->receipt_id,
                    err, cap);
  for (size_t i = 0; i < 6; i++) json_decref(nodes[i].meta);
  json_decref(timings);
  if (st == TL_OK) {
    int fd =
        openat(c->staging_fd, TL_ACQ_RECEIPT_NAME,
               O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    size_t done = 0;
    while (fd >= 0 && done < len) {
      ssize_t k = write(fd, doc + done, len - done);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      done += (size_t)k;
    }
    if (fd < 0 || done < len)
      st = tl_fail(err, cap, TL_ERR_IO, "%s: cannot write: %s", path,
                   strerror(errno));
    if (fd >= 0 && st == TL_OK)
      st = sync_close(fd, path, err, cap);
    else if (fd >= 0)
      close(fd);
  }
  free(doc);
  return st;
}

/* ------------------------------------------------------------------------ */
/* pull --update                                                            */

static bool same_file(const json_t *f, const entry *e) {
  const json_t *lfs = json_object_get(f, "lfs_oid");
  const char *oid = json_string_value(json_object_get(f, "git_oid"));
  return json_integer_value(json_object_get(f, "size")) ==
             (json_int_t)e->size &&
         oid != NULL && strcmp(oid, e->oid) == 0 &&
         (e->lfs ? json_is_string(lfs) &&
                       strcmp(json_string_value(lfs), e->lfs_oid) == 0
                 : json_is_null(lfs));
}

/* DIR as an earlier pull left it. */
typedef struct previous {
  int fd; /* DIR, opened without following links; -1: no DIR */
  dev_t dev;
  ino_t ino;
  tl_acq_receipt rec;
  char commit[41], revision[256];
} previous;

/* Opens DIR for --update: this user's directory, not a link, holding a
 * receipt that verifies, of repo_id, and nothing else than the files that
 * receipt names (the swap replaces DIR whole: anything else would be
 * lost). Nothing is changed; no request is made. */
static tl_status open_previous(ctx *c, const char *dir, const char *repo_id,
                               previous *p, char *err, size_t cap) {
  char path[4400];
  struct stat sb;
  const char *why, *commit, *revision, *repo;
  char why_buf[96];
  tl_status st = TL_OK;
  DIR *d;
  struct dirent *de;
  int fd;
  p->fd = openat(c->parent_fd, c->out_name,
                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (p->fd < 0)
    return tl_fail(err, cap,
                   errno == ELOOP || errno == ENOTDIR ? TL_ERR_INVALID_ARGUMENT
                                                      : TL_ERR_IO,
                   "%s: cannot open for --update: %s%s", dir, strerror(errno),
                   errno == ELOOP ? " (a symbolic link is not followed)" : "");
  if ((why = tl_file_private_dir(p->fd, &sb, why_buf, sizeof why_buf)) != NULL)
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "%s is not yours to update: %s (nothing was changed)", dir,
                   why);
  p->dev = sb.st_dev;
  p->ino = sb.st_ino;
  snprintf(path, sizeof path, "%s/%s", dir, TL_ACQ_RECEIPT_NAME);
  if (fstatat(p->fd, TL_ACQ_RECEIPT_NAME, &sb, AT_SYMLINK_NOFOLLOW) != 0)
    return tl_fail(err, cap, TL_ERR_NOT_FOUND,
                   "%s has no %s: --update replaces a directory tinylm pull "
                   "wrote (nothing was changed)",
                   dir, TL_ACQ_RECEIPT_NAME);
  st = tl_acq_receipt_read(path, &p->rec, err, cap);
  if (st != TL_OK) return st;
  repo = json_string_value(json_object_get(p->rec.source, "repo_id"));
  commit = json_string_value(json_object_get(p->rec.source, "resolved_commit"));
  revision =
      json_string_value(json_object_get(p->rec.source, "requested_revision"));
  if (repo == NULL || commit == NULL || revision == NULL || !is_hex(commit, 40) ||
      !tl_acq_valid_revision(revision) || strlen(revision) >= sizeof p->revision)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "%s: the source node is incomplete", path);
  if (strcmp(repo, repo_id) != 0)
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "%s holds a pull of %s, not of %s (nothing was changed)",
                   dir, repo, repo_id);
  snprintf(p->commit, sizeof p->commit, "%s", commit);
  snprintf(p->revision, sizeof p->revision, "%s", revision);
  fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
  d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL) {
    if (fd >= 0) close(fd);
    return tl_fail(err, cap, TL_ERR_IO, "%s: cannot list: %s", dir,
                   strerror(errno));
  }
  while (st == TL_OK && (de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if ((strcmp(de->d_name, TL_ACQ_RECEIPT_NAME) != 0 &&
         tl_acq_receipt_file(&p->rec, de->d_name) == NULL) ||
        fstatat(p->fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(sb.st_mode))
      st = tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "%s/%s is not a file that pull wrote there; --update "
                   "replaces %s whole, so move it away first (nothing was "
                   "changed)",
                   dir, de->d_name, dir);
  }
  closedir(d);
  return st;
}

/* The files the new tree shares with DIR (same size and object ids) are
 * linked into the staging directory, so that only what changed is
 * fetched: fetch_file verifies each again, and a link that does not
 * verify is only unlinked (the old file is never written). A failed link
 * (another file system) means the file is fetched. */
static void link_unchanged(ctx *c, const previous *p, const tree *t) {
  for (size_t i = 0; i < t->n; i++) {
    const json_t *f = tl_acq_receipt_file(&p->rec, t->e[i].path);
    if (f != NULL && same_file(f, &t->e[i]))
      (void)linkat(p->fd, t->e[i].path, c->staging_fd, t->e[i].path, 0);
  }
}

/* After the swap the earlier pull is named DIR.partial: its files (those
 * its receipt names) and the receipt are removed through its descriptor,
 * then the directory. Anything else that appeared in it during the pull
 * keeps it, renamed DIR.previous-COMMIT, and the note says so. */
static void retire_previous(ctx *c, const previous *p, char *note,
                            size_t note_cap) {
  const char *out = c->out_name;
  char kept[300];
  struct stat sb;
  size_t i;
  json_t *f;
  if (fstatat(c->parent_fd, c->staging_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
      sb.st_dev != p->dev || sb.st_ino != p->ino) {
    snprintf(note, note_cap,
             "%s was replaced during the update; what is now named %s.partial "
             "was left alone",
             out, out);
    return;
  }
  json_array_foreach(p->rec.files, i, f) {
    const char *name = json_string_value(json_object_get(f, "path"));
    if (name != NULL && strchr(name, '/') == NULL) unlinkat(p->fd, name, 0);
  }
  unlinkat(p->fd, TL_ACQ_RECEIPT_NAME, 0);
  if (unlinkat(c->parent_fd, c->staging_name, AT_REMOVEDIR) == 0) return;
  snprintf(kept, sizeof kept, "%.200s.previous-%.12s", c->out_name, p->commit);
  if (renameat(c->parent_fd, c->staging_name, c->parent_fd, kept) == 0)
    snprintf(note, note_cap,
             "files that pull did not write appeared in %s during the "
             "update: the previous directory is kept as %s beside it",
             out, kept);
  else
    snprintf(note, note_cap,
             "files that pull did not write appeared in %s during the "
             "update: the previous directory is left as %s.partial",
             out, out);
}

/* ------------------------------------------------------------------------ */
/* pull                                                                     */

/* DIR may not exist yet, or be an empty directory (rename replaces it). */
static tl_status check_out_dir(const char *dir, char *err, size_t cap) {
  struct stat st;
  DIR *d;
  struct dirent *de;
  bool empty = true;
  if (lstat(dir, &st) != 0) {
    if (errno == ENOENT) return TL_OK;
    return tl_fail(err, cap, TL_ERR_IO, "%s: cannot examine: %s", dir,
                   strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return tl_fail(
        err, cap, TL_ERR_INVALID_ARGUMENT,
        "%s exists and is not a directory; pull writes a new directory", dir);
  d = opendir(dir);
  if (d == NULL)
    return tl_fail(err, cap, TL_ERR_IO, "%s: cannot list: %s", dir,
                   strerror(errno));
  while ((de = readdir(d)) != NULL)
    if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
      empty = false;
  closedir(d);
  if (!empty)
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "%s exists and is not empty; pull writes a new directory "
                   "(nothing was changed); to bring a directory pull wrote to "
                   "a new revision, add --update",
                   dir);
  return TL_OK;
}

static tl_status pull_files(const tl_pull_options *o, ctx *c, tree *t,
                            char *license, const char **license_source,
                            char *err, size_t cap) {
  tl_convert_options co;
  tl_convert_report cr;
  tl_status st = TL_OK;
  bool licensed_checked = false;
  for (size_t i = 0; i <= t->n && st == TL_OK; i++) {
    if (!licensed_checked && (i == t->n || t->e[i].lfs)) {
      /* Every small file is in: decide the license before the weights. */
      char card[72];
      licensed_checked = true;
      card_license(c->staging_fd, card, sizeof card);
      if (card[0]) {
        snprintf(license, 72, "%s", card);
        *license_source = "README.md front matter";
      } else if (license_id_ok(license)) {
        *license_source = "model info cardData";
      } else {
        license[0] = '\0';
        *license_source = NULL;
        if (!o->accept_missing_license)
          return tl_fail(
              err, cap, TL_ERR_INVALID_MODEL,
              "%s@%s declares no license (README.md front matter or "
              "the model card); --accept-missing-license proceeds and "
              "records that decision",
              o->repo_id, c->commit);
      }
    }
    if (i < t->n) st = fetch_file(c, &t->e[i], true, err, cap);
  }
  if (st != TL_OK) return st;
  /* The converter's checks that need no tensor data. It reads DIR.partial
   * by name: that name must be this run's directory before and after. */
  if (!staging_in_place(c)) return staging_moved(c, err, cap);
  memset(&co, 0, sizeof co);
  co.hf_dir = c->staging;
  co.profile = o->profile;
  co.check_only = true;
  st = tl_convert(&co, &cr, err, cap);
  if (st == TL_OK && !staging_in_place(c)) st = staging_moved(c, err, cap);
  if (st == TL_ERR_CONFLICT) {
    c->conflict = cr.conflict;
    c->conflict_len = cr.conflict_len;
    cr.conflict = NULL;
  }
  tl_convert_report_free(&cr);
  return st;
}

tl_status tl_pull(const tl_pull_options *o, tl_pull_report *r, char *err,
                  size_t cap) {
  ctx c;
  tree t;
  previous prev;
  char license[72] = "";
  const char *license_source = NULL, *revision;
  size_t dir_len;
  uint64_t t0 = now_us(), t_dl = 0;
  tl_status st;
  memset(r, 0, sizeof *r);
  memset(&c, 0, sizeof c);
  memset(&t, 0, sizeof t);
  memset(&prev, 0, sizeof prev);
  prev.fd = -1;
  if (o->repo_id == NULL || !tl_acq_valid_repo_id(o->repo_id))
    return tl_fail(
        err, cap, TL_ERR_INVALID_ARGUMENT,
        "'%s' is not a repository id (owner/name of [A-Za-z0-9._-], no "
        "'..', '/' only between the two)",
        o->repo_id ? o->repo_id : "");
  if (o->revision != NULL && !tl_acq_valid_revision(o->revision))
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "'%s' is not a revision (a branch, tag or commit of "
                   "[A-Za-z0-9._-/], no '..', no '%%')",
                   o->revision);
  dir_len = strlen(o->out_dir);
  while (dir_len > 1 && o->out_dir[dir_len - 1] == '/') dir_len--;
  if (dir_len == 0 || dir_len > 4000)
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT, "bad output directory");
  snprintf(c.staging, sizeof c.staging, "%.*s.partial", (int)dir_len,
           o->out_dir);
  c.parent_fd = c.staging_fd = -1;
  st = open_parent(&c, o->out_dir, dir_len, err, cap);
  if (st == TL_OK && o->update && faccessat(c.parent_fd, c.out_name, F_OK,
                                            AT_SYMLINK_NOFOLLOW) == 0)
    st = open_previous(&c, o->out_dir, o->repo_id, &prev, err, cap);
  else if (st == TL_OK)
    st = check_out_dir(o->out_dir, err, cap);
  /* The revision: the one asked for, else (updating) the one DIR was
   * pulled at, else main. */
  revision = o->revision ? o->revision : prev.fd >= 0 ? prev.revision : "main";
  snprintf(r->revision, sizeof r->revision, "%s", revision);
  if (st == TL_OK) st = adopt_staging(&c, err, cap);
  if (st == TL_OK)
    st = tl_hub_open(&c.hub, o->net.endpoint, o->net.token, o->net.timeout_s,
                     o->net.max_redirects, err, cap);
  if (st != TL_OK) {
    if (c.staging_fd >= 0) close(c.staging_fd);
    if (c.parent_fd >= 0) close(c.parent_fd);
    if (prev.fd >= 0) close(prev.fd);
    tl_acq_receipt_free(&prev.rec);
    return st;
  }
  c.repo_id = o->repo_id;
  c.progress = o->progress;
  if (prev.fd >= 0) memcpy(r->previous_commit, prev.commit, 41);
  st = resolve(&c, revision, c.commit, license, sizeof license, err, cap);
  if (st == TL_OK && prev.fd >= 0 && strcmp(c.commit, prev.commit) == 0) {
    /* Nothing to do: DIR already holds that commit. */
    r->up_to_date = true;
    memcpy(r->commit, c.commit, 41);
    memcpy(r->final_commit, c.commit, 41);
    goto done;
  }
  if (st == TL_OK) st = list_tree(&c, c.commit, &o->limits, &t, err, cap);
  if (st == TL_OK) {
    qsort(t.e, t.n, sizeof *t.e, entry_order);
    if (!c.staging_ours) st = make_staging(&c, err, cap);
  }
  if (st == TL_OK) st = clean_dir(&c, &t, err, cap);
  if (st == TL_OK && prev.fd >= 0) link_unchanged(&c, &prev, &t);
  if (st == TL_OK) {
    uint64_t t1 = now_us();
    st = pull_files(o, &c, &t, license, &license_source, err, cap);
    t_dl = now_us() - t1;
  }
  if (st == TL_OK)
    st = resolve(&c, revision, r->final_commit, NULL, 0, err, cap);
  if (st == TL_OK) {
    memcpy(r->commit, c.commit, 41);
    r->drifted = strcmp(r->final_commit, c.commit) != 0;
    tl_pull_options asked = *o; /* the receipt names the revision used */
    asked.revision = revision;
    st = write_pull_receipt(&asked, &c, &t, license, license_source, r, t_dl,
                            now_us() - t0, err, cap);
  }
  if (st == TL_OK) {
    char out[4100];
    snprintf(out, sizeof out, "%.*s", (int)dir_len, o->out_dir);
    if (prev.fd >= 0) {
      struct stat sb;
      /* DIR must still be the directory that was checked. */
      if (fstatat(c.parent_fd, c.out_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
          sb.st_dev != prev.dev || sb.st_ino != prev.ino)
        st = tl_fail(err, cap, TL_ERR_IO,
                     "%s was moved or replaced during the update (not by "
                     "this program)",
                     out);
    }
    if (st == TL_OK) st = land_staging(&c, out, prev.fd >= 0, err, cap);
    if (st == TL_OK && prev.fd >= 0) {
      /* The earlier pull is DIR.partial now, and no longer staging. */
      c.staging_ours = false;
      retire_previous(&c, &prev, r->note, sizeof r->note);
    }
  }
done:
  r->n_files = t.n;
  r->n_reused = c.reused;
  r->bytes_total = t.total;
  r->bytes_fetched = c.fetched;
  snprintf(r->license, sizeof r->license, "%s", license);
  if (st != TL_OK) {
    /* Only a transfer a rerun may complete keeps the staging directory;
     * whatever it holds is verified again then. */
    r->transient = c.transient && st == TL_ERR_IO;
    r->kept_partial = r->transient && c.staging_ours;
    if (!r->kept_partial && c.staging_ours) remove_staging(&c);
    r->conflict = c.conflict;
    r->conflict_len = c.conflict_len;
    c.conflict = NULL;
  }
  free(c.conflict);
  free(t.e);
  tl_hub_close(&c.hub);
  if (c.staging_fd >= 0) close(c.staging_fd);
  close(c.parent_fd);
  if (prev.fd >= 0) close(prev.fd);
  tl_acq_receipt_free(&prev.rec);
  return st;
}

void tl_pull_report_free(tl_pull_report *r) {
  free(r->conflict);
  r->conflict = NULL;
  r->conflict_len = 0;
}

/* ------------------------------------------------------------------------ */
/* Reading a receipt back                                                   */

tl_status tl_acq_graph_verify(const uint8_t *doc, size_t len,
                              const char *format, uint8_t root[32],
                              json_t **out, char *err, size_t cap) {
  /* The strict check first (receipt.c: every field of the format, typed,
   * nothing else; every id recomputes; the graph exactly as written):
   * whatever the JSON view is asked for afterwards is there, typed. */
  tl_status st = tl_graph_receipt_check(doc, len, format, root, err, cap);
  *out = NULL;
  if (st != TL_OK) return st;
  return tl_cbor_to_json(doc, len, out, err, cap);
}

tl_status tl_acq_show(const uint8_t *doc, size_t len, bool json, FILE *out,
                      bool *shown, char *err, size_t cap) {
  json_t *j = NULL, *n;
  const char *fmt;
  uint8_t root[32];
  char root_hex[65], *text;
  size_t i;
  tl_status st;
  *shown = false;
  if (tl_cbor_to_json(doc, len, &j, err, cap) != TL_OK) return TL_OK;
  fmt = json_string_value(json_object_get(j, "format"));
  fmt = fmt == NULL                         ? NULL
        : strcmp(fmt, TL_ACQ_FORMAT) == 0   ? TL_ACQ_FORMAT
        : strcmp(fmt, TL_DRIFT_FORMAT) == 0 ? TL_DRIFT_FORMAT
                                            : NULL;
  *shown = fmt != NULL;
  if (*shown) {
    json_decref(j);
    st = tl_acq_graph_verify(doc, len, fmt, root, &j, err, cap);
  } else {
    st = TL_OK;
  }
  if (!*shown || st != TL_OK) {
    json_decref(j);
    return st;
  }
  if (json) {
    json_object_set_new(j, "verified", json_true());
    text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    fprintf(out, "%s\n", text ? text : "{}");
    free(text);
  } else {
    /* Text the receipt carries (names the Hub chose) is shown escaped:
     * non-ASCII as \\uXXXX, control characters as JSON escapes. */
    tl_hex_encode(root, 32, root_hex);
    fprintf(
        out, "%s receipt %s (every node id verified)\n",
        strcmp(fmt, TL_ACQ_FORMAT) == 0 ? "acquisition" : "drift observation",
        root_hex);
    json_array_foreach(json_object_get(j, "nodes"), i, n) {
      text = json_dumps(json_object_get(n, "metadata"),
                        JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
      fprintf(out, "  %-12s %.16s...  %s\n",
              json_string_value(json_object_get(n, "type")),
              json_string_value(json_object_get(n, "id")), text ? text : "");
      free(text);
    }
    text = json_dumps(json_object_get(j, "timings_us"),
                      JSON_COMPACT | JSON_SORT_KEYS);
    fprintf(out, "  timings (not part of the identity): %s\n",
            text ? text : "");
    free(text);
  }
  json_decref(j);
  return TL_OK;
}

/* What is wrong with a schema-checked source node's values, or NULL. */
static const char *source_problem(const json_t *source) {
  const char *commit =
      json_string_value(json_object_get(source, "resolved_commit"));
  if (!tl_acq_valid_repo_id(
          json_string_value(json_object_get(source, "repo_id"))))
    return "source.repo_id is not a repository id";
  if (!tl_acq_valid_revision(
          json_string_value(json_object_get(source, "requested_revision"))))
    return "source.requested_revision is not a revision";
  if (commit == NULL || !is_hex(commit, 40))
    return "source.resolved_commit is not a 40-digit commit";
  return NULL;
}

/* The same for files[i] (paths pull would accept, each once; digests hex). */
static const char *file_problem(const json_t *f, const json_t *files,
                                size_t i) {
  const char *p = json_string_value(json_object_get(f, "path"));
  const char *sha = json_string_value(json_object_get(f, "sha256"));
  const char *oid = json_string_value(json_object_get(f, "git_oid"));
  const json_t *lfs = json_object_get(f, "lfs_oid");
  if (p == NULL || tl_acq_path_problem(p) != NULL)
    return "a file's path is not one pull would write";
  for (size_t k = 0; k < i; k++)
    if (strcmp(p, json_string_value(json_object_get(
                      json_array_get(files, k), "path"))) == 0)
      return "a file is listed twice";
  if (sha == NULL || !is_hex(sha, 64) || oid == NULL || !is_hex(oid, 40) ||
      !(json_is_null(lfs) || is_hex(json_string_value(lfs), 64)))
    return "a file's sha256, git_oid or lfs_oid is not hex of its length";
  return NULL;
}

tl_status tl_acq_receipt_read(const char *path, tl_acq_receipt *r, char *err,
                              size_t cap) {
  tl_file_view v;
  tl_status st;
  memset(r, 0, sizeof *r);
  st = tl_file_open_view(path, &v, err, cap);
  if (st != TL_OK) return st;
  st = tl_acq_graph_verify(v.data, v.len, TL_ACQ_FORMAT, r->id, &r->doc, err,
                           cap);
  tl_file_close_view(&v);
  if (st != TL_OK) {
    size_t len = strlen(err);
    snprintf(err + len, cap - len, " (%s)", path);
    return st;
  }
  r->source = tl_json_node_meta(r->doc, "source");
  r->files = json_object_get(tl_json_node_meta(r->doc, "files"), "files");
  /* The schema has typed every field; the values are checked here as pull
   * checks the Hub's (a receipt is read like any other input). */
  {
    const char *what = source_problem(r->source);
    size_t i;
    json_t *f;
    json_array_foreach(r->files, i, f) {
      if (what != NULL) break;
      what = file_problem(f, r->files, i);
    }
    if (what != NULL) {
      tl_acq_receipt_free(r);
      return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                     "%s: not a valid acquisition receipt: %s", path, what);
    }
  }
  return TL_OK;
}

const json_t *tl_acq_receipt_file(const tl_acq_receipt *r, const char *path) {
  size_t i;
  json_t *f;
  json_array_foreach(r->files, i, f) {
    const char *p = json_string_value(json_object_get(f, "path"));
    if (p != NULL && strcmp(p, path) == 0) return f;
  }
  return NULL;
}

void tl_acq_receipt_free(tl_acq_receipt *r) {
  json_decref(r->doc);
  memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------ */
/* drift                                                                    */

tl_status tl_drift(const tl_drift_options *o, tl_drift_report *r, char *err,
                   size_t cap) {
  tl_acq_receipt rec;
  ctx c;
  tree t;
  char path[4300], rec_hex[65];
  const char *endpoint, *revision, *commit;
  rnode nodes[4];
  json_t *timings;
  uint64_t t0 = now_us();
  tl_status st;
  memset(r, 0, sizeof *r);
  memset(&c, 0, sizeof c);
  memset(&t, 0, sizeof t);
  snprintf(path, sizeof path, "%s/%s", o->dir, TL_ACQ_RECEIPT_NAME);
  if (access(path, F_OK) != 0 && errno == ENOENT) {
    /* Not a directory tinylm pull wrote (or its receipt was removed). */
    snprintf(err, cap, "%s has no %s: drift checks a directory that tinylm pull wrote "
             "(tinylm pull REPO_ID -o DIR), against the Hub",
             o->dir, TL_ACQ_RECEIPT_NAME);
    return TL_ERR_NOT_FOUND;
  }
  st = tl_acq_receipt_read(path, &rec, err, cap);
  if (st != TL_OK) return st;
  /* Where to ask is the caller's choice (--endpoint, $HF_ENDPOINT or the
   * default), never the receipt's: a directory someone hands over must not
   * decide where the token goes. The receipt's endpoint is only compared. */
  endpoint = json_string_value(json_object_get(rec.source, "endpoint"));
  revision =
      json_string_value(json_object_get(rec.source, "requested_revision"));
  commit = json_string_value(json_object_get(rec.source, "resolved_commit"));
  c.repo_id = json_string_value(json_object_get(rec.source, "repo_id"));
  if (endpoint == NULL || revision == NULL ||
      !tl_acq_valid_revision(revision) || !tl_acq_valid_repo_id(c.repo_id) ||
      !is_hex(commit, 40)) {
    tl_acq_receipt_free(&rec);
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "%s: the source node is incomplete", path);
  }
  r->changed = json_array();
  r->added = json_array();
  r->removed = json_array();
  snprintf(r->commit, sizeof r->commit, "%s", commit);
  st = tl_hub_open(&c.hub, o->net.endpoint ? o->net.endpoint
                                           : TL_ACQ_DEFAULT_ENDPOINT,
                   o->net.token, o->net.timeout_s, o->net.max_redirects, err,
                   cap);
  if (st == TL_OK && strcmp(c.hub.endpoint, endpoint) != 0) {
    char shown[600];
    tl_hub_printable(endpoint, strlen(endpoint), shown, sizeof shown);
    st = tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                 "the acquisition receipt names the endpoint '%s', not '%s' "
                 "(--endpoint, else $HF_ENDPOINT, else the default): nothing "
                 "was sent; to ask the receipt's endpoint, name it with "
                 "--endpoint",
                 shown, c.hub.endpoint);
  }
  if (st == TL_OK) st = resolve(&c, revision, r->now, NULL, 0, err, cap);
  if (st == TL_OK && strcmp(r->now, commit) != 0) {
    r->moved = true;
    st = list_tree(&c, r->now, NULL, &t, err, cap);
  }
  if (st == TL_OK && r->moved) {
    size_t i;
    json_t *f;
    for (size_t k = 0; k < t.n; k++) {
      const json_t *old = tl_acq_receipt_file(&rec, t.e[k].path);
      if (old == NULL)
        json_array_append_new(r->added, json_string(t.e[k].path));
      else if (!same_file(old, &t.e[k]))
        json_array_append_new(r->changed, json_string(t.e[k].path));
    }
    json_array_foreach(rec.files, i, f) {
      const char *p = json_string_value(json_object_get(f, "path"));
      bool found = false;
      for (size_t k = 0; k < t.n && !found; k++)
        found = p != NULL && strcmp(t.e[k].path, p) == 0;
      if (!found) json_array_append_new(r->removed, json_string(p));
    }
  }
  if (st == TL_OK) {
    tl_hex_encode(rec.id, 32, rec_hex);
    memset(nodes, 0, sizeof nodes);
    nodes[0] = (rnode){
        "builder", builder_json("tinylm drift", o->net.build_id), {0}, 0};
    /* The acquisition's own source node: the same metadata, the same id. */
    nodes[1] = (rnode){"source", json_deep_copy(rec.source), {0}, 0};
    nodes[2] = (rnode){
        "observation",
        json_pack("{s:s,s:s,s:b,s:O,s:O,s:O,s:s}", "endpoint", c.hub.endpoint,
                  "re_resolved_commit", r->now, "moved", r->moved, "changed",
                  r->changed, "added", r->added, "removed", r->removed,
                  "requested_revision", revision),
        {0},
        0};
    nodes[3] = (rnode){"drift",
                       json_pack("{s:s}", "acquisition_receipt_id", rec_hex),
                       {0, 1, 2},
                       3};
    timings = json_pack("{s:I}", "total", (json_int_t)(now_us() - t0));
    st = write_graph(TL_DRIFT_FORMAT, nodes, 4, timings, o->out_path,
                     r->receipt_id, err, cap);
    for (size_t i = 0; i < 4; i++) json_decref(nodes[i].meta);
    json_decref(timings);
  }
  free(c.conflict);
  free(t.e);
  tl_hub_close(&c.hub);
  tl_acq_receipt_free(&rec);
  return st;
}

void tl_drift_report_free(tl_drift_report *r) {
  json_decref(r->changed);
  json_decref(r->added);
  json_decref(r->removed);
  r->changed = r->added = r->removed = NULL;
}
