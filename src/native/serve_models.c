/* The model registry of `tinylm serve` (serve_models.h). */
#include "serve_models.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct model {
  char name[TL_SRV_MODEL_NAME_CAP];
  const char *path;
  void *handle;
  uint32_t holders;
  uint64_t bytes, last_use, loads, unloads;
} model;

struct tl_srv_models {
  pthread_mutex_t lock;
  pthread_cond_t loaded; /* a load ended */
  tl_srv_loader loader;
  uint64_t budget, clock;
  bool loading;
  size_t n;
  model m[TL_SRV_MAX_MODELS];
};

void tl_srv_model_name(const char *path, char *out, size_t cap) {
  const char *base = strrchr(path, '/');
  size_t len;
  base = base != NULL ? base + 1 : path;
  len = strlen(base);
  if (len > 4 && strcmp(base + len - 4, ".slm") == 0) len -= 4;
  snprintf(out, cap, "%.*s", (int)len, base);
}

tl_status tl_srv_models_create(const char *const *paths, size_t n, uint64_t budget,
                               const tl_srv_loader *loader, tl_srv_models **out, char *err,
                               size_t err_cap) {
  tl_srv_models *m;
  *out = NULL;
  if (n < 1 || n > TL_SRV_MAX_MODELS) {
    snprintf(err, err_cap, "1 to %d models, not %zu", TL_SRV_MAX_MODELS, n);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if ((m = calloc(1, sizeof *m)) == NULL) {
    snprintf(err, err_cap, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < n; i++) {
    tl_srv_model_name(paths[i], m->m[i].name, sizeof m->m[i].name);
    m->m[i].path = paths[i];
    for (size_t j = 0; j < i; j++)
      if (strcmp(m->m[j].name, m->m[i].name) == 0) {
        snprintf(err, err_cap, "%s and %s are both called '%s': rename one", paths[j], paths[i],
                 m->m[i].name);
        free(m);
        return TL_ERR_INVALID_ARGUMENT;
      }
  }
  pthread_mutex_init(&m->lock, NULL);
  pthread_cond_init(&m->loaded, NULL);
  m->loader = *loader;
  m->budget = budget;
  m->n = n;
  *out = m;
  return TL_OK;
}

void tl_srv_models_destroy(tl_srv_models *m) {
  if (m == NULL) return;
  for (size_t i = 0; i < m->n; i++)
    if (m->m[i].handle != NULL) m->loader.close(m->loader.ctx, i, m->m[i].handle);
  pthread_cond_destroy(&m->loaded);
  pthread_mutex_destroy(&m->lock);
  free(m);
}

size_t tl_srv_models_count(const tl_srv_models *m) { return m->n; }

int tl_srv_models_find(const tl_srv_models *m, const char *name) {
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->m[i].name, name) == 0) return (int)i;
  return -1;
}

/* The least recently used loaded model nobody holds, or NULL. Locked. */
static model *idle_lru(tl_srv_models *m) {
  model *best = NULL;
  for (size_t i = 0; i < m->n; i++) {
    model *x = &m->m[i];
    if (x->handle != NULL && x->holders == 0 && (best == NULL || x->last_use < best->last_use))
      best = x;
  }
  return best;
}

static void unload(tl_srv_models *m, model *x) {
  m->loader.close(m->loader.ctx, (size_t)(x - m->m), x->handle);
  x->handle = NULL;
  x->bytes = 0;
  x->unloads++;
}

/* Loads x (locked on entry and exit; the lock is let go while the loader
 * opens). */
static tl_status load(tl_srv_models *m, model *x, bool *busy, char *err, size_t err_cap) {
  tl_status st;
  for (;;) {
    uint64_t used = 0, bytes = 0;
    void *h = NULL;
    model *victim;
    for (size_t i = 0; i < m->n; i++) used += m->m[i].bytes;
    if (m->budget == 0 || used < m->budget) {
      m->loading = true;
      pthread_mutex_unlock(&m->lock);
      st = m->loader.open(m->loader.ctx, (size_t)(x - m->m), x->path,
                          m->budget != 0 ? m->budget - used : 0, &h, &bytes, err, err_cap);
      pthread_mutex_lock(&m->lock);
      m->loading = false;
      pthread_cond_broadcast(&m->loaded);
      if (st == TL_OK) {
        x->handle = h;
        x->bytes = bytes;
        x->loads++;
        return TL_OK;
      }
      if (st != TL_ERR_OUT_OF_MEMORY) return st;
    }
    /* it does not fit: make room, oldest idle model first */
    if ((victim = idle_lru(m)) == NULL) {
      bool others = used > 0;
      *busy = others;
      if (others)
        snprintf(err, err_cap,
                 "model '%s' does not fit beside the models in use (%.1f MB held); retry "
                 "when one is idle",
                 x->name, used / 1e6);
      else if (m->budget != 0 && err[0] == '\0')
        snprintf(err, err_cap, "model '%s' does not fit in --mem-budget", x->name);
      return TL_ERR_OUT_OF_MEMORY;
    }
    unload(m, victim);
    err[0] = '\0';
  }
}

tl_status tl_srv_models_acquire(tl_srv_models *m, size_t i, void **handle, bool *busy,
                                char *err, size_t err_cap) {
  model *x = &m->m[i];
  tl_status st = TL_OK;
  *busy = false;
  *handle = NULL;
  if (err_cap > 0) err[0] = '\0';
  pthread_mutex_lock(&m->lock);
  while (x->handle == NULL && m->loading) pthread_cond_wait(&m->loaded, &m->lock);
  if (x->handle == NULL) st = load(m, x, busy, err, err_cap);
  if (st == TL_OK) {
    x->holders++;
    x->last_use = ++m->clock;
    *handle = x->handle;
  }
  pthread_mutex_unlock(&m->lock);
  return st;
}

void tl_srv_models_release(tl_srv_models *m, size_t i) {
  pthread_mutex_lock(&m->lock);
  if (m->m[i].holders > 0) m->m[i].holders--;
  pthread_mutex_unlock(&m->lock);
}

void tl_srv_models_visit(tl_srv_models *m, void (*f)(void *ctx, size_t i,
                                                     const tl_srv_model_info *info),
                         void *ctx) {
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < m->n; i++) {
    const model *x = &m->m[i];
    tl_srv_model_info info = {x->name, x->path, x->handle, x->holders,
                              x->bytes, x->loads,  x->unloads};
    f(ctx, i, &info);
  }
  pthread_mutex_unlock(&m->lock);
}
