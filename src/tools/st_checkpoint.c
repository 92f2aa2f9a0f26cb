/* A safetensors checkpoint on disk: see st_checkpoint.h and
 * docs/safetensors.md (ST-20..ST-27 are tagged where they are enforced). */
#define _POSIX_C_SOURCE 200809L
#include "st_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "tool_msg.h"

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

void tl_st_checkpoint_close(tl_st_checkpoint *ck) {
  if (ck == NULL) return;
  for (size_t i = 0; i < ck->n_sources; i++) {
    tl_file_close_view(&ck->sources[i].view);
    free(ck->sources[i].path);
    free(ck->sources[i].arena_mem);
  }
  free(ck->sources);
  free(ck->tensors);
  memset(ck, 0, sizeof *ck);
}

/* Appends a source, maps and hashes it (one pass over the mapping). ST-27:
 * a regular file (a FIFO would block, /dev/zero would never end), at most
 * max_len bytes. */
static tl_status add_source(tl_st_checkpoint *ck, const char *path,
                            uint64_t max_len, tl_status open_fail, char *err,
                            size_t cap, tl_st_source **out) {
  tl_st_source *grown =
      realloc(ck->sources, (ck->n_sources + 1) * sizeof *ck->sources);
  if (grown == NULL)
    return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  ck->sources = grown;
  tl_st_source *s = &ck->sources[ck->n_sources];
  memset(s, 0, sizeof *s);
  s->path = strdup(path);
  if (s->path == NULL)
    return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  ck->n_sources++;
  const char *slash = strrchr(s->path, '/');
  s->name = slash != NULL ? (char *)slash + 1 : s->path;
  char why[512];
  if (tl_file_open_regular(path, &s->view, why, sizeof why) != TL_OK)
    return tl_fail(err, cap, open_fail, "%s", why);
  if ((uint64_t)s->view.len > max_len)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "%s: %zu bytes, more than the %llu allowed", path,
                   s->view.len, (unsigned long long)max_len);
  s->size = s->view.len;
  tl_status st = tl_file_sha256(&s->view, s->sha256);
  if (st != TL_OK) return tl_fail(err, cap, st, "%s: cannot hash", path);
  *out = s;
  return TL_OK;
}

/* Gives s an arena of cap bytes (replacing any earlier one). */
static tl_status source_arena(tl_st_source *s, size_t cap) {
  free(s->arena_mem);
  s->arena_mem = malloc(cap);
  if (s->arena_mem == NULL) return TL_ERR_OUT_OF_MEMORY;
  return tl_arena_init(&s->arena, s->arena_mem, cap);
}

/* The arena a header of n bytes needs is a small multiple of n; start
 * there and double on TL_ERR_OUT_OF_MEMORY. */
static size_t first_arena_cap(size_t n) {
  return n > (SIZE_MAX - 65536) / 16 ? SIZE_MAX : 16 * n + 65536;
}

static tl_status parse_source(tl_st_source *s, size_t shard, tl_st_file *f,
                              char *err, size_t cap) {
  /* The declared header length, trusted only as a size hint. */
  uint64_t n = s->view.len >= 8 ? tl_load_le64(s->view.data) : 0;
  size_t hint = n < s->view.len ? (size_t)n : s->view.len;
  size_t acap = first_arena_cap(hint);
  tl_st_error e;
  for (int tries = 0;; tries++) {
    if (source_arena(s, acap) != TL_OK)
      return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory",
                     s->path);
    tl_status st = tl_st_parse(s->view.data, s->view.len, s->path, shard,
                               &s->arena, f, &e);
    if (st == TL_ERR_OUT_OF_MEMORY && tries < 6 && acap <= SIZE_MAX / 2) {
      acap *= 2;
      continue;
    }
    if (st != TL_OK) return tl_fail(err, cap, st, "%s", e.message);
    s->metadata = f->metadata;
    s->n_metadata = f->n_metadata;
    return TL_OK;
  }
}

tl_status tl_st_open_file(const char *path, tl_st_checkpoint *ck, char *err,
                          size_t err_cap) {
  if (ck == NULL || path == NULL) return TL_ERR_INVALID_ARGUMENT;
  memset(ck, 0, sizeof *ck);
  tl_st_source *s = NULL;
  tl_st_file f;
  tl_status st = add_source(ck, path, UINT64_MAX, TL_ERR_IO, err, err_cap, &s);
  if (st == TL_OK) st = parse_source(s, 0, &f, err, err_cap);
  if (st == TL_OK && f.n_tensors > 0) {
    ck->tensors =
        calloc(f.n_tensors, sizeof *ck->tensors); /* checks n * size */
    if (ck->tensors == NULL)
      st = tl_fail(err, err_cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory",
                   path);
    else
      memcpy(ck->tensors, f.tensors, f.n_tensors * sizeof *ck->tensors);
  }
  if (st != TL_OK) {
    tl_st_checkpoint_close(ck);
    return st;
  }
  ck->n_tensors = f.n_tensors;
  return TL_OK;
}

/* --- sharded ------------------------------------------------------------- */

typedef struct map_entry {
  const char *name, *shard;
  size_t name_len, shard_len;
  size_t source;  /* index into ck->sources */
  size_t seen_in; /* source where the tensor was found; 0 = not yet */
} map_entry;

static int entry_cmp(const void *a, const void *b) {
  const map_entry *x = a, *y = b;
  size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
  int c = memcmp(x->name, y->name, n);
  if (c != 0) return c;
  return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

/* ST-22: a plain file name: non-empty, no '/', '\\', "..", U+0000. */
static bool plain_name(const char *s, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '/' || s[i] == '\\' || s[i] == 0) return false;
    if (i + 1 < n && s[i] == '.' && s[i + 1] == '.') return false;
  }
  return true;
}

static tl_status open_index(const char *index_path, tl_st_checkpoint *ck,
                            char *err, size_t cap, map_entry **entries_out,
                            size_t *n_entries_out) {
  tl_st_source *ix = NULL;
  tl_status st = add_source(ck, index_path, TL_ST_MAX_INDEX_BYTES, TL_ERR_IO,
                            err, cap, &ix);
  if (st != TL_OK) return st;
  tl_json_value *root = NULL;
  tl_json_error je;
  tl_json_limits lim = tl_json_limits_default();
  lim.max_depth = 32;
  size_t acap = first_arena_cap(ix->view.len);
  for (int tries = 0;; tries++) {
    if (source_arena(ix, acap) != TL_OK)
      return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory",
                     index_path);
    st = tl_json_parse(ix->view.data, ix->view.len, &lim, &ix->arena, &root,
                       &je);
    if (st != TL_ERR_OUT_OF_MEMORY || tries >= 6 || acap > SIZE_MAX / 2) break;
    acap *= 2;
  }
  if (st == TL_ERR_OUT_OF_MEMORY)
    return tl_fail(err, cap, st, "%s: out of memory", index_path);
  if (st != TL_OK)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                   "%s: not valid JSON: %s at byte %zu", index_path, je.reason,
                   je.offset);
  if (root->type != TL_JSON_OBJECT)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL, "%s: not a JSON object",
                   index_path);
  const tl_json_value *map = NULL;
  for (size_t i = 0; i < root->u.obj.n; i++) {
    const tl_json_member *m = &root->u.obj.members[i];
    if (m->key_len == 8 && memcmp(m->key, "metadata", 8) == 0) {
      if (m->value.type != TL_JSON_OBJECT)
        return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                       "%s: field 'metadata': not an object", index_path);
      ck->index_metadata = &m->value;
    } else if (m->key_len == 10 && memcmp(m->key, "weight_map", 10) == 0) {
      map = &m->value;
    } else {
      /* ST-20: only "metadata" and "weight_map". */
      return tl_fail(err, cap, TL_ERR_INVALID_MODEL, "%s: unknown field '%.*s'",
                     index_path, (int)(m->key_len > 96 ? 96 : m->key_len),
                     m->key);
    }
  }
  if (map == NULL || map->type != TL_JSON_OBJECT)
    return tl_fail(err, cap, TL_ERR_INVALID_MODEL, "%s: field 'weight_map': %s",
                   index_path, map == NULL ? "missing" : "not an object");
  map_entry *e = calloc(map->u.obj.n ? map->u.obj.n : 1, sizeof *e);
  if (e == NULL)
    return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "%s: out of memory",
                   index_path);
  *entries_out = e;
  *n_entries_out = map->u.obj.n;
  for (size_t i = 0; i < map->u.obj.n; i++) {
    const tl_json_member *m = &map->u.obj.members[i];
    e[i].name = m->key;
    e[i].name_len = m->key_len;
    int nl = (int)(m->key_len > 96 ? 96 : m->key_len);
    if (m->value.type != TL_JSON_STRING)
      return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                     "%s: tensor '%.*s': field 'weight_map': not a string",
                     index_path, nl, m->key);
    e[i].shard = m->value.u.str.ptr;
    e[i].shard_len = m->value.u.str.len;
    if (!plain_name(e[i].shard, e[i].shard_len))
      return tl_fail(err, cap, TL_ERR_INVALID_MODEL,
                     "%s: tensor '%.*s': field 'weight_map': shard '%.*s' is "
                     "not a plain file name (no '/', '\\', '..')",
                     index_path, nl, m->key,
                     (int)(e[i].shard_len > 96 ? 96 : e[i].shard_len),
                     e[i].shard);
  }
  return TL_OK;
}

tl_status tl_st_open_index(const char *index_path, tl_st_checkpoint *ck,
                           char *err, size_t err_cap) {
  if (ck == NULL || index_path == NULL) return TL_ERR_INVALID_ARGUMENT;
  memset(ck, 0, sizeof *ck);
  ck->sharded = true;
  map_entry *e = NULL;
  size_t n = 0, total = 0;
  char *path = NULL;
  tl_st_file *files = NULL;
  tl_status st = open_index(index_path, ck, err, err_cap, &e, &n);
  if (st != TL_OK) goto done;
  const char *slash = strrchr(index_path, '/');
  size_t dir_len = slash != NULL ? (size_t)(slash - index_path) + 1 : 0;
  /* Shards in order of first appearance; open each, hash, parse. */
  files = calloc(TL_ST_MAX_SHARDS + 1, sizeof *files);
  if (files == NULL) {
    st = tl_fail(err, err_cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    size_t k = 1;
    for (; k < ck->n_sources; k++) {
      const char *nm = ck->sources[k].name;
      if (strlen(nm) == e[i].shard_len &&
          memcmp(nm, e[i].shard, e[i].shard_len) == 0)
        break;
    }
    e[i].source = k;
    if (k < ck->n_sources) continue;
    if (ck->n_sources > TL_ST_MAX_SHARDS) {
      st = tl_fail(err, err_cap, TL_ERR_INVALID_MODEL,
                   "%s: field 'weight_map': more than %d shard files",
                   index_path, TL_ST_MAX_SHARDS);
      goto done;
    }
    free(path);
    path = malloc(dir_len + e[i].shard_len + 1);
    if (path == NULL) {
      st = tl_fail(err, err_cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    memcpy(path, index_path, dir_len);
    memcpy(path + dir_len, e[i].shard, e[i].shard_len);
    path[dir_len + e[i].shard_len] = 0;
    tl_st_source *s = NULL;
    char why[512];
    /* ST-21: every shard named exists (ST-27: and is a regular file). */
    st = add_source(ck, path, UINT64_MAX, TL_ERR_INVALID_MODEL, why, sizeof why,
                    &s);
    if (st != TL_OK) {
      if (st == TL_ERR_INVALID_MODEL)
        st = tl_fail(err, err_cap, st,
                     "%s: tensor '%.*s': field 'weight_map': shard '%s' %s: %s",
                     index_path, (int)(e[i].name_len > 96 ? 96 : e[i].name_len),
                     e[i].name, path,
                     access(path, F_OK) == 0 ? "cannot be read" : "is missing",
                     why);
      else
        tl_fail(err, err_cap, st, "%s", why);
      goto done;
    }
    st = parse_source(s, k, &files[k], err, err_cap);
    if (st != TL_OK) goto done;
    total += files[k].n_tensors;
  }
  /* ST-23..ST-25: every shard tensor is in the map, under this shard, once. */
  qsort(e, n, sizeof *e, entry_cmp);
  for (size_t i = 1; i < n; i++)
    if (entry_cmp(&e[i - 1], &e[i]) == 0) {
      st = tl_fail(err, err_cap, TL_ERR_INTERNAL_INVARIANT,
                   "%s: duplicate weight_map key passed the JSON reader",
                   index_path);
      goto done;
    }
  ck->tensors = calloc(total ? total : 1, sizeof *ck->tensors);
  if (ck->tensors == NULL) {
    st = tl_fail(err, err_cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t k = 1; k < ck->n_sources; k++) {
    const tl_st_source *s = &ck->sources[k];
    for (size_t j = 0; j < files[k].n_tensors; j++) {
      const tl_st_tensor *t = &files[k].tensors[j];
      int nl = (int)(t->name_len > 96 ? 96 : t->name_len);
      map_entry key;
      memset(&key, 0, sizeof key);
      key.name = t->name;
      key.name_len = t->name_len;
      map_entry *hit = bsearch(&key, e, n, sizeof *e, entry_cmp);
      if (hit == NULL) {
        st =
            tl_fail(err, err_cap, TL_ERR_INVALID_MODEL,
                    "%s: tensor '%.*s': extra tensor: not in the weight_map of "
                    "%s",
                    s->path, nl, t->name, index_path);
        goto done;
      }
      if (hit->seen_in != 0) {
        st = tl_fail(err, err_cap, TL_ERR_INVALID_MODEL,
                     "%s: tensor '%.*s': duplicate: also in shard %s", s->path,
                     nl, t->name, ck->sources[hit->seen_in].path);
        goto done;
      }
      if (hit->source != k) {
        st = tl_fail(err, err_cap, TL_ERR_INVALID_MODEL,
                     "%s: tensor '%.*s': field 'weight_map': found in this "
                     "shard but %s names shard '%s'",
                     s->path, nl, t->name, index_path,
                     ck->sources[hit->source].name);
        goto done;
      }
      hit->seen_in = k;
      ck->tensors[ck->n_tensors++] = *t;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (e[i].seen_in == 0) {
      st = tl_fail(
          err, err_cap, TL_ERR_INVALID_MODEL,
          "%s: tensor '%.*s': field 'weight_map': missing from shard %s",
          index_path, (int)(e[i].name_len > 96 ? 96 : e[i].name_len), e[i].name,
          ck->sources[e[i].source].path);
      goto done;
    }
done:
  free(path);
  free(files);
  free(e);
  if (st != TL_OK) tl_st_checkpoint_close(ck);
  return st;
}

tl_status tl_st_open_dir(const char *dir, tl_st_checkpoint *ck, char *err,
                         size_t err_cap) {
  if (dir == NULL || ck == NULL) return TL_ERR_INVALID_ARGUMENT;
  size_t n = strlen(dir) + sizeof INDEX_NAME + 2;
  char *path = malloc(n);
  if (path == NULL) return TL_ERR_OUT_OF_MEMORY;
  snprintf(path, n, "%s/%s", dir, INDEX_NAME);
  struct stat probe; /* not fopen: a FIFO named like the index would block */
  tl_status st;
  if (lstat(path, &probe) == 0) {
    st = tl_st_open_index(path, ck, err, err_cap);
  } else {
    snprintf(path, n, "%s/%s", dir, SINGLE_NAME);
    st = tl_st_open_file(path, ck, err, err_cap);
  }
  free(path);
  return st;
}
