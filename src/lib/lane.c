#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise, pread */
#include "lane.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"

tl_lane_options tl_lane_defaults(void) {
  tl_lane_options o = {true, 0, false};
  return o;
}

/* Every weight of m whose bytes (stored or packed) lie in [from, from +
 * len) moves to the same offset in to. */
static void rebase(tl_qwen3 *m, const uint8_t *from, size_t len, const uint8_t *to) {
  tl_qwen3_weight *w;
  for (size_t i = 0; (w = tl_qwen3_weight_at(m, i)) != NULL; i++) {
    if (w->data >= from && w->data < from + len) w->data = to + (w->data - from);
    if (w->packed >= from && w->packed < from + len) w->packed = to + (w->packed - from);
  }
}

/* The tensor data section read from the file into anonymous memory, slice
 * by slice: pread copies from the page cache without faulting the file
 * mapping in, and each slice of the mapping (resident since the open
 * verified it) is released first, so the process never holds both. No
 * MADV_HUGEPAGE: on the Intel VM faulting huge pages in compacted memory
 * and made the copy three times slower; on the AMD one it made the copy
 * of 670 MB of q8 weights 1.8 s faster (the first touch of each 4 KB
 * page costs about 12 us there) but decoding 15-25% slower, measured
 * alternately (docs/fast-profile.md, time to first token).
 * Like the mapping (whose released pages fault in from the file again),
 * this reads the file after the open verified it: a file rewritten in
 * between is not re-verified. A view without a file (stdin) is copied. */
typedef struct copy_job {
  const tl_file_view *view;
  const uint8_t *src; /* the section in the view */
  uint8_t *dst;
  size_t len, at; /* bytes; the section's offset in the file */
  int fd;         /* -1: copy from the view */
} copy_job;

/* Task i's share of the section, in slices of 8 MB. */
static void copy_task(void *ctx, uint32_t task, uint32_t n_tasks) {
  enum { SLICE = 8 << 20 };
  const copy_job *j = ctx;
  size_t b, e;
  tl_par_range((j->len + SLICE - 1) / SLICE, task, n_tasks, &b, &e);
  b *= SLICE;
  e = e * SLICE < j->len ? e * SLICE : j->len;
  for (size_t off = b; off < e;) {
    size_t n = e - off < SLICE ? e - off : SLICE;
    ssize_t got;
    tl_file_release(j->view, j->src + off, n);
    got = j->fd >= 0 ? pread(j->fd, j->dst + off, n, (off_t)(j->at + off)) : -1;
    if (got <= 0) {
      /* no file to read (stdin) or a read error: copy from the view */
      memcpy(j->dst + off, j->src + off, n);
      tl_file_release(j->view, j->src + off, n);
      got = (ssize_t)n;
    }
    off += (size_t)got;
  }
}

/* The weights' q8/q4 codes checked (Q-17, F-9) in whichever layout they
 * have, on the pool's threads (the strict lane: one), before any use. */
static tl_status validate_weights(tl_native_lane *l, tl_qwen3 *m, char *err, size_t err_cap) {
  double t0 = tl_now_s();
  tl_status st = tl_qwen3_pack(m, NULL, 0, NULL, l->fast ? &l->par : NULL);
  l->pack_seconds = tl_now_s() - t0;
  if (st != TL_OK) snprintf(err, err_cap, "invalid quantized weights (%s)", tl_status_name(st));
  return st;
}

/* The fast lane's weights. With nothing to pack (float weights, or q8/q4
 * ones the artifact holds packed: SLM-11) the lane computes on the file
 * mapping: no copy (the open verified those bytes, or the verified stamp
 * vouches for them; the SIGBUS guard and tl_native_model_changed cover a
 * file changed under it). Otherwise anonymous memory the size of the
 * tensor data section: without --mmap the section is copied there first;
 * then the q8/q4 weights are validated and packed into it (in place over
 * the copy, or from the mapping: --mmap leaves only the float tensors in
 * the mapping). The strict lane copies unless --mmap, and validates
 * packed q8/q4 weights (its decoder checks only the stored layout). */
static tl_status prepare_weights(tl_native_lane *l, tl_qwen3 *m,
                                 const tl_native_model *model, const char *path,
                                 char *err, size_t err_cap) {
  enum { HUGE = 2 << 20 };
  const tl_slm_section *sec;
  const uint8_t *from;
  bool stored, packed;
  tl_status st;
  double t0 = tl_now_s();
  void *p;
  if (tl_slm_find(&model->slm, TL_SLM_TENSOR_DATA, &sec) != TL_OK || sec->len == 0)
    return TL_OK;
  tl_qwen3_quant_layouts(m, &stored, &packed);
  if ((l->fast && !stored) || (!l->fast && l->mmap)) { /* on the mapping */
    /* a codes stamp: these very bytes passed Q-17 before (stamp.h) */
    st = packed && !model->codes_valid ? validate_weights(l, m, err, err_cap) : TL_OK;
    /* what was validated may have been a truncated file's zeros */
    if (tl_native_model_changed(model)) {
      snprintf(err, err_cap, "%s changed while in use", path);
      return TL_ERR_IO;
    }
    if (st == TL_OK && packed) tl_native_model_codes_valid(model);
    return st;
  }
  l->weights_cap = (sec->len + HUGE - 1) / HUGE * HUGE;
  p = mmap(NULL, l->weights_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    snprintf(err, err_cap, "out of memory for %.1f MB of fast-lane weights", sec->len / 1e6);
    l->weights_cap = 0;
    return TL_ERR_OUT_OF_MEMORY;
  }
  l->weights = p;
  l->weights_len = sec->len;
  from = sec->data;
  if (!l->mmap) {
    copy_job j;
    j.view = &model->view;
    j.src = sec->data;
    j.dst = l->weights;
    j.len = sec->len;
    j.at = (size_t)(sec->data - model->view.data);
    /* the file the model holds open (the one mapped), never path again */
    j.fd = model->view.mapping != NULL ? model->fd : -1;
    if (l->fast)
      tl_parallel_run(&l->par, copy_task, &j, l->par.threads);
    else
      copy_task(&j, 0, 1);
    rebase(m, sec->data, sec->len, l->weights);
    from = l->weights;
    /* copied from a file that changed since the open verified it */
    if (tl_native_model_changed(model)) {
      snprintf(err, err_cap, "%s changed while in use", path);
      return TL_ERR_IO;
    }
  }
  l->copy_seconds = tl_now_s() - t0;
  /* the strict lane computes on the copy as it is */
  if (!l->fast) return packed ? validate_weights(l, m, err, err_cap) : TL_OK;
  t0 = tl_now_s();
  st = tl_qwen3_pack(m, from, sec->len, l->weights, &l->par);
  l->pack_seconds = tl_now_s() - t0;
  if (st != TL_OK) snprintf(err, err_cap, "invalid quantized weights (%s)", tl_status_name(st));
  return st;
}

/* The variant TINYLM_KERNELS names (unset or empty: the fastest this CPU
 * runs); one this build lacks or this CPU cannot run is refused, naming
 * those it can. */
static tl_status pick_kernels(const tl_kernels **out, char *err, size_t err_cap) {
  const char *want = getenv(TL_KERNELS_ENV);
  char names[128] = "";
  size_t used = 0;
  *out = tl_native_kernels();
  if (want == NULL || want[0] == '\0') return TL_OK;
  for (int i = 0; i < TL_KERN_ISA_COUNT; i++) {
    const tl_kernels *k = tl_kernels_get((tl_kern_isa)i);
    if (k == NULL || !tl_native_kernels_supported((tl_kern_isa)i)) continue;
    if (strcmp(k->name, want) == 0) {
      *out = k;
      return TL_OK;
    }
    if (used < sizeof names)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                               used ? ", " : "", k->name);
  }
  snprintf(err, err_cap, "%s=%s: not a kernel variant this build and CPU run (%s)",
           TL_KERNELS_ENV, want, names);
  return TL_ERR_UNSUPPORTED_FEATURE;
}

tl_status tl_native_lane_start(tl_native_lane *l, tl_qwen3 *m,
                               const tl_lane_options *o, char *err,
                               size_t err_cap) {
  tl_status st;
  memset(l, 0, sizeof *l);
  l->fast = o->fast;
  l->threads = o->threads ? o->threads : tl_pool_default_threads();
  if (!o->fast) {
    /* the strict lane computes on a copy of the weights too (--mmap: on
     * the mapping), so that nothing depends on the file after the open;
     * packed q8/q4 weights are validated there either way */
    l->mmap = o->mmap;
    l->copy_pending = true;
    return tl_qwen3_set_lane(m, NULL, NULL);
  }
  if ((st = pick_kernels(&l->kernels, err, err_cap)) != TL_OK) {
    l->kernels = NULL;
    return st;
  }
  st = tl_pool_create(l->threads, &l->pool);
  if (st != TL_OK) {
    snprintf(err, err_cap, "cannot start %u threads (%s)", l->threads, tl_status_name(st));
    return st;
  }
  l->par = tl_pool_parallel(l->pool);
  st = tl_qwen3_set_lane(m, l->kernels, &l->par);
  if (st != TL_OK) {
    snprintf(err, err_cap, "cannot select the fast lane (%s)", tl_status_name(st));
    tl_native_lane_stop(l);
    return st;
  }
  l->mmap = o->mmap;
  l->copy_pending = true;
  return TL_OK;
}

tl_status tl_native_lane_copy(tl_native_lane *l, tl_qwen3 *m,
                              const tl_native_model *model, const char *path,
                              char *err, size_t err_cap) {
  tl_status st;
  if (!l->copy_pending) return TL_OK;
  st = prepare_weights(l, m, model, path, err, err_cap);
  if (st == TL_OK) l->copy_pending = false;
  return st;
}

void tl_native_lane_stop(tl_native_lane *l) {
  tl_pool_destroy(l->pool);
  if (l->weights != NULL) munmap(l->weights, l->weights_cap);
  memset(l, 0, sizeof *l);
}

const char *tl_native_lane_profile(const tl_native_lane *l) {
  return l->kernels != NULL ? TL_FAST_PROFILE : "scalar-f32/1";
}

const char *tl_native_lane_isa(const tl_native_lane *l) {
  return l->kernels != NULL ? l->kernels->name : "scalar";
}

uint32_t tl_native_lane_threads(const tl_native_lane *l) {
  return l->fast ? l->threads : 1;
}
