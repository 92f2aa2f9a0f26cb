#include "input_snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "tool_msg.h"

typedef struct snapshot {
  char *path;
  uint8_t *data;
  size_t len;
  struct snapshot *next;
} snapshot;

static snapshot *taken;

static const snapshot *find(const char *path) {
  for (const snapshot *s = taken; s != NULL; s = s->next)
    if (strcmp(s->path, path) == 0) return s;
  return NULL;
}

tl_status tl_snapshot_take(const char *path, const uint8_t **data, size_t *len,
                           char *err, size_t err_cap) {
  const snapshot *had = find(path);
  tl_file_view v;
  snapshot *s;
  tl_status st;
  if (had != NULL) {
    *data = had->data;
    *len = had->len;
    return TL_OK;
  }
  st = tl_file_open_regular(path, &v, err, err_cap);
  if (st != TL_OK) return st;
  /* A copy, not the view: a mapping would show a later in-place rewrite. */
  s = calloc(1, sizeof *s);
  if (s != NULL) {
    size_t path_len = strlen(path) + 1;
    s->path = malloc(path_len);
    if (s->path != NULL) memcpy(s->path, path, path_len);
    s->data = malloc(v.len > 0 ? v.len : 1);
  }
  if (s == NULL || s->path == NULL || s->data == NULL) {
    if (s != NULL) {
      free(s->path);
      free(s->data);
      free(s);
    }
    tl_file_close_view(&v);
    return tl_fail(err, err_cap, TL_ERR_OUT_OF_MEMORY,
                   "%s: no memory for its %zu bytes", path, v.len);
  }
  if (v.len > 0) memcpy(s->data, v.data, v.len);
  s->len = v.len;
  tl_file_close_view(&v);
  s->next = taken;
  taken = s;
  *data = s->data;
  *len = s->len;
  return TL_OK;
}

json_t *tl_snapshot_json(const char *path, size_t flags, json_error_t *e) {
  const snapshot *s = find(path);
  if (s == NULL) return json_load_file(path, flags, e);
  return json_loadb((const char *)s->data, s->len, flags, e);
}

void tl_snapshot_release_all(void) {
  while (taken != NULL) {
    snapshot *s = taken;
    taken = s->next;
    free(s->path);
    free(s->data);
    free(s);
  }
}
