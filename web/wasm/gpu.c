/* The WebGPU lane's glue: see gpu.h. */
#include "gpu.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "bytes.h"
#include "model/selftest_model.h"
#include "quant/quant.h"


/* The loader's device (web/tinylm.js). upload: rows * row_bytes packed
 * bytes at w, once per matrix; release: every matrix inside [w, w + len);
 * products: tl_kern_device.products over the memory's layouts (a
 * suspending import in the browser: the module waits for the GPU). Each
 * returns TL_OK or the status of the device's failure. */
IMPORT(tl_host_gpu_upload)
int tl_host_gpu_upload(uint32_t type, const uint8_t *w, size_t row_bytes, size_t n, size_t rows);
IMPORT(tl_host_gpu_release) void tl_host_gpu_release(const uint8_t *w, size_t len);
IMPORT(tl_host_gpu_products)
int tl_host_gpu_products(const tl_kern_mat *mats, size_t n_mats, const tl_kern_x *xs,
                         size_t tokens);

/* The layouts the loader reads (wasm32: six and five 32-bit fields). */
AT(tl_kern_mat, type, 0);
AT(tl_kern_mat, w, 4);
AT(tl_kern_mat, row_bytes, 8);
AT(tl_kern_mat, n, 12);
AT(tl_kern_mat, rows, 16);
AT(tl_kern_mat, y, 20);
_Static_assert(sizeof(tl_kern_mat) == 24, "tl_kern_mat");
AT(tl_kern_x, f, 0);
AT(tl_kern_x, codes, 4);
AT(tl_kern_x, scales, 8);
_Static_assert(sizeof(tl_kern_x) == 20, "tl_kern_x");

/* What check mode saw (tl_wasm_gpu_stats). */
enum { ST_PRODUCTS, ST_ELEMENTS, ST_DIFFERENT, ST_MAX_RATIO, ST_FAILURES, ST_COUNT };

static struct {
  bool on, check;
  double stats[ST_COUNT];
} gpu;

bool tl_wasm_gpu_on(void) { return gpu.on; }

/* Every output of the call against the module's own kernels (F-4/F-5, the
 * bits the native fast lane gives) within W-3's bound. */
static tl_status check(const tl_kern_mat *mats, size_t n_mats, const tl_kern_x *xs,
                       size_t tokens) {
  const tl_kernels *k = tl_wasm_lane_kernels();
  tl_status st = TL_OK;
  for (size_t i = 0; i < n_mats; i++) {
    const tl_kern_mat *mt = &mats[i];
    float *ref = malloc(mt->rows * sizeof(float));
    if (ref == NULL) return TL_ERR_OUT_OF_MEMORY;
    for (size_t t = 0; t < tokens; t++) {
      const float *y = mt->y + t * mt->rows;
      k->rows[mt->type](mt->w, mt->row_bytes, mt->n, &xs[t], mt->rows, ref);
      for (size_t r = 0; r < mt->rows; r++) {
        double d = (double)y[r] - (double)ref[r], bound, ratio;
        gpu.stats[ST_ELEMENTS] += 1;
        if (tl_f32_to_bits(y[r]) == tl_f32_to_bits(ref[r])) continue;
        /* the bound only where the bits differ; a NaN is never within it,
         * and a difference where none is allowed (bound 0) is infinitely
         * far */
        gpu.stats[ST_DIFFERENT] += 1;
        bound = tl_kern_device_bound((tl_qtype)mt->type, mt->w + r * mt->row_bytes, mt->n, &xs[t]);
        if (d < 0) d = -d;
        ratio = bound > 0 && d == d ? d / bound : __builtin_inf();
        if (ratio > gpu.stats[ST_MAX_RATIO]) gpu.stats[ST_MAX_RATIO] = ratio;
        if (!(ratio <= 1.0)) {
          gpu.stats[ST_FAILURES] += 1;
          st = TL_ERR_NUMERICAL_FAILURE;
        }
      }
    }
    free(ref);
  }
  return st;
}

static tl_status products(void *ctx, const tl_kern_mat *mats, size_t n_mats, const tl_kern_x *xs,
                          size_t tokens) {
  tl_status st = (tl_status)tl_host_gpu_products(mats, n_mats, xs, tokens);
  (void)ctx;
  gpu.stats[ST_PRODUCTS] += 1;
  return st == TL_OK && gpu.check ? check(mats, n_mats, xs, tokens) : st;
}

static const tl_kern_device device = {NULL, products};

const tl_kern_device *tl_wasm_gpu_device(void) { return &device; }

tl_status tl_wasm_gpu_upload(tl_qwen3 *m, const uint8_t *base, size_t len, char *err,
                             size_t err_cap) {
  const tl_qwen3_weight *w;
  for (size_t i = 0; (w = tl_qwen3_weight_at(m, i)) != NULL; i++) {
    bool seen = false;
    size_t rb;
    tl_status st;
    if ((w->type != TL_QTYPE_Q8 && w->type != TL_QTYPE_Q4) || w->packed == NULL) continue;
    for (size_t j = 0; j < i && !seen; j++) seen = tl_qwen3_weight_at(m, j)->packed == w->packed;
    if (seen) continue; /* tied: already there */
    (void)tl_quant_row_bytes(w->type, w->n, &rb);
    if (w->packed < base || w->packed + rb * w->rows > base + len) st = TL_ERR_INTERNAL_INVARIANT;
    else st = (tl_status)tl_host_gpu_upload((uint32_t)w->type, w->packed, rb, w->n, w->rows);
    if (st != TL_OK) {
      snprintf(err, err_cap, "the WebGPU device did not take weight %zu (%zu x %zu %s): %s", i,
               w->rows, w->n, w->type == TL_QTYPE_Q8 ? "q8" : "q4", tl_status_name(st));
      tl_host_gpu_release(base, len);
      return st;
    }
  }
  return TL_OK;
}

void tl_wasm_gpu_release(const uint8_t *base, size_t len) { tl_host_gpu_release(base, len); }

tl_status tl_wasm_gpu_self_test(void) {
  static const size_t quantized[] = {3, 4}; /* tl_selftest_gen: q8, then q4 (tied) */
  uint8_t *work;
  bool was = gpu.check;
  tl_status st = TL_OK;
  if (!gpu.on) return TL_ERR_UNSUPPORTED_FEATURE;
  work = malloc(TL_SELFTEST_WORK_BYTES);
  if (work == NULL) return TL_ERR_OUT_OF_MEMORY;
  gpu.check = true;
  for (size_t i = 0; i < sizeof quantized / sizeof quantized[0] && st == TL_OK; i++) {
    tl_arena arena;
    tl_selftest_model s;
    tl_blake3_hasher h;
    char err[160];
    tl_blake3_hasher_init(&h);
    st = tl_arena_init(&arena, work, TL_SELFTEST_WORK_BYTES);
    if (st == TL_OK) st = tl_selftest_open(&s, quantized[i], &arena);
    /* packed here first so that the device holds the rows the run packs
     * again (the same bytes at the same place) */
    if (st == TL_OK) st = tl_qwen3_pack(&s.m, s.file, s.len, s.pack, NULL);
    if (st == TL_OK) st = tl_wasm_gpu_upload(&s.m, s.pack, s.len, err, sizeof err);
    if (st == TL_OK) {
      tl_qwen3_set_device(&s.m, &device);
      st = tl_selftest_run(&s, tl_wasm_lane_kernels(), NULL, &arena, &h);
      tl_wasm_gpu_release(s.pack, s.len);
    }
  }
  gpu.check = was;
  free(work);
  return st == TL_OK ? TL_OK : TL_ERR_SELF_TEST_FAILED;
}

/* on: the fast lane of sessions made from now on hands its q8/q4 products
 * to the loader's device (webgpu/1). Returns TL_OK. */
tl_status tl_wasm_gpu_enable(uint32_t on);
EXPORT(tl_wasm_gpu_enable) tl_status tl_wasm_gpu_enable(uint32_t on) {
  gpu.on = on != 0;
  return TL_OK;
}

/* on: every product the device returns is also computed by this module's
 * kernels and must lie within W-3's bound (else the forward pass fails,
 * numerical_failure), and the statistics below are kept. */
tl_status tl_wasm_gpu_check(uint32_t on);
EXPORT(tl_wasm_gpu_check) tl_status tl_wasm_gpu_check(uint32_t on) {
  gpu.check = on != 0;
  return TL_OK;
}

/* out[0..5) (f64): products calls, elements checked, elements whose bits
 * differ from the kernels', the largest |difference| / bound, elements
 * outside the bound; since the module started (or the last reset: reset
 * nonzero zeroes them after copying). TL_ERR_BOUNDS for out outside the
 * heap. */
tl_status tl_wasm_gpu_stats(double *out, uint32_t reset);
EXPORT(tl_wasm_gpu_stats) tl_status tl_wasm_gpu_stats(double *out, uint32_t reset) {
  if ((uintptr_t)out % 8 != 0 || !tl_wasm_span_ok(out, sizeof gpu.stats, true))
    return TL_ERR_BOUNDS;
  memcpy(out, gpu.stats, sizeof gpu.stats);
  if (reset) memset(gpu.stats, 0, sizeof gpu.stats);
  return TL_OK;
}

/* W-3's bound (tl_kern_device_bound) for one packed q8/q4 row of n
 * elements (tl_kern_pack's layout) and one activation (codes: 512 per
 * group, scales: 16 per group, tl_kern_x's layout): the loader's product
 * probes hold an adapter's results to it. Negative for a type other than
 * q8/q4, a width past 2^24 or an argument outside the memory. */
double tl_wasm_gpu_bound(uint32_t type, const uint8_t *row, size_t n, const int8_t *codes,
                         const float *scales);
EXPORT(tl_wasm_gpu_bound)
double tl_wasm_gpu_bound(uint32_t type, const uint8_t *row, size_t n, const int8_t *codes,
                         const float *scales) {
  size_t rb, ng = tl_kern_groups(n);
  tl_kern_x x;
  if ((type != TL_QTYPE_Q8 && type != TL_QTYPE_Q4) || n == 0 || n > (1u << 24) ||
      tl_quant_row_bytes((tl_qtype)type, n, &rb) != TL_OK || !tl_wasm_span_ok(row, rb, false) ||
      !tl_wasm_span_ok(codes, TL_KERN_GROUP_CODES * ng, false) ||
      !tl_wasm_span_ok(scales, sizeof(float) * TL_KERN_GROUP * ng, false))
    return -1.0;
  memset(&x, 0, sizeof x);
  x.codes = codes;
  x.scales = scales;
  return tl_kern_device_bound((tl_qtype)type, row, n, &x);
}
