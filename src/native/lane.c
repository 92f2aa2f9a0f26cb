#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
#include "lane.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "cli.h"
#include "cpu.h"

tl_lane_options tl_lane_defaults(void) {
  tl_lane_options o = {true, 0, false};
  return o;
}

int tl_lane_flag(bool json, int argc, char **argv, int *i, tl_lane_options *o) {
  const char *a = argv[*i], *v;
  int rc;
  if (strcmp(a, "--mmap") == 0) {
    o->mmap = true;
    return -1;
  }
  if (strcmp(a, "--lane") != 0 && strcmp(a, "-t") != 0 && strcmp(a, "--threads") != 0)
    return 0;
  if ((rc = tl_cli_value(json, argc, argv, i, &v)) >= 0) return rc;
  if (strcmp(a, "--lane") == 0) {
    if (strcmp(v, "fast") != 0 && strcmp(v, "scalar") != 0)
      return tl_cli_usage(json, "--lane must be scalar or fast, not '%s'", v);
    o->fast = strcmp(v, "fast") == 0;
    return -1;
  }
  return tl_cli_flag_u32(json, a, v, 1, TL_PAR_MAX_TASKS, &o->threads);
}

/* Every weight of m whose bytes lie in [from, from + len) moves to the
 * same offset in to. */
static void rebase(tl_qwen3 *m, const uint8_t *from, size_t len, const uint8_t *to) {
  tl_qwen3_weight *top[] = {&m->embed, &m->final_norm, &m->lm_head};
  for (uint32_t l = 0; l <= m->cfg.layers; l++) {
    tl_qwen3_weight *ws[11];
    size_t n = 0;
    if (l == m->cfg.layers) {
      for (; n < 3; n++) ws[n] = top[n];
    } else {
      tl_qwen3_layer *L = &m->layers[l];
      tl_qwen3_weight *all[11] = {&L->attn_norm, &L->q,      &L->k,      &L->v,
                                  &L->o,         &L->q_norm, &L->k_norm, &L->mlp_norm,
                                  &L->gate,      &L->up,     &L->down};
      for (; n < 11; n++) ws[n] = all[n];
    }
    for (size_t i = 0; i < n; i++)
      if (ws[i]->data >= from && ws[i]->data < from + len)
        ws[i]->data = to + (ws[i]->data - from);
  }
}

/* The tensor data section copied into anonymous memory (huge pages when
 * the kernel offers them), slice by slice, each slice of the mapping
 * released after its copy so that the process never holds both. */
static tl_status copy_weights(tl_native_lane *l, tl_qwen3 *m,
                              const tl_native_model *model, char *err,
                              size_t err_cap) {
  enum { SLICE = 64 << 20, HUGE = 2 << 20 };
  const tl_slm_section *sec;
  void *p;
  if (tl_slm_find(&model->slm, TL_SLM_TENSOR_DATA, &sec) != TL_OK || sec->len == 0)
    return TL_OK;
  l->weights_cap = (sec->len + HUGE - 1) / HUGE * HUGE;
  p = mmap(NULL, l->weights_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    snprintf(err, err_cap, "out of memory for a %.1f MB copy of the weights (try --mmap)",
             sec->len / 1e6);
    l->weights_cap = 0;
    return TL_ERR_OUT_OF_MEMORY;
  }
#ifdef MADV_HUGEPAGE
  (void)madvise(p, l->weights_cap, MADV_HUGEPAGE);
#endif
  l->weights = p;
  l->weights_len = sec->len;
  for (size_t off = 0; off < sec->len; off += SLICE) {
    size_t n = sec->len - off < SLICE ? sec->len - off : SLICE;
    memcpy(l->weights + off, sec->data + off, n);
    tl_file_release(&model->view, sec->data + off, n);
  }
  rebase(m, sec->data, sec->len, l->weights);
  return TL_OK;
}

tl_status tl_native_lane_start(tl_native_lane *l, tl_qwen3 *m,
                               const tl_native_model *model,
                               const tl_lane_options *o, char *err,
                               size_t err_cap) {
  tl_status st;
  memset(l, 0, sizeof *l);
  l->fast = o->fast;
  l->threads = o->threads ? o->threads : tl_pool_default_threads();
  if (!o->fast) return tl_qwen3_set_lane(m, NULL, NULL);
  l->kernels = tl_native_kernels();
  st = tl_pool_create(l->threads, &l->pool);
  if (st != TL_OK) {
    snprintf(err, err_cap, "cannot start %u threads (%s)", l->threads, tl_status_name(st));
    return st;
  }
  l->par = tl_pool_parallel(l->pool);
  if (!o->mmap) st = copy_weights(l, m, model, err, err_cap);
  if (st == TL_OK) {
    st = tl_qwen3_set_lane(m, l->kernels, &l->par);
    if (st != TL_OK)
      snprintf(err, err_cap, "invalid quantized weights (%s)", tl_status_name(st));
  }
  if (st != TL_OK) {
    /* back to the file's bytes and the strict lane */
    const tl_slm_section *sec;
    if (l->weights != NULL && tl_slm_find(&model->slm, TL_SLM_TENSOR_DATA, &sec) == TL_OK)
      rebase(m, l->weights, l->weights_len, sec->data);
    (void)tl_qwen3_set_lane(m, NULL, NULL);
    tl_native_lane_stop(l);
  }
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
