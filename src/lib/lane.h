/* Choosing the numerical lane of a model on the native host: the strict
 * scalar lane (docs/forward.md) or the fast lane (docs/fast-profile.md)
 * with the fastest kernel variant this CPU runs, its thread pool, and the
 * weights on the file mapping when there is nothing to pack (float
 * weights, or q8/q4 ones the artifact holds packed: docs/slm.md SLM-11a);
 * stored q8/q4 weights copied into anonymous memory and packed there
 * (--mmap: packed from the mapping, the float ones left in it).
 *
 * The flags that choose it (--lane, -t/--threads, --mmap) are the CLI's:
 * tl_lane_flag in src/native/cli.h. */
#ifndef TL_NATIVE_LANE_H
#define TL_NATIVE_LANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "model.h"
#include "model/qwen3.h"
#include "pool.h"

typedef struct tl_lane_options {
  bool fast;        /* --lane fast (the default of run, chat, bench) */
  uint32_t threads; /* -t/--threads; 0: the number of CPUs online */
  bool mmap;        /* --mmap: float weights on the file mapping (the fast
                     * lane's default when it has nothing to pack) */
} tl_lane_options;

/* The defaults: fast lane, threads 0, no mmap. */
tl_lane_options tl_lane_defaults(void);

/* The fast lane's kernel variant, forced by name ("scalar", "avx2",
 * "avx512", ...: tl_kernels.name) instead of the fastest this CPU runs;
 * bit-identical by docs/fast-profile.md, so meant for tests and
 * comparisons. A name this build or CPU cannot run is
 * TL_ERR_UNSUPPORTED_FEATURE when the lane starts. */
#define TL_KERNELS_ENV "TINYLM_KERNELS"

typedef struct tl_native_lane {
  bool fast;
  uint32_t threads;
  const tl_kernels *kernels; /* NULL on the strict lane */
  /* The browser's WebGPU lane (web/wasm/gpu.h): the device that computes
   * the fast lane's q8/q4 products; NULL natively. */
  const tl_kern_device *device;
  tl_pool *pool;
  tl_parallel par;
  /* The weights (tl_native_lane_copy): anonymous memory the size of the
   * tensor data section (the strict lane's too, unless --mmap), or NULL */
  uint8_t *weights;
  size_t weights_len, weights_cap;
  bool mmap;         /* --mmap: float tensors stay in the file mapping */
  bool copy_pending; /* the weights are prepared by tl_native_lane_copy */
  /* Seconds tl_native_lane_copy spent reading the weights into memory and
   * validating + packing them (tinylm bench's load phases). */
  double copy_seconds, pack_seconds;
} tl_native_lane;

/* Puts model m on the lane o asks for; the fast lane's weights wait for
 * tl_native_lane_copy, so that a memory budget can refuse a plan before
 * anything large is allocated. On failure (err says why) m is on the
 * strict lane and nothing is held: TL_ERR_WORKER_FAILURE,
 * TL_ERR_OUT_OF_MEMORY, TL_ERR_UNSUPPORTED_FEATURE (TL_KERNELS_ENV names
 * a variant this build or CPU cannot run). Call before planning the
 * session (the scratch bound depends on the lane). */
tl_status tl_native_lane_start(tl_native_lane *l, tl_qwen3 *m,
                               const tl_lane_options *o, char *err,
                               size_t err_cap);

/* The lane's weights, when it has not prepared them: the q8/q4 weights
 * validated once (F-9: TL_ERR_INVALID_MODEL), on the file mapping when the
 * fast lane has nothing to pack; else the tensor data copied into
 * anonymous memory (not with --mmap; the file at path, model's, is read
 * again) and, on the fast lane, packed there (tl_qwen3_pack); a file
 * changed meanwhile is TL_ERR_IO. m is bound to model's tensors. On
 * failure m must not run. */
tl_status tl_native_lane_copy(tl_native_lane *l, tl_qwen3 *m,
                              const tl_native_model *model, const char *path,
                              char *err, size_t err_cap);
/* Releases what start took; m must not run afterwards. Zeroed l: nothing. */
void tl_native_lane_stop(tl_native_lane *l);

/* "fast/4", "webgpu/1" (the device's) or "scalar-f32/1" (the strict
 * lane's name in receipts), the
 * kernel variant ("avx512", ...; "scalar" on the strict lane) and the
 * threads that compute (1 on the strict lane). */
const char *tl_native_lane_profile(const tl_native_lane *l);
const char *tl_native_lane_isa(const tl_native_lane *l);
uint32_t tl_native_lane_threads(const tl_native_lane *l);

#endif
