/* The models of `tinylm serve` (docs/server.md, Several models): each one
 * named by its file name without ".slm", loaded on first use within a
 * memory budget, the least recently used idle one unloaded when a new one
 * does not fit. A model in use (a request holds it: its jobs run or wait)
 * is never unloaded.
 *
 * The registry does not know engines: a loader opens and closes whatever
 * a model is (serve_engine.c for the server, a fake in the unit test), so
 * the eviction rules are tested alone. One load at a time; loaded models
 * stay usable while another loads.
 *
 * Thread-safe: any thread may acquire and release. */
#ifndef TL_NATIVE_SERVE_MODELS_H
#define TL_NATIVE_SERVE_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_SRV_MAX_MODELS 64
#define TL_SRV_MODEL_NAME_CAP 128

typedef struct tl_srv_loader {
  /* Opens model i (path) within budget bytes (0: no budget of the
   * registry's: the loader's own limit applies); TL_ERR_OUT_OF_MEMORY
   * when it does not fit. *bytes: what it holds. */
  tl_status (*open)(void *ctx, size_t i, const char *path, uint64_t budget, void **out,
                    uint64_t *bytes, char *err, size_t err_cap);
  /* Closes an idle model (called with the registry locked: visitors
   * never see a model half gone). */
  void (*close)(void *ctx, size_t i, void *handle);
  void *ctx;
} tl_srv_loader;

typedef struct tl_srv_models tl_srv_models;

/* A model's name from its path: the file name without ".slm". */
void tl_srv_model_name(const char *path, char *out, size_t cap);

/* The registry of paths[0..n) (1..TL_SRV_MAX_MODELS; the first is the
 * default), none loaded. Two paths with one name: TL_ERR_INVALID_ARGUMENT,
 * both paths in err. */
tl_status tl_srv_models_create(const char *const *paths, size_t n, uint64_t budget,
                               const tl_srv_loader *loader, tl_srv_models **out, char *err,
                               size_t err_cap);
/* Closes every loaded model (none may be held). */
void tl_srv_models_destroy(tl_srv_models *m);

size_t tl_srv_models_count(const tl_srv_models *m);
/* The index of the model called name, or -1. */
int tl_srv_models_find(const tl_srv_models *m, const char *name);

/* Model i loaded (loading it first, unloading the least recently used
 * idle models while it does not fit) and held until release. Waits while
 * another model loads. TL_ERR_OUT_OF_MEMORY with *busy set: it does not
 * fit beside the models in use (a later try may succeed); other failures
 * are the loader's, *busy false. */
tl_status tl_srv_models_acquire(tl_srv_models *m, size_t i, void **handle, bool *busy,
                                char *err, size_t err_cap);
void tl_srv_models_release(tl_srv_models *m, size_t i);

typedef struct tl_srv_model_info {
  const char *name, *path;
  void *handle; /* NULL when not loaded */
  uint32_t holders;
  uint64_t bytes, loads, unloads;
} tl_srv_model_info;
/* Calls f for every model in order, with the registry locked (a handle
 * given to f stays open until f returns; f must not acquire). */
void tl_srv_models_visit(tl_srv_models *m, void (*f)(void *ctx, size_t i,
                                                     const tl_srv_model_info *info),
                         void *ctx);

#endif
