/* What the native host glue compiled into the wasm32 API modules
 * (src/native: api, session, turn, model, encoder, chat_render, receipt)
 * asks of its host, provided for the browser: strtod, a clock, the file
 * view (bytes only, no files), and the lane (the fast lane's kernels this
 * module was built with, computing on the calling thread). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi.h"
#include "arena.h"
#include "file.h"
#include "gpu.h"
#include "hash/sha256.h"
#include "json/json.h"
#include "lane.h"
#include "pool.h"
#include "quant/quant.h"

/* --- <stdlib.h>: strtod ---------------------------------------------------
 * The artifact keeps its float defaults as Python repr text, which is JSON
 * number syntax: the core's JSON reader converts it exactly (correctly
 * rounded), as glibc's strtod does. Anything else: 0 with *end = s. */
double strtod(const char *restrict s, char **restrict end) {
  uint8_t mem[512];
  tl_arena arena;
  tl_json_limits limits = tl_json_limits_default();
  tl_json_value *v = NULL;
  tl_json_error err;
  size_t n = strlen(s);
  double out = 0.0;
  tl_arena_init(&arena, mem, sizeof mem);
  if (tl_json_parse((const uint8_t *)s, n, &limits, &arena, &v, &err) == TL_OK &&
      (v->type == TL_JSON_FLOAT || v->type == TL_JSON_INT)) {
    out = v->type == TL_JSON_FLOAT ? v->u.f : (double)v->u.i;
    if (end != NULL) *end = (char *)s + n;
    return out;
  }
  if (end != NULL) *end = (char *)s;
  return out;
}

/* --- <time.h>: the page's monotonic clock ---------------------------------- */
__attribute__((import_module("env"), import_name("tl_host_now_ms"))) double tl_host_now_ms(void);

int clock_gettime(clockid_t clock, struct timespec *ts) {
  double ms = tl_host_now_ms();
  uint64_t us = ms > 0 ? (uint64_t)(ms * 1000.0) : 0;
  (void)clock;
  ts->tv_sec = (time_t)(us / 1000000u);
  ts->tv_nsec = (long)(us % 1000000u) * 1000;
  return 0;
}

/* --- file.h: views over bytes in memory ------------------------------------ */
tl_status tl_file_open_view(const char *path, tl_file_view *view, char *err, size_t err_cap) {
  memset(view, 0, sizeof *view);
  snprintf(err, err_cap, "%s: the wasm32 modules have no files (open bytes instead)", path);
  return TL_ERR_IO;
}

void tl_file_close_view(tl_file_view *view) {
  free(view->buffer);
  memset(view, 0, sizeof *view);
}

void tl_file_release(const tl_file_view *view, const void *data, size_t len) {
  (void)view, (void)data, (void)len; /* nothing is mapped */
}

tl_status tl_file_sha256(const tl_file_view *view, uint8_t digest[32]) {
  return tl_sha256(view->data, view->len, digest);
}

/* --- lane.h: the lanes of this module -------------------------------------- */
tl_lane_options tl_lane_defaults(void) {
  tl_lane_options o = {true, 0, false};
  return o;
}

/* The fast lane's kernels: SIMD128 in the modules built with it, else the
 * scalar twins (same bits, docs/fast-profile.md). Tasks run on the threads
 * module's Web Worker pool when it runs (pool.c), else in order on the
 * calling thread. */
tl_status tl_native_lane_start(tl_native_lane *l, tl_qwen3 *m, const tl_lane_options *o,
                               char *err, size_t err_cap) {
  tl_status st;
  memset(l, 0, sizeof *l);
  l->fast = o->fast;
  l->threads = 1;
  if (!o->fast) {
    l->copy_pending = true; /* packed q8/q4 weights are validated first */
    return tl_qwen3_set_lane(m, NULL, NULL);
  }
  l->kernels = tl_wasm_lane_kernels();
#ifdef __wasm_atomics__
  l->par = tl_wasm_pool_parallel(o->threads, &l->threads);
#else
  l->par.threads = 1;
#endif
  st = tl_qwen3_set_lane(m, l->kernels, &l->par);
  if (st != TL_OK) {
    snprintf(err, err_cap, "cannot select the fast lane (%s)", tl_status_name(st));
    memset(l, 0, sizeof *l);
    return st;
  }
  if (tl_wasm_gpu_on()) l->device = tl_wasm_gpu_device(); /* set on m once uploaded */
  l->copy_pending = true;
  return TL_OK;
}

/* The device keys its matrices by address: rows the artifact holds packed
 * are copied to the same offsets of the lane's own buffer, so that two
 * sessions reading one model's bytes never share a key (a tied weight's
 * two roles land on the same copy). */
static void own_packed_rows(tl_qwen3 *m, const uint8_t *from, size_t len, uint8_t *to) {
  tl_qwen3_weight *w;
  for (size_t i = 0; (w = tl_qwen3_weight_at(m, i)) != NULL; i++) {
    size_t rb;
    if ((w->type != TL_QTYPE_Q8 && w->type != TL_QTYPE_Q4) || w->data != NULL ||
        w->packed < from || w->packed >= from + len)
      continue;
    (void)tl_quant_row_bytes(w->type, w->n, &rb);
    memcpy(to + (w->packed - from), w->packed, rb * w->rows);
    w->packed = to + (w->packed - from);
  }
}

/* The model's bytes are already in this memory (the float tensors are read
 * there, as native --mmap does). q8/q4 weights the artifact holds packed
 * (SLM-11a) are validated (Q-17: the strict lane's decoder checks only the
 * stored layout) and computed on there, with no copy; stored ones are
 * validated and packed into a buffer of the tensor data's size, as is
 * everything the WebGPU device takes (own_packed_rows): the model's bytes
 * stay as they are (the artifact id hashes them; other sessions read
 * them). */
tl_status tl_native_lane_copy(tl_native_lane *l, tl_qwen3 *m, const tl_native_model *model,
                              const char *path, char *err, size_t err_cap) {
  const tl_slm_section *sec;
  tl_status st = TL_OK;
  bool stored, packed;
  if (!l->copy_pending) return TL_OK;
  if (tl_slm_find(&model->slm, TL_SLM_TENSOR_DATA, &sec) != TL_OK || sec->len == 0) {
    l->copy_pending = false;
    return TL_OK;
  }
  tl_qwen3_quant_layouts(m, &stored, &packed);
  if (!l->fast || (!stored && l->device == NULL)) {
    if (packed) st = tl_qwen3_pack(m, NULL, 0, NULL, l->fast ? &l->par : NULL);
  } else {
    l->weights = malloc(sec->len);
    if (l->weights == NULL) {
      snprintf(err, err_cap, "%s: out of memory for %.1f MB of fast-lane weights", path,
               sec->len / 1e6);
      return TL_ERR_OUT_OF_MEMORY;
    }
    l->weights_len = l->weights_cap = sec->len;
    st = tl_qwen3_pack(m, sec->data, sec->len, l->weights, &l->par);
  }
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: invalid quantized weights (%s)", path, tl_status_name(st));
    return st;
  }
  if (l->device != NULL) {
    own_packed_rows(m, sec->data, sec->len, l->weights);
    st = tl_wasm_gpu_upload(m, l->weights, l->weights_len, err, err_cap);
    if (st != TL_OK) return st;
    tl_qwen3_set_device(m, l->device);
  }
  l->copy_pending = false;
  return TL_OK;
}

void tl_native_lane_stop(tl_native_lane *l) {
  if (l->device != NULL && l->weights != NULL) tl_wasm_gpu_release(l->weights, l->weights_len);
  free(l->weights);
  memset(l, 0, sizeof *l);
}

const char *tl_native_lane_profile(const tl_native_lane *l) {
  if (l->kernels == NULL) return "scalar-f32/1";
  return l->device != NULL ? TL_WEBGPU_PROFILE : TL_FAST_PROFILE;
}

const char *tl_native_lane_isa(const tl_native_lane *l) {
  if (l->kernels == NULL) return "scalar";
  return l->device != NULL ? "webgpu" : l->kernels->name;
}

uint32_t tl_native_lane_threads(const tl_native_lane *l) { return l->fast ? l->threads : 1; }
