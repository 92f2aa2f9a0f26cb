#define _GNU_SOURCE /* pthread_getattr_np, mincore */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A worker spins this many rounds on the generation word before sleeping:
 * decoding issues a few hundred short calls per token, and a condition
 * variable wake-up costs more than most of them. About 50 us on Zen 5
 * (pause is ~25 ns there): the gaps between a step's calls are shorter,
 * and a longer spin burns a CPU that a 2-vCPU host needs for the thread
 * it waits for (tinylm serve's slot and HTTP threads, a preempted
 * caller). 20000 rounds (0.5 ms) took 20-25% more CPU per token under
 * tinylm serve and bench --batch on a loaded 2-vCPU EPYC, and decoded
 * slower there. */
#define SPIN_ROUNDS 2000

struct tl_pool {
  pthread_t *workers;
  uint32_t n_workers, started;
  pthread_mutex_t mu;
  pthread_cond_t wake, done_cv;
  /* The current call as one word: generation (32 bits), task count (16),
   * next task to hand out (16). A task is claimed by a compare-and-swap
   * that also checks the generation, so a worker late from an earlier call
   * can never claim a task of the next one with a stale count. */
  _Atomic uint64_t state;
  atomic_uint done; /* tasks of the current call finished */
  atomic_bool stop;
  /* written before state publishes a new generation */
  tl_par_fn fn;
  void *ctx;
};

#define GEN(s) ((uint32_t)((s) >> 32))
#define COUNT(s) ((uint32_t)((s) >> 16) & 0xFFFFu)
#define INDEX(s) ((uint32_t)(s) & 0xFFFFu)

/* A spin-wait hint: the core may give the cycles to its other thread and
 * saves power (x86 pause, AArch64 yield). */
static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Runs tasks of generation gen until none are left. */
static void drain(tl_pool *p, uint32_t gen) {
  for (;;) {
    uint64_t s = atomic_load(&p->state);
    uint32_t n = COUNT(s);
    if (GEN(s) != gen || INDEX(s) >= n) return;
    if (!atomic_compare_exchange_weak(&p->state, &s, s + 1)) continue;
    p->fn(p->ctx, INDEX(s), n);
    if (atomic_fetch_add(&p->done, 1) + 1 == n) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_broadcast(&p->done_cv);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

static void *worker(void *arg) {
  tl_pool *p = arg;
  /* Generation 0 is the pool's creation: a worker that starts late (even
   * after tl_pool_destroy's last generation) must still see every later
   * one, not sleep through it. */
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = GEN(atomic_load(&p->state));
    for (int s = 0; g == seen && s < SPIN_ROUNDS; s++) {
      cpu_relax();
      g = GEN(atomic_load(&p->state));
    }
    if (g == seen) {
      pthread_mutex_lock(&p->mu);
      while ((g = GEN(atomic_load(&p->state))) == seen) pthread_cond_wait(&p->wake, &p->mu);
      pthread_mutex_unlock(&p->mu);
    }
    seen = g;
    if (atomic_load(&p->stop)) return NULL;
    drain(p, g);
  }
}

/* Publishes a new generation with n tasks (n = 0: nothing to run). */
static uint32_t publish(tl_pool *p, uint32_t n) {
  uint32_t gen = GEN(atomic_load(&p->state)) + 1;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->state, (uint64_t)gen << 32 | (uint64_t)n << 16);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  return gen;
}

static void pool_run(void *host, tl_par_fn fn, void *ctx, uint32_t n_tasks) {
  tl_pool *p = host;
  uint32_t gen;
  p->fn = fn;
  p->ctx = ctx;
  atomic_store(&p->done, 0);
  gen = publish(p, n_tasks);
  drain(p, gen);
  for (int s = 0; atomic_load(&p->done) != n_tasks && s < SPIN_ROUNDS; s++) cpu_relax();
  if (atomic_load(&p->done) != n_tasks) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->done) != n_tasks) pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
}

tl_status tl_pool_create(uint32_t threads, tl_pool **out) {
  tl_pool *p;
  *out = NULL;
  if (threads == 0 || threads > TL_PAR_MAX_TASKS) return TL_ERR_INVALID_ARGUMENT;
  p = calloc(1, sizeof *p);
  if (p == NULL) return TL_ERR_OUT_OF_MEMORY;
  p->n_workers = threads - 1;
  p->workers = calloc(p->n_workers ? p->n_workers : 1, sizeof *p->workers);
  if (p->workers == NULL) {
    free(p);
    return TL_ERR_OUT_OF_MEMORY;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  atomic_init(&p->state, 0);
  atomic_init(&p->done, 0);
  atomic_init(&p->stop, false);
  for (; p->started < p->n_workers; p->started++)
    if (pthread_create(&p->workers[p->started], NULL, worker, p) != 0) {
      tl_pool_destroy(p);
      return TL_ERR_WORKER_FAILURE;
    }
  *out = p;
  return TL_OK;
}

void tl_pool_destroy(tl_pool *p) {
  if (p == NULL) return;
  atomic_store(&p->stop, true);
  (void)publish(p, 0);
  for (uint32_t i = 0; i < p->started; i++) pthread_join(p->workers[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done_cv);
  free(p->workers);
  free(p);
}

tl_parallel tl_pool_parallel(tl_pool *p) {
  tl_parallel par = {pool_run, p, p->n_workers + 1};
  return par;
}

uint64_t tl_pool_stack_resident(const tl_pool *p) {
  uint64_t bytes = 0;
#if defined(__linux__)
  long page = sysconf(_SC_PAGESIZE);
  for (uint32_t i = 0; p != NULL && page > 0 && i < p->started; i++) {
    pthread_attr_t a;
    void *lo;
    size_t size;
    uintptr_t b, e;
    unsigned char *vec;
    if (pthread_getattr_np(p->workers[i], &a) != 0) continue;
    if (pthread_attr_getstack(&a, &lo, &size) == 0) {
      b = (uintptr_t)lo / (uintptr_t)page * (uintptr_t)page;
      e = ((uintptr_t)lo + size + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
      vec = malloc((e - b) / (uintptr_t)page);
      if (vec != NULL && mincore((void *)b, e - b, vec) == 0)
        for (uintptr_t k = 0; k < (e - b) / (uintptr_t)page; k++)
          bytes += (vec[k] & 1) ? (uint64_t)page : 0;
      free(vec);
    }
    pthread_attr_destroy(&a);
  }
#else
  (void)p;
#endif
  return bytes;
}

uint32_t tl_pool_default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  return n > TL_PAR_MAX_TASKS ? TL_PAR_MAX_TASKS : (uint32_t)n;
}
