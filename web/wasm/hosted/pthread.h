/* The <pthread.h> of the wasm32 API modules: the one mutex the public API
 * keeps (src/lib/api.c). The modules run every API call on one thread
 * (the JS loader's; the threads module's workers run only kernel tasks),
 * so the mutex has nothing to exclude and its calls do nothing. */
#ifndef TL_WASM_PTHREAD_H
#define TL_WASM_PTHREAD_H

typedef struct {
  int unused;
} pthread_mutex_t;
#define PTHREAD_MUTEX_INITIALIZER {0}

static inline int pthread_mutex_lock(pthread_mutex_t *m) {
  (void)m;
  return 0;
}
static inline int pthread_mutex_unlock(pthread_mutex_t *m) {
  (void)m;
  return 0;
}

#endif
